"""``ctxbench bench``: the simulator's speed goals measured on this machine, as one table
(`harness.run.speed`); the report's timing (P6) is taken here, where the reports package may be used.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import harness
from harness import build
from harness.cli.errors import UsageError
from harness.cli.flags import Subparsers, add_command

#: (P1's sessions, P2's sessions per scenario, P3's N, P6's session rows, P4's two sizes of the tables,
#: P7's recorded sessions and the distinct trace files they repeat).
SIZES = {"full": (400, 4, 200, 30_000, (3_000, 9_000), (10_000, 500)),
         "quick": (80, 1, 60, 3_000, (2_000, 4_000), (500, 100))}


def add_parser(subparsers: Subparsers) -> None:
    """Declare ``ctxbench bench``."""
    bench = add_command(
        subparsers, "bench", handle,
        help="measure the speed goals (replays/s, tokenization floor, linearity, memory, strands, report, "
             "accounting replays/s)",
        description="Measure the simulator's speed goals P1-P7 on this machine and print one table: replays per "
                    "second of the default mix (P1), replay cost over its tokenization floor (P2), 2N-turn over "
                    "N-turn sessions per strategy (P3), the run's peak memory extrapolated to 100,000 sessions (P4), "
                    "strategy operations against strands' managers (P5, when strands-agents is installed), the "
                    "report of 30,000 session rows (P6) and the accounting replay (ctxbench replay) of 10,000 "
                    "synthetic recorded sessions of about 60 calls under every strategy, against P1's rate (P7). "
                    "Writes only to a temporary directory. On an idle 2-core machine the whole took about 12 "
                    "minutes, P7's 100,000 session-replays more than 8 of them; --quick about 2 minutes (see README, "
                    "Speed). The first line names the build that ran (compiled or pure Python). Exit 0; 2 on a "
                    "usage or config error.")
    bench.add_argument("--quick", action="store_true", help="smaller sizes: a check that it all works, noisier figures")
    bench.add_argument("--jobs", type=int, default=0, help="worker processes for P1, P4 and P7 (default: one per CPU)")
    bench.add_argument("--config", default=None,
                       help="the run config of P1, P2 and P4, and the strategies and profile of P7 "
                            "(default: examples/default.toml)")
    bench.add_argument("--json", action="store_true", help="print the measurements as JSON instead of the table")


def handle(args: argparse.Namespace) -> int:
    """Measure each goal in turn (announced on stderr: the whole takes minutes) and print the table."""
    from harness.run import speed
    from harness.run.config import ConfigError, load_config

    if args.jobs < 0:
        raise UsageError(f"bench: --jobs: expected 0 (one per CPU) or more, got {args.jobs}")
    config_path = Path(args.config) if args.config else speed.default_config_path()
    try:
        config = load_config(config_path)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    large, p2_sessions, n, report_rows, tables, (recorded, distinct) = SIZES["quick" if args.quick else "full"]
    goals: list[speed.SpeedGoal] = []
    started = time.perf_counter()

    def step(what: str, measure: Callable[[], speed.SpeedGoal]) -> speed.SpeedGoal:
        print(f"ctxbench: bench: {what} ({time.perf_counter() - started:.0f} s so far)", file=sys.stderr, flush=True)
        goal = measure()
        goals.append(goal)
        return goal

    with speed.scratch_dir() as scratch:
        root = Path(scratch)
        results: dict[str, Any] = {}

        def p1() -> speed.SpeedGoal:
            goal, results["large"] = speed.replay_rate(config_path, large, args.jobs, root / "large")
            return goal

        simulated = step(f"P1 replays per second: a run of {large} sessions", p1)
        step(f"P2 tokenization floor: sessions per scenario: {p2_sessions}, serially", lambda: speed.tokenization_floor(
            config, p2_sessions))
        step(f"P3 linearity: every strategy at {n} and {2 * n} tool steps", lambda: speed.linearity(n))
        def p4() -> speed.SpeedGoal:
            measured = [speed.table_phase(root / "large", size, root / f"tables-{size}") for size in tables]
            return speed.peak_rss(results["large"], large, measured[0], tables[0], measured[1], tables[1])

        step(f"P4 peak memory: the P1 run, and writing the tables of {tables[0]:,} and {tables[1]:,} sessions", p4)
        step("P5 strategy operations against strands' managers", speed.strands_operations)
        step(f"P6 the report of {report_rows:,} session rows", lambda: _report_goal(root / "large", root / "tiled",
                                                                                   report_rows))
        step(f"P7 accounting replays per second: {recorded:,} recorded sessions ({distinct} distinct traces)",
             lambda: speed.accounting_rate(config_path, recorded, distinct, args.jobs, root / "accounting",
                                           simulated.values["replays_per_s"]))
    total = time.perf_counter() - started
    if args.json:
        print(json.dumps({"machine": _machine(), "seconds": total,
                          "goals": [{"name": g.name, "target": g.target, "measured": g.measured, "met": g.met,
                                     "how": g.how, "values": g.values} for g in goals]}, indent=2, default=str))
    else:
        print(table(goals, total))
    return 0


def _report_goal(source: Path, target: Path, rows: int) -> Any:
    from harness.run import speed
    from reports.render import write_report

    made = speed.tiled_run(source, target, rows)
    started = time.perf_counter()
    write_report(target)
    seconds = time.perf_counter() - started
    return speed.SpeedGoal("P6 report of 30,000 session rows", "< 10 s", f"{seconds:.1f} s for {made:,} rows",
                      seconds < 10 if made >= 30_000 else None,
                      f"ctxbench report on the larger P1 run's sessions repeated to {made:,} session rows (with their "
                      "calls and events); judged only at 30,000 rows", {"seconds": seconds, "session_rows": made})


def _machine() -> dict[str, Any]:
    # Which build ran (compiled or the Python sources, and why): the rates depend on it, the tables never do.
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "ctxbench": harness.__version__, "build": build.current().describe()}


def table(goals: list[Any], seconds: float) -> str:
    """The goals as an aligned table, then how each was measured."""
    machine = _machine()
    head = (f"ctxbench bench: {machine['cpus']} CPUs, Python {machine['python']}, ctxbench {machine['ctxbench']} "
            f"{machine['build']}, measured in {seconds:.0f} s")
    rows = [("goal", "target", "measured", "met")] + [
        (g.name, g.target, g.measured, {True: "yes", False: "no", None: "-"}[g.met]) for g in goals]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [head, ""] + ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines += ["", "how:"] + [f"- {g.name.split()[0]}: {g.how}" for g in goals]
    return "\n".join(lines)
