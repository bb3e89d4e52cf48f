"""Realistic tool-output text for the generators: timestamps, log lines, kubectl tables, JSON
bodies, psql tables, stack traces, metric series. Deterministic given a `Draws` stream.

Identifiers made here (filler pod names, trace ids, request ids) use shapes that can never contain
a fact value (``word-xxxx``): pods carry a 10-hex replica-set hash, traces are 32 hex digits.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from harness.core.tools import cap_output
from scenarios.draws import BASE32, HEX, Draws

#: Characters left between the start of a capped output's kept tail and a block of fact lines moved
#: there (`facts_within_cap`), so the cut's marker line and line ends never split the block.
TAIL_MARGIN_CHARS = 200

LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "INFO", "WARN", "ERROR")
ROUTES = ("/api/v1/orders", "/api/v1/cart", "/api/v1/payments", "/healthz", "/api/v1/users", "/api/v1/search")
MESSAGES = (
    "request served",
    "cache miss, loading from store",
    "upstream responded",
    "connection pool stats",
    "retrying request",
    "slow response from upstream",
    "request completed",
    "session refreshed",
)


class Clock:
    """A deterministic wall clock for generated text (never the real time)."""

    def __init__(self, draws: Draws, start: datetime | None = None) -> None:
        self._draws = draws
        self.now = start or datetime(2026, 3, 1, tzinfo=UTC) + timedelta(minutes=draws.integer(0, 60 * 24 * 200))

    def tick(self, max_ms: int = 900) -> str:
        self.now += timedelta(milliseconds=self._draws.integer(1, max_ms))
        return self.stamp()

    def stamp(self) -> str:
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"


def filler_pod(draws: Draws, deployment: str) -> str:
    return f"{deployment}-{draws.token(10, HEX)}-{draws.token(5, BASE32)}"


def trace_id(draws: Draws) -> str:
    return draws.token(32, HEX)


def request_id(draws: Draws) -> str:
    return f"{draws.token(8, HEX)}-{draws.token(4, HEX)}-{draws.token(4, HEX)}-{draws.token(12, HEX)}"


def log_line(draws: Draws, clock: Clock, service: str, *, level: str | None = None, message: str | None = None) -> str:
    lvl = level or draws.choice(LEVELS)
    msg = message or draws.choice(MESSAGES)
    return (
        f"{clock.tick()} {lvl:<5} [{service}] {msg} route={draws.choice(ROUTES)} "
        f"status={200 if lvl in ('DEBUG', 'INFO') else draws.choice((429, 500, 502, 503, 504))} "
        f"latency_ms={draws.integer(2, 2500)} trace={trace_id(draws)} req={request_id(draws)}"
    )


def json_log_line(draws: Draws, clock: Clock, service: str, **extra: Any) -> str:
    body = {
        "ts": clock.tick(),
        "level": draws.choice(LEVELS).lower(),
        "service": service,
        "msg": draws.choice(MESSAGES),
        "route": draws.choice(ROUTES),
        "duration_ms": draws.integer(2, 2500),
        "trace_id": trace_id(draws),
    } | extra
    return json.dumps(body, sort_keys=True)


def fill_lines(make_line: Callable[[], str], n_bytes: int) -> list[str]:
    """Lines from ``make_line`` until they add up to about ``n_bytes`` (newlines included)."""
    lines: list[str] = []
    size = 0
    while size < n_bytes:
        line = make_line()
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    return lines


def insert_at_depth(lines: list[str], needles: Sequence[str], draws: Draws, low: float, high: float) -> list[str]:
    """``lines`` with ``needles`` inserted, in order and close together, at a relative depth drawn
    in [low, high] (0 = first line, 1 = last)."""
    at = int(len(lines) * (low + (high - low) * draws.uniform()))
    out = list(lines)
    for offset, needle in enumerate(needles):
        out.insert(min(at + offset * draws.integer(1, 4), len(out)), needle)
    return out


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A kubectl-style table: upper-case headers, columns padded with at least three spaces."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


def psql_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A psql-style result with a row count footer."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = lambda r: " " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))  # noqa: E731
    sep = "-" + "-+-".join("-" * w for w in widths) + "-"
    return "\n".join([line(cells[0]), sep, *(line(r) for r in cells[1:]), f"({len(rows)} rows)"])


def json_body(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True)


def stack_trace(draws: Draws, exception: str, message: str, *, language: str = "java", frames: int = 12) -> str:
    packages = ("com.shop.checkout", "com.shop.payments", "io.netty.channel", "org.springframework.web")
    if language == "python":
        lines = ["Traceback (most recent call last):"]
        for _ in range(frames):
            mod = draws.choice(("app/handlers.py", "app/store.py", "lib/client.py", "lib/retry.py"))
            func = draws.choice(("handle", "fetch", "call", "run"))
            lines.append(f'  File "/srv/{mod}", line {draws.integer(10, 900)}, in {func}')
        lines.append(f"{exception}: {message}")
        return "\n".join(lines)
    lines = [f"{exception}: {message}"]
    for _ in range(frames):
        pkg = draws.choice(packages)
        cls = draws.choice(("Handler", "Client", "Service", "Repository", "Pipeline"))
        method = draws.choice(("handle", "invoke", "process", "read"))
        lines.append(f"\tat {pkg}.{cls}.{method}({cls}.java:{draws.integer(20, 800)})")
    return "\n".join(lines)


def metric_series(draws: Draws, clock: Clock, name: str, labels: str, points: int, base: float,
                  jump_at: int | None = None, jump_to: float | None = None) -> str:
    """A Prometheus-style range result: one ``timestamp value`` line per point."""
    lines = [f"{name}{{{labels}}}"]
    for i in range(points):
        level = jump_to if jump_at is not None and jump_to is not None and i >= jump_at else base
        value = max(0.0, level * (1 + 0.08 * draws.normal()))
        lines.append(f"  {clock.tick(60_000)}  {value:.4f}")
    return "\n".join(lines)


def fit(text: str, limit: int) -> str:
    """``text`` cut at a line end to at most ``limit`` characters (for filler-only outputs)."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[:cut] if cut > 0 else text[:limit]


def facts_within_cap(payload: str, values: Sequence[str], cap: int) -> str:
    """``payload`` as a tool behind a ``cap``-character output limit shows it to an agent that queries
    for the incident: when a value the step produces sits where `cap_output` would cut the middle, the
    lines from the first to the last line holding one (or, when those are too many, only the lines
    holding one) move to the start of the kept tail (tools print the newest lines last, and the
    incident's are the newest that matter). Anything else is left as it is, so an output within the
    cap, or whose facts survive it, does not change."""
    if cap <= 0 or len(payload) <= cap or all(v in cap_output(payload, cap) for v in values):
        return payload
    lines = payload.split("\n")
    hits = [i for i, line in enumerate(lines) if any(v in line for v in values)]
    tail = cap - cap // 2
    block = lines[hits[0]:hits[-1] + 1]
    rest = lines[:hits[0]] + lines[hits[-1] + 1:]
    if len("\n".join(block)) + TAIL_MARGIN_CHARS > tail:
        # The lines are too far apart to move as one block: move only those that hold a value.
        picked = set(hits)
        block = [lines[i] for i in hits]
        rest = [line for i, line in enumerate(lines) if i not in picked]
    room = tail - len("\n".join(block)) - TAIL_MARGIN_CHARS
    if room < 0:  # even those lines are longer than any tail: leave the text alone
        return payload
    after, used = 0, 0
    while after < len(rest) and used + len(rest[-1 - after]) + 1 <= room:
        used += len(rest[-1 - after]) + 1
        after += 1
    return "\n".join(rest[:len(rest) - after] + block + rest[len(rest) - after:])
