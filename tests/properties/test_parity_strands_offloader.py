"""Differential tests: `strands_context_offloader` against strands-agents 1.62.0's ContextOffloader.

The real plugin runs offline: its ``AfterToolCallEvent`` hook (``_handle_tool_result``) and its
``BeforeModelCallEvent`` hook (``_on_before_model_call``) get real strands events over a stand-in
agent (a model whose ``count_tokens`` is strands' own base ``Model.count_tokens``, or our tokenizer
for ``token_estimate="exact"``: a provider with a native counter), and its
``retrieve_offloaded_content`` tool runs through strands' tool wrapper (``stream``), so errors read as
the agent would see them. Both storage paths are driven: the plugin's legacy ``InMemoryStorage``
(the default when the agent has no storage; it evicts by its own ``evict_after_turns``) and the unified
``strands.storage.InMemoryStorage`` (the plugin evicts by ``evict_after_cycles``).

A generated session is a list of cycles; each cycle is a model call (``before_call`` /
``BeforeModelCallEvent`` with ``cycle_count`` one higher) followed by tool results and retrieves. After
every event the two sides must agree on: whether a result was offloaded, the whole replacement text
(ours through `source_text`, with the references mapped), every retrieve's status and text (pattern,
line range, context lines, whole content, unknown reference), and which references are still live.

References differ by design (ours is the content handle, theirs is per backend), so each side's k-th
offloaded result is mapped to the other's; contents are made unique per session so that the content
handle names one stored result (the shared-handle difference has its own unit test).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, cast

import pytest

logging.disable(logging.CRITICAL)
pytest.importorskip("strands")

from hypothesis import event, given, note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from strands.hooks.events import AfterToolCallEvent, BeforeModelCallEvent  # noqa: E402
from strands.models.model import Model  # noqa: E402
from strands.storage import InMemoryStorage as UnifiedMemoryStorage  # noqa: E402
from strands.vended_plugins.context_offloader import ContextOffloader  # noqa: E402
from strands.vended_plugins.context_offloader.search import _search_content  # noqa: E402
from strands.vended_plugins.context_offloader.storage import InMemoryStorage as LegacyMemoryStorage  # noqa: E402

from harness.core.context import Context  # noqa: E402
from harness.core.messages import Message, Text, ToolResult, ToolUse, default_meter  # noqa: E402
from strategies.strands_context_offloader import (  # noqa: E402
    RETRIEVE_TOOL,
    StrandsContextOffloader,
    StrandsContextOffloaderParams,
    search_text,
    source_text,
)

LOOP = asyncio.new_event_loop()


def run(coro: Any) -> Any:
    return LOOP.run_until_complete(coro)


# The stand-in agent --------------------------------------------------------------------------------


class HeuristicModel:
    """A model without a native counter: strands' base ``Model.count_tokens`` (ceil(chars / 4))."""

    count_tokens = Model.count_tokens


class ExactModel:
    """A model with a native counter that counts like our tokenizer (text items of tool results)."""

    async def count_tokens(self, messages: list[dict[str, Any]], **_: Any) -> int:
        count = default_meter().tokenizer.count
        return sum(
            count(item["text"])
            for m in messages
            for block in m["content"]
            for item in block.get("toolResult", {}).get("content", [])
            if "text" in item
        )


class StandInAgent:
    """What the plugin reads from an agent: storage, model, cycle count (weak-referenceable)."""

    def __init__(self, storage: Any, model: Any) -> None:
        self.storage = storage
        self.model = model
        self.event_loop_metrics = SimpleNamespace(cycle_count=0)
        self.sandbox = None


@dataclass
class Theirs:
    plugin: ContextOffloader
    agent: StandInAgent
    backend: str

    @classmethod
    def make(cls, backend: str, p: StrandsContextOffloaderParams) -> Theirs:
        model = ExactModel() if p.token_estimate == "exact" else HeuristicModel()
        kwargs: dict[str, Any] = {
            "max_result_tokens": p.max_result_tokens,
            "preview_tokens": p.preview_tokens,
            "include_retrieval_tool": p.include_retrieval_tool,
        }
        if backend == "legacy":
            plugin = ContextOffloader(storage=LegacyMemoryStorage(evict_after_turns=p.evict_after_cycles), **kwargs)
        else:
            plugin = ContextOffloader(
                storage=UnifiedMemoryStorage(), evict_after_cycles=p.evict_after_cycles, **kwargs
            )
        agent = StandInAgent(None, model)
        plugin.init_agent(cast(Any, agent))
        return cls(plugin, agent, backend)

    def cycle(self) -> None:
        self.agent.event_loop_metrics.cycle_count += 1
        run(self.plugin._on_before_model_call(BeforeModelCallEvent(agent=cast(Any, self.agent))))

    def tool_result(self, use_id: str, name: str, status: str, content: str) -> str:
        result = {"toolUseId": use_id, "status": status, "content": [{"text": content}]}
        event = AfterToolCallEvent(
            agent=cast(Any, self.agent),
            selected_tool=None,
            tool_use={"toolUseId": use_id, "name": name, "input": {}},
            invocation_state={},
            result=cast(Any, result),
        )
        run(self.plugin._handle_tool_result(event))
        items = event.result["content"]
        assert len(items) == 1 and event.result["toolUseId"] == use_id and event.result["status"] == status
        return str(items[0]["text"])

    def retrieve(self, tool_input: dict[str, Any]) -> tuple[str, str]:
        tool = self.plugin.retrieve_offloaded_content

        async def last_result() -> Any:
            last = None
            async for e in tool.stream({"toolUseId": "r", "name": RETRIEVE_TOOL, "input": tool_input},
                                       {"agent": self.agent}):
                last = e
            return last.tool_result  # type: ignore[union-attr]

        result = run(last_result())
        return str(result["status"]), "\n".join(str(i["text"]) for i in result["content"])

    def live(self, reference: str) -> bool:
        storage = self.plugin._storage
        if isinstance(storage, LegacyMemoryStorage):
            return reference in storage._store
        storage = cast(Any, self.plugin._storage_for_agent(cast(Any, self.agent)))
        return run(storage.read(reference)) is not None


@dataclass
class Ours:
    strategy: StrandsContextOffloader
    ctx: Context = field(default_factory=lambda: Context([Message.user("task", kind="task")]))

    def cycle(self) -> None:
        self.strategy.before_call(self.ctx)

    def tool_result(self, use_id: str, name: str, status: str, content: str) -> str:
        call = Message.build("assistant", [Text("calling"), ToolUse(use_id, name, {})])
        self.ctx.messages.append(self.strategy.on_append(self.ctx, call))
        m = self.strategy.on_append(self.ctx, Message.build("user", [ToolResult(use_id, status, content)]))  # type: ignore[arg-type]
        self.ctx.messages.append(m)
        (block,) = m.blocks
        assert isinstance(block, ToolResult) and block.tool_use_id == use_id and block.status == status
        return block.content


# Generated sessions --------------------------------------------------------------------------------

#: Letters, digits, separators, regex metacharacters, accents, CJK and an emoji; newlines are frequent.
ALPHABET = st.sampled_from(list("ab xyz09\n\n\n.-*+()[]/|\\é漢🙂\t"))
TOOL_NAMES = st.sampled_from(("read_file", "grep", "run_tests", RETRIEVE_TOOL))
PATTERNS = st.sampled_from(
    ("a", "b|x", "z+", "(", "[a-", "(a+)+", "a*)*", "é", "漢", "/]", "^\\d", "", "🙂", "x" * 230)
)


@st.composite
def params(draw: st.DrawFn) -> StrandsContextOffloaderParams:
    limit = draw(st.integers(1, 120))
    return StrandsContextOffloaderParams(
        max_result_tokens=limit,
        preview_tokens=draw(st.integers(0, limit - 1)),
        evict_after_cycles=draw(st.one_of(st.none(), st.integers(1, 4))),
        include_retrieval_tool=draw(st.booleans()),
        token_estimate=draw(st.sampled_from(("exact", "heuristic"))),
    )


@st.composite
def contents(draw: st.DrawFn, limit: int) -> str:
    """Texts around the offload threshold (4 chars a token), short ones, and long many-line ones."""
    size = draw(
        st.one_of(
            st.integers(max(0, 4 * limit - 8), 4 * limit + 8),
            st.integers(0, 40),
            st.integers(4 * limit, 4 * limit + 1500),
        )
    )
    return draw(st.text(ALPHABET, min_size=size, max_size=size))


@st.composite
def queries(draw: st.DrawFn, lines: int) -> dict[str, Any]:
    """A retrieve input: whole content, a pattern, a line range (in and out of range), context lines."""
    q: dict[str, Any] = {}
    if draw(st.booleans()):
        q["pattern"] = draw(PATTERNS)
    if draw(st.integers(0, 2)) == 0:
        start = draw(st.integers(-1, lines + 2))
        q["line_range"] = {"start": start, "end": draw(st.integers(start - 2, lines + 3))}
    if draw(st.integers(0, 2)) == 0:
        q["context_lines"] = draw(st.integers(-2, 7))
    return q


@st.composite
def sessions(draw: st.DrawFn) -> tuple[str, StrandsContextOffloaderParams, list[list[tuple[Any, ...]]]]:
    p = draw(params())
    backend = draw(st.sampled_from(("legacy", "unified")))
    cycles: list[list[tuple[Any, ...]]] = []
    n_results = 0
    for _ in range(draw(st.integers(1, 9))):
        events: list[tuple[Any, ...]] = []
        for _ in range(draw(st.integers(0, 4))):
            if n_results and draw(st.booleans()):
                # picks an offloaded result's reference, or (one time in about five) an unknown one
                events.append(("retrieve", draw(st.integers(0, 4 * n_results)), draw(st.data())))
            else:
                n_results += 1
                content = f"r{n_results}\n" + draw(contents(p.max_result_tokens))
                status = draw(st.sampled_from(("success", "success", "error")))
                events.append(("result", draw(TOOL_NAMES), status, content))
        cycles.append(events)
    return backend, p, cycles


def ours_query(q: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in q.items() if k != "line_range"}
    if "line_range" in q:
        out["line_range"] = (q["line_range"]["start"], q["line_range"]["end"])
    return out


@given(sessions())
def test_offloader_matches_strands_on_scripted_sessions(
    session: tuple[str, StrandsContextOffloaderParams, list[list[tuple[Any, ...]]]],
) -> None:
    """Same offload decisions, same notice/guidance/preview text, same retrieve results and the same
    evictions as strands' ContextOffloader, cycle by cycle."""
    backend, p, cycles = session
    theirs, ours = Theirs.make(backend, p), Ours(StrandsContextOffloader(p))
    refs: list[tuple[str, str, str]] = []  # (their reference, our reference, content) per offloaded result
    uses = 0
    for events in cycles:
        theirs.cycle()
        ours.cycle()
        for step in events:
            if step[0] == "result":
                _, name, status, content = step
                uses += 1
                use_id = f"t{uses}"
                their_text = theirs.tool_result(use_id, name, status, content)
                our_text = ours.tool_result(use_id, name, status, content)
                offloaded = their_text != content
                event(f"offloaded={offloaded}")
                assert (our_text != content) == offloaded
                if offloaded:
                    their_ref = their_text.rsplit("\n", 1)[1].strip().split(" ", 1)[0]
                    body = source_text(our_text)
                    our_ref = body.rsplit("\n", 1)[1].strip().split(" ", 1)[0]
                    assert body.rsplit("\n", 1)[0] == their_text.rsplit("\n", 1)[0]
                    assert body.rsplit("\n", 1)[1].replace(our_ref, their_ref) == their_text.rsplit("\n", 1)[1]
                    refs.append((their_ref, our_ref, content))
            else:
                _, pick, data = step
                which = pick % len(refs) if refs and pick % 5 else len(refs)
                if which == len(refs):  # a reference nobody stored
                    their_ref, our_ref, content = "mem_999_nope_0", "ref_000000000000", ""
                else:
                    their_ref, our_ref, content = refs[which]
                q = data.draw(queries(content.count("\n") + 1))
                note(f"retrieve {their_ref} {q}")
                status_ours, our_out = ours.strategy.retrieve(ours.ctx, our_ref, **ours_query(q))
                if not p.include_retrieval_tool:  # strands registers no such tool: the agent's call fails
                    assert (status_ours, our_out) == ("error", f"Unknown tool: {RETRIEVE_TOOL}")
                    continue
                their_status, their_out = theirs.retrieve({"reference": their_ref, **q})
                event(f"retrieve {their_status} {'+'.join(sorted(q)) or 'whole'}")
                assert status_ours == their_status
                assert our_out.replace(our_ref, their_ref) == their_out
        for their_ref, our_ref, _ in refs:
            live = theirs.live(their_ref)
            assert ours.strategy.is_live(our_ref) == live
    event(f"evicted by the end: {sum(not theirs.live(r) for r, _, _ in refs) > 0}")


# The search on its own -----------------------------------------------------------------------------


@given(
    st.text(ALPHABET, max_size=600),
    st.one_of(st.none(), PATTERNS),
    st.one_of(st.none(), st.tuples(st.integers(-1, 40), st.integers(-2, 45))),
    st.integers(-3, 8),
    st.integers(1, 400),
)
def test_search_matches_strands_search_content(
    text: str, pattern: str | None, line_range: tuple[int, int] | None, context_lines: int, max_chars: int
) -> None:
    """Pattern and line-range reads, truncation and range errors equal strands' search.py."""
    try:
        expected: str | None = _search_content(
            text, pattern=pattern, line_range=line_range, context_lines=context_lines, max_chars=max_chars
        )
    except ValueError as e:
        expected = f"ValueError: {e}"
    try:
        got: str | None = search_text(
            text, pattern=pattern, line_range=line_range, context_lines=context_lines, max_chars=max_chars
        )
    except ValueError as e:
        got = f"ValueError: {e}"
    assert got == expected
