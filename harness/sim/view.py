"""What the mock agent may read (docs/model.md v3, the strict rule): the context it is sent, the task,
the profile and the shared draws. Not the script's step order, not which call produced which fact,
not the true values, not the harness's scan of a payload it cannot see.

Three types carry that:

- `Plan`: the script as a plan of what a competent agent does, stripped of everything it could not
  know: each step's tool and argument templates, the fact keys it needs and finds (keys, never
  values), its fallback and shortcut calls; the final facts; where each fact is found (`Plan.finder`:
  the agent acts on that only with a visible trace of that step, `ContextView.traced`). The step ids
  are names of plan entries, not a pointer.
- `Reader`: reads a fact's value out of a message that holds it (the value in its text, a form of it,
  or a summary's line stating it). It never answers for a message that does not hold the fact, so
  the truth reaches the agent only through visible text.
- `ContextView`: the window's messages and the prompt's length; which facts are visible and where;
  which plan steps a visible message shows as done. It has no payload store (an offloaded output is
  seen only through its stub and what a retrieve returns).
"""

from __future__ import annotations

import json
from collections.abc import KeysView, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mypy_extensions import mypyc_attr

from harness.build import pickle_frozen_by_fields
from harness.core.context import Window
from harness.core.messages import Message, ToolUse, block_text
from harness.core.stubs import CALL_PREFIX, parse_stub
from harness.sim.fact_lines import parse_fact_lines
from scenarios.base import LITERAL_PREFIX, Lookup, SessionScript, Step

__all__ = ["ContextView", "Plan", "PlanStep", "Reader", "hole", "label"]


#: A summary's line recording a call it saw done: this, then the call as a message shows it.
RECORD_PREFIX = "- ran "


def label(key: str) -> str:
    """The words an agent writes for a fact in its notes and summaries (``bug line`` for ``bug_line``)."""
    return key.replace("_", " ")


@dataclass(frozen=True, slots=True)
class PlanStep:
    """One step of the plan: the call a competent agent makes, as templates (no values)."""

    id: str
    tool: str
    #: arg -> a fact key, or ``"lit:<value>"`` for a literal.
    args: Mapping[str, str]
    arg_types: Mapping[str, str]
    needs: tuple[str, ...]
    #: Fact keys its result shows (keys only).
    finds: tuple[str, ...]
    #: A dangerous call that completes the step without its facts: (tool, literal args).
    shortcut: tuple[str, Mapping[str, Any]] | None = None
    fallback: PlanStep | None = None
    #: arg -> the fact keys a literal argument writes inside it (a query naming the namespace): in the
    #: plan the literal holds `hole` marks instead, and the call needs those facts like any other.
    embedded: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def fact_args(self) -> dict[str, str]:
        return {arg: ref for arg, ref in self.args.items() if not ref.startswith(LITERAL_PREFIX)}

    @property
    def all_needs(self) -> tuple[str, ...]:
        """Its needs and the facts its literal arguments write."""
        extra = sorted({key for keys in self.embedded.values() for key in keys} - set(self.needs))
        return self.needs + tuple(extra)


def hole(key: str) -> str:
    """The mark that stands for fact ``key``'s value inside a plan step's literal argument."""
    return f"\x00{key}\x00"


def _holed(args: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """A call's literal arguments with each fact value in them replaced by its `hole`."""
    out: dict[str, Any] = {}
    for arg, value in args.items():
        if isinstance(value, str):
            for key, fact in sorted(values.items(), key=lambda kv: -len(kv[1])):
                value = value.replace(fact, hole(key))
        out[arg] = value
    return out


def _plan_step(step: Step, values: Mapping[str, str]) -> PlanStep:
    fallback = step.fault.fallback if step.fault is not None else None
    args = dict(step.args)
    embedded: dict[str, tuple[str, ...]] = {}
    for arg, template in step.args.items():
        if not template.startswith(LITERAL_PREFIX):
            continue
        # Longest values first, so a value that holds another (none do, by the generators' rule) wins.
        keys = tuple(key for key, value in sorted(values.items(), key=lambda kv: -len(kv[1])) if value in template)
        for key in keys:
            template = template.replace(values[key], hole(key))
        if keys:
            args[arg], embedded[arg] = template, keys
    return PlanStep(
        id=step.id, tool=step.tool, args=dict(args),
        arg_types=dict(dict(step.arg_types)), needs=tuple(step.needs), finds=tuple(sorted(step.produces)),
        shortcut=(step.shortcut.tool, dict(_holed(step.shortcut.args, values))) if step.shortcut else None,
        fallback=_plan_step(fallback, values) if fallback is not None else None,
        embedded=dict(embedded),
    )


@dataclass(frozen=True, slots=True)
class Plan:
    """The script as the agent's plan (see the module docstring). Its mappings are plain dicts that
    nothing changes (a replay's saved state pickles them)."""

    steps: tuple[PlanStep, ...]
    final_facts: tuple[str, ...]
    #: key -> how finding it works when its holder is a tool output (docs/model.md v3 change 5).
    lookups: Mapping[str, Lookup]
    #: key -> the shape of its values (``pod`` for ``pod-xxxx``): what an invented value looks like.
    shapes: Mapping[str, str]
    #: key -> the planted wrong values of its shape (the agent cannot tell them from the value).
    decoys: Mapping[str, frozenset[str]]
    #: key -> the plan step whose result shows it (task facts have none).
    finders: Mapping[str, str]
    #: Every tool name the plan's calls use.
    tool_names: tuple[str, ...]
    #: label -> key, to read a summary's or note's fact lines back.
    labels: Mapping[str, str]
    #: step id -> its plan step (a fallback's id -> the fallback), and fallback id -> the step it replaces:
    #: looked up every turn, so made once rather than searched for.
    by_id: Mapping[str, PlanStep] = field(default_factory=dict, compare=False, repr=False)
    primaries: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        by_id: dict[str, PlanStep] = {}
        primaries: dict[str, str] = {}
        for step in self.steps:  # the first match wins, as a search in plan order finds it
            by_id.setdefault(step.id, step)
            if step.fallback is not None:
                by_id.setdefault(step.fallback.id, step.fallback)
                primaries.setdefault(step.fallback.id, step.id)
        object.__setattr__(self, "by_id", by_id)
        object.__setattr__(self, "primaries", primaries)

    @classmethod
    def of(cls, script: SessionScript) -> Plan:
        values = script.fact_values()
        return cls(
            steps=tuple(_plan_step(step, values) for step in script.steps),
            final_facts=tuple(script.final_facts),
            lookups=dict(script.lookups()),
            shapes=dict({key: fact.value.rsplit("-", 1)[0] if "-" in fact.value else key
                                     for key, fact in script.facts.items()}),
            decoys=dict({key: frozenset(values) for key, values in script.decoys.items()}),
            finders=dict({key: step.id for key, step in script.finders().items()}),
            tool_names=tuple(script.tool_names()),
            labels=dict({label(key): key for key in script.facts}),
        )

    def step(self, step_id: str) -> PlanStep:
        return self.by_id[step_id]

    def primary(self, step_id: str) -> str:
        """The plan step ``step_id`` stands for (a fallback stands for the step it replaces)."""
        return self.primaries.get(step_id, step_id)


@mypyc_attr(native_class=False)  # pickled whole (`Replay.save`): see harness/build.py
class Reader:
    """Reads fact values out of messages that hold them (see the module docstring)."""

    __slots__ = ("_labels", "_values")

    def __init__(self, script: SessionScript) -> None:
        self._values = script.fact_values()
        self._labels = {label(key): key for key in script.facts}

    def value_in(self, message: Message, key: str) -> str | None:
        """The value ``message`` states for ``key``: a summary's fact line for it when it has one (which
        may be wrong, whatever else its text holds), else the value its text holds (or a form of it);
        None when it states none."""
        if message.kind == "summary":
            claimed = self.claims(message).get(key)
            if claimed is not None:
                return claimed
        if key in message.facts:
            return self._values.get(key)
        return None

    def claims(self, message: Message) -> dict[str, str]:
        """key -> value of the fact lines a summary writes (``- bug line: ...``)."""
        return {self._labels[name]: value for name, value in parse_fact_lines(message.text).items()
                if name in self._labels}


#: How a text line names a call: a summary's record of the calls done, a stub's call line.
_CALL_LINES = (RECORD_PREFIX, CALL_PREFIX)


class ContextView:
    """One call's context as the agent reads it (see the module docstring)."""

    __slots__ = ("_reader", "messages", "prompt_tokens", "system_tokens")

    def __init__(self, window: Window, system_tokens: int, reader: Reader) -> None:
        self.messages = window
        self.system_tokens = system_tokens
        self.prompt_tokens = system_tokens + window.tokens
        self._reader = reader

    @property
    def raw_tokens(self) -> int:
        return self.messages.raw_tokens

    # Facts ---------------------------------------------------------------------------------------
    def scanned(self, key: str) -> bool:
        """Whether a visible message's text holds the fact's value (or a form of it)."""
        return self.messages.fact_counts.get(key, 0) > 0

    def holder(self, key: str) -> tuple[int, Message] | None:
        """(prompt tokens before it, the newest visible message that states ``key``), or None."""
        after = 0
        for m in reversed(self.messages):
            if key in m.facts or (m.kind == "summary" and self._reader.value_in(m, key) is not None):
                return self.prompt_tokens - after - m.tokens, m
            after += m.tokens
        return None

    def visible(self, key: str) -> bool:
        return self.scanned(key) or any(m.kind == "summary" and self._reader.value_in(m, key) is not None
                                        for m in self.messages)

    def value(self, message: Message, key: str) -> str | None:
        return self._reader.value_in(message, key)

    def values_in(self, messages: Sequence[Message], key: str) -> str | None:
        """The value the newest of ``messages`` stating ``key`` states."""
        for m in reversed(messages):
            value = self._reader.value_in(m, key)
            if value is not None:
                return value
        return None

    def decoys_seen(self, candidates: frozenset[str]) -> set[str]:
        """The decoys among ``candidates`` that a visible message states (the window's running count)."""
        counts = self.messages.decoy_counts
        return {d for d in candidates if d in counts}

    # Progress --------------------------------------------------------------------------------------
    def traced(self) -> KeysView[str]:
        """The plan steps a visible message shows done: the step's call with its arguments, or a note or
        summary line that names it (`harness.core.messages.Message.records`). A live view of the window's
        running count of them: reading it costs nothing per message."""
        return self.messages.record_counts.keys()

    def visible_call(self, step_ids: Sequence[str], tools: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
        """(tool, args) of the newest visible call of one of ``step_ids`` made with one of ``tools`` (the
        step's own tool, not a shortcut that stands in for it), as the context shows it: the call
        itself, or the line of a summary's record or of a stub that writes it as ``tool {json}``."""
        wanted = set(step_ids)
        for m in reversed(self.messages):
            if not (m.records & wanted):
                continue
            for b in m.blocks:
                if isinstance(b, ToolUse) and b.name in tools and m.meter.scanner.scan_records(block_text(b)) & wanted:
                    return b.name, dict(b.input)
            for line in m.text.splitlines():
                prefix = next((p for p in _CALL_LINES if line.startswith(p)), None)
                if prefix is None or not m.meter.scanner.scan_records(line) & wanted:
                    continue
                name, _, rest = line[len(prefix):].partition(" ")
                if name in tools and rest.startswith("{"):
                    try:
                        args = json.loads(rest)
                    except ValueError:
                        continue
                    if isinstance(args, dict):
                        return name, args
        return None

    def stub_handle(self, step_ids: Sequence[str], dead: Mapping[int, Message]) -> str | None:
        """The handle of the newest visible stub of one of ``step_ids``'s outputs (its ``call:`` line names
        the step's call), unless a retrieve of it failed (``dead``, by message id)."""
        wanted = set(step_ids)
        for m in reversed(self.messages):
            if m.kind == "handle" and m.records & wanted and id(m) not in dead:
                for b in m.blocks:
                    stub = parse_stub(getattr(b, "content", ""))
                    if stub is not None:
                        return stub.handle
        return None


# Compiled (setup.py), a frozen dataclass cannot restore itself from a pickle: see `harness.build`.
pickle_frozen_by_fields(globals())
