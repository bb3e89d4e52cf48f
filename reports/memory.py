"""The memory section of a report for a run with ``[series]``: tokens and turns by a session's position
in its series, memory off against memory on, with 95% intervals, and how often a stale memory was used.

Memory (OpenHands MEMORY.md semantics) is a ``<MEMORY_CONTEXT>`` block loaded into the system prompt at
the start of each session of a series, written by the agent itself at the end of the previous ones. Its
tokens are paid on every call; in return a remembered durable fact needs no look-up and a step whose
only purpose was that fact is skipped. When the fact changed since it was written, the agent uses the
stale value and the tools refuse it, as they refuse any wrong value.
"""

from __future__ import annotations

import math

import pandas as pd

from harness.core.tables import MEMORY_BUDGET_CHARS
from reports.blocks import Block, Paragraph, Section, TableBlock
from reports.stats import Metric, bootstrap, rng_for
from reports.tables import Cell, Table

__all__ = ["MECHANISM", "MEMORY_REPORT_COLUMNS", "has_series", "memory_blocks", "memory_table",
           "saved_table"]

#: The sessions columns this section reads (present only in a run with ``[series]``).
MEMORY_REPORT_COLUMNS = ("series", "series_position", "memory", "memory_chars", "memory_facts_used",
                         "stale_memory_used", "steps_skipped")
#: The sentence that explains the mechanism under the table.
MECHANISM = ("With memory on, each session of a series starts with the MEMORY.md its earlier sessions wrote, "
             "loaded into the system prompt (its tokens are paid on every call); a durable fact found there "
             "needs no look-up and a step whose only purpose was that fact is skipped, so later positions take "
             "fewer turns. A fact that changed since it was written is used stale and refused by the tools, "
             "which costs a retry or the session.")
#: What the first table of the section says.
SAVED_NOTE = ("What memory saves by position in the series: per session, memory off minus memory on (the strategies "
              "pooled, the same sessions paired), with a 95% bootstrap interval over sessions; positive means memory "
              "saved it. Position 0 starts with an empty memory. Below it, each setting's own means.")
#: The z value of a two-sided 95% normal interval of a mean.
_Z95 = 1.959964


def has_series(sessions: pd.DataFrame) -> bool:
    """Whether the sessions come from a run with ``[series]``."""
    return all(c in sessions.columns for c in MEMORY_REPORT_COLUMNS)


def _mean_cell(values: pd.Series) -> Cell:
    """The mean with its 95% normal interval (sessions are independent draws at one position)."""
    n = len(values)
    mean = float(values.mean())
    half = _Z95 * float(values.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    return Cell(f"{mean:,.1f}", sub=f"[{mean - half:,.1f}, {mean + half:,.1f}]")


def memory_table(sessions: pd.DataFrame) -> Table:
    """A row per (position in the series, memory off/on): sessions, turns, input tokens (each with a 95%
    interval), steps skipped and the share of sessions that used a stale memory."""
    rows: list[list[Cell]] = []
    for (position, memory), group in sessions.groupby(["series_position", "memory"], sort=True):
        rows.append([Cell(str(int(position)), css="name"), Cell("on" if memory else "off"), Cell(f"{len(group)}"),
                     _mean_cell(group["turns"]), _mean_cell(group["input_tokens"]),
                     Cell(f"{group['steps_skipped'].mean():.2f}"),
                     Cell(f"{100 * group['stale_memory_used'].mean():.1f}%"),
                     Cell(f"{group['memory_chars'].mean():,.0f}", sub=f"max {group['memory_chars'].max():,.0f}")])
    return Table("memory-table", ["position", "memory", "sessions", "turns", "input tokens", "steps skipped",
                                  "stale memory used", f"memory loaded, chars (budget {MEMORY_BUDGET_CHARS:,})"],
                 rows)


_SAVED = {"input_tokens": Metric("tokens_saved", "input tokens saved", "tokens", "mean", "saved"),
          "turns": Metric("turns_saved", "turns saved", "turns", "mean", "saved")}


def saved_table(sessions: pd.DataFrame, *, resamples: int = 2000) -> Table:
    """What memory saves at each position of the series, paired over the same sessions: for each session
    (scenario, session_index) the mean over its memory-off rows minus the mean over its memory-on rows (the
    run's strategies pooled; a session without both is left out), with a 95% bootstrap interval over
    sessions. Positive: memory saved it."""
    key = ["scenario", "session_index"]
    by_memory = sessions.assign(on=sessions["memory"].astype(bool)).groupby([*key, "on"])[list(_SAVED)].mean()
    wide = by_memory.unstack("on").dropna()
    rows: list[list[Cell]] = []
    if wide.empty:
        return Table("memory-saved", ["position", "sessions", *(m.label for m in _SAVED.values())], rows)
    positions = sessions.groupby(key)["series_position"].first()
    for position, index in wide.groupby(positions.reindex(wide.index).to_numpy()).groups.items():
        row = [Cell(str(int(position)), css="name"), Cell(f"{len(index)}")]
        for column, metric in _SAVED.items():
            saved = (wide.loc[index, (column, False)] - wide.loc[index, (column, True)]).to_numpy(dtype=float)
            value, lo, hi = bootstrap(saved, metric, resamples=resamples,
                                      rng=rng_for(0, "memory-saved", column, str(position)))
            excludes = lo > 0 or hi < 0
            row.append(Cell(f"{value:+,.1f}", sub=f"[{lo:+,.1f}, {hi:+,.1f}]",
                            css=("better" if value > 0 else "worse") if excludes else ""))
        rows.append(row)
    return Table("memory-saved", ["position", "sessions", *(m.label for m in _SAVED.values())], rows)


def _stale_text(sessions: pd.DataFrame) -> str:
    on = sessions[sessions["memory"].astype(bool)]
    if on.empty:
        return "No strategy ran with memory on."
    used = on[on["memory_facts_used"] > 0]
    stale = used[used["stale_memory_used"].astype(bool)]
    failed = stale[stale["outcome"] != "success"] if "outcome" in stale else stale.iloc[0:0]
    return (f"Sessions with memory on that used a remembered fact: {len(used):,}; of them {len(stale):,} "
            f"({100 * len(stale) / max(1, len(used)):.1f}%) used a stale value, and {len(failed):,} of those "
            "did not succeed.")


def memory_blocks(sessions: pd.DataFrame) -> list[Block]:
    """The section (a subsection of the report's breakdowns), or nothing for a run without series."""
    if not has_series(sessions):
        return []
    return [Section("Memory across a series", level=3, blocks=[
        Paragraph(SAVED_NOTE), TableBlock(saved_table(sessions)), TableBlock(memory_table(sessions)),
        Paragraph(_stale_text(sessions)), Paragraph(MECHANISM)])]
