"""A serial strategy comparison: replay generated sessions under every chosen strategy with the
mock model and tabulate the headline metrics. It is what ``make bench`` runs until the parallel
runner and its run directory exist; it uses the same `replay` the runner will.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import scenarios
import strategies
from harness.crn import session_seed
from harness.profiles import Profile
from harness.profiles import profile as builtin_profile
from harness.runtime import replay

#: `pipeline` has no defaults; the comparison runs the composition strategies.md 3.7 recommends.
DEFAULT_PIPELINE: dict[str, Any] = {"stages": [{"name": "offload_contracts"}, {"name": "sliding_window"}]}


def run_comparison(*, sessions: int = 100, seed: int = 0, scenario: str = "mix",
                   profile: Profile | str = "frontier", names: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (session, strategy): the SessionRecord columns."""
    chosen = list(names) if names else strategies.names()
    prof = builtin_profile(profile) if isinstance(profile, str) else profile
    rows: list[dict[str, Any]] = []
    for index in range(sessions):
        script = scenarios.generate(scenario, session_seed(seed, scenario, index))
        for name in chosen:
            strategy = strategies.create(name, **(DEFAULT_PIPELINE if name == "pipeline" else {}))
            result = replay(script, strategy, prof, scenario=scenario, session_index=index)
            rows.append(result.record.as_row())
    return pd.DataFrame(rows)


def summary_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: success, token use, tool-syntax error rate, loop rate, latency and cost."""
    g = rows.groupby("strategy", sort=True)
    table = pd.DataFrame({
        "sessions": g.size(),
        "success_rate": g["outcome"].apply(lambda s: (s == "success").mean()).round(3),
        "context_tokens_mean": g["context_tokens_mean"].mean().round(0).astype(int),
        "input_tokens_per_session": g["input_tokens"].mean().round(0).astype(int),
        "tool_syntax_error_rate": (g["tool_syntax_errors"].sum() / g["tool_calls"].sum().clip(lower=1)).round(4),
        "loop_rate": g["loop_detected"].mean().round(3),
        "latency_s_mean": g["latency_s"].mean().round(1),
        "latency_s_p50": g["latency_s"].median().round(1),
        "latency_s_p95": g["latency_s"].quantile(0.95).round(1),
        "cost_usd_per_session": g["cost_usd"].mean().round(3),
        "overflow_rate": g["outcome"].apply(lambda s: (s == "overflow").mean()).round(3),
    })
    return table.sort_values("success_rate", ascending=False, kind="stable")


def _write_atomically(path: Path, text: str) -> None:
    """Write via a temp file in the same directory and rename, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_comparison(rows: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write ``sessions.csv`` (one row per session and strategy) and the summary as text and CSV."""
    out_dir.mkdir(parents=True, exist_ok=True)
    table = summary_table(rows)
    written = []
    for name, text in (
        ("sessions.csv", rows.to_csv(index=False)),
        ("summary.csv", table.to_csv()),
        ("summary.txt", table.to_string() + "\n"),
    ):
        _write_atomically(out_dir / name, text)
        written.append(out_dir / name)
    return written
