"""The hostile-input suite: every row of `tests.hostile.cases.CASES` run in-process through
``harness.cli.main``, as a careless or unlucky user would (docs/design.md, "CLI": exit 2 is a usage error,
one line on stderr naming what is wrong, no traceback; a failed command writes nothing).

A failing case says what went wrong with a tag at the start of each problem, so the failures can be
grouped: ``[traceback]``, ``[hang]``, ``[validation ran]``, ``[wrong exit]``, ``[not one line]``,
``[not named]``, ``[good dir changed]``, ``[damaged dir changed]``, ``[results written]``,
``[silent wrong result]``, ``[non-finite]``, ``[missing output]``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import traceback
import types
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from harness.cli import main
from tests.hostile.cases import (
    CASES,
    DIR_TARGETS,
    EXPECTATIONS,
    FAMILIES,
    GARBAGE,
    MODEL_BOUNDED,
    MODEL_INT,
    MODEL_NONNEGATIVE,
    MODEL_POSITIVE,
    OK,
    OK_OR_USAGE,
    REFUSE_OR_IDENTICAL,
    REPLAY_TARGETS,
    SCENARIO_PARAMS,
    STRATEGY_PARAMS,
    TARGETS,
    USAGE,
    Case,
    Op,
)
from tests.hostile.conftest import TABLES, Sources

PROJECT = str(Path(__file__).resolve().parents[2])
#: A file to append one JSON line per case to (id, family, expectation, exit code, problems), when set.
TALLY_ENV = "CTXBENCH_HOSTILE_TALLY"
#: Seconds a case may take before it counts as a hang.
CASE_TIMEOUT_S = 120
#: Well-formed files of the wrong kind, by file name (the parquet tables get each other's bytes).
WRONG_TYPE = {
    "config.toml": b'config_hash = []\nsessions = "two"\n[[strategies]]\nname = 5\n',
    "manifest.json": b"[]\n",
    ".jsonl": b'["sessions", 1]\n{"table": "sessions"}\n',
    "report.html": b'{"not": "a report"}\n',
}
ALLOWED_EXITS = {USAGE: {2}, OK: {0}, OK_OR_USAGE: {0, 2}, REFUSE_OR_IDENTICAL: {0, 2}}


class ExperimentStarted(BaseException):
    """``ctxbench validation`` started an experiment (a BaseException, so no ``except Exception`` in the
    product swallows it)."""


class CaseTimeout(BaseException):
    """The case ran longer than CASE_TIMEOUT_S."""


# Setup ---------------------------------------------------------------------------------------------------------

def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif os.path.lexists(path):
        path.unlink()


def _damage_file(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "missing":
        path.unlink()
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(GARBAGE)
    elif how == "wrong_type":
        if path.suffix == ".parquet":
            other = "calls.parquet" if path.name == "sessions.parquet" else "sessions.parquet"
            path.write_bytes((path.parent / other).read_bytes())
        else:
            path.write_bytes(WRONG_TYPE.get(path.name, WRONG_TYPE.get(path.suffix, b"[]\n")))
    elif how == "dir_swap":
        path.unlink()
        path.mkdir()
    else:
        raise ValueError(how)


def _damage_dir(path: Path, how: str) -> None:
    files = sorted(p for p in path.iterdir() if p.is_file())
    if how == "missing":
        shutil.rmtree(path)
    elif how == "empty":
        for p in path.iterdir():
            _remove(p)
    elif how == "truncated":
        for p in files:
            p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    elif how == "garbage":
        (path / ("99-9999999.jsonl" if path.name == "parts" else "garbage.png")).write_bytes(GARBAGE)
    elif how == "wrong_type":
        if path.name == "parts":
            (path / "zz-0000000.jsonl").mkdir()
        else:
            files[0].unlink()
            files[0].mkdir()
    elif how == "dir_swap":
        shutil.rmtree(path)
        path.write_bytes(b"not a directory\n")
    else:
        raise ValueError(how)


def _alter_part(path: Path, how: str) -> None:
    """Change one number of the first session row. ``intact``: if a header line carries a sha256 of the rows
    that follow it, recompute it, so the part is well-formed but says something else; ``tampered``: leave it."""
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        item = json.loads(line)
        if isinstance(item, dict) and item.get("table") == "sessions":
            item["row"]["latency_s"] = float(item["row"]["latency_s"]) + 1.0
            lines[i] = json.dumps(item, sort_keys=True)
            break
    else:
        raise AssertionError(f"{path}: no session row to alter")
    header = json.loads(lines[0])
    if how == "intact" and isinstance(header, dict) and "sha256" in header and "table" not in header:
        body = "".join(line + "\n" for line in lines[1:]).encode()
        header["sha256"] = hashlib.sha256(body).hexdigest()
        lines[0] = json.dumps(header, sort_keys=True)
    path.write_text("\n".join(lines) + "\n")


def apply(op: Op, sources: Sources) -> None:
    path = Path(op.path)
    if op.kind == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove(path)
        path.write_bytes(op.data if isinstance(op.data, bytes) else op.data.encode())
    elif op.kind == "mkdir":
        path.mkdir(parents=True, exist_ok=True)
    elif op.kind == "symlink":
        os.symlink(str(op.data), path)
    elif op.kind == "copy":
        shutil.copytree(sources.dirs[str(op.data)], path, symlinks=True)
    elif op.kind == "copy_file":
        source, _, relative = str(op.data).partition("/")
        shutil.copyfile(sources.dirs[source] / relative, path)
    elif op.kind == "damage":
        target = Path(op.path)
        if target.name in DIR_TARGETS:
            _damage_dir(target, str(op.data))
        else:
            _damage_file(target, str(op.data))
    elif op.kind == "alter_part":
        _alter_part(path, str(op.data))
    elif op.kind == "fifo":
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
    elif op.kind == "chmod":
        os.chmod(path, int(str(op.data), 8))
    elif op.kind == "empty_table":
        table = pq.read_table(path)
        pq.write_table(table.slice(0, 0), path, compression="zstd")
    else:
        raise ValueError(f"unknown op {op.kind!r}")


# Observation ---------------------------------------------------------------------------------------------------

def snapshot(path: Path) -> dict[str, str] | None:
    """Every name under ``path`` with its kind and bytes (sha256); None when nothing is there."""
    if not os.path.lexists(path):
        return None
    if path.is_symlink():
        return {".": f"link:{os.readlink(path)}"}
    if path.is_file():
        return {".": hashlib.sha256(path.read_bytes()).hexdigest()}
    entries: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(path):
        base = Path(dirpath)
        entries[str(base.relative_to(path))] = "dir"
        for name in [*dirnames, *filenames]:
            full = base / name
            rel = str(full.relative_to(path))
            if full.is_symlink():
                entries[rel] = f"link:{os.readlink(full)}"
            elif full.is_file():
                entries[rel] = hashlib.sha256(full.read_bytes()).hexdigest()
    return entries


def describe_change(before: dict[str, str] | None, after: dict[str, str] | None) -> str:
    if before is None:
        return "created"
    if after is None:
        return "removed"
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    parts = [f"{label} {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}"
             for label, names in (("added", added), ("removed", removed), ("changed", changed)) if names]
    return "; ".join(parts)


def non_finite(run_dir: Path) -> list[str]:
    """What is not a finite number in a run directory's tables (sweep_value is NaN outside a sweep, a replay's
    recorded_input_tokens null where the trace records no usage)."""
    problems = []
    for name in TABLES:
        path = run_dir / name
        if not path.is_file():
            problems.append(f"no {name}")
            continue
        frame = pd.read_parquet(path)
        if frame.empty:
            problems.append(f"{name} has no rows")
        numbers = frame.select_dtypes("number").drop(columns=["sweep_value", "recorded_input_tokens"], errors="ignore")
        bad = [c for c in numbers.columns if not np.isfinite(numbers[c].to_numpy(dtype=float)).all()]
        if bad:
            problems.append(f"{name} columns {bad}")
    return problems


def where(error: BaseException) -> str:
    """The innermost frame of the project's own code (not the tests') that the error passed through."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f.filename.startswith(PROJECT) and "/.venv/" not in f.filename and "/tests/" not in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f" at {os.path.relpath(f.filename, PROJECT)}:{f.lineno}"


def invoke(argv: list[str]) -> tuple[int | None, str | None]:
    """(exit code, None), or (None, the tagged reason) when ``main`` did not return."""

    def on_alarm(signum: int, frame: types.FrameType | None) -> None:
        raise CaseTimeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT_S)
    try:
        code = main(argv)
        return (code if isinstance(code, int) else -1), None
    except SystemExit as e:
        return (0 if e.code is None else e.code if isinstance(e.code, int) else 1), None
    except ExperimentStarted:
        return None, "[validation ran] started running experiments instead of refusing first"
    except CaseTimeout:
        return None, f"[hang] still running after {CASE_TIMEOUT_S} s"
    except Exception as e:
        text = str(e).splitlines()[0][:200] if str(e) else ""
        return None, f"[traceback] {type(e).__name__}: {text}{where(e)}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# The cases ------------------------------------------------------------------------------------------------------

def _refuse_to_run(*args: Any, **kwargs: Any) -> Any:
    raise ExperimentStarted()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, sources: Sources, good_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    for op in case.setup:
        apply(op, sources)

    def fill(text: str) -> str:
        return text.replace("{good}", str(good_dir))

    argv = [fill(a) for a in case.argv]
    must_name = [fill(m) for m in case.must_name]
    good_before = snapshot(good_dir)
    damaged_before = snapshot(tmp_path / case.damaged) if case.damaged else None
    out_before = snapshot(tmp_path / case.out) if case.out else None
    if case.family == "validation":
        import harness.run.runner
        import harness.run.validation

        monkeypatch.setattr(harness.run.validation, "run", _refuse_to_run, raising=False)
        monkeypatch.setattr(harness.run.runner, "run", _refuse_to_run)
    capsys.readouterr()

    code, crash = invoke(argv)
    stdout, stderr = capsys.readouterr()

    problems: list[str] = []
    if crash is not None:
        problems.append(crash)
    elif "Traceback" in stdout or "Traceback" in stderr:
        problems.append("[traceback] printed on " + ("stderr" if "Traceback" in stderr else "stdout"))
    allowed = ALLOWED_EXITS[case.expect]
    last_line = (stderr.strip().splitlines() or [""])[-1][:300]
    if code is not None and code not in allowed and "internal error" in stderr:
        problems.append(f"[traceback] exit {code}, caught as an internal error: {last_line}")
    elif code is not None and code not in allowed:
        problems.append(f"[wrong exit] expected {' or '.join(map(str, sorted(allowed)))}, got {code}"
                        + (f": {last_line}" if last_line else ""))
    if code == 2:
        lines = stderr.splitlines()
        if len(lines) != 1 or not lines[0].startswith("ctxbench: error:") or not lines[0][16:].strip():
            problems.append(f"[not one line] {len(lines)} stderr lines: {stderr[:300]!r}")
        else:
            missing = [m for m in must_name if not any(alt in lines[0] for alt in m.split("|"))]
            if missing:
                problems.append(f"[not named] {missing} not in: {lines[0][:300]}")
    if code == 2 or crash is not None:
        if case.damaged and (after := snapshot(tmp_path / case.damaged)) != damaged_before:
            problems.append(f"[damaged dir changed] {case.damaged}: {describe_change(damaged_before, after)}")
        if case.out and (after := snapshot(tmp_path / case.out)) != out_before:
            problems.append(f"[results written] {case.out}: {describe_change(out_before, after)}")
    if code == 0:
        if case.identical:
            reference = sources.reference[case.reference]
            differ = [t for t in reference if not (tmp_path / case.identical / t).is_file()
                      or (tmp_path / case.identical / t).read_bytes() != reference[t]]
            if differ:
                problems.append(f"[silent wrong result] exit 0 but {case.identical}/{differ} differ from the "
                                f"undamaged {case.reference} run's")
        if case.finite:
            bad = non_finite(tmp_path / case.finite)
            if bad:
                problems.append(f"[non-finite] {'; '.join(bad)}")
        missing_outputs = [p for p in case.produces if not (tmp_path / p).is_file()]
        if missing_outputs:
            problems.append(f"[missing output] exit 0 without {missing_outputs}")
    good_after = snapshot(good_dir)
    if good_after != good_before:
        problems.append(f"[good dir changed] {describe_change(good_before, good_after)}")
        shutil.rmtree(good_dir, ignore_errors=True)
        if good_dir.exists() or good_dir.is_symlink():
            good_dir.unlink()
        shutil.copytree(sources.dirs["good"], good_dir, symlinks=True)
    if tally := os.environ.get(TALLY_ENV):
        # The counts a summary of the suite quotes (cases, clean refusals, tracebacks, ...) come from here.
        with open(tally, "a") as f:
            f.write(json.dumps({"id": case.id, "family": case.family, "expect": case.expect, "exit": code,
                                "problems": problems}) + "\n")
    if problems:
        pytest.fail(f"ctxbench {' '.join(argv)[:300]}\n" + "\n".join(problems), pytrace=False)


# The table itself ------------------------------------------------------------------------------------------------

def _numeric(annotation: Any) -> bool:
    """Whether a field's type admits an int or a float (bool excluded), through unions and Annotated."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _numeric(typing.get_args(annotation)[0])
    args = typing.get_args(annotation)
    if args and typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_numeric(a) for a in args)
    return annotation in (int, float)


def test_table_has_enough_cases_in_every_family() -> None:
    assert len(CASES) >= 300, len(CASES)
    ids = [c.id for c in CASES]
    assert len(set(ids)) == len(ids), sorted({i for i in ids if ids.count(i) > 1})
    assert {c.family for c in CASES} == set(FAMILIES)
    assert all(c.expect in EXPECTATIONS for c in CASES)
    assert all(c.id.startswith(c.family + "-") for c in CASES)
    damaged = {(c.family, c.setup[-1].path.split("/", 1)[1], c.setup[-1].data) for c in CASES
               if c.setup and c.setup[-1].kind == "damage"}
    for family, targets in (("report", TARGETS), ("resume", TARGETS), ("replay-resume", REPLAY_TARGETS)):
        for target in targets.values():
            for how in ("missing", "empty", "truncated", "garbage", "wrong_type", "dir_swap"):
                assert (family, target, how) in damaged, (family, target, how)


def test_table_covers_every_numeric_field() -> None:
    import scenarios
    import strategies
    from harness.sim.profiles import Profile

    profile_fields = {n for n, f in Profile.model_fields.items() if _numeric(f.annotation)}
    covered = {*MODEL_INT, *MODEL_BOUNDED, *MODEL_POSITIVE, *MODEL_NONNEGATIVE}
    assert profile_fields <= covered, sorted(profile_fields - covered)
    for name in strategies.names():
        fields = {n for n, f in strategies.get(name).Params.model_fields.items() if _numeric(f.annotation)}
        assert fields <= set(STRATEGY_PARAMS.get(name, {})), (name, sorted(fields - set(STRATEGY_PARAMS.get(name, {}))))
    for name in scenarios.names():
        fields = {n for n, f in scenarios.get(name).Params.model_fields.items() if _numeric(f.annotation)}
        assert fields <= set(SCENARIO_PARAMS), (name, sorted(fields - set(SCENARIO_PARAMS)))
