"""Hostile cases for what ``replay`` and ``fit`` read: trace files and folders as a careless user or an unlucky
file system hands them over.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops).
"""

from __future__ import annotations

from tests.hostile.cases import Case, Op, add  # noqa: F401

#: The families this module adds (each case id starts with its family and a dash).
FAMILIES: tuple[str, ...] = ()
