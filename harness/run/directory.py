"""A run directory on disk and its resume (docs/design.md, "Run directory"): `RunDirectory` stamps the
resolved config, keeps the append-only resume log of parts, turns the parts into the tables (through
`harness.run.table_writer`) and the manifest, and removes the parts once the tables hold them. Simulated
and accounting runs are written by it alike: what differs between them is in their `RunPlan`.

The parent process is the only writer, and one command at a time holds a directory's lock
(`RunDirectory.writing`): each finished batch becomes ``parts/<batch>.jsonl`` atomically, so an
interrupted run loses at most the batches in flight and a resumed run never duplicates a row. Tables are
written before the manifest, which marks a finished run and holds their checksums. Nothing is trusted
because it is there: a resume and a merge verify every part (`harness.run.parts`) and every table
against the manifest before they use it, and refuse, naming the file, what they cannot repair.

The tables are streamed: the rows go from the parts to the Parquet files one batch at a time, so the
parent holds a batch and a row group, never the run (a 100,000-session run has tens of millions of call
rows).
"""

from __future__ import annotations

import contextlib
import platform
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import tomli_w
from pydantic import ValidationError

import harness
from harness.core.files import DirectoryBusy, lock_directory, remove_stale_temp_files, write_atomically
from harness.core.rundir import (
    CONFIG_FILE,
    MANIFEST_FILE,
    PARTS_DIR,
    RUN_FILES,
    SESSIONS_TABLE,
    Manifest,
    TableCheckError,
    verify_tables,
)
from harness.run.config import RunConfig, first_error
from harness.run.parts import BatchResult, Part, PartError, PartProblem, encode_part, read_part
from harness.run.plan import Batch, RunPlan
from harness.run.table_writer import BatchSource, BatchTables, TableWriteError, write_tables

__all__ = ["DAMAGED_DIR", "RunDirectory", "RunError", "RunSummary", "config_from_dir", "read_parts", "stamp_hash"]

#: Where a resume moves the parts it found damaged before replaying their batches (inside ``parts/``).
DAMAGED_DIR = "damaged"


class RunError(Exception):
    """The run cannot go ahead as asked (a directory holding another config's results, a missing
    extra, an unreachable scheduler): one line, exit 2."""


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What a run or merge left: its directory, the sessions table, and how the work went."""

    out_dir: Path
    sessions: pd.DataFrame
    errors: int
    batches_run: int
    batches_skipped: int
    wall_s: float


class RunDirectory:
    """One run directory, as a command that writes into it sees it: `open` it, hold it while `writing`,
    `prepare` it for a plan (refusing another config's directory), ask which batches are `pending`,
    `append` each finished batch as its part, `finish` (the tables and the manifest) and `compact` (the
    parts removed). Every method names the file and raises RunError for what it refuses."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def parts(self) -> Path:
        """The resume log's folder."""
        return self.path / PARTS_DIR

    def part(self, batch_id: str) -> Path:
        """The part file of ``batch_id``."""
        return self.parts / f"{batch_id}.jsonl"

    def open(self) -> None:
        """Make sure the directory exists, creating it (and its parents) when missing; RunError naming the
        path when it is something else or cannot be made."""
        if self.path.exists() and not self.path.is_dir():
            raise RunError(f"{self.path}: exists and is not a directory")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunError(f"{self.path}: cannot create the run directory ({e.strerror or e})") from None

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the directory's lock while the block writes into it (one command at a time), and clear the
        temporary files a killed writer left; RunError at once when another command holds it."""
        try:
            with lock_directory(self.path):
                for directory in (self.path, self.parts):
                    if directory.is_dir():
                        remove_stale_temp_files(directory)
                yield
        except DirectoryBusy:
            raise RunError(f"{self.path}: another ctxbench command is writing into this directory; wait for it to "
                           "finish or use --out for a new one") from None

    def check_own_files(self) -> None:
        """RunError when something that is not a file stands where the run writes one of its files (a
        directory named ``sessions.parquet``): the run would only fail at its end, after all its work."""
        for name in RUN_FILES:
            path = self.path / name
            if (path.exists() or path.is_symlink()) and not path.is_file():
                raise RunError(f"{path}: not a file (the run writes its {name} there); move it out of the way")

    def prepare(self, plan: RunPlan, *, resume: bool) -> None:
        """Check that the directory (existing, locked) is new or holds this plan's results, and stamp a new
        one with the resolved config. RunError, changing nothing, for another config's directory, a
        directory of other files, run files whose config.toml is gone, a shard's directory holding other
        batches, or (``resume`` off) this run already."""
        stamp = self.path / CONFIG_FILE
        if stamp.exists() or stamp.is_symlink():
            previous = stamp_hash(self.path)
            if previous != plan.config_hash:
                raise RunError(f"{self.path} holds a run of another config (or mock model version, or profile "
                               f"values; hash {previous[:12]}, this one {plan.config_hash[:12]}); use --out for a "
                               "new directory")
            if not resume:
                raise RunError(f"{self.path} already holds this run; drop --no-resume to resume it or use --out")
            self._check_shard_fits(plan)
            return
        others = sorted(p.name for p in self.path.iterdir() if not p.name.startswith("."))
        run_files = [name for name in others if name in (PARTS_DIR, *RUN_FILES)]
        if run_files:
            raise RunError(f"{self.path}: holds run files ({', '.join(run_files)}) but no {CONFIG_FILE}, so which "
                           "config made them is unknown; use --out for a new directory")
        if others:
            raise RunError(f"{self.path}: not empty and not a ctxbench run directory (holds {others[0]}); use --out "
                           "for a new directory")
        self.parts.mkdir(exist_ok=True)
        resolved = {"config_hash": plan.config_hash} | dict(plan.stamp)
        write_atomically(stamp, tomli_w.dumps(_toml_safe(resolved)).encode())

    def _check_shard_fits(self, plan: RunPlan) -> None:
        """A shard run writes into a directory of its own shard: RunError when the directory holds batches
        of other shards (a whole run, a merge, another shard: in its parts or its finished tables), which
        it would replace with a slice. A whole run may complete a shard's directory."""
        if plan.shard is None:
            return
        wanted = str(plan.shard)
        manifest = self._manifest()
        if manifest is not None and manifest.config_hash == plan.config_hash and manifest.shard != wanted:
            held = "the whole run" if manifest.shard is None else f"shard {manifest.shard}"
            raise RunError(f"{self.path}: holds {held}, not shard {wanted}; give each shard its own --out")
        if not self.parts.is_dir():
            return
        mine = {b.id for b in plan.mine}
        planned = {b.id for b in plan.batches}
        others = sorted(p.stem for p in self.parts.glob("*.jsonl") if p.stem in planned - mine)
        if others:
            raise RunError(f"{self.path}: holds batches outside shard {wanted} (e.g. {others[0]}: a whole run, a "
                           "merge or another shard); give each shard its own --out")

    def _manifest(self) -> Manifest | None:
        try:
            return Manifest.read(self.path)
        except (OSError, ValueError):
            return None

    def tables_are_current(self, plan: RunPlan) -> bool:
        """The tables hold every batch of this (shard of the) run and are unchanged since they were
        written: the manifest, written last, names this config, shard and batch count, and the tables'
        sha256 match it. A complete merge counts as the whole run."""
        manifest = self._manifest()
        if (manifest is None or manifest.config_hash != plan.config_hash
                or manifest.shard != (None if plan.shard is None else str(plan.shard))
                or manifest.batches != len(plan.mine)):
            return False
        if not set(plan.table_files) <= set(manifest.sha256):
            return False
        try:
            verify_tables(self.path, manifest)
        except TableCheckError:
            return False
        return True

    def finished_batches(self, plan: RunPlan) -> list[str] | None:
        """The batches whose rows the finished tables hold; None when the directory is not finished
        (then its parts are what it holds). RunError naming the table when the manifest claims tables that
        do not check against it, or the directory is a partial merge."""
        from harness.core.shard import Shard

        manifest = self._manifest()
        try:
            # A shard that does not read (ShardError is a ValueError) is a manifest this version did not write.
            shard = None if manifest is None or manifest.shard is None else Shard.parse(manifest.shard)
        except ValueError:
            return None
        if manifest is None or manifest.config_hash != plan.config_hash or manifest.batches is None:
            return None
        try:
            verify_tables(self.path, manifest)
        except TableCheckError as e:
            raise RunError(str(e).split("; ")[0] + "; run that shard again into its directory to rebuild its "
                           "tables, then merge") from None
        held = shard.select(plan.batches) if shard is not None else list(plan.batches)
        if manifest.batches != len(held):
            raise RunError(f"{self.path}: a partial merge (--partial) cannot be merged again; merge the shard "
                           "directories it came from")
        return [b.id for b in held]

    def pending(self, plan: RunPlan, *, notify: Callable[[str], None] = lambda _: None) -> list[Batch]:
        """The batches of the plan (its shard's) that still have to run: those without a verified part.
        A damaged part is set aside and its batch runs again (``notify`` hears it); tables that no longer
        match their manifest are rebuilt from the parts, and ``notify`` says how."""
        done = self.verified_parts(plan, replay_damaged=True, notify=notify)
        batches = plan.mine
        if (self.path / MANIFEST_FILE).exists():
            notify(f"{self.path}: the tables do not match the manifest (changed or damaged after the run); "
                   + ("rebuilt from the verified parts" if len(done) == len(batches) else
                      f"{len(batches) - len(done)} of {len(batches)} batches are replayed to rebuild them"))
        self.parts.mkdir(exist_ok=True)
        return [b for b in batches if b.id not in done]

    def verified_parts(self, plan: RunPlan, *, replay_damaged: bool,
                       notify: Callable[[str], None] = lambda _: None) -> set[str]:
        """Verify every part against ``plan``; the ids of the batches they hold.

        A part that is intact but does not belong (another config, another batch's name, rows of other
        sessions, a name no batch of this run has) is a RunError: only the user knows which copy is right.
        A damaged part is a RunError too unless ``replay_damaged``: then it is moved to ``parts/damaged/``,
        ``notify`` is told, and its batch is left out of the returned ids so that it runs again.
        """
        if not self.parts.exists():
            return set()
        if not self.parts.is_dir():
            raise RunError(f"{self.parts}: not a directory (the resume log of a run directory is a folder of parts)")
        batches = {b.id: b for b in plan.batches}
        done: set[str] = set()
        damaged: list[PartError] = []
        for path in sorted(self.parts.glob("*.jsonl")):
            try:
                if path.stem not in batches:
                    raise PartError(path, PartProblem.FOREIGN, "not a batch of this run's plan")
                part = read_part(path, config_hash=plan.config_hash)
                _check_rows(part, path, plan.expected_rows(batches[path.stem]))
            except PartError as e:
                if not (replay_damaged and e.problem.replayable):
                    raise RunError(f"{e}; move it out of the way (or use --out for a new directory)") from None
                damaged.append(e)
                continue
            done.add(part.batch)
        # Only once every part is known not to be refused: a refused command changes nothing.
        for problem in damaged:
            kept = _set_aside(problem.path)
            notify(f"{problem.path}: {problem.why}; its batch runs again (the file is kept as {kept})")
        return done

    def append(self, plan: RunPlan, result: BatchResult) -> None:
        """Add one finished batch to the resume log, atomically, with its header and checksum (`parts`)."""
        write_atomically(self.part(result.batch_id),
                         encode_part(result.batch_id, plan.config_hash, result.session_rows, result.call_rows,
                                     result.events, result.hidden_rows))

    def part_batches(self, plan: RunPlan, batch_ids: Iterable[str]) -> BatchSource:
        """The rows of the parts of ``batch_ids``, one part at a time in the tables' order, each verified
        again as it is read (RunError naming the first that changed since it was checked)."""
        order = plan.in_table_order(list(batch_ids))

        def batches() -> Iterator[BatchTables]:
            for batch_id in order:
                yield part_tables(self.part(batch_id), plan)

        return batches

    def finish(self, plan: RunPlan, source: BatchSource, *, batches: int, started: str,
               merged_from: list[str] | None = None) -> pd.DataFrame:
        """Write the rows of ``source``'s ``batches`` batches as the plan's tables, then, last,
        ``manifest.json`` with their checksums; the sessions table.

        The files are the bytes one ``pq.write_table`` of each whole table wrote (docs/design.md,
        "Determinism"; `harness.run.table_writer`)."""
        try:
            written = write_tables(self.path, plan.tables, source)
        except TableWriteError as e:
            raise RunError(str(e)) from None
        manifest = Manifest(
            run_id=self.path.name, ctxbench_version=harness.__version__, git_sha=_git_sha(),
            python=sys.version.split()[0], platform=platform.platform(), config_hash=plan.config_hash,
            shard=None if plan.shard is None else str(plan.shard), **plan.manifest, started=started,
            finished=datetime.now(UTC).isoformat(timespec="seconds"),
            rows={spec.file: rows for spec, (rows, _) in zip(plan.tables, written, strict=True)},
            sha256={spec.file: sha for spec, (_, sha) in zip(plan.tables, written, strict=True)},
            merged_from=merged_from, batches=batches,
        )
        manifest.write(self.path)
        # Read back rather than kept: the sessions are a seventieth of the rows, and only they are needed.
        result: pd.DataFrame = pq.read_table(self.path / SESSIONS_TABLE).to_pandas(split_blocks=True,
                                                                                   self_destruct=True)
        return result

    def compact(self, plan: RunPlan) -> None:
        """Remove the parts once the tables that hold their rows are written and check against the manifest
        (the resume log is many times the tables' size): a finished run is recognised from its manifest.
        Only parts that verify as this run's are removed; anything else in ``parts/`` (a damaged part, a
        file the user put there, ``parts/damaged/``) stays for the user to look at."""
        verify_tables(self.path, Manifest.read(self.path))
        if not self.parts.is_dir():
            return
        planned = {b.id for b in plan.batches}
        for path in self.parts.glob("*.jsonl"):
            if path.stem in planned:
                with contextlib.suppress(PartError):
                    # Its rows were read into the tables a moment ago; the checksum says these are those bytes.
                    read_part(path, config_hash=plan.config_hash, rows=False)
                    path.unlink()
        with contextlib.suppress(OSError):  # not empty: what is left stays
            self.parts.rmdir()


def part_tables(path: Path, plan: RunPlan) -> BatchTables:
    """The rows of the part at ``path`` as one batch of the plan's tables, verified again (RunError naming
    it when it changed since it was checked, or holds rows of another layout)."""
    try:
        part = read_part(path, config_hash=plan.config_hash)
        return BatchTables(path, {spec.file: spec.batch_table(part.rows(spec.part_table)) for spec in plan.tables})
    except PartError as e:  # checked a moment ago; changed since (another hand in the directory)
        raise RunError(str(e)) from None
    except ValueError as e:  # the checksum holds, so a row of another layout: not this version's part
        raise RunError(f"{path}: {e}") from None


def _check_rows(part: Part, path: Path, expected: set[tuple[str, int, str]]) -> None:
    """A part whose checksum holds must also hold exactly its batch's sessions, each once."""
    keys = [(r.get("scenario"), r.get("session_index"), r.get("strategy")) for r in part.session_rows]
    if len(set(keys)) != len(keys) or set(keys) != expected:
        raise PartError(path, PartProblem.FOREIGN, "holds rows of other sessions than its batch's")
    sessions = {k[:2] for k in expected}
    if any((r.get("scenario"), r.get("session_index")) not in sessions for r in part.call_rows):
        raise PartError(path, PartProblem.FOREIGN, "holds model calls of other sessions than its batch's")
    if any((r[0], r[1], r[2]) not in expected for r in part.event_rows):  # the columns start with the key
        raise PartError(path, PartProblem.FOREIGN, "holds events of other sessions than its batch's")
    if any((r.get("scenario"), r.get("session_index"), r.get("strategy")) not in expected for r in part.hidden_rows):
        raise PartError(path, PartProblem.FOREIGN, "holds hidden outputs of other sessions than its batch's")


def _set_aside(path: Path) -> Path:
    """Move a damaged part into ``parts/damaged/`` (never deleted: the user may want to see it)."""
    aside = path.parent / DAMAGED_DIR
    aside.mkdir(exist_ok=True)
    target = aside / path.name
    n = 1
    while target.exists():
        target = aside / f"{path.name}.{n}"
        n += 1
    path.rename(target)
    return target


def _toml_safe(value: Any) -> Any:
    """TOML has no null: drop None values (they mean "unset" everywhere in the config)."""
    if isinstance(value, dict):
        return {k: _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_safe(v) for v in value]
    return value


def _git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def stamp_hash(run_dir: Path) -> str:
    """The config hash in ``run_dir``'s ``config.toml``; RunError naming the file when it has none."""
    stamp = run_dir / CONFIG_FILE
    try:
        value = tomllib.loads(stamp.read_text()).get("config_hash")
    except OSError as e:
        raise RunError(f"{stamp}: cannot be read ({e.strerror or e})") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise RunError(f"{stamp}: damaged, not the TOML a run writes ({e})") from None
    if not isinstance(value, str) or not value:
        raise RunError(f"{stamp}: config_hash: missing; not written by ctxbench run")
    return value


def config_from_dir(run_dir: Path) -> RunConfig:
    """The RunConfig a simulated run directory was made with (from its resolved ``config.toml``); RunError
    naming the file when it is not one ctxbench wrote, or its hash does not match what it holds."""
    stamp = run_dir / CONFIG_FILE
    recorded = stamp_hash(run_dir)
    data = tomllib.loads(stamp.read_text())
    data.pop("config_hash", None)
    try:
        config = RunConfig(**data)
    except ValidationError as e:
        raise RunError(f"{stamp}: not a config this version can run ({first_error(e)})") from None
    except ValueError as e:  # a model_validator's message
        raise RunError(f"{stamp}: not a config this version can run ({e})") from None
    if config.config_hash() != recorded:
        raise RunError(f"{stamp}: its config_hash does not match the config it holds (edited after the run?)")
    return config


def read_parts(run_dir: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(session rows, call rows) of every part of a simulated ``run_dir``, verified against its config, in
    part-name order; RunError naming the first part that does not hold up."""
    plan = RunPlan.simulated(config_from_dir(run_dir))
    directory = RunDirectory(run_dir)
    sessions: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for batch_id in sorted(directory.verified_parts(plan, replay_damaged=False)):
        path = directory.part(batch_id)
        try:
            part = read_part(path, config_hash=plan.config_hash)
        except PartError as e:  # checked a moment ago; changed since (another hand in the directory)
            raise RunError(str(e)) from None
        sessions += part.session_rows
        calls += part.call_rows
    return sessions, calls

