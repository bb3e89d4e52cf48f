"""Workload fitting: measure real agent transcripts, choose the scenario params that make ctxbench's
generators produce sessions like them, and measure what those params generate, for the side-by-side.

`measure` reads imported sessions (`harness.run.traces`) into `WorkloadMeasures`; `fit` turns them
into a `WorkloadFit` (a lognormal of payload sizes with its goodness of fit, the session length, and
scenario family weights from the tool mix); `workload_toml` / `write_workload` write it as a run
config that `harness.run.config.load_config` loads (names from the transcripts, which may hold any
character, are written through `toml_string` and `toml_comment`, and the text is parsed back before it is
returned); `generated_measures` replays sessions of that
config under ``unbounded`` with the mock model and measures them the same way. `synthetic_sessions`
and `write_synthetic_traces` make transcripts from ctxbench's own generators (known truth for tests).
"""

from __future__ import annotations

import functools
import json
import math
import re
import statistics
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

import scenarios
from harness.core.crn import session_seed
from harness.core.files import write_atomically
from harness.core.messages import Message, ToolResult, ToolUse
from harness.core.switches import Switches
from harness.run.config import RunConfig, config_from_data
from harness.run.plan import allocate
from harness.run.traces import ImportedSession
from harness.sim.kernel import Replay
from harness.sim.profiles import Profile
from scenarios.base import ScenarioParams, SessionScript, Step
from scenarios.mix import DEFAULT_FAMILIES
from strategies import create

__all__ = [
    "FitError",
    "LognormalFit",
    "SessionMeasures",
    "WorkloadFit",
    "WorkloadMeasures",
    "family_tool_shares",
    "fit",
    "fit_lognormal",
    "generated_measures",
    "generated_sessions",
    "kolmogorov_p_value",
    "measure",
    "mix_weights",
    "report_inputs",
    "synthetic_sessions",
    "toml_comment",
    "toml_string",
    "workload_config",
    "workload_toml",
    "write_synthetic_traces",
    "write_workload",
]

#: Sessions the written config runs by default: enough for a first comparison in a few minutes.
DEFAULT_RUN_SESSIONS = 200
#: Scripts generated per calibration round (`fit`): the generator's payload sizes are measured on
#: about 35 payloads per script, so 40 scripts pin their log-mean to about +-0.03.
CALIBRATION_SCRIPTS = 40
#: Calibration rounds: each moves the params by the gap between measured and generated sizes; two
#: more rounds after the first correct what the generator's nonlinear parts (clipping, log dumps) add.
CALIBRATION_ROUNDS = 3
#: Scripts generated per family to learn which tools it calls and how often (`family_tool_shares`).
PROBE_SCRIPTS = 8
#: Params of those scripts: the default length, and small fixed payloads, since which tools a family calls
#: does not depend on how large their outputs are and small ones generate in a fraction of the time.
PROBE_PARAMS: dict[str, Any] = {"payload_median_bytes": 400, "payload_sigma": 0.0}
#: EM iterations for the mixture weights; the log-likelihood is flat long before this.
EM_ITERATIONS = 500
#: A family whose mixture weight ends below this share is dropped: it would get almost no sessions.
MIN_FAMILY_WEIGHT = 0.01
#: Strategy the comparison sessions are replayed under: the whole history, so what the transcripts
#: show is what the generator made, untouched by any context management.
REPLAY_STRATEGY = "unbounded"


class FitError(Exception):
    """Transcripts that cannot be fitted (no successful tool result, no tool call): one line for the user."""


# Measuring ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionMeasures:
    """What one session shows."""

    session_id: str
    #: Model calls: assistant messages.
    model_calls: int
    #: Tool calls made (ToolUse blocks).
    tool_calls: int
    #: Distinct successful calls (tool and input): the ideal session's length, without failed attempts
    #: and re-fetches of an output already seen. This is what the generators' ``turns`` counts.
    distinct_calls: int
    #: Slope of the prompt's tokens (the messages before each model call) over the model calls, by
    #: least squares; nan with fewer than two model calls.
    growth_per_turn: float


@dataclass(frozen=True, slots=True)
class WorkloadMeasures:
    """What a set of sessions shows, pooled (see `measure`)."""

    sessions: tuple[SessionMeasures, ...]
    #: UTF-8 bytes of the last successful result of each distinct call (a re-fetch is counted once; the
    #: last, because formats without an error status, such as OpenAI's, show a failed attempt as a success).
    payload_bytes: tuple[int, ...]
    #: Tool name -> calls, sorted by name.
    tool_counts: tuple[tuple[str, int], ...]
    tool_results: int
    error_results: int
    result_tokens: int
    message_tokens: int

    @property
    def tool_mix(self) -> dict[str, float]:
        """Tool name -> its share of the tool calls."""
        total = sum(n for _, n in self.tool_counts)
        return {name: n / total for name, n in self.tool_counts} if total else {}

    @property
    def error_share(self) -> float:
        """Share of tool results that are errors."""
        return self.error_results / self.tool_results if self.tool_results else math.nan

    @property
    def observation_share(self) -> float:
        """Tokens of tool results over the tokens of every message."""
        return self.result_tokens / self.message_tokens if self.message_tokens else math.nan

    def growth(self) -> tuple[float, float, float]:
        """Median and quartiles (25%, 75%) of the per-session context growth per turn."""
        values = np.array([s.growth_per_turn for s in self.sessions if math.isfinite(s.growth_per_turn)])
        if not len(values):
            return math.nan, math.nan, math.nan
        q25, q50, q75 = np.percentile(values, [25, 50, 75])
        return float(q50), float(q25), float(q75)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (lists and numbers) for `reports.fit`."""
        growth, growth_q25, growth_q75 = self.growth()
        return {
            "sessions": len(self.sessions),
            "model_calls": [s.model_calls for s in self.sessions],
            "tool_calls": [s.tool_calls for s in self.sessions],
            "distinct_calls": [s.distinct_calls for s in self.sessions],
            "growth_per_turn": [s.growth_per_turn for s in self.sessions],
            "payload_bytes": list(self.payload_bytes),
            "tool_mix": self.tool_mix,
            "error_share": self.error_share,
            "observation_share": self.observation_share,
            "growth_median": growth,
            "growth_q25": growth_q25,
            "growth_q75": growth_q75,
        }


def _call_key(use: ToolUse) -> str:
    return use.name + " " + json.dumps(use.input, sort_keys=True, default=str)


def _block_tokens(message: Message, text: str) -> int:
    # The message's meter counted this text when the message was built: this is a memo hit.
    return message.meter.measure(text)[0]


def _slope(ys: Sequence[float]) -> float:
    """Least-squares slope of ``ys`` over 1..n; nan for fewer than two points."""
    if len(ys) < 2:
        return math.nan
    x = np.arange(1, len(ys) + 1, dtype=float)
    y = np.asarray(ys, dtype=float)
    x -= x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def measure(sessions: Iterable[ImportedSession]) -> WorkloadMeasures:
    """Measure ``sessions``: per session its model calls, tool calls, distinct successful calls and
    context growth per turn; pooled, the tool mix, the payload sizes of successful results, the share
    of error results and the share of tokens that are tool results."""
    per_session: list[SessionMeasures] = []
    payloads: list[int] = []
    tools: Counter[str] = Counter()
    results = errors = result_tokens = message_tokens = 0
    for session in sessions:
        uses: dict[str, ToolUse] = {}
        #: Call (tool and input) -> bytes of its last successful result.
        call_payloads: dict[str, int] = {}
        prompts: list[int] = []
        prompt = model_calls = tool_calls = 0
        for message in session.messages:
            if message.role == "assistant":
                model_calls += 1
                prompts.append(prompt)
            prompt += message.tokens
            message_tokens += message.tokens
            for block in message.blocks:
                if isinstance(block, ToolUse):
                    tool_calls += 1
                    tools[block.name] += 1
                    uses[block.id] = block
                elif isinstance(block, ToolResult):
                    results += 1
                    result_tokens += _block_tokens(message, block.content)
                    if block.status == "error":
                        errors += 1
                        continue
                    use = uses.get(block.tool_use_id)
                    key = _call_key(use) if use is not None else f"result {block.tool_use_id}"
                    call_payloads[key] = len(block.content.encode("utf-8"))
        payloads.extend(call_payloads.values())
        per_session.append(SessionMeasures(session.session_id, model_calls, tool_calls, len(call_payloads),
                                           _slope(prompts)))
    return WorkloadMeasures(tuple(per_session), tuple(payloads), tuple(sorted(tools.items())), results, errors,
                            result_tokens, message_tokens)


# The lognormal and its goodness of fit -------------------------------------------------------------------


def kolmogorov_p_value(statistic: float, n: int) -> float:
    """P(D > statistic) for the one-sample Kolmogorov-Smirnov statistic of ``n`` values.

    The asymptotic Kolmogorov distribution, Q(l) = 2 sum_{k>=1} (-1)^(k-1) exp(-2 k^2 l^2), at
    l = (sqrt(n) + 0.12 + 0.11 / sqrt(n)) * D, Stephens' (1970) small-sample correction, as in
    Numerical Recipes' ``probks``. The series is summed until a term is negligible; for l below 0.2
    Q is 1 to double precision and the alternating series converges too slowly to be worth summing.
    """
    if n <= 0 or not math.isfinite(statistic):
        return math.nan
    root = math.sqrt(n)
    lam = (root + 0.12 + 0.11 / root) * statistic
    if lam < 0.2:
        return 1.0
    total, sign = 0.0, 1.0
    for k in range(1, 101):
        term = math.exp(-2.0 * k * k * lam * lam)
        total += sign * term
        if term < 1e-16:
            break
        sign = -sign
    return min(1.0, max(0.0, 2.0 * total))


@dataclass(frozen=True, slots=True)
class LognormalFit:
    """A lognormal fitted by maximum likelihood to ``n`` positive sizes (mean and standard deviation of
    their logarithms: median = exp(mean), sigma = std), with the Kolmogorov-Smirnov statistic of the
    sizes against it and its p-value.

    The p-value treats the fitted params as known; since they were estimated from the same sizes, it
    is larger than the exact one (Lilliefors' correction would lower it): a small p is a clear
    rejection, a large one is weaker evidence of a good fit than it looks."""

    median: float
    sigma: float
    n: int
    ks_statistic: float
    ks_p_value: float

    def cdf(self, sizes: np.ndarray) -> np.ndarray:
        """The fitted distribution function at ``sizes``."""
        logs = np.log(np.asarray(sizes, dtype=float))
        mu = math.log(self.median)
        if self.sigma == 0:
            return (logs >= mu).astype(float)
        z = (logs - mu) / (self.sigma * math.sqrt(2.0))
        return np.array([0.5 * (1.0 + math.erf(v)) for v in z])

    def quantiles(self, probabilities: np.ndarray) -> np.ndarray:
        """The fitted sizes at ``probabilities`` (each in (0, 1))."""
        normal = statistics.NormalDist()
        z = np.array([normal.inv_cdf(float(p)) for p in probabilities])
        return np.exp(math.log(self.median) + self.sigma * z)


#: The size an empty tool output counts as in the lognormal (which has no zero): one byte.
MIN_PAYLOAD_BYTES = 1


def fit_lognormal(sizes: Sequence[int] | np.ndarray) -> LognormalFit:
    """The maximum-likelihood lognormal of ``sizes`` and its Kolmogorov-Smirnov test. An empty output
    (size 0) is an output too: it counts as `MIN_PAYLOAD_BYTES`."""
    values = np.sort(np.maximum(np.asarray(sizes, dtype=float), MIN_PAYLOAD_BYTES))
    if not len(values) or not np.isfinite(values).all():
        raise ValueError("a lognormal needs at least one size, all finite")
    logs = np.log(values)
    mu, sigma = float(logs.mean()), float(logs.std())
    n = len(values)
    provisional = LognormalFit(math.exp(mu), sigma, n, math.nan, math.nan)
    cdf = provisional.cdf(values)
    upper = np.arange(1, n + 1) / n - cdf
    lower = cdf - np.arange(0, n) / n
    statistic = float(max(upper.max(), lower.max()))
    return LognormalFit(math.exp(mu), sigma, n, statistic, kolmogorov_p_value(statistic, n))


# Families and their tools ---------------------------------------------------------------------------------


def _shown_run(step: Step) -> Step:
    """The step whose output the agent sees: a fault that never clears shows its fallback's."""
    fault = step.fault
    return fault.fallback if fault is not None and fault.fails is None and fault.fallback is not None else step


def _families() -> list[str]:
    return [name for name in scenarios.names() if name != "mix"]


@functools.cache
def family_tool_shares() -> dict[str, dict[str, float]]:
    """Family -> tool -> share of its ideal sessions' calls, read off `PROBE_SCRIPTS` generated scripts
    of each registered family (every step's tool, or its fallback's when its fault never clears).
    Generated rather than read from the sources so that a third-party family counts too."""
    shares: dict[str, dict[str, float]] = {}
    for family in _families():
        counts: Counter[str] = Counter()
        for i in range(PROBE_SCRIPTS):
            script = scenarios.generate(family, session_seed(0, f"probe-{family}", i), **PROBE_PARAMS)
            counts.update(_shown_run(step).tool for step in script.steps)
        total = sum(counts.values())
        shares[family] = {tool: n / total for tool, n in sorted(counts.items())}
    return shares


def mix_weights(tool_counts: Mapping[str, int]) -> tuple[dict[str, float], float]:
    """Family weights that best explain ``tool_counts`` (tool -> calls), and the share of the calls
    whose tool some family uses (0: nothing matched; the weights are then empty).

    Each family is a distribution over tools (`family_tool_shares`); the weights are the maximum-
    likelihood mixture of those distributions for the observed calls, found by EM: every call is
    shared among the families that use its tool in proportion to how likely each is to make it, and
    a family's weight is its share of the calls. A tool several families use thus goes mostly to the
    family whose other tools the transcripts also call. Calls of tools no family uses are left out."""
    shares = family_tool_shares()
    families = list(shares)
    matched = {tool: n for tool, n in tool_counts.items() if any(tool in shares[f] for f in families) and n > 0}
    total = sum(tool_counts.values())
    if not matched or total == 0:
        return {}, 0.0
    tools = sorted(matched)
    counts = np.array([matched[t] for t in tools], dtype=float)
    # p[f, t]: the chance that family f's next call is tool t.
    p = np.array([[shares[f].get(t, 0.0) for t in tools] for f in families])
    weights = np.full(len(families), 1.0 / len(families))
    for _ in range(EM_ITERATIONS):
        joint = weights[:, None] * p
        responsibility = joint / joint.sum(axis=0, keepdims=True)
        weights = (responsibility * counts).sum(axis=1) / counts.sum()
    weights[weights < MIN_FAMILY_WEIGHT] = 0.0
    weights /= weights.sum()
    chosen = {f: round(float(w), 4) for f, w in zip(families, weights, strict=True) if w > 0}
    return chosen, float(counts.sum() / total)


# Fitting -------------------------------------------------------------------------------------------------


def _bounds(name: str) -> tuple[float, float]:
    """The ``ge`` / ``le`` bounds of a `ScenarioParams` field (what a config may hold)."""
    low, high = -math.inf, math.inf
    for item in ScenarioParams.model_fields[name].metadata:
        low = float(getattr(item, "ge", low))
        high = float(getattr(item, "le", high))
    return low, high


def _clip(name: str, value: float) -> float:
    low, high = _bounds(name)
    return min(high, max(low, value))


@dataclass(frozen=True, slots=True)
class WorkloadFit:
    """The fitted workload: what was measured, the lognormal of the measured payload sizes, and the
    generator params chosen to reproduce them (clipped to `ScenarioParams`' bounds)."""

    measures: WorkloadMeasures
    #: The lognormal of the measured payload sizes (what the transcripts show).
    payload: LognormalFit
    #: Median of the sessions' distinct successful calls, and the quartiles.
    turns_measured: tuple[float, float, float]
    #: Generator params.
    turns: int
    payload_median_bytes: int
    payload_sigma: float
    payload_max_bytes: int
    #: Family -> weight (sums to 1): the mixture that best explains the tool mix, or the default mix.
    weights: dict[str, float]
    #: Share of tool calls whose tool some family uses.
    matched_share: float
    #: True when no call matched any family and the weights are the default mix's.
    fallback: bool
    #: Tools of the transcripts that no family uses.
    unmatched_tools: tuple[str, ...]
    #: The generated payloads' lognormal after calibration (what the params give), if calibrated.
    calibrated: LognormalFit | None = None
    #: What a reader should know: fallbacks, clipped values, spreads one param cannot hold.
    notes: tuple[str, ...] = field(default=())


def _shared_params(turns: int, median: int, sigma: float, max_bytes: int) -> dict[str, Any]:
    return {"turns": turns, "payload_median_bytes": median, "payload_sigma": round(sigma, 4),
            "payload_max_bytes": max_bytes}


def _scenario_entries(weights: Mapping[str, float], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``[[scenarios]]`` tables: the one family alone, or a mix of several."""
    if len(weights) == 1:
        return [{"name": next(iter(weights)), **params}]
    return [{"name": "mix", **params, "weights": dict(weights)}]


def _script_payload_logs(entries: list[dict[str, Any]], n: int, seed: int) -> np.ndarray:
    """Log bytes of the payloads an ideal agent sees in ``n`` scripts of the scenario entries."""
    (entry,) = entries
    name, params = entry["name"], {k: v for k, v in entry.items() if k != "name"}
    sizes = [len(_shown_run(step).payload.encode("utf-8"))
             for i in range(n) for step in scenarios.generate(name, session_seed(seed, name, i), **params).steps]
    return np.log(np.asarray(sizes, dtype=float))


def fit(measures: WorkloadMeasures, *, calibrate: bool = True, seed: int = 0,
        progress: Callable[[str], None] | None = None) -> WorkloadFit:
    """Fit generator params to ``measures``. FitError when there is nothing to fit.

    - Payload sizes: the lognormal of the measured sizes (`fit_lognormal`). A family's outputs are
      not all drawn from its lognormal (tables have whole rows, log dumps are many times the median,
      fixed-size confirmations), so the generator's sizes are not exactly its params' lognormal. With
      ``calibrate``, the params are corrected by simulation: generate `CALIBRATION_SCRIPTS` scripts
      with the current params, then move the log-median by the gap between the measured and the
      generated log-mean, and set sigma so that the spread the generator adds on top of its own sigma
      is kept (sigma^2 = measured^2 - (generated^2 - sigma^2)); `CALIBRATION_ROUNDS` times.
    - Turns: the median of the sessions' distinct successful calls (failed attempts and re-fetches
      are the agent's, not the workload's).
    - Families: `mix_weights` of the tool counts; when no tool matches, the default mix.
    - ``payload_max_bytes``: the largest measured payload, so no generated one is larger.
    """
    if not measures.payload_bytes:
        raise FitError("the transcripts hold no successful tool result: there are no payload sizes to fit")
    notes: list[str] = []
    payload = fit_lognormal(measures.payload_bytes)
    distinct = np.array([s.distinct_calls for s in measures.sessions], dtype=float)
    q25, q50, q75 = (float(v) for v in np.percentile(distinct, [25, 50, 75]))
    turns = int(_clip("turns", round(q50)))
    if turns != round(q50):
        notes.append(f"turns: the measured median, {q50:g} distinct calls per session, is outside the "
                     f"generators' range; {turns} is used")
    if q75 > 1.5 * q25:
        notes.append(f"turns: session lengths vary (quartiles {q25:g} to {q75:g} distinct calls); every "
                     f"generated session has the median, {turns}")
    max_bytes = int(_clip("payload_max_bytes", max(measures.payload_bytes)))

    weights, matched = mix_weights(dict(measures.tool_counts))
    unmatched = tuple(sorted(t for t, _ in measures.tool_counts if not any(
        t in tools for tools in family_tool_shares().values())))
    fallback = not weights
    if fallback:
        weights = dict.fromkeys(DEFAULT_FAMILIES, round(1.0 / len(DEFAULT_FAMILIES), 4))
        notes.append("families: no tool of the transcripts is one a scenario family uses; the default mix's "
                     "weights are used")
    elif unmatched:
        notes.append(f"families: {1 - matched:.0%} of the tool calls use tools no family uses "
                     f"({', '.join(toml_string(t) for t in unmatched)}); the weights come from the other calls")

    target_mu, target_sigma = math.log(payload.median), payload.sigma
    mu, sigma = target_mu, target_sigma
    calibrated: LognormalFit | None = None
    if calibrate:
        for round_index in range(CALIBRATION_ROUNDS):
            if progress is not None:
                progress(f"calibrating payload sizes, round {round_index + 1} of {CALIBRATION_ROUNDS}")
            median = int(_clip("payload_median_bytes", round(math.exp(mu))))
            params = _shared_params(turns, median, _clip("payload_sigma", sigma), max_bytes)
            logs = _script_payload_logs(_scenario_entries(weights, params), CALIBRATION_SCRIPTS, seed)
            generated_mu, generated_sigma = float(logs.mean()), float(logs.std())
            used_sigma = params["payload_sigma"]
            mu = math.log(median) + target_mu - generated_mu
            added = generated_sigma ** 2 - used_sigma ** 2
            sigma = math.sqrt(max(0.0, target_sigma ** 2 - added))
            calibrated = LognormalFit(math.exp(generated_mu), generated_sigma, len(logs), math.nan, math.nan)
    median_bytes = int(_clip("payload_median_bytes", round(math.exp(mu))))
    payload_sigma = round(_clip("payload_sigma", sigma), 4)
    if median_bytes != round(math.exp(mu)) or payload_sigma != round(sigma, 4):
        notes.append("payload: the calibrated params fall outside the generators' bounds and were clipped "
                     f"(median {math.exp(mu):,.0f} B, sigma {sigma:.3f})")
    return WorkloadFit(measures, payload, (q50, q25, q75), turns, median_bytes, payload_sigma, max_bytes, weights,
                       matched, fallback, unmatched, calibrated, tuple(notes))


# The run config --------------------------------------------------------------------------------------------


def workload_config(fitted: WorkloadFit, *, sessions: int = DEFAULT_RUN_SESSIONS, seed: int = 0) -> dict[str, Any]:
    """A run config (the data of a TOML file) whose scenario makes sessions like the measured ones;
    strategies are left out, so a run compares every default strategy on them."""
    params = _shared_params(fitted.turns, fitted.payload_median_bytes, fitted.payload_sigma,
                            fitted.payload_max_bytes)
    return {"sessions": sessions, "seed": seed, "model": "frontier",
            "scenarios": _scenario_entries(fitted.weights, params)}


def _comments(fitted: WorkloadFit) -> dict[str, list[str]]:
    """Config key -> the comment lines above it, saying where its value came from."""
    m = fitted.measures
    p = fitted.payload
    q50, q25, q75 = fitted.turns_measured
    calibration = ("calibrated by generating scripts until their sizes match the measured ones"
                   if fitted.calibrated is not None else "the measured lognormal, uncalibrated")
    weights = (["no tool of the transcripts is used by a scenario family: the default mix's weights"]
               if fitted.fallback else
               [f"the mixture of families whose tools best explain the {sum(n for _, n in m.tool_counts):,} "
                f"tool calls ({fitted.matched_share:.0%} of them use a tool some family uses)"])
    return {
        "turns": [f"median distinct successful tool calls per session: {q50:g} (quartiles {q25:g} to {q75:g}, "
                  f"{len(m.sessions)} sessions)"],
        "payload_median_bytes": [f"measured payloads: lognormal median {p.median:,.0f} B over {p.n:,} successful "
                                 f"tool results; {calibration}"],
        "payload_sigma": [f"measured payloads: lognormal sigma {p.sigma:.3f} (Kolmogorov-Smirnov D = "
                          f"{p.ks_statistic:.3f}, p = {p.ks_p_value:.3g}); {calibration}"],
        "payload_max_bytes": ["the largest measured payload"],
        "weights": weights,
    }


#: Characters a TOML basic string writes as escapes (TOML 1.0, "String"): the quote, the backslash and the
#: control characters (tab too, for one-line readability); the short escapes where TOML has them.
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_TOML_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')
#: Lone surrogates: no TOML text (UTF-8) can hold one; written as U+FFFD.
_SURROGATES = re.compile(r"[\ud800-\udfff]")
#: Characters a TOML comment may not hold (control characters other than tab).
_COMMENT_FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string, quotes included: ``"`` and ``\\`` and control characters escaped by
    the TOML spec, a lone surrogate (not a Unicode scalar value) written as U+FFFD."""
    text = _SURROGATES.sub("\ufffd", text)
    return '"' + _TOML_ESCAPED.sub(lambda m: _TOML_ESCAPES.get(m.group(), f"\\u{ord(m.group()):04X}"), text) + '"'


def toml_comment(text: str) -> str:
    """``text`` as one TOML comment line: a control character (a newline in a name) is written as its
    escape, so the comment can neither end early nor hold what TOML forbids; lone surrogates as U+FFFD."""
    text = _SURROGATES.sub("\ufffd", text)
    return "# " + _COMMENT_FORBIDDEN.sub(lambda m: toml_string(m.group())[1:-1], text)


def _source_name(source: str) -> str:
    """A transcript's name in the header comment: as given, quoted (`toml_string`) when it holds a quote, a
    backslash, a comma or a character that is not printable, so a list of names reads unambiguously."""
    plain = source.isprintable() and not any(c in source for c in '"\\,') and not _SURROGATES.search(source)
    return source if plain else toml_string(source)


def workload_toml(fitted: WorkloadFit, *, sessions: int = DEFAULT_RUN_SESSIONS, seed: int = 0,
                  sources: Sequence[str] = ()) -> str:
    """`workload_config` as TOML text, with a comment line above each fitted value saying where it came
    from and the fit's notes at the top. The text is parsed back (`tomllib`) before it is returned:
    ValueError if it does not read back as exactly the config."""
    data = workload_config(fitted, sessions=sessions, seed=seed)
    comments = _comments(fitted)
    lines = ["# A ctxbench workload fitted to agent transcripts by `ctxbench fit`."]
    if sources:
        lines.append(toml_comment(f"Transcripts: {', '.join(_source_name(s) for s in sources)}"))
    lines += [toml_comment(f"Note: {note}") for note in fitted.notes]
    for key in ("sessions", "seed", "model"):
        lines.append(tomli_w.dumps({key: data[key]}).strip())
    (entry,) = data["scenarios"]
    if "weights" not in entry:  # one family alone: the weights' reason is the reason for its name
        comments["name"] = comments["weights"]
    lines += ["", "[[scenarios]]"]
    for key, value in entry.items():
        if key == "weights":
            continue
        lines += [toml_comment(line) for line in comments.get(key, [])]
        lines.append(tomli_w.dumps({key: value}).strip())
    if "weights" in entry:
        lines += ["", *[toml_comment(line) for line in comments["weights"]], "[scenarios.weights]"]
        lines += [tomli_w.dumps({name: weight}).strip() for name, weight in entry["weights"].items()]
    text = "\n".join(lines) + "\n"
    # The text is assembled by hand for its comments: it must still read back as exactly the data.
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"the workload TOML does not parse ({e})") from None
    if parsed != data:
        raise ValueError("the workload TOML does not read back as the fitted config")
    return text


def write_workload(fitted: WorkloadFit, path: Path, *, sessions: int = DEFAULT_RUN_SESSIONS, seed: int = 0,
                   sources: Sequence[str] = ()) -> Path:
    """Write `workload_toml` to ``path`` atomically (a reader never sees half a file)."""
    text = workload_toml(fitted, sessions=sessions, seed=seed, sources=sources)
    write_atomically(path, text.encode("utf-8"))
    return path


# Replaying sessions -----------------------------------------------------------------------------------------


def _alternating(messages: Iterable[Message]) -> tuple[Message, ...]:
    """``messages`` with consecutive messages of one role merged into one, as a trace reader merges them
    (a nudge after a tool result, a hand-over after the previous agent's last result, prose followed by
    the next call), so that roles alternate as in any provider's transcript."""
    out: list[Message] = []
    for message in messages:
        if out and out[-1].role == message.role:
            previous = out[-1]
            out[-1] = Message.build(message.role, previous.blocks + message.blocks,
                                    kind="task" if previous.kind == "task" else None, meter=previous.meter)
        else:
            out.append(message)
    return tuple(out)


def _replayed(script: SessionScript, profile: Profile, *, scenario: str, index: int,
              fmt: str) -> ImportedSession:
    """``script`` replayed under `REPLAY_STRATEGY` with the mock model, as a transcript labelled with
    trace format ``fmt``. The agents of a multi-agent script follow each other in one transcript (a
    hand-over joins the previous agent's last message)."""
    strategy = create(REPLAY_STRATEGY)
    replay = Replay(script, strategy, profile, Switches(), scenario=scenario,
                    session_index=index)
    replay.run()
    messages = _alternating(m for ctx in replay.contexts.values() for m in ctx.messages)
    tools = sorted({b.name for m in messages for b in m.blocks if isinstance(b, ToolUse)})
    return ImportedSession(source=f"ctxbench:{scenario}", session_id=f"{scenario}-{index:05d}", format=fmt,
                           system="", messages=messages, model=profile.name, tools=tuple(tools))


def _as_config(config: RunConfig | Mapping[str, Any]) -> RunConfig:
    return config if isinstance(config, RunConfig) else config_from_data(config)


def generated_sessions(config: RunConfig | Mapping[str, Any], *, sessions: int, seed: int | None = None,
                       progress: Callable[[int, int], None] | None = None,
                       fmt: str = "openai-chat") -> list[ImportedSession]:
    """``sessions`` sessions of ``config``'s scenarios (split by weight, seeded as `ctxbench run` seeds
    them, with root seed ``seed`` or the config's), replayed under `REPLAY_STRATEGY` with the config's
    model profile; ``progress(done, total)`` after each. ``fmt`` is the trace format the transcripts
    are labelled with (`ImportedSession.format`)."""
    run_config = _as_config(config).model_copy(update={"sessions": sessions})
    root = run_config.seed if seed is None else seed
    profile = run_config.profile()
    out: list[ImportedSession] = []
    for entry, count in zip(run_config.scenarios, allocate(run_config), strict=True):
        for index in range(count):
            script = scenarios.generate(entry.name, session_seed(root, entry.name, index), **entry.params)
            out.append(_replayed(script, profile, scenario=entry.name, index=index, fmt=fmt))
            if progress is not None:
                progress(len(out), sessions)
    return out


def generated_measures(config: RunConfig | Mapping[str, Any], *, sessions: int = 40, seed: int | None = None,
                       progress: Callable[[int, int], None] | None = None) -> WorkloadMeasures:
    """`measure` of `generated_sessions`: what the config makes, for the side-by-side with the transcripts."""
    return measure(generated_sessions(config, sessions=sessions, seed=seed, progress=progress))


def synthetic_sessions(scenario: str, n: int, seed: int = 0, *, model: str = "frontier", fmt: str = "openai-chat",
                       **params: Any) -> list[ImportedSession]:
    """``n`` transcripts of family ``scenario`` with generator ``params`` (known truth for a fit to
    recover), replayed under `REPLAY_STRATEGY` with the mock model of profile ``model``, labelled as
    trace format ``fmt``."""
    config = {"sessions": n, "seed": seed, "model": model, "scenarios": [{"name": scenario, **params}]}
    return generated_sessions(config, sessions=n, fmt=fmt)


def write_synthetic_traces(out_dir: Path, n: int, fmt: str = "openai-chat", *, scenario: str = "k8s_crashloop",
                           seed: int = 0, **params: Any) -> list[Path]:
    """Write `synthetic_sessions` as traces of format ``fmt`` into ``out_dir`` (created if missing): a file
    ``<session id>.json`` per session, or a session directory for a directory format; the files written."""
    from harness.run.traces import dump_session

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for session in synthetic_sessions(scenario, n, seed, fmt=fmt, **params):
        dumped = dump_session(session, fmt)
        # A file format gives one JSON text; a directory format, the files of a session directory.
        files = {f"{session.session_id}.json": dumped} if isinstance(dumped, str) else {
            f"{session.session_id}/{name}": text for name, text in dumped.items()}
        for name, text in files.items():
            path = out_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, text.encode("utf-8"))
            written.append(path)
    return written


# The report's inputs ---------------------------------------------------------------------------------------


def report_inputs(fitted: WorkloadFit, generated: WorkloadMeasures, *, sources: Sequence[str] = ()) -> dict[str, Any]:
    """Plain data for `reports.fit.write_fit_report`: the measured and the generated measures, the
    lognormal fit, the generator params, the family weights and the notes."""
    p = fitted.payload
    return {
        "sources": list(sources),
        "measured": fitted.measures.as_dict(),
        "generated": generated.as_dict(),
        "fit": {"median": p.median, "sigma": p.sigma, "n": p.n, "ks_statistic": p.ks_statistic,
                "ks_p_value": p.ks_p_value},
        "params": _shared_params(fitted.turns, fitted.payload_median_bytes, fitted.payload_sigma,
                                 fitted.payload_max_bytes),
        "weights": dict(fitted.weights),
        "fallback": fitted.fallback,
        "notes": list(fitted.notes),
    }
