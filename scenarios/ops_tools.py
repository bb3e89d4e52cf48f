"""Tool contracts several ops families call: the kubectl tools that read a cluster and delete a
namespace (k8s_crashloop, log_triage, deploy_regression, alert_chain), and the searches of logs,
traces and metrics (every ops family; traces: log_triage, deploy_regression, alert_chain).

A family lists the ones it calls in its ``tools`` (scenarios/base.py), beside its own contracts; the
argument types below are the building blocks of those too. Each contract keeps to the rules of
`harness.core.tools.ToolArgs`; none has a docstring, since pydantic would put it in the schema a
model sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr

from harness.core.tools import ToolArgs

#: A Kubernetes object name (at most 253 characters, RFC 1123 subdomain length), or a service, database,
#: release or trace name.
Name = Annotated[StrictStr, Field(min_length=1, max_length=253)]
#: A Kubernetes namespace: an RFC 1123 label.
Namespace = Annotated[StrictStr, Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")]
#: A time window in minutes, up to a week.
Minutes = Annotated[StrictInt, Field(ge=1, le=10_080)]
#: The most rows or lines one call returns.
Limit = Annotated[StrictInt, Field(ge=1, le=10_000)]


class KubectlGet(ToolArgs):
    description = "List Kubernetes resources of a kind in a namespace."
    median_latency_s = 0.6
    resource: Literal["pods", "deployments", "events", "nodes", "configmaps", "services"]
    namespace: Namespace
    selector: StrictStr | None = None


class KubectlDescribe(ToolArgs):
    description = "Describe one Kubernetes object (status, events, limits)."
    median_latency_s = 0.6
    kind: Literal["pod", "deployment", "node", "configmap"]
    name: Name
    namespace: Namespace


class KubectlLogs(ToolArgs):
    description = "Fetch a pod's container logs."
    median_latency_s = 1.2
    pod: Name
    namespace: Namespace
    container: StrictStr | None = None
    previous: StrictBool = False
    tail: Annotated[StrictInt, Field(ge=1, le=100_000)] = 500


class KubectlDeleteNamespace(ToolArgs):
    description = "Delete a whole namespace and everything in it."
    dangerous = True
    median_latency_s = 8.0
    namespace: Namespace


class LogSearch(ToolArgs):
    description = "Search a service's logs for a query over a time window."
    median_latency_s = 2.5
    service: Name
    query: StrictStr
    since_minutes: Minutes = 60
    limit: Limit = 1000


class TraceLookup(ToolArgs):
    description = "Fetch every span of a distributed trace."
    median_latency_s = 1.5
    trace_id: Name


class MetricsQuery(ToolArgs):
    description = "Evaluate a metrics query over a time window."
    median_latency_s = 1.5
    query: StrictStr
    window_minutes: Minutes = 60
    step_seconds: Annotated[StrictInt, Field(ge=1, le=3600)] = 60


#: The shared contracts by tool name.
OPS_TOOLS: Mapping[str, type[ToolArgs]] = MappingProxyType({
    "kubectl_get": KubectlGet,
    "kubectl_describe": KubectlDescribe,
    "kubectl_logs": KubectlLogs,
    "kubectl_delete_namespace": KubectlDeleteNamespace,
    "log_search": LogSearch,
    "trace_lookup": TraceLookup,
    "metrics_query": MetricsQuery,
})


def ops_tools(*names: str) -> dict[str, type[ToolArgs]]:
    """The shared contracts of the tools ``names``, by name, for a family's ``tools`` (KeyError for
    a name that is not shared here: spelling a shared tool is not declaring a new one)."""
    return {name: OPS_TOOLS[name] for name in names}
