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


BAD_SHOW_ARGS: dict[str, tuple[list[str], str]] = {
    "unknown-scenario": (["nope"], "ctxbench: error: unknown scenario 'nope'"),
    "param-out-of-range": (["mix", "--param", "turns=5"],
                           "ctxbench: error: scenario mix: turns: Input should be greater than or equal to 20"),
    "param-without-value": (["mix", "--param", "turns"], "ctxbench: error: --param: expected KEY=VALUE, got 'turns'"),
    "param-without-key": (["mix", "--param", "=20"], "ctxbench: error: --param: expected KEY=VALUE, got '=20'"),
    "param-unknown": (["log_triage", "--param", "nosuch=1"],
                      "ctxbench: error: --param: scenario log_triage has no param 'nosuch' (known: turns, "),
    "param-inf": (["log_triage", "--param", "turns=inf"],
                  'ctxbench: error: scenario log_triage: turns: Input should be a valid integer (got "inf")'),
    "param-json-infinity": (["log_triage", "--param", "payload_sigma=Infinity"],
                            "ctxbench: error: scenario log_triage: payload_sigma: Input should be a finite number"),
    "param-1e308": (["log_triage", "--param", "turns=1e308"],
                    "ctxbench: error: scenario log_triage: turns: Input should be a valid integer (got 1e+308)"),
    "param-whole-float": (["log_triage", "--param", "turns=20.0"],
                          "ctxbench: error: scenario log_triage: turns: Input should be a valid integer (got 20.0)"),
    "param-quoted-number": (["log_triage", "--param", 'turns="20"'],
                            'ctxbench: error: scenario log_triage: turns: Input should be a valid integer (got "20")'),
    "param-given-twice": (["log_triage", "--param", "turns=20", "--param", "turns=30"],
                          "ctxbench: error: --param: turns is given twice"),
    "seed-negative": (["log_triage", "--seed", "-1"],
                      "ctxbench: error: --seed: expected 0 to 2**64-1 (a session seed), got -1"),
    "seed-past-64-bits": (["log_triage", "--seed", str(2**70)],
                          f"ctxbench: error: --seed: expected 0 to 2**64-1 (a session seed), got {2**70}"),
    "seed-not-an-integer": (["log_triage", "--seed", "1e3"],
                            "ctxbench: error: ctxbench scenario show: argument --seed: invalid int value: '1e3'"),
}


@pytest.mark.parametrize(("args", "line"), list(BAD_SHOW_ARGS.values()), ids=list(BAD_SHOW_ARGS))
def test_show_with_bad_input_exits_2_with_one_line(args: list[str], line: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code = main(["scenario", "show", *args])
    except SystemExit as e:  # argparse's own errors exit through CommandParser.error
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(line), err


def test_show_takes_any_64_bit_session_seed(capsys: pytest.CaptureFixture[str]) -> None:
    """A session's seed in the sessions table is an unsigned 64-bit number: the largest one works."""
    assert main(["scenario", "show", "log_triage", "--seed", str(2**64 - 1), "--param", "turns=20", "--summary"]) == 0
    assert str(2**64 - 1) in capsys.readouterr().out
