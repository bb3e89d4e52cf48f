"""The ``ctxbench`` command: parses arguments and calls one library function per subcommand.

Exit codes: 0 success, 1 a compare gate failed or sessions errored, 2 usage error (one line on stderr
naming what is wrong, no traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

import harness


class UsageError(Exception):
    """A mistake in the command line; reported as one line, exit code 2."""


def _print_listing(rows: list[tuple[str, str]]) -> None:
    width = max(len(name) for name, _ in rows)
    for name, line in rows:
        print(f"{name:<{width}}  {line}")


def _first_line(obj: object) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    return doc[0] if doc else ""


def _list(args: argparse.Namespace) -> int:
    if args.what == "strategies":
        import strategies

        _print_listing([(n, _first_line(strategies.get(n))) for n in strategies.names()])
        return 0
    if args.what == "scenarios":
        import scenarios

        _print_listing([(n, _first_line(scenarios.get(n))) for n in scenarios.names()])
        return 0
    from harness.sim.profiles import PROFILE_NAMES, profile

    rows = []
    for name in PROFILE_NAMES:
        p = profile(name)
        rows.append((name, f"window {p.window_tokens:,} tokens, recall half-length {p.L_half:,.0f}, "
                           f"malformed base {p.p_malformed_base:g}, ${p.price_in:g}/${p.price_out:g} per M in/out"))
    _print_listing(rows)
    return 0


def _parse_params(pairs: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse (numbers, booleans, objects)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--param: expected KEY=VALUE, got {pair!r}")
        try:
            params[key] = json.loads(raw)
        except ValueError:
            params[key] = raw
    return params


def _validation_line(e: ValidationError) -> str:
    first = e.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "params"
    return f"{field}: {first['msg']}"


def _scenario_show(args: argparse.Namespace) -> int:
    import scenarios
    from scenarios.base import script_summary

    params = _parse_params(args.param)
    try:
        script = scenarios.generate(args.name, args.seed, **params)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from None
    except ValidationError as e:
        raise UsageError(f"scenario {args.name}: {_validation_line(e)}") from None
    if args.summary:
        _print_listing([(k, str(v)) for k, v in script_summary(script).items()])
    else:
        print(script.model_dump_json(indent=2))
    return 0


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    k, sep, n = text.partition("/")
    if not sep or not k.isdigit() or not n.isdigit() or not 1 <= int(k) <= int(n):
        raise UsageError(f"--shard: expected K/N with 1 <= K <= N, got {text!r}")
    return int(k), int(n)


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


def _load(args: argparse.Namespace) -> Any:
    """The run config from the file (or the embedded default) with the flags applied."""
    from harness.run.config import ConfigError, load_config

    overrides: dict[str, Any] = {
        "sessions": getattr(args, "sessions", None), "seed": getattr(args, "seed", None),
        "model": getattr(args, "model", None), "jobs": getattr(args, "jobs", None),
        "executor": getattr(args, "executor", None), "scheduler": getattr(args, "scheduler", None),
    }
    try:
        config = load_config(args.config, **overrides)
        return config.select(_names(getattr(args, "strategies", None)), _names(getattr(args, "scenarios", None)),
                             source=args.config)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def _print_summary(sessions: Any, as_json: bool) -> None:
    from reports.summary import summary_records, summary_text

    if sessions.empty:
        print("[]" if as_json else "no sessions in this run (a shard without batches?)")
        return
    print(json.dumps(summary_records(sessions), indent=2) if as_json else summary_text(sessions))


def _run(args: argparse.Namespace) -> int:
    return _execute(_load(args), args, default_stem="default")


def _sweep(args: argparse.Namespace) -> int:
    """``ctxbench sweep``: a run whose config has a ``[sweep]`` table, from the file or from flags."""
    from harness.run.config import DEFAULT_SWEEP, ConfigError

    if args.config is None:
        args.config = str(DEFAULT_SWEEP)
    config = _load(args)
    params: dict[str, Any] = {}
    for pair in args.param or ():
        key, sep, raw = pair.partition("=")
        if not sep or not key or not raw:
            raise UsageError(f"--param: expected STRATEGY.PARAM=V1,V2,..., got {pair!r}")
        params[key] = [_value(v) for v in raw.split(",")]
    try:
        config = config.with_sweep(params, _names(args.models), source=args.config)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    return _execute(config, args, default_stem="sweep")


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _execute(config: Any, args: argparse.Namespace, *, default_stem: str) -> int:
    from harness.run.runner import RunError, run

    shard = _shard(args.shard)
    stem = Path(args.config).stem if args.config else default_stem
    default_name = stem if shard is None else f"{stem}-shard{shard[0]}of{shard[1]}"
    out = Path(args.out) if args.out else Path("runs") / default_name
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out: {out} exists and is not a directory")
    try:
        summary = run(config, out, resume=not args.no_resume, shard=shard, quiet=args.quiet)
    except RunError as e:
        raise UsageError(str(e)) from None
    if not args.quiet and not args.json:
        total = len(summary.sessions)
        print(f"ctxbench run: {out} ({total} session rows, {summary.batches_run} batches run, "
              f"{summary.batches_skipped} resumed; {summary.wall_s:.1f} s, "
              f"{total / summary.wall_s if summary.wall_s > 0 else 0:.1f} session rows/s)")
    _print_summary(summary.sessions, args.json)
    if not args.no_report and not summary.sessions.empty:
        from reports.render import write_report

        written = write_report(out)
        if not args.quiet:
            print(f"ctxbench: report: {', '.join(str(p) for p in written)}", file=sys.stderr)
    if summary.errors:
        print(f"ctxbench: {summary.errors} sessions failed with outcome 'error' (see the error column)",
              file=sys.stderr)
        return 1
    return 0


def _report(args: argparse.Namespace) -> int:
    from reports.render import ReportInputError, check_formats, check_run_dir, write_report

    try:
        formats = check_formats(args.format.split(","))
        run_dir = check_run_dir(args.run_dir)
        written = write_report(run_dir, formats, baseline=args.baseline)
    except ReportInputError as e:
        raise UsageError(f"report: {e}") from None
    for path in written:
        print(path)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from reports.compare import compare, parse_metrics, parse_threshold
    from reports.render import ReportInputError, check_run_dir

    try:
        metrics = parse_metrics(args.metric)
        thresholds = [parse_threshold(t) for t in args.fail_on]
        run_a, run_b = check_run_dir(args.run_a), check_run_dir(args.run_b)
        result = compare(run_a, run_b, metrics, thresholds)
    except ReportInputError as e:
        raise UsageError(f"compare: {e}") from None
    if args.json:
        print(json.dumps(result.to_records(), indent=2))
    else:
        print(result.to_text(), end="")
    if result.failed:
        failed = dict.fromkeys(b.threshold.text for b in result.breaches)
        print(f"ctxbench: compare: gate failed: {', '.join(failed)} ({len(result.breaches)} strategy rows crossed)",
              file=sys.stderr)
        return 1
    return 0


def _validate(args: argparse.Namespace) -> int:
    config = _load(args)
    variants = len(config.variants())
    grid = f", {variants} variants in the sweep" if config.sweep is not None else ""
    print(f"{args.config}: ok ({config.sessions} sessions, {len(config.strategy_entries())} strategies{grid}, "
          f"config hash {config.config_hash()[:12]})")
    return 0


def _merge(args: argparse.Namespace) -> int:
    from harness.run.runner import RunError, merge

    for d in args.runs:
        if not Path(d).is_dir():
            raise UsageError(f"merge: {d} is not a directory")
    try:
        summary = merge(Path(args.out_dir), [Path(d) for d in args.runs])
    except RunError as e:
        raise UsageError(str(e)) from None
    _print_summary(summary.sessions, False)
    return 1 if summary.errors else 0


def _validation(args: argparse.Namespace) -> int:
    from harness.run.validation import EXAMPLES, ValidationError, ValidationSizes, run_validation
    from reports.validation import ValidationInputError, write_validation

    if args.sessions is not None and args.sessions < 1:
        raise UsageError("--sessions: must be at least 1")
    sizes = ValidationSizes.quick(args.jobs) if args.quick else ValidationSizes(jobs=args.jobs)
    if args.sessions is not None:
        sizes = dataclasses.replace(sizes, sessions=args.sessions)
    out = Path(args.out)

    def log(line: str) -> None:
        if not args.quiet:
            print(f"ctxbench validation: {line}", file=sys.stderr)

    try:
        if not args.report_only:
            run_validation(out, sizes, examples=Path(args.examples) if args.examples else EXAMPLES, log=log)
        result = write_validation(out, args.doc)
    except (ValidationError, ValidationInputError) as e:
        raise UsageError(f"validation: {e}") from None
    verdicts: dict[str, int] = {}
    for check in result.checks:
        verdicts[check.verdict] = verdicts.get(check.verdict, 0) + 1
    print(f"ctxbench validation: {args.doc}: {len(result.checks)} checks: "
          + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    for check in result.checks:
        if check.verdict in ("disagree", "FAIL"):
            print(f"  {check.verdict:<8} {check.id:<4} {check.title} ({check.setup}): published {check.published}; "
                  f"ours {check.ours}")
    return 1 if result.hard_failures else 0


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other usage error of ctxbench."""

    def error(self, message: str) -> NoReturn:
        print(f"ctxbench: error: {self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def _run_flags(run: argparse.ArgumentParser) -> None:
    """The flags `run` and `sweep` share."""
    run.add_argument("--sessions", type=int)
    run.add_argument("--strategies", help="comma-separated names or labels from the config")
    run.add_argument("--scenarios", help="comma-separated scenario names (replaces the config's)")
    run.add_argument("--model", help="model profile name")
    run.add_argument("--seed", type=int)
    run.add_argument("--jobs", type=int, help="worker processes (0 = one per CPU)")
    run.add_argument("--executor", choices=["serial", "process", "dask"])
    run.add_argument("--scheduler", help="dask scheduler address, e.g. tcp://HOST:8786")
    run.add_argument("--shard", help="run the deterministic slice K/N of the batches")
    run.add_argument("--out", help="run directory (default: runs/<config name>)")
    run.add_argument("--no-resume", action="store_true", help="refuse to reuse an existing run directory")
    run.add_argument("--quiet", action="store_true", help="no progress bar, no header line")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.add_argument("--no-report", action="store_true", help="do not write report.html / report.md at the end")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ctxbench", description="Benchmark LLM-agent context strategies.")
    parser.add_argument("--version", action="version", version=f"ctxbench {harness.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="replay sessions under every strategy into a run directory")
    run.add_argument("config", nargs="?", help="TOML config (default: the embedded examples/default.toml)")
    _run_flags(run)
    run.set_defaults(func=_run)

    sweep = sub.add_parser("sweep", help="a grid over strategy params and model profiles in one run directory, "
                                         "with a sweep page plotting every headline metric against each param")
    sweep.add_argument("config", nargs="?",
                       help="TOML config, with or without a [sweep] table (default: the embedded examples/sweep.toml)")
    sweep.add_argument("--param", action="append", default=[], metavar="STRATEGY.PARAM=V1,V2,...",
                       help="values of one strategy param, e.g. sliding_window.window_size=10,20,40,80 (repeatable; "
                            "adds to or replaces the config's [sweep.params])")
    sweep.add_argument("--models", help="comma-separated model profiles to cross the grid with (replaces the config's)")
    _run_flags(sweep)
    sweep.set_defaults(func=_sweep)

    val = sub.add_parser("validation", help="run the validation experiments and write docs/validation.md: every "
                                            "published target with our figure, its CI and a verdict")
    val.add_argument("--out", default="runs/validation", help="directory for the runs and probes (resumable; "
                                                              "default: runs/validation)")
    val.add_argument("--doc", default="docs/validation.md", help="the document to write (default: docs/validation.md; "
                                                                 "its PNGs and reports go to <doc dir>/validation/)")
    val.add_argument("--sessions", type=int, help="paired sessions of the section-11 runs (default 2,000)")
    val.add_argument("--quick", action="store_true", help="a few sessions of everything: to try the command, not to "
                                                          "judge the verdicts")
    val.add_argument("--jobs", type=int, default=0, help="worker processes (0 = one per CPU)")
    val.add_argument("--examples", help="the examples/ directory with the reference configs (default: the checkout's)")
    val.add_argument("--report-only", action="store_true", help="only write the document from an existing --out")
    val.add_argument("--quiet", action="store_true", help="no progress lines")
    val.set_defaults(func=_validation)

    report = sub.add_parser("report", help="write report.html and report.md (and plots/*.png) for a run directory")
    report.add_argument("run_dir")
    report.add_argument("--format", default="html,md", help="comma-separated: html, md (default: html,md)")
    report.add_argument("--baseline", default="unbounded",
                        help="strategy the paired differences are against (default: unbounded; the run's first "
                             "strategy when absent)")
    report.set_defaults(func=_report)

    comp = sub.add_parser("compare", help="compare two runs per metric and strategy; gate on thresholds")
    comp.add_argument("run_a")
    comp.add_argument("run_b")
    comp.add_argument("--metric", action="append", default=[],
                      help="metric to show (repeatable or comma-separated; default: every headline metric)")
    comp.add_argument("--fail-on", action="append", default=[], metavar="METRIC:THRESHOLD",
                      help="exit 1 when B - A crosses it: +2pp (rates), +5%% (relative), +1000 (units); the sign is "
                           "the direction that fails (repeatable)")
    comp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    comp.set_defaults(func=_compare)

    validate = sub.add_parser("validate", help="check a config (loading and wiring) without running it")
    validate.add_argument("config")
    validate.set_defaults(func=_validate)

    merge = sub.add_parser("merge", help="join shard run directories into one run directory")
    merge.add_argument("out_dir")
    merge.add_argument("runs", nargs="+")
    merge.set_defaults(func=_merge)

    scenario = sub.add_parser("scenario", help="inspect generated session scripts")
    scenario_sub = scenario.add_subparsers(dest="scenario_command", metavar="SUBCOMMAND", required=True)
    show = scenario_sub.add_parser("show", help="print a generated script as JSON")
    show.add_argument("name")
    show.add_argument("--seed", type=int, default=0)
    show.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                      help="a generator parameter, e.g. --param turns=40 (repeatable)")
    show.add_argument("--summary", action="store_true", help="print a short table instead of the JSON")
    show.set_defaults(func=_scenario_show)

    lister = sub.add_parser("list", help="list registered strategies or scenarios")
    lister.add_argument("what", choices=["strategies", "scenarios", "models"])
    lister.set_defaults(func=_list)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except UsageError as e:
        print(f"ctxbench: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ctxbench: interrupted (finished batches are kept: run the same command again to resume)",
              file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as other command-line tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
