"""Message construction: kind, tokens, facts (values and forms), records, raw tokens, errors, and the Converse
round trip."""

from __future__ import annotations

import hashlib
import json

import pytest

from harness.core.messages import (
    MEMO_LIMIT,
    ErrorInfo,
    Message,
    Text,
    TextMeter,
    ToolResult,
    ToolUse,
    as_summary,
    from_converse,
    nonsummary,
    pin,
    rebuild,
    to_converse,
    tokens_of,
)
from harness.core.stubs import handle_for, parse_stub, render_stub
from harness.core.tokens import MESSAGE_OVERHEAD_TOKENS, count_tokens

FACTS = {"bad_pod": "api-7f9c-q2kx", "trace": "trc-zz91-mmp3"}
METER = TextMeter.for_facts(FACTS)


def use(i: str, name: str = "kubectl", **args: str) -> ToolUse:
    return ToolUse(i, name, dict(args))


# Kind -------------------------------------------------------------------------------------------


def test_kind_action_for_assistant_with_tool_use() -> None:
    m = Message.build("assistant", [Text("checking"), use("t1", pod="x")])
    assert m.kind == "action"


def test_kind_text_for_plain_messages() -> None:
    assert Message.user("hi").kind == "text"
    assert Message.assistant("done").kind == "text"


def test_kind_observation_for_successful_results() -> None:
    m = Message.build("user", [ToolResult("t1", "success", "ok")])
    assert m.kind == "observation"


def test_kind_error_when_any_result_failed() -> None:
    m = Message.build("user", [ToolResult("t1", "success", "ok"), ToolResult("t2", "error", "boom")])
    assert m.kind == "error"


def test_kind_handle_when_any_result_is_a_stub() -> None:
    stub = render_stub("x" * 3000, [], 0)
    m = Message.build("user", [ToolResult("t1", "error", "boom"), ToolResult("t2", "success", stub)])
    assert m.kind == "handle"


def test_explicit_kind_is_kept_and_unknown_kind_rejected() -> None:
    assert Message.user("do the thing", kind="task").kind == "task"
    with pytest.raises(ValueError, match="unknown message kind"):
        Message.build("user", [Text("x")], kind="bogus")  # type: ignore[arg-type]


def test_bad_role_and_bad_block_rejected() -> None:
    with pytest.raises(ValueError, match="role"):
        Message.build("system", [Text("x")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a message block"):
        Message.build("user", ["plain string"])  # type: ignore[list-item]


# Tokens and facts -------------------------------------------------------------------------------


def test_tokens_are_sum_of_block_texts_plus_overhead() -> None:
    blocks = [Text("looking at pods"), use("t1", pod="api"), ToolResult("t0", "success", "line one\nline two")]
    m = Message.build("assistant", blocks)
    expected_use_text = 'kubectl {"pod":"api"}'
    expected = count_tokens("looking at pods") + count_tokens(expected_use_text) + count_tokens("line one\nline two")
    assert m.tokens == expected + MESSAGE_OVERHEAD_TOKENS


def test_facts_are_the_keys_whose_values_occur_verbatim() -> None:
    m = Message.build("user", [ToolResult("t1", "success", "pod api-7f9c-q2kx crashed")], meter=METER)
    assert m.facts == frozenset({"bad_pod"})
    none = Message.build("user", [ToolResult("t1", "success", "pod api-7f9c-q2k crashed")], meter=METER)
    assert none.facts == frozenset()


def test_facts_scan_tool_use_input_and_all_blocks() -> None:
    m = Message.build("assistant", [Text("trace trc-zz91-mmp3"), use("t1", pod="api-7f9c-q2kx")], meter=METER)
    assert m.facts == frozenset({"bad_pod", "trace"})


def test_empty_fact_value_rejected() -> None:
    with pytest.raises(ValueError, match="empty value"):
        TextMeter.for_facts({"k": ""})


def test_a_stub_names_its_call_and_no_fact() -> None:
    call = 'kubectl {"pod":"api"}'
    stub = render_stub("payload api-7f9c-q2kx\n" * 200, call, 0)
    m = Message.build("user", [ToolResult("t1", "success", stub)], meter=METER)
    assert m.kind == "handle"
    assert m.facts == frozenset()  # the offloaded text is not in the message, and the stub lists no keys
    parsed = parse_stub(stub)
    assert parsed is not None and parsed.call == call


def test_a_form_of_a_fact_holds_the_fact() -> None:
    meter = TextMeter.for_facts({"bug_line": "tables.py:197"}, forms={"bug_line": ['"start_line":197']})
    edit = Message.build("assistant", [ToolUse("t1", "edit_file", {"start_line": 197, "path": "x.py"})], meter=meter)
    assert edit.facts == frozenset({"bug_line"})
    other = Message.build("assistant", [ToolUse("t1", "edit_file", {"start_line": 198})], meter=meter)
    assert other.facts == frozenset()


def test_records_are_the_steps_whose_call_a_message_shows() -> None:
    meter = TextMeter.for_facts({}, calls={'kubectl {"pod":"api"}': "s1"})
    action = Message.build("assistant", [Text("go"), use("t1", pod="api")], meter=meter)
    assert action.records == frozenset({"s1"})
    summary = Message.build("user", [Text('- ran kubectl {"pod":"api"}')], kind="summary", meter=meter)
    assert summary.records == frozenset({"s1"})
    assert Message.build("assistant", [use("t1", pod="web")], meter=meter).records == frozenset()


def test_step_id_is_kept() -> None:
    m = Message.build("assistant", [use("t1")], step_id="s3")
    assert m.step_id == "s3"
    assert Message.user("x").step_id is None


# Raw tokens -------------------------------------------------------------------------------------


def test_raw_tokens_is_whole_tool_output_for_observations() -> None:
    outs = ["first output line\nsecond", "another output"]
    m = Message.build("user", [Text("note"), *(ToolResult(f"t{i}", "success", c) for i, c in enumerate(outs))])
    assert m.kind == "observation"
    assert m.raw_tokens == sum(count_tokens(c) for c in outs)


def test_raw_tokens_counts_error_outputs() -> None:
    m = Message.build("user", [ToolResult("t1", "error", "connection refused by upstream")])
    assert m.raw_tokens == count_tokens("connection refused by upstream")


def test_raw_tokens_is_preview_only_for_handles() -> None:
    payload = "\n".join(f"row {i} value {i * 7}" for i in range(300))
    stub = render_stub(payload, [], 120)
    m = Message.build("user", [ToolResult("t1", "success", stub)])
    lines = stub.split("\n")
    head = lines[lines.index("--- preview head ---") + 1 : lines.index("--- preview tail ---")]
    tail = lines[lines.index("--- preview tail ---") + 1 : -1]
    assert m.raw_tokens == count_tokens("\n".join(head + tail))
    assert 0 < m.raw_tokens < count_tokens(stub)


def test_raw_tokens_zero_for_handle_without_preview() -> None:
    stub = render_stub("z" * 5000, [], 0)
    assert Message.build("user", [ToolResult("t1", "success", stub)]).raw_tokens == 0


@pytest.mark.parametrize("kind", ["summary", "placeholder"])
def test_raw_tokens_zero_for_summaries_and_placeholders(kind: str) -> None:
    m = Message.build("user", [ToolResult("t1", "success", "Old environment output: (3 lines omitted)")], kind=kind)  # type: ignore[arg-type]
    assert m.raw_tokens == 0


def test_raw_tokens_zero_for_actions() -> None:
    assert Message.build("assistant", [Text("let me look"), use("t1", a="b")]).raw_tokens == 0


# Errors -----------------------------------------------------------------------------------------


def test_structured_error_is_parsed() -> None:
    body = {"error": {"class": "engineering", "code": "NOT_FOUND", "retryable": False, "bad_arg": "pod"}}
    m = Message.build("user", [ToolResult("t1", "error", json.dumps(body))])
    assert m.error == ErrorInfo(
        structured=True,
        text=json.dumps(body),
        error_class="engineering",
        code="NOT_FOUND",
        retryable=False,
        bad_arg="pod",
    )


def test_plain_text_error_is_unstructured() -> None:
    m = Message.build("user", [ToolResult("t1", "error", "Error: pod not found")])
    assert m.error == ErrorInfo(structured=False, text="Error: pod not found")


def test_json_without_error_object_is_unstructured() -> None:
    for text in ['{"error": "just a string"}', "{not json", '{"status": 500}']:
        err = Message.build("user", [ToolResult("t1", "error", text)]).error
        assert err is not None and err.structured is False and err.text == text


def test_non_bool_retryable_becomes_none() -> None:
    body = json.dumps({"error": {"class": "engineering", "retryable": "yes"}})
    err = Message.build("user", [ToolResult("t1", "error", body)]).error
    assert err is not None and err.retryable is None and err.error_class == "engineering"


def test_error_is_first_error_result_and_none_on_success() -> None:
    m = Message.build(
        "user",
        [ToolResult("t1", "success", "fine"), ToolResult("t2", "error", "first"), ToolResult("t3", "error", "second")],
    )
    assert m.error is not None and m.error.text == "first"
    assert Message.build("user", [ToolResult("t1", "success", "fine")]).error is None


# rebuild, pin, as_summary -----------------------------------------------------------------------


def test_rebuild_recounts_tokens_facts_and_keeps_role_pin_step_meter() -> None:
    orig = Message.build(
        "user", [ToolResult("t1", "success", "pod api-7f9c-q2kx " * 50)], pinned=True, step_id="s1", meter=METER
    )
    new = rebuild(orig, [ToolResult("t1", "success", "trace trc-zz91-mmp3")])
    assert new.role == "user" and new.pinned is True and new.step_id == "s1" and new.meter is METER
    assert new.kind == orig.kind == "observation"
    assert new.facts == frozenset({"trace"})
    assert new.tokens == count_tokens("trace trc-zz91-mmp3") + MESSAGE_OVERHEAD_TOKENS
    assert new.tokens < orig.tokens


def test_rebuild_with_explicit_kind() -> None:
    orig = Message.build("user", [ToolResult("t1", "success", "a\nb")])
    new = rebuild(orig, [ToolResult("t1", "success", "Old environment output: (2 lines omitted)")], kind="placeholder")
    assert new.kind == "placeholder" and new.raw_tokens == 0


def test_pin_keeps_counts_and_is_idempotent() -> None:
    m = Message.build("user", [ToolResult("t1", "success", "pod api-7f9c-q2kx")], step_id="s", meter=METER)
    p = pin(m)
    assert p.pinned is True and m.pinned is False
    assert (p.tokens, p.facts, p.raw_tokens, p.kind, p.blocks, p.step_id) == (
        m.tokens,
        m.facts,
        m.raw_tokens,
        m.kind,
        m.blocks,
        m.step_id,
    )
    assert pin(p) is p


def test_as_summary_keeps_only_text_blocks_in_order() -> None:
    reply = Message.build("assistant", [Text("part one"), use("t9"), Text("part two api-7f9c-q2kx")], meter=METER)
    s = as_summary(reply)
    assert s.role == "user" and s.kind == "summary" and s.pinned is False
    assert s.blocks == (Text("part one"), Text("part two api-7f9c-q2kx"))
    assert s.facts == frozenset({"bad_pod"})
    assert s.raw_tokens == 0


def test_as_summary_raises_without_text() -> None:
    with pytest.raises(ValueError, match="no text"):
        as_summary(Message.build("assistant", [use("t1")]))


def test_tokens_of_and_nonsummary() -> None:
    ms = [Message.user("a"), as_summary(Message.assistant("s")), Message.assistant("b")]
    assert tokens_of(ms) == sum(m.tokens for m in ms)
    assert nonsummary(ms) == 2


# Converse ---------------------------------------------------------------------------------------

CONVERSE_DICTS = [
    {"role": "user", "content": [{"text": "Find the crashing pod"}]},
    {"role": "user", "content": [{"text": "task"}], "metadata": {"custom": {"pinned": True}}},
    {
        "role": "assistant",
        "content": [
            {"text": "Looking."},
            {"toolUse": {"toolUseId": "t1", "name": "kubectl", "input": {"args": ["get", "pods"], "n": 3}}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "t1", "status": "success", "content": [{"text": "pod-a Running"}]}},
            {"toolResult": {"toolUseId": "t2", "status": "error", "content": [{"text": "timeout"}]}},
        ],
    },
    {
        "role": "user",
        "content": [{"text": "the task"}],
        "metadata": {"custom": {"pinned": True, "kind": "task", "step_id": "s0"}},
    },
    {"role": "assistant", "content": [{"text": "x"}], "metadata": {"custom": {"step_id": "s2"}}},
]


@pytest.mark.parametrize("d", CONVERSE_DICTS)
def test_converse_dict_round_trips_exactly(d: dict) -> None:
    assert to_converse(from_converse(d)) == d


def test_converse_reads_pin_kind_step() -> None:
    m = from_converse(CONVERSE_DICTS[4])
    assert (m.pinned, m.kind, m.step_id) == (True, "task", "s0")


def test_pinned_only_when_exactly_true() -> None:
    d = {"role": "user", "content": [{"text": "x"}], "metadata": {"custom": {"pinned": "yes"}}}
    assert from_converse(d).pinned is False
    assert "metadata" not in to_converse(from_converse(d))


def test_message_round_trips_through_converse() -> None:
    messages = [
        Message.build("user", [Text("task")], kind="task", pinned=True, step_id="s0"),
        Message.build("assistant", [Text("go"), use("t1", pod="p")], step_id="s1"),
        Message.build("user", [ToolResult("t1", "error", "nope"), ToolResult("t2", "success", "ok")], step_id="s1"),
        Message.build("user", [Text("summary")], kind="summary"),
        Message.build(
            "user",
            [ToolResult("t3", "success", "Old environment output: (1 lines omitted)")],
            kind="placeholder",
            pinned=True,
        ),
    ]
    for m in messages:
        back = from_converse(to_converse(m))
        assert back == m


def test_to_converse_omits_metadata_for_plain_messages() -> None:
    assert to_converse(Message.user("hi")) == {"role": "user", "content": [{"text": "hi"}]}


def test_from_converse_joins_text_items_and_serialises_json() -> None:
    d = {
        "role": "user",
        "content": [
            {"toolResult": {"toolUseId": "t1", "content": [{"text": "a"}, {"json": {"b": 1, "a": 2}}]}},
        ],
    }
    m = from_converse(d)
    assert m.blocks == (ToolResult("t1", "success", 'a\n{"a": 2, "b": 1}'),)


def test_from_converse_uses_given_meter() -> None:
    m = from_converse({"role": "user", "content": [{"text": "api-7f9c-q2kx"}]}, meter=METER)
    assert m.facts == frozenset({"bad_pod"})


def test_from_converse_names_unsupported_block() -> None:
    with pytest.raises(ValueError, match=r"content\[1\]: unsupported block \['image'\]"):
        from_converse({"role": "user", "content": [{"text": "x"}, {"image": {}}]})


def test_from_converse_names_unsupported_result_item() -> None:
    d = {"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": [{"document": {}}]}}]}
    with pytest.raises(ValueError, match=r"content\[0\]\.toolResult: unsupported item \['document'\]"):
        from_converse(d)


def test_from_converse_rejects_bad_role() -> None:
    with pytest.raises(ValueError, match="'system'"):
        from_converse({"role": "system", "content": [{"text": "x"}]})


def test_from_converse_rejects_bad_status() -> None:
    d = {"role": "user", "content": [{"toolResult": {"toolUseId": "t", "status": "ok", "content": []}}]}
    with pytest.raises(ValueError, match=r"content\[0\]\.toolResult\.status: unknown status 'ok'"):
        from_converse(d)


def test_handle_for_is_sha256_prefix() -> None:
    assert handle_for("abc") == "ref_" + hashlib.sha256(b"abc").hexdigest()[:12]


def test_a_meter_measures_each_text_once_and_the_same_as_counting_and_scanning_it() -> None:
    meter = TextMeter.for_facts(FACTS, decoys=["pod-decoy-1"])
    text = f"{next(iter(FACTS.values()))} and pod-decoy-1 and more"
    first = meter.measure(text)
    assert first == (count_tokens(text), meter.scanner.scan(text), meter.scanner.scan_decoys(text))
    assert meter.measure_all(text)[:3] == first
    assert first[1] and first[2]
    # Remembered, not measured again: the second call asks the tokenizer nothing.
    counted: list[str] = []

    class Counting:
        name = meter.tokenizer.name

        def count(self, text: str) -> int:
            counted.append(text)
            return count_tokens(text)

    watched = TextMeter(Counting(), meter.scanner)
    assert watched.measure_all(text) == watched.measure_all(text) and counted == [text]
    message = Message.build("user", [Text(text)], meter=meter)
    assert message.tokens == MESSAGE_OVERHEAD_TOKENS + first[0]
    assert message.facts == first[1] and message.decoys == first[2]


def test_a_meters_memory_is_bounded() -> None:
    default = TextMeter.for_facts(FACTS)
    assert default.memo_limit == MEMO_LIMIT
    meter = TextMeter(default.tokenizer, default.scanner, memo_limit=3)
    for i in range(7):
        assert meter.measure(f"text {i}")[0] == count_tokens(f"text {i}")
        assert len(meter.memo) <= 3
