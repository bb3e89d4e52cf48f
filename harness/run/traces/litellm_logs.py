"""LiteLLM completion-log folders: one JSON file per model call, as OpenHands writes them with
``log_completions`` (``<model>-<unix time>.json``, ``<model>-<unix time>-<4 hex>.json``).

Follows OpenHands' writer (https://github.com/OpenHands/software-agent-sdk,
``openhands-sdk/openhands/sdk/llm/utils/telemetry.py`` ``Telemetry.log_llm_call`` and the request context of
``openhands-sdk/openhands/sdk/llm/llm.py``): each log is an object with the request's ``messages`` (Chat
Completions), the declared ``tools``, the call's ``kwargs``, the LiteLLM ``response`` (``choices[0].message``,
``usage``), ``cost``, ``timestamp`` (Unix time) and ``latency_sec``; with prompt-based function calling also
``raw_messages`` (the messages before conversion) and ``raw_response`` (the model's own text).

The folder is one session: the logs sorted by ``timestamp`` (else the time in the file name), the session is
the last call's request ``messages`` then its response message, read as Chat Completions messages (``system``
joins the system prompt; ``user``; ``assistant`` text and ``tool_calls``; ``tool`` results, all ``success``;
text parts are kept, ``cache_control`` and other keys of a part dropped, image, audio and file parts become
placeholders; an assistant's ``reasoning_content`` and ``thinking_blocks`` are skipped). Each log is one
`RecordedUsage`: the i-th log is the call that produced the i-th assistant message (by position), with
``prompt_tokens`` (input), ``completion_tokens``, ``prompt_tokens_details.cached_tokens`` (else
``cache_read_input_tokens``), ``cost``, ``latency_sec`` and ``timestamp``; when the logs and the assistant
messages do not pair up (a folder of several conversations, a condensed history), their sum is kept as the
session's total, with a note. Failed calls (``...-error.json`` logs, no response) are skipped, with a note.

Tools: the tools the request sent (``kwargs.tools``) are the `ImportedSession.tool_schemas` (JSON text,
sorted keys); when the log keeps them only at the top (newer OpenHands drops the duplicate from ``kwargs``),
those, unless the call used prompt-based function calling, which sends none. Names come from either.

Prompt-based function calling (the last log has ``raw_messages``): the request's messages are what the model
read, its actions written as text in OpenHands' format (``openhands/sdk/llm/mixins/fn_call_converter.py``:
``<function=NAME>`` ``<parameter=KEY>value</parameter>`` ... ``</function>``, the closing tag possibly cut by
the stop word). The first action of each assistant message is read as a tool call (id ``toolu_NN``, string
arguments), the text around it kept; the next user message (``EXECUTION RESULT of [NAME]: ...``) is its
result, whole. The last message is ``raw_response``'s (the model's text) when the log has it. A note says so,
or that no action was found. The model is the last response's ``model``; the session id the folder's name.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.run.traces.formats import DIRECTORY, Claim, TraceFormat
from harness.run.traces.normal import (
    AUDIO_PLACEHOLDER,
    FILE_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    RecordedUsage,
    TraceError,
    TranscriptBuilder,
    child,
    parse_arguments,
    type_name,
)
from harness.run.traces.openai_chat import tool_names, tool_schemas
from harness.run.traces.reading import ContentParts, read_json

NAME = "litellm-logs"
#: The rank of the mark on a directory (`Claim.document`): after openhands (0) and strands (1).
DOCUMENT_RANK = 2
#: A log's file name: the model, the Unix time with milliseconds, OpenHands' newer random suffix, ``-error``.
_LOG_NAME = re.compile(r"-(\d{9,}\.\d+)(?:-[0-9a-f]{4})?(-error)?\.json$")
_CONTENT_PARTS = ContentParts({"text": "text", "refusal": "refusal"},
                              {"image_url": IMAGE_PLACEHOLDER, "input_audio": AUDIO_PLACEHOLDER,
                               "file": FILE_PLACEHOLDER})
#: OpenHands' prompt-based action: ``<function=NAME>`` then its parameters, up to ``</function>``.
_ACTION = re.compile(r"<function=([^>]+)>\n?(.*?)</function>", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>]+)>(.*?)</parameter>", re.DOTALL)


# Sniffing ------------------------------------------------------------------------------------------------

def _log_files(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.suffix.lower() == ".json" and not p.name.startswith("."))


def _is_log(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("messages"), list)
            and ("response" in value or "error" in value)
            and any(k in value for k in ("timestamp", "latency_sec", "context_window")))


def is_session_dir(path: Path) -> bool:
    """A folder of LiteLLM completion logs: its first file named like one is one (messages and a response)."""
    try:
        first = next((p for p in _log_files(path) if _LOG_NAME.search(p.name) and p.is_file()), None)
        return first is not None and _is_log(read_json(first))
    except (OSError, ValueError):  # TraceError is a ValueError: a folder that cannot be read is not claimed
        return False


def sniff(path: Path) -> Claim | None:
    """Whether ``path`` is a folder of LiteLLM completion logs; rank 2, after openhands and strands."""
    return Claim.document(DOCUMENT_RANK) if is_session_dir(path) else None


# Reading -------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Log:
    file: Path
    data: dict[str, Any]
    time: float


def load(path: Path) -> list[ImportedSession]:
    """The one session of a folder of LiteLLM completion logs."""
    logs, failed = _logs(path)
    if not logs:
        raise TraceError(str(path), "directory", "no LiteLLM completion log with a response"
                         + (f" ({len(failed)} failed call(s))" if failed else ""))
    last = logs[-1]
    reader = JsonReader(str(last.file))
    prompt_based = "raw_messages" in last.data
    messages_where = "$.messages"
    builder = TranscriptBuilder(reader.source, messages_where)
    chat = _Chat(reader, builder, prompt_based)
    for i, message in enumerate(reader.arr(last.data["messages"], messages_where)):
        chat.message(message, child(messages_where, i))
    response_key = "raw_response" if prompt_based and last.data.get("raw_response") is not None else "response"
    response, response_where = _response_message(reader, last.data[response_key], child("$", response_key))
    chat.message(response, response_where)
    messages = builder.build()
    notes = list(builder.notes)
    folder = str(path)
    if failed:
        notes.append(f"{folder}: {len(failed)} failed call(s) skipped (error logs without a response: "
                     f"{', '.join(f.name for f in failed)})")
    if prompt_based:
        notes.append(f"{folder}: {chat.text_actions} action(s) written as text (OpenHands' prompt-based function "
                     "calling, <function=NAME>) read as tool calls, the user message after each as its result"
                     if chat.text_actions else
                     f"{folder}: prompt-based function calling (the logs carry raw_messages), but no <function=...> "
                     "action was found in the assistant messages: read as text")
    calls = [i for i, m in enumerate(messages) if m.role == "assistant"]
    usage = [_usage(JsonReader(str(log.file)), log) for log in logs]
    if len(calls) == len(usage):
        recorded = tuple(RecordedUsage(call, u.input_tokens, u.output_tokens, u.cached_tokens, 1, u.cost_usd,
                                       u.latency_s, u.timestamp) for call, u in zip(calls, usage, strict=True))
    else:
        notes.append(f"{folder}: the {len(usage)} completion logs do not pair up with the {len(calls)} assistant "
                     "messages of the last request (several conversations or a condensed history in one folder): "
                     "their usage is kept as the session's total")
        recorded = (_total(usage),)
    sent, declared = _tools(reader, last.data, prompt_based)
    model = last.data["response"].get("model")
    return [ImportedSession(source=folder, session_id=path.name, format=NAME, system=builder.system_prompt,
                            messages=messages, model=model if isinstance(model, str) and model else None,
                            tools=tool_names(declared), tool_schemas=tool_schemas(sent), usage=recorded,
                            notes=tuple(notes))]


def _logs(path: Path) -> tuple[list[_Log], list[Path]]:
    """The folder's completion logs in call order, and the files of its failed calls."""
    logs: list[_Log] = []
    failed: list[Path] = []
    for file in _log_files(path):
        reader = JsonReader(str(file))
        data = reader.obj(read_json(file), "$", "a LiteLLM completion log object")
        if "response" not in data:
            if "error" in data:
                failed.append(file)
                continue
            raise reader.error("$.response", "missing (a LiteLLM completion log holds the request's messages and "
                               "the response)")
        reader.obj(data["response"], "$.response", "a chat completion response object")
        reader.arr(reader.required(data, "messages", "$"), "$.messages")
        logs.append(_Log(file, data, _time(reader, data, file)))
    logs.sort(key=lambda log: (log.time, log.file.name))
    return logs, failed


def _time(reader: JsonReader, data: dict[str, Any], file: Path) -> float:
    value = data.get("timestamp")
    if value is not None:
        return _number(reader, value, "$.timestamp")
    named = _LOG_NAME.search(file.name)
    if named is None:
        raise reader.error("$.timestamp", "missing, and the file name holds no Unix time to order the calls by")
    return float(named.group(1))


def _number(reader: JsonReader, value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        shown = value if isinstance(value, float) else type_name(value)  # inf and nan are named themselves
        raise reader.error(where, f"expected a number, got {shown}")
    return float(value)


def _response_message(reader: JsonReader, value: Any, where: str) -> tuple[dict[str, Any], str]:
    response = reader.obj(value, where, "a chat completion response object")
    choices_where = child(where, "choices")
    choices = reader.arr(reader.required(response, "choices", where), choices_where)
    if not choices:
        raise reader.error(choices_where, "empty: the response holds no message")
    choice_where = child(choices_where, 0)
    choice = reader.obj(choices[0], choice_where, "a choice object")
    message_where = child(choice_where, "message")
    message = reader.obj(reader.required(choice, "message", choice_where), message_where, "a message object")
    return message, message_where


def _tools(reader: JsonReader, data: dict[str, Any], prompt_based: bool) -> tuple[Any, Any]:
    """(the tools the request sent, the tools the log declares)."""
    declared = data.get("tools")
    kwargs = data.get("kwargs")
    # Newer OpenHands drops kwargs.tools as a duplicate of the top-level tools, which prompt-based calls never send.
    fallback = None if prompt_based else declared
    sent = kwargs["tools"] if isinstance(kwargs, dict) and "tools" in kwargs else fallback
    for value, where in ((sent, "$.kwargs.tools"), (declared, "$.tools")):
        if value is not None:
            reader.arr(value, where)
    return sent, declared if declared is not None else sent


def _usage(reader: JsonReader, log: _Log) -> RecordedUsage:
    """What one log records of its call (``call`` is set when the calls are paired with messages)."""
    data = log.data
    usage_where = "$.response.usage"
    usage = data["response"].get("usage")
    input_tokens = output_tokens = cached = None
    if usage is not None:
        usage = reader.obj(usage, usage_where)
        input_tokens = reader.opt_count(usage, "prompt_tokens", usage_where)
        output_tokens = reader.opt_count(usage, "completion_tokens", usage_where)
        details = usage.get("prompt_tokens_details")
        if isinstance(details, dict):
            cached = reader.opt_count(details, "cached_tokens", child(usage_where, "prompt_tokens_details"))
        if cached is None:
            cached = reader.opt_count(usage, "cache_read_input_tokens", usage_where)
    elif isinstance(data.get("usage_summary"), dict):  # OpenHands' own summary, when the response has no usage
        summary = data["usage_summary"]
        input_tokens = reader.opt_count(summary, "prompt_tokens", "$.usage_summary")
        output_tokens = reader.opt_count(summary, "completion_tokens", "$.usage_summary")
        cached = reader.opt_count(summary, "cache_read_tokens", "$.usage_summary")
    cost = None if data.get("cost") is None else _number(reader, data["cost"], "$.cost")
    latency = None if data.get("latency_sec") is None else _number(reader, data["latency_sec"], "$.latency_sec")
    return RecordedUsage(None, input_tokens, output_tokens, cached, 1, cost, latency, log.time)


def _total(usage: list[RecordedUsage]) -> RecordedUsage:
    def total(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    costs = [u.cost_usd for u in usage if u.cost_usd is not None]
    latencies = [u.latency_s for u in usage if u.latency_s is not None]
    return RecordedUsage(None, total([u.input_tokens for u in usage]), total([u.output_tokens for u in usage]),
                         total([u.cached_tokens for u in usage]), len(usage), sum(costs) if costs else None,
                         sum(latencies) if latencies else None, usage[0].timestamp)


class _Chat:
    """Reads Chat Completions messages into the builder; with prompt-based function calling, the actions
    written in assistant text become tool calls answered by the next user message."""

    def __init__(self, reader: JsonReader, builder: TranscriptBuilder, prompt_based: bool) -> None:
        self.reader = reader
        self.builder = builder
        self.prompt_based = prompt_based
        self.text_actions = 0
        #: The id of the text action waiting for its result (the next user message).
        self.pending: str | None = None

    def texts(self, message: dict[str, Any], where: str) -> list[tuple[str, str]]:
        content = message.get("content")
        return [] if content is None else _CONTENT_PARTS.read(self.reader, content, child(where, "content"))

    def message(self, value: Any, where: str) -> None:
        reader, builder, source = self.reader, self.builder, self.reader.source
        message = reader.obj(value, where, "a message object")
        role = reader.req_str(message, "role", where)
        if role in ("system", "developer"):
            builder.system("\n".join(text for text, _ in self.texts(message, where)))
        elif role == "user":
            texts = self.texts(message, where)
            if self.pending is not None:
                builder.tool_result(self.pending, "success", "\n".join(t for t, _ in texts), source, where)
                self.pending = None
            else:
                for text, text_where in texts:
                    builder.text("user", text, source, text_where)
        elif role == "assistant":
            self.pending = None
            for text, text_where in self.texts(message, where):
                self.assistant_text(text, text_where)
            calls = message.get("tool_calls")
            if calls is not None:
                calls_where = child(where, "tool_calls")
                for i, call in enumerate(reader.arr(calls, calls_where)):
                    self.tool_call(call, child(calls_where, i))
        elif role == "tool":
            call_where = child(where, "tool_call_id")
            call_id = reader.string(reader.required(message, "tool_call_id", where), call_where)
            builder.tool_result(call_id, "success", "\n".join(t for t, _ in self.texts(message, where)), source, where)
        else:
            raise reader.error(child(where, "role"),
                               f"unknown role {role!r} (expected system, user, assistant or tool)")

    def tool_call(self, value: Any, where: str) -> None:
        reader = self.reader
        call = reader.obj(value, where, "a tool call object")
        function_where = child(where, "function")
        function = reader.obj(reader.required(call, "function", where), function_where)
        self.builder.tool_use(reader.req_str(call, "id", where), reader.req_str(function, "name", function_where),
                              parse_arguments(function.get("arguments", "{}")), reader.source, where)

    def assistant_text(self, text: str, where: str) -> None:
        source = self.reader.source
        action = _text_action(text) if self.prompt_based and self.pending is None else None
        if action is None:
            self.builder.text("assistant", text, source, where)
            return
        before, name, arguments, after = action
        self.text_actions += 1
        # OpenHands' own ids for the calls it reads from text (fn_call_converter: toolu_01, toolu_02, ...).
        self.pending = f"toolu_{self.text_actions:02d}"
        self.builder.text("assistant", before.strip(), source, where)
        self.builder.tool_use(self.pending, name, arguments, source, where)
        self.builder.text("assistant", after.strip(), source, where)


def _text_action(text: str) -> tuple[str, str, dict[str, Any], str] | None:
    """(text before, tool name, arguments, text after) of the first ``<function=...>`` action in ``text``."""
    if text.count("<function=") == 1 and "</function>" not in text:
        text = text.rstrip() + "\n</function>"  # the closing tag was the stop word, cut from the response
    found = _ACTION.search(text)
    if found is None:
        return None
    arguments = {m.group(1): m.group(2).strip() for m in _PARAMETER.finditer(found.group(2))}
    return text[:found.start()], found.group(1).strip(), arguments, text[found.end():]


FORMAT = TraceFormat(name=NAME, kind=DIRECTORY,
                     description="LiteLLM completion-log folders (OpenHands log_completions)", sniff=sniff, load=load,
                     looks_for="LiteLLM completion logs (<model>-<unix time>.json)")
