"""The tool machinery: typed argument contracts, the catalogue a session's runtime registers, the
schemas a model sees, and the error classes the runtime reports (docs/model.md 3.2).

Each tool has a pydantic model for its arguments (its contract, a `ToolArgs`). With contracts on, the
runtime validates a call against it *before* running the tool and answers a failure with a structured
`ContractError` naming the field; with contracts off the raw call reaches the tool. Failures of a
valid call are `EngineeringError`s (do not retry blindly: take the fallback). The third class,
fatal, is not a tool result: the breaker ends the session (outcome ``blocked`` or ``budget_exceeded``).

The contracts are declared where the tools are used: the runtime's own ``retrieve_payload`` here
(`RUNTIME_TOOLS`), every other tool by the scenario families that call it (a family's ``tools``,
scenarios/base.py), which `register_tools` adds to the process-wide `CATALOGUE` when the family is
registered, built-in or plugin alike. The runtime finds a contract there by name (`contract`,
`validate_call`), so this layer never imports the families.

The catalogue is a `ToolRegistry`: like strands-agents' registry it refuses two names that differ
only by ``-``/``_``, and it resolves a name written with ``_`` for a registered ``-`` by strands' rule
(docs/tool-names.md). A scenario with ``hyphenated_tools`` registers `HYPHENATED_CATALOGUE` instead.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from harness.core.errors import error_path
from harness.core.stubs import HANDLE_RE


class ErrorClass(StrEnum):
    CONTRACT = "contract"
    ENGINEERING = "engineering"
    FATAL = "fatal"


# Argument contracts ----------------------------------------------------------------------------

#: Lognormal sigma of tool latency around each tool's median (docs/model.md 6.1: 0.5, J). No source
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
    #: Median simulated tool time in seconds (docs/model.md 6.1; lognormal with `TOOL_LATENCY_SIGMA`).
    median_latency_s: ClassVar[float] = 1.0


# No contract has a docstring: pydantic would put it in the JSON schema a model sees.
class RetrievePayload(ToolArgs):
    description = "Read back (a page of) a tool output that was offloaded behind a handle."
    median_latency_s = 0.05
    handle: Annotated[StrictStr, Field(pattern=HANDLE_RE.pattern)]
    offset: Annotated[StrictInt, Field(ge=0)] = 0
    length: Annotated[StrictInt, Field(ge=1)] | None = None


# The registry ------------------------------------------------------------------------------------


def normalized_name(name: str) -> str:
    """``name`` with every ``-`` written ``_``: two names with the same normalised form differ only
    by ``-``/``_`` (strands-agents' rule, tools/registry.py)."""
    return name.replace("-", "_")


class NearDuplicateToolName(ValueError):
    """Two tools whose names differ only by ``-``/``_``: a model's spelling could not tell them apart.
    ``str()`` is one line naming both."""

    def __init__(self, name: str, registered: str, where: str = "") -> None:
        self.name = name
        self.registered = registered
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}tool name {name!r} differs from the registered tool {registered!r} only by "
                         "'-'/'_'; rename one of them")


class ToolRegistry(Mapping[str, type[ToolArgs]]):
    """Tool name -> contract, in registration order (the order a model sees the tools in).

    Registration refuses an exact duplicate and a name that differs from a registered one only by
    ``-``/``_`` (`NearDuplicateToolName`), as strands-agents' ``ToolRegistry.register_tool`` does;
    that refusal is what makes `resolve`'s "first match" unambiguous."""

    def __init__(self, tools: Mapping[str, type[ToolArgs]] | None = None, *, where: str = "") -> None:
        self._tools: dict[str, type[ToolArgs]] = {}
        self._by_normalized: dict[str, str] = {}
        for name, args in (tools or {}).items():
            self.register(name, args, where=where)

    def register(self, name: str, args: type[ToolArgs], *, where: str = "") -> None:
        """Add tool ``name``; ``where`` (a file, a plugin) prefixes the error line of a refused name."""
        if name in self._tools:
            prefix = f"{where}: " if where else ""
            raise ValueError(f"{prefix}tool name {name!r} is registered twice")
        clash = self._by_normalized.get(normalized_name(name))
        if clash is not None:
            raise NearDuplicateToolName(name, clash, where)
        self._tools[name] = args
        self._by_normalized[normalized_name(name)] = name

    def resolve(self, name: str, *, normalize: bool = False) -> str | None:
        """The registered name a call to ``name`` runs, or None (an unknown tool). The exact name
        first; with ``normalize``, a name holding ``_`` then runs the first registered tool whose
        name with ``-`` written ``_`` equals it (strands-agents' rule since v0.1.8). The reverse,
        ``-`` for a registered ``_``, is never resolved: strands does not either."""
        if name in self._tools:
            return name
        if normalize and "_" in name:
            return next((known for known in self._tools if normalized_name(known) == name), None)
        return None

    def __getitem__(self, name: str) -> type[ToolArgs]:
        return self._tools[name]

    # The Mapping defaults go through __getitem__ and an exception; the tool player asks on every call.
    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str, default: Any = None) -> Any:
        return self._tools.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)})"

    def _fill(self, tools: Mapping[str, type[ToolArgs]]) -> None:
        """Replace every tool with ``tools``, in their order (the catalogue relists itself in place:
        sessions and the tool player hold it)."""
        fresh = ToolRegistry(tools)
        self._tools, self._by_normalized = fresh._tools, fresh._by_normalized


#: The tools a scenario with ``hyphenated_tools`` on names with ``-`` (J): two read tools per family,
#: spelled as CLI-style tool servers spell them (kubectl plugins are executables named
#: ``kubectl-<verb>``, MCP servers often use kebab case). The rest keep ``_``, so a session mixes the two
#: conventions, as a real tool list assembled from several servers does. Destructive tools and the
#: runtime's own ``retrieve_payload`` are left as they are.
HYPHENATED_TOOLS: tuple[str, ...] = (
    "kubectl_describe", "kubectl_logs",   # k8s_crashloop, alert_chain
    "log_search", "trace_lookup",         # log_triage
    "db_query", "db_explain",             # db_slow_query
    "deploy_status", "release_diff",      # deploy_regression
    "search_repo", "run_tests",           # code_repair
)


def hyphenated(tool: str) -> str:
    """How a scenario with ``hyphenated_tools`` on names ``tool``: with ``-`` if it is one of
    `HYPHENATED_TOOLS`, as it is otherwise."""
    return tool.replace("_", "-") if tool in HYPHENATED_TOOLS else tool


#: The runtime's own tools: every session may call them whatever its family, and the catalogue lists
#: them after the families' tools.
RUNTIME_TOOLS: Mapping[str, type[ToolArgs]] = MappingProxyType({"retrieve_payload": RetrievePayload})


class ConflictingToolContract(ValueError):
    """Two different contracts declared under one tool name. ``str()`` is one line naming both."""

    def __init__(self, name: str, registered: type[ToolArgs], other: type[ToolArgs], where: str = "") -> None:
        self.name = name
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}tool {name!r} is already registered with the contract "
                         f"{registered.__module__}.{registered.__qualname__}; "
                         f"{other.__module__}.{other.__qualname__} is another one: rename the tool")


class ToolCatalogue(ToolRegistry):
    """Every tool a session's runtime may register: the tools the scenario families declared (`add`),
    then `RUNTIME_TOOLS`. `hyphenated` is the same catalogue as a scenario with ``hyphenated_tools``
    registers it: the same tools, in the same order, with `HYPHENATED_TOOLS` named with ``-``.

    Several families may declare one tool, with the same contract class; a second, different contract
    under a name is refused (`ConflictingToolContract`), and so is a name that differs from a listed one
    only by ``-``/``_`` (`NearDuplicateToolName`). A refused `add` adds nothing.

    Order: the names given to `list_first`, in that order, then the other declared tools in the order
    they were added, then the runtime's. A model sees the tools in this order and an unknown-tool error
    lists them so, so pinning it keeps both independent of the order in which families register."""

    def __init__(self, runtime_tools: Mapping[str, type[ToolArgs]] = RUNTIME_TOOLS) -> None:
        super().__init__()
        self._runtime = dict(runtime_tools)
        self._declared: dict[str, type[ToolArgs]] = {}
        self._first: tuple[str, ...] = ()
        self.hyphenated = ToolRegistry()
        #: Every spelling a script may use (either registry's), for the contract of a name.
        self._spellings: dict[str, type[ToolArgs]] = {}
        self._relist()

    def add(self, tools: Mapping[str, type[ToolArgs]], *, where: str = "") -> None:
        """Declare ``tools`` (name -> contract); ``where`` (a family, a plugin module) prefixes the
        error line of a refused one. A name already listed with the same contract is left as it is."""
        prefix = f"{where}: " if where else ""
        new: dict[str, type[ToolArgs]] = {}
        for name, args in tools.items():
            if not (isinstance(args, type) and issubclass(args, ToolArgs)):
                raise TypeError(f"{prefix}the contract of tool {name!r} must be a ToolArgs subclass, got {args!r}")
            known = self.get(name)
            if known is None:
                new[name] = args
            elif known is not args:
                raise ConflictingToolContract(name, known, args, where)
        if new:
            self._relist(new, where=where)

    def register(self, name: str, args: type[ToolArgs], *, where: str = "") -> None:
        """`add` of one tool (the same contract again is accepted: several families share tools)."""
        self.add({name: args}, where=where)

    def list_first(self, names: Iterable[str]) -> None:
        """List ``names`` (those declared, now or later) first, in this order."""
        self._first = tuple(names)
        self._relist()

    def contract_of(self, tool: str) -> type[ToolArgs] | None:
        """The contract of ``tool`` under either spelling a script may give it, or None."""
        return self._spellings.get(tool)

    def _relist(self, new: Mapping[str, type[ToolArgs]] | None = None, *, where: str = "") -> None:
        """Rebuild both listings with ``new`` declared too; a refused name leaves everything as it was."""
        new = dict(new or {})
        declared = self._declared | new
        first = [name for name in self._first if name in declared]
        rest = [name for name in declared if name not in first]
        order = {name: declared[name] for name in [*first, *rest]} | self._runtime
        # The near-duplicate rule is checked under both spellings before anything changes, with the new
        # names last, so that the error names a new one as the name refused.
        checked = {name: args for name, args in order.items() if name not in new} | new
        ToolRegistry(checked, where=where)
        ToolRegistry({hyphenated(name): args for name, args in checked.items()}, where=where)
        self._declared = declared
        self._fill(order)
        self.hyphenated._fill({hyphenated(name): args for name, args in order.items()})
        self._spellings = dict(self) | dict(self.hyphenated)

    def __repr__(self) -> str:
        return f"ToolCatalogue({list(self)})"


#: Every tool a session's runtime may register: the runtime's own and each registered scenario family's.
CATALOGUE = ToolCatalogue()
#: The catalogue as a scenario with ``hyphenated_tools`` registers it (`ToolCatalogue.hyphenated`).
HYPHENATED_CATALOGUE = CATALOGUE.hyphenated


def register_tools(tools: Mapping[str, type[ToolArgs]], *, where: str = "") -> None:
    """Add a scenario family's tools to `CATALOGUE` (`ToolCatalogue.add`): `scenarios.base.register`
    calls it with the family's ``tools``."""
    CATALOGUE.add(tools, where=where)


def registry_for(tools: Iterable[str]) -> ToolRegistry:
    """The registry a session's runtime holds given the tool names its script uses: the hyphenated
    catalogue when any of them is spelled with ``-``, the catalogue otherwise."""
    return HYPHENATED_CATALOGUE if any(t in HYPHENATED_CATALOGUE and t not in CATALOGUE for t in tools) \
        else CATALOGUE


_JSON_TYPES = {"string": "string", "integer": "integer", "boolean": "boolean", "array": "array"}


def contract(tool: str) -> type[ToolArgs]:
    """The argument contract of ``tool``, under either spelling a script may give it."""
    found = CATALOGUE.contract_of(tool)
    if found is None:
        raise KeyError(f"unknown tool {tool!r}; known: {', '.join(CATALOGUE)}")
    return found


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
    """``text`` cut to about ``cap`` characters as real scaffolds cut tool outputs (docs/model.md
    3.2): the head and the tail kept, one marker line with the number of characters cut in the
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
    emitted (invalid JSON is a contract error on the field ``input``). A name of either registry is
    known here; whether the session's runtime registered that spelling is the runtime's check."""
    if CATALOGUE.contract_of(tool) is None:
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
        field = error_path(first) or "input"
        return ContractError(field, first["msg"], _schema_hint(tool, str(first["loc"][0]) if first["loc"] else ""))
