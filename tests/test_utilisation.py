"""`dlsched.utilisation`: GPU, CPU and host-memory utilisation over time, worked out by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import dlsched
from dlsched.cluster import Cluster
from dlsched.metrics import SimulationResult
from dlsched.traces.schema import validate_jobs
from dlsched.utilisation import resource_capacity, resource_timeline, utilisation_summary

# Two nodes of 2 GPUs, 8 cores and 16 GB each: 4 GPUs, 16 cores, 32 GB.
TWO_NODES = Cluster.from_dict(
    {
        "name": "two-nodes",
        "nodes": [
            {"gpu_type": "V100", "count": 2, "gpus_per_node": 2, "cpus": 8, "host_memory_gb": 16}
        ],
    }
)


def _workload(*rows: tuple) -> dlsched.Workload:
    """(job id, submit s, GPUs, duration s, cores, GB) rows as a workload."""
    columns = ["job_id", "submit_time", "num_gpus", "duration", "num_cpus", "memory_gb"]
    return validate_jobs(
        pd.DataFrame(rows, columns=columns), "inline", lenient=False, fmt="canonical"
    )


@pytest.fixture(scope="module")
def fifo_run():
    """a (2 GPUs, 4 cores, 8 GB, 0-100 s) on one node; b (1 GPU, 6 cores, 4 GB, 0-50 s) and
    c (1 GPU, 2 cores, 2 GB, 10-50 s) on the other."""
    workload = _workload(("a", 0, 2, 100, 4, 8), ("b", 0, 1, 50, 6, 4), ("c", 10, 1, 40, 2, 2))
    return dlsched.simulate(workload, TWO_NODES, policy="fifo"), workload


def test_timeline_holds_each_resource_step_by_step(fifo_run):
    """0-10 s: 3 GPUs, 10 cores, 12 GB; 10-50 s: 4, 12, 14; 50-100 s: 2, 4, 8; then none."""
    result, workload = fifo_run
    timeline = resource_timeline(result, TWO_NODES, workload)
    assert timeline.to_dict("list") == {
        "time": [0.0, 10.0, 50.0, 100.0],
        "gpu": [3.0, 4.0, 2.0, 0.0],
        "cpu": [10.0, 12.0, 4.0, 0.0],
        "memory": [12.0, 14.0, 8.0, 0.0],
    }


def test_summary_is_the_time_mean_and_peak_over_the_makespan(fifo_run):
    """CPU (10·10 + 12·40 + 4·50) / (16·100), memory (12·10 + 14·40 + 8·50) / (32·100)."""
    result, workload = fifo_run
    figures = utilisation_summary(result, TWO_NODES, workload)
    assert figures == pytest.approx(
        {
            "gpu_busy_utilization": 290 / 400,
            "peak_gpu_utilization": 1.0,
            "cpu_utilization": 780 / 1600,
            "peak_cpu_utilization": 12 / 16,
            "memory_utilization": 1080 / 3200,
            "peak_memory_utilization": 14 / 32,
        }
    )
    assert figures["gpu_busy_utilization"] == pytest.approx(result.summary()["utilization"])


def test_a_stored_result_gives_the_same_figures(fifo_run, tmp_path):
    """Saved and loaded (GPU ids as text), the run gives the same timeline."""
    result, workload = fifo_run
    again = SimulationResult.load(result.save(tmp_path / "run"))
    pd.testing.assert_frame_equal(
        resource_timeline(again, TWO_NODES, workload),
        resource_timeline(result, TWO_NODES, workload),
    )


def test_demands_may_come_from_the_jobs_table(fifo_run):
    """A run with demands carries them in its jobs table, so `demands` may be left out."""
    result, workload = fifo_run
    assert result.jobs["cpu_milli"].tolist() == workload.jobs["cpu_milli"].tolist()
    assert result.jobs["memory_mib"].tolist() == workload.jobs["memory_mib"].tolist()
    assert utilisation_summary(result, TWO_NODES) == utilisation_summary(
        result, TWO_NODES, workload
    )


def test_summary_has_the_figures_where_the_cluster_declares_resources(fifo_run):
    """summary() adds each declared resource's mean and peak; a GPU-only run adds none."""
    result, workload = fifo_run
    summary = result.summary()
    assert summary["cpu_utilization"] == pytest.approx(780 / 1600)
    assert summary["peak_memory_utilization"] == pytest.approx(14 / 32)
    gpu_only = Cluster.from_dict(
        {"name": "g", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2}]}
    )
    plain = dlsched.simulate(workload, gpu_only, policy="fifo").summary()
    assert not {"cpu_utilization", "gpu_busy_utilization"} & set(plain)


def test_a_gpu_only_cluster_has_only_the_gpu_column(fifo_run):
    """No node declares cores or memory: only time and gpu, and only the GPU figures."""
    result, workload = fifo_run
    gpu_only = Cluster.from_dict(
        {"name": "g", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2}]}
    )
    assert resource_capacity(gpu_only) == {"gpu": 4.0}
    assert list(resource_timeline(result, gpu_only, workload).columns) == ["time", "gpu"]
    assert set(utilisation_summary(result, gpu_only, workload)) == {
        "gpu_busy_utilization",
        "peak_gpu_utilization",
    }


def _result(events: list[tuple], jobs: list[tuple]) -> SimulationResult:
    """A result made by hand: events (time, event, job, GPUs as "0,1") and jobs (id, GPUs,
    submit, finish, cpu_milli)."""
    table = pd.DataFrame(
        jobs, columns=["job_id", "num_gpus", "submit_time", "finish_time", "cpu_milli"]
    )
    table["status"] = "finished"
    log = pd.DataFrame(
        [(t, e, j, len(g.split(",")) if g else 0, g) for t, e, j, g in events],
        columns=["time", "event", "job_id", "num_gpus", "gpus"],
    )
    return SimulationResult(table, log, pd.DataFrame({"time": [0.0], "V100": [0]}), {})


def test_moves_preemptions_and_rescales_change_what_a_job_holds():
    """4 cores on 2 GPUs: migrate keeps 4, rescale to 1 GPU holds ceil(4/2) = 2, preempt 0."""
    result = _result(
        [
            (0.0, "start", "x", "0,1"),
            (10.0, "migrate", "x", "2,3"),
            (20.0, "rescale", "x", "2"),
            (25.0, "rerate", "x", "2"),
            (30.0, "preempt", "x", "2"),
            (40.0, "restart", "x", "0,1"),
            (50.0, "finish", "x", "0,1"),
        ],
        [("x", 2, 0.0, 50.0, 4000)],
    )
    timeline = resource_timeline(result, TWO_NODES)
    assert timeline[["time", "cpu"]].to_dict("list") == {
        "time": [0.0, 20.0, 30.0, 40.0, 50.0],
        "cpu": [4.0, 2.0, 0.0, 4.0, 0.0],
    }
    # (4·20 + 2·10 + 0·10 + 4·10) / (16·50)
    assert utilisation_summary(result, TWO_NODES)["cpu_utilization"] == pytest.approx(140 / 800)


def test_a_node_without_capacity_counts_on_neither_side():
    """5,001 milli-CPUs over a declared and an undeclared node: 2,500 + 1 (the remainder goes
    on the lowest node) counted, of 8 declared cores."""
    half = Cluster.from_dict(
        {
            "name": "half",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": 8},
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 2},
            ],
        }
    )
    result = _result(
        [(0.0, "start", "y", "0,1,2,3"), (10.0, "finish", "y", "0,1,2,3")],
        [("y", 4, 0.0, 10.0, 5001)],
    )
    assert resource_capacity(half) == {"gpu": 4.0, "cpu": 8.0}
    assert resource_timeline(result, half)["cpu"].tolist() == [2.501, 0.0]
    assert utilisation_summary(result, half)["cpu_utilization"] == pytest.approx(2.501 / 8)


def test_no_finished_job_gives_nan():
    """Without a finished job there is no makespan window: NaN, not an error."""
    result = _result([(0.0, "start", "z", "0")], [("z", 1, 0.0, math.nan, 1000)])
    result.jobs["status"] = "unfinished"
    assert math.isnan(utilisation_summary(result, TWO_NODES)["cpu_utilization"])


def test_gpu_ids_may_be_tuples_and_nothing_is_busy_before_the_first_change():
    """Events made in memory with GPU-id tuples; a timeline starting at 5 s reads 0 before."""
    result = _result(
        [(5.0, "start", "w", "0"), (15.0, "finish", "w", "0")], [("w", 1, 0.0, 15.0, 2000)]
    )
    result.events["gpus"] = [(0,), (0,)]
    result.timeline = pd.DataFrame({"time": [5.0, 15.0], "V100": [1, 0]})
    timeline = resource_timeline(result, TWO_NODES)
    assert timeline[["time", "gpu", "cpu"]].to_dict("list") == {
        "time": [0.0, 5.0, 15.0],
        "gpu": [0.0, 1.0, 0.0],
        "cpu": [0.0, 2.0, 0.0],
    }
    # held 2 of 16 cores for 10 of the 15 s window
    assert utilisation_summary(result, TWO_NODES)["cpu_utilization"] == pytest.approx(20 / 240)


def test_a_memory_only_cluster_has_no_cpu_column(fifo_run):
    """Nodes that declare host memory only: gpu and memory, memory (12·10 + 14·40 + 8·50) /
    (32·100)."""
    result, workload = fifo_run
    memory_only = Cluster.from_dict(
        {
            "name": "m",
            "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2, "host_memory_gb": 16}],
        }
    )
    assert list(resource_timeline(result, memory_only, workload).columns) == [
        "time",
        "gpu",
        "memory",
    ]
    figures = utilisation_summary(result, memory_only, workload)
    assert "cpu_utilization" not in figures
    assert figures["memory_utilization"] == pytest.approx(1080 / 3200)
