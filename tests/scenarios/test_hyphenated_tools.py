"""The ``hyphenated_tools`` scenario param: the documented tools named with ``-``, the script
otherwise the same draw for draw, and the param recorded only when on."""

from __future__ import annotations

import pytest

import scenarios
from harness.core.tools import HYPHENATED_TOOLS, hyphenated
from scenarios.base import SessionScript

FAMILIES = ["k8s_crashloop", "log_triage", "db_slow_query", "deploy_regression", "alert_chain", "code_repair"]


def _underscored(script: SessionScript) -> dict[str, object]:
    """The script as JSON data with every hyphenated tool name written back with ``_``."""
    text = script.model_dump_json()
    for tool in HYPHENATED_TOOLS:
        text = text.replace(f'"tool":"{hyphenated(tool)}"', f'"tool":"{tool}"')
    return SessionScript.model_validate_json(text).model_dump(exclude={"params"})


@pytest.mark.parametrize("family", FAMILIES)
def test_hyphenated_tools_rename_the_documented_tools_and_nothing_else(family: str) -> None:
    plain = scenarios.generate(family, 4, turns=20)
    named = scenarios.generate(family, 4, turns=20, hyphenated_tools=True)
    assert any("-" in tool for tool in named.tool_names())
    assert not any("-" in tool for tool in plain.tool_names())
    assert {t for t in named.tool_names() if "-" in t} <= {hyphenated(t) for t in HYPHENATED_TOOLS}
    assert _underscored(named) == plain.model_dump(exclude={"params"})
    assert named.params["hyphenated_tools"] is True and "hyphenated_tools" not in plain.params


def test_a_mix_passes_the_param_to_its_families() -> None:
    script = scenarios.generate("mix", 2, turns=20, hyphenated_tools=True)
    assert any("-" in tool for tool in script.tool_names())
