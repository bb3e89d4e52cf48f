"""The agent's fact lines: ``- key: value``, one fact a line.

The mock agent writes facts down in this one form wherever it writes them (a final answer, a hand-over
to the next agent, a summary, the project memory), and the runtime reads them back the same way (the
final answer's values are graded against the script's truth; a loaded memory's lines become remembered
facts). One writer and one reader, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["fact_line", "fact_lines", "parse_fact_line", "parse_fact_lines"]

_BULLET = "- "
_SEPARATOR = ": "


def fact_line(key: str, value: str) -> str:
    """``- key: value``; ``fact_line(key, "")`` is the start of any line stating ``key``."""
    return f"{_BULLET}{key}{_SEPARATOR}{value}"


def fact_lines(values: Mapping[str, str]) -> str:
    """One fact line per item, in order, joined by newlines."""
    return "\n".join(fact_line(k, v) for k, v in values.items())


def parse_fact_line(line: str) -> tuple[str, str] | None:
    """(key, value) of a fact line, or None for any other line. The value is everything after the first
    separator, so a value may itself hold ``": "``."""
    if line.startswith(_BULLET) and _SEPARATOR in line:
        key, value = line[len(_BULLET):].split(_SEPARATOR, 1)
        return key, value
    return None


def parse_fact_lines(text: str) -> dict[str, str]:
    """The facts stated in ``text``'s fact lines; a later line for the same key wins."""
    facts: dict[str, str] = {}
    for line in text.splitlines():
        parsed = parse_fact_line(line)
        if parsed is not None:
            facts[parsed[0]] = parsed[1]
    return facts
