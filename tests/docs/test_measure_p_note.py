"""The p_note measurement script (docs/validation/measure_p_note.py): its counting rules and its kept output.

The rules are checked on a tiny trajectory built here, so the tests run everywhere: which tokens are values
of which kind, that only values new to the session count, and that a value restated two agent turns later
counts in the windows t+1..t+2 and t+1..t+3 but not t+1. When ``CTXBENCH_REALTRACES`` names a folder of the
public transcripts, the script is run on it and must reproduce docs/validation/p_note_measurement.json.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.docs.scripts import SCRIPTS, load_script

KEPT_OUTPUT = SCRIPTS / "p_note_measurement.json"

measure_p_note = load_script("measure_p_note")


def _trajectory() -> dict[str, Any]:
    """A SWE-agent-shaped session: the task names ``ABC1234``; the first observation prints four new values."""
    return {
        "history": [
            {"role": "system", "content": "You fix bugs."},
            {"role": "user", "content": "Ticket ABC1234: the limit in src/limits.py is wrong."},
            {"role": "assistant", "content": "ignored: the trajectory steps are read instead"},
        ],
        "trajectory": [
            {"thought": "Search for the constant.", "action": "search_dir LIMIT",
             "observation": "src/tier_tables.py:197: LIMIT = 4096\nsee ABC1234, commit 9f3e2a1c, year 2024"},
            {"thought": "Open the file.", "action": "open src/tier_tables.py", "observation": "nothing new"},
            {"thought": "The constant at src/tier_tables.py:197 is 4096.", "action": "edit 197:197",
             "observation": "done"},
            {"thought": "Submit.", "action": "submit", "observation": "submitted"},
        ],
    }


def _session() -> Any:
    """`_trajectory` read as a session (the script's own ``Session``)."""
    return measure_p_note.swe_agent_session(_trajectory(), "swe-agent/run.traj")


def test_kinds_are_classified() -> None:
    """Each kind is recognised, and look-alikes that are not values are left out."""
    values = measure_p_note.extract_values(
        'src/tier_tables.py:197 src/foo.py setup.cfg ds.Rows np.array HAT001 9f3e2a1c 4096 2024 12 '
        '123e4567-e89b-12d3-a456-426614174000 "address1": 1\n836:    x = 1\n')
    assert values == {
        "src/tier_tables.py:197": "path_line", "src/foo.py": "path", "setup.cfg": "path", "HAT001": "id",
        "9f3e2a1c": "id", "4096": "number", "123e4567-e89b-12d3-a456-426614174000": "id",
    }  # attribute access, years, short numbers, dict keys and the listing gutter (836:) are not values


def test_only_new_values_count_and_windows_nest() -> None:
    """A value known before the observation is dropped; a restatement at t+2 counts in windows 2 and 3."""
    first, *rest = measure_p_note.observation_outcomes(_session())
    new, hits = first
    # ABC1234 is in the task, so it is known; 2024 is a year: neither counts.
    assert new == {"9f3e2a1c": "id", "4096": "number", "src/tier_tables.py:197": "path_line"}
    by_value = dict(zip(new, hits, strict=True))
    assert by_value["9f3e2a1c"] == {1: False, 2: False, 3: False}
    # Restated in the second agent turn after the observation: windows 2 and 3, not 1.
    assert by_value["4096"] == {1: False, 2: True, 3: True}
    assert by_value["src/tier_tables.py:197"] == {1: False, 2: True, 3: True}
    # The last observation has no agent turn after it and is not scanned.
    assert len(rest) == 2 and all(not values for values, _ in rest)


def test_summary_counts_values_observations_and_intervals() -> None:
    """The JSON summary carries the counts, the per-observation share and Wilson intervals."""
    results = measure_p_note.measure([_session()])
    per_value = results["swe-agent"]["per_value"]
    assert per_value["all"]["n"] == 3 and per_value["all"]["observations"] == 1
    assert per_value["all"]["windows"]["t+1..t+2"]["restated"] == 2
    assert per_value["number"]["windows"]["t+1..t+1"]["share"] == 0.0
    per_observation = results["all"]["per_observation"]
    assert (per_observation["n"], per_observation["observations_scanned"]) == (1, 3)
    assert per_observation["windows"]["t+1..t+3"]["share"] == 1.0
    low, high = measure_p_note.wilson(5, 10)
    assert 0.23 < low < 0.24 and 0.76 < high < 0.77


def test_kept_output_is_reproduced(tmp_path: Path) -> None:
    """On the public transcripts the script writes, byte for byte, the kept measurement."""
    traces = os.environ.get("CTXBENCH_REALTRACES")
    if not traces or not Path(traces).is_dir():
        pytest.skip("CTXBENCH_REALTRACES does not name a folder of public transcripts")
    out = tmp_path / "p_note_measurement.json"
    measure_p_note.main([traces, "--out", str(out)])
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(KEPT_OUTPUT.read_text(encoding="utf-8"))
    assert out.read_text(encoding="utf-8") == KEPT_OUTPUT.read_text(encoding="utf-8")
