"""Needed values (harness.sim.needed): what a recorded agent took from its tool outputs, and which strategies
hid it at the call that used it."""

from __future__ import annotations

from harness.core.messages import Message, Text, ToolResult, ToolUse
from harness.sim.needed import NeededValue, needed_values, value_words
from harness.sim.profiles import profile
from harness.sim.recorded import account
from strategies import create


def _session() -> list[Message]:
    """A task, a search whose output shows a reservation id, a fare code and a path, a call using the id and the
    path, then a final answer quoting the fare code and a number the second output showed."""
    return [
        Message.user("Cancel the reservation of user omar_7 and report the refund."),
        Message.build("assistant", [ToolUse("c1", "get_user", {"user_id": "omar_7"})]),
        Message.build("user", [ToolResult("c1", "success",
                                          '{"reservations": ["JG7FMM"], "fare": "F-8831", "log": "/var/log/r.txt"}')]),
        Message.build("assistant", [Text("Cancelling it."), ToolUse("c2", "cancel", {"id": "JG7FMM",
                                                                                    "log": "/var/log/r.txt"})]),
        Message.build("user", [ToolResult("c2", "success", "refund 1245 USD issued")]),
        Message.build("assistant", [Text("Done: JG7FMM (fare F-8831) is cancelled, refund 1245 USD.")], kind="final"),
    ]


def test_value_words_are_data_not_prose() -> None:
    assert value_words("open /src/app.py at line 197, id JG7FMM-2 and the word cancel") == [
        "/src/app.py", "197", "JG7FMM-2"]
    assert value_words("ab1 12 hello") == []  # too short to be copied on purpose


def test_a_value_is_needed_when_a_tool_output_showed_it_first() -> None:
    found = needed_values(_session())
    assert found == [NeededValue(1, "JG7FMM", "c1"), NeededValue(1, "/var/log/r.txt", "c1"),
                     NeededValue(2, "JG7FMM", "c1"), NeededValue(2, "F-8831", "c1"), NeededValue(2, "1245", "c2")]
    # omar_7 came from the task, not a tool output: the agent did not need a tool for it.
    assert all(v.value != "omar_7" for v in found)


def test_the_system_prompt_and_the_agents_own_words_are_not_tool_outputs() -> None:
    assert [v.value for v in needed_values(_session(), system="reservations look like JG7FMM")] == [
        "/var/log/r.txt", "F-8831", "1245"]


def test_unbounded_hides_no_needed_value_and_drop_all_hides_them() -> None:
    messages = _session()
    needed = needed_values(messages)
    full = account(messages, create("unbounded"), profile("frontier"), needed=needed)
    assert full.row["needed_values"] == 5 and full.row["needed_hidden"] == 0
    dropped = account(messages, create("drop_all"), profile("frontier"), needed=needed)
    # drop_all keeps the task and the last turn: at the final answer the first output is gone, and with it the
    # fare code (the id and the path are still in the agent's own last call, 1245 in the last output).
    assert dropped.row["needed_hidden"] == 1
    assert [c["needed_hidden"] for c in dropped.calls if c["call_kind"] == "agent"] == [0, 0, 1]
