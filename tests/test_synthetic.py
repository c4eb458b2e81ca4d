"""Gavel-style synthetic workloads: seeded, and in the distribution Gavel's generator uses."""

import numpy as np
import pandas as pd

from dlsched.traces.synthetic import gavel_poisson
from dlsched.traces.transforms import GAVEL_JOB_TYPES


def test_same_seed_same_workload_other_seed_other_workload():
    a, b = gavel_poisson(50, 4.8, seed=3), gavel_poisson(50, 4.8, seed=3)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert not gavel_poisson(50, 4.8, seed=4).jobs["duration"].equals(a.jobs["duration"])


def test_durations_arrivals_and_models_follow_gavels_generator():
    jobs = gavel_poisson(20_000, 6.0, seed=0).jobs
    minutes = jobs["duration"].to_numpy() / 60
    assert minutes.min() >= 10 ** 1.5 - 1e-9 and minutes.max() <= 10 ** 4 + 1e-9
    assert abs((minutes < 10 ** 3).mean() - 0.8) < 0.01  # 80 % short jobs
    gaps = np.diff(jobs["submit_time"].to_numpy())
    assert abs(gaps.mean() - 600.0) < 15  # 6 jobs/h = one every 600 s
    assert set(jobs["model"]) == set(GAVEL_JOB_TYPES)
    assert (jobs["num_gpus"] == 1).all() and (jobs["gpu_type"] == "V100").all()


def test_multi_gpu_counts():
    counts = gavel_poisson(20_000, 6.0, seed=0, multi_gpu=True).jobs["num_gpus"]
    shares = counts.value_counts(normalize=True)
    for n, p in {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}.items():
        assert abs(shares[n] - p) < 0.01
