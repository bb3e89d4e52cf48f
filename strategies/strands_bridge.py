"""Bridges between ctxbench strategies and strands-agents' conversation managers, both ways.

- `as_strands_manager` wraps any ctxbench strategy as a strands ``ConversationManager``, so a real
  ``strands.Agent`` can run it on ``agent.messages``.
- `StrandsManagerStrategy` (``strands_manager``) runs any strands conversation manager on the ctxbench
  window, so ``ctxbench run`` can replay sessions under strands' own managers.

strands is an optional dependency (``pip install 'ctxbench[strands]'``): only the functions and classes
that need it import it, so importing this module (which registers ``strands_manager``) never does.
The offline pieces both directions share (the stand-in agent, a model that replies with one text, the
reactive loop) are public here: the parity tests drive strands' managers with them too. `offline_model`
is a whole strands ``Model`` that needs no provider, to try a managed agent without one.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationInfo, field_validator

from harness.core import Context, Message
from harness.core.context import Summarizer
from harness.core.messages import Text, TextMeter, from_converse, pin, to_converse
from strategies.base import CannotReduce, ContextStrategy, StrategyParams, commit, register

if TYPE_CHECKING:
    from strands.agent.conversation_manager import ConversationManager
    from strands.hooks import HookRegistry

logger = logging.getLogger(__name__)

#: A Converse (Bedrock) message dict, the shape of ``strands.Agent.messages``.
Converse = dict[str, Any]

INSTALL_HINT = "needs strands-agents (pip install 'ctxbench[strands]')"
#: strands 1.62 appends this request to the messages it asks a model to summarize
#: (``compression.context_compression.generate_summary``); it is not part of the conversation.
SUMMARY_REQUEST = "Please summarize this conversation."
#: The reactive loop gives up after this many manager calls that change the list without lowering its
#: tokens (each such call truncates one more result; a history rarely holds more).
MAX_REACTIVE_CALLS = 1000
#: The conversation managers strands 1.62 exports (``strands.agent.conversation_manager``).
STRANDS_MANAGERS = ("NullConversationManager", "SlidingWindowConversationManager", "SummarizingConversationManager")


def require_strands() -> None:
    """Raise ImportError with the install hint when strands-agents is missing."""
    try:
        importlib.import_module("strands")
    except ImportError as e:
        raise ImportError(f"ctxbench's strands bridge {INSTALL_HINT}") from e


# Converse helpers shared by both directions -------------------------------------------------------------


def without_bookkeeping(d: Mapping[str, Any]) -> Converse:
    """The message as a model sees it: without ``metadata`` and ``tracking_id`` (strands strips both
    before a model call)."""
    return {k: v for k, v in d.items() if k not in ("metadata", "tracking_id")}


def pinned_flag(d: Mapping[str, Any]) -> bool:
    """Whether a Converse dict carries strands' pin flag, ``metadata.custom.pinned is True``."""
    return ((d.get("metadata") or {}).get("custom") or {}).get("pinned") is True


def converse_tokens(messages: Iterable[Mapping[str, Any]], meter: TextMeter | None = None) -> int:
    """ctxbench's token count of Converse dicts (what `Context.tokens` would say about them)."""
    return sum(read_converse(d, meter).tokens for d in messages)


def read_converse(d: Mapping[str, Any], meter: TextMeter | None = None) -> Message:
    """`from_converse`, tolerating what a real agent's history may hold and ctxbench cannot represent:
    a block other than text, toolUse or toolResult (reasoning, image, document, ...) and a toolResult
    item other than text or json are read as a short ``[<kind>]`` text, so a strategy can count and
    move them; they are only lost if the strategy rewrites that very block."""
    content = d.get("content") or []
    supported = all(
        ("text" in b or "toolUse" in b or "toolResult" in b)
        and all("text" in i or "json" in i for i in (b.get("toolResult") or {}).get("content", []))
        for b in content
    )
    if not supported:
        d = {**d, "content": [_readable_block(b) for b in content]}
    return from_converse(d, meter=meter)


def _readable_block(block: Mapping[str, Any]) -> Converse:
    if "text" in block or "toolUse" in block:
        return dict(block)
    if "toolResult" in block:
        result = block["toolResult"]
        items = [i if "text" in i or "json" in i else {"text": f"[{next(iter(i), 'item')}]"}
                 for i in result.get("content", [])]
        return {"toolResult": {**result, "content": items}}
    return {"text": f"[{next(iter(block), 'block')}]"}


def reply_events(text: str) -> list[dict[str, Any]]:
    """The stream events of a model reply holding one text block (strands' ``StreamEvent`` shapes)."""
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": text}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


def tool_use_events(tool_use_id: str, name: str, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stream events of a model reply that is one tool call (strands' ``StreamEvent`` shapes)."""
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": tool_use_id, "name": name}}}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(dict(arguments))}}}},
        {"contentBlockStop": {}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]


class TextReplyModel:
    """The part of a strands ``Model`` a conversation manager uses to summarize: an async ``stream``
    whose reply is the one text `reply` returns for the messages it was given. Subclass and override
    `reply` (an error raised there surfaces while the manager reads the stream, as a model's would)."""

    def reply(self, messages: list[Converse]) -> str:
        raise NotImplementedError

    async def stream(
        self,
        messages: list[Converse],
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[dict[str, Any]]:
        for event in reply_events(self.reply(list(messages))):
            yield event


@dataclass
class StandInAgent:
    """What strands' conversation managers read from an agent, offline: ``messages``, the
    ``aux_model`` a summary asks, and a ``model`` for proactive compression's utilization estimate."""

    messages: list[Converse]
    aux_model: Any = None
    model: Any = None


def reduce_until_smaller(manager: ConversationManager, agent: Any, overflow: Exception) -> None:
    """Call ``manager.reduce_context(agent, e=overflow)`` until the history's tokens drop below what
    they were, a call changes nothing, or a call raises (which propagates).

    strands' agent does the same by retrying the model call after each reduction: one truncation may
    leave the tokens as they were (a 401-446-char result grows under it), and the next call trims.
    """
    start = converse_tokens(agent.messages)
    for _ in range(MAX_REACTIVE_CALLS):
        before = copy.deepcopy([without_bookkeeping(d) for d in agent.messages])
        manager.reduce_context(agent, e=overflow)
        if converse_tokens(agent.messages) < start:
            return
        if [without_bookkeeping(d) for d in agent.messages] == before:
            return


def _run_coroutine(make: Callable[[], Any]) -> Any:
    """Run a coroutine to completion from synchronous code that may itself be inside an event loop
    (a conversation manager's hooks run on the agent's loop): on a thread of its own, as strands does."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def _strip_summary_request(messages: list[Converse]) -> list[Converse]:
    last = messages[-1] if messages else None
    if last is not None and last.get("role") == "user" and last.get("content") == [{"text": SUMMARY_REQUEST}]:
        return messages[:-1]
    return messages


def _summary_text(reply: Message) -> str:
    texts = [b.text for b in reply.blocks if isinstance(b, Text)]
    if not texts:
        raise ValueError("summarizer reply contains no text")
    return "\n".join(texts)


# ctxbench window -> strands manager ---------------------------------------------------------------------


class _WindowView:
    """The ctxbench window as fresh Converse dicts for one manager call, and the way back.

    A dict the manager kept (the same object, the same content list) reads back as the same
    `Message`, pinned if the manager pinned it; a dict it rewrote in place (strands' truncation
    replaces ``content``) is read again; a dict it made is its summary (role user, text only, kind
    ``summary``), unless it equals a message of the window (a manager that copies).
    """

    def __init__(self, ctx: Context) -> None:
        self.messages = list(ctx.messages)
        self.dicts = [to_converse(m) for m in self.messages]
        self._by_id = {id(d): (d, d["content"], m) for d, m in zip(self.dicts, self.messages, strict=True)}
        self._by_text: dict[str, Message] | None = None
        self.meter = self.messages[0].meter if self.messages else None

    def message_for(self, d: Converse) -> Message:
        known = self._by_id.get(id(d))
        if known is not None:
            _, content, m = known
            if d.get("content") is content and d.get("role") == m.role:
                return pin(m) if pinned_flag(d) else m
            return read_converse(d, m.meter)
        if self._by_text is None:
            self._by_text = {_canonical(to_converse(m)): m for m in self.messages}
        same = self._by_text.get(_canonical(d))
        if same is not None:
            return pin(same) if pinned_flag(d) else same
        m = read_converse(d, self.meter)
        if m.role == "user" and m.blocks and all(isinstance(b, Text) for b in m.blocks):
            return Message.build("user", m.blocks, kind="summary", meter=m.meter)
        return m

    def read_back(self, dicts: Iterable[Converse]) -> list[Message]:
        return [self.message_for(d) for d in dicts]

    def keep_pins(self, ctx: Context) -> None:
        """R4: pins a failed manager call set stay, though nothing else of the call is committed."""
        flagged = {id(self._by_id[id(d)][2]) for d in self.dicts if pinned_flag(d)}
        for i, m in enumerate(ctx.messages):
            if not m.pinned and id(m) in flagged:
                ctx.messages[i] = pin(m)

    def changed(self, new: list[Message]) -> bool:
        return len(new) != len(self.messages) or any(a is not b for a, b in zip(new, self.messages, strict=True))


def _canonical(d: Mapping[str, Any]) -> str:
    return json.dumps(without_bookkeeping(d), sort_keys=True, default=str)


class _ContextSummaryModel(TextReplyModel):
    """A manager's summary request answered by the ctxbench context's summarizer (one model call the
    runtime bills), given the window's own messages where the manager passed them through."""

    def __init__(self, ctx: Context, view: _WindowView) -> None:
        self.ctx = ctx
        self.view = view

    def reply(self, messages: list[Converse]) -> str:
        conversation = [self.view.message_for(d) for d in _strip_summary_request(messages)]
        return _summary_text(self.ctx.summarize(conversation))


@dataclass
class _WindowModel:
    """The stand-in's ``model``: utilization against the context's window (strands' proactive check)."""

    ctx: Context
    context_window_limit: int = field(init=False)

    def __post_init__(self) -> None:
        self.context_window_limit = self.ctx.window_tokens

    def estimate_utilization(self, input_tokens: int) -> float:
        return input_tokens / self.ctx.window_tokens


def _strands_manager_class(spec: str) -> type[ConversationManager]:
    """The manager class ``spec`` names: one of `STRANDS_MANAGERS`, or ``"module:Class"``."""
    require_strands()
    from strands.agent import conversation_manager as managers
    from strands.agent.conversation_manager import ConversationManager

    if ":" in spec:
        module_name, _, class_name = spec.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"cannot import {spec!r}: {e}") from None
    elif spec in STRANDS_MANAGERS:
        found = getattr(managers, spec)
    else:
        raise ValueError(f"unknown strands manager {spec!r}; expected one of {', '.join(STRANDS_MANAGERS)} "
                         "or 'module:Class'")
    if not (isinstance(found, type) and issubclass(found, ConversationManager)):
        raise ValueError(f"{spec!r} is not a strands ConversationManager subclass")
    return found


class StrandsManagerParams(StrategyParams):
    #: One of strands' exported manager classes, or ``"module:Class"`` for a ConversationManager of your own.
    # The defaults are validated too, so that a config naming this strategy without strands installed
    # is refused as a param error (one line), like any other.
    manager: str = Field("SlidingWindowConversationManager", validate_default=True)
    #: The manager's constructor keyword arguments (strands' own defaults for the rest).
    options: dict[str, Any] = Field(default_factory=dict, validate_default=True)

    @field_validator("manager")
    @classmethod
    def _known_manager(cls, value: str) -> str:
        try:
            _strands_manager_class(value)
        except ImportError as e:  # a config naming this strategy without strands installed: one line
            raise ValueError(str(e)) from None
        return value

    @field_validator("options")
    @classmethod
    def _manager_accepts(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        spec = info.data.get("manager")
        if spec is None:  # the manager itself was refused; that error names it
            return value
        try:
            _strands_manager_class(spec)(**value)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{spec} refuses these options: {e}") from None
        return value


@contextmanager
def _strands_warnings_quiet() -> Iterator[None]:
    """strands logs a warning each time a manager cannot trim ("all messages in trim range are pinned").
    Replayed thousands of times, those are outcomes the tables count, not news for the person running
    ctxbench: the ``strands`` logger is raised to ERROR for the call and restored after it."""
    log = logging.getLogger("strands")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


@register("strands_manager")
class StrandsManagerStrategy(ContextStrategy):
    """A strands-agents conversation manager, run on the ctxbench window.

    Each hook hands the manager a stand-in agent whose ``messages`` are the window as Converse dicts
    (pins as ``metadata.custom.pinned``), reads the result back and commits it (`commit`):
    ``apply`` -> ``apply_management``; ``before_call`` -> the manager's ``BeforeModelCallEvent`` hooks
    (per_turn, proactive compression measured as ``ctx.prompt_tokens / ctx.window_tokens``);
    ``reduce`` -> ``reduce_context``. A summary the manager asks for is one ``ctx.summarize`` call.

    Invariants (the rules of docs/strategies.md 1.4, whatever the manager does):
    - R2: ``reduce`` lowers the tokens or raises CannotReduce with the window unchanged (pins aside).
      A reactive reduce repeats ``reduce_context(e)`` as strands' agent would (`reduce_until_smaller`);
      a manager that raises, changes nothing or leaves as many tokens is a CannotReduce (a summary that
      did not shrink is rolled back: the manager's own state has moved on, as it has in strands);
    - R3: ``apply`` and ``before_call`` never raise; a failed call commits nothing but its pins (R4);
    - R5: ``removed_count`` counts the non-summary messages that left, by kind (not the manager's
      ``removed_message_count``, which strands 1.62 raises before a summary can fail);
    - messages the manager keeps are the window's own objects, so pinned ones are unchanged.
    With SlidingWindowConversationManager (``should_truncate_results=False``) it matches
    ``sliding_window`` exactly (docs/strategies.md 5); with truncation, ``truncate_then_slide``.
    """

    source = "strands-agents 1.62.0 ConversationManager (agent/conversation_manager/)"
    sdk = True

    Params = StrandsManagerParams
    params: StrandsManagerParams

    def __init__(self, params: StrandsManagerParams | None = None) -> None:
        super().__init__(params)
        #: The strands manager (typed loosely: its hooks get a stand-in agent, not a strands Agent).
        self.manager: Any = _strands_manager_class(self.params.manager)(**self.params.options)
        self._registry: HookRegistry | None = None

    def _call(self, ctx: Context, call: Callable[[StandInAgent], None]) -> tuple[_WindowView, StandInAgent]:
        view = _WindowView(ctx)
        agent = StandInAgent(view.dicts, aux_model=_ContextSummaryModel(ctx, view), model=_WindowModel(ctx))
        try:
            with _strands_warnings_quiet():
                call(agent)
        except BaseException:
            view.keep_pins(ctx)
            raise
        return view, agent

    def _best_effort(self, ctx: Context, call: Callable[[StandInAgent], None]) -> None:
        try:
            view, agent = self._call(ctx, call)
        except Exception:  # R3: per-turn management never fails the session; pins were kept
            logger.debug("strands manager hook failed", exc_info=True)
            return
        new = view.read_back(agent.messages)
        if view.changed(new):
            commit(ctx, new)

    def apply(self, ctx: Context) -> None:
        """``apply_management`` after each turn."""
        self._best_effort(ctx, self.manager.apply_management)

    def before_call(self, ctx: Context) -> None:
        """The manager's ``BeforeModelCallEvent`` callbacks (per_turn, proactive compression)."""
        from strands.hooks import BeforeModelCallEvent, HookRegistry

        if self._registry is None:
            self._registry = HookRegistry()
            self.manager.register_hooks(self._registry)
        registry = self._registry

        def fire(agent: StandInAgent) -> None:
            event = BeforeModelCallEvent(agent=agent, projected_input_tokens=ctx.prompt_tokens)  # type: ignore[arg-type]
            registry.invoke_callbacks(event)

        self._best_effort(ctx, fire)

    def reduce(self, ctx: Context, overflow: BaseException | None = None) -> None:
        """``reduce_context``, repeated while reactive until the tokens drop (R2)."""
        from strands.types.exceptions import ContextWindowOverflowException

        error: ContextWindowOverflowException | None = None
        if isinstance(overflow, ContextWindowOverflowException):
            error = overflow
        elif overflow is not None:
            error = ContextWindowOverflowException(str(overflow))
            error.__cause__ = overflow
        manager = self.manager

        def call(agent: StandInAgent) -> None:
            if error is None:
                manager.reduce_context(agent)
            else:
                reduce_until_smaller(manager, agent, error)

        try:
            view, agent = self._call(ctx, call)
        except Exception as e:
            raise CannotReduce(str(e) or type(e).__name__) from e
        new = view.read_back(agent.messages)
        if sum(m.tokens for m in new) >= ctx.tokens:
            view.keep_pins(ctx)
            raise CannotReduce(f"{type(manager).__name__} did not lower the context's tokens") from overflow
        commit(ctx, new)


# ctxbench strategy -> strands agent ---------------------------------------------------------------------


def as_strands_manager(
    strategy: ContextStrategy, *, window_tokens: int = 200_000, summarizer: Summarizer | None = None
) -> ConversationManager:
    """A strands ``ConversationManager`` that runs ``strategy`` on a strands agent's ``agent.messages``.

    ``window_tokens`` is the model window the strategy's proactive triggers measure against. Summarizing
    strategies (summarize, condense, hybrid, ...) call ``summarizer`` (messages -> reply `Message`); by
    default they ask the agent's own model (``agent.aux_model``, which is ``agent.model`` unless set),
    with strands' summarization prompt, as strands' SummarizingConversationManager does: the agent
    already holds a model that can read its history, so nothing else needs configuring.

    Give each agent its own manager (one strategy instance holds one session's state, as in ctxbench).
    A strategy that needs extra tools (``strategy.tools``, e.g. offload_contracts' ``retrieve_payload``)
    needs them on the agent too; this bridge does not add them.
    See `CtxbenchConversationManager` for how the hooks map.
    """
    cls = _ctxbench_manager_class()
    return cls(strategy, window_tokens=window_tokens, summarizer=summarizer)


class _AgentWindow:
    """The half of `CtxbenchConversationManager` that needs no strands import: the ctxbench `Context`
    kept in step with ``agent.messages``, read from it and written back to it.

    It is a base class of the manager (first in its bases, so its methods resolve as if defined there);
    the strands hooks in `_ctxbench_manager_class` call it.
    """

    strategy: ContextStrategy
    window_tokens: int
    _summarizer: Summarizer | None
    _agent: Any
    ctx: Context
    #: Per window position: the agent's dict, its content list as last seen, the window's message
    #: if it is still the dict's reading (None after on_append rewrote it), and that reading.
    _mirror: list[tuple[Converse, Any, Message | None, Message]]
    _adopt: bool
    _turn_ended: bool
    #: Set by strands' ``ConversationManager.__init__``; grows with the strategy's ``removed_count``.
    removed_message_count: int

    def _reset(self) -> None:
        """Start an empty window (at construction and after a session restore)."""
        self.ctx = Context(window_tokens=self.window_tokens, summarizer=self._summarize)
        self._mirror = []
        self._adopt = False
        self._turn_ended = False

    # Keeping the window in step with agent.messages -------------------------------------------

    def _bind(self, agent: Any) -> None:
        """Remember the first agent seen; one strategy instance holds one session, so refuse a second."""
        if self._agent is None:
            self._agent = agent
        elif self._agent is not agent:
            raise ValueError("this CtxbenchConversationManager already manages another agent; "
                             "give each agent its own (as_strands_manager(create(...)))")

    def _sync(self, agent: Any) -> None:
        """Bring the window up to ``agent.messages``: the unchanged prefix stays, the rest is read
        (through ``on_append``, except right after a session restore)."""
        self._bind(agent)
        ctx, messages = self.ctx, agent.messages
        same = 0
        for (d, content, _, _), m, now in zip(self._mirror, ctx.messages, messages, strict=False):
            if not (now is d and now.get("content") is content and pinned_flag(now) == m.pinned):
                break
            same += 1
        if same < len(ctx.messages):  # the agent's history was edited outside this manager
            del ctx.messages[same:]
        del self._mirror[same:]
        for d in messages[same:]:
            read = read_converse(d)
            m = read if self._adopt else self.strategy.on_append(ctx, read)
            self._turn_ended = self._turn_ended or (not self._adopt and m.role == "assistant")
            ctx.messages.append(m)
            self._mirror.append((d, d.get("content"), m if m is read else None, read))
        self._adopt = False

    def _write_back(self, agent: Any) -> None:
        """Write the window to ``agent.messages`` in place, reusing the agent's dicts."""
        kept = {id(m): d for d, _, m, _ in self._mirror if m is not None}
        by_ids: dict[tuple[str, frozenset[str]], Converse] | None = None
        new: list[Converse] = []
        for m in self.ctx.messages:
            d = kept.get(id(m))
            if d is None:
                if by_ids is None:  # built only when the strategy made or rewrote a message
                    by_ids = {(read.role, read.tool_ids): d for d, _, _, read in self._mirror}
                d = _merged(by_ids.get((m.role, m.tool_ids)) if m.tool_ids else None, m)
            elif m.pinned and not pinned_flag(d):
                d.setdefault("metadata", {}).setdefault("custom", {})["pinned"] = True
            new.append(d)
        if len(new) != len(agent.messages) or any(a is not b for a, b in zip(new, agent.messages, strict=True)):
            agent.messages[:] = new
        self._mirror = [(d, d.get("content"), m, m) for d, m in zip(new, self.ctx.messages, strict=True)]

    def _track(self, agent: Any, hook: Callable[[], None]) -> None:
        """Run a strategy hook, then write the window back and count what it removed, even if it raised."""
        before = self.ctx.removed_count
        try:
            hook()
        finally:
            self._write_back(agent)
            self.removed_message_count += self.ctx.removed_count - before

    def _summarize(self, messages: list[Message]) -> Message:
        """The window's summarizer: the one given, else the agent's own model with strands' prompt."""
        if self._summarizer is not None:
            return self._summarizer(messages)
        from strands.agent.conversation_manager.compression.context_compression import generate_summary

        model = getattr(self._agent, "aux_model", None) or self._agent.model
        conversation: list[Any] = [without_bookkeeping(to_converse(m)) for m in messages]
        reply = _run_coroutine(lambda: generate_summary(conversation, model))
        return read_converse(reply)


@cache
def _ctxbench_manager_class() -> type[Any]:
    """`CtxbenchConversationManager`, built on first use: its base class comes from the optional strands."""
    require_strands()
    from strands.agent.conversation_manager import ConversationManager
    from strands.hooks import BeforeModelCallEvent
    from strands.hooks import HookRegistry as Registry
    from strands.types.exceptions import ContextWindowOverflowException

    class CtxbenchConversationManager(_AgentWindow, ConversationManager):
        """A ctxbench strategy as a strands conversation manager.

        The manager keeps a ctxbench `Context` in step with ``agent.messages``: messages the agent
        appended since the last hook go through ``strategy.on_append``; the strategy's result is
        written back in place (``agent.messages[:] = ...``), each kept message as the agent's own dict
        (tracking id, metadata and blocks ctxbench cannot represent stay), a rewritten one with only
        its changed blocks replaced, a new one (a summary) with a fresh tracking id.

        Hooks, in ctxbench's order (docs/strategies.md 1.2):
        - before each model call (``BeforeModelCallEvent``): ``strategy.apply`` if a turn ended since
          the last apply (ctxbench applies after every turn; strands' apply_management runs only at the
          end of an invocation), then ``strategy.before_call`` (proactive triggers, per_turn, condense);
        - ``apply_management`` (end of each invocation): ``strategy.apply``;
        - ``reduce_context(agent, e)``: ``strategy.reduce(ctx, overflow=e)``; a CannotReduce becomes
          strands' ContextWindowOverflowException when reactive (strands' own managers raise it too);
          without ``e`` (proactive) it is logged and the call proceeds.
        ``removed_message_count`` grows with the strategy's ``removed_count``. ``get_state`` holds the
        strategy's name, params and scalar state (counters, pin-once flags); after
        ``restore_from_session`` the next hook adopts the agent's messages as they are.
        """

        def __init__(
            self, strategy: ContextStrategy, *, window_tokens: int = 200_000, summarizer: Summarizer | None = None
        ) -> None:
            super().__init__()
            self.strategy = strategy
            self.window_tokens = window_tokens
            self._summarizer = summarizer
            self._agent: Any = None
            self._reset()

        # strands' interface -----------------------------------------------------------------------

        def register_hooks(self, registry: Registry, **kwargs: Any) -> None:
            super().register_hooks(registry, **kwargs)
            registry.add_callback(BeforeModelCallEvent, self._before_model_call)

        def _before_model_call(self, event: BeforeModelCallEvent) -> None:
            agent = event.agent
            self._sync(agent)

            def hook() -> None:
                if self._turn_ended:
                    self.strategy.apply(self.ctx)
                    self._turn_ended = False
                self.strategy.before_call(self.ctx)

            self._track(agent, hook)

        def apply_management(self, agent: Any, **kwargs: Any) -> None:
            self._sync(agent)

            def hook() -> None:
                self.strategy.apply(self.ctx)
                self._turn_ended = False

            self._track(agent, hook)

        def reduce_context(self, agent: Any, e: Exception | None = None, **kwargs: Any) -> None:
            self._sync(agent)
            try:
                self._track(agent, lambda: self.strategy.reduce(self.ctx, overflow=e))
            except CannotReduce as failure:
                if e is not None:
                    raise ContextWindowOverflowException(str(failure)) from e
                logger.debug("proactive reduction failed, the model call proceeds: %s", failure)

        def get_state(self) -> dict[str, Any]:
            return {
                **super().get_state(),
                "strategy": self.strategy.name,
                "params": self.strategy.params.model_dump(mode="json"),
                "strategy_state": _scalar_state(self.strategy),
            }

        def restore_from_session(self, state: dict[str, Any]) -> list[Any] | None:
            super().restore_from_session(state)
            if state.get("strategy") != self.strategy.name:
                raise ValueError(f"conversation manager state is for strategy {state.get('strategy')!r}, "
                                 f"not {self.strategy.name!r}")
            for key, value in (state.get("strategy_state") or {}).items():
                if key in _scalar_state(self.strategy):
                    setattr(self.strategy, key, value)
            self._reset()
            self._adopt = True
            return None

    return CtxbenchConversationManager


# An offline strands model ------------------------------------------------------------------------------


def offline_model(*calls: tuple[str, Mapping[str, Any]], answer: str = "Done.",
                  window_tokens: int | None = None) -> Any:
    """A strands ``Model`` that runs offline, to try a managed ``strands.Agent`` without a model provider.

    To each user prompt it replies with the tool ``calls`` ((tool name, input) pairs), one per model call
    and in order, then with the text ``answer``; strands' summary request (a summarizing manager's) gets a
    short summary naming how many messages it read. Each reply is decided from the messages it is sent (the
    tool results since the last prompt), so a history that a manager shortened gets the same replies. With
    ``window_tokens``, messages of more tokens than that (counted as the bridge counts them) raise strands'
    ``ContextWindowOverflowException``, as a provider's model does, so the manager's ``reduce`` runs.
    Needs strands installed; the class is `OfflineModel`. For example
    ``Agent(model=offline_model(("read_log", {"chunk": 1}), answer="all clear"), tools=[read_log])``.
    """
    return _offline_model_class()(calls, answer, window_tokens=window_tokens)


def _results_since_prompt(messages: Iterable[Mapping[str, Any]]) -> int:
    """The user messages holding tool results after the last one holding a prompt (text, no result)."""
    results = 0
    for m in reversed(list(messages)):
        if m.get("role") != "user":
            continue
        content = m.get("content") or []
        if any("toolResult" in block for block in content):
            results += 1
        elif any("text" in block for block in content):
            break
    return results


def _is_summary_request(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "user" and [b.get("text") for b in message.get("content") or []] == [SUMMARY_REQUEST]


@cache
def _offline_model_class() -> type[Any]:
    require_strands()
    from strands.models.model import Model
    from strands.types.exceptions import ContextWindowOverflowException

    class OfflineModel(Model):
        """A strands model that needs no provider: see `offline_model`. ``requests`` counts its calls."""

        def __init__(self, calls: Iterable[tuple[str, Mapping[str, Any]]] = (), answer: str = "Done.", *,
                     window_tokens: int | None = None) -> None:
            self.calls = [(name, dict(arguments)) for name, arguments in calls]
            self.answer = answer
            self.window_tokens = window_tokens
            self.requests = 0
            self.config: dict[str, Any] = {"model_id": "offline"}

        def update_config(self, **model_config: Any) -> None:
            self.config.update(model_config)

        def get_config(self) -> dict[str, Any]:
            return self.config

        async def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None,
                                    **kwargs: Any) -> AsyncGenerator[Any, None]:
            raise NotImplementedError("the offline model has no structured output")
            yield  # an async generator, as strands' interface has it

        async def stream(  # type: ignore[override]  # strands' typed events; these are their dict shapes
            self, messages: list[Converse], tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any
        ) -> AsyncIterator[dict[str, Any]]:
            self.requests += 1
            if self.window_tokens is not None and converse_tokens(messages) > self.window_tokens:
                raise ContextWindowOverflowException(f"the prompt exceeds the {self.window_tokens:,}-token window")
            for event in self.reply(list(messages)):
                yield event

        def reply(self, messages: list[Converse]) -> list[dict[str, Any]]:
            """The stream events answering ``messages``."""
            if messages and _is_summary_request(messages[-1]):
                return reply_events(f"Summary of the {len(messages) - 1} messages before this request.")
            done = _results_since_prompt(messages)
            if done < len(self.calls):
                name, arguments = self.calls[done]
                return tool_use_events(f"{name}-{self.requests}", name, arguments)
            return reply_events(self.answer)

    return OfflineModel


def __getattr__(name: str) -> Any:
    # The manager class subclasses strands' ConversationManager, and the model strands' Model, so they exist
    # only once strands is imported.
    if name == "CtxbenchConversationManager":
        return _ctxbench_manager_class()
    if name == "OfflineModel":
        return _offline_model_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _scalar_state(strategy: ContextStrategy) -> dict[str, Any]:
    """The strategy's JSON-scalar instance state (counters, flags): what a session can persist."""
    return {k: v for k, v in vars(strategy).items()
            if k != "params" and (v is None or type(v) in (bool, int, float, str))}


def _merged(original: Converse | None, m: Message) -> Converse:
    """The Converse dict of a message a strategy made: a rewrite of ``original`` (same role and tool
    ids) keeps the original's tracking id, metadata and every block the rewrite left alone."""
    new = to_converse(m)
    if original is None:
        # The agent gives every message it appends a tracking id; a summary bypasses the append.
        new["tracking_id"] = str(uuid.uuid4())
        return new
    old_content = original.get("content", [])
    content = new["content"]
    if len(old_content) == len(content):
        content = [old if _same_block(m.role, old, fresh) else fresh
                   for old, fresh in zip(old_content, content, strict=True)]
    merged = {k: v for k, v in original.items() if k not in ("content", "metadata")}
    custom = {**((original.get("metadata") or {}).get("custom") or {}),
              **((new.get("metadata") or {}).get("custom") or {})}
    metadata = {**(original.get("metadata") or {}), "custom": custom} if custom else original.get("metadata")
    merged["content"] = content
    if metadata:
        merged["metadata"] = metadata
    return merged


def _same_block(role: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two Converse blocks read as the same ctxbench block."""
    return read_converse({"role": role, "content": [a]}).blocks == read_converse({"role": role, "content": [b]}).blocks
