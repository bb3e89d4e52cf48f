"""Accounting replay (harness.sim.recorded): the unbounded strategy bills exactly the recorded prompts,
and two strategies' windows checked by hand, call by call."""

from __future__ import annotations

from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.sim.profiles import profile
from harness.sim.recorded import account, extract_summary
from strategies import create
from strategies.clear_tool_uses import ANTHROPIC_PLACEHOLDER

SYSTEM = 37
FRONTIER = profile("frontier")


def transcript(turns: int = 6) -> list[Message]:
    """A task, ``turns`` tool calls each answered by its result (output i has 300 * i lines' worth of text
    so every message has a different size), and a final answer."""
    messages = [Message.build("user", [Text("Find why the checkout pods crash.")], kind="task")]
    for i in range(1, turns + 1):
        messages.append(Message.build("assistant", [Text(f"Step {i}: reading the logs."),
                                                    ToolUse(f"c{i}", "read_log", {"pod": f"checkout-{i}"})]))
        output = "\n".join(f"{i}:{n:04d} level=error msg=oom" for n in range(30 * i))
        messages.append(Message.build("user", [ToolResult(f"c{i}", "error" if i == 3 else "success", output)]))
    messages.append(Message.build("assistant", [Text("Root cause: the memory limit is too low.")], kind="final"))
    return messages


def prompts(done: list[dict[str, object]]) -> list[int]:
    return [int(c["input_tokens"]) for c in done if c["call_kind"] == "agent"]  # type: ignore[call-overload]


def tokens(messages: list[Message]) -> int:
    return SYSTEM + sum(m.tokens for m in messages)


def test_unbounded_bills_exactly_the_recorded_prompts() -> None:
    messages = transcript()
    done = account(messages, create("unbounded"), FRONTIER, system_tokens=SYSTEM)
    calls = [i for i, m in enumerate(messages) if m.role == "assistant"]
    assert prompts(done.calls) == [tokens(messages[:i]) for i in calls]
    assert done.row["input_tokens"] == sum(tokens(messages[:i]) for i in calls)
    assert done.row["output_tokens"] == sum(messages[i].tokens - 4 for i in calls)
    assert done.row["model_calls"] == len(calls) == done.row["recorded_calls"]
    assert done.row["hidden_outputs"] == 0 and done.hidden == []
    assert done.row["compactions"] == 0 and done.row["calls_not_sent"] == 0


def test_sliding_window_of_four_checked_by_hand() -> None:
    # T A1 R1 A2 R2 ... A6 R6 F. After R2 the window has 5 > 4 messages; no user message without a result
    # lies past index 1, so the tool-pair fallback trims at A1 and the task goes; from then on each turn
    # drops the oldest pair. Call k (k >= 3) sees A(k-2) R(k-2) A(k-1) R(k-1).
    m = transcript()
    t, a, r, final = m[0], {i: m[2 * i - 1] for i in range(1, 7)}, {i: m[2 * i] for i in range(1, 7)}, m[-1]
    assert final.kind == "final"
    windows = [[t], [t, a[1], r[1]], [a[1], r[1], a[2], r[2]], [a[2], r[2], a[3], r[3]], [a[3], r[3], a[4], r[4]],
               [a[4], r[4], a[5], r[5]], [a[5], r[5], a[6], r[6]]]
    done = account(m, create("sliding_window", window_size=4), FRONTIER, system_tokens=SYSTEM)
    assert prompts(done.calls) == [tokens(w) for w in windows]
    assert done.row["compactions"] == 5  # one trim after each of R2..R6
    # R1 is first missing at call 3 (0-based), R2 at 4, R3 at 5, R4 at the final call.
    assert [(h.tool_use_id, h.first_hidden_call, h.how) for h in done.hidden] == [
        ("c1", 3, "removed"), ("c2", 4, "removed"), ("c3", 5, "removed"), ("c4", 6, "removed")]
    assert done.row["hidden_at_last_call"] == 4
    assert [c["hidden_outputs"] for c in done.calls] == [0, 0, 0, 1, 2, 3, 4]


def test_clear_tool_uses_checked_by_hand() -> None:
    # trigger: more than 3 tool uses in the prompt; keep the newest one. A5's prompt holds 4 uses: R1-R3
    # are cleared; A6 (5 uses) clears R1-R4; the final call (6 uses) clears R1-R5. Uses stay.
    m = transcript()
    t, a, r = m[0], {i: m[2 * i - 1] for i in range(1, 7)}, {i: m[2 * i] for i in range(1, 7)}

    def cleared(i: int) -> Message:
        result = r[i].blocks[0]
        assert isinstance(result, ToolResult)
        return Message.build("user", [ToolResult(result.tool_use_id, result.status, ANTHROPIC_PLACEHOLDER)])

    def view(calls_before: int, clear_up_to: int) -> list[Message]:
        out = [t]
        for i in range(1, calls_before + 1):
            out += [a[i], cleared(i) if i <= clear_up_to else r[i]]
        return out

    windows = [view(0, 0), view(1, 0), view(2, 0), view(3, 0), view(4, 3), view(5, 4), view(6, 5)]
    strategy = create("clear_tool_uses", trigger={"type": "tool_uses", "value": 3}, keep={"type": "tool_uses",
                                                                                          "value": 1})
    done = account(m, strategy, FRONTIER, system_tokens=SYSTEM)
    assert prompts(done.calls) == [tokens(w) for w in windows]
    assert [(h.tool_use_id, h.first_hidden_call, h.how) for h in done.hidden] == [
        ("c1", 4, "replaced"), ("c2", 4, "replaced"), ("c3", 4, "replaced"), ("c4", 5, "replaced"),
        ("c5", 6, "replaced")]


def test_a_window_too_small_for_a_call_stops_the_replay_and_counts_what_was_not_sent() -> None:
    small = profile("frontier", window_tokens=FRONTIER.max_output_reserve + 400)
    done = account(transcript(), create("unbounded"), small, system_tokens=SYSTEM)
    assert done.row["calls_not_sent"] > 0
    assert done.row["model_calls"] + done.row["calls_not_sent"] == done.row["recorded_calls"]


def test_summarizing_strategies_bill_stand_in_summaries() -> None:
    small = profile("frontier", window_tokens=FRONTIER.max_output_reserve + 8000)
    done = account(transcript(10), create("summarize"), small, system_tokens=SYSTEM)
    assert done.row["summary_calls"] >= 1 and done.row["compactions"] >= 1
    summary_calls = [c for c in done.calls if c["call_kind"] == "summary"]
    assert len(summary_calls) == done.row["summary_calls"]


def test_the_stand_in_summary_lists_the_tool_calls_within_its_budget() -> None:
    m = transcript()
    text = extract_summary(m, 10_000, len)
    assert "- task: Find why the checkout pods crash." in text
    assert text.count("read_log(") == 6 and "error: 3:0000 level=error msg=oom" in text
    assert len(extract_summary(m, 120, len)) <= 120 + 1
