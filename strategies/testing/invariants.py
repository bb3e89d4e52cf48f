"""One call that checks the invariants G1-G8 of docs/strategies.md 4 for any context strategy.

`check_invariants(strategy, history)` runs every hook of a strategy (``on_append``, ``apply``,
``before_call``, ``reduce`` and a reactive ``reduce``) on a fresh instance and a fresh `Context` over
``history``, and raises `InvariantViolation` (an AssertionError, so pytest and hypothesis treat it as
a failed test) naming the first invariant broken and showing the window before and after the hook,
one message per item (see `strategies.testing.windows.brief`). It checks:

- **G1 tool pairs**: a well-formed window stays well-formed (no orphan result, no unanswered call);
- **G2 pins**: every pinned message survives unchanged and in order; a pinned prefix stays the prefix;
- **G3 shape**: the window after, summaries aside and rewrites undone, is a subsequence of the one before;
- **G4 no new content**: every message is an old one, a new summary, or an allowed rewrite of an old one;
- **G5 bookkeeping**: ``ctx.tokens`` is the sum of the messages' tokens and ``removed_count`` grew by
  the non-summary messages that left;
- **G6 reduce**: ``reduce`` lowers the tokens or raises `CannotReduce` leaving the window as it was (a
  reactive one chained to a cause), and repeated reduces reach CannotReduce within ``tok(B)`` calls;
- **G7 never raises**: ``on_append``, ``apply`` and ``before_call`` raise nothing, even when the
  summarizer fails (a runtime turn is replayed with a failing summarizer as well);
- **G8 determinism**: the same input gives the same output, ``apply`` twice equals ``apply`` once, and
  the hooks named in ``idle`` (nothing to do on this history) change nothing.

The strategy may be any object with the four hooks (`StrategyLike`): it need not subclass
`strategies.ContextStrategy`. Pass a class or a zero-argument factory (each run gets a new instance),
or an instance (each run gets a deep copy of it). `reduce` signals "nothing left to drop" by raising
`strategies.CannotReduce`.

**Allowed rewrites.** A strategy may drop messages, add summaries (user or assistant messages of
``kind="summary"`` with Text only) and rewrite the content of tool results it keeps. Every strategy
may use the truncation form (§3.3) and the masking placeholder (§3.6); a strategy that declares
nothing may also leave the offload stub of §3.7 with its default preview (`DEFAULT_REWRITES`). A
strategy that writes anything else into a tool result declares it with ``rewrites=``, e.g.
``rewrites=[Rewrite.placeholder("[cleared]")]`` or ``rewrites=[Rewrite.stub(preview_chars=100)]``.
The built-in strategies' declarations are found from their registered name and params.

Use it under hypothesis::

    @given(histories())
    def test_my_manager_keeps_the_invariants(history):
        check_invariants(MyManager, history)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, nonsummary, tokens_of
from strategies.base import CannotReduce, ContextStrategy
from strategies.testing import rewrites as allowed
from strategies.testing.fakes import FakeSummarizer
from strategies.testing.histories import next_turn
from strategies.testing.params import HAND_WRITTEN_NAMES
from strategies.testing.rewrites import DEFAULT_REWRITES, Rewrite
from strategies.testing.windows import brief, norm, norms, violations, well_formed

#: A hook as the runtime calls it; ``reduce_reactive`` passes a `ContextOverflow`.
Hook = Literal["append", "apply", "before_call", "reduce", "reduce_reactive"]
HOOKS: tuple[Hook, ...] = ("append", "apply", "before_call", "reduce", "reduce_reactive")
#: A summarizer: one model call that turns messages into a reply (an assistant message with Text).
Summarizer = Callable[[list[Message]], Message]


@runtime_checkable
class StrategyLike(Protocol):
    """The hooks the runtime calls (docs/strategies.md 1.2). Any object with them can be checked."""

    def on_append(self, ctx: Context, msg: Message) -> Message:
        """Return the message to append in place of ``msg``. Never raises."""
        ...

    def apply(self, ctx: Context) -> None:
        """Per-turn management after each turn. Never raises."""
        ...

    def before_call(self, ctx: Context) -> None:
        """Before each model call. Never raises."""
        ...

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        """Lower ``ctx.tokens`` strictly, or raise CannotReduce leaving ctx unchanged."""
        ...


class InvariantViolation(AssertionError):
    """A strategy broke an invariant. ``str(e)`` starts with the invariant (``"G1 tool pairs: ..."``)
    and shows the hook and the window before and after it."""

    def __init__(self, invariant: str, detail: str, hook: str, before: Sequence[Message],
                 after: Sequence[Message]) -> None:
        self.invariant = invariant
        self.hook = hook
        super().__init__(
            f"{invariant}: {detail}\n  hook:   {hook}\n  before: {brief(before)}\n  after:  {brief(after)}"
        )


@dataclass(frozen=True, slots=True)
class HookRun:
    """The window before (B) and after (A) one hook, and what the hook left behind."""

    hook: str
    strategy: StrategyLike
    ctx: Context
    summarizer: Summarizer
    before: list[Message]
    after: list[Message]
    delta_removed: int
    error: CannotReduce | None


def call_hook(strategy: StrategyLike, ctx: Context, hook: str, appended: Sequence[Message] = ()) -> None:
    """Run one hook the way the runtime does (``append`` appends ``appended`` one by one through
    ``on_append``); reduce's CannotReduce propagates."""
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
        raise ValueError(f"unknown hook {hook!r}; the hooks are {', '.join(HOOKS)}")


def as_factory(strategy: StrategyLike | Callable[[], StrategyLike]) -> Callable[[], StrategyLike]:
    """A zero-argument function giving a fresh strategy: a class or factory as is, an instance by deep
    copy (so that state one run leaves, like a pin-once flag, never leaks into the next)."""
    if isinstance(strategy, type):
        return strategy
    if isinstance(strategy, StrategyLike):
        template = strategy
        return lambda: copy.deepcopy(template)
    if callable(strategy):
        return strategy
    raise TypeError(f"expected a strategy, its class or a factory, not {type(strategy).__name__}")


def declared_rewrites(strategy: StrategyLike) -> tuple[Rewrite, ...]:
    """The rewrites a built-in strategy may make (found from its name and params), else the defaults."""
    if isinstance(strategy, ContextStrategy) and strategy.name in HAND_WRITTEN_NAMES:
        return _ordered(allowed.rewrites_of(strategy.name, strategy.params.model_dump(mode="json")))
    return DEFAULT_REWRITES


def _ordered(rewrites: Iterable[Rewrite]) -> tuple[Rewrite, ...]:
    # A stable order keeps the allowed-content cache's keys the same for equal sets.
    return tuple(sorted(set(rewrites), key=lambda r: (r.kind, str(r.arg))))


def _fresh(summarizer: Summarizer) -> Summarizer:
    return summarizer.fresh() if isinstance(summarizer, FakeSummarizer) else summarizer


@dataclass(frozen=True, slots=True)
class _Setup:
    make: Callable[[], StrategyLike]
    history: list[Message]
    appended: list[Message]
    window_tokens: int
    summarizer: Summarizer

    def context(self, summarizer: Summarizer | None = None) -> tuple[StrategyLike, Context, Summarizer]:
        fake = _fresh(summarizer if summarizer is not None else self.summarizer)
        return self.make(), Context(self.history, window_tokens=self.window_tokens, summarizer=fake), fake

    def run(self, hook: str) -> HookRun:
        strategy, ctx, fake = self.context()
        before = self.history + (self.appended if hook == "append" else [])
        error: CannotReduce | None = None
        try:
            call_hook(strategy, ctx, hook, self.appended)
        except CannotReduce as e:
            if not hook.startswith("reduce"):
                raise InvariantViolation("G7 never raises", f"{hook} raised CannotReduce: {e}", hook,
                                         before, ctx.messages) from e
            error = e
        except Exception as e:
            law = "G6 reduce" if hook.startswith("reduce") else "G7 never raises"
            what = "instead of CannotReduce" if hook.startswith("reduce") else ""
            raise InvariantViolation(law, f"{hook} raised {type(e).__name__}: {e} {what}".rstrip(), hook, before,
                                     ctx.messages) from e
        return HookRun(hook, strategy, ctx, fake, before, list(ctx.messages), ctx.removed_count, error)


def check_invariants(
    strategy: StrategyLike | Callable[[], StrategyLike],
    history: Sequence[Message],
    *,
    appended: Sequence[Message] | None = None,
    window_tokens: int | None = None,
    summarizer: Summarizer | None = None,
    rewrites: Iterable[Rewrite] | None = None,
    hooks: Collection[Hook] = HOOKS,
    idle: Collection[Hook] = (),
    repeated_reduce: bool = True,
) -> None:
    """Check G1-G8 of docs/strategies.md 4 for every hook of ``strategy`` on ``history``.

    ``strategy``: a class, a zero-argument factory or an instance (deep-copied for each run) with the
    hooks of `StrategyLike`. ``history``: the window before the hook; G1 is checked only when it is
    well-formed. ``appended``: what the ``append`` hook appends (default: `next_turn` of the history).
    ``window_tokens``: the model window (default: the history's tokens, a full window).
    ``summarizer``: what `Context.summarize` calls (default: a `FakeSummarizer`; a `FakeSummarizer`
    is copied fresh for each run, any other summarizer must be deterministic and keep no state).
    With the default, a runtime turn is also replayed with a failing summarizer (G7). ``rewrites``:
    the content rewrites the strategy may make (module docstring; default: a built-in strategy's
    own, else `DEFAULT_REWRITES`). ``hooks``: the hooks to run. ``idle``: hooks with nothing to do on
    this history, which must change nothing (G8). ``repeated_reduce``: also reduce until
    CannotReduce (G6). Raises `InvariantViolation` for the first invariant broken.
    """
    make = as_factory(strategy)
    window = list(history)
    setup = _Setup(
        make=make,
        history=window,
        appended=list(appended) if appended is not None else next_turn(window),
        window_tokens=window_tokens if window_tokens is not None else max(1, tokens_of(window)),
        summarizer=summarizer if summarizer is not None else FakeSummarizer(),
    )
    allowed = _ordered(rewrites) if rewrites is not None else declared_rewrites(make())
    from_fake = isinstance(setup.summarizer, FakeSummarizer)
    for hook in hooks:
        run = setup.run(hook)
        check_window(run, allowed, from_fake=from_fake)
        if hook.startswith("reduce"):
            check_reduce(run)
        if hook in idle:
            check_idle(run)
        check_same(run, setup.run(hook))
        if hook == "apply":
            check_apply_again(run)
        if hook == "reduce" and repeated_reduce:
            check_reduce_terminates(run, tokens_of(run.before))
    check_turn(setup)
    if summarizer is None:
        check_turn(setup, FakeSummarizer(mode="fail"))


def check_window(run: HookRun, rewrites: tuple[Rewrite, ...], *, from_fake: bool = True) -> None:
    """G1-G5 on one hook's B and A."""
    b, a, hook = run.before, run.after, run.hook

    def fail(law: str, detail: str) -> None:
        raise InvariantViolation(law, detail, hook, b, a)

    if well_formed(b) and not well_formed(a):
        broken = sorted(violations(a))
        detail = ", ".join(f"{'orphan result' if rule == 'a' else 'unanswered call'} at {i}" for rule, i in broken)
        fail("G1 tool pairs", detail or "a tool id is used twice")
    flagged = [m for m in b if m.pinned]
    rest = iter(a)
    for m in flagged:
        if not any(norm(x) == norm(m) and x.pinned for x in rest):
            fail("G2 pins", f"the pinned message {b.index(m)} is gone, changed or out of order")
    p = next((i for i, m in enumerate(b) if not m.pinned), len(b))
    if norms(a[:p]) != norms(b[:p]):
        fail("G2 pins", f"the pinned prefix of {p} messages moved")
    if not allowed.is_subsequence([m for m in a if m.kind != "summary"], b, rewrites):
        fail("G3 shape", "the window after, summaries aside and rewrites undone, is no subsequence of the one before")
    old = norms(b)
    for i, m in enumerate(a):
        if norm(m) in old or allowed.is_new_summary(m, from_fake):
            continue
        if not any(allowed.is_rewrite(m, x, rewrites) for x in b):
            fail("G4 no new content", f"message {i} is neither an old message, a summary nor an allowed rewrite")
    if run.ctx.tokens != tokens_of(run.ctx.messages):
        fail("G5 bookkeeping", f"ctx.tokens is {run.ctx.tokens}, the messages hold {tokens_of(run.ctx.messages)}")
    left = nonsummary(b) - nonsummary(a)
    if run.delta_removed != left or left < 0:
        fail("G5 bookkeeping", f"removed_count grew by {run.delta_removed}, {left} non-summary messages left")


def check_reduce(run: HookRun) -> None:
    """G6 on one reduce: tokens drop, or CannotReduce with the window unchanged (pins aside), no
    change to removed_count, a reason, and (when reactive) a cause."""
    b, a, hook = run.before, run.after, run.hook
    if run.error is None:
        if tokens_of(a) >= tokens_of(b):
            raise InvariantViolation("G6 reduce", f"returned but tokens went {tokens_of(b)} -> {tokens_of(a)}",
                                     hook, b, a)
        return
    if norms(a) != norms(b) or run.delta_removed != 0 or run.ctx.tokens != tokens_of(b):
        raise InvariantViolation("G6 reduce", "raised CannotReduce but changed the window", hook, b, a)
    if not str(run.error):
        raise InvariantViolation("G6 reduce", "CannotReduce without a reason", hook, b, a)
    if hook == "reduce_reactive" and run.error.__cause__ is None:
        raise InvariantViolation("G6 reduce", "a reactive CannotReduce has no __cause__ (the error or the overflow)",
                                 hook, b, a)


def check_reduce_terminates(run: HookRun, budget: int) -> None:
    """G6: reducing again and again lowers the tokens each time, keeps the window well-formed and
    reaches CannotReduce within ``budget`` calls."""
    strategy, ctx = run.strategy, run.ctx
    for _ in range(budget + 1):
        before = list(ctx.messages)
        try:
            strategy.reduce(ctx)
        except CannotReduce:
            if ctx.tokens != tokens_of(before):
                raise InvariantViolation("G6 reduce", "a repeated reduce raised CannotReduce but changed the window",
                                         "reduce (repeated)", before, ctx.messages) from None
            return
        except Exception as e:
            raise InvariantViolation("G6 reduce", f"a repeated reduce raised {type(e).__name__}: {e}",
                                     "reduce (repeated)", before, ctx.messages) from e
        if ctx.tokens >= tokens_of(before):
            raise InvariantViolation("G6 reduce", "a repeated reduce returned without lowering the tokens",
                                     "reduce (repeated)", before, ctx.messages)
        if well_formed(run.before) and not well_formed(ctx.messages):
            raise InvariantViolation("G1 tool pairs", "a repeated reduce broke a tool pair", "reduce (repeated)",
                                     before, ctx.messages)
    raise InvariantViolation("G6 reduce", f"reduce succeeded more than tok(B) = {budget} times", "reduce (repeated)",
                             run.before, ctx.messages)


def check_idle(run: HookRun) -> None:
    """G8: a hook with nothing to do leaves messages, pins, tokens and removed_count as they were,
    and asks the summarizer nothing."""
    b, a = run.before, run.after
    calls = run.summarizer.calls if isinstance(run.summarizer, FakeSummarizer) else []
    if a != b or [m.pinned for m in a] != [m.pinned for m in b] or run.delta_removed != 0 or calls:
        raise InvariantViolation("G8 nothing to do", "a hook with nothing to do changed the window", run.hook, b, a)


def check_same(one: HookRun, two: HookRun) -> None:
    """G8/R8: two runs of the same hook on the same input give the same output."""
    same = (
        one.after == two.after
        and [m.pinned for m in one.after] == [m.pinned for m in two.after]
        and (one.delta_removed, one.ctx.tokens) == (two.delta_removed, two.ctx.tokens)
        and len(one.ctx.store) == len(two.ctx.store)
        and str(one.error) == str(two.error)
        and (one.error is None) == (two.error is None)
    )
    if same and isinstance(one.summarizer, FakeSummarizer) and isinstance(two.summarizer, FakeSummarizer):
        same = [norms(c) for c in one.summarizer.calls] == [norms(c) for c in two.summarizer.calls]
    if not same:
        raise InvariantViolation("G8 determinism", f"a second run gave {brief(two.after)}", one.hook, one.before,
                                 one.after)


def check_apply_again(run: HookRun) -> None:
    """G8: ``apply`` twice gives the same window, tokens and removed_count as ``apply`` once."""
    once = (list(run.ctx.messages), run.ctx.tokens, run.ctx.removed_count)
    try:
        run.strategy.apply(run.ctx)
    except Exception as e:
        raise InvariantViolation("G7 never raises", f"a second apply raised {type(e).__name__}: {e}", "apply",
                                 once[0], run.ctx.messages) from e
    if (list(run.ctx.messages), run.ctx.tokens, run.ctx.removed_count) != once:
        raise InvariantViolation("G8 idempotence", "a second apply changed the window", "apply", once[0],
                                 run.ctx.messages)


def check_turn(setup: _Setup, summarizer: Summarizer | None = None) -> None:
    """G7 (and G1, G5) over a runtime turn: before_call, the appends, apply, before_call."""
    strategy, ctx, _ = setup.context(summarizer)
    before = setup.history + setup.appended
    try:
        strategy.before_call(ctx)
        for m in setup.appended:
            ctx.messages.append(strategy.on_append(ctx, m))
        strategy.apply(ctx)
        strategy.before_call(ctx)
    except Exception as e:
        raise InvariantViolation("G7 never raises", f"a runtime turn raised {type(e).__name__}: {e}", "turn",
                                 before, ctx.messages) from e
    if well_formed(before) and not well_formed(ctx.messages):
        raise InvariantViolation("G1 tool pairs", "a runtime turn broke a tool pair", "turn", before, ctx.messages)
    if ctx.tokens != tokens_of(ctx.messages) or ctx.removed_count < 0:
        raise InvariantViolation("G5 bookkeeping", "a runtime turn left the token total or removed_count wrong", "turn",
                                 before, ctx.messages)
