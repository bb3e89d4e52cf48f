"""What tool-name normalisation saves: syntax errors reaching a tool, and turns, with and without the
``normalize_tool_names`` runtime switch (docs/tool-names.md).

The table appears only for a run whose sessions ran under both settings of the switch (a config with
the same strategy twice, labelled, once with ``normalize_tool_names = true``). A run directory made
before the switch existed has neither column and shows nothing: every column read here is optional.
"""

from __future__ import annotations

import pandas as pd

from reports.blocks import Block, Paragraph, Section, TableBlock
from reports.tables import Cell, Table

__all__ = ["ALL_STRATEGIES", "TOOL_NAME_COLUMNS", "normalization_summary", "normalization_table",
           "tool_names_blocks"]

SWITCH = "normalize_tool_names"
#: The sessions columns this section reads, each optional (the report reads them when a run has them).
TOOL_NAME_COLUMNS = (SWITCH, "name_variants", "syntax_errors_reaching_tool", "tool_syntax_errors", "turns")
#: The row label of the pooled rows (every strategy of the run together).
ALL_STRATEGIES = "all strategies"
_PER_SESSION = ("name_variants", "syntax_errors_reaching_tool", "tool_syntax_errors", "turns")
HEADING = "Tool-name normalisation"
NOTE = ("Syntax errors reaching a tool, and turns, with and without the normalize_tool_names switch: per session, "
        "by strategy and over all strategies. A name variant is a call naming a registered tool with '-' and '_' "
        "swapped; with the switch on, one holding '_' runs the registered tool (strands-agents' rule), so it is no "
        "syntax error and costs no retry turn. A name written with '-' for a registered '_' is not resolved either "
        "way. Under contracts, a syntax error never reaches a tool: the saving shows in the turns.")


def normalization_summary(sessions: pd.DataFrame) -> pd.DataFrame:
    """Per strategy and setting of the switch, then pooled over strategies (``ALL_STRATEGIES``): the
    sessions, and the mean per session of name variants, syntax errors reaching a tool, tool-syntax
    errors and turns. Empty unless ``sessions`` has every column of `TOOL_NAME_COLUMNS` and both
    settings of the switch."""
    if sessions.empty or not set(TOOL_NAME_COLUMNS) <= set(sessions.columns):
        return pd.DataFrame()
    frame = sessions.dropna(subset=[SWITCH]).assign(**{SWITCH: lambda f: f[SWITCH].astype(bool)})
    if frame[SWITCH].nunique() < 2:
        return pd.DataFrame()
    order = list(dict.fromkeys(frame["strategy"]))
    by_strategy = frame.groupby(["strategy", SWITCH], sort=False)[list(_PER_SESSION)].agg(["mean", "size"])
    pooled = frame.groupby(SWITCH)[list(_PER_SESSION)].agg(["mean", "size"])
    rows = []
    for (strategy, switch), values in by_strategy.iterrows():
        rows.append(_row(str(strategy), bool(switch), values))
    for switch, values in pooled.iterrows():
        rows.append(_row(ALL_STRATEGIES, bool(switch), values))
    out = pd.DataFrame(rows)
    rank = {s: i for i, s in enumerate([*order, ALL_STRATEGIES])}
    return out.assign(_rank=out["strategy"].map(rank)).sort_values(["_rank", SWITCH], kind="stable").drop(
        columns="_rank").reset_index(drop=True)


def _row(strategy: str, switch: bool, values: pd.Series) -> dict[str, object]:
    row: dict[str, object] = {"strategy": strategy, SWITCH: switch, "sessions": int(values[("turns", "size")])}
    row |= {column: float(values[(column, "mean")]) for column in _PER_SESSION}
    return row


def normalization_table(summary: pd.DataFrame) -> Table:
    """`normalization_summary` as a report table."""
    rows = [[Cell(str(r["strategy"]), css="name"), Cell("on" if r[SWITCH] else "off"), Cell(f"{int(r['sessions'])}"),
             *(Cell(f"{float(r[c]):,.3f}") for c in _PER_SESSION[:3]), Cell(f"{float(r['turns']):,.1f}")]
            for _, r in summary.iterrows()]
    return Table("tool-names-table", ["strategy", "normalize_tool_names", "sessions", "name variants",
                                      "syntax errors reaching a tool", "tool-syntax errors", "turns"], rows)


def tool_names_blocks(sessions: pd.DataFrame) -> list[Block]:
    """The section (a subsection: a heading, a note and the table), or nothing for a run without both
    settings."""
    summary = normalization_summary(sessions)
    if summary.empty:
        return []
    return [Section(HEADING, [Paragraph(NOTE, kind="note"), TableBlock(normalization_table(summary))], level=3)]
