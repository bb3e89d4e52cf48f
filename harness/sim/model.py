"""The calibrated mock model (docs/model.md 2-4): an ideal agent with noise that acts only on what
is really visible in the context it is given.

Code-review rule of the spec: the policy reads the context, the current scripted step, the
profile and the draws, nothing else. Whether a fact's value is *visible* comes from the messages'
``facts`` (scanned from their text); recall of a visible value follows the profile's length and
position curves. The true value is used only because a visible fact's text *is* the true value.
Tools and the grader check values; the model never peeks at the full history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.core.context import Context
from harness.core.crn import u
from harness.core.messages import KINDS, ErrorInfo, Message, Text, ToolUse, parse_error
from harness.core.stubs import parse_stub
from harness.core.tokens import Tokenizer, default_tokenizer
from harness.core.tools import required_args
from harness.sim.fact_lines import fact_line, fact_lines
from harness.sim.profiles import Profile
from scenarios.base import LITERAL_PREFIX, SessionScript, Step
from scenarios.draws import BASE32

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


def concrete_args(step: Step, values: Mapping[str, str]) -> dict[str, Any]:
    """The call an ideal agent makes for ``step`` given the fact values it resolved."""
    out: dict[str, Any] = {}
    for arg, template in step.args.items():
        if template.startswith(LITERAL_PREFIX):
            out[arg] = literal_value(template, step.arg_types.get(arg, "string"))
        elif step.arg_types.get(arg) == "array":
            out[arg] = [values[template]]  # a fact names one item of a list argument (e.g. one column)
        else:
            out[arg] = values[template]
    return out


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


@dataclass(slots=True)
class Pointer:
    """The harness's script pointer for one agent: the step (or final) and the attempt on it."""

    step: Step | None
    attempt: int = 0
    #: key -> the step whose successful result first held it (the plan the agent may know).
    producers: dict[str, Step] = field(default_factory=dict)

    @property
    def step_id(self) -> str:
        return self.step.id if self.step is not None else "final"


@dataclass(slots=True)
class _Resolution:
    value: str | None = None
    action: ToolCall | None = None
    branch: str = ""


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


class MockModel:
    """The policy of docs/model.md 2 and the summarizer of section 4, for one session.

    Malformed calls (docs/model.md 3.1) come in the spec's four kinds and a fifth, ``name_variant``:
    the call is well formed but names the tool with ``-`` and ``_`` swapped. It is drawn, with the
    (J) share `NAME_VARIANT_SHARE`, only for a tool whose name has a variant (`name_variant`); the
    tool list the model reads that from is part of its system prompt.
    """

    def __init__(self, script: SessionScript, profile: Profile, *, system_tokens: int | None = None,
                 tokenizer: Tokenizer | None = None) -> None:
        self.script = script
        self.profile = profile
        self.seed = script.seed
        self.system_tokens = script.system_prompt_tokens if system_tokens is None else system_tokens
        self.truth = script.fact_values()
        self.lookups = script.lookups()
        #: Steps whose current fresh attempt follows a nudge: it skips recall and avoids the last values.
        self._following_nudge: set[str] = set()
        self._thoughts: dict[tuple[str, str], str] = {}
        #: Stub messages whose handle a retrieve answered with an error (an evicted or unknown reference),
        #: by id, the message kept so its id stays its own: the agent read the error and does not page
        #: through that stub again. A stub that arrives later (the output fetched and offloaded anew) is
        #: another message, so it is paged as usual.
        self.dead_stubs: dict[int, Message] = {}
        self._count = (tokenizer or default_tokenizer()).count
        #: Durable facts whose ``- key: value`` line is in the memory block of the system prompt (empty:
        #: memory off). The value is what the file says, which may be stale.
        self.memory: dict[str, str] = {}
        #: The session's tool list spells some names with ``-``: either convention may be confused.
        self.mixed_conventions = any("-" in tool for tool in script.tool_names())

    # Reading the context ---------------------------------------------------------------------------
    def prompt_tokens(self, ctx: Context) -> int:
        return self.system_tokens + ctx.tokens

    def _newest_holder(self, ctx: Context, key: str) -> tuple[int, Message] | None:
        """(tokens before the newest message holding key, that message); scans from the end."""
        after = 0
        for m in reversed(ctx.messages):
            if key in m.facts:
                return self.system_tokens + ctx.tokens - after - m.tokens, m
            after += m.tokens
        return None

    def _visible_handle(self, ctx: Context, key: str) -> str | None:
        for m in reversed(ctx.messages):
            if m.kind == "handle" and key in m.covers and id(m) not in self.dead_stubs:
                for b in m.blocks:
                    stub = parse_stub(getattr(b, "content", ""))
                    if stub is not None and key in stub.keys:
                        return stub.handle
        return None

    def refused(self, ctx: Context, handle: str) -> None:
        """A retrieve of ``handle`` failed: the stubs of it now in ``ctx`` are not paged through again."""
        for m in ctx.messages:
            if m.kind == "handle" and any((stub := parse_stub(getattr(b, "content", ""))) is not None
                                          and stub.handle == handle for b in m.blocks):
                self.dead_stubs[id(m)] = m

    def _last_result(self, ctx: Context, step_id: str) -> Message | None:
        if not ctx.messages.holds("user", step_id, _RESULT_KINDS):
            return None
        for m in reversed(ctx.messages):
            if m.role == "user" and m.step_id == step_id and m.kind in _RESULT_KINDS:
                return m
            if m.role == "user" and m.kind in ("task",):
                break
        return None

    def _last_action(self, ctx: Context, step_id: str) -> ToolUse | None:
        if not ctx.messages.holds("assistant", step_id, KINDS):
            return None
        for m in reversed(ctx.messages):
            if m.role == "assistant" and m.step_id == step_id:
                for b in m.blocks:
                    if isinstance(b, ToolUse):
                        return b
                return None
        return None

    def _nudge_visible(self, ctx: Context, step_id: str) -> bool:
        window = ctx.messages
        if not (window.holds("user", step_id, ("nudge",)) or window.holds("assistant", step_id, ("nudge",))):
            return False
        return any(m.kind == "nudge" and m.step_id == step_id for m in reversed(ctx.messages))

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
            while self._count(text) < self.profile.thought_tokens:
                text += _FILLER
            self._thoughts[key] = text
        return text

    # Resolving facts (docs/model.md 2.2) ---------------------------------------------------------------
    def banned(self, ctx: Context, step_id: str) -> set[str]:
        """Values this step may not send again (docs/model.md 2.2): a value one of its calls
        sent for a fact argument that the visible error result of that call names verbatim, whether the
        error is plain text ("pod 'api-7f9c' not found") or structured; and, from a structured error,
        the value sent for the ``bad_arg`` it names. After a followed nudge, also the values of the
        step's last call (the nudge asks for a change of approach: a new value, 2.3)."""
        fact_args = self._fact_args(step_id)
        out: set[str] = set()
        messages = ctx.messages
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
            last = self._last_action(ctx, step_id)
            if last is not None:
                out |= {str(v) for arg, v in last.input.items() if arg in fact_args}
        return out

    def _fact_args(self, step_id: str) -> set[str]:
        """The arguments of the step (or fallback) ``step_id`` that carry fact values."""
        try:
            return set(self.script.step_by_id(step_id).fact_args())
        except KeyError:  # "final" and "handoff" make no tool call
            return set()

    def _wrong_value(self, ctx: Context, step_id: str, key: str) -> str:
        banned = self.banned(ctx, step_id)
        decoys = sorted(
            {d for m in ctx.messages for d in m.decoys} & set(self.script.decoys.get(key, ())) - banned
        )
        pick = self.u("wrong", step_id, 0, key, str(len(banned)))
        if decoys:
            return decoys[min(int(pick * len(decoys)), len(decoys) - 1)]
        shape = self.truth[key].rsplit("-", 1)[0] if "-" in self.truth[key] else key
        n = 0
        while True:
            word = int(self.u("madeup", step_id, 0, key, str(len(banned)), str(n)) * (1 << 50))
            suffix = "".join(BASE32[(word >> (5 * i)) & 31] for i in range(4))
            value = f"{shape}-{suffix}"
            if value != self.truth[key] and value not in banned:
                return value
            n += 1

    def _recall(self, ctx: Context, key: str, L: int, step_id: str, attempt: int) -> tuple[bool, dict[str, Any]]:
        """The recall draw of a visible key (docs/model.md 2.1): ``p_recall(L, x)`` of the
        key's look-up kind at the middle ``x`` of the newest message holding it, against
        ``u("recall", step, attempt, key)``. Returns whether it was recalled and the trace fields."""
        holder = self._newest_holder(ctx, key)
        assert holder is not None
        before, m = holder
        x = (before + m.tokens / 2) / L
        lookup = self.lookups.get(key, "literal")
        p = self.profile.p_recall(L, x, lookup)
        draw = self.u("recall", step_id, attempt, key)
        return draw < p, {"x": round(x, 4), "p": round(p, 4), "u": round(draw, 4), "lookup": lookup}

    def _resolve(self, ctx: Context, pointer: Pointer, key: str, depth: int, L: int,
                 trace: list[dict[str, Any]]) -> _Resolution:
        s, a = pointer.step_id, pointer.attempt
        entry: dict[str, Any] = {"key": key, "depth": depth}
        visible = ctx.messages.fact_counts.get(key, 0) > 0
        entry["visible"] = visible
        if visible and s not in self._following_nudge:
            recalled, drawn = self._recall(ctx, key, L, s, a)
            entry |= drawn
            if recalled:
                entry["branch"] = "recall"
                trace.append(entry)
                return _Resolution(value=self.truth[key], branch="recall")
        remembered = self.memory.get(key)
        if remembered is not None and remembered not in self.banned(ctx, s):
            # Known from the memory block (always in the prompt); an error that named the value bans it,
            # and the agent then looks for it as if it had no memory.
            entry["branch"] = "memory"
            trace.append(entry)
            return _Resolution(value=remembered, branch="memory")
        handle = self._visible_handle(ctx, key)
        if handle is not None:
            entry["branch"] = "retrieve"
            trace.append(entry)
            return _Resolution(action=ToolCall("retrieve_payload", {"handle": handle, "key": key}, "retrieve"),
                               branch="retrieve")
        producer = pointer.producers.get(key)
        if producer is not None and depth < 2 and self.u("refetch", s, a, key) < self.profile.p_refetch:
            entry["branch"] = "refetch"
            trace.append(entry)
            values: dict[str, str] = {}
            for ref in producer.needs:
                inner = self._resolve(ctx, pointer, ref, depth + 1, L, trace)
                if inner.action is not None:
                    return inner
                assert inner.value is not None
                values[ref] = inner.value
            call = ToolCall(producer.tool, concrete_args(producer, values), "refetch", target_step=producer.id)
            return _Resolution(action=call, branch="refetch")
        step = pointer.step
        if step is not None and step.shortcut is not None and self.u("shortcut", s, a) < self.profile.p_shortcut:
            entry["branch"] = "shortcut"
            trace.append(entry)
            return _Resolution(action=ToolCall(step.shortcut.tool, dict(step.shortcut.args), "shortcut"),
                               branch="shortcut")
        entry["branch"] = "wrong"
        trace.append(entry)
        return _Resolution(value=self._wrong_value(ctx, s, key), branch="wrong")

    # The turn (docs/model.md 2.3) --------------------------------------------------------------------
    def decide(self, ctx: Context, pointer: Pointer) -> Decision:
        s, a = pointer.step_id, pointer.attempt
        step = pointer.step
        if step is None:
            return self._final(ctx, pointer)
        last = self._last_result(ctx, s)
        info: ErrorInfo | None = None
        if last is not None and last.kind == "error":
            info = last.error if last.error is not None else parse_error(last.text)
        if info is not None and info.structured and info.error_class == "contract":
            if self.u("fix", s, a) < self.profile.p_fix:
                return self._fresh(ctx, pointer, branch="fix", syntax=False)
            return self._fresh(ctx, pointer, branch="refix", syntax=True, force_malformed=True)
        if info is not None and info.structured and info.error_class == "engineering":
            if info.fallback and step.fault is not None and step.fault.fallback is not None:
                return Decision("call", None, "", "fallback", switch_to_fallback=True)
            if info.retryable:
                resent = self._resend(ctx, s, "retry")
                if resent is not None:
                    return resent
            # A bad_arg error bans that value while it is visible (see `banned`): a fresh attempt.
            return self._fresh(ctx, pointer, branch="after_error")
        if info is not None:  # plain text error
            if self._nudge_visible(ctx, s) and self.u("nudge", s, a) < self.profile.p_nudge_follow:
                if step.fault is not None and step.fault.fallback is not None:
                    return Decision("call", None, "", "nudge_fallback", switch_to_fallback=True)
                self._following_nudge.add(s)
                try:
                    return self._fresh(ctx, pointer, branch="nudge")
                finally:
                    self._following_nudge.discard(s)
            if self.u("repeat", s, a) < self.profile.p_repeat_error:
                resent = self._resend(ctx, s, "repeat")
                if resent is not None:
                    return resent
        return self._fresh(ctx, pointer, branch="fresh")

    def _resend(self, ctx: Context, step_id: str, branch: str) -> Decision | None:
        previous = self._last_action(ctx, step_id)
        if previous is None:
            return None
        thought = self._previous_thought(ctx, step_id)
        return Decision("call", ToolCall(previous.name, dict(previous.input), "resend"), thought, branch)

    def _previous_thought(self, ctx: Context, step_id: str) -> str:
        for m in reversed(ctx.messages):
            if m.role == "assistant" and m.step_id == step_id:
                return next((b.text for b in m.blocks if isinstance(b, Text)), "")
        return ""

    def _fresh(self, ctx: Context, pointer: Pointer, *, branch: str, syntax: bool = True,
               force_malformed: bool = False) -> Decision:
        step = pointer.step
        assert step is not None
        L = self.prompt_tokens(ctx)
        trace: list[dict[str, Any]] = []
        values: dict[str, str] = {}
        for ref in step.needs:
            r = self._resolve(ctx, pointer, ref, 0, L, trace)
            if r.action is not None:
                return self._emit(ctx, pointer, r.action, r.branch, trace, syntax=True)
            assert r.value is not None
            values[ref] = r.value
        call = ToolCall(step.tool, concrete_args(step, values), "fix" if branch == "fix" else "step")
        return self._emit(ctx, pointer, call, branch, trace, syntax=syntax, force_malformed=force_malformed)

    def _emit(self, ctx: Context, pointer: Pointer, call: ToolCall, branch: str, trace: list[dict[str, Any]], *,
              syntax: bool, force_malformed: bool = False) -> Decision:
        s, a = pointer.step_id, pointer.attempt
        thought = self.thought(s, branch, call.tool)
        if syntax or force_malformed:
            L = self.prompt_tokens(ctx)
            noise = ctx.messages.raw_tokens / L
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

    def _final(self, ctx: Context, pointer: Pointer) -> Decision:
        L = self.prompt_tokens(ctx)
        trace: list[dict[str, Any]] = []
        values: dict[str, str] = {}
        for key in self.script.final_facts:
            r = self._resolve(ctx, pointer, key, 0, L, trace)
            if r.action is not None:
                return self._emit(ctx, pointer, r.action, r.branch, trace, syntax=True)
            assert r.value is not None
            values[key] = r.value
        lines = fact_lines(values)
        return Decision("final", None, f"FINAL ANSWER\n{lines}", "final", trace=tuple(trace))

    def handover(
        self, ctx: Context, pointer: Pointer, carries: Sequence[str]
    ) -> tuple[dict[str, str], list[dict[str, Any]]]:
        """The values a hand-over message states: each carried key recalled from the context, or a
        wrong value when it is not (no tool calls during a hand-over, J)."""
        L = self.prompt_tokens(ctx)
        trace: list[dict[str, Any]] = []
        values: dict[str, str] = {}
        for key in carries:
            entry: dict[str, Any] = {"key": key}
            value: str | None = None
            if ctx.messages.fact_counts.get(key, 0) > 0:
                recalled, drawn = self._recall(ctx, key, L, "handoff", 0)
                entry |= {"visible": True} | drawn
                if recalled:
                    value = self.truth[key]
            entry["branch"] = "recall" if value is not None else "wrong"
            values[key] = value if value is not None else self._wrong_value(ctx, "handoff", key)
            trace.append(entry)
        return values, trace

    # Summaries (docs/model.md 4) ---------------------------------------------------------------------------
    def summary_text(self, messages: Sequence[Message], at_step: str, n: int, tokens_in: int) -> tuple[str, list[str]]:
        """The summary a summarizer call writes, and the keys it kept."""
        count = self._count
        newest: dict[str, int] = {}
        for i, m in enumerate(messages):
            for key in m.facts:
                newest[key] = i
        kept = [k for k in sorted(newest)
                if self.u("keep", at_step, n, k) < self.profile.p_keep(tokens_in, self.lookups.get(k, "literal"))]
        goals = [k for k in self.script.final_facts if k in kept]
        others = sorted((k for k in kept if k not in goals), key=lambda k: -newest[k])
        task_line = ""
        for m in messages:
            if m.kind == "task":
                text = m.text
                for key, value in self.truth.items():
                    text = text.replace(value, f"<{key}>")
                task_line = f"- task: {text[:300]}"
                break
        lines = ["## Conversation Summary"] + ([task_line] if task_line else [])
        budget = self.profile.max_summary_tokens
        used = count("\n".join(lines))
        written: list[str] = []
        for key in goals + others:
            line = fact_line(key, self.truth[key])
            cost = count(line) + 1
            if used + cost > budget:
                break
            lines.append(line)
            written.append(key)
            used += cost
        tool_lines = ["## Tools Executed"]
        for m in messages:
            for b in m.blocks:
                if isinstance(b, ToolUse):
                    tool_lines.append(f"- step {m.step_id} {b.name}")
        for line in tool_lines:
            cost = count(line) + 1
            if used + cost > budget:
                break
            lines.append(line)
            used += cost
        return "\n".join(lines), written


__all__ = ["MALFORMED_SHARES", "MALFORMED_SHARES_WITH_VARIANT", "NAME_VARIANT_SHARE", "Decision", "MockModel",
           "Pointer", "ToolCall", "concrete_args", "literal_value", "name_variant"]
