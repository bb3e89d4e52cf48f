"""``ctxbench scenario show``: print a generated session script (`scenarios.generate`) as JSON, or a
short summary of it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command, param_value
from harness.cli.listing import print_listing

#: The largest seed a script can be shown for: session seeds are 64-bit (`harness.core.crn.session_seed`),
#: and the sessions table's seed column is what a user copies here.
MAX_SESSION_SEED = 2**64 - 1


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench scenario`` and its one subcommand, ``show``."""
    scenario = add_command(
        subparsers, "scenario", help="inspect generated session scripts",
        description="Inspect the session scripts a scenario family generates: the same seed and params always give "
                    "the same script.")
    scenario_sub = scenario.add_subparsers(dest="scenario_command", metavar="SUBCOMMAND", required=True,
                                           help="what to do (one subcommand: show)")
    show = add_command(
        scenario_sub, "show", handle_show, help="print a generated script as JSON",
        description="Generate the script of one scenario family at one seed and print it as JSON (or a short "
                    "summary with --summary); writes nothing. Exit 0; 2 when the name, the seed or a --param is "
                    "wrong (one line on stderr).")
    show.add_argument("name", help="scenario family (`ctxbench list scenarios`)")
    show.add_argument("--seed", type=int, default=0,
                      help="session seed, e.g. a seed column value of a run's sessions.parquet (default: 0)")
    show.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                      help="a generator parameter, e.g. --param turns=40 (repeatable)")
    show.add_argument("--summary", action="store_true", help="print a short table instead of the JSON")


def handle_show(args: argparse.Namespace) -> int:
    """Generate the script of scenario ``name`` at ``seed`` with the ``--param`` values and print it."""
    from pydantic import ValidationError

    import scenarios
    from harness.core.suggest import unknown_param
    from harness.run.config import extra_key, first_error
    from scenarios.base import script_summary

    if not 0 <= args.seed <= MAX_SESSION_SEED:
        raise UsageError(f"--seed: expected 0 to 2**64-1 (a session seed), got {args.seed}")
    params = generator_params(args.param)
    try:
        script = scenarios.generate(args.name, args.seed, **params)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from None
    except ValidationError as e:
        key = extra_key(e)
        if key is not None:
            known = scenarios.get(args.name).Params.model_fields
            raise UsageError(f"--param: {unknown_param(f'scenario {args.name}', key, known)}") from None
        raise UsageError(f"scenario {args.name}: {first_error(e)}") from None
    if args.summary:
        print_listing([(k, str(v)) for k, v in script_summary(script).items()])
    else:
        print(script.model_dump_json(indent=2))
    return 0


def generator_params(pairs: Sequence[str]) -> dict[str, Any]:
    """``--param KEY=VALUE`` pairs as generator keyword arguments; each value read by `param_value`."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param: expected KEY=VALUE, got {pair!r}")
        if key in params:
            raise UsageError(f"--param: {key} is given twice")
        params[key] = param_value(raw)
    return params

