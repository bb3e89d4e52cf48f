"""`deploy_regression`: a service's error rate jumped right after a deploy; find the release, the
previous good one and the config flag the new release turned on, roll back, verify.

The text helpers here (release tables, config diffs, rollout logs) and the rollout tools' contracts
(`ROLLOUT_TOOLS`) are shared with `alert_chain`.

Look-ups (docs/model.md 1): ``culprit_flag`` is latent, the one flag of the config diff that
explains the errors among the others changed in the release; every other fact is literal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import ClassVar

from harness.core.tools import ToolArgs, ToolRegistry
from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, Series, SessionScript, register
from scenarios.builder import CoreStep, ScriptDraft, lit
from scenarios.draws import BASE32, Draws
from scenarios.ops_tools import Limit, Name, Namespace, ops_tools
from scenarios.text import (
    MESSAGES,
    ROUTES,
    Clock,
    fill_lines,
    stack_trace,
    table,
)

#: The teams' namespaces a session may run in (the value is one of them and a suffix).
NAMESPACES = ("shop", "prod", "core", "edge")

SERVICES = ("checkout", "payments", "cart", "search", "inventory", "pricing", "ledger", "notify", "gateway",
            "profile")
OTHER_NAMESPACES = ("default", "monitoring", "ingress", "logging", "batch", "staging")
AUTHORS = ("alice", "bob", "carol", "dmitri", "erin", "farah", "gus", "hana", "ivan", "jules")
COMMIT_MESSAGES = (
    "bump client library", "refactor request validation", "add retry budget to upstream calls",
    "tune connection pool", "fix flaky integration test", "log request ids on error paths",
    "move pricing lookups behind cache", "drop unused endpoint", "update base image",
    "add metrics for queue depth", "tighten input schema", "parallelise fan-out calls",
    "switch serializer", "raise default page size", "clean up feature toggles",
)
#: Config keys that are never facts (fact values all have the ``word-xxxx`` shape).
CONFIG_KEYS = (
    ("server.timeout_ms", "2000", "2500"), ("pool.max_size", "32", "48"), ("cache.ttl_s", "300", "120"),
    ("retry.max_attempts", "3", "5"), ("log.level", "info", "debug"), ("grpc.keepalive_s", "30", "20"),
    ("rate_limit.rps", "800", "1200"), ("upstream.pricing.timeout_ms", "400", "650"),
    ("batch.size", "100", "250"), ("tracing.sample_ratio", "0.05", "0.1"),
)
#: (series name, query template) of the other dashboard panels.
PANELS = (
    ("http_p99_latency_seconds",
     'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{{service="{s}"}}[5m])))'),
    ("container_cpu_cores", 'sum(rate(container_cpu_usage_seconds_total{{container="{s}"}}[5m]))'),
    ("container_memory_working_set_bytes", 'sum(container_memory_working_set_bytes{{container="{s}"}})'),
    ("http_requests_per_second", 'sum(rate(http_requests_total{{service="{s}"}}[5m]))'),
    ("upstream_errors_per_second", 'sum(rate(upstream_errors_total{{service="{s}"}}[5m]))'),
    ("db_pool_in_use_connections", 'avg(db_pool_in_use_connections{{service="{s}"}})'),
    ("gc_pause_seconds_per_second", 'sum(rate(gc_pause_seconds_sum{{service="{s}"}}[5m]))'),
    ("kafka_consumergroup_lag", 'max(kafka_consumergroup_lag{{consumer="{s}"}})'),
)
EXCEPTIONS = (
    ("java.lang.NullPointerException", "Cannot invoke \"PriceRule.apply()\" because \"rule\" is null"),
    ("java.lang.IllegalStateException", "feature path reached without initialised client"),
    ("java.lang.ClassCastException", "class java.lang.String cannot be cast to class java.lang.Long"),
    ("java.util.concurrent.TimeoutException", "upstream call exceeded 250 ms under new code path"),
)
LOG_TERMS = ("status=500", "timeout", "upstream", "retry", "level=ERROR", "connection reset", "panic", "5xx")


# The rollout tools' contracts (alert_chain calls them too).
class DeployStatus(ToolArgs):
    description = "Show a service's rollout status and current release."
    median_latency_s = 0.8
    service: Name
    namespace: Namespace


class ReleaseList(ToolArgs):
    description = "List a service's recent releases."
    median_latency_s = 0.8
    service: Name
    limit: Limit = 20


class ReleaseDiff(ToolArgs):
    description = "Diff the config and code between two releases."
    median_latency_s = 1.0
    service: Name
    from_release: Name
    to_release: Name


class Rollback(ToolArgs):
    description = "Roll a service back to a release."
    median_latency_s = 8.0
    service: Name
    to_release: Name


#: The rollout tools by name.
ROLLOUT_TOOLS: dict[str, type[ToolArgs]] = {
    "deploy_status": DeployStatus,
    "release_list": ReleaseList,
    "release_diff": ReleaseDiff,
    "rollback": Rollback,
}
#: The tools a deploy_regression session calls: kubectl, logs, traces and metrics, and the rollout tools.
TOOLS = ToolRegistry({
    **ops_tools("kubectl_get", "kubectl_describe", "kubectl_delete_namespace", "log_search", "trace_lookup",
                "metrics_query"),
    **ROLLOUT_TOOLS,
}, where=__name__)


class DeployRegressionParams(ScenarioParams):
    pass


# Text shared with alert_chain ---------------------------------------------------------------------
#
# The fillers below make the same shapes as `scenarios.text` (32-hex trace ids, 10-hex/5-base32 pod
# suffixes) from fewer draws, since filler lines make up most of a script's text.

_LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "INFO", "WARN", "ERROR")
_ERROR_STATUS = (429, 500, 502, 503, 504)


def hex_digits(d: Draws, n: int) -> str:
    """``n`` hex digits, 13 from each draw."""
    out = "".join(format(int(d.uniform() * (1 << 52)), "013x") for _ in range((n + 12) // 13))
    return out[:n]


def pod_name(d: Draws, prefix: str) -> str:
    """A filler pod ``<prefix>-<10 hex>-<5 base32>`` (the shape of `scenarios.text.filler_pod`)."""
    word = int(d.uniform() * (1 << 52))
    suffix = "".join(BASE32[(word >> shift) & 31] for shift in (0, 5, 10, 15, 20))
    return f"{prefix}-{format(word >> 12, '010x')[-10:]}-{suffix}"


def fast_log_line(d: Draws, clock: Clock, service: str, *, level: str | None = None,
                  message: str | None = None) -> str:
    """A log line like `scenarios.text.log_line` (timestamp, level, service, route, status, trace)."""
    lvl = level or d.choice(_LEVELS)
    ids = hex_digits(d, 56)
    status = 200 if lvl in ("DEBUG", "INFO") else d.choice(_ERROR_STATUS)
    return (f"{clock.tick()} {lvl:<5} [{service}] {message or d.choice(MESSAGES)} route={d.choice(ROUTES)} "
            f"status={status} latency_ms={d.integer(2, 2500)} trace={ids[:32]} "
            f"req={ids[32:40]}-{ids[40:44]}-{ids[44:48]}-{ids[48:56]}")


def fast_json_log_line(d: Draws, clock: Clock, service: str, **extra: object) -> str:
    """A JSON log line like `scenarios.text.json_log_line`; ``extra`` keys are added or override."""
    body = {"ts": clock.tick(), "level": d.choice(_LEVELS).lower(), "service": service, "msg": d.choice(MESSAGES),
            "route": d.choice(ROUTES), "duration_ms": d.integer(2, 2500), "trace_id": hex_digits(d, 32)} | extra
    return json.dumps(body, sort_keys=True)


def range_series(d: Draws, clock: Clock, name: str, labels: str, points: int, base: float,
           jump_at: int | None = None, jump_to: float | None = None, step_s: int = 60) -> str:
    """A Prometheus-style range result like `scenarios.text.metric_series`, on a fixed step that
    ends at the clock's time (a range query looks back; the clock does not move)."""
    lines = [f"{name}{{{labels}}}"]
    start = clock.now.replace(tzinfo=None, microsecond=0) - timedelta(seconds=step_s * points)
    step = timedelta(seconds=step_s)
    for i in range(points):
        level = jump_to if jump_at is not None and jump_to is not None and i >= jump_at else base
        noise = 0.14 * (d.uniform() + d.uniform() - 1.0)
        lines.append(f"  {(start + step * i).isoformat()}.000Z  {max(0.0, level * (1 + noise)):.4f}")
    return "\n".join(lines)


def log_with_needles(d: Draws, make_line: Callable[[], str], needles: Sequence[Callable[[], str]], n_bytes: int,
                     low: float, high: float) -> str:
    """Filler lines with ``needles`` at a relative depth in [low, high], made in order so that
    timestamps run forward; a few filler lines may sit between the needles."""
    head = int(n_bytes * (low + (high - low) * d.uniform()))
    lines = fill_lines(make_line, head)
    for i, needle in enumerate(needles):
        if i:
            lines += [make_line() for _ in range(d.integer(0, 2))]
        lines.append(needle())
    lines += fill_lines(make_line, n_bytes - head)
    return "\n".join(lines)


def sized_rows(make_row: Callable[[], list[object]], n_bytes: int, row_bytes: int, low: int = 3,
               high: int = 4000) -> list[list[object]]:
    """About ``n_bytes / row_bytes`` rows from ``make_row`` (at least ``low``)."""
    return [make_row() for _ in range(max(low, min(high, n_bytes // row_bytes)))]


def commit_lines(d: Draws, clock: Clock, n_bytes: int) -> list[str]:
    return fill_lines(lambda: f"  {hex_digits(d, 7)}  {clock.tick(3_600_000)}  {d.choice(AUTHORS):<7} "
                              f"{d.choice(COMMIT_MESSAGES)} (#{d.integer(1000, 9999)})", n_bytes)


def error_rate_query(service: str) -> str:
    return (f'sum(rate(http_requests_total{{service="{service}",code=~"5.."}}[5m])) / '
            f'sum(rate(http_requests_total{{service="{service}"}}[5m]))')


def config_diff(d: Draws, clock: Clock, service: str, old: str, new: str,
                flag_changes: Sequence[tuple[str, str, str]], flags_same: Sequence[str], n_bytes: int) -> str:
    """A release diff: a unified diff of the service's YAML config, then the commit range."""
    keys = d.sample(CONFIG_KEYS, d.integer(3, 6))
    changed = keys[: d.integer(1, 2)]
    lines = [
        f"release diff {service}: {old} -> {new}",
        f"commits: {d.integer(3, 40)}  files changed: {d.integer(2, 30)}  "
        f"insertions(+): {d.integer(10, 900)}  deletions(-): {d.integer(5, 400)}",
        "",
        f"--- a/config/{service}.yaml   ({old})",
        f"+++ b/config/{service}.yaml   ({new})",
        f"@@ -1,{len(keys) + 6} +1,{len(keys) + 6} @@",
        "server:",
    ]
    for key, before, after in keys:
        if (key, before, after) in changed:
            lines += [f"-  {key}: {before}", f"+  {key}: {after}"]
        else:
            lines.append(f"   {key}: {before}")
    lines += [f"@@ -{d.integer(20, 40)},8 +{d.integer(20, 40)},8 @@ features:", " features:"]
    entries = [("same", f, "", "") for f in flags_same] + [("chg", f, a, b_) for f, a, b_ in flag_changes]
    for kind, flag, before, after in d.shuffled(entries):
        if kind == "same":
            lines.append(f"   {flag}: {d.choice(('true', 'false'))}")
        else:
            lines += [f"-  {flag}: {before}", f"+  {flag}: {after}"]
    lines += ["", "commits:"]
    lines += commit_lines(d, clock, n_bytes)
    return "\n".join(lines)


def configmap_text(d: Draws, app: str, namespace: str, release: str, flag: str, side_flags: Sequence[str]) -> str:
    """kubectl describe of the app's config map: the flags as the release set them."""
    values = [(flag, "true"), (side_flags[0], "40"), *((f, d.choice(("true", "false"))) for f in side_flags[1:])]
    return "\n".join([
        f"Name:         {app}-config", f"Namespace:    {namespace}", f"Labels:       app={app}",
        f"Annotations:  deploy/release: {release}",
        f"              deploy/changed-keys: features.{flag}, features.{side_flags[0]}",
        "", "Data", "====", f"{app}.yaml:", "----", "server:",
        *(f"  {k}: {v}" for k, v, _ in d.sample(CONFIG_KEYS, 5)),
        "features:",
        *(f"  {f}: {v}" for f, v in d.shuffled(values)),
        "", "Events:  <none>",
    ])


def release_table(d: Draws, start: datetime, rows: Sequence[tuple[str, str]]) -> str:
    """``rows``: (release id, status), newest first; the newest was created at ``start``."""
    out = []
    when = start
    for rel, status in rows:
        out.append([rel, when.strftime("%Y-%m-%dT%H:%M:%SZ"), d.choice(AUTHORS), hex_digits(d, 7), status,
                    d.choice(COMMIT_MESSAGES)])
        when -= timedelta(minutes=d.integer(180, 4320))
    return table(["RELEASE", "CREATED", "AUTHOR", "COMMIT", "STATUS", "NOTES"], out)


def status_text(d: Draws, clock: Clock, service: str, namespace: str, release: str, n_bytes: int,
                *, pod_prefix: str | None = None) -> str:
    """deploy_status: rollout summary and the replicas with their release label."""
    tag = f"{d.integer(1, 9)}.{d.integer(0, 40)}.{d.integer(0, 20)}"
    prefix = pod_prefix or service
    replicas = sized_rows(lambda: [pod_name(d, prefix), "1/1", "Running", release, f"{d.integer(1, 90)}m"],
                          n_bytes, 90, low=2, high=600)
    return "\n".join([
        f"Service:      {service}",
        f"Namespace:    {namespace}",
        f"Release:      {release}   (current)",
        f"Image:        registry.local/{service}:{tag}",
        f"Rollout:      complete ({len(replicas)}/{len(replicas)} replicas updated, {len(replicas)} available)",
        f"Started:      {clock.tick(600_000)}",
        f"Finished:     {clock.tick(300_000)}",
        "Strategy:     RollingUpdate maxSurge=25% maxUnavailable=0",
        "Replicas:",
        table(["POD", "READY", "STATUS", "RELEASE", "AGE"], replicas),
    ])


def rollback_text(d: Draws, clock: Clock, service: str, rollback_id: str, old: str, new: str, n_bytes: int,
                  *, pod_prefix: str | None = None) -> str:
    lines = [f"rollback {rollback_id} accepted", f"service:   {service}", f"from:      {old}", f"to:        {new}",
             "strategy:  RollingUpdate (maxUnavailable=0)", ""]
    lines += fill_lines(lambda: f"  {clock.tick(4000)}  replica {pod_name(d, pod_prefix or service)} "
                                f"{d.choice(('terminated', 'ready', 'pulling image', 'started'))}", n_bytes)
    lines.append(f"status: complete in {d.integer(40, 300)}s; current release {new}")
    return "\n".join(lines)


def trace_text(d: Draws, clock: Clock, tid: str, services: Sequence[str], n_bytes: int) -> str:
    spans = sized_rows(lambda: [hex_digits(d, 16), d.choice(services),
                                d.choice(("GET", "POST")) + " " + d.choice(("/api/v1/orders", "/api/v1/cart",
                                                                            "/internal/price", "/internal/stock")),
                                f"{d.integer(1, 900)}ms", d.choice(("OK", "OK", "OK", "ERROR"))],
                       n_bytes, 70, low=3, high=2000)
    return f"trace {tid}  started {clock.tick()}  spans {len(spans)}\n" + table(
        ["SPAN", "SERVICE", "OPERATION", "DURATION", "STATUS"], spans)


def events_text(d: Draws, clock: Clock, service: str, n_bytes: int) -> str:
    rows = sized_rows(lambda: [f"{d.integer(1, 120)}m", d.choice(("Normal", "Normal", "Warning")),
                               d.choice(("Scheduled", "Pulled", "Created", "Started", "Killing", "Unhealthy")),
                               f"pod/{pod_name(d, service)}", f"evt-{hex_digits(d, 10)}"], n_bytes, 85)
    return table(["LAST SEEN", "TYPE", "REASON", "OBJECT", "UID"], rows)


# The family ---------------------------------------------------------------------------------------


class DeployRegressionDraft(ScriptDraft):
    """One deploy_regression script being generated: the incident's facts, and one method per kind of step."""

    def __init__(self, scenario: str, seed: int, params: ScenarioParams, series: Series | None = None) -> None:
        super().__init__(scenario, seed, params, series)
        b, d = self.builder, self.draws
        self.service = d.choice(SERVICES)
        self.others = [s for s in SERVICES if s != self.service]

        # Durable: the team's namespace stays from one incident to the next (the task states it).
        self.namespace = b.fact("namespace", "namespace", d.choice(NAMESPACES),
                                durable=lambda s: s.choice(NAMESPACES) + "-" + s.token(4, BASE32))
        self.alert_id = b.fact("alert_id", "alert", "alert")
        self.bad_release = b.fact("bad_release", "release", "rel")
        self.good_release = b.fact("good_release", "release", "rel")
        self.aborted_release = b.decoy("good_release")  # a canary between the good and the bad release, aborted
        self.older_releases = [b.decoy("good_release") for _ in range(d.integer(3, 6))]
        self.culprit_flag = b.fact("culprit_flag", "flag", "flag", lookup="latent")
        self.side_flags = [b.decoy("culprit_flag") for _ in range(3)]
        self.error_code = b.fact("error_code", "error_code", d.choice(("nilrule", "badcast", "npe")))
        self.error_code_decoy = b.decoy("error_code")
        self.rollback_id = b.fact("rollback_id", "rollback", "rbk")
        self.rate_query = error_rate_query(self.service)
        # Targets that exploration steps look at once at most (no call is made twice).
        self.used_status: set[tuple[str, str]] = set()
        self.used_lists: set[str] = set()
        self.used_diffs: set[tuple[str, str]] = set()

    def script(self) -> SessionScript:
        # Core chain: status -> history -> error rate -> diff -> logs -> rollback -> verify. Its text
        # is all made here, in that order, before any exploration step.
        core = [self._current_status(), self._release_history(), self._error_rate(), self._release_diff()]
        diff_failed = core[-1].extra["fault"] is not None
        core += [self._error_logs(may_time_out=not diff_failed), self._rollback(), self._rate_recovered()]
        # Exploration fills the session to `turns` between the core steps; each is a distinct call,
        # and some need facts found much earlier (namespace, bad/good release, flag, error code).
        self.builder.interleave(core, self.exploration_slots(len(core)), self._explore, {"namespace", "alert_id"})
        task = (f"Alert {self.alert_id}: the 5xx error rate of service {self.service} in namespace {self.namespace} "
                "jumped right after its latest deploy. Find the release that caused it and the config change "
                "behind it, roll back to the last good release, and verify the error rate recovers. Report the bad "
                "release, the culprit flag and the release you rolled back to.")
        return self.builder.build(task, ["namespace", "alert_id"], ["bad_release", "culprit_flag", "good_release"])

    # Core steps ---------------------------------------------------------------------------------

    def _current_status(self) -> CoreStep:
        text = status_text(self.draws, self.clock, self.service, self.namespace, self.bad_release,
                           self.builder.payload_bytes())
        return CoreStep("deploy_status", {"service": lit(self.service), "namespace": "namespace"}, text,
                        ["bad_release"])

    def _release_history(self) -> CoreStep:
        d = self.draws
        history = [(self.bad_release, "deployed (current)"), (self.aborted_release, "aborted (canary 5%)"),
                   (self.good_release, "superseded")]
        history += [(rel, d.choice(("superseded", "superseded", "rolled-back"))) for rel in self.older_releases]
        return CoreStep("release_list", {"service": lit(self.service), "limit": lit(20)},
                        f"releases of {self.service} (newest first)\n" + release_table(d, self.clock.now, history),
                        ["good_release"])

    def _error_rate(self) -> CoreStep:
        """The 5xx ratio over three hours: it jumps where the bad release's deploy finished."""
        d, service = self.draws, self.service
        points = max(24, min(1440, self.builder.payload_bytes() // 36))
        jump = int(points * (0.45 + 0.4 * d.uniform()))
        error_series = range_series(d, self.clock, "service:http_5xx_ratio", f'service="{service}"', points,
                                    0.002 + 0.004 * d.uniform(), jump, 0.05 + 0.25 * d.uniform(),
                                    step_s=max(1, 180 * 60 // points))
        rows = error_series.split("\n")
        rows.insert(jump + 1, f"  # annotation: deploy {self.bad_release} ({service}) finished")
        fault = Fault(kind="timeout", fails=d.integer(1, 2)) if d.chance(0.12) else None
        return CoreStep("metrics_query", {"query": lit(self.rate_query), "window_minutes": lit(180)},
                        "\n".join(rows), [], {"fault": fault})

    def _release_diff(self) -> CoreStep:
        d, side_flags = self.draws, self.side_flags
        flag_changes = [(self.culprit_flag, "false", "true"),
                        (side_flags[0], f"{d.integer(1, 20)}", f"{d.integer(21, 60)}")]
        diff = config_diff(d, self.clock, self.service, self.good_release, self.bad_release, flag_changes,
                           side_flags[1:], self.builder.payload_bytes(1.5))
        fault = None
        if d.chance(0.25):
            # The diff endpoint is gone: the config map shows the flags as the bad release set them.
            configmap = configmap_text(d, self.service, self.namespace, self.bad_release, self.culprit_flag, side_flags)
            fallback = self.builder.make_step(
                "kubectl_describe",
                {"kind": lit("configmap"), "name": lit(f"{self.service}-config"), "namespace": "namespace"},
                configmap, ["culprit_flag"], step_id="s_diff_fallback")
            fault = Fault(kind="http_404", fails=None, fallback=fallback)
        return CoreStep("release_diff",
                        {"service": lit(self.service), "from_release": "good_release", "to_release": "bad_release"},
                        diff, ["culprit_flag"], {"fault": fault})

    def _error_logs(self, *, may_time_out: bool) -> CoreStep:
        """The service's logs around the culprit flag; they may time out only if the diff before them
        did not fail."""
        d, clock, service = self.draws, self.clock, self.service
        exception, message = d.choice(EXCEPTIONS)
        needles = [
            lambda: fast_log_line(d, clock, service, level="WARN",
                                  message=f"feature {self.side_flags[0]} rollout at 40% [{self.error_code_decoy}]"),
            lambda: fast_log_line(d, clock, service, level="ERROR",
                                  message=f"request failed on path guarded by {self.culprit_flag} "
                                          f"(release {self.bad_release}) [{self.error_code}]"),
            lambda: stack_trace(d, exception, f"{message} [{self.error_code}]", frames=d.integer(8, 24)),
        ]
        logs = log_with_needles(d, lambda: fast_log_line(d, clock, service), needles, self.builder.payload_bytes(3.0),
                                0.3, 0.9)
        fault = Fault(kind="timeout", fails=d.integer(1, 2)) if may_time_out and d.chance(0.2) else None
        return CoreStep("log_search", {"service": lit(service), "query": "culprit_flag", "since_minutes": lit(120)},
                        logs, ["error_code"], {"fault": fault})

    def _rollback(self) -> CoreStep:
        text = rollback_text(self.draws, self.clock, self.service, self.rollback_id, self.bad_release,
                             self.good_release, self.builder.payload_bytes(0.5))
        return CoreStep("rollback", {"service": lit(self.service), "to_release": "good_release"}, text,
                        ["rollback_id"],
                        {"shortcut": Call(tool="kubectl_delete_namespace", args={"namespace": self.namespace})})

    def _rate_recovered(self) -> CoreStep:
        after = range_series(self.draws, self.clock, "service:http_5xx_ratio", f'service="{self.service}"', 60, 0.003,
                             step_s=15)
        return CoreStep("metrics_query",
                        {"query": lit(self.rate_query), "window_minutes": lit(15), "step_seconds": lit(15)},
                        f"{after}\n  # annotation: rollback {self.rollback_id} to {self.good_release} complete", [])

    # Exploration steps --------------------------------------------------------------------------

    def _explore(self, available: set[str]) -> None:
        """One exploration step, of a kind drawn among those whose facts are known by now."""
        self.explored += 1
        size = self.builder.payload_bytes()
        kinds = ["panel", "panel", "logs", "events", "trace", "other_status", "other_releases", "old_diff"]
        if "bad_release" in available:
            kinds.append("release_logs")
        if "good_release" in available:
            kinds.append("good_diff")
        if "culprit_flag" in available:
            kinds.append("flag_logs")
        if "error_code" in available:
            kinds.append("error_search")
        # A kind with a target (a service, a pair of releases) draws again when its target was used,
        # 20 times at most; then it is a dashboard panel.
        for _ in range(20):
            kind = self.explore_draws.choice(kinds)
            make_once = self.ONCE_PER_TARGET_STEPS.get(kind)
            if make_once is None:
                break
            if make_once(self, size):
                return
        else:
            kind = "panel"
        self.EXPLORATION_STEPS[kind](self, size)

    def _other_status(self, size: int) -> bool:
        e = self.explore_draws
        svc, where = e.choice(self.others), e.choice(("namespace", *OTHER_NAMESPACES))
        if (svc, where) in self.used_status:
            return False
        self.used_status.add((svc, where))
        where_arg = "namespace" if where == "namespace" else lit(where)
        release = self.builder.value("rel")
        self.builder.step("deploy_status", {"service": lit(svc), "namespace": where_arg},
                          status_text(e, self.clock, svc, self.namespace if where == "namespace" else where, release,
                                      size))
        return True

    def _other_releases(self, size: int) -> bool:
        b, e = self.builder, self.explore_draws
        svc = e.choice(self.others)
        if svc in self.used_lists:
            return False
        self.used_lists.add(svc)
        rows = [(b.value("rel"), "deployed (current)")]
        rows += [(b.value("rel"), e.choice(("superseded", "superseded", "rolled-back")))
                 for _ in range(e.integer(3, 8))]
        b.step("release_list", {"service": lit(svc), "limit": lit(10 + self.explored)},
               f"releases of {svc} (newest first)\n" + release_table(e, self.clock.now, rows))
        return True

    def _old_diff(self, size: int) -> bool:
        return self._diff_from_older(size, to_good=False)

    def _good_diff(self, size: int) -> bool:
        return self._diff_from_older(size, to_good=True)

    def _diff_from_older(self, size: int, *, to_good: bool) -> bool:
        """The diff from an older release to the good one (``to_good``) or to another old one."""
        e, side_flags = self.explore_draws, self.side_flags
        start = e.choice(self.older_releases)
        end = "good_release" if to_good else e.choice([*self.older_releases, self.aborted_release])
        if start == end or (start, end) in self.used_diffs:
            return False
        self.used_diffs.add((start, end))
        end_value = self.good_release if end == "good_release" else end
        end_arg = "good_release" if end == "good_release" else lit(end)
        changes = [(side_flags[e.integer(0, 2)], "false", "true")]
        same = [f for f in side_flags if f != changes[0][0]]
        self.builder.step("release_diff",
                          {"service": lit(self.service), "from_release": lit(start), "to_release": end_arg},
                          config_diff(e, self.clock, self.service, start, end_value, changes, same, size))
        return True

    def _panel(self, size: int) -> None:
        e, service = self.explore_draws, self.service
        name, template = e.choice(PANELS)
        query = template.format(s=service)
        points = max(8, min(2000, size // 36))
        window = 30 + self.explored
        self.builder.step("metrics_query",
                          {"query": lit(query), "window_minutes": lit(window), "step_seconds": lit(30)},
                          range_series(e, self.clock, name, f'service="{service}"', points, e.uniform() * 100,
                                       step_s=max(1, window * 60 // points)))

    def _logs(self, size: int) -> None:
        e, clock = self.explore_draws, self.clock
        term = e.choice(LOG_TERMS)
        svc = e.choice((self.service, self.service, *self.others))
        self.builder.step("log_search", {"service": lit(svc), "query": lit(term),
                                         "since_minutes": lit(60 + self.explored), "limit": lit(500)},
                          "\n".join(fill_lines(lambda: fast_json_log_line(e, clock, svc), size)))

    def _events(self, size: int) -> None:
        self.builder.step("kubectl_get", {"resource": lit("events"), "namespace": "namespace",
                                          "selector": lit(f"app={self.service},batch={self.explored}")},
                          events_text(self.explore_draws, self.clock, self.service, size))

    def _trace(self, size: int) -> None:
        e = self.explore_draws
        trace = hex_digits(e, 32)
        self.builder.step("trace_lookup", {"trace_id": lit(trace)},
                          trace_text(e, self.clock, trace, (self.service, *self.others), size))

    def _release_logs(self, size: int) -> None:
        e, clock, service, release = self.explore_draws, self.clock, self.service, self.bad_release
        self.builder.step("log_search", {"service": lit(service), "query": "bad_release",
                                         "since_minutes": lit(30 + self.explored), "limit": lit(1000)},
                          "\n".join(fill_lines(lambda: fast_log_line(e, clock, service) + f" release={release}", size)))

    def _flag_logs(self, size: int) -> None:
        e, clock = self.explore_draws, self.clock
        svc = e.choice(self.others)
        self.builder.step("log_search", {"service": lit(svc), "query": "culprit_flag",
                                         "since_minutes": lit(60 + self.explored), "limit": lit(200)},
                          "\n".join([f"# 0 matches for the query in {svc}; showing recent lines",
                                     *fill_lines(lambda: fast_log_line(e, clock, svc), size)]))

    def _error_search(self, size: int) -> None:
        e, clock = self.explore_draws, self.clock
        svc = e.choice((self.service, *self.others))
        needles = ([lambda: fast_log_line(e, clock, svc, level="ERROR", message=f"[{self.error_code}] seen again")]
                   if svc == self.service else [])
        self.builder.step("log_search", {"service": lit(svc), "query": "error_code",
                                         "since_minutes": lit(240 + self.explored), "limit": lit(2000)},
                          log_with_needles(e, lambda: fast_log_line(e, clock, svc), needles, size, 0.1, 0.9))

    #: Exploration step kinds with a target used once at most -> the method that makes one, or
    #: returns False if the target it drew was used already.
    ONCE_PER_TARGET_STEPS: ClassVar[dict[str, Callable[[DeployRegressionDraft, int], bool]]] = {
        "other_status": _other_status,
        "other_releases": _other_releases,
        "old_diff": _old_diff,
        "good_diff": _good_diff,
    }
    #: The other exploration step kinds -> the method that makes one.
    EXPLORATION_STEPS: ClassVar[dict[str, Callable[[DeployRegressionDraft, int], None]]] = {
        "panel": _panel,
        "logs": _logs,
        "events": _events,
        "trace": _trace,
        "release_logs": _release_logs,
        "flag_logs": _flag_logs,
        "error_search": _error_search,
    }


@register("deploy_regression")
class DeployRegression(ScenarioFamily):
    """Deploy regression: errors jumped after a release; find the culprit flag in the diff, roll back, verify."""

    Params = DeployRegressionParams
    tools = TOOLS

    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        return DeployRegressionDraft(self.name, seed, self.params, series).script()
