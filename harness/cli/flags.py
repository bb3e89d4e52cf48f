"""Flags several subcommands share, declared once so they cannot drift, and the readers of their values:
the run flags of `run` and `sweep` (and `load_run_config`, which applies them to a config), comma-separated
name lists, ``--shard K/N`` and ``--param`` values, and ``--format`` of `replay` and `fit`, whose help lists
the trace formats of the registry.
"""

from __future__ import annotations

import argparse
import copy
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from harness.cli.errors import UsageError

if TYPE_CHECKING:
    from harness.core.shard import Shard
    from harness.run.config import RunConfig

#: What ``add_subparsers`` returns: each subcommand module adds its parser to it.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: What runs a subcommand: its parsed arguments in, its exit code out.
Handler: TypeAlias = Callable[[argparse.Namespace], int]

#: Run flags whose value replaces the config field of the same name (None = not given).
CONFIG_OVERRIDES = ("sessions", "seed", "model", "jobs", "executor", "scheduler")


def add_command(subparsers: Subparsers, name: str, handle: Handler | None = None, *, help: str,
                description: str) -> argparse.ArgumentParser:
    """Declare the subcommand ``name``, listed with ``help`` in its parent's help and described by
    ``description`` in its own; its flags are never abbreviated, and ``handle`` runs it (None for a command
    whose own subcommands have the handlers)."""
    parser = subparsers.add_parser(name, help=help, description=description, allow_abbrev=False)
    if handle is not None:
        parser.set_defaults(func=handle)
    return parser


def add_quiet(parser: argparse.ArgumentParser, help: str) -> None:
    """``--quiet``, with ``help`` saying what the command leaves out: the commands print different things on
    stderr, so one shared text would be wrong for some of them."""
    parser.add_argument("--quiet", action="store_true", help=help)


def add_executor_flags(parser: argparse.ArgumentParser) -> None:
    """``--jobs``, ``--executor`` and ``--scheduler``: where the batches of a run (`run`, `sweep`, `replay`)
    are worked on."""
    parser.add_argument("--jobs", type=int, help="worker processes (0 = one per CPU)")
    parser.add_argument("--executor", choices=["serial", "process", "dask"],
                        help="where batches run: serial (this process), process (local worker processes) or dask "
                             "(--scheduler's cluster, else a local one); never changes the tables")
    parser.add_argument("--scheduler", help="dask scheduler address, e.g. tcp://HOST:8786")


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags `run` and `sweep` share: what to run, where, and how to print it."""
    parser.add_argument("--sessions", type=int,
                        help="sessions to generate, each replayed under every strategy (replaces the config's)")
    parser.add_argument("--strategies", help="comma-separated labels or names from the config, or any registered "
                                             "strategy (`ctxbench list strategies`), run with its defaults")
    parser.add_argument("--scenarios", help="comma-separated scenario names (`ctxbench list scenarios`; replaces "
                                            "the config's)")
    parser.add_argument("--model", help="model profile: a name (`ctxbench list models`) or a profile TOML file "
                                        "(`ctxbench calibrate` writes one); replaces the config's")
    parser.add_argument("--seed", type=int, help="root seed of the sessions (replaces the config's): the same seed "
                                                 "gives the same sessions and tables")
    add_executor_flags(parser)
    parser.add_argument("--shard", help="run the deterministic slice K/N of the batches (join the N shard "
                                        "directories with `ctxbench merge`)")
    parser.add_argument("--out", help="run directory (default: runs/<config name>)")
    parser.add_argument("--no-resume", action="store_true", help="refuse to reuse an existing run directory")
    add_quiet(parser, "no progress bar, no header line")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-report", action="store_true", help="do not write report.html / report.md at the end")
    parser.add_argument("--otel", choices=["file", "otlp"],
                        help="export the run as OpenTelemetry traces once its tables are written: file "
                             "(RUN_DIR/traces.otlp.jsonl) or otlp (OTLP/HTTP, set by OTEL_EXPORTER_OTLP_* variables)")


#: Where the help text of `add_format_flag` names the trace formats, filled in when the help is printed.
TRACE_FORMATS_SLOT = "{trace formats}"


def add_format_flag(parser: argparse.ArgumentParser, help: str) -> None:
    """``--format`` of the commands that read traces. ``help`` names the trace formats at `TRACE_FORMATS_SLOT`:
    every format of the registry, built-in and third-party, each with its one-line description. Building the
    parser imports no library module, so the formats are looked up only when the help is printed (the parser's
    formatter becomes `_TraceFormatsHelp`)."""
    parser.add_argument("--format", default=None, help=help)
    parser.formatter_class = _TraceFormatsHelp


class _TraceFormatsHelp(argparse.HelpFormatter):
    """A help formatter that fills `TRACE_FORMATS_SLOT` in when it formats an option's help: that is only
    when help is printed, never while the parser is built (argparse may check help texts then)."""

    def _format_action(self, action: argparse.Action) -> str:
        text = action.help
        if isinstance(text, str) and TRACE_FORMATS_SLOT in text:
            action = copy.copy(action)
            # Doubled: argparse expands ``%(default)s`` and the like in the filled-in text.
            action.help = text.replace(TRACE_FORMATS_SLOT, _trace_formats_listed().replace("%", "%%"))
        return super()._format_action(action)

    def _split_lines(self, text: str, width: int) -> list[str]:
        # Format names hold hyphens (openhands-events): a line breaks between words, never inside a name.
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def _trace_formats_listed() -> str:
    """The trace formats as the help lists them: ``name (description), ...``. A third-party format that cannot
    be loaded leaves the built-ins listed and says so: help still prints, the command itself will refuse."""
    from harness.core.registry import PluginError
    from harness.run.traces.registry import BUILTIN_FORMATS, trace_formats

    try:
        formats, trouble = trace_formats(), ""
    except PluginError as e:
        formats, trouble = BUILTIN_FORMATS, f"; not listed: {e}"
    return ", ".join(f"{f.name} ({f.description})" for f in formats) + trouble


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


def shard(text: str | None) -> Shard | None:
    """``--shard K/N`` as a `Shard`; UsageError unless K and N are decimal numbers with 1 <= K <= N."""
    if text is None:
        return None
    # Imported here: building the parser (`ctxbench --help`) loads no library module.
    from harness.core.shard import Shard, ShardError

    try:
        return Shard.parse(text)
    except ShardError as e:
        raise UsageError(str(e)) from None


def output_path(path: str | Path, *, flag: str, directory: bool) -> Path:
    """``path`` checked as an output of ``flag`` before any work (`harness.core.output_paths`): UsageError,
    one line naming the flag and the path, when it cannot or may not be written (a run directory's own
    file, a file where a directory is needed or the reverse, a dangling link, a folder that cannot be
    written in, a name too long)."""
    from harness.core.output_paths import OutputPathError, check_output_path

    try:
        check_output_path(path, flag=flag, directory=directory)
    except OutputPathError as e:
        raise UsageError(str(e)) from None
    return Path(path)


def param_value(text: str) -> Any:
    """One ``--param`` value: JSON when it parses (numbers, booleans, objects), the text otherwise."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def model_override(model: str | None) -> str | dict[str, Any] | None:
    """``--model``: a built-in profile's name as given, or a profile TOML file (what `ctxbench calibrate`
    writes, read by `harness.sim.profiles.read_toml`) as its table, named after the file unless it names
    itself, so that the run's config.toml holds the profile itself. ConfigError naming the file when it
    cannot be read; a name that is neither is left to the config's check (which suggests a profile)."""
    from harness.run.config import ConfigError
    from harness.sim.profiles import PROFILE_NAMES, TomlFileError, read_toml

    if model is None or model in PROFILE_NAMES or not (model.endswith(".toml") or Path(model).is_file()):
        return model
    try:
        table = read_toml(Path(model))
    except TomlFileError as e:
        raise ConfigError(f"--model: {e}") from None
    return {"name": Path(model).stem} | table


def load_run_config(args: argparse.Namespace) -> RunConfig:
    """The config of ``args.config`` (the embedded default when None) with whichever run flags ``args``
    has applied: the overrides, then the ``--strategies`` / ``--scenarios`` selection. ConfigError
    names the file and field."""
    from harness.run.config import load_config

    overrides = {key: getattr(args, key, None) for key in CONFIG_OVERRIDES}
    overrides["model"] = model_override(overrides["model"])
    config = load_config(args.config, **overrides)
    return config.select(names(getattr(args, "strategies", None), "--strategies"),
                         names(getattr(args, "scenarios", None), "--scenarios"), source=args.config)
