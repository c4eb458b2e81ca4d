"""Gavel's space sharing with virtual clusters and fractional jobs: a pair forms only between
two whole-GPU jobs that may share those GPUs (same pool, the partner's VC quota respected)."""

from __future__ import annotations

import pandas as pd
import pytest

import dlsched
from dlsched.perf import ProfileTable

RESNET18_32 = "ResNet-18 (batch size 32)"
RESNET18_64 = "ResNet-18 (batch size 64)"
COLUMNS = ["job_id", "submit_time", "num_gpus", "total_steps", "model"]


def rate(model: str) -> float:
    """Steps/s of the model alone on one V100 (Gavel's table)."""
    return ProfileTable.gavel().throughput(model, "v100", 1)


def well_matched(n_seconds: float, **extra: list) -> pd.DataFrame:
    """ResNet-18 batch 32 and 64 (they lose nothing packed), `n_seconds` alone each; `extra`
    columns give per-job values (two jobs per model when the lists have four entries)."""
    n = len(next(iter(extra.values()))) if extra else 2
    models = [RESNET18_32, RESNET18_64] * (n // 2)
    table = pd.DataFrame(
        [(i, 0.0, 1, n_seconds * rate(m), m) for i, m in zip("abcd", models, strict=False)],
        columns=COLUMNS,
    )
    for name, values in extra.items():
        table[name] = values
    return table


def run(jobs: pd.DataFrame, cluster: dict) -> dlsched.SimulationResult:
    """max_min_fairness_packed on Gavel's table, audited (a bad pair would raise)."""
    return dlsched.simulate(
        jobs,
        dlsched.Cluster.from_dict({"name": "c", **cluster}),
        policy="max_min_fairness_packed",
        throughput="gavel",
        audit=True,
    )


def finish(result: dlsched.SimulationResult) -> dict[object, float]:
    """job id → finish time."""
    return dict(zip(result.jobs["job_id"], result.jobs["finish_time"], strict=True))


def test_a_job_on_its_vcs_nodes_is_never_packed_with_one_outside():
    """a (VC vc0, which owns one V100) and b (no VC, the other V100) each run alone: 1000 s."""
    # The LP sees 2 V100s and a pair that loses nothing; the pair cannot form across pools.
    jobs = well_matched(1000.0, vc=["vc0", None])
    cluster = {
        "nodes": [
            {"gpu_type": "V100", "count": 1, "gpus_per_node": 1, "name": "own"},
            {"gpu_type": "V100", "count": 1, "gpus_per_node": 1, "name": "free"},
        ],
        "vcs": [{"name": "vc0", "nodes": ["own-0"]}],
    }
    result = run(jobs, cluster)
    assert finish(result) == pytest.approx({"a": 1000.0, "b": 1000.0})


def test_a_pair_never_takes_a_vc_past_its_quota():
    """Two jobs of VC g (quota 1 GPU) are never packed together: they would hold 2 GPUs' worth."""
    # a, b in g; c, d in no VC; 2 V100s. Whatever pairs the LP wants, g runs at most one job
    # at a time, so a and b take 2000 s between them; c and d lose nothing packed.
    jobs = well_matched(1000.0, vc=["g", "g", None, None])
    cluster = {
        "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}],
        "vcs": [{"name": "g", "gpus": 1}],
    }
    result = run(jobs, cluster)
    assert max(finish(result)[j] for j in "ab") >= 2000.0 - 1e-6


def test_a_fractional_job_is_never_packed():
    """a (half a GPU) and b (a whole one) on one V100 take turns: together they need 2000 s."""
    jobs = well_matched(1000.0, gpu_milli=[500, 1000])
    cluster = {"nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 1}]}
    result = run(jobs, cluster)
    assert max(finish(result).values()) >= 2000.0 - 1e-6


def test_two_jobs_of_one_vc_still_pack_on_its_own_nodes():
    """a and b, both of vc0 (which owns the one V100), run packed: both end at 1000 s."""
    jobs = well_matched(1000.0, vc=["vc0", "vc0"])
    cluster = {
        "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 1, "name": "own"}],
        "vcs": [{"name": "vc0", "nodes": ["own-0"]}],
    }
    assert finish(run(jobs, cluster)) == pytest.approx({"a": 1000.0, "b": 1000.0})


@pytest.mark.parametrize("policy", ["fifo_perf", "max_min_fairness", "min_total_duration"])
def test_an_elastic_job_beside_a_vc_runs_whole_on_the_unowned_gpus(policy):
    """An elastic 2-GPU job runs at its size on the two V100s no VC owns, not on the lone P100."""
    cluster = {
        "nodes": [
            {"gpu_type": "V100", "count": 4, "gpus_per_node": 1},
            {"gpu_type": "P100", "count": 2, "gpus_per_node": 1},
        ],
        "vcs": [{"name": "vc0", "nodes": ["v100-g0-0", "v100-g0-1", "p100-g1-0"]}],
    }
    jobs = pd.DataFrame(
        {
            "job_id": [0],
            "submit_time": [0.0],
            "num_gpus": [2],
            "duration": [1.0],
            "min_gpus": [1.0],
            "max_gpus": [2.0],
        }
    )
    result = dlsched.simulate(
        jobs, dlsched.Cluster.from_dict({"name": "c", **cluster}), policy, audit=True
    )
    row = result.jobs.iloc[0]
    assert row["status"] == "finished"
    assert row["gpu_seconds_V100"] == pytest.approx(2.0)
    assert row["gpu_seconds_P100"] == 0.0
