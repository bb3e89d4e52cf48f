"""Property tests: session scripts, and the models they are made of, survive a JSON round trip
unchanged (docs/model.md 1: a script's JSON round trip is exact)."""

from __future__ import annotations

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import scenarios
from scenarios.base import Call, Fact, Fault, Step, Task

USABLE = scenarios.names()


def _assert_round_trip(model: pydantic.BaseModel) -> None:
    text = model.model_dump_json()
    again = type(model).model_validate_json(text)
    assert again == model
    assert again.model_dump_json() == text


# Generating one script costs ~30 ms (more at long `turns`), so 25 examples keep this property
# around a second while still drawing new families, seeds and lengths in every run.
@settings(max_examples=25)
@given(
    name=st.sampled_from(USABLE),
    seed=st.integers(0, 2**32),
    turns=st.one_of(st.none(), st.integers(20, 60)),
)
def test_generated_script_survives_json_round_trip(name: str, seed: int, turns: int | None) -> None:
    script = scenarios.generate(name, seed, turns=turns)
    _assert_round_trip(script)
    if turns is not None:
        assert len(script.steps) == turns


# Text strategies: any unicode text JSON can carry (hypothesis leaves out lone surrogates).
texts = st.text(max_size=40)
keys = st.text(min_size=1, max_size=12)
values = st.text(min_size=1, max_size=40)
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), texts)

facts = st.builds(Fact, key=keys, value=values, kind=texts)
tasks = st.builds(Task, text=texts, facts=st.dictionaries(keys, values, max_size=4))
calls = st.builds(Call, tool=keys, args=st.dictionaries(keys, json_scalars, max_size=3))
latencies = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


def _steps(fault: st.SearchStrategy[Fault | None]) -> st.SearchStrategy[Step]:
    return st.builds(
        Step,
        id=keys,
        tool=keys,
        args=st.dictionaries(keys, st.one_of(keys, texts.map(lambda t: "lit:" + t)), max_size=4),
        arg_types=st.dictionaries(keys, st.sampled_from(["string", "integer", "boolean", "array"]), max_size=4),
        needs=st.lists(keys, max_size=4),
        produces=st.dictionaries(keys, values, max_size=3),
        payload=st.text(max_size=400),
        latency_s=latencies,
        fault=fault,
        shortcut=st.none() | calls,
        agent=st.none() | keys,
    )


faults = st.one_of(
    st.builds(Fault, kind=st.sampled_from(["http_404", "timeout"]), fails=st.sampled_from([1, 2]),
              fallback=st.none() | _steps(st.none()),
              timeout_s=st.floats(min_value=0.001, max_value=600, allow_nan=False)),
    st.builds(Fault, kind=st.sampled_from(["http_404", "timeout"]), fails=st.none(), fallback=_steps(st.none())),
)
steps = _steps(st.none() | faults)


@given(facts)
def test_fact_survives_json_round_trip(fact: Fact) -> None:
    _assert_round_trip(fact)


@given(tasks)
def test_task_survives_json_round_trip(task: Task) -> None:
    _assert_round_trip(task)


@given(steps)
def test_step_survives_json_round_trip(step: Step) -> None:
    _assert_round_trip(step)


@given(faults)
def test_fault_survives_json_round_trip(fault: Fault) -> None:
    _assert_round_trip(fault)
    assert fault.fails in (1, 2) or fault.fallback is not None


@pytest.mark.parametrize("bad", [{"fails": 0}, {"fails": None}, {"timeout_s": 0}])
def test_fault_rules_reject_bad_faults(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        Fault(kind="timeout", **bad)
