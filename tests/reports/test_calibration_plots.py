"""reports.calibration: the published points are the spec's numbers, the intervals are right, the plots
are written as valid, byte-stable PNGs, and the module stays off the runtime (it reads tables only)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from reports.calibration import (
    PLOT_FILES,
    PROFILE_COLOURS,
    PUBLISHED_POINTS,
    PUBLISHED_RATIOS,
    plot_calibration,
    probe_means,
    probe_ratios,
    profile_colours,
)
from reports.plots import DPI, FIGSIZE

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ("frontier", "mid", "small", "stress-2023")
LENGTHS = (4096, 32_000, 113_000, 128_000)


def curves() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Curve frames with the columns harness.sim.calibration writes (a made-up smooth decay)."""
    lengths = [int(1024 * 2 ** (i / 2)) for i in range(16)] + list(LENGTHS)
    halves = (280e3, 71e3, 24e3, 17e3)
    length_rows = [{"profile": name, "length": n, "recall": 0.99 / (1 + n / half)}
                   for name, half in zip(PROFILES, halves, strict=True) for n in sorted(set(lengths))]
    position_rows = [{"profile": name, "length": 4096, "x": i / 20,
                      "recall": 0.9 - 0.2 * math.sin(math.pi * i / 20) ** 2}
                     for name in PROFILES for i in range(21)]
    return pd.DataFrame(length_rows), pd.DataFrame(position_rows)


def probes(samples: int = 200, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for name in PROFILES:
        u = rng.random(samples)
        xs = rng.uniform(0.1, 0.9, samples)
        for length in LENGTHS:
            p = 0.98 / (1 + length / 100_000)
            for i in range(samples):
                rows.append({"profile": name, "sample": i, "length": length, "tokens": length - 5, "x": xs[i],
                             "p": p, "recalled": bool(u[i] < p)})
    return pd.DataFrame(rows)


# Published numbers ------------------------------------------------------------------------------------------


def test_published_points_are_the_figures_the_spec_quotes() -> None:
    quoted = {(p.source, p.model, p.length, p.position): p.recall for p in PUBLISHED_POINTS}
    assert quoted == {
        ("RULER", "Gemini-1.5-pro", 4096, None): 0.998,
        ("RULER", "Gemini-1.5-pro", 128_000, None): 0.996,
        ("RULER", "GPT-4-1106", 4096, None): 0.999,
        ("RULER", "GPT-4-1106", 128_000, None): 0.848,
        ("RULER", "Llama-3.1-8B", 4096, None): 0.999,
        ("RULER", "Llama-3.1-8B", 128_000, None): 0.926,
        ("RULER", "Mistral-7B-v0.2", 4096, None): 0.981,
        ("RULER", "Mistral-7B-v0.2", 16_384, None): 0.943,
        ("NoLiMa", "GPT-4o", 1024, None): 0.993,
        ("NoLiMa", "GPT-4o", 4096, None): 0.957,
        ("NoLiMa", "GPT-4o", 32_000, None): 0.697,
        ("NoLiMa", "GPT-4o-mini", 1024, None): 0.849,
        ("Context Rot", "GPT-4.1", None, None): 0.873,
        ("Context Rot", "GPT-4.1", 113_000, None): 0.624,
        ("Lost in the Middle", "GPT-3.5-Turbo", 4096, 0.0): 0.758,
        ("Lost in the Middle", "GPT-3.5-Turbo", 4096, 0.5): 0.538,
    }
    assert {p.profile for p in PUBLISHED_POINTS} <= set(PROFILE_COLOURS)
    assert all(p.note for p in PUBLISHED_POINTS)
    assert {p.lookup for p in PUBLISHED_POINTS if p.source == "RULER"} == {"literal"}
    assert {p.lookup for p in PUBLISHED_POINTS if p.source != "RULER"} == {"latent"}


def test_ruler_points_are_each_profiles_literal_source_row() -> None:
    """The plotted RULER points are the rows the profiles' literal curves were fitted to (the test may
    import the runtime; the module may not)."""
    from harness.sim.profiles import LITERAL_SOURCES, RULER_LENGTHS, RULER_ROWS

    full_names = {"Gemini-1.5-pro": "Gemini-1.5-pro", "GPT-4-1106": "GPT-4-1106-preview",
                  "Llama-3.1-8B": "Llama-3.1-8B-Instruct", "Mistral-7B-v0.2": "Mistral-7B-Instruct-v0.2"}
    for point in (p for p in PUBLISHED_POINTS if p.source == "RULER"):
        assert point.length is not None
        assert LITERAL_SOURCES[point.profile] == full_names[point.model]
        row = RULER_ROWS[full_names[point.model]]
        column = RULER_LENGTHS.index(131_072 if point.length == 128_000 else point.length)
        assert row[column] / 100 == pytest.approx(point.recall)


def test_published_ratios_are_the_p6_sources() -> None:
    ratios = {(r.source, r.model): (r.length, r.ratio, r.profile, r.lookup) for r in PUBLISHED_RATIOS}
    assert ratios[("Context Rot", "GPT-4.1")][0] == 113_000
    assert ratios[("Context Rot", "GPT-4.1")][1] == pytest.approx(0.715, abs=1e-3)
    assert ratios[("NoLiMa", "GPT-4o")][0] == 32_000
    assert ratios[("NoLiMa", "GPT-4o")][1] == pytest.approx(0.73, abs=5e-3)
    assert ratios[("RULER", "GPT-4-1106")][:3] == (128_000, pytest.approx(0.85, abs=5e-3), "mid")
    assert {v[2] for k, v in ratios.items() if k[0] == "RULER"} == {"frontier", "mid", "small", "stress-2023"}
    assert {v[3] for k, v in ratios.items() if k[0] == "RULER"} == {"literal"}


def test_profile_colours_are_fixed_for_built_ins_and_distinct() -> None:
    colours = profile_colours([*PROFILES, "zeta", "alpha"])
    assert {n: colours[n] for n in PROFILES} == {n: PROFILE_COLOURS[n] for n in PROFILES}
    assert colours["alpha"] != colours["zeta"]
    assert len({colours[n] for n in PROFILES}) == len(PROFILES)


def test_probe_means_and_paired_ratios() -> None:
    frame = probes()
    means = probe_means(frame)
    assert list(means.columns) == ["profile", "lookup", "length", "n", "recall", "ci_low", "ci_high", "p_mean",
                                   "tokens_mean"]
    assert (means["lookup"] == "latent").all()  # a table without look-up kinds is latent
    assert (means["n"] == 200).all() and (means["ci_low"] <= means["recall"]).all()
    ratios = probe_ratios(frame).set_index(["profile", "length"])
    m = means.set_index(["profile", "length"])["recall"]
    for (name, length), row in ratios.iterrows():
        assert row["ratio"] == pytest.approx(m[(name, length)] / m[(name, 4096)])
        assert row["ci_low"] <= row["ratio"] <= row["ci_high"]
    assert (ratios.xs(4096, level="length")["ratio"] == 1.0).all()


# Plots -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], list[Path]]:
    length_curve, position_curve = curves()
    frame = probes()
    first = plot_calibration(length_curve, position_curve, frame, tmp_path_factory.mktemp("a"))
    second = plot_calibration(length_curve, position_curve, frame, tmp_path_factory.mktemp("b") / "plots")
    return first, second


def test_plots_are_written_as_valid_pngs_of_the_fixed_size(written: tuple[list[Path], list[Path]]) -> None:
    first, _second = written
    assert [p.name for p in first] == list(PLOT_FILES)
    assert {"calibration-length.png", "calibration-position.png"} <= {p.name for p in first}
    for path in first:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        with Image.open(path) as image:
            image.verify()
        with Image.open(path) as image:
            assert image.size == (round(FIGSIZE[0] * DPI), round(FIGSIZE[1] * DPI))
            assert "Software" not in image.info


def test_same_inputs_give_byte_identical_pngs(written: tuple[list[Path], list[Path]]) -> None:
    first, second = written
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_empty_inputs_do_not_crash(tmp_path: Path) -> None:
    empty = pd.DataFrame()
    paths = plot_calibration(empty, empty, empty, tmp_path)
    assert all(p.stat().st_size > 0 for p in paths)


def test_plots_from_real_probe_frames(tmp_path: Path) -> None:
    """The column contract between harness.sim.calibration and this module (the test may import both)."""
    from harness.sim.calibration import length_curve, position_curve, probe_grid

    kinds = ("latent", "literal")
    frame = probe_grid(["frontier", "stress-2023"], [4096, 32_000], samples=40, lookups=kinds)
    paths = plot_calibration(length_curve(["frontier", "stress-2023"], [1024, 4096, 32_000, 128_000], kinds),
                             position_curve(["frontier", "stress-2023"], 4096, [i / 10 for i in range(11)], kinds),
                             frame, tmp_path)
    assert len(paths) == 3 and all(p.exists() for p in paths)
    ratios = probe_ratios(frame)
    assert set(ratios["lookup"]) == set(kinds)


def test_module_loads_no_runtime_in_a_fresh_interpreter() -> None:
    code = ("import json, sys\nimport reports.calibration\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         timeout=120)
    loaded = json.loads(out.stdout)
    forbidden = ("harness.sim", "harness.run", "harness.cli", "strategies", "scenarios")
    assert [m for m in loaded if any(m == f or m.startswith(f + ".") for f in forbidden)] == []
