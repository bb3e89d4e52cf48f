"""``ctxbench fit``: measure agent transcripts, write a run config whose scenario makes sessions like them
(`harness.run.fitting`), and a report comparing the measured and the generated sessions (`reports.fit`, with
the side-by-side of `harness.run.fitting.agreement` on top).

The generated side is made here, in-process: ``--sessions`` sessions of the written config, replayed as
``ctxbench run`` replays them (the config's seed, the mock model, the ``unbounded`` strategy), so one command
says whether the workload resembles the transcripts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.errors import UsageError
from harness.cli.flags import TRACE_FORMATS_SLOT, Subparsers, add_command, add_format_flag, add_quiet

#: The largest ``--seed``: a TOML integer (the seed is written into the config).
MAX_SEED = 2**63 - 1


def _agreement_how(tolerance: float) -> str:
    """The side-by-side's "How to read this"."""
    return ("Each row is one measure of the transcripts (measured) and of the sessions the fitted config generates, "
            "replayed in-process as `ctxbench run` replays them: the mock model under the unbounded strategy "
            f"(generated). The gap is generated over measured, minus one; a row agrees when the gap is within "
            f"{tolerance:.0%} (the role mix's distance when it is at most {tolerance:g}). Session length counts tool "
            "calls; payloads are every tool output's bytes, an empty one 0; the observation share is the tool "
            "outputs' tokens over every message's (system prompt left out); growth is the least-squares slope of "
            "the prompt over the calls; tokens per session add every call's input and output.")


if TYPE_CHECKING:
    from harness.run.fitting import Agreement


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench fit``."""
    fit = add_command(
        subparsers, "fit", handle,
        help="fit a workload config to agent transcripts, with a report comparing the measured and the "
             "generated sessions",
        description="Measure recorded agent sessions (trace files) and write a run config (--out) whose scenario "
                    "generates sessions like them: the distribution of session lengths (tool calls), payload sizes "
                    "(median, spread, a cap no lower than the largest), the tool-role mix (read, search, edit, run, "
                    "other). To show how close it comes, fit then generates --sessions sessions of that config "
                    "in-process, replayed as `ctxbench run` replays them (the mock model under the unbounded "
                    "strategy), and writes a report folder (report.html, report.md) whose first table puts measured "
                    "and generated side by side (median session length, payload median and spread, observation "
                    "share, growth per call, role mix, tokens per session), each marked within 20% or not. Print "
                    "the paths written. Exit 0; 2 when a trace or a flag is wrong or an output exists without "
                    "--force (one line on stderr).")
    fit.add_argument("traces", nargs="+", metavar="TRACE", help="trace files or directories")
    fit.add_argument("--out", required=True, help="the run config to write (e.g. workload.toml)")
    add_format_flag(fit, f"trace format, one of: {TRACE_FORMATS_SLOT}; default: detected from each file")
    fit.add_argument("--report", default=None, help="report folder (default: <out stem>-fit/ next to --out)")
    fit.add_argument("--sessions", type=int, default=None,
                     help="sessions of the fitted config generated and replayed in-process for the comparison "
                          "(default: enough for 2,000 tool outputs at the measured median length, 40 to 200)")
    fit.add_argument("--seed", type=int, default=0, help="root seed of the generated sessions and the config")
    fit.add_argument("--force", action="store_true",
                     help="replace an existing --out and report folder (never a run directory, its files, "
                          "or a folder holding files fit did not write)")
    add_quiet(fit, "no progress lines on stderr")


def _say(quiet: bool) -> Callable[[str], None]:
    def say(line: str) -> None:
        if not quiet:
            print(f"ctxbench: fit: {line}", file=sys.stderr, flush=True)

    return say


def _check_outputs(out: Path, report: Path, force: bool) -> None:
    """UsageError before any work when an output cannot or may not be written: either path fails
    `check_output_path` (which also refuses a run directory's own files), ``--out`` lies inside the report
    folder, or the report folder is one fit may not replace whole even with ``force`` (`_not_a_fit_report`);
    an existing output without ``force``."""
    from harness.core.output_paths import OutputPathError, check_output_path

    try:
        check_output_path(out, flag="--out", directory=False)
        check_output_path(report, flag="--report", directory=True)
        if not os.path.exists(out.parent):  # the files are made, not the folders they go in
            raise UsageError(f"--out: the folder {out.parent} does not exist")
        if not os.path.exists(report.parent):
            raise UsageError(f"--report: the folder {report.parent} does not exist")
        real_out, real_report = Path(os.path.realpath(out)), Path(os.path.realpath(report))
        if real_out == real_report or real_report in real_out.parents:
            raise UsageError(f"--out: {out} is inside the --report folder {report}, which fit replaces whole "
                             "(write the config elsewhere)")
        if os.path.lexists(report):
            refusal = _not_a_fit_report(report)
            if refusal is not None:
                raise UsageError(f"--report: {report} {refusal}; fit replaces the report folder whole, so it "
                                 "must be new, empty or an earlier fit report (even with --force)")
            if not force:
                raise UsageError(f"--report: {report} exists (use --force to replace it)")
        if out.exists() and not force:
            raise UsageError(f"--out: {out} exists (use --force to replace it)")
    except OutputPathError as e:
        raise UsageError(str(e)) from None
    except OSError as e:  # a folder that cannot be listed
        raise UsageError(f"--report: {report} cannot be used ({e.strerror or e})") from None


def _not_a_fit_report(report: Path) -> str | None:
    """Why the existing folder ``report`` is not one fit may replace, else None: a symbolic link, a run
    directory, or a folder holding anything fit did not write (``report.html``, ``report.md``,
    ``plots/<plot>.png``, and the temporary files of an interrupted write)."""
    from harness.core.files import TEMP_SUFFIX
    from harness.core.output_paths import is_run_directory
    from reports.fit import PLOT_NAMES

    if report.is_symlink():
        return "is a symbolic link (name the folder itself)"
    if is_run_directory(report):
        return "is a run directory"

    def stranger_in(folder: Path, files: set[str]) -> Path | None:
        for entry in sorted(folder.iterdir()):
            real_dir = entry.is_dir() and not entry.is_symlink()
            if not entry.is_dir() and (entry.name in files or (entry.name.startswith(".")
                                                              and entry.name.endswith(TEMP_SUFFIX))):
                continue
            if folder == report and entry.name == "plots" and real_dir:
                inner = stranger_in(entry, {f"{name}.png" for name in PLOT_NAMES})
                if inner is None:
                    continue
                return inner
            return entry
        return None

    stranger = stranger_in(report, {"report.html", "report.md"})
    return None if stranger is None else f"holds {stranger.relative_to(report)}, which fit did not write"


def _replace_folder(report: Path, write: Callable[[Path], object]) -> None:
    """Write a folder aside with ``write(folder)``, then put it in ``report``'s place: a reader sees the
    old folder or the whole new one, never half of it."""
    staging = Path(tempfile.mkdtemp(dir=report.parent, prefix=f".{report.name}.", suffix=".tmp"))
    try:
        write(staging)
        if report.exists():
            shutil.rmtree(report)
        os.replace(staging, report)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_report(folder: Path, data: dict[str, Any], rows: Sequence[Agreement]) -> None:
    """`reports.fit`'s report (``report.html``, ``report.md``, ``plots/*.png``) with the side-by-side of
    measured and generated (`harness.run.fitting.agreement`) as its first section."""
    from dataclasses import replace

    from harness.core.files import write_atomically
    from harness.run.fitting import AGREEMENT_TOLERANCE, agreement_cells, agreement_header
    from reports.blocks import Section, TableBlock, render_html, render_markdown
    from reports.fit import draw_fit_plots, fit_page
    from reports.tables import Cell, Table

    plots = draw_fit_plots(data)
    page = fit_page(data, plots)
    tolerance = rows[0].tolerance if rows else AGREEMENT_TOLERANCE
    cells = [agreement_cells(row) for row in rows]
    table = Table("agreement", agreement_header(tolerance),
                  [[Cell(c[0], css="name"), *(Cell(x) for x in c[1:])] for c in cells])
    section = Section("Does the generated workload resemble the transcripts?", [TableBlock(table)], id="agreement",
                      how=_agreement_how(tolerance))
    blocks = list(page.blocks)
    first = next((i for i, block in enumerate(blocks) if isinstance(block, Section)), len(blocks))
    page = replace(page, blocks=[*blocks[:first], section, *blocks[first:]])
    (folder / "plots").mkdir(parents=True, exist_ok=True)
    write_atomically(folder / "report.html", render_html(page).encode("utf-8"))
    write_atomically(folder / "report.md", render_markdown(page).encode("utf-8"))
    for name, png in plots.items():
        write_atomically(folder / "plots" / f"{name}.png", png)


def handle(args: argparse.Namespace) -> int:
    """Load the transcripts, fit, generate the comparison sessions, write the report and the config."""
    from harness.run.traces import TraceError, format_names, load_traces

    out = Path(args.out)
    report = Path(args.report) if args.report else out.with_name(f"{out.stem}-fit")
    if args.sessions is not None and args.sessions < 1:
        raise UsageError(f"--sessions: expected at least 1, got {args.sessions}")
    if not 0 <= args.seed <= MAX_SEED:
        raise UsageError(f"--seed: expected 0 to 2**63-1, got {args.seed}")
    if args.format is not None and args.format not in format_names():
        raise UsageError(f"--format: unknown format {args.format!r} (known: {', '.join(format_names())})")
    _check_outputs(out, report, args.force)

    from harness.core.files import write_atomically
    from harness.run.fitting import (
        FitError,
        agreement,
        comparison_sessions,
        fit,
        generated_measures,
        measure,
        report_inputs,
        workload_config,
        workload_toml,
    )

    say = _say(args.quiet)
    # The names written into the config and the report: text, whatever bytes a file name holds.
    sources = [os.fsencode(t).decode("utf-8", "replace") for t in args.traces]
    read_notes: list[str] = []
    try:
        sessions = load_traces([Path(t) for t in args.traces], args.format, notes=read_notes)
    except TraceError as e:
        raise UsageError(str(e)) from None
    if not sessions:
        raise UsageError(f"{', '.join(args.traces)}: no sessions in these traces")
    say(f"{len(sessions)} sessions read; measuring and fitting")
    measures = measure(sessions)
    try:
        fitted = fit(measures, seed=args.seed, progress=say)
    except FitError as e:
        raise UsageError(f"{', '.join(args.traces)}: {e}") from None
    n_generated = args.sessions if args.sessions is not None else comparison_sessions(fitted)
    step = max(1, n_generated // 10)

    def generated(done: int, total: int) -> None:
        if done % step == 0 or done == total:
            say(f"generating comparison sessions: {done}/{total}")

    for note in read_notes:
        print(f"ctxbench: note: {note}", file=sys.stderr)
    generated_side = generated_measures(workload_config(fitted, seed=args.seed), sessions=n_generated,
                                        seed=args.seed, progress=generated)
    data = report_inputs(fitted, generated_side, sources=sources)
    rows = agreement(measures, generated_side)
    apart = [row.measure for row in rows if row.within is False]
    say(f"generated against measured: {len(rows) - len(apart)} of {len(rows)} measures within "
        f"{rows[0].tolerance:.0%}" + (f"; not: {'; '.join(apart)}" if apart else ""))
    # The config's text first (it is parsed back as it is made): nothing is written unless it is sound.
    text = workload_toml(fitted, seed=args.seed, sources=sources)
    say("writing the report")
    _replace_folder(report, lambda folder: _write_report(folder, data, rows))
    write_atomically(out, text.encode("utf-8"))
    for note in fitted.notes:
        say(f"note: {note}")
    print(out)
    print(report / "report.html")
    print(report / "report.md")
    return 0
