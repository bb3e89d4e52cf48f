"""The tool player's output cap (docs/model.md 3.2): long outputs lose their middle, with one
marker line, before anyone sees them; what the cap cuts is out of the context and counted."""

from __future__ import annotations

import pytest

from harness.core.tools import cap_output
from harness.sim.kernel import replay
from harness.sim.profiles import profile
from tests.harness.scripts import crashloop_script


def test_a_text_within_the_cap_is_returned_as_it_is() -> None:
    text = "x" * 100
    assert cap_output(text, 100) is text
    assert cap_output(text, 0) is text


@pytest.mark.parametrize(("length", "cap"), [(101, 100), (30_001, 30_000), (250_000, 30_000), (10, 3)])
def test_a_long_text_keeps_its_head_and_tail_around_one_marker(length: int, cap: int) -> None:
    text = "".join(chr(ord("a") + i % 26) for i in range(length))
    capped = cap_output(text, cap)
    head, marker, tail = capped.split("\n")
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + len(tail) == cap
    assert marker == f"[... {length - cap:,} characters cut by the tool-output cap ...]"


def test_a_fact_in_the_cut_part_never_reaches_the_context_and_is_counted() -> None:
    script = crashloop_script()
    payloads = {len(s.payload) for s in script.steps}
    cap = min(payloads) // 4  # every output is cut; fact lines in the middle go
    capped = replay(script, "unbounded", profile("oracle"), output_cap_chars=cap)
    uncapped = replay(script, "unbounded", profile("oracle"), output_cap_chars=0)
    assert capped.record.output_cap_chars == cap and uncapped.record.output_cap_chars == 0
    assert uncapped.record.facts_cut == 0 and uncapped.record.outcome == "success"
    assert capped.record.facts_cut > 0
    results = [e.signature[1] for e in capped.loop_events if e.kind in ("observation", "error")]
    assert results and all(len(text) <= cap + 80 for text in results)
