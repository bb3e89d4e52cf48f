"""Hypothesis strategies that build agent conversations (docs/strategies.md 4, "Generators").

`histories()` draws well-formed windows W(L): a task message, turns of an assistant message
(optional Text, 1-3 ToolUse with unique ids) followed by a user message with the matching results
(success or error; 5, 401-446, 1200 or 5000 characters), sometimes a final answer and a follow-up,
sometimes an earlier summary, random pins. `new_messages(window)` draws what the runtime appends
next, and `malformed_lists()` draws the hostile lists the split helpers must survive (orphan results,
unanswered calls anywhere, calls in user messages). Texts come from a small pool so the tokenizer's
cache hits and a failing example stays short.

Use them with hypothesis' ``@given``::

    @given(histories(max_turns=5))
    def test_something(history): ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from harness.core.messages import Message, ResultStatus, Text, ToolResult, ToolUse
from strategies.testing.windows import History

# Text pool -----------------------------------------------------------------------------------------

#: The task message's texts (the first message of every history, ``kind="task"``).
TASKS = (
    "Task: fix the failing test in module alpha.\nReport the root cause when done.",
    "Task: add a verbose flag to the command line.\nKeep the test suite green.",
)
#: The optional Text of an assistant message that calls tools.
THOUGHTS = (
    "Let me look at the file first.",
    "Running the tests now.\nThen I will patch the bug.",
    "Checking the logs for the error.",
)
#: A final answer (an assistant message with Text only).
FINALS = (
    "Done: the fix is in place.\nAll tests pass.",
    "I could not finish; see the notes above.",
)
#: A user's follow-up after a final answer.
FOLLOWUPS = (
    "Thanks. Please also update the changelog.",
    "Can you double-check the empty-input case?",
)
#: The text of a summary left by an earlier compaction.
OLD_SUMMARY = "SUMMARY 0: earlier work read three files\nand ran the test suite twice."
#: Tool names calls draw from (``retrieve_payload`` included: offloading must not offload its answers).
TOOL_NAMES = ("read_file", "run_tests", "grep", "read_file", "run_tests", "retrieve_payload")
#: Tool inputs calls draw from.
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
    if len(text) != size:
        raise ValueError(f"content sizes go up to {len(_BASE) - 62} characters, not {size}")
    return text


def pins(enabled: bool) -> st.SearchStrategy[bool]:
    """A pin flag: set about one time in seven when ``enabled``, never otherwise."""
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
    """The task message a history starts with."""
    return Message.build("user", [Text(TASKS[variant % len(TASKS)])], kind="task", pinned=pinned)


def summary_message(pinned: bool = False) -> Message:
    """A summary left by an earlier compaction (``kind="summary"``)."""
    return Message.build("user", [Text(OLD_SUMMARY)], kind="summary", pinned=pinned)


_STATUSES: st.SearchStrategy[ResultStatus] = st.sampled_from(("success", "success", "error"))
_VARIANTS = st.integers(0, 2)
_CALL_COUNTS = st.integers(1, 3)
_TOOL_NAME = st.sampled_from(TOOL_NAMES)
_TOOL_INPUT = st.sampled_from(TOOL_INPUTS)
_THOUGHT = st.sampled_from(THOUGHTS)
_PINS = {True: pins(True), False: pins(False)}


# The drawing is done by plain functions: a composite strategy built per turn (its arguments are
# lists and counters, so hypothesis cannot cache it) costs more than the draws themselves.
def _draw_results(draw: st.DrawFn, uses: Sequence[ToolUse], pin: bool) -> Message:
    blocks = [ToolResult(u.id, draw(_STATUSES), content(draw(SIZES), draw(_VARIANTS))) for u in uses]
    return Message.build("user", blocks, pinned=draw(_PINS[pin]))


def _draw_call(draw: st.DrawFn, ids: Ids, pin: bool) -> Message:
    uses = [ToolUse(ids.take(), draw(_TOOL_NAME), draw(_TOOL_INPUT)) for _ in range(draw(_CALL_COUNTS))]
    blocks: list[Text | ToolUse] = [Text(draw(_THOUGHT))] if draw(st.booleans()) else []
    return Message.build("assistant", [*blocks, *uses], pinned=draw(_PINS[pin]))


def _draw_turn(draw: st.DrawFn, ids: Ids, pin: bool) -> list[Message]:
    call = _draw_call(draw, ids, pin)
    return [call, _draw_results(draw, [b for b in call.blocks if isinstance(b, ToolUse)], pin)]


@st.composite
def results_for(draw: st.DrawFn, uses: Sequence[ToolUse], pin: bool = False) -> Message:
    """The user message answering ``uses``, in order."""
    return _draw_results(draw, uses, pin)


@st.composite
def assistant_call(draw: st.DrawFn, ids: Ids, pin: bool = False) -> Message:
    """An assistant message with an optional Text and 1-3 calls with fresh ids from ``ids``."""
    return _draw_call(draw, ids, pin)


@st.composite
def tool_turn(draw: st.DrawFn, ids: Ids, pin: bool = False) -> list[Message]:
    """An assistant message with 1-3 calls and the user message with their results."""
    return _draw_turn(draw, ids, pin)


def open_uses(window: Sequence[Message]) -> list[ToolUse]:
    """The calls of a last assistant message that nothing answers yet."""
    if window and window[-1].role == "assistant":
        return [b for b in window[-1].blocks if isinstance(b, ToolUse)]
    return []


_SUMMARY_PLACES = st.sampled_from(("none", "none", "none", "first", "after_task"))
_TASK_VARIANTS = st.integers(0, 1)
_ENDINGS = {
    True: st.sampled_from(("none", "none", "final", "followup", "open")),
    False: st.sampled_from(("none", "final")),
}
_FINAL = st.sampled_from(FINALS)
_FOLLOWUP = st.sampled_from(FOLLOWUPS)
_ONE_IN_FIVE = st.integers(0, 4)


@st.composite
def histories(
    draw: st.DrawFn,
    min_turns: int = 0,
    max_turns: int = 8,
    pinned: bool = True,
    open_end: bool = True,
    ids: Ids | None = None,
) -> list[Message]:
    """A well-formed window W(L) (docs/strategies.md 1.5) of ``min_turns`` to ``max_turns`` tool turns.

    ``pinned`` lets messages be flagged ``pinned``; ``open_end`` lets the history end with an
    assistant message whose calls nothing answers yet; ``ids`` gives the tool ids (default ``t1``,
    ``t2``, ...), so that histories drawn to be joined never share an id.
    """
    ids = ids or Ids("t")
    window: list[Message] = []
    pin = _PINS[pinned]
    where = draw(_SUMMARY_PLACES)
    if where == "first":
        window.append(summary_message(draw(pin)))
    window.append(task_message(draw(pin), draw(_TASK_VARIANTS)))
    if where == "after_task":
        window.append(summary_message(draw(pin)))
    for _ in range(draw(st.integers(min_turns, max_turns))):
        window += _draw_turn(draw, ids, pinned)
    ending = draw(_ENDINGS[open_end])
    if ending in ("final", "followup"):
        window.append(Message.build("assistant", [Text(draw(_FINAL))], pinned=draw(pin)))
    if ending == "followup":
        window.append(Message.build("user", [Text(draw(_FOLLOWUP))], pinned=draw(pin)))
    if ending == "open":
        window.append(_draw_call(draw, ids, pinned))
    return History(window)


@st.composite
def new_messages(draw: st.DrawFn, window: Sequence[Message], ids: Ids | None = None) -> list[Message]:
    """What the runtime appends next: the results of an open call, or a new turn (never pinned)."""
    pending = open_uses(window)
    if pending:
        return [_draw_results(draw, pending, False)]
    ids = ids or Ids("n")
    out = _draw_turn(draw, ids, False)
    if draw(_ONE_IN_FIVE) == 0:
        out.append(Message.build("assistant", [Text(draw(_FINAL))]))
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


def next_turn(window: Sequence[Message]) -> list[Message]:
    """A fixed next step for ``window``: the results of its open calls, or else a new tool turn,
    with 5000-character outputs (large enough for any offloading threshold) and tool ids that
    ``window`` does not use. Deterministic, for checks that run without hypothesis."""
    pending = open_uses(window)
    if pending:
        return [Message.build("user", [ToolResult(u.id, "success", content(5000, i)) for i, u in enumerate(pending)])]
    taken = {i for m in window for i in m.tool_ids}
    n = 1
    while f"next{n}" in taken:
        n += 1
    call = Message.build("assistant", [Text(THOUGHTS[0]), ToolUse(f"next{n}", "read_file", {"path": "src/app.py"})])
    return [call, Message.build("user", [ToolResult(f"next{n}", "success", content(5000, 0))])]
