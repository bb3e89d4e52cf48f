"""The tables the reports are made of, as values: a ``Table`` of ``Cell``s that the HTML and the
Markdown renderers (:mod:`reports.markup`) both draw, and how a metric's value, interval and
difference are written. The report, the sweep page and the compare text all format numbers here, so
a number reads the same on every page.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from reports.stats import CONFIDENCE, METRICS, MIN_SUPPORT, TOO_FEW, UNDEFINED, WILSON, Metric

__all__ = ["WILSON_MARK", "Cell", "Table", "format_diff", "format_interval", "format_relative", "format_value",
           "headline_cell", "interval_cell", "interval_notes", "interval_text", "is_share", "relative_phrase",
           "too_few_text"]

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


@dataclass(frozen=True)
class _UnitFormat:
    """How the numbers of one kind of unit are written: a value, and a signed difference of two."""

    value: Callable[[float], str]
    diff: Callable[[float], str]


_SHARE_FORMAT = _UnitFormat(lambda v: f"{v * 100:.2f}%", lambda v: f"{v * 100:+.2f} pp")
_TOKENS_FORMAT = _UnitFormat(lambda v: f"{v:,.0f}", lambda v: f"{v:+,.0f}")
_USD_FORMAT = _UnitFormat(lambda v: f"${v:,.4f}", lambda v: f"{'-' if v < 0 else '+'}${abs(v):,.4f}")
_SECONDS_FORMAT = _UnitFormat(lambda v: f"{v:,.1f} s", lambda v: f"{v:+,.1f} s")
_OTHER_FORMAT = _UnitFormat(lambda v: f"{v:,.4g}", lambda v: f"{v:+,.4g}")


def _unit_format(metric: Metric) -> _UnitFormat:
    """How ``metric``'s unit is written: shares, tokens, dollars, seconds (``s ...``), or plain numbers."""
    if is_share(metric):
        return _SHARE_FORMAT
    if metric.unit == "tokens":
        return _TOKENS_FORMAT
    if metric.unit == "USD":
        return _USD_FORMAT
    if metric.unit.startswith("s "):
        return _SECONDS_FORMAT
    return _OTHER_FORMAT


def format_value(metric: Metric, value: float) -> str:
    """A metric's value in its unit: ``12.50%``, ``32,770``, ``$1.0440``, ``6.6 s``; ``n/a`` when not finite."""
    if value is None or not np.isfinite(value):
        return "n/a"
    return _unit_format(metric).value(value)


def format_diff(metric: Metric, value: float) -> str:
    """A difference of the metric, signed: ``+1.25 pp``, ``-4,000``, ``-$0.0100``; ``n/a`` when not finite."""
    if value is None or not np.isfinite(value):
        return "n/a"
    return _unit_format(metric).diff(value)


def format_interval(metric: Metric, low: float, high: float, *, diff: bool = False) -> str:
    """``[low, high]`` in the metric's unit, as values or (``diff``) as signed differences."""
    fmt = format_diff if diff else format_value
    return f"[{fmt(metric, low)}, {fmt(metric, high)}]"


def too_few_text(metric: Metric, support: float, n: float) -> str:
    """What a ``per`` metric over too few units of its denominator shows instead of an interval:
    ``too few successes (3 in 100 sessions)``."""
    counted = f"{int(support):,}" if np.isfinite(support) else "n/a"
    sessions = f"{int(n):,}" if np.isfinite(n) else "n/a"
    return f"too few {metric.support or 'events'} ({counted} in {sessions} sessions)"


def interval_text(metric: Metric, low: float, high: float, interval: str = "bootstrap", *,
                  support: float = math.nan, n: float = math.nan) -> str:
    """A value's interval as every table and the console summary write it, by its kind
    (:data:`reports.stats.INTERVAL_KINDS`): ``[low, high]`` (the bootstrap's), ``[low, high] †``
    (Wilson's), ``too few successes (3 in 100 sessions)`` (none: :data:`reports.stats.MIN_SUPPORT`),
    or "" (no value, no interval)."""
    if interval == TOO_FEW:
        return too_few_text(metric, support, n)
    if interval == UNDEFINED:
        return ""
    text = format_interval(metric, low, high)
    return f"{text} {WILSON_MARK}" if interval == WILSON else text


def interval_cell(metric: Metric, value: float, low: float, high: float, *, wilson: bool = False,
                  interval: str = "", support: float = math.nan, n: float = math.nan) -> Cell:
    """A value with its interval on the small line under it: the cell of every headline-metric table.
    An undefined value reads as the metric says (``no solved session``); ``interval`` is the kind of
    the interval (:func:`interval_text`; ``wilson`` is short for ``interval="wilson"``), and
    ``support`` and ``n`` what a ``too_few`` one says it rests on."""
    if not np.isfinite(float(value)):
        return Cell(metric.undefined)
    kind = interval or (WILSON if wilson else "bootstrap")
    return Cell(format_value(metric, float(value)),
                sub=interval_text(metric, float(low), float(high), kind, support=support, n=n))


def headline_cell(metric: Metric, row: Mapping[str, Any]) -> Cell:
    """The cell of one :func:`reports.stats.headline` row (a mapping or a Series of its columns)."""
    return interval_cell(metric, float(row["value"]), float(row["ci_low"]), float(row["ci_high"]),
                         interval=str(row.get("interval", "bootstrap")), support=float(row.get("support", math.nan)),
                         n=float(row.get("n", math.nan)))


def _percent(change: float, digits: int) -> str:
    """``|change|`` as a percentage with ``digits`` decimals, or with as many as its first significant
    digit needs when those would round it to zero (0.0003 at 1 decimal: ``0.03``)."""
    percent = abs(change) * 100
    text = f"{percent:.{digits}f}"
    if percent == 0 or float(text) != 0:
        return text
    return f"{percent:.{max(digits, -math.floor(math.log10(percent)))}f}"


def format_relative(change: float, digits: int = 1) -> str:
    """A relative change (0.034 for 3.4%) as a signed percentage, ``+3.4%``: with ``digits`` decimals,
    or as many more as a change that would round to zero needs to show it (``-0.03%``, never ``+0.0%``).
    No change is ``0%`` (unsigned); an infinite one (from zero) is ``+inf%``; ``n/a`` when undefined."""
    if change is None or math.isnan(change):
        return "n/a"
    if math.isinf(change):
        return f"{'+' if change > 0 else '-'}inf%"
    if change == 0:
        return "0%"
    return f"{'+' if change > 0 else '-'}{_percent(change, digits)}%"


def relative_phrase(change: float, more: str = "more", less: str = "less", *, digits: int = 0,
                    same: str = "the same") -> str:
    """A relative change in words: ``12% more``, ``0.3% less`` (as many decimals as keep a change
    that is not zero from reading as ``0%``: :func:`format_relative`), ``same`` for no change, ``n/a``
    when undefined. ``more`` and ``less`` name the directions (``fewer`` for tokens, ``dearer``)."""
    if change is None or math.isnan(change):
        return "n/a"
    if change == 0:
        return same
    if math.isinf(change):
        return f"infinitely {more if change > 0 else less}"
    return f"{_percent(change, digits)}% {more if change > 0 else less}"


# Footnotes on the intervals of a headline table, from the rows they annotate -------------------------


def _first(headline: pd.DataFrame, kind: str, strategies: Sequence[str] | None,
           metrics: Sequence[str] | None) -> pd.Series | None:
    """The first row whose interval is ``kind``, in the order the table shows them (``strategies``
    then ``metrics``; the frame's order where they are not given)."""
    if headline.empty or "interval" not in headline.columns:
        return None
    rows = headline[headline["interval"] == kind]
    if rows.empty:
        return None
    rank_s = {s: i for i, s in enumerate(strategies or [])}
    rank_m = {m: i for i, m in enumerate(metrics or [])}
    keyed = sorted(range(len(rows)), key=lambda i: (rank_s.get(str(rows["strategy"].iloc[i]), len(rank_s)),
                                                    rank_m.get(str(rows["metric"].iloc[i]), len(rank_m)), i))
    return rows.iloc[keyed[0]]


def _count(x: float) -> str:
    return f"{x:,.0f}"


def wilson_note(row: Mapping[str, Any]) -> str:
    """Which rates carry Wilson's interval and why, told with one of the run's own (a
    :func:`reports.stats.headline` row whose interval is ``wilson``): its events, trials and interval."""
    metric = METRICS[str(row["metric"])]
    value, events, trials = float(row["value"]), float(row["events"]), float(row["trials"])
    unit = metric.unit.removeprefix("share of ")
    collapsed = (f", where the bootstrap's interval is the point itself, {format_interval(metric, value, value)}"
                 if events in (0, trials) else "")
    return (f"{WILSON_MARK} {CONFIDENCE:.0%} Wilson score interval. A share of sessions with fewer than {MIN_SUPPORT} "
            f"events or fewer than {MIN_SUPPORT} non-events, and any rate of none or all of its events, carries it "
            "instead of the bootstrap's, whose percentile interval is too narrow there (at none or all, the point "
            f"itself). In this run, e.g., {row['strategy']}'s {metric.label}: {_count(events)} of {_count(trials)} "
            f"{unit}{collapsed}; Wilson's is "
            f"{format_interval(metric, float(row['ci_low']), float(row['ci_high']))}. At 0 of n its upper bound is "
            "about 3.8 / n (the rule of three says 3 / n). Every other interval shown is the percentile bootstrap's, "
            "over sessions.")


def too_few_note(row: Mapping[str, Any]) -> str:
    """Why a value carries no interval, told with one of the run's own (a headline row whose interval
    is ``too_few``)."""
    metric = METRICS[str(row["metric"])]
    support = metric.support or "events"
    return (f"A {metric.label} over fewer than {MIN_SUPPORT} {support} carries no interval, e.g. "
            f"{row['strategy']}'s: {_count(float(row['support']))} in {_count(float(row['n']))} sessions. A resample "
            f"of sessions divides by its own count of {support}: with k of them, about e^-k of the resamples have "
            "none (their value is undefined) and the rest swing with each one drawn more or less, so a bootstrap "
            "interval there would claim more than the data hold. The value is shown; read it as resting on that "
            f"many {support}.")


def interval_notes(headline: pd.DataFrame, strategies: Sequence[str] | None = None,
                   metrics: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """The footnotes a table of ``headline``'s rows needs, as (kind, text): one on Wilson intervals
    when a row has one, one on values without an interval (``too_few``) when a row has one, each told
    with the first such row in the table's order (``strategies``, then ``metrics``)."""
    notes = []
    for kind, note in ((WILSON, wilson_note), (TOO_FEW, too_few_note)):
        row = _first(headline, kind, strategies, metrics)
        if row is not None:
            notes.append((kind, note(row)))
    return notes
