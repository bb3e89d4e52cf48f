"""`facts_within_cap`: an output longer than the scaffold's cap keeps the facts it produces where the
cap keeps text (docs/model.md 3.2), and any other output is left exactly as it is."""

from __future__ import annotations

import pytest

import scenarios
from harness.core.crn import session_seed
from harness.core.switches import DEFAULT_OUTPUT_CAP_CHARS
from harness.core.tools import cap_output
from scenarios.text import facts_within_cap

CAP = 1_000


def dump(needle_at: int, lines: int = 400) -> str:
    rows = [f"2026-11-30T10:{i // 60:02d}:{i % 60:02d} INFO request served in {i % 97} ms" for i in range(lines)]
    rows[needle_at:needle_at] = ["ERROR upstream failed trace=trace-q2kx", "  at payments.charge(line 40)",
                                 "ERROR gave up on trace=trace-q2kx code=nilrule"]
    return "\n".join(rows)


def test_facts_in_the_cut_middle_move_into_the_kept_tail_as_one_block() -> None:
    text = dump(200)
    assert "trace-q2kx" not in cap_output(text, CAP)
    moved = facts_within_cap(text, ["trace-q2kx", "nilrule"], CAP)
    kept = cap_output(moved, CAP)
    assert "trace-q2kx" in kept and "nilrule" in kept
    assert sorted(moved.split("\n")) == sorted(text.split("\n"))  # the same lines, reordered
    block = "ERROR upstream failed trace=trace-q2kx\n  at payments.charge(line 40)\nERROR gave up on trace=trace-q2kx"
    assert block in moved


@pytest.mark.parametrize("text", [dump(395), dump(3), "short output trace-q2kx"])
def test_an_output_whose_facts_survive_the_cap_is_unchanged(text: str) -> None:
    assert facts_within_cap(text, ["trace-q2kx"], CAP) is text


def test_no_produced_fact_of_the_ops_mix_is_lost_to_the_default_cap() -> None:
    for i in range(300):
        script = scenarios.generate("mix", session_seed(0, "mix", i))
        for step in script.steps:
            for run in [step] + ([step.fault.fallback] if step.fault and step.fault.fallback else []):
                kept = cap_output(run.payload, DEFAULT_OUTPUT_CAP_CHARS)
                assert all(v in kept for v in run.produces.values()), (script.scenario, i, run.id)


def test_facts_far_apart_move_as_their_own_lines() -> None:
    rows = [f"2026-11-30T10:00:{i % 60:02d} INFO request served in {i % 97} ms" for i in range(400)]
    for at in (120, 200, 280):
        rows[at] = f"2026-11-30T10:00:00 LOG duration: 2158 ms /* query_id=qid-yt32 */ SELECT {at}"
    text = "\n".join(rows)
    moved = facts_within_cap(text, ["qid-yt32"], CAP)
    assert "qid-yt32" in cap_output(moved, CAP)
    assert sorted(moved.split("\n")) == sorted(rows)
