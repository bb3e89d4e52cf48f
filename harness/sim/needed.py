"""Needed values of a recorded session: what its transcript says the agent needed from its tool outputs.

Accounting mode cannot say whether the agent would still have succeeded under a strategy, but the
transcript shows what it used: a value the agent wrote in a later call's arguments (or in its final
answer) that first appeared in an earlier tool output is a value it needed from that output. Under a
strategy, such a value that is visible nowhere in the window sent with the call that used it (nor in the
system prompt) is a needed value the strategy hid: the agent as recorded could not have written it from
what it was shown.

What counts as a value: a word of the call's argument values (string leaves, and numbers) that looks like
data rather than prose: at least three digits, or at least four characters with a digit or one of
``/ . _ : @ # -`` in it (paths, ids, line numbers, hashes, addresses, versions). Common words, tool names
and anything already in the system prompt, the task or an earlier message of the agent's own are not
needed values: they did not come from a tool output. Visibility is exact substring match in any message of
the window (a summary or stub that repeats the value shows it; another spelling of it does not).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.messages import Message, ToolResult, ToolUse, block_text

__all__ = ["NeededValue", "needed_values", "value_words"]

_WORD = re.compile(r"[/~.]?[A-Za-z0-9][A-Za-z0-9_./:@#-]*[A-Za-z0-9]|[0-9]{3,}")
_DATA_MARKS = frozenset("/._:@#-")
#: A word this long or longer is not looked for (a blob, not a value someone copies).
_LONGEST = 200


@dataclass(frozen=True, slots=True)
class NeededValue:
    """A value the recorded agent used at one call that it had first seen in a tool output."""

    #: The agent call (0-based, agent calls only) whose reply used it.
    call: int
    value: str
    #: The id of the tool call whose output first showed it.
    source_tool_use_id: str


def value_words(text: str) -> list[str]:
    """The data-like words of ``text`` (see the module docstring), in order, without repeats."""
    out: dict[str, None] = {}
    for word in _WORD.findall(text):
        if len(word) > _LONGEST:
            continue
        digits = sum(c.isdigit() for c in word)
        if (word.isdigit() and len(word) >= 3) or (len(word) >= 4 and (digits or _DATA_MARKS & set(word))):
            out.setdefault(word, None)
    return list(out)


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, Mapping):
        for inner in value.values():
            yield from _leaves(inner)
    elif isinstance(value, list | tuple):
        for inner in value:
            yield from _leaves(inner)


def _used(message: Message) -> list[str]:
    """The data-like words a reply writes: its calls' argument values, and a final answer's text."""
    texts = [leaf for b in message.blocks if isinstance(b, ToolUse) for leaf in _leaves(b.input)]
    if message.kind == "final":
        texts.append(message.text)
    words: dict[str, None] = {}
    for text in texts:
        for word in value_words(text):
            words.setdefault(word, None)
    return list(words)


def needed_values(messages: Sequence[Message], system: str = "") -> list[NeededValue]:
    """Every (call, value) a recorded session's agent needed from an earlier tool output, in call order.

    ``messages``: the session's messages (the task first, then assistant and user messages in turn), the
    agent call of each assistant message counted from 0."""
    out: list[NeededValue] = []
    call = 0
    for position, message in enumerate(messages):
        if position == 0 or message.role != "assistant":
            continue
        for word in _used(message):
            if word in system:
                continue
            source = _first_tool_output(messages, position, word)
            if source is not None:
                out.append(NeededValue(call, word, source))
        call += 1
    return out


def _first_tool_output(messages: Sequence[Message], before: int, word: str) -> str | None:
    """The tool call id whose output is the first place before ``before`` to show ``word``, when the first
    place is a tool output (not the task, a user's text or the agent's own words)."""
    for message in messages[:before]:
        for block in message.blocks:
            if word in block_text(block):
                return block.tool_use_id if isinstance(block, ToolResult) else None
    return None
