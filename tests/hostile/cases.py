"""The hostile-input table: what a careless or unlucky user gives ``ctxbench``, and what must happen.

Plain data: `CASES` is a list of frozen `Case` rows, built once at import by the small generators
below (every numeric field times every hostile value, every run-directory file times every kind of
damage). ``test_hostile_inputs.py`` runs each case in-process in a fresh directory: it applies the
case's `Op` list, calls ``harness.cli.main(argv)`` and checks the expectation:

- ``USAGE``: exit 2, stderr exactly one ``ctxbench: error:`` line naming every ``must_name``;
- ``OK``: exit 0 (for a run: every number in its tables finite);
- ``OK_OR_USAGE``: either of the above, each with its own checks (the spec allows both);
- ``REFUSE_OR_IDENTICAL``: exit 2 as for USAGE, or exit 0 with the tables of ``identical``
  byte-identical to the undamaged run's (``reference``: ``good``'s ``sessions.parquet`` and
  ``calls.parquet``, or ``replay``'s, which adds ``hidden.parquet``).

Whatever the expectation: no traceback, the session's good run directory unchanged, and after an exit 2
the ``damaged`` directory unchanged and ``out`` absent or unchanged (a failed command writes nothing).

Paths are relative to the case's directory. ``{good}`` in argv is the session's good run directory.
Sources a case can copy (``Op("copy", dst, src)``): ``good`` (a finished run of `TINY` with its report),
``shard1`` and ``shard2`` (its two shards), ``other`` (a run of `OTHER`, another config), ``examples``
(the checkout's examples/ directory), ``replay`` (an accounting run: ``ctxbench replay`` of
`REPLAY_TRACES` under `REPLAY_CONFIG`, parts kept), ``replay-compact`` (the same as the CLI leaves it,
parts removed) and ``replay-other`` (the same traces under `REPLAY_OTHER`, parts kept); ``good``,
``shard1``, ``shard2`` and ``other`` keep their parts too, ``compact``, ``compact1`` and ``compact2`` are
them as ``ctxbench run`` leaves them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

USAGE = "usage"
OK = "ok"
OK_OR_USAGE = "ok_or_usage"
REFUSE_OR_IDENTICAL = "refuse_or_identical"
EXPECTATIONS = (USAGE, OK, OK_OR_USAGE, REFUSE_OR_IDENTICAL)

FAMILIES = ("files", "toml", "top", "scenarios", "strategies", "runtimes", "model", "sweep", "cli", "report", "compare",
            "merge", "resume", "validation", "traces", "replay-resume")


@dataclass(frozen=True)
class Op:
    """One step of a case's setup, relative to its directory.

    kind: ``write`` (path, data: bytes), ``mkdir`` (path), ``symlink`` (path -> data as text),
    ``copy`` (path <- source named by data), ``damage`` (path, data: one of `DAMAGES`),
    ``copy_file`` (path <- ``<source>/<relative path>`` in data), ``fifo`` (a named pipe at path), ``chmod``
    (path, data: the mode in octal, e.g. ``"000"``), ``alter_part`` (path: change one
    number of its first session row; data ``intact`` keeps a header checksum of the rows consistent, so the
    part is well-formed but says something else, ``tampered`` leaves it stale), ``empty_table`` (path: the
    same parquet schema, no rows).
    """

    kind: str
    path: str
    data: bytes | str = b""


@dataclass(frozen=True)
class Case:
    id: str
    family: str
    argv: tuple[str, ...]
    setup: tuple[Op, ...] = ()
    expect: str = USAGE
    #: Texts the error line must contain (on exit 2).
    must_name: tuple[str, ...] = ()
    #: Where the command would write results: absent or unchanged after an exit 2.
    out: str | None = None
    #: A directory the case damaged: unchanged after an exit 2.
    damaged: str | None = None
    #: On exit 0, this directory's tables must be byte-identical to the undamaged run's.
    identical: str | None = None
    #: The source whose tables ``identical`` is compared with: ``good`` (a simulated run) or ``replay``
    #: (an accounting run).
    reference: str = "good"
    #: On exit 0, every number in this run directory's tables must be finite.
    finite: str | None = None
    #: On exit 0, these files must exist.
    produces: tuple[str, ...] = ()


# Configs ---------------------------------------------------------------------------------------------

#: Top-level fields of the tiny config, as TOML text (None drops the key).
TOP: dict[str, str | None] = {"sessions": "2", "seed": "1", "executor": '"serial"', "jobs": "1", "batch_size": "1"}
SCENARIO = '[[scenarios]]\nname = "log_triage"\nturns = 20\n'
STRATEGIES = '[[strategies]]\nname = "unbounded"\n[[strategies]]\nname = "sliding_window"\n'


def toml(top: dict[str, str | None] | None = None, scenarios: str = SCENARIO, strategies: str = STRATEGIES,
         tail: str = "") -> str:
    """The tiny config with some top-level fields replaced (raw TOML values) and other tables."""
    fields = TOP | (top or {})
    return "".join(f"{k} = {v}\n" for k, v in fields.items() if v is not None) + scenarios + strategies + tail


#: The config of the good run directory (two batches of one session each, so two shards of one part).
TINY = toml()
#: Another config (another seed): its run directory holds other results.
OTHER = toml({"seed": "2"})

#: A hostile numeric value: id -> TOML spelling.
VALUES = {"inf": "inf", "nan": "nan", "neg1": "-1", "1e308": "1e308", "str1": '"1"', "true": "true"}

#: Names in a run directory.
PART = "00-0000001.jsonl"  # the second batch's part: in the good run and in shard 2
BATCH = "00-0000001"  # its batch id: an error names the part by its file name or this id
TARGETS = {  # id -> path inside the run directory
    "config.toml": "config.toml", "manifest.json": "manifest.json", "sessions.parquet": "sessions.parquet",
    "calls.parquet": "calls.parquet", "part": f"parts/{PART}", "parts": "parts", "plots": "plots",
    "report.html": "report.html",
}
DIR_TARGETS = ("parts", "plots")
#: Damage to a file: missing, empty, cut in half, binary garbage, a well-formed file of the wrong kind, a
#: directory in its place. To a directory: missing, emptied, its files cut in half, a garbage file added,
#: an entry of the wrong kind inside, a file in its place.
DAMAGES = ("missing", "empty", "truncated", "garbage", "wrong_type", "dir_swap")
GARBAGE = b"\x00\xff\xfe\x80garbage \x1b[31m not a ctxbench file \x89PNG\r\n\x1a\n\xc3\x28"
#: What the error line names when a target is damaged.
#: ``a|b`` in a must_name: either text will do.
TARGET_NAME = {"config.toml": "config.toml", "manifest.json": "manifest.json", "sessions.parquet": "sessions.parquet",
               "calls.parquet": "calls.parquet", "part": BATCH, "parts": f"parts|{BATCH}", "plots": "plots",
               "report.html": "report.html"}

RUN_FLAGS = ("--out", "out", "--quiet", "--no-report")

CASES: list[Case] = []


def add(*cases: Case) -> None:
    CASES.extend(cases)


def write(path: str, text: str | bytes) -> Op:
    return Op("write", path, text.encode() if isinstance(text, str) else text)


def config_cases(family: str, name: str, text: str | bytes, expect: str = USAGE, must: tuple[str, ...] = (),
                 *, run: bool = False, validate: bool = True) -> None:
    """``validate cfg.toml`` for ``text`` (and ``run cfg.toml`` when ``run``): the file is named in any error."""
    setup = (write("cfg.toml", text),)
    named = ("cfg.toml", *must)
    if validate:
        add(Case(f"{family}-{name}", family, ("validate", "cfg.toml"), setup, expect, named))
    if run:
        add(Case(f"{family}-{name}-run", family, ("run", "cfg.toml", *RUN_FLAGS), setup, expect, named, out="out",
                 finite="out"))


# files: the config path itself -----------------------------------------------------------------------

LONG_NAME = "c" * 295 + ".toml"
FILE_CASES: list[tuple[str, str, tuple[Op, ...], tuple[str, ...]]] = [
    ("directory", "cfg.toml", (Op("mkdir", "cfg.toml"),), ("cfg.toml",)),
    ("binary", "cfg.toml", (write("cfg.toml", GARBAGE + bytes(range(256))),), ("cfg.toml",)),
    ("utf16", "cfg.toml", (write("cfg.toml", TINY.encode("utf-16")),), ("cfg.toml",)),
    ("latin1-byte", "cfg.toml", (write("cfg.toml", "# caf\u00e9 config\n".encode("latin-1") + TINY.encode()),),
     ("cfg.toml",)),
    ("symlink-loop", "loop.toml", (Op("symlink", "loop.toml", "loop.toml"),), ("loop.toml",)),
    ("symlink-dangling", "dangling.toml", (Op("symlink", "dangling.toml", "nowhere.toml"),), ("dangling.toml",)),
    ("through-a-file", "cfg.toml/x.toml", (write("cfg.toml", TINY),), ("cfg.toml",)),
    ("300-char-name", LONG_NAME, (), ()),
    ("missing", "nope.toml", (), ("nope.toml",)),
    ("empty-path", "", (), ()),
    ("json-file", "cfg.json", (write("cfg.json", '{"sessions": 2}'),), ("cfg.json",)),
]
for _name, _path, _setup, _must in FILE_CASES:
    add(Case(f"files-{_name}", "files", ("validate", _path), _setup, USAGE, _must))
    if _path:  # `run ""` must never fall back to the default config's thousand sessions
        add(Case(f"files-{_name}-run", "files", ("run", _path, *RUN_FLAGS), _setup, USAGE, _must, out="out"))
add(Case("files-empty-file", "files", ("validate", "cfg.toml"), (write("cfg.toml", b""),), OK),
    Case("files-crlf", "files", ("validate", "cfg.toml"), (write("cfg.toml", TINY.replace("\n", "\r\n")),), OK),
    Case("files-crlf-run", "files", ("run", "cfg.toml", *RUN_FLAGS), (write("cfg.toml", TINY.replace("\n", "\r\n")),),
         OK, finite="out"),
    Case("files-utf8-bom", "files", ("validate", "cfg.toml"), (write("cfg.toml", b"\xef\xbb\xbf" + TINY.encode()),),
         OK_OR_USAGE, ("cfg.toml",)),
    Case("files-nul-byte", "files", ("validate", "cfg.toml"), (write("cfg.toml", TINY.encode() + b"\x00\n"),), USAGE,
         ("cfg.toml",)))


# toml: syntax errors (each names the file) -----------------------------------------------------------

DEEP = "[" * 5000 + "]" * 5000
TOML_CASES = {
    "unterminated-string": 'sessions = 2\n[[scenarios]]\nname = "log_triage\n',
    "unterminated-multiline-string": 'sessions = 2\n[[scenarios]]\nname = """log_triage\n',
    "unterminated-literal-string": "sessions = 2\n[[scenarios]]\nname = 'log_triage\n",
    "duplicate-key": "sessions = 2\nsessions = 3\n",
    "duplicate-table": '[sweep]\nmodels = ["mid"]\n[sweep]\nmodels = ["small"]\n',
    "table-after-array-of-tables": '[[scenarios]]\nname = "log_triage"\n[scenarios]\nname = "mix"\n',
    "array-of-tables-after-table": '[model]\nbase = "mid"\n[[model]]\nbase = "small"\n',
    "extend-inline-table": 'model = {base = "mid"}\n[model]\nk = 1.0\n',
    "dotted-key-over-string": 'model = "mid"\nmodel.k = 1.0\n',
    "missing-value": "sessions =\n",
    "bare-value": "2\n",
    "lone-equals": "= 2\n",
    "bad-escape": '[[scenarios]]\nname = "log\\qtriage"\n',
    "surrogate-escape": '[[scenarios]]\nname = "\\uD800"\n',
    "unclosed-array": '[sweep]\nmodels = ["mid", "small"\n',
    "unclosed-inline-table": 'model = {base = "mid"\n',
    "newline-in-inline-table": 'model = {base = "mid",\nk = 1.0}\n',
    "trailing-comma-inline-table": 'model = {base = "mid",}\n',
    "leading-zero": "seed = 01\n",
    "double-underscore": "seed = 1__0\n",
    "invalid-date": "seed = 1979-13-01\n",
    "control-char-in-string": '[[scenarios]]\nname = "log\x07triage"\n',
    "space-in-bare-key": "my key = 1\n",
    "unclosed-table-header": '[[strategies]\nname = "unbounded"\n',
    "empty-table-header": "[]\nx = 1\n",
    "deeply-nested-array": f"seed = {DEEP}\n",
}
for _name, _text in TOML_CASES.items():
    config_cases("toml", _name, _text)


# top: top-level fields ---------------------------------------------------------------------------------

for _field in ("sessions", "seed", "jobs", "batch_size"):
    for _vid, _value in VALUES.items():
        config_cases("top", f"{_field}-{_vid}", toml({_field: _value}), USAGE, (_field,), run=True)
    config_cases("top", f"{_field}-float", toml({_field: "2.0"}), USAGE, (_field,))
config_cases("top", "sessions-0", toml({"sessions": "0"}), USAGE, ("sessions",))
config_cases("top", "sessions-array", toml({"sessions": "[2]"}), USAGE, ("sessions",))
config_cases("top", "seed-date", toml({"seed": "1979-05-27"}), USAGE, ("seed",))
config_cases("top", "seed-huge-int", toml({"seed": "99999999999999999999999999999"}), OK_OR_USAGE, ("seed",),
             run=True)
config_cases("top", "executor-threads", toml({"executor": '"threads"'}), USAGE, ("executor",))
config_cases("top", "executor-number", toml({"executor": "1"}), USAGE, ("executor",))
config_cases("top", "executor-empty", toml({"executor": '""'}), USAGE, ("executor",))
config_cases("top", "scheduler-not-an-address", toml({"scheduler": '"not an address"'}), USAGE, ("scheduler",))
config_cases("top", "scheduler-number", toml({"scheduler": "5"}), USAGE, ("scheduler",))
config_cases("top", "scheduler-bad-port", toml({"scheduler": '"tcp://localhost:99999"'}), USAGE, ("scheduler",))
config_cases("top", "model-unknown", toml({"model": '"gpt-9"'}), USAGE, ("model", "gpt-9"), run=True)
config_cases("top", "model-number", toml({"model": "3"}), USAGE, ("model",))
config_cases("top", "model-array", toml({"model": "[]"}), USAGE, ("model",))
config_cases("top", "model-empty-string", toml({"model": '""'}), USAGE, ("model",))
config_cases("top", "unknown-key", toml({"sesions": "2"}), USAGE, ("sesions",))
config_cases("top", "unknown-table", toml(tail="[extra]\nx = 1\n"), USAGE, ("extra",))
config_cases("top", "scenarios-as-table", toml(scenarios='[scenarios]\nname = "log_triage"\n'), USAGE, ("scenarios",))
config_cases("top", "strategies-as-string", toml({"strategies": '"unbounded"'}, strategies=""), USAGE,
             ("strategies",))

# [series] and memory (persistent memory across a series of sessions)
SERIES_BAD = {
    "length-0": ("length = 0", "length"), "length-neg": ("length = -3", "length"),
    "length-string": ('length = "10"', "length"), "length-float": ("length = 2.5", "length"),
    "p_write-2": ("length = 2\np_write = 2.0", "p_write"), "p_write-nan": ("length = 2\np_write = nan", "p_write"),
    "p_change-neg": ("length = 2\np_change = -0.1", "p_change"),
    "p_change-inf": ("length = 2\np_change = inf", "p_change"),
    "unknown-key": ("length = 2\nlenght = 3", "lenght"), "missing-length": ("p_write = 0.5", "length"),
}
for _name, (_body, _must) in SERIES_BAD.items():
    config_cases("top", f"series-{_name}", toml(tail=f"[series]\n{_body}\n"), USAGE, ("series", _must), run=True)
config_cases("top", "series-as-number", toml({"series": "10"}), USAGE, ("series",))
config_cases("top", "memory-without-series", toml(strategies='[[strategies]]\nname = "unbounded"\nmemory = true\n'),
             USAGE, ("memory",), run=True)
config_cases("top", "memory-string", toml(strategies='[[strategies]]\nname = "unbounded"\nmemory = "yes"\n',
                                          tail="[series]\nlength = 2\n"), USAGE, ("memory",))
config_cases("top", "normalize-tool-names-string",
             toml(strategies='[[strategies]]\nname = "unbounded"\nnormalize_tool_names = "on"\n'), USAGE,
             ("normalize_tool_names",), run=True)
config_cases("top", "series-and-memory-good",
             toml(strategies='[[strategies]]\nname = "unbounded"\nmemory = true\n', tail="[series]\nlength = 2\n"),
             OK, run=True)

# scenarios ------------------------------------------------------------------------------------------------

def scenario(lines: str, name: str = "log_triage") -> str:
    return f'[[scenarios]]\nname = "{name}"\n{lines}'


config_cases("scenarios", "name-unknown", toml(scenarios=scenario("", "nope")), USAGE, ("nope",), run=True)
config_cases("scenarios", "name-number", toml(scenarios="[[scenarios]]\nname = 1\n"), USAGE, ("name",))
config_cases("scenarios", "name-empty", toml(scenarios=scenario("", "")), USAGE, ("name",))
config_cases("scenarios", "name-missing", toml(scenarios="[[scenarios]]\nturns = 20\n"), USAGE, ("name",))
config_cases("scenarios", "name-capitalised", toml(scenarios=scenario("", "Log_Triage")), USAGE, ("Log_Triage",))
config_cases("scenarios", "name-trailing-space", toml(scenarios=scenario("", "log_triage ")), USAGE, ("log_triage",))
#: ``weight = 1e308`` alone may be valid (a relative weight), or refused by a bound: never a crash.
WEIGHT_EXPECT = {"inf": USAGE, "nan": USAGE, "neg1": USAGE, "1e308": OK_OR_USAGE, "str1": USAGE, "true": USAGE}
for _vid, _value in VALUES.items():
    _exp = WEIGHT_EXPECT[_vid]
    config_cases("scenarios", f"weight-{_vid}", toml(scenarios=scenario(f"turns = 20\nweight = {_value}\n")), _exp,
                 ("weight",), run=_exp != USAGE or _vid == "inf")
config_cases("scenarios", "weight-0", toml(scenarios=scenario("turns = 20\nweight = 0\n")), USAGE, ("weight",))
config_cases("scenarios", "weights-1e308-twice",
             toml(scenarios=scenario("turns = 20\nweight = 1e308\n") + scenario("turns = 20\nweight = 1e308\n",
                                                                                 "k8s_crashloop")), OK_OR_USAGE,
             ("weight",), run=True)
SCENARIO_PARAMS = ("turns", "payload_median_bytes", "payload_sigma", "payload_max_bytes", "dump_scale",
                   "turns_median", "turns_sigma")
#: The family a param's cases are written for (the rest: log_triage).
SCENARIO_PARAM_FAMILY = {"turns_median": "code_repair", "turns_sigma": "code_repair"}
for _param in SCENARIO_PARAMS:
    for _vid, _value in VALUES.items():
        _family = SCENARIO_PARAM_FAMILY.get(_param, "log_triage")
        config_cases("scenarios", f"{_param}-{_vid}", toml(scenarios=scenario(f"{_param} = {_value}\n", _family)),
                     USAGE, (_param,), run=_vid == "true")
config_cases("scenarios", "turns-typo", toml(scenarios=scenario("turn = 20\n")), USAGE, ("turn",))
config_cases("scenarios", "duplicate", toml(scenarios=SCENARIO + SCENARIO), USAGE, ("log_triage",))
config_cases("scenarios", "empty-list", toml({"scenarios": "[]"}, scenarios=""), USAGE, ("scenarios",))
config_cases("scenarios", "weight-only", toml(scenarios="[[scenarios]]\nweight = 1\n"), USAGE, ("name",))
MIX = {
    "mix-weights-unknown": ("weights = {nope = 1}", USAGE, ("nope",)),
    "mix-weights-inf": ("weights = {log_triage = inf}", USAGE, ("weights",)),
    "mix-weights-nan": ("weights = {log_triage = nan}", USAGE, ("weights",)),
    "mix-weights-negative": ("weights = {log_triage = -1}", USAGE, ("weights",)),
    "mix-weights-string": ('weights = {log_triage = "1"}', USAGE, ("weights",)),
    "mix-weights-empty": ("weights = {}", USAGE, ("weights",)),
    "mix-weights-self": ("weights = {mix = 1}", USAGE, ("mix",)),
    "mix-weights-1e308-twice": ("weights = {log_triage = 1e308, k8s_crashloop = 1e308}", OK_OR_USAGE, ("weights",)),
    "mix-family-params-bad-turns": ("family_params = {log_triage = {turns = 5}}", USAGE, ("turns",)),
    "mix-family-params-unknown": ("family_params = {log_triage = {nope = 1}}", USAGE, ("nope",)),
    "mix-family-params-not-mixed": ("family_params = {code_repair = {}}", USAGE, ("code_repair",)),
}
for _name, (_line, _exp, _must) in MIX.items():
    config_cases("scenarios", _name, toml(scenarios=scenario(f"turns = 20\n{_line}\n", "mix")), _exp, _must,
                 run=True)


# strategies ---------------------------------------------------------------------------------------------

def strategy(name: str, lines: str = "") -> str:
    return f'[[strategies]]\nname = "{name}"\n{lines}'


config_cases("strategies", "name-unknown", toml(strategies=strategy("nope")), USAGE, ("nope",), run=True)
config_cases("strategies", "name-number", toml(strategies="[[strategies]]\nname = 1\n"), USAGE, ("name",))
config_cases("strategies", "name-empty", toml(strategies=strategy("")), USAGE, ("name",))
config_cases("strategies", "name-missing", toml(strategies="[[strategies]]\nlabel = \"x\"\n"), USAGE, ("name",))
config_cases("strategies", "name-capitalised", toml(strategies=strategy("Unbounded")), USAGE, ("Unbounded",))
config_cases("strategies", "label-duplicate",
             toml(strategies=strategy("unbounded", 'label = "x"\n') + strategy("drop_all", 'label = "x"\n')),
             USAGE, ("'x'",))
config_cases("strategies", "label-same-name-twice", toml(strategies=strategy("sliding_window") * 2), USAGE,
             ("sliding_window",))
config_cases("strategies", "label-is-other-name",
             toml(strategies=strategy("unbounded") + strategy("sliding_window", 'label = "unbounded"\n')), USAGE,
             ("unbounded",))
config_cases("strategies", "label-number", toml(strategies=strategy("unbounded", "label = 5\n")), USAGE, ("label",))
config_cases("strategies", "label-empty", toml(strategies=strategy("unbounded", 'label = ""\n')), OK_OR_USAGE,
             ("label",))
SWITCH_BAD = {"contracts": ("1", '"true"', '"yes"'), "errors": ('"fancy"', "true"), "breaker": ('"no"', "1"),
              "proactive": ('"yes"', "1")}
for _key, _values in SWITCH_BAD.items():
    for _i, _value in enumerate(_values):
        _strat = "sliding_window"
        config_cases("strategies", f"{_key}-bad{_i}", toml(strategies=strategy(_strat, f"{_key} = {_value}\n")),
                     USAGE, (_key,))
for _key in ("token_budget", "output_cap_chars"):
    for _vid, _value in VALUES.items():
        config_cases("strategies", f"{_key}-{_vid}", toml(strategies=strategy("unbounded", f"{_key} = {_value}\n")),
                     USAGE, (_key,), run=_vid == "true")
# [[runtimes]]: the runtime every strategy entry runs under.
config_cases("runtimes", "name-missing", toml(tail="[[runtimes]]\ncontracts = true\n"), USAGE, ("runtimes[0].name",))
config_cases("runtimes", "name-duplicate", toml(tail='[[runtimes]]\nname = "a"\n[[runtimes]]\nname = "a"\n'), USAGE,
             ("runtimes[1].name",), run=True)
config_cases("runtimes", "name-plus", toml(tail='[[runtimes]]\nname = "a+b"\n'), USAGE, ("runtimes[0].name",))
config_cases("runtimes", "switch-unknown", toml(tail='[[runtimes]]\nname = "a"\nbreakr = true\n'), USAGE,
             ("runtimes[0].breakr",))
config_cases("runtimes", "switch-string", toml(tail='[[runtimes]]\nname = "a"\ncontracts = "yes"\n'), USAGE,
             ("runtimes[0].contracts",))
config_cases("runtimes", "budget-negative", toml(tail='[[runtimes]]\nname = "a"\ntoken_budget = -1\n'), USAGE,
             ("runtimes[0].token_budget",))
config_cases("runtimes", "entry-unknown-runtime",
             toml(strategies=strategy("unbounded", 'runtime = "nope"\n'), tail='[[runtimes]]\nname = "a"\n'), USAGE,
             ("strategies[0].runtime", "nope"), run=True)
config_cases("strategies", "model-unknown", toml(strategies=strategy("unbounded", 'model = "gpt-9"\n')), USAGE,
             ("gpt-9",))
config_cases("strategies", "model-bad-field",
             toml(strategies=strategy("unbounded", 'model = {base = "mid", k = -1}\n')), USAGE, ("model.k",))
config_cases("strategies", "unbounded-unknown-param", toml(strategies=strategy("unbounded", "window_size = 3\n")),
             USAGE, ("window_size",))
config_cases("strategies", "drop_all-unknown-param", toml(strategies=strategy("drop_all", "keep_turns = 1\n")),
             USAGE, ("keep_turns",))
PIPELINE = {
    "stages-empty": ("stages = []", ("stages",)),
    "stages-missing": ("", ("stages",)),
    "stages-string": ('stages = "sliding_window"', ("stages",)),
    "stages-nested": ('stages = [{name = "pipeline"}]', ("pipeline",)),
    "stages-unknown": ('stages = [{name = "nope"}]', ("nope",)),
    "stages-bad-param": ('stages = [{name = "sliding_window", params = {window_size = -1}}]', ("window_size",)),
    "stages-param-outside-params": ('stages = [{name = "sliding_window", window_size = 3}]', ("window_size",)),
}
for _name, (_line, _must) in PIPELINE.items():
    config_cases("strategies", f"pipeline-{_name}", toml(strategies=strategy("pipeline", f"{_line}\n")), USAGE, _must,
                 run=_name == "stages-bad-param")

#: How a strategy param takes the hostile values: INT (strict integers), UNIT (a share in (0, 1]),
#: RATIO (summary_ratio: clamped to [0.1, 0.8] by design, so -1 and 1e308 may be accepted), PER_TURN
#: (a boolean or an integer >= 1: true is valid).
INT, UNIT, RATIO, PER_TURN = "int", "unit", "ratio", "per_turn"
PARAM_EXPECT = {
    INT: dict.fromkeys(VALUES, USAGE),
    UNIT: dict.fromkeys(VALUES, USAGE),
    RATIO: dict.fromkeys(VALUES, USAGE) | {"neg1": OK_OR_USAGE, "1e308": OK_OR_USAGE},
    PER_TURN: dict.fromkeys(VALUES, USAGE) | {"true": OK},
}
_SLIDING = {"window_size": INT, "pin_first": INT, "per_turn": PER_TURN, "threshold": UNIT}
STRATEGY_PARAMS: dict[str, dict[str, str]] = {
    "sliding_window": _SLIDING,
    "truncate_then_slide": _SLIDING,
    "summarize": {"summary_ratio": RATIO, "preserve_recent_messages": INT, "pin_first": INT, "trigger_turns": INT,
                  "keep_turns": INT, "threshold": UNIT},
    "condense": {"max_size": INT, "keep_first": INT, "max_tokens": INT, "minimum_progress": UNIT,
                 "hard_reset_retries": INT, "hard_reset_scaling": UNIT},
    "observation_masking": {"keep_turns": INT},
    "offload_contracts": {"offload_threshold_bytes": INT, "preview_chars": INT, "retrieve_chars": INT},
    "hybrid": {"mask_turns": INT, "summary_turns": INT, "keep_turns": INT, "pin_first": INT, "summary_ratio": RATIO,
               "preserve_recent_messages": INT, "threshold": UNIT},
    # The SDK managers (docs/sdk-strategies.md); clear_tool_uses takes its numbers inside tables ({type, value}).
    "langchain_clear_tool_uses": {"trigger": INT, "clear_at_least": INT, "keep": INT},
    "langchain_summarization": {"trim_tokens_to_summarize": INT},
    "strands_context_offloader": {"max_result_tokens": INT, "preview_tokens": INT, "evict_after_cycles": INT},
    "openai_trimming": {"max_turns": INT, "limit": INT},
    "openai_summarizing": {"context_limit": INT, "keep_last_n_turns": INT},
    "openai_compaction": {"compact_threshold": INT, "candidate_threshold": INT},
    "adk_compaction": {"compaction_interval": INT, "overlap_size": INT, "token_threshold": INT,
                       "event_retention_size": INT},
    "claude_code_compact": {"summary_reserve_tokens": INT, "buffer_tokens": INT, "keep_tool_results": INT,
                            "thrash_turns": INT, "thrash_limit": INT, "max_failures": INT},
}
#: What a strategy needs besides the hostile param to get as far as that param (a param its source has no
#: default for).
REQUIRED_LINES = {"langchain_summarization": 'trigger = ["fraction", 0.8]\n'}
for _strat, _params in STRATEGY_PARAMS.items():
    for _param, _kind in _params.items():
        for _vid, _value in VALUES.items():
            _exp = PARAM_EXPECT[_kind][_vid]
            config_cases("strategies", f"{_strat}-{_param}-{_vid}",
                         toml(strategies=strategy(_strat, REQUIRED_LINES.get(_strat, "") + f"{_param} = {_value}\n")),
                         _exp, (_param,),
                         run=_exp != USAGE or (_vid == "true" and _param == next(iter(_params))))


# model: the profile table -----------------------------------------------------------------------------------

#: Integer fields of `Profile`.
MODEL_INT = ("window_tokens", "max_summary_tokens", "thought_tokens", "cache_min_tokens", "cache_granularity", "rpm",
             "tpm", "max_output_reserve", "summarizer_prompt_tokens", "max_turns", "max_attempts_per_step")
#: Bounded floats (probabilities, and D0 in [0, 0.6]).
MODEL_BOUNDED = ("p_max", "p_malformed_base", "p_fix", "p_repeat_error", "p_confabulate", "p_note", "p_summary_error",
                 "p_record_drop", "p_nudge_follow", "p_shortcut", "keep_max", "p_throttle", "D0")
#: Floats > 0: (inf, 1e308) expectations. An infinite half-length is the oracle profile's own value ("no
#: decay"), so it must be accepted; any other inf or 1e308 may be accepted (then the run's numbers must be
#: finite) or refused by a bound.
MODEL_POSITIVE = {"L_half": (OK, OK_OR_USAGE), "L_half_literal": (OK, OK_OR_USAGE), "k": (OK_OR_USAGE, OK_OR_USAGE),
                  "k_literal": (OK_OR_USAGE, OK_OR_USAGE), "decode_tps": (OK_OR_USAGE, OK_OR_USAGE),
                  "cache_ttl_s": (OK_OR_USAGE, OK_OR_USAGE)}
#: Floats >= 0 with no upper bound (rates, latencies, prices): inf is never meaningful; 1e308 may be
#: accepted only if the run still gives finite numbers.
MODEL_NONNEGATIVE = ("g_L", "g_N", "base_s", "b_uncached", "b_cached", "sigma", "price_in", "price_cache_read",
                     "price_cache_write", "price_out")


def model_expect(field: str, vid: str) -> str:
    if field in MODEL_POSITIVE and vid in ("inf", "1e308"):
        return MODEL_POSITIVE[field][0 if vid == "inf" else 1]
    if field in MODEL_NONNEGATIVE and vid == "1e308":
        return OK_OR_USAGE
    return USAGE


for _field in (*MODEL_INT, *MODEL_BOUNDED, *MODEL_POSITIVE, *MODEL_NONNEGATIVE):
    for _vid, _value in VALUES.items():
        _exp = model_expect(_field, _vid)
        config_cases("model", f"{_field}-{_vid}", toml({"model": f'{{base = "mid", {_field} = {_value}}}'}), _exp,
                     (f"model.{_field}",), run=_exp != USAGE or _vid in ("1e308", "true"))
MODEL_OTHER = {
    "base-unknown": ('{base = "nope"}', ("model.base", "nope")),
    "base-number": ("{base = 5}", ("model.base",)),
    "name-number": ('{base = "mid", name = 5}', ("model.name",)),
    "caching-string": ('{base = "mid", caching = "no"}', ("model.caching",)),
    "position_mean_normalise-number": ('{base = "mid", position_mean_normalise = 1}',
                                       ("model.position_mean_normalise",)),
    "unknown-field": ('{base = "mid", windw_tokens = 100000}', ("model.windw_tokens",)),
    # A field retired with model v3: the line says what replaced it.
    "retired-p_refetch": ('{base = "mid", p_refetch = 0.8}', ("model", "p_refetch", "p_confabulate")),
    "empty-table": ("{}", ("model",)),
    "no-base-incomplete": ('{name = "mine", window_tokens = 100000}', ("model",)),
}
for _name, (_value, _must) in MODEL_OTHER.items():
    config_cases("model", _name, toml({"model": _value}), USAGE, _must, run=_name == "base-unknown")


# sweep --------------------------------------------------------------------------------------------------------

SW = "sliding_window.window_size"
SWEEP = {
    "models-unknown": ('models = ["nope"]', ("nope",)),
    "models-twice": ('models = ["mid", "mid"]', ("sweep.models",)),
    "models-string": ('models = "mid"', ("models",)),
    "models-number": ("models = [1]", ("models",)),
    "params-duplicate-value": (f'params = {{"{SW}" = [10, 10]}}', (SW,)),
    "params-int-and-float": ('params = {"sliding_window.threshold" = [0.5, 0.5e0]}', ("sliding_window.threshold",)),
    "params-empty-list": (f'params = {{"{SW}" = []}}', (SW,)),
    "params-not-a-list": (f'params = {{"{SW}" = 5}}', (SW,)),
    "params-no-dot": ('params = {"window_size" = [10]}', ("window_size",)),
    "params-unknown-strategy": ('params = {"nope.window_size" = [10]}', ("nope",)),
    "params-unknown-param": ('params = {"sliding_window.nope" = [1]}', ("nope",)),
    "params-out-of-range": (f'params = {{"{SW}" = [-1]}}', ("window_size",)),
    "params-inf": ('params = {"sliding_window.threshold" = [inf]}', ("threshold",)),
    "params-nan": ('params = {"sliding_window.threshold" = [nan]}', ("threshold",)),
    "params-string-number": (f'params = {{"{SW}" = ["1"]}}', ("window_size",)),
    "params-bool": (f'params = {{"{SW}" = [true]}}', ("window_size",)),
    "params-1e308": (f'params = {{"{SW}" = [1e308]}}', ("window_size",)),
    "params-table-value": (f'params = {{"{SW}" = [{{}}]}}', ("window_size",)),
    "params-strategy-not-in-run": ('params = {"drop_all.window_size" = [1]}', ("drop_all",)),
    "unknown-key": ('model = ["mid"]', ("model",)),
}
for _name, (_line, _must) in SWEEP.items():
    config_cases("sweep", _name, toml(tail=f"[sweep]\n{_line}\n"), USAGE, _must)
config_cases("sweep", "entry-model-with-sweep-models",
             toml(strategies=STRATEGIES + strategy("drop_all", 'model = "small"\n'),
                  tail='[sweep]\nmodels = ["mid"]\n'), USAGE, ("model",))
config_cases("sweep", "ambiguous-target",
             toml(strategies=strategy("sliding_window", 'label = "a"\n') + strategy("sliding_window", 'label = "b"\n'),
                  tail=f'[sweep]\nparams = {{"{SW}" = [10, 20]}}\n'), USAGE, ("sliding_window",))
config_cases("sweep", "valid-grid", toml(tail=f'[sweep]\nparams = {{"{SW}" = [10, 20]}}\n'), OK)
SWEEP_CLI = {
    "param-no-values": ((f"--param={SW}=",), USAGE, ("--param",)),
    "param-no-equals": (("--param", "foo"), USAGE, ("--param",)),
    "param-duplicate-values": (("--param", f"{SW}=10,10"), USAGE, (SW,)),
    "param-nan": (("--param", f"{SW}=NaN"), USAGE, ("window_size",)),
    "param-threshold-infinity": (("--param", "sliding_window.threshold=Infinity"), USAGE, ("threshold",)),
    "param-threshold-nan": (("--param", "sliding_window.threshold=NaN"), USAGE, ("threshold",)),
    "param-1e308": (("--param", f"{SW}=1e308"), USAGE, ("window_size",)),
    "param-unknown-strategy": (("--param", "nope.x=1"), USAGE, ("nope",)),
    "models-unknown": (("--models", "nope"), USAGE, ("nope",)),
    "models-twice": (("--models", "mid,mid"), USAGE, ("models",)),
    "nothing-to-sweep": ((), USAGE, ("sweep",)),
    "out-is-a-file": (("--param", f"{SW}=10,20", "--out", "afile"), USAGE, ("afile",)),
    "valid-grid": (("--param", f"{SW}=10,20"), OK, ()),
}
for _name, (_flags, _exp, _must) in SWEEP_CLI.items():
    _out = "afile" if "afile" in _flags else "out"
    _argv = ("sweep", "tiny.toml", *_flags, *(("--out", "out") if _out == "out" else ()), "--quiet", "--no-report")
    add(Case(f"sweep-cli-{_name}", "sweep", _argv, (write("tiny.toml", TINY), write("afile", "keep me\n")), _exp, _must,
             out=_out, finite="out" if _exp == OK else None))


# cli: flags of run, scenario show, and the top-level parser -------------------------------------------------

TINY_SETUP = (write("tiny.toml", TINY), write("afile", "keep me\n"))
RUN_CLI: dict[str, tuple[tuple[str, ...], str, tuple[str, ...]]] = {
    "sessions-0": (("--sessions", "0"), USAGE, ("sessions",)),
    "sessions-neg1": (("--sessions=-1",), USAGE, ("sessions",)),
    "sessions-abc": (("--sessions", "abc"), USAGE, ("--sessions",)),
    "sessions-1e3": (("--sessions", "1e3"), USAGE, ("--sessions",)),
    "sessions-too-many": (("--sessions", "10000001"), USAGE, ("sessions",)),
    "seed-neg1": (("--seed=-1",), USAGE, ("seed",)),
    "seed-abc": (("--seed", "abc"), USAGE, ("--seed",)),
    "seed-float": (("--seed", "1.5"), USAGE, ("--seed",)),
    "jobs-neg1": (("--jobs=-1",), USAGE, ("jobs",)),
    "jobs-2000": (("--jobs", "2000"), USAGE, ("jobs",)),
    "jobs-abc": (("--jobs", "abc"), USAGE, ("--jobs",)),
    "shard-0of2": (("--shard", "0/2"), USAGE, ("--shard",)),
    "shard-3of2": (("--shard", "3/2"), USAGE, ("--shard",)),
    "shard-1of0": (("--shard", "1/0"), USAGE, ("--shard",)),
    "shard-abc": (("--shard", "abc"), USAGE, ("--shard",)),
    "shard-1of2of3": (("--shard", "1/2/3"), USAGE, ("--shard",)),
    "shard-no-k": (("--shard", "/2"), USAGE, ("--shard",)),
    "shard-no-n": (("--shard", "1/"), USAGE, ("--shard",)),
    "shard-negative": (("--shard=-1/2",), USAGE, ("--shard",)),
    "strategies-unknown": (("--strategies", "nope"), USAGE, ("nope",)),
    "strategies-one-unknown": (("--strategies", "unbounded,nope"), USAGE, ("nope",)),
    "scenarios-unknown": (("--scenarios", "nope"), USAGE, ("nope",)),
    "scenarios-twice": (("--scenarios", "log_triage,log_triage"), USAGE, ("log_triage",)),
    "model-unknown": (("--model", "nope"), USAGE, ("nope",)),
    "model-empty": (("--model", ""), USAGE, ("model",)),
    "executor-threads": (("--executor", "threads"), USAGE, ("--executor",)),
    "scheduler-not-an-address": (("--executor", "dask", "--scheduler", "not an address"), USAGE, ("scheduler",)),
    "unknown-flag": (("--nope",), USAGE, ("--nope",)),
}
for _name, (_flags, _exp, _must) in RUN_CLI.items():
    add(Case(f"cli-run-{_name}", "cli", ("run", "tiny.toml", *_flags, *RUN_FLAGS), TINY_SETUP, _exp, _must, out="out"))
add(
    Case("cli-run-out-is-a-file", "cli", ("run", "tiny.toml", "--out", "afile", "--quiet", "--no-report"), TINY_SETUP,
         USAGE, ("afile",), out="afile"),
    Case("cli-run-out-through-a-file", "cli", ("run", "tiny.toml", "--out", "afile/run", "--quiet", "--no-report"),
         TINY_SETUP, USAGE, ("afile",), out="afile"),
    Case("cli-run-out-symlink-loop", "cli", ("run", "tiny.toml", "--out", "loop", "--quiet", "--no-report"),
         (*TINY_SETUP, Op("symlink", "loop", "loop")), USAGE, ("loop",), out="loop"),
    Case("cli-run-out-is-an-empty-dir", "cli", ("run", "tiny.toml", "--out", "empty", "--quiet", "--no-report"),
         (*TINY_SETUP, Op("mkdir", "empty")), OK, finite="empty", identical="empty"),
    Case("cli-run-out-is-another-configs-run", "cli",
         ("run", "other.toml", "--out", "{good}", "--quiet", "--no-report"),
         (write("other.toml", OTHER),), USAGE, ("{good}",)),
    Case("cli-run-out-is-this-run-no-resume", "cli",
         ("run", "tiny.toml", "--out", "{good}", "--no-resume", "--quiet", "--no-report"), TINY_SETUP, USAGE,
         ("--no-resume",)),
    Case("cli-run-out-is-this-finished-run", "cli", ("run", "tiny.toml", "--out", "{good}", "--quiet", "--no-report"),
         TINY_SETUP, OK),
    Case("cli-no-command", "cli", (), (), USAGE),
    Case("cli-unknown-command", "cli", ("nope",), (), USAGE, ("nope",)),
    Case("cli-list-unknown", "cli", ("list", "nope"), (), USAGE, ("nope",)),
    Case("cli-scenario-no-subcommand", "cli", ("scenario",), (), USAGE),
    Case("cli-scenario-show-no-name", "cli", ("scenario", "show"), (), USAGE),
    Case("cli-scenario-show-valid", "cli", ("scenario", "show", "log_triage", "--param", "turns=20", "--summary"), (),
         OK),
)
SHOW = {
    "name-unknown": (("nope",), USAGE, ("nope",)),
    "name-empty": (("",), USAGE, ()),
    "seed-neg1": (("log_triage", "--seed=-1"), USAGE, ("seed",)),
    "seed-abc": (("log_triage", "--seed", "abc"), USAGE, ("--seed",)),
    "seed-huge": (("log_triage", "--seed", "9" * 40), OK_OR_USAGE, ("seed",)),
    "param-turns-too-few": (("log_triage", "--param", "turns=5"), USAGE, ("turns",)),
    "param-no-equals": (("log_triage", "--param", "turns"), USAGE, ("--param",)),
    "param-no-key": (("log_triage", "--param", "=5"), USAGE, ("--param",)),
    "param-unknown": (("log_triage", "--param", "nope=1"), USAGE, ("nope",)),
    "param-turns-nan": (("log_triage", "--param", "turns=NaN"), USAGE, ("turns",)),
    "param-turns-infinity": (("log_triage", "--param", "turns=Infinity"), USAGE, ("turns",)),
    "param-turns-1e308": (("log_triage", "--param", "turns=1e308"), USAGE, ("turns",)),
    "param-turns-float": (("log_triage", "--param", "turns=20.0"), USAGE, ("turns",)),
    "param-turns-string": (("log_triage", "--param", 'turns="20"'), USAGE, ("turns",)),
    "param-turns-true": (("log_triage", "--param", "turns=true"), USAGE, ("turns",)),
    "param-sigma-nan": (("log_triage", "--param", "payload_sigma=NaN"), USAGE, ("payload_sigma",)),
    "param-sigma-infinity": (("log_triage", "--param", "payload_sigma=Infinity"), USAGE, ("payload_sigma",)),
    "param-dump-scale-nan": (("log_triage", "--param", "dump_scale=NaN"), USAGE, ("dump_scale",)),
    "mix-weights-unknown": (("mix", "--param", 'weights={"nope": 1}'), USAGE, ("nope",)),
    "mix-weights-infinity": (("mix", "--param", 'weights={"log_triage": Infinity}'), USAGE, ("weights",)),
    "mix-family-params-bad-turns": (("mix", "--param", 'family_params={"log_triage": {"turns": 5}}', "--param",
                                     'weights={"log_triage": 1}'), USAGE, ("turns",)),
}
for _name, (_args, _exp, _must) in SHOW.items():
    add(Case(f"cli-scenario-show-{_name}", "cli", ("scenario", "show", *_args, "--summary"), (), _exp, _must))


# Run directories: report, compare, merge, resume ---------------------------------------------------------------

def damage(base: str, target: str, how: str) -> Op:
    return Op("damage", f"{base}/{TARGETS[target]}", how)


#: report over a damaged copy of the good run: (target -> damage -> expectation). The report reads
#: sessions.parquet (required), manifest.json (optional, but must be valid when present), calls.parquet
#: (for plots) and config.toml (shown as text); it writes plots/ and report.*; it ignores parts/.
REPORT_EXPECT: dict[str, dict[str, str]] = {
    "config.toml": {"missing": OK, "empty": OK, "truncated": OK, "garbage": OK_OR_USAGE, "wrong_type": OK_OR_USAGE,
                    "dir_swap": OK_OR_USAGE},
    "manifest.json": dict.fromkeys(DAMAGES, USAGE) | {"missing": OK},
    "sessions.parquet": dict.fromkeys(DAMAGES, USAGE),
    "calls.parquet": dict.fromkeys(DAMAGES, USAGE) | {"missing": OK_OR_USAGE},
    "part": dict.fromkeys(DAMAGES, OK),
    "parts": dict.fromkeys(DAMAGES, OK),
    "plots": dict.fromkeys(DAMAGES, OK) | {"wrong_type": USAGE, "dir_swap": USAGE},
    "report.html": dict.fromkeys(DAMAGES, OK) | {"dir_swap": USAGE},
}
for _target, _by_damage in REPORT_EXPECT.items():
    for _how, _exp in _by_damage.items():
        add(Case(f"report-{_target}-{_how}", "report", ("report", "run"),
                 (Op("copy", "run", "good"), damage("run", _target, _how)), _exp, (TARGET_NAME[_target],),
                 damaged="run", produces=("run/report.html", "run/report.md")))
add(
    Case("report-missing-dir", "report", ("report", "nope"), (), USAGE, ("nope",)),
    Case("report-a-file", "report", ("report", "afile"), (write("afile", "x\n"),), USAGE, ("afile",), damaged="afile"),
    Case("report-empty-dir", "report", ("report", "empty"), (Op("mkdir", "empty"),), USAGE, ("empty",),
         damaged="empty"),
    Case("report-format-pdf", "report", ("report", "run", "--format", "pdf"), (Op("copy", "run", "good"),), USAGE,
         ("pdf",), damaged="run"),
    Case("report-format-empty", "report", ("report", "run", "--format", ""), (Op("copy", "run", "good"),), USAGE,
         ("format",), damaged="run"),
    Case("report-format-blanks-and-repeats", "report", ("report", "run", "--format", "html,,HTML,md"),
         (Op("copy", "run", "good"),), OK, produces=("run/report.html", "run/report.md")),
    Case("report-baseline-unknown", "report", ("report", "run", "--baseline", "nope"), (Op("copy", "run", "good"),),
         USAGE, ("nope",), damaged="run"),
    Case("report-stale-temp-files", "report", ("report", "run"),
         (Op("copy", "run", "good"), write("run/.report.html.x1y2z3.tmp", GARBAGE),
          write("run/plots/.outcome_mix.png.a1b2c3.tmp", GARBAGE)), OK, produces=("run/report.html", "run/report.md")),
    Case("report-good-copy", "report", ("report", "run"), (Op("copy", "run", "good"),), OK,
         produces=("run/report.html", "run/report.md")),
)

for _how in DAMAGES:
    add(Case(f"compare-b-sessions.parquet-{_how}", "compare", ("compare", "{good}", "run"),
             (Op("copy", "run", "good"), damage("run", "sessions.parquet", _how)), USAGE, ("sessions.parquet",),
             damaged="run"))
for _how in ("missing", "garbage"):
    add(Case(f"compare-a-sessions.parquet-{_how}", "compare", ("compare", "run", "{good}"),
             (Op("copy", "run", "good"), damage("run", "sessions.parquet", _how)), USAGE, ("sessions.parquet",),
             damaged="run"))
for _target, _how in (("manifest.json", "garbage"), ("calls.parquet", "missing"), ("config.toml", "garbage"),
                      ("parts", "dir_swap")):
    add(Case(f"compare-b-{_target}-{_how}", "compare", ("compare", "{good}", "run"),
             (Op("copy", "run", "good"), damage("run", _target, _how)), OK_OR_USAGE, (TARGET_NAME[_target],),
             damaged="run"))
COMPARE_FLAGS = {
    "metric-unknown": (("--metric", "nope"), USAGE, ("nope",)),
    "fail-on-unknown-metric": (("--fail-on", "nope:+1"), USAGE, ("nope",)),
    "fail-on-no-threshold": (("--fail-on", "success_rate"), USAGE, ("success_rate",)),
    "fail-on-not-a-number": (("--fail-on", "success_rate:+abc"), USAGE, ("success_rate",)),
    "fail-on-no-sign": (("--fail-on", "success_rate:2pp"), USAGE, ("success_rate",)),
    "fail-on-inf": (("--fail-on", "cost_per_session:+inf"), USAGE, ("cost_per_session",)),
    "fail-on-nan": (("--fail-on", "cost_per_session:+nan"), USAGE, ("cost_per_session",)),
    "same-run": ((), OK, ()),
}
for _name, (_flags, _exp, _must) in COMPARE_FLAGS.items():
    add(Case(f"compare-{_name}", "compare", ("compare", "{good}", "{good}", *_flags), (), _exp, _must))
add(
    Case("compare-missing-dir", "compare", ("compare", "{good}", "nope"), (), USAGE, ("nope",)),
    Case("compare-empty-dir", "compare", ("compare", "{good}", "empty"), (Op("mkdir", "empty"),), USAGE, ("empty",)),
    Case("compare-a-file", "compare", ("compare", "afile", "{good}"), (write("afile", "x\n"),), USAGE, ("afile",)),
    Case("compare-another-config", "compare", ("compare", "{good}", "other"), (Op("copy", "other", "other"),), OK),
    Case("compare-no-sessions-rows", "compare", ("compare", "{good}", "run"),
         (Op("copy", "run", "good"), Op("empty_table", "run/sessions.parquet")), OK_OR_USAGE, ("sessions.parquet",),
         damaged="run"),
)

#: merge without its report: these cases are about what merge accepts, and a report costs seconds.
MERGE = ("merge", "--no-report")
SHARDS = (Op("copy", "s1", "shard1"), Op("copy", "s2", "shard2"))
for _target in ("config.toml", "manifest.json", "sessions.parquet", "calls.parquet", "part", "parts"):
    for _how in DAMAGES:
        add(Case(f"merge-{_target}-{_how}", "merge", (*MERGE, "out", "s1", "s2"),
                 (*SHARDS, damage("s2", _target, _how)), REFUSE_OR_IDENTICAL, (TARGET_NAME[_target],),
                 out="out", damaged="s2", identical="out"))
add(
    Case("merge-clean", "merge", (*MERGE, "out", "s1", "s2"), SHARDS, OK, out="out", identical="out"),
    Case("merge-shard-given-twice", "merge", (*MERGE, "out", "s1", "s1"), SHARDS, REFUSE_OR_IDENTICAL, ("s1",),
         out="out", identical="out"),
    Case("merge-shard-given-twice-with-the-other", "merge", (*MERGE, "out", "s1", "s1", "s2"), SHARDS,
         REFUSE_OR_IDENTICAL, ("s1",), out="out", identical="out"),
    Case("merge-one-shard-missing", "merge", (*MERGE, "out", "s1"), SHARDS, REFUSE_OR_IDENTICAL, (), out="out",
         identical="out"),
    Case("merge-different-configs", "merge", (*MERGE, "out", "s1", "other"), (*SHARDS, Op("copy", "other", "other")),
         USAGE, (), out="out"),
    Case("merge-parts-disagree", "merge", (*MERGE, "out", "s1", "s2", "s2x"),
         (*SHARDS, Op("copy", "s2x", "shard2"), Op("alter_part", f"s2x/parts/{PART}", "intact")), USAGE, (BATCH,),
         out="out"),
    Case("merge-parts-disagree-altered-first", "merge", (*MERGE, "out", "s1", "s2x", "s2"),
         (*SHARDS, Op("copy", "s2x", "shard2"), Op("alter_part", f"s2x/parts/{PART}", "intact")), USAGE, (BATCH,),
         out="out"),
    Case("merge-parts-disagree-tampered", "merge", (*MERGE, "out", "s1", "s2", "s2x"),
         (*SHARDS, Op("copy", "s2x", "shard2"), Op("alter_part", f"s2x/parts/{PART}", "tampered")),
         REFUSE_OR_IDENTICAL, (BATCH,), out="out", identical="out"),
    Case("merge-parts-disagree-tampered-first", "merge", (*MERGE, "out", "s1", "s2x", "s2"),
         (*SHARDS, Op("copy", "s2x", "shard2"), Op("alter_part", f"s2x/parts/{PART}", "tampered")),
         REFUSE_OR_IDENTICAL, (BATCH,), out="out", identical="out"),
    Case("merge-non-run-dir", "merge", (*MERGE, "out", "s1", "empty"), (*SHARDS, Op("mkdir", "empty")), USAGE,
         ("empty",), out="out"),
    Case("merge-missing-input", "merge", (*MERGE, "out", "s1", "nope"), SHARDS, USAGE, ("nope",), out="out"),
    Case("merge-input-is-a-file", "merge", (*MERGE, "out", "s1", "afile"), (*SHARDS, write("afile", "x\n")), USAGE,
         ("afile",), out="out"),
    Case("merge-out-is-an-input", "merge", (*MERGE, "s1", "s1", "s2"), SHARDS, USAGE, ("s1",), damaged="s1"),
    Case("merge-out-is-a-file", "merge", (*MERGE, "afile", "s1", "s2"), (*SHARDS, write("afile", "keep me\n")), USAGE,
         ("afile",), out="afile"),
    Case("merge-out-through-a-file", "merge", (*MERGE, "afile/out", "s1", "s2"), (*SHARDS, write("afile", "keep\n")),
         USAGE, ("afile",), out="afile"),
    Case("merge-out-is-another-configs-run", "merge", (*MERGE, "other", "s1", "s2"),
         (*SHARDS, Op("copy", "other", "other")), USAGE, ("other",), damaged="other"),
    Case("merge-with-the-good-run", "merge", (*MERGE, "out", "{good}", "s1"), SHARDS, REFUSE_OR_IDENTICAL, (),
         out="out", identical="out"),
)

COMPACT_SHARDS = (Op("copy", "s1", "compact1"), Op("copy", "s2", "compact2"))
add(
    Case("merge-clean-compacted", "merge", (*MERGE, "out", "s1", "s2"), COMPACT_SHARDS, OK, out="out",
         identical="out"),
    Case("merge-compacted-and-kept-parts", "merge", (*MERGE, "out", "s1", "s2"),
         (Op("copy", "s1", "compact1"), Op("copy", "s2", "shard2")), OK, out="out", identical="out"),
    Case("merge-compacted-shard-given-twice", "merge", (*MERGE, "out", "s1", "s2", "s1x"),
         (*COMPACT_SHARDS, Op("copy", "s1x", "compact1")), USAGE, ("s1x",), out="out"),
)
for _target in ("manifest.json", "sessions.parquet", "calls.parquet"):
    for _how in DAMAGES:
        add(Case(f"merge-compacted-{_target}-{_how}", "merge", (*MERGE, "out", "s1", "s2"),
                 (*COMPACT_SHARDS, damage("s2", _target, _how)), REFUSE_OR_IDENTICAL, (TARGET_NAME[_target],),
                 out="out", damaged="s2", identical="out"))

RESUME = ("run", "tiny.toml", "--out", "run", "--quiet", "--no-report")
#: A finished run as `ctxbench run` leaves it (no parts): damage to its tables or manifest is repaired by
#: replaying every batch, or refused.
for _target in ("config.toml", "manifest.json", "sessions.parquet", "calls.parquet"):
    for _how in DAMAGES:
        add(Case(f"resume-compacted-{_target}-{_how}", "resume", RESUME,
                 (write("tiny.toml", TINY), Op("copy", "run", "compact"), damage("run", _target, _how)),
                 REFUSE_OR_IDENTICAL, (TARGET_NAME[_target],), damaged="run", identical="run"))
add(Case("resume-compacted-clean", "resume", RESUME, (write("tiny.toml", TINY), Op("copy", "run", "compact")), OK,
         identical="run"))
for _target in TARGETS:
    for _how in DAMAGES:
        add(Case(f"resume-{_target}-{_how}", "resume", RESUME,
                 (write("tiny.toml", TINY), Op("copy", "run", "good"), damage("run", _target, _how)),
                 REFUSE_OR_IDENTICAL, (TARGET_NAME[_target],), damaged="run", identical="run"))
#: Part damage with the manifest gone, so the resume must rebuild the tables from the parts.
for _how in DAMAGES:
    add(Case(f"resume-part-{_how}-no-manifest", "resume", RESUME,
             (write("tiny.toml", TINY), Op("copy", "run", "good"), damage("run", "manifest.json", "missing"),
              damage("run", "part", _how)), REFUSE_OR_IDENTICAL, (BATCH,), damaged="run", identical="run"))
add(
    Case("resume-clean", "resume", RESUME, (write("tiny.toml", TINY), Op("copy", "run", "good")), OK, identical="run"),
    Case("resume-parts-garbage-file-no-manifest", "resume", RESUME,
         (write("tiny.toml", TINY), Op("copy", "run", "good"), damage("run", "manifest.json", "missing"),
          damage("run", "parts", "garbage")), REFUSE_OR_IDENTICAL, ("parts",), damaged="run", identical="run"),
    Case("resume-part-of-another-run-no-manifest", "resume", RESUME,
         (write("tiny.toml", TINY), Op("copy", "run", "good"), damage("run", "manifest.json", "missing"),
          Op("copy_file", f"run/parts/{PART}", f"other/parts/{PART}")), REFUSE_OR_IDENTICAL, (BATCH,), damaged="run",
         identical="run"),
    Case("resume-tables-gone", "resume", RESUME,
         (write("tiny.toml", TINY), Op("copy", "run", "good"), damage("run", "sessions.parquet", "missing"),
          damage("run", "calls.parquet", "missing"), damage("run", "manifest.json", "missing")), OK, identical="run"),
    Case("resume-shard-into-whole-run", "resume", ("run", "tiny.toml", "--out", "run", "--shard", "1/2", "--quiet",
                                                   "--no-report"),
         (write("tiny.toml", TINY), Op("copy", "run", "good")), REFUSE_OR_IDENTICAL, ("shard",), damaged="run",
         identical="run"),
    Case("resume-stale-temp-files", "resume", RESUME,
         (write("tiny.toml", TINY), Op("copy", "run", "good"), damage("run", "manifest.json", "missing"),
          write("run/.sessions.parquet.x1y2z3.tmp", GARBAGE), write("run/parts/.00-0000001.jsonl.a1b2c3.tmp", GARBAGE)),
         REFUSE_OR_IDENTICAL, (), damaged="run", identical="run"),
    Case("resume-another-config", "resume", ("run", "other.toml", "--out", "run", "--quiet", "--no-report"),
         (write("other.toml", OTHER), Op("copy", "run", "good")), USAGE, ("config",), damaged="run"),
)


# validation: only cases that must fail before any experiment runs ---------------------------------------------

VAL = ("validation", "--quick", "--quiet", "--out", "vout", "--doc", "doc/validation.md")
VAL_SETUP = (write("afile", "keep me\n"), Op("mkdir", "adir"), Op("mkdir", "empty"))
VALIDATION: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[Op, ...]]] = {
    "jobs-neg1": (("--jobs=-1",), ("jobs",), ()),
    "jobs-2000": (("--jobs", "2000"), ("jobs",), ()),
    "jobs-abc": (("--jobs", "abc"), ("--jobs",), ()),
    "sessions-0": (("--sessions", "0"), ("--sessions",), ()),
    "sessions-neg3": (("--sessions=-3",), ("--sessions",), ()),
    "doc-is-a-directory": (("--doc", "adir"), ("adir",), ()),
    "doc-through-a-file": (("--doc", "afile/validation.md"), ("afile",), ()),
    "out-is-a-file": (("--out", "afile"), ("afile",), ()),
    "examples-missing": (("--examples", "nope"), ("nope",), ()),
    "examples-a-file": (("--examples", "afile"), ("afile",), ()),
    "examples-empty-dir": (("--examples", "empty"), ("empty",), ()),
    "examples-broken-config": (("--examples", "ex"), ("complexity-trap.toml",),
                               (Op("copy", "ex", "examples"), write("ex/complexity-trap.toml", 'sessions = "x\n'))),
    "report-only-empty-out": (("--report-only", "--out", "empty"), ("empty",), ()),
    "report-only-missing-out": (("--report-only", "--out", "nope"), ("nope",), ()),
    "report-only-a-run-dir": (("--report-only", "--out", "{good}"), ("validation",), ()),
}
for _name, (_flags, _must, _setup) in VALIDATION.items():
    _out = "afile" if _name == "out-is-a-file" else "vout"
    add(Case(f"validation-{_name}", "validation", (*VAL, *_flags), (*VAL_SETUP, *_setup), USAGE, _must, out=_out))


# traces: ctxbench replay and ctxbench fit over every broken trace of tests/data/malformed_traces ------------------

MALFORMED_TRACES = Path(__file__).resolve().parents[1] / "data" / "malformed_traces"
GOOD_TRACE = Path(__file__).resolve().parents[1] / "data" / "traces" / "anthropic" / "incident_triage.json"


def trace_ops(source: Path) -> tuple[Op, ...]:
    """Writes that recreate a trace file or session directory of the samples under the case's directory."""
    if source.is_file():
        return (write(source.name, source.read_bytes()),)
    return tuple(write(f"{source.name}/{p.relative_to(source)}", p.read_bytes())
                 for p in sorted(source.rglob("*")) if p.is_file())


for _source in sorted(MALFORMED_TRACES.iterdir()):
    _ops = trace_ops(_source)
    add(Case(f"traces-replay-{_source.name}", "traces", ("replay", _source.name, "--out", "out", "--quiet"), _ops,
             USAGE, (_source.name,), out="out"))
    add(Case(f"traces-replay-with-a-good-one-{_source.name}", "traces",
             ("replay", GOOD_TRACE.name, _source.name, "--out", "out", "--quiet"),
             (*_ops, *trace_ops(GOOD_TRACE)), USAGE, (_source.name,), out="out"))
for _source in sorted(MALFORMED_TRACES.iterdir())[:6]:
    add(Case(f"traces-fit-{_source.name}", "traces", ("fit", _source.name, "--out", "w.toml", "--quiet"),
             trace_ops(_source), USAGE, (_source.name,), out="w.toml"))
_GOOD_OPS = trace_ops(GOOD_TRACE)
_T = GOOD_TRACE.name
add(
    Case("traces-replay-missing-file", "traces", ("replay", "nope.json", "--out", "out"), (), USAGE, ("nope.json",),
         out="out"),
    Case("traces-replay-empty-dir", "traces", ("replay", "empty", "--out", "out"), (Op("mkdir", "empty"),), USAGE,
         ("empty",), out="out"),
    Case("traces-replay-format-unknown", "traces", ("replay", _T, "--format", "yaml", "--out", "out"), _GOOD_OPS,
         USAGE, ("--format", "yaml"), out="out"),
    Case("traces-replay-format-wrong", "traces", ("replay", _T, "--format", "openai-chat", "--out", "out"),
         _GOOD_OPS, USAGE, (_T,), out="out"),
    Case("traces-replay-strategy-unknown", "traces", ("replay", _T, "--strategies", "nope", "--out", "out"),
         _GOOD_OPS, USAGE, ("nope",), out="out"),
    Case("traces-replay-model-unknown", "traces", ("replay", _T, "--model", "nope", "--out", "out"), _GOOD_OPS,
         USAGE, ("nope",), out="out"),
    Case("traces-replay-config-broken", "traces", ("replay", _T, "--config", "c.toml", "--out", "out"),
         (*_GOOD_OPS, write("c.toml", 'sessions = "x\n')), USAGE, ("c.toml",), out="out"),
    Case("traces-replay-out-not-empty", "traces", ("replay", _T, "--out", "out"),
         (*_GOOD_OPS, write("out/keep.txt", "keep me\n")), USAGE, ("out",), damaged="out"),
    Case("traces-replay-out-a-file", "traces", ("replay", _T, "--out", "out"), (*_GOOD_OPS, write("out", "x\n")),
         USAGE, ("out",), damaged="out"),
    Case("traces-replay-good", "traces", ("replay", _T, "--out", "out", "--quiet"), _GOOD_OPS, OK,
         produces=("out/report.html", "out/report.md", "out/sessions.parquet", "out/hidden.parquet")),
    Case("traces-fit-out-exists", "traces", ("fit", _T, "--out", "w.toml"), (*_GOOD_OPS, write("w.toml", "x = 1\n")),
         USAGE, ("w.toml",), damaged="w.toml"),
)


# replay-resume: ctxbench replay into an accounting run directory it left, damaged ---------------------------------

#: The recorded sessions of the accounting sources: three sessions (one batch each, so parts/ holds three).
REPLAY_TRACES = (GOOD_TRACE, GOOD_TRACE.parent / "two_sessions.jsonl")
_STRATEGIES_OF_REPLAY = '[[strategies]]\nname = "unbounded"\n[[strategies]]\nname = "drop_all"\n'
#: The accounting sources' config: drop_all hides recorded outputs, so hidden.parquet has rows.
REPLAY_CONFIG = 'batch_size = 1\nexecutor = "serial"\n' + _STRATEGIES_OF_REPLAY
#: Another config of the same traces (another model profile): its parts are another run's.
REPLAY_OTHER = 'batch_size = 1\nexecutor = "serial"\nmodel = "mid"\n' + _STRATEGIES_OF_REPLAY
REPLAY_TARGETS = {  # id -> path inside the accounting run directory
    "config.toml": "config.toml", "manifest.json": "manifest.json", "sessions.parquet": "sessions.parquet",
    "calls.parquet": "calls.parquet", "hidden.parquet": "hidden.parquet", "part": f"parts/{PART}", "parts": "parts",
}
REPLAY_TARGET_NAME = TARGET_NAME | {"hidden.parquet": "hidden.parquet"}
_REPLAY_OPS = (*(op for t in REPLAY_TRACES for op in trace_ops(t)), write("replay.toml", REPLAY_CONFIG))
_REPLAY_NAMES = tuple(t.name for t in REPLAY_TRACES)
_REPLAY_OUT = ("--out", "run", "--quiet", "--no-report")
REPLAY_RESUME = ("replay", *_REPLAY_NAMES, "--config", "replay.toml", *_REPLAY_OUT)


def replay_damage(target: str, how: str) -> Op:
    return Op("damage", f"run/{REPLAY_TARGETS[target]}", how)


def replay_case(name: str, setup: tuple[Op, ...], expect: str = REFUSE_OR_IDENTICAL, must: tuple[str, ...] = (),
                argv: tuple[str, ...] = REPLAY_RESUME, source: str = "replay") -> Case:
    """``ctxbench replay`` of the accounting sources' traces into ``run``, a copy of ``source`` changed by
    ``setup``: refused changing nothing, or resumed to the undamaged replay's tables."""
    return Case(f"replay-resume-{name}", "replay-resume", argv, (*_REPLAY_OPS, Op("copy", "run", source), *setup),
                expect, must, damaged="run", identical="run", reference="replay")


for _target in REPLAY_TARGETS:
    for _how in DAMAGES:
        add(replay_case(f"{_target}-{_how}", (replay_damage(_target, _how),), must=(REPLAY_TARGET_NAME[_target],)))
#: A finished replay as `ctxbench replay` leaves it (no parts): its batches replayed again, or refused.
for _target in ("config.toml", "manifest.json", "sessions.parquet", "calls.parquet", "hidden.parquet"):
    for _how in DAMAGES:
        add(replay_case(f"compacted-{_target}-{_how}", (replay_damage(_target, _how),),
                        must=(REPLAY_TARGET_NAME[_target],), source="replay-compact"))
#: Part damage with the manifest gone, so the resume must rebuild the tables from the parts.
for _how in DAMAGES:
    add(replay_case(f"part-{_how}-no-manifest",
                    (replay_damage("manifest.json", "missing"), replay_damage("part", _how)), must=(BATCH,)))
add(
    replay_case("clean", (), OK),
    replay_case("compacted-clean", (), OK, source="replay-compact"),
    replay_case("tables-gone", tuple(replay_damage(t, "missing") for t in ("sessions.parquet", "calls.parquet",
                                                                          "hidden.parquet", "manifest.json")), OK),
    replay_case("stale-temp-files", (replay_damage("manifest.json", "missing"),
                                     write("run/.sessions.parquet.x1y2z3.tmp", GARBAGE),
                                     write("run/parts/.00-0000001.jsonl.a1b2c3.tmp", GARBAGE))),
    replay_case("part-of-another-run-no-manifest", (replay_damage("manifest.json", "missing"),
                                                    Op("copy_file", f"run/parts/{PART}", f"replay-other/parts/{PART}")),
                must=(BATCH,)),
    replay_case("another-config", (write("other.toml", REPLAY_OTHER),), USAGE, ("config",),
                argv=("replay", *_REPLAY_NAMES, "--config", "other.toml", *_REPLAY_OUT)),
    replay_case("other-traces", (), USAGE, ("run", "another config"),
                argv=("replay", GOOD_TRACE.name, "--config", "replay.toml", *_REPLAY_OUT)),
    replay_case("other-strategies", (), USAGE, ("run", "another config"),
                argv=(*REPLAY_RESUME, "--strategies", "unbounded")),
    replay_case("no-resume", (), USAGE, ("--no-resume",), argv=(*REPLAY_RESUME, "--no-resume")),
    replay_case("into-a-simulated-run", (), USAGE, ("config",), source="good"),
)


# export-otel: the OpenTelemetry export of a finished run ----------------------------------------------------------

add(
    Case("traces-export-otel-missing-dir", "traces", ("export-otel", "nope"), (), USAGE, ("nope",)),
    Case("traces-export-otel-empty-dir", "traces", ("export-otel", "empty"), (Op("mkdir", "empty"),), USAGE,
         ("empty",), damaged="empty"),
    Case("traces-export-otel-out-in-missing-dir", "traces", ("export-otel", "run", "--out", "no/such/dir/t.jsonl"),
         (Op("copy", "run", "good"),), USAGE, ("no/such/dir",), damaged="run"),
    Case("traces-export-otel-to-unknown", "traces", ("export-otel", "run", "--to", "grpc"),
         (Op("copy", "run", "good"),), USAGE, ("--to",), damaged="run"),
    Case("traces-export-otel-damaged-sessions", "traces", ("export-otel", "run", "--out", "t.jsonl"),
         (Op("copy", "run", "good"), damage("run", "sessions.parquet", "garbage")), USAGE, ("sessions.parquet",),
         damaged="run", out="t.jsonl"),
    Case("traces-export-otel-good", "traces", ("export-otel", "run", "--out", "t.jsonl", "--quiet"),
         (Op("copy", "run", "good"),), OK, produces=("t.jsonl",)),
)


# Families kept in modules of their own, each adding its cases through `add` -------------------------------------

from tests.hostile import (  # noqa: E402
    cases_calibrate,
    cases_cc_otel,
    cases_readers,
    cases_swe,
    cases_tau_litellm,
    cases_tune,
    cases_writers,
)

FAMILIES = (*FAMILIES, *cases_readers.FAMILIES, *cases_writers.FAMILIES, *cases_swe.FAMILIES,
            *cases_tau_litellm.FAMILIES, *cases_cc_otel.FAMILIES, *cases_calibrate.FAMILIES,
            *cases_tune.FAMILIES)
