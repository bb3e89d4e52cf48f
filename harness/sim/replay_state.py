"""A replay's saved state (`Replay.save`, `Replay.restore`): the signed header, the key, the pickling.

Beside the kernel rather than in it: none of it is on the replay's hot path, and the kernel is compiled
(setup.py), where a subclass of the C pickler cannot be.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import os
import pickle
import secrets
import stat
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import harness
from harness.core.context import Window
from harness.core.files import StagedFile
from harness.core.messages import FactScanner, Message, TextMeter
from harness.core.tokens import default_tokenizer

if TYPE_CHECKING:
    from harness.sim.kernel import Replay

__all__ = ["REPLAY_STATE_FORMAT", "STATE_KEY_ENV", "STATE_KEY_FILE", "ReplayStateError", "restored_state",
           "saved_state", "state_key", "state_key_path"]


#: The layout of saved replay state; bump it whenever what `Replay.save` writes changes shape (2: signed;
#: 3: each agent's window state in an `AgentWindow`; 4: a window's record and decoy counts).
REPLAY_STATE_FORMAT = 4
_STATE_MAGIC = b"ctxbench replay state\n"


class ReplayStateError(ValueError):
    """Saved replay state that cannot be saved or restored; ``str()`` is one line saying why."""


def saved_state(replay: Replay, key: bytes | str | None) -> bytes:
    """`Replay.save`: the header (format, version, checksum, signature), then the pickled replay."""
    secret = _key_bytes(key) if key is not None else state_key()
    buffer = io.BytesIO()
    try:
        _StatePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(replay)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise ReplayStateError(f"replay state cannot be saved: {_one_line(e)}") from e
    payload = buffer.getvalue()
    header = json.dumps({"format": REPLAY_STATE_FORMAT, "ctxbench": harness.__version__,
                         "sha256": hashlib.sha256(payload).hexdigest(),
                         "hmac_sha256": _signature(secret, REPLAY_STATE_FORMAT, harness.__version__, payload)},
                        sort_keys=True)
    return _STATE_MAGIC + header.encode() + b"\n" + payload


def restored_state(cls: type[Replay], data: object, key: bytes | str | None) -> Replay:
    """`Replay.restore`: the replay in ``data``, unpickled only once `_signed_payload` has checked it."""
    payload = _signed_payload(data, key)
    try:
        replayer = pickle.loads(payload)
    except Exception as e:  # checked bytes that still fail: a class changed without a version bump
        raise ReplayStateError(f"replay state cannot be loaded: {_one_line(e)}") from e
    if not isinstance(replayer, cls):
        raise ReplayStateError(f"replay state holds a {type(replayer).__name__}, not a {cls.__name__}")
    # The model keeps refused stubs by id (the message kept alive with it): ids are per process.
    dead = replayer.model.dead_stubs
    replayer.model.dead_stubs = {id(m): m for m in dead.values()}
    return replayer


def _signed_payload(data: object, key: bytes | str | None) -> bytes:
    """The pickled replay in ``data``, once its header, checksum and signature under ``key`` all hold."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ReplayStateError(f"replay state must be bytes, not {type(data).__name__}")
    data = bytes(data)
    if not data.startswith(_STATE_MAGIC):
        raise ReplayStateError("not a ctxbench replay state (it does not start with the state's header)")
    line, newline, payload = data[len(_STATE_MAGIC):].partition(b"\n")
    try:
        header = json.loads(line)
        fmt, version, digest = header["format"], header["ctxbench"], header["sha256"]
    except (ValueError, TypeError, KeyError):
        raise ReplayStateError("replay state is damaged: its header is not readable") from None
    if fmt != REPLAY_STATE_FORMAT or version != harness.__version__:
        raise ReplayStateError(
            f"replay state was saved by ctxbench {version} (state format {fmt}); this is ctxbench "
            f"{harness.__version__} (state format {REPLAY_STATE_FORMAT}): replay the session again")
    if not newline or not isinstance(digest, str) or hashlib.sha256(payload).hexdigest() != digest:
        raise ReplayStateError("replay state is damaged: its bytes do not match their checksum")
    # The checksum above is carried by the bytes themselves; only the key's signature says that this
    # user's ctxbench wrote them. Nothing is unpickled before it matches.
    secret = _key_bytes(key) if key is not None else state_key()
    signature = header.get("hmac_sha256")
    if not isinstance(signature, str) or not hmac.compare_digest(
            signature.encode("utf-8", "replace"), _signature(secret, fmt, version, payload).encode()):
        raise ReplayStateError(
            "replay state is not signed with " + ("the key given" if key is not None else "this user's key")
            + ": it was saved with another key (another user or machine: restore it with that key, "
            "Replay.restore(data, key=...) or CTXBENCH_STATE_KEY) or it was changed since; it is not loaded")
    return payload


#: The variable whose text, when set, is the key replay state is signed with (instead of the key file).
STATE_KEY_ENV = "CTXBENCH_STATE_KEY"
#: The key file's name, in ``$XDG_STATE_HOME/ctxbench/`` (default ``~/.local/state/ctxbench/``).
STATE_KEY_FILE = "replay-state.key"
#: Random bytes of a new key (written as hex), and the fewest a key file or a given key may hold.
_KEY_BYTES = 32
_MIN_KEY_LENGTH = 16


def state_key_path() -> Path:
    """Where this user's replay-state key is kept: ``$XDG_STATE_HOME/ctxbench/replay-state.key``, or
    ``~/.local/state/ctxbench/replay-state.key`` when the variable is unset or not an absolute path (as
    the XDG Base Directory specification says)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    if base and os.path.isabs(base):
        return Path(base) / "ctxbench" / STATE_KEY_FILE
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):  # no HOME and no password entry
        raise ReplayStateError(f"replay state key: no home directory to keep it in; set {STATE_KEY_ENV} or "
                               "XDG_STATE_HOME, or pass key=") from None
    return home / ".local" / "state" / "ctxbench" / STATE_KEY_FILE


def state_key() -> bytes:
    """The key replay state is signed with: ``$CTXBENCH_STATE_KEY`` when set, else this user's key file
    (`state_key_path`), made on first use with 32 random bytes, readable by this user only (0600).
    ReplayStateError (one line naming the file) when the file cannot be read or made, or when it is not
    a regular file of this user's that only this user can read (another user could sign state with it)."""
    given = os.environ.get(STATE_KEY_ENV)
    if given:
        return _key_bytes(given, source=STATE_KEY_ENV)
    path = state_key_path()
    key = _read_key_file(path)
    return key if key is not None else _make_key_file(path)


def _key_bytes(key: bytes | str, *, source: str = "key") -> bytes:
    secret = key.encode() if isinstance(key, str) else bytes(key)
    if len(secret.strip()) < _MIN_KEY_LENGTH:
        raise ReplayStateError(f"replay state {source}: a key of at least {_MIN_KEY_LENGTH} bytes is needed "
                               f"(got {len(secret.strip())})")
    return secret.strip()


def _signature(key: bytes, fmt: object, version: object, payload: bytes) -> str:
    """The HMAC-SHA256 of the state's format, version and payload under ``key``, in hex."""
    signed = hmac.new(key, json.dumps([fmt, version]).encode() + b"\n", hashlib.sha256)
    signed.update(payload)
    return signed.hexdigest()


def _read_key_file(path: Path) -> bytes | None:
    """The key in ``path``; None when there is no such file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as e:  # a link (O_NOFOLLOW), a folder on the way that is a file, a permission
        raise ReplayStateError(f"replay state key {path}: cannot be read ({e.strerror or e}); remove it or set "
                               f"{STATE_KEY_ENV}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReplayStateError(f"replay state key {path}: not a regular file; remove it or set {STATE_KEY_ENV}")
        if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o077):
            raise ReplayStateError(f"replay state key {path}: must belong to this user and be readable by nobody "
                                   f"else (mode 0600), or anyone who can read it could make state that runs code "
                                   f"here; chmod 600 it, or remove it")
        data = os.read(fd, 4096)
    except OSError as e:
        raise ReplayStateError(f"replay state key {path}: cannot be read ({e.strerror or e})") from None
    finally:
        os.close(fd)
    if len(data.strip()) < _MIN_KEY_LENGTH:
        raise ReplayStateError(f"replay state key {path}: damaged (too short); remove it (state saved with it "
                               "can then not be restored)")
    return data.strip()


def _make_key_file(path: Path) -> bytes:
    """Make ``path`` with a new random key, unless another process made it meanwhile; the key it holds."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        staged = StagedFile(path, mode=0o600)
        try:
            with os.fdopen(staged.create(), "wb") as f:
                f.write(secrets.token_hex(_KEY_BYTES).encode() + b"\n")
                f.flush()
                os.fsync(f.fileno())
            assert staged.path is not None
            # A link, not a rename: a key another process put there first is never replaced (state it
            # signed would no longer restore).
            with contextlib.suppress(FileExistsError):
                os.link(staged.path, path)
        finally:
            staged.discard()
    except OSError as e:
        raise ReplayStateError(f"replay state key {path}: cannot be made ({e.strerror or e}); set "
                               f"{STATE_KEY_ENV} or XDG_STATE_HOME, or pass key=") from None
    key = _read_key_file(path)
    if key is None:
        raise ReplayStateError(f"replay state key {path}: vanished as it was made")
    return key


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


class _StatePickler(pickle.Pickler):
    """Pickles a replay with what is process-local left out: a window is saved as its messages and
    totals (the list subclass cannot be rebuilt by appending to it before its totals exist), a meter as
    its fact scanner (no tokenizer, no memo of measured texts), the default tokenizer as a reference
    to this process's default tokenizer."""

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is Window:
            return _window, (list(obj), obj._touched, obj.tokens, obj.raw_tokens, obj.fact_counts, obj.step_kinds,
                             obj.record_counts, obj.decoy_counts)
        if kind is TextMeter:
            if obj.tokenizer is not default_tokenizer():
                raise pickle.PicklingError("a message was measured with a tokenizer other than the default one")
            return _meter, (obj.scanner,)
        if obj is default_tokenizer():
            return default_tokenizer, ()
        return NotImplemented


def _window(messages: list[Message], touched: int | None, tokens: int, raw_tokens: int, fact_counts: Counter[str],
            step_kinds: Counter[tuple[str, str, str]], record_counts: Counter[str],
            decoy_counts: Counter[str]) -> Window:
    """A saved window as it was: its messages and running totals as saved, not recounted."""
    window = Window.__new__(Window)
    list.extend(window, messages)
    window._touched = touched
    window.tokens, window.raw_tokens = tokens, raw_tokens
    window.fact_counts, window.step_kinds = fact_counts, step_kinds
    window.record_counts, window.decoy_counts = record_counts, decoy_counts
    return window


def _meter(scanner: FactScanner) -> TextMeter:
    """A saved meter with this process's default tokenizer."""
    return TextMeter(default_tokenizer(), scanner)
