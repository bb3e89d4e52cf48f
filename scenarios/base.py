"""Session scripts: what an ideal agent would do in one simulated ops session, and the registry of
the generators (scenario families) that make them (docs/model.md 1).

A `SessionScript` is plain data (pydantic, JSON round-trip exact). Fact values are distinctive
strings placed verbatim in tool payloads, so "is this fact visible in the context" is a real text
property that `harness.core.messages.FactScanner` checks.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictInt,
    model_serializer,
    model_validator,
)

from harness.core.registry import Registry
from harness.core.tokens import default_tokenizer
from harness.core.tools import ToolArgs, register_tools
from scenarios.draws import Draws, derive_seed

ENTRY_POINT_GROUP = "ctxbench.scenarios"
LITERAL_PREFIX = "lit:"
#: Tokens of the system prompt and tool schemas, a fixed prefix of every prompt (docs/model.md 1.1).
DEFAULT_SYSTEM_PROMPT_TOKENS = 2000


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: How a fact is found (docs/model.md 1): ``literal`` when the agent copies an exact value it
#: saw next to what identifies it (a pod name in the row marked CrashLoopBackOff), ``latent`` when
#: finding it takes an association the text does not state next to the value (the culprit among
#: several candidates, a root cause inferred from symptoms). Each family documents its latent facts.
Lookup = Literal["literal", "latent"]


class Fact(_Model):
    key: str
    value: str = Field(min_length=1)
    kind: str
    lookup: Lookup = "literal"
    #: A project-level fact that outlives one incident (a namespace, a database, a container name): in a
    #: series of sessions its value comes from the series, so an agent's memory file may hold it. Set
    #: only on scripts generated in a series (`Series`).
    durable: bool = False
    #: Other texts that state this fact, declared by the family (docs/model.md 1.1, v3 change 6): the
    #: value written another way where the agent can read it as well as the value itself (for a
    #: ``file.py:197`` location, the edit call's ``"start_line":197`` and a diff hunk header that covers
    #: line 197). A message holding a form holds the fact.
    forms: tuple[str, ...] = ()

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # ``durable`` and ``forms`` are written only when set: a script without them stays byte for byte
        # what it was before the fields existed (tests/scenarios pins scripts by hash).
        data: dict[str, Any] = handler(self)
        if not self.durable:
            data.pop("durable", None)
        if not self.forms:
            data.pop("forms", None)
        return data


class Series(_Model):
    """Where a session sits in a series of sessions on the same project (``[series]`` of a run config):
    the series' seed, the session's position in it, and the chance that a durable fact's true value
    changes between two consecutive sessions (J, the config's ``p_change``).

    A durable fact's value is a function of the series seed, the fact's key and its change epoch (how
    many changes happened up to this position), so sessions of a series share it until it changes."""

    series_seed: int
    position: int = Field(ge=0)
    p_change: float = Field(0.0, ge=0, le=1)

    def epoch(self, key: str) -> int:
        """Changes of ``key``'s value from the series' first session up to this one."""
        return sum(Draws(derive_seed(self.series_seed, key, "change", j)).uniform() < self.p_change
                   for j in range(1, self.position + 1))

    def draws(self, key: str) -> Draws:
        """The draws that make durable fact ``key``'s value in this session (shared within an epoch)."""
        return Draws(derive_seed(self.series_seed, key, "value", self.epoch(key)))


class Task(_Model):
    text: str
    #: key -> value of the facts the task message states.
    facts: dict[str, str] = Field(default_factory=dict)


class Call(_Model):
    """A concrete call with literal arguments (the dangerous shortcut needs no facts)."""

    tool: str
    args: dict[str, Any]


class Step(_Model):
    id: str
    tool: str
    #: arg -> a fact key, or ``"lit:<value>"`` for a literal.
    args: dict[str, str]
    #: JSON type of each arg (``string``, ``integer``, ``boolean``, ``array``).
    arg_types: dict[str, str]
    #: Fact keys the args refer to (values the agent must take from its context).
    needs: list[str]
    #: key -> value of the facts embedded in the payload.
    produces: dict[str, str]
    payload: str
    latency_s: float = Field(ge=0)
    fault: Fault | None = None
    shortcut: Call | None = None
    #: alert_chain: the agent that owns this step.
    agent: str | None = None

    def fact_args(self) -> dict[str, str]:
        return {k: v for k, v in self.args.items() if not v.startswith(LITERAL_PREFIX)}


class Fault(_Model):
    kind: Literal["http_404", "timeout"]
    #: Fail the first n attempts; None = always (then a fallback is required).
    fails: StrictInt | None = None
    fallback: Step | None = None
    timeout_s: float = Field(30.0, gt=0)

    @model_validator(mode="after")
    def _fails_rule(self) -> Fault:
        if self.fails is None and self.fallback is None:
            raise ValueError("a fault that never clears (fails=None) needs a fallback step")
        if self.fails is not None and self.fails not in (1, 2):
            raise ValueError(f"fails must be 1, 2 or None, got {self.fails}")
        return self


class Handoff(_Model):
    """alert_chain: after ``after_step``, agent ``from_agent`` hands over to ``to_agent`` a message that
    must carry the values of ``carries``."""

    after_step: str
    from_agent: str
    to_agent: str
    carries: list[str]


class SessionScript(_Model):
    scenario: str
    seed: int
    task: Task
    steps: list[Step]
    #: Keys whose values the final answer must state.
    final_facts: list[str]
    facts: dict[str, Fact]
    #: key -> wrong values of the same shape placed in payloads (distractors).
    decoys: dict[str, list[str]] = Field(default_factory=dict)
    agents: list[str] | None = None
    handoffs: list[Handoff] = Field(default_factory=list)
    system_prompt_tokens: int = DEFAULT_SYSTEM_PROMPT_TOKENS
    #: The generator parameters that made this script (defaults filled in).
    params: dict[str, Any] = Field(default_factory=dict)
    #: Steps whose edits make the patch the session is graded on (code_repair, docs/model.md v3 change
    #: 7): success is every one of them done with its true arguments (the right file, line and change)
    #: before the final answer. Empty: graded on the final report, which must state ``final_facts``.
    patch: list[str] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # ``patch`` is written only when set: a script graded on its report stays byte for byte what it
        # was before the field existed (tests/scenarios pins scripts by hash).
        data: dict[str, Any] = handler(self)
        if not self.patch:
            data.pop("patch", None)
        return data

    @model_validator(mode="after")
    def _structure(self) -> SessionScript:
        """Cheap structural rules (content checks are in `check_script`)."""
        known = set(self.task.facts)
        for key, value in self.task.facts.items():
            if key not in self.facts or self.facts[key].value != value:
                raise ValueError(f"task fact {key!r} is not a script fact with that value")
        for i, step in enumerate(self.steps):
            for key in step.needs:
                if key not in known:
                    raise ValueError(f"steps[{i}] ({step.id}) needs {key!r}: no earlier step or the task has it")
            for arg, ref in step.fact_args().items():
                if ref not in step.needs:
                    raise ValueError(f"steps[{i}] ({step.id}).args.{arg} refers to {ref!r}, not in needs")
            produced = step.fault.fallback.produces if step.fault and step.fault.fallback else step.produces
            for key, value in produced.items():
                if key not in self.facts or self.facts[key].value != value:
                    raise ValueError(f"steps[{i}] ({step.id}) produces {key!r}, not a script fact with that value")
            known |= set(step.produces) | set(produced)
        for key in self.final_facts:
            if key not in known:
                raise ValueError(f"final fact {key!r} is never produced")
        for step_id in self.patch:
            if not any(step.id == step_id for step in self.steps):
                raise ValueError(f"patch step {step_id!r} is not a step of the script")
        if self.agents is not None:
            for i, step in enumerate(self.steps):
                if step.agent not in self.agents:
                    raise ValueError(f"steps[{i}] ({step.id}).agent {step.agent!r} is not one of {self.agents}")
        return self

    def step_by_id(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
            if step.fault and step.fault.fallback and step.fault.fallback.id == step_id:
                return step.fault.fallback
        raise KeyError(step_id)

    def fact_values(self) -> dict[str, str]:
        """key -> value of every fact."""
        return {key: fact.value for key, fact in self.facts.items()}

    def tool_names(self) -> list[str]:
        """Every tool name the script's calls use (steps, fallbacks, shortcuts), in first-use order."""
        names: dict[str, None] = {}
        for step in self.steps:
            for run in [step] + ([step.fault.fallback] if step.fault and step.fault.fallback else []):
                names[run.tool] = None
                if run.shortcut is not None:
                    names[run.shortcut.tool] = None
        return list(names)

    def finders(self) -> dict[str, Step]:
        """key -> the first step whose result holds that fact (its fallback's, when only that one runs):
        the plan's "where each fact is found", which an agent acts on only with a visible trace of that
        step (docs/model.md v3 change 2). Task facts have none."""
        out: dict[str, Step] = {}
        for step in self.steps:
            for run in [step] + ([step.fault.fallback] if step.fault and step.fault.fallback else []):
                for key in run.produces:
                    out.setdefault(key, step)
        return out

    def lookups(self) -> dict[str, Lookup]:
        """key -> how the agent finds that fact (task facts are stated, so literal)."""
        return {key: fact.lookup for key, fact in self.facts.items()}


Step.model_rebuild()
Fault.model_rebuild()


def check_script(script: SessionScript) -> list[str]:
    """Content rules of docs/model.md 1 that need the text: returns the violations (empty = valid).

    - values (and decoys) are unique and none is a substring of another;
    - every produced value occurs in its payload; the task text holds the task facts;
    - a payload holds no fact that is only produced later (nothing leaks early): the facts in a
      payload are the step's own plus facts already known;
    - no two steps make the same call (tool and args), since a tool's text is a function of its call.
    """
    problems: list[str] = []
    values = {key: fact.value for key, fact in script.facts.items()}
    every = [(f"fact {k}", v) for k, v in values.items()] + [
        (f"decoy of {k}", d) for k, ds in script.decoys.items() for d in ds
    ]
    seen: dict[str, str] = {}
    for name, value in every:
        if value in seen:
            problems.append(f"{name} repeats the value of {seen[value]}: {value!r}")
        seen[value] = name
    for name_a, a in every:
        for name_b, b in every:
            if a != b and a in b:
                problems.append(f"{name_a} {a!r} is a substring of {name_b} {b!r}")
    for key, value in script.task.facts.items():
        if value not in script.task.text:
            problems.append(f"task text lacks task fact {key}")
    calls: dict[tuple[str, str], str] = {}
    for step in script.steps:
        for run in [step] + ([step.fault.fallback] if step.fault and step.fault.fallback else []):
            call = (run.tool, repr(sorted(run.args.items())))
            if call in calls:
                problems.append(f"steps {calls[call]} and {run.id} make the same call")
            calls[call] = run.id
    known = set(script.task.facts)
    leaked_in_task = {k for k, v in values.items() if v in script.task.text} - known
    if leaked_in_task:
        problems.append(f"task text holds non-task facts {sorted(leaked_in_task)}")
    for step in script.steps:
        runs = [step] + ([step.fault.fallback] if step.fault and step.fault.fallback else [])
        for run in runs:
            for key, value in run.produces.items():
                if value not in run.payload:
                    problems.append(f"step {run.id}: produced {key} is not in its payload")
            present = {k for k, v in values.items() if v in run.payload}
            early = present - known - set(run.produces)
            if early:
                problems.append(f"step {run.id}: payload leaks later facts {sorted(early)}")
        for run in runs:
            known |= set(run.produces)
    return problems


# Registry --------------------------------------------------------------------------------------


class ScenarioParams(_Model):
    """Parameters every family takes: session length and payload size.

    Strict and finite, in every family's subclass too: a config's ``turns = "40"`` or ``payload_sigma =
    nan`` is refused rather than read as a number."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    #: Tool calls of the ideal session; None draws one from the default length mix (median ~60).
    turns: StrictInt | None = Field(None, ge=20, le=1000)
    #: Median payload size in bytes of ordinary tool outputs (lognormal).
    payload_median_bytes: StrictInt = Field(1500, ge=64, le=1_000_000)
    #: Lognormal sigma of payload sizes; 1.82 puts p95 near 30 KB at the default median.
    payload_sigma: float = Field(1.82, ge=0, le=4)
    #: Hard cap on one payload, in bytes.
    payload_max_bytes: StrictInt = Field(400_000, ge=256, le=10_000_000)
    #: Name the tools of `harness.core.tools.HYPHENATED_TOOLS` with ``-`` (``kubectl-logs``), as a tool
    #: list mixing conventions does; the script is otherwise the same, draw for draw. Off by default.
    hyphenated_tools: bool = False


class ScenarioFamily(abc.ABC):
    """A generator of session scripts. Subclasses set ``Params`` and ``tools`` and implement ``generate``."""

    name: ClassVar[str] = ""
    Params: ClassVar[type[ScenarioParams]] = ScenarioParams
    #: The tools its scripts call, name -> argument contract (a `harness.core.tools.ToolRegistry`, or any
    #: mapping): its own contracts and the shared ones of `scenarios.ops_tools` it uses. `register` adds
    #: them to the catalogue the runtime looks contracts up in; a family that only picks among other
    #: families' scripts (``mix``) declares none.
    tools: ClassVar[Mapping[str, type[ToolArgs]]] = MappingProxyType({})

    def __init__(self, params: ScenarioParams) -> None:
        self.params = params

    @abc.abstractmethod
    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        """The script for ``seed``: a function of the seed and the params alone; in a ``series``, its
        durable facts' values come from the series instead (the rest is the session's own)."""


_REGISTRY: Registry[type[ScenarioFamily]] = Registry("scenario", ENTRY_POINT_GROUP)
F = TypeVar("F", bound=type[ScenarioFamily])


def register(name: str) -> Callable[[F], F]:
    """Class decorator: register a scenario family under ``name`` (twice is an error), its ``tools``
    first (`harness.core.tools.register_tools`), so a family whose tools are refused (another contract
    under a registered name, a near-duplicate name) is not registered either."""
    add_family = _REGISTRY.register(name)

    def decorate(cls: F) -> F:
        register_tools(cls.tools, where=f"scenario {name}")
        add_family(cls)
        return cls

    return decorate


#: The family registered under a name; KeyError listing the known names otherwise.
get = _REGISTRY.get
names = _REGISTRY.names


def generate(name: str, seed: int, *, series: Series | None = None, **params: Any) -> SessionScript:
    """The script of family ``name`` for ``seed`` (in ``series`` when given): the same on every machine.
    Bad params raise pydantic.ValidationError naming the field; an unknown name raises KeyError."""
    cls = get(name)
    family = cls(cls.Params(**params))
    return family.generate(seed) if series is None else family.generate(seed, series)


def script_summary(script: SessionScript) -> dict[str, Any]:
    """Size figures of a script: steps, facts, decoys, and payload bytes and real tokens."""
    count = default_tokenizer().count
    payloads = [s.payload for s in script.steps]
    sizes = sorted(len(p.encode("utf-8")) for p in payloads)
    return {
        "scenario": script.scenario,
        "seed": script.seed,
        "steps": len(script.steps),
        "tools": len({s.tool for s in script.steps}),
        "faults": sum(1 for s in script.steps if s.fault is not None),
        "facts": len(script.facts),
        "decoys": sum(len(v) for v in script.decoys.values()),
        "final_facts": len(script.final_facts),
        "agents": len(script.agents or []) or 1,
        "payload_bytes_total": sum(sizes),
        "payload_bytes_median": sizes[len(sizes) // 2] if sizes else 0,
        "payload_bytes_max": sizes[-1] if sizes else 0,
        "payload_tokens_total": sum(count(p) for p in payloads),
    }
