"""pyproject.toml's package-data names every JSON file the ``reports`` packages read at run time, so a wheel
(which carries only the listed data files) holds them, and names no file that is not there."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _listed() -> dict[str, list[str]]:
    """Each reports package's listed data files (``reports.validation`` -> ``["verdicts.json", ...]``)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        data = tomllib.load(f)
    package_data: dict[str, list[str]] = data["tool"]["setuptools"]["package-data"]
    return {package: names for package, names in package_data.items() if package.split(".")[0] == "reports"}


def _listed_paths() -> set[Path]:
    return {ROOT.joinpath(*package.split(".")) / name for package, names in _listed().items() for name in names}


def test_every_json_file_under_reports_is_package_data() -> None:
    present = set((ROOT / "reports").rglob("*.json"))
    assert present, "no JSON data files found under reports/"
    assert present <= _listed_paths()


def test_package_data_names_only_files_that_exist() -> None:
    assert _listed(), "no package-data listed for reports"
    assert all(path.is_file() for path in _listed_paths())
