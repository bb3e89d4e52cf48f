"""The reference comparison with the seed article (docs/model.md section 12): its A/B table (the
article's drill inputs beside our paired figures, with whether the direction matches), the same
comparison under every profile, the 2x2x2 ablation of which part causes which change, and the claims
that go into the summary (direction only, no verdict).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.core.rundir import Manifest
from reports import stats
from reports.markup import md_lines
from reports.validation.checks import Check
from reports.validation.data import Bundle, num, paired_columns, pct, pp, run_order

#: The article's two agents: A = unbounded, contracts off, plain errors; B = offload, typed contracts,
#: three-class errors (the labels of examples/seed-article.toml).
SEED_A, SEED_B = "A-raw-untyped", "B-offload-typed"


@dataclass(frozen=True)
class SeedRow:
    """One metric of section 12's table: the article's A and B, ours, B - A with its interval, direction."""

    metric: str
    article_a: str
    article_b: str
    ours_a: str
    ours_b: str
    delta: str
    direction: str


def seed_article_rows(b: Bundle) -> list[SeedRow]:
    """Section 12's table for ``examples/seed-article.toml``, with the figures the article does not claim."""
    return seed_pair_rows(b, b.sessions["seed-article"], SEED_A, SEED_B, "seed", extra=True)


def seed_pair_rows(b: Bundle, frame: pd.DataFrame, label_a: str, label_b: str, tag: str, *,
                   extra: bool = False) -> list[SeedRow]:
    """Section 12's table for strategies ``label_a`` (A) and ``label_b`` (B) of ``frame``: the
    article's figures, ours, and B - A with a paired 95% interval."""
    rows: list[SeedRow] = []

    def paired_stat(column: str, den: str | None) -> tuple[float, float, float, float, float]:
        a_num, b_num = paired_columns(frame, label_a, label_b, column)
        if den is None:
            a_den, b_den = np.ones_like(a_num), np.ones_like(b_num)
        else:
            a_den, b_den = paired_columns(frame, label_a, label_b, den)
        if len(a_num) == 0:
            return (float("nan"),) * 5
        va = a_num.sum() / max(a_den.sum(), 1)
        vb = b_num.sum() / max(b_den.sum(), 1)
        rng = b.rng(tag, label_a, label_b, column)
        idx = rng.integers(0, len(a_num), size=(stats.DEFAULT_RESAMPLES, len(a_num)))
        diffs = b_num[idx].sum(-1) / np.maximum(b_den[idx].sum(-1), 1) - a_num[idx].sum(-1) / np.maximum(
            a_den[idx].sum(-1), 1)
        return float(va), float(vb), float(vb - va), float(np.quantile(diffs, 0.025)), float(np.quantile(diffs, 0.975))

    def direction(va: float, vb: float) -> str:
        return "agrees (B lower)" if vb < va else "differs (B not lower)"

    specs: list[tuple[str, str, str, str, str | None, Callable[[float], str], bool]] = [
        ("context tokens (mean per agent call)", "78,400", "6,200", "context_tokens_mean", None, num, True),
        ("tool-syntax error rate (emitted / tool calls)", "14.8%", "0.3%", "tool_syntax_errors", "tool_calls", pct,
         True),
        ("loop rate", "8.5%", "~0", "loop_detected", None, pct, True),
        ("latency (mean simulated s per agent turn)", "12.4 s", "3.1 s", "latency_s", "turns",
         lambda x: f"{x:.1f} s", True),
        ("success rate", "-", "-", "success", None, pct, False),
        ("cost per session (USD)", "-", "-", "cost_usd", None, lambda x: f"${x:.3f}", False),
    ]
    if extra:
        specs += [
            ("context tokens (peak per session, mean)", "-", "-", "context_tokens_peak", None, num, False),
            ("tool-syntax errors reaching a tool / tool calls", "-", "-", "syntax_errors_reaching_tool", "tool_calls",
             pct, False),
            ("latency per session (mean simulated s)", "-", "-", "latency_s", None, lambda x: f"{x:.0f} s", False),
        ]
    for label, art_a, art_b, column, den, fmt, claimed in specs:
        va, vb, d, lo, hi = paired_stat(column, den)
        fmt_d = pp if fmt is pct else fmt
        rows.append(SeedRow(label, art_a, art_b, fmt(va), fmt(vb), f"{fmt_d(d)} [{fmt_d(lo)}, {fmt_d(hi)}]",
                            direction(va, vb) if claimed else "-"))
    return rows


def seed_profile_rows(b: Bundle) -> list[list[str]]:
    """Section 12's "repeat with mid, small and stress-2023": A vs B under each profile."""
    frame = b.sessions["seed-article-profiles"]
    out = []
    for model in [m for m in ("frontier", "mid", "small", "stress-2023") if m in set(frame["model"])]:
        for r in seed_pair_rows(b, frame, f"{SEED_A}@{model}", f"{SEED_B}@{model}", f"seed-{model}"):
            out.append([model, r.metric, r.ours_a, r.ours_b, r.delta, r.direction])
    return out


# The ablation --------------------------------------------------------------------------------------------


ABLATION_METRICS: tuple[tuple[str, str, str | None, Callable[[float], str]], ...] = (
    ("context tokens/call", "context_tokens_mean", None, num),
    ("syntax errors emitted", "tool_syntax_errors", "tool_calls", pct),
    ("syntax errors reaching a tool", "syntax_errors_reaching_tool", "tool_calls", pct),
    ("loop rate", "loop_detected", None, pct),
    ("latency s/turn", "latency_s", "turns", lambda x: f"{x:.2f}"),
    ("success", "success", None, pct),
    ("cost/session", "cost_usd", None, lambda x: f"${x:.3f}"),
)
#: The three factors of the ablation and the label part that marks each level "on".
ABLATION_FACTORS = (("strategy: offload instead of raw", 0, "offload"), ("contracts on", 1, "typed"),
                    ("three-class errors", 2, "3class"))


def _ablation_values(frame: pd.DataFrame) -> dict[str, list[float]]:
    values: dict[str, list[float]] = {}
    for label, group in frame.groupby("strategy", sort=True):
        row = []
        for _, column, den, _fmt in ABLATION_METRICS:
            num_sum = group[column].astype(float).sum()
            row.append(num_sum / max(group[den].sum(), 1) if den else num_sum / max(len(group), 1))
        values[str(label)] = row
    return values


def ablation_tables(b: Bundle) -> list[str]:
    """The 2x2x2 ablation: every configuration's figures, then each factor's main effect (the mean, over
    the four pairs that differ only in that factor, of on minus off)."""
    frame = b.sessions["seed-article-ablation"]
    values = _ablation_values(frame)
    order = run_order(frame, b.manifests["seed-article-ablation"])
    lines = md_lines(["configuration", *(m[0] for m in ABLATION_METRICS)],
                     [[label, *(fmt(v) for (_, _, _, fmt), v in zip(ABLATION_METRICS, values[label], strict=True))]
                      for label in order if label in values])
    lines += ["", "Main effect of each part (mean of on minus off over the four pairs that differ only in it):", ""]
    effects = []
    for name, position, on in ABLATION_FACTORS:
        diffs: list[list[float]] = []
        for label, row in values.items():
            parts = label.split("-")
            if len(parts) != 3 or parts[position] != on:
                continue
            off_parts = list(parts)
            off_parts[position] = {"offload": "raw", "typed": "untyped", "3class": "plain"}[on]
            partner = values.get("-".join(off_parts))
            if partner is not None:
                diffs.append([x - y for x, y in zip(row, partner, strict=True)])
        mean = np.mean(np.array(diffs), axis=0) if diffs else [np.nan] * len(ABLATION_METRICS)
        effects.append([name, *((pp(v) if fmt is pct else fmt(v)) for (_, _, _, fmt), v in
                                 zip(ABLATION_METRICS, mean, strict=True))])
    lines += md_lines(["part", *(m[0] for m in ABLATION_METRICS)], effects)
    return lines


# The summary's claims and the frozen versions ---------------------------------------------------------------


def seed_article_checks(b: Bundle, rows: Sequence[SeedRow]) -> list[Check]:
    """The summary rows of the article's claims (the rows with a direction): no verdict, only the direction."""
    return [Check("§12", f"seed article: {r.metric}", "claim", "examples/seed-article.toml",
                  f"A {r.article_a} vs B {r.article_b} (drill inputs, not measurements)",
                  f"A {r.ours_a} vs B {r.ours_b}", f"direction {r.direction.split(' ')[0]}")
            for r in rows if r.direction != "-"]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:12]


def frozen_versions(manifest: Manifest) -> str:
    """Section 12: the profile and generator versions the comparison ran with, as hashes."""
    return (f"Frozen for this comparison (section 12): profile `{manifest.model.get('name')}` sha256 "
            f"`{_digest(manifest.model)}`, generator ctxbench {manifest.ctxbench_version} at git "
            f"`{str(manifest.git_sha or 'unknown')[:12]}` with scenario params sha256 "
            f"`{_digest(manifest.scenarios)}`, config hash `{str(manifest.config_hash)[:12]}`.")
