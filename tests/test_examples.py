"""Every script in examples/ runs on bundled data and writes its figure and table."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def test_there_are_examples():
    """The examples folder holds the scripts the docs gallery shows."""
    assert {p.stem for p in SCRIPTS} >= {"compare_policies", "write_a_policy", "capacity_whatif"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_example_runs_and_writes_its_figure(script, tmp_path):
    """The script exits 0 in a fresh process and writes <name>.png and <name>.csv."""
    env = {**os.environ, "MPLBACKEND": "Agg"}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parent.parent / "src"), env.get("PYTHONPATH", "")]
    )
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    stem = script.stem.replace("_", "-")
    assert (tmp_path / f"{stem}.png").stat().st_size > 10_000
    assert (tmp_path / f"{stem}.csv").read_text().count("\n") >= 3


DOCS = EXAMPLES.parent / "docs"
MARKED = re.compile(r"<!-- docs-example.*?-->\s*```python\n(.*?)```", re.S)
PAGES = sorted(p for p in DOCS.rglob("*.md") if MARKED.search(p.read_text()))


def test_docs_mark_runnable_blocks():
    """The how-to pages have code blocks marked to run (so they cannot rot)."""
    assert {p.stem for p in PAGES} >= {"estimators", "overheads", "streaming"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_docs_marked_blocks_run(page, tmp_path, monkeypatch):
    """Every marked block of a docs page runs, in order, in one namespace, in a fresh folder."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for block in MARKED.findall(page.read_text()):
        exec(compile(block, str(page), "exec"), namespace)
