"""Strategies whose sessions are identical, row for row: one row of the report, not two.

Two strategies whose rules make the same decisions on a workload (a truncation that never fires at its
output sizes, a trigger never reached) replay every session the same way. Shown as two rows they look
like two independent results that agree; they are one result. :func:`identical_groups` finds them by
comparing every column of every session but the strategy's own name, and :func:`merge_identical` keeps
one copy under a name that lists them all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

__all__ = ["MERGED_SEPARATOR", "IdenticalGroup", "identical_groups", "merge_identical"]

#: Between the names of strategies merged into one row: ``sliding_window = truncate_then_slide``.
MERGED_SEPARATOR = " = "
#: The columns that identify a session across strategies, the order rows are compared in.
_SESSION_ORDER = ["scenario", "session_index"]


@dataclass(frozen=True, slots=True)
class IdenticalGroup:
    """Strategies (in the run's order) whose session rows are identical, and how many sessions and
    columns were compared."""

    strategies: tuple[str, ...]
    sessions: int
    columns: int

    @property
    def name(self) -> str:
        """The merged row's name: every strategy of the group, in the run's order."""
        return MERGED_SEPARATOR.join(self.strategies)

    def note(self) -> str:
        """What a reader is told about the merged row."""
        names = ", ".join(self.strategies[:-1]) + f" and {self.strategies[-1]}"
        return (f"{names} replayed every one of the {self.sessions:,} sessions identically (all {self.columns} "
                "columns of the sessions table): on this workload their rules made the same decisions (a trigger "
                "or truncation that never fired differently), so they are one row.")


def _digest(rows: pd.DataFrame) -> str:
    """A digest of a strategy's session rows (without its name), in session order."""
    ordered = rows.sort_values(_SESSION_ORDER, kind="stable").reset_index(drop=True)
    hashed = pd.util.hash_pandas_object(ordered, index=False).to_numpy()
    return hashlib.blake2b(hashed.tobytes() + ",".join(ordered.columns).encode(), digest_size=16).hexdigest()


def identical_groups(sessions: pd.DataFrame, order: Sequence[str]) -> list[IdenticalGroup]:
    """The groups of two or more strategies of ``sessions`` whose rows agree in every column but
    ``strategy`` over the same sessions, each in ``order`` (the run's), groups by their first member."""
    if sessions.empty or "strategy" not in sessions.columns:
        return []
    compared = [c for c in sessions.columns if c != "strategy"]
    by_digest: dict[tuple[int, str], list[str]] = {}
    for strategy, rows in sessions.groupby("strategy", sort=True):
        key = (len(rows), _digest(rows[compared]))
        by_digest.setdefault(key, []).append(str(strategy))
    rank = {name: i for i, name in enumerate(order)}
    groups = []
    for (n, _), names in by_digest.items():
        if len(names) > 1:
            ranked = tuple(sorted(names, key=lambda s: (rank.get(s, len(rank)), s)))
            groups.append(IdenticalGroup(ranked, n, len(compared)))
    return sorted(groups, key=lambda g: (rank.get(g.strategies[0], len(rank)), g.strategies))


def merge_identical(frame: pd.DataFrame, groups: Sequence[IdenticalGroup]) -> pd.DataFrame:
    """``frame`` (sessions or calls, with a ``strategy`` column) with each group's rows kept once, under
    the group's name: the first member's rows renamed, the others' dropped."""
    if not groups or frame.empty or "strategy" not in frame.columns:
        return frame
    dropped = {s for g in groups for s in g.strategies[1:]}
    renamed = {g.strategies[0]: g.name for g in groups}
    kept = frame[~frame["strategy"].isin(dropped)]
    return kept.assign(strategy=kept["strategy"].replace(renamed))
