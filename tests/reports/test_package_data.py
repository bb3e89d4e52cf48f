"""pyproject.toml's package-data for ``reports`` names every JSON file the package reads at run time, so a
wheel (which carries only the listed data files) holds them, and names no file that is not there."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _listed() -> list[str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        data = tomllib.load(f)
    listed: list[str] = data["tool"]["setuptools"]["package-data"]["reports"]
    return listed


def test_every_json_file_under_reports_is_package_data() -> None:
    present = {path.name for path in (ROOT / "reports").glob("*.json")}
    assert present, "no JSON data files found under reports/"
    assert present <= set(_listed())


def test_package_data_names_only_files_that_exist() -> None:
    assert all((ROOT / "reports" / name).is_file() for name in _listed())
