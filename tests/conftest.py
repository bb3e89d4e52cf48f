"""Test-wide settings: hypothesis profiles and plugin isolation.

With ``CI`` set, hypothesis loads its built-in ``ci`` profile (derandomized, no example database);
our ``ctxbench-ci`` profile is a child of it that also fixes the example count, so every run of the
suite executes the same examples. Locally, ``dev`` runs a few more examples with the database on.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Third-party strategies installed in the environment must not change what the tests see.
os.environ.setdefault("CTXBENCH_NO_PLUGINS", "1")

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
    "dev",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ctxbench-ci" if os.environ.get("CI") else "dev"))
