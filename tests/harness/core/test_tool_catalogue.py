"""The catalogue of tools (harness.core.tools.ToolCatalogue): families declare their tools into it, several
may share one contract, a second contract under a name or a near-duplicate name is refused whole, and
its order is pinned names, then the rest as registered, then the runtime's own tools."""

from __future__ import annotations

import pytest

import scenarios
from harness.core.tools import (
    CATALOGUE,
    HYPHENATED_CATALOGUE,
    RUNTIME_TOOLS,
    ConflictingToolContract,
    NearDuplicateToolName,
    ToolArgs,
    ToolCatalogue,
    hyphenated,
)
from scenarios.ops_tools import KubectlLogs, LogSearch


class Ping(ToolArgs):
    description = "Ping a host."
    host: str


class OtherPing(ToolArgs):
    description = "Another ping."
    host: str


def test_a_fresh_catalogue_holds_the_runtime_tools_only() -> None:
    assert list(ToolCatalogue()) == list(RUNTIME_TOOLS) == ["retrieve_payload"]


def test_tools_declared_by_several_families_with_one_contract_are_listed_once() -> None:
    catalogue = ToolCatalogue()
    catalogue.add({"log_search": LogSearch, "ping": Ping}, where="scenario a")
    catalogue.add({"ping": Ping, "kubectl_logs": KubectlLogs}, where="scenario b")
    assert list(catalogue) == ["log_search", "ping", "kubectl_logs", "retrieve_payload"]
    assert catalogue.contract_of("ping") is Ping


def test_another_contract_under_a_listed_name_is_refused_in_one_line_and_adds_nothing() -> None:
    catalogue = ToolCatalogue()
    catalogue.add({"ping": Ping})
    with pytest.raises(ConflictingToolContract) as refused:
        catalogue.add({"log_search": LogSearch, "ping": OtherPing}, where="scenario b")
    line = str(refused.value)
    assert "\n" not in line and line.startswith("scenario b: ")
    assert "'ping'" in line and ".Ping;" in line and ".OtherPing " in line
    assert list(catalogue) == ["ping", "retrieve_payload"]


def test_a_runtime_tool_name_with_another_contract_is_refused() -> None:
    with pytest.raises(ConflictingToolContract, match="retrieve_payload"):
        ToolCatalogue().add({"retrieve_payload": Ping})


def test_a_near_duplicate_name_is_refused_naming_both_and_adds_nothing() -> None:
    catalogue = ToolCatalogue()
    catalogue.add({"kubectl_logs": KubectlLogs})
    with pytest.raises(NearDuplicateToolName) as refused:
        catalogue.add({"ping": Ping, "kubectl-logs": KubectlLogs}, where="my_pkg.family")
    assert str(refused.value).startswith("my_pkg.family: tool name 'kubectl-logs' differs from the registered tool "
                                         "'kubectl_logs'")
    assert list(catalogue) == ["kubectl_logs", "retrieve_payload"]
    assert list(catalogue.hyphenated) == ["kubectl-logs", "retrieve_payload"]


def test_a_contract_must_be_a_tool_args_class() -> None:
    with pytest.raises(TypeError, match=r"'ping'.*ToolArgs"):
        ToolCatalogue().add({"ping": dict})  # type: ignore[dict-item]


def test_pinned_names_come_first_whenever_they_are_declared_and_the_runtime_tools_last() -> None:
    catalogue = ToolCatalogue()
    catalogue.list_first(["kubectl_logs", "log_search"])
    catalogue.add({"ping": Ping, "log_search": LogSearch})
    assert list(catalogue) == ["log_search", "ping", "retrieve_payload"]
    catalogue.add({"kubectl_logs": KubectlLogs})
    assert list(catalogue) == ["kubectl_logs", "log_search", "ping", "retrieve_payload"]
    assert list(catalogue.hyphenated) == ["kubectl-logs", "log-search", "ping", "retrieve_payload"]


def test_either_spelling_finds_the_contract() -> None:
    catalogue = ToolCatalogue()
    catalogue.add({"kubectl_logs": KubectlLogs})
    assert catalogue.contract_of("kubectl_logs") is catalogue.contract_of("kubectl-logs") is KubectlLogs
    assert catalogue.contract_of("kubectl-get") is None


def test_the_built_in_families_fill_the_catalogue_in_the_pinned_order() -> None:
    assert list(CATALOGUE) == [*scenarios.BUILT_IN_TOOL_ORDER, *RUNTIME_TOOLS]
    assert list(HYPHENATED_CATALOGUE) == [hyphenated(name) for name in CATALOGUE]
