"""Seeded generators of simulated long ops sessions, and their registry.

Each family module declares the tools its scripts call (``tools``, next to the family); registering
the family adds them to `harness.core.tools.CATALOGUE`, where the runtime looks their contracts up.
Third-party packages add families, with tools of their own, through the ``ctxbench.scenarios``
entry-point group.
"""

from harness.core.tools import CATALOGUE
from scenarios import (  # noqa: F401  importing registers the built-in families
    alert_chain,
    code_repair,
    db_slow_query,
    deploy_regression,
    k8s_crashloop,
    log_triage,
    mix,
)
from scenarios.base import SessionScript, generate, get, names, register

__all__ = ["SessionScript", "generate", "get", "names", "register"]

#: The order the catalogue lists the built-in families' tools in, by tool server (kubectl; logs, traces
#: and metrics; the database; rollouts; code), whatever order the families register in: a model sees
#: the tools in this order and an unknown-tool error lists them so. Tools of other families follow, in
#: the order they are registered.
BUILT_IN_TOOL_ORDER: tuple[str, ...] = (
    "kubectl_get", "kubectl_describe", "kubectl_logs", "kubectl_set_resources", "kubectl_delete_namespace",
    "log_search", "trace_lookup", "metrics_query",
    "db_query", "db_explain", "db_create_index", "db_drop_table",
    "deploy_status", "release_list", "release_diff", "rollback", "restart_service",
    "open_file", "scroll", "search_repo", "run_tests", "edit_file", "bash", "submit", "delete_file",
)
CATALOGUE.list_first(BUILT_IN_TOOL_ORDER)
