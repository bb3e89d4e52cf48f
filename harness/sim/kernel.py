"""The replay kernel: one session script under one context strategy against the mock model, on a
simulated clock, recording every call and the session (docs/design.md, "One session replay").

The loop lives here and reads like docs/model.md 2.3: stop checks, the strategy's proactive step,
fitting the window (section 5), admission past throttling, the model's decision, billing, and the
reply's consequence (a final answer, prose, or a tool call played by `ToolPlayer`). Billing and the
prompt cache are `harness.sim.billing`, throttling `harness.sim.throttling`, time `harness.sim.clock`.

Stopping and restarting a session
---------------------------------
A replay can stop at any turn boundary and carry on later, in this process or another one, and finish
exactly as if it had never stopped: same `SessionRecord`, same call rows, same event rows.

    replayer = Replay(script, strategy, profile, switches)
    if replayer.run(stop_after_turns=30) is None:      # stopped: 30 turns played, more to go
        data = replayer.save()                          # bytes: write them anywhere
    ...
    result = Replay.restore(data).run()                 # a new process picks up at turn 31

The position between turns is explicit (the phase, the agent on turn and its step), so `run` resumes
from it. `save` pickles the whole session: each agent's context as it stands (pins, summaries and
stubs, not the history they replaced), the strategy instances with their per-session state, the mock
model's state, pointers, tally, clock, throttle, billing rows, prompt caches, loop detectors and the
event log. Random draws are pure functions of (seed, purpose, step, attempt), so nothing else is
needed to continue them. Process-local things are not saved: the tokenizer (the default one is
attached again on restore) and the meters' memo of measured texts. The bytes name their format and
the ctxbench version that wrote them; `restore` refuses other versions and damaged bytes with a
one-line `ReplayStateError`.

The state is a pickle (a strategy, built-in or a plugin's, keeps whatever per-session state it likes,
so no fixed format could hold it), and unpickling can run code. So the bytes are signed: `save` puts
an HMAC-SHA256 of them under a key that is not in the bytes, and `restore` checks it before a byte is
unpickled, refusing bytes signed with another key (or not at all) with a `ReplayStateError`. The key
is this user's (`state_key`): ``$CTXBENCH_STATE_KEY`` when set, else the file
``$XDG_STATE_HOME/ctxbench/replay-state.key`` (``~/.local/state/ctxbench/`` without the variable),
made with random bytes and mode 0600 on first use; a key file another user could read or write is
refused. State saved by this user restores in any of this user's processes on this machine; to move
it to another machine or user, pass the same ``key=`` to `save` and `restore` (or set the variable on
both). Give that key only to whom you would let run code in your process.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from mypy_extensions import mypyc_attr

from harness.core.context import Context, ContextOverflow
from harness.core.crn import u
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse, block_text
from harness.core.switches import Switches
from harness.core.tokens import MESSAGE_OVERHEAD_TOKENS
from harness.core.tools import CATALOGUE, ContractError, registry_for
from harness.sim.agent import AgentState
from harness.sim.billing import Billing, ModelCall, PromptCache
from harness.sim.clock import SimClock
from harness.sim.events import EventLog
from harness.sim.fact_lines import fact_lines, parse_fact_lines
from harness.sim.loops import LoopEvent, StuckDetector
from harness.sim.memory import LoadedMemory, MemoryStore
from harness.sim.metrics import (
    CallRecord,
    Outcome,
    SessionEnded,
    SessionRecord,
    Tally,
    session_record,
)
from harness.sim.model import Decision, Mechanisms, MockModel, Pointer, concrete_args
from harness.sim.profiles import Profile
from harness.sim.profiles import profile as builtin_profile
from harness.sim.replay_state import (
    REPLAY_STATE_FORMAT,
    STATE_KEY_ENV,
    ReplayStateError,
    restored_state,
    saved_state,
    state_key,
    state_key_path,
)
from harness.sim.throttling import Throttle, Throttled
from harness.sim.tool_player import ToolOutcome, ToolPlayer
from harness.sim.view import Plan, Reader
from harness.sim.window import AgentWindow
from scenarios.base import Handoff, SessionScript, Step
from strategies.base import ContextStrategy, create

__all__ = ["NUDGE_TEXT", "REPLAY_STATE_FORMAT", "STATE_KEY_ENV", "PromptCache", "Replay", "ReplayStateError",
           "SessionResult", "replay", "state_key", "state_key_path"]

NUDGE_TEXT = ("you called {tool} with the same arguments 3 times and got an error; "
              "fix the arguments or change approach")


@dataclass(slots=True)
class SessionResult:
    """A replayed session: its row, one row per model call, the event log the loop detector read, and
    the rows of its per-turn event log (``harness.sim.events``; empty unless asked for)."""

    record: SessionRecord
    calls: list[CallRecord]
    loop_events: list[LoopEvent]
    event_rows: list[list[Any]] = field(default_factory=list)
    #: With memory on: the agent's memory as the session left it, for the next session of its series.
    memory: MemoryStore | None = None
    #: With memory on: the session's memory columns (`harness.sim.metrics.MEMORY_COLUMNS`).
    memory_row: dict[str, Any] = field(default_factory=dict)


def clone(strategy: ContextStrategy) -> ContextStrategy:
    """A fresh instance with the same params (each agent and session gets its own)."""
    return type(strategy)(strategy.params)


@dataclass(frozen=True, slots=True)
class ScriptParts:
    """What every replay of one script needs and no strategy changes: its meter (each text counted and
    scanned once), the agent's plan and the reader of fact values. Built once per script: a worker replays
    one script under every variant in a row, and the variants after the first reuse them."""

    script: SessionScript
    forms: bool
    meter: TextMeter
    plan: Plan
    reader: Reader


#: The parts of the last script replayed.
_last_parts: ScriptParts | None = None


def parts_of(script: SessionScript, *, forms: bool = True) -> ScriptParts:
    """The parts of ``script``, shared by consecutive replays of the same script. The meter holds the
    script's facts (their values and declared forms), decoys and step calls; ``forms=False`` scans values
    only (the ablation of docs/model.md v3 change 6)."""
    global _last_parts
    if _last_parts is None or _last_parts.script is not script or _last_parts.forms != forms:
        decoys = [d for ds in script.decoys.values() for d in ds]
        declared = {key: fact.forms for key, fact in script.facts.items() if fact.forms} if forms else None
        meter = TextMeter.for_facts(script.fact_values(), decoys=decoys, forms=declared, calls=step_calls(script))
        _last_parts = ScriptParts(script, forms, meter, Plan.of(script), Reader(script))
    return _last_parts


def meter_of(script: SessionScript, *, forms: bool = True) -> TextMeter:
    """The meter of ``script`` (`parts_of`)."""
    return parts_of(script, forms=forms).meter


def step_calls(script: SessionScript) -> dict[str, str]:
    """call text -> plan step: each step's call (its fallback's, its shortcut's) with its true arguments,
    as a message shows it (`block_text` of the ToolUse). A message whose text holds one shows that step
    done (`harness.core.messages.Message.records`)."""
    truth = script.fact_values()
    out: dict[str, str] = {}
    for step in script.steps:
        runs = [step] + ([step.fault.fallback] if step.fault and step.fault.fallback else [])
        for run in runs:
            out.setdefault(block_text(ToolUse("", run.tool, concrete_args(run, truth))), step.id)
            if run.shortcut is not None:
                out.setdefault(block_text(ToolUse("", run.shortcut.tool, dict(run.shortcut.args))), step.id)
    return out


@mypyc_attr(native_class=False)  # pickled whole (`Replay.save`): see harness/build.py
class Replay:
    """One session under one strategy. Use `replay`.

    Size: over 500 lines, and one unit on purpose: it is the turn loop of docs/model.md 2.3 and the state
    that loop carries between turns (agents, tally, clock, billing, caches, the event log), which `save`
    pickles whole. Its parts that need none of that state live beside it (billing, throttling, the clock,
    the tool player, the agent window, the model); what remains reads top to bottom as the session does:
    the session, moves between steps and agents, one turn, the tool call, hand-overs, the summarizer seam.
    """

    def __init__(self, script: SessionScript, strategy: ContextStrategy, profile: Profile, switches: Switches, *,
                 scenario: str | None = None, session_index: int = 0, strategy_label: str | None = None,
                 events: bool = False, memory: MemoryStore | None = None, p_write: float = 0.0,
                 mechanisms: Mechanisms | None = None, forms: bool = True) -> None:
        self.script = script
        self.template = strategy
        self.profile = profile
        self.switches = switches
        self.scenario = scenario or script.scenario
        self.session_index = session_index
        self.label = strategy_label or strategy.name
        self.seed = script.seed
        parts = parts_of(script, forms=forms)
        self.meter = parts.meter
        self.truth = script.fact_values()
        self.mechanisms = mechanisms or Mechanisms()
        #: The agent's memory files (None: memory off) and what the session loaded of them.
        self.memory = memory
        self.p_write = p_write
        self.loaded = memory.render() if memory is not None else LoadedMemory("", False, {})
        # The memory block is part of the system prompt: its tokens are in every call's prompt.
        self.system_tokens = script.system_prompt_tokens + (
            self.meter.tokenizer.count(self.loaded.text) if self.loaded.text else 0)
        self.model = MockModel(parts.plan, parts.reader, profile, seed=script.seed,
                               system_tokens=self.system_tokens, tokenizer=self.meter.tokenizer,
                               mechanisms=self.mechanisms)
        durable = {key for key, fact in script.facts.items() if fact.durable}
        # The model reads the block: a durable fact's line there counts as known (docs/model.md 2.2).
        self.model.memory = {k: v for k, v in self.loaded.facts.items() if k in durable}
        self.memory_used: set[str] = set()
        self.stale_memory_used = False
        self.steps_skipped = 0
        #: Keys the session saw in a tool output (what the agent can write to memory at the end).
        self._seen: set[str] = set()
        self.clock = SimClock()
        self.tally = Tally()
        self.throttle = Throttle(profile, self.seed, self.clock)
        self.billing = Billing(profile, self.seed, self.clock, self.tally, scenario=self.scenario,
                               session_index=session_index, strategy=self.label)
        # The session's naming (the catalogue, or the one with hyphenated tools) decided once from its calls.
        self.tools = ToolPlayer(seed=self.seed, switches=switches, truth=self.truth, tally=self.tally,
                                clock=self.clock, registry=registry_for(script.tool_names()))
        self.loop_events: list[LoopEvent] = []
        #: key -> the step whose result first held it: the harness's record, for the lost-facts count and
        #: the event log (the agent is never told; it reads where facts come from off its context).
        self.found_by: dict[str, Step] = {}
        #: Steps done at least once by their own call (a step done again is a redone step), and steps
        #: completed in any way, a shortcut included (the harness's order when progress is not read from
        #: the context).
        self._done: set[str] = set()
        self._passed: set[str] = set()
        self._summary_n = 0
        #: Each agent's context as the session left it (read by validation experiments, e.g. P5).
        self.contexts: dict[str, Context] = {}
        #: The per-turn event log (``events.parquet``), when asked for.
        self.log = EventLog(scenario=self.scenario, session_index=session_index, strategy=self.label) if events \
            else None
        # Where the session stands between two turns (what `run` resumes from): the phase, the agent on
        # turn (its index in the script's agents), its steps and the index of the step it is on.
        self._phase: Phase = "start"
        self._agent: AgentState | None = None
        self._agent_index = 0
        self._steps: list[Step] = []
        #: The ids of ``_steps``, in order (the plan order the model reads its progress against).
        self._step_ids: tuple[str, ...] = ()
        self._step_index = 0
        self._result: SessionResult | None = None

    # The session ----------------------------------------------------------------------------------------
    @overload
    def run(self, stop_after_turns: None = None) -> SessionResult: ...
    @overload
    def run(self, stop_after_turns: int) -> SessionResult | None: ...
    def run(self, stop_after_turns: int | None = None) -> SessionResult | None:
        """Play the session to its end and return its result; or, with ``stop_after_turns``, stop at the
        first turn boundary once that many more turns have been played (0: stop where it stands) and
        return None, unless the session ended first. Call again (or `save` and `restore`) to go on;
        once the session has ended, every call returns its result."""
        if stop_after_turns is not None and stop_after_turns < 0:
            raise ValueError(f"stop_after_turns must be >= 0, got {stop_after_turns}")
        if self._result is not None:
            return self._result
        limit = None if stop_after_turns is None else self.tally.turns + stop_after_turns
        tally, advance = self.tally, self._advance
        rule = ""
        try:
            outcome: Outcome | None = None
            while outcome is None:
                if limit is not None and tally.turns >= limit:
                    return None
                outcome = advance()
        except SessionEnded as end:
            outcome, rule = end.outcome, end.rule
        self._phase = "done"
        script = self.script
        record = session_record(
            self.tally, self.clock, outcome=outcome, loop_rule=rule, throttle_retries=self.throttle.retries,
            scenario=self.scenario, session_index=self.session_index, seed=script.seed, strategy=self.label,
            contracts=self.switches.contracts, errors=self.switches.errors, breaker=self.switches.breaker,
            output_cap_chars=self.switches.output_cap_chars, token_budget=self.switches.token_budget,
            family=script.scenario,
            agents=len(script.agents or ()) or 1,
        )
        self._result = SessionResult(record=record, calls=self.billing.calls, loop_events=self.loop_events,
                                     event_rows=self.log.rows if self.log is not None else [])
        if self.memory is not None:
            self._result.memory = self._written_memory(self.memory)
            self._result.memory_row = {
                "memory": True, "memory_chars": self.loaded.chars, "memory_truncated": self.loaded.truncated,
                "memory_facts_used": len(self.memory_used), "stale_memory_used": self.stale_memory_used,
                "steps_skipped": self.steps_skipped,
            }
        return self._result

    def _written_memory(self, memory: MemoryStore) -> MemoryStore:
        """The memory after the session: each durable fact the session saw (stated by the task, or in a
        tool output it read) is written with probability ``p_write``, a draw shared by every strategy."""
        script, truth = self.script, self.truth
        for key in sorted(k for k, fact in script.facts.items() if fact.durable):
            seen = key in script.task.facts or key in self._seen
            if seen and u(self.seed, "memory_write", "end", 0, key) < self.p_write:
                memory = memory.remember(key, truth[key])
        return memory

    @property
    def finished(self) -> bool:
        """Whether the session has ended (`run` returns its result without playing anything)."""
        return self._result is not None

    def _advance(self) -> Outcome | None:
        """One move of the session: a turn, a move to the next step, or a hand-over to the next agent
        (its call is a turn). Each agent works through its steps in turn and hands over to the next;
        the last one answers. Returns the outcome once the final answer is given."""
        agent = self._agent
        if agent is None:  # the start: the first agent gets the task
            task = Message.build("user", [Text(self.script.task.text)], kind="task", meter=self.meter)
            self._enter_agent(0, task)
            return None
        pointer = agent.pointer
        if self._phase == "final" and pointer.step is None:
            return self._graded(agent) if self._turn(agent) else None
        if pointer.step is not None:  # the step in progress (or one the final answer went back to)
            self._turn(agent)
            return None
        step = self._next_step(agent)
        if step is not None:
            pointer.step = step
            pointer.attempt = 0
            return None
        agents = self.script.agents
        if agents and self._agent_index + 1 < len(agents):
            name = agents[self._agent_index]
            handoff = next(h for h in self.script.handoffs if h.from_agent == name)
            self._enter_agent(self._agent_index + 1, self._handover(agent, handoff))
            return None
        self._phase = "final"  # turns until the final answer
        pointer.step = None
        pointer.attempt = 0
        return None

    def _next_step(self, agent: AgentState) -> Step | None:
        """The step the agent takes up next (None: its steps are done): read from its context
        (`MockModel.next_step`), or, with `Mechanisms.context_progress` off, the harness's order (the
        first step of the agent's not yet done)."""
        if self.mechanisms.context_progress:
            index = self.model.next_index(self.model.view(agent.ctx), self._step_ids)
            return self._steps[index] if index < len(self._steps) else None
        return next((s for s in self._steps if s.id not in self._passed), None)

    def _enter_agent(self, index: int, first: Message) -> None:
        """Agent ``index`` of the script (the only one of a single-agent script) starts on its first
        step with ``first`` as its first message."""
        script = self.script
        if script.agents:
            name = script.agents[index]
            steps = [s for s in script.steps if s.agent == name]
        else:
            name, steps = "agent", list(script.steps)
        if self.model.memory:
            steps = self._skip_remembered(steps)
        self._agent_index, self._steps, self._step_index = index, steps, 0
        self._step_ids = tuple(s.id for s in steps)
        self._phase = "steps"
        self._agent = self._new_agent(name, first, steps)

    def _skip_remembered(self, steps: list[Step]) -> list[Step]:
        """``steps`` without those whose only purpose is durable facts the loaded memory already holds:
        the agent goes straight on. A skipped step stays in the plan, so a value that turns out wrong can
        still be found again (the agent re-explores: it has no trace of a call it never made)."""
        remembered = self.model.memory
        kept: list[Step] = []
        for step in steps:
            if step.produces and all(key in remembered for key in step.produces):
                self.steps_skipped += 1
                for key in step.produces:
                    self.found_by.setdefault(key, step)
                self.tools.record_done(step)
            else:
                kept.append(step)
        return kept

    def _graded(self, agent: AgentState) -> Outcome:
        """A script with a patch succeeds when every step of the patch was done by its own call with its
        true arguments (the right file, line and change); any other when the final answer states every
        final fact's true value."""
        script = self.script
        if script.patch:
            return "success" if all(step_id in self._done for step_id in script.patch) else "wrong_answer"
        stated = parse_fact_lines(agent.ctx.messages[-1].text)
        truth = self.truth
        return "success" if all(stated.get(k) == truth[k] for k in script.final_facts) else "wrong_answer"

    # Saving and restoring --------------------------------------------------------------------------------
    def save(self, key: bytes | str | None = None) -> bytes:
        """The whole state of the session as it stands between turns (see the module's docstring), signed
        with ``key`` (default: this user's key, `state_key`); `restore` reads it back, in any process
        running the same ctxbench version that has the same key."""
        return saved_state(self, key)

    @classmethod
    def restore(cls, data: object, key: bytes | str | None = None) -> Replay:
        # ``data: object``: anything but bytes is refused in one line (compiled, a ``bytes`` annotation would
        # refuse it with the compiler's TypeError first).
        """The replay `save` wrote into ``data``, ready to `run` on from where it stopped.
        ReplayStateError (one line) for bytes that are not such a state, are damaged, were written by
        another state format or ctxbench version, or were not signed with ``key`` (default: this user's
        key, `state_key`). The signature is checked before a byte of the state is unpickled."""
        return restored_state(cls, data, key)

    # One turn (docs/model.md 2.3) ---------------------------------------------------------------------
    def _turn(self, agent: AgentState) -> bool:
        """One agent turn; True when it gave the final answer."""
        if self.log is not None:
            self.log.turn = self.tally.turns + 1
        self._check_stop(agent)
        self._hook(agent, "before_call", agent.strategy.before_call)
        prompt = self._fit(agent)
        self._admit("agent", agent.pointer.step_id, agent.pointer.attempt, prompt)
        decision = self._decide(agent)
        self.tally.turns += 1
        self._note_trace(agent, decision)
        checked = ToolPlayer.check(decision.call) if decision.call is not None else None
        reply = self._reply(agent, decision)
        window = agent.ctx.messages
        if self.log is not None:
            self.log.call(agent.name, len(self.billing.calls), window, self.system_tokens)
        touched, freed = agent.window.sending()
        self._bill(agent.window.agent_cache, ModelCall(
            agent=agent.name, kind="agent", window=window, touched=touched, prompt_tokens=prompt,
            output_tokens=reply.tokens - MESSAGE_OVERHEAD_TOKENS, step_id=agent.pointer.step_id,
            attempt=agent.pointer.attempt,
            action=decision.call.purpose if decision.call else decision.kind,
            malformed=decision.malformed or ("resent_malformed" if checked is not None else ""),
            trace=decision.trace, noise=window.raw_tokens / prompt, tokens_freed=freed,
        ))
        self._append(agent, reply)
        if decision.kind == "final":
            self._log(agent, LoopEvent.message("agent", decision.text))
            return True
        if decision.kind == "text":
            self._prose(agent, decision)
        else:
            self._tool_call(agent, decision, checked, reply)
        return False

    def _check_stop(self, agent: AgentState) -> None:
        """End the session at the turn limit, when stuck, or past the attempts per step; nudge the
        agent when the detector says so (docs/model.md 7)."""
        pointer = agent.pointer
        if self.tally.turns >= self.profile.max_turns:
            raise SessionEnded("max_turns")
        verdict = agent.detector.check()
        if verdict.stuck:
            raise SessionEnded("stuck", verdict.rule or "")
        if verdict.nudge:
            self.tally.nudges += 1
            last_tool = next((e.signature[0] for e in reversed(agent.detector.history) if e.kind == "action"), "?")
            nudge = Message.build("user", [Text(NUDGE_TEXT.format(tool=last_tool))], kind="nudge",
                                  step_id=pointer.step_id, meter=self.meter)
            self._append(agent, nudge)
            self._log(agent, LoopEvent.message("environment", nudge.text))
        if pointer.attempt >= self.profile.max_attempts_per_step:
            raise SessionEnded("step_failed")

    def _fit(self, agent: AgentState) -> int:
        """Reduce until the prompt and the output reserve fit the window (`AgentWindow.fit`, docs/model.md
        5); a strategy that cannot reduce ends the session. Returns the prompt's tokens."""
        # A partial, not a lambda: mypyc (setup.py) cannot compile a closure in a method of this class.
        prompt = agent.window.fit(functools.partial(self._hook, agent, "reduce"))
        if prompt is None:
            raise SessionEnded("overflow")
        return prompt

    def _admit(self, kind: str, step_id: str, attempt: int, tokens: int) -> None:
        """A model call past throttling, or the session ends ``throttled``."""
        try:
            self.throttle.admit(kind, step_id, attempt, tokens)
        except Throttled:
            raise SessionEnded("throttled") from None

    def _decide(self, agent: AgentState) -> Decision:
        """The model's decision. A switch to the step's fallback, or back to a step to re-explore (a fact
        it needs is gone with every trace of its source), moves the agent there and it decides again."""
        pointer = agent.pointer
        view = self.model.view(agent.ctx)
        decision = self.model.decide(view, pointer.step.id if pointer.step is not None else None, pointer.attempt)
        # Each re-exploration goes back to an earlier step (the one that finds a fact the current one
        # needs), so the chain ends within the script's length.
        for _ in range(len(self.script.steps) + 2):
            if decision.switch_to_fallback:
                assert pointer.step is not None and pointer.step.fault is not None and pointer.step.fault.fallback
                pointer.step = pointer.step.fault.fallback
                agent.contract_failures = 0
            elif decision.switch_to is not None:
                # The look-ups that sent it back are noted (a lost fact), not billed: the call row holds the
                # trace of the decision made on the step it went back to (its draws are keyed by that step).
                self._note_trace(agent, decision)
                pointer.step = self.script.step_by_id(decision.switch_to)
            else:
                break
            pointer.attempt = 0
            decision = self.model.decide(view, pointer.step.id, 0)
        else:
            raise SessionEnded("step_failed")
        return decision

    def _reply(self, agent: AgentState, decision: Decision) -> Message:
        """The assistant message of a decision: its thought, and the tool call when it made one."""
        step_id = agent.pointer.step_id
        if decision.call is not None:
            use = ToolUse(self._use_id(agent), decision.call.tool, decision.call.args)
            return Message.build("assistant", [Text(decision.text), use], step_id=step_id, meter=self.meter)
        return Message.build("assistant", [Text(decision.text)], step_id=step_id, meter=self.meter,
                             kind="final" if decision.kind == "final" else "text")

    def _use_id(self, agent: AgentState) -> str:
        return f"{agent.name}-{self.tally.turns}"

    def _prose(self, agent: AgentState, decision: Decision) -> None:
        """Prose where a tool call was due: a syntax error (BFCL's decoder_failed), refused as a
        contract error when contracts are on."""
        self.tally.tool_syntax_errors += 1
        self._log(agent, LoopEvent.message("agent", decision.text))
        if self.switches.contracts:
            refused = self.tools.contract_failure(
                agent, ContractError("tool", "no tool call", "reply with exactly one tool call"))
            result = Message.build("user", [Text(refused.text)], kind="error", step_id=agent.pointer.step_id,
                                   meter=self.meter)
            if self.log is not None:
                self.log.tool("", result, len(refused.text))
            self._append(agent, result)
            self._log(agent, LoopEvent.error("", refused.text))
        self._hook(agent, "apply", agent.strategy.apply)
        agent.pointer.attempt += 1

    def _tool_call(self, agent: AgentState, decision: Decision, checked: ContractError | None,
                   reply: Message) -> None:
        """Play the call, append its result, and move the pointer on when it completed the step."""
        assert decision.call is not None
        call = decision.call
        pointer = agent.pointer
        self.tally.tool_calls += 1
        self._log(agent, LoopEvent.action(call.tool, json.dumps(call.args, sort_keys=True), decision.text))
        outcome: ToolOutcome = self.tools.play(agent, call, checked)
        if call.purpose == "retrieve" and outcome.status != "success" and "handle" in call.args:
            self.model.refused(agent.ctx, str(call.args["handle"]))
        use_id = next(b.id for b in reply.blocks if isinstance(b, ToolUse))
        result = Message.build("user", [ToolResult(use_id, outcome.status, outcome.text)], step_id=pointer.step_id,
                               meter=self.meter)
        if self.log is not None:
            self.log.tool(call.tool, result, len(outcome.text))
        self._append(agent, result)
        seen = LoopEvent.observation if outcome.status == "success" else LoopEvent.error
        self._log(agent, seen(call.tool, outcome.text))
        self._hook(agent, "apply", agent.strategy.apply)
        if outcome.completes and pointer.step is not None:
            # A shortcut completes the step, but its result held no facts: no producer to re-fetch.
            dangerous = CATALOGUE[call.tool].dangerous if call.tool in CATALOGUE else False
            self._complete(agent, pointer.step, produced=call.purpose != "shortcut" and not dangerous)
        else:
            pointer.attempt += 1

    def _complete(self, agent: AgentState, step: Step, *, produced: bool) -> None:
        self._passed.add(step.id)
        if produced:
            if step.id in self._done:
                self.tally.redone_steps += 1
            self._done.add(step.id)
            self._seen.update(step.produces)
            for key in step.produces:
                self.found_by.setdefault(key, step)
            self.tools.record_done(step)
        pointer = agent.pointer
        pointer.attempt = 0
        agent.contract_failures = 0
        pointer.step = None  # the caller moves on to the next step (or the final answer)

    def _note_trace(self, agent: AgentState, decision: Decision) -> None:
        lost = self.tally.lost_keys
        for entry in decision.trace:
            key = entry.get("key")
            branch = entry.get("branch")
            if branch == "wrong":
                self.tally.wrong_values += 1
            elif branch == "memory":
                self.memory_used.add(str(key))
                self.stale_memory_used |= self.model.memory[str(key)] != self.truth[str(key)]
                continue  # known from memory: not a fact lost from the context
            elif branch == "recall" and key is not None:
                self._seen.add(str(key))
            if key is not None and not entry.get("visible") and (
                    key in self.found_by or key in self.script.task.facts):
                if self.log is not None and str(key) not in lost:
                    producer = self.found_by.get(key)
                    self.log.lost(agent.name, str(key), cut=key in self.tally.cut_keys,
                                  handover=producer is not None and producer.agent not in (None, agent.name))
                lost.add(str(key))

    # Agents and hand-overs -------------------------------------------------------------------------
    def _new_agent(self, name: str, first: Message, steps: list[Step]) -> AgentState:
        seam = _SummarizerSeam(self)
        window = AgentWindow.open(clone(self.template), self.profile, system_tokens=self.system_tokens,
                                  summarizer=seam, tally=self.tally, clock=self.clock)
        agent = AgentState(name=name, window=window, detector=StuckDetector(),
                           pointer=Pointer(steps[0] if steps else None))
        seam.agent = agent
        self.contexts[name] = window.ctx
        self._append(agent, first)
        self._log(agent, LoopEvent.message("user", first.text))
        return agent

    def _handover(self, agent: AgentState, handoff: Handoff) -> Message:
        """The hand-over call: the agent states the carried facts it recalls for the next agent."""
        if self.log is not None:
            self.log.turn = self.tally.turns + 1
        prompt = self._fit(agent)
        self._admit("handoff", "handoff", 0, prompt)
        values, trace = self.model.handover(self.model.view(agent.ctx), handoff.carries)
        lines = fact_lines(values)
        text = (f"Hand-over from {handoff.from_agent} to {handoff.to_agent}.\nTask: {self.script.task.text}\n"
                f"Findings so far:\n{lines}")
        message = Message.build("user", [Text(text)], kind="task", meter=self.meter)
        window = agent.ctx.messages
        self.tally.turns += 1
        self._note_trace(agent, Decision("final", None, text, "handoff", trace=tuple(trace)))
        if self.log is not None:
            self.log.call(agent.name, len(self.billing.calls), window, self.system_tokens)
        touched, freed = agent.window.sending()
        self._bill(agent.window.agent_cache, ModelCall(
            agent=agent.name, kind="handoff", window=window, touched=touched, prompt_tokens=prompt,
            output_tokens=message.tokens - MESSAGE_OVERHEAD_TOKENS, step_id="handoff", attempt=0, action="handoff",
            trace=trace,
            noise=window.raw_tokens / prompt, tokens_freed=freed,
        ))
        return message

    # The summarizer seam given to each context (`_SummarizerSeam`) ---------------------------------------
    def _summarize(self, agent: AgentState, messages: list[Message]) -> Message:
        """One summary call for ``agent``: billed on its summary cache stream, logged as a condensation."""
        p = self.profile
        tokens_in = sum(m.tokens for m in messages) + p.summarizer_prompt_tokens
        if tokens_in + p.max_output_reserve > p.window_tokens:
            raise ContextOverflow(tokens_in, p.window_tokens)
        self._summary_n += 1
        at_step = agent.pointer.step_id
        self._admit("summary", at_step, agent.pointer.attempt, tokens_in)
        text, kept = self.model.summary_text(self.model.view(agent.ctx), messages, at_step, self._summary_n, tokens_in)
        reply = Message.build("assistant", [Text(text)], meter=self.meter)
        # touched=0: a summary prompt is a new list, so compare it message by message.
        self._bill(agent.window.summary_cache, ModelCall(
            agent=agent.name, kind="summary", window=messages, touched=0, prompt_tokens=tokens_in,
            output_tokens=reply.tokens, step_id=at_step, attempt=self._summary_n, action="summary",
            trace=[{"kept": kept, "n": self._summary_n}],
        ))
        self._log(agent, LoopEvent.condensation())
        return reply

    # Bookkeeping ---------------------------------------------------------------------------------------
    def _bill(self, cache: PromptCache, call: ModelCall) -> None:
        """Bill a call; a runtime with a token budget ends the session once it is spent."""
        self.billing.bill(call, cache)
        t = self.tally
        budget = self.switches.token_budget
        if budget and t.input_tokens + t.output_tokens > budget:
            raise SessionEnded("budget_exceeded")

    def _append(self, agent: AgentState, message: Message) -> None:
        window = agent.ctx.messages
        appended = agent.window.append(message)
        if self.log is not None:
            self.log.appended(agent.name, appended)
            if appended is not message:
                self.log.rewritten(agent.name, message, appended, window)

    def _hook(self, agent: AgentState, hook: str, run: Callable[..., None], *args: Any) -> None:
        """Run a strategy hook on the agent's window (`AgentWindow.hook`: counted as a compaction when it
        took tokens out); with the event log on, tell it when the hook changed the window (any message that
        is not the same object in the same place)."""
        if self.log is None:
            agent.window.hook(run, *args)
            return
        window = agent.ctx.messages
        tokens = window.tokens
        before, calls = list(window), len(self.billing.calls)
        agent.window.hook(run, *args)
        if len(window) != len(before) or not all(map(operator.is_, before, window)):
            self.log.changed(agent.name, hook, before, tokens, window, calls if len(self.billing.calls) > calls else -1)

    def _log(self, agent: AgentState, event: LoopEvent) -> None:
        agent.detector.log(event)
        self.loop_events.append(event)


@mypyc_attr(native_class=False)  # pickled whole (`Replay.save`): see harness/build.py
class _SummarizerSeam:
    """The summarizer of one agent's context: `Replay._summarize` for that agent. A small class rather
    than a closure, so that a saved replay pickles it (the agent is set once it exists: it holds the
    context that holds this seam)."""

    __slots__ = ("agent", "replay")

    def __init__(self, replay: Replay) -> None:
        self.replay = replay
        self.agent: AgentState | None = None

    def __call__(self, messages: list[Message]) -> Message:
        assert self.agent is not None
        return self.replay._summarize(self.agent, messages)

    def __getstate__(self) -> tuple[Replay, AgentState | None]:
        return self.replay, self.agent

    def __setstate__(self, state: tuple[Replay, AgentState | None]) -> None:
        self.replay, self.agent = state


#: Where the session stands: not begun, an agent on its steps, the last agent at its final answer, ended.
Phase = Literal["start", "steps", "final", "done"]


def replay(script: SessionScript, strategy: ContextStrategy | str, profile: Profile | str = "frontier", *,
           switches: Switches | None = None, scenario: str | None = None, session_index: int = 0,
           strategy_label: str | None = None, events: bool = False, memory: MemoryStore | None = None,
           # `float | int`, not `float`: mypyc (setup.py) cannot write the signature of a keyword-only float with
           # a default beside **kwargs; the two annotations accept the same values.
           p_write: float | int = 0.0, mechanisms: Mechanisms | None = None, forms: bool = True,
           **switch_overrides: Any) -> SessionResult:
    """Replay ``script`` under ``strategy`` (an instance, cloned per agent, or a registered name);
    ``events`` also records the per-turn event log (`SessionResult.event_rows`); ``memory`` (None: off)
    is the agent's memory at the start, and `SessionResult.memory` what it wrote with ``p_write``;
    ``mechanisms`` and ``forms`` switch v3 mechanisms off for the validation's ablation."""
    instance = create(strategy) if isinstance(strategy, str) else strategy
    prof = builtin_profile(profile) if isinstance(profile, str) else profile
    sw = switches or Switches(**{k: v for k, v in switch_overrides.items() if v is not None})
    return Replay(script, instance, prof, sw, scenario=scenario, session_index=session_index,
                  strategy_label=strategy_label, events=events, memory=memory, p_write=p_write,
                  mechanisms=mechanisms, forms=forms).run()
