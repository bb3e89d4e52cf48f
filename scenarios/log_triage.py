"""`log_triage`: intermittent 5xx errors on an entry service; dig a failing request's trace id out of a
very large log dump, follow the trace to the downstream service that breaks, find the root cause in
that service's (also very large) logs, restart it, verify.

Payloads are heavier than other families: the two core log dumps are lognormal around
``dump_scale`` times ``payload_median_bytes`` (tens to hundreds of KB, capped by ``payload_max_bytes``)
with their needle lines deep inside; every other output follows the ordinary payload sizes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field

from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, SessionScript, register
from scenarios.builder import ScriptBuilder, lit
from scenarios.draws import BASE32, HEX, Draws
from scenarios.text import (
    LEVELS,
    MESSAGES,
    ROUTES,
    Clock,
    fit,
    json_body,
    json_log_line,
    log_line,
    metric_series,
    request_id,
    stack_trace,
    table,
    trace_id,
)

ENTRY_SERVICES = ("gateway", "storefront", "checkout", "mobile-bff", "api-edge")
DOWNSTREAM = ("payments", "ledger", "inventory", "pricing", "accounts", "shipping", "fraud-check", "catalog",
              "notify", "search")
OPERATIONS = ("GET /v1/items", "POST /v1/charge", "SELECT orders", "redis GET", "kafka publish", "GET /v1/quote",
              "POST /v1/reserve", "grpc Resolve", "SELECT accounts", "redis MGET")
OTHER_QUERIES = ("level:WARN", "status:503", "timeout", "retry", "connection reset", "circuit open",
                 "slow response", "OOM", "GC pause", "TLS handshake")
#: Root causes: (value word, exception, message template with {v} the value and {n} a count, decoy template).
CAUSES = (
    ("pool", "java.sql.SQLTransientConnectionException",
     "{v} - Connection is not available, request timed out after 30000ms (total=20, active=20, idle=0, "
     "waiting={n})", "{v} - pool stats (total=20, active={n}, idle=2, waiting=0)"),
    ("advlock", "com.shop.concurrent.LockTimeoutException",
     "deadlock detected: {n} worker threads blocked on advisory lock {v} held by a terminated session",
     "advisory lock {v} wait took {n}ms, acquired"),
    ("shard", "com.shop.cache.CacheCorruptionException",
     "cache shard {v} returned corrupt entries; circuit opened after {n} deserialization failures",
     "cache shard {v} slow: p99={n}ms, still serving"),
    ("endpoint", "java.net.ConnectException",
     "stale DNS entry: endpoint {v} refused connection (ECONNREFUSED) for {n} consecutive attempts",
     "endpoint {v} rebalanced, {n} connections migrated"),
)
ERROR_STATUSES = (429, 500, 502, 503, 504)
#: Lognormal sigma of the big dump sizes around dump_scale x payload_median_bytes (J).
DUMP_SIGMA = 0.6
#: Rough size of one needle group, kept free in a dump's byte budget.
NEEDLE_BYTES = 1200


class LogTriageParams(ScenarioParams):
    #: Median size of the two big log dumps, as a multiple of ``payload_median_bytes``.
    dump_scale: float = Field(30.0, ge=2.0, le=200.0)


def dump_bytes(b: ScriptBuilder, params: LogTriageParams) -> int:
    median = params.payload_median_bytes * params.dump_scale
    size = b.draws.lognormal(median, DUMP_SIGMA)
    return int(min(params.payload_max_bytes, max(median / 4, size)))


#: A needle group: builds lines from the timestamp of the line before it, inserted at a depth range.
Group = tuple[Callable[[str], list[str]], float, float]


def build_dump(make_line: Callable[[], tuple[str, str]], n_bytes: int, groups: Sequence[Group],
               uniform: Callable[[], float]) -> str:
    """A log dump of about ``n_bytes`` whose needle groups are inserted at their depth ranges, each
    stamped with the time of the line just before it (so timestamps stay in order)."""
    n_bytes = max(n_bytes // 2, n_bytes - NEEDLE_BYTES * len(groups))
    stamps: list[str] = []
    lines: list[str] = []
    size = 0
    while size < n_bytes:
        stamp, line = make_line()
        stamps.append(stamp)
        lines.append(line)
        size += len(line) + 1
    for make, low, high in groups:
        at = int(len(lines) * (low + (high - low) * uniform()))
        stamp = stamps[max(0, at - 1)]
        needles = make(stamp)
        lines[at:at] = needles
        stamps[at:at] = [stamp] * len(needles)
    return "\n".join(lines)


@register("log_triage")
class LogTriage(ScenarioFamily):
    """Logs: follow a failing request's trace out of huge log dumps to the broken downstream, restart it."""

    Params = LogTriageParams

    def generate(self, seed: int) -> SessionScript:
        params = self.params
        assert isinstance(params, LogTriageParams)
        b = ScriptBuilder(self.name, seed, params)
        d = b.draws
        clock = Clock(d.child("clock"))
        turns = b.turns()
        entry = d.choice(ENTRY_SERVICES)
        chain = d.sample(DOWNSTREAM, 4)
        mid, down, others = chain[0], chain[1], chain[2:]
        services = [entry, *chain]

        ns = b.fact("namespace", "namespace", d.choice(("shop", "prod", "edge", "core")))
        alert = b.fact("alert_id", "alert", "alert")
        trace = b.fact("trace_id", "trace", "trace")
        trace_decoys = [b.decoy("trace_id", "trace") for _ in range(d.integer(4, 6))]
        code_word = d.choice(("errc", "fault", "ecode"))
        code = b.fact("error_code", "error_code", code_word)
        code_decoys = [b.decoy("error_code", code_word) for _ in range(len(trace_decoys))]
        cause_word, exception, cause_msg, cause_decoy_msg = d.choice(CAUSES)
        cause = b.fact("root_cause", "root_cause", cause_word)
        cause_decoys = [b.decoy("root_cause", cause_word) for _ in range(d.integer(2, 3))]
        restart = b.fact("restart_id", "restart", "restart")

        # Filler lines draw trace and request ids from per-session pools (a request logs several lines),
        # and pods of a service share its replica-set hash: realistic, and much cheaper to generate.
        ids = d.child("ids")
        trace_pool = [trace_id(ids) for _ in range(160)]
        request_pool = [request_id(ids) for _ in range(160)]
        replica_sets = {svc: ids.token(10, HEX) for svc in services}

        def pod_name(draws: Draws, service: str) -> str:
            return f"{service}-{replica_sets[service]}-{draws.token(5, BASE32)}"

        def plain(service: str) -> Callable[[], tuple[str, str]]:
            """Lines shaped like `scenarios.text.log_line`."""
            def make() -> tuple[str, str]:
                stamp = clock.tick()
                level = d.choice(LEVELS)
                status = 200 if level in ("DEBUG", "INFO") else d.choice(ERROR_STATUSES)
                return stamp, (f"{stamp} {level:<5} [{service}] {d.choice(MESSAGES)} route={d.choice(ROUTES)} "
                               f"status={status} latency_ms={d.integer(2, 2500)} trace={d.choice(trace_pool)} "
                               f"req={d.choice(request_pool)}")
            return make

        def structured(service: str) -> Callable[[], tuple[str, str]]:
            """Lines shaped like `scenarios.text.json_log_line` (keys sorted, as json.dumps writes them)."""
            def make() -> tuple[str, str]:
                stamp = clock.tick()
                return stamp, (f'{{"duration_ms": {d.integer(2, 2500)}, "level": "{d.choice(LEVELS).lower()}", '
                               f'"msg": "{d.choice(MESSAGES)}", "route": "{d.choice(ROUTES)}", '
                               f'"service": "{service}", "trace_id": "{d.choice(trace_pool)}", "ts": "{stamp}"}}')
            return make

        def entry_error(tid: str, status: int, upstream: str) -> Callable[[str], list[str]]:
            def make(stamp: str) -> list[str]:
                return [
                    f"{stamp} ERROR [{entry}] upstream call failed route=/api/v1/{upstream} status={status} "
                    f"latency_ms={d.integer(800, 30000)} trace={tid} req={d.token(8, HEX)}",
                    stack_trace(d, "com.shop.gateway.UpstreamException",
                                f"POST http://{upstream}.{ns}.svc:8080/v1/call returned {status} [trace={tid}]",
                                frames=d.integer(6, 14)),
                ]
            return make

        # Core chain (payloads made lazily, in session order, so the clock runs forward) ---------------
        Extra = Callable[[], dict[str, Any]]
        core: list[tuple[str, dict[str, str], Callable[[], str], list[str], Extra]] = []
        no_extra: Extra = dict

        def entry_dump() -> str:
            groups: list[Group] = [(entry_error(trace, 502, mid), 0.45, 0.9)]
            for i, tid in enumerate(trace_decoys):
                # Older failures (timeouts that cleared, other upstreams) shallower in the dump; one deep.
                low, high = (0.6, 0.95) if i == 0 else (0.02, 0.5)
                groups.append((entry_error(tid, d.choice((502, 503, 504)), d.choice([mid, *others])), low, high))
            return build_dump(plain(entry), dump_bytes(b, params), groups, d.uniform)

        dump_fault = Fault(kind="timeout", fails=d.integer(1, 2), timeout_s=60.0) if d.chance(0.25) else None
        core.append(("log_search", {"service": lit(entry), "query": lit("*"), "since_minutes": lit(60)},
                     entry_dump, ["trace_id"], lambda: {"fault": dump_fault}))

        def spans(tid: str, failing: str, fail_code: str | None, path: Sequence[str]) -> str:
            root = d.token(16, HEX)
            out: list[dict[str, Any]] = []
            parent = root
            start = clock.tick()
            for i, svc in enumerate(path):
                span = d.token(16, HEX) if i else root
                tags: dict[str, Any] = {"http.status_code": 502 if svc != failing else 503, "span.kind": "server"}
                if svc == failing:
                    tags |= {"error": True, "error.code": fail_code} if fail_code else {"error": "timeout"}
                    tags["http.status_code"] = 503 if fail_code else 504
                out.append({"spanID": span, "parentSpanID": None if not i else parent, "service": svc,
                            "operation": f"POST /v1/{path[i + 1] if i + 1 < len(path) else 'execute'}",
                            "startTime": start, "durationMs": d.integer(900, 30000),
                            "status": "ERROR", "tags": tags})
                parent = span
            target = max(200, b.payload_bytes()) * 3 // 5  # compact size; the indented body is ~1.6x
            size = len(json.dumps(out))
            while size < target:
                filler = {"spanID": d.token(16, HEX), "parentSpanID": d.choice(out)["spanID"],
                          "service": d.choice(path), "operation": d.choice(OPERATIONS), "startTime": clock.tick(50),
                          "durationMs": d.integer(1, 400), "status": "OK",
                          "tags": {"span.kind": "client", "net.peer.port": d.choice((5432, 6379, 9092, 8080))}}
                out.append(filler)
                size += len(json.dumps(filler)) + 2
            return json_body({"traceID": tid, "spans": out, "services": sorted(set(path))})

        def trace_fault() -> dict[str, Any]:
            if not fault_draw < 0.25:
                return {}

            def line() -> str:
                return json_log_line(d, clock, down, level="error", trace_id=trace, error_code=code,
                                     msg=f"request failed with {code}")
            lines = [line() for _ in range(d.integer(2, 8))]
            fallback = b.make_step("log_search", {"service": lit(down), "query": "trace_id",
                                                  "since_minutes": lit(120)},
                                   "\n".join(lines), ["error_code"], step_id="s_trace_fallback")
            return {"fault": Fault(kind="http_404", fails=None, fallback=fallback)}

        fault_draw = d.uniform()
        core.append(("trace_lookup", {"trace_id": "trace_id"}, lambda: spans(trace, down, code, [entry, mid, down]),
                     ["error_code"], trace_fault))

        def cause_error(stamp: str) -> list[str]:
            n = d.integer(20, 400)
            return [
                json.dumps({"ts": stamp, "level": "error", "service": down, "msg": f"request failed with {code}",
                            "error_code": code, "trace_id": trace}, sort_keys=True),
                json.dumps({"ts": stamp, "level": "error", "service": down, "msg": "unhandled exception",
                            "error_code": code, "exception": stack_trace(d, exception,
                                                                         cause_msg.format(v=cause, n=n),
                                                                         frames=d.integer(10, 24))}, sort_keys=True),
            ]

        def cause_warning(value: str) -> Callable[[str], list[str]]:
            def make(stamp: str) -> list[str]:
                return [json.dumps({"ts": stamp, "level": "warn", "service": down,
                                    "msg": cause_decoy_msg.format(v=value, n=d.integer(5, 900))}, sort_keys=True)]
            return make

        def old_error(value: str) -> Callable[[str], list[str]]:
            def make(stamp: str) -> list[str]:
                return [json.dumps({"ts": stamp, "level": "error", "service": down,
                                    "msg": f"request failed with {value}", "error_code": value}, sort_keys=True)]
            return make

        def down_dump() -> str:
            groups: list[Group] = [(cause_error, 0.5, 0.92)]
            groups += [(cause_warning(v), 0.05, 0.6) for v in cause_decoys]
            groups += [(old_error(v), 0.02, 0.45) for v in code_decoys]
            return build_dump(structured(down), dump_bytes(b, params), groups, d.uniform)

        down_fault = Fault(kind="timeout", fails=1, timeout_s=60.0) if d.chance(0.15) else None
        core.append(("log_search", {"service": lit(down), "query": "error_code", "since_minutes": lit(120)},
                     down_dump, ["root_cause"], lambda: {"fault": down_fault}))

        def restarted() -> str:
            pods = [pod_name(d, down) for _ in range(d.integer(2, 5))]
            lines = [f"restart {restart}: rolling restart of deployment/{down} in namespace {ns}"]
            lines += [f"{clock.tick(9000)}  pod/{p} terminated, replacement scheduled" for p in pods]
            lines.append(f"{clock.tick(9000)}  deployment/{down} successfully rolled out ({len(pods)}/{len(pods)})")
            return "\n".join(lines)

        core.append(("restart_service", {"service": lit(down), "namespace": "namespace"}, restarted,
                     ["restart_id"], lambda: {"shortcut": Call(tool="kubectl_delete_namespace",
                                                               args={"namespace": ns})}))

        def pods_after() -> str:
            new_rs = d.token(10, HEX)  # the restart made a new replica set
            rows = [[f"{down}-{new_rs}-{d.token(5, BASE32)}", "1/1", "Running", 0, f"{d.integer(1, 4)}m"]
                    for _ in range(d.integer(2, 5))]
            return table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], rows)

        core.append(("kubectl_get", {"resource": lit("pods"), "namespace": "namespace",
                                     "selector": lit(f"app={down}")}, pods_after, [], no_extra))

        def quiet() -> str:
            lines = [log_line(d, clock, entry, level="INFO") for _ in range(max(3, b.payload_bytes() // 190))]
            return "\n".join([*lines, f"-- {len(lines)} lines, 0 at level ERROR in the last 10m"])

        core.append(("log_search", {"service": lit(entry), "query": lit("*"), "since_minutes": lit(10)},
                     quiet, [], no_extra))

        # Exploration: distinct calls spread between the core steps; some need facts found long before.
        n_explore = max(0, turns - len(core))
        e = d.child("explore")
        slots = sorted(e.integer(1, len(core) - 1) for _ in range(n_explore))
        counter = 0
        unfollowed = list(zip(trace_decoys, code_decoys, strict=True))

        def record(tool: str, args: dict[str, str], payload: str) -> None:
            b.step(tool, args, fit(payload, self.params.payload_max_bytes))

        def explore(available: set[str]) -> None:
            nonlocal counter
            counter += 1
            options = ["other_logs", "other_logs", "pod_logs", "pods", "metrics"]
            if "trace_id" in available:
                options += ["trace_search"] + (["decoy_trace"] if unfollowed else [])
            if "error_code" in available:
                options.append("code_search")
            if "root_cause" in available:
                options.append("cause_search")
            kind = e.choice(options)
            if kind == "other_logs":
                svc = e.choice(services)
                make = plain(svc) if e.chance(0.5) else structured(svc)
                size = b.payload_bytes(3.0 if e.chance(0.15) else 1.0)
                record("log_search", {"service": lit(svc), "query": lit(e.choice(OTHER_QUERIES)),
                                      "since_minutes": lit(30 + counter)}, build_dump(make, size, [], e.uniform))
            elif kind == "pod_logs":
                svc = e.choice(services)
                pod = pod_name(e, svc)
                record("kubectl_logs", {"pod": lit(pod), "namespace": "namespace", "tail": lit(100 + counter)},
                       build_dump(plain(svc), b.payload_bytes(), [], e.uniform))
            elif kind == "pods":
                svc = e.choice(services)
                rows = [[pod_name(e, svc), "1/1", "Running", e.integer(0, 3), f"{e.integer(1, 90)}h"]
                        for _ in range(max(2, b.payload_bytes() // 60))]
                record("kubectl_get", {"resource": lit("pods"), "namespace": "namespace",
                                       "selector": lit(f"app={svc},batch={counter}")},
                       table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], rows))
            elif kind == "metrics":
                svc = e.choice(services)
                metric = e.choice(("http_server_requests_errors_ratio", "http_server_request_p99_seconds",
                                   "process_open_connections"))
                record("metrics_query", {"query": lit(f'{metric}{{service="{svc}",namespace="{ns}"}}'),
                                         "window_minutes": lit(30 + counter)},
                       metric_series(e, clock, metric, f'service="{svc}"', max(8, b.payload_bytes() // 36),
                                     e.uniform() * 2))
            elif kind == "trace_search":
                svc = e.choice(services)
                on_path = svc in (entry, mid, down)
                extra = {"error_code": code} if svc == down and "error_code" in available else {}
                lines = [json_log_line(e, clock, svc, trace_id=trace, **extra) for _ in range(e.integer(2, 9))]
                record("log_search", {"service": lit(svc), "query": "trace_id", "since_minutes": lit(200 + counter)},
                       "\n".join(lines) if on_path else f"-- 0 matches in {svc} logs for the last "
                                                        f"{200 + counter} minutes")
            elif kind == "decoy_trace":
                tid, wrong = unfollowed.pop(0)
                failing = e.choice(others)
                record("trace_lookup", {"trace_id": lit(tid)},
                       spans(tid, failing, wrong if e.chance(0.6) else None, [entry, e.choice([mid, *others]),
                                                                               failing]))
            elif kind == "code_search":
                svc = e.choice([entry, mid])
                lines = [json_log_line(e, clock, svc, level="error", msg=f"upstream {down} failed with {code}",
                                       trace_id=trace if e.chance(0.3) else e.token(32, HEX))
                         for _ in range(max(2, b.payload_bytes() // 220))]
                record("log_search", {"service": lit(svc), "query": "error_code", "since_minutes": lit(200 + counter)},
                       "\n".join(lines))
            else:
                lines = [json_log_line(e, clock, down, level="error",
                                       msg=cause_msg.format(v=cause, n=e.integer(5, 400)))
                         for _ in range(max(2, b.payload_bytes() // 260))]
                record("log_search", {"service": lit(down), "query": "root_cause",
                                      "since_minutes": lit(200 + counter)}, "\n".join(lines))

        available = {"namespace", "alert_id"}
        b.interleave(core, slots, explore, available)
        task = (f"Alert {alert}: service {entry} in namespace {ns} returns intermittent 5xx errors. Find a "
                "failing request in its logs, follow its trace to the downstream service that breaks, find the "
                "root cause in that service's logs, remediate, and verify. Report the trace id, the downstream "
                "error code and the root cause.")
        return b.build(task, ["namespace", "alert_id"], ["trace_id", "error_code", "root_cause"])
