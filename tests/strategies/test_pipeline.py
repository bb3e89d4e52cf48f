"""pipeline: stage validation, composition order, reduce fall-through, tools and retrieve (docs/strategies.md 3.8)."""

from __future__ import annotations

import pydantic
import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, ToolResult, ToolUse
from strategies import create, names
from strategies.base import CannotReduce, ContextStrategy
from strategies.pipeline import Pipeline

ALL = ", ".join(names())


def u(text: str) -> Message:
    return Message.user(text)


def a(text: str) -> Message:
    return Message.assistant(text)


def conversation(n: int) -> list[Message]:
    return [u(f"user {i}") if i % 2 == 0 else a(f"assistant {i}") for i in range(n)]


class Spy(ContextStrategy):
    """Records hook calls into a shared log; reduce fails or succeeds as told."""

    def __init__(self, tag: str, log: list[str], fail: bool = True) -> None:
        super().__init__()
        self.tag, self.log, self.fail = tag, log, fail
        self.error = CannotReduce(f"{tag} cannot")

    def on_append(self, ctx: Context, msg: Message) -> Message:
        self.log.append(f"{self.tag}.on_append({msg.text})")
        return Message.user(msg.text + self.tag)

    def apply(self, ctx: Context) -> None:
        self.log.append(f"{self.tag}.apply")

    def before_call(self, ctx: Context) -> None:
        self.log.append(f"{self.tag}.before_call")

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        self.log.append(f"{self.tag}.reduce({overflow is not None})")
        if self.fail:
            raise self.error
        ctx.messages[:] = ctx.messages[1:]


def pipeline_of(*spies: Spy) -> Pipeline:
    p = create("pipeline", stages=[{"name": "unbounded"}] * len(spies))
    assert isinstance(p, Pipeline)
    p.stages = list(spies)
    return p


# Validation -------------------------------------------------------------------------------------


def test_stages_required_and_non_empty() -> None:
    with pytest.raises(pydantic.ValidationError):
        create("pipeline")
    with pytest.raises(pydantic.ValidationError) as info:
        create("pipeline", stages=[])
    assert info.value.errors()[0]["loc"] == ("stages",)


@pytest.mark.parametrize("name", ["pipeline", "hybrid"])
def test_nesting_refused(name: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="no nesting") as info:
        create("pipeline", stages=[{"name": "sliding_window"}, {"name": name}])
    assert info.value.errors()[0]["loc"] == ("stages", 1, "name")


def test_unknown_stage_name_refused_with_known_names() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        create("pipeline", stages=[{"name": "no_such_stage"}])
    assert info.value.errors()[0]["loc"] == ("stages", 0, "name")
    assert "no_such_stage" in str(info.value)
    assert ALL in str(info.value)


def test_stage_spec_extra_keys_refused() -> None:
    with pytest.raises(pydantic.ValidationError):
        create("pipeline", stages=[{"name": "unbounded", "param": {}}])


def test_bad_stage_params_refused() -> None:
    with pytest.raises(pydantic.ValidationError):
        create("pipeline", stages=[{"name": "sliding_window", "params": {"window_size": -1}}])


def test_stages_built_with_their_params_in_order() -> None:
    p = create(
        "pipeline",
        stages=[
            {"name": "offload_contracts", "params": {"preview_chars": 0}},
            {"name": "sliding_window", "params": {"window_size": 3}},
        ],
    )
    assert isinstance(p, Pipeline)
    assert [s.name for s in p.stages] == ["offload_contracts", "sliding_window"]
    assert p.stages[0].params.preview_chars == 0  # type: ignore[attr-defined]
    assert p.stages[1].params.window_size == 3  # type: ignore[attr-defined]


# Composition ------------------------------------------------------------------------------------


def test_on_append_threads_through_stages_in_order() -> None:
    log: list[str] = []
    p = pipeline_of(Spy("A", log), Spy("B", log))
    out = p.on_append(Context(), u("m"))
    assert out.text == "mAB"
    assert log == ["A.on_append(m)", "B.on_append(mA)"]


def test_apply_and_before_call_call_every_stage_in_order() -> None:
    log: list[str] = []
    p = pipeline_of(Spy("A", log), Spy("B", log), Spy("C", log))
    p.apply(Context())
    p.before_call(Context())
    assert log == ["A.apply", "B.apply", "C.apply", "A.before_call", "B.before_call", "C.before_call"]


def test_reduce_stops_at_first_success() -> None:
    log: list[str] = []
    p = pipeline_of(Spy("A", log), Spy("B", log, fail=False), Spy("C", log, fail=False))
    ctx = Context(conversation(3))
    p.reduce(ctx, ContextOverflow(1, 1))
    assert log == ["A.reduce(True)", "B.reduce(True)"]
    assert len(ctx.messages) == 2


def test_reduce_all_fail_raises_from_last_error() -> None:
    log: list[str] = []
    spies = (Spy("A", log), Spy("B", log))
    p = pipeline_of(*spies)
    ctx = Context(conversation(3))
    with pytest.raises(CannotReduce, match=r"^no stage could reduce$") as info:
        p.reduce(ctx)
    assert info.value.__cause__ is spies[1].error
    assert log == ["A.reduce(False)", "B.reduce(False)"]
    assert len(ctx.messages) == 3


def test_real_stages_reduce_falls_through() -> None:
    p = create("pipeline", stages=[{"name": "unbounded"}, {"name": "drop_all"}])
    msgs = conversation(6)
    ctx = Context(msgs)
    p.reduce(ctx)
    assert list(ctx.messages) == msgs[5:]
    assert ctx.removed_count == 5


def test_real_offload_then_slide_on_append() -> None:
    p = create(
        "pipeline", stages=[{"name": "offload_contracts", "params": {"preview_chars": 0}}, {"name": "sliding_window"}]
    )
    ctx = Context([u("task"), Message.build("assistant", [ToolUse("t1", "logs", {})])])
    out = p.on_append(ctx, Message.build("user", [ToolResult("t1", "success", "row\n" * 1000)]))
    assert out.kind == "handle"


# Tools and retrieve -----------------------------------------------------------------------------


def test_tools_union_of_stages() -> None:
    assert create("pipeline", stages=[{"name": "sliding_window"}]).tools == ()
    both = create(
        "pipeline", stages=[{"name": "offload_contracts"}, {"name": "sliding_window"}, {"name": "offload_contracts"}]
    )
    assert both.tools == ("retrieve_payload",)


def test_retrieve_forwarded_to_stage() -> None:
    p = create(
        "pipeline", stages=[{"name": "sliding_window"}, {"name": "offload_contracts", "params": {"preview_chars": 0}}]
    )
    payload = "data line\n" * 500
    ctx = Context([u("task"), Message.build("assistant", [ToolUse("t1", "logs", {})])])
    out = p.on_append(ctx, Message.build("user", [ToolResult("t1", "success", payload)]))
    handle = out.blocks[0].content.split(":")[0].removeprefix("[offloaded tool output ")  # type: ignore[union-attr]
    assert p.retrieve(ctx, handle, 0, 300) == (
        "success",
        payload[:300]
        + (  # type: ignore[attr-defined]
            f'\n[... {len(payload) - 300} more chars; call retrieve_payload(handle="{handle}", offset=300)]'
        ),
    )
    assert p.retrieve(ctx, "ref_000000000000")[0] == "error"  # type: ignore[attr-defined]


def test_retrieve_without_a_serving_stage_is_an_error() -> None:
    p = create("pipeline", stages=[{"name": "sliding_window"}])
    status, _ = p.retrieve(Context(), "ref_000000000000")  # type: ignore[attr-defined]
    assert status == "error"
