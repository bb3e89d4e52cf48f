"""`scenarios.draws`: seeded streams that are reproducible, independent per child, and shaped as
documented (inclusive integer bounds, token alphabets, lognormal medians)."""

from __future__ import annotations

import math
import statistics

import pytest

from scenarios.draws import BASE32, HEX, Draws, derive_seed


def _stream(draws: Draws, n: int = 50) -> list[float]:
    return [draws.uniform() for _ in range(n)]


def test_same_seed_gives_the_same_stream() -> None:
    a, b = Draws(1234), Draws(1234)
    assert _stream(a) == _stream(b)
    assert [a.integer(0, 99) for _ in range(20)] == [b.integer(0, 99) for _ in range(20)]
    assert a.token(16) == b.token(16)
    assert a.lognormal(10, 1) == b.lognormal(10, 1)


def test_different_seeds_give_different_streams() -> None:
    assert _stream(Draws(1)) != _stream(Draws(2))


def test_child_stream_depends_only_on_parent_seed_and_name() -> None:
    parent_a, parent_b = Draws(77), Draws(77)
    _stream(parent_a, 13)  # draws on the parent before making the child must not matter
    assert _stream(parent_a.child("turns")) == _stream(parent_b.child("turns"))
    assert _stream(Draws(77).child("turns")) != _stream(Draws(77).child("clock"))
    assert _stream(Draws(77).child("a", 1)) != _stream(Draws(77).child("a", 2))


def test_child_streams_are_independent_of_sibling_draws() -> None:
    reference = _stream(Draws(5).child("explore"))
    parent = Draws(5)
    sibling = parent.child("clock")
    _stream(sibling, 500)
    assert _stream(parent.child("explore")) == reference


def test_making_a_child_does_not_advance_the_parent() -> None:
    reference = _stream(Draws(9))
    parent = Draws(9)
    _stream(parent.child("x"), 10)
    assert _stream(parent) == reference


def test_integer_bounds_are_inclusive() -> None:
    d = Draws(3)
    seen = {d.integer(3, 7) for _ in range(2000)}
    assert seen == {3, 4, 5, 6, 7}
    assert all(d.integer(5, 5) == 5 for _ in range(10))
    negative = {d.integer(-2, 0) for _ in range(500)}
    assert negative == {-2, -1, 0}


def test_integer_rejects_an_empty_range() -> None:
    with pytest.raises(ValueError, match="empty range"):
        Draws(0).integer(5, 4)


@pytest.mark.parametrize("n", [0, 1, 4, 10, 11, 32, 100])
@pytest.mark.parametrize("alphabet", [BASE32, HEX], ids=["base32", "hex"])
def test_token_has_requested_length_and_alphabet(n: int, alphabet: str) -> None:
    d = Draws(n)
    for _ in range(50):
        token = d.token(n, alphabet)
        assert len(token) == n
        assert set(token) <= set(alphabet)


@pytest.mark.parametrize("alphabet", [BASE32, HEX, "abc"], ids=["base32", "hex", "non-power-of-two"])
def test_token_uses_the_whole_alphabet(alphabet: str) -> None:
    d = Draws(11)
    chars = "".join(d.token(8, alphabet) for _ in range(400))
    assert set(chars) == set(alphabet)
    # Roughly uniform: every character within a factor 2 of its expected count (3200 chars).
    expected = len(chars) / len(alphabet)
    counts = [chars.count(c) for c in alphabet]
    assert min(counts) > expected / 2 and max(counts) < expected * 2


def test_token_default_alphabet_is_base32() -> None:
    assert set("".join(Draws(4).token(10) for _ in range(200))) <= set(BASE32)


def test_lognormal_median_and_spread_over_many_draws() -> None:
    """20,000 draws: the sample median's standard error in log space is 1.2533 * sigma / sqrt(n)
    = 0.9%, so a 5% tolerance is more than 5 standard errors, while a mean-parametrised lognormal
    (median * e^{sigma^2/2} = 1.65x here) or a wrong sigma lands far outside it."""
    d = Draws(20260301)
    median, sigma, n = 100.0, 1.0, 20_000
    xs = [d.lognormal(median, sigma) for _ in range(n)]
    assert all(x > 0 for x in xs)
    assert statistics.median(xs) == pytest.approx(median, rel=0.05)
    # One sigma up in log space holds 84.1% of the mass; the binomial SE is 0.26%, tolerance 1.5%.
    share_below = sum(x < median * math.e**sigma for x in xs) / n
    assert share_below == pytest.approx(0.8413, abs=0.015)


def test_normal_is_standard() -> None:
    d = Draws(8)
    zs = [d.normal() for _ in range(20_000)]
    # SE of the mean is 0.007 and of the stdev about 0.005: tolerances are over 5 SE.
    assert statistics.fmean(zs) == pytest.approx(0.0, abs=0.04)
    assert statistics.pstdev(zs) == pytest.approx(1.0, abs=0.03)


def test_choice_and_weighted_cover_their_options() -> None:
    d = Draws(21)
    assert {d.choice("xyz") for _ in range(300)} == {"x", "y", "z"}
    picks = [d.weighted(["a", "b"], [1.0, 3.0]) for _ in range(4000)]
    # Expected share of "b" is 0.75 with SE 0.007.
    assert picks.count("b") / len(picks) == pytest.approx(0.75, abs=0.04)
    assert {d.weighted(["a", "b"], [0.0, 1.0]) for _ in range(200)} == {"b"}
    with pytest.raises(ValueError):
        d.choice([])


def test_shuffled_and_sample_are_permutations() -> None:
    d = Draws(2)
    items = list(range(20))
    shuffled = d.shuffled(items)
    assert sorted(shuffled) == items and shuffled != items
    assert items == list(range(20))  # the input is left alone
    sample = d.sample(items, 5)
    assert len(sample) == 5 and len(set(sample)) == 5 and set(sample) <= set(items)


def test_derive_seed_is_stable() -> None:
    """Pinned values: changing the derivation would silently change every generated script."""
    assert derive_seed(1, "k8s_crashloop") == 4179813457387130658
    assert derive_seed("a", "b", 3) == 13748791556873870212
    assert derive_seed(1, "k8s_crashloop") == derive_seed("1", "k8s_crashloop")  # parts are joined as text
    assert 0 <= derive_seed("anything") < 2**64
    assert derive_seed("a", "b") != derive_seed("b", "a")


def test_draws_stream_is_pinned() -> None:
    """`random.Random.random()` is the one sequence Python guarantees across versions; pin it."""
    assert round(Draws(42).uniform(), 6) == 0.639427
