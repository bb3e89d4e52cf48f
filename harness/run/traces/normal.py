"""The normal form every trace format is read into, and the one-line errors of a trace that cannot be read.

`TranscriptBuilder` collects a trace's blocks in order, merges consecutive messages of one role (so roles
alternate, as providers require) and checks the tool-id rules before it builds ctxbench `Message` values:
every tool call is answered in the next message (except the calls of a final assistant message), no result
lacks its call, no id is used twice. `JsonReader` reads a file's JSON values and names the file and the JSON
path in every `TraceError`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.messages import Block, Kind, Message, ResultStatus, Role, Text, ToolResult, ToolUse, default_meter

#: What an image, audio clip, document or other binary part becomes: the transcript keeps its place, not its
#: bytes (token accounting of media is provider-specific and out of scope).
IMAGE_PLACEHOLDER = "[image omitted]"
AUDIO_PLACEHOLDER = "[audio omitted]"
FILE_PLACEHOLDER = "[file omitted]"
VIDEO_PLACEHOLDER = "[video omitted]"
#: The task a fragment (a transcript that starts with the agent) is read after.
FRAGMENT_TASK = "[the transcript starts here: its task was not recorded]"


class TraceError(ValueError):
    """A trace that cannot be read. ``str()`` is one line, ``<path>: <where>: <problem>``, where ``<where>``
    is ``line N`` (for JSON syntax errors and JSONL records) or a JSON path such as
    ``$.messages[3].content[1].tool_use_id``."""

    def __init__(self, path: str, where: str, problem: str) -> None:
        self.path = path
        self.where = where
        self.problem = " ".join(problem.split())
        super().__init__(f"{path}: {where}: {self.problem}")


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """One conversation read from a trace, in ctxbench's normal form.

    ``messages[0]`` is the task (a user message of kind ``task``); roles alternate; every tool call is
    answered in the next message except the calls of a final assistant message.
    """

    #: The file or directory the session was read from, as given.
    source: str
    #: The trace's own id when it has one, else derived from the file name (and the index in the file).
    session_id: str
    #: The name of the trace format it was read from (`harness.run.traces.format_names`).
    format: str
    #: The system prompt ("" when the trace has none).
    system: str
    messages: tuple[Message, ...]
    #: The model name when the trace says.
    model: str | None = None
    #: Names of the tools the trace declares (their schemas), if any.
    tools: tuple[str, ...] = ()
    #: The declared tools as the trace sent them to the model, one JSON text each (sorted keys): part of every
    #: call's input, as providers bill them. Empty when the trace holds names only (or no tools).
    tool_schemas: tuple[str, ...] = ()
    #: The usage the trace recorded (per call, or the session's total), in call order.
    usage: tuple[RecordedUsage, ...] = ()
    #: What reading had to assume or change for this session, one line each (a fragment given a placeholder
    #: task, tool ids that were reused, text actions read as tool calls, ...).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RecordedUsage:
    """What a trace recorded about one model call (or, with ``call`` None, about the whole session): the
    provider's own counts, the evidence ctxbench's token counts are checked against."""

    #: The index in `ImportedSession.messages` of the assistant message the call produced; None for a
    #: session total (SWE-agent's ``model_stats``).
    call: int | None
    #: Input (prompt) tokens as billed, cached ones included; None when not recorded.
    input_tokens: int | None
    output_tokens: int | None = None
    #: Input tokens read from the provider's prompt cache, when recorded.
    cached_tokens: int | None = None
    #: The number of model calls a session total covers (1 for a call).
    calls: int = 1
    cost_usd: float | None = None
    #: Seconds the call took, when recorded (LiteLLM's ``latency_sec``).
    latency_s: float | None = None
    #: Unix time the call was made or logged, when recorded.
    timestamp: float | None = None


# JSON paths and checked reads ----------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def child(where: str, key: str | int) -> str:
    """The JSON path of ``key`` under ``where`` (``$.a[2]``, ``$["odd key"]``)."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    if _IDENTIFIER.match(key):
        return f"{where}.{key}"
    return f"{where}[{json.dumps(key)}]"


def type_name(value: Any) -> str:
    """How a JSON value is named in an error: ``a number``, ``an array``, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def shown(value: Any, limit: int = 60) -> str:
    """A short one-line rendering of a value for an error message."""
    text = json.dumps(value, ensure_ascii=True, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class JsonReader:
    """Checked reads of one trace file's JSON values: each failure is a `TraceError` naming the file and path."""

    __slots__ = ("source",)

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, where: str, problem: str) -> TraceError:
        return TraceError(self.source, where, problem)

    def obj(self, value: Any, where: str, what: str = "an object") -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(where, f"expected {what}, got {type_name(value)}")
        return value

    def arr(self, value: Any, where: str, what: str = "an array") -> list[Any]:
        if not isinstance(value, list):
            raise self.error(where, f"expected {what}, got {type_name(value)}")
        return value

    def string(self, value: Any, where: str, what: str = "a string") -> str:
        if not isinstance(value, str):
            raise self.error(where, f"expected {what}, got {type_name(value)}")
        return value

    def required(self, d: Mapping[str, Any], key: str, where: str) -> Any:
        if key not in d:
            raise self.error(child(where, key), "missing")
        return d[key]

    def req_str(self, d: Mapping[str, Any], key: str, where: str) -> str:
        return self.string(self.required(d, key, where), child(where, key))

    def opt_str(self, d: Mapping[str, Any], key: str, where: str) -> str | None:
        value = d.get(key)
        return None if value is None else self.string(value, child(where, key))

    def opt_number(self, d: Mapping[str, Any], key: str, where: str) -> float | None:
        """A recorded quantity (seconds, a cost, a Unix time): a finite number, 0 or more, or None when absent."""
        value = d.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise self.error(child(where, key), f"expected a non-negative number, got {shown(value)}")
        return float(value)

    def opt_count(self, d: Mapping[str, Any], key: str, where: str) -> int | None:
        """A recorded count (tokens, calls): a whole number, 0 or more, or None when absent."""
        value = self.opt_number(d, key, where)
        if value is None:
            return None
        if not value.is_integer():
            raise self.error(child(where, key), f"expected a whole number, got {shown(d[key])}")
        return int(value)


#: A UTF-16 surrogate code point: in a decoded JSON string, always a lone one (pairs decode to one character).
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def replace_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` (parsed JSON) with every lone surrogate in its strings and keys replaced by U+FFFD, and
    how many there were. Containers are fixed in place (a dict whose keys change is rebuilt)."""
    count = 0

    def fixed(text: str) -> str:
        nonlocal count
        found = len(_SURROGATE.findall(text))
        if not found:
            return text
        count += found
        return _SURROGATE.sub("\ufffd", text)

    def rekeyed(d: dict[str, Any]) -> dict[str, Any]:
        if not any(isinstance(k, str) and _SURROGATE.search(k) for k in d):
            return d
        return {fixed(k): v for k, v in d.items()}

    if isinstance(value, str):
        return fixed(value), count
    if isinstance(value, dict):
        value = rekeyed(value)
    stack = [value] if isinstance(value, dict | list) else []
    while stack:
        item = stack.pop()
        keys = item.keys() if isinstance(item, dict) else range(len(item))
        for key in keys:
            inner = item[key]
            if isinstance(inner, str):
                if _SURROGATE.search(inner):
                    item[key] = fixed(inner)
            elif isinstance(inner, dict):
                item[key] = inner = rekeyed(inner)
                stack.append(inner)
            elif isinstance(inner, list):
                stack.append(inner)
    return value, count


def structured_text(value: Any) -> str:
    """Structured tool output as text: JSON with sorted keys (the normal form's rule)."""
    return json.dumps(value, sort_keys=True)


def parse_arguments(arguments: Any) -> dict[str, Any]:
    """Tool-call arguments sent as a JSON string (OpenAI) as a dict. Arguments that are not a JSON object
    are kept as ``{"_raw_arguments": text}``: a model's malformed call is data, not a broken trace."""
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        return {"_raw_arguments": json.dumps(arguments)}
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return {"_raw_arguments": arguments}
    # The text itself is clean (its file was), but its escapes may decode to lone surrogates.
    return replace_surrogates(parsed)[0] if isinstance(parsed, dict) else {"_raw_arguments": arguments}


def arguments_text(arguments: Mapping[str, Any]) -> str:
    """The inverse of `parse_arguments`, for writers: raw arguments are written back as they were."""
    raw = arguments.get("_raw_arguments")
    if len(arguments) == 1 and isinstance(raw, str):
        return raw
    return json.dumps(dict(arguments))


# The builder -------------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Draft:
    role: Role
    blocks: list[Block] = field(default_factory=list)
    #: (file, JSON path) of each block, for errors.
    origins: list[tuple[str, str]] = field(default_factory=list)


class TranscriptBuilder:
    """Collects a trace's blocks in order and builds the checked, merged messages of the normal form.

    ``origin`` (file, where) is named when the trace has no message at all.
    """

    def __init__(self, source: str, where: str = "$") -> None:
        self._origin = (source, where)
        self._drafts: list[_Draft] = []
        self._system: list[str] = []
        #: What `build` had to assume or change, one line each (`ImportedSession.notes`).
        self.notes: list[str] = []

    def system(self, text: str) -> None:
        """Add system-prompt text (system messages anywhere in the trace join the one system prompt)."""
        if text:
            self._system.append(text)

    def text(self, role: Role, text: str, source: str, where: str) -> None:
        """Add a text block; empty text is dropped (providers refuse empty text blocks)."""
        if text:
            self._add(role, Text(text), source, where)

    def tool_use(self, call_id: str, name: str, arguments: Mapping[str, Any], source: str, where: str) -> None:
        self._add("assistant", ToolUse(call_id, name, dict(arguments)), source, where)

    def tool_result(self, call_id: str, status: ResultStatus, content: str, source: str, where: str) -> None:
        self._add("user", ToolResult(call_id, status, content), source, where)

    def _add(self, role: Role, block: Block, source: str, where: str) -> None:
        if not self._drafts or self._drafts[-1].role != role:
            self._drafts.append(_Draft(role))
        draft = self._drafts[-1]
        draft.blocks.append(block)
        draft.origins.append((source, where))

    @property
    def system_prompt(self) -> str:
        return "\n\n".join(self._system)

    def build(self) -> tuple[Message, ...]:
        """The messages, after checking the normal form's rules (TraceError naming the offending block)."""
        drafts = self._drafts
        if not drafts:
            raise TraceError(*self._origin, "no conversation messages (a trace needs at least the user's task)")
        first = drafts[0]
        if first.role != "user":
            # A fragment (a transcript cut after the task, or one whose task was not logged): read it after a
            # placeholder task, and say so, rather than refuse what the agent did.
            source, where = first.origins[0]
            drafts.insert(0, _Draft("user", [Text(FRAGMENT_TASK)], [(source, where)]))
            self.notes.append(f"{source}: {where}: the transcript starts with the agent (a fragment): read after "
                              f"a placeholder task {FRAGMENT_TASK!r}")
            self._orphans_to_text()
        elif not any(isinstance(b, Text) for b in first.blocks):
            raise TraceError(*first.origins[0], "a trace must start with the user's task, found a user message "
                             "without text")
        self._rename_reused_ids()
        self._check_tool_ids()
        meter = default_meter()
        messages: list[Message] = []
        last = len(drafts) - 1
        for i, draft in enumerate(drafts):
            kind: Kind | None = None
            if i == 0:
                kind = "task"
            elif i == last and draft.role == "assistant" and not any(isinstance(b, ToolUse) for b in draft.blocks):
                kind = "final"
            messages.append(Message.build(draft.role, draft.blocks, kind=kind, meter=meter))
        return tuple(messages)

    def _orphans_to_text(self) -> None:
        """In a fragment, a tool result whose call came before the cut (no earlier call has its id) is read as the
        user's text, with a note: the output was in the prompt, its call is not in the transcript."""
        called: set[str] = set()
        orphans = 0
        for draft in self._drafts:
            for i, block in enumerate(draft.blocks):
                if isinstance(block, ToolUse):
                    called.add(block.id)
                elif isinstance(block, ToolResult) and block.tool_use_id not in called:
                    draft.blocks[i] = Text(f"[output of a call the transcript does not hold] {block.content}")
                    orphans += 1
        if orphans:
            self.notes.append(f"{self._origin[0]}: {orphans} tool output(s) whose call the fragment does not hold "
                              "read as text")

    def _rename_reused_ids(self) -> None:
        """Providers reuse tool-call ids: an id used again after its earlier call was answered names a new
        call, which gets the id ``<id>#<n>`` (its result, the next one with that id, too) so every id of the
        normal form is unique. An id used again while its earlier call is still unanswered is ambiguous, an
        error naming both places."""
        current: dict[str, tuple[str, tuple[str, str], bool]] = {}  # id -> (normal id, origin, answered)
        uses: dict[str, int] = {}
        renamed = 0
        for draft in self._drafts:
            for i, (block, origin) in enumerate(zip(draft.blocks, draft.origins, strict=True)):
                if isinstance(block, ToolUse) and block.id:
                    seen = current.get(block.id)
                    if seen is not None and not seen[2]:
                        raise TraceError(*origin, f"tool id {block.id!r} is used again while its call at "
                                         f"{_at(seen[1])} is not answered yet: its result would be ambiguous")
                    n = uses[block.id] = uses.get(block.id, 0) + 1
                    normal = block.id if n == 1 else f"{block.id}#{n}"
                    if n > 1:
                        draft.blocks[i] = ToolUse(normal, block.name, block.input)
                        renamed += 1
                    current[block.id] = (normal, origin, False)
                elif isinstance(block, ToolResult) and (seen := current.get(block.tool_use_id)) is not None:
                    if seen[2]:
                        continue  # a second result for one call: `_check_tool_ids` names it
                    if seen[0] != block.tool_use_id:
                        draft.blocks[i] = ToolResult(seen[0], block.status, block.content)
                    current[block.tool_use_id] = (seen[0], seen[1], True)
        if renamed:
            self.notes.append(f"{self._origin[0]}: {renamed} tool call(s) reuse the id of an earlier, answered "
                              "call (legal: providers reuse ids); they are read as new calls")

    def _check_tool_ids(self) -> None:
        uses: dict[str, tuple[str, str]] = {}
        answered: dict[str, tuple[str, str]] = {}
        all_results = {b.tool_use_id for d in self._drafts for b in d.blocks if isinstance(b, ToolResult)}
        previous_uses: set[str] = set()
        for i, draft in enumerate(self._drafts):
            here_uses: set[str] = set()
            for block, origin in zip(draft.blocks, draft.origins, strict=True):
                if isinstance(block, ToolUse):
                    if not block.id:
                        raise TraceError(*origin, f"tool call {block.name!r} has an empty id")
                    if block.id in uses:
                        raise TraceError(
                            *origin, f"duplicate tool id {block.id!r} (also used at {_at(uses[block.id])})")
                    uses[block.id] = origin
                    here_uses.add(block.id)
                elif isinstance(block, ToolResult):
                    rid = block.tool_use_id
                    if rid not in uses:
                        raise TraceError(*origin, f"orphan tool result: no earlier tool call has id {rid!r}")
                    if rid in answered:
                        raise TraceError(
                            *origin, f"duplicate tool result for id {rid!r} (first at {_at(answered[rid])})")
                    if rid not in previous_uses:
                        raise TraceError(
                            *origin, f"tool result {rid!r} does not follow its call (at {_at(uses[rid])}) directly")
                    answered[rid] = origin
            if i > 0:
                prev = self._drafts[i - 1]
                for block, origin in zip(prev.blocks, prev.origins, strict=True):
                    if isinstance(block, ToolUse) and block.id not in answered:
                        later = "is answered only later" if block.id in all_results else "is never answered"
                        raise TraceError(
                            *origin, f"tool call {block.id!r} ({block.name}) {later}: its result must be in the "
                            "next message")
            previous_uses = here_uses


def _at(origin: tuple[str, str]) -> str:
    return origin[1]
