"""Gavel: allocation LPs worked by hand, and the round-based mechanism end to end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.policies import names
from dlsched.policies.gavel.lp import (
    Problem,
    check_feasible,
    finish_time_fairness,
    finish_time_ratios,
    max_min,
    max_min_fairness,
    max_sum_throughput,
)
from dlsched.policies.gavel.policies import MaxMinFairnessPerf

RESNET18_64 = "ResNet-18 (batch size 64)"
TRANSFORMER_128 = "Transformer (batch size 128)"
GAVEL_NAMES = (
    "max_min_fairness",
    "max_min_fairness_perf",
    "max_sum_throughput_perf",
    "finish_time_fairness",
    "finish_time_fairness_perf",
    "max_min_fairness_packed",
    "min_total_duration",
    "min_total_duration_perf",
    "min_cost",
    "min_cost_slo",
    "fifo_perf",
    "gavel_fifo",
    "fifo_packed",
    "hierarchical",
    "max_sum_throughput_normalized_by_cost_perf",
    "max_sum_throughput_normalized_by_cost_perf_SLOs",
)


def v100_k80(v100: int = 1, k80: int = 1) -> dlsched.Cluster:
    """One node of `v100` V100s and one of `k80` K80s."""
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": v100},
                {"gpu_type": "K80", "count": 1, "gpus_per_node": k80},
            ],
        }
    )


def times(result: dlsched.SimulationResult) -> dict[object, tuple[float, float]]:
    """job id → (start, finish)."""
    jobs = result.jobs
    return {
        j: (s, f)
        for j, s, f in zip(jobs["job_id"], jobs["start_time"], jobs["finish_time"], strict=True)
    }


# ---- LPs, known answers ------------------------------------------------------------------


def test_heterogeneity_aware_max_min_splits_both_types_evenly_for_10x_and_2x_jobs():
    """A (10× on V100) and B (2×) on 1 V100 + 1 K80: X = ½ everywhere, both at 1× equal share."""
    # Equal share e = (½, ½): T_equal(A) = 5.5, T_equal(B) = 1.5. B ≥ 1 needs
    # 2·b_V + b_K ≥ 1.5 with b_V + b_K ≤ 1, so b_V ≥ ½, a_V ≤ ½, and A ≥ 1 needs
    # 10·a_V + a_K ≥ 5.5 with a_K ≤ 1 − a_V, so a_V ≥ ½: the optimum is unique.
    x = max_min_fairness(Problem.build([[10.0, 1.0], [2.0, 1.0]], [1, 1], [1, 1]))
    assert x == pytest.approx(np.full((2, 2), 0.5), abs=1e-9)


def test_agnostic_max_min_gives_three_jobs_two_thirds_of_two_gpus_each():
    """Three 1-GPU jobs, two GPUs, throughput 1 everywhere: each runs ⅔ of the time."""
    x = max_min_fairness(Problem.build(np.ones((3, 2)), [1, 1, 1], [1, 1]))
    assert x.sum(axis=1) == pytest.approx([2 / 3] * 3, abs=1e-9)


def test_max_min_weights_split_one_gpu_in_their_ratio():
    """Weights 2 and 1 on one GPU: time shares ⅔ and ⅓."""
    x = max_min_fairness(Problem.build([[1.0], [1.0]], [1, 1], [1], weights=[2, 1]))
    assert x[:, 0] == pytest.approx([2 / 3, 1 / 3], abs=1e-9)


def test_max_min_equalises_gpu_time_across_gang_sizes():
    """A 2-GPU and a 1-GPU job on 2 GPUs: X = (½, 1), one GPU-second per second each."""
    # max t: t ≤ 2·x_a, t ≤ x_b ≤ 1, 2·x_a + x_b ≤ 2 → t = 1, x_a = ½, x_b = 1.
    x = max_min_fairness(Problem.build([[1.0], [1.0]], [2, 1], [2]))
    assert x[:, 0] == pytest.approx([0.5, 1.0], abs=1e-9)


def test_max_sum_throughput_sends_the_k80_tolerant_job_to_the_k80():
    """A loses 90% on K80, B 50%: A gets the V100, B the K80 (X is the identity)."""
    # Normalised value a_V + 0.1·a_K + b_V + 0.5·b_K; moving x of B to the V100 costs 0.4·x.
    x = max_sum_throughput(Problem.build([[10.0, 1.0], [2.0, 1.0]], [1, 1], [1, 1]))
    assert x == pytest.approx(np.eye(2), abs=1e-9)


def test_finish_time_fairness_of_new_jobs_is_max_min_fairness():
    """Elapsed 0: ρ_j = T_equal[j] / effective_j, so min max ρ is the max-min X (all ½)."""
    problem = Problem.build([[10.0, 1.0], [2.0, 1.0]], [1, 1], [1, 1])
    x = finish_time_fairness(problem, [0.0, 0.0], [1000.0, 50.0])
    assert x == pytest.approx(np.full((2, 2), 0.5), abs=1e-5)


def test_finish_time_fairness_puts_each_job_on_the_type_it_prefers():
    """A is 10× faster on V100, B 2× faster on K80: B gets the K80, A ≥ 11/15 of the V100."""
    # e = (½, ½): T_equal(A) = 5.5, T_equal(B) = 1.5; elapsed 0 → ρ_j = T_equal / effective.
    # B's best is all K80 (ρ_B = 0.75, its floor); A needs 10·a_V + a_K ≥ 5.5/0.75 = 22/3
    # with a_K = 0 (the K80 is B's), so a_V ≥ 22/30 ≈ 0.733 — any such X is optimal.
    problem = Problem.build([[10.0, 1.0], [1.0, 2.0]], [1, 1], [1, 1])
    x = finish_time_fairness(problem, [0.0, 0.0], [1000.0, 100.0])
    assert x[1] == pytest.approx([0.0, 1.0], abs=1e-5)
    assert 10 * x[0, 0] + x[0, 1] >= 22 / 3 - 1e-4


def test_finish_time_fairness_spending_the_leftover_gives_a_the_whole_v100():
    """Same jobs, spend_leftover: ρ_B = 0.75 stays the optimum, and the V100 time the
    vertex may leave idle goes to A (most normalised throughput): X = identity."""
    problem = Problem.build([[10.0, 1.0], [1.0, 2.0]], [1, 1], [1, 1])
    x = finish_time_fairness(problem, [0.0, 0.0], [1000.0, 100.0], spend_leftover=True)
    assert x == pytest.approx(np.eye(2), abs=1e-6)


@pytest.mark.parametrize("seed", range(8))
def test_spending_the_leftover_keeps_the_optimum_and_allocates_more(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 30)), int(rng.integers(1, 4))
    tput = rng.uniform(0.1, 10, (n, m)) * (rng.random((n, m)) > 0.2)
    problem = Problem.build(tput, rng.choice([1, 2], n), rng.integers(1, 9, m))
    elapsed, remaining = rng.uniform(0, 1e4, n), rng.uniform(1, 1e5, n)
    vertex = finish_time_fairness(problem, elapsed, remaining)
    spent = finish_time_fairness(problem, elapsed, remaining, spend_leftover=True)
    check_feasible(problem, spent)
    rho = lambda x: np.nanmax(finish_time_ratios(problem, x, elapsed, remaining))  # noqa: E731
    assert rho(spent) == pytest.approx(rho(vertex), rel=1e-5)
    equal = problem.equal_share_throughput()
    live = equal > 0
    score = lambda x: ((tput * problem.usable * x).sum(axis=1)[live] / equal[live]).sum()  # noqa: E731
    assert score(spent) >= score(vertex) - 1e-6


def test_jobs_that_cannot_use_a_type_get_no_time_there():
    """A job too big for the K80 pool, or with throughput 0 there, gets X = 0 on K80."""
    problem = Problem.build([[1.0, 1.0], [1.0, 0.0]], [2, 1], [2, 1])
    for x in (
        max_min_fairness(problem),
        max_sum_throughput(problem),
        finish_time_fairness(problem, [10.0, 0.0], [50.0, 80.0]),
    ):
        assert x[:, 1] == pytest.approx([0.0, 0.0], abs=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_lp_solutions_satisfy_every_constraint_on_random_instances(seed):
    """Random jobs, gangs and capacities: both LPs stay feasible; max-min beats equal share."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 40)), int(rng.integers(1, 4))
    tput = rng.uniform(0, 10, (n, m)) * (rng.random((n, m)) > 0.2)
    scale = rng.choice([1, 2, 4, 8], n)
    weights = rng.uniform(0.5, 2, n)
    problem = Problem.build(tput, scale, rng.integers(1, 17, m), weights)
    elapsed, remaining = rng.uniform(0, 1e4, n), rng.uniform(1, 1e5, n)
    for solve in (max_min_fairness, max_sum_throughput):
        check_feasible(problem, solve(problem))
    check_feasible(problem, finish_time_fairness(problem, elapsed, remaining))
    x = max_min_fairness(problem)
    live = problem.equal_share_throughput() > 0
    if live.any():  # the equal share is feasible and scores s_j / w_j for every job
        fair = (
            (tput * problem.usable * x).sum(axis=1)[live]
            * scale[live]
            / (weights[live] * problem.equal_share_throughput()[live])
        )
        assert fair.min() >= (scale[live] / weights[live]).min() - 1e-6


def test_grouping_identical_jobs_keeps_the_max_min_optimum():
    """Jobs repeated from 3 templates: one LP row per class reaches the per-job LP's value."""
    rng = np.random.default_rng(7)
    templates = rng.uniform(0.5, 10, (3, 2))
    picks = rng.integers(0, 3, 12)
    problem = Problem.build(templates[picks], np.ones(12), [3, 4])
    x = max_min_fairness(problem)
    check_feasible(problem, x)
    equal = problem.equal_share_throughput()
    coef = problem.throughputs / equal[:, None]
    _, best = max_min(problem, coef)  # no grouping
    assert (coef * x).sum(axis=1).min() == pytest.approx(best, rel=1e-7)


# ---- mechanism ---------------------------------------------------------------------------


def test_gavel_policies_are_registered_under_gavels_names():
    """Gavel's names (and `gavel_fifo` for its agnostic FIFO, as `fifo` is dlsched's)."""
    assert set(GAVEL_NAMES) <= set(names())


def test_two_jobs_on_one_gpu_alternate_by_round():
    """Agnostic LAS, two 720 s jobs on one GPU: a 0–360, b 360–720, a 720–1080, b –1440."""
    # X = ½ each; each job starts with 180 s of credit on the V100 (360 s in all), priority =
    # X / (credit / total). t=0: ½ / ½ each, tie → submit order: a. t=360: a 540/720, b
    # 180/720 → b. t=720: 540/1080 each, tie → a, which ends at 1080; b ends at 1440.
    jobs = pd.DataFrame(
        [("a", 0.0, 1, 720.0), ("b", 0.0, 1, 720.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration"],
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 1}]}
    )
    result = dlsched.simulate(jobs, cluster, policy="max_min_fairness")
    assert times(result) == {"a": (0.0, 1080.0), "b": (360.0, 1440.0)}


def test_a_job_chosen_again_keeps_its_gpus_across_rounds():
    """Lease extension: a lone job runs through many rounds with no preemption or move."""
    jobs = pd.DataFrame(
        [(1, 0.0, 1, 200_000.0, RESNET18_64)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    result = dlsched.simulate(jobs, v100_k80(), policy="max_min_fairness_perf", throughput="gavel")
    row = result.jobs.iloc[0]
    assert (row["preemptions"], row["migrations"]) == (0, 0)
    assert result.summary()["scheduling_calls"] > 5  # it did live through several rounds


def test_lp_is_resolved_only_when_the_job_set_changes():
    """Across many rounds, consecutive LP solves always see different sets of jobs."""

    class Recording(MaxMinFairnessPerf):
        def solve(self, problem, jobs, view):
            seen.append(frozenset(job.job_id for job in jobs))
            return super().solve(problem, jobs, view)

    seen: list[frozenset] = []
    jobs = pd.DataFrame(
        [(i, 100.0 * i, 1, 30_000.0 + 5_000 * i, RESNET18_64) for i in range(4)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    result = dlsched.simulate(jobs, v100_k80(), policy=Recording(), throughput="gavel")
    assert result.summary()["jobs_completed"] == 4
    assert result.summary()["scheduling_calls"] > len(seen) + 5  # rounds passed unsolved
    assert all(a != b for a, b in zip(seen, seen[1:], strict=False))


@pytest.mark.parametrize("policy", GAVEL_NAMES[:5])
def test_every_job_finishes_on_a_small_heterogeneous_cluster(policy):
    """Gavel models, gangs of 1–2, 2 V100 + 2 K80: every job completes under each policy."""
    rows = [
        (i, 100.0 * i, 1 + (i % 3 == 0), 3000.0, (RESNET18_64, TRANSFORMER_128)[i % 2])
        for i in range(8)
    ]
    jobs = pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"])
    result = dlsched.simulate(jobs, v100_k80(2, 2), policy=policy, throughput="gavel")
    assert result.summary()["jobs_completed"] == 8


@pytest.mark.parametrize("policy", ["finish_time_fairness", "finish_time_fairness_perf"])
def test_finish_time_fairness_finishes_jobs_that_outlive_their_estimate(policy):
    """Noisy estimates (σ = 0.5): jobs estimated to have 0 steps left still get time."""
    rows = [(i, 100.0 * i, 1, 3000.0, (RESNET18_64, TRANSFORMER_128)[i % 2]) for i in range(8)]
    jobs = pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"])
    result = dlsched.simulate(
        jobs, v100_k80(), policy=policy, throughput="gavel", estimator="noisy:0.5", seed=2
    )  # seed 2 underestimates some
    assert result.summary()["jobs_completed"] == 8


def test_gpus_freed_mid_round_wait_for_the_round_without_fill_idle():
    """fill_idle=False: a GPU freed mid-round idles until the next round tick (Gavel)."""
    jobs = pd.DataFrame(
        [("a", 0.0, 1, 1000.0), ("b", 0.0, 1, 100.0), ("c", 0.0, 1, 100.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration"],
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )
    # all three have X from the solve at 0; a and b win the tie (arrival order); b's GPU,
    # free from 100, waits for the round at 360 (a still runs, so the no-stall rule is off).
    result = dlsched.simulate(jobs, cluster, policy="max_min_fairness", fill_idle=False)
    assert times(result) == {"a": (0.0, 1000.0), "b": (0.0, 100.0), "c": (360.0, 460.0)}


@pytest.mark.parametrize(("interval", "start"), [(720.0, 1080.0), (1920.0, 1100.0)])
def test_job_without_an_allocation_waits_for_the_next_solve(interval, start):
    """Gavel: a job that arrived after the last solve is taken at priority 0 and skipped,
    so the GPU it would use idles until X is re-solved (solve at 100 s; with a 720 s
    interval at the first round from 820 s, 1080 s; with the default 1920 s, when a ends at
    1100 s and nothing runs). The jobs start at 100 s: a solve at t = 0 would not start
    the interval (Gavel's `_last_reset_time == 0` test; `test_gavel_multigpu.py`)."""
    jobs = pd.DataFrame(
        [("a", 100.0, 1, 1000.0), ("b", 100.0, 1, 100.0), ("c", 110.0, 1, 100.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration"],
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )
    result = dlsched.simulate(jobs, cluster, policy="max_min_fairness", resolve_interval_s=interval)
    assert times(result) == {
        "a": (100.0, 1100.0),
        "b": (100.0, 200.0),
        "c": (start, start + 100.0),
    }


def test_gpus_freed_mid_round_go_to_waiting_jobs_with_fill_idle():
    """fill_idle=True: the same b starts at 100, when a's GPU is freed."""
    jobs = pd.DataFrame(
        [("c", 0.0, 1, 1000.0), ("a", 0.0, 1, 100.0), ("b", 10.0, 1, 100.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration"],
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )
    result = dlsched.simulate(jobs, cluster, policy="max_min_fairness", fill_idle=True)
    assert times(result)["b"] == (100.0, 200.0)
