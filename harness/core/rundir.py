"""The run directory's contract (docs/design.md, "Run directory"): its file names and the typed
``Manifest`` that the run directory writes and the reports read.

It lives in the core so that both sides share one definition without the reports importing the
runner: a run copied to a laptop reads back through this module alone.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.core.files import write_atomically

__all__ = [
    "ACCOUNTING_MODE",
    "CALLS_TABLE",
    "CONFIG_FILE",
    "EVENTS_TABLE",
    "HIDDEN_TABLE",
    "MANIFEST_FILE",
    "PARTS_DIR",
    "PLOTS_DIR",
    "REPORT_HTML",
    "REPORT_MD",
    "RUN_FILES",
    "SESSIONS_TABLE",
    "Manifest",
    "TableCheckError",
    "file_sha256",
    "verify_tables",
]

#: The resolved config (every default filled in) with its hash: written first, it marks a run directory.
CONFIG_FILE = "config.toml"
#: Who made the tables, from what, and their checksums: written last, it marks a finished run.
MANIFEST_FILE = "manifest.json"
#: One row per (scenario, session_index, strategy).
SESSIONS_TABLE = "sessions.parquet"
#: One row per model call.
CALLS_TABLE = "calls.parquet"
#: The per-turn event log: one row per event (a call's context, a tool result, a compaction, a lost fact);
#: absent when the run was made with ``events = false``.
EVENTS_TABLE = "events.parquet"
#: ``manifest.json``'s ``mode`` for recorded sessions replayed by ``ctxbench replay`` (a simulated run has none).
ACCOUNTING_MODE = "accounting"
#: An accounting run's tool outputs that a strategy hid from some call (``ctxbench replay``).
HIDDEN_TABLE = "hidden.parquet"
#: The append-only resume log: one ``<batch id>.jsonl`` per finished batch.
PARTS_DIR = "parts"
REPORT_HTML = "report.html"
REPORT_MD = "report.md"
PLOTS_DIR = "plots"
#: The files a run writes into its directory besides its parts, in the order it writes them: what the
#: directory's readers trust, so never an output of another command.
RUN_FILES = (CONFIG_FILE, MANIFEST_FILE, SESSIONS_TABLE, CALLS_TABLE, EVENTS_TABLE, HIDDEN_TABLE)


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
    #: How many batches of the plan the tables hold (all of the run's, or of its shard, unless a
    #: ``--partial`` merge): with the checksums, what tells a finished run once its parts are removed.
    batches: int | None = None
    #: ``"accounting"`` for recorded sessions replayed by ``ctxbench replay`` (exact token accounting, no
    #: behavioural metrics); absent for a simulated run.
    mode: str | None = None

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
        for optional in ("merged_from", "mode"):
            if data[optional] is None:
                data.pop(optional)
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def write(self, run_dir: Path) -> None:
        """Write ``manifest.json`` into ``run_dir`` atomically."""
        write_atomically(run_dir / MANIFEST_FILE, self.to_json().encode())

    @classmethod
    def read(cls, run_dir: str | Path) -> Manifest:
        """The manifest of ``run_dir``. Raises OSError when it cannot be read, ValueError (json's or
        pydantic's) when it is not a manifest."""
        return cls.model_validate_json(Path(run_dir, MANIFEST_FILE).read_bytes())


class TableCheckError(ValueError):
    """A table the manifest lists is missing, unreadable or not the bytes the run wrote: one line
    naming the file (and, for a bad entry, the manifest's field)."""


#: How a sha256 is written in the manifest: 64 lowercase hex digits.
_SHA256 = re.compile(r"[0-9a-f]{64}")


def file_sha256(path: Path) -> str:
    """The sha256 of the file's bytes, read in chunks (a calls table can be large). Raises OSError."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def verify_tables(run_dir: str | Path, manifest: Manifest) -> None:
    """Check each file the manifest's ``sha256`` lists against its checksum, in the manifest's order;
    a TableCheckError naming the first one that is missing, not a file, unreadable or changed since
    the run wrote it. Files the manifest does not list are not checked (a manifest from before
    checksums lists none).

    A name must be a plain file name of the run directory: a manifest cannot make this read
    elsewhere.
    """
    run_dir = Path(run_dir)
    manifest_path = run_dir / MANIFEST_FILE
    for name, expected in manifest.sha256.items():
        if name in ("", ".", "..") or "/" in name or "\\" in name:
            raise TableCheckError(f"{manifest_path}: sha256: {name!r} is not a file name of the run directory")
        if not _SHA256.fullmatch(expected):
            raise TableCheckError(f"{manifest_path}: sha256.{name}: {expected!r} is not a sha256 "
                                  "(64 lowercase hex digits)")
        if "\0" in name or len(name.encode("utf-8", "surrogatepass")) > 255:  # no file system holds such a name
            raise TableCheckError(f"{manifest_path}: sha256: {name[:60]!r} is not a file name of the run directory")
        path = run_dir / name
        try:
            if not path.exists():
                raise TableCheckError(f"{path}: missing ({MANIFEST_FILE} lists it){_rebuild_hint(run_dir)}")
            if not path.is_file():
                raise TableCheckError(f"{path}: not a file ({MANIFEST_FILE} lists it as a table)")
            digest = file_sha256(path)
        except TableCheckError:
            raise
        except (OSError, ValueError) as error:  # ValueError: a name the system cannot encode
            reason = error.strerror if isinstance(error, OSError) and error.strerror else " ".join(str(error).split())
            raise TableCheckError(f"{str(path)[:200]}: cannot be read ({reason})") from None
        if digest != expected:
            raise TableCheckError(f"{path}: changed after the run (its sha256 does not match {MANIFEST_FILE})"
                                  f"{_rebuild_hint(run_dir)}")


def _rebuild_hint(run_dir: Path) -> str:
    """How to get the tables back: rebuilt from the parts when the directory still has them."""
    if (run_dir / PARTS_DIR).is_dir():
        return f"; run `ctxbench run` again with this run's config and --out {run_dir} to rebuild it from {PARTS_DIR}/"
    return "; restore the run directory from where it was copied"
