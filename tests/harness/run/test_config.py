"""Run configuration (docs/design.md, "Data flow of one run" and "CLI"): loading TOML and the embedded
default, flag overrides, strategy and scenario entries, the [model] table, the config hash, and
the one-line ConfigError for every user mistake."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import tomli_w

import scenarios
import strategies
from harness.run.config import DEFAULT_PIPELINE, ConfigError, RunConfig, StrategyEntry, load_config
from harness.sim.profiles import PROFILE_NAMES, Profile, profile

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def write(tmp_path: Path, text: str, name: str = "run.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def base_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "sessions": 10,
        "seed": 7,
        "batch_size": 3,
        "executor": "serial",
        "scenarios": [{"name": "mix", "turns": 20}],
        "strategies": [{"name": "sliding_window", "window_size": 20}, {"name": "unbounded"}],
    }
    return data | changes


# The embedded default ---------------------------------------------------------------------------------


def test_default_config_is_the_mix_with_1000_sessions_every_strategy_on_frontier() -> None:
    config = load_config()
    assert config.sessions == 1000
    assert [s.name for s in config.scenarios] == ["mix"]
    assert config.model == "frontier"
    assert config.profile() == profile("frontier")
    assert [e.name for e in config.strategy_entries()] == strategies.default_names()
    assert len(config.strategy_entries()) == 10  # the research set: the SDK managers are named, never implied


def test_default_config_runs_pipeline_with_the_recommended_stages() -> None:
    entries = {e.name: e for e in load_config().strategy_entries()}
    assert entries["pipeline"].params == DEFAULT_PIPELINE
    assert all(entries[n].params == {} for n in entries if n != "pipeline")


def test_default_config_resolved_lists_every_strategy_with_a_distinct_label() -> None:
    resolved = load_config().resolved()
    labels = [s["label"] for s in resolved["strategies"]]
    assert labels == strategies.default_names()
    assert resolved["scenarios"][0]["name"] == "mix"
    assert resolved["scenarios"][0]["weight"] == 1.0


# Strategy entries ---------------------------------------------------------------------------------------


def test_same_strategy_twice_with_different_labels_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [[strategies]]
        name = "sliding_window"
        label = "sw20"
        window_size = 20

        [[strategies]]
        name = "sliding_window"
        label = "sw40"
        window_size = 40
    """)
    config = load_config(path)
    entries = config.strategy_entries()
    assert [e.key for e in entries] == ["sw20", "sw40"]
    assert [e.params for e in entries] == [{"window_size": 20}, {"window_size": 40}]
    resolved = config.resolved()["strategies"]
    assert [(s["label"], s["window_size"]) for s in resolved] == [("sw20", 20), ("sw40", 40)]


def test_duplicate_label_is_refused_naming_the_label(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [[strategies]]
        name = "sliding_window"
        label = "same"
        window_size = 20

        [[strategies]]
        name = "summarize"
        label = "same"
    """)
    with pytest.raises(ConfigError, match=r"strategies\[1\]\.label: 'same' is used twice"):
        load_config(path)


def test_same_strategy_twice_without_labels_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [[strategies]]
        name = "sliding_window"
        window_size = 20

        [[strategies]]
        name = "sliding_window"
        window_size = 40
    """)
    with pytest.raises(ConfigError, match=r"strategies\[1\]\.label: 'sliding_window' is used twice"):
        load_config(path)


def test_strategy_params_and_switch_overrides_are_carried(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [[strategies]]
        name = "sliding_window"
        label = "guarded"
        window_size = 24
        pin_first = 1
        contracts = true
        errors = "three_class"
        breaker = true
        token_budget = 50000
    """)
    entry = load_config(path).strategy_entries()[0]
    assert entry.params == {"window_size": 24, "pin_first": 1}
    # The entry's own switches, and the plain runtime's for the ones it leaves out.
    assert entry.switch_overrides() == {"contracts": True, "errors": "three_class", "breaker": True,
                                        "token_budget": 50000, "output_cap_chars": 30000,
                                        "normalize_tool_names": False}
    resolved = load_config(path).resolved()["strategies"][0]
    assert resolved["window_size"] == 24
    assert resolved["pin_first"] == 1
    assert (resolved["contracts"], resolved["errors"], resolved["breaker"], resolved["token_budget"]) == (
        True, "three_class", True, 50000)


def test_every_strategy_runs_under_the_same_plain_runtime_unless_an_entry_overrides_a_switch(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [[strategies]]
        name = "offload_contracts"

        [[strategies]]
        name = "offload_contracts"
        label = "offload_guarded"
        contracts = true
        errors = "three_class"
        breaker = true
        token_budget = 2000000

        [[strategies]]
        name = "sliding_window"
    """)
    by_label = {s["label"]: s for s in load_config(path).resolved()["strategies"]}
    plain = ("default", False, "plain", False, 0)
    switches = ("runtime", "contracts", "errors", "breaker", "token_budget")
    # A strategy declares nothing about the runtime: offloading runs as plainly as a sliding window.
    assert tuple(by_label["offload_contracts"][k] for k in switches) == plain
    assert tuple(by_label["sliding_window"][k] for k in switches) == plain
    assert tuple(by_label["offload_guarded"][k] for k in switches) == ("default", True, "three_class", True, 2000000)


def test_runtimes_are_crossed_with_every_entry_that_names_none(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [[runtimes]]
        name = "plain"

        [[runtimes]]
        name = "guarded"
        contracts = true
        errors = "three_class"
        breaker = true
        token_budget = 1000

        [[strategies]]
        name = "unbounded"

        [[strategies]]
        name = "sliding_window"
        errors = "plain"

        [[strategies]]
        name = "condense"
        runtime = "guarded"
    """)
    config = load_config(path)
    rows = {s["label"]: s for s in config.resolved()["strategies"]}
    assert list(rows) == ["unbounded+plain", "sliding_window+plain", "unbounded+guarded", "sliding_window+guarded",
                          "condense"]
    assert (rows["unbounded+guarded"]["contracts"], rows["unbounded+guarded"]["token_budget"]) == (True, 1000)
    assert rows["unbounded+plain"]["contracts"] is False
    # The entry's own switch wins over its runtime's.
    assert rows["sliding_window+guarded"]["errors"] == "plain"
    assert (rows["condense"]["runtime"], rows["condense"]["breaker"]) == ("guarded", True)
    # --strategies names configured entries; each still runs under every runtime.
    assert [v.label for v in config.select(["unbounded"]).variants()] == ["unbounded+plain", "unbounded+guarded"]


def test_a_runs_config_toml_loads_back_to_the_same_hash(tmp_path: Path) -> None:
    for example in ("seed-article.toml", "runtimes.toml", "default.toml"):
        config = load_config(EXAMPLES / example)
        resolved = config.resolved()
        again = RunConfig(**resolved)
        assert again.config_hash() == config.config_hash(), example


def test_any_registered_strategy_can_be_named_on_any_config() -> None:
    config = load_config(None).select(["clear_tool_uses", "condense"])
    assert [v.label for v in config.variants()] == ["condense", "clear_tool_uses"]
    resolved = config.resolved()["strategies"]
    assert resolved[1]["name"] == "clear_tool_uses"
    assert resolved[1]["keep"] == strategies.create("clear_tool_uses").params.model_dump()["keep"]
    with pytest.raises(ConfigError, match=r"unknown 'condnse' \(did you mean 'condense'\?\)"):
        load_config(None).select(["condnse"])


@pytest.mark.parametrize(("text", "expected"), [
    ('[[runtimes]]\nname = "a"\n[[runtimes]]\nname = "a"\n', "runtimes[1].name: 'a' appears twice"),
    ('[[runtimes]]\nname = "a+b"\n', "runtimes[0].name"),
    ('[[runtimes]]\nname = "a"\ncontracs = true\n', "runtimes[0].contracs"),
    ('[[runtimes]]\nname = "a"\n[[strategies]]\nname = "unbounded"\nruntime = "b"\n',
     "strategies[0].runtime: no runtime 'b'"),
    ('[[runtimes]]\nname = "a"\ntoken_budget = -5\n', "runtimes[0].token_budget"),
])
def test_a_bad_runtime_is_one_line_naming_the_field(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text, "bad.toml"))
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_strategy_entry_key_is_the_label_or_the_name() -> None:
    assert StrategyEntry(name="unbounded").key == "unbounded"
    assert StrategyEntry(name="unbounded", label="raw").key == "raw"


# Scenario entries ----------------------------------------------------------------------------------------


def test_scenario_weights_and_params_are_carried_and_defaults_resolved(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [[scenarios]]
        name = "k8s_crashloop"
        weight = 2.5
        turns = 30

        [[scenarios]]
        name = "log_triage"
        dump_scale = 10.0
    """)
    config = load_config(path)
    assert [(s.name, s.weight, s.params) for s in config.scenarios] == [
        ("k8s_crashloop", 2.5, {"turns": 30}), ("log_triage", 1.0, {"dump_scale": 10.0})]
    resolved = config.resolved()["scenarios"]
    defaults = scenarios.get("log_triage").Params().model_dump(mode="json")
    assert resolved[0]["turns"] == 30
    assert resolved[1] == {"name": "log_triage", "weight": 1.0, **(defaults | {"dump_scale": 10.0})}


def test_default_scenarios_are_the_mix_when_the_file_names_none(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "sessions = 3\n"))
    assert [s.name for s in config.scenarios] == ["mix"]


# Flag overrides -------------------------------------------------------------------------------------------


def test_flag_overrides_win_over_file_values(tmp_path: Path) -> None:
    path = write(tmp_path, """
        sessions = 50
        seed = 1
        model = "small"
        executor = "process"
        jobs = 4
        scheduler = "tcp://example:8786"
    """)
    config = load_config(path, sessions=7, seed=11, model="mid", jobs=2, executor="serial")
    assert (config.sessions, config.seed, config.model, config.jobs, config.executor) == (7, 11, "mid", 2, "serial")
    assert config.profile().name == "mid"


def test_none_overrides_keep_file_values(tmp_path: Path) -> None:
    path = write(tmp_path, 'sessions = 50\nseed = 1\nscheduler = "tcp://example:8786"\n')
    config = load_config(path, sessions=None, seed=None, model=None, jobs=None, executor=None, scheduler=None)
    assert (config.sessions, config.seed, config.scheduler) == (50, 1, "tcp://example:8786")


def test_flag_override_on_the_embedded_default() -> None:
    config = load_config(None, sessions=12)
    assert config.sessions == 12
    assert len(config.strategy_entries()) == len(strategies.default_names())


# The [model] table -----------------------------------------------------------------------------------


def test_model_table_with_base_and_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, """
        [model]
        base = "frontier"
        window_tokens = 64000
        p_throttle = 0.05
    """)
    prof = load_config(path).profile()
    assert prof == profile("frontier", window_tokens=64000, p_throttle=0.05)
    assert prof.window_tokens == 64000
    assert prof.price_in == profile("frontier").price_in


def test_model_table_with_a_full_inline_profile(tmp_path: Path) -> None:
    fields = {k: v for k, v in profile("mid").model_dump(mode="json").items() if v is not None}
    fields |= {"name": "custom", "window_tokens": 50_000}
    path = tmp_path / "inline.toml"
    path.write_text(tomli_w.dumps({"sessions": 5, "model": fields}))
    prof = load_config(path).profile()
    assert prof == Profile(**fields)
    assert (prof.name, prof.window_tokens) == ("custom", 50_000)


def test_model_table_resolves_to_the_full_profile_in_the_resolved_config(tmp_path: Path) -> None:
    path = write(tmp_path, '[model]\nbase = "small"\nmax_turns = 60\n')
    resolved = load_config(path).resolved()
    assert resolved["model"] == profile("small", max_turns=60).model_dump(mode="json")


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_every_builtin_profile_name_is_accepted(name: str) -> None:
    assert RunConfig(model=name).profile().name == name


# The config hash ------------------------------------------------------------------------------------


def test_config_hash_is_stable_for_equal_configs(tmp_path: Path) -> None:
    path = tmp_path / "same.toml"
    path.write_text(tomli_w.dumps(base_data()))
    from_file = load_config(path)
    from_data = RunConfig(**base_data())
    assert from_file.config_hash() == from_data.config_hash() == RunConfig(**base_data()).config_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", from_data.config_hash())


def test_config_hash_is_the_same_when_defaults_are_spelled_out() -> None:
    implicit = RunConfig(**base_data(strategies=[{"name": "unbounded"}, {"name": "sliding_window"}]))
    explicit = RunConfig(**base_data(strategies=[
        {"name": "unbounded", "label": "unbounded"},
        {"name": "sliding_window", "window_size": 40, "contracts": False, "errors": "plain"},
    ]))
    assert implicit.config_hash() == explicit.config_hash()


def test_config_hash_of_every_strategy_equals_listing_them_with_defaults() -> None:
    listed = [{"name": n, **(DEFAULT_PIPELINE if n == "pipeline" else {})} for n in strategies.default_names()]
    every = RunConfig(**base_data(strategies=[]))
    assert every.config_hash() == RunConfig(**base_data(strategies=listed)).config_hash()


@pytest.mark.parametrize("changes", [
    {"sessions": 11},
    {"seed": 8},
    {"batch_size": 4},
    {"model": "mid"},
    {"model": {"base": "frontier", "window_tokens": 64000}},
    {"scenarios": [{"name": "mix", "turns": 21}]},
    {"scenarios": [{"name": "mix", "turns": 20}, {"name": "k8s_crashloop", "turns": 20}]},
    {"scenarios": [{"name": "mix", "turns": 20}, {"name": "k8s_crashloop", "turns": 20, "weight": 2}]},
    {"strategies": [{"name": "sliding_window", "window_size": 21}, {"name": "unbounded"}]},
    {"strategies": [{"name": "sliding_window", "window_size": 20, "label": "sw"}, {"name": "unbounded"}]},
    {"strategies": [{"name": "sliding_window", "window_size": 20, "contracts": True}, {"name": "unbounded"}]},
    {"strategies": [{"name": "sliding_window", "window_size": 20}, {"name": "unbounded", "token_budget": 9000}]},
    {"strategies": [{"name": "sliding_window", "window_size": 20}]},
], ids=["sessions", "seed", "batch_size", "model", "model-table", "scenario-param", "extra-scenario",
        "scenario-weight", "strategy-param", "label", "switch", "token-budget", "fewer-strategies"])
def test_config_hash_changes_when_a_result_changing_field_differs(changes: dict[str, Any]) -> None:
    assert RunConfig(**base_data(**changes)).config_hash() != RunConfig(**base_data()).config_hash()


@pytest.mark.parametrize("changes", [
    {"executor": "process"},
    {"executor": "dask", "scheduler": "tcp://somewhere:8786"},
    {"jobs": 7},
    {"executor": "process", "jobs": 3},
])
def test_config_hash_ignores_executor_jobs_and_scheduler(changes: dict[str, Any]) -> None:
    assert RunConfig(**base_data(**changes)).config_hash() == RunConfig(**base_data()).config_hash()


def test_resolved_config_leaves_out_executor_jobs_and_scheduler() -> None:
    resolved = RunConfig(**base_data(jobs=3, scheduler="tcp://x:1")).resolved()
    assert not {"executor", "jobs", "scheduler"} & set(resolved)
    assert {"sessions", "seed", "batch_size", "model", "scenarios", "strategies"} <= set(resolved)


# Every mistake is one ConfigError line naming the field, the range or file:line --------------------------

KNOWN_STRATEGIES = ", ".join(strategies.names())
KNOWN_SCENARIOS = ", ".join(scenarios.names())

BAD_CONFIGS = {
    "unknown-strategy": ('[[strategies]]\nname = "nope"\n',
                         ["strategies[0].name", "unknown strategy 'nope'", KNOWN_STRATEGIES]),
    "unknown-scenario": ('[[scenarios]]\nname = "nope"\n',
                         ["scenarios[0].name", "unknown scenario 'nope'", KNOWN_SCENARIOS]),
    "strategy-param-below-range": ('[[strategies]]\nname = "sliding_window"\nwindow_size = -3\n',
                                   ["strategies[0] (sliding_window)", "window_size", "ge 0"]),
    "strategy-param-above-range": ('[[strategies]]\nname = "sliding_window"\nthreshold = 2\n',
                                   ["strategies[0] (sliding_window)", "threshold", "le 1"]),
    "strategy-param-unknown": ('[[strategies]]\nname = "sliding_window"\nwindw = 3\n',
                               ["strategies[0].windw: strategy sliding_window has no param 'windw' (did you mean "
                                "'window_size'?) (known: proactive, threshold, window_size, per_turn, pin_first)"]),
    "scenario-param-below-range": ('[[scenarios]]\nname = "mix"\nturns = 3\n',
                                   ["scenarios[0] (mix)", "turns", "ge 20"]),
    "scenario-weight-zero": ('[[scenarios]]\nname = "mix"\nweight = 0\n', ["weight", "gt 0"]),
    "sessions-zero": ("sessions = 0\n", ["sessions", "ge 1"]),
    "sessions-too-many": ("sessions = 100000000\n", ["sessions", "le 10000000"]),
    "batch-size-zero": ("batch_size = 0\n", ["batch_size", "ge 1"]),
    "jobs-negative": ("jobs = -1\n", ["jobs", "ge 0"]),
    "token-budget-negative": ('[[strategies]]\nname = "unbounded"\ntoken_budget = -1\n', ["token_budget", "ge 0"]),
    "errors-mode": ('[[strategies]]\nname = "unbounded"\nerrors = "loud"\n', ["errors", "'plain'", "'three_class'"]),
    "unknown-model": ('model = "gpt-9"\n', ["model", "unknown profile 'gpt-9'", ", ".join(PROFILE_NAMES)]),
    "unknown-model-base": ('[model]\nbase = "gpt-9"\n', ["model.base", "gpt-9", ", ".join(PROFILE_NAMES)]),
    "model-field-out-of-range": ('[model]\nbase = "frontier"\nwindow_tokens = 10\n',
                                 ["model", "window_tokens", "ge 1024"]),
    "model-unknown-field": ('[model]\nbase = "frontier"\nwindw = 10\n', ["model", "windw"]),
    "unknown-top-level-key": ("sessionz = 3\n", ["sessionz"]),
    "executor": ('executor = "threads"\n', ["executor", "'serial'"]),
    "scheduler-port-out-of-range": ('scheduler = "tcp://localhost:99999"\n',
                                    ["scheduler", "a port from 1 to 65535", "99999"]),
}
SWEEP_BASE = '[[strategies]]\nname = "sliding_window"\n\n[[strategies]]\nname = "unbounded"\n\n'
BAD_SWEEPS = {
    "unknown-strategy": ('[sweep.params]\n"nope.window_size" = [10]\n',
                         ["sweep.params.nope.window_size", "no strategy 'nope'", "sliding_window, unbounded"]),
    "unknown-param": ('[sweep.params]\n"sliding_window.windw" = [10]\n',
                      ["sweep.params.sliding_window.windw", "no param 'windw'", "window_size"]),
    "value-out-of-range": ('[sweep.params]\n"sliding_window.window_size" = [10, -1]\n',
                           ["sweep.params.sliding_window.window_size[1]", "window_size", "ge 0"]),
    "value-of-wrong-type": ('[sweep.params]\n"sliding_window.window_size" = ["ten"]\n',
                            ["sweep.params.sliding_window.window_size[0]", "window_size"]),
    "duplicate-values": ('[sweep.params]\n"sliding_window.window_size" = [10, 10]\n',
                         ["sweep.params", "sliding_window.window_size", "a value appears twice"]),
    "no-values": ('[sweep.params]\n"sliding_window.window_size" = []\n',
                  ["sweep.params", "sliding_window.window_size", "at least one value"]),
    "key-without-param": ('[sweep.params]\n"window_size" = [10]\n', ["sweep.params", "window_size", "<strategy>"]),
    "unknown-profile": ('[sweep]\nmodels = ["frontier", "gpt-9"]\n',
                        ["sweep.models", "models[1]", "unknown profile 'gpt-9'", ", ".join(PROFILE_NAMES)]),
    "duplicate-profile": ('[sweep]\nmodels = ["mid", "mid"]\n', ["sweep.models", "appears twice"]),
    "unknown-sweep-key": ('[sweep]\nmodel = ["mid"]\n', ["sweep.model"]),
}
BAD_CONFIGS |= {f"sweep-{name}": (SWEEP_BASE + text, expected) for name, (text, expected) in BAD_SWEEPS.items()}

# No silent coercion: a string, a boolean or a whole float is never read as a number, nor 1 as true.
STRICT_CONFIGS = {
    "sessions-string": ('sessions = "2"\n', ["sessions: Input should be a valid integer", '(got "2")']),
    "sessions-whole-float": ("sessions = 2.0\n", ["sessions", "valid integer", "(got 2.0)"]),
    "jobs-boolean": ("jobs = true\n", ["jobs", "valid integer", "(got true)"]),
    "seed-string": ('seed = "7"\n', ["seed", '(got "7")']),
    "batch-size-float": ("batch_size = 8.5\n", ["batch_size", "(got 8.5)"]),
    "contracts-string": ('[[strategies]]\nname = "unbounded"\ncontracts = "yes"\n',
                         ["strategies[0].contracts: Input should be a valid boolean", '(got "yes")']),
    "breaker-integer": ('[[strategies]]\nname = "unbounded"\nbreaker = 1\n', ["strategies[0].breaker", "(got 1)"]),
    "token-budget-string": ('[[strategies]]\nname = "unbounded"\ntoken_budget = "5"\n',
                            ["strategies[0].token_budget", "valid integer"]),
    "label-number": ('[[strategies]]\nname = "unbounded"\nlabel = 3\n', ["strategies[0].label", "valid string"]),
    "weight-string": ('[[scenarios]]\nname = "mix"\nweight = "1"\n',
                      ["scenarios[0].weight: Input should be a valid number", '(got "1")']),
    "scenario-param-string": ('[[scenarios]]\nname = "mix"\nturns = "40"\n',
                              ["scenarios[0] (mix): turns", "valid integer"]),
    "scenario-param-whole-float": ('[[scenarios]]\nname = "mix"\npayload_median_bytes = 1500.0\n',
                                   ["payload_median_bytes", "valid integer"]),
    "mix-weight-string": ('[[scenarios]]\nname = "mix"\nweights = {log_triage = "1"}\n',
                          ["scenarios[0] (mix)", "weights.log_triage", "valid number"]),
    "mix-family-param-string": ('[[scenarios]]\nname = "mix"\nweights = {log_triage = 1}\n'
                                'family_params = {log_triage = {dump_scale = "x"}}\n',
                                ["scenarios[0] (mix)", "family_params.log_triage.dump_scale", "valid number"]),
    "strategy-param-string": ('[[strategies]]\nname = "sliding_window"\nwindow_size = "40"\n',
                              ["strategies[0] (sliding_window): window_size", "valid integer", '(got "40")']),
    "strategy-param-whole-float": ('[[strategies]]\nname = "sliding_window"\nwindow_size = 40.0\n',
                                   ["window_size", "valid integer"]),
    "strategy-switch-integer": ('[[strategies]]\nname = "sliding_window"\nproactive = 1\n',
                                ["proactive", "valid boolean"]),
    "union-param-string": ('[[strategies]]\nname = "sliding_window"\nper_turn = "x"\n',
                           ["per_turn: Input should be a valid boolean or a valid integer", '(got "x")']),
    "pipeline-stage-param-string": ('[[strategies]]\nname = "pipeline"\n'
                                    'stages = [{name = "sliding_window", params = {window_size = "3"}}]\n',
                                    ["strategies[0] (pipeline)", "stages[0] (sliding_window).params.window_size",
                                     "valid integer"]),
    "model-field-string": ('[model]\nbase = "mid"\np_max = "0.9"\n', ["model.p_max", "valid number"]),
    "model-switch-integer": ('[model]\nbase = "mid"\ncaching = 0\n', ["model.caching", "valid boolean"]),
    "model-integer-whole-float": ('[model]\nbase = "mid"\nwindow_tokens = 8192.0\n',
                                  ["model.window_tokens", "valid integer"]),
    "model-neither-name-nor-table": ("model = 5\n", ["model: Input should be a valid string or a valid dictionary"]),
    "sweep-value-string": (SWEEP_BASE + '[sweep.params]\n"sliding_window.window_size" = ["10"]\n',
                           ["sweep.params.sliding_window.window_size[0]", "valid integer"]),
}
# Finite numbers only, and none so large that it overflows later, in the middle of a run.
NON_FINITE_CONFIGS = {
    "weight-inf": ('[[scenarios]]\nname = "mix"\nweight = inf\n', ["scenarios[0].weight", "finite number"]),
    "weight-nan": ('[[scenarios]]\nname = "mix"\nweight = nan\n', ["scenarios[0].weight", "finite number"]),
    "weight-huge": ('[[scenarios]]\nname = "mix"\nweight = 1e308\n', ["scenarios[0].weight", "le 1000000"]),
    "weights-whose-sum-overflows": ('[[scenarios]]\nname = "mix"\nweight = 1e308\n'
                                    '[[scenarios]]\nname = "log_triage"\nweight = 1e308\n',
                                    ["scenarios[0].weight", "le 1000000"]),
    "mix-weight-inf": ('[[scenarios]]\nname = "mix"\nweights = {log_triage = inf}\n',
                       ["weights.log_triage", "finite number"]),
    "mix-weight-huge": ('[[scenarios]]\nname = "mix"\nweights = {log_triage = 1e308, alert_chain = 1e308}\n',
                        ["weights", "must be in [0, 1e+06]"]),
    "scenario-param-nan": ('[[scenarios]]\nname = "mix"\npayload_sigma = nan\n', ["payload_sigma", "finite number"]),
    "strategy-param-nan": ('[[strategies]]\nname = "sliding_window"\nthreshold = nan\n',
                           ["threshold", "finite number"]),
    "strategy-param-inf": ('[[strategies]]\nname = "condense"\nminimum_progress = inf\n',
                           ["minimum_progress", "finite number"]),
    "strategy-retries-huge": ('[[strategies]]\nname = "condense"\nhard_reset_retries = 10000000\n',
                              ["hard_reset_retries", "le 100"]),
    "token-budget-huge": ('[[strategies]]\nname = "unbounded"\ntoken_budget = 9223372036854775807\n',
                          ["token_budget", "le 1000000000000"]),
    "output-cap-huge": ('[[strategies]]\nname = "unbounded"\noutput_cap_chars = 9223372036854775807\n',
                        ["output_cap_chars", "le 1000000000"]),
    "seed-past-64-bits": ("seed = 9223372036854775808\n", ["seed", "le 9223372036854775807"]),
    "model-k-overflowing": ('[model]\nbase = "mid"\nk = 1e308\n', ["model.k", "le 20"]),
    "model-price-inf": ('[model]\nbase = "mid"\nprice_in = inf\n', ["model.price_in", "finite number"]),
    "model-sigma-nan": ('[model]\nbase = "mid"\nsigma = nan\n', ["model.sigma", "finite number"]),
    "model-half-length-nan": ('[model]\nbase = "mid"\nL_half = nan\n', ["model.L_half", "not nan"]),
    "model-half-length-zero": ('[model]\nbase = "mid"\nL_half = 0\n', ["model.L_half", "ge 1"]),
    "model-decode-zero": ('[model]\nbase = "mid"\ndecode_tps = 0\n', ["model.decode_tps", "ge 0.1"]),
    "model-table-without-base": ("model = {}\n", ['model: a table needs base = "<profile>"', "(missing name)"]),
    "entry-model-field-inf": ('[[strategies]]\nname = "unbounded"\nmodel = {base = "mid", base_s = inf}\n',
                              ["strategies[0].model.base_s", "finite number"]),
    "sweep-value-inf": (SWEEP_BASE + '[sweep.params]\n"sliding_window.threshold" = [0.5, inf]\n',
                        ["sweep.params.sliding_window.threshold[1]: inf is not a finite number"]),
    "sweep-value-nan": (SWEEP_BASE + '[sweep.params]\n"sliding_window.window_size" = [nan]\n',
                        ["sweep.params.sliding_window.window_size[0]: nan is not a finite number"]),
    "sweep-value-past-64-bits": (SWEEP_BASE + '[sweep.params]\n"sliding_window.window_size" = [9223372036854775808]\n',
                                 ["sweep.params.sliding_window.window_size[0]", "not a 64-bit integer"]),
}
BAD_CONFIGS |= STRICT_CONFIGS | NON_FINITE_CONFIGS
# A mix passes its shared params to every family itself: one in family_params would fail every session.
BAD_CONFIGS["mix-family-param-shared"] = ('[[scenarios]]\nname = "mix"\nweights = {log_triage = 1}\n'
                                          'family_params = {log_triage = {turns = 30}}\n',
                                          ["family_params.log_triage.turns", "a param every family shares"])


@pytest.mark.parametrize(("text", "expected"), list(BAD_CONFIGS.values()), ids=list(BAD_CONFIGS))
def test_bad_config_raises_one_line_config_error_naming_the_field(tmp_path: Path, text: str,
                                                                   expected: list[str]) -> None:
    path = write(tmp_path, text, "bad.toml")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    for part in expected:
        assert part in message, (part, message)


@pytest.mark.parametrize(("text", "line"), [
    ("sessions = 5\nseed = = 3\n", 2),
    ("sessions = 5\n\n\n[[strategies]\nname = 'x'\n", 4),
    ("sessions = 5\nsessions = 6\n", 2),
])
def test_bad_toml_raises_one_line_config_error_with_file_and_line(tmp_path: Path, text: str, line: int) -> None:
    path = write(tmp_path, text, "broken.toml")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert f"line {line}" in message


def test_missing_file_raises_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(ConfigError, match=r"absent\.toml: no such file"):
        load_config(path)


@pytest.mark.parametrize(("data", "expected"), [
    (b"", None),
    (b"\x00seed = 1\n", "a binary file, not TOML text"),
    ("sessions = 2\n".encode("utf-16"), "not UTF-8 text"),
    (b"# caf\xe9\nsessions = 2\n", "not UTF-8 text (byte 0xe9 at offset 5)"),
], ids=["empty", "binary", "utf-16", "latin-1"])
def test_a_file_that_is_not_utf8_toml_raises_one_line_naming_it(tmp_path: Path, data: bytes,
                                                                expected: str | None) -> None:
    path = tmp_path / "run.toml"
    path.write_bytes(data)
    if expected is None:  # empty is valid TOML: every default applies
        assert load_config(path) == load_config(write(tmp_path, "", "defaults.toml"))
        return
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ") and expected in str(info.value)


def test_a_directory_given_as_the_config_raises_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"is a directory$"):
        load_config(tmp_path)


def test_an_empty_config_path_is_refused_not_read_as_the_current_directory() -> None:
    with pytest.raises(ConfigError, match=r"^the config path is empty$"):
        load_config("")


@pytest.mark.parametrize(("override", "expected"), [
    ({"sessions": 0}, "--sessions: Input should be greater than or equal to 1"),
    ({"sessions": 10**11}, "--sessions: Input should be less than or equal to 10000000"),
    ({"seed": -1}, "--seed: Input should be greater than or equal to 0"),
    ({"seed": 2**70}, "--seed: Input should be less than or equal to 9223372036854775807"),
    ({"model": "gpt-9"}, "--model: unknown profile 'gpt-9'"),
    ({"jobs": -2}, "--jobs: Input should be greater than or equal to 0"),
    ({"jobs": 100_000}, "--jobs: Input should be less than or equal to 1024"),
    ({"executor": "threads"}, "--executor: Input should be 'serial', 'process' or 'dask'"),
    ({"scheduler": "localhost"}, "--scheduler: expected an address like tcp://HOST:8786"),
])
def test_bad_flag_override_raises_config_error_naming_the_flag(tmp_path: Path, override: dict[str, Any],
                                                               expected: str) -> None:
    path = write(tmp_path, "sessions = 5\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, **override)
    assert str(info.value).startswith(expected), str(info.value)
    assert "\n" not in str(info.value) and "run.toml" not in str(info.value)


@pytest.mark.parametrize(("scenario_names", "expected"), [
    (["nope"], "--scenarios: unknown 'nope' (known: " + KNOWN_SCENARIOS + ")"),
    (["mix", "mix"], "--scenarios: 'mix' appears twice"),
])
def test_selecting_bad_scenarios_raises_one_line_naming_the_flag(scenario_names: list[str], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        RunConfig(**base_data()).select(scenario_names=scenario_names)
    assert str(info.value) == expected


def test_numbers_that_mean_something_are_accepted(tmp_path: Path) -> None:
    """Strictness refuses what no one means; what a config legitimately says still loads: an integer
    where a float belongs, an infinite half-length (no decay), a weight of 0 in a mix."""
    path = write(tmp_path, """
        [model]
        base = "mid"
        L_half = inf
        decode_tps = 100
        [[scenarios]]
        name = "mix"
        weight = 2
        weights = {log_triage = 1, alert_chain = 0}
        [[strategies]]
        name = "sliding_window"
        threshold = 1
    """)
    config = load_config(path)
    assert config.profile().L_half == math.inf and config.profile().decode_tps == 100.0
    assert config.scenarios[0].weight == 2.0
    assert config.strategy_entries()[0].params == {"threshold": 1}


# Sweeps: [sweep] expands the strategies one factor at a time, crossed with profiles ---------------------------


def sweep_data(sweep: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return base_data(strategies=[{"name": "sliding_window", "window_size": 20, "threshold": 0.6},
                                 {"name": "unbounded"}], sweep=sweep, **changes)


def test_sweep_over_one_param_and_two_profiles_labels_counts_and_tags() -> None:
    config = RunConfig(**sweep_data({"models": ["frontier", "small"],
                                     "params": {"sliding_window.window_size": [10, 40]}}))
    variants = config.variants()
    assert [v.label for v in variants] == [
        "sliding_window[window_size=10]@frontier", "sliding_window[window_size=40]@frontier", "unbounded@frontier",
        "sliding_window[window_size=10]@small", "sliding_window[window_size=40]@small", "unbounded@small"]
    assert [v.tags() for v in variants[:3]] == [
        {"model": "frontier", "sweep_param": "sliding_window.window_size", "sweep_value": 10.0},
        {"model": "frontier", "sweep_param": "sliding_window.window_size", "sweep_value": 40.0},
        {"model": "frontier", "sweep_param": "", "sweep_value": None}]
    assert [v.profile for v in variants] == [profile("frontier")] * 3 + [profile("small")] * 3
    assert [v.entry.name for v in variants] == ["sliding_window", "sliding_window", "unbounded"] * 2


def test_sweep_keeps_every_other_param_of_the_swept_strategy_at_its_configured_value() -> None:
    config = RunConfig(**sweep_data({"params": {"sliding_window.window_size": [10, 40],
                                                "sliding_window.threshold": [0.5, 0.9]}}))
    params = {v.label: v.entry.params for v in config.variants()}
    assert params == {
        "sliding_window[window_size=10]": {"window_size": 10, "threshold": 0.6},
        "sliding_window[window_size=40]": {"window_size": 40, "threshold": 0.6},
        "sliding_window[threshold=0.5]": {"window_size": 20, "threshold": 0.5},
        "sliding_window[threshold=0.9]": {"window_size": 20, "threshold": 0.9},
        "unbounded": {},
    }


def test_sweep_without_models_runs_on_the_runs_model_with_unsuffixed_labels() -> None:
    config = RunConfig(**sweep_data({"params": {"sliding_window.window_size": [10]}}, model="mid"))
    assert [(v.label, v.model) for v in config.variants()] == [("sliding_window[window_size=10]", "mid"),
                                                              ("unbounded", "mid")]


def test_sweep_with_models_only_runs_every_strategy_once_per_profile() -> None:
    config = RunConfig(**sweep_data({"models": ["mid", "stress-2023"]}))
    assert [(v.label, v.model, v.sweep_param) for v in config.variants()] == [
        ("sliding_window@mid", "mid", ""), ("unbounded@mid", "mid", ""),
        ("sliding_window@stress-2023", "stress-2023", ""), ("unbounded@stress-2023", "stress-2023", "")]


def test_sweep_addresses_an_entry_by_its_label() -> None:
    data = base_data(strategies=[{"name": "sliding_window", "label": "sw20", "window_size": 20},
                                 {"name": "unbounded"}],
                     sweep={"params": {"sw20.window_size": [10, 80]}})
    variants = RunConfig(**data).variants()
    assert [v.label for v in variants] == ["sw20[window_size=10]", "sw20[window_size=80]", "unbounded"]
    assert {v.sweep_param for v in variants} == {"sw20.window_size", ""}


def test_sweep_of_floats_and_booleans_labels_and_values() -> None:
    data = base_data(strategies=[{"name": "summarize"}, {"name": "sliding_window"}],
                     sweep={"params": {"summarize.summary_ratio": [0.1, 0.25],
                                       "sliding_window.proactive": [True, False]}})
    variants = RunConfig(**data).variants()
    assert [(v.label, v.sweep_value) for v in variants] == [
        ("summarize[summary_ratio=0.1]", 0.1), ("summarize[summary_ratio=0.25]", 0.25),
        ("sliding_window[proactive=true]", None), ("sliding_window[proactive=false]", None)]


def test_a_config_without_sweep_has_one_untagged_variant_per_entry_and_no_sweep_in_resolved() -> None:
    config = RunConfig(**base_data())
    assert [(v.label, v.tags()) for v in config.variants()] == [
        ("sliding_window", {"model": "frontier", "sweep_param": "", "sweep_value": None}),
        ("unbounded", {"model": "frontier", "sweep_param": "", "sweep_value": None})]
    assert "sweep" not in config.resolved()


def test_sweep_is_part_of_the_config_hash() -> None:
    plain = RunConfig(**base_data()).config_hash()
    swept = RunConfig(**sweep_data({"params": {"sliding_window.window_size": [10]}})).config_hash()
    other = RunConfig(**sweep_data({"params": {"sliding_window.window_size": [11]}})).config_hash()
    assert len({plain, swept, other}) == 3


def test_a_strategy_entry_with_its_own_model_runs_on_that_profile() -> None:
    data = base_data(strategies=[{"name": "unbounded", "model": "small"}, {"name": "sliding_window"}])
    config = RunConfig(**data)
    assert [(v.label, v.model, v.profile) for v in config.variants()] == [
        ("unbounded", "small", profile("small")), ("sliding_window", "frontier", profile("frontier"))]
    assert config.resolved()["strategies"][0]["model"] == profile("small").model_dump(mode="json")
    assert config.config_hash() != RunConfig(**base_data(strategies=[{"name": "unbounded"},
                                                                      {"name": "sliding_window"}])).config_hash()
    entry = {"name": "unbounded", "model": {"base": "small", "window_tokens": 4096}}
    assert RunConfig(**base_data(strategies=[entry])).variants()[0].profile.window_tokens == 4096


def test_an_entry_with_its_own_model_cannot_join_a_sweep_over_models() -> None:
    data = base_data(strategies=[{"name": "unbounded", "model": "small"}, {"name": "sliding_window"}],
                     sweep={"models": ["frontier", "mid"]})
    with pytest.raises(ValueError, match=r"strategies\[0\]\.model: an entry cannot name its own profile"):
        RunConfig(**data)


@pytest.mark.parametrize(("key", "values"), [("condense.max_tokens", [1000000, 1000001]),
                                             ("sliding_window.threshold", [0.5, 0.50000001])])
def test_every_variant_of_a_sweep_has_its_own_label(key: str, values: list[Any]) -> None:
    data = base_data(strategies=[{"name": key.partition(".")[0]}], sweep={"params": {key: values}})
    labels = [v.label for v in RunConfig(**data).variants()]
    assert len(set(labels)) == len(labels) == 2, labels


def test_values_that_configure_the_same_thing_are_duplicates() -> None:
    data = base_data(strategies=[{"name": "sliding_window"}], sweep={"params": {"sliding_window.threshold": [1, 1.0]}})
    with pytest.raises(ValueError, match="a value appears twice"):
        RunConfig(**data)


def test_sweeping_a_name_shared_by_two_entries_asks_for_a_label() -> None:
    data = base_data(strategies=[{"name": "sliding_window", "label": "a"}, {"name": "sliding_window", "label": "b"}],
                     sweep={"params": {"sliding_window.window_size": [10, 20]}})
    with pytest.raises(ValueError, match=r"2 entries are named 'sliding_window'; use a label \(a, b\)"):
        RunConfig(**data)
    data["sweep"] = {"params": {"b.window_size": [10, 20]}}
    assert [v.label for v in RunConfig(**data).variants()] == ["a", "b[window_size=10]", "b[window_size=20]"]




def test_unknown_entry_model_raises_one_line_config_error_naming_the_entry(tmp_path: Path) -> None:
    path = write(tmp_path, '[[strategies]]\nname = "unbounded"\nmodel = "gpt-9"\n', "bad.toml")
    with pytest.raises(ConfigError, match=r"strategies\[0\]\.model: unknown profile 'gpt-9'") as info:
        load_config(path)
    assert "\n" not in str(info.value)


def test_a_sweep_key_names_a_label_before_a_name() -> None:
    data = base_data(strategies=[{"name": "sliding_window", "label": "a"},
                                 {"name": "truncate_then_slide", "label": "sliding_window"}],
                     sweep={"params": {"sliding_window.window_size": [10, 20]}})
    assert [v.label for v in RunConfig(**data).variants()] == [
        "a", "sliding_window[window_size=10]", "sliding_window[window_size=20]"]
    assert [v.entry.name for v in RunConfig(**data).variants()] == ["sliding_window", "truncate_then_slide",
                                                                    "truncate_then_slide"]
