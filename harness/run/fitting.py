"""Workload fitting: measure real agent transcripts, choose the scenario params that make ctxbench's
generators produce sessions like them, and measure what those params generate, for the side-by-side.

`measure` reads imported sessions (`harness.run.traces`) into `WorkloadMeasures`: per session its length
(tool calls), context growth per call and tokens; pooled, every tool output's size (an empty output is an
output of 0 bytes), the observation share and the tool mix, each call also given a role (`tool_role`:
``read``, ``search``, ``edit``, ``run`` or ``other``, from the tool's name and, for a shell or an editor
tool, its command). A transcript whose agent writes its actions as text (SWE-agent's non-function-calling
modes: a fenced block or a ``<command>`` block ending each assistant message, the observation in the next
user message) is read the same way (`text_action`).

`fit` turns the measures into a `WorkloadFit`: the lognormal of the session lengths and of the payload
sizes (median and sigma, the cap at the largest measured output), the scenario family weights that best
explain the tools and roles, and the generator params that reproduce them, calibrated by generating
scripts. A family with the fitted-workload params (``code_repair``'s ``turns_median``, ``turns_sigma``,
``role_weights``) gets the length distribution and the role mix; any other family one ``turns`` value.
`workload_toml` / `write_workload` write it as a run config that `harness.run.config.load_config` loads
(names from the transcripts, which may hold any character, are written through `toml_string` and
`toml_comment`, and the text is parsed back before it is returned); `generated_measures` replays sessions
of that config under ``unbounded`` with the mock model (as ``ctxbench run`` does) and measures them the same
way; `agreement` puts the two side by side. `synthetic_sessions` and `write_synthetic_traces` make
transcripts from ctxbench's own generators (known truth for tests).
"""

from __future__ import annotations

import functools
import json
import math
import re
import statistics
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import numpy as np
import tomli_w

import scenarios
from harness.core.crn import session_seed
from harness.core.files import write_atomically
from harness.core.messages import Message, ToolResult, ToolUse
from harness.core.switches import Switches
from harness.run.config import RunConfig, config_from_data
from harness.run.plan import allocate
from harness.run.traces import ImportedSession
from harness.sim.kernel import Replay
from harness.sim.profiles import Profile
from scenarios.base import LITERAL_PREFIX, ScenarioParams, SessionScript, Step
from scenarios.mix import DEFAULT_FAMILIES
from strategies import create

__all__ = [
    "AGREEMENT_TOLERANCE",
    "ROLES",
    "Agreement",
    "FitError",
    "LognormalFit",
    "ScriptShape",
    "SessionMeasures",
    "WorkloadFit",
    "WorkloadMeasures",
    "agreement",
    "agreement_cells",
    "agreement_header",
    "agreement_markdown",
    "command_role",
    "comparison_sessions",
    "family_role_shares",
    "family_tool_shares",
    "fit",
    "fit_lognormal",
    "generated_measures",
    "generated_sessions",
    "kolmogorov_p_value",
    "measure",
    "mix_weights",
    "report_inputs",
    "synthetic_sessions",
    "text_action",
    "toml_comment",
    "toml_string",
    "tool_role",
    "workload_config",
    "workload_toml",
    "write_synthetic_traces",
    "write_workload",
]

#: Sessions the written config runs by default: enough for a first comparison in a few minutes.
DEFAULT_RUN_SESSIONS = 200
#: Scripts generated per calibration round (`fit`), at the least: about 35 payloads per script at the
#: default lengths, 1,400 a round, which pins their log-median to a few hundredths.
CALIBRATION_SCRIPTS = 40
#: Payloads a calibration round measures, at the least: short sessions get more scripts (up to
#: `MAX_CALIBRATION_SCRIPTS`), since a round's median moves with the few scripts' composition otherwise.
CALIBRATION_PAYLOADS = 2000
MAX_CALIBRATION_SCRIPTS = 400
#: Calibration rounds: each moves the params by the gap between the measured and the generated shape;
#: the rounds after the first correct what the generator's nonlinear parts (fixed-size windows, the core
#: chain's length, clipping) add.
CALIBRATION_ROUNDS = 4
#: Prefix of the scenario name the calibration scripts are seeded with (`_script_shape`).
CALIBRATION_STREAM = "calibration:"
#: Scripts generated per family to learn which tools it calls and how often (`family_tool_shares`).
PROBE_SCRIPTS = 8
#: Params of those scripts: the default length, and small fixed payloads, since which tools a family calls
#: does not depend on how large their outputs are and small ones generate in a fraction of the time.
PROBE_PARAMS: dict[str, Any] = {"payload_median_bytes": 400, "payload_sigma": 0.0}
#: EM iterations for the mixture weights; the log-likelihood is flat long before this.
EM_ITERATIONS = 500
#: A family whose mixture weight ends below this share is dropped: it would get almost no sessions.
MIN_FAMILY_WEIGHT = 0.01
#: Strategy the comparison sessions are replayed under: the whole history, so what the transcripts
#: show is what the generator made, untouched by any context management.
REPLAY_STRATEGY = "unbounded"
#: The params a family takes to reproduce a length distribution and a role mix (`scenarios.code_repair`).
LENGTH_MIX_PARAMS = ("turns_median", "turns_sigma")
ROLE_PARAM = "role_weights"


class FitError(Exception):
    """Transcripts that cannot be fitted (no tool output at all): one line for the user."""


# Roles -----------------------------------------------------------------------------------------------------

#: What a tool call does, as far as a workload is concerned: reads a file or a view, searches or lists,
#: edits (any change to files or the system), runs a program or tests, or anything else (submit, cd, echo).
ROLES = ("read", "search", "edit", "run", "other")

#: Names whose role the name alone says: SWE-agent's commands, common agent tools, and shell programs (a
#: shell command is classified by its first word, `command_role`). Lower case.
NAMED_ROLES: dict[str, str] = {
    **dict.fromkeys((
        "open", "goto", "scroll_up", "scroll_down", "scroll", "cat", "head", "tail", "less", "more", "view", "read",
        "read_file", "open_file", "view_file", "nl", "bat", "file", "strings", "xxd", "hexdump", "od", "wc",
        "stat", "diff", "readelf", "objdump", "decompile", "disassemble", "jq"), "read"),
    **dict.fromkeys((
        "search_dir", "search_file", "find_file", "grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "fd",
        "locate", "ls", "tree", "glob", "search", "search_repo", "list_dir", "list_files", "list_directory"),
        "search"),
    **dict.fromkeys((
        "edit", "create", "insert", "str_replace", "write", "write_file", "edit_file", "delete_file", "apply_patch",
        "patch", "rm", "rmdir", "mv", "cp", "touch", "mkdir", "chmod", "ln", "set_cursors", "append"), "edit"),
    **dict.fromkeys((
        "python", "python3", "pytest", "pip", "pip3", "uv", "poetry", "make", "cmake", "node", "npm", "npx",
        "yarn", "go", "cargo", "rustc", "gcc", "g++", "clang", "java", "javac", "mvn", "gradle", "ruby", "perl",
        "php", "tox", "nox", "run_tests", "gdb", "sh"), "run"),
    **dict.fromkeys((
        "submit", "cd", "pushd", "popd", "echo", "printf", "pwd", "export", "exit", "true", "sleep", "clear",
        "history", "which", "whoami", "think", "finish", "task_complete", "source", "set", "unset"), "other"),
}
#: Tools that take a shell command: classified by the command (`command_role`).
SHELL_TOOLS = frozenset({"bash", "shell", "terminal", "execute_bash", "run_command", "run_shell_command", "exec",
                         "execute", "execute_command", "command", "cmd", "run_terminal_cmd", "bash_tool",
                         "container.exec"})
#: The argument a shell tool's command is in, the first present.
COMMAND_ARGS = ("command", "cmd", "script", "code", "input")
#: File-editor tools with a sub-command (SWE-agent's and Anthropic's ``str_replace_editor``): ``view`` reads,
#: every other sub-command edits.
EDITOR_TOOLS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor", "edit_tool"})
#: Git sub-commands by role (the rest: other).
GIT_ROLES: dict[str, str] = {
    **dict.fromkeys(("diff", "log", "show", "status", "blame"), "read"),
    **dict.fromkeys(("grep", "ls-files"), "search"),
    **dict.fromkeys(("apply", "checkout", "commit", "add", "reset", "stash", "restore", "rm", "mv", "am",
                     "cherry-pick", "revert", "merge", "rebase", "switch"), "edit"),
}
#: Words of a tool name (split at ``_``, ``-``, ``.`` and case changes) that say its role, checked in this
#: order (a tool that changes something is an edit whatever else it says).
NAME_WORD_ROLES: tuple[tuple[str, frozenset[str]], ...] = (
    ("edit", frozenset({"edit", "write", "create", "insert", "replace", "delete", "remove", "update", "set",
                        "patch", "apply", "rollback", "undo", "restart", "scale", "move", "rename", "modify",
                        "put", "post", "append", "save", "kill", "cordon", "drain"})),
    ("run", frozenset({"run", "exec", "execute", "test", "tests", "python", "pytest", "shell", "bash", "terminal",
                       "eval", "build", "compile", "install", "invoke"})),
    ("search", frozenset({"search", "find", "grep", "glob", "query", "lookup", "list", "ls", "locate", "scan"})),
    ("read", frozenset({"read", "open", "view", "cat", "get", "show", "describe", "logs", "log", "fetch", "scroll",
                        "goto", "inspect", "explain", "status", "diff", "head", "tail", "print", "top", "watch",
                        "metrics", "trace", "events", "history", "check", "look", "browse", "download"})),
)
#: Words before the program a shell command runs (``sudo``, ``timeout 30``, ``env``), skipped.
_WRAPPERS = frozenset({"sudo", "time", "nohup", "env", "command", "exec", "nice", "stdbuf", "xargs"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _program(words: list[str]) -> tuple[str, list[str]]:
    """The program a command's words run, and its arguments: wrappers and ``VAR=value`` skipped."""
    i = 0
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word) or word in _WRAPPERS:
            i += 1
        elif word == "timeout":  # ``timeout 30 cmd``: its duration too
            i += 2
        else:
            return word, words[i + 1:]
    return "", []


def _command_words(command: str) -> list[str]:
    """The words of the first command of ``command`` that is not navigation (``cd x && pytest`` runs pytest):
    commands are split at ``&&``, ``||`` and ``;`` (a pipeline's first command is the one that counts)."""
    segments = [s.split() for s in re.split(r"&&|\|\||;|\n", command)]
    segments = [s for s in segments if s]
    for words in segments:
        program, _ = _program(words)
        if program not in ("cd", "pushd", "popd", "export", "source", ".", "set"):
            return words
    return segments[0] if segments else []


def command_role(command: str) -> str:
    """The role of a shell command (or a SWE-agent text action) by the program its first word names:
    `NAMED_ROLES`, git by its sub-command, ``sed`` an edit with ``-i`` and a read without; a script path
    (``./x``, ``x.py``, ``x.sh``) or any other program runs something."""
    program, args = _program(_command_words(command))
    name = program.rsplit("/", 1)[-1].lower()
    if not name:
        return "other"
    if name == "git":
        sub = next((a for a in args if not a.startswith("-")), "")
        return GIT_ROLES.get(sub, "other")
    if name == "sed":
        return "edit" if any(a.startswith("-i") or a == "--in-place" for a in args) else "read"
    if name in NAMED_ROLES:
        return NAMED_ROLES[name]
    return "run"


def tool_role(name: str, arguments: Mapping[str, Any]) -> str:
    """The role (`ROLES`) of a call of tool ``name`` with ``arguments``: a shell tool by its command
    (`command_role`), a file editor by its sub-command, any other tool by its name (`NAMED_ROLES`, then the
    words of the name, `NAME_WORD_ROLES`); ``other`` when nothing says."""
    key = name.lower()
    base = re.split(r"__|\.", key)[-1] if key not in SHELL_TOOLS else key
    if key in SHELL_TOOLS or base in SHELL_TOOLS:
        command = next((arguments[a] for a in COMMAND_ARGS if isinstance(arguments.get(a), str)), None)
        return command_role(command) if command is not None else "run"
    if base in EDITOR_TOOLS:
        sub = arguments.get("command")
        return "read" if sub == "view" else "edit"
    if base in NAMED_ROLES:
        return NAMED_ROLES[base]
    words = {w.lower() for w in _NAME_WORDS.findall(name)}
    for role, role_words in NAME_WORD_ROLES:
        if words & role_words:
            return role
    return "other"


# Text actions ----------------------------------------------------------------------------------------------

#: A session is read as one of text actions when it holds no tool call and at least this share of its
#: assistant messages end with a command block (a chat whose answers happen to end with code rarely does).
TEXT_ACTION_SHARE = 0.5


def text_action(text: str) -> str | None:
    """The command of an assistant message that ends with an action block: the text of the last fenced
    block (its info string dropped) or of the last ``<command>...</command>``, as SWE-agent's parsers take it
    (SWE-agent/SWE-agent, ``sweagent/tools/parsing.py``: ``ThoughtActionParser``, ``XMLThoughtActionParser``),
    but only when the block ends the message (SWE-agent's messages are a thought, then the command), which
    keeps a chat answer with code in the middle from reading as an action; None otherwise."""
    stripped = text.rstrip()
    if stripped.endswith("</command>"):
        start = stripped.rfind("<command>")
        body = stripped[start + len("<command>"):-len("</command>")] if start >= 0 else None
    elif stripped.endswith("```") and len(stripped) > 3:
        start = stripped.rfind("```", 0, len(stripped) - 3)
        if start < 0:
            return None
        block = stripped[start + 3:-3]
        info, newline, rest = block.partition("\n")
        body = rest if newline else info
    else:
        return None
    command = body.strip() if body is not None else ""
    return command or None


# Measuring ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionMeasures:
    """What one session shows."""

    session_id: str
    #: Model calls: assistant messages.
    model_calls: int
    #: Tool calls made (ToolUse blocks, or text actions): the session's length.
    tool_calls: int
    #: Distinct successful calls (tool and input): the session without failed attempts and re-fetches.
    distinct_calls: int
    #: Slope of the prompt's tokens (the messages before each model call) over the model calls, by
    #: least squares: the context tokens each call adds; nan with fewer than two model calls.
    growth_per_turn: float
    #: Tokens of every model call, input (the messages before it; the system prompt and tool schemas, which
    #: a generated session's transcript does not hold, left out on both sides) plus output (its message).
    total_tokens: int = 0
    #: Tool calls read from the assistant's text (`text_action`); 0 for a session of tool-call blocks.
    text_actions: int = 0


@dataclass(frozen=True, slots=True)
class WorkloadMeasures:
    """What a set of sessions shows, pooled (see `measure`)."""

    sessions: tuple[SessionMeasures, ...]
    #: UTF-8 bytes of every tool output (an empty one is 0), in session and call order.
    payload_bytes: tuple[int, ...]
    #: (tool name, role, calls), sorted.
    call_counts: tuple[tuple[str, str, int], ...]
    tool_results: int
    error_results: int
    #: Tokens of the tool outputs, and of every message (each counted once; the system prompt left out).
    result_tokens: int
    message_tokens: int
    #: The bytes of the outputs that are not error results (a scenario's payloads: errors are the runtime's
    #: faults, added on top); every output in a format without an error status.
    success_bytes: tuple[int, ...] = ()

    @property
    def tool_counts(self) -> tuple[tuple[str, int], ...]:
        """Tool name -> calls, sorted by name."""
        counts: Counter[str] = Counter()
        for tool, _, n in self.call_counts:
            counts[tool] += n
        return tuple(sorted(counts.items()))

    @property
    def role_counts(self) -> dict[str, int]:
        """Role -> calls, every role of `ROLES` (0 when none)."""
        counts = dict.fromkeys(ROLES, 0)
        for _, role, n in self.call_counts:
            counts[role] += n
        return counts

    @property
    def tool_mix(self) -> dict[str, float]:
        """Tool name -> its share of the tool calls."""
        total = sum(n for _, n in self.tool_counts)
        return {name: n / total for name, n in self.tool_counts} if total else {}

    @property
    def role_mix(self) -> dict[str, float]:
        """Role -> its share of the tool calls (every role of `ROLES`); empty without calls."""
        counts = self.role_counts
        total = sum(counts.values())
        return {role: n / total for role, n in counts.items()} if total else {}

    @property
    def error_share(self) -> float:
        """Share of tool results that are errors."""
        return self.error_results / self.tool_results if self.tool_results else math.nan

    @property
    def empty_share(self) -> float:
        """Share of tool outputs that are empty."""
        return sum(1 for b in self.payload_bytes if b == 0) / len(self.payload_bytes) if self.payload_bytes \
            else math.nan

    @property
    def observation_share(self) -> float:
        """Tokens of tool outputs over the tokens of every message: the share of the input the observations
        are (the share of the last call's context, and of what the context grew by)."""
        return self.result_tokens / self.message_tokens if self.message_tokens else math.nan

    @property
    def session_lengths(self) -> list[int]:
        """Tool calls per session."""
        return [s.tool_calls for s in self.sessions]

    @property
    def text_action_sessions(self) -> int:
        """Sessions whose calls were read from the assistant's text."""
        return sum(1 for s in self.sessions if s.text_actions)

    def growth(self) -> tuple[float, float, float]:
        """Median and quartiles (25%, 75%) of the per-session context growth per turn."""
        values = np.array([s.growth_per_turn for s in self.sessions if math.isfinite(s.growth_per_turn)])
        if not len(values):
            return math.nan, math.nan, math.nan
        q25, q50, q75 = np.percentile(values, [25, 50, 75])
        return float(q50), float(q25), float(q75)

    def as_dict(self) -> dict[str, Any]:
        """Plain data (lists and numbers) for `reports.fit`."""
        growth, growth_q25, growth_q75 = self.growth()
        return {
            "sessions": len(self.sessions),
            "model_calls": [s.model_calls for s in self.sessions],
            "tool_calls": [s.tool_calls for s in self.sessions],
            "distinct_calls": [s.distinct_calls for s in self.sessions],
            "growth_per_turn": [s.growth_per_turn for s in self.sessions],
            "total_tokens": [s.total_tokens for s in self.sessions],
            "payload_bytes": list(self.payload_bytes),
            "tool_mix": self.tool_mix,
            "role_mix": self.role_mix,
            "error_share": self.error_share,
            "empty_share": self.empty_share,
            "observation_share": self.observation_share,
            "growth_median": growth,
            "growth_q25": growth_q25,
            "growth_q75": growth_q75,
        }


@dataclass(frozen=True, slots=True)
class _Call:
    """One tool call of a session: its tool, input, role, and the output it got (None: none recorded)."""

    name: str
    input: Mapping[str, Any]
    role: str
    output: str | None
    status: str
    #: Tokens of the output (0 without one).
    output_tokens: int


def _call_key(name: str, arguments: Mapping[str, Any]) -> str:
    return name + " " + json.dumps(arguments, sort_keys=True, default=str)


def _block_tokens(message: Message, text: str) -> int:
    # The message's meter counted this text when the message was built: this is a memo hit.
    return message.meter.measure(text)[0]


def _slope(ys: Sequence[float]) -> float:
    """Least-squares slope of ``ys`` over 1..n; nan for fewer than two points."""
    if len(ys) < 2:
        return math.nan
    x = np.arange(1, len(ys) + 1, dtype=float)
    y = np.asarray(ys, dtype=float)
    x -= x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def _text_actions(messages: Sequence[Message]) -> dict[int, str] | None:
    """Index of each assistant message -> the command it ends with, when ``messages`` are a session of text
    actions (no tool call block, and `TEXT_ACTION_SHARE` of the assistant messages end with a command);
    None otherwise."""
    assistants = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if any(isinstance(b, ToolUse) for m in messages for b in m.blocks):
        return None
    actions = {i: command for i in assistants if (command := text_action(messages[i].text)) is not None}
    return actions if actions and len(actions) >= TEXT_ACTION_SHARE * len(assistants) else None


def _calls(messages: Sequence[Message]) -> tuple[list[_Call], bool]:
    """The tool calls of a session in order, and whether they were read from text actions. A text action's
    tool is its program (``open``, ``python``); its output, the next user message (none after the last)."""
    actions = _text_actions(messages)
    calls: list[_Call] = []
    if actions is not None:
        for i, command in actions.items():
            after = messages[i + 1] if i + 1 < len(messages) and messages[i + 1].role == "user" else None
            program, _ = _program(_command_words(command))
            output = after.text if after is not None else None
            tokens = _block_tokens(after, output) if after is not None and output is not None else 0
            calls.append(_Call(program or command.split()[0], {"command": command}, command_role(command), output,
                               "success", tokens))
        return calls, True
    pending: dict[str, int] = {}
    for message in messages:
        for block in message.blocks:
            if isinstance(block, ToolUse):
                pending[block.id] = len(calls)
                calls.append(_Call(block.name, block.input, tool_role(block.name, block.input), None, "success", 0))
            elif isinstance(block, ToolResult):
                at = pending.pop(block.tool_use_id, None)
                tokens = _block_tokens(message, block.content)
                if at is None:  # a result without its call (the builder allows none; kept for safety)
                    calls.append(_Call("", {}, "other", block.content, block.status, tokens))
                    continue
                use = calls[at]
                calls[at] = _Call(use.name, use.input, use.role, block.content, block.status, tokens)
    return calls, False


def measure(sessions: Iterable[ImportedSession]) -> WorkloadMeasures:
    """Measure ``sessions``: per session its model calls, tool calls (its length), distinct successful calls,
    context growth per turn and tokens; pooled, every tool output's size (empty ones too), the call counts by
    tool and role (`tool_role`), the share of error results and the share of tokens that are tool outputs.
    A session of text actions (`text_action`) is measured from them: the observations are its user messages."""
    per_session: list[SessionMeasures] = []
    payloads: list[int] = []
    successes: list[int] = []
    counts: Counter[tuple[str, str]] = Counter()
    results = errors = result_tokens = message_tokens = 0
    for session in sessions:
        calls, from_text = _calls(session.messages)
        prompts: list[int] = []
        prompt = total = 0
        for message in session.messages:
            if message.role == "assistant":
                prompts.append(prompt)
                total += prompt + message.tokens
            prompt += message.tokens
            message_tokens += message.tokens
        distinct: set[str] = set()
        for call in calls:
            counts[(call.name, call.role)] += 1
            if call.output is None:
                continue
            results += 1
            result_tokens += call.output_tokens
            size = len(call.output.encode("utf-8"))
            payloads.append(size)
            if call.status == "error":
                errors += 1
            else:
                successes.append(size)
                distinct.add(_call_key(call.name, call.input))
        per_session.append(SessionMeasures(session.session_id, len(prompts), len(calls), len(distinct),
                                           _slope(prompts), total, len(calls) if from_text else 0))
    call_counts = tuple(sorted((tool, role, n) for (tool, role), n in counts.items()))
    return WorkloadMeasures(tuple(per_session), tuple(payloads), call_counts, results, errors, result_tokens,
                            message_tokens, tuple(successes))


# The lognormal and its goodness of fit -------------------------------------------------------------------


def kolmogorov_p_value(statistic: float, n: int) -> float:
    """P(D > statistic) for the one-sample Kolmogorov-Smirnov statistic of ``n`` values.

    The asymptotic Kolmogorov distribution, Q(l) = 2 sum_{k>=1} (-1)^(k-1) exp(-2 k^2 l^2), at
    l = (sqrt(n) + 0.12 + 0.11 / sqrt(n)) * D, Stephens' (1970) small-sample correction, as in
    Numerical Recipes' ``probks``. The series is summed until a term is negligible; for l below 0.2
    Q is 1 to double precision and the alternating series converges too slowly to be worth summing.
    """
    if n <= 0 or not math.isfinite(statistic):
        return math.nan
    root = math.sqrt(n)
    lam = (root + 0.12 + 0.11 / root) * statistic
    if lam < 0.2:
        return 1.0
    total, sign = 0.0, 1.0
    for k in range(1, 101):
        term = math.exp(-2.0 * k * k * lam * lam)
        total += sign * term
        if term < 1e-16:
            break
        sign = -sign
    return min(1.0, max(0.0, 2.0 * total))


@dataclass(frozen=True, slots=True)
class LognormalFit:
    """A lognormal fitted by maximum likelihood to ``n`` positive values (mean and standard deviation of
    their logarithms: median = exp(mean), sigma = std), with the Kolmogorov-Smirnov statistic of the
    values against it and its p-value.

    The p-value treats the fitted params as known; since they were estimated from the same values, it
    is larger than the exact one (Lilliefors' correction would lower it): a small p is a clear
    rejection, a large one is weaker evidence of a good fit than it looks."""

    median: float
    sigma: float
    n: int
    ks_statistic: float
    ks_p_value: float

    def cdf(self, sizes: np.ndarray) -> np.ndarray:
        """The fitted distribution function at ``sizes``."""
        logs = np.log(np.asarray(sizes, dtype=float))
        mu = math.log(self.median)
        if self.sigma == 0:
            return (logs >= mu).astype(float)
        z = (logs - mu) / (self.sigma * math.sqrt(2.0))
        return np.array([0.5 * (1.0 + math.erf(v)) for v in z])

    def quantiles(self, probabilities: np.ndarray) -> np.ndarray:
        """The fitted sizes at ``probabilities`` (each in (0, 1))."""
        normal = statistics.NormalDist()
        z = np.array([normal.inv_cdf(float(p)) for p in probabilities])
        return np.exp(math.log(self.median) + self.sigma * z)


def fit_lognormal(sizes: Sequence[int] | np.ndarray) -> LognormalFit:
    """The maximum-likelihood lognormal of the positive values of ``sizes`` and its Kolmogorov-Smirnov test.
    A lognormal has no zero, so an empty output (size 0) is left to the share of empty outputs
    (`WorkloadMeasures.empty_share`) rather than moved to a made-up size. ValueError without a positive,
    finite value."""
    values = np.asarray(sizes, dtype=float)
    if not np.isfinite(values).all():
        raise ValueError("a lognormal needs finite values")
    values = np.sort(values[values > 0])
    if not len(values):
        raise ValueError("a lognormal needs at least one positive value")
    logs = np.log(values)
    mu, sigma = float(logs.mean()), float(logs.std())
    n = len(values)
    provisional = LognormalFit(math.exp(mu), sigma, n, math.nan, math.nan)
    cdf = provisional.cdf(values)
    upper = np.arange(1, n + 1) / n - cdf
    lower = cdf - np.arange(0, n) / n
    statistic = float(max(upper.max(), lower.max()))
    return LognormalFit(math.exp(mu), sigma, n, statistic, kolmogorov_p_value(statistic, n))


# Families, their tools and roles ---------------------------------------------------------------------------


def _shown_run(step: Step) -> Step:
    """The step whose output the agent sees: a fault that never clears shows its fallback's."""
    fault = step.fault
    return fault.fallback if fault is not None and fault.fails is None and fault.fallback is not None else step


def _step_role(step: Step) -> str:
    """A script step's role, from its tool and its literal arguments (a fact's key stands for its value,
    which no role rule reads)."""
    arguments = {k: v.removeprefix(LITERAL_PREFIX) for k, v in step.args.items()}
    return tool_role(step.tool, arguments)


def _families() -> list[str]:
    return [name for name in scenarios.names() if name != "mix"]


@functools.cache
def _family_probes() -> dict[str, tuple[Counter[str], Counter[str]]]:
    """Family -> (tool counts, role counts) of `PROBE_SCRIPTS` generated scripts' shown steps."""
    probes: dict[str, tuple[Counter[str], Counter[str]]] = {}
    for family in _families():
        tools: Counter[str] = Counter()
        roles: Counter[str] = Counter()
        for i in range(PROBE_SCRIPTS):
            script = scenarios.generate(family, session_seed(0, f"probe-{family}", i), **PROBE_PARAMS)
            for step in script.steps:
                shown = _shown_run(step)
                tools[shown.tool] += 1
                roles[_step_role(shown)] += 1
        probes[family] = (tools, roles)
    return probes


def family_tool_shares() -> dict[str, dict[str, float]]:
    """Family -> tool -> share of its ideal sessions' calls, read off `PROBE_SCRIPTS` generated scripts
    of each registered family (every step's tool, or its fallback's when its fault never clears).
    Generated rather than read from the sources so that a third-party family counts too."""
    out: dict[str, dict[str, float]] = {}
    for family, (tools, _) in _family_probes().items():
        total = sum(tools.values())
        out[family] = {tool: n / total for tool, n in sorted(tools.items())}
    return out


def family_role_shares() -> dict[str, dict[str, float]]:
    """Family -> role (`ROLES`) -> share of its ideal sessions' calls, from the same scripts as
    `family_tool_shares`."""
    out: dict[str, dict[str, float]] = {}
    for family, (_, roles) in _family_probes().items():
        total = sum(roles.values())
        out[family] = {role: roles.get(role, 0) / total for role in ROLES}
    return out


def mix_weights(tool_counts: Mapping[str, int],
                role_counts: Mapping[str, int] | None = None) -> tuple[dict[str, float], float]:
    """Family weights that best explain ``tool_counts`` (tool -> calls) and ``role_counts`` (role -> calls
    of the tools no family uses), and the share of the calls whose tool some family uses (0: no tool
    matched; the weights are then from the roles alone, or empty without them).

    Each family is a distribution over tools (`family_tool_shares`) and over roles (`family_role_shares`);
    the weights are the maximum-likelihood mixture of those distributions for the observed calls, found by
    EM: every call is shared among the families that could make it in proportion to how likely each is to
    make it, and a family's weight is its share of the calls. A call of a tool some family uses is evidence
    by its name; a call of a tool none uses only by its role (SWE-agent's ``open`` is no family's tool, but
    a read). A tool several families use thus goes mostly to the family whose other calls the transcripts
    also make."""
    shares = family_tool_shares()
    role_shares = family_role_shares()
    families = list(shares)
    matched = {tool: n for tool, n in tool_counts.items() if any(tool in shares[f] for f in families) and n > 0}
    roles = {role: n for role, n in (role_counts or {}).items() if n > 0 and role in ROLES}
    total = sum(tool_counts.values())
    if (not matched and not roles) or total == 0:
        return {}, 0.0
    tools = sorted(matched)
    role_names = sorted(roles)
    counts = np.array([matched[t] for t in tools] + [roles[r] for r in role_names], dtype=float)
    # p[f, j]: the chance that family f's next call is tool (or role) j.
    p = np.array([[shares[f].get(t, 0.0) for t in tools] + [role_shares[f][r] for r in role_names]
                  for f in families])
    # A call no family could make (a role no family has) is no evidence: left out.
    possible = p.sum(axis=0) > 0
    p, counts = p[:, possible], counts[possible]
    if not counts.sum():
        return {}, 0.0
    weights = np.full(len(families), 1.0 / len(families))
    for _ in range(EM_ITERATIONS):
        joint = weights[:, None] * p
        responsibility = joint / joint.sum(axis=0, keepdims=True)
        weights = (responsibility * counts).sum(axis=1) / counts.sum()
    weights[weights < MIN_FAMILY_WEIGHT] = 0.0
    weights /= weights.sum()
    chosen = {f: round(float(w), 4) for f, w in zip(families, weights, strict=True) if w > 0}
    return chosen, float(sum(matched.values()) / total)


# Fitting -------------------------------------------------------------------------------------------------


def _params_class(family: str) -> type[ScenarioParams]:
    return scenarios.get(family).Params


def _bounds(name: str, params: type[ScenarioParams] = ScenarioParams) -> tuple[float, float]:
    """The ``ge`` / ``le`` bounds of a params field (what a config may hold)."""
    low, high = -math.inf, math.inf
    for item in params.model_fields[name].metadata:
        low = float(getattr(item, "ge", low))
        high = float(getattr(item, "le", high))
    return low, high


def _clip(name: str, value: float, params: type[ScenarioParams] = ScenarioParams) -> float:
    low, high = _bounds(name, params)
    return min(high, max(low, value))


def _log_sigma(values: Iterable[float]) -> float:
    """Standard deviation of the logarithms of the positive ``values`` (nan without any)."""
    logs = np.log(np.asarray([v for v in values if v > 0], dtype=float))
    return float(logs.std()) if len(logs) else math.nan


@dataclass(frozen=True, slots=True)
class ScriptShape:
    """What generated scripts show, measured as the calibration measures them (`fit`): their ideal
    sessions' lengths (steps), the sizes of the outputs the agent sees, and the role mix of their calls."""

    scripts: int
    length_median: float
    length_sigma: float
    #: Median bytes of the outputs, and the standard deviation of their log bytes.
    payload_median: float
    payload_sigma: float
    role_mix: dict[str, float]


@dataclass(frozen=True, slots=True)
class WorkloadFit:
    """The fitted workload: what was measured, the lognormals of the measured session lengths and payload
    sizes, and the generator params chosen to reproduce them (within the family's params' bounds)."""

    measures: WorkloadMeasures
    #: The lognormal of the non-empty measured payload sizes (what the transcripts show).
    payload: LognormalFit
    #: The lognormal of the measured session lengths (tool calls of the sessions that made any).
    lengths: LognormalFit
    #: Median of the sessions' tool calls, and the quartiles.
    turns_measured: tuple[float, float, float]
    #: Generator params: one length (``turns``) for a family without the length mix, else its median and
    #: sigma (``turns_median``, ``turns_sigma``; ``turns`` None).
    turns: int | None
    payload_median_bytes: int
    payload_sigma: float
    payload_max_bytes: int
    #: Family -> weight (sums to 1): the mixture that best explains the tools and roles, or the default mix.
    weights: dict[str, float]
    #: Share of tool calls whose tool some family uses.
    matched_share: float
    #: True when no call matched any family and the weights are the default mix's.
    fallback: bool
    #: Tools of the transcripts that no family uses.
    unmatched_tools: tuple[str, ...]
    turns_median: int | None = None
    turns_sigma: float | None = None
    #: The exploration steps' role weights (read, search, edit, run) of a family that takes them.
    role_weights: dict[str, float] | None = None
    #: What the final params' scripts show, if calibrated.
    calibrated: ScriptShape | None = None
    #: What a reader should know: fallbacks, clipped values, spreads one param cannot hold.
    notes: tuple[str, ...] = field(default=())

    def generator_params(self) -> dict[str, Any]:
        """The scenario params written to the config, in the order they are written."""
        out: dict[str, Any] = {}
        if self.turns is not None:
            out["turns"] = self.turns
        if self.turns_median is not None:
            out["turns_median"] = self.turns_median
        if self.turns_sigma is not None:
            out["turns_sigma"] = self.turns_sigma
        out |= {"payload_median_bytes": self.payload_median_bytes, "payload_sigma": self.payload_sigma,
                "payload_max_bytes": self.payload_max_bytes}
        if self.role_weights is not None:
            out[ROLE_PARAM] = dict(self.role_weights)
        return out


def _scenario_entries(weights: Mapping[str, float], params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``[[scenarios]]`` tables: the one family alone, or a mix of several."""
    if len(weights) == 1:
        return [{"name": next(iter(weights)), **params}]
    return [{"name": "mix", **params, "weights": dict(weights)}]


def _script_shape(entries: list[dict[str, Any]], n: int, seed: int) -> ScriptShape:
    """`ScriptShape` of ``n`` scripts of the scenario entry. Their seeds are not the ones a run of the
    config gives its sessions (`CALIBRATION_STREAM`), so the side-by-side of a run, or of fit's own generated
    sessions, measures sessions the calibration never saw."""
    (entry,) = entries
    name, params = entry["name"], {k: v for k, v in entry.items() if k != "name"}
    lengths: list[int] = []
    sizes: list[int] = []
    roles: Counter[str] = Counter()
    for i in range(n):
        script = scenarios.generate(name, session_seed(seed, f"{CALIBRATION_STREAM}{name}", i), **params)
        lengths.append(len(script.steps))
        for step in script.steps:
            shown = _shown_run(step)
            sizes.append(len(shown.payload.encode("utf-8")))
            roles[_step_role(shown)] += 1
    total = sum(roles.values())
    return ScriptShape(n, float(np.median(lengths)), _log_sigma(lengths), float(np.median(sizes)),
                       _log_sigma(sizes), {role: roles.get(role, 0) / total for role in ROLES})


def _names(tools: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(toml_string(t) for t in tools[:limit])
    return shown + (f" and {len(tools) - limit} more" if len(tools) > limit else "")


def _percent_mix(mix: Mapping[str, float]) -> str:
    return ", ".join(f"{role} {share:.0%}" for role, share in mix.items())


@dataclass
class _Knobs:
    """The generator params being calibrated, as floats (rounded and clipped as written by `_params`)."""

    family: type[ScenarioParams]
    length_mix: bool
    turns: float
    turns_sigma: float
    payload_mu: float
    payload_sigma: float
    max_bytes: int
    roles: dict[str, float] | None

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.length_mix:
            out["turns_median"] = int(_clip("turns_median", round(self.turns), self.family))
            out["turns_sigma"] = round(_clip("turns_sigma", self.turns_sigma, self.family), 4)
        else:
            out["turns"] = int(_clip("turns", round(self.turns), self.family))
        out["payload_median_bytes"] = int(_clip("payload_median_bytes", round(math.exp(self.payload_mu)), self.family))
        out["payload_sigma"] = round(_clip("payload_sigma", self.payload_sigma, self.family), 4)
        out["payload_max_bytes"] = self.max_bytes
        if self.roles is not None:
            out[ROLE_PARAM] = {role: round(w, 4) for role, w in sorted(self.roles.items())}
        return out


def _role_targets(mix: Mapping[str, float], roles: Iterable[str]) -> dict[str, float]:
    """The measured shares of the roles a family's ``role_weights`` takes, as its first weights."""
    weights = {role: mix.get(role, 0.0) for role in roles}
    total = sum(weights.values())
    return {role: w / total for role, w in weights.items()} if total else dict.fromkeys(weights, 1.0)


def _literal_values(annotation: Any) -> set[str]:
    """Every value of the ``Literal`` types inside a type annotation."""
    if get_origin(annotation) is Literal:
        return {str(v) for v in get_args(annotation)}
    return {v for arg in get_args(annotation) for v in _literal_values(arg)}


def _weighted_roles(family: type[ScenarioParams]) -> tuple[str, ...]:
    """The roles ``family``'s ``role_weights`` takes (the keys of its ``dict[Literal[...], float]``), in
    `ROLES` order; every role but ``other`` when its type does not say."""
    named = _literal_values(family.model_fields[ROLE_PARAM].annotation)
    return tuple(role for role in ROLES if role in named) or ROLES[:-1]


def _payload_lognormal(sizes: Sequence[int], notes: list[str]) -> LognormalFit:
    """The lognormal of the non-empty payloads (the generators make no empty output), with notes for the
    empty ones."""
    positive = [b for b in sizes if b > 0]
    if not positive:
        low = _bounds("payload_median_bytes")[0]
        notes.append(f"payload: every tool output is empty; the generators make none, so the smallest outputs "
                     f"they allow ({low:,.0f} B) are used")
        return LognormalFit(low, 0.0, 0, math.nan, math.nan)
    empty = len(sizes) - len(positive)
    if empty:
        notes.append(f"payload: {empty} of {len(sizes)} tool outputs are empty; they count in the "
                     "measured median and spread, and the lognormal is fitted to the others (the generators make "
                     "no empty output)")
    return fit_lognormal(positive)


def _family_weights(measures: WorkloadMeasures,
                    notes: list[str]) -> tuple[dict[str, float], float, bool, tuple[str, ...]]:
    """(family weights, the share of calls whose tools a family uses, whether the default mix stands in,
    the tools no family uses): `mix_weights` of the tool counts, and of their roles for unknown tools."""
    tool_counts = dict(measures.tool_counts)
    known = {tool for tools in family_tool_shares().values() for tool in tools}
    unmatched = tuple(sorted(t for t in tool_counts if t not in known))
    unmatched_roles: Counter[str] = Counter()
    for tool, role, n in measures.call_counts:
        if tool not in known:
            unmatched_roles[role] += n
    weights, matched = mix_weights(tool_counts, unmatched_roles)
    fallback = not weights
    if fallback:
        weights = dict.fromkeys(DEFAULT_FAMILIES, round(1.0 / len(DEFAULT_FAMILIES), 4))
        notes.append("families: no tool or role of the transcripts is one a scenario family has; the default "
                     "mix's weights are used")
    elif unmatched:
        notes.append(f"families: {1 - matched:.0%} of the tool calls use tools no family uses ({_names(unmatched)});"
                     " they count by their role")
    return weights, matched, fallback, unmatched


def _calibration_step(knobs: _Knobs, shape: ScriptShape, target_median: float, target_sigma: float,
                      lengths: tuple[float, float] | None, target_roles: Mapping[str, float]) -> None:
    """Move each knob by the gap between the measured and the generated shape (`fit`'s calibration);
    ``lengths``: the measured length median and sigma when the family has the length mix."""
    params = knobs.params()
    knobs.payload_mu = math.log(params["payload_median_bytes"]) + math.log(target_median) - math.log(
        max(1.0, shape.payload_median))
    added = shape.payload_sigma ** 2 - params["payload_sigma"] ** 2
    knobs.payload_sigma = math.sqrt(max(0.0, target_sigma ** 2 - added))
    if lengths is not None:
        median, sigma = lengths
        knobs.turns = params["turns_median"] * median / max(1.0, shape.length_median)
        if shape.length_sigma > 0:
            knobs.turns_sigma = params["turns_sigma"] * sigma / shape.length_sigma
    if knobs.roles is not None:
        moved = {role: w * (target_roles.get(role, 0.0) / max(shape.role_mix.get(role, 0.0), 1e-3))
                 for role, w in knobs.roles.items()}
        total = sum(moved.values())
        knobs.roles = {role: w / total for role, w in moved.items()} if total else knobs.roles


def fit(measures: WorkloadMeasures, *, calibrate: bool = True, seed: int = 0,
        progress: Callable[[str], None] | None = None) -> WorkloadFit:
    """Fit generator params to ``measures``. FitError when there is nothing to fit.

    - Session lengths: the lognormal of the sessions' tool calls (median and sigma). A family with the
      length mix (``turns_median``, ``turns_sigma``) gets both, calibrated; any other one ``turns``, the
      median (within its bounds), with a note when the lengths spread.
    - Payload sizes: every tool output counts, an empty one as 0 bytes (in the measured median and spread);
      the lognormal is fitted to the non-empty ones (`fit_lognormal`). A family's outputs are not all drawn
      from its lognormal (file windows of 100 lines, whole table rows, fixed-size confirmations), so the
      params are calibrated by simulation.
    - Families: `mix_weights` of the tool counts and, for tools no family uses, of their roles; when nothing
      matches, the default mix. A family that takes ``role_weights`` gets the measured role mix, calibrated.
    - ``payload_max_bytes``: the largest measured output (at least the 99th percentile, so the spread is not
      clipped), within the params' bounds.

    Calibration (``calibrate``): `CALIBRATION_ROUNDS` times, generate scripts with the current params (enough
    for `CALIBRATION_PAYLOADS` payloads, at least `CALIBRATION_SCRIPTS`; seeded apart from a run's sessions)
    and move each param by the gap between the measured and the generated shape: the payload log-median by
    the gap of the medians, sigma so that the spread the generator adds on top of its own sigma is kept
    (sigma^2 = measured^2 - (generated^2 - sigma^2)), the length median and sigma by their ratios, and each
    role weight by the ratio of the measured to the generated share of its role.
    """
    if not measures.payload_bytes:
        raise FitError("the transcripts hold no tool output: there are no payload sizes to fit")
    # The scenario's payloads are the successful outputs (a failed call's error text is the runtime's fault,
    # which the replay adds on top); when every output is an error, the errors are all there is.
    sizes = measures.success_bytes or measures.payload_bytes
    notes: list[str] = []
    n_sessions = len(measures.sessions)
    if measures.text_action_sessions:
        notes.append(f"calls: the tool calls of {measures.text_action_sessions} of {n_sessions} sessions were read "
                     "from the assistant's text (each message ending with a command block, as SWE-agent writes "
                     "them) and their outputs from the next user message")
    payload = _payload_lognormal(sizes, notes)
    lengths_all = np.array(measures.session_lengths, dtype=float)
    q25, q50, q75 = (float(v) for v in np.percentile(lengths_all, [25, 50, 75]))
    lengths = fit_lognormal(lengths_all)  # the sessions without a call have no length to fit

    weights, matched, fallback, unmatched = _family_weights(measures, notes)
    single = next(iter(weights)) if len(weights) == 1 else None
    family = _params_class(single) if single is not None else _params_class("mix")
    length_mix = single is not None and all(p in family.model_fields for p in LENGTH_MIX_PARAMS)
    role_knob = single is not None and ROLE_PARAM in family.model_fields
    if not length_mix:
        turns = int(_clip("turns", round(q50), family))
        if turns != round(q50):
            notes.append(f"turns: the measured median, {q50:g} tool calls per session, is outside the generators' "
                         f"range; {turns} is used")
        if q75 > 1.5 * q25:
            notes.append(f"turns: session lengths vary (quartiles {q25:g} to {q75:g} tool calls); every generated "
                         f"session has {turns} (the family has no length mix)")
    max_measured = max(measures.payload_bytes)
    max_bytes = int(_clip("payload_max_bytes", max_measured, family))
    p99 = float(np.percentile(measures.payload_bytes, 99))
    if max_bytes < p99:
        notes.append(f"payload: the 99th percentile, {p99:,.0f} B, is above the generators' largest cap; "
                     f"{max_bytes:,} B is used")

    target_median = max(1.0, float(np.median(sizes)))
    target_roles = measures.role_mix
    knobs = _Knobs(family, length_mix, q50, lengths.sigma, math.log(payload.median), payload.sigma, max_bytes,
                   _role_targets(target_roles, _weighted_roles(family)) if role_knob else None)
    calibrated: ScriptShape | None = None
    scripts = min(MAX_CALIBRATION_SCRIPTS,
                  max(CALIBRATION_SCRIPTS, math.ceil(CALIBRATION_PAYLOADS / max(1.0, q50))))
    if calibrate:
        for round_index in range(CALIBRATION_ROUNDS):
            if progress is not None:
                progress(f"calibrating the generator, round {round_index + 1} of {CALIBRATION_ROUNDS}")
            shape = _script_shape(_scenario_entries(weights, knobs.params()), scripts, seed)
            _calibration_step(knobs, shape, target_median, payload.sigma, (q50, lengths.sigma) if length_mix else None,
                              target_roles)
        calibrated = _script_shape(_scenario_entries(weights, knobs.params()), scripts, seed)
    params = knobs.params()
    median_bytes, payload_sigma = params["payload_median_bytes"], params["payload_sigma"]
    if median_bytes != round(math.exp(knobs.payload_mu)) or payload_sigma != round(knobs.payload_sigma, 4):
        notes.append("payload: the calibrated params fall outside the generators' bounds and were clipped "
                     f"(median {math.exp(knobs.payload_mu):,.0f} B, sigma {knobs.payload_sigma:.3f})")
    if calibrated is not None:
        # A fixed length has its own note above; a length mix or the payloads may still miss what was measured.
        gaps = [("payload", target_median, calibrated.payload_median)]
        if length_mix:
            gaps.insert(0, ("session length", q50, calibrated.length_median))
        for what, measured, generated in gaps:
            if measured > 0 and abs(generated / measured - 1) > AGREEMENT_TOLERANCE:
                notes.append(f"{what}: the calibrated scripts' median is {generated:,.0f} against the measured "
                             f"{measured:,.0f}: the generators' fixed structure (steps every session makes, outputs "
                             "of a fixed size such as 100-line file windows) keeps it from getting closer")
    return WorkloadFit(measures, payload, lengths, (q50, q25, q75), params.get("turns"), median_bytes, payload_sigma,
                       max_bytes, weights, matched, fallback, unmatched, params.get("turns_median"),
                       params.get("turns_sigma"), params.get(ROLE_PARAM), calibrated, tuple(notes))


# The run config --------------------------------------------------------------------------------------------


def workload_config(fitted: WorkloadFit, *, sessions: int = DEFAULT_RUN_SESSIONS, seed: int = 0) -> dict[str, Any]:
    """A run config (the data of a TOML file) whose scenario makes sessions like the measured ones;
    strategies are left out, so a run compares every default strategy on them."""
    return {"sessions": sessions, "seed": seed, "model": "frontier",
            "scenarios": _scenario_entries(fitted.weights, fitted.generator_params())}


def _comments(fitted: WorkloadFit) -> dict[str, list[str]]:
    """Config key -> the comment lines above it, saying where its value came from."""
    m = fitted.measures
    p = fitted.payload
    q50, q25, q75 = fitted.turns_measured
    sizes = m.success_bytes or m.payload_bytes
    calibration = ("calibrated by generating scripts until theirs match the measured ones"
                   if fitted.calibrated is not None else "uncalibrated")
    weights = (["no tool or role of the transcripts is one a scenario family has: the default mix's weights"]
               if fitted.fallback else
               [f"the mixture of families whose tools and roles best explain the "
                f"{sum(n for _, n in m.tool_counts):,} tool calls ({fitted.matched_share:.0%} of them use a tool "
                "some family uses)"])
    lengths = (f"measured session lengths: median {q50:g} tool calls (quartiles {q25:g} to {q75:g}, "
               f"{len(m.sessions)} sessions)")
    return {
        "turns": [lengths],
        "turns_median": [f"{lengths}; {calibration}"],
        "turns_sigma": [f"measured session lengths: lognormal sigma {fitted.lengths.sigma:.3f}; {calibration}"],
        "payload_median_bytes": [f"measured payloads: median {float(np.median(sizes)):,.0f} B over {len(sizes):,} "
                                 f"successful tool outputs (lognormal of the non-empty ones: median "
                                 f"{p.median:,.0f} B); {calibration}"],
        "payload_sigma": [f"measured payloads: lognormal sigma {p.sigma:.3f} (Kolmogorov-Smirnov D = "
                          f"{p.ks_statistic:.3f}, p = {p.ks_p_value:.3g}); {calibration}"],
        "payload_max_bytes": ["the largest measured payload (no lower than their 99th percentile)"],
        ROLE_PARAM: [f"measured tool-role mix: {_percent_mix(m.role_mix)}; the exploration steps' weights by role, "
                     f"{calibration}"],
        "weights": weights,
    }


#: Characters a TOML basic string writes as escapes (TOML 1.0, "String"): the quote, the backslash and the
#: control characters (tab too, for one-line readability); the short escapes where TOML has them.
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_TOML_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f]')
#: Lone surrogates: no TOML text (UTF-8) can hold one; written as U+FFFD.
_SURROGATES = re.compile(r"[\ud800-\udfff]")
#: Characters a TOML comment may not hold (control characters other than tab).
_COMMENT_FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string, quotes included: ``"`` and ``\\`` and control characters escaped by
    the TOML spec, a lone surrogate (not a Unicode scalar value) written as U+FFFD."""
    text = _SURROGATES.sub("\ufffd", text)
    return '"' + _TOML_ESCAPED.sub(lambda m: _TOML_ESCAPES.get(m.group(), f"\\u{ord(m.group()):04X}"), text) + '"'


def toml_comment(text: str) -> str:
    """``text`` as one TOML comment line: a control character (a newline in a name) is written as its
    escape, so the comment can neither end early nor hold what TOML forbids; lone surrogates as U+FFFD."""
    text = _SURROGATES.sub("\ufffd", text)
    return "# " + _COMMENT_FORBIDDEN.sub(lambda m: toml_string(m.group())[1:-1], text)


def _source_name(source: str) -> str:
    """A transcript's name in the header comment: as given, quoted (`toml_string`) when it holds a quote, a
    backslash, a comma or a character that is not printable, so a list of names reads unambiguously."""
    plain = source.isprintable() and not any(c in source for c in '"\\,') and not _SURROGATES.search(source)
    return source if plain else toml_string(source)


def _toml_line(key: str, value: Any) -> str:
    """``key = value`` on one line: a table as an inline table (its keys are role names)."""
    if isinstance(value, dict):
        inner = ", ".join(tomli_w.dumps({k: v}).strip() for k, v in value.items())
        return f"{key} = {{ {inner} }}"
    return tomli_w.dumps({key: value}).strip()


def workload_toml(fitted: WorkloadFit, *, sessions: int = DEFAULT_RUN_SESSIONS, seed: int = 0,
                  sources: Sequence[str] = ()) -> str:
    """`workload_config` as TOML text, with a comment line above each fitted value saying where it came
    from and the fit's notes at the top. The text is parsed back (`tomllib`) before it is returned:
    ValueError if it does not read back as exactly the config."""
    data = workload_config(fitted, sessions=sessions, seed=seed)
    comments = _comments(fitted)
    lines = ["# A ctxbench workload fitted to agent transcripts by `ctxbench fit`."]
    if sources:
        lines.append(toml_comment(f"Transcripts: {', '.join(_source_name(s) for s in sources)}"))
    lines += [toml_comment(f"Note: {note}") for note in fitted.notes]
    for key in ("sessions", "seed", "model"):
        lines.append(tomli_w.dumps({key: data[key]}).strip())
    (entry,) = data["scenarios"]
    if "weights" not in entry:  # one family alone: the weights' reason is the reason for its name
        comments["name"] = comments["weights"]
    lines += ["", "[[scenarios]]"]
    for key, value in entry.items():
        if key == "weights":
            continue
        lines += [toml_comment(line) for line in comments.get(key, [])]
        lines.append(_toml_line(key, value))
    if "weights" in entry:
        lines += ["", *[toml_comment(line) for line in comments["weights"]], "[scenarios.weights]"]
        lines += [tomli_w.dumps({name: weight}).strip() for name, weight in entry["weights"].items()]
    text = "\n".join(lines) + "\n"
    # The text is assembled by hand for its comments: it must still read back as exactly the data.
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"the workload TOML does not parse ({e})") from None
    if parsed != data:
        raise ValueError("the workload TOML does not read back as the fitted config")
    return text


def write_workload(fitted: WorkloadFit, path: Path, *, sessions: int = DEFAULT_RUN_SESSIONS, seed: int = 0,
                   sources: Sequence[str] = ()) -> Path:
    """Write `workload_toml` to ``path`` atomically (a reader never sees half a file)."""
    text = workload_toml(fitted, sessions=sessions, seed=seed, sources=sources)
    write_atomically(path, text.encode("utf-8"))
    return path


# Replaying sessions -----------------------------------------------------------------------------------------


def _alternating(messages: Iterable[Message]) -> tuple[Message, ...]:
    """``messages`` with consecutive messages of one role merged into one, as a trace reader merges them
    (a nudge after a tool result, a hand-over after the previous agent's last result, prose followed by
    the next call), so that roles alternate as in any provider's transcript."""
    out: list[Message] = []
    for message in messages:
        if out and out[-1].role == message.role:
            previous = out[-1]
            out[-1] = Message.build(message.role, previous.blocks + message.blocks,
                                    kind="task" if previous.kind == "task" else None, meter=previous.meter)
        else:
            out.append(message)
    return tuple(out)


def _replayed(script: SessionScript, profile: Profile, *, scenario: str, index: int,
              fmt: str) -> ImportedSession:
    """``script`` replayed under `REPLAY_STRATEGY` with the mock model, as a transcript labelled with
    trace format ``fmt``. The agents of a multi-agent script follow each other in one transcript (a
    hand-over joins the previous agent's last message)."""
    strategy = create(REPLAY_STRATEGY)
    replay = Replay(script, strategy, profile, Switches(), scenario=scenario,
                    session_index=index)
    replay.run()
    messages = _alternating(m for ctx in replay.contexts.values() for m in ctx.messages)
    tools = sorted({b.name for m in messages for b in m.blocks if isinstance(b, ToolUse)})
    return ImportedSession(source=f"ctxbench:{scenario}", session_id=f"{scenario}-{index:05d}", format=fmt,
                           system="", messages=messages, model=profile.name, tools=tuple(tools))


def _as_config(config: RunConfig | Mapping[str, Any]) -> RunConfig:
    return config if isinstance(config, RunConfig) else config_from_data(config)


def generated_sessions(config: RunConfig | Mapping[str, Any], *, sessions: int, seed: int | None = None,
                       progress: Callable[[int, int], None] | None = None,
                       fmt: str = "openai-chat") -> list[ImportedSession]:
    """``sessions`` sessions of ``config``'s scenarios (split by weight, seeded as `ctxbench run` seeds
    them, with root seed ``seed`` or the config's), replayed under `REPLAY_STRATEGY` with the config's
    model profile; ``progress(done, total)`` after each. ``fmt`` is the trace format the transcripts
    are labelled with (`ImportedSession.format`)."""
    run_config = _as_config(config).model_copy(update={"sessions": sessions})
    root = run_config.seed if seed is None else seed
    profile = run_config.profile()
    out: list[ImportedSession] = []
    for entry, count in zip(run_config.scenarios, allocate(run_config), strict=True):
        for index in range(count):
            script = scenarios.generate(entry.name, session_seed(root, entry.name, index), **entry.params)
            out.append(_replayed(script, profile, scenario=entry.name, index=index, fmt=fmt))
            if progress is not None:
                progress(len(out), sessions)
    return out


#: Tool outputs the side-by-side's generated sessions should hold (`comparison_sessions`): with fewer, the
#: generated median moves by a tenth or more between seeds (sessions are few, and each one's steps alike).
COMPARISON_PAYLOADS = 2000
#: The fewest and the most generated sessions for the side-by-side.
MIN_COMPARISON_SESSIONS, MAX_COMPARISON_SESSIONS = 40, 200


def comparison_sessions(fitted: WorkloadFit) -> int:
    """How many sessions to generate for the side-by-side: enough for `COMPARISON_PAYLOADS` tool outputs at
    the measured median length, within [`MIN_COMPARISON_SESSIONS`, `MAX_COMPARISON_SESSIONS`]."""
    per_session = max(1.0, fitted.turns_measured[0])
    return min(MAX_COMPARISON_SESSIONS, max(MIN_COMPARISON_SESSIONS, math.ceil(COMPARISON_PAYLOADS / per_session)))


def generated_measures(config: RunConfig | Mapping[str, Any], *, sessions: int = 40, seed: int | None = None,
                       progress: Callable[[int, int], None] | None = None) -> WorkloadMeasures:
    """`measure` of `generated_sessions`: what the config makes, for the side-by-side with the transcripts."""
    return measure(generated_sessions(config, sessions=sessions, seed=seed, progress=progress))


def synthetic_sessions(scenario: str, n: int, seed: int = 0, *, model: str = "frontier", fmt: str = "openai-chat",
                       **params: Any) -> list[ImportedSession]:
    """``n`` transcripts of family ``scenario`` with generator ``params`` (known truth for a fit to
    recover), replayed under `REPLAY_STRATEGY` with the mock model of profile ``model``, labelled as
    trace format ``fmt``."""
    config = {"sessions": n, "seed": seed, "model": model, "scenarios": [{"name": scenario, **params}]}
    return generated_sessions(config, sessions=n, fmt=fmt)


def write_synthetic_traces(out_dir: Path, n: int, fmt: str = "openai-chat", *, scenario: str = "k8s_crashloop",
                           seed: int = 0, **params: Any) -> list[Path]:
    """Write `synthetic_sessions` as traces of format ``fmt`` into ``out_dir`` (created if missing): a file
    ``<session id>.json`` per session, or a session directory for a directory format; the files written."""
    from harness.run.traces import dump_session

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for session in synthetic_sessions(scenario, n, seed, fmt=fmt, **params):
        dumped = dump_session(session, fmt)
        # A file format gives one JSON text; a directory format, the files of a session directory.
        files = {f"{session.session_id}.json": dumped} if isinstance(dumped, str) else {
            f"{session.session_id}/{name}": text for name, text in dumped.items()}
        for name, text in files.items():
            path = out_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, text.encode("utf-8"))
            written.append(path)
    return written




# Measured against generated ---------------------------------------------------------------------------------

#: A generated measure agrees with the measured one when it is within this share of it.
AGREEMENT_TOLERANCE = 0.20


@dataclass(frozen=True, slots=True)
class Agreement:
    """One row of the side-by-side: a measure of the transcripts and of the generated sessions.

    ``unit`` says how the values are written: ``calls``, ``bytes``, ``tokens``, ``share`` (a fraction),
    ``sigma`` (a standard deviation of logs) or ``distance`` (a distance between two distributions, whose
    measured side is 0 and which agrees when it is at most the tolerance itself)."""

    measure: str
    measured: float
    generated: float
    unit: str
    tolerance: float = AGREEMENT_TOLERANCE

    @property
    def gap(self) -> float:
        """Relative gap, generated / measured - 1 (for a distance: the distance); nan when a side is
        missing, infinite when only the measured side is 0."""
        if not (math.isfinite(self.measured) and math.isfinite(self.generated)):
            return math.nan
        if self.unit == "distance":
            return self.generated - self.measured
        if self.measured == 0:
            return 0.0 if self.generated == 0 else math.inf
        return self.generated / self.measured - 1

    @property
    def within(self) -> bool | None:
        """Whether the generated value is within the tolerance of the measured one; None when a side is
        missing."""
        gap = self.gap
        return None if math.isnan(gap) else abs(gap) <= self.tolerance

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the report."""
        return {"measure": self.measure, "measured": self.measured, "generated": self.generated, "unit": self.unit,
                "gap": self.gap, "within": self.within, "tolerance": self.tolerance}


def _median(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.median(finite)) if finite else math.nan


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def agreement(measured: WorkloadMeasures, generated: WorkloadMeasures, *,
              tolerance: float = AGREEMENT_TOLERANCE) -> list[Agreement]:
    """The measured sessions against the generated ones, one `Agreement` per measure: session length
    (median tool calls per session, and the spread as sigma of log calls), payload median and spread (sigma
    of log bytes of the non-empty outputs) and 99th percentile, observation share, context growth per call
    (median of the sessions' slopes), tokens per session (median), the share of each tool role, and the
    role mix's total variation distance (half the sum of the shares' gaps)."""
    def row(measure: str, unit: str, of: Callable[[WorkloadMeasures], float]) -> Agreement:
        return Agreement(measure, of(measured), of(generated), unit, tolerance)

    rows = [
        row("median session length, tool calls", "calls", lambda m: _median(m.session_lengths)),
        row("session length spread, sigma of log calls", "sigma", lambda m: _log_sigma(m.session_lengths)),
        row("payload median, bytes", "bytes", lambda m: _median(m.payload_bytes)),
        row("payload spread, sigma of log bytes", "sigma", lambda m: _log_sigma(m.payload_bytes)),
        row("payload 99th percentile, bytes", "bytes", lambda m: _percentile(m.payload_bytes, 99)),
        row("observation share of input tokens", "share", lambda m: m.observation_share),
        row("context growth per call, tokens (median)", "tokens", lambda m: m.growth()[0]),
        row("tokens per session, median", "tokens", lambda m: _median([s.total_tokens for s in m.sessions])),
    ]
    mixes = measured.role_mix, generated.role_mix
    rows += [Agreement(f"{role} share of tool calls", mixes[0].get(role, math.nan), mixes[1].get(role, math.nan),
                       "share", tolerance) for role in ROLES]
    distance = (0.5 * sum(abs(mixes[0][r] - mixes[1][r]) for r in ROLES)) if all(mixes) else math.nan
    rows.append(Agreement("tool-role mix, total variation distance", 0.0, distance, "distance", tolerance))
    return rows


def _value(value: float, unit: str) -> str:
    if not math.isfinite(value):
        return "n/a"
    if unit in ("share", "distance"):
        return f"{value * 100:.1f}%" if unit == "share" else f"{value:.3f}"
    if unit == "sigma":
        return f"{value:.3f}"
    return f"{value:,.1f}" if unit == "calls" else f"{value:,.0f}"


def agreement_cells(row: Agreement) -> list[str]:
    """A row's cells as text: measure, measured, generated, gap, and "yes" / "no" / "n/a"."""
    gap = row.gap
    if math.isnan(gap):
        gap_text = "n/a"
    elif row.unit == "distance":
        gap_text = f"{gap:.3f}"
    else:
        gap_text = "inf" if math.isinf(gap) else f"{gap * 100:+.0f}%"
    within = {True: "yes", False: "no", None: "n/a"}[row.within]
    return [row.measure, _value(row.measured, row.unit), _value(row.generated, row.unit), gap_text, within]


def agreement_header(tolerance: float = AGREEMENT_TOLERANCE) -> list[str]:
    """The side-by-side's header row."""
    return ["measure", "measured (transcripts)", "generated (fitted config)", "gap", f"within {tolerance:.0%}"]


def agreement_markdown(rows: Sequence[Agreement]) -> str:
    """The side-by-side as a Markdown table."""
    header = agreement_header(rows[0].tolerance if rows else AGREEMENT_TOLERANCE)
    lines = ["| " + " | ".join(header) + " |", "|---|---:|---:|---:|:---:|"]
    lines += ["| " + " | ".join(agreement_cells(row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# The report's inputs ---------------------------------------------------------------------------------------


def _flat_params(params: Mapping[str, Any]) -> dict[str, int | float]:
    """Generator params as numbers only (a table's entries as ``key.entry``), for the report's table."""
    out: dict[str, int | float] = {}
    for key, value in params.items():
        if isinstance(value, dict):
            out |= {f"{key}.{k}": v for k, v in value.items()}
        else:
            out[key] = value
    return out


def report_inputs(fitted: WorkloadFit, generated: WorkloadMeasures, *, sources: Sequence[str] = ()) -> dict[str, Any]:
    """Plain data for `reports.fit.write_fit_report`: the measured and the generated measures, the
    lognormal fits, the generator params, the family weights, the notes, and the side-by-side
    (``agreement``, `Agreement.as_dict` each)."""
    p, lengths = fitted.payload, fitted.lengths
    return {
        "sources": list(sources),
        "measured": fitted.measures.as_dict(),
        "generated": generated.as_dict(),
        "fit": {"median": p.median, "sigma": p.sigma, "n": p.n, "ks_statistic": p.ks_statistic,
                "ks_p_value": p.ks_p_value},
        "length_fit": {"median": lengths.median, "sigma": lengths.sigma, "n": lengths.n,
                       "ks_statistic": lengths.ks_statistic, "ks_p_value": lengths.ks_p_value},
        "params": _flat_params(fitted.generator_params()),
        "weights": dict(fitted.weights),
        "fallback": fitted.fallback,
        "notes": list(fitted.notes),
        "agreement": [row.as_dict() for row in agreement(fitted.measures, generated)],
    }
