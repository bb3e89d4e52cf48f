"""The v3 ablation script (docs/validation/ablation.py): every arm switches its mechanism off, a tiny run
writes a table row per arm and model, and the kept output matches the arms the script defines."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

from tests.docs.scripts import SCRIPTS, load_script

KEPT = SCRIPTS / "ablation.json"


def _load() -> ModuleType:
    return load_script("ablation")


def test_each_arm_switches_off_what_it_names() -> None:
    ablation = _load()
    arms = {arm.name: arm for arm in ablation.ARMS}
    assert not arms["context progress off"].mechanisms.context_progress
    assert not arms["visible sources off"].mechanisms.visible_sources
    assert arms["notes off"].profile_overrides("mid") == {"p_note": 0.0}
    assert arms["confabulation at the v2 rate"].profile_overrides("mid") == {"p_confabulate": 0.2}
    assert arms["forms off"].forms is False
    assert arms["report grading"].scenario_params == {"graded_on": "report"}
    assert arms["p_note x2"].profile_overrides("frontier") == {"p_note": 0.33}
    all_on = arms["v3 (all on)"]
    assert all_on.mechanisms.context_progress and all_on.mechanisms.visible_sources and all_on.forms


def test_a_tiny_run_writes_a_row_per_arm_and_model(tmp_path: Path) -> None:
    ablation = _load()
    assert ablation.main(["--sessions", "3", "--jobs", "1", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "ablation.json").read_text())
    assert set(results["arms"]) == {arm.name for arm in ablation.ARMS}
    table = (tmp_path / "ablation.md").read_text()
    for arm in ablation.ARMS:
        assert table.count(f"| {arm.name}") == 2  # one row under mid, one under frontier


def test_the_kept_output_covers_the_scripts_arms() -> None:
    ablation = _load()
    kept = json.loads(KEPT.read_text())
    assert set(kept["arms"]) == {arm.name for arm in ablation.ARMS}
    assert kept["sessions"] >= 300
