"""``ctxbench merge`` (harness/cli/merge.py) run as a real process: shards of different configs, or a
missing directory, are one error line with exit 2 and create nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness.cli.invoke import TINY, assert_usage_error, ctxbench, write_config


def test_merge_of_different_configs_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    for k, seed in ((1, "1"), (2, "2")):
        done = ctxbench("run", "tiny.toml", "--seed", seed, "--shard", f"{k}/2", "--out", f"s{k}", "--quiet",
                        cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    result = ctxbench("merge", "merged", "s1", "s2", cwd=tmp_path)
    assert_usage_error(result, "different configs")
    assert not (tmp_path / "merged").exists()


def test_merge_of_a_missing_directory_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    result = ctxbench("merge", "merged", "nowhere", cwd=tmp_path)
    assert_usage_error(result, "nowhere")
    assert not (tmp_path / "merged").exists()


def test_merge_writes_the_report_and_json_names_the_shards(tmp_path: Path) -> None:
    write_config(tmp_path, TINY)
    for k in (1, 2):
        result = ctxbench("run", "tiny.toml", "--out", f"s{k}", "--shard", f"{k}/2", "--quiet", "--no-report",
                          cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    result = ctxbench("merge", "merged", "s1", "s2", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed["run"]["merged_from"] == ["s1", "s2"] and len(printed["strategies"]) == 2
    assert (tmp_path / "merged" / "report.html").is_file() and (tmp_path / "merged" / "report.md").is_file()
