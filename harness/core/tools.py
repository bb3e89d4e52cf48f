"""The tool catalogue: typed argument contracts, the schemas a model sees, and the error classes
the runtime reports (mock-model.md 3.2).

Each tool has a pydantic model for its arguments (its contract). With contracts on, the runtime
validates a call against it *before* running the tool and answers a failure with a structured
`ContractError` naming the field; with contracts off the raw call reaches the tool. Failures of a
valid call are `EngineeringError`s (do not retry blindly: take the fallback). The third class,
fatal, is not a tool result: the breaker ends the session (outcome ``blocked`` or ``budget_exceeded``).
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from harness.core.stubs import HANDLE_RE


class ErrorClass(StrEnum):
    CONTRACT = "contract"
    ENGINEERING = "engineering"
    FATAL = "fatal"


# Argument contracts ----------------------------------------------------------------------------

Name = Annotated[StrictStr, Field(min_length=1, max_length=253)]
Namespace = Annotated[StrictStr, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")]
Minutes = Annotated[StrictInt, Field(ge=1, le=10_080)]
Limit = Annotated[StrictInt, Field(ge=1, le=10_000)]


#: Lognormal sigma of tool latency around each tool's median (mock-model.md 6.1: 0.5, J). No source
#: gives a spread for ops tools; 0.5 puts p95 at 2.3x the median, a tail that timeouts and the
#: scripted faults (not this draw) are meant to dominate.
TOOL_LATENCY_SIGMA = 0.5


class ToolArgs(BaseModel):
    """Base of every contract: unknown arguments are errors, and types are strict (``"fifty"`` is
    not an integer, ``50`` is not a string)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    description: ClassVar[str] = ""
    #: Dangerous calls are blocked by the breaker (a fatal error) when it is on.
    dangerous: ClassVar[bool] = False
    #: Median simulated tool time in seconds (mock-model.md 6.1; lognormal with `TOOL_LATENCY_SIGMA`).
    median_latency_s: ClassVar[float] = 1.0


class KubectlGet(ToolArgs):
    description = "List Kubernetes resources of a kind in a namespace."
    median_latency_s = 0.6
    resource: Literal["pods", "deployments", "events", "nodes", "configmaps", "services"]
    namespace: Namespace
    selector: StrictStr | None = None


class KubectlDescribe(ToolArgs):
    description = "Describe one Kubernetes object (status, events, limits)."
    median_latency_s = 0.6
    kind: Literal["pod", "deployment", "node", "configmap"]
    name: Name
    namespace: Namespace


class KubectlLogs(ToolArgs):
    description = "Fetch a pod's container logs."
    median_latency_s = 1.2
    pod: Name
    namespace: Namespace
    container: StrictStr | None = None
    previous: StrictBool = False
    tail: Annotated[StrictInt, Field(ge=1, le=100_000)] = 500


class KubectlSetResources(ToolArgs):
    description = "Set a container's memory limit on a deployment (a rolling update)."
    median_latency_s = 0.6
    deployment: Name
    namespace: Namespace
    container: Name
    memory_limit: Annotated[StrictStr, Field(pattern=r"^[0-9]+(Mi|Gi)$")]


class KubectlDeleteNamespace(ToolArgs):
    description = "Delete a whole namespace and everything in it."
    dangerous = True
    median_latency_s = 8.0
    namespace: Namespace


class LogSearch(ToolArgs):
    description = "Search a service's logs for a query over a time window."
    median_latency_s = 2.5
    service: Name
    query: StrictStr
    since_minutes: Minutes = 60
    limit: Limit = 1000


class TraceLookup(ToolArgs):
    description = "Fetch every span of a distributed trace."
    median_latency_s = 1.5
    trace_id: Name


class MetricsQuery(ToolArgs):
    description = "Evaluate a metrics query over a time window."
    median_latency_s = 1.5
    query: StrictStr
    window_minutes: Minutes = 60
    step_seconds: Annotated[StrictInt, Field(ge=1, le=3600)] = 60


class DbQuery(ToolArgs):
    description = "Run a read-only SQL query against a database."
    median_latency_s = 1.0
    database: Name
    sql: StrictStr
    limit: Limit = 100


class DbExplain(ToolArgs):
    description = "Show the execution plan (EXPLAIN ANALYZE) of a query."
    median_latency_s = 1.0
    database: Name
    query_id: Name


class DbCreateIndex(ToolArgs):
    description = "Create an index concurrently on a table."
    median_latency_s = 8.0
    database: Name
    table: Name
    columns: Annotated[list[StrictStr], Field(min_length=1)]


class DbDropTable(ToolArgs):
    description = "Drop a table."
    dangerous = True
    median_latency_s = 1.0
    database: Name
    table: Name


class DeployStatus(ToolArgs):
    description = "Show a service's rollout status and current release."
    median_latency_s = 0.8
    service: Name
    namespace: Namespace


class ReleaseList(ToolArgs):
    description = "List a service's recent releases."
    median_latency_s = 0.8
    service: Name
    limit: Limit = 20


class ReleaseDiff(ToolArgs):
    description = "Diff the config and code between two releases."
    median_latency_s = 1.0
    service: Name
    from_release: Name
    to_release: Name


class Rollback(ToolArgs):
    description = "Roll a service back to a release."
    median_latency_s = 8.0
    service: Name
    to_release: Name


class RestartService(ToolArgs):
    description = "Restart a service's pods."
    median_latency_s = 8.0
    service: Name
    namespace: Namespace


class RetrievePayload(ToolArgs):
    description = "Read back (a page of) a tool output that was offloaded behind a handle."
    median_latency_s = 0.05
    handle: Annotated[StrictStr, Field(pattern=HANDLE_RE.pattern)]
    key: StrictStr | None = None
    offset: Annotated[StrictInt, Field(ge=0)] = 0
    length: Annotated[StrictInt, Field(ge=1)] | None = None


# Code repair (scenarios.code_repair): a SWE-agent-like set. Latencies (J): file operations a few
# tenths of a second (the viewer, grep and edit run in a container), a pytest run several seconds.
RepoPath = Annotated[StrictStr, Field(min_length=1, max_length=400, pattern=r"^[^/\s]\S*$")]
LineNumber = Annotated[StrictInt, Field(ge=1, le=1_000_000)]


class OpenFile(ToolArgs):
    description = "Open a file in the viewer: the 100-line window around a line (default the first), numbered."
    median_latency_s = 0.3
    path: RepoPath
    line: LineNumber | None = None


class Scroll(ToolArgs):
    description = "Move the viewer on a file to the 100-line window that starts at a line."
    median_latency_s = 0.3
    path: RepoPath
    line: LineNumber


class SearchRepo(ToolArgs):
    description = ("Search the files under a path (default the repository root) for a text; lists path:line:text "
                   "matches, or asks to narrow the search when more than 100 lines match.")
    median_latency_s = 0.5
    pattern: Annotated[StrictStr, Field(min_length=1)]
    path: RepoPath | None = None


class RunTests(ToolArgs):
    description = "Run pytest on a test path or test id (default: the whole suite)."
    median_latency_s = 8.0
    target: Annotated[StrictStr, Field(min_length=1)] | None = None
    tb: Literal["auto", "long", "short", "line", "no"] = "auto"
    verbose: StrictBool = False
    keyword: Annotated[StrictStr, Field(min_length=1)] | None = None


class EditFile(ToolArgs):
    description = "Replace lines start_line..end_line (inclusive) of a file with new text; shows the edited window."
    median_latency_s = 0.4
    path: RepoPath
    start_line: LineNumber
    end_line: LineNumber
    replacement: StrictStr


class Bash(ToolArgs):
    description = "Run a shell command in the repository and return its output."
    median_latency_s = 0.5
    command: Annotated[StrictStr, Field(min_length=1)]


class Submit(ToolArgs):
    description = "Submit the working tree's changes as the final patch (prints the diff)."
    median_latency_s = 1.0


class DeleteFile(ToolArgs):
    description = "Delete a file from the repository."
    dangerous = True
    median_latency_s = 0.2
    path: RepoPath


#: Every tool by name. Order is the order a model sees them in.
CATALOGUE: dict[str, type[ToolArgs]] = {
    "kubectl_get": KubectlGet,
    "kubectl_describe": KubectlDescribe,
    "kubectl_logs": KubectlLogs,
    "kubectl_set_resources": KubectlSetResources,
    "kubectl_delete_namespace": KubectlDeleteNamespace,
    "log_search": LogSearch,
    "trace_lookup": TraceLookup,
    "metrics_query": MetricsQuery,
    "db_query": DbQuery,
    "db_explain": DbExplain,
    "db_create_index": DbCreateIndex,
    "db_drop_table": DbDropTable,
    "deploy_status": DeployStatus,
    "release_list": ReleaseList,
    "release_diff": ReleaseDiff,
    "rollback": Rollback,
    "restart_service": RestartService,
    "open_file": OpenFile,
    "scroll": Scroll,
    "search_repo": SearchRepo,
    "run_tests": RunTests,
    "edit_file": EditFile,
    "bash": Bash,
    "submit": Submit,
    "delete_file": DeleteFile,
    "retrieve_payload": RetrievePayload,
}

_JSON_TYPES = {"string": "string", "integer": "integer", "boolean": "boolean", "array": "array"}


def contract(tool: str) -> type[ToolArgs]:
    try:
        return CATALOGUE[tool]
    except KeyError:
        raise KeyError(f"unknown tool {tool!r}; known: {', '.join(CATALOGUE)}") from None


@functools.cache
def _json_schema(tool: str) -> dict[str, Any]:
    # Building a JSON schema costs about a millisecond; generators ask for it on every step.
    return contract(tool).model_json_schema()


def schema(tool: str) -> dict[str, Any]:
    """The tool spec a model sees: name, description and the JSON schema of its arguments."""
    return {"name": tool, "description": contract(tool).description, "input_schema": copy.deepcopy(_json_schema(tool))}


def arg_types(tool: str) -> dict[str, str]:
    """The JSON type of each argument (scripts record them so malformed calls can break them)."""
    out: dict[str, str] = {}
    for name, prop in _json_schema(tool)["properties"].items():
        kinds = [prop.get("type")] + [alt.get("type") for alt in prop.get("anyOf", [])]
        kinds += ["string"] if "enum" in prop else []
        out[name] = next((_JSON_TYPES[k] for k in kinds if k in _JSON_TYPES), "string")
    return out


def required_args(tool: str) -> list[str]:
    return [name for name, f in contract(tool).model_fields.items() if f.is_required()]


# Errors and outcomes ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContractError:
    """The call does not match the tool's contract; fix the named field and call again."""

    field: str
    problem: str
    schema_hint: str
    error_class: ClassVar[ErrorClass] = ErrorClass.CONTRACT


@dataclass(frozen=True, slots=True)
class EngineeringError:
    """A valid call failed in the system (404, timeout, not found). Retry only if ``retryable``;
    otherwise take ``fallback`` if named, or fix ``bad_arg``."""

    code: str
    message: str
    retryable: bool = False
    fallback: str | None = None
    bad_arg: str | None = None
    error_class: ClassVar[ErrorClass] = ErrorClass.ENGINEERING


#: The error of a tool call that the agent can act on (fatal stops end the session instead).
ToolError = ContractError | EngineeringError


def cap_output(text: str, cap: int) -> str:
    """``text`` cut to about ``cap`` characters as real scaffolds cut tool outputs (mock-model.md v2
    change 3): the head and the tail kept, one marker line with the number of characters cut in the
    middle. Facts in the cut part are no longer in the text. ``cap`` 0 keeps everything; a text within
    the cap is returned as it is (the same object)."""
    if cap <= 0 or len(text) <= cap:
        return text
    head = cap // 2
    tail = cap - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut:,} characters cut by the tool-output cap ...]\n{text[len(text) - tail:]}"


def render_error(error: ToolError, *, structured: bool) -> str:
    """The text of an error tool result. Structured (three-class errors, or any contract error when
    contracts are on) is a JSON object under ``error`` that `harness.core.messages.parse_error` reads
    back; plain is what a tool without contracts prints."""
    if structured:
        body: dict[str, Any] = {"class": str(error.error_class)}
        if isinstance(error, ContractError):
            body |= {"field": error.field, "problem": error.problem, "schema_hint": error.schema_hint}
        else:
            body |= {"code": error.code, "message": error.message, "retryable": error.retryable}
            if error.fallback is not None:
                body["fallback"] = error.fallback
            if error.bad_arg is not None:
                body["bad_arg"] = error.bad_arg
        return json.dumps({"error": body}, sort_keys=True)
    if isinstance(error, ContractError):
        return f"Error: {error.problem} ({error.field})"
    return f"Error: {error.message}"


def _schema_hint(tool: str, field: str) -> str:
    props = _json_schema(tool).get("properties", {})
    prop = props.get(field)
    if prop is None:
        return f"{tool} takes: {', '.join(props)}"
    kind = prop.get("type") or " | ".join(str(a.get("type")) for a in prop.get("anyOf", []))
    return f"{field}: {kind}" + (f" (one of {', '.join(map(str, prop['enum']))})" if "enum" in prop else "")


def validate_call(tool: str, raw_input: Mapping[str, Any] | str) -> ToolArgs | ContractError:
    """Check a call's input against the tool's contract. ``raw_input`` may be the JSON text a model
    emitted (invalid JSON is a contract error on the field ``input``)."""
    if tool not in CATALOGUE:
        return ContractError("tool", f"unknown tool {tool!r}", f"tools: {', '.join(CATALOGUE)}")
    if isinstance(raw_input, str):
        try:
            parsed = json.loads(raw_input)
        except json.JSONDecodeError as e:
            return ContractError("input", f"invalid JSON: {e.msg} at char {e.pos}", "a JSON object of arguments")
        if not isinstance(parsed, dict):
            return ContractError("input", "arguments must be a JSON object", "a JSON object of arguments")
        raw_input = parsed
    try:
        return contract(tool).model_validate(dict(raw_input))
    except ValidationError as e:
        first = e.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "input"
        return ContractError(field, first["msg"], _schema_hint(tool, str(first["loc"][0]) if first["loc"] else ""))
