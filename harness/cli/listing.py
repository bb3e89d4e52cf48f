"""``ctxbench list``: the registered strategies, scenarios or model profiles, one line each (the first
line of a strategy's or scenario's docstring, a profile's window, recall, error base and prices).
"""

from __future__ import annotations

import argparse

from harness.cli.flags import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench list``."""
    lister = subparsers.add_parser("list", help="list registered strategies or scenarios")
    lister.add_argument("what", choices=["strategies", "scenarios", "models"])
    lister.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    """Print the asked registry as an aligned two-column listing."""
    if args.what == "strategies":
        import strategies

        print_listing([(n, _first_line(strategies.get(n))) for n in strategies.names()])
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


def print_listing(rows: list[tuple[str, str]]) -> None:
    """``name  text`` lines with the names padded to one width."""
    width = max(len(name) for name, _ in rows)
    for name, line in rows:
        print(f"{name:<{width}}  {line}")


def _first_line(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return doc[0] if doc else ""
