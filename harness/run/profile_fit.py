"""Profile calibration: measure what recorded agent transcripts tell about a mock-model profile
(`harness.sim.profiles.Profile`), fit those fields with an interval and a number of observations, and write a
complete profile TOML that `harness.sim.profiles.load_profile` (``ctxbench run --model FILE``) reads.

`measure` reads imported sessions (`harness.run.traces`) into `Observations`: one `CallObservation` per agent
call (ctxbench's count of its input, exactly as ``ctxbench replay`` counts it: `harness.sim.recorded.account`
under ``unbounded`` with the system prompt and tool schemas of `harness.run.accounting.prompt_prefix`, beside
the provider's recorded usage of `harness.run.traces.normal.RecordedUsage`), one `SessionTotal` per session
whose trace records a session total only (SWE-agent's ``model_stats``), and one `ToolOutcome` per tool result
(its recorded status against the context length of the call that made it).

`calibrate` fits, each value a `FittedValue` (estimate, 95% interval, n, how):

1. the token-count ratio, ctxbench's count over the recorded ``input_tokens``, per model name: pooled (sum over
   sum), interval by resampling sessions; observed only (no profile field holds it);
2. output tokens per call (mean and median) and ``thought_tokens``: the mock's reply is its thought, padded to
   ``thought_tokens`` (`harness.sim.model.MockModel.thought`), plus the tool call's text (the tool's name and
   its JSON arguments, `harness.core.messages.block_text`), so ``thought_tokens`` is the median over calls of
   the recorded output tokens minus ctxbench's count of the call's tool-call blocks;
3. latency, `Profile.model_seconds`: ``(base_s + b_uncached * U + b_cached * C + O / decode_tps * (1 + 0.15 *
   T / 100000)) * exp(sigma * z)`` with z standard normal, a lognormal factor of median 1 and mean exp(sigma**2
   / 2). Least squares on the linear scale of the recorded ``latency_s`` against the recorded uncached and
   cached input and output tokens (T the recorded input), coefficients non-negative (exact NNLS over the
   subsets of the few regressors), which fits the mean exp(sigma**2 / 2) * (...); sigma is the spread of
   log(latency / fitted mean), and the coefficients are divided by exp(sigma**2 / 2). A coefficient is fitted
   only with `MIN_CALLS_PER_COEFFICIENT` calls per fitted coefficient and a regressor that varies; otherwise it
   stays at the preset and the fit works around it; so does a slope whose interval reaches 0 (the calls cannot
   tell its effect from none). Timestamps are not used: the gap between two calls holds the tool's time as
   well as the model's. The check (`LatencyCheck`): the written profile's mean
   latency over the recorded calls (its own formula on their token counts) against the recorded mean;
4. cache-hit shares, cached over input tokens per model, observed only; ``caching`` is set on when hits are
   recorded (a provider caches only what its client marks, so no hits does not mean no cache);
5. tool errors against the context length at the call: a recorded error status (whatever its cause: a tool's
   failure, a refused argument, a syntax error) counts, so the fitted ``p_malformed_base`` and ``g_L`` (the
   mock's ``p_malformed(L, noise) = min(0.5, base * (1 + g_L * log2(max(L, 4096) / 4096)) * (1 + g_N *
   noise))``, g_N kept at the preset, noise the tool-output share of the prompt) are an upper bound on
   malformed calls. Results read from formats that have no error status (`FORMATS_WITHOUT_ERROR_STATUS`) are
   left out. Binned by rank into bins of at least `MIN_BIN_OUTCOMES`, each with its Wilson interval; the two
   fields by maximum likelihood on a grid, intervals by resampling outcomes;
6. prices and cache rules from `harness.sim.prices` when the traces' main model is in the price table; every
   other field (recall curves, summaries, loops, limits) stays at the preset, and the profile says so field by
   field (`FIELD_REASONS`).

Every resampling draws from a fixed seed (`BOOTSTRAP_SEED`), so the same traces give the same file.
"""

from __future__ import annotations

import hashlib
import math
import statistics
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
import tomli_w

from harness.core.messages import Message, ToolResult, ToolUse, block_text
from harness.run.accounting import prompt_prefix
from harness.run.fitting import toml_comment, toml_string
from harness.run.traces import ImportedSession
from harness.sim.prices import price_for_model
from harness.sim.profiles import Profile, profile
from harness.sim.recorded import account
from strategies import create

__all__ = [
    "BOOTSTRAP_SEED",
    "FORMATS_WITHOUT_ERROR_STATUS",
    "Calibration",
    "CallObservation",
    "ErrorBin",
    "FittedValue",
    "LatencyCheck",
    "Observations",
    "ProfileFitError",
    "SessionTotal",
    "ToolOutcome",
    "calibrate",
    "error_bins",
    "fit_error_growth",
    "fit_latency",
    "measure",
    "profile_toml",
    "report_inputs",
    "wilson_interval",
]

#: Seed of every resampling: the same observations give the same intervals.
BOOTSTRAP_SEED = 20_260_601
#: Resamples per interval.
RESAMPLES = 400
#: Two-sided coverage of every interval.
CONFIDENCE = 0.95
#: Latency: calls needed per fitted coefficient (the intercept counts), and the fewest calls for any fit.
MIN_CALLS_PER_COEFFICIENT = 3
MIN_LATENCY_CALLS = 3
#: A latency regressor whose coefficient of variation is below this does not vary enough to be told apart
#: from the base seconds.
MIN_REGRESSOR_VARIATION = 0.05
#: Per-call fits (output tokens) need at least this many calls.
MIN_CALLS = 3
#: The fewest tool outcomes in a bin of the error-rate table, and the most bins.
MIN_BIN_OUTCOMES = 5
MAX_BINS = 8
#: The mock's malformed-call curve starts growing at this prompt length (`Profile.p_malformed`).
GROWTH_FROM_TOKENS = 4096
#: The name a model without one in its trace is listed under.
UNNAMED_MODEL = "(unnamed)"
#: Formats whose readers give every tool result ``success`` (their docstrings: the format has no error flag),
#: so their results say nothing about tool errors.
FORMATS_WITHOUT_ERROR_STATUS = frozenset(
    {"openai-chat", "openai-responses", "litellm-logs", "swe-agent", "swe-agent-steps", "mini-swe-agent"})
#: The latency coefficients, in the order they are admitted to the fit when calls are few.
LATENCY_FIELDS = ("base_s", "decode_tps", "b_uncached", "b_cached")

#: Why a field a transcript cannot tell stays at the preset (the profile's comments and the report say it).
FIELD_REASONS: dict[str, str] = {
    "window_tokens": "a transcript shows the prompts sent, not the model's window",
    "p_max": "recall needs labelled look-ups (which value a call needed, and whether it found it)",
    "L_half": "the recall curve needs labelled look-ups",
    "k": "the recall curve needs labelled look-ups",
    "L_half_literal": "the recall curve needs labelled look-ups",
    "k_literal": "the recall curve needs labelled look-ups",
    "D0": "the position trough needs labelled look-ups at known depths",
    "position_mean_normalise": "a modelling convention, not a measurement",
    "g_N": "the raw-output share's effect is not separable from length in these fits",
    "p_fix": "needs each error's cause and the next call's repair, which traces do not label",
    "p_repeat_error": "needs each error's cause, which traces do not label",
    "p_confabulate": "needs to know which values were missing from view",
    "p_note": "measured once on public transcripts (docs/validation/measure_p_note.py)",
    "p_summary_error": "a transcript holds no graded summaries",
    "p_record_drop": "a transcript holds no graded summaries",
    "p_nudge_follow": "a transcript holds no loop nudges",
    "p_shortcut": "needs the plan of steps the agent skipped",
    "keep_max": "a transcript holds no graded summaries",
    "max_summary_tokens": "a transcript holds no summaries",
    "price_in": "the traces' model is not in the price table (harness/sim/prices.toml)",
    "price_cache_read": "the traces' model is not in the price table",
    "price_cache_write": "the traces' model is not in the price table",
    "price_out": "the traces' model is not in the price table",
    "cache_min_tokens": "a provider caches what its client marks: the threshold is not observable",
    "cache_ttl_s": "needs idle gaps between calls around the expiry",
    "cache_granularity": "a provider's rule, not observable from a few counts",
    "p_throttle": "throttled calls are not recorded as such",
    "rpm": "throttling limits are not recorded",
    "tpm": "throttling limits are not recorded",
    "max_output_reserve": "a runtime setting, not a measurement",
    "summarizer_prompt_tokens": "a transcript holds no summary calls",
    "max_turns": "a runtime setting, not a measurement",
    "max_attempts_per_step": "a runtime setting, not a measurement",
}


class ProfileFitError(ValueError):
    """Nothing in the traces can be fitted; the message is one line."""


# Observations ------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class CallObservation:
    """One agent call of a recorded session: ctxbench's count and what the trace recorded about it."""

    session: str
    model: str
    format: str
    #: ctxbench's count of the call's input (as ``ctxbench replay`` counts it).
    counted_input: int
    #: ctxbench's count of the call's tool-call blocks (name and JSON arguments).
    tool_call_tokens: int
    #: ctxbench's count of the tool outputs in the call's prompt, over ``counted_input``.
    noise: float
    recorded_input: int | None = None
    recorded_output: int | None = None
    recorded_cached: int | None = None
    latency_s: float | None = None
    timestamp: float | None = None


@dataclass(frozen=True, slots=True)
class SessionTotal:
    """A session whose trace records one total for all its calls."""

    session: str
    model: str
    calls: int
    counted_input: int
    recorded_input: int | None
    recorded_output: int | None
    #: ctxbench's count of every tool-call block of the session.
    tool_call_tokens: int


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool result: whether its recorded status is an error, and the context length of the call that made
    the tool call (ctxbench's count of that call's input)."""

    session: str
    model: str
    tool: str
    context_tokens: int
    noise: float
    error: bool


@dataclass(frozen=True, slots=True)
class Observations:
    calls: tuple[CallObservation, ...]
    totals: tuple[SessionTotal, ...]
    outcomes: tuple[ToolOutcome, ...]
    sessions: int
    #: Tool results left out because their format has no error status.
    results_without_status: int = 0
    notes: tuple[str, ...] = ()


def _model_name(session: ImportedSession) -> str:
    return session.model or UNNAMED_MODEL


def _tool_call_tokens(message: Message) -> int:
    count = message.meter.tokenizer.count
    return sum(count(block_text(b)) for b in message.blocks if isinstance(b, ToolUse))


def _measure_session(session: ImportedSession) -> tuple[list[CallObservation], SessionTotal | None,
                                                        list[ToolOutcome], int]:
    messages = session.messages
    if not messages:
        return [], None, [], 0
    tokenizer = messages[0].meter.tokenizer
    system_tokens = sum(tokenizer.count(text) for text in prompt_prefix(session))
    # The oracle's window (10**9 tokens) holds any recorded prompt: every call is counted whole.
    done = account(messages, create("unbounded"), profile("oracle"), system_tokens=system_tokens,
                   system=session.system)
    counted = [row["input_tokens"] for row in done.calls if row["call_kind"] == "agent"]
    positions = [i for i, m in enumerate(messages) if i > 0 and m.role == "assistant"][:len(counted)]
    usage = {u.call: u for u in session.usage if u.call is not None}
    model, name = _model_name(session), f"{session.source}#{session.session_id}"
    calls: list[CallObservation] = []
    outcomes: list[ToolOutcome] = []
    without_status = 0
    for k, position in enumerate(positions):
        raw_before = sum(m.raw_tokens for m in messages[:position])
        noise = raw_before / counted[k] if counted[k] else 0.0
        u = usage.get(position)
        calls.append(CallObservation(
            session=name, model=model, format=session.format, counted_input=counted[k],
            tool_call_tokens=_tool_call_tokens(messages[position]), noise=noise,
            recorded_input=u.input_tokens if u else None, recorded_output=u.output_tokens if u else None,
            recorded_cached=u.cached_tokens if u else None, latency_s=u.latency_s if u else None,
            timestamp=u.timestamp if u else None))
        uses = {b.id: b.name for b in messages[position].blocks if isinstance(b, ToolUse)}
        if not uses or position + 1 >= len(messages):
            continue
        for block in messages[position + 1].blocks:
            if isinstance(block, ToolResult) and block.tool_use_id in uses:
                if session.format in FORMATS_WITHOUT_ERROR_STATUS:
                    without_status += 1
                    continue
                outcomes.append(ToolOutcome(name, model, uses[block.tool_use_id], counted[k], noise,
                                            block.status == "error"))
    totals = [u for u in session.usage if u.call is None]
    total = None
    if totals:
        total = SessionTotal(
            session=name, model=model, calls=sum(u.calls for u in totals), counted_input=sum(counted),
            recorded_input=_sum_or_none(u.input_tokens for u in totals),
            recorded_output=_sum_or_none(u.output_tokens for u in totals),
            tool_call_tokens=sum(c.tool_call_tokens for c in calls))
    return calls, total, outcomes, without_status


def _sum_or_none(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def measure(sessions: Sequence[ImportedSession], *,
            progress: Callable[[int, int], None] | None = None) -> Observations:
    """The calls, session totals and tool outcomes of ``sessions`` (``progress(done, total)`` after each)."""
    calls: list[CallObservation] = []
    totals: list[SessionTotal] = []
    outcomes: list[ToolOutcome] = []
    without_status = 0
    for i, session in enumerate(sessions):
        c, total, o, w = _measure_session(session)
        calls += c
        outcomes += o
        without_status += w
        if total is not None:
            totals.append(total)
        if progress is not None:
            progress(i + 1, len(sessions))
    notes = []
    if without_status:
        formats = sorted({s.format for s in sessions} & FORMATS_WITHOUT_ERROR_STATUS)
        notes.append(f"{without_status} tool results left out of the error rate: their format has no error status "
                     f"({', '.join(formats)})")
    return Observations(tuple(calls), tuple(totals), tuple(outcomes), len(sessions), without_status, tuple(notes))


# Values with intervals ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FittedValue:
    """An estimate with its 95% interval (NaN when none) and the observations behind it."""

    value: float
    low: float
    high: float
    n: int
    how: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n, "how": self.how}


def _rng(purpose: str) -> np.random.Generator:
    """The resampling stream of one purpose, the same in every process (a digest, not Python's hash)."""
    digest = hashlib.blake2b(purpose.encode("utf-8", "replace"), digest_size=8).digest()
    return np.random.default_rng([BOOTSTRAP_SEED, int.from_bytes(digest, "big")])


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    finite = np.asarray([s for s in samples if math.isfinite(s)], dtype=float)
    if finite.size < 2:
        return math.nan, math.nan
    alpha = (1 - CONFIDENCE) / 2
    lo, hi = np.quantile(finite, [alpha, 1 - alpha])
    return float(lo), float(hi)


def _bootstrap(n: int, statistic: Callable[[np.ndarray], float], purpose: str) -> tuple[float, float]:
    """The percentile interval of ``statistic(indices)`` over resamples of ``n`` units."""
    if n < 2:
        return math.nan, math.nan
    rng = _rng(purpose)
    return _percentiles([statistic(rng.integers(0, n, n)) for _ in range(RESAMPLES)])


def _pooled_interval(numerators: np.ndarray, denominators: np.ndarray, purpose: str) -> tuple[float, float]:
    """The interval of sum(numerators) / sum(denominators) over resamples of the units."""
    return _bootstrap(len(numerators), lambda i: float(numerators[i].sum() / denominators[i].sum()), purpose)


def wilson_interval(events: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of ``events`` in ``trials`` (as `reports.stats.wilson_interval`, which this
    layer may not import)."""
    if trials <= 0:
        return math.nan, math.nan
    z = statistics.NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p, z2 = events / trials, z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    return (0.0 if events <= 0 else max(0.0, centre - half)), (1.0 if events >= trials else min(1.0, centre + half))


# 1. Token-count ratio ------------------------------------------------------------------------------------------

def _ratio_units(obs: Observations, model: str) -> list[tuple[int, int, int]]:
    """(counted, recorded, calls) per unit of ``model``: each call whose input tokens are recorded, and each
    session total (of a session with no per-call counts)."""
    units = [(c.counted_input, c.recorded_input, 1) for c in obs.calls if c.model == model and c.recorded_input]
    per_call = {c.session for c in obs.calls if c.model == model and c.recorded_input}
    units += [(t.counted_input, t.recorded_input, t.calls) for t in obs.totals
              if t.model == model and t.recorded_input and t.session not in per_call]
    return units


def token_ratios(obs: Observations) -> dict[str, FittedValue]:
    """Per model: ctxbench's input count over the recorded input tokens, pooled (sum over sum) over its calls
    and session totals, interval by resampling those units; n is the calls they cover."""
    out: dict[str, FittedValue] = {}
    for model in sorted({c.model for c in obs.calls} | {t.model for t in obs.totals}):
        units = _ratio_units(obs, model)
        if not units:
            continue
        counted = np.asarray([u[0] for u in units], dtype=float)
        recorded = np.asarray([u[1] for u in units], dtype=float)
        low, high = _pooled_interval(counted, recorded, f"ratio|{model}")
        totals = sum(1 for u in units if u[2] != 1)
        how = "per-call counts" if not totals else f"session totals: {totals}; per-call counts: {len(units) - totals}"
        out[model] = FittedValue(float(counted.sum() / recorded.sum()), low, high, sum(u[2] for u in units), how)
    return out


# 2. Output tokens ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OutputFit:
    mean: FittedValue | None
    median: FittedValue | None
    thought_tokens: FittedValue | None
    #: ctxbench's count of the recorded tool-call blocks per call (what the mock adds to its thought).
    tool_call_mean: float | None
    note: str


def fit_output(obs: Observations) -> OutputFit:
    """Recorded output tokens per call (mean, median), and ``thought_tokens`` (module docstring, 2)."""
    per_call = [c for c in obs.calls if c.recorded_output is not None]
    totals = [t for t in obs.totals if t.recorded_output is not None and t.calls > 0]
    if len(per_call) >= MIN_CALLS:
        out = np.asarray([c.recorded_output for c in per_call], dtype=float)
        thought = np.asarray([float(c.recorded_output or 0) - c.tool_call_tokens for c in per_call])
        tools = float(np.mean([c.tool_call_tokens for c in per_call]))
        n = len(per_call)
        mean = FittedValue(float(out.mean()), *_bootstrap(n, lambda i: float(out[i].mean()), "out-mean"), n,
                           "recorded output tokens per call")
        median = FittedValue(float(np.median(out)), *_bootstrap(n, lambda i: float(np.median(out[i])), "out-med"), n,
                             "recorded output tokens per call")
        lo, hi = _bootstrap(n, lambda i: float(np.median(thought[i])), "thought")
        thought_fit = FittedValue(float(np.median(thought)), lo, hi, n,
                                  "median of recorded output tokens minus the call's tool-call tokens")
        return OutputFit(mean, median, thought_fit, tools, "")
    if totals:
        calls = sum(t.calls for t in totals)
        out_sum = float(sum(t.recorded_output or 0 for t in totals))
        tools_sum = float(sum(t.tool_call_tokens for t in totals))
        mean_out = out_sum / calls
        outs = np.asarray([t.recorded_output or 0 for t in totals], dtype=float)
        ns = np.asarray([t.calls for t in totals], dtype=float)
        tool_tokens = np.asarray([t.tool_call_tokens for t in totals], dtype=float)
        lo, hi = _bootstrap(len(totals), lambda i: float(outs[i].sum() / ns[i].sum()), "out-total")
        mean = FittedValue(mean_out, lo, hi, calls, f"session totals of {len(totals)} sessions")
        tlo, thi = _bootstrap(len(totals), lambda i: float((outs[i].sum() - tool_tokens[i].sum()) / ns[i].sum()),
                              "thought-total")
        thought_fit = FittedValue((out_sum - tools_sum) / calls, tlo, thi, calls,
                                  "mean (session totals: no per-call counts) of output minus tool-call tokens")
        return OutputFit(mean, None, thought_fit, tools_sum / calls, "only session totals recorded: no median")
    return OutputFit(None, None, None, None, "no recorded output tokens")


# 3. Latency ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class LatencyCall:
    """The recorded counts and seconds of one call, the latency fit's input."""

    uncached: int
    cached: int
    output: int
    prompt: int
    seconds: float


@dataclass(frozen=True, slots=True)
class LatencyFit:
    #: Fitted fields -> value (a field left at the preset is absent).
    values: dict[str, FittedValue]
    #: Fields left at the preset -> why.
    kept: dict[str, str]
    n: int


def latency_calls(obs: Observations) -> list[LatencyCall]:
    """The calls with a recorded latency and input tokens (cached 0 when not recorded, output 0 likewise)."""
    out = []
    for c in obs.calls:
        if c.latency_s is None or c.recorded_input is None:
            continue
        cached = min(c.recorded_cached or 0, c.recorded_input)
        out.append(LatencyCall(c.recorded_input - cached, cached, c.recorded_output or 0, c.recorded_input,
                               c.latency_s))
    return out


def _regressor(name: str, calls: Sequence[LatencyCall]) -> np.ndarray:
    if name == "base_s":
        return np.ones(len(calls))
    if name == "b_uncached":
        return np.asarray([c.uncached for c in calls], dtype=float)
    if name == "b_cached":
        return np.asarray([c.cached for c in calls], dtype=float)
    # decode: the mock's seconds per output token, stretched by the prompt (`Profile.model_seconds`).
    return np.asarray([c.output * (1 + 0.15 * c.prompt / 100_000) for c in calls], dtype=float)


def _preset_coefficient(name: str, preset: Profile) -> float:
    return 1.0 / preset.decode_tps if name == "decode_tps" else float(getattr(preset, name))


def _nnls(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares, exactly: the best unconstrained fit over every subset of the (few) columns
    whose coefficients are all non-negative."""
    p = X.shape[1]
    best, best_sse = np.zeros(p), float(y @ y)
    for size in range(1, p + 1):
        for subset in combinations(range(p), size):
            cols = list(subset)
            coef, *_ = np.linalg.lstsq(X[:, cols], y, rcond=None)
            if np.any(coef < 0):
                continue
            residual = y - X[:, cols] @ coef
            sse = float(residual @ residual)
            if sse < best_sse - 1e-12 * max(1.0, best_sse):
                best, best_sse = np.zeros(p), sse
                best[cols] = coef
    return best


def _latency_point(X_free: np.ndarray, fixed_part: np.ndarray, y: np.ndarray, sigma0: float,
                   fit_sigma: bool) -> tuple[np.ndarray, float]:
    """(free coefficients in profile units, sigma): the mean exp(sigma**2 / 2) * (fixed + free) fitted to y,
    sigma from the log residuals, iterated to a fixed point (a few rounds suffice)."""
    sigma = sigma0
    coef = np.zeros(X_free.shape[1])
    dof = max(1, len(y) - X_free.shape[1])
    for _ in range(12):
        m = math.exp(sigma * sigma / 2)
        a = _nnls(X_free, y - m * fixed_part) if X_free.shape[1] else np.zeros(0)
        fitted = m * fixed_part + X_free @ a
        coef = a / m
        if not fit_sigma or np.any(fitted <= 0):
            break
        logs = np.log(y / fitted)
        new_sigma = math.sqrt(float(((logs - logs.mean()) ** 2).sum()) / dof)
        if abs(new_sigma - sigma) < 1e-10:
            sigma = new_sigma
            break
        sigma = new_sigma
    return coef, sigma


def fit_latency(calls: Sequence[LatencyCall], preset: Profile) -> LatencyFit:
    """The latency fields (module docstring, 3): which are identifiable, their values and intervals."""
    n = len(calls)
    kept: dict[str, str] = {}
    if n < MIN_LATENCY_CALLS:
        why = f"{n} calls with a recorded latency (at least {MIN_LATENCY_CALLS} needed)"
        return LatencyFit({}, dict.fromkeys((*LATENCY_FIELDS, "sigma"), why), n)
    y = np.asarray([c.seconds for c in calls], dtype=float)
    if np.any(y <= 0):
        y = np.maximum(y, 1e-6)
    free: list[str] = []
    for name in LATENCY_FIELDS:
        x = _regressor(name, calls)
        if name != "base_s":
            mean = float(x.mean())
            if mean <= 0 or float(x.std()) / mean < MIN_REGRESSOR_VARIATION:
                kept[name] = "its token count does not vary across the recorded calls (not identifiable)"
                continue
        if n < MIN_CALLS_PER_COEFFICIENT * (len(free) + 1):
            kept[name] = (f"too few calls: {n} calls at {MIN_CALLS_PER_COEFFICIENT} per coefficient admit "
                          f"{n // MIN_CALLS_PER_COEFFICIENT}, taken in the order {', '.join(LATENCY_FIELDS)}")
            continue
        X = np.column_stack([_regressor(f, calls) for f in [*free, name]])
        if np.linalg.matrix_rank(X / np.maximum(np.abs(X).max(axis=0), 1e-300)) < X.shape[1]:
            kept[name] = "its token count moves with another regressor's (not identifiable)"
            continue
        free.append(name)
    while True:
        coef, sigma, samples = _solve_latency(calls, y, free, preset)
        # A slope whose interval reaches 0 is one these calls cannot tell from none: it stays at the preset
        # (rather than, say, a decode speed of a million tokens a second) and the others are fitted around it.
        weak = [name for j, name in enumerate(free) if name != "base_s"
                and (coef[j] <= 0 or not _percentiles([s[0][j] for s in samples])[0] > 0)]
        if not weak:
            break
        for name in weak:
            kept[name] = "its 95% interval reaches 0: these calls cannot tell its effect from none"
            free.remove(name)
    fit_sigma = n - len(free) >= 2
    if not fit_sigma:
        kept["sigma"] = "too few calls beyond the fitted coefficients"
    values: dict[str, FittedValue] = {}
    how = "least squares (linear scale)"
    for j, name in enumerate(free):
        lo, hi = _percentiles([s[0][j] for s in samples])
        if name == "decode_tps":  # seconds per output token d -> tokens per second 1 / d
            values[name] = FittedValue(min(1e6, 1.0 / float(coef[j])), min(1e6, 1.0 / hi), min(1e6, 1.0 / lo), n, how)
        else:
            values[name] = FittedValue(float(coef[j]), lo, hi, n, how)
    if fit_sigma:
        values["sigma"] = FittedValue(sigma, *_percentiles([s[1] for s in samples]), n,
                                      "spread of log(latency / fitted mean)")
    return LatencyFit(values, kept, n)


def _solve_latency(calls: Sequence[LatencyCall], y: np.ndarray, free: Sequence[str],
                   preset: Profile) -> tuple[np.ndarray, float, list[tuple[np.ndarray, float]]]:
    """The free coefficients (profile units, decode as seconds per token) and sigma on all calls, and on each
    resample of the calls; the other coefficients at the preset."""
    n = len(calls)
    fixed = [f for f in LATENCY_FIELDS if f not in free]
    fit_sigma = n - len(free) >= 2
    X_free = np.column_stack([_regressor(f, calls) for f in free]) if free else np.zeros((n, 0))
    fixed_part = sum((_preset_coefficient(f, preset) * _regressor(f, calls) for f in fixed), np.zeros(n))

    def point(idx: np.ndarray) -> tuple[np.ndarray, float]:
        return _latency_point(X_free[idx], fixed_part[idx], y[idx], preset.sigma, fit_sigma)

    coef, sigma = point(np.arange(n))
    rng = _rng("latency")
    return coef, sigma, [point(rng.integers(0, n, n)) for _ in range(RESAMPLES)]


@dataclass(frozen=True, slots=True)
class LatencyCheck:
    """The written profile's mean latency over the recorded calls (its formula on their counts, the lognormal's
    mean exp(sigma**2 / 2)) against the recorded mean."""

    recorded_mean_s: float
    profile_mean_s: float
    n: int
    tolerance: float = 0.10

    @property
    def gap(self) -> float:
        return self.profile_mean_s / self.recorded_mean_s - 1 if self.recorded_mean_s > 0 else math.nan

    @property
    def within(self) -> bool:
        return abs(self.gap) <= self.tolerance


def latency_check(calls: Sequence[LatencyCall], fitted: Profile) -> LatencyCheck | None:
    """`LatencyCheck` of ``fitted`` on ``calls``; None without calls."""
    if not calls:
        return None
    factor = math.exp(fitted.sigma ** 2 / 2)
    means = [fitted.model_seconds(c.uncached, c.cached, c.output, c.prompt, 0.0) * factor for c in calls]
    return LatencyCheck(float(np.mean([c.seconds for c in calls])), float(np.mean(means)), len(calls))


# 4. Cache-hit shares -----------------------------------------------------------------------------------------

def cache_shares(obs: Observations) -> dict[str, FittedValue]:
    """Per model: recorded cached over recorded input tokens, over the calls that record both; interval by
    resampling calls."""
    out: dict[str, FittedValue] = {}
    for model in sorted({c.model for c in obs.calls}):
        rows = [c for c in obs.calls if c.model == model and c.recorded_cached is not None and c.recorded_input]
        if not rows:
            continue
        cached = np.asarray([min(c.recorded_cached or 0, c.recorded_input or 0) for c in rows], dtype=float)
        inputs = np.asarray([c.recorded_input for c in rows], dtype=float)
        lo, hi = _pooled_interval(cached, inputs, f"cache|{model}")
        out[model] = FittedValue(float(cached.sum() / inputs.sum()), lo, hi, len(rows), "cached / input tokens")
    return out


# 5. Tool errors against context length ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ErrorBin:
    """Tool outcomes whose call's context length lies in [low_tokens, high_tokens]."""

    low_tokens: int
    high_tokens: int
    median_tokens: float
    errors: int
    outcomes: int
    rate_low: float
    rate_high: float

    @property
    def rate(self) -> float:
        return self.errors / self.outcomes if self.outcomes else math.nan


def error_bins(outcomes: Sequence[ToolOutcome], *, min_per_bin: int = MIN_BIN_OUTCOMES,
               max_bins: int = MAX_BINS) -> list[ErrorBin]:
    """The outcomes sorted by context length and cut by rank into equal bins of at least ``min_per_bin`` (at
    most ``max_bins``; outcomes at one length never straddle two bins), each with its Wilson interval."""
    ordered = sorted(outcomes, key=lambda o: o.context_tokens)
    n = len(ordered)
    count = min(max_bins, n // min_per_bin)
    cuts: list[int] = []
    start = 0
    for b in range(1, count):
        end = max(round(b * n / count), start + min_per_bin)
        while 0 < end < n and ordered[end].context_tokens == ordered[end - 1].context_tokens:
            end += 1
        if n - end < min_per_bin:  # what is left could not fill a bin: it joins this one
            break
        cuts.append(end)
        start = end
    bins: list[ErrorBin] = []
    for lo, hi in zip([0, *cuts], [*cuts, n], strict=True) if count >= 1 else ():
        part = ordered[lo:hi]
        errors = sum(o.error for o in part)
        bins.append(ErrorBin(part[0].context_tokens, part[-1].context_tokens,
                             float(np.median([o.context_tokens for o in part])), errors, len(part),
                             *wilson_interval(errors, len(part))))
    return bins


#: The error-growth likelihood's search box: log10 of the base rate, log10 of g_L (and g_L = 0), as
#: `Profile` bounds them (a base rate above 0.5 is past the mock's cap).
_LOG_BASE = (-5.0, math.log10(0.5))
_LOG_GROWTH = (-2.0, 2.0)
#: Points per axis of the coarse grid and of each refinement around its best point.
_COARSE, _FINE = 41, 21


def _growth_x(tokens: np.ndarray) -> np.ndarray:
    return np.log2(np.maximum(tokens, GROWTH_FROM_TOKENS) / GROWTH_FROM_TOKENS)


def _log_likelihood(bases: np.ndarray, growths: np.ndarray, x: np.ndarray, factor: np.ndarray,
                    errors: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """The binomial log-likelihood over a (bases x growths) grid of grouped outcomes."""
    p = np.minimum(0.5, bases[:, None, None] * (1 + growths[None, :, None] * x[None, None, :]) * factor[None, None, :])
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return (errors * np.log(p) + (trials - errors) * np.log1p(-p)).sum(axis=-1)


def _best(bases: np.ndarray, growths: np.ndarray, *data: np.ndarray) -> tuple[float, float]:
    ll = _log_likelihood(bases, growths, *data)
    i, j = np.unravel_index(int(np.argmax(ll)), ll.shape)
    return float(bases[i]), float(growths[j])


def _error_mle(x: np.ndarray, factor: np.ndarray, errors: np.ndarray, trials: np.ndarray, fit_growth: bool,
               growth: float) -> tuple[float, float]:
    """(base, g_L) maximising the likelihood: a coarse log grid, then two refinements around its best point
    (g_L = 0 is a point of the grid); g_L fixed at ``growth`` unless ``fit_growth``."""
    data = (x, factor, errors, trials)
    coarse_b = np.linspace(*_LOG_BASE, _COARSE)
    coarse_g = np.linspace(*_LOG_GROWTH, _COARSE)
    growths = np.concatenate([[0.0], 10.0 ** coarse_g]) if fit_growth else np.asarray([growth])
    base, g = _best(10.0 ** coarse_b, growths, *data)
    step_b, step_g = coarse_b[1] - coarse_b[0], coarse_g[1] - coarse_g[0]
    for _ in range(2):
        lb = math.log10(base)
        bases = 10.0 ** np.clip(np.linspace(lb - step_b, lb + step_b, _FINE), *_LOG_BASE)
        if fit_growth:
            lg = math.log10(g) if g > 0 else _LOG_GROWTH[0]
            near = 10.0 ** np.clip(np.linspace(lg - step_g, lg + step_g, _FINE), *_LOG_GROWTH)
            growths = np.concatenate([[0.0], near])
        base, g = _best(bases, growths, *data)
        step_b, step_g = 2 * step_b / (_FINE - 1), 2 * step_g / (_FINE - 1)
    return base, g


@dataclass(frozen=True, slots=True)
class ErrorFit:
    values: dict[str, FittedValue]
    kept: dict[str, str]
    n: int
    errors: int


def fit_error_growth(outcomes: Sequence[ToolOutcome], preset: Profile) -> ErrorFit:
    """``p_malformed_base`` and ``g_L`` by maximum likelihood (module docstring, 5), g_N at the preset."""
    n, errors = len(outcomes), sum(o.error for o in outcomes)
    if n < MIN_BIN_OUTCOMES:
        why = f"{n} tool results with an error status recorded (at least {MIN_BIN_OUTCOMES} needed)"
        return ErrorFit({}, {"p_malformed_base": why, "g_L": why}, n, errors)
    if errors == 0:
        high = wilson_interval(0, n)[1]
        why = f"no errors in {n} tool results (rate below {high:.3g} at 95%): the maximum is at 0, not fitted"
        return ErrorFit({}, {"p_malformed_base": why, "g_L": why}, n, errors)
    tokens = np.asarray([o.context_tokens for o in outcomes], dtype=float)
    x = _growth_x(tokens)
    factor = 1 + preset.g_N * np.asarray([o.noise for o in outcomes], dtype=float)
    err = np.asarray([o.error for o in outcomes], dtype=float)
    kept: dict[str, str] = {}
    past = int((x > 0).sum())
    fit_growth = past >= MIN_BIN_OUTCOMES and len(set(x.tolist())) >= 2
    if not fit_growth:
        kept["g_L"] = (f"{past} tool results past {GROWTH_FROM_TOKENS:,} tokens (at least {MIN_BIN_OUTCOMES}, at "
                       "more than one length, needed): the growth is not identifiable")
    # Outcomes grouped by (log2 length, noise factor) to 2 decimals (0.7% in tokens): the likelihood sums over
    # the groups, not over every outcome.
    keys = np.round(np.column_stack([x, factor]), 2)
    groups, group_of = np.unique(keys, axis=0, return_inverse=True)
    group_of = group_of.reshape(-1)

    def mle(weights: np.ndarray) -> tuple[float, float]:
        trials = np.bincount(group_of, weights=weights, minlength=len(groups))
        errs = np.bincount(group_of, weights=weights * err, minlength=len(groups))
        return _error_mle(groups[:, 0], groups[:, 1], errs, trials, fit_growth, preset.g_L)

    base, growth = mle(np.ones(n))
    rng = _rng("errors")
    draws = [mle(np.bincount(rng.integers(0, n, n), minlength=n).astype(float)) for _ in range(RESAMPLES)]
    # A resample with no errors has its maximum at a base rate of 0, which the log grid reaches as its floor.
    floor = 10.0 ** _LOG_BASE[0]
    draws = [(0.0 if b <= floor * (1 + 1e-9) else b, g) for b, g in draws]
    how = f"maximum likelihood, {errors} errors in {n} tool results (any error status)"
    values = {"p_malformed_base": FittedValue(base, *_percentiles([d[0] for d in draws]), n, how)}
    if fit_growth:
        values["g_L"] = FittedValue(growth, *_percentiles([d[1] for d in draws]), n, how)
    return ErrorFit(values, kept, n, errors)


# The calibration ---------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FieldSource:
    """Where one field of the written profile comes from: ``fitted``, ``price table`` or ``preset``."""

    source: str
    value: Any
    preset_value: Any
    fitted: FittedValue | None = None
    why: str = ""


@dataclass(frozen=True, slots=True)
class Calibration:
    preset: str
    profile: Profile
    fields: dict[str, FieldSource]
    token_ratios: dict[str, FittedValue]
    cache_shares: dict[str, FittedValue]
    output: OutputFit
    bins: list[ErrorBin]
    check: LatencyCheck | None
    calls: int
    sessions: int
    main_model: str | None
    notes: list[str] = field(default_factory=list)
    #: Per latency call, (recorded seconds, the profile's mean seconds): the report's scatter.
    latency_points: list[tuple[float, float]] = field(default_factory=list)
    error_fit: ErrorFit | None = None


def _rounded(value: float, digits: int = 4) -> float:
    """``value`` to ``digits`` significant digits (a readable file; the check runs on what is written)."""
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.{digits}g}")


def _bounded(name: str, value: float) -> float:
    """``value`` inside the bounds `Profile` declares for ``name``."""
    info = Profile.model_fields[name]
    for rule in info.metadata:
        for attr, op in (("ge", max), ("gt", max), ("le", min), ("lt", min)):
            bound = getattr(rule, attr, None)
            if bound is not None:
                value = op(value, float(bound))
    return value


def _main_model(obs: Observations) -> str | None:
    counts: dict[str, int] = {}
    for c in obs.calls:
        counts[c.model] = counts.get(c.model, 0) + 1
    for t in obs.totals:
        counts[t.model] = counts.get(t.model, 0) + t.calls
    named = {m: n for m, n in counts.items() if m != UNNAMED_MODEL}
    return max(sorted(named), key=lambda m: named[m]) if named else None


def calibrate(obs: Observations, preset: str = "frontier", *, sources: Sequence[str] = ()) -> Calibration:
    """Fit every field the observations can tell (module docstring), the rest at ``preset``; ProfileFitError
    when nothing can be fitted, KeyError for an unknown preset."""
    base = profile(preset)
    where = ", ".join(sources) or "these traces"
    ratios = token_ratios(obs)
    shares = cache_shares(obs)
    output = fit_output(obs)
    lat_calls = latency_calls(obs)
    latency = fit_latency(lat_calls, base)
    errors = fit_error_growth(obs.outcomes, base)
    bins = error_bins(obs.outcomes)
    has_usage = bool(ratios or shares or output.mean or lat_calls)
    if not has_usage and not errors.values:
        raise ProfileFitError(f"no recorded usage in {where} (no token counts or latencies, and no tool error "
                              "statuses to fit): nothing to calibrate")
    fields: dict[str, FieldSource] = {}
    values: dict[str, Any] = base.model_dump()
    notes = list(obs.notes)

    def fitted(name: str, fit: FittedValue, integer: bool = False) -> None:
        value: Any = _bounded(name, fit.value)
        value = round(value) if integer else _rounded(value)
        if integer:
            value = int(_bounded(name, value))
        clamped = "" if math.isclose(float(value), fit.value, rel_tol=1e-3, abs_tol=1e-12) or integer else \
            f"; clamped to the field's bound from {fit.value:.4g}"
        values[name] = value
        fields[name] = FieldSource("fitted", value, getattr(base, name), fit, fit.how + clamped)

    for name, fit in latency.values.items():
        fitted(name, fit)
    for name, fit in errors.values.items():
        fitted(name, fit)
    if output.thought_tokens is not None and output.thought_tokens.n >= MIN_CALLS:
        fitted("thought_tokens", output.thought_tokens, integer=True)
    main = _main_model(obs)
    priced = price_for_model(main)
    if priced is not None:
        price_fields, entry = priced
        for name, value in price_fields.items():
            if name in values:
                values[name] = value
                fields[name] = FieldSource("price table", value, getattr(base, name), None,
                                           f"{main}: the price table's entry {entry}")
    hits = {m: s for m, s in shares.items() if s.value > 0}
    if hits:
        values["caching"] = True
        fields["caching"] = FieldSource("fitted", True, base.caching,
                                        FittedValue(1.0, math.nan, math.nan, sum(s.n for s in hits.values()),
                                                    "cache hits recorded"),
                                        f"cache hits recorded for {', '.join(sorted(hits))}")
    values["name"] = values.get("name", preset)
    written = Profile(**values)
    kept_why = {**latency.kept, **errors.kept}
    if output.thought_tokens is None or output.thought_tokens.n < MIN_CALLS:
        kept_why["thought_tokens"] = output.note or f"fewer than {MIN_CALLS} calls with recorded output tokens"
    if not obs.outcomes and obs.results_without_status:
        why = (f"none of the {obs.results_without_status} tool results has a recorded status (their formats have no "
               "error flag)")
        kept_why["p_malformed_base"] = kept_why["g_L"] = why
    if not shares:
        kept_why["caching"] = "no cached-token counts recorded"
    elif not hits:
        kept_why["caching"] = ("no cache hits recorded; a provider caches only what its client marks, so this "
                               "does not show the model has no cache")
    for name in Profile.model_fields:
        if name in fields or name == "name":
            continue
        why = kept_why.get(name) or FIELD_REASONS.get(name, "a transcript cannot tell")
        fields[name] = FieldSource("preset", getattr(written, name), getattr(base, name), None, why)
    recorded_models = sorted(set(ratios) | set(shares) | {c.model for c in obs.calls if c.latency_s is not None})
    if len(recorded_models) > 1:
        notes.append(f"the recorded usage comes from {len(recorded_models)} models ({', '.join(recorded_models)}): "
                     "the one profile pools them; calibrate one model's traces for a profile of that model")
    if main is None:
        notes.append("no trace names its model: prices and cache rules are the preset's")
    elif priced is None:
        notes.append(f"the traces' main model {main!r} has no entry in the price table: prices are the preset's")
    check = latency_check(lat_calls, written)
    factor = math.exp(written.sigma ** 2 / 2)
    points = [(c.seconds, written.model_seconds(c.uncached, c.cached, c.output, c.prompt, 0.0) * factor)
              for c in lat_calls]
    return Calibration(preset, written, fields, ratios, shares, output, bins, check, len(obs.calls), obs.sessions,
                       main, notes, points, errors)


def with_name(calibration: Calibration, name: str) -> Calibration:
    """The calibration with its profile named ``name``."""
    from dataclasses import replace

    return replace(calibration, profile=calibration.profile.model_copy(update={"name": name}))


# The profile file ---------------------------------------------------------------------------------------------

def _interval_text(fit: FittedValue) -> str:
    if math.isnan(fit.low) or math.isnan(fit.high):
        return f"n = {fit.n}, no interval"
    return f"95% [{fit.low:.4g}, {fit.high:.4g}], n = {fit.n}"


def field_comment(name: str, src: FieldSource, preset: str) -> str:
    """The comment after a field's line: where its value comes from."""
    if src.source == "fitted" and src.fitted is not None:
        interval = "" if name == "caching" else f"{_interval_text(src.fitted)}; "
        return f"fitted: {interval}{src.why}; preset {preset}: {src.preset_value}"
    if src.source == "price table":
        return f"price table: {src.why}; preset {preset}: {src.preset_value}"
    return f"preset {preset}: {src.why}"


def profile_toml(calibration: Calibration, *, sources: Sequence[str] = ()) -> str:
    """The profile as TOML: every field, each with a comment saying whether it was fitted (its interval and n)
    or kept (and why); parsed back and checked against the profile before it is returned."""
    p = calibration.profile
    lines = [toml_comment("ctxbench calibrate: a mock-model profile fitted to recorded transcripts"),
             toml_comment(f"sources: {', '.join(sources)}" if sources else "sources: (none named)"),
             toml_comment(f"{calibration.sessions} sessions, {calibration.calls} agent calls; every field not fitted "
                          f"is the {calibration.preset} preset's"),
             toml_comment("load it with: ctxbench run --model <this file>"),
             ""]
    for ratio_model, fit in calibration.token_ratios.items():
        lines.append(toml_comment(f"observed only: token-count ratio (ctxbench / recorded input) of {ratio_model}: "
                                  f"{fit.value:.4f}, {_interval_text(fit)}"))
    for share_model, fit in calibration.cache_shares.items():
        lines.append(toml_comment(f"observed only: cache-hit share of {share_model}: {fit.value:.4f}, "
                                  f"{_interval_text(fit)}"))
    if calibration.check is not None:
        c = calibration.check
        lines.append(toml_comment(f"latency check: profile mean {c.profile_mean_s:.4g} s against recorded mean "
                                  f"{c.recorded_mean_s:.4g} s over {c.n} calls ({c.gap:+.1%})"))
    lines += ["", f"name = {toml_string(p.name)}"]
    data = p.model_dump()
    for name in Profile.model_fields:
        if name == "name":
            continue
        value = data[name]
        comment = toml_comment(field_comment(name, calibration.fields[name], calibration.preset))
        if value is None:
            lines.append(f"# {name} is unset (none)  {comment}")
            continue
        lines.append(f"{tomli_w.dumps({name: value}).strip()}  {comment}")
    text = "\n".join(lines) + "\n"
    if Profile(**tomllib.loads(text)) != p:  # the file says exactly the profile
        raise AssertionError("the written profile does not read back as the fitted one")
    return text


# The report's plain data --------------------------------------------------------------------------------------

def report_inputs(calibration: Calibration, *, sources: Sequence[str] = ()) -> dict[str, Any]:
    """What `reports.profile_fit` renders, as plain data (numbers, strings, lists, dicts)."""
    c = calibration

    def value(fit: FittedValue | None) -> dict[str, Any] | None:
        return None if fit is None else fit.as_dict()

    fields = []
    for name in Profile.model_fields:
        if name == "name":
            continue
        src = c.fields[name]
        fields.append({"field": name, "source": src.source, "value": src.value, "preset": src.preset_value,
                       "fit": value(src.fitted), "why": src.why})
    growth = {}
    if c.error_fit is not None and "p_malformed_base" in c.error_fit.values:
        growth = {"base": c.profile.p_malformed_base, "g_L": c.profile.g_L, "g_N": c.profile.g_N}
    return {
        "preset": c.preset, "profile_name": c.profile.name, "sources": list(sources), "sessions": c.sessions,
        "calls": c.calls, "main_model": c.main_model, "notes": list(c.notes), "fields": fields,
        "token_ratios": {m: f.as_dict() for m, f in c.token_ratios.items()},
        "cache_shares": {m: f.as_dict() for m, f in c.cache_shares.items()},
        "output": {"mean": value(c.output.mean), "median": value(c.output.median),
                   "thought_tokens": value(c.output.thought_tokens), "tool_call_mean": c.output.tool_call_mean,
                   "note": c.output.note},
        "bins": [{"low_tokens": b.low_tokens, "high_tokens": b.high_tokens, "median_tokens": b.median_tokens,
                  "errors": b.errors, "outcomes": b.outcomes, "rate": b.rate, "rate_low": b.rate_low,
                  "rate_high": b.rate_high} for b in c.bins],
        "error_outcomes": c.error_fit.n if c.error_fit is not None else 0,
        "error_count": c.error_fit.errors if c.error_fit is not None else 0,
        "growth": growth,
        "check": None if c.check is None else {
            "recorded_mean_s": c.check.recorded_mean_s, "profile_mean_s": c.check.profile_mean_s, "n": c.check.n,
            "gap": c.check.gap, "within": c.check.within, "tolerance": c.check.tolerance},
        "latency_points": [list(p) for p in c.latency_points],
    }


def describe(fields: Mapping[str, FieldSource]) -> str:
    """One line: how many fields were fitted, taken from the price table, kept."""
    counts = {k: sum(1 for f in fields.values() if f.source == k) for k in ("fitted", "price table", "preset")}
    return ", ".join(f"{n} {k}" for k, n in counts.items())
