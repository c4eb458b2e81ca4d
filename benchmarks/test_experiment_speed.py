"""pytest-benchmark suite: running an experiment grid — in-process vs a local process pool.

Not part of the default test run. Two grids: configs/experiments/quickstart.yaml (16 runs of
the bundled 60-job trace: mostly the cost of starting workers) and
benchmarks/philly_day_grid.yaml (6 runs of the bundled Philly day: where a pool pays off).
Each round writes a fresh results directory, and each benchmark asserts the number of runs
and jobs so it cannot silently measure a different grid. ``extra_info`` holds the ratio of
pool to in-process time, comparable across machines with the same CPU count.

    python -m pytest benchmarks/test_experiment_speed.py --benchmark-autosave
"""

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from dlsched.experiments import load_experiment, run_experiment

pytestmark = pytest.mark.benchmark_suite

HERE = Path(__file__).resolve().parent
GRIDS = {  # name: (file, runs, jobs per run, rounds)
    "quickstart": (HERE.parent / "configs" / "experiments" / "quickstart.yaml", 16, 60, 3),
    "philly-day": (HERE / "philly_day_grid.yaml", 6, 2302, 1),
}
EXECUTORS = {"in-process": ("local", 1), "pool": ("process", os.cpu_count() or 1)}
_counter = itertools.count()
_walls: dict[tuple[str, str], float] = {}


@pytest.fixture(scope="module")
def scratch():
    folder = Path(tempfile.mkdtemp(prefix="dlsched-bench-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("grid", list(GRIDS))
@pytest.mark.parametrize("mode", list(EXECUTORS))
def test_grid(benchmark, scratch, grid, mode):
    """Every run of the grid into an empty results directory."""
    path, runs, jobs_per_run, rounds = GRIDS[grid]
    experiment = load_experiment(path)
    executor, workers = EXECUTORS[mode]
    environment = {**os.environ}
    os.environ["DLSCHED_AUDIT"] = "0"

    def fresh():
        return (experiment, scratch / f"run-{next(_counter)}"), {
            "executor": executor,
            "workers": workers,
        }

    try:
        outcome = benchmark.pedantic(run_experiment, setup=fresh, rounds=rounds)
    finally:
        os.environ.clear()
        os.environ.update(environment)
    jobs = sum(outcome.store.run_summary(k)["jobs_completed"] for k in outcome.finished)
    _walls[grid, mode] = benchmark.stats.stats.mean
    benchmark.extra_info.update(runs=len(outcome.finished), jobs=jobs, workers=workers)
    if mode != "in-process" and (grid, "in-process") in _walls:
        benchmark.extra_info["time_vs_in_process"] = _walls[grid, mode] / _walls[grid, "in-process"]
    assert outcome.ok and len(outcome.finished) == runs and jobs == runs * jobs_per_run
