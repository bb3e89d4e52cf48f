"""The build: the modules of the replay's inner loop compiled ahead of time with mypyc, where it can be.

Everything else is declared in pyproject.toml. The compiled modules are the same source files, compiled: their
Python text stays the source of truth and the fallback. With no C compiler (or ``CTXBENCH_PURE_PYTHON=1`` at
install time) nothing is compiled and the install is pure Python; an extension that fails to build is skipped
(``optional``) rather than failing the install. ``harness/build.py`` decides at import which mode runs, from the
record written here (the compiler and a hash of each compiled source), and says so in ``ctxbench bench``.

mypyc rather than Cython: on the replay kernel, compiled alone, mypyc replayed 1.43x as many sessions per second
as the pure-Python modules and Cython 3 (pure-Python mode, the same modules) 1.13x (docs/design.md, "The compiled
hot path").
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
RECORD = ROOT / "harness" / "build_record.json"
#: The compiled modules share one library, ``ctxbench__mypyc``; each module is a small library that loads it.
GROUP = "ctxbench"

#: The modules compiled, each a file of the repository (the list `harness/build.py` reads back from the record).
COMPILED = [
    "harness/core/context.py",
    "harness/core/crn.py",
    "harness/core/messages.py",
    "harness/core/tokens.py",
    "harness/sim/billing.py",
    "harness/sim/clock.py",
    "harness/sim/events.py",
    "harness/sim/kernel.py",
    "harness/sim/loops.py",
    "harness/sim/model.py",
    "harness/sim/tool_player.py",
    "harness/sim/view.py",
]


#: The type check mypyc compiles from, its own rather than pyproject's [tool.mypy] (`make typecheck` checks the
#: project): libraries are Any (calls into them are generic, whatever the build environment holds), and the
#: modules not compiled are read for their types only.
MYPYC_CONFIG = """[mypy]
python_version = 3.11
ignore_missing_imports = True
follow_imports = silent

[mypy-pydantic,pydantic.*,pydantic_core.*,numpy.*,pandas.*,pyarrow.*,tiktoken.*,gigatoken.*,matplotlib.*,hypothesis.*]
follow_imports = skip
follow_imports_for_stubs = True
"""


def _compiler() -> str | None:
    """The C compiler this Python builds extensions with, when it is on PATH."""
    command = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(command)
    return shutil.which(words[0]) if words else None


def _source_hash(path: str) -> str:
    return hashlib.sha256((ROOT / path).read_bytes()).hexdigest()


def _compiled_extensions() -> list[object]:
    RECORD.unlink(missing_ok=True)
    if os.environ.get("CTXBENCH_PURE_PYTHON"):
        print("ctxbench build: CTXBENCH_PURE_PYTHON is set: pure Python, nothing compiled", file=sys.stderr)
        return []
    if _compiler() is None:
        print("ctxbench build: no C compiler on PATH: pure Python, nothing compiled", file=sys.stderr)
        return []
    try:
        import mypy.version
        from mypyc.build import mypycify
    except ImportError:
        print("ctxbench build: mypyc is not installed: pure Python, nothing compiled", file=sys.stderr)
        return []
    config = ROOT / "build" / "mypyc.ini"
    config.parent.mkdir(exist_ok=True)
    config.write_text(MYPYC_CONFIG, encoding="utf-8")
    try:
        extensions = mypycify([f"--config-file={config}", *COMPILED], opt_level="3", group_name=GROUP)
    except (Exception, SystemExit) as e:  # mypyc refused or crashed: the sources still work
        print(f"ctxbench build: mypyc failed ({type(e).__name__}: {e}): pure Python, nothing compiled", file=sys.stderr)
        return []
    for extension in extensions:
        extension.optional = True  # a module that fails to build leaves its pure-Python source in use
    record = {"compiler": f"mypyc {mypy.version.__version__}", "library": f"{GROUP}__mypyc",
              "modules": {path.removesuffix(".py").replace("/", "."): _source_hash(path) for path in COMPILED}}
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return list(extensions)


setup(ext_modules=_compiled_extensions())
