"""Hostile cases for what ``replay`` and ``fit`` read: trace files and folders as a careless user or an unlucky
file system hands them over.

Rows of the same table as `tests.hostile.cases` (see its docstring for the expectations and the ops).

Kinds, each tried in several shapes (and through ``fit`` where it reads the same way): folders whose symbolic
links loop or lead twice to one file; named pipes and devices where a trace, an event or a message file is
expected; integers too long to convert; lone UTF-16 surrogates in ids, texts, names and keys (read, replaced
by U+FFFD, the tables still sound); names that TOML must escape (tool names and file names with newlines,
quotes, backslashes, control characters); outputs that cannot or must not be written (under a file, too long,
a dangling link, a run directory or its files, a report folder holding other files); sessions with no model
call; the default output folder's name; empty tool outputs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from tests.hostile.cases import OK, USAGE, Case, Op, add

#: The families this module adds (each case id starts with its family and a dash).
FAMILIES: tuple[str, ...] = ("readers",)

F = "readers"
TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
#: One sample session of every format: a file or a session folder.
SAMPLES = {
    "anthropic": TRACES / "anthropic" / "incident_triage.json",
    "openai-chat": TRACES / "openai-chat" / "incident_triage.json",
    "openai-responses": TRACES / "openai-responses" / "incident_triage.json",
    "atif": TRACES / "atif" / "incident_triage.json",
    "strands": TRACES / "strands" / "session_incident-triage-0314",
    "openhands": TRACES / "openhands" / "incident-triage-0314",
}
GOOD = SAMPLES["anthropic"]
REPLAY = ("--out", "out", "--quiet", "--no-report", "--strategies", "unbounded,sliding_window")
FIT = ("--out", "w.toml", "--quiet", "--sessions", "1")
#: Texts every sample holds once: the end of the task, a tool output's header line, a tool's name.
TASK_END = 'Find the cause."'
OUTPUT_MARK = "READY   STATUS"
TOOL = "kubectl_get_pods"
#: Where each format keeps the session's own id (anthropic and openai-chat have none: it is added).
IDS = {"openai-responses": "resp_incident0314", "atif": "incident-triage-0314", "strands": "incident-triage-0314",
       "openhands": "incident-triage-0314"}


def write(path: str, data: str | bytes) -> Op:
    return Op("write", path, data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data)


def sample(fmt: str, edit: Callable[[str], str] = lambda text: text, *, under: str = "",
           skip: str | None = None) -> tuple[Op, ...]:
    """Writes recreating the sample of ``fmt`` under ``under`` (its own name kept), each file's text passed
    through ``edit``; ``skip``: a file (relative to the sample) left out."""
    source = SAMPLES[fmt]
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
    ops = []
    for path in files:
        relative = path.name if source.is_file() else f"{source.name}/{path.relative_to(source)}"
        if skip is not None and relative.endswith(skip):
            continue
        ops.append(write(f"{under}{relative}", edit(path.read_text())))
    return tuple(ops)


def name_of(fmt: str) -> str:
    return SAMPLES[fmt].name


def json_text(text: str) -> str:
    """``text`` as it stands between a JSON string's quotes (lone surrogates as \\u escapes)."""
    return json.dumps(text)[1:-1]


_CHECK_TABLES = "tables"


def replay(case_id: str, argv: tuple[str, ...], setup: tuple[Op, ...], expect: str = USAGE,
           must: tuple[str, ...] = (), *, finite: str | None = _CHECK_TABLES, produces: tuple[str, ...] = ()) -> None:
    """``replay ARGV`` with the quick flags into ``out``; an OK run's tables must be finite (re-read) unless
    ``finite=None`` (a run without calls has an empty calls table)."""
    if finite == _CHECK_TABLES:
        finite = "out" if expect == OK else None
    add(Case(f"{F}-replay-{case_id}", F, ("replay", *argv, *REPLAY), setup, expect, must, out="out", finite=finite,
             produces=produces))


def fit(case_id: str, argv: tuple[str, ...], setup: tuple[Op, ...], expect: str = USAGE,
        must: tuple[str, ...] = (), *, flags: tuple[str, ...] = FIT, produces: tuple[str, ...] | None = None) -> None:
    """``fit ARGV FLAGS`` (by default into ``w.toml`` and ``w-fit/``, which an OK case must produce)."""
    if produces is None:
        produces = ("w.toml", "w-fit/report.html") if expect == OK else ()
    add(Case(f"{F}-fit-{case_id}", F, ("fit", *argv, *flags), setup, expect, must,
             out="w.toml" if flags == FIT else None, produces=produces))


# Symbolic links: loops, and two ways to one file ---------------------------------------------------------------

_T = GOOD.name
_G = "d/" + _T
LOOPS: dict[str, tuple[Op, ...]] = {
    "loop-to-itself": (write(_G, GOOD.read_bytes()), Op("symlink", "d/again", ".")),
    "loop-to-parent": (Op("mkdir", "d/sub"), write("d/sub/" + _T, GOOD.read_bytes()), Op("symlink", "d/sub/up", "..")),
    "two-loops": (Op("mkdir", "d/a"), Op("mkdir", "d/b"), write("d/a/" + _T, GOOD.read_bytes()),
                  Op("symlink", "d/a/to-b", "../b"), Op("symlink", "d/b/to-a", "../a"), Op("symlink", "d/a/up", "..")),
    "many-loops": (Op("mkdir", "d/a/b/c"), write("d/a/b/c/" + _T, GOOD.read_bytes()), Op("symlink", "d/l1", "."),
                   *(Op("symlink", f"{where}/{name}", target) for where in ("d/a/b", "d/a/b/c")
                     for name, target in (("l1", "."), ("l2", ".."), ("l3", "../..")))),
    "file-twice": (write(_G, GOOD.read_bytes()), Op("symlink", "d/same.json", _T), Op("mkdir", "d/sub"),
                   Op("symlink", "d/sub/again.json", "../" + _T)),
    "session-dir-twice": (*sample("openhands", under="d/"), Op("symlink", "d/conversation", name_of("openhands"))),
    "loop-inside-session-dirs": (*sample("strands", under="d/"), *sample("openhands", under="d/"),
                                 Op("symlink", f"d/{name_of('strands')}/agents/agent_ops/messages/up", ".."),
                                 Op("symlink", f"d/{name_of('openhands')}/events/up", "..")),
    "deep-folders": (write("d/" + "deeper/" * 60 + _T, GOOD.read_bytes()),),
}
for _name, _ops in LOOPS.items():
    replay(_name, ("d",), _ops, OK)
replay("folder-and-file-given-both", ("d", _G), LOOPS["file-twice"], OK)
replay("folder-given-twice", ("d", "d/sub/.."), LOOPS["loop-to-parent"], OK)
fit("two-loops", ("d",), LOOPS["two-loops"], OK)
BROKEN_LINKS: dict[str, tuple[tuple[str, ...], tuple[Op, ...], str]] = {
    "link-loop-in-folder": (("d",), (write(_G, GOOD.read_bytes()), Op("symlink", "d/loop.json", "loop.json")),
                            "loop.json"),
    "link-dangling-in-folder": (("d",), (write(_G, GOOD.read_bytes()), Op("symlink", "d/gone.json", "nothing.json")),
                                "gone.json"),
    "link-loop-given": (("loop.json",), (Op("symlink", "loop.json", "loop.json"),), "loop.json"),
    "link-pair-loop-given": (("a.json",), (Op("symlink", "a.json", "b.json"), Op("symlink", "b.json", "a.json")),
                             "a.json"),
    "link-dangling-given": (("gone.json",), (Op("symlink", "gone.json", "nothing.json"),), "gone.json"),
    "event-link-to-a-folder": (
        (name_of("openhands"),),
        (*sample("openhands"), Op("symlink", f"{name_of('openhands')}/events/"
                                  "event-00015-0000000f-0000-4000-8000-00000000000f.json", ".")),
        "event-00015"),
}
for _name, (_argv, _ops, _named) in BROKEN_LINKS.items():
    replay(_name, _argv, _ops, USAGE, (_named,))
fit("link-loop-in-folder", ("d",), BROKEN_LINKS["link-loop-in-folder"][1], USAGE, ("loop.json",))


# Named pipes and devices: refused in one line, never waited on -------------------------------------------------

_OH, _ST = name_of("openhands"), name_of("strands")
_EVENT = "events/event-00005-00000005-0000-4000-8000-000000000005.json"
_MESSAGE = "agents/agent_ops/messages/message_2.json"
PIPES: dict[str, tuple[tuple[str, ...], tuple[Op, ...], str]] = {
    "fifo-given": (("pipe.json",), (Op("fifo", "pipe.json"),), "pipe.json"),
    "fifo-jsonl-given": (("pipe.jsonl",), (Op("fifo", "pipe.jsonl"),), "pipe.jsonl"),
    "fifo-among-good": ((_T, "pipe.json"), (write(_T, GOOD.read_bytes()), Op("fifo", "pipe.json")), "pipe.json"),
    "fifo-in-folder": (("d",), (write(_G, GOOD.read_bytes()), Op("fifo", "d/zz.json")), "zz.json"),
    "fifo-linked-in-folder": (("d",), (write(_G, GOOD.read_bytes()), Op("fifo", "pipe"),
                                       Op("symlink", "d/zz.json", "../pipe")), "zz.json"),
    "fifo-openhands-event": ((_OH,), (*sample("openhands", skip=_EVENT), Op("fifo", f"{_OH}/{_EVENT}")),
                             "event-00005"),
    "fifo-openhands-base-state": ((_OH,), (*sample("openhands", skip="base_state.json"),
                                           Op("fifo", f"{_OH}/base_state.json")), "base_state.json"),
    "fifo-strands-message": ((_ST,), (*sample("strands", skip=_MESSAGE), Op("fifo", f"{_ST}/{_MESSAGE}")),
                             "message_2.json"),
    "fifo-strands-session-file": ((_ST,), (*sample("strands", skip="/session.json"),
                                           Op("fifo", f"{_ST}/session.json")), "session.json"),
    "fifo-session-dir-in-folder": (("d",), (*sample("openhands", under="d/", skip=_EVENT),
                                            Op("fifo", f"d/{_OH}/{_EVENT}")), "event-00005"),
    "device-given": (("null.json",), (Op("symlink", "null.json", "/dev/null"),), "null.json"),
    "folder-named-like-an-event": ((_OH,), (*sample("openhands", skip=_EVENT), Op("mkdir", f"{_OH}/{_EVENT}")),
                                   "event-00005"),
}
for _name, (_argv, _ops, _named) in PIPES.items():
    replay(_name, _argv, _ops, USAGE, (_named,))
for _name in ("fifo-given", "fifo-openhands-event", "fifo-strands-message"):
    fit(_name, PIPES[_name][0], PIPES[_name][1], USAGE, (PIPES[_name][2],))
replay("fifo-hidden-in-folder", ("d",), (write(_G, GOOD.read_bytes()), Op("fifo", "d/.pipe.json")), OK)
replay("fifo-not-a-trace-name-in-folder", ("d",), (write(_G, GOOD.read_bytes()), Op("fifo", "d/pipe.txt")), OK)


# Integers too long to convert: one line naming the file and the JSON path ---------------------------------------

def _with_key(value: str) -> Callable[[str], str]:
    return lambda text: text.replace(TASK_END, f'{TASK_END}, "big": {value}', 1)


_WHERE = {"openhands": "event-00001", "strands": "message_0.json"}
for _fmt in SAMPLES:
    replay(f"long-integer-{_fmt}", (name_of(_fmt),), sample(_fmt, _with_key("9" * 5000)), USAGE,
           (_WHERE.get(_fmt, name_of(_fmt)), ".big", "5,000 digits"))
replay("long-negative-integer", (_T,), sample("anthropic", _with_key("-" + "7" * 4400)), USAGE, (_T, ".big"))
replay("long-integer-in-an-array", (_T,), sample("anthropic", lambda t: t.replace(
    TASK_END, f'{TASK_END}, "list": [1, [2, {"9" * 6000}]]', 1)), USAGE, (_T, ".list[1][1]"))
_JSONL = TRACES / "openai-chat" / "replication_lag.jsonl"
_lines = _JSONL.read_text().splitlines()
replay("long-integer-jsonl-line", (_JSONL.name,),
       (write(_JSONL.name, "\n".join([_lines[0], '{"big": ' + "1" * 5000 + ", " + _lines[1][1:], *_lines[2:]])
              + "\n"),), USAGE, (_JSONL.name, "line 2", ".big"))
replay("long-integer-in-tool-arguments", (name_of("openai-chat"),), sample("openai-chat", lambda t: t.replace(
    '\\"limit\\": 2', '\\"limit\\": ' + "3" * 5000, 1)), OK)
fit("long-integer", (_T,), sample("anthropic", _with_key("9" * 5000)), USAGE, (_T, ".big"))


# Lone surrogates: read, each replaced by U+FFFD (a note says so), the tables and report sound ------------------

def _id_edit(fmt: str) -> Callable[[str], str]:
    if fmt in IDS:
        return lambda text: text.replace(IDS[fmt], IDS[fmt] + "-\\ud800", 1)
    return lambda text: text.replace("{", '{"id": "cut-\\udbff-id",', 1)


for _fmt in SAMPLES:
    replay(f"surrogate-in-task-{_fmt}", (name_of(_fmt),),
           sample(_fmt, lambda t: t.replace(TASK_END, 'Find the cause \\ud83d."', 1)), OK)
    replay(f"surrogate-in-tool-output-{_fmt}", (name_of(_fmt),),
           sample(_fmt, lambda t: t.replace(OUTPUT_MARK, "READY \\udc00 STATUS")), OK)
    replay(f"surrogate-in-id-{_fmt}", (name_of(_fmt),), sample(_fmt, _id_edit(_fmt)), OK)
replay("surrogate-in-tool-name", (_T,), sample("anthropic", lambda t: t.replace(TOOL, TOOL + "\\ud800")), OK)
replay("surrogate-in-a-key", (_T,), sample("anthropic", lambda t: t.replace(TASK_END, TASK_END + ', "k\\udfff": 1', 1)),
       OK)
replay("surrogates-reversed-pair", (_T,), sample("anthropic", lambda t: t.replace(
    TASK_END, 'Find the cause \\ude00\\ud83d."', 1)), OK)
replay("surrogate-in-tool-arguments", (name_of("openai-chat"),), sample("openai-chat", lambda t: t.replace(
    '\\"limit\\": 2', '\\"limit\\": \\"\\\\ud800\\"', 1)), OK)
replay("surrogate-in-jsonl", (_JSONL.name,), (write(_JSONL.name, _JSONL.read_text().replace(
    "replication", "replica\\udc80tion")),), OK)
add(Case(f"{F}-replay-surrogate-with-report", F, ("replay", _T, "--out", "out", "--quiet", "--strategies", "unbounded"),
         sample("anthropic", lambda t: t.replace(OUTPUT_MARK, "READY \\udc00 STATUS").replace(
             TOOL, TOOL + "\\ud800")), OK, out="out", finite="out", produces=("out/report.html", "out/report.md")))
_BAD_NAME = "cut-\udcff-name.json"  # a file name whose bytes are not UTF-8 (0xff)
replay("file-name-not-utf8", (_BAD_NAME,), (write(_BAD_NAME, GOOD.read_bytes()),), OK)
fit("surrogate-in-tool-output", (_T,), sample("anthropic", lambda t: t.replace(OUTPUT_MARK, "READY \\udc00 STATUS")),
    OK)
fit("surrogate-in-tool-name", (_T,), sample("anthropic", lambda t: t.replace(TOOL, TOOL + "\\ud800")), OK)
fit("file-name-not-utf8", (_BAD_NAME,), (write(_BAD_NAME, GOOD.read_bytes()),), OK)


# Names TOML must escape: the config fit writes parses (tool names and file names of any character) ----------------

TOOL_NAMES = {
    "newline": "get\npods", "quote": 'get"pods', "backslash": "get\\pods\\", "control": "get\x01\x1b[31mpods\x7f",
    "tab-and-return": "get\tpods\r", "toml-syntax": '"]\n[scenarios]\nname = "x', "line-separator": "get\u2028pods",
    "dollars": "$\\frac{x$ | a", "long": "t" * 5000, "nul": "get\x00pods",
}


def _renamed(tool: str) -> Callable[[str], str]:
    """An edit giving the sample's first tool the name ``tool`` (its calls and its declaration)."""
    return lambda text: text.replace(TOOL, json_text(tool))


for _name, _tool in TOOL_NAMES.items():
    fit(f"tool-name-{_name}", (_T,), sample("anthropic", _renamed(_tool)), OK)
FILE_NAMES = {"newline": "tr\nace.json", "quote": 'tr"ace.json', "backslash": "tr\\ace.json",
              "comma": "a, b.json", "control": "tr\x1bace\x7f.json", "hash": "# tr[a]ce = 1.json"}
for _name, _file in FILE_NAMES.items():
    fit(f"file-name-{_name}", (_file,), (write(_file, GOOD.read_bytes()),), OK)
replay("file-name-newline", (FILE_NAMES["newline"],), (write(FILE_NAMES["newline"], GOOD.read_bytes()),), OK)


# Outputs: refused before any work when they cannot or must not be written --------------------------------------

_LONG = "x" * 300
_GOOD_OPS = (write(_T, GOOD.read_bytes()),)
_FILE = write("afile", "keep me\n")
OUT_CASES: dict[str, tuple[tuple[str, ...], tuple[Op, ...], tuple[str, ...], str | None]] = {
    # name: (flags, extra setup, must name, the damaged path to keep)
    "out-under-a-file": (("--out", "afile/w.toml"), (_FILE,), ("afile",), "afile"),
    "out-name-too-long": (("--out", _LONG + ".toml"), (), ("--out", "255"), None),
    "out-dangling-link": (("--out", "w.toml"), (Op("symlink", "w.toml", "nowhere/w.toml"),), ("w.toml", "nowhere"),
                          "w.toml"),
    "out-a-folder": (("--out", "adir", "--force"), (Op("mkdir", "adir"),), ("adir",), "adir"),
    "out-a-pipe": (("--out", "w.toml"), (Op("fifo", "w.toml"),), ("w.toml",), None),
    "out-missing-folder": (("--out", "nodir/w.toml"), (), ("nodir",), None),
    "out-run-config": (("--out", "run/config.toml", "--force"), (Op("copy", "run", "good"),), ("config.toml", "run"),
                       "run"),
    "out-run-table": (("--out", "run/sessions.parquet", "--force"), (Op("copy", "run", "good"),),
                      ("sessions.parquet",), "run"),
    "out-run-manifest-via-link": (("--out", "m.toml", "--force"),
                                  (Op("copy", "run", "good"), Op("symlink", "m.toml", "run/manifest.json")),
                                  ("m.toml",), "run"),
    "out-run-parts": (("--out", "run/parts/w.toml", "--force"), (Op("copy", "run", "good"),), ("run",), "run"),
    "out-good-config": (("--out", "{good}/config.toml", "--force"), (), ("config.toml",), None),
    "out-inside-report": (("--out", "rep/w.toml", "--report", "rep", "--force"), (Op("mkdir", "rep"),), ("rep",),
                          "rep"),
    "report-run-dir": (("--out", "w.toml", "--report", "run", "--force"), (Op("copy", "run", "good"),),
                       ("--report", "run directory"), "run"),
    "report-good-run-dir": (("--out", "w.toml", "--report", "{good}", "--force"), (), ("--report", "run directory"),
                            None),
    "report-holds-other-files": (("--out", "w.toml", "--report", "rep", "--force"),
                                 (write("rep/report.html", "old\n"), write("rep/notes.txt", "mine\n")),
                                 ("notes.txt", "--force"), "rep"),
    "report-holds-other-plots": (("--out", "w.toml", "--report", "rep", "--force"),
                                 (write("rep/report.md", "old\n"), write("rep/plots/mine.png", "mine\n")),
                                 ("mine.png",), "rep"),
    "report-holds-a-folder": (("--out", "w.toml", "--report", "rep", "--force"), (Op("mkdir", "rep/report.html"),),
                              ("report.html",), "rep"),
    "report-is-the-cwd": (("--out", "w.toml", "--report", ".", "--force"), (), ("--report",), None),
    "report-a-file": (("--out", "w.toml", "--report", "afile", "--force"), (_FILE,), ("afile",), "afile"),
    "report-a-link": (("--out", "w.toml", "--report", "rep-link", "--force"),
                      (write("rep/report.html", "old\n"), Op("symlink", "rep-link", "rep")), ("rep-link",), "rep"),
    "report-dangling-link": (("--out", "w.toml", "--report", "rep"), (Op("symlink", "rep", "nowhere"),), ("rep",),
                             "rep"),
    "report-name-too-long": (("--out", "w.toml", "--report", _LONG), (), ("--report", "255"), None),
    "report-under-a-file": (("--out", "w.toml", "--report", "afile/rep"), (_FILE,), ("afile",), "afile"),
}
for _name, (_flags, _setup, _must, _damaged) in OUT_CASES.items():
    add(Case(f"{F}-fit-{_name}", F, ("fit", _T, *_flags, "--quiet", "--sessions", "1"), (*_GOOD_OPS, *_setup), USAGE,
             _must, damaged=_damaged))
fit("report-an-earlier-report", (_T,), (*_GOOD_OPS, write("rep/report.html", "old\n"), write("rep/report.md", "old\n"),
                                         write("rep/plots/qq_turns.png", "old\n"),
                                         write("rep/.report.md.a1b2c3.tmp", "left by a killed write\n")),
    OK, flags=("--out", "w.toml", "--report", "rep", "--force", "--quiet", "--sessions", "1"),
    produces=("w.toml", "rep/report.html", "rep/plots/tool_mix.png"))
REPLAY_OUT: dict[str, tuple[str, tuple[Op, ...], tuple[str, ...], str | None]] = {
    "out-under-a-file": ("afile/run", (_FILE,), ("afile",), "afile"),
    "out-name-too-long": (_LONG, (), ("--out", "255"), None),
    "out-dangling-link": ("run", (Op("symlink", "run", "nowhere"),), ("run", "nowhere"), "run"),
    "out-a-pipe": ("run", (Op("fifo", "run"),), ("run",), None),
    "out-a-run-dir": ("run", (Op("copy", "run", "good"),), ("run",), "run"),
    "out-the-good-run-dir": ("{good}", (), ("--out",), None),
    "out-run-parts": ("run/parts/sub", (Op("copy", "run", "good"),), ("run",), "run"),
}
for _name, (_out, _setup, _must, _damaged) in REPLAY_OUT.items():
    add(Case(f"{F}-replay-{_name}", F, ("replay", _T, "--out", _out, "--quiet", "--strategies", "unbounded"),
             (*_GOOD_OPS, *_setup), USAGE, _must, damaged=_damaged))
add(Case(f"{F}-replay-out-missing-folders", F, ("replay", _T, "--out", "a/b/run", "--quiet", "--no-report",
                                                  "--strategies", "unbounded"), _GOOD_OPS, OK,
         produces=("a/b/run/sessions.parquet",)))


# Sessions with no model call: replayed as sessions without calls; nothing to fit in them alone ------------------

TASK_ONLY: dict[str, tuple[str, tuple[Op, ...]]] = {
    "anthropic": ("task.json", (write("task.json", '{"system": "s", "messages": [{"role": "user", '
                                                   '"content": "go"}]}'),)),
    "openai-chat": ("task.json", (write("task.json", '{"messages": [{"role": "system", "content": "s"}, '
                                                     '{"role": "user", "content": "go"}]}'),)),
    "openai-responses": ("task.json", (write("task.json", '{"instructions": "s", "input": "go"}'),)),
    "atif": ("task.json", (write("task.json", json.dumps({
        "schema_version": "ATIF-v1.8", "session_id": "t", "agent": {"name": "a", "version": "1"},
        "steps": [{"step_id": 1, "source": "user", "message": "go"}]})),)),
    "strands": ("session_t", (write("session_t/session.json", '{"session_id": "t"}'),
                              write("session_t/agents/agent_a/messages/message_0.json", json.dumps({
                                  "message": {"role": "user", "content": [{"text": "go"}]}, "message_id": 0,
                                  "redact_message": None})))),
    "openhands": ("conv", (write("conv/events/event-00000-00000000-0000-4000-8000-000000000000.json", json.dumps({
        "kind": "MessageEvent", "source": "user", "llm_message": {"role": "user",
                                                                 "content": [{"type": "text", "text": "go"}]}})),)),
}
for _fmt, (_trace, _ops) in TASK_ONLY.items():
    replay(f"task-only-{_fmt}", (_trace,), _ops, OK, finite=None, produces=("out/sessions.parquet",
                                                                            "out/calls.parquet"))
add(Case(f"{F}-replay-task-only-with-report", F, ("replay", "task.json", "--out", "out", "--quiet"),
         TASK_ONLY["anthropic"][1], OK, out="out", produces=("out/report.html", "out/report.md")))
replay("task-only-among-good", ("task.json", _T), (*TASK_ONLY["anthropic"][1], *_GOOD_OPS), OK)
_ANSWER = write("answer.json", '{"messages": [{"role": "user", "content": "go"}, '
                               '{"role": "assistant", "content": "done"}]}')
replay("answer-without-tools", ("answer.json",), (_ANSWER,), OK)
fit("task-only", ("task.json",), TASK_ONLY["anthropic"][1], USAGE, ("task.json", "tool output"))
fit("task-only-strands", ("session_t",), TASK_ONLY["strands"][1], USAGE, ("session_t",))
fit("answer-without-tools", ("answer.json",), (_ANSWER,), USAGE, ("answer.json",))
fit("task-only-among-good", ("task.json", _T), (*TASK_ONLY["anthropic"][1], *_GOOD_OPS), OK)


# The default run directory: runs/replay-<name> for one trace, runs/replay for several ----------------------------

_QUICK = ("--quiet", "--no-report", "--strategies", "unbounded")
add(
    Case(f"{F}-replay-default-out-one-file", F, ("replay", _T, *_QUICK), _GOOD_OPS, OK,
         produces=(f"runs/replay-{GOOD.stem}/sessions.parquet",)),
    Case(f"{F}-replay-default-out-one-folder", F, ("replay", "d", *_QUICK), (write(_G, GOOD.read_bytes()),), OK,
         produces=("runs/replay-d/sessions.parquet",)),
    Case(f"{F}-replay-default-out-several", F, ("replay", _T, "answer.json", *_QUICK), (*_GOOD_OPS, _ANSWER), OK,
         produces=("runs/replay/sessions.parquet",)),
    Case(f"{F}-replay-default-out-taken", F, ("replay", _T, "answer.json", *_QUICK),
         (*_GOOD_OPS, _ANSWER, write("runs/replay/keep.txt", "mine\n")), USAGE, ("runs/replay",),
         damaged="runs"),
    Case(f"{F}-replay-default-out-odd-name", F, ("replay", "a\nb.json", *_QUICK),
         (write("a\nb.json", GOOD.read_bytes()),), OK, produces=("runs/replay-a_b/sessions.parquet",)),
    Case(f"{F}-replay-default-out-long-name", F, ("replay", "n" * 250 + ".json", *_QUICK),
         (write("n" * 250 + ".json", GOOD.read_bytes()),), OK, produces=(f"runs/replay-{'n' * 200}/sessions.parquet",)),
)


# Empty tool outputs are outputs ---------------------------------------------------------------------------------

#: The sample with its first tool output (the pod list, a string of no quotes) made empty.
_EMPTY_ONE = sample("anthropic", lambda t: re.sub(r'"NAME [^"]*"', '""', t, count=1))
fit("empty-tool-output", (_T,), _EMPTY_ONE, OK)
fit("only-empty-tool-outputs", ("empty.json",), (write("empty.json", json.dumps({"messages": [
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "kubectl_get", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": ""}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "kubectl_logs", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": []}]},
    {"role": "assistant", "content": "done"}]})),), OK)
replay("empty-tool-output", (_T,), _EMPTY_ONE, OK)
