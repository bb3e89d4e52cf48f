"""A third-party plugin that cannot be loaded is the user's mistake: one line naming the plugin and the
problem, exit 2 (harness.core.registry.PluginError). The case the tool registry exists for: a plugin that
registers a tool whose name differs from a built-in one only by '-'/'_'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

import scenarios.base
from harness.cli import main
from harness.core import registry
from harness.core.tools import CATALOGUE


@dataclass
class FakeEntryPoint:
    name: str
    value: str
    action: Any

    def load(self) -> Any:
        return self.action()


def _plugins(monkeypatch: pytest.MonkeyPatch, *entry: FakeEntryPoint) -> None:
    monkeypatch.delenv(registry.NO_PLUGINS_ENV, raising=False)
    monkeypatch.setattr(registry, "entry_points", lambda group: [e for e in entry if group == "ctxbench.scenarios"])
    monkeypatch.setattr(scenarios.base._REGISTRY, "_plugins_loaded", False)


def test_a_plugin_registering_a_near_duplicate_tool_name_is_one_line_naming_both(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    before = list(CATALOGUE)
    _plugins(monkeypatch, FakeEntryPoint("my_family", "my_pkg.family", lambda: CATALOGUE.register(
        "kubectl-logs", CATALOGUE["kubectl_logs"], where="my_pkg.family")))
    assert main(["list", "scenarios"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxbench: error: scenario plugin 'my_family' (my_pkg.family)")
    assert "'kubectl-logs'" in lines[0] and "'kubectl_logs'" in lines[0]
    assert list(CATALOGUE) == before  # nothing registered


def test_a_plugin_that_fails_to_import_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> None:
        raise ModuleNotFoundError("No module named 'my_missing_dependency'")

    _plugins(monkeypatch, FakeEntryPoint("broken", "broken_pkg:family", broken))
    assert main(["list", "scenarios"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scenario plugin 'broken'" in err and "my_missing_dependency" in err
