"""reports.outcomes: every failing outcome that happened is explained once, with the strategies it hits
most, the loop rules seen, the breaker's budget, and how many of those sessions another strategy solved."""

from __future__ import annotations

import pandas as pd

from reports.outcomes import MEANINGS, explain_outcomes


def session(strategy: str, index: int, outcome: str, rule: str = "") -> dict[str, object]:
    return {"scenario": "mix", "session_index": index, "strategy": strategy, "outcome": outcome, "loop_rule": rule}


def test_each_failing_outcome_is_explained_with_the_strategies_it_hits_most() -> None:
    rows = []
    for i in range(10):
        rows.append(session("unbounded", i, "overflow" if i < 4 else "success"))
        rows.append(session("offload", i, "budget_exceeded" if i < 2 else "success"))
        rows.append(session("drop_all", i, "stuck" if i < 3 else "wrong_answer",
                            "repeat" if i < 2 else ("alternation" if i < 3 else "")))
    outcomes = explain_outcomes(pd.DataFrame(rows), {"offload": 2_000_000})
    assert [o.outcome for o in outcomes] == ["overflow", "budget_exceeded", "stuck", "wrong_answer"]
    by_name = {o.outcome: o for o in outcomes}
    overflow = by_name["overflow"]
    assert overflow.meaning == MEANINGS["overflow"]
    assert overflow.most == (("unbounded", 4, 10),) and overflow.others == 0
    # unbounded overflowed sessions 0-3; offload solved 2 and 3 (and drop_all solved nothing).
    assert overflow.solved_elsewhere == 2
    budget = by_name["budget_exceeded"]
    assert "2,000,000 tokens" in budget.detail
    assert budget.solved_elsewhere == 0  # sessions 0 and 1: unbounded overflowed, drop_all was stuck
    stuck = by_name["stuck"]
    assert stuck.detail.startswith("Rules seen: repeat in 2 sessions")
    assert "alternation in 1 session " in stuck.detail
    assert "success" not in by_name


def test_strategies_past_the_named_ones_are_counted_and_unknown_outcomes_come_last() -> None:
    rows = [session(f"s{k}", i, "step_failed" if i <= k else "success") for k in range(5) for i in range(10)]
    rows.append(session("s0", 10, "a_future_outcome"))
    outcomes = explain_outcomes(pd.DataFrame(rows))
    assert [o.outcome for o in outcomes] == ["step_failed", "a_future_outcome"]
    step = outcomes[0]
    assert [name for name, _k, _n in step.most] == ["s4", "s3", "s2"]
    assert step.others == 2
    assert "does not know" in outcomes[1].meaning


def test_no_sessions_no_outcomes() -> None:
    assert explain_outcomes(pd.DataFrame(columns=["scenario", "session_index", "strategy", "outcome"])) == []
