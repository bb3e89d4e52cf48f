"""strands-agents session directories, as its ``FileSessionManager`` writes them (strands-agents 1.62,
``strands/session/file_session_manager.py``)::

    session_<session_id>/session.json
    session_<session_id>/agents/agent_<agent_id>/agent.json
    session_<session_id>/agents/agent_<agent_id>/messages/message_<n>.json

Each message file is a ``SessionMessage``: ``{"message": <Converse message>, "message_id": n,
"redact_message": ..., "created_at", "updated_at"}``; a non-null ``redact_message`` replaces the message, as
strands does when it restores a session. Files are ordered by the number ``n`` (not by name), which must run
0, 1, 2, ... without a gap. One session per agent directory; a session directory or one agent directory can
be given. Converse blocks: ``text``, ``toolUse`` ``{toolUseId, name, input}``, ``toolResult`` ``{toolUseId,
status, content: [{text} | {json} | {image} | {document}]}`` (``json`` serialised with sorted keys, media as
placeholders); ``reasoningContent`` and ``cachePoint`` are skipped. strands does not store the system prompt
or the model with the session itself; the agent's ``state`` (``agent.json``: the user-managed state strands
persists, ``agent.state``) holds them where the application put them there, as ``system_prompt`` and
``model`` (or ``model_id``), and they are read from it; else the system prompt stays empty, with a note
(``ctxbench replay --tools`` supplies the tools, which strands does not persist either).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from harness.core.messages import Role, to_converse
from harness.run.traces.formats import DIRECTORY, Claim, TraceFormat
from harness.run.traces.normal import (
    AUDIO_PLACEHOLDER,
    FILE_PLACEHOLDER,
    IMAGE_PLACEHOLDER,
    VIDEO_PLACEHOLDER,
    ImportedSession,
    JsonReader,
    TraceError,
    TranscriptBuilder,
    child,
    structured_text,
)
from harness.run.traces.reading import read_json

NAME = "strands"
_MESSAGE_FILE = re.compile(r"^message_(\d+)\.json$")
_PLACEHOLDERS = {"image": IMAGE_PLACEHOLDER, "document": FILE_PLACEHOLDER, "video": VIDEO_PLACEHOLDER,
                 "audio": AUDIO_PLACEHOLDER}
_SKIPPED = frozenset({"reasoningContent", "cachePoint"})
#: Fixed timestamps for written sessions: a written trace is a pure function of the session.
_WRITTEN_AT = "1970-01-01T00:00:00+00:00"


def is_session_dir(path: Path) -> bool:
    """A strands session directory (``agents/`` inside) or one agent directory (``messages/`` inside)."""
    return (path / "agents").is_dir() or (path.name.startswith("agent_") and (path / "messages").is_dir())


def load(path: Path) -> list[ImportedSession]:
    """The sessions of a strands session directory (one per agent) or of one agent directory."""
    if (path / "agents").is_dir():
        session_id = _session_id(path)
        agents = sorted(p for p in (path / "agents").iterdir() if p.is_dir() and p.name.startswith("agent_"))
        if not agents:
            raise TraceError(str(path / "agents"), "directory", "no agent_<id> directory")
        return [_agent(str(path), a, session_id if len(agents) == 1 else f"{session_id}/{_agent_id(a)}")
                for a in agents]
    session_dir = path.parent.parent
    session_id = _session_id(session_dir) if session_dir.name.startswith("session_") else _agent_id(path)
    return [_agent(str(path), path, session_id)]


def _session_id(session_dir: Path) -> str:
    meta = session_dir / "session.json"
    if os.path.lexists(meta):  # anything else by that name (a pipe, a folder) is read and refused
        doc = read_json(meta)
        if isinstance(doc, dict) and isinstance(doc.get("session_id"), str) and doc["session_id"]:
            return str(doc["session_id"])
    return session_dir.name.removeprefix("session_")


def _agent_id(agent_dir: Path) -> str:
    return agent_dir.name.removeprefix("agent_")


def _agent(source: str, agent_dir: Path, session_id: str) -> ImportedSession:
    messages_dir = agent_dir / "messages"
    if not messages_dir.is_dir():
        raise TraceError(str(agent_dir), "directory", "no messages/ directory")
    numbered = sorted((int(m.group(1)), p) for p in messages_dir.iterdir()
                      if (m := _MESSAGE_FILE.match(p.name)) is not None)
    builder = TranscriptBuilder(str(messages_dir), "directory")
    for expected, (number, file) in enumerate(numbered):
        if number != expected:
            raise TraceError(str(file), "$.message_id", f"message_{expected}.json is missing (the numbers must "
                             f"run 0, 1, 2, ... without a gap; this file is number {number})")
        _message_file(builder, file, number)
    system, model = _agent_state(agent_dir)
    notes = () if system else (f"{agent_dir}: strands persists no system prompt (none in the agent's state, "
                               "agent.json 'state.system_prompt'): the replayed prompts lack it",)
    return ImportedSession(source=source, session_id=session_id, format=NAME, system=system,
                           messages=builder.build(), model=model, notes=(*builder.notes, *notes))


def _agent_state(agent_dir: Path) -> tuple[str, str | None]:
    """The system prompt and the model an application kept in the agent's persisted state, if any."""
    meta = agent_dir / "agent.json"
    if not os.path.lexists(meta):
        return "", None
    doc = read_json(meta)
    reader = JsonReader(str(meta))
    state = reader.obj(doc, "$", "an agent object").get("state")
    if not isinstance(state, dict):
        return "", None
    system = reader.opt_str(state, "system_prompt", "$.state") or ""
    model = reader.opt_str(state, "model", "$.state") or reader.opt_str(state, "model_id", "$.state")
    return system, model


def _message_file(builder: TranscriptBuilder, file: Path, number: int) -> None:
    reader = JsonReader(str(file))
    doc = reader.obj(read_json(file), "$", "a strands SessionMessage object")
    message_id = reader.required(doc, "message_id", "$")
    if type(message_id) is not int or message_id != number:
        raise reader.error("$.message_id", f"{reader_value(message_id)} does not match the file name ({file.name})")
    key = "redact_message" if doc.get("redact_message") is not None else "message"
    where = child("$", key)
    message = reader.obj(reader.required(doc, key, "$"), where, "a Converse message object")
    role = reader.req_str(message, "role", where)
    if role not in ("user", "assistant"):
        raise reader.error(child(where, "role"), f"unknown role {role!r} (expected user or assistant)")
    typed_role: Role = "user" if role == "user" else "assistant"
    content_where = child(where, "content")
    for i, block in enumerate(reader.arr(reader.required(message, "content", where), content_where)):
        _block(reader, builder, typed_role, block, child(content_where, i))


def reader_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, int | float | str | bool) or value is None else "an object"


def _block(reader: JsonReader, builder: TranscriptBuilder, role: Role, value: Any, where: str) -> None:
    block = reader.obj(value, where, "a content block object")
    source = reader.source
    if "text" in block:
        builder.text(role, reader.string(block["text"], child(where, "text")), source, where)
    elif "toolUse" in block:
        use_where = child(where, "toolUse")
        if role != "assistant":
            raise reader.error(use_where, "a toolUse block in a user message (tool calls are the assistant's)")
        use = reader.obj(block["toolUse"], use_where)
        tool_input = reader.obj(reader.required(use, "input", use_where), child(use_where, "input"))
        builder.tool_use(reader.req_str(use, "toolUseId", use_where), reader.req_str(use, "name", use_where),
                         tool_input, source, use_where)
    elif "toolResult" in block:
        result_where = child(where, "toolResult")
        if role != "user":
            raise reader.error(result_where, "a toolResult block in an assistant message (results are the user's)")
        result = reader.obj(block["toolResult"], result_where)
        status = result.get("status", "success")
        if status not in ("success", "error"):
            raise reader.error(child(result_where, "status"), f"unknown status {reader_value(status)} "
                               "(expected success or error)")
        text = _result_content(reader, result.get("content", []), child(result_where, "content"))
        builder.tool_result(reader.req_str(result, "toolUseId", result_where), "error" if status == "error"
                            else "success", text, source, result_where)
    elif "guardContent" in block:
        guarded = reader.obj(block["guardContent"], child(where, "guardContent"))
        inner = reader.obj(guarded.get("text", {}), child(child(where, "guardContent"), "text"))
        builder.text(role, reader.opt_str(inner, "text", child(where, "guardContent")) or "", source, where)
    elif "citationsContent" in block:
        cited = reader.obj(block["citationsContent"], child(where, "citationsContent"))
        parts = cited.get("content") or []
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        builder.text(role, "\n".join(texts), source, where)
    else:
        kinds = [k for k in block if k in _PLACEHOLDERS]
        if kinds:
            builder.text(role, _PLACEHOLDERS[kinds[0]], source, where)
        elif not any(k in _SKIPPED for k in block):
            raise reader.error(where, f"unknown content block (keys {sorted(block)[:5]})")


def _result_content(reader: JsonReader, value: Any, where: str) -> str:
    texts = []
    for i, item_value in enumerate(reader.arr(value, where)):
        item_where = child(where, i)
        item = reader.obj(item_value, item_where, "a tool result content object")
        if "text" in item:
            texts.append(reader.string(item["text"], child(item_where, "text")))
        elif "json" in item:
            texts.append(structured_text(item["json"]))
        elif any(k in _PLACEHOLDERS for k in item):
            texts.append(next(_PLACEHOLDERS[k] for k in item if k in _PLACEHOLDERS))
        else:
            raise reader.error(item_where, f"unknown tool result content (keys {sorted(item)[:5]})")
    return "\n".join(texts)


def dump(session: ImportedSession) -> dict[str, str]:
    """The session as a strands session directory: ``{relative path: JSON text}`` under
    ``session_<id>/`` (an id's path separators become ``_``). The system prompt and model go into the agent's
    state (``system_prompt``, ``model``), where the reader finds them: strands stores neither itself."""
    session_id = re.sub(r"[/\\]", "_", session.session_id) or "session"
    root = f"session_{session_id}"
    agent = f"{root}/agents/agent_default"
    files = {
        f"{root}/session.json": _json({"session_id": session_id, "session_type": "AGENT",
                                       "created_at": _WRITTEN_AT, "updated_at": _WRITTEN_AT}),
        f"{agent}/agent.json": _json({"agent_id": "default", "state": _state(session), "conversation_manager_state": {},
                                      "created_at": _WRITTEN_AT, "updated_at": _WRITTEN_AT}),
    }
    for n, message in enumerate(session.messages):
        # Converse content blocks, without the metadata ctxbench's own writer adds (kind, pins).
        content = to_converse(message)["content"]
        files[f"{agent}/messages/message_{n}.json"] = _json({
            "message": {"role": message.role, "content": content}, "message_id": n, "redact_message": None,
            "created_at": _WRITTEN_AT, "updated_at": _WRITTEN_AT})
    return files


def _state(session: ImportedSession) -> dict[str, str]:
    state = {"system_prompt": session.system} if session.system else {}
    return state | ({"model": session.model} if session.model else {})


def _json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def sniff(path: Path) -> Claim | None:
    """Whether ``path`` is a strands session or agent directory (`is_session_dir`). Rank 1: a folder that
    also holds OpenHands' ``events/`` is read as OpenHands."""
    return Claim.document(1) if is_session_dir(path) else None


FORMAT = TraceFormat(name=NAME, kind=DIRECTORY, description="strands-agents session directories", sniff=sniff,
                     load=load, dump=dump, looks_for="agents/ (strands session) or messages/ (strands agent)")
