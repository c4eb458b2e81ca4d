"""Every simulation in the test suite runs with the invariant auditor on."""

import os

os.environ.setdefault("DLSCHED_AUDIT", "1")

# ---- hypothesis profiles --------------------------------------------------------------------
# "ci" (the default): hypothesis' default 100 examples, derandomised so that CI runs the same
# examples every time, no per-example deadline (a simulation with the auditor on may take a
# while). "long": DLSCHED_HYPOTHESIS_EXAMPLES=<n> examples per property, random, e.g.
#   DLSCHED_HYPOTHESIS_EXAMPLES=10000 python -m pytest -q tests/test_properties_policies.py
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_LONG_EXAMPLES = os.environ.get("DLSCHED_HYPOTHESIS_EXAMPLES", "").strip()
if _LONG_EXAMPLES:
    if not _LONG_EXAMPLES.isdigit() or int(_LONG_EXAMPLES) < 1:
        raise ValueError(
            f"environment variable DLSCHED_HYPOTHESIS_EXAMPLES={_LONG_EXAMPLES!r}: give a "
            "positive whole number of examples, e.g. 10000 (or unset it for the ci profile)"
        )
    settings.register_profile(
        "long",
        max_examples=int(_LONG_EXAMPLES),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
settings.load_profile("long" if _LONG_EXAMPLES else "ci")
