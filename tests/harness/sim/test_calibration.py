"""Calibration anchors of docs/model.md 11 computed from the profile curves: the context-rot
ratios (P6), the lost-in-the-middle U-shape (P7), and the summary keep rule (section 4)."""

from __future__ import annotations

import pytest

from harness.sim.profiles import PROFILE_NAMES, Profile, profile

#: P6: one needle at x uniform in [0.1, 0.9].
X_POINTS = [0.1 + 0.8 * i / 800 for i in range(801)]


def mean_recall(p: Profile, tokens: float) -> float:
    return sum(p.p_recall(tokens, x) for x in X_POINTS) / len(X_POINTS)


def ratio(p: Profile, long: float, short: float = 4096) -> float:
    return mean_recall(p, long) / mean_recall(p, short)


# P6: context rot -------------------------------------------------------------------------------------


def test_p6_frontier_113k_over_4k_is_within_context_rot_band() -> None:
    value = ratio(profile("frontier"), 113_000)
    assert 0.62 <= value <= 0.82
    assert value == pytest.approx(0.70, abs=0.01)


def test_p6_frontier_128k_over_4k_is_at_least_0_6() -> None:
    value = ratio(profile("frontier"), 128_000)
    assert value >= 0.6
    assert value == pytest.approx(0.67, abs=0.01)


def test_p6_mid_32k_over_4k_is_within_nolima_band() -> None:
    value = ratio(profile("mid"), 32_000)
    assert 0.62 <= value <= 0.82
    assert value == pytest.approx(0.71, abs=0.01)


@pytest.mark.parametrize("name", ["frontier", "mid", "small", "stress-2023"])
def test_mean_recall_falls_with_length(name: str) -> None:
    p = profile(name)
    values = [mean_recall(p, tokens) for tokens in (4096, 16_384, 65_536, 131_072)]
    assert values == sorted(values, reverse=True)
    assert values[0] > values[-1]


def test_weaker_profiles_rot_faster() -> None:
    ratios = [ratio(profile(name), 32_000) for name in ("frontier", "mid", "small", "stress-2023")]
    assert ratios == sorted(ratios, reverse=True)


# P7: U-shape ------------------------------------------------------------------------------------------


def test_p7_stress_2023_middle_over_start_at_4k_is_0_71() -> None:
    p = profile("stress-2023")
    value = p.p_recall(4096, 0.5) / p.p_recall(4096, 0.001)
    assert value == pytest.approx(0.71, abs=0.05)


def test_p7_position_effect_is_symmetric() -> None:
    p = profile("stress-2023")
    for x in (0.1, 0.25, 0.4):
        assert p.p_recall(4096, x) == pytest.approx(p.p_recall(4096, 1 - x))


def test_position_normalisation_keeps_the_mean_over_x_at_the_length_factor() -> None:
    p = profile("mid")
    xs = [i / 2000 for i in range(2001)]
    for tokens in (32_000, 100_000):  # long enough that min(1, .) never clips
        mean = sum(p.p_recall(tokens, x) for x in xs) / len(xs)
        assert mean == pytest.approx(p.p_max * p.length_factor(tokens), rel=2e-3)


def test_without_position_normalisation_recall_is_lower_everywhere() -> None:
    on = profile("mid")
    off = profile("mid", position_mean_normalise=False)
    for x in (0.0, 0.5, 1.0):
        assert off.p_recall(32_000, x) <= on.p_recall(32_000, x)
    assert off.p_recall(32_000, 0.5) < on.p_recall(32_000, 0.5)


# Summary keep rule ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n in PROFILE_NAMES if n != "oracle"])
@pytest.mark.parametrize("tokens", [500, 4096, 30_000, 120_000])
def test_p_keep_is_keep_max_times_length_factor(name: str, tokens: int) -> None:
    p = profile(name)
    expected = p.keep_max / (1 + (tokens / p.L_half) ** p.k)
    assert p.p_keep(tokens) == pytest.approx(expected, rel=1e-12)


def test_p_keep_of_frontier_at_32k_matches_hand_value() -> None:
    assert profile("frontier").p_keep(32_768) == pytest.approx(0.97 * 0.8952, abs=1e-3)
