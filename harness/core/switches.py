"""The runtime switches of mock-model.md 3.2: how tools are guarded, separate from the context strategy.

Each strategy declares its defaults (``ContextStrategy.runtime_defaults``); a run config may override
any of them per strategy entry, so an ablation is configuration, not code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_OUTPUT_CAP_CHARS", "DEFAULT_TOKEN_BUDGET", "HasRuntimeDefaults", "Switches"]

#: Default token budget of the breaker (mock-model.md 3.2: 2,000,000, J).
DEFAULT_TOKEN_BUDGET = 2_000_000
#: Default tool-output cap in characters: OpenHands ``max_message_chars`` and Claude Code's Bash tool
#: both cap at 30,000 (SWE-agent at 100,000).
DEFAULT_OUTPUT_CAP_CHARS = 30_000


class HasRuntimeDefaults(Protocol):
    """Anything that declares switch defaults: every context strategy does."""

    def runtime_defaults(self) -> Mapping[str, object]: ...


class Switches(BaseModel):
    """The runtime switches: ``contracts`` validates tool arguments before a tool runs, ``errors``
    picks plain text or three-class structured errors, ``breaker`` blocks dangerous actions and
    ends the session past ``token_budget`` tokens, ``output_cap_chars`` cuts long tool outputs,
    ``normalize_tool_names`` runs a call to ``kubectl_logs`` as the registered ``kubectl-logs``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    contracts: bool = False
    errors: Literal["plain", "three_class"] = "plain"
    breaker: bool = False
    token_budget: int = Field(DEFAULT_TOKEN_BUDGET, ge=1)
    #: Characters a tool output may hold before the runtime cuts its middle (0: uncapped). 30,000 as
    #: OpenHands' ``max_message_chars`` and Claude Code's Bash tool (mock-model.md v2 change 3).
    output_cap_chars: int = Field(DEFAULT_OUTPUT_CAP_CHARS, ge=0)
    #: Resolve a called tool name that is not registered by strands-agents' rule (exact name first;
    #: a name holding ``_`` then runs the first registered tool whose name with ``-`` written ``_``
    #: equals it; `harness.core.tools.ToolRegistry.resolve`). Off: such a call is an unknown tool.
    normalize_tool_names: bool = False

    @classmethod
    def for_strategy(cls, strategy: HasRuntimeDefaults, **overrides: Any) -> Switches:
        """The strategy's declared defaults, then any overrides from the run config (None keeps the default)."""
        defaults = dict(strategy.runtime_defaults())
        if defaults.get("token_budget") is None:
            defaults.pop("token_budget", None)
        return cls(**(defaults | {k: v for k, v in overrides.items() if v is not None}))
