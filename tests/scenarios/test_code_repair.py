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
