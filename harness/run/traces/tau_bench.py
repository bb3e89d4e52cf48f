"""tau-bench and tau2-bench results: the conversations of a customer-service agent with a simulated user.

tau-bench (https://github.com/sierra-research/tau-bench, ``tau_bench/types.py`` ``EnvRunResult`` and
``tau_bench/run.py``, which writes the results file and the published ``historical_trajectories/*.json``): a
JSON array of ``{"task_id", "trial", "reward", "info", "traj"}``, ``traj`` the agent's Chat Completions
messages as LiteLLM returned them (``system`` policy, ``user``, ``assistant`` with ``tool_calls``, ``tool``).
Each item is one session, id ``task<task_id>-trial<trial>``; its ``traj`` is read exactly as
`harness.run.traces.openai_chat` reads a list of messages (what that reader keeps and skips holds here).
tau-bench reuses a tool-call id once its call was answered: read as new calls (a builder note). A run that
failed before its first message (``traj`` empty, ``info.error``) is skipped, with a note. The results record
neither the model, the declared tools nor any usage.

tau2-bench (https://github.com/sierra-research/tau2-bench, ``src/tau2/data_model/simulation.py``
``Results`` / ``SimulationRun``, ``src/tau2/data_model/message.py``): a results object ``{"info", "tasks",
"simulations": [...]}`` or one simulation ``{"id", "task_id", "messages", "termination_reason", ...}``. Each
simulation is one session (id: its ``id``). Messages: ``system``; ``assistant`` and ``user`` with ``content``
and ``tool_calls`` ``[{id, name, arguments (an object), requestor}]``; ``tool`` ``{id, content, requestor,
error}`` (``error: true`` is status ``error``) and ``{"role": "tool", "tool_messages": [...]}``. What the
agent does not see is skipped, with a note, as tau2's agent skips it (``is_valid_agent_history_message``):
the user simulator's own tool calls and their results (``requestor: "user"``). Audio content becomes a
placeholder. A simulation starts with the agent's fixed greeting: the builder reads it after a placeholder
task (its note). The model is ``info.agent_info.llm``. The results do not record the agent's system prompt:
the domain policy they do record (the simulation's ``policy``, else ``info.environment_info.policy``) is
read as the system prompt, with a note (tau2 wraps it in agent instructions not recorded). Tools:
``info.environment_info.tool_defs`` give the names, and schemas rebuilt as Chat Completions tools
(``description`` is the signature's ``doc``, ``parameters`` its ``params``), with a note. Usage: each
assistant message's ``usage`` (``prompt_tokens``, ``completion_tokens``, ``prompt_tokens_details.
cached_tokens``), ``cost`` and ``timestamp`` (ISO 8601; one without a zone is read as UTC). Voice
simulations (``ticks``, no ``messages``) and a ``results.json`` whose simulations are kept in separate
files are refused, naming what to read instead.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from harness.core.messages import Role
from harness.run.traces import openai_chat
from harness.run.traces.formats import FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    AUDIO_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    RecordedUsage,
    TraceError,
    TranscriptBuilder,
    child,
    parse_arguments,
    structured_text,
    type_name,
)
from harness.run.traces.reading import Record, TraceText, derived_id
from harness.run.traces.sniffing import listed_values

NAME = "tau-bench"
#: The rank of the mark on the document (`Claim.document`): after atif (0), openai-responses (1) and
#: anthropic (2), whose document keys a tau-bench or tau2 file never has.
DOCUMENT_RANK = 5
_SHAPES = ('a tau-bench result ({"task_id", "trial", "traj"}), a tau2 results object ({"info", "tasks", '
           '"simulations"}) or a tau2 simulation ({"id", "task_id", "messages"})')


# Shapes --------------------------------------------------------------------------------------------------

def _is_tau_bench_result(value: dict[str, Any]) -> bool:
    return "traj" in value and "task_id" in value


def _is_tau2_results(value: dict[str, Any]) -> bool:
    return "info" in value and ("simulations" in value or "tasks" in value)


def _is_tau2_simulation(value: dict[str, Any]) -> bool:
    return "task_id" in value and ("messages" in value or "ticks" in value) and "termination_reason" in value


def _is_tau(value: Any) -> bool:
    return isinstance(value, dict) and (_is_tau_bench_result(value) or _is_tau2_results(value)
                                        or _is_tau2_simulation(value))


def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is tau-bench's or tau2's: the keys of its document, or of the first item of its
    top-level array or JSONL (a tau-bench result, a tau2 results object or simulation)."""
    listed = listed_values(trace)
    first = trace.records[0].value if listed is None else (listed[0] if listed else None)
    return Claim.document(DOCUMENT_RANK) if _is_tau(first) else None


# Reading -------------------------------------------------------------------------------------------------

@dataclass(slots=True)
class _Context:
    """What a tau2 results object says of all its simulations."""

    model: str | None = None
    policy: str | None = None
    policy_where: str = ""
    tools: tuple[str, ...] = ()
    tool_schemas: tuple[str, ...] = ()
    tools_where: str = ""


def parse(trace: TraceText) -> list[ImportedSession]:
    """The sessions of a tau-bench results file or a tau2 results (or simulation) file."""
    reader = JsonReader(trace.source)
    first = trace.records[0]
    if isinstance(first.value, list) and len(trace.records) == 1:
        values = [(v, child(first.where, i)) for i, v in enumerate(first.value)]
    else:
        values = [(r.value, r.where) for r in trace.records]
    found: list[tuple[Any, str, _Context | None]] = []  # (item, where, the results' context or None)
    for value, where in values:
        item = reader.obj(value, where, _SHAPES)
        if _is_tau_bench_result(item):
            found.append((item, where, None))
        elif _is_tau2_results(item):
            shared = _results_context(reader, item, where)
            simulations_where = child(where, "simulations")
            if "simulations" not in item:
                raise reader.error(simulations_where, "missing: a tau2 results.json of the directory layout keeps "
                                   "its simulations in simulations/<id>.json beside it; read those files")
            simulations = reader.arr(item["simulations"], simulations_where)
            found += [(s, child(simulations_where, i), shared) for i, s in enumerate(simulations)]
        elif _is_tau2_simulation(item):
            found.append((item, where, _Context()))
        else:
            raise reader.error(where, f"expected {_SHAPES}, got an object with keys "
                               f"{', '.join(repr(k) for k in list(item)[:6]) or 'none'}")
    sessions: list[ImportedSession] = []
    skipped: list[str] = []
    for index, (item, where, context) in enumerate(found):
        fallback_id = derived_id(trace.stem, index, len(found))
        if context is None:
            session = _tau_bench_session(reader, item, where, fallback_id, skipped)
        else:
            session = _simulation(reader, item, where, context, fallback_id, skipped)
        if session is not None:
            sessions.append(session)
    if not sessions:
        raise TraceError(trace.source, first.where, "no session: " + ("; ".join(skipped) if skipped else
                                                                        "the file holds no run"))
    if skipped:  # the file's own note: on its first session, where the sessions table shows it
        sessions[0] = dataclasses.replace(sessions[0], notes=(*sessions[0].notes, *(
            f"{trace.source}: {line}" for line in skipped)))
    return sessions


def _run_id(reader: JsonReader, item: dict[str, Any], where: str) -> str | None:
    """``task<task_id>-trial<trial>`` (``task<task_id>`` without a trial), or None without a task id."""
    task = item.get("task_id")
    if task is None:
        return None
    if isinstance(task, bool) or not isinstance(task, int | str):
        raise reader.error(child(where, "task_id"), f"expected a number or a string, got {type_name(task)}")
    trial = item.get("trial")
    if trial is None:
        return f"task{task}"
    if isinstance(trial, bool) or not isinstance(trial, int):
        raise reader.error(child(where, "trial"), f"expected a number, got {type_name(trial)}")
    return f"task{task}-trial{trial}"


def _failure(item: dict[str, Any]) -> str:
    info = item.get("info")
    error = info.get("error") if isinstance(info, dict) else None
    return f" ({error.strip().splitlines()[0][:120]})" if isinstance(error, str) and error.strip() else ""


def _tau_bench_session(reader: JsonReader, item: dict[str, Any], where: str, fallback_id: str,
                       skipped: list[str]) -> ImportedSession | None:
    traj_where = child(where, "traj")
    traj = reader.arr(reader.required(item, "traj", where), traj_where)
    session_id = _run_id(reader, item, where) or fallback_id
    if not traj:
        skipped.append(f"{where}: run {session_id} skipped: it failed before its first message (traj is "
                       f"empty){_failure(item)}")
        return None
    # The trajectory is a list of Chat Completions messages: the Chat reader reads it, its paths under traj.
    messages = TraceText(reader.source, (Record(traj, traj_where),), jsonl=False)
    [session] = openai_chat.parse(messages)
    return dataclasses.replace(session, session_id=session_id, format=NAME)


def _results_context(reader: JsonReader, results: dict[str, Any], where: str) -> _Context:
    info_where = child(where, "info")
    info = reader.obj(results["info"], info_where)
    context = _Context()
    agent = info.get("agent_info")
    if isinstance(agent, dict):
        context.model = reader.opt_str(agent, "llm", child(info_where, "agent_info"))
    environment_where = child(info_where, "environment_info")
    environment = info.get("environment_info")
    if environment is None:
        return context
    environment = reader.obj(environment, environment_where)
    context.policy = reader.opt_str(environment, "policy", environment_where)
    context.policy_where = child(environment_where, "policy")
    defs = environment.get("tool_defs")
    if defs is not None:
        context.tools_where = child(environment_where, "tool_defs")
        context.tools, context.tool_schemas = _tool_defs(reader, defs, context.tools_where)
    return context


def _tool_defs(reader: JsonReader, value: Any, where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Names and rebuilt Chat Completions schemas of tau2's tool signatures ``{name: {name, doc, params}}``."""
    names, schemas = [], []
    for key, signature_value in reader.obj(value, where, "an object of tool signatures").items():
        signature_where = child(where, key)
        signature = reader.obj(signature_value, signature_where, "a tool signature object")
        name = reader.opt_str(signature, "name", signature_where) or key
        function: dict[str, Any] = {"name": name}
        doc = reader.opt_str(signature, "doc", signature_where)
        if doc:
            function["description"] = doc
        if signature.get("params") is not None:
            function["parameters"] = reader.obj(signature["params"], child(signature_where, "params"))
        names.append(name)
        schemas.append(structured_text({"type": "function", "function": function}))
    return tuple(names), tuple(schemas)


@dataclass(slots=True)
class _Positions:
    """The roles of the normal form's messages as the builder will merge them (consecutive blocks of one role
    make one message), so that an assistant message's usage can name the message it becomes."""

    roles: list[Role] = field(default_factory=list)

    def add(self, role: Role) -> int:
        """Record a block of ``role`` the builder keeps; the index of its message before any placeholder task."""
        if not self.roles or self.roles[-1] != role:
            self.roles.append(role)
        return len(self.roles) - 1

    @property
    def shift(self) -> int:
        """1 when the builder puts a placeholder task first (the transcript starts with the agent)."""
        return 1 if self.roles and self.roles[0] == "assistant" else 0


@dataclass(slots=True)
class _Simulation:
    """One tau2 simulation being read."""

    reader: JsonReader
    builder: TranscriptBuilder
    positions: _Positions = field(default_factory=_Positions)
    usage: list[RecordedUsage] = field(default_factory=list)
    user_tool_blocks: int = 0

    def text(self, role: Role, text: str, where: str) -> int | None:
        if not text:
            return None
        self.builder.text(role, text, self.reader.source, where)
        return self.positions.add(role)


def _simulation(reader: JsonReader, simulation_value: Any, where: str, context: _Context, fallback_id: str,
                skipped: list[str]) -> ImportedSession | None:
    sim = reader.obj(simulation_value, where, "a tau2 simulation object")
    messages_where = child(where, "messages")
    session_id = reader.opt_str(sim, "id", where) or _run_id(reader, sim, where) or fallback_id
    if sim.get("messages") is None:
        if sim.get("ticks") is not None:
            raise reader.error(messages_where, "a full-duplex (voice) simulation: its ticks are not read, only the "
                               "messages of text simulations")
        raise reader.error(messages_where, "missing")
    messages = reader.arr(sim["messages"], messages_where)
    if not messages:
        skipped.append(f"{where}: simulation {session_id} skipped: it has no message")
        return None
    state = _Simulation(reader, TranscriptBuilder(reader.source, messages_where))
    notes: list[str] = []
    policy = reader.opt_str(sim, "policy", where)
    policy_where = child(where, "policy")
    if policy is None:
        policy, policy_where = context.policy, context.policy_where
    if policy:
        state.builder.system(policy)
        notes.append(f"{reader.source}: {policy_where}: the system prompt is the domain policy the results record; "
                     "tau2's agent wraps it in instructions they do not record")
    for i, message in enumerate(messages):
        _message(state, message, child(messages_where, i))
    built = state.builder.build()
    if state.user_tool_blocks:
        notes.append(f"{reader.source}: {messages_where}: {state.user_tool_blocks} tool call(s) and result(s) of the "
                     "user simulator skipped (tau2 does not show them to the agent)")
    if context.tool_schemas:
        notes.append(f"{reader.source}: {context.tools_where}: tool schemas rebuilt from tau2's tool signatures "
                     "(description: the signature's doc), not the exact schemas sent")
    shift = state.positions.shift
    return ImportedSession(
        source=reader.source, session_id=session_id, format=NAME, system=state.builder.system_prompt,
        messages=built, model=context.model, tools=context.tools, tool_schemas=context.tool_schemas,
        usage=tuple(dataclasses.replace(u, call=u.call + shift) if u.call is not None else u for u in state.usage),
        notes=tuple(state.builder.notes) + tuple(notes))


def _content(reader: JsonReader, message: dict[str, Any], where: str) -> str:
    if message.get("is_audio") is True:
        return AUDIO_PLACEHOLDER
    return reader.opt_str(message, "content", where) or ""


def _message(state: _Simulation, value: Any, where: str) -> None:
    reader = state.reader
    message = reader.obj(value, where, "a message object")
    role = reader.req_str(message, "role", where)
    content_where = child(where, "content")
    if role == "system":
        state.builder.system(_content(reader, message, where))
    elif role == "user":
        calls = message.get("tool_calls")
        if calls:  # the user simulator acting on its own device: not part of the agent's context
            state.user_tool_blocks += len(reader.arr(calls, child(where, "tool_calls")))
        state.text("user", _content(reader, message, where), content_where)
    elif role == "assistant":
        index = state.text("assistant", _content(reader, message, where), content_where)
        calls = message.get("tool_calls")
        if calls is not None:
            calls_where = child(where, "tool_calls")
            for i, call_value in enumerate(reader.arr(calls, calls_where)):
                call_where = child(calls_where, i)
                call = reader.obj(call_value, call_where, "a tool call object")
                state.builder.tool_use(reader.req_str(call, "id", call_where), reader.req_str(call, "name", call_where),
                                       parse_arguments(call.get("arguments", {})), reader.source, call_where)
                index = state.positions.add("assistant")
        usage = _usage(reader, message, where)
        if usage is not None and index is not None:  # an empty message is no message of the normal form
            state.usage.append(dataclasses.replace(usage, call=index))
    elif role == "tool":
        if "tool_messages" in message:  # a MultiToolMessage: the results of parallel calls
            inner_where = child(where, "tool_messages")
            for i, inner in enumerate(reader.arr(message["tool_messages"], inner_where)):
                _tool_result(state, inner, child(inner_where, i))
        else:
            _tool_result(state, message, where)
    else:
        raise reader.error(child(where, "role"), f"unknown role {role!r} (expected system, user, assistant or tool)")


def _tool_result(state: _Simulation, value: Any, where: str) -> None:
    reader = state.reader
    message = reader.obj(value, where, "a tool message object")
    if message.get("requestor") == "user":
        state.user_tool_blocks += 1
        return
    error = message.get("error", False)
    if not isinstance(error, bool):
        raise reader.error(child(where, "error"), f"expected a boolean, got {type_name(error)}")
    state.builder.tool_result(reader.req_str(message, "id", where), "error" if error else "success",
                              reader.opt_str(message, "content", where) or "", reader.source, where)
    state.positions.add("user")


def _usage(reader: JsonReader, message: dict[str, Any], where: str) -> RecordedUsage | None:
    """The usage an assistant message records (its LLM call), or None when it records none (the greeting)."""
    if message.get("usage") is None:
        return None
    usage_where = child(where, "usage")
    usage = reader.obj(message["usage"], usage_where)
    details = usage.get("prompt_tokens_details")
    cached = (reader.opt_count(details, "cached_tokens", child(usage_where, "prompt_tokens_details"))
              if isinstance(details, dict) else None)
    cost = message.get("cost")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, int | float)):
        raise reader.error(child(where, "cost"), f"expected a number, got {type_name(cost)}")
    return RecordedUsage(call=None, input_tokens=reader.opt_count(usage, "prompt_tokens", usage_where),
                         output_tokens=reader.opt_count(usage, "completion_tokens", usage_where), cached_tokens=cached,
                         cost_usd=None if cost is None else float(cost), timestamp=_unix_time(message.get("timestamp")))


def _unix_time(value: Any) -> float | None:
    """An ISO 8601 time as Unix time (a time without a zone read as UTC); None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()


FORMAT = TraceFormat(name=NAME, kind=FILE, description="tau-bench results and tau2-bench simulations", sniff=sniff,
                     load=parse)
