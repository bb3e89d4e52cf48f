"""``ctxbench export-otel``: a finished run as OpenTelemetry traces, one per session, written as OTLP/JSON
lines or sent to an OTLP/HTTP receiver (`reports.otel.export_run`); and the two steps of
``ctxbench run --otel``: the exporter checked before any session replays, the run exported once its
tables are written.

Exit codes: 0 every span exported; 1 some batch failed or the receiver rejected spans (the summary line
says how many, and what the receiver said); 2 the exporter cannot be configured, no receiver accepts a
connection at the endpoint, the output path cannot or may not be written (a run directory's own file), or
the directory is not a finished run (one line naming the variable, endpoint or path). An interrupted
export leaves the output file as it was.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.cli.errors import BUG_EXIT, UsageError
from harness.cli.flags import Subparsers, add_command, add_quiet, output_path

if TYPE_CHECKING:
    from reports.otel import ExporterConfig

#: The exporters ``--to`` (and ``run --otel``) accept; `reports.otel.EXPORTERS`, repeated here so that
#: ``ctxbench --help`` does not import the library.
EXPORTERS = ("file", "otlp")
#: The file ``--to file`` writes in the run directory when ``--out`` is not given
#: (`reports.otel.DEFAULT_TRACE_FILE`).
DEFAULT_TRACE_FILE = "traces.otlp.jsonl"


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench export-otel``."""
    export = add_command(
        subparsers, "export-otel", handle,
        help="export a run's sessions as OpenTelemetry traces (OTLP/JSON file or OTLP/HTTP)",
        description="One trace per session, GenAI semantic conventions, on the simulated clock. --to otlp is "
                    "configured only by the standard variables OTEL_EXPORTER_OTLP_ENDPOINT / "
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, _HEADERS, _TIMEOUT (seconds), _COMPRESSION; "
                    "the protocol is http/protobuf. Exit 0 when every span was exported; 1 when some batch "
                    "failed or the receiver rejected spans (the summary line says how many); 2 when the "
                    "exporter cannot be configured, no receiver accepts a connection at the endpoint, --out "
                    "cannot or may not be written, or the directory is not a finished run (one line on "
                    "stderr).")
    export.add_argument("run_dir", help="a finished run directory")
    export.add_argument("--to", choices=EXPORTERS, default="file",
                        help=f"file: OTLP/JSON lines (default, RUN_DIR/{DEFAULT_TRACE_FILE}); otlp: OTLP/HTTP")
    export.add_argument("--out", help=f"with --to file: where to write (default: RUN_DIR/{DEFAULT_TRACE_FILE})")
    add_quiet(export, "no progress on stderr")


def check_exporter_config(to: str, *, out: str | Path | None = None, run_dir: str | Path) -> ExporterConfig:
    """The exporter of ``--to`` / ``run --otel`` checked before anything runs; UsageError (one line naming
    the variable or path, exit 2) when it cannot be configured. ``out`` is the file of ``--to file``
    (default: ``run_dir/traces.otlp.jsonl``, whose directory the run may still have to make): never a run
    directory's own table or manifest, never a path that cannot be written (`harness.core.output_paths`).
    For ``otlp``, something must accept a connection at the endpoint (`reports.otel.check_receiver`):
    a receiver that is not running stops the command before any session replays or any span is made."""
    from reports.otel import OtelConfigError, check_receiver
    from reports.otel import check_exporter_config as check

    if to != "file" and out is not None:
        raise UsageError(f"--out is for --to file (the {to} exporter is configured by OTEL_EXPORTER_OTLP_* "
                         "variables)")
    path = Path(out) if out is not None else Path(run_dir) / DEFAULT_TRACE_FILE
    if to == "file":
        if out is not None:
            output_path(out, flag="--out", directory=False)
        elif _is_directory(run_dir):  # a run directory still to be made is checked by the run
            output_path(path, flag="otel", directory=False)
    try:
        config = check(to, path=path if to == "file" else None, parent_made_later=out is None)
        check_receiver(config)
    except OtelConfigError as e:
        raise UsageError(f"otel: {e}") from None
    return config


def _is_directory(path: str | Path) -> bool:
    try:
        return Path(path).is_dir()
    except OSError:  # a name too long: what reading the run reports
        return False


def export_run(run_dir: str | Path, config: ExporterConfig, *, quiet: bool = False,
               summary_to: TextIO | None = None) -> int:
    """Export the finished run in ``run_dir`` with the checked ``config``, progress on stderr (unless
    ``quiet``) and the summary line on ``summary_to`` (stdout by default; stderr when stdout is for
    ``--json``); the exit code: 0, or 1 when some span was not exported (said on stderr too). UsageError
    when the directory is not a finished run."""
    from harness.run.progress import Progress
    from reports.otel import OtelConfigError, OtelInputError
    from reports.otel import export_run as export

    bar: Progress | None = None

    def advance(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = Progress(total, enabled=not quiet, what="sessions exported")
        bar.advance(1)

    try:
        summary = export(run_dir, config, progress=advance)
    except (OtelConfigError, OtelInputError) as e:
        raise UsageError(f"export-otel: {e}") from None
    finally:
        if bar is not None:
            bar.close()
    print(f"ctxbench export-otel: {summary.line()}", file=summary_to or sys.stdout)
    if not summary.ok:
        print(f"ctxbench: export-otel: {summary.spans_failed} of {summary.spans} spans were not exported "
              f"({summary.batches_failed} of {summary.batches} batches failed{summary.rejection()})",
              file=sys.stderr)
        return BUG_EXIT
    return 0


def handle(args: argparse.Namespace) -> int:
    """Check the exporter, then export the run; the exit code."""
    run_dir = Path(args.run_dir)
    config = check_exporter_config(args.to, out=args.out, run_dir=run_dir)
    if not run_dir.is_dir():  # before the file's directory is taken for granted below
        raise UsageError(f"export-otel: {run_dir}: {'not a directory' if run_dir.exists() else 'no such directory'}")
    return export_run(run_dir, config, quiet=args.quiet)
