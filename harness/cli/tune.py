"""``ctxbench tune CONFIG --strategy NAME``: a multi-objective search over one strategy's params
(`harness.run.tune`), scored by the report's metrics (`reports.tune.objective_values`), then its front and page
(`reports.tune.write_tune_report`); ``--traces`` tunes on recorded sessions with the accounting replay.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command, add_executor_flags, add_quiet, names, output_path

if TYPE_CHECKING:
    from harness.run.config import RunConfig, TuneRange, TuneSpec
    from harness.run.tune import Objective, TuneSettings

#: The objectives without ``--objectives`` or ``[tune] objectives``: simulated, and on recorded sessions.
DEFAULT_OBJECTIVES = ("success_rate", "cost_per_solved_session")
DEFAULT_TRACE_OBJECTIVES = ("input_tokens", "needed_hidden")
#: The fewest sessions of a first racing rung chosen without ``--min-sessions``: fewer say little.
MIN_FIRST_RUNG = 10


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench tune``."""
    tune = add_command(
        subparsers, "tune", handle,
        help="search one strategy's params for the Pareto front of two or three metrics (optuna), "
             "every trial on the same sessions, raced over the session count",
        description="Search the params of one strategy (--strategy, or the config's [tune] strategy) for the "
                    "Pareto front of two or three metrics (--objectives; default success_rate up and "
                    "cost_per_solved_session down). Every trial replays the same sessions as the default settings "
                    "(trial 0, always run on every session); trials are raced by successive halving from "
                    "--min-sessions to the full session count. The study lives in the run directory (study.db) and "
                    "a killed tune resumes with the same command; writes trials.parquet, front.parquet, "
                    "front/<label>.toml (ready configs), tune.html and tune.md, and prints the front. With --traces, "
                    "tunes on recorded sessions with exact token accounting. Exit 0; 2 on a usage, config, "
                    "directory or study error (one line on stderr); 130 / 143 interrupted (finished trials kept).")
    tune.add_argument("config", nargs="?", help="TOML config, maybe with a [tune] table (default: the embedded "
                                                "examples/default.toml; with --traces: the strategies' profile)")
    tune.add_argument("--strategy", help="the strategy to tune (`ctxbench list strategies`; replaces [tune] strategy)")
    tune.add_argument("--traces", nargs="+", metavar="TRACE",
                      help="tune on these recorded sessions (trace files or folders) instead of simulated ones, "
                           "priced as the model they name unless --model or the config says otherwise")
    from harness.cli.flags import TRACE_FORMATS_SLOT, add_format_flag

    add_format_flag(tune, f"with --traces, the traces' format, one of: {TRACE_FORMATS_SLOT}; default: detected per "
                          "file")
    tune.add_argument("--trials", type=int, help="trials, the default settings included (default 30)")
    tune.add_argument("--objectives", help="two or three comma-separated metric names, e.g. success_rate,"
                                           "cost_per_solved_session,latency_p95 (direction from the metric)")
    tune.add_argument("--param", action="append", default=[], metavar="NAME=LOW:HIGH | NAME=V1,V2,...",
                      help="the range (LOW:HIGH, LOW:HIGH:log) or choices of one param, e.g. window_size=10:200 "
                           "(repeatable; replaces [tune.params.NAME])")
    tune.add_argument("--min-sessions", type=int,
                      help="sessions of the first racing rung (default [tune] min_sessions, else a tenth of the "
                           "sessions when that is 10 or more); 0: no racing, every trial on every session")
    tune.add_argument("--eta", type=int, help="racing ratio: the best 1/eta of a rung go on, eta times the sessions "
                                              "(default 3)")
    tune.add_argument("--sampler", choices=["tpe", "nsga2"],
                      help="optuna's sampler: tpe (multi-objective TPE, the default) or nsga2 (NSGA-II)")
    tune.add_argument("--sessions", type=int, help="the full session count (replaces the config's)")
    tune.add_argument("--seed", type=int, help="root seed of the sessions and of the sampler (replaces the config's)")
    tune.add_argument("--model", help="model profile name (replaces the config's)")
    add_executor_flags(tune)
    tune.add_argument("--out", help="tune directory (default: runs/<config name>-tune-<strategy>)")
    add_quiet(tune, "no progress or header lines on stderr")
    tune.add_argument("--no-report", action="store_true", help="do not write tune.html / tune.md (front.parquet is "
                                                               "still written)")


def handle(args: argparse.Namespace) -> int:
    """Tune, write the report, print the front."""
    from harness.run.tune import TuneError, tune
    from harness.run.tune_space import SpaceError
    from reports.tune import front_text, objective_values, write_front, write_tune_report

    try:
        config, sessions = _base(args)
        full = len(sessions) if sessions is not None else config.sessions
        settings = tune_settings(args, config, full=full, accounting=sessions is not None)
    except SpaceError as e:
        raise UsageError(str(e)) from None
    from harness.run.tune import AccountingEvaluator, SimulatedEvaluator

    evaluator = AccountingEvaluator(sessions, config) if sessions is not None else SimulatedEvaluator(config)
    stem = ("traces" if args.traces else Path(args.config).stem if args.config else "default")
    out = output_path(args.out if args.out else Path("runs") / f"{stem}-tune-{settings.strategy}", flag="--out",
                      directory=True)
    names_ = [o.name for o in settings.objectives]

    def evaluate(frame: Any, labels: Any) -> dict[str, list[float]]:
        return objective_values(frame, labels, names_)

    try:
        result = tune(settings, evaluator, evaluate, out, quiet=args.quiet)
    except TuneError as e:
        raise UsageError(str(e)) from None
    frame = write_front(out)
    if not args.no_report:
        written = write_tune_report(out)
        if not args.quiet:
            print(f"ctxbench: tune report: {', '.join(str(p) for p in written)}", file=sys.stderr)
    if not args.quiet:
        print(f"ctxbench tune: {out}: {len(result.trials)} trials, {len(result.front)} on the front; cost "
              f"{result.replays} replays = {result.cost_ratio:.2f} x one run of the config at "
              f"{result.rungs[-1]} sessions ({result.config_replays} replays); {result.wall_s:.1f} s",
              file=sys.stderr)
    print(front_text(frame))
    return 0


def _base(args: argparse.Namespace) -> tuple[RunConfig, list[Any] | None]:
    """The config the trials run under, and the recorded sessions with --traces (None otherwise)."""
    from harness.run.config import load_config

    overrides = {"sessions": args.sessions, "seed": args.seed, "model": args.model, "jobs": args.jobs,
                 "executor": args.executor, "scheduler": args.scheduler}
    if not args.traces:
        if args.format is not None:
            raise UsageError("--format: the format of --traces; give --traces too")
        return load_config(args.config, **overrides), None
    from harness.cli.replay import trace_model_profile
    from harness.run.traces import format_names, load_traces

    if args.format is not None and args.format not in format_names():
        raise UsageError(f"--format: unknown trace format {args.format!r} (known: {', '.join(format_names())})")

    if args.sessions is not None:
        raise UsageError("--sessions: with --traces the sessions are the recorded ones")
    overrides.pop("sessions")
    if args.config is not None:
        config = load_config(args.config, **overrides)
    else:
        from harness.run.config import check_override, config_from_data

        for key, value in overrides.items():
            if value is not None:
                check_override(key, value)
        config = config_from_data({k: v for k, v in overrides.items() if v is not None}, "--traces")
    sessions = load_traces([Path(t) for t in args.traces], args.format, notes=[])
    if not sessions:
        raise UsageError(f"{args.traces[0]}: no sessions found in the traces given")
    if args.model is None and args.config is None:  # as `ctxbench replay` prices them
        priced, _ = trace_model_profile(sessions)
        if priced is not None:
            config = config.model_copy(update={"model": priced})
    return config, list(sessions)


def tune_settings(args: argparse.Namespace, config: RunConfig, *, full: int, accounting: bool) -> TuneSettings:
    """What to search: the config's ``[tune]`` table with the flags applied (a flag wins), checked. ``full`` is
    the full session count (the config's, or the recorded sessions'): without a first rung given, racing
    starts at a tenth of it when that is 10 sessions or more, else every trial runs on all of them."""
    from harness.run.config import TuneSpec
    from harness.run.tune import DEFAULT_SAMPLER, TuneSettings
    from harness.run.tune_space import parse_param_flag, search_space

    spec = config.tune or TuneSpec()
    where = f"{args.config or 'the default config'}: tune"
    strategy = args.strategy or spec.strategy
    if strategy is None:
        raise UsageError("--strategy: name the strategy to tune (or set [tune] strategy in the config)")
    trials = spec.trials if args.trials is None else args.trials
    if not 2 <= trials <= 10_000:
        raise UsageError(f"--trials: expected 2 to 10000 trials (the default settings and at least one more), "
                         f"got {trials}")
    objectives = _objectives(args.objectives, spec, accounting, where)
    ranges: dict[str, TuneRange] = dict(spec.params)
    origins: dict[str, str] = {}
    for text in args.param:
        name, given = parse_param_flag(text)
        if name in origins:
            raise UsageError(f"--param: {name} is given twice")
        ranges[name], origins[name] = given, "--param"
    entries = [e for e in config.configured_entries() if e.name == strategy] if config.strategies else []
    base = entries[0] if len(entries) == 1 else None
    space = search_space(strategy, ranges, base_params=base.params if base is not None else None,
                         where=f"{where}.params", origins=origins)
    min_sessions = spec.min_sessions if args.min_sessions is None else args.min_sessions
    if args.min_sessions is None and spec.min_sessions is None:
        min_sessions = full // 10 if full >= 10 * MIN_FIRST_RUNG else None
    if min_sessions is not None and min_sessions < 0:
        raise UsageError(f"--min-sessions: expected 0 (no racing) or more, got {min_sessions}")
    eta = spec.eta if args.eta is None else args.eta
    if not 2 <= eta <= 100:
        raise UsageError(f"--eta: expected 2 to 100, got {eta}")
    if base is not None:
        base = base.model_copy(update={"label": None})
    return TuneSettings(space, objectives, trials, min_sessions or None, eta,
                        args.sampler or spec.sampler or DEFAULT_SAMPLER, config.seed, base)


def _objectives(text: str | None, spec: TuneSpec, accounting: bool, where: str) -> tuple[Objective, ...]:
    from harness.core.suggest import did_you_mean
    from harness.run.tune import Objective
    from reports.tune import known_objectives, objective_metric

    listed = names(text, "--objectives")
    flag = "--objectives" if listed is not None else f"{where}.objectives"
    chosen = listed if listed is not None else spec.objectives
    if chosen is None:
        chosen = list(DEFAULT_TRACE_OBJECTIVES if accounting else DEFAULT_OBJECTIVES)
    known = known_objectives(accounting)
    for name in chosen:
        if name not in known:
            raise UsageError(f"{flag}: unknown metric {name!r}{did_you_mean(name, known)} (known"
                             f"{' on recorded sessions' if accounting else ''}: {', '.join(known)})")
    if not 2 <= len(chosen) <= 3:
        raise UsageError(f"{flag}: give two or three metrics, got {len(chosen)}")
    if len(set(chosen)) != len(chosen):
        raise UsageError(f"{flag}: a metric appears twice")
    return tuple(Objective(n, not objective_metric(n).lower_is_better) for n in chosen)


