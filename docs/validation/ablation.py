"""What each mechanism of mock model v3 moves: the validation's comparisons re-run with one mechanism
switched off at a time (each off is the v2 rule it replaced), against all of them on.

Setups, as the validation runs them:
- The Complexity Trap in the paper's setting (``examples/complexity-trap.toml``): code_repair, caching off,
  100,000-character output cap; raw (unbounded), masking-M10 and llm-summary-N21-M10; under mid and
  frontier. Figures: P1 (cost against raw), P2 (solve rate against raw, pp), P3 (turns against raw), and
  the redone steps of each strategy.
- The drop-everything control (M1b): drop_all on the frontier mix (the ``mix`` family).

Arms (one mechanism off each; docs/model.md "v3 in one paragraph" names them):
- ``context progress off``: the next step is the harness's order, not read from the context (change 1);
- ``visible sources off``: a missing fact is fetched again by its producing call whatever the context
  shows (change 2);
- ``notes off``: ``p_note = 0`` (change 3);
- ``confabulation at the v2 rate``: ``p_confabulate = 1 - p_refetch`` of v2 (change 4: frontier 0.10,
  mid 0.20, small 0.40, stress-2023 0.50);
- ``forms off``: only a fact's own value counts as the fact (change 6);
- ``report grading``: code_repair graded on its five-fact report again, the edit's line given (change 7);
- ``summaries exact``: ``p_summary_error = 0`` and ``p_record_drop = 0`` (change 8);
- ``literal curve of RULER's 13-task means``: the literal recall curves v2 fitted to RULER's 13-task means
  (change 5's refit to its eight needle tasks undone).
Not ablated: the literal look-ups' trough and the look-up kind by holder (change 5) and the stubs that name
no facts (change 9): switching them off needs the retired code paths.

Sensitivity: each new v3 knob (``p_confabulate``, ``p_note``, ``p_summary_error``, ``p_record_drop``) at half
and twice the profile's value, the same figures.

Run: ``python docs/validation/ablation.py [--sessions N] [--jobs J]`` (about 14 minutes at the default 300
sessions on two cores). It writes ``docs/validation/ablation.json`` and ``docs/validation/ablation.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import scenarios  # noqa: E402
import strategies  # noqa: E402
from harness.core.crn import session_seed  # noqa: E402
from harness.sim.kernel import replay  # noqa: E402
from harness.sim.model import Mechanisms  # noqa: E402
from harness.sim.profiles import profile  # noqa: E402

#: v2's p_refetch per profile: the "confabulation at the v2 rate" arm invents with 1 - p_refetch.
V2_P_REFETCH = {"frontier": 0.90, "mid": 0.80, "small": 0.60, "stress-2023": 0.50}
#: The literal curves v2 fitted to RULER's 13-task means (L_half_literal, k_literal), before v3 fitted them to
#: its eight needle tasks.
V2_LITERAL = {"frontier": (1e9, 0.315), "mid": (898_000, 0.785), "small": (887_000, 0.711),
              "stress-2023": (63_500, 2.097)}
TRAP = {"raw": ("unbounded", {}), "masking-M10": ("observation_masking", {"keep_turns": 10}),
        "llm-summary-N21-M10": ("summarize", {"trigger_turns": 21, "keep_turns": 10, "pin_first": 1})}
TRAP_CAP = 100_000
MIX_SEED = 0
RESAMPLES = 2000


@dataclass(frozen=True)
class Arm:
    name: str
    mechanisms: Mechanisms = field(default_factory=Mechanisms)
    forms: bool = True
    profile_overrides: Callable[[str], dict[str, Any]] = lambda _: {}
    scenario_params: dict[str, Any] = field(default_factory=dict)


def _v2_confabulation(name: str) -> dict[str, Any]:
    return {"p_confabulate": round(1 - V2_P_REFETCH[name], 2)}


def _v2_literal(name: str) -> dict[str, Any]:
    l_half, k = V2_LITERAL[name]
    return {"L_half_literal": l_half, "k_literal": k}


def _scaled(knob: str, factor: float) -> Callable[[str], dict[str, Any]]:
    """The profile's own value of ``knob`` times ``factor`` (at most 1)."""
    return lambda name: {knob: min(1.0, getattr(profile(name), knob) * factor)}


#: The new v3 knobs, each at half and twice its value (the sensitivity the validation shows).
KNOBS = ("p_confabulate", "p_note", "p_summary_error", "p_record_drop")


ARMS = (
    Arm("v3 (all on)"),
    Arm("context progress off", mechanisms=Mechanisms(context_progress=False)),
    Arm("visible sources off", mechanisms=Mechanisms(visible_sources=False)),
    Arm("notes off", profile_overrides=lambda _: {"p_note": 0.0}),
    Arm("confabulation at the v2 rate", profile_overrides=_v2_confabulation),
    Arm("forms off", forms=False),
    Arm("report grading", scenario_params={"graded_on": "report"}),
    Arm("summaries exact", profile_overrides=lambda _: {"p_summary_error": 0.0, "p_record_drop": 0.0}),
    Arm("literal curve of RULER's 13-task means", profile_overrides=_v2_literal),
    *(Arm(f"{knob} x{factor:g}", profile_overrides=_scaled(knob, factor)) for knob in KNOBS for factor in (0.5, 2.0)),
)


def _trap_session(task: tuple[int, str, int]) -> dict[str, Any]:
    arm_index, model, index = task
    arm = ARMS[arm_index]
    script = scenarios.generate("code_repair", session_seed(0, "code_repair", index), **arm.scenario_params)
    prof = profile(model, caching=False, **arm.profile_overrides(model))
    out: dict[str, Any] = {}
    for label, (name, params) in TRAP.items():
        record = replay(script, strategies.create(name, **params), prof, mechanisms=arm.mechanisms, forms=arm.forms,
                        output_cap_chars=TRAP_CAP).record
        out[label] = (record.outcome == "success", record.cost_usd, record.turns, record.redone_steps)
    return out


def _mix_session(task: tuple[int, int]) -> bool:
    arm_index, index = task
    arm = ARMS[arm_index]
    script = scenarios.generate("mix", session_seed(MIX_SEED, "mix", index))
    prof = profile("frontier", **arm.profile_overrides("frontier"))
    record = replay(script, "drop_all", prof, mechanisms=arm.mechanisms, forms=arm.forms).record
    return record.outcome == "success"


def _paired_ci(diff: np.ndarray, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(RESAMPLES, len(diff)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def _ratio_ci(num: np.ndarray, den: np.ndarray, seed: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(num), size=(RESAMPLES, len(num)))
    ratios = num[idx].sum(axis=1) / den[idx].sum(axis=1)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(num.sum() / den.sum()), float(lo), float(hi)


def trap_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """P1, P2, P3 and redone steps of one arm and model, with 95% paired bootstrap intervals."""
    cols = {label: np.array([row[label] for row in rows], dtype=float) for label in TRAP}
    raw = cols["raw"]
    figures: dict[str, Any] = {"raw_solve": float(raw[:, 0].mean()), "raw_redone": float(raw[:, 3].mean())}
    for i, label in enumerate(("masking-M10", "llm-summary-N21-M10")):
        other = cols[label]
        diff = (other[:, 0] - raw[:, 0]) * 100
        lo, hi = _paired_ci(diff, 11 + i)
        cost, clo, chi = _ratio_ci(other[:, 1], raw[:, 1], 21 + i)
        turns, tlo, thi = _ratio_ci(other[:, 2], raw[:, 2], 31 + i)
        figures[label] = {"solve": float(other[:, 0].mean()), "p2_pp": [float(diff.mean()), lo, hi],
                          "p1_cost": [(cost - 1) * 100, (clo - 1) * 100, (chi - 1) * 100],
                          "p3_turns": [turns, tlo, thi], "redone": float(other[:, 3].mean())}
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=300, help="paired sessions per arm and setup (300)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--out", type=Path, default=HERE, help="folder for ablation.json and ablation.md")
    args = parser.parse_args(argv)
    started = time.monotonic()
    results: dict[str, Any] = {"sessions": args.sessions, "arms": {}}
    with ProcessPoolExecutor(args.jobs) as pool:
        for a, arm in enumerate(ARMS):
            entry: dict[str, Any] = {}
            for model in ("mid", "frontier"):
                rows = list(pool.map(_trap_session, [(a, model, i) for i in range(args.sessions)], chunksize=8))
                entry[model] = trap_figures(rows)
            solved = np.array(list(pool.map(_mix_session, [(a, i) for i in range(args.sessions)], chunksize=8)),
                              dtype=float)
            entry["m1b_drop_all_solve"] = float(solved.mean())
            results["arms"][arm.name] = entry
            print(f"ablation: {arm.name} done ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    (args.out / "ablation.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    (args.out / "ablation.md").write_text(render(results))
    return 0


def _pp(v: list[float]) -> str:
    return f"{v[0]:+.1f} pp [{v[1]:+.1f}, {v[2]:+.1f}]"


def _pct(v: list[float]) -> str:
    return f"{v[0]:+.1f}% [{v[1]:+.1f}, {v[2]:+.1f}]"


def render(results: dict[str, Any]) -> str:
    """The ablation table: per arm, model and figure, and each figure's move against all mechanisms on."""
    n = results["sessions"]
    lines = ["# What each v3 mechanism moves (ablation)", "",
             f"Generated by `python docs/validation/ablation.py --sessions {n}`; do not edit by hand. Each row "
             "switches one v3 mechanism off (its v2 rule back) and re-runs the paper's setting "
             f"(`examples/complexity-trap.toml`, {n} paired sessions per model) and the drop-everything control "
             f"(M1b, {n} sessions of the frontier mix). Intervals: 95% paired bootstrap over sessions. "
             "\"moved\" is the row's point minus the all-on row's.", ""]
    base = results["arms"]["v3 (all on)"]
    for model in ("mid", "frontier"):
        lines += [f"## {model}", "",
                  "| arm | raw solve | P2 masking | P2 summary | P1 masking cost | P1 summary cost | "
                  "P3 summary/raw turns | redone steps (raw / masking / summary) | M1b drop_all solve |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, entry in results["arms"].items():
            if name.startswith(KNOBS):
                continue
            lines.append(_row(name, entry, base, model))
        lines += ["", f"Sensitivity ({model}): each new knob at half and twice its value.", "",
                  "| knob | raw solve | P2 masking | P2 summary | P1 masking cost | P1 summary cost | "
                  "P3 summary/raw turns | redone steps (raw / masking / summary) | M1b drop_all solve |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name, entry in results["arms"].items():
            if name.startswith(KNOBS):
                lines.append(_row(name, entry, base, model))
        lines.append("")
    return "\n".join(lines)


def _row(name: str, entry: dict[str, Any], base: dict[str, Any], model: str) -> str:
    """One table row: the arm's figures under ``model``, and how far its P2 points moved from all-on."""
    f, b = entry[model], base[model]
    mask, summ = f["masking-M10"], f["llm-summary-N21-M10"]
    moved = "" if name == "v3 (all on)" else (
        f" (moved {mask['p2_pp'][0] - b['masking-M10']['p2_pp'][0]:+.1f} / "
        f"{summ['p2_pp'][0] - b['llm-summary-N21-M10']['p2_pp'][0]:+.1f} pp)")
    return (f"| {name}{moved} | {f['raw_solve']:.1%} | {_pp(mask['p2_pp'])} | {_pp(summ['p2_pp'])} | "
            f"{_pct(mask['p1_cost'])} | {_pct(summ['p1_cost'])} | "
            f"{summ['p3_turns'][0]:.3f} [{summ['p3_turns'][1]:.3f}, {summ['p3_turns'][2]:.3f}] | "
            f"{f['raw_redone']:.2f} / {mask['redone']:.2f} / {summ['redone']:.2f} | "
            f"{entry['m1b_drop_all_solve']:.1%} |")

if __name__ == "__main__":
    raise SystemExit(main())
