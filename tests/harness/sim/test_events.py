"""The per-turn event log (harness.sim.events): what each call saw by kind adds up to the call's context,
a compaction row appears exactly when a strategy changed the window, each lost fact once with its cause,
the log changes nothing else of a replay; and in a run directory: events.parquet sorted and checksummed
in the manifest, byte-identical whatever the executor, jobs or shard split, absent with events = false.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pyarrow.parquet as pq
import pytest

import scenarios
import strategies
from harness.core.context import Context
from harness.core.messages import Message
from harness.core.rundir import CALLS_TABLE, EVENTS_TABLE, MANIFEST_FILE, SESSIONS_TABLE
from harness.core.switches import Switches
from harness.run.config import RunConfig
from harness.run.merge import merge
from harness.run.parts import read_part
from harness.run.plan import EVENT_SCHEMA
from harness.run.runner import run
from harness.sim.events import COMPOSITION, DEFAULTS, EVENT_COLUMNS, EVENT_KEY, EventRecord
from harness.sim.kernel import Replay, SessionResult, replay
from harness.sim.profiles import profile
from strategies.observation_masking import ObservationMasking
from strategies.offload_contracts import OffloadContracts
from strategies.sliding_window import SlidingWindow
from tests.harness.scripts import alert_chain_script, crashloop_script

ORACLE = profile("oracle")
KINDS = sorted(set(COMPOSITION.values()))
KEY = ["scenario", "session_index", "strategy"]


def records(result: SessionResult) -> list[EventRecord]:
    return [EventRecord(*row) for row in result.event_rows]


def by_event(result: SessionResult, event: str) -> list[EventRecord]:
    return [r for r in records(result) if r.event == event]


def context_of(row: EventRecord) -> int:
    return sum(getattr(row, k) for k in KINDS)


# One replay ---------------------------------------------------------------------------------------------


def test_an_unbounded_session_saw_at_each_call_the_prefix_of_its_final_context_by_kind() -> None:
    """Unbounded keeps every message, so the context of call k is the first ``messages`` messages of the
    final context: summed by kind by hand, they are the row's columns, and they add up to the call's
    context_tokens (and, with the system prompt, its input_tokens)."""
    script = crashloop_script(filler_lines=40)
    unbounded = strategies.create("unbounded")
    replayer = Replay(script, unbounded, ORACLE, Switches(), events=True)
    result = replayer.run()
    final = list(replayer.contexts["agent"].messages)
    calls = by_event(result, "call")
    assert [c.call_index for c in calls] == [c.call_index for c in result.calls if c.call_kind == "agent"]
    assert calls[0].messages == 1 and calls[0].task_tokens == final[0].tokens  # the task alone
    for row in calls:
        seen: dict[str, int] = {}
        for m in final[:row.messages]:
            seen[COMPOSITION[m.kind]] = seen.get(COMPOSITION[m.kind], 0) + m.tokens
        assert {k: getattr(row, k) for k in KINDS if getattr(row, k)} == seen
        call = result.calls[row.call_index]
        assert context_of(row) == call.context_tokens
        assert row.system_tokens + context_of(row) == call.input_tokens == script.system_prompt_tokens + \
            call.context_tokens
    assert [r for r in records(result) if r.event != "call"] == []  # no compaction, nothing lost
    assert result.record.outcome == "success"


def test_a_call_row_carries_the_tool_result_it_led_to() -> None:
    result = replay(crashloop_script(fault="http_404", fails=1), "unbounded", ORACLE, events=True)
    rows = by_event(result, "call")
    tools = [(r.tool, r.status, r.error_class) for r in rows if r.status]
    assert tools[0] == ("kubectl_get", "success", "")
    assert ("kubectl_logs", "error", "plain") in tools  # the 404 once, plain errors
    assert ("kubectl_logs", "success", "") in tools
    for r in rows:
        assert (r.output_chars > 0) == (r.status != "")
        assert (r.output_tokens > 0) == (r.status != "")
    assert rows[-1].status == ""  # the final answer called no tool
    assert [r.seq for r in records(result)] == list(range(len(result.event_rows)))


class _Spy:
    """Records, per hook call of every instance of a strategy class, whether it changed the window (its
    length, its tokens), through the strategy's own hooks: an oracle apart from the kernel's watch."""

    changes: ClassVar[list[tuple[str, int, int, int, int]]] = []

    @classmethod
    def watch(cls, hook: str, ctx: Context, run: Any) -> Any:
        before = (len(ctx.messages), ctx.tokens)
        out = run()
        if (len(ctx.messages), ctx.tokens) != before:
            cls.changes.append((hook, *before, len(ctx.messages), ctx.tokens))
        return out


class SpySlidingWindow(SlidingWindow):
    def apply(self, ctx: Context) -> None:
        _Spy.watch("apply", ctx, lambda: super(SpySlidingWindow, self).apply(ctx))

    def before_call(self, ctx: Context) -> None:
        _Spy.watch("before_call", ctx, lambda: super(SpySlidingWindow, self).before_call(ctx))

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        # Called from apply too: only the runtime's own reduce on overflow counts as the hook "reduce".
        super().reduce(ctx, overflow)


class SpyMasking(ObservationMasking):
    def apply(self, ctx: Context) -> None:
        _Spy.watch("apply", ctx, lambda: super(SpyMasking, self).apply(ctx))


class SpyOffload(OffloadContracts):
    def on_append(self, ctx: Context, msg: Message) -> Message:
        out = super().on_append(ctx, msg)
        if out is not msg:
            _Spy.changes.append(("on_append", 0, msg.tokens, 0, out.tokens))
        return out


@pytest.mark.parametrize(("strategy", "how"), [
    (SpySlidingWindow(SlidingWindow.Params(window_size=6)), "dropped"),
    (SpyMasking(ObservationMasking.Params(keep_turns=1)), "masked"),
    (SpyOffload(OffloadContracts.Params(offload_threshold_bytes=256)), "offloaded"),
])
def test_a_compaction_row_appears_exactly_when_the_strategy_changed_the_window(strategy: Any, how: str) -> None:
    _Spy.changes.clear()
    script = crashloop_script(filler_lines=30)
    result = replay(script, strategy, ORACLE, events=True)
    rows = by_event(result, "compaction")
    assert rows, "the strategy never compacted: the test proves nothing"
    assert [r.hook for r in rows] == [c[0] for c in _Spy.changes]
    for row, (hook, n_before, t_before, n_after, t_after) in zip(rows, _Spy.changes, strict=True):
        assert row.how == how
        assert (row.tokens_before - row.tokens_after) == t_before - t_after > 0
        if hook != "on_append":
            assert (row.messages_before, row.messages_after) == (n_before, n_after)
    if how == "dropped":  # removed_count (R5) says how many messages left; the rows say the same
        assert all(r.messages_after < r.messages_before for r in rows)
    else:
        assert all(r.messages_after == r.messages_before for r in rows)


def test_unbounded_and_summarize_below_their_trigger_never_compact() -> None:
    script = crashloop_script(filler_lines=30)
    for name in ("unbounded", "summarize"):
        result = replay(script, name, ORACLE, events=True)
        assert by_event(result, "compaction") == [], name


def test_each_lost_fact_is_one_row_with_the_compaction_that_removed_it() -> None:
    """facts_lost counts distinct facts; the log has one row for each, at the turn it was first missed,
    and a fact lost to a compaction points at the row whose facts_dropped names it, earlier."""
    found = 0
    for seed in range(6):
        script = scenarios.generate("mix", seed, turns=30)
        result = replay(script, strategies.create("sliding_window", window_size=8), "frontier", events=True)
        lost = by_event(result, "lost")
        assert len(lost) == result.record.facts_lost
        assert len({r.fact for r in lost}) == len(lost)
        rows = {r.seq: r for r in records(result)}
        for row in lost:
            assert row.cause in ("compaction", "output_cap", "handover", "unseen")
            if row.cause == "compaction":
                source = rows[row.dropped_seq]
                assert source.event == "compaction" and source.seq < row.seq and source.agent == row.agent
                assert row.fact in source.facts_dropped.split(",")
                found += 1
            else:
                assert row.dropped_seq == -1
    assert found, "no fact lost to a compaction in these sessions: the test proves nothing"


def test_a_multi_agent_session_logs_each_agents_calls_and_the_handover() -> None:
    result = replay(alert_chain_script(), "unbounded", ORACLE, events=True)
    calls = by_event(result, "call")
    assert {c.agent for c in calls} == {"triage", "remediation"}
    handoff = [c for c in result.calls if c.call_kind == "handoff"]
    assert [c.call_index for c in calls] == [c.call_index for c in result.calls if c.call_kind != "summary"]
    assert len(handoff) == 1
    assert [c.turn for c in calls] == list(range(1, len(calls) + 1))  # one call per turn, hand-over included


@pytest.mark.parametrize("name", ["unbounded", "sliding_window", "observation_masking", "offload_contracts",
                                  "summarize", "pipeline"])
def test_the_event_log_changes_nothing_else_of_a_replay(name: str) -> None:
    script = scenarios.generate("mix", 3, turns=30)
    kwargs: dict[str, Any] = {"stages": [{"name": "offload_contracts"}, {"name": "sliding_window"}]} \
        if name == "pipeline" else {}
    on = replay(script, strategies.create(name, **kwargs), "frontier", events=True)
    off = replay(script, strategies.create(name, **kwargs), "frontier")
    assert off.event_rows == []
    assert on.record == off.record and on.calls == off.calls and on.loop_events == off.loop_events
    assert on.event_rows


def test_a_row_is_the_values_of_every_column_in_order_ints_and_short_strings() -> None:
    result = replay(alert_chain_script(), strategies.create("sliding_window", window_size=4), ORACLE, events=True)
    for row in result.event_rows:
        assert len(row) == len(EVENT_COLUMNS)
        record = EventRecord(*row)
        for name, value in zip(EVENT_COLUMNS, row, strict=True):
            assert type(value) is type(DEFAULTS.get(name, value)), name
            assert not isinstance(value, str) or len(value) < 200, name
        # The columns of the other kinds of event hold their defaults.
        mine = {"call": {"call_index", "messages", "tool", "status", "output_chars", "output_tokens", "error_class",
                         "system_tokens", *KINDS},
                "compaction": {"call_index", "hook", "how", "messages_before", "messages_after", "tokens_before",
                               "tokens_after", "facts_dropped"},
                "lost": {"fact", "cause", "dropped_seq"}}[record.event]
        for name in set(DEFAULTS) - mine:
            assert getattr(record, name) == DEFAULTS[name], (record.event, name)
    assert tuple(EVENT_SCHEMA.names) == EVENT_COLUMNS
    assert EVENT_COLUMNS[:3] == EVENT_KEY[:3]  # the run directory reads a part's event key by position


# In a run directory -------------------------------------------------------------------------------------


SMALL: dict[str, Any] = {
    "sessions": 6, "seed": 4, "batch_size": 2, "executor": "serial",
    "scenarios": [{"name": "mix", "turns": 20}],
    "strategies": [{"name": "unbounded"}, {"name": "sliding_window", "label": "sw8", "window_size": 8},
                   {"name": "offload_contracts"}],
}


def table_bytes(run_dir: Path, names: tuple[str, ...] = (SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE)
                ) -> dict[str, bytes]:
    return {name: (run_dir / name).read_bytes() for name in names}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("events") / "run"
    run(RunConfig(**SMALL), out, quiet=True)
    return out


def test_the_event_log_is_a_third_table_listed_in_the_manifest(reference: Path) -> None:
    manifest = json.loads((reference / MANIFEST_FILE).read_text())
    data = (reference / EVENTS_TABLE).read_bytes()
    assert manifest["sha256"][EVENTS_TABLE] == hashlib.sha256(data).hexdigest()
    table = pq.read_table(reference / EVENTS_TABLE)
    assert manifest["rows"][EVENTS_TABLE] == table.num_rows > 0
    assert table.schema.names == list(EVENT_COLUMNS)
    events = table.to_pandas()
    order = list(EVENT_KEY)
    assert events[order].values.tolist() == events.sort_values(order)[order].values.tolist()
    sessions = pd.read_parquet(reference / SESSIONS_TABLE)
    assert set(map(tuple, events[KEY].drop_duplicates().values.tolist())) == set(
        map(tuple, sessions[KEY].values.tolist()))


def test_the_call_rows_of_the_table_add_up_to_calls_parquet(reference: Path) -> None:
    events = pd.read_parquet(reference / EVENTS_TABLE)
    calls = pd.read_parquet(reference / CALLS_TABLE)
    joined = events[events["event"] == "call"].merge(calls, on=[*KEY, "call_index"], how="left",
                                                     validate="one_to_one", indicator=True)
    assert (joined["_merge"] == "both").all()
    assert (joined[KINDS].sum(axis=1) == joined["context_tokens"]).all()
    assert (joined["system_tokens"] + joined[KINDS].sum(axis=1) == joined["input_tokens"]).all()
    assert set(joined["call_kind"]) <= {"agent", "handoff"}
    assert len(joined) == int((calls["call_kind"] != "summary").sum())
    sessions = pd.read_parquet(reference / SESSIONS_TABLE).set_index(KEY)
    lost = events[events["event"] == "lost"].groupby(KEY).size()
    assert (lost.reindex(sessions.index, fill_value=0) == sessions["facts_lost"]).all()
    compactions = events[events["event"] == "compaction"].groupby("strategy").size()
    assert "unbounded" not in compactions and compactions["sw8"] > 0 and compactions["offload_contracts"] > 0


def test_the_event_log_is_byte_identical_whatever_the_executor_jobs_or_shards(reference: Path,
                                                                             tmp_path: Path) -> None:
    run(RunConfig(**(SMALL | {"executor": "process", "jobs": 2})), tmp_path / "process", quiet=True)
    assert table_bytes(tmp_path / "process") == table_bytes(reference)
    run(RunConfig(**SMALL), tmp_path / "one", quiet=True, shard=(1, 2))
    run(RunConfig(**SMALL), tmp_path / "two", quiet=True, shard=(2, 2), keep_parts=True)
    merge(tmp_path / "merged", [tmp_path / "one", tmp_path / "two"])
    assert table_bytes(tmp_path / "merged") == table_bytes(reference)


def test_parts_hold_the_event_rows_positionally(tmp_path: Path) -> None:
    config = RunConfig(**SMALL)
    run(config, tmp_path / "kept", quiet=True, keep_parts=True)
    parts = sorted((tmp_path / "kept" / "parts").glob("*.jsonl"))
    header = json.loads(parts[0].read_bytes().split(b"\n", 1)[0])
    assert header["event_columns"] == list(EVENT_COLUMNS)
    rows = [r for p in parts for r in read_part(p, config_hash=config.config_hash()).event_rows]
    assert len(rows) == pq.read_table(tmp_path / "kept" / EVENTS_TABLE).num_rows
    assert all(len(r) == len(EVENT_COLUMNS) for r in rows)


def test_events_false_writes_no_event_log_and_the_same_other_tables(reference: Path, tmp_path: Path) -> None:
    config = RunConfig(**(SMALL | {"events": False}))
    assert config.config_hash() != RunConfig(**SMALL).config_hash()
    out = tmp_path / "off"
    run(config, out, quiet=True, keep_parts=True)
    assert not (out / EVENTS_TABLE).exists()
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    assert EVENTS_TABLE not in manifest["sha256"] and EVENTS_TABLE not in manifest["rows"]
    assert "events = false" in (out / "config.toml").read_text()
    parts = sorted((out / "parts").glob("*.jsonl"))
    assert all(read_part(p, config_hash=config.config_hash()).event_rows == [] for p in parts)
    names = (SESSIONS_TABLE, CALLS_TABLE)
    assert table_bytes(out, names) == table_bytes(reference, names)
    again = run(config, out, quiet=True)  # finished: nothing to do, no event log asked for
    assert again.batches_run == 0


def test_a_resume_rebuilds_a_lost_event_log_from_the_parts(reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    run(RunConfig(**SMALL), out, quiet=True, keep_parts=True)
    (out / EVENTS_TABLE).unlink()
    notes: list[str] = []
    summary = run(RunConfig(**SMALL), out, quiet=True, notify=notes.append)
    assert summary.batches_run == 0 and notes
    assert table_bytes(out) == table_bytes(reference)
