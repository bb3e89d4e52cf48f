"""The report's memory section: present only for a run with series; a row per (position, memory)."""

from __future__ import annotations

import pandas as pd

from reports.blocks import blocks_html, blocks_markdown
from reports.memory import MECHANISM, memory_blocks, memory_table, saved_table


def _sessions() -> pd.DataFrame:
    rows = [{"series": s, "series_position": p, "memory": m, "memory_chars": 60 * m * (p > 0),
             "memory_facts_used": int(m and p > 0), "stale_memory_used": bool(m and p > 0 and s == 0),
             "steps_skipped": int(m and p > 0), "turns": 50 - 5 * int(m and p > 0) + s, "input_tokens": 1000 + s,
             "outcome": "success"}
            for s in range(3) for p in range(2) for m in (False, True)]
    frame = pd.DataFrame(rows)
    # Each (series, position) is one session; both memory settings replayed it.
    return frame.assign(scenario="mix", session_index=frame["series"] * 2 + frame["series_position"])


def test_the_table_has_a_row_per_position_and_memory_setting() -> None:
    table = memory_table(_sessions())
    assert [(r[0].text, r[1].text) for r in table.rows] == [("0", "off"), ("0", "on"), ("1", "off"), ("1", "on")]
    assert table.rows[3][3].text == "46.0" and table.rows[2][3].text == "51.0"
    assert table.rows[3][6].text == "33.3%"


def test_the_section_explains_the_mechanism_and_is_absent_without_series() -> None:
    assert MECHANISM in blocks_markdown(memory_blocks(_sessions()))
    assert "1 (33.3%) used a stale value" in blocks_html(memory_blocks(_sessions()))
    plain = _sessions().drop(columns=["series", "series_position"])
    assert memory_blocks(plain) == []


def test_what_memory_saves_is_paired_over_the_same_sessions() -> None:
    table = saved_table(_sessions(), resamples=200)
    assert [r[0].text for r in table.rows] == ["0", "1"]
    assert [r[1].text for r in table.rows] == ["3", "3"]
    # Position 0: nothing saved; position 1: 5 turns saved in every session, so the interval is a point.
    assert table.rows[0][3].text == "+0.0" and table.rows[0][3].css == ""
    assert table.rows[1][3].text == "+5.0" and table.rows[1][3].sub == "[+5.0, +5.0]"
    assert table.rows[1][2].text == "+0.0"


def test_the_memory_size_is_shown_against_the_simulators_budget() -> None:
    from harness.sim import memory
    from reports import memory as section

    assert section.MEMORY_BUDGET_CHARS == memory.MEMORY_BUDGET_CHARS
    table = memory_table(_sessions())
    assert table.header[-1] == "memory loaded, chars (budget 6,000)"
    assert table.rows[3][7].text == "60" and table.rows[0][7].text == "0"
