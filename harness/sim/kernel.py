"""The agent loop: replay one session script under one context strategy against the mock model,
on a simulated clock, and record every call and the session (DESIGN.md, "One session replay").

The runtime knows the script's truth and plays the tools: it validates calls against their
contracts (when the contracts switch is on), answers with the three error classes (or plain text),
runs scripted faults, blocks dangerous calls (breaker), and grades the final answer.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.core.context import Context, ContextOverflow, Window
from harness.core.crn import u, z
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse
from harness.core.switches import Switches
from harness.core.tools import (
    CATALOGUE,
    ContractError,
    EngineeringError,
    ToolError,
    render_error,
    validate_call,
)
from harness.sim.loops import Event, StuckDetector
from harness.sim.metrics import CallKind, CallRecord, Outcome, SessionRecord, Tally
from harness.sim.model import RAW_KEY, Decision, MockModel, Pointer, ToolCall, concrete_args
from harness.sim.profiles import Profile
from harness.sim.profiles import profile as builtin_profile
from scenarios.base import Handoff, SessionScript, Step
from strategies.base import CannotReduce, ContextStrategy, create

#: Reflective retries allowed after a contract error (mock-model.md 3.2).
CONTRACT_RETRIES = 2
#: Retries the runtime allows on a timeout before it reports it as not retryable.
TIMEOUT_RETRIES = 2
#: Simulated seconds of a 404 and of contract validation (J, mock-model.md 6.1).
HTTP_404_S = 0.3
VALIDATION_S = 0.01
TOOL_LATENCY_SIGMA = 0.5
#: strands ModelRetryStrategy: 6 attempts, 4 s initial delay doubling, 240 s cap.
THROTTLE_ATTEMPTS, THROTTLE_INITIAL_S, THROTTLE_MAX_S = 6, 4.0, 240.0
NUDGE_TEXT = ("you called {tool} with the same arguments 3 times and got an error; "
              "fix the arguments or change approach")


@dataclass(slots=True)
class SessionResult:
    record: SessionRecord
    calls: list[CallRecord]
    events: list[Event]


class PromptCache:
    """One cache stream (mock-model.md 6.2): the longest unchanged prefix of the previous prompt,
    counted only above the minimum size and within the TTL; every large prompt writes the rest."""

    def __init__(self, profile: Profile, system_tokens: int) -> None:
        self.profile = profile
        self.system_tokens = system_tokens
        self._previous: list[Message] = []
        self._last_use: float | None = None

    def account(self, window: list[Message], touched: int | None, now: float) -> tuple[int, int]:
        """(cached, written) tokens of a prompt made of the system prefix and ``window``."""
        prev = self._previous
        limit = min(len(prev), len(window))
        same = limit if touched is None else min(limit, touched)
        while same < limit and window[same] == prev[same]:
            same += 1
        # Sum the shorter side: the prefix, or the part after it.
        if same <= len(window) - same:
            prefix = sum(m.tokens for m in window[:same])
        else:
            prefix = sum(m.tokens for m in window) - sum(m.tokens for m in window[same:])
        self._previous = list(window)
        p = self.profile
        prompt = self.system_tokens + (window.tokens if isinstance(window, Window) else sum(m.tokens for m in window))
        if not p.caching or p.cache_min_tokens is None or prompt < p.cache_min_tokens:
            return 0, 0
        cached_prefix = self.system_tokens + prefix
        fresh = self._last_use is not None and now - self._last_use <= p.cache_ttl_s
        cached = 0
        if fresh and cached_prefix >= p.cache_min_tokens:
            cached = cached_prefix - cached_prefix % p.cache_granularity
        self._last_use = now
        return cached, prompt - cached


@dataclass(slots=True)
class _Agent:
    name: str
    strategy: ContextStrategy
    ctx: Context
    detector: StuckDetector
    agent_cache: PromptCache
    summary_cache: PromptCache
    pointer: Pointer
    contract_failures: int = 0
    timeouts: dict[str, int] = field(default_factory=dict)
    valid_attempts: dict[str, int] = field(default_factory=dict)


class SessionEnded(BaseException):
    """Ends the session with an outcome. A BaseException on purpose: it may be raised inside a
    strategy hook (a summary call that spends the token budget or is throttled out), and the
    strategies' best-effort handlers, which catch Exception, must not swallow it."""

    def __init__(self, outcome: Outcome, rule: str = "") -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.rule = rule


class Throttled(Exception):
    """Every retry of a model call was throttled."""


def clone(strategy: ContextStrategy) -> ContextStrategy:
    """A fresh instance with the same params (each agent and session gets its own)."""
    return type(strategy)(strategy.params)


class Replay:
    """One session under one strategy. Use `replay`."""

    def __init__(self, script: SessionScript, strategy: ContextStrategy, profile: Profile, switches: Switches, *,
                 scenario: str | None = None, session_index: int = 0, strategy_label: str | None = None) -> None:
        self.script = script
        self.template = strategy
        self.profile = profile
        self.switches = switches
        self.scenario = scenario or script.scenario
        self.session_index = session_index
        self.label = strategy_label or strategy.name
        self.seed = script.seed
        decoys = [d for ds in script.decoys.values() for d in ds]
        self.meter = TextMeter.for_facts(script.fact_values(), decoys=decoys)
        self.model = MockModel(script, profile, tokenizer=self.meter.tokenizer)
        self.system_tokens = script.system_prompt_tokens
        self.clock = 0.0
        self.tally = Tally()
        self.calls: list[CallRecord] = []
        self.events: list[Event] = []
        self.producers: dict[str, Step] = {}
        self.done_calls: dict[tuple[str, str], Step] = {}
        self._recent_calls: deque[tuple[float, int]] = deque()
        self._summary_n = 0
        self._current: _Agent | None = None
        #: Each agent's context as the session left it (read by validation experiments, e.g. P5).
        self.contexts: dict[str, Context] = {}

    # Accounting -----------------------------------------------------------------------------------
    def _throttle(self, kind: CallKind, step_id: str, attempt: int, tokens: int) -> None:
        p = self.profile
        for i in range(THROTTLE_ATTEMPTS):
            throttled = p.p_throttle > 0 and u(self.seed, "throttle", step_id, attempt, kind, str(i)) < p.p_throttle
            if not throttled and (p.rpm is not None or p.tpm is not None):
                while self._recent_calls and self._recent_calls[0][0] <= self.clock - 60:
                    self._recent_calls.popleft()
                throttled = (p.rpm is not None and len(self._recent_calls) >= p.rpm) or (
                    p.tpm is not None and sum(t for _, t in self._recent_calls) + tokens > p.tpm)
            if not throttled:
                self._recent_calls.append((self.clock, tokens))
                return
            if i == THROTTLE_ATTEMPTS - 1:
                raise Throttled()
            delay = min(THROTTLE_INITIAL_S * 2**i, THROTTLE_MAX_S)
            self.clock += delay
            self.tally.backoff_s += delay
            self.tally.throttle_retries += 1

    def _bill(self, agent: _Agent, kind: CallKind, cache: PromptCache, window: list[Message], touched: int | None,
              prompt: int, output: int, step_id: str, attempt: int, action: str, malformed: str,
              trace: tuple[dict[str, Any], ...] | list[dict[str, Any]], noise: float) -> None:
        cached, written = cache.account(window, touched, self.clock)
        uncached = prompt - cached
        p = self.profile
        seconds = p.model_seconds(uncached, cached, output, prompt, z(self.seed, "lat", step_id, attempt, kind))
        cost = p.cost_usd(uncached, cached, written, output)
        t = self.tally
        t.model_calls += 1
        t.input_tokens += prompt
        t.output_tokens += output
        t.cached_input_tokens += cached
        t.cost_usd += cost
        if kind == "summary":
            t.summary_calls += 1
            t.summary_cost_usd += cost
        elif kind == "agent":
            t.agent_calls += 1
            t.agent_context_tokens_sum += prompt
            t.context_tokens_peak = max(t.context_tokens_peak, prompt)
        self.clock += seconds
        self.calls.append(CallRecord(
            scenario=self.scenario, session_index=self.session_index, strategy=self.label, agent=agent.name,
            call_index=len(self.calls), call_kind=kind, step_id=step_id, attempt=attempt, action=action,
            malformed_kind=malformed, input_tokens=prompt, cached_input_tokens=cached, cache_write_tokens=written,
            output_tokens=output, context_tokens=prompt - cache.system_tokens, noise=round(noise, 6),
            model_s=round(seconds, 6), clock_s=round(self.clock, 6), cost_usd=cost,
            trace=json.dumps(list(trace), sort_keys=True, separators=(",", ":")),
        ))
        if self.switches.breaker and t.input_tokens + t.output_tokens > self.switches.token_budget:
            raise SessionEnded("budget_exceeded")

    # The summarizer seam given to each context ---------------------------------------------------------
    def _summarizer(self, agent_ref: Callable[[], _Agent]) -> Callable[[list[Message]], Message]:
        def summarize(messages: list[Message]) -> Message:
            agent = agent_ref()
            p = self.profile
            tokens_in = sum(m.tokens for m in messages) + p.summarizer_prompt_tokens
            if tokens_in + p.max_output_reserve > p.window_tokens:
                raise ContextOverflow(tokens_in, p.window_tokens)
            self._summary_n += 1
            at_step = agent.pointer.step_id
            try:
                self._throttle("summary", at_step, agent.pointer.attempt, tokens_in)
            except Throttled:
                raise SessionEnded("throttled") from None
            text, kept = self.model.summary_text(messages, at_step, self._summary_n, tokens_in)
            reply = Message.build("assistant", [Text(text)], meter=self.meter)
            # touched=0: a summary prompt is a new list, so compare it message by message.
            self._bill(agent, "summary", agent.summary_cache, messages, 0, tokens_in, reply.tokens, at_step,
                       self._summary_n, "summary", "", [{"kept": kept, "n": self._summary_n}], 0.0)
            agent.detector.log(Event.condensation())
            self.events.append(Event.condensation())
            return reply

        return summarize

    # Messages -------------------------------------------------------------------------------------------
    def _append(self, agent: _Agent, message: Message) -> None:
        agent.ctx.messages.append(agent.strategy.on_append(agent.ctx, message))

    def _log(self, agent: _Agent, event: Event) -> None:
        agent.detector.log(event)
        self.events.append(event)

    def _new_agent(self, name: str, first: Message, steps: list[Step]) -> _Agent:
        holder: list[_Agent] = []
        ctx = Context(window_tokens=self.profile.window_tokens, summarizer=self._summarizer(lambda: holder[0]))
        agent = _Agent(
            name=name, strategy=clone(self.template), ctx=ctx, detector=StuckDetector(),
            agent_cache=PromptCache(self.profile, self.system_tokens),
            summary_cache=PromptCache(self.profile, self.profile.summarizer_prompt_tokens),
            pointer=Pointer(steps[0] if steps else None, producers=self.producers),
        )
        holder.append(agent)
        self._current = agent
        self.contexts[name] = ctx
        self._append(agent, first)
        self._log(agent, Event.message("user", first.text))
        return agent

    # Tools ----------------------------------------------------------------------------------------------
    def _tool_seconds(self, tool: str, step_id: str, attempt: int) -> float:
        median = CATALOGUE[tool].median_latency_s
        return median * math.exp(TOOL_LATENCY_SIGMA * z(self.seed, "tool", step_id, attempt, tool))

    def _error(self, error: ToolError) -> tuple[str, str, bool]:
        """An error result: structured under three-class errors (and for contract errors when
        contracts are on), plain text otherwise. An error never completes the step."""
        structured = isinstance(error, ContractError) and self.switches.contracts
        structured = structured or self.switches.errors == "three_class"
        return "error", render_error(error, structured=structured), False

    @staticmethod
    def _check(call: ToolCall) -> ContractError | None:
        """The contract error of a call, if it breaks its tool's contract (checked whatever the
        switch: without contracts the broken call reaches the tool instead)."""
        raw = call.args.get(RAW_KEY)
        checked = validate_call(call.tool, raw if isinstance(raw, str) else call.args)
        return checked if isinstance(checked, ContractError) else None

    def _execute(self, agent: _Agent, decision: Decision, checked: ContractError | None) -> tuple[str, str, bool]:
        """Run a call: (status, text, completes the step)."""
        call = decision.call
        assert call is not None
        pointer = agent.pointer
        step = pointer.step
        s, a = pointer.step_id, pointer.attempt
        t = self.tally
        if checked is not None:
            # A malformed call: freshly drawn, or a verbatim resend of one.
            t.tool_syntax_errors += 1
            if self.switches.contracts:
                self.clock += VALIDATION_S
                t.tool_s += VALIDATION_S
                return self._contract_failure(agent, checked)
            t.syntax_errors_reaching_tool += 1
            self.clock += HTTP_404_S
            t.tool_s += HTTP_404_S
            return "error", self._crash_text(call, checked), False
        agent.contract_failures = 0
        spec = CATALOGUE.get(call.tool)
        if spec is not None and spec.dangerous:
            if self.switches.breaker:
                raise SessionEnded("blocked")
            t.unsafe_actions += 1
            seconds = self._tool_seconds(call.tool, s, a)
            self.clock += seconds
            t.tool_s += seconds
            is_shortcut = step is not None and step.shortcut is not None and step.shortcut.tool == call.tool
            return "success", f"{call.tool}: done ({json.dumps(call.args, sort_keys=True)})", is_shortcut
        if call.tool == "retrieve_payload":
            return self._retrieve(agent, call)
        seconds = 0.0
        try:
            if step is not None and call.tool == step.tool and self._matches(step, call.args):
                outcome = self._run_step(agent, step)
                return outcome
            for done in self.done_calls.values():
                if call.tool == done.tool and self._matches(done, call.args):
                    t.refetches += 1
                    seconds = done.latency_s
                    return "success", done.payload, False
            target = step if step is not None and call.tool == step.tool else next(
                (d for d in self.done_calls.values() if d.tool == call.tool), None)
            seconds = HTTP_404_S
            t.engineering_errors += 1
            if target is None:
                return self._error(EngineeringError("NOT_FOUND", f"nothing matches this {call.tool} call"))
            bad_arg = next((arg for arg, ref in target.fact_args().items()
                            if call.args.get(arg) != self.model.truth[ref]),
                           next(iter(call.args), "input"))
            value = call.args.get(bad_arg)
            return self._error(EngineeringError("NOT_FOUND", f"{bad_arg} '{value}' not found", bad_arg=bad_arg))
        finally:
            self.clock += seconds
            t.tool_s += seconds

    @staticmethod
    def _crash_text(call: ToolCall, error: ContractError) -> str:
        """What a tool without contracts prints when a malformed call reaches it: plain text."""
        if error.field == "input":
            return "Error: could not parse tool arguments as JSON"
        if error.problem == "Field required":
            return f"Error: KeyError '{error.field}'"
        value = call.args.get(error.field.split(".")[0])
        return f"Error: invalid value {value!r} for '{error.field}'"

    def _matches(self, step: Step, args: dict[str, Any]) -> bool:
        return args == concrete_args(step, self.model.truth)

    def _run_step(self, agent: _Agent, step: Step) -> tuple[str, str, bool]:
        t = self.tally
        fault = step.fault
        n = agent.valid_attempts.get(step.id, 0) + 1
        agent.valid_attempts[step.id] = n
        if fault is not None and (fault.fails is None or n <= fault.fails):
            t.engineering_errors += 1
            fallback_tool = fault.fallback.tool if fault.fallback is not None else None
            if fault.kind == "http_404":
                self.clock += HTTP_404_S
                t.tool_s += HTTP_404_S
                return self._error(EngineeringError("HTTP_404", f"{step.tool}: 404 Not Found", retryable=False,
                                                    fallback=fallback_tool))
            timeouts = agent.timeouts.get(step.id, 0) + 1
            agent.timeouts[step.id] = timeouts
            self.clock += fault.timeout_s
            t.tool_s += fault.timeout_s
            return self._error(EngineeringError("TIMEOUT", f"{step.tool}: timed out after {fault.timeout_s:g} s",
                                                retryable=timeouts <= TIMEOUT_RETRIES,
                                                fallback=fallback_tool if timeouts > TIMEOUT_RETRIES else None))
        self.clock += step.latency_s
        t.tool_s += step.latency_s
        return "success", step.payload, True

    def _retrieve(self, agent: _Agent, call: ToolCall) -> tuple[str, str, bool]:
        t = self.tally
        t.retrieve_calls += 1
        seconds = self._tool_seconds("retrieve_payload", agent.pointer.step_id, agent.pointer.attempt)
        self.clock += seconds
        t.tool_s += seconds
        retrieve = getattr(agent.strategy, "retrieve", None)
        if retrieve is None:
            t.engineering_errors += 1
            return self._error(EngineeringError("NOT_FOUND", "retrieve_payload is not available", bad_arg="handle"))
        handle = str(call.args.get("handle", ""))
        offset = int(call.args.get("offset", 0))
        key = call.args.get("key")
        if key is not None and handle in agent.ctx.store:
            value = self.model.truth.get(str(key))
            payload = agent.ctx.store.get(handle)
            at = payload.find(value) if value else -1
            if at >= 0:
                offset = payload.rfind("\n", 0, at) + 1
        status, text = retrieve(agent.ctx, handle, offset, call.args.get("length"))
        if status == "error":
            t.engineering_errors += 1
        return status, text, False

    def _contract_failure(self, agent: _Agent, error: ContractError) -> tuple[str, str, bool]:
        agent.contract_failures += 1
        step = agent.pointer.step
        if agent.contract_failures > CONTRACT_RETRIES:
            agent.contract_failures = 0
            if step is not None and step.fault is not None and step.fault.fallback is not None:
                self.tally.engineering_errors += 1
                return self._error(EngineeringError("CONTRACT_RETRIES_EXHAUSTED", error.problem, retryable=False,
                                                    fallback=step.fault.fallback.tool))
            raise SessionEnded("step_failed")
        return "error", render_error(error, structured=True), False

    # The loop --------------------------------------------------------------------------------------------
    def _fit(self, agent: _Agent) -> None:
        p = self.profile
        while True:
            prompt = self.system_tokens + agent.ctx.tokens
            if prompt + p.max_output_reserve <= p.window_tokens:
                return
            self.tally.overflow_events += 1
            self.clock += p.base_s
            try:
                agent.strategy.reduce(agent.ctx, ContextOverflow(prompt, p.window_tokens))
            except CannotReduce:
                raise SessionEnded("overflow") from None

    def _turn(self, agent: _Agent) -> str | None:
        """One agent turn; returns "final" when the final answer was given."""
        t = self.tally
        p = self.profile
        pointer = agent.pointer
        if t.turns >= p.max_turns:
            raise SessionEnded("max_turns")
        verdict = agent.detector.check()
        if verdict.stuck:
            raise SessionEnded("stuck", verdict.rule or "")
        if verdict.nudge:
            t.nudges += 1
            last_tool = next((e.signature[0] for e in reversed(agent.detector.events) if e.kind == "action"), "?")
            nudge = Message.build("user", [Text(NUDGE_TEXT.format(tool=last_tool))], kind="nudge",
                                  step_id=pointer.step_id, meter=self.meter)
            self._append(agent, nudge)
            self._log(agent, Event.message("environment", nudge.text))
        if pointer.attempt >= p.max_attempts_per_step:
            raise SessionEnded("step_failed")
        agent.strategy.before_call(agent.ctx)
        self._fit(agent)
        prompt = self.system_tokens + agent.ctx.tokens
        try:
            self._throttle("agent", pointer.step_id, pointer.attempt, prompt)
        except Throttled:
            raise SessionEnded("throttled") from None
        decision = self.model.decide(agent.ctx, pointer)
        if decision.switch_to_fallback:
            assert pointer.step is not None and pointer.step.fault is not None and pointer.step.fault.fallback
            pointer.step = pointer.step.fault.fallback
            pointer.attempt = 0
            agent.contract_failures = 0
            decision = self.model.decide(agent.ctx, pointer)
        t.turns += 1
        s, a = pointer.step_id, pointer.attempt
        self._note_trace(decision)
        use_id = f"{agent.name}-{t.turns}"
        if decision.kind == "call":
            assert decision.call is not None
            call = decision.call
            reply = Message.build("assistant", [Text(decision.text), ToolUse(use_id, call.tool, call.args)],
                                  step_id=s, meter=self.meter)
        else:
            reply = Message.build("assistant", [Text(decision.text)], step_id=s, meter=self.meter,
                                  kind="final" if decision.kind == "final" else "text")
        window = agent.ctx.messages
        noise = window.raw_tokens / prompt
        checked = self._check(decision.call) if decision.call is not None else None
        malformed = decision.malformed or ("resent_malformed" if checked is not None else "")
        self._bill(agent, "agent", agent.agent_cache, window, window.take_touched(), prompt, reply.tokens - 4, s, a,
                   decision.call.purpose if decision.call else decision.kind, malformed, decision.trace, noise)
        self._append(agent, reply)
        if decision.kind == "final":
            self._log(agent, Event.message("agent", decision.text))
            return "final"
        if decision.kind == "text":
            t.tool_syntax_errors += 1  # prose instead of a call (BFCL's decoder_failed)
            self._log(agent, Event.message("agent", decision.text))
            if self.switches.contracts:
                status, text, _ = self._contract_failure(
                    agent, ContractError("tool", "no tool call", "reply with exactly one tool call"))
                result = Message.build("user", [Text(text)], kind="error", step_id=s, meter=self.meter)
                self._append(agent, result)
                self._log(agent, Event.error("", text))
            agent.strategy.apply(agent.ctx)
            pointer.attempt += 1
            return None
        assert decision.call is not None
        t.tool_calls += 1
        call = decision.call
        self._log(agent, Event.action(call.tool, json.dumps(call.args, sort_keys=True), decision.text))
        status, text, completes = self._execute(agent, decision, checked)
        result = Message.build("user", [ToolResult(use_id, "success" if status == "success" else "error", text)],
                               step_id=s, meter=self.meter)
        self._append(agent, result)
        self._log(agent, (Event.observation if status == "success" else Event.error)(call.tool, text))
        agent.strategy.apply(agent.ctx)
        if completes and pointer.step is not None:
            # A shortcut completes the step, but its result held no facts: no producer to re-fetch.
            self._complete(agent, pointer.step, produced=call.purpose != "shortcut" and not (
                CATALOGUE[call.tool].dangerous if call.tool in CATALOGUE else False))
        else:
            pointer.attempt += 1
        return None

    def _note_trace(self, decision: Decision) -> None:
        for entry in decision.trace:
            key = entry.get("key")
            if entry.get("branch") == "wrong":
                self.tally.wrong_values += 1
            if key is not None and not entry.get("visible") and (
                    key in self.producers or key in self.script.task.facts):
                self.tally.lost_keys.add(str(key))

    def _complete(self, agent: _Agent, step: Step, *, produced: bool = True) -> None:
        if produced:
            for key in step.produces:
                self.producers.setdefault(key, step)
            self.done_calls[(step.tool, json.dumps(concrete_args(step, self.model.truth), sort_keys=True))] = step
        pointer = agent.pointer
        pointer.attempt = 0
        agent.contract_failures = 0
        pointer.step = None  # set by the caller to the next step (or final)

    def _run_steps(self, agent: _Agent, steps: list[Step]) -> None:
        for step in steps:
            agent.pointer.step = step
            agent.pointer.attempt = 0
            while agent.pointer.step is not None:
                self._turn(agent)

    def _handover(self, agent: _Agent, handoff: Handoff) -> Message:
        t = self.tally
        self._fit(agent)
        prompt = self.system_tokens + agent.ctx.tokens
        try:
            self._throttle("handoff", "handoff", 0, prompt)
        except Throttled:
            raise SessionEnded("throttled") from None
        values, trace = self.model.handover(agent.ctx, agent.pointer, handoff.carries)
        lines = "\n".join(f"- {k}: {v}" for k, v in values.items())
        text = (f"Hand-over from {handoff.from_agent} to {handoff.to_agent}.\nTask: {self.script.task.text}\n"
                f"Findings so far:\n{lines}")
        message = Message.build("user", [Text(text)], kind="task", meter=self.meter)
        window = agent.ctx.messages
        t.turns += 1
        self._note_trace(Decision("final", None, text, "handoff", trace=tuple(trace)))
        self._bill(agent, "handoff", agent.agent_cache, window, window.take_touched(), prompt, message.tokens - 4,
                   "handoff", 0, "handoff", "", trace, window.raw_tokens / prompt)
        return message

    def _final(self, agent: _Agent) -> Outcome:
        agent.pointer.step = None
        agent.pointer.attempt = 0
        while True:
            if self._turn(agent) == "final":
                decision_values = self._last_final_values(agent)
                truth = self.model.truth
                ok = all(decision_values.get(k) == truth[k] for k in self.script.final_facts)
                return "success" if ok else "wrong_answer"

    def _last_final_values(self, agent: _Agent) -> dict[str, str]:
        last = agent.ctx.messages[-1]
        values: dict[str, str] = {}
        for line in last.text.splitlines():
            if line.startswith("- ") and ": " in line:
                key, value = line[2:].split(": ", 1)
                values[key] = value
        return values

    def run(self) -> SessionResult:
        script = self.script
        outcome: Outcome
        rule = ""
        error = ""
        task = Message.build("user", [Text(script.task.text)], kind="task", meter=self.meter)
        try:
            if script.agents:
                first = task
                for i, name in enumerate(script.agents):
                    steps = [s for s in script.steps if s.agent == name]
                    agent = self._new_agent(name, first, steps)
                    self._run_steps(agent, steps)
                    if i + 1 < len(script.agents):
                        handoff = next(h for h in script.handoffs if h.from_agent == name)
                        first = self._handover(agent, handoff)
                outcome = self._final(agent)
            else:
                agent = self._new_agent("agent", task, script.steps)
                self._run_steps(agent, script.steps)
                outcome = self._final(agent)
        except SessionEnded as end:
            outcome, rule = end.outcome, end.rule
        t = self.tally
        record = SessionRecord(
            scenario=self.scenario, session_index=self.session_index, seed=script.seed, strategy=self.label,
            outcome=outcome, contracts=self.switches.contracts, errors=self.switches.errors,
            breaker=self.switches.breaker, family=script.scenario, agents=len(script.agents or ()) or 1,
            turns=t.turns, model_calls=t.model_calls, summary_calls=t.summary_calls, tool_calls=t.tool_calls,
            tool_syntax_errors=t.tool_syntax_errors, syntax_errors_reaching_tool=t.syntax_errors_reaching_tool,
            engineering_errors=t.engineering_errors, retrieve_calls=t.retrieve_calls, refetches=t.refetches,
            wrong_values=t.wrong_values, unsafe_actions=t.unsafe_actions, nudges=t.nudges,
            loop_detected=outcome == "stuck", loop_rule=rule, facts_lost=len(t.lost_keys),
            input_tokens=t.input_tokens, output_tokens=t.output_tokens, cached_input_tokens=t.cached_input_tokens,
            context_tokens_mean=round(t.agent_context_tokens_sum / t.agent_calls, 3) if t.agent_calls else 0.0,
            context_tokens_peak=t.context_tokens_peak, overflow_events=t.overflow_events,
            throttle_retries=t.throttle_retries, latency_s=round(self.clock, 6), tool_s=round(t.tool_s, 6),
            backoff_s=round(t.backoff_s, 6), cost_usd=t.cost_usd, summary_cost_usd=t.summary_cost_usd, error=error,
        )
        return SessionResult(record=record, calls=self.calls, events=self.events)


def replay(script: SessionScript, strategy: ContextStrategy | str, profile: Profile | str = "frontier", *,
           switches: Switches | None = None, scenario: str | None = None, session_index: int = 0,
           strategy_label: str | None = None, **switch_overrides: Any) -> SessionResult:
    """Replay ``script`` under ``strategy`` (an instance, cloned per agent, or a registered name)."""
    instance = create(strategy) if isinstance(strategy, str) else strategy
    prof = builtin_profile(profile) if isinstance(profile, str) else profile
    sw = switches or Switches.for_strategy(instance, **switch_overrides)
    return Replay(script, instance, prof, sw, scenario=scenario, session_index=session_index,
                  strategy_label=strategy_label).run()
