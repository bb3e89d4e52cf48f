"""``ctxbench validate`` (harness/cli/validate.py) run as a real process: the examples load, nothing is
written, and a bad config is one error line with exit 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness.cli.invoke import BAD_FILES, ROOT, TINY, assert_usage_error, ctxbench, write_config


def test_validate_default_example_exits_0(tmp_path: Path) -> None:
    result = ctxbench("validate", ROOT / "examples" / "default.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ok (1000 sessions, 10 strategies" in result.stdout
    assert result.stderr == ""


def test_validate_seed_article_example_exits_0(tmp_path: Path) -> None:
    result = ctxbench("validate", ROOT / "examples" / "seed-article.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ok (5000 sessions, 2 strategies" in result.stdout


def test_validate_complexity_trap_example_exits_0(tmp_path: Path) -> None:
    result = ctxbench("validate", ROOT / "examples" / "complexity-trap.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ok (1000 sessions, 4 strategies" in result.stdout


def test_validate_creates_no_run_directory(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    result = ctxbench("validate", "tiny.toml", cwd=tmp_path)
    assert result.returncode == 0
    assert "ok (4 sessions, 2 strategies" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.toml"]


@pytest.mark.parametrize(("text", "expected"), [BAD_FILES["unknown-strategy"], BAD_FILES["bad-toml"],
                                                 BAD_FILES["strategy-param-out-of-range"]],
                         ids=["unknown-strategy", "bad-toml", "param-out-of-range"])
def test_validate_with_bad_config_exits_2_with_one_line(tmp_path: Path, text: str, expected: list[str]) -> None:
    (tmp_path / "bad.toml").write_text(text)
    assert_usage_error(ctxbench("validate", "bad.toml", cwd=tmp_path), *expected)


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.toml")), ids=lambda p: p.stem)
def test_every_example_config_validates(tmp_path: Path, example: Path) -> None:
    result = ctxbench("validate", example, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{example}: ok (") and result.stderr == ""


def _written(name: str, data: bytes) -> Callable[[Path], str]:
    def make(d: Path) -> str:
        (d / name).write_bytes(data)
        return name
    return make


def _directory(d: Path) -> str:
    (d / "dir.toml").mkdir()
    return "dir.toml"


def _symlink_loop(d: Path) -> str:
    (d / "a.toml").symlink_to("b.toml")
    (d / "b.toml").symlink_to("a.toml")
    return "a.toml"


def _through_a_file(d: Path) -> str:
    (d / "a.toml").write_text("")
    return "a.toml/x.toml"


#: A config path that is no readable UTF-8 text file: how to make it, and what the one line must say.
UNREADABLE: dict[str, tuple[Callable[[Path], str], str]] = {
    "directory": (_directory, "ctxbench: error: dir.toml: is a directory"),
    "binary": (_written("x.toml", b"\x7fELF\x02\x01\x00"),
               "ctxbench: error: x.toml: a binary file, not TOML text (NUL byte at offset 6)"),
    "utf-16": (_written("x.toml", "seed = 1\n".encode("utf-16")),
               "ctxbench: error: x.toml: not UTF-8 text (a UTF-16 byte-order mark; save it as UTF-8)"),
    "latin-1": (_written("x.toml", b"sessions = 2\n# \xe9\n"),
                "ctxbench: error: x.toml: not UTF-8 text (byte 0xe9 at offset 15)"),
    "symlink-loop": (_symlink_loop, "ctxbench: error: a.toml: cannot be read (Too many levels of symbolic links)"),
    "path-through-a-file": (_through_a_file, "ctxbench: error: a.toml/x.toml: cannot be read (Not a directory)"),
    "name-too-long": (lambda d: "n" * 300 + ".toml", ".toml: cannot be read (File name too long)"),
}


@pytest.mark.parametrize(("make", "expected"), list(UNREADABLE.values()), ids=list(UNREADABLE))
def test_validate_of_an_unreadable_config_exits_2_with_one_line_naming_it(tmp_path: Path, make: Callable[[Path], str],
                                                                          expected: str) -> None:
    line = assert_usage_error(ctxbench("validate", make(tmp_path), cwd=tmp_path))
    assert line.startswith(expected) or line.endswith(expected), line


def test_validate_of_an_empty_config_runs_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "empty.toml").write_bytes(b"")
    result = ctxbench("validate", "empty.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "ok (1000 sessions, 10 strategies" in result.stdout


#: Values a config may hold that no one means: each refused by `validate` in one line naming the field.
HOSTILE_VALUES: dict[str, tuple[str, list[str]]] = {
    "sessions-string": ('sessions = "2"\n', ["bad.toml: sessions: Input should be a valid integer (got \"2\")"]),
    "jobs-boolean": ("jobs = true\n", ["bad.toml: jobs: Input should be a valid integer (got true)"]),
    "contracts-string": ('[[strategies]]\nname = "unbounded"\ncontracts = "yes"\n',
                         ["bad.toml: strategies[0].contracts: Input should be a valid boolean"]),
    "weight-string": ('[[scenarios]]\nname = "mix"\nweight = "1"\n', ["bad.toml: scenarios[0].weight"]),
    "weight-inf": ('[[scenarios]]\nname = "mix"\nweight = inf\n', ["scenarios[0].weight", "finite number (got inf)"]),
    "weights-overflowing": ('[[scenarios]]\nname = "mix"\nweight = 1e308\n[[scenarios]]\nname = "log_triage"\n'
                            "weight = 1e308\n", ["scenarios[0].weight", "le 1000000"]),
    "model-k-overflowing": ('model = {base = "mid", k = 1e308}\n', ["bad.toml: model.k", "le 20"]),
    "model-sigma-nan": ('model = {base = "mid", sigma = nan}\n', ["bad.toml: model.sigma", "finite number"]),
    "sweep-value-inf": ('[[strategies]]\nname = "sliding_window"\n[sweep]\n'
                        'params = {"sliding_window.window_size" = [inf]}\n',
                        ["bad.toml: sweep.params.sliding_window.window_size[0]: inf is not a finite number"]),
}


@pytest.mark.parametrize(("text", "expected"), list(HOSTILE_VALUES.values()), ids=list(HOSTILE_VALUES))
def test_validate_of_a_hostile_value_exits_2_with_one_line_naming_the_field(tmp_path: Path, text: str,
                                                                            expected: list[str]) -> None:
    (tmp_path / "bad.toml").write_text(text)
    assert_usage_error(ctxbench("validate", "bad.toml", cwd=tmp_path), *expected)
