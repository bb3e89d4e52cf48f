"""The walk the chat-style file formats sniff with: where the first distinctive mark of one format is in a
trace of chat-style JSON (a conversation object, an array of messages or items, JSONL of either).

Each format names its marks (`Marks`) and `claim` walks the trace in one fixed order, returning the `Claim`
of the first mark it meets. Comparing the claims of all formats thus gives what one walk stopping at the
first mark of any format gives: the earliest distinctive mark decides. The order:

1. the document (the first JSON value, when it is an object): ``Claim.document(rank)``;
2. its messages: those of a conversation document (``{"messages": [...]}``), else the items of a top-level
   array, else the records of a JSONL file of objects. For each message (an object), in order: its marks
   ranked below `CONVERSATION_RANK`; then, if it is itself a conversation (a JSONL record of
   ``{"messages": [...]}``), that conversation, which decides the trace whatever follows it; then its marks
   of higher rank; then its content parts (``"content": [...]``), in order. A conversation is decided by
   its own mark (`Marks.conversation`), else by its messages, else it is the format's that reads unmarked
   conversations (`Marks.reads_conversations`);
3. the end: unmarked top-level messages that are all plain (`Marks.plain`).

The ranks the built-ins give a message's marks: 1 (Responses item types), 2 (Chat tool messages), 3 (an
ATIF trajectory in a list), 5 (a Responses request or response in a list).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.run.traces.formats import Claim
from harness.run.traces.reading import TraceText

#: Where on a message a nested conversation is looked at, among the ranks of its marks.
CONVERSATION_RANK = 4
#: Where on a message its content parts are looked at: after every mark of the message itself.
PARTS_RANK = 6
# Positions of a claim within the trace and within a conversation.
_MESSAGES = 1
_OWN_MARK, _ITEMS, _END = 0, 1, 2


def _no_rank(value: dict[str, Any]) -> int | None:
    return None


def _no(value: dict[str, Any]) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Marks:
    """What sets one format's traces apart, at each place of the walk; every test gets a JSON object."""

    #: The rank of the format's mark on the document (the first JSON value), or None.
    document: Callable[[dict[str, Any]], int | None] = _no_rank
    #: The rank of its mark on one message or item, or None; neither `CONVERSATION_RANK` nor `PARTS_RANK`.
    item: Callable[[dict[str, Any]], int | None] = _no_rank
    #: Whether one content part of a message is the format's.
    part: Callable[[dict[str, Any]], bool] = _no
    #: Whether a conversation object (``{"messages": [...], ...}``) is the format's by its own keys.
    conversation: Callable[[dict[str, Any]], bool] = _no
    #: Whether a conversation whose messages show no format's mark is the format's.
    reads_conversations: bool = False
    #: A test every message of an unmarked top-level array or JSONL must pass for it to be the format's.
    plain: Callable[[dict[str, Any]], bool] | None = None


def listed_values(trace: TraceText) -> list[Any] | None:
    """The values a trace lists at its top level: a top-level array's items, or the records of a JSONL file
    of objects; None for one JSON object or scalar."""
    first = trace.records[0].value
    if isinstance(first, list):
        return first
    if trace.jsonl and isinstance(first, dict):
        return [r.value for r in trace.records]
    return None


def claim(trace: TraceText, marks: Marks) -> Claim | None:
    """Where in ``trace`` the first of ``marks`` is (see the module docstring), or None."""
    first = trace.records[0].value
    if isinstance(first, dict):
        rank = marks.document(first)
        if rank is not None:
            return Claim.document(rank)
        if isinstance(first.get("messages"), list):  # a conversation document: its messages decide, not JSONL
            return _conversation(first, marks, (_MESSAGES,))
    values = listed_values(trace)
    if values is None:
        return None
    found = _items(values, marks, (_MESSAGES, _ITEMS))
    if found is None and marks.plain is not None and _all_plain(values, marks.plain):
        return Claim((_MESSAGES, _END))
    return found


def _conversation(conversation: dict[str, Any], marks: Marks, where: tuple[int, ...]) -> Claim | None:
    if marks.conversation(conversation):
        return Claim((*where, _OWN_MARK))
    found = _items(conversation["messages"], marks, (*where, _ITEMS))
    if found is None and marks.reads_conversations:
        return Claim((*where, _END))
    return found


def _items(items: list[Any], marks: Marks, where: tuple[int, ...]) -> Claim | None:
    # Non-objects are left to the format's reader, which names them; the objects decide the format.
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        at = (*where, index)
        rank = marks.item(item)
        if rank is not None and rank < CONVERSATION_RANK:
            return Claim((*at, rank))
        if isinstance(item.get("messages"), list):  # decides the trace: no later message is looked at
            return _conversation(item, marks, (*at, CONVERSATION_RANK))
        if rank is not None:
            return Claim((*at, rank))
        content = item.get("content")
        if isinstance(content, list):
            for number, part in enumerate(content):
                if isinstance(part, dict) and marks.part(part):
                    return Claim((*at, PARTS_RANK, number))
    return None


def _all_plain(values: list[Any], plain: Callable[[dict[str, Any]], bool]) -> bool:
    objects = [v for v in values if isinstance(v, dict)]
    return bool(objects) and all(plain(o) for o in objects)


def part_type(part: dict[str, Any]) -> str | None:
    """A content part's ``type`` when it is a string (parts the sniffers compare against sets of names)."""
    kind = part.get("type")
    return kind if isinstance(kind, str) else None
