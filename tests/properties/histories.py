"""Hypothesis generators for the property tests (strategies.md 4, "Generators").

Well-formed windows: a task message, turns of an assistant message (optional Text, 1-3 ToolUse
with unique ids) followed by a user message with the matching results, sometimes a final answer and
a follow-up, sometimes an earlier summary, random pins. Malformed lists for the split helpers.
Valid parameter sets for every registered strategy. Texts come from a small pool so the real
tokenizer's cache hits.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse, tokens_of
from harness.core.stubs import render_stub
from strategies import CannotReduce, ContextStrategy, create, names
from strategies.claude_code_compact import CLEARED as CLAUDE_CODE_CLEARED
from strategies.clear_tool_uses import ANTHROPIC_PLACEHOLDER, LANGCHAIN_PLACEHOLDER
from strategies.observation_masking import placeholder
from strategies.pipeline import COMPOSITES
from strategies.split import is_pinned
from strategies.strands_context_offloader import StrandsContextOffloaderParams
from strategies.strands_context_offloader import stub_for as strands_stub
from strategies.truncate_then_slide import truncatable, truncated
from tests.fakes import FakeSummarizer

# Text pool -----------------------------------------------------------------------------------------

TASKS = (
    "Task: fix the failing test in module alpha.\nReport the root cause when done.",
    "Task: add a verbose flag to the command line.\nKeep the test suite green.",
)
THOUGHTS = (
    "Let me look at the file first.",
    "Running the tests now.\nThen I will patch the bug.",
    "Checking the logs for the error.",
)
FINALS = (
    "Done: the fix is in place.\nAll tests pass.",
    "I could not finish; see the notes above.",
)
FOLLOWUPS = (
    "Thanks. Please also update the changelog.",
    "Can you double-check the empty-input case?",
)
OLD_SUMMARY = "SUMMARY 0: earlier work read three files\nand ran the test suite twice."
TOOL_NAMES = ("read_file", "run_tests", "grep", "read_file", "run_tests", "retrieve_payload")
TOOL_INPUTS: tuple[dict[str, Any], ...] = ({"path": "src/app.py"}, {"pattern": "TODO"}, {})

_BASE = "\n".join(f"line {i:04d}: entry {i * 7 % 97:02d} state ok" for i in range(400))
_TINY = ("a\nb\nc", "ok\nok", "1\n2\n3")
#: Result content sizes of the spec: 5, 401-446 (grows when truncated), 1200 and 5000 chars.
SIZES = st.one_of(st.just(5), st.integers(401, 446), st.just(1200), st.just(5000))


def content(size: int, variant: int) -> str:
    """A multi-line tool output of exactly ``size`` characters (three variants per size)."""
    if size == 5:
        return _TINY[variant % 3]
    start = (variant % 3) * 31
    text = _BASE[start : start + size]
    assert len(text) == size
    return text


def pins(enabled: bool) -> st.SearchStrategy[bool]:
    return st.integers(0, 6).map(lambda x: x == 0) if enabled else st.just(False)


@dataclass
class Ids:
    """Fresh tool ids with a prefix, so appended turns never collide with the history."""

    prefix: str = "t"
    next: int = 0

    def take(self) -> str:
        self.next += 1
        return f"{self.prefix}{self.next}"


def task_message(pinned: bool = False, variant: int = 0) -> Message:
    return Message.build("user", [Text(TASKS[variant % len(TASKS)])], kind="task", pinned=pinned)


def summary_message(pinned: bool = False) -> Message:
    return Message.build("user", [Text(OLD_SUMMARY)], kind="summary", pinned=pinned)


@st.composite
def results_for(draw: st.DrawFn, uses: Sequence[ToolUse], pin: bool = False) -> Message:
    """The user message answering ``uses``, in order."""
    statuses = st.sampled_from(("success", "success", "error"))
    blocks = [ToolResult(u.id, draw(statuses), content(draw(SIZES), draw(st.integers(0, 2)))) for u in uses]
    return Message.build("user", blocks, pinned=draw(pins(pin)))


@st.composite
def assistant_call(draw: st.DrawFn, ids: Ids, pin: bool = False) -> Message:
    uses = [
        ToolUse(ids.take(), draw(st.sampled_from(TOOL_NAMES)), draw(st.sampled_from(TOOL_INPUTS)))
        for _ in range(draw(st.integers(1, 3)))
    ]
    blocks: list[Text | ToolUse] = [Text(draw(st.sampled_from(THOUGHTS)))] if draw(st.booleans()) else []
    return Message.build("assistant", [*blocks, *uses], pinned=draw(pins(pin)))


@st.composite
def tool_turn(draw: st.DrawFn, ids: Ids, pin: bool = False) -> list[Message]:
    """An assistant message with 1-3 calls and the user message with their results."""
    call = draw(assistant_call(ids, pin))
    return [call, draw(results_for([b for b in call.blocks if isinstance(b, ToolUse)], pin))]


def open_uses(window: Sequence[Message]) -> list[ToolUse]:
    """The calls of a last assistant message that nothing answers yet."""
    if window and window[-1].role == "assistant":
        return [b for b in window[-1].blocks if isinstance(b, ToolUse)]
    return []


@st.composite
def histories(
    draw: st.DrawFn,
    min_turns: int = 0,
    max_turns: int = 8,
    pinned: bool = True,
    open_end: bool = True,
    ids: Ids | None = None,
) -> list[Message]:
    """A well-formed window W(L) (strategies.md 1.5)."""
    ids = ids or Ids("t")
    window: list[Message] = []
    where = draw(st.sampled_from(("none", "none", "none", "first", "after_task")))
    if where == "first":
        window.append(summary_message(draw(pins(pinned))))
    window.append(task_message(draw(pins(pinned)), draw(st.integers(0, 1))))
    if where == "after_task":
        window.append(summary_message(draw(pins(pinned))))
    for _ in range(draw(st.integers(min_turns, max_turns))):
        window += draw(tool_turn(ids, pinned))
    ending = draw(st.sampled_from(("none", "none", "final", "followup", "open") if open_end else ("none", "final")))
    if ending in ("final", "followup"):
        window.append(Message.build("assistant", [Text(draw(st.sampled_from(FINALS)))], pinned=draw(pins(pinned))))
    if ending == "followup":
        window.append(Message.build("user", [Text(draw(st.sampled_from(FOLLOWUPS)))], pinned=draw(pins(pinned))))
    if ending == "open":
        window.append(draw(assistant_call(ids, pinned)))
    return window


@st.composite
def new_messages(draw: st.DrawFn, window: Sequence[Message], ids: Ids | None = None) -> list[Message]:
    """What the runtime appends next: the results of an open call, or a new turn (never pinned)."""
    pending = open_uses(window)
    if pending:
        return [draw(results_for(pending))]
    ids = ids or Ids("n")
    out = draw(tool_turn(ids))
    if draw(st.integers(0, 4)) == 0:
        out.append(Message.build("assistant", [Text(draw(st.sampled_from(FINALS)))]))
    return out


# Malformed lists for the split helpers ---------------------------------------------------------------

_MAL_IDS = ("x1", "x2", "x3", "x4")


@st.composite
def _random_block(draw: st.DrawFn) -> Text | ToolUse | ToolResult:
    which = draw(st.integers(0, 2))
    if which == 0:
        return Text(draw(st.sampled_from(THOUGHTS)))
    if which == 1:
        return ToolUse(draw(st.sampled_from(_MAL_IDS)), draw(st.sampled_from(TOOL_NAMES)), {})
    return ToolResult(draw(st.sampled_from(_MAL_IDS)), draw(st.sampled_from(("success", "error"))), _TINY[0])


@st.composite
def _random_list(draw: st.DrawFn) -> list[Message]:
    return [
        Message.build(
            draw(st.sampled_from(("user", "assistant"))),
            draw(st.lists(_random_block(), min_size=0, max_size=3)),
            pinned=draw(pins(True)),
        )
        for _ in range(draw(st.integers(0, 10)))
    ]


@st.composite
def _corrupted_history(draw: st.DrawFn) -> list[Message]:
    """A well-formed window with one defect: a message deleted, an extra unanswered call inserted,
    a use moved into a user message, or a message moved elsewhere."""
    window = draw(histories(min_turns=1, max_turns=5))
    i = draw(st.integers(0, len(window) - 1))
    defect = draw(st.sampled_from(("delete", "unanswered", "user_use", "move")))
    if defect == "delete":
        del window[i]
    elif defect == "unanswered":
        window.insert(i, Message.build("assistant", [ToolUse("zz1", "grep", {})]))
    elif defect == "user_use":
        window.insert(i, Message.build("user", [Text(FOLLOWUPS[0]), ToolUse("zz2", "grep", {})]))
    else:
        m = window.pop(i)
        window.insert(draw(st.integers(0, len(window))), m)
    return window


def malformed_lists() -> st.SearchStrategy[list[Message]]:
    """Lists with orphan results, unanswered uses anywhere and uses in user messages (and some
    well-formed ones: the split helpers must behave on both)."""
    return st.one_of(_random_list(), _corrupted_history(), histories(max_turns=4))


# W(L), protection ----------------------------------------------------------------------------------


def violations(window: Sequence[Message]) -> set[tuple[str, int]]:
    """Indices breaking rule (a) or (b) of W(L) (strategies.md 1.5)."""
    out: set[tuple[str, int]] = set()
    n = len(window)
    for j, m in enumerate(window):
        if m.has_result and not (j > 0 and window[j - 1].role == "assistant" and m.results <= window[j - 1].uses):
            out.add(("a", j))
        if m.has_use and j < n - 1 and not (window[j + 1].role == "user" and m.uses <= window[j + 1].results):
            out.add(("b", j))
    return out


def ids_unique(window: Sequence[Message]) -> bool:
    """Rule (c): no tool id is used twice, nor answered twice."""
    use_ids = [b.id for m in window for b in m.blocks if isinstance(b, ToolUse)]
    result_ids = [b.tool_use_id for m in window for b in m.blocks if isinstance(b, ToolResult)]
    return len(use_ids) == len(set(use_ids)) and len(result_ids) == len(set(result_ids))


def well_formed(window: Sequence[Message]) -> bool:
    """W(L) of strategies.md 1.5."""
    return not violations(window) and ids_unique(window)


def protected_indices(window: Sequence[Message]) -> list[int]:
    return [i for i in range(len(window)) if is_pinned(window, i)]


def protected(window: Sequence[Message]) -> list[Message]:
    return [window[i] for i in protected_indices(window)]


# Strategy parameters ------------------------------------------------------------------------------

RATIOS = st.one_of(st.floats(0.0, 1.0), st.sampled_from((-3.0, 0.05, 0.1, 0.8, 0.95, 5.0)))
PIN_FIRST = st.sampled_from((0, 0, 1, 2, 3, None))
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
    """Valid `clear_tool_uses` params with small thresholds (the style of histories._flat_params)."""
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
    """Small thresholds so that short histories compact."""
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
                "contracts": st.booleans(),
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
    raise KeyError(f"no parameter generator for strategy {name!r}")


FLAT_NAMES = tuple(n for n in names() if n not in COMPOSITES)


def params_for(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Valid parameter sets of strategy ``name`` (small windows, so the hooks do something)."""
    if name == "pipeline":
        stage = st.sampled_from(FLAT_NAMES).flatmap(
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
    """(name, params) over every registered strategy, or over ``only``."""
    return st.sampled_from(tuple(only or names())).flatmap(lambda n: params_for(n).map(lambda p: (n, p)))


#: One allowed rewrite of a tool result's content (G4), as a hashable spec: ``("stub", preview_chars)`` an
#: offload stub, ``("text", placeholder)`` a fixed placeholder, ``("strands", params_json)`` the strands
#: offloader's stub for those params.
Rewrite = tuple[str, Any]


def rewrites_of(name: str, params: dict[str, Any]) -> set[Rewrite]:
    """The content rewrites a strategy may make besides masking's placeholder and truncation."""
    if name == "offload_contracts":
        return {("stub", params.get("preview_chars", 300))}
    if name == "pipeline":
        return {r for s in params["stages"] for r in rewrites_of(s["name"], s.get("params", {}))}
    if name == "clear_tool_uses":
        return {("text", ANTHROPIC_PLACEHOLDER)}
    if name == "langchain_clear_tool_uses":
        return {("text", params.get("placeholder", LANGCHAIN_PLACEHOLDER))}
    if name == "claude_code_compact":
        return {("text", CLAUDE_CODE_CLEARED)}
    if name == "strands_context_offloader":
        return {("strands", json.dumps(params, sort_keys=True))}
    return set()


FAKE_MODES = st.sampled_from(("ok", "ok", "fail", "empty", "huge"))
#: window_tokens as a share of the window's tokens: utilization from 0.33 to 4.
WINDOW_FACTORS = st.sampled_from((0.25, 0.5, 0.9, 1.0, 1.4, 3.0))


@dataclass
class Case:
    """One generated setup: a strategy config, a well-formed window, a fake mode and a window size."""

    name: str
    params: dict[str, Any]
    window: list[Message]
    mode: str
    window_factor: float
    appended: list[Message] = field(default_factory=list)

    def __repr__(self) -> str:
        return (
            f"Case(name={self.name!r}, params={self.params!r}, mode={self.mode!r}, "
            f"window_factor={self.window_factor}, window={brief(self.window)}, appended={brief(self.appended)})"
        )


class Shown:
    """Messages that hypothesis prints briefly (a Message's repr is long)."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(brief(self.messages))


def tool_ids(window: Sequence[Message]) -> set[str]:
    return {i for m in window for i in m.tool_ids}


def brief(window: Sequence[Message]) -> str:
    """A compact rendering for failure reports: role, pin, kind, then T<len>, U<id>, R<id>:<len>."""

    def block(b: Text | ToolUse | ToolResult) -> str:
        if isinstance(b, Text):
            return f"T{len(b.text)}"
        if isinstance(b, ToolUse):
            return f"U{b.id}:{b.name}"
        return f"R{b.tool_use_id}:{b.status[0]}{len(b.content)}"

    return "[" + ", ".join(
        f"{m.role[0]}{'*' if m.pinned else ''}:{m.kind}({' '.join(block(b) for b in m.blocks)})" for m in window
    ) + "]"


@st.composite
def cases(draw: st.DrawFn, only: Sequence[str] | None = None, max_turns: int = 8, pinned: bool = True) -> Case:
    name, params = draw(configs(only))
    window = draw(histories(max_turns=max_turns, pinned=pinned))
    return Case(
        name=name,
        params=params,
        window=window,
        mode=draw(FAKE_MODES),
        window_factor=draw(WINDOW_FACTORS),
        appended=draw(new_messages(window)),
    )


# Running one hook on a generated case ----------------------------------------------------------------

HOOKS = ("append", "apply", "before_call", "reduce", "reduce_reactive")


def norm(m: Message) -> tuple[object, ...]:
    """A message without its pin flag (comparisons of A with B ignore pins set during a hook)."""
    return (m.role, m.blocks, m.kind)


def norms(window: Sequence[Message]) -> list[tuple[object, ...]]:
    return [norm(m) for m in window]


@dataclass
class Run:
    """The window before (B) and after (A) one hook, the change of removed_count, and the error."""

    case: Case
    hook: str
    strategy: ContextStrategy
    ctx: Context
    fake: FakeSummarizer
    before: list[Message]
    after: list[Message]
    delta_removed: int
    error: CannotReduce | None


def setup(case: Case, fake: FakeSummarizer | None = None) -> tuple[ContextStrategy, Context, FakeSummarizer]:
    fake = fake or FakeSummarizer(mode=case.mode)  # type: ignore[arg-type]
    window_tokens = max(1, int(tokens_of(case.window) * case.window_factor))
    ctx = Context(case.window, window_tokens=window_tokens, summarizer=fake)
    return create(case.name, **case.params), ctx, fake


def call_hook(strategy: ContextStrategy, ctx: Context, hook: str, appended: Sequence[Message] = ()) -> None:
    """Run one hook the way the runtime does; reduce's CannotReduce propagates."""
    if hook == "append":
        for m in appended:
            ctx.messages.append(strategy.on_append(ctx, m))
    elif hook == "apply":
        strategy.apply(ctx)
    elif hook == "before_call":
        strategy.before_call(ctx)
    elif hook == "reduce":
        strategy.reduce(ctx)
    elif hook == "reduce_reactive":
        strategy.reduce(ctx, overflow=ContextOverflow(ctx.tokens, ctx.window_tokens))
    else:
        raise ValueError(hook)


def run_hook(case: Case, hook: str, fake: FakeSummarizer | None = None) -> Run:
    strategy, ctx, fake = setup(case, fake)
    before = list(case.window) + (list(case.appended) if hook == "append" else [])
    error: CannotReduce | None = None
    try:
        call_hook(strategy, ctx, hook, case.appended)
    except CannotReduce as e:
        if not hook.startswith("reduce"):
            raise
        error = e
    return Run(case, hook, strategy, ctx, fake, before, list(ctx.messages), ctx.removed_count, error)


# Allowed rewrites (G4) -------------------------------------------------------------------------------


@lru_cache(maxsize=50_000)
def allowed_contents(c: str, facts: frozenset[str], rewrites: tuple[Rewrite, ...], meter: TextMeter) -> frozenset[str]:
    """The content itself, its truncated form, its placeholder, or a rewrite of ``rewrites``."""
    out = {c, placeholder(c)}
    if truncatable(c):
        out.add(truncated(c))
    for kind, arg in rewrites:
        if kind == "stub":
            out.add(render_stub(c, facts, arg))
        elif kind == "text":
            out.add(arg)
        elif kind == "strands":
            out.add(strands_stub(c, meter, StrandsContextOffloaderParams(**json.loads(arg))))
    return frozenset(out)


def is_rewrite(a: Message, b: Message, rewrites: tuple[Rewrite, ...]) -> bool:
    """G4: a keeps b's role, non-result blocks, ids and statuses; each content is b's, or exactly
    its truncated form, placeholder or stub; kind unchanged or placeholder/handle; facts a subset. A
    call's input may be cleared to ``{}`` (context editing's ``clear_tool_inputs``), id and name kept."""
    if a.role != b.role or len(a.blocks) != len(b.blocks) or not a.facts <= b.facts:
        return False
    if a.kind != b.kind and a.kind not in ("placeholder", "handle"):
        return False
    for x, y in zip(a.blocks, b.blocks, strict=True):
        if isinstance(y, ToolResult):
            if not (
                isinstance(x, ToolResult)
                and x.tool_use_id == y.tool_use_id
                and x.status == y.status
                and x.content in allowed_contents(y.content, b.facts, rewrites, b.meter)
            ):
                return False
        elif isinstance(y, ToolUse) and isinstance(x, ToolUse):
            if not (x.id == y.id and x.name == y.name and x.input in (y.input, {})):
                return False
        elif x != y:
            return False
    return True


#: LangChain's summary message: this prefix, then the summarizer's text (or its fixed sentence when
#: nothing could be summarized within its token budget).
LANGCHAIN_SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
LANGCHAIN_NOTHING_SUMMARIZED = "Previous conversation was too long to summarize."
#: The user half of the OpenAI cookbook's SummarizingSession pair.
OPENAI_SUMMARY_REQUEST = "Summarize the conversation we had so far."


def is_new_summary(m: Message) -> bool:
    """R9/R6: a summary, text only and not pinned: the fake's reply (it starts with "SUMMARY") as a user
    message, also under LangChain's prefix or as its fixed sentence, or the SummarizingSession pair (the
    request as a user message, the fake's reply as an assistant one)."""
    if m.kind != "summary" or m.pinned or not m.blocks or not all(isinstance(b, Text) for b in m.blocks):
        return False
    text = m.text
    if m.role == "assistant":
        return text.startswith("SUMMARY")
    if m.role != "user":
        return False
    if text.startswith(LANGCHAIN_SUMMARY_PREFIX):
        rest = text[len(LANGCHAIN_SUMMARY_PREFIX):]
        return rest.startswith("SUMMARY") or rest == LANGCHAIN_NOTHING_SUMMARIZED
    return text.startswith("SUMMARY") or text == OPENAI_SUMMARY_REQUEST


def is_subsequence(a: Sequence[Message], b: Sequence[Message], rewrites: tuple[Rewrite, ...]) -> bool:
    """Whether a matches a subsequence of b, message by message up to an allowed rewrite (greedy
    earliest matching is exact for any per-pair relation)."""
    j = 0
    for x in a:
        while j < len(b) and not (norm(x) == norm(b[j]) or is_rewrite(x, b[j], rewrites)):
            j += 1
        if j == len(b):
            return False
        j += 1
    return True
