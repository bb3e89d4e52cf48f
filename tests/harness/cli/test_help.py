"""The command's help and its answers to typos (harness/cli/__init__.py and every subcommand's parser):
every subcommand has a description and every flag and positional a help text; no flag is abbreviated
(``--session`` is not taken for ``--sessions``); an unknown strategy, scenario, profile, metric, param
or flag gets "did you mean" next to the valid values; and ``sweep`` without a config sweeps exactly the
factors it is given."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

import strategies
from harness.cli import build_parser, main, sweep
from harness.sim.profiles import PROFILE_NAMES


def parsers(parser: argparse.ArgumentParser,
            words: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """``parser`` and every parser below it, each with the words that reach it (``("scenario", "show")``)."""
    yield words, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*words, name))


ALL_PARSERS = dict(parsers(build_parser()))
SUBCOMMANDS = [words for words in ALL_PARSERS if words]


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``ctxbench`` in-process: exit code (argparse's own errors exit), stdout and stderr."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line of a refused command line (exit 2, nothing on stdout, no traceback)."""
    code, out, err = run_main(argv, capsys)
    assert code == 2, err
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ctxbench: error: "), err
    return lines[0]


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "typo.toml"
    path.write_text(text)
    return str(path)


def test_the_walk_reaches_every_subcommand() -> None:
    assert {words[0] for words in SUBCOMMANDS} >= {"run", "sweep", "validate", "merge", "list", "report"}
    assert ("scenario", "show") in SUBCOMMANDS


@pytest.mark.parametrize("words", SUBCOMMANDS, ids=[" ".join(w) for w in SUBCOMMANDS])
def test_every_subcommand_has_a_description_and_a_summary(words: tuple[str, ...]) -> None:
    parser = ALL_PARSERS[words]
    assert (parser.description or "").strip(), f"ctxbench {' '.join(words)} has no description"
    above = ALL_PARSERS[words[:-1]]
    listed = {a.dest: a.help for action in above._actions if isinstance(action, argparse._SubParsersAction)
              for a in action._choices_actions}
    assert (listed.get(words[-1]) or "").strip(), f"ctxbench {' '.join(words)} has no help line in its parent's list"


@pytest.mark.parametrize("words", list(ALL_PARSERS), ids=[" ".join(("ctxbench", *w)) for w in ALL_PARSERS])
def test_every_flag_and_positional_has_help(words: tuple[str, ...]) -> None:
    missing = [a.option_strings[-1] if a.option_strings else a.metavar or a.dest
               for a in ALL_PARSERS[words]._actions
               if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()]
    assert missing == [], f"ctxbench {' '.join(words)}: no help for {', '.join(map(str, missing))}"


@pytest.mark.parametrize("words", list(ALL_PARSERS), ids=[" ".join(("ctxbench", *w)) for w in ALL_PARSERS])
def test_no_parser_takes_abbreviated_flags(words: tuple[str, ...]) -> None:
    assert ALL_PARSERS[words].allow_abbrev is False


def test_bench_help_promises_no_time_but_says_where_it_was_measured() -> None:
    description = ALL_PARSERS[("bench",)].description or ""
    assert "idle 2-core machine" in description and "see README, Speed" in description


def test_an_abbreviated_flag_is_refused_with_the_flag_it_resembles(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["run", "--session", "5"], capsys)
    assert line == "ctxbench: error: ctxbench run: unrecognized arguments: --session (did you mean '--sessions'?)"


def test_an_unknown_flag_without_a_close_one_names_it_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert refused(["scenario", "show", "mix", "--zzz"], capsys) == \
        "ctxbench: error: ctxbench scenario show: unrecognized arguments: --zzz"


def test_a_mistyped_strategy_gets_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(tmp_path, 'sessions = 2\n[[strategies]]\nname = "slidng_window"\n')
    line = refused(["validate", config], capsys)
    assert "strategies[0].name: unknown strategy 'slidng_window' (did you mean 'sliding_window'?)" in line
    assert ", ".join(strategies.names()) in line


def test_a_mistyped_scenario_gets_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["scenario", "show", "log_triag"], capsys)
    assert "unknown scenario 'log_triag' (did you mean 'log_triage'?)" in line
    assert "alert_chain" in line


def test_a_mistyped_scenario_flag_gets_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["run", "--scenarios", "log_triag", "--out", str(tmp_path / "out")], capsys)
    assert line.startswith("ctxbench: error: --scenarios: unknown 'log_triag' (did you mean 'log_triage'?) (known: ")
    assert not (tmp_path / "out").exists()


def test_a_mistyped_profile_gets_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["validate", write(tmp_path, 'sessions = 2\nmodel = "fronteir"\n')], capsys)
    assert "model: unknown profile 'fronteir' (did you mean 'frontier'?)" in line
    assert ", ".join(PROFILE_NAMES) in line


def test_a_mistyped_metric_gets_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--metric", "loop_rte"], capsys)
    assert "unknown metric 'loop_rte' (did you mean 'loop_rate'?) (known: " in line
    assert "success_rate" in line


def test_a_mistyped_param_lists_the_valid_params_with_did_you_mean(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = write(tmp_path, 'sessions = 2\n[[strategies]]\nname = "sliding_window"\nwindow = 10\n')
    line = refused(["validate", config], capsys)
    known = ", ".join(strategies.get("sliding_window").Params.model_fields)
    assert line == (f"ctxbench: error: {config}: strategies[0].window: strategy sliding_window has no param 'window' "
                    f"(did you mean 'window_size'?) (known: {known})")


def test_a_param_typo_reads_the_same_in_a_config_and_in_a_sweep(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = write(tmp_path, 'sessions = 2\n[[strategies]]\nname = "sliding_window"\nwindow = 10\n')
    in_config = refused(["validate", config], capsys)
    in_sweep = refused(["sweep", "--param", "sliding_window.window=10,20", "--out", str(tmp_path / "out")], capsys)
    problem = "strategy sliding_window has no param 'window' (did you mean 'window_size'?) (known: "
    assert in_config.partition(problem)[1:] == in_sweep.partition(problem)[1:]
    assert in_sweep.startswith("ctxbench: error: the default config with --param: "
                               "sweep.params.sliding_window.window: ")
    assert not (tmp_path / "out").exists()


def test_a_mistyped_scenario_param_lists_the_valid_params(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["scenario", "show", "log_triage", "--param", "turn=30"], capsys)
    assert line.startswith("ctxbench: error: --param: scenario log_triage has no param 'turn' "
                           "(did you mean 'turns'?) (known: turns, ")


def test_a_mistyped_config_key_gets_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(["validate", write(tmp_path, "sesions = 2\n")], capsys)
    assert "sesions: not a config key (did you mean 'sessions'?) (known: sessions, seed, " in line


def sweep_variants(*flags: str) -> list[tuple[str, str]]:
    """The (label, model) of every variant ``ctxbench sweep FLAGS`` would run, without running it."""
    args = build_parser().parse_args(["sweep", *flags])
    return [(v.label, v.model) for v in sweep.sweep_config(args).variants()]


def test_sweep_with_param_and_no_config_sweeps_only_that_param_on_the_default_config() -> None:
    defaults = strategies.default_names()
    expected = [(n, "frontier") for n in defaults if n != "sliding_window"]
    expected += [("sliding_window[window_size=10]", "frontier"), ("sliding_window[window_size=20]", "frontier")]
    assert sorted(sweep_variants("--param", "sliding_window.window_size=10,20")) == sorted(expected)


def test_sweep_with_models_and_no_config_crosses_the_default_config_with_them() -> None:
    variants = sweep_variants("--models", "mid,small")
    assert sorted(variants) == sorted((f"{n}@{m}", m) for m in ("mid", "small") for n in strategies.default_names())


def test_sweep_without_config_or_grid_flags_runs_the_embedded_example_grid() -> None:
    from harness.run.config import DEFAULT_SWEEP, load_config

    assert sweep_variants() == [(v.label, v.model) for v in load_config(DEFAULT_SWEEP).variants()]
    assert {model for _, model in sweep_variants()} == {"frontier", "mid", "small", "stress-2023"}
