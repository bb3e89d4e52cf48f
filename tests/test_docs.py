"""Every reference in the project's documents points inside the repository.

- Links: every relative Markdown link ``[text](target)`` (and reference definition ``[ref]: target``) of
  README.md and docs/**/*.md names an existing file or folder, relative to the document; an anchor
  (``#part``, alone or after a Markdown file) names a heading of that file, slugged as GitHub does, or an
  HTML ``id``/``name`` in it. Links with a scheme (``https:``, ``mailto:``) are not checked.
- Paths: every repository path in an inline code span of README.md and docs/*.md, and every repository
  path in the output of ``ctxbench --help``, each subcommand's ``--help``, ``ctxbench list strategies``
  and ``ctxbench list scenarios`` (plain text there: no backticks needed), exists.
- Outside documents: no tracked text file names a document that lives outside the repository.

What counts as a repository path, the one rule of `repo_path`: a whitespace-separated token, its
surrounding punctuation and a ``:line`` or ``#anchor`` suffix removed, that starts with one of the
repository's top-level names (`TOP_LEVEL`) and contains a ``/`` or ends in one of `PATH_SUFFIXES`.
Run outputs (``runs/...``, ``RUN_DIR/...``, ``OUT``) never start with a top-level name, so they are not
paths; a token holding a placeholder or a pattern (any of `PLACEHOLDER_CHARS`, or ``...``), such as
``strategies/<name>.py`` or ``tests/properties/test_parity_*.py``, is not one either.

Fenced code blocks are skipped by both Markdown checks: they hold commands and layouts, not references.
Each checker is a plain function over a root folder, so the tests at the end feed it made-up documents
and check that it reports what is broken.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import unquote

import pytest

from harness.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
#: The repository's top-level folders (a path starts with one and a slash) and files.
TOP_DIRS = ("harness", "strategies", "scenarios", "reports", "tests", "docs", "examples", ".ci")
TOP_FILES = ("Makefile", "pyproject.toml", "README.md")
TOP_LEVEL = (*TOP_DIRS, *TOP_FILES)
PATH_SUFFIXES = (".py", ".md", ".toml", ".json", ".parquet")
#: A token with any of these is a placeholder or a pattern, not a path.
PLACEHOLDER_CHARS = frozenset("<>*?{}[]$|")
#: Punctuation around a path in prose: ``(docs/strategies.md 3.5)``, ``"examples/sdk.toml",``.
SURROUNDING = "`'\"()[],;:.!"
#: The documents whose links are checked, and those whose inline code is checked for paths.
LINKED_DOCUMENTS = ("README.md", "docs/**/*.md")
PATH_DOCUMENTS = ("README.md", "docs/*.md")
#: Names of documents kept outside the repository, which no tracked file may mention. Each is written
#: in two pieces so that this file does not mention them itself.
OUTSIDE_DOCUMENTS = ("../" "shared", "spec" "s/mock-model", "spec" "s/strategies", "DESIGN" ".md", "STYLE" ".md")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)
_LINK = re.compile(r"(?<![\\`])!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                   r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^<>\n]*>|\S+)", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_HTML_ID = re.compile(r"<[a-zA-Z][^>]*\s(?:id|name)=[\"']([^\"']+)[\"']")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


# Markdown structure ----------------------------------------------------------------------------------


def prose(text: str) -> str:
    """``text`` with its fenced code blocks blanked, line breaks kept (so positions keep their line)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
            out.append("")
        elif fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip()[len(opening.group(1)):].strip():
                fence = None
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def without_code_spans(text: str) -> str:
    """``text`` with every inline code span blanked (newlines kept)."""
    return _CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def code_spans(text: str) -> Iterator[tuple[int, str]]:
    """(line number, content) of every inline code span outside fenced blocks."""
    body = prose(text)
    for m in _CODE_SPAN.finditer(body):
        yield body.count("\n", 0, m.start()) + 1, m.group(2)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lowercased, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a Markdown text defines: its headings' slugs (repeats numbered -1, -2, ... as GitHub
    numbers them) and the ids and names of its HTML elements."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    lines = prose(text).split("\n")
    for i, line in enumerate(lines):
        heading: str | None = None
        atx = _ATX.match(line)
        if atx:
            heading = atx.group(2) or ""
        elif _SETEXT.match(line) and i > 0:
            previous = lines[i - 1]
            if previous.strip() and not re.match(r"^ {0,3}([|>#*+-]|\d+[.)])", previous):
                heading = previous.strip()
        if heading is None:
            continue
        slug = github_slug(heading)
        found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    found.update(_HTML_ID.findall(text))
    return found


def link_targets(text: str) -> Iterator[tuple[int, str]]:
    """(line number, target) of every inline link, image and reference definition outside code."""
    body = without_code_spans(prose(text))
    for pattern in (_LINK, _DEFINITION):
        for m in pattern.finditer(body):
            target = m.group(1)
            if target.startswith("<") and target.endswith(">"):
                target = target[1:-1]
            yield body.count("\n", 0, m.start()) + 1, target


# The checkers ----------------------------------------------------------------------------------------


def broken_links(document: Path, root: Path = ROOT) -> list[str]:
    """``<doc>:<line>: <target> (why)`` for each relative link of ``document`` that points at nothing in
    ``root`` or at an anchor its file does not define."""
    text = document.read_text(encoding="utf-8")
    name = document.relative_to(root).as_posix()
    problems = []
    for line, target in link_targets(text):
        if not target or _SCHEME.match(target) or target.startswith("//"):
            continue
        path_part, _, fragment = target.partition("#")
        path_part = unquote(path_part)
        if path_part.startswith("/"):
            problems.append(f"{name}:{line}: {target} (an absolute path: links are relative to the document)")
            continue
        resolved = (document.parent / path_part).resolve() if path_part else document.resolve()
        if not resolved.is_relative_to(root.resolve()):
            problems.append(f"{name}:{line}: {target} (outside the repository)")
            continue
        if not resolved.exists():
            problems.append(f"{name}:{line}: {target} (no such file or folder)")
            continue
        if not fragment or not resolved.is_file() or resolved.suffix != ".md":
            continue
        if unquote(fragment).lower() not in {a.lower() for a in anchors(resolved.read_text(encoding="utf-8"))}:
            problems.append(f"{name}:{line}: {target} (no heading or id {fragment!r} in "
                            f"{resolved.relative_to(root.resolve()).as_posix()})")
    return problems


def repo_path(token: str) -> str | None:
    """The repository path ``token`` names (the rule of the module docstring), or None."""
    token = token.strip(SURROUNDING)
    token = re.sub(r"(:\d+)+$", "", token).partition("#")[0].rstrip(SURROUNDING)
    if not token or "..." in token or "\u2026" in token or PLACEHOLDER_CHARS & set(token):
        return None
    first = token.split("/", 1)[0]
    if first not in TOP_LEVEL or (first in TOP_DIRS and "/" not in token):
        return None
    if "/" not in token and not token.endswith(PATH_SUFFIXES):
        return None
    return token


def missing_paths(text: str, where: str, root: Path = ROOT) -> list[str]:
    """``<where>: <path>`` for each repository path among the whitespace-separated tokens of ``text``
    that does not exist under ``root``."""
    return [f"{where}: {path}" for token in text.split()
            if (path := repo_path(token)) is not None and not (root / path).exists()]


def missing_code_paths(document: Path, root: Path = ROOT) -> list[str]:
    """`missing_paths` of the inline code spans of a Markdown ``document``, each with its line."""
    name = document.relative_to(root).as_posix()
    text = document.read_text(encoding="utf-8")
    return [problem for line, span in code_spans(text) for problem in missing_paths(span, f"{name}:{line}", root)]


def outside_references(text: str) -> list[str]:
    """The names of outside documents ``text`` mentions."""
    return [name for name in OUTSIDE_DOCUMENTS if name in text]


# The repository's documents and the CLI's output --------------------------------------------------------


def documents(patterns: Sequence[str]) -> list[Path]:
    return sorted({p for pattern in patterns for p in ROOT.glob(pattern) if p.is_file()})


DOCS_LINKED = [p for p in documents(LINKED_DOCUMENTS) if p.name != "README.md" or p.parent != ROOT]
DOCS_WITH_PATHS = [p for p in documents(PATH_DOCUMENTS) if p.name != "README.md" or p.parent != ROOT]


def _doc_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command of ``parser`` as its argv prefix: the parser itself, then each subcommand, nested."""
    yield prefix
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from command_paths(sub, (*prefix, name))


@pytest.mark.parametrize("document", DOCS_LINKED, ids=_doc_id)
def test_links_of_the_docs_resolve(document: Path) -> None:
    """Every relative link of a document under docs/ names an existing file or folder, and every anchor
    a heading of its file."""
    assert broken_links(document) == []


@pytest.mark.parametrize("document", DOCS_WITH_PATHS, ids=_doc_id)
def test_paths_in_the_docs_exist(document: Path) -> None:
    """Every repository path in the inline code of a document of docs/ exists."""
    assert missing_code_paths(document) == []


def test_readme_links_and_paths_resolve() -> None:
    """README.md: every relative link and anchor resolves, and every repository path in its inline code
    exists. The failures name the line of README.md to fix."""
    readme = ROOT / "README.md"
    assert broken_links(readme) + missing_code_paths(readme) == []


def test_paths_in_the_cli_output_exist(capsys: pytest.CaptureFixture[str]) -> None:
    """Every repository path that ``ctxbench --help``, every subcommand's ``--help``, ``ctxbench list
    strategies`` and ``ctxbench list scenarios`` print exists."""
    problems: list[str] = []
    commands = [*([*path, "--help"] for path in command_paths(build_parser())),
                ["list", "strategies"], ["list", "scenarios"]]
    for argv in commands:
        try:
            code = main(argv)
        except SystemExit as e:  # --help exits once it has printed
            code = e.code if isinstance(e.code, int) else 1
        out = capsys.readouterr()
        assert code == 0, f"ctxbench {' '.join(argv)} exited {code}: {out.err}"
        problems += missing_paths(out.out + out.err, f"ctxbench {' '.join(argv)}")
    assert len(commands) > 10
    assert problems == []


def test_no_tracked_file_mentions_an_outside_document() -> None:
    """No tracked text file names a document kept outside the repository: every reference the project
    makes is to a file it holds."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    problems = []
    for name in filter(None, listed.decode("utf-8", "surrogateescape").split("\0")):
        path = ROOT / name
        if not path.is_file():  # deleted in the work tree, not yet in the index
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # binary: images, tables
            continue
        found = outside_references(data.decode("utf-8", "replace"))
        if found:
            problems.append(f"{name}: {', '.join(found)}")
    assert problems == []


# The checkers find what is broken ------------------------------------------------------------------------


def test_the_link_checker_reports_broken_links_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other page\n\n## The `sessions.parquet` columns\n")
    doc = tmp_path / "docs" / "page.md"
    doc.write_text(
        "# A page\n\n"
        "[fine](other.md) [folder](../docs) [anchor](other.md#the-sessionsparquet-columns) [self](#a-page)\n"
        "[gone](missing.md)\n"
        "[bad anchor](other.md#no-such-heading)\n"
        "[outside](../../elsewhere.md) [absolute](/etc/hosts)\n"
        "[web](https://example.com/x.md) `[in code](nothing.md)`\n\n"
        "```\n[in a fence](nothing.md)\n```\n\n"
        "[ref]: gone-too.md\n"
    )
    assert broken_links(doc, tmp_path) == [
        "docs/page.md:4: missing.md (no such file or folder)",
        "docs/page.md:5: other.md#no-such-heading (no heading or id 'no-such-heading' in docs/other.md)",
        "docs/page.md:6: ../../elsewhere.md (outside the repository)",
        "docs/page.md:6: /etc/hosts (an absolute path: links are relative to the document)",
        "docs/page.md:13: gone-too.md (no such file or folder)",
    ]


def test_github_slugs_and_repeated_headings() -> None:
    text = "# Which way imports go\n## sessions.parquet columns\n### 3.4 `summarize`\n## Notes\n## Notes\n"
    assert anchors(text) >= {"which-way-imports-go", "sessionsparquet-columns", "34-summarize", "notes", "notes-1"}


def test_the_path_checker_reports_missing_paths_and_skips_placeholders(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "there.py").write_text("")
    doc = tmp_path / "docs" / "page.md"
    doc.write_text(
        "See `harness/there.py`, `harness/gone.py` and `ctxbench run examples/none.toml`.\n"
        "Not paths: `runs/default/report.html`, `strategies/<name>.py`, `tests/test_*.py`, `harness.core`,\n"
        "`RUN_DIR/explorer.html`, `OUT`, `Makefile`.\n"
        "```\nharness/in_a_fence.py\n```\n"
    )
    assert missing_code_paths(doc, tmp_path) == [
        "docs/page.md:1: harness/gone.py",
        "docs/page.md:1: examples/none.toml",
    ]


def test_the_cli_path_rule_reads_plain_text(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "strategies.md").write_text("")
    text = "[a source (docs/strategies.md 3.5)] (default: docs/missing.md, <doc dir>/validation/)"
    assert missing_paths(text, "ctxbench x", tmp_path) == ["ctxbench x: docs/missing.md"]


def test_the_outside_reference_checker_finds_each_name() -> None:
    for name in OUTSIDE_DOCUMENTS:
        assert outside_references(f"as {name} says") == [name]
    assert outside_references("docs/design.md and docs/strategies.md") == []
