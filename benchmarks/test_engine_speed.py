"""pytest-benchmark suite: engine speed per policy on fixed real workloads.

Not part of the default test run (pytest's testpaths is tests/). Run and compare with

    python -m pytest benchmarks --benchmark-autosave
    python -m pytest benchmarks --benchmark-compare

Each benchmark asserts the number of events processed, so it can never silently measure a
different workload.
"""

import pytest

import dlsched
from dlsched.bundled import bundled_trace
from dlsched.traces.transforms import filter_jobs

pytestmark = pytest.mark.benchmark_suite

CASES = {
    # policy, params, events expected on the bundled Philly day (2,302 jobs, 3 events each)
    "fifo": ("fifo", {}, 6906),
    "fifo-easy": ("fifo", {"backfill": "easy"}, 6906),
    "sjf": ("sjf", {}, 6906),
    "srtf": ("srtf", {}, 6906),
}


@pytest.fixture(scope="module")
def philly_day():
    return dlsched.load_trace(bundled_trace("philly_day.csv"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_philly_day_on_philly_cluster(benchmark, philly_day, case):
    """One real day of Philly on the Philly machine list."""
    policy, params, events = CASES[case]
    cluster = dlsched.load_cluster("philly")
    result = benchmark(
        lambda: dlsched.simulate(philly_day, cluster, policy=policy, audit=False, **params)
    )
    summary = result.summary()
    benchmark.extra_info.update(
        avg_jct=summary["avg_jct"],
        events=summary["events"],
        jobs_per_s=summary["jobs_completed"] / summary["sim_wall_s"],
    )
    assert summary["events"] == events


@pytest.mark.parametrize("policy", ["fifo", "srtf"])
def test_contended_small_cluster(benchmark, philly_day, policy):
    """The same day squeezed onto 60 GPUs: long queues, SRTF preempts."""
    cluster = dlsched.load_cluster("tiresias-60")
    small = filter_jobs(philly_day, predicate=lambda jobs: jobs["num_gpus"] <= 60)
    result = benchmark.pedantic(
        lambda: dlsched.simulate(small, cluster, policy=policy, audit=False), rounds=1, iterations=1
    )
    summary = result.summary()
    benchmark.extra_info.update(
        avg_jct=summary["avg_jct"], events=summary["events"], preemptions=summary["preemptions"]
    )
    assert summary["jobs_completed"] == len(small)


def test_validate_100k_rows(benchmark):
    """Canonical validation of 100,000 string-id rows with three bad ones (lenient)."""
    import numpy as np
    import pandas as pd

    from dlsched.traces import validate_jobs

    n = 100_000
    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        {
            "job_id": [f"job-{i}" for i in range(n)],
            "submit_time": rng.uniform(0, 1e6, n),
            "num_gpus": rng.integers(1, 9, n),
            "duration": rng.uniform(1, 1e5, n),
        }
    )
    table.loc[[10, 500, 99_999], "num_gpus"] = 0
    workload = benchmark(lambda: validate_jobs(table, "<big>", lenient=True, fmt="canonical"))
    assert len(workload) == n - 3


def test_engine_events_per_cpu_second(benchmark, philly_day):
    """The event loop alone on the Philly day under FIFO: SimPy events per CPU-second against
    a bare SimPy loop of as many timeouts (see engine_events.py for the full table)."""
    from engine_events import bare_simpy, engine_phases

    cluster = dlsched.load_cluster("philly")
    phases = benchmark.pedantic(
        lambda: engine_phases(philly_day, cluster, "fifo"), rounds=5, iterations=1
    )
    events = phases["simpy_events"] + phases["scheduling_instants"]
    bare_s, bare_events = bare_simpy(events)
    benchmark.extra_info.update(
        events=events,
        engine_events_per_cpu_s=events / phases["loop_s"],
        bare_events_per_cpu_s=bare_events / bare_s,
    )
    # SimPy events: 2,095 submit instants (the first at t=0) and 2,302 completions; and 3,992
    # instants that asked for a scheduling call (the last finds nothing left to schedule)
    assert phases["simpy_events"] == 4397
    assert phases["scheduling_instants"] == 3992
    assert phases["job_events"] == 6906
