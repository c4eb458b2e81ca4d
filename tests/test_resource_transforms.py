"""Experiment transforms and CPU/memory demands: a job's demand per GPU never changes."""

from __future__ import annotations

import pandas as pd
import pytest

from dlsched.cluster import Cluster
from dlsched.engine.ledger import Ledger
from dlsched.engine.specs import build_specs
from dlsched.experiments.transforms import TRANSFORMS
from dlsched.perf import make_throughput
from dlsched.traces.schema import validate_jobs

# Example arguments of every built-in transform; a new transform must be added here.
ARGUMENTS = {
    "scale_arrivals": {"factor": 2.0},
    "head": {"n": 3},
    "sample": {"n": 3, "seed": 1},
    "deadlines": {"low": 1.0, "high": 2.0, "seed": 1},
    "elastic": {"min_gpus": 1, "max_factor": 2.0},
    "batch_schedules": {"static": 1.0, "gns": 1.0, "accordion": 1.0, "seed": 1},
}


def _workload():
    """Four jobs of 1-4 GPUs with CPU and memory demands."""
    table = pd.DataFrame(
        {
            "job_id": ["a", "b", "c", "d"],
            "submit_time": [0.0, 10.0, 20.0, 30.0],
            "num_gpus": [1, 2, 4, 2],
            "duration": [100.0, 50.0, 40.0, 30.0],
            "cpu_milli": [3000, 6000, 8000, 1],
            "memory_mib": [1024, 4096, 0, 7],
        }
    )
    return validate_jobs(table, "inline", lenient=False, fmt="canonical")


def test_every_builtin_transform_has_example_arguments():
    """The test below covers every transform the registry holds."""
    assert set(TRANSFORMS) == set(ARGUMENTS)


@pytest.mark.parametrize("name", sorted(ARGUMENTS))
def test_transforms_keep_each_jobs_gpus_and_demands(name):
    """No experiment transform changes num_gpus, so each job keeps its traced demands."""
    function, _ = TRANSFORMS[name]
    before = _workload().jobs.set_index("job_id")
    after = function(_workload(), **ARGUMENTS[name]).jobs.set_index("job_id")
    columns = ["num_gpus", "cpu_milli", "memory_mib"]
    pd.testing.assert_frame_equal(after[columns], before.loc[after.index, columns])


def test_an_elastic_job_holds_its_per_gpu_demand_times_the_gpus_it_gets():
    """`elastic` leaves the table's demand; on 4 or 1 GPUs job b (2 GPUs, 6 cores, 4 GiB)
    holds 12 or 3 cores, 8 or 2 GiB: demands scale with the GPU count it runs on."""
    function, _ = TRANSFORMS["elastic"]
    workload = function(_workload(), min_gpus=1, max_factor=2.0)
    cluster = Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "cpus": 64}]}
    )
    specs, _ = build_specs(workload, cluster, make_throughput("duration"), lenient=False)
    b = next(s for s in specs if s.job_id == "b")
    assert b.gpu_range == (1, 4) and (b.cpu_milli, b.memory_mib) == (6000, 4096)
    ledger = Ledger(cluster)
    assert ledger.node_demands(b, (0, 1, 2, 3)) == {0: (12000, 8192)}
    assert ledger.node_demands(b, (4,)) == {1: (3000, 2048)}
