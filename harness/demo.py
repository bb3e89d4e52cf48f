"""A strategy demo on generated histories: every strategy replays the same synthetic ops
sessions through the runtime's hook order, with a window limit and an extractive summarizer.

This is the job behind ``make bench`` until the calibrated runtime exists. It measures what the
strategies themselves do to the window (context tokens per call, peak, billed input tokens,
summary calls, overflows, wall time); it does not model success or errors, which need the mock
model.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import strategies
from harness.context import Context
from harness.messages import Message, Text, TextMeter, ToolResult, ToolUse
from strategies.base import CannotReduce, ContextStrategy

#: Tokens held back for the model's reply when checking the window (mock-model.md 5: 4,096).
OUTPUT_RESERVE_TOKENS = 4096
_TOOLS = ("kubectl_get_pods", "kubectl_describe", "kubectl_logs", "log_search", "db_query", "metrics_query")
_LEVELS = ("INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR")
#: `pipeline` has no defaults; the demo runs the composition strategies.md 3.7 recommends.
DEMO_PIPELINE: dict[str, Any] = {"stages": [{"name": "offload_contracts"}, {"name": "sliding_window"}]}


def _rng(seed: int, session: int) -> np.random.Generator:
    digest = hashlib.blake2b(f"{seed}|demo|{session}".encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))


def _payload(rng: np.random.Generator, tool: str, n_bytes: int) -> str:
    """Ops-looking text of about ``n_bytes``: log lines, or a kubectl-style table."""
    lines: list[str] = []
    size = 0
    i = 0
    if tool == "kubectl_get_pods":
        lines.append("NAME                                READY   STATUS             RESTARTS   AGE")
    while size < n_bytes:
        if tool == "kubectl_get_pods":
            status = "CrashLoopBackOff" if rng.random() < 0.1 else "Running"
            pod = f"api-{rng.integers(16**4):04x}-{rng.integers(36**4):06d}"
            line = f"{pod:<35} 1/1     {status:<18} {rng.integers(9)}          {rng.integers(60)}m"
        else:
            level = _LEVELS[int(rng.integers(len(_LEVELS)))]
            line = (
                f"2026-11-{1 + i // 5000:02d}T{(i // 60) % 24:02d}:{i % 60:02d}:{rng.integers(60):02d}Z {level} "
                f"svc=checkout trace={rng.integers(16**8):08x} latency_ms={rng.integers(2000)} "
                f'msg="request {"failed" if level == "ERROR" else "served"} route=/api/v1/orders"'
            )
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines)


def generate_history(seed: int, session: int, turns: int) -> list[Message]:
    """Task message plus ``turns`` (assistant call, tool result) pairs with lognormal payloads
    (median about 1.5 KB, p95 about 30 KB, as in the scenario spec)."""
    rng = _rng(seed, session)
    meter = TextMeter.for_facts()
    history = [Message.build("user", [Text(f"Incident {session}: checkout pods crashloop; find the cause.")],
                             kind="task", meter=meter)]
    for t in range(turns):
        tool = _TOOLS[int(rng.integers(len(_TOOLS)))]
        n_bytes = int(min(150_000, rng.lognormal(np.log(1500), 1.8)))
        use_id = f"call_{session}_{t}"
        history.append(Message.build(
            "assistant", [Text(f"Step {t}: run {tool}"), ToolUse(use_id, tool, {"namespace": "prod", "n": t})],
            meter=meter))
        history.append(Message.build("user", [ToolResult(use_id, "success", _payload(rng, tool, n_bytes))],
                                     meter=meter))
    return history


def extractive_summarizer(max_lines: int = 40) -> Callable[[list[Message]], Message]:
    """A deterministic stand-in for the summarizing model: the first line of each message."""

    def summarize(messages: list[Message]) -> Message:
        firsts = [m.text.split("\n", 1)[0][:160] for m in messages]
        body = "\n".join(f"- {line}" for line in firsts[-max_lines:])
        return Message.build("assistant", [Text("## Conversation Summary\n" + body)], meter=messages[0].meter)

    return summarize


@dataclass(frozen=True, slots=True)
class DemoRow:
    strategy: str
    session: int
    calls: int
    context_tokens_mean: float
    context_tokens_peak: int
    input_tokens: int
    summary_calls: int
    removed: int
    overflow: bool
    wall_s: float


def replay_history(history: Sequence[Message], strategy: ContextStrategy, window_tokens: int,
                   session: int) -> DemoRow:
    """Feed the history to ``strategy`` in the runtime's hook order, one model call per turn."""
    summarizer = extractive_summarizer()
    summary_calls = 0

    def counted(messages: list[Message]) -> Message:
        nonlocal summary_calls
        summary_calls += 1
        return summarizer(messages)

    ctx = Context(window_tokens=window_tokens, summarizer=counted)
    started = time.perf_counter()
    ctx.messages.append(strategy.on_append(ctx, history[0]))
    sizes: list[int] = []
    overflow = False
    for i in range(1, len(history), 2):
        strategy.before_call(ctx)
        while ctx.tokens + OUTPUT_RESERVE_TOKENS > window_tokens:
            try:
                strategy.reduce(ctx, overflow=OverflowError(ctx.tokens))
            except CannotReduce:
                overflow = True
                break
        if overflow:
            break
        sizes.append(ctx.tokens)
        ctx.messages.append(strategy.on_append(ctx, history[i]))
        ctx.messages.append(strategy.on_append(ctx, history[i + 1]))
        strategy.apply(ctx)
    wall = time.perf_counter() - started
    return DemoRow(
        strategy=strategy.name,
        session=session,
        calls=len(sizes),
        context_tokens_mean=float(np.mean(sizes)) if sizes else 0.0,
        context_tokens_peak=max(sizes, default=0),
        input_tokens=int(sum(sizes)),
        summary_calls=summary_calls,
        removed=ctx.removed_count,
        overflow=overflow,
        wall_s=wall,
    )


def run_demo(*, sessions: int = 20, turns: int = 60, seed: int = 0, window_tokens: int = 128_000,
             names: Sequence[str] | None = None) -> pd.DataFrame:
    """Replay ``sessions`` generated histories under every strategy; one row per (strategy, session)."""
    chosen = list(names) if names else strategies.names()
    rows: list[DemoRow] = []
    for s in range(sessions):
        history = generate_history(seed, s, turns)
        for name in chosen:
            params = DEMO_PIPELINE if name == "pipeline" else {}
            rows.append(replay_history(history, strategies.create(name, **params), window_tokens, s))
    return pd.DataFrame([asdict(r) for r in rows])


def summary_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Per strategy: means over sessions, overflow share, and harness wall time per call."""
    grouped = rows.groupby("strategy", sort=True)
    table = pd.DataFrame({
        "context_tokens_mean": grouped["context_tokens_mean"].mean().round(0).astype(int),
        "context_tokens_peak": grouped["context_tokens_peak"].max(),
        "input_tokens_per_session": grouped["input_tokens"].mean().round(0).astype(int),
        "summary_calls": grouped["summary_calls"].mean().round(2),
        "removed_messages": grouped["removed"].mean().round(1),
        "overflow_rate": grouped["overflow"].mean().round(3),
        "us_per_call": (grouped["wall_s"].sum() / grouped["calls"].sum() * 1e6).round(1),
    })
    return table.sort_values("context_tokens_mean")


def _write_atomically(path: Path, text: str) -> None:
    """Write via a temp file in the same directory and rename, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_demo(rows: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Write ``sessions.csv`` (one row per strategy and session) and ``summary.txt``/``summary.csv``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    table = summary_table(rows)
    written = []
    for name, text in (
        ("sessions.csv", rows.to_csv(index=False)),
        ("summary.csv", table.to_csv()),
        ("summary.txt", table.to_string() + "\n"),
    ):
        _write_atomically(out_dir / name, text)
        written.append(out_dir / name)
    return written
