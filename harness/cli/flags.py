"""Flags several subcommands share, declared once so they cannot drift, and the readers of their values:
the run flags of `run` and `sweep` (and `load_run_config`, which applies them to a config), comma-separated
name lists, ``--shard K/N`` and ``--param`` values.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, TypeAlias

from harness.cli.errors import UsageError

if TYPE_CHECKING:
    from harness.run.config import RunConfig

#: What ``add_subparsers`` returns: each subcommand module adds its parser to it.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: Run flags whose value replaces the config field of the same name (None = not given).
CONFIG_OVERRIDES = ("sessions", "seed", "model", "jobs", "executor", "scheduler")


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags `run` and `sweep` share: what to run, where, and how to print it."""
    parser.add_argument("--sessions", type=int)
    parser.add_argument("--strategies", help="comma-separated names or labels from the config")
    parser.add_argument("--scenarios", help="comma-separated scenario names (replaces the config's)")
    parser.add_argument("--model", help="model profile name")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--jobs", type=int, help="worker processes (0 = one per CPU)")
    parser.add_argument("--executor", choices=["serial", "process", "dask"])
    parser.add_argument("--scheduler", help="dask scheduler address, e.g. tcp://HOST:8786")
    parser.add_argument("--shard", help="run the deterministic slice K/N of the batches")
    parser.add_argument("--out", help="run directory (default: runs/<config name>)")
    parser.add_argument("--no-resume", action="store_true", help="refuse to reuse an existing run directory")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no header line")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-report", action="store_true", help="do not write report.html / report.md at the end")
    parser.add_argument("--otel", choices=["file", "otlp"],
                        help="export the run as OpenTelemetry traces once its tables are written: file "
                             "(RUN_DIR/traces.otlp.jsonl) or otlp (OTLP/HTTP, set by OTEL_EXPORTER_OTLP_* variables)")


def names(text: str | None, flag: str) -> list[str] | None:
    """A comma-separated list of names (``--strategies``, ``--scenarios``, ``--models``); None when not given.
    UsageError naming ``flag`` when it is given but names nothing (``--strategies ,,``): running every
    entry instead would be a run nobody asked for."""
    if text is None:
        return None
    listed = [n.strip() for n in text.split(",") if n.strip()]
    if not listed:
        raise UsageError(f"{flag}: expected comma-separated names, got {text!r}")
    return listed


def shard(text: str | None) -> tuple[int, int] | None:
    """``--shard K/N`` as (K, N); UsageError unless 1 <= K <= N."""
    if text is None:
        return None
    k, sep, n = text.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise UsageError(f"--shard: expected K/N with 1 <= K <= N, got {text!r}")
    return int(k), int(n)


def param_value(text: str) -> Any:
    """One ``--param`` value: JSON when it parses (numbers, booleans, objects), the text otherwise."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def load_run_config(args: argparse.Namespace) -> RunConfig:
    """The config of ``args.config`` (the embedded default when None) with whichever run flags ``args``
    has applied: the overrides, then the ``--strategies`` / ``--scenarios`` selection. ConfigError
    names the file and field."""
    from harness.run.config import load_config

    overrides = {key: getattr(args, key, None) for key in CONFIG_OVERRIDES}
    config = load_config(args.config, **overrides)
    return config.select(names(getattr(args, "strategies", None), "--strategies"),
                         names(getattr(args, "scenarios", None), "--scenarios"), source=args.config)
