"""harness.sim.fact_lines: the one form the mock agent writes facts in, read back as written."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.sim.fact_lines import fact_line, fact_lines, parse_fact_line, parse_fact_lines

#: Keys as scripts name facts; values are any single line (a value may hold ": ").
KEYS = st.text(st.characters(codec="utf-8", exclude_characters=":\n\r"), min_size=1, max_size=20).filter(
    lambda k: not any(c in k for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"))
VALUES = st.text(max_size=40).map(lambda v: "".join(v.splitlines()))


@given(KEYS, VALUES)
def test_a_fact_line_reads_back_as_written(key: str, value: str) -> None:
    assert parse_fact_line(fact_line(key, value)) == (key, value)


@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_fact_lines_read_back_as_written(values: dict[str, str]) -> None:
    assert parse_fact_lines("FINAL ANSWER\n" + fact_lines(values)) == values


def test_other_lines_are_not_facts_and_the_later_line_wins() -> None:
    assert parse_fact_line("FINAL ANSWER") is None
    assert parse_fact_line("-no bullet: x") is None
    assert parse_fact_line("- no separator") is None
    assert parse_fact_line("- url: http://host:8080/x") == ("url", "http://host:8080/x")
    assert parse_fact_lines("- pod: a\n- pod: b") == {"pod": "b"}
