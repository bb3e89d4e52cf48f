"""Swappable context strategies, their registry, and the pure split-point helpers.

Third-party packages add strategies through the ``ctxbench.strategies`` entry-point group.
"""

from strategies import (  # noqa: F401  importing registers the built-in strategies
    adk_compaction,
    claude_code_compact,
    clear_tool_uses,
    condense,
    drop_all,
    langchain_summarization,
    observation_masking,
    offload_contracts,
    openai_sessions,
    pipeline,
    sliding_window,
    strands_bridge,
    strands_context_offloader,
    summarize,
    truncate_then_slide,
    unbounded,
)
from strategies.base import CannotReduce, ContextStrategy, create, default_names, get, names, register

__all__ = ["CannotReduce", "ContextStrategy", "create", "default_names", "get", "names", "register"]
