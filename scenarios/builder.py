"""`ScriptBuilder`: what every family uses to assemble a valid `SessionScript` (unique fact values,
decoys, steps with typed arg templates, lognormal payload sizes and tool latencies), and
`ScriptDraft`, the base of each family's per-script object that drives it."""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

from harness.core.switches import DEFAULT_OUTPUT_CAP_CHARS
from harness.core.tools import CATALOGUE, TOOL_LATENCY_SIGMA, arg_types, contract, hyphenated
from scenarios.base import (
    LITERAL_PREFIX,
    Call,
    Fact,
    Fault,
    Handoff,
    Lookup,
    ScenarioParams,
    Series,
    SessionScript,
    Step,
    Task,
    check_script,
)
from scenarios.draws import BASE32, Draws, derive_seed
from scenarios.text import Clock, facts_within_cap, fit

#: Default session length mix (J): lognormal, median 60 tool calls, clipped to [20, 200] so that an
#: ideal agent finishes within the 250-turn limit even with a few faults.
TURNS_MEDIAN, TURNS_SIGMA, TURNS_MIN, TURNS_MAX = 60, 0.55, 20, 200


def lit(value: object) -> str:
    """An argument template holding a literal value."""
    return LITERAL_PREFIX + (value if isinstance(value, str) else repr(value).lower() if isinstance(value, bool)
                             else str(value))


class InvalidScript(RuntimeError):
    """A generator produced a script that breaks the content rules (a generator bug)."""


class CoreStep(NamedTuple):
    """A step of a family's core chain, before `ScriptBuilder.interleave` adds it: the arguments of
    `ScriptBuilder.step`, with ``extra`` its keyword arguments (fault, shortcut)."""

    tool: str
    args: Mapping[str, str]
    payload: str
    produces: Sequence[str]
    extra: Mapping[str, Any] = MappingProxyType({})


class ScriptBuilder:
    def __init__(self, scenario: str, seed: int, params: ScenarioParams, series: Series | None = None) -> None:
        self.scenario = scenario
        self.seed = seed
        self.params = params
        #: The series the session belongs to (durable facts take their values from it), if any.
        self.series = series
        self.draws = Draws(derive_seed(seed, scenario))
        self.facts: dict[str, Fact] = {}
        self.decoys: dict[str, list[str]] = {}
        self.steps: list[Step] = []
        self._values: list[str] = []
        self._step_ids: set[str] = set()

    # Length and sizes --------------------------------------------------------------------------
    def turns(self) -> int:
        if self.params.turns is not None:
            return self.params.turns
        d = self.draws.child("turns")
        return max(TURNS_MIN, min(TURNS_MAX, round(d.lognormal(TURNS_MEDIAN, TURNS_SIGMA))))

    def payload_bytes(self, scale: float = 1.0) -> int:
        p = self.params
        size = self.draws.lognormal(p.payload_median_bytes * scale, p.payload_sigma)
        return int(max(96, min(p.payload_max_bytes, size)))

    # Values ------------------------------------------------------------------------------------
    def distinct(self, make: Callable[[], str]) -> str:
        """A value from ``make`` unlike every value drawn so far (``make`` is called until one is)."""
        for _ in range(1000):
            value = make()
            if all(value not in v and v not in value for v in self._values):
                self._values.append(value)
                return value
        raise InvalidScript("could not draw a distinct value")

    def value(self, word: str) -> str:
        """A distinctive value ``word-xxxx`` (4 base32 chars) unlike every value drawn so far."""
        return self.distinct(lambda: f"{word}-{self.draws.token(4, BASE32)}")

    def fact(self, key: str, kind: str, word: str | None = None, *, value: str | None = None,
             lookup: Lookup = "literal", durable: Callable[[Draws], str] | None = None,
             forms: Iterable[str] = ()) -> str:
        """Define fact ``key`` (a fresh value of shape ``word``, or ``value``); ``lookup`` says how the
        agent finds it (see `scenarios.base.Lookup`). ``durable`` marks a project-level fact: in a
        series it makes the value from the series' draws for the key (`Series.draws`) instead.
        ``forms`` are the other texts that state it (`scenarios.base.Fact.forms`)."""
        if key in self.facts:
            raise InvalidScript(f"fact {key!r} defined twice")
        if value is None:
            value = self.value(word or kind)
        elif value not in self._values:
            self._values.append(value)
        if durable is not None and self.series is not None:
            # The session's own value was drawn all the same, so every later draw of the session is
            # where it would be outside the series.
            self._values.remove(value)
            shared = self.series.draws(key)
            value = self.distinct(lambda: durable(shared))
        self.facts[key] = Fact(key=key, value=value, kind=kind, lookup=lookup,
                               durable=durable is not None and self.series is not None, forms=tuple(forms))
        return value

    def decoy(self, key: str, word: str | None = None, *, value: str | None = None) -> str:
        """A wrong value of the same shape as fact ``key``'s, for distractors."""
        shape = word or self.facts[key].value.rsplit("-", 1)[0]
        out = value if value is not None else self.value(shape)
        if value is not None:
            self._values.append(value)
        self.decoys.setdefault(key, []).append(out)
        return out

    def v(self, key: str) -> str:
        return self.facts[key].value

    # Steps -------------------------------------------------------------------------------------
    def _latency(self, tool: str) -> float:
        median = contract(tool).median_latency_s
        return round(self.draws.lognormal(median, TOOL_LATENCY_SIGMA), 3)

    def make_step(
        self,
        tool: str,
        args: Mapping[str, str],
        payload: str,
        produces: Iterable[str] = (),
        *,
        step_id: str | None = None,
        fault: Fault | None = None,
        shortcut: Call | None = None,
        agent: str | None = None,
    ) -> Step:
        """A step (not appended): ``args`` maps arg -> fact key or `lit` template. With the
        ``hyphenated_tools`` param on, the tool (and the shortcut's) is named as `hyphenated` says."""
        if tool not in CATALOGUE:
            raise InvalidScript(f"unknown tool {tool!r}: no registered family declares it (ScenarioFamily.tools)")
        if self.params.hyphenated_tools:
            # Both names share one contract, so every draw below (and the script) is otherwise the same.
            tool = hyphenated(tool)
            if shortcut is not None:
                shortcut = shortcut.model_copy(update={"tool": hyphenated(shortcut.tool)})
        types = arg_types(tool)
        unknown = set(args) - set(types)
        if unknown:
            raise InvalidScript(f"{tool} has no args {sorted(unknown)}")
        sid = step_id or f"s{len(self.steps) + 1:03d}"
        if sid in self._step_ids:
            raise InvalidScript(f"step id {sid!r} used twice")
        self._step_ids.add(sid)
        needs = sorted({ref for ref in args.values() if not ref.startswith(LITERAL_PREFIX)})
        produced = {k: self.v(k) for k in produces}
        # A real tool prints this output behind the default cap: its facts must be where the cap keeps.
        payload = facts_within_cap(payload, list(produced.values()), DEFAULT_OUTPUT_CAP_CHARS)
        return Step(
            id=sid,
            tool=tool,
            args=dict(args),
            arg_types={a: types[a] for a in args},
            needs=needs,
            produces=produced,
            payload=payload,
            latency_s=self._latency(tool),
            fault=fault,
            shortcut=shortcut,
            agent=agent,
        )

    def step(self, tool: str, args: Mapping[str, str], payload: str, produces: Iterable[str] = (),
             **kwargs: Any) -> Step:
        made = self.make_step(tool, args, payload, produces, **kwargs)
        self.steps.append(made)
        return made

    def interleave(
        self,
        core: Sequence[CoreStep | Callable[[], CoreStep]],
        slots: Sequence[int],
        explore: Callable[[set[str]], None],
        available: set[str],
        *,
        agent: str | None = None,
    ) -> None:
        """Add the core steps in order; before core step i, run ``explore(available)`` once per slot
        equal to i (``slots`` sorted; a slot equal to ``len(core)`` comes after the last core step).
        A core item is a `CoreStep`, or a method that makes it when its turn comes (so its text is
        drawn, and its clock runs, in session order). ``available`` grows with each core step's
        facts so exploration can depend on what has been found. ``agent`` owns every core step."""
        pending = list(slots)
        for i, item in enumerate([*core, None]):
            while pending and pending[0] == i:
                pending.pop(0)
                explore(available)
            if item is None:
                break
            tool, args, payload, produces, extra = item() if callable(item) else item
            self.step(tool, args, payload, produces, agent=agent, **extra)
            available |= set(produces)

    def build(
        self,
        task_text: str,
        task_facts: Iterable[str],
        final_facts: Iterable[str],
        *,
        agents: list[str] | None = None,
        handoffs: list[Handoff] | None = None,
        scenario: str | None = None,
        patch: Iterable[str] = (),
    ) -> SessionScript:
        script = SessionScript(
            scenario=scenario or self.scenario,
            seed=self.seed,
            task=Task(text=task_text, facts={k: self.v(k) for k in task_facts}),
            steps=self.steps,
            final_facts=list(final_facts),
            facts=dict(sorted(self.facts.items())),
            decoys={k: list(v) for k, v in sorted(self.decoys.items())},
            agents=agents,
            handoffs=handoffs or [],
            # Recorded only when on: a script without hyphenated tools stays byte for byte what it was
            # before the param existed (tests/scenarios pins scripts by hash).
            params=self.params.model_dump(exclude=None if self.params.hyphenated_tools else {"hyphenated_tools"}),
            patch=list(patch),
        )
        problems = check_script(script)
        if problems:
            raise InvalidScript(f"{self.scenario} seed {self.seed}: " + "; ".join(problems[:5]))
        return script


class ScriptDraft(abc.ABC):
    """One script being generated. Each family subclasses it: the incident's facts are attributes
    drawn in ``__init__``, each kind of step is a method, and `script` assembles the session."""

    def __init__(self, scenario: str, seed: int, params: ScenarioParams, series: Series | None = None) -> None:
        self.builder = ScriptBuilder(scenario, seed, params, series)
        self.series = series
        self.draws = self.builder.draws
        self.clock = Clock(self.draws.child("clock"))
        self.turns = self.builder.turns()
        # Exploration choices (which kind, and where) come from a stream of their own. Making a
        # child stream takes no draw from its parent, so making it here rather than later is safe.
        self.explore_draws = self.draws.child("explore")
        #: Exploration steps made so far; literal args carry it so that no two calls are the same.
        self.explored = 0

    @abc.abstractmethod
    def script(self) -> SessionScript:
        """The finished script (call once)."""

    def exploration_slots(self, core_steps: int) -> list[int]:
        """Where the exploration steps go, for `ScriptBuilder.interleave`: enough to fill the
        session to ``turns``, each before a core step other than the first."""
        n_explore = max(0, self.turns - core_steps)
        return sorted(self.explore_draws.integer(1, core_steps - 1) for _ in range(n_explore))

    def capped_step(self, tool: str, args: Mapping[str, str], payload: str) -> None:
        """An exploration step whose payload is cut at a line end to ``payload_max_bytes``."""
        self.builder.step(tool, args, fit(payload, self.builder.params.payload_max_bytes))
