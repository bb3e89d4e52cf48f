"""Claude Code session transcripts: the JSONL file Claude Code writes for each session,
``~/.claude/projects/<project>/<session id>.jsonl``, one record per line.

Claude Code publishes no schema for these files; this reader follows what its records hold (Claude Code
2.x), as community readers document them, e.g. https://github.com/23min/copilot-lens
(``docs/research/claude-code-sessions.md``) and the ``compact_boundary`` records described in
https://github.com/anthropics/claude-code/issues/87602, and the tree that parallel tool calls make
(https://github.com/anthropics/claude-code/issues/37779). Each record has a ``type``; the conversation is in
the ``user`` and ``assistant`` records, each with a ``uuid``, a ``parentUuid`` (null for the first), the
``sessionId`` and a ``message`` holding Anthropic Messages content (https://docs.anthropic.com/en/api/messages):
``text``, ``tool_use`` ``{id, name, input}``, ``tool_result`` ``{tool_use_id, content, is_error}`` (``is_error:
true`` gives status ``error``), ``image`` and ``document`` (placeholders). ``thinking``, ``redacted_thinking``
and server-tool blocks are skipped, as are blocks of types this reader does not know (a note names them); a
tool result's content blocks of unknown types are kept as JSON text. The ``toolUseResult`` copy Claude Code
keeps for its UI is not read: the ``tool_result`` block is what the model was sent.

Order. The conversation is the ``parentUuid`` chain that ends at the file's last user or assistant line;
lines off that chain are abandoned branches (a rewind, an interrupted or retried turn) and are skipped with
a note, except the two kinds of lines parallel tool calls put beside the chain: the other lines of an
assistant message on the chain, and the tool results answering its calls. The lines are read in file
order, or in ``parentUuid`` order where the file disagrees (a note says so).

One assistant API message is written as several lines sharing ``message.id``, one content block each (tool
results can come between them while the message still streams): they are read as one assistant message,
one model call, whose usage is that of the message's last line. ``message.usage`` gives one
`RecordedUsage` per call: input = ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``
(what the call's prompt held), cached = ``cache_read_input_tokens``, ``output_tokens``; the model is
``message.model``. Assistant lines Claude Code made up itself (model ``<synthetic>``, or ``isApiErrorMessage``:
an API error shown in the UI) are skipped.

Compaction. A ``system`` record of subtype ``compact_boundary`` (``parentUuid`` null, ``logicalParentUuid``
the last line before it) marks where Claude Code compacted the conversation; what follows starts with the
summary as a user message (``isCompactSummary``). The transcript is read on across the boundary, with a note
saying where it was (and ``compactMetadata.preTokens``, the tokens before, when recorded); a compaction that
keeps a segment of the conversation links the kept lines past its record, which is noted all the same.

Sub-agents. Lines with ``isSidechain: true`` are a sub-agent's conversation (a ``Task``), not the main one:
they are skipped with a note; a file of nothing but sidechain lines (a sub-agent's own file,
``<session>/subagents/agent-<id>.jsonl``) is read as that sub-agent's conversation.

User lines Claude Code adds for the model (``isMeta``: command caveats, skill contents) are read as user text,
as the model was sent them. Everything else Claude Code writes (``summary`` titles, ``file-history-snapshot``,
``progress``, other ``system`` records, ...) is its own bookkeeping and is skipped (a note counts them). Claude
Code records neither its system prompt nor its tools' schemas: ``system`` and ``tools`` stay empty (a note says
the recorded input tokens count them). The session id is the ``sessionId`` of the conversation's last line.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.core.messages import Role
from harness.run.traces.anthropic import SKIPPED_BLOCKS
from harness.run.traces.formats import FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    FILE_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    RecordedUsage,
    TraceError,
    TranscriptBuilder,
    child,
    shown,
    structured_text,
    type_name,
)
from harness.run.traces.reading import TraceText

NAME = "claude-code"
#: The document rank of the claim on a Claude Code file (`Claim.document`).
SNIFF_RANK = 6
COMPACT_BOUNDARY = "compact_boundary"
#: The model Claude Code names on assistant lines it wrote itself (API errors, interruptions).
SYNTHETIC_MODEL = "<synthetic>"
_PLACEHOLDERS = {"image": IMAGE_PLACEHOLDER, "document": FILE_PLACEHOLDER}
#: How many leading records the sniffer looks at for a line only Claude Code writes.
_SNIFF_RECORDS = 50
#: Record types whose lines carry a ``sessionId`` and are Claude Code's (with a ``parentUuid`` or not).
_RECORD_TYPES = frozenset({"user", "assistant", "system", "summary", "progress", "queue-operation",
                           "file-history-snapshot", "attachment"})


@dataclass(slots=True)
class _Line:
    """One user, assistant or compact-boundary line of the file."""

    index: int
    where: str
    record: dict[str, Any]
    #: ``user``, ``assistant`` or ``boundary``.
    kind: str
    uuid: str


@dataclass(slots=True)
class _Call:
    """One assistant API message: its lines (one content block each, in order)."""

    lines: list[_Line] = field(default_factory=list)


class _Positions:
    """The builder, and the index in the built messages each block lands at: it merges consecutive blocks of
    one role into one message, as `TranscriptBuilder` does, to place each call's usage on its message."""

    def __init__(self, builder: TranscriptBuilder) -> None:
        self.builder = builder
        self.roles: list[Role] = []
        #: Blocks added so far.
        self.blocks = 0

    def _added(self, role: Role) -> None:
        self.blocks += 1
        if not self.roles or self.roles[-1] != role:
            self.roles.append(role)

    def text(self, role: Role, text: str, source: str, where: str) -> None:
        if text:  # the builder drops empty text too
            self.builder.text(role, text, source, where)
            self._added(role)

    def tool_use(self, call_id: str, name: str, arguments: dict[str, Any], source: str, where: str) -> None:
        self.builder.tool_use(call_id, name, arguments, source, where)
        self._added("assistant")

    def tool_result(self, call_id: str, error: bool, text: str, source: str, where: str) -> None:
        self.builder.tool_result(call_id, "error" if error else "success", text, source, where)
        self._added("user")

    def message_index(self, draft: int) -> int:
        """The index in the built messages of draft ``draft`` (the builder puts a placeholder task before a
        transcript that starts with the agent)."""
        return draft + (1 if self.roles and self.roles[0] == "assistant" else 0)


def parse(trace: TraceText) -> list[ImportedSession]:
    """The session of a Claude Code transcript file."""
    return [_Reader(trace).session()]


class _Reader:
    """Reads one Claude Code file: its lines, the conversation's chain, then the messages and usage."""

    def __init__(self, trace: TraceText) -> None:
        self.trace = trace
        self.source = trace.source
        self.reader = JsonReader(trace.source)
        self.notes: list[str] = []
        #: uuid -> (parent uuid, record index) of every record that has a uuid, message or not.
        self.parents: dict[str, tuple[str | None, int]] = {}

    def note(self, where: str, text: str) -> None:
        self.notes.append(f"{self.source}: {where}: {text}")

    # Lines ------------------------------------------------------------------------------------------------

    def lines(self) -> tuple[list[_Line], list[_Line]]:
        """The main conversation's lines and the sidechain's, in file order; every record's uuid and parent
        in `parents`."""
        main: list[_Line] = []
        side: list[_Line] = []
        skipped: Counter[str] = Counter()
        synthetic = duplicates = 0
        for index, record_entry in enumerate(self.trace.records):
            where = record_entry.where
            record = self.reader.obj(record_entry.value, where, "a Claude Code record object")
            kind = self.reader.req_str(record, "type", where)
            is_message = kind in ("user", "assistant")
            is_boundary = kind == "system" and record.get("subtype") == COMPACT_BOUNDARY
            uuid = self.reader.req_str(record, "uuid", where) if is_message or is_boundary else record.get("uuid")
            if isinstance(uuid, str) and uuid:
                if uuid in self.parents:
                    duplicates += 1
                    if is_message or is_boundary:
                        continue  # a line written twice: the first one counts
                else:
                    self.parents[uuid] = (self._parent(record, where, is_message or is_boundary), index)
            if not (is_message or is_boundary):
                skipped[kind if kind != "system" else f"system ({record.get('subtype', 'no subtype')})"] += 1
                continue
            if not uuid:
                raise self.reader.error(child(where, "uuid"), "empty (every user and assistant line has a uuid)")
            if kind == "assistant" and _is_synthetic(record):
                synthetic += 1
                continue
            sidechain = record.get("isSidechain", False)
            if not isinstance(sidechain, bool) and sidechain is not None:
                raise self.reader.error(child(where, "isSidechain"), f"expected a boolean, got {type_name(sidechain)}")
            line = _Line(index, where, record, "boundary" if is_boundary else kind, str(uuid))
            (side if sidechain else main).append(line)
        if skipped:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
            self.notes.append(f"{self.source}: lines Claude Code keeps for itself skipped ({kinds})")
        if synthetic:
            self.notes.append(f"{self.source}: {synthetic} assistant line(s) Claude Code wrote itself (model "
                              f"{SYNTHETIC_MODEL!r}: API errors, interruptions) skipped: no model made them")
        if duplicates:
            self.notes.append(f"{self.source}: {duplicates} line(s) repeat the uuid of an earlier line: the first "
                              "one is read")
        return main, side

    def _parent(self, record: dict[str, Any], where: str, checked: bool) -> str | None:
        """A record's parent: ``parentUuid``, or across a compaction (``parentUuid`` null) its
        ``logicalParentUuid``."""
        for key in ("parentUuid", "logicalParentUuid"):
            value = record.get(key)
            if isinstance(value, str) and value:
                return value
            if value is not None and checked and not isinstance(value, str):
                raise self.reader.error(child(where, key), f"expected a uuid string or null, got {type_name(value)}")
        return None

    # The conversation's chain -----------------------------------------------------------------------------

    def chain(self, leaf: _Line) -> set[str]:
        """The uuids from ``leaf`` back to the first line of its conversation (parents not in the file end it)."""
        found: set[str] = set()
        current: str | None = leaf.uuid
        while current is not None and current in self.parents:
            if current in found:
                raise TraceError(self.source, self.trace.records[self.parents[current][1]].where,
                                 "the parentUuid chain loops back to this line")
            found.add(current)
            current = self.parents[current][0]
        return found

    def kept(self, lines: list[_Line]) -> list[_Line]:
        """The conversation's lines: those on the chain ending at the last user or assistant line, and beside
        it the other lines of its assistant messages and the tool results answering their calls."""
        leaf = next(line for line in reversed(lines) if line.kind != "boundary")
        chain = self.chain(leaf)
        # Every compaction of the main conversation is noted, on the chain or not (a compaction that keeps a
        # segment of the conversation re-links the kept lines past the boundary record).
        on_chain = {id(line) for line in lines if line.uuid in chain or line.kind == "boundary"}
        message_ids = {_message_id(line.record) for line in lines if id(line) in on_chain and line.kind == "assistant"}
        message_ids.discard(None)
        kept_ids = set(on_chain)
        for line in lines:
            if line.kind == "assistant" and _message_id(line.record) in message_ids:
                kept_ids.add(id(line))
        calls = {call for line in lines if id(line) in kept_ids for call in _tool_use_ids(line.record)}
        for line in lines:
            if id(line) not in kept_ids and line.kind == "user":
                answered = _tool_result_ids(line.record)
                if answered and answered <= calls:
                    kept_ids.add(id(line))
        dropped = [line for line in lines if id(line) not in kept_ids]
        if dropped:
            self.note(dropped[0].where, f"{len(dropped)} line(s) off the conversation's parentUuid chain (abandoned "
                      "branches: a rewind, an interrupted or retried turn) skipped, the first here")
        return self.ordered([line for line in lines if id(line) in kept_ids])

    def ordered(self, lines: list[_Line]) -> list[_Line]:
        """``lines`` in file order where each comes after its nearest kept ancestor, else in ``parentUuid``
        order (a stable topological order, ties by file position)."""
        by_uuid = {line.uuid: line for line in lines}
        children: dict[str, list[int]] = {}
        ready: list[int] = []
        position = {line.index: line for line in lines}
        early: _Line | None = None  # the first line the file puts before its parent
        for line in lines:
            ancestor = self._kept_ancestor(line, by_uuid)
            if ancestor is None:
                heapq.heappush(ready, line.index)
            else:
                children.setdefault(ancestor, []).append(line.index)
                if early is None and by_uuid[ancestor].index > line.index:
                    early = line
        out: list[_Line] = []
        while ready:
            line = position[heapq.heappop(ready)]
            out.append(line)
            for index in children.get(line.uuid, ()):
                heapq.heappush(ready, index)
        if len(out) != len(lines):
            emitted = {id(line) for line in out}
            lost = next(line for line in lines if id(line) not in emitted)
            raise TraceError(self.source, lost.where, "the parentUuid chain loops back to this line")
        if early is not None:
            self.note(early.where, "the file puts this line before its parent (parentUuid): the lines are read in "
                      "parentUuid order")
        return out

    def _kept_ancestor(self, line: _Line, by_uuid: dict[str, _Line]) -> str | None:
        seen = {line.uuid}
        current = self.parents.get(line.uuid, (None, 0))[0]
        while current is not None and current not in seen:
            if current in by_uuid:
                return current
            seen.add(current)
            current = self.parents[current][0] if current in self.parents else None
        return None

    # Messages ---------------------------------------------------------------------------------------------

    def session(self) -> ImportedSession:
        main, side = self.lines()
        if not any(line.kind != "boundary" for line in main):
            if not any(line.kind != "boundary" for line in side):
                raise TraceError(self.source, self.trace.records[0].where, "no user or assistant lines (a Claude "
                                 "Code file of bookkeeping only: summaries, snapshots)")
            main, side = side, []
            self.notes.append(f"{self.source}: every line is a sidechain (a sub-agent's transcript): read as that "
                              "sub-agent's conversation")
        if side:
            self.note(side[0].where, f"{len(side)} sidechain line(s) (a sub-agent's conversation, isSidechain: "
                      "true) skipped: they are not the main conversation")
        lines = self.kept(main)
        builder = TranscriptBuilder(self.source, lines[0].where)
        positions = _Positions(builder)
        usage: list[RecordedUsage] = []
        models: Counter[str] = Counter()
        for item in self._items(lines):
            if isinstance(item, _Call):
                recorded = self._call(positions, item, models)
                if recorded is not None:
                    usage.append(recorded)
            elif item.kind == "boundary":
                self._boundary(item)
            else:
                self._user(positions, item)
        session_id = next((s for line in reversed(lines) if isinstance(s := line.record.get("sessionId"), str) and s),
                          self.trace.stem)
        model = models.most_common(1)[0][0] if models else None
        if len(models) > 1:
            self.notes.append(f"{self.source}: calls were made with {len(models)} models "
                              f"({', '.join(sorted(models))}): the session's model is the most used")
        self.notes.append(f"{self.source}: Claude Code records neither its system prompt nor its tool schemas: the "
                          "replayed prompts lack them, the recorded input tokens count them")
        messages = builder.build()
        placed = [u for u in usage if u.call is not None and u.call < len(messages)
                  and messages[u.call].role == "assistant"]
        shared = len(placed) - len({u.call for u in placed})
        if shared:
            self.notes.append(f"{self.source}: {shared} model call(s) answered without a user message between them "
                              "and the call before: their messages are one assistant message, which holds the usage "
                              "of each")
        return ImportedSession(
            source=self.source, session_id=session_id, format=NAME, system="", messages=messages, model=model,
            usage=tuple(placed), notes=tuple(builder.notes) + tuple(self.notes))

    def _items(self, lines: list[_Line]) -> list[_Call | _Line]:
        """The lines as one `_Call` per assistant message (its lines gathered wherever they are) and the user
        and boundary lines, in order."""
        items: list[_Call | _Line] = []
        calls: dict[str, _Call] = {}
        moved = 0
        for line in lines:
            if line.kind != "assistant":
                items.append(line)
                continue
            message_id = _message_id(line.record)
            call = calls.get(message_id) if message_id is not None else None
            if call is None:
                call = _Call()
                items.append(call)
                if message_id is not None:
                    calls[message_id] = call
            elif items[-1] is not call:
                moved += 1
            call.lines.append(line)
        if moved:
            self.notes.append(f"{self.source}: {moved} line(s) of assistant messages come after tool results or "
                              "user lines written while the message streamed: read as part of their message")
        return items

    def _message(self, line: _Line) -> tuple[dict[str, Any], str]:
        where = child(line.where, "message")
        return self.reader.obj(self.reader.required(line.record, "message", line.where), where), where

    def _call(self, positions: _Positions, call: _Call, models: Counter[str]) -> RecordedUsage | None:
        """One assistant message into the builder; its usage (that of its last line), placed on its message."""
        blocks_before = positions.blocks
        usage_value: Any = None
        usage_where = ""
        model: str | None = None
        for line in call.lines:
            message, where = self._message(line)
            self._check_role(message, where, "assistant")
            model = self.reader.opt_str(message, "model", where) or model
            self._content(positions, "assistant", message, where)
            if "usage" in message:
                usage_value, usage_where = message["usage"], child(where, "usage")
        if model:
            models[model] += 1
        if usage_value is None:
            return None
        if positions.blocks == blocks_before:
            self.note(call.lines[-1].where, "a model call whose message holds nothing replayed (thinking only): its "
                      "usage is not placed on a message")
            return None
        call_index = positions.message_index(len(positions.roles) - 1)
        return self._usage(usage_value, usage_where, call_index, call.lines[-1].record.get("timestamp"))

    def _usage(self, value: Any, where: str, call_index: int, timestamp: Any) -> RecordedUsage | None:
        if value is None:
            return None
        usage = self.reader.obj(value, where, "a usage object")
        counts = {key: self.reader.opt_count(usage, key, where) for key in (
            "input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")}
        fresh = counts["input_tokens"]
        prompt = None if fresh is None else (
            fresh + (counts["cache_creation_input_tokens"] or 0) + (counts["cache_read_input_tokens"] or 0))
        return RecordedUsage(call=call_index, input_tokens=prompt, output_tokens=counts["output_tokens"],
                             cached_tokens=counts["cache_read_input_tokens"], timestamp=_unix_time(timestamp))

    def _user(self, positions: _Positions, line: _Line) -> None:
        message, where = self._message(line)
        self._check_role(message, where, "user")
        self._content(positions, "user", message, where)

    def _boundary(self, line: _Line) -> None:
        meta = line.record.get("compactMetadata")
        detail = ""
        if isinstance(meta, dict):
            trigger = meta.get("trigger")
            tokens = meta.get("preTokens")
            if isinstance(trigger, str):
                detail += f", trigger {trigger}"
            if type(tokens) is int:
                detail += f", {tokens:,} tokens before"
        self.note(line.where, f"the conversation was compacted here (compact_boundary{detail}): read on as one "
                  "transcript, the summary that follows as a user message")

    def _check_role(self, message: dict[str, Any], where: str, expected: str) -> None:
        role = message.get("role", expected)
        if role != expected:
            raise self.reader.error(child(where, "role"), f"a {expected} line holds a message of role {shown(role)}")

    def _content(self, positions: _Positions, role: Role, message: dict[str, Any], where: str) -> None:
        content_where = child(where, "content")
        content = self.reader.required(message, "content", where)
        if isinstance(content, str):
            positions.text(role, content, self.source, content_where)
            return
        blocks = self.reader.arr(content, content_where, "a string or an array of content blocks")
        for i, value in enumerate(blocks):
            self._block(positions, role, value, child(content_where, i))

    def _block(self, positions: _Positions, role: Role, value: Any, where: str) -> None:
        block = self.reader.obj(value, where, "a content block object")
        kind = self.reader.req_str(block, "type", where)
        source = self.source
        if kind == "text":
            positions.text(role, self.reader.req_str(block, "text", where), source, where)
        elif kind in _PLACEHOLDERS:
            positions.text(role, _PLACEHOLDERS[kind], source, where)
        elif kind == "tool_use":
            if role != "assistant":
                raise self.reader.error(child(where, "type"), "a tool_use block in a user message (tool calls are "
                                        "the assistant's)")
            tool_input = self.reader.obj(self.reader.required(block, "input", where), child(where, "input"))
            positions.tool_use(self.reader.req_str(block, "id", where), self.reader.req_str(block, "name", where),
                               tool_input, source, where)
        elif kind == "tool_result":
            if role != "user":
                raise self.reader.error(child(where, "type"), "a tool_result block in an assistant message (results "
                                        "are the user's)")
            is_error = block.get("is_error", False)
            if not isinstance(is_error, bool) and is_error is not None:
                raise self.reader.error(child(where, "is_error"), f"expected a boolean, got {type_name(is_error)}")
            text = self._result_text(block.get("content"), child(where, "content"))
            positions.tool_result(self.reader.req_str(block, "tool_use_id", where), bool(is_error), text, source,
                                  where)
        elif kind not in SKIPPED_BLOCKS:
            self.note(where, f"a content block of unknown type {kind!r} skipped")

    def _result_text(self, content: Any, where: str) -> str:
        """A tool result's content: a string, or blocks (text kept, media as placeholders, others as JSON)."""
        if content is None or isinstance(content, str):
            return content or ""
        texts = []
        for i, value in enumerate(self.reader.arr(content, where, "a string or an array of content blocks")):
            block_where = child(where, i)
            block = self.reader.obj(value, block_where, "a content block object")
            kind = self.reader.req_str(block, "type", block_where)
            if kind == "text":
                texts.append(self.reader.req_str(block, "text", block_where))
            elif kind in _PLACEHOLDERS:
                texts.append(_PLACEHOLDERS[kind])
            else:
                texts.append(structured_text(block))
        return "\n".join(texts)


def _is_synthetic(record: dict[str, Any]) -> bool:
    message = record.get("message")
    model = message.get("model") if isinstance(message, dict) else None
    return model == SYNTHETIC_MODEL or record.get("isApiErrorMessage") is True


def _message_id(record: dict[str, Any]) -> str | None:
    message = record.get("message")
    value = message.get("id") if isinstance(message, dict) else None
    return value if isinstance(value, str) and value else None


def _blocks(record: dict[str, Any]) -> Iterable[dict[str, Any]]:
    """The content blocks of a line, without checks (for choosing lines; the chosen ones are read checked)."""
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return (b for b in content if isinstance(b, dict)) if isinstance(content, list) else ()


def _tool_use_ids(record: dict[str, Any]) -> set[str]:
    return {b["id"] for b in _blocks(record) if b.get("type") == "tool_use" and isinstance(b.get("id"), str)}


def _tool_result_ids(record: dict[str, Any]) -> set[str]:
    """The ids a user line answers, when it holds nothing but tool results (else the empty set)."""
    blocks = list(_blocks(record))
    if not blocks or any(b.get("type") != "tool_result" or not isinstance(b.get("tool_use_id"), str) for b in blocks):
        return set()
    return {b["tool_use_id"] for b in blocks}


def _unix_time(value: Any) -> float | None:
    """An ISO 8601 timestamp as Unix time; None when there is none or it does not parse (it only dates a call)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# Sniffing ------------------------------------------------------------------------------------------------

def _is_claude_record(record: dict[str, Any]) -> bool:
    """A line only Claude Code writes: a typed record with its chain keys, a title with its ``leafUuid``, a
    file-history snapshot, or a record of its own types with a ``sessionId``."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return False
    if "parentUuid" in record and isinstance(record.get("uuid"), str):
        return True
    if kind == "summary" and "leafUuid" in record:
        return True
    if kind == "file-history-snapshot" and "snapshot" in record and "messageId" in record:
        return True
    return kind in _RECORD_TYPES and isinstance(record.get("sessionId"), str)


def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is a Claude Code transcript: among its first records (all typed objects), one only
    Claude Code writes (`_is_claude_record`)."""
    for record in trace.records[:_SNIFF_RECORDS]:
        value = record.value
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            return None
        if _is_claude_record(value):
            return Claim.document(SNIFF_RANK)
    return None


FORMAT = TraceFormat(name=NAME, kind=FILE, description="Claude Code session transcripts (JSONL)", sniff=sniff,
                     load=parse)
