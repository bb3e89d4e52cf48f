"""The reference comparison with The Complexity Trap (arXiv 2508.21433): checks P1-P5 (cost, solve
rate, elongation, summary cost, observation share) in the paper's setting (``examples/complexity-trap.toml``
under mid and frontier) against the paper, the same figures in the ops-mix setup with no target, the
precondition that raw history fits the window, the mechanism behind each disagreement (read from the
sessions and the calls' decision traces), and the reference tables of the paper's setting.

P3 (elongation) is a soft check on summary/raw turns: the one mechanism of the mock model that lengthens a
trajectory is work done again because its traces left the context (docs/model.md 2, ``redone_steps``), and
the check's detail prints the redone steps of each strategy beside the turns.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core.rundir import CALLS_TABLE
from reports import stats
from reports.validation.checks import Check, in_band
from reports.validation.data import Bundle, ci_pct, metric_ci, num, outcome_line, paired_columns, pct, pp, run_order

#: The labels of the paper's three agents in both setups' configs.
TRAP_RAW, TRAP_MASK, TRAP_SUMMARY = "raw", "masking-M10", "llm-summary-N21-M10"
#: How the document cites the paper.
TRAP = "The Complexity Trap, 2025, arXiv 2508.21433"
#: The setups P1-P5 are measured in: the paper's setting under mid and frontier (with targets), and the
#: ops mix of docs/model.md 11 (no target: its payloads are not the paper's).
TRAP_SETUPS = {
    "complexity-trap": "paper's setting (examples/complexity-trap.toml): code_repair, mid, caching off",
    "complexity-trap-frontier": "paper's setting (examples/complexity-trap.toml): code_repair, frontier, caching off",
    "trap-spec": "ops mix, no target: frontier, default mix, caching off",
}
#: Setups whose figures are reported without a target.
UNTARGETED = frozenset({"trap-spec"})
#: The precondition of P1/P2 in the paper's setting: raw history rarely overflows (the paper's raw agents
#: fit their windows; an overflowed session stops paying and fails, which is not what P1/P2 measure).
RAW_OVERFLOW_MAX = 0.10
#: Summary turns over raw turns per agent in the paper's own data (Qwen3-Coder 1.20, Gemini 2.5 Flash
#: 1.03, Flash thinking 0.86, Qwen3-32B 0.95, Qwen3-32B thinking 1.06; the authors' per-instance CSV).
PAPER_TURN_RATIOS = (0.86, 1.20)
#: P3's band on summary turns over raw turns (docs/model.md 11; the paper: about +15% for Qwen3-Coder).
ELONGATION_BAND = (1.0, 1.3)


def trap_checks(b: Bundle) -> list[Check]:
    """P0-P5 in each setup of ``TRAP_SETUPS``, in that order."""
    out: list[Check] = []
    for run_name, setup in TRAP_SETUPS.items():
        frame = b.sessions[run_name]
        out += _trap_checks_for(b, run_name, setup, frame)
    return out


def _judged(run_name: str, check: Check) -> Check:
    """``check`` as the summary lists it: as computed in a targeted setup, without kind or verdict (and
    without the disagreement's detail) in an untargeted one."""
    if run_name not in UNTARGETED or check.kind not in ("soft", "hard"):
        return check
    return Check(check.id, check.title, "none", check.setup, f"{check.published}; no target in this setup",
                 check.ours, "-")


def _cost_change(b: Bundle, frame: pd.DataFrame, strategy: str, baseline: str, tag: str) -> tuple[float, float, float]:
    a, base = paired_columns(frame, strategy, baseline, "cost_usd")
    ratio, lo, hi = stats.paired_ratio(a, base, rng=b.rng(tag, strategy, baseline))
    return ratio - 1, lo - 1, hi - 1


def _trap_checks_for(b: Bundle, run_name: str, setup: str, frame: pd.DataFrame) -> list[Check]:
    out: list[Check] = []
    raw_outcomes = outcome_line(frame, TRAP_RAW)
    raw = frame[frame["strategy"] == TRAP_RAW]
    overflow = raw["outcome"].eq("overflow").to_numpy(dtype=float)
    value, lo, hi = stats.bootstrap(overflow, stats.METRICS["success_rate"], rng=b.rng("p0", run_name))
    out.append(_judged(run_name, Check(
        "P0", "precondition of P1/P2: raw history fits the window (raw sessions that overflow)", "soft", setup,
        f"under {pct(RAW_OVERFLOW_MAX, 0)} (the paper's raw agents fit their windows) [{TRAP}]",
        f"{pct(value)} {ci_pct(lo, hi)}", "agree" if in_band(value, 0.0, RAW_OVERFLOW_MAX) else "disagree",
        f"Raw's sessions end: {raw_outcomes}." if not in_band(value, 0.0, RAW_OVERFLOW_MAX) else "")))
    for strategy, published in ((TRAP_MASK, "-52.7%"), (TRAP_SUMMARY, "-50.4%")):
        change, lo, hi = _cost_change(b, frame, strategy, TRAP_RAW, f"p1-{run_name}")
        agrees = in_band(change, -0.65, -0.35)
        detail = ""
        if not agrees:
            a, base = paired_columns(frame, strategy, TRAP_RAW, "turns")
            detail = (f"Mean turns: {strategy} {num(a.mean(), 1)} vs raw {num(base.mean(), 1)}. Raw's sessions end: "
                      f"{raw_outcomes}; {strategy}'s: {outcome_line(frame, strategy)}. ")
            detail += _cost_mechanism(frame, strategy)
        out.append(_judged(run_name, Check(
            "P1", f"cost of {strategy} against raw (caching off)", "soft", setup,
            f"{published} (band -35% to -65%) [{TRAP}]", f"{pct(change)} {ci_pct(lo, hi)}",
            "agree" if agrees else "disagree", detail)))
        if run_name == "trap-spec":
            change, lo, hi = _cost_change(b, frame, f"{strategy}+cache", f"{TRAP_RAW}+cache", f"p1c-{run_name}")
            out.append(Check("P1", f"cost of {strategy} against raw, caching on", "none", setup.replace(
                "caching off", "caching on"), "no target (raw caches well, so the gap may shrink)",
                f"{pct(change)} {ci_pct(lo, hi)}", "-"))
    for strategy, published in ((TRAP_MASK, "+1.4 pp (54.8% vs 53.4%)"), (TRAP_SUMMARY, "+0.4 pp (53.8% vs 53.4%)")):
        a, base = paired_columns(frame, strategy, TRAP_RAW, "success")
        diff = float(a.mean() - base.mean()) if len(a) else np.nan
        rng = b.rng(f"p2-{run_name}", strategy)
        idx = rng.integers(0, max(len(a), 1), size=(stats.DEFAULT_RESAMPLES, len(a)))
        samples = a[idx].mean(axis=-1) - base[idx].mean(axis=-1) if len(a) else np.array([np.nan])
        lo, hi = (float(np.quantile(samples, 0.025)), float(np.quantile(samples, 0.975))) if len(a) else (np.nan,) * 2
        agrees = in_band(diff, -0.05, 0.05)
        detail = ""
        if not agrees:
            detail = (f"Success: {strategy} {pct(a.mean())}, raw {pct(base.mean())}. Raw's sessions end: "
                      f"{raw_outcomes}; {strategy}'s: {outcome_line(frame, strategy)}; loops by rule for {strategy}: "
                      f"{_loop_line(frame, strategy)}. ") + _solve_mechanism(
                          frame, strategy, b.out_dir / run_name, patch_graded=_patch_graded(b, run_name))
        out.append(_judged(run_name, Check(
            "P2", f"solve rate of {strategy} against raw", "soft", setup, f"{published}, within ±5 pp [{TRAP}]",
            f"{pp(diff)} [{pp(lo)}, {pp(hi)}]", "agree" if agrees else "disagree", detail)))
    out.append(_judged(run_name, _elongation_check(b, run_name, setup, frame)))
    group = frame[frame["strategy"] == TRAP_SUMMARY]
    share, lo, hi = _ratio_of_sums(group["summary_cost_usd"].to_numpy(dtype=float), group["cost_usd"].to_numpy(
        dtype=float), b.rng(f"p4-{run_name}"))
    out.append(_judged(run_name, Check(
        "P4", "summary calls' share of the summary strategy's cost", "soft", setup,
        f"0.65-7.2% (band 1-10%) [{TRAP}]", f"{pct(share, 2)} {ci_pct(lo, hi)}",
        "agree" if in_band(share, 0.01, 0.10) else "disagree")))
    obs = b.observation[b.observation["setup"] == run_name]
    share, lo, hi = _ratio_of_sums(obs["observation_tokens"].to_numpy(dtype=float),
                                   obs["context_tokens"].to_numpy(dtype=float), b.rng(f"p5-{run_name}"))
    out.append(_judged(run_name, Check(
        "P5", "observation tokens' share of the raw agent's context", "soft",
        f"{setup}; {len(obs)} raw sessions, context at the end", f"83.9% (band 70-90%) [{TRAP}]",
        f"{pct(share)} {ci_pct(lo, hi)}", "agree" if in_band(share, 0.70, 0.90) else "disagree")))
    return out


def elongation_verdict(ratio: float) -> str:
    """P3's verdict: summary/raw turns in `ELONGATION_BAND`."""
    return "agree" if in_band(ratio, *ELONGATION_BAND) else "disagree"


def _elongation_check(b: Bundle, run_name: str, setup: str, frame: pd.DataFrame) -> Check:
    """P3: summary turns over raw turns against the band, and, in the detail, summary against masking and
    the redone steps behind any elongation."""
    s_turns, m_turns = paired_columns(frame, TRAP_SUMMARY, TRAP_MASK, "turns")
    sr, raw_turns = paired_columns(frame, TRAP_SUMMARY, TRAP_RAW, "turns")
    ratio, lo, hi = stats.paired_ratio(sr, raw_turns, rng=b.rng(f"p3-{run_name}"))
    more = float(s_turns.mean() - m_turns.mean()) if len(s_turns) else np.nan
    redone = {s: float(frame[frame["strategy"] == s]["redone_steps"].mean())
              for s in (TRAP_RAW, TRAP_MASK, TRAP_SUMMARY)}
    if not np.isfinite(more):
        versus = "Summary against masking: no paired sessions."
    elif more > 0:
        versus = f"Summary runs {num(more, 1)} more turns than masking per session, as the paper reports."
    else:
        versus = (f"Summary runs {num(-more, 1)} fewer turns than masking per session" if more < 0 else
                  "Summary runs as many turns as masking") + ", where the paper reports more."
    detail = ("Mechanism: the mock model lengthens a trajectory in one way (docs/model.md 2): the agent takes up the "
              "step after the last one its context shows done, so work whose every trace has left the context is "
              "done again (`redone_steps`). That happens when a summary's record of calls done leaves calls out "
              "(p_record_drop, docs/model.md 4) and no later step is shown done, and when a fact is lost together "
              "with every trace of its source, so the agent goes back to the step that finds it and works forward "
              "from there (re-exploring, docs/model.md 2.2). Redone steps per session: raw "
              f"{num(redone[TRAP_RAW], 2)}, masking {num(redone[TRAP_MASK], 2)}, summary "
              f"{num(redone[TRAP_SUMMARY], 2)}. Mean turns: summary {num(sr.mean(), 1)}, masking "
              f"{num(m_turns.mean(), 1)}, raw {num(raw_turns.mean(), 1)}. {versus} The paper's own data do not make "
              f"elongation a general effect: summary/raw mean turns range from {PAPER_TURN_RATIOS[0]:.2f} to "
              f"{PAPER_TURN_RATIOS[1]:.2f} across its five agents (the authors' per-instance CSV; +20% only for "
              "Qwen3-Coder). The rate at which summaries leave calls out is a (J) from a proxy (docs/model.md 9): "
              "the reports of agents redoing finished work after a compaction (OpenHands #10508 and #11910, Claude "
              "Code #18477, Codex #38931) give no rate. Raw sessions that end early (overflow, a loop) have few "
              "turns, which moves the ratio without any elongation.")
    return Check("P3", f"elongation: summary/raw turns in [{ELONGATION_BAND[0]:.1f}, {ELONGATION_BAND[1]:.1f}]",
                 "soft", setup, f"about +15% turns against raw (Qwen3-Coder; band {ELONGATION_BAND[0]:.1f} to "
                 f"{ELONGATION_BAND[1]:.1f}), summary more turns than masking; 0.86-1.20 across agents [{TRAP}]",
                 f"summary/raw {num(ratio, 2)} [{num(lo, 2)}, {num(hi, 2)}]; summary - masking {num(more, 1)} turns",
                 elongation_verdict(ratio), detail)


def _patch_graded(b: Bundle, run_name: str) -> bool:
    """Whether every scenario of the run is graded on its patch (code_repair's default, docs/model.md 1)."""
    entries = b.manifests[run_name].scenarios
    return bool(entries) and all(e.get("name") == "code_repair" and e.get("graded_on", "patch") == "patch"
                                 for e in entries)


def _ratio_of_sums(num_col: np.ndarray, den_col: np.ndarray, rng: np.random.Generator) -> tuple[float, float, float]:
    metric = stats.Metric("share", "share", "", "ratio", "n", "d")
    return stats.bootstrap(num_col, metric, denominators=den_col, rng=rng)


def _loop_line(frame: pd.DataFrame, strategy: str) -> str:
    group = frame[frame["strategy"] == strategy]
    rules = group["loop_rule"][group["loop_rule"] != ""].value_counts() / max(len(group), 1)
    return ", ".join(f"{k} {pct(v)}" for k, v in rules.items()) or "none"


def _cost_mechanism(frame: pd.DataFrame, strategy: str) -> str:
    raw = frame[frame["strategy"] == TRAP_RAW]
    other = frame[frame["strategy"] == strategy]
    overflow = float((raw["outcome"] == "overflow").mean())
    if overflow > 0.2:
        return (f"Mechanism: raw history overflows the window in {pct(overflow)} of sessions, and an overflowed "
                f"session stops paying at that turn, so raw's mean cost is cut short, while {strategy} keeps the "
                f"context in the window and pays for every turn to the end (its mean input per session "
                f"{num(other['input_tokens'].mean())} tokens vs raw {num(raw['input_tokens'].mean())}). The paper's "
                "raw runs fit their windows; these do not (see P0).")
    return (f"Mean input per session: {strategy} {num(other['input_tokens'].mean())} tokens vs raw "
            f"{num(raw['input_tokens'].mean())}.")


def refetch_evidence(run_dir: Path, strategy: str, branch: str = "refetch") -> dict[str, float]:
    """The facts for which ``strategy``'s agent took ``branch`` (by default ``refetch``: a fact visible in
    no message fetched again by repeating its producing call; or ``wrong``: a wrong value), from the
    decision traces of its calls: how many facts (``refetches``), the share that were visible (not
    recalled, or looked past after a followed nudge) with their mean recall probability and the share of
    those that were latent look-ups, and the mean context tokens at those calls. Re-exploring is not in the
    traces (the kernel notes the look-ups that sent the agent back and bills the step it went back to);
    the sessions' ``redone_steps`` count what it cost."""
    filters: list[tuple[str, str, str]] = [("strategy", "==", strategy), ("call_kind", "==", "agent")]
    if branch == "refetch":
        filters.append(("action", "==", "refetch"))
    calls = pd.read_parquet(run_dir / CALLS_TABLE, columns=["strategy", "call_kind", "action", "trace",
                                                            "context_tokens"], filters=filters)
    calls = calls[calls["trace"].str.contains(f'"branch":"{branch}"', regex=False)]
    visible = hidden = 0
    probabilities: list[float] = []
    kinds: dict[str, int] = {}
    for trace in calls["trace"]:
        for entry in json.loads(trace):
            if entry.get("branch") != branch:
                continue
            if entry.get("visible"):
                visible += 1
                if "p" in entry:
                    probabilities.append(float(entry["p"]))
                lookup = str(entry.get("lookup", "latent"))
                kinds[lookup] = kinds.get(lookup, 0) + 1
            else:
                hidden += 1
    total = visible + hidden
    return {"refetches": float(total), "visible_share": visible / total if total else float("nan"),
            "visible_p": float(np.mean(probabilities)) if probabilities else float("nan"),
            "visible_latent_share": kinds.get("latent", 0) / visible if visible else float("nan"),
            "context_tokens": float(calls["context_tokens"].mean()) if len(calls) else float("nan")}


def _solve_mechanism(frame: pd.DataFrame, strategy: str, run_dir: Path | None = None, *,
                     patch_graded: bool = False) -> str:
    raw = frame[frame["strategy"] == TRAP_RAW]
    other = frame[frame["strategy"] == strategy]
    lines = []
    overflow = float((raw["outcome"] == "overflow").mean())
    if overflow > 0.2:
        lines.append(f"Raw fails mostly by overflowing the window ({pct(overflow)}): raw history keeps every "
                     "observation, and this setup's observations add up past the profile's window (see P0).")
    loops = float(other["loop_detected"].mean())
    if loops > 0.2:
        lines.append(f"{strategy} loops in {pct(loops)} of sessions: a fact visible in no message is fetched again "
                     "through the first trace of its source the context shows (docs/model.md 2.2), its stub paged "
                     "back or its producing call repeated exactly, or found again by going back to the step that "
                     "finds it; repeated calls and steps done again are what the StuckDetector rules (section 7) "
                     "count as a repeat or an alternation.")
        if run_dir is not None:
            ev = refetch_evidence(run_dir, strategy)
            lines.append(f"Its decision traces show {num(ev['refetches'])} facts fetched again by a repeated call"
                         + (f", at {num(ev['context_tokens'])} context tokens on average" if ev["refetches"] else "")
                         + f"; its sessions redo {num(float(other['redone_steps'].mean()), 1)} steps each on "
                         f"average (raw {num(float(raw['redone_steps'].mean()), 1)}).")
    wrong = float((other["outcome"] == "wrong_answer").mean())
    if wrong > 0.05:
        if patch_graded:
            failed = other[other["outcome"] == "wrong_answer"]
            shortcut = int((failed["unsafe_actions"] > 0).sum())
            lines.append(f"{strategy} ends with a wrong answer in {pct(wrong)}. code_repair is graded on its patch and "
                         "its final answer names no facts (docs/model.md 2.3), so a wrong answer here means the "
                         "patch was not right: an edit step was not done by its own call with its true arguments. "
                         "A call with a wrong value is refused by the tool and the agent tries again; what "
                         "completes an edit without its true arguments is its shortcut (deleting the failing test), "
                         "which the agent may take when a fact the edit needs does not resolve "
                         f"({shortcut} of its {len(failed)} wrong-answer sessions made such a dangerous call, "
                         "`unsafe_actions`).")
        else:
            lines.append(f"{strategy} answers wrongly in {pct(wrong)}: its final report states a wrong value.")
        lines.append("Where wrong values come from: a fact that is visible but not recalled becomes one (the agent "
                     "does not know it misread it, so it never looks for it again); a fact visible in no message "
                     "becomes one only when the agent invents it (p_confabulate), and is otherwise fetched again "
                     "from a visible trace of its source (a stub or the producing call) or found again by "
                     "re-exploring (docs/model.md 2.2). A summary that misstates a value it keeps (p_summary_error, "
                     "docs/model.md 4) also hands the agent a wrong value, which it recalls as written.")
        if run_dir is not None:
            ev = refetch_evidence(run_dir, strategy, "wrong")
            if ev["refetches"]:
                text = (f"Its decision traces: of {num(ev['refetches'])} facts that became wrong values, "
                        f"{pct(ev['visible_share'])} were visible but not recalled")
                if ev["visible_share"] > 0:
                    text += (f" (mean recall probability {num(ev['visible_p'], 2)}; "
                             f"{pct(ev['visible_latent_share'])} of them latent look-ups)")
                if ev["visible_share"] < 1:
                    text += ("; the rest were visible in no message and were invented (p_confabulate), or were "
                             "task facts, which no step finds")
                lines.append(text + ".")
    return " ".join(lines) or "No single mechanism dominates; see the outcome shares."


# The reference run ---------------------------------------------------------------------------------------


def trap_reference_rows(b: Bundle, run_name: str = "complexity-trap") -> list[list[str]]:
    """The reference table of one run of the paper's setting: per strategy our success and cost with
    their intervals beside the paper's, turns, the summary calls' share of the cost, and outcomes."""
    frame = b.sessions[run_name]
    raw_cost = frame[frame["strategy"] == TRAP_RAW]["cost_usd"].mean()
    published = {TRAP_RAW: ("53.4%", "-"), TRAP_MASK: ("54.8%", "-52.7%"), TRAP_SUMMARY: ("53.8%", "-50.4%")}
    rows = []
    for strategy in run_order(frame, b.manifests[run_name]):
        value, lo, hi = metric_ci(frame, strategy, "success_rate", b.rng("trap-ref", run_name, strategy))
        cost, clo, chi = metric_ci(frame, strategy, "cost_per_session", b.rng("trap-ref-cost", run_name, strategy))
        group = frame[frame["strategy"] == strategy]
        share = group["summary_cost_usd"].sum() / max(group["cost_usd"].sum(), 1e-12)
        paper_solve, paper_cost = published.get(strategy, ("-", "-"))
        rows.append([strategy, f"{pct(value)} {ci_pct(lo, hi)}", paper_solve, f"${cost:.2f} [${clo:.2f}, ${chi:.2f}]",
                     pct(cost / raw_cost - 1) if strategy != TRAP_RAW else "-", paper_cost,
                     num(group["turns"].mean(), 1), pct(share, 2), outcome_line(frame, strategy, 3)])
    return rows
