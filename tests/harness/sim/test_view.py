"""The strict rule of the mock model (docs/model.md v3): what the policy is given, checked by what the
objects it reads expose, and progress read from the context."""

from __future__ import annotations

import pytest

from harness.core.context import Context
from harness.core.messages import Message, Text, ToolResult, ToolUse, block_text
from harness.core.switches import Switches
from harness.sim.kernel import Replay, meter_of, step_calls
from harness.sim.model import MockModel, concrete_args
from harness.sim.profiles import profile
from harness.sim.view import ContextView, Plan, PlanStep, Reader
from scenarios.base import SessionScript, generate, names
from strategies.base import create
from tests.harness.scripts import BAD_POD, crashloop_script

#: Everything a `ContextView` offers the policy: the messages and lengths, where facts are, which plan
#: steps the messages show done. No payload store, no script, no truth.
VIEW_SURFACE = {"messages", "prompt_tokens", "system_tokens", "raw_tokens", "scanned", "holder", "visible", "value",
                "values_in", "decoys_seen", "traced", "visible_call", "stub_handle"}


FAMILY_NAMES = sorted(n for n in names() if n != "mix")


def public(obj: object) -> set[str]:
    return {name for name in dir(obj) if not name.startswith("_")}


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_a_plan_holds_no_fact_value_and_no_payload(family: str) -> None:
    script = generate(family, 3)
    plan = Plan.of(script)
    text = repr(plan)
    for key, value in script.fact_values().items():
        assert value not in text, f"{family}: the plan shows {key}'s value"
    for step in script.steps:
        assert step.payload not in text
    assert all(isinstance(step, PlanStep) for step in plan.steps)


def test_the_view_offers_the_context_and_nothing_else() -> None:
    script = crashloop_script()
    view = ContextView(Context().messages, 100, Reader(script))
    assert public(view) == VIEW_SURFACE
    assert not hasattr(view, "store") and not hasattr(view, "script")


def test_the_model_keeps_no_script_step_pointer_or_truth() -> None:
    script = generate("code_repair", 1)
    replayer = Replay(script, create("unbounded"), profile("mid"), Switches())
    model = replayer.model
    values = set(script.fact_values().values())
    for name in dir(model):
        if name.startswith("__") or name == "reader" or callable(getattr(model, name)):
            continue
        attr = getattr(model, name)
        assert not isinstance(attr, SessionScript), name
        shown = repr(attr)
        assert not any(value in shown for value in values), f"MockModel.{name} shows a fact value"
    # The reader is the one way to a value, and it answers only for a message whose text states it.
    empty = Message.build("user", [Text("nothing here")], meter=meter_of(script))
    assert all(model.reader.value_in(empty, key) is None for key in script.facts)
    assert public(model.reader) == {"value_in", "claims"}


def test_the_reader_reads_a_value_from_its_holder_or_a_summary_line() -> None:
    script = crashloop_script()
    meter = meter_of(script)
    reader = Reader(script)
    holder = Message.build("user", [ToolResult("u1", "success", f"{BAD_POD} 0/1 CrashLoopBackOff")], meter=meter)
    assert reader.value_in(holder, "bad_pod") == BAD_POD
    summary = Message.build("user", [Text("## Summary\n- bad pod: pod-wrng")], kind="summary", meter=meter)
    assert reader.value_in(summary, "bad_pod") == "pod-wrng"  # what the summary says, right or not
    assert reader.value_in(summary, "trace_id") is None


# Progress from the context (docs/model.md v3 change 1) ------------------------------------------------


def _model(script: SessionScript) -> MockModel:
    return MockModel(Plan.of(script), Reader(script), profile("oracle"), seed=script.seed, system_tokens=0)


def _action(script: SessionScript, step_id: str, n: int) -> Message:
    step = script.step_by_id(step_id)
    use = ToolUse(f"u{n}", step.tool, concrete_args(step, script.fact_values()))
    return Message.build("assistant", [Text("thinking"), use], step_id=step_id, meter=meter_of(script))


def _result(script: SessionScript, step_id: str, n: int, content: str | None = None) -> Message:
    step = script.step_by_id(step_id)
    return Message.build("user", [ToolResult(f"u{n}", "success", step.payload if content is None else content)],
                         step_id=step_id, meter=meter_of(script))


def _ids(script: SessionScript) -> list[str]:
    return [s.id for s in script.steps]


def test_a_step_whose_call_is_visible_is_done_and_the_next_one_follows() -> None:
    script = crashloop_script()
    model = _model(script)
    task = Message.build("user", [Text(script.task.text)], kind="task", meter=meter_of(script))
    ctx = Context([task, _action(script, "s1", 1), _result(script, "s1", 1)])
    assert model.next_step(model.view(ctx), _ids(script)) == "s2"


def test_a_masked_output_leaves_its_call_so_the_step_stays_done() -> None:
    script = crashloop_script()
    model = _model(script)
    ctx = Context([_action(script, "s1", 1), _result(script, "s1", 1, "[output omitted]"),
                   _action(script, "s2", 2), _result(script, "s2", 2)])
    assert model.next_step(model.view(ctx), _ids(script)) == "s3"


def test_an_agent_that_sees_no_sign_of_its_work_starts_over() -> None:
    script = crashloop_script()
    model = _model(script)
    task = Message.build("user", [Text(script.task.text)], kind="task", meter=meter_of(script))
    assert model.next_step(model.view(Context([task])), _ids(script)) == "s1"


def test_a_summary_line_recording_a_call_counts_it_done() -> None:
    script = crashloop_script()
    model = _model(script)
    step = script.step_by_id("s2")
    call = block_text(ToolUse("", step.tool, concrete_args(step, script.fact_values())))
    summary = Message.build("user", [Text(f"## Summary\n## Calls done\n- ran {call}")], kind="summary",
                            meter=meter_of(script))
    assert summary.records == {"s2"}
    assert model.next_step(model.view(Context([summary])), _ids(script)) == "s3"
    # ... and the agent can re-issue that call from the line, the source it sees.
    seen = model.view(Context([summary])).visible_call(["s2"], [step.tool])
    assert seen == (step.tool, concrete_args(step, script.fact_values()))


def test_every_step_call_is_told_apart_from_the_others_in_each_family() -> None:
    for family in FAMILY_NAMES:
        script = generate(family, 5)
        calls = step_calls(script)
        steps = [s.id for s in script.steps]
        assert set(calls.values()) == set(steps), family
