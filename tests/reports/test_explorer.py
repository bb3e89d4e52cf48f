"""The session explorer (reports.explorer) of a small real run: what it reads (every session, each one's
events and decisions packed losslessly), the checks it shares with the report (a damaged or missing
event log is one ReportInputError naming the file), a run without events, a self-contained page; and
the page itself driven in headless Chromium: no console error, filter, sort, step through a session's
turns, and the side-by-side view with its first divergence where the tables say it is."""

from __future__ import annotations

import base64
import json
import os
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
from reports.explorer import EVENT_COLUMNS, EVENTS_ABSENT, EVENTS_OFF, EXPLORER_HTML, load, render, write_explorer
from reports.inputs import ReportInputError
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


def test_the_explorer_in_headless_chromium(run_dir: Path, page: Path, tmp_path: Path,
                                           keep_screenshot: Callable[[str, Path], Path]) -> None:
    browser_path = chromium()
    sync_playwright = playwright()
    sessions = load(run_dir).sessions  # in the page's row order
    problems: list[str] = []
    shots = {"first screen": tmp_path / "explorer-first-screen.png", "side by side": tmp_path / "explorer-compare.png"}
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
            rows = tab.locator("#sessions-table tbody tr")
            assert rows.count() == len(sessions)
            assert tab.locator("#sessions-table th[data-col=strategy]").count() == 1
            assert "sw</script><b>8" in tab.inner_text("#sessions-table")  # shown as text, not markup
            tab.screenshot(path=str(shots["first screen"]))

            def column(name: str) -> int:
                names = [tab.locator("#sessions-table th").nth(j).get_attribute("data-col")
                         for j in range(tab.locator("#sessions-table th").count())]
                return names.index(name) + 1

            # Filter by an outcome: exactly its sessions, nothing else.
            outcome = sessions["outcome"].value_counts().index[-1]
            tab.select_option("#filter-outcome", outcome)
            cells = tab.locator(f"#sessions-table tbody tr td:nth-child({column('outcome')})").all_inner_texts()
            assert cells == [outcome] * int((sessions["outcome"] == outcome).sum())
            tab.select_option("#filter-outcome", "")
            tab.fill("#filter-text", "observation_masking")
            assert rows.count() == int((sessions["strategy"] == "observation_masking").sum())
            tab.fill("#filter-text", "")

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

            # Side by side with the sliding window: the first divergence is marked where the tables say.
            tab.select_option("#compare-with", b)
            tab.click("#compare-open")
            tab.wait_for_selector("#compare-table")
            marker = tab.locator("#first-divergence")
            assert marker.count() == 1
            assert marker.get_attribute("data-turn") == str(turn)
            assert f"turn {turn}" in tab.inner_text("#divergence")
            assert tab.locator("#compare-table tbody tr").count() >= turn
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
            assert tab.locator("#sessions-table tbody tr").count() == 6
            tab.locator("#sessions-table tbody tr").first.click()
            tab.wait_for_selector("#no-turns")
            assert tab.locator("#compare-open").count() == 0
        finally:
            browser.close()
    assert problems == []
