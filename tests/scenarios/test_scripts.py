"""Generator rules of docs/model.md 1, checked on the scripts of every registered family.

Every generic test is parametrized over `scenarios.names()`, so a newly registered family is
covered without touching this file. Scripts are generated once per family (a module-scoped
fixture, so only one family's scripts are held in memory at a time) and shared by the tests.

Cost: a default script takes about 30-50 ms to generate, so 100 seeds cost a few seconds per family.
"""

from __future__ import annotations

import itertools
import json
import re
import statistics
from collections.abc import Iterator
from typing import Any

import annotated_types
import pydantic
import pytest

import scenarios
from harness.core.tools import CATALOGUE, arg_types, validate_call
from scenarios.base import (
    LITERAL_PREFIX,
    Fact,
    Fault,
    Handoff,
    ScenarioParams,
    SessionScript,
    Step,
    Task,
    check_script,
)

#: Seeds per family for the rules and the distribution checks (a fixed set: the same every run).
SEEDS_PER_FAMILY = 100
#: The slowest family to generate (about 60 ms a script) gets fewer seeds, to keep the runtime in check.
SEEDS_OVERRIDE = {"log_triage": 50}
#: Seeds per family at each end of the allowed `turns` range.
BOUND_SEEDS = 4
MAX_TURNS = 250

#: Default session length (docs/model.md 2.3 limits; builder's default mix, median 60). With 100
#: seeds the sample median of a lognormal with sigma 0.55 has a standard error of about 7% (4
#: calls), so [48, 75] is about 3 standard errors either side of 60.
TURNS_MEDIAN_RANGE = (48, 75)
TURNS_RANGE = (20, 250)

#: Payload sizes in KB (1 KB = 1,000 bytes) over every payload (steps and fallbacks) of all seeds.
#: The defaults (median 1,500 bytes, sigma 1.82) put the median near 1.5 KB and p95 near 30 KB;
#: the ranges leave room for the different shapes of each family's text while catching a
#: generator that ignores the size params (a tiny or a huge median, no heavy tail).
PAYLOAD_MEDIAN_KB = (0.8, 2.5)
PAYLOAD_P95_KB = (12.0, 60.0)
#: log_triage's task is reading logs, so it is allowed larger log dumps than the other families;
#: mix draws log_triage in one session of five, which can lift its tail.
PAYLOAD_BOUNDS_OVERRIDE: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "log_triage": ((0.8, 5.0), (12.0, 120.0)),
    "mix": ((0.8, 3.0), (12.0, 100.0)),
    # SWE-agent-sized: 100-line file windows (about 3.7 KB) dominate, every output capped at 16 KB.
    "code_repair": ((2.0, 4.5), (4.0, 16.0)),
}
#: Some payloads exceed this over all seeds (the heavy tail that makes offloading matter) ...
LARGE_PAYLOAD_BYTES = 100_000
#: ... except in families whose outputs are capped by their scaffold.
CAPPED_FAMILIES = {"code_repair": 16_000}


# Fixtures --------------------------------------------------------------------------------------


def _seeds(name: str) -> range:
    return range(SEEDS_OVERRIDE.get(name, SEEDS_PER_FAMILY))


def min_turns(name: str) -> int:
    """The smallest `turns` the family's params accept."""
    field = scenarios.get(name).Params.model_fields["turns"]
    return next(m.ge for m in field.metadata if isinstance(m, annotated_types.Ge))


@pytest.fixture(scope="module", params=scenarios.names())
def family(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def scripts(family: str) -> list[SessionScript]:
    return [scenarios.generate(family, seed) for seed in _seeds(family)]


@pytest.fixture(scope="module")
def bound_scripts(family: str) -> list[tuple[int, SessionScript]]:
    """Scripts at the smallest allowed `turns` and at 250."""
    out = []
    for turns in (min_turns(family), MAX_TURNS):
        out += [(turns, scenarios.generate(family, 1000 + seed, turns=turns)) for seed in range(BOUND_SEEDS)]
    return out


@pytest.fixture(scope="module")
def all_scripts(scripts: list[SessionScript], bound_scripts: list[tuple[int, SessionScript]]) -> list[SessionScript]:
    return scripts + [s for _, s in bound_scripts]


# Helpers ---------------------------------------------------------------------------------------


def runs(step: Step) -> Iterator[Step]:
    """The step and, if its fault names one, its fallback (a step of its own)."""
    yield step
    if step.fault is not None and step.fault.fallback is not None:
        yield step.fault.fallback


def all_runs(script: SessionScript) -> Iterator[Step]:
    for step in script.steps:
        yield from runs(step)


def literal_value(text: str, json_type: str) -> Any:
    """A `lit:` template's text as the JSON value its arg type says."""
    if json_type == "string":
        return text
    if json_type == "integer":
        value = int(text)
        assert str(value) == text, f"integer literal {text!r} is not canonical"
        return value
    if json_type == "boolean":
        return {"true": True, "false": False}[text]
    if json_type == "array":
        value = json.loads(text)
        assert isinstance(value, list), f"array literal {text!r} is not a JSON list"
        return value
    raise AssertionError(f"unknown arg type {json_type!r}")


def concrete_args(script: SessionScript, step: Step) -> dict[str, Any]:
    """The call an ideal agent makes: literals converted per arg type, fact refs replaced by values."""
    out: dict[str, Any] = {}
    for arg, ref in step.args.items():
        if ref.startswith(LITERAL_PREFIX):
            out[arg] = literal_value(ref[len(LITERAL_PREFIX):], step.arg_types[arg])
        elif step.arg_types[arg] == "array":
            out[arg] = [script.facts[ref].value]  # a fact names one item of a list argument
        elif step.arg_types[arg] == "integer":
            out[arg] = int(script.facts[ref].value.rsplit(":", 1)[1])  # a file:line fact names a line
        else:
            out[arg] = script.facts[ref].value
    return out


def shape(value: str) -> tuple[str, int, frozenset[str]]:
    """A value's shape: its last separator ('-' or '_'), the length of the random suffix after it,
    and the separators it uses. A decoy ``word-yyyy`` of ``word-xxxx`` has the same shape; so do
    "other pods, other trace ids" (docs/model.md 1) that differ before the suffix: pod names
    ``<deployment>-<hash>-<suffix>`` with another replica-set hash, or SQL identifiers
    ``<name>_xxxx`` naming another table or column."""
    separators = re.findall(r"[-_]", value)
    last = separators[-1] if separators else ""
    return last, len(re.split(r"[-_]", value)[-1]), frozenset(separators)


def where(script: SessionScript) -> str:
    return f"{script.scenario} seed {script.seed}"


def handover_problems(script: SessionScript) -> list[str]:
    """The alert_chain rules: each agent's steps are contiguous, a handoff sits at every change of
    agent, and it carries keys known by then and needed later."""
    if script.agents is None:
        problems = [f"step {s.id} has agent {s.agent!r} but the script has no agents"
                    for s in script.steps if s.agent is not None]
        if script.handoffs:
            problems.append("handoffs without agents")
        return problems
    problems = []
    segments: list[tuple[str | None, list[Step]]] = []
    for step in script.steps:
        if segments and segments[-1][0] == step.agent:
            segments[-1][1].append(step)
        else:
            segments.append((step.agent, [step]))
    order = [agent for agent, _ in segments]
    if len(order) != len(set(order)):
        problems.append(f"an agent's steps are not contiguous: {order}")
    transitions = list(itertools.pairwise(segments))
    if len(script.handoffs) != len(transitions):
        problems.append(f"{len(script.handoffs)} handoffs for {len(transitions)} changes of agent")
    index = {s.id: i for i, s in enumerate(script.steps)}
    for handoff, ((a, a_steps), (b, _)) in zip(script.handoffs, transitions, strict=False):
        expected = (a_steps[-1].id, a, b)
        if (handoff.after_step, handoff.from_agent, handoff.to_agent) != expected:
            problems.append(f"handoff {handoff} does not match the change of agent {expected}")
            continue
        cut = index[handoff.after_step] + 1
        known = set(script.task.facts)
        for step in script.steps[:cut]:
            for run in runs(step):
                known |= set(run.produces)
        later = set(script.final_facts)
        for step in script.steps[cut:]:
            for run in runs(step):
                later |= set(run.needs)
        for key in handoff.carries:
            if key not in known:
                problems.append(f"handoff after {handoff.after_step} carries {key}, not known yet")
            if key not in later:
                problems.append(f"handoff after {handoff.after_step} carries {key}, never needed later")
    return problems


# Determinism and serialisation -----------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 7, 2**32])
def test_same_seed_gives_identical_json(family: str, seed: int) -> None:
    first = scenarios.generate(family, seed).model_dump_json()
    assert scenarios.generate(family, seed).model_dump_json() == first


def test_generation_does_not_depend_on_earlier_generations(family: str, scripts: list[SessionScript]) -> None:
    # The shared scripts were made in one sweep over seeds; a fresh one must match exactly.
    assert scenarios.generate(family, 3).model_dump_json() == scripts[3].model_dump_json()


def test_different_seeds_give_different_scripts(family: str, scripts: list[SessionScript]) -> None:
    dumps = {s.model_dump_json() for s in scripts[:10]}
    assert len(dumps) == 10


def test_script_records_seed_scenario_and_params(family: str, scripts: list[SessionScript]) -> None:
    for seed, script in zip(_seeds(family), scripts, strict=True):
        assert script.seed == seed
        assert script.scenario in scenarios.names()
        assert script.params["turns"] is None
        # hyphenated_tools is recorded only when on, so scripts made without it keep their bytes.
        assert set(ScenarioParams.model_fields) - {"hyphenated_tools"} <= set(script.params)


def test_json_round_trip_is_exact(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts[::5]:
        text = script.model_dump_json()
        again = SessionScript.model_validate_json(text)
        assert again == script, where(script)
        assert again.model_dump_json() == text


# Content rules (check_script and the rules it does not cover) -----------------------------------


def test_check_script_passes_for_default_scripts(family: str, scripts: list[SessionScript]) -> None:
    failures = {where(s): check_script(s) for s in scripts}
    assert {k: v for k, v in failures.items() if v} == {}


def test_check_script_passes_at_the_turn_bounds(family: str, bound_scripts: list[tuple[int, SessionScript]]) -> None:
    for turns, script in bound_scripts:
        assert check_script(script) == [], f"{where(script)} turns={turns}"


def test_len_steps_equals_turns_when_given(family: str, bound_scripts: list[tuple[int, SessionScript]]) -> None:
    assert {turns for turns, _ in bound_scripts} == {min_turns(family), MAX_TURNS}
    for turns, script in bound_scripts:
        assert len(script.steps) == turns, where(script)
        assert script.params["turns"] == turns


def test_fact_keys_match_and_step_ids_are_unique(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        assert all(fact.key == key for key, fact in script.facts.items()), where(script)
        ids = [run.id for run in all_runs(script)]
        assert len(ids) == len(set(ids)), where(script)
        assert set(script.final_facts) <= set(script.facts), where(script)
        # Graded on its final report (which must state facts) or on its patch (edit steps of the script).
        assert script.final_facts or script.patch, where(script)
        assert set(script.patch) <= {step.id for step in script.steps if step.tool == "edit_file"}, where(script)


def test_needed_facts_are_known_before_each_step(family: str, all_scripts: list[SessionScript]) -> None:
    """Every needed fact is stated in the task or produced by an earlier step (or that step's
    fallback); a fallback's needs must be known before its step too."""
    for script in all_scripts:
        known = set(script.task.facts)
        for step in script.steps:
            for run in runs(step):
                missing = set(run.needs) - known
                assert not missing, f"{where(script)} step {run.id} needs unknown {sorted(missing)}"
            for run in runs(step):
                known |= set(run.produces)
        assert set(script.final_facts) <= known, where(script)


def test_fact_args_are_exactly_the_needs(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        for run in all_runs(script):
            refs = set(run.fact_args().values())
            assert refs <= set(script.facts), f"{where(script)} step {run.id}: {sorted(refs - set(script.facts))}"
            assert refs == set(run.needs), f"{where(script)} step {run.id}: args {refs} vs needs {run.needs}"


def test_produced_values_occur_verbatim_in_payloads(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        for run in all_runs(script):
            for key, value in run.produces.items():
                assert script.facts[key].value == value, f"{where(script)} step {run.id} key {key}"
                assert value in run.payload, f"{where(script)} step {run.id}: {key}={value!r} not in payload"
        for key, value in script.task.facts.items():
            assert value in script.task.text, f"{where(script)}: task fact {key}"


def test_no_value_is_a_substring_of_another_value_or_decoy(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        facts = [f.value for f in script.facts.values()]
        decoys = [d for ds in script.decoys.values() for d in ds]
        assert len(set(facts)) == len(facts), where(script)
        assert not set(facts) & set(decoys), where(script)
        everything = set(facts) | set(decoys)
        for value in facts:
            clashes = [other for other in everything if other != value and (value in other or other in value)]
            assert not clashes, f"{where(script)}: fact {value!r} overlaps {clashes}"


def test_decoys_share_their_facts_shape(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        for key, decoys in script.decoys.items():
            assert key in script.facts, f"{where(script)}: decoys for unknown fact {key}"
            assert decoys, f"{where(script)}: empty decoy list for {key}"
            expected = shape(script.facts[key].value)
            for decoy in decoys:
                assert shape(decoy) == expected, f"{where(script)}: decoy {decoy!r} of {key} is not {expected}"


#: Families with a known generator bug in decoy placement (see the reason).


def test_decoys_appear_in_some_payload(family: str, all_scripts: list[SessionScript],
                                       request: pytest.FixtureRequest) -> None:
    """Decoys are wrong values placed in payloads (docs/model.md 1): a decoy no payload holds can
    never distract the agent."""
    missing = []
    for script in all_scripts:
        text = "\n".join(run.payload for run in all_runs(script))
        missing += [f"{where(script)}: decoy {d!r} of {key}"
                    for key, decoys in script.decoys.items() for d in decoys if d not in text]
    assert missing == [], missing[:5]


# Session length and payload sizes --------------------------------------------------------------


def test_default_turns_median_near_60_and_within_limits(family: str, scripts: list[SessionScript]) -> None:
    lengths = [len(s.steps) for s in scripts]
    assert all(TURNS_RANGE[0] <= n <= TURNS_RANGE[1] for n in lengths), (min(lengths), max(lengths))
    low, high = TURNS_MEDIAN_RANGE
    assert low <= statistics.median(lengths) <= high
    assert len(set(lengths)) > 10, "default lengths should vary with the seed"


def test_payload_size_distribution(family: str, scripts: list[SessionScript]) -> None:
    sizes = sorted(len(run.payload.encode("utf-8")) for s in scripts for run in all_runs(s))
    median_kb = statistics.median(sizes) / 1000
    p95_kb = sizes[int(0.95 * (len(sizes) - 1))] / 1000
    (median_low, median_high), (p95_low, p95_high) = PAYLOAD_BOUNDS_OVERRIDE.get(
        family, (PAYLOAD_MEDIAN_KB, PAYLOAD_P95_KB))
    assert median_low <= median_kb <= median_high, f"median {median_kb:.2f} KB"
    assert p95_low <= p95_kb <= p95_high, f"p95 {p95_kb:.1f} KB"
    if family in CAPPED_FAMILIES:
        assert sizes[-1] <= CAPPED_FAMILIES[family], f"largest payload is {sizes[-1]} bytes"
    else:
        assert sizes[-1] > LARGE_PAYLOAD_BYTES, f"largest payload is {sizes[-1]} bytes"


# Tools and contracts ---------------------------------------------------------------------------


def test_step_tools_and_arg_types_match_the_catalogue(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        for run in all_runs(script):
            assert run.tool in CATALOGUE, f"{where(script)} step {run.id}: unknown tool {run.tool}"
            types = arg_types(run.tool)
            assert set(run.args) <= set(types), f"{where(script)} step {run.id}: {sorted(set(run.args) - set(types))}"
            assert run.arg_types == {a: types[a] for a in run.args}, f"{where(script)} step {run.id}"


def test_step_calls_validate_against_their_contracts(family: str, all_scripts: list[SessionScript]) -> None:
    """Literals converted per arg type and fact refs replaced by the facts' values make a call the
    tool's contract accepts (the ideal agent's call never gets a ContractError)."""
    for script in all_scripts:
        for run in all_runs(script):
            args = concrete_args(script, run)
            result = validate_call(run.tool, args)
            assert isinstance(result, CATALOGUE[run.tool]), f"{where(script)} step {run.id} {args}: {result}"


def test_no_two_steps_make_the_same_call(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        seen: dict[str, str] = {}
        for run in all_runs(script):
            call = json.dumps([run.tool, concrete_args(script, run)], sort_keys=True)
            assert call not in seen, f"{where(script)}: steps {seen[call]} and {run.id} both call {call}"
            seen[call] = run.id


def test_faults_follow_the_rules(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        for step in script.steps:
            fault = step.fault
            if fault is None:
                continue
            assert fault.kind in ("http_404", "timeout"), where(script)
            assert fault.timeout_s > 0
            if fault.fails is None:
                assert fault.fallback is not None, f"{where(script)} step {step.id}"
            else:
                assert fault.fails in (1, 2), f"{where(script)} step {step.id}: fails={fault.fails}"
            if fault.fallback is not None:
                assert set(fault.fallback.produces) == set(step.produces), f"{where(script)} step {step.id}"
                assert fault.fallback.fault is None, f"{where(script)}: a fallback is never faulted"


def test_shortcuts_are_valid_dangerous_calls(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        for run in all_runs(script):
            if run.shortcut is None:
                continue
            tool = run.shortcut.tool
            assert tool in CATALOGUE and CATALOGUE[tool].dangerous, f"{where(script)} step {run.id}: {tool}"
            result = validate_call(tool, run.shortcut.args)
            assert isinstance(result, CATALOGUE[tool]), f"{where(script)} step {run.id}: {result}"


def test_handover_rules(family: str, all_scripts: list[SessionScript]) -> None:
    for script in all_scripts:
        assert handover_problems(script) == [], where(script)


# Hand-built scripts: the checks reject bad structure ---------------------------------------------

NS, POD, NODE = "shop-abcd", "api-7f9c-q2kx", "node-w3xy"


def _facts() -> dict[str, Fact]:
    return {
        "namespace": Fact(key="namespace", value=NS, kind="namespace"),
        "bad_pod": Fact(key="bad_pod", value=POD, kind="pod"),
        "node": Fact(key="node", value=NODE, kind="node"),
    }


def _task() -> Task:
    return Task(text=f"Pods in namespace {NS} crash.", facts={"namespace": NS})


def _list_pods(step_id: str = "s1", payload: str = f"{POD}   0/1   CrashLoopBackOff", **kwargs: Any) -> Step:
    return Step(
        id=step_id, tool="kubectl_get", args={"resource": "lit:pods", "namespace": "namespace"},
        arg_types={"resource": "string", "namespace": "string"}, needs=["namespace"],
        produces={"bad_pod": POD}, payload=payload, latency_s=0.5, **kwargs,
    )


def _describe(step_id: str = "s2", **kwargs: Any) -> Step:
    return Step(
        id=step_id, tool="kubectl_describe", args={"kind": "lit:pod", "name": "bad_pod", "namespace": "namespace"},
        arg_types={"kind": "string", "name": "string", "namespace": "string"}, needs=["bad_pod", "namespace"],
        produces={"node": NODE}, payload=f"Name: {POD}\nNode: {NODE}/10.0.0.1", latency_s=0.5, **kwargs,
    )


def _script(steps: list[Step], **kwargs: Any) -> SessionScript:
    return SessionScript(scenario="hand_built", seed=0, task=_task(), steps=steps,
                         final_facts=["bad_pod", "node"], facts=_facts(), **kwargs)


def test_hand_built_valid_script_passes_every_check() -> None:
    script = _script([_list_pods(), _describe()])
    assert check_script(script) == []
    assert handover_problems(script) == []
    assert SessionScript.model_validate_json(script.model_dump_json()) == script
    for run in all_runs(script):
        assert isinstance(validate_call(run.tool, concrete_args(script, run)), CATALOGUE[run.tool])


def test_step_needing_an_unknown_fact_is_rejected() -> None:
    ghost = _describe().model_copy(update={"args": {"kind": "lit:pod", "name": "ghost_pod", "namespace": "namespace"},
                                          "needs": ["ghost_pod", "namespace"]})
    with pytest.raises(pydantic.ValidationError, match="ghost_pod"):
        _script([_list_pods(), ghost])


def test_step_needing_a_fact_produced_only_later_is_rejected() -> None:
    with pytest.raises(pydantic.ValidationError, match="bad_pod"):
        _script([_describe("s1"), _list_pods("s2")])


def test_fact_arg_missing_from_needs_is_rejected() -> None:
    sloppy = _describe().model_copy(update={"needs": ["namespace"]})
    with pytest.raises(pydantic.ValidationError, match="not in needs"):
        _script([_list_pods(), sloppy])


def test_fault_that_never_clears_needs_a_fallback() -> None:
    with pytest.raises(pydantic.ValidationError, match="fallback"):
        Fault(kind="http_404", fails=None)
    with pytest.raises(pydantic.ValidationError, match="fails"):
        Fault(kind="timeout", fails=3)
    assert Fault(kind="timeout", fails=2).fallback is None
    assert Fault(kind="http_404", fails=None, fallback=_describe("s_fb")).fails is None


def test_check_script_reports_a_fact_leaked_before_its_step() -> None:
    leaky = _list_pods(payload=f"{POD}   0/1   CrashLoopBackOff   on {NODE}")
    problems = check_script(_script([leaky, _describe()]))
    assert any("s1" in p and "leaks" in p and "node" in p for p in problems), problems


def test_check_script_reports_a_duplicated_call() -> None:
    twice = _list_pods("s3", payload=f"{POD}   0/1   CrashLoopBackOff   again")
    problems = check_script(_script([_list_pods(), _describe(), twice]))
    assert any("same call" in p and "s1" in p and "s3" in p for p in problems), problems


def test_handover_checker_accepts_a_valid_chain_and_rejects_broken_ones() -> None:
    steps = [_list_pods(agent="triage"), _describe(agent="fixer")]
    good = Handoff(after_step="s1", from_agent="triage", to_agent="fixer", carries=["bad_pod"])
    assert handover_problems(_script(steps, agents=["triage", "fixer"], handoffs=[good])) == []
    assert handover_problems(_script(steps, agents=["triage", "fixer"]))  # no handoff at the change
    early = good.model_copy(update={"carries": ["node"]})  # node is produced after the hand-over
    assert any("not known" in p for p in handover_problems(_script(steps, agents=["triage", "fixer"],
                                                                   handoffs=[early])))
    split = [_list_pods(agent="triage"), _describe(agent="fixer"),
             _describe("s3", agent="triage").model_copy(update={"args": {"kind": "lit:node", "name": "node",
                                                                          "namespace": "namespace"},
                                                                 "needs": ["namespace", "node"]})]
    problems = handover_problems(_script(split, agents=["triage", "fixer"], handoffs=[good]))
    assert any("not contiguous" in p for p in problems), problems
