"""Hostile cases for the SWE-agent and mini-swe-agent readers: ``.traj`` files and mini-swe-agent trajectories as
a careless user or an unlucky run leaves them.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops). Each case
replays one file made from the hand-written samples under tests/data/traces/swe-agent and
tests/data/traces/mini-swe-agent: cut in half, emptied, with a wrong type where the reader looks (tool calls,
usage), tool calls saved as a Python expression that must not be evaluated, an id reused while its call is
unanswered, a message list of another shape, the steps reading of a file without steps. Every
one is refused in one line naming the file and the place; none may be read by another format instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.hostile.cases import USAGE, Case, Op, add

#: The families this module adds (each case id starts with its family and a dash).
FAMILIES: tuple[str, ...] = ("swe",)

F = "swe"
TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
FC = TRACES / "swe-agent" / "fc_units_fix.traj.json"
TEXT = TRACES / "swe-agent" / "text_lanternfish.traj.json"
MINI = TRACES / "mini-swe-agent" / "brine-88.traj.json"
REPLAY = ("--out", "out", "--quiet", "--no-report", "--strategies", "unbounded,sliding_window")


def write(path: str, data: str | bytes) -> Op:
    return Op("write", path, data.encode() if isinstance(data, str) else data)


def edited(sample: Path, edit: Callable[[dict[str, Any]], None]) -> str:
    """The sample's JSON with ``edit`` applied to it."""
    doc = json.loads(sample.read_text())
    edit(doc)
    return json.dumps(doc, indent=2)


def replay(case_id: str, name: str, data: str | bytes, must: tuple[str, ...], *flags: str) -> None:
    """``replay NAME`` of a file holding ``data``: refused (exit 2) in one line naming ``must``."""
    add(Case(f"{F}-replay-{case_id}", F, ("replay", name, *flags, *REPLAY), (write(name, data),), USAGE,
             (name, *must), out="out"))


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        here: Any = doc
        for key in path[:-1]:
            here = here[key]
        here[path[-1]] = value
    return edit


def _reuse_unanswered_id(doc: dict[str, Any]) -> None:
    # the first call gets a second call of the same id in the same message: both wait for one result
    first = doc["history"][2]
    first["tool_calls"] = [*first["tool_calls"], {**first["tool_calls"][0]}]


_FC_TEXT = FC.read_text()
replay("truncated", FC.name, _FC_TEXT[: len(_FC_TEXT) // 2], ("invalid JSON",))
replay("empty", FC.name, b"", ("empty file",))
replay("tool-calls-a-number", FC.name, edited(FC, _set(("history", 2, "tool_calls"), 7)),
       ("$.history[2].tool_calls", "expected an array of tool calls"))
replay("tool-calls-python-expression", FC.name,
       edited(FC, _set(("history", 4, "tool_calls"), "__import__('os').system('touch pwned')")),
       ("$.history[4].tool_calls", "neither JSON nor a Python literal"))
replay("reused-id-while-unanswered", FC.name, edited(FC, _reuse_unanswered_id),
       ("tool id 'call_tp_01' is used again", "not answered yet"))
replay("tokens-sent-a-string", TEXT.name, edited(TEXT, _set(("info", "model_stats", "tokens_sent"), "lots")),
       ("$.info.model_stats.tokens_sent", "expected a non-negative number"))
replay("steps-of-a-file-without-steps", TEXT.name, edited(TEXT, lambda doc: doc.pop("trajectory")),
       ("$.trajectory: missing",), "--format", "swe-agent-steps")
replay("mini-messages-an-object", MINI.name, edited(MINI, _set(("messages",), {"role": "user"})),
       ("$.messages", "expected an array"))
