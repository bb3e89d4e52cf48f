"""Parameter types shared by several strategies' Params models."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StrictInt


def _none_is_zero(value: Any) -> Any:
    return 0 if value is None else value


#: ``pin_first``: how many leading messages to pin once; None means 0, negatives are rejected.
PinFirst = Annotated[StrictInt, BeforeValidator(_none_is_zero), Field(ge=0)]
NonNegativeInt = Annotated[StrictInt, Field(ge=0)]
PositiveInt = Annotated[StrictInt, Field(ge=1)]
