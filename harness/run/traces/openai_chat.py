"""OpenAI Chat Completions transcripts: ``{"messages": [...]}``, a bare list of messages, or JSONL (one
message per line, or one conversation per line).

Follows the Chat Completions API reference (https://platform.openai.com/docs/api-reference/chat/create):
roles ``system``/``developer`` (joined into the system prompt), ``user``, ``assistant`` (``content`` and
``tool_calls`` ``[{id, type: "function", function: {name, arguments}}]``, ``arguments`` a JSON string) and
``tool`` (``tool_call_id``, ``content``). Content is a string or an array of parts: ``text`` and
``refusal`` are kept, ``image_url``/``input_audio``/``file`` become placeholders. The format has no error
flag for tool results: every result is ``success``. Tool-call arguments that are not a JSON object are kept
as ``{"_raw_arguments": text}``. The optional ``model`` and ``tools`` (names) of the object are read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from harness.core.messages import Text, ToolResult, ToolUse
from harness.run.traces.formats import FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    AUDIO_PLACEHOLDER,
    FILE_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    TranscriptBuilder,
    arguments_text,
    child,
    parse_arguments,
    structured_text,
)
from harness.run.traces.reading import ContentParts, Conversation, TraceText, conversations, derived_id
from harness.run.traces.sniffing import Marks, claim, part_type

NAME = "openai-chat"
_CONTENT_PARTS = ContentParts({"text": "text", "refusal": "refusal"},
                              {"image_url": IMAGE_PLACEHOLDER, "input_audio": AUDIO_PLACEHOLDER,
                               "file": FILE_PLACEHOLDER})


def parse(trace: TraceText) -> list[ImportedSession]:
    """The sessions of a Chat Completions trace file."""
    return request_sessions(trace, ("messages",), 'a chat conversation ({"messages": [...]}) or an array of messages',
                            NAME, _read_conversation)


def _read_conversation(reader: JsonReader, builder: TranscriptBuilder, conversation: Conversation) -> None:
    for value, where in conversation.items:
        _message(reader, builder, value, where)


#: Reads one conversation of a request-shaped format into the builder: its header's system prompt, if any,
#: and its messages or items.
ConversationReader = Callable[[JsonReader, TranscriptBuilder, Conversation], None]


def request_sessions(trace: TraceText, keys: tuple[str, ...], what: str, fmt: str,
                     read: ConversationReader) -> list[ImportedSession]:
    """The sessions of a request-shaped format's file: its `conversations` (messages under ``keys``; ``what``
    names the shape in the error for anything else), each read by ``read`` and made a session by
    `header_session`."""
    reader = JsonReader(trace.source)
    found = conversations(trace, keys, what)
    sessions = []
    for index, conversation in enumerate(found):
        builder = TranscriptBuilder(trace.source, conversation.where)
        read(reader, builder, conversation)
        fallback_id = derived_id(trace.stem, index, len(found))
        sessions.append(header_session(trace.source, conversation.header, builder, fmt, fallback_id))
    return sessions


def header_id(header: dict[str, Any]) -> str | None:
    """A conversation's own id, when its object carries one."""
    for key in ("session_id", "conversation_id", "id"):
        value = header.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def header_session(source: str, header: dict[str, Any], builder: TranscriptBuilder, fmt: str,
                   fallback_id: str) -> ImportedSession:
    """The session a conversation object of a request-shaped format makes: its messages from ``builder``, and
    its id (``fallback_id`` when it has none), model and declared tools from its ``header``."""
    return ImportedSession(
        source=source,
        session_id=header_id(header) or fallback_id,
        format=fmt,
        system=builder.system_prompt,
        messages=builder.build(),
        model=header.get("model") if isinstance(header.get("model"), str) else None,
        tools=tool_names(header.get("tools")),
        tool_schemas=tool_schemas(header.get("tools")),
        notes=tuple(builder.notes),
    )


def header_document(session: ImportedSession, items_key: str, items: list[dict[str, Any]],
                    tools: list[dict[str, Any]], *, system_key: str | None = None) -> dict[str, Any]:
    """The inverse of `header_session`, for writers: the conversation object with the session's id, model,
    system prompt under ``system_key`` (None: the format writes it as a message), ``tools`` (the declared
    tools as the format writes them) and last the ``items`` under ``items_key``."""
    doc: dict[str, Any] = {"id": session.session_id}
    if session.model is not None:
        doc["model"] = session.model
    if system_key is not None and session.system:
        doc[system_key] = session.system
    if tools:
        doc["tools"] = tools
    doc[items_key] = items
    return doc


def tool_schemas(tools: Any) -> tuple[str, ...]:
    """The declared tools as sent, one JSON text each (sorted keys), when they are more than names: the
    part of every request's input the tools take."""
    if not isinstance(tools, list):
        return ()
    out = []
    for tool in tools:
        if isinstance(tool, dict) and set(tool) - {"name", "type", "function"} | _schema_keys(tool.get("function")):
            out.append(structured_text(tool))
    return tuple(out)


def _schema_keys(inner: Any) -> set[str]:
    return set(inner) - {"name"} if isinstance(inner, dict) else set()


def tool_names(tools: Any) -> tuple[str, ...]:
    """Names of declared tools: ``{"type": "function", "function": {"name"}}`` or ``{"name"}`` entries."""
    if not isinstance(tools, list):
        return ()
    names = []
    for tool in tools:
        if isinstance(tool, dict):
            inner = tool.get("function")
            name = inner.get("name") if isinstance(inner, dict) else tool.get("name")
            if isinstance(name, str):
                names.append(name)
    return tuple(names)


def _message(reader: JsonReader, builder: TranscriptBuilder, value: Any, where: str) -> None:
    message = reader.obj(value, where, "a message object")
    role = reader.req_str(message, "role", where)
    source = reader.source
    content_where = child(where, "content")
    if role in ("system", "developer"):
        builder.system("\n".join(text for text, _ in _content(reader, message.get("content"), content_where)))
    elif role == "user":
        for text, part_where in _content(reader, message.get("content"), content_where):
            builder.text("user", text, source, part_where)
    elif role == "assistant":
        for text, part_where in _content(reader, message.get("content"), content_where):
            builder.text("assistant", text, source, part_where)
        refusal = reader.opt_str(message, "refusal", where)
        if refusal:
            builder.text("assistant", refusal, source, child(where, "refusal"))
        calls = message.get("tool_calls")
        if calls is not None:
            calls_where = child(where, "tool_calls")
            for i, call in enumerate(reader.arr(calls, calls_where)):
                _tool_call(reader, builder, call, child(calls_where, i))
    elif role == "tool":
        if "tool_call_id" not in message:
            raise reader.error(child(where, "tool_call_id"), "a 'tool' message needs tool_call_id")
        call_id = reader.string(message["tool_call_id"], child(where, "tool_call_id"))
        text = "\n".join(text for text, _ in _content(reader, message.get("content"), content_where))
        builder.tool_result(call_id, "success", text, source, where)
    else:
        raise reader.error(
            child(where, "role"), f"unknown role {role!r} (expected system, developer, user, assistant or tool)")


def _tool_call(reader: JsonReader, builder: TranscriptBuilder, value: Any, where: str) -> None:
    call = reader.obj(value, where, "a tool call object")
    call_id = reader.req_str(call, "id", where)
    if "custom" in call:  # a custom tool: free-form text input instead of JSON arguments
        custom_where = child(where, "custom")
        custom = reader.obj(call["custom"], custom_where)
        name = reader.req_str(custom, "name", custom_where)
        builder.tool_use(call_id, name, {"input": reader.req_str(custom, "input", custom_where)},
                         reader.source, where)
        return
    function_where = child(where, "function")
    function = reader.obj(reader.required(call, "function", where), function_where)
    name = reader.req_str(function, "name", function_where)
    arguments = parse_arguments(function.get("arguments", "{}"))
    builder.tool_use(call_id, name, arguments, reader.source, where)


def _content(reader: JsonReader, content: Any, where: str) -> list[tuple[str, str]]:
    """(text, path) of each text part of a message's content; media parts become placeholders."""
    return [] if content is None else _CONTENT_PARTS.read(reader, content, where)


def dump(session: ImportedSession) -> dict[str, Any]:
    """The session as a Chat Completions conversation object (error statuses are lost: the format has none;
    an assistant message's texts are written before its tool calls)."""
    messages: list[dict[str, Any]] = []
    if session.system:
        messages.append({"role": "system", "content": session.system})
    for message in session.messages:
        if message.role == "user":
            texts: list[str] = []
            for block in message.blocks:
                if isinstance(block, Text):
                    texts.append(block.text)
                elif isinstance(block, ToolResult):
                    if texts:
                        messages.append({"role": "user", "content": _text_content(texts)})
                        texts = []
                    messages.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": block.content})
            if texts:
                messages.append({"role": "user", "content": _text_content(texts)})
        else:
            texts = [b.text for b in message.blocks if isinstance(b, Text)]
            out: dict[str, Any] = {"role": "assistant", "content": _text_content(texts) if texts else None}
            calls = [
                {"id": b.id, "type": "function", "function": {"name": b.name, "arguments": arguments_text(b.input)}}
                for b in message.blocks if isinstance(b, ToolUse)
            ]
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
    tools = ([json.loads(t) for t in session.tool_schemas]
             or [{"type": "function", "function": {"name": n}} for n in session.tools])
    return header_document(session, "messages", messages, tools)


def _text_content(texts: list[str]) -> str | list[dict[str, str]]:
    # One text is the plain string every client writes; several stay separate parts so blocks survive.
    return texts[0] if len(texts) == 1 else [{"type": "text", "text": t} for t in texts]


# Sniffing ------------------------------------------------------------------------------------------------

#: Roles whose plain text messages read the same in every chat format: a trace of nothing else is read as
#: Chat Completions, the most common of them.
_PLAIN_ROLES = ("user", "assistant", "system", "developer")


def _item_rank(item: dict[str, Any]) -> int | None:
    # Rank 2: after a Responses item type (rank 1), which a Responses item with a role "tool" also has.
    return 2 if item.get("role") == "tool" or "tool_calls" in item or "tool_call_id" in item else None


def _part(part: dict[str, Any]) -> bool:
    return part_type(part) == "image_url"


def _plain(item: dict[str, Any]) -> bool:
    return item.get("role") in _PLAIN_ROLES


_MARKS = Marks(item=_item_rank, part=_part, reads_conversations=True, plain=_plain)


def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is Chat Completions: tool messages or calls, ``image_url`` parts; else a conversation
    or plain user/assistant messages no other format marks."""
    return claim(trace, _MARKS)


FORMAT = TraceFormat(name=NAME, kind=FILE, description="Chat Completions messages", sniff=sniff, load=parse,
                     dump=dump)
