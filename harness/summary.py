"""The summary table printed at the end of a run: per strategy, the headline metrics over its
sessions (success, token use, tool-syntax error rate, loop rate, latency, cost)."""

from __future__ import annotations

from typing import Any

import pandas as pd


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


def summary_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The summary as JSON-ready rows (for ``--json``)."""
    rows = table.reset_index().to_dict(orient="records")
    return [{str(k): (v.item() if hasattr(v, "item") else v) for k, v in row.items()} for row in rows]
