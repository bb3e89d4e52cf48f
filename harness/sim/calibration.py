"""Calibration measured end to end: recall probes through real contexts and the real mock model
(docs/model.md 11 P6, P7), the M2 filler-and-facts experiment, and the formula curves they are
compared with.

The checks in ``tests/test_calibration.py`` evaluate `Profile.p_recall` directly. The probes here
build real `Context`s instead (a task prefix, fact-free log output as filler, one message holding
one needle fact), call `MockModel.decide` and read its decision trace. So they also test what the
formula checks take on trust: that the model measures L and x from the messages it is given, and
that its draws are keyed by step, attempt and key, never by context.

Every probe names the needle fact's look-up kind (docs/model.md 2.1): ``literal`` (the value is
copied from the text, RULER-like) or ``latent`` (found through an association, NoLiMa-like). The model
uses the curve of that kind, so the same contexts measure both curves.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd

from harness.core.context import Context
from harness.core.crn import session_seed, u
from harness.core.messages import Message, Text, TextMeter, ToolResult
from harness.core.tokens import MESSAGE_OVERHEAD_TOKENS, default_tokenizer
from harness.core.tools import arg_types
from harness.sim.model import MockModel
from harness.sim.profiles import PROFILE_NAMES, Profile, profile
from harness.sim.view import Plan, Reader
from scenarios.base import Call, Fact, Lookup, SessionScript, Step, Task

#: Tokens of the probe's only prefix: the task message stands in for the 2,000-token system prompt,
#: so the needle can sit near x = 0 (docs/model.md 11: the probe's only prefix is a 100-token task message).
PREFIX_TOKENS = 100
#: P6 draws the needle's position uniformly from this range (docs/model.md 11).
X_RANGE = (0.1, 0.9)
#: The x points the formula curves average over: as in tests/test_calibration.py.
X_POINTS: tuple[float, ...] = tuple(X_RANGE[0] + (X_RANGE[1] - X_RANGE[0]) * i / 800 for i in range(801))
#: Filler messages per context, at most. The needle goes between filler messages, so this sets the x
#: grid (steps of about 1/200 at long lengths; of one log line, about 45 tokens, at short ones); it also
#: bounds the per-sample cost, which is linear in the number of messages (building the window, the
#: model's scans from the end).
MAX_FILLER_MESSAGES = 200
#: Probe contexts are within this share of the requested length.
LENGTH_TOLERANCE = 0.01
#: M2 contexts: lengths before the filler is shortened, and the share of each filler message kept.
M2_LENGTHS = (16_000, 32_000, 64_000, 128_000)
M2_KEEP = (0.1, 0.25, 0.5)

#: The look-up kinds a probe can give its needle, in the order the tables list them.
LOOKUPS: tuple[Lookup, ...] = ("latent", "literal")

NEEDLE_KEY = "bad_pod"
PRODUCER_STEP = "s1"
PROBE_STEP = "s2"
#: The dangerous call the probe step allows (docs/model.md 2.2's shortcut branch): without one, a
#: lost needle could only become a re-call or a wrong value.
SHORTCUT = Call(tool="kubectl_delete_namespace", args={"namespace": "checkout"})
_BASE32 = "abcdefghijklmnopqrstuvwxyz234567"

_SERVICES = ("checkout", "cart", "payments", "search", "gateway", "inventory")
_LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "INFO", "WARN", "ERROR")
_ROUTES = ("/api/v1/orders", "/api/v1/cart", "/api/v1/payments", "/healthz", "/api/v1/users", "/api/v1/search")
_EVENTS = ("request served", "cache miss, loading from store", "upstream responded", "connection pool stats",
           "retrying request", "slow response from upstream", "request completed", "session refreshed")
_TASK = ("Checkout requests in the shop have been failing since the last deploy, and one pod in the checkout "
         "deployment keeps restarting. List the pods, find the one that is crashing, then read its logs "
         "and report what breaks it.")


def profile_label(p: Profile) -> str:
    """The name of a built-in profile used as is; "custom" for a built-in name with changed fields
    (the name would claim numbers the profile does not have); a user's own profile keeps its name."""
    if p.name not in PROFILE_NAMES:
        return p.name
    return p.name if p == profile(p.name) else "custom"


def _needle_value(seed: int) -> str:
    # The pod-xxxx shape of the test scripts: nothing in the log filler can produce it.
    word = int(u(seed, "probe_needle", "probe", 0) * (1 << 40))
    return "pod-" + "".join(_BASE32[(word >> (5 * i)) & 31] for i in range(4))


def _log_lines(seed: int) -> Iterator[str]:
    """Endless realistic service log lines, deterministic in ``seed``. They hold no hyphenated
    word-xxxx value, so neither a fact nor a decoy of the needle's shape."""
    rng = np.random.default_rng(seed)
    now = datetime(2026, 3, 1, tzinfo=UTC) + timedelta(minutes=int(rng.integers(0, 60 * 24 * 200)))
    while True:
        block = rng.integers(0, 1 << 31, size=(256, 8))
        for row in block:
            now += timedelta(milliseconds=int(row[0] % 900) + 1)
            stamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
            level = _LEVELS[row[1] % len(_LEVELS)]
            service = _SERVICES[row[2] % len(_SERVICES)]
            if row[3] % 9 == 0:  # short lines too: they let the filler end close to the requested length
                yield f"{stamp} DEBUG {service} heartbeat ok"
                continue
            status = (200, 200, 200, 201, 304, 429, 500, 503)[row[4] % 8]
            yield (f"{stamp} {level:<5} {service} {_EVENTS[row[5] % len(_EVENTS)]} "
                   f"route={_ROUTES[row[6] % len(_ROUTES)]} status={status} latency_ms={row[7] % 2500} "
                   f"req={int(row[7]) * 2654435761 % (1 << 48):012x}")


@dataclass(frozen=True, slots=True)
class _Filler:
    """Fact-free filler for one requested length, and where the needle can go between its messages.

    ``before[j]`` is the tokens before the needle when it follows the first ``j`` filler messages
    (task prefix included); ``total`` is the prompt length L with the needle in place.
    """

    length: int
    messages: tuple[Message, ...]
    lines: tuple[tuple[str, ...], ...]
    before: tuple[int, ...]
    total: int


class _ProbeKit:
    """The fixed parts of every probe of one seed: the script, the task prefix, the needle message, and
    the filler per length (tokenized once, then shared by every sample and profile)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        needle = _needle_value(seed)
        pods = (
            "NAME                          READY   STATUS             RESTARTS   AGE\n"
            f"{needle}                      0/1     CrashLoopBackOff   7          12m\n"
        )
        producer = _step(PRODUCER_STEP, "kubectl_get", {"resource": "lit:pods", "namespace": "lit:checkout"},
                         payload=pods, produces={NEEDLE_KEY: needle})
        self.step = _step(PROBE_STEP, "kubectl_logs", {"pod": NEEDLE_KEY, "namespace": "lit:checkout"},
                          payload="panic: nil pointer dereference in payments client\n", produces={},
                          shortcut=SHORTCUT)
        self.meter = TextMeter.for_facts({NEEDLE_KEY: needle}, default_tokenizer())
        self.task = Message.build("user", [Text(_task_text(self.meter))], kind="task", meter=self.meter)
        self.needle = Message.build("user", [ToolResult("probe-pods", "success", pods)], step_id=PRODUCER_STEP,
                                    meter=self.meter)
        if NEEDLE_KEY in self.task.facts or self.needle.facts != {NEEDLE_KEY}:
            raise AssertionError("the probe's task must not hold the needle, and its holder must")
        #: One script per look-up kind of the needle; everything else is shared.
        self.scripts = {lookup: SessionScript(
            scenario="calibration_probe", seed=0, task=Task(text=self.task.text),
            steps=[producer, self.step], final_facts=[NEEDLE_KEY],
            facts={NEEDLE_KEY: Fact(key=NEEDLE_KEY, value=needle, kind="pod", lookup=lookup)},
            system_prompt_tokens=0,
        ) for lookup in LOOKUPS}
        self._fillers: dict[int, _Filler] = {}
        self._shortened: dict[tuple[int, float], tuple[Message, ...]] = {}

    # Filler --------------------------------------------------------------------------------------------
    def filler(self, length: int) -> _Filler:
        made = self._fillers.get(length)
        if made is None:
            made = self._fillers[length] = self._make_filler(length)
        return made

    def _make_filler(self, length: int) -> _Filler:
        fixed = self.task.tokens + self.needle.tokens
        budget = length - fixed
        if budget < 0:
            raise ValueError(f"length {length} is shorter than the probe's task and needle ({fixed} tokens)")
        count = self.meter.tokenizer.count
        per_message = max(budget // MAX_FILLER_MESSAGES, MESSAGE_OVERHEAD_TOKENS + 1)
        source = _log_lines(session_seed(self.seed, "calibration_filler", length))
        messages: list[Message] = []
        lines: list[tuple[str, ...]] = []
        filled = 0
        misses = 0
        while budget - filled > MESSAGE_OVERHEAD_TOKENS and misses < 200:
            limit = budget - filled
            chunk: list[str] = []
            size = MESSAGE_OVERHEAD_TOKENS
            while size < per_message and misses < 200:
                line = next(source)
                # Lines joined by newlines count exactly as the sum of their counts plus one per newline
                # (the newline is its own pre-token before a digit), so the running size is exact.
                cost = count(line) + (1 if chunk else 0)
                if size + cost > limit:
                    misses += 1  # the last few tokens: skip to a line short enough
                    continue
                chunk.append(line)
                size += cost
            if not chunk:
                break
            m = Message.build("user", [ToolResult(f"filler-{len(messages)}", "success", "\n".join(chunk))],
                              meter=self.meter)
            if m.facts or m.decoys:
                raise AssertionError("probe filler must be fact-free and decoy-free")
            messages.append(m)
            lines.append(tuple(chunk))
            filled += m.tokens
        total = fixed + filled
        if abs(total - length) > LENGTH_TOLERANCE * length:
            raise ValueError(f"cannot build a probe context of {length} tokens (got {total}); "
                             f"the task and needle alone take {fixed}")
        before = [self.task.tokens]
        for m in messages:
            before.append(before[-1] + m.tokens)
        return _Filler(length, tuple(messages), tuple(lines), tuple(before), total)

    def shortened(self, length: int, keep: float) -> tuple[Message, ...]:
        """The filler of ``length`` with each message cut to its first ``keep`` share of lines (at
        least one): shorter, still fact-free, in the same order."""
        made = self._shortened.get((length, keep))
        if made is None:
            filler = self.filler(length)
            made = tuple(
                Message.build("user", [ToolResult(f"filler-{i}", "success",
                                                  "\n".join(lines[:max(1, round(keep * len(lines)))]))],
                              meter=self.meter)
                for i, lines in enumerate(filler.lines)
            )
            if any(m.facts or m.decoys for m in made):
                raise AssertionError("shortened filler must stay fact-free and decoy-free")
            self._shortened[(length, keep)] = made
        return made

    # Contexts ------------------------------------------------------------------------------------------
    def place(self, filler: _Filler, x: float) -> int:
        """How many filler messages go before the needle so that its x (as `MockModel._resolve`
        computes it) is nearest to ``x``."""
        want = x * filler.total - self.needle.tokens / 2
        j = bisect.bisect_left(filler.before, want)
        candidates = [i for i in (j - 1, j) if 0 <= i < len(filler.before)]
        return min(candidates, key=lambda i: (abs(filler.before[i] - want), i))

    def context(self, filler: Sequence[Message], index: int, *, needle: bool = True,
                window_tokens: int = 10**9) -> Context:
        middle = (self.needle,) if needle else ()
        # The window is not enforced: the probes measure the recall curve, not overflow.
        return Context((self.task, *filler[:index], *middle, *filler[index:]), window_tokens=window_tokens)

    def model(self, p: Profile, script_seed: int, lookup: Lookup = "latent") -> MockModel:
        script = self.scripts[lookup]
        return MockModel(Plan.of(script), Reader(script), p, seed=script_seed, system_tokens=0,
                         tokenizer=self.meter.tokenizer)

    def needle_entry(self, model: MockModel, ctx: Context) -> dict[str, Any]:
        """The decision trace's entry for the needle (the probe step needs nothing else)."""
        decision = model.decide(model.view(ctx), self.step.id, 0)
        return next(e for e in decision.trace if e["key"] == NEEDLE_KEY and e["depth"] == 0)


def _task_text(meter: TextMeter) -> str:
    # Pad the task to PREFIX_TOKENS with its message overhead, so the prefix is the spec's 100 tokens.
    text = _TASK
    count = meter.tokenizer.count
    while count(text) + MESSAGE_OVERHEAD_TOKENS < PREFIX_TOKENS:
        text += " Check each pod."
    return text


def _step(step_id: str, tool: str, args: dict[str, str], *, payload: str, produces: dict[str, str],
          shortcut: Call | None = None) -> Step:
    types = arg_types(tool)
    return Step(id=step_id, tool=tool, args=args, arg_types={a: types[a] for a in args},
                needs=sorted(v for v in args.values() if not v.startswith("lit:")), produces=produces,
                payload=payload, latency_s=0.5, shortcut=shortcut)


def _resolve_profile(p: str | Profile) -> Profile:
    return p if isinstance(p, Profile) else profile(p)


# Probes ---------------------------------------------------------------------------------------------------

PROBE_COLUMNS = ("profile", "lookup", "sample", "length", "tokens", "x", "p", "recalled")


def _probe(kit: _ProbeKit, p: Profile, length: int, x: float | None, samples: int, lookup: Lookup) -> pd.DataFrame:
    filler = kit.filler(length)
    label = profile_label(p)
    rows: dict[str, list[Any]] = {c: [] for c in PROBE_COLUMNS}
    for i in range(samples):
        # x and the script seed depend on (seed, i) only, not on the length or profile: sample i of
        # every length shares its draws, so ratios across lengths are paired (docs/model.md 8).
        want = X_RANGE[0] + (X_RANGE[1] - X_RANGE[0]) * u(kit.seed, "probe_x", "probe", i) if x is None else x
        index = kit.place(filler, want)
        ctx = kit.context(filler.messages, index, window_tokens=p.window_tokens)
        entry = kit.needle_entry(kit.model(p, session_seed(kit.seed, "calibration_probe", i), lookup), ctx)
        if entry.get("lookup", lookup) != lookup:
            raise AssertionError(f"the model used the {entry['lookup']} curve for a {lookup} needle")
        rows["profile"].append(label)
        rows["lookup"].append(lookup)
        rows["sample"].append(i)
        rows["length"].append(length)
        rows["tokens"].append(ctx.tokens)
        rows["x"].append(float(entry["x"]))
        rows["p"].append(float(entry["p"]))
        rows["recalled"].append(entry["branch"] == "recall")
    return pd.DataFrame(rows, columns=list(PROBE_COLUMNS)).astype(
        {"sample": "int64", "length": "int64", "tokens": "int64", "x": "float64", "p": "float64", "recalled": "bool"})


def probe_recall(profile: Profile, *, length: int, x: float | None, samples: int, seed: int = 0,
                 lookup: Lookup = "latent") -> pd.DataFrame:
    """Recall of one needle fact of look-up kind ``lookup`` measured through real contexts (docs/model.md
    11 P6, P7).

    Each sample is a `Context` of about ``length`` tokens (within 1%): a 100-token task prefix, filler
    of fact-free, decoy-free service logs as tool results, and one tool result holding the needle,
    placed so its position x (as the model computes it) is nearest to ``x``; ``x=None`` draws x
    uniformly in [0.1, 0.9] from (seed, sample). The mock model decides the step that needs the
    needle at attempt 0, with a script seed per sample, and the row records what its trace says.

    Columns: profile (see `profile_label`), lookup, sample, length (requested), tokens (the L the model saw),
    x (the model's, nearest reachable to the request: the prefix keeps it above about 100 / L),
    p (the model's p_recall), recalled (the trace's branch is "recall").
    """
    return _probe(_ProbeKit(seed), profile, length, x, samples, lookup)


def probe_grid(profiles: Sequence[str], lengths: Sequence[int], *, samples: int, x: float | None = None,
               seed: int = 0, lookups: Sequence[Lookup] = ("latent",)) -> pd.DataFrame:
    """`probe_recall` for every (lookup, profile, length), in that order; the filler of a length is built
    once and shared by every profile and look-up kind, and sample i has the same draws everywhere."""
    kit = _ProbeKit(seed)
    frames = [_probe(kit, profile(name), length, x, samples, lookup)
              for lookup in lookups for name in profiles for length in lengths]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(PROBE_COLUMNS))


# Formula curves -------------------------------------------------------------------------------------------


def length_curve(profiles: Sequence[str], lengths: Sequence[int],
                 lookups: Sequence[Lookup] = ("latent",)) -> pd.DataFrame:
    """Mean `Profile.p_recall` over x uniform in [0.1, 0.9] (801 points), per look-up kind, profile and
    length: what the probes with ``x=None`` estimate. Columns: profile, lookup, length, recall."""
    rows = []
    for lookup in lookups:
        for name in profiles:
            p = profile(name)
            for length in lengths:
                recall = math.fsum(p.p_recall(length, x, lookup) for x in X_POINTS) / len(X_POINTS)
                rows.append({"profile": profile_label(p), "lookup": lookup, "length": int(length), "recall": recall})
    return pd.DataFrame(rows, columns=["profile", "lookup", "length", "recall"])


def position_curve(profiles: Sequence[str], length: int, positions: Sequence[float],
                   lookups: Sequence[Lookup] = ("latent",)) -> pd.DataFrame:
    """`Profile.p_recall` at one length against the position x, per look-up kind and profile (the
    U-shape of P7). Columns: profile, lookup, length, x, recall."""
    rows = [
        {"profile": profile_label(p), "lookup": lookup, "length": int(length), "x": float(x),
         "recall": p.p_recall(length, x, lookup)}
        for lookup in lookups
        for p in (profile(name) for name in profiles)
        for x in positions
    ]
    return pd.DataFrame(rows, columns=["profile", "lookup", "length", "x", "recall"])


# M2 -------------------------------------------------------------------------------------------------------

M2_COLUMNS = ("kind", "sample", "tokens_before", "tokens_after", "x_before", "x_after", "p_before", "p_after",
              "u_before", "u_after", "branch_before", "branch_after", "explained")


@dataclass(frozen=True, slots=True)
class _Recall:
    """What the model saw for the needle in one context, from its trace, and recomputed exactly."""

    visible: bool
    tokens: int
    x: float
    p: float
    u: float
    branch: str
    #: The recall test `u < p` on unrounded values (the trace rounds to 4 decimals); None if not visible.
    recall_due: bool | None


def _observe(kit: _ProbeKit, p: Profile, script_seed: int, ctx: Context) -> _Recall:
    model = kit.model(p, script_seed)
    entry = kit.needle_entry(model, ctx)
    if not entry["visible"]:
        return _Recall(False, ctx.tokens, math.nan, math.nan, math.nan, str(entry["branch"]), None)
    # Recompute x, p and u the way docs/model.md 1.1 / 2.1 / 8 define them, independently of the model's
    # code path: the trace must agree with them, and the threshold test uses the unrounded values.
    before = 0
    for m in ctx.messages:
        if m is kit.needle:
            break
        before += m.tokens
    L = ctx.tokens
    x = (before + kit.needle.tokens / 2) / L
    p_exact = p.p_recall(L, x)
    u_exact = u(script_seed, "recall", PROBE_STEP, 0, NEEDLE_KEY)
    agrees = (round(x, 4), round(p_exact, 4), round(u_exact, 4)) == (entry["x"], entry["p"], entry["u"])
    return _Recall(True, L, float(entry["x"]), float(entry["p"]), float(entry["u"]), str(entry["branch"]),
                   (u_exact < p_exact) if agrees else None)


def _explained_by_draw(r: _Recall) -> bool:
    return r.recall_due is not None and r.recall_due == (r.branch == "recall")


def m2_experiment(samples: int, seed: int = 0, *, model_profile: str | Profile = "frontier") -> pd.DataFrame:
    """docs/model.md 11 M2 on many generated contexts, ``samples`` of each kind.

    ``shorter_filler``: a context of 16K-128K tokens with the needle at x in [0.1, 0.9]; then the same
    messages with every filler message cut to 10%, 25% or 50% of its lines. Only L (and with it x) may
    change the needle's outcome: the recall draw u is keyed by step, attempt and key, so it must be
    equal before and after, and ``explained`` says that each branch is exactly ``u < p`` of its own
    context (on unrounded values that match the trace) and that a non-recall branch did not change.

    ``delete_holder``: the same kind of context, then without the only message holding the needle.
    After, the needle is not visible, so its branch must be retrieve, refetch, re-explore, shortcut or
    wrong, never recall; ``explained`` also requires the branch before to be ``u < p``. ``p_after``/``u_after`` are
    NaN (no recall draw happens).

    Columns: kind, sample, tokens_before, tokens_after, x_before, x_after, p_before, p_after, u_before,
    u_after, branch_before, branch_after, explained.
    """
    p = _resolve_profile(model_profile)
    kit = _ProbeKit(seed)
    rows: dict[str, list[Any]] = {c: [] for c in M2_COLUMNS}
    for kind in ("shorter_filler", "delete_holder"):
        for i in range(samples):
            length = M2_LENGTHS[min(int(u(seed, "m2_length", kind, i) * len(M2_LENGTHS)), len(M2_LENGTHS) - 1)]
            want = X_RANGE[0] + (X_RANGE[1] - X_RANGE[0]) * u(seed, "m2_x", kind, i)
            filler = kit.filler(length)
            index = kit.place(filler, want)
            script_seed = session_seed(seed, f"calibration_m2_{kind}", i)
            before = _observe(kit, p, script_seed, kit.context(filler.messages, index))
            if kind == "shorter_filler":
                keep = M2_KEEP[min(int(u(seed, "m2_keep", kind, i) * len(M2_KEEP)), len(M2_KEEP) - 1)]
                after = _observe(kit, p, script_seed, kit.context(kit.shortened(length, keep), index))
                # Without a recall on either side, the fall-through draws are keyed like u, so the branch
                # (re-call, shortcut or wrong value) must not change either.
                fallthrough = "recall" in (before.branch, after.branch) or before.branch == after.branch
                explained = (_explained_by_draw(before) and _explained_by_draw(after) and before.u == after.u
                             and fallthrough)
            else:
                after = _observe(kit, p, script_seed, kit.context(filler.messages, index, needle=False))
                explained = (_explained_by_draw(before) and not after.visible
                             and after.branch in ("retrieve", "refetch", "reexplore", "shortcut", "wrong"))
            rows["kind"].append(kind)
            rows["sample"].append(i)
            rows["tokens_before"].append(before.tokens)
            rows["tokens_after"].append(after.tokens)
            rows["x_before"].append(before.x)
            rows["x_after"].append(after.x)
            rows["p_before"].append(before.p)
            rows["p_after"].append(after.p)
            rows["u_before"].append(before.u)
            rows["u_after"].append(after.u)
            rows["branch_before"].append(before.branch)
            rows["branch_after"].append(after.branch)
            rows["explained"].append(bool(explained))
    return pd.DataFrame(rows, columns=list(M2_COLUMNS))


__all__ = [
    "LENGTH_TOLERANCE",
    "LOOKUPS",
    "M2_COLUMNS",
    "M2_KEEP",
    "M2_LENGTHS",
    "NEEDLE_KEY",
    "PREFIX_TOKENS",
    "PROBE_COLUMNS",
    "X_POINTS",
    "X_RANGE",
    "length_curve",
    "m2_experiment",
    "position_curve",
    "probe_grid",
    "probe_recall",
    "profile_label",
]
