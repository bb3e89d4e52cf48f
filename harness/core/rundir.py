"""The run directory's contract (DESIGN.md, "Run directory"): its file names and the typed
``Manifest`` that the store writes and the reports read.

It lives in the core so that both sides share one definition without the reports importing the
runner: a run copied to a laptop reads back through this module alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.core.files import write_atomically

__all__ = [
    "CALLS_TABLE",
    "CONFIG_FILE",
    "MANIFEST_FILE",
    "PARTS_DIR",
    "PLOTS_DIR",
    "REPORT_HTML",
    "REPORT_MD",
    "SESSIONS_TABLE",
    "Manifest",
]

#: The resolved config (every default filled in) with its hash: written first, it marks a run directory.
CONFIG_FILE = "config.toml"
#: Who made the tables, from what, and their checksums: written last, it marks a finished run.
MANIFEST_FILE = "manifest.json"
#: One row per (scenario, session_index, strategy).
SESSIONS_TABLE = "sessions.parquet"
#: One row per model call.
CALLS_TABLE = "calls.parquet"
#: The append-only resume log: one ``<batch id>.jsonl`` per finished batch.
PARTS_DIR = "parts"
REPORT_HTML = "report.html"
REPORT_MD = "report.md"
PLOTS_DIR = "plots"


class Manifest(BaseModel):
    """``manifest.json``: provenance and checksums of a run directory's tables.

    Keys a newer version adds are kept (``extra="allow"``), so an older reader still shows them.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    run_id: str
    ctxbench_version: str | None = None
    git_sha: str | None = None
    python: str | None = None
    platform: str | None = None
    root_seed: int | None = None
    config_hash: str | None = None
    #: ``"K/N"`` for a shard of a run, None for a whole run.
    shard: str | None = None
    #: The resolved strategy entries, in config order.
    strategies: list[dict[str, Any]] = Field(default_factory=list)
    #: One entry per strategy variant (label, name and sweep tags), in the order the run replays them.
    variants: list[dict[str, Any]] = Field(default_factory=list)
    scenarios: list[dict[str, Any]] = Field(default_factory=list)
    #: The run's model profile, every field.
    model: dict[str, Any] = Field(default_factory=dict)
    started: str | None = None
    finished: str | None = None
    #: Row count per table file name.
    rows: dict[str, int] = Field(default_factory=dict)
    #: sha256 of each table file's bytes.
    sha256: dict[str, str] = Field(default_factory=dict)
    #: The run directories a merge joined (absent for a run that was not merged).
    merged_from: list[str] | None = None

    @property
    def model_name(self) -> str | None:
        """The profile's name, if the manifest records one."""
        name = self.model.get("name")
        return None if name is None else str(name)

    def strategy_order(self) -> list[str]:
        """Strategy labels in the run's order: the variants, else the strategy entries."""
        entries = self.variants or self.strategies
        return list(dict.fromkeys(str(e.get("label") or e.get("name")) for e in entries))

    def to_json(self) -> str:
        """The file's text: sorted keys, two-space indent, a final newline; unset optional keys left out."""
        data = self.model_dump(mode="json", exclude_none=False)
        if self.merged_from is None:
            data.pop("merged_from")
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def write(self, run_dir: Path) -> None:
        """Write ``manifest.json`` into ``run_dir`` atomically."""
        write_atomically(run_dir / MANIFEST_FILE, self.to_json().encode())

    @classmethod
    def read(cls, run_dir: str | Path) -> Manifest:
        """The manifest of ``run_dir``. Raises OSError when it cannot be read, ValueError (json's or
        pydantic's) when it is not a manifest."""
        return cls.model_validate_json(Path(run_dir, MANIFEST_FILE).read_bytes())
