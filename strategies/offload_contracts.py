"""`offload_contracts`: move large tool outputs out of the window into a content-addressed store,
leaving a stub with the call that produced them and a preview; the model pages them back with
``retrieve_payload``. The seed article pairs it with typed tool contracts, three-class errors and the
breaker: that is a runtime (`harness.core.switches.CONTRACT_RUNTIME`), which any strategy may run under."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, StrictInt

from harness.core import (
    Block,
    Context,
    Message,
    ToolResult,
    ToolUse,
    block_text,
    handle_for,
    is_stub,
    rebuild,
    render_stub,
    tokens_of,
)
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, register
from strategies.split import is_pinned

RETRIEVE_TOOL = "retrieve_payload"


class OffloadContractsParams(StrategyParams):
    #: Tool outputs larger than this (utf-8 bytes) are offloaded on append.
    offload_threshold_bytes: Annotated[StrictInt, Field(ge=256, le=10**8)] = 2048
    preview_chars: Annotated[StrictInt, Field(ge=0, le=4000)] = 300
    #: Most characters one retrieve_payload call returns.
    retrieve_chars: Annotated[StrictInt, Field(ge=256, le=10**7)] = 8000


def call_of(ctx: Context, tool_use_id: str) -> ToolUse | None:
    """The call a result answers, looked up newest first (normally the last message)."""
    for m in reversed(ctx.messages):
        for b in m.blocks:
            if isinstance(b, ToolUse) and b.id == tool_use_id:
                return b
    return None


def tool_name_of(ctx: Context, tool_use_id: str) -> str | None:
    """Name of the call a result answers (`call_of`)."""
    use = call_of(ctx, tool_use_id)
    return use.name if use is not None else None


@register("offload_contracts")
class OffloadContracts(ContextStrategy):
    """Offload large tool outputs to a payload store behind stubs; serve them by ``retrieve``.

    Invariants (checked by tests/properties):
    - the window keeps its length; only ToolResult contents change, each into its stub, keeping
      ids, statuses and other blocks (kind ``handle``); ``removed_count`` never changes;
    - ``store.get(handle)`` is the original output and the handle is its sha256 prefix;
      ``retrieve`` pages joined along their ``offset=`` hints rebuild it exactly;
    - stubs, results answering ``retrieve_payload`` and outputs at or below the threshold are never
      offloaded on append; pinned messages never are;
    - ``reduce`` lowers tokens or raises CannotReduce with the window unchanged.
    """

    source = 'offload behind stubs with typed tool contracts (docs/strategies.md 3.7)'

    Params = OffloadContractsParams
    params: OffloadContractsParams
    tools: ClassVar[tuple[str, ...]] = (RETRIEVE_TOOL,)

    def _offloaded(
        self, ctx: Context, m: Message, *, threshold: int | None, skip_retrieves: bool
    ) -> tuple[Message, list[str]]:
        """``m`` with its offloadable outputs replaced by stubs, and the payloads to store (stored
        only when the caller commits, so a failed reduce leaves the store as it was)."""
        if m.pinned or not m.has_result:
            return m, []
        blocks: list[Block] = []
        payloads: list[str] = []
        for b in m.blocks:
            stub = self._stub_if_offloadable(ctx, b, m, threshold, skip_retrieves)
            if stub is not None:
                assert isinstance(b, ToolResult)
                payloads.append(b.content)
                b = ToolResult(b.tool_use_id, b.status, stub)
            blocks.append(b)
        return (rebuild(m, blocks, kind="handle") if payloads else m), payloads

    def _store(self, ctx: Context, payloads: list[str]) -> None:
        for payload in payloads:
            ctx.store.put(handle_for(payload), payload)

    def _stub_if_offloadable(
        self, ctx: Context, b: Block, m: Message, threshold: int | None, skip_retrieves: bool
    ) -> str | None:
        """The stub that replaces ``b``, or None when ``b`` stays (docs/strategies.md 3.7 conditions)."""
        if not isinstance(b, ToolResult):
            return None
        c = b.content
        if threshold is not None and len(c.encode("utf-8")) <= threshold:
            return None
        if is_stub(c):
            return None
        use = call_of(ctx, b.tool_use_id)
        if skip_retrieves and use is not None and use.name == RETRIEVE_TOOL:
            return None
        stub = render_stub(c, block_text(use) if use is not None else "", self.params.preview_chars)
        return stub if len(stub) < len(c) else None

    def on_append(self, ctx: Context, msg: Message) -> Message:
        new, payloads = self._offloaded(
            ctx, msg, threshold=self.params.offload_threshold_bytes, skip_retrieves=True
        )
        self._store(ctx, payloads)
        return new

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        window = ctx.messages
        new: list[Message] = []
        payloads: list[str] = []
        for i, m in enumerate(window):
            if is_pinned(window, i):
                new.append(m)
                continue
            m2, stored = self._offloaded(ctx, m, threshold=None, skip_retrieves=False)
            new.append(m2)
            payloads += stored
        if tokens_of(new) >= ctx.tokens:
            raise CannotReduce("no tool output left to offload") from overflow
        self._store(ctx, payloads)
        commit(ctx, new)

    def retrieve(
        self, ctx: Context, handle: str, offset: int = 0, length: int | None = None
    ) -> tuple[Literal["success", "error"], str]:
        """A page of an offloaded payload, with a hint naming the next offset when more remains."""
        try:
            payload = ctx.store.get(handle)
        except KeyError:
            return "error", f"unknown handle: {handle}"
        if offset < 0 or offset > len(payload):
            return "error", f"offset out of range 0..{len(payload)}"
        n = min(length or self.params.retrieve_chars, self.params.retrieve_chars)
        page = payload[offset : offset + n]
        end = offset + len(page)
        if end < len(payload):
            page += (
                f"\n[... {len(payload) - end} more chars; call {RETRIEVE_TOOL}"
                f'(handle="{handle}", offset={end})]'
            )
        return "success", page
