"""G1-G8 of docs/strategies.md 4 for every registered strategy: each example runs every hook of one
strategy, with generated params, window, fake and window size, through the property-test kit's
`check_case` (`strategies.testing.check_invariants`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.messages import ToolResult, tokens_of
from strategies import names
from strategies.drop_all import kept
from strategies.observation_masking import PLACEHOLDER_RE
from strategies.split import assistant_indices, is_pinned
from strategies.summarize import turns_since_summary
from strategies.testing import Case, Hook, cases, check_case, generated_names
from tests.oracles import BUILTIN_STRATEGIES


def test_every_registered_strategy_has_a_generator() -> None:
    """1.3: names() lists the built-in strategies, and the kit generates params for each."""
    assert names() == BUILTIN_STRATEGIES
    assert list(generated_names()) == BUILTIN_STRATEGIES


def nothing_to_do(case: Case, hook: str) -> bool:
    """G8's "nothing to do" cases, per strategy."""
    name, p, window = case.name, case.params, case.window
    if name == "unbounded":
        return hook != "reduce"
    if name in ("sliding_window", "truncate_then_slide"):
        return hook == "apply" and len(window) <= p["window_size"]
    if name == "summarize":
        trig = p["trigger_turns"]
        return hook == "apply" and (trig is None or turns_since_summary(window) < trig + p["keep_turns"])
    if name == "condense":
        limit = p["max_tokens"] or 10**12
        window_tokens = max(1, int(tokens_of(window) * case.window_factor))
        return (
            hook == "before_call"
            and len(window) <= p["max_size"]
            and tokens_of(window) <= min(limit, window_tokens)
        )
    if name == "observation_masking":
        turns = assistant_indices(window)
        m_keep = p["keep_turns"]
        if hook != "apply":
            return False
        if len(turns) <= m_keep:
            return True
        cut = turns[-m_keep] if m_keep else len(window)
        return not any(
            window[j].role == "user"
            and window[j].has_result
            and window[j].kind != "task"
            and not is_pinned(window, j)
            and any(isinstance(b, ToolResult) and not PLACEHOLDER_RE.match(b.content) for b in window[j].blocks)
            for j in range(cut)
        )
    if name == "offload_contracts":
        limit = p["offload_threshold_bytes"]
        return hook == "append" and all(
            len(b.content.encode()) <= limit for m in case.appended for b in m.blocks if isinstance(b, ToolResult)
        )
    if name == "drop_all":
        return hook == "apply" and len(kept(window)) == len(window)
    if name in ("adk_compaction", "claude_code_compact", "clear_tool_uses", "langchain_clear_tool_uses"):
        if hook in ("apply", "append"):  # they act before a call (and on overflow) only
            return True
        if name == "claude_code_compact":  # below its threshold (setup() sends no prompt overhead)
            return hook == "before_call" and (case.window_tokens - p["summary_reserve_tokens"]
                                              - p["buffer_tokens"] > tokens_of(window))
        return False
    if name == "strands_context_offloader":
        return hook in ("apply", "before_call")  # it offloads as results arrive; before_call only ages references
    if name in ("openai_trimming", "openai_summarizing", "langchain_summarization"):
        return hook in ("apply", "append")  # they act before a call only
    return False


def idle_hooks(case: Case) -> list[Hook]:
    """The runtime hooks with nothing to do on the case (G8: they must change nothing)."""
    runtime: tuple[Hook, ...] = ("append", "apply", "before_call")
    return [hook for hook in runtime if nothing_to_do(case, hook)]


@pytest.mark.parametrize("name", BUILTIN_STRATEGIES)
@given(data=st.data())
def test_every_hook_keeps_the_invariants(name: str, data: st.DataObject) -> None:
    """G1-G8 for every hook (append, apply, before_call, reduce, reactive reduce): well-formed
    windows stay well-formed, pins survive, A is a subsequence of B up to summaries and allowed
    rewrites, bookkeeping holds, reduce lowers tokens or fails cleanly and terminates, the runtime
    hooks never raise whatever the summarizer does, and the hooks are deterministic and idempotent."""
    if name == "strands_manager":
        pytest.importorskip("strands")
    case = data.draw(cases(only=[name]), label="case")
    check_case(case, idle=idle_hooks(case))
