"""harness.core.rundir: the manifest round-trips, and `verify_tables` accepts the tables the manifest
lists exactly as written and names the first one that is missing, not a file or changed."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core.rundir import (
    CALLS_TABLE,
    MANIFEST_FILE,
    PARTS_DIR,
    SESSIONS_TABLE,
    Manifest,
    TableCheckError,
    file_sha256,
    verify_tables,
)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def run_dir(tmp_path: Path) -> tuple[Path, Manifest]:
    """A run directory with two tables and the manifest of their checksums."""
    tables = {SESSIONS_TABLE: b"sessions bytes", CALLS_TABLE: b"calls bytes" * 10_000}
    for name, data in tables.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / PARTS_DIR).mkdir()
    manifest = Manifest(run_id="r", sha256={name: sha(data) for name, data in tables.items()},
                        rows={name: 1 for name in tables})
    manifest.write(tmp_path)
    return tmp_path, manifest


def test_file_sha256_is_the_sha256_of_the_bytes(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5_000  # more than one read chunk
    (tmp_path / "f").write_bytes(data)
    assert file_sha256(tmp_path / "f") == sha(data)


def test_the_tables_as_written_verify(run_dir: tuple[Path, Manifest]) -> None:
    path, manifest = run_dir
    verify_tables(path, manifest)
    verify_tables(str(path), Manifest.read(path))


def test_only_the_listed_tables_are_checked(run_dir: tuple[Path, Manifest]) -> None:
    path, _ = run_dir
    (path / CALLS_TABLE).write_bytes(b"changed")
    verify_tables(path, Manifest(run_id="r", sha256={SESSIONS_TABLE: sha(b"sessions bytes")}))
    verify_tables(path, Manifest(run_id="r"))  # a manifest from before checksums: nothing to verify


@pytest.mark.parametrize(("damage", "says"), [
    (lambda p: p.write_bytes(b"changed"), "changed after the run (its sha256 does not match manifest.json)"),
    (lambda p: p.write_bytes(b""), "changed after the run"),
    (lambda p: p.unlink(), "missing (manifest.json lists it)"),
    (lambda p: (p.unlink(), p.mkdir()), "not a file (manifest.json lists it as a table)"),
], ids=["edited", "emptied", "missing", "a-directory"])
def test_a_damaged_table_is_named(run_dir: tuple[Path, Manifest], damage: Callable[[Path], object],
                                  says: str) -> None:
    path, manifest = run_dir
    damage(path / CALLS_TABLE)
    with pytest.raises(TableCheckError) as info:
        verify_tables(path, manifest)
    message = str(info.value)
    assert message.startswith(f"{path / CALLS_TABLE}: {says}")
    assert "\n" not in message


def test_the_hint_says_how_to_rebuild_when_the_parts_are_there(run_dir: tuple[Path, Manifest]) -> None:
    path, manifest = run_dir
    (path / SESSIONS_TABLE).write_bytes(b"other")
    hint = f"; run `ctxbench run` again with this run's config and --out {path} to rebuild it from {PARTS_DIR}/"
    with pytest.raises(TableCheckError, match=re.escape(hint) + "$"):
        verify_tables(path, manifest)
    (path / PARTS_DIR).rmdir()
    with pytest.raises(TableCheckError, match=r"; restore the run directory from where it was copied$"):
        verify_tables(path, manifest)


@pytest.mark.parametrize(("name", "digest", "says"), [
    ("../outside", "0" * 64, "'../outside' is not a file name of the run directory"),
    ("/etc/passwd", "0" * 64, "'/etc/passwd' is not a file name of the run directory"),
    ("..", "0" * 64, "'..' is not a file name of the run directory"),
    (CALLS_TABLE, "ABC", f"sha256.{CALLS_TABLE}: 'ABC' is not a sha256"),
])
def test_a_manifest_entry_that_is_not_a_table_checksum_names_the_manifest(run_dir: tuple[Path, Manifest], name: str,
                                                                          digest: str, says: str) -> None:
    path, manifest = run_dir
    bad = manifest.model_copy(update={"sha256": manifest.sha256 | {name: digest}})
    with pytest.raises(TableCheckError) as info:
        verify_tables(path, bad)
    assert str(info.value).startswith(f"{path / MANIFEST_FILE}: sha256")
    assert says in str(info.value)


def test_the_manifest_round_trips(run_dir: tuple[Path, Manifest]) -> None:
    path, manifest = run_dir
    assert Manifest.read(path) == manifest
    assert (path / MANIFEST_FILE).read_text() == manifest.to_json()
