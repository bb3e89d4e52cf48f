"""A finished validation directory (what ``harness.run.validation`` wrote), loaded once as a
``Bundle``, and what every validation check measures with: a metric with its 95% interval, two
strategies' columns over the sessions both ran, outcome shares, the run's strategy order, and the
number formats of ``docs/validation.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from harness.core.errors import first_problem
from harness.core.rundir import MANIFEST_FILE, SESSIONS_TABLE, Manifest
from reports import stats

#: The run directories a validation directory holds, one per experiment.
RUNS = ("controls", "trap-spec", "complexity-trap", "complexity-trap-frontier", "less-context", "agentdiet",
        "seed-article", "seed-article-profiles", "seed-article-ablation", "sweep")
#: The tables beside the runs.
TABLES = ("probes.parquet", "length_curve.parquet", "position_curve.parquet", "m2.parquet", "observation_share.parquet",
          "loop_shapes.parquet")


@dataclass
class Bundle:
    """Everything a validation directory holds, loaded once."""

    out_dir: Path
    sessions: dict[str, pd.DataFrame]
    manifests: dict[str, Manifest]
    probes: pd.DataFrame
    length_curve: pd.DataFrame
    position_curve: pd.DataFrame
    m2: pd.DataFrame
    observation: pd.DataFrame
    #: One row per stuck session of the runs whose loops are classified (harness.run.validation.loop_shapes).
    loop_shapes: pd.DataFrame
    checks: dict[str, Any]
    rng_seed: int = stats.DEFAULT_SEED

    def rng(self, *parts: str) -> np.random.Generator:
        """A generator of its own per purpose (``parts`` name it), so no two figures share a stream."""
        return stats.rng_for(self.rng_seed, "validation", *parts)


class ValidationInputError(ValueError):
    """The validation directory is missing something: one line naming it."""


def load_bundle(out_dir: str | Path) -> Bundle:
    """Everything ``out_dir`` holds; a ValidationInputError naming the first file missing or unreadable."""
    root = Path(out_dir)
    missing = [n for n in RUNS if not (root / n / SESSIONS_TABLE).is_file()]
    missing += [f"{n}/{MANIFEST_FILE}" for n in RUNS if not (root / n / MANIFEST_FILE).is_file()]
    missing += [n for n in (*TABLES, "checks.json") if not (root / n).is_file()]
    if missing:
        raise ValidationInputError(f"{root}: not a finished validation directory (missing {missing[0]}; run "
                                   "`ctxbench validation` to make it)")
    return Bundle(
        out_dir=root,
        sessions={n: stats.load_sessions(root / n) for n in RUNS},
        manifests={n: _read_manifest(root / n) for n in RUNS},
        probes=pd.read_parquet(root / "probes.parquet"),
        length_curve=pd.read_parquet(root / "length_curve.parquet"),
        position_curve=pd.read_parquet(root / "position_curve.parquet"),
        m2=pd.read_parquet(root / "m2.parquet"),
        observation=pd.read_parquet(root / "observation_share.parquet"),
        loop_shapes=pd.read_parquet(root / "loop_shapes.parquet"),
        checks=json.loads((root / "checks.json").read_text()),
    )


def _read_manifest(run_dir: Path) -> Manifest:
    try:
        return Manifest.read(run_dir)
    except ValidationError as error:
        raise ValidationInputError(f"{run_dir / MANIFEST_FILE}: not a valid manifest "
                                   f"({first_problem(error)})") from None
    except OSError as error:
        raise ValidationInputError(f"{run_dir / MANIFEST_FILE}: cannot be read ({error})") from None


# Formatting -------------------------------------------------------------------------------------------


def pct(x: float, digits: int = 1) -> str:
    """A share as a percentage: 0.125 -> "12.5%"; "n/a" when not finite."""
    return "n/a" if not np.isfinite(x) else f"{100 * x:.{digits}f}%"


def pp(x: float) -> str:
    """A difference of shares in percentage points: 0.014 -> "+1.4 pp"; "n/a" when not finite."""
    return "n/a" if not np.isfinite(x) else f"{100 * x:+.1f} pp"


def ci_pct(lo: float, hi: float) -> str:
    """An interval of shares: "[10.0%, 15.0%]"."""
    return f"[{pct(lo)}, {pct(hi)}]"


def num(x: float, digits: int = 0) -> str:
    """A number with thousands separators and ``digits`` decimals; "n/a" when not finite."""
    return "n/a" if not np.isfinite(x) else f"{x:,.{digits}f}"


# Measuring --------------------------------------------------------------------------------------------


def metric_ci(frame: pd.DataFrame, strategy: str, metric: str, rng: np.random.Generator) -> tuple[float, float, float]:
    """(value, low, high) of the headline ``metric`` over ``strategy``'s sessions in ``frame``."""
    group = frame[frame["strategy"] == strategy]
    m = stats.METRICS[metric]
    values = group[m.column].to_numpy(dtype=float)
    den = group[m.denominator].to_numpy(dtype=float) if m.denominator else None
    return stats.bootstrap(values, m, denominators=den, rng=rng)


def paired_change(b: Bundle, frame: pd.DataFrame, strategy: str, baseline: str, column: str,
                  *tag: str) -> tuple[float, float, float]:
    """(change, low, high) of the mean of ``column`` of ``strategy`` against ``baseline`` over the sessions
    both ran, as a share (-0.5 = halved), with a paired bootstrap interval."""
    a, base = paired_columns(frame, strategy, baseline, column)
    ratio, lo, hi = stats.paired_ratio(a, base, rng=b.rng("change", strategy, baseline, column, *tag))
    return ratio - 1, lo - 1, hi - 1


def paired_difference(b: Bundle, frame: pd.DataFrame, strategy: str, baseline: str, column: str,
                      *tag: str) -> tuple[float, float, float]:
    """(difference, low, high) of the mean of ``column`` (e.g. success) of ``strategy`` minus ``baseline``
    over the sessions both ran, with a paired bootstrap interval."""
    a, base = paired_columns(frame, strategy, baseline, column)
    if not len(a):
        return float("nan"), float("nan"), float("nan")
    rng = b.rng("difference", strategy, baseline, column, *tag)
    idx = rng.integers(0, len(a), size=(stats.DEFAULT_RESAMPLES, len(a)))
    samples = a[idx].mean(axis=-1) - base[idx].mean(axis=-1)
    return float(a.mean() - base.mean()), float(np.quantile(samples, 0.025)), float(np.quantile(samples, 0.975))


def paired_columns(frame: pd.DataFrame, a: str, b: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    """``column`` of strategy a and of strategy b over the sessions both ran, aligned."""
    left = frame[frame["strategy"] == a].set_index(stats.SCRIPT_KEY)[column]
    right = frame[frame["strategy"] == b].set_index(stats.SCRIPT_KEY)[column]
    common = left.index.intersection(right.index).sort_values()
    return left.loc[common].to_numpy(dtype=float), right.loc[common].to_numpy(dtype=float)


def outcome_line(frame: pd.DataFrame, strategy: str, top: int = 4) -> str:
    """How ``strategy``'s sessions ended, the ``top`` outcomes by share: "success 40.0%, stuck 35.0%"."""
    shares = frame[frame["strategy"] == strategy]["outcome"].value_counts(normalize=True)
    return ", ".join(f"{k} {pct(v)}" for k, v in shares.head(top).items())


def run_order(frame: pd.DataFrame, manifest: Manifest) -> list[str]:
    """The run's strategies in config order (the manifest's), then any others."""
    listed = [str(s.get("label") or s.get("name")) for s in manifest.strategies]
    present = set(frame["strategy"])
    return [s for s in listed if s in present] + sorted(present - set(listed))
