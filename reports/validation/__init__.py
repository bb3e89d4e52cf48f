"""The validation document, ``docs/validation.md``: every published target with our figure, its 95% CI
and a verdict, computed from the tables `harness.run.validation` wrote (reads tables only, like the rest
of `reports`).

One module per concern: ``document`` (assembles and writes the document), ``checks`` (the mechanism and
probe checks, with the verdict rule), ``trap`` (The Complexity Trap), ``anchors`` (Less Context,
AgentDiet), ``seed_article``, ``loops`` (the loop shapes and the stuck floor), ``history`` (what moved
since the previous document, from ``history.json``), ``data`` (the loaded directory and shared
measurements) and ``status`` (the paragraph every run report carries, from ``verdicts.json``).

The names below, the writer's and those the validation tests and the CLI read, load ``document`` when
first used: every run report imports ``status``, and loading the writer with it would load the report
renderer it calls (a cycle) and matplotlib for nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reports.validation.document import (
        PUBLISHED_POINTS,
        TRAP_MASK,
        TRAP_RAW,
        TRAP_SUMMARY,
        Bundle,
        Check,
        ValidationInputError,
        ValidationResult,
        calibration_gaps,
        load_bundle,
        refetch_evidence,
        seed_profile_rows,
        trap_checks,
        write_validation,
    )

__all__ = [
    "PUBLISHED_POINTS",
    "TRAP_MASK",
    "TRAP_RAW",
    "TRAP_SUMMARY",
    "Bundle",
    "Check",
    "ValidationInputError",
    "ValidationResult",
    "calibration_gaps",
    "load_bundle",
    "refetch_evidence",
    "seed_profile_rows",
    "trap_checks",
    "write_validation",
]


def __getattr__(name: str) -> Any:
    """One of :data:`__all__`, loaded from :mod:`reports.validation.document` on first use."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("reports.validation.document"), name)
    globals()[name] = value
    return value
