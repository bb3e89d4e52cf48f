"""`mix`: one family per session, drawn with given weights (the default comparison's workload)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from harness.core.errors import error_path
from harness.core.suggest import did_you_mean, unknown_param
from scenarios.base import ScenarioFamily, ScenarioParams, Series, SessionScript, get, names, register
from scenarios.draws import Draws, derive_seed

#: Families the default mix draws from, equally likely.
DEFAULT_FAMILIES = ("alert_chain", "db_slow_query", "deploy_regression", "k8s_crashloop", "log_triage")


#: The largest weight: weights are relative, so a million to one already means "never", and the bound
#: keeps their sum finite.
MAX_WEIGHT = 1e6


class MixParams(ScenarioParams):
    #: family name -> relative weight (>= 0, at least one > 0). Default: the five families equally.
    weights: dict[str, float] = Field(
        default_factory=lambda: dict.fromkeys(DEFAULT_FAMILIES, 1.0), validate_default=True
    )
    #: family name -> extra params for that family (beside the shared length and payload params).
    family_params: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("weights")
    @classmethod
    def _valid_weights(cls, weights: dict[str, float]) -> dict[str, float]:
        for name, weight in weights.items():
            if name == "mix":
                raise ValueError("a mix cannot contain itself")
            if name not in names():
                raise ValueError(f"unknown scenario {name!r}{did_you_mean(name, names())}; known: {', '.join(names())}")
            if not 0 <= weight <= MAX_WEIGHT:
                raise ValueError(f"weight of {name!r} must be in [0, {MAX_WEIGHT:g}], got {weight}")
        if not any(w > 0 for w in weights.values()):
            raise ValueError("at least one weight must be > 0")
        return dict(sorted(weights.items()))

    @model_validator(mode="after")
    def _params_for_mixed_families(self) -> MixParams:
        extra = set(self.family_params) - set(self.weights)
        if extra:
            raise ValueError(f"family_params for families not in weights: {sorted(extra)}")
        # Each family's params are checked here, as `generate` will build them, so a bad one fails the
        # config instead of every session of that family in the middle of a run.
        shared = self.model_dump(exclude={"weights", "family_params"})
        for family, params in self.family_params.items():
            for key in params:
                if key in shared:
                    raise ValueError(f"family_params.{family}.{key}: a param every family shares; set it beside "
                                     "weights")
            try:
                get(family).Params(**shared, **params)
            except ValidationError as e:
                first = e.errors()[0]
                field = error_path(first)
                if first["type"] == "extra_forbidden" and len(first["loc"]) == 1:
                    problem = unknown_param(f"scenario {family}", field, get(family).Params.model_fields)
                    raise ValueError(f"family_params.{family}.{field}: {problem}") from None
                raise ValueError(f"family_params.{family}.{field}: {first['msg']}") from None
        return self


@register("mix")
class Mix(ScenarioFamily):
    """A weighted mix of the families, one drawn per session (the default workload)."""

    Params = MixParams
    params: MixParams

    def family_for(self, seed: int) -> str:
        families = list(self.params.weights)
        return Draws(derive_seed(seed, "mix")).weighted(families, [self.params.weights[f] for f in families])

    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        family = self.family_for(seed)
        cls = get(family)
        shared = self.params.model_dump(exclude={"weights", "family_params"})
        generator = cls(cls.Params(**shared, **self.params.family_params.get(family, {})))
        return generator.generate(seed) if series is None else generator.generate(seed, series)
