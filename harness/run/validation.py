"""The validation experiments of mock-model.md 11 (M1-M3, P1-P10) and 12 (the seed article), run for
real and written to one directory that `reports.validation` turns into ``docs/validation.md``.

Every figure the document prints comes from an experiment here: whole runs through the runner (the
controls, The Complexity Trap's setups, the seed article, the sweep), probes through real contexts
(`harness.sim.calibration`), and direct replays where a check is about one mechanism (P5, P8, P9). Nothing
here knows which strategy "should" win; verdicts are computed later, from the tables, against the
published figures.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

import scenarios
import strategies
from harness.core.crn import session_seed
from harness.core.files import write_atomically
from harness.core.rundir import Manifest
from harness.core.switches import Switches
from harness.run.config import RunConfig, load_config
from harness.run.runner import run
from harness.run.store import RunSummary
from harness.sim import calibration
from harness.sim.kernel import Replay
from harness.sim.loops import Event, StuckDetector, Verdict
from harness.sim.profiles import profile

#: Where the reference configs live in a source checkout.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Kinds of message that carry tool output (P5's "observation tokens").
OBSERVATION_KINDS = ("observation", "error", "handle")
#: Probe lengths (tokens) per profile: the P6/P7 anchors plus a curve; never beyond a profile's window.
PROBE_LENGTHS = (1024, 2048, 4096, 8192, 16_384, 32_000, 65_536, 113_000, 128_000)
PROBE_PROFILES = ("frontier", "mid", "small", "stress-2023")
POSITIONS = tuple(i / 20 for i in range(21))
#: Masking keeps M = 10 turns; the LLM summary runs every N = 21 turns and keeps M = 10 [The Complexity
#: Trap, 2025, arXiv 2508.21433].
TRAP_STRATEGIES: tuple[dict[str, Any], ...] = (
    {"name": "unbounded", "label": "raw"},
    {"name": "observation_masking", "label": "masking-M10", "keep_turns": 10},
    {"name": "summarize", "label": "llm-summary-N21-M10", "trigger_turns": 21, "keep_turns": 10},
)


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
    probe_samples: int = 2000
    m2_samples: int = 400
    observation_sessions: int = 300
    determinism_sessions: int = 24
    jobs: int = 0

    @classmethod
    def quick(cls, jobs: int = 0) -> ValidationSizes:
        """A few sessions of everything: for tests and for trying the command; the verdicts of such a
        run are too noisy to mean anything."""
        return cls(sessions=16, trap_sessions=8, seed_article_sessions=8, sweep_sessions=4, seed_profiles_sessions=4,
                   ablation_sessions=4, probe_samples=60, m2_samples=20, observation_sessions=6,
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
    """P1-P5 in the spec's setup (section 11: frontier, the default mix), caching off as P1 says, and
    the same three strategies with caching on (P1: "also report", no target)."""
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


def example_config(examples: Path, name: str, sessions: int | None, jobs: int) -> RunConfig:
    path = examples / f"{name}.toml"
    if not path.is_file():
        raise ValidationError(f"{path}: no such file (ctxbench validation needs the examples/ directory of a "
                              "source checkout; give it with --examples DIR)")
    return load_config(path, sessions=sessions, jobs=jobs)


# Direct experiments ----------------------------------------------------------------------------------


def observation_share(turns: int | None, sessions: int, profile_name: str = "frontier") -> pd.DataFrame:
    """P5: the share of tool-output tokens in the raw (unbounded) agent's context at the end of each
    session of the default mix; ``turns`` as the run's mix param (None = the family default)."""
    prof = profile(profile_name)
    params = {} if turns is None else {"turns": turns}
    rows = []
    for i in range(sessions):
        seed = session_seed(0, "mix", i)
        script = scenarios.generate("mix", seed, **params)
        instance = strategies.create("unbounded")
        result = Replay(script, instance, prof, Switches.for_strategy(instance), scenario="mix", session_index=i)
        record = result.run().record
        observed = total = 0
        for ctx in result.contexts.values():
            for m in ctx.messages:
                total += m.tokens
                if m.kind in OBSERVATION_KINDS:
                    observed += m.tokens
        rows.append({"session_index": i, "family": script.scenario, "outcome": record.outcome,
                     "observation_tokens": observed, "context_tokens": total})
    return pd.DataFrame(rows)


def throttle_experiment() -> dict[str, Any]:
    """P8: with ``p_throttle = 1`` every call is throttled; the strands retry backs off 4/8/16/32/64
    simulated seconds and gives up after the sixth attempt, in well under a second of real time."""
    script = scenarios.generate("k8s_crashloop", session_seed(0, "k8s_crashloop", 0))
    started = time.perf_counter()
    result = Replay(script, strategies.create("unbounded"), profile("oracle", p_throttle=1.0),
                    Switches.for_strategy(strategies.create("unbounded"))).run()
    wall = time.perf_counter() - started
    record = result.record
    return {"outcome": record.outcome, "attempts": record.throttle_retries + 1, "backoff_s": record.backoff_s,
            "clock_s": record.latency_s, "wall_s": wall}


def _detector(events: list[Event]) -> StuckDetector:
    detector = StuckDetector()
    for e in events:
        detector.log(e)
    return detector


def stuck_cases() -> list[dict[str, Any]]:
    """P9: the OpenHands StuckDetector cases of mock-model.md 11, each with what the rule says and what
    our detector answers."""
    a = Event.action("kubectl_logs", '{"pod": "pod-q2kx"}', "Step s2: fetch the logs.")
    b = Event.action("kubectl_get", '{"namespace": "shop-k3vq"}', "Step s1: list the pods.")
    obs_a = Event.observation("kubectl_logs", "10:00:02 ERROR upstream call failed")
    obs_b = Event.observation("kubectl_get", "NAME READY STATUS")
    task = Event.message("user", "Find the bad pod.")

    def errors(n: int) -> list[Event]:
        out: list[Event] = []
        for i in range(n):
            out += [a, Event.error("kubectl_logs", f"Error: upstream 404 (request {i})")]
        return out

    def say(text: str) -> Event:
        return Event.message("agent", text)

    cases: list[tuple[str, list[Event], Callable[[Verdict], bool], str]] = [
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
    ran. Run directories: ``controls``, ``trap-spec``, ``complexity-trap``, ``seed-article``,
    ``seed-article-profiles``, ``seed-article-ablation``, ``sweep``,
    ``determinism-serial``, ``determinism-process``; tables: ``probes.parquet``,
    ``length_curve.parquet``, ``position_curve.parquet``, ``m2.parquet``, ``observation_share.parquet``;
    ``checks.json`` (P8, P9, M3 and the sizes)."""
    for name in ("complexity-trap", "seed-article", "seed-article-ablation", "sweep"):
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

    timed("controls", runner("controls", controls_config(sizes)))
    timed("trap-spec", runner("trap-spec", trap_spec_config(sizes)))
    timed("complexity-trap", runner("complexity-trap",
                                    example_config(examples, "complexity-trap", sizes.trap_sessions, sizes.jobs)))
    timed("seed-article", runner("seed-article",
                                 example_config(examples, "seed-article", sizes.seed_article_sessions, sizes.jobs)))
    timed("seed-article-profiles", runner("seed-article-profiles", seed_profiles_config(examples, sizes)))
    timed("seed-article-ablation", runner("seed-article-ablation", example_config(
        examples, "seed-article-ablation", sizes.ablation_sessions, sizes.jobs)))
    timed("sweep", runner("sweep", example_config(examples, "sweep", sizes.sweep_sessions, sizes.jobs)))
    for executor in ("serial", "process"):
        timed(f"determinism-{executor}", runner(f"determinism-{executor}", determinism_config(sizes, executor)))

    def probes() -> str:
        lengths = {p: [n for n in PROBE_LENGTHS if n <= profile(p).window_tokens] for p in PROBE_PROFILES}
        frames = [calibration.probe_grid([p], lengths[p], samples=sizes.probe_samples, seed=0) for p in PROBE_PROFILES]
        frames.append(calibration.probe_grid(["stress-2023"], [4096], samples=sizes.probe_samples, x=0.5, seed=1))
        frames.append(calibration.probe_grid(["stress-2023"], [4096], samples=sizes.probe_samples, x=0.0, seed=2))
        table = pd.concat(frames, ignore_index=True)
        table["probe"] = ["uniform"] * sum(len(f) for f in frames[:-2]) + ["middle"] * len(frames[-2]) + \
            ["start"] * len(frames[-1])
        _write_table(out_dir / "probes.parquet", table)
        grid = sorted({*PROBE_LENGTHS, *range(1024, 200_001, 4096)})
        curves = [calibration.length_curve([p], [n for n in grid if n <= profile(p).window_tokens])
                  for p in PROBE_PROFILES]  # a curve past a profile's window would be a prompt it cannot take
        _write_table(out_dir / "length_curve.parquet", pd.concat(curves, ignore_index=True))
        _write_table(out_dir / "position_curve.parquet",
                     calibration.position_curve(PROBE_PROFILES, 4096, POSITIONS))
        return f"{len(table)} probe samples"

    def m2() -> str:
        table = calibration.m2_experiment(sizes.m2_samples, seed=0)
        _write_table(out_dir / "m2.parquet", table)
        return f"{len(table)} M2 cases"

    def p5() -> str:
        spec = observation_share(None, sizes.observation_sessions).assign(setup="trap-spec")
        trap = observation_share(120, sizes.observation_sessions, "mid").assign(setup="complexity-trap")
        _write_table(out_dir / "observation_share.parquet", pd.concat([spec, trap], ignore_index=True))
        return f"{len(spec) + len(trap)} raw sessions"

    def checks() -> str:
        serial, process = _sha(out_dir / "determinism-serial"), _sha(out_dir / "determinism-process")
        data = {"sizes": asdict(sizes), "p8": throttle_experiment(), "p9": stuck_cases(),
                "m3": {"serial": serial, "process": process, "identical": serial == process}}
        write_atomically(out_dir / "checks.json", (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
        return "P8, P9, M3"

    timed("probes", probes)
    timed("m2", m2)
    timed("observation-share", p5)
    timed("checks", checks)
    return steps


def _write_table(path: Path, frame: pd.DataFrame) -> None:
    buffer = frame.reset_index(drop=True).to_parquet(index=False, compression="zstd")
    write_atomically(path, buffer)


__all__ = [
    "ValidationError",
    "ValidationSizes",
    "controls_config",
    "determinism_config",
    "example_config",
    "observation_share",
    "run_validation",
    "seed_profiles_config",
    "stuck_cases",
    "throttle_experiment",
    "trap_spec_config",
]
