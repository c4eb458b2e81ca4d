"""SJF and SRTF remember, within a call, which kinds of job could not start: known answers
for the grouping, and the same decisions as trying every job."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.jobs import JobSpec
from dlsched.policies import sjf
from dlsched.policies.sjf import placement_group


def spec(index: int, **fields) -> JobSpec:
    """A job spec with defaults for what the test does not set."""
    base = {"index": index, "job_id": index, "submit_time": 0.0, "num_gpus": 2}
    return JobSpec(**{**base, "total_steps": 100.0, **fields})


def test_jobs_differing_only_in_time_and_length_share_a_group():
    """Submit time, length and id do not change where a job may be placed."""
    a = spec(0, submit_time=5.0, total_steps=10.0, vc="x")
    b = spec(1, submit_time=9.0, total_steps=900.0, vc="x")
    assert placement_group(a) == placement_group(b)


@pytest.mark.parametrize(
    "other", [{"vc": "y"}, {"num_gpus": 4}, {"model": "VGG16"}, {"gpu_constraint": ("k80",)}]
)
def test_a_placement_field_splits_groups(other):
    """VC, GPU request, model and type constraint each make another group."""
    assert placement_group(spec(0, vc="x")) != placement_group(spec(1, **{"vc": "x", **other}))


def test_fractional_jobs_are_never_grouped():
    """A GPU share may fit beside another job where a like one did not: no group."""
    assert placement_group(spec(0, num_gpus=1, gpu_milli=500)) is None


def contended(seed: int, n: int = 250) -> tuple[pd.DataFrame, dlsched.Cluster]:
    """Jobs of two VCs (one owning a node, one with a quota) and of none, on 20 GPUs."""
    rng = np.random.default_rng(seed)
    hardware = dlsched.Cluster.from_dict(
        {
            "name": "c",
            "gpu_types": {"V100": {}, "K80": {}},
            "nodes": [
                {"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "name": "v"},
                {"gpu_type": "K80", "count": 3, "gpus_per_node": 4, "name": "k"},
            ],
            "vcs": [{"name": "own", "nodes": ["v-0"]}, {"name": "capped", "gpus": 3}],
        }
    )
    vc = rng.choice(["own", "capped", ""], n)
    gpus = np.where(vc == "own", rng.choice([1, 2, 4], n), rng.choice([1, 2, 3], n))
    jobs = pd.DataFrame(
        {
            "job_id": range(n),
            "submit_time": np.sort(rng.integers(0, 40, n)) * 30.0,
            "num_gpus": gpus,
            "duration": rng.choice([20.0, 200.0, 2000.0], n) + rng.integers(0, 5, n),
            "vc": [v or None for v in vc],
        }
    )
    return jobs, hardware


@pytest.mark.parametrize(("policy", "seed"), [("sjf", 1), ("srtf", 2), ("srtf", 3)])
def test_remembered_failures_decide_as_trying_every_job(policy, seed, monkeypatch):
    """The same jobs table and events with failures remembered and with every job tried."""
    jobs, hardware = contended(seed)
    runs = []
    for placers in (sjf._MONOTONE_PLACERS, frozenset()):
        monkeypatch.setattr(sjf, "_MONOTONE_PLACERS", placers)
        runs.append(dlsched.simulate(jobs, hardware, policy, restart_overhead_s=5.0))
    pd.testing.assert_frame_equal(runs[0].jobs, runs[1].jobs)
    pd.testing.assert_frame_equal(runs[0].events, runs[1].events)
    assert (runs[0].jobs["start_time"] > runs[0].jobs["submit_time"]).mean() > 0.5
