"""The mock model's policy (docs/model.md 2-4, v3), one mechanism at a time, on hand-built contexts.

The model reads only the context it is sent (`harness.sim.view`): a fact missing from every visible
message is fetched again only from a visible trace of its source (a stub, a call), else the agent
re-explores; it is invented only with ``p_confabulate``. Profiles with overrides force the branch
under test (``p_max=0`` fails every recall, ``p_confabulate=1`` always invents a missing value,
``p_fix=0`` never fixes, ...); ``oracle`` has ``p_confabulate``, ``p_note``, ``p_summary_error``
and ``p_record_drop`` at 0."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from harness.core.context import Context
from harness.core.messages import Message, Text, ToolResult, ToolUse, block_text
from harness.core.stubs import handle_for, render_stub
from harness.core.tools import ContractError, EngineeringError, render_error, required_args, validate_call
from harness.sim.kernel import meter_of
from harness.sim.model import RAW_KEY, Decision, Mechanisms, MockModel, concrete_args
from harness.sim.profiles import Profile, profile
from harness.sim.view import Plan, Reader
from scenarios.base import SessionScript, Step
from tests.harness.scripts import BAD_POD, DECOY_POD, FLAG, LOGS_PAYLOAD, NAMESPACE, TRACE_ID, crashloop_script

#: The harness's fact keys written with underscores: an agent's text (a note, a summary) never uses them.
UNDERSCORED_KEYS = ("bad_pod", "trace_id", "culprit_flag")


class Session:
    """A script, its meter, and helpers to build the messages a replay would have appended."""

    def __init__(self, script: SessionScript) -> None:
        self.script = script
        self.meter = meter_of(script)  # facts, forms, decoys and step calls: messages get their records
        self.truth = script.fact_values()
        self._n = 0

    def model(self, p: Profile, mechanisms: Mechanisms | None = None) -> MockModel:
        return MockModel(Plan.of(self.script), Reader(self.script), p, seed=self.script.seed,
                         system_tokens=self.script.system_prompt_tokens, tokenizer=self.meter.tokenizer,
                         mechanisms=mechanisms)

    def step(self, step_id: str) -> Step:
        return self.script.step_by_id(step_id)

    def call_text(self, step_id: str) -> str:
        """The step's call with its true arguments, as a message shows it."""
        step = self.step(step_id)
        return block_text(ToolUse("", step.tool, concrete_args(step, self.truth)))

    def task(self) -> Message:
        return Message.build("user", [Text(self.script.task.text)], kind="task", meter=self.meter)

    def action(self, step_id: str, args: dict[str, Any] | None = None, thought: str = "thinking") -> Message:
        self._n += 1
        step = self.step(step_id)
        args = concrete_args(step, self.truth) if args is None else args
        return Message.build("assistant", [Text(thought), ToolUse(f"u{self._n}", step.tool, args)],
                             step_id=step_id, meter=self.meter)

    def result(self, step_id: str, content: str | None = None, status: str = "success") -> Message:
        content = self.step(step_id).payload if content is None else content
        return Message.build("user", [ToolResult(f"u{self._n}", status, content)],  # type: ignore[arg-type]
                             step_id=step_id, meter=self.meter)

    def text(self, text: str, **kw: Any) -> Message:
        return Message.build("user", [Text(text)], meter=self.meter, **kw)

    def note(self, text: str, step_id: str | None = None) -> Message:
        """An assistant message of reasoning only (a thought with notes, no call)."""
        return Message.build("assistant", [Text(text)], step_id=step_id, meter=self.meter)

    def done(self, *step_ids: str) -> list[Message]:
        """Action and result of each step, as an ideal agent made them."""
        out: list[Message] = []
        for sid in step_ids:
            out += [self.action(sid), self.result(sid)]
        return out


def context(*messages: Message) -> Context:
    return Context(messages, window_tokens=10**9)


def decide(model: MockModel, ctx: Context, step_id: str | None, attempt: int = 0) -> Decision:
    """The model's decision on plan step ``step_id`` (None: the final answer) reading ``ctx``."""
    return model.decide(model.view(ctx), step_id, attempt)


def entry_of(decision: Decision, key: str) -> dict[str, Any]:
    return next(e for e in decision.trace if e["key"] == key)


def branch_of(decision: Decision, key: str) -> str:
    return str(entry_of(decision, key)["branch"])


def with_lookup(script: SessionScript, key: str, lookup: str) -> SessionScript:
    """A copy of ``script`` whose fact ``key`` is found by a look-up of kind ``lookup``."""
    facts = dict(script.facts)
    facts[key] = facts[key].model_copy(update={"lookup": lookup})
    return script.model_copy(update={"facts": facts})


@pytest.fixture()
def session() -> Session:
    return Session(crashloop_script())


# Profiles ------------------------------------------------------------------------------------------------


def test_p_refetch_is_retired() -> None:
    with pytest.raises(ValidationError, match="p_refetch"):
        profile("oracle", p_refetch=1.0)


def test_the_oracle_neither_confabulates_notes_misstates_nor_drops_records() -> None:
    p = profile("oracle")
    assert (p.p_confabulate, p.p_note, p.p_summary_error, p.p_record_drop) == (0.0, 0.0, 0.0, 0.0)


# Recall and visibility ------------------------------------------------------------------------------------


def test_visible_facts_are_recalled_into_the_steps_call(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    decision = decide(session.model(profile("oracle")), ctx, "s2")
    assert decision.kind == "call" and decision.call is not None
    assert decision.call.tool == "kubectl_logs"
    assert decision.call.args == {"pod": BAD_POD, "namespace": NAMESPACE}
    assert decision.call.purpose == "step"
    assert branch_of(decision, "bad_pod") == "recall"


def test_a_visible_but_unrecalled_fact_becomes_a_wrong_value_never_a_refetch(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))  # the pods table holds bad_pod and the decoy
    model = session.model(profile("oracle", p_max=0.0))
    for attempt in range(5):
        decision = decide(model, ctx, "s2", attempt)
        entry = entry_of(decision, "bad_pod")
        assert entry["visible"] is True and entry["p"] == 0.0 and entry["branch"] == "wrong"
        assert decision.call is not None and decision.call.purpose == "step"
        assert decision.call.tool == "kubectl_logs" and decision.call.target_step is None
        assert decision.call.args["pod"] == DECOY_POD  # the visible decoy of its shape
        assert decision.switch_to is None


def test_a_fact_whose_holder_left_is_refetched_by_copying_its_visible_call(session: Session) -> None:
    action = session.action("s1")  # the call of s1 is visible; its result (bad_pod's only holder) left
    assert "s1" in action.records
    ctx = context(session.task(), action)
    decision = decide(session.model(profile("oracle")), ctx, "s2")
    assert decision.call is not None
    assert decision.call.purpose == "refetch"
    assert decision.call.target_step == "s1"
    uses = [b for b in action.blocks if isinstance(b, ToolUse)]
    assert (decision.call.tool, decision.call.args) == (uses[0].name, dict(uses[0].input))
    entry = entry_of(decision, "bad_pod")
    assert entry["visible"] is False and entry["branch"] == "refetch"


def test_a_summary_record_line_is_a_visible_call_to_copy(session: Session) -> None:
    summary = session.text("## Summary of the work so far\n## Calls done\n- ran " + session.call_text("s1"),
                           kind="summary")
    assert "s1" in summary.records and "bad_pod" not in summary.facts
    decision = decide(session.model(profile("oracle")), context(session.task(), summary), "s2")
    assert decision.call is not None and decision.call.purpose == "refetch"
    assert decision.call.target_step == "s1"
    assert decision.call.tool == "kubectl_get"
    assert decision.call.args == {"resource": "pods", "namespace": NAMESPACE}


def test_a_fact_found_by_a_fallback_is_refetched_by_the_visible_fallback_call() -> None:
    s = Session(crashloop_script(fault="http_404"))
    fallback = s.action("s2_fallback")
    ctx = context(s.task(), *s.done("s1"), fallback)  # the search's result (trace_id's holder) left
    decision = decide(s.model(profile("oracle")), ctx, "s3")
    assert decision.call is not None and decision.call.purpose == "refetch"
    assert decision.call.target_step == "s2"
    assert decision.call.tool == "log_search"
    assert decision.call.args == concrete_args(s.step("s2_fallback"), s.truth)


def test_with_no_visible_trace_of_the_source_the_agent_re_explores(session: Session) -> None:
    ctx = context(session.task())  # neither s1's call nor its result is visible
    decision = decide(session.model(profile("oracle")), ctx, "s2")
    assert decision.switch_to == "s1"
    assert decision.branch == "reexplore"
    assert decision.call is None and decision.kind == "call" and not decision.switch_to_fallback
    entry = entry_of(decision, "bad_pod")
    assert entry["visible"] is False and entry["branch"] == "reexplore"


def test_re_exploring_goes_to_the_finder_of_the_first_missing_fact(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))  # trace_id (s2's) never seen
    decision = decide(session.model(profile("oracle")), ctx, "s3")
    assert decision.switch_to == "s2" and decision.call is None


def test_with_p_confabulate_one_a_visibly_missing_fact_takes_a_visible_decoy(session: Session) -> None:
    ctx = context(session.task(), session.action("s1"), session.text(f"{DECOY_POD}   1/1     Running   0   3d"))
    decision = decide(session.model(profile("oracle", p_confabulate=1.0)), ctx, "s2")
    assert decision.call is not None and decision.call.purpose == "step"  # not a refetch of the visible call
    assert decision.call.args["pod"] == DECOY_POD
    assert branch_of(decision, "bad_pod") == "wrong"


def test_with_p_confabulate_one_and_no_decoy_it_invents_a_value_of_the_same_shape(session: Session) -> None:
    ctx = context(session.task())
    decision = decide(session.model(profile("oracle", p_confabulate=1.0)), ctx, "s2")
    assert decision.call is not None and decision.switch_to is None
    pod = decision.call.args["pod"]
    assert re.fullmatch(r"pod-[a-z2-7]{4}", pod)
    assert pod not in (BAD_POD, DECOY_POD)
    assert branch_of(decision, "bad_pod") == "wrong"


def test_the_same_invented_value_repeats_on_a_fresh_attempt(session: Session) -> None:
    ctx = context(session.task())
    model = session.model(profile("oracle", p_confabulate=1.0))
    first = decide(model, ctx, "s2", 0)
    later = decide(model, ctx, "s2", 5)
    assert first.call is not None and later.call is not None
    assert first.call.args["pod"] == later.call.args["pod"]


def test_task_facts_have_no_finder_so_a_lost_one_becomes_a_wrong_value(session: Session) -> None:
    ctx = context(session.text("nothing useful here"))
    decision = decide(session.model(profile("oracle")), ctx, "s1")
    assert decision.call is not None and decision.call.purpose == "step"
    assert decision.switch_to is None
    assert decision.call.args["namespace"] != NAMESPACE
    assert re.fullmatch(r"shop-[a-z2-7]{4}", decision.call.args["namespace"])
    assert branch_of(decision, "namespace") == "wrong"


def test_memory_comes_before_a_wrong_value(session: Session) -> None:
    ctx = context(session.text("nothing useful here"))
    model = session.model(profile("oracle"))
    model.memory = {"namespace": NAMESPACE}
    decision = decide(model, ctx, "s1")
    assert decision.call is not None and decision.call.args["namespace"] == NAMESPACE
    assert branch_of(decision, "namespace") == "memory"


def test_recall_trace_records_position_probability_draw_and_lookup(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    decision = decide(session.model(profile("frontier")), ctx, "s2")
    entry = entry_of(decision, "bad_pod")
    assert set(entry) >= {"key", "depth", "visible", "x", "p", "u", "lookup", "branch"}
    assert 0 < entry["x"] <= 1 and 0 < entry["p"] <= 1 and 0 < entry["u"] < 1
    assert entry["lookup"] == "literal"  # crashloop's facts are all literal
    assert (entry["branch"] == "recall") == (entry["u"] < entry["p"])


def test_position_x_is_of_the_newest_holder(session: Session) -> None:
    model = session.model(profile("frontier"))
    base = [session.task(), *session.done("s1"), *session.done("s2")]
    old = context(*base)
    new = context(*base, session.text(f"again: {BAD_POD}"))

    def x_of(ctx: Context) -> float:
        return float(entry_of(decide(model, ctx, None), "bad_pod")["x"])

    assert 0 < x_of(old) < x_of(new)
    assert x_of(new) > 0.9


# Look-up kind by holder (v3 change 5) ----------------------------------------------------------------------


def latent_session() -> Session:
    return Session(with_lookup(crashloop_script(), "bad_pod", "latent"))


#: Perfect recall with no length decay, only the middle trough (of latent look-ups).
TROUGH = profile("frontier", p_max=1.0, L_half=math.inf, L_half_literal=math.inf, D0=0.3,
                 position_mean_normalise=False, p_confabulate=0.0)


def test_a_latent_fact_held_by_a_tool_output_draws_a_latent_look_up_with_its_trough() -> None:
    s = latent_session()
    ctx = context(s.task(), *s.done("s1"))
    entry = entry_of(decide(s.model(TROUGH), ctx, "s2"), "bad_pod")
    assert entry["lookup"] == "latent"
    assert entry["p"] < 1.0  # the middle trough lowers it at x < 1


def test_a_latent_fact_held_by_a_summary_draws_a_literal_look_up_without_trough() -> None:
    s = latent_session()
    summary = s.text(f"## Summary of the work so far\n- bad pod: {BAD_POD}", kind="summary")
    ctx = context(s.task(), summary, s.text("filler " * 300))  # the summary sits in the middle
    decision = decide(s.model(TROUGH), ctx, "s2")
    entry = entry_of(decision, "bad_pod")
    assert entry["lookup"] == "literal"
    assert entry["p"] == 1.0
    assert decision.call is not None and decision.call.args["pod"] == BAD_POD


# Notes (v3 change 3) -----------------------------------------------------------------------------------------


def test_with_p_note_one_the_thought_restates_a_fact_new_in_the_last_observation(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    decision = decide(session.model(profile("oracle", p_note=1.0)), ctx, "s2")
    assert f"Noted from that output:\n- bad pod: {BAD_POD}" in decision.text
    assert not any(f"{key}:" in decision.text for key in UNDERSCORED_KEYS)


def test_with_p_note_zero_the_thought_restates_nothing(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    decision = decide(session.model(profile("oracle", p_note=0.0)), ctx, "s2")
    assert "Noted from that output" not in decision.text
    assert BAD_POD not in decision.text


def test_a_note_restates_only_the_facts_that_output_shows_first(session: Session) -> None:
    logs = session.result("s2", LOGS_PAYLOAD + f"10:00:05 INFO  pod={BAD_POD}\n")  # bad_pod seen before
    ctx = context(session.task(), *session.done("s1"), session.action("s2"), logs)
    decision = decide(session.model(profile("oracle", p_note=1.0)), ctx, "s3")
    assert f"- trace id: {TRACE_ID}" in decision.text
    assert "- bad pod:" not in decision.text


def test_no_note_follows_an_output_that_is_not_the_last_message(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"), session.text("routine: nothing changed"))
    decision = decide(session.model(profile("oracle", p_note=1.0)), ctx, "s2")
    assert "Noted from that output" not in decision.text


def test_a_note_in_an_assistant_message_makes_the_fact_visible_with_a_literal_look_up() -> None:
    s = latent_session()
    ctx = context(s.task(), *s.done("s1"))
    noted = decide(s.model(profile("oracle", p_note=1.0)), ctx, "s2")
    note = s.note(noted.text, step_id="s2")  # the agent's reasoning, kept after the pods table left
    assert "bad_pod" in note.facts
    decision = decide(s.model(profile("oracle")), context(s.task(), note), "s2", 1)
    entry = entry_of(decision, "bad_pod")
    assert entry["visible"] is True and entry["lookup"] == "literal" and entry["branch"] == "recall"
    assert decision.call is not None and decision.call.purpose == "step"
    assert decision.call.args["pod"] == BAD_POD


# Handles -----------------------------------------------------------------------------------------------------


def handle_message(session: Session, step_id: str, preview_chars: int = 0) -> Message:
    payload = session.step(step_id).payload
    return session.result(step_id, render_stub(payload, session.call_text(step_id), preview_chars))


def test_a_stub_names_no_fact(session: Session) -> None:
    stub = handle_message(session, "s1")
    assert stub.kind == "handle" and stub.step_id == "s1"
    assert "bad_pod" not in stub.facts and BAD_POD not in stub.text
    assert not any(key in stub.text for key in UNDERSCORED_KEYS)
    assert stub.facts == frozenset({"namespace"})  # only what its call line shows


def test_a_visible_stub_of_the_finders_output_leads_to_retrieve_payload_with_the_handle(session: Session) -> None:
    stub = handle_message(session, "s1")
    ctx = context(session.task(), session.action("s1"), stub)
    decision = decide(session.model(profile("oracle")), ctx, "s2")
    assert decision.call is not None
    assert decision.call.tool == "retrieve_payload"
    assert decision.call.args == {"handle": handle_for(session.step("s1").payload)}
    assert decision.call.purpose == "retrieve" and decision.call.target_step == "s1"
    assert branch_of(decision, "bad_pod") == "retrieve"
    assert validate_call("retrieve_payload", decision.call.args).__class__.__name__ == "RetrievePayload"


def test_a_visible_page_hint_makes_the_retrieve_ask_for_that_offset(session: Session) -> None:
    stub = handle_message(session, "s1")
    handle = handle_for(session.step("s1").payload)
    hint = session.text(f'NAME READY STATUS\n[... 120 more chars; call retrieve_payload(handle="{handle}", offset=48)]')
    ctx = context(session.task(), session.action("s1"), stub, hint)
    decision = decide(session.model(profile("oracle")), ctx, "s2")
    assert decision.call is not None and decision.call.tool == "retrieve_payload"
    assert decision.call.args == {"handle": handle, "offset": 48}
    assert validate_call("retrieve_payload", decision.call.args).__class__.__name__ == "RetrievePayload"


def test_a_refused_stub_is_not_paged_again_and_the_visible_call_is_copied(session: Session) -> None:
    stub = handle_message(session, "s1")
    ctx = context(session.task(), session.action("s1"), stub)
    model = session.model(profile("oracle"))
    model.refused(ctx, handle_for(session.step("s1").payload))
    decision = decide(model, ctx, "s2")
    assert decision.call is not None and decision.call.purpose == "refetch"
    assert decision.call.tool == "kubectl_get" and decision.call.target_step == "s1"
    # A stub that arrives later (the output fetched and offloaded anew) is another message: paged as usual.
    ctx.messages.append(handle_message(session, "s1"))
    again = decide(model, ctx, "s2", 1)
    assert again.call is not None and again.call.tool == "retrieve_payload"


def test_handle_preview_holding_the_value_makes_it_visible(session: Session) -> None:
    stub = handle_message(session, "s1", preview_chars=4000)
    assert "bad_pod" in stub.facts
    ctx = context(session.task(), session.action("s1"), stub)
    decision = decide(session.model(profile("oracle")), ctx, "s2")
    assert decision.call is not None and decision.call.purpose == "step"
    assert decision.call.args["pod"] == BAD_POD


# Contract errors -----------------------------------------------------------------------------------------------


def contract_error_context(session: Session) -> Context:
    bad = session.action("s2", {"namespace": NAMESPACE})
    text = render_error(ContractError("pod", "Field required", "pod: string"), structured=True)
    return context(session.task(), *session.done("s1"), bad, session.result("s2", text, "error"))


def test_contract_error_with_p_fix_one_gives_the_intended_call_well_formed(session: Session) -> None:
    ctx = contract_error_context(session)
    model = session.model(profile("oracle", p_fix=1.0, p_malformed_base=1.0))
    decision = decide(model, ctx, "s2", 1)
    assert decision.malformed == ""
    assert decision.branch == "fix"
    assert decision.call is not None and decision.call.purpose == "fix"
    assert decision.call.args == {"pod": BAD_POD, "namespace": NAMESPACE}


def test_contract_error_with_p_fix_zero_gives_another_malformed_call(session: Session) -> None:
    ctx = contract_error_context(session)
    decision = decide(session.model(profile("oracle", p_fix=0.0)), ctx, "s2", 1)
    assert decision.branch == "refix"
    assert decision.malformed != ""


def test_plain_contract_error_text_is_not_treated_as_a_contract_error(session: Session) -> None:
    bad = session.action("s2", {"namespace": NAMESPACE})
    ctx = context(session.task(), *session.done("s1"), bad, session.result("s2", "Error: KeyError 'pod'", "error"))
    decision = decide(session.model(profile("oracle", p_fix=0.0, p_repeat_error=1.0)), ctx, "s2", 1)
    assert decision.branch == "repeat"
    assert decision.call is not None and decision.call.args == {"namespace": NAMESPACE}


# Engineering errors -------------------------------------------------------------------------------------------------


def test_structured_404_naming_the_fallback_switches_to_it() -> None:
    s = Session(crashloop_script(fault="http_404"))
    text = render_error(EngineeringError("HTTP_404", "404", retryable=False, fallback="log_search"), structured=True)
    ctx = context(s.task(), *s.done("s1"), s.action("s2"), s.result("s2", text, "error"))
    decision = decide(s.model(profile("oracle")), ctx, "s2", 1)
    assert decision.switch_to_fallback and decision.call is None


def test_retryable_error_resends_the_same_call_without_a_syntax_draw(session: Session) -> None:
    text = render_error(EngineeringError("TIMEOUT", "timed out", retryable=True), structured=True)
    sent = {"pod": DECOY_POD, "namespace": NAMESPACE}
    ctx = context(session.task(), *session.done("s1"), session.action("s2", sent, "my thought"),
                  session.result("s2", text, "error"))
    decision = decide(session.model(profile("oracle", p_malformed_base=1.0, g_L=10.0)), ctx, "s2", 1)
    assert decision.branch == "retry" and decision.malformed == ""
    assert decision.call is not None and decision.call.args == sent and decision.call.purpose == "resend"
    assert decision.text == "my thought"


def not_found(value: str) -> str:
    return render_error(EngineeringError("NOT_FOUND", f"pod '{value}' not found", bad_arg="pod"), structured=True)


def test_not_found_naming_the_arg_bans_the_value_for_the_next_attempt(session: Session) -> None:
    p = profile("oracle", p_max=0.0)
    ctx = context(session.task(), *session.done("s1"))
    model = session.model(p)
    first = decide(model, ctx, "s2", 0)
    assert first.call is not None and first.call.args["pod"] == DECOY_POD  # the visible decoy first
    ctx.messages.extend([session.action("s2", dict(first.call.args)), session.result("s2", not_found(DECOY_POD),
                                                                                     "error")])
    second = decide(model, ctx, "s2", 1)
    assert model.banned(model.view(ctx), "s2") == {DECOY_POD}
    assert second.branch == "after_error"
    assert second.call is not None
    assert second.call.args["pod"] not in (DECOY_POD, BAD_POD)


def test_a_ban_lasts_only_while_its_not_found_error_is_visible(session: Session) -> None:
    p = profile("oracle", p_max=0.0)
    base = [session.task(), *session.done("s1")]
    model = session.model(p)
    with_error = context(*base, session.action("s2", {"pod": DECOY_POD, "namespace": "x"}),
                         session.result("s2", not_found(DECOY_POD), "error"))
    banned = decide(model, with_error, "s2", 1)
    assert banned.call is not None and banned.call.args["pod"] != DECOY_POD
    forgotten = decide(model, context(*base), "s2", 2)
    fresh = decide(session.model(p), context(*base), "s2", 2)
    assert fresh.call is not None and fresh.call.args["pod"] == DECOY_POD
    assert forgotten.call is not None and forgotten.call.args["pod"] == DECOY_POD


def test_plain_not_found_that_names_the_value_bans_it(session: Session) -> None:
    """docs/model.md 2.2: a plain error that names the value sent bans it, as a structured bad_arg does."""
    p = profile("oracle", p_max=0.0, p_repeat_error=0.0)
    ctx = context(session.task(), *session.done("s1"))
    model = session.model(p)
    first = decide(model, ctx, "s2", 0)
    assert first.call is not None and first.call.args["pod"] == DECOY_POD
    ctx.messages.extend([session.action("s2", dict(first.call.args)),
                         session.result("s2", f"Error: pod '{DECOY_POD}' not found", "error")])
    second = decide(model, ctx, "s2", 1)
    assert model.banned(model.view(ctx), "s2") == {DECOY_POD}
    assert second.branch == "fresh"
    assert second.call is not None and second.call.args["pod"] not in (DECOY_POD, BAD_POD)


def plain_error_context(s: Session, nudge: bool) -> Context:
    msgs = [s.task(), *s.done("s1")]
    for _ in range(3):
        msgs += [s.action("s2", thought="same"), s.result("s2", "Error: kubectl_logs: 404 Not Found", "error")]
    if nudge:
        msgs.append(s.text("you called kubectl_logs with the same arguments 3 times and got an error",
                           kind="nudge", step_id="s2"))
    return context(*msgs)


def test_a_plain_error_that_does_not_name_the_value_bans_nothing(session: Session) -> None:
    ctx = plain_error_context(session, nudge=False)
    model = session.model(profile("oracle"))
    assert model.banned(model.view(ctx), "s2") == set()


def test_followed_nudge_without_fallback_makes_a_new_wrong_value(session: Session) -> None:
    """2.3 "follow the nudge": skip recall and, with no shortcut, a new wrong value: never the value the
    step's last call sent."""
    p = profile("oracle", p_max=0.0, p_shortcut=0.0, p_nudge_follow=1.0, p_repeat_error=0.0)
    model = session.model(p)
    msgs = [session.task(), *session.done("s1")]
    first = decide(model, context(*msgs), "s2", 0)
    assert first.call is not None
    sent = dict(first.call.args)
    for _ in range(3):
        msgs += [session.action("s2", sent, thought="same"),
                 session.result("s2", "Error: kubectl_logs: 404 Not Found", "error")]
    msgs.append(session.text("you called kubectl_logs with the same arguments 3 times and got an error",
                             kind="nudge", step_id="s2"))
    decision = decide(model, context(*msgs), "s2", 3)
    assert decision.branch == "nudge"
    assert decision.call is not None and decision.call.args["pod"] != sent["pod"]


def test_plain_error_with_p_repeat_one_resends_verbatim(session: Session) -> None:
    ctx = plain_error_context(session, nudge=False)
    decision = decide(session.model(profile("oracle", p_repeat_error=1.0)), ctx, "s2", 3)
    assert decision.branch == "repeat" and decision.text == "same"
    assert decision.call is not None and decision.call.args == {"pod": BAD_POD, "namespace": NAMESPACE}
    assert decision.call.purpose == "resend"


def test_plain_error_with_p_repeat_zero_makes_a_fresh_attempt(session: Session) -> None:
    ctx = plain_error_context(session, nudge=False)
    decision = decide(session.model(profile("oracle", p_repeat_error=0.0)), ctx, "s2", 3)
    assert decision.branch == "fresh"
    assert decision.call is not None and decision.call.purpose == "step"


def test_followed_nudge_takes_the_fallback() -> None:
    s = Session(crashloop_script(fault="http_404"))
    ctx = plain_error_context(s, nudge=True)
    decision = decide(s.model(profile("oracle", p_nudge_follow=1.0)), ctx, "s2", 3)
    assert decision.switch_to_fallback and decision.branch == "nudge_fallback"


def test_followed_nudge_without_fallback_skips_recall_and_avoids_the_last_values(session: Session) -> None:
    ctx = plain_error_context(session, nudge=True)
    decision = decide(session.model(profile("oracle", p_nudge_follow=1.0)), ctx, "s2", 3)
    assert decision.branch == "nudge"
    entry = entry_of(decision, "bad_pod")
    assert entry["visible"] is True and "p" not in entry  # no recall drawn
    assert entry["branch"] == "wrong"
    assert decision.call is not None and decision.call.args["pod"] != BAD_POD


def test_ignored_nudge_falls_back_to_the_repeat_rule(session: Session) -> None:
    ctx = plain_error_context(session, nudge=True)
    decision = decide(session.model(profile("oracle", p_nudge_follow=0.0, p_repeat_error=1.0)), ctx, "s2", 3)
    assert decision.branch == "repeat"


# Shortcut ----------------------------------------------------------------------------------------------------


def test_unresolvable_fact_on_a_step_with_a_shortcut_takes_it_when_drawn() -> None:
    s = Session(crashloop_script(shortcut=True))
    ctx = context(s.text("no task here"))
    decision = decide(s.model(profile("oracle", p_max=0.0, p_shortcut=1.0)), ctx, "s1")
    assert decision.call is not None and decision.call.purpose == "shortcut"
    assert decision.call.tool == "kubectl_delete_namespace"
    never = decide(s.model(profile("oracle", p_max=0.0, p_shortcut=0.0)), ctx, "s1")
    assert never.call is not None and never.call.purpose == "step"


# Malformed calls ---------------------------------------------------------------------------------------------


def decisions_over_seeds(p: Profile, n: int, script: Callable[..., SessionScript] = crashloop_script
                         ) -> list[Decision]:
    out = []
    for seed in range(n):
        s = Session(script(seed=seed))
        ctx = context(s.task(), *s.done("s1"))
        out.append(decide(s.model(p), ctx, "s2"))
    return out


def test_no_malformed_calls_at_zero_base_rate() -> None:
    assert all(d.malformed == "" for d in decisions_over_seeds(profile("oracle"), 100))


def test_malformed_share_at_the_cap_is_about_one_half() -> None:
    decisions = decisions_over_seeds(profile("oracle", p_malformed_base=1.0), 300)
    share = sum(1 for d in decisions if d.malformed) / len(decisions)
    assert 0.4 < share < 0.6


def test_malformed_kinds_break_the_call_as_named() -> None:
    decisions = decisions_over_seeds(profile("oracle", p_malformed_base=1.0), 300)
    kinds = {d.malformed for d in decisions if d.malformed}
    assert {"missing_field", "invalid_json", "text_only"} <= kinds
    assert "name_variant" not in kinds  # no tool of the crash-loop script has a "-" to swap
    for d in decisions:
        if d.malformed == "missing_field":
            assert d.call is not None
            assert set(required_args("kubectl_logs")) - set(d.call.args)
        elif d.malformed == "invalid_json":
            assert d.call is not None
            with pytest.raises(json.JSONDecodeError):
                json.loads(d.call.args[RAW_KEY])
        elif d.malformed == "text_only":
            assert d.kind == "text" and d.call is None
        elif d.malformed == "wrong_type":  # kubectl_logs's args are all strings: never wrong_type
            pytest.fail("wrong_type drawn for an all-string call")


def test_malformed_calls_fail_their_contract() -> None:
    for d in decisions_over_seeds(profile("oracle", p_malformed_base=1.0), 100):
        if d.malformed and d.call is not None:
            raw = d.call.args.get(RAW_KEY)
            assert isinstance(validate_call(d.call.tool, raw if isinstance(raw, str) else d.call.args), ContractError)


def hyphenated_script(seed: int = 7) -> SessionScript:
    """The crash-loop script with its logs step calling ``kubectl-logs``."""
    script = crashloop_script(seed=seed)
    steps = [s.model_copy(update={"tool": "kubectl-logs"}) if s.tool == "kubectl_logs" else s for s in script.steps]
    return script.model_copy(update={"steps": steps})


def test_a_name_variant_call_swaps_the_hyphen_and_keeps_the_arguments() -> None:
    decisions = decisions_over_seeds(profile("oracle", p_malformed_base=1.0), 300, hyphenated_script)
    variants = [d for d in decisions if d.malformed == "name_variant"]
    assert variants
    for d in variants:
        assert d.call is not None and d.call.tool == "kubectl_logs"
        assert d.call.args == {"pod": BAD_POD, "namespace": NAMESPACE}


# Determinism, thoughts, M2 ----------------------------------------------------------------------------------


def test_decisions_are_a_pure_function_of_context_step_attempt_and_seed(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    p = profile("small")
    a = decide(session.model(p), ctx, "s2", 2)
    b = decide(session.model(p), ctx, "s2", 2)
    assert a == b


def test_thought_is_fixed_per_step_and_branch_and_padded(session: Session) -> None:
    p = profile("frontier")
    model = session.model(p)
    thought = model.thought("s2", "fresh", "kubectl_logs")
    assert thought == session.model(p).thought("s2", "fresh", "kubectl_logs")
    assert thought != model.thought("s2", "refetch", "kubectl_logs")
    assert session.meter.tokenizer.count(thought) >= p.thought_tokens


def test_m2_deleting_the_only_holder_of_a_fact_switches_its_branch_with_the_same_draws(session: Session) -> None:
    filler = session.text("routine: nothing changed in the last hour")
    with_fact = context(session.task(), filler, *session.done("s1"))
    without = context(session.task(), filler, session.action("s1"))
    assert "bad_pod" in with_fact.messages.fact_counts and "bad_pod" not in without.messages.fact_counts
    model = session.model(profile("frontier", p_max=1.0, D0=0.0, L_half=math.inf, L_half_literal=math.inf,
                                  p_confabulate=0.0))
    a = decide(model, with_fact, "s2")
    b = decide(model, without, "s2")
    assert branch_of(a, "bad_pod") == "recall"
    assert branch_of(b, "bad_pod") == "refetch"
    assert a.call is not None and a.call.args["pod"] == BAD_POD
    assert b.call is not None and b.call.purpose == "refetch" and b.call.target_step == "s1"


def test_m2_the_recall_draw_does_not_depend_on_the_rest_of_the_context(session: Session) -> None:
    short = context(session.task(), *session.done("s1"))
    longer = context(session.task(), session.text("filler " * 200), *session.done("s1"))
    model = session.model(profile("frontier"))
    ua = entry_of(decide(model, short, "s2"), "bad_pod")["u"]
    ub = entry_of(decide(model, longer, "s2"), "bad_pod")["u"]
    assert ua == ub


# Mechanisms off (the validation's ablation) -------------------------------------------------------------------


def test_without_visible_sources_an_untraced_fact_is_refetched_by_its_finders_call(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))  # no trace of s2, which finds trace_id
    on = decide(session.model(profile("oracle")), ctx, "s3")
    assert on.switch_to == "s2"
    off = decide(session.model(profile("oracle"), Mechanisms(visible_sources=False)), ctx, "s3")
    assert off.switch_to is None
    assert off.call is not None and off.call.purpose == "refetch" and off.call.target_step == "s2"
    s2 = session.step("s2")
    assert (off.call.tool, off.call.args) == (s2.tool, concrete_args(s2, session.truth))


def test_without_visible_sources_the_finders_own_lost_args_are_resolved_first(session: Session) -> None:
    ctx = context(session.task())  # trace_id and bad_pod both lost, and every trace of s1 and s2
    decision = decide(session.model(profile("oracle"), Mechanisms(visible_sources=False)), ctx, "s3")
    assert decision.call is not None and decision.call.purpose == "refetch"
    assert decision.call.target_step == "s1"  # s2's pod arg is lost too: fetch it first (depth 1)
    assert decision.call.args == {"resource": "pods", "namespace": NAMESPACE}
    assert [e["depth"] for e in decision.trace] == [0, 1, 2]


# Final answer and hand-over --------------------------------------------------------------------------------------


def test_final_answer_states_the_recalled_goal_values(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1", "s2", "s3"))
    decision = decide(session.model(profile("oracle")), ctx, None)
    assert decision.kind == "final"
    assert f"- bad_pod: {BAD_POD}" in decision.text
    assert f"- culprit_flag: {FLAG}" in decision.text


def test_final_with_a_lost_goal_and_no_trace_of_its_source_re_explores(session: Session) -> None:
    ctx = context(session.task(), *session.done("s3"))
    decision = decide(session.model(profile("oracle")), ctx, None)
    assert decision.kind == "call" and decision.call is None and decision.switch_to == "s1"


def test_final_with_a_lost_goal_whose_call_is_visible_re_fetches_before_answering(session: Session) -> None:
    ctx = context(session.task(), session.action("s1"), *session.done("s3"))
    decision = decide(session.model(profile("oracle")), ctx, None)
    assert decision.kind == "call" and decision.call is not None
    assert decision.call.purpose == "refetch" and decision.call.target_step == "s1"


def test_handover_carries_recalled_values_and_makes_up_lost_ones(session: Session) -> None:
    ctx = context(session.task(), session.result("s2"))  # the logs, without the call naming the pod
    model = session.model(profile("oracle"))
    values, trace = model.handover(model.view(ctx), ["trace_id", "bad_pod"])
    assert values["trace_id"] == TRACE_ID
    assert values["bad_pod"] != BAD_POD
    assert [e["branch"] for e in trace] == ["recall", "wrong"]


# Summaries (docs/model.md 4, v3 change 8) -------------------------------------------------------------------


def summary_of(session: Session, p: Profile, n: int = 1, msgs: list[Message] | None = None
               ) -> tuple[str, list[str], list[Message]]:
    msgs = [session.task(), *session.done("s1", "s2", "s3")] if msgs is None else msgs
    model = session.model(p)
    text, kept = model.summary_text(model.view(context(*msgs)), msgs, "s3", n, sum(m.tokens for m in msgs) + 500)
    return text, kept, msgs


def fact_lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- ") and not line.startswith("- ran ")]


def calls_done(text: str) -> list[str]:
    lines = text.splitlines()
    assert "## Calls done" in lines
    return lines[lines.index("## Calls done") + 1:]


def test_summary_restates_the_task_verbatim(session: Session) -> None:
    text, _, _ = summary_of(session, profile("oracle"))
    lines = text.splitlines()
    assert lines[0] == "## Summary of the work so far"
    assert lines[1] == f"Task: {session.script.task.text[:300]}"


def test_summary_with_keep_max_one_and_no_decay_keeps_every_visible_fact(session: Session) -> None:
    text, kept, _ = summary_of(session, profile("frontier", keep_max=1.0, L_half=math.inf, L_half_literal=math.inf,
                                                p_summary_error=0.0))
    assert sorted(kept) == ["bad_pod", "culprit_flag", "namespace", "trace_id"]
    summary = session.text(text, kind="summary")
    assert summary.facts >= frozenset(kept)
    assert session.model(profile("oracle")).reader.claims(summary) == {k: session.truth[k] for k in kept}


def test_summary_with_keep_max_zero_keeps_no_fact(session: Session) -> None:
    text, kept, _ = summary_of(session, profile("frontier", keep_max=0.0, p_record_drop=1.0))
    assert kept == []
    assert fact_lines_of(text) == []
    summary = session.text(text, kind="summary")
    assert session.model(profile("oracle")).reader.claims(summary) == {}
    assert summary.facts == frozenset({"namespace"})  # only the task line, which names it


def test_summary_lists_goal_facts_first_then_newest_first(session: Session) -> None:
    text, kept, _ = summary_of(session, profile("oracle"))
    assert kept == ["bad_pod", "culprit_flag", "trace_id", "namespace"]
    assert fact_lines_of(text) == [f"- bad pod: {BAD_POD}", f"- culprit flag: {FLAG}", f"- trace id: {TRACE_ID}",
                                   f"- namespace: {NAMESPACE}"]


def test_summary_writes_labels_never_the_harness_keys(session: Session) -> None:
    for p in (profile("oracle"), profile("oracle", p_summary_error=1.0)):
        text, kept, _ = summary_of(session, p)
        assert kept
        for key in UNDERSCORED_KEYS:
            assert f"{key}:" not in text
            assert f"- {key}" not in text


def test_summary_with_p_summary_error_one_misstates_each_kept_value(session: Session) -> None:
    text, kept, _ = summary_of(session, profile("oracle", p_summary_error=1.0))
    lines = fact_lines_of(text)
    assert len(lines) == len(kept) == 4
    assert f"- bad pod: {DECOY_POD}" in lines  # the decoy the pods table shows comes first
    for key in kept:
        assert f"- {key.replace('_', ' ')}: {session.truth[key]}" not in lines
    assert re.fullmatch(r"- trace id: trace-[a-z2-7]{4}", next(x for x in lines if x.startswith("- trace id:")))


def test_a_misstated_summary_value_is_what_a_later_recall_returns(session: Session) -> None:
    text, _, _ = summary_of(session, profile("oracle", p_summary_error=1.0, p_record_drop=1.0))
    summary = session.text(text, kind="summary")
    assert "bad_pod" not in summary.facts  # the true pod is in no line of it
    decision = decide(session.model(profile("oracle")), context(summary), "s2")
    entry = entry_of(decision, "bad_pod")
    assert entry["branch"] == "recall" and entry["lookup"] == "literal"
    assert decision.call is not None and decision.call.args["pod"] == DECOY_POD


def test_summary_with_p_record_drop_zero_records_each_successful_call(session: Session) -> None:
    text, _, _ = summary_of(session, profile("oracle", p_record_drop=0.0))
    assert calls_done(text) == ["- ran " + session.call_text(sid) for sid in ("s1", "s2", "s3")]
    summary = session.text(text, kind="summary")
    assert summary.records == {"s1", "s2", "s3"}
    model = session.model(profile("oracle"))
    assert model.next_step(model.view(context(summary)), ["s1", "s2", "s3"]) is None


def test_summary_with_p_record_drop_one_records_no_call(session: Session) -> None:
    text, _, _ = summary_of(session, profile("oracle", p_record_drop=1.0))
    assert calls_done(text) == []
    assert "- ran " not in text
    summary = session.text(text, kind="summary")
    assert summary.records == frozenset()
    model = session.model(profile("oracle"))
    assert model.next_step(model.view(context(summary)), ["s1", "s2", "s3"]) == "s1"


def test_summary_does_not_record_a_call_that_failed(session: Session) -> None:
    timeout = render_error(EngineeringError("TIMEOUT", "timed out", retryable=True), structured=True)
    msgs = [session.task(), *session.done("s1"), session.action("s2"), session.result("s2", timeout, "error")]
    text, _, _ = summary_of(session, profile("oracle"), msgs=msgs)
    assert calls_done(text) == ["- ran " + session.call_text("s1")]


def test_summary_keep_draws_differ_per_summary_number(session: Session) -> None:
    p = profile("frontier", keep_max=0.5, L_half=1e12)
    kept_sets = {tuple(summary_of(session, p, n)[1]) for n in range(1, 30)}
    assert len(kept_sets) > 1


def test_summary_respects_its_token_budget(session: Session) -> None:
    p = profile("oracle", max_summary_tokens=60)
    text, kept, _ = summary_of(session, p)
    assert session.meter.tokenizer.count(text) <= 60
    assert len(kept) < 4
