"""Hostile cases for where commands write: ``--out`` targets, exports, signals, receivers.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops).

What the table can say about writing: every command that takes an output path (``export-otel --out``,
``view --out``, ``run`` / ``sweep --out`` as a directory, ``validation --out`` / ``--doc``) refuses, in one
line naming the flag and before any work, each kind of path it cannot or may not write: a run directory's
own file (this run's, another run's, one of its parts, a link to one), the wrong kind (a directory for a
file, a file for a directory), a path under a file, a name longer than any file system holds, a dangling
link, a folder nobody can write in (/proc). Shards spelled with digits ``int`` does not read, and
``list runs`` over directories whose manifest cannot be read, are rows too. Signals, receivers, worker
processes and replay state are not table rows: they have tests beside the commands'.
"""

from __future__ import annotations

import json

from tests.hostile.cases import GARBAGE, OK, OTHER, TINY, USAGE, Case, Op, add, write

#: The families this module adds (each case id starts with its family and a dash). The rows for
#: ``validation`` are in that family (ids ``validation-writers-...``): the suite runs them with the
#: experiments stubbed out, so a refusal that came too late fails fast instead of running for half an hour.
FAMILIES: tuple[str, ...] = ("writers",)

LONG = "w" * 300
#: A folder of the kernel's that no one can make a file in, root included.
PROC = "/proc/ctxbench-writers"

#: Output paths for a file (``--out`` of export-otel and view): id -> (path, setup, what the error names).
#: ``o`` is a copy of another run (the ``other`` source, parts kept); ``{good}`` the good run itself.
FILE_TARGETS: dict[str, tuple[str, tuple[Op, ...], tuple[str, ...]]] = {
    **{f"good-{name}": ("{good}/" + name, (), (name, "run directory"))
       for name in ("sessions.parquet", "calls.parquet", "manifest.json", "config.toml")},
    "other-run-sessions": ("o/sessions.parquet", (Op("copy", "o", "other"),), ("o/sessions.parquet",)),
    "other-run-events": ("o/events.parquet", (Op("copy", "o", "other"),), ("o/events.parquet",)),
    "other-run-part": ("o/parts/00-0000000.jsonl", (Op("copy", "o", "other"),), ("o/parts",)),
    "other-run-new-part": ("o/parts/new.jsonl", (Op("copy", "o", "other"),), ("o/parts",)),
    "link-to-a-table": ("l.jsonl", (Op("copy", "o", "other"), Op("symlink", "l.jsonl", "o/calls.parquet")),
                        ("l.jsonl", "run directory")),
    "a-directory": ("adir", (Op("mkdir", "adir"),), ("adir",)),
    "under-a-file": ("afile/t.out", (write("afile", "keep me\n"),), ("afile",)),
    "300-char-name": (LONG, (), ("255",)),
    "dangling-link": ("dl.out", (Op("symlink", "dl.out", "nowhere/t.out"),), ("dl.out",)),
    "in-proc": (f"{PROC}/t.out", (), ("/proc",)),
}


def _damaged(setup: tuple[Op, ...]) -> str | None:
    """The other run a case copied: it must come out unchanged."""
    return "o" if any(op.kind == "copy" and op.path == "o" for op in setup) else None


for _name, (_path, _setup, _must) in FILE_TARGETS.items():
    add(Case(f"writers-export-otel-out-{_name}", "writers", ("export-otel", "run", "--out", _path, "--quiet"),
             (Op("copy", "run", "good"), *_setup), USAGE, ("--out", *_must), damaged=_damaged(_setup) or "run"))
    add(Case(f"writers-view-out-{_name}", "writers", ("view", "run", "--out", _path),
             (Op("copy", "run", "good"), *_setup), USAGE, ("--out", *_must), damaged=_damaged(_setup) or "run"))

#: export-otel's default file, in the run directory: its folder must be one that can be written.
add(Case("writers-export-otel-run-in-proc", "writers", ("export-otel", "/proc/self", "--quiet"), (), USAGE,
         ("/proc/self",)))

#: Output paths for a directory (``run --out``, ``sweep --out``): id -> (path, setup, what the error names).
DIR_TARGETS: dict[str, tuple[str, tuple[Op, ...], tuple[str, ...]]] = {
    "a-file": ("afile", (write("afile", "keep me\n"),), ("afile", "not a directory")),
    "a-run-table": ("{good}/sessions.parquet", (), ("sessions.parquet",)),
    "inside-a-runs-parts": ("o/parts/nested", (Op("copy", "o", "other"),), ("o/parts", "run directory")),
    "a-runs-parts": ("o/parts", (Op("copy", "o", "other"),), ("o/parts", "run directory")),
    "under-a-file": ("afile/out", (write("afile", "keep me\n"),), ("afile",)),
    "300-char-name": (LONG, (), ("255",)),
    "dangling-link": ("dl", (Op("symlink", "dl", "nowhere/out"),), ("dl",)),
    "in-proc": (f"{PROC}/out", (), ("/proc",)),
}
_CONFIG = (write("cfg.toml", TINY),)
for _name, (_path, _setup, _must) in DIR_TARGETS.items():
    _out = None if _path.startswith(("{good}", "/proc")) or _path == LONG else _path
    add(Case(f"writers-run-out-{_name}", "writers", ("run", "cfg.toml", "--out", _path, "--quiet", "--no-report"),
             (*_CONFIG, *_setup), USAGE, ("--out", *_must), out=_out, damaged=_damaged(_setup)))
for _name in ("a-file", "a-run-table", "inside-a-runs-parts", "dangling-link", "in-proc"):
    _path, _setup, _must = DIR_TARGETS[_name]
    add(Case(f"writers-sweep-out-{_name}", "writers",
             ("sweep", "cfg.toml", "--param", "sliding_window.window_size=5,10", "--out", _path, "--quiet",
              "--no-report"), (*_CONFIG, *_setup), USAGE, ("--out", *_must), damaged=_damaged(_setup)))

#: validation: --out (a directory of runs) and --doc (a file, its assets in <doc dir>/validation/).
VAL = ("validation", "--quick", "--quiet")
VALIDATION: dict[str, tuple[tuple[str, ...], tuple[Op, ...], tuple[str, ...]]] = {
    "out-300-char-name": (("--out", LONG, "--doc", "d.md"), (), ("--out", "255")),
    "out-dangling-link": (("--out", "dl", "--doc", "d.md"), (Op("symlink", "dl", "nowhere/v"),), ("--out", "dl")),
    "out-in-proc": (("--out", f"{PROC}/v", "--doc", "d.md"), (), ("--out", "/proc")),
    "out-under-a-file": (("--out", "afile/v", "--doc", "d.md"), (write("afile", "keep me\n"),), ("--out", "afile")),
    "out-a-run-directory": (("--out", "{good}", "--doc", "d.md"), (), ("--out", "run directory")),
    "out-inside-a-runs-parts": (("--out", "o/parts/v", "--doc", "d.md"), (Op("copy", "o", "other"),),
                                ("--out", "o/parts")),
    "doc-300-char-name": (("--out", "v", "--doc", LONG), (), ("--doc", "255")),
    "doc-dangling-link": (("--out", "v", "--doc", "dl.md"), (Op("symlink", "dl.md", "nowhere/d.md"),),
                          ("--doc", "dl.md")),
    "doc-in-proc": (("--out", "v", "--doc", f"{PROC}/d.md"), (), ("--doc", "/proc")),
    "doc-a-run-manifest": (("--out", "v", "--doc", "{good}/manifest.json"), (), ("--doc", "manifest.json")),
    "doc-a-run-table": (("--out", "v", "--doc", "o/sessions.parquet"), (Op("copy", "o", "other"),),
                        ("--doc", "o/sessions.parquet")),
    "doc-assets-folder-a-file": (("--out", "v", "--doc", "docs/d.md"), (write("docs/validation", "keep me\n"),),
                                 ("--doc", "docs/validation")),
}
for _name, (_flags, _setup, _must) in VALIDATION.items():
    add(Case(f"validation-writers-{_name}", "validation", (*VAL, *_flags), _setup, USAGE, _must,
             out="v" if "v" in _flags else "d.md", damaged=_damaged(_setup)))

#: --shard spelled with what is not ASCII digits K/N (``str.isdigit`` takes superscripts, which ``int``
#: does not read), or with more digits than any count: id -> text.
SHARDS = {
    "superscript": "\u00b9/\u00b2", "arabic-indic": "\u0661/\u0662", "fullwidth": "\uff11/\uff12",
    "devanagari": "\u0967/\u0968", "circled": "\u2460/\u2461", "mixed": "1/\u00b2", "plus-sign": "+1/2",
    "spaces": " 1 / 2 ", "three-parts": "1/2/3", "fraction-slash": "1\u20442", "5000-digits": "1/" + "9" * 5000,
    "empty": "", "zero": "0/0", "k-above-n": "3/2",
}
for _name, _text in SHARDS.items():
    add(Case(f"writers-shard-{_name}", "writers", ("run", "cfg.toml", "--shard", _text, "--out", "out", "--quiet"),
             _CONFIG, USAGE, ("--shard",), out="out"))
    if _name in ("superscript", "fullwidth", "5000-digits"):
        add(Case(f"writers-shard-sweep-{_name}", "writers",
                 ("sweep", "cfg.toml", "--param", "sliding_window.window_size=5,10", "--shard", _text, "--out", "out",
                  "--quiet"), _CONFIG, USAGE, ("--shard",), out="out"))

#: list runs over a folder with one run directory whose manifest cannot be read, beside a good run: the
#: damaged one is listed as such and the listing goes on (exit 0); nothing is written.
_MANIFEST = "runs/bad/manifest.json"


def _manifest_naming(table: str) -> bytes:
    return json.dumps({"run_id": "bad", "sha256": {table: "0" * 64}}).encode()


UNREADABLE: dict[str, tuple[Op, ...]] = {
    "manifest-a-directory": (Op("mkdir", _MANIFEST),),
    "manifest-a-fifo": (Op("fifo", _MANIFEST),),
    "manifest-garbage": (write(_MANIFEST, GARBAGE),),
    "manifest-empty": (write(_MANIFEST, b""),),
    "manifest-dangling-link": (Op("mkdir", "runs/bad"), Op("symlink", _MANIFEST, "nowhere.json")),
    "manifest-link-loop": (Op("mkdir", "runs/bad"), Op("symlink", _MANIFEST, "manifest.json")),
    "manifest-names-a-300-char-table": (write(_MANIFEST, _manifest_naming("t" * 300)),),
    "manifest-names-a-nul-table": (write(_MANIFEST, _manifest_naming("a\u0000b")),),
    "manifest-names-a-fifo-table": (write(_MANIFEST, _manifest_naming("t.parquet")), Op("fifo", "runs/bad/t.parquet")),
    "manifest-names-a-surrogate-table": (write(_MANIFEST, b'{"run_id": "bad", "sha256": {"\\ud800": "' + b"0" * 64
                                                + b'"}}'),),
    "config-a-fifo": (Op("fifo", "runs/bad/config.toml"),),
    "name-with-a-line-break": (Op("mkdir", "runs/bad\nname/manifest.json"),),
}
for _name, _setup in UNREADABLE.items():
    add(Case(f"writers-list-runs-{_name}", "writers", ("list", "runs", "runs"),
             (Op("copy", "runs/good", "good"), Op("copy", "runs/other", "other"), *_setup), OK, damaged="runs"))
add(Case("writers-list-runs-folder-a-fifo", "writers", ("list", "runs", "pipe"), (Op("fifo", "pipe"),), USAGE,
         ("pipe",)),
    Case("writers-list-runs-folder-a-file", "writers", ("list", "runs", "afile"), (write("afile", OTHER),), USAGE,
         ("afile",)))
