"""Hypothesis strategies for Converse-dict histories in the strands parity domain (docs/strategies.md 5).

The parity domain: roles user/assistant; only ``text``, ``toolUse`` and ``toolResult`` blocks; each
toolResult holds exactly one ``{"text": ...}`` item and a status of ``success`` or ``error``; tool
ids are non-empty and unique (each id is used by at most one toolUse and answered by at most one
toolResult); a message may carry ``metadata = {"custom": {"pinned": True}}``; no ``tracking_id``.

- `well_formed_histories` build a task message, then turns: an assistant message (optional text and
  1-3 toolUse) answered by a user message with the matching results, or a plain text exchange. The
  history may end with an assistant text, a user follow-up, or an assistant with unanswered calls.
- `malformed_histories` draw roles and blocks freely: orphan results, unanswered uses anywhere,
  uses in user messages, results in assistant messages.

Result texts are 5, 401-446, 1200 or 5000 characters long, so strands' truncation (more than 400
characters) triggers, including the 401-446 band where the truncation marker makes a text longer.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

Converse = dict[str, Any]

TOOL_NAMES = ("read_file", "grep", "run_tests", "list_dir")

#: Tool-result text lengths: tiny, the band the marker grows, and two that truncation shrinks.
RESULT_SIZES = st.one_of(st.just(5), st.integers(401, 446), st.just(1200), st.just(5000))

#: Short and long free texts, so a summary of one message is sometimes not smaller than it.
TEXT_SIZES = st.one_of(st.integers(1, 12), st.integers(40, 300))

_WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


def filler(seed: str, n: int) -> str:
    """A deterministic text of exactly ``n`` characters that differs with ``seed``."""
    base = f"{seed} " + " ".join(_WORDS[(len(seed) + i) % len(_WORDS)] + str(i) for i in range(12)) + "\n"
    return (base * (n // len(base) + 1))[:n]


def pin(message: Converse) -> Converse:
    message["metadata"] = {"custom": {"pinned": True}}
    return message


def text_block(seed: str, n: int) -> Converse:
    return {"text": filler(seed, n)}


def use_block(tool_id: str, name: str, arg: int) -> Converse:
    return {"toolUse": {"toolUseId": tool_id, "name": name, "input": {"arg": arg}}}


def result_block(tool_id: str, status: str, n: int) -> Converse:
    return {"toolResult": {"toolUseId": tool_id, "status": status, "content": [{"text": filler(tool_id, n)}]}}


@st.composite
def _pins(draw: st.DrawFn, messages: list[Converse], allow_pins: bool) -> list[Converse]:
    if allow_pins and messages:
        flags = draw(st.lists(st.integers(0, 7), min_size=len(messages), max_size=len(messages)))
        for message, flag in zip(messages, flags, strict=True):
            if flag == 0:
                pin(message)
    return messages


@st.composite
def well_formed_histories(
    draw: st.DrawFn, *, max_turns: int = 8, allow_pins: bool = True, id_prefix: str = "tu"
) -> list[Converse]:
    """A task, then tool turns and text exchanges; W(L) of docs/strategies.md 1.5 holds."""
    counter = 0

    def fresh_id() -> str:
        nonlocal counter
        counter += 1
        return f"{id_prefix}{counter}"

    messages: list[Converse] = [{"role": "user", "content": [text_block("task", draw(TEXT_SIZES))]}]
    for t in range(draw(st.integers(0, max_turns))):
        if draw(st.integers(0, 3)) == 0:
            messages.append({"role": "assistant", "content": [text_block(f"say{t}", draw(TEXT_SIZES))]})
            messages.append({"role": "user", "content": [text_block(f"ask{t}", draw(TEXT_SIZES))]})
            continue
        content: list[Converse] = []
        if draw(st.booleans()):
            content.append(text_block(f"think{t}", draw(TEXT_SIZES)))
        ids = [fresh_id() for _ in range(draw(st.integers(1, 3)))]
        content += [use_block(i, draw(st.sampled_from(TOOL_NAMES)), draw(st.integers(0, 99))) for i in ids]
        messages.append({"role": "assistant", "content": content})
        answer_order = draw(st.permutations(ids))
        results = [
            result_block(i, draw(st.sampled_from(("success", "error"))), draw(RESULT_SIZES)) for i in answer_order
        ]
        messages.append({"role": "user", "content": results})
    ending = draw(st.sampled_from(("none", "final", "final+followup", "unanswered")))
    if ending in ("final", "final+followup"):
        messages.append({"role": "assistant", "content": [text_block("final", draw(TEXT_SIZES))]})
        if ending == "final+followup":
            messages.append({"role": "user", "content": [text_block("followup", draw(TEXT_SIZES))]})
    elif ending == "unanswered":
        ids = [fresh_id() for _ in range(draw(st.integers(1, 2)))]
        messages.append({"role": "assistant", "content": [use_block(i, "read_file", 0) for i in ids]})
    return draw(_pins(messages, allow_pins))


@st.composite
def malformed_histories(draw: st.DrawFn, *, max_size: int = 14, allow_pins: bool = True) -> list[Converse]:
    """Free roles and blocks: orphan results, unanswered uses anywhere, uses in user messages."""
    messages: list[Converse] = []
    open_uses: list[str] = []
    counter = 0
    for n in range(draw(st.integers(0, max_size))):
        role = draw(st.sampled_from(("user", "assistant")))
        content: list[Converse] = []
        for b in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(("text", "use", "result", "result")))
            if kind == "text":
                content.append(text_block(f"m{n}b{b}", draw(TEXT_SIZES)))
            elif kind == "use":
                counter += 1
                tool_id = f"mu{counter}"
                open_uses.append(tool_id)
                content.append(use_block(tool_id, draw(st.sampled_from(TOOL_NAMES)), draw(st.integers(0, 9))))
            else:
                if open_uses and draw(st.booleans()):
                    tool_id = open_uses.pop(draw(st.integers(0, len(open_uses) - 1)))
                else:
                    counter += 1
                    tool_id = f"orphan{counter}"
                status = draw(st.sampled_from(("success", "error")))
                content.append(result_block(tool_id, status, draw(RESULT_SIZES)))
        messages.append({"role": role, "content": content})
    return draw(_pins(messages, allow_pins))


def histories(*, allow_pins: bool = True) -> st.SearchStrategy[list[Converse]]:
    """Well-formed and malformed histories, in the proportion 2:1."""
    return st.one_of(
        well_formed_histories(allow_pins=allow_pins),
        well_formed_histories(allow_pins=allow_pins),
        malformed_histories(allow_pins=allow_pins),
    )


@st.composite
def scripts(
    draw: st.DrawFn, *, ops: tuple[str, ...], well_formed_only: bool = False
) -> tuple[list[Converse], list[Converse], list[str]]:
    """(initial history, messages still to append, operations) for a multi-step script.

    The full history is drawn once, so appended messages keep ids unique; ``append`` appends the next
    one or two messages of it (nothing when it is used up).
    """
    full = draw(well_formed_histories(max_turns=12) if well_formed_only else histories())
    start = draw(st.integers(min(3, len(full)), len(full)))
    steps = draw(st.lists(st.sampled_from(ops), min_size=4, max_size=16))
    return full[:start], full[start:], steps
