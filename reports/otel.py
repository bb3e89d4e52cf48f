"""A finished run exported as OpenTelemetry traces, so that its sessions open in any trace viewer (Jaeger,
Tempo, ...): one trace per replayed session, following the GenAI semantic conventions of OpenTelemetry
semantic-conventions v1.37.0 and later (``gen_ai.provider.name`` rather than v1.36's ``gen_ai.system``,
which is set too for viewers that still key on it; the ``gen_ai.usage.cache_*`` names as the GenAI
registry spells them).

One trace per row of ``sessions.parquet``:

- ``invoke_agent {agent}`` (INTERNAL), the root: the session's totals and every sessions column as
  ``ctxbench.<column>``; status ERROR, with ``error.type`` = the outcome, when the outcome is not success.
  Span events: ``ctxbench.compaction`` and ``ctxbench.fact_lost`` (events.parquet) and
  ``ctxbench.loop_detected`` (sessions.loop_rule, at the session's end: the tables do not say at which turn).
- ``chat {model}`` (CLIENT), one per row of ``calls.parquet`` (agent, summary and hand-over calls), with
  ``gen_ai.usage.input_tokens`` (the whole prompt, cache hits included, as the convention counts it),
  ``gen_ai.usage.output_tokens``, ``gen_ai.usage.cache_read.input_tokens`` and
  ``gen_ai.usage.cache_creation.input_tokens``.
- ``execute_tool {tool}`` (INTERNAL), one per tool call, from the ``call`` rows of ``events.parquet`` that
  led to a tool; status ERROR with ``error.type`` = the error class when the tool answered an error. A run
  made with ``events = false`` has no such rows: its traces have no tool spans and no compaction or
  lost-fact events (`ExportSummary.has_events` says so).

Times are on the **simulated** clock: a span's start and end are the run's epoch (the manifest's
``started``; the Unix epoch when there is none) plus simulated seconds. A model call ends at ``clock_s``
and began ``model_s`` before; a tool span runs from its call's end to the next call's start (or the
session's end), which includes the back-off and overflow round trips before that next call when the
session had any (``backoff_s``, ``overflow_events``): the tables do not place them per call.

Ids are derived from (run id, scenario, session_index, strategy, span kind, call index) with blake2b, so two
exports of one run give the same spans. The spans are built directly as ``ReadableSpan``s rather than
through a ``Tracer`` with a custom ``IdGenerator``: they describe the past (their times are given, not
measured), an ``IdGenerator`` is asked for ids without being told which span they are for, and the SDK's
span processors only log a batch that failed, while this export must count each batch's result.

Exporters: ``file`` (OTLP/JSON, one ``ExportTraceServiceRequest`` per line, as the Collector's file
exporter writes and its ``otlpjsonfile`` receiver reads), ``otlp`` (OTLP/HTTP protobuf, configured only by
the standard ``OTEL_EXPORTER_OTLP_*`` variables), or any SDK ``SpanExporter`` (the SDK's
``InMemorySpanExporter`` in tests). Configuration is checked before any span is made (`OtelConfigError`);
a batch that fails after that is counted (`ExportSummary`), never silent. OpenTelemetry is an optional
extra, imported only here and only when needed: ``pip install 'ctxbench[otel]'``.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import importlib
import json
import logging
import math
import os
import re
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit

import numpy as np
import pandas as pd
from pydantic import ValidationError

import harness
from harness.core.files import StagedFile
from harness.core.rundir import (
    ACCOUNTING_MODE,
    CALLS_TABLE,
    EVENTS_TABLE,
    MANIFEST_FILE,
    SESSIONS_TABLE,
    Manifest,
    TableCheckError,
    verify_tables,
)
from harness.core.tables import CALL_ROW_KEY, EVENT_ROW_KEY, SESSION_ROW_KEY

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter

__all__ = [
    "DEFAULT_TRACE_FILE",
    "EXPORTERS",
    "EXTRA_HINT",
    "ExportSummary",
    "ExporterConfig",
    "OtelConfigError",
    "OtelInputError",
    "check_exporter_config",
    "check_receiver",
    "export_run",
    "make_exporter",
    "session_trace_id",
]

#: Where ``--to file`` writes when no path is given: in the run directory (not a table, so no checksum).
DEFAULT_TRACE_FILE = "traces.otlp.jsonl"
#: The exporters a configuration may name.
EXPORTERS = ("file", "otlp")
#: What to install when OpenTelemetry is missing.
EXTRA_HINT = "pip install 'ctxbench[otel]'"
#: ``gen_ai.provider.name`` (and ``gen_ai.system``): the convention asks a custom model for a friendly
#: name of its own; the mock model is ctxbench's.
PROVIDER = "ctxbench"
#: Spans per export request: the SDK's BatchSpanProcessor default (``max_export_batch_size``).
BATCH_SIZE = 512
#: Consecutive failed batches after which the rest are counted as failed without being sent: a receiver
#: that refused three requests in a row is down, and each attempt costs the exporter's whole timeout.
GIVE_UP_AFTER = 3
#: Where the default OTLP/HTTP receiver listens (the specification's default), and the traces path.
DEFAULT_OTLP_ENDPOINT = "http://localhost:4318"
TRACES_PATH = "v1/traces"
#: The OTLP protocol this export speaks.
HTTP_PROTOBUF = "http/protobuf"
#: Compressions the OTLP/HTTP exporter knows.
COMPRESSIONS = ("none", "gzip", "deflate")
#: An HTTP header name (RFC 9110's "token"): a name with a space or a colon cannot be sent.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: What an HTTP header value may not hold: control characters (a line break would end the header).
_HEADER_VALUE_BAD = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
#: Seconds the receiver check waits for a connection when no timeout is configured (the SDK's default).
DEFAULT_TIMEOUT_S = 10.0
#: The loggers the OTLP exporter reports failed batches on; captured into `ExportSummary.last_error`.
_EXPORTER_LOGGERS = ("opentelemetry.exporter.otlp.proto.http", "opentelemetry.exporter.otlp.proto.http.trace_exporter")

SpanKindName = Literal["invoke_agent", "chat", "execute_tool"]


class OtelConfigError(ValueError):
    """The exporter cannot be configured (a variable that is not a URL, an unsupported protocol, a file in
    a missing directory, OpenTelemetry not installed): one line naming the variable or path."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class OtelInputError(ValueError):
    """The run directory cannot be exported (not a finished run, a damaged table, an accounting run): one
    line naming the directory or file."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


# --- configuration ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExporterConfig:
    """A checked exporter configuration (`check_exporter_config`): what `make_exporter` builds."""

    kind: Literal["file", "otlp"]
    #: file: where the OTLP/JSON lines go.
    path: Path | None = None
    #: otlp: the traces URL, headers, timeout (seconds) and compression, read from the environment.
    endpoint: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float | None = None
    compression: str = "none"

    @property
    def destination(self) -> str:
        """Where the spans go, for the summary line."""
        return str(self.path) if self.kind == "file" else f"OTLP/HTTP {self.endpoint}"


def _require_opentelemetry(kind: str) -> None:
    """OtelConfigError naming the extra when the modules ``kind`` needs (``sdk``: the spans alone; ``file``,
    ``otlp``: an exporter too) are not installed."""
    modules = ["opentelemetry.sdk.trace"]
    if kind in EXPORTERS:  # both encode OTLP: the file as JSON, otlp as protobuf
        modules += ["opentelemetry.exporter.otlp.proto.common.trace_encoder", "google.protobuf.json_format"]
    if kind == "otlp":
        modules.append("opentelemetry.exporter.otlp.proto.http.trace_exporter")
    for name in modules:
        try:
            __import__(name)
        except ImportError:
            raise OtelConfigError(f"OpenTelemetry export needs the otel extra ({name} is not installed): "
                                  f"{EXTRA_HINT}") from None


def _first_set(environ: Mapping[str, str], *names: str) -> tuple[str, str] | None:
    """(name, value) of the first variable of ``names`` set to a non-blank value (the specification reads
    an empty variable as unset)."""
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return name, value
    return None


def _check_url(variable: str, value: str) -> None:
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise OtelConfigError(f"{variable}: {value!r} is not an http(s) URL (e.g. {DEFAULT_OTLP_ENDPOINT})")


def _otlp_config(environ: Mapping[str, str]) -> ExporterConfig:
    """The OTLP/HTTP configuration of ``environ``'s ``OTEL_EXPORTER_OTLP_*`` variables, each checked."""
    protocol = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
    if protocol is not None and protocol[1].lower() != HTTP_PROTOBUF:
        raise OtelConfigError(f"{protocol[0]}: {protocol[1]!r} is not supported (ctxbench exports OTLP over "
                              f"{HTTP_PROTOBUF} only; unset it or set it to {HTTP_PROTOBUF})")
    traces = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces is not None:  # the signal's own variable is the URL as it is (the specification's rule)
        _check_url(*traces)
        endpoint = traces[1]
    else:
        base = _first_set(environ, "OTEL_EXPORTER_OTLP_ENDPOINT")
        if base is not None:
            _check_url(*base)
        root = base[1] if base is not None else DEFAULT_OTLP_ENDPOINT
        endpoint = f"{root.rstrip('/')}/{TRACES_PATH}"
    headers: dict[str, str] = {}
    listed = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
    if listed is not None:
        for item in listed[1].split(","):
            if not item.strip():
                continue
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise OtelConfigError(f"{listed[0]}: {item.strip()!r} is not key=value (expected "
                                      "comma-separated key=value pairs, values URL-encoded)")
            name, text = unquote(key.strip()), unquote(value.strip())
            if not _HEADER_NAME.fullmatch(name):
                raise OtelConfigError(f"{listed[0]}: {name!r} is not an HTTP header name (letters, digits and "
                                      "!#$%&'*+-.^_`|~ only: no spaces, no colons)")
            if _HEADER_VALUE_BAD.search(text) or not _latin1(text):
                raise OtelConfigError(f"{listed[0]}: the value of {name!r} holds a character an HTTP header cannot "
                                      "carry (a control character, or one outside Latin-1: URL-encode it)")
            headers[name.lower()] = text
    timeout_s: float | None = None
    timeout = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
    if timeout is not None:
        try:
            timeout_s = float(timeout[1])
        except ValueError:
            timeout_s = math.nan
        if not (math.isfinite(timeout_s) and timeout_s > 0):
            raise OtelConfigError(f"{timeout[0]}: {timeout[1]!r} is not a positive number (seconds, as the "
                                  "OpenTelemetry Python SDK reads it)")
    compression = "none"
    compressed = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION")
    if compressed is not None:
        compression = compressed[1].lower()
        if compression not in COMPRESSIONS:
            raise OtelConfigError(f"{compressed[0]}: {compressed[1]!r} is not one of {', '.join(COMPRESSIONS)}")
    return ExporterConfig("otlp", endpoint=endpoint, headers=headers, timeout_s=timeout_s, compression=compression)


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def check_exporter_config(kind: str, *, path: str | Path | None = None, environ: Mapping[str, str] | None = None,
                          parent_made_later: bool = False) -> ExporterConfig:
    """The exporter configuration for ``kind`` (``file`` or ``otlp``), checked before any span is made:
    OtelConfigError, one line naming the variable or path, for an unknown kind, OpenTelemetry not installed,
    a file in a missing directory or that is a directory, or (otlp) an ``OTEL_EXPORTER_OTLP_*`` variable
    that is not a URL, a protocol other than http/protobuf, bad headers, timeout or compression.

    ``environ`` defaults to the process's environment; ``parent_made_later`` skips the check of the file's
    directory when the caller creates it before the export (a run directory ``ctxbench run`` is about to
    make)."""
    if kind not in EXPORTERS:
        raise OtelConfigError(f"unknown trace exporter {kind!r} (known: {', '.join(EXPORTERS)})")
    if kind == "file":
        if path is None:
            raise OtelConfigError("the file exporter needs a path to write to")
        target = Path(path)
        try:
            if target.is_dir():
                raise OtelConfigError(f"{target}: is a directory, not a file to write traces to")
            if not parent_made_later and not target.parent.is_dir():
                raise OtelConfigError(f"{target}: directory {target.parent} does not exist")
        except OSError as error:  # a name too long, a loop of links: what the write would hit
            raise OtelConfigError(f"{str(target)[:120]}: cannot be written ({error.strerror or error})") from None
        _require_opentelemetry(kind)
        return ExporterConfig("file", path=target)
    config = _otlp_config(os.environ if environ is None else environ)
    _require_opentelemetry(kind)
    return config


def check_receiver(config: ExporterConfig) -> None:
    """OtelConfigError, one line naming the endpoint, when nothing accepts a connection where an ``otlp``
    configuration sends its spans (or at the proxy the environment makes the requests go through): a
    receiver that is not running is found before any session replays or any span is made, not after
    every batch failed. A ``file`` configuration needs no check."""
    if config.kind != "otlp" or config.endpoint is None:
        return
    import requests.utils

    target = urlsplit(config.endpoint)
    via = ""
    proxy = requests.utils.select_proxy(config.endpoint, requests.utils.get_environ_proxies(config.endpoint))
    if proxy:
        target = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        via = f" through the proxy {proxy}"
    host = target.hostname or "localhost"
    port = target.port or (443 if target.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=config.timeout_s or DEFAULT_TIMEOUT_S).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise OtelConfigError(f"{config.endpoint}: no OTLP receiver to send to{via} (connecting to {host}:{port}: "
                              f"{reason}); start it, or point OTEL_EXPORTER_OTLP_ENDPOINT (or "
                              "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) at one") from None


def make_exporter(config: ExporterConfig) -> SpanExporter:
    """The SDK exporter ``config`` describes (checked by `check_exporter_config`)."""
    if config.kind == "file":
        assert config.path is not None
        return _otlp_json_file_exporter(config.path)
    return _otlp_http_exporter(config)


def _otlp_http_exporter(config: ExporterConfig) -> SpanExporter:
    """The SDK's OTLP/HTTP exporter with exactly the checked settings, behind a wrapper that keeps what the
    receiver last answered (``error``): the SDK only logs it, and for a batch it retried, without the status.

    The wrapper also reads what the SDK ignores: the spans a receiver that answered 200 still rejected
    (OTLP's ``partial_success``: ``rejected``, ``rejected_message`` after each batch), and a receiver that
    refuses the connection (``unreachable``: the batch fails at once, without the SDK's back-off retries,
    and `export_run` sends nothing more)."""
    import requests
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class Unreachable(Exception):
        """Raised through the SDK (which retries only request errors) to end the batch at once."""

    class RecordingSession(requests.Session):
        last = ""
        rejected = 0
        rejected_message = ""

        def post(self, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
            self.rejected, self.rejected_message = 0, ""
            try:
                response = super().post(url, *args, **kwargs)
            except requests.exceptions.RequestException as error:
                self.last = f"{url}: {type(error).__name__}"
                refused = _refusal(error)
                if refused:
                    self.last = f"{url}: {refused}"
                    raise Unreachable(self.last) from None
                raise
            self.last = f"{url}: HTTP {response.status_code} {response.reason}"
            if response.ok:
                self.rejected, self.rejected_message = _partial_success(response.content,
                                                                        response.headers.get("Content-Type", ""))
            return response

    class OtlpHttpExporter(SpanExporter):
        def __init__(self) -> None:
            self.error = ""
            #: The receiver refused a connection: nothing more can be sent.
            self.unreachable = False
            #: Spans of the last batch the receiver rejected although it answered 200, and what it said.
            self.rejected = 0
            self.rejected_message = ""
            self.session = RecordingSession()
            # Everything given explicitly, so the exporter uses exactly what was checked (an empty variable,
            # which the SDK would take as the URL "", is unset here, as the specification says).
            self.inner = OTLPSpanExporter(endpoint=config.endpoint, headers=dict(config.headers),
                                          timeout=config.timeout_s, compression=Compression(config.compression),
                                          session=self.session)

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            self.rejected, self.rejected_message = 0, ""
            try:
                result = self.inner.export(spans)
            except Unreachable as error:
                self.error, self.unreachable = str(error), True
                return SpanExportResult.FAILURE
            if result != SpanExportResult.SUCCESS:
                self.error = self.session.last
            else:
                self.rejected = min(len(spans), self.session.rejected)
                self.rejected_message = self.session.rejected_message
            return result

        def shutdown(self) -> None:
            self.inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return self.inner.force_flush(timeout_millis)

    return OtlpHttpExporter()


#: The errors of a connection that no retry within the timeout would make: nothing listens, no route.
_UNREACHABLE_ERRNOS = frozenset({errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH})


def _refusal(error: BaseException) -> str:
    """"connection refused" (or the like) when ``error`` comes from a connection nothing accepted, found
    through the exceptions requests and urllib3 wrap it in; "" for any other failure."""
    seen: set[int] = set()
    stack: list[BaseException] = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _UNREACHABLE_ERRNOS:
            return (current.strerror or "connection refused").lower()
        linked = [*current.args, getattr(current, "reason", None), current.__cause__, current.__context__]
        stack.extend(e for e in linked if isinstance(e, BaseException))
    return ""


def _partial_success(body: bytes, content_type: str) -> tuple[int, str]:
    """(spans rejected, the receiver's message) of an OTLP ``ExportTraceServiceResponse`` answered with 200,
    protobuf or JSON as its content type says; (0, "") when it rejected none or the body is no such response
    (an empty body is the full success the specification allows)."""
    if not body:
        return 0, ""
    try:
        if "json" in content_type.lower():
            partial = json.loads(body).get("partialSuccess") or {}
            rejected, message = int(partial.get("rejectedSpans") or 0), str(partial.get("errorMessage") or "")
        else:
            from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

            reply = ExportTraceServiceResponse.FromString(body)
            rejected, message = reply.partial_success.rejected_spans, reply.partial_success.error_message
    except Exception:  # not a response body (protobuf's DecodeError, JSON that is no object)
        return 0, ""
    return max(0, int(rejected)), " ".join(message.split())


def _otlp_json_file_exporter(path: Path) -> SpanExporter:
    """An exporter writing one OTLP/JSON ``ExportTraceServiceRequest`` per batch, one per line, into a
    temporary file renamed to ``path`` on shutdown (a reader never sees half an export). A write that fails
    fails its batch. ``abandon`` (what `export_run` calls when the export is interrupted) removes the
    temporary file instead: ``path`` keeps what it held before."""
    # protobuf ships no type stubs; its JSON mapping is used in this one place.
    message_to_dict = importlib.import_module("google.protobuf.json_format").MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class OtlpJsonFileExporter(SpanExporter):
        def __init__(self) -> None:
            self.error = ""
            #: The file could not be put in place: every batch written is lost.
            self.lost = False
            self._file: Any = None
            self._staged = StagedFile(path)

        def _open(self) -> Any:
            if self._file is None:
                self._file = os.fdopen(self._staged.create(), "w", encoding="utf-8")
            return self._file

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            request = message_to_dict(encode_spans(spans), use_integers_for_enums=True)
            _hex_ids(request)
            try:
                out = self._open()
                out.write(json.dumps(request, separators=(",", ":"), sort_keys=True) + "\n")
            except OSError as error:
                self.error = f"{path}: {error.strerror or error}"
                return SpanExportResult.FAILURE
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            try:
                out = self._open()  # an export of no session still leaves its (empty) file
                out.flush()
                os.fsync(out.fileno())
                out.close()
                self._staged.commit()
            except OSError as error:
                self.error = f"{path}: {error.strerror or error}"
                self.lost = True
                self.abandon()
            except BaseException:  # interrupted on the way: the old file stays, the temporary one goes
                self.abandon()
                raise

        def abandon(self) -> None:
            """An export that did not finish (interrupted, or its file could not be put in place): the
            temporary file is removed and whatever ``path`` held before is left as it was."""
            if self._file is not None:
                with contextlib.suppress(OSError):
                    self._file.close()
            with contextlib.suppress(OSError):
                self._staged.discard()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    return OtlpJsonFileExporter()


def _hex_ids(request: dict[str, Any]) -> None:
    """OTLP/JSON writes trace and span ids as hex, where protobuf's JSON mapping writes bytes as base64."""
    for resource_spans in request.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()


# --- ids and times ------------------------------------------------------------------------------------


def _digest(size: int, *parts: object) -> int:
    """A nonzero id of ``size`` bytes from ``parts`` (zero is the invalid id in OpenTelemetry)."""
    text = "\x1f".join(str(p) for p in parts).encode()
    value = int.from_bytes(hashlib.blake2b(text, digest_size=size, person=b"ctxbench-otel").digest(), "big")
    return value or 1


def session_trace_id(run_id: str, scenario: str, session_index: int, strategy: str) -> int:
    """The trace id of one session replay: the same for every export of the run."""
    return _digest(16, run_id, scenario, session_index, strategy)


def _span_id(trace_id: int, kind: SpanKindName, call_index: int) -> int:
    return _digest(8, trace_id, kind, call_index)


def _epoch_ns(manifest: Manifest) -> int:
    """The run's epoch in nanoseconds: its manifest's ``started``, else 0 (the Unix epoch)."""
    if not manifest.started:
        return 0
    try:
        return int(datetime.fromisoformat(manifest.started).timestamp()) * 1_000_000_000
    except ValueError:
        return 0


def _ns(epoch_ns: int, seconds: float) -> int:
    return epoch_ns + round(seconds * 1e9)


# --- reading the run ----------------------------------------------------------------------------------

#: The columns each table must have for the export.
_SESSIONS_READ = (*SESSION_ROW_KEY, "outcome", "latency_s")
_CALLS_READ = (*SESSION_ROW_KEY, "agent", "call_index", "call_kind", "input_tokens", "cached_input_tokens",
                 "output_tokens", "model_s", "clock_s")
_EVENT_COLUMNS = (*SESSION_ROW_KEY, "seq", "agent", "event", "call_index", "tool", "status")
#: The columns each table places the spans with (seconds on the simulated clock) and counts or indexes
#: them with: every value must be a finite number (seconds from 0 to `MAX_SECONDS`), for a span cannot
#: leave its time or its index out the way it leaves out an attribute whose value is missing.
_SESSION_TIMES, _SESSION_COUNTS = ("latency_s",), ("session_index",)
_CALL_TIMES = ("model_s", "clock_s")
_CALL_COUNTS = ("session_index", "call_index", "input_tokens", "cached_input_tokens", "output_tokens",
                "cache_write_tokens")
_EVENT_COUNTS = ("session_index", "seq", "call_index")
#: The longest simulated time a span may end at: about 31 years, far inside what an OTLP time (nanoseconds
#: since 1970 in 64 bits) can hold after a run's start.
MAX_SECONDS = 1e9


def _check_numbers(path: Path, frame: pd.DataFrame, times: Sequence[str], counts: Sequence[str]) -> None:
    """OtelInputError naming the table, the column and the first row when a value of ``times`` or
    ``counts`` (those the frame has) is missing or not a finite number (or a time outside 0 to
    `MAX_SECONDS`, a count outside 64 bits), or when any number of the table is infinite.

    A NaN elsewhere is how a missing value reads back from Parquet (a null in a float column): its
    attribute is left out, as for any missing value. An infinity is no missing value, and no run writes
    one: the table is damaged."""
    for column in frame.columns:
        series = frame[column]
        if column in times or column in counts:
            values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            with np.errstate(invalid="ignore"):
                low, high = (0.0, MAX_SECONDS) if column in times else (float(_INT64_MIN), float(_INT64_MAX))
                bad = ~(np.isfinite(values) & (values >= low) & (values <= high))
            what = (f"a number of seconds from 0 to {MAX_SECONDS:g}" if column in times
                    else "a finite number within 64 bits")
        elif pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
            bad = np.isinf(series.to_numpy(dtype=float, na_value=np.nan))
            what = "a finite number"
        else:
            continue
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            value = series.iloc[row]
            raise OtelInputError(f"{path}: column {column}, row {row}: {_shown(value)} is not {what} (the table is "
                                 "damaged: a run never writes one)")


def _shown(value: Any) -> str:
    if value is None or value is pd.NA:
        return "a missing value"
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= 40 else text[:37] + "..."


def _read_table(path: Path, columns: Sequence[str]) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(path)
    except Exception as error:  # arrow raises several kinds for damaged bytes; each is the file's fault
        reason = " ".join(str(error).split()) or type(error).__name__
        raise OtelInputError(f"{path}: not a readable parquet table ({reason})") from None
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise OtelInputError(f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                             "(not a table of a ctxbench run?)")
    return frame


@dataclass(frozen=True, slots=True)
class _Run:
    run_id: str
    epoch_ns: int
    model: str
    sessions: pd.DataFrame
    calls: pd.DataFrame
    events: pd.DataFrame | None


def _open_run(run_dir: Path) -> _Run:
    if not run_dir.is_dir():
        raise OtelInputError(f"{run_dir}: {'not a directory' if run_dir.exists() else 'no such directory'}")
    if not (run_dir / SESSIONS_TABLE).is_file():
        raise OtelInputError(f"{run_dir}: not a finished run directory (no {SESSIONS_TABLE})")
    manifest = Manifest(run_id=run_dir.name)
    if (run_dir / MANIFEST_FILE).exists():
        try:
            manifest = Manifest.read(run_dir)
        except ValidationError as error:
            where = ".".join(str(part) for part in error.errors()[0]["loc"])
            raise OtelInputError(f"{run_dir / MANIFEST_FILE}: not a valid manifest ({where})") from None
        except (OSError, ValueError) as error:
            raise OtelInputError(f"{run_dir / MANIFEST_FILE}: cannot be read ({error})") from None
    if manifest.mode == ACCOUNTING_MODE:
        raise OtelInputError(f"{run_dir}: an accounting run of recorded sessions (ctxbench replay) has no "
                             "simulated clock to place spans on")
    try:
        verify_tables(run_dir, manifest)
    except TableCheckError as error:
        raise OtelInputError(str(error)) from None
    if not (run_dir / CALLS_TABLE).is_file():
        raise OtelInputError(f"{run_dir / CALLS_TABLE}: missing (the chat spans are its rows)")
    sessions = _read_table(run_dir / SESSIONS_TABLE, _SESSIONS_READ)
    _check_numbers(run_dir / SESSIONS_TABLE, sessions, _SESSION_TIMES, _SESSION_COUNTS)
    calls = _read_table(run_dir / CALLS_TABLE, _CALLS_READ)
    _check_numbers(run_dir / CALLS_TABLE, calls, _CALL_TIMES, _CALL_COUNTS)
    calls = calls.sort_values(list(CALL_ROW_KEY), kind="stable")
    events_path = run_dir / EVENTS_TABLE
    events = None
    if events_path.exists():
        events = _read_table(events_path, _EVENT_COLUMNS)
        _check_numbers(events_path, events, (), _EVENT_COUNTS)
        events = events.sort_values(list(EVENT_ROW_KEY), kind="stable")
    return _Run(run_id=manifest.run_id or run_dir.name, epoch_ns=_epoch_ns(manifest),
                model=manifest.model_name or "mock", sessions=sessions, calls=calls, events=events)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _plain(value: Any) -> Any:
    """A table value as an attribute value (None: leave the attribute out)."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str) and not value:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64_MIN <= value <= _INT64_MAX:
        return str(value)  # an OTLP int is 64-bit signed; a seed is 64-bit unsigned
    return value if isinstance(value, bool | int | float | str) else str(value)


def _attributes(prefix: str, row: Mapping[str, Any], skip: Sequence[str] = ()) -> dict[str, Any]:
    out = {}
    for name, value in row.items():
        plain = _plain(value)
        if plain is not None and name not in skip:
            out[f"{prefix}{name}"] = plain
    return out


# --- the spans of one session ---------------------------------------------------------------------------


@dataclass(slots=True)
class _SessionSpans:
    spans: list[ReadableSpan]
    chat: int = 0
    tools: int = 0
    events: int = 0


@dataclass(frozen=True, slots=True)
class _SessionFrame:
    """What every span of one session shares: its trace, root span context, model, common attributes, end
    time, and its model calls with each call's start, end and position by call index."""

    trace_id: int
    root: Any
    model: str
    common: dict[str, str]
    end_s: float
    calls: list[dict[str, Any]]
    starts: list[float]
    ends: list[float]
    position: dict[int, int]


class _Builder:
    """Builds the spans of each session of one run (the SDK's classes, imported once)."""

    def __init__(self, run: _Run) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        self.run = run
        self.Event, self.ReadableSpan, self.SpanContext = Event, ReadableSpan, SpanContext
        self.SpanKind, self.Status, self.StatusCode = SpanKind, Status, StatusCode
        self.sampled = TraceFlags(TraceFlags.SAMPLED)
        # Fixed attributes, not Resource.create's: the SDK's defaults and the environment's would make two
        # exports of one run differ between machines.
        self.resource = Resource({"service.name": "ctxbench", "service.version": harness.__version__,
                                  "ctxbench.run_id": run.run_id})
        self.scope = InstrumentationScope("ctxbench.otel", harness.__version__)
        self.calls_at = run.calls.groupby(list(SESSION_ROW_KEY), sort=False).indices
        self.events_at = ({} if run.events is None
                          else run.events.groupby(list(SESSION_ROW_KEY), sort=False).indices)
        self.call_records = run.calls.to_dict("records")
        self.event_records = [] if run.events is None else run.events.to_dict("records")

    def _context(self, trace_id: int, span_id: int) -> Any:
        return self.SpanContext(trace_id, span_id, is_remote=False, trace_flags=self.sampled)

    def count(self, row: Mapping[str, Any]) -> _SessionSpans:
        """What `session` would make of ``row`` (its chat and tool spans and span events), counted without
        making a span: for the sessions of an export that sends nothing more."""
        key = (row["scenario"], row["session_index"], row["strategy"])
        calls = self.calls_at.get(key, ())
        indices = {int(self.call_records[i]["call_index"]) for i in calls}
        tools = events = 0
        for i in self.events_at.get(key, ()):
            e = self.event_records[i]
            kind = str(e["event"])
            if kind == "call" and int(e["call_index"]) in indices and str(e["tool"] or ""):
                tools += 1
            elif kind in ("compaction", "lost"):
                events += 1
        events += _plain(row.get("loop_rule")) is not None
        return _SessionSpans([], chat=len(calls), tools=tools, events=events)

    def session(self, row: Mapping[str, Any]) -> _SessionSpans:
        """The spans of the session ``row``: the root ``invoke_agent`` span first, then one ``chat`` span per
        model call and one ``execute_tool`` span per tool call; compactions, lost facts and a detected loop
        are the root's span events."""
        key = (row["scenario"], row["session_index"], row["strategy"])
        calls = [self.call_records[i] for i in self.calls_at.get(key, ())]
        events = [self.event_records[i] for i in self.events_at.get(key, ())]
        trace_id = session_trace_id(self.run.run_id, str(key[0]), int(key[1]), str(key[2]))
        conversation = f"{self.run.run_id}/{key[0]}/{key[1]}/{key[2]}"
        end_s = float(row["latency_s"])
        if calls:  # an errored session's latency may stop short of its last call
            end_s = max(end_s, float(calls[-1]["clock_s"]))
        frame = _SessionFrame(
            trace_id=trace_id, root=self._context(trace_id, _span_id(trace_id, "invoke_agent", -1)),
            model=str(_plain(row.get("model")) or self.run.model), end_s=end_s, calls=calls,
            common={"gen_ai.provider.name": PROVIDER, "gen_ai.system": PROVIDER,
                    "gen_ai.conversation.id": conversation},
            # each call's start and end, for the tool spans and the events between calls
            starts=[max(0.0, float(c["clock_s"]) - float(c["model_s"])) for c in calls],
            ends=[float(c["clock_s"]) for c in calls],
            position={int(c["call_index"]): i for i, c in enumerate(calls)})
        out = _SessionSpans([])
        out.spans.extend(self._chat_spans(frame))
        out.chat = len(calls)
        root_events = self._tool_spans_and_events(frame, events, out)
        rule = _plain(row.get("loop_rule"))
        if rule is not None:
            root_events.append(self.Event("ctxbench.loop_detected", {"ctxbench.loop_rule": str(rule)},
                                          timestamp=_ns(self.run.epoch_ns, end_s)))
        out.events = len(root_events)
        out.spans.insert(0, self._root_span(frame, row, root_events))
        return out

    def _chat_spans(self, frame: _SessionFrame) -> list[Any]:
        """One ``chat`` span per model call of the session, in call order."""
        epoch, trace_id, model = self.run.epoch_ns, frame.trace_id, frame.model
        spans: list[Any] = []
        for i, c in enumerate(frame.calls):
            usage = {"gen_ai.usage.input_tokens": int(c["input_tokens"]),
                     "gen_ai.usage.output_tokens": int(c["output_tokens"]),
                     "gen_ai.usage.cache_read.input_tokens": int(c["cached_input_tokens"])}
            if "cache_write_tokens" in c:
                usage["gen_ai.usage.cache_creation.input_tokens"] = int(c["cache_write_tokens"])
            attributes = {"gen_ai.operation.name": "chat", **frame.common, "gen_ai.request.model": model,
                          "gen_ai.agent.name": str(c["agent"]), **usage,
                          **_attributes("ctxbench.", c, skip=(*SESSION_ROW_KEY, "agent", "input_tokens",
                                                              "output_tokens", "cached_input_tokens",
                                                              "cache_write_tokens", "trace"))}
            spans.append(self.ReadableSpan(
                f"chat {model}", context=self._context(trace_id, _span_id(trace_id, "chat", int(c["call_index"]))),
                parent=frame.root, resource=self.resource, attributes=attributes, kind=self.SpanKind.CLIENT,
                start_time=_ns(epoch, frame.starts[i]), end_time=_ns(epoch, frame.ends[i]),
                instrumentation_scope=self.scope))
        return spans

    def _tool_spans_and_events(self, frame: _SessionFrame, events: list[dict[str, Any]],
                               out: _SessionSpans) -> list[Any]:
        """Walk the session's logged events in order: each tool call becomes an ``execute_tool`` span in
        ``out``; compactions and lost facts become the root's span events, which are returned. One walk does
        both because an event's timestamp is the clock as the tool spans before it left it."""
        epoch, trace_id, calls, starts, ends = self.run.epoch_ns, frame.trace_id, frame.calls, frame.starts, frame.ends
        root_events: list[Any] = []
        now = 0.0
        for e in events:
            kind = str(e["event"])
            at = frame.position.get(int(e["call_index"]))
            if kind == "call" and at is not None:
                now = ends[at]
                tool = str(e["tool"] or "")
                if not tool:
                    continue
                tool_end = max(now, starts[at + 1] if at + 1 < len(calls) else frame.end_s)
                failed = str(e["status"]) == "error"
                attributes = {"gen_ai.operation.name": "execute_tool", **frame.common, "gen_ai.tool.name": tool,
                              "gen_ai.tool.call.id": f"call_{int(e['call_index'])}", "gen_ai.tool.type": "function",
                              "gen_ai.agent.name": str(e["agent"]),
                              **_attributes("ctxbench.", {k: e.get(k) for k in
                                                          ("call_index", "turn", "status", "output_chars",
                                                           "output_tokens", "error_class")})}
                status = self.Status(self.StatusCode.UNSET)
                if failed:
                    attributes["error.type"] = str(e.get("error_class") or "") or "tool_error"
                    status = self.Status(self.StatusCode.ERROR, f"tool error ({attributes['error.type']})")
                out.spans.append(self.ReadableSpan(
                    f"execute_tool {tool}",
                    context=self._context(trace_id, _span_id(trace_id, "execute_tool", int(e["call_index"]))),
                    parent=frame.root, resource=self.resource, attributes=attributes, kind=self.SpanKind.INTERNAL,
                    status=status, start_time=_ns(epoch, now), end_time=_ns(epoch, tool_end),
                    instrumentation_scope=self.scope))
                out.tools += 1
                now = tool_end
            elif kind == "compaction":
                if at is not None:  # the summary call it made: the compaction is done when that call is
                    now = max(now, ends[at])
                root_events.append(self.Event("ctxbench.compaction", _attributes("ctxbench.", {
                    k: e.get(k) for k in ("agent", "turn", "hook", "how", "messages_before", "messages_after",
                                          "tokens_before", "tokens_after", "facts_dropped")}) | (
                    {"ctxbench.summary_call_index": int(e["call_index"])} if at is not None else {}),
                    timestamp=_ns(epoch, now)))
            elif kind == "lost":
                root_events.append(self.Event("ctxbench.fact_lost", _attributes("ctxbench.", {
                    k: e.get(k) for k in ("agent", "turn", "fact", "cause", "dropped_seq")}),
                    timestamp=_ns(epoch, now)))
        return root_events

    def _root_span(self, frame: _SessionFrame, row: Mapping[str, Any], root_events: list[Any]) -> Any:
        """The session's ``invoke_agent`` span: the session row's columns, its usage, its outcome as status."""
        outcome = str(row["outcome"])
        first_agent = str(frame.calls[0]["agent"]) if frame.calls else "agent"
        attributes = {"gen_ai.operation.name": "invoke_agent", **frame.common, "gen_ai.agent.name": first_agent,
                      "gen_ai.request.model": frame.model,
                      **_attributes("ctxbench.", row, skip=("model",))}
        for column, name in (("input_tokens", "gen_ai.usage.input_tokens"),
                             ("output_tokens", "gen_ai.usage.output_tokens"),
                             ("cached_input_tokens", "gen_ai.usage.cache_read.input_tokens")):
            if _plain(row.get(column)) is not None:
                attributes[name] = int(row[column])
        status = self.Status(self.StatusCode.UNSET)
        if outcome != "success":
            attributes["error.type"] = outcome
            detail = _plain(row.get("error"))
            status = self.Status(self.StatusCode.ERROR, f"outcome {outcome}" + (f": {detail}" if detail else ""))
        return self.ReadableSpan(
            f"invoke_agent {first_agent}", context=frame.root, parent=None, resource=self.resource,
            attributes=attributes, events=root_events, kind=self.SpanKind.INTERNAL, status=status,
            start_time=_ns(self.run.epoch_ns, 0.0), end_time=_ns(self.run.epoch_ns, frame.end_s),
            instrumentation_scope=self.scope)


# --- the export -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExportSummary:
    """What an export did: traces and spans made, by kind, and how many reached the exporter."""

    run_dir: Path
    destination: str
    traces: int
    #: Spans made per kind: ``invoke_agent``, ``chat``, ``execute_tool``.
    spans_by_kind: Mapping[str, int]
    #: Span events made (compactions, lost facts, loop verdicts).
    span_events: int
    batches: int
    batches_failed: int
    spans_sent: int
    spans_failed: int
    #: False when the run has no events.parquet: no tool spans and no compaction or lost-fact events.
    has_events: bool
    #: The last failure the exporter reported, "" when none did.
    last_error: str = ""
    #: Spans a receiver rejected in batches it answered with success (OTLP partial success), counted in
    #: ``spans_failed`` too, and the last message it gave for them.
    spans_rejected: int = 0
    rejected_message: str = ""
    #: The spans went to a file (``written``) rather than to a receiver (``sent``).
    to_file: bool = False

    @property
    def spans(self) -> int:
        """Spans made, every kind."""
        return sum(self.spans_by_kind.values())

    @property
    def ok(self) -> bool:
        """Every span reached the exporter."""
        return self.spans_failed == 0

    def line(self) -> str:
        """The summary in one line."""
        kinds = ", ".join(f"{n} {kind}" for kind, n in self.spans_by_kind.items())
        text = (f"{self.traces} traces, {self.spans} spans ({kinds}), {self.span_events} span events "
                f"-> {self.destination}")
        if not self.has_events:
            text += f"; no {EVENTS_TABLE} in the run: no execute_tool spans or compaction events"
        if self.ok:
            return f"{text}; {self.spans_sent} spans {'written' if self.to_file else 'sent'} in {self.batches} batches"
        why = f" (last error: {self.last_error})" if self.last_error else ""
        return (f"{text}; FAILED: {self.spans_failed} of {self.spans} spans not exported{self.rejection()}, "
                f"{self.batches_failed} of {self.batches} batches failed{why}")

    def rejection(self) -> str:
        """", N rejected by the receiver (its message)" when a receiver rejected spans it answered 200 for."""
        if not self.spans_rejected:
            return ""
        said = f": {self.rejected_message}" if self.rejected_message else ": it gave no reason"
        return f", {self.spans_rejected} rejected by the receiver although it answered 200{said}"


class _ErrorCapture(logging.Handler):
    """Keeps the last message the OTLP exporter logs about a failed batch, and keeps it off stderr: the
    summary reports it once instead of a log line per batch."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.last = " ".join(record.getMessage().split())


@contextlib.contextmanager
def _captured_exporter_logs() -> Iterator[_ErrorCapture]:
    capture = _ErrorCapture()
    loggers = [logging.getLogger(name) for name in _EXPORTER_LOGGERS]
    saved = [logger.propagate for logger in loggers]
    for logger in loggers:
        logger.addHandler(capture)
        logger.propagate = False
    try:
        yield capture
    finally:
        for logger, propagate in zip(loggers, saved, strict=True):
            logger.removeHandler(capture)
            logger.propagate = propagate


class _Sender:
    """The batches of one export: the spans waiting for a batch, what was sent, failed or rejected, and,
    once sending is pointless (`GIVE_UP_AFTER` failures in a row, or a refused connection), why."""

    def __init__(self, exporter: SpanExporter, batch_size: int, capture: _ErrorCapture) -> None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self._exporter, self._batch_size, self._capture = exporter, batch_size, capture
        self._success, self._failure = SpanExportResult.SUCCESS, SpanExportResult.FAILURE
        self.pending: list[ReadableSpan] = []
        self.batches = self.batches_failed = self.spans_sent = self.spans_failed = self.failed_in_a_row = 0
        self.spans_rejected = self.unsent = 0
        self.rejected_message = ""
        self.given_up = ""  # why the rest is not sent, once it is not

    def add(self, made: _SessionSpans) -> None:
        """One session's spans: queued and sent in whole batches, or only counted once given up."""
        if self.given_up:
            self.unsent += 1 + made.chat + made.tools
        else:
            self.pending.extend(made.spans)
        while not self.given_up and len(self.pending) >= self._batch_size:
            self.flush()

    def drain(self) -> None:
        """Send what is left, unless given up."""
        while self.pending and not self.given_up:
            self.flush()

    def flush(self) -> None:
        """Send the next batch and count how it went."""
        batch = self.pending[:self._batch_size]
        del self.pending[:self._batch_size]
        self.batches += 1
        try:
            result = self._exporter.export(batch)
        # An exporter is told never to raise; one that does loses this batch, counted like any other.
        except Exception as error:
            self._capture.last = f"{type(error).__name__}: {' '.join(str(error).split())}"
            result = self._failure
        if result == self._success:
            rejected = min(len(batch), max(0, int(getattr(self._exporter, "rejected", 0) or 0)))
            if rejected:
                self.spans_rejected += rejected
                self.rejected_message = (str(getattr(self._exporter, "rejected_message", "") or "")
                                         or self.rejected_message)
            self.spans_sent += len(batch) - rejected
            self.spans_failed += rejected
            self.failed_in_a_row = 0
        else:
            self.spans_failed += len(batch)
            self.batches_failed += 1
            self.failed_in_a_row += 1
            if getattr(self._exporter, "unreachable", False):
                self.given_up = "the receiver refused the connection"
            elif self.failed_in_a_row >= GIVE_UP_AFTER:
                self.given_up = f"{GIVE_UP_AFTER} failed in a row"

    def count_the_rest(self) -> str:
        """Count the spans never sent once given up as failed batches; the note for the summary's error."""
        if not self.given_up:
            return ""
        # The spans not sent would have made whole batches after the ones tried (the stream is cut in
        # order), the last one short.
        left = len(self.pending) + self.unsent
        self.pending.clear()
        skipped = -(-left // self._batch_size)
        self.batches += skipped
        self.batches_failed += skipped
        self.spans_failed += left
        return f" (the last {skipped} batches were not sent: {self.given_up})" if skipped else ""


def export_run(run_dir: str | Path, exporter_or_config: ExporterConfig | SpanExporter, *,
               batch_size: int = BATCH_SIZE, progress: Callable[[int, int], None] | None = None) -> ExportSummary:
    """Export every session of the finished run in ``run_dir`` as one trace each (module docstring) to
    ``exporter_or_config``: a checked `ExporterConfig` (its exporter is made and shut down here) or any SDK
    ``SpanExporter`` (left open: the caller owns it).

    OtelInputError, before any span is exported, when ``run_dir`` is not a finished simulated run (or one
    of its tables holds a number that cannot be a time or a count); OtelConfigError when OpenTelemetry is
    not installed. A batch the exporter fails is counted in the summary, never raised, and so are the spans
    a receiver rejected in a batch it accepted. After `GIVE_UP_AFTER` failed batches in a row, or the first
    one whose receiver refused the connection, the rest are counted as failed without being made or sent.
    An interrupted export (Ctrl-C, SIGTERM) leaves a file destination as it was: the partial file is
    removed. ``progress(sessions_done, sessions_total)`` hears each session."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    _require_opentelemetry("sdk")
    run = _open_run(Path(run_dir))
    owned = isinstance(exporter_or_config, ExporterConfig)
    if isinstance(exporter_or_config, ExporterConfig):
        exporter = make_exporter(exporter_or_config)
        destination = exporter_or_config.destination
        to_file = exporter_or_config.kind == "file"
    else:
        exporter = exporter_or_config
        destination = type(exporter).__name__
        to_file = False
    builder = _Builder(run)
    counts = {"invoke_agent": 0, "chat": 0, "execute_tool": 0}
    span_events = 0
    total = len(run.sessions)

    with _captured_exporter_logs() as capture:
        sender = _Sender(exporter, batch_size, capture)
        finished = False
        try:
            for done, row in enumerate(run.sessions.to_dict("records"), start=1):
                # Once nothing more is sent, the rest is counted, not built: building is most of the time.
                made = builder.count(row) if sender.given_up else builder.session(row)
                counts["invoke_agent"] += 1
                counts["chat"] += made.chat
                counts["execute_tool"] += made.tools
                span_events += made.events
                sender.add(made)
                if progress is not None:
                    progress(done, total)
            sender.drain()
            finished = True
        finally:
            if owned:
                # Interrupted: nothing half-written is put in place (a file destination keeps its old bytes).
                abandon = getattr(exporter, "abandon", None)
                if finished or abandon is None:
                    exporter.shutdown()
                else:
                    abandon()
        last_error = str(getattr(exporter, "error", "") or "") or capture.last
        last_error += sender.count_the_rest()
        if owned and getattr(exporter, "lost", False):
            # The file could not be put in place at the end: nothing the export wrote is readable.
            sender.spans_failed, sender.batches_failed, sender.spans_sent = (
                sender.spans_failed + sender.spans_sent, sender.batches, 0)

    return ExportSummary(run_dir=Path(run_dir), destination=destination, traces=counts["invoke_agent"],
                         spans_by_kind=counts, span_events=span_events, batches=sender.batches,
                         batches_failed=sender.batches_failed, spans_sent=sender.spans_sent,
                         spans_failed=sender.spans_failed, has_events=run.events is not None,
                         last_error=last_error.strip(), spans_rejected=sender.spans_rejected,
                         rejected_message=sender.rejected_message, to_file=to_file)
