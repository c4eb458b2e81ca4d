"""Every simulation in the test suite runs with the invariant auditor on; the test tiers.

Two tiers (CONTRIBUTING.md):

- the default, ``python -m pytest``: every test not marked ``slow``, on every core
  (pytest-xdist's ``-n auto``, when pytest-xdist is installed and no ``-n`` is given), with
  the property tests at `FAST_EXAMPLES` examples each;
- the full tier, ``python -m pytest --run-slow`` (what ``.ci/run`` runs): the ``slow`` tests
  too (fidelity against published numbers, long property runs, speed checks), with the
  property tests at hypothesis' 100 examples.

``DLSCHED_HYPOTHESIS_EXAMPLES=<n>`` sets the number of examples in either tier (random
rather than derandomised: the long run).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("DLSCHED_AUDIT", "1")

FAST_EXAMPLES = 10
"""Examples per property test in the default tier: enough to catch a broken invariant on the
common inputs in seconds; the full tier's 100 find the rarer ones."""

FULL_EXAMPLES = 100
"""Examples per property test in the full tier (hypothesis' default)."""

_DEFAULT_MARKEXPR = "not slow"
"""The default tier's ``-m`` (pyproject.toml's addopts), which ``--run-slow`` lifts."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        default=False,
        help=(
            "the full tier, as .ci/run runs it: also the tests marked slow, and the "
            f"property tests at {FULL_EXAMPLES} examples instead of {FAST_EXAMPLES}"
        ),
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Run on every core by default: ``-n auto`` unless ``-n`` was given (``-n 0`` runs in
    this process), pytest-xdist is missing or disabled (``-p no:xdist``), or this is one
    of its workers. A hook rather than addopts, because ``-n`` in addopts is an error
    wherever pytest-xdist is not loaded. (Before xdist's own hook, which resolves "auto".)"""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if config.getoption("numprocesses", None) is None and not config.getoption("collectonly"):
        config.option.numprocesses = "auto"


def pytest_configure(config: pytest.Config) -> None:
    """``--run-slow`` lifts the default ``-m "not slow"``; the hypothesis profile of the tier
    is loaded before any test module is imported (their ``@settings`` inherit from it)."""
    run_slow = config.getoption("run_slow")
    if run_slow and config.option.markexpr == _DEFAULT_MARKEXPR:
        config.option.markexpr = ""
    _load_hypothesis_profile(FULL_EXAMPLES if run_slow else FAST_EXAMPLES)


def _load_hypothesis_profile(examples: int) -> None:
    # The tier's profile: derandomised, so that a run sees the same examples every time, and
    # no per-example deadline (a simulation with the auditor on may take a while). "long":
    # DLSCHED_HYPOTHESIS_EXAMPLES=<n> examples per property, random, e.g.
    #   DLSCHED_HYPOTHESIS_EXAMPLES=10000 python -m pytest --run-slow \
    #       tests/test_properties_policies.py
    quiet = [HealthCheck.too_slow, HealthCheck.data_too_large]
    long_examples = os.environ.get("DLSCHED_HYPOTHESIS_EXAMPLES", "").strip()
    if long_examples:
        if not long_examples.isdigit() or int(long_examples) < 1:
            raise pytest.UsageError(
                f"environment variable DLSCHED_HYPOTHESIS_EXAMPLES={long_examples!r}: give a "
                "positive whole number of examples, e.g. 10000 (or unset it for the tier's "
                f"default: {FAST_EXAMPLES}, or {FULL_EXAMPLES} with --run-slow)"
            )
        settings.register_profile(
            "long", max_examples=int(long_examples), deadline=None, suppress_health_check=quiet
        )
        settings.load_profile("long")
        return
    settings.register_profile(
        "tier", max_examples=examples, deadline=None, derandomize=True, suppress_health_check=quiet
    )
    settings.load_profile("tier")
