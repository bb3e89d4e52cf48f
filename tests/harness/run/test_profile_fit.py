"""Profile calibration (`harness.run.profile_fit`): each fit recovers a known truth from synthetic observations
within its interval, leaves what it cannot identify at the preset (saying why), and the written profile reads
back as the fitted one."""

from __future__ import annotations

import dataclasses
import itertools
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from harness.core.messages import ToolUse, block_text
from harness.run.fitting import synthetic_sessions
from harness.run.profile_fit import (
    FORMATS_WITHOUT_ERROR_STATUS,
    LatencyCall,
    ProfileFitError,
    ToolOutcome,
    calibrate,
    error_bins,
    fit_error_growth,
    fit_latency,
    latency_check,
    measure,
    profile_toml,
    wilson_interval,
)
from harness.run.traces import ImportedSession
from harness.run.traces.normal import RecordedUsage
from harness.sim.profiles import Profile, load_profile, profile
from reports.stats import wilson_interval as reports_wilson

#: A truth whose every term moves a call's latency by a second or more over the drawn token counts, so that
#: 300 calls can tell each from none.
TRUE_LATENCY = profile("mid", base_s=0.6, b_uncached=5e-5, b_cached=3e-5, decode_tps=90.0, sigma=0.3)


def latency_calls(truth: Profile, n: int, seed: int = 1, *, cached: bool = True) -> list[LatencyCall]:
    """``n`` calls with spread token counts, each latency drawn from ``truth``'s own formula."""
    rng = np.random.default_rng(seed)
    calls = []
    for _ in range(n):
        prompt = int(rng.integers(2_000, 120_000))
        hit = int(prompt * rng.uniform(0, 0.9)) if cached else 0
        output = int(rng.integers(20, 800))
        seconds = truth.model_seconds(prompt - hit, hit, output, prompt, float(rng.standard_normal()))
        calls.append(LatencyCall(prompt - hit, hit, output, prompt, seconds))
    return calls


def test_latency_fit_recovers_the_formula_it_was_drawn_from() -> None:
    fit = fit_latency(latency_calls(TRUE_LATENCY, 300), profile("frontier"))
    assert set(fit.values) == {"base_s", "b_uncached", "b_cached", "decode_tps", "sigma"}
    assert not fit.kept
    for name, fitted in fit.values.items():
        truth = getattr(TRUE_LATENCY, name)
        assert fitted.low <= truth <= fitted.high, (name, truth, fitted)
        assert fitted.n == 300


def test_latency_coefficients_without_enough_calls_stay_at_the_preset() -> None:
    preset = profile("frontier")
    fit = fit_latency(latency_calls(TRUE_LATENCY, 7), preset)
    # 7 calls at 3 per coefficient: the intercept and one slope.
    assert set(fit.values) == {"base_s", "decode_tps", "sigma"}
    assert "too few calls" in fit.kept["b_uncached"] and "too few calls" in fit.kept["b_cached"]
    assert fit_latency(latency_calls(TRUE_LATENCY, 2), preset).values == {}


def test_a_slope_these_calls_cannot_tell_from_none_stays_at_the_preset() -> None:
    faint = TRUE_LATENCY.model_copy(update={"b_cached": 1e-7})
    fit = fit_latency(latency_calls(faint, 300), profile("frontier"))
    assert "b_cached" not in fit.values
    assert "interval reaches 0" in fit.kept["b_cached"]
    assert {"base_s", "b_uncached", "decode_tps", "sigma"} <= set(fit.values)


def test_a_token_count_that_never_varies_is_not_identifiable() -> None:
    fit = fit_latency(latency_calls(TRUE_LATENCY, 120, cached=False), profile("frontier"))
    assert "b_cached" not in fit.values
    assert "does not vary" in fit.kept["b_cached"]
    assert TRUE_LATENCY.b_uncached == pytest.approx(fit.values["b_uncached"].value, rel=0.5)


def test_latency_check_passes_for_the_fit_and_fails_for_a_wrong_profile() -> None:
    calls = latency_calls(TRUE_LATENCY, 200, seed=3)
    fit = fit_latency(calls, profile("frontier"))
    fitted = profile("frontier", **{k: v.value for k, v in fit.values.items()})
    assert latency_check(calls, fitted) is not None
    assert latency_check(calls, fitted).within  # type: ignore[union-attr]
    slow = latency_check(calls, profile("frontier", base_s=30.0))
    assert slow is not None and not slow.within and slow.gap > 1


def outcomes_from(base: float, growth: float, n: int, seed: int = 2) -> list[ToolOutcome]:
    """``n`` tool outcomes at log-spread context lengths, errors drawn from the mock's curve (noise 0)."""
    rng = np.random.default_rng(seed)
    truth = profile("frontier", p_malformed_base=base, g_L=growth)
    out = []
    for i in range(n):
        tokens = int(np.exp(rng.uniform(np.log(1_000), np.log(160_000))))
        error = bool(rng.uniform() < truth.p_malformed(tokens, 0.0))
        out.append(ToolOutcome(f"s{i // 20}", "m", "tool", tokens, 0.0, error))
    return out


def test_error_growth_fit_recovers_base_rate_and_growth() -> None:
    outcomes = outcomes_from(0.03, 0.6, 3_000)
    fit = fit_error_growth(outcomes, profile("frontier"))
    base, growth = fit.values["p_malformed_base"], fit.values["g_L"]
    assert base.low <= 0.03 <= base.high
    assert growth.low <= 0.6 <= growth.high
    assert base.n == growth.n == 3_000
    assert "any error status" in base.how


def test_no_errors_or_no_long_contexts_leave_the_fields_at_the_preset() -> None:
    clean = [dataclasses.replace(o, error=False) for o in outcomes_from(0.03, 0.6, 60)]
    fit = fit_error_growth(clean, profile("frontier"))
    assert fit.values == {}
    assert "no errors in 60" in fit.kept["p_malformed_base"]
    short = [dataclasses.replace(o, context_tokens=min(o.context_tokens, 3_000)) for o in outcomes_from(0.2, 0, 200)]
    fit = fit_error_growth(short, profile("frontier"))
    assert "p_malformed_base" in fit.values and "g_L" not in fit.values
    assert "not identifiable" in fit.kept["g_L"]


def test_error_bins_hold_enough_results_each_and_wilson_intervals() -> None:
    outcomes = outcomes_from(0.05, 0.5, 203)
    bins = error_bins(outcomes)
    assert 1 < len(bins) <= 8
    assert sum(b.outcomes for b in bins) == 203
    assert all(b.outcomes >= 5 for b in bins)
    assert all(a.high_tokens < b.low_tokens for a, b in itertools.pairwise(bins))
    for b in bins:
        assert (b.rate_low, b.rate_high) == pytest.approx(reports_wilson(b.errors, b.outcomes))
    tied = [dataclasses.replace(o, context_tokens=5_000) for o in outcomes[:12]] + outcomes[12:20]
    tied_bins = error_bins(tied)
    # The 12 results at one length never straddle two bins.
    assert [b.low_tokens <= 5_000 <= b.high_tokens for b in tied_bins].count(True) == 1
    assert sum(b.outcomes for b in tied_bins) == 20 and all(b.outcomes >= 5 for b in tied_bins)
    assert error_bins(outcomes[:4]) == []
    assert wilson_interval(0, 10) == pytest.approx(reports_wilson(0, 10))


def with_usage(session: ImportedSession, *, ratio: float, extra_output: int, counted: list[int]) -> ImportedSession:
    """The session with per-call usage: recorded input = counted / ratio, output = tool-call tokens + extra."""
    positions = [i for i, m in enumerate(session.messages) if i > 0 and m.role == "assistant"]
    usage = []
    for k, position in enumerate(positions):
        message = session.messages[position]
        tools = sum(message.meter.tokenizer.count(block_text(b)) for b in message.blocks if isinstance(b, ToolUse))
        usage.append(RecordedUsage(call=position, input_tokens=round(counted[k] / ratio),
                                   output_tokens=tools + extra_output, cached_tokens=counted[k] // 2,
                                   latency_s=1.0 + k * 0.1))
    return dataclasses.replace(session, usage=tuple(usage), model="gpt-4o")


def test_measure_and_calibrate_known_ratio_and_thought_tokens() -> None:
    sessions = synthetic_sessions("k8s_crashloop", 3, seed=4, fmt="anthropic")
    bare = measure(sessions)
    counted = {s: [c.counted_input for c in bare.calls if c.session == s] for s in dict.fromkeys(
        c.session for c in bare.calls)}
    keyed = [with_usage(s, ratio=0.8, extra_output=77, counted=counted[f"{s.source}#{s.session_id}"])
             for s in sessions]
    obs = measure(keyed)
    assert obs.outcomes and all(o.context_tokens > 0 for o in obs.outcomes)
    cal = calibrate(obs, "frontier")
    (ratio,) = cal.token_ratios.values()
    assert ratio.value == pytest.approx(0.8, rel=1e-3)
    assert ratio.n == len(obs.calls)
    assert cal.profile.thought_tokens == 77
    assert cal.fields["thought_tokens"].source == "fitted"
    (share,) = cal.cache_shares.values()
    assert 0.3 < share.value < 0.5 and cal.profile.caching
    assert cal.fields["price_in"].source == "price table"  # gpt-4o is in the price table
    assert cal.fields["p_max"].source == "preset" and "labelled look-ups" in cal.fields["p_max"].why


def test_results_of_formats_without_error_status_are_left_out() -> None:
    sessions = synthetic_sessions("k8s_crashloop", 2, seed=5, fmt="openai-chat")
    assert "openai-chat" in FORMATS_WITHOUT_ERROR_STATUS
    obs = measure(sessions)
    assert obs.outcomes == () and obs.results_without_status > 0
    assert any("no error status" in note for note in obs.notes)


def test_nothing_to_fit_is_an_error_naming_the_traces() -> None:
    obs = measure(synthetic_sessions("k8s_crashloop", 1, seed=6, fmt="openai-chat"))
    with pytest.raises(ProfileFitError, match=r"no recorded usage in a\.json"):
        calibrate(obs, "frontier", sources=["a.json"])


def test_the_profile_file_reads_back_and_marks_every_field(tmp_path: Path) -> None:
    sessions = synthetic_sessions("k8s_crashloop", 3, seed=4, fmt="anthropic")
    bare = measure(sessions)
    keyed = [with_usage(s, ratio=0.9, extra_output=50,
                        counted=[c.counted_input for c in bare.calls if c.session == f"{s.source}#{s.session_id}"])
             for s in sessions]
    cal = calibrate(measure(keyed), "mid")
    text = profile_toml(cal, sources=["x"])
    assert text == profile_toml(calibrate(measure(keyed), "mid"), sources=["x"])  # deterministic
    path = tmp_path / "calibrated.toml"
    path.write_text(text)
    loaded = load_profile(path)
    assert loaded == cal.profile
    table = tomllib.loads(text)
    lines = {line.split(" = ")[0]: line for line in text.splitlines() if " = " in line and not line.startswith("#")}
    for name in Profile.model_fields:
        if name == "name":
            continue
        line = lines.get(name) or next(t for t in text.splitlines() if t.startswith(f"# {name} is unset"))
        source = cal.fields[name].source
        assert ("# fitted:" in line) == (source == "fitted"), line
        assert ("# preset mid:" in line) == (source == "preset"), line
    assert "95% [" in lines["base_s"] and "n = " in lines["base_s"]
    assert math.isfinite(table["sigma"])
