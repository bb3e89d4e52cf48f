"""The kept scripts under docs/validation/, loaded as modules for their tests (they are files, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

#: Where the scripts live.
SCRIPTS = Path(__file__).resolve().parent.parent.parent / "docs" / "validation"


def load_script(name: str) -> ModuleType:
    """``docs/validation/<name>.py`` as a module, registered in ``sys.modules`` so its dataclasses resolve."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
