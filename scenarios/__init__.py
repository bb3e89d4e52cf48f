"""Seeded generators of simulated long ops sessions, and their registry.

Third-party packages add families through the ``ctxbench.scenarios`` entry-point group.
"""

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
