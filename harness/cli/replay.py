"""``ctxbench replay TRACE...``: recorded agent sessions (`harness.run.traces`) replayed under every
strategy with exact token accounting (`harness.run.accounting.account_traces`), into a run directory with
its report.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command, add_executor_flags, add_quiet, names, output_path

if TYPE_CHECKING:
    from harness.run.config import RunConfig
    from harness.run.traces import ImportedSession


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench replay``."""
    replay = add_command(
        subparsers, "replay", handle,
        help="replay recorded agent sessions under every strategy: exact tokens, cost, cache hits and "
             "hidden tool outputs per strategy",
        description="Read recorded agent sessions (trace files) and replay each under every strategy with exact "
                    "token accounting: no simulated model, the recorded calls' contexts as each strategy would "
                    "have shaped them. Writes a run directory (sessions, calls and hidden-output tables) and its "
                    "report, and prints their paths. Like a run, it resumes a directory an interrupted replay of the "
                    "same traces and config left, and refuses one of another config. Exit 0; 2 when a trace, the "
                    "config, the directory or a flag is wrong (one line on stderr).")
    replay.add_argument("traces", nargs="+", metavar="TRACE",
                        help="trace files or session directories (a directory of traces is read whole)")
    from harness.cli.flags import TRACE_FORMATS_SLOT, add_format_flag

    add_format_flag(replay, f"the traces' format, one of: {TRACE_FORMATS_SLOT}; default: detected per file")
    replay.add_argument("--config", default=None,
                        help="TOML config whose strategies (labels, params) and model profile to use (default: every "
                             "registered strategy with its defaults)")
    replay.add_argument("--strategies", help="comma-separated strategy names (or labels of --config)")
    replay.add_argument("--model", help="model profile (a built-in name or a TOML file), or the name of a model in the "
                                        "price table such as gpt-4o: window, prices and cache rules (default: the "
                                        "model the traces name, else the config's)")
    replay.add_argument("--tools", metavar="FILE",
                        help="JSON file with the tool definitions the agent was sent (a list, as the provider's "
                             "request carries them), for traces that do not record them: every call's input "
                             "counts them, as providers bill them")
    replay.add_argument("--out", help="run directory to create (default: runs/replay-<trace's name> for one "
                                      "trace, runs/replay for several)")
    add_executor_flags(replay)
    replay.add_argument("--no-resume", action="store_true", help="refuse to reuse an existing run directory")
    add_quiet(replay, "no progress on stderr")
    replay.add_argument("--no-report", action="store_true", help="do not write report.html / report.md")


def replay_config(args: argparse.Namespace, model: dict[str, object] | None = None) -> RunConfig:
    """The strategies and profile to replay under: ``--config``'s (selected by ``--strategies``), else
    `harness.run.accounting.accounting_entries` (every registered strategy; ``--strategies`` picks among them),
    priced with ``model`` (a profile table) when ``--model`` names none."""
    from harness.run.accounting import accounting_entries
    from harness.run.config import check_override, config_from_data, load_config

    wanted = names(args.strategies, "--strategies")
    where = {"jobs": args.jobs, "executor": args.executor, "scheduler": args.scheduler}
    if args.config is not None:
        config = load_config(args.config, model=args.model, **where)
        return config.select(wanted, None, source=args.config)
    entries = accounting_entries()
    if wanted is not None:
        known = {e["name"]: e for e in entries}
        unknown = [n for n in wanted if n not in known]
        if unknown:
            from harness.core.suggest import did_you_mean

            raise UsageError(f"--strategies: unknown strategy {unknown[0]!r}{did_you_mean(unknown[0], known)} "
                             f"(known: {', '.join(known)})")
        entries = [known[n] for n in wanted]
    data: dict[str, object] = {"strategies": entries}
    if args.model is not None:
        data["model"] = model_by_name(args.model)
    elif model is not None:
        data["model"] = model
    config = config_from_data(data, "--model" if args.model else None)
    given = {key: value for key, value in where.items() if value is not None}
    for key, value in given.items():
        check_override(key, value)
    return config.model_copy(update=given)


#: The longest trace name (UTF-8 bytes) the default run directory's name takes in: a file system allows 255.
MAX_DEFAULT_NAME_BYTES = 200


def default_out(paths: Sequence[Path]) -> Path:
    """Where a replay is written without ``--out``: ``runs/replay-<name>`` for one trace (the file's name
    without its suffix, or the folder's name), ``runs/replay`` for several (no one trace names them all).
    The name is made printable text: bytes that are not UTF-8 become U+FFFD, control characters ``_``."""
    if len(paths) != 1:
        return Path("runs") / "replay"
    name = os.fsencode(Path(os.path.abspath(paths[0])).stem).decode("utf-8", "replace")
    name = "".join(c if c.isprintable() else "_" for c in name)
    name = name.encode()[:MAX_DEFAULT_NAME_BYTES].decode("utf-8", "ignore")
    return Path("runs") / (f"replay-{name}" if name else "replay")


def model_by_name(value: str) -> object:
    """``--model``: a built-in profile or a profile file as everywhere, or else the name of a model the price table
    knows (``gpt-4o``): frontier's window and behaviour with that model's prices and cache rules."""
    from harness.sim.prices import price_for_model
    from harness.sim.profiles import PROFILE_NAMES

    if value in PROFILE_NAMES or Path(value).exists():
        return value
    found = price_for_model(value)
    return value if found is None else {"base": "frontier", "caching": True, **found[0]}


#: The reading notes printed on stderr (the report lists them all).
MAX_NOTES_SHOWN = 10


def trace_model_profile(sessions: Sequence[ImportedSession]) -> tuple[dict[str, object] | None, str]:
    """The profile table that prices the sessions by the model their traces name (frontier's window and
    behaviour, the model's prices and cache rules from `harness.sim.prices`), and what to tell the user: a note
    naming the price entry, or a warning when that is not possible (no model or several named, or a model the
    price table does not know: then None, and the default profile prices them)."""
    from harness.sim.prices import price_entries, price_for_model

    models = sorted({s.model for s in sessions if s.model})
    if not models:
        return None, ("warning: the traces name no model: priced with the default profile (pass --model with a "
                      "profile or a model name such as gpt-4o)")
    found = {m: price_for_model(m) for m in models}
    entries = {f[1] for f in found.values() if f is not None}
    unknown = [m for m, f in found.items() if f is None]
    if unknown:
        return None, (f"warning: model {unknown[0]!r} has no entry in the price table: priced with the default "
                      "profile (pass --model to choose one)")
    if len(entries) > 1:
        return None, (f"warning: the traces name several models ({', '.join(models)}): priced with the default "
                      "profile (pass --model, or replay each model's traces on their own)")
    fields, name = next(f for f in found.values() if f is not None)
    entry = price_entries()[name]
    return ({"base": "frontier", "caching": True, **fields},
            f"note: priced as {name} ({entry.source}; {entry.date.isoformat()}), the model the traces name")


def read_tools(path: Path) -> tuple[str, ...]:
    """The tool definitions of a ``--tools`` file (a JSON array of objects), each as JSON text with sorted keys;
    UsageError naming the file and the entry otherwise."""
    import json

    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise UsageError(f"--tools: {path}: cannot be read ({e.strerror or e})") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"--tools: {path}: not JSON ({' '.join(str(e).split())})") from None
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        value = value["tools"]
    if not isinstance(value, list) or not value:
        raise UsageError(f"--tools: {path}: expected a non-empty JSON array of tool definitions")
    for i, tool in enumerate(value):
        if not isinstance(tool, dict):
            raise UsageError(f"--tools: {path}: $[{i}]: expected a tool definition (an object)")
    return tuple(json.dumps(tool, sort_keys=True) for tool in value)


def with_tools(sessions: Sequence[ImportedSession], schemas: tuple[str, ...]) -> list[ImportedSession]:
    """``sessions`` with ``schemas`` as the declared tools of each that records none."""
    import dataclasses

    return [s if s.tool_schemas else dataclasses.replace(s, tool_schemas=schemas) for s in sessions]


def handle(args: argparse.Namespace) -> int:
    """Read the traces, replay them, write the run directory and its report; the paths on stdout."""
    from harness.cli.run import print_note
    from harness.run.accounting import account_traces
    from harness.run.traces import format_names, load_traces

    if args.format is not None and args.format not in format_names():
        raise UsageError(f"--format: unknown trace format {args.format!r} (known: {', '.join(format_names())})")
    paths = [Path(t) for t in args.traces]
    out = Path(args.out) if args.out else default_out(paths)
    # Only whether it can become the run directory: what it holds is the run directory's to judge
    # (`harness.run.directory.RunDirectory.prepare`).
    output_path(out, flag="--out", directory=True)
    config = replay_config(args)
    tools = read_tools(Path(args.tools)) if args.tools is not None else None
    notes: list[str] = []
    sessions = load_traces(paths, args.format, notes=notes)
    if not sessions:
        raise UsageError(f"{args.traces[0]}: no sessions found in the traces given")
    if tools is not None:
        sessions = with_tools(sessions, tools)
    said: list[str] = []
    if args.model is None and args.config is None:
        priced, said_of_prices = trace_model_profile(sessions)
        said.append(said_of_prices)
        if priced is not None:
            config = replay_config(args, priced)
    summary = account_traces(sessions, config, out, quiet=args.quiet, resume=not args.no_resume, notify=print_note)
    # Said once the run is written (a refusal stays one line): how the traces were read and priced.
    shown = [*notes, *(n for s in sessions for n in s.notes)]
    for note in shown[:MAX_NOTES_SHOWN]:
        print(f"ctxbench: note: {note}", file=sys.stderr)
    if len(shown) > MAX_NOTES_SHOWN:
        print(f"ctxbench: note: ... and {len(shown) - MAX_NOTES_SHOWN} more notes (the report lists them)",
              file=sys.stderr)
    for line in said:
        print(f"ctxbench: {line}", file=sys.stderr)
    print(f"ctxbench replay: {out} ({summary.sessions} recorded sessions x {len(summary.strategies)} strategies, "
          f"{summary.rows['calls.parquet']} calls; {summary.wall_s:.1f} s)")
    if not args.no_report:
        from reports.render import write_report

        for page in write_report(out):
            print(page)
    return 0
