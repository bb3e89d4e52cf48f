"""The tool catalogue: schemas, strict argument contracts, the three error classes and how they
render (docs/model.md 3)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import scenarios  # noqa: F401  registering the built-in families puts their tools in the catalogue
from harness.core.messages import parse_error
from harness.core.tools import (
    CATALOGUE,
    ContractError,
    EngineeringError,
    ErrorClass,
    arg_types,
    render_error,
    required_args,
    schema,
    validate_call,
)

VALID_CALLS: dict[str, dict[str, Any]] = {
    "kubectl_get": {"resource": "pods", "namespace": "shop"},
    "kubectl_describe": {"kind": "pod", "name": "api-7f9c-q2kx", "namespace": "shop"},
    "kubectl_logs": {"pod": "api-7f9c-q2kx", "namespace": "shop", "previous": True, "tail": 50},
    "kubectl_set_resources": {"deployment": "api", "namespace": "shop", "container": "worker",
                              "memory_limit": "512Mi"},
    "kubectl_delete_namespace": {"namespace": "shop"},
    "log_search": {"service": "api", "query": "heapfail", "since_minutes": 60},
    "trace_lookup": {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"},
    "metrics_query": {"query": "up", "window_minutes": 30},
    "db_query": {"database": "orders", "sql": "select 1"},
    "db_explain": {"database": "orders", "query_id": "q-1"},
    "db_create_index": {"database": "orders", "table": "items", "columns": ["order_id", "sku"]},
    "db_drop_table": {"database": "orders", "table": "items"},
    "deploy_status": {"service": "api", "namespace": "shop"},
    "release_list": {"service": "api"},
    "release_diff": {"service": "api", "from_release": "r41", "to_release": "r42"},
    "rollback": {"service": "api", "to_release": "r41"},
    "restart_service": {"service": "api", "namespace": "shop"},
    "open_file": {"path": "ledgerkit/cart.py", "line": 118},
    "scroll": {"path": "ledgerkit/cart.py", "line": 201},
    "search_repo": {"pattern": "def total", "path": "ledgerkit"},
    "run_tests": {"target": "tests/test_cart.py::test_total", "tb": "short", "verbose": True},
    "edit_file": {"path": "ledgerkit/cart.py", "start_line": 118, "end_line": 119, "replacement": "    return 0"},
    "bash": {"command": "git log --oneline -n 5"},
    "submit": {},
    "delete_file": {"path": "tests/test_cart.py"},
    "retrieve_payload": {"handle": "ref_0123456789ab", "offset": 8000},
}
DANGEROUS = {"kubectl_delete_namespace", "db_drop_table", "delete_file"}


def test_every_catalogue_tool_has_a_valid_example() -> None:
    assert set(VALID_CALLS) == set(CATALOGUE)


# Schemas ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", list(CATALOGUE))
def test_schema_lists_the_tools_arguments(tool: str) -> None:
    spec = schema(tool)
    assert spec["name"] == tool
    assert spec["description"]
    properties = spec["input_schema"]["properties"]
    assert set(properties) == set(CATALOGUE[tool].model_fields)
    assert set(spec["input_schema"].get("required", [])) == set(required_args(tool))
    assert set(arg_types(tool)) == set(properties)
    assert set(arg_types(tool).values()) <= {"string", "integer", "boolean", "array"}


def test_schema_returns_a_copy() -> None:
    spec = schema("kubectl_get")
    spec["input_schema"]["properties"].clear()
    spec["input_schema"]["required"].append("bogus")
    spec["name"] = "changed"
    again = schema("kubectl_get")
    assert again["name"] == "kubectl_get"
    assert set(again["input_schema"]["properties"]) == {"resource", "namespace", "selector"}
    assert "bogus" not in again["input_schema"]["required"]


def test_arg_types_follow_the_contracts() -> None:
    assert arg_types("kubectl_logs") == {"pod": "string", "namespace": "string", "container": "string",
                                         "previous": "boolean", "tail": "integer"}
    assert arg_types("db_create_index")["columns"] == "array"
    assert arg_types("kubectl_get")["resource"] == "string"  # an enum of strings


def test_unknown_tool_contract_lookup_names_the_tool() -> None:
    with pytest.raises(KeyError, match="no_such_tool"):
        schema("no_such_tool")


# validate_call ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", list(CATALOGUE))
def test_valid_call_returns_the_args_model(tool: str) -> None:
    result = validate_call(tool, VALID_CALLS[tool])
    assert isinstance(result, CATALOGUE[tool])
    for arg, value in VALID_CALLS[tool].items():
        assert getattr(result, arg) == value


def test_valid_json_text_input_returns_the_args_model() -> None:
    result = validate_call("kubectl_logs", json.dumps(VALID_CALLS["kubectl_logs"]))
    assert isinstance(result, CATALOGUE["kubectl_logs"])
    assert result.tail == 50 and result.previous is True


def test_defaults_fill_optional_arguments() -> None:
    result = validate_call("kubectl_logs", {"pod": "p", "namespace": "shop"})
    assert isinstance(result, CATALOGUE["kubectl_logs"])
    assert (result.tail, result.previous, result.container) == (500, False, None)


def _error(tool: str, raw: dict[str, Any] | str) -> ContractError:
    result = validate_call(tool, raw)
    assert isinstance(result, ContractError), result
    assert result.problem and result.schema_hint
    return result


def _with(tool: str, **changes: Any) -> dict[str, Any]:
    return VALID_CALLS[tool] | changes


@pytest.mark.parametrize(
    ("tool", "raw", "field"),
    [
        pytest.param("kubectl_get", {"resource": "pods"}, "namespace", id="missing-namespace"),
        pytest.param("db_create_index", {"database": "orders", "columns": ["a"]}, "table", id="missing-table"),
        pytest.param("kubectl_logs", _with("kubectl_logs", tail="fifty"), "tail", id="wrong-type-tail"),
        pytest.param("db_create_index", _with("db_create_index", columns="x"), "columns", id="wrong-type-columns"),
        pytest.param("db_create_index", _with("db_create_index", columns=["a", 1]), "columns.1",
                     id="wrong-type-column-item"),
        pytest.param("kubectl_get", _with("kubectl_get", verbose=True), "verbose", id="unknown-extra-arg"),
        pytest.param("kubectl_get", _with("kubectl_get", resource="pod"), "resource", id="enum-resource"),
        pytest.param("kubectl_get", _with("kubectl_get", namespace="Bad_NS"), "namespace", id="pattern-namespace"),
        pytest.param("kubectl_set_resources", _with("kubectl_set_resources", memory_limit="lots"), "memory_limit",
                     id="pattern-memory-limit"),
        pytest.param("retrieve_payload", {"handle": "abc"}, "handle", id="pattern-handle"),
        pytest.param("log_search", _with("log_search", since_minutes=0), "since_minutes", id="range-minutes"),
        pytest.param("kubectl_get", '{"resource": "pods", "namespace": "shop",}', "input", id="invalid-json"),
        pytest.param("kubectl_get", '{"resource": "pods", "namesp', "input", id="cut-off-json"),
        pytest.param("kubectl_get", '["pods", "shop"]', "input", id="non-object-json"),
        pytest.param("kubectl_get", "Let me list the pods first.", "input", id="prose"),
        pytest.param("kubectl_explode", {"namespace": "shop"}, "tool", id="unknown-tool"),
    ],
)
def test_contract_error_names_the_field(tool: str, raw: dict[str, Any] | str, field: str) -> None:
    assert _error(tool, raw).field == field


def test_contract_error_hints_at_the_schema() -> None:
    assert "one of" in _error("kubectl_get", _with("kubectl_get", resource="pod")).schema_hint
    assert "pods" in _error("kubectl_get", _with("kubectl_get", resource="pod")).schema_hint
    assert "integer" in _error("kubectl_logs", _with("kubectl_logs", tail="fifty")).schema_hint
    assert "kubectl_get" in _error("kubectl_explode", {}).schema_hint
    assert "invalid JSON" in _error("kubectl_get", "{,}").problem


@pytest.mark.parametrize(
    ("tool", "raw", "field"),
    [
        pytest.param("kubectl_logs", _with("kubectl_logs", pod=50), "pod", id="int-is-not-a-string"),
        pytest.param("kubectl_logs", _with("kubectl_logs", tail="50"), "tail", id="numeric-string-is-not-an-int"),
        pytest.param("kubectl_logs", _with("kubectl_logs", previous=1), "previous", id="one-is-not-a-bool"),
        pytest.param("kubectl_logs", _with("kubectl_logs", previous="true"), "previous", id="string-is-not-a-bool"),
        pytest.param("kubectl_logs", _with("kubectl_logs", tail=50.0), "tail", id="float-is-not-an-int"),
        pytest.param("kubectl_logs", _with("kubectl_logs", tail=True), "tail", id="bool-is-not-an-int"),
    ],
)
def test_types_are_strict(tool: str, raw: dict[str, Any], field: str) -> None:
    assert _error(tool, raw).field == field


# Errors, rendering and parsing -----------------------------------------------------------------

CONTRACT = ContractError("tail", "Input should be a valid integer", "tail: integer")
NOT_FOUND = EngineeringError("NOT_FOUND", "pod api-7f9c-zzzz not found", retryable=False, bad_arg="pod")
HTTP_404 = EngineeringError("HTTP_404", "logs backend returned 404", fallback="log_search")
TIMEOUT = EngineeringError("TIMEOUT", "logs backend timed out after 30s", retryable=True)
#: A fatal error as another runtime renders it (ours ends the session instead of answering one).
FATAL_TEXT = json.dumps({"error": {"class": "fatal", "code": "dangerous_action_blocked",
                                   "message": "kubectl_delete_namespace is blocked by the breaker"}})


def test_error_classes() -> None:
    assert CONTRACT.error_class is ErrorClass.CONTRACT
    assert NOT_FOUND.error_class is ErrorClass.ENGINEERING


def test_structured_contract_error_parses_back() -> None:
    text = render_error(CONTRACT, structured=True)
    assert json.loads(text)["error"]["class"] == "contract"
    info = parse_error(text)
    assert info.structured
    assert (info.error_class, info.field, info.problem, info.schema_hint) == (
        "contract", "tail", CONTRACT.problem, CONTRACT.schema_hint)
    assert info.code is None and info.retryable is None and info.fallback is None and info.bad_arg is None


@pytest.mark.parametrize(
    ("error", "retryable", "fallback", "bad_arg"),
    [
        pytest.param(NOT_FOUND, False, None, "pod", id="not-found"),
        pytest.param(HTTP_404, False, "log_search", None, id="http-404"),
        pytest.param(TIMEOUT, True, None, None, id="timeout"),
    ],
)
def test_structured_engineering_error_parses_back(error: EngineeringError, retryable: bool,
                                                   fallback: str | None, bad_arg: str | None) -> None:
    text = render_error(error, structured=True)
    body = json.loads(text)["error"]
    assert ("fallback" in body) == (fallback is not None)
    assert ("bad_arg" in body) == (bad_arg is not None)
    info = parse_error(text)
    assert info.structured
    assert info.error_class == "engineering"
    assert info.code == error.code
    assert info.retryable is retryable
    assert info.fallback == fallback
    assert info.bad_arg == bad_arg
    assert info.field is None


def test_structured_fatal_error_parses_back() -> None:
    info = parse_error(FATAL_TEXT)
    assert info.structured
    assert (info.error_class, info.code) == ("fatal", "dangerous_action_blocked")
    assert info.retryable is None


@pytest.mark.parametrize("error", [CONTRACT, NOT_FOUND, HTTP_404, TIMEOUT],
                         ids=["contract", "not-found", "http-404", "timeout"])
def test_plain_errors_are_text_that_parse_as_unstructured(error: Any) -> None:
    text = render_error(error, structured=False)
    assert text.startswith("Error: ")
    with pytest.raises(ValueError):
        json.loads(text)
    info = parse_error(text)
    assert not info.structured
    assert info.text == text
    assert info.error_class is None and info.code is None and info.fallback is None and info.bad_arg is None


def test_plain_error_text_says_what_went_wrong() -> None:
    assert render_error(CONTRACT, structured=False) == "Error: Input should be a valid integer (tail)"
    assert render_error(NOT_FOUND, structured=False) == "Error: pod api-7f9c-zzzz not found"
    assert render_error(HTTP_404, structured=False) == f"Error: {HTTP_404.message}"


def test_structured_rendering_is_deterministic() -> None:
    assert render_error(HTTP_404, structured=True) == render_error(HTTP_404, structured=True)
    assert render_error(HTTP_404, structured=True) != render_error(TIMEOUT, structured=True)


def test_parse_error_treats_other_json_as_plain() -> None:
    assert not parse_error('{"message": "not an error object"}').structured
    assert not parse_error('{"error": "just a string"}').structured
    assert not parse_error("{not json").structured


# Dangerous tools -------------------------------------------------------------------------------


def test_only_delete_namespace_and_drop_table_are_dangerous() -> None:
    assert {name for name, model in CATALOGUE.items() if model.dangerous} == DANGEROUS


@pytest.mark.parametrize("tool", list(CATALOGUE))
def test_every_tool_has_a_positive_median_latency(tool: str) -> None:
    assert CATALOGUE[tool].median_latency_s > 0
