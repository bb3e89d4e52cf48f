"""The calibrated mock model (docs/model.md 2-4): an ideal agent with noise that acts only on what
is really visible in the context it is given.

The rule of v3: the policy reads only the context it is sent, the task, the profile and the shared
draws (`harness.sim.view`: a `Plan` without values, a `ContextView` without the payload store, values
read out of visible messages). It picks its next step from what its context shows it has done, fetches
a missing fact again only from a visible trace of its source (else it re-explores), and invents a
value for a visibly missing fact only with ``p_confabulate``. Recall of a visible value follows the
profile's length and position curves. Tools and the grader check values; the model never does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mypy_extensions import mypyc_attr

from harness.build import pickle_frozen_by_fields
from harness.core.context import Context
from harness.core.crn import u
from harness.core.messages import KINDS, ErrorInfo, Message, Text, ToolUse, parse_error
from harness.core.stubs import parse_stub
from harness.core.tokens import Tokenizer, default_tokenizer
from harness.core.tools import required_args
from harness.sim.fact_lines import fact_line, fact_lines
from harness.sim.profiles import Profile
from harness.sim.summaries import summary_text
from harness.sim.view import ContextView, Plan, PlanStep, Reader, hole, label
from scenarios.base import LITERAL_PREFIX, Lookup, Step
from scenarios.draws import BASE32

#: The mock model's version (docs/model.md): part of every simulated run's config hash, so a run directory
#: written by another version is refused instead of resumed into a table that mixes two models.
MOCK_MODEL_VERSION = 3

MalformedKind = Literal["missing_field", "wrong_type", "invalid_json", "text_only", "name_variant"]
#: Shares of malformed-call kinds (J, docs/model.md 3.1).
MALFORMED_SHARES: tuple[tuple[MalformedKind, float], ...] = (
    ("missing_field", 0.45), ("wrong_type", 0.30), ("invalid_json", 0.15), ("text_only", 0.10),
)
#: Share of ``name_variant`` among the malformed calls to a tool whose name has a spelling to swap
#: (J): the tool's registered name written with ``_`` for ``-`` (``kubectl_logs`` for ``kubectl-logs``),
#: or, in a session whose tool list mixes the two conventions, ``-`` for ``_``. No source measures
#: the rate; that users of strands-agents, gemini-cli and trae-agent met it shows that it happens.
#: The other kinds share the rest in their `MALFORMED_SHARES` ratios (docs/tool-names.md).
#: A call to a name with nothing to swap draws from `MALFORMED_SHARES` alone, unchanged.
NAME_VARIANT_SHARE = 0.25
#: The kinds drawn for a call whose tool name has a variant spelling.
MALFORMED_SHARES_WITH_VARIANT: tuple[tuple[MalformedKind, float], ...] = (
    ("name_variant", NAME_VARIANT_SHARE),
    *((kind, share * (1 - NAME_VARIANT_SHARE)) for kind, share in MALFORMED_SHARES),
)
RAW_KEY = "_raw"
#: The kinds of message that hold a step's tool result.
_RESULT_KINDS = ("observation", "error", "handle")
_FILLER = (" I weigh what the last outputs showed, which facts the next call needs, and whether any "
           "earlier finding changes the plan before acting.")


def literal_value(template: str, json_type: str) -> Any:
    """A literal arg template (``lit:...``) as the JSON value its type says."""
    raw = template[len(LITERAL_PREFIX):]
    if json_type == "integer":
        return int(raw)
    if json_type == "boolean":
        return raw == "true"
    if json_type == "array":
        return json.loads(raw) if raw.startswith("[") else [raw]
    return raw


def concrete_args(step: Step | PlanStep, values: Mapping[str, str]) -> dict[str, Any]:
    """The call an ideal agent makes for ``step`` given the fact values it resolved."""
    out: dict[str, Any] = {}
    embedded = step.embedded if isinstance(step, PlanStep) else {}
    for arg, template in step.args.items():
        json_type = step.arg_types.get(arg)
        if template.startswith(LITERAL_PREFIX):
            for key in embedded.get(arg, ()):
                template = template.replace(hole(key), values[key])
            out[arg] = literal_value(template, json_type or "string")
        elif json_type == "array":
            out[arg] = [values[template]]  # a fact names one item of a list argument (e.g. one column)
        elif json_type == "integer":
            out[arg] = line_of(values[template])  # a ``file:line`` fact names a line (code_repair's edit)
        else:
            out[arg] = values[template]
    return out


def line_of(location: str) -> int | str:
    """The line number of a ``file:line`` value; a value of another shape (a wrong one the agent
    invented) as it is, which the tool then refuses."""
    tail = location.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else location


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool: str
    args: dict[str, Any]
    #: step | retrieve | refetch | shortcut | resend | fix
    purpose: str
    #: For a re-call: the step whose output it fetches again.
    target_step: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What one agent call produced."""

    kind: Literal["call", "text", "final"]
    call: ToolCall | None
    text: str
    branch: str
    malformed: MalformedKind | Literal[""] = ""
    switch_to_fallback: bool = False
    trace: tuple[dict[str, Any], ...] = ()
    #: Re-exploring: the plan step the agent goes back to (a fact it needs is gone with every trace of
    #: where it came from, docs/model.md v3 change 2); the runtime puts the agent on it and asks again.
    switch_to: str | None = None


@dataclass(frozen=True, slots=True)
class Mechanisms:
    """The structural v3 mechanisms, each of which can be switched off to measure what it moves (the
    validation's ablation; a run always has all of them on). Off, each is the v2 rule it replaced."""

    #: The next step is read from the context (the last step whose call is visible); off: the harness's
    #: step order, whatever the context shows.
    context_progress: bool = True
    #: Fetching a missing fact again needs a visible trace of its source (else re-exploring); off: the
    #: agent knows which call produced it and re-issues that call.
    visible_sources: bool = True


@dataclass(slots=True)
class Pointer:
    """The step an agent is working on (chosen by the agent from its context, `MockModel.next_step`,
    or a fallback or re-exploration it moved to) and the attempt on it: the index of the shared draws."""

    step: Step | None
    attempt: int = 0

    @property
    def step_id(self) -> str:
        return self.step.id if self.step is not None else "final"


@dataclass(slots=True)
class _Resolution:
    value: str | None = None
    action: ToolCall | None = None
    branch: str = ""
    switch_to: str | None = None


def name_variant(tool: str, *, mixed_conventions: bool) -> str | None:
    """The misspelling of ``tool`` a model makes in a ``name_variant`` call, or None when it has none:
    ``-`` written ``_`` (``kubectl-logs`` -> ``kubectl_logs``); or, only when the session's tool list
    mixes both conventions, ``_`` written ``-`` (``kubectl_get`` -> ``kubectl-get``). A tool list with
    no ``-`` has no variant, so such sessions draw exactly as before the kind existed."""
    if "-" in tool:
        return tool.replace("-", "_")
    if mixed_conventions and "_" in tool:
        return tool.replace("_", "-")
    return None


@mypyc_attr(native_class=False)  # pickled whole (`Replay.save`): see harness/build.py
class MockModel:
    """The policy of docs/model.md 2 and the summarizer of section 4, for one session.

    It reads only what `harness.sim.view` gives it (the strict rule of v3): the `Plan` (the script
    without values or payloads), the context of each call as a `ContextView`, the profile and the
    shared draws. Values come out of visible messages through the view's `Reader`.

    Malformed calls (docs/model.md 3.1) come in the spec's four kinds and a fifth, ``name_variant``:
    the call is well formed but names the tool with ``-`` and ``_`` swapped. It is drawn, with the
    (J) share `NAME_VARIANT_SHARE`, only for a tool whose name has a variant (`name_variant`); the
    tool list the model reads that from is part of its system prompt.
    """

    def __init__(self, plan: Plan, reader: Reader, profile: Profile, *, seed: int, system_tokens: int,
                 tokenizer: Tokenizer | None = None, mechanisms: Mechanisms | None = None) -> None:
        self.plan = plan
        self.reader = reader
        self.profile = profile
        self.seed = seed
        self.system_tokens = system_tokens
        self.mechanisms = mechanisms or Mechanisms()
        #: Steps whose current fresh attempt follows a nudge: it skips recall and avoids the last values.
        self._following_nudge: set[str] = set()
        self._thoughts: dict[tuple[str, str], str] = {}
        #: Stub messages whose handle a retrieve answered with an error (an evicted or unknown reference),
        #: by id, the message kept so its id stays its own: the agent read the error and does not page
        #: through that stub again. A stub that arrives later (the output fetched and offloaded anew) is
        #: another message, so it is paged as usual.
        self.dead_stubs: dict[int, Message] = {}
        self.count_tokens = (tokenizer or default_tokenizer()).count
        #: Durable facts whose ``- key: value`` line is in the memory block of the system prompt (empty:
        #: memory off). The value is what the file says, which may be stale.
        self.memory: dict[str, str] = {}
        #: The session's tool list spells some names with ``-``: either convention may be confused.
        self.mixed_conventions = any("-" in tool for tool in plan.tool_names)
        #: The plan order `next_step` was last given and each step's place in it (the last place of a
        #: repeated id), kept while the caller passes the same sequence.
        self._order: Sequence[str] | None = None
        self._places: dict[str, int] = {}

    # Reading the context ---------------------------------------------------------------------------
    def view(self, ctx: Context) -> ContextView:
        """The context of one call as the agent reads it (its messages; never the payload store)."""
        return ContextView(ctx.messages, self.system_tokens, self.reader)

    def prompt_tokens(self, ctx: Context) -> int:
        return self.system_tokens + ctx.tokens

    def refused(self, ctx: Context, handle: str) -> None:
        """A retrieve of ``handle`` failed: the stubs of it now in ``ctx`` are not paged through again."""
        for m in ctx.messages:
            if m.kind == "handle" and any((stub := parse_stub(getattr(b, "content", ""))) is not None
                                          and stub.handle == handle for b in m.blocks):
                self.dead_stubs[id(m)] = m

    def _last_result(self, view: ContextView, step_id: str) -> Message | None:
        if not view.messages.holds("user", step_id, _RESULT_KINDS):
            return None
        for m in reversed(view.messages):
            if m.role == "user" and m.step_id == step_id and m.kind in _RESULT_KINDS:
                return m
            if m.role == "user" and m.kind in ("task",):
                break
        return None

    def _last_action(self, view: ContextView, step_id: str) -> ToolUse | None:
        if not view.messages.holds("assistant", step_id, KINDS):
            return None
        for m in reversed(view.messages):
            if m.role == "assistant" and m.step_id == step_id:
                for b in m.blocks:
                    if isinstance(b, ToolUse):
                        return b
                return None
        return None

    def _nudge_visible(self, view: ContextView, step_id: str) -> bool:
        window = view.messages
        if not (window.holds("user", step_id, ("nudge",)) or window.holds("assistant", step_id, ("nudge",))):
            return False
        return any(m.kind == "nudge" and m.step_id == step_id for m in reversed(view.messages))

    # Progress (docs/model.md v3 change 1) ------------------------------------------------------------
    def next_step(self, view: ContextView, step_ids: Sequence[str]) -> str | None:
        """The step the agent takes up next, read from its context: the one after the last of
        ``step_ids`` (its plan, in order) whose call a visible message shows; the first when none does
        (an agent that sees no sign of its work starts over). None: every step is done (answer)."""
        index = self.next_index(view, step_ids)
        return step_ids[index] if index < len(step_ids) else None

    def next_index(self, view: ContextView, step_ids: Sequence[str]) -> int:
        """`next_step` as its place in ``step_ids`` (``len(step_ids)``: every step is done). Each turn costs
        the traced steps, not the plan: the places are made once per plan order given."""
        if step_ids is not self._order:
            places = {s: i for i, s in enumerate(step_ids)}
            # A fallback's call shows the step it replaces done: it takes that step's place (and only that).
            read = dict(places)
            for fallback, primary in self.plan.primaries.items():
                if primary in places:
                    read[fallback] = places[primary]
                else:
                    read.pop(fallback, None)
            self._order, self._places = step_ids, read
        places = self._places
        # Over the steps the window shows done (its running count), not over the plan: a turn costs what
        # is visible, and a long plan's unreached steps cost nothing.
        return max([places[step] for step in view.traced() if step in places], default=-1) + 1

    # Drawing ---------------------------------------------------------------------------------------
    def u(self, purpose: str, step_id: str, attempt: int, *sub: str) -> float:
        return u(self.seed, purpose, step_id, attempt, *sub)

    def thought(self, step_id: str, branch: str, tool: str) -> str:
        """A fixed text per (step, branch), padded to the profile's thought length: real thoughts vary,
        but the loop detector compares thoughts, so repeats must read the same."""
        key = (step_id, branch + "|" + tool)
        text = self._thoughts.get(key)
        if text is None:
            text = f"Step {step_id}: {branch} via {tool}."
            while self.count_tokens(text) < self.profile.thought_tokens:
                text += _FILLER
            self._thoughts[key] = text
        return text

    def notes(self, view: ContextView) -> str:
        """What the agent's reasoning restates of the output it just read (docs/model.md v3 change 3):
        each fact that output shows first, with probability ``p_note`` (a draw per output step and key,
        shared by every strategy). The lines are the agent's own text, so masking keeps them."""
        if not view.messages or self.profile.p_note <= 0:
            return ""
        last = view.messages[-1]
        if last.role != "user" or last.kind != "observation" or not last.facts:
            return ""
        counts = view.messages.fact_counts
        step = last.step_id or ""
        lines = []
        for key in sorted(last.facts):
            if counts.get(key, 0) == 1 and self.u("note", step, 0, key) < self.profile.p_note:
                value = view.value(last, key)
                if value is not None:
                    lines.append(fact_line(label(key), value))
        return ("\nNoted from that output:\n" + "\n".join(lines)) if lines else ""

    # Resolving facts (docs/model.md 2.2) ---------------------------------------------------------------
    def banned(self, view: ContextView, step_id: str) -> set[str]:
        """Values this step may not send again (docs/model.md 2.2): a value one of its calls
        sent for a fact argument that the visible error result of that call names verbatim, whether the
        error is plain text ("pod 'api-7f9c' not found") or structured; and, from a structured error,
        the value sent for the ``bad_arg`` it names. After a followed nudge, also the values of the
        step's last call (the nudge asks for a change of approach: a new value, 2.3)."""
        fact_args = self._fact_args(step_id)
        out: set[str] = set()
        messages = view.messages
        for i in range(1, len(messages)):
            m = messages[i]
            if m.step_id != step_id or m.error is None:
                continue
            text = m.text
            for b in messages[i - 1].blocks:
                if not isinstance(b, ToolUse):
                    continue
                for arg, value in b.input.items():
                    named = m.error.structured and m.error.bad_arg == arg
                    if named or (arg in fact_args and isinstance(value, str) and value in text):
                        out.add(str(value))
        if step_id in self._following_nudge:
            last = self._last_action(view, step_id)
            if last is not None:
                out |= {str(v) for arg, v in last.input.items() if arg in fact_args}
        return out

    def _fact_args(self, step_id: str) -> set[str]:
        """The arguments of the step (or fallback) ``step_id`` that carry fact values."""
        try:
            return set(self.plan.step(step_id).fact_args())
        except KeyError:  # "final" and "handoff" make no tool call
            return set()

    def _wrong_value(self, view: ContextView, step_id: str, key: str) -> str:
        """A value that is not the fact's: a visible decoy of its shape, else an invented one of its shape.
        (The agent cannot tell either from the value; the one it had, if any, was not recalled.)"""
        banned = self.banned(view, step_id)
        known = self.values_known(view, key)
        decoys = sorted(view.decoys_seen(self.plan.decoys.get(key, frozenset())) - banned - known)
        pick = self.u("wrong", step_id, 0, key, str(len(banned)))
        if decoys:
            return decoys[min(int(pick * len(decoys)), len(decoys) - 1)]
        shape = self.plan.shapes.get(key, key)
        n = 0
        while True:
            word = int(self.u("madeup", step_id, 0, key, str(len(banned)), str(n)) * (1 << 50))
            suffix = "".join(BASE32[(word >> (5 * i)) & 31] for i in range(4))
            value = f"{shape}-{suffix}"
            if value not in banned and value not in known:
                return value
            n += 1

    def values_known(self, view: ContextView, key: str) -> set[str]:
        """The values the context states for ``key`` (a wrong value is drawn from outside them)."""
        holder = view.holder(key)
        if holder is None:
            return set()
        value = view.value(holder[1], key)
        return {value} if value is not None else set()

    def _recall(self, view: ContextView, key: str, L: int, step_id: str, attempt: int
                ) -> tuple[str | None, dict[str, Any]]:
        """The recall draw of a visible key (docs/model.md 2.1): ``p_recall(L, x)`` at the middle ``x``
        of the newest message stating it, with the look-up kind of that holder (v3 change 5): literal
        where the holder states the value beside its label (the agent's own note or call, a summary
        line, the task), else the fact's kind in a tool output. Returns the value recalled (the
        holder's, which a summary may have misstated) or None, and the trace fields."""
        holder = view.holder(key)
        assert holder is not None
        before, m = holder
        x = (before + m.tokens / 2) / L
        lookup: Lookup = "literal" if m.role == "assistant" or m.kind in ("summary", "task") \
            else self.plan.lookups.get(key, "literal")
        p = self.profile.p_recall(L, x, lookup)
        draw = self.u("recall", step_id, attempt, key)
        value = view.value(m, key) if draw < p else None
        return value, {"x": round(x, 4), "p": round(p, 4), "u": round(draw, 4), "lookup": lookup}

    def _resolve(self, view: ContextView, step: PlanStep | None, attempt: int, key: str, depth: int, L: int,
                 trace: list[dict[str, Any]]) -> _Resolution:
        s, a = (step.id if step is not None else "final"), attempt
        entry: dict[str, Any] = {"key": key, "depth": depth}
        visible = view.visible(key)
        entry["visible"] = visible
        if visible and s not in self._following_nudge:
            value, drawn = self._recall(view, key, L, s, a)
            entry |= drawn
            if value is not None:
                entry["branch"] = "recall"
                trace.append(entry)
                return _Resolution(value=value, branch="recall")
        remembered = self.memory.get(key)
        if remembered is not None and remembered not in self.banned(view, s):
            # Known from the memory block (always in the prompt); an error that named the value bans it,
            # and the agent then looks for it as if it had no memory.
            entry["branch"] = "memory"
            trace.append(entry)
            return _Resolution(value=remembered, branch="memory")
        if not visible:
            found = self._find_again(view, s, a, key, depth, L, trace, entry)
            if found is not None:
                return found
        if step is not None and step.shortcut is not None and self.u("shortcut", s, a) < self.profile.p_shortcut:
            entry["branch"] = "shortcut"
            trace.append(entry)
            tool, args = step.shortcut
            return _Resolution(action=ToolCall(tool, self._filled(view, s, args), "shortcut"), branch="shortcut")
        entry["branch"] = "wrong"
        trace.append(entry)
        return _Resolution(value=self._wrong_value(view, s, key), branch="wrong")

    def _filled(self, view: ContextView, s: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """A shortcut's arguments with each fact written in them as the context states it (invented when
        it does not: a destructive call made in haste, no recall drawn)."""
        out: dict[str, Any] = {}
        for arg, value in args.items():
            if isinstance(value, str) and "\x00" in value:
                for key in value.split("\x00")[1::2]:
                    holder = view.holder(key)
                    stated = view.value(holder[1], key) if holder is not None else None
                    value = value.replace(hole(key), stated if stated is not None else self._wrong_value(view, s, key))
            out[arg] = value
        return out

    def _find_again(self, view: ContextView, s: str, a: int, key: str, depth: int, L: int,
                    trace: list[dict[str, Any]], entry: dict[str, Any]) -> _Resolution | None:
        """A fact visibly missing (docs/model.md v3 changes 2 and 4): with ``p_confabulate`` the agent
        invents it (None: the caller draws the wrong value); otherwise it pages back the stub of the
        output that held it, re-issues the call it can see that produced it, or, with no trace of the
        source left, goes back to the step that finds it (re-exploring)."""
        if self.u("confabulate", s, a, key) < self.profile.p_confabulate:
            return None
        finder = self.plan.finders.get(key)
        if finder is None:  # a task fact: there is nowhere to fetch it from
            return None
        sources = [finder] + ([fb.id] if (fb := self.plan.step(finder).fallback) is not None else [])
        handle = view.stub_handle(sources, self.dead_stubs)
        if handle is not None:
            entry["branch"] = "retrieve"
            trace.append(entry)
            return _Resolution(action=ToolCall("retrieve_payload", self._page(view, handle), "retrieve",
                                               target_step=finder), branch="retrieve")
        if not self.mechanisms.visible_sources:
            return self._refetch_known(view, s, a, finder, key, depth, L, trace, entry)
        finder_step = self.plan.step(finder)
        tools = [finder_step.tool] + ([finder_step.fallback.tool] if finder_step.fallback is not None else [])
        seen = view.visible_call(sources, tools)
        if seen is not None:
            entry["branch"] = "refetch"
            trace.append(entry)
            return _Resolution(action=ToolCall(seen[0], seen[1], "refetch", target_step=finder), branch="refetch")
        entry["branch"] = "reexplore"
        trace.append(entry)
        return _Resolution(branch="reexplore", switch_to=finder)

    def _refetch_known(self, view: ContextView, s: str, a: int, finder: str, key: str, depth: int, L: int,
                       trace: list[dict[str, Any]], entry: dict[str, Any]) -> _Resolution | None:
        """`Mechanisms.visible_sources` off (the v2 rule): the agent re-issues the call that produced the
        fact, its arguments resolved like any call's, whether or not a trace of it is visible."""
        if depth >= 2:
            return None
        entry["branch"] = "refetch"
        trace.append(entry)
        producer = self.plan.step(finder)
        values: dict[str, str] = {}
        for ref in producer.all_needs:
            inner = self._resolve(view, producer, a, ref, depth + 1, L, trace)
            if inner.action is not None or inner.switch_to is not None:
                return inner
            assert inner.value is not None
            values[ref] = inner.value
        return _Resolution(action=ToolCall(producer.tool, concrete_args(producer, values), "refetch",
                                           target_step=producer.id), branch="refetch")

    def _page(self, view: ContextView, handle: str) -> dict[str, Any]:
        """The retrieve of an offloaded output: the page after the last one the context shows of it
        (a page's hint names the next offset), or the first."""
        offset = 0
        marker = f'retrieve_payload(handle="{handle}", offset='
        for m in reversed(view.messages):
            text = m.text
            at = text.rfind(marker)
            if at >= 0 and m.role == "user":
                digits = text[at + len(marker):].split(")", 1)[0]
                if digits.isdigit():
                    offset = int(digits)
                break
        return {"handle": handle, "offset": offset} if offset else {"handle": handle}

    # The turn (docs/model.md 2.3) --------------------------------------------------------------------
    def decide(self, view: ContextView, step_id: str | None, attempt: int) -> Decision:
        """The agent's call on plan step ``step_id`` (None: the final answer), attempt ``attempt``."""
        if step_id is None:
            return self._final(view, attempt)
        step = self.plan.step(step_id)
        s, a = step_id, attempt
        last = self._last_result(view, s)
        info: ErrorInfo | None = None
        if last is not None and last.kind == "error":
            info = last.error if last.error is not None else parse_error(last.text)
        if info is not None and info.structured and info.error_class == "contract":
            if self.u("fix", s, a) < self.profile.p_fix:
                return self._fresh(view, step, a, branch="fix", syntax=False)
            return self._fresh(view, step, a, branch="refix", syntax=True, force_malformed=True)
        if info is not None and info.structured and info.error_class == "engineering":
            if info.fallback and step.fallback is not None:
                return Decision("call", None, "", "fallback", switch_to_fallback=True)
            if info.retryable:
                resent = self._resend(view, s, "retry")
                if resent is not None:
                    return resent
            # A bad_arg error bans that value while it is visible (see `banned`): a fresh attempt.
            return self._fresh(view, step, a, branch="after_error")
        if info is not None:  # plain text error
            if self._nudge_visible(view, s) and self.u("nudge", s, a) < self.profile.p_nudge_follow:
                if step.fallback is not None:
                    return Decision("call", None, "", "nudge_fallback", switch_to_fallback=True)
                self._following_nudge.add(s)
                try:
                    return self._fresh(view, step, a, branch="nudge")
                finally:
                    self._following_nudge.discard(s)
            if self.u("repeat", s, a) < self.profile.p_repeat_error:
                resent = self._resend(view, s, "repeat")
                if resent is not None:
                    return resent
        return self._fresh(view, step, a, branch="fresh")

    def _resend(self, view: ContextView, step_id: str, branch: str) -> Decision | None:
        previous = self._last_action(view, step_id)
        if previous is None:
            return None
        thought = self._previous_thought(view, step_id)
        return Decision("call", ToolCall(previous.name, dict(previous.input), "resend"), thought, branch)

    def _previous_thought(self, view: ContextView, step_id: str) -> str:
        for m in reversed(view.messages):
            if m.role == "assistant" and m.step_id == step_id:
                return next((b.text for b in m.blocks if isinstance(b, Text)), "")
        return ""

    def _fresh(self, view: ContextView, step: PlanStep, attempt: int, *, branch: str, syntax: bool = True,
               force_malformed: bool = False) -> Decision:
        L = view.prompt_tokens
        trace: list[dict[str, Any]] = []
        values: dict[str, str] = {}
        for ref in step.all_needs:
            r = self._resolve(view, step, attempt, ref, 0, L, trace)
            if r.switch_to is not None:
                return Decision("call", None, "", "reexplore", trace=tuple(trace), switch_to=r.switch_to)
            if r.action is not None:
                return self._emit(view, step.id, attempt, r.action, r.branch, trace, syntax=True)
            assert r.value is not None
            values[ref] = r.value
        call = ToolCall(step.tool, concrete_args(step, values), "fix" if branch == "fix" else "step")
        return self._emit(view, step.id, attempt, call, branch, trace, syntax=syntax, force_malformed=force_malformed)

    def _emit(self, view: ContextView, s: str, a: int, call: ToolCall, branch: str, trace: list[dict[str, Any]], *,
              syntax: bool, force_malformed: bool = False) -> Decision:
        thought = self.thought(s, branch, call.tool) + self.notes(view)
        if syntax or force_malformed:
            L = view.prompt_tokens
            noise = view.raw_tokens / L
            if force_malformed or self.u("malformed", s, a) < self.profile.p_malformed(L, noise):
                kind = self._malformed_kind(s, a, call)
                return self._malformed(call, kind, thought, branch, trace, s, a)
        return Decision("call", call, thought, branch, trace=tuple(trace))

    def _malformed_kind(self, s: str, a: int, call: ToolCall) -> MalformedKind:
        draw = self.u("kind", s, a)
        acc = 0.0
        kind: MalformedKind = "text_only"
        swappable = name_variant(call.tool, mixed_conventions=self.mixed_conventions) is not None
        for name, share in MALFORMED_SHARES_WITH_VARIANT if swappable else MALFORMED_SHARES:
            acc += share
            if draw < acc:
                kind = name
                break
        if kind == "wrong_type" and all(isinstance(v, str) for v in call.args.values()):
            kind = "missing_field"
        if kind == "missing_field" and not (set(required_args(call.tool)) & set(call.args)):
            kind = "invalid_json"
        return kind

    def _malformed(self, call: ToolCall, kind: MalformedKind, thought: str, branch: str,
                   trace: list[dict[str, Any]], s: str, a: int) -> Decision:
        pick = self.u("badtext", s, a, kind)
        if kind == "text_only":
            text = f"{thought}\nNext I would run {call.tool} with {', '.join(sorted(call.args))} to continue."
            return Decision("text", None, text, branch, malformed=kind, trace=tuple(trace))
        args = dict(call.args)
        if kind == "name_variant":
            variant = name_variant(call.tool, mixed_conventions=self.mixed_conventions)
            assert variant is not None  # drawn only for a tool that has one
            return Decision("call", ToolCall(variant, args, call.purpose, call.target_step), thought, branch,
                            malformed=kind, trace=tuple(trace))
        if kind == "missing_field":
            present = sorted(set(required_args(call.tool)) & set(args))
            args.pop(present[min(int(pick * len(present)), len(present) - 1)])
        elif kind == "wrong_type":
            typed = sorted(k for k, v in args.items() if not isinstance(v, str))
            victim = typed[min(int(pick * len(typed)), len(typed) - 1)]
            args[victim] = {"int": "fifty", "bool": "yes", "list": "all of them"}.get(type(args[victim]).__name__,
                                                                                      "fifty")
        else:
            text = json.dumps(args, sort_keys=True)
            args = {RAW_KEY: text[: max(1, int(len(text) * (0.4 + 0.5 * pick)))] + ","}
        return Decision("call", ToolCall(call.tool, args, call.purpose, call.target_step), thought, branch,
                        malformed=kind, trace=tuple(trace))

    def _final(self, view: ContextView, attempt: int) -> Decision:
        L = view.prompt_tokens
        trace: list[dict[str, Any]] = []
        values: dict[str, str] = {}
        for key in self.plan.final_facts:
            r = self._resolve(view, None, attempt, key, 0, L, trace)
            if r.switch_to is not None:
                return Decision("call", None, "", "reexplore", trace=tuple(trace), switch_to=r.switch_to)
            if r.action is not None:
                return self._emit(view, "final", attempt, r.action, r.branch, trace, syntax=True)
            assert r.value is not None
            values[key] = r.value
        lines = fact_lines(values)
        return Decision("final", None, f"FINAL ANSWER\n{lines}" if lines else "FINAL ANSWER\nThe patch is submitted.",
                        "final", trace=tuple(trace))

    def handover(self, view: ContextView, carries: Sequence[str]) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """The values a hand-over message states: each carried key recalled from the context, or a
        wrong value when it is not (no tool calls during a hand-over, J)."""
        L = view.prompt_tokens
        trace: list[dict[str, Any]] = []
        values: dict[str, str] = {}
        for key in carries:
            entry: dict[str, Any] = {"key": key}
            value: str | None = None
            if view.visible(key):
                value, drawn = self._recall(view, key, L, "handoff", 0)
                entry |= {"visible": True} | drawn
            entry["branch"] = "recall" if value is not None else "wrong"
            values[key] = value if value is not None else self._wrong_value(view, "handoff", key)
            trace.append(entry)
        return values, trace

    # Summaries (docs/model.md 4, v3 change 8) --------------------------------------------------------------
    def summary_text(self, view: ContextView, messages: Sequence[Message], at_step: str, n: int,
                     tokens_in: int) -> tuple[str, list[str]]:
        """The summary a summarizer call writes of ``messages``, and the keys it kept
        (`harness.sim.summaries.summary_text`)."""
        return summary_text(self, view, messages, at_step, n, tokens_in)

__all__ = [
    "MALFORMED_SHARES",
    "MALFORMED_SHARES_WITH_VARIANT",
    "MOCK_MODEL_VERSION",
    "NAME_VARIANT_SHARE",
    "Decision",
    "Mechanisms",
    "MockModel",
    "Pointer",
    "ToolCall",
    "concrete_args",
    "literal_value",
    "name_variant",
]


# Compiled (setup.py), a frozen dataclass cannot restore itself from a pickle: see `harness.build`.
pickle_frozen_by_fields(globals())
