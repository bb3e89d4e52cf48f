"""`code_repair`: a SWE-agent-shaped bug fix in a Python repository (the Complexity Trap's workload,
docs/model.md 11): run the failing tests, read the traceback, open the calling frame, find
the helper that computed the bad value, open its module, locate the wrong constant, edit, re-run,
run the whole suite, submit.

The story: a discount rule passes a percentage (15) to ``<noun>_discount_rate``, which divides it by
``<NOUN>_UNIT_DIVISOR`` (1) instead of ``<NOUN>_PCT_DIVISOR`` (100); a guard a few frames further on
raises ``<Word>RangeError`` because the rate is outside [0, 1]. With some chance a second bug
(truncating instead of rounding) needs another edit.

Facts and how they are found (docs/model.md 1, `scenarios.base.Lookup`):
- literal (the value is printed next to what identifies it): ``failing_test`` (the FAILED line),
  ``exception`` (the ``E`` line), ``call_file`` and ``raise_function`` (the traceback frames),
  ``root_file`` (the ``def`` line in the search results), ``bug_line`` (the grep line that holds the
  faulty expression), ``suite_result`` (the last line of the full run).
- latent (two of nine looked-up facts, J): ``root_function``, the culprit among the helpers the
  calling frame uses: the traceback points at the guard, and only the symptom (a rate of 15) says
  which helper made the value; ``bad_constant``, the one of three divisor constants whose value is
  wrong, inferred from the symptom, not stated next to it.

Decoys: two other test ids of the same file (XFAIL lines), the module's other exception classes,
sibling ``*_rules.py`` files, the sibling helpers, the legacy copy of the root module, the other
divisor constants, and another line that uses the bad constant correctly.

Sizes (SWE-agent's viewer and caps; research12 section 4): a file window is at most 100 numbered
lines, a search with more than 100 matching lines prints SWE-agent's "narrow your search" message
instead of results, and every other output is a lognormal size around ``payload_median_bytes``
capped at ``payload_max_bytes``. Session length is drawn from the family's own mix (`TURNS_MEDIAN`).
Measured over seeds 0-299: 61.9 steps a script (the drawn turns average 58.8 over 3,000 seeds) and 685
payload tokens a step, so with a ~100-token call the context grows ~790 tokens a turn, 87% of it
observations (the paper: 620-720 and 83.9%). Payload bytes: median 3.1 KB (the windows, ~40% of
steps, hold it up), p95 6 KB, max 14.9 KB.
Fact values never need a ``word-xxxx`` suffix: they are built from vocabularies (``FACT_WORDS``) that
the filler text never uses, so no value can occur by chance.

A workload fitted to recorded sessions (``ctxbench fit``, `harness.run.fitting`) sets three more params,
which change nothing when unset (scripts stay byte for byte what they were): ``turns_median`` and
``turns_sigma``, a lognormal of session lengths whose short draws drop the chain's optional steps
(`OPTIONAL_CORE`; 8 steps at the least, 9 with the second bug); and ``role_weights``, the exploration's share
by role (read, search, edit, run), which also brings SWE-agent's reproduction script (create it, add a
check to it, run it, remove it once the fix is in) and, graded on the patch, a script-first chain: the
script, not the test suite, shows the failure and checks the fix, as SWE-agent's instance template tells its
agent to ("Create a script to reproduce the error and execute it", "Rerun your reproduce script", and on
submit "Remove your reproduction script"; SWE-agent/SWE-agent, config/default.yaml) and as its sessions do
far more often than they run pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_serializer,
)

from harness.core.tools import ToolArgs, ToolRegistry
from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, Series, SessionScript, register
from scenarios.builder import TURNS_MAX, TURNS_MIN, CoreStep, ScriptDraft, lit
from scenarios.draws import HEX, Draws

#: Session length mix (J, fitted to research12 4.3, Qwen3-Coder 480B raw: mean 58.5, median 49,
#: p90 93 turns): lognormal, median 51, sigma 0.5, clipped like the builder's: mean 58.7 and p90 98
#: over 3,000 seeds.
#: The paper's median is lower (its tail is heavier than a lognormal's); the mean is what sets cost.
TURNS_MEDIAN, TURNS_SIGMA = 51, 0.5
#: SWE-agent's file viewer window (`WINDOW: 100`) and its search caps (more than 100 matches).
WINDOW_LINES = 100
SEARCH_CAP = 100
#: Chance that an exploratory search is broad enough to hit the cap (J).
BROAD_SEARCH_P = 0.15
#: Bytes kept free for the fixed lines of a capped output (headers, the summary banner).
FRAME_BYTES = 1500
#: Chance of the second bug, a truncating rounding that needs another edit (J).
SECOND_BUG_P = 0.35
#: The params of a fitted workload (`CodeRepairParams`), recorded in a script only when set.
FITTED_PARAMS = ("turns_median", "turns_sigma", "role_weights")
#: The largest role weight: weights are relative (as a mix's are).
MAX_ROLE_WEIGHT = 1e6
#: Core steps a script shorter than its whole chain drops (fitted length mix only), first to last, of either
#: chain: none finds a fact a later step needs (the suite's result is kept when graded on the report).
OPTIONAL_CORE = ("scroll_to_constants", "run_test_file", "rerun_again", "rerun_repro_again", "run_full_suite",
                 "rerun_failing_test", "rerun_repro")
#: The roles an exploration step's call can have (`CodeRepairParams.role_weights`).
ExplorationRole = Literal["read", "search", "edit", "run"]
#: The role of each exploration kind's call (`harness.run.fitting.tool_role` names the same roles from a call):
#: what ``role_weights`` weighs. Only the reproduction script edits.
EXPLORATION_ROLES: dict[str, ExplorationRole] = {
    "open_module": "read", "scroll_module": "read", "read_config": "read", "open_errors": "read",
    "open_guards": "read", "open_sibling_rule": "read", "open_legacy": "read", "git_log": "read", "git_diff": "read",
    "search_code": "search", "search_callers": "search", "list_dir": "search",
    "run_other_tests": "run", "python_repro": "run", "run_repro": "run",
    "create_repro": "edit", "edit_repro": "edit", "remove_repro": "edit",
}
#: The script-first chain's core steps that run the reproduction script (it stays until the last has run).
REPRO_RUN_STEPS = frozenset({"_run_repro_first", "_rerun_repro", "_rerun_repro_again"})
#: What SWE-agent prints for a command without output (``rm`` of the reproduction script): its
#: ``next_step_no_output_template`` (SWE-agent/SWE-agent, config/default.yaml).
NO_OUTPUT = "Your command ran successfully and did not produce any output."
#: The commands a reproduction script is run with, in turn (calls must differ: a script makes no call twice).
REPRO_RUNS = ("python {}", "python3 {}", "python -u {}", "python -X dev {}")

PACKAGES = ("ledgerkit", "pricebook", "tillpoint", "cartwright", "invoicely", "shopfloor")
#: Vocabularies of the fact values: the filler text below never uses these words.
RULE_KINDS = ("percent", "loyalty", "seasonal", "bundle", "volume", "referral")
ROOT_NOUNS = ("tier", "band", "bracket", "segment", "cohort")
GRADES = ("gold", "silver", "bronze", "platinum", "staff", "trade", "student")
ERROR_WORDS = ("Pricing", "Discount", "Coupon", "Promo")
GUARDS = ("check_rate_bounds", "ensure_unit_fraction", "assert_valid_rate")
#: Every word the fact values are built from (checked against the filler vocabularies by the tests).
FACT_WORDS = (*RULE_KINDS, *ROOT_NOUNS, "discount", "markup", "rebate", "tables", "rules", "divisor", "bounds",
              "range", "xfailed")

# Filler vocabularies (J): plain words of a retail code base.
NOUNS = ("order", "invoice", "item", "currency", "address", "customer", "session", "payload", "config", "money",
         "ledger", "refund", "shipment", "basket", "receipt", "total", "amount", "tax", "price", "warehouse",
         "stock", "region", "locale", "channel", "batch", "record", "event", "token", "sku", "carrier")
VERBS = ("load", "parse", "build", "format", "resolve", "merge", "compute", "render", "fetch", "store", "validate",
         "normalize", "serialize", "split", "collect", "convert", "encode", "lookup", "reset", "sync")
CLASS_SUFFIXES = ("Store", "Service", "Builder", "Client", "Record", "Policy", "Registry", "Formatter", "Cache")
CONSTANTS = ("DEFAULT_TIMEOUT", "MAX_RETRIES", "CACHE_SIZE", "PAGE_SIZE", "DEFAULT_CURRENCY", "ROUNDING_PLACES",
             "BATCH_LIMIT", "SCHEMA_VERSION")
FILLER_MODULES = ("cart", "money", "currency", "checkout", "taxes", "inventory", "serializers", "config", "cli",
                  "utils/text", "utils/dates", "storage/cache", "storage/sql", "api/views", "api/schemas",
                  "pricing/engine", "pricing/context", "pricing/__init__", "events", "webhooks")
FILLER_TESTS = ("test_cart", "test_money", "test_currency", "test_checkout", "test_taxes", "test_inventory",
                "test_serializers", "test_config", "test_cli", "test_text", "test_dates", "test_cache",
                "test_sql", "test_views", "test_schemas", "pricing/test_engine", "pricing/test_context",
                "test_events", "test_webhooks")
CONFIG_FILES = ("pyproject.toml", "setup.cfg", "tox.ini", "CHANGELOG.md", "README.md", "docs/pricing.rst")
SEARCH_TERMS = (*NOUNS, *VERBS, "Decimal", "self", "return", "import", "None", "logger", "raise", "def ",
                "TODO", "quantize", "isinstance", "dataclass")
COMMIT_SUBJECTS = ("Fix typo in {n} docstring", "Refactor {v}_{n} helpers", "Add tests for {n} parsing",
                   "Bump version", "Handle empty {n} in {v}", "Merge pull request #{k} from dev/{n}-{v}",
                   "Speed up {v} for large {n} lists", "Drop Python 3.8 support", "Document {n} settings",
                   "Make {v}_{n} idempotent")
PYTEST_HEADER = ("============================= test session starts ==============================\n"
                 "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0\n"
                 "rootdir: /repo\nconfigfile: pyproject.toml\nplugins: cov-5.0.0, xdist-3.6.1")
NARROW = 'More than {n} lines matched for "{pattern}" in {where}. Please narrow your search.'
EDITED = ("File updated. Please review the changes and make sure they are correct (correct indentation, no "
          "duplicate lines, etc). Edit the file again if necessary.")


# The tools: a SWE-agent-like set. Latencies (J): file operations a few tenths of a second (the viewer,
# grep and edit run in a container), a pytest run several seconds.
RepoPath = Annotated[StrictStr, Field(min_length=1, max_length=400, pattern=r"^[^/\s]\S*$")]
LineNumber = Annotated[StrictInt, Field(ge=1, le=1_000_000)]


class OpenFile(ToolArgs):
    description = "Open a file in the viewer: the 100-line window around a line (default the first), numbered."
    median_latency_s = 0.3
    path: RepoPath
    line: LineNumber | None = None


class Scroll(ToolArgs):
    description = "Move the viewer on a file to the 100-line window that starts at a line."
    median_latency_s = 0.3
    path: RepoPath
    line: LineNumber


class SearchRepo(ToolArgs):
    description = ("Search the files under a path (default the repository root) for a text; lists path:line:text "
                   "matches, or asks to narrow the search when more than 100 lines match.")
    median_latency_s = 0.5
    pattern: Annotated[StrictStr, Field(min_length=1)]
    path: RepoPath | None = None


class RunTests(ToolArgs):
    description = "Run pytest on a test path or test id (default: the whole suite)."
    median_latency_s = 8.0
    target: Annotated[StrictStr, Field(min_length=1)] | None = None
    tb: Literal["auto", "long", "short", "line", "no"] = "auto"
    verbose: StrictBool = False
    keyword: Annotated[StrictStr, Field(min_length=1)] | None = None


class EditFile(ToolArgs):
    description = "Replace lines start_line..end_line (inclusive) of a file with new text; shows the edited window."
    median_latency_s = 0.4
    path: RepoPath
    start_line: LineNumber
    end_line: LineNumber
    replacement: StrictStr


class Bash(ToolArgs):
    description = "Run a shell command in the repository and return its output."
    median_latency_s = 0.5
    command: Annotated[StrictStr, Field(min_length=1)]


class Submit(ToolArgs):
    description = "Submit the working tree's changes as the final patch (prints the diff)."
    median_latency_s = 1.0


class DeleteFile(ToolArgs):
    description = "Delete a file from the repository."
    dangerous = True
    median_latency_s = 0.2
    path: RepoPath




#: The tools a code_repair session calls, none shared with the ops families.
TOOLS = ToolRegistry({
    "open_file": OpenFile,
    "scroll": Scroll,
    "search_repo": SearchRepo,
    "run_tests": RunTests,
    "edit_file": EditFile,
    "bash": Bash,
    "submit": Submit,
    "delete_file": DeleteFile,
}, where=__name__)


class CodeRepairParams(ScenarioParams):
    #: SWE-agent-sized observations (docs/model.md 11): median 1.4 KB, sigma 0.85, outputs
    #: capped at 16 KB (the audit's 12-16 KB; SWE-agent itself cuts at 100,000 characters).
    payload_median_bytes: StrictInt = Field(1400, ge=64, le=1_000_000)
    payload_sigma: float = Field(0.85, ge=0, le=4)
    payload_max_bytes: StrictInt = Field(16_000, ge=256, le=10_000_000)
    #: What the session is graded on (docs/model.md v3 change 7): ``patch``, the submitted edit at the
    #: right file and line (the edit call takes both from the context: ``root_file`` and ``bug_line``),
    #: as SWE-bench grades; or ``report``, the older five-fact final report, with the edit's line given
    #: literally (its file still from ``root_file``; kept to measure what the change moved).
    graded_on: Literal["patch", "report"] = "patch"
    #: The session length mix, for a workload fitted to recorded sessions (`harness.run.fitting`): with
    #: ``turns`` unset, each script's length is drawn from a lognormal of this median and sigma (either
    #: alone takes the family's own value for the other, `TURNS_MEDIAN`, `TURNS_SIGMA`), clipped to
    #: [1, `TURNS_MAX`]; a length below the core chain's drops its optional steps (`OPTIONAL_CORE`), down to
    #: the shortest chain that still fixes the bug. Unset: the family's own mix, clipped to [20, 200].
    turns_median: StrictInt | None = Field(None, ge=1, le=TURNS_MAX)
    turns_sigma: float | None = Field(None, ge=0, le=2)
    #: The exploration steps' share by role (``read``, ``search``, ``edit``, ``run``; relative weights),
    #: for a fitted workload: each role's kinds keep their own weights' proportions. It also adds the
    #: reproduction-script kinds (create, edit, run and remove a ``reproduce.py``, as SWE-agent sessions
    #: do), the only exploration that edits. Unset: the kinds' own weights, and no reproduction script.
    role_weights: dict[ExplorationRole, float] | None = None

    @field_validator("role_weights")
    @classmethod
    def _valid_role_weights(cls, weights: dict[ExplorationRole, float] | None) -> dict[ExplorationRole, float] | None:
        if weights is None:
            return None
        if any(not 0 <= w <= MAX_ROLE_WEIGHT for w in weights.values()):
            raise ValueError(f"each role weight must be in [0, {MAX_ROLE_WEIGHT:g}]")
        if not any(w > 0 for w in weights.values()):
            raise ValueError("at least one role weight must be > 0")
        return dict(sorted(weights.items()))

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # The fitted-workload params are written only when set: a script made without them stays byte for
        # byte what it was before they existed (tests/scenarios pins scripts by hash), and so do the params
        # tables of reports.
        data: dict[str, Any] = handler(self)
        for name in FITTED_PARAMS:
            if data.get(name) is None:
                data.pop(name, None)
        return data

    @property
    def length_mix(self) -> bool:
        """True when the script's length comes from the fitted length mix (``turns_median``/``turns_sigma``)."""
        return self.turns is None and (self.turns_median is not None or self.turns_sigma is not None)


def banner(text: str, fill: str = "=") -> str:
    """A pytest section line: ``text`` centred in 80 columns of ``fill``."""
    return f" {text} ".center(80, fill)


def window(path: str, lines: Sequence[str], first: int) -> str:
    """SWE-agent's file viewer: at most `WINDOW_LINES` numbered lines from ``first`` (1-based)."""
    first = max(1, min(first, max(1, len(lines) - WINDOW_LINES + 1)))
    last = min(len(lines), first + WINDOW_LINES - 1)
    out = [f"[File: /repo/{path} ({len(lines)} lines total)]"]
    if first > 1:
        out.append(f"({first - 1} more lines above)")
    out += [f"{n}:{lines[n - 1]}" for n in range(first, last + 1)]
    if last < len(lines):
        out.append(f"({len(lines) - last} more lines below)")
    return "\n".join(out)


def search_result(pattern: str, where: str, matches: Sequence[str], total: int | None = None) -> str:
    """SWE-agent-style search output: the matches, or the narrow-your-search message past the cap."""
    n = len(matches) if total is None else total
    if n > SEARCH_CAP:
        return NARROW.format(n=n, pattern=pattern, where=where)
    if not matches:
        return f'No matches found for "{pattern}" in {where}'
    return "\n".join([f'Found {n} matches for "{pattern}" in {where}:', *matches,
                      f'End of matches for "{pattern}" in {where}'])


def plural(noun: str) -> str:
    return noun[:-1] + "ies" if noun.endswith("y") else noun + ("es" if noun.endswith(("s", "x")) else "s")


class PythonText:
    """Real-looking Python source made of the filler vocabularies, from one `Draws` stream."""

    def __init__(self, d: Draws) -> None:
        self.d = d

    def name(self) -> str:
        return f"{self.d.choice(VERBS)}_{self.d.choice(NOUNS)}"

    def statement(self, ind: str) -> list[str]:
        d, n, v = self.d, self.d.choice(NOUNS), self.d.choice(NOUNS)
        kind = d.integer(0, 7)
        if kind == 0:
            return [f'{ind}{n} = {v}.get("{d.choice(NOUNS)}", {d.choice(("None", "0", "[]", "{}", "False"))})']
        if kind == 1:
            return [f"{ind}if {n} is None:", f"{ind}    return {d.choice(('None', 'default', '[]', 'Decimal(0)'))}"]
        if kind == 2:
            return [f"{ind}for {n} in {plural(v)}:", f"{ind}    result.append({self.name()}({n}))"]
        if kind == 3:
            return [f"{ind}{n} = {self.name()}({v}, strict={d.choice(('True', 'False'))})"]
        if kind == 4:
            return [f'{ind}logger.debug("{d.choice(VERBS)} %s for %s", {n}, {v})']
        if kind == 5:
            return [f"{ind}if not isinstance({n}, {d.choice(('str', 'int', 'Decimal', 'dict'))}):",
                    f'{ind}    raise {d.choice(("ValueError", "TypeError", "KeyError"))}(f"bad {n}: {{{n}!r}}")']
        if kind == 6:
            return [f"{ind}{n} = Decimal({v}).quantize(Decimal(\"0.01\"))"]
        return [f"{ind}{plural(n)} = [{self.name()}(x) for x in {plural(v)} if x]"]

    def function(self, ind: str = "") -> list[str]:
        d, name = self.d, self.name()
        args = ", ".join(dict.fromkeys(d.choice(NOUNS) for _ in range(d.integer(1, 3))))
        lines = [f"{ind}def {name}({'self, ' if ind else ''}{args}, *, strict: bool = False) -> "
                 f"{d.choice(('Decimal', 'str', 'dict', 'list', 'None', 'bool'))}:",
                 f'{ind}    """{name.split("_")[0].capitalize()} the {name.split("_")[1]} of a {d.choice(NOUNS)}."""']
        lines.append(f"{ind}    result = []")
        for _ in range(d.integer(2, 7)):
            lines += self.statement(ind + "    ")
        lines += [f"{ind}    return result", ""]
        return lines

    def block(self) -> list[str]:
        """A function, or a small class with methods, followed by a blank line."""
        d = self.d
        if d.chance(0.6):
            return [*self.function(), ""]
        cls = f"{d.choice(NOUNS).capitalize()}{d.choice(CLASS_SUFFIXES)}"
        lines = [f"class {cls}:", f'    """{d.choice(VERBS).capitalize()}s {d.choice(NOUNS)} records."""', "",
                 "    def __init__(self, config: dict) -> None:", "        self.config = config",
                 f"        self._{plural(d.choice(NOUNS))}: dict[str, Decimal] = {{}}", ""]
        for _ in range(d.integer(1, 3)):
            lines += self.function("    ")
        return [*lines, ""]

    def header(self, pkg: str, doc: str) -> list[str]:
        d = self.d
        mods = d.sample(("logging", "dataclasses", "functools", "itertools", "json", "re", "typing"), 3)
        lines = [f'"""{doc}"""', "", "from __future__ import annotations", "",
                 *(f"import {m}" for m in sorted(mods)), "from decimal import ROUND_HALF_UP, Decimal", "",
                 f"from {pkg}.{d.choice(('money', 'config', 'currency'))} import {self.name()}", "",
                 "logger = logging.getLogger(__name__)", ""]
        for const in d.sample(CONSTANTS, 2):
            lines.append(f"{const} = {d.integer(2, 500)}")
        return [*lines, "", ""]

    def module(self, pkg: str, doc: str, n_lines: int, anchors: Sequence[tuple[int, Sequence[str]]] = ()) -> list[str]:
        """A module of ``n_lines`` lines with each anchor block placed so that it starts exactly at
        its line (1-based); filler functions and classes fill the rest."""
        lines = self.header(pkg, doc)
        for at, block in sorted(anchors, key=lambda a: a[0]):
            tries = 0
            while len(lines) < at - 1:
                room = at - 1 - len(lines)
                filler = self.block()
                tries += 1
                if len(filler) <= room:
                    lines += filler
                elif tries > 3:  # no block fits: small accessors, then blank lines, fill the gap exactly
                    while room >= 5:
                        lines += [f"def {self.name()}() -> str:", f'    """The default {self.d.choice(NOUNS)}."""',
                                  f"    return {self.d.choice(CONSTANTS)}", "", ""]
                        room -= 5
                    lines += [""] * room
            if len(lines) != at - 1:
                raise ValueError(f"anchor at line {at} cannot be placed after {len(lines)} lines")
            lines += list(block)
        while len(lines) < n_lines:
            lines += self.block()
        return lines


class CodeRepairDraft(ScriptDraft):
    """One code_repair script being generated: the bug's facts, and one method per kind of step.

    Size: over 500 lines, and one unit on purpose. ``__init__`` draws one bug (some thirty facts, decoys,
    line numbers and counts), and every other method renders a piece of that same bug: the repository's
    files, the pytest and traceback text, the core steps and the fourteen exploration steps all read those
    draws, and the steps also share the draft's mutable state (``edits``, ``used``, the file cache). Moving
    the files or the steps into another class would hand it all of that state or a reference back to the
    draft, without making either part readable on its own. The class is instead kept in sections (files,
    text, core steps, exploration steps), each a run of short methods.
    """

    def __init__(self, scenario: str, seed: int, params: CodeRepairParams, series: Series | None = None) -> None:
        super().__init__(scenario, seed, params, series)
        self.graded_on = params.graded_on
        self.params: CodeRepairParams = params
        if params.length_mix:
            median = TURNS_MEDIAN if params.turns_median is None else params.turns_median
            sigma = TURNS_SIGMA if params.turns_sigma is None else params.turns_sigma
            self.turns = max(1, min(TURNS_MAX, round(self.draws.child("turns").lognormal(median, sigma))))
        elif params.turns is None:
            t = self.draws.child("turns").lognormal(TURNS_MEDIAN, TURNS_SIGMA)
            self.turns = max(TURNS_MIN, min(TURNS_MAX, round(t)))
        b, d = self.builder, self.draws
        self.pkg = d.choice(PACKAGES)
        kinds = d.sample(RULE_KINDS, 3)
        self.kind, self.sibling_kinds = kinds[0], kinds[1:]
        self.noun = d.choice(ROOT_NOUNS)
        noun, NOUN, pkg = self.noun, self.noun.upper(), self.pkg
        grades = d.sample(GRADES, 3)
        self.grade = grades[0]
        self.test_file = f"tests/pricing/test_{self.kind}_rules.py"
        test_name = f"test_{self.kind}_discount_applies_to_{{}}_members"
        err_word = d.choice(ERROR_WORDS)

        self.failing_test = b.fact("failing_test", "test_id", value=f"{self.test_file}::{test_name.format(grades[0])}")
        self.test_decoys = [b.decoy("failing_test", value=f"{self.test_file}::{test_name.format(g)}")
                            for g in grades[1:]]
        self.exception = b.fact("exception", "exception", value=f"{err_word}RangeError")
        self.exception_decoys = [b.decoy("exception", value=f"{err_word}{w}Error") for w in ("State", "Limit")]
        self.call_file = b.fact("call_file", "path", value=f"{pkg}/pricing/{self.kind}_rules.py")
        self.call_file_decoys = [b.decoy("call_file", value=f"{pkg}/pricing/{k}_rules.py") for k in self.sibling_kinds]
        self.raise_function = b.fact("raise_function", "function", value=d.choice(GUARDS))
        self.root_function = b.fact("root_function", "function", value=f"{noun}_discount_rate", lookup="latent")
        self.helper_decoys = [b.decoy("root_function", value=f"{noun}_{w}_rate") for w in ("markup", "rebate")]
        self.root_file = b.fact("root_file", "path", value=f"{pkg}/pricing/{noun}_tables.py")
        self.legacy_file = b.decoy("root_file", value=f"{pkg}/legacy/{noun}_tables.py")
        self.bad_constant = b.fact("bad_constant", "constant", value=f"{NOUN}_UNIT_DIVISOR", lookup="latent")
        self.pct_constant = b.decoy("bad_constant", value=f"{NOUN}_PCT_DIVISOR")
        self.bps_constant = b.decoy("bad_constant", value=f"{NOUN}_BPS_DIVISOR")

        # Line numbers. The root function's def is far enough down that the constants (near the top)
        # are not in its window; every line printed as `<noun>_tables.py:<n>` outside the root file
        # has two digits, so only the grep of the root file can print the 3-digit bug line.
        self.def_line = d.integer(110, 300)
        self.bug_line_no = self.def_line + 5  # the `rate = ...` line of `_root_function`
        self.other_use_no = self.def_line + d.integer(24, 40)
        self.const_line = d.integer(18, 30)
        self.root_lines_total = self.other_use_no + d.integer(40, 160)
        # The location's other forms (docs/model.md v3 change 6): the edit call's argument and the diff
        # hunk header of the submitted patch, which covers it.
        self.hunk_start = self.bug_line_no - 3
        self.bug_line = b.fact("bug_line", "location", value=f"{noun}_tables.py:{self.bug_line_no}",
                               forms=(f'"start_line":{self.bug_line_no}',
                                      f"@@ -{self.hunk_start},7 +{self.hunk_start},7 @@"))
        self.bug_line_decoy = b.decoy("bug_line", value=f"{noun}_tables.py:{self.other_use_no}")
        self.frame_line = d.integer(70, 250)
        self.raise_line = d.integer(24, 60)
        self.second_bug = d.chance(SECOND_BUG_P)

        self.suite_total = d.integer(280, 900)
        self.pricing_total = d.integer(40, 120)
        self.suite_result = b.fact("suite_result", "test_result",
                                   value=f"{self.suite_total} passed, 2 xfailed in {d.integer(900, 4000) / 100:.2f}s")
        self.percent = d.choice((10, 15, 20, 25, 30))
        self.price = f"{d.integer(12, 180)}.{d.choice(('99', '49', '95', '00'))}"
        self.expected = _discounted(self.price, self.percent)
        self.edits = 0
        self.used: set[tuple[str, tuple[object, ...]]] = set()
        self.files: dict[str, list[str]] = {}
        #: The reproduction script now in the repository (role_weights only), and how many were made.
        self.repro: str | None = None
        self.repros = 0
        #: Core steps still to run the reproduction script (the script-first chain's).
        self.repro_runs_left = 0

    # Files ---------------------------------------------------------------------------------------

    def file(self, path: str) -> list[str]:
        """The lines of ``path``, made once per script from a stream of its own (so opening it twice,
        in any order, shows the same text)."""
        if path not in self.files:
            self.files[path] = self._make_file(path)
        return self.files[path]

    def _make_file(self, path: str) -> list[str]:
        py = PythonText(self.draws.child("file", path))
        doc = f"{path.rsplit('/', 1)[-1].removesuffix('.py').replace('_', ' ').capitalize()} helpers."
        if path == self.call_file:
            return py.module(self.pkg, f"The {self.kind} discount rule.", self.frame_line + py.d.integer(60, 140),
                             [(self.frame_line - 6, self._rule_method())])
        if path == self.root_file:
            return py.module(self.pkg, f"Rate tables of {self.noun} pricing.", self.root_lines_total,
                             [(self.const_line, self._constants()), (self.def_line - 22, self._helper("markup", "PCT")),
                              (self.def_line, self._root_function(fixed=self.edits)),
                              (self.def_line + 12, self._helper("rebate", "BPS")),
                              (self.other_use_no - 2, self._unit_price())])
        return py.module(self.pkg, doc, py.d.integer(140, 520))

    def _constants(self) -> list[str]:
        return ['RATE_QUANTUM = Decimal("0.0001")', f'{self.bad_constant} = Decimal("1")',
                f'{self.pct_constant} = Decimal("100")', f'{self.bps_constant} = Decimal("10000")', ""]

    def _helper(self, word: str, unit: str) -> list[str]:
        noun = self.noun
        return [f"def {noun}_{word}_rate({noun}: str, amount: int | str | Decimal) -> Decimal:",
                f'    """The {word} fraction of a {noun} ({unit} points -> a fraction)."""',
                "    if amount in (None, \"\"):", "        return Decimal(0)",
                f"    return (Decimal(amount) / {noun.upper()}_{unit}_DIVISOR).quantize(RATE_QUANTUM)", "", ""]

    def _root_function(self, fixed: int) -> list[str]:
        noun = self.noun
        divisor = self.pct_constant if fixed >= 1 else self.bad_constant
        rounding = "ROUND_HALF_UP" if fixed >= 2 or not self.second_bug else "ROUND_DOWN"
        return [f"def {self.root_function}({noun}: str, percent: int | str | Decimal) -> Decimal:",
                f'    """The fraction of the price a {noun} discount takes off (15 -> 0.15)."""',
                "    if percent in (None, \"\"):", "        return Decimal(0)",
                f"    logger.debug(\"{noun} %s: %s%% off\", {noun}, percent)",
                f"    rate = Decimal(percent) / {divisor}",
                f"    return rate.quantize(RATE_QUANTUM, rounding={rounding})", "", ""]

    def _unit_price(self) -> list[str]:
        return [f"def {self.noun}_unit_price(amount: Decimal, units: int) -> Decimal:",
                '    """The price of one unit, in the currency\'s smallest unit."""',
                f"    return amount / units * {self.bad_constant}", "", ""]

    def _rule_method(self) -> list[str]:
        noun = self.noun
        return [f"class {self.kind.capitalize()}Rule(DiscountRule):",
                f'    """A {self.kind} discount, scaled by the customer\'s {noun}."""', "",
                "    def apply_to(self, amount: Decimal, ctx: PricingContext) -> Decimal:",
                f"        markup = {self.helper_decoys[0]}(ctx.{noun}, ctx.markup_points)",
                f"        rate = {self.root_function}(ctx.{noun}, self.percent)",
                f"        {self.raise_function}(rate)",
                "        return (amount * (1 + markup) * (1 - rate)).quantize(Decimal(\"0.01\"), ROUND_HALF_UP)",
                "",
                "    def describe(self) -> str:",
                f"        rebate = {self.helper_decoys[1]}(self.{noun}, self.rebate_bps)",
                '        return f"{self.percent}% off, rebate {rebate}"', ""]

    # Text ----------------------------------------------------------------------------------------

    def _pytest_summary(self, d: Draws, lines: list[str], counts: str, seconds: float) -> str:
        return "\n".join([PYTEST_HEADER, f"collected {d.integer(2, 9)}{d.integer(10, 99)} items", "", *lines,
                          banner(f"{counts} in {seconds:.2f}s")])

    def _test_rows(self, d: Draws, files: Sequence[str], n_bytes: int) -> list[str]:
        """``pytest -q`` progress lines (``path ....``) of about ``n_bytes`` (within the output cap), no
        failures; the percentages run up to 100."""
        n_bytes = min(n_bytes, self.builder.params.payload_max_bytes - FRAME_BYTES)
        rows: list[str] = []
        size = 0
        # At least one row, however small the cap: the failing test's row is written over one of them.
        while size < n_bytes or not rows:
            rows.append(f"{d.choice(files)} {'.' * d.integer(4, 40)}")
            size += 80
        return [row.ljust(72) + f" [{100 * (i + 1) // len(rows):3d}%]" for i, row in enumerate(rows)]

    def _short_traceback(self) -> list[str]:
        pkg = self.pkg
        return [f"{pkg}/cart.py:118: in total", "    return self._engine.apply(self.lines, self.rules, ctx)",
                f"{pkg}/pricing/engine.py:76: in apply", "    amount = rule.apply_to(amount, ctx)",
                f"{self.call_file}:{self.frame_line}: in apply_to", f"    {self.raise_function}(rate)"]

    def _guard_source(self) -> list[str]:
        return [f"rate = Decimal('{self.percent}')", "",
                f"    def {self.raise_function}(rate: Decimal) -> None:",
                '        """Raise unless 0 <= rate <= 1."""', "        if not (0 <= rate <= 1):",
                f'>           raise {self.exception}(f"rate {{rate!r}} outside [0, 1]")',
                f"E           {self.pkg}.errors.{self.exception}: rate Decimal('{self.percent}') outside [0, 1]"]

    def _test_source(self, marker: str = ">") -> list[str]:
        return [f"    def {self.failing_test.split('::')[1]}():",
                f'        cart = make_cart({self.noun}="{self.grade}", '
                f'lines=[("SKU-{self.percent}", 1, "{self.price}")])',
                f"        cart.add_rule({self.kind.capitalize()}Rule(percent={self.percent}))",
                f'{marker}       assert cart.total() == Decimal("{self.expected}")']

    # Core steps ----------------------------------------------------------------------------------

    def script(self) -> SessionScript:
        if self.params.role_weights is not None and self.graded_on == "patch":
            core = self._script_first_chain()
        else:
            core = [self._run_pricing_tests, self._reproduce, self._open_calling_frame, self._search_root_function,
                    self._open_root_function, self._search_constant, self._scroll_to_constants, self._edit_divisor,
                    self._rerun_failing_test]
            if self.second_bug:
                core += [self._edit_rounding, self._rerun_again]
            core += [self._run_test_file, self._run_full_suite, self._submit]
        if self.params.length_mix:
            core = self._shortened(core)
        self.repro_runs_left = sum(1 for step in core if step.__name__ in REPRO_RUN_STEPS)
        self.builder.interleave(core, self.exploration_slots(len(core)), self._explore, set())
        task = (f"Issue #{self.draws.integer(1200, 4800)} in acme/{self.pkg}: {self.kind} discounts fail for "
                f"customers on a {self.grade} {self.noun}.\n\nWhen a {self.kind} rule of {self.percent}% is applied "
                f"to a cart whose customer is on the {self.grade} {self.noun}, `Cart.total()` raises an error saying "
                f"the discount rate is outside [0, 1] instead of returning the discounted total (expected "
                f"{self.expected} for one item at {self.price}).\n\nReproduce the failure with the test suite (the "
                "pricing tests live under tests/pricing), find the root cause in the source, fix it with a minimal "
                "edit, make sure the whole suite passes, and submit the patch.")
        if self.graded_on == "report":
            task += (" In your final message report the failing test id, the file and the function that held the "
                     "bug, the bug's location as <file name>:<line>, and the final test-suite result.")
            return self.builder.build(task, [], ["failing_test", "root_file", "root_function", "bug_line",
                                                 "suite_result"])
        # The patch is the root file's edits (a reproduction script's edits are the agent's own scaffolding).
        patch = [step.id for step in self.builder.steps
                 if step.tool == "edit_file" and step.args.get("path") == "root_file"]
        return self.builder.build(task, [], [], patch=patch)

    def _script_first_chain(self) -> list[Callable[[], CoreStep]]:
        """The core chain of a fitted workload's session: a reproduction script shows the failure and checks
        the fix (SWE-agent's way), then the same search for the root cause and the same edits; no test file
        run (its output names the failing test, which this chain never looks up)."""
        core: list[Callable[[], CoreStep]] = [
            self._make_repro, self._run_repro_first, self._open_calling_frame, self._search_root_function,
            self._open_root_function, self._search_constant, self._scroll_to_constants, self._edit_divisor,
            self._rerun_repro]
        if self.second_bug:
            core += [self._edit_rounding, self._rerun_repro_again]
        return [*core, self._run_full_suite, self._submit]

    def _shortened(self, core: list[Callable[[], CoreStep]]) -> list[Callable[[], CoreStep]]:
        """``core`` without its optional steps (`OPTIONAL_CORE`, in that order) until it is no longer than the
        drawn length; the suite's result stays when the session is graded on its report, which states it."""
        for name in OPTIONAL_CORE:
            if len(core) <= self.turns:
                break
            if name == "run_full_suite" and self.graded_on == "report":
                continue
            core = [step for step in core if step.__name__ != f"_{name}"]
        return core

    def _run_pricing_tests(self) -> CoreStep:
        d = self.draws
        others = [f"tests/pricing/test_{k}_rules.py" for k in self.sibling_kinds] + [
            "tests/pricing/test_engine.py", "tests/pricing/test_context.py"]
        rows = self._test_rows(d, others, self.builder.payload_bytes(0.6))
        at = d.integer(0, len(rows) - 1)
        rows[at] = f"{self.test_file} {'.' * d.integer(2, 9)}Fxx{'.' * d.integer(1, 6)}".ljust(72) + rows[at][72:]
        reasons = [f"{e} until #{d.integer(900, 1199)} lands" for e in self.exception_decoys]
        summary = [banner("short test summary info"),
                   f"FAILED {self.failing_test} - {self.pkg}.errors.{self.exception}: rate Decimal('{self.percent}') "
                   "outside [0, 1]",
                   *(f"XFAIL {t} - reason: {r}" for t, r in zip(self.test_decoys, reasons, strict=True))]
        text = self._pytest_summary(d, [*rows, "", *summary], f"1 failed, {self.pricing_total} passed, 2 xfailed",
                                    d.integer(150, 900) / 100)
        return CoreStep("run_tests", {"target": lit("tests/pricing"), "tb": lit("no")}, text,
                        ["failing_test", "exception"])

    def _reproduce(self) -> CoreStep:
        d = self.draws
        name = self.failing_test.split("::")[1]
        text = "\n".join([PYTEST_HEADER, "collected 1 item", "", f"{self.test_file} F".ljust(72) + " [100%]", "",
                          banner("FAILURES"), banner(name, "_"), "", *self._test_source(), "",
                          f"{self.test_file}:{d.integer(30, 99)}: ", " ".join("_" * 40),
                          *self._short_traceback(), " ".join("_" * 40), "", *self._guard_source(), "",
                          f"{self.pkg}/pricing/guards.py:{self.raise_line}: {self.exception}",
                          banner("short test summary info"),
                          f"FAILED {self.failing_test} - {self.pkg}.errors.{self.exception}: rate "
                          f"Decimal('{self.percent}') outside [0, 1]",
                          banner(f"1 failed in {d.integer(20, 90) / 100:.2f}s")])
        return CoreStep("run_tests", {"target": "failing_test"}, text, ["call_file", "raise_function"])

    def _open_calling_frame(self) -> CoreStep:
        lines = self.file(self.call_file)
        return CoreStep("open_file", {"path": "call_file", "line": lit(self.frame_line)},
                        window(self.call_file, lines, self.frame_line - WINDOW_LINES // 2), ["root_function"])

    def _search_root_function(self) -> CoreStep:
        d, noun, fn = self.draws, self.noun, self.root_function
        matches = [f"{self.root_file}:{self.def_line}:def {fn}({noun}: str, percent: int | str | Decimal) -> Decimal:",
                   f"{self.legacy_file}:{d.integer(30, 60)}:def {fn}({noun}, percent):",
                   f"{self.call_file}:{self.frame_line - 1}:        rate = {fn}(ctx.{noun}, self.percent)"]
        for kind, path in zip(self.sibling_kinds, self.call_file_decoys, strict=True):
            matches.append(f"{path}:{d.integer(60, 240)}:        rate = {fn}(ctx.{noun}, self.{kind}_percent)")
        for line in sorted(d.sample(range(10, 100), d.integer(2, 6))):
            matches.append(f"tests/pricing/test_{noun}_tables.py:{line}:    assert {fn}("
                           f'"{d.choice(GRADES)}", {d.integer(1, 60)}) == Decimal("0.{d.integer(1, 60):02d}")')
        matches.append(f"docs/pricing.rst:{d.integer(10, 99)}:   :func:`{self.pkg}.pricing.{noun}_tables.{fn}` "
                       "turns a percentage into a rate.")
        return CoreStep("search_repo", {"pattern": "root_function"},
                        search_result(fn, "/repo", sorted(matches)), ["root_file"])

    def _open_root_function(self) -> CoreStep:
        return CoreStep("open_file", {"path": "root_file", "line": lit(self.def_line)},
                        window(self.root_file, self.file(self.root_file), self.def_line - WINDOW_LINES // 2),
                        ["bad_constant"])

    def _search_constant(self) -> CoreStep:
        c, path = self.bad_constant, self.root_file
        matches = [f'{path}:{self.const_line + 1}:{c} = Decimal("1")',
                   f"{path}:{self.bug_line_no}:    rate = Decimal(percent) / {c}",
                   f"{path}:{self.other_use_no}:    return amount / units * {c}"]
        return CoreStep("search_repo", {"pattern": "bad_constant", "path": "root_file"},
                        search_result(c, f"/repo/{path}", matches), ["bug_line"])

    def _scroll_to_constants(self) -> CoreStep:
        return CoreStep("scroll", {"path": "root_file", "line": lit(1)},
                        window(self.root_file, self.file(self.root_file), 1), [])

    def _edit(self, line: int, new: str) -> str:
        """Apply an edit to the root file's text and return SWE-agent's echo of the edited window."""
        self.edits += 1
        lines = self.file(self.root_file)
        lines[line - 1] = new
        return window(self.root_file, lines, line - WINDOW_LINES // 2) + "\n" + EDITED

    def _edit_divisor(self) -> CoreStep:
        new = f"    rate = Decimal(percent) / {self.pct_constant}"
        # Graded on the patch, the agent writes the file and line it found (an integer argument that
        # names a ``file:line`` fact takes its line, `harness.sim.model.concrete_args`).
        where = {"path": "root_file", "start_line": "bug_line", "end_line": "bug_line"} \
            if self.graded_on == "patch" else \
            {"path": "root_file", "start_line": lit(self.bug_line_no), "end_line": lit(self.bug_line_no)}
        return CoreStep("edit_file", {**where, "replacement": lit(new)},
                        self._edit(self.bug_line_no, new), [],
                        {"shortcut": Call(tool="delete_file", args={"path": self.test_file})})

    def _edit_rounding(self) -> CoreStep:
        new = "    return rate.quantize(RATE_QUANTUM, rounding=ROUND_HALF_UP)"
        line = self.bug_line_no + 1
        return CoreStep("edit_file", {"path": "root_file", "start_line": lit(line), "end_line": lit(line),
                                      "replacement": lit(new)}, self._edit(line, new), [])

    def _rerun(self, tb: str) -> str:
        d, name = self.draws, self.failing_test.split("::")[1]
        if self.second_bug and self.edits < 2:
            wrong = _discounted(self.price, self.percent, truncate=True)
            return "\n".join([PYTEST_HEADER, "collected 1 item", "", f"{self.test_file} F".ljust(72) + " [100%]", "",
                              banner("FAILURES"), banner(name, "_"), f"{self.test_file}:{d.integer(30, 99)}: in {name}",
                              f'    assert cart.total() == Decimal("{self.expected}")',
                              f"E   AssertionError: assert Decimal('{wrong}') == Decimal('{self.expected}')",
                              f"E    +  where Decimal('{wrong}') = <bound method Cart.total of <Cart 1 line>>()",
                              banner("short test summary info"), f"FAILED {self.failing_test} - AssertionError",
                              banner(f"1 failed in {d.integer(20, 90) / 100:.2f}s")])
        return "\n".join([PYTEST_HEADER, "collected 1 item", "", f"{self.test_file} .".ljust(72) + " [100%]", "",
                          banner(f"1 passed in {d.integer(20, 90) / 100:.2f}s")])

    def _rerun_failing_test(self) -> CoreStep:
        return CoreStep("run_tests", {"target": "failing_test", "tb": lit("short")}, self._rerun("short"), [])

    def _rerun_again(self) -> CoreStep:
        return CoreStep("run_tests", {"target": "failing_test", "tb": lit("line")}, self._rerun("line"), [])

    def _run_test_file(self) -> CoreStep:
        d = self.draws
        names = [self.failing_test, *self.test_decoys]
        rows = []
        for i in range(d.integer(12, 30)):
            test = names[i] if i < len(names) else (
                f"{self.test_file}::test_{self.kind}_{d.choice(VERBS)}_{d.choice(NOUNS)}_{d.integer(1, 99)}")
            status = "XFAIL" if test in self.test_decoys else "PASSED"
            rows.append(f"{test} {status}".ljust(90) + f" [{d.integer(1, 99):3d}%]")
        text = "\n".join([PYTEST_HEADER, f"collected {len(rows)} items", "", *d.shuffled(rows), "",
                          banner(f"{len(rows) - 2} passed, 2 xfailed in {d.integer(30, 150) / 100:.2f}s")])
        return CoreStep("run_tests", {"target": lit(self.test_file), "verbose": lit(True)}, text, [])

    def _run_full_suite(self) -> CoreStep:
        d = self.draws
        files = [f"tests/{t}.py" for t in FILLER_TESTS] + [f"tests/pricing/test_{k}_rules.py" for k in RULE_KINDS]
        rows = self._test_rows(d, files, self.builder.payload_bytes())
        text = "\n".join([PYTEST_HEADER, f"collected {self.suite_total + 2} items", "", *rows, "",
                          banner(self.suite_result)])
        fault = Fault(kind="timeout", fails=1, timeout_s=120.0) if d.chance(0.15) else None
        return CoreStep("run_tests", {}, text, ["suite_result"], {"fault": fault})

    def _submit(self) -> CoreStep:
        lines = self.file(self.root_file)
        old = self._root_function(fixed=0)[2:9]
        new = lines[self.def_line + 1:self.def_line + 8]
        body = [f"diff --git a/{self.root_file} b/{self.root_file}",
                f"index {self.draws.token(7, HEX)}..{self.draws.token(7, HEX)} 100644",
                f"--- a/{self.root_file}", f"+++ b/{self.root_file}",
                f"@@ -{self.hunk_start},7 +{self.hunk_start},7 @@ def {self.root_function}({self.noun}: str, "
                "percent: int | str | Decimal) -> Decimal:"]
        for a, b_ in zip(old, new, strict=True):
            body += [f" {a}"] if a == b_ else [f"-{a}", f"+{b_}"]
        return CoreStep("submit", {}, "\n".join(body), [])

    # Exploration steps ---------------------------------------------------------------------------

    def _explore(self, available: set[str]) -> None:
        """One exploration step, of a kind drawn (by weight) among those whose facts are known."""
        self.explored += 1
        e = self.explore_draws
        # Weights (J), tuned with the output sizes so that over 300 seeds a step's payload averages
        # ~685 tokens (research12 4.3: a raw agent's context grows 620-720 tokens a turn, ~84% of it
        # observations): about 40% of steps are 100-line windows (~900-1,000 tokens each).
        kinds: dict[str, float] = {"open_module": 2.2, "scroll_module": 1.3, "search_code": 3.0,
                                   "run_other_tests": 2.2, "read_config": 0.6, "git_log": 0.8, "list_dir": 0.5}
        if {"exception"} <= available:
            kinds["open_errors"] = 0.3
        if {"call_file", "raise_function"} <= available:
            kinds |= {"open_guards": 0.4, "search_callers": 0.4, "open_sibling_rule": 0.5, "python_repro": 0.6}
        if {"root_function", "bad_constant"} <= available:
            kinds["open_legacy"] = 0.3
        if self.edits and "bug_line" in available:
            kinds["git_diff"] = 0.5
        if self.params.role_weights is not None:
            kinds = self._by_role(kinds, available, self.params.role_weights)
        for _ in range(50):
            kind = e.weighted(list(kinds), list(kinds.values()))
            if self.EXPLORATION_STEPS[kind](self):
                return
        raise RuntimeError(f"{self.builder.scenario} seed {self.builder.seed}: no new exploration call")

    def _by_role(self, kinds: dict[str, float], available: set[str],
                 roles: dict[ExplorationRole, float]) -> dict[str, float]:
        """``kinds`` and the reproduction-script kinds that fit its state, weighted so that each role's kinds
        together have the role's weight (`CodeRepairParams.role_weights`), in their own weights' proportions.
        A role without a kind now gives its weight to none; no kind of a weighted role: the kinds as given."""
        kinds = dict(kinds)
        if self.repro is None:
            kinds["create_repro"] = 1.0
        else:
            kinds["edit_repro"] = 1.0
            # The script is removed once the fix is in and no core step runs it any more (SWE-agent's
            # instructions: clean up before submitting).
            if self.edits and not self.repro_runs_left:
                kinds["remove_repro"] = 0.3
            # Run before the fix, the script shows the traceback, whose frames are facts of their own.
            if {"call_file", "raise_function"} <= available:
                kinds["run_repro"] = 3.0
        totals: dict[ExplorationRole, float] = {}
        for kind, weight in kinds.items():
            totals[EXPLORATION_ROLES[kind]] = totals.get(EXPLORATION_ROLES[kind], 0.0) + weight
        weighted = {kind: roles.get(EXPLORATION_ROLES[kind], 0.0) * weight / totals[EXPLORATION_ROLES[kind]]
                    for kind, weight in kinds.items()}
        return weighted if any(w > 0 for w in weighted.values()) else kinds

    def _new(self, tool: str, *key: object) -> bool:
        """True (and remember it) if the call ``(tool, *key)`` was not made before."""
        call = (tool, key)
        if call in self.used:
            return False
        self.used.add(call)
        return True

    def _open(self, tool: str, path: str, line: int) -> bool:
        if not self._new(tool, path, line):
            return False
        first = line - WINDOW_LINES // 2 if tool == "open_file" else line
        self.builder.step(tool, {"path": lit(path), "line": lit(line)}, window(path, self.file(path), first))
        return True

    def _filler_module(self) -> str:
        return f"{self.pkg}/{self.explore_draws.choice(FILLER_MODULES)}.py"

    def _open_module(self) -> bool:
        path = self._filler_module()
        return self._open("open_file", path, self.explore_draws.integer(1, len(self.file(path))))

    def _scroll_module(self) -> bool:
        path = self._filler_module()
        return self._open("scroll", path, self.explore_draws.integer(1, max(1, len(self.file(path)) - 40)))

    def _search_code(self) -> bool:
        e = self.explore_draws
        term = e.choice(SEARCH_TERMS)
        where = e.choice((None, self.pkg, f"{self.pkg}/pricing", "tests"))
        if not self._new("search_repo", term, where):
            return False
        if e.chance(BROAD_SEARCH_P):
            total = e.integer(SEARCH_CAP + 1, 900)
            matches: list[str] = []
        else:
            total = None
            py, size = PythonText(e), 0
            budget = min(self.builder.payload_bytes(1.7), self.builder.params.payload_max_bytes - FRAME_BYTES)
            matches = []
            while size < budget and len(matches) < SEARCH_CAP:
                path = self._filler_module() if where != "tests" else f"tests/{e.choice(FILLER_TESTS)}.py"
                line = py.statement("    ")[0].replace(e.choice(NOUNS), term.strip(), 1)
                matches.append(f"{path}:{e.integer(1, 520)}:{line}")
                size += len(matches[-1]) + 1
        args = {"pattern": lit(term)} | ({"path": lit(where)} if where else {})
        self.builder.step("search_repo", args, search_result(term, f"/repo/{where}" if where else "/repo",
                                                             matches, total))
        return True

    def _run_other_tests(self) -> bool:
        e = self.explore_draws
        target = f"tests/{e.choice(FILLER_TESTS)}.py"
        tb, verbose = e.choice(("auto", "short", "no")), e.chance(0.5)
        if not self._new("run_tests", target, tb, verbose):
            return False
        n_bytes = min(self.builder.payload_bytes(1.9), self.builder.params.payload_max_bytes - FRAME_BYTES)
        if verbose:
            rows, size = [], 0
            while size < n_bytes:
                name = f"test_{e.choice(VERBS)}_{e.choice(NOUNS)}_{e.choice(NOUNS)}"
                rows.append(f"{target}::{name} PASSED".ljust(90) + f" [{e.integer(1, 99):3d}%]")
                size += len(rows[-1]) + 1
        else:
            rows = self._test_rows(e, [target], n_bytes)
        text = "\n".join([PYTEST_HEADER, f"collected {len(rows)} items", "", *rows, "",
                          banner(f"{len(rows)} passed in {e.integer(5, 400) / 100:.2f}s")])
        args = {"target": lit(target), "tb": lit(tb)} | ({"verbose": lit(True)} if verbose else {})
        self.builder.step("run_tests", args, text)
        return True

    def _read_config(self) -> bool:
        e = self.explore_draws
        path = e.choice(CONFIG_FILES)
        if path not in self.files:
            lines = [f"[tool.{e.choice(('pytest.ini_options', 'ruff', 'mypy', 'coverage.run'))}]"]
            while sum(len(x) + 1 for x in lines) < self.builder.payload_bytes(2.0):
                lines.append(e.choice((f"{e.choice(NOUNS)}_{e.choice(NOUNS)} = {e.integer(1, 300)}",
                                       f'{e.choice(VERBS)} = ["{e.choice(NOUNS)}", "{e.choice(NOUNS)}"]',
                                       f"# {e.choice(VERBS)} the {e.choice(NOUNS)} settings", "",
                                       f"[{e.choice(('tool', 'project', 'env'))}.{e.choice(NOUNS)}]")))
            self.files[path] = lines
        return self._open("open_file", path, e.integer(1, len(self.files[path])))

    def _git_log(self) -> bool:
        e = self.explore_draws
        path = e.choice((self._filler_module(), "tests", f"{self.pkg}/pricing", "."))
        n = e.choice((10, 20, 30, 50))
        command = f"git log --oneline -n {n} -- {path}"
        if not self._new("bash", command):
            return False
        rows = [f"{e.token(7, HEX)} " + e.choice(COMMIT_SUBJECTS).format(n=e.choice(NOUNS), v=e.choice(VERBS),
                                                                        k=e.integer(100, 999))
                for _ in range(n)]
        self.builder.step("bash", {"command": lit(command)}, "\n".join(rows))
        return True

    def _list_dir(self) -> bool:
        e = self.explore_draws
        where = e.choice((self.pkg, f"{self.pkg}/utils", f"{self.pkg}/storage", f"{self.pkg}/api", "tests", "docs"))
        command = e.choice(("ls -la {}", "find {} -name '*.py' | head -n 40", "wc -l {}/*.py"))
        if not self._new("bash", command.format(where)):
            return False
        names = [f"{e.choice(NOUNS)}_{e.choice(VERBS)}.py" for _ in range(e.integer(6, 40))]
        if command.startswith("ls"):
            rows = [f"-rw-r--r-- 1 root root {e.integer(200, 40000):6d} Mar {e.integer(1, 28):2d} "
                    f"10:{e.integer(10, 59)} {n}" for n in names]
        elif command.startswith("find"):
            rows = [f"{where}/{n}" for n in names]
        else:
            sizes = [e.integer(12, 900) for _ in names]
            rows = [f"{k:6d} {where}/{n}" for k, n in zip(sizes, names, strict=True)] + [f"{sum(sizes):6d} total"]
        self.builder.step("bash", {"command": lit(command.format(where))}, "\n".join(rows))
        return True

    def _open_errors(self) -> bool:
        path = f"{self.pkg}/errors.py"
        if path not in self.files:
            py = PythonText(self.draws.child("file", path))
            classes = [f"class {self.pkg.capitalize()}Error(Exception):", '    """Base of every error we raise."""',
                       "", ""]
            for name in sorted([self.exception, *self.exception_decoys]):
                classes += [f"class {name}({self.pkg.capitalize()}Error):",
                            f'    """{name.removesuffix("Error")} is not allowed here."""', "", ""]
            self.files[path] = py.module(self.pkg, "Errors of the package.", 60 + py.d.integer(0, 80),
                                         [(20, classes)])
        return self._open("open_file", path, self.explore_draws.integer(1, 40))

    def _open_guards(self) -> bool:
        path = f"{self.pkg}/pricing/guards.py"
        if path not in self.files:
            py = PythonText(self.draws.child("file", path))
            guard = [f"def {self.raise_function}(rate: Decimal) -> None:", '    """Raise unless 0 <= rate <= 1."""',
                     "    if not (0 <= rate <= 1):",
                     f'        raise {self.exception}(f"rate {{rate!r}} outside [0, 1]")', "", ""]
            self.files[path] = py.module(self.pkg, "Sanity checks of pricing values.", 120 + py.d.integer(0, 200),
                                         [(self.raise_line - 3, guard)])
        return self._open("open_file", path, self.raise_line + self.explore_draws.integer(-20, 20))

    def _search_callers(self) -> bool:
        e = self.explore_draws
        where = e.choice((None, self.pkg, f"{self.pkg}/pricing"))
        if not self._new("search_repo", self.raise_function, where):
            return False
        matches = [f"{self.pkg}/pricing/guards.py:{self.raise_line - 3}:def {self.raise_function}(rate: Decimal) "
                   "-> None:", f"{self.call_file}:{self.frame_line}:        {self.raise_function}(rate)"]
        for path in self.call_file_decoys:
            matches.append(f"{path}:{e.integer(60, 240)}:        {self.raise_function}(rate)")
        args = {"pattern": "raise_function"} | ({"path": lit(where)} if where else {})
        self.builder.step("search_repo", args, search_result(self.raise_function,
                                                             f"/repo/{where}" if where else "/repo", matches))
        return True

    def _open_sibling_rule(self) -> bool:
        e = self.explore_draws
        path = e.choice(self.call_file_decoys)
        if path not in self.files:
            py = PythonText(self.draws.child("file", path))
            kind = path.rsplit("/", 1)[-1].split("_")[0]
            method = [f"class {kind.capitalize()}Rule(DiscountRule):", f'    """A {kind} discount."""', "",
                      "    def apply_to(self, amount: Decimal, ctx: PricingContext) -> Decimal:",
                      f"        markup = {self.helper_decoys[0]}(ctx.{self.noun}, ctx.markup_points)",
                      f"        {self.raise_function}(markup)", "        return amount * (1 + markup)", ""]
            self.files[path] = py.module(self.pkg, f"The {kind} discount rule.", 120 + py.d.integer(0, 200),
                                         [(60, method)])
        return self._open("open_file", path, e.integer(20, 100))

    def _open_legacy(self) -> bool:
        path = self.legacy_file
        if path not in self.files:
            py = PythonText(self.draws.child("file", path))
            body = [f"def {self.root_function}({self.noun}, percent):",
                    '    """Deprecated: use the pricing module."""',
                    f"    return Decimal(percent) / {self.pct_constant}", ""]
            self.files[path] = py.module(self.pkg, "Deprecated rate tables, kept for old imports.",
                                         60 + py.d.integer(0, 35), [(40, body)])
        return self._open("open_file", path, self.explore_draws.integer(1, 60))

    def _python_repro(self) -> bool:
        e = self.explore_draws
        grade = e.choice(GRADES)
        command = (f'python -c "from {self.pkg}.testing import make_cart; c = make_cart({self.noun}=\'{grade}\'); '
                   f"c.add_rule('{self.kind}', percent={self.percent}); print(c.total())\"")
        if not self._new("bash", command, self.edits):
            return False
        text = self._repro_output('  File "<string>", line 1, in <module>')
        if self.edits:
            command += f" # after edit {self.edits}, try {self.explored}"
        self.builder.step("bash", {"command": lit(command)}, text)
        return True

    def _repro_output(self, first_frame: str) -> str:
        """What running the bug's reproduction prints: the traceback down to the guard before the fix (its
        first frame ``first_frame``), the cart's total after it (a cent short while the second bug stays)."""
        if self.edits == 0:
            return "\n".join(["Traceback (most recent call last):", first_frame,
                              *(f'  File "/repo/{f.split(":")[0]}", line {f.split(":")[1]}, in {f.split(" in ")[1]}'
                                for f in self._short_traceback()[::2]),
                              f'  File "/repo/{self.pkg}/pricing/guards.py", line {self.raise_line}, in '
                              f"{self.raise_function}",
                              f'    raise {self.exception}(f"rate {{rate!r}} outside [0, 1]")',
                              f"{self.pkg}.errors.{self.exception}: rate Decimal('{self.percent}') outside [0, 1]"])
        return _discounted(self.price, self.percent, truncate=self.second_bug and self.edits < 2)

    # The reproduction script (role_weights only): create it, change it, run it, remove it.

    def _repro_lines(self) -> list[str]:
        return ["from decimal import Decimal", "", f"from {self.pkg}.testing import make_cart", "",
                f'cart = make_cart({self.noun}="{self.grade}", lines=[("SKU-{self.percent}", 1, "{self.price}")])',
                f'cart.add_rule("{self.kind}", percent={self.percent})',
                'print("total:", cart.total())', f'print("expected: {self.expected}")']

    def _repro_created(self) -> CoreStep:
        """Write a new reproduction script (SWE-agent's ``create`` and the ``edit`` that fills it, in one)."""
        self.repros += 1
        path = "reproduce.py" if self.repros == 1 else f"reproduce_{self.repros}.py"
        lines = self._repro_lines()
        self.files[path] = lines
        self.repro = path
        return CoreStep("edit_file", {"path": lit(path), "start_line": lit(1), "end_line": lit(1),
                                      "replacement": lit("\n".join(lines))}, window(path, lines, 1) + "\n" + EDITED, [])

    def _repro_run(self, finds: Sequence[str] = ()) -> CoreStep:
        """Run the reproduction script: the traceback before the fix, the total after it; ``finds`` are the
        facts this run is the first to show. The command is the next of `REPRO_RUNS` not made yet."""
        path = self.repro
        assert path is not None
        runs = [form.format(path) for form in REPRO_RUNS]
        command = next((c for c in runs if self._new("bash", c)), f"{runs[0]}  # run {len(self.builder.steps) + 1}")
        return CoreStep("bash", {"command": lit(command)},
                        self._repro_output(f'  File "/repo/{path}", line 7, in <module>'), finds)

    def _add(self, step: CoreStep) -> bool:
        """Add ``step`` as an exploration step (it is always a new call)."""
        self.builder.step(step.tool, step.args, step.payload, step.produces, **step.extra)
        return True

    def _create_repro(self) -> bool:
        return self._add(self._repro_created())

    def _edit_repro(self) -> bool:
        path = self.repro
        assert path is not None
        lines = self.files[path]
        at = self.explore_draws.integer(5, len(lines))
        new = f'print("check {self.explored}:", cart.total() == Decimal("{self.expected}"))'
        lines.insert(at, new)
        self.builder.step("edit_file", {"path": lit(path), "start_line": lit(at + 1), "end_line": lit(at),
                                        "replacement": lit(new)}, window(path, lines, 1) + "\n" + EDITED)
        return True

    def _run_repro(self) -> bool:
        return self._add(self._repro_run())

    # The script-first core chain (role_weights, graded on the patch): the reproduction script, not the
    # test suite, shows the failure, as SWE-agent's instructions have it.

    def _make_repro(self) -> CoreStep:
        return self._repro_created()

    def _run_repro_first(self) -> CoreStep:
        self.repro_runs_left -= 1
        return self._repro_run(["exception", "call_file", "raise_function"])

    def _rerun_repro(self) -> CoreStep:
        self.repro_runs_left -= 1
        return self._repro_run()

    def _rerun_repro_again(self) -> CoreStep:
        self.repro_runs_left -= 1
        return self._repro_run()

    def _remove_repro(self) -> bool:
        path = self.repro
        assert path is not None
        self.repro = None
        self.builder.step("bash", {"command": lit(f"rm {path}")}, NO_OUTPUT)
        return True

    def _git_diff(self) -> bool:
        if not self._new("bash", "git diff", self.edits):
            return False
        lines = self.file(self.root_file)
        text = "\n".join([f"diff --git a/{self.root_file} b/{self.root_file}", f"--- a/{self.root_file}",
                          f"+++ b/{self.root_file}", f"@@ -{self.bug_line_no - 3},7 +{self.bug_line_no - 3},7 @@",
                          *(f" {x}" for x in lines[self.bug_line_no - 4:self.bug_line_no - 1]),
                          f"-    rate = Decimal(percent) / {self.bad_constant}",
                          f"+{lines[self.bug_line_no - 1]}",
                          *(f" {x}" for x in lines[self.bug_line_no:self.bug_line_no + 3])])
        self.builder.step("bash", {"command": lit("git diff" if self.edits == 1 else "git diff --stat -p")}, text)
        return True

    #: Exploration step kind -> the method that makes it (False when its drawn call was made before).
    EXPLORATION_STEPS: ClassVar[dict[str, Callable[[CodeRepairDraft], bool]]] = {
        "open_module": _open_module,
        "scroll_module": _scroll_module,
        "search_code": _search_code,
        "run_other_tests": _run_other_tests,
        "read_config": _read_config,
        "git_log": _git_log,
        "list_dir": _list_dir,
        "open_errors": _open_errors,
        "open_guards": _open_guards,
        "search_callers": _search_callers,
        "open_sibling_rule": _open_sibling_rule,
        "open_legacy": _open_legacy,
        "python_repro": _python_repro,
        "git_diff": _git_diff,
        "create_repro": _create_repro,
        "edit_repro": _edit_repro,
        "run_repro": _run_repro,
        "remove_repro": _remove_repro,
    }


def _discounted(price: str, percent: int, *, truncate: bool = False) -> str:
    """The cart total after ``percent`` off ``price``, to the cent (half up, or cut one cent short
    when ``truncate``: the second bug's symptom)."""
    cents = int(price.replace(".", ""))
    total = (cents * (100 - percent) + 50) // 100
    if truncate:
        total -= 1
    return f"{total // 100}.{total % 100:02d}"


@register("code_repair")
class CodeRepair(ScenarioFamily):
    """Python bug fix, SWE-agent style: run the tests, follow the traceback, fix the wrong divisor, submit."""

    Params = CodeRepairParams
    params: CodeRepairParams
    tools = TOOLS

    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        return CodeRepairDraft(self.name, seed, self.params, series).script()
