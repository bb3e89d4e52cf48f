"""Why sessions did not succeed: what each outcome of the ``sessions`` table means, and which
strategies each one hits most, as the values the report's "Why sessions fail" section is written from.

The outcome names are the sessions table's (`harness.core.tables.Outcome`); a test keeps `MEANINGS` to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from reports.stats import SCRIPT_KEY

__all__ = ["LOOP_RULES", "MEANINGS", "OutcomeHits", "explain_outcomes"]

#: One sentence per failing outcome (every `harness.core.tables.OUTCOMES` but success): what ended the session,
#: in the order the report lists them.
MEANINGS: dict[str, str] = {
    "overflow": "the context exceeded the model's window and the strategy could not reduce it any further",
    "budget_exceeded": "the runtime's token_budget stopped the session: its input plus output tokens passed the "
                       "budget",
    "stuck": "a loop rule of the stuck detector fired: the agent kept repeating itself",
    "throttled": "the provider kept refusing model calls (rate limits) through every retry and back-off",
    "step_failed": "a step of the task ran out of attempts (or of contract retries) with no fallback to take",
    "max_turns": "the session reached the turn limit without a final answer",
    "wrong_answer": "the agent gave a final answer with a wrong value in it (a fact no longer in its context, "
                    "guessed instead of fetched again)",
    "blocked": "the breaker blocked a destructive action, which ends the session",
    "error": "the replay itself raised (a bug in a strategy or in the harness; the error column says what)",
}

#: What each StuckDetector rule saw (the ``loop_rule`` column).
LOOP_RULES: dict[str, str] = {
    "repeat": "the same action and result 4 times in a row",
    "error_streak": "the same call failing 4 times in a row",
    "monologue": "3 agent messages in a row without a tool call",
    "alternation": "two actions alternating A, B, A, B, A, B",
}

#: How many strategies an outcome's sentence names, most hit first.
NAMED = 3


@dataclass(frozen=True)
class OutcomeHits:
    """One outcome that some strategy's sessions ended in: its meaning, the strategies it hit most
    (name, sessions with it, that strategy's sessions), how many other strategies it hit, how many of
    the most hit strategy's sessions with it another strategy solved, and a detail from the data (the
    loop rules seen, the breaker's budget)."""

    outcome: str
    meaning: str
    most: tuple[tuple[str, int, int], ...]
    others: int
    #: Of the most hit strategy's sessions that ended this way, how many some other strategy solved:
    #: the failure was the strategy's, not the session's.
    solved_elsewhere: int = 0
    detail: str = ""


def _stuck_detail(sessions: pd.DataFrame) -> str:
    stuck = sessions[sessions["outcome"] == "stuck"]
    if "loop_rule" not in stuck.columns:
        return ""
    counts = stuck["loop_rule"].fillna("").astype(str).replace("", "unrecorded").value_counts()
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    seen = [f"{rule} in {n} session{'s' if n != 1 else ''}"
            + (f" ({LOOP_RULES[rule]})" if rule in LOOP_RULES else "") for rule, n in ordered]
    return f"Rules seen: {'; '.join(seen)}." if seen else ""


def _budget_detail(hit: list[str], budgets: Mapping[str, int]) -> str:
    known = [(s, budgets[s]) for s in hit if s in budgets]
    if not known:
        return ""
    values = sorted({b for _s, b in known})
    if len(values) == 1:
        return (f"The budget was {values[0]:,} tokens per session; only strategies with the breaker on can end "
                "this way, and a session that needs more tokens than the budget is cut off however close to done.")
    listed = ", ".join(f"{s}: {b:,}" for s, b in known)
    return f"Budgets (tokens per session): {listed}. Only strategies with the breaker on can end this way."


def explain_outcomes(sessions: pd.DataFrame, token_budgets: Mapping[str, int] | None = None) -> list[OutcomeHits]:
    """Every outcome other than success that at least one session ended in, in the order of
    :data:`MEANINGS` (unknown outcomes last, by name), each with the strategies it hits most.
    ``token_budgets`` is the token budget of each strategy that ran with one."""
    if sessions.empty:
        return []
    counts = pd.crosstab(sessions["strategy"].astype(str), sessions["outcome"].astype(str))
    totals = counts.sum(axis=1)
    present = [o for o in counts.columns if o != "success" and counts[o].sum() > 0]
    order = [o for o in MEANINGS if o in present] + sorted(o for o in present if o not in MEANINGS)
    explained = []
    for outcome in order:
        hit = [(str(s), int(counts.loc[s, outcome]), int(totals[s])) for s in counts.index if counts.loc[s, outcome]]
        hit.sort(key=lambda h: (-h[1] / h[2], -h[1], h[0]))
        detail = ""
        if outcome == "stuck":
            detail = _stuck_detail(sessions)
        elif outcome == "budget_exceeded":
            detail = _budget_detail([h[0] for h in hit], token_budgets or {})
        meaning = MEANINGS.get(outcome, "an outcome this version of the report does not know")
        explained.append(OutcomeHits(outcome, meaning, tuple(hit[:NAMED]), max(len(hit) - NAMED, 0),
                                     _solved_elsewhere(sessions, hit[0][0], outcome), detail))
    return explained


def _solved_elsewhere(sessions: pd.DataFrame, strategy: str, outcome: str) -> int:
    """How many of ``strategy``'s sessions that ended in ``outcome`` another strategy solved (the same
    scenario and session index)."""
    names = sessions["strategy"].astype(str)
    ended = sessions[(names == strategy) & (sessions["outcome"] == outcome)][SCRIPT_KEY]
    solved = sessions[(names != strategy) & (sessions["outcome"] == "success")][SCRIPT_KEY].drop_duplicates()
    return len(ended.merge(solved, on=SCRIPT_KEY, how="inner"))
