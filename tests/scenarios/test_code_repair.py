"""`code_repair`: valid, deterministic scripts shaped like SWE-agent trajectories (the Complexity
Trap's sizes), with SWE-agent's viewer and search caps, mostly literal facts, and no place in `mix`."""

from __future__ import annotations

import re
import statistics

import pytest

import scenarios
from harness.core.tokens import default_tokenizer
from scenarios.base import SessionScript, check_script
from scenarios.code_repair import (
    FACT_WORDS,
    NOUNS,
    SEARCH_CAP,
    SEARCH_TERMS,
    VERBS,
    WINDOW_LINES,
    CodeRepairParams,
    search_result,
    window,
)
from scenarios.mix import DEFAULT_FAMILIES, MixParams

#: 100 seeds: the length and size checks average over about 6,000 steps.
SEEDS = range(100)
#: Mean turns of the Qwen3-Coder raw agent is 58.5 (research12 4.3); the family's lognormal has a
#: mean of 58.7 over 3,000 seeds and a standard deviation near 30, so a 100-seed mean has a standard
#: error of about 3 turns: [50, 66] is more than 2.5 of them either side.
MEAN_STEPS_RANGE = (50, 66)
#: Target 650-700 payload tokens a step: with a ~100-token call, context grows ~770 tokens a turn and
#: observations are ~84% of it (research12 4.3: 620-720 tokens a turn; the paper's 83.9%). The
#: 100-seed mean moves by about 10 tokens between seed sets, so the band leaves 40 either side.
MEAN_TOKENS_RANGE = (610, 740)


@pytest.fixture(scope="module")
def scripts() -> list[SessionScript]:
    return [scenarios.generate("code_repair", seed) for seed in SEEDS]


def test_scripts_are_valid(scripts: list[SessionScript]) -> None:
    problems = {s.seed: check_script(s) for s in scripts[:50]}
    assert {seed: p for seed, p in problems.items() if p} == {}


def test_scripts_are_valid_at_the_turn_bounds() -> None:
    for turns in (20, 250):
        for seed in range(3):
            script = scenarios.generate("code_repair", 500 + seed, turns=turns)
            assert len(script.steps) == turns
            assert check_script(script) == []


def test_same_seed_gives_a_byte_identical_script() -> None:
    first = scenarios.generate("code_repair", 11).model_dump_json()
    scenarios.generate("code_repair", 12)
    assert scenarios.generate("code_repair", 11).model_dump_json() == first


def test_lengths_and_sizes_match_the_complexity_trap(scripts: list[SessionScript]) -> None:
    count = default_tokenizer().count
    steps = [len(s.steps) for s in scripts]
    tokens = [count(step.payload) for s in scripts for step in s.steps]
    low, high = MEAN_STEPS_RANGE
    assert low <= statistics.mean(steps) <= high
    low, high = MEAN_TOKENS_RANGE
    assert low <= statistics.mean(tokens) <= high


def test_payloads_stay_under_the_output_cap(scripts: list[SessionScript]) -> None:
    cap = CodeRepairParams().payload_max_bytes
    assert max(len(step.payload.encode()) for s in scripts for step in s.steps) <= cap


def test_latent_facts_exist_and_are_a_minority(scripts: list[SessionScript]) -> None:
    for script in scripts:
        kinds = list(script.lookups().values())
        assert kinds.count("latent") >= 1
        assert kinds.count("latent") <= len(kinds) / 4
    assert {k for k, v in scripts[0].lookups().items() if v == "latent"} == {"root_function", "bad_constant"}


def test_a_session_is_graded_on_its_patch_the_edit_written_from_what_was_found(scripts: list[SessionScript]) -> None:
    for script in scripts:
        facts = script.fact_values()
        assert facts["failing_test"].split("::")[0].startswith("tests/pricing/test_")
        assert re.fullmatch(r"\w+_tables\.py:\d{3}", facts["bug_line"])
        assert facts["bug_line"].split(":")[0] == facts["root_file"].rsplit("/", 1)[1]
        edits = [step for step in script.steps if step.tool == "edit_file"]
        assert script.final_facts == [] and script.patch == [step.id for step in edits]
        # The first edit takes the file and the line from the facts the agent found.
        assert edits[0].args["path"] == "root_file" and edits[0].args["start_line"] == "bug_line"
        assert edits[0].needs == ["bug_line", "root_file"]


def test_the_bug_line_is_also_read_from_the_edit_call_and_the_diff_hunk(scripts: list[SessionScript]) -> None:
    for script in scripts:
        line = int(script.fact_values()["bug_line"].rsplit(":", 1)[1])
        start_form, hunk_form = script.facts["bug_line"].forms
        assert start_form == f'"start_line":{line}'
        submit = next(step for step in script.steps if step.tool == "submit")
        assert hunk_form in submit.payload
        first, count = (int(n) for n in hunk_form.split()[1].lstrip("-").split(","))
        assert first <= line < first + count  # the hunk covers the line


def test_graded_on_its_report_the_final_answer_names_five_facts() -> None:
    script = scenarios.generate("code_repair", 3, graded_on="report")
    assert script.patch == []
    assert set(script.final_facts) == {"failing_test", "root_file", "root_function", "bug_line", "suite_result"}
    assert "In your final message report" in script.task.text


def test_some_sessions_need_a_second_edit(scripts: list[SessionScript]) -> None:
    edits = [sum(step.tool == "edit_file" for step in s.steps) for s in scripts]
    assert set(edits) == {1, 2}


def test_file_windows_show_at_most_100_numbered_lines(scripts: list[SessionScript]) -> None:
    seen = 0
    for script in scripts:
        for step in script.steps:
            if step.tool in ("open_file", "scroll", "edit_file"):
                seen += 1
                assert step.payload.startswith("[File: /repo/")
                numbered = [line for line in step.payload.splitlines() if re.match(r"\d+:", line)]
                assert 0 < len(numbered) <= WINDOW_LINES
    assert seen > 1000


def test_window_is_cut_to_100_lines_and_says_what_is_above_and_below() -> None:
    lines = [f"x = {i}" for i in range(1, 301)]
    text = window("pkg/mod.py", lines, 120)
    assert text.splitlines()[:3] == ["[File: /repo/pkg/mod.py (300 lines total)]", "(119 more lines above)",
                                     "120:x = 120"]
    assert text.splitlines()[-1] == "(81 more lines below)"
    assert len(window("pkg/mod.py", lines, 290).splitlines()) == WINDOW_LINES + 2


def test_searches_over_100_matches_print_the_narrow_your_search_message(scripts: list[SessionScript]) -> None:
    broad = 0
    for script in scripts:
        for step in script.steps:
            if step.tool != "search_repo":
                continue
            first = step.payload.splitlines()[0]
            if first.startswith("More than"):
                broad += 1
                assert re.fullmatch(r'More than (\d+) lines matched for ".+" in \S+\. Please narrow your search\.',
                                    step.payload)
                assert int(first.split()[2]) > SEARCH_CAP
            else:
                found = int(re.match(r"Found (\d+) matches", first).group(1))  # type: ignore[union-attr]
                assert found <= SEARCH_CAP
                assert len(step.payload.splitlines()) == found + 2
    assert broad > 20


def test_search_result_caps_at_100_matches() -> None:
    matches = [f"pkg/mod.py:{i}:x = {i}" for i in range(1, 102)]
    assert search_result("x", "/repo", matches).startswith('More than 101 lines matched for "x" in /repo.')
    assert search_result("x", "/repo", matches[:100]).count("\n") == 101


def test_filler_vocabularies_never_contain_a_fact_word() -> None:
    """Fact values are built from `FACT_WORDS`, which no filler word contains, so a fact value can never
    occur in filler text by chance."""
    filler = [*NOUNS, *VERBS, *(t.strip() for t in SEARCH_TERMS)]
    clashes = [(f, w) for f in FACT_WORDS for w in filler if f in w.lower()]
    assert clashes == []


def test_code_repair_is_registered_but_not_in_the_default_mix() -> None:
    assert "code_repair" in scenarios.names()
    assert DEFAULT_FAMILIES == ("alert_chain", "db_slow_query", "deploy_regression", "k8s_crashloop", "log_triage")
    assert "code_repair" not in MixParams().weights


# The fitted-workload params (harness.run.fitting): a length mix and role weights --------------------------------

#: Role weights that ask for the reproduction script (edits) and runs more than anything else.
SWE_AGENT_ROLES = {"read": 0.2, "search": 0.1, "edit": 0.4, "run": 0.3}


def test_the_fitted_params_are_recorded_only_when_set() -> None:
    assert set(CodeRepairParams().model_dump()) == {"turns", "payload_median_bytes", "payload_sigma",
                                                    "payload_max_bytes", "hyphenated_tools", "graded_on"}
    script = scenarios.generate("code_repair", 4, turns_median=12, role_weights={"read": 1.0})
    assert script.params["turns_median"] == 12 and script.params["role_weights"] == {"read": 1.0}
    assert "turns_sigma" not in script.params


def test_the_length_mix_draws_short_sessions_down_to_the_shortest_chain() -> None:
    lengths = []
    for seed in range(60):
        script = scenarios.generate("code_repair", seed, turns_median=10, turns_sigma=0.5)
        assert check_script(script) == []
        assert any(step.tool == "edit_file" for step in script.steps) and script.steps[-1].tool == "submit"
        lengths.append(len(script.steps))
    # The chain that still finds every fact and fixes the bug: 8 steps, 9 with the second bug.
    assert min(lengths) >= 8 and 9 <= statistics.median(lengths) <= 13 and max(lengths) > 13
    # Graded on its report, a short session still runs the suite whose result the report states.
    script = scenarios.generate("code_repair", 1, turns_median=3, turns_sigma=0.0, graded_on="report")
    assert check_script(script) == [] and "suite_result" in {k for step in script.steps for k in step.produces}


@pytest.mark.parametrize("graded_on", ["patch", "report"])
def test_role_weights_add_the_reproduction_script_and_keep_the_patch_the_root_files(graded_on: str) -> None:
    made = removed = 0
    for seed in range(40):
        script = scenarios.generate("code_repair", seed, turns_median=16, turns_sigma=0.4, graded_on=graded_on,
                                    role_weights=SWE_AGENT_ROLES, payload_median_bytes=200, payload_max_bytes=900)
        assert check_script(script) == []
        repro = [step for step in script.steps if "reproduce" in step.args.get("path", "")
                 or "reproduce" in step.args.get("command", "")]
        made += sum(step.tool == "edit_file" for step in repro)
        edits = [step for step in script.steps if step.tool == "edit_file" and step.args["path"] == "root_file"]
        if graded_on == "patch":
            assert script.patch == [step.id for step in edits]
            # Script first: the reproduction script, not the test suite, shows the failure.
            assert script.steps[0].tool == "edit_file" and "reproduce" in script.steps[0].args["path"]
        for step in repro:
            if step.args.get("command", "").startswith("lit:rm "):
                removed += 1
                first_edit = script.steps.index(edits[0])
                assert script.steps.index(step) > first_edit  # removed only once the fix is in
    assert made >= 40 and removed > 0


def test_role_weights_weigh_the_exploration_by_role() -> None:
    from harness.run.fitting import tool_role
    from scenarios.base import LITERAL_PREFIX

    def roles(weights: dict[str, float]) -> dict[str, int]:
        counts = dict.fromkeys(("read", "search", "edit", "run", "other"), 0)
        for seed in range(20):
            for step in scenarios.generate("code_repair", seed, turns=40, role_weights=weights).steps:
                counts[tool_role(step.tool, {k: v.removeprefix(LITERAL_PREFIX) for k, v in step.args.items()})] += 1
        return counts

    reading, running = roles({"read": 1.0}), roles({"run": 1.0})
    assert reading["read"] > 3 * running["read"] and running["run"] > 3 * reading["run"]


def test_role_weights_are_checked() -> None:
    from pydantic import ValidationError

    for bad in ({"read": 0.0}, {"read": -1.0}, {"write": 1.0}):
        with pytest.raises(ValidationError):
            CodeRepairParams.model_validate({"role_weights": bad})


def test_a_cap_below_the_pytest_frame_generates() -> None:
    for seed in range(5):
        assert check_script(scenarios.generate("code_repair", seed, turns=20, payload_max_bytes=300)) == []
