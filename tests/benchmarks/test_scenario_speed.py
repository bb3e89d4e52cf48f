"""Speed of script generation, measured with pytest-benchmark.

One timed round generates 1,000 default scripts, cycling over the registered families and seeds
(100 when it runs untimed inside `make test`).
`make test` runs it once as a plain test (``--benchmark-disable``) and checks what it produced;
`make benchmarks` times it for real. Scripts per second go into ``extra_info``; no wall-clock
threshold is asserted, since the machine's speed is not the code's.
"""

from __future__ import annotations

import time

import scenarios
from scenarios.base import SessionScript

SCRIPTS = 1000
#: Scripts made when the benchmark runs untimed inside `make test` (keeps the suite quick).
UNTIMED_SCRIPTS = 100


def _plan(names: list[str], count: int) -> list[tuple[str, int]]:
    """(family, seed) for each script: cycle over the families, then move to the next seed."""
    return [(names[i % len(names)], i // len(names)) for i in range(count)]


def _generate_all(plan: list[tuple[str, int]]) -> list[SessionScript]:
    return [scenarios.generate(name, seed) for name, seed in plan]


def _structure_problems(script: SessionScript) -> list[str]:
    """Cheap checks: a sane length, produced values in their payloads, final facts known."""
    problems = []
    if not 20 <= len(script.steps) <= 250:
        problems.append(f"{len(script.steps)} steps")
    for step in script.steps:
        problems += [f"{step.id}: {key}" for key, value in step.produces.items() if value not in step.payload]
    if not set(script.final_facts) <= set(script.facts):
        problems.append("final facts are not script facts")
    return problems


def test_generate_1000_default_scripts(benchmark) -> None:
    names = scenarios.names()
    assert names
    plan = _plan(names, UNTIMED_SCRIPTS if benchmark.disabled else SCRIPTS)
    started = time.perf_counter()
    made = benchmark.pedantic(_generate_all, args=(plan,), rounds=1, iterations=1)
    elapsed = time.perf_counter() - started
    benchmark.extra_info["scripts"] = len(made)
    benchmark.extra_info["families"] = names
    benchmark.extra_info["scripts_per_second"] = round(len(made) / elapsed, 1)

    assert len(made) == len(plan)
    assert [s.seed for s in made] == [seed for _, seed in plan]
    assert all(s.scenario in names for s in made)
    problems = {f"{s.scenario} seed {s.seed}": p for s in made if (p := _structure_problems(s))}
    assert problems == {}
