"""Test-wide settings: hypothesis profiles and plugin isolation.

Every run of the suite, on every machine and with or without ``CI`` set, uses ``ctxbench-ci``: a child
of hypothesis' built-in ``ci`` profile (derandomized, no example database) with a fixed example count,
so ``make test`` executes the same examples everywhere and passes or fails for everyone alike.
Random exploration is separate: ``make test-deep`` (``HYPOTHESIS_PROFILE=deep``) draws many more random
examples with the example database on; every counterexample it finds is fixed at its cause and kept
as an explicit ``@example`` of its property.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Third-party strategies installed in the environment must not change what the tests see.
os.environ.setdefault("CTXBENCH_NO_PLUGINS", "1")
# A report's stage lines appear only once it has run a second: whether they do must not depend on how
# loaded the machine is when a test checks that an error is exactly one line.
os.environ.setdefault("CTXBENCH_NO_PROGRESS", "1")

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
