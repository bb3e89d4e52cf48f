"""The scenario registry: sorted names, clear errors for unknown names and bad params, and no
double registration."""

from __future__ import annotations

import pydantic
import pytest

import scenarios
from scenarios import base
from scenarios.base import ScenarioFamily, ScenarioParams, SessionScript


def test_names_are_sorted_and_include_k8s_crashloop() -> None:
    names = scenarios.names()
    assert names == sorted(names)
    assert len(names) == len(set(names))
    assert "k8s_crashloop" in names


def test_get_returns_a_family_class_named_after_its_registration() -> None:
    for name in scenarios.names():
        cls = scenarios.get(name)
        assert issubclass(cls, ScenarioFamily)
        assert cls.name == name


def test_unknown_name_raises_key_error_listing_known_names() -> None:
    with pytest.raises(KeyError) as excinfo:
        scenarios.generate("no_such_family", 0)
    message = str(excinfo.value)
    assert "no_such_family" in message
    for name in scenarios.names():
        assert name in message


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"turns": 3}, "turns"),
        ({"turns": 5000}, "turns"),
        ({"turns": "60"}, "turns"),
        ({"payload_sigma": -1}, "payload_sigma"),
        ({"payload_median_bytes": 1}, "payload_median_bytes"),
        ({"no_such_param": 1}, "no_such_param"),
    ],
)
def test_bad_params_raise_validation_error_naming_the_field(params: dict[str, object], field: str) -> None:
    with pytest.raises(pydantic.ValidationError) as excinfo:
        scenarios.generate("k8s_crashloop", 0, **params)
    locs = {str(err["loc"][0]) for err in excinfo.value.errors()}
    assert locs == {field}
    assert field in str(excinfo.value)


def test_a_family_without_generate_cannot_be_made() -> None:
    class NoGenerate(ScenarioFamily):
        pass

    with pytest.raises(TypeError, match="generate"):
        NoGenerate(ScenarioParams())  # type: ignore[abstract]


def test_register_twice_raises_value_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # A private copy of the registry, so the classes registered here never leak into names().
    monkeypatch.setattr(base._REGISTRY, "_classes", dict(base._REGISTRY._classes))

    class Unregistered(ScenarioFamily):
        def generate(self, seed: int) -> SessionScript:
            raise AssertionError("registration never generates")

    class First(Unregistered):
        pass

    class Second(Unregistered):
        pass

    assert base.register("registry_test_family")(First) is First
    assert First.name == "registry_test_family"
    with pytest.raises(ValueError, match="already registered"):
        base.register("registry_test_family")(Second)
    with pytest.raises(ValueError, match="already registered"):
        base.register("k8s_crashloop")(Second)
    assert base._REGISTRY._classes["registry_test_family"] is First
    assert Second.name == ""


def test_registry_copy_did_not_leak() -> None:
    assert "registry_test_family" not in scenarios.names()
