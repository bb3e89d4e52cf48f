"""The context a strategy sees: the visible window, its running totals, and the runtime's seams.

`Context.messages` is a list that keeps ``tokens``, raw-output tokens and per-fact counts up to
date on every mutation, so no turn ever re-sums the window. Strategies change it only by
``ctx.messages[:] = new`` or ``ctx.messages[i] = m`` (docs/strategies.md 1.1); the runtime appends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from typing import Any, SupportsIndex, overload

from mypy_extensions import mypyc_attr

from harness.core.messages import Message, from_converse

Summarizer = Callable[[list[Message]], Message]


class ContextOverflow(Exception):
    """The prompt does not fit the model's window; the runtime passes it to ``strategy.reduce``."""

    def __init__(self, tokens: int, window: int) -> None:
        super().__init__(f"context of {tokens} tokens exceeds the window of {window} tokens")
        self.tokens = tokens
        self.window = window


# Compiled (setup.py), a subclass of a built-in type is an ordinary Python class.
@mypyc_attr(native_class=False)
class NoSummarizer(RuntimeError):
    """`Context.summarize` was called on a context built without a summarizer."""


def _discount(counts: Counter[str], keys: frozenset[str]) -> None:
    """One fewer of each of ``keys``; a key at none leaves ``counts`` (its keys are what is present)."""
    for key in keys:
        left = counts[key] - 1
        if left:
            counts[key] = left
        else:
            del counts[key]


@mypyc_attr(native_class=False)
class Window(list[Message]):
    """A list of messages with running totals (tokens, raw tokens, fact, record and decoy counts).

    Every mutating list method is routed through `_added` / `_removed`, so the totals are exact after
    any mutation, at O(changed messages) cost.
    """

    __slots__ = ("_touched", "decoy_counts", "fact_counts", "raw_tokens", "record_counts", "step_kinds", "tokens")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        super().__init__()
        self.tokens = 0
        self.raw_tokens = 0
        self.fact_counts: Counter[str] = Counter()
        #: Plan step -> messages whose text shows it done (`Message.records`), and decoy -> messages that
        #: state it: what the agent reads of its progress and of wrong values every turn, kept up to date
        #: here so that reading them costs what changed, not the whole window.
        self.record_counts: Counter[str] = Counter()
        self.decoy_counts: Counter[str] = Counter()
        #: (role, step_id, kind) -> messages of that step in the window: lets a reader that looks for
        #: a step's last result or action learn in O(1) that there is none, instead of scanning the
        #: whole window every turn (which made long sessions quadratic).
        self.step_kinds: Counter[tuple[str, str, str]] = Counter()
        self._touched: int | None = None
        self.extend(messages)

    def holds(self, role: str, step_id: str, kinds: Iterable[str]) -> bool:
        """Whether a message of ``role`` and ``step_id`` with one of ``kinds`` is in the window."""
        counts = self.step_kinds
        return any((role, step_id, kind) in counts for kind in kinds)

    def _touch(self, index: int) -> None:
        if self._touched is None or index < self._touched:
            self._touched = index

    def take_touched(self) -> int | None:
        """The lowest index changed other than by appending since the last call, then reset.
        Everything before it is the same objects as then (what prompt caching needs)."""
        touched, self._touched = self._touched, None
        return touched

    def _added(self, m: Message) -> None:
        if not isinstance(m, Message):
            raise TypeError(f"a window holds Message values, not {type(m).__name__}")
        self.tokens += m.tokens
        self.raw_tokens += m.raw_tokens
        for key in m.facts:
            self.fact_counts[key] += 1
        for step in m.records:
            self.record_counts[step] += 1
        for decoy in m.decoys:
            self.decoy_counts[decoy] += 1
        if m.step_id is not None:
            self.step_kinds[(m.role, m.step_id, m.kind)] += 1

    def _removed(self, m: Message) -> None:
        self.tokens -= m.tokens
        self.raw_tokens -= m.raw_tokens
        _discount(self.fact_counts, m.facts)
        _discount(self.record_counts, m.records)
        _discount(self.decoy_counts, m.decoys)
        if m.step_id is not None:
            step = (m.role, m.step_id, m.kind)
            left = self.step_kinds[step] - 1
            if left:
                self.step_kinds[step] = left
            else:
                del self.step_kinds[step]

    def append(self, m: Message) -> None:
        self._added(m)
        super().append(m)

    def extend(self, ms: Iterable[Message]) -> None:
        for m in ms:
            self.append(m)

    def insert(self, index: SupportsIndex, m: Message) -> None:
        self._added(m)
        i = index.__index__()
        at = max(0, len(self) + i) if i < 0 else min(i, len(self))
        super().insert(index, m)
        self._touch(at)

    def pop(self, index: SupportsIndex = -1) -> Message:
        at = range(len(self))[index]
        m = super().pop(index)
        self._removed(m)
        self._touch(at)
        return m

    def remove(self, m: Message) -> None:
        at = self.index(m)
        super().remove(m)
        self._removed(m)
        self._touch(at)

    def clear(self) -> None:
        self._touch(0)
        super().clear()
        self.tokens = 0
        self.raw_tokens = 0
        self.fact_counts.clear()
        self.record_counts.clear()
        self.decoy_counts.clear()
        self.step_kinds.clear()

    @overload
    def __setitem__(self, index: SupportsIndex, value: Message) -> None: ...
    @overload
    def __setitem__(self, index: slice, value: Iterable[Message]) -> None: ...
    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            new = list(value)
            if not all(map(isinstance, new, repeat(Message))):
                bad = next(m for m in new if not isinstance(m, Message))
                raise TypeError(f"a window holds Message values, not {type(bad).__name__}")
            old = super().__getitem__(index)
            start, _stop, step = index.indices(len(self))
            super().__setitem__(index, new)
            # A strategy rewrites the window as a whole (``ctx.messages[:] = new``) but mostly keeps its
            # messages: only those between the common head and tail (the same objects) change the totals.
            same_head = same_tail = 0
            if step == 1:
                shortest = min(len(old), len(new))
                while same_head < shortest and old[same_head] is new[same_head]:
                    same_head += 1
                while same_tail < shortest - same_head and old[-1 - same_tail] is new[-1 - same_tail]:
                    same_tail += 1
            for m in old[same_head:len(old) - same_tail]:
                self._removed(m)
            for m in new[same_head:len(new) - same_tail]:
                self._added(m)
            self._touch(start + same_head)
        else:
            if not isinstance(value, Message):
                raise TypeError(f"a window holds Message values, not {type(value).__name__}")
            old_one = super().__getitem__(index)
            at = range(len(self))[index]
            super().__setitem__(index, value)
            self._removed(old_one)
            self._added(value)
            self._touch(at)

    def __delitem__(self, index: SupportsIndex | slice) -> None:
        if isinstance(index, slice):
            gone = super().__getitem__(index)
            start = index.indices(len(self))[0]
            super().__delitem__(index)
            for m in gone:
                self._removed(m)
            self._touch(start)
        else:
            one = super().__getitem__(index)
            at = range(len(self))[index]
            super().__delitem__(index)
            self._removed(one)
            self._touch(at)

    def __iadd__(self, ms: Iterable[Message]) -> Window:  # type: ignore[override,misc]
        self.extend(ms)
        return self

    def __imul__(self, n: SupportsIndex) -> Window:
        raise TypeError("a window cannot be repeated in place")

    def sort(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a window keeps conversation order; it cannot be sorted")

    def reverse(self) -> None:
        raise TypeError("a window keeps conversation order; it cannot be reversed")


class PayloadStore:
    """Content-addressed payloads offloaded out of the window; putting a handle twice is a no-op."""

    __slots__ = ("_payloads",)

    def __init__(self) -> None:
        self._payloads: dict[str, str] = {}

    def put(self, handle: str, payload: str) -> None:
        self._payloads.setdefault(handle, payload)

    def get(self, handle: str) -> str:
        return self._payloads[handle]

    def __contains__(self, handle: object) -> bool:
        return handle in self._payloads

    def __len__(self) -> int:
        return len(self._payloads)


class Context:
    """The state one strategy instance manages for one agent.

    ``summarize`` is a seam: the runtime passes a callable that makes one model call and returns the
    model's reply (an assistant message with Text blocks); tests pass a deterministic fake.
    """

    __slots__ = ("_messages", "_summarizer", "prompt_overhead", "removed_count", "store", "window_tokens")

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        window_tokens: int = 200_000,
        summarizer: Summarizer | None = None,
        store: PayloadStore | None = None,
        prompt_overhead: int = 0,
    ) -> None:
        if window_tokens < 1:
            raise ValueError(f"window_tokens must be >= 1, got {window_tokens}")
        if prompt_overhead < 0:
            raise ValueError(f"prompt_overhead must be >= 0, got {prompt_overhead}")
        self._messages = Window(messages)
        self.window_tokens = window_tokens
        #: Tokens every call sends besides the window's messages (system prompt, tool schemas): what a
        #: trigger on "the prompt's input tokens" must count (docs/sdk-strategies.md 2). Set by the runtime.
        self.prompt_overhead = prompt_overhead
        self.removed_count = 0
        self._summarizer = summarizer
        self.store = store if store is not None else PayloadStore()

    @classmethod
    def from_messages(
        cls,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        summarizer: Summarizer | None = None,
        window_tokens: int = 200_000,
    ) -> Context:
        """A context over `Message`s or Converse dicts (read with `from_converse`)."""
        return cls(
            (m if isinstance(m, Message) else from_converse(m) for m in messages),
            window_tokens=window_tokens,
            summarizer=summarizer,
        )

    @property
    def messages(self) -> Window:
        return self._messages

    @messages.setter
    def messages(self, value: Window) -> None:
        # ``ctx.messages += ms`` extends the window in place and then assigns it back; that is the
        # only assignment allowed. Replacing the window object would lose its running totals.
        if value is not self._messages:
            raise AttributeError("replace the window's contents with ctx.messages[:] = new")

    @property
    def tokens(self) -> int:
        return self._messages.tokens

    @property
    def prompt_tokens(self) -> int:
        """The whole input of the next call: `prompt_overhead` plus the window's tokens."""
        return self.prompt_overhead + self._messages.tokens

    def utilization(self) -> float:
        return self._messages.tokens / self.window_tokens

    def summarize(self, messages: list[Message]) -> Message:
        """One model call that summarizes ``messages``; returns the reply. May raise."""
        if self._summarizer is None:
            raise NoSummarizer("this context has no summarizer")
        return self._summarizer(list(messages))
