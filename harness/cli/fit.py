"""``ctxbench fit``: measure agent transcripts, write a run config whose scenario makes sessions like them
(`harness.run.fitting`), and a report comparing the measured and the generated sessions (`reports.fit`, with
the side-by-side of `harness.run.fitting.agreement` on top).

The generated side is made here, in-process: ``--sessions`` sessions of the written config, replayed as
``ctxbench run`` replays them (the config's seed, the mock model, the ``unbounded`` strategy), so one command
says whether the workload resembles the transcripts.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.errors import UsageError
from harness.cli.flags import TRACE_FORMATS_SLOT, Subparsers, add_command, add_format_flag, add_quiet
from harness.cli.report_folder import check_format, check_outputs, read_transcripts, replace_folder, say_for, text_of

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


def _write_report(folder: Path, data: dict[str, Any], rows: Sequence[Agreement]) -> None:
    """`reports.fit`'s report (``report.html``, ``report.md``, ``plots/*.png``) with the side-by-side of
    measured and generated (`harness.run.fitting.agreement`) as its first section."""
    from dataclasses import replace

    from harness.run.fitting import AGREEMENT_TOLERANCE, agreement_cells, agreement_header
    from reports.blocks import Section, TableBlock, write_report_folder
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
    write_report_folder(folder, page, plots)


def handle(args: argparse.Namespace) -> int:
    """Load the transcripts, fit, generate the comparison sessions, write the report and the config."""
    out = Path(args.out)
    report = Path(args.report) if args.report else out.with_name(f"{out.stem}-fit")
    if args.sessions is not None and args.sessions < 1:
        raise UsageError(f"--sessions: expected at least 1, got {args.sessions}")
    if not 0 <= args.seed <= MAX_SEED:
        raise UsageError(f"--seed: expected 0 to 2**63-1, got {args.seed}")
    check_format(args.format)
    from reports.fit import PLOT_NAMES

    check_outputs("fit", out, report, args.force, PLOT_NAMES)

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

    say = say_for("fit", args.quiet)
    # The names written into the config and the report: text, whatever bytes a file name holds.
    sources = [text_of(t) for t in args.traces]
    sessions = read_transcripts(args.traces, args.format)
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
    replace_folder(report, lambda folder: _write_report(folder, data, rows))
    write_atomically(out, text.encode("utf-8"))
    for note in fitted.notes:
        say(f"note: {note}")
    print(out)
    print(report / "report.html")
    print(report / "report.md")
    return 0
