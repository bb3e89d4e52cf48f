"""Speed of token counting on the project's own payloads, measured with pytest-benchmark: the default
tokenizer (gigatoken, with tiktoken for the texts it would count differently) against tiktoken.

One timed round counts every distinct text the tokenizer meets while the first 20 sessions of the
default configuration replay under every strategy (3 sessions when it runs untimed inside `make
test`): each text once, no cache, one thread. `make test` checks only that every count equals
tiktoken's; `make benchmarks` also times tiktoken on the same texts, alternating with the default
(best of 5), and puts the ratio into ``extra_info``. No threshold is asserted: the machine's load is
not the code's.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.core.tokens import FastTokenizer, TiktokenTokenizer, needs_tiktoken
from harness.run.speed import interleaved_best
from tests.harness.core.test_tokens_differential import real_texts, session_texts

SESSIONS = 20


def _count_all(count: Callable[[str], int], texts: list[str]) -> list[int]:
    return [count(t) for t in texts]


def test_count_replayed_texts_against_tiktoken(benchmark) -> None:
    texts = list(real_texts()) if benchmark.disabled else session_texts(SESSIONS)
    fast, exact = FastTokenizer(cache_size=0), TiktokenTokenizer(cache_size=0)
    counts = benchmark.pedantic(_count_all, args=(fast.count, texts), rounds=3, iterations=1)
    assert counts == _count_all(exact.count, texts)

    chars = sum(map(len, texts))
    benchmark.extra_info["texts"] = len(texts)
    benchmark.extra_info["chars"] = chars
    benchmark.extra_info["tokens"] = sum(counts)
    benchmark.extra_info["texts_counted_by_tiktoken"] = sum(map(needs_tiktoken, texts))
    if not benchmark.disabled:
        fast_s, exact_s, _, _ = interleaved_best(5, lambda: _count_all(fast.count, texts),
                                                 lambda: _count_all(exact.count, texts))
        benchmark.extra_info["default_mchars_per_s"] = round(chars / fast_s / 1e6, 1)
        benchmark.extra_info["tiktoken_mchars_per_s"] = round(chars / exact_s / 1e6, 1)
        benchmark.extra_info["speedup_over_tiktoken"] = round(exact_s / fast_s, 1)
