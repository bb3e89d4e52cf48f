"""Size limits on the library's functions and classes.

Every module under harness/, strategies/, scenarios/ and reports/ is parsed with ``ast`` and checked for:

- functions and methods (nested ones included) longer than 100 lines, counted from the ``def`` line to the
  last line of the body, decorators excluded;
- classes longer than 500 lines, counted the same way, unless the class docstring holds a paragraph whose
  first line starts with ``Size:``. That paragraph says why the class is one unit rather than several,
  so a reader who meets a long class learns at once that its length was weighed and why it stands.

A failure names every offender with its file, line and length, so one run lists all that need work.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "strategies", "scenarios", "reports")
MAX_FUNCTION_LINES = 100
MAX_CLASS_LINES = 500
SIZE_MARK = "Size:"


def _modules() -> list[Path]:
    """Every Python source file of the checked packages, in a stable order."""
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def _length(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> int:
    """Lines from the ``def``/``class`` line to the end of the body; decorators sit above ``lineno``."""
    end = node.end_lineno if node.end_lineno is not None else node.lineno
    return end - node.lineno + 1


def _justified(node: ast.ClassDef) -> bool:
    """Whether the class docstring has a line starting with ``Size:``."""
    doc = ast.get_docstring(node) or ""
    return any(line.strip().startswith(SIZE_MARK) for line in doc.splitlines())


def offenders(paths: list[Path], root: Path = ROOT) -> list[str]:
    """One line per over-long function or unjustified over-long class in ``paths``, located from ``root``."""
    found: list[str] = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(root)
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = _length(node)
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{where}:{node.lineno} function {node.name}: {length} lines")
            elif isinstance(node, ast.ClassDef):
                length = _length(node)
                if length > MAX_CLASS_LINES and not _justified(node):
                    found.append(f"{where}:{node.lineno} class {node.name}: {length} lines, no '{SIZE_MARK}' note")
    return found


def test_checker_sees_every_package() -> None:
    """An empty walk would pass vacuously, so the packages must hold modules."""
    paths = _modules()
    for package in PACKAGES:
        assert any(path.relative_to(ROOT).parts[0] == package for path in paths), package


def test_checker_flags_long_function_and_class(tmp_path: Path) -> None:
    """The checker itself catches both kinds of offender and honours the ``Size:`` note."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_CLASS_LINES))
    long_function = "@staticmethod\ndef long() -> None:\n" + "\n".join(f"    y{i} = {i}" for i in range(100)) + "\n"
    fine_function = "@staticmethod\ndef fine() -> None:\n" + "\n".join(f"    y{i} = {i}" for i in range(99)) + "\n"
    bare = tmp_path / "bare.py"
    bare.write_text(f"class Big:\n    '''A big class.'''\n{body}\n" + long_function + fine_function, encoding="utf-8")
    noted = tmp_path / "noted.py"
    noted.write_text(f"class Big:\n    '''A big class.\n\n    Size: one unit.\n    '''\n{body}\n", encoding="utf-8")
    found = [line.split(" ", 1)[1] for line in offenders([bare, noted], tmp_path)]
    assert found == ["class Big: 502 lines, no 'Size:' note", "function long: 101 lines"]


def test_no_function_or_class_over_the_limits() -> None:
    """Every function fits in 100 lines and every class in 500, or says why it does not."""
    found = offenders(_modules())
    assert not found, "too long:\n" + "\n".join(found)
