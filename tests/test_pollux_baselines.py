"""`pollux_tiresias`, the Pollux artifact's Tiresias: known answers worked by hand, and its
fidelity to the artifact's published run (needs ../shared)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pandas as pd
import pytest

import dlsched
from dlsched.policies.pollux_baselines import PolluxTiresias

SHARED = Path(__file__).resolve().parents[2] / "shared"
WORKLOAD_6 = SHARED / "traces" / "sia_pollux" / "pollux" / "workloads" / "workload-6.csv.gz"


def jobs(*rows: tuple) -> pd.DataFrame:
    """(job_id, submit_time, num_gpus, duration) rows."""
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration"])


def cluster(gpus_per_node: int, nodes: int = 1) -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "T4", "count": nodes, "gpus_per_node": gpus_per_node}]}
    )


def column(result: dlsched.SimulationResult, name: str) -> dict:
    return result.jobs.set_index("job_id")[name].to_dict()


def start_gpus(result: dlsched.SimulationResult) -> dict:
    events = result.events
    starts = events[events["event"] == "start"]
    return dict(zip(starts["job_id"], starts["gpus"], strict=True))


def test_a_job_starts_at_the_next_round_and_pays_the_artifacts_30_s():
    """Submitted at 10 s: starts at the 60 s round, runs 100 s after the 30 s countdown."""
    result = dlsched.simulate(jobs(("a", 10, 1, 100.0)), cluster(1), "pollux_tiresias")
    assert column(result, "start_time")["a"] == pytest.approx(60.0)
    assert column(result, "finish_time")["a"] == pytest.approx(190.0)


def test_gpus_a_finished_job_frees_stay_idle_until_the_next_round():
    """One GPU, no overheads: a ends at 50 s, b waits for the round at 60 s."""
    result = dlsched.simulate(
        jobs(("a", 0, 1, 50.0), ("b", 0, 1, 10.0)), cluster(1), "pollux_tiresias", overheads="none"
    )
    assert column(result, "start_time")["b"] == pytest.approx(60.0)
    assert column(result, "finish_time")["b"] == pytest.approx(70.0)


def test_a_job_is_demoted_at_the_first_round_its_service_reaches_the_threshold():
    """Threshold 120 GPU-s: a leads until its 120 s at the 120 s round, then b runs; a
    resumes at the 240 s round with 880 s left."""
    result = dlsched.simulate(
        jobs(("a", 0, 1, 1000.0), ("b", 30, 1, 100.0)),
        cluster(1),
        PolluxTiresias(threshold_gpu_s=120.0),
        overheads="none",
    )
    assert column(result, "start_time")["b"] == pytest.approx(120.0)
    assert column(result, "finish_time")["b"] == pytest.approx(220.0)
    assert column(result, "finish_time")["a"] == pytest.approx(1120.0)
    assert column(result, "preemptions")["a"] == 1


def test_service_counts_whole_rounds_times_the_gpus():
    """A 2-GPU job with threshold 240 GPU-s is demoted after two rounds (2 × 60 s × 2)."""
    result = dlsched.simulate(
        jobs(("a", 0, 2, 1000.0), ("b", 30, 2, 100.0)),
        cluster(2),
        PolluxTiresias(threshold_gpu_s=240.0),
        overheads="none",
    )
    assert column(result, "start_time")["b"] == pytest.approx(120.0)


def test_a_job_that_does_not_fit_is_skipped_not_waited_for():
    """Two GPUs: a (1) is admitted, b (2) does not fit the GPU left, c (1) behind it starts."""
    result = dlsched.simulate(
        jobs(("a", 0, 1, 500.0), ("b", 0, 2, 100.0), ("c", 0, 1, 100.0)),
        cluster(2),
        "pollux_tiresias",
        overheads="none",
    )
    assert column(result, "start_time")["c"] == pytest.approx(0.0)
    assert column(result, "start_time")["b"] > 100.0


def test_placement_takes_the_nodes_with_the_most_free_gpus_first():
    """2 × 4 GPUs: a (3) on node 0, b (3) on node 1 (4 free), c (2) on the last GPU of each."""
    result = dlsched.simulate(
        jobs(("a", 0, 3, 100.0), ("b", 0, 3, 100.0), ("c", 0, 2, 100.0)),
        cluster(4, nodes=2),
        "pollux_tiresias",
    )
    assert start_gpus(result) == {"a": "0,1,2", "b": "4,5,6", "c": "3,7"}


def test_vc_quota_is_counted_within_the_round_in_priority_order():
    """Quota 2 for VC Q on 4 GPUs: a new job of Q preempts Q's demoted job at the next round
    (as without quotas), and a job of no VC starts at once beside Q's job."""
    jobs = pd.DataFrame(
        [("a1", 0.0, 2, 1000.0, "Q"), ("a2", 200.0, 2, 100.0, "Q"), ("z3", 0.0, 2, 50.0, None)],
        columns=["job_id", "submit_time", "num_gpus", "duration", "vc"],
    )
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}],
            "vcs": [{"name": "Q", "gpus": 2}],
        }
    )
    result = dlsched.simulate(
        jobs, cluster, "pollux_tiresias", overheads="none", threshold_gpu_s=100.0
    )
    events = result.events
    first = events[events["event"].isin(["start", "preempt"])].groupby(["job_id", "event"])
    times = first["time"].min().to_dict()
    assert times[("z3", "start")] == 0.0
    assert times[("a1", "preempt")] == times[("a2", "start")] == 240.0


def test_parameters_are_checked():
    """A non-positive threshold or interval is refused, naming the parameter."""
    with pytest.raises(ValueError, match="threshold_gpu_s"):
        PolluxTiresias(threshold_gpu_s=0)
    with pytest.raises(ValueError, match="interval_s"):
        PolluxTiresias(interval_s=-60)


@pytest.mark.slow  # fidelity against the artifact
@pytest.mark.skipif(not WORKLOAD_6.is_file(), reason="needs ../shared/traces/sia_pollux")
def test_matches_the_artifacts_tiresias_on_workload_6_at_load_1():
    """Workload 6, 64 T4 GPUs, goodput truth: within 1 % of the artifact's 3,469.7 s
    (measured: 3,471.3 s; dlsched's paper `tiresias` gives 2,980.8 s)."""
    result = dlsched.simulate(
        dlsched.load_trace(WORKLOAD_6), "pollux-64-t4", policy="pollux_tiresias"
    )
    assert statistics.fmean(result.jobs["jct"]) == pytest.approx(3469.69375, rel=0.01)
