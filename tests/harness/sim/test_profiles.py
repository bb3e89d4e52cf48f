"""Model profiles (mock-model.md 9): the worked numbers, cost, malformed-call growth, the oracle,
and loading profiles from TOML."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.sim.profiles import (
    LITERAL_FIT_RMSE,
    LITERAL_SOURCES,
    PROFILE_NAMES,
    RULER_ROWS,
    Profile,
    fit_length_curve,
    load_profile,
    profile,
)


@pytest.fixture(scope="module")
def frontier() -> Profile:
    return profile("frontier")


# Worked numbers of mock-model.md 9 (3 decimals / 0.1 s) --------------------------------------------


@pytest.mark.parametrize(("tokens", "expected"), [(8192, 0.972), (32768, 0.895), (131072, 0.681)])
def test_frontier_length_factor_matches_worked_numbers(frontier: Profile, tokens: int, expected: float) -> None:
    assert round(frontier.length_factor(tokens), 3) == expected


@pytest.mark.parametrize(("x", "expected"), [(0.5, 0.633), (1.0, 0.922)])
def test_frontier_p_recall_at_78k_matches_worked_numbers(frontier: Profile, x: float, expected: float) -> None:
    assert round(frontier.p_recall(78_400, x), 3) == expected


def test_frontier_p_recall_is_lowest_in_the_middle(frontier: Profile) -> None:
    middle = frontier.p_recall(78_400, 0.5)
    assert middle < frontier.p_recall(78_400, 0.0)
    assert middle < frontier.p_recall(78_400, 1.0)


def test_frontier_latency_uncached_at_78k_is_11_seconds(frontier: Profile) -> None:
    seconds = frontier.model_seconds(uncached=78_400, cached=0, output=150, tokens=78_400, z=0.0)
    assert abs(seconds - 11.0) < 0.05


def test_frontier_latency_with_75k_cached_is_4_7_seconds(frontier: Profile) -> None:
    seconds = frontier.model_seconds(uncached=3_400, cached=75_000, output=150, tokens=78_400, z=0.0)
    assert abs(seconds - 4.7) < 0.05


def test_latency_noise_is_lognormal_around_the_median(frontier: Profile) -> None:
    median = frontier.model_seconds(1000, 0, 100, 1000, 0.0)
    assert frontier.model_seconds(1000, 0, 100, 1000, 1.0) == pytest.approx(median * math.exp(0.35))
    assert frontier.model_seconds(1000, 0, 100, 1000, -1.0) == pytest.approx(median * math.exp(-0.35))


def test_decoy_free_trough_depth_grows_five_points_per_doubling_and_caps(frontier: Profile) -> None:
    assert frontier.trough_depth(4096) == pytest.approx(0.10)
    assert frontier.trough_depth(8192) == pytest.approx(0.15)
    assert frontier.trough_depth(4096 * 2**20) == pytest.approx(0.6)
    assert frontier.trough_depth(512) == pytest.approx(0.0)


# Cost ----------------------------------------------------------------------------------------------


def test_cost_follows_the_formula_with_write_premium(frontier: Profile) -> None:
    u, c, w, o = 10_000, 50_000, 8_000, 300
    expected = ((u - w) * 3.00 + w * 3.75 + c * 0.30 + o * 15.00) / 1e6
    assert frontier.cost_usd(uncached=u, cached=c, written=w, output=o) == pytest.approx(expected, rel=1e-12)


def test_cost_without_write_premium_bills_writes_at_input_price() -> None:
    mid = profile("mid")
    assert mid.price_cache_write == mid.price_in
    assert mid.cost_usd(5_000, 0, 5_000, 0) == pytest.approx(mid.cost_usd(5_000, 0, 0, 0))


def test_one_million_uncached_input_tokens_cost_the_input_price(frontier: Profile) -> None:
    assert frontier.cost_usd(1_000_000, 0, 0, 0) == pytest.approx(3.00)
    assert frontier.cost_usd(0, 0, 0, 1_000_000) == pytest.approx(15.00)


# Malformed calls (mock-model.md 3.1) ----------------------------------------------------------------


def test_p_malformed_is_the_base_rate_at_4k_without_raw_output(frontier: Profile) -> None:
    assert frontier.p_malformed(4096, 0.0) == pytest.approx(0.005)
    assert frontier.p_malformed(1000, 0.0) == pytest.approx(0.005)  # below 4K: no length growth


def test_p_malformed_grows_with_length_and_raw_share(frontier: Profile) -> None:
    assert frontier.p_malformed(8192, 0.0) == pytest.approx(0.005 * 1.15)
    assert frontier.p_malformed(4096, 1.0) == pytest.approx(0.005 * 2.0)
    assert frontier.p_malformed(16384, 0.5) == pytest.approx(0.005 * 1.3 * 1.5)


def test_frontier_p_malformed_at_78k_with_84_percent_raw_is_about_1_5_percent(frontier: Profile) -> None:
    assert frontier.p_malformed(78_400, 0.84) == pytest.approx(0.015, abs=0.001)


def test_p_malformed_is_capped_at_one_half() -> None:
    stress = profile("stress-2023")
    assert stress.p_malformed(10**9, 1.0) == 0.5
    assert profile("frontier", p_malformed_base=1.0).p_malformed(4096, 0.0) == 0.5


# Built-ins and the oracle ---------------------------------------------------------------------------


def test_builtin_profiles_are_the_four_presets_and_the_oracle() -> None:
    assert set(PROFILE_NAMES) == {"frontier", "mid", "small", "stress-2023", "oracle"}


def test_oracle_recalls_everything_everywhere() -> None:
    oracle = profile("oracle")
    for tokens in (100, 4096, 200_000, 5_000_000):
        for x in (0.0, 0.3, 0.5, 1.0):
            assert oracle.p_recall(tokens, x) == 1.0
    assert oracle.p_keep(1_000_000) == 1.0


def test_oracle_emits_no_malformed_calls() -> None:
    oracle = profile("oracle")
    assert oracle.p_malformed(10**7, 1.0) == 0.0


def test_oracle_window_is_effectively_unlimited() -> None:
    assert profile("oracle").window_tokens >= 10**9


def test_stress_has_no_caching() -> None:
    assert profile("stress-2023").cache_min_tokens is None


def test_overrides_replace_fields_and_keep_the_rest() -> None:
    changed = profile("frontier", p_max=0.0, window_tokens=4096)
    assert changed.p_max == 0.0 and changed.window_tokens == 4096
    assert changed.L_half == profile("frontier").L_half
    assert changed.p_recall(1000, 0.5) == 0.0


def test_profiles_are_frozen() -> None:
    with pytest.raises(ValidationError):
        profile("frontier").p_max = 0.5  # type: ignore[misc]


# Loading ---------------------------------------------------------------------------------------------


def test_unknown_profile_name_raises_key_error_listing_names() -> None:
    with pytest.raises(KeyError) as info:
        profile("gpt-9")
    message = str(info.value)
    assert "gpt-9" in message
    for name in PROFILE_NAMES:
        assert name in message


def test_load_profile_by_builtin_name() -> None:
    assert load_profile("mid") == profile("mid")


def test_load_profile_from_full_toml(tmp_path: Path) -> None:
    fields = profile("small").model_dump(exclude={"name"})
    lines = [f"{k} = {_toml(v)}" for k, v in fields.items() if v is not None]
    path = tmp_path / "tiny.toml"
    path.write_text("\n".join(lines) + "\n")
    loaded = load_profile(path)
    assert loaded.name == "tiny"
    assert loaded.model_dump(exclude={"name"}) == fields


BASE_BUG = ("BUG: load_profile passes name= twice to profile() for any TOML with base = ...: "
            "TypeError: profile() got multiple values for argument 'name'")


def test_load_profile_with_base_and_overrides(tmp_path: Path) -> None:
    path = tmp_path / "slow.toml"
    path.write_text('base = "frontier"\nname = "slow-frontier"\ndecode_tps = 20.0\np_fix = 0.5\n')
    loaded = load_profile(path)
    assert loaded.name == "slow-frontier"
    assert loaded.decode_tps == 20.0 and loaded.p_fix == 0.5
    assert loaded.L_half == profile("frontier").L_half
    assert loaded.price_out == profile("frontier").price_out


def test_load_profile_with_base_name_defaults_to_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('base = "mid"\n')
    loaded = load_profile(path)
    assert loaded.name == "mine"
    assert loaded.L_half == profile("mid").L_half


def test_load_profile_with_base_bad_field_raises_validation_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('base = "frontier"\np_max = 1.5\n')
    with pytest.raises(ValidationError, match="p_max"):
        load_profile(path)


def test_load_profile_unknown_base_raises_key_error_listing_names(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('base = "nope"\n')
    with pytest.raises(KeyError, match="frontier"):
        load_profile(path)


@pytest.mark.parametrize(("field", "bad"), [("p_max", "1.5"), ("window_tokens", '"big"'), ("p_maxx", "0.9")])
def test_load_profile_bad_field_raises_validation_error_naming_it(tmp_path: Path, field: str, bad: str) -> None:
    fields = profile("small").model_dump(exclude={"name"})
    lines = [f"{k} = {_toml(v)}" for k, v in fields.items() if v is not None and k != field]
    path = tmp_path / "bad.toml"
    path.write_text("\n".join([*lines, f"{field} = {bad}"]) + "\n")
    with pytest.raises(ValidationError) as info:
        load_profile(path)
    assert field in str(info.value)


def test_load_profile_full_toml_missing_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "partial.toml"
    path.write_text("window_tokens = 8192\n")
    with pytest.raises(ValidationError) as info:
        load_profile(path)
    assert "p_max" in str(info.value)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return repr(value)


# Literal look-ups (mock-model.md v2 change 1) --------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LITERAL_SOURCES))
def test_literal_curve_is_the_least_squares_fit_of_its_ruler_row(name: str) -> None:
    p = profile(name)
    l_half, k, rmse = fit_length_curve(RULER_ROWS[LITERAL_SOURCES[name]], p.p_max)
    assert p.L_half_literal == pytest.approx(l_half, rel=0.005)
    assert p.k_literal == pytest.approx(k, abs=0.001)
    assert LITERAL_FIT_RMSE[name] == pytest.approx(rmse, abs=0.0005)


def test_the_fit_recovers_a_curve_it_was_given() -> None:
    lengths = (4096, 8192, 16_384, 32_768, 65_536, 131_072)
    row = [100 * 0.99 / (1 + (n / 300_000) ** 1.2) for n in lengths]
    l_half, k, rmse = fit_length_curve(row, 0.99, lengths)
    assert l_half == pytest.approx(300_000, rel=0.01)
    assert k == pytest.approx(1.2, abs=0.005)
    assert rmse < 1e-4


@pytest.mark.parametrize("name", ["mid", "small", "stress-2023"])
def test_literal_recall_decays_slower_than_latent(name: str) -> None:
    p = profile(name)
    length = min(32_000, p.window_tokens - 1)
    assert p.p_recall(length, 0.5, "literal") > p.p_recall(length, 0.5, "latent")
    assert p.p_recall(length, 0.5) == p.p_recall(length, 0.5, "latent")


def test_a_profile_without_a_literal_curve_uses_the_latent_one() -> None:
    p = profile("mid", L_half_literal=None, k_literal=None)
    assert p.p_recall(50_000, 0.3, "literal") == p.p_recall(50_000, 0.3, "latent")


def test_summary_keep_uses_the_curve_of_the_facts_kind() -> None:
    p = profile("mid")
    assert p.p_keep(60_000, "literal") > p.p_keep(60_000, "latent")
