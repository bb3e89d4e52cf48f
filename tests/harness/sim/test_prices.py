"""The price table (harness/sim/prices.toml): every entry sourced and dated, the common models' names as traces
write them resolve, the cache rules fit the profiles, and the recorded costs of the real fixtures reproduce."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from harness.core.model_tokens import normalize_model_name
from harness.sim.prices import PRICE_FIELDS, parse_prices, price_entries, price_for_model, profile_for_model
from harness.sim.profiles import PROFILE_NAMES, Profile, profile


def test_every_entry_has_a_source_and_a_date() -> None:
    entries = price_entries()
    assert len(entries) >= 24
    for name, entry in entries.items():
        assert entry.name == name
        assert entry.source.strip(), name
        assert isinstance(entry.date, dt.date) and dt.date(2025, 1, 1) <= entry.date <= dt.date(2026, 12, 31), name
        assert set(entry.fields) <= set(PRICE_FIELDS)
        for key in ("price_in", "price_cache_read", "price_cache_write", "price_out"):
            assert isinstance(entry.fields[key], float), (name, key)


def test_every_name_and_alias_resolves_to_its_entry_and_makes_a_valid_profile() -> None:
    for entry in price_entries().values():
        for key in (entry.name, *entry.aliases):
            found = price_for_model(key)
            assert found is not None and found[1] == entry.name, key
            merged, note = profile_for_model(key)
            assert isinstance(merged, Profile)
            assert entry.name in note and entry.date.isoformat() in note


#: The families the table must know, as traces write their names.
@pytest.mark.parametrize(("model", "entry"), [
    ("gpt-4o", "gpt-4o"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("openai/gpt-4o", "gpt-4o"),
    ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
    ("gpt-4.1", "gpt-4.1"),
    ("azure/gpt-4.1-mini", "gpt-4.1-mini"),
    ("litellm_proxy/openai/gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"),
    ("gpt-5", "gpt-5"),
    ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
    ("openai/gpt-5-nano", "gpt-5-nano"),
    ("o3", "o3"),
    ("o3-2025-04-16", "o3"),
    ("o4-mini-2025-04-16", "o4-mini"),
    ("gpt-4-turbo", "gpt-4-turbo"),
    ("gpt-4-turbo-2024-04-09", "gpt-4-turbo"),
    ("gpt-4-1106-preview", "gpt-4-turbo"),
    ("azure/gpt-4-0125-preview", "gpt-4-turbo"),
    ("gpt-4", "gpt-4"),
    ("gpt-4-0613", "gpt-4"),
    ("gpt-3.5-turbo", "gpt-3.5-turbo"),
    ("gpt-3.5-turbo-0125", "gpt-3.5-turbo"),
    ("azure/gpt-35-turbo", "gpt-3.5-turbo"),
    ("litellm_proxy/anthropic/claude-sonnet-4-20250514", "claude-sonnet-4"),
    ("anthropic/claude-sonnet-4", "claude-sonnet-4"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("openrouter/anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
    ("claude-opus-4-20250514", "claude-opus-4"),
    ("claude-opus-4-1-20250805", "claude-opus-4"),
    ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
    ("claude-3-5-sonnet-latest", "claude-3-5-sonnet"),
    ("bedrock/us.anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
    ("vertex_ai/claude-3-5-haiku@20241022", "claude-3-5-haiku"),
    ("claude-3.5-haiku", "claude-3-5-haiku"),
    ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
    ("anthropic/claude-haiku-4.5", "claude-haiku-4-5"),
    ("gemini-2.5-pro", "gemini-2.5-pro"),
    ("gemini/gemini-2.5-pro-preview-05-06", "gemini-2.5-pro"),
    ("vertex_ai/gemini-2.5-flash", "gemini-2.5-flash"),
    ("gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"),
    ("deepseek-chat", "deepseek-chat"),
    ("litellm_proxy/deepseek/deepseek-chat", "deepseek-chat"),
    ("deepseek/deepseek-reasoner", "deepseek-reasoner"),
])
def test_known_names_resolve(model: str, entry: str) -> None:
    found = price_for_model(model)
    assert found is not None
    assert found[1] == entry


@pytest.mark.parametrize("model", [
    "gpt-3.5-turbo-1106", "gpt-4-32k", "o3-mini", "chatgpt-4o-latest", "gpt-5.1", "gemini-2.5-flash-lite",
    "claude-opus-4-5-20251101", "llama-3.1-70b", "", None])
def test_names_the_table_does_not_price(model: str | None) -> None:
    assert price_for_model(model) is None


def test_a_model_gets_its_prices_and_cache_rules_on_the_base_profile() -> None:
    merged, note = profile_for_model("azure/gpt-4.1-mini", base="mid")
    base = profile("mid")
    prices = (merged.price_in, merged.price_cache_read, merged.price_cache_write, merged.price_out)
    assert prices == (0.4, 0.1, 0.4, 1.6)
    assert (merged.cache_min_tokens, merged.cache_granularity, merged.cache_ttl_s) == (1024, 128, 300.0)
    assert merged.name == "mid"
    unchanged = set(Profile.model_fields) - set(PRICE_FIELDS)
    assert {k: getattr(merged, k) for k in unchanged} == {k: getattr(base, k) for k in unchanged}
    assert note.startswith("azure/gpt-4.1-mini: prices and cache rules of gpt-4.1-mini (OpenAI pricing")


def test_cache_rules_turn_caching_on_or_off_whatever_the_base() -> None:
    deepseek, _ = profile_for_model("deepseek-chat", base="stress-2023")  # stress-2023 has caching off
    assert deepseek.caching and (deepseek.cache_min_tokens, deepseek.cache_granularity) == (64, 64)
    turbo, _ = profile_for_model("gpt-4-turbo")
    assert not turbo.caching and turbo.price_in == 10.0


def test_an_unknown_model_gets_the_base_profile_and_a_note() -> None:
    for base in PROFILE_NAMES:
        merged, note = profile_for_model("acme-9000", base=base)
        assert merged == profile(base)
        assert "'acme-9000' has no entry in the price table" in note and base in note
    merged, note = profile_for_model(None)
    assert merged == profile("frontier") and note.startswith("no model named")
    with pytest.raises(KeyError):
        profile_for_model("gpt-4o", base="nonexistent")


def test_vendor_cache_price_rules() -> None:
    for entry in price_entries().values():
        f = entry.fields
        vendor = "anthropic" if entry.name.startswith("claude") else "other"
        if vendor == "anthropic":  # writes 1.25x, reads 0.1x the input price
            assert f["price_cache_write"] == pytest.approx(1.25 * f["price_in"]), entry.name
            assert f["price_cache_read"] == pytest.approx(0.1 * f["price_in"]), entry.name
            assert f["cache_granularity"] == 1
        else:  # no surcharge for writing the cache
            assert f["price_cache_write"] == f["price_in"], entry.name
        if f.get("caching", True):
            assert f["price_cache_read"] < f["price_in"], entry.name
            assert {"cache_min_tokens", "cache_ttl_s", "cache_granularity"} <= set(f), entry.name
        else:
            assert not {"cache_min_tokens", "cache_ttl_s", "cache_granularity"} & set(f), entry.name


def test_entry_names_are_normalized_model_names() -> None:
    for entry in price_entries().values():
        for key in (entry.name, *entry.aliases):
            assert normalize_model_name(key) == key


_GOOD = """
[models."acme-1"]
aliases = ["acme-one"]
price_in = 1.0
price_cache_read = 0.1
price_cache_write = 1.0
price_out = 2.0
source = "Acme's page"
date = 2026-01-02
"""


@pytest.mark.parametrize(("text", "problem"), [
    (_GOOD.replace('source = "Acme\'s page"\n', ""), "models.acme-1: missing source"),
    (_GOOD.replace("date = 2026-01-02", 'date = "2026-01-02"'), "date must be a TOML date"),
    (_GOOD.replace('source = "Acme\'s page"', 'source = " "'), "source must be a non-empty string"),
    (_GOOD + "window_tokens = 5\n", "unknown keys window_tokens"),
    (_GOOD.replace('aliases = ["acme-one"]', 'aliases = ["Acme-One"]'), "not a normalized model name"),
    (_GOOD + _GOOD.replace('[models."acme-1"]', '[models."acme-2"]'), "'acme-one' names both"),
])
def test_malformed_tables_are_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_prices(text)
    assert parse_prices(_GOOD)["acme-1"].aliases == ("acme-one",)


FIXTURES = (Path(__file__).resolve().parents[3] / ".." / "shared" / "realtraces" / "openhands-sdk" / "original"
            / "tests" / "fixtures" / "llm_data")


def test_the_recorded_costs_of_the_real_fixtures_reproduce() -> None:
    """LiteLLM priced each logged call (2025-09-04); the table's entry for its model gives the same cost."""
    logs = sorted(FIXTURES.glob("*/*.json")) if FIXTURES.is_dir() else []
    if not logs:
        pytest.skip(f"{FIXTURES} is not here")
    for path in logs:
        log = json.loads(path.read_text())
        usage = log["response"]["usage"]
        merged, _ = profile_for_model(log["response"]["model"])
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        written = usage.get("cache_creation_input_tokens") or 0
        cost = merged.cost_usd(usage["prompt_tokens"] - cached, cached, written, usage["completion_tokens"])
        assert cost == pytest.approx(log["cost"], rel=1e-9), path.name
