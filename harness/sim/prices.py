"""List prices and prompt-cache rules of the common models, as data (``prices.toml`` beside this module).

Each entry of ``prices.toml`` is one model family's prices (USD per million tokens: ``price_in``,
``price_cache_read``, ``price_cache_write``, ``price_out``) and cache rules (``cache_min_tokens``,
``cache_ttl_s``, ``cache_granularity``, or ``caching = false``), with the field names of
`harness.sim.profiles.Profile`, and says where the numbers come from (``source``: the vendor's pricing page,
and simonw/llm-prices where it agrees) and the day they are stated for (``date``). The file's header says
what the prices are (the vendors' standard list prices, below any long-context tier) and the cache rules'
sources.

A model name is matched as `harness.core.model_tokens` matches it for its tokenizer: lowercased, without its
provider route (``openai/``, ``azure/``, ``litellm_proxy/anthropic/``), a fine-tune's ``ft:`` or a Bedrock
``[region.]vendor.`` prefix. Then the name itself, and then the name without each snapshot suffix in turn
(``-2024-08-06``, ``-20250514``, ``@20240620``, ``-v1:0``, ``-latest``, ``-preview-05-06``, ``-exp-0827``), is
looked up among the entries' names and aliases: ``claude-3-5-sonnet-20241022-v2:0`` is ``claude-3-5-sonnet``,
while ``gpt-4o-2024-05-13``, an entry of its own, is not ``gpt-4o``. OpenAI's four-digit snapshots
(``gpt-4-0613``) are only matched as listed aliases: some are priced differently from the name they
snapshot (gpt-3.5-turbo-1106 against -0125). A fine-tune is matched as its base model, whose list price it
does not have (OpenAI prices fine-tuned models apart).

`profile_for_model` puts a model's prices and cache rules on a base profile (the model's behaviour stays the
base's); for a model the table does not know it returns the base profile unchanged and a note saying so,
which the caller shows as a warning.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from harness.core.model_tokens import normalize_model_name
from harness.sim.profiles import Profile, profile

__all__ = [
    "PRICE_FIELDS",
    "PriceEntry",
    "parse_prices",
    "price_entries",
    "price_for_model",
    "profile_for_model",
]

#: The `Profile` fields an entry may set.
PRICE_FIELDS = ("price_in", "price_cache_read", "price_cache_write", "price_out", "caching", "cache_min_tokens",
                "cache_ttl_s", "cache_granularity")
_REQUIRED = ("price_in", "price_cache_read", "price_cache_write", "price_out", "source", "date")
_ENTRY_KEYS = frozenset((*PRICE_FIELDS, "aliases", "source", "date", "note"))

#: Snapshot suffixes dropped one at a time, outermost first, until a name is found (module docstring).
_SNAPSHOT_SUFFIXES = tuple(re.compile(p) for p in (
    r"-v\d+(?::\d+)?$",  # Bedrock: -v1:0, -v2
    r":\d+$",
    r"@\d{8}$",  # Vertex: @20240620
    r"-\d{4}-\d{2}-\d{2}$",  # OpenAI: -2024-08-06
    r"-\d{8}$",  # Anthropic: -20250514
    r"-latest$",
    r"-preview-\d{2}-\d{2}(?:\d{2})?$",  # Gemini: -preview-05-06, -preview-09-2025
    r"-exp-\d{4}$",
))


@dataclass(frozen=True, slots=True)
class PriceEntry:
    """One entry of the price table."""

    name: str
    aliases: tuple[str, ...]
    #: The `Profile` fields it sets (`PRICE_FIELDS`).
    fields: dict[str, Any]
    source: str
    date: dt.date
    note: str = ""


def _entry(name: str, table: Any) -> PriceEntry:
    """One checked entry of the table; ValueError naming the entry for what is wrong with it."""
    if not isinstance(table, dict):
        raise ValueError(f"prices.toml: models.{name} is not a table")
    unknown = sorted(set(table) - _ENTRY_KEYS)
    if unknown:
        raise ValueError(f"prices.toml: models.{name}: unknown keys {', '.join(unknown)}")
    missing = [key for key in _REQUIRED if key not in table]
    if missing:
        raise ValueError(f"prices.toml: models.{name}: missing {', '.join(missing)}")
    source, date, aliases = table["source"], table["date"], table.get("aliases", [])
    if not isinstance(source, str) or not source.strip():
        raise ValueError(f"prices.toml: models.{name}: source must be a non-empty string")
    if not isinstance(date, dt.date) or isinstance(date, dt.datetime):
        raise ValueError(f"prices.toml: models.{name}: date must be a TOML date (YYYY-MM-DD)")
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ValueError(f"prices.toml: models.{name}: aliases must be a list of names")
    fields = {key: table[key] for key in PRICE_FIELDS if key in table}
    return PriceEntry(name, tuple(aliases), fields, source, date, str(table.get("note", "")))


@functools.cache
def price_entries() -> dict[str, PriceEntry]:
    """Every entry of ``prices.toml`` by name, read and checked once (`parse_prices`)."""
    return parse_prices(resources.files("harness.sim").joinpath("prices.toml").read_text(encoding="utf-8"))


def parse_prices(text: str) -> dict[str, PriceEntry]:
    """The entries of a price table's TOML text by name. ValueError for a malformed entry, a name that is not
    written as `normalize_model_name` writes it, or a name claimed twice (as a name or an alias)."""
    models = tomllib.loads(text).get("models", {})
    if not isinstance(models, dict):
        raise ValueError("prices.toml: models is not a table")
    entries = {name: _entry(name, table) for name, table in models.items()}
    claimed: dict[str, str] = {}
    for entry in entries.values():
        for key in (entry.name, *entry.aliases):
            if normalize_model_name(key) != key:
                raise ValueError(f"prices.toml: models.{entry.name}: {key!r} is not a normalized model name")
            if key in claimed:
                raise ValueError(f"prices.toml: {key!r} names both models.{claimed[key]} and models.{entry.name}")
            claimed[key] = entry.name
    return entries


@functools.cache
def _names() -> dict[str, str]:
    """Each entry's name and aliases -> the entry's name."""
    return {key: entry.name for entry in price_entries().values() for key in (entry.name, *entry.aliases)}


def _lookup_names(model: str) -> list[str]:
    """The names ``model`` is looked up as, in order: itself, then without each snapshot suffix in turn."""
    name = normalize_model_name(model)
    names = [name]
    for suffix in _SNAPSHOT_SUFFIXES:
        stripped = suffix.sub("", name)
        if stripped != name:
            name = stripped
            names.append(name)
    return names


def price_for_model(model: str | None) -> tuple[dict[str, Any], str] | None:
    """(the `Profile` fields of ``model``'s prices and cache rules, the entry's name), or None when the table
    has no entry for it (module docstring for how names match)."""
    if not model:
        return None
    names = _names()
    for name in _lookup_names(model):
        if name in names:
            entry = price_entries()[names[name]]
            return dict(entry.fields), entry.name
    return None


def profile_for_model(model: str | None, base: str = "frontier") -> tuple[Profile, str]:
    """The built-in profile ``base`` with ``model``'s prices and cache rules (its name and behaviour stay the
    base's), and a note saying which entry (with its source and date) they come from; for a model the table
    does not know (or none), the base profile unchanged and a note saying so, for the caller to show as a
    warning. KeyError for an unknown base."""
    base_profile = profile(base)
    found = price_for_model(model)
    if found is None:
        what = f"model {model!r} has no entry in the price table" if model else "no model named"
        return base_profile, f"{what}: using the {base} profile's prices and cache rules"
    fields, name = found
    entry = price_entries()[name]
    # An entry with cache rules turns caching on even where the base has it off (stress-2023).
    fields.setdefault("caching", True)
    merged = Profile(**(base_profile.model_dump() | fields))
    return merged, f"{model}: prices and cache rules of {name} ({entry.source}; {entry.date.isoformat()})"
