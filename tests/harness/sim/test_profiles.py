"""Model profiles (docs/model.md 9): the worked numbers, cost, malformed-call growth, the oracle,
and loading profiles from TOML."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.sim import profiles
from harness.sim.profiles import (
    LITERAL_FIT_RMSE,
    LITERAL_SOURCES,
    PROFILE_NAMES,
    RULER_ROWS,
    Profile,
    TomlFileError,
    fit_length_curve,
    load_profile,
    profile,
    read_toml,
)


@pytest.fixture(scope="module")
def frontier() -> Profile:
    return profile("frontier")


# Worked numbers of docs/model.md 9 (3 decimals / 0.1 s) --------------------------------------------


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


# Malformed calls (docs/model.md 3.1) ----------------------------------------------------------------


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
    assert profile("stress-2023").caching is False


def test_caching_off_has_one_spelling_so_a_dumped_profile_reads_back_equal() -> None:
    off = profile("mid", cache_min_tokens=None)
    assert off == profile("mid", caching=False)
    dumped = {k: v for k, v in off.model_dump(mode="json").items() if v is not None}  # what TOML can hold
    assert Profile(**dumped) == off


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


# A user's TOML file that cannot be read: one TomlFileError line naming the file -------------------------


def _directory(d: Path) -> Path:
    (d / "dir.toml").mkdir()
    return d / "dir.toml"


def _symlink_loop(d: Path) -> Path:
    (d / "a.toml").symlink_to(d / "b.toml")
    (d / "b.toml").symlink_to(d / "a.toml")
    return d / "a.toml"


def _through_a_file(d: Path) -> Path:
    (d / "a.toml").write_text("sessions = 2\n")
    return d / "a.toml" / "x.toml"


def _written(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        (d / name).write_bytes(data)
        return d / name
    return make


#: How a path given as a TOML file can fail to be one, and what the error line must say.
UNREADABLE_FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "missing": (lambda d: d / "absent.toml", "absent.toml: no such file"),
    "directory": (_directory, "dir.toml: is a directory"),
    "binary": (_written("x.toml", b"\x00\x01\x02seed = 1\n"),
               "x.toml: a binary file, not TOML text (NUL byte at offset 0)"),
    "utf-16": (_written("x.toml", "sessions = 2\n".encode("utf-16")),
               "x.toml: not UTF-8 text (a UTF-16 byte-order mark"),
    "latin-1": (_written("x.toml", 'name = "caf\xe9"\n'.encode("latin-1")),
                "x.toml: not UTF-8 text (byte 0xe9 at offset 11)"),
    "symlink-loop": (_symlink_loop, "a.toml: cannot be read (Too many levels of symbolic links)"),
    "path-through-a-file": (_through_a_file, "x.toml: cannot be read (Not a directory)"),
    "name-too-long": (lambda d: d / ("n" * 300 + ".toml"), ".toml: cannot be read (File name too long)"),
    "not-toml": (_written("x.toml", b"sessions = = 2\n"), "x.toml: Invalid value (at line 1, column 12)"),
    "integer-past-the-digit-limit": (_written("x.toml", b"seed = " + b"1" * 5000 + b"\n"),
                                     "x.toml: Exceeds the limit (4300 digits)"),
    "nested-too-deeply": (_written("x.toml", b"seed = " + b"[" * 5000 + b"]" * 5000 + b"\n"),
                          "x.toml: arrays or tables nested too deeply to read"),
}


@pytest.mark.parametrize(("make", "expected"), list(UNREADABLE_FILES.values()), ids=list(UNREADABLE_FILES))
def test_an_unreadable_toml_file_is_one_line_naming_it(tmp_path: Path, make: Callable[[Path], Path],
                                                       expected: str) -> None:
    path = make(tmp_path)
    with pytest.raises(TomlFileError) as info:
        read_toml(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path)), message
    assert expected in message, message


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its permissions")
def test_a_toml_file_without_read_permission_is_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text("seed = 1\n")
    path.chmod(0)
    with pytest.raises(TomlFileError, match=r"x\.toml: cannot be read \(Permission denied\)$"):
        read_toml(path)


def test_a_toml_file_past_the_size_limit_is_refused_without_reading_it_all(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiles, "MAX_TOML_BYTES", 2**20)
    path = tmp_path / "big.toml"
    path.write_bytes(b"# " + b"x" * 2**20 + b"\n")
    with pytest.raises(TomlFileError, match=r"big\.toml: larger than 1 MiB"):
        read_toml(path)


def test_an_empty_toml_file_is_an_empty_table_and_a_utf8_bom_is_skipped(tmp_path: Path) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_bytes(b"")
    assert read_toml(empty) == {}
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbfseed = 3\n")
    assert read_toml(bom) == {"seed": 3}


def test_load_profile_of_a_directory_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(TomlFileError, match=r"is a directory"):
        load_profile(tmp_path)


# Strict, finite, bounded fields ------------------------------------------------------------------------

#: Every field but the name; the types as the model declares them.
FIELDS = {name: info for name, info in Profile.model_fields.items() if name != "name"}
BOOL_FIELDS = [name for name, info in FIELDS.items() if info.annotation is bool]
INT_FIELDS = [name for name, info in FIELDS.items() if info.annotation in (int, int | None)]
FLOAT_FIELDS = [name for name, info in FIELDS.items() if info.annotation in (float, float | None)]
#: The two fields where inf means something: no decay.
INF_ALLOWED = ("L_half", "L_half_literal")


def test_the_field_lists_cover_every_field() -> None:
    assert sorted(BOOL_FIELDS + INT_FIELDS + FLOAT_FIELDS) == sorted(FIELDS)


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("bad", ["1", -1, math.nan], ids=["string", "negative", "nan"])
def test_every_field_refuses_a_string_a_negative_and_nan(field: str, bad: object) -> None:
    with pytest.raises(ValidationError) as info:
        profile("mid", **{field: bad})
    assert info.value.errors()[0]["loc"][0] == field


@pytest.mark.parametrize("field", [f for f in INT_FIELDS + FLOAT_FIELDS if f not in INF_ALLOWED])
@pytest.mark.parametrize("bad", [math.inf, 1e308, True], ids=["inf", "1e308", "boolean"])
def test_every_number_but_a_half_length_refuses_inf_an_overflowing_value_and_a_boolean(field: str, bad: object) -> None:
    with pytest.raises(ValidationError) as info:
        profile("mid", **{field: bad})
    assert info.value.errors()[0]["loc"][0] == field


@pytest.mark.parametrize("field", INT_FIELDS)
def test_every_integer_refuses_a_float_even_a_whole_one(field: str) -> None:
    with pytest.raises(ValidationError, match="valid integer"):
        profile("mid", **{field: 2048.0})


@pytest.mark.parametrize("field", BOOL_FIELDS)
def test_every_switch_refuses_an_integer(field: str) -> None:
    with pytest.raises(ValidationError, match="valid boolean"):
        profile("mid", **{field: 1})


@pytest.mark.parametrize("field", FLOAT_FIELDS)
def test_every_float_takes_an_integer(field: str) -> None:
    value = getattr(profile("mid"), field)
    assert getattr(profile("mid", **{field: round(value)}), field) == round(value)


@pytest.mark.parametrize("field", INF_ALLOWED)
def test_an_infinite_half_length_means_no_decay(field: str) -> None:
    p = profile("mid", **{field: math.inf})
    assert p.length_factor(10**9, "literal" if field == "L_half_literal" else "latent") == 1.0
    with pytest.raises(ValidationError, match="not nan"):
        profile("mid", **{field: math.nan})


def _upper(field: str) -> float:
    return next(m.le for m in FIELDS[field].metadata if hasattr(m, "le"))


def test_every_curve_stays_finite_with_every_field_at_its_bound() -> None:
    """The bounds are what keeps a run's numbers finite: the steepest curve at the shortest half-length,
    the slowest and noisiest latency, the dearest prices, every growth at its top, at the longest prompt."""
    top = {f: _upper(f) for f in FLOAT_FIELDS if f not in INF_ALLOWED}
    worst = profile("mid", **top | {"L_half": 1.0, "L_half_literal": 1.0, "decode_tps": 0.1, "D0": 0.6})
    tokens = 10**9  # the largest window any profile may have
    for lookup in ("latent", "literal"):
        assert math.isfinite(worst.length_factor(tokens, lookup))
        assert 0 <= worst.p_recall(tokens, 0.5, lookup) <= 1
        assert math.isfinite(worst.p_keep(tokens, lookup))
    assert 0 <= worst.p_malformed(tokens, 1.0) <= 0.5
    assert math.isfinite(worst.model_seconds(tokens, tokens, 10**6, tokens, z=8.0))
    assert math.isfinite(worst.cost_usd(tokens, tokens, tokens, tokens))


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return repr(value)


# Literal look-ups (docs/model.md 2.1, 9) ------------------------------------------------------------


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
    assert p.length_factor(50_000, "literal") == p.length_factor(50_000, "latent")
    # ... with no trough for the literal look-up (docs/model.md 2.1), so off the edges it recalls more.
    assert p.p_recall(50_000, 0.3, "literal") > p.p_recall(50_000, 0.3, "latent")


def test_a_literal_look_up_has_no_position_trough() -> None:
    p = profile("frontier")
    assert p.p_recall(78_400, 0.5, "literal") == p.p_recall(78_400, 1.0, "literal") == pytest.approx(0.995, abs=5e-4)
    assert p.p_recall(78_400, 0.5, "latent") < p.p_recall(78_400, 1.0, "latent")


def test_summary_keep_uses_the_curve_of_the_facts_kind() -> None:
    p = profile("mid")
    assert p.p_keep(60_000, "literal") > p.p_keep(60_000, "latent")
