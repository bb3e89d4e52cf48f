"""The layer contract of docs/design.md ("Which way imports go"), as `make lint` checks it with
import-linter: the project keeps it, a wrong import breaks it, and no two top-level packages or
harness layers import each other, directly or through others."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "strategies", "scenarios", "reports")
#: The units of the diagram: harness by layer, the other packages whole.
UNITS = ("harness.core", "harness.sim", "harness.run", "harness.cli", "strategies", "scenarios", "reports")
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
#: The contracts' names in pyproject.toml.
LAYERS, REPORTS = "Layers of docs/design.md", "Reports read run directories only"


def lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), str(project / "pyproject.toml"), "--no-cache", "--no-logo"],
                          cwd=project, env={"PYTHONPATH": str(project), "PATH": ""}, capture_output=True,
                          text=True, timeout=300, check=False)


def test_the_project_keeps_its_import_contracts() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.fixture(scope="module")
def copy_of_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("project")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


@pytest.mark.parametrize(
    ("module", "wrong_import", "contract"),
    [
        pytest.param("harness/core/crn.py", "import harness.run.runner", LAYERS, id="core-imports-run"),
        pytest.param("strategies/unbounded.py", "import scenarios.base", LAYERS, id="strategies-import-scenarios"),
        pytest.param("harness/sim/model.py", "import harness.cli", LAYERS, id="sim-imports-cli"),
        pytest.param("reports/stats.py", "import harness.sim.metrics", REPORTS, id="reports-import-sim"),
    ],
)
def test_a_wrong_import_breaks_the_contract(copy_of_project: Path, module: str, wrong_import: str,
                                            contract: str) -> None:
    path = copy_of_project / module
    original = path.read_text()
    try:
        path.write_text(original + f"\n{wrong_import}  # noqa: E402\n")
        result = lint_imports(copy_of_project)
    finally:
        path.write_text(original)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{contract} BROKEN" in result.stdout
    assert "1 kept, 1 broken" in result.stdout
    importer = module.removesuffix(".py").replace("/", ".")
    assert f"{importer} -> {wrong_import.removeprefix('import ')}" in result.stdout


def test_no_two_packages_or_layers_import_each_other() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    cycles = [(a, b) for a, b in itertools.combinations(UNITS, 2)
              if graph.chain_exists(importer=a, imported=b, as_packages=True)
              and graph.chain_exists(importer=b, imported=a, as_packages=True)]
    assert cycles == []
