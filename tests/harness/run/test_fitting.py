"""Workload fitting (harness/run/fitting.py): each fitted quantity on hand-made sessions (session lengths,
payloads with empty outputs, observation share, growth per call, tokens, the tool-role mix), the role of a
call and SWE-agent's text actions, the side-by-side of measured and generated, the recovery of the params of
transcripts made by ctxbench's own generators, the written config, and the real SWE-agent sessions when
they are present.

The recovery tolerances are fixed here, before any fit is looked at, from what the generators do:
- Payloads: a family's outputs are not all drawn from its lognormal (whole table rows, log dumps several
  times the median, fixed-size confirmations), so the fit calibrates by simulation (`fitting.fit`). 24
  sessions of 40 calls give about 900 payloads (the log-mean's standard error about 0.04) and the
  calibration's 40 scripts as many again; the median is asked within 20% and sigma within 0.2, several
  standard errors, which leaves room for what the calibration cannot correct exactly.
- Turns: the generators make exactly ``turns`` steps, and a replayed session's failed attempts add a few
  calls (the fit takes the median of the sessions' tool calls): within 10%.
- The real SWE-agent sessions: the brief's 30% on the median session length, the payload median and the
  observation share, for the fitted config's generated sessions against the transcripts.
"""

from __future__ import annotations

import math
import statistics
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import scenarios
from harness.core.messages import Message, Text, ToolResult, ToolUse, default_meter
from harness.run import fitting
from harness.run.config import load_config
from harness.run.traces import ImportedSession, load_traces

MEDIAN_TOLERANCE = 0.20
SIGMA_TOLERANCE = 0.20
TURNS_TOLERANCE = 0.10
#: Sessions per recovery case: enough payloads for the tolerances above, few enough to stay fast.
RECOVERY_SESSIONS = 24
#: The real SWE-agent sessions, converted to openai-chat (README of the folder); read when present.
REAL_SWE_AGENT = (Path(__file__).resolve().parents[3] / ".." / "shared" / "realtraces" / "swe-agent" / "converted"
                  / "history")
#: The brief's agreement for the real sessions (measured on as many generated sessions as fit's default).
REAL_TOLERANCE = 0.30

#: (family, generator params) whose values a fit must recover.
RECOVERY_CASES = {
    "k8s-long-payloads": ("k8s_crashloop", {"turns": 40, "payload_median_bytes": 3000, "payload_sigma": 1.0}),
    "k8s-small-payloads": ("k8s_crashloop", {"turns": 80, "payload_median_bytes": 800, "payload_sigma": 0.6}),
}


def _session(tools: list[str], outputs: list[str], name: str = "s", *,
             inputs: list[dict[str, Any]] | None = None) -> ImportedSession:
    """A session calling ``tools`` in turn (inputs ``{"n": i}`` unless given), each answered by its output,
    then a final answer."""
    messages = [Message.build("user", [Text("find the pod")], kind="task")]
    for i, (tool, output) in enumerate(zip(tools, outputs, strict=True)):
        arguments = inputs[i] if inputs is not None else {"n": i}
        messages.append(Message.build("assistant", [ToolUse(str(i), tool, arguments)]))
        messages.append(Message.build("user", [ToolResult(str(i), "success", output)]))
    messages.append(Message.build("assistant", [Text("done")], kind="final"))
    return ImportedSession(source=name, session_id=name, format="anthropic", system="", messages=tuple(messages))


def _text_session(turns: list[tuple[str, str | None]], name: str = "t") -> ImportedSession:
    """A session of SWE-agent text actions: each assistant message ends with a fenced command, its output
    the next user message (None: the session ends with that action)."""
    messages = [Message.build("user", [Text("Fix the issue in the repository.")], kind="task")]
    for command, output in turns:
        messages.append(Message.build("assistant", [Text(f"Next I will run this.\n```\n{command}\n```")]))
        if output is not None:
            messages.append(Message.build("user", [Text(output)]))
    return ImportedSession(source=name, session_id=name, format="openai-chat", system="", messages=tuple(messages))


# Recovery of ctxbench's own params ------------------------------------------------------------------------------


@pytest.mark.parametrize(("family", "params"), list(RECOVERY_CASES.values()), ids=list(RECOVERY_CASES))
def test_fit_recovers_the_generator_params(family: str, params: dict[str, Any]) -> None:
    sessions = fitting.synthetic_sessions(family, RECOVERY_SESSIONS, seed=11, **params)
    fitted = fitting.fit(fitting.measure(sessions))
    assert abs(fitted.payload_median_bytes / params["payload_median_bytes"] - 1) <= MEDIAN_TOLERANCE, fitted
    assert abs(fitted.payload_sigma - params["payload_sigma"]) <= SIGMA_TOLERANCE, fitted
    assert fitted.turns is not None and abs(fitted.turns / params["turns"] - 1) <= TURNS_TOLERANCE, fitted
    assert fitted.weights == {family: 1.0}
    assert not fitted.fallback and fitted.role_weights is None and fitted.turns_median is None


def test_ks_p_value_is_large_for_lognormal_samples_and_tiny_for_bimodal_ones() -> None:
    rng = np.random.default_rng(3)
    lognormal = np.exp(rng.normal(math.log(2000), 1.0, size=800))
    bimodal = np.concatenate([np.exp(rng.normal(math.log(300), 0.2, size=400)),
                              np.exp(rng.normal(math.log(30_000), 0.2, size=400))])
    good, bad = fitting.fit_lognormal(lognormal), fitting.fit_lognormal(bimodal)
    assert good.ks_p_value > 0.2
    assert bad.ks_p_value < 1e-6
    assert abs(good.median / 2000 - 1) < 0.1 and abs(good.sigma - 1.0) < 0.1


def test_kolmogorov_p_value_matches_known_values() -> None:
    # Q(lambda) tabulated: Q(1.36) = 0.049 (the 5% critical value), Q(1.63) = 0.010; large n, so Stephens'
    # correction is negligible.
    n = 1_000_000
    assert fitting.kolmogorov_p_value(1.3581 / math.sqrt(n), n) == pytest.approx(0.05, abs=1e-3)
    assert fitting.kolmogorov_p_value(1.6276 / math.sqrt(n), n) == pytest.approx(0.01, abs=1e-3)
    assert fitting.kolmogorov_p_value(0.0, 10) == 1.0


# Each fitted quantity on hand-made sessions ----------------------------------------------------------------------

#: Three sessions of code_repair's tools (so the fit targets the family with the length mix and role
#: weights): 2, 4 and 8 calls, outputs of 100, 1,000 and 10,000 bytes and one empty one.
HAND_MADE = [
    (["open_file", "run_tests"], ["a" * 100, "b" * 1000]),
    (["search_repo", "edit_file", "run_tests", "submit"], ["c" * 1000, "", "d" * 100, "e" * 1000]),
    (["open_file", "open_file", "search_repo", "edit_file", "run_tests", "run_tests", "bash", "submit"],
     ["f" * 10_000, "g" * 100, "h" * 1000, "i" * 1000, "j" * 100, "k" * 1000, "l" * 100, "m" * 1000]),
]
#: The bash call of the last session runs pytest: a run.
HAND_MADE_INPUTS: list[list[dict[str, Any]] | None] = [None, None, [
    {"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}, {"n": 5}, {"command": "cd /repo && pytest -q tests"}, {}]]


@pytest.fixture(scope="module")
def hand_made() -> list[ImportedSession]:
    return [_session(tools, outputs, f"s{i}", inputs=HAND_MADE_INPUTS[i])
            for i, (tools, outputs) in enumerate(HAND_MADE)]


def test_the_session_lengths_are_fitted_as_a_lognormal_not_one_value(hand_made: list[ImportedSession]) -> None:
    measured = fitting.measure(hand_made)
    assert measured.session_lengths == [2, 4, 8]
    fitted = fitting.fit(measured, calibrate=False)
    # log 2, log 4, log 8: mean log 4, standard deviation log 2 * sqrt(2/3).
    assert fitted.lengths.median == pytest.approx(4.0)
    assert fitted.lengths.sigma == pytest.approx(math.log(2) * math.sqrt(2 / 3))
    assert fitted.turns_measured == (4.0, 3.0, 6.0)
    assert fitted.weights == {"code_repair": 1.0}
    assert fitted.turns is None and fitted.turns_median == 4
    assert fitted.turns_sigma == pytest.approx(math.log(2) * math.sqrt(2 / 3), abs=1e-4)


def test_payloads_keep_their_spread_and_cap_and_an_empty_output_is_0_bytes(hand_made: list[ImportedSession]) -> None:
    measured = fitting.measure(hand_made)
    assert sorted(measured.payload_bytes) == [0] + [100] * 5 + [1000] * 7 + [10_000]
    assert measured.empty_share == pytest.approx(1 / 14)
    fitted = fitting.fit(measured, calibrate=False)
    logs = np.log([100] * 5 + [1000] * 7 + [10_000])
    assert fitted.payload.n == 13  # the lognormal of the non-empty outputs
    assert fitted.payload.median == pytest.approx(math.exp(logs.mean()))
    assert fitted.payload.sigma == pytest.approx(logs.std())
    # Uncalibrated, the generator's params are the lognormal's own: its sigma is not clipped away.
    assert fitted.payload_median_bytes == round(math.exp(logs.mean()))
    assert fitted.payload_sigma == pytest.approx(logs.std(), abs=1e-4)
    # The cap is the largest output, so it is no lower than the 99th percentile.
    assert fitted.payload_max_bytes == 10_000 >= np.percentile(measured.payload_bytes, 99)
    assert any("1 of 14 tool outputs are empty" in note for note in fitted.notes)


def test_observation_share_growth_and_tokens_are_what_the_messages_hold(hand_made: list[ImportedSession]) -> None:
    measured = fitting.measure(hand_made)
    meter = default_meter()
    outputs = [o for _, session_outputs in HAND_MADE for o in session_outputs]
    every = [m for s in hand_made for m in s.messages]
    assert measured.result_tokens == sum(meter.measure(o)[0] for o in outputs)
    assert measured.message_tokens == sum(m.tokens for m in every)
    assert measured.observation_share == pytest.approx(measured.result_tokens / measured.message_tokens)
    for session, one in zip(hand_made, measured.sessions, strict=True):
        prompts, prompt, total = [], 0, 0
        for message in session.messages:
            if message.role == "assistant":
                prompts.append(prompt)
                total += prompt + message.tokens
            prompt += message.tokens
        assert one.growth_per_turn == pytest.approx(np.polyfit(np.arange(len(prompts)), prompts, 1)[0])
        assert one.total_tokens == total
        assert one.model_calls == len(prompts)


def test_the_tool_role_mix_and_the_role_weights(hand_made: list[ImportedSession]) -> None:
    measured = fitting.measure(hand_made)
    # read: 3 open_file; search: 2 search_repo; edit: 2 edit_file; run: 4 run_tests + the bash pytest; other:
    # 2 submit.
    assert measured.role_counts == {"read": 3, "search": 2, "edit": 2, "run": 5, "other": 2}
    assert measured.role_mix["run"] == pytest.approx(5 / 14)
    fitted = fitting.fit(measured, calibrate=False)
    assert fitted.role_weights == {"edit": 0.1667, "read": 0.25, "run": 0.4167, "search": 0.1667}


def test_the_written_config_of_a_length_mix_loads_and_says_where_each_value_came_from(
        hand_made: list[ImportedSession], tmp_path: Path) -> None:
    fitted = fitting.fit(fitting.measure(hand_made), calibrate=False)
    path = fitting.write_workload(fitted, tmp_path / "workload.toml", sessions=3)
    text = path.read_text()
    assert "role_weights = { edit = 0.1667, read = 0.25, run = 0.4167, search = 0.1667 }" in text
    (entry,) = load_config(path).scenarios
    assert entry.name == "code_repair" and "turns" not in entry.params
    assert entry.params["turns_median"] == 4 and entry.params["role_weights"]["run"] == 0.4167
    for key in ("turns_median", "turns_sigma", "payload_median_bytes", "payload_sigma", "payload_max_bytes",
                "role_weights"):
        before = text.split(f"\n{key} = ")[0].splitlines()[-1]
        assert before.startswith("# "), key
    assert tomllib.loads(text) == fitting.workload_config(fitted, sessions=3)
    # And it generates: scripts of every length the mix draws, down to the family's shortest chain.
    script = scenarios.generate(entry.name, 5, **entry.params)
    assert 8 <= len(script.steps) < 20


# Roles --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "arguments", "role"), [
    # SWE-agent's commands, by name.
    ("open", {"path": "a.py"}, "read"), ("goto", {"line_number": 40}, "read"), ("scroll_down", {}, "read"),
    ("scroll_up", {}, "read"), ("search_dir", {"search_term": "x"}, "search"), ("search_file", {}, "search"),
    ("find_file", {"file_name": "a.py"}, "search"), ("edit", {"start_line": 1}, "edit"),
    ("create", {"filename": "r.py"}, "edit"), ("insert", {"text": "x"}, "edit"), ("submit", {}, "other"),
    # The editor by its sub-command.
    ("str_replace_editor", {"command": "view", "path": "a.py"}, "read"),
    ("str_replace_editor", {"command": "str_replace", "path": "a.py"}, "edit"),
    ("str_replace_editor", {"command": "create", "path": "a.py"}, "edit"),
    # A shell call by its command's first word, past navigation, wrappers and assignments.
    ("bash", {"command": "python reproduce.py"}, "run"), ("bash", {"command": "pytest -x tests"}, "run"),
    ("bash", {"command": "cat setup.py"}, "read"), ("bash", {"command": "grep -rn Decimal src"}, "search"),
    ("bash", {"command": "find . -name '*.py' | head"}, "search"), ("bash", {"command": "ls -F"}, "search"),
    ("bash", {"command": "rm reproduce.py"}, "edit"), ("bash", {"command": "cd /repo && python -m pytest"}, "run"),
    ("bash", {"command": "sudo PYTHONPATH=src timeout 30 pytest"}, "run"),
    ("bash", {"command": "git diff"}, "read"), ("bash", {"command": "git checkout -- a.py"}, "edit"),
    ("bash", {"command": "sed -n 1,20p a.py"}, "read"), ("bash", {"command": "sed -i s/a/b/ a.py"}, "edit"),
    ("bash", {"command": "./run.sh"}, "run"), ("bash", {"command": "echo done"}, "other"),
    ("execute_bash", {"cmd": "ls"}, "search"), ("functions.bash", {"command": "cat x"}, "read"),
    # Other tools by their name's words; nothing known: other.
    ("kubectl_logs", {}, "read"), ("kubectl_set_resources", {}, "edit"), ("db_query", {}, "search"),
    ("run_tests", {}, "run"), ("mcp__files__read_file", {}, "read"), ("getWeather", {}, "read"),
    ("frobnicate", {}, "other"),
])
def test_tool_role(tool: str, arguments: dict[str, Any], role: str) -> None:
    assert fitting.tool_role(tool, arguments) == role


def test_swe_agent_tools_are_not_mostly_other() -> None:
    tools = ["open", "goto", "scroll_down", "search_dir", "find_file", "edit", "create", "python", "pytest", "ls",
             "cat", "submit", "rm", "str_replace_editor"]
    roles = [fitting.command_role(t) if t not in ("str_replace_editor",) else fitting.tool_role(t, {})
             for t in tools]
    assert roles.count("other") == 1  # submit


def test_text_actions_are_read_as_swe_agent_reads_them() -> None:
    assert fitting.text_action("Let's look.\n```\nopen setup.py\n```") == "open setup.py"
    assert fitting.text_action("Run it.\n```bash\npython reproduce.py\n```\n") == "python reproduce.py"
    assert fitting.text_action("Create it.\n<command>\ncreate reproduce.py\n</command>") == "create reproduce.py"
    # The last block counts: an inline block in the thought before it does not.
    assert fitting.text_action("The script ```print(1)``` works.\n```\nsubmit\n```") == "submit"
    edit = "Fix it.\n```\nedit 4:4\n    return x\nend_of_edit\n```"
    assert fitting.text_action(edit) == "edit 4:4\n    return x\nend_of_edit"
    assert fitting.text_action("I am done.") is None
    assert fitting.text_action("```\ncode\n``` and then more prose") is None
    assert fitting.text_action("```\n\n```") is None


def test_a_session_of_text_actions_is_measured_from_its_commands_and_observations() -> None:
    session = _text_session([("ls -F", "setup.py\nsrc/"), ("open setup.py", "[File: setup.py (3 lines total)]"),
                             ("python reproduce.py", ""), ("submit", None)])
    measured = fitting.measure([session])
    (one,) = measured.sessions
    assert (one.model_calls, one.tool_calls, one.text_actions) == (4, 4, 4)
    assert measured.payload_bytes == (len(b"setup.py\nsrc/"), len(b"[File: setup.py (3 lines total)]"), 0)
    assert dict(measured.tool_counts) == {"ls": 1, "open": 1, "python": 1, "submit": 1}
    assert measured.role_counts == {"read": 1, "search": 1, "edit": 0, "run": 1, "other": 1}
    observations = sum(m.meter.measure(m.text)[0] for m in session.messages[2::2])
    assert measured.result_tokens == observations
    fitted = fitting.fit(measured, calibrate=False)
    assert any("read from the assistant's text" in note for note in fitted.notes)


def test_a_chat_whose_answers_rarely_end_with_code_is_not_read_as_text_actions() -> None:
    messages = [Message.build("user", [Text("Help me with Python.")], kind="task"),
                Message.build("assistant", [Text("Sure, use this:\n```\nprint(1)\n```")]),
                Message.build("user", [Text("And for two?")]),
                Message.build("assistant", [Text("Then print 2 instead.")]),
                Message.build("user", [Text("Thanks, and three?")]),
                Message.build("assistant", [Text("Three works the same way.")])]
    chat = ImportedSession(source="c", session_id="c", format="openai-chat", system="", messages=tuple(messages))
    (one,) = fitting.measure([chat]).sessions
    assert one.tool_calls == 0 and one.text_actions == 0


def test_mixed_transcripts_get_both_families_and_swe_agent_tools_go_to_code_repair_by_role() -> None:
    weights, matched = fitting.mix_weights({"db_query": 30, "db_explain": 10, "kubectl_set_resources": 5,
                                            "kubectl_describe": 20, "kubectl_logs": 20})
    assert set(weights) >= {"db_slow_query", "k8s_crashloop"} and matched == 1.0
    assert fitting.mix_weights({"browse_web": 10}) == ({}, 0.0)
    # SWE-agent's tools: only submit and bash are code_repair's own; the others count by their role.
    weights, matched = fitting.mix_weights({"open": 20, "edit": 30, "python": 25, "find_file": 10, "submit": 10,
                                            "bash": 5}, {"read": 20, "edit": 30, "run": 25, "search": 10})
    assert weights == {"code_repair": 1.0} and matched == pytest.approx(15 / 100)


# Empty outputs, odd names, sessions without calls -----------------------------------------------------------------


def test_an_empty_output_neither_crashes_the_fit_nor_the_generated_sessions() -> None:
    # SWE-agent-shaped small outputs, one empty: the cap (the largest output) is far below code_repair's
    # default; the generated sessions are made with it.
    session = _session(["open", "edit", "python", "submit"], ["x" * 300, "", "y" * 120, "z" * 400])
    fitted = fitting.fit(fitting.measure([session]))
    assert fitted.weights == {"code_repair": 1.0} and fitted.payload_max_bytes == 400
    generated = fitting.generated_measures(fitting.workload_config(fitted), sessions=3)
    assert len(generated.sessions) == 3
    with pytest.raises(fitting.FitError, match="no tool output"):
        fitting.fit(fitting.measure([_session([], [])]), calibrate=False)


def test_every_output_empty_still_fits() -> None:
    fitted = fitting.fit(fitting.measure([_session(["kubectl_logs", "kubectl_get"], ["", ""])]), calibrate=False)
    assert fitted.payload_median_bytes == 64 and any("every tool output is empty" in n for n in fitted.notes)


def test_measure_counts_every_output_and_a_refetch_once_among_distinct_calls() -> None:
    use = {"pod": "a"}
    messages = (
        Message.build("user", [Text("find the pod")], kind="task"),
        Message.build("assistant", [ToolUse("1", "kubectl_logs", use)]),
        Message.build("user", [ToolResult("1", "error", "timed out")]),
        Message.build("assistant", [ToolUse("2", "kubectl_logs", use)]),
        Message.build("user", [ToolResult("2", "success", "x" * 500)]),
        Message.build("assistant", [ToolUse("3", "kubectl_logs", use)]),
        Message.build("user", [ToolResult("3", "success", "x" * 500)]),
        Message.build("assistant", [Text("done")]),
    )
    session = ImportedSession(source="t", session_id="s", format="openai-chat", system="", messages=messages)
    measured = fitting.measure([session])
    (one,) = measured.sessions
    assert (one.model_calls, one.tool_calls, one.distinct_calls) == (4, 3, 1)
    assert measured.payload_bytes == (9, 500, 500) and measured.success_bytes == (500, 500)
    assert measured.error_share == pytest.approx(1 / 3)
    assert measured.tool_mix == {"kubectl_logs": 1.0}


def _renamed(base: ImportedSession, prefix: str) -> ImportedSession:
    messages = tuple(
        Message.build(m.role, [ToolUse(b.id, prefix + b.name, b.input) if isinstance(b, ToolUse) else b
                               for b in m.blocks], meter=m.meter)
        for m in base.messages)
    return replace(base, messages=messages)


def test_a_mix_config_loads_and_says_where_each_value_came_from(tmp_path: Path) -> None:
    sessions = [*fitting.synthetic_sessions("db_slow_query", 3, seed=2, turns=20),
                *fitting.synthetic_sessions("k8s_crashloop", 3, seed=2, turns=20)]
    fitted = fitting.fit(fitting.measure(sessions), calibrate=False)
    assert set(fitted.weights) >= {"db_slow_query", "k8s_crashloop"}
    path = fitting.write_workload(fitted, tmp_path / "workload.toml", sessions=3)
    text = path.read_text()
    (entry,) = load_config(path).scenarios
    assert entry.name == "mix" and entry.params["turns"] == fitted.turns
    for key in ("turns", "payload_median_bytes", "payload_sigma", "payload_max_bytes"):
        before = text.split(f"\n{key} = ")[0].splitlines()[-1]
        assert before.startswith("# "), key
    assert tomllib.loads(text) == fitting.workload_config(fitted, sessions=3)


def test_generated_measures_replay_the_config() -> None:
    config = {"sessions": 10, "seed": 1, "scenarios": [{"name": "k8s_crashloop", "turns": 20}]}
    calls: list[tuple[int, int]] = []
    generated = fitting.generated_measures(config, sessions=3, progress=lambda done, total: calls.append((done, total)))
    assert [s.distinct_calls for s in generated.sessions] == [20, 20, 20]
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert 0 < generated.observation_share < 1
    assert all(s.growth_per_turn > 0 for s in generated.sessions)


@given(st.text())
def test_toml_string_and_comment_hold_any_text(text: str) -> None:
    """Every text, control characters and lone surrogates included, reads back from a TOML string as itself
    (a lone surrogate, which no UTF-8 text holds, as U+FFFD), and a comment of it stays one comment."""
    expected = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    document = f"{fitting.toml_comment('Note: ' + text)}\nkey = {fitting.toml_string(text)}\n"
    assert tomllib.loads(document) == {"key": expected}


def test_the_written_config_parses_whatever_the_tool_and_file_names_hold(tmp_path: Path) -> None:
    odd = ['get\npods', 'q"uote', "back\\slash", "\x01\x1b[31m\x7f", '"]\n[scenarios]\nname = "x', "\ud800"]
    sessions = [_session(["kubectl_logs", "kubectl_get", *odd], ["x" * 300] * (2 + len(odd)))]
    fitted = fitting.fit(fitting.measure(sessions), calibrate=False)
    assert any("tools no family uses" in note for note in fitted.notes)
    sources = ["tr\nace.json", 'a"b.json', "a, b.json", "cut-\udcff.json"]
    path = fitting.write_workload(fitted, tmp_path / "workload.toml", sessions=3, sources=sources)
    text = path.read_text(encoding="utf-8")
    assert tomllib.loads(text) == fitting.workload_config(fitted, sessions=3)
    assert '"tr\\nace.json", "a\\"b.json", "a, b.json", "cut-\ufffd.json"' in text
    assert load_config(path).scenarios[0].name in fitted.weights or load_config(path).scenarios[0].name == "mix"


def test_sessions_without_a_model_call_are_measured_as_such() -> None:
    task_only = ImportedSession(source="t", session_id="t", format="anthropic", system="",
                                messages=(Message.build("user", [Text("find the pod")], kind="task"),))
    measured = fitting.measure([task_only, _session(["kubectl_logs"], ["x" * 300])])
    assert [(s.model_calls, s.tool_calls) for s in measured.sessions] == [(0, 0), (2, 1)]
    assert fitting.fit(measured, calibrate=False).lengths.n == 1  # the session without a call has no length


# The side-by-side ---------------------------------------------------------------------------------------------


def _measures(lengths: list[int], payloads: list[int], roles: dict[str, int], *, results: int, messages: int,
              growth: float, tokens: int) -> fitting.WorkloadMeasures:
    sessions = tuple(fitting.SessionMeasures(f"s{i}", n + 1, n, n, growth, tokens) for i, n in enumerate(lengths))
    calls = tuple((f"tool_{role}", role, n) for role, n in sorted(roles.items()))
    return fitting.WorkloadMeasures(sessions, tuple(payloads), calls, len(payloads), 0, results, messages,
                                    tuple(payloads))


def test_the_side_by_side_puts_each_measure_with_its_gap_and_verdict() -> None:
    measured = _measures([10, 11, 12], [100, 500, 900], {"read": 50, "edit": 30, "run": 20}, results=600,
                         messages=1000, growth=400.0, tokens=30_000)
    generated = _measures([11, 13, 15], [100, 800, 900], {"read": 40, "edit": 40, "run": 20}, results=650,
                          messages=1000, growth=500.0, tokens=30_000)
    rows = {row.measure: row for row in fitting.agreement(measured, generated)}
    length = rows["median session length, tool calls"]
    assert (length.measured, length.generated, length.within) == (11.0, 13.0, True)
    assert length.gap == pytest.approx(2 / 11)
    payload = rows["payload median, bytes"]
    assert (payload.measured, payload.generated, payload.within) == (500.0, 800.0, False)
    share = rows["observation share of input tokens"]
    assert (share.measured, share.generated, share.within) == (0.6, 0.65, True)
    growth = rows["context growth per call, tokens (median)"]
    assert growth.gap == pytest.approx(0.25) and growth.within is False
    assert rows["tokens per session, median"].within is True
    assert rows["edit share of tool calls"].gap == pytest.approx(1 / 3)
    assert rows["search share of tool calls"].gap == 0.0  # none on either side
    distance = rows["tool-role mix, total variation distance"]
    assert distance.generated == pytest.approx(0.1) and distance.within is True
    assert {"payload spread, sigma of log bytes", "session length spread, sigma of log calls",
            "payload 99th percentile, bytes"} <= set(rows)
    table = fitting.agreement_markdown(list(rows.values()))
    assert table.splitlines()[0] == ("| measure | measured (transcripts) | generated (fitted config) | gap | "
                                     "within 20% |")
    assert "| median session length, tool calls | 11.0 | 13.0 | +18% | yes |" in table
    assert "| payload median, bytes | 500 | 800 | +60% | no |" in table
    assert "| observation share of input tokens | 60.0% | 65.0% | +8% | yes |" in table
    assert "| tool-role mix, total variation distance | 0.000 | 0.100 | 0.100 | yes |" in table


def test_a_missing_side_is_not_a_verdict() -> None:
    row = fitting.Agreement("x", math.nan, 3.0, "calls")
    assert row.within is None and fitting.agreement_cells(row)[3:] == ["n/a", "n/a"]
    assert fitting.Agreement("x", 0.0, 1.0, "share").within is False


def test_the_side_by_side_gets_enough_generated_sessions_for_its_medians(hand_made: list[ImportedSession]) -> None:
    fitted = fitting.fit(fitting.measure(hand_made), calibrate=False)
    assert fitting.comparison_sessions(fitted) == 200  # 2,000 / 4 calls, at most 200
    assert fitting.comparison_sessions(replace(fitted, turns_measured=(500.0, 400.0, 600.0))) == 40


def test_report_inputs_hold_the_side_by_side_and_numbers_only_params(hand_made: list[ImportedSession]) -> None:
    fitted = fitting.fit(fitting.measure(hand_made), calibrate=False)
    data = fitting.report_inputs(fitted, fitting.measure(hand_made))
    assert all(isinstance(v, int | float) for v in data["params"].values())
    assert data["params"]["role_weights.run"] == 0.4167 and data["params"]["turns_median"] == 4
    assert all(row["within"] for row in data["agreement"])  # the measures against themselves


# The real SWE-agent sessions --------------------------------------------------------------------------------------


def test_the_fitted_workload_resembles_the_real_swe_agent_sessions() -> None:
    if not REAL_SWE_AGENT.is_dir():
        pytest.skip(f"{REAL_SWE_AGENT} is not present")
    sessions = load_traces(sorted(REAL_SWE_AGENT.glob("*.json")), "openai-chat")
    measured = fitting.measure(sessions)
    assert measured.role_mix["other"] < 0.25  # SWE-agent's tools get their roles
    fitted = fitting.fit(measured)
    assert fitted.weights == {"code_repair": 1.0} and fitted.turns_median is not None
    sessions_generated = fitting.comparison_sessions(fitted)
    assert sessions_generated == 182  # 2,000 outputs at the measured median of 11 calls
    generated = fitting.generated_measures(fitting.workload_config(fitted), sessions=sessions_generated)
    rows = {row.measure: row for row in fitting.agreement(measured, generated, tolerance=REAL_TOLERANCE)}
    for measure in ("median session length, tool calls", "payload median, bytes", "observation share of input tokens"):
        assert rows[measure].within, fitting.agreement_markdown(list(rows.values()))
    assert statistics.median(generated.session_lengths) < 20  # not the old floor of every session
