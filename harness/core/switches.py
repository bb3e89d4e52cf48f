"""The runtime: the agent's scaffold around the model (how tools are guarded, how errors read, what stops a
session), one axis of a comparison; the context strategy, what decides the window, is the other.

A strategy declares nothing about the runtime: every strategy of a run runs under the run's runtime (its
``[[runtimes]]``, crossed with the strategies), and a strategy entry may override any switch, so an
ablation is configuration, not code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CONTRACT_RUNTIME", "DEFAULT_OUTPUT_CAP_CHARS", "DEFAULT_TOKEN_BUDGET", "Switches"]

#: The token budget the contract runtime sets (2,000,000, a judgement: a few times a long session's
#: tokens). A runtime without a budget (``token_budget = 0``, the default) never stops a session.
DEFAULT_TOKEN_BUDGET = 2_000_000
#: Default tool-output cap in characters: OpenHands ``max_message_chars`` and Claude Code's Bash tool
#: both cap at 30,000 (SWE-agent at 100,000).
DEFAULT_OUTPUT_CAP_CHARS = 30_000


class Switches(BaseModel):
    """The runtime switches: ``contracts`` validates tool arguments before a tool runs, ``errors``
    picks plain text or three-class structured errors, ``breaker`` blocks dangerous actions,
    ``token_budget`` ends the session once its input plus output tokens pass it (0: no budget),
    ``output_cap_chars`` cuts long tool outputs, ``normalize_tool_names`` runs a call to
    ``kubectl_logs`` as the registered ``kubectl-logs``. The defaults are the plain runtime."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    contracts: bool = False
    errors: Literal["plain", "three_class"] = "plain"
    breaker: bool = False
    #: Tokens (input plus output of every call) after which the session ends ``budget_exceeded``; 0: none.
    #: Separate from the breaker, so a budget applies the same way to every strategy that runs under it.
    #: The bound keeps the sessions table's integer column in range (a larger budget is none).
    token_budget: int = Field(0, ge=0, le=10**12)
    #: Characters a tool output may hold before the runtime cuts its middle (0: uncapped). 30,000 as
    #: OpenHands' ``max_message_chars`` and Claude Code's Bash tool (docs/model.md 3.2).
    #: Payloads are at most 10**7 bytes, so 10**9 is already "uncapped".
    output_cap_chars: int = Field(DEFAULT_OUTPUT_CAP_CHARS, ge=0, le=10**9)
    #: Resolve a called tool name that is not registered by strands-agents' rule (exact name first;
    #: a name holding ``_`` then runs the first registered tool whose name with ``-`` written ``_``
    #: equals it; `harness.core.tools.ToolRegistry.resolve`). Off: such a call is an unknown tool.
    normalize_tool_names: bool = False


#: The seed article's dispatcher: typed tool contracts, three-class errors, the breaker
#: and the 2,000,000-token budget. A runtime, not a strategy: any strategy may run under it.
CONTRACT_RUNTIME = Switches(contracts=True, errors="three_class", breaker=True, token_budget=DEFAULT_TOKEN_BUDGET)
