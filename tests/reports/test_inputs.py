"""Damaged run directories and hostile labels: `ctxbench report` and `ctxbench compare` refuse every
damaged input with one line on stderr naming the file (exit 2, no traceback) and leave the directory
byte-identical; strategy labels are drawn and written literally."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness.cli import main as cli_main
from harness.core.files import StagedFile
from harness.run.config import RunConfig
from harness.run.runner import run
from reports.inputs import NUMBER, TEXT, ReportInputError, read_table
from reports.markup import escape, md_escape
from reports.plots import FRONT_LABEL, cost_vs_success, ecdf_latency, png_bytes, short_label
from tests.reports.runs import replace_table

SMALL: dict[str, Any] = {"sessions": 3, "seed": 1, "batch_size": 3, "executor": "serial",
                         "scenarios": [{"name": "mix", "turns": 20}]}
#: Labels matplotlib would read as mathtext (some invalid), a legend would hide, HTML or Markdown would
#: interpret, or that are just long or not ASCII.
LABELS = ["$\\frac{a}{b}$", "$x", "a$b$c", "$\\frac{a}{b", "line\nbreak", "L" * 120, "ünïcødé ✓ 漢字",
          "<script>alert(1)</script>", "fish & chips &amp;", "pipe|in|label", "_under"]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("inputs") / "good"
    run(RunConfig(**SMALL, strategies=[{"name": "unbounded"}, {"name": "sliding_window"}]), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def other(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another run (another seed, one strategy under another label): its tables are valid but not the good run's."""
    out = tmp_path_factory.mktemp("inputs") / "other"
    run(RunConfig(**SMALL | {"seed": 2}, strategies=[{"name": "unbounded", "label": "elsewhere"}]), out, quiet=True)
    return out


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` (``root`` itself included) -> the sha256 of a file's bytes, or its kind."""
    if not root.exists():
        return {}
    if not root.is_dir():
        return {".": hashlib.sha256(root.read_bytes()).hexdigest()}
    found = {".": "dir"}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            found[os.path.relpath(Path(folder, name), root)] = "dir"
        for name in files:
            path = Path(folder, name)
            found[os.path.relpath(path, root)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


# The damage: each changes a copy of the good run (given the other run) --------------------------------------


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 20)


def into_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "part-0.parquet").write_bytes(b"not a table")


def edit_manifest(run_dir: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads((run_dir / "manifest.json").read_text())
    change(data)
    (run_dir / "manifest.json").write_text(json.dumps(data))


def drop_columns(run_dir: Path, table: str, columns: list[str], *, keep_checksum: bool) -> None:
    frame = pd.read_parquet(run_dir / table).drop(columns=columns)
    if keep_checksum:  # the run wrote it so: the manifest matches, the columns do not
        replace_table(run_dir, table, frame)
    else:
        frame.to_parquet(run_dir / table, index=False)


def without_manifest(damage: Callable[[Path, Path], None]) -> Callable[[Path, Path], None]:
    """The damage on a copy without a manifest: nothing to verify against, so the table is parsed."""
    def apply(run_dir: Path, other: Path) -> None:
        (run_dir / "manifest.json").unlink()
        damage(run_dir, other)
    return apply


Damage = Callable[[Path, Path], None]


def table_damage(table: str) -> list[tuple[str, Damage, str, str]]:
    """(id, damage, the file the line names, what it says) for one table."""
    key = table.removesuffix(".parquet")
    cols = ["outcome", "family"] if table == "sessions.parquet" else ["call_kind"]
    changed = "changed after the run"
    cases: list[tuple[str, Damage, str, str]] = [
        (f"{key}-zero-bytes", lambda d, o: (d / table).write_bytes(b""), table, changed),
        (f"{key}-truncated", lambda d, o: truncate(d / table), table, changed),
        (f"{key}-garbage", lambda d, o: garbage(d / table), table, changed),
        (f"{key}-directory", lambda d, o: into_directory(d / table), table, "not a file"),
        (f"{key}-swapped", lambda d, o: shutil.copy2(o / table, d / table), table, changed),
        (f"{key}-edited", lambda d, o: drop_columns(d, table, cols, keep_checksum=False), table, changed),
        (f"{key}-missing-columns", lambda d, o: drop_columns(d, table, cols, keep_checksum=True), table,
         "missing column"),
        (f"{key}-zero-bytes-no-manifest", without_manifest(lambda d, o: (d / table).write_bytes(b"")), table,
         "empty file (0 bytes)"),
        (f"{key}-truncated-no-manifest", without_manifest(lambda d, o: truncate(d / table)), table,
         "not a readable parquet table"),
        (f"{key}-garbage-no-manifest", without_manifest(lambda d, o: garbage(d / table)), table,
         "not a readable parquet table"),
        (f"{key}-directory-no-manifest", without_manifest(lambda d, o: into_directory(d / table)), table,
         "not a file"),
        (f"{key}-missing-columns-no-manifest",
         without_manifest(lambda d, o: drop_columns(d, table, cols, keep_checksum=False)), table, "missing column"),
    ]
    if table == "sessions.parquet":
        cases += [
            ("sessions-missing", lambda d, o: (d / table).unlink(), "", "not a finished run directory"),
            ("sessions-text-in-a-number-column", lambda d, o: replace_table(
                d, table, pd.read_parquet(d / table).assign(cost_usd="x")), table, "column cost_usd holds"),
            ("sessions-row-without-strategy", lambda d, o: replace_table(
                d, table, pd.read_parquet(d / table).assign(strategy=lambda f: f["strategy"].where(f.index > 0))),
             table, "column strategy has no value in 1 row"),
        ]
    else:
        cases.append(("calls-missing", lambda d, o: (d / table).unlink(), table, "missing (manifest.json lists it)"))
    return cases


INPUT_DAMAGE: list[tuple[str, Damage, str, str]] = [
    *table_damage("sessions.parquet"),
    *table_damage("calls.parquet"),
    ("manifest-zero-bytes", lambda d, o: (d / "manifest.json").write_bytes(b""), "manifest.json", "Invalid JSON"),
    ("manifest-invalid-json", lambda d, o: (d / "manifest.json").write_text("{run_id: 1"), "manifest.json",
     "Invalid JSON"),
    ("manifest-a-list", lambda d, o: (d / "manifest.json").write_text("[]"), "manifest.json",
     "Input should be an object"),
    ("manifest-a-string", lambda d, o: (d / "manifest.json").write_text('"run"'), "manifest.json",
     "Input should be an object"),
    ("manifest-rows-of-the-wrong-type", lambda d, o: edit_manifest(d, lambda m: m.update(rows="x")), "manifest.json",
     "rows: Input should be"),
    ("manifest-not-utf8", lambda d, o: (d / "manifest.json").write_bytes(b'{"run_id": "\xff"}'), "manifest.json",
     "Invalid JSON"),
    ("manifest-a-directory", lambda d, o: into_directory(d / "manifest.json"), "manifest.json", "not a file"),
    ("manifest-sha256-outside-the-run", lambda d, o: edit_manifest(
        d, lambda m: m["sha256"].update({"../../etc/passwd": "0" * 64})), "manifest.json",
     "is not a file name of the run directory"),
    ("manifest-sha256-not-hex", lambda d, o: edit_manifest(d, lambda m: m["sha256"].update({"calls.parquet": "x"})),
     "manifest.json", "is not a sha256"),
    ("config-not-utf8", lambda d, o: (d / "config.toml").write_bytes(b"\xff\xfe seed = 1"), "config.toml",
     "not UTF-8 text"),
    ("config-a-directory", lambda d, o: into_directory(d / "config.toml"), "config.toml", "not a file"),
]
OUTPUT_DAMAGE: list[tuple[str, Damage, str, str]] = [
    ("plots-a-file", lambda d, o: (d / "plots").write_text("x"), "plots", "exists and is not a directory"),
    ("report-html-a-directory", lambda d, o: (d / "report.html").mkdir(), "report.html", "exists and is not a file"),
    ("report-md-a-directory", lambda d, o: (d / "report.md").mkdir(), "report.md", "exists and is not a file"),
    ("a-plot-a-directory", lambda d, o: (d / "plots" / "outcome_mix.png").mkdir(parents=True),
     "plots/outcome_mix.png", "exists and is not a file"),
]


def assert_refused(argv: list[str], run_dir: Path, named: Path, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The command exits 2 with one line on stderr naming ``named`` and saying ``says``, and ``run_dir``
    is byte-identical before and after."""
    before = snapshot(run_dir)
    code = cli_main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"ctxbench: error: {argv[0]}: "), err
    assert str(named) in err and says in err, err
    assert "Traceback" not in err and out == ""
    assert snapshot(run_dir) == before


@pytest.mark.parametrize(("damage", "named", "says"), [c[1:] for c in INPUT_DAMAGE + OUTPUT_DAMAGE],
                         ids=[c[0] for c in INPUT_DAMAGE + OUTPUT_DAMAGE])
def test_report_refuses_a_damaged_run_directory_in_one_line_and_changes_nothing(
        good: Path, other: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Damage, named: str,
        says: str) -> None:
    copy = tmp_path / "run"
    shutil.copytree(good, copy)
    damage(copy, other)
    assert_refused(["report", str(copy)], copy, copy / named, says, capsys)


#: Compare reads neither config.toml nor the calls table: it verifies the calls table's checksum when the
#: manifest lists one, and parses nothing of it.
COMPARE_DAMAGE = [c for c in INPUT_DAMAGE if c[2] != "config.toml" and not (
    c[0].startswith("calls-") and (c[0].endswith("-no-manifest") or c[0] == "calls-missing-columns"))]


@pytest.mark.parametrize(("damage", "named", "says"), [c[1:] for c in COMPARE_DAMAGE],
                         ids=[c[0] for c in COMPARE_DAMAGE])
@pytest.mark.parametrize("side", ["A", "B"])
def test_compare_refuses_a_damaged_run_directory_on_either_side(
        good: Path, other: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Damage, named: str,
        says: str, side: str) -> None:
    copy = tmp_path / "run"
    shutil.copytree(good, copy)
    damage(copy, other)
    argv = ["compare", str(copy), str(good)] if side == "A" else ["compare", str(good), str(copy)]
    assert_refused(argv, copy, copy / named, says, capsys)


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize(("make", "says"), [
    (lambda p: None, "no such directory"),
    (lambda p: p.write_text("a file"), "not a directory"),
    (lambda p: p.mkdir(), "not a finished run directory"),
], ids=["missing", "a-file", "empty-directory"])
def test_a_path_that_is_not_a_run_directory_is_one_line(good: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str], command: str,
                                                        make: Callable[[Path], None], says: str) -> None:
    path = tmp_path / "not-a-run"
    make(path)
    argv = ["report", str(path)] if command == "report" else ["compare", str(good), str(path)]
    assert_refused(argv, path, path, says, capsys)


def test_compare_refuses_two_runs_without_a_strategy_in_common(good: Path, other: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert_refused(["compare", str(good), str(other)], other, other, "no strategy in common", capsys)


def test_compare_of_a_run_with_itself_is_allowed(good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(good)
    assert cli_main(["compare", str(good), str(good), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and all(r["diff"] == 0 for r in rows if r["diff"] is not None)
    assert snapshot(good) == before


def test_a_run_without_a_manifest_still_renders_without_calls(good: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """No manifest (tables copied alone): nothing to verify, and a missing calls table means no call plots."""
    copy = tmp_path / "run"
    shutil.copytree(good, copy)
    (copy / "manifest.json").unlink()
    (copy / "calls.parquet").unlink()
    assert cli_main(["report", str(copy)]) == 0
    assert capsys.readouterr().err == ""
    assert (copy / "report.md").is_file() and (copy / "plots" / "outcome_mix.png").is_file()


def test_read_table_names_every_missing_column_and_a_column_of_the_wrong_kind(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pd.DataFrame({"strategy": ["a"], "n": ["x"]}).to_parquet(path)
    with pytest.raises(ReportInputError, match=r"t\.parquet: missing columns scenario, outcome \("):
        read_table(path, {"strategy": TEXT, "scenario": TEXT, "outcome": TEXT})
    with pytest.raises(ReportInputError, match=r"t\.parquet: column n holds str, not numbers$"):
        read_table(path, {"strategy": TEXT, "n": NUMBER})
    with pytest.raises(ReportInputError, match=r"t\.parquet: column strategy holds int64, not text$"):
        read_table(_write(path, pd.DataFrame({"strategy": [1]})), {"strategy": TEXT})
    # An empty table has no types to check, and a column with no value at all is parquet's null type.
    assert read_table(_write(path, pd.DataFrame({"n": pd.Series([], dtype=object)})), {"n": NUMBER}).empty
    assert len(read_table(_write(path, pd.DataFrame({"n": [None, None]})), {"n": NUMBER})) == 2


def _write(path: Path, frame: pd.DataFrame) -> Path:
    frame.to_parquet(path)
    return path


def test_read_table_with_optional_columns_reads_only_those_asked(tmp_path: Path) -> None:
    """With ``optional`` given, a table is read for the columns asked and the optional ones it has
    (the report's calls: an eighth of the bytes); without it every column is kept."""
    path = _write(tmp_path / "t.parquet", pd.DataFrame({"trace": ["[...]"], "strategy": ["a"], "n": [1.5],
                                                        "model": ["m"]}))
    frame = read_table(path, {"strategy": TEXT, "n": NUMBER}, optional=("sweep_param", "model"))
    assert list(frame.columns) == ["strategy", "n", "model"]
    assert frame.iloc[0].tolist() == ["a", 1.5, "m"]
    assert list(read_table(path, {"strategy": TEXT}).columns) == ["trace", "strategy", "n", "model"]
    with pytest.raises(ReportInputError, match=r"t\.parquet: missing column scenario \("):
        read_table(path, {"strategy": TEXT, "scenario": TEXT}, optional=())
    with pytest.raises(ReportInputError, match=r"t\.parquet: column n holds float64, not text$"):
        read_table(path, {"n": TEXT}, optional=())


def test_a_message_is_one_line_whatever_it_holds() -> None:
    assert str(ReportInputError("a\nb\rc")) == "a\\nb\\rc"


# Writing: all or nothing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fail_at", [1, 4, 8])
def test_a_write_failing_halfway_leaves_the_directory_as_it_was(good: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 fail_at: int) -> None:
    """The n-th file of the report (6 plots, then report.html and report.md) cannot be staged, as on a
    full disk or a read-only directory: one line naming it, and no plot or page is left behind, not
    even the plots/ directory the report made."""
    copy = tmp_path / "run"
    shutil.copytree(good, copy)
    calls = []
    create = StagedFile.create

    def failing_create(self: StagedFile) -> int:
        calls.append(self.target)
        if len(calls) == fail_at:
            raise PermissionError(13, "Permission denied")
        return create(self)

    monkeypatch.setattr(StagedFile, "create", failing_create)
    before = snapshot(copy)
    assert cli_main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be written (Permission denied)" in err, err
    assert snapshot(copy) == before
    assert not (copy / "plots").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_run_directory_is_one_line(good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "run"
    shutil.copytree(good, copy)
    copy.chmod(0o555)
    try:
        assert_refused(["report", str(copy)], copy, copy, "cannot be written", capsys)
    finally:
        copy.chmod(0o755)


def test_a_second_report_replaces_the_first_in_place(good: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "run"
    shutil.copytree(good, copy)
    assert cli_main(["report", str(copy)]) == 0
    first = snapshot(copy)
    assert cli_main(["report", str(copy)]) == 0
    assert snapshot(copy) == first  # deterministic, and no temporary file left behind
    assert not [p for p in first if Path(p).name.startswith(".")]
    capsys.readouterr()


# Hostile labels ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("labels") / "run"
    config = RunConfig(**SMALL | {"sessions": 2, "batch_size": 2},
                       strategies=[{"name": "unbounded", "label": label} for label in LABELS])
    run(config, out, quiet=True)
    return out


def test_hostile_labels_render_literally(labelled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Mathtext-like labels do not crash the plots and appear as written in report.md; HTML and
    Markdown metacharacters are escaped."""
    assert cli_main(["report", str(labelled)]) == 0
    assert capsys.readouterr().err == ""  # not even a missing-glyph warning per plot
    md = (labelled / "report.md").read_text()
    page = (labelled / "report.html").read_text()
    # Every label is the same strategy, so their sessions are identical: one row that names them all.
    merged = " = ".join(LABELS)
    assert f"| {md_escape(merged)} (n = 2) |" in md
    assert f"<td class=\"name\">{escape(merged)}<span" in page
    assert "$\\frac{a}{b}$" in md and "a$b$c" in md
    assert "pipe\\|in\\|label" in md
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "fish &amp; chips &amp;amp;" in page


def test_plot_labels_are_drawn_as_written_not_as_mathtext(labelled: Path) -> None:
    sessions = pd.read_parquet(labelled / "sessions.parquet")
    # A legend (one line per strategy) and small multiples (one panel title per strategy).
    legend_fig, panel_fig = cost_vs_success(sessions), ecdf_latency(sessions)
    for fig in (legend_fig, panel_fig):
        assert png_bytes(fig).startswith(b"\x89PNG")  # "$\frac{a}{b" would raise here if parsed as mathtext
    texts = [t for t in legend_fig.legends[0].get_texts() if t.get_text() != FRONT_LABEL]
    assert sorted(t.get_text() for t in texts) == sorted(short_label(label) for label in LABELS)
    assert not any(t.get_parse_math() for t in texts)
    assert " _under" in {t.get_text() for t in texts}  # shown, not taken for matplotlib's "no legend" mark
    titles = [ax.title for ax in panel_fig.axes if ax.get_visible()]
    assert sorted(t.get_text() for t in titles) == sorted(short_label(label, 22) for label in LABELS)
    assert not any(t.get_parse_math() for t in titles)
