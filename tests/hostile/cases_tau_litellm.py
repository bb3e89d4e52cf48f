"""Hostile cases for the tau-bench and litellm-logs readers: tau-bench result lists, tau2 results and LiteLLM
completion-log folders as a careless user hands them to ``replay``.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops): truncated
and empty files, wrong types at the places the readers depend on, a tool id reused while its call is
unanswered, a tau2 ``results.json`` whose simulations live elsewhere, a log without its response, a file of
another shape; and the good samples, which must replay with finite tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.hostile.cases import OK, USAGE, Case, Op, add

#: The families this module adds (each case id starts with its family and a dash).
FAMILIES: tuple[str, ...] = ("tau-litellm",)

F = "tau-litellm"
TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
TAU_BENCH = TRACES / "tau-bench" / "airline_rebooking.json"
TAU2 = TRACES / "tau-bench" / "tau2_telecom_results.json"
FNCALL = TRACES / "litellm-logs" / "fncall-3-calls"
PROMPT = TRACES / "litellm-logs" / "prompt-based-2-calls"
REPLAY = ("--out", "out", "--quiet", "--no-report", "--strategies", "unbounded,sliding_window")


def write(path: str, data: str | bytes) -> Op:
    return Op("write", path, data.encode() if isinstance(data, str) else data)


def replay(case_id: str, argv: tuple[str, ...], setup: tuple[Op, ...], expect: str = USAGE,
           must: tuple[str, ...] = ()) -> None:
    """``replay ARGV`` with the quick flags into ``out``; an OK run's tables must be finite."""
    add(Case(f"{F}-replay-{case_id}", F, ("replay", *argv, *REPLAY), setup, expect, must, out="out",
             finite="out" if expect == OK else None))


def edited(path: Path, edit: Callable[[Any], None]) -> str:
    """The JSON of ``path`` after ``edit`` changed it in place."""
    value = json.loads(path.read_text())
    edit(value)
    return json.dumps(value)


def folder(source: Path, under: str, edit: Callable[[Any], None] | None = None) -> tuple[Op, ...]:
    """Writes recreating a log folder under ``under``, its last log passed through ``edit``."""
    files = sorted(source.glob("*.json"))
    return tuple(write(f"{under}/{p.name}", edited(p, edit) if edit is not None and p == files[-1] else p.read_text())
                 for p in files)


def _unanswered(runs: list[Any]) -> None:
    call = {"id": "call_X", "type": "function", "function": {"name": "cancel_reservation", "arguments": "{}"}}
    runs[0]["traj"][2]["tool_calls"] = [call, dict(call)]


# The good samples replay ------------------------------------------------------------------------------------

replay("tau-bench-sample", ("runs.json",), (write("runs.json", TAU_BENCH.read_text()),), OK)
replay("tau2-sample", ("results.json",), (write("results.json", TAU2.read_text()),), OK)
replay("litellm-folders", ("logs",), (*folder(FNCALL, "logs/a"), *folder(PROMPT, "logs/b")), OK)

# tau-bench and tau2 files ------------------------------------------------------------------------------------

replay("tau-bench-truncated", ("runs.json",), (write("runs.json", TAU_BENCH.read_text()[:700]),), USAGE,
       ("runs.json", "invalid JSON"))
replay("tau-bench-empty", ("runs.json",), (write("runs.json", ""),), USAGE, ("runs.json", "empty"))
replay("tau-bench-traj-not-array", ("runs.json",),
       (write("runs.json", edited(TAU_BENCH, lambda runs: runs[0].update(traj="none"))),), USAGE,
       ("runs.json", "$[0].traj", "expected an array"))
replay("tau-bench-id-reused-unanswered", ("runs.json",), (write("runs.json", edited(TAU_BENCH, _unanswered)),),
       USAGE, ("runs.json", "$[0].traj[2].tool_calls[1]", "used again"))
replay("tau-bench-another-shape", ("runs.json",), (write("runs.json", '[{"task_id": 1, "reward": 0.0}]'),), USAGE,
       ("runs.json", "unknown trace format"))
replay("tau2-results-without-simulations", ("results.json",),
       (write("results.json", edited(TAU2, lambda r: r.pop("simulations"))),), USAGE,
       ("results.json", "$.simulations", "simulations/<id>.json"))
replay("tau2-tokens-as-text", ("results.json",),
       (write("results.json", edited(TAU2, lambda r: r["simulations"][0]["messages"][2]["usage"].update(
           prompt_tokens="2k"))),), USAGE, ("results.json", "usage.prompt_tokens"))

# LiteLLM log folders ------------------------------------------------------------------------------------------

replay("litellm-log-without-response", ("logs",), folder(FNCALL, "logs", lambda d: d.pop("response")), USAGE,
       ("1757100019.875-3fa2.json", "$.response"))
replay("litellm-choices-not-array", ("logs",), folder(FNCALL, "logs", lambda d: d["response"].update(choices={})),
       USAGE, ("1757100019.875-3fa2.json", "$.response.choices"))
replay("litellm-log-truncated", ("logs",),
       (*folder(FNCALL, "logs")[:2], write(f"logs/{sorted(FNCALL.glob('*.json'))[-1].name}",
                                           sorted(FNCALL.glob("*.json"))[-1].read_text()[:400])),
       USAGE, ("1757100019.875-3fa2.json", "invalid JSON"))
