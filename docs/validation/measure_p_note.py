"""Measure how often real agents restate a value that a tool output has just shown them.

The mock model's ``p_note`` is the probability that, after reading a tool output that produces facts, the
agent's own text restates each fact. This script estimates it on public agent transcripts::

    python docs/validation/measure_p_note.py TRACES_DIR [--out FILE.json]

A session is a sequence of turns: context (system prompt, task, demonstrations, user messages), agent turns
(the agent's text and its action or tool calls) and observations (tool outputs). For each observation it
extracts the values the observation prints (`extract_values`), keeps only the values that appear nowhere in
any earlier turn (a value the agent already knew is no evidence of noting), and checks whether each such new
value appears verbatim in the next 1, 2 or 3 agent turns. Shares come with Wilson 95% intervals, per value
kind and per source, both per value and per observation (does the agent restate at least one new value).

Sources read (any file under a ``converted`` folder is skipped: those are copies of the same sessions):

- SWE-agent ``.traj`` files: the ``history`` messages before the first assistant message are the context;
  then each ``trajectory`` step is an agent turn (``thought`` + ``action``) followed by its ``observation``.
- tau-bench result files (a JSON list of ``{"task_id", "trial", "traj"}``): ``tool`` messages are
  observations, ``assistant`` messages (content, tool names and arguments) agent turns, the rest context.
- OpenHands LiteLLM completion logs (JSON with ``messages`` and ``response``): per folder, the log with the
  most messages holds the whole conversation; ``tool`` messages, and ``user`` messages that start with
  ``EXECUTION RESULT of`` (prompt-based tool calling), are observations; the response is the last agent turn.

Only the standard library is used, and the output is deterministic (sorted keys, sorted sessions).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The windows: a value counts as restated within window k if one of the next k agent turns holds it.
WINDOWS = (1, 2, 3)
KINDS = ("id", "path", "path_line", "number")
#: z for a two-sided 95% interval.
Z_95 = 1.959963984540054
#: A bare file name (no ``/``) counts as a path only with one of these suffixes, so that attribute access
#: such as ``np.array`` or ``ds.Rows`` is not taken for a file.
FILE_SUFFIXES = frozenset({
    "c", "cc", "cfg", "cpp", "css", "csv", "go", "h", "hpp", "html", "ini", "ipynb", "java", "js", "json",
    "jsonl", "log", "md", "php", "pl", "py", "pyc", "pyi", "rb", "rs", "rst", "sh", "so", "sql", "toml",
    "traj", "ts", "tsx", "txt", "xml", "yaml", "yml", "zip",
})
#: Observations whose text starts so are tool outputs sent as user messages (OpenHands prompt-based calls).
EXECUTION_RESULT = "EXECUTION RESULT of"

_TOKEN = re.compile(r"[A-Za-z0-9_./:~-]+")
# File views print a line-number gutter ("836:" in SWE-agent, "    1\t" in `cat -n`): those numbers are
# positions in a listing, not facts the tool reports, and a 100-line window would otherwise swamp the counts.
_GUTTER = re.compile(r"(?m)^[ \t]*\d+(?::|\t)")
# Keys of JSON or Python dicts ("address1": ...) name fields of a schema, not facts the tool reports.
_DICT_KEY = re.compile(r"[\"'][\w-]+[\"']\s*:")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PATH_LINE = re.compile(r"(?P<path>.+):(?P<line>\d+)(?::\d+)*")
_SUFFIX = re.compile(r"[\w.~-]*[\w~-]\.(?P<suffix>[A-Za-z][A-Za-z0-9]{0,7})")
_ID_PART = re.compile(r"\w{6,}")
_NUMBER_PART = re.compile(r"\d{3,}")
_PART_SEPARATORS = re.compile(r"[./:~-]")
_WORD_CHAR = "A-Za-z0-9_"


@dataclass(frozen=True)
class Turn:
    """One message of a session: ``role`` is ``context``, ``agent`` or ``observation``."""

    role: str
    text: str


@dataclass
class Session:
    """One transcript, named by its file relative to the traces folder (and an index inside it)."""

    name: str
    source: str
    group: str
    turns: list[Turn] = field(default_factory=list)


# Values ------------------------------------------------------------------------------------------------


def is_path(token: str) -> bool:
    """A path: has a ``/`` and a last part with a ``.``-suffix, or is a bare name with a file suffix."""
    if "://" in token:
        return False  # URLs are not file references
    last = token.rsplit("/", 1)[-1]
    match = _SUFFIX.fullmatch(last)
    if match is None:
        return False
    return "/" in token or match.group("suffix").lower() in FILE_SUFFIXES


def is_year(digits: str) -> bool:
    """Four digits from 1900 to 2099: dates and copyright lines, excluded from the numbers."""
    return len(digits) == 4 and 1900 <= int(digits) <= 2099


def classify_token(token: str) -> dict[str, str]:
    """The values (value -> kind) one whitespace/punctuation-delimited token holds."""
    token = token.strip(".:,-")
    if not token:
        return {}
    path_line = _PATH_LINE.fullmatch(token)
    if path_line and is_path(path_line.group("path")):
        return {f"{path_line.group('path')}:{path_line.group('line')}": "path_line"}
    if is_path(token):
        return {token: "path"}
    if "://" in token:
        return {}
    if _UUID.fullmatch(token):
        return {token: "id"}
    values: dict[str, str] = {}
    for part in _PART_SEPARATORS.split(token):
        if _ID_PART.fullmatch(part) and re.search(r"[A-Za-z]", part) and re.search(r"\d", part):
            values[part] = "id"
        elif _NUMBER_PART.fullmatch(part) and not is_year(part):
            values[part] = "number"
    return values


def extract_values(text: str) -> dict[str, str]:
    """Every value (value -> kind) printed in ``text``; line-number gutters and dict keys are left out."""
    values: dict[str, str] = {}
    for token in _TOKEN.findall(_DICT_KEY.sub(" ", _GUTTER.sub(" ", text))):
        values.update(classify_token(token))
    return values


def appears_in(value: str, text: str) -> bool:
    """Whether ``value`` occurs verbatim in ``text`` as a whole token (not inside a longer word or number)."""
    if value not in text:
        return False  # the cheap test first: most values are absent
    pattern = rf"(?<![{_WORD_CHAR}]){re.escape(value)}(?![{_WORD_CHAR}])"
    return re.search(pattern, text) is not None


# Measurement -------------------------------------------------------------------------------------------


@dataclass
class Tally:
    """Counts for one (group, kind): values (or observations) and how many were restated per window."""

    total: int = 0
    restated: dict[int, int] = field(default_factory=lambda: dict.fromkeys(WINDOWS, 0))
    sessions: set[str] = field(default_factory=set)
    observations: int = 0

    def add(self, session: str, hits: dict[int, bool]) -> None:
        """One value (or observation) of ``session``, restated or not in each window."""
        self.total += 1
        self.sessions.add(session)
        for window in WINDOWS:
            self.restated[window] += int(hits[window])


def wilson(successes: int, trials: int) -> list[float]:
    """The Wilson score 95% interval of ``successes / trials`` (``[0, 1]`` when there are no trials)."""
    if trials == 0:
        return [0.0, 1.0]
    share = successes / trials
    denominator = 1 + Z_95**2 / trials
    centre = (share + Z_95**2 / (2 * trials)) / denominator
    half = Z_95 * math.sqrt(share * (1 - share) / trials + Z_95**2 / (4 * trials**2)) / denominator
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def observation_outcomes(session: Session) -> list[tuple[dict[str, str], list[dict[int, bool]]]]:
    """Per observation with a following agent turn: its new values and, per value, restated per window."""
    outcomes = []
    earlier = ""
    for index, turn in enumerate(session.turns):
        if turn.role == "observation":
            following = [later.text for later in session.turns[index + 1:] if later.role == "agent"]
            if following:
                new = {value: kind for value, kind in sorted(extract_values(turn.text).items())
                       if not appears_in(value, earlier)}
                hits = [{window: any(appears_in(value, text) for text in following[:window]) for window in WINDOWS}
                        for value in new]
                outcomes.append((new, hits))
        # Everything shown so far, the observation itself included, is what later turns already know.
        earlier += "\n" + turn.text
    return outcomes


def groups_of(session: Session) -> list[str]:
    """The result groups a session counts in: all sessions, its source, and its source's subgroup."""
    return sorted({"all", session.source, f"{session.source}:{session.group}"})


def measure(sessions: list[Session]) -> dict[str, Any]:
    """Restatement shares per group, per value kind and per observation, with counts and intervals."""
    per_value: dict[str, dict[str, Tally]] = {}
    per_observation: dict[str, Tally] = {}
    for session in sessions:
        for group in groups_of(session):
            kinds = per_value.setdefault(group, {kind: Tally() for kind in (*KINDS, "all")})
            observed = per_observation.setdefault(group, Tally())
            for new, hits in observation_outcomes(session):
                observed.observations += 1
                if not new:
                    continue
                observed.add(session.name, {window: any(hit[window] for hit in hits) for window in WINDOWS})
                for kind in {*new.values(), "all"}:
                    kinds[kind].observations += 1
                for (_, kind), hit in zip(new.items(), hits, strict=True):
                    kinds[kind].add(session.name, hit)
                    kinds["all"].add(session.name, hit)
    return {
        group: {
            "per_value": {kind: summary(tally) for kind, tally in per_value[group].items()},
            "per_observation": summary(per_observation[group], observations_key="observations_scanned"),
        }
        for group in per_value
    }


def summary(tally: Tally, observations_key: str = "observations") -> dict[str, Any]:
    """A tally as JSON: ``n``, sessions, observations and, per window, restated count, share and interval."""
    windows = {
        f"t+1..t+{window}": {
            "restated": tally.restated[window],
            "share": round(tally.restated[window] / tally.total, 4) if tally.total else None,
            "ci95": wilson(tally.restated[window], tally.total),
        }
        for window in WINDOWS
    }
    return {"n": tally.total, "sessions": len(tally.sessions), observations_key: tally.observations,
            "windows": windows}


# Readers -----------------------------------------------------------------------------------------------


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or a list of parts whose ``text`` fields are joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(part.get("text") if isinstance(part, dict) else part) for part in content)
    return str(content)


def agent_text(message: dict[str, Any]) -> str:
    """An assistant message's text and its tool calls' names and arguments (call ids are not the agent's)."""
    pieces = [text_of(message.get("content"))]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        pieces += [str(function.get("name") or ""), str(function.get("arguments") or "")]
    return "\n".join(piece for piece in pieces if piece and piece != "None")


def swe_agent_session(data: dict[str, Any], name: str) -> Session:
    """A SWE-agent ``.traj``: pre-trajectory history as context, then thought+action and observation."""
    group = "replay" if "replay__" in name else "human-thought" if "human_thought__" in name else "model-run"
    session = Session(name=name, source="swe-agent", group=group)
    for message in data.get("history", []):
        if message.get("role") == "assistant":
            break
        session.turns.append(Turn("context", text_of(message.get("content"))))
    for step in data["trajectory"]:
        session.turns.append(Turn("agent", f"{step.get('thought') or ''}\n{step.get('action') or ''}"))
        session.turns.append(Turn("observation", text_of(step.get("observation"))))
    return session


def chat_session(messages: list[dict[str, Any]], name: str, source: str, group: str) -> Session:
    """An openai-chat message list: tool results (or execution results sent as user) are observations."""
    session = Session(name=name, source=source, group=group)
    for message in messages:
        role = message.get("role")
        text = text_of(message.get("content"))
        if role == "assistant":
            session.turns.append(Turn("agent", agent_text(message)))
        elif role == "tool" or (role == "user" and text.startswith(EXECUTION_RESULT)):
            session.turns.append(Turn("observation", text))
        else:
            session.turns.append(Turn("context", text))
    return session


def tau_bench_sessions(data: list[dict[str, Any]], name: str) -> list[Session]:
    """A tau-bench results file: one session per (task, trial)."""
    return [chat_session(entry["traj"], f"{name}#task{entry['task_id']}-trial{entry['trial']}", "tau-bench",
                         "gpt-4o-airline" if "airline" in name else "gpt-4o")
            for entry in data]


def openhands_session(logs: list[dict[str, Any]], name: str) -> Session:
    """OpenHands LiteLLM logs of one conversation: the longest request plus its response message."""
    last = max(logs, key=lambda log: len(log["messages"]))
    response = last["response"]["choices"][0]["message"]
    group = "fncall" if any(message.get("role") == "tool" for message in last["messages"]) else "nonfncall"
    return chat_session([*last["messages"], response], name, "openhands", group)


def read_sessions(root: Path) -> tuple[list[Session], list[dict[str, str]]]:
    """Every session under ``root`` that a reader above understands, and the files skipped, with why."""
    sessions: list[Session] = []
    skipped: list[dict[str, str]] = []
    litellm_logs: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if not path.is_file() or "converted" in path.relative_to(root).parts or path.suffix not in (".traj",
                                                                                                     ".json"):
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        if path.suffix == ".traj" and data.get("trajectory"):
            sessions.append(swe_agent_session(data, name))
        elif isinstance(data, list) and data and isinstance(data[0], dict) and "traj" in data[0]:
            sessions.extend(tau_bench_sessions(data, name))
        elif isinstance(data, dict) and "messages" in data and "response" in data:
            litellm_logs.setdefault(path.parent.relative_to(root).as_posix(), []).append(data)
        else:
            skipped.append({"file": name, "reason": "no trajectory steps" if path.suffix == ".traj"
                            else "not a format read here (no observation/agent turn structure)"})
    for folder, logs in sorted(litellm_logs.items()):
        sessions.append(openhands_session(logs, f"{folder}/"))
    return sorted(sessions, key=lambda session: session.name), skipped


def report(root: Path) -> dict[str, Any]:
    """The whole measurement of the traces under ``root``, as a JSON-ready dict."""
    sessions, skipped = read_sessions(root)
    return {
        "rules": {
            "kinds": {
                "id": "6+ letters/digits/underscores with at least one letter and one digit (hex hashes "
                      "included), or a UUID",
                "path": "a token with '/' whose last part has a .suffix, or a bare name with a file suffix",
                "path_line": "a path followed by ':LINE'",
                "number": "3+ digits, years 1900-2099 excluded",
            },
            "new_value": "not present as a whole token in any earlier turn of the session",
            "restated": "present as a whole token in one of the next k agent turns (thought + action)",
            "not_values": "line-number gutters of file listings and keys of JSON/Python dicts",
        },
        "sessions": [{"name": session.name, "source": session.source, "group": session.group,
                      "observations": sum(turn.role == "observation" for turn in session.turns)}
                     for session in sessions],
        "skipped": skipped,
        "results": measure(sessions),
    }


def main(argv: list[str] | None = None) -> None:
    """Command line: measure TRACES_DIR, print or write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces_dir", type=Path, help="a folder of public agent transcripts")
    parser.add_argument("--out", type=Path, help="write the JSON here instead of printing it")
    arguments = parser.parse_args(argv)
    text = json.dumps(report(arguments.traces_dir), indent=2, sort_keys=True) + "\n"
    if arguments.out:
        arguments.out.write_text(text, encoding="utf-8")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
