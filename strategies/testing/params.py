"""Hypothesis strategies for valid parameter sets of every built-in strategy.

`params_for(name)` draws the params of one registered strategy with small windows and thresholds,
so that the hooks have work to do on short generated histories; `configs()` draws ``(name, params)``
over all of them, ready for ``strategies.create(name, **params)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from strategies import names
from strategies.clear_tool_uses import LANGCHAIN_PLACEHOLDER
from strategies.pipeline import COMPOSITES
from strategies.testing.histories import TOOL_NAMES

#: summary_ratio values, clamped ones included (docs/strategies.md 3.4 clamps to [0.1, 0.8]).
RATIOS = st.one_of(st.floats(0.0, 1.0), st.sampled_from((-3.0, 0.05, 0.1, 0.8, 0.95, 5.0)))
#: pin_first values (None means 0).
PIN_FIRST = st.sampled_from((0, 0, 1, 2, 3, None))
#: R7's proactive thresholds.
THRESHOLDS = st.sampled_from((0.2, 0.5, 0.7, 1.0))


@st.composite
def _condense_params(draw: st.DrawFn) -> dict[str, Any]:
    max_size = draw(st.integers(8, 30))
    return {
        "max_size": max_size,
        "keep_first": draw(st.integers(0, min(2, max_size // 2 - 2))),
        "max_tokens": draw(st.one_of(st.none(), st.integers(50, 4000))),
        "minimum_progress": draw(st.sampled_from((0.05, 0.1, 0.3, 0.6))),
        "hard_reset_retries": draw(st.integers(1, 4)),
        "hard_reset_scaling": draw(st.sampled_from((0.3, 0.5, 0.8, 0.9))),
    }


@st.composite
def clear_tool_uses_params(draw: st.DrawFn) -> dict[str, Any]:
    """Valid `clear_tool_uses` params with small thresholds."""
    trigger = draw(st.one_of(
        st.fixed_dictionaries({"type": st.just("input_tokens"), "value": st.integers(0, 6000)}),
        st.fixed_dictionaries({"type": st.just("tool_uses"), "value": st.integers(0, 10)}),
    ))
    return {
        "trigger": trigger,
        "keep": {"type": "tool_uses", "value": draw(st.integers(0, 4))},
        "clear_at_least": draw(st.one_of(st.none(), st.fixed_dictionaries(
            {"type": st.just("input_tokens"), "value": st.integers(0, 3000)}))),
        "exclude_tools": draw(st.lists(st.sampled_from(sorted(set(TOOL_NAMES))), max_size=2, unique=True)),
        "clear_tool_inputs": draw(st.one_of(st.booleans(), st.lists(st.sampled_from(sorted(set(TOOL_NAMES))),
                                                                    max_size=2, unique=True))),
    }


def langchain_clear_tool_uses_params() -> st.SearchStrategy[dict[str, Any]]:
    """Valid `langchain_clear_tool_uses` params with small thresholds."""
    return st.fixed_dictionaries({
        "trigger": st.integers(0, 6000),
        "clear_at_least": st.sampled_from((0, 0, 1, 300, 2000)),
        "keep": st.integers(0, 4),
        "clear_tool_inputs": st.booleans(),
        "exclude_tools": st.lists(st.sampled_from(sorted(set(TOOL_NAMES))), max_size=2, unique=True),
        "placeholder": st.sampled_from((LANGCHAIN_PLACEHOLDER, "[gone]")),
        "token_count_method": st.sampled_from(("model", "approximate")),
    })


@st.composite
def adk_params(draw: st.DrawFn) -> dict[str, Any]:
    """Valid `adk_compaction` params; small thresholds so that short histories compact."""
    params: dict[str, Any] = {}
    mode = draw(st.sampled_from(("sliding", "token", "both")))
    if mode != "token":
        params |= {"compaction_interval": draw(st.integers(1, 3)), "overlap_size": draw(st.integers(0, 2))}
    if mode != "sliding":
        params |= {
            "token_threshold": draw(st.sampled_from((1, 100, 500, 2000))),
            "event_retention_size": draw(st.integers(0, 4)),
            "token_measure": draw(st.sampled_from(("last_call", "prompt"))),
        }
    return params


def _flat_params(name: str) -> st.SearchStrategy[dict[str, Any]]:
    if name in ("unbounded", "drop_all"):
        return st.just({})
    if name in ("sliding_window", "truncate_then_slide"):
        return st.fixed_dictionaries(
            {
                "window_size": st.integers(0, 12),
                "per_turn": st.sampled_from((False, False, True, 1, 2, 3)),
                "pin_first": PIN_FIRST,
                "proactive": st.booleans(),
                "threshold": THRESHOLDS,
            }
        )
    if name == "summarize":
        return st.fixed_dictionaries(
            {
                "summary_ratio": RATIOS,
                "preserve_recent_messages": st.integers(0, 12),
                "pin_first": PIN_FIRST,
                "trigger_turns": st.one_of(st.none(), st.integers(1, 4)),
                "keep_turns": st.integers(0, 4),
                "proactive": st.booleans(),
                "threshold": THRESHOLDS,
            }
        )
    if name == "condense":
        return _condense_params()
    if name == "observation_masking":
        return st.fixed_dictionaries({"keep_turns": st.integers(0, 4)})
    if name == "offload_contracts":
        return st.fixed_dictionaries(
            {
                "offload_threshold_bytes": st.integers(256, 2048),
                "preview_chars": st.integers(0, 400),
                "retrieve_chars": st.integers(256, 3000),
            }
        )
    if name == "clear_tool_uses":
        return clear_tool_uses_params()
    if name == "langchain_clear_tool_uses":
        return langchain_clear_tool_uses_params()
    if name == "adk_compaction":
        return adk_params()
    if name == "claude_code_compact":
        return st.fixed_dictionaries({
            "summary_reserve_tokens": st.sampled_from((0, 50, 200)), "buffer_tokens": st.sampled_from((0, 50, 300)),
            "keep_tool_results": st.integers(0, 6), "thrash_turns": st.integers(1, 3),
            "thrash_limit": st.integers(1, 3), "max_failures": st.integers(1, 3),
        })
    if name == "strands_context_offloader":
        return st.integers(20, 400).flatmap(lambda m: st.fixed_dictionaries({
            "max_result_tokens": st.just(m), "preview_tokens": st.integers(0, m - 1),
            "evict_after_cycles": st.one_of(st.none(), st.integers(1, 4)),
            "include_retrieval_tool": st.booleans(),
            "token_estimate": st.sampled_from(("exact", "heuristic")),
        }))
    if name == "langchain_summarization":
        return st.fixed_dictionaries({
            "trigger": st.one_of(st.tuples(st.just("tokens"), st.integers(100, 8000)),
                                 st.tuples(st.just("messages"), st.integers(1, 12)),
                                 st.tuples(st.just("fraction"), st.sampled_from((0.1, 0.5, 0.9))),
                                 st.just({"tokens": 500, "messages": 4}), st.none()),
            "keep": st.one_of(st.tuples(st.just("messages"), st.integers(1, 8)),
                              st.tuples(st.just("tokens"), st.integers(50, 3000))),
            "trim_tokens_to_summarize": st.sampled_from((None, 0, 100, 4000)),
        })
    if name == "openai_trimming":
        return st.fixed_dictionaries({"max_turns": st.one_of(st.none(), st.integers(1, 4)),
                                      "limit": st.one_of(st.none(), st.integers(1, 12))})
    if name == "openai_summarizing":
        return st.integers(0, 3).flatmap(lambda k: st.fixed_dictionaries(
            {"keep_last_n_turns": st.just(k), "context_limit": st.integers(max(k, 1), 4)}))
    if name == "openai_compaction":
        return st.fixed_dictionaries({"compact_threshold": st.one_of(st.none(), st.integers(50, 6000)),
                                      "candidate_threshold": st.one_of(st.none(), st.integers(1, 12))})
    if name == "strands_manager":
        return st.one_of(
            st.fixed_dictionaries({
                "manager": st.just("SlidingWindowConversationManager"),
                "options": st.fixed_dictionaries({"window_size": st.integers(0, 12),
                                                  "should_truncate_results": st.booleans()}),
            }),
            st.fixed_dictionaries({
                "manager": st.just("SummarizingConversationManager"),
                "options": st.fixed_dictionaries({"summary_ratio": st.sampled_from((0.1, 0.3, 0.8)),
                                                  "preserve_recent_messages": st.integers(0, 12)}),
            }),
        )
    raise KeyError(f"no parameter generator for strategy {name!r}")


#: The built-in strategies `params_for` knows, composites aside.
FLAT_NAMES = (
    "adk_compaction",
    "claude_code_compact",
    "clear_tool_uses",
    "condense",
    "drop_all",
    "langchain_clear_tool_uses",
    "langchain_summarization",
    "observation_masking",
    "offload_contracts",
    "openai_compaction",
    "openai_summarizing",
    "openai_trimming",
    "sliding_window",
    "strands_context_offloader",
    "summarize",
    "truncate_then_slide",
    "unbounded",
)


#: Built-in strategies that need an optional dependency (strands-agents) to run; never pipeline stages.
OPTIONAL_NAMES = ("strands_manager",)


def generated_names() -> tuple[str, ...]:
    """The registered strategies `params_for` can draw params for, in registry order (strategies a
    plugin registers are left out: their params are theirs to generate)."""
    known = set(FLAT_NAMES) | COMPOSITES | set(OPTIONAL_NAMES)
    return tuple(n for n in names() if n in known)


def params_for(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid parameter sets of built-in strategy ``name`` (small windows, so the hooks do something).
    A pipeline draws 1-3 stages among the registered flat strategies. KeyError for any other name."""
    if name == "pipeline":
        stages = tuple(n for n in names() if n in FLAT_NAMES)
        stage = st.sampled_from(stages).flatmap(
            lambda n: _flat_params(n).map(lambda p: {"name": n, "params": p})
        )
        return st.fixed_dictionaries({"stages": st.lists(stage, min_size=1, max_size=3)})
    if name == "hybrid":
        return st.fixed_dictionaries(
            {
                "mask_turns": st.integers(0, 4),
                "summary_turns": st.integers(1, 4),
                "keep_turns": st.integers(0, 4),
                "pin_first": PIN_FIRST,
                "summary_ratio": RATIOS,
                "preserve_recent_messages": st.integers(0, 12),
                "proactive": st.booleans(),
                "threshold": THRESHOLDS,
                "summarize_unmasked": st.booleans(),
            }
        )
    return _flat_params(name)


def configs(only: Sequence[str] | None = None) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """``(name, params)`` over every registered strategy `params_for` knows, or over ``only``
    (``strands_manager`` needs strands installed to run)."""
    return st.sampled_from(tuple(only or generated_names())).flatmap(lambda n: params_for(n).map(lambda p: (n, p)))


