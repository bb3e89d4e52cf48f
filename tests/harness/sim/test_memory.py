"""The memory store (OpenHands MEMORY.md semantics) and what memory does to a replay: the block's budget,
truncation marker and layer order; a remembered durable fact is used, its producing step skipped, and a
stale one is used as it stands; a saved replay with memory restores."""

from __future__ import annotations

import scenarios
import strategies
from harness.core.switches import Switches
from harness.sim.kernel import Replay, replay
from harness.sim.memory import MEMORY_BUDGET_CHARS, TRUNCATED_MARKER, MemoryStore
from harness.sim.profiles import profile
from scenarios.base import Series


def test_render_puts_the_user_layer_first_and_the_project_layer_last() -> None:
    loaded = MemoryStore(user="- editor: vim", project="- namespace: shop-abcd").render()
    lines = loaded.text.splitlines()
    assert lines == ["<MEMORY_CONTEXT>", "- editor: vim", "- namespace: shop-abcd", "</MEMORY_CONTEXT>"]
    assert not loaded.truncated
    assert loaded.facts == {"editor": "vim", "namespace": "shop-abcd"}


def test_render_drops_whole_lines_from_the_top_and_marks_the_cut() -> None:
    store = MemoryStore(user="\n".join(f"- user{i}: {'u' * 90}" for i in range(80)))
    for i in range(3):
        store = store.remember(f"key{i}", f"value-{i}")
    loaded = store.render()
    assert loaded.truncated
    assert loaded.chars <= MEMORY_BUDGET_CHARS
    lines = loaded.text.splitlines()
    assert lines[1] == TRUNCATED_MARKER
    assert lines[-4:-1] == ["- key0: value-0", "- key1: value-1", "- key2: value-2"]  # the project layer stays
    assert all(line in store.user.splitlines() or line in store.project.splitlines() for line in lines[2:-1])
    assert "user0" not in loaded.facts


def test_empty_memory_renders_nothing() -> None:
    loaded = MemoryStore().render()
    assert (loaded.text, loaded.truncated, loaded.facts) == ("", False, {})


def test_remember_updates_a_key_in_place() -> None:
    store = MemoryStore().remember("a", "1").remember("b", "2").remember("a", "3")
    assert store.project == "- a: 3\n- b: 2"


def _db_script(position: int, p_change: float = 0.0) -> scenarios.SessionScript:
    return scenarios.generate("db_slow_query", 11 + position, series=Series(series_seed=5, position=position,
                                                                              p_change=p_change), turns=20)


def _run(script: scenarios.SessionScript, memory: MemoryStore | None):  # type: ignore[no-untyped-def]
    return replay(script, strategies.create("observation_masking"), "frontier", memory=memory, p_write=1.0)


def test_remembered_durable_fact_skips_its_step_and_costs_its_tokens() -> None:
    first = _run(_db_script(0), MemoryStore())
    assert first.memory is not None and "- database: " in first.memory.project
    script = _db_script(1)
    without = _run(script, MemoryStore())
    with_memory = _run(script, first.memory)
    assert with_memory.memory_row["steps_skipped"] == 1
    assert with_memory.memory_row["memory_facts_used"] == 1
    assert with_memory.memory_row["memory_chars"] > 0
    assert not with_memory.memory_row["stale_memory_used"]
    assert with_memory.record.tool_calls < without.record.tool_calls


def test_stale_memory_is_used_as_it_stands() -> None:
    script = _db_script(1)
    truth = script.facts["database"].value
    stale = MemoryStore().remember("database", "accounts-pg-zzzz")
    assert truth != "accounts-pg-zzzz"
    result = _run(script, stale)
    assert result.memory_row["stale_memory_used"]
    assert any('"memory"' in c.trace for c in result.calls)  # the decision that used it says so
    fresh = _run(script, MemoryStore().remember("database", truth))
    # The tool refuses the stale database (an engineering error the fresh memory does not meet); the agent
    # fetches the value again, and its write at the end replaces the stale line.
    assert result.record.engineering_errors > fresh.record.engineering_errors
    assert result.memory is not None and f"- database: {truth}" in result.memory.project


def test_memory_off_replay_is_unchanged_by_the_memory_arguments() -> None:
    script = scenarios.generate("k8s_crashloop", 3, turns=20)
    plain = replay(script, "sliding_window", "frontier")
    again = replay(script, "sliding_window", "frontier", memory=None, p_write=1.0)
    assert plain.record == again.record
    assert [c.as_row() for c in plain.calls] == [c.as_row() for c in again.calls]
    assert plain.memory is None and plain.memory_row == {}


def test_a_replay_with_memory_restores_where_it_stopped() -> None:
    script = _db_script(1)
    memory = MemoryStore().remember("database", script.facts["database"].value)
    strategy = strategies.create("sliding_window")
    whole = Replay(script, strategy, profile("frontier"), Switches(), memory=memory,
                   p_write=1.0).run()
    stopped = Replay(script, strategy, profile("frontier"), Switches(), memory=memory,
                     p_write=1.0)
    assert stopped.run(stop_after_turns=5) is None
    resumed = Replay.restore(stopped.save()).run()
    assert resumed.record == whole.record
    assert resumed.memory == whole.memory and resumed.memory_row == whole.memory_row
