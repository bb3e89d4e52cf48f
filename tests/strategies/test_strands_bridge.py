"""The strands bridge both ways: ctxbench strategies managing a real, offline ``strands.Agent``
(as_strands_manager), and strands' managers as the ``strands_manager`` strategy of ctxbench runs."""

from __future__ import annotations

import copy
import itertools
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

logging.disable(logging.CRITICAL)
pytest.importorskip("strands")

import pandas as pd  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pydantic import ValidationError  # noqa: E402
from strands import Agent, tool  # noqa: E402
from strands.agent.conversation_manager import (  # noqa: E402
    SlidingWindowConversationManager,
    SummarizingConversationManager,
)
from strands.models.model import Model  # noqa: E402
from strands.types.exceptions import ContextWindowOverflowException as CWO  # noqa: E402

import strategies  # noqa: E402
from harness.core.context import Context  # noqa: E402
from harness.core.messages import to_converse  # noqa: E402
from harness.core.rundir import SESSIONS_TABLE  # noqa: E402
from harness.run.config import RunConfig  # noqa: E402
from harness.run.runner import run  # noqa: E402
from strategies.base import CannotReduce  # noqa: E402
from strategies.strands_bridge import (  # noqa: E402
    StandInAgent,
    StrandsManagerStrategy,
    TextReplyModel,
    as_strands_manager,
    pinned_flag,
    reply_events,
    without_bookkeeping,
)
from strategies.testing import FakeSummarizer  # noqa: E402
from tests.properties.converse_histories import Converse, histories  # noqa: E402

TURNS = 30
LOG_LINE = "line of log output "


@tool
def read_log(chunk: int) -> str:
    """Read one chunk of the service log."""
    return f"log chunk {chunk}:\n" + (LOG_LINE + "\n") * 40


@tool
def restart(service: str) -> str:
    """Restart a service."""
    return f"{service} restarted"


class ScriptedModel(Model):
    """An offline strands model: each prompt gets a call to read_log, then one to restart, then a text
    answer, decided from the last message alone (so a retried call gets the same reply). A call without
    tool specs is a summary request. ``overflow_on`` lists the call numbers that overflow instead."""

    def __init__(self, overflow_on: tuple[int, ...] = ()) -> None:
        self.calls = 0
        self.overflow_on = set(overflow_on)
        self.summary_requests: list[tuple[int, str | None]] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(
        self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        raise NotImplementedError("the scripted model has no structured output")
        yield

    async def stream(  # type: ignore[override]
        self, messages: list[Converse], tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls += 1
        if self.calls in self.overflow_on:
            raise CWO("input is too long for the model")
        for event in self.reply(messages, tool_specs, system_prompt):
            yield event

    def reply(self, messages: list[Converse], tool_specs: Any, system_prompt: str | None) -> list[dict[str, Any]]:
        if tool_specs is None:
            self.summary_requests.append((len(messages), system_prompt))
            return reply_events(f"SUMMARY of {len(messages) - 1} messages")
        results = json.dumps([b for b in messages[-1]["content"] if "toolResult" in b])
        if results == "[]":
            return tool_call(f"call{self.calls}", "read_log", {"chunk": self.calls})
        if "log chunk" in results:
            return tool_call(f"call{self.calls}", "restart", {"service": "api"})
        return reply_events("restarted the api; the incident is over")


def tool_call(tool_use_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream events of a reply that is one tool call."""
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": tool_use_id, "name": name}}}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]


def agent_with(manager: Any, model: ScriptedModel | None = None) -> Agent:
    return Agent(model=model or ScriptedModel(), tools=[read_log, restart], conversation_manager=manager,
                 callback_handler=None)


def assert_valid_history(messages: Sequence[Any], *, alternate: bool = True) -> None:
    """What a provider accepts: a user message first, roles alternating, every toolUse answered by
    its toolResult in the next message and every toolResult answering the previous message's call.
    (A pinned task followed by a later prompt is two user messages in a row, in strands too.)"""
    assert messages[0]["role"] == "user"
    if alternate:
        for before, after in itertools.pairwise(messages):
            assert before["role"] != after["role"]
    for i, d in enumerate(messages):
        uses = {b["toolUse"]["toolUseId"] for b in d["content"] if "toolUse" in b}
        results = {b["toolResult"]["toolUseId"] for b in d["content"] if "toolResult" in b}
        if results:
            previous = messages[i - 1]
            assert i > 0 and results <= {b["toolUse"]["toolUseId"] for b in previous["content"] if "toolUse" in b}
        if uses:
            assert i + 1 < len(messages)
            assert uses <= {b["toolResult"]["toolUseId"] for b in messages[i + 1]["content"] if "toolResult" in b}


def masked(messages: Sequence[Any]) -> int:
    return sum(1 for d in messages for b in d["content"]
               if "toolResult" in b and b["toolResult"]["content"][0]["text"].startswith("Old environment output"))


# as_strands_manager: a real Agent, offline ----------------------------------------------------------------


@pytest.mark.parametrize(("name", "params"), [
    ("sliding_window", {"window_size": 10}),
    ("observation_masking", {"keep_turns": 2}),
])
def test_a_real_agent_runs_30_turns_with_a_valid_managed_history(name: str, params: dict[str, Any]) -> None:
    manager = as_strands_manager(strategies.create(name, **params))
    agent = agent_with(manager)
    for turn in range(TURNS):
        agent(f"turn {turn}: the api is down")
        assert_valid_history(agent.messages)
        assert all(d.get("tracking_id") for d in agent.messages)  # kept, or given to new messages
    if name == "sliding_window":
        assert len(agent.messages) <= 10
        assert manager.removed_message_count == 6 * TURNS - len(agent.messages)
        assert agent.messages[0]["content"][0]["text"].startswith("turn ")
    else:
        # Two results per turn; the last keep_turns assistant turns (of the last prompt) keep theirs.
        assert len(agent.messages) == 6 * TURNS
        assert masked(agent.messages) >= 2 * (TURNS - 1)
        assert manager.removed_message_count == 0


def test_overflow_is_reduced_and_the_model_call_retried() -> None:
    model = ScriptedModel(overflow_on=(10,))
    manager = as_strands_manager(strategies.create("sliding_window", window_size=40))
    agent = agent_with(manager, model)
    for turn in range(4):
        agent(f"turn {turn}")
        assert_valid_history(agent.messages)
    # Call 10 (turn 3's first) overflowed: reduce dropped the oldest prompt's turn (6 messages); retried.
    assert model.calls == 13
    assert manager.removed_message_count == 6
    assert len(agent.messages) == 4 * 6 - 6
    assert agent.messages[0]["content"][0]["text"] == "turn 1"


def test_a_strategy_that_cannot_reduce_raises_strands_overflow() -> None:
    agent = agent_with(as_strands_manager(strategies.create("unbounded")), ScriptedModel(overflow_on=(2,)))
    with pytest.raises(CWO, match="unbounded keeps everything"):
        agent("turn 0")


def test_summaries_ask_the_agents_own_model_by_default() -> None:
    model = ScriptedModel()
    manager = as_strands_manager(strategies.create("summarize", trigger_turns=2, keep_turns=1))
    agent = agent_with(manager, model)
    for turn in range(3):
        agent(f"turn {turn}")
        assert all(d.get("tracking_id") for d in agent.messages)
    assert model.summary_requests
    size, system_prompt = model.summary_requests[0]
    assert system_prompt is not None and "summarizer" in system_prompt  # strands' summarization prompt
    first = agent.messages[0]
    assert first["content"][0]["text"] == f"SUMMARY of {size - 1} messages"
    assert first["metadata"]["custom"]["kind"] == "summary"
    assert manager.removed_message_count > 0


def test_a_given_summarizer_replaces_the_model() -> None:
    fake = FakeSummarizer("fixed", fixed_text="SHORT")
    model = ScriptedModel()
    manager = as_strands_manager(strategies.create("summarize", trigger_turns=2, keep_turns=1), summarizer=fake)
    agent = agent_with(manager, model)
    for turn in range(3):
        agent(f"turn {turn}")
    assert fake.calls and not model.summary_requests
    assert agent.messages[0]["content"] == [{"text": "SHORT"}]


def test_state_round_trips_through_a_session() -> None:
    manager = as_strands_manager(strategies.create("sliding_window", window_size=8, pin_first=1))
    agent = agent_with(manager)
    for turn in range(3):
        agent(f"turn {turn}")
    state = json.loads(json.dumps(manager.get_state()))
    assert state["strategy"] == "sliding_window" and state["params"]["window_size"] == 8
    assert state["strategy_state"]["_pinned_once"] is True
    assert pinned_flag(agent.messages[0])

    restored: Any = as_strands_manager(strategies.create("sliding_window", window_size=8, pin_first=1))
    assert restored.restore_from_session(state) is None
    assert restored.removed_message_count == manager.removed_message_count
    assert restored.strategy._pinned_once is True
    again = agent_with(restored)
    again.messages[:] = copy.deepcopy(agent.messages)
    again("turn 3")
    assert_valid_history(again.messages, alternate=False)
    assert again.messages[0] == agent.messages[0]  # the pinned task survives the restore

    with pytest.raises(ValueError, match="strategy 'sliding_window'"):
        as_strands_manager(strategies.create("unbounded")).restore_from_session(state)


def test_one_manager_serves_one_agent() -> None:
    manager = as_strands_manager(strategies.create("sliding_window", window_size=8))
    agent_with(manager)("turn 0")
    with pytest.raises(ValueError, match="already manages another agent"):
        manager.apply_management(StandInAgent(messages=[]))  # type: ignore[arg-type]


def test_messages_ctxbench_cannot_read_pass_through_unchanged() -> None:
    """A reasoning block and an image result are kept as the agent's own dicts while they are kept."""
    image = {"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}
    history: list[Converse] = [
        {"role": "user", "content": [{"text": "look"}]},
        {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": {"text": "hmm"}}},
                                          {"toolUse": {"toolUseId": "s1", "name": "shot", "input": {}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "s1", "status": "success", "content": [image]}}]},
        {"role": "assistant", "content": [{"text": "done"}]},
    ]
    agent: Any = StandInAgent(messages=copy.deepcopy(history))
    manager = as_strands_manager(strategies.create("sliding_window", window_size=10))
    manager.apply_management(agent)
    assert agent.messages == history


# StrandsManagerStrategy: strands' managers inside ctxbench -----------------------------------------------


def sliding(window: int, **options: Any) -> StrandsManagerStrategy:
    strategy = strategies.create("strands_manager", manager="SlidingWindowConversationManager",
                                 options={"window_size": window, "should_truncate_results": False, **options})
    assert isinstance(strategy, StrandsManagerStrategy)
    return strategy


def view(ctx: Context) -> list[Converse]:
    return [without_bookkeeping(to_converse(m)) for m in ctx.messages]


@settings(max_examples=40)
@given(histories(), st.integers(0, 8), st.sampled_from([None, 1, 2]))
def test_strands_sliding_window_reproduces_strands_own_result(inp: list[Converse], w: int, pin: int | None) -> None:
    ours = sliding(w, pin_first=pin)
    ctx = Context.from_messages(copy.deepcopy(inp))
    theirs = SlidingWindowConversationManager(w, should_truncate_results=False, pin_first=pin)
    agent: Any = StandInAgent(messages=copy.deepcopy(inp))
    for _ in range(2):
        ours.apply(ctx)
        theirs.apply_management(agent)
        assert view(ctx) == [without_bookkeeping(d) for d in agent.messages]
        assert [m.pinned for m in ctx.messages] == [pinned_flag(d) for d in agent.messages]
        assert ctx.removed_count == theirs.removed_message_count


@settings(max_examples=40)
@given(histories(), st.integers(0, 8), st.sampled_from([False, True, 2]), st.booleans())
def test_strands_sliding_window_equals_ctxbench_sliding_window(
    inp: list[Converse], w: int, per_turn: bool | int, reactive: bool
) -> None:
    """Every hook, including a reduce that fails (CannotReduce, window untouched, same text)."""
    pair = [(sliding(w, per_turn=per_turn), Context.from_messages(copy.deepcopy(inp))),
            (strategies.create("sliding_window", window_size=w, per_turn=per_turn),
             Context.from_messages(copy.deepcopy(inp)))]
    for strategy, ctx in pair:
        strategy.before_call(ctx)
        strategy.apply(ctx)
    outcomes = []
    for strategy, ctx in pair:
        try:
            strategy.reduce(ctx, overflow=CWO("overflow") if reactive else None)
            outcomes.append("reduced")
        except CannotReduce as e:
            outcomes.append("raised" if not reactive else f"raised: {e}")
    assert outcomes[0] == outcomes[1]
    (_, ours), (_, reference) = pair
    assert view(ours) == view(reference)
    assert ours.removed_count == reference.removed_count


class FixedReply(TextReplyModel):
    def reply(self, messages: list[Converse]) -> str:
        return "SUMMARY"


def test_strands_summarizing_manager_summarizes_through_the_context() -> None:
    """Its summary is one ctx.summarize call on the messages strands summarizes, kind "summary"; the
    rest of the window is strands' own result; a failed summary commits nothing."""
    inp: list[Converse] = [{"role": "user", "content": [{"text": "task " * 50}]}]
    for i in range(6):
        inp += [{"role": "assistant", "content": [{"toolUse": {"toolUseId": f"u{i}", "name": "grep", "input": {}}}]},
                {"role": "user", "content": [{"toolResult": {"toolUseId": f"u{i}", "status": "success",
                                                             "content": [{"text": "match " * 200}]}}]}]
    fake = FakeSummarizer("fixed")
    ctx = Context.from_messages(copy.deepcopy(inp), summarizer=fake)
    strategy = strategies.create("strands_manager", manager="SummarizingConversationManager",
                                 options={"summary_ratio": 0.5, "preserve_recent_messages": 2})
    strategy.reduce(ctx, overflow=CWO("overflow"))
    reference = SummarizingConversationManager(0.5, 2)
    agent: Any = StandInAgent(messages=copy.deepcopy(inp), aux_model=FixedReply())
    reference.reduce_context(agent, e=CWO("overflow"))
    assert view(ctx) == [without_bookkeeping(d) for d in agent.messages]
    k = len(inp) - len(ctx.messages) + 1
    assert len(fake.calls) == 1 and [to_converse(m) for m in fake.calls[0]] == inp[:k]
    assert ctx.messages[0].kind == "summary" and ctx.messages[0].text == "SUMMARY"
    assert ctx.removed_count == reference.removed_message_count == k
    failing = Context.from_messages(copy.deepcopy(inp), summarizer=FakeSummarizer("fail"))
    with pytest.raises(CannotReduce, match="summarizer call 1 failed"):
        strategies.create("strands_manager", manager="SummarizingConversationManager").reduce(
            failing, overflow=CWO("overflow"))
    assert view(failing) == [without_bookkeeping(d) for d in inp] and failing.removed_count == 0


class KeepLastTwo(SlidingWindowConversationManager):
    """A user's own manager, named as ``module:Class``."""

    def __init__(self) -> None:
        super().__init__(window_size=2, should_truncate_results=False)


@pytest.mark.parametrize(("params", "field", "text"), [
    ({"manager": "FancyManager"}, "manager", "unknown strands manager 'FancyManager'"),
    ({"manager": "json:dumps"}, "manager", "not a strands ConversationManager"),
    ({"manager": "no_such_module:X"}, "manager", "cannot import"),
    ({"options": {"window_size": -1}}, "options", "window_size must be a non-negative integer"),
    ({"options": {"windw_size": 4}}, "options", "windw_size"),
    ({"options": "window_size=4"}, "options", "dict"),
])
def test_bad_params_name_their_field(params: dict[str, Any], field: str, text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        strategies.create("strands_manager", **params)
    error = caught.value.errors()[0]
    assert error["loc"] == (field,)
    assert text in error["msg"]


def test_a_users_manager_class_by_module_path() -> None:
    strategy = strategies.create("strands_manager", manager=f"{__name__}:KeepLastTwo")
    ctx = Context.from_messages([{"role": "user", "content": [{"text": f"m{i}"}]} for i in range(5)])
    strategy.apply(ctx)
    assert [m.text for m in ctx.messages] == ["m3", "m4"]


def test_a_tiny_run_of_strands_sliding_window_matches_ctxbench_sliding_window(tmp_path: Path) -> None:
    """``ctxbench run`` through the library: the same sessions, the same numbers, as sliding_window."""
    config = RunConfig(
        sessions=2, seed=3, executor="serial",
        scenarios=[{"name": "mix", "turns": 20}],
        strategies=[
            {"name": "strands_manager", "label": "strands_sw", "manager": "SlidingWindowConversationManager",
             "options": {"window_size": 12, "should_truncate_results": False}},
            {"name": "sliding_window", "label": "sw", "window_size": 12},
        ],
    )
    run(config, tmp_path / "run", quiet=True)
    sessions = pd.read_parquet(tmp_path / "run" / SESSIONS_TABLE)
    assert sorted(sessions["strategy"].unique()) == ["strands_sw", "sw"]
    numbers = [c for c in sessions.columns if c not in ("strategy", "wall_s")]
    ours = sessions[sessions["strategy"] == "strands_sw"][numbers].reset_index(drop=True)
    reference = sessions[sessions["strategy"] == "sw"][numbers].reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, reference)
    assert (ours["model_calls"] > 0).all()


def test_a_run_config_refuses_an_unknown_manager_in_one_line() -> None:
    with pytest.raises(ValidationError) as caught:
        RunConfig(sessions=1, strategies=[{"name": "strands_manager", "manager": "Nope"}])
    message = str(caught.value)
    assert "strategies[0] (strands_manager)" in message and "unknown strands manager 'Nope'" in message


def test_strands_warnings_stay_quiet_inside_a_replay_and_the_logger_is_restored(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # strands warns through its module loggers each time a manager cannot trim ("all messages in trim range
    # are pinned"). A probe logger under "strands" stands for them, with its own handler: what other test
    # modules and libraries did to logging in this process (a process-wide disable, strands' loggers disabled
    # by a dictConfig, root handlers) must not decide the outcome.
    disabled = logging.root.manager.disable
    logging.disable(logging.NOTSET)
    strands_logger = logging.getLogger("strands")
    outer_level = strands_logger.level
    strands_logger.setLevel(logging.NOTSET)
    probe = logging.getLogger("strands.ctxbench_probe")
    seen: list[str] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    probe.addHandler(handler)
    try:
        manager = strategies.create("strands_manager", options={"window_size": 2})
        monkeypatch.setattr(manager.manager, "apply_management",
                            lambda agent, **kwargs: probe.warning("all messages in trim range are pinned"))
        probe.warning("outside a replay")
        assert seen == ["outside a replay"]
        level = logging.getLogger("strands").level
        manager.apply(Context(_pinned_history()))
        assert seen == ["outside a replay"]  # the manager's warning was not emitted
        assert logging.getLogger("strands").level == level
    finally:
        probe.removeHandler(handler)
        strands_logger.setLevel(outer_level)
        logging.disable(disabled)


def _pinned_history() -> list:  # type: ignore[type-arg]
    from harness.core.messages import Message, Text, ToolResult, ToolUse

    out = [Message.build("user", [Text("task")], kind="task")]
    for i in range(6):
        out.append(Message.build("assistant", [ToolUse(f"t{i}", "read_file", {})]))
        out.append(Message.build("user", [ToolResult(f"t{i}", "success", "x" * 50)]))
    return out
