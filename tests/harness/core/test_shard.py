"""The shard value type: ``K/N`` read and written back, every text ``--shard`` refuses, and the slices
of N shards partitioning the batches."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.shard import Shard, ShardError

#: Up to 18 digits: the most `Shard.parse` reads.
COUNTS = st.integers(min_value=1, max_value=10**18 - 1)


@st.composite
def shards(draw: st.DrawFn) -> Shard:
    count = draw(COUNTS)
    return Shard(draw(st.integers(min_value=1, max_value=count)), count)


@given(shards())
def test_str_and_parse_round_trip(shard: Shard) -> None:
    assert str(shard) == f"{shard.index}/{shard.count}"
    assert Shard.parse(str(shard)) == shard


@given(st.integers(min_value=0, max_value=10**6), st.integers(min_value=0, max_value=10**6))
def test_parse_takes_exactly_the_pairs_with_k_from_1_to_n(k: int, n: int) -> None:
    if 1 <= k <= n:
        assert Shard.parse(f"{k}/{n}") == Shard(k, n)
    else:
        with pytest.raises(ShardError):
            Shard.parse(f"{k}/{n}")


def test_parse_reads_leading_zeros_as_the_number() -> None:
    assert Shard.parse("01/002") == Shard(1, 2)


#: Every ``--shard`` text the hostile suite passes (tests/hostile/cases.py, cases_writers.py).
REFUSED = {
    "zero-of-two": "0/2", "k-above-n": "3/2", "of-zero": "1/0", "zero": "0/0", "letters": "abc", "a-of-b": "a/b",
    "three-parts": "1/2/3", "no-k": "/2", "no-n": "1/", "negative": "-1/2", "plus-sign": "+1/2",
    "spaces": " 1 / 2 ", "empty": "", "superscript": "\u00b9/\u00b2", "arabic-indic": "\u0661/\u0662",
    "fullwidth": "\uff11/\uff12", "devanagari": "\u0967/\u0968", "circled": "\u2460/\u2461", "mixed": "1/\u00b2",
    "fraction-slash": "1\u20442", "5000-digits": "1/" + "9" * 5000, "19-digits": "1/" + "1" * 19,
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_parse_refuses_with_the_command_lines_message(text: str) -> None:
    shown = text if len(text) <= 60 else text[:57] + "..."
    with pytest.raises(ShardError) as caught:
        Shard.parse(text)
    assert str(caught.value) == (f"--shard: expected K/N with 1 <= K <= N, got {shown!r} "
                                 "(K and N written with the digits 0-9)")
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(("index", "count"), [(0, 2), (3, 2), (1, 0), (-1, 2)])
def test_a_shard_outside_its_count_cannot_be_made(index: int, count: int) -> None:
    with pytest.raises(ShardError, match=f"got '{index}/{count}'"):
        Shard(index, count)


def test_a_shard_is_frozen_and_slotted() -> None:
    shard = Shard(1, 2)
    with pytest.raises(AttributeError):
        shard.index = 2  # type: ignore[misc]
    assert not hasattr(shard, "__dict__")


@given(st.integers(min_value=0, max_value=60), st.integers(min_value=1, max_value=9))
def test_the_shards_of_n_partition_the_batches(batches: int, n: int) -> None:
    items = list(range(batches))
    slices = [Shard(k, n).select(items) for k in range(1, n + 1)]
    # Every batch in exactly one shard, each shard in plan order, the shards' sizes within one of each other.
    assert sorted(b for s in slices for b in s) == items
    assert all(s == sorted(s) for s in slices)
    assert max(map(len, slices)) - min(map(len, slices)) <= 1
    assert Shard(1, 1).select(items) == items
