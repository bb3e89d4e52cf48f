"""One interval per metric per strategy: a real run's ``ctxbench run --json``, its console summary, its
report's headline table and ``ctxbench compare`` of it print the same value and interval for every
headline metric; the headline table's footnotes are told with the run's own counts; and a relative
change that is not zero never reads as 0%."""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tomli_w

from harness.cli import main as cli_main
from reports import stats
from reports.render import collect, headline_notes, headline_table, shown_metrics
from reports.stats import METRICS
from reports.summary import SUMMARY_METRICS, summary_records, summary_text
from reports.tables import (
    format_relative,
    headline_cell,
    interval_notes,
    interval_text,
    relative_phrase,
    too_few_note,
    wilson_note,
)
from tests.reports.runs import SMALL_RUN, edited_copy


def _cli(*args: str) -> tuple[int, str]:
    """``ctxbench ARGS`` in this process: its exit code and what it printed on stdout."""
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = cli_main(list(args))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A small real run made by ``ctxbench run --json``, then run again (resumed, nothing replayed) for
    the console summary, and compared with itself: what each printed."""
    root = tmp_path_factory.mktemp("intervals")
    config = root / "small.toml"
    config.write_text(tomli_w.dumps(SMALL_RUN))
    out = root / "run"
    code, as_json = _cli("run", str(config), "--out", str(out), "--json", "--quiet")
    assert code == 0
    code, console = _cli("run", str(config), "--out", str(out), "--no-report")
    assert code == 0
    code, compared = _cli("compare", str(out), str(out), "--json")
    assert code == 0
    return {"run_dir": out, "json": json.loads(as_json), "console": console, "compare": json.loads(compared)}


def _same(x: Any, y: Any) -> bool:
    """Equal to the bit, None (JSON's NaN) and NaN alike."""
    x = math.nan if x is None else float(x)
    y = math.nan if y is None else float(y)
    return (math.isnan(x) and math.isnan(y)) or x == y


def test_json_console_report_and_compare_print_the_same_interval_for_every_metric(printed: dict[str, Any]) -> None:
    data = collect(printed["run_dir"])
    head = data.headline.set_index(["strategy", "metric"])
    records = {r["strategy"]: r for r in printed["json"]["strategies"]}
    assert set(records) == set(data.strategies)
    table = headline_table(data)
    columns = [m.name for m in shown_metrics(data)]
    cells = {(row[0].text, name): cell for row in table.rows for name, cell in zip(columns, row[1:], strict=True)}
    console = printed["console"].splitlines()
    md = (printed["run_dir"] / "report.md").read_text()
    compared = {(r["strategy"], r["metric"]): r for r in printed["compare"]["rows"]}
    kinds = set()
    for strategy, record in records.items():
        line = next(line for line in console if line.split()[:1] == [strategy])
        for name in SUMMARY_METRICS:
            row = head.loc[(strategy, name)]
            kinds.add(row["interval"])
            # --json: the report's numbers, to the bit, and the interval's kind.
            assert _same(record[name], row["value"]), (strategy, name)
            assert record[f"{name}_interval"] == row["interval"]
            if row["interval"] in ("bootstrap", "wilson"):
                assert record[f"{name}_ci"] == [row["ci_low"], row["ci_high"]], (strategy, name)
            else:
                assert record[f"{name}_ci"] is None
            # The report's headline table and its Markdown: the cell the console prints too.
            cell = cells[(strategy, name)]
            assert cell == headline_cell(METRICS[name], row)
            printed_cell = f"{cell.text} {cell.sub}".strip()
            assert printed_cell in md
            assert printed_cell in line, (strategy, name, line)
            # ctxbench compare of the run with itself: each side's value and interval are the headline's.
            side = compared[(strategy, name)]
            assert _same(side["a"], row["value"]) and _same(side["b"], row["value"])
            assert _same(side["a_low"], row["ci_low"]) and _same(side["a_high"], row["ci_high"])
            assert side["a_interval"] == row["interval"]
    assert "bootstrap" in kinds and "wilson" in kinds  # the run exercises more than one kind


def test_the_headline_footnotes_name_the_runs_own_counts(printed: dict[str, Any]) -> None:
    data = collect(printed["run_dir"])
    md = (printed["run_dir"] / "report.md").read_text()
    page = (printed["run_dir"] / "report.html").read_text()
    notes = dict(headline_notes(data))
    assert "wilson-note" in notes
    order = [m.name for m in shown_metrics(data)]
    wilson = data.headline[data.headline["interval"] == "wilson"]
    rank = {s: i for i, s in enumerate(data.ranked)}
    first = min(wilson.itertuples(), key=lambda r: (rank[r.strategy], order.index(r.metric)))
    label = METRICS[first.metric].label
    assert f"{first.strategy}'s {label}: {first.events:,.0f} of {first.trials:,.0f} " in notes["wilson-note"]
    assert "0 of 40" not in notes["wilson-note"]
    assert notes["wilson-note"] in md
    assert 'id="wilson-note"' in page
    assert ("too-few-note" in notes) == (data.headline["interval"] == "too_few").any()


def test_one_success_prints_too_few_successes_everywhere(printed: dict[str, Any], tmp_path: Path) -> None:
    """sw20 solving 1 session of 12: its cost per solved session has a value and no interval in the
    console summary, --json, the report (with a footnote told with those counts) and compare."""

    def one_success(sessions: pd.DataFrame) -> pd.DataFrame:
        sw20 = sessions.index[sessions["strategy"] == "sw20"]
        sessions.loc[sw20, "outcome"] = "stuck"
        sessions.loc[sw20[:1], "outcome"] = "success"
        return sessions

    edited = edited_copy(printed["run_dir"], tmp_path / "one", one_success)
    words = "too few successes (1 in 12 sessions)"
    sessions = stats.load_sessions(edited)
    record = next(r for r in summary_records(sessions) if r["strategy"] == "sw20")
    assert (record["cost_per_solved_session_ci"], record["cost_per_solved_session_interval"]) == (None, "too_few")
    assert record["cost_per_solved_session_support"] == 1 and record["cost_per_solved_session"] > 0
    assert words in next(line for line in summary_text(sessions).splitlines() if line.startswith("sw20 "))
    assert _cli("report", str(edited))[0] == 0
    md = (edited / "report.md").read_text()
    assert words in md.split("## Headline metrics")[1].split("\n## ")[0]
    note = dict(headline_notes(collect(edited)))["too-few-note"]
    assert "sw20's: 1 in 12 sessions" in note and note in md
    code, out = _cli("compare", str(printed["run_dir"]), str(edited), "--metric", "cost_per_solved_session", "--json")
    row = next(r for r in json.loads(out)["rows"] if r["strategy"] == "sw20")
    assert code == 0
    assert (row["b_interval"], row["b_low"], row["interval"], row["ci_low"]) == ("too_few", None, "too_few", None)
    assert not row["excludes_zero"]
    code, text = _cli("compare", str(printed["run_dir"]), str(edited), "--metric", "cost_per_solved_session",
                      "--fail-on", "cost_per_solved_session:+5%")
    assert code == 0
    assert "sw20: not decided: too few successes (A " in text and ", B 1) for an interval of (B - A) / A" in text


def _headline(rows: list[dict[str, Any]]) -> pd.DataFrame:
    base = {"ci_low": 0.0, "ci_high": 0.0, "n": 100, "support": math.nan, "events": math.nan, "trials": math.nan}
    return pd.DataFrame([base | row for row in rows])


def test_footnotes_are_left_out_without_their_kind_and_told_with_the_first_row_shown() -> None:
    plain = _headline([{"strategy": "a", "metric": "loop_rate", "value": 0.5, "interval": "bootstrap"}])
    assert interval_notes(plain) == []
    head = _headline([
        {"strategy": "a", "metric": "loop_rate", "value": 0.0, "ci_high": 0.0370, "interval": "wilson",
         "events": 0, "trials": 100},
        {"strategy": "b", "metric": "success_rate", "value": 1.0, "ci_low": 0.963, "ci_high": 1.0,
         "interval": "wilson", "events": 100, "trials": 100},
        {"strategy": "b", "metric": "cost_per_solved_session", "value": 2.5, "ci_low": math.nan,
         "ci_high": math.nan, "interval": "too_few", "support": 3},
    ])
    notes = dict(interval_notes(head, ["b", "a"]))
    assert "b's success rate: 100 of 100 sessions" in notes["wilson"]
    assert "[100.00%, 100.00%]" in notes["wilson"] and "[96.30%, 100.00%]" in notes["wilson"]
    assert notes["wilson"] == wilson_note(head.iloc[1])
    assert "b's: 3 in 100 sessions" in notes["too_few"] and notes["too_few"] == too_few_note(head.iloc[2])
    assert "a's loop rate: 0 of 100 sessions" in dict(interval_notes(head, ["a", "b"]))["wilson"]


def test_every_interval_kind_is_written_as_it_is() -> None:
    cost = METRICS["cost_per_solved_session"]
    assert interval_text(cost, 1.0, 2.0) == "[$1.0000, $2.0000]"
    assert interval_text(METRICS["loop_rate"], 0.0, 0.037, "wilson") == "[0.00%, 3.70%] \u2020"
    assert interval_text(cost, math.nan, math.nan, "too_few", support=1, n=100) == \
        "too few successes (1 in 100 sessions)"
    assert interval_text(METRICS["thrash_rate"], math.nan, math.nan, "too_few", support=4, n=1000) == \
        "too few compactions (4 in 1,000 sessions)"
    assert interval_text(cost, math.nan, math.nan, "undefined") == ""


@pytest.mark.parametrize(("change", "signed", "words"), [
    (0.3, "+30.0%", "30% more"),
    (0.003, "+0.3%", "0.3% more"),
    (-0.0004, "-0.04%", "0.04% less"),
    (0.000004, "+0.0004%", "0.0004% more"),
    (0.0049, "+0.5%", "0.5% more"),
    (-0.12345, "-12.3%", "12% less"),
    (0.0, "0%", "the same"),
    (math.inf, "+inf%", "infinitely more"),
    (math.nan, "n/a", "n/a"),
])
def test_a_relative_change_that_is_not_zero_never_reads_as_zero(change: float, signed: str, words: str) -> None:
    assert format_relative(change) == signed
    assert relative_phrase(change) == words


def test_no_printed_relative_change_of_a_real_change_is_zero() -> None:
    for change in np.geomspace(1e-9, 0.2, 400):
        for sign in (1, -1):
            assert not format_relative(sign * change).lstrip("+-").startswith("0%")
            assert float(format_relative(sign * change).rstrip("%")) != 0
            assert float(relative_phrase(sign * change).split("%")[0]) != 0


def test_relative_phrase_names_the_directions() -> None:
    assert relative_phrase(-0.002, "more", "fewer") == "0.2% fewer"
    assert relative_phrase(0.5, "dearer", "cheaper", digits=1) == "50.0% dearer"


def test_the_summary_and_the_report_share_one_resample_count() -> None:
    import reports.summary

    assert not hasattr(reports.summary, "SUMMARY_RESAMPLES")
    assert stats.DEFAULT_RESAMPLES == 2000
