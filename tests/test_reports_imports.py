"""`reports` reads run directories only (DESIGN.md, "Which way imports go"): importing every reports
module, and writing a report and a comparison with them, never loads the runtime, the runner, the
strategies or the scenarios. Checked in a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.config import RunConfig
from harness.run.runner import run

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("harness.sim", "harness.run", "harness.cli", "strategies", "scenarios")

IMPORT_ALL = """
import importlib, json, pkgutil, sys
import reports
names = sorted(m.name for m in pkgutil.iter_modules(reports.__path__))
for name in names:
    importlib.import_module(f"reports.{name}")
if len(sys.argv) > 1:
    from reports.compare import compare
    from reports.render import write_report
    write_report(sys.argv[1])
    compare(sys.argv[1], sys.argv[1])
print(json.dumps({"reports": names, "modules": sorted(sys.modules)}))
"""


def loaded(*args: str) -> dict[str, list[str]]:
    result = subprocess.run([sys.executable, "-c", IMPORT_ALL, *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    data: dict[str, list[str]] = json.loads(result.stdout)
    return data


def forbidden(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


def test_importing_every_reports_module_loads_no_runtime() -> None:
    data = loaded()
    assert {"stats", "render", "compare", "plots"} <= set(data["reports"])
    assert {"reports.render", "reports.compare", "reports.plots"} <= set(data["modules"])
    assert forbidden(data["modules"]) == []


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    config = RunConfig(sessions=3, seed=1, batch_size=3, executor="serial", scenarios=[{"name": "mix", "turns": 20}],
                       strategies=[{"name": "unbounded"}, {"name": "sliding_window"}])
    run(config, tmp_path / "run", quiet=True)
    return tmp_path / "run"


def test_writing_a_report_and_a_comparison_loads_no_runtime(run_dir: Path) -> None:
    data = loaded(str(run_dir))
    assert (run_dir / "report.html").exists()
    assert forbidden(data["modules"]) == []
