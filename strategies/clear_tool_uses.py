"""`clear_tool_uses` and `langchain_clear_tool_uses`: context editing that replaces old tool results
by a placeholder in what the model sees, while the history itself stays whole.

Both strategies recompute the edited view from the full history before every model call, as the
source does (Anthropic's server edits each request; LangChain's middleware edits a deep copy of the
request's messages and leaves the agent state alone). The view has the history's length: a cleared
result keeps its message, tool id and status, only its content becomes the placeholder.

**clear_tool_uses**: Anthropic context editing, strategy ``clear_tool_uses_20250919``.
Sources: https://platform.claude.com/docs/en/build-with-claude/context-editing (beta header
``context-management-2025-06-27``) and anthropic-sdk-python
``src/anthropic/types/beta/beta_clear_tool_uses_20250919_edit_param.py`` (0.121.0). Params, with
the docs' defaults:

- ``trigger``: ``{type: "input_tokens", value: 100000}``, or ``{type: "tool_uses", value: N}``. It
  fires once the prompt *exceeds* the value (strictly greater): the whole input of the call
  (`Context.prompt_tokens` over the unedited history) or the number of tool uses in it.
- ``keep``: ``{type: "tool_uses", value: 3}``: the newest answered tool uses whose results stay.
- ``clear_at_least``: None, or ``{type: "input_tokens", value: N}``: if the edit would free fewer
  tokens than that, it is not applied at all (the docs: "If the API can't clear at least the
  specified amount, the strategy will not be applied").
- ``exclude_tools``: none: tool names whose uses and results are never cleared.
- ``clear_tool_inputs``: false; true clears the input of every cleared call too, a list of tool
  names clears the inputs of those tools' cleared calls (the SDK type allows bool or a list).

Not public, so chosen here: the placeholder text (the docs say only that a cleared result is
replaced "with placeholder text so Claude knows it was removed"; ours is `ANTHROPIC_PLACEHOLDER`);
a cleared input becomes ``{}``; ``keep`` counts every answered tool use, excluded tools included
(the newest ``keep`` pairs are always intact); tool uses are ordered by their results. Values must
be >= 0 (neither source states a bound). Not modelled: ``clear_thinking_20251015``, the warning the
memory tool gets near the threshold, and the response's ``context_management`` field (`last_edit`
holds the same two numbers).

**langchain_clear_tool_uses**: LangChain v1 ``ContextEditingMiddleware`` with one
``ClearToolUsesEdit`` (langchain 1.5.2, ``langchain/agents/middleware/context_editing.py``). Params as
the source has them: ``trigger=100_000`` (fires when the count is *strictly greater*), ``keep=3`` (the
newest ``keep`` tool results are never candidates, whatever their tool), ``clear_at_least=0`` (when > 0,
clearing stops as soon as that many tokens are freed: the opposite reading from Anthropic's),
``clear_tool_inputs=False`` (sets the call's args to ``{}``), ``exclude_tools=()``,
``placeholder="[cleared]"``, ``token_count_method``. A result is cleared only when the nearest
assistant message before it holds its call, as in the source.

Counting: ``token_count_method="model"`` (our default) counts the whole prompt exactly
(`Context.prompt_tokens`, system prompt and tool schemas included), which is what the source's
``"model"`` method asks the chat model for. The source's own default is ``"approximate"``
(``count_tokens_approximately``: per LangChain message ``ceil(chars / 4) + 3``, messages only, no
system prompt or tools); it is offered as a param because users meet it (docs/sdk-strategies.md 2) and it
is cheap: `approximate_tokens` computes it on the LangChain messages a window maps to (an assistant
message is one AIMessage with its text and tool calls; a user message is one ToolMessage per result,
named after its call, then one HumanMessage with its text, if it has text or no result). Values must
be >= 0 (the source's dataclass checks nothing: a negative ``keep`` there keeps all but the last
-keep results).

**Both.** `reduce` always raises CannotReduce and leaves the window unchanged: the view was already
edited before the call, and the sources have nothing further (the API answers a prompt that is still
too long with an error; the middleware lets the model's error through). A protected message
(`strategies.split.is_pinned`) is never rewritten; the sources know no pins. The view can stay above
the trigger after an edit: what is left is the newest ``keep`` results, excluded tools, protected
messages, text and calls, or (LangChain) clearing stopped at ``clear_at_least``. With a
``tool_uses`` trigger clearing never lowers the count (the calls stay).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, StrictBool, StrictStr

from harness.core import Context, Message, Text, ToolResult, ToolUse, rebuild, tokens_of
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, register
from strategies.params import NonNegativeInt
from strategies.split import is_pinned

#: What a result cleared by `clear_tool_uses` reads. Anthropic does not publish its placeholder; this
#: one is ours.
ANTHROPIC_PLACEHOLDER = "[tool result cleared]"
#: LangChain's ``DEFAULT_TOOL_PLACEHOLDER``.
LANGCHAIN_PLACEHOLDER = "[cleared]"


def _list_to_tuple(value: Any) -> Any:
    # A config file gives a list; the frozen params hold a tuple. A bare string stays a string and
    # is refused, rather than read as a sequence of one-letter tool names.
    return tuple(value) if isinstance(value, list) else value


ToolNames = Annotated[tuple[str, ...], BeforeValidator(_list_to_tuple)]


class InputTokens(StrategyParams):
    """``{type: "input_tokens", value: N}`` (BetaInputTokensTriggerParam / ...ClearAtLeastParam)."""

    type: Literal["input_tokens"]
    value: NonNegativeInt


class ToolUses(StrategyParams):
    """``{type: "tool_uses", value: N}`` (BetaToolUsesTriggerParam / BetaToolUsesKeepParam)."""

    type: Literal["tool_uses"]
    value: NonNegativeInt


class ClearToolUsesParams(StrategyParams):
    trigger: Annotated[InputTokens | ToolUses, Field(discriminator="type")] = InputTokens(
        type="input_tokens", value=100_000
    )
    keep: ToolUses = ToolUses(type="tool_uses", value=3)
    clear_at_least: InputTokens | None = None
    exclude_tools: ToolNames = ()
    clear_tool_inputs: StrictBool | ToolNames = False


class LangChainClearToolUsesParams(StrategyParams):
    trigger: NonNegativeInt = 100_000
    clear_at_least: NonNegativeInt = 0
    keep: NonNegativeInt = 3
    clear_tool_inputs: StrictBool = False
    exclude_tools: ToolNames = ()
    placeholder: StrictStr = LANGCHAIN_PLACEHOLDER
    #: "model": the whole prompt, exact (ours); "approximate": LangChain's default estimate.
    token_count_method: Literal["model", "approximate"] = "model"


@dataclass(frozen=True, slots=True)
class AppliedEdit:
    """What the last edit did, as Anthropic's response reports it (``applied_edits``)."""

    cleared_tool_uses: int
    cleared_input_tokens: int


# LangChain's approximate count -------------------------------------------------------------------


def _approx(chars: int) -> int:
    # count_tokens_approximately: ceil(chars / 4) per message, plus 3 per message.
    return math.ceil(chars / 4) + 3


def _approx_tool_message(content: str, tool_id: str, name: str | None) -> int:
    return _approx(len(content) + len(tool_id) + len("tool") + len(name or ""))


def approximate_tokens(m: Message, call_names: dict[str, str]) -> int:
    """``count_tokens_approximately`` of the LangChain messages ``m`` maps to (module docstring);
    ``call_names`` maps the tool ids of the nearest assistant message before ``m`` to their names."""
    if m.role == "assistant":
        text = "\n".join(b.text if isinstance(b, Text) else b.content for b in m.blocks if not isinstance(b, ToolUse))
        calls = [
            {"name": b.name, "args": dict(b.input), "id": b.id, "type": "tool_call"}
            for b in m.blocks
            if isinstance(b, ToolUse)
        ]
        return _approx(len(text) + (len(repr(calls)) if calls else 0) + len("assistant"))
    total = 0
    texts: list[str] = []
    for b in m.blocks:
        if isinstance(b, ToolResult):
            total += _approx_tool_message(b.content, b.tool_use_id, call_names.get(b.tool_use_id))
        elif isinstance(b, Text):
            texts.append(b.text)
    if texts or not m.has_result:
        total += _approx(len("\n".join(texts)) + len("user"))
    return total


def call_names_of(m: Message) -> dict[str, str]:
    """Tool id -> name of the calls in ``m`` (the first call wins for a repeated id, like LangChain's
    lookup)."""
    names: dict[str, str] = {}
    for b in m.blocks:
        if isinstance(b, ToolUse):
            names.setdefault(b.id, b.name)
    return names


# The engine: history, view, commit ----------------------------------------------------------------


class _ContextEditing(ContextStrategy):
    """Keeps the full history and puts its edited view in the window before each call.

    The view has the history's length, message for message; an unedited message is the history's
    own object, so an unchanged prefix stays cached. Edits only grow while the history grows (the
    trigger and the candidates are monotone in it), so each call looks only at what became due.
    """

    #: Placeholder of a cleared result (a param for LangChain).
    placeholder_text: str = ANTHROPIC_PLACEHOLDER

    def __init__(self, params: StrategyParams | None = None) -> None:
        super().__init__(params)
        #: The edit of the last call, None when it applied no edit.
        self.last_edit: AppliedEdit | None = None
        #: id(edited message) -> (that message, its original): maps a window back to the history.
        self._originals: dict[int, tuple[Message, Message]] = {}
        self._reset()

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A copy made by pickle (a saved replay restored) holds new objects: key `_originals` by their ids.
        self.__dict__.update(state)
        self._originals = {id(edited): (edited, original) for edited, original in self._originals.values()}

    def _reset(self) -> None:
        self._history: list[Message] = []
        #: What the window holds at [0:len(history)] since our last commit.
        self._view: list[Message] = []
        self._view_tokens = 0
        self._history_tokens = 0
        #: History index -> its edited version, for every edit due so far (applied or not).
        self._pending: dict[int, Message] = {}
        #: Indices whose pending version changed since the last commit.
        self._dirty: set[int] = set()
        #: The tokens the pending edits free, in the strategy's own count.
        self._freed = 0
        self._cleared_uses = 0
        self._applied = False
        self._compare_all = False

    # Hooks ---------------------------------------------------------------------------------------

    def before_call(self, ctx: Context) -> None:
        self._sync(ctx)
        self._advance()
        applied = self._fires(ctx) and self._passes_gate()
        self._commit(ctx, applied)
        self.last_edit = (
            AppliedEdit(self._cleared_uses, self._history_tokens - self._view_tokens)
            if applied and self._pending
            else None
        )

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        raise CannotReduce(
            "context editing has nothing further to clear: the view was edited before the call"
        ) from overflow

    # History <-> window --------------------------------------------------------------------------

    def _original(self, m: Message) -> Message:
        entry = self._originals.get(id(m))
        return entry[1] if entry is not None and entry[0] is m else m

    def _sync(self, ctx: Context) -> None:
        """Add to the history what the runtime appended since our last commit. If anything else
        changed the window (another stage of a pipeline), the window, read back through our edits,
        becomes the history and every edit is recomputed."""
        window = ctx.messages
        known = len(self._view)
        if known == 0 or (
            len(window) >= known
            and window[known - 1] is self._view[known - 1]
            and window.tokens - tokens_of(window[known:]) == self._view_tokens
        ):
            new = window[known:]
            view: Sequence[Message] = new
        else:
            new = [self._original(m) for m in window]
            view = list(window)
            self._reset()
            self._compare_all = True
        for m, shown in zip(new, view, strict=True):
            index = len(self._history)
            self._history.append(m)
            self._view.append(shown)
            self._view_tokens += shown.tokens
            self._history_tokens += m.tokens
            self._observe(index, m)

    def _commit(self, ctx: Context, applied: bool) -> None:
        if self._compare_all:
            indices: Sequence[int] = range(len(self._history))
        elif applied != self._applied:
            indices = sorted(self._pending)
        elif applied:
            indices = sorted(self._dirty)
        else:
            indices = ()
        for i in indices:
            target = self._pending.get(i, self._history[i]) if applied else self._history[i]
            shown = self._view[i]
            if shown is target:
                continue
            # Rewrites in place keep the length and remove nothing (R5: removed_count unchanged).
            ctx.messages[i] = target
            self._view[i] = target
            self._view_tokens += target.tokens - shown.tokens
            if target is not self._history[i]:
                self._originals[id(target)] = (target, self._history[i])
        self._applied = applied
        self._dirty.clear()
        self._compare_all = False

    # Edits ---------------------------------------------------------------------------------------

    def _replace(self, i: int, new: Message) -> None:
        old = self._pending.get(i, self._history[i])
        self._freed += self._cost(i, old) - self._cost(i, new)
        self._pending[i] = new
        self._dirty.add(i)

    def _clear_result(self, j: int, k: int) -> None:
        """Replace the content of block k of message j by the placeholder."""
        current = self._pending.get(j, self._history[j])
        result = current.blocks[k]
        assert isinstance(result, ToolResult)
        blocks = list(current.blocks)
        blocks[k] = ToolResult(result.tool_use_id, result.status, self.placeholder_text)
        self._replace(j, rebuild(current, blocks, kind="placeholder"))
        self._cleared_uses += 1

    def _clear_input(self, i: int, tool_id: str) -> None:
        """Set the input of every call ``tool_id`` in message i to ``{}``."""
        current = self._pending.get(i, self._history[i])
        blocks = [
            ToolUse(b.id, b.name, {}) if isinstance(b, ToolUse) and b.id == tool_id and b.input else b
            for b in current.blocks
        ]
        if blocks != list(current.blocks):
            self._replace(i, rebuild(current, blocks))

    # What each source decides ---------------------------------------------------------------------

    def _cost(self, i: int, m: Message) -> int:
        """Message i's share of the count the trigger and ``clear_at_least`` use."""
        return m.tokens

    @abstractmethod
    def _observe(self, index: int, m: Message) -> None:
        """Note message ``index`` of the history (its calls and results)."""

    @abstractmethod
    def _advance(self) -> None:
        """Add the edits that became due to the pending ones."""

    @abstractmethod
    def _fires(self, ctx: Context) -> bool:
        """Whether the trigger fires on the unedited history."""

    def _passes_gate(self) -> bool:
        return True


@register("clear_tool_uses")
class ClearToolUses(_ContextEditing):
    """Anthropic's ``clear_tool_uses_20250919``: once the prompt exceeds ``trigger``, every answered
    tool use older than the newest ``keep`` has its result (and, if asked, its input) cleared,
    unless that frees fewer than ``clear_at_least`` tokens.

    Invariants (checked by tests/properties):
    - the window keeps its length, roles, tool ids, statuses and Text blocks; a changed message has
      results holding `ANTHROPIC_PLACEHOLDER` (kind ``placeholder``) or calls whose input is ``{}``;
    - the view is a function of the history: the history is never edited, and before each call the
      view is recomputed from all of it; ``removed_count`` never changes;
    - the newest ``keep`` answered tool uses, calls still waiting for their result, excluded tools
      and protected messages are never changed;
    - after an edit, the prompt is at or below the trigger, or every answered tool use older than
      the newest ``keep`` is cleared, excluded or protected; an edit frees at least
      ``clear_at_least`` tokens or is not applied;
    - once cleared, a result stays cleared on every later call of the session (the prompt overhead
      being constant: the edit is a function of the history and the overhead);
    - ``reduce`` always raises CannotReduce and leaves the window unchanged.
    """

    source = 'Anthropic context editing clear_tool_uses_20250919 (docs: build-with-claude/context-editing)'
    sdk = True

    Params = ClearToolUsesParams
    params: ClearToolUsesParams

    def _reset(self) -> None:
        super()._reset()
        #: tool id -> (index of the assistant message with the call, tool name)
        self._calls: dict[str, tuple[int, str]] = {}
        self._tool_uses = 0
        #: Answered tool uses in the order of their results: (result message, block, call message,
        #: tool id, tool name).
        self._answered: list[tuple[int, int, int, str, str]] = []
        self._due = 0

    def _observe(self, index: int, m: Message) -> None:
        for k, b in enumerate(m.blocks):
            if isinstance(b, ToolUse):
                self._tool_uses += 1
                if m.role == "assistant":
                    self._calls.setdefault(b.id, (index, b.name))
            elif isinstance(b, ToolResult) and m.role == "user" and b.tool_use_id in self._calls:
                call_index, name = self._calls[b.tool_use_id]
                self._answered.append((index, k, call_index, b.tool_use_id, name))

    def _advance(self) -> None:
        p = self.params
        due = max(0, len(self._answered) - p.keep.value)
        inputs = p.clear_tool_inputs
        while self._due < due:
            j, k, call_index, tool_id, name = self._answered[self._due]
            self._due += 1
            if name in p.exclude_tools or is_pinned(self._history, j):
                continue
            self._clear_result(j, k)
            clears_input = inputs is True or (isinstance(inputs, tuple) and name in inputs)
            if clears_input and not is_pinned(self._history, call_index):
                self._clear_input(call_index, tool_id)

    def _fires(self, ctx: Context) -> bool:
        trigger = self.params.trigger
        if trigger.type == "tool_uses":
            return self._tool_uses > trigger.value
        return ctx.prompt_overhead + self._history_tokens > trigger.value

    def _passes_gate(self) -> bool:
        least = self.params.clear_at_least
        return least is None or self._freed >= least.value


@register("langchain_clear_tool_uses")
class LangChainClearToolUses(_ContextEditing):
    """LangChain v1 ``ContextEditingMiddleware`` + ``ClearToolUsesEdit``: once the count is strictly
    greater than ``trigger``, clear the tool results older than the newest ``keep``, oldest first,
    stopping once ``clear_at_least`` tokens are freed (when it is > 0).

    Invariants (checked by tests/properties):
    - the window keeps its length, roles, tool ids, statuses and Text blocks; a changed message has
      results holding the placeholder (kind ``placeholder``) or calls whose args are ``{}``;
    - the view is a function of the history, as the middleware's: the same edited messages as
      ``ContextEditingMiddleware.wrap_model_call`` on the whole history (differential test);
    - the newest ``keep`` tool results, calls still waiting for their result, excluded tools and
      protected messages are never changed; ``removed_count`` never changes;
    - after an edit, the count is at or below the trigger, or clearing stopped having freed
      ``clear_at_least`` tokens, or every older result is cleared, excluded, protected or has no
      call in the nearest assistant message before it;
    - once cleared, a result stays cleared on every later call of the session (the prompt overhead
      being constant);
    - ``reduce`` always raises CannotReduce and leaves the window unchanged.
    """

    source = 'LangChain 1.5.2 ContextEditingMiddleware + ClearToolUsesEdit'
    sdk = True

    Params = LangChainClearToolUsesParams
    params: LangChainClearToolUsesParams

    def __init__(self, params: LangChainClearToolUsesParams | None = None) -> None:
        super().__init__(params)
        self.placeholder_text = self.params.placeholder

    def _reset(self) -> None:
        super()._reset()
        self._last_assistant: int | None = None
        #: Index of the nearest assistant message before each user message.
        self._nearest_assistant: dict[int, int | None] = {}
        #: Every tool result of a user message, in order: (message, block, nearest assistant).
        self._candidates: list[tuple[int, int, int | None]] = []
        self._scanned = 0
        self._stopped = False
        self._count = 0

    def _names_before(self, index: int) -> dict[str, str]:
        nearest = self._nearest_assistant.get(index)
        return call_names_of(self._history[nearest]) if nearest is not None else {}

    def _cost(self, i: int, m: Message) -> int:
        if self.params.token_count_method == "model":
            return m.tokens
        return approximate_tokens(m, self._names_before(i) if m.role == "user" else {})

    def _observe(self, index: int, m: Message) -> None:
        if m.role == "assistant":
            self._last_assistant = index
        else:
            self._nearest_assistant[index] = self._last_assistant
            for k, b in enumerate(m.blocks):
                if isinstance(b, ToolResult):
                    self._candidates.append((index, k, self._last_assistant))
        self._count += self._cost(index, m)

    def _advance(self) -> None:
        p = self.params
        due = 0 if p.keep >= len(self._candidates) else len(self._candidates) - p.keep
        while not self._stopped and self._scanned < due:
            j, k, nearest = self._candidates[self._scanned]
            self._scanned += 1
            if nearest is None:
                continue
            result = self._history[j].blocks[k]
            assert isinstance(result, ToolResult)
            name = call_names_of(self._history[nearest]).get(result.tool_use_id)
            if name is None or name in p.exclude_tools or is_pinned(self._history, j):
                continue
            self._clear_result(j, k)
            if p.clear_tool_inputs and not is_pinned(self._history, nearest):
                self._clear_input(nearest, result.tool_use_id)
            if p.clear_at_least > 0 and self._freed >= p.clear_at_least:
                self._stopped = True

    def _fires(self, ctx: Context) -> bool:
        if self.params.token_count_method == "model":
            return ctx.prompt_overhead + self._count > self.params.trigger
        return self._count > self.params.trigger
