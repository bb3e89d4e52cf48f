"""Write larger synthetic traces made by ctxbench's own generators (no real user's data), for speed tests
and for trying ``ctxbench replay`` and ``ctxbench fit`` at scale:

    python tests/data/make_synthetic_traces.py OUT_DIR [--sessions 100] [--format anthropic]
        [--scenario k8s_crashloop] [--turns 60] [--seed 0]

Each session is a generated script replayed by the mock model under ``unbounded`` and written in the chosen
format (`harness.run.fitting.write_synthetic_traces`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.run.fitting import write_synthetic_traces
from harness.run.traces import TRACE_FORMATS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--format", default="anthropic", choices=[f for f in TRACE_FORMATS if f != "openhands"])
    parser.add_argument("--scenario", default="k8s_crashloop")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    written = write_synthetic_traces(args.out, args.sessions, args.format, scenario=args.scenario, seed=args.seed,
                                     turns=args.turns)
    print(f"{len(written)} files in {args.out}")


if __name__ == "__main__":
    main()
