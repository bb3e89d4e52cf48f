"""The property-test kit for context strategies: generators, a fake summarizer, and one invariant check.

Check your own context manager (any class with ``on_append``, ``apply``, ``before_call`` and
``reduce(ctx, overflow)``; it need not subclass `strategies.ContextStrategy`) against the invariants
G1-G8 of docs/strategies.md 4::

    from hypothesis import given
    from strategies.testing import check_invariants, histories

    @given(histories())
    def test_my_manager_keeps_the_invariants(history):
        check_invariants(MyManager, history)

A failure raises `InvariantViolation` naming the invariant ("G1 tool pairs: ...") with the window
before and after the hook, and hypothesis shrinks the history to a small one. The pieces:

- `histories`, `new_messages`, `tool_turn`, `malformed_lists`, ...: hypothesis strategies for windows
  (`strategies.testing.histories`); `params_for` and `configs` for the built-in strategies' params;
- `check_invariants`, `InvariantViolation`, `StrategyLike`, `Rewrite` (`strategies.testing.invariants`);
- `FakeSummarizer`: the deterministic summarizer (`strategies.testing.fakes`);
- `well_formed`, `brief`, ...: predicates on windows and their compact rendering;
- `cases`, `run_hook`, `check_case`: generated cases over the built-in strategies;
- `from_strands(manager)`: a strands ``ConversationManager`` as a checkable strategy.

Importing this package needs hypothesis; importing `strategies` alone does not.
"""

from strategies.testing.cases import FAKE_MODES, WINDOW_FACTORS, Case, Run, cases, check_case, run_hook, setup
from strategies.testing.fakes import SUMMARIZER_MODES, FakeSummarizer, SummarizerFailed, SummarizerMode
from strategies.testing.histories import (
    FINALS,
    FOLLOWUPS,
    OLD_SUMMARY,
    SIZES,
    TASKS,
    THOUGHTS,
    TOOL_INPUTS,
    TOOL_NAMES,
    Ids,
    assistant_call,
    content,
    histories,
    malformed_lists,
    new_messages,
    next_turn,
    open_uses,
    pins,
    results_for,
    summary_message,
    task_message,
    tool_turn,
)
from strategies.testing.invariants import (
    HOOKS,
    Hook,
    HookRun,
    InvariantViolation,
    StrategyLike,
    Summarizer,
    call_hook,
    check_invariants,
)
from strategies.testing.params import (
    OPTIONAL_NAMES,
    PIN_FIRST,
    RATIOS,
    THRESHOLDS,
    adk_params,
    clear_tool_uses_params,
    configs,
    declared_params,
    generated_names,
    langchain_clear_tool_uses_params,
    params_for,
)
from strategies.testing.rewrites import (
    DEFAULT_REWRITES,
    Rewrite,
    is_new_summary,
    is_rewrite,
    is_subsequence,
    rewrites_of,
)
from strategies.testing.strands import from_strands
from strategies.testing.windows import (
    History,
    Shown,
    brief,
    ids_unique,
    norm,
    norms,
    protected,
    protected_indices,
    tool_ids,
    violations,
    well_formed,
)

__all__ = [
    "DEFAULT_REWRITES",
    "FAKE_MODES",
    "FINALS",
    "FOLLOWUPS",
    "HOOKS",
    "OLD_SUMMARY",
    "OPTIONAL_NAMES",
    "PIN_FIRST",
    "RATIOS",
    "SIZES",
    "SUMMARIZER_MODES",
    "TASKS",
    "THOUGHTS",
    "THRESHOLDS",
    "TOOL_INPUTS",
    "TOOL_NAMES",
    "WINDOW_FACTORS",
    "Case",
    "FakeSummarizer",
    "History",
    "Hook",
    "HookRun",
    "Ids",
    "InvariantViolation",
    "Rewrite",
    "Run",
    "Shown",
    "StrategyLike",
    "Summarizer",
    "SummarizerFailed",
    "SummarizerMode",
    "adk_params",
    "assistant_call",
    "brief",
    "call_hook",
    "cases",
    "check_case",
    "check_invariants",
    "clear_tool_uses_params",
    "configs",
    "content",
    "declared_params",
    "from_strands",
    "generated_names",
    "histories",
    "ids_unique",
    "is_new_summary",
    "is_rewrite",
    "is_subsequence",
    "langchain_clear_tool_uses_params",
    "malformed_lists",
    "new_messages",
    "next_turn",
    "norm",
    "norms",
    "open_uses",
    "params_for",
    "pins",
    "protected",
    "protected_indices",
    "results_for",
    "rewrites_of",
    "run_hook",
    "setup",
    "summary_message",
    "task_message",
    "tool_ids",
    "tool_turn",
    "violations",
    "well_formed",
]
