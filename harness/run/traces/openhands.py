"""OpenHands software-agent-sdk conversation directories: ``base_state.json`` and ``events/event-<n>-<id>.json``.

Follows the SDK's persistence (``openhands/sdk/conversation/persistence_const.py``: files named
``event-{idx:05d}-{event_id}.json``, ordered by ``idx``, which must run 0, 1, 2, ... without a gap) and its
event models (``openhands/sdk/event/``, https://github.com/OpenHands/software-agent-sdk), each event a JSON
object tagged by ``kind``:

- ``SystemPromptEvent``: ``system_prompt.text`` (and ``dynamic_context.text``) form the system prompt; its
  ``tools`` give the tool names (``title``, else ``name``).
- ``MessageEvent``: ``llm_message`` ``{role, content: [TextContent | ImageContent]}`` plus
  ``extended_content``; images become placeholders.
- ``ActionEvent``: ``thought`` (assistant text) and ``tool_call`` ``{id, name, arguments}`` (a JSON string)
  become a ToolUse with ``tool_call_id``; the actions of one LLM response (parallel calls) are consecutive
  events and merge into one assistant message.
- ``ObservationEvent``: ``observation.content`` answers ``tool_call_id``; ``observation.is_error`` gives
  status ``error``. ``AgentErrorEvent`` (``error``) and ``UserRejectObservation`` (``rejection_reason``)
  answer a call with status ``error``.

Every other event kind is not conversation content and is skipped: ``Condensation``,
``CondensationRequest`` and ``CondensationSummaryEvent`` (the agent's own context management: the import
keeps the full history), ``ConversationStateUpdateEvent``, ``PauseEvent``, ``InterruptEvent``,
``TokenEvent``, ``StreamingDeltaEvent``, ``LLMCompletionLogEvent``, ``HookExecutionEvent``,
``ACPToolCallEvent`` and kinds added by later SDK versions. The conversation id and the model come from
``base_state.json`` (``id``, ``agent.llm.model``) when it is there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from harness.core.messages import Role
from harness.run.traces.formats import DIRECTORY, FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    IMAGE_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    TraceError,
    TranscriptBuilder,
    child,
    parse_arguments,
    type_name,
)
from harness.run.traces.reading import TraceText, derived_id, read_json

NAME = "openhands"
_EVENT_FILE = re.compile(r"^event-(\d{5,})-([0-9a-fA-F\-]{8,})\.json$")


def is_session_dir(path: Path) -> bool:
    """An OpenHands conversation directory (``events/`` inside)."""
    return (path / "events").is_dir()


def load(path: Path) -> list[ImportedSession]:
    """The one session of an OpenHands conversation directory."""
    events_dir = path / "events"
    if not events_dir.is_dir():
        raise TraceError(str(path), "directory", "no events/ directory (not an OpenHands conversation)")
    session_id, model = _base_state(path)
    numbered = sorted((int(m.group(1)), p) for p in events_dir.iterdir()
                      if (m := _EVENT_FILE.match(p.name)) is not None)
    builder = TranscriptBuilder(str(events_dir), "directory")
    tools: list[str] = []
    for expected, (number, file) in enumerate(numbered):
        if number != expected:
            raise TraceError(str(file), "$", f"event {expected} is missing (the event numbers must run "
                             f"0, 1, 2, ... without a gap; this file is number {number})")
        _event(builder, file, tools)
    return [ImportedSession(source=str(path), session_id=session_id or path.name, format=NAME,
                            system=builder.system_prompt, messages=builder.build(), model=model,
                            tools=tuple(tools), notes=tuple(builder.notes))]


def _base_state(path: Path) -> tuple[str | None, str | None]:
    state_file = path / "base_state.json"
    if not os.path.lexists(state_file):  # anything else by that name (a pipe, a folder) is read and refused
        return None, None
    state = read_json(state_file)
    if not isinstance(state, dict):
        raise TraceError(str(state_file), "$", f"expected an object, got {type_name(state)}")
    session_id = state.get("id") if isinstance(state.get("id"), str) else None
    agent = state.get("agent")
    llm = agent.get("llm") if isinstance(agent, dict) else None
    model = llm.get("model") if isinstance(llm, dict) and isinstance(llm.get("model"), str) else None
    return session_id, model


def _event(builder: TranscriptBuilder, file: Path, tools: list[str]) -> None:
    reader = JsonReader(str(file))
    read_event(reader, builder, reader.obj(read_json(file), "$", "an event object"), tools)


def read_event(reader: JsonReader, builder: TranscriptBuilder, event: dict[str, Any], tools: list[str],
               prefix: str = "") -> None:
    """One event into ``builder`` (a tool's name into ``tools``); ``prefix`` goes before each JSON path (``line
    N `` for a record of an events JSONL file)."""
    kind = reader.req_str(event, "kind", f"{prefix}$")
    source = reader.source
    if prefix:
        reader = _Prefixed(reader.source, prefix)
    if kind == "SystemPromptEvent":
        for key in ("system_prompt", "dynamic_context"):
            if event.get(key) is not None:
                builder.system(reader.req_str(reader.obj(event[key], child("$", key)), "text", child("$", key)))
        for i, tool_value in enumerate(reader.arr(event.get("tools", []), "$.tools")):
            tool = reader.obj(tool_value, child("$.tools", i), "a tool object")
            name = tool.get("title") or tool.get("name")
            if isinstance(name, str):
                tools.append(name)
    elif kind == "MessageEvent":
        message = reader.obj(reader.required(event, "llm_message", "$"), "$.llm_message")
        role = reader.req_str(message, "role", "$.llm_message")
        texts = _content(reader, message.get("content", []), "$.llm_message.content")
        texts += _content(reader, event.get("extended_content", []), "$.extended_content")
        if role == "system":
            builder.system("\n".join(t for t, _ in texts))
            return
        if role not in ("user", "assistant"):
            raise reader.error("$.llm_message.role", f"unexpected role {role!r} in a MessageEvent")
        typed_role: Role = "user" if role == "user" else "assistant"
        for text, where in texts:
            builder.text(typed_role, text, source, where)
    elif kind == "ActionEvent":
        for text, where in _content(reader, event.get("thought", []), "$.thought"):
            builder.text("assistant", text, source, where)
        call = reader.obj(reader.required(event, "tool_call", "$"), "$.tool_call")
        name = reader.opt_str(call, "name", "$.tool_call") or reader.req_str(event, "tool_name", "$")
        builder.tool_use(reader.req_str(event, "tool_call_id", "$"), name,
                         parse_arguments(call.get("arguments", "{}")), source, "$.tool_call")
    elif kind == "ObservationEvent":
        observation = reader.obj(reader.required(event, "observation", "$"), "$.observation")
        texts = _content(reader, observation.get("content", []), "$.observation.content")
        texts += _content(reader, event.get("extended_content", []), "$.extended_content")
        is_error = observation.get("is_error", False) is True
        builder.tool_result(reader.req_str(event, "tool_call_id", "$"), "error" if is_error else "success",
                            "\n".join(t for t, _ in texts), source, "$")
    elif kind == "AgentErrorEvent":
        builder.tool_result(reader.req_str(event, "tool_call_id", "$"), "error", reader.req_str(event, "error", "$"),
                            source, "$")
    elif kind == "UserRejectObservation":
        reason = reader.opt_str(event, "rejection_reason", "$") or "User rejected the action"
        builder.tool_result(reader.req_str(event, "tool_call_id", "$"), "error", f"Action rejected: {reason}",
                            source, "$")


class _Prefixed(JsonReader):
    """A reader whose paths start with ``line N`` (an event of a JSONL file): errors name the line."""

    __slots__ = ("prefix",)

    def __init__(self, source: str, prefix: str) -> None:
        super().__init__(source)
        self.prefix = prefix

    def error(self, where: str, problem: str) -> TraceError:
        return TraceError(self.source, f"{self.prefix}{where}", problem)


def _content(reader: JsonReader, value: Any, where: str) -> list[tuple[str, str]]:
    out = []
    for i, part_value in enumerate(reader.arr(value, where)):
        part_where = child(where, i)
        part = reader.obj(part_value, part_where, "a content object")
        kind = reader.req_str(part, "type", part_where)
        if kind == "text":
            out.append((reader.req_str(part, "text", part_where), part_where))
        elif kind == "image":
            out.append((IMAGE_PLACEHOLDER, part_where))
        else:
            raise reader.error(child(part_where, "type"), f"unknown content type {kind!r}")
    return out


def sniff(path: Path) -> Claim | None:
    """Whether ``path`` is an OpenHands conversation directory (`is_session_dir`); rank 0, before strands."""
    return Claim.document(0) if is_session_dir(path) else None


FORMAT = TraceFormat(name=NAME, kind=DIRECTORY, description="OpenHands SDK conversation directories",
                     sniff=sniff, load=load, looks_for="events/ (OpenHands)")


# The same events as one JSONL file ------------------------------------------------------------------------

EVENTS_NAME = "openhands-events"
#: The event kinds that mark an OpenHands events file (the conversation's own events; one of them on the
#: first record, with the ``id`` and ``timestamp`` every event has).
_EVENT_KINDS = frozenset({"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent",
                          "UserRejectObservation", "ConversationStateUpdateEvent", "Condensation",
                          "CondensationRequest", "CondensationSummaryEvent", "PauseEvent", "TokenEvent"})


def load_events(trace: TraceText) -> list[ImportedSession]:
    """The one session of an OpenHands events JSONL file (one event per line, in order), read as its directory
    of event files is."""
    reader = JsonReader(trace.source)
    builder = TranscriptBuilder(trace.source, trace.records[0].where)
    tools: list[str] = []
    for record in trace.records:
        prefix = record.where.removesuffix("$")
        event = reader.obj(record.value, record.where, "an event object")
        read_event(reader, builder, event, tools, prefix)
    return [ImportedSession(source=trace.source, session_id=derived_id(trace.stem, 0, 1), format=EVENTS_NAME,
                            system=builder.system_prompt, messages=builder.build(), tools=tuple(tools),
                            notes=tuple(builder.notes))]


def sniff_events(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is an OpenHands events file: JSONL whose first record is an event (``kind`` one of the
    SDK's event kinds, with ``id`` and ``timestamp``); document rank 8."""
    first = trace.records[0].value
    if (trace.jsonl and isinstance(first, dict) and first.get("kind") in _EVENT_KINDS
            and {"id", "timestamp"} <= set(first)):
        return Claim.document(8)
    return None


EVENTS_FORMAT = TraceFormat(name=EVENTS_NAME, kind=FILE, description="OpenHands SDK events, one per line (JSONL)",
                            sniff=sniff_events, load=load_events)
