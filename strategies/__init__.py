"""Swappable context strategies, their registry, and the pure split-point helpers.

Third-party packages add strategies through the ``ctxbench.strategies`` entry-point group.
"""

from strategies import (  # noqa: F401  importing registers the built-in strategies
    condense,
    drop_all,
    observation_masking,
    offload_contracts,
    pipeline,
    sliding_window,
    summarize,
    truncate_then_slide,
    unbounded,
)
from strategies.base import CannotReduce, ContextStrategy, create, get, names, register

__all__ = ["CannotReduce", "ContextStrategy", "create", "get", "names", "register"]
