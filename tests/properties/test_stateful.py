"""Long interleavings of the runtime's hooks (docs/strategies.md 1.2), one state machine per strategy.

Each machine appends new turns through ``on_append`` as the runtime does, and calls ``apply``,
``before_call`` and ``reduce`` in any order; after every step it checks G1 (W(window)), G5
(token total, removed_count as the running sum of non-summary drops, never decreasing) and G2
(flagged messages survive, in order).
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, nonsummary, tokens_of
from strategies import CannotReduce, ContextStrategy, create, names
from strategies.testing import (
    FAKE_MODES,
    OPTIONAL_NAMES,
    WINDOW_FACTORS,
    FakeSummarizer,
    Ids,
    configs,
    histories,
    new_messages,
    norm,
    well_formed,
)


class StrategySession(RuleBasedStateMachine):
    """One strategy instance driven through many hooks on one context."""

    strategy_names: tuple[str, ...] = ()

    def __init__(self) -> None:
        super().__init__()
        self.strategy: ContextStrategy
        self.ctx: Context
        self.ids = Ids("s")
        self.expected_removed = 0
        self.last_removed = 0
        self.flagged: list[tuple[object, ...]] = []

    def _hook(self, run: Callable[[], None], added: int = 0) -> None:
        """Run one hook; track the non-summary messages that left the window (R5) and check that
        every flagged message survives unchanged, in order (G2). ``added`` counts the appended
        non-summary messages."""
        before = nonsummary(self.ctx.messages) + added
        flagged = [norm(m) for m in self.ctx.messages if m.pinned]
        run()
        self.expected_removed += before - nonsummary(self.ctx.messages)
        it = iter(self.ctx.messages)
        assert all(any(norm(m) == f and m.pinned for m in it) for f in flagged), "G2: a pinned message left"

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        name, params = data.draw(configs(self.strategy_names or None), label="config")
        window = data.draw(histories(max_turns=4), label="window")
        mode = data.draw(FAKE_MODES, label="mode")
        factor = data.draw(WINDOW_FACTORS, label="window_factor")
        self.strategy = create(name, **params)
        self.ctx = Context(
            window,
            window_tokens=max(1, int(tokens_of(window) * factor)),
            summarizer=FakeSummarizer(mode=mode),  # type: ignore[arg-type]
        )

    @rule(data=st.data())
    def append_turn(self, data: st.DataObject) -> None:
        new: list[Message] = data.draw(new_messages(list(self.ctx.messages), self.ids), label="appended")

        def run() -> None:
            for m in new:
                self.ctx.messages.append(self.strategy.on_append(self.ctx, m))

        self._hook(run, added=nonsummary(new))

    @rule()
    def apply(self) -> None:
        self._hook(lambda: self.strategy.apply(self.ctx))

    @rule()
    def before_call(self) -> None:
        self._hook(lambda: self.strategy.before_call(self.ctx))

    @rule(reactive=st.booleans())
    def reduce(self, reactive: bool) -> None:
        tokens = self.ctx.tokens
        overflow = ContextOverflow(tokens, self.ctx.window_tokens) if reactive else None

        def run() -> None:
            try:
                self.strategy.reduce(self.ctx, overflow)
            except CannotReduce:
                assert self.ctx.tokens == tokens, "R2: a failed reduce leaves the window"
                return
            assert self.ctx.tokens < tokens, "R2: a successful reduce lowers tokens"

        self._hook(run)

    @invariant()
    def window_is_well_formed(self) -> None:
        """G1: the window stays well-formed."""
        assert well_formed(self.ctx.messages)

    @invariant()
    def tokens_are_the_sum_of_message_tokens(self) -> None:
        """G5: ctx.tokens == tok(ctx.messages)."""
        assert self.ctx.tokens == tokens_of(self.ctx.messages)

    @invariant()
    def removed_count_is_the_running_sum_of_drops(self) -> None:
        """G5/R5: removed_count never decreases and equals the non-summary messages that left."""
        assert self.ctx.removed_count >= self.last_removed
        assert self.ctx.removed_count == self.expected_removed
        self.last_removed = self.ctx.removed_count


def machine(name: str) -> type[StrategySession]:
    class Session(StrategySession):
        strategy_names = (name,)

    Session.__name__ = Session.__qualname__ = f"Session_{name}"
    return Session


STEPS = settings(stateful_step_count=40)
# strands_manager drives strands' own managers through the bridge: forty steps per example cost about a
# hundred seconds, so its hooks are checked per hook in test_invariants and in test_strands_bridge instead.
for _name in (n for n in names() if n not in OPTIONAL_NAMES):
    _machine = machine(_name)
    globals()[f"Test{''.join(p.title() for p in _name.split('_'))}Session"] = STEPS(_machine).TestCase
