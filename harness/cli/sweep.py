"""``ctxbench sweep``: a run whose config has a ``[sweep]`` table, from the file or from flags
(`RunConfig.with_sweep`), run like ``ctxbench run`` into one run directory.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command, add_run_flags, load_run_config, names, param_value
from harness.cli.run import execute

if TYPE_CHECKING:
    from harness.run.config import RunConfig


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench sweep``: the run flags plus the grid's ``--param`` and ``--models``."""
    sweep = add_command(
        subparsers, "sweep", handle,
        help="a grid over strategy params and model profiles in one run directory, "
             "with a sweep page plotting every headline metric against each param",
        description="Run a grid, one factor at a time, over strategy params (--param, the config's [sweep.params]) "
                    "crossed with model profiles (--models, [sweep] models), every variant on the same sessions, "
                    "into one run directory like `ctxbench run`'s, plus sweep.html and sweep.md. Without a config: "
                    "with --param or --models, the default run config (what `ctxbench run` runs without one) with "
                    "only those factors swept, on its model unless --models says otherwise; with neither, the "
                    "embedded examples/sweep.toml and its whole grid (several params on four profiles). Exit codes "
                    "as for `ctxbench run`.")
    sweep.add_argument("config", nargs="?",
                       help="TOML config, with or without a [sweep] table (default: see above)")
    sweep.add_argument("--param", action="append", default=[], metavar="STRATEGY.PARAM=V1,V2,...",
                       help="values of one strategy param, e.g. sliding_window.window_size=10,20,40,80 (repeatable; "
                            "adds to or replaces the config's [sweep.params])")
    sweep.add_argument("--models", help="comma-separated model profiles to cross the grid with (`ctxbench list "
                                        "models`; replaces the config's [sweep] models)")
    add_run_flags(sweep)


def handle(args: argparse.Namespace) -> int:
    """Run the config of `sweep_config`."""
    return execute(sweep_config(args), args, default_stem="sweep")


def sweep_config(args: argparse.Namespace) -> RunConfig:
    """The config a sweep runs, with its grid extended by ``--param`` and ``--models``: ``args.config``'s;
    without a config, the default run config (what ``ctxbench run`` runs without one) when a grid flag is
    given, so only the flags' factors are swept; with no config and no grid flag, the embedded
    examples/sweep.toml and its grid. ConfigError names the file (or the default config) and the flag."""
    from harness.run.config import DEFAULT_SWEEP

    if args.config is None and not args.param and args.models is None:
        args.config = str(DEFAULT_SWEEP)
    config = load_run_config(args)
    params = sweep_params(args.param)
    models = names(args.models, "--models")
    # The file's own [sweep] was checked on loading, so what fails now is the flags' grid: say so.
    given = " and ".join(flag for flag, value in (("--param", params), ("--models", models)) if value)
    base = args.config if args.config is not None else "the default config"
    return config.with_sweep(params, models, source=f"{base} with {given}" if given else base)


def sweep_params(pairs: Sequence[str]) -> dict[str, list[Any]]:
    """``--param STRATEGY.PARAM=V1,V2,...`` pairs as the grid's axes; each value read by `param_value`."""
    params: dict[str, list[Any]] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key or not raw:
            raise UsageError(f"--param: expected STRATEGY.PARAM=V1,V2,..., got {pair!r}")
        if key in params:
            raise UsageError(f"--param: {key} is given twice (list every value in one --param)")
        params[key] = [param_value(v) for v in raw.split(",")]
    return params
