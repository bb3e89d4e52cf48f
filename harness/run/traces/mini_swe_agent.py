"""mini-swe-agent trajectories: ``{"info": {...}, "messages": [...], "trajectory_format": "mini-swe-agent-1"}``
(``mini-swe-agent-1.1`` from v2 on), the agent's message list as it sent it to the model.

Follows mini-swe-agent's code (https://github.com/SWE-agent/mini-swe-agent): v1's ``run/utils/save.py``
(``save_traj``) and ``agents/default.py`` (``DefaultAgent``: ``add_message``, ``parse_action`` with
``action_regex``, default ``` ```bash\\s*\\n(.*?)\\n``` ```, exactly one match per response); v2's
``agents/default.py`` (``serialize``: ``info.model_stats``, ``info.config``, ``messages``, ``exit`` messages),
``models/litellm_model.py`` and ``models/utils/actions_toolcall.py`` (assistant messages in Chat Completions
shape with ``tool_calls`` of the ``bash`` tool, ``tool`` messages answering ``tool_call_id``),
``models/litellm_textbased_model.py`` and ``models/utils/actions_text.py`` (text actions, default regex
``` ```mswea_bash_command\\s*\\n(.*?)\\n``` ```) and ``models/litellm_response_model.py`` (Responses API
objects and items).

Read: ``system`` messages form the system prompt; ``user`` messages are user text; an assistant message with
``tool_calls`` gives its text and its calls, answered by the ``tool`` messages; an assistant message without
them is a text action when the agent's action regex (``info.config.model.action_regex`` or
``info.config.agent.action_regex`` when recorded, else the v1 and v2 defaults) matches it exactly once, as
mini-swe-agent requires: the match becomes a ``bash`` call with arguments ``{"command": <the command>}``, the
text around it stays the assistant's text (the block is not counted twice) and the next user message is its
result (a note says how many). A response with no or several matches was refused by the agent: it stays
text, and the format-error message after it user text. Responses API messages (``"object": "response"``
with ``output`` items, ``function_call_output`` and ``message`` items) are read as the ``openai-responses``
format reads its items. ``exit`` messages (v2's end of run, never sent to the model) are skipped; images
become placeholders. mini-swe-agent has no error flag: every result is ``success``.

Usage: ``info.model_stats`` (``instance_cost``, ``api_calls``) as a session total, when nonzero; per call, the
``usage`` of each assistant message's ``extra.response`` (``prompt_tokens``, ``completion_tokens``,
``prompt_tokens_details.cached_tokens``; a Responses object's own ``usage``: ``input_tokens``,
``output_tokens``, ``input_tokens_details.cached_tokens``), with ``extra.cost`` and the message's
timestamp. The model is ``info.config.model.model_name``; the session id the top-level ``instance_id``, else
the file's name (without ``.traj``). The trajectory does not record the tool schema v2 sends (its ``bash``
tool): give it with ``--tools`` to count it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from harness.core.messages import Message
from harness.run.traces import openai_responses
from harness.run.traces.formats import FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    IMAGE_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    RecordedUsage,
    TranscriptBuilder,
    child,
    parse_arguments,
    shown,
    type_name,
)
from harness.run.traces.reading import ContentParts, TraceText, derived_id

NAME = "mini-swe-agent"
#: The ``trajectory_format`` values read: ``mini-swe-agent-1`` and ``mini-swe-agent-1.<n>``.
_FORMAT_VERSION = re.compile(r"^mini-swe-agent-1(\.\d+)*$")
#: v1's default ``action_regex`` (``DefaultAgent``'s ``AgentConfig``), then v2's text-based models' default.
DEFAULT_ACTION_REGEXES = (r"```bash\s*\n(.*?)\n```", r"```mswea_bash_command\s*\n(.*?)\n```")
_CONTENT_PARTS = ContentParts({"text": "text", "input_text": "text", "output_text": "text"},
                              {"image_url": IMAGE_PLACEHOLDER, "input_image": IMAGE_PLACEHOLDER})
#: Item types of Responses API messages (v2's Responses models), read as openai-responses reads them.
_RESPONSES_ITEMS = ("message", "function_call", "function_call_output", "custom_tool_call",
                    "custom_tool_call_output")


class _CallCounter(TranscriptBuilder):
    """A builder that counts the assistant messages it starts, so that a call's usage can name the message
    its response became (the builder merges consecutive blocks of one role into one message)."""

    def __init__(self, source: str, where: str) -> None:
        super().__init__(source, where)
        #: Assistant messages started so far (the last block added is in the last of them when it is the
        #: assistant's), and blocks added.
        self.assistant_messages = 0
        self.blocks = 0
        self._last_role: str | None = None

    def _saw(self, role: str) -> None:
        if role != self._last_role and role == "assistant":
            self.assistant_messages += 1
        self._last_role = role
        self.blocks += 1

    def text(self, role: Any, text: str, source: str, where: str) -> None:
        if text:  # empty text adds no block (the builder drops it)
            self._saw(role)
        super().text(role, text, source, where)

    def tool_use(self, call_id: str, name: str, arguments: Any, source: str, where: str) -> None:
        self._saw("assistant")
        super().tool_use(call_id, name, arguments, source, where)

    def tool_result(self, call_id: str, status: Any, content: str, source: str, where: str) -> None:
        self._saw("user")
        super().tool_result(call_id, status, content, source, where)


@dataclass(slots=True)
class _Read:
    """The state of reading one trajectory's messages."""

    reader: JsonReader
    builder: _CallCounter
    regexes: tuple[re.Pattern[str], ...]
    #: The id of the text action the next user message answers.
    pending: str | None = None
    text_actions: int = 0
    function_calls: int = 0
    assistant_messages: int = 0
    #: (the number of its assistant message, from 1; its usage) of each call that recorded usage.
    usage: list[tuple[int, RecordedUsage]] = field(default_factory=list)
    #: Calls whose response added no block (an empty response): their usage names no message.
    usage_without_message: int = 0
    format_errors: int = 0

    def message(self, value: Any, where: str, next_role: Any) -> None:
        reader, source = self.reader, self.reader.source
        message = reader.obj(value, where, "a message object")
        if message.get("object") == "response" or ("role" not in message and message.get("type") in _RESPONSES_ITEMS):
            self.responses(message, where)
            return
        role = reader.req_str(message, "role", where)
        extra = message.get("extra")
        if isinstance(extra, dict) and extra.get("interrupt_type") == "FormatError" and role == "user":
            self.format_errors += 1
        if role == "exit":  # v2's end of run: never sent to the model
            return
        text = _content(reader, message, where)
        if role == "system":
            self.builder.system(text)
        elif role == "user":
            if self.pending is not None:
                self.builder.tool_result(self.pending, "success", text, source, where)
                self.pending = None
            else:
                self.builder.text("user", text, source, child(where, "content"))
        elif role == "tool":
            call_id = reader.req_str(message, "tool_call_id", where)
            self.builder.tool_result(call_id, "success", text, source, where)
        elif role == "assistant":
            self.assistant(message, text, where, next_role)
        else:
            raise reader.error(child(where, "role"), f"unknown role {role!r} (expected system, user, assistant, "
                               "tool or exit)")

    def assistant(self, message: dict[str, Any], text: str, where: str, next_role: Any) -> None:
        reader, source = self.reader, self.reader.source
        self.assistant_messages += 1
        before = self.builder.blocks
        calls = message.get("tool_calls")
        if calls:  # v2 tool calling
            calls_where = child(where, "tool_calls")
            self.builder.text("assistant", text, source, child(where, "content"))
            for i, call in enumerate(reader.arr(calls, calls_where, "an array of tool calls")):
                _function_call(reader, self.builder, call, child(calls_where, i))
            self.function_calls += len(calls)
        else:
            self.text_action(text, where, next_role)
        self.record_usage(_chat_usage(reader, message, where), before)

    def text_action(self, text: str, where: str, next_role: Any) -> None:
        source = self.reader.source
        match = _action(text, self.regexes)
        answered = next_role in ("user", None)  # None: the last message, a final call left unanswered
        if match is None or not answered:
            self.builder.text("assistant", text, source, child(where, "content"))
            return
        command = (match.group(1) if match.re.groups else match.group(0)).strip()
        self.builder.text("assistant", (text[:match.start()] + text[match.end():]).strip(), source,
                          child(where, "content"))
        self.text_actions += 1
        call_id = f"mini-action-{self.text_actions}"
        self.builder.tool_use(call_id, "bash", {"command": command}, source, child(where, "content"))
        self.pending = call_id if next_role == "user" else None

    def responses(self, message: dict[str, Any], where: str) -> None:
        """A Responses API object (its ``output`` items: the model's turn) or one input item."""
        if message.get("object") != "response":
            openai_responses.read_item(self.reader, self.builder, message, where)
            return
        self.assistant_messages += 1
        before = self.builder.blocks
        output_where = child(where, "output")
        for i, item in enumerate(self.reader.arr(self.reader.required(message, "output", where), output_where)):
            openai_responses.read_item(self.reader, self.builder, item, child(output_where, i))
        self.record_usage(_responses_usage(self.reader, message, where), before)

    def record_usage(self, usage: RecordedUsage | None, blocks_before: int) -> None:
        """Keep a call's usage with the number of the assistant message its response went into (the last
        one started: a response's blocks are the assistant's)."""
        if usage is None:
            return
        if self.builder.blocks == blocks_before:
            self.usage_without_message += 1
            return
        self.usage.append((self.builder.assistant_messages, usage))

    def notes(self) -> list[str]:
        source, notes = self.reader.source, []
        if self.text_actions:
            notes.append(f"{source}: {self.text_actions} text action(s) (the action regex's one match in the "
                         "assistant's text) read as bash tool calls, arguments {\"command\": ...}, each answered "
                         "by the next user message")
        elif self.assistant_messages and not self.function_calls:
            notes.append(f"{source}: no assistant message holds a tool call or exactly one action block: the "
                         "transcript is read as text, without tool calls")
        if self.format_errors:
            notes.append(f"{source}: {self.format_errors} format-error message(s): the responses they refused are "
                         "not in the messages, so api_calls counts calls the replay does not have")
        if self.usage_without_message:
            notes.append(f"{source}: the usage of {self.usage_without_message} empty response(s) is not read: "
                         "they left no assistant message")
        return notes


def parse(trace: TraceText) -> list[ImportedSession]:
    """The session of a mini-swe-agent trajectory file."""
    reader = JsonReader(trace.source)
    if len(trace.records) != 1:
        raise reader.error(trace.records[1].where, "a mini-swe-agent trajectory is one JSON object, found "
                           "several JSON values")
    record = trace.records[0]
    where = record.where
    doc = reader.obj(record.value, where, "a mini-swe-agent trajectory object")
    version = reader.req_str(doc, "trajectory_format", where)
    if not _FORMAT_VERSION.match(version):
        raise reader.error(child(where, "trajectory_format"), f"unsupported trajectory_format {shown(version)} "
                           "(ctxbench reads mini-swe-agent-1 and mini-swe-agent-1.x)")
    info_where = child(where, "info")
    info = reader.obj(doc.get("info", {}), info_where)
    notes: list[str] = []
    builder = _CallCounter(reader.source, where)
    state = _Read(reader, builder, _action_regexes(info, info_where, reader.source, notes))
    messages_where = child(where, "messages")
    listed = reader.arr(reader.required(doc, "messages", where), messages_where)
    for i, value in enumerate(listed):
        state.message(value, child(messages_where, i), _next_role(listed, i))
    messages = builder.build()
    notes += state.notes()
    instance = doc.get("instance_id")
    return [ImportedSession(
        source=reader.source,
        session_id=instance if isinstance(instance, str) and instance else derived_id(
            trace.stem.removesuffix(".traj"), 0, 1),
        format=NAME,
        system=builder.system_prompt,
        messages=messages,
        model=_model_name(info),
        usage=_usage(reader, info, info_where, messages, state.usage),
        notes=tuple(builder.notes) + tuple(notes),
    )]


def _next_role(listed: list[Any], index: int) -> Any:
    """The role of the next message sent to the model (``exit`` messages are not; ``?`` for one without a
    role), None at the end: a text action is answered only by a user message."""
    for value in listed[index + 1:]:
        role = value.get("role", "?") if isinstance(value, dict) else "?"
        if role != "exit":
            return role
    return None


def _content(reader: JsonReader, message: dict[str, Any], where: str) -> str:
    content = message.get("content")
    return "" if content is None else _CONTENT_PARTS.text(reader, content, child(where, "content"))


def _function_call(reader: JsonReader, builder: TranscriptBuilder, value: Any, where: str) -> None:
    call = reader.obj(value, where, "a tool call object")
    function_where = child(where, "function")
    function = reader.obj(reader.required(call, "function", where), function_where)
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str | dict):
        raise reader.error(child(function_where, "arguments"),
                           f"expected a JSON string or an object, got {type_name(arguments)}")
    builder.tool_use(reader.req_str(call, "id", where), reader.req_str(function, "name", function_where),
                     parse_arguments(arguments), reader.source, where)


def _action_regexes(info: dict[str, Any], where: str, source: str, notes: list[str]) -> tuple[re.Pattern[str], ...]:
    """The agent's action regex as its config recorded it (v2: the model's, v1: the agent's), else the
    defaults of v1 and v2."""
    config = info.get("config")
    for part in ("model", "agent"):
        section = config.get(part) if isinstance(config, dict) else None
        regex = section.get("action_regex") if isinstance(section, dict) else None
        if isinstance(regex, str) and regex:
            try:
                return (re.compile(regex, re.DOTALL),)
            except (re.error, RecursionError, OverflowError):
                notes.append(f"{source}: {where}.config.{part}.action_regex {shown(regex)} is not a regular "
                             "expression: the default action regexes are used")
                break
    return tuple(re.compile(regex, re.DOTALL) for regex in DEFAULT_ACTION_REGEXES)


def _action(text: str, regexes: tuple[re.Pattern[str], ...]) -> re.Match[str] | None:
    """The one action in ``text``: the first regex that matches decides; exactly one match, as the agent
    requires, or None."""
    for regex in regexes:
        matches = list(regex.finditer(text))
        if matches:
            return matches[0] if len(matches) == 1 else None
    return None


def _model_name(info: dict[str, Any]) -> str | None:
    config = info.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    name = model.get("model_name") if isinstance(model, dict) else None
    return name if isinstance(name, str) and name else None


# Usage --------------------------------------------------------------------------------------------------

def _usage(reader: JsonReader, info: dict[str, Any], where: str, messages: tuple[Message, ...],
           per_call: list[tuple[int, RecordedUsage]]) -> tuple[RecordedUsage, ...]:
    """Each call's recorded usage, named by its assistant message's index, then ``info.model_stats`` as the
    session's total (cost and calls: mini-swe-agent counts no tokens of its own)."""
    assistant_at = [i for i, m in enumerate(messages) if m.role == "assistant"]
    usage = [dataclasses.replace(u, call=assistant_at[n - 1]) for n, u in per_call if 0 < n <= len(assistant_at)]
    stats = info.get("model_stats")
    if stats is not None:
        stats_where = child(where, "model_stats")
        stats = reader.obj(stats, stats_where)
        cost = reader.opt_number(stats, "instance_cost", stats_where)
        calls = reader.opt_count(stats, "api_calls", stats_where)
        if cost or calls:
            usage.append(RecordedUsage(call=None, input_tokens=None, calls=calls or 0, cost_usd=cost or None))
    return tuple(usage)


def _chat_usage(reader: JsonReader, message: dict[str, Any], where: str) -> RecordedUsage | None:
    """The usage of a Chat Completions response saved in ``extra.response`` (v1 and v2)."""
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict) or not isinstance(extra, dict):
        return None
    usage_where = child(child(child(where, "extra"), "response"), "usage")
    details = usage.get("prompt_tokens_details")
    cached = reader.opt_count(details, "cached_tokens", child(usage_where, "prompt_tokens_details")) \
        if isinstance(details, dict) else None
    if cached is None:  # Anthropic's count, as LiteLLM passes it on
        cached = reader.opt_count(usage, "cache_read_input_tokens", usage_where)
    prompt = reader.opt_count(usage, "prompt_tokens", usage_where)
    completion = reader.opt_count(usage, "completion_tokens", usage_where)
    if prompt is None and completion is None:
        return None
    return RecordedUsage(call=None, input_tokens=prompt, output_tokens=completion, cached_tokens=cached,
                         cost_usd=reader.opt_number(extra, "cost", child(where, "extra")),
                         timestamp=_timestamp(reader, message, extra, where))


def _responses_usage(reader: JsonReader, message: dict[str, Any], where: str) -> RecordedUsage | None:
    """The usage of a Responses API object (v2's Responses models)."""
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    usage_where = child(where, "usage")
    details = usage.get("input_tokens_details")
    extra = message.get("extra")
    prompt = reader.opt_count(usage, "input_tokens", usage_where)
    completion = reader.opt_count(usage, "output_tokens", usage_where)
    if prompt is None and completion is None:
        return None
    return RecordedUsage(
        call=None, input_tokens=prompt, output_tokens=completion,
        cached_tokens=reader.opt_count(details, "cached_tokens", child(usage_where, "input_tokens_details"))
        if isinstance(details, dict) else None,
        cost_usd=reader.opt_number(extra, "cost", child(where, "extra")) if isinstance(extra, dict) else None,
        timestamp=_timestamp(reader, message, extra if isinstance(extra, dict) else {}, where))


def _timestamp(reader: JsonReader, message: dict[str, Any], extra: dict[str, Any], where: str) -> float | None:
    """When the response came: ``extra.timestamp`` (v2), else the message's ``timestamp`` (v1)."""
    if extra.get("timestamp") is not None:
        return reader.opt_number(extra, "timestamp", child(where, "extra"))
    return reader.opt_number(message, "timestamp", where)


# Sniffing -----------------------------------------------------------------------------------------------

def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is a mini-swe-agent trajectory: an object with a ``trajectory_format`` key (the
    format's own mark; a bare chat file has none). Rank 4: after ATIF, Responses, Anthropic and SWE-agent
    documents."""
    if trace.jsonl or len(trace.records) != 1:
        return None
    doc = trace.records[0].value
    return Claim.document(4) if isinstance(doc, dict) and "trajectory_format" in doc else None


FORMAT = TraceFormat(name=NAME, kind=FILE, description="mini-swe-agent trajectories", sniff=sniff, load=parse)
