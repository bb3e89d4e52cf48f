"""Test-wide settings: hypothesis profiles, plugin isolation, and the browser tests' screenshots.

Every run of the suite, on every machine and with or without ``CI`` set, uses ``ctxbench-ci``: a child
of hypothesis' built-in ``ci`` profile (derandomized, no example database) with a fixed example count,
so ``make test`` executes the same examples everywhere and passes or fails for everyone alike.
Random exploration is separate: ``make test-deep`` (``HYPOTHESIS_PROFILE=deep``) draws many more random
examples with the example database on; every counterexample it finds is fixed at its cause and kept
as an explicit ``@example`` of its property.

The browser tests keep their screenshots (`keep_screenshot`) in ``$CTXBENCH_SCREENSHOTS`` (CI sets it)
or in the session's pytest temporary folder, and the end of the test output lists them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Third-party strategies installed in the environment must not change what the tests see.
os.environ.setdefault("CTXBENCH_NO_PLUGINS", "1")
# A report's stage lines appear only once it has run a second: whether they do must not depend on how
# loaded the machine is when a test checks that an error is exactly one line.
os.environ.setdefault("CTXBENCH_NO_PROGRESS", "1")
# A saved replay is signed with the user's state key, made on first use: the suite makes its own, in a
# folder of its own, and never writes into the tester's home.
if "CTXBENCH_STATE_KEY" not in os.environ and "XDG_STATE_HOME" not in os.environ:
    import tempfile

    os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="ctxbench-test-state-")

#: Examples per property in CI (also quoted in release notes; keep in sync).
CI_EXAMPLES = 200

settings.register_profile(
    "ctxbench-ci",
    parent=settings.get_profile("ci"),
    max_examples=CI_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ctxbench-ci")


#: Screenshots kept by this session's tests: (what it shows, where it is).
KEPT_SCREENSHOTS: list[tuple[str, Path]] = []


@pytest.fixture(scope="session")
def screenshot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("CTXBENCH_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.getbasetemp() / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder.resolve()


@pytest.fixture
def keep_screenshot(screenshot_dir: Path, request: pytest.FixtureRequest) -> Callable[[str, Path], Path]:
    """Copy a test's screenshot where it outlives the test and list it at the end of the output."""

    def keep(what: str, png: Path) -> Path:
        kept = screenshot_dir / png.name
        shutil.copyfile(png, kept)
        # Through the test's report: under pytest-xdist the test runs in a worker, and only its reports
        # reach the process that writes the summary.
        request.node.user_properties.append((SCREENSHOT_PROPERTY, (what, str(kept))))
        return kept

    return keep


#: The user property a kept screenshot travels in.
SCREENSHOT_PROPERTY = "ctxbench_screenshot"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        for name, value in report.user_properties:
            if name == SCREENSHOT_PROPERTY:
                what, path = value
                KEPT_SCREENSHOTS.append((str(what), Path(path)))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if KEPT_SCREENSHOTS:
        terminalreporter.section("browser screenshots")
        for what, path in KEPT_SCREENSHOTS:
            terminalreporter.write_line(f"{what}: {path}")
