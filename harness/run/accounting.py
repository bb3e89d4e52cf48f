"""Accounting runs: recorded sessions (`harness.run.traces`) replayed under every strategy of a config by
`harness.sim.recorded.account`, written as an ordinary run directory the reports read.

An accounting run is a run like a simulated one (`harness.run.runner.execute`): its `RunPlan` cuts the
recorded sessions into batches, a worker (`account_batch`) replays each batch under every strategy, each
finished batch is a part of the resume log, and the tables come from the parts through the same run
directory. So it resumes after a kill, runs on ``--jobs`` workers or a Dask cluster, and its tables are
byte for byte the same whatever the jobs. Its config hash covers the strategies, the profile and the
recorded sessions' content: the same traces and config resume one directory; anything else is refused
there as another config.

The directory holds ``sessions.parquet`` (one row per recorded session and strategy: the exact token,
cost, cache, compaction and hidden-output columns; none of the behavioural ones), ``calls.parquet``
(one row per call), ``hidden.parquet`` (one row per recorded tool output a strategy hid, with its
size and the first call sent without it), ``config.toml`` (the strategies and the model profile) and
``manifest.json`` with ``mode = "accounting"`` and the traces read.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import strategies
from harness.core import tables
from harness.core.messages import TextMeter, to_converse
from harness.core.model_tokens import shared_meter_reduction
from harness.core.rundir import ACCOUNTING_MODE, CALLS_TABLE, HIDDEN_TABLE, SESSIONS_TABLE, Manifest
from harness.run.config import DEFAULT_PIPELINE, RunConfig, content_hash
from harness.run.parts import BatchResult
from harness.run.plan import Batch, PlannedSession, RunPlan
from harness.run.table_writer import TableSpec
from harness.run.traces import ImportedSession
from harness.sim.needed import needed_values
from harness.sim.profiles import Profile
from harness.sim.recorded import CALL_FIELDS, SESSION_FIELDS, account
from strategies import create

__all__ = [
    "ACCOUNTING_PARAMS",
    "AccountingSummary",
    "AccountingTask",
    "account_batch",
    "account_traces",
    "accounting_entries",
    "accounting_plan",
]

#: The scenario name of every recorded session's rows.
TRACE_SCENARIO = "trace"


#: Params for the managers whose sources leave a setting to the user, as examples/sdk.toml sets them: a
#: LangChain summarization trigger at 80% of the window, ADK's token trigger at 80% of the frontier window.
ACCOUNTING_PARAMS: dict[str, dict[str, Any]] = {
    "pipeline": DEFAULT_PIPELINE,
    "langchain_summarization": {"trigger": ["fraction", 0.8]},
    "adk_compaction": {"token_threshold": 160_000, "event_retention_size": 5},
}


def accounting_entries() -> list[dict[str, Any]]:
    """The strategy entries ``ctxbench replay`` uses when given no config: every registered strategy (the
    research set and the SDK managers) with its defaults, or `ACCOUNTING_PARAMS`; one that cannot be made
    here (a bridge whose optional dependency is not installed) is left out."""
    entries = []
    for name in strategies.names():
        entry = {"name": name, **ACCOUNTING_PARAMS.get(name, {})}
        try:
            create(name, **{k: v for k, v in entry.items() if k != "name"})
        except Exception:
            continue
        entries.append(entry)
    return entries


@dataclass(frozen=True, slots=True)
class AccountingSummary:
    """What an accounting run wrote: its directory, row counts and wall time."""

    out: Path
    sessions: int
    strategies: list[str]
    rows: dict[str, int]
    wall_s: float


#: The calls table's columns (the session row's key, what `CallRecord` has that is exact here, then the
#: hidden outputs per call), so that a run whose recorded sessions hold no model call (a trace of the task
#: alone) still has them all: each such session is a sessions row with no calls, as the tables can say.
CALLS_SCHEMA = tables.arrow_schema(tables.select(tables.CALL_COLUMNS, (
    *tables.SESSION_ROW_KEY, *CALL_FIELDS, *tables.names(tables.CALL_COLUMNS, ("accounting",)))))
#: The sessions table's columns: the accounting replay's row, then which recorded session it is.
ACCOUNTING_SESSION_COLUMNS = (*SESSION_FIELDS, "trace", "session_id", "format", "model", "trace_model", "tokenizer",
                              "recorded_input_tokens",
                              "recorded_usage_calls", "reading_notes")
#: The hidden-outputs table's columns, so that a run in which nothing was hidden still has them all.
HIDDEN_SCHEMA = tables.arrow_schema(tables.HIDDEN_COLUMNS)



@dataclass(frozen=True, slots=True)
class AccountingTask:
    """What a worker needs for one batch of recorded sessions (plain, picklable data)."""

    batch_id: str
    #: The index of the batch's first session in the run.
    first_index: int
    #: The batch's sessions, pickled with their meter by reference (`_pickled_sessions`).
    sessions: bytes
    #: Per variant: (strategy name, label, params, model name, profile fields).
    variants: tuple[tuple[str, str, dict[str, Any], str, dict[str, Any]], ...]


class _SessionPickler(pickle.Pickler):
    """Pickles recorded sessions with the process-wide default meter as a reference to the receiving
    process's own (its tokenizer holds a lock and is built once per process)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, TextMeter):
            reduction = shared_meter_reduction(obj)
            if reduction is None:
                raise pickle.PicklingError("a recorded session measured with a meter that is not a process-wide one")
            return reduction
        return NotImplemented


def _pickled_sessions(sessions: Sequence[ImportedSession]) -> bytes:
    buffer = io.BytesIO()
    _SessionPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(list(sessions))
    return buffer.getvalue()


def account_batch(task: AccountingTask) -> BatchResult:
    """The worker of an accounting run: every recorded session of a batch under every variant, as rows."""
    sessions: list[ImportedSession] = pickle.loads(task.sessions)
    session_rows: list[dict[str, Any]] = []
    call_rows: list[dict[str, Any]] = []
    hidden_rows: list[dict[str, Any]] = []
    profiles: dict[str, Profile] = {}
    for offset, session in enumerate(sessions):
        index = task.first_index + offset
        tokenizer = session.messages[0].meter.tokenizer if session.messages else None
        system_tokens = sum(tokenizer.count(text) for text in prompt_prefix(session)) if tokenizer is not None else 0
        needed = needed_values(session.messages, session.system)
        recorded = recorded_per_call(session)
        trace = {"trace": session.source, "session_id": session.session_id, "format": session.format,
                 "trace_model": session.model or "", "tokenizer": tokenizer.name if tokenizer is not None else "",
                 **recorded_totals(session), "reading_notes": "\n".join(session.notes)}
        for name, label, params, model, fields in task.variants:
            if label not in profiles:
                profiles[label] = Profile(**fields)
            done = account(session.messages, create(name, **params), profiles[label], system_tokens=system_tokens,
                           scenario=TRACE_SCENARIO, session_index=index, label=label, system=session.system,
                           needed=needed)
            session_rows.append({**done.row, **trace, "model": model})
            for row in done.calls:
                row["recorded_input_tokens"] = recorded.get(row["call_index"]) if row["call_kind"] == "agent" else None
            call_rows += done.calls
            hidden_rows += [{"scenario": TRACE_SCENARIO, "session_index": index, "strategy": label, **asdict(h)}
                            for h in done.hidden]
    return BatchResult(task.batch_id, session_rows, call_rows, hidden_rows=hidden_rows)


def prompt_prefix(session: ImportedSession) -> list[str]:
    """What every call of a recorded session sends before its messages, as providers bill it: the system
    prompt and each declared tool's schema."""
    return [text for text in (session.system, *session.tool_schemas) if text]


def recorded_per_call(session: ImportedSession) -> dict[int, int]:
    """The recorded input tokens of each agent call (0-based, agent calls only) whose usage the trace holds."""
    call_of = {position: k for k, position in enumerate(
        i for i, m in enumerate(session.messages) if i > 0 and m.role == "assistant")}
    return {call_of[u.call]: u.input_tokens for u in session.usage
            if u.call is not None and u.call in call_of and u.input_tokens is not None}


def recorded_totals(session: ImportedSession) -> dict[str, int | None]:
    """The session's recorded input tokens (its total, else the sum over the calls that record them) and how
    many calls they cover; None and 0 when the trace records none."""
    totals = [u for u in session.usage if u.call is None and u.input_tokens is not None]
    if totals:
        return {"recorded_input_tokens": sum(u.input_tokens or 0 for u in totals),
                "recorded_usage_calls": sum(u.calls for u in totals)}
    per_call = [u for u in session.usage if u.call is not None and u.input_tokens is not None]
    if not per_call:
        return {"recorded_input_tokens": None, "recorded_usage_calls": 0}
    return {"recorded_input_tokens": sum(u.input_tokens or 0 for u in per_call), "recorded_usage_calls": len(per_call)}


def _content(session: ImportedSession) -> dict[str, Any]:
    """What of a recorded session its accounting depends on, as plain data (for the config hash)."""
    return {"source": session.source, "session_id": session.session_id, "format": session.format,
            "system": session.system, "model": session.model, "tools": list(session.tools),
            "tool_schemas": list(session.tool_schemas), "notes": list(session.notes),
            "tokenizer": session.messages[0].meter.tokenizer.name if session.messages else None,
            "usage": [asdict(u) for u in session.usage],
            "messages": [to_converse(m) | {"kind": m.kind} for m in session.messages]}


def _config_hash(head: dict[str, Any], sessions: Sequence[ImportedSession]) -> str:
    """``content_hash({**head, "sessions": [_content(s) for s in sessions]})`` without holding that list or its
    JSON text (several GB for 10,000 sessions of 60 calls): the same canonical JSON (sorted keys, no spaces,
    as `content_hash` writes it) fed to sha256 one session at a time, so the same hash."""
    encode = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
    marker = f"sessions-{uuid.uuid4().hex}"
    around = encode({**head, "sessions": marker}).split(encode(marker))
    if "sessions" in head or len(around) != 2:  # cannot be told apart from the head's own text: the plain way
        return content_hash({**head, "sessions": [_content(s) for s in sessions]})
    digest = hashlib.sha256(around[0].encode())
    digest.update(b"[")
    for i, session in enumerate(sessions):
        if i:
            digest.update(b",")
        digest.update(encode(_content(session)).encode())
    digest.update(b"]")
    digest.update(around[1].encode())
    return digest.hexdigest()


def accounting_plan(sessions: Sequence[ImportedSession], config: RunConfig) -> RunPlan:
    """The plan of an accounting run: ``sessions`` (recorded, in order) under every variant of ``config``
    (its profile gives the window, prices and cache rules)."""
    variants = config.variants()
    size = config.sessions_per_batch()
    batches = tuple(Batch(f"00-{start:07d}", tuple(PlannedSession(0, i) for i in range(start, min(start + size,
                                                                                                  len(sessions)))))
                    for start in range(0, len(sessions), size))
    stamp = {"model": config.model if isinstance(config.model, str) else dict(config.model),
             "strategies": [e.model_dump(exclude_none=True) for e in config.strategy_entries()]}
    variant_data = tuple((v.entry.name, v.label, dict(v.entry.params), v.model, v.profile.model_dump(mode="json"))
                         for v in variants)

    def task(batch: Batch) -> AccountingTask:
        first = batch.sessions[0].session_index
        return AccountingTask(batch.id, first, _pickled_sessions(sessions[first:batch.sessions[-1].session_index + 1]),
                              variant_data)

    return RunPlan(
        config=config, config_hash=_config_hash({"mode": ACCOUNTING_MODE, **stamp, "batch_size": size}, sessions),
        batches=batches, shard=None, scenario_names=(TRACE_SCENARIO,), labels=tuple(v.label for v in variants),
        tables=(TableSpec(SESSIONS_TABLE, "sessions", "pylist", columns=ACCOUNTING_SESSION_COLUMNS,
                          compression="snappy"),
                TableSpec(CALLS_TABLE, "calls", "pylist", schema=CALLS_SCHEMA, compression="snappy"),
                TableSpec(HIDDEN_TABLE, "hidden", "pylist", schema=HIDDEN_SCHEMA, compression="snappy")),
        stamp=stamp,
        manifest={"root_seed": None, "strategies": stamp["strategies"],
                  "variants": [{"label": v.label, "name": v.entry.name, "params": dict(v.entry.params),
                                "control": _is_control(v.entry.name)} for v in variants],
                  "scenarios": [{"name": TRACE_SCENARIO, "traces": sorted({s.source for s in sessions})}],
                  "model": variants[0].profile.model_dump() if variants else {}, "mode": ACCOUNTING_MODE},
        work=account_batch, task=task)


def _is_control(name: str) -> bool:
    """Whether a strategy is a control (its source says so: ``drop_all``), shown as such, never recommended."""
    return str(getattr(strategies.get(name), "source", "")).startswith("control")


def account_traces(sessions: Sequence[ImportedSession], config: RunConfig, out: Path, *, quiet: bool = False,
                  resume: bool = True, notify: Callable[[str], None] | None = None) -> AccountingSummary:
    """Account every recorded session under every strategy variant of ``config`` into the run directory
    ``out`` (new, or one an earlier replay of the same traces and config left: it resumes), on the
    config's executor and jobs. RunError, changing nothing, for what a run refuses."""
    from harness.run.runner import execute

    started = time.monotonic()
    plan = accounting_plan(sessions, config)
    execute(plan, out, resume=resume, quiet=quiet, notify=notify)
    rows = Manifest.read(out).rows
    return AccountingSummary(out=out, sessions=len(sessions), strategies=list(plan.labels), rows=rows,
                             wall_s=time.monotonic() - started)
