"""Hypothesis strategies for valid parameter sets of every registered strategy.

`params_for(name)` draws the params of one registered strategy with small windows and thresholds,
so that the hooks have work to do on short generated histories; `configs()` draws ``(name, params)``
over all of them, ready for ``strategies.create(name, **params)``. The built-in strategies of
`HAND_WRITTEN_NAMES` have generators written here; any other registered strategy gets one derived from
its declared ``Params`` model (`declared_params`).
"""

from __future__ import annotations

import math
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from strategies import get, names
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

#: The strategies whose generators are written in this module; every other one's are derived.
HAND_WRITTEN_NAMES = frozenset(FLAT_NAMES) | COMPOSITES | frozenset(OPTIONAL_NAMES)

#: How far above its lower bound a derived integer or float goes: small windows and thresholds.
INT_SPAN = 12
FLOAT_SPAN = 1.0


def _constraints(metadata: Iterable[Any]) -> Iterable[Any]:
    """The single constraints of ``metadata``: a FieldInfo's and a GroupedMetadata's (``Interval``) unpacked."""
    for item in metadata:
        if isinstance(item, FieldInfo):
            yield from _constraints(item.metadata)
        elif isinstance(item, annotated_types.GroupedMetadata):
            yield from _constraints(item)
        else:
            yield item


@dataclass(frozen=True, slots=True)
class Bounds:
    """A number's bounds from its field's metadata (``Field(ge=...)``, ``Gt``, ...); None is unbounded."""

    lower: float | None = None
    lower_open: bool = False
    upper: float | None = None
    upper_open: bool = False

    @classmethod
    def of(cls, metadata: Iterable[Any]) -> Bounds:
        """The bounds the ``Ge``/``Gt``/``Le``/``Lt`` constraints of ``metadata`` set (the last of each side wins)."""
        bounds = cls()
        for item in _constraints(metadata):
            if isinstance(item, annotated_types.Ge | annotated_types.Gt):
                lower = item.ge if isinstance(item, annotated_types.Ge) else item.gt
                if isinstance(lower, int | float):
                    bounds = Bounds(float(lower), isinstance(item, annotated_types.Gt), bounds.upper, bounds.upper_open)
            elif isinstance(item, annotated_types.Le | annotated_types.Lt):
                upper = item.le if isinstance(item, annotated_types.Le) else item.lt
                if isinstance(upper, int | float):
                    bounds = Bounds(bounds.lower, bounds.lower_open, float(upper), isinstance(item, annotated_types.Lt))
        return bounds

    def integers(self) -> st.SearchStrategy[int] | None:
        """Small integers inside the bounds: at most `INT_SPAN` above the lowest; None if there are none."""
        lo = None if self.lower is None else math.floor(self.lower) + 1 if self.lower_open else math.ceil(self.lower)
        hi = None if self.upper is None else math.ceil(self.upper) - 1 if self.upper_open else math.floor(self.upper)
        if lo is None:
            lo = hi - INT_SPAN if hi is not None and hi < 0 else 0
        hi = lo + INT_SPAN if hi is None else min(hi, lo + INT_SPAN)
        return st.integers(lo, hi) if lo <= hi else None

    def floats(self) -> st.SearchStrategy[float] | None:
        """Finite floats inside the bounds, within `FLOAT_SPAN` of the lowest; None if there are none."""
        lo = self.lower if self.lower is not None else (
            self.upper - FLOAT_SPAN if self.upper is not None and self.upper < 0 else 0.0)
        lo_open = self.lower_open if self.lower is not None else False
        hi, hi_open = (lo + FLOAT_SPAN, False) if self.upper is None else (self.upper, self.upper_open)
        if lo > hi or (lo == hi and (lo_open or hi_open)):
            return None
        return st.floats(lo, hi, exclude_min=lo_open, exclude_max=hi_open, allow_nan=False, allow_infinity=False)


def derived_value(annotation: Any, metadata: Sequence[Any] = ()) -> st.SearchStrategy[Any] | None:
    """Values of a field annotated ``annotation`` with constraints ``metadata``: bools, bounded small
    ints and finite floats, a Literal's values, a union's arms (None first for an Optional). None when
    some part cannot be derived (a str, a list, a model, ...)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *extra = get_args(annotation)
        return derived_value(inner, [*metadata, *extra])
    if origin is Literal:
        return st.sampled_from(get_args(annotation))
    if origin is Union or origin is types.UnionType:
        arms = get_args(annotation)
        drawn = [derived_value(arm, metadata) for arm in arms if arm is not type(None)]
        derived = [d for d in drawn if d is not None]
        if len(derived) < len(drawn):
            return None
        return st.one_of(([st.none()] if type(None) in arms else []) + derived)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return Bounds.of(metadata).integers()
    if annotation is float:
        return Bounds.of(metadata).floats()
    return None


def _validates(model: type[BaseModel], params: dict[str, Any]) -> bool:
    try:
        model(**params)
    except ValidationError:
        return False
    return True


@cache
def declared_params(model: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]] | None:
    """Valid parameter sets of a ``Params`` model, derived from its fields (`derived_value`): a field
    it cannot derive is left out, so that it takes its default, and draws the model's own validators
    refuse are filtered out. None when a required field cannot be derived."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name, info in model.model_fields.items():
        drawn = derived_value(info.annotation, info.metadata)
        if drawn is not None:
            fields[info.alias or name] = drawn
        elif info.is_required():
            return None
    return st.fixed_dictionaries(fields).filter(lambda params: _validates(model, params))


def generated_names() -> tuple[str, ...]:
    """The registered strategies `params_for` can draw params for, in registry order: the built-in
    ones, and any other (a plugin's, one registered at test time) whose params `declared_params`
    derives."""
    return tuple(n for n in names() if n in HAND_WRITTEN_NAMES or declared_params(get(n).Params) is not None)


def params_for(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid parameter sets of registered strategy ``name`` (small windows, so the hooks do something).
    A pipeline draws 1-3 stages among the registered flat strategies. A strategy without a generator
    here gets `declared_params`; KeyError for a name not registered or whose required params the
    derivation cannot fill."""
    if name not in HAND_WRITTEN_NAMES:
        derived = declared_params(get(name).Params)
        if derived is None:
            raise KeyError(f"no parameter generator for strategy {name!r}: a required field of its Params "
                           "is of a type declared_params cannot derive")
        return derived
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


