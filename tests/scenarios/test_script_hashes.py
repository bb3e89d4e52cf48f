"""Every generated script stays byte-identical: the sha256 of
``scenarios.generate(family, seed).model_dump_json()`` must equal the one stored in
`script_hashes.json`, for the five ops families at seeds 0..49 and for ``mix`` and ``code_repair`` at seeds
0..19 (code_repair pinned since it declared its fact forms and its patch grading).

The generators were restructured (a class per family with a method per kind of step) under this
guard, where moving code must not reorder a single random draw; it keeps holding them to that.
A deliberate change to a generator (or a dependency that changes the JSON) changes its scripts:
then regenerate the file and commit it with the change, saying why in the commit message:

    .venv/bin/python -m tests.scenarios.test_script_hashes --write

Cost: 10-20 s for all 270 scripts, depending on the machine's load.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

import scenarios

HASHES_FILE = Path(__file__).with_name("script_hashes.json")
#: family -> the seeds whose scripts are pinned.
SEEDS = {
    **{family: range(50) for family in ("k8s_crashloop", "db_slow_query", "log_triage", "deploy_regression",
                                        "alert_chain")},
    "mix": range(20),
    "code_repair": range(20),
}


def script_hash(family: str, seed: int) -> str:
    return hashlib.sha256(scenarios.generate(family, seed).model_dump_json().encode()).hexdigest()


def current_hashes() -> dict[str, str]:
    return {f"{family}/{seed}": script_hash(family, seed) for family, seeds in SEEDS.items() for seed in seeds}


def _stored() -> dict[str, str]:
    stored: dict[str, str] = json.loads(HASHES_FILE.read_text())
    return stored


def test_the_file_pins_exactly_the_listed_seeds() -> None:
    expected = {f"{family}/{seed}" for family, seeds in SEEDS.items() for seed in seeds}
    assert set(_stored()) == expected


@pytest.mark.parametrize("family", list(SEEDS))
def test_scripts_match_their_stored_hashes(family: str) -> None:
    stored = _stored()
    changed = [seed for seed in SEEDS[family] if script_hash(family, seed) != stored[f"{family}/{seed}"]]
    assert not changed, (f"{family}: the scripts of seeds {changed} changed; if that is intended, regenerate "
                         f"{HASHES_FILE.name} (see this module's docstring)")


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(f"usage: python -m tests.scenarios.test_script_hashes --write  (rewrites {HASHES_FILE})",
              file=sys.stderr)
        return 2
    HASHES_FILE.write_text(json.dumps(current_hashes(), indent=1, sort_keys=True))
    print(f"wrote {HASHES_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
