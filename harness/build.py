"""Which build of the replay's hot path runs: the modules compiled by mypyc (setup.py), or their Python sources.

Decided once, when the ``harness`` package is first imported, before any compiled module is. The compiled
modules run unless:

- ``CTXBENCH_PURE_PYTHON=1`` is in the environment (how the tables of the two builds are compared);
- there is no build record (``build_record.json``, written by setup.py when it compiles: nothing was
  compiled), or it is damaged;
- the library the compiled modules share is missing (it failed to build);
- a compiled module's source no longer matches the hash the record holds (an edited checkout whose build is
  older than the edit), said in one line on stderr naming the file, so an edit is never silently ignored.

Then every module of the project loads from its source (the compiled modules share one library: all of them
or none). Nothing here imports another module of the project: it runs first. The tables are byte-identical
in both builds (tests/harness/test_build.py); only the speed differs. What compiling asks of the source, and
`pickle_frozen_by_fields`: docs/design.md, "The compiled hot path".
"""

from __future__ import annotations

import copyreg
import dataclasses
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["PURE_PYTHON_VARIABLE", "Build", "current", "decide", "pickle_frozen_by_fields"]

#: Set to 1 (any non-empty value but 0), the Python sources run even where compiled modules are present.
PURE_PYTHON_VARIABLE = "CTXBENCH_PURE_PYTHON"
RECORD = Path(__file__).resolve().parent / "build_record.json"
#: The packages whose modules setup.py may compile.
PACKAGES = ("harness", "strategies")
ROOT = RECORD.parent.parent


@dataclass(frozen=True, slots=True)
class Build:
    """The build in use: ``compiled`` (the record's modules load from their compiled libraries) or not, the
    compiler that made it, the modules, and why the sources run when they do."""

    compiled: bool
    compiler: str | None
    modules: tuple[str, ...]
    reason: str

    def describe(self) -> str:
        """One phrase for a table or a manifest, e.g. ``compiled (mypyc 2.4.1, 21 modules)``."""
        if self.compiled:
            return f"compiled ({self.compiler}, {len(self.modules)} modules)"
        return f"pure Python ({self.reason})"


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Finds the project's modules as their ``.py`` sources, ahead of any compiled library beside them (every
    module of the project's packages, not only the record's: a damaged record names none)."""

    def __init__(self, packages: Sequence[str] = PACKAGES) -> None:
        self.prefixes = tuple(f"{package}." for package in packages)

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if path is None or not fullname.startswith(self.prefixes):
            return None
        name = fullname.rpartition(".")[2]
        for folder in path:
            source = Path(folder) / f"{name}.py"
            if source.is_file():
                return importlib.util.spec_from_file_location(fullname, source)
        return None  # a package, or a module with no source beside it: the usual finders


_current: Build | None = None


def _record() -> tuple[dict[str, object] | None, str]:
    """The build record, or None and why not ("" when there is none: nothing was compiled)."""
    try:
        text = RECORD.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as e:
        return None, f"{RECORD.name} cannot be read ({type(e).__name__})"
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("modules"), dict):
        return None, f"{RECORD.name} is damaged"
    return record, ""


def _source(module: str) -> Path:
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def _changed(modules: dict[str, object]) -> str | None:
    """The first compiled module whose source differs from the one compiled (a missing source is not a
    change: an installed wheel may hold the compiled library alone)."""
    for module, digest in sorted(modules.items()):
        source = _source(module)
        if source.is_file() and hashlib.sha256(source.read_bytes()).hexdigest() != digest:
            return str(source.relative_to(ROOT))
    return None


def decide() -> Build:
    """Decide the build (once per process) and, when the sources must run, put them ahead of the compiled
    libraries on the import path."""
    global _current
    if _current is not None:
        return _current
    record, problem = _record()
    modules: dict[str, object] = dict(record["modules"]) if record is not None else {}  # type: ignore[call-overload]
    compiler = str(record.get("compiler")) if record is not None else None
    names = tuple(sorted(modules))
    flag = os.environ.get(PURE_PYTHON_VARIABLE, "")
    if flag and flag != "0":
        reason = f"{PURE_PYTHON_VARIABLE} is set"
    elif record is None:
        reason = problem or "nothing compiled: no C compiler at install, or an install without the build"
    elif importlib.util.find_spec(str(record.get("library"))) is None:
        # Its modules' own libraries may be there (each builds on its own): without the shared one they fail.
        reason = f"the compiled library {record.get('library')} is missing"
    else:
        changed = _changed(modules)
        reason = "" if changed is None else f"{changed} changed since the compiled build"
        if changed is not None:
            print(f"ctxbench: {changed} changed since the compiled build; running the Python sources "
                  "(reinstall, e.g. `make setup`, to compile it again)", file=sys.stderr)
    if reason:
        sys.meta_path.insert(0, _SourcesFirst())
    _current = Build(not reason, compiler, names, reason)
    return _current


def current() -> Build:
    """The build in use, and whether its compiled modules really loaded: a compiled build whose libraries
    are missing or failed to build (setup.py builds them as optional) reports the sources it fell back to."""
    build = decide()
    if not build.compiled:
        return build
    missing = [m for m in build.modules if not _loads_compiled(m)]
    if missing:
        return Build(False, build.compiler, build.modules, f"{missing[0]} has no compiled library")
    return build


def _loads_compiled(module: str) -> bool:
    loaded = sys.modules.get(module)
    if loaded is None:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
    else:
        origin = getattr(loaded, "__file__", None)
    return origin is not None and not origin.endswith(".py")


def pickle_frozen_by_fields(namespace: dict[str, object]) -> None:
    """Pickle (and copy) the frozen dataclasses a module defines field by field, in both builds.

    Compiled, a frozen dataclass restores its pickled state through its own ``__setattr__``, which refuses
    every assignment; the reduction registered here rebuilds it as the dataclass's own pure-Python code does
    (``object.__setattr__`` per field). Registered in both builds, so a pickle made by one (a saved replay, a
    batch of recorded sessions) loads in the other. Each compiled module calls it last with ``globals()``.
    """
    module = namespace.get("__name__")
    for value in list(namespace.values()):
        params = getattr(value, "__dataclass_params__", None)
        if isinstance(value, type) and value.__module__ == module and params is not None and params.frozen:
            copyreg.pickle(value, _reduce_frozen)


def _reduce_frozen(obj: object) -> tuple[Callable[..., object], tuple[Any, ...]]:
    return _rebuild_frozen, (type(obj), tuple((f.name, getattr(obj, f.name))
                                              for f in dataclasses.fields(obj)))  # type: ignore[arg-type]


def _rebuild_frozen(cls: Any, items: tuple[tuple[str, object], ...]) -> object:
    obj = cls.__new__(cls)  # a compiled class refuses object.__new__
    for name, value in items:
        object.__setattr__(obj, name, value)
    return obj
