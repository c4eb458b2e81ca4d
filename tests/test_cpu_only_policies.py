"""The policies that place jobs without GPUs (``places_jobs_without_gpus``) keep the engine's
invariants on random mixes of GPU and CPU-only jobs (hypothesis): every job finishes exactly
once, the auditor finds no GPU, CPU or memory over-committed, a job without GPUs holds no
GPU-seconds, and the same seed gives the same result."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.cluster import Cluster
from dlsched.errors import ConfigError

POLICIES = [
    ("fifo", {}),
    ("fifo", {"backfill": "greedy"}),
    ("fifo", {"backfill": "easy"}),
    ("sjf", {}),
    ("srtf", {}),
    ("per-vc", {"inner": "fifo"}),
]


@st.composite
def mixes(draw):
    """A cluster of 1-3 nodes with CPUs and memory, and 1-20 jobs, some without GPUs."""
    nodes = draw(st.integers(1, 3))
    per_node = draw(st.sampled_from([1, 2, 4]))
    cpus = draw(st.sampled_from([4, 8, 16]))
    cluster = Cluster.from_dict(
        {
            "name": "mix",
            "nodes": [
                {
                    "gpu_type": "V100",
                    "count": nodes * per_node,
                    "gpus_per_node": per_node,
                    "cpus": cpus,
                    "host_memory_gb": 64,
                }
            ],
        }
    )
    rows = []
    for i in range(draw(st.integers(1, 20))):
        gpus = draw(st.integers(0, per_node))
        cpu = draw(st.integers(1 if gpus == 0 else 0, cpus)) * 1000
        rows.append(
            {
                "job_id": f"j{i}",
                "submit_time": float(draw(st.integers(0, 30))),
                "num_gpus": gpus,
                "duration": float(draw(st.integers(1, 40))),
                "cpu_milli": cpu,
                "vc": draw(st.sampled_from(["a", "b"])),
            }
        )
    return pd.DataFrame(rows), cluster


@pytest.mark.parametrize(("policy", "params"), POLICIES, ids=lambda p: str(p))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mix=mixes())
def test_policies_that_place_jobs_without_gpus_keep_the_invariants(policy, params, mix):
    """All jobs finish once, nothing over-committed (auditor), CPU-only jobs hold no GPU."""
    jobs, cluster = mix
    result = dlsched.simulate(jobs, cluster, policy=policy, audit=True, seed=1, **params)
    table = result.jobs
    assert len(table) == len(jobs)
    assert (table["status"] == "finished").all()
    assert table["job_id"].is_unique
    assert (table.loc[table["num_gpus"] == 0, "gpu_seconds"] == 0).all()
    again = dlsched.simulate(jobs, cluster, policy=policy, seed=1, **params)
    pd.testing.assert_frame_equal(again.jobs, table)


def test_per_vc_refuses_jobs_without_gpus_when_its_inner_policy_does():
    """per-vc says it places jobs without GPUs only when its inner policy does."""
    jobs = pd.DataFrame(
        [{"job_id": "a", "submit_time": 0.0, "num_gpus": 0, "duration": 5.0, "cpu_milli": 1000}]
    )
    cluster = Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2, "cpus": 8}]}
    )
    assert (
        dlsched.simulate(jobs, cluster, policy="per-vc", inner="fifo").summary()["jobs_completed"]
        == 1
    )
    with pytest.raises(ConfigError, match="policy 'per-vc'"):
        dlsched.simulate(jobs, cluster, policy="per-vc", inner="tiresias")
