"""The agent runtime (harness.sim.kernel): each mechanism of docs/model.md 3-8 in isolation, on the
small hand-built scripts of tests/harness/scripts.py."""

from __future__ import annotations

import itertools
import json
from typing import ClassVar

import pytest

from harness.core.context import Context
from harness.core.crn import z
from harness.core.messages import Message, TextMeter, parse_error
from harness.core.switches import CONTRACT_RUNTIME, Switches
from harness.sim.kernel import NUDGE_TEXT, PromptCache, SessionResult, replay
from harness.sim.loops import LoopEvent
from harness.sim.metrics import OUTCOMES, SessionRecord
from harness.sim.profiles import Profile, profile
from scenarios.base import SessionScript
from strategies.base import create
from strategies.unbounded import Unbounded
from tests.harness.scripts import (
    BAD_POD,
    NAMESPACE,
    TRACE_ID,
    alert_chain_script,
    crashloop_script,
)

ORACLE = profile("oracle")

SCRIPTS = {
    "plain": lambda: crashloop_script(),
    "no_decoys": lambda: crashloop_script(decoys=False),
    "404_with_fallback": lambda: crashloop_script(fault="http_404"),
    "404_once": lambda: crashloop_script(fault="http_404", fails=1),
    "timeout_twice": lambda: crashloop_script(fault="timeout", fails=2),
    "timeout_with_fallback": lambda: crashloop_script(fault="timeout"),
    "shortcut": lambda: crashloop_script(shortcut=True),
    "alert_chain": lambda: alert_chain_script(),
}


def run(script: SessionScript, strategy: str = "unbounded", p: Profile | str = ORACLE, **switches: object
        ) -> SessionResult:
    return replay(script, strategy, p, **switches)


def errors_of(result: SessionResult) -> list[str]:
    return [e.signature[1] for e in result.loop_events if e.kind == "error"]


# M1: controls -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SCRIPTS))
@pytest.mark.parametrize("errors", ["plain", "three_class"])
def test_m1_oracle_with_unbounded_context_succeeds(name: str, errors: str) -> None:
    result = run(SCRIPTS[name](), errors=errors)
    assert result.record.outcome == "success"
    assert result.record.facts_lost == 0
    assert result.record.wrong_values == 0


@pytest.mark.parametrize("name", ["plain", "404_once", "shortcut"])
def test_m1_oracle_with_offload_contracts_succeeds(name: str) -> None:
    assert run(SCRIPTS[name](), "offload_contracts").record.outcome == "success"


def test_m1_drop_all_fails_when_the_answer_needs_early_facts_and_uses_fewer_tokens() -> None:
    script = crashloop_script()
    dropped = run(script, "drop_all").record
    kept = run(script, "unbounded").record
    assert dropped.outcome != "success"
    assert dropped.facts_lost > 0
    assert dropped.context_tokens_mean < kept.context_tokens_mean


def test_drop_all_leaves_no_trace_of_the_work_so_the_agent_starts_over() -> None:
    # docs/model.md v3 changes 1-2: with no sign of its calls left, the agent takes its first step up again.
    result = run(crashloop_script(), "drop_all")
    assert result.record.redone_steps > 0
    assert result.record.outcome != "success"
    assert [c.step_id for c in result.calls[:4]].count("s1") >= 2


def test_offloaded_payloads_are_read_back_with_retrieve_payload() -> None:
    result = replay(crashloop_script(filler_lines=60), create("offload_contracts", preview_chars=0), ORACLE)
    assert result.record.outcome == "success"
    assert result.record.retrieve_calls >= 3
    assert [c.action for c in result.calls].count("retrieve") == result.record.retrieve_calls
    retrieves = [json.loads(e.signature[1]) for e in result.loop_events
                 if e.kind == "action" and e.signature[0] == "retrieve_payload"]
    # The agent asks for a stub's pages by handle and offset: it is never told where a fact is (v3 change 9).
    assert all(set(args) <= {"handle", "offset"} for args in retrieves)
    assert len({args["handle"] for args in retrieves}) >= 3


class _EvictingOffload(create("offload_contracts").__class__):  # type: ignore[misc]
    """offload_contracts whose store has evicted a payload by the first time the agent asks for it (a
    fetch offloads it again: the second ask is served)."""

    def retrieve(self, ctx: Context, handle: str, offset: int = 0, length: int | None = None) -> tuple[str, str]:
        asked: set[str] = self.__dict__.setdefault("asked", set())
        if handle not in asked:
            asked.add(handle)
            return "error", f"Error: reference not found: {handle}"
        return super().retrieve(ctx, handle, offset, length)


def test_a_handle_whose_retrieve_failed_is_not_paged_again() -> None:
    # The agent reads "reference not found" and takes another way to the fact (re-fetch, shortcut or a
    # guess) instead of asking for the same evicted reference until the session is stuck.
    strategy = _EvictingOffload(create("offload_contracts", preview_chars=0).params)
    result = replay(crashloop_script(filler_lines=60), strategy, ORACLE)
    actions = [(e.signature[0], json.loads(e.signature[1])) for e in result.loop_events if e.kind == "action"]
    outcomes = [e for e in result.loop_events if e.kind in ("observation", "error")]
    assert len(outcomes) == len(actions)
    failures = [i for i, (tool, _args) in enumerate(actions)
                if tool == "retrieve_payload" and outcomes[i].kind == "error"]
    assert failures  # the agent did try to page back, and was refused
    for i in failures:
        # The next call takes another way to the fact instead of asking for the refused reference again.
        assert i + 1 < len(actions) and actions[i + 1] != actions[i], actions[i:i + 2]
    assert result.record.outcome == "success"


# Engineering failures and error semantics ---------------------------------------------------------------------


def test_404_that_never_clears_with_plain_errors_and_no_nudge_follow_loops_until_stuck() -> None:
    p = profile("oracle", p_nudge_follow=0.0, p_repeat_error=1.0)
    record = run(crashloop_script(fault="http_404"), p=p, errors="plain").record
    assert record.outcome == "stuck"
    assert record.loop_detected and record.loop_rule == "repeat"
    assert record.engineering_errors >= 4
    assert record.nudges == 1


def test_404_that_never_clears_with_three_class_errors_takes_the_fallback_and_succeeds() -> None:
    p = profile("oracle", p_nudge_follow=0.0, p_repeat_error=1.0)
    result = run(crashloop_script(fault="http_404"), p=p, errors="three_class")
    assert result.record.outcome == "success"
    assert result.record.engineering_errors == 1
    first = parse_error(errors_of(result)[0])
    assert first.structured and first.code == "HTTP_404" and first.retryable is False
    assert first.fallback == "log_search"
    assert [e.signature[0] for e in result.loop_events if e.kind == "action"].count("log_search") == 1


def test_plain_404_with_a_followed_nudge_takes_the_fallback() -> None:
    p = profile("oracle", p_nudge_follow=1.0, p_repeat_error=0.0)
    result = run(crashloop_script(fault="http_404"), p=p, errors="plain")
    assert result.record.outcome == "success"
    assert result.record.nudges == 1
    nudges = [e for e in result.loop_events if e.kind == "message" and e.source == "environment"]
    assert nudges == [LoopEvent.message("environment", NUDGE_TEXT.format(tool="kubectl_logs"))]


def test_timeouts_are_retried_and_cost_their_timeout_seconds() -> None:
    record = run(crashloop_script(fault="timeout", fails=2), errors="three_class").record
    assert record.outcome == "success"
    assert record.engineering_errors == 2
    assert record.tool_s >= 60.0


def test_timeout_that_never_clears_is_retried_twice_then_the_fallback_is_named() -> None:
    result = run(crashloop_script(fault="timeout"), errors="three_class")
    infos = [parse_error(t) for t in errors_of(result)]
    assert [i.retryable for i in infos] == [True, True, False]
    assert infos[-1].fallback == "log_search"
    assert result.record.outcome == "success"


def test_wrong_value_gets_not_found_naming_the_arg_and_three_class_bans_it() -> None:
    p = profile("oracle", p_max=0.0, p_confabulate=1.0)
    result = run(crashloop_script(), p=p, errors="three_class")
    infos = [parse_error(t) for t in errors_of(result)]
    assert len(infos) >= 3
    assert all(i.code == "NOT_FOUND" and i.bad_arg == "namespace" for i in infos)
    values = [json.loads(e.signature[1])["namespace"] for e in result.loop_events if e.kind == "action"]
    assert NAMESPACE not in values
    assert len(set(values)) == len(values)  # each named value is banned on the next attempt
    assert result.record.wrong_values >= len(values)


def test_a_plain_error_that_names_the_wrong_value_bans_it_until_the_attempts_run_out() -> None:
    """docs/model.md 2.2: "namespace 'x' not found" names the value, so a fresh attempt never sends it again:
    every attempt is a new wrong value (no loop of identical calls), until max_attempts_per_step."""
    p = profile("oracle", p_max=0.0, p_confabulate=1.0, p_repeat_error=0.0, p_nudge_follow=0.0)
    result = run(crashloop_script(), p=p, errors="plain")
    texts = errors_of(result)
    assert texts[0].startswith("Error: namespace '") and "not found" in texts[0]
    assert len(set(texts)) == len(texts) == p.max_attempts_per_step
    assert result.record.outcome == "step_failed"


# Contracts and malformed calls (P10) ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_p10_with_contracts_on_no_syntax_error_reaches_a_tool(seed: int) -> None:
    p = profile("oracle", p_malformed_base=1.0, p_fix=1.0)
    record = run(crashloop_script(seed=seed), p=p, contracts=True).record
    assert record.syntax_errors_reaching_tool == 0
    assert record.outcome == "success"


def test_p10_malformed_calls_are_emitted_and_caught_with_contracts_on() -> None:
    p = profile("oracle", p_malformed_base=1.0, p_fix=1.0)
    records = [run(crashloop_script(seed=seed), p=p, contracts=True).record for seed in range(6)]
    assert sum(r.tool_syntax_errors for r in records) > 0


def test_with_contracts_off_malformed_calls_reach_the_tool() -> None:
    p = profile("oracle", p_malformed_base=1.0)
    records = [run(crashloop_script(seed=seed), p=p, contracts=False).record for seed in range(6)]
    assert sum(r.syntax_errors_reaching_tool for r in records) > 0
    assert all(r.syntax_errors_reaching_tool <= r.tool_syntax_errors for r in records)


@pytest.mark.parametrize("seed", range(6))
def test_p10_unfixed_malformed_calls_alone_never_end_stuck(seed: int) -> None:
    p = profile("oracle", p_malformed_base=1.0, p_fix=0.0)
    record = run(crashloop_script(seed=seed), p=p, contracts=True).record
    assert record.outcome != "stuck"
    assert record.syntax_errors_reaching_tool == 0


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_contract_failure_after_two_reflective_retries_without_fallback_ends_step_failed(seed: int) -> None:
    p = profile("oracle", p_malformed_base=1.0, p_fix=0.0)
    result = run(crashloop_script(seed=seed), p=p, contracts=True, errors="three_class")
    assert result.record.outcome == "step_failed"
    last_step = result.calls[-1].step_id
    assert [c.step_id for c in result.calls].count(last_step) == 3  # the call and its 2 retries
    assert [parse_error(t).error_class for t in errors_of(result)] == ["contract", "contract"]


def test_contract_failure_after_two_retries_takes_the_fallback_when_there_is_one() -> None:
    p = profile("oracle", p_malformed_base=1.0, p_fix=0.0)
    result = run(crashloop_script(seed=1, fault="http_404"), p=p, contracts=True, errors="three_class")
    infos = [parse_error(t) for t in errors_of(result)]
    exhausted = next(i for i in infos if i.code == "CONTRACT_RETRIES_EXHAUSTED")
    assert exhausted.error_class == "engineering" and exhausted.retryable is False
    assert exhausted.fallback == "log_search"
    assert "s2_fallback" in [c.step_id for c in result.calls]


def test_contract_error_is_structured_and_the_fix_is_well_formed() -> None:
    p = profile("oracle", p_malformed_base=1.0, p_fix=1.0)
    for seed in range(12):
        result = run(crashloop_script(seed=seed), p=p, contracts=True)
        fixes = [c for c in result.calls if c.action == "fix"]
        if fixes:
            assert all(c.malformed_kind == "" for c in fixes)
            contract = [parse_error(t) for t in errors_of(result)]
            assert any(i.structured and i.error_class == "contract" for i in contract)
            return
    pytest.fail("no seed produced a contract error")


# Overflow, throttling, limits --------------------------------------------------------------------------------


def test_overflow_under_unbounded_ends_the_session_overflow() -> None:
    p = profile("oracle", window_tokens=4096, max_output_reserve=0)
    script = crashloop_script(system_prompt_tokens=3900)
    result = run(script, p=p)
    record = result.record
    assert record.outcome == "overflow"
    assert record.overflow_events == 1
    assert record.model_calls == 1  # the overflowing call bills nothing
    # ...but costs base_s on the clock, after the first call and s1's tool time
    assert record.latency_s == pytest.approx(result.calls[0].clock_s + script.steps[0].latency_s + p.base_s,
                                             abs=1e-5)


def test_overflow_is_checked_with_the_output_reserve() -> None:
    script = crashloop_script(system_prompt_tokens=3000)
    assert run(script, p=profile("oracle", window_tokens=4096, max_output_reserve=1100)).record.outcome == "overflow"
    assert run(script, p=profile("oracle", window_tokens=8192, max_output_reserve=1100)).record.outcome == "success"


def test_p8_throttling_backs_off_4_8_16_32_64_seconds_then_ends_throttled() -> None:
    record = run(crashloop_script(), p=profile("oracle", p_throttle=1.0)).record
    assert record.outcome == "throttled"
    assert record.throttle_retries == 5
    assert record.backoff_s == pytest.approx(4 + 8 + 16 + 32 + 64)
    assert record.latency_s == pytest.approx(124.0)
    assert record.model_calls == 0 and record.input_tokens == 0 and record.cost_usd == 0


def test_rpm_limit_throttles_on_the_simulated_clock() -> None:
    record = run(crashloop_script(), p=profile("oracle", rpm=2)).record
    assert record.throttle_retries > 0
    assert record.backoff_s > 0
    assert record.outcome in ("success", "throttled")


def test_dangerous_shortcut_with_breaker_on_ends_blocked() -> None:
    p = profile("oracle", p_max=0.0, p_confabulate=1.0, p_shortcut=1.0)
    record = run(crashloop_script(shortcut=True), p=p, breaker=True).record
    assert record.outcome == "blocked"
    assert record.unsafe_actions == 0


def test_dangerous_shortcut_with_breaker_off_runs_and_counts_an_unsafe_action() -> None:
    p = profile("oracle", p_max=0.0, p_confabulate=1.0, p_shortcut=1.0)
    result = run(crashloop_script(shortcut=True), p=p, breaker=False)
    assert result.record.unsafe_actions == 1
    assert result.record.outcome != "success"
    first_action = next(e for e in result.loop_events if e.kind == "action")
    assert first_action.signature[0] == "kubectl_delete_namespace"
    # the shortcut completed s1: the next call works on s2
    assert [c.step_id for c in result.calls[:2]] == ["s1", "s2"]


def test_token_budget_with_breaker_on_ends_budget_exceeded() -> None:
    record = run(crashloop_script(), breaker=True, token_budget=3000).record
    assert record.outcome == "budget_exceeded"
    assert record.input_tokens + record.output_tokens > 3000


def test_a_token_budget_applies_whatever_the_breaker() -> None:
    record = run(crashloop_script(), breaker=False, token_budget=3000).record
    assert record.outcome == "budget_exceeded"
    # No budget (0, the default): the same session runs to its end.
    assert run(crashloop_script(), breaker=False).record.outcome == "success"


def test_max_turns_ends_the_session() -> None:
    record = run(crashloop_script(), p=profile("oracle", max_turns=2)).record
    assert record.outcome == "max_turns"
    assert record.turns == 2


def test_max_attempts_per_step_ends_step_failed() -> None:
    p = profile("oracle", p_max=0.0, p_confabulate=1.0, max_attempts_per_step=3)
    record = run(crashloop_script(), p=p, errors="three_class").record
    assert record.outcome == "step_failed"
    assert record.turns == 3


# Prompt caching (docs/model.md 6.2) ---------------------------------------------------------------------------


METER = TextMeter.for_facts()


def msgs(n: int, words: int = 60, tag: str = "m") -> list[Message]:
    return [Message.user(f"{tag}{i} " + "lorem ipsum " * words, meter=METER) for i in range(n)]


def tokens(ms: list[Message]) -> int:
    return sum(m.tokens for m in ms)


def test_cache_first_call_writes_everything() -> None:
    cache = PromptCache(profile("frontier"), 2000)
    window = msgs(3)
    assert cache.account(window, None, 0.0) == (0, 2000 + tokens(window))


def test_cache_append_only_window_caches_everything_before_the_new_messages() -> None:
    cache = PromptCache(profile("frontier"), 2000)
    window = msgs(3)
    cache.account(window, None, 0.0)
    grown = window + msgs(2, tag="new")
    cached, written = cache.account(grown, None, 10.0)
    assert cached == 2000 + tokens(window)
    assert written == 2000 + tokens(grown) - cached


def test_cache_edit_at_index_caches_only_the_prefix_before_it() -> None:
    cache = PromptCache(profile("frontier"), 2000)
    window = msgs(5)
    cache.account(window, None, 0.0)
    edited = list(window)
    edited[2] = Message.user("masked", meter=METER)
    cached, _ = cache.account(edited, 2, 10.0)
    assert cached == 2000 + tokens(window[:2])


def test_cache_sliding_the_window_caches_only_the_system_prefix() -> None:
    cache = PromptCache(profile("frontier"), 2000)
    window = msgs(5)
    cache.account(window, None, 0.0)
    assert cache.account(window[1:] + msgs(1, tag="new"), 0, 10.0)[0] == 2000


def test_cache_below_min_tokens_caches_and_writes_nothing() -> None:
    cache = PromptCache(profile("frontier"), 100)
    window = msgs(2, words=5)
    assert 100 + tokens(window) < 1024
    cache.account(window, None, 0.0)
    assert cache.account(window + msgs(1, words=5, tag="n"), None, 1.0) == (0, 0)


def test_cache_prefix_below_min_tokens_is_not_cached_even_in_a_large_prompt() -> None:
    cache = PromptCache(profile("frontier"), 100)
    window = msgs(1, words=5)
    cache.account(window, None, 0.0)
    grown = window + msgs(1, words=600, tag="big")
    prompt = 100 + tokens(grown)
    assert prompt >= 1024
    assert cache.account(grown, None, 1.0) == (0, prompt)


def test_cache_expires_after_the_ttl() -> None:
    window = msgs(3)
    fresh = PromptCache(profile("frontier"), 2000)
    fresh.account(window, None, 0.0)
    assert fresh.account(window, None, 300.0)[0] > 0
    stale = PromptCache(profile("frontier"), 2000)
    stale.account(window, None, 0.0)
    assert stale.account(window, None, 300.5) == (0, 2000 + tokens(window))


def test_cache_hit_refreshes_the_ttl() -> None:
    cache = PromptCache(profile("frontier"), 2000)
    window = msgs(3)
    cache.account(window, None, 0.0)
    assert cache.account(window, None, 250.0)[0] > 0
    assert cache.account(window, None, 500.0)[0] > 0


def test_cache_rounds_down_to_the_granularity() -> None:
    cache = PromptCache(profile("mid"), 2000)
    window = msgs(3)
    cache.account(window, None, 0.0)
    cached, written = cache.account(window + msgs(1, tag="n"), None, 1.0)
    prefix = 2000 + tokens(window)
    assert prefix % 128 != 0
    assert cached == prefix - prefix % 128
    assert written == 2000 + tokens(window) + tokens(msgs(1, tag="n")) - cached


def test_cache_off_profile_never_caches() -> None:
    cache = PromptCache(profile("stress-2023"), 2000)
    window = msgs(3)
    cache.account(window, None, 0.0)
    assert cache.account(window + msgs(1, tag="n"), None, 1.0) == (0, 0)


def test_unbounded_replay_caches_the_previous_prompt() -> None:
    result = run(crashloop_script(), p="frontier")
    agent = [c for c in result.calls if c.call_kind == "agent"]
    assert agent[0].cached_input_tokens == 0
    for prev, call in itertools.pairwise(agent):
        assert call.cached_input_tokens == prev.input_tokens
    assert result.record.cached_input_tokens == sum(c.cached_input_tokens for c in result.calls)


# Cost and latency (docs/model.md 6) ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["frontier", "mid", "stress-2023"])
def test_cost_of_every_call_is_the_formula_and_the_session_sums_them(name: str) -> None:
    p = profile(name)
    result = run(crashloop_script(fault="http_404"), p=p)
    for c in result.calls:
        u = c.input_tokens - c.cached_input_tokens
        w = c.cache_write_tokens
        expected = ((u - w) * p.price_in + w * p.price_cache_write + c.cached_input_tokens * p.price_cache_read
                    + c.output_tokens * p.price_out) / 1e6
        assert c.cost_usd == pytest.approx(expected, rel=1e-12)
    assert result.record.cost_usd == pytest.approx(sum(c.cost_usd for c in result.calls), rel=1e-12)
    assert result.record.input_tokens == sum(c.input_tokens for c in result.calls)
    assert result.record.output_tokens == sum(c.output_tokens for c in result.calls)


def test_model_seconds_of_every_call_follow_the_latency_formula() -> None:
    p = profile("frontier")
    script = crashloop_script()
    result = run(script, p=p)
    for c in result.calls:
        noise = z(script.seed, "lat", c.step_id, c.attempt, c.call_kind)
        expected = p.model_seconds(c.input_tokens - c.cached_input_tokens, c.cached_input_tokens, c.output_tokens,
                                   c.input_tokens, noise)
        assert c.model_s == pytest.approx(expected, abs=1e-6)


def test_session_latency_is_model_plus_tool_plus_backoff_seconds() -> None:
    record_result = run(crashloop_script(fault="timeout", fails=1), p="frontier", errors="three_class")
    r = record_result.record
    model_s = sum(c.model_s for c in record_result.calls)
    assert r.latency_s == pytest.approx(model_s + r.tool_s + r.backoff_s, abs=1e-4)
    assert r.tool_s >= 30.0


# Summaries in a replay (docs/model.md 4) -----------------------------------------------------------------------


def test_summary_is_a_model_call_with_its_own_record() -> None:
    result = replay(crashloop_script(), create("summarize", trigger_turns=1, keep_turns=1), ORACLE)
    record = result.record
    summaries = [c for c in result.calls if c.call_kind == "summary"]
    assert record.summary_calls == len(summaries) > 0
    assert record.model_calls == len(result.calls)
    assert all(c.action == "summary" and c.input_tokens >= ORACLE.summarizer_prompt_tokens for c in summaries)
    assert record.summary_cost_usd == pytest.approx(sum(c.cost_usd for c in summaries))
    assert sum(1 for e in result.loop_events if e.kind == "condensation") == len(summaries)
    assert record.outcome == "success"


def test_second_summary_with_a_new_first_message_is_not_served_from_cache() -> None:
    result = replay(crashloop_script(filler_lines=40), create("summarize", trigger_turns=1, keep_turns=1),
                    profile("frontier"))
    summaries = [c for c in result.calls if c.call_kind == "summary"]
    assert len(summaries) >= 2
    # Its input starts with the first summary, which no earlier summary input held: only the
    # 500-token summarizer prompt is unchanged, below cache_min_tokens (1,024).
    assert summaries[1].cached_input_tokens == 0


def test_token_budget_crossed_by_a_summary_call_ends_the_session_there() -> None:
    script = crashloop_script(filler_lines=40)
    strategy = create("summarize", trigger_turns=1, keep_turns=1)
    free = replay(script, strategy, ORACLE)
    first = next(i for i, c in enumerate(free.calls) if c.call_kind == "summary")
    budget = sum(c.input_tokens + c.output_tokens for c in free.calls[: first + 1]) - 1
    capped = replay(script, create("summarize", trigger_turns=1, keep_turns=1), ORACLE, breaker=True,
                    token_budget=budget)
    assert capped.record.outcome == "budget_exceeded"
    assert capped.calls[-1].call_kind == "summary"


def test_summary_that_keeps_nothing_loses_facts() -> None:
    kept = replay(crashloop_script(), create("summarize", trigger_turns=1, keep_turns=1),
                  profile("oracle", p_confabulate=1.0)).record
    # The record of calls done restates their arguments: it goes too, or the values would survive in it.
    lost = replay(crashloop_script(), create("summarize", trigger_turns=1, keep_turns=1),
                  profile("oracle", keep_max=0.0, p_record_drop=1.0, p_confabulate=1.0)).record
    assert kept.facts_lost == 0 and kept.outcome == "success"
    assert lost.facts_lost > 0 and lost.outcome != "success"


# Two agents (alert_chain) -----------------------------------------------------------------------------------------


class RecordingUnbounded(Unbounded):
    """Unbounded, remembering each instance's context (one per agent)."""

    contexts: ClassVar[list[Context]] = []

    def on_append(self, ctx: Context, msg: Message) -> Message:
        if not any(c is ctx for c in RecordingUnbounded.contexts):
            RecordingUnbounded.contexts.append(ctx)
        return msg


def test_two_agents_have_their_own_contexts_and_the_hand_over_carries_the_facts() -> None:
    RecordingUnbounded.contexts = []
    result = replay(alert_chain_script(), RecordingUnbounded(), ORACLE)
    assert result.record.outcome == "success"
    first, second = RecordingUnbounded.contexts
    assert {m.step_id for m in first.messages} - {None} == {"s1", "s2"}
    assert {m.step_id for m in second.messages} - {None} == {"s3", "final"}
    handover = second.messages[0]
    assert handover.kind == "task"
    assert {"bad_pod", "trace_id", "namespace"} <= handover.facts
    assert BAD_POD in handover.text and TRACE_ID in handover.text
    assert "Hand-over from triage to remediation" in handover.text


def test_two_agents_tokens_and_calls_add_up() -> None:
    result = replay(alert_chain_script(), "unbounded", "frontier")
    record = result.record
    assert record.agents == 2
    assert {c.agent for c in result.calls} == {"triage", "remediation"}
    assert [c.call_kind for c in result.calls].count("handoff") == 1
    assert record.model_calls == len(result.calls)
    assert record.input_tokens == sum(c.input_tokens for c in result.calls)
    assert record.output_tokens == sum(c.output_tokens for c in result.calls)
    assert record.cost_usd == pytest.approx(sum(c.cost_usd for c in result.calls))
    second_first = next(c for c in result.calls if c.agent == "remediation")
    triage_last = [c for c in result.calls if c.agent == "triage"][-1]
    assert second_first.context_tokens < triage_last.context_tokens  # a fresh context
    assert second_first.cached_input_tokens == 0  # and a fresh cache


# Switches ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["offload_contracts", "unbounded", "drop_all", "summarize", "sliding_window",
                                  "observation_masking"])
def test_every_strategy_runs_under_the_plain_runtime_unless_told_otherwise(name: str) -> None:
    # A strategy brings no runtime of its own: offloading runs as plainly as everything else.
    script = crashloop_script()
    record = replay(script, name, ORACLE).record
    assert (record.contracts, record.errors, record.breaker, record.token_budget) == (False, "plain", False, 0)


def test_the_contract_runtime_is_the_seed_articles_dispatcher() -> None:
    assert (CONTRACT_RUNTIME.contracts, CONTRACT_RUNTIME.errors, CONTRACT_RUNTIME.breaker,
            CONTRACT_RUNTIME.token_budget) == (True, "three_class", True, 2_000_000)
    assert Switches() == Switches(contracts=False, errors="plain", breaker=False, token_budget=0)


def test_the_session_record_carries_the_switches_it_ran_with() -> None:
    record = run(crashloop_script(), "offload_contracts", contracts=True, errors="three_class",
                 token_budget=10**9).record
    assert (record.contracts, record.errors, record.breaker, record.token_budget) == (True, "three_class", False,
                                                                                       10**9)


# Records and determinism -------------------------------------------------------------------------------------------

DESIGN_COLUMNS = [
    "scenario", "session_index", "seed", "strategy", "outcome", "contracts", "errors", "breaker", "turns",
    "model_calls", "summary_calls", "tool_calls", "tool_syntax_errors", "engineering_errors", "retrieve_calls",
    "refetches", "loop_detected", "loop_rule", "facts_lost", "input_tokens", "output_tokens",
    "cached_input_tokens", "context_tokens_mean", "context_tokens_peak", "overflow_events", "throttle_retries",
    "latency_s", "cost_usd",
]


def test_session_record_has_every_design_column() -> None:
    row = run(crashloop_script()).record.as_row()
    assert set(DESIGN_COLUMNS) <= set(row)


def test_session_outcomes_are_the_design_set() -> None:
    assert set(OUTCOMES) == {"success", "wrong_answer", "stuck", "overflow", "throttled", "blocked",
                             "budget_exceeded", "step_failed", "max_turns", "error"}


def test_context_tokens_mean_and_peak_come_from_agent_calls() -> None:
    result = run(crashloop_script(), p="frontier")
    agent = [c.input_tokens for c in result.calls if c.call_kind == "agent"]
    assert result.record.context_tokens_peak == max(agent)
    assert result.record.context_tokens_mean == pytest.approx(sum(agent) / len(agent), abs=1e-3)


def test_replay_is_deterministic() -> None:
    script = crashloop_script(fault="http_404")
    a = run(script, p="small")
    b = run(script, p="small")
    assert a.record == b.record
    assert [c.as_row() for c in a.calls] == [c.as_row() for c in b.calls]
    assert a.loop_events == b.loop_events


def test_strategies_share_events_until_their_contexts_differ() -> None:
    script = crashloop_script()
    kept = run(script, "unbounded", "frontier").loop_events
    dropped = run(script, "drop_all", "frontier").loop_events
    # drop_all keeps the task and the last turn, so its first two agent calls see the same window
    assert kept[:5] == dropped[:5]


def test_record_is_a_session_record_with_matching_identity() -> None:
    script = crashloop_script()
    record = replay(script, "unbounded", ORACLE, scenario="mix", session_index=3, strategy_label="raw").record
    assert isinstance(record, SessionRecord)
    assert (record.scenario, record.session_index, record.strategy, record.seed) == ("mix", 3, "raw", script.seed)


def test_caching_false_turns_prompt_caching_off() -> None:
    """A profile with caching = false caches nothing, even for an append-only window."""
    window = [Message.user("x " * 2000, kind="task"), Message.assistant("y " * 2000)]
    on = PromptCache(profile("frontier"), 2000)
    off = PromptCache(profile("frontier", caching=False), 2000)
    for cache in (on, off):
        cache.account(window[:1], None, 0.0)
    assert on.account(window, None, 1.0)[0] > 0
    assert off.account(window, None, 1.0) == (0, 0)


# Work shared between the replays of one script ------------------------------------------------------------


def test_replays_of_one_script_share_its_meter_and_a_warm_meter_changes_nothing() -> None:
    import scenarios
    from harness.sim.kernel import meter_of

    script = scenarios.generate("mix", 11, turns=40)
    cold = replay(script, "sliding_window", "frontier", events=True)
    assert meter_of(script) is meter_of(script)
    warm_texts = len(meter_of(script).memo)
    assert warm_texts > 0
    for name in ("unbounded", "observation_masking", "summarize"):
        replay(script, name, "frontier", events=True)
    warm = replay(script, "sliding_window", "frontier", events=True)
    assert warm.record == cold.record
    assert [c.as_row() for c in warm.calls] == [c.as_row() for c in cold.calls]
    assert warm.event_rows == cold.event_rows
    # Another script gets its own meter: facts are the script's.
    other = scenarios.generate("mix", 12, turns=40)
    assert meter_of(other) is not meter_of(script)
    assert meter_of(other).scanner.facts == dict(sorted(other.fact_values().items()))
