"""What moved since the previous published document: its figures for the seed article and the sweep,
kept as data in ``reports/validation/history.json`` (the figures of docs/validation.md as generated at the
commit the file names, the run of mock model v2), set beside this run's, with the model changes between the
two (v3's) that can move them. The comparison is computed; only the previous
figures and the list of changes are written by hand.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from reports.markup import md_lines
from reports.sweep_stats import ranking
from reports.tables import format_relative
from reports.validation.data import Bundle, num, pct, pp
from reports.validation.seed_article import SeedRow

#: The history's file name, inside the ``reports.validation`` package. Unlike the verdicts record it is not optional:
#: the document's history section cannot be written without it, so a missing file fails on import.
HISTORY_FILE = "history.json"
_HISTORY: dict[str, Any] = json.loads(resources.files("reports.validation").joinpath(HISTORY_FILE).read_text(
    encoding="utf-8"))

#: The previous document's run.
PREVIOUS_COMMIT: str = _HISTORY["previous_commit"]
#: The mock-model changes between that run and this one (docs/model.md, "v3 in one paragraph"), each with the
#: figures it can move. A "what moved" line names the candidates; the loop shapes show which acted.
CHANGES: tuple[str, ...] = tuple(_HISTORY["changes"])
#: The previous run's seed-article figures (examples/seed-article.toml, frontier, 5,000 sessions): metric
#: -> (A, B), as the document printed them.
PREVIOUS_SEED: dict[str, tuple[float, float]] = {
    metric: (a, b) for metric, (a, b) in _HISTORY["previous_seed"].items()
}
#: The previous run's sweep (examples/sweep.toml, 200 sessions): success per variant under frontier,
#: mid, small and stress-2023.
PREVIOUS_SWEEP_MODELS: tuple[str, ...] = tuple(_HISTORY["previous_sweep_models"])
PREVIOUS_SWEEP: dict[str, tuple[float, float, float, float]] = {
    variant: (frontier, mid, small, stress)
    for variant, (frontier, mid, small, stress) in _HISTORY["previous_sweep"].items()
}
#: A sweep cell "moved" when its success changed by more than this (about two binomial standard errors
#: of a difference of two 200-session rates near 50%, J).
SWEEP_MOVE = 0.10


def _parse(cell: str) -> float:
    """A figure of a SeedRow cell ("12.1%", "$1.625", "6.2 s", "29,669") as a number."""
    text = cell.replace("$", "").replace(",", "").replace(" s", "").strip()
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        return float("nan")


def _delta(metric: str, now: float, before: float) -> str:
    if "rate" in metric or metric == "loop rate":
        return pp(now - before)
    if not np.isfinite(now) or not before:
        return "n/a"
    return format_relative(now / before - 1, digits=0)


def seed_history(rows: list[SeedRow], shapes: pd.DataFrame) -> list[str]:
    """The seed article's A and B now beside the previous run's, per metric, and a computed account."""
    table = []
    moved = []
    for r in rows:
        before = PREVIOUS_SEED.get(r.metric)
        if before is None:
            continue
        a, b_ = _parse(r.ours_a), _parse(r.ours_b)
        table.append([r.metric, _fmt(r.metric, before[0]), r.ours_a, _delta(r.metric, a, before[0]),
                      _fmt(r.metric, before[1]), r.ours_b, _delta(r.metric, b_, before[1])])
        for side, now, then in (("A", a, before[0]), ("B", b_, before[1])):
            if _moved(r.metric, now, then):
                moved.append(f"{side}'s {r.metric} {_fmt(r.metric, then)} -> {_fmt(r.metric, now)}")
    lines = md_lines(["metric", f"A at {PREVIOUS_COMMIT}", "A now", "change", f"B at {PREVIOUS_COMMIT}", "B now",
                      "change"], table)
    lines += [""]
    if moved:
        lines += ["Moved (by more than 1 pp for a rate, 5% otherwise): " + "; ".join(moved) + "."]
    else:
        lines += ["Nothing moved by more than 1 pp for a rate or 5% otherwise."]
    seed = shapes[shapes["run"] == "seed-article"] if "run" in shapes else shapes
    if len(seed):
        split = seed.groupby("strategy")["shape"].value_counts(normalize=True)
        parts = [f"{strategy}: " + ", ".join(f"{shape} {pct(v)}" for (_, shape), v in group.items())
                 for strategy, group in split.groupby(level=0)]
        lines += ["", "Its stuck sessions now end in these shapes (see the loop shapes below): " + "; ".join(parts)
                  + "."]
    return lines


def _moved(metric: str, now: float, then: float) -> bool:
    if not np.isfinite(now):
        return False
    if "rate" in metric:
        return abs(now - then) > 0.01
    return bool(then) and abs(now / then - 1) > 0.05


def _fmt(metric: str, value: float) -> str:
    if "rate" in metric:
        return pct(value)
    if "USD" in metric:
        return f"${value:.3f}"
    if "latency" in metric:
        return f"{value:.1f} s"
    return num(value)


def sweep_history(b: Bundle) -> list[str]:
    """The sweep's success per variant and profile now beside the previous run's: the cells that moved by
    more than `SWEEP_MOVE`, the mean change per profile, and the mean change per strategy family."""
    ranks = ranking(b.sessions["sweep"])
    if ranks.empty:
        return []
    now = {(str(r.variant), str(r.model)): float(r.value) for r in ranks.itertuples(index=False)}
    cells = []
    for variant, values in PREVIOUS_SWEEP.items():
        for model, before in zip(PREVIOUS_SWEEP_MODELS, values, strict=True):
            if (variant, model) in now:
                cells.append((variant, model, before, now[(variant, model)]))
    if not cells:
        return ["The sweep's variants do not match the previous run's; no comparison."]
    frame = pd.DataFrame(cells, columns=["variant", "model", "before", "now"])
    frame["change"] = frame["now"] - frame["before"]
    lines = [f"Against the previous run (git {PREVIOUS_COMMIT}), mean change in success per profile: "
             + ", ".join(f"{m} {pp(float(g['change'].mean()))}" for m, g in frame.groupby("model", sort=False)) + "."]
    frame["family"] = frame["variant"].str.replace(r"\[.*$", "", regex=True)
    by_family = frame.groupby("family")["change"].mean().sort_values()
    lines += ["Mean change per strategy (over its variants and the four profiles): "
              + ", ".join(f"{f} {pp(float(v))}" for f, v in by_family.items()) + "."]
    big = frame[frame["change"].abs() > SWEEP_MOVE].sort_values("change")
    if big.empty:
        lines += [f"No cell moved by more than {pp(SWEEP_MOVE).lstrip('+')}."]
    else:
        lines += [f"{len(big)} of {len(frame)} cells moved by more than {pp(SWEEP_MOVE).lstrip('+')}: "
                  + "; ".join(f"{r.variant} under {r.model} {pct(r.before)} -> {pct(r.now)}"
                              for r in big.head(12).itertuples(index=False))
                  + ("; ..." if len(big) > 12 else "") + "."]
    return lines


def changes_lines() -> list[str]:
    """The model changes since the previous run, as a list."""
    return [f"- {c}" for c in CHANGES]
