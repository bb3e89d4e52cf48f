"""Reference answers written straight from the spec, independent of the library's code."""

from __future__ import annotations

import math

from strategies.condense import NOTICE

#: docs/strategies.md 1.3: the built-in strategy names, sorted.
BUILTIN_STRATEGIES = [
    "adk_compaction",
    "claude_code_compact",
    "clear_tool_uses",
    "condense",
    "drop_all",
    "hybrid",
    "langchain_clear_tool_uses",
    "langchain_summarization",
    "observation_masking",
    "offload_contracts",
    "openai_compaction",
    "openai_summarizing",
    "openai_trimming",
    "pipeline",
    "sliding_window",
    "strands_context_offloader",
    "strands_manager",
    "summarize",
    "truncate_then_slide",
    "unbounded",
]


def clipped_text(text: str, cap: int) -> str:
    """docs/strategies.md 3.5: a hard reset's copy of ``text`` clipped to ``cap`` chars around NOTICE."""
    if len(text) <= cap:
        return text
    if cap <= len(NOTICE):
        return NOTICE[:cap]
    room = cap - len(NOTICE)
    return text[: math.ceil(room / 2)] + NOTICE + text[len(text) - room // 2 :]
