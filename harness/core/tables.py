"""The run directory's tables (docs/design.md, "Run directory"): the outcome names, the keys their rows are
sorted and joined by, and every column of ``sessions.parquet``, ``calls.parquet``, ``events.parquet`` and
``hidden.parquet`` with its Arrow type, its default and its group.

The simulator's records (`harness.sim.metrics`, `harness.sim.events`) have exactly these columns as their
fields, the run directory writes them, and the reports read them, all from here: a run copied to a laptop is read
through the core alone. ``events.parquet``, ``hidden.parquet`` and an accounting run's ``calls.parquet`` are
written with the declared types (`arrow_schema`); the simulated ``sessions.parquet`` and ``calls.parquet``
keep the types pandas infers from their values, which are the declared ones (a seed of 2**63 or more makes
``seed`` uint64; an all-int64 column stays int64), so their bytes do not depend on this module.

pyarrow is imported only when a schema is asked for: the simulator builds its rows without it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CALL_COLUMNS",
    "CALL_ROW_KEY",
    "EVENT_COLUMNS",
    "EVENT_ROW_KEY",
    "HIDDEN_COLUMNS",
    "MEMORY_BUDGET_CHARS",
    "OUTCOMES",
    "SCRIPT_KEY",
    "SESSION_COLUMNS",
    "SESSION_ROW_KEY",
    "CallKind",
    "Column",
    "Group",
    "Outcome",
    "arrow_schema",
    "defaults",
    "names",
    "select",
]

#: How a session ends (docs/design.md, "sessions.parquet columns"); ``error``: the replay raised.
Outcome = Literal[
    "success", "wrong_answer", "stuck", "overflow", "throttled", "blocked", "budget_exceeded",
    "step_failed", "max_turns", "error",
]
#: Every `Outcome`, success first, then the failures: the order the reports list them in.
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
#: What a model call was: an agent's turn, a strategy's summary, or a hand-over to the next agent.
CallKind = Literal["agent", "summary", "handoff"]

#: One session script: the same under every strategy (paired comparisons join on it).
SCRIPT_KEY = ("scenario", "session_index")
#: One row of ``sessions.parquet``: a session script replayed under one strategy; the order of its rows.
SESSION_ROW_KEY = (*SCRIPT_KEY, "strategy")
#: The order of the rows of ``calls.parquet``.
CALL_ROW_KEY = (*SESSION_ROW_KEY, "call_index")
#: The order of the rows of ``events.parquet``.
EVENT_ROW_KEY = (*SESSION_ROW_KEY, "seq")

#: The character budget of the memory loaded into a series session's prompt (OpenHands SDK): the bound of
#: ``memory_chars``, shared by the simulator's memory and the report's memory section.
MEMORY_BUDGET_CHARS = 6000

#: Which columns a table has only in some runs: "" always; ``sweep``: the variant's profile and sweep
#: point (every simulated run); ``series`` and ``memory``: a run with ``[series]``; ``accounting``:
#: ``ctxbench replay``.
Group = Literal["", "sweep", "series", "memory", "accounting"]
#: The Arrow types a column may have, by pyarrow's alias.
ArrowType = Literal["string", "bool", "int32", "int64", "uint64", "double"]


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table."""

    name: str
    #: Its Arrow type, as pyarrow names it (``pa.type_for_alias``).
    arrow: ArrowType
    #: The value of a row that says nothing else: a record field's default, what an error row holds, what the
    #: explorer leaves out of a session's data. None: null.
    default: Any
    group: Group = ""

    @property
    def text(self) -> bool:
        """Whether the column holds text (else numbers; booleans count as numbers)."""
        return self.arrow == "string"


def _columns(arrow: ArrowType, default: Any, *names: str, group: Group = "") -> tuple[Column, ...]:
    return tuple(Column(name, arrow, default, group) for name in names)


def _text(*names: str, group: Group = "") -> tuple[Column, ...]:
    return _columns("string", "", *names, group=group)


def _int(*names: str, group: Group = "") -> tuple[Column, ...]:
    return _columns("int64", 0, *names, group=group)


def _float(*names: str, group: Group = "") -> tuple[Column, ...]:
    return _columns("double", 0.0, *names, group=group)


def _bool(*names: str, group: Group = "") -> tuple[Column, ...]:
    return _columns("bool", False, *names, group=group)


#: ``sessions.parquet``: `harness.sim.metrics.SessionRecord`'s fields, then the variant's profile and sweep
#: point, then in a series run where the session sits in its series and what its memory did.
SESSION_COLUMNS: tuple[Column, ...] = (
    *_text("scenario"), *_int("session_index"), Column("seed", "uint64", 0), *_text("strategy", "outcome"),
    *_bool("contracts"), *_text("errors"), *_bool("breaker"), *_int("output_cap_chars", "token_budget"),
    *_bool("normalize_tool_names"), *_text("family"),
    *_int("agents", "turns", "model_calls", "summary_calls", "tool_calls", "tool_syntax_errors",
          "syntax_errors_reaching_tool", "name_variants", "engineering_errors", "retrieve_calls", "refetches",
          "redone_steps", "wrong_values", "unsafe_actions", "nudges"),
    *_bool("loop_detected"), *_text("loop_rule"),
    *_int("facts_lost", "facts_cut", "input_tokens", "output_tokens", "cached_input_tokens"),
    *_float("context_tokens_mean"), *_int("context_tokens_peak", "overflow_events", "throttle_retries"),
    *_float("latency_s", "tool_s", "backoff_s", "cost_usd", "summary_cost_usd"),
    *_int("compactions", "cache_breaking_edits", "thrash", "tokens_freed"), *_text("error"),
    *_text("model", "sweep_param", group="sweep"), Column("sweep_value", "double", None, "sweep"),
    *_int("series", "series_position", group="series"),
    *_bool("memory", group="memory"), *_int("memory_chars", group="memory"),
    *_bool("memory_truncated", group="memory"), *_int("memory_facts_used", group="memory"),
    *_bool("stale_memory_used", group="memory"), *_int("steps_skipped", group="memory"),
)

#: ``calls.parquet``: `harness.sim.metrics.CallRecord`'s fields, then what an accounting run adds.
CALL_COLUMNS: tuple[Column, ...] = (
    *_text("scenario"), *_int("session_index"), *_text("strategy", "agent"), *_int("call_index"),
    *_text("call_kind", "step_id"), *_int("attempt"), *_text("action", "malformed_kind"),
    *_int("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "context_tokens"),
    *_float("noise", "model_s", "clock_s", "cost_usd"), *_int("tokens_freed"), *_text("trace"),
    *_int("hidden_outputs", "hidden_output_tokens", "needed_hidden", group="accounting"),
    Column("recorded_input_tokens", "int64", None, "accounting"),
)


def _count(*names: str, default: int = 0) -> tuple[Column, ...]:
    return _columns("int32", default, *names)


#: ``events.parquet``: `harness.sim.events.EventRecord`'s fields. Counts are int32 (a window's tokens, a tool
#: output's characters and a session's events all fit); the session index is int64 like the other tables'
#: (the explorer joins on it).
EVENT_COLUMNS: tuple[Column, ...] = (
    *_text("scenario"), *_int("session_index"), *_text("strategy"), *_count("seq", "turn"),
    *_text("agent", "event"), *_count("call_index", default=-1),
    *_count("messages", "system_tokens", "task_tokens", "assistant_tokens", "tool_tokens", "error_tokens",
            "summary_tokens", "stub_tokens", "masked_tokens", "nudge_tokens"),
    *_text("tool", "status"), *_count("output_chars", "output_tokens"), *_text("error_class", "hook", "how"),
    *_count("messages_before", "messages_after", "tokens_before", "tokens_after"),
    *_text("facts_dropped", "fact", "cause"), *_count("dropped_seq", default=-1),
)

#: ``hidden.parquet`` (``ctxbench replay``): each tool output a strategy hid from some call.
HIDDEN_COLUMNS: tuple[Column, ...] = (
    *_text("scenario"), *_int("session_index"), *_text("strategy", "tool_use_id", "tool"), *_int("tokens"),
    *_int("first_hidden_call"), *_text("how"),
)


def names(columns: Iterable[Column], groups: Iterable[Group] = ("",)) -> tuple[str, ...]:
    """The names of ``columns`` in ``groups`` (by default the columns every run has), in table order."""
    wanted = set(groups)
    return tuple(c.name for c in columns if c.group in wanted)


def defaults(columns: Iterable[Column]) -> dict[str, Any]:
    """Column name -> default, in table order."""
    return {c.name: c.default for c in columns}


def select(columns: Iterable[Column], wanted: Sequence[str]) -> tuple[Column, ...]:
    """The columns named ``wanted``, in that order; KeyError for a name the table does not have."""
    by_name = {c.name: c for c in columns}
    return tuple(by_name[name] for name in wanted)


def arrow_schema(columns: Iterable[Column]) -> pa.Schema:
    """The Arrow schema of ``columns``, in their order, without metadata."""
    import pyarrow as pa

    return pa.schema([(c.name, pa.type_for_alias(c.arrow)) for c in columns])
