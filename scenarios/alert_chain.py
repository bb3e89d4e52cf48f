"""`alert_chain`: one incident worked by five agents in a chain (analysis, diagnosis, remediation,
verification, reporting). Each agent has its own context and knows only what the previous agent's
hand-over carries plus what it finds itself; every hand-over must carry the facts the later agents
need.

The incident: after a deploy, one service's 5xx ratio jumps. Analysis finds the service and its
current release; diagnosis reads the errors of that release and the release history; remediation
diffs the releases (the culprit flag) and rolls back; verification follows the rollback to a new pod
and reads its logs; reporting finds the change that flipped the flag and checks the deployment.

Look-ups (docs/model.md 1): ``culprit_flag`` is latent, as in deploy_regression: the flag of
the diff that explains the errors among the others; every other fact is literal.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import ClassVar

from harness.core.tools import ToolRegistry
from scenarios.base import Call, Fault, Handoff, ScenarioFamily, ScenarioParams, Series, SessionScript, register
from scenarios.builder import CoreStep, InvalidScript, ScriptDraft, lit
from scenarios.deploy_regression import (
    AUTHORS,
    EXCEPTIONS,
    LOG_TERMS,
    PANELS,
    ROLLOUT_TOOLS,
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
from scenarios.ops_tools import ops_tools
from scenarios.text import (
    fill_lines,
    stack_trace,
    table,
)

#: The teams' namespaces a session may run in (the value is one of them and a suffix).
NAMESPACES = ("shop", "prod", "core", "edge")

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
TOP_SERVICES_QUERY = ('topk(8, sum by (service) (rate(http_requests_total{code=~"5.."}[5m])) / '
                      'sum by (service) (rate(http_requests_total[5m])))')

#: The tools an alert_chain session calls: kubectl, logs, traces and metrics, and deploy_regression's
#: rollout tools.
TOOLS = ToolRegistry({
    **ops_tools("kubectl_get", "kubectl_describe", "kubectl_logs", "kubectl_delete_namespace", "log_search",
                "trace_lookup", "metrics_query"),
    **ROLLOUT_TOOLS,
}, where=__name__)


class AlertChainParams(ScenarioParams):
    pass


class AlertChainDraft(ScriptDraft):
    """One alert_chain script being generated: the incident's facts, and one method per kind of step."""

    def __init__(self, scenario: str, seed: int, params: ScenarioParams, series: Series | None = None) -> None:
        super().__init__(scenario, seed, params, series)
        b, d = self.builder, self.draws
        #: The app's name: the failing service's value, its pods and its config map start with it.
        self.base = d.choice(BASES)
        if series is not None:  # the service is durable (below): its app's name is the series' too
            self.base = series.draws("service").choice(BASES)
        self.other_bases = d.sample([x for x in BASES if x != self.base], 6)

        # Durable: the team's namespace stays from one incident to the next (the task states it).
        self.namespace = b.fact("namespace", "namespace", d.choice(NAMESPACES),
                                durable=lambda s: s.choice(NAMESPACES) + "-" + s.token(4, BASE32))
        self.alert_id = b.fact("alert_id", "alert", "alert")
        # Durable: the failing app's service keeps its name from one incident to the next.
        self.service = b.fact("service", "service", self.base,
                              durable=lambda s: f"{s.choice(BASES)}-{s.token(4, BASE32)}")
        self.canary = b.decoy("service")  # the canary service of the same app
        self.others = [b.value(x) for x in self.other_bases]
        self.bad_release = b.fact("bad_release", "release", "rel")
        self.good_release = b.fact("good_release", "release", "rel")
        self.aborted_release = b.decoy("good_release")
        self.older_releases = [b.decoy("good_release") for _ in range(d.integer(3, 6))]
        self.error_code = b.fact("error_code", "error_code", d.choice(("nilrule", "badcast", "npe")))
        self.error_code_decoy = b.decoy("error_code")
        self.culprit_flag = b.fact("culprit_flag", "flag", "flag", lookup="latent")
        self.side_flags = [b.decoy("culprit_flag") for _ in range(3)]
        self.rollback_id = b.fact("rollback_id", "rollback", "rbk")
        self.new_pod = b.fact("new_pod", "pod", value=self._pod_value())
        self.old_pods = [b.decoy("new_pod", value=self._pod_value()) for _ in range(2)]
        self.change_id = b.fact("change_id", "change", "chg")
        self.change_id_decoy = b.decoy("change_id")
        self.rate_query = error_rate_query(self.base)
        #: Targets explored at most once per session (other services, old releases, the new pod).
        self.used_once: set[str] = set()

    def _pod_value(self) -> str:
        """A pod value ``<base>-<4 hex>-<4 base32>`` (filler pods carry 10 hex and 5 base32)."""
        d = self.draws
        return self.builder.distinct(lambda: f"{self.base}-{d.token(4, HEX)}-{d.token(4, BASE32)}")

    def script(self) -> SessionScript:
        # Core chain: two steps per agent, each made when its turn comes (so the clock runs forward).
        core: dict[str, list[Callable[[], CoreStep]]] = {
            "analysis": [self._top_services, self._current_release],
            "diagnosis": [self._release_errors, self._release_history],
            "remediation": [self._release_diff, self._rollback],
            "verification": [self._rollout_events, self._new_pod_logs],
            "reporting": [self._flag_audit, self._describe_deployment],
        }
        # Exploration: the rest of `turns`, split among the agents and placed between (or around)
        # their core steps. Each is a distinct call needing only facts its agent has.
        n_explore = max(0, self.turns - sum(len(steps) for steps in core.values()))
        e = self.explore_draws
        slots: dict[str, list[int]] = {agent: [] for agent in AGENTS}
        for _ in range(n_explore):
            agent = e.weighted(AGENTS, AGENT_WEIGHTS)
            slots[agent].append(e.integer(1 if agent == "analysis" else 0, len(core[agent])))
        for agent in AGENTS:
            self.builder.interleave(core[agent], sorted(slots[agent]), partial(self._explore, agent),
                                    set(SCOPE_IN[agent]), agent=agent)

        task = (f"Alert {self.alert_id}: the 5xx error ratio in namespace {self.namespace} is above its SLO since a "
                "deploy. Five agents work this incident in turn: analysis, diagnosis, remediation, verification, "
                "reporting; each hands over to the next what it needs. Find the failing service and its "
                "current release, diagnose the errors, roll back to the last good release, verify, and report "
                "the bad release, the culprit flag, the release rolled back to and the change that flipped the flag.")
        return self.builder.build(task, ["namespace", "alert_id"], FINAL_FACTS, agents=list(AGENTS),
                                  handoffs=self._handoffs(FINAL_FACTS))

    def _handoffs(self, final_facts: list[str]) -> list[Handoff]:
        """A hand-over after each agent's last step carrying every fact known by then that a later
        step needs (fallbacks included) or the final answer states; checks that every step's needs
        are carried in or found by its own agent."""
        b = self.builder
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

    # Core steps ---------------------------------------------------------------------------------

    def _top_services(self) -> CoreStep:
        """analysis: the firing alert and the services ranked by 5xx ratio, the failing one on top."""
        d, clock, svc = self.draws, self.clock, self.service
        ratio = 0.08 + 0.3 * d.uniform()
        rows = [[svc, f"{ratio:.4f}", d.integer(200, 3000), f"{d.integer(400, 2500)}ms"],
                [self.canary, f"{0.01 + 0.02 * d.uniform():.4f}", d.integer(5, 60), f"{d.integer(100, 600)}ms"]]
        rows += [[o, f"{0.004 * d.uniform():.4f}", d.integer(50, 4000), f"{d.integer(20, 400)}ms"]
                 for o in self.others]
        rows.sort(key=lambda r: -float(str(r[1])))
        points = max(10, min(1440, self.builder.payload_bytes(0.7) // 36))
        text = "\n".join([
            f"ALERT {self.alert_id} HighErrorRatio firing since {clock.tick(120_000)} (threshold 0.02)",
            "", f"evaluated at {clock.tick()}  window 60m  step 60s",
            table(["SERVICE", "5XX_RATIO", "RPS", "P99"], rows),
            "", "series of the top service:",
            range_series(d, clock, "service:http_5xx_ratio", f'service="{svc}"', points, 0.004,
                         points - d.integer(2, max(3, points // 3)), ratio,
                         step_s=max(1, 3600 // points)),
        ])
        fault = Fault(kind="timeout", fails=d.integer(1, 2)) if d.chance(0.1) else None
        return CoreStep("metrics_query", {"query": lit(TOP_SERVICES_QUERY), "window_minutes": lit(60)},
                        text, ["service"], {"fault": fault})

    def _current_release(self) -> CoreStep:
        text = status_text(self.draws, self.clock, self.service, self.namespace, self.bad_release,
                           self.builder.payload_bytes(), pod_prefix=self.base)
        return CoreStep("deploy_status", {"service": "service", "namespace": "namespace"}, text, ["bad_release"])

    def _release_errors(self) -> CoreStep:
        d, clock, svc = self.draws, self.clock, self.service
        exception, message = d.choice(EXCEPTIONS)
        needles = [
            lambda: fast_log_line(d, clock, svc, level="WARN",
                                  message=f"degraded upstream answer [{self.error_code_decoy}]"),
            lambda: fast_log_line(d, clock, svc, level="ERROR",
                                  message=f"release={self.bad_release} request failed [{self.error_code}]"),
            lambda: stack_trace(d, exception, f"{message} [{self.error_code}]", frames=d.integer(8, 24)),
        ]
        text = log_with_needles(d, lambda: fast_log_line(d, clock, svc) + f" release={self.bad_release}", needles,
                                self.builder.payload_bytes(3.0), 0.3, 0.9)
        fault = Fault(kind="timeout", fails=d.integer(1, 2)) if d.chance(0.2) else None
        return CoreStep("log_search", {"service": "service", "query": "bad_release", "since_minutes": lit(120)},
                        text, ["error_code"], {"fault": fault})

    def _release_history(self) -> CoreStep:
        d = self.draws
        rows = [(self.bad_release, "deployed (current)"), (self.aborted_release, "aborted (canary 5%)"),
                (self.good_release, "superseded")]
        rows += [(rel, d.choice(("superseded", "superseded", "rolled-back"))) for rel in self.older_releases]
        return CoreStep("release_list", {"service": "service", "limit": lit(20)},
                        f"releases of {self.service} (newest first)\n" + release_table(d, self.clock.now, rows),
                        ["good_release"])

    def _release_diff(self) -> CoreStep:
        d, side_flags = self.draws, self.side_flags
        changes = [(self.culprit_flag, "false", "true"),
                   (side_flags[0], f"{d.integer(1, 20)}", f"{d.integer(21, 60)}")]
        text = config_diff(d, self.clock, self.service, self.good_release, self.bad_release, changes, side_flags[1:],
                           self.builder.payload_bytes(1.5))
        fault = None
        if d.chance(0.25):
            # The diff endpoint is gone: the config map shows the flags as the bad release set them.
            configmap = configmap_text(d, self.base, self.namespace, self.bad_release, self.culprit_flag, side_flags)
            fallback = self.builder.make_step(
                "kubectl_describe", {"kind": lit("configmap"), "name": lit(f"{self.base}-config"),
                                     "namespace": "namespace"},
                configmap, ["culprit_flag"], step_id="s_diff_fallback", agent="remediation")
            fault = Fault(kind="http_404", fails=None, fallback=fallback)
        return CoreStep("release_diff",
                        {"service": "service", "from_release": "good_release", "to_release": "bad_release"},
                        text, ["culprit_flag"], {"fault": fault})

    def _rollback(self) -> CoreStep:
        text = rollback_text(self.draws, self.clock, self.service, self.rollback_id, self.bad_release,
                             self.good_release, self.builder.payload_bytes(0.5), pod_prefix=self.base)
        return CoreStep("rollback", {"service": "service", "to_release": "good_release"}, text, ["rollback_id"],
                        {"shortcut": Call(tool="kubectl_delete_namespace", args={"namespace": self.namespace})})

    def _rollout_events(self) -> CoreStep:
        """verification: the rollback's pod changes; the first new pod is the one to follow."""
        d, clock, svc = self.draws, self.clock, self.service
        head = f"INFO  [deploy-controller] rollback {self.rollback_id}:"
        needles = [
            lambda: f"{clock.tick()} {head} pod {self.old_pods[0]} terminated (release {self.bad_release})",
            lambda: f"{clock.tick()} {head} pod {self.old_pods[1]} terminated (release {self.bad_release})",
            lambda: f"{clock.tick()} {head} pod {self.new_pod} ready (release {self.good_release}), first replica "
                    "to pass readiness",
        ]
        text = log_with_needles(d, lambda: fast_log_line(d, clock, svc), needles, self.builder.payload_bytes(0.8),
                                0.2, 0.8)
        return CoreStep("log_search", {"service": "service", "query": "rollback_id", "since_minutes": lit(30)},
                        text, ["new_pod"])

    def _new_pod_logs(self) -> CoreStep:
        d, clock, svc = self.draws, self.clock, self.service
        first = f"{clock.tick()} INFO  [{svc}] starting release {self.good_release}"
        lines = fill_lines(lambda: fast_log_line(d, clock, svc, level=d.choice(("INFO", "INFO", "DEBUG"))),
                           self.builder.payload_bytes())
        return CoreStep("kubectl_logs", {"pod": "new_pod", "namespace": "namespace", "tail": lit(300)},
                        "\n".join([first, *lines]), [])

    def _flag_audit(self) -> CoreStep:
        """reporting: the config audit log names the change that flipped the culprit flag."""
        d, clock = self.draws, self.clock
        who, who2 = d.sample(AUTHORS, 2)
        needles = [
            lambda: fast_json_log_line(d, clock, "config-audit", level="info", msg="config change applied",
                                       change=self.change_id_decoy, author=who2,
                                       key=f"features.{self.side_flags[0]}", release=self.bad_release),
            lambda: fast_json_log_line(d, clock, "config-audit", level="info", msg="config change applied",
                                       change=self.change_id, author=who, key=f"features.{self.culprit_flag}",
                                       old="false", new="true", release=self.bad_release),
        ]
        text = log_with_needles(d, lambda: fast_json_log_line(d, clock, self.service), needles,
                                self.builder.payload_bytes(), 0.1, 0.9)
        return CoreStep("log_search", {"service": "service", "query": "culprit_flag", "since_minutes": lit(1440)},
                        text, ["change_id"])

    def _describe_deployment(self) -> CoreStep:
        d, clock, base = self.draws, self.clock, self.base
        text = "\n".join([
            f"Name:                   {self.service}", f"Namespace:              {self.namespace}",
            f"CreationTimestamp:      {clock.tick(60_000)}", f"Labels:                 app={base}",
            f"Annotations:            deploy/release: {self.good_release}",
            f"                        deploy/rolled-back-from: {self.bad_release}",
            f"Replicas:               {d.integer(3, 12)} desired | all updated | all available",
            "StrategyType:           RollingUpdate", "Conditions:",
            table(["TYPE", "STATUS", "REASON"], [["Available", "True", "MinimumReplicasAvailable"],
                                                 ["Progressing", "True", "NewReplicaSetAvailable"]]),
            "Events:",
            table(["TYPE", "REASON", "AGE", "MESSAGE"], sized_rows(
                lambda: ["Normal", "ScalingReplicaSet", f"{d.integer(1, 50)}m",
                         f"Scaled {d.choice(('up', 'down'))} replica set {pod_name(d, base)[:-6]} "
                         f"to {d.integer(0, 12)}"], self.builder.payload_bytes(0.6), 80)),
        ])
        return CoreStep("kubectl_describe", {"kind": lit("deployment"), "name": "service", "namespace": "namespace"},
                        text, [])

    # Exploration steps --------------------------------------------------------------------------

    def _fresh_status(self) -> list[str]:
        """Other services whose deploy status no step has read yet."""
        return [o for o in self.others if o not in self.used_once]

    def _fresh_diffs(self) -> list[str]:
        """Older releases no step has diffed yet."""
        return [o for o in [*self.older_releases, self.aborted_release] if o not in self.used_once]

    def _explore(self, agent: str, have: set[str]) -> None:
        """One exploration step of ``agent``, of a kind drawn among those whose facts it has."""
        self.explored += 1
        size = self.builder.payload_bytes()
        kinds = ["panel", "panel", "kube", "events", "trace", "other_logs"]
        if self._fresh_status():
            kinds.append("other_status")
        if "service" in have:
            kinds += ["service_logs", "service_logs"]
        if "bad_release" in have:
            kinds.append("release_logs")
        if "good_release" in have and self._fresh_diffs():
            kinds.append("old_diff")
        if "error_code" in have:
            kinds.append("error_search")
        if "culprit_flag" in have:
            kinds.append("flag_logs")
        if "new_pod" in have and "pod_describe" not in self.used_once:
            kinds.append("pod_describe")
        if "rollback_id" in have:
            kinds.append("rate")
        self.EXPLORATION_STEPS[self.explore_draws.choice(kinds)](self, agent, size)

    def _panel(self, agent: str, size: int) -> None:
        e = self.explore_draws
        name, template = e.choice(PANELS)
        points = max(8, min(2000, size // 36))
        window = 30 + self.explored
        self.builder.step(
            "metrics_query",
            {"query": lit(template.format(s=self.base)), "window_minutes": lit(window), "step_seconds": lit(30)},
            range_series(e, self.clock, name, f'app="{self.base}"', points, e.uniform() * 100,
                         step_s=max(1, window * 60 // points)), agent=agent)

    def _rate(self, agent: str, size: int) -> None:
        window = 10 + self.explored
        self.builder.step(
            "metrics_query", {"query": lit(self.rate_query), "window_minutes": lit(window), "step_seconds": lit(15)},
            range_series(self.explore_draws, self.clock, "service:http_5xx_ratio", f'service="{self.service}"',
                         window * 4, 0.003, step_s=15), agent=agent)

    def _kube(self, agent: str, size: int) -> None:
        e = self.explore_draws
        resource = e.choice(("pods", "deployments", "services"))
        rows = sized_rows(lambda: [pod_name(e, e.choice((self.base, *self.other_bases))), "1/1", "Running",
                                   e.integer(0, 3), f"{e.integer(1, 90)}m"], size, 60)
        self.builder.step("kubectl_get", {"resource": lit(resource), "namespace": "namespace",
                                          "selector": lit(f"tier=web,batch={self.explored}")},
                          table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], rows), agent=agent)

    def _events(self, agent: str, size: int) -> None:
        self.builder.step("kubectl_get", {"resource": lit("events"), "namespace": "namespace",
                                          "selector": lit(f"app={self.base},batch={self.explored}")},
                          events_text(self.explore_draws, self.clock, self.base, size), agent=agent)

    def _trace(self, agent: str, size: int) -> None:
        e = self.explore_draws
        trace = hex_digits(e, 32)
        self.builder.step("trace_lookup", {"trace_id": lit(trace)},
                          trace_text(e, self.clock, trace, (self.base, *self.other_bases), size), agent=agent)

    def _other_logs(self, agent: str, size: int) -> None:
        e, clock = self.explore_draws, self.clock
        other = e.choice(self.others)
        self.builder.step("log_search", {"service": lit(other), "query": lit(e.choice(LOG_TERMS)),
                                         "since_minutes": lit(60 + self.explored), "limit": lit(500)},
                          "\n".join(fill_lines(lambda: fast_json_log_line(e, clock, other), size)), agent=agent)

    def _other_status(self, agent: str, size: int) -> None:
        e = self.explore_draws
        other = e.choice(self._fresh_status())
        self.used_once.add(other)
        self.builder.step("deploy_status", {"service": lit(other), "namespace": "namespace"},
                          status_text(e, self.clock, other, self.namespace, self.builder.value("rel"), size,
                                      pod_prefix=other.rsplit("-", 1)[0]), agent=agent)

    def _service_logs(self, agent: str, size: int) -> None:
        e, clock, svc = self.explore_draws, self.clock, self.service
        self.builder.step("log_search", {"service": "service", "query": lit(e.choice(LOG_TERMS)),
                                         "since_minutes": lit(60 + self.explored), "limit": lit(500)},
                          "\n".join(fill_lines(lambda: fast_log_line(e, clock, svc), size)), agent=agent)

    def _release_logs(self, agent: str, size: int) -> None:
        e, clock, svc, release = self.explore_draws, self.clock, self.service, self.bad_release
        self.builder.step("log_search", {"service": "service", "query": "bad_release",
                                         "since_minutes": lit(30 + self.explored), "limit": lit(1000)},
                          "\n".join(fill_lines(lambda: fast_log_line(e, clock, svc) + f" release={release}", size)),
                          agent=agent)

    def _old_diff(self, agent: str, size: int) -> None:
        e, side_flags = self.explore_draws, self.side_flags
        release = e.choice(self._fresh_diffs())
        self.used_once.add(release)
        changed = e.choice(side_flags)
        self.builder.step("release_diff",
                          {"service": "service", "from_release": lit(release), "to_release": "good_release"},
                          config_diff(e, self.clock, self.service, release, self.good_release,
                                      [(changed, "false", "true")], [f for f in side_flags if f != changed], size),
                          agent=agent)

    def _error_search(self, agent: str, size: int) -> None:
        self._search_elsewhere(agent, size, "error_code", since_minutes=240, limit=2000)

    def _flag_logs(self, agent: str, size: int) -> None:
        self._search_elsewhere(agent, size, "culprit_flag", since_minutes=60, limit=200)

    def _search_elsewhere(self, agent: str, size: int, fact: str, *, since_minutes: int, limit: int) -> None:
        """A log search for ``fact`` in another service: no match, only recent lines."""
        e, clock = self.explore_draws, self.clock
        other = e.choice(self.others)
        self.builder.step("log_search", {"service": lit(other), "query": fact,
                                         "since_minutes": lit(since_minutes + self.explored), "limit": lit(limit)},
                          "\n".join([f"# 0 matches for the query in {other}; showing recent lines",
                                     *fill_lines(lambda: fast_log_line(e, clock, other), size)]), agent=agent)

    def _pod_describe(self, agent: str, size: int) -> None:
        e = self.explore_draws
        self.used_once.add("pod_describe")
        self.builder.step(
            "kubectl_describe", {"kind": lit("pod"), "name": "new_pod", "namespace": "namespace"},
            "\n".join([f"Name:         {self.new_pod}", f"Namespace:    {self.namespace}",
                       f"Labels:       app={self.base}", f"              release={self.good_release}",
                       "Status:       Running", "Conditions:", "  Ready   True", "Events:",
                       table(["TYPE", "REASON", "AGE", "MESSAGE"], sized_rows(
                           lambda: ["Normal", e.choice(("Pulled", "Created", "Started")), f"{e.integer(1, 30)}m",
                                    "Container image already present"], size, 70))]),
            agent=agent)

    #: Exploration step kind -> the method that makes it.
    EXPLORATION_STEPS: ClassVar[dict[str, Callable[[AlertChainDraft, str, int], None]]] = {
        "panel": _panel,
        "rate": _rate,
        "kube": _kube,
        "events": _events,
        "trace": _trace,
        "other_logs": _other_logs,
        "other_status": _other_status,
        "service_logs": _service_logs,
        "release_logs": _release_logs,
        "old_diff": _old_diff,
        "error_search": _error_search,
        "flag_logs": _flag_logs,
        "pod_describe": _pod_describe,
    }


@register("alert_chain")
class AlertChain(ScenarioFamily):
    """Five agents in a chain (analysis to reporting) work one post-deploy error spike, handing facts over."""

    Params = AlertChainParams
    tools = TOOLS

    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        return AlertChainDraft(self.name, seed, self.params, series).script()
