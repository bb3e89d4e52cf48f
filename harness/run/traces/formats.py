"""What a trace format is to ctxbench: the `TraceFormat` value each format module declares as ``FORMAT``, and
the `Claim` its sniffer makes on a trace.

A format is a file format (its ``sniff`` and ``load`` take the file's JSON values, a `TraceText`) or a
session-directory format (they take the directory's `Path`). ``sniff`` answers whether a trace is the
format's and how strongly (a `Claim`); the format with the strongest claim reads the trace. The list of
formats, built-in and third-party, is `harness.run.traces.registry`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, Literal, TypeAlias, TypeVar

from harness.run.traces.normal import ImportedSession
from harness.run.traces.reading import TraceText

#: A format of single trace files (JSON or JSONL).
FILE: Final = "file"
#: A format of session directories (several files an agent framework writes for one session).
DIRECTORY: Final = "directory"
Kind: TypeAlias = Literal["file", "directory"]

#: What a format sniffs and loads: a file's JSON values, or a session directory.
Source = TypeVar("Source", TraceText, Path)

#: The first position of a `Claim`: a mark of the whole document, which beats a mark on its messages.
DOCUMENT_MARK = 0


@dataclass(frozen=True, order=True, slots=True)
class Claim:
    """Where in a trace a format found its first distinctive mark, as positions from the outside in; claims
    compare as tuples and the earliest wins, so a format whose mark comes first reads the trace. Two formats
    with equal claims make the trace ambiguous (a `TraceError` naming both).

    ``Claim.document(rank)`` is a mark of the whole trace (the keys of its first JSON value, the entries of a
    session directory); it beats every claim on the trace's messages (`harness.run.traces.sniffing`).
    """

    where: tuple[int, ...]

    @classmethod
    def document(cls, rank: int = 0) -> Claim:
        """A mark of the whole trace. ``rank`` orders the document marks of formats that can hold at once
        (lower wins): the built-in file formats take 0 (atif), 1 (openai-responses) and 2 (anthropic), the
        directory formats 0 (openhands) and 1 (strands); a third-party format that takes 0 and marks the same
        trace as atif or openhands makes it ambiguous instead of taking it."""
        return cls((DOCUMENT_MARK, rank))


@dataclass(frozen=True, slots=True)
class TraceFormat(Generic[Source]):
    """One trace format: its name, how a trace is recognised as one (``sniff``), read (``load``) and, when the
    format has a writer, written (``dump``)."""

    #: The name ``--format`` takes and `ImportedSession.format` holds.
    name: str
    #: `FILE` (``sniff`` and ``load`` take a `TraceText`) or `DIRECTORY` (they take the directory's `Path`).
    kind: Kind
    #: One line saying what the format is, for ``ctxbench replay --help``.
    description: str
    #: The format's own test of a trace: its `Claim`, or None when the trace is not the format's. It must not
    #: raise: a trace it cannot read is another format's, or no format's.
    sniff: Callable[[Source], Claim | None]
    #: The sessions of one trace, in normal form; `TraceError` (one line naming the file and where) otherwise.
    load: Callable[[Source], list[ImportedSession]]
    #: The session as the format writes it: a JSON value for a file format, ``{relative path: JSON text}`` for
    #: a directory format; None when the format has no writer.
    dump: Callable[[ImportedSession], Any] | None = None
    #: For a directory format, what ``sniff`` looks for in words (``events/ (OpenHands)``), as the error for a
    #: directory of no known format lists it.
    looks_for: str = ""

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.strip() or "," in self.name:
            raise ValueError(f"a trace format's name must be a non-empty word without commas, got {self.name!r}")
        if self.kind not in (FILE, DIRECTORY):
            raise ValueError(f"trace format {self.name!r}: kind must be {FILE!r} or {DIRECTORY!r}, got {self.kind!r}")
        if not callable(self.sniff) or not callable(self.load) or not (self.dump is None or callable(self.dump)):
            raise ValueError(f"trace format {self.name!r}: sniff, load and dump must be functions")
