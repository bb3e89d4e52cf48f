"""Differential: `harness.core.tools.ToolRegistry` against strands-agents' own ``ToolRegistry``
(registration and its refusal of names differing only by ``-``/``_``) and its tool caller's look-up
of a name written with ``_`` (``_find_normalized_tool_name``, the rule since v0.1.8), offline."""

from __future__ import annotations

from typing import Any, cast

import pytest

pytest.importorskip("strands")

from hypothesis import given, settings
from hypothesis import strategies as st
from strands.tools._caller import _ToolCaller
from strands.tools.registry import ToolRegistry as StrandsToolRegistry
from strands.tools.tools import PythonAgentTool

from harness.core.tools import ToolRegistry
from scenarios.ops_tools import KubectlLogs


class _AgentStub:
    """What strands' tool caller reads of an agent: its tool registry."""

    def __init__(self, tool_registry: Any) -> None:
        self.tool_registry = tool_registry


class _FixedTool(PythonAgentTool):
    """A tool without hot reload: strands exempts hot-reloadable tools from its duplicate checks, and
    the catalogue's tools are fixed."""

    @property
    def supports_hot_reload(self) -> bool:
        return False


def _strands_tool(name: str) -> Any:
    spec: Any = {"name": name, "description": "d", "inputSchema": {"json": {"type": "object", "properties": {}}}}
    return _FixedTool(name, spec, cast(Any, lambda *_a, **_k: None))


NAMES = st.text(alphabet="ab-_", min_size=1, max_size=4)


@settings(max_examples=120)
@given(names=st.lists(NAMES, min_size=1, max_size=6), queries=st.lists(NAMES, min_size=1, max_size=6))
def test_registration_and_resolution_agree_with_strands(names: list[str], queries: list[str]) -> None:
    ours, theirs = ToolRegistry(), StrandsToolRegistry()
    for name in names:
        try:
            theirs.register_tool(_strands_tool(name))
            refused_by_strands = False
        except ValueError:
            refused_by_strands = True
        try:
            ours.register(name, KubectlLogs)
            refused_by_us = False
        except ValueError:
            refused_by_us = True
        assert refused_by_us == refused_by_strands, name
    assert list(ours) == list(theirs.registry)
    agent = _AgentStub(theirs)  # held here: the caller keeps only a weak reference
    caller = _ToolCaller(cast(Any, agent))
    for query in queries:
        try:
            expected: str | None = caller._find_normalized_tool_name(query)
        except AttributeError:
            expected = None
        assert ours.resolve(query, normalize=True) == expected, (list(ours), query)
