"""``ctxbench run``: replay sessions under every strategy into a run directory (`harness.run.runner.run`),
then print the summary and write the report. `execute` and `print_summary` are shared with `sweep`
and `merge`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.export_otel import check_exporter_config, export_run
from harness.cli.flags import Subparsers, add_command, add_run_flags, load_run_config, output_path, shard

if TYPE_CHECKING:
    from harness.run.config import RunConfig
    from harness.run.directory import RunSummary


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench run``."""
    run = add_command(
        subparsers, "run", handle, help="replay sessions under every strategy into a run directory",
        description="Generate the config's sessions and replay each under every configured strategy (the same "
                    "sessions for all, so the comparison is paired) into a run directory: sessions.parquet, "
                    "calls.parquet, events.parquet, manifest.json and config.toml, then report.html and report.md; "
                    "print the summary table. An existing run directory of the same config is resumed. Exit 0; 1 "
                    "when sessions failed with outcome 'error'; 2 on a usage or config error (one line on stderr).")
    run.add_argument("config", nargs="?", help="TOML config (default: the embedded examples/default.toml)")
    add_run_flags(run)


def handle(args: argparse.Namespace) -> int:
    """Run the config with the flags applied; the exit code."""
    return execute(load_run_config(args), args, default_stem="default")


def execute(config: RunConfig, args: argparse.Namespace, *, default_stem: str) -> int:
    """Run ``config`` as the run flags in ``args`` say, print its summary and write its report; exit code 1
    when sessions failed with outcome 'error'. The run directory defaults to runs/<config stem>."""
    from harness.run.runner import run

    slice_ = shard(args.shard)
    stem = Path(args.config).stem if args.config else default_stem
    default_name = stem if slice_ is None else f"{stem}-shard{slice_.index}of{slice_.count}"
    # Checked before any work: a file, a dangling link, a folder that cannot be written in, a name too long.
    out = output_path(args.out if args.out else Path("runs") / default_name, flag="--out", directory=True)
    # An exporter that cannot be configured stops the command here, before any session replays.
    otel = check_exporter_config(args.otel, run_dir=out) if getattr(args, "otel", None) else None
    summary = run(config, out, resume=not args.no_resume, shard=slice_, quiet=args.quiet, notify=print_note)
    if not args.quiet and not args.json:
        total = len(summary.sessions)
        print(f"ctxbench run: {out} ({total} session rows, {summary.batches_run} batches run, "
              f"{summary.batches_skipped} resumed; {summary.wall_s:.1f} s, "
              f"{total / summary.wall_s if summary.wall_s > 0 else 0:.1f} session rows/s)")
    print_summary(summary, args.json)
    if not args.no_report:
        write_run_report(summary, quiet=args.quiet)
    otel_exit = 0
    if otel is not None and not summary.sessions.empty:
        otel_exit = export_run(summary.out_dir, otel, quiet=args.quiet, summary_to=sys.stderr if args.json else None)
    if summary.errors:
        print(f"ctxbench: {summary.errors} sessions failed with outcome 'error' (see the error column)",
              file=sys.stderr)
        return 1
    return otel_exit


def print_note(line: str) -> None:
    """What a command repaired on its way (a damaged part replayed, tables rebuilt): one line on stderr,
    shown even with ``--quiet``, since the user should know their directory was damaged."""
    print(f"ctxbench: note: {line}", file=sys.stderr)


def write_run_report(summary: RunSummary, *, quiet: bool) -> None:
    """Write the report of a run or merge that has sessions, and say where on stderr (unless quiet)."""
    if summary.sessions.empty:
        return
    from harness.cli.report import stage_printer
    from reports.render import write_report

    written = write_report(summary.out_dir, log=None if quiet else stage_printer("report"))
    if not quiet:
        print(f"ctxbench: report: {', '.join(str(p) for p in written)}", file=sys.stderr)


def run_metadata(summary: RunSummary) -> dict[str, Any]:
    """What ``--json`` says about the run besides its summary: where it is, what made it, what this
    command did (batches run and resumed, seconds)."""
    from harness.core.rundir import Manifest

    manifest = Manifest.read(summary.out_dir)
    return {
        "run_dir": str(summary.out_dir), "run_id": manifest.run_id, "config_hash": manifest.config_hash,
        "ctxbench_version": manifest.ctxbench_version, "git_sha": manifest.git_sha, "model": manifest.model_name,
        "root_seed": manifest.root_seed, "shard": manifest.shard, "merged_from": manifest.merged_from,
        "started": manifest.started, "finished": manifest.finished, "rows": manifest.rows,
        "batches_run": summary.batches_run, "batches_resumed": summary.batches_skipped,
        "sessions_errored": summary.errors, "wall_s": round(summary.wall_s, 3),
    }


def print_summary(summary: RunSummary, as_json: bool) -> None:
    """The summary table of a run's sessions on stdout, or, as JSON, ``{"run": <metadata>,
    "strategies": [<one record per strategy>]}``."""
    from harness.core.rundir import Manifest
    from reports.summary import summary_records, summary_text

    sessions = summary.sessions
    # The run's order names strategies merged for identical sessions as the report does.
    order = Manifest.read(summary.out_dir).strategy_order() if not sessions.empty else []
    if as_json:
        records = summary_records(sessions, order) if not sessions.empty else []
        print(json.dumps({"run": run_metadata(summary), "strategies": records}, indent=2))
        return
    if sessions.empty:
        print("no sessions in this run (a shard without batches?)")
        return
    print(summary_text(sessions, order))
