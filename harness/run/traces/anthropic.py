"""Anthropic Messages transcripts: the request shape ``{"system": ..., "messages": [...]}``, a bare list of
messages, or JSONL (one message or one conversation per line).

Follows the Messages API reference (https://docs.anthropic.com/en/api/messages) and its tool-use guide
(https://docs.anthropic.com/en/docs/build-with-claude/tool-use): roles ``user`` and ``assistant``; content a
string or blocks ``text``, ``tool_use`` ``{id, name, input}``, ``tool_result`` ``{tool_use_id, content
(string or text/image blocks), is_error}``. ``image`` and ``document`` blocks become placeholders;
``thinking``/``redacted_thinking`` blocks and server-tool blocks (``server_tool_use``, ``*_tool_result``
of server tools) are skipped: they are not client tool calls. ``is_error: true`` gives status ``error``.
"""

from __future__ import annotations

from typing import Any

from harness.core.messages import Role, Text, ToolResult, ToolUse
from harness.run.traces.formats import FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    FILE_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    TranscriptBuilder,
    child,
    type_name,
)
from harness.run.traces.openai_chat import header_document, request_sessions
from harness.run.traces.reading import ContentParts, Conversation, TraceText
from harness.run.traces.sniffing import Marks, claim, part_type

NAME = "anthropic"
_PLACEHOLDERS = {"image": IMAGE_PLACEHOLDER, "document": FILE_PLACEHOLDER}
#: The blocks of a tool result's content.
_RESULT_BLOCKS = ContentParts({"text": "text"}, _PLACEHOLDERS, structured=frozenset({"search_result"}),
                              part="content block", unknown="tool result block")
#: Blocks that are not conversation text or client tool calls (thinking, server-side tools).
SKIPPED_BLOCKS = frozenset({
    "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
    "code_execution_tool_result", "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
    "mcp_tool_use", "mcp_tool_result", "container_upload", "search_result",
})


def parse(trace: TraceText) -> list[ImportedSession]:
    """The sessions of an Anthropic Messages trace file."""
    return request_sessions(trace, ("messages",), 'a Messages request ({"messages": [...]}) or an array of messages',
                            NAME, _read_conversation)


def _read_conversation(reader: JsonReader, builder: TranscriptBuilder, conversation: Conversation) -> None:
    header = conversation.header
    if "system" in header:
        builder.system(_system(reader, header["system"], child(conversation.where, "system")))
    for value, where in conversation.items:
        _message(reader, builder, value, where)


def _system(reader: JsonReader, value: Any, where: str) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    blocks = reader.arr(value, where, "a string or an array of text blocks")
    texts = []
    for i, block in enumerate(blocks):
        block_where = child(where, i)
        texts.append(reader.req_str(reader.obj(block, block_where, "a text block"), "text", block_where))
    return "\n".join(texts)


def _message(reader: JsonReader, builder: TranscriptBuilder, value: Any, where: str) -> None:
    message = reader.obj(value, where, "a message object")
    role = reader.req_str(message, "role", where)
    if role not in ("user", "assistant"):
        raise reader.error(child(where, "role"), f"unknown role {role!r} (expected user or assistant)")
    typed_role: Role = "user" if role == "user" else "assistant"
    content_where = child(where, "content")
    content = reader.required(message, "content", where)
    if isinstance(content, str):
        builder.text(typed_role, content, reader.source, content_where)
        return
    for i, value in enumerate(reader.arr(content, content_where, "a string or an array of content blocks")):
        _block(reader, builder, typed_role, value, child(content_where, i))


def _block(reader: JsonReader, builder: TranscriptBuilder, role: Role, value: Any, where: str) -> None:
    block = reader.obj(value, where, "a content block object")
    kind = reader.req_str(block, "type", where)
    source = reader.source
    if kind == "text":
        builder.text(role, reader.req_str(block, "text", where), source, where)
    elif kind in _PLACEHOLDERS:
        builder.text(role, _PLACEHOLDERS[kind], source, where)
    elif kind == "tool_use":
        if role != "assistant":
            raise reader.error(child(where, "type"),
                               "a tool_use block in a user message (tool calls are the assistant's)")
        tool_input = reader.obj(reader.required(block, "input", where), child(where, "input"))
        builder.tool_use(reader.req_str(block, "id", where), reader.req_str(block, "name", where), tool_input,
                         source, where)
    elif kind == "tool_result":
        if role != "user":
            raise reader.error(child(where, "type"),
                               "a tool_result block in an assistant message (results are the user's)")
        is_error = block.get("is_error", False)
        if not isinstance(is_error, bool) and is_error is not None:
            raise reader.error(child(where, "is_error"), f"expected a boolean, got {type_name(is_error)}")
        text = _result_content(reader, block.get("content"), child(where, "content"))
        builder.tool_result(reader.req_str(block, "tool_use_id", where), "error" if is_error else "success", text,
                            source, where)
    elif kind not in SKIPPED_BLOCKS:
        raise reader.error(child(where, "type"), f"unknown content block type {kind!r}")


def _result_content(reader: JsonReader, content: Any, where: str) -> str:
    return "" if content is None else _RESULT_BLOCKS.text(reader, content, where)


def dump(session: ImportedSession) -> dict[str, Any]:
    """The session as a Messages request object; every block keeps its order, status and text."""
    messages = []
    for message in session.messages:
        blocks: list[dict[str, Any]] = []
        for block in message.blocks:
            if isinstance(block, Text):
                blocks.append({"type": "text", "text": block.text})
            elif isinstance(block, ToolUse):
                blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)})
            elif isinstance(block, ToolResult):
                result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id,
                                          "content": block.content}
                if block.status == "error":
                    result["is_error"] = True
                blocks.append(result)
        messages.append({"role": message.role, "content": blocks})
    tools = [{"name": n, "input_schema": {"type": "object"}} for n in session.tools]
    return header_document(session, "messages", messages, tools, system_key="system")


# Sniffing ------------------------------------------------------------------------------------------------

#: Content blocks only the Messages API has.
_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def _document_rank(document: dict[str, Any]) -> int | None:
    # Rank 2, after ATIF's and Responses' keys: a top-level "system" beside "messages" is a Messages request.
    return 2 if "messages" in document and "system" in document else None


def _conversation(conversation: dict[str, Any]) -> bool:
    return "system" in conversation


def _part(part: dict[str, Any]) -> bool:
    return part_type(part) in _BLOCKS


_MARKS = Marks(document=_document_rank, part=_part, conversation=_conversation)


def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is Anthropic Messages: a conversation with a ``system`` key, or Messages-only content
    blocks (``tool_use``, ``tool_result``, thinking)."""
    return claim(trace, _MARKS)


FORMAT = TraceFormat(name=NAME, kind=FILE, description="Anthropic Messages API", sniff=sniff, load=parse,
                     dump=dump)
