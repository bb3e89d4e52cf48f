"""The two builds of the replay's hot path (setup.py, harness/build.py): the compiled modules and their Python
sources write byte-identical tables; an install without a C compiler is pure Python and runs; the choice of
build at import follows the environment and the sources."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from harness import build

REPO = Path(__file__).resolve().parents[2]
TABLES = ("sessions", "calls", "events")
#: What a C compiler's executable may be called on PATH (hidden to simulate a machine without one).
COMPILER_NAMES = ("cc", "gcc", "c++", "g++", "clang", "clang++", "x86_64-linux-gnu-gcc")


def _table_hashes(run_dir: Path) -> dict[str, str]:
    return {t: hashlib.sha256((run_dir / f"{t}.parquet").read_bytes()).hexdigest() for t in TABLES}


def _run(args: list[str], *, env: dict[str, str] | None = None, cwd: Path = REPO) -> None:
    done = subprocess.run([sys.executable, "-m", "harness.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != build.PURE_PYTHON_VARIABLE}
    env.update(extra)
    return env


def test_ci_runs_the_compiled_build_where_it_can() -> None:
    """In CI with a C compiler on PATH the tests run against the compiled modules: a build that silently fell
    back to the sources would leave the compiled tables untested."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if not os.environ.get("CI") or shutil.which(compiler) is None:
        pytest.skip("CI with a C compiler only: elsewhere the pure-Python install is a valid one")
    assert build.current().compiled, build.current().describe()


def test_the_pure_python_variable_runs_the_sources() -> None:
    probe = ("import harness.sim.kernel as k, harness.build as b; "
             "print(k.__file__.endswith('.py'), b.current().compiled, b.current().describe())")
    done = subprocess.run([sys.executable, "-c", probe], env=_env(**{build.PURE_PYTHON_VARIABLE: "1"}),
                          capture_output=True, text=True, check=True)
    assert done.stdout.split(maxsplit=2) == ["True", "False", f"pure Python ({build.PURE_PYTHON_VARIABLE} is set)\n"]


def test_an_edited_source_is_never_shadowed_by_an_older_compiled_module() -> None:
    source = REPO / "harness" / "sim" / "clock.py"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    assert build._changed({"harness.sim.clock": digest}) is None
    assert build._changed({"harness.sim.clock": "0" * 64}) == str(Path("harness", "sim", "clock.py"))
    # A compiled library installed without its source (a wheel may hold only the library) is not a change.
    assert build._changed({"harness.sim.no_such_module": "0" * 64}) is None


def test_the_sources_first_finder_finds_the_projects_modules_as_their_sources() -> None:
    finder = build._SourcesFirst()
    folder = str(REPO / "harness" / "sim")
    spec = finder.find_spec("harness.sim.clock", [folder])
    assert spec is not None and spec.origin == str(Path(folder) / "clock.py")
    assert finder.find_spec("harness.sim", [str(REPO / "harness")]) is None  # a package: the usual finders
    assert finder.find_spec("numpy.linalg", [folder]) is None  # not the project's
    assert finder.find_spec("harness.sim.clock", None) is None


@pytest.mark.parametrize(("text", "problem"), [("{not json", "build_record.json is damaged"),
                                               ('{"modules": 3}', "build_record.json is damaged"),
                                               ("\udcff", "build_record.json cannot be read (UnicodeDecodeError)")])
def test_a_damaged_build_record_runs_the_sources_and_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              text: str, problem: str) -> None:
    record = tmp_path / "build_record.json"
    record.write_bytes(text.encode("utf-8", "surrogateescape"))
    monkeypatch.setattr(build, "RECORD", record)
    assert build._record() == (None, problem)
    monkeypatch.setattr(build, "RECORD", tmp_path / "none.json")
    assert build._record() == (None, "")


def test_a_build_describes_itself() -> None:
    assert build.Build(True, "mypyc 2.4.1", ("a", "b"), "").describe() == "compiled (mypyc 2.4.1, 2 modules)"
    assert build.Build(False, None, (), "nothing compiled").describe() == "pure Python (nothing compiled)"


@pytest.mark.slow
# 60 sessions: every strategy of both examples over every scenario family of their mix, in under a third of the
# time of 200 (the suite's time on 2 cores).
@pytest.mark.parametrize(("config", "sessions"), [("default.toml", 60), ("complexity-trap.toml", 60)])
def test_the_compiled_and_the_python_modules_write_the_same_tables(tmp_path: Path, config: str,
                                                                   sessions: int) -> None:
    if not build.current().compiled:
        pytest.skip(f"nothing to compare: {build.current().describe()}")
    common = ["run", str(REPO / "examples" / config), "--sessions", str(sessions), "--quiet", "--no-report"]
    _run([*common, "--out", str(tmp_path / "compiled")], env=_env())
    _run([*common, "--out", str(tmp_path / "python")], env=_env(**{build.PURE_PYTHON_VARIABLE: "1"}))
    assert _table_hashes(tmp_path / "compiled") == _table_hashes(tmp_path / "python")


def _path_without_compilers(folder: Path) -> str:
    """A PATH of one folder linking every executable of this PATH but the C compilers."""
    folder.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not Path(directory).is_dir():
            continue
        for entry in Path(directory).iterdir():
            hidden = entry.name in COMPILER_NAMES or entry.name.startswith(("gcc-", "x86_64-linux-gnu-gcc"))
            if not hidden and not (folder / entry.name).exists() and os.access(entry, os.X_OK):
                (folder / entry.name).symlink_to(entry)
    return str(folder)


def _source_copy(target: Path) -> Path:
    """The project's files as a clean clone has them (no compiled libraries, no build folder)."""
    ignore = shutil.ignore_patterns(".git", ".venv", "runs", "build", "*.so", "*.egg-info", "__pycache__",
                                    "build_record.json", ".*_cache", ".hypothesis")
    shutil.copytree(REPO, target, ignore=ignore)
    return target


@pytest.mark.slow
def test_without_a_c_compiler_the_install_is_pure_python_and_runs(tmp_path: Path) -> None:
    source = _source_copy(tmp_path / "source")
    env = _env(PATH=_path_without_compilers(tmp_path / "bin"))
    env.pop("CC", None)
    wheels = tmp_path / "wheels"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(wheels), str(source)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    [wheel] = wheels.glob("ctxbench-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert wheel.name.endswith("-py3-none-any.whl") and not [n for n in names if n.endswith(".so")]
    assert "harness/build_record.json" not in names
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   env=env, check=True, capture_output=True, timeout=600)
    installed = _env(PATH=env["PATH"], PYTHONPATH=str(site))
    probe = "import harness, harness.build as b; print(harness.__file__); print(b.current().describe())"
    shown = subprocess.run([sys.executable, "-c", probe], env=installed, cwd=tmp_path, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert Path(shown[0]).is_relative_to(site)
    assert shown[1].startswith("pure Python (nothing compiled")
    common = ["run", str(REPO / "examples" / "default.toml"), "--sessions", "20", "--quiet", "--no-report"]
    _run([*common, "--out", str(tmp_path / "installed")], env=installed, cwd=tmp_path)
    _run([*common, "--out", str(tmp_path / "here")], env=_env())
    assert _table_hashes(tmp_path / "installed") == _table_hashes(tmp_path / "here")
