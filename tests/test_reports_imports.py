"""`reports` reads run directories only (docs/design.md, "Which way imports go"): importing every reports
module, and writing a report and a comparison with them, never loads the runtime, the runner, the
strategies or the scenarios. Checked in a fresh interpreter, where nothing is imported yet. Inside
`reports`, no module uses another's private names and the modules import each other without a cycle."""

from __future__ import annotations

import ast
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


# How the reports modules import each other ----------------------------------------------------------------


def reports_imports() -> dict[str, set[tuple[str, str]]]:
    """For each reports module (a subpackage's modules dotted: ``validation.status``), every (reports
    module, name) it uses from another one: ``from reports.x import name`` gives (x, name); ``from reports
    import x`` or ``import reports.x`` gives (x, "") and, for each ``x.name`` in the code, (x, name).
    Imports inside functions count too."""
    uses: dict[str, set[tuple[str, str]]] = {}
    for path in sorted((ROOT / "reports").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        # A module's name below reports: ``render``, ``validation.status``, ``validation`` for its __init__.
        parts = path.relative_to(ROOT / "reports").with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not name:  # reports/__init__.py itself
            continue
        found: set[tuple[str, str]] = set()
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "reports":
                for alias in node.names:
                    found.add((alias.name, ""))
                    aliases[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reports."):
                found |= {(node.module.removeprefix("reports."), alias.name) for alias in node.names}
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("reports."):
                        found.add((alias.name.removeprefix("reports."), ""))
                        if alias.asname:
                            aliases[alias.asname] = alias.name.removeprefix("reports.")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                found.add((aliases[node.value.id], node.attr))
        uses[name] = {(module, used) for module, used in found if module != name}
    return uses


def test_no_reports_module_uses_a_private_name_of_another() -> None:
    private = {module: sorted(f"{other}.{name}" for other, name in used if name.startswith("_"))
               for module, used in reports_imports().items()}
    assert {module: names for module, names in private.items() if names} == {}


def test_the_reports_modules_import_each_other_without_a_cycle() -> None:
    graph = {module: {other for other, _ in used} for module, used in reports_imports().items()}
    assert {"render", "sweep", "tables", "markup", "validation", "validation.status"} <= set(graph)
    assert "render" not in graph["sweep"] and "render" not in graph["compare"]

    def cycle_from(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module):], module]
        for other in sorted(graph.get(module, ())):
            found = cycle_from(other, [*path, module])
            if found:
                return found
        return None

    cycles = [cycle for module in sorted(graph) if (cycle := cycle_from(module, []))]
    assert cycles == [], " -> ".join(cycles[0])
