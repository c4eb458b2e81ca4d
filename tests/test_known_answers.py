"""Known answers: tiny hand-made workloads whose results are worked out on paper.

Every workload runs on the `duration` throughput model (1 step/s, so steps = seconds) unless
the test says otherwise; the arithmetic is in each docstring or next to the assertion.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

import dlsched
from dlsched.errors import TraceError
from dlsched.perf import ProfileTable

RESNET18_64 = "ResNet-18 (batch size 64)"
RESNET18_128 = "ResNet-18 (batch size 128)"


def cluster(gpu_type: str = "V100", count: int = 1, gpus_per_node: int = 4) -> dlsched.Cluster:
    """`count` nodes of `gpus_per_node` GPUs of one type."""
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [{"gpu_type": gpu_type, "count": count, "gpus_per_node": gpus_per_node}],
        }
    )


def workload(
    *rows: tuple, columns: tuple[str, ...] = ("job_id", "submit_time", "num_gpus", "duration")
) -> pd.DataFrame:
    """A job table with only the given columns (validation fills the optional ones)."""
    return pd.DataFrame(list(rows), columns=list(columns))


def times(result: dlsched.SimulationResult) -> dict[object, tuple[float, float]]:
    """job id → (start, finish)."""
    jobs = result.jobs
    columns = zip(jobs["job_id"], jobs["start_time"], jobs["finish_time"], strict=True)
    return {job_id: (start, finish) for job_id, start, finish in columns}


def job(result: dlsched.SimulationResult, job_id: object) -> pd.Series:
    """One row of the jobs table."""
    return result.jobs.set_index("job_id").loc[job_id]


# ---- FIFO and backfilling -------------------------------------------------------------------

# One node of 4 GPUs. a holds 2 GPUs for 0..100; b (4 GPUs) cannot start before a ends;
# c and d (1 GPU each) would fit beside a, but sit behind b in the queue.
HOL = workload(("a", 0, 2, 100.0), ("b", 1, 4, 10.0), ("c", 2, 1, 10.0), ("d", 3, 1, 200.0))


def test_fifo_head_of_line_blocks_jobs_that_would_fit():
    """FIFO: b waits for a; c and d wait for b although 2 GPUs are free during 2..100."""
    # a 0→100; b needs all 4 → 100→110; c, d start when b ends: c 110→120, d 110→310.
    result = dlsched.simulate(HOL, cluster(), "fifo")
    assert times(result) == {
        "a": (0.0, 100.0),
        "b": (100.0, 110.0),
        "c": (110.0, 120.0),
        "d": (110.0, 310.0),
    }


def test_fifo_greedy_backfill_starts_later_jobs_as_soon_as_they_fit():
    """Greedy backfill: c and d start on submit beside a, and d then delays b until 203."""
    # c 2→12, d 3→203 on the 2 GPUs a leaves free; at 100 only 3 GPUs are free (d holds one),
    # so b starts when d ends: 203→213.
    result = dlsched.simulate(HOL, cluster(), "fifo", backfill="greedy")
    assert times(result) == {
        "a": (0.0, 100.0),
        "b": (203.0, 213.0),
        "c": (2.0, 12.0),
        "d": (3.0, 203.0),
    }


def test_fifo_easy_backfill_admits_a_short_job_but_not_a_long_one():
    """EASY: b's reservation is t=100; c (ends 12) backfills, d (would end 203) does not."""
    # Shadow time of b: a ends at 100, then 4 GPUs are free; spare GPUs then: 4 - 4 = 0.
    # c: 2 + 10 = 12 <= 100 → starts at 2. d: 3 + 200 = 203 > 100 and needs 1 > 0 spare → waits.
    # b 100→110, then d 110→310.
    result = dlsched.simulate(HOL, cluster(), "fifo", backfill="easy")
    assert times(result) == {
        "a": (0.0, 100.0),
        "b": (100.0, 110.0),
        "c": (2.0, 12.0),
        "d": (110.0, 310.0),
    }


def test_fifo_easy_reservation_counts_jobs_started_in_the_same_call():
    """EASY: a job started in the same call as the backfill still ends the head's wait."""
    # All at t=0 on 4 GPUs. a (2 GPUs, 10 s) starts; b (4 GPUs) is blocked; its reservation is
    # t=10 (a ends) with 0 spare GPUs. c (2 GPUs, 100 s) would end at 100 > 10 → must not
    # backfill. b 10→20, c 20→120.
    jobs = workload(("a", 0, 2, 10.0), ("b", 0, 4, 10.0), ("c", 0, 2, 100.0))
    result = dlsched.simulate(jobs, cluster(), "fifo", backfill="easy")
    assert times(result) == {"a": (0.0, 10.0), "b": (10.0, 20.0), "c": (20.0, 120.0)}


# ---- SJF and SRTF ---------------------------------------------------------------------------

# One GPU. a (100 s) starts at 0; b (50 s) arrives at 1; c (10 s) at 2.
THREE_ON_ONE_GPU = workload(("a", 0, 1, 100.0), ("b", 1, 1, 50.0), ("c", 2, 1, 10.0))


def test_sjf_does_not_preempt_a_running_long_job():
    """SJF: a keeps its GPU although shorter jobs arrive: it finishes at 100, unpreempted."""
    result = dlsched.simulate(THREE_ON_ONE_GPU, cluster(gpus_per_node=1), "sjf")
    assert times(result)["a"] == (0.0, 100.0)
    assert result.jobs["preemptions"].sum() == 0


def test_sjf_starts_the_shortest_pending_job_first():
    """SJF: when a ends, c (10 s) runs before b (50 s): c 100→110, b 110→160."""
    result = dlsched.simulate(THREE_ON_ONE_GPU, cluster(gpus_per_node=1), "sjf")
    assert times(result)["c"] == (100.0, 110.0)
    assert times(result)["b"] == (110.0, 160.0)


def test_sjf_skips_a_short_job_that_does_not_fit():
    """SJF: b (4 GPUs, shortest) does not fit beside a, so c (1 GPU) starts ahead of it."""
    # 4 GPUs; a (2 GPUs) 0→100. At 1: b needs 4, only 2 free → skipped; c 1→51.
    # b starts when a ends: 100→105.
    jobs = workload(("a", 0, 2, 100.0), ("b", 1, 4, 5.0), ("c", 1, 1, 50.0))
    result = dlsched.simulate(jobs, cluster(), "sjf")
    assert times(result) == {"a": (0.0, 100.0), "b": (100.0, 105.0), "c": (1.0, 51.0)}


def test_srtf_preempts_longer_jobs_without_overhead():
    """SRTF, no overhead: b preempts a at 1, c preempts b at 2; then b, then a."""
    # a 0→1 (99 left); b 1→2 (49 left); c 2→12; b 12→61; a 61→160.
    result = dlsched.simulate(THREE_ON_ONE_GPU, cluster(gpus_per_node=1), "srtf")
    finish = result.jobs.set_index("job_id")["finish_time"].to_dict()
    assert finish == {"a": 160.0, "b": 61.0, "c": 12.0}
    assert result.jobs.set_index("job_id")["preemptions"].to_dict() == {"a": 1, "b": 1, "c": 0}


def test_srtf_restart_costs_the_restart_overhead():
    """SRTF, 5 s restart overhead: b resumes 12→(17+49)=66, a resumes 66→(71+99)=170."""
    result = dlsched.simulate(
        THREE_ON_ONE_GPU, cluster(gpus_per_node=1), "srtf", restart_overhead_s=5.0
    )
    finish = result.jobs.set_index("job_id")["finish_time"].to_dict()
    assert finish == {"a": 170.0, "b": 66.0, "c": 12.0}
    restarts = result.events[result.events["event"] == "restart"]
    assert restarts[["time", "job_id", "overhead_s"]].values.tolist() == [
        [12.0, "b", 5.0],
        [66.0, "a", 5.0],
    ]


def test_srtf_first_start_is_free_and_overhead_holds_gpus():
    """SRTF, 5 s overhead: first starts cost 0; GPU-seconds include the overhead paid."""
    # a held 0→1 and 66→170: 1 + 104 = 105 = 100 + 5. b: 1→2 and 12→66: 1 + 54 = 55 = 50 + 5.
    result = dlsched.simulate(
        THREE_ON_ONE_GPU, cluster(gpus_per_node=1), "srtf", restart_overhead_s=5.0
    )
    starts = result.events[result.events["event"] == "start"]
    assert starts["overhead_s"].tolist() == [0.0, 0.0, 0.0]
    assert result.jobs.set_index("job_id")["gpu_seconds"].to_dict() == {
        "a": 105.0,
        "b": 55.0,
        "c": 10.0,
    }


def test_srtf_does_not_preempt_a_job_with_equal_remaining_time():
    """SRTF: b (50 s) arrives when a has exactly 50 s left; a is not preempted."""
    # a 0→100; at 50 a has 50 left = b's 50 → no preemption; b 100→150.
    jobs = workload(("a", 0, 1, 100.0), ("b", 50, 1, 50.0))
    result = dlsched.simulate(jobs, cluster(gpus_per_node=1), "srtf")
    assert times(result) == {"a": (0.0, 100.0), "b": (100.0, 150.0)}
    assert result.jobs["preemptions"].sum() == 0


def test_srtf_preempts_only_the_jobs_it_needs_to():
    """SRTF: a 4-GPU newcomer evicts the 4-GPU job, not the 1-GPU job beside it."""
    # 5 GPUs. v1 (1 GPU, 100 s) and v2 (4 GPUs, 90 s) start at 0. j (4 GPUs, 10 s) arrives at
    # 1: freeing v2's 4 GPUs is enough, so v1 runs on: v1 0→100, j 1→11, v2 resumes 11→100.
    # (Longest-first alone would also evict v1 and leave its GPU idle until j ends.)
    jobs = workload(("v1", 0, 1, 100.0), ("v2", 0, 4, 90.0), ("j", 1, 4, 10.0))
    result = dlsched.simulate(jobs, cluster(gpus_per_node=5), "srtf")
    assert job(result, "v1")["finish_time"] == 100.0
    assert job(result, "v1")["preemptions"] == 0
    assert job(result, "v2")["finish_time"] == 100.0


def test_srtf_restarts_a_preempted_job_at_once_on_idle_gpus_of_another_type():
    """SRTF: v, evicted from the V100s at 20, resumes at once on the idle P100 and ends at 100."""
    # P100 ×1 and one node of V100 ×4. At 0: p (10 s) takes the P100 (types tie on speed, so
    # by name), v (100 s) a V100. p ends at 10. At 20 j (4 GPUs, 10 s) needs every V100: v
    # (80 s left) is preempted, and the P100 is free: v 20→100 there, j 20→30.
    jobs = workload(("p", 0, 1, 10.0), ("v", 0, 1, 100.0), ("j", 20, 4, 10.0))
    hardware = dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 4},
                {"gpu_type": "P100", "count": 1, "gpus_per_node": 1},
            ],
        }
    )
    result = dlsched.simulate(jobs, hardware, "srtf")
    assert job(result, "j")["finish_time"] == 30.0
    assert job(result, "v")["finish_time"] == 100.0


def test_srtf_counts_no_progress_during_a_restart_overhead():
    """SRTF, 10 s overhead: at 30, a (still in its overhead, 99 s left) yields to d (95 s)."""
    # 1 GPU. a 0→1, preempted by b (20 s) 1→21; a restarts at 21, overhead until 31.
    # c (200 s) arrives at 22 and waits (200 > 99): a scheduling call during the overhead.
    # d (95 s) arrives at 30: a still has 99 s of work > 95 → preempted. d 30→125; then a
    # (99) before c (200): a restarts at 125, overhead to 135, ends 234; c 234→434.
    jobs = workload(("a", 0, 1, 100.0), ("b", 1, 1, 20.0), ("c", 22, 1, 200.0), ("d", 30, 1, 95.0))
    result = dlsched.simulate(jobs, cluster(gpus_per_node=1), "srtf", restart_overhead_s=10.0)
    assert times(result)["d"] == (30.0, 125.0)
    assert job(result, "a")["preemptions"] == 2
    assert job(result, "a")["finish_time"] == 234.0


def test_srtf_with_noisy_estimator_finishes_every_job():
    """SRTF on noisy estimates still runs every job to completion with its exact work."""
    jobs = workload(*[(f"j{i}", 7 * i, 1 + i % 3, 30.0 + 17 * i) for i in range(12)])
    result = dlsched.simulate(jobs, cluster(), "srtf", estimator="noisy", seed=3)
    assert (result.jobs["status"] == "finished").all()
    assert result.summary()["jobs_completed"] == 12
    # duration model, no overhead: every job holds its GPUs for exactly its duration
    expected = (result.jobs["num_gpus"] * result.jobs["total_steps"]).tolist()
    assert result.jobs["gpu_seconds"].tolist() == pytest.approx(expected)


# ---- heterogeneous speed (Gavel's table) ---------------------------------------------------


def test_job_on_a_slower_gpu_takes_steps_over_its_rate():
    """Gavel: 1000 steps of ResNet-18/64 on one K80 end at 10 + 1000 / rate(K80)."""
    rate = ProfileTable.gavel().throughput(RESNET18_64, "k80", 1)  # ≈ 7.05 steps/s
    jobs = workload(
        (1, 10.0, 1, 1000.0, RESNET18_64),
        columns=("job_id", "submit_time", "num_gpus", "total_steps", "model"),
    )
    result = dlsched.simulate(jobs, cluster("K80", gpus_per_node=1), throughput="gavel")
    assert job(result, 1)["finish_time"] == pytest.approx(10.0 + 1000.0 / rate, rel=1e-12)


DURATION_ON_V100 = workload(
    (1, 0.0, 1, 300.0, RESNET18_64, "v100"),
    columns=("job_id", "submit_time", "num_gpus", "duration", "model", "gpu_type"),
)


def test_duration_job_replayed_on_its_own_gpu_type_reproduces_its_duration():
    """Gavel: a 300 s job traced on V100, replayed alone on a V100, takes 300 s."""
    # steps = 300 × rate(V100); time on V100 = steps / rate(V100) = 300 (to rounding).
    result = dlsched.simulate(
        DURATION_ON_V100, cluster("V100", gpus_per_node=1), throughput="gavel"
    )
    assert job(result, 1)["finish_time"] == pytest.approx(300.0, rel=1e-12)


def test_duration_job_replayed_on_a_slower_type_scales_by_the_rate_ratio():
    """Gavel: the same job on a K80 takes 300 × rate(V100) / rate(K80) ≈ 1025 s."""
    table = ProfileTable.gavel()
    ratio = table.throughput(RESNET18_64, "v100", 1) / table.throughput(RESNET18_64, "k80", 1)
    result = dlsched.simulate(DURATION_ON_V100, cluster("K80", gpus_per_node=1), throughput="gavel")
    assert job(result, 1)["finish_time"] == pytest.approx(300.0 * ratio, rel=1e-12)


def test_job_spread_over_nodes_runs_at_the_unconsolidated_rate():
    """Gavel: 8 GPUs on two 4-GPU V100 nodes run at the table's unconsolidated 8-GPU rate."""
    table = ProfileTable.gavel()
    spread = table.measured(RESNET18_128, "v100", 8, consolidated=False)  # ≈ 61.1 steps/s
    together = table.measured(RESNET18_128, "v100", 8, consolidated=True)  # ≈ 162.1 steps/s
    assert spread is not None and spread != together
    jobs = workload(
        (1, 0.0, 8, 6000.0, RESNET18_128),
        columns=("job_id", "submit_time", "num_gpus", "total_steps", "model"),
    )
    result = dlsched.simulate(jobs, cluster("V100", count=2, gpus_per_node=4), throughput="gavel")
    assert job(result, 1)["finish_time"] == pytest.approx(6000.0 / spread, rel=1e-12)
    start = result.events[result.events["event"] == "start"]
    assert start["rate"].tolist() == pytest.approx([spread], rel=1e-12)


# ---- engine semantics -----------------------------------------------------------------------


def test_jobs_submitted_at_one_instant_share_one_scheduling_call():
    """Three jobs submitted at t=0 give one scheduling call; starts come in job-id order."""
    # Rows are given out of order; ties break by job id. All three finish at 10 together and
    # nothing is left to schedule then, so that instant asks for no policy call.
    jobs = workload(("c", 0, 1, 10.0), ("a", 0, 1, 10.0), ("b", 0, 1, 10.0))
    result = dlsched.simulate(jobs, cluster(), "fifo")
    assert result.meta["scheduling_calls"] == 1
    starts = result.events[result.events["event"] == "start"]
    assert starts["job_id"].tolist() == ["a", "b", "c"]
    assert starts["time"].tolist() == [0.0, 0.0, 0.0]


def test_an_arrival_and_a_completion_at_one_instant_share_one_scheduling_call():
    """a ends at 10 when b arrives: calls at t=0 and t=10 only; b starts at 10."""
    jobs = workload(("a", 0, 4, 10.0), ("b", 10, 4, 10.0))
    result = dlsched.simulate(jobs, cluster(), "fifo")
    assert result.meta["scheduling_calls"] == 2
    assert times(result)["b"] == (10.0, 20.0)


def test_integer_job_ids_break_ties_numerically():
    """Ids 10, 9, 100 submitted together start in the order 9, 10, 100 (not as text)."""
    jobs = workload((10, 0, 1, 5.0), (9, 0, 1, 5.0), (100, 0, 1, 5.0))
    result = dlsched.simulate(jobs, cluster(), "fifo")
    starts = result.events[result.events["event"] == "start"]
    assert starts["job_id"].tolist() == [9, 10, 100]


# ---- jobs that can never run ----------------------------------------------------------------


def test_job_larger_than_the_cluster_raises_naming_num_gpus():
    """Strict: a 5-GPU job on a 4-GPU cluster raises TraceError naming field num_gpus."""
    jobs = workload(("a", 0, 1, 10.0), ("big", 0, 5, 10.0))
    with pytest.raises(TraceError, match="num_gpus") as caught:
        dlsched.simulate(jobs, cluster(), "fifo")
    assert caught.value.field == "num_gpus"


def test_job_larger_than_the_cluster_is_unschedulable_when_lenient(tmp_path):
    """Lenient: the 5-GPU job is reported unschedulable; a 0→10 and b 10→20 still finish."""
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,num_gpus,duration\na,0,1,10\nbig,0,5,10\nb,1,4,10\n")
    result = dlsched.simulate(dlsched.load_trace(path, lenient=True), cluster(), "fifo")
    status = result.jobs.set_index("job_id")["status"].to_dict()
    assert status == {"a": "finished", "big": "unschedulable", "b": "finished"}
    assert result.summary()["jobs_unschedulable"] == 1
    assert result.summary()["jobs_completed"] == 2
    assert times(result)["b"] == (10.0, 20.0)
    assert result.events[result.events["event"] == "unschedulable"]["job_id"].tolist() == ["big"]


def test_unknown_model_under_gavel_raises_naming_model():
    """Gavel: a model the table lacks raises TraceError naming field model."""
    jobs = workload(
        (1, 0.0, 1, 100.0, "NoSuchNet"),
        columns=("job_id", "submit_time", "num_gpus", "duration", "model"),
    )
    with pytest.raises(TraceError, match="model") as caught:
        dlsched.simulate(jobs, cluster("V100"), throughput="gavel")
    assert caught.value.field == "model"


# ---- metrics --------------------------------------------------------------------------------


def test_deadline_summary_counts_misses_and_tardiness():
    """Deadlines 150 and 150 on one GPU: a ends 100 (met), b ends 200 (50 s late)."""
    jobs = workload(
        ("a", 0, 1, 100.0, 150.0),
        ("b", 0, 1, 100.0, 150.0),
        columns=("job_id", "submit_time", "num_gpus", "duration", "deadline"),
    )
    result = dlsched.simulate(jobs, cluster(gpus_per_node=1), "fifo")
    summary = result.summary()
    assert summary["deadlines_missed"] == 1
    assert summary["deadline_satisfaction"] == 0.5
    assert summary["total_tardiness"] == 50.0
    assert result.jobs["tardiness"].tolist() == [0.0, 50.0]
    assert result.jobs["deadline_met"].tolist() == [True, False]


def test_summary_without_deadlines_has_no_deadline_keys():
    """A workload with no deadlines reports no deadline metrics."""
    result = dlsched.simulate(workload(("a", 0, 1, 10.0)), cluster(), "fifo")
    assert "deadlines_missed" not in result.summary()
    assert "deadline" not in result.jobs.columns


def test_summary_numbers_on_two_jobs():
    """2 GPUs; a (2 GPUs, 0→10) then b (1 GPU, submitted 5, 10→30)."""
    # JCT a 10, b 30 - 5 = 25 → avg 17.5; makespan 30 - 0 = 30; queueing (0 + 5) / 2 = 2.5;
    # utilization = (2×10 + 1×20) / (2 GPUs × 30 s) = 40 / 60.
    jobs = workload(("a", 0, 2, 10.0), ("b", 5, 1, 20.0))
    result = dlsched.simulate(jobs, cluster(gpus_per_node=2), "fifo")
    summary = result.summary()
    assert summary["avg_jct"] == 17.5
    assert summary["makespan"] == 30.0
    assert summary["avg_queueing_delay"] == 2.5
    assert summary["utilization"] == pytest.approx(40.0 / 60.0)
    assert summary["jobs_completed"] == 2
    assert summary["sim_wall_s"] >= 0.0


def test_result_round_trips_through_save_and_load(tmp_path):
    """save() then load() gives back equal jobs, events, timeline and meta."""
    jobs = workload(
        ("x", 0, 1, 100.0, 150.0),
        ("y", 1, 1, 50.0, None),
        ("z", 2, 1, 10.0, 13.0),
        columns=("job_id", "submit_time", "num_gpus", "duration", "deadline"),
    )
    result = dlsched.simulate(jobs, cluster(gpus_per_node=1), "srtf", restart_overhead_s=5.0)
    assert result.jobs["preemptions"].sum() > 0  # the event log has preempt and restart rows
    result.save(tmp_path / "run")
    loaded = dlsched.SimulationResult.load(tmp_path / "run")
    pd.testing.assert_frame_equal(loaded.jobs, result.jobs)
    pd.testing.assert_frame_equal(loaded.events, result.events)
    pd.testing.assert_frame_equal(loaded.timeline, result.timeline)
    assert loaded.meta == result.meta
    assert math.isclose(loaded.summary()["avg_jct"], result.summary()["avg_jct"])
