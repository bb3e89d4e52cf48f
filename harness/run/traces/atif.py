"""ATIF trajectories (Agent Trajectory Interchange Format, v1.x; this reader follows v1.8).

Follows the ATIF RFC (https://github.com/harbor-framework/harbor/blob/main/rfcs/0001-trajectory-format.md)
and the field names of its reference pydantic models (the ``atif`` package, 1.8.0): a root object with
``schema_version`` (``ATIF-v1.N``), ``session_id``, ``agent`` (``model_name``, ``tool_definitions``) and
``steps``; each step has a ``source`` (``system``, ``user`` or ``agent``), a ``message`` (a string or
content parts; image and audio parts become placeholders), and on agent steps ``tool_calls``
``[{tool_call_id, function_name, arguments}]`` and an ``observation`` whose ``results`` answer them by
``source_call_id``. A result without ``source_call_id`` (a non-tool action) becomes user text. System steps
join the system prompt. ATIF has no error flag of its own: a result is ``error`` when its ``extra`` says so
(``"is_error": true`` or ``"status": "error"``), the convention ctxbench's writers use. Embedded subagent
trajectories and continuation files are not followed. A file may also be JSONL, one trajectory per line.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.run.traces.formats import FILE, Claim, TraceFormat
from harness.run.traces.normal import (
    AUDIO_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    RecordedUsage,
    TranscriptBuilder,
    child,
    parse_arguments,
)
from harness.run.traces.openai_chat import tool_names, tool_schemas
from harness.run.traces.reading import ContentParts, TraceText, derived_id
from harness.run.traces.sniffing import Marks, claim

NAME = "atif"
SCHEMA_VERSION = "ATIF-v1.8"
_VERSION = re.compile(r"^ATIF-v1\.\d+$")
_CONTENT_PARTS = ContentParts({"text": "text"}, {"image": IMAGE_PLACEHOLDER, "audio": AUDIO_PLACEHOLDER})


def parse(trace: TraceText) -> list[ImportedSession]:
    """The sessions (one per trajectory) of an ATIF file."""
    reader = JsonReader(trace.source)
    count = len(trace.records)
    return [_trajectory(reader, r.value, r.where, trace.stem, i, count) for i, r in enumerate(trace.records)]


def _trajectory(reader: JsonReader, value: Any, where: str, name: str, index: int, count: int) -> ImportedSession:
    doc = reader.obj(value, where, "an ATIF trajectory object")
    version = reader.req_str(doc, "schema_version", where)
    if not _VERSION.match(version):
        raise reader.error(child(where, "schema_version"),
                           f"unsupported schema_version {version!r} (ctxbench reads ATIF-v1.x)")
    agent_where = child(where, "agent")
    agent = reader.obj(reader.required(doc, "agent", where), agent_where)
    model = reader.opt_str(agent, "model_name", agent_where)
    tools = tool_names(agent.get("tool_definitions"))
    steps_where = child(where, "steps")
    builder = TranscriptBuilder(reader.source, steps_where)
    recorded: list[RecordedUsage | None] = []  # one per agent step
    for i, step in enumerate(reader.arr(reader.required(doc, "steps", where), steps_where)):
        step_where = child(steps_where, i)
        if _step(reader, builder, step, step_where):
            recorded.append(_metrics(reader, step, step_where))
    session_id = reader.opt_str(doc, "session_id", where) or reader.opt_str(doc, "trajectory_id", where)
    messages = builder.build()
    return ImportedSession(
        source=reader.source,
        session_id=session_id or derived_id(name, index, count),
        format=NAME,
        system=builder.system_prompt,
        messages=messages,
        model=model,
        tools=tools,
        tool_schemas=tool_schemas(agent.get("tool_definitions")),
        usage=_placed(recorded, messages),
        notes=tuple(builder.notes),
    )


def _metrics(reader: JsonReader, step: dict[str, Any], where: str) -> RecordedUsage | None:
    """An agent step's ``metrics`` (the LLM call that made it), or None when it records none."""
    if step.get("metrics") is None:
        return None
    metrics_where = child(where, "metrics")
    metrics = reader.obj(step["metrics"], metrics_where)
    return RecordedUsage(call=None, input_tokens=reader.opt_count(metrics, "prompt_tokens", metrics_where),
                         output_tokens=reader.opt_count(metrics, "completion_tokens", metrics_where),
                         cached_tokens=reader.opt_count(metrics, "cached_tokens", metrics_where),
                         cost_usd=reader.opt_number(metrics, "cost_usd", metrics_where))


def _placed(recorded: list[RecordedUsage | None], messages: tuple[Message, ...]) -> tuple[RecordedUsage, ...]:
    """Each agent step's usage at the assistant message it made, when the steps and the messages pair one to
    one; else (consecutive agent steps merged into one message) one session total."""
    given = [u for u in recorded if u is not None]
    if not given:
        return ()
    positions = [i for i, m in enumerate(messages) if i > 0 and m.role == "assistant"]
    if len(positions) == len(recorded):
        return tuple(dataclasses.replace(u, call=at) for u, at in zip(recorded, positions, strict=True)
                     if u is not None)
    return (RecordedUsage(call=None, input_tokens=sum(u.input_tokens or 0 for u in given),
                          output_tokens=sum(u.output_tokens or 0 for u in given), calls=len(given)),)


def _step(reader: JsonReader, builder: TranscriptBuilder, value: Any, where: str) -> bool:
    """One step into ``builder``; whether it is an agent step (a model call)."""
    step = reader.obj(value, where, "a step object")
    source = reader.req_str(step, "source", where)
    message = _text(reader, reader.required(step, "message", where), child(where, "message"))
    file = reader.source
    if source == "system":
        builder.system(message)
        return False
    if source == "user":
        builder.text("user", message, file, child(where, "message"))
        return False
    if source != "agent":
        raise reader.error(child(where, "source"), f"unknown step source {source!r} (expected system, user or agent)")
    builder.text("assistant", message, file, child(where, "message"))
    calls = step.get("tool_calls")
    if calls is not None:
        calls_where = child(where, "tool_calls")
        for i, call_value in enumerate(reader.arr(calls, calls_where)):
            call_where = child(calls_where, i)
            call = reader.obj(call_value, call_where, "a tool call object")
            builder.tool_use(reader.req_str(call, "tool_call_id", call_where),
                             reader.req_str(call, "function_name", call_where),
                             parse_arguments(reader.required(call, "arguments", call_where)), file, call_where)
    observation = step.get("observation")
    if observation is not None:
        obs_where = child(where, "observation")
        obs = reader.obj(observation, obs_where)
        results_where = child(obs_where, "results")
        for i, result_value in enumerate(reader.arr(reader.required(obs, "results", obs_where), results_where)):
            result_where = child(results_where, i)
            result = reader.obj(result_value, result_where, "an observation result object")
            content = result.get("content")
            if content is None and result.get("subagent_trajectory_ref") is not None:
                text = "[subagent trajectory omitted]"
            else:
                text = _text(reader, content, child(result_where, "content"))
            call_id = reader.opt_str(result, "source_call_id", result_where)
            if call_id is None:
                builder.text("user", text, file, result_where)
            else:
                builder.tool_result(call_id, "error" if _is_error(result.get("extra")) else "success", text, file,
                                    result_where)
    return True


def _is_error(extra: Any) -> bool:
    return isinstance(extra, dict) and (extra.get("is_error") is True or extra.get("status") == "error")


def _text(reader: JsonReader, value: Any, where: str) -> str:
    """A message or result: a string, or content parts (text kept, media as placeholders)."""
    return "" if value is None else _CONTENT_PARTS.text(reader, value, where)


def dump(session: ImportedSession) -> dict[str, Any]:
    """The session as an ATIF v1.8 trajectory: each assistant message is an agent step whose observation
    holds the results of the next user message; an error result carries ``extra: {"is_error": true}``."""
    steps: list[dict[str, Any]] = []
    if session.system:
        steps.append({"source": "system", "message": session.system})
    for message in session.messages:
        texts = "\n".join(b.text for b in message.blocks if isinstance(b, Text))
        if message.role == "assistant":
            step: dict[str, Any] = {"source": "agent", "message": texts}
            calls = [{"tool_call_id": b.id, "function_name": b.name, "arguments": dict(b.input)}
                     for b in message.blocks if isinstance(b, ToolUse)]
            if calls:
                step["tool_calls"] = calls
            steps.append(step)
            continue
        results = []
        for block in message.blocks:
            if isinstance(block, ToolResult):
                result: dict[str, Any] = {"source_call_id": block.tool_use_id, "content": block.content}
                if block.status == "error":
                    result["extra"] = {"is_error": True}
                results.append(result)
        if results and steps and steps[-1]["source"] == "agent":
            steps[-1]["observation"] = {"results": results}
        if texts:
            steps.append({"source": "user", "message": texts})
    numbered = [{"step_id": number, **step} for number, step in enumerate(steps, start=1)]
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": session.session_id,
        "agent": {"name": "ctxbench", "version": "1", **({"model_name": session.model} if session.model else {}),
                  **({"tool_definitions": [{"type": "function", "function": {"name": n}}
                                           for n in session.tools]} if session.tools else {})},
        "steps": numbered,
    }


# Sniffing ------------------------------------------------------------------------------------------------

def _document_rank(document: dict[str, Any]) -> int | None:
    # Rank 0, before every other format: a trajectory's own keys say what it is, whatever else it holds.
    return 0 if "schema_version" in document or ("steps" in document and "agent" in document) else None


def _item_rank(item: dict[str, Any]) -> int | None:
    # A trajectory in an array or a later JSONL line; after the OpenAI marks (ranks 1, 2) of the same object.
    return 3 if "schema_version" in item else None


_MARKS = Marks(document=_document_rank, item=_item_rank)


def sniff(trace: TraceText) -> Claim | None:
    """Whether ``trace`` is ATIF: a ``schema_version``, or ``steps`` with an ``agent``."""
    return claim(trace, _MARKS)


FORMAT = TraceFormat(name=NAME, kind=FILE, description="ATIF v1.x trajectories", sniff=sniff, load=parse,
                     dump=dump)
