"""The tool registry (harness.core.tools.ToolRegistry): strands-agents' name rule, resolution of a
name written with ``_`` for ``-`` and the refusal of names that differ only by ``-``/``_``
(test_tool_registry_strands checks both against strands' own code)."""

from __future__ import annotations

import pytest

from harness.core.tools import (
    CATALOGUE,
    HYPHENATED_CATALOGUE,
    HYPHENATED_TOOLS,
    NearDuplicateToolName,
    ToolArgs,
    ToolRegistry,
    contract,
    hyphenated,
    registry_for,
    validate_call,
)
from scenarios.db_slow_query import DbQuery
from scenarios.ops_tools import KubectlLogs


def registry(*names: str) -> ToolRegistry:
    return ToolRegistry(dict.fromkeys(names, KubectlLogs))


def test_the_exact_name_resolves_first_with_or_without_normalisation() -> None:
    tools = registry("kubectl-logs", "db_query")
    for normalize in (False, True):
        assert tools.resolve("kubectl-logs", normalize=normalize) == "kubectl-logs"
        assert tools.resolve("db_query", normalize=normalize) == "db_query"


def test_a_name_with_underscores_resolves_to_the_registered_hyphenated_tool_only_when_normalising() -> None:
    tools = registry("kubectl_get", "kubectl-logs", "a-b_c")
    assert tools.resolve("kubectl_logs") is None
    assert tools.resolve("kubectl_logs", normalize=True) == "kubectl-logs"
    assert tools.resolve("a_b_c", normalize=True) == "a-b_c"  # only the '-' differ


def test_a_name_matching_no_registered_tool_stays_unknown() -> None:
    tools = registry("kubectl-logs")
    assert tools.resolve("kubectl_log", normalize=True) is None
    assert tools.resolve("KUBECTL_LOGS", normalize=True) is None


def test_the_reverse_direction_is_not_normalised() -> None:
    # strands replaces '-' by '_' in the registered names only, and only for a requested name holding '_'.
    tools = registry("db_query", "kubectl_get")
    assert tools.resolve("db-query", normalize=True) is None
    assert tools.resolve("kubectl-get", normalize=True) is None


def test_a_near_duplicate_name_is_refused_naming_both_in_one_line() -> None:
    tools = registry("kubectl-logs")
    with pytest.raises(NearDuplicateToolName) as refused:
        tools.register("kubectl_logs", KubectlLogs, where="tools.toml")
    line = str(refused.value)
    assert "\n" not in line
    assert line.startswith("tools.toml: ") and "'kubectl_logs'" in line and "'kubectl-logs'" in line
    assert list(tools) == ["kubectl-logs"]  # nothing half-registered
    with pytest.raises(NearDuplicateToolName, match=r"'db-query'.*'db_query'"):
        ToolRegistry({"db_query": DbQuery, "db-query": DbQuery})


def test_an_exact_duplicate_is_refused() -> None:
    tools = registry("db_query")
    with pytest.raises(ValueError, match="registered twice"):
        tools.register("db_query", DbQuery)


def test_both_catalogues_hold_the_same_tools_in_the_same_order_under_their_names() -> None:
    assert len(CATALOGUE) == len(HYPHENATED_CATALOGUE)
    assert [hyphenated(name) for name in CATALOGUE] == list(HYPHENATED_CATALOGUE)
    assert all(CATALOGUE[name] is HYPHENATED_CATALOGUE[hyphenated(name)] for name in CATALOGUE)
    assert {name for name in HYPHENATED_CATALOGUE if "-" in name} == {t.replace("_", "-") for t in HYPHENATED_TOOLS}
    assert not any(CATALOGUE[t].dangerous for t in HYPHENATED_TOOLS)


def test_either_spelling_has_the_contract_and_validates() -> None:
    assert contract("kubectl-logs") is contract("kubectl_logs") is KubectlLogs
    call = {"pod": "pod-q2kx", "namespace": "shop"}
    assert isinstance(validate_call("kubectl-logs", call), KubectlLogs)
    assert isinstance(validate_call("kubectl_logs", call), KubectlLogs)
    unknown = validate_call("kubectl-get-all", call)
    assert not isinstance(unknown, ToolArgs) and unknown.field == "tool"


def test_a_session_registers_the_hyphenated_catalogue_when_its_script_spells_a_tool_with_a_hyphen() -> None:
    assert registry_for(["kubectl_get", "kubectl_logs"]) is CATALOGUE
    assert registry_for(["kubectl_get", "kubectl-logs"]) is HYPHENATED_CATALOGUE
    assert registry_for([]) is CATALOGUE
