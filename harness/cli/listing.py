"""``ctxbench list``: the registered strategies, scenarios or model profiles, one line each (the first
line of a strategy's or scenario's docstring, a profile's window, recall, error base and prices), or
the run directories under a folder (`reports.inputs.list_runs`).
"""

from __future__ import annotations

import argparse

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench list``."""
    lister = add_command(
        subparsers, "list", handle,
        help="list registered strategies, scenarios or models, or the run directories under a folder",
        description="Print one line per registered strategy (with where its semantics come from), scenario family "
                    "or model profile (window, recall, prices), or per run directory under a folder (its state, "
                    "rows, strategies, model). Writes nothing. Exit 0; 2 on a usage error.")
    lister.add_argument("what", choices=["strategies", "scenarios", "models", "runs"],
                        help="what to list: the names a config or flag takes, or the run directories")
    lister.add_argument("folder", nargs="?", default=None,
                        help="with `runs`: the folder to look in (default: runs)")


def handle(args: argparse.Namespace) -> int:
    """Print the asked registry (or the runs) as an aligned two-column listing."""
    if args.folder is not None and args.what != "runs":
        raise UsageError(f"list {args.what}: takes no folder (only `list runs FOLDER` does)")
    if args.what == "runs":
        return list_runs(args.folder or "runs")
    if args.what == "strategies":
        import strategies

        # The research set first (what a config that names none runs), then the SDK managers; each with
        # where its semantics come from.
        ordered = strategies.default_names() + [n for n in strategies.names() if strategies.get(n).sdk]
        print_listing([(n, f"{_first_line(strategies.get(n))} [{'SDK: ' if strategies.get(n).sdk else ''}"
                           f"{strategies.get(n).source or 'no source given'}]") for n in ordered])
        return 0
    if args.what == "scenarios":
        import scenarios

        print_listing([(n, _first_line(scenarios.get(n))) for n in scenarios.names()])
        return 0
    from harness.sim.profiles import PROFILE_NAMES, profile

    rows = []
    for name in PROFILE_NAMES:
        p = profile(name)
        rows.append((name, f"window {p.window_tokens:,} tokens, recall half-length {p.L_half:,.0f}, "
                           f"malformed base {p.p_malformed_base:g}, ${p.price_in:g}/${p.price_out:g} per M in/out"))
    print_listing(rows)
    return 0


def list_runs(folder: str) -> int:
    """One line per run directory under ``folder``: its state, rows, strategies, model and when it finished."""
    from reports.inputs import ReportInputError
    from reports.inputs import list_runs as find_runs

    try:
        entries = find_runs(folder)
    except ReportInputError as e:
        raise UsageError(f"list runs: {e}") from None
    if not entries:
        print(f"no run directories under {folder}")
        return 0
    rows = []
    for entry in entries:
        if entry.state != "finished":
            rows.append((str(entry.path), entry.state))
            continue
        kind = " (merged)" if entry.merged else f" (shard {entry.shard})" if entry.shard else ""
        rows.append((str(entry.path), f"finished{kind}: {entry.session_rows or 0:,} session rows, "
                                      f"{entry.strategies} strategies, model {entry.model}, {entry.finished}, "
                                      f"config {str(entry.config_hash)[:12]}"))
    print_listing(rows)
    return 0


def print_listing(rows: list[tuple[str, str]]) -> None:
    """``name  text`` lines with the names padded to one width; a control character in a name or a text
    (a directory named with a line break, a manifest field holding a terminal escape) is shown escaped,
    so that each row stays one line and the terminal is left alone."""
    rows = [(_printable(name), _printable(line)) for name, line in rows]
    width = max(len(name) for name, _ in rows)
    for name, line in rows:
        print(f"{name:<{width}}  {line}")


def _printable(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _first_line(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return doc[0] if doc else ""
