"""`pipeline` and `hybrid`: strategies composed of stages (docs/strategies.md 3.8)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator, model_validator

from harness.core import Context, Message
from harness.core.errors import error_path
from harness.core.suggest import unknown_param
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, create, get, register
from strategies.observation_masking import ObservationMasking
from strategies.params import NonNegativeInt, PinFirst, PositiveInt
from strategies.summarize import Summarize

COMPOSITES = frozenset({"pipeline", "hybrid"})


class StageSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    name: str
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _known_and_flat(cls, name: str) -> str:
        if name in COMPOSITES:
            raise ValueError(f"a pipeline stage cannot be {name!r} (no nesting)")
        try:
            get(name)
        except KeyError as e:
            # A ValueError here surfaces as pydantic's ValidationError naming the stage field.
            raise ValueError(e.args[0]) from None
        return name


class PipelineParams(StrategyParams):
    stages: Annotated[list[StageSpec], Field(min_length=1)]

    @model_validator(mode="after")
    def _stage_params(self) -> PipelineParams:
        # Checked here, not only when `Pipeline` builds its stages, so the error names the stage.
        for i, stage in enumerate(self.stages):
            try:
                get(stage.name).Params(**stage.params)
            except ValidationError as e:
                first = e.errors()[0]
                field = error_path(first)
                params = get(stage.name).Params
                message = (unknown_param(f"strategy {stage.name}", field, params.model_fields)
                           if first["type"] == "extra_forbidden" else first["msg"])
                raise ValueError(f"stages[{i}] ({stage.name}).params.{field}: {message}") from None
        return self


@register("pipeline")
class Pipeline(ContextStrategy):
    """Run several strategies as stages: append through each, reduce with the first that can.

    Invariants (checked by tests/properties):
    - ``on_append`` is the composition of the stages' ``on_append`` in order; ``apply`` and
      ``before_call`` call every stage in order;
    - ``reduce`` stops at the first stage that succeeds; when all fail it raises CannotReduce from
      the last stage's error, with the window unchanged;
    - ``tools`` is the union of the stages' tools; ``retrieve`` is served by the stage that has it.
    """

    source = 'stages composed in order (docs/strategies.md 3.8)'

    Params: ClassVar[type[StrategyParams]] = PipelineParams

    def __init__(self, params: StrategyParams | None = None) -> None:
        super().__init__(params)
        self.stages: list[ContextStrategy] = self._build_stages()
        self.tools = tuple(dict.fromkeys(t for s in self.stages for t in s.tools))  # type: ignore[misc]

    def _build_stages(self) -> list[ContextStrategy]:
        assert isinstance(self.params, PipelineParams)
        return [create(stage.name, **stage.params) for stage in self.params.stages]

    def on_append(self, ctx: Context, msg: Message) -> Message:
        for stage in self.stages:
            msg = stage.on_append(ctx, msg)
        return msg

    def apply(self, ctx: Context) -> None:
        for stage in self.stages:
            stage.apply(ctx)

    def before_call(self, ctx: Context) -> None:
        for stage in self.stages:
            stage.before_call(ctx)

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        last: BaseException | None = None
        for stage in self.stages:
            try:
                stage.reduce(ctx, overflow)
                return
            except CannotReduce as e:
                last = e
        raise CannotReduce("no stage could reduce") from last

    def retrieve(
        self, ctx: Context, handle: str, offset: int = 0, length: int | None = None
    ) -> tuple[Literal["success", "error"], str]:
        for stage in self.stages:
            retrieve = getattr(stage, "retrieve", None)
            if retrieve is not None:
                result: tuple[Literal["success", "error"], str] = retrieve(ctx, handle, offset, length)
                return result
        return "error", "no stage of this pipeline serves retrieve_payload"


class HybridParams(StrategyParams):
    mask_turns: NonNegativeInt = 10
    summary_turns: PositiveInt = 43
    keep_turns: NonNegativeInt = 10
    pin_first: PinFirst = 1
    summary_ratio: float = Field(0.3, allow_inf_nan=False)
    preserve_recent_messages: NonNegativeInt = 10
    proactive: StrictBool = False
    threshold: float = Field(0.7, gt=0, le=1, allow_inf_nan=False)
    #: The summarizer sees the original outputs (as in the paper); the window keeps placeholders.
    summarize_unmasked: StrictBool = True

    @field_validator("summary_ratio")
    @classmethod
    def _clamp_ratio(cls, value: float) -> float:
        return max(0.1, min(0.8, value))


@register("hybrid")
class Hybrid(Pipeline):
    """Observation masking while the history grows, plus LLM-Summary every N=43 turns (M=10).

    Invariants: those of ``pipeline`` over its two stages; with ``summarize_unmasked`` the
    summarizer receives the original tool outputs, never a masking placeholder.
    """

    source = 'Complexity Trap hybrid: masking, then summary (docs/strategies.md 3.8)'

    Params: ClassVar[type[StrategyParams]] = HybridParams

    def _build_stages(self) -> list[ContextStrategy]:
        p = self.params
        assert isinstance(p, HybridParams)
        masking = create("observation_masking", keep_turns=p.mask_turns)
        summarize = create(
            "summarize",
            trigger_turns=p.summary_turns,
            keep_turns=p.keep_turns,
            pin_first=p.pin_first,
            summary_ratio=p.summary_ratio,
            preserve_recent_messages=p.preserve_recent_messages,
            proactive=p.proactive,
            threshold=p.threshold,
        )
        assert isinstance(masking, ObservationMasking) and isinstance(summarize, Summarize)
        if p.summarize_unmasked:
            summarize.unmask = masking.unmask
        return [masking, summarize]
