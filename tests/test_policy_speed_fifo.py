"""The incremental structures behind FIFO's backfilling: known answers on tiny inputs, and
the indexed path deciding exactly as the plain scan (which any other estimator uses)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.jobs import JobSpec, JobState
from dlsched.perf.estimator import NoisyEstimator, OracleEstimator
from dlsched.policies.fifo import PendingIndex


def state(index: int, num_gpus: int = 1, gpu_milli: int = 1000) -> JobState:
    """A waiting job of `num_gpus` GPUs, job order `index`."""
    return JobState(
        JobSpec(
            job_id=index,
            index=index,
            submit_time=float(index),
            num_gpus=num_gpus,
            total_steps=100.0,
            gpu_milli=gpu_milli,
        )
    )


def test_index_finds_the_first_later_job_within_the_limit():
    """Of jobs after position 0 that fit, the earliest with key <= limit comes first."""
    index = PendingIndex()
    for i, (n, key) in enumerate([(1, 5.0), (1, 50.0), (2, 8.0), (1, 9.0)]):
        index.add(state(i, n), key)
    assert index.first(0, 10.0, extra=0, free=4).spec.index == 2
    assert index.first(2, 10.0, extra=0, free=4).spec.index == 3
    assert index.first(0, 10.0, extra=0, free=1).spec.index == 3  # job 2 needs 2 GPUs


def test_index_ignores_the_limit_for_jobs_within_extra():
    """A job needing no more than `extra` GPUs may be tried whatever its key."""
    index = PendingIndex()
    index.add(state(0), 1.0)
    index.add(state(1, 2), 500.0)
    index.add(state(2, 1), 600.0)
    assert index.first(0, 10.0, extra=1, free=4).spec.index == 2
    assert index.first(0, 10.0, extra=2, free=4).spec.index == 1
    assert index.first(0, 10.0, extra=0, free=4) is None


def test_index_never_returns_a_removed_job_and_keeps_order_through_growth():
    """After 200 jobs and removing all but every 7th, queries walk the survivors in order."""
    index = PendingIndex()
    jobs = [state(i, 1 + i % 3) for i in range(200)]
    for job in jobs:
        index.add(job, float(i % 11) if (i := job.spec.index) else 0.0)
    for job in jobs:
        if job.spec.index % 7:
            index.remove(job)
    seen, cursor = [], -1
    while (found := index.first(cursor, float("inf"), extra=0, free=8)) is not None:
        seen.append(found.spec.index)
        cursor = found.spec.index
    assert seen == list(range(0, 200, 7))
    assert len(index) == len(seen)


def test_index_tries_a_fractional_job_with_no_whole_gpu_free():
    """A fractional job may share a GPU, so it is a candidate even when `free` is 0."""
    index = PendingIndex()
    index.add(state(0), 1.0)
    index.add(state(1), 1.0)
    index.add(state(2, 1, gpu_milli=500), 1.0)
    assert index.first(0, 10.0, extra=0, free=0).spec.index == 2


def test_index_keeps_infinite_keys_reachable_by_an_infinite_limit():
    """A job estimated never to finish is still tried when the limit is infinite (greedy)."""
    index = PendingIndex()
    index.add(state(0), 1.0)
    index.add(state(1), float("inf"))
    assert index.first(0, float("inf"), extra=0, free=1).spec.index == 1
    assert index.first(0, 1e300, extra=0, free=1) is None


class ScanOracle(OracleEstimator):
    """The oracle under another type: FIFO then backfills by the plain scan."""


class ScanNoisy(NoisyEstimator):
    """The noisy estimator under another type (plain scan)."""


def random_jobs(seed: int, n: int = 300) -> pd.DataFrame:
    """A contended workload for 16 GPUs: tied submit times, 1–16 GPUs, mixed lengths."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "job_id": range(n),
            "submit_time": np.sort(rng.integers(0, 60, n)) * 50.0,
            "num_gpus": rng.choice([1, 1, 1, 2, 4, 8, 16], n),
            "duration": rng.choice([10.0, 100.0, 1000.0, 5000.0], n) + rng.integers(0, 3, n),
        }
    )


@pytest.mark.parametrize(
    ("backfill", "fast", "scan", "seed"),
    [
        ("easy", "oracle", ScanOracle(), 1),
        ("easy", NoisyEstimator(0.5), ScanNoisy(0.5), 2),
        # rate noise: estimated finishes drift, so `fifo` must scan (it did not, at first)
        ("easy", NoisyEstimator(0.5, 0.5), ScanNoisy(0.5, 0.5), 5),
        ("greedy", "oracle", ScanOracle(), 3),
    ],
)
def test_indexed_backfill_decides_as_the_scan(backfill, fast, scan, seed):
    """The same jobs table and events from the indexed path and the plain scan."""
    hardware = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 8}]}
    )
    jobs = random_jobs(seed)
    runs = [
        dlsched.simulate(jobs, hardware, "fifo", estimator=e, seed=seed, backfill=backfill)
        for e in (fast, scan)
    ]
    pd.testing.assert_frame_equal(runs[0].jobs, runs[1].jobs)
    pd.testing.assert_frame_equal(runs[0].events, runs[1].events)
    assert (runs[0].jobs["start_time"] > runs[0].jobs["submit_time"]).any()  # contended
