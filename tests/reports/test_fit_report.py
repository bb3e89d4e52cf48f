"""The workload-fit report (reports/fit.py): both pages carry the measured-vs-generated table, the lognormal
fit in words, the tool mix and the QQ plots, from plain data."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from reports import fit as fit_report


def _side(rng: np.random.Generator, median: float, sessions: int, tools: dict[str, float]) -> dict[str, Any]:
    calls = rng.integers(30, 50, size=sessions).tolist()
    return {
        "sessions": sessions,
        "model_calls": [c + 1 for c in calls],
        "tool_calls": calls,
        "distinct_calls": calls,
        "growth_per_turn": rng.normal(900, 50, size=sessions).tolist(),
        "payload_bytes": np.exp(rng.normal(math.log(median), 1.0, size=300)).round().tolist(),
        "tool_mix": tools,
        "error_share": 0.04,
        "observation_share": 0.8,
        "growth_median": 900.0,
        "growth_q25": 870.0,
        "growth_q75": 930.0,
    }


def _data() -> dict[str, Any]:
    rng = np.random.default_rng(5)
    return {
        "sources": ["traces/"],
        "measured": _side(rng, 3000, 20, {"kubectl_get": 0.6, "kubectl_logs": 0.4}),
        "generated": _side(rng, 2900, 12, {"kubectl_get": 0.5, "kubectl_logs": 0.3, "log_search": 0.2}),
        "fit": {"median": 3010.0, "sigma": 1.01, "n": 300, "ks_statistic": 0.03, "ks_p_value": 0.62},
        "params": {"turns": 40, "payload_median_bytes": 3050, "payload_sigma": 0.98, "payload_max_bytes": 30000},
        "weights": {"k8s_crashloop": 1.0},
        "fallback": False,
        "notes": ["turns: session lengths vary"],
    }


def test_report_has_the_comparison_table_the_fit_in_words_and_the_qq_plots(tmp_path: Path) -> None:
    written = fit_report.write_fit_report(tmp_path / "fit", _data())
    names = {p.relative_to(tmp_path / "fit").as_posix() for p in written}
    assert names == {"report.html", "report.md", *(f"plots/{n}.png" for n in fit_report.PLOT_NAMES)}
    for path in written:
        if path.suffix == ".png":
            assert path.read_bytes().startswith(b"\x89PNG")
    html = (tmp_path / "fit" / "report.html").read_text()
    md = (tmp_path / "fit" / "report.md").read_text()
    for label, _ in fit_report.ROWS:
        assert label in html and label in md
    assert '<table id="comparison"' in html and '<table id="tool-mix"' in html
    for name in ("qq_payload_fit", "qq_payload_generated", "qq_turns"):
        assert f'id="plot-{name}"' in html
        assert f"(plots/{name}.png)" in md
    assert html.count("data:image/png;base64,") == len(fit_report.PLOT_NAMES)
    assert "p = 0.62" in md and "cannot tell the sizes from a lognormal" in md
    assert "log_search" in md and "turns: session lengths vary" in md


def test_a_small_p_value_says_the_sizes_are_not_lognormal() -> None:
    words = fit_report.ks_words({"median": 800.0, "sigma": 1.4, "n": 500, "ks_statistic": 0.2, "ks_p_value": 1e-9})
    assert "not lognormal" in words and "p = 1e-09" in words


def test_the_comparison_table_puts_each_side_in_its_column() -> None:
    data = _data()
    table = fit_report.comparison_table(data["measured"], data["generated"])
    by_label = {row[0].text: (row[1].text, row[2].text) for row in table.rows}
    assert by_label["sessions"] == ("20", "12")
    assert by_label["error share of tool results"] == ("4.0%", "4.0%")
