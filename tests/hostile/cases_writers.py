"""Hostile cases for where commands write: ``--out`` targets, exports, signals, receivers.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops).
"""

from __future__ import annotations

from tests.hostile.cases import Case, Op, add  # noqa: F401

#: The families this module adds (each case id starts with its family and a dash).
FAMILIES: tuple[str, ...] = ()
