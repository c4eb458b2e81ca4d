"""Space sharing: two whole-GPU jobs packed on one GPU run at the measured pair rates."""

import pandas as pd
import pytest

import dlsched
from dlsched.errors import SchedulingError
from dlsched.perf import ProfileTable

SMALL = "ResNet-18 (batch size 16)"
LARGE = "ResNet-50 (batch size 64)"


class PackEverything:
    """Puts every pending job on GPU 0, two at a time (a test policy)."""

    name, round_s = "pack-everything", None

    def schedule(self, view):
        alloc = view.allocation()
        for state in sorted(view.pending.values(), key=lambda s: s.spec.index):
            if len(view.jobs_on_gpu(0)) < 2:
                alloc.pack(state, (0,))
        return alloc


def one_v100():
    return dlsched.Cluster.from_dict({"name": "c", "nodes": [{"gpu_type": "V100"}]})


def test_packed_jobs_run_at_pair_rates_then_solo():
    """a and b share the V100 at their pair rates; when a ends, b speeds up to its solo rate."""
    table = ProfileTable.gavel()
    pair_a = table.throughput(SMALL, "v100", 1, colocated=[(LARGE, 1)])
    pair_b = table.throughput(LARGE, "v100", 1, colocated=[(SMALL, 1)])
    solo_b = table.throughput(LARGE, "v100", 1)
    steps_a, steps_b = 1000.0, 5000.0
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 0.0],
            "num_gpus": [1, 1],
            "total_steps": [steps_a, steps_b],
            "model": [SMALL, LARGE],
        }
    )
    result = dlsched.simulate(jobs, one_v100(), PackEverything(), throughput="gavel")
    finish = result.jobs.set_index("job_id")["finish_time"]
    t1 = steps_a / pair_a
    assert finish["a"] == pytest.approx(t1, rel=1e-12)
    assert finish["b"] == pytest.approx(t1 + (steps_b - pair_b * t1) / solo_b, rel=1e-12)
    rerate = result.events[result.events["event"] == "rerate"]
    assert list(rerate["job_id"]) == ["b"] and rerate["rate"].iloc[0] == solo_b


def test_packing_needs_a_model_that_measured_the_pair():
    """Under duration replay nobody knows a pair's speed: packing is refused, not guessed."""
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 0.0],
            "num_gpus": [1, 1],
            "duration": [10.0, 10.0],
        }
    )
    with pytest.raises(SchedulingError, match="throughput"):
        dlsched.simulate(jobs, one_v100(), PackEverything())


def test_a_third_job_cannot_join_a_packed_gpu():
    """Only pairs share a GPU."""

    class PackThree(PackEverything):
        def schedule(self, view):
            alloc = view.allocation()
            for state in view.pending.values():
                alloc.pack(state, (0,))
            return alloc

    jobs = pd.DataFrame(
        {
            "job_id": [1, 2, 3],
            "submit_time": [0.0] * 3,
            "num_gpus": [1] * 3,
            "total_steps": [100.0] * 3,
            "model": [SMALL, LARGE, SMALL],
        }
    )
    with pytest.raises(SchedulingError, match="packed"):
        dlsched.simulate(jobs, one_v100(), PackThree(), throughput="gavel")
