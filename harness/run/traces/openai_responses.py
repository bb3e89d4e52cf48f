"""OpenAI Responses transcripts: ``{"input": [...]}`` (a request), ``{"output": [...]}`` (a response; with
both, input items come first), a bare list of items, or JSONL (one item or one request/response per line).

Follows the Responses API reference (https://platform.openai.com/docs/api-reference/responses): message
items (``role`` and ``content``, a string or parts ``input_text``/``output_text``/``refusal``; images,
files and audio become placeholders), ``function_call`` ``{call_id, name, arguments}`` (a JSON string),
``function_call_output`` ``{call_id, output}`` (a string or content parts) and the free-form
``custom_tool_call``/``custom_tool_call_output`` pair. ``instructions`` and system/developer messages form
the system prompt. ``reasoning`` items and the items of hosted tools (web and file search, computer use,
code interpreter, MCP, shell, ...) are skipped: they are not function calls the client answered. There is
no error flag for function output: every result is ``success``.
"""

from __future__ import annotations

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
)
from harness.run.traces.openai_chat import header_document, request_sessions
from harness.run.traces.reading import ContentParts, Conversation, TraceText
from harness.run.traces.sniffing import Marks, claim, part_type

NAME = "openai-responses"
_CONTENT_PARTS = ContentParts(
    {"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal", "summary_text": "text"},
    {"input_image": IMAGE_PLACEHOLDER, "input_file": FILE_PLACEHOLDER, "input_audio": AUDIO_PLACEHOLDER})
#: Items that are not conversation text or client function calls.
SKIPPED_ITEMS = frozenset({
    "reasoning", "web_search_call", "file_search_call", "computer_call", "computer_call_output",
    "code_interpreter_call", "image_generation_call", "local_shell_call", "local_shell_call_output",
    "shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output", "mcp_call",
    "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "item_reference", "compaction",
})
#: Keys of a request or response object that hold items, in conversation order.
ITEM_KEYS = ("input", "output")


def parse(trace: TraceText) -> list[ImportedSession]:
    """The sessions of a Responses trace file."""
    return request_sessions(trace, ITEM_KEYS, 'a Responses request or response ({"input": [...]}) or an array of items',
                            NAME, _read_conversation)


def _read_conversation(reader: JsonReader, builder: TranscriptBuilder, conversation: Conversation) -> None:
    instructions = reader.opt_str(conversation.header, "instructions", conversation.where)
    builder.system(instructions or "")
    for value, where in conversation.items:
        if isinstance(value, str):  # ``"input": "..."``: the user's prompt as plain text
            builder.text("user", value, reader.source, where)
        else:
            read_item(reader, builder, value, where)


def read_item(reader: JsonReader, builder: TranscriptBuilder, value: Any, where: str) -> None:
    item = reader.obj(value, where, "an item object")
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"  # an easy input message: {role, content}
    kind = reader.string(kind, child(where, "type"), "an item type")
    source = reader.source
    if kind == "message":
        role = reader.req_str(item, "role", where)
        content = reader.required(item, "content", where)
        texts = _CONTENT_PARTS.read(reader, content, child(where, "content"))
        if role in ("system", "developer"):
            builder.system("\n".join(text for text, _ in texts))
        elif role in ("user", "assistant"):
            for text, part_where in texts:
                builder.text("user" if role == "user" else "assistant", text, source, part_where)
        else:
            raise reader.error(child(where, "role"),
                               f"unknown role {role!r} (expected system, developer, user or assistant)")
    elif kind == "function_call":
        builder.tool_use(reader.req_str(item, "call_id", where), reader.req_str(item, "name", where),
                         parse_arguments(item.get("arguments", "{}")), source, where)
    elif kind == "custom_tool_call":
        builder.tool_use(reader.req_str(item, "call_id", where), reader.req_str(item, "name", where),
                         {"input": reader.req_str(item, "input", where)}, source, where)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output = reader.required(item, "output", where)
        text = _CONTENT_PARTS.text(reader, output, child(where, "output"))
        builder.tool_result(reader.req_str(item, "call_id", where), "success", text, source, where)
    elif kind not in SKIPPED_ITEMS:
        raise reader.error(child(where, "type"), f"unknown item type {kind!r}")


def dump(session: ImportedSession) -> dict[str, Any]:
    """The session as a Responses request object (error statuses are lost: the format has none)."""
    items: list[dict[str, Any]] = []
    for message in session.messages:
        for block in message.blocks:
            if isinstance(block, Text):
                part = "input_text" if message.role == "user" else "output_text"
                items.append({"type": "message", "role": message.role,
                              "content": [{"type": part, "text": block.text}]})
            elif isinstance(block, ToolUse):
                items.append({"type": "function_call", "call_id": block.id, "name": block.name,
                              "arguments": arguments_text(block.input)})
            elif isinstance(block, ToolResult):
                items.append({"type": "function_call_output", "call_id": block.tool_use_id,
                              "output": block.content})
    tools = [{"type": "function", "name": n} for n in session.tools]
    return header_document(session, "input", items, tools, system_key="instructions")


# Sniffing ------------------------------------------------------------------------------------------------

#: Item types only the Responses API has (a ``message`` item counts when it has a role).
_ITEM_TYPES = frozenset({"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
                         "message"}) | SKIPPED_ITEMS
_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})


def _document_rank(document: dict[str, Any]) -> int | None:
    # Rank 1: after ATIF's keys; a conversation's "messages" makes it a chat format's, not a Responses object.
    if "messages" not in document and any(k in document for k in (*ITEM_KEYS, "instructions")):
        return 1
    return None


def _item_rank(item: dict[str, Any]) -> int | None:
    kind = item.get("type")
    if isinstance(kind, str) and kind in _ITEM_TYPES and (kind != "message" or "role" in item):
        return 1  # before every other mark of the same object
    if any(k in item for k in ITEM_KEYS) and "role" not in item:
        return 5  # a request or response in an array or JSONL: after a nested conversation
    return None


def _part(part: dict[str, Any]) -> bool:
    return part_type(part) in _PARTS


_MARKS = Marks(document=_document_rank, item=_item_rank, part=_part)


def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is Responses: ``input``/``output``/``instructions`` objects, Responses item types or
    ``input_*``/``output_text`` parts."""
    return claim(trace, _MARKS)


FORMAT = TraceFormat(name=NAME, kind=FILE, description="Responses items", sniff=sniff, load=parse, dump=dump)
