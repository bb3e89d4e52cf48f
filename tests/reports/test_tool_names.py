"""The report's tool-name normalisation table (reports.tool_names): shown only for a run with both
settings of ``normalize_tool_names``; a run directory without the columns reports as before."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from harness.run.config import RunConfig
from harness.run.runner import run
from reports.blocks import blocks_html, blocks_markdown
from reports.render import collect, render_html, render_markdown
from reports.tool_names import (
    ALL_STRATEGIES,
    TOOL_NAME_COLUMNS,
    normalization_summary,
    tool_names_blocks,
)
from tests.reports.runs import replace_table

HEADING = "Tool-name normalisation"


def sessions(switch: list[bool]) -> pd.DataFrame:
    n = len(switch)
    return pd.DataFrame({
        "strategy": ["a" if i % 2 else "b" for i in range(n)],
        "normalize_tool_names": switch,
        "name_variants": [2] * n,
        "syntax_errors_reaching_tool": [0 if on else 2 for on in switch],
        "tool_syntax_errors": [1 if on else 3 for on in switch],
        "turns": [40 if on else 44 for on in switch],
    })


def test_the_summary_pairs_each_strategy_with_and_without_the_switch_and_pools_them() -> None:
    summary = normalization_summary(sessions([False, False, True, True, False, True, True, False]))
    assert list(summary["strategy"]) == ["b", "b", "a", "a", ALL_STRATEGIES, ALL_STRATEGIES]
    assert list(summary["normalize_tool_names"]) == [False, True] * 3
    pooled = summary[summary["strategy"] == ALL_STRATEGIES].set_index("normalize_tool_names")
    assert list(pooled["syntax_errors_reaching_tool"]) == [2, 0]
    assert pooled.loc[False, "turns"] == 44 and pooled.loc[True, "turns"] == 40
    assert list(pooled["sessions"]) == [4, 4]


@pytest.mark.parametrize("frame", [sessions([False, False]), sessions([True, True]),
                                   sessions([False, True]).drop(columns="normalize_tool_names"), pd.DataFrame()])
def test_nothing_is_shown_without_both_settings_or_without_the_columns(frame: pd.DataFrame) -> None:
    assert normalization_summary(frame).empty
    assert tool_names_blocks(frame) == []


def test_both_formats_show_the_table() -> None:
    frame = sessions([False, True, True, False])
    html, markdown = blocks_html(tool_names_blocks(frame)), blocks_markdown(tool_names_blocks(frame))
    assert f"<h3>{HEADING}</h3>" in html and 'id="tool-names-table"' in html
    assert f"### {HEADING}" in markdown and "| syntax errors reaching a tool |" in markdown


def test_a_run_report_shows_it_with_both_settings_and_an_older_run_reports_without_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    config = {"sessions": 3, "seed": 1, "executor": "serial", "scenarios": [{"name": "mix", "turns": 20}],
              "strategies": [{"name": "unbounded"}, {"name": "unbounded", "label": "again"}]}
    run(RunConfig(**config), out, quiet=True)
    table = pd.read_parquet(out / "sessions.parquet")
    assert set(TOOL_NAME_COLUMNS) <= set(table.columns)
    replace_table(out, "sessions.parquet", table.assign(normalize_tool_names=table["strategy"] == "again"))
    data = collect(out)
    assert f"### {HEADING}" in render_markdown(data) and f"<h3>{HEADING}</h3>" in render_html(data)
    replace_table(out, "sessions.parquet", table.drop(columns=["normalize_tool_names", "name_variants"]))
    older = collect(out)
    assert HEADING not in render_markdown(older) and "Breakdowns" in render_markdown(older)
