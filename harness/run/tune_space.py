"""The search space of ``ctxbench tune``: a strategy's pydantic ``Params`` model read as optuna distributions,
narrowed by the user's ranges, and the way back from a sampled point to the strategy's params.

What is searched, per field of the strategy's ``Params`` (`strategies.get(name).Params`):

- ``bool``: both values (a categorical).
- ``Literal[...]`` and enums: every value (a categorical).
- ``int``: from the declared lower bound, or a quarter of the default when that is higher, up to the declared
  upper bound, or 4 times the default (8 when the default is 0) when that is lower; a log scale when the range
  starts at 1 or more and spans a factor of 16 or more. Declared bounds are pydantic's ``ge``/``gt``/``le``/
  ``lt`` wherever they are written (``Field``, ``Annotated`` metadata, ``NonNegativeInt`` and the like).
- ``float``: a quarter to 4 times the default, clipped to the declared bounds (an open bound, ``gt``/``lt``,
  is moved inward by a millionth of the range); a log scale when the range spans a factor of 16 or more.
- ``bool | int >= 1`` (``per_turn``: false, true, or every n-th call): an integer 0..8, where 0 is false and n
  is every n-th call (1, every call, is what true means).
- ``int >= 1 | None`` with the default None (an optional trigger that is off, e.g. ``trigger_turns``): not
  searched by default (no default gives its scale); a given range may start at 0, which stands for None.
- an optional int whose default is a number: its int range as above (None is not searched).
- anything else (text, lists, tables, nested models, pipelines) is not searched, unless the user names
  ``choices`` for it.

The user's ranges (``[tune.params.NAME]``, ``--param NAME=LOW:HIGH`` or ``NAME=a,b,c``) replace a field's
range and may search a field that is not searched by default; they must lie inside the declared bounds.
The strategy's defaults are always the first trial (`harness.run.tune`), even when they lie outside the
user's ranges.
"""

from __future__ import annotations

import enum
import json
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import annotated_types
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

import strategies
from harness.core.suggest import did_you_mean
from harness.run.config import TuneRange, first_error

__all__ = ["ParamSpace", "SearchSpace", "SpaceError", "parse_param_flag", "search_space"]

#: A default int range reaches this many times the default (docstring above).
DEFAULT_SPAN = 4
#: The upper end of an int range whose default is 0, and of ``per_turn``-like unions.
ZERO_DEFAULT_HIGH = 8
#: A range spanning this factor or more is searched on a log scale.
LOG_FACTOR = 16

Kind = Literal["int", "float", "categorical"]
#: How a sampled value becomes a param value: as it is, 0 as False (``bool | int``), 0 as None, or the
#: index of a non-scalar choice.
Encoding = Literal["plain", "zero_is_false", "zero_is_none", "json"]


class SpaceError(ValueError):
    """A search space that cannot be built: an unknown strategy or param, a range outside the declared
    bounds or upside down, a strategy with nothing to search. One line naming the field."""


@dataclass(frozen=True, slots=True)
class ParamSpace:
    """One searched param: its distribution's kind and range (or choices), how a sampled value decodes,
    and why this range (the rule, or "given")."""

    name: str
    kind: Kind
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    choices: tuple[Any, ...] = ()
    encoding: Encoding = "plain"
    rule: str = ""

    def distribution(self) -> BaseDistribution:
        """The optuna distribution of this param."""
        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log)
        if self.kind == "float":
            return FloatDistribution(self.low, self.high, log=self.log)
        return CategoricalDistribution(self.choices)

    def decode(self, value: Any) -> Any:
        """A sampled value as the strategy's param value."""
        if self.encoding == "zero_is_false":
            return False if value == 0 else int(value)
        if self.encoding == "zero_is_none":
            return None if value == 0 else int(value)
        if self.encoding == "json":
            return json.loads(value)
        return value

    def encode(self, value: Any) -> Any:
        """A param value (the strategy's default) as a sampled value; the inverse of `decode`."""
        if self.encoding == "zero_is_false":
            return 0 if value is False else (1 if value is True else int(value))
        if self.encoding == "zero_is_none":
            return 0 if value is None else int(value)
        if self.encoding == "json":
            return json.dumps(value, sort_keys=True)
        if self.kind == "float":
            return float(value)
        return value

    def contains(self, encoded: Any) -> bool:
        """True when the encoded value lies inside this param's range or choices."""
        if self.kind == "categorical":
            return encoded in self.choices
        return self.low <= encoded <= self.high

    def describe(self) -> str:
        """One line for the study header: ``window_size int 10..160 log (4x the default)``."""
        if self.kind == "categorical":
            shown = ", ".join(json.dumps(self.decode(c)) for c in self.choices)
            return f"{self.name}: one of {shown} ({self.rule})"
        span = f"{self.low:g}..{self.high:g}" if self.kind == "float" else f"{int(self.low)}..{int(self.high)}"
        return f"{self.name}: {self.kind} {span}{' log' if self.log else ''} ({self.rule})"

    def identity(self) -> dict[str, Any]:
        """What a tune directory records of this param (compared on resume)."""
        return {"kind": self.kind, "low": self.low, "high": self.high, "log": self.log,
                "choices": list(self.choices), "encoding": self.encoding}


@dataclass(frozen=True, slots=True)
class SearchSpace:
    """A strategy's searched params, the defaults the first trial runs, and the fields left out with why."""

    strategy: str
    params: tuple[ParamSpace, ...]
    #: The strategy's params as the first trial runs them (the base config's entry, else the defaults).
    defaults: Mapping[str, Any]
    #: Field name -> why it is not searched.
    skipped: Mapping[str, str]

    def distributions(self) -> dict[str, BaseDistribution]:
        return {p.name: p.distribution() for p in self.params}

    def decode(self, sampled: Mapping[str, Any]) -> dict[str, Any]:
        """A sampled point as the strategy's params: the defaults with the searched params replaced, each as
        the strategy's own validation makes it (a value it clamps, as summarize clamps ``summary_ratio`` to
        [0.1, 0.8], is shown, written and compared as the value that runs). A point the strategy refuses is
        returned as sampled: its trial is invalid (`harness.run.tune`)."""
        out = dict(self.defaults)
        for p in self.params:
            out[p.name] = p.decode(sampled[p.name])
        try:
            effective = strategies.get(self.strategy).Params(**out).model_dump()
        except ValidationError:
            return out
        return out | {p.name: effective[p.name] for p in self.params if p.name in effective}

    def default_point(self) -> dict[str, Any]:
        """The first trial's point: the defaults, encoded."""
        return {p.name: p.encode(self.defaults.get(p.name)) for p in self.params}

    def default_inside(self) -> bool:
        """True when the defaults lie inside every searched range (the sampler may then learn from them)."""
        point = self.default_point()
        return all(p.contains(point[p.name]) for p in self.params)

    def identity(self) -> dict[str, Any]:
        return {p.name: p.identity() for p in self.params}


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: float | None = None
    low_open: bool = False
    high: float | None = None
    high_open: bool = False


def _bounds(metadata: list[Any]) -> _Bounds:
    low = high = None
    low_open = high_open = False
    for m in metadata:
        if isinstance(m, FieldInfo):
            inner = _bounds(list(m.metadata))
            low, low_open = (inner.low, inner.low_open) if inner.low is not None else (low, low_open)
            high, high_open = (inner.high, inner.high_open) if inner.high is not None else (high, high_open)
        elif isinstance(m, annotated_types.Ge):
            low, low_open = float(m.ge), False  # type: ignore[arg-type]
        elif isinstance(m, annotated_types.Gt):
            low, low_open = float(m.gt), True  # type: ignore[arg-type]
        elif isinstance(m, annotated_types.Le):
            high, high_open = float(m.le), False  # type: ignore[arg-type]
        elif isinstance(m, annotated_types.Lt):
            high, high_open = float(m.lt), True  # type: ignore[arg-type]
    return _Bounds(low, low_open, high, high_open)


def _unwrap(tp: Any) -> tuple[Any, list[Any]]:
    """``Annotated[T, m...]`` as (T, [m...]), flattened; any other type as (itself, [])."""
    metadata: list[Any] = []
    while typing.get_origin(tp) is typing.Annotated:
        args = typing.get_args(tp)
        tp, metadata = args[0], [*args[1:], *metadata]
    return tp, metadata


def _members(tp: Any) -> list[Any]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return list(typing.get_args(tp))
    return [tp]


def _int_range(default: int | None, bounds: _Bounds) -> tuple[int, int, str]:
    declared_low = None if bounds.low is None else math.floor(bounds.low) + (1 if bounds.low_open else 0)
    declared_high = None if bounds.high is None else math.ceil(bounds.high) - (1 if bounds.high_open else 0)
    base = default or 0
    low = base // DEFAULT_SPAN if base > 0 else (declared_low if declared_low is not None else 0)
    if declared_low is not None:
        low = max(low, declared_low)
    high = base * DEFAULT_SPAN if base > 0 else ZERO_DEFAULT_HIGH
    high = max(high, low + 1)
    if declared_high is not None:
        high = min(high, declared_high)
    rule = f"default {base}: {'a quarter' if base > 0 else 'the lower bound'} to " \
           f"{f'{DEFAULT_SPAN}x' if base > 0 else ZERO_DEFAULT_HIGH}, within the declared bounds"
    return int(low), int(high), rule


def _float_range(default: float, bounds: _Bounds) -> tuple[float, float, str]:
    low, high = (default / DEFAULT_SPAN, default * DEFAULT_SPAN) if default > 0 else (0.0, 1.0)
    if bounds.low is not None:
        low = max(low, bounds.low)
    if bounds.high is not None:
        high = min(high, bounds.high)
    nudge = (high - low) * 1e-6
    if bounds.low_open and bounds.low is not None and low <= bounds.low:
        low = bounds.low + nudge
    if bounds.high_open and bounds.high is not None and high >= bounds.high:
        high = bounds.high - nudge
    return low, high, f"default {default:g}: a quarter to {DEFAULT_SPAN}x, within the declared bounds"


def _log_scale(low: float, high: float) -> bool:
    return low >= 1 and high >= LOG_FACTOR * low if low > 0 else False


def _field_space(name: str, field: FieldInfo, default: Any) -> ParamSpace | str:
    """The default space of one field, or why it is not searched."""
    tp, metadata = _unwrap(field.annotation)
    metadata = [*metadata, *field.metadata]
    members = [_unwrap(m) for m in _members(tp)]
    kinds = [m for m, _ in members]
    if kinds == [bool]:
        return ParamSpace(name, "categorical", choices=(False, True), rule="both values")
    if typing.get_origin(tp) is Literal:
        return ParamSpace(name, "categorical", choices=tuple(typing.get_args(tp)), rule="every value")
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return ParamSpace(name, "categorical", choices=tuple(m.value for m in tp), encoding="plain",
                          rule="every value")
    if kinds == [int]:
        low, high, rule = _int_range(default, _bounds(metadata))
        return ParamSpace(name, "int", low, high, _log_scale(low, high), rule=rule)
    if kinds == [float]:
        if not isinstance(default, int | float):
            return "a float without a default"
        low_f, high_f, rule = _float_range(float(default), _bounds(metadata))
        return ParamSpace(name, "float", low_f, high_f, _log_scale(low_f, high_f), rule=rule)
    if sorted(map(str, kinds)) == sorted(map(str, [bool, int])):
        int_meta = next(meta for kind, meta in members if kind is int)
        bounds = _bounds(int_meta)
        if bounds.low is not None and bounds.low >= 1:
            return ParamSpace(name, "int", 0, ZERO_DEFAULT_HIGH, encoding="zero_is_false",
                              rule="bool | int: 0 is false, n every n-th call (1 = true)")
        return "a bool | int union whose int may be 0 (no free value for false)"
    if len(kinds) == 2 and type(None) in kinds and int in kinds:
        int_meta = next(meta for kind, meta in members if kind is int)
        bounds = _bounds(int_meta)
        if default is None:
            return "off (None) by default, so no scale to search around; give a range (0 = None) to search it"
        low, high, rule = _int_range(default, bounds)
        return ParamSpace(name, "int", low, high, _log_scale(low, high), rule=rule + "; None not searched")
    return f"{_type_name(field.annotation)} is not a scalar; give choices to search it"


def _type_name(tp: Any) -> str:
    """A field's type as a reader knows it: ``InputTokens | ToolUses``, ``tuple[str, ...]``."""
    tp, _ = _unwrap(tp)
    members = _members(tp)
    if len(members) > 1:
        return " | ".join(_type_name(m) for m in members)
    if tp is type(None):
        return "None"
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        return tp.__name__
    return str(tp).replace("typing.", "")


def _encoding_of(field: FieldInfo) -> Encoding:
    """How a given integer range of ``field`` encodes its non-integer value: 0 as False for ``bool | int >= 1``,
    0 as None for ``int >= 1 | None``; plain otherwise."""
    tp, _ = _unwrap(field.annotation)
    members = [_unwrap(m) for m in _members(tp)]
    kinds = [kind for kind, _ in members]
    ints = [meta for kind, meta in members if kind is int]
    if len(kinds) != 2 or not ints:
        return "plain"
    bounds = _bounds(ints[0])
    if bounds.low is None or bounds.low < 1:
        return "plain"
    if bool in kinds:
        return "zero_is_false"
    return "zero_is_none" if type(None) in kinds else "plain"


def _given_space(name: str, given: TuneRange, default_space: ParamSpace | str, field: FieldInfo,
                 where: str) -> ParamSpace:
    """The user's range for ``name`` checked against the field's declared bounds and type."""
    tp, metadata = _unwrap(field.annotation)
    if given.choices is not None:
        scalar = all(isinstance(c, bool | int | float | str) for c in given.choices)
        if not scalar:
            return ParamSpace(name, "categorical", choices=tuple(json.dumps(c, sort_keys=True) for c in given.choices),
                              encoding="json", rule="given")
        if _encoding_of(field) != "plain":  # choices as written (true, 2, null): kept as JSON to tell 1 from true
            return ParamSpace(name, "categorical", choices=tuple(json.dumps(c) for c in given.choices),
                              encoding="json", rule="given")
        return ParamSpace(name, "categorical", choices=tuple(given.choices), rule="given")
    assert given.low is not None and given.high is not None
    members = [_unwrap(m) for m in _members(tp)]
    numeric = [(kind, meta) for kind, meta in members if kind in (int, float)]
    if not numeric:
        raise SpaceError(f"{where}: {name} is not a number ({_type_name(field.annotation)}); give choices")
    kind, meta = numeric[0]
    bounds = _bounds([*metadata, *field.metadata, *meta])
    low, high = given.low, given.high
    encoding = _encoding_of(field)
    if encoding != "plain" and low == 0:  # 0 stands for False / None, below the int's own bound
        low = bounds.low if bounds.low is not None else 1
    if bounds.low is not None and (low < bounds.low or (bounds.low_open and low <= bounds.low)):
        raise SpaceError(f"{where}: low {low:g} is below {name}'s declared bound "
                         f"({'>' if bounds.low_open else '>='} {bounds.low:g})")
    if bounds.high is not None and (high > bounds.high or (bounds.high_open and high >= bounds.high)):
        raise SpaceError(f"{where}: high {high:g} is above {name}'s declared bound "
                         f"({'<' if bounds.high_open else '<='} {bounds.high:g})")
    if given.log and low <= 0:
        raise SpaceError(f"{where}: a log range needs low > 0 (got {low:g})")
    if kind is int:
        if not (float(given.low).is_integer() and float(high).is_integer()):
            raise SpaceError(f"{where}: {name} is an integer; got {given.low:g}..{high:g}")
        return ParamSpace(name, "int", int(given.low), int(high), given.log, encoding=encoding, rule="given")
    return ParamSpace(name, "float", float(low), float(high), given.log, rule="given")


def search_space(strategy: str, ranges: Mapping[str, TuneRange] | None = None, *,
                 base_params: Mapping[str, Any] | None = None, where: str = "tune.params",
                 origins: Mapping[str, str] | None = None) -> SearchSpace:
    """The space a tune of ``strategy`` searches: every searchable field by the module's rules, with the
    user's ``ranges`` instead where given (``where`` names them in errors, or ``origins[name]``, e.g.
    ``--param``). ``base_params`` are the
    config's params of the strategy (the first trial's settings; the registered defaults otherwise).
    SpaceError for an unknown strategy or param, a range outside the declared bounds, or nothing to search."""
    if strategy not in strategies.names():
        raise SpaceError(f"--strategy: unknown strategy {strategy!r}{did_you_mean(strategy, strategies.names())} "
                         f"(known: {', '.join(strategies.names())})")
    model: type[BaseModel] = strategies.get(strategy).Params
    if base_params is None:  # the settings a strategy without usable defaults replays with
        from harness.run.accounting import ACCOUNTING_PARAMS

        base_params = ACCOUNTING_PARAMS.get(strategy, {})
    try:
        defaults = strategies.create(strategy, **dict(base_params)).params.model_dump(mode="python")
    except ValidationError as e:
        raise SpaceError(f"strategy {strategy}: its settings are not valid: {first_error(e)}; the first trial "
                         "runs them") from None
    ranges = dict(ranges or {})
    origins = dict(origins or {})

    def at(name: str) -> str:
        return f"{origins[name]} {name}" if name in origins else f"{where}.{name}"

    for name in ranges:
        if name not in model.model_fields:
            known = list(model.model_fields)
            raise SpaceError(f"{at(name)}: strategy {strategy} has no param {name!r}{did_you_mean(name, known)}"
                             f" (known: {', '.join(known) or 'none'})")
    params: list[ParamSpace] = []
    skipped: dict[str, str] = {}
    for name, field in model.model_fields.items():
        space = _field_space(name, field, defaults.get(name))
        if name in ranges:
            space = _given_space(name, ranges[name], space, field, at(name))
            _check_values(strategy, defaults, space, at(name))
        if isinstance(space, str):
            skipped[name] = space
            continue
        params.append(space)
    if not params:
        reasons = "; ".join(f"{k}: {v}" for k, v in skipped.items()) or "it has no params"
        raise SpaceError(f"--strategy: strategy {strategy} has nothing to search ({reasons})")
    return SearchSpace(strategy, tuple(params), defaults, skipped)


def _check_values(strategy: str, defaults: Mapping[str, Any], space: ParamSpace, where: str) -> None:
    """Each end of a given range (each choice) must make valid params of the strategy."""
    values = list(space.choices) if space.kind == "categorical" else [space.low, space.high]
    for v in values:
        value = space.decode(int(v) if space.kind == "int" else v)
        try:
            strategies.create(strategy, **(dict(defaults) | {space.name: value}))
        except ValidationError as e:
            raise SpaceError(f"{where}: {json.dumps(value) if not isinstance(value, float) else f'{value:g}'} is "
                             f"not a valid {space.name}: {first_error(e)}") from None


def parse_param_flag(text: str) -> tuple[str, TuneRange]:
    """``--param NAME=LOW:HIGH`` (``:log`` after it for a log scale) or ``NAME=a,b,c`` (each value JSON when it
    parses, text otherwise, as `ctxbench sweep --param` reads values) as (name, range); SpaceError naming the
    flag otherwise."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if name.count(".") == 1:  # STRATEGY.PARAM, as `sweep --param` writes it: the strategy is --strategy's
        name = name.partition(".")[2]
    if not sep or not name or not raw:
        raise SpaceError(f"--param: expected NAME=LOW:HIGH or NAME=V1,V2,..., got {text!r}")
    if ":" in raw and "," not in raw and not raw.lstrip().startswith(("{", "[", '"')):
        parts = raw.split(":")
        log = len(parts) == 3 and parts[2] == "log"
        if len(parts) not in (2, 3) or (len(parts) == 3 and not log):
            raise SpaceError(f"--param {name}: expected LOW:HIGH or LOW:HIGH:log, got {raw!r}")
        try:
            low, high = (_number(p) for p in parts[:2])
        except ValueError:
            raise SpaceError(f"--param {name}: LOW and HIGH must be numbers, got {raw!r}") from None
        try:
            return name, TuneRange(low=low, high=high, log=log)
        except ValidationError as e:
            raise SpaceError(f"--param {name}: {first_error(e)}") from None
    values = [_value(v) for v in raw.split(",")]
    try:
        return name, TuneRange(choices=values)
    except ValidationError as e:
        raise SpaceError(f"--param {name}: {first_error(e)}") from None


def _number(text: str) -> int | float:
    value = json.loads(text)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(text)
    return value


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
