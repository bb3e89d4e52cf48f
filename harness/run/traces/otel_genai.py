"""OpenTelemetry GenAI spans in OTLP/JSON: a file of ``{"resourceSpans": [...]}`` export requests (one JSON
document, or JSONL with one request per line, as the Collector's file exporter and ``ctxbench export-otel``
write them), each span with its attributes and events.

Follows the OTLP/JSON encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding: ids in hex,
``intValue`` a decimal string, values ``stringValue``/``intValue``/``doubleValue``/``boolValue``/``arrayValue``/
``kvlistValue``/``bytesValue``) and the GenAI semantic conventions (https://github.com/open-telemetry/
semantic-conventions, ``docs/gen-ai/gen-ai-spans.md`` and the message schemas ``gen-ai-input-messages.json``,
``gen-ai-output-messages.json``, ``gen-ai-system-instructions.json``). Chat spans are those whose
``gen_ai.operation.name`` is ``chat`` (or ``text_completion``, ``generate_content``), or, in a trace where no
span names a chat operation, those that carry messages (where chat spans are named, other spans with messages,
such as strands' event-loop cycles and agent spans, are not model calls). Their messages are read from, in this
order of preference:

- ``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.system_instructions`` (JSON text or
  structured values), on the span or on one of its events (strands-agents puts them on a
  ``gen_ai.client.inference.operation.details`` event): messages ``{role, parts}``, parts ``text``
  ``{content}``, ``tool_call`` ``{id, name, arguments}``, ``tool_call_response`` ``{id, response}`` (or the
  draft's ``result``); ``blob``/``file``/``uri`` parts become placeholders, ``reasoning`` parts are skipped; a
  message attribute of plain text (not JSON) is read as one user or assistant text, with a note;
- OpenLLMetry's flattened attributes (https://github.com/traceloop/openllmetry): ``gen_ai.prompt.<i>.role``,
  ``.content`` (text, or JSON of content parts), ``.tool_call_id``, ``.tool_calls.<j>.id/name/arguments``,
  and ``gen_ai.completion.<i>....`` for the answer;
- the older per-message span events: ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (attribute ``content``, JSON) and ``gen_ai.choice``
  (``message``), as strands-agents writes them with Bedrock Converse content blocks
  (``strands/telemetry/tracer.py``); and the events ``gen_ai.content.prompt`` / ``gen_ai.content.completion``
  (attributes ``gen_ai.prompt`` / ``gen_ai.completion``: JSON lists of Chat Completions messages).

Content parts of the Chat Completions, Anthropic Messages and Converse vocabularies are read too (text,
tool calls and results, media as placeholders, reasoning skipped); parts of other types are skipped with a
note. A tool result is ``error`` when its part says so (``is_error``, a Converse ``status``) or when the
``execute_tool`` span of its call id (``gen_ai.tool.call.id``) failed (status ERROR, or
``gen_ai.tool.status`` ``error``).

Sessions: one per conversation (``gen_ai.conversation.id`` on a chat span or its ancestors), else one per
trace id. A session's chat spans are ordered by start time; its transcript is the input messages of the
last chat span that records them plus that span's output (its first output message: further ones are other
choices). Each chat span gives one `RecordedUsage`, placed at the assistant message it produced (the one
after as many assistant turns as its input holds), timed by the span's start and duration:
``gen_ai.usage.input_tokens`` (or the older ``prompt_tokens``; the convention counts cached tokens in it),
``gen_ai.usage.output_tokens`` (``completion_tokens``), cached = ``gen_ai.usage.cache_read.input_tokens``
(``cache_read_input_tokens``). strands-agents records Bedrock's ``inputTokens``, which leaves cache reads and
writes out: for its spans (provider ``strands-agents``) they are added to the input. The system prompt is the
system instructions and system messages, else the agent span's ``gen_ai.agent.system_prompt``; the tools
are ``gen_ai.tool.definitions`` (or OpenLLMetry's ``llm.request.functions.<i>.*``, or strands'
``gen_ai.agent.tools`` names); the model is the last chat span's ``gen_ai.response.model``, else its
``gen_ai.request.model``.

A file whose chat spans hold no messages (``ctxbench export-otel`` records usage only) cannot be replayed:
an error says so. The writer (`dump`) writes a session in the newest conventions, one chat span per assistant
message, and reads back the same.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness.core.messages import Role, Text, ToolResult, ToolUse
from harness.run.traces.formats import FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    AUDIO_PLACEHOLDER,
    FILE_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    VIDEO_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    RecordedUsage,
    TraceError,
    TranscriptBuilder,
    child,
    parse_arguments,
    replace_surrogates,
    shown,
    structured_text,
    type_name,
)
from harness.run.traces.openai_chat import tool_names, tool_schemas
from harness.run.traces.reading import TraceText

NAME = "otel-genai"
#: The document rank of the claim on an OTLP/JSON file (`Claim.document`).
SNIFF_RANK = 7
#: ``gen_ai.operation.name`` values of a model call that answers with messages.
CHAT_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
#: The event strands-agents (and the newest conventions) put the message attributes on.
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
#: The provider name strands-agents gives its spans (its input tokens leave the cache out).
STRANDS_PROVIDER = "strands-agents"
#: OTLP status code ERROR (``STATUS_CODE_ERROR`` in its enum spelling).
_STATUS_ERROR = (2, "STATUS_CODE_ERROR")
_MODALITY_PLACEHOLDERS = {"image": IMAGE_PLACEHOLDER, "audio": AUDIO_PLACEHOLDER, "video": VIDEO_PLACEHOLDER}
_MEDIA_PARTS = frozenset({"blob", "file", "uri", "file_data", "image", "image_url", "input_audio", "audio", "video",
                          "document", "input_image", "input_file"})
_SKIPPED_PARTS = frozenset({"reasoning", "thinking", "redacted_thinking", "reasoningContent", "cachePoint",
                            "refusal_reasoning"})
_PROMPT_KEY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_FUNCTION_KEY = re.compile(r"^llm\.request\.functions\.(\d+)\.(name|description|parameters)$")
#: Legacy message events and the role each gives its message.
_MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                   "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
#: The attributes a chat span's usage is read from, newest spelling first.
_INPUT_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
_OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
_CACHE_READ_KEYS = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens")
_CACHE_WRITE_KEYS = ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens",
                     "gen_ai.usage.cache_write_input_tokens")

#: Attribute name -> (value, JSON path of the value).
Attributes = dict[str, tuple[Any, str]]


@dataclass(slots=True)
class _Event:
    name: str
    attributes: Attributes
    where: str


@dataclass(slots=True)
class _Span:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: int
    end: int
    attributes: Attributes
    events: list[_Event]
    failed: bool
    resource: Attributes
    where: str
    #: Position in the file: orders spans that start at the same time.
    order: int


@dataclass(slots=True)
class _Part:
    """One piece of a message: ``text`` (text), ``call`` (call id, name, arguments) or ``result`` (call id,
    text, whether the part says it failed)."""

    kind: str
    where: str
    text: str = ""
    call_id: str = ""
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    error: bool = False


@dataclass(slots=True)
class _Message:
    #: ``system``, ``user``, ``assistant`` or ``tool``.
    role: str
    parts: list[_Part]
    where: str


# OTLP/JSON -----------------------------------------------------------------------------------------------

class _Spans:
    """The spans of an OTLP/JSON file, read checked."""

    def __init__(self, trace: TraceText) -> None:
        self.reader = JsonReader(trace.source)
        self.spans: list[_Span] = []
        for record in trace.records:
            self._request(record.value, record.where)

    def _request(self, value: Any, where: str) -> None:
        reader = self.reader
        request = reader.obj(value, where, 'an OTLP/JSON export request ({"resourceSpans": [...]})')
        listed_where = child(where, "resourceSpans")
        for i, resource_value in enumerate(reader.arr(reader.required(request, "resourceSpans", where), listed_where)):
            resource_where = child(listed_where, i)
            resource_spans = reader.obj(resource_value, resource_where, "a resourceSpans object")
            resource: Attributes = {}
            if resource_spans.get("resource") is not None:
                inner_where = child(resource_where, "resource")
                inner = reader.obj(resource_spans["resource"], inner_where)
                resource = self.attributes(inner.get("attributes"), child(inner_where, "attributes"))
            key = "scopeSpans" if "scopeSpans" in resource_spans else "instrumentationLibrarySpans"
            scopes_where = child(resource_where, key)
            for j, scope_value in enumerate(reader.arr(resource_spans.get(key, []), scopes_where)):
                scope_where = child(scopes_where, j)
                scope = reader.obj(scope_value, scope_where, "a scopeSpans object")
                spans_where = child(scope_where, "spans")
                for k, span_value in enumerate(reader.arr(scope.get("spans", []), spans_where)):
                    self.spans.append(self._span(span_value, child(spans_where, k), resource))

    def _span(self, value: Any, where: str, resource: Attributes) -> _Span:
        reader = self.reader
        span = reader.obj(value, where, "a span object")
        trace_id = reader.req_str(span, "traceId", where)
        span_id = reader.req_str(span, "spanId", where)
        if not trace_id or not span_id:
            raise reader.error(child(where, "traceId" if not trace_id else "spanId"), "empty (a span needs its ids)")
        events_where = child(where, "events")
        events = []
        for i, event_value in enumerate(reader.arr(span.get("events") or [], events_where)):
            event_where = child(events_where, i)
            event = reader.obj(event_value, event_where, "a span event object")
            events.append(_Event(reader.opt_str(event, "name", event_where) or "",
                                 self.attributes(event.get("attributes"), child(event_where, "attributes")),
                                 event_where))
        status = span.get("status")
        failed = False
        if status is not None:
            status_obj = reader.obj(status, child(where, "status"))
            failed = status_obj.get("code") in _STATUS_ERROR
        return _Span(trace_id=trace_id, span_id=span_id, parent_id=reader.opt_str(span, "parentSpanId", where) or "",
                     name=reader.opt_str(span, "name", where) or "",
                     start=self._nanos(span, "startTimeUnixNano", where),
                     end=self._nanos(span, "endTimeUnixNano", where),
                     attributes=self.attributes(span.get("attributes"), child(where, "attributes")), events=events,
                     failed=failed, resource=resource, where=where, order=len(self.spans))

    def _nanos(self, span: dict[str, Any], key: str, where: str) -> int:
        value = span.get(key)
        if value is None:
            return 0
        number = _integer(value)
        if number is None or number < 0:
            raise self.reader.error(child(where, key), f"expected Unix nanoseconds (a whole number as a string), got "
                                    f"{shown(value)}")
        return number

    def attributes(self, value: Any, where: str) -> Attributes:
        """``[{key, value}]`` as a dict of plain values (and where each is)."""
        out: Attributes = {}
        if value is None:
            return out
        for i, item_value in enumerate(self.reader.arr(value, where, "an array of attributes")):
            item_where = child(where, i)
            item = self.reader.obj(item_value, item_where, "an attribute ({key, value})")
            key = self.reader.req_str(item, "key", item_where)
            value_where = child(item_where, "value")
            out[key] = (self.any_value(item.get("value"), value_where), value_where)
        return out

    def any_value(self, value: Any, where: str) -> Any:
        """An OTLP ``AnyValue`` as a plain value (``intValue``, a decimal string in OTLP/JSON, as an int)."""
        if value is None:
            return None
        wrapped = self.reader.obj(value, where, "an OTLP value object")
        if not wrapped:
            return None
        if len(wrapped) != 1:
            raise self.reader.error(where, f"an OTLP value holds one of stringValue, intValue, ... (got keys "
                                    f"{sorted(wrapped)[:4]})")
        ((kind, inner),) = wrapped.items()
        inner_where = child(where, kind)
        if kind in ("stringValue", "bytesValue"):
            return self.reader.string(inner, inner_where)
        if kind == "boolValue":
            if not isinstance(inner, bool):
                raise self.reader.error(inner_where, f"expected a boolean, got {type_name(inner)}")
            return inner
        if kind == "intValue":
            number = _integer(inner)
            if number is None:
                raise self.reader.error(inner_where, f"expected a whole number (a decimal string), got {shown(inner)}")
            return number
        if kind == "doubleValue":
            if isinstance(inner, int | float) and not isinstance(inner, bool):
                return float(inner)
            if isinstance(inner, str) and inner in ("NaN", "Infinity", "-Infinity"):
                return float(inner.lower().replace("infinity", "inf"))
            raise self.reader.error(inner_where, f"expected a number, got {shown(inner)}")
        if kind == "arrayValue":
            listed = self.reader.obj(inner, inner_where)
            values_where = child(inner_where, "values")
            return [self.any_value(v, child(values_where, i))
                    for i, v in enumerate(self.reader.arr(listed.get("values", []), values_where))]
        if kind == "kvlistValue":
            listed = self.reader.obj(inner, inner_where)
            pairs = self.attributes(listed.get("values", []), child(inner_where, "values"))
            return {k: v for k, (v, _) in pairs.items()}
        raise self.reader.error(where, f"unknown OTLP value kind {kind!r}")


def _integer(value: Any) -> int | None:
    """A whole number given as an int or a decimal string (OTLP/JSON writes 64-bit integers as strings)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,20}", value.strip()):
        return int(value)
    return None


# Messages -----------------------------------------------------------------------------------------------

class _Messages:
    """Reads the messages a span carries, in whichever encoding it uses, into `_Message` values."""

    def __init__(self, reader: JsonReader) -> None:
        self.reader = reader
        #: Part types skipped because no vocabulary here knows them: type -> count.
        self.unknown: Counter[str] = Counter()
        #: Message attributes that held plain text rather than messages.
        self.plain_text = 0

    def json_value(self, value: Any, where: str, what: str) -> Any:
        """An attribute that holds JSON text (as most instrumentations write structured values), parsed."""
        if not isinstance(value, str):
            return value
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError) as e:
            problem = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deep"
            raise self.reader.error(where, f"{what} is not JSON ({problem})") from None
        return replace_surrogates(parsed)[0]

    def span_messages(self, span: _Span) -> tuple[list[_Message] | None, list[_Message] | None, list[str]]:
        """(input messages, output messages, system texts) of a chat span; None where it records none."""
        found = self._semconv(span)
        if found is not None:
            return found
        found = self._openllmetry(span)
        if found is not None:
            return found
        return self._events(span)

    # The conventions' message attributes

    def _semconv(self, span: _Span) -> tuple[list[_Message] | None, list[_Message] | None, list[str]] | None:
        places = [span.attributes, *(e.attributes for e in span.events)]
        keys = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                "gen_ai.system.instructions")
        values = {key: next((a[key] for a in places if key in a), None) for key in keys}
        if values["gen_ai.input.messages"] is None and values["gen_ai.output.messages"] is None:
            return None
        out: list[list[_Message] | None] = []
        for key, role in zip(keys[:2], ("user", "assistant"), strict=True):
            entry = values[key]
            if entry is None:
                out.append(None)
                continue
            value, where = entry
            if isinstance(value, str) and not _looks_like_json(value):
                # Plain text where the conventions want messages (some tools write the prompt as it is).
                self.plain_text += 1
                out.append([_Message(role, [_Part("text", where, text=value)], where)])
                continue
            messages = self.reader.arr(self.json_value(value, where, key), where, f"{key}: an array of messages")
            out.append([self.message(m, child(where, i)) for i, m in enumerate(messages)])
        system: list[str] = []
        entry = values["gen_ai.system_instructions"] or values["gen_ai.system.instructions"]
        if entry is not None:
            instructions = self.json_value(entry[0], entry[1], "gen_ai.system_instructions")
            if isinstance(instructions, str):
                system.append(instructions)
            else:
                parts = self.parts(instructions, entry[1])
                system.append("\n".join(p.text for p in parts if p.kind == "text"))
        return out[0], out[1], system

    def message(self, value: Any, where: str) -> _Message:
        """One message: ``{role, parts}`` of the conventions, or a Chat Completions-shaped message."""
        message = self.reader.obj(value, where, "a message object")
        role = _role(self.reader, self.reader.req_str(message, "role", where), child(where, "role"))
        if "parts" in message:
            return _Message(role, self.parts(message["parts"], child(where, "parts")), where)
        return self.chat_message(message, where, role)

    def chat_message(self, message: dict[str, Any], where: str, role: str) -> _Message:
        """A Chat Completions-shaped message: ``content`` (text, parts, or JSON of parts), ``tool_calls``,
        ``tool_call_id``."""
        parts: list[_Part] = []
        content_where = child(where, "content")
        content = message.get("content")
        call_id = message.get("tool_call_id") or message.get("id") if role == "tool" else None
        if isinstance(content, str) and content[:1] == "[":
            try:
                decoded = json.loads(content)
            except (ValueError, RecursionError):
                decoded = None
            if isinstance(decoded, list) and decoded and all(isinstance(p, dict) for p in decoded):
                content = replace_surrogates(decoded)[0]
        if isinstance(content, str):
            parts.append(_Part("text", content_where, text=content))
        elif content is not None:
            parts.extend(self.parts(content, content_where))
        if isinstance(call_id, str) and call_id and not any(p.kind == "result" for p in parts):
            text = "\n".join(p.text for p in parts if p.kind == "text")
            parts = [_Part("result", where, text=text, call_id=call_id)]
        calls = message.get("tool_calls")
        if calls is not None:
            calls_where = child(where, "tool_calls")
            for i, call_value in enumerate(self.reader.arr(calls, calls_where)):
                call_where = child(calls_where, i)
                call = self.reader.obj(call_value, call_where, "a tool call object")
                inner = call.get("function")
                function: dict[str, Any] = inner if isinstance(inner, dict) else call
                parts.append(self._call(call.get("id"), function.get("name"), function.get("arguments"), call_where))
        return _Message(role, parts, where)

    def parts(self, value: Any, where: str) -> list[_Part]:
        """Content parts of any vocabulary read here (conventions, Chat Completions, Messages, Converse)."""
        if isinstance(value, str):
            return [_Part("text", where, text=value)]
        out: list[_Part] = []
        for i, part_value in enumerate(self.reader.arr(value, where, "an array of message parts")):
            part_where = child(where, i)
            if isinstance(part_value, str):
                out.append(_Part("text", part_where, text=part_value))
                continue
            part = self.reader.obj(part_value, part_where, "a message part object")
            found = self._part(part, part_where) if "type" in part else self._converse(part, part_where)
            if found is not None:
                out.append(found)
        return out

    def _part(self, part: dict[str, Any], where: str) -> _Part | None:
        kind = self.reader.req_str(part, "type", where)
        if kind == "text":
            text = part.get("content") if isinstance(part.get("content"), str) else part.get("text")
            return _Part("text", where, text=self.reader.string(text, child(where, "content"), "text (a string)"))
        if kind in ("tool_call", "function_call", "tool_use"):
            arguments = part.get("input") if kind == "tool_use" else part.get("arguments")
            call_id = part.get("call_id") if kind == "function_call" else part.get("id")
            return self._call(call_id, part.get("name"), arguments, where)
        if kind in ("tool_call_response", "function_call_output", "tool_result"):
            call_id = part.get("tool_use_id") if kind == "tool_result" else part.get(
                "call_id" if kind == "function_call_output" else "id")
            if not isinstance(call_id, str) or not call_id:
                raise self.reader.error(child(where, "id"), "a tool result without its call's id")
            body = next((part[k] for k in ("response", "result", "content", "output") if k in part), None)
            return _Part("result", where, text=_result_text(body), call_id=call_id,
                         error=part.get("is_error") is True)
        if kind in _MEDIA_PARTS:
            modality = part.get("modality")
            placeholder = _MODALITY_PLACEHOLDERS.get(modality if isinstance(modality, str) else "")
            if placeholder is None:
                placeholder = IMAGE_PLACEHOLDER if "image" in kind else (
                    AUDIO_PLACEHOLDER if "audio" in kind else FILE_PLACEHOLDER)
            return _Part("text", where, text=placeholder)
        if kind not in _SKIPPED_PARTS:
            self.unknown[kind] += 1
        return None

    def _converse(self, block: dict[str, Any], where: str) -> _Part | None:
        """A Bedrock Converse content block (strands-agents' older events)."""
        if "text" in block:
            return _Part("text", where, text=self.reader.string(block["text"], child(where, "text")))
        if "toolUse" in block:
            use_where = child(where, "toolUse")
            use = self.reader.obj(block["toolUse"], use_where)
            return self._call(use.get("toolUseId"), use.get("name"), use.get("input"), use_where)
        if "toolResult" in block:
            result_where = child(where, "toolResult")
            result = self.reader.obj(block["toolResult"], result_where)
            call_id = result.get("toolUseId")
            if not isinstance(call_id, str) or not call_id:
                raise self.reader.error(child(result_where, "toolUseId"), "a tool result without its call's id")
            return _Part("result", result_where, text=_result_text(result.get("content")), call_id=call_id,
                         error=result.get("status") == "error")
        media = next((k for k in ("image", "document", "video", "audio") if k in block), None)
        if media is not None:
            return _Part("text", where, text=_MODALITY_PLACEHOLDERS.get(media, FILE_PLACEHOLDER))
        if not any(k in _SKIPPED_PARTS for k in block):
            self.unknown["/".join(sorted(block)[:2]) or "empty block"] += 1
        return None

    def _call(self, call_id: Any, name: Any, arguments: Any, where: str) -> _Part:
        if not isinstance(call_id, str) or not call_id:
            raise self.reader.error(child(where, "id"), "a tool call without an id: its result cannot be matched")
        if not isinstance(name, str) or not name:
            raise self.reader.error(child(where, "name"), f"a tool call needs its tool's name, got {shown(name)}")
        return _Part("call", where, call_id=call_id, name=name,
                     arguments={} if arguments is None else parse_arguments(arguments))

    # OpenLLMetry's flattened attributes

    def _openllmetry(self, span: _Span) -> tuple[list[_Message] | None, list[_Message] | None, list[str]] | None:
        grouped: dict[str, dict[int, dict[str, tuple[Any, str]]]] = {"prompt": {}, "completion": {}}
        for key, entry in span.attributes.items():
            match = _PROMPT_KEY.match(key)
            if match:
                grouped[match.group(1)].setdefault(int(match.group(2)), {})[match.group(3)] = entry
        if not grouped["prompt"] and not grouped["completion"]:
            return None
        return (self._flattened(grouped["prompt"], "user") if grouped["prompt"] else None,
                self._flattened(grouped["completion"], "assistant") if grouped["completion"] else None, [])

    def _flattened(self, by_index: dict[int, dict[str, tuple[Any, str]]], default_role: str) -> list[_Message]:
        messages = []
        for index in sorted(by_index):
            fields = by_index[index]
            where = next(iter(fields.values()))[1]
            role_value, role_where = fields.get("role", (default_role, where))
            role = _role(self.reader, self.reader.string(role_value, role_where, "a role (a string)"), role_where)
            message: dict[str, Any] = {"content": fields["content"][0] if "content" in fields else None}
            if "tool_call_id" in fields:
                message["tool_call_id"] = fields["tool_call_id"][0]
            calls: dict[int, dict[str, Any]] = {}
            for name, (value, _) in fields.items():
                call = re.match(r"^tool_calls\.(\d+)\.(id|name|arguments)$", name)
                if call:
                    calls.setdefault(int(call.group(1)), {})[call.group(2)] = value
            if calls:
                message["tool_calls"] = [calls[j] for j in sorted(calls)]
            messages.append(self.chat_message(message, where, role))
        return messages

    # Older per-message events

    def _events(self, span: _Span) -> tuple[list[_Message] | None, list[_Message] | None, list[str]]:
        inputs: list[_Message] = []
        outputs: list[_Message] = []
        for event in span.events:
            if event.name in _MESSAGE_EVENTS:
                role = _MESSAGE_EVENTS[event.name]
                entry = event.attributes.get("content")
                if entry is None:
                    inputs.append(_Message(role, [], event.where))
                    continue
                content = self.json_value(entry[0], entry[1], "content") if _looks_like_json(entry[0]) else entry[0]
                message = {"content": content}
                if role == "tool" and "id" in event.attributes:
                    message["tool_call_id"] = event.attributes["id"][0]
                inputs.append(self.chat_message(message, entry[1], role))
            elif event.name == "gen_ai.choice":
                entry = event.attributes.get("message")
                if entry is not None:
                    content = self.json_value(entry[0], entry[1], "message") if _looks_like_json(entry[0]) else entry[0]
                    if isinstance(content, dict) and ("content" in content or "tool_calls" in content):
                        outputs.append(self.chat_message(content, entry[1], "assistant"))
                    else:
                        outputs.append(self.chat_message({"content": content}, entry[1], "assistant"))
            elif event.name in ("gen_ai.content.prompt", "gen_ai.content.completion"):
                key = "gen_ai.prompt" if event.name == "gen_ai.content.prompt" else "gen_ai.completion"
                entry = event.attributes.get(key)
                if entry is None:
                    continue
                listed = self.reader.arr(self.json_value(entry[0], entry[1], key), entry[1],
                                         f"{key}: an array of messages")
                target = inputs if key == "gen_ai.prompt" else outputs
                target.extend(self.message(m, child(entry[1], i)) for i, m in enumerate(listed))
        return inputs or None, outputs or None, []


def _looks_like_json(value: Any) -> bool:
    return isinstance(value, str) and value[:1] in ("[", "{")


def _role(reader: JsonReader, role: str, where: str) -> str:
    normal = {"developer": "system", "model": "assistant", "ai": "assistant", "human": "user",
              "function": "tool", "ipython": "tool"}.get(role, role)
    if normal not in ("system", "user", "assistant", "tool"):
        raise reader.error(where, f"unknown role {role!r} (expected system, user, assistant or tool)")
    return normal


def _result_text(value: Any) -> str:
    """A tool's response as text: text as it is, text parts (of any vocabulary) joined, anything else as JSON
    with sorted keys."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_result_item(item) for item in value)
    return structured_text(value)


def _result_item(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        text = item.get("text") if isinstance(item.get("text"), str) else (
            item.get("content") if item.get("type") == "text" and isinstance(item.get("content"), str) else None)
        if text is not None:
            return text
        if "json" in item and len(item) == 1:
            return structured_text(item["json"])
        kind = item.get("type")
        if kind in _MEDIA_PARTS or any(k in item for k in ("image", "document")):
            return IMAGE_PLACEHOLDER if kind in ("image", "image_url") or "image" in item else FILE_PLACEHOLDER
    return structured_text(item)


# Sessions -----------------------------------------------------------------------------------------------

def parse(trace: TraceText) -> list[ImportedSession]:
    """The sessions of an OTLP/JSON file of GenAI spans (one per conversation, else per trace)."""
    read = _Spans(trace)
    reader = read.reader
    spans = read.spans
    by_id = {(s.trace_id, s.span_id): s for s in spans}
    # Where an instrumentation names its chat spans, only those are: spans of its agent loop that also carry
    # messages (strands' event-loop cycles, its agent span) are not model calls.
    labelled = {s.trace_id for s in spans
                if s.attributes.get("gen_ai.operation.name", (None, ""))[0] in CHAT_OPERATIONS}
    chats = [s for s in spans if _is_chat(s, s.trace_id in labelled)]
    if not chats:
        raise TraceError(trace.source, trace.records[0].where, "no GenAI chat spans (spans whose "
                         "gen_ai.operation.name is chat, or that carry gen_ai messages)")
    groups: dict[str, list[_Span]] = {}
    for span in chats:
        groups.setdefault(_conversation_id(span, by_id) or span.trace_id, []).append(span)
    messages = _Messages(reader)
    sessions = []
    for session_id, members in sorted(groups.items(), key=lambda g: min((s.start, s.order) for s in g[1])):
        members.sort(key=lambda s: (s.start, s.order))
        traces = {s.trace_id for s in members}
        related = [s for s in spans if s.trace_id in traces]
        sessions.append(_session(trace.source, session_id, members, related, by_id, messages))
    return sessions


def _is_chat(span: _Span, labelled: bool) -> bool:
    """Whether ``span`` is a model call: its operation is a chat one, or, in a trace that names no chat
    operation, it carries messages (and is no other kind of call)."""
    operation = span.attributes.get("gen_ai.operation.name", (None, ""))[0]
    if isinstance(operation, str) or labelled:
        return operation in CHAT_OPERATIONS
    request_type = span.attributes.get("llm.request.type", (None, ""))[0]
    if request_type is not None and request_type not in ("chat", "completion"):
        return False
    keys = set(span.attributes) | {k for e in span.events for k in e.attributes}
    return bool(keys & {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt.0.role",
                        "gen_ai.completion.0.role", "gen_ai.prompt.0.content"}) or any(
        e.name in _MESSAGE_EVENTS or e.name == "gen_ai.choice" for e in span.events)


def _ancestors(span: _Span, by_id: dict[tuple[str, str], _Span]) -> list[_Span]:
    """``span`` and its ancestors within its trace, nearest first (a parent loop stops the walk)."""
    out = [span]
    seen = {span.span_id}
    current = span
    while current.parent_id and current.parent_id not in seen:
        parent = by_id.get((current.trace_id, current.parent_id))
        if parent is None:
            break
        seen.add(parent.span_id)
        out.append(parent)
        current = parent
    return out


def _conversation_id(span: _Span, by_id: dict[tuple[str, str], _Span]) -> str | None:
    for candidate in _ancestors(span, by_id):
        value = candidate.attributes.get("gen_ai.conversation.id", (None, ""))[0]
        if isinstance(value, str) and value:
            return value
    return None


def _first(spans: list[_Span], keys: tuple[str, ...]) -> tuple[Any, str] | None:
    """The first of ``keys`` any of ``spans`` has (in order of spans, then keys)."""
    for span in spans:
        for key in keys:
            if key in span.attributes and span.attributes[key][0] is not None:
                return span.attributes[key]
    return None


def _session(source: str, session_id: str, chats: list[_Span], related: list[_Span],
             by_id: dict[tuple[str, str], _Span], messages: _Messages) -> ImportedSession:
    reader = messages.reader
    notes: list[str] = []
    read = [messages.span_messages(span) for span in chats]
    with_input = [i for i, (inputs, _, _) in enumerate(read) if inputs is not None]
    if not with_input:
        ctxbench = any(s.resource.get("service.name", (None, ""))[0] == "ctxbench" for s in chats)
        raise TraceError(source, chats[0].where, "no chat span carries messages (gen_ai.input.messages, "
                         "gen_ai.prompt.<n>.*, or message events): nothing to replay"
                         + (" (ctxbench's own export-otel records usage, not messages)" if ctxbench else ""))
    last = with_input[-1]
    if last != len(chats) - 1:
        notes.append(f"{source}: {chats[last + 1].where}: the last {len(chats) - 1 - last} chat span(s) carry no "
                     "input messages: the transcript is that of the last span that does")
    inputs, outputs, system = read[last]
    if outputs is not None and len(outputs) > 1:
        notes.append(f"{source}: {chats[last].where}: the last chat span has {len(outputs)} output messages "
                     "(choices): the first one is read")
    transcript = list(inputs or []) + list(outputs or [])[:1]
    lineage = _ancestors(chats[last], by_id)
    failed_calls = _failed_tool_calls(related)
    builder = TranscriptBuilder(source, chats[last].where)
    for text in system:
        builder.system(text)
    for message in transcript:
        _add(builder, source, message, failed_calls)
    if not builder.system_prompt:
        agent_prompt = _first(lineage, ("gen_ai.agent.system_prompt", "system_prompt"))
        if agent_prompt is not None and isinstance(agent_prompt[0], str):
            builder.system(agent_prompt[0])
    built = builder.build()
    usage, unplaced = _usage(reader, chats, read, built)
    if unplaced:
        notes.append(f"{source}: {unplaced} chat span(s) produced a message the transcript does not hold (its "
                     "history was cut, or the call failed): their usage is not placed")
    if messages.unknown:
        kinds = ", ".join(f"{n} {kind!r}" for kind, n in sorted(messages.unknown.items()))
        notes.append(f"{source}: message parts of unknown types skipped ({kinds})")
        messages.unknown.clear()
    if messages.plain_text:
        notes.append(f"{source}: {messages.plain_text} message attribute(s) hold plain text, not messages: read as "
                     "one user (input) or assistant (output) text")
        messages.plain_text = 0
    model_entry = _first([chats[last]], ("gen_ai.response.model", "gen_ai.request.model"))
    models = {v for s in chats if (v := _first([s], ("gen_ai.response.model", "gen_ai.request.model"))) is not None
              and isinstance(v[0], str)}
    if len({m[0] for m in models}) > 1:
        notes.append(f"{source}: the chat spans name {len({m[0] for m in models})} models "
                     f"({', '.join(sorted({m[0] for m in models}))}): the session's is the last span's")
    tools = _tools(messages, lineage)
    return ImportedSession(
        source=source, session_id=session_id, format=NAME, system=builder.system_prompt, messages=built,
        model=model_entry[0] if model_entry is not None and isinstance(model_entry[0], str) else None,
        tools=tool_names(tools), tool_schemas=tool_schemas(tools), usage=tuple(usage),
        notes=tuple(builder.notes) + tuple(notes))


def _failed_tool_calls(spans: list[_Span]) -> set[str]:
    """Call ids of the ``execute_tool`` spans that failed."""
    failed = set()
    for span in spans:
        call_id = span.attributes.get("gen_ai.tool.call.id", (None, ""))[0]
        status = span.attributes.get("gen_ai.tool.status", (None, ""))[0]
        if isinstance(call_id, str) and (span.failed or status == "error"):
            failed.add(call_id)
    return failed


def _add(builder: TranscriptBuilder, source: str, message: _Message, failed_calls: set[str]) -> None:
    if message.role == "system":
        builder.system("\n".join(p.text for p in message.parts if p.kind == "text"))
        return
    role: Role = "assistant" if message.role == "assistant" else "user"
    for part in message.parts:
        if part.kind == "text":
            builder.text(role, part.text, source, part.where)
        elif part.kind == "call":
            if role != "assistant":
                raise TraceError(source, part.where, f"a tool call in a {message.role} message (tool calls are the "
                                 "assistant's)")
            builder.tool_use(part.call_id, part.name, part.arguments, source, part.where)
        else:
            if role != "user":
                raise TraceError(source, part.where, "a tool result in an assistant message (results are the user's "
                                 "or the tool's)")
            error = part.error or part.call_id in failed_calls
            builder.tool_result(part.call_id, "error" if error else "success", part.text, source, part.where)


def _assistant_turns(messages: list[_Message]) -> int:
    """Assistant turns in ``messages``: runs of assistant messages (the builder merges a run into one)."""
    turns = 0
    previous = ""
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        if role == "assistant" and previous != "assistant":
            turns += 1
        previous = role
    return turns


def _usage(reader: JsonReader, chats: list[_Span], read: list[tuple[list[_Message] | None, list[_Message] | None,
                                                                   list[str]]],
           built: tuple[Any, ...]) -> tuple[list[RecordedUsage], int]:
    """One `RecordedUsage` per chat span that records usage, at the assistant message it produced; and how many
    could not be placed."""
    assistant_at = [i for i, m in enumerate(built) if m.role == "assistant"]
    usage: list[RecordedUsage] = []
    unplaced = 0
    turn = -1
    for span, (inputs, _, _) in zip(chats, read, strict=True):
        turn = _assistant_turns(inputs) if inputs is not None else turn + 1
        recorded = _span_usage(reader, span)
        if recorded is None:
            continue
        if turn >= len(assistant_at):
            unplaced += 1
            continue
        usage.append(RecordedUsage(call=assistant_at[turn], **recorded))
    return usage, unplaced


def _span_usage(reader: JsonReader, span: _Span) -> dict[str, Any] | None:
    def count(keys: tuple[str, ...]) -> int | None:
        for key in keys:
            if key in span.attributes and span.attributes[key][0] is not None:
                value, where = span.attributes[key]
                number = _integer(value)
                if number is None or number < 0 or isinstance(value, str):
                    raise reader.error(where, f"{key}: expected a token count (a whole number, 0 or more), got "
                                       f"{shown(value)}")
                return number
        return None

    prompt, output = count(_INPUT_KEYS), count(_OUTPUT_KEYS)
    cached, written = count(_CACHE_READ_KEYS), count(_CACHE_WRITE_KEYS)
    if prompt is None and output is None:
        return None
    provider = _first([span], ("gen_ai.provider.name", "gen_ai.system"))
    if prompt is not None and provider is not None and provider[0] == STRANDS_PROVIDER:
        prompt += (cached or 0) + (written or 0)  # Bedrock's inputTokens leaves the cache out
    seconds = (span.end - span.start) / 1e9 if span.start and span.end >= span.start else None
    return {"input_tokens": prompt, "output_tokens": output, "cached_tokens": cached, "latency_s": seconds,
            "timestamp": span.start / 1e9 if span.start else None}


def _tools(messages: _Messages, lineage: list[_Span]) -> list[Any]:
    """The declared tools, as objects (``{name, ...}`` or ``{type, function}``), from the chat span or its
    ancestors."""
    entry = _first(lineage, ("gen_ai.tool.definitions",))
    if entry is not None:
        listed = messages.json_value(entry[0], entry[1], "gen_ai.tool.definitions")
        return listed if isinstance(listed, list) else []
    for span in lineage:
        functions: dict[int, dict[str, Any]] = {}
        for key, (value, where) in span.attributes.items():
            match = _FUNCTION_KEY.match(key)
            if match:
                if match.group(2) == "parameters" and _looks_like_json(value):
                    value = messages.json_value(value, where, key)
                functions.setdefault(int(match.group(1)), {})[match.group(2)] = value
        if functions:
            return [functions[i] for i in sorted(functions)]
    entry = _first(lineage, ("gen_ai.agent.tools",))
    if entry is not None:
        names = entry[0]
        if _looks_like_json(names):
            names = messages.json_value(names, entry[1], "gen_ai.agent.tools")
        if isinstance(names, list):
            return [{"name": n} for n in names if isinstance(n, str)]
    return []


# Writing ------------------------------------------------------------------------------------------------

def dump(session: ImportedSession) -> dict[str, Any]:
    """The session as one OTLP/JSON export request in the newest conventions: an ``invoke_agent`` root span,
    a ``chat`` span per assistant message (its input every message before it, its output the message, its
    recorded usage), and an ``execute_tool`` span per tool call (status ERROR when its result is an error:
    the conventions' messages have no error flag). Ids and times are derived from the session id, so a
    session is always written the same."""
    trace_id = _hex_id(session.session_id, "trace", 32)
    root_id = _hex_id(session.session_id, "root", 16)
    base = 1_700_000_000_000_000_000
    usage = {u.call: u for u in session.usage if u.call is not None}
    common = [_attribute("gen_ai.conversation.id", session.session_id)]
    system = [_attribute("gen_ai.system_instructions", json.dumps([{"type": "text", "content": session.system}]))
              ] if session.system else []
    tools = [_attribute("gen_ai.tool.definitions", json.dumps([json.loads(t) for t in session.tool_schemas]
                                                             or [{"name": n} for n in session.tools]))
             ] if session.tools or session.tool_schemas else []
    model = [_attribute("gen_ai.request.model", session.model)] if session.model else []
    results = {b.tool_use_id: b for m in session.messages for b in m.blocks if isinstance(b, ToolResult)}
    spans: list[dict[str, Any]] = []
    for i, message in enumerate(session.messages):
        if message.role != "assistant":
            continue
        start, end = base + i * 10**9, base + i * 10**9 + 5 * 10**8
        attributes = [_attribute("gen_ai.operation.name", "chat"), *common, *model, *system, *tools,
                      _attribute("gen_ai.input.messages", json.dumps([_written(m) for m in session.messages[:i]])),
                      _attribute("gen_ai.output.messages", json.dumps([_written(message) | {"finish_reason": (
                          "tool_call" if message.has_use else "stop")}]))]
        recorded = usage.get(i)
        if recorded is not None:
            for key, value in (("gen_ai.usage.input_tokens", recorded.input_tokens),
                               ("gen_ai.usage.output_tokens", recorded.output_tokens),
                               ("gen_ai.usage.cache_read.input_tokens", recorded.cached_tokens)):
                if value is not None:
                    attributes.append({"key": key, "value": {"intValue": str(value)}})
        spans.append(_written_span(trace_id, _hex_id(session.session_id, f"chat-{i}", 16), root_id,
                                   f"chat {session.model or ''}".strip(), 3, start, end, attributes, False))
        for n, block in enumerate(b for b in message.blocks if isinstance(b, ToolUse)):
            result = results.get(block.id)
            failed = result is not None and result.status == "error"
            spans.append(_written_span(
                trace_id, _hex_id(session.session_id, f"tool-{i}-{n}", 16), root_id, f"execute_tool {block.name}", 1,
                end, end + 10**8, [_attribute("gen_ai.operation.name", "execute_tool"), *common,
                                   _attribute("gen_ai.tool.name", block.name),
                                   _attribute("gen_ai.tool.call.id", block.id)], failed))
    end_all = base + len(session.messages) * 10**9
    root = _written_span(trace_id, root_id, "", "invoke_agent", 1, base, end_all,
                         [_attribute("gen_ai.operation.name", "invoke_agent"), *common, *model], False)
    return {"resourceSpans": [{"resource": {"attributes": [_attribute("service.name", "ctxbench-trace-writer")]},
                               "scopeSpans": [{"scope": {"name": "ctxbench.traces.otel_genai"},
                                               "spans": [root, *spans]}]}]}


def _written(message: Any) -> dict[str, Any]:
    """A message as the conventions write it; a user message of tool results is a ``tool`` message."""
    parts: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, Text):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ToolUse):
            parts.append({"type": "tool_call", "id": block.id, "name": block.name, "arguments": dict(block.input)})
        elif isinstance(block, ToolResult):
            parts.append({"type": "tool_call_response", "id": block.tool_use_id, "response": block.content})
    role = message.role
    if role == "user" and message.blocks and all(isinstance(b, ToolResult) for b in message.blocks):
        role = "tool"
    return {"role": role, "parts": parts}


def _attribute(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _hex_id(session_id: str, what: str, digits: int) -> str:
    return hashlib.blake2b(f"{session_id}\0{what}".encode("utf-8", "surrogatepass"),
                           digest_size=digits // 2).hexdigest()


def _written_span(trace_id: str, span_id: str, parent: str, name: str, kind: int, start: int, end: int,
                  attributes: list[dict[str, Any]], failed: bool) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": trace_id, "spanId": span_id, "name": name, "kind": kind,
                            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end), "attributes": attributes,
                            "status": {"code": 2} if failed else {}}
    if parent:
        span["parentSpanId"] = parent
    return span


# Sniffing ------------------------------------------------------------------------------------------------

def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is OTLP/JSON: its first value an object with ``resourceSpans``."""
    first = trace.records[0].value
    return Claim.document(SNIFF_RANK) if isinstance(first, dict) and "resourceSpans" in first else None


FORMAT = TraceFormat(name=NAME, kind=FILE, description="OpenTelemetry GenAI spans (OTLP/JSON)", sniff=sniff,
                     load=parse, dump=dump)
