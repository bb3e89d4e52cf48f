"""Workload fitting (harness/run/fitting.py): a fit recovers the params of transcripts made by ctxbench's own
generators, the Kolmogorov-Smirnov p-value tells a lognormal from a bimodal sample, the tool mix picks the
family, and the written config loads and runs.

The recovery tolerances are fixed here, before any fit is looked at, from what the generators do:
- Payloads: a family's outputs are not all drawn from its lognormal (whole table rows, log dumps several
  times the median, fixed-size confirmations), so the fit calibrates by simulation (`fitting.fit`). 24
  sessions of 40 calls give about 900 payloads (the log-mean's standard error about 0.04) and the
  calibration's 40 scripts as many again; the median is asked within 20% and sigma within 0.2, several
  standard errors, which leaves room for what the calibration cannot correct exactly.
- Turns: the generators make exactly ``turns`` steps, and the fit counts distinct successful calls, so a
  session's faults and re-fetches do not count: within 10%.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.run import fitting
from harness.run.config import load_config
from harness.run.traces import ImportedSession

MEDIAN_TOLERANCE = 0.20
SIGMA_TOLERANCE = 0.20
TURNS_TOLERANCE = 0.10
#: Sessions per recovery case: enough payloads for the tolerances above, few enough to stay fast.
RECOVERY_SESSIONS = 24

#: (family, generator params) whose values a fit must recover.
RECOVERY_CASES = {
    "k8s-long-payloads": ("k8s_crashloop", {"turns": 40, "payload_median_bytes": 3000, "payload_sigma": 1.0}),
    "k8s-small-payloads": ("k8s_crashloop", {"turns": 80, "payload_median_bytes": 800, "payload_sigma": 0.6}),
}


@pytest.mark.parametrize(("family", "params"), list(RECOVERY_CASES.values()), ids=list(RECOVERY_CASES))
def test_fit_recovers_the_generator_params(family: str, params: dict[str, Any]) -> None:
    sessions = fitting.synthetic_sessions(family, RECOVERY_SESSIONS, seed=11, **params)
    fitted = fitting.fit(fitting.measure(sessions))
    assert abs(fitted.payload_median_bytes / params["payload_median_bytes"] - 1) <= MEDIAN_TOLERANCE, fitted
    assert abs(fitted.payload_sigma - params["payload_sigma"]) <= SIGMA_TOLERANCE, fitted
    assert abs(fitted.turns / params["turns"] - 1) <= TURNS_TOLERANCE, fitted
    assert fitted.weights == {family: 1.0}
    assert not fitted.fallback


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


def test_mixed_transcripts_get_both_families_and_unknown_tools_fall_back_to_the_default_mix() -> None:
    weights, matched = fitting.mix_weights({"db_query": 30, "db_explain": 10, "kubectl_set_resources": 5,
                                            "kubectl_describe": 20, "kubectl_logs": 20})
    assert set(weights) >= {"db_slow_query", "k8s_crashloop"} and matched == 1.0
    assert fitting.mix_weights({"browse_web": 10}) == ({}, 0.0)


def _session_without_known_tools(base: ImportedSession) -> ImportedSession:
    from dataclasses import replace

    from harness.core.messages import Message, ToolUse

    messages = tuple(
        Message.build(m.role, [ToolUse(b.id, "browse_" + b.name, b.input) if isinstance(b, ToolUse) else b
                               for b in m.blocks], meter=m.meter)
        for m in base.messages)
    return replace(base, messages=messages)


def test_the_written_config_loads_and_says_where_each_value_came_from(tmp_path: Path) -> None:
    sessions = fitting.synthetic_sessions("db_slow_query", 4, seed=2, turns=20)
    fitted = fitting.fit(fitting.measure([_session_without_known_tools(s) for s in sessions]), calibrate=False)
    assert fitted.fallback and any("default mix" in note for note in fitted.notes)
    path = fitting.write_workload(fitted, tmp_path / "workload.toml", sessions=3)
    text = path.read_text()
    config = load_config(path)
    (entry,) = config.scenarios
    assert entry.name == "mix" and entry.params["turns"] == fitted.turns
    for key in ("turns", "payload_median_bytes", "payload_sigma", "payload_max_bytes"):
        before = text.split(f"\n{key} = ")[0].splitlines()[-1]
        assert before.startswith("# "), key
    assert "# Note: families: no tool" in text
    assert tomllib.loads(text) == fitting.workload_config(fitted, sessions=3)


def test_generated_measures_replay_the_config() -> None:
    config = {"sessions": 10, "seed": 1, "scenarios": [{"name": "k8s_crashloop", "turns": 20}]}
    calls: list[tuple[int, int]] = []
    generated = fitting.generated_measures(config, sessions=3, progress=lambda done, total: calls.append((done, total)))
    assert [s.distinct_calls for s in generated.sessions] == [20, 20, 20]
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert 0 < generated.observation_share < 1
    assert all(s.growth_per_turn > 0 for s in generated.sessions)


def test_measure_counts_a_refetch_once_and_errors_apart() -> None:
    from harness.core.messages import Message, Text, ToolResult, ToolUse

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
    assert measured.payload_bytes == (500,)
    assert measured.error_share == pytest.approx(1 / 3)
    assert measured.tool_mix == {"kubectl_logs": 1.0}


# Names of any character, empty outputs, sessions without calls ---------------------------------------------------


@given(st.text())
def test_toml_string_and_comment_hold_any_text(text: str) -> None:
    """Every text, control characters and lone surrogates included, reads back from a TOML string as itself
    (a lone surrogate, which no UTF-8 text holds, as U+FFFD), and a comment of it stays one comment."""
    expected = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    document = f"{fitting.toml_comment('Note: ' + text)}\nkey = {fitting.toml_string(text)}\n"
    assert tomllib.loads(document) == {"key": expected}


def _session(tools: list[str], outputs: list[str], name: str = "s") -> ImportedSession:
    messages = [Message.build("user", [Text("find the pod")], kind="task")]
    for i, (tool, output) in enumerate(zip(tools, outputs, strict=True)):
        messages.append(Message.build("assistant", [ToolUse(str(i), tool, {"n": i})]))
        messages.append(Message.build("user", [ToolResult(str(i), "success", output)]))
    messages.append(Message.build("assistant", [Text("done")], kind="final"))
    return ImportedSession(source=name, session_id=name, format="anthropic", system="", messages=tuple(messages))


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
    assert load_config(path).scenarios[0].params["turns"] == fitted.turns


def test_empty_tool_outputs_are_outputs_of_one_byte() -> None:
    assert fitting.fit_lognormal([0, 0, 0]).median == 1.0
    measured = fitting.measure([_session(["kubectl_logs", "kubectl_get", "kubectl_logs"], ["", "x" * 400, "abc"])])
    assert sorted(measured.payload_bytes) == [0, 3, 400]
    fitted = fitting.fit(measured, calibrate=False)
    assert fitted.payload.n == 3 and math.isfinite(fitted.payload.sigma)


def test_sessions_without_a_model_call_are_measured_as_such_and_fitting_needs_outputs() -> None:
    task_only = ImportedSession(source="t", session_id="t", format="anthropic", system="",
                                messages=(Message.build("user", [Text("find the pod")], kind="task"),))
    measured = fitting.measure([task_only, _session(["kubectl_logs"], ["x" * 300])])
    assert [(s.model_calls, s.tool_calls) for s in measured.sessions] == [(0, 0), (2, 1)]
    assert fitting.fit(measured, calibrate=False).turns >= 20
    with pytest.raises(fitting.FitError, match="no successful tool result"):
        fitting.fit(fitting.measure([task_only]), calibrate=False)
