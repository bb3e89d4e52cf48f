"""The text format of an offloaded tool output's stub (docs/strategies.md 3.7), rendered and parsed.

It lives in the core of the harness so that `harness.core.messages` can compute a handle's preview
tokens from the stub text alone, and the offload strategy renders the same format it is parsed with.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

STUB_RE = re.compile(r"^\[offloaded tool output ref_[0-9a-f]{12}: ")
HANDLE_RE = re.compile(r"^ref_[0-9a-f]{12}$")
HEAD_MARK = "--- preview head ---"
#: The stub's second line: the call whose output it stands for.
CALL_PREFIX = "call: "
TAIL_MARK = "--- preview tail ---"


def handle_for(payload: str) -> str:
    """Content address of a payload: ``ref_`` plus the first 12 hex digits of its sha256."""
    return "ref_" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


def is_stub(content: str) -> bool:
    """Whether ``content`` is the stub of an offloaded tool output."""
    return STUB_RE.match(content) is not None


def preview(content: str, preview_chars: int) -> tuple[str, str]:
    """(head, tail): about ``preview_chars`` characters of the start and end, cut at line ends."""
    h = preview_chars // 2
    head = content[:h]
    if "\n" in head:
        head = head[: head.rfind("\n")]
    tail = content[-(preview_chars - h) :] if preview_chars - h > 0 else ""
    if "\n" in tail:
        tail = tail[tail.find("\n") + 1 :]
    return head, tail


def render_stub(content: str, call: str, preview_chars: int) -> str:
    """The stub that stands for an offloaded ``content``: its handle and size, the ``call`` that produced
    it (the tool and its arguments as the context shows the call; empty when unknown), and a head and
    tail preview of about ``preview_chars`` characters. Nothing the offloader could not know: it names
    no fact (docs/model.md v3 change 9)."""
    handle = handle_for(content)
    lines = [
        f"[offloaded tool output {handle}: {len(content.encode('utf-8'))} bytes, "
        f"{len(content.splitlines())} lines]",
        f"{CALL_PREFIX}{call}",
    ]
    if preview_chars > 0:
        head, tail = preview(content, preview_chars)
        lines += [HEAD_MARK, head, TAIL_MARK, tail]
    lines.append(f'--- call retrieve_payload(handle="{handle}") for the full text ---')
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class ParsedStub:
    handle: str
    #: The call whose output it stands for, as its stub writes it ("" when the stub names none).
    call: str
    preview: str  # head and tail text, the only raw tool output a stub carries


def parse_stub(content: str) -> ParsedStub | None:
    """Read a stub back; None when ``content`` is not one."""
    if not is_stub(content):
        return None
    lines = content.split("\n")
    handle = lines[0][len("[offloaded tool output ") :].split(":", 1)[0]
    call = lines[1][len(CALL_PREFIX):] if len(lines) > 1 and lines[1].startswith(CALL_PREFIX) else ""
    preview_text = ""
    if HEAD_MARK in lines and TAIL_MARK in lines:
        head_at, tail_at = lines.index(HEAD_MARK), lines.index(TAIL_MARK)
        preview_text = "\n".join(lines[head_at + 1 : tail_at] + lines[tail_at + 1 : -1])
    return ParsedStub(handle, call, preview_text)
