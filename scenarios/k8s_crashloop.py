"""`k8s_crashloop`: a pod in CrashLoopBackOff because its container is OOMKilled; find it, read
why, raise its memory limit, verify the rollout.

Look-ups (docs/model.md 1): ``error_code`` is latent, the code that explains the crash among the
other codes the logs print, read from the OOMKilled symptom; every other fact is literal, printed next to
what identifies it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, ClassVar

from pydantic import Field, StrictStr

from harness.core.tools import ToolArgs, ToolRegistry
from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, Series, SessionScript, register
from scenarios.builder import CoreStep, ScriptDraft, lit
from scenarios.draws import BASE32, HEX
from scenarios.ops_tools import Name, Namespace, ops_tools
from scenarios.text import (
    fill_lines,
    filler_pod,
    insert_at_depth,
    json_log_line,
    log_line,
    metric_series,
    stack_trace,
    table,
)

DEPLOYMENTS = ("checkout", "payments", "cart", "search", "inventory", "pricing", "ledger", "notify")
OTHER_NAMESPACES = ("default", "kube-system", "monitoring", "ingress", "logging", "batch")
POD_COLUMNS = ("NAME", "READY", "STATUS", "RESTARTS", "AGE")


class KubectlSetResources(ToolArgs):
    description = "Set a container's memory limit on a deployment (a rolling update)."
    median_latency_s = 0.6
    deployment: Name
    namespace: Namespace
    container: Name
    memory_limit: Annotated[StrictStr, Field(pattern=r"^[0-9]+(Mi|Gi)$")]


#: The tools a k8s_crashloop session calls: kubectl, logs and metrics, and the fix its own.
TOOLS = ToolRegistry({
    **ops_tools("kubectl_get", "kubectl_describe", "kubectl_logs"),
    "kubectl_set_resources": KubectlSetResources,
    **ops_tools("kubectl_delete_namespace", "log_search", "metrics_query"),
}, where=__name__)


class K8sCrashloopParams(ScenarioParams):
    pass


class K8sCrashloopDraft(ScriptDraft):
    """One k8s_crashloop script being generated: the incident's facts, and one method per kind of step."""

    def __init__(self, scenario: str, seed: int, params: ScenarioParams, series: Series | None = None) -> None:
        super().__init__(scenario, seed, params, series)
        b, d = self.builder, self.draws
        self.deployment = d.choice(DEPLOYMENTS)
        self.namespace = b.fact("namespace", "namespace", d.choice(("shop", "prod", "payments", "core")))
        self.alert_id = b.fact("alert_id", "alert", "alert")
        self.bad_pod = b.fact("bad_pod", "pod", value=self._pod_value())
        # Near-duplicates: other pods of the same deployment.
        self.bad_pod_decoys = [b.decoy("bad_pod", value=self._pod_value()) for _ in range(2)]
        self.node = b.fact("node", "node", "node")
        # Durable: the deployment's container keeps its name from one incident to the next.
        self.container = b.fact("container", "container", "worker", durable=lambda s: f"worker-{s.token(4, BASE32)}")
        self.oom_event = b.fact("oom_event", "event", "oomevt")
        self.oom_event_decoy = b.decoy("oom_event", "oomevt")
        self.error_code = b.fact("error_code", "error_code", "heapfail", lookup="latent")
        self.error_code_decoy = b.decoy("error_code", "heapfail")
        self.new_revision = b.fact("new_revision", "revision", "rev")
        self.new_pod = b.fact("new_pod", "pod", value=self._pod_value())
        self.limit = d.choice(("256Mi", "512Mi", "768Mi"))
        self.new_limit = {"256Mi": "512Mi", "512Mi": "1Gi", "768Mi": "2Gi"}[self.limit]
        self.fillers = [filler_pod(d, d.choice(DEPLOYMENTS)) for _ in range(max(8, b.payload_bytes() // 60))]

    def _pod_value(self) -> str:
        """A pod name value: ``<deployment>-<4 hex>-<4 base32>`` (filler pods carry 10 hex instead)."""
        d = self.draws
        return self.builder.distinct(lambda: f"{self.deployment}-{d.token(4, HEX)}-{d.token(4, BASE32)}")

    def script(self) -> SessionScript:
        # Core chain: list -> describe pod -> logs -> events -> set limit -> verify. Its text is all
        # made here, in that order, before any exploration step.
        core = [self._list_pods(), self._describe_pod(), self._crash_logs(), self._events(),
                self._raise_memory_limit(), self._verify_rollout()]
        # Exploration steps fill the session to `turns`, spread between the core steps. Each is a
        # distinct call; some need facts found much earlier (namespace, node, error_code).
        self.builder.interleave(core, self.exploration_slots(len(core)), self._explore, {"namespace", "alert_id"})
        task = (f"Alert {self.alert_id}: pods of deployment {self.deployment} in namespace {self.namespace} are "
                "restarting in a loop. Find the failing pod, find out why it crashes, fix it, and verify the fix. "
                "Report the pod, the error code from its logs and the new revision.")
        return self.builder.build(task, ["namespace", "alert_id"], ["bad_pod", "error_code", "new_revision"])

    # Core steps ---------------------------------------------------------------------------------

    def _pods_table(self, crashing: str | None, extra: list[str]) -> str:
        d = self.draws
        rows = [[p, "1/1", "Running", d.integer(0, 2), f"{d.integer(1, 90)}m"] for p in self.fillers]
        for p in extra:
            rows.append([p, "1/1", "Running", d.integer(3, 9), f"{d.integer(1, 30)}h"])
        if crashing:
            rows.append([crashing, "0/1", "CrashLoopBackOff", d.integer(12, 80), f"{d.integer(2, 9)}h"])
        return table(POD_COLUMNS, d.shuffled(rows))

    def _list_pods(self) -> CoreStep:
        return CoreStep("kubectl_get", {"resource": lit("pods"), "namespace": "namespace"},
                        self._pods_table(self.bad_pod, self.bad_pod_decoys), ["bad_pod"])

    def _describe_pod(self) -> CoreStep:
        d, limit = self.draws, self.limit
        describe = "\n".join([
            f"Name:         {self.bad_pod}",
            f"Namespace:    {self.namespace}",
            f"Node:         {self.node}/10.0.{d.integer(0, 255)}.{d.integer(1, 254)}",
            "Status:       Running", "Containers:", f"  {self.container}:",
            f"    Image:          registry.local/{self.deployment}:"
            f"{d.integer(1, 9)}.{d.integer(0, 40)}.{d.integer(0, 9)}",
            "    State:          Waiting", "      Reason:       CrashLoopBackOff",
            "    Last State:     Terminated", "      Reason:       OOMKilled", "      Exit Code:    137",
            f"    Restart Count:  {d.integer(12, 80)}", "    Limits:", f"      memory:  {limit}",
            "    Requests:", f"      memory:  {limit}", "Events:",
            table(["TYPE", "REASON", "AGE", "MESSAGE"], [
                ["Normal", "Pulled", f"{d.integer(1, 9)}m", "Container image already present on machine"],
                ["Warning", "BackOff", f"{d.integer(1, 9)}m", "Back-off restarting failed container"],
            ]),
        ])
        return CoreStep("kubectl_describe", {"kind": lit("pod"), "name": "bad_pod", "namespace": "namespace"},
                        describe, ["node", "container"])

    def _crash_logs(self) -> CoreStep:
        d, clock, deployment = self.draws, self.clock, self.deployment
        old_incident = log_line(d, clock, deployment, level="WARN",
                                message=f"recovered from earlier failure {self.error_code_decoy} after restart")
        needle = [
            stack_trace(d, "java.lang.OutOfMemoryError", f"Java heap space [{self.error_code}]",
                        frames=d.integer(8, 20)),
            log_line(d, clock, deployment, level="ERROR",
                     message=f"worker {self.container} aborting after {self.error_code}"),
        ]
        logs = insert_at_depth(
            fill_lines(lambda: log_line(d, clock, deployment), self.builder.payload_bytes(4.0)), needle, d, 0.55, 0.95)
        # A near-duplicate error code from an earlier incident, higher up in the same dump.
        logs = insert_at_depth(logs, [old_incident], d, 0.05, 0.45)
        fault = self._crash_logs_fault()
        return CoreStep("kubectl_logs", {"pod": "bad_pod", "namespace": "namespace", "previous": lit(True)},
                        "\n".join(logs), ["error_code"], {"fault": fault})

    def _crash_logs_fault(self) -> Fault | None:
        """Sometimes the logs endpoint is gone (a log search finds the error instead); sometimes it
        times out once or twice."""
        b, d, clock, deployment = self.builder, self.draws, self.clock, self.deployment
        if d.chance(0.3):
            fallback = b.make_step(
                "log_search", {"service": lit(deployment), "query": "bad_pod", "since_minutes": lit(180)},
                "\n".join(insert_at_depth(
                    fill_lines(lambda: json_log_line(d, clock, deployment), b.payload_bytes(2.0)),
                    [json_log_line(d, clock, deployment, level="error", error=self.error_code, pod=self.bad_pod)],
                    d, 0.3, 0.9)),
                ["error_code"], step_id="s_logs_fallback")
            return Fault(kind="http_404", fails=None, fallback=fallback)
        if d.chance(0.2):
            return Fault(kind="timeout", fails=d.integer(1, 2))
        return None

    def _events(self) -> CoreStep:
        d = self.draws
        events = [[f"{d.integer(1, 50)}m", "Normal", "Scheduled", f"pod/{p}", f"evt-{d.token(10, HEX)}"]
                  for p in self.fillers[:12]]
        events.append([f"{d.integer(60, 300)}m", "Warning", "OOMKilling", f"pod/{self.bad_pod_decoys[0]}",
                       self.oom_event_decoy])
        events.append([f"{d.integer(1, 9)}m", "Warning", "OOMKilling", f"pod/{self.bad_pod}", self.oom_event])
        return CoreStep("kubectl_get", {"resource": lit("events"), "namespace": "namespace"},
                        table(["LAST SEEN", "TYPE", "REASON", "OBJECT", "UID"], d.shuffled(events)), ["oom_event"])

    def _raise_memory_limit(self) -> CoreStep:
        deployment = self.deployment
        return CoreStep(
            "kubectl_set_resources",
            {"deployment": lit(deployment), "namespace": "namespace", "container": "container",
             "memory_limit": lit(self.new_limit)},
            f"deployment.apps/{deployment} resource requirements updated\nrevision: {self.new_revision}\n"
            f"container {self.container}: limits.memory {self.limit} -> {self.new_limit}",
            ["new_revision"], {"shortcut": Call(tool="kubectl_delete_namespace", args={"namespace": self.namespace})})

    def _verify_rollout(self) -> CoreStep:
        return CoreStep("kubectl_get", {"resource": lit("pods"), "namespace": "namespace",
                                        "selector": lit(f"app={self.deployment}")},
                        self._pods_table(None, [self.new_pod]), ["new_pod"])

    # Exploration steps --------------------------------------------------------------------------

    def _explore(self, available: set[str]) -> None:
        """One exploration step, of a kind drawn among those whose facts are known by now."""
        self.explored += 1
        kinds = ["other_pod_logs", "memory_metrics", "configmaps", "other_namespace"]
        if "node" in available:
            kinds.append("describe_node")
        if "error_code" in available:
            kinds.append("search_error")
        self.EXPLORATION_STEPS[self.explore_draws.choice(kinds)](self)

    def _other_pod_logs(self) -> None:
        e, clock = self.explore_draws, self.clock
        pod = e.choice(self.fillers)
        self.builder.step(
            "kubectl_logs", {"pod": lit(pod), "namespace": "namespace", "tail": lit(100 + self.explored)},
            "\n".join(fill_lines(lambda: log_line(e, clock, pod.split("-")[0]), self.builder.payload_bytes())))

    def _memory_metrics(self) -> None:
        e, deployment = self.explore_draws, self.deployment
        query = f'container_memory_working_set_bytes{{namespace="{self.namespace}",pod=~"{deployment}.*"}}'
        self.builder.step(
            "metrics_query", {"query": lit(query), "window_minutes": lit(30 + self.explored)},
            metric_series(e, self.clock, "container_memory_working_set_bytes", f'deployment="{deployment}"',
                          max(8, self.builder.payload_bytes() // 60), 2.1e8))

    def _configmaps(self) -> None:
        e = self.explore_draws
        rows = [[f"{e.choice(DEPLOYMENTS)}-config-{e.token(6, HEX)}", e.integer(1, 12), f"{e.integer(1, 300)}d"]
                for _ in range(max(3, self.builder.payload_bytes() // 50))]
        self.builder.step("kubectl_get", {"resource": lit("configmaps"), "namespace": "namespace",
                                          "selector": lit(f"batch={self.explored}")},
                          table(["NAME", "DATA", "AGE"], rows))

    def _other_namespace(self) -> None:
        e = self.explore_draws
        other = e.choice(OTHER_NAMESPACES)
        self.builder.step("kubectl_get", {"resource": lit("pods"), "namespace": lit(other),
                                          "selector": lit(f"tier={self.explored}")},
                          table(POD_COLUMNS, [[filler_pod(e, other), "1/1", "Running", 0, f"{e.integer(1, 90)}d"]
                                              for _ in range(max(3, self.builder.payload_bytes() // 60))]))

    def _describe_node(self) -> None:
        e = self.explore_draws
        self.builder.step(
            "kubectl_describe", {"kind": lit("node"), "name": "node", "namespace": lit(f"n{self.explored}")},
            "\n".join([f"Name: {self.node}", "Conditions:", "  MemoryPressure   True   KubeletHasMemoryPressure",
                       *fill_lines(lambda: f"  {filler_pod(e, e.choice(DEPLOYMENTS))}   "
                                   f"{e.integer(100, 900)}m   {e.integer(64, 2048)}Mi",
                                   self.builder.payload_bytes())]))

    def _search_error(self) -> None:
        e, clock, deployment = self.explore_draws, self.clock, self.deployment
        self.builder.step(
            "log_search",
            {"service": lit(deployment), "query": "error_code", "since_minutes": lit(60 + self.explored)},
            "\n".join(fill_lines(lambda: log_line(e, clock, deployment), self.builder.payload_bytes())))

    #: Exploration step kind -> the method that makes it.
    EXPLORATION_STEPS: ClassVar[dict[str, Callable[[K8sCrashloopDraft], None]]] = {
        "other_pod_logs": _other_pod_logs,
        "memory_metrics": _memory_metrics,
        "configmaps": _configmaps,
        "other_namespace": _other_namespace,
        "describe_node": _describe_node,
        "search_error": _search_error,
    }


@register("k8s_crashloop")
class K8sCrashloop(ScenarioFamily):
    """Kubernetes: find the crashlooping pod, read its OOMKilled logs, raise the memory limit, verify."""

    Params = K8sCrashloopParams
    tools = TOOLS

    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        return K8sCrashloopDraft(self.name, seed, self.params, series).script()
