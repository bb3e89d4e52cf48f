"""The session explorer (reports.explorer) of a small real run: what it reads (every session, each one's
events and decisions packed losslessly), the checks it shares with the report (a damaged or missing
event log is one ReportInputError naming the file), a run without events, a self-contained page; and
the page itself driven in headless Chromium: no console error, filter, sort, step through a session's
turns, and the side-by-side view with its first divergence where the tables say it is."""

from __future__ import annotations

import base64
import html
import json
import math
import os
import random
import re
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.core.rundir import CALLS_TABLE, EVENTS_TABLE, MANIFEST_FILE, SESSIONS_TABLE
from harness.run.config import RunConfig
from harness.run.runner import run
from reports.explorer import (
    EVENT_COLUMNS,
    EVENTS_ABSENT,
    EVENTS_OFF,
    EXPLORER_HTML,
    NUMBER_FORMATS,
    TRACE_COLUMNS,
    TRACE_LEGEND,
    ExplorerData,
    format_number,
    load,
    render,
    trace_legend,
    write_explorer,
)
from reports.inputs import ReportInputError
from reports.stats import METRICS
from reports.tables import format_value
from tests.reports.runs import replace_table

KEY = ["scenario", "session_index", "strategy"]
KINDS = ["system_tokens", "task_tokens", "assistant_tokens", "tool_tokens", "error_tokens", "summary_tokens",
         "stub_tokens", "masked_tokens", "nudge_tokens"]
#: A few sessions under three strategies; a label with markup in it, which the page must show as text.
CONFIG: dict[str, Any] = {
    "sessions": 6, "seed": 3, "batch_size": 3, "executor": "serial",
    "scenarios": [{"name": "mix", "turns": 20}],
    "strategies": [{"name": "unbounded"}, {"name": "sliding_window", "label": "sw</script><b>8", "window_size": 8},
                   {"name": "observation_masking", "keep_turns": 2}],
}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("explorer") / "run"
    run(RunConfig(**CONFIG), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def page(run_dir: Path) -> Path:
    return write_explorer(run_dir)


def copy_of(run_dir: Path, dest: Path) -> Path:
    shutil.copytree(run_dir, dest)
    (dest / EXPLORER_HTML).unlink(missing_ok=True)
    return dest


def unpack(part: dict[str, Any] | None, defaults: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one table of a blob, as the page reads them (written out again, independently)."""
    if part is None:
        return []
    rows = [dict(defaults) for _ in range(part["n"])]
    for column, values in part.items():
        if column in ("n", "~"):
            continue
        total = 0
        for row, value in zip(rows, values, strict=True):
            if column in part.get("~", []):
                total += value
                value = total
            row[column] = value
    return rows


def blob_of(data: Any, i: int) -> dict[str, Any]:
    return json.loads(zlib.decompress(base64.b64decode(data.details[data.detail_of[i]])))


# What it reads ------------------------------------------------------------------------------------------


def test_every_session_is_in_the_table_and_its_events_are_packed_losslessly(run_dir: Path) -> None:
    data = load(run_dir)
    sessions = pd.read_parquet(run_dir / SESSIONS_TABLE)
    assert len(data.sessions) == len(sessions) == 6 * 3
    assert data.strategies == ["unbounded", "sw</script><b>8", "observation_masking"]
    assert data.events == "on"
    events = pd.read_parquet(run_dir / EVENTS_TABLE)
    calls = pd.read_parquet(run_dir / CALLS_TABLE)
    defaults = {c: default for c, (_, default) in EVENT_COLUMNS.items()}
    for i, (scenario, index, strategy) in enumerate(data.sessions[KEY].itertuples(index=False)):
        blob = blob_of(data, i)[strategy]
        mine = events[(events["scenario"] == scenario) & (events["session_index"] == index)
                      & (events["strategy"] == strategy)]
        packed = sorted((r for kind in ("call", "compaction", "lost")
                         for r in unpack(blob.get(kind), defaults | {"event": kind})), key=lambda r: r["seq"])
        expected = mine[list(EVENT_COLUMNS)].to_dict("records")
        assert packed == expected
        mine_calls = calls[(calls["scenario"] == scenario) & (calls["session_index"] == index)
                           & (calls["strategy"] == strategy)]
        decisions = unpack(blob["c"], {})
        assert [d["action"] for d in decisions] == mine_calls["action"].tolist()
        assert [d["trace"] for d in decisions] == mine_calls["trace"].tolist()
        # A call's cost keeps the digits that make the page's 4 decimals those of the true value.
        assert [format_number(d["cost_usd"], "usd") for d in decisions] == \
            [format_number(v, "usd") for v in mine_calls["cost_usd"]]


def test_the_page_is_self_contained_and_its_data_cannot_close_its_script(page: Path) -> None:
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert re.findall(r"\b(?:src|href)\s*=\s*\"([^\"]*)\"", text) == ["data:,"]
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert not re.search(r"https?://", text.replace('http-equiv="Content-Security-Policy"', ""))
    # Four script elements (meta, sessions, details, code): the label's "</script>" did not end one.
    assert text.count("</script>") == 4
    assert "sw\\u003c/script>\\u003cb>8" in text


def test_a_metric_that_is_not_a_number_is_shown_empty_not_as_invalid_json(run_dir: Path, tmp_path: Path) -> None:
    out = copy_of(run_dir, tmp_path / "run")
    sessions = pd.read_parquet(out / SESSIONS_TABLE)
    sessions.loc[0, "latency_s"] = float("nan")
    sessions.loc[1, "cost_usd"] = float("inf")
    replace_table(out, SESSIONS_TABLE, sessions)
    text = write_explorer(out).read_text()
    found = re.search(r'<script type="application/json" id="sessions">(.*?)</script>', text)
    assert found is not None
    columns = json.loads(found.group(1), parse_constant=lambda name: pytest.fail(f"{name} in the page's JSON"))
    assert columns["latency_s"][0] is None and columns["cost_usd"][1] is None


def test_a_page_of_a_run_is_the_same_bytes_when_written_again(run_dir: Path, tmp_path: Path) -> None:
    first = write_explorer(run_dir, tmp_path / "a.html").read_bytes()
    assert write_explorer(run_dir, tmp_path / "b.html").read_bytes() == first


def test_a_run_made_with_events_off_opens_its_sessions_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "off"
    run(RunConfig(**(CONFIG | {"events": False})), out, quiet=True)
    data = load(out)
    assert data.events == EVENTS_OFF
    assert len(data.sessions) == 18 and data.details == [] and set(data.detail_of) == {-1}
    assert "events = false" in render(data)


def test_a_run_without_an_event_log_from_an_older_ctxbench_opens_too(run_dir: Path, tmp_path: Path) -> None:
    out = copy_of(run_dir, tmp_path / "old")
    (out / EVENTS_TABLE).unlink()
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    for field in ("sha256", "rows"):
        manifest[field].pop(EVENTS_TABLE)
    (out / MANIFEST_FILE).write_text(json.dumps(manifest))
    stamp = (out / "config.toml").read_text()
    (out / "config.toml").write_text(stamp.replace("events = true\n", ""))
    assert load(out).events == EVENTS_ABSENT


def _damage_bytes(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


@pytest.mark.parametrize(("how", "says"), [
    ("truncated", "changed after the run"),
    ("missing", "missing"),
    ("garbage_with_a_true_checksum", "not a readable parquet table"),
    ("a_column_missing", "missing column"),
    ("missing_and_unlisted_though_kept", "missing (the run's config.toml keeps the event log"),
])
def test_a_damaged_or_missing_event_log_is_one_line_naming_it(run_dir: Path, tmp_path: Path, how: str,
                                                               says: str) -> None:
    out = copy_of(run_dir, tmp_path / "run")
    path = out / EVENTS_TABLE
    if how == "truncated":
        _damage_bytes(path)
    elif how == "missing":
        path.unlink()
    elif how == "garbage_with_a_true_checksum":
        path.write_bytes(b"PAR1 garbage")
        manifest = json.loads((out / MANIFEST_FILE).read_text())
        manifest["sha256"][EVENTS_TABLE] = __import__("hashlib").sha256(path.read_bytes()).hexdigest()
        (out / MANIFEST_FILE).write_text(json.dumps(manifest))
    elif how == "a_column_missing":
        replace_table(out, EVENTS_TABLE, pd.read_parquet(path).drop(columns=["facts_dropped"]))
    else:
        path.unlink()
        manifest = json.loads((out / MANIFEST_FILE).read_text())
        manifest["sha256"].pop(EVENTS_TABLE)
        (out / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(ReportInputError) as info:
        write_explorer(out)
    message = str(info.value)
    assert "\n" not in message and EVENTS_TABLE in message and says in message
    assert not (out / EXPLORER_HTML).exists()


# How it writes numbers and explains the trace ------------------------------------------------------------

#: (value, unit, what the page writes): tokens and counts as integers with thousands separators, dollars
#: to 4 decimals, seconds to 1, shares as percentages to 2; nothing for a missing value.
WRITTEN: list[tuple[float | None, str, str]] = [
    (94532.901, "tokens", "94,533"), (17573.435, "tokens", "17,573"), (0, "count", "0"),
    (1234567, "count", "1,234,567"), (0.373875, "usd", "$0.3739"), (94532.901, "usd", "$94,532.9010"),
    (-0.01, "usd", "-$0.0100"), (-0.00001, "usd", "$0.0000"), (625.3835, "s", "625.4 s"), (0.04, "s", "0.0 s"),
    (0.8123, "share", "81.23%"), (1.0, "share", "100.00%"), (0.00004, "share", "0.00%"),
    # A tie rounds away from zero on the number's shortest decimal form, as the browser's Intl.NumberFormat
    # does (Python's f-string rounds 2.5 to even, and 0.00015, stored as 0.000149999..., down).
    (1234.5, "tokens", "1,235"), (2.5, "count", "3"), (0.00015, "usd", "$0.0002"),
    (None, "usd", ""), (math.nan, "s", ""), (math.inf, "tokens", ""),
]


@pytest.mark.parametrize(("value", "unit", "written"), WRITTEN)
def test_a_number_is_written_rounded_in_its_unit(value: float | None, unit: str, written: str) -> None:
    assert format_number(value, unit) == written


def test_numbers_read_as_the_report_writes_them() -> None:
    """Away from ties, the page's numbers are the report's (`reports.tables.format_value`) to the character."""
    metric = {"tokens": METRICS["input_tokens"], "usd": METRICS["cost_per_session"], "s": METRICS["latency_mean"],
              "share": METRICS["success_rate"]}
    draw = random.Random(7)
    for unit, of in metric.items():
        top = 1 if unit == "share" else 10 ** 7  # a share is at most 1 (the report writes no separator in it)
        for value in [0.0, 1.0, *(draw.uniform(0, top) * 10 ** -draw.randint(0, 6) for _ in range(300))]:
            assert format_number(value, unit) == format_value(of, value), (unit, value)


def page_json(text: str, element: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', text)
    assert found is not None, element
    return json.loads(found.group(1))


def test_the_page_gives_each_number_column_its_unit_and_keeps_the_true_values(run_dir: Path, page: Path) -> None:
    text = page.read_text()
    meta = page_json(text, "meta")
    assert meta["formats"] == {unit: list(f) for unit, f in NUMBER_FORMATS.items()}
    units = {c["name"]: c["unit"] for c in meta["columns"]}
    assert (units["cost_usd"], units["latency_s"], units["input_tokens"], units["context_tokens_mean"],
            units["turns"]) == ("usd", "s", "tokens", "tokens", "count")
    assert all(c["unit"] in NUMBER_FORMATS for c in meta["columns"])
    # The data hold the true values, unrounded: sorting orders by them, and each is rounded once, to show it.
    sessions = page_json(text, "sessions")
    truth = load(run_dir).sessions
    assert sessions["cost_usd"] == truth["cost_usd"].tolist() and sessions["latency_s"] == truth["latency_s"].tolist()
    assert any(len(str(v)) > 8 for v in sessions["cost_usd"])


def test_the_trace_legend_names_and_explains_every_trace_column(page: Path) -> None:
    text = page.read_text()
    found = re.search(r'<template id="trace-legend-template">(.*?)</template>', text)
    assert found is not None
    legend = found.group(1)
    assert legend == trace_legend()
    names = [name for name, _, _ in TRACE_COLUMNS]
    assert names == ["key", "depth", "visible", "lookup", "branch", "p", "u", "x"]
    assert re.findall(r'<dt data-col="([^"]+)">', legend) == names
    for name, _, meaning in TRACE_COLUMNS:
        assert len(TRACE_LEGEND[name]) > 10 and len(meaning) > len(TRACE_LEGEND[name])
        assert f'<dd title="{html.escape(meaning)}">{html.escape(TRACE_LEGEND[name])}</dd>' in legend
    # The same meanings are the trace table's header tooltips.
    assert [(c["name"], c["help"]) for c in page_json(text, "meta")["trace_columns"]] == \
        [(name, meaning) for name, _, meaning in TRACE_COLUMNS]


def test_the_traces_of_a_run_hold_what_the_legend_says(run_dir: Path) -> None:
    calls = pd.read_parquet(run_dir / CALLS_TABLE)
    names = {name for name, _, _ in TRACE_COLUMNS}
    draws: dict[tuple[Any, ...], set[float]] = {}
    entries = 0
    for call in calls.itertuples(index=False):
        trace = json.loads(call.trace)
        if call.call_kind == "summary":  # not a look-up: the keys the summary kept (the page says so)
            assert [set(e) for e in trace] == [{"kept", "n"}]
            continue
        for j, e in enumerate(trace):
            entries += 1
            assert set(e) <= names, e  # every field of a trace has a column and a meaning
            assert e["branch"] in ("recall", "memory", "retrieve", "refetch", "shortcut", "wrong"), e
            if call.call_kind != "handoff":
                assert e["depth"] in (0, 1, 2) and isinstance(e["visible"], bool), e
            if e.get("depth", 0) > 0:  # a fact needed to re-fetch the fact of the nearest shallower entry
                parent = next(p for p in reversed(trace[:j]) if p["depth"] < e["depth"])
                assert parent["depth"] == e["depth"] - 1 and parent["branch"] == "refetch", trace
            if "p" in e:  # a recall draw: of a visible fact, at a position in the prompt, u against p
                assert e["visible"] is True and e["lookup"] in ("literal", "latent"), e
                assert 0 <= e["x"] <= 1 and 0 <= e["p"] <= 1 and 0 < e["u"] < 1, e
                assert e["u"] <= e["p"] if e["branch"] == "recall" else e["u"] >= e["p"], e
                if call.call_kind == "agent":
                    key = (call.scenario, call.session_index, call.step_id, call.attempt, e["key"])
                    draws.setdefault(key, set()).add(e["u"])
            else:
                assert e["branch"] != "recall" and "lookup" not in e and "x" not in e and "u" not in e, e
    assert entries > 100
    # u is keyed by session, step, attempt and fact, not by strategy: the same wherever it is drawn again.
    assert len(draws) > 20 and all(len(us) == 1 for us in draws.values())


# In a real browser ---------------------------------------------------------------------------------------


def chromium() -> str:
    """Debian's chromium: skipped when absent, except in CI (CI=true), where .ci/run installs it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed; CI must have it (.ci/run installs Debian's package)")
    pytest.skip("chromium not installed: the explorer's browser test needs Debian's chromium package "
                "(apt-get install chromium; .ci/run installs it)")


def playwright() -> Any:
    """Playwright's sync API: skipped when not installed, except in CI (the dev extra installs it)."""
    if os.environ.get("CI"):
        from playwright.sync_api import sync_playwright

        return sync_playwright
    return pytest.importorskip("playwright.sync_api").sync_playwright


def first_divergence(run_dir: Path, scenario: str, index: int, a: str, b: str) -> int | None:
    """The first turn where strategies a and b differ on one session (another action, or a fact lost on one
    side only), from the tables: what the page's marker must say."""
    events = pd.read_parquet(run_dir / EVENTS_TABLE)
    calls = pd.read_parquet(run_dir / CALLS_TABLE)
    session = events[(events["scenario"] == scenario) & (events["session_index"] == index)]

    def turns(strategy: str) -> dict[int, tuple[str, str]]:
        mine = session[session["strategy"] == strategy]
        made = calls[(calls["scenario"] == scenario) & (calls["session_index"] == index)
                     & (calls["strategy"] == strategy)].set_index("call_index")
        out: dict[int, tuple[str, str]] = {}
        for turn, rows in mine.groupby("turn"):
            call = rows[rows["event"] == "call"]
            action = (f"{made.loc[call['call_index'].iloc[0], 'action']} "
                      f"{made.loc[call['call_index'].iloc[0], 'step_id']}") if len(call) else "(no call)"
            out[int(turn)] = (action, ",".join(sorted(rows[rows["event"] == "lost"]["fact"])))
        return out

    ta, tb = turns(a), turns(b)
    for turn in range(1, max([*ta, *tb]) + 1):
        if ta.get(turn, ("(ended)", "")) != tb.get(turn, ("(ended)", "")):
            return turn
    return None


def written_as(value: Any, unit: str) -> str:
    """A trace field as the page's trace table shows it: yes / no, a number by its unit, text as it is."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return format_number(value, unit or "count") if isinstance(value, int | float) else str(value)


def test_the_explorer_in_headless_chromium(run_dir: Path, page: Path, tmp_path: Path,
                                           keep_screenshot: Callable[[str, Path], Path]) -> None:
    browser_path = chromium()
    sync_playwright = playwright()
    sessions = load(run_dir).sessions  # in the page's row order
    problems: list[str] = []
    shots = {"first screen": tmp_path / "explorer-first-screen.png", "turn and trace": tmp_path / "explorer-turn.png",
             "side by side": tmp_path / "explorer-compare.png"}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                   if m.type in ("error", "warning") else None)
            tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            tab.on("request", lambda r: problems.append(f"request: {r.url}")
                   if not r.url.startswith(("file:", "data:", "blob:")) else None)
            tab.goto(page.as_uri())
            rows = tab.locator("#sessions-table tbody tr[data-i]")
            assert rows.count() == len(sessions)
            assert tab.locator("#sessions-table th[data-col=strategy]").count() == 1
            assert "sw</script><b>8" in tab.inner_text("#sessions-table")  # shown as text, not markup
            assert tab.inner_text("#count") == f"rows 1–{len(sessions)} of {len(sessions)}"
            assert tab.locator("#page-size option").all_inner_texts() == ["100", "500", "all"]
            tab.screenshot(path=str(shots["first screen"]))

            def column(name: str) -> int:
                names = [tab.locator("#sessions-table th").nth(j).get_attribute("data-col")
                         for j in range(tab.locator("#sessions-table th").count())]
                return names.index(name) + 1

            def cells(name: str) -> list[str]:
                return tab.locator(f"#sessions-table tbody tr[data-i] td:nth-child({column(name)})").all_inner_texts()

            # Every number rounded as the reports write it: a cost to 4 decimals, seconds to 1, tokens whole.
            units = {c["name"]: c["unit"] for c in page_json(page.read_text(), "meta")["columns"]}
            assert not re.search(r"\d\.\d{5}", tab.inner_text("#sessions-table"))  # nothing unrounded
            costs = cells("cost_usd")
            assert all(re.fullmatch(r"\$\d+\.\d{4}", c) for c in costs), costs
            assert costs == [format_number(v, "usd") for v in sessions["cost_usd"]]
            assert all(re.fullmatch(r"[\d,]+\.\d s", c) for c in cells("latency_s"))
            assert all(re.fullmatch(r"[\d,]+", c) for c in cells("context_tokens_mean"))
            for name, unit in units.items():
                if name in sessions.columns and pd.api.types.is_numeric_dtype(sessions[name]):
                    assert cells(name) == [format_number(v, unit) for v in sessions[name]], name
            # The script's formatting is format_number's, ties and signs included.
            for value, unit, written in WRITTEN:
                if value is not None and math.isfinite(value):
                    assert tab.evaluate("([v, u]) => window.ctxbenchExplorer.format(v, u)", [value, unit]) == written

            # Filter by an outcome: exactly its sessions, nothing else; the count says how many match.
            outcome = sessions["outcome"].value_counts().index[-1]
            tab.select_option("#filter-outcome", outcome)
            matching = int((sessions["outcome"] == outcome).sum())
            assert cells("outcome") == [outcome] * matching
            assert tab.inner_text("#count") == f"rows 1–{matching} of {matching}"
            assert f"{matching} of the run's {len(sessions)} rows match" in tab.inner_text("#matching")
            tab.select_option("#filter-outcome", "")
            tab.fill("#filter-text", "observation_masking")
            assert rows.count() == int((sessions["strategy"] == "observation_masking").sum())
            tab.fill("#filter-text", "")

            # Sorting orders by the true values, not by what the cells show rounded.
            tab.click("#sessions-table th[data-col=cost_usd]")
            order = [int(i) for i in tab.locator("#sessions-table tbody tr[data-i]").evaluate_all(
                "rows => rows.map((r) => r.dataset.i)")]
            assert [sessions["cost_usd"][i] for i in order] == sorted(sessions["cost_usd"], reverse=True)

            # Sort by a metric: descending first, ascending on a second click.
            tab.click("#sessions-table th[data-col=input_tokens]")
            cells_of_input = f"#sessions-table tbody td:nth-child({column('input_tokens')})"
            shown = [int(v.replace(",", "")) for v in tab.locator(cells_of_input).all_inner_texts()]
            assert shown == sorted(sessions["input_tokens"], reverse=True)
            tab.click("#sessions-table th[data-col=input_tokens]")
            shown = [int(v.replace(",", "")) for v in tab.locator(cells_of_input).all_inner_texts()]
            assert shown == sorted(sessions["input_tokens"])

            # Open a session (the first that two strategies play differently) and step to its third turn.
            scenario, index, a, b, turn = next(
                (s, int(i), "unbounded", "sw</script><b>8", t) for s, i in
                sessions[["scenario", "session_index"]].drop_duplicates().itertuples(index=False)
                if (t := first_divergence(run_dir, s, int(i), "unbounded", "sw</script><b>8")) is not None)
            tab.select_option("#filter-strategy", a)
            row = sessions.index[(sessions["scenario"] == scenario) & (sessions["session_index"] == index)
                                 & (sessions["strategy"] == a)][0]
            tab.click(f'#sessions-table tbody tr[data-i="{row}"]')
            tab.wait_for_selector("#turn-number")
            assert f"#{index}" in tab.inner_text("#detail-title")
            tab.click("#turn-next")
            tab.click("#turn-next")
            assert tab.input_value("#turn-number") == "3"
            events = pd.read_parquet(run_dir / EVENTS_TABLE)
            third = events[(events["scenario"] == scenario) & (events["session_index"] == index)
                           & (events["strategy"] == a) & (events["event"] == "call") & (events["turn"] == 3)]
            tokens = int(third[KINDS].sum(axis=1).iloc[0])
            assert f"{tokens:,} tokens" in tab.inner_text("#turn-prompt")
            assert tab.locator("#turn-view .bar span").count() >= 3  # system, task and more: a stacked bar
            tab.keyboard.press("ArrowLeft")
            assert tab.input_value("#turn-number") == "2"

            # A turn whose decision looked facts up: its trace, numbers as percentages, each column
            # explained in its tooltip and in the legend under it; the call's cost rounded.
            calls = pd.read_parquet(run_dir / CALLS_TABLE)
            mine = calls[(calls["scenario"] == scenario) & (calls["session_index"] == index)
                         & (calls["strategy"] == a)].set_index("call_index")
            made = events[(events["scenario"] == scenario) & (events["session_index"] == index)
                          & (events["strategy"] == a) & (events["event"] == "call")]
            traced = next(r for r in made.itertuples(index=False) if mine.loc[r.call_index, "trace"] != "[]")
            tab.fill("#turn-number", str(traced.turn))
            tab.keyboard.press("Enter")
            tab.wait_for_selector("#turn-trace")
            entry = json.loads(mine.loc[traced.call_index, "trace"])[0]
            first = tab.locator("#turn-trace tbody tr").first.locator("td").all_inner_texts()
            assert first == [written_as(entry.get(c), unit) for c, unit, _ in TRACE_COLUMNS]
            assert all(v.endswith("%") for v in first[5:] if v)
            assert tab.locator("#turn-cost").inner_text() == format_number(mine.loc[traced.call_index, "cost_usd"],
                                                                           "usd")
            assert re.fullmatch(r"\$\d+\.\d{4}", tab.locator("#turn-cost").inner_text())
            legend = tab.locator("#trace-legend")
            assert legend.is_visible()
            assert legend.locator("dt").all_inner_texts() == [name for name, _, _ in TRACE_COLUMNS]
            for name, _, meaning in TRACE_COLUMNS:
                assert tab.get_attribute(f"#turn-trace th[data-col={name}]", "title") == f"{name}: {meaning}"
                assert legend.locator(f"dt[data-col={name}] + dd").inner_text() == TRACE_LEGEND[name]
            assert not re.search(r"\d\.\d{5}", tab.inner_text("#detail"))  # nothing unrounded
            tab.locator("#turn-trace").scroll_into_view_if_needed()
            tab.screenshot(path=str(shots["turn and trace"]))

            # Side by side with the sliding window: the first divergence is marked where the tables say.
            tab.select_option("#compare-with", b)
            tab.click("#compare-open")
            tab.wait_for_selector("#compare-table")
            marker = tab.locator("#first-divergence")
            assert marker.count() == 1
            assert marker.get_attribute("data-turn") == str(turn)
            assert f"turn {turn}" in tab.inner_text("#divergence")
            assert tab.locator("#compare-table tbody tr").count() >= turn
            head = tab.inner_text("#compare-table thead")
            for strategy in (a, b):
                cost = sessions["cost_usd"][sessions.index[(sessions["scenario"] == scenario)
                                                           & (sessions["session_index"] == index)
                                                           & (sessions["strategy"] == strategy)][0]]
                assert format_number(cost, "usd") in head
            assert re.search(r"\$\d+\.\d{4}\b", tab.inner_text("#compare-table tbody"))  # each call's cost
            assert not re.search(r"\d\.\d{5}", tab.inner_text("#compare"))  # nothing unrounded
            tab.screenshot(path=str(shots["side by side"]))
        finally:
            browser.close()
    assert problems == []
    for name, path in shots.items():
        assert path.stat().st_size > 10_000, name
        keep_screenshot(f"session explorer, {name}", path)


def test_a_run_without_events_opens_in_chromium_and_says_so(tmp_path: Path) -> None:
    browser_path = chromium()
    sync_playwright = playwright()
    out = tmp_path / "off"
    run(RunConfig(**(CONFIG | {"sessions": 2, "events": False})), out, quiet=True)
    page = write_explorer(out)
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
        try:
            tab = browser.new_page()
            tab.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.goto(page.as_uri())
            assert "events = false" in tab.inner_text("#events-note")
            assert tab.locator("#sessions-table tbody tr[data-i]").count() == 6
            tab.locator("#sessions-table tbody tr[data-i]").first.click()
            tab.wait_for_selector("#no-turns")
            assert tab.locator("#compare-open").count() == 0
        finally:
            browser.close()
    assert problems == []


#: The session rows drawn inside the scroll box's visible part (below its sticky header), by data-i.
IN_VIEW = """() => {
  const box = document.getElementById("sessions-box").getBoundingClientRect();
  const head = document.querySelector("#sessions-table thead").getBoundingClientRect().bottom;
  return Array.from(document.querySelectorAll("#sessions-table tbody tr[data-i]"))
    .filter((r) => { const q = r.getBoundingClientRect(); return q.bottom > head && q.top < box.bottom; })
    .map((r) => r.dataset.i);
}"""


def test_a_table_of_30000_rows_pages_and_scrolls_drawing_only_the_rows_in_view(tmp_path: Path) -> None:
    browser_path = chromium()
    sync_playwright = playwright()
    n = 30_000
    draw = random.Random(5)
    sessions = pd.DataFrame({
        "scenario": "mix", "session_index": [i // 3 for i in range(n)], "strategy": ["a", "b", "c"] * (n // 3),
        "outcome": [draw.choice(["success", "stuck"]) for _ in range(n)],
        "input_tokens": [draw.randint(1_000, 900_000) for _ in range(n)],
        "latency_s": [draw.uniform(10, 900) for _ in range(n)], "cost_usd": [draw.uniform(0.001, 3) for _ in range(n)]})
    page = tmp_path / "big.html"
    page.write_text(render(ExplorerData("big", ["a", "b", "c"], sessions, EVENTS_OFF, [-1] * n, [])))
    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"])
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 1000})
            tab.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
            tab.on("pageerror", lambda e: problems.append(str(e)))
            tab.goto(page.as_uri())
            rows = tab.locator("#sessions-table tbody tr[data-i]")
            box = tab.locator("#sessions-box")

            def in_view() -> list[int]:
                """The rows drawn inside the scroll box's visible part (below its sticky header)."""
                return [int(i) for i in tab.evaluate(IN_VIEW)]

            def scroll_to(where: str, near: int) -> list[int]:
                """Scroll the box (``where``: a scrollTop from the box ``b``) and wait until the rows drawn in its
                view are those around row ``near`` (drawing follows the scroll event, a frame later)."""
                box.evaluate(f"b => {{ b.scrollTop = {where}; }}")
                tab.wait_for_function(f"""() => {{ const v = ({IN_VIEW})().map(Number);
                  return v.length > 20 && v.some((i) => Math.abs(i - {near}) < 100); }}""")
                return in_view()

            # The table takes the window's height, 500 rows a page by default, of which it draws those in view.
            height = box.bounding_box()["height"]
            assert height > 0.7 * 1000
            assert tab.inner_text("#count") == "rows 1–500 of 30,000"
            assert 20 < rows.count() < 200 and in_view()[0] == 0
            tab.click("#page-next")
            assert tab.inner_text("#count") == "rows 501–1,000 of 30,000" and in_view()[0] == 500
            tab.select_option("#page-size", "100")
            assert tab.inner_text("#count") == "rows 501–600 of 30,000"  # the page that holds the first row shown

            # All rows on one page: still a few drawn; scrolled to the end, the last rows are in view.
            tab.select_option("#page-size", "0")
            assert tab.inner_text("#count") == "rows 1–30,000 of 30,000" and rows.count() < 200
            seen = scroll_to("b.scrollHeight", n - 1)
            assert seen[-1] == n - 1 and rows.count() < 200
            seen = scroll_to("b.scrollHeight / 2", n // 2)
            assert abs(seen[len(seen) // 2] - n // 2) < 100 and seen == list(range(seen[0], seen[-1] + 1))

            # Sorting 30,000 rows by cost sorts the true values and draws the first of them.
            tab.click("#sessions-table th[data-col=cost_usd]")
            top = rows.first.get_attribute("data-i")
            assert top is not None and sessions["cost_usd"][int(top)] == sessions["cost_usd"].max()
            assert rows.first.locator("td").nth(6).inner_text() == format_number(sessions["cost_usd"].max(), "usd")
        finally:
            browser.close()
    assert problems == []
