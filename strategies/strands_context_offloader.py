"""`strands_context_offloader`: strands-agents' ContextOffloader plugin: a tool result over a token
threshold is stored out of the window and replaced by a notice, retrieval guidance and a preview;
the agent reads it back with ``retrieve_offloaded_content``; stored entries are evicted by age.

Primary source: strands-agents 1.62.0, ``strands/vended_plugins/context_offloader/`` (``plugin.py``:
``ContextOffloader._handle_tool_result`` on ``AfterToolCallEvent``, ``_on_before_model_call`` on
``BeforeModelCallEvent``, the ``retrieve_offloaded_content`` tool; ``storage.py``: ``InMemoryStorage``;
``search.py``: the pattern and line-range reads).

What the source does, and what this strategy does the same way:
- After each tool call (never on a result of its own ``retrieve_offloaded_content``), the result's tokens are
  estimated; over ``max_result_tokens`` it is stored and its content becomes one text of this shape::

      [Offloaded: 1 blocks, ~<tokens, thousands comma> tokens]
      Tool result was offloaded to external storage due to size.
      Use the preview below if it answers your question.
      If you need more detail, use retrieve_offloaded_content with a reference and:
        - pattern: regex or keyword to find matching lines with context
        - line_range: { start, end } to read a specific span of lines
      Retrieve full content (omit pattern/line_range) as a last resort.

      <preview: the first preview_tokens * 4 characters>

      [Stored references:]
        <reference> (text, <chars, thousands comma> chars)

  Without the retrieval tool the guidance's last four lines are one line, "If you need more detail, use
  your available tools to access specific data." The id and status of the result are kept.
- Tokens: the source asks the model's ``count_tokens``; the base ``Model`` (and every provider
  without a native counter) estimates ``ceil(chars / 4)`` per text item, so the source approximates.
  ``token_estimate="exact"`` (our default) counts the content with the session's tokenizer;
  ``"heuristic"`` is the source's ``ceil(chars / 4)``. The preview is always cut at
  ``preview_tokens * 4`` characters: the source's ``_slice_preview`` cuts by characters in 1.62, even
  though its docstring promises tiktoken slicing.
- ``retrieve(reference, pattern, line_range, context_lines)`` as the tool: an unknown or evicted
  reference is the error ``Error: reference not found: <reference>`` (the tool's ValueError as strands'
  tool wrapper renders it); no pattern, range or context gives the whole content; a pattern greps
  (regex, literal when invalid or nested-quantified, 200 chars at most) with ``context_lines``
  (default 5) around each match; a range reads lines (1-indexed, inclusive); only ``context_lines``
  reads lines 1..context_lines. Output is cut at ``max_result_tokens * 4`` characters. Every
  retrieve refreshes the reference's age.
- Eviction: a cycle is one model call and its tool calls; one ``before_call`` starts one. Before each
  call, references last stored or retrieved more than ``evict_after_cycles`` cycles ago
  (``last < cycle - evict_after_cycles``) are evicted; None never evicts. The stub stays in the
  window (the source never edits a message after the tool call). A call retried after an overflow is a
  new cycle on both sides.
- It is a plugin, not a conversation manager: ``reduce`` always raises CannotReduce (in strands the
  agent's conversation manager, by default a sliding window of 40 messages, handles an overflow).

Params (the source's defaults): ``max_result_tokens`` 2,500 (> 0), ``preview_tokens`` 1,000 (>= 0
and < ``max_result_tokens``), ``evict_after_cycles`` 20 (>= 1, or None), ``include_retrieval_tool``
True; plus ``token_estimate`` (above). With the source's default backend (its in-memory storage),
the storage's own ``evict_after_turns`` (also 20) applies instead of the plugin's
``evict_after_cycles``, with the same rule; here the one param sets it.

Not modelled: the ``should_offload`` callback, agent-as-tool delegation, cancelled calls, JSON, image
and document blocks (a ctxbench result is one text, so the notice always says ``1 blocks``), and the
storage backends (the payloads live in ``ctx.store``).

Deliberate differences, each for the ctxbench runtime (harness/sim): the reference is our content
handle ``ref_<sha256[:12]>`` (the source's is backend-specific, ``mem_<n>_<toolUseId>_0`` in memory),
so the same output stored twice shares one reference and one age; the stub starts with the two lines
``parse_stub`` reads (handle and size, and the call whose output it holds, as a real offloader shows
the tool and its arguments; no fact keys) and wraps the
preview in the ``--- preview head/tail ---`` marks (so the preview counts as raw tool output), both
left out when there is no retrieval tool; ``source_text`` removes them again. The mock pages through
``retrieve(ctx, reference, offset, length)``: offset 0 without a length is the whole content, any
other offset or length reads the lines holding ``[offset, offset + length)`` as a line range. Results of
``retrieve_payload`` (the retrieve tool the mock calls today) are never offloaded either.
"""

from __future__ import annotations

import math
import re
from typing import ClassVar, Literal

from pydantic import StrictBool, model_validator

from harness.core import Block, Context, Message, ToolResult, block_text, handle_for, is_stub, rebuild
from harness.core.messages import TextMeter
from harness.core.stubs import CALL_PREFIX, HEAD_MARK, TAIL_MARK
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, register
from strategies.offload_contracts import call_of
from strategies.params import NonNegativeInt, PositiveInt
from strategies.split import is_pinned

RETRIEVE_TOOL = "retrieve_offloaded_content"
#: The retrieve tool the mock model calls today (harness/sim/model.py): its results stay whole too.
RUNTIME_RETRIEVE_TOOL = "retrieve_payload"
#: The source's characters per token, for the preview cut and the retrieve output cap.
CHARS_PER_TOKEN = 4
DEFAULT_CONTEXT_LINES = 5
MAX_PATTERN_CHARS = 200
#: A nested quantifier such as ``(a+)+``: the source searches such a pattern literally.
NESTED_QUANTIFIER = re.compile(r"[+*]\s*\)\s*[+*]")

GUIDANCE_HEAD = (
    "Tool result was offloaded to external storage due to size.\n"
    "Use the preview below if it answers your question.\n"
)
GUIDANCE_RETRIEVE = (
    f"If you need more detail, use {RETRIEVE_TOOL} with a reference and:\n"
    "  - pattern: regex or keyword to find matching lines with context\n"
    "  - line_range: { start, end } to read a specific span of lines\n"
    "Retrieve full content (omit pattern/line_range) as a last resort."
)
GUIDANCE_NO_TOOL = "If you need more detail, use your available tools to access specific data."

Status = Literal["success", "error"]


class StrandsContextOffloaderParams(StrategyParams):
    #: Results whose estimated tokens exceed this are offloaded.
    max_result_tokens: PositiveInt = 2_500
    #: Preview kept in the window, in tokens of 4 characters.
    preview_tokens: NonNegativeInt = 1_000
    #: Cycles without a store or retrieve before a reference is evicted; None never evicts.
    evict_after_cycles: PositiveInt | None = 20
    include_retrieval_tool: StrictBool = True
    #: "exact": the session's tokenizer; "heuristic": the source's fallback, ceil(chars / 4).
    token_estimate: Literal["exact", "heuristic"] = "exact"

    @model_validator(mode="after")
    def _preview_below_threshold(self) -> StrandsContextOffloaderParams:
        if self.preview_tokens >= self.max_result_tokens:
            raise ValueError("preview_tokens must be less than max_result_tokens")
        return self


def estimate_tokens(content: str, meter: TextMeter, how: Literal["exact", "heuristic"]) -> int:
    """The token count the offload decision compares with ``max_result_tokens``."""
    if how == "heuristic":
        return math.ceil(len(content) / CHARS_PER_TOKEN)
    return meter.measure(content)[0]


def notice_text(content: str, tokens: int, reference: str, preview_tokens: int, with_tool: bool) -> str:
    """The text the source puts in place of an offloaded one-text result."""
    guidance = GUIDANCE_HEAD + (GUIDANCE_RETRIEVE if with_tool else GUIDANCE_NO_TOOL)
    preview = content[: preview_tokens * CHARS_PER_TOKEN]
    return (
        f"[Offloaded: 1 blocks, ~{tokens:,} tokens]\n{guidance}\n\n{preview}\n\n"
        f"[Stored references:]\n  {reference} ({_describe(content)})"
    )


#: The head of the source's notice (`notice_text`): what an offloaded result starts with when the retrieval
#: tool is not included (then the text is no `parse_stub` stub).
_NOTICE_HEAD = re.compile(r"\[Offloaded: \d+ blocks, ~[\d,]+ tokens\]\n")


def is_offloaded(content: str) -> bool:
    """Whether ``content`` is already the text of an offloaded result: our stub, or the source's notice
    (which has no parse lines). Offloading it again would store the notice and lose the reference to the
    original, so a second offloader (a pipeline stage after another) leaves it alone."""
    return is_stub(content) or (_NOTICE_HEAD.match(content) is not None and "\n[Stored references:]\n" in content)


def _describe(content: str) -> str:
    return f"text, {len(content):,} chars"


def render_offload_stub(content: str, call: str, tokens: int, params: StrandsContextOffloaderParams) -> str:
    """Our stub of ``content``: the source's notice, preceded (with the retrieval tool) by the two lines
    ``parse_stub`` reads (the handle and size; the ``call`` that produced it, as the context shows it)
    and with the preview between the preview marks."""
    reference = handle_for(content)
    if not params.include_retrieval_tool:
        return notice_text(content, tokens, reference, params.preview_tokens, with_tool=False)
    preview = content[: params.preview_tokens * CHARS_PER_TOKEN]
    return (
        f"[offloaded tool output {reference}: {len(content.encode('utf-8'))} bytes, "
        f"{len(content.splitlines())} lines]\n"
        + f"{CALL_PREFIX}{call}\n"
        + f"[Offloaded: 1 blocks, ~{tokens:,} tokens]\n{GUIDANCE_HEAD}{GUIDANCE_RETRIEVE}\n\n"
        + f"{HEAD_MARK}\n{preview}\n{TAIL_MARK}\n\n"
        + f"[Stored references:]\n  {reference} ({_describe(content)})"
    )


def stub_for(content: str, call: str, meter: TextMeter, params: StrandsContextOffloaderParams) -> str:
    """The stub that replaces ``content`` once offloaded (the only rewrite this strategy makes), output of
    ``call`` (`render_offload_stub`); its tokens estimated with the message's meter."""
    tokens = estimate_tokens(content, meter, params.token_estimate)
    return render_offload_stub(content, call, tokens, params)


def source_text(stub: str) -> str:
    """The source's notice inside one of our stubs: without the two parse lines and the preview marks."""
    if not is_stub(stub):
        return stub
    body = stub.split("\n", 2)[2]
    head = f"\n\n{HEAD_MARK}\n"
    at = body.index(head)
    body = body[:at] + "\n\n" + body[at + len(head) :]
    tail = f"\n{TAIL_MARK}\n\n[Stored references:]\n"
    at = body.rindex(tail)
    return body[:at] + "\n\n[Stored references:]\n" + body[at + len(tail) :]


# Reading stored text (the source's search.py semantics) ------------------------------------------


def _numbered(lines: list[str], shown: list[int], matched: set[int]) -> str:
    """``shown`` lines as ``"> 12| text"`` (``>`` on matches), numbers right-aligned, ``---`` at gaps."""
    if not shown:
        return ""
    width = len(str(shown[-1] + 1))
    out: list[str] = []
    previous: int | None = None
    for i in shown:
        if previous is not None and i > previous + 1:
            out.append("---")
        out.append(f"{'>' if i in matched else ' '} {str(i + 1).rjust(width)}| {lines[i]}")
        previous = i
    return "\n".join(out)


def _capped(body: str, max_chars: int, note: str) -> str:
    """``body`` cut at its last line end before ``max_chars`` (or at ``max_chars``), with a note."""
    if len(body) <= max_chars:
        return body
    cut = body.rfind("\n", 0, max_chars)
    return body[: cut if cut > 0 else max_chars] + f"\n\n[{note}]"


def _compiled(pattern: str) -> re.Pattern[str]:
    """The regex the source searches with: the first 200 characters, literal when not a safe regex."""
    head = pattern[:MAX_PATTERN_CHARS]
    if not NESTED_QUANTIFIER.search(head):
        try:
            return re.compile(head)
        except re.error:
            pass
    return re.compile(re.escape(head))


def search_text(
    text: str,
    *,
    pattern: str | None = None,
    line_range: tuple[int, int] | None = None,
    context_lines: int = DEFAULT_CONTEXT_LINES,
    max_chars: int = 10_000,
) -> str:
    """Grep ``text`` for ``pattern`` or read ``line_range`` (1-indexed, inclusive; within the range when
    both), in the source's output format. ValueError for a range outside the text."""
    lines = text.split("\n")
    total = len(lines)
    if total == 1 and lines[0] == "":
        return "Content is empty (0 lines)."
    first, last = 0, total - 1
    if line_range is not None:
        start, end = line_range
        if start < 1:
            raise ValueError(f"line_range.start ({start}) must be >= 1.")
        if start > end:
            raise ValueError(f"line_range.start ({start}) must be <= line_range.end ({end}).")
        if start > total:
            raise ValueError(f"line_range.start ({start}) is beyond content length ({total} lines).")
        first, last = start - 1, min(end - 1, total - 1)
    around = max(0, context_lines)
    if not pattern:
        header = f"[Lines {first + 1}-{last + 1} of {total}]"
        body = _numbered(lines, list(range(first, last + 1)), set())
        return f"{header}\n\n{_capped(body, max_chars, 'output truncated, narrow your range')}"
    where = f" in lines {line_range[0]}-{last + 1}" if line_range is not None else ""
    regex = _compiled(pattern)
    matched = {i for i in range(first, last + 1) if regex.search(lines[i])}
    if not matched:
        return f"No matches found for pattern '{pattern}'{where} (searched {last - first + 1} lines)."
    shown = sorted({j for i in matched for j in range(max(first, i - around), min(last, i + around) + 1)})
    label = re.sub(r"[\n\r/\]]", " ", pattern)[:50]
    header = f"[{len(matched)} match{'es' if len(matched) > 1 else ''} for /{label}/{where}]"
    body = _numbered(lines, shown, matched)
    return f"{header}\n\n{_capped(body, max_chars, 'output truncated, narrow your search')}"


def _line_of(text: str, offset: int) -> int:
    """The 1-indexed line holding character ``offset`` (the last line for the end of the text)."""
    return text.count("\n", 0, offset) + 1


# The strategy ------------------------------------------------------------------------------------


@register("strands_context_offloader")
class StrandsContextOffloader(ContextStrategy):
    """Offload each tool result over ``max_result_tokens`` behind the source's notice and preview as it
    is appended; serve it back through ``retrieve``; evict references by age before each call.

    Invariants (checked by tests/properties):
    - only ``on_append`` changes a message, and only the ToolResult contents of the user message being
      appended: each content stays, or becomes exactly ``render_offload_stub`` of it (kind ``handle``);
      ids, statuses, roles and other blocks are kept; ``removed_count`` never changes;
    - a result is offloaded iff its estimated tokens exceed ``max_result_tokens``, it answers no retrieve
      tool (``retrieve_payload``; ``retrieve_offloaded_content`` while the tool is included), it is not
      already offloaded (a stub, or the source's notice: `is_offloaded`) and its message is not pinned
      (nor paired with a pinned call);
    - an open tool call is never altered; an offloaded result is never shown whole again under its id
      (only ``retrieve``, as a new result, shows it);
    - ``store.get(reference)`` is the original and the reference is its sha256 prefix; ``retrieve`` of a
      live reference with no query returns it whole; pattern and line-range reads equal the source's;
    - ``before_call`` never changes the window; a reference is live iff it was stored or retrieved at
      most ``evict_after_cycles`` cycles ago; an evicted one returns ``Error: reference not found: <ref>``;
    - ``reduce`` always raises CannotReduce with the window unchanged (the source never reduces).
    """

    source = 'strands-agents 1.62.0 ContextOffloader plugin'
    sdk = True

    Params = StrandsContextOffloaderParams
    params: StrandsContextOffloaderParams
    tools: ClassVar[tuple[str, ...]] = (RETRIEVE_TOOL,)

    def __init__(self, params: StrandsContextOffloaderParams | None = None) -> None:
        super().__init__(params)
        #: Agent loop cycles begun (before_call count): the source's ``event_loop_metrics.cycle_count``.
        self.cycle = 0
        #: Live reference -> the cycle it was last stored or retrieved in.
        self._last_used: dict[str, int] = {}

    # Offloading ----------------------------------------------------------------------------------
    def on_append(self, ctx: Context, msg: Message) -> Message:
        if msg.role != "user" or not msg.has_result or self._protected(ctx, msg):
            return msg
        blocks: list[Block] = []
        stored: list[str] = []
        for b in msg.blocks:
            stub = self._stub(ctx, b, msg.meter)
            if stub is not None:
                assert isinstance(b, ToolResult)
                stored.append(b.content)
                b = ToolResult(b.tool_use_id, b.status, stub)
            blocks.append(b)
        if not stored:
            return msg
        for payload in stored:
            reference = handle_for(payload)
            ctx.store.put(reference, payload)
            self._last_used[reference] = self.cycle
        return rebuild(msg, blocks, kind="handle")

    @staticmethod
    def _protected(ctx: Context, msg: Message) -> bool:
        """R4: a pinned message, or one answering calls of a pinned message, is never rewritten."""
        return is_pinned([ctx.messages[-1], msg], 1) if ctx.messages else msg.pinned

    def _stub(self, ctx: Context, b: Block, meter: TextMeter) -> str | None:
        """The stub replacing ``b``, or None when ``b`` stays whole."""
        if not isinstance(b, ToolResult) or is_offloaded(b.content):
            return None
        use = call_of(ctx, b.tool_use_id)
        name = use.name if use is not None else None
        if name == RUNTIME_RETRIEVE_TOOL or (name == RETRIEVE_TOOL and self.params.include_retrieval_tool):
            return None
        if estimate_tokens(b.content, meter, self.params.token_estimate) <= self.params.max_result_tokens:
            return None
        return stub_for(b.content, block_text(use) if use is not None else "", meter, self.params)

    # Cycles and eviction -------------------------------------------------------------------------
    def before_call(self, ctx: Context) -> None:
        """A new agent loop cycle: evict the references unused for more than ``evict_after_cycles``."""
        self.cycle += 1
        limit = self.params.evict_after_cycles
        if limit is None:
            return
        oldest_kept = self.cycle - limit
        for reference in [r for r, used in self._last_used.items() if used < oldest_kept]:
            del self._last_used[reference]

    def is_live(self, reference: str) -> bool:
        """Whether ``reference`` was stored by this instance and is not evicted (no refresh)."""
        return reference in self._last_used

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce("the context offloader only offloads tool results as they arrive") from overflow

    # Reading back --------------------------------------------------------------------------------
    def retrieve(
        self,
        ctx: Context,
        reference: str,
        offset: int = 0,
        length: int | None = None,
        *,
        pattern: str | None = None,
        line_range: tuple[int, int] | None = None,
        context_lines: int | None = None,
    ) -> tuple[Status, str]:
        """The ``retrieve_offloaded_content`` tool: (status, text) as the tool's result would read.

        ``offset``/``length`` are the mock's paging (harness/sim/tool_player.py): without a line range,
        any offset other than 0 or any length reads the lines holding ``[offset, offset + length)``."""
        if not self.params.include_retrieval_tool:
            return "error", f"Unknown tool: {RETRIEVE_TOOL}"
        if reference not in self._last_used or reference not in ctx.store:
            return "error", f"Error: reference not found: {reference}"
        self._last_used[reference] = self.cycle
        content = ctx.store.get(reference)
        if line_range is None and (offset != 0 or length is not None):
            if not 0 <= offset <= len(content) or (length is not None and length < 1):
                return "error", f"Error: offset and length must lie within 0..{len(content)}"
            last = (
                content.count("\n") + 1
                if length is None
                else _line_of(content, max(offset, min(len(content), offset + length) - 1))
            )
            line_range = (_line_of(content, offset), last)
        if pattern is None and line_range is None and context_lines is None:
            return "success", content
        around = DEFAULT_CONTEXT_LINES if context_lines is None else context_lines
        if line_range is None and pattern is None:
            line_range = (1, max(1, around))
        try:
            text = search_text(
                content,
                pattern=pattern,
                line_range=line_range,
                context_lines=around,
                max_chars=self.params.max_result_tokens * CHARS_PER_TOKEN,
            )
        except ValueError as e:
            return "error", f"Error: {e}"
        return "success", text
