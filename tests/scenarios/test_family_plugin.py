"""A third-party scenario family that brings a tool of its own: installed through the ``ctxbench.scenarios``
entry point (a package and its ``*.dist-info/entry_points.txt`` on PYTHONPATH), it declares a contract the
built-in families do not have, and ``ctxbench run`` of a config naming it replays its sessions with that
tool registered and every call to it checked against its contract."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from harness.core.tools import CATALOGUE, ConflictingToolContract, ToolArgs, ToolRegistry
from scenarios.base import ScenarioFamily, Series, SessionScript, names, register

ROOT = Path(__file__).resolve().parents[2]

#: The plugin's module: a two-step incident (find the incident id in the logs, acknowledge it on the
#: pager) padded with log searches to the session length, and its new tool, ``pager_ack``.
FAMILY_MODULE = '''
"""pager_triage: find the incident in a service's logs, acknowledge its page."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictInt, StrictStr

from harness.core.tools import ToolArgs, ToolRegistry
from scenarios.base import ScenarioFamily, ScenarioParams, Series, SessionScript, register
from scenarios.builder import CoreStep, ScriptDraft, lit
from scenarios.ops_tools import ops_tools


class PagerAck(ToolArgs):
    description = "Acknowledge an incident's page on the on-call pager."
    median_latency_s = 0.4
    incident: Annotated[StrictStr, Field(pattern=r"^inc-[a-z0-9]{4}$")]
    severity: Annotated[StrictInt, Field(ge=1, le=5)]


TOOLS = ToolRegistry({**ops_tools("log_search"), "pager_ack": PagerAck}, where=__name__)


class PagerTriageDraft(ScriptDraft):
    def script(self) -> SessionScript:
        b = self.builder
        service = b.fact("service", "service", "svc")
        incident = b.fact("incident", "incident", "inc")
        ack = b.fact("ack", "ack", "ack")
        core = [
            CoreStep("log_search", {"service": "service", "query": lit("page")},
                     f"12:00:01 ERROR {service} paged for incident {incident}\\n", ["incident"]),
            CoreStep("pager_ack", {"incident": "incident", "severity": lit(2)},
                     f"acknowledged {incident}: {ack}\\n", ["ack"]),
        ]

        def explore(available: set[str]) -> None:
            self.explored += 1
            b.step("log_search", {"service": "service", "query": lit(f"warn {self.explored}")},
                   f"12:00:{self.explored:02d} WARN {service} slow request\\n")

        b.interleave(core, self.exploration_slots(len(core)), explore, {"service"})
        return b.build(f"The service {service} is paging. Find the incident and acknowledge it.", ["service"],
                       ["incident", "ack"])


@register("pager_triage")
class PagerTriage(ScenarioFamily):
    """Find the incident in the logs, acknowledge its page."""

    Params = ScenarioParams
    tools = TOOLS

    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        return PagerTriageDraft(self.name, seed, self.params, series).script()
'''

CONFIG = """
sessions = 6
seed = 0
executor = "process"
jobs = 2

[model]
base = "frontier"
p_malformed_base = 0.5

[[scenarios]]
name = "pager_triage"
turns = 20

[[strategies]]
name = "unbounded"
contracts = true
errors = "three_class"
"""


def _install_plugin(site: Path) -> None:
    """The package ``pager_plugin`` and the metadata that names its module in the entry-point group."""
    (site / "pager_plugin").mkdir()
    (site / "pager_plugin" / "__init__.py").write_text("")
    (site / "pager_plugin" / "family.py").write_text(textwrap.dedent(FAMILY_MODULE))
    dist = site / "pager_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pager-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[ctxbench.scenarios]\npager_triage = pager_plugin.family\n")


def _ctxbench(site: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CTXBENCH_NO_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


@pytest.mark.slow
def test_a_plugin_family_runs_with_its_own_tool_checked_by_its_contract(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_plugin(site)
    config = tmp_path / "pager.toml"
    config.write_text(CONFIG)
    out = tmp_path / "run"
    done = _ctxbench(site, "run", str(config), "--out", str(out), "--quiet", "--no-report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    sessions = pd.read_parquet(out / "sessions.parquet")
    assert set(sessions["scenario"]) == {"pager_triage"} and len(sessions) == 6
    assert "error" not in set(sessions["outcome"])
    events = pd.read_parquet(out / "events.parquet")
    acks = events[(events["event"] == "call") & (events["tool"] == "pager_ack")]
    calls = pd.read_parquet(out / "calls.parquet")
    acks = acks.merge(calls[["session_index", "call_index", "malformed_kind"]], on=["session_index", "call_index"])
    # Every session acknowledged its incident: the tool ran and its scripted output came back.
    assert set(acks.loc[acks["status"] == "success", "session_index"]) == set(range(6))
    assert (acks.loc[acks["status"] == "success", "malformed_kind"] == "").all()
    # A malformed call was refused before the tool ran, with a contract error: the class only the check
    # against the contract gives. A string for the integer ``severity`` is one (pydantic's strict int).
    refused = acks[acks["malformed_kind"] != ""]
    assert len(refused) > 0 and (refused["error_class"] == "contract").all()
    assert "wrong_type" in set(refused["malformed_kind"])


@pytest.mark.slow
def test_the_plugin_family_is_listed_beside_the_built_in_ones(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_plugin(site)
    listed = _ctxbench(site, "list", "scenarios", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "pager_triage" in listed.stdout and "k8s_crashloop" in listed.stdout


class _ConflictingLogs(ToolArgs):
    description = "Not the built-in log_search."
    service: str


def test_a_family_declaring_another_contract_under_a_registered_tool_name_is_refused_whole() -> None:
    before = list(CATALOGUE)

    class Conflicting(ScenarioFamily):
        tools = ToolRegistry({"brand_new_tool": _ConflictingLogs, "log_search": _ConflictingLogs})

        def generate(self, seed: int, series: Series | None = None) -> SessionScript:
            raise NotImplementedError

    with pytest.raises(ConflictingToolContract) as refused:
        register("conflicting_family")(Conflicting)
    line = str(refused.value)
    assert "\n" not in line and line.startswith("scenario conflicting_family: ")
    assert "'log_search'" in line and "LogSearch" in line and "_ConflictingLogs" in line
    assert list(CATALOGUE) == before  # neither tool was added
    assert "conflicting_family" not in names()  # nor the family
