"""Each built-in family declares exactly the tools its scripts call (``ScenarioFamily.tools``): a tool it
calls without declaring would work only while another family declares it, and a declared tool it never
calls would be listed for nothing."""

from __future__ import annotations

import pytest

import scenarios
from harness.core.tools import CATALOGUE, HYPHENATED_TOOLS, hyphenated

#: Every family that makes scripts of its own (``mix`` picks among the others').
FAMILIES = [name for name in scenarios.names() if name != "mix"]
SEEDS = range(12)
#: Spelling -> the registered name, for scripts made with ``hyphenated_tools``.
UNDERSCORED = {hyphenated(tool): tool for tool in HYPHENATED_TOOLS}


def _called(family: str, **params: object) -> set[str]:
    return {UNDERSCORED.get(tool, tool) for seed in SEEDS
            for tool in scenarios.generate(family, seed, turns=200, **params).tool_names()}


@pytest.mark.parametrize("family", FAMILIES)
def test_a_family_declares_the_tools_its_scripts_call(family: str) -> None:
    declared = scenarios.get(family).tools
    assert _called(family) == set(declared)
    assert _called(family, hyphenated_tools=True) <= set(declared)
    assert all(CATALOGUE[name] is contract for name, contract in declared.items())


def test_the_mix_declares_no_tools_of_its_own() -> None:
    assert not scenarios.get("mix").tools
