"""The default tokenizer (gigatoken, with tiktoken for the texts it would count differently) against
tiktoken's ``encode_ordinary``: the same count, and the same ids, for every text.

The texts are hypothesis' (any Unicode but surrogates, emoji sequences, CJK, combining marks,
special-token strings anywhere, runs of 10,000+ characters without a space, whitespace runs, pieces of
real payloads) and the real ones: every distinct text the tokenizer counts while a few sessions of
the default configuration replay under every strategy. A scan of every code point of the assigned
planes checks that `GIGATOKEN_UNICODE_DIFFERS` still lists every code point on which the two split
text differently.
"""

from __future__ import annotations

import random
import string
import sys
import threading
from functools import cache

import pytest
import tiktoken
from hypothesis import example, given
from hypothesis import strategies as st

import harness.core.tokens as tokens
from harness.core.tokens import (
    CL100K_SPECIAL_TOKENS,
    DEFAULT_ENCODING,
    GIGATOKEN_UNICODE_DIFFERS,
    FastTokenizer,
    TiktokenTokenizer,
    cl100k_bpe_file,
    default_tokenizer,
    needs_tiktoken,
)
from harness.run.config import load_config
from harness.run.plan import make_task, plan
from harness.run.worker import replay_batch

ENCODING = tiktoken.get_encoding(DEFAULT_ENCODING)
#: No cache: every count below is encoded.
FAST = FastTokenizer(cache_size=0)


class RecordingTokenizer:
    """Counts with ``inner`` and keeps every distinct text it was asked about, in first-seen order."""

    def __init__(self, inner: TiktokenTokenizer) -> None:
        self.inner = inner
        self.name = inner.name
        self.seen: dict[str, None] = {}

    def count(self, text: str) -> int:
        self.seen.setdefault(text, None)
        return self.inner.count(text)


def session_texts(sessions: int) -> list[str]:
    """Every distinct text the tokenizer counts while the first ``sessions`` sessions of the default
    configuration (the five-family mix, every strategy) replay as a run's worker replays them: task,
    tool calls, tool outputs, the mock model's prose, stubs, summaries."""
    config = load_config(sessions=sessions, executor="serial")
    recorder = RecordingTokenizer(TiktokenTokenizer())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tokens, "_default", recorder)
        for batch in plan(config):
            replay_batch(make_task(config, batch), events=False)
    return list(recorder.seen)


@cache
def real_texts() -> tuple[str, ...]:
    return tuple(session_texts(3))


def expected(text: str) -> list[int]:
    return ENCODING.encode_ordinary(text)


def differs_in_gigatoken(c: int) -> bool:
    return any(a <= c <= b for a, b in GIGATOKEN_UNICODE_DIFFERS)


# -- hypothesis' texts ------------------------------------------------------------------------------

EMOJI = ["🙂", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "❤️", "🧑🏿‍🚀", "🏳️‍🌈", "1️⃣"]
WHITESPACE = " \t\n\r\x0b\x0c\x85\xa0\u1680\u2003\u2028\u3000"
LONG_RUN_ALPHABETS = ["0123456789abcdef", string.digits, string.ascii_letters + string.digits + "+/=", "a",
                      string.ascii_lowercase, "日本語", "é", "-_.:"]

any_unicode = st.text(st.characters(exclude_categories=["Cs"]), max_size=80)
cjk = st.text(st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=1, max_size=40)
combining = st.tuples(st.characters(categories=["L"]),
                      st.text(st.characters(categories=["Mn", "Mc", "Me"]), min_size=1, max_size=4)).map("".join)
specials = st.sampled_from([*CL100K_SPECIAL_TOKENS, "<|", "|>", "<|endoftext", "endoftext|>", "<|ENDOFTEXT|>"])
long_runs = st.builds(lambda alphabet, n, seed: "".join(random.Random(seed).choices(alphabet, k=n)),
                      st.sampled_from(LONG_RUN_ALPHABETS), st.integers(10_000, 12_000), st.integers(0, 2**32))
whitespace = st.text(st.sampled_from(WHITESPACE), min_size=1, max_size=60)
#: A code point gigatoken classes differently, where it shows: before punctuation and a letter.
unicode_17 = st.builds(lambda c, tail: chr(c) + tail,
                       st.sampled_from(GIGATOKEN_UNICODE_DIFFERS).flatmap(lambda r: st.integers(*r)),
                       st.sampled_from([";i", "1", " x", "'s", ""]))
payload_slices = st.deferred(lambda: st.sampled_from(real_texts())).flatmap(
    lambda t: st.tuples(st.integers(0, len(t)), st.integers(0, len(t))).map(lambda ij: t[min(ij):max(ij)]))

pieces = st.one_of(st.text(string.printable, max_size=80), any_unicode, cjk, combining, st.sampled_from(EMOJI),
                   specials, long_runs, whitespace, unicode_17, payload_slices)
texts = st.lists(pieces, max_size=8).map("".join)


@given(texts)
@example("")
@example("<|endoftext|>")
@example("<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>")
@example("prompt<|endofprompt|>")
@example("log line <|endoftext|> more <|fim_prefix|>")
@example("<|<|endoftext|>|>")
@example("\U000332c5;i")  # CJK Extension J: gigatoken alone would count 5
@example("\u0cdc&S")
@example("0" * 12_000)
@example(" " * 10_000 + "x")
def test_counts_and_ids_equal_tiktoken_encode_ordinary(text: str) -> None:
    assert FAST.count(text) == len(expected(text))
    assert FAST.encode(text) == expected(text)


# -- the project's own payloads ---------------------------------------------------------------------


def test_every_replayed_text_counts_as_tiktoken_does() -> None:
    texts = real_texts()
    assert len(texts) > 1000
    counted = [FAST.count(t) for t in texts]
    assert counted == [len(expected(t)) for t in texts]


# -- the Unicode boundary ---------------------------------------------------------------------------

#: Contexts in which a code point's class (letter, digit, space, other) decides where text splits.
SCAN_CONTEXTS = ["{};i ", "a{}1 ", "1{}a\n", " {}{}'s\n"]
#: Planes with assigned code points (plus 3 and 14); 4 to 13 hold none yet, 15 and 16 are private use.
SCAN_PLANES = (0, 1, 2, 3, 14)


def test_every_code_point_outside_the_table_splits_as_in_tiktoken() -> None:
    """gigatoken alone, every code point of the scanned planes, in each context: where the ids differ
    from tiktoken's, the code point is in `GIGATOKEN_UNICODE_DIFFERS` (so such text goes to tiktoken).
    Texts of 4,096 code points at a time, bisected where they differ."""
    from gigatoken.gigatoken_rs import BPETokenizer

    bare = BPETokenizer.from_tiktoken(cl100k_bpe_file(), "gpt4", None)

    def differing(cps: list[int], context: str) -> list[int]:
        text = "".join(context.format(chr(c), chr(c)) for c in cps)
        if bare.encode(text).tolist() == expected(text):
            return []
        if len(cps) == 1:
            return cps
        half = len(cps) // 2
        return differing(cps[:half], context) + differing(cps[half:], context)

    cps = [c for p in SCAN_PLANES for c in range(p << 16, (p + 1) << 16) if not 0xD800 <= c <= 0xDFFF]
    found = {c for context in SCAN_CONTEXTS for i in range(0, len(cps), 4096)
             for c in differing(cps[i:i + 4096], context)}
    missing = sorted(c for c in found if not differs_in_gigatoken(c))
    assert missing == [], f"add to GIGATOKEN_UNICODE_DIFFERS: {[hex(c) for c in missing[:50]]}"


def test_what_goes_to_tiktoken() -> None:
    for special in CL100K_SPECIAL_TOKENS:
        assert needs_tiktoken(f"a {special} b")
    for a, b in GIGATOKEN_UNICODE_DIFFERS:
        assert needs_tiktoken(f"x{chr(a)}y") and needs_tiktoken(chr(b))
        assert not needs_tiktoken(chr(a - 1) + chr(b + 1)) or differs_in_gigatoken(a - 1) or differs_in_gigatoken(b + 1)
    assert not needs_tiktoken("kubectl logs <|not special|> pod-7f9c 日本語 🙂")
    assert not needs_tiktoken("")


def test_lone_surrogates_are_counted_as_tiktoken_counts_them() -> None:
    """gigatoken refuses them; tiktoken replaces them and counts the rest."""
    for text in ["a\ud800b", "\udfff", "x" * 50 + "\ud83d"]:
        assert FAST.count(text) == len(expected(text))
        assert FAST.encode(text) == expected(text)


# -- the default tokenizer --------------------------------------------------------------------------


def test_default_is_gigatoken_under_the_encodings_name() -> None:
    tok = default_tokenizer()
    assert isinstance(tok, FastTokenizer)
    # The counts are the encoding's whichever library computes them.
    assert tok.name == DEFAULT_ENCODING == TiktokenTokenizer().name
    assert tok.backend == "gigatoken"
    assert TiktokenTokenizer().backend == "tiktoken"


def test_default_falls_back_to_tiktoken_without_gigatoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_default", None)
    for module in ("gigatoken", "gigatoken.gigatoken_rs"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    tok = default_tokenizer()
    assert isinstance(tok, TiktokenTokenizer)
    assert tok.count("hello world") == 2


def test_cache_encodes_each_text_once() -> None:
    class Spy:
        def __init__(self, inner: object) -> None:
            self.inner, self.calls = inner, []

        def encode(self, text: str) -> object:
            self.calls.append(text)
            return self.inner.encode(text)  # type: ignore[attr-defined]

    tok = FastTokenizer(cache_size=2)
    spy = Spy(tok._fast)
    tok._fast = spy  # type: ignore[assignment]
    assert [tok.count(t) for t in ["a b", "a b", "c d", "e f", "a b"]] == [2, 2, 2, 2, 2]
    assert spy.calls == ["a b", "c d", "e f", "a b"]  # "a b" was evicted by "e f"
    assert tok.cache_info() == (2, 2)


def test_counts_from_many_threads_agree() -> None:
    tok = FastTokenizer()
    texts = list(real_texts()[:400])
    want = [len(expected(t)) for t in texts]
    results: list[list[int]] = []

    def work() -> None:
        results.append([tok.count(t) for t in texts])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 4
