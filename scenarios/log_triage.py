"""`log_triage`: intermittent 5xx errors on an entry service; dig a failing request's trace id out of a
very large log dump, follow the trace to the downstream service that breaks, find the root cause in
that service's (also very large) logs, restart it, verify.

Payloads are heavier than other families: the two core log dumps are lognormal around
``dump_scale`` times ``payload_median_bytes`` (tens to hundreds of KB, capped by ``payload_max_bytes``)
with their needle lines deep inside; every other output follows the ordinary payload sizes.

Look-ups (docs/model.md 1): ``root_cause`` is latent, inferred from the symptoms the
downstream logs show rather than printed next to the failing trace; every other fact is literal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import Field

from harness.core.tools import ToolArgs, ToolRegistry
from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, Series, SessionScript, register
from scenarios.builder import CoreStep, ScriptDraft, lit
from scenarios.draws import BASE32, HEX, Draws
from scenarios.ops_tools import Name, Namespace, ops_tools
from scenarios.text import (
    LEVELS,
    MESSAGES,
    ROUTES,
    json_body,
    json_log_line,
    log_line,
    metric_series,
    request_id,
    stack_trace,
    table,
    trace_id,
)

#: The teams' namespaces a session may run in (the value is one of them and a suffix).
NAMESPACES = ("shop", "prod", "edge", "core")

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
POD_COLUMNS = ("NAME", "READY", "STATUS", "RESTARTS", "AGE")
#: Lognormal sigma of the big dump sizes around dump_scale x payload_median_bytes (J).
DUMP_SIGMA = 0.6
#: Rough size of one needle group, kept free in a dump's byte budget.
NEEDLE_BYTES = 1200


class RestartService(ToolArgs):
    description = "Restart a service's pods."
    median_latency_s = 8.0
    service: Name
    namespace: Namespace


#: The tools a log_triage session calls: kubectl, logs, traces and metrics, and the fix its own.
TOOLS = ToolRegistry({
    **ops_tools("kubectl_get", "kubectl_logs", "kubectl_delete_namespace", "log_search", "trace_lookup",
                "metrics_query"),
    "restart_service": RestartService,
}, where=__name__)


class LogTriageParams(ScenarioParams):
    #: Median size of the two big log dumps, as a multiple of ``payload_median_bytes``.
    dump_scale: float = Field(30.0, ge=2.0, le=200.0)


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


class LogTriageDraft(ScriptDraft):
    """One log_triage script being generated: the incident's facts, and one method per kind of step."""

    def __init__(self, scenario: str, seed: int, params: LogTriageParams, series: Series | None = None) -> None:
        super().__init__(scenario, seed, params, series)
        self.params = params
        b, d = self.builder, self.draws
        self.entry = d.choice(ENTRY_SERVICES)
        chain = d.sample(DOWNSTREAM, 4)
        #: The request path is entry -> mid -> down; down is the service that breaks.
        self.mid, self.down, self.others = chain[0], chain[1], chain[2:]
        self.services = [self.entry, *chain]

        # Durable: the team's namespace stays from one incident to the next (the task states it).
        self.namespace = b.fact("namespace", "namespace", d.choice(NAMESPACES),
                                durable=lambda s: s.choice(NAMESPACES) + "-" + s.token(4, BASE32))
        self.alert_id = b.fact("alert_id", "alert", "alert")
        self.trace_id = b.fact("trace_id", "trace", "trace")
        self.trace_decoys = [b.decoy("trace_id", "trace") for _ in range(d.integer(4, 6))]
        code_word = d.choice(("errc", "fault", "ecode"))
        self.error_code = b.fact("error_code", "error_code", code_word)
        self.error_code_decoys = [b.decoy("error_code", code_word) for _ in range(len(self.trace_decoys))]
        cause_word, self.exception, self.cause_message, self.cause_decoy_message = d.choice(CAUSES)
        self.root_cause = b.fact("root_cause", "root_cause", cause_word, lookup="latent")
        self.root_cause_decoys = [b.decoy("root_cause", cause_word) for _ in range(d.integer(2, 3))]
        self.restart_id = b.fact("restart_id", "restart", "restart")

        # Filler lines draw trace and request ids from per-session pools (a request logs several lines),
        # and pods of a service share its replica-set hash: realistic, and much cheaper to generate.
        ids = d.child("ids")
        self.trace_pool = [trace_id(ids) for _ in range(160)]
        self.request_pool = [request_id(ids) for _ in range(160)]
        self.replica_sets = {svc: ids.token(10, HEX) for svc in self.services}

        # Faults are drawn now; one with a fallback is made when its step's turn comes, since the
        # fallback's text follows the clock.
        self.dump_fault = Fault(kind="timeout", fails=d.integer(1, 2), timeout_s=60.0) if d.chance(0.25) else None
        self.trace_fault_draw = d.uniform()
        self.down_fault = Fault(kind="timeout", fails=1, timeout_s=60.0) if d.chance(0.15) else None
        #: Decoy (trace id, error code) pairs no exploration step has looked up yet.
        self.unfollowed = list(zip(self.trace_decoys, self.error_code_decoys, strict=True))

    def script(self) -> SessionScript:
        # Core chain: entry logs -> trace -> downstream logs -> restart -> pods -> quiet entry logs.
        # Each step is made when its turn comes, so the clock runs forward.
        core = [self._entry_dump, self._follow_trace, self._downstream_dump, self._restart, self._pods_after,
                self._quiet_entry_logs]
        # Exploration: distinct calls spread between the core steps; some need facts found long before.
        self.builder.interleave(core, self.exploration_slots(len(core)), self._explore, {"namespace", "alert_id"})
        task = (f"Alert {self.alert_id}: service {self.entry} in namespace {self.namespace} returns intermittent "
                "5xx errors. Find a failing request in its logs, follow its trace to the downstream service that "
                "breaks, find the root cause in that service's logs, remediate, and verify. Report the trace id, "
                "the downstream error code and the root cause.")
        return self.builder.build(task, ["namespace", "alert_id"], ["trace_id", "error_code", "root_cause"])

    # Text ---------------------------------------------------------------------------------------

    def _dump_bytes(self) -> int:
        """The size of a big log dump: lognormal around ``dump_scale`` ordinary payloads."""
        params = self.params
        median = params.payload_median_bytes * params.dump_scale
        size = self.draws.lognormal(median, DUMP_SIGMA)
        return int(min(params.payload_max_bytes, max(median / 4, size)))

    def _pod_name(self, draws: Draws, service: str) -> str:
        return f"{service}-{self.replica_sets[service]}-{draws.token(5, BASE32)}"

    def _plain_lines(self, service: str) -> Callable[[], tuple[str, str]]:
        """Lines shaped like `scenarios.text.log_line`."""
        d, clock = self.draws, self.clock

        def make() -> tuple[str, str]:
            stamp = clock.tick()
            level = d.choice(LEVELS)
            status = 200 if level in ("DEBUG", "INFO") else d.choice(ERROR_STATUSES)
            return stamp, (f"{stamp} {level:<5} [{service}] {d.choice(MESSAGES)} route={d.choice(ROUTES)} "
                           f"status={status} latency_ms={d.integer(2, 2500)} trace={d.choice(self.trace_pool)} "
                           f"req={d.choice(self.request_pool)}")
        return make

    def _structured_lines(self, service: str) -> Callable[[], tuple[str, str]]:
        """Lines shaped like `scenarios.text.json_log_line` (keys sorted, as json.dumps writes them)."""
        d, clock = self.draws, self.clock

        def make() -> tuple[str, str]:
            stamp = clock.tick()
            return stamp, (f'{{"duration_ms": {d.integer(2, 2500)}, "level": "{d.choice(LEVELS).lower()}", '
                           f'"msg": "{d.choice(MESSAGES)}", "route": "{d.choice(ROUTES)}", '
                           f'"service": "{service}", "trace_id": "{d.choice(self.trace_pool)}", "ts": "{stamp}"}}')
        return make

    def _entry_error(self, trace: str, status: int, upstream: str) -> Callable[[str], list[str]]:
        """A needle group of the entry service's log: a failed upstream call and its stack trace."""
        d = self.draws

        def make(stamp: str) -> list[str]:
            return [
                f"{stamp} ERROR [{self.entry}] upstream call failed route=/api/v1/{upstream} status={status} "
                f"latency_ms={d.integer(800, 30000)} trace={trace} req={d.token(8, HEX)}",
                stack_trace(d, "com.shop.gateway.UpstreamException",
                            f"POST http://{upstream}.{self.namespace}.svc:8080/v1/call returned {status} "
                            f"[trace={trace}]", frames=d.integer(6, 14)),
            ]
        return make

    def _cause_error(self, stamp: str) -> list[str]:
        """The needle group of the downstream's log: the failed request and the root-cause exception."""
        d, down, code = self.draws, self.down, self.error_code
        n = d.integer(20, 400)
        return [
            json.dumps({"ts": stamp, "level": "error", "service": down, "msg": f"request failed with {code}",
                        "error_code": code, "trace_id": self.trace_id}, sort_keys=True),
            json.dumps({"ts": stamp, "level": "error", "service": down, "msg": "unhandled exception",
                        "error_code": code,
                        "exception": stack_trace(d, self.exception,
                                                 self.cause_message.format(v=self.root_cause, n=n),
                                                 frames=d.integer(10, 24))}, sort_keys=True),
        ]

    def _cause_warning(self, value: str) -> Callable[[str], list[str]]:
        """A needle group naming a root-cause decoy in a harmless warning."""
        def make(stamp: str) -> list[str]:
            message = self.cause_decoy_message.format(v=value, n=self.draws.integer(5, 900))
            return [json.dumps({"ts": stamp, "level": "warn", "service": self.down, "msg": message},
                               sort_keys=True)]
        return make

    def _old_error(self, value: str) -> Callable[[str], list[str]]:
        """A needle group of an older failure with an error-code decoy."""
        def make(stamp: str) -> list[str]:
            return [json.dumps({"ts": stamp, "level": "error", "service": self.down,
                                "msg": f"request failed with {value}", "error_code": value}, sort_keys=True)]
        return make

    def _spans(self, trace: str, failing: str, fail_code: str | None, path: Sequence[str]) -> str:
        """A trace along ``path`` that fails at ``failing`` (with ``fail_code``, or a timeout)."""
        d, clock = self.draws, self.clock
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
        target = max(200, self.builder.payload_bytes()) * 3 // 5  # compact size; the indented body is ~1.6x
        size = len(json.dumps(out))
        while size < target:
            filler = {"spanID": d.token(16, HEX), "parentSpanID": d.choice(out)["spanID"],
                      "service": d.choice(path), "operation": d.choice(OPERATIONS), "startTime": clock.tick(50),
                      "durationMs": d.integer(1, 400), "status": "OK",
                      "tags": {"span.kind": "client", "net.peer.port": d.choice((5432, 6379, 9092, 8080))}}
            out.append(filler)
            size += len(json.dumps(filler)) + 2
        return json_body({"traceID": trace, "spans": out, "services": sorted(set(path))})

    # Core steps ---------------------------------------------------------------------------------

    def _entry_dump(self) -> CoreStep:
        d, mid = self.draws, self.mid
        groups: list[Group] = [(self._entry_error(self.trace_id, 502, mid), 0.45, 0.9)]
        for i, trace in enumerate(self.trace_decoys):
            # Older failures (timeouts that cleared, other upstreams) shallower in the dump; one deep.
            low, high = (0.6, 0.95) if i == 0 else (0.02, 0.5)
            groups.append((self._entry_error(trace, d.choice((502, 503, 504)), d.choice([mid, *self.others])),
                           low, high))
        text = build_dump(self._plain_lines(self.entry), self._dump_bytes(), groups, d.uniform)
        return CoreStep("log_search", {"service": lit(self.entry), "query": lit("*"), "since_minutes": lit(60)},
                        text, ["trace_id"], {"fault": self.dump_fault})

    def _follow_trace(self) -> CoreStep:
        text = self._spans(self.trace_id, self.down, self.error_code, [self.entry, self.mid, self.down])
        return CoreStep("trace_lookup", {"trace_id": "trace_id"}, text, ["error_code"],
                        {"fault": self._follow_trace_fault()})

    def _follow_trace_fault(self) -> Fault | None:
        """Sometimes the trace is gone (a log search for it in the downstream finds the error code)."""
        if not self.trace_fault_draw < 0.25:
            return None
        d, clock, down, code = self.draws, self.clock, self.down, self.error_code

        def line() -> str:
            return json_log_line(d, clock, down, level="error", trace_id=self.trace_id, error_code=code,
                                 msg=f"request failed with {code}")
        lines = [line() for _ in range(d.integer(2, 8))]
        fallback = self.builder.make_step(
            "log_search", {"service": lit(down), "query": "trace_id", "since_minutes": lit(120)},
            "\n".join(lines), ["error_code"], step_id="s_trace_fallback")
        return Fault(kind="http_404", fails=None, fallback=fallback)

    def _downstream_dump(self) -> CoreStep:
        groups: list[Group] = [(self._cause_error, 0.5, 0.92)]
        groups += [(self._cause_warning(v), 0.05, 0.6) for v in self.root_cause_decoys]
        groups += [(self._old_error(v), 0.02, 0.45) for v in self.error_code_decoys]
        text = build_dump(self._structured_lines(self.down), self._dump_bytes(), groups, self.draws.uniform)
        return CoreStep("log_search",
                        {"service": lit(self.down), "query": "error_code", "since_minutes": lit(120)},
                        text, ["root_cause"], {"fault": self.down_fault})

    def _restart(self) -> CoreStep:
        d, clock, down = self.draws, self.clock, self.down
        pods = [self._pod_name(d, down) for _ in range(d.integer(2, 5))]
        lines = [f"restart {self.restart_id}: rolling restart of deployment/{down} in namespace {self.namespace}"]
        lines += [f"{clock.tick(9000)}  pod/{p} terminated, replacement scheduled" for p in pods]
        lines.append(f"{clock.tick(9000)}  deployment/{down} successfully rolled out ({len(pods)}/{len(pods)})")
        return CoreStep("restart_service", {"service": lit(down), "namespace": "namespace"}, "\n".join(lines),
                        ["restart_id"],
                        {"shortcut": Call(tool="kubectl_delete_namespace", args={"namespace": self.namespace})})

    def _pods_after(self) -> CoreStep:
        d, down = self.draws, self.down
        new_replica_set = d.token(10, HEX)  # the restart made a new replica set
        rows = [[f"{down}-{new_replica_set}-{d.token(5, BASE32)}", "1/1", "Running", 0, f"{d.integer(1, 4)}m"]
                for _ in range(d.integer(2, 5))]
        return CoreStep("kubectl_get", {"resource": lit("pods"), "namespace": "namespace",
                                        "selector": lit(f"app={down}")}, table(POD_COLUMNS, rows), [])

    def _quiet_entry_logs(self) -> CoreStep:
        d, entry = self.draws, self.entry
        lines = [log_line(d, self.clock, entry, level="INFO")
                 for _ in range(max(3, self.builder.payload_bytes() // 190))]
        text = "\n".join([*lines, f"-- {len(lines)} lines, 0 at level ERROR in the last 10m"])
        return CoreStep("log_search", {"service": lit(entry), "query": lit("*"), "since_minutes": lit(10)}, text, [])

    # Exploration steps --------------------------------------------------------------------------

    def _explore(self, available: set[str]) -> None:
        """One exploration step, of a kind drawn among those whose facts are known by now."""
        self.explored += 1
        kinds = ["other_logs", "other_logs", "pod_logs", "pods", "metrics"]
        if "trace_id" in available:
            kinds += ["trace_search"] + (["decoy_trace"] if self.unfollowed else [])
        if "error_code" in available:
            kinds.append("code_search")
        if "root_cause" in available:
            kinds.append("cause_search")
        self.EXPLORATION_STEPS[self.explore_draws.choice(kinds)](self, available)

    def _other_logs(self, available: set[str]) -> None:
        e = self.explore_draws
        svc = e.choice(self.services)
        make = self._plain_lines(svc) if e.chance(0.5) else self._structured_lines(svc)
        size = self.builder.payload_bytes(3.0 if e.chance(0.15) else 1.0)
        self.capped_step("log_search", {"service": lit(svc), "query": lit(e.choice(OTHER_QUERIES)),
                                        "since_minutes": lit(30 + self.explored)},
                         build_dump(make, size, [], e.uniform))

    def _pod_logs(self, available: set[str]) -> None:
        e = self.explore_draws
        svc = e.choice(self.services)
        pod = self._pod_name(e, svc)
        self.capped_step("kubectl_logs", {"pod": lit(pod), "namespace": "namespace", "tail": lit(100 + self.explored)},
                         build_dump(self._plain_lines(svc), self.builder.payload_bytes(), [], e.uniform))

    def _pods(self, available: set[str]) -> None:
        e = self.explore_draws
        svc = e.choice(self.services)
        rows = [[self._pod_name(e, svc), "1/1", "Running", e.integer(0, 3), f"{e.integer(1, 90)}h"]
                for _ in range(max(2, self.builder.payload_bytes() // 60))]
        self.capped_step("kubectl_get", {"resource": lit("pods"), "namespace": "namespace",
                                         "selector": lit(f"app={svc},batch={self.explored}")},
                         table(POD_COLUMNS, rows))

    def _metrics(self, available: set[str]) -> None:
        e = self.explore_draws
        svc = e.choice(self.services)
        metric = e.choice(("http_server_requests_errors_ratio", "http_server_request_p99_seconds",
                           "process_open_connections"))
        self.capped_step("metrics_query", {"query": lit(f'{metric}{{service="{svc}",namespace="{self.namespace}"}}'),
                                           "window_minutes": lit(30 + self.explored)},
                         metric_series(e, self.clock, metric, f'service="{svc}"',
                                       max(8, self.builder.payload_bytes() // 36), e.uniform() * 2))

    def _trace_search(self, available: set[str]) -> None:
        e, explored = self.explore_draws, self.explored
        svc = e.choice(self.services)
        on_path = svc in (self.entry, self.mid, self.down)
        extra = {"error_code": self.error_code} if svc == self.down and "error_code" in available else {}
        lines = [json_log_line(e, self.clock, svc, trace_id=self.trace_id, **extra) for _ in range(e.integer(2, 9))]
        self.capped_step("log_search", {"service": lit(svc), "query": "trace_id", "since_minutes": lit(200 + explored)},
                         "\n".join(lines) if on_path else f"-- 0 matches in {svc} logs for the last "
                                                          f"{200 + explored} minutes")

    def _decoy_trace(self, available: set[str]) -> None:
        e = self.explore_draws
        trace, wrong_code = self.unfollowed.pop(0)
        failing = e.choice(self.others)
        self.capped_step("trace_lookup", {"trace_id": lit(trace)},
                         self._spans(trace, failing, wrong_code if e.chance(0.6) else None,
                                     [self.entry, e.choice([self.mid, *self.others]), failing]))

    def _code_search(self, available: set[str]) -> None:
        e = self.explore_draws
        svc = e.choice([self.entry, self.mid])
        lines = [json_log_line(e, self.clock, svc, level="error",
                               msg=f"upstream {self.down} failed with {self.error_code}",
                               trace_id=self.trace_id if e.chance(0.3) else e.token(32, HEX))
                 for _ in range(max(2, self.builder.payload_bytes() // 220))]
        self.capped_step("log_search", {"service": lit(svc), "query": "error_code",
                                        "since_minutes": lit(200 + self.explored)}, "\n".join(lines))

    def _cause_search(self, available: set[str]) -> None:
        e = self.explore_draws
        lines = [json_log_line(e, self.clock, self.down, level="error",
                               msg=self.cause_message.format(v=self.root_cause, n=e.integer(5, 400)))
                 for _ in range(max(2, self.builder.payload_bytes() // 260))]
        self.capped_step("log_search", {"service": lit(self.down), "query": "root_cause",
                                        "since_minutes": lit(200 + self.explored)}, "\n".join(lines))

    #: Exploration step kind -> the method that makes it.
    EXPLORATION_STEPS: ClassVar[dict[str, Callable[[LogTriageDraft, set[str]], None]]] = {
        "other_logs": _other_logs,
        "pod_logs": _pod_logs,
        "pods": _pods,
        "metrics": _metrics,
        "trace_search": _trace_search,
        "decoy_trace": _decoy_trace,
        "code_search": _code_search,
        "cause_search": _cause_search,
    }


@register("log_triage")
class LogTriage(ScenarioFamily):
    """Logs: follow a failing request's trace out of huge log dumps to the broken downstream, restart it."""

    Params = LogTriageParams
    params: LogTriageParams
    tools = TOOLS

    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        return LogTriageDraft(self.name, seed, self.params, series).script()
