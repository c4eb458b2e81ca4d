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
from dlsched.jobs import JobSpec, JobState
from dlsched.perf.estimator import NoisyEstimator
from dlsched.policies.fifo import PendingIndex

POLICIES = [
    ("fifo", {}),
    ("fifo", {"backfill": "greedy"}),
    ("fifo", {"backfill": "easy"}),
    ("sjf", {}),
    ("srtf", {}),
    ("per-vc", {"inner": "fifo"}),
]
#: Estimators the policies read (the noisy one also with rate noise: its per-type factor)
ESTIMATORS = ["oracle", "noisy", "learned"]


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


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(("policy", "params"), POLICIES, ids=lambda p: str(p))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mix=mixes())
def test_policies_that_place_jobs_without_gpus_keep_the_invariants(policy, params, estimator, mix):
    """All jobs finish once, nothing over-committed (auditor), CPU-only jobs hold no GPU,
    under every estimator."""
    jobs, cluster = mix
    params = {**params, "estimator": _estimator(estimator)}
    result = dlsched.simulate(jobs, cluster, policy=policy, audit=True, seed=1, **params)
    table = result.jobs
    assert len(table) == len(jobs)
    assert (table["status"] == "finished").all()
    assert table["job_id"].is_unique
    assert (table.loc[table["num_gpus"] == 0, "gpu_seconds"] == 0).all()
    again = dlsched.simulate(jobs, cluster, policy=policy, seed=1, **params)
    pd.testing.assert_frame_equal(again.jobs, table)


def _estimator(name: str) -> str | NoisyEstimator:
    return NoisyEstimator(sigma=0.3, sigma_throughput=0.3) if name == "noisy" else name


def _one_node(gpus: int = 2, cpus: int = 8) -> Cluster:
    """One node of `gpus` V100s and `cpus` cores (``count`` is the number of nodes)."""
    return Cluster.from_dict(
        {
            "name": "one",
            "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": gpus, "cpus": cpus}],
        }
    )


def _rows(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["job_id", "submit_time", "num_gpus", "duration", "cpu_milli"]
    )


@pytest.mark.parametrize("noisy", [False, True])  # the indexed and the plain scan
@pytest.mark.parametrize("backfill", [False, "easy"])
def test_easy_never_backfills_a_late_job_without_gpus_past_the_head(backfill, noisy):
    """The reviewer's case: a 100 s CPU-only job X behind a blocked head H (2 GPUs, all 8
    cores) does not backfill on spare GPUs (there are none): H starts at t=10 as under
    strict FIFO (was 102 under EASY), X after it."""
    jobs = _rows([("A", 0.0, 2, 10.0, 0), ("H", 1.0, 2, 10.0, 8000), ("X", 2.0, 0, 100.0, 8000)])
    extra = {"estimator": _rate_noise()} if noisy else {}
    table = dlsched.simulate(jobs, _one_node(), "fifo", backfill=backfill, audit=True, **extra).jobs
    assert table.set_index("job_id")["start_time"].to_dict() == {"A": 0.0, "H": 10.0, "X": 20.0}


def _rate_noise() -> NoisyEstimator:
    """Rate noise only: the plain backfill scan (`fifo._is_static` is False), same order."""
    return NoisyEstimator(sigma=0.0, sigma_throughput=0.1)


@pytest.mark.parametrize("noisy", [False, True])  # the indexed and the plain scan
def test_easy_backfills_a_job_without_gpus_that_ends_by_the_shadow_time(noisy):
    """A 5 s CPU-only job at t=2 ends by H's shadow time (10): it backfills at once."""
    jobs = _rows([("A", 0.0, 2, 10.0, 0), ("H", 1.0, 2, 10.0, 8000), ("X", 2.0, 0, 5.0, 8000)])
    extra = {"estimator": _rate_noise()} if noisy else {}
    table = dlsched.simulate(jobs, _one_node(), "fifo", backfill="easy", audit=True, **extra).jobs
    assert table.set_index("job_id")["start_time"].to_dict() == {"A": 0.0, "H": 10.0, "X": 2.0}


@pytest.mark.parametrize("noisy", [False, True])
def test_easy_reserves_cpu_for_a_head_without_gpus(noisy):
    """Two nodes of 2 GPUs and 8 cores; A (1 GPU, 4 cores, 10 s) and C (2 GPUs, 4 cores,
    100 s) run, H (no GPU, 8 cores) waits for A's node: its shadow time is 10, so X (1 GPU,
    4 cores, 100 s) may not take A's node's spare GPU and cores. H starts at 10 (was 100)."""
    cluster = Cluster.from_dict(
        {"name": "two", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2, "cpus": 8}]}
    )
    jobs = _rows(
        [
            ("A", 0.0, 1, 10.0, 4000),
            ("C", 0.0, 2, 100.0, 4000),
            ("H", 1.0, 0, 10.0, 8000),
            ("X", 2.0, 1, 100.0, 4000),
        ]
    )
    extra = {"estimator": _rate_noise()} if noisy else {}
    table = dlsched.simulate(jobs, cluster, "fifo", backfill="easy", audit=True, **extra).jobs
    starts = table.set_index("job_id")["start_time"].to_dict()
    assert (starts["H"], starts["X"]) == (10.0, 20.0)


def test_the_backfill_index_tries_a_job_without_gpus_only_by_its_estimate():
    """PendingIndex.first: a job without GPUs past the time limit is not tried on spare
    GPUs (extra), a 1-GPU job is."""
    index = PendingIndex()
    cpu_only = JobState(JobSpec(1, "x", 0.0, 0, 100.0, cpu_milli=1000))
    one_gpu = JobState(JobSpec(2, "g", 0.0, 1, 100.0))
    index.add(cpu_only, 100.0)
    assert index.first(0, limit=10.0, extra=2, free=2) is None
    assert index.first(0, limit=100.0, extra=0, free=2) is cpu_only
    index.add(one_gpu, 100.0)
    assert index.first(0, limit=10.0, extra=2, free=2) is one_gpu


@pytest.mark.parametrize("estimator", ["noisy", "learned"])
@pytest.mark.parametrize(("policy", "params"), POLICIES, ids=lambda p: str(p))
def test_every_estimator_reads_a_running_job_without_gpus(policy, params, estimator):
    """The reviewer's case (two CPU-only jobs, then a GPU job) under the noisy and learned
    estimators: a running job's host slot is read as its node's type, no crash."""
    jobs = _rows([("a", 0.0, 0, 10.0, 8000), ("b", 1.0, 0, 10.0, 8000), ("g", 2.0, 1, 5.0, 1000)])
    cluster = Cluster.from_dict(
        {"name": "t", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2, "cpus": 8}]}
    )
    result = dlsched.simulate(jobs, cluster, policy=policy, estimator=estimator, **params)
    assert (result.jobs["status"] == "finished").all()


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


def test_per_vc_refuses_gavel_clock():
    """gavel_clock replays one clock for the whole cluster; a copy per VC would report times
    on the engine's clock instead, silently. Refused before the run."""
    with pytest.raises(ConfigError, match="gavel_clock=True"):
        dlsched.policies.get("per-vc", inner="max_min_fairness_perf", gavel_clock=True)
    assert dlsched.policies.get("per-vc", inner="max_min_fairness_perf", gavel_clock=False)
