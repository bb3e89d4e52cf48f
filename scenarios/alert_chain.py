"""`alert_chain`: one incident worked by five agents in a chain (analysis, diagnosis, remediation,
verification, reporting). Each agent has its own context and knows only what the previous agent's
hand-over carries plus what it finds itself; every hand-over must carry the facts the later agents
need.

The incident: after a deploy, one service's 5xx ratio jumps. Analysis finds the service and its
current release; diagnosis reads the errors of that release and the release history; remediation
diffs the releases (the culprit flag) and rolls back; verification follows the rollback to a new pod
and reads its logs; reporting finds the change that flipped the flag and checks the deployment.
"""

from __future__ import annotations

from collections.abc import Callable

from scenarios.base import Call, Fault, Handoff, ScenarioFamily, ScenarioParams, SessionScript, register
from scenarios.builder import InvalidScript, ScriptBuilder, lit
from scenarios.deploy_regression import (
    AUTHORS,
    EXCEPTIONS,
    LOG_TERMS,
    PANELS,
    config_diff,
    configmap_text,
    error_rate_query,
    events_text,
    fast_json_log_line,
    fast_log_line,
    hex_digits,
    log_with_needles,
    pod_name,
    range_series,
    release_table,
    rollback_text,
    sized_rows,
    status_text,
    trace_text,
)
from scenarios.draws import BASE32, HEX
from scenarios.text import (
    Clock,
    fill_lines,
    stack_trace,
    table,
)

AGENTS = ["analysis", "diagnosis", "remediation", "verification", "reporting"]
#: Share of the exploration steps each agent makes (J).
AGENT_WEIGHTS = (0.25, 0.3, 0.15, 0.15, 0.15)
BASES = ("checkout", "payments", "cart", "search", "inventory", "pricing", "ledger", "notify", "gateway", "profile")
#: The facts each agent starts with: the task's for the first agent, then what the core chain's
#: hand-overs carry. Exploration steps need only these and the agent's own findings.
SCOPE_IN = {
    "analysis": {"namespace", "alert_id"},
    "diagnosis": {"namespace", "service", "bad_release"},
    "remediation": {"namespace", "service", "bad_release", "good_release"},
    "verification": {"namespace", "service", "bad_release", "good_release", "culprit_flag", "rollback_id"},
    "reporting": {"namespace", "service", "bad_release", "good_release", "culprit_flag"},
}
FINAL_FACTS = ["bad_release", "culprit_flag", "good_release", "change_id"]

CoreStep = tuple[str, dict[str, str], str, list[str], dict[str, object]]


class AlertChainParams(ScenarioParams):
    pass


def pod_value(b: ScriptBuilder, base: str) -> str:
    """A pod value ``<base>-<4 hex>-<4 base32>`` (filler pods carry 10 hex and 5 base32)."""
    return b._fresh(lambda: f"{base}-{b.draws.token(4, HEX)}-{b.draws.token(4, BASE32)}")


@register("alert_chain")
class AlertChain(ScenarioFamily):
    """Five agents in a chain (analysis to reporting) work one post-deploy error spike, handing facts over."""

    Params = AlertChainParams

    def generate(self, seed: int) -> SessionScript:
        b = ScriptBuilder(self.name, seed, self.params)
        d = b.draws
        clock = Clock(d.child("clock"))
        turns = b.turns()
        base = d.choice(BASES)
        other_bases = d.sample([x for x in BASES if x != base], 6)

        ns = b.fact("namespace", "namespace", d.choice(("shop", "prod", "core", "edge")))
        alert = b.fact("alert_id", "alert", "alert")
        svc = b.fact("service", "service", base)
        canary = b.decoy("service")  # the canary service of the same app
        others = [b.value(x) for x in other_bases]
        bad = b.fact("bad_release", "release", "rel")
        good = b.fact("good_release", "release", "rel")
        aborted = b.decoy("good_release")
        older = [b.decoy("good_release") for _ in range(d.integer(3, 6))]
        err = b.fact("error_code", "error_code", d.choice(("nilrule", "badcast", "npe")))
        err_decoy = b.decoy("error_code")
        flag = b.fact("culprit_flag", "flag", "flag")
        side_flags = [b.decoy("culprit_flag") for _ in range(3)]
        rbk = b.fact("rollback_id", "rollback", "rbk")
        new_pod = b.fact("new_pod", "pod", value=pod_value(b, base))
        old_pods = [b.decoy("new_pod", value=pod_value(b, base)) for _ in range(2)]
        change = b.fact("change_id", "change", "chg")
        change_decoy = b.decoy("change_id")
        rate_query = error_rate_query(base)

        # Core chain: two steps per agent, each built when its turn comes (so the clock runs forward).
        def top_services() -> CoreStep:
            ratio = 0.08 + 0.3 * d.uniform()
            rows = [[svc, f"{ratio:.4f}", d.integer(200, 3000), f"{d.integer(400, 2500)}ms"],
                    [canary, f"{0.01 + 0.02 * d.uniform():.4f}", d.integer(5, 60), f"{d.integer(100, 600)}ms"]]
            rows += [[o, f"{0.004 * d.uniform():.4f}", d.integer(50, 4000), f"{d.integer(20, 400)}ms"] for o in others]
            rows.sort(key=lambda r: -float(str(r[1])))
            points = max(10, min(1440, b.payload_bytes(0.7) // 36))
            text = "\n".join([
                f"ALERT {alert} HighErrorRatio firing since {clock.tick(120_000)} (threshold 0.02)",
                "", f"evaluated at {clock.tick()}  window 60m  step 60s",
                table(["SERVICE", "5XX_RATIO", "RPS", "P99"], rows),
                "", "series of the top service:",
                range_series(d, clock, "service:http_5xx_ratio", f'service="{svc}"', points, 0.004,
                             points - d.integer(2, max(3, points // 3)), ratio,
                             step_s=max(1, 3600 // points)),
            ])
            return ("metrics_query",
                    {"query": lit('topk(8, sum by (service) (rate(http_requests_total{code=~"5.."}[5m])) / '
                                  'sum by (service) (rate(http_requests_total[5m])))'),
                     "window_minutes": lit(60)},
                    text, ["service"], {"fault": Fault(kind="timeout", fails=d.integer(1, 2)) if d.chance(0.1)
                                        else None})

        def current_release() -> CoreStep:
            return ("deploy_status", {"service": "service", "namespace": "namespace"},
                    status_text(d, clock, svc, ns, bad, b.payload_bytes(), pod_prefix=base), ["bad_release"], {})

        def release_errors() -> CoreStep:
            exc, msg = d.choice(EXCEPTIONS)
            needles = [
                lambda: fast_log_line(d, clock, svc, level="WARN", message=f"degraded upstream answer [{err_decoy}]"),
                lambda: fast_log_line(d, clock, svc, level="ERROR", message=f"release={bad} request failed [{err}]"),
                lambda: stack_trace(d, exc, f"{msg} [{err}]", frames=d.integer(8, 24)),
            ]
            text = log_with_needles(d, lambda: fast_log_line(d, clock, svc) + f" release={bad}", needles,
                                    b.payload_bytes(3.0), 0.3, 0.9)
            fault = Fault(kind="timeout", fails=d.integer(1, 2)) if d.chance(0.2) else None
            return ("log_search", {"service": "service", "query": "bad_release", "since_minutes": lit(120)},
                    text, ["error_code"], {"fault": fault})

        def history() -> CoreStep:
            rows = [(bad, "deployed (current)"), (aborted, "aborted (canary 5%)"), (good, "superseded")]
            rows += [(rel, d.choice(("superseded", "superseded", "rolled-back"))) for rel in older]
            return ("release_list", {"service": "service", "limit": lit(20)},
                    f"releases of {svc} (newest first)\n" + release_table(d, clock.now, rows), ["good_release"], {})

        def diff() -> CoreStep:
            changes = [(flag, "false", "true"), (side_flags[0], f"{d.integer(1, 20)}", f"{d.integer(21, 60)}")]
            text = config_diff(d, clock, svc, good, bad, changes, side_flags[1:], b.payload_bytes(1.5))
            fault = None
            if d.chance(0.25):
                cm = configmap_text(d, base, ns, bad, flag, side_flags)
                fallback = b.make_step(
                    "kubectl_describe", {"kind": lit("configmap"), "name": lit(f"{base}-config"),
                                         "namespace": "namespace"},
                    cm, ["culprit_flag"], step_id="s_diff_fallback", agent="remediation")
                fault = Fault(kind="http_404", fails=None, fallback=fallback)
            return ("release_diff", {"service": "service", "from_release": "good_release", "to_release": "bad_release"},
                    text, ["culprit_flag"], {"fault": fault})

        def roll_back() -> CoreStep:
            return ("rollback", {"service": "service", "to_release": "good_release"},
                    rollback_text(d, clock, svc, rbk, bad, good, b.payload_bytes(0.5), pod_prefix=base),
                    ["rollback_id"], {"shortcut": Call(tool="kubectl_delete_namespace", args={"namespace": ns})})

        def rollout_events() -> CoreStep:
            head = "INFO  [deploy-controller] rollback"
            needles = [
                lambda: f"{clock.tick()} {head} {rbk}: pod {old_pods[0]} terminated (release {bad})",
                lambda: f"{clock.tick()} {head} {rbk}: pod {old_pods[1]} terminated (release {bad})",
                lambda: f"{clock.tick()} {head} {rbk}: pod {new_pod} ready (release {good}), first replica to pass "
                        "readiness",
            ]
            text = log_with_needles(d, lambda: fast_log_line(d, clock, svc), needles, b.payload_bytes(0.8), 0.2, 0.8)
            return ("log_search", {"service": "service", "query": "rollback_id", "since_minutes": lit(30)},
                    text, ["new_pod"], {})

        def pod_logs() -> CoreStep:
            first = f"{clock.tick()} INFO  [{svc}] starting release {good}"
            lines = fill_lines(lambda: fast_log_line(d, clock, svc, level=d.choice(("INFO", "INFO", "DEBUG"))),
                               b.payload_bytes())
            return ("kubectl_logs", {"pod": "new_pod", "namespace": "namespace", "tail": lit(300)},
                    "\n".join([first, *lines]), [], {})

        def flag_audit() -> CoreStep:
            who, who2 = d.sample(AUTHORS, 2)
            needles = [
                lambda: fast_json_log_line(d, clock, "config-audit", level="info", msg="config change applied",
                                           change=change_decoy, author=who2, key=f"features.{side_flags[0]}",
                                           release=bad),
                lambda: fast_json_log_line(d, clock, "config-audit", level="info", msg="config change applied",
                                           change=change, author=who, key=f"features.{flag}", old="false",
                                           new="true", release=bad),
            ]
            text = log_with_needles(d, lambda: fast_json_log_line(d, clock, svc), needles, b.payload_bytes(), 0.1, 0.9)
            return ("log_search", {"service": "service", "query": "culprit_flag", "since_minutes": lit(1440)},
                    text, ["change_id"], {})

        def deployment() -> CoreStep:
            text = "\n".join([
                f"Name:                   {svc}", f"Namespace:              {ns}",
                f"CreationTimestamp:      {clock.tick(60_000)}", f"Labels:                 app={base}",
                f"Annotations:            deploy/release: {good}",
                f"                        deploy/rolled-back-from: {bad}",
                f"Replicas:               {d.integer(3, 12)} desired | all updated | all available",
                "StrategyType:           RollingUpdate", "Conditions:",
                table(["TYPE", "STATUS", "REASON"], [["Available", "True", "MinimumReplicasAvailable"],
                                                     ["Progressing", "True", "NewReplicaSetAvailable"]]),
                "Events:",
                table(["TYPE", "REASON", "AGE", "MESSAGE"], sized_rows(
                    lambda: ["Normal", "ScalingReplicaSet", f"{d.integer(1, 50)}m",
                             f"Scaled {d.choice(('up', 'down'))} replica set {pod_name(d, base)[:-6]} "
                             f"to {d.integer(0, 12)}"], b.payload_bytes(0.6), 80)),
            ])
            return ("kubectl_describe", {"kind": lit("deployment"), "name": "service", "namespace": "namespace"},
                    text, [], {})

        core: dict[str, list[Callable[[], CoreStep]]] = {
            "analysis": [top_services, current_release],
            "diagnosis": [release_errors, history],
            "remediation": [diff, roll_back],
            "verification": [rollout_events, pod_logs],
            "reporting": [flag_audit, deployment],
        }

        # Exploration: the rest of `turns`, split among the agents and placed between (or around)
        # their core steps. Each is a distinct call needing only facts its agent has.
        n_explore = max(0, turns - sum(len(v) for v in core.values()))
        e = d.child("explore")
        slots: dict[str, list[int]] = {a: [] for a in AGENTS}
        for _ in range(n_explore):
            agent = e.weighted(AGENTS, AGENT_WEIGHTS)
            slots[agent].append(e.integer(1 if agent == "analysis" else 0, len(core[agent])))
        counter = 0
        used_once: set[str] = set()  # targets explored at most once per session

        def explore(agent: str, have: set[str]) -> None:
            nonlocal counter
            counter += 1
            size = b.payload_bytes()
            fresh_status = [o for o in others if o not in used_once]
            fresh_diffs = [o for o in [*older, aborted] if o not in used_once]
            options = ["panel", "panel", "kube", "events", "trace", "other_logs"]
            if fresh_status:
                options.append("other_status")
            if "service" in have:
                options += ["svc_logs", "svc_logs"]
            if "bad_release" in have:
                options.append("release_logs")
            if "good_release" in have and fresh_diffs:
                options.append("old_diff")
            if "error_code" in have:
                options.append("error_search")
            if "culprit_flag" in have:
                options.append("flag_logs")
            if "new_pod" in have and "pod_describe" not in used_once:
                options.append("pod_describe")
            if "rollback_id" in have:
                options.append("rate")
            kind = e.choice(options)
            if kind == "panel":
                name, template = e.choice(PANELS)
                points = max(8, min(2000, size // 36))
                b.step("metrics_query", {"query": lit(template.format(s=base)), "window_minutes": lit(30 + counter),
                                         "step_seconds": lit(30)},
                       range_series(e, clock, name, f'app="{base}"', points, e.uniform() * 100,
                                    step_s=max(1, (30 + counter) * 60 // points)), agent=agent)
            elif kind == "rate":
                b.step("metrics_query", {"query": lit(rate_query), "window_minutes": lit(10 + counter),
                                         "step_seconds": lit(15)},
                       range_series(e, clock, "service:http_5xx_ratio", f'service="{svc}"', (10 + counter) * 4,
                                    0.003, step_s=15), agent=agent)
            elif kind == "kube":
                resource = e.choice(("pods", "deployments", "services"))
                rows = sized_rows(lambda: [pod_name(e, e.choice((base, *other_bases))), "1/1", "Running",
                                           e.integer(0, 3), f"{e.integer(1, 90)}m"], size, 60)
                b.step("kubectl_get", {"resource": lit(resource), "namespace": "namespace",
                                       "selector": lit(f"tier=web,batch={counter}")},
                       table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], rows), agent=agent)
            elif kind == "events":
                b.step("kubectl_get", {"resource": lit("events"), "namespace": "namespace",
                                       "selector": lit(f"app={base},batch={counter}")},
                       events_text(e, clock, base, size), agent=agent)
            elif kind == "trace":
                tid = hex_digits(e, 32)
                b.step("trace_lookup", {"trace_id": lit(tid)},
                       trace_text(e, clock, tid, (base, *other_bases), size), agent=agent)
            elif kind == "other_logs":
                other = e.choice(others)
                b.step("log_search", {"service": lit(other), "query": lit(e.choice(LOG_TERMS)),
                                      "since_minutes": lit(60 + counter), "limit": lit(500)},
                       "\n".join(fill_lines(lambda: fast_json_log_line(e, clock, other), size)), agent=agent)
            elif kind == "other_status":
                other = e.choice(fresh_status)
                used_once.add(other)
                b.step("deploy_status", {"service": lit(other), "namespace": "namespace"},
                       status_text(e, clock, other, ns, b.value("rel"), size, pod_prefix=other.rsplit("-", 1)[0]),
                       agent=agent)
            elif kind == "svc_logs":
                b.step("log_search", {"service": "service", "query": lit(e.choice(LOG_TERMS)),
                                      "since_minutes": lit(60 + counter), "limit": lit(500)},
                       "\n".join(fill_lines(lambda: fast_log_line(e, clock, svc), size)), agent=agent)
            elif kind == "release_logs":
                b.step("log_search", {"service": "service", "query": "bad_release",
                                      "since_minutes": lit(30 + counter), "limit": lit(1000)},
                       "\n".join(fill_lines(lambda: fast_log_line(e, clock, svc) + f" release={bad}", size)),
                       agent=agent)
            elif kind == "old_diff":
                rel = e.choice(fresh_diffs)
                used_once.add(rel)
                changed = e.choice(side_flags)
                b.step("release_diff", {"service": "service", "from_release": lit(rel), "to_release": "good_release"},
                       config_diff(e, clock, svc, rel, good, [(changed, "false", "true")],
                                   [f for f in side_flags if f != changed], size), agent=agent)
            elif kind == "error_search":
                other = e.choice(others)
                b.step("log_search", {"service": lit(other), "query": "error_code",
                                      "since_minutes": lit(240 + counter), "limit": lit(2000)},
                       "\n".join([f"# 0 matches for the query in {other}; showing recent lines",
                                  *fill_lines(lambda: fast_log_line(e, clock, other), size)]), agent=agent)
            elif kind == "flag_logs":
                other = e.choice(others)
                b.step("log_search", {"service": lit(other), "query": "culprit_flag",
                                      "since_minutes": lit(60 + counter), "limit": lit(200)},
                       "\n".join([f"# 0 matches for the query in {other}; showing recent lines",
                                  *fill_lines(lambda: fast_log_line(e, clock, other), size)]), agent=agent)
            else:  # pod_describe, once
                used_once.add("pod_describe")
                b.step("kubectl_describe", {"kind": lit("pod"), "name": "new_pod", "namespace": "namespace"},
                       "\n".join([f"Name:         {new_pod}", f"Namespace:    {ns}", f"Labels:       app={base}",
                                  f"              release={good}", "Status:       Running", "Conditions:",
                                  "  Ready   True", "Events:",
                                  table(["TYPE", "REASON", "AGE", "MESSAGE"], sized_rows(
                                      lambda: ["Normal", e.choice(("Pulled", "Created", "Started")),
                                               f"{e.integer(1, 30)}m", "Container image already present"],
                                      size, 70))]),
                       agent=agent)

        for agent in AGENTS:
            have = set(SCOPE_IN[agent])
            positions = sorted(slots[agent])
            for i, make in enumerate([*core[agent], None]):
                while positions and positions[0] == i:
                    positions.pop(0)
                    explore(agent, have)
                if make is None:
                    break
                tool, args, payload, produces, extra = make()
                b.step(tool, args, payload, produces, agent=agent, **extra)
                have |= set(produces)

        handoffs = self._handoffs(b, FINAL_FACTS)
        task = (f"Alert {alert}: the 5xx error ratio in namespace {ns} is above its SLO since a deploy. "
                "Five agents work this incident in turn: analysis, diagnosis, remediation, verification, "
                "reporting; each hands over to the next what it needs. Find the failing service and its "
                "current release, diagnose the errors, roll back to the last good release, verify, and report "
                "the bad release, the culprit flag, the release rolled back to and the change that flipped the flag.")
        return b.build(task, ["namespace", "alert_id"], FINAL_FACTS, agents=list(AGENTS), handoffs=handoffs)

    @staticmethod
    def _handoffs(b: ScriptBuilder, final_facts: list[str]) -> list[Handoff]:
        """A hand-over after each agent's last step carrying every fact known by then that a later
        step needs (fallbacks included) or the final answer states; checks that every step's needs
        are carried in or found by its own agent."""
        runs = [(s, [s] + ([s.fault.fallback] if s.fault and s.fault.fallback else [])) for s in b.steps]
        handoffs: list[Handoff] = []
        known = set(SCOPE_IN[AGENTS[0]])
        has = set(known)
        for i, (step, group) in enumerate(runs):
            for run in group:
                missing = set(run.needs) - has
                if missing:
                    raise InvalidScript(f"alert_chain seed {b.seed}: {step.agent} step {run.id} "
                                        f"lacks {sorted(missing)}")
            for run in group:
                known |= set(run.produces)
                has |= set(run.produces)
            nxt = runs[i + 1][0] if i + 1 < len(runs) else None
            if nxt is not None and nxt.agent != step.agent:
                later = set(final_facts)
                for _, rest in runs[i + 1:]:
                    for run in rest:
                        later |= set(run.needs)
                carries = sorted(known & later)
                handoffs.append(Handoff(after_step=step.id, from_agent=str(step.agent), to_agent=str(nxt.agent),
                                        carries=carries))
                has = set(carries)
        if set(final_facts) - has:
            raise InvalidScript(f"alert_chain seed {b.seed}: reporting lacks {sorted(set(final_facts) - has)}")
        return handoffs
