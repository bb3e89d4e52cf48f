"""``ctxbench validate``: load and wire a config (`harness.run.config.load_config`) without running it,
and print what it would run.
"""

from __future__ import annotations

import argparse

from harness.cli.flags import Subparsers, add_command, load_run_config


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench validate``."""
    validate = add_command(
        subparsers, "validate", handle, help="check a config (loading and wiring) without running it",
        description="Load a run config and check it as `ctxbench run` would (every strategy, scenario, profile and "
                    "param, and the [sweep] grid) without running it or writing anything; print one line: its "
                    "sessions, strategies, sweep variants and config hash. Exit 0 when it is valid; 2 otherwise, "
                    "with one line on stderr naming the file and field.")
    validate.add_argument("config", help="the TOML config to check")


def handle(args: argparse.Namespace) -> int:
    """One ``<config>: ok (...)`` line with its sessions, strategies, sweep size and config hash."""
    config = load_run_config(args)
    variants = len(config.variants())
    grid = f", {variants} variants in the sweep" if config.sweep is not None else ""
    print(f"{args.config}: ok ({config.sessions} sessions, {len(config.strategy_entries())} strategies{grid}, "
          f"config hash {config.config_hash()[:12]})")
    return 0
