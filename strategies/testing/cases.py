"""Generated test cases for the built-in strategies: a config, a window, a fake and a window size.

`cases()` draws a `Case`: a registered strategy with valid params (`params_for`), a well-formed
history, what the runtime appends next, a `FakeSummarizer` mode and the model window as a share of
the history's tokens. `run_hook` runs one hook on a case; `check_case` runs `check_invariants` on it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from harness.core.context import Context
from harness.core.messages import Message, tokens_of
from strategies import CannotReduce, ContextStrategy, create
from strategies.testing.fakes import FakeSummarizer, SummarizerMode
from strategies.testing.histories import histories, new_messages
from strategies.testing.invariants import Hook, call_hook, check_invariants
from strategies.testing.params import configs
from strategies.testing.rewrites import rewrites_of
from strategies.testing.windows import brief

#: Summarizer modes a case draws: two in five succeed.
FAKE_MODES: st.SearchStrategy[SummarizerMode] = st.sampled_from(("ok", "ok", "fail", "empty", "huge"))
#: window_tokens as a share of the window's tokens: utilization from 0.33 to 4.
WINDOW_FACTORS = st.sampled_from((0.25, 0.5, 0.9, 1.0, 1.4, 3.0))


@dataclass
class Case:
    """One generated setup: a strategy config, a well-formed window, a fake mode and a window size."""

    name: str
    params: dict[str, Any]
    window: list[Message]
    mode: SummarizerMode
    window_factor: float
    appended: list[Message] = field(default_factory=list)

    @property
    def window_tokens(self) -> int:
        """The model window the case's context gets."""
        return max(1, int(tokens_of(self.window) * self.window_factor))

    def __repr__(self) -> str:
        return (
            f"Case(name={self.name!r}, params={self.params!r}, mode={self.mode!r}, "
            f"window_factor={self.window_factor}, window={brief(self.window)}, appended={brief(self.appended)})"
        )


@st.composite
def cases(draw: st.DrawFn, only: Sequence[str] | None = None, max_turns: int = 8, pinned: bool = True) -> Case:
    """A `Case` over every built-in strategy, or over ``only``."""
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
    """A fresh strategy and context for ``case``, and the fake its context summarizes with."""
    fake = fake or FakeSummarizer(mode=case.mode)
    ctx = Context(case.window, window_tokens=case.window_tokens, summarizer=fake)
    return create(case.name, **case.params), ctx, fake


def run_hook(case: Case, hook: str, fake: FakeSummarizer | None = None) -> Run:
    """Run one hook on a fresh setup of ``case``; a reduce's CannotReduce is kept in ``error``."""
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


def check_case(case: Case, *, hooks: Collection[Hook] | None = None, idle: Collection[Hook] = (),
               repeated_reduce: bool = True) -> None:
    """`check_invariants` for the case's strategy, window, appended messages, fake and window size,
    with the strategy's own allowed rewrites."""
    kwargs: dict[str, Any] = {} if hooks is None else {"hooks": hooks}
    check_invariants(
        lambda: create(case.name, **case.params),
        case.window,
        appended=case.appended,
        window_tokens=case.window_tokens,
        summarizer=FakeSummarizer(mode=case.mode),
        rewrites=rewrites_of(case.name, case.params),
        idle=idle,
        repeated_reduce=repeated_reduce,
        **kwargs,
    )
