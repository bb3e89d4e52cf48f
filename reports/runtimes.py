"""The runtime each strategy of a run ran under, and whether a comparison is like for like.

A strategy decides the window; the runtime (tool contracts, error format, breaker, token budget, output
cap, tool-name normalisation) is the agent's scaffold around it. A ranking of strategies that ran under
different runtimes mixes the two effects, so the report ranks within each runtime
(:func:`runtime_groups`) and says first which settings differ (:func:`differing_settings`). The settings
come from the sessions table's switch columns, which every session row carries; the runtime's name, where
the run gave one (``[[runtimes]]``), from the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from harness.core.rundir import Manifest
from harness.core.switches import Switches

__all__ = ["RUNTIME_COLUMNS", "RuntimeGroup", "RuntimePair", "describe_settings", "differing_settings",
           "runtime_groups", "runtime_pairs"]

#: The sessions columns that hold the runtime a session ran under, in the order a reader is told them.
RUNTIME_COLUMNS: tuple[str, ...] = tuple(Switches.model_fields)
#: A setting's name as a sentence names it.
_SETTING_NAMES = {"contracts": "tool contracts", "errors": "error format", "breaker": "breaker",
                  "token_budget": "token budget", "output_cap_chars": "tool-output cap",
                  "normalize_tool_names": "tool-name normalisation"}


@dataclass(frozen=True, slots=True)
class RuntimeGroup:
    """Strategies that ran under the same runtime settings: a name (the run's runtime name when all of
    them share one, else the settings in words), the settings, and the strategies in the run's order."""

    name: str
    settings: tuple[tuple[str, Any], ...]
    strategies: tuple[str, ...]

    @property
    def description(self) -> str:
        return describe_settings(dict(self.settings))


def describe_settings(settings: Mapping[str, Any]) -> str:
    """Runtime settings in words: ``contracts on, three-class errors, breaker on, 2,000,000-token budget,
    30,000-character output cap``."""
    words = []
    if "contracts" in settings:
        words.append(f"contracts {'on' if settings['contracts'] else 'off'}")
    if "errors" in settings:
        words.append("three-class errors" if settings["errors"] == "three_class" else "plain errors")
    if "breaker" in settings:
        words.append(f"breaker {'on' if settings['breaker'] else 'off'}")
    if "token_budget" in settings:
        budget = int(settings["token_budget"])
        words.append(f"{budget:,}-token budget" if budget else "no token budget")
    if "output_cap_chars" in settings:
        cap = int(settings["output_cap_chars"])
        words.append(f"{cap:,}-character output cap" if cap else "no output cap")
    if settings.get("normalize_tool_names"):
        words.append("tool names normalised")
    return ", ".join(words)


def _plain(value: Any) -> Any:
    """A setting as a plain Python value (numpy scalars compare and hash like their values)."""
    return value.item() if hasattr(value, "item") else value


def _runtime_names(manifest: Manifest | None) -> dict[str, str]:
    """Label -> the runtime name the run gave its entry (``[[runtimes]]``), from the manifest."""
    if manifest is None:
        return {}
    return {str(e.get("label") or e.get("name")): str(e["runtime"]) for e in manifest.strategies if e.get("runtime")}


def runtime_groups(sessions: pd.DataFrame, order: Sequence[str],
                   manifest: Manifest | None = None) -> list[RuntimeGroup]:
    """The strategies of ``sessions`` grouped by the runtime settings they ran under (the switch columns
    the table has), groups in the order of their first strategy in ``order``. A run whose table has no
    switch column is one group."""
    present = [c for c in RUNTIME_COLUMNS if c in sessions.columns]
    strategies = [s for s in order if s in set(sessions["strategy"])] if not sessions.empty else []
    if not present or not strategies:
        return [RuntimeGroup("", (), tuple(strategies))] if strategies else []
    first = sessions.drop_duplicates("strategy").set_index("strategy")[present]
    members: dict[tuple[tuple[str, Any], ...], list[str]] = {}
    for strategy in strategies:
        settings = tuple((c, _plain(first.at[strategy, c])) for c in present)
        members.setdefault(settings, []).append(strategy)
    names = _runtime_names(manifest)
    groups: list[RuntimeGroup] = []
    for settings, group in members.items():
        given = {names.get(s, "") for s in group}
        name = given.pop() if len(given) == 1 and "" not in given else ""
        # An entry that overrides a switch of its named runtime is a runtime of its own: named by its settings.
        if not name or any(g.name == name for g in groups):
            name = describe_settings(dict(settings))
        groups.append(RuntimeGroup(name, settings, tuple(group)))
    return groups


def differing_settings(groups: Sequence[RuntimeGroup]) -> list[str]:
    """The settings whose values differ between ``groups``, in `RUNTIME_COLUMNS` order, as words."""
    if len(groups) < 2:
        return []
    values: dict[str, set[Any]] = {}
    for group in groups:
        for key, value in group.settings:
            values.setdefault(key, set()).add(value)
    return [_SETTING_NAMES.get(k, k) for k in RUNTIME_COLUMNS if len(values.get(k, ())) > 1]


@dataclass(frozen=True, slots=True)
class RuntimePair:
    """One strategy under two runtimes of the run: its label under each (``runtime`` against ``baseline``)."""

    strategy: str
    runtime: str
    label: str
    baseline_runtime: str
    baseline_label: str


def runtime_pairs(manifest: Manifest, present: Sequence[str]) -> list[RuntimePair]:
    """Each configured strategy that ran under several named runtimes (``[[runtimes]]``): its label under
    every runtime but the first against its label under the first, in the run's order. Only labels in
    ``present`` count; a run without named runtimes has none."""
    entries = [e for e in manifest.strategies if e.get("runtime")]
    runtimes = list(dict.fromkeys(str(e["runtime"]) for e in entries))
    if len(runtimes) < 2:
        return []
    by_strategy: dict[str, dict[str, str]] = {}
    for e in entries:
        label, runtime = str(e.get("label") or e.get("name")), str(e["runtime"])
        base = label.removesuffix(f"+{runtime}")
        if label in present and base != label:
            by_strategy.setdefault(base, {})[runtime] = label
    pairs = []
    for strategy, labels in by_strategy.items():
        under = [r for r in runtimes if r in labels]
        pairs += [RuntimePair(strategy, r, labels[r], under[0], labels[under[0]]) for r in under[1:]]
    return pairs
