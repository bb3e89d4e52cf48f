"""A run directory that defends itself (harness/run/directory.py, harness/run/merge.py,
harness/run/parts.py): every kind of
damaged part is replayed to identical tables or refused with the directory unchanged, tables that
no longer match the manifest are rebuilt, a second writer is locked out, and merge refuses
duplicated, disagreeing, foreign or missing shards before it writes anything."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.core.files import lock_directory
from harness.core.shard import Shard
from harness.run.config import RunConfig
from harness.run.directory import RunDirectory, RunError, config_from_dir
from harness.run.merge import merge
from harness.run.parts import PART_FORMAT, PartError, PartProblem, read_part
from harness.run.plan import RunPlan, plan
from harness.run.runner import run
from harness.sim.profiles import PROFILE_NAMES
from tests.harness.run.test_runner import TABLES, snapshot, table_bytes, tiny

Damage = Callable[[Path], None]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run: tables and manifest, its parts removed."""
    out = tmp_path_factory.mktemp("store") / "reference"
    run(tiny(), out, quiet=True)
    return out


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run stopped after its last batch and before its tables: every part, no tables, no manifest."""
    out = tmp_path_factory.mktemp("store") / "interrupted"
    run(tiny(), out, quiet=True, keep_parts=True)
    for name in ("manifest.json", *TABLES):
        (out / name).unlink()
    return out


@pytest.fixture(scope="module")
def other_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of another config with the same batch ids (only the seed differs), its parts kept."""
    out = tmp_path_factory.mktemp("store") / "other"
    run(tiny(seed=6), out, quiet=True, keep_parts=True)
    return out


def copy_of(run_dir: Path, tmp_path: Path, name: str = "run") -> Path:
    target = tmp_path / name
    shutil.copytree(run_dir, target)
    return target


def part(run_dir: Path, index: int = 1) -> Path:
    return run_dir / "parts" / f"{plan(tiny())[index].id}.jsonl"


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])


def drop_last_line(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))


def garbage_line(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"}}not json{{\n")


def empty_row(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b'{"table": "sessions", "row": {}}\n')


def edit_a_number(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b'"turns": ', b'"turns": 9', 1))


def headerless(path: Path) -> None:
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[1:]))


def part_as_directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


#: Damage to a part's bytes: a resume replays the batch and the tables come out identical.
REPLAYED: dict[str, Damage] = {
    "emptied to 0 bytes": lambda p: p.write_bytes(b""),
    "truncated mid-line": truncate,
    "last line dropped": drop_last_line,
    "a garbage line appended": garbage_line,
    "an empty row appended": empty_row,
    "a value edited": edit_a_number,
    "header removed (older version)": headerless,
    "binary garbage": lambda p: p.write_bytes(bytes(range(256)) * 4),
    "a directory in its place": part_as_directory,
}


@pytest.mark.parametrize("damage", REPLAYED.values(), ids=REPLAYED.keys())
def test_a_damaged_part_is_replayed_to_identical_tables_and_kept_aside(tmp_path: Path, reference: Path,
                                                                       interrupted: Path, damage: Damage) -> None:
    out = copy_of(interrupted, tmp_path)
    damage(part(out))
    notes: list[str] = []
    summary = run(tiny(), out, quiet=True, notify=notes.append)
    assert summary.batches_run == 1
    assert len(notes) == 1 and part(out).name in notes[0] and "runs again" in notes[0]
    assert table_bytes(out) == table_bytes(reference)
    assert [p.name for p in (out / "parts" / "damaged").iterdir()] == [part(out).name]
    assert not list((out / "parts").glob("*.jsonl"))  # the good parts are removed with the tables written


def swap_in_other_config(other: Path) -> Damage:
    return lambda p: shutil.copyfile(part(other), p)


def copy_under_another_name(p: Path) -> None:
    shutil.copyfile(p.parent / f"{plan(tiny())[0].id}.jsonl", p)


def add_unplanned_part(p: Path) -> None:
    shutil.copyfile(p, p.parent / "99-9999999.jsonl")


def forge(p: Path, old: bytes, new: bytes) -> None:
    """Edit the rows of a part and rewrite its header's checksum to match: intact to every byte check."""
    header, body = p.read_bytes().split(b"\n", 1)
    assert old in body
    body = body.replace(old, new, 1)
    fields = json.loads(header)
    fields["sha256"] = hashlib.sha256(body).hexdigest()
    p.write_bytes(json.dumps(fields, sort_keys=True).encode() + b"\n" + body)


def rows_of_another_batch(p: Path) -> None:
    """The rows of batch 0 under batch 1's name, with the header (and so the checksum) rewritten to match."""
    source = p.parent / f"{plan(tiny())[0].id}.jsonl"
    header, body = source.read_bytes().split(b"\n", 1)
    fields = json.loads(header)
    fields["batch"] = p.stem
    p.write_bytes(json.dumps(fields, sort_keys=True).encode() + b"\n" + body)


@pytest.mark.parametrize("damage_name", ["another config's part swapped in", "another config's part for a deleted one",
                                         "a part duplicated under another name", "a part no batch has",
                                         "another batch's rows under a consistent header"])
def test_a_part_that_does_not_belong_is_refused_and_nothing_changes(tmp_path: Path, interrupted: Path,
                                                                    other_run: Path, damage_name: str) -> None:
    out = copy_of(interrupted, tmp_path)
    target = part(out)
    if damage_name == "another config's part swapped in":
        swap_in_other_config(other_run)(target)
    elif damage_name == "another config's part for a deleted one":
        (out / "parts" / plan(tiny())[1].id).with_suffix(".jsonl").unlink()
        shutil.copyfile(part(other_run), target)
    elif damage_name == "a part duplicated under another name":
        copy_under_another_name(target)
    elif damage_name == "a part no batch has":
        add_unplanned_part(target)
    else:
        rows_of_another_batch(target)
    before = snapshot(out)
    with pytest.raises(RunError) as info:
        run(tiny(), out, quiet=True)
    message = str(info.value)
    assert "\n" not in message and ".jsonl" in message
    assert snapshot(out) == before


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("damage", ["swapped for another config's", "zero bytes", "deleted"])
def test_tables_that_do_not_match_the_manifest_are_rebuilt_from_the_parts(tmp_path: Path, reference: Path,
                                                                          other_run: Path, table: str,
                                                                          damage: str) -> None:
    out = copy_of(reference, tmp_path)
    if damage == "swapped for another config's":
        shutil.copyfile(other_run / table, out / table)
    elif damage == "zero bytes":
        (out / table).write_bytes(b"")
    else:
        (out / table).unlink()
    notes: list[str] = []
    summary = run(tiny(), out, quiet=True, notify=notes.append)
    assert summary.batches_run == len(plan(tiny()))  # the parts were removed: the batches are replayed
    assert table_bytes(out) == table_bytes(reference)
    assert any("replayed to rebuild" in n for n in notes)


def test_tables_that_do_not_match_the_manifest_are_rebuilt_from_kept_parts(tmp_path: Path, reference: Path,
                                                                           interrupted: Path,
                                                                           other_run: Path) -> None:
    out = copy_of(interrupted, tmp_path)
    for name in ("manifest.json", *TABLES):
        shutil.copyfile(reference / name, out / name)
    shutil.copyfile(other_run / TABLES[0], out / TABLES[0])
    notes: list[str] = []
    summary = run(tiny(), out, quiet=True, notify=notes.append)
    assert summary.batches_run == 0
    assert table_bytes(out) == table_bytes(reference)
    assert any("rebuilt from the verified parts" in n for n in notes)


def test_a_finished_run_is_recognised_from_its_manifest_without_parts(tmp_path: Path, reference: Path) -> None:
    out = copy_of(reference, tmp_path)
    assert not (out / "parts").exists()
    before = snapshot(out)
    summary = run(tiny(), out, quiet=True)
    assert (summary.batches_run, summary.batches_skipped) == (0, len(plan(tiny())))
    assert snapshot(out) == before


def test_a_directory_whose_config_toml_was_deleted_is_refused_for_any_config(tmp_path: Path,
                                                                             reference: Path) -> None:
    out = copy_of(reference, tmp_path)
    (out / "config.toml").unlink()
    before = snapshot(out)
    for config in (tiny(), tiny(seed=6)):
        with pytest.raises(RunError, match=r"no config\.toml"):
            run(config, out, quiet=True)
    assert snapshot(out) == before


def test_a_directory_of_other_files_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    with pytest.raises(RunError, match="not a ctxbench run directory"):
        run(tiny(), out, quiet=True)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("text", ["", "not = [toml", "sessions = 3\n"], ids=["empty", "bad-toml", "no-hash"])
def test_a_damaged_config_toml_is_refused_naming_it(tmp_path: Path, reference: Path, text: str) -> None:
    out = copy_of(reference, tmp_path)
    (out / "config.toml").write_text(text)
    before = snapshot(out)
    with pytest.raises(RunError, match=r"config\.toml"):
        run(tiny(), out, quiet=True)
    assert snapshot(out) == before


def test_parts_directory_turned_into_a_file_is_refused(tmp_path: Path, interrupted: Path) -> None:
    out = copy_of(interrupted, tmp_path)
    shutil.rmtree(out / "parts")
    (out / "parts").write_text("")
    with pytest.raises(RunError, match="parts: not a directory"):
        run(tiny(), out, quiet=True)


def test_deleted_parts_are_replayed_to_identical_tables(tmp_path: Path, interrupted: Path,
                                                         reference: Path) -> None:
    out = copy_of(interrupted, tmp_path)
    shutil.rmtree(out / "parts")
    summary = run(tiny(), out, quiet=True)
    assert summary.batches_run == len(plan(tiny()))
    assert table_bytes(out) == table_bytes(reference)


def test_a_second_writer_is_refused_while_the_directory_is_locked(tmp_path: Path, reference: Path) -> None:
    out = copy_of(reference, tmp_path)
    before = snapshot(out)
    with lock_directory(out), pytest.raises(RunError, match="another ctxbench command is writing"):
        run(tiny(), out, quiet=True)
    assert snapshot(out) == before
    run(tiny(), out, quiet=True)  # the lock is gone with its holder


def test_temporary_files_of_a_killed_writer_are_cleared_on_resume(tmp_path: Path, interrupted: Path,
                                                                    reference: Path) -> None:
    out = copy_of(interrupted, tmp_path)
    stale = [out / ".sessions.parquet.abc123.tmp", out / "parts" / f".{part(out).name}.xyz.tmp"]
    for path in stale:
        path.write_bytes(b"half written")
    run(tiny(), out, quiet=True)
    assert not any(path.exists() for path in stale)
    assert table_bytes(out) == table_bytes(reference)


# The part format ----------------------------------------------------------------------------------------


def test_a_part_carries_its_batch_config_hash_counts_and_checksum(interrupted: Path) -> None:
    path = part(interrupted)
    header = json.loads(path.read_bytes().split(b"\n", 1)[0])
    assert header["format"] == PART_FORMAT
    assert header["batch"] == path.stem
    assert header["config_hash"] == tiny().config_hash()
    verified = read_part(path, config_hash=tiny().config_hash())
    assert (header["sessions"], header["calls"]) == (len(verified.session_rows), len(verified.call_rows))


def test_read_part_says_whether_a_problem_can_be_replayed(interrupted: Path, tmp_path: Path) -> None:
    damaged = tmp_path / part(interrupted).name
    damaged.write_bytes(part(interrupted).read_bytes()[:-10])
    with pytest.raises(PartError) as info:
        read_part(damaged, config_hash=tiny().config_hash())
    assert info.value.problem is PartProblem.DAMAGED and info.value.problem.replayable
    with pytest.raises(PartError) as info:
        read_part(part(interrupted), config_hash=RunConfig(**(tiny().model_dump() | {"seed": 6})).config_hash())
    assert info.value.problem is PartProblem.FOREIGN and not info.value.problem.replayable


# Merge -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("shards")
    one, two = base / "one", base / "two"
    run(tiny(), one, shard=Shard(1, 2), quiet=True)
    run(tiny(), two, shard=Shard(2, 2), quiet=True)
    return one, two


def test_merge_refuses_the_same_shard_twice(tmp_path: Path, shards: tuple[Path, Path]) -> None:
    one, two = shards
    with pytest.raises(RunError, match="given twice"):
        merge(tmp_path / "merged", [one, two, one])
    copy = copy_of(one, tmp_path, "copy-of-one")
    with pytest.raises(RunError, match="same shard given twice"):
        merge(tmp_path / "merged", [one, two, copy])
    assert not (tmp_path / "merged").exists()


def test_merge_refuses_a_missing_shard_unless_partial(tmp_path: Path, shards: tuple[Path, Path],
                                                      reference: Path) -> None:
    one = shards[0]
    with pytest.raises(RunError, match="--partial"):
        merge(tmp_path / "merged", [one])
    assert not (tmp_path / "merged").exists()
    summary = merge(tmp_path / "partial", [one], partial=True)
    assert 0 < len(summary.sessions) < len(run(tiny(), reference, quiet=True).sessions)


@pytest.fixture(scope="module")
def unfinished_shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The two shards stopped before their tables: parts only."""
    base = tmp_path_factory.mktemp("unfinished")
    one, two = base / "one", base / "two"
    for out, shard in ((one, Shard(1, 2)), (two, Shard(2, 2))):
        run(tiny(), out, shard=shard, quiet=True, keep_parts=True)
        for name in ("manifest.json", *TABLES):
            (out / name).unlink()
    return one, two


def test_merge_joins_finished_and_unfinished_shards_to_the_whole_run(tmp_path: Path, shards: tuple[Path, Path],
                                                                    unfinished_shards: tuple[Path, Path],
                                                                    reference: Path) -> None:
    for inputs in ([shards[0], shards[1]], [unfinished_shards[0], shards[1]], list(unfinished_shards)):
        merged = tmp_path / f"merged-{len(list(tmp_path.iterdir()))}"
        merge(merged, inputs)
        assert table_bytes(merged) == table_bytes(reference)
        assert not (merged / "parts").exists()
        assert run(tiny(), merged, quiet=True).batches_run == 0  # a complete merge is the whole run


def test_merge_refuses_a_damaged_part_and_writes_nothing(tmp_path: Path,
                                                         unfinished_shards: tuple[Path, Path]) -> None:
    one = copy_of(unfinished_shards[0], tmp_path, "one")
    truncate(next((one / "parts").glob("*.jsonl")))
    with pytest.raises(RunError, match="checksum"):
        merge(tmp_path / "merged", [one, unfinished_shards[1]])
    assert not (tmp_path / "merged").exists()


def test_merge_refuses_a_finished_shard_whose_table_changed(tmp_path: Path, shards: tuple[Path, Path]) -> None:
    one = copy_of(shards[0], tmp_path, "one")
    truncate(one / TABLES[1])
    with pytest.raises(RunError, match="changed after the run"):
        merge(tmp_path / "merged", [one, shards[1]])
    assert not (tmp_path / "merged").exists()


def test_merge_refuses_inputs_that_disagree_on_a_part(tmp_path: Path, unfinished_shards: tuple[Path, Path],
                                                      shards: tuple[Path, Path]) -> None:
    """The same batch in two inputs, here with different rows, each intact: only the user knows which is right."""
    one = copy_of(unfinished_shards[0], tmp_path, "one")
    forge(next((one / "parts").glob("*.jsonl")), b'"turns": ', b'"turns": 9')
    with pytest.raises(RunError, match="same shard given twice"):
        merge(tmp_path / "merged", [one, shards[0], shards[1]])
    assert not (tmp_path / "merged").exists()


def test_merging_again_into_the_merged_directory_is_harmless(tmp_path: Path, shards: tuple[Path, Path],
                                                             reference: Path) -> None:
    merged = tmp_path / "merged"
    merge(merged, list(shards))
    merge(merged, list(shards))
    assert table_bytes(merged) == table_bytes(reference)


def test_merge_refuses_an_output_holding_an_unfinished_run(tmp_path: Path, shards: tuple[Path, Path],
                                                           interrupted: Path) -> None:
    out = copy_of(interrupted, tmp_path)
    before = snapshot(out)
    with pytest.raises(RunError, match="unfinished run"):
        merge(out, list(shards))
    assert snapshot(out) == before


def test_a_partial_merge_cannot_be_merged_again(tmp_path: Path, shards: tuple[Path, Path]) -> None:
    merge(tmp_path / "partial", [shards[0]], partial=True)
    with pytest.raises(RunError, match="partial merge"):
        merge(tmp_path / "again", [tmp_path / "partial", shards[1]])


def test_merge_refuses_inputs_of_different_configs(tmp_path: Path, shards: tuple[Path, Path],
                                                   other_run: Path) -> None:
    with pytest.raises(RunError, match="different configs"):
        merge(tmp_path / "merged", [shards[0], other_run])
    assert not (tmp_path / "merged").exists()


def test_merge_refuses_its_output_as_an_input(tmp_path: Path, shards: tuple[Path, Path]) -> None:
    with pytest.raises(RunError, match="cannot be one of the inputs"):
        merge(shards[0], [shards[0], shards[1]])


@pytest.mark.parametrize("shard", [Shard(1, 2), Shard(2, 2)])
def test_a_shard_run_into_a_whole_run_is_refused_and_the_tables_stay(tmp_path: Path, reference: Path,
                                                                     shard: Shard) -> None:
    out = copy_of(reference, tmp_path)
    before = snapshot(out)
    with pytest.raises(RunError, match="holds the whole run, not shard"):
        run(tiny(), out, shard=shard, quiet=True)
    assert snapshot(out) == before


def test_a_whole_run_completes_a_shard_directory(tmp_path: Path, unfinished_shards: tuple[Path, Path],
                                                 reference: Path) -> None:
    out = copy_of(unfinished_shards[0], tmp_path)
    summary = run(tiny(), out, quiet=True)
    assert summary.batches_skipped == len(list((unfinished_shards[0] / "parts").glob("*.jsonl"))) > 0
    assert table_bytes(out) == table_bytes(reference)


@pytest.mark.parametrize("name", ["config.toml", "manifest.json", *TABLES])
def test_a_directory_where_a_run_file_belongs_is_refused_before_any_work(tmp_path: Path, reference: Path,
                                                                         name: str) -> None:
    out = copy_of(reference, tmp_path)
    (out / name).unlink()
    (out / name).mkdir()
    assert not (out / "parts").exists()  # no parts: a run that went ahead would have work to do
    before = snapshot(out)
    with pytest.raises(RunError, match="not a file"):
        run(tiny(), out, quiet=True)
    assert snapshot(out) == before


@pytest.mark.parametrize("base", PROFILE_NAMES)
def test_the_stamped_config_reads_back_with_the_same_hash_for_every_profile(tmp_path: Path, base: str) -> None:
    """config.toml cannot write None: a profile must survive the round trip (stress-2023 has caching off)."""
    config = tiny(model={"base": base}, strategies=[{"name": "sliding_window", "token_budget": 50_000}])
    out = tmp_path / base
    out.mkdir()
    RunDirectory(out).prepare(RunPlan.simulated(config), resume=True)
    assert config_from_dir(out).config_hash() == config.config_hash()
