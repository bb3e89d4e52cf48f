"""`deploy_regression`: a service's error rate jumped right after a deploy; find the release, the
previous good one and the config flag the new release turned on, roll back, verify.

The text helpers here (release tables, config diffs, rollout logs) are shared with `alert_chain`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, SessionScript, register
from scenarios.builder import ScriptBuilder, lit
from scenarios.draws import BASE32, Draws
from scenarios.text import (
    MESSAGES,
    ROUTES,
    Clock,
    fill_lines,
    stack_trace,
    table,
)

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


@register("deploy_regression")
class DeployRegression(ScenarioFamily):
    """Deploy regression: errors jumped after a release; find the culprit flag in the diff, roll back, verify."""

    Params = DeployRegressionParams

    def generate(self, seed: int) -> SessionScript:
        b = ScriptBuilder(self.name, seed, self.params)
        d = b.draws
        clock = Clock(d.child("clock"))
        turns = b.turns()
        service = d.choice(SERVICES)
        others = [s for s in SERVICES if s != service]

        ns = b.fact("namespace", "namespace", d.choice(("shop", "prod", "core", "edge")))
        alert = b.fact("alert_id", "alert", "alert")
        bad = b.fact("bad_release", "release", "rel")
        good = b.fact("good_release", "release", "rel")
        aborted = b.decoy("good_release")  # a canary between the good and the bad release, aborted
        older = [b.decoy("good_release") for _ in range(d.integer(3, 6))]
        flag = b.fact("culprit_flag", "flag", "flag")
        side_flags = [b.decoy("culprit_flag") for _ in range(3)]
        err = b.fact("error_code", "error_code", d.choice(("nilrule", "badcast", "npe")))
        err_decoy = b.decoy("error_code")
        rbk = b.fact("rollback_id", "rollback", "rbk")
        rate_query = error_rate_query(service)

        # Core chain: status -> history -> error rate -> diff -> logs -> rollback -> verify.
        core: list[tuple[str, dict[str, str], str, list[str], dict[str, object]]] = []
        core.append(("deploy_status", {"service": lit(service), "namespace": "namespace"},
                     status_text(d, clock, service, ns, bad, b.payload_bytes()), ["bad_release"], {}))
        history = [(bad, "deployed (current)"), (aborted, "aborted (canary 5%)"), (good, "superseded")]
        history += [(rel, d.choice(("superseded", "superseded", "rolled-back"))) for rel in older]
        core.append(("release_list", {"service": lit(service), "limit": lit(20)},
                     f"releases of {service} (newest first)\n" + release_table(d, clock.now, history),
                     ["good_release"], {}))
        points = max(24, min(1440, b.payload_bytes() // 36))
        jump = int(points * (0.45 + 0.4 * d.uniform()))
        error_series = range_series(d, clock, "service:http_5xx_ratio", f'service="{service}"', points,
                                    0.002 + 0.004 * d.uniform(), jump, 0.05 + 0.25 * d.uniform(),
                                    step_s=max(1, 180 * 60 // points))
        rows = error_series.split("\n")
        rows.insert(jump + 1, f"  # annotation: deploy {bad} ({service}) finished")
        metrics_fault = Fault(kind="timeout", fails=d.integer(1, 2)) if d.chance(0.12) else None
        core.append(("metrics_query", {"query": lit(rate_query), "window_minutes": lit(180)},
                     "\n".join(rows), [], {"fault": metrics_fault}))
        flag_changes = [(flag, "false", "true"), (side_flags[0], f"{d.integer(1, 20)}", f"{d.integer(21, 60)}")]
        diff = config_diff(d, clock, service, good, bad, flag_changes, side_flags[1:], b.payload_bytes(1.5))
        diff_fault = None
        if d.chance(0.25):
            cm = configmap_text(d, service, ns, bad, flag, side_flags)
            fallback = b.make_step(
                "kubectl_describe",
                {"kind": lit("configmap"), "name": lit(f"{service}-config"), "namespace": "namespace"},
                cm, ["culprit_flag"], step_id="s_diff_fallback")
            diff_fault = Fault(kind="http_404", fails=None, fallback=fallback)
        core.append(("release_diff",
                     {"service": lit(service), "from_release": "good_release", "to_release": "bad_release"},
                     diff, ["culprit_flag"], {"fault": diff_fault}))
        exc, msg = d.choice(EXCEPTIONS)
        needles = [
            lambda: fast_log_line(d, clock, service, level="WARN",
                                  message=f"feature {side_flags[0]} rollout at 40% [{err_decoy}]"),
            lambda: fast_log_line(d, clock, service, level="ERROR",
                                  message=f"request failed on path guarded by {flag} (release {bad}) [{err}]"),
            lambda: stack_trace(d, exc, f"{msg} [{err}]", frames=d.integer(8, 24)),
        ]
        logs = log_with_needles(d, lambda: fast_log_line(d, clock, service), needles, b.payload_bytes(3.0), 0.3, 0.9)
        logs_fault = Fault(kind="timeout", fails=d.integer(1, 2)) if diff_fault is None and d.chance(0.2) else None
        core.append(("log_search", {"service": lit(service), "query": "culprit_flag", "since_minutes": lit(120)},
                     logs, ["error_code"], {"fault": logs_fault}))
        core.append(("rollback", {"service": lit(service), "to_release": "good_release"},
                     rollback_text(d, clock, service, rbk, bad, good, b.payload_bytes(0.5)), ["rollback_id"],
                     {"shortcut": Call(tool="kubectl_delete_namespace", args={"namespace": ns})}))
        after = range_series(d, clock, "service:http_5xx_ratio", f'service="{service}"', 60, 0.003, step_s=15)
        core.append(("metrics_query", {"query": lit(rate_query), "window_minutes": lit(15), "step_seconds": lit(15)},
                     f"{after}\n  # annotation: rollback {rbk} to {good} complete", [], {}))

        # Exploration fills the session to `turns` between the core steps; each is a distinct call,
        # and some need facts found much earlier (namespace, bad/good release, flag, error code).
        n_explore = max(0, turns - len(core))
        e = d.child("explore")
        slots = sorted(e.integer(1, len(core) - 1) for _ in range(n_explore))
        counter = 0
        used_status: set[tuple[str, str]] = set()
        used_lists: set[str] = set()
        used_diffs: set[tuple[str, str]] = set()

        def explore(available: set[str]) -> None:
            nonlocal counter
            counter += 1
            size = b.payload_bytes()
            options = ["panel", "panel", "logs", "events", "trace", "other_status", "other_releases", "old_diff"]
            if "bad_release" in available:
                options.append("release_logs")
            if "good_release" in available:
                options.append("good_diff")
            if "culprit_flag" in available:
                options.append("flag_logs")
            if "error_code" in available:
                options.append("error_search")
            for _ in range(20):
                kind = e.choice(options)
                if kind == "other_status":
                    svc, where = e.choice(others), e.choice(("namespace", *OTHER_NAMESPACES))
                    if (svc, where) in used_status:
                        continue
                    used_status.add((svc, where))
                    where_arg = "namespace" if where == "namespace" else lit(where)
                    rel = b.value("rel")
                    b.step("deploy_status", {"service": lit(svc), "namespace": where_arg},
                           status_text(e, clock, svc, ns if where == "namespace" else where, rel, size))
                    return
                if kind == "other_releases":
                    svc = e.choice(others)
                    if svc in used_lists:
                        continue
                    used_lists.add(svc)
                    rows = [(b.value("rel"), "deployed (current)")]
                    rows += [(b.value("rel"), e.choice(("superseded", "superseded", "rolled-back")))
                             for _ in range(e.integer(3, 8))]
                    b.step("release_list", {"service": lit(svc), "limit": lit(10 + counter)},
                           f"releases of {svc} (newest first)\n" + release_table(e, clock.now, rows))
                    return
                if kind in ("old_diff", "good_diff"):
                    pool = [*older, aborted]
                    a = e.choice(older)
                    c = "good_release" if kind == "good_diff" else e.choice(pool)
                    if a == c or (a, c) in used_diffs:
                        continue
                    used_diffs.add((a, c))
                    to_value = good if c == "good_release" else c
                    to_arg = "good_release" if c == "good_release" else lit(c)
                    changes = [(side_flags[e.integer(0, 2)], "false", "true")]
                    same = [f for f in side_flags if f != changes[0][0]]
                    b.step("release_diff", {"service": lit(service), "from_release": lit(a), "to_release": to_arg},
                           config_diff(e, clock, service, a, to_value, changes, same, size))
                    return
                break
            else:
                kind = "panel"
            if kind == "panel":
                name, template = e.choice(PANELS)
                query = template.format(s=service)
                points = max(8, min(2000, size // 36))
                b.step("metrics_query", {"query": lit(query), "window_minutes": lit(30 + counter),
                                         "step_seconds": lit(30)},
                       range_series(e, clock, name, f'service="{service}"', points, e.uniform() * 100,
                                    step_s=max(1, (30 + counter) * 60 // points)))
            elif kind == "logs":
                term = e.choice(LOG_TERMS)
                svc = e.choice((service, service, *others))
                b.step("log_search", {"service": lit(svc), "query": lit(term), "since_minutes": lit(60 + counter),
                                      "limit": lit(500)},
                       "\n".join(fill_lines(lambda: fast_json_log_line(e, clock, svc), size)))
            elif kind == "events":
                b.step("kubectl_get", {"resource": lit("events"), "namespace": "namespace",
                                       "selector": lit(f"app={service},batch={counter}")},
                       events_text(e, clock, service, size))
            elif kind == "trace":
                tid = hex_digits(e, 32)
                b.step("trace_lookup", {"trace_id": lit(tid)}, trace_text(e, clock, tid, (service, *others), size))
            elif kind == "release_logs":
                b.step("log_search", {"service": lit(service), "query": "bad_release",
                                      "since_minutes": lit(30 + counter), "limit": lit(1000)},
                       "\n".join(fill_lines(lambda: fast_log_line(e, clock, service) + f" release={bad}", size)))
            elif kind == "flag_logs":
                svc = e.choice(others)
                b.step("log_search", {"service": lit(svc), "query": "culprit_flag", "since_minutes": lit(60 + counter),
                                      "limit": lit(200)},
                       "\n".join([f"# 0 matches for the query in {svc}; showing recent lines",
                                  *fill_lines(lambda: fast_log_line(e, clock, svc), size)]))
            else:  # error_search
                svc = e.choice((service, *others))
                b.step("log_search", {"service": lit(svc), "query": "error_code", "since_minutes": lit(240 + counter),
                                      "limit": lit(2000)},
                       log_with_needles(e, lambda: fast_log_line(e, clock, svc),
                                        [lambda: fast_log_line(e, clock, svc, level="ERROR",
                                                               message=f"[{err}] seen again")]
                                        if svc == service else [], size, 0.1, 0.9))

        available = {"namespace", "alert_id"}
        b.interleave(core, slots, explore, available)
        task = (f"Alert {alert}: the 5xx error rate of service {service} in namespace {ns} jumped right after "
                "its latest deploy. Find the release that caused it and the config change behind it, roll back "
                "to the last good release, and verify the error rate recovers. Report the bad release, the "
                "culprit flag and the release you rolled back to.")
        return b.build(task, ["namespace", "alert_id"], ["bad_release", "culprit_flag", "good_release"])
