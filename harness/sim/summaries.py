"""The summaries the mock model writes as a summarizer (docs/model.md 4, v3 change 8): the summarizer's own
text, which restates the task, keeps each fact it read with ``p_keep`` (and may misstate it), and records the
calls it saw done (each may be left out); never the harness's key names."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.core.messages import Message, ToolUse, block_text
from harness.sim.fact_lines import fact_line
from harness.sim.view import RECORD_PREFIX, ContextView, label
from scenarios.draws import BASE32

if TYPE_CHECKING:
    from harness.sim.model import MockModel

__all__ = ["summary_text"]


def summary_text(model: MockModel, view: ContextView, messages: Sequence[Message], at_step: str, n: int,
                 tokens_in: int) -> tuple[str, list[str]]:
    """The summary a summarizer call writes of ``messages``, and the keys it kept. It restates the
    task, keeps each fact it read with ``p_keep`` (misstating a kept value with ``p_summary_error``),
    and records the calls done, each left out with ``p_record_drop`` (then the agent does not know
    that step is done: docs/model.md v3 change 1)."""
    count = model.count_tokens
    p = model.profile
    newest: dict[str, int] = {}
    for i, m in enumerate(messages):
        for key in m.facts:
            newest[key] = i
        if m.kind == "summary":
            for key in model.reader.claims(m):
                newest[key] = i
    kept = [k for k in sorted(newest)
            if model.u("keep", at_step, n, k) < p.p_keep(tokens_in, model.plan.lookups.get(k, "literal"))]
    goals = [k for k in model.plan.final_facts if k in kept]
    others = sorted((k for k in kept if k not in goals), key=lambda k: -newest[k])
    task_line = next((f"Task: {m.text[:300]}" for m in messages if m.kind == "task"), "")
    lines = ["## Summary of the work so far"] + ([task_line] if task_line else [])
    budget = p.max_summary_tokens
    used = count("\n".join(lines))
    written: list[str] = []
    for key in goals + others:
        value = view.values_in(messages[:newest[key] + 1], key)
        if value is None:
            continue
        if model.u("summary_error", at_step, n, key) < p.p_summary_error:
            value = _misstated(model, view, messages, at_step, n, key, value)
        line = fact_line(label(key), value)
        cost = count(line) + 1
        if used + cost > budget:
            break
        lines.append(line)
        written.append(key)
        used += cost
    record = ["## Calls done"]
    for i, m in enumerate(messages):
        if m.kind == "summary":  # an earlier summary's record, kept (or dropped) like the calls it lists
            record += [line for line in m.text.splitlines() if line.startswith(RECORD_PREFIX) and
                       model.u("record_drop", at_step, n, line) >= p.p_record_drop]
            continue
        for b in m.blocks:
            if isinstance(b, ToolUse) and m.records and i + 1 < len(messages) \
                    and messages[i + 1].kind not in ("error",) \
                    and model.u("record_drop", at_step, n, sorted(m.records)[0]) >= p.p_record_drop:
                record.append(RECORD_PREFIX + block_text(b))
    for line in record:
        cost = count(line) + 1
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines), written

def _misstated(model: MockModel, view: ContextView, messages: Sequence[Message], at_step: str, n: int, key: str,
               value: str) -> str:
    """A summary's wrong value for ``key``: one of the planted values of its shape the summarized text
    shows, else an invented one of its shape."""
    seen = sorted({d for m in messages for d in m.decoys} & model.plan.decoys.get(key, frozenset()) - {value})
    pick = model.u("misstate", at_step, n, key)
    if seen:
        return seen[min(int(pick * len(seen)), len(seen) - 1)]
    word = int(pick * (1 << 50))
    return f"{model.plan.shapes.get(key, key)}-" + "".join(BASE32[(word >> (5 * i)) & 31] for i in range(4))
