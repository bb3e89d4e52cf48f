"""The one message type of ctxbench: Converse-style blocks with real token counts and fact visibility.

A `Message` is a frozen value. Everything beyond its role, blocks, kind, pin flag and step is
*computed* when it is built (`Message.build`, `rebuild`): its real token count, the script facts
whose values (or declared forms) occur verbatim in its text, the plan steps whose calls it shows, its
raw tool-output tokens and the error it reports. Nothing sets those by hand, so a summary, a placeholder or a stub holds
exactly the facts its text really contains.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias, cast, get_args

from harness.build import pickle_frozen_by_fields
from harness.core.stubs import parse_stub
from harness.core.tokens import MESSAGE_OVERHEAD_TOKENS, Tokenizer, default_tokenizer

Role: TypeAlias = Literal["user", "assistant"]
Kind: TypeAlias = Literal[
    "task", "action", "observation", "error", "summary", "handle", "placeholder", "nudge", "final", "text"
]
ResultStatus: TypeAlias = Literal["success", "error"]
KINDS: frozenset[str] = frozenset(get_args(Kind))


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    tool_use_id: str
    status: ResultStatus
    content: str


#: A content block of a message.
Block: TypeAlias = Text | ToolUse | ToolResult


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """What an error tool result says. ``structured`` errors are JSON objects under an ``error`` key
    (contract / engineering / fatal, docs/model.md 3.2); anything else is plain text."""

    structured: bool
    text: str
    error_class: str | None = None
    code: str | None = None
    field: str | None = None
    problem: str | None = None
    schema_hint: str | None = None
    retryable: bool | None = None
    fallback: str | None = None
    bad_arg: str | None = None


def parse_error(content: str) -> ErrorInfo:
    """What an error tool result says: the fields of a structured error (a JSON object under
    ``error``), or an unstructured ErrorInfo holding the plain text."""
    stripped = content.lstrip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(stripped)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
            err = doc["error"]

            def opt_str(key: str) -> str | None:
                value = err.get(key)
                return None if value is None else str(value)

            retryable = err.get("retryable")
            return ErrorInfo(
                structured=True,
                text=content,
                error_class=opt_str("class"),
                code=opt_str("code"),
                field=opt_str("field"),
                problem=opt_str("problem"),
                schema_hint=opt_str("schema_hint"),
                retryable=retryable if isinstance(retryable, bool) else None,
                fallback=opt_str("fallback"),
                bad_arg=opt_str("bad_arg"),
            )
    return ErrorInfo(structured=False, text=content)


class FactScanner:
    """Finds which script facts (and which decoys, the wrong values of the same shape that a
    script plants as distractors) occur verbatim in a text.

    Fact values are distinctive strings that the generators guarantee never to be substrings of one
    another or of surrounding text (docs/model.md 1), so a containment test per value is exact. For
    the few dozen facts of a script it runs at C speed and beats a Python-level regex alternation.
    """

    __slots__ = ("_calls", "_decoys", "_items", "facts")

    def __init__(self, facts: Mapping[str, str] | None = None, decoys: Iterable[str] = (),
                 forms: Mapping[str, Iterable[str]] | None = None, calls: Mapping[str, str] | None = None) -> None:
        self.facts: dict[str, str] = dict(sorted((facts or {}).items()))
        for key, value in self.facts.items():
            if not value:
                raise ValueError(f"fact {key!r} has an empty value")
        # A fact's other forms (`scenarios.base.Fact.forms`) are found like its value: a text holding
        # one holds the fact (docs/model.md v3 change 6).
        extra = tuple((key, form) for key, texts in sorted((forms or {}).items()) if key in self.facts
                      for form in texts if form)
        self._items = tuple(self.facts.items()) + extra
        self._decoys = tuple(sorted(set(decoys)))
        #: (a head, then every (call, step id) whose call starts with it): a step's call as a message shows it
        #: (`block_text` of its ToolUse: ``tool {...}``) is looked for only in a text that holds its head (the
        #: call up to its first brace), so most texts are searched for a few heads, not every call.
        grouped: dict[str, list[tuple[str, str]]] = {}
        for call, step in sorted((calls or {}).items()):
            grouped.setdefault(call[: call.find("{") + 1] or call, []).append((call, step))
        self._calls = tuple((head, tuple(group)) for head, group in sorted(grouped.items()))

    def scan(self, text: str) -> frozenset[str]:
        if not self._items or not text:
            return _NO_KEYS
        return frozenset(key for key, value in self._items if value in text)

    def scan_decoys(self, text: str) -> frozenset[str]:
        if not self._decoys or not text:
            return _NO_KEYS
        return frozenset(value for value in self._decoys if value in text)

    def scan_records(self, text: str) -> frozenset[str]:
        """The steps whose call (tool and arguments, as a message shows it) occurs in ``text``."""
        if not self._calls or not text:
            return _NO_KEYS
        return frozenset(step for head, group in self._calls if head in text for call, step in group if call in text)


_NO_KEYS: frozenset[str] = frozenset()


#: A meter's default bound on the texts it remembers.
MEMO_LIMIT = 100_000


@dataclass(frozen=True, slots=True)
class TextMeter:
    """How a session measures text: its tokenizer and the facts of its script.

    Every message remembers the meter it was built with, so `rebuild` recounts with the same one. A
    meter remembers what it measured (`measure`): a session's script replayed under ten strategies
    builds the same tool results and thoughts ten times, and each text is counted and scanned once.
    """

    tokenizer: Tokenizer
    scanner: FactScanner
    #: text -> (tokens, facts, decoys, records); cleared when it reaches ``memo_limit`` texts.
    memo: dict[str, tuple[int, frozenset[str], frozenset[str], frozenset[str]]] = field(
        default_factory=dict, compare=False, repr=False)
    #: Texts remembered at most (a script has a few thousand; the bound is for a meter shared by
    #: everything outside sessions). A field, not a class attribute: the compiled class has no settable
    #: class attributes.
    memo_limit: int = field(default=MEMO_LIMIT, compare=False, repr=False)

    @classmethod
    def for_facts(
        cls, facts: Mapping[str, str] | None = None, tokenizer: Tokenizer | None = None, decoys: Iterable[str] = (),
        forms: Mapping[str, Iterable[str]] | None = None, calls: Mapping[str, str] | None = None,
    ) -> TextMeter:
        return cls(tokenizer or default_tokenizer(), FactScanner(facts, decoys, forms, calls))

    def measure(self, text: str) -> tuple[int, frozenset[str], frozenset[str]]:
        """(tokens, facts, decoys) of ``text``: its token count and the facts and decoys it holds."""
        n, facts, decoys, _ = self.measure_all(text)
        return n, facts, decoys

    def measure_all(self, text: str) -> tuple[int, frozenset[str], frozenset[str], frozenset[str]]:
        """`measure` and the steps whose calls ``text`` shows (`FactScanner.scan_records`)."""
        hit = self.memo.get(text)
        if hit is None:
            if len(self.memo) >= self.memo_limit:
                self.memo.clear()
            scanner = self.scanner
            hit = (self.tokenizer.count(text), scanner.scan(text), scanner.scan_decoys(text),
                   scanner.scan_records(text))
            self.memo[text] = hit
        return hit


_default_meter: TextMeter | None = None


def default_meter() -> TextMeter:
    """cl100k_base and no facts: for messages outside any scripted session."""
    global _default_meter
    if _default_meter is None:
        _default_meter = TextMeter.for_facts()
    return _default_meter


def block_text(block: Block) -> str:
    """The text a block contributes to the prompt (and to token and fact counts)."""
    if isinstance(block, Text):
        return block.text
    if isinstance(block, ToolResult):
        return block.content
    return block.name + " " + json.dumps(block.input, sort_keys=True, separators=(",", ":"), default=str)


def _derived_kind(role: str, blocks: Sequence[Block]) -> Kind:
    results = [b for b in blocks if isinstance(b, ToolResult)]
    if role == "user" and results:
        if any(parse_stub(b.content) is not None for b in results):
            return "handle"
        return "error" if any(b.status == "error" for b in results) else "observation"
    if role == "assistant" and any(isinstance(b, ToolUse) for b in blocks):
        return "action"
    return "text"


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the window. Build with `Message.build`, change with `rebuild` or `pin`."""

    role: Role
    blocks: tuple[Block, ...]
    kind: Kind
    pinned: bool
    tokens: int
    facts: frozenset[str]
    raw_tokens: int
    error: ErrorInfo | None
    step_id: str | None
    meter: TextMeter = field(compare=False, repr=False)
    #: Decoy values (planted wrong values) that occur in its text.
    decoys: frozenset[str] = frozenset()
    #: Script steps whose call its text shows, with the arguments the step was done with: the call
    #: itself, or a note or a summary line that names it. Scanned like ``facts`` (`FactScanner.records`);
    #: a step whose call is visible counts as done (docs/model.md v3 change 1).
    records: frozenset[str] = frozenset()

    @classmethod
    def build(
        cls,
        role: Role,
        blocks: Iterable[Block],
        *,
        kind: Kind | None = None,
        pinned: bool = False,
        step_id: str | None = None,
        meter: TextMeter | None = None,
    ) -> Message:
        if role not in ("user", "assistant"):
            raise ValueError(f"role must be 'user' or 'assistant', got {role!r}")
        blocks = tuple(blocks)
        # Each item read as an object: compiled (setup.py), a loop over Blocks would refuse a non-block with
        # the compiler's own message before this one.
        for item in cast(tuple[object, ...], blocks):
            if not isinstance(item, Text | ToolUse | ToolResult):
                raise TypeError(f"not a message block: {item!r}")
        if kind is None:
            kind = _derived_kind(role, blocks)
        elif kind not in KINDS:
            raise ValueError(f"unknown message kind {kind!r}")
        meter = meter or default_meter()
        measure = meter.measure_all

        tokens = MESSAGE_OVERHEAD_TOKENS
        facts: set[str] = set()
        decoys: set[str] = set()
        records: set[str] = set()
        raw = 0
        error: ErrorInfo | None = None
        for block in blocks:
            text = block_text(block)
            n, in_facts, in_decoys, in_records = measure(text)
            tokens += n
            facts |= in_facts
            decoys |= in_decoys
            records |= in_records
            if isinstance(block, ToolResult):
                stub = parse_stub(block.content)
                if stub is not None:
                    raw += meter.tokenizer.count(stub.preview)
                elif kind in ("observation", "error", "handle"):
                    raw += n
                if error is None and block.status == "error":
                    error = parse_error(block.content)
        return cls(
            role=role,
            blocks=blocks,
            kind=kind,
            pinned=pinned,
            tokens=tokens,
            facts=frozenset(facts),
            raw_tokens=raw,
            error=error,
            step_id=step_id,
            meter=meter,
            decoys=frozenset(decoys),
            records=frozenset(records),
        )

    # Convenience constructors -------------------------------------------------------------------
    @classmethod
    def user(cls, text: str, *, kind: Kind | None = None, pinned: bool = False,
             meter: TextMeter | None = None) -> Message:
        return cls.build("user", (Text(text),), kind=kind, pinned=pinned, meter=meter)

    @classmethod
    def assistant(cls, text: str, *, kind: Kind | None = None, meter: TextMeter | None = None) -> Message:
        return cls.build("assistant", (Text(text),), kind=kind, meter=meter)

    # Views --------------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """All block texts joined by newlines (what a reader of the prompt sees)."""
        return "\n".join(block_text(b) for b in self.blocks)

    @property
    def uses(self) -> frozenset[str]:
        return frozenset(b.id for b in self.blocks if isinstance(b, ToolUse))

    @property
    def results(self) -> frozenset[str]:
        return frozenset(b.tool_use_id for b in self.blocks if isinstance(b, ToolResult))

    @property
    def has_use(self) -> bool:
        return any(isinstance(b, ToolUse) for b in self.blocks)

    @property
    def has_result(self) -> bool:
        return any(isinstance(b, ToolResult) for b in self.blocks)

    @property
    def tool_ids(self) -> frozenset[str]:
        """Non-empty ids of its uses and results (what pin protection compares)."""
        return frozenset(
            i
            for b in self.blocks
            for i in ((b.id,) if isinstance(b, ToolUse) else (b.tool_use_id,) if isinstance(b, ToolResult) else ())
            if i
        )


def rebuild(message: Message, blocks: Iterable[Block], kind: Kind | None = None) -> Message:
    """A new message with other blocks: same role, pin flag, step and meter; all counts recomputed."""
    return Message.build(
        message.role,
        blocks,
        kind=message.kind if kind is None else kind,
        pinned=message.pinned,
        step_id=message.step_id,
        meter=message.meter,
    )


def pin(message: Message) -> Message:
    """The same message flagged pinned (counts unchanged, nothing re-measured)."""
    return message if message.pinned else replace(message, pinned=True)


def as_summary(reply: Message) -> Message:
    """The summarizer's reply as the window's summary message (docs/strategies.md R9).

    A reply without any Text block is a summarizer failure: it raises ValueError.
    """
    texts = [b for b in reply.blocks if isinstance(b, Text)]
    if not texts:
        raise ValueError("summarizer reply contains no text")
    return Message.build("user", texts, kind="summary", pinned=False, meter=reply.meter)


def tokens_of(messages: Iterable[Message]) -> int:
    """Total tokens of ``messages`` (each message's own count, overhead included)."""
    return sum(m.tokens for m in messages)


def nonsummary(messages: Iterable[Message]) -> int:
    """How many of ``messages`` are not summaries (what a strategy's "removed" count counts)."""
    return sum(1 for m in messages if m.kind != "summary")


# Converse (Bedrock) dictionaries ---------------------------------------------------------------


def from_converse(d: Mapping[str, Any], *, meter: TextMeter | None = None) -> Message:
    """Read a Converse-style message dict.

    ``metadata.custom.pinned is True`` pins it; ``metadata.custom.kind`` and ``.step_id`` (written by
    `to_converse`) restore what plain Converse cannot say. A toolResult's content must be text items
    (joined by newlines) or json items (serialised); other block types raise ValueError naming them.
    """
    role = d.get("role")
    if role not in ("user", "assistant"):
        raise ValueError(f"message role must be 'user' or 'assistant', got {role!r}")
    blocks: list[Block] = []
    for i, item in enumerate(d.get("content", [])):
        if "text" in item:
            blocks.append(Text(str(item["text"])))
        elif "toolUse" in item:
            use = item["toolUse"]
            blocks.append(ToolUse(str(use["toolUseId"]), str(use["name"]), dict(use.get("input") or {})))
        elif "toolResult" in item:
            res = item["toolResult"]
            parts: list[str] = []
            for part in res.get("content", []):
                if "text" in part:
                    parts.append(str(part["text"]))
                elif "json" in part:
                    parts.append(json.dumps(part["json"], sort_keys=True))
                else:
                    raise ValueError(f"content[{i}].toolResult: unsupported item {sorted(part)}")
            status = res.get("status", "success")
            if status not in ("success", "error"):
                raise ValueError(f"content[{i}].toolResult.status: unknown status {status!r}")
            blocks.append(ToolResult(str(res["toolUseId"]), status, "\n".join(parts)))
        else:
            raise ValueError(f"content[{i}]: unsupported block {sorted(item)}")
    custom = (d.get("metadata") or {}).get("custom") or {}
    kind = custom.get("kind")
    step_id = custom.get("step_id")
    return Message.build(
        cast(Role, role),
        blocks,
        kind=kind,
        pinned=custom.get("pinned") is True,
        step_id=None if step_id is None else str(step_id),
        meter=meter,
    )


def to_converse(message: Message) -> dict[str, Any]:
    """The Converse dict of a message; `from_converse` reads it back to an equal message."""
    content: list[dict[str, Any]] = []
    for block in message.blocks:
        if isinstance(block, Text):
            content.append({"text": block.text})
        elif isinstance(block, ToolUse):
            content.append({"toolUse": {"toolUseId": block.id, "name": block.name, "input": dict(block.input)}})
        else:
            content.append(
                {
                    "toolResult": {
                        "toolUseId": block.tool_use_id,
                        "status": block.status,
                        "content": [{"text": block.content}],
                    }
                }
            )
    d: dict[str, Any] = {"role": message.role, "content": content}
    custom: dict[str, Any] = {}
    if message.pinned:
        custom["pinned"] = True
    if message.kind != _derived_kind(message.role, message.blocks):
        custom["kind"] = message.kind
    if message.step_id is not None:
        custom["step_id"] = message.step_id
    if custom:
        d["metadata"] = {"custom": custom}
    return d


# Compiled (setup.py), a frozen dataclass cannot restore itself from a pickle: see `harness.build`.
pickle_frozen_by_fields(globals())
