"""A run whose strategies did not share one runtime: reports.runtimes groups them by the settings they
ran under, and the report's Decision section says so first, decides within each runtime, shows what the
runtime changes within each strategy, and shows strategies with identical sessions as one row."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pytest

from harness.run.config import RunConfig
from harness.run.runner import run
from reports.render import write_report
from reports.runtimes import describe_settings, differing_settings, runtime_groups

RUNTIMES_RUN: dict[str, Any] = {
    "sessions": 12, "seed": 3, "batch_size": 4, "executor": "serial",
    "scenarios": [{"name": "mix", "turns": 20}],
    "runtimes": [{"name": "plain"},
                 {"name": "guarded", "contracts": True, "errors": "three_class", "breaker": True,
                  "token_budget": 2_000_000}],
    # The same strategy twice under two labels: identical sessions, so one row of the report.
    "strategies": [{"name": "unbounded"}, {"name": "unbounded", "label": "twin"}, {"name": "offload_contracts"}],
}


def test_strategies_are_grouped_by_the_switches_they_ran_under_and_named_by_their_runtime() -> None:
    rows = []
    for strategy, contracts, budget in (("a", False, 0), ("b", True, 100), ("c", False, 0)):
        rows += [{"scenario": "mix", "session_index": i, "strategy": strategy, "contracts": contracts,
                  "errors": "plain", "breaker": False, "token_budget": budget, "output_cap_chars": 30_000,
                  "normalize_tool_names": False} for i in range(3)]
    groups = runtime_groups(pd.DataFrame(rows), ["c", "b", "a"])
    assert [g.strategies for g in groups] == [("c", "a"), ("b",)]
    # Without runtime names, a group is named by its settings.
    assert groups[1].name == describe_settings(dict(groups[1].settings))
    assert "100-token budget" in groups[1].name and "contracts on" in groups[1].name
    assert differing_settings(groups) == ["tool contracts", "token budget"]
    assert differing_settings(groups[:1]) == []


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("runtimes") / "run"
    run(RunConfig(**RUNTIMES_RUN), out, quiet=True)
    write_report(out)
    return (out / "report.md").read_text()


def decision_section(report: str) -> str:
    return report.split("## Decision", 1)[1].split("\n## ", 1)[0]


def test_the_decision_says_first_that_the_runtimes_differ_and_names_the_settings(report: str) -> None:
    section = decision_section(report)
    first = next(line for line in section.splitlines() if line and not line.startswith("*How to read"))
    assert first.startswith("**Not like for like: these strategies ran under 2 different runtimes")
    for setting in ("tool contracts", "error format", "breaker", "token budget"):
        assert setting in first
    assert "tool-output cap" not in first  # the same under both runtimes


def test_each_runtime_gets_its_own_ranking_of_its_own_strategies(report: str) -> None:
    section = decision_section(report)
    blocks = re.split(r"\n### ", section)
    plain = next(b for b in blocks if b.startswith("Under the plain runtime"))
    guarded = next(b for b in blocks if b.startswith("Under the guarded runtime"))
    assert "+guarded" not in plain and "+plain" not in guarded
    for block in (plain, guarded):
        assert re.search(r"^\*\*(Use |No strategy is better)", block, re.M), block
        assert "| most successful (success rate) |" in block


def test_the_runtime_effect_within_each_strategy_is_paired(report: str) -> None:
    section = decision_section(report)
    effect = section.split("### What the runtime changes, within each strategy", 1)[1]
    rows = [line for line in effect.splitlines() if line.startswith("| ") and "guarded vs plain" in line]
    assert {line.split(" | ")[0].strip("| ") for line in rows} == {"unbounded", "offload_contracts"}


def test_strategies_with_identical_sessions_are_one_row_with_a_note(report: str) -> None:
    headline = report.split("## Headline metrics", 1)[1].split("\n## ", 1)[0]
    names = [line.split(" | ")[0].strip("| ") for line in headline.splitlines() if line.startswith("| ")][2:]
    assert "unbounded+plain = twin+plain (n = 12)" in names
    assert not any(n.startswith("twin+plain") for n in names)
    assert "unbounded+plain and twin+plain replayed every one of the 12 sessions identically" in report


def test_the_decision_says_how_far_the_simulator_is_validated_for_this_setting(report: str) -> None:
    section = decision_section(report)
    status = next(line for line in section.splitlines() if line.startswith("Validation ("))
    assert status.startswith("Validation (frontier, five-family mix)")
    assert "published effects checked" in status and "LC3" in status and "docs/validation.md" in status
