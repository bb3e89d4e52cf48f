"""SWE-agent trajectories (``.traj``): one JSON object with ``history``, ``trajectory``, ``info`` and, from
SWE-agent 1.0 on, ``environment`` and ``replay_config``.

Follows SWE-agent's own code (https://github.com/SWE-agent/SWE-agent, ``sweagent/types.py``: ``HistoryItem``,
``TrajectoryStep``, ``AgentInfo``; ``sweagent/agent/agents.py``: ``get_trajectory_data``,
``add_step_to_history``, ``_add_demonstration_to_history``; ``sweagent/agent/models.py``:
``_history_to_messages``; ``sweagent/tools/parsing.py``: ``ThoughtActionParser``, ``XMLThoughtActionParser``)
and the trajectory docs (``docs/usage/trajectories.md``). Two formats read the file:

``swe-agent`` (`FORMAT`) reads ``history``, the messages as SWE-agent sent them to the model. System items
form the system prompt; user items are user text; demonstrations (``is_demo``, ``message_type``
``demonstration``) are part of the prompt as sent and are kept where they stand (a demonstration put in the
history step by step brings assistant messages, which a replay counts as calls: a note says how many). When
the history holds the items of several agents, only the first agent's are read (SWE-agent sends an agent its
own items only). Function-calling runs: an assistant item's ``tool_calls`` (OpenAI's shape; a Python-repr
string of it is parsed with `ast.literal_eval`, never evaluated) are tool calls, its ``content`` the text, and
a ``tool`` item answers ``tool_call_ids[0]`` (SWE-agent sends only that one). Text-action runs (no
``tool_calls``): the action is a command block of the assistant's text, the last fenced block
(`` ``` ``) or ``<command>`` block, the one whose text is the item's ``action`` when recorded; it becomes a
tool call named after the command's first word with arguments ``{"command": <block text>}``, the rest of the
text stays the assistant's text (the block is not counted twice), and the next user item is its result. An
assistant text without such a block, or whose block is not followed by an observation, stays text. A note
says how many text actions became tool calls (or that none did). SWE-agent has no error flag: every result
is ``success``. ``thinking_blocks`` are skipped; images in content parts become placeholders. The history is
read as saved: SWE-agent's history processors (``last_n_observations``, cache control), which shaped what each
call was sent, are not applied (replaying strategies is ctxbench's point).

``swe-agent-steps`` (`STEPS_FORMAT`, only by ``--format swe-agent-steps``) reads ``trajectory``: the system
prompt and the user items before the first assistant item of ``history`` (if any), then per step the
``thought`` as assistant text and one tool call from ``action`` (named after its first word, arguments
``{"command": action}``) answered by its ``observation`` (the raw environment output, without SWE-agent's
templates). A step without an action keeps its thought and observation as text.

Both read ``info.model_stats`` (``tokens_sent``, ``tokens_received``, ``api_calls``, ``instance_cost``) as one
session total, when it holds a nonzero count or cost; the model name from ``replay_config`` (a JSON string or
an object: ``agent.model.name`` or ``model_name``); the session id from its ``problem_statement.id``, else
the file's name (without ``.traj``). A RetryAgent file holds ``attempts``: with a chosen attempt at the top
level that one is read, else every attempt is one session. A trajectory declares no tool schemas.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.core.messages import Message
from harness.run.traces.formats import FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    IMAGE_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    RecordedUsage,
    TranscriptBuilder,
    child,
    parse_arguments,
    replace_surrogates,
    type_name,
)
from harness.run.traces.reading import ContentParts, TraceText, derived_id

NAME = "swe-agent"
STEPS_NAME = "swe-agent-steps"
#: Content parts of a history item (SWE-agent's cache-control and multimodal processors write parts).
_CONTENT_PARTS = ContentParts({"text": "text"}, {"image_url": IMAGE_PLACEHOLDER})
#: Keys beside ``history`` that only a trajectory file has.
_DOCUMENT_KEYS = ("trajectory", "info", "replay_config", "environment")
#: Keys of a history item that chat messages do not have.
_ITEM_KEYS = ("agent", "message_type", "is_demo")
#: ThoughtActionParser's fence: an opening (```lang) or a closing (```) line.
_FENCE = re.compile(r"^```(\S*)\s*\n|^```\s*$", re.MULTILINE)
_COMMAND_OPEN, _COMMAND_CLOSE = "<command>", "</command>"
#: The roles of a history item.
_ROLES = ("system", "user", "assistant", "tool")

#: Reads one trajectory object into the builder, adding notes of its own.
_Reader = Callable[[JsonReader, TranscriptBuilder, dict[str, Any], str, list[str]], None]


def parse(trace: TraceText) -> list[ImportedSession]:
    """The session(s) of a SWE-agent trajectory, read from its ``history``."""
    return _sessions(trace, NAME, _read_history)


def parse_steps(trace: TraceText) -> list[ImportedSession]:
    """The session(s) of a SWE-agent trajectory, read from its ``trajectory`` steps."""
    return _sessions(trace, STEPS_NAME, _read_steps)


def _sessions(trace: TraceText, fmt: str, read: _Reader) -> list[ImportedSession]:
    reader = JsonReader(trace.source)
    if len(trace.records) != 1:
        raise reader.error(trace.records[1].where, "a SWE-agent trajectory is one JSON object, found several "
                           "JSON values")
    record = trace.records[0]
    doc = reader.obj(record.value, record.where, "a SWE-agent trajectory object")
    attempts = doc.get("attempts")
    if "history" in doc or "trajectory" in doc or attempts is None:
        notes = []
        if isinstance(attempts, list) and len(attempts) > 1:
            notes.append(f"{trace.source}: the file holds {len(attempts)} attempts (RetryAgent): the chosen one, "
                         "at the top level, is read")
        return [_session(reader, trace, doc, record.where, fmt, read, None, notes)]
    attempts_where = child(record.where, "attempts")
    listed = reader.arr(attempts, attempts_where)
    if not listed:
        raise reader.error(attempts_where, "no attempts (and no history at the top level)")
    return [_session(reader, trace, reader.obj(value, child(attempts_where, i), "an attempt object"),
                     child(attempts_where, i), fmt, read, (i, len(listed)), [])
            for i, value in enumerate(listed)]


def _session(reader: JsonReader, trace: TraceText, doc: dict[str, Any], where: str, fmt: str, read: _Reader,
             attempt: tuple[int, int] | None, notes: list[str]) -> ImportedSession:
    builder = TranscriptBuilder(reader.source, where)
    read(reader, builder, doc, where, notes)
    config = _replay_config(reader, doc, where, notes)
    instance = _instance_id(config)
    name = trace.stem.removesuffix(".traj")  # <instance>.traj, or <instance>.traj.json once renamed
    if attempt is None:
        session_id = instance or name
    else:
        session_id = f"{instance}-attempt-{attempt[0] + 1}" if instance else derived_id(name, *attempt)
    messages = builder.build()
    return ImportedSession(
        source=reader.source,
        session_id=session_id,
        format=fmt,
        system=builder.system_prompt,
        messages=messages,
        model=_model_name(config),
        usage=_usage(reader, doc, where, messages),
        notes=tuple(builder.notes) + tuple(notes),
    )


# The history --------------------------------------------------------------------------------------------

@dataclass(slots=True)
class _History:
    """The state of reading one ``history``: the text action waiting for its observation, and counts for
    the notes."""

    reader: JsonReader
    builder: TranscriptBuilder
    #: The id of the text action the next user item answers.
    pending: str | None = None
    text_actions: int = 0
    function_calls: int = 0
    assistant_items: int = 0
    #: Assistant items whose recorded action is no command block of their text.
    unmatched: int = 0
    #: Assistant items whose command block no observation follows.
    unanswered: int = 0
    demos: int = 0
    demo_assistant_items: int = 0

    def item(self, entry: dict[str, Any], where: str, next_role: Any) -> None:
        reader, source = self.reader, self.reader.source
        role = reader.req_str(entry, "role", where)
        if role not in _ROLES:
            raise reader.error(child(where, "role"), f"unknown role {role!r} (expected system, user, assistant "
                               "or tool)")
        if entry.get("is_demo") is True or entry.get("message_type") == "demonstration":
            self.demos += 1
            self.demo_assistant_items += int(role == "assistant")
        text = _content(reader, entry, where)
        if role == "system":
            self.builder.system(text)
        elif role == "user":
            if self.pending is not None:
                self.builder.tool_result(self.pending, "success", text, source, where)
                self.pending = None
            else:
                self.builder.text("user", text, source, child(where, "content"))
        elif role == "tool":
            self.builder.tool_result(_answered_id(reader, entry, where), "success", text, source, where)
        else:
            self.assistant(entry, text, where, next_role)

    def assistant(self, entry: dict[str, Any], text: str, where: str, next_role: Any) -> None:
        reader, source = self.reader, self.reader.source
        self.assistant_items += 1
        calls = _tool_calls(reader, entry, where)
        if calls is not None:  # function calling: the calls say what was done, the content is the thought
            self.builder.text("assistant", text, source, child(where, "content"))
            for call, call_where in calls:
                _function_call(reader, self.builder, call, call_where)
            self.function_calls += len(calls)
            return
        action = reader.opt_str(entry, "action", where)
        split = split_action(text, action)
        answered = next_role in ("user", None)  # None: the last item, a final call left unanswered
        if split is None or not answered:
            self.builder.text("assistant", text, source, child(where, "content"))
            if split is not None:
                self.unanswered += 1
            elif action is not None and action.strip():
                self.unmatched += 1
            return
        thought, command = split
        self.builder.text("assistant", thought, source, child(where, "content"))
        self.text_actions += 1
        call_id = f"swe-action-{self.text_actions}"
        self.builder.tool_use(call_id, command.split()[0], {"command": command}, source, child(where, "content"))
        self.pending = call_id if next_role == "user" else None

    def summary(self) -> list[str]:
        """The notes of what reading the history assumed."""
        source, notes = self.reader.source, []
        if self.text_actions:
            notes.append(f"{source}: {self.text_actions} text action(s) (a command block of the assistant's text) "
                         "read as tool calls named after the command's first word, arguments {\"command\": ...}, "
                         "each answered by the next observation")
        elif self.assistant_items and not self.function_calls:
            notes.append(f"{source}: no assistant message holds a function call or a command block (``` or "
                         "<command>): the transcript is read as text, without tool calls")
        if self.unmatched:
            notes.append(f"{source}: {self.unmatched} assistant message(s) whose recorded action is not a command "
                         "block of their text kept as text")
        if self.unanswered:
            notes.append(f"{source}: {self.unanswered} assistant message(s) whose command block no observation "
                         "follows kept as text")
        if self.demos:
            demo_calls = (f"; {self.demo_assistant_items} of them are assistant messages, which a replay counts as "
                          "calls the model did not make") if self.demo_assistant_items else ""
            notes.append(f"{source}: {self.demos} demonstration message(s) read as part of the prompt, as SWE-agent "
                         f"sent them{demo_calls}")
        return notes


def _read_history(reader: JsonReader, builder: TranscriptBuilder, doc: dict[str, Any], where: str,
                  notes: list[str]) -> None:
    history_where = child(where, "history")
    if "history" not in doc:
        raise reader.error(history_where, "missing (a file of trajectory steps only is read with --format "
                           f"{STEPS_NAME})")
    listed = reader.arr(doc["history"], history_where)
    entries = [(reader.obj(value, child(history_where, i), "a history item object"), child(history_where, i))
               for i, value in enumerate(listed)]
    state = _History(reader, builder)
    entries = _own_items(reader.source, entries, notes)
    for i, (entry, entry_where) in enumerate(entries):
        next_role = entries[i + 1][0].get("role") if i + 1 < len(entries) else None
        state.item(entry, entry_where, next_role)
    notes.extend(state.summary())


def _own_items(source: str, entries: list[tuple[dict[str, Any], str]],
               notes: list[str]) -> list[tuple[dict[str, Any], str]]:
    """The items of the history's first agent (and those naming none): SWE-agent's ``messages`` sends an
    agent only its own items."""
    main = next((e["agent"] for e, _ in entries if isinstance(e.get("agent"), str)), None)
    if main is None:
        return entries
    own = [(e, w) for e, w in entries if e.get("agent") in (main, None)]
    if len(own) < len(entries):
        notes.append(f"{source}: {len(entries) - len(own)} history item(s) of agents other than {main!r} skipped "
                     "(SWE-agent sends an agent only its own items)")
    return own


def _content(reader: JsonReader, entry: dict[str, Any], where: str) -> str:
    content = entry.get("content")
    return "" if content is None else _CONTENT_PARTS.text(reader, content, child(where, "content"))


def _answered_id(reader: JsonReader, entry: dict[str, Any], where: str) -> str:
    """The call a ``tool`` item answers: the first of its ``tool_call_ids``, as SWE-agent sends it."""
    if "tool_call_ids" not in entry and isinstance(entry.get("tool_call_id"), str):
        return str(entry["tool_call_id"])
    ids_where = child(where, "tool_call_ids")
    ids = reader.arr(reader.required(entry, "tool_call_ids", where), ids_where, "an array of tool call ids")
    if not ids:
        raise reader.error(ids_where, "empty: a tool message answers one call")
    return reader.string(ids[0], child(ids_where, 0), "a tool call id")


def _tool_calls(reader: JsonReader, entry: dict[str, Any], where: str) -> list[tuple[dict[str, Any], str]] | None:
    """The function calls of an assistant item, or None for a text-action item (no ``tool_calls``)."""
    value = entry.get("tool_calls")
    if value is None:
        return None
    calls_where = child(where, "tool_calls")
    if isinstance(value, str):
        value = _literal(reader, value, calls_where)
    listed = reader.arr(value, calls_where, "an array of tool calls")
    return [(reader.obj(call, child(calls_where, i), "a tool call object"), child(calls_where, i))
            for i, call in enumerate(listed)]


def _literal(reader: JsonReader, text: str, where: str) -> Any:
    """Tool calls saved as text: JSON, or the repr of Python lists and dicts (read by `ast.literal_eval`, which
    evaluates nothing), checked to hold JSON values only."""
    try:
        return replace_surrogates(json.loads(text))[0]
    except (ValueError, RecursionError):
        pass  # not JSON: a Python repr, tried next
    try:
        value = _as_json(ast.literal_eval(text))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise reader.error(where, "a string that is neither JSON nor a Python literal of tool calls") from None
    return replace_surrogates(value)[0]


def _as_json(value: Any) -> Any:
    """A Python literal as a JSON value (tuples become arrays); ValueError for what JSON cannot hold."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, list | tuple):
        return [_as_json(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _as_json(v) for k, v in value.items()}
    raise ValueError(f"not a JSON value: {type(value).__name__}")


def _function_call(reader: JsonReader, builder: TranscriptBuilder, call: dict[str, Any], where: str) -> None:
    function_where = child(where, "function")
    function = reader.obj(reader.required(call, "function", where), function_where)
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str | dict):
        raise reader.error(child(function_where, "arguments"),
                           f"expected a JSON string or an object, got {type_name(arguments)}")
    builder.tool_use(reader.req_str(call, "id", where), reader.req_str(function, "name", function_where),
                     parse_arguments(arguments), reader.source, where)


def split_action(text: str, action: str | None) -> tuple[str, str] | None:
    """The (thought, command) of a text action: the command block of ``text`` (a fenced block not nested in
    another, as SWE-agent's ThoughtActionParser finds them, or a ``<command>`` block) whose text is ``action``
    when it is given, else the last one; the thought is the text around it. None when there is none."""
    blocks = _fenced_blocks(text) + _command_blocks(text)
    if action is not None:
        wanted = action.strip()
        blocks = [b for b in blocks if wanted and b[2].strip() == wanted]
    blocks = [b for b in blocks if b[2].strip()]
    if not blocks:
        return None
    start, end, inner = max(blocks, key=lambda b: b[1])
    return (text[:start] + text[end:]).strip(), inner.strip()


def _fenced_blocks(text: str) -> list[tuple[int, int, str]]:
    """(start, end, inner text) of each outermost fenced block, as ThoughtActionParser pairs the fences."""
    stack: list[re.Match[str]] = []
    blocks = []
    for match in _FENCE.finditer(text):
        if stack and not match.group(1):  # a closing fence
            opening = stack.pop()
            if not stack:
                blocks.append((opening.start(), match.end(), text[opening.end():match.start()]))
        elif match.group(1) is not None:  # an opening fence
            stack.append(match)
    return blocks


def _command_blocks(text: str) -> list[tuple[int, int, str]]:
    """(start, end, inner text) of each ``<command>...</command>`` block (XMLThoughtActionParser's tags)."""
    blocks = []
    start = text.find(_COMMAND_OPEN)
    while start >= 0:
        end = text.find(_COMMAND_CLOSE, start + len(_COMMAND_OPEN))
        if end < 0:
            break
        blocks.append((start, end + len(_COMMAND_CLOSE), text[start + len(_COMMAND_OPEN):end]))
        start = text.find(_COMMAND_OPEN, end)
    return blocks


# The trajectory steps -----------------------------------------------------------------------------------

def _read_steps(reader: JsonReader, builder: TranscriptBuilder, doc: dict[str, Any], where: str,
                notes: list[str]) -> None:
    source = reader.source
    _read_prompt(reader, builder, doc, where)
    steps_where = child(where, "trajectory")
    steps = reader.arr(reader.required(doc, "trajectory", where), steps_where)
    calls = 0
    for i, value in enumerate(steps):
        step_where = child(steps_where, i)
        step = reader.obj(value, step_where, "a trajectory step object")
        thought = reader.opt_str(step, "thought", step_where) or ""
        action = reader.opt_str(step, "action", step_where) or ""
        observation = reader.opt_str(step, "observation", step_where) or ""
        builder.text("assistant", thought, source, child(step_where, "thought"))
        if action.strip():
            calls += 1
            call_id = f"swe-step-{i + 1}"
            builder.tool_use(call_id, action.split()[0], {"command": action}, source, child(step_where, "action"))
            builder.tool_result(call_id, "success", observation, source, child(step_where, "observation"))
        else:
            builder.text("user", observation, source, child(step_where, "observation"))
    notes.append(f"{source}: {calls} of {len(steps)} trajectory step(s) read as tool calls named after the action's "
                 "first word, arguments {\"command\": action}, each answered by its observation")


def _read_prompt(reader: JsonReader, builder: TranscriptBuilder, doc: dict[str, Any], where: str) -> None:
    """The system prompt and the user items of ``history`` before its first assistant item (the task, and
    demonstrations sent as one message)."""
    if doc.get("history") is None:
        return
    history_where = child(where, "history")
    for i, value in enumerate(reader.arr(doc["history"], history_where)):
        item_where = child(history_where, i)
        entry = reader.obj(value, item_where, "a history item object")
        role = reader.req_str(entry, "role", item_where)
        if role == "assistant":
            return
        if role == "system":
            builder.system(_content(reader, entry, item_where))
        elif role == "user":
            builder.text("user", _content(reader, entry, item_where), reader.source, child(item_where, "content"))
        else:
            raise reader.error(child(item_where, "role"), f"unexpected role {role!r} before the first assistant "
                               "message (expected system or user)")


# Metadata and usage -------------------------------------------------------------------------------------

def _replay_config(reader: JsonReader, doc: dict[str, Any], where: str, notes: list[str]) -> dict[str, Any]:
    """The run's configuration (``replay_config``: a JSON string since SWE-agent 1.0, an object before), or
    {} when the file has none or it cannot be read (then a note)."""
    value = doc.get("replay_config")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            notes.append(f"{reader.source}: {child(where, 'replay_config')}: not JSON: the model name and the "
                         "instance id it may hold are not read")
            return {}
    return value if isinstance(value, dict) else {}


def _model_name(config: dict[str, Any]) -> str | None:
    agent = config.get("agent")
    model = agent.get("model") if isinstance(agent, dict) else None
    if not isinstance(model, dict):
        return None
    name = model.get("name", model.get("model_name"))
    return name if isinstance(name, str) and name else None


def _instance_id(config: dict[str, Any]) -> str | None:
    problem = config.get("problem_statement")
    instance = problem.get("id") if isinstance(problem, dict) else None
    return instance if isinstance(instance, str) and instance else None


def _usage(reader: JsonReader, doc: dict[str, Any], where: str,
           messages: tuple[Message, ...]) -> tuple[RecordedUsage, ...]:
    """``info.model_stats`` as one session total, when it records a nonzero count or cost."""
    info = doc.get("info")
    if info is None:
        return ()
    info_where = child(where, "info")
    stats = reader.obj(info, info_where).get("model_stats")
    if stats is None:
        return ()
    stats_where = child(info_where, "model_stats")
    stats = reader.obj(stats, stats_where)
    sent = reader.opt_count(stats, "tokens_sent", stats_where)
    received = reader.opt_count(stats, "tokens_received", stats_where)
    calls = reader.opt_count(stats, "api_calls", stats_where)
    cost = reader.opt_number(stats, "instance_cost", stats_where)
    if not (sent or received or cost):  # a replay or a human run: nothing was counted
        return ()
    if calls is None:
        calls = sum(1 for m in messages[1:] if m.role == "assistant")
    return (RecordedUsage(call=None, input_tokens=sent or None, output_tokens=received or None, calls=calls,
                          cost_usd=cost or None),)


# Sniffing -----------------------------------------------------------------------------------------------

def _is_trajectory(doc: dict[str, Any]) -> bool:
    history = doc.get("history")
    if isinstance(history, list):
        if any(key in doc for key in _DOCUMENT_KEYS):
            return True
        first = next((item for item in history if isinstance(item, dict)), None)
        return first is not None and any(key in first for key in _ITEM_KEYS)
    if isinstance(doc.get("trajectory"), list) and isinstance(doc.get("info"), dict):
        return True
    attempts = doc.get("attempts")
    return isinstance(attempts, list) and bool(attempts) and isinstance(attempts[0], dict) \
        and isinstance(attempts[0].get("history"), list)


def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is a SWE-agent trajectory: an object with a ``history`` beside ``trajectory``,
    ``info``, ``replay_config`` or ``environment`` (or whose items carry SWE-agent's ``agent``,
    ``message_type`` or ``is_demo``), steps with ``info``, or RetryAgent ``attempts``. Rank 3: after ATIF,
    Responses and Anthropic documents."""
    if trace.jsonl or len(trace.records) != 1:
        return None
    doc = trace.records[0].value
    return Claim.document(3) if isinstance(doc, dict) and _is_trajectory(doc) else None


def _never(trace: TraceText) -> Claim | None:
    """The steps reading is chosen by name only: a trajectory is sniffed as ``swe-agent``."""
    return None


FORMAT = TraceFormat(name=NAME, kind=FILE, description="SWE-agent .traj files, their history as sent",
                     sniff=sniff, load=parse)
STEPS_FORMAT = TraceFormat(name=STEPS_NAME, kind=FILE,
                           description="SWE-agent .traj files, their trajectory steps (by --format only)",
                           sniff=_never, load=parse_steps)
