"""The calibration report (`reports.profile_fit`) from plain data: every field against the preset, the error
bins with their Wilson intervals, the latency check's verdict, the plots; the same data give the same bytes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from reports.blocks import render_html, render_markdown
from reports.profile_fit import (
    PLOT_NAMES,
    bins_table,
    calibration_page,
    draw_calibration_plots,
    fields_table,
    write_calibration_report,
)
from reports.stats import wilson_interval


def markdown_of(data: dict[str, Any], plots: dict[str, bytes]) -> str:
    return render_markdown(calibration_page(data, plots))


def html_of(data: dict[str, Any], plots: dict[str, bytes]) -> str:
    return render_html(calibration_page(data, plots))


def fit(value: float, low: float, high: float, n: int, how: str = "least squares") -> dict[str, Any]:
    return {"value": value, "low": low, "high": high, "n": n, "how": how}


def data(*, within: bool = True, bins: bool = True) -> dict[str, Any]:
    raw_bins = [(1_000, 3_900, 2_500.0, 1, 20), (4_000, 15_000, 9_000.0, 3, 20), (15_100, 90_000, 40_000.0, 7, 21)]
    return {
        "preset": "frontier", "profile_name": "calibrated", "sources": ["logs/"], "sessions": 3, "calls": 61,
        "main_model": "gpt-4o", "notes": ["12 tool results left out of the error rate"],
        "fields": [
            {"field": "base_s", "source": "fitted", "value": 1.25, "preset": 0.8, "fit": fit(1.25, 1.0, 1.6, 61),
             "why": "least squares (linear scale)"},
            {"field": "price_in", "source": "price table", "value": 2.5, "preset": 3.0, "fit": None,
             "why": "gpt-4o: the price table's entry gpt-4o"},
            {"field": "p_max", "source": "preset", "value": 0.995, "preset": 0.995, "fit": None,
             "why": "recall needs labelled look-ups"},
            {"field": "rpm", "source": "preset", "value": None, "preset": None, "fit": None, "why": "not recorded"},
            {"field": "L_half", "source": "preset", "value": math.inf, "preset": math.inf, "fit": None, "why": "x"},
        ],
        "token_ratios": {"gpt-4o": fit(0.97, 0.95, 0.99, 61, "per-call counts")},
        "cache_shares": {"gpt-4o": fit(0.6, 0.5, 0.7, 61, "cached / input tokens")},
        "output": {"mean": fit(110.0, 90.0, 130.0, 61), "median": fit(100.0, 80.0, 120.0, 61),
                   "thought_tokens": fit(70.0, 50.0, 90.0, 61), "tool_call_mean": 31.5, "note": ""},
        "bins": [{"low_tokens": lo, "high_tokens": hi, "median_tokens": med, "errors": e, "outcomes": n,
                  "rate": e / n, "rate_low": wilson_interval(e, n)[0], "rate_high": wilson_interval(e, n)[1]}
                 for lo, hi, med, e, n in raw_bins] if bins else [],
        "error_outcomes": 61, "error_count": 11,
        "growth": {"base": 0.05, "g_L": 0.8, "g_N": 1.0} if bins else {},
        "check": {"recorded_mean_s": 5.0, "profile_mean_s": 5.1 if within else 6.0, "n": 61,
                  "gap": 0.02 if within else 0.2, "within": within, "tolerance": 0.1},
        "latency_points": [[4.0, 4.5], [6.0, 5.5], [5.0, 5.2]],
    }


def test_fields_table_puts_fitted_first_with_interval_n_and_preset() -> None:
    table = fields_table(data())
    names = [row[0].text for row in table.rows]
    assert names[:2] == ["base_s", "price_in"]
    base = [c.text for c in table.rows[0]]
    assert base == ["base_s", "1.25", "[1, 1.6]", "61", "0.8", "fitted", "least squares (linear scale)"]
    assert [c.text for c in table.rows[3]][1] == "none" and [c.text for c in table.rows[4]][1] == "inf"


def test_bins_table_shows_each_rate_with_its_wilson_interval() -> None:
    rows = [[c.text for c in row] for row in bins_table(data()["bins"]).rows]
    low, high = wilson_interval(7, 21)
    assert rows[2] == ["15,100-90,000", "4e+04", "7 / 21", f"{7 / 21:.1%}", f"[{low:.1%}, {high:.1%}]"]


def test_pages_hold_every_section_and_the_check_verdict() -> None:
    plots = draw_calibration_plots(data())
    markdown = markdown_of(data(), plots)
    for heading in ("The profile, field by field", "Latency: the fit's check", "Tool errors against context length",
                    "Token-count ratio per model", "Cache-hit share per model", "Output tokens per call"):
        assert f"## {heading}" in markdown
    assert "| 61 | 5 | 5.1 | +2.0% | **yes** |" in markdown
    assert "+20.0% | **no** |" in markdown_of(data(within=False), plots)
    assert "Note: 12 tool results left out" in markdown
    assert "(plots/error_rate.png)" in markdown
    html = html_of(data(), plots)
    assert "data:image/png;base64," in html and 'id="fields"' in html


def test_no_bins_and_no_latency_still_render() -> None:
    empty = data(bins=False) | {"check": None, "latency_points": []}
    plots = draw_calibration_plots(empty)
    markdown = markdown_of(empty, plots)
    assert "Too few to bin" in markdown and "No call records its latency" in markdown
    assert "| context tokens |" not in markdown


def test_report_files_are_written_and_the_same_data_give_the_same_bytes(tmp_path: Path) -> None:
    first = write_calibration_report(tmp_path / "a", data())
    second = write_calibration_report(tmp_path / "b", data())
    assert [p.relative_to(tmp_path / "a") for p in first] == [
        Path("report.html"), Path("report.md"), *(Path("plots") / f"{n}.png" for n in PLOT_NAMES)]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()
    assert first[2].read_bytes().startswith(b"\x89PNG")
