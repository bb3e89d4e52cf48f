"""reports.decision: the best strategy per goal and the strategies tied with it (paired over the same
sessions), the success-vs-cost Pareto front, the decision order, and the cost contrasts, on hand-made
sessions where the answer is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import reports.decision
from reports.decision import (
    GOALS,
    best_corner,
    cost_contrasts,
    decide,
    decision_order,
    goal_pairs,
    pareto_front,
    ranked,
)
from reports.stats import headline, paired_against, paired_differences

N = 60


def strategy_rows(name: str, *, solved: list[bool], cost: float, latency_shift: float = 0.0,
                  loops: int = 0) -> list[dict[str, object]]:
    """One strategy's sessions 0..N-1: solved as given, a fixed cost per session, a latency that
    varies by session (shared by every strategy: the pairing has something to remove) plus a shift."""
    rows = []
    for i, ok in enumerate(solved):
        looped = i < loops
        rows.append({
            "scenario": "mix", "session_index": i, "strategy": name,
            "outcome": "success" if ok else ("stuck" if looped else "wrong_answer"),
            "loop_detected": looped, "loop_rule": "repeat" if looped else "",
            "context_tokens_mean": 1000.0, "input_tokens": 10_000, "cached_input_tokens": 5_000,
            "tool_calls": 20, "tool_syntax_errors": 1,
            "latency_s": 100.0 + 50.0 * (i % 7) + latency_shift, "cost_usd": cost,
        })
    return rows


HALF = [i % 2 == 0 for i in range(N)]


def frame(*groups: list[dict[str, object]]) -> pd.DataFrame:
    return pd.DataFrame([row for group in groups for row in group])


def goal_result(results: list, key: str):  # type: ignore[no-untyped-def]
    return next(r for r in results if r.goal.key == key)


def test_two_strategies_identical_on_the_same_sessions_are_tied() -> None:
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0), strategy_rows("twin", solved=HALF, cost=1.0))
    results = decide(sessions, headline(sessions, resamples=300), resamples=300)
    for result in results:
        # Equal values: the tie-break is success, then the name.
        assert result.best == "base", result.goal.key
        assert result.tied == ("twin",), result.goal.key
        assert result.behind == ()
        twin = result.others[0]
        assert twin.diff == 0 and twin.ci_low == 0 and twin.ci_high == 0


def test_a_clearly_better_strategy_is_alone_and_a_near_one_is_tied() -> None:
    near = list(HALF)
    near[1] = True  # one more solved session of sixty: well within noise
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0, latency_shift=40.0),
                     strategy_rows("near", solved=near, cost=1.0, latency_shift=40.0),
                     strategy_rows("strong", solved=[i % 10 != 0 for i in range(N)], cost=0.5, loops=0),
                     strategy_rows("loopy", solved=HALF, cost=1.0, loops=20, latency_shift=41.0))
    results = decide(sessions, headline(sessions, resamples=500), resamples=500)
    success = goal_result(results, "success")
    assert success.best == "strong"
    assert success.tied == ()
    assert set(success.behind) == {"base", "near", "loopy"}
    assert success.value == pytest.approx(54 / 60)
    cost = goal_result(results, "cost")
    assert cost.best == "strong" and cost.tied == ()
    assert cost.value == pytest.approx(0.5 * 60 / 54)
    # Among the rest, "near" is one session from "base": tied on success once "strong" is gone.
    rest = sessions[sessions["strategy"] != "strong"]
    success = goal_result(decide(rest, headline(rest, resamples=500), resamples=500), "success")
    assert success.best == "near"
    assert "base" in success.tied
    # Loops: "loopy" looped in a third of its sessions, every other strategy in none of them.
    loops = goal_result(results, "loops")
    assert loops.best == "strong"  # zero loops like base and near; the most successful of them
    assert set(loops.tied) == {"base", "near"} and loops.behind == ("loopy",)
    assert loops.interval == "wilson" and loops.ci_high > 0
    # Latency: "strong" is 40 s faster on every session; the others are tied with each other only.
    latency = goal_result(results, "latency")
    assert latency.best == "strong" and latency.tied == ()


def test_a_strategy_without_a_solved_session_has_no_cost_per_solved_session() -> None:
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0), strategy_rows("none", solved=[False] * N, cost=0.1))
    head = headline(sessions, resamples=200)
    cost = goal_result(decide(sessions, head, resamples=200), "cost")
    assert cost.best == "base"
    assert cost.undefined == ("none",)
    assert cost.others == ()
    assert "none" not in pareto_front(head)


def fake_headline(points: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """A headline table with only success rate and cost per solved session."""
    rows = []
    for strategy, (success, cost) in points.items():
        rows += [{"strategy": strategy, "metric": "success_rate", "value": success},
                 {"strategy": strategy, "metric": "cost_per_solved_session", "value": cost}]
    return pd.DataFrame(rows)


def test_pareto_front_keeps_exactly_the_undominated_strategies_cheapest_first() -> None:
    head = fake_headline({
        "best_success": (0.9, 3.0),
        "same_as_best": (0.9, 3.0),   # equal on both: neither beats the other
        "dearer_twin": (0.9, 3.5),    # as successful, dearer: dominated
        "cheap": (0.8, 1.0),
        "cheap_but_dearer": (0.8, 2.0),  # dominated by cheap
        "cheapest": (0.5, 0.5),
        "worse_everywhere": (0.4, 4.0),
        "solved_nothing": (0.0, float("nan")),
    })
    assert pareto_front(head) == ["cheapest", "cheap", "best_success", "same_as_best"]


def test_pareto_front_on_a_constructed_sessions_frame() -> None:
    sessions = frame(strategy_rows("dear_and_good", solved=[True] * N, cost=3.0),
                     strategy_rows("cheap_and_fair", solved=HALF, cost=0.5),
                     strategy_rows("dominated", solved=HALF, cost=2.0))
    assert pareto_front(headline(sessions, resamples=100)) == ["cheap_and_fair", "dear_and_good"]


def test_decision_order_is_success_then_cost_per_solved_session_then_name() -> None:
    head = fake_headline({"b": (0.8, 2.0), "a": (0.8, 2.0), "c": (0.8, 1.0), "d": (0.9, 9.0),
                          "e": (0.0, float("nan"))})
    assert decision_order(head, ["a", "b", "c", "d", "e"]) == ["d", "c", "a", "b", "e"]
    assert ranked(head, "cost_per_solved_session") == ["c", "a", "b", "d"]


def test_cost_contrasts_name_a_strategy_with_fewer_tokens_and_a_higher_cost() -> None:
    rows = []
    for strategy, tokens, cost, cache in (("unbounded", 1000.0, 1.0, 0.96), ("hybrid", 610.0, 3.7, 0.3),
                                          ("cheap", 500.0, 0.5, 0.9)):
        rows += [{"strategy": strategy, "metric": "input_tokens", "value": tokens},
                 {"strategy": strategy, "metric": "cost_per_session", "value": cost},
                 {"strategy": strategy, "metric": "cache_hit_share", "value": cache}]
    (contrast,) = cost_contrasts(pd.DataFrame(rows), "unbounded")
    assert contrast.strategy == "hybrid"
    assert contrast.tokens_change == pytest.approx(-0.39)
    assert contrast.cost_change == pytest.approx(2.7)
    assert (contrast.cache_share, contrast.baseline_cache_share) == (0.3, 0.96)


def test_the_goals_and_the_best_corner() -> None:
    assert [g.metric for g in GOALS] == ["success_rate", "cost_per_solved_session", "loop_rate", "latency_mean"]
    assert best_corner() == "bottom-right"


def test_decide_is_deterministic() -> None:
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0),
                     strategy_rows("other", solved=[i % 3 != 0 for i in range(N)], cost=1.2))
    head = headline(sessions, resamples=200)
    first, second = decide(sessions, head, resamples=200), decide(sessions.sample(frac=1.0, random_state=1), head,
                                                                 resamples=200)
    assert first == second
    assert all(np.isfinite(t.ci_low) for r in first for t in r.others)


def test_decide_from_pairs_computed_with_the_reports_equals_decide_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report computes its paired table and the decision's pairs in one call (their streams are
    shared); decide reading those pairs answers exactly as decide computing its own, and asks for
    nothing it was not given."""
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0),
                     strategy_rows("other", solved=[i % 3 != 0 for i in range(N)], cost=1.2, latency_shift=9.0),
                     strategy_rows("third", solved=[i % 4 != 0 for i in range(N)], cost=0.9, loops=6))
    head = headline(sessions, resamples=200)
    needed = goal_pairs(head)
    assert needed and all(best != strategy for strategy, best, _metric in needed)
    pairs = paired_differences(sessions, paired_against(sessions, "base") + needed, resamples=200)
    alone = decide(sessions, head, resamples=200)

    def no_more(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("decide resampled pairs it was given")

    monkeypatch.setattr(reports.decision.stats, "paired_differences", no_more)
    assert decide(sessions, head, resamples=200, pairs=pairs) == alone


# The one sentence ------------------------------------------------------------------------------------


def sentence_for(sessions: pd.DataFrame, resamples: int = 400) -> reports.decision.Recommendation:
    head = headline(sessions, resamples=resamples)
    results = decide(sessions, head, resamples=resamples)
    extra = reports.decision.recommendation_pairs(head, results)
    pairs = paired_differences(sessions, extra, resamples=resamples) if extra else pd.DataFrame()
    return reports.decision.recommend(results, head, pairs, sessions=N)


def test_the_sentence_names_the_one_strategy_that_solves_clearly_more() -> None:
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0),
                     strategy_rows("strong", solved=[i % 10 != 0 for i in range(N)], cost=2.0))
    chosen = sentence_for(sessions)
    assert chosen.strategy == "strong"
    assert chosen.sentence.startswith("Use strong: the most successful")


def test_among_strategies_tied_on_success_the_sentence_picks_the_clearly_cheapest() -> None:
    near = list(HALF)
    near[1] = True
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0), strategy_rows("cheap", solved=near, cost=0.4),
                     strategy_rows("weak", solved=[i % 10 == 0 for i in range(N)], cost=0.1))
    chosen = sentence_for(sessions)
    # weak is cheapest per solved session overall, but it is not among the most successful.
    assert chosen.strategy == "cheap"
    assert "tied for most successful with base" in chosen.sentence
    assert "cheapest of those per solved session" in chosen.sentence


def test_when_every_strategy_is_tied_on_both_no_strategy_is_named() -> None:
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0), strategy_rows("twin", solved=HALF, cost=1.0))
    chosen = sentence_for(sessions)
    assert chosen.strategy is None
    assert chosen.sentence.startswith("No strategy is better than another on this goal at this sample size")
    results = decide(sessions, headline(sessions, resamples=300), resamples=300)
    # A goal whose best is tied with every other strategy names no best.
    assert all(r.all_tied for r in results)


def test_a_cost_per_solved_session_over_too_few_successes_is_not_ranked() -> None:
    few = [i < 3 for i in range(N)]
    sessions = frame(strategy_rows("base", solved=HALF, cost=1.0), strategy_rows("rare", solved=few, cost=0.01))
    head = headline(sessions, resamples=300)
    assert "rare" not in ranked(head, "cost_per_solved_session")
    cost = goal_result(decide(sessions, head, resamples=300), "cost")
    assert cost.best == "base" and cost.too_few == ("rare",)
