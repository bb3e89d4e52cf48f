"""Hostile cases for ``ctxbench calibrate``: bad flags, traces that record no usage, damaged and truncated traces,
an --out in a missing folder, an --out that exists or is a folder, an unknown preset, a report folder holding
someone else's files; and the good samples, which must calibrate.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops). Every case
runs with ``--quiet``, so an error is the only line on stderr; ``out`` is the profile, absent or unchanged
after an exit 2.
"""

from __future__ import annotations

from pathlib import Path

from tests.hostile.cases import OK, USAGE, Case, Op, add

#: The families this module adds (each case id starts with its family and a dash).
FAMILIES: tuple[str, ...] = ("calibrate",)

F = "calibrate"
TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
FNCALL = TRACES / "litellm-logs" / "fncall-3-calls"
PROMPT = TRACES / "litellm-logs" / "prompt-based-2-calls"
CLAUDE_CODE = TRACES / "claude-code" / "incident_triage.jsonl"
NO_USAGE = TRACES / "openai-chat" / "incident_triage.json"
ATIF = TRACES / "atif" / "incident_triage.json"


def write(path: str, data: str | bytes) -> Op:
    return Op("write", path, data.encode() if isinstance(data, str) else data)


def logs(under: str = "logs") -> tuple[Op, ...]:
    """A LiteLLM log folder (the function-calling sample) under ``under``."""
    return tuple(write(f"{under}/{p.name}", p.read_text()) for p in sorted(FNCALL.glob("*.json")))


def calibrate(case_id: str, argv: tuple[str, ...], setup: tuple[Op, ...], expect: str = USAGE,
              must: tuple[str, ...] = (), out: str = "p.toml") -> None:
    """``calibrate ARGV --quiet``; ``out`` absent or unchanged after an exit 2."""
    add(Case(f"{F}-{case_id}", F, ("calibrate", *argv, "--quiet"), setup, expect, must, out=out))


# The good samples calibrate ---------------------------------------------------------------------------------

calibrate("litellm-folders", ("logs", "--out", "p.toml"),
          (*logs("logs/a"), *(write(f"logs/b/{p.name}", p.read_text()) for p in sorted(PROMPT.glob("*.json")))), OK)
calibrate("claude-code-sample", ("cc.jsonl", "--out", "p.toml", "--preset", "mid"),
          (write("cc.jsonl", CLAUDE_CODE.read_text()),), OK)

# Flags --------------------------------------------------------------------------------------------------------

calibrate("unknown-preset", ("logs", "--out", "p.toml", "--preset", "gpt-9"), logs(), USAGE,
          ("--preset", "gpt-9", "frontier"))
calibrate("preset-case", ("logs", "--out", "p.toml", "--preset", "Frontier"), logs(), USAGE, ("--preset", "Frontier"))
calibrate("unknown-format", ("logs", "--out", "p.toml", "--format", "nope"), logs(), USAGE, ("--format", "nope"))
calibrate("wrong-format", ("cc.jsonl", "--out", "p.toml", "--format", "litellm-logs"),
          (write("cc.jsonl", CLAUDE_CODE.read_text()),), USAGE, ("cc.jsonl",))
calibrate("no-out", ("logs",), logs(), USAGE, ("--out",))
calibrate("no-traces", ("--out", "p.toml"), (), USAGE, ("TRACE",))
calibrate("missing-trace", ("absent.json", "--out", "p.toml"), (), USAGE, ("absent.json",))

# Outputs ------------------------------------------------------------------------------------------------------

calibrate("out-in-missing-folder", ("logs", "--out", "nowhere/p.toml"), logs(), USAGE, ("--out", "nowhere"),
          out="nowhere")
calibrate("out-exists", ("logs", "--out", "p.toml"), (*logs(), write("p.toml", "kept = 1\n")), USAGE,
          ("--out", "p.toml", "exists"))
calibrate("out-is-a-folder", ("logs", "--out", "p.toml"), (*logs(), Op("mkdir", "p.toml")), USAGE,
          ("--out", "p.toml"))
calibrate("report-holds-other-files", ("logs", "--out", "p.toml", "--force", "--report", "rep"),
          (*logs(), write("rep/notes.txt", "mine\n")), USAGE, ("--report", "notes.txt"), out="rep")
calibrate("report-exists", ("logs", "--out", "p.toml", "--report", "rep"),
          (*logs(), write("rep/report.md", "old\n")), USAGE, ("--report", "exists"), out="rep")

# Traces with nothing to fit, damaged or truncated -------------------------------------------------------------

calibrate("no-usage", ("chat.json", "--out", "p.toml"), (write("chat.json", NO_USAGE.read_text()),), USAGE,
          ("no recorded usage in", "chat.json"))
calibrate("empty-trace", ("e.json", "--out", "p.toml"), (write("e.json", ""),), USAGE, ("e.json",))
calibrate("truncated-trace", ("cut.json", "--out", "p.toml"), (write("cut.json", ATIF.read_text()[:500]),), USAGE,
          ("cut.json",))
calibrate("binary-trace", ("bin.json", "--out", "p.toml"), (write("bin.json", b"\x00\x01\xff" * 40),), USAGE,
          ("bin.json",))
calibrate("truncated-log", ("logs", "--out", "p.toml"),
          (*logs()[:2], write(f"logs/{sorted(FNCALL.glob('*.json'))[-1].name}",
                              sorted(FNCALL.glob("*.json"))[-1].read_text()[:400])),
          USAGE, ("1757100019.875-3fa2.json",))
calibrate("usage-damaged", ("cc.jsonl", "--out", "p.toml"),
          (write("cc.jsonl", CLAUDE_CODE.read_text().replace('"input_tokens": ', '"input_tokens": "', 1)),), USAGE,
          ("cc.jsonl",))
calibrate("empty-folder", ("empty", "--out", "p.toml"), (Op("mkdir", "empty"),), USAGE, ("empty",))
