"""`k8s_crashloop`: a pod in CrashLoopBackOff because its container is OOMKilled; find it, read
why, raise its memory limit, verify the rollout."""

from __future__ import annotations

from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, SessionScript, register
from scenarios.builder import ScriptBuilder, lit
from scenarios.draws import BASE32, HEX
from scenarios.text import (
    Clock,
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


class K8sCrashloopParams(ScenarioParams):
    pass


def pod_value(b: ScriptBuilder, deployment: str) -> str:
    """A pod name value: ``<deployment>-<4 hex>-<4 base32>`` (filler pods carry 10 hex instead)."""
    return b._fresh(lambda: f"{deployment}-{b.draws.token(4, HEX)}-{b.draws.token(4, BASE32)}")


@register("k8s_crashloop")
class K8sCrashloop(ScenarioFamily):
    """Kubernetes: find the crashlooping pod, read its OOMKilled logs, raise the memory limit, verify."""

    Params = K8sCrashloopParams

    def generate(self, seed: int) -> SessionScript:
        b = ScriptBuilder(self.name, seed, self.params)
        d = b.draws
        clock = Clock(d.child("clock"))
        turns = b.turns()
        deployment = d.choice(DEPLOYMENTS)

        ns = b.fact("namespace", "namespace", d.choice(("shop", "prod", "payments", "core")))
        alert = b.fact("alert_id", "alert", "alert")
        bad_pod = b.fact("bad_pod", "pod", value=pod_value(b, deployment))
        for _ in range(2):  # near-duplicates: other pods of the same deployment
            b.decoy("bad_pod", value=pod_value(b, deployment))
        node = b.fact("node", "node", "node")
        container = b.fact("container", "container", "worker")
        oom_event = b.fact("oom_event", "event", "oomevt")
        b.decoy("oom_event", "oomevt")
        error_code = b.fact("error_code", "error_code", "heapfail")
        b.decoy("error_code", "heapfail")
        revision = b.fact("new_revision", "revision", "rev")
        new_pod = b.fact("new_pod", "pod", value=pod_value(b, deployment))
        limit = d.choice(("256Mi", "512Mi", "768Mi"))
        new_limit = {"256Mi": "512Mi", "512Mi": "1Gi", "768Mi": "2Gi"}[limit]
        fillers = [filler_pod(d, d.choice(DEPLOYMENTS)) for _ in range(max(8, b.payload_bytes() // 60))]

        def pods_table(crashing: str | None, extra: list[str]) -> str:
            rows = [[p, "1/1", "Running", d.integer(0, 2), f"{d.integer(1, 90)}m"] for p in fillers]
            for p in extra:
                rows.append([p, "1/1", "Running", d.integer(3, 9), f"{d.integer(1, 30)}h"])
            if crashing:
                rows.append([crashing, "0/1", "CrashLoopBackOff", d.integer(12, 80), f"{d.integer(2, 9)}h"])
            return table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"], d.shuffled(rows))

        # Core chain: list -> describe pod -> logs -> events -> describe deployment -> set limit -> verify.
        core: list[tuple[str, dict[str, str], str, list[str], dict[str, object]]] = []
        core.append(("kubectl_get", {"resource": lit("pods"), "namespace": "namespace"},
                     pods_table(bad_pod, b.decoys["bad_pod"]), ["bad_pod"], {}))
        describe = "\n".join([
            f"Name:         {bad_pod}",
            f"Namespace:    {ns}",
            f"Node:         {node}/10.0.{d.integer(0, 255)}.{d.integer(1, 254)}",
            "Status:       Running", "Containers:", f"  {container}:",
            f"    Image:          registry.local/{deployment}:{d.integer(1, 9)}.{d.integer(0, 40)}.{d.integer(0, 9)}",
            "    State:          Waiting", "      Reason:       CrashLoopBackOff",
            "    Last State:     Terminated", "      Reason:       OOMKilled", "      Exit Code:    137",
            f"    Restart Count:  {d.integer(12, 80)}", "    Limits:", f"      memory:  {limit}",
            "    Requests:", f"      memory:  {limit}", "Events:",
            table(["TYPE", "REASON", "AGE", "MESSAGE"], [
                ["Normal", "Pulled", f"{d.integer(1, 9)}m", "Container image already present on machine"],
                ["Warning", "BackOff", f"{d.integer(1, 9)}m", "Back-off restarting failed container"],
            ]),
        ])
        core.append(("kubectl_describe", {"kind": lit("pod"), "name": "bad_pod", "namespace": "namespace"},
                     describe, ["node", "container"], {}))
        old_incident = log_line(d, clock, deployment, level="WARN",
                                message=f"recovered from earlier failure {b.decoys['error_code'][0]} after restart")
        needle = [
            stack_trace(d, "java.lang.OutOfMemoryError", f"Java heap space [{error_code}]", frames=d.integer(8, 20)),
            log_line(d, clock, deployment, level="ERROR", message=f"worker {container} aborting after {error_code}"),
        ]
        logs = insert_at_depth(
            fill_lines(lambda: log_line(d, clock, deployment), b.payload_bytes(4.0)), needle, d, 0.55, 0.95)
        # A near-duplicate error code from an earlier incident, higher up in the same dump.
        logs = insert_at_depth(logs, [old_incident], d, 0.05, 0.45)
        logs_fault = None
        if d.chance(0.3):
            fallback = b.make_step(
                "log_search", {"service": lit(deployment), "query": "bad_pod", "since_minutes": lit(180)},
                "\n".join(insert_at_depth(
                    fill_lines(lambda: json_log_line(d, clock, deployment), b.payload_bytes(2.0)),
                    [json_log_line(d, clock, deployment, level="error", error=error_code, pod=bad_pod)], d, 0.3, 0.9)),
                ["error_code"], step_id="s_logs_fallback")
            logs_fault = Fault(kind="http_404", fails=None, fallback=fallback)
        elif d.chance(0.2):
            logs_fault = Fault(kind="timeout", fails=d.integer(1, 2))
        core.append(("kubectl_logs", {"pod": "bad_pod", "namespace": "namespace", "previous": lit(True)},
                     "\n".join(logs), ["error_code"], {"fault": logs_fault}))
        events = [[f"{d.integer(1, 50)}m", "Normal", "Scheduled", f"pod/{p}", f"evt-{d.token(10, HEX)}"]
                  for p in fillers[:12]]
        events.append([f"{d.integer(60, 300)}m", "Warning", "OOMKilling", f"pod/{b.decoys['bad_pod'][0]}",
                       b.decoys["oom_event"][0]])
        events.append([f"{d.integer(1, 9)}m", "Warning", "OOMKilling", f"pod/{bad_pod}", oom_event])
        core.append(("kubectl_get", {"resource": lit("events"), "namespace": "namespace"},
                     table(["LAST SEEN", "TYPE", "REASON", "OBJECT", "UID"], d.shuffled(events)), ["oom_event"], {}))
        core.append(("kubectl_set_resources",
                     {"deployment": lit(deployment), "namespace": "namespace", "container": "container",
                      "memory_limit": lit(new_limit)},
                     f"deployment.apps/{deployment} resource requirements updated\nrevision: {revision}\n"
                     f"container {container}: limits.memory {limit} -> {new_limit}",
                     ["new_revision"], {"shortcut": Call(tool="kubectl_delete_namespace", args={"namespace": ns})}))
        core.append(("kubectl_get", {"resource": lit("pods"), "namespace": "namespace",
                                     "selector": lit(f"app={deployment}")},
                     pods_table(None, [new_pod]), ["new_pod"], {}))

        # Exploration steps fill the session to `turns`, spread between the core steps. Each is a
        # distinct call; some need facts found much earlier (namespace, node, error_code).
        n_explore = max(0, turns - len(core))
        explore_draws = d.child("explore")
        slots = sorted(explore_draws.integer(1, len(core) - 1) for _ in range(n_explore))
        counter = 0

        def explore(available: set[str]) -> None:
            nonlocal counter
            counter += 1
            e = explore_draws
            options = ["other_pod_logs", "metrics", "configmaps", "other_ns"]
            if "node" in available:
                options.append("node")
            if "error_code" in available:
                options.append("search_error")
            kind = e.choice(options)
            if kind == "other_pod_logs":
                pod = e.choice(fillers)
                b.step("kubectl_logs", {"pod": lit(pod), "namespace": "namespace", "tail": lit(100 + counter)},
                       "\n".join(fill_lines(lambda: log_line(e, clock, pod.split("-")[0]), b.payload_bytes())))
            elif kind == "metrics":
                b.step("metrics_query",
                       {"query": lit(f'container_memory_working_set_bytes{{namespace="{ns}",pod=~"{deployment}.*"}}'),
                        "window_minutes": lit(30 + counter)},
                       metric_series(e, clock, "container_memory_working_set_bytes", f'deployment="{deployment}"',
                                     max(8, b.payload_bytes() // 60), 2.1e8))
            elif kind == "configmaps":
                rows = [[f"{e.choice(DEPLOYMENTS)}-config-{e.token(6, HEX)}", e.integer(1, 12), f"{e.integer(1, 300)}d"]
                        for _ in range(max(3, b.payload_bytes() // 50))]
                b.step("kubectl_get", {"resource": lit("configmaps"), "namespace": "namespace",
                                       "selector": lit(f"batch={counter}")}, table(["NAME", "DATA", "AGE"], rows))
            elif kind == "other_ns":
                other = e.choice(OTHER_NAMESPACES)
                b.step("kubectl_get", {"resource": lit("pods"), "namespace": lit(other),
                                       "selector": lit(f"tier={counter}")},
                       table(["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
                             [[filler_pod(e, other), "1/1", "Running", 0, f"{e.integer(1, 90)}d"]
                              for _ in range(max(3, b.payload_bytes() // 60))]))
            elif kind == "node":
                b.step("kubectl_describe", {"kind": lit("node"), "name": "node", "namespace": lit(f"n{counter}")},
                       "\n".join([f"Name: {node}", "Conditions:", "  MemoryPressure   True   KubeletHasMemoryPressure",
                                  *fill_lines(lambda: f"  {filler_pod(e, e.choice(DEPLOYMENTS))}   "
                                              f"{e.integer(100, 900)}m   {e.integer(64, 2048)}Mi", b.payload_bytes())]))
            else:
                b.step("log_search",
                       {"service": lit(deployment), "query": "error_code", "since_minutes": lit(60 + counter)},
                       "\n".join(fill_lines(lambda: log_line(e, clock, deployment), b.payload_bytes())))

        available = {"namespace", "alert_id"}
        b.interleave(core, slots, explore, available)
        task = (f"Alert {alert}: pods of deployment {deployment} in namespace {ns} are restarting in a loop. "
                "Find the failing pod, find out why it crashes, fix it, and verify the fix. Report the pod, "
                "the error code from its logs and the new revision.")
        return b.build(task, ["namespace", "alert_id"], ["bad_pod", "error_code", "new_revision"])
