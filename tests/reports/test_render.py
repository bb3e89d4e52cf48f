"""report.html and report.md of a small real run: the decision first and provenance last, every section
and plot, the headline table in decision order with its intervals, no external URL, the Markdown links,
byte-identical reports of one run, the baseline choice, the CLI, and a headless-Chromium screenshot
that shows the headline table."""

from __future__ import annotations

import base64
import html
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from harness.cli import main as cli_main
from harness.run.config import RunConfig
from harness.run.runner import run
from reports import stats
from reports.decision import best_corner, decide, decision_order, pareto_front
from reports.plots import PLOT_NAMES
from reports.render import PLOT_BY_NAME, SECTIONS, ReportInputError, headline_metrics, write_report
from reports.stats import METRICS
from reports.tables import WILSON_MARK, format_interval, format_value
from tests.reports.runs import SMALL_RUN, replace_table

STRATEGIES = ["unbounded", "sw20", "offload_contracts"]
CONFIG: dict[str, Any] = SMALL_RUN
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("render") / "run"
    run(RunConfig(**CONFIG), out, quiet=True)
    written = write_report(out)
    assert written == [out / "report.html", out / "report.md"]
    return out


def tables_only(source: Path, target: Path) -> Path:
    """A copy of a run directory's tables (no report, no plots)."""
    target.mkdir(parents=True)
    for name in ("config.toml", "manifest.json", "sessions.parquet", "calls.parquet", "events.parquet"):
        shutil.copy2(source / name, target / name)
    return target


class Page(HTMLParser):
    """The parts of report.html the tests look at; records tags that close out of order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.mismatched: list[str] = []
        self.headings: list[tuple[str, str, str]] = []  # (tag, text, enclosing section id)
        self.sections: list[str] = []
        self.how_in: set[str] = set()
        self.images: list[dict[str, str]] = []
        self.links: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.doctype = ""
        self._section = ""
        self._figure = ""
        self._heading: list[str] | None = None
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag not in VOID:
            self.stack.append(tag)
        for key in ("src", "href", "action", "poster", "srcset"):
            if key in a:
                self.links.append(a[key])
        if tag == "section":
            self._section = a.get("id", "")
            self.sections.append(self._section)
        elif tag == "figure":
            self._figure = a.get("id", "")
        elif tag in ("h1", "h2", "h3"):
            self._heading = []
        elif tag == "div" and "how" in a.get("class", "").split():
            self.how_in.add(self._figure or self._section)
        elif tag == "img":
            self.images.append(a | {"figure": self._figure})
        elif tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.mismatched.append(tag)
        else:
            self.stack.pop()
        if tag in ("h1", "h2", "h3") and self._heading is not None:
            self.headings.append((tag, "".join(self._heading).strip(), self._section))
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "figure":
            self._figure = ""
        elif tag == "section":
            self._section = ""

    def handle_data(self, data: str) -> None:
        if self._heading is not None:
            self._heading.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text())
    page.close()
    return page


@pytest.fixture(scope="module")
def page(run_dir: Path) -> Page:
    return parse(run_dir / "report.html")


# report.html -------------------------------------------------------------------------------------------


def test_html_parses_with_balanced_tags(page: Page) -> None:
    assert page.doctype.lower() == "doctype html"
    assert page.mismatched == []
    assert page.stack == []


def test_html_has_every_section_with_its_heading_and_how_to_read(page: Page) -> None:
    assert page.sections == [s.key for s in SECTIONS]
    h2 = {section: text for tag, text, section in page.headings if tag == "h2"}
    assert h2 == {s.key: s.title for s in SECTIONS}
    assert {s.key for s in SECTIONS} <= page.how_in
    assert {"Strategies", "Scenarios", "By scenario family", "Loop rate by rule"} <= {
        text for tag, text, _ in page.headings if tag == "h3"}


def test_the_decision_comes_first_and_provenance_last(page: Page, run_dir: Path) -> None:
    keys = [s.key for s in SECTIONS]
    assert keys[0] == "decision" and keys[-1] == "run"
    assert page.sections[0] == "decision" and page.sections[-1] == "run"
    # The tables of provenance come after every table of the decision, in both formats.
    text = (run_dir / "report.html").read_text()
    assert text.index('id="decision-table"') < text.index('id="headline-table"') < text.index('id="manifest-table"')
    assert text.index('id="strategies-table"') > text.index('id="loops-table"')
    md = (run_dir / "report.md").read_text()
    titles = re.findall(r"^## (.+)$", md, re.MULTILINE)
    assert titles[0] == "Decision" and titles[-1] == "Provenance"
    assert md.index("| goal | best |") < md.index("| field | value |") < md.index("### Strategies")
    assert md.index("### Scenarios") > md.index("## Provenance")


def test_html_embeds_every_plot_as_a_png_data_uri(page: Page, run_dir: Path) -> None:
    by_figure = {img["figure"]: img for img in page.images}
    assert set(by_figure) == {f"plot-{name}" for name in PLOT_NAMES}
    for name in PLOT_NAMES:
        img = by_figure[f"plot-{name}"]
        prefix = "data:image/png;base64,"
        assert img["src"].startswith(prefix)
        data = base64.b64decode(img["src"][len(prefix):], validate=True)
        assert data.startswith(PNG_SIGNATURE)
        assert data == (run_dir / "plots" / f"{name}.png").read_bytes()
        assert img["alt"]
        assert f"plot-{name}" in page.how_in


def decided_order(run_dir: Path) -> list[str]:
    head = stats.headline(stats.load_sessions(run_dir))
    return decision_order(head, STRATEGIES)


def test_headline_table_has_every_strategy_in_decision_order_with_intervals(page: Page, run_dir: Path) -> None:
    table = page.tables["headline-table"]
    header, rows = table[0], table[1:]
    metrics = headline_metrics()
    assert header == ["strategy", *(m.label for m in metrics)]
    assert header[1:3] == ["success rate", "cost per solved session"]
    assert "cache-hit share" in header
    assert [row[0].split()[0] for row in rows] == decided_order(run_dir)
    expected = stats.headline(stats.load_sessions(run_dir)).set_index(["strategy", "metric"])
    success = [float(expected.loc[(row[0].split()[0], "success_rate"), "value"]) for row in rows]
    assert success == sorted(success, reverse=True)
    for row in rows:
        strategy = row[0].split()[0]
        assert row[0].endswith("n = 12")
        for metric, cell in zip(metrics, row[1:], strict=True):
            r = expected.loc[(strategy, metric.name)]
            if not np.isfinite(r["value"]):
                assert cell == metric.undefined
                continue
            mark = f" {WILSON_MARK}" if r["interval"] == "wilson" else ""
            assert cell == (f"{format_value(metric, r['value'])} "
                            f"{format_interval(metric, r['ci_low'], r['ci_high'])}{mark}")


def test_the_decision_names_each_goals_best_its_ties_and_the_front(page: Page, run_dir: Path) -> None:
    sessions = stats.load_sessions(run_dir)
    head = stats.headline(sessions)
    results = decide(sessions, head)
    rows = page.tables["decision-table"][1:]
    assert [row[0] for row in rows] == [f"{r.goal.title} {METRICS[r.goal.metric].label}" for r in results]
    for row, result in zip(rows, results, strict=True):
        if result.all_tied:  # a best tied with every other strategy is no best
            assert row[1].startswith("none: all tied") and result.best in row[1]
            assert row[3].startswith(f"every strategy ({len(STRATEGIES)})")
            continue
        assert row[1] == result.best
        assert row[3].startswith(", ".join(result.tied) if result.tied else "none: every other strategy is behind")
    text = html.unescape((run_dir / "report.html").read_text())
    front = pareto_front(head)
    assert front
    assert "Success-vs-cost Pareto front, cheapest first: " + front[0] in text
    assert all(name in text.split("Pareto front, cheapest first:")[1].split(". No other")[0] for name in front)


def test_every_failing_outcome_is_explained_and_cache_is_shown(run_dir: Path) -> None:
    text = (run_dir / "report.md").read_text()
    failures = text.split("## Why sessions fail")[1].split("## ")[0]
    sessions = stats.load_sessions(run_dir)
    for outcome in set(sessions["outcome"]) - {"success"}:
        assert re.search(rf"^- {outcome}: ", failures, re.MULTILINE), outcome
    assert "cache-hit share" in text and "prompt-cache hits" in text
    # A rate of zero events always has a real upper bound.
    assert "0.00% [0.00%, 0.00%]" not in text.split("## Paired differences")[0]


def test_paired_table_compares_against_unbounded(page: Page, run_dir: Path) -> None:
    rows = page.tables["paired-table"][1:]
    assert [row[0].split()[0] for row in rows] == [s for s in decided_order(run_dir) if s != "unbounded"]
    assert all(row[0].endswith("12 paired sessions") for row in rows)
    assert all(re.search(r"\[.+, .+\]$", cell) for row in rows for cell in row[1:])


def test_breakdown_tables_cover_every_strategy(page: Page, run_dir: Path) -> None:
    sessions = stats.load_sessions(run_dir)
    outcomes = page.tables["outcomes-table"]
    assert [row[0] for row in outcomes[1:]] == decided_order(run_dir)
    assert set(outcomes[0][1:]) == set(sessions["outcome"])
    assert outcomes[0][1] == "success"
    families = page.tables["families-table"]
    assert len(families) - 1 == sessions.groupby(["strategy", "family"]).ngroups
    manifest = {row[0]: row[1] for row in page.tables["manifest-table"][1:]}
    assert manifest["run id"] == "run"
    assert manifest["root seed"] == "3"
    assert manifest["baseline"] == "unbounded"


def test_html_references_nothing_external(page: Page, run_dir: Path) -> None:
    text = (run_dir / "report.html").read_text()
    assert page.links, "the plots should be embedded as src attributes"
    assert all(link.startswith(("data:", "#")) for link in page.links), page.links
    for needle in ("http://", "https://", 'src="//', "href=", "<script", "<link", "@import", "url("):
        assert needle not in text, needle


# report.md ---------------------------------------------------------------------------------------------


def test_markdown_has_the_tables_and_links_to_existing_plots(run_dir: Path) -> None:
    text = (run_dir / "report.md").read_text()
    assert re.findall(r"^## (.+)$", text, re.MULTILINE) == [s.title for s in SECTIONS]
    header = "| " + " | ".join(["strategy", *(m.label for m in headline_metrics())]) + " |"
    lines = text.splitlines()
    assert lines.count(header) == 1  # the headline: every metric, the compaction ones included
    paired = "| " + " | ".join(["strategy", *(m.label for m in headline_metrics() if not m.optional)]) + " |"
    assert lines.count(paired) == 1  # the paired differences: the outcome and cost metrics
    for strategy in STRATEGIES:
        assert re.search(rf"^\| {strategy} \(n = 12\) \|", text, re.MULTILINE)
    links = re.findall(r"!\[[^\]]+\]\((plots/[^)]+\.png)\)", text)
    assert sorted(links) == sorted(f"plots/{name}.png" for name in PLOT_NAMES)
    for link in links:
        assert (run_dir / link).read_bytes().startswith(PNG_SIGNATURE)


# Choices, errors and the CLI ------------------------------------------------------------------------------


def test_the_report_of_one_run_is_byte_identical_every_time(run_dir: Path, tmp_path: Path) -> None:
    first, second = tables_only(run_dir, tmp_path / "one"), tables_only(run_dir, tmp_path / "two")
    write_report(first)
    write_report(second)
    for name in ("report.html", "report.md", *(f"plots/{p}.png" for p in PLOT_NAMES)):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    # The run directory's name is the run id in the manifest, not the path: the copies differ only there.
    assert (first / "report.md").read_bytes() == (run_dir / "report.md").read_bytes()


def test_the_cost_plot_caption_names_the_corner_its_axes_make_best(run_dir: Path) -> None:
    from reports.plots import cost_vs_success

    sessions = stats.load_sessions(run_dir)
    ax = cost_vs_success(sessions, headline=stats.headline(sessions, resamples=200)).axes[0]
    assert "higher is better" in ax.get_xlabel() and "lower is better" in ax.get_ylabel()
    assert not ax.xaxis_inverted() and not ax.yaxis_inverted()
    # Higher x (right) and lower y (bottom) are better: the best corner is bottom-right.
    assert best_corner() == "bottom-right"
    how = PLOT_BY_NAME["cost_vs_success"].how
    assert "best corner is bottom-right" in how
    assert "up and to the left" not in how.lower()
    text = (run_dir / "report.md").read_text()
    assert "best corner is bottom-right" in text
    assert "Up and to the left" not in text


def test_without_unbounded_and_no_baseline_chosen_the_first_strategy_is_used_and_said(
        run_dir: Path, tmp_path: Path) -> None:
    copy = tables_only(run_dir, tmp_path / "copy")
    sessions = pd.read_parquet(copy / "sessions.parquet")
    replace_table(copy, "sessions.parquet", sessions[sessions["strategy"] != "unbounded"])
    write_report(copy)
    page = parse(copy / "report.html")
    assert [row[0].split()[0] for row in page.tables["paired-table"][1:]] == ["offload_contracts"]
    html_text = html.unescape((copy / "report.html").read_text())
    md_text = (copy / "report.md").read_text()
    for text in (html_text, md_text):
        assert "no 'unbounded' strategy and no baseline was chosen" in text
        assert "against 'sw20', the first strategy of the run" in text


def test_an_explicit_baseline_is_used_and_an_unknown_one_is_an_error(run_dir: Path, tmp_path: Path) -> None:
    copy = tables_only(run_dir, tmp_path / "copy")
    write_report(copy, ["md"], baseline="sw20")
    text = (copy / "report.md").read_text()
    assert "Each strategy minus **sw20**." in text
    assert "no baseline was chosen" not in text
    before = {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()}
    with pytest.raises(ReportInputError) as info:
        write_report(copy, baseline="no_such_strategy")
    assert str(info.value) == ("unknown baseline 'no_such_strategy': this run's strategies are unbounded, sw20, "
                               "offload_contracts")
    assert {p.name: p.read_bytes() for p in copy.iterdir() if p.is_file()} == before


def test_only_the_asked_formats_are_written_atomically(run_dir: Path, tmp_path: Path) -> None:
    copy = tables_only(run_dir, tmp_path / "copy")
    assert write_report(copy, ["md"]) == [copy / "report.md"]
    assert not (copy / "report.html").exists()
    assert sorted(p.name for p in (copy / "plots").iterdir()) == sorted(f"{n}.png" for n in PLOT_NAMES)
    assert not [p for p in copy.iterdir() if p.name.endswith(".tmp")]
    assert (copy / "report.md").stat().st_mode & 0o044 == 0o044


@pytest.mark.parametrize(("make", "formats", "expected"), [
    (lambda d: d / "absent", ("html",), "no such directory"),
    (lambda d: d, ("html",), "not a finished run directory"),
    (None, ("pdf",), "unknown report format 'pdf'"),
])
def test_bad_input_is_one_line_report_input_error(run_dir: Path, tmp_path: Path, make: Any, formats: tuple[str, ...],
                                                   expected: str) -> None:
    target = run_dir if make is None else make(tmp_path)
    before = sorted(p.name for p in run_dir.iterdir())
    with pytest.raises(ReportInputError) as info:
        write_report(target, formats)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)
    assert sorted(p.name for p in run_dir.iterdir()) == before


def test_a_run_directory_without_a_manifest_still_renders(run_dir: Path, tmp_path: Path) -> None:
    copy = tables_only(run_dir, tmp_path / "copy")
    (copy / "manifest.json").unlink()
    assert write_report(copy, ["md"]) == [copy / "report.md"]
    text = (copy / "report.md").read_text()
    assert text.startswith("# ctxbench report: copy\n")
    assert "| run id | copy |" in text


@pytest.mark.parametrize("manifest", ["{not json", '{"strategies": []}', '{"run_id": "r", "rows": {"a": "many"}}'])
def test_a_manifest_that_cannot_be_parsed_is_one_line_naming_the_file(run_dir: Path, tmp_path: Path,
                                                                      manifest: str) -> None:
    copy = tables_only(run_dir, tmp_path / "copy")
    (copy / "manifest.json").write_text(manifest)
    with pytest.raises(ReportInputError) as info:
        write_report(copy)
    assert str(info.value).startswith(f"{copy / 'manifest.json'}: not a valid manifest")
    assert "\n" not in str(info.value)
    assert not (copy / "report.html").exists()


def test_report_of_a_run_without_sessions_says_so(tmp_path: Path) -> None:
    config = RunConfig(**CONFIG | {"sessions": 2, "batch_size": 2})
    run(config, tmp_path / "empty", shard=(2, 2), quiet=True)
    assert pd.read_parquet(tmp_path / "empty" / "sessions.parquet").empty
    write_report(tmp_path / "empty")
    page = parse(tmp_path / "empty" / "report.html")
    assert page.mismatched == []
    assert "no sessions" in (tmp_path / "empty" / "report.html").read_text()
    assert "no sessions" in (tmp_path / "empty" / "report.md").read_text()


def test_cli_report_writes_the_chosen_format(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tables_only(run_dir, tmp_path / "copy")
    assert cli_main(["report", str(copy), "--format", "md"]) == 0
    assert capsys.readouterr().out.split() == [str(copy / "report.md")]
    assert not (copy / "report.html").exists()


@pytest.mark.parametrize(("args", "expected"), [
    (["report", "{tmp}/absent"], "no such directory"),
    (["report", "{tmp}"], "not a finished run directory"),
    (["report", "{run}", "--format", "html,pdf"], "unknown report format 'pdf'"),
    (["report", "{run}", "--baseline", "nope"],
     "unknown baseline 'nope': this run's strategies are unbounded, sw20, offload_contracts"),
])
def test_cli_report_bad_input_exits_2_with_one_line(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    args: list[str], expected: str) -> None:
    code = cli_main([a.format(tmp=tmp_path, run=run_dir) for a in args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("ctxbench: error: report: ")
    assert expected in err


@pytest.mark.parametrize("no_report", [False, True])
def test_cli_run_writes_the_report_unless_no_report(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    no_report: bool) -> None:
    import tomli_w

    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(CONFIG | {"sessions": 2, "batch_size": 2}))
    out = tmp_path / "out"
    code = cli_main(["run", str(path), "--out", str(out), *(["--no-report"] if no_report else [])])
    err = capsys.readouterr().err
    assert code == 0, err
    assert (out / "report.html").exists() is not no_report
    assert (out / "report.md").exists() is not no_report
    assert ("report.html" in err) is not no_report


# Headless Chromium ------------------------------------------------------------------------------------------


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("chromium not installed: the screenshot test needs Debian's chromium package "
                "(apt-get install chromium; .ci/run installs it)")


def screenshot(browser: str, page_path: Path, png: Path, profile: Path) -> np.ndarray:
    from PIL import Image

    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
               f"--user-data-dir={profile}", "--window-size=1280,2000", f"--screenshot={png}", page_path.as_uri()]
    env = os.environ | {"HOME": str(profile)}
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert png.exists(), f"chromium wrote no screenshot (exit {result.returncode}): {result.stderr[-2000:]}"
    with Image.open(png) as image:
        return np.asarray(image.convert("RGB"), dtype=np.int16)


def test_report_renders_in_headless_chromium_and_shows_the_headline_table(
        run_dir: Path, tmp_path: Path, keep_screenshot: Callable[[str, Path], Path]) -> None:
    from PIL import Image

    browser = chromium()
    original = screenshot(browser, run_dir / "report.html", tmp_path / "report.png", tmp_path / "profile-a")
    assert original.shape[:2] == (2000, 1280)
    # What a reader sees before scrolling, on a laptop screen: the decision and the headline table.
    first_screen = tmp_path / "report-first-screen.png"
    with Image.open(tmp_path / "report.png") as image:
        image.crop((0, 0, 1280, 800)).save(first_screen)
    keep_screenshot("report, first screen (1280x800)", first_screen)

    # Not blank: real content in many colours, not a white (or single-colour) page.
    non_white = (original < 235).any(axis=2).mean()
    colours = len(np.unique(original.reshape(-1, 3), axis=0))
    assert non_white > 0.03, non_white
    assert colours > 50, colours

    # The same page with only the headline table hidden (layout kept): the pixels that change are the
    # table's. On a blank or broken page, or one where the table is not drawn, nothing changes.
    text = (run_dir / "report.html").read_text()
    assert text.count("</style>") == 1
    hidden_page = tmp_path / "hidden.html"
    hidden_page.write_text(text.replace("</style>", "#headline-table { visibility: hidden; }</style>"))
    hidden = screenshot(browser, hidden_page, tmp_path / "hidden.png", tmp_path / "profile-b")
    assert hidden.shape == original.shape

    changed = (original != hidden).any(axis=2)
    ys, xs = np.nonzero(changed)
    assert len(ys) > 2000, "hiding the headline table changed (almost) nothing: the table is not shown"
    top, bottom, left, right = ys.min(), ys.max(), xs.min(), xs.max()
    assert right - left > 800, "the headline table should span most of the page width (ten columns)"
    assert bottom - top > 100, "the headline table should have a header and three rows"
    luminance = original.mean(axis=2)
    # Text: pixels dark in the original that are light once the table is hidden.
    dark_text = (luminance < 110) & (hidden.mean(axis=2) > 200)
    assert dark_text.sum() > 500
    # Everything outside the table's box is untouched: the change is the table, not a re-layout.
    outside = changed.copy()
    outside[top:bottom + 1, left:right + 1] = False
    assert not outside.any()


def test_a_report_is_refused_while_another_command_writes_into_the_run(run_dir: Path, tmp_path: Path) -> None:
    from harness.core.files import lock_directory

    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    with lock_directory(copy), pytest.raises(ReportInputError, match="another ctxbench command is writing"):
        write_report(copy)


def test_a_report_clears_the_temporary_files_a_killed_report_left(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    stale = [copy / ".report.html.a1b2c3.tmp", copy / "plots" / ".outcome_mix.png.x9y8z7.tmp"]
    for path in stale:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"half a page")
    write_report(copy)
    assert not any(path.exists() for path in stale)
