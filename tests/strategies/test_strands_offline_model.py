"""strategies.strands_bridge.offline_model: a strands ``Model`` needing no provider drives a real
``strands.Agent`` (its tool calls in order, then the answer, on every prompt), answers strands' summary
request, and overflows past its window so that the agent's manager reduces."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("strands")

from strands import Agent, tool
from strands.agent.conversation_manager import NullConversationManager
from strands.models.model import Model
from strands.types.exceptions import ContextWindowOverflowException

import strategies
from strategies import strands_bridge
from strategies.strands_bridge import SUMMARY_REQUEST, as_strands_manager, converse_tokens, offline_model


@tool
def read_log(chunk: int) -> str:
    """Read one chunk of the service's log."""
    return f"log chunk {chunk}: " + "GET /health 200\n" * 300


@tool
def restart(service: str) -> str:
    """Restart a service."""
    return f"{service} restarted"


def agent_with(model: Any, manager: Any = None) -> Agent:
    kwargs = {} if manager is None else {"conversation_manager": manager}
    return Agent(model=model, tools=[read_log, restart], callback_handler=None, **kwargs)


def test_it_is_a_strands_model_and_the_class_is_public() -> None:
    model = offline_model()
    assert isinstance(model, Model)
    assert isinstance(model, strands_bridge.OfflineModel)
    assert model.get_config() == {"model_id": "offline"}


def test_each_prompt_gets_the_tool_calls_in_order_then_the_answer() -> None:
    model = offline_model(("read_log", {"chunk": 3}), ("restart", {"service": "api"}), answer="api restarted")
    agent = agent_with(model)
    for turn in range(3):
        assert str(agent(f"fix the api ({turn})")).strip() == "api restarted"
    uses = [b["toolUse"] for m in agent.messages for b in m["content"] if "toolUse" in b]
    assert [(u["name"], u["input"]) for u in uses] == [("read_log", {"chunk": 3}), ("restart", {"service": "api"})] * 3
    assert len({u["toolUseId"] for u in uses}) == len(uses)
    results = [b["toolResult"] for m in agent.messages for b in m["content"] if "toolResult" in b]
    assert [r["status"] for r in results] == ["success"] * 6
    # Per turn: the prompt, a call and its result twice, the answer; one model call per reply.
    assert len(agent.messages) == 3 * 6
    assert model.requests == 3 * 3


def test_without_calls_it_answers_at_once() -> None:
    agent = agent_with(offline_model(answer="hello"))
    assert str(agent("hi")).strip() == "hello"
    assert len(agent.messages) == 2


def test_strands_summary_request_gets_a_summary() -> None:
    model = offline_model(("read_log", {"chunk": 1}))
    history = [{"role": "user", "content": [{"text": "a"}]}, {"role": "assistant", "content": [{"text": "b"}]},
               {"role": "user", "content": [{"text": SUMMARY_REQUEST}]}]
    events = model.reply(history)
    texts = [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e]
    assert texts == ["Summary of the 2 messages before this request."]


def test_past_its_window_it_overflows_and_the_manager_reduces() -> None:
    model = offline_model(("read_log", {"chunk": 1}), window_tokens=8_000)
    # 40 messages: the window slides only when the model overflows (12 turns make 36 messages).
    agent = agent_with(model, as_strands_manager(strategies.create("sliding_window", window_size=40)))
    for turn in range(12):
        assert str(agent(f"check the log ({turn})")).strip() == "Done."
    # Two replies a turn; every request past those overflowed and was retried after a reduction.
    assert model.requests > 2 * 12
    assert converse_tokens(agent.messages) <= 8_000
    assert len(agent.messages) < 36


def test_unmanaged_its_overflow_reaches_the_caller() -> None:
    unmanaged = agent_with(offline_model(("read_log", {"chunk": 1}), window_tokens=8_000),
                           NullConversationManager())
    with pytest.raises(ContextWindowOverflowException):
        for turn in range(12):
            unmanaged(f"check the log ({turn})")
