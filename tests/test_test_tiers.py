"""The test tiers (tests/conftest.py, pyproject.toml): the default run leaves out the tests
marked slow and runs on every core, ``--run-slow`` runs everything, and each tier sets the
number of hypothesis examples.

Each check runs pytest in a subprocess on a two-test project of its own that carries this
repository's pytest settings and conftest, so that it sees exactly what a contributor's
``python -m pytest`` sees (and leaves this session's hypothesis profile alone).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TWO_TESTS = """
import pytest
from hypothesis import settings


def test_fast():
    print(f"examples={settings.default.max_examples}")


@pytest.mark.slow
def test_slow():
    pass
"""


def _pytest_settings() -> str:
    """The ``[tool.pytest.ini_options]`` table of the repository's pyproject.toml."""
    text = (ROOT / "pyproject.toml").read_text()
    match = re.search(r"^\[tool\.pytest\.ini_options\]\n.*?(?=^\[)", text, re.M | re.S)
    assert match, "pyproject.toml has no [tool.pytest.ini_options] table"
    return match.group(0)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with the repository's pytest settings, its tests/conftest.py and one fast
    and one slow test."""
    (tmp_path / "pyproject.toml").write_text(_pytest_settings())
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tests / "test_two.py").write_text(TWO_TESTS)
    return tmp_path


def _run(project: Path, *args: str) -> str:
    """`python -m pytest tests/test_two.py ARGS -s -rA` in `project`; its output (it must pass).
    The ``auto`` of ``-n auto`` is one worker here, to keep the check cheap."""
    env = {k: v for k, v in os.environ.items() if k != "DLSCHED_HYPOTHESIS_EXAMPLES"}
    env["PYTEST_XDIST_AUTO_NUM_WORKERS"] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_two.py", "-s", "-rA", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_default_run_leaves_out_slow_tests_and_runs_on_every_core(project):
    """`python -m pytest`: the slow test is deselected, the others run on pytest-xdist's
    workers (`-n auto`: one per core, one here)."""
    pytest.importorskip("xdist")
    out = _run(project, "-v")
    assert "created: 1/1 worker" in out, out
    assert re.search(r"1 worker \[1 item\]", out) and "1 passed" in out
    assert "PASSED tests/test_two.py::test_fast" in out and "test_slow" not in out


def test_run_slow_runs_the_slow_tests_too_with_100_examples(project):
    """`--run-slow` (what .ci/run runs): both tests, property tests at 100 examples."""
    out = _run(project, "--run-slow", "-n", "0")
    assert "2 passed" in out and "deselected" not in out
    assert "examples=100" in out


def test_the_default_tier_runs_10_examples_in_process_without_xdist(project):
    """With pytest-xdist disabled (``-p no:xdist``) the default run still works, in this
    process, at 10 examples per property."""
    out = _run(project, "-p", "no:xdist")
    assert "1 passed, 1 deselected" in out
    assert "examples=10\n" in out
