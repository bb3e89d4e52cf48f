"""The validation experiments of docs/model.md 11 (M1-M3, P1-P10) and 12 (the seed article), plus the
published anchors "Less Context, Better Agents" and AgentDiet, run for real and written to one directory
that `reports.validation` turns into ``docs/validation.md``.

Every figure the document prints comes from an experiment here: whole runs through the runner (the
controls, The Complexity Trap's setups, the anchors, the seed article, the sweep), probes through real
contexts for both look-up kinds (`harness.sim.calibration`), direct replays where a check is about one
mechanism (P5, P8, P9), and the shape of every stuck session's last calls read against its regenerated
script (the loop shapes and the stuck floor). Nothing here knows which strategy "should" win; verdicts
are computed later, from the tables, against the published figures.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

import scenarios
import strategies
from harness.core.crn import session_seed
from harness.core.files import write_atomically
from harness.core.rundir import CALLS_TABLE, SESSIONS_TABLE, Manifest
from harness.core.switches import Switches
from harness.run.config import RunConfig, load_config
from harness.run.directory import RunSummary
from harness.run.runner import run
from harness.sim import calibration
from harness.sim.kernel import Replay
from harness.sim.loops import LoopEvent, StuckDetector, Verdict
from harness.sim.profiles import LITERAL_FIT_RMSE, LITERAL_SOURCES, RULER_LENGTHS, RULER_ROWS, profile
from scenarios.base import SessionScript, Step

#: Where the reference configs live in a source checkout.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Kinds of message that carry tool output (P5's "observation tokens").
OBSERVATION_KINDS = ("observation", "error", "handle")
#: Probe lengths (tokens) per profile: the P6/P7 anchors plus a curve; never beyond a profile's window.
PROBE_LENGTHS = (1024, 2048, 4096, 8192, 16_384, 32_000, 65_536, 113_000, 128_000)
PROBE_PROFILES = ("frontier", "mid", "small", "stress-2023")
POSITIONS = tuple(i / 20 for i in range(21))
#: Masking keeps M = 10 turns; the LLM summary runs every N = 21 turns, keeps M = 10 and the task (the
#: paper's summarizer keeps the user prompt) [The Complexity Trap, 2025, arXiv 2508.21433].
TRAP_STRATEGIES: tuple[dict[str, Any], ...] = (
    {"name": "unbounded", "label": "raw"},
    {"name": "observation_masking", "label": "masking-M10", "keep_turns": 10},
    {"name": "summarize", "label": "llm-summary-N21-M10", "trigger_turns": 21, "keep_turns": 10, "pin_first": 1},
)
#: The paper's setting (examples/complexity-trap.toml) under each profile the document checks: run
#: directory -> profile (None: as the example ships, mid).
TRAP_RUNS: dict[str, str | None] = {"complexity-trap": None, "complexity-trap-frontier": "frontier"}
#: Published anchors beyond section 11, each an example config whose header states the mapping.
ANCHORS = ("less-context", "agentdiet")
#: The raw agent's label in each config P5 measures (the observation share of its final context).
RAW_LABEL = {"trap-spec": "raw", "complexity-trap": "raw", "complexity-trap-frontier": "raw"}
#: Runs whose stuck sessions get their last calls classified (the loop shapes and the stuck floor).
LOOP_SHAPE_RUNS = ("controls", "trap-spec", "complexity-trap", "complexity-trap-frontier", "seed-article",
                   "less-context", "agentdiet")
#: How many of a stuck session's last agent calls its shape is read from: the StuckDetector's window of
#: 4 repeats or 4 errors (docs/model.md 7).
LAST_CALLS = 4
#: The loop shapes, in the order the document lists them.
LOOP_SHAPES = ("fault never clears", "same wrong value re-sent", "new wrong values", "re-fetch loop",
               "malformed calls", "mixed")


@dataclass(frozen=True, slots=True)
class ValidationSizes:
    """How much of each experiment to run. The defaults are the spec's: at least 2,000 paired sessions
    for section 11, the reference configs as shipped (``None``), 2,000 samples per probe point."""

    sessions: int = 2000
    trap_sessions: int | None = None
    seed_article_sessions: int | None = None
    sweep_sessions: int | None = None
    #: Section 12's repeat of A vs B under mid, small and stress-2023, and its 2x2x2 ablation.
    seed_profiles_sessions: int = 1000
    ablation_sessions: int | None = None
    #: The anchors' sessions (None: as their example configs ship, 500 each).
    anchor_sessions: int | None = None
    probe_samples: int = 2000
    m2_samples: int = 400
    observation_sessions: int = 300
    determinism_sessions: int = 24
    jobs: int = 0

    def __post_init__(self) -> None:
        # Checked before anything runs: a bad size would otherwise fail in the middle of a half-hour run.
        for field in fields(self):
            value = getattr(self, field.name)
            low = 0 if field.name == "jobs" else 1
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise ValidationError(f"sizes.{field.name}: expected an integer >= {low}, got {value!r}")

    @classmethod
    def quick(cls, jobs: int = 0) -> ValidationSizes:
        """A few sessions of everything: for tests and for trying the command; the verdicts of such a
        run are too noisy to mean anything."""
        return cls(sessions=16, trap_sessions=8, seed_article_sessions=8, sweep_sessions=4, seed_profiles_sessions=4,
                   ablation_sessions=4, anchor_sessions=8, probe_samples=60, m2_samples=20, observation_sessions=6,
                   determinism_sessions=6, jobs=jobs)


class ValidationError(Exception):
    """The validation cannot start (e.g. no examples directory): one line, exit code 2."""


# Run configs -----------------------------------------------------------------------------------------


def controls_config(sizes: ValidationSizes) -> RunConfig:
    """M1 and P10: oracle with an unbounded context, drop_all, unbounded and offload_contracts, frontier."""
    return RunConfig.model_validate({
        "sessions": sizes.sessions, "seed": 0, "model": "frontier", "jobs": sizes.jobs,
        "scenarios": [{"name": "mix"}],
        "strategies": [
            {"name": "unbounded", "label": "oracle-unbounded", "model": "oracle"},
            {"name": "unbounded"}, {"name": "drop_all"}, {"name": "offload_contracts"},
        ],
    })


def trap_spec_config(sizes: ValidationSizes) -> RunConfig:
    """P1-P5 in the spec's setup (section 11: frontier, the default ops mix), caching off as P1 says, and
    the same three strategies with caching on (P1: "also report", no target). As docs/model.md 11 says, this
    is the second setup, reported with no target; the paper's setting is examples/complexity-trap.toml."""
    cached = [s | {"label": f"{s['label']}+cache", "model": "frontier"} for s in TRAP_STRATEGIES]
    return RunConfig.model_validate({
        "sessions": sizes.sessions, "seed": 0, "model": {"base": "frontier", "caching": False}, "jobs": sizes.jobs,
        "scenarios": [{"name": "mix"}], "strategies": [*TRAP_STRATEGIES, *cached],
    })


def determinism_config(sizes: ValidationSizes, executor: str) -> RunConfig:
    return RunConfig.model_validate({
        "sessions": sizes.determinism_sessions, "seed": 7, "model": "frontier", "executor": executor,
        "jobs": 1 if executor == "serial" else 2, "batch_size": 2,
        "strategies": [{"name": n} for n in ("unbounded", "summarize", "offload_contracts", "sliding_window")],
    })


def seed_profiles_config(examples: Path, sizes: ValidationSizes) -> RunConfig:
    """Section 12: "repeat with mid, small and stress-2023": the seed-article config crossed with the
    four profiles (a sweep over models only)."""
    base = example_config(examples, "seed-article", sizes.seed_profiles_sessions, sizes.jobs)
    data = base.model_dump(mode="python", exclude_none=True)
    data["sweep"] = {"models": ["frontier", "mid", "small", "stress-2023"]}
    return RunConfig.model_validate(data)


def with_profile(config: RunConfig, base: str | None) -> RunConfig:
    """``config`` with its profile's base replaced by ``base`` (its other model fields, e.g. caching off,
    kept); ``config`` itself when ``base`` is None."""
    if base is None:
        return config
    data = config.model_dump(mode="python", exclude_none=True)
    model = data["model"]
    data["model"] = (dict(model) | {"base": base}) if isinstance(model, dict) else base
    return RunConfig.model_validate(data)


def trap_configs(examples: Path, sizes: ValidationSizes) -> dict[str, RunConfig]:
    """examples/complexity-trap.toml under each profile of `TRAP_RUNS`, keyed by run directory."""
    shipped = example_config(examples, "complexity-trap", sizes.trap_sessions, sizes.jobs)
    return {name: with_profile(shipped, base) for name, base in TRAP_RUNS.items()}


def example_config(examples: Path, name: str, sessions: int | None, jobs: int) -> RunConfig:
    path = examples / f"{name}.toml"
    if not path.is_file():
        raise ValidationError(f"{path}: no such file (ctxbench validation needs the examples/ directory of a "
                              "source checkout; give it with --examples DIR)")
    return load_config(path, sessions=sessions, jobs=jobs)


# Direct experiments ----------------------------------------------------------------------------------


def observation_share(config: RunConfig, label: str, sessions: int) -> pd.DataFrame:
    """P5: the share of tool-output tokens in the context of ``label``'s agent (the raw one) at the end of
    each of the first ``sessions`` sessions of ``config``'s first scenario, with that entry's params,
    switches and the config's profile: the sessions the run replays."""
    variant = next(v for v in config.variants() if v.entry.key == label)
    entry = variant.entry
    scenario = config.scenarios[0]
    rows = []
    for i in range(sessions):
        seed = session_seed(config.seed, scenario.name, i)
        script = scenarios.generate(scenario.name, seed, **scenario.params)
        instance = strategies.create(entry.name, **entry.params)
        switches = Switches(**entry.switch_overrides())
        result = Replay(script, instance, variant.profile, switches, scenario=scenario.name, session_index=i)
        record = result.run().record
        observed = total = 0
        for ctx in result.contexts.values():
            for m in ctx.messages:
                total += m.tokens
                if m.kind in OBSERVATION_KINDS:
                    observed += m.tokens
        rows.append({"session_index": i, "family": script.scenario, "outcome": record.outcome,
                     "observation_tokens": observed, "context_tokens": total})
    return pd.DataFrame(rows, columns=["session_index", "family", "outcome", "observation_tokens",
                                       "context_tokens"])


def throttle_experiment() -> dict[str, Any]:
    """P8: with ``p_throttle = 1`` every call is throttled; the strands retry backs off 4/8/16/32/64
    simulated seconds and gives up after the sixth attempt, in well under a second of real time."""
    script = scenarios.generate("k8s_crashloop", session_seed(0, "k8s_crashloop", 0))
    started = time.perf_counter()
    result = Replay(script, strategies.create("unbounded"), profile("oracle", p_throttle=1.0),
                    Switches()).run()
    wall = time.perf_counter() - started
    record = result.record
    return {"outcome": record.outcome, "attempts": record.throttle_retries + 1, "backoff_s": record.backoff_s,
            "clock_s": record.latency_s, "wall_s": wall}


def _detector(events: list[LoopEvent]) -> StuckDetector:
    detector = StuckDetector()
    for e in events:
        detector.log(e)
    return detector


def stuck_cases() -> list[dict[str, Any]]:
    """P9: the OpenHands StuckDetector cases of docs/model.md 11, each with what the rule says and what
    our detector answers."""
    a = LoopEvent.action("kubectl_logs", '{"pod": "pod-q2kx"}', "Step s2: fetch the logs.")
    b = LoopEvent.action("kubectl_get", '{"namespace": "shop-k3vq"}', "Step s1: list the pods.")
    obs_a = LoopEvent.observation("kubectl_logs", "10:00:02 ERROR upstream call failed")
    obs_b = LoopEvent.observation("kubectl_get", "NAME READY STATUS")
    task = LoopEvent.message("user", "Find the bad pod.")

    def errors(n: int) -> list[LoopEvent]:
        out: list[LoopEvent] = []
        for i in range(n):
            out += [a, LoopEvent.error("kubectl_logs", f"Error: upstream 404 (request {i})")]
        return out

    def say(text: str) -> LoopEvent:
        return LoopEvent.message("agent", text)

    cases: list[tuple[str, list[LoopEvent], Callable[[Verdict], bool], str]] = [
        ("4 identical action-observation pairs", [task, *[a, obs_a] * 4], lambda v: v.stuck, "stuck (repeat)"),
        ("3 identical pairs", [task, *[a, obs_a] * 3], lambda v: not v.stuck, "not stuck"),
        ("error streak of 3", [task, *errors(3)], lambda v: not v.stuck and v.nudge, "nudge only"),
        ("error streak of 4", [task, *errors(4)], lambda v: v.stuck, "stuck (error_streak)"),
        ("A,B,A,B,A,B", [task, *[a, obs_a, b, obs_b] * 3], lambda v: v.stuck, "stuck (alternation)"),
        ("3 agent messages in a row", [task, say("thinking"), say("still thinking"), say("more")],
         lambda v: v.stuck, "stuck (monologue)"),
        ("a user message resets the window", [*[a, obs_a] * 3, task, a, obs_a], lambda v: not v.stuck,
         "not stuck"),
    ]
    rows = []
    for name, events, expected, text in cases:
        verdict = _detector(events).check()
        rows.append({"case": name, "expected": text, "stuck": verdict.stuck, "rule": verdict.rule or "",
                     "nudge": verdict.nudge, "agrees": bool(expected(verdict))})
    return rows


# Loop shapes and the stuck floor ---------------------------------------------------------------------

LOOP_COLUMNS = ("run", "strategy", "errors", "scenario", "session_index", "family", "loop_rule", "shape",
                "step_id", "never_clears", "actions")


def _all_steps(script: SessionScript) -> dict[str, Step]:
    """Every step of ``script`` by id, fallbacks (nested in faults) included."""
    out: dict[str, Step] = {}
    todo = list(script.steps)
    while todo:
        step = todo.pop()
        out[step.id] = step
        if step.fault is not None and step.fault.fallback is not None:
            todo.append(step.fault.fallback)
    return out


def never_clearing_steps(script: SessionScript) -> set[str]:
    """Ids of the steps whose scripted fault never clears (``fails=None``): every call of them fails."""
    return {sid for sid, step in _all_steps(script).items() if step.fault is not None and step.fault.fails is None}


def classify_loop(actions: Sequence[str], step_ids: Sequence[str], branches: Sequence[frozenset[str]],
                  loop_rule: str, never_clears: set[str]) -> str:
    """The shape of a stuck session from its last agent calls (oldest first): their actions, the step
    each was made on, the branches of each call's decision trace, the rule that fired, and the
    session's never-clearing steps. In order of precedence:

    - ``fault never clears``: every call is the tool call of one step whose fault has ``fails=None``;
    - ``re-fetch loop``: every call re-fetches (or retrieves) a fact that was not recalled;
    - ``same wrong value re-sent`` / ``new wrong values``: every call is the tool call of one step and a
      wrong value was built into it (a ``wrong`` branch, or a verbatim resend of such a call); identical
      calls if the repeat rule fired, changing values otherwise (an error streak);
    - ``malformed calls``: every call was malformed;
    - ``mixed``: anything else.
    """
    steps = set(step_ids)
    own_calls = all(a in ("step", "resend", "fix") for a in actions)
    if len(steps) == 1 and own_calls and next(iter(steps)) in never_clears:
        return "fault never clears"
    if actions and all(a in ("refetch", "retrieve") for a in actions):
        return "re-fetch loop"
    if len(steps) == 1 and own_calls and any("wrong" in b for b in branches):
        return "same wrong value re-sent" if loop_rule == "repeat" else "new wrong values"
    if actions and all(a == "malformed" for a in actions):
        return "malformed calls"
    return "mixed"


def loop_shapes(run_name: str, run_dir: Path, config: RunConfig) -> pd.DataFrame:
    """One row per stuck session of the run in ``run_dir``: the shape of its last `LAST_CALLS` agent calls
    (`classify_loop`), the step they were on, and whether that step's fault never clears, read from the
    session's script regenerated from (scenario, seed) with the run's scenario params."""
    sessions = pd.read_parquet(run_dir / SESSIONS_TABLE, columns=["scenario", "session_index", "seed", "strategy",
                                                                  "outcome", "errors", "family", "loop_rule"])
    stuck = sessions[sessions["outcome"] == "stuck"]
    if stuck.empty:
        return pd.DataFrame(columns=list(LOOP_COLUMNS))
    calls = pd.read_parquet(run_dir / CALLS_TABLE,
                            columns=["scenario", "session_index", "strategy", "call_kind", "call_index", "step_id",
                                     "action", "malformed_kind", "trace"],
                            filters=[("call_kind", "==", "agent"),
                                     ("session_index", "in", sorted({int(i) for i in stuck["session_index"]}))])
    key = ["scenario", "session_index", "strategy"]
    last = calls.sort_values([*key, "call_index"]).groupby(key, sort=False).tail(LAST_CALLS)
    by_session = {k: g for k, g in last.groupby(key, sort=False)}
    params: Mapping[str, dict[str, Any]] = {e.name: e.params for e in config.scenarios}
    scripts: dict[tuple[str, int], set[str]] = {}
    rows = []
    for s in stuck.itertuples(index=False):
        group = by_session.get((s.scenario, s.session_index, s.strategy))
        if group is None:
            continue
        never = scripts.get((str(s.scenario), int(s.seed)))
        if never is None:
            script = scenarios.generate(str(s.scenario), int(s.seed), **params.get(str(s.scenario), {}))
            never = scripts[(str(s.scenario), int(s.seed))] = never_clearing_steps(script)
        # A malformed call keeps its intended purpose as its action; its damage is in malformed_kind.
        actions = ["malformed" if kind else action for action, kind
                   in zip(group["action"].astype(str), group["malformed_kind"].astype(str), strict=True)]
        step_ids = group["step_id"].astype(str).tolist()
        branches = [frozenset(str(e.get("branch", "")) for e in json.loads(t) if e.get("depth", 0) == 0)
                    for t in group["trace"]]
        shape = classify_loop(actions, step_ids, branches, str(s.loop_rule), never)
        rows.append({"run": run_name, "strategy": s.strategy, "errors": s.errors, "scenario": s.scenario,
                     "session_index": int(s.session_index), "family": s.family, "loop_rule": s.loop_rule,
                     "shape": shape, "step_id": step_ids[-1], "never_clears": step_ids[-1] in never,
                     "actions": ",".join(actions)})
    return pd.DataFrame(rows, columns=list(LOOP_COLUMNS))


def literal_sources() -> dict[str, dict[str, Any]]:
    """Each profile's RULER source row (docs/model.md 9) as the report reads it: the row's name,
    its lengths and accuracies (%), and the RMSE of the profile's literal fit to it."""
    out: dict[str, dict[str, Any]] = {}
    for name, row_name in LITERAL_SOURCES.items():
        row: Any = RULER_ROWS[row_name]
        if isinstance(row, Mapping):
            lengths, accuracy = [int(n) for n in row], [float(v) for v in row.values()]
        else:
            lengths, accuracy = [int(n) for n in RULER_LENGTHS], [float(v) for v in row]
        out[name] = {"row": row_name, "lengths": lengths, "accuracy": accuracy,
                     "rmse": float(LITERAL_FIT_RMSE.get(name, float("nan")))}
    return out


def _sha(run_dir: Path) -> dict[str, str]:
    return dict(Manifest.read(run_dir).sha256)


# The whole validation --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExperimentRun:
    """One experiment of the validation as it ran: its name, wall seconds, and what it produced."""

    name: str
    seconds: float
    detail: str


def run_validation(out_dir: Path, sizes: ValidationSizes = ValidationSizes(), *, examples: Path = EXAMPLES,
                   quiet: bool = True, log: Callable[[str], None] | None = None) -> list[ExperimentRun]:
    """Run every experiment into ``out_dir`` (resuming runs that are already there) and return what
    ran. Run directories: ``controls``, ``trap-spec``, ``complexity-trap`` (mid, as shipped),
    ``complexity-trap-frontier``, ``less-context``, ``agentdiet``, ``seed-article``,
    ``seed-article-profiles``, ``seed-article-ablation``, ``sweep``, ``determinism-serial``,
    ``determinism-process``; tables: ``probes.parquet`` (both look-up kinds), ``length_curve.parquet``,
    ``position_curve.parquet``, ``m2.parquet``, ``observation_share.parquet``, ``loop_shapes.parquet``;
    ``checks.json`` (P8, P9, M3, the literal curves' RULER sources and the sizes)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ValidationError(f"{out_dir}: exists and is not a directory")
    for name in ("complexity-trap", *ANCHORS, "seed-article", "seed-article-ablation", "sweep"):
        example_config(examples, name, None, sizes.jobs)  # fail before anything runs
    out_dir.mkdir(parents=True, exist_ok=True)
    steps: list[ExperimentRun] = []

    def timed(name: str, work: Callable[[], str]) -> None:
        started = time.perf_counter()
        detail = work()
        steps.append(ExperimentRun(name, time.perf_counter() - started, detail))
        if log is not None:
            log(f"{name}: {detail} ({steps[-1].seconds:.0f} s)")

    def runner(name: str, config: RunConfig) -> Callable[[], str]:
        def go() -> str:
            summary: RunSummary = run(config, out_dir / name, quiet=quiet)
            return f"{len(summary.sessions)} session rows"
        return go

    configs: dict[str, RunConfig] = {"controls": controls_config(sizes), "trap-spec": trap_spec_config(sizes),
                                     **trap_configs(examples, sizes)}
    configs |= {name: example_config(examples, name, sizes.anchor_sessions, sizes.jobs) for name in ANCHORS}
    configs["seed-article"] = example_config(examples, "seed-article", sizes.seed_article_sessions, sizes.jobs)
    for name, config in configs.items():
        timed(name, runner(name, config))
    timed("seed-article-profiles", runner("seed-article-profiles", seed_profiles_config(examples, sizes)))
    timed("seed-article-ablation", runner("seed-article-ablation", example_config(
        examples, "seed-article-ablation", sizes.ablation_sessions, sizes.jobs)))
    timed("sweep", runner("sweep", example_config(examples, "sweep", sizes.sweep_sessions, sizes.jobs)))
    for executor in ("serial", "process"):
        timed(f"determinism-{executor}", runner(f"determinism-{executor}", determinism_config(sizes, executor)))

    def probes() -> str:
        lookups = calibration.LOOKUPS
        lengths = {p: [n for n in PROBE_LENGTHS if n <= profile(p).window_tokens] for p in PROBE_PROFILES}
        frames = [calibration.probe_grid([p], lengths[p], samples=sizes.probe_samples, seed=0, lookups=lookups)
                  .assign(probe="uniform") for p in PROBE_PROFILES]
        frames.append(calibration.probe_grid(["stress-2023"], [4096], samples=sizes.probe_samples, x=0.5, seed=1,
                                             lookups=lookups).assign(probe="middle"))
        frames.append(calibration.probe_grid(["stress-2023"], [4096], samples=sizes.probe_samples, x=0.0, seed=2,
                                             lookups=lookups).assign(probe="start"))
        table = pd.concat(frames, ignore_index=True)
        _write_table(out_dir / "probes.parquet", table)
        grid = sorted({*PROBE_LENGTHS, *range(1024, 200_001, 4096)})
        curves = [calibration.length_curve([p], [n for n in grid if n <= profile(p).window_tokens], lookups)
                  for p in PROBE_PROFILES]  # a curve past a profile's window would be a prompt it cannot take
        _write_table(out_dir / "length_curve.parquet", pd.concat(curves, ignore_index=True))
        _write_table(out_dir / "position_curve.parquet",
                     calibration.position_curve(PROBE_PROFILES, 4096, POSITIONS, lookups))
        return f"{len(table)} probe samples"

    def m2() -> str:
        table = calibration.m2_experiment(sizes.m2_samples, seed=0)
        _write_table(out_dir / "m2.parquet", table)
        return f"{len(table)} M2 cases"

    def p5() -> str:
        frames = [observation_share(configs[name], label, sizes.observation_sessions).assign(setup=name)
                  for name, label in RAW_LABEL.items()]
        _write_table(out_dir / "observation_share.parquet", pd.concat(frames, ignore_index=True))
        return f"{sum(len(f) for f in frames)} raw sessions"

    def shapes() -> str:
        frames = [loop_shapes(name, out_dir / name, configs[name]) for name in LOOP_SHAPE_RUNS]
        table = pd.concat(frames, ignore_index=True)
        _write_table(out_dir / "loop_shapes.parquet", table)
        return f"{len(table)} stuck sessions classified"

    def checks() -> str:
        serial, process = _sha(out_dir / "determinism-serial"), _sha(out_dir / "determinism-process")
        data = {"sizes": asdict(sizes), "p8": throttle_experiment(), "p9": stuck_cases(),
                "m3": {"serial": serial, "process": process, "identical": serial == process},
                "literal_sources": literal_sources()}
        write_atomically(out_dir / "checks.json", (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
        return "P8, P9, M3"

    timed("probes", probes)
    timed("m2", m2)
    timed("observation-share", p5)
    timed("loop-shapes", shapes)
    timed("checks", checks)
    return steps


def _write_table(path: Path, frame: pd.DataFrame) -> None:
    buffer = frame.reset_index(drop=True).to_parquet(index=False, compression="zstd")
    write_atomically(path, buffer)


__all__ = [
    "ANCHORS",
    "LOOP_SHAPES",
    "TRAP_RUNS",
    "ValidationError",
    "ValidationSizes",
    "classify_loop",
    "controls_config",
    "determinism_config",
    "example_config",
    "literal_sources",
    "loop_shapes",
    "never_clearing_steps",
    "observation_share",
    "run_validation",
    "seed_profiles_config",
    "stuck_cases",
    "throttle_experiment",
    "trap_configs",
    "trap_spec_config",
    "with_profile",
]
