"""Seeded generators of simulated long ops sessions, and their registry.

Third-party packages add families through the ``ctxbench.scenarios`` entry-point group.
"""

from scenarios import k8s_crashloop, mix  # noqa: F401  importing registers the built-in families
from scenarios.base import SessionScript, generate, get, names, register

__all__ = ["SessionScript", "generate", "get", "names", "register"]
