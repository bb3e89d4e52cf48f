"""offload_contracts: stub format, handles, thresholds, retrieve paging, reduce (docs/strategies.md 3.7)."""

from __future__ import annotations

import hashlib
import re

import pydantic
import pytest

from harness.core.context import Context, ContextOverflow
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse
from strategies import create
from strategies.base import CannotReduce

FACTS = {"bad_pod": "api-7f9c-q2kx", "trace": "trc-zz91-mmp3", "node": "node-b4k2-77aa"}
METER = TextMeter.for_facts(FACTS)


def h(payload: str) -> str:
    return "ref_" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def a_use(i: str, name: str = "logs") -> Message:
    return Message.build("assistant", [ToolUse(i, name, {"q": i})], meter=METER)


def u_res(*pairs: tuple[str, str]) -> Message:
    return Message.build("user", [ToolResult(i, "success", c) for i, c in pairs], meter=METER)


def big(tag: str = "x", n: int = 3000) -> str:
    return "\n".join(f"{tag} row {k:05d} status=ok latency=12ms" for k in range(n // 38 + 1))


def ctx_with_call(*ids: str, name: str = "logs") -> Context:
    return Context(
        [
            Message.user("task", kind="task", meter=METER),
            Message.build("assistant", [ToolUse(i, name, {}) for i in ids], meter=METER),
        ]
    )


PAYLOAD = "head1\nhead2\n" + "x" * 1400 + " api-7f9c-q2kx " + "y" * 1400 + " trc-zz91-mmp3\ntail1\ntail2"


# Params -----------------------------------------------------------------------------------------


def test_defaults_and_tools() -> None:
    s = create("offload_contracts")
    p = s.params
    assert (p.offload_threshold_bytes, p.preview_chars, p.retrieve_chars) == (2048, 300, 8000)  # type: ignore[attr-defined]
    # The runtime (contracts, errors, breaker, budget) is not the strategy's: it has no such params.
    assert set(type(p).model_fields) == {"offload_threshold_bytes", "preview_chars", "retrieve_chars"}
    assert s.tools == ("retrieve_payload",)
    assert type(s).tools == ("retrieve_payload",)


@pytest.mark.parametrize(
    ("field", "value", "ok"),
    [
        ("offload_threshold_bytes", 255, False),
        ("offload_threshold_bytes", 256, True),
        ("offload_threshold_bytes", 10**8, True),
        ("offload_threshold_bytes", 10**8 + 1, False),
        ("preview_chars", -1, False),
        ("preview_chars", 0, True),
        ("preview_chars", 4000, True),
        ("preview_chars", 4001, False),
        ("retrieve_chars", 255, False),
        ("retrieve_chars", 256, True),
        ("retrieve_chars", 10**7, True),
        ("retrieve_chars", 10**7 + 1, False),
        ("contracts", False, False),
        ("token_budget", 1, False),
        ("preview_chars", 10.0, False),
    ],
)
def test_param_ranges(field: str, value: object, ok: bool) -> None:
    if ok:
        assert getattr(create("offload_contracts", **{field: value}).params, field) == value
    else:
        with pytest.raises(pydantic.ValidationError) as info:
            create("offload_contracts", **{field: value})
        assert info.value.errors()[0]["loc"][0] == field


# Stub format ------------------------------------------------------------------------------------


def test_stub_format_exact() -> None:
    ctx = ctx_with_call("t1")
    m = u_res(("t1", PAYLOAD))
    assert m.facts == frozenset({"bad_pod", "trace"})
    out = create("offload_contracts", preview_chars=16).on_append(ctx, m)
    ref = h(PAYLOAD)
    expected = "\n".join(
        [
            f"[offloaded tool output {ref}: {len(PAYLOAD.encode())} bytes, 5 lines]",
            "call: logs {}",
            "--- preview head ---",
            "head1",
            "--- preview tail ---",
            "tail2",
            f'--- call retrieve_payload(handle="{ref}") for the full text ---',
        ]
    )
    assert out.blocks == (ToolResult("t1", "success", expected),)
    assert out.kind == "handle"
    assert out.facts == frozenset()  # the stub names the call, never the facts the payload holds
    assert ctx.store.get(ref) == PAYLOAD


def test_stub_without_preview_is_its_header_call_and_hint() -> None:
    c = big()
    out = create("offload_contracts", preview_chars=0).on_append(ctx_with_call("t1"), u_res(("t1", c)))
    ref = h(c)
    stub = out.blocks[0].content  # type: ignore[union-attr]
    assert stub == (
        f"[offloaded tool output {ref}: {len(c.encode())} bytes, {len(c.splitlines())} lines]\n"
        "call: logs {}\n"
        f'--- call retrieve_payload(handle="{ref}") for the full text ---'
    )
    assert "preview" not in stub


def test_preview_head_and_tail_cut_at_newlines() -> None:
    c = big("p", 5000)
    out = create("offload_contracts", preview_chars=100).on_append(ctx_with_call("t1"), u_res(("t1", c)))
    lines = out.blocks[0].content.split("\n")  # type: ignore[union-attr]
    head = "\n".join(lines[lines.index("--- preview head ---") + 1 : lines.index("--- preview tail ---")])
    tail = "\n".join(lines[lines.index("--- preview tail ---") + 1 : -1])
    raw_head = c[:50]
    assert head == raw_head[: raw_head.rfind("\n")]
    raw_tail = c[-50:]
    assert tail == raw_tail[raw_tail.find("\n") + 1 :]
    assert c.startswith(head) and c.endswith(tail)


def test_preview_without_newlines_is_uncut() -> None:
    c = "z" * 3000
    out = create("offload_contracts", preview_chars=11).on_append(ctx_with_call("t1"), u_res(("t1", c)))
    lines = out.blocks[0].content.split("\n")  # type: ignore[union-attr]
    assert lines[2:6] == ["--- preview head ---", "z" * 5, "--- preview tail ---", "z" * 6]


def test_each_stub_of_a_message_names_the_call_it_answers() -> None:
    with_fact = big("a") + " node-b4k2-77aa"
    without = big("b")
    calls = [ToolUse("t1", "logs", {"pod": "a"}), ToolUse("t2", "logs", {"pod": "b"})]
    ctx = Context([Message.user("task", kind="task", meter=METER), Message.build("assistant", calls, meter=METER)])
    out = create("offload_contracts", preview_chars=0).on_append(ctx, u_res(("t1", with_fact), ("t2", without)))
    lines = [b.content.split("\n")[1] for b in out.blocks]  # type: ignore[union-attr]
    assert lines == ['call: logs {"pod":"a"}', 'call: logs {"pod":"b"}']


def test_handle_is_sha256_prefix_and_matches_pattern() -> None:
    c = big()
    ctx = ctx_with_call("t1")
    create("offload_contracts").on_append(ctx, u_res(("t1", c)))
    ref = h(c)
    assert re.fullmatch(r"ref_[0-9a-f]{12}", ref)
    assert ctx.store.get(ref) == c
    assert len(ctx.store) == 1


# on_append conditions ---------------------------------------------------------------------------


def test_threshold_counts_utf8_bytes() -> None:
    s = create("offload_contracts", offload_threshold_bytes=256, preview_chars=0)
    accented = "é" * 200  # 200 chars, 400 bytes
    out = s.on_append(ctx_with_call("t1"), u_res(("t1", accented)))
    assert out.kind == "handle"
    assert "400 bytes" in out.blocks[0].content  # type: ignore[union-attr]
    at = "a" * 256
    assert s.on_append(ctx_with_call("t1"), u_res(("t1", at))).blocks[0].content == at  # type: ignore[union-attr]
    over = "a" * 257
    assert s.on_append(ctx_with_call("t1"), u_res(("t1", over))).kind == "handle"


def test_not_offloaded_when_stub_is_not_shorter() -> None:
    s = create("offload_contracts", offload_threshold_bytes=256, preview_chars=4000)
    c = big("q", 2100)
    m = u_res(("t1", c))
    assert s.on_append(ctx_with_call("t1"), m) is m


def test_small_pinned_stub_and_plain_messages_unchanged() -> None:
    s = create("offload_contracts")
    ctx = ctx_with_call("t1")
    small = u_res(("t1", "small output"))
    pinned = Message.build("user", [ToolResult("t1", "success", big())], pinned=True)
    text = Message.user(big())
    assert s.on_append(ctx, small) is small
    assert s.on_append(ctx, pinned) is pinned
    assert s.on_append(ctx, text) is text
    assert len(ctx.store) == 0


def test_stub_is_not_offloaded_again() -> None:
    s = create("offload_contracts", offload_threshold_bytes=256, preview_chars=4000)
    ctx = ctx_with_call("t1")
    first = create("offload_contracts", preview_chars=4000).on_append(ctx, u_res(("t1", big("r", 20000))))
    stub = first.blocks[0].content  # type: ignore[union-attr]
    assert len(stub.encode()) > 256
    again = Message.build("user", [ToolResult("t1", "success", stub)])
    assert s.on_append(ctx, again) is again


def test_results_answering_retrieve_are_not_offloaded_on_append() -> None:
    s = create("offload_contracts")
    ctx = ctx_with_call("r1", name="retrieve_payload")
    m = u_res(("r1", big()))
    assert s.on_append(ctx, m) is m
    assert len(ctx.store) == 0


def test_only_the_non_retrieve_result_of_a_mixed_message_is_offloaded() -> None:
    s = create("offload_contracts", preview_chars=0)
    ctx = Context([Message.build("assistant", [ToolUse("r1", "retrieve_payload", {}), ToolUse("t2", "logs", {})])])
    out = s.on_append(ctx, u_res(("r1", big("r")), ("t2", big("t"))))
    assert out.blocks[0].content == big("r")  # type: ignore[union-attr]
    assert out.blocks[1].content.startswith("[offloaded tool output ref_")  # type: ignore[union-attr]


def test_on_append_keeps_ids_status_and_other_blocks() -> None:
    m = Message.build("user", [Text("see"), ToolResult("t1", "error", big()), ToolResult("t2", "success", "tiny")])
    out = create("offload_contracts").on_append(ctx_with_call("t1", "t2"), m)
    assert out.blocks[0] == Text("see")
    assert (out.blocks[1].tool_use_id, out.blocks[1].status) == ("t1", "error")  # type: ignore[union-attr]
    assert out.blocks[2] == ToolResult("t2", "success", "tiny")
    assert out.kind == "handle"


# retrieve ---------------------------------------------------------------------------------------


def stored(payload: str, **params: object) -> tuple[object, Context, str]:
    s = create("offload_contracts", **params)
    ctx = Context()
    ref = h(payload)
    ctx.store.put(ref, payload)
    return s, ctx, ref


def test_retrieve_pages_with_hint() -> None:
    payload = "".join(chr(ord("a") + k % 26) for k in range(600))
    s, ctx, ref = stored(payload, retrieve_chars=256)
    status, text = s.retrieve(ctx, ref)  # type: ignore[attr-defined]
    assert status == "success"
    assert text == payload[:256] + f'\n[... 344 more chars; call retrieve_payload(handle="{ref}", offset=256)]'


def test_retrieve_last_page_has_no_hint_and_length_is_capped() -> None:
    payload = "q" * 600
    s, ctx, ref = stored(payload, retrieve_chars=256)
    assert s.retrieve(ctx, ref, 512) == ("success", "q" * 88)  # type: ignore[attr-defined]
    status, text = s.retrieve(ctx, ref, 0, 10_000)  # type: ignore[attr-defined]
    assert status == "success"
    assert text.startswith("q" * 256 + "\n[... 344 more chars")
    status, text = s.retrieve(ctx, ref, 100, 50)  # type: ignore[attr-defined]
    assert status == "success"
    assert text == "q" * 50 + f'\n[... 450 more chars; call retrieve_payload(handle="{ref}", offset=150)]'
    assert s.retrieve(ctx, ref, 600) == ("success", "")  # type: ignore[attr-defined]


def test_retrieve_pages_rebuild_the_payload() -> None:
    payload = big("page", 3000) + "\nééé ünïcode"
    s, ctx, ref = stored(payload, retrieve_chars=256)
    parts, offset = [], 0
    for _ in range(100):
        status, text = s.retrieve(ctx, ref, offset)  # type: ignore[attr-defined]
        assert status == "success"
        hint = re.search(
            r'\n\[\.\.\. \d+ more chars; call retrieve_payload\(handle="ref_[0-9a-f]{12}", '
            r"offset=(\d+)\)\]$",
            text,
        )
        if hint is None:
            parts.append(text)
            break
        parts.append(text[: hint.start()])
        offset = int(hint.group(1))
    assert "".join(parts) == payload


def test_retrieve_unknown_handle() -> None:
    s, ctx, _ = stored("abc" * 200)
    assert s.retrieve(ctx, "ref_000000000000") == ("error", "unknown handle: ref_000000000000")  # type: ignore[attr-defined]


@pytest.mark.parametrize("offset", [-1, 601])
def test_retrieve_offset_out_of_range(offset: int) -> None:
    s, ctx, ref = stored("w" * 600)
    assert s.retrieve(ctx, ref, offset) == ("error", "offset out of range 0..600")  # type: ignore[attr-defined]


# reduce -----------------------------------------------------------------------------------------


def test_reduce_offloads_regardless_of_threshold_and_retrieve_results() -> None:
    below = big("below", 1000)
    retrieved = big("retr", 1500)
    msgs = [
        Message.user("task", kind="task"),
        a_use("t1"),
        u_res(("t1", below)),
        a_use("r1", name="retrieve_payload"),
        u_res(("r1", retrieved)),
        Message.assistant("end"),
    ]
    ctx = Context(msgs)
    s = create("offload_contracts", preview_chars=0)
    assert s.on_append(ctx, msgs[2]) is msgs[2]
    before = ctx.tokens
    s.reduce(ctx, ContextOverflow(1, 1))
    assert ctx.tokens < before
    assert ctx.messages[2].kind == "handle" and ctx.messages[4].kind == "handle"
    assert ctx.store.get(h(below)) == below and ctx.store.get(h(retrieved)) == retrieved
    assert [ctx.messages[i] for i in (0, 1, 3, 5)] == [msgs[i] for i in (0, 1, 3, 5)]
    assert ctx.removed_count == 0 and len(ctx.messages) == 6


def test_reduce_skips_protected_messages() -> None:
    msgs = [
        Message.build("assistant", [ToolUse("t1", "logs", {})], pinned=True),
        u_res(("t1", big("p"))),
        a_use("t2"),
        u_res(("t2", big("q"))),
    ]
    ctx = Context(msgs)
    create("offload_contracts").reduce(ctx)
    assert ctx.messages[1] == msgs[1]
    assert ctx.messages[3].kind == "handle"


def test_reduce_with_nothing_to_offload_raises_and_stores_nothing() -> None:
    msgs = [Message.user("task"), a_use("t1"), u_res(("t1", "short"))]
    ctx = Context(msgs)
    overflow = ContextOverflow(1, 1)
    with pytest.raises(CannotReduce) as info:
        create("offload_contracts").reduce(ctx, overflow)
    assert info.value.__cause__ is overflow
    assert list(ctx.messages) == msgs and len(ctx.store) == 0


def test_apply_and_before_call_do_nothing() -> None:
    msgs = [Message.user("task"), a_use("t1"), u_res(("t1", big()))]
    ctx = Context(msgs, window_tokens=10)
    s = create("offload_contracts")
    s.apply(ctx)
    s.before_call(ctx)
    assert list(ctx.messages) == msgs and len(ctx.store) == 0
