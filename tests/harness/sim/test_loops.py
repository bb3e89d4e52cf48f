"""The StuckDetector rules of docs/model.md 7 (P9), on hand-written event logs."""

from __future__ import annotations

from harness.sim.loops import WINDOW, LoopEvent, StuckDetector, Verdict

A = LoopEvent.action("kubectl_logs", '{"pod": "pod-q2kx"}', "Step s2: fresh via kubectl_logs.")
B = LoopEvent.action("kubectl_get", '{"namespace": "shop-k3vq"}', "Step s1: fresh via kubectl_get.")
OBS_A = LoopEvent.observation("kubectl_logs", "10:00:02 ERROR upstream call failed")
OBS_B = LoopEvent.observation("kubectl_get", "NAME READY STATUS")
TASK = LoopEvent.message("user", "Find the bad pod.")


def detector(*events: LoopEvent, nudge: bool = True) -> StuckDetector:
    d = StuckDetector(nudge=nudge)
    for e in events:
        d.log(e)
    return d


def pairs(action: LoopEvent, result: LoopEvent, n: int) -> list[LoopEvent]:
    return [action, result] * n


def error(i: int) -> LoopEvent:
    return LoopEvent.error("kubectl_logs", f"Error: upstream 404 (request {i})")


# repeat -----------------------------------------------------------------------------------------------


def test_four_identical_action_observation_pairs_are_stuck_by_repeat() -> None:
    assert detector(TASK, *pairs(A, OBS_A, 4)).check() == Verdict(True, "repeat")


def test_three_identical_pairs_are_not_stuck() -> None:
    assert not detector(TASK, *pairs(A, OBS_A, 3)).check().stuck


def test_four_identical_actions_with_different_observations_are_not_repeat() -> None:
    events = [TASK]
    for i in range(4):
        events += [A, LoopEvent.observation("kubectl_logs", f"page {i}")]
    assert not detector(*events).check().stuck


def test_four_identical_errors_fire_repeat_before_error_streak() -> None:
    err = LoopEvent.error("kubectl_logs", "Error: kubectl_logs: 404 Not Found")
    assert detector(TASK, *pairs(A, err, 4)).check().rule == "repeat"


def test_repeat_needs_equal_thoughts() -> None:
    other_thought = LoopEvent.action(A.signature[0], A.signature[1], "a different thought")
    events = [TASK, *pairs(A, OBS_A, 3), other_thought, OBS_A]
    assert not detector(*events).check().stuck


# error_streak and the nudge --------------------------------------------------------------------------


def test_error_streak_of_three_gives_only_the_nudge_once() -> None:
    d = detector(TASK, A, error(1), A, error(2), A, error(3))
    first = d.check()
    assert first == Verdict(False, None, nudge=True)
    second = d.check()
    assert second == Verdict(False, None, nudge=False)


def test_error_streak_of_four_is_stuck() -> None:
    events = [TASK]
    for i in range(4):
        events += [A, error(i)]
    assert detector(*events).check() == Verdict(True, "error_streak")


def test_error_streak_counts_only_pairs_with_the_latest_action() -> None:
    events = [TASK, B, error(0), A, error(1), A, error(2), A, error(3)]
    verdict = detector(*events).check()
    assert not verdict.stuck
    assert verdict.nudge


def test_error_streak_is_broken_by_a_success() -> None:
    events = [TASK, A, error(0), A, error(1), A, OBS_A, A, error(2), A, error(3)]
    verdict = detector(*events).check()
    assert not verdict.stuck and not verdict.nudge


def test_nudge_can_be_switched_off() -> None:
    d = detector(TASK, A, error(1), A, error(2), A, error(3), nudge=False)
    assert d.check() == Verdict(False)


def test_two_errors_give_no_nudge() -> None:
    assert detector(TASK, A, error(1), A, error(2)).check() == Verdict(False)


# monologue -------------------------------------------------------------------------------------------


def agent_says(i: int) -> LoopEvent:
    return LoopEvent.message("agent", f"Next I would run kubectl_logs ({i}).")


def test_three_agent_messages_in_a_row_are_stuck_by_monologue() -> None:
    assert detector(TASK, agent_says(1), agent_says(2), agent_says(3)).check() == Verdict(True, "monologue")


def test_two_agent_messages_are_not_a_monologue() -> None:
    assert not detector(TASK, A, OBS_A, agent_says(1), agent_says(2)).check().stuck


def test_condensation_and_environment_messages_do_not_break_a_monologue() -> None:
    nudge = LoopEvent.message("environment", "you called kubectl_logs with the same arguments 3 times")
    events = [TASK, A, OBS_A, agent_says(1), LoopEvent.condensation(), agent_says(2), nudge, agent_says(3)]
    assert detector(*events).check() == Verdict(True, "monologue")


def test_an_action_breaks_a_monologue() -> None:
    events = [TASK, agent_says(1), agent_says(2), A, OBS_A, agent_says(3)]
    assert not detector(*events).check().stuck


# alternation ---------------------------------------------------------------------------------------------


def test_a_b_a_b_a_b_is_stuck_by_alternation() -> None:
    events = [TASK, *[A, OBS_A, B, OBS_B] * 3]
    assert detector(*events).check() == Verdict(True, "alternation")


def test_a_b_a_b_is_not_yet_alternation() -> None:
    events = [TASK, *[A, OBS_A, B, OBS_B] * 2, A, OBS_A]
    assert not detector(*events).check().stuck


def test_alternation_with_changing_observations_is_not_stuck() -> None:
    events = [TASK]
    for i in range(3):
        events += [A, LoopEvent.observation("kubectl_logs", f"page {i}"), B, OBS_B]
    assert not detector(*events).check().stuck


# The window -----------------------------------------------------------------------------------------------


def test_a_user_message_resets_the_window() -> None:
    events = [TASK, *pairs(A, OBS_A, 4), LoopEvent.message("user", "Try another pod.")]
    assert not detector(*events).check().stuck


def test_a_user_message_resets_a_monologue() -> None:
    events = [TASK, agent_says(1), agent_says(2), LoopEvent.message("user", "go on"), agent_says(3)]
    assert not detector(*events).check().stuck


def test_only_events_after_the_user_message_count() -> None:
    events = [TASK, *pairs(A, OBS_A, 3), LoopEvent.message("user", "go on"), A, OBS_A]
    assert not detector(*events).check().stuck


def test_condensation_does_not_reset_the_window() -> None:
    events = [TASK, *pairs(A, OBS_A, 2), LoopEvent.condensation(), *pairs(A, OBS_A, 2)]
    assert detector(*events).check() == Verdict(True, "repeat")


def test_environment_message_does_not_reset_the_window() -> None:
    events = [TASK, *pairs(A, OBS_A, 2), LoopEvent.message("environment", "note"), *pairs(A, OBS_A, 2)]
    assert detector(*events).check().rule == "repeat"


def test_fewer_than_three_events_are_never_stuck() -> None:
    assert detector().check() == Verdict(False)
    assert detector(agent_says(1), agent_says(2)).check() == Verdict(False)
    assert detector(TASK, agent_says(1), agent_says(2)).check() == Verdict(False)


def test_only_the_last_twenty_events_are_read() -> None:
    assert WINDOW == 20
    events = [*pairs(A, OBS_A, 4)] + [LoopEvent.message("agent", f"m{i}") if i % 2 else OBS_B for i in range(20)]
    assert not detector(*events).check().stuck  # the four pairs are older than the window


def test_equality_ignores_nothing_but_ids() -> None:
    assert LoopEvent.action("t", "{}", "x") == LoopEvent.action("t", "{}", "x")
    assert LoopEvent.action("t", "{}", "x") != LoopEvent.action("t", "{}", "y")
    assert LoopEvent.observation("t", "out") != LoopEvent.observation("u", "out")
    assert LoopEvent.message("agent", "hi") != LoopEvent.message("user", "hi")
