"""The tables the reports are made of, as values: a ``Table`` of ``Cell``s that the HTML and the
Markdown renderers (:mod:`reports.markup`) both draw, and how a metric's value, interval and
difference are written. The report, the sweep page and the compare text all format numbers here, so
a number reads the same on every page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reports.stats import Metric

__all__ = ["WILSON_MARK", "Cell", "Table", "format_diff", "format_interval", "format_value", "interval_cell",
           "is_share"]

#: Follows an interval that is Wilson's, not the bootstrap's (a rate of none or all of its events); the
#: page's footnote says why.
WILSON_MARK = "†"


@dataclass(frozen=True)
class Cell:
    """One table cell: its text, with up to two small lines under it and a CSS class."""

    text: str
    #: The small line under the text (an interval, a sample size).
    sub: str = ""
    #: ``name`` (a row's label), ``better`` / ``worse`` (a difference that excludes zero), or "".
    css: str = ""
    #: A second small line above ``sub`` (a relative change).
    note: str = ""


@dataclass(frozen=True)
class Table:
    """A table with an id (its HTML anchor), a header row and rows of cells."""

    id: str
    header: list[str]
    rows: list[list[Cell]]
    #: Numbers are right-aligned; text tables (the manifest, the strategies) are not.
    numeric: bool = True


def is_share(metric: Metric) -> bool:
    """True for a rate (a share of sessions or calls): written as a percentage, differences in pp."""
    return metric.unit.startswith("share")


def format_value(metric: Metric, value: float) -> str:
    """A metric's value in its unit: ``12.50%``, ``32,770``, ``$1.0440``, ``6.6 s``; ``n/a`` when not finite."""
    if value is None or not np.isfinite(value):
        return "n/a"
    if is_share(metric):
        return f"{value * 100:.2f}%"
    if metric.unit == "tokens":
        return f"{value:,.0f}"
    if metric.unit == "USD":
        return f"${value:,.4f}"
    if metric.unit.startswith("s "):
        return f"{value:,.1f} s"
    return f"{value:,.4g}"


def format_diff(metric: Metric, value: float) -> str:
    """A difference of the metric, signed: ``+1.25 pp``, ``-4,000``, ``-$0.0100``; ``n/a`` when not finite."""
    if value is None or not np.isfinite(value):
        return "n/a"
    if is_share(metric):
        return f"{value * 100:+.2f} pp"
    if metric.unit == "tokens":
        return f"{value:+,.0f}"
    if metric.unit == "USD":
        return f"{'-' if value < 0 else '+'}${abs(value):,.4f}"
    if metric.unit.startswith("s "):
        return f"{value:+,.1f} s"
    return f"{value:+,.4g}"


def format_interval(metric: Metric, low: float, high: float, *, diff: bool = False) -> str:
    """``[low, high]`` in the metric's unit, as values or (``diff``) as signed differences."""
    fmt = format_diff if diff else format_value
    return f"[{fmt(metric, low)}, {fmt(metric, high)}]"


def interval_cell(metric: Metric, value: float, low: float, high: float, *, wilson: bool = False) -> Cell:
    """A value with its interval on the small line under it: the cell of every headline-metric table.
    An undefined value reads as the metric says (``no solved session``); ``wilson`` marks a Wilson
    interval with :data:`WILSON_MARK`."""
    if not np.isfinite(float(value)):
        return Cell(metric.undefined)
    interval = format_interval(metric, float(low), float(high))
    return Cell(format_value(metric, float(value)), sub=f"{interval} {WILSON_MARK}" if wilson else interval)
