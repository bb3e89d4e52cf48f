"""Model profiles: the calibrated parameters of the mock model (docs/model.md 9), with sources.

Anchor classes (a judgment call): frontier ~ Claude Sonnet 4.5; mid ~ GPT-4o / GPT-4.1; small ~
GPT-5 mini / flash class; stress-2023 ~ a GPT-3.5-era worst case. ``oracle`` is for tests: perfect
recall, no malformed calls, an unlimited window. A user may define a profile in TOML with these
field names (`load_profile`).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from harness.core.suggest import did_you_mean
from scenarios.base import Lookup

Probability = Field(ge=0, le=1)
#: The most tokens any count of a profile may hold: the oracle's "unlimited" window is 10**9, and every
#: token field below the window (reserve, summary, cache threshold) is bounded by it too.
MAX_TOKENS = 10**9
#: A recall half-length in tokens: at least one token (below that (L / L_half)**k overflows a float
#: for any long prompt), and infinity means "no decay", which the oracle uses and a user may write.
HalfLength = Field(ge=1, allow_inf_nan=True)
#: A decay exponent: the steepest fit of any profile is ~2.1 (stress-2023's literal curve) and the fit's
#: search box ends at 5; at 20, (L / L_half)**k is at most 1e180 (10**9 tokens, L_half = 1), a float.
Exponent = Field(gt=0, le=20)
#: USD per million tokens: the dearest listed model costs a few hundred; 10,000 catches a typo.
Price = Field(ge=0, le=10_000)
#: Seconds of latency per prompt token: the built-ins' are 1e-5 to 1e-4; one second per token is
#: slower than any served model and keeps a 10**9-token prompt's latency finite.
SecondsPerToken = Field(ge=0, le=1)


class Profile(BaseModel):
    """One model's behaviour. Every field has a source or is marked (J) in docs/model.md 9.

    Numbers are strict (``"2"`` or ``true`` is not 2) and finite (inf only where it means "no decay"),
    and each has an upper bound no real model reaches, so no value a user may write overflows the
    curves or the clock later, in the middle of a run.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    name: str
    #: Context window in tokens.
    window_tokens: int = Field(ge=1024, le=MAX_TOKENS)
    #: Recall of a visible fact at short length (NoLiMa base scores: GPT-4o 99.3, GPT-4o-mini 84.9).
    p_max: float = Probability
    #: Length decay r(L) = 1 / (1 + (L / L_half)^k) of a latent look-up (docs/model.md 2.1, 9):
    #: fitted to Context Rot / NoLiMa, whose needles never match the question literally.
    L_half: float = HalfLength
    k: float = Exponent
    #: The same decay for a literal look-up (an exact value copied from the text): least squares to
    #: the profile's RULER row (`LITERAL_SOURCES`, `fit_length_curve`). None: the latent curve.
    L_half_literal: float | None = Field(default=None, ge=1, allow_inf_nan=True)
    k_literal: float | None = Field(default=None, gt=0, le=20)  # as k
    #: Depth of the middle trough at 4K tokens (Lost in the Middle: GPT-3.5 middle/first 0.71).
    D0: float = Field(ge=0, le=0.6)
    #: Divide by the mean of the position factor so length fits (already averaged over depth)
    #: do not count position twice.
    position_mean_normalise: bool = True
    #: Malformed-call base rate, and its growth with length (g_L) and raw-output share (g_N). (J)
    p_malformed_base: float = Probability
    #: Growths are 0.15-1.0 (J); 100 multiplies the base rate a hundredfold at 8K tokens, past any fit.
    g_L: float = Field(ge=0, le=100)
    g_N: float = Field(ge=0, le=100)
    p_fix: float = Probability
    p_repeat_error: float = Probability
    #: Chance that the agent answers with an invented value when a fact it needs is visibly missing
    #: (in no visible message, in no form) instead of fetching it again or re-exploring (docs/model.md
    #: v3 change 4). Source: AbstentionBench [AbstentionBench, 2025, arXiv 2506.09038], the share of
    #: underspecified questions a model answers instead of abstaining (1 - abstention recall, mean of
    #: its underspecified-context sets): GPT-4o 0.24, Llama-3.1-405B 0.21, Llama-3.1-8B 0.27,
    #: Mistral-7B 0.26; reasoning models about 0.5.
    p_confabulate: float = Field(default=0.24, ge=0, le=1)
    #: Chance that the agent's reasoning after an output restates each fact the output showed (docs/
    #: model.md v3 change 3): measured on public SWE-agent, tau-bench and OpenHands transcripts by
    #: ``docs/validation/measure_p_note.py`` (a value new in an observation appears verbatim in the
    #: agent's next 1-3 turns: 0.165 of 5,657 values; ids 0.229, numbers 0.115, paths 0.052).
    p_note: float = Field(default=0.165, ge=0, le=1)
    #: Chance that a summary misstates a value it keeps (docs/model.md v3 change 8). (J) from a proxy:
    #: summary hallucination leaderboards (Vectara HHEM, 2025: 1-10% of summaries hold an unsupported
    #: claim) spread over the ~10 values a summary states.
    p_summary_error: float = Field(default=0.01, ge=0, le=1)
    #: Chance that a summary leaves a done step out of its record of steps done (docs/model.md v3
    #: change 8). (J) from a proxy: probe-based compaction evaluations (Factory.ai, 2025) score
    #: "artifact trail" (which files were read or changed) 2.2-2.45 of 5 after compaction, about half kept.
    p_record_drop: float = Field(default=0.5, ge=0, le=1)
    p_nudge_follow: float = Probability
    p_shortcut: float = Probability
    #: Best-case share of facts a summary keeps; times r(N_in). (J)
    keep_max: float = Probability
    max_summary_tokens: int = Field(ge=50, le=MAX_TOKENS)
    #: A thought is padded to this length token by token, once per step and branch: the built-ins
    #: use 80-120, and 10,000 tokens of preamble per call is past any logged agent.
    thought_tokens: int = Field(ge=1, le=10_000)
    #: Latency: base seconds, seconds per uncached / cached input token, decode tokens per second,
    #: lognormal sigma (P95/P50 about 1.8 for Sonnet 4.5).
    #: Bounds: an hour of fixed latency per call is no model; 0.1 to 10**6 decode tokens per second
    #: spans a CPU-bound local model to any accelerator; sigma 5 already puts P95 at 3,700 x P50, and
    #: exp(sigma * z) stays finite.
    base_s: float = Field(ge=0, le=3600)
    b_uncached: float = SecondsPerToken
    b_cached: float = SecondsPerToken
    decode_tps: float = Field(ge=0.1, le=1e6)
    sigma: float = Field(ge=0, le=5)
    #: USD per million tokens.
    price_in: float = Price
    price_cache_read: float = Price
    price_cache_write: float = Price
    price_out: float = Price
    #: Prompt caching: minimum cacheable prompt (None: caching off), TTL refreshed on hit, granularity.
    cache_min_tokens: int | None = Field(default=1024, ge=1, le=MAX_TOKENS)
    #: False turns prompt caching off whatever the fields below say (a TOML config has no null, so
    #: this is how one writes "caching off", e.g. for The Complexity Trap's cost comparison).
    caching: bool = True
    #: Providers keep a cache 5 min to 1 h; a year is "never expires" for any session.
    cache_ttl_s: float = Field(default=300.0, gt=0, le=365 * 86_400)
    cache_granularity: int = Field(default=1, ge=1, le=MAX_TOKENS)
    #: Throttling, off by default: a per-call probability, or limits over 60 s of session clock.
    p_throttle: float = Field(default=0.0, ge=0, le=1)
    #: Provider tiers allow up to tens of thousands of requests and tens of millions of tokens per
    #: minute; a million times that is still "unlimited" and stays a 64-bit TOML integer.
    rpm: int | None = Field(default=None, ge=1, le=10**9)
    tpm: int | None = Field(default=None, ge=1, le=10**12)
    #: Tokens held back for the reply when checking the window (4,096, J).
    max_output_reserve: int = Field(default=4096, ge=0, le=MAX_TOKENS)
    #: Extra input tokens of a summary call's prompt (500, J).
    summarizer_prompt_tokens: int = Field(default=500, ge=0, le=MAX_TOKENS)
    #: Turn limit per session (The Complexity Trap: 250) and attempts per step (12, J). Bounded at 40
    #: and about 80 times those: a longer limit only lets a stuck session spin for hours.
    max_turns: int = Field(default=250, ge=1, le=10_000)
    max_attempts_per_step: int = Field(default=12, ge=1, le=1000)

    @model_validator(mode="before")
    @classmethod
    def _retired_fields(cls, data: Any) -> Any:
        if isinstance(data, dict) and "p_refetch" in data:
            raise ValueError("p_refetch was retired with model v3: an agent fetches again whatever it can "
                             "trace to its source; set p_confabulate (the chance of inventing a missing value)")
        return data

    @model_validator(mode="before")
    @classmethod
    def _caching_off_has_one_spelling(cls, data: Any) -> Any:
        """``cache_min_tokens = None`` (caching off) becomes ``caching = False`` with the default threshold:
        a run directory's config.toml cannot write None (TOML has no null), so the other spelling would
        read back as caching on, another config with another hash."""
        if isinstance(data, dict) and "cache_min_tokens" in data and data["cache_min_tokens"] is None:
            data = {k: v for k, v in data.items() if k != "cache_min_tokens"} | {"caching": False}
        return data

    @field_validator("L_half", "L_half_literal", mode="before")
    @classmethod
    def _not_nan(cls, value: Any) -> Any:
        # These two fields allow inf (no decay), so nan would only meet the bound and read as "should
        # be >= 1": say what is wrong instead.
        if isinstance(value, float) and math.isnan(value):
            raise ValueError("Input should be a number of tokens or inf (no decay), not nan")
        return value

    # The curves of docs/model.md 2.1 --------------------------------------------------------------
    def length_factor(self, tokens: float, lookup: Lookup = "latent") -> float:
        """r(L) of the look-up kind's curve."""
        L_half, k = self.L_half, self.k
        if lookup == "literal" and self.L_half_literal is not None:
            L_half, k = self.L_half_literal, self.k_literal if self.k_literal is not None else self.k
        if math.isinf(L_half):
            return 1.0
        return 1.0 / (1.0 + (max(tokens, 0.0) / L_half) ** k)

    def trough_depth(self, tokens: float) -> float:
        """D(L) = clamp(D0 + 0.05 * log2(L / 4096), 0, 0.6); 0 when D0 is 0 (no position effect)."""
        if self.D0 == 0:
            return 0.0
        return min(0.6, max(0.0, self.D0 + 0.05 * math.log2(max(tokens, 1.0) / 4096)))

    def p_recall(self, tokens: float, position: float, lookup: Lookup = "latent") -> float:
        """Probability of finding a visible fact's value, at prompt length L and relative position x, for
        a look-up of that kind. The middle trough applies to latent look-ups only (docs/model.md v3
        change 5): it comes from Lost in the Middle's question answering; the depth-resolved needle
        results we read (Kamradt's raw GPT-4-1106 run) show no mid-context trough of that shape
        (GPT-4-1106 loses needles at 7-21% depth only past 64K tokens, which its length curve holds)."""
        depth = self.trough_depth(tokens) if lookup == "latent" else 0.0
        position_factor = 1.0 - depth * math.sin(math.pi * position) ** 2
        norm = (1.0 - depth / 2) if self.position_mean_normalise else 1.0
        return min(1.0, self.p_max * self.length_factor(tokens, lookup) * position_factor / norm)

    def p_keep(self, tokens_in: float, lookup: Lookup = "latent") -> float:
        """Probability a summary keeps a visible fact: keep_max * r_sum(N_in) with the curve of the
        fact's look-up kind (docs/model.md 4)."""
        return self.keep_max * self.length_factor(tokens_in, lookup)

    def p_malformed(self, tokens: float, noise: float) -> float:
        growth = 1.0 + self.g_L * math.log2(max(tokens, 4096.0) / 4096.0)
        return min(0.5, self.p_malformed_base * growth * (1.0 + self.g_N * noise))

    def model_seconds(self, uncached: int, cached: int, output: int, tokens: int, z: float) -> float:
        decode = (output / self.decode_tps) * (1.0 + 0.15 * tokens / 100_000)
        return (self.base_s + self.b_uncached * uncached + self.b_cached * cached + decode) * math.exp(self.sigma * z)

    def cost_usd(self, uncached: int, cached: int, written: int, output: int) -> float:
        return (
            (uncached - written) * self.price_in
            + written * self.price_cache_write
            + cached * self.price_cache_read
            + output * self.price_out
        ) / 1e6


# Literal recall: RULER rows and the least-squares fit -----------------------------------------------

#: RULER's context lengths (tokens) and the rows the literal curves are fitted to: mean accuracy (%)
#: over its eight retrieval (needle-in-a-haystack) tasks, single, multi-key, multi-value and multi-query
#: needles [RULER, 2024, arXiv 2404.06654v3, Appendix F, Table 13]. Its 13-task means also hold
#: multi-hop tracing, aggregation and question answering, which are not literal look-ups. With the
#: paper's other category rows (Tables 14-16) and their weights (8 retrieval, 1 tracing, 2 aggregation,
#: 2 QA), the Gemini, GPT-4 and Mistral rows give back the 13-task means of Table 3 within 0.1 points at
#: every length; GPT-4's and Mistral's rows are the same in the paper's first version.
RULER_LENGTHS: tuple[int, ...] = (4096, 8192, 16_384, 32_768, 65_536, 131_072)
RULER_ROWS: dict[str, tuple[float, ...]] = {
    "Gemini-1.5-pro": (99.8, 99.9, 99.6, 99.7, 99.7, 99.6),
    "GPT-4-1106-preview": (99.9, 99.9, 98.7, 98.3, 90.9, 84.8),
    "Llama-3.1-8B-Instruct": (99.9, 99.9, 99.8, 99.6, 98.7, 92.6),
    "Mistral-7B-Instruct-v0.2": (98.1, 96.2, 94.3, 85.5, 51.1, 10.7),
}
#: The RULER row each profile's literal curve is fitted to (docs/model.md 9). frontier: the best 128K
#: retrieval row RULER's authors ran themselves (Gemini-1.5-pro). Its row is flat within 0.3 points, so
#: the fit ends on the search bound k = 5 with L_half = 2e8 tokens: no decay measurable within any
#: window. small's row is flat to 32K and falls after 64K, so its fit also ends on k = 5.
LITERAL_SOURCES: dict[str, str] = {
    "frontier": "Gemini-1.5-pro",
    "mid": "GPT-4-1106-preview",
    "small": "Llama-3.1-8B-Instruct",
    "stress-2023": "Mistral-7B-Instruct-v0.2",
}
#: RMSE (probability units) of each stored literal fit against its row; `fit_length_curve` reproduces
#: the stored L_half_literal and k_literal (checked by the tests).
#: The rows sit above p_max at short lengths (99.9 against small's 0.97), so the ceiling, not the decay,
#: is most of small's residual.
LITERAL_FIT_RMSE: dict[str, float] = {"frontier": 0.0024, "mid": 0.0130, "small": 0.0241, "stress-2023": 0.0145}
#: The fit's search box: log10(L_half) in [3, 9], k in [0.05, 5].
_FIT_LOG10_L_HALF = (3.0, 9.0)
_FIT_K = (0.05, 5.0)


def fit_length_curve(row: Sequence[float], p_max: float,
                     lengths: Sequence[int] = RULER_LENGTHS) -> tuple[float, float, float]:
    """(L_half, k, RMSE) minimising the squared error of ``p_max / (1 + (L / L_half)^k)`` against
    ``row`` (accuracies in %): a grid over the search box refined twice, deterministic."""
    L = np.asarray(lengths, dtype=float)
    y = np.asarray(row, dtype=float) / 100.0

    def best(log_l_half: np.ndarray, ks: np.ndarray) -> tuple[float, float, float]:
        grid_l, grid_k = np.meshgrid(log_l_half, ks, indexing="ij")
        pred = p_max / (1.0 + (L / 10.0 ** grid_l[..., None]) ** grid_k[..., None])
        sse = ((pred - y) ** 2).sum(axis=-1)
        i = np.unravel_index(int(np.argmin(sse)), sse.shape)
        return float(grid_l[i]), float(grid_k[i]), float(sse[i])

    lo, hi = _FIT_LOG10_L_HALF
    k_lo, k_hi = _FIT_K
    log_l, k, sse = best(np.arange(lo, hi + 1e-9, 0.01), np.arange(k_lo, k_hi + 1e-9, 0.005))
    for step in (0.001, 0.0001):
        log_l, k, sse = best(np.clip(np.arange(log_l - 20 * step, log_l + 20.5 * step, step), lo, hi),
                             np.clip(np.arange(k - 10 * step, k + 10.25 * step, step / 2), k_lo, k_hi))
    return 10.0 ** log_l, k, math.sqrt(sse / len(L))


_BUILTIN: dict[str, dict[str, Any]] = {
    "frontier": dict(
        window_tokens=200_000, p_max=0.995, L_half=280_000, k=1.0, L_half_literal=2.035e8, k_literal=5.0, D0=0.10,
        p_malformed_base=0.005, g_L=0.15, g_N=1.0, p_fix=0.95, p_repeat_error=0.15, p_confabulate=0.21,
        p_nudge_follow=0.60, p_shortcut=0.05, keep_max=0.97, max_summary_tokens=1500, thought_tokens=120,
        base_s=0.8, b_uncached=1.0e-4, b_cached=1.5e-5, decode_tps=70, sigma=0.35,
        price_in=3.00, price_cache_read=0.30, price_cache_write=3.75, price_out=15.00,
        cache_min_tokens=1024, cache_ttl_s=300, cache_granularity=1,
    ),
    "mid": dict(
        window_tokens=128_000, p_max=0.99, L_half=71_000, k=1.05, L_half_literal=447_900, k_literal=1.419, D0=0.15,
        p_malformed_base=0.01, g_L=0.2, g_N=1.0, p_fix=0.90, p_repeat_error=0.20, p_confabulate=0.24,
        p_nudge_follow=0.50, p_shortcut=0.10, keep_max=0.95, max_summary_tokens=1500, thought_tokens=120,
        base_s=0.45, b_uncached=6e-5, b_cached=1e-5, decode_tps=130, sigma=0.35,
        price_in=2.00, price_cache_read=0.50, price_cache_write=2.00, price_out=8.00,
        cache_min_tokens=1024, cache_ttl_s=300, cache_granularity=128,
    ),
    "small": dict(
        window_tokens=128_000, p_max=0.97, L_half=24_000, k=1.0, L_half_literal=241_800, k_literal=5.0, D0=0.20,
        p_malformed_base=0.05, g_L=0.3, g_N=1.0, p_fix=0.80, p_repeat_error=0.30, p_confabulate=0.27,
        p_nudge_follow=0.30, p_shortcut=0.20, keep_max=0.90, max_summary_tokens=1000, thought_tokens=80,
        base_s=0.4, b_uncached=4e-5, b_cached=6e-6, decode_tps=180, sigma=0.35,
        price_in=0.25, price_cache_read=0.025, price_cache_write=0.25, price_out=2.00,
        cache_min_tokens=1024, cache_ttl_s=300, cache_granularity=128,
    ),
    "stress-2023": dict(
        window_tokens=16_384, p_max=0.95, L_half=17_000, k=1.0, L_half_literal=68_440, k_literal=3.106, D0=0.29,
        p_malformed_base=0.08, g_L=0.3, g_N=1.0, p_fix=0.70, p_repeat_error=0.40, p_confabulate=0.26,
        p_nudge_follow=0.20, p_shortcut=0.30, keep_max=0.85, max_summary_tokens=800, thought_tokens=80,
        base_s=1.0, b_uncached=1.0e-4, b_cached=1.0e-4, decode_tps=50, sigma=0.5,
        price_in=0.15, price_cache_read=0.075, price_cache_write=0.15, price_out=0.60,
        cache_min_tokens=None,
    ),
    # Test-only control: perfect recall, no decay, no trough, no malformed calls, unlimited window.
    "oracle": dict(
        window_tokens=10**9, p_max=1.0, L_half=math.inf, k=1.0, L_half_literal=math.inf, k_literal=1.0, D0=0.0,
        p_malformed_base=0.0, g_L=0.0, g_N=0.0, p_fix=1.0, p_repeat_error=0.0, p_confabulate=0.0,
        p_note=0.0, p_summary_error=0.0, p_record_drop=0.0,
        p_nudge_follow=1.0, p_shortcut=0.0, keep_max=1.0, max_summary_tokens=1500, thought_tokens=120,
        base_s=0.8, b_uncached=1.0e-4, b_cached=1.5e-5, decode_tps=70, sigma=0.35,
        price_in=3.00, price_cache_read=0.30, price_cache_write=3.75, price_out=15.00,
    ),
}

PROFILE_NAMES = tuple(_BUILTIN)


def profile(base: str, /, **overrides: Any) -> Profile:
    """A built-in profile, optionally with some fields changed (``name`` included)."""
    try:
        fields = _BUILTIN[base]
    except KeyError:
        raise KeyError(f"unknown model profile {base!r}{did_you_mean(base, PROFILE_NAMES)}; "
                       f"known: {', '.join(PROFILE_NAMES)}") from None
    return Profile(**({"name": base} | fields | overrides))


def profile_from_table(table: Mapping[str, Any], *, default_name: str | None = None) -> Profile:
    """A profile from a table of fields: either every field, or ``base = "<name>"`` plus the fields to
    change. KeyError for an unknown base, pydantic's ValidationError for a bad field."""
    fields = dict(table)
    base = fields.pop("base", None)
    if default_name is not None:
        fields.setdefault("name", default_name)
    if base is not None:
        return profile(str(base), **fields)
    return Profile(**fields)


#: The largest TOML file read: configs are a few KB, and a bound keeps ``/dev/zero`` from reading forever.
MAX_TOML_BYTES = 16 * 2**20


class TomlFileError(ValueError):
    """A user's TOML file that cannot be read or parsed; the message is one line naming the file."""


def read_toml(path: Path) -> dict[str, Any]:
    """The tables of a user's TOML file (config or profile); TomlFileError names the file and what is
    wrong with it: missing, a directory, unreadable, binary, not UTF-8, or not TOML. An empty file is
    valid TOML: an empty table. A UTF-8 byte-order mark (some editors write one) is skipped."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_TOML_BYTES + 1)
    except FileNotFoundError:
        raise TomlFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TomlFileError(f"{path}: is a directory") from None
    except OSError as e:  # permissions, a symlink loop, a path through a file, a name too long, ...
        raise TomlFileError(f"{path}: cannot be read ({e.strerror or e})") from None
    if len(raw) > MAX_TOML_BYTES:
        raise TomlFileError(f"{path}: larger than {MAX_TOML_BYTES // 2**20} MiB, not a config")
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise TomlFileError(f"{path}: not UTF-8 text (a UTF-16 byte-order mark; save it as UTF-8)")
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise TomlFileError(f"{path}: a binary file, not TOML text (NUL byte at offset {nul})")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        offset = e.start + (3 if raw.startswith(b"\xef\xbb\xbf") else 0)
        raise TomlFileError(f"{path}: not UTF-8 text (byte 0x{raw[offset]:02x} at offset {offset})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise TomlFileError(f"{path}: {e}") from None
    except ValueError as e:  # an integer past Python's digit limit: its advice is for Python code
        raise TomlFileError(f"{path}: {str(e).partition(';')[0]}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise TomlFileError(f"{path}: arrays or tables nested too deeply to read") from None


def load_profile(source: str | Path) -> Profile:
    """A built-in profile by name, or a TOML file holding a table as `profile_from_table` reads it
    (named after the file unless it says otherwise). TomlFileError when the file cannot be read."""
    if isinstance(source, str) and source in _BUILTIN:
        return profile(source)
    path = Path(source)
    return profile_from_table(read_toml(path), default_name=path.stem)
