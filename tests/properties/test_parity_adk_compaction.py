"""Differential tests of `adk_compaction` against google-adk 2.13.0's own compaction code.

Both sides play the same session. ADK's side is an in-memory ``Session`` whose events are appended
as a runner would append them; before every model call it runs the code of ADK's
``CompactionRequestProcessor`` (``_run_compaction_for_token_threshold_config`` for the agent) and
builds the request contents (``_contents._get_contents``), and after every invocation it runs the
runner's post-invocation compaction (``_run_compaction_for_sliding_window``, which tries the token
threshold first). Its summarizer is a fake ``BaseEventsSummarizer`` that returns ``"SUMMARY <n>"``
as a compaction event over ``[first event's timestamp, last event's timestamp]``, as
``LlmEventSummarizer`` does. Our side runs the strategy's hooks in the runtime's order with a fake
summarizer returning the same texts. No model, no network, no API key.

Each model response event carries ``usage_metadata.prompt_token_count`` = our prompt's tokens for
that call (system overhead included): the contents are asserted equal first, so this is the count
ADK's model would report for the same request.

Asserted at every model call: the same contents sent to the model (our window mapped to ADK
contents: a summary is ADK's model-role summary content), the same compacted ranges (start and end
timestamps of each compaction event, in order; our index i is ADK's timestamp i + 1), and the same
summarizer inputs.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

logging.disable(logging.CRITICAL)
pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.apps import compaction as adk  # noqa: E402
from google.adk.apps.app import App, EventsCompactionConfig  # noqa: E402
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer  # noqa: E402
from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions, EventCompaction  # noqa: E402
from google.adk.flows.llm_flows.context import _contents  # noqa: E402
from google.adk.sessions.session import Session  # noqa: E402
from google.genai import types  # noqa: E402
from hypothesis import event, given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from harness.core.context import Context  # noqa: E402
from harness.core.messages import Message, ResultStatus, Text, ToolResult, ToolUse  # noqa: E402
from strategies.adk_compaction import AdkCompaction, estimate_chars, request_json_chars  # noqa: E402
from strategies.testing import (  # noqa: E402
    FINALS,
    FOLLOWUPS,
    SIZES,
    TASKS,
    THOUGHTS,
    TOOL_INPUTS,
    TOOL_NAMES,
    brief,
    content,
)

AGENT = "agent"
#: ADK marks EventsCompactionConfig experimental and warns on every instance.
pytestmark = pytest.mark.filterwarnings("ignore:.*EXPERIMENTAL.*:UserWarning")

# Converters ---------------------------------------------------------------------------------------

Part = tuple[Any, ...]
Turn = tuple[str, tuple[Part, ...]]


def to_event(m: Message, ts: int, invocation: str, names: dict[str, str], usage: int | None) -> Event:
    """Our message as the event ADK's runner would have appended."""
    parts: list[types.Part] = []
    for b in m.blocks:
        if isinstance(b, Text):
            parts.append(types.Part(text=b.text))
        elif isinstance(b, ToolUse):
            names[b.id] = b.name
            parts.append(types.Part(function_call=types.FunctionCall(id=b.id, name=b.name, args=dict(b.input))))
        else:
            response = {"result" if b.status == "success" else "error": b.content}
            parts.append(types.Part(function_response=types.FunctionResponse(
                id=b.tool_use_id, name=names[b.tool_use_id], response=response)))
    role, author = ("model", AGENT) if m.role == "assistant" else ("user", AGENT if m.has_result else "user")
    meta = types.GenerateContentResponseUsageMetadata(prompt_token_count=usage) if usage is not None else None
    return Event(timestamp=float(ts), invocation_id=invocation, author=author,
                 content=types.Content(role=role, parts=parts), usage_metadata=meta)


def adk_turn(c: types.Content) -> Turn:
    parts: list[Part] = []
    for p in c.parts or []:
        if p.text is not None:
            parts.append(("text", p.text))
        if p.function_call is not None:
            parts.append(("call", p.function_call.id, p.function_call.name, p.function_call.args or {}))
        if p.function_response is not None:
            parts.append(("response", p.function_response.id, p.function_response.name,
                          p.function_response.response))
    return (c.role or "", tuple(parts))


def our_turn(m: Message, names: dict[str, str]) -> Turn:
    parts: list[Part] = []
    for b in m.blocks:
        if isinstance(b, Text):
            parts.append(("text", b.text))
        elif isinstance(b, ToolUse):
            parts.append(("call", b.id, b.name, dict(b.input)))
        else:
            parts.append(("response", b.tool_use_id, names[b.tool_use_id],
                          {"result" if b.status == "success" else "error": b.content}))
    role = "model" if m.role == "assistant" or m.kind == "summary" else "user"
    return (role, tuple(parts))


# ADK's side ---------------------------------------------------------------------------------------


def summary_text(n: int, padding: int) -> str:
    """The n-th summary of both fakes; the padding makes small ranges not worth a summary."""
    return f"SUMMARY {n}" + " and more" * padding


class ScriptedSummarizer(BaseEventsSummarizer):
    """`summary_text` over the events' timestamp range, as LlmEventSummarizer builds its event."""

    def __init__(self, padding: int) -> None:
        self.calls: list[list[Event]] = []
        self.clock = 0.0
        self.padding = padding

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        self.calls.append(list(events))
        compaction = EventCompaction(
            start_timestamp=events[0].timestamp,
            end_timestamp=events[-1].timestamp,
            compacted_content=types.Content(
                role="model", parts=[types.Part(text=summary_text(len(self.calls), self.padding))]),
        )
        # A fixed timestamp and id, so nothing depends on the clock or on uuids.
        return Event(timestamp=self.clock, author="user", invocation_id=f"compaction-{len(self.calls)}",
                     actions=EventActions(compaction=compaction))


class SessionService:
    """The one method of BaseSessionService that compaction calls."""

    async def append_event(self, session: Session, event: Event) -> Event:
        session.events.append(event)
        return event


@dataclass
class AdkSide:
    params: dict[str, Any]
    padding: int
    session: Session = field(default_factory=lambda: Session(id="s", app_name="ctxbench", user_id="u"))
    service: SessionService = field(default_factory=SessionService)
    names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.summarizer = ScriptedSummarizer(self.padding)
        config = {k: v for k, v in self.params.items() if k != "token_measure"}
        self.config = EventsCompactionConfig(summarizer=self.summarizer, **config)
        self.agent = LlmAgent(name=AGENT, model="gemini-2.0-flash")
        self.app = App(name="ctxbench", root_agent=self.agent, events_compaction_config=self.config)

    def append(self, m: Message, invocation: str, usage: int | None) -> None:
        ts = len([e for e in self.session.events if not e.actions.compaction]) + 1
        self.session.events.append(to_event(m, ts, invocation, self.names, usage))
        self.summarizer.clock = ts + 0.5

    async def before_call(self) -> list[Turn]:
        """CompactionRequestProcessor, then the request contents."""
        if self.config.token_threshold is not None:
            await adk._run_compaction_for_token_threshold_config(
                config=self.config, session=self.session, session_service=self.service,  # type: ignore[arg-type]
                agent=self.agent, agent_name=AGENT, current_branch=None,
            )
        return [adk_turn(c) for c in _contents._get_contents(None, self.session.events, AGENT)]

    async def after_invocation(self) -> None:
        """Runner._run_post_invocation_compaction."""
        compactions = adk._run_compaction_for_sliding_window(self.app, self.session, self.service)  # type: ignore[arg-type]
        async for compaction in compactions:
            await self.service.append_event(self.session, compaction)

    def ranges(self) -> list[tuple[float, float]]:
        out = []
        for e in self.session.events:
            c = e.actions.compaction
            if c is not None:
                assert c.start_timestamp is not None and c.end_timestamp is not None
                out.append((c.start_timestamp, c.end_timestamp))
        return out

    def summarizer_inputs(self) -> list[list[Turn]]:
        return [[adk_turn(e.content) for e in call if e.content is not None] for call in self.summarizer.calls]


# Our side -----------------------------------------------------------------------------------------


@dataclass
class RecordingSummarizer:
    """Our fake: the same `summary_text` replies, and every call's input."""

    padding: int
    calls: list[list[Message]] = field(default_factory=list)

    def __call__(self, messages: list[Message]) -> Message:
        self.calls.append(list(messages))
        return Message.build("assistant", [Text(summary_text(len(self.calls), self.padding))])


@dataclass
class OurSide:
    params: dict[str, Any]
    overhead: int
    padding: int
    names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fake = RecordingSummarizer(self.padding)
        self.strategy = AdkCompaction(AdkCompaction.Params(**self.params))
        self.ctx = Context(summarizer=self.fake, prompt_overhead=self.overhead, window_tokens=10**9)

    def append(self, m: Message) -> None:
        for b in m.blocks:
            if isinstance(b, ToolUse):
                self.names[b.id] = b.name
        self.ctx.messages.append(self.strategy.on_append(self.ctx, m))

    def before_call(self) -> list[Turn]:
        self.strategy.before_call(self.ctx)
        return [our_turn(m, self.names) for m in self.ctx.messages]

    def ranges(self) -> list[tuple[float, float]]:
        return [(c.start + 1.0, c.end + 1.0) for c in self.strategy._compactions]

    def summarizer_inputs(self) -> list[list[Turn]]:
        return [[our_turn(m, self.names) for m in call] for call in self.fake.calls]


# Sessions -----------------------------------------------------------------------------------------


@st.composite
def invocation(draw: st.DrawFn, n: int, ids: list[int]) -> list[Message]:
    """A user message, 0-3 tool turns and (usually) a final answer."""
    first = Message.build("user", [Text(draw(st.sampled_from(TASKS + FOLLOWUPS)))], kind="task" if n == 0 else None)
    out = [first]
    for _ in range(draw(st.integers(0, 3))):
        uses = []
        for _ in range(draw(st.integers(1, 3))):
            ids[0] += 1
            uses.append(ToolUse(f"t{ids[0]}", draw(st.sampled_from(TOOL_NAMES)), draw(st.sampled_from(TOOL_INPUTS))))
        thought = [Text(draw(st.sampled_from(THOUGHTS)))] if draw(st.booleans()) else []
        out.append(Message.build("assistant", [*thought, *uses]))
        status: st.SearchStrategy[ResultStatus] = st.sampled_from(("success", "success", "error"))
        out.append(Message.build("user", [
            ToolResult(u.id, draw(status), content(draw(SIZES), draw(st.integers(0, 2)))) for u in uses]))
    if draw(st.integers(0, 5)) > 0:
        out.append(Message.build("assistant", [Text(draw(st.sampled_from(FINALS)))], kind="final"))
    return out


class Script(list[list[Message]]):
    """A session's invocations; prints as one compact line per invocation."""

    def __repr__(self) -> str:
        return "Script([\n" + "".join(f"  {brief(inv)},\n" for inv in self) + "])"


@st.composite
def sessions(draw: st.DrawFn) -> Script:
    ids = [0]
    return Script(draw(invocation(n, ids)) for n in range(draw(st.integers(1, 6))))


@st.composite
def adk_params(draw: st.DrawFn) -> dict[str, Any]:
    mode = draw(st.sampled_from(("sliding", "token", "both")))
    params: dict[str, Any] = {}
    if mode in ("sliding", "both"):
        params |= {"compaction_interval": draw(st.integers(1, 4)), "overlap_size": draw(st.integers(0, 3))}
    if mode in ("token", "both"):
        params |= {"token_threshold": draw(st.sampled_from((1, 50, 200, 600, 1500, 3000, 6000))),
                   "event_retention_size": draw(st.integers(0, 6))}
    return params


async def play(
    params: dict[str, Any], script: list[list[Message]], overhead: int, padding: int = 0
) -> tuple[AdkSide, OurSide, int]:
    """Play the session on both sides, comparing at every model call; returns the calls compared."""
    theirs, ours = AdkSide(params, padding), OurSide(params, overhead, padding)
    compared = 0

    async def call() -> None:
        nonlocal compared
        sent_theirs, sent_ours = await theirs.before_call(), ours.before_call()
        assert sent_ours == sent_theirs, f"contents differ at call {compared}"
        assert ours.ranges() == theirs.ranges()
        assert ours.summarizer_inputs() == theirs.summarizer_inputs()
        compared += 1

    for n, messages in enumerate(script):
        if n > 0:
            await theirs.after_invocation()
        for m in messages:
            usage = None
            if m.role == "assistant":
                await call()
                usage = ours.ctx.prompt_tokens
            theirs.append(m, f"inv{n}", usage)
            ours.append(m)
    # The next user message: ADK compacts after the last invocation, and both check before the call.
    await theirs.after_invocation()
    follow = Message.build("user", [Text(FOLLOWUPS[0])])
    theirs.append(follow, f"inv{len(script)}", None)
    ours.append(follow)
    await call()
    return theirs, ours, compared


@given(params=adk_params(), script=sessions(), overhead=st.sampled_from((0, 40, 400)),
       padding=st.sampled_from((0, 0, 20, 300)))
def test_same_ranges_and_contents_as_adk(params: dict[str, Any], script: Script, overhead: int, padding: int) -> None:
    """At every model call: the contents ADK would send, its compaction ranges and its summarizer's
    inputs equal ours (the ci profile runs 200 examples). Padded summaries make ADK skip ranges that
    are not worth summarizing."""
    theirs, _, _ = asyncio.run(play(params, script, overhead, padding))
    event(f"compactions: {min(len(theirs.ranges()), 3)}")


def test_a_known_session_fires_both_modes_like_adk() -> None:
    """A fixed session in which the sliding window and the token threshold both fire."""
    ids = [0]

    def turn(size: int) -> list[Message]:
        ids[0] += 1
        use = ToolUse(f"k{ids[0]}", "read_file", {"path": "src/app.py"})
        result = ToolResult(use.id, "success", content(size, 0))
        return [Message.build("assistant", [use]), Message.build("user", [result])]

    script = [
        [Message.user(TASKS[0], kind="task"), *turn(1200), Message.assistant(FINALS[0], kind="final")],
        [Message.user(FOLLOWUPS[0]), *turn(5000), *turn(1200), Message.assistant(FINALS[1], kind="final")],
        [Message.user(FOLLOWUPS[1]), *turn(401), Message.assistant(FINALS[0], kind="final")],
    ]
    params = {"compaction_interval": 2, "overlap_size": 1, "token_threshold": 1500, "event_retention_size": 2}
    theirs, ours, compared = asyncio.run(play(params, script, 40))
    assert compared == 8
    # Before the last call of invocation 2 (index 9), the previous call's prompt (with the 5000-char
    # result) passes 1500 tokens: events 0..6 are summarized, 7..8 kept with their tool pair. After
    # invocation 3, two invocations are new: 2 and 3, plus the one before them (overlap 1).
    assert theirs.ranges() == ours.ranges() == [(1.0, 7.0), (1.0, 14.0)]
    assert [m.text for m in ours.ctx.messages] == ["SUMMARY 2", FOLLOWUPS[0]]


@given(script=sessions())
def test_size_measures_match_adk(script: Script) -> None:
    """Our JSON size and chars/4 count of a message equal ADK's (_serialized_size,
    _count_chars_in_content) on the event it maps to."""
    names: dict[str, str] = {}
    for i, msg in enumerate(m for inv in script for m in inv):
        event = to_event(msg, i + 1, "inv", names, None)
        assert event.content is not None
        assert request_json_chars(msg, names) == adk._serialized_size([event])
        assert estimate_chars(msg, names) == adk._count_chars_in_content(event.content)
    summary = Message.build("user", [Text("SUMMARY 1\nwith \"quotes\" and é")], kind="summary")
    content_ = types.Content(role="model", parts=[types.Part(text=summary.text)])
    assert request_json_chars(summary, names, summary=True) == len(content_.model_dump_json(exclude_none=True))
    assert len(types.Content(role="model", parts=[]).model_dump_json(exclude_none=True)) == 27
    assert json.dumps({}) == "{}"


def test_a_range_not_worth_its_summary_is_skipped_like_adk() -> None:
    """Invocations of two short messages remove fewer characters than a long previous summary holds:
    ADK summarizes the first and skips the next two (``_is_range_worth_compacting``)."""
    script = [
        [Message.user(TASKS[0], kind="task"), Message.assistant(FINALS[0], kind="final")],
        [Message.user(FOLLOWUPS[0]), Message.assistant(FINALS[1], kind="final")],
        [Message.user(FOLLOWUPS[1]), Message.assistant(FINALS[0], kind="final")],
    ]
    params = {"compaction_interval": 1, "overlap_size": 0}
    short, _, _ = asyncio.run(play(params, script, 0, padding=0))
    assert short.ranges() == [(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)]
    long, ours, _ = asyncio.run(play(params, script, 0, padding=300))
    assert long.ranges() == ours.ranges() == [(1.0, 2.0)]
