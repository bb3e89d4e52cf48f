"""Every ```python block of README.md runs as pasted: each in a fresh interpreter of its own (a file in an
empty folder, warnings as errors), in the README's order. A failure names the block by its line and first
line. Blocks that need strands-agents (an optional extra, in the dev one) are skipped only when it is
not installed."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: A block needing an optional extra names its package in an import.
EXTRAS = {"strands": re.compile(r"^\s*(from|import) strands\b|strands_bridge", re.MULTILINE)}


@dataclass(frozen=True)
class Block:
    line: int  # of the block's first code line in README.md
    code: str

    @property
    def name(self) -> str:
        first = next((line for line in self.code.splitlines() if line.strip()), "")
        return f"README.md:{self.line}: {first.strip()}"


def python_blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, in order."""
    blocks: list[Block] = []
    current: list[str] | None = None
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        if current is None:
            if line.strip() == "```python":
                current, start = [], number + 1
        elif line.strip() == "```":
            blocks.append(Block(start, "\n".join(current) + "\n"))
            current = None
        else:
            current.append(line)
    assert current is None, f"README.md:{start}: a ```python block is never closed"
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def run_block(block: Block, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run ``block`` as a script in ``folder`` with warnings as errors; its state key (a restart block
    signs what it saves) is kept in ``folder``, not the user's. The script's lines are the README's
    (blank lines before the block), so a traceback's line numbers are README.md's."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "README.md.py"
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CTXBENCH_STATE_KEY"}
    env |= {"PYTHONWARNINGS": "error", "XDG_STATE_HOME": str(folder / "state")}
    return subprocess.run([sys.executable, "-W", "error", str(script)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def check(block: Block, folder: Path) -> None:
    result = run_block(block, folder)
    if result.returncode != 0:
        pytest.fail(f"{block.name}\nexit {result.returncode}\n{result.stderr}", pytrace=False)
    assert "Warning" not in result.stderr, f"{block.name}\n{result.stderr}"


def test_the_readme_has_its_python_blocks() -> None:
    # The restart, the Python API, the testing kit and the strands bridge.
    assert len(BLOCKS) >= 4
    assert all(block.code.strip() for block in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i, _ in enumerate(BLOCKS, 1)])
def test_a_readme_block_runs_as_pasted(block: Block, tmp_path: Path) -> None:
    for package, pattern in EXTRAS.items():
        if pattern.search(block.code) and importlib.util.find_spec(package) is None:
            pytest.skip(f"{block.name}: needs {package} (pip install 'ctxbench[{package}]')")
    check(block, tmp_path)


def test_a_broken_block_fails_naming_its_line(tmp_path: Path) -> None:
    """The check above fails on a block that raises, with the block's line and first line."""
    broken = Block(12, "import strategies\nstrategies.create('sliding_window').apply(ctx)\n")
    with pytest.raises(pytest.fail.Exception) as failure:
        check(broken, tmp_path)
    assert str(failure.value).startswith("README.md:12: import strategies")
    assert "NameError" in str(failure.value)
