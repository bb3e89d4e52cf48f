"""Swappable context strategies, their registry, and the pure split-point helpers.

Every public module of this package is a built-in strategy module, imported here so that its
``@register`` runs; adding one needs no edit of this file. Third-party packages add strategies through
the ``ctxbench.strategies`` entry-point group.
"""

import importlib
import pkgutil

from strategies.base import CannotReduce, ContextStrategy, create, default_names, get, names, register

__all__ = ["CannotReduce", "ContextStrategy", "create", "default_names", "get", "names", "register"]

#: Modules of this package that register no strategy: the interface and registry, the shared parameter
#: types, the split-point helpers, and the property-test kit (which needs hypothesis). A helper module
#: left out of this set is imported too, which registers nothing.
NOT_STRATEGY_MODULES = frozenset({"base", "params", "split", "testing"})


def _import_builtin_strategy_modules() -> None:
    """Import every strategy module of the package, sorted by module name. `names()` sorts the
    registered names, so the order of imports never shows in a run table or report."""
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("_") or module.name in NOT_STRATEGY_MODULES:
            continue
        importlib.import_module(f"{__name__}.{module.name}")


_import_builtin_strategy_modules()
