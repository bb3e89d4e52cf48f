"""``ctxbench scenario show`` (harness/cli/scenario.py): the generated script as JSON or a summary, and
a bad name or generator parameter as one error line with exit 2."""

from __future__ import annotations

import json

import pytest

from harness.cli import main


def test_show_prints_the_script_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "show", "mix", "--seed", "3"]) == 0
    assert isinstance(json.loads(capsys.readouterr().out), dict)


def test_show_summary_prints_one_aligned_line_per_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "show", "mix", "--param", "turns=30", "--summary"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(len(line.split(maxsplit=1)) == 2 for line in lines)
    width = max(len(line.split()[0]) for line in lines)
    assert all(line[width:width + 2] == "  " and line[width + 2] != " " for line in lines)


@pytest.mark.parametrize(("args", "line"), [
    (["nope"], "ctxbench: error: unknown scenario 'nope'"),
    (["mix", "--param", "turns=5"],
     "ctxbench: error: scenario mix: turns: Input should be greater than or equal to 20"),
    (["mix", "--param", "turns"], "ctxbench: error: --param: expected KEY=VALUE, got 'turns'"),
], ids=["unknown-scenario", "param-out-of-range", "param-without-value"])
def test_show_with_bad_input_exits_2_with_one_line(args: list[str], line: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "show", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith(line)
