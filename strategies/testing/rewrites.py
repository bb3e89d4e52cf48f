"""What a strategy may put in place of a message it keeps (invariants G3 and G4 of docs/strategies.md 4).

A window after a hook may hold only: messages of the window before; new summaries (text only,
``kind="summary"``); and rewrites of earlier messages that keep the role, the non-result blocks,
the tool ids and statuses, and replace result contents with a fixed form of the original. Every
strategy may use the truncation form (§3.3) and the masking placeholder (§3.6); anything else a
strategy writes into a tool result is declared as a `Rewrite`: an offload stub (§3.7) or a fixed
placeholder text. `rewrites_of` knows the declarations of the built-in strategies.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse
from harness.core.stubs import parse_stub, render_stub
from strategies.claude_code_compact import CLEARED as CLAUDE_CODE_CLEARED
from strategies.clear_tool_uses import ANTHROPIC_PLACEHOLDER, LANGCHAIN_PLACEHOLDER
from strategies.observation_masking import placeholder
from strategies.strands_context_offloader import StrandsContextOffloaderParams
from strategies.strands_context_offloader import stub_for as strands_stub
from strategies.testing.windows import norm
from strategies.truncate_then_slide import truncatable, truncated


@dataclass(frozen=True, slots=True)
class Rewrite:
    """One allowed replacement of a tool result's content, besides truncation and the masking
    placeholder. Build it with `Rewrite.stub` or `Rewrite.placeholder`."""

    kind: Literal["stub", "text", "strands"]
    #: The stub's preview_chars, the placeholder text, or the strands offloader's params as JSON.
    arg: int | str

    @classmethod
    def stub(cls, preview_chars: int = 300) -> Rewrite:
        """The offload stub of §3.7 (`harness.core.render_stub`) with this preview length."""
        return cls("stub", preview_chars)

    @classmethod
    def placeholder(cls, text: str) -> Rewrite:
        """A fixed text that replaces a cleared tool output."""
        return cls("text", text)

    @classmethod
    def strands_stub(cls, params: dict[str, Any]) -> Rewrite:
        """The reference the `strands_context_offloader` strategy leaves, for these params."""
        return cls("strands", json.dumps(params, sort_keys=True))


#: What a strategy that declares nothing may write into a tool result, besides truncation and the
#: masking placeholder: the offload stub with its default 300-character preview.
DEFAULT_REWRITES: tuple[Rewrite, ...] = (Rewrite.stub(),)


def rewrites_of(name: str, params: dict[str, Any]) -> set[Rewrite]:
    """The content rewrites built-in strategy ``name`` with ``params`` may make besides masking's
    placeholder and truncation."""
    if name == "offload_contracts":
        return {Rewrite.stub(params.get("preview_chars", 300))}
    if name == "pipeline":
        return {r for s in params["stages"] for r in rewrites_of(s["name"], s.get("params", {}))}
    if name == "clear_tool_uses":
        return {Rewrite.placeholder(ANTHROPIC_PLACEHOLDER)}
    if name == "langchain_clear_tool_uses":
        return {Rewrite.placeholder(params.get("placeholder", LANGCHAIN_PLACEHOLDER))}
    if name == "claude_code_compact":
        return {Rewrite.placeholder(CLAUDE_CODE_CLEARED)}
    if name == "strands_context_offloader":
        return {Rewrite.strands_stub(params)}
    return set()


@lru_cache(maxsize=50_000)
def allowed_contents(c: str, call: str, rewrites: tuple[Rewrite, ...], meter: TextMeter) -> frozenset[str]:
    """The content itself, its truncated form, its placeholder, or a rewrite of ``rewrites`` (a stub
    naming ``call``, the call whose output it stands for)."""
    out = {c, placeholder(c)}
    if truncatable(c):
        out.add(truncated(c))
    for r in rewrites:
        if r.kind == "stub":
            out.add(render_stub(c, call, int(r.arg)))
        elif r.kind == "text":
            out.add(str(r.arg))
        else:
            out.add(strands_stub(c, call, meter, StrandsContextOffloaderParams(**json.loads(str(r.arg)))))
    return frozenset(out)


def _stub_call(content: str) -> str:
    """The call a stub names (the history the stub was made in knows it; the rewrite check does not)."""
    stub = parse_stub(content)
    return stub.call if stub is not None else ""


def is_rewrite(a: Message, b: Message, rewrites: tuple[Rewrite, ...]) -> bool:
    """G4: a keeps b's role, non-result blocks, ids and statuses; each content is b's, or exactly
    its truncated form, placeholder or an allowed rewrite; kind unchanged or placeholder/handle;
    facts a subset, besides those a stub's call line states (a stub names the call it answers, whose
    arguments may hold values its output does not). A call's input may be cleared to ``{}`` (context
    editing's ``clear_tool_inputs``), id and name kept."""
    if a.role != b.role or len(a.blocks) != len(b.blocks):
        return False
    if not a.facts <= b.facts:
        stated = {key for block in a.blocks if isinstance(block, ToolResult) and (call := _stub_call(block.content))
                  for key in a.meter.measure(call)[1]}
        if not a.facts <= b.facts | stated:
            return False
    if a.kind != b.kind and a.kind not in ("placeholder", "handle"):
        return False
    for x, y in zip(a.blocks, b.blocks, strict=True):
        if isinstance(y, ToolResult):
            if not (
                isinstance(x, ToolResult)
                and x.tool_use_id == y.tool_use_id
                and x.status == y.status
                and x.content in allowed_contents(y.content, _stub_call(x.content), rewrites, b.meter)
            ):
                return False
        elif isinstance(y, ToolUse) and isinstance(x, ToolUse):
            if not (x.id == y.id and x.name == y.name and x.input in (y.input, {})):
                return False
        elif x != y:
            return False
    return True


#: LangChain's summary message: this prefix, then the summarizer's text (or its fixed sentence when
#: nothing could be summarized within its token budget).
LANGCHAIN_SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
LANGCHAIN_NOTHING_SUMMARIZED = "Previous conversation was too long to summarize."
#: The user half of the OpenAI cookbook's SummarizingSession pair.
OPENAI_SUMMARY_REQUEST = "Summarize the conversation we had so far."


def is_new_summary(m: Message, from_fake: bool = True) -> bool:
    """R9/R6: a summary, text only and not pinned.

    With ``from_fake`` (the summarizer was a `FakeSummarizer`), its text must be the fake's reply
    (it starts with "SUMMARY") as a user message, also under LangChain's prefix or as its fixed
    sentence, or the SummarizingSession pair (the request as a user message, the fake's reply as an
    assistant one). Without it, any text is a summary's.
    """
    if m.kind != "summary" or m.pinned or not m.blocks or not all(isinstance(b, Text) for b in m.blocks):
        return False
    if not from_fake:
        return True
    text = m.text
    if m.role == "assistant":
        return text.startswith("SUMMARY")
    if m.role != "user":
        return False
    if text.startswith(LANGCHAIN_SUMMARY_PREFIX):
        rest = text[len(LANGCHAIN_SUMMARY_PREFIX):]
        return rest.startswith("SUMMARY") or rest == LANGCHAIN_NOTHING_SUMMARIZED
    return text.startswith("SUMMARY") or text == OPENAI_SUMMARY_REQUEST


def is_subsequence(a: Sequence[Message], b: Sequence[Message], rewrites: Collection[Rewrite]) -> bool:
    """Whether a matches a subsequence of b, message by message up to an allowed rewrite (greedy
    earliest matching is exact for any per-pair relation)."""
    allowed = tuple(rewrites)
    j = 0
    for x in a:
        while j < len(b) and not (norm(x) == norm(b[j]) or is_rewrite(x, b[j], allowed)):
            j += 1
        if j == len(b):
            return False
        j += 1
    return True
