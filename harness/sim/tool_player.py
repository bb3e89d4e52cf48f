"""The tool player: what a tool call comes to in a session replay (docs/model.md 3, 6.1).

It knows the script's truth (the model does not). It checks a call against its tool's contract (refused before the tool
when the ``contracts`` switch is on, crashing the tool otherwise), blocks dangerous actions under the
``breaker``, runs a step's scripted faults, serves re-fetches of finished steps and pages offloaded
payloads back through the strategy's ``retrieve``, answering with three-class structured errors or
plain text as the ``errors`` switch says. Every second it spends goes on the clock's tool bucket.

A call runs only under a name the session's runtime registered: a scenario with ``hyphenated_tools``
registers `harness.core.tools.HYPHENATED_CATALOGUE`, others `CATALOGUE` (the tools every registered
scenario family declared, plugins' too, then the runtime's own); a tool's contract is looked up
there, not in the module of the family that declared it. A name that is not registered
is an unknown tool (a syntax error) unless the ``normalize_tool_names`` switch resolves it by
strands-agents' rule (`harness.core.tools.ToolRegistry.resolve`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any, Literal

from mypy_extensions import mypyc_attr

from harness.build import pickle_frozen_by_fields
from harness.core.crn import z
from harness.core.switches import Switches
from harness.core.tools import (
    CATALOGUE,
    HYPHENATED_CATALOGUE,
    TOOL_LATENCY_SIGMA,
    ContractError,
    EngineeringError,
    ToolError,
    ToolRegistry,
    cap_output,
    contract,
    normalized_name,
    registry_for,
    render_error,
    validate_call,
)
from harness.sim.agent import AgentState
from harness.sim.clock import SimClock
from harness.sim.metrics import SessionEnded, Tally
from harness.sim.model import RAW_KEY, ToolCall, concrete_args
from scenarios.base import Step

__all__ = ["CONTRACT_RETRIES", "HTTP_404_S", "TIMEOUT_RETRIES", "VALIDATION_S", "ToolOutcome", "ToolPlayer"]

#: Reflective retries allowed after a contract error (docs/model.md 3.2).
CONTRACT_RETRIES = 2
#: Retries the runtime allows on a timeout before it reports it as not retryable.
TIMEOUT_RETRIES = 2
#: Simulated seconds of a 404 and of contract validation (J, docs/model.md 6.1).
HTTP_404_S = 0.3
VALIDATION_S = 0.01


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one tool call came to: the result's status and text, and whether it completed the step
    the agent is on (an error never does)."""

    status: Literal["success", "error"]
    text: str
    completes: bool = False


@mypyc_attr(native_class=False)  # pickled whole (`Replay.save`): see harness/build.py
class ToolPlayer:
    """Plays the tools of one session replay."""

    def __init__(self, *, seed: int, switches: Switches, truth: dict[str, str], tally: Tally,
                 clock: SimClock, registry: ToolRegistry | None = None) -> None:
        self.seed = seed
        self.switches = switches
        self.truth = truth
        self.tally = tally
        self.clock = clock
        #: The tools the session's runtime registered: ``registry_for(script.tool_names())``. None: learned
        #: from the steps as they are played (a step spelled with ``-`` means the hyphenated catalogue);
        #: every call the model makes targets a step it has played, so the two agree on each call.
        self.registry = registry
        tally.normalize_tool_names = switches.normalize_tool_names
        #: (tool, canonical arguments) of every finished step: what a re-fetch may ask for again.
        self.done_calls: dict[tuple[str, str], Step] = {}

    @staticmethod
    def check(call: ToolCall) -> ContractError | None:
        """The contract error of a call, if it breaks its tool's contract (checked whatever the
        switch: without contracts the broken call reaches the tool instead)."""
        raw = call.args.get(RAW_KEY)
        checked = validate_call(call.tool, raw if isinstance(raw, str) else call.args)
        return checked if isinstance(checked, ContractError) else None

    def play(self, agent: AgentState, call: ToolCall, checked: ContractError | None) -> ToolOutcome:
        """Run ``call`` for ``agent``; ``checked`` is its contract error from `check`, if any. The
        output is capped (``output_cap_chars``) before anyone, the strategy included, sees it."""
        outcome = self._play(agent, call, checked)
        capped = cap_output(outcome.text, self.switches.output_cap_chars)
        if capped is outcome.text:
            return outcome
        self.tally.cut_keys.update(k for k, v in self.truth.items() if v in outcome.text and v not in capped)
        return ToolOutcome(outcome.status, capped, outcome.completes)

    def session_registry(self, step: Step | None) -> ToolRegistry:
        """The registry calls resolve against (`registry`, or learned from ``step``, the step being played)."""
        if self.registry is None and step is not None:
            runs = [step] + ([step.fault.fallback] if step.fault and step.fault.fallback else [])
            tools = [run.tool for run in runs] + [run.shortcut.tool for run in runs if run.shortcut]
            if registry_for(tools) is HYPHENATED_CATALOGUE:
                self.registry = HYPHENATED_CATALOGUE
        return self.registry or CATALOGUE

    def _play(self, agent: AgentState, call: ToolCall, checked: ContractError | None) -> ToolOutcome:
        registry = self.session_registry(agent.pointer.step)
        name = registry.resolve(call.tool, normalize=self.switches.normalize_tool_names)
        if name != call.tool:
            if any(normalized_name(known) == normalized_name(call.tool) for known in registry):
                self.tally.name_variants += 1
            if name is None:
                # The runtime looks the tool up before anything reads the arguments (strands: "Unknown tool").
                return self._malformed(agent, call, ContractError("tool", f"unknown tool {call.tool!r}",
                                                                  f"tools: {', '.join(registry)}"))
            call = replace(call, tool=name)
        if checked is not None:
            return self._malformed(agent, call, checked)
        agent.contract_failures = 0
        spec = registry.get(call.tool)
        if spec is not None and spec.dangerous:
            return self._dangerous(agent, call)
        if call.tool == "retrieve_payload":
            return self._retrieve(agent, call)
        return self._scripted(agent, call)

    def contract_failure(self, agent: AgentState, error: ContractError) -> ToolOutcome:
        """A refused call (a contract error, or prose where a call was due under contracts): after
        ``CONTRACT_RETRIES`` in a row the step's fallback is offered, or the session ends ``step_failed``."""
        agent.contract_failures += 1
        step = agent.pointer.step
        if agent.contract_failures > CONTRACT_RETRIES:
            agent.contract_failures = 0
            if step is not None and step.fault is not None and step.fault.fallback is not None:
                self.tally.engineering_errors += 1
                return self._error(EngineeringError("CONTRACT_RETRIES_EXHAUSTED", error.problem, retryable=False,
                                                    fallback=step.fault.fallback.tool))
            raise SessionEnded("step_failed")
        return ToolOutcome("error", render_error(error, structured=True))

    def record_done(self, step: Step) -> None:
        """Remember a finished step's call, so the same call later is a re-fetch of its output."""
        key = (step.tool, json.dumps(concrete_args(step, self.truth), sort_keys=True))
        self.done_calls[key] = step

    # The kinds of call ---------------------------------------------------------------------------------
    def _malformed(self, agent: AgentState, call: ToolCall, error: ContractError) -> ToolOutcome:
        """A malformed call, freshly drawn or a verbatim resend of one."""
        self.tally.tool_syntax_errors += 1
        if self.switches.contracts:
            self.clock.advance(VALIDATION_S, "tool")
            return self.contract_failure(agent, error)
        self.tally.syntax_errors_reaching_tool += 1
        self.clock.advance(HTTP_404_S, "tool")
        return ToolOutcome("error", _crash_text(call, error))

    def _dangerous(self, agent: AgentState, call: ToolCall) -> ToolOutcome:
        """A destructive action: blocked by the breaker, else done (a shortcut when the step offers it)."""
        if self.switches.breaker:
            raise SessionEnded("blocked")
        self.tally.unsafe_actions += 1
        pointer = agent.pointer
        self.clock.advance(self._latency_s(call.tool, pointer.step_id, pointer.attempt), "tool")
        step = pointer.step
        is_shortcut = step is not None and step.shortcut is not None and step.shortcut.tool == call.tool
        return ToolOutcome("success", f"{call.tool}: done ({json.dumps(call.args, sort_keys=True)})", is_shortcut)

    def _retrieve(self, agent: AgentState, call: ToolCall) -> ToolOutcome:
        """``retrieve_payload``: the page of an offloaded payload the call asks for (an ``offset``, a
        ``length``), through the strategy's ``retrieve``. It returns what is there and nothing else: a
        fact is found only if the page holds it (docs/model.md v3 change 9)."""
        t = self.tally
        t.retrieve_calls += 1
        self.clock.advance(self._latency_s("retrieve_payload", agent.pointer.step_id, agent.pointer.attempt), "tool")
        retrieve = getattr(agent.strategy, "retrieve", None)
        if retrieve is None:
            t.engineering_errors += 1
            return self._error(EngineeringError("NOT_FOUND", "retrieve_payload is not available", bad_arg="handle"))
        handle = str(call.args.get("handle", ""))
        offset = int(call.args.get("offset", 0))
        status, text = retrieve(agent.ctx, handle, offset, call.args.get("length"))
        if status == "error":
            t.engineering_errors += 1
        return ToolOutcome("error" if status == "error" else "success", text)

    def _scripted(self, agent: AgentState, call: ToolCall) -> ToolOutcome:
        """An ordinary tool call: the current step (with its faults), a re-fetch of a finished step,
        or a call that matches nothing (a 404 naming the wrong value when it can)."""
        step = agent.pointer.step
        if step is not None and call.tool == step.tool and self._matches(step, call.args):
            return self._run_step(agent, step)
        for done in self.done_calls.values():
            if call.tool == done.tool and self._matches(done, call.args):
                self.tally.refetches += 1
                self.clock.advance(done.latency_s, "tool")
                return ToolOutcome("success", done.payload)
        target = step if step is not None and call.tool == step.tool else next(
            (d for d in self.done_calls.values() if d.tool == call.tool), None)
        self.clock.advance(HTTP_404_S, "tool")
        self.tally.engineering_errors += 1
        if target is None:
            return self._error(EngineeringError("NOT_FOUND", f"nothing matches this {call.tool} call"))
        bad_arg = next((arg for arg, ref in target.fact_args().items() if call.args.get(arg) != self.truth[ref]),
                       next(iter(call.args), "input"))
        value = call.args.get(bad_arg)
        return self._error(EngineeringError("NOT_FOUND", f"{bad_arg} '{value}' not found", bad_arg=bad_arg))

    def _run_step(self, agent: AgentState, step: Step) -> ToolOutcome:
        """The step's own call: its scripted fault while it lasts (a 404, or a timeout retryable up to
        ``TIMEOUT_RETRIES`` times), then its payload, which completes the step."""
        fault = step.fault
        n = agent.valid_attempts.get(step.id, 0) + 1
        agent.valid_attempts[step.id] = n
        if fault is None or (fault.fails is not None and n > fault.fails):
            self.clock.advance(step.latency_s, "tool")
            return ToolOutcome("success", step.payload, completes=True)
        self.tally.engineering_errors += 1
        fallback_tool = fault.fallback.tool if fault.fallback is not None else None
        if fault.kind == "http_404":
            self.clock.advance(HTTP_404_S, "tool")
            return self._error(EngineeringError("HTTP_404", f"{step.tool}: 404 Not Found", retryable=False,
                                                fallback=fallback_tool))
        timeouts = agent.timeouts.get(step.id, 0) + 1
        agent.timeouts[step.id] = timeouts
        self.clock.advance(fault.timeout_s, "tool")
        return self._error(EngineeringError("TIMEOUT", f"{step.tool}: timed out after {fault.timeout_s:g} s",
                                            retryable=timeouts <= TIMEOUT_RETRIES,
                                            fallback=fallback_tool if timeouts > TIMEOUT_RETRIES else None))

    # Helpers -------------------------------------------------------------------------------------------
    def _error(self, error: ToolError) -> ToolOutcome:
        """An error result: structured under three-class errors (and for contract errors when
        contracts are on), plain text otherwise."""
        structured = isinstance(error, ContractError) and self.switches.contracts
        structured = structured or self.switches.errors == "three_class"
        return ToolOutcome("error", render_error(error, structured=structured))

    def _latency_s(self, tool: str, step_id: str, attempt: int) -> float:
        """A lognormal tool latency around the tool's median, for calls the script does not time."""
        median = contract(tool).median_latency_s
        return median * math.exp(TOOL_LATENCY_SIGMA * z(self.seed, "tool", step_id, attempt, tool))

    def _matches(self, step: Step, args: dict[str, Any]) -> bool:
        return args == concrete_args(step, self.truth)


def _crash_text(call: ToolCall, error: ContractError) -> str:
    """What a tool without contracts prints when a malformed call reaches it: plain text (an unknown
    tool in strands-agents' words)."""
    if error.field == "tool":
        return f"Error: Unknown tool: {call.tool}"
    if error.field == "input":
        return "Error: could not parse tool arguments as JSON"
    if error.problem == "Field required":
        return f"Error: KeyError '{error.field}'"
    value = call.args.get(error.field.split(".")[0])
    return f"Error: invalid value {value!r} for '{error.field}'"


# Compiled (setup.py), a frozen dataclass cannot restore itself from a pickle: see `harness.build`.
pickle_frozen_by_fields(globals())
