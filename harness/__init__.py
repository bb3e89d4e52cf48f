"""ctxbench's harness, in four layers that import only downward (docs/design.md, "Which way imports go"):

- `harness.core`: what every layer shares (messages, tokens, the context a strategy sees, tool
  contracts, switches, registries, common random numbers, the run directory's contract);
- `harness.sim`: one session (model profiles, the mock model, the replay kernel and its window engine,
  the accounting replay of a recorded session, loop detection, records, the event log, memory,
  calibration probes);
- `harness.run`: many sessions (config, the run plan, the worker, executors, the run directory and its
  Parquet writer, merge, accounting runs and trace import, fitting, the speed goals, validation
  experiments);
- `harness.cli`: the ``ctxbench`` command, the only place that knows every package.

`make lint` checks the direction with import-linter. The replay's inner loop may run compiled (`harness.build`
decides which build runs, here, before any of those modules is imported).
"""

from importlib.metadata import PackageNotFoundError, version

from harness import build

build.decide()

try:
    __version__ = version("ctxbench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
