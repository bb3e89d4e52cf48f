"""The prompt cache (harness/sim/billing.py `PromptCache`): its running prefix sums give exactly what
comparing the whole previous prompt with the new one gives, under any sequence of window changes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.core.context import Window
from harness.core.messages import Message, Text, TextMeter
from harness.sim.billing import PromptCache
from harness.sim.profiles import profile

METER = TextMeter.for_facts({})
POOL = [Message.build("user" if i % 2 else "assistant", [Text(f"message {i} " + "word " * (40 * i))],
                      meter=METER) for i in range(12)]
PROFILE = profile("frontier").model_copy(update={"cache_min_tokens": 300, "cache_granularity": 16})
SYSTEM = 200


def reference(previous: list[Message], window: list[Message], last_use: float | None, now: float) -> tuple[int, int]:
    """docs/model.md 6.2 computed directly: the longest equal prefix of the whole previous prompt."""
    same = 0
    while same < min(len(previous), len(window)) and window[same] == previous[same]:
        same += 1
    prompt = SYSTEM + sum(m.tokens for m in window)
    if prompt < (PROFILE.cache_min_tokens or 0):
        return 0, 0
    prefix = SYSTEM + sum(m.tokens for m in window[:same])
    cached = 0
    if last_use is not None and now - last_use <= PROFILE.cache_ttl_s and prefix >= (PROFILE.cache_min_tokens or 0):
        cached = prefix - prefix % PROFILE.cache_granularity
    return cached, prompt - cached


change = st.one_of(
    st.tuples(st.just("append"), st.integers(0, len(POOL) - 1)),
    st.tuples(st.just("drop_front"), st.integers(1, 3)),
    st.tuples(st.just("replace"), st.integers(0, 20), st.integers(0, len(POOL) - 1)),
    st.tuples(st.just("rebuild_equal"), st.integers(0, 20)),  # an equal message, not the same object
    st.tuples(st.just("clear"),),
    st.tuples(st.just("rewrite_without"), st.integers(0, 20)),  # ctx.messages[:] = all but one, as strategies do
    st.tuples(st.just("rewrite_same"),),
    st.tuples(st.just("wait"), st.floats(0, 900)),
)


@given(st.lists(st.lists(change, max_size=4), max_size=25))
def test_running_sums_match_comparing_the_whole_prompt(turns: list[list[tuple]]) -> None:
    cache = PromptCache(PROFILE, SYSTEM)
    window = Window()
    previous: list[Message] = []
    last_use: float | None = None
    now = 0.0
    for changes in turns:
        for op, *args in changes:
            if op == "append":
                window.append(POOL[args[0]])
            elif op == "drop_front":
                del window[: args[0]]
            elif op == "replace" and window:
                window[args[0] % len(window)] = POOL[args[1]]
            elif op == "rebuild_equal" and window:
                i = args[0] % len(window)
                m = window[i]
                window[i] = Message.build(m.role, m.blocks, kind=m.kind, meter=METER)
            elif op == "clear":
                window.clear()
            elif op == "rewrite_without" and window:
                i = args[0] % len(window)
                window[:] = [*window[:i], *window[i + 1:]]
            elif op == "rewrite_same":
                window[:] = list(window)
            elif op == "wait":
                now += args[0]
        now += 1.0
        expected = reference(previous, list(window), last_use, now)
        assert cache.account(window, window.take_touched(), now) == expected
        if SYSTEM + window.tokens >= (PROFILE.cache_min_tokens or 0):
            last_use = now
        previous = list(window)
