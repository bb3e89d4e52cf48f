"""The validation checks and their verdicts: the ``Check`` row every target becomes, the verdict
rule, and the checks on the mock model itself: its mechanisms (M1-M3), its calibration through probes
for both look-up kinds (P6, P7, with each published point beside its anchor profile) and its mechanics
(P8-P10).

Verdict rule: a soft or hard check "agrees" / "passes" when our point estimate lies in the published
band; the CI is printed beside it so a reader can see how firm that is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core.rundir import CALLS_TABLE
from reports import stats
from reports.calibration import (
    LATENT_BANDS,
    PUBLISHED_POINTS,
    kilo,
    literal_band,
    probe_means,
    probe_ratios,
    with_lookup,
)
from reports.validation.data import Bundle, ci_pct, metric_ci, num, outcome_line, pct, pp


@dataclass(frozen=True)
class Check:
    """One validation target with our figure and its verdict: a row of the document's summary table."""

    id: str
    title: str
    #: hard | soft | direction (only the sign is compared) | claim | none (reported without a target)
    kind: str
    setup: str
    published: str
    ours: str
    #: pass | FAIL (hard) ; agree | disagree (soft) ; "direction agrees" / "direction differs" (direction,
    #: claims) ; "not modelled" ; "-"
    verdict: str
    #: Markdown paragraphs: the evidence, and for a disagreement the mechanism behind it.
    detail: str = ""

    @property
    def failed_hard(self) -> bool:
        """A hard check that failed: ``ctxbench validation`` exits non-zero on one."""
        return self.kind == "hard" and self.verdict == "FAIL"


def in_band(value: float, low: float, high: float) -> bool:
    """The verdict rule: our point estimate lies in the published band [low, high]."""
    return bool(np.isfinite(value) and low <= value <= high)


# Mechanism checks (M1-M3) -----------------------------------------------------------------------------


def mechanism_checks(b: Bundle) -> list[Check]:
    """M1 (the controls: an oracle solves everything, dropping everything solves nothing and costs least),
    M2 (only length and noise move a recall) and M3 (determinism and pairing)."""
    controls = b.sessions["controls"]
    out: list[Check] = []
    value, lo, hi = metric_ci(controls, "oracle-unbounded", "success_rate", b.rng("m1", "oracle"))
    failures = outcome_line(controls[controls["outcome"] != "success"], "oracle-unbounded")
    detail = ""
    if value != 1.0:
        detail = f"Failed sessions end: {failures}."
        shapes = b.loop_shapes
        mine = shapes[(shapes["run"] == "controls") & (shapes["strategy"] == "oracle-unbounded")]
        if len(mine):
            split = mine["shape"].value_counts()
            detail += (" Its stuck sessions' last 4 calls (loop shapes below): "
                       + ", ".join(f"{k} {v}" for k, v in split.items()) + "; steps "
                       + ", ".join(sorted(set(mine["step_id"].astype(str)))[:8]) + ". A re-fetch loop under the "
                       "oracle (perfect recall, no invented values) with an unbounded context means a fact the "
                       "step needs was never visible: no message holds it, so the agent repeats the visible call "
                       "that produced it (docs/model.md 2.2), and that output comes back the same, still without "
                       "the fact, e.g. a fact cut out of a capped output (`output_cap_chars`).")
    out.append(Check("M1a", "oracle profile with an unbounded context solves everything", "hard",
                     "controls: frontier mix, oracle profile", "100%", f"{pct(value)} {ci_pct(lo, hi)}",
                     "pass" if value == 1.0 else "FAIL", detail))
    value, lo, hi = metric_ci(controls, "drop_all", "success_rate", b.rng("m1", "drop_all"))
    drop = controls[controls["strategy"] == "drop_all"]
    won = drop[drop["outcome"] == "success"]
    agrees = hi <= 0.02
    detail = (f"We read \"about 0%\" as an upper CI bound of at most 2%. drop_all's sessions end: "
              f"{outcome_line(controls, 'drop_all')}. " + _drop_all_mechanism(b, drop))
    if not agrees:
        detail += (f" M1 describes a control that keeps the task message only; drop_all also keeps the current "
                   f"turn, so a session can still succeed where each step needs only facts that the task, the "
                   f"latest output or the agent's latest notes state. The {len(won)} successful sessions redid "
                   f"{num(won['redone_steps'].mean(), 1)} steps each on average (all drop_all sessions: "
                   f"{num(drop['redone_steps'].mean(), 1)}). A task-only control would see no result at all and "
                   f"could never succeed; ours is the weaker control the strategy spec asks for.")
        lowest = str(controls.groupby("strategy")["success"].mean().idxmin())
        if lowest == "drop_all":
            detail += (" M1's point, that fewer tokens alone earn nothing, still holds: drop_all has the lowest "
                       "success of the controls.")
    out.append(Check("M1b", "drop-everything strategy gives about 0% success", "hard",
                     "controls: frontier mix", "about 0%", f"{pct(value)} {ci_pct(lo, hi)}",
                     "pass" if agrees else "FAIL", detail))
    means = controls.groupby("strategy")["context_tokens_mean"].mean().sort_values()
    fewest = str(means.index[0])
    out.append(Check("M1c", "drop-everything uses the fewest tokens", "hard", "controls: frontier mix",
                     "fewest context tokens", f"drop_all {num(means.get('drop_all', np.nan))} tokens/call; "
                     f"next {means.index[1] if len(means) > 1 else '-'} "
                     f"{num(means.iloc[1]) if len(means) > 1 else '-'}",
                     "pass" if fewest == "drop_all" else "FAIL"))
    m2 = b.m2
    filler = m2[m2["kind"] == "shorter_filler"]
    deleted = m2[m2["kind"] == "delete_holder"]
    filler_ok = bool(len(filler)) and bool(filler["explained"].all()) and bool(
        (filler["u_before"] == filler["u_after"]).all())
    changed = int((filler["branch_before"] != filler["branch_after"]).sum())
    out.append(Check("M2a", "shorter fact-free filler changes outcomes only through L and noise", "hard",
                     "probe contexts from real text", "every change explained by p(L, x) crossing the same draw",
                     f"{len(filler)} cases, {changed} branch changes, {int(filler['explained'].sum())} explained",
                     "pass" if filler_ok else "FAIL"))
    deleted_ok = bool(len(deleted)) and not bool((deleted["branch_after"] == "recall").any())
    after = deleted["branch_after"].value_counts(normalize=True)
    out.append(Check("M2b", "deleting the only holder of a fact switches its branch away from recall", "hard",
                     "probe contexts from real text", "never recall afterwards",
                     f"{len(deleted)} cases; after deletion: " + ", ".join(f"{k} {pct(v)}" for k, v in after.items()),
                     "pass" if deleted_ok else "FAIL"))
    m3 = b.checks["m3"]
    keys = {s: set(map(tuple, g[["scenario", "session_index", "seed"]].to_numpy().tolist()))
            for s, g in controls.groupby("strategy")}
    paired_ok = len({frozenset(v) for v in keys.values()}) == 1
    out.append(Check("M3", "determinism and pairing", "hard", "a small run, serial vs 2 processes; controls",
                     "byte-identical tables; every strategy replays the same sessions",
                     f"sha256 {'identical' if m3['identical'] else 'DIFFER'}; seeds "
                     f"{'shared by all' if paired_ok else 'NOT shared'} {len(keys)} strategies",
                     "pass" if m3["identical"] and paired_ok else "FAIL"))
    return out


def _drop_all_mechanism(b: Bundle, drop: pd.DataFrame) -> str:
    """Why drop_all fails (docs/model.md 2, 2.2), with its sessions' redone steps as the evidence."""
    limit = b.manifests["controls"].model.get("max_turns")
    ended = drop["outcome"]
    return ("Mechanism: drop_all (docs/strategies.md 3.9) keeps the task and the current turn (everything from the "
            "last assistant message on), so the agent sees its latest call and that call's result, and no sign of "
            "the calls before them. It takes up the step after its latest call (docs/model.md 2, `next_step`); the "
            "first step that needs a fact no kept message states (it came from an older output) finds no trace of "
            "its source either, so unless it invents a value (p_confabulate: a call the tool refuses, or a wrong final "
            "answer), it goes back to the step that finds the fact (re-exploring, docs/model.md 2.2) and does every "
            "step from there again, seeing again only its latest call. It cycles over the same steps until a loop "
            "rule fires or the session reaches the turn limit"
            + (f" ({num(float(limit))} turns)" if limit else "")
            + f". Its sessions redo {num(drop['redone_steps'].mean(), 1)} steps each on average (`redone_steps`) in "
            f"{num(drop['turns'].mean(), 1)} turns; {pct(float((ended == 'max_turns').mean()))} end at the turn "
            f"limit and {pct(float((ended == 'stuck').mean()))} stuck.")


# Probes (P6, P7), mechanics (P8-P10) --------------------------------------------------------------------


def _probes(b: Bundle, kind: str, lookup: str) -> pd.DataFrame:
    probes = with_lookup(b.probes)
    return probes[(probes["probe"] == kind) & (probes["lookup"] == lookup)].drop(columns="probe")


def _probe_ratio(b: Bundle, prof: str, long: int, lookup: str = "latent") -> tuple[float, float, float]:
    """Recall at ``long`` over recall at 4K, with the samples paired across lengths (same draws)."""
    ratios = probe_ratios(_probes(b, "uniform", lookup))
    row = ratios[(ratios["profile"] == prof) & (ratios["length"] == long)]
    if row.empty:
        return float("nan"), float("nan"), float("nan")
    return float(row["ratio"].iloc[0]), float(row["ci_low"].iloc[0]), float(row["ci_high"].iloc[0])


#: The length a RULER row's 131,072-token column is probed at (every probe length fits the windows of
#: frontier, mid and small; 2.4% shorter, which these flat rows do not notice).
RULER_LONG_PROBE = 128_000


def _literal_targets(b: Bundle) -> list[tuple[str, int, str, float]]:
    """(profile, probe length, source row, published ratio) per profile: its RULER source row's longest
    length within the profile's probes over its 4K, from the sources the run recorded."""
    sources = b.checks.get("literal_sources", {})
    probed = _probes(b, "uniform", "literal")
    out = []
    for prof, source in sources.items():
        lengths = [int(n) for n in source["lengths"]]
        accuracy = [float(v) for v in source["accuracy"]]
        have = set(probed[probed["profile"] == prof]["length"].astype(int))
        longest = None
        for length, acc in zip(lengths, accuracy, strict=True):
            at = RULER_LONG_PROBE if length == 131_072 else length
            if at in have and length > 4096:
                longest = (at, acc)
        if longest is None or 4096 not in lengths:
            continue
        out.append((prof, longest[0], str(source["row"]), longest[1] / accuracy[lengths.index(4096)]))
    return out


def probe_checks(b: Bundle) -> list[Check]:
    """P6 (context rot ratios: latent against NoLiMa / Context Rot, literal against each profile's RULER
    row) and P7 (the U-shape, both look-up kinds) from the probes; P8 (retries), P9 (the StuckDetector
    rules) and P10 (contracts) from the mechanics experiments."""
    out: list[Check] = []
    n = int(b.checks["sizes"]["probe_samples"])
    setup = f"probes through real contexts, {n} per length, needle x uniform in [0.1, 0.9]"
    latent_sources = {
        ("frontier", 113_000): "62.4/87.3 = 0.715 [Context Rot, 2025, no arXiv]",
        ("mid", 32_000): "NoLiMa GPT-4o: 69.7/95.7 = 0.73 [NoLiMa, 2025, arXiv 2502.05167]",
    }
    for (prof, long), (low, high) in LATENT_BANDS.items():
        value, lo, hi = _probe_ratio(b, prof, long, "latent")
        out.append(Check("P6", f"context rot, latent look-up: {prof} recall at {kilo(long)} over 4K", "hard",
                         f"{setup}, latent needle", f"{latent_sources[(prof, long)]}, band [{low:.2f}, {high:.2f}]",
                         f"{num(value, 3)} [{num(lo, 3)}, {num(hi, 3)}]",
                         "pass" if in_band(value, low, high) else "FAIL"))
    for prof, long, row, published in _literal_targets(b):
        low, high = literal_band(published)
        value, lo, hi = _probe_ratio(b, prof, long, "literal")
        out.append(Check("P6", f"context rot, literal look-up: {prof} recall at {kilo(long)} over 4K", "hard",
                         f"{setup}, literal needle",
                         f"RULER {row}: {published:.3f} (the profile's literal source), band [{low:.2f}, {high:.2f}] "
                         "[RULER, 2024, arXiv 2404.06654]",
                         f"{num(value, 3)} [{num(lo, 3)}, {num(hi, 3)}]",
                         "pass" if in_band(value, low, high) else "FAIL"))
    for lookup in ("latent", "literal"):
        middle = _probes(b, "middle", lookup)
        start = _probes(b, "start", lookup)
        value, lo, hi = stats.ratio_of_means(middle["recalled"].to_numpy(dtype=float),
                                             start["recalled"].to_numpy(dtype=float),
                                             rng=b.rng("p7") if lookup == "latent" else b.rng("p7", lookup))
        passed = in_band(value, 0.66, 0.76)
        detail = ""
        if lookup == "literal":
            # Lost in the Middle's 0.71 is a multi-document QA score (a latent look-up); no source gives a
            # U-shape for a literal look-up, and the model applies none to one (docs/model.md 2.1).
            p_start = float(start["p"].mean()) if len(start) else float("nan")
            p_middle = float(middle["p"].mean()) if len(middle) else float("nan")
            out.append(Check(
                "P7", "U-shape, literal look-up: stress-2023 at 4K, recall in the middle over at the start", "none",
                f"probes, {n} each", "no published U-shape for literal look-ups; 0.71 is document QA (latent)",
                f"{num(value, 3)} [{num(lo, 3)}, {num(hi, 3)}]", "-",
                "A literal look-up has no middle-of-context trough (docs/model.md 2.1: D = 0 and m(x) = 1), so its "
                f"p_recall is the same at every position (mean p at the start {num(p_start, 3)}, in the middle "
                f"{num(p_middle, 3)}) and the ratio is 1 by construction, up to sampling. The trough comes from "
                "Lost in the Middle's multi-document QA, a latent look-up, which the latent row checks; the "
                "depth-resolved needle results we read (Kamradt's raw GPT-4-1106 run) lose needles only past 64K "
                "tokens and at 7-21% depth, not in the middle [Needle in a Haystack, 2023, no arXiv]."))
            continue
        if not passed and len(start) and len(middle):
            p_start, p_middle = float(start["p"].mean()), float(middle["p"].mean())
            if p_start >= 0.999:
                detail = (f"Mechanism: at the start the formula's p_recall = p_max * r(L) * m(x) / (1 - D/2) exceeds 1 "
                          f"for a {lookup} needle at 4K and is clamped to 1 (mean p at the start {num(p_start, 3)}, in "
                          f"the middle {num(p_middle, 3)}): r(4K) of the {lookup} curve is so close to 1 that the "
                          "position factor's normalisation pushes the start above 1, so the clamp, not the trough, "
                          "sets the ratio. Lost in the Middle's figure is a document-QA score, a latent "
                          "look-up, the only kind the trough applies to (docs/model.md 2.1).")
            else:
                detail = (f"The model's own probabilities give {num(p_middle / p_start, 3)} (mean p in the middle "
                          f"{num(p_middle, 3)}, at the start {num(p_start, 3)}); the probes' estimate differs from it "
                          f"by sampling ({len(start)} samples per position).")
        out.append(Check("P7", f"U-shape, {lookup} look-up: stress-2023 at 4K, recall in the middle over at the start",
                         "hard", f"probes, {n} each; the start needle sits at x = "
                         f"{num(float(start['x'].mean()) if len(start) else float('nan'), 3)} (after the prefix)",
                         "53.8/75.8 = 0.71 ± 0.05 [Lost in the Middle, 2023, arXiv 2307.03172]",
                         f"{num(value, 3)} [{num(lo, 3)}, {num(hi, 3)}]", "pass" if passed else "FAIL", detail))
    p8 = b.checks["p8"]
    ok = p8["outcome"] == "throttled" and p8["attempts"] == 6 and abs(p8["backoff_s"] - 124) < 1e-9 and p8["wall_s"] < 1
    out.append(Check("P8", "strands retry under p_throttle = 1", "hard", "one k8s_crashloop session, oracle profile",
                     "6 calls, sleeps 4/8/16/32/64 s, then throttled, < 1 s real time [Strands Agents SDK, 2026]",
                     f"{p8['attempts']} calls, {num(p8['backoff_s'])} s of back-off, outcome {p8['outcome']}, "
                     f"{num(p8['wall_s'] * 1000, 1)} ms real time", "pass" if ok else "FAIL"))
    cases = b.checks["p9"]
    detail = "\n".join(f"- {c['case']}: expected {c['expected']}; got stuck={c['stuck']} rule={c['rule'] or '-'} "
                       f"nudge={c['nudge']}" for c in cases)
    out.append(Check("P9", "StuckDetector rules", "hard", "hand-written event logs",
                     "the OpenHands cases [OpenHands software-agent-sdk, 2026]",
                     f"{sum(c['agrees'] for c in cases)} of {len(cases)} cases as published",
                     "pass" if all(c["agrees"] for c in cases) else "FAIL", detail))
    out += [_contracts_check(b)]
    return out


def _contracts_check(b: Bundle) -> Check:
    rows = []
    for run_name in ("controls", "seed-article"):
        frame = b.sessions[run_name]
        rows.append(frame[frame["contracts"].astype(bool)])
    on = pd.concat(rows, ignore_index=True)
    reaching = int(on["syntax_errors_reaching_tool"].sum())
    emitted = int(on["tool_syntax_errors"].sum())
    malformed_stuck = 0
    for run_name in ("controls", "seed-article"):
        malformed_stuck += _stuck_by_malformed_alone(b.out_dir / run_name, b.sessions[run_name])
    ok = reaching == 0 and malformed_stuck == 0
    return Check("P10", "contracts: no syntax error reaches a tool; no loop from malformed calls alone", "hard",
                 "every contracts-on session of the controls and seed-article runs",
                 "0 reaching a tool; 0 stuck from malformed calls alone",
                 f"{len(on)} sessions, {emitted} malformed calls emitted, {reaching} reached a tool; "
                 f"{malformed_stuck} stuck sessions whose last 4 calls were all malformed",
                 "pass" if ok else "FAIL")


def _stuck_by_malformed_alone(run_dir: Path, sessions: pd.DataFrame) -> int:
    stuck = sessions[sessions["contracts"].astype(bool) & (sessions["outcome"] == "stuck")]
    if stuck.empty:
        return 0
    calls = pd.read_parquet(run_dir / CALLS_TABLE,
                            columns=["scenario", "session_index", "strategy", "call_kind", "call_index",
                                     "malformed_kind"])
    calls = calls[calls["call_kind"] == "agent"]
    keys = stuck[["scenario", "session_index", "strategy"]]
    joined = calls.merge(keys, on=["scenario", "session_index", "strategy"])
    count = 0
    for _, group in joined.groupby(["scenario", "session_index", "strategy"]):
        # A malformed call is recorded with its intended purpose as its action and the kind of damage in
        # malformed_kind (empty for a well-formed call).
        last = group.sort_values("call_index")["malformed_kind"].tail(4)
        if len(last) == 4 and (last != "").all():
            count += 1
    return count


# Calibration: the published points beside our profiles -------------------------------------------------


def calibration_gaps(b: Bundle) -> list[list[str]]:
    """Each published absolute point beside the recall of its anchor profile at the same length (or
    position): the formula's, and the probes' with a 95% interval when that length was probed."""
    probes = with_lookup(b.probes)
    means = probe_means(probes[probes["probe"] == "uniform"].drop(columns="probe"))
    length_curve, position_curve = with_lookup(b.length_curve), with_lookup(b.position_curve)
    rows = []
    for point in PUBLISHED_POINTS:
        if point.length is None:
            continue
        if point.position is None:
            curve = length_curve[(length_curve["profile"] == point.profile)
                                 & (length_curve["lookup"] == point.lookup)].sort_values("length")
            formula = float(np.interp(np.log(point.length), np.log(curve["length"].to_numpy(dtype=float)),
                                      curve["recall"].to_numpy(dtype=float)))
            probed = means[(means["profile"] == point.profile) & (means["lookup"] == point.lookup)
                           & (means["length"] == point.length)]
            probe = "-"
            if len(probed):
                first = probed.iloc[0]
                probe = f"{pct(float(first['recall']))} {ci_pct(float(first['ci_low']), float(first['ci_high']))}"
            where = f"{kilo(point.length)}, needle x uniform in [0.1, 0.9]"
        else:
            curve = position_curve[(position_curve["profile"] == point.profile)
                                   & (position_curve["lookup"] == point.lookup)].sort_values("x")
            formula = float(np.interp(point.position, curve["x"].to_numpy(dtype=float),
                                      curve["recall"].to_numpy(dtype=float)))
            kind = "start" if point.position == 0 else "middle"
            probed_rows = probes[(probes["probe"] == kind) & (probes["lookup"] == point.lookup)]["recalled"].to_numpy(
                dtype=float)
            if len(probed_rows):
                value, lo, hi = stats.bootstrap(probed_rows, stats.METRICS["success_rate"], rng=b.rng("gap", kind))
                probe = f"{pct(value)} {ci_pct(lo, hi)}"
            else:
                probe = "-"
            where = f"{kilo(point.length)}, x = {point.position:g}"
        rows.append([f"{point.source}: {point.model}", point.profile, point.lookup, where, pct(point.recall),
                     pct(formula), probe, pp(formula - point.recall)])
    return rows
