"""Hostile cases for the Claude Code and OpenTelemetry GenAI readers: ``replay`` of a Claude Code session file
or an OTLP/JSON file cut short, with wrong types where the readers look, a tool id reused while its call is
unanswered, a parentUuid loop, an empty file, files of another shape (ctxbench's own OTel export, which holds
usage but no messages; a format forced on the wrong file), and the good samples of both, which must replay.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.hostile.cases import OK, USAGE, Case, Op, add

#: The families this module adds (each case id starts with its family and a dash).
FAMILIES: tuple[str, ...] = ("cc-otel",)

F = "cc-otel"
TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
CLAUDE = TRACES / "claude-code" / "replication_lag_compacted.jsonl"
CLAUDE_INCIDENT = TRACES / "claude-code" / "incident_triage.jsonl"
OTEL = TRACES / "otel-genai" / "incident_triage.json"
OTEL_STRANDS = TRACES / "otel-genai" / "strands_two_traces.json"
REPLAY = ("--out", "out", "--quiet", "--no-report", "--strategies", "unbounded,sliding_window")


def write(path: str, data: str | bytes) -> Op:
    return Op("write", path, data.encode("utf-8") if isinstance(data, str) else data)


def replay(case_id: str, argv: tuple[str, ...], setup: tuple[Op, ...], expect: str = USAGE,
           must: tuple[str, ...] = ()) -> None:
    """``replay ARGV`` with the quick flags into ``out``; an OK run's tables must be finite."""
    add(Case(f"{F}-replay-{case_id}", F, ("replay", *argv, *REPLAY), setup, expect, must, out="out",
             finite="out" if expect == OK else None))


def edited(source: Path, old: str, new: str, name: str | None = None) -> tuple[Op, ...]:
    """The sample ``source`` written under its own name (or ``name``) with the first ``old`` made ``new``."""
    text = source.read_text()
    if old not in text:
        raise ValueError(f"{source.name} does not hold {old!r}")
    return (write(name or source.name, text.replace(old, new, 1)),)


# Claude Code ---------------------------------------------------------------------------------------------

_C, _CI = CLAUDE.name, CLAUDE_INCIDENT.name
_CUT = CLAUDE_INCIDENT.read_text()
replay("claude-truncated-last-line", (_CI,), (write(_CI, _CUT[: len(_CUT) - 300]),), USAGE,
       (_CI, "line 26", "invalid JSON"))
replay("claude-content-a-number", (_C,), edited(
    CLAUDE, '"content": "orders-db replica lag is 900s and growing. What is blocking replication?"', '"content": 900'),
    USAGE, (_C, "line 2 $.message.content", "got a number"))
replay("claude-reused-id-unanswered", (_CI,), edited(CLAUDE_INCIDENT, '"id": "toolu_01deploy02"',
                                                     '"id": "toolu_01pods01"'), USAGE,
       (_CI, "'toolu_01pods01' is used again while"))
replay("claude-parent-loop", (_C,), edited(CLAUDE, '"parentUuid": null', '"parentUuid": '
                                           '"00000000-0000-4000-8000-000000000028"'), USAGE,
       (_C, "parentUuid chain loops"))
replay("claude-empty-file", ("session.jsonl",), (write("session.jsonl", ""),), USAGE, ("session.jsonl", "empty file"))


# OpenTelemetry GenAI --------------------------------------------------------------------------------------

_O, _OS = OTEL.name, OTEL_STRANDS.name
_HALF = OTEL_STRANDS.read_text()
replay("otel-truncated", (_OS,), (write(_OS, _HALF[: len(_HALF) // 2]),), USAGE, (_OS, "invalid JSON"))
replay("otel-int-value-not-a-number", (_O,), edited(OTEL, '"intValue": "1480"', '"intValue": "lots"'), USAGE,
       (_O, "intValue", "'lots'"))
_EXPORT = json.dumps({"resourceSpans": [{"resource": {"attributes": [
    {"key": "service.name", "value": {"stringValue": "ctxbench"}}]}, "scopeSpans": [{"spans": [
        {"traceId": "a3121c97f7fb0544dd2291121463fda3", "spanId": "3da1c87a8886487f", "name": "chat frontier",
         "startTimeUnixNano": "1796157218000000000", "endTimeUnixNano": "1796157221132751000", "attributes": [
             {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
             {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "2072"}}]}]}]}]}) + "\n"
replay("otel-ctxbench-export-has-no-messages", ("traces.otlp.jsonl",), (write("traces.otlp.jsonl", _EXPORT),), USAGE,
       ("traces.otlp.jsonl", "nothing to replay"))
replay("otel-forced-on-a-claude-file", ("--format", "otel-genai", _C), (write(_C, CLAUDE.read_text()),), USAGE,
       (_C, "resourceSpans: missing"))
replay("good-samples-of-both", (_C, _CI, _O, _OS), (
    write(_C, CLAUDE.read_text()), write(_CI, CLAUDE_INCIDENT.read_text()), write(_O, OTEL.read_text()),
    write(_OS, OTEL_STRANDS.read_text())), OK)
