"""Persistent agent memory across the sessions of a series, as the OpenHands SDK keeps it: two layers
of MEMORY.md (the user's, then the project's), loaded into a ``<MEMORY_CONTEXT>`` block of the system
prompt at the start of each conversation within a character budget, whole lines dropped from the top
when it overflows. The agent maintains the project layer itself, one ``- key: value`` line per fact.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.tables import MEMORY_BUDGET_CHARS
from harness.sim.fact_lines import fact_line, parse_fact_line

__all__ = ["MEMORY_BUDGET_CHARS", "TRUNCATED_MARKER", "LoadedMemory", "MemoryStore"]

#: The line put first when lines were dropped to fit the budget (OpenHands SDK).
TRUNCATED_MARKER = "[earlier memory truncated]"
_OPEN, _CLOSE = "<MEMORY_CONTEXT>", "</MEMORY_CONTEXT>"


@dataclass(frozen=True, slots=True)
class LoadedMemory:
    """The block a session starts with: its text (empty when there is no memory), whether lines were
    dropped, and the ``- key: value`` lines it holds as key -> value."""

    text: str
    truncated: bool
    facts: dict[str, str]

    @property
    def chars(self) -> int:
        return len(self.text)


@dataclass(frozen=True, slots=True)
class MemoryStore:
    """The two MEMORY.md layers; immutable (`remember` returns a new store), so a saved replay pickles it."""

    user: str = ""
    project: str = ""

    def remember(self, key: str, value: str) -> MemoryStore:
        """The store with ``- key: value`` in the project layer: the key's line updated in place, or
        appended when the key has none."""
        prefix = fact_line(key, "")
        lines = self.project.splitlines()
        line = prefix + value
        for i, old in enumerate(lines):
            if old.startswith(prefix):
                lines[i] = line
                break
        else:
            lines.append(line)
        return MemoryStore(self.user, "\n".join(lines))

    def render(self, budget: int = MEMORY_BUDGET_CHARS) -> LoadedMemory:
        """The ``<MEMORY_CONTEXT>`` block: user layer then project layer (the project last, where it gets
        more attention), whole lines dropped from the top until the block fits ``budget`` characters,
        with `TRUNCATED_MARKER` first when any was dropped."""
        lines = [line for layer in (self.user, self.project) for line in layer.splitlines() if line.strip()]
        if not lines:
            return LoadedMemory("", False, {})

        def block(body: list[str], truncated: bool) -> str:
            return "\n".join([_OPEN, *([TRUNCATED_MARKER] if truncated else []), *body, _CLOSE])

        start = 0
        while start < len(lines) and len(block(lines[start:], start > 0)) > budget:
            start += 1
        kept = lines[start:]
        text = block(kept, start > 0) if kept or start == 0 else block([], True)
        facts: dict[str, str] = {}
        for line in kept:
            parsed = parse_fact_line(line)
            if parsed is not None:
                facts[parsed[0]] = parsed[1]  # a later line (the project layer) wins over an earlier one
        return LoadedMemory(text, start > 0, facts)
