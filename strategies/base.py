"""The strategy interface, its registry, and the rules every strategy follows (docs/strategies.md 1).

A strategy is a class with a pydantic ``Params`` model and four hooks the runtime calls in a fixed
order (``on_append``, ``before_call``, ``reduce`` on overflow, ``apply`` after each turn). Each
session gets a fresh instance from `create`, so instances may keep per-session state.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from harness.core import Context, Message, nonsummary
from harness.core.registry import Registry

ENTRY_POINT_GROUP = "ctxbench.strategies"


class CannotReduce(Exception):
    """A strategy could not lower the context's tokens; ``str(e)`` says why and the window is
    unchanged (pin flags aside). ``__cause__`` is the underlying error, else the overflow."""


class StrategyParams(BaseModel):
    """Base of every strategy's parameters: frozen, unknown fields are errors, and numbers are strict
    and finite (a config's ``window_size = "40"``, ``proactive = 1`` or ``threshold = nan`` is refused,
    never coerced)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class ProactiveParams(StrategyParams):
    """R7: an optional proactive trigger at a share of the window, off by default."""

    proactive: StrictBool = False
    threshold: float = Field(0.7, gt=0, le=1, allow_inf_nan=False)


class ContextStrategy(ABC):
    """Base class of all context strategies.

    Subclasses set ``Params`` and implement ``reduce``; ``name`` is set by `register`.
    """

    name: ClassVar[str] = ""
    #: Where its semantics come from (``ctxbench list strategies`` shows it).
    source: ClassVar[str] = ""
    #: True for a context manager an SDK or API ships (docs/sdk-strategies.md): a config that names no
    #: strategies runs the research set of docs/strategies.md (`default_names`), not these.
    sdk: ClassVar[bool] = False
    Params: ClassVar[type[StrategyParams]] = StrategyParams
    #: Extra tools the runtime must expose while this strategy runs (e.g. ``retrieve_payload``).
    tools: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params: StrategyParams | None = None) -> None:
        self.params = params if params is not None else self.Params()
        if not isinstance(self.params, self.Params):
            raise TypeError(f"{type(self).__name__} takes {self.Params.__name__}, not {type(params).__name__}")

    def on_append(self, ctx: Context, msg: Message) -> Message:
        """Transform a message before the runtime appends it. Never raises."""
        return msg

    def apply(self, ctx: Context) -> None:
        """Per-turn management after each turn. Never raises."""

    def before_call(self, ctx: Context) -> None:
        """Before each model call: R7's proactive reduce when the params have it. Never raises."""
        params = self.params
        if isinstance(params, ProactiveParams) and params.proactive and ctx.utilization() >= params.threshold:
            try:
                self.reduce(ctx)
            except Exception:  # R7: proactive compression is best effort
                pass

    @abstractmethod
    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        """Lower ``ctx.tokens`` strictly, or raise CannotReduce leaving ctx unchanged (R2)."""


def commit(ctx: Context, new: Sequence[Message]) -> None:
    """R1/R5: replace the window in one slice assignment and count the non-summary messages that left."""
    before = nonsummary(ctx.messages)
    ctx.messages[:] = new
    ctx.removed_count += before - nonsummary(new)


# Registry ---------------------------------------------------------------------------------------

_REGISTRY: Registry[type[ContextStrategy]] = Registry("strategy", ENTRY_POINT_GROUP)
#: Class decorator: register a strategy under a name (a name registered twice is an error).
register = _REGISTRY.register
#: The class registered under a name; KeyError listing the known names otherwise.
get = _REGISTRY.get
names = _REGISTRY.names


def default_names() -> list[str]:
    """The strategies a config that names none runs: every registered one but the SDK managers."""
    return [n for n in names() if not get(n).sdk]


def create(name: str, /, **params: Any) -> ContextStrategy:
    """A fresh instance of strategy ``name``; bad params raise pydantic.ValidationError."""
    cls = get(name)
    return cls(cls.Params(**params))
