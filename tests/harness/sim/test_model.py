"""The mock model's policy (docs/model.md 2-4), one mechanism at a time, on hand-built contexts.

Profiles with overrides force the branch under test (``p_max=0`` fails every recall,
``p_refetch=1`` always re-fetches, ``p_fix=0`` never fixes, ...)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from harness.core.context import Context
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse
from harness.core.stubs import handle_for, render_stub
from harness.core.tools import ContractError, EngineeringError, render_error, required_args, validate_call
from harness.sim.model import RAW_KEY, Decision, MockModel, Pointer, concrete_args
from harness.sim.profiles import Profile, profile
from scenarios.base import SessionScript, Step
from tests.harness.scripts import BAD_POD, DECOY_POD, FLAG, NAMESPACE, TRACE_ID, crashloop_script

ORACLE_REFETCH = profile("oracle", p_refetch=1.0)


class Session:
    """A script, its meter, and helpers to build the messages a replay would have appended."""

    def __init__(self, script: SessionScript) -> None:
        self.script = script
        decoys = [d for ds in script.decoys.values() for d in ds]
        self.meter = TextMeter.for_facts(script.fact_values(), decoys=decoys)
        self.truth = script.fact_values()
        self._n = 0

    def model(self, p: Profile) -> MockModel:
        return MockModel(self.script, p, tokenizer=self.meter.tokenizer)

    def step(self, step_id: str) -> Step:
        return self.script.step_by_id(step_id)

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

    def done(self, *step_ids: str) -> list[Message]:
        """Action and result of each step, as an ideal agent made them."""
        out: list[Message] = []
        for sid in step_ids:
            out += [self.action(sid), self.result(sid)]
        return out

    def pointer(self, step_id: str | None, attempt: int = 0, producers: tuple[str, ...] = ()) -> Pointer:
        made: dict[str, Step] = {}
        for sid in producers:
            for key in self.step(sid).produces:
                made[key] = self.step(sid)
        return Pointer(self.step(step_id) if step_id is not None else None, attempt, made)


def context(*messages: Message) -> Context:
    return Context(messages, window_tokens=10**9)


def branch_of(decision: Decision, key: str) -> str:
    return next(e["branch"] for e in decision.trace if e["key"] == key)


@pytest.fixture()
def session() -> Session:
    return Session(crashloop_script())


# Recall and visibility ------------------------------------------------------------------------------------


def test_visible_facts_are_recalled_into_the_steps_call(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    decision = session.model(profile("oracle")).decide(ctx, session.pointer("s2", producers=("s1",)))
    assert decision.kind == "call" and decision.call is not None
    assert decision.call.tool == "kubectl_logs"
    assert decision.call.args == {"pod": BAD_POD, "namespace": NAMESPACE}
    assert decision.call.purpose == "step"
    assert branch_of(decision, "bad_pod") == "recall"


def test_dropped_fact_with_high_refetch_re_calls_its_producer(session: Session) -> None:
    ctx = context(session.task())  # s1's result (the only holder of bad_pod) is not in the window
    decision = session.model(ORACLE_REFETCH).decide(ctx, session.pointer("s2", producers=("s1",)))
    assert decision.call is not None
    s1 = session.step("s1")
    assert decision.call.purpose == "refetch"
    assert decision.call.target_step == "s1"
    assert (decision.call.tool, decision.call.args) == (s1.tool, concrete_args(s1, session.truth))
    entry = next(e for e in decision.trace if e["key"] == "bad_pod")
    assert entry["visible"] is False and entry["branch"] == "refetch"


def test_refetch_of_a_producer_needing_a_lost_fact_resolves_its_args_too(session: Session) -> None:
    ctx = context(session.task())  # trace_id and bad_pod both lost
    decision = session.model(ORACLE_REFETCH).decide(ctx, session.pointer("s3", producers=("s1", "s2")))
    assert decision.call is not None and decision.call.purpose == "refetch"
    assert decision.call.target_step == "s1"  # s2's pod arg is lost too: fetch it first (depth 1)


def test_dropped_fact_without_refetch_takes_a_visible_decoy(session: Session) -> None:
    ctx = context(session.task(), session.text(f"{DECOY_POD}   1/1     Running   0   3d"))
    decision = session.model(profile("oracle", p_refetch=0.0)).decide(ctx, session.pointer("s2", producers=("s1",)))
    assert decision.call is not None
    assert decision.call.args["pod"] == DECOY_POD
    assert branch_of(decision, "bad_pod") == "wrong"


def test_dropped_fact_without_refetch_or_decoy_makes_up_a_value_of_the_same_shape(session: Session) -> None:
    ctx = context(session.task())
    decision = session.model(profile("oracle", p_refetch=0.0)).decide(ctx, session.pointer("s2", producers=("s1",)))
    assert decision.call is not None
    pod = decision.call.args["pod"]
    assert re.fullmatch(r"pod-[a-z2-7]{4}", pod)
    assert pod not in (BAD_POD, DECOY_POD)


def test_the_same_wrong_value_repeats_on_a_fresh_attempt(session: Session) -> None:
    ctx = context(session.task())
    model = session.model(profile("oracle", p_refetch=0.0))
    first = model.decide(ctx, session.pointer("s2", 0, producers=("s1",)))
    later = model.decide(ctx, session.pointer("s2", 5, producers=("s1",)))
    assert first.call is not None and later.call is not None
    assert first.call.args["pod"] == later.call.args["pod"]


def test_failed_recall_of_a_visible_fact_falls_through_to_refetch(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    decision = session.model(profile("oracle", p_max=0.0, p_refetch=1.0)).decide(
        ctx, session.pointer("s2", producers=("s1",)))
    entry = next(e for e in decision.trace if e["key"] == "bad_pod")
    assert entry["visible"] is True and entry["p"] == 0.0
    assert decision.call is not None and decision.call.purpose == "refetch"


def test_task_facts_have_no_producer_so_a_lost_one_becomes_a_wrong_value(session: Session) -> None:
    ctx = context(session.text("nothing useful here"))
    decision = session.model(ORACLE_REFETCH).decide(ctx, session.pointer("s1"))
    assert decision.call is not None and decision.call.purpose == "step"
    assert decision.call.args["namespace"] != NAMESPACE
    assert branch_of(decision, "namespace") == "wrong"


def test_recall_trace_records_position_probability_and_draw(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    decision = session.model(profile("frontier")).decide(ctx, session.pointer("s2", producers=("s1",)))
    entry = next(e for e in decision.trace if e["key"] == "bad_pod")
    assert set(entry) >= {"key", "visible", "x", "p", "u", "branch"}
    assert 0 < entry["x"] <= 1 and 0 < entry["p"] <= 1 and 0 < entry["u"] < 1
    assert (entry["branch"] == "recall") == (entry["u"] < entry["p"])


def test_position_x_is_of_the_newest_holder(session: Session) -> None:
    model = session.model(profile("frontier"))
    base = [session.task(), *session.done("s1"), *session.done("s2")]
    old = context(*base)
    new = context(*base, session.text(f"again: {BAD_POD}"))

    def x_of(ctx: Context) -> float:
        trace = model.decide(ctx, session.pointer(None, producers=("s1",))).trace
        return float(next(e["x"] for e in trace if e["key"] == "bad_pod"))

    assert 0 < x_of(old) < x_of(new)
    assert x_of(new) > 0.9


# Handles -----------------------------------------------------------------------------------------------------


def handle_message(session: Session, step_id: str, keys: list[str], preview_chars: int = 0) -> Message:
    payload = session.step(step_id).payload
    return session.result(step_id, render_stub(payload, keys, preview_chars))


def test_visible_handle_covering_the_key_leads_to_retrieve_payload(session: Session) -> None:
    stub = handle_message(session, "s1", ["bad_pod"])
    assert stub.kind == "handle" and "bad_pod" in stub.covers and "bad_pod" not in stub.facts
    ctx = context(session.task(), session.action("s1"), stub)
    decision = session.model(ORACLE_REFETCH).decide(ctx, session.pointer("s2", producers=("s1",)))
    assert decision.call is not None
    assert decision.call.tool == "retrieve_payload"
    assert decision.call.args == {"handle": handle_for(session.step("s1").payload), "key": "bad_pod"}
    assert decision.call.purpose == "retrieve"
    assert validate_call("retrieve_payload", decision.call.args).__class__.__name__ == "RetrievePayload"


def test_handle_whose_keys_line_lacks_the_key_is_not_used(session: Session) -> None:
    stub = handle_message(session, "s1", [])
    ctx = context(session.task(), session.action("s1"), stub)
    decision = session.model(ORACLE_REFETCH).decide(ctx, session.pointer("s2", producers=("s1",)))
    assert decision.call is not None and decision.call.purpose == "refetch"


def test_handle_preview_holding_the_value_makes_it_visible(session: Session) -> None:
    stub = handle_message(session, "s1", ["bad_pod"], preview_chars=4000)
    assert "bad_pod" in stub.facts
    ctx = context(session.task(), session.action("s1"), stub)
    decision = session.model(profile("oracle")).decide(ctx, session.pointer("s2", producers=("s1",)))
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
    decision = model.decide(ctx, session.pointer("s2", 1, producers=("s1",)))
    assert decision.malformed == ""
    assert decision.call is not None and decision.call.purpose == "fix"
    assert decision.call.args == {"pod": BAD_POD, "namespace": NAMESPACE}


def test_contract_error_with_p_fix_zero_gives_another_malformed_call(session: Session) -> None:
    ctx = contract_error_context(session)
    decision = session.model(profile("oracle", p_fix=0.0)).decide(ctx, session.pointer("s2", 1, producers=("s1",)))
    assert decision.malformed != ""


def test_plain_contract_error_text_is_not_treated_as_a_contract_error(session: Session) -> None:
    bad = session.action("s2", {"namespace": NAMESPACE})
    ctx = context(session.task(), *session.done("s1"), bad, session.result("s2", "Error: KeyError 'pod'", "error"))
    decision = session.model(profile("oracle", p_fix=0.0, p_repeat_error=1.0)).decide(
        ctx, session.pointer("s2", 1, producers=("s1",)))
    assert decision.branch == "repeat"
    assert decision.call is not None and decision.call.args == {"namespace": NAMESPACE}


# Engineering errors -------------------------------------------------------------------------------------------------


def test_structured_404_naming_the_fallback_switches_to_it() -> None:
    s = Session(crashloop_script(fault="http_404"))
    text = render_error(EngineeringError("HTTP_404", "404", retryable=False, fallback="log_search"), structured=True)
    ctx = context(s.task(), *s.done("s1"), s.action("s2"), s.result("s2", text, "error"))
    decision = s.model(profile("oracle")).decide(ctx, s.pointer("s2", 1, producers=("s1",)))
    assert decision.switch_to_fallback


def test_retryable_error_resends_the_same_call_without_a_syntax_draw(session: Session) -> None:
    text = render_error(EngineeringError("TIMEOUT", "timed out", retryable=True), structured=True)
    sent = {"pod": DECOY_POD, "namespace": NAMESPACE}
    ctx = context(session.task(), *session.done("s1"), session.action("s2", sent, "my thought"),
                  session.result("s2", text, "error"))
    decision = session.model(profile("oracle", p_malformed_base=1.0, g_L=10.0)).decide(
        ctx, session.pointer("s2", 1, producers=("s1",)))
    assert decision.branch == "retry" and decision.malformed == ""
    assert decision.call is not None and decision.call.args == sent and decision.call.purpose == "resend"
    assert decision.text == "my thought"


def test_not_found_naming_the_arg_bans_the_value_for_the_next_attempt(session: Session) -> None:
    p = profile("oracle", p_max=0.0, p_refetch=0.0)
    ctx = context(session.task(), *session.done("s1"))
    model = session.model(p)
    first = model.decide(ctx, session.pointer("s2", 0, producers=("s1",)))
    assert first.call is not None and first.call.args["pod"] == DECOY_POD  # the visible decoy first
    text = render_error(EngineeringError("NOT_FOUND", f"pod '{DECOY_POD}' not found", bad_arg="pod"), structured=True)
    ctx.messages.extend([session.action("s2", dict(first.call.args)), session.result("s2", text, "error")])
    second = model.decide(ctx, session.pointer("s2", 1, producers=("s1",)))
    assert model.banned(ctx, "s2") == {DECOY_POD}
    assert second.call is not None
    assert second.call.args["pod"] not in (DECOY_POD, BAD_POD)


def test_a_ban_lasts_only_while_its_not_found_error_is_visible(session: Session) -> None:
    p = profile("oracle", p_max=0.0, p_refetch=0.0)
    base = [session.task(), *session.done("s1")]
    model = session.model(p)
    text = render_error(EngineeringError("NOT_FOUND", f"pod '{DECOY_POD}' not found", bad_arg="pod"), structured=True)
    with_error = context(*base, session.action("s2", {"pod": DECOY_POD, "namespace": "x"}),
                         session.result("s2", text, "error"))
    model.decide(with_error, session.pointer("s2", 1, producers=("s1",)))
    forgotten = model.decide(context(*base), session.pointer("s2", 2, producers=("s1",)))
    fresh = session.model(p).decide(context(*base), session.pointer("s2", 2, producers=("s1",)))
    assert fresh.call is not None and fresh.call.args["pod"] == DECOY_POD
    assert forgotten.call is not None and forgotten.call.args["pod"] == DECOY_POD


def test_plain_not_found_that_names_the_value_bans_it(session: Session) -> None:
    """docs/model.md 2.2: a plain error that names the value sent bans it, as a structured bad_arg does."""
    p = profile("oracle", p_max=0.0, p_refetch=0.0, p_repeat_error=0.0)
    ctx = context(session.task(), *session.done("s1"))
    model = session.model(p)
    first = model.decide(ctx, session.pointer("s2", 0, producers=("s1",)))
    assert first.call is not None and first.call.args["pod"] == DECOY_POD
    ctx.messages.extend([session.action("s2", dict(first.call.args)),
                         session.result("s2", f"Error: pod '{DECOY_POD}' not found", "error")])
    second = model.decide(ctx, session.pointer("s2", 1, producers=("s1",)))
    assert model.banned(ctx, "s2") == {DECOY_POD}
    assert second.branch == "fresh"
    assert second.call is not None and second.call.args["pod"] not in (DECOY_POD, BAD_POD)


def test_a_plain_error_that_does_not_name_the_value_bans_nothing(session: Session) -> None:
    ctx = plain_error_context(session, nudge=False)
    assert session.model(profile("oracle")).banned(ctx, "s2") == set()


def test_followed_nudge_without_fallback_makes_a_new_wrong_value(session: Session) -> None:
    """2.3 "follow the nudge": skip recall and, with no handle, re-call or shortcut, a new wrong value:
    never the value the step's last call sent."""
    p = profile("oracle", p_max=0.0, p_refetch=0.0, p_shortcut=0.0, p_nudge_follow=1.0, p_repeat_error=0.0)
    model = session.model(p)
    msgs = [session.task(), *session.done("s1")]
    first = model.decide(context(*msgs), session.pointer("s2", 0, producers=("s1",)))
    assert first.call is not None
    sent = dict(first.call.args)
    for _ in range(3):
        msgs += [session.action("s2", sent, thought="same"),
                 session.result("s2", "Error: kubectl_logs: 404 Not Found", "error")]
    msgs.append(session.text("you called kubectl_logs with the same arguments 3 times and got an error",
                             kind="nudge", step_id="s2"))
    decision = model.decide(context(*msgs), session.pointer("s2", 3, producers=("s1",)))
    assert decision.branch == "nudge"
    assert decision.call is not None and decision.call.args["pod"] != sent["pod"]


def plain_error_context(s: Session, nudge: bool) -> Context:
    msgs = [s.task(), *s.done("s1")]
    for _ in range(3):
        msgs += [s.action("s2", thought="same"), s.result("s2", "Error: kubectl_logs: 404 Not Found", "error")]
    if nudge:
        msgs.append(s.text("you called kubectl_logs with the same arguments 3 times and got an error",
                           kind="nudge", step_id="s2"))
    return context(*msgs)


def test_plain_error_with_p_repeat_one_resends_verbatim(session: Session) -> None:
    ctx = plain_error_context(session, nudge=False)
    decision = session.model(profile("oracle", p_repeat_error=1.0)).decide(
        ctx, session.pointer("s2", 3, producers=("s1",)))
    assert decision.branch == "repeat" and decision.text == "same"
    assert decision.call is not None and decision.call.args == {"pod": BAD_POD, "namespace": NAMESPACE}


def test_plain_error_with_p_repeat_zero_makes_a_fresh_attempt(session: Session) -> None:
    ctx = plain_error_context(session, nudge=False)
    decision = session.model(profile("oracle", p_repeat_error=0.0)).decide(
        ctx, session.pointer("s2", 3, producers=("s1",)))
    assert decision.branch == "fresh"


def test_followed_nudge_takes_the_fallback() -> None:
    s = Session(crashloop_script(fault="http_404"))
    ctx = plain_error_context(s, nudge=True)
    decision = s.model(profile("oracle", p_nudge_follow=1.0)).decide(ctx, s.pointer("s2", 3, producers=("s1",)))
    assert decision.switch_to_fallback


def test_followed_nudge_without_fallback_skips_recall(session: Session) -> None:
    ctx = plain_error_context(session, nudge=True)
    decision = session.model(profile("oracle", p_nudge_follow=1.0, p_refetch=1.0)).decide(
        ctx, session.pointer("s2", 3, producers=("s1",)))
    assert decision.branch in ("refetch", "nudge")
    assert decision.call is not None and decision.call.purpose == "refetch"


def test_ignored_nudge_falls_back_to_the_repeat_rule(session: Session) -> None:
    ctx = plain_error_context(session, nudge=True)
    decision = session.model(profile("oracle", p_nudge_follow=0.0, p_repeat_error=1.0)).decide(
        ctx, session.pointer("s2", 3, producers=("s1",)))
    assert decision.branch == "repeat"


# Shortcut ----------------------------------------------------------------------------------------------------


def test_unresolvable_fact_on_a_step_with_a_shortcut_takes_it_when_drawn() -> None:
    s = Session(crashloop_script(shortcut=True))
    ctx = context(s.text("no task here"))
    decision = s.model(profile("oracle", p_max=0.0, p_shortcut=1.0)).decide(ctx, s.pointer("s1"))
    assert decision.call is not None and decision.call.purpose == "shortcut"
    assert decision.call.tool == "kubectl_delete_namespace"
    never = s.model(profile("oracle", p_max=0.0, p_shortcut=0.0)).decide(ctx, s.pointer("s1"))
    assert never.call is not None and never.call.purpose == "step"


# Malformed calls ---------------------------------------------------------------------------------------------


def decisions_over_seeds(p: Profile, n: int) -> list[Decision]:
    out = []
    for seed in range(n):
        s = Session(crashloop_script(seed=seed))
        ctx = context(s.task(), *s.done("s1"))
        out.append(s.model(p).decide(ctx, s.pointer("s2", producers=("s1",))))
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


# Determinism, thoughts, M2 ----------------------------------------------------------------------------------


def test_decisions_are_a_pure_function_of_context_pointer_and_seed(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1"))
    p = profile("small")
    a = session.model(p).decide(ctx, session.pointer("s2", 2, producers=("s1",)))
    b = session.model(p).decide(ctx, session.pointer("s2", 2, producers=("s1",)))
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
    model = session.model(profile("frontier", p_max=1.0, D0=0.0, L_half=float("inf"), p_refetch=1.0))
    a = model.decide(with_fact, session.pointer("s2", producers=("s1",)))
    b = model.decide(without, session.pointer("s2", producers=("s1",)))
    assert branch_of(a, "bad_pod") == "recall"
    assert branch_of(b, "bad_pod") == "refetch"
    assert a.call is not None and a.call.args["pod"] == BAD_POD
    assert b.call is not None and b.call.purpose == "refetch" and b.call.target_step == "s1"


def test_m2_the_recall_draw_does_not_depend_on_the_rest_of_the_context(session: Session) -> None:
    short = context(session.task(), *session.done("s1"))
    longer = context(session.task(), session.text("filler " * 200), *session.done("s1"))
    model = session.model(profile("frontier"))
    ua = next(e["u"] for e in model.decide(short, session.pointer("s2", producers=("s1",))).trace
              if e["key"] == "bad_pod")
    ub = next(e["u"] for e in model.decide(longer, session.pointer("s2", producers=("s1",))).trace
              if e["key"] == "bad_pod")
    assert ua == ub


# Final answer and hand-over --------------------------------------------------------------------------------------


def test_final_answer_states_the_recalled_goal_values(session: Session) -> None:
    ctx = context(session.task(), *session.done("s1", "s2", "s3"))
    decision = session.model(profile("oracle")).decide(ctx, session.pointer(None, producers=("s1", "s2", "s3")))
    assert decision.kind == "final"
    assert f"- bad_pod: {BAD_POD}" in decision.text
    assert f"- culprit_flag: {FLAG}" in decision.text


def test_final_with_a_lost_goal_re_fetches_before_answering(session: Session) -> None:
    ctx = context(session.task(), *session.done("s3"))
    decision = session.model(ORACLE_REFETCH).decide(ctx, session.pointer(None, producers=("s1", "s2", "s3")))
    assert decision.kind == "call" and decision.call is not None and decision.call.target_step == "s1"


def test_handover_carries_recalled_values_and_makes_up_lost_ones(session: Session) -> None:
    ctx = context(session.task(), session.result("s2"))  # the logs, without the call naming the pod
    values, trace = session.model(profile("oracle")).handover(ctx, session.pointer(None), ["trace_id", "bad_pod"])
    assert values["trace_id"] == TRACE_ID
    assert values["bad_pod"] != BAD_POD
    assert [e["branch"] for e in trace] == ["recall", "wrong"]


# Summaries (docs/model.md 4) -----------------------------------------------------------------------------------


def summary_of(session: Session, p: Profile, n: int = 1) -> tuple[str, list[str], list[Message]]:
    msgs = [session.task(), *session.done("s1", "s2", "s3")]
    text, kept = session.model(p).summary_text(msgs, "s3", n, sum(m.tokens for m in msgs) + 500)
    return text, kept, msgs


def test_summary_with_keep_max_one_and_no_decay_keeps_every_visible_fact(session: Session) -> None:
    text, kept, _ = summary_of(session, profile("frontier", keep_max=1.0, L_half=1e12))
    assert sorted(kept) == ["bad_pod", "culprit_flag", "namespace", "trace_id"]
    summary = session.text(text, kind="summary")
    assert summary.facts == frozenset(kept)


def test_summary_with_keep_max_zero_keeps_no_fact(session: Session) -> None:
    text, kept, _ = summary_of(session, profile("frontier", keep_max=0.0))
    assert kept == []
    assert session.text(text, kind="summary").facts == frozenset()
    assert text.startswith("## Conversation Summary")


def test_summary_lists_goal_facts_first_then_newest_first(session: Session) -> None:
    text, kept, _ = summary_of(session, profile("oracle"))
    assert kept == ["bad_pod", "culprit_flag", "trace_id", "namespace"]
    positions = [text.index(v) for v in (BAD_POD, FLAG, TRACE_ID)]
    assert positions == sorted(positions)
    assert "## Tools Executed" in text and "kubectl_logs" in text


def test_summary_keep_draws_differ_per_summary_number(session: Session) -> None:
    p = profile("frontier", keep_max=0.5, L_half=1e12)
    kept_sets = {tuple(summary_of(session, p, n)[1]) for n in range(1, 30)}
    assert len(kept_sets) > 1


def test_summary_respects_its_token_budget(session: Session) -> None:
    p = profile("oracle", max_summary_tokens=60)
    text, kept, _ = summary_of(session, p)
    assert session.meter.tokenizer.count(text) <= 60
    assert len(kept) < 4
