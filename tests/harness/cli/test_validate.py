"""``ctxbench validate`` (harness/cli/validate.py) run as a real process: the examples load, nothing is
written, and a bad config is one error line with exit 2."""

from __future__ import annotations

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
