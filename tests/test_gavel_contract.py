"""Gavel's policies under the engine–policy contract: per-run state built in `start`, random
choices from the run's stream (`view.rng`) unless a `seed` asks for a fixed draw, and pair
throughputs from the estimator, never from the truth."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

import dlsched
from dlsched import policies
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobSpec
from dlsched.policies.base import BasePolicy
from dlsched.policies.gavel.packing import pair_throughput

RESNET18_64 = "ResNet-18 (batch size 64)"
TRANSFORMER_128 = "Transformer (batch size 128)"
RESNET50_64 = "ResNet-50 (batch size 64)"
GAVEL = (
    "max_min_fairness",
    "max_min_fairness_perf",
    "max_min_fairness_packed",
    "finish_time_fairness",
    "finish_time_fairness_perf",
    "min_total_duration",
    "min_total_duration_perf",
    "max_sum_throughput_perf",
    "fifo_perf",
    "gavel_fifo",
    "fifo_packed",
    "hierarchical",
)


def three_types() -> dlsched.Cluster:
    """One V100, one P100, one K80 (one node each)."""
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [
                {"gpu_type": t, "count": 1, "gpus_per_node": 1} for t in ("V100", "P100", "K80")
            ],
        }
    )


def mixed_jobs(n: int = 8) -> pd.DataFrame:
    """Single-GPU jobs of three Gavel models arriving every 200 s, more than the GPUs."""
    models = (RESNET18_64, TRANSFORMER_128, RESNET50_64)
    rows = [(i, 200.0 * i, 1, 4000.0 + 900 * i, models[i % 3]) for i in range(n)]
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"])


def finish_times(policy: object, seed: int = 0) -> list[float]:
    result = dlsched.simulate(
        mixed_jobs(), three_types(), policy=policy, throughput="gavel", seed=seed
    )
    return result.jobs["finish_time"].tolist()


@pytest.mark.parametrize(
    ("name", "params"),
    [(name, {}) for name in GAVEL]
    + [
        ("max_min_fairness", {"exact": True}),
        ("max_min_fairness_perf", {"fill_idle": True}),
        ("max_min_fairness_perf", {"charge_type_change": True}),
        ("max_min_fairness_packed", {"exact": True}),
        ("gavel_fifo", {"type_choice": "random"}),
    ],
)
def test_one_instance_gives_two_identical_runs(name, params):
    """The same Gavel policy instance passed to simulate() twice: equal jobs and events."""
    policy = policies.get(name, **params)
    runs = [
        dlsched.simulate(
            mixed_jobs(), three_types(), policy=policy, throughput="gavel", restart_overhead_s=5.0
        )
        for _ in range(2)
    ]
    assert runs[0].summary()["jobs_completed"] == len(mixed_jobs())
    assert runs[0].jobs.equals(runs[1].jobs)
    assert runs[0].events.equals(runs[1].events)


def test_a_run_forgets_the_jobs_of_the_previous_run():
    """gavel_fifo's type order comes from the jobs seen in this run only: after a run of
    jobs that prefer the P100, a ResNet-50 alone still gets the V100, as on a fresh instance."""
    recommendation = "Recommendation (batch size 512)"
    first = pd.DataFrame(
        [(i, 0.0, 1, 2000.0, recommendation) for i in range(4)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    second = pd.DataFrame(
        [("r50", 0.0, 1, 2000.0, RESNET50_64)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    policy = policies.get("gavel_fifo")
    dlsched.simulate(first, three_types(), policy=policy, throughput="gavel")
    result = dlsched.simulate(second, three_types(), policy=policy, throughput="gavel")
    row = result.jobs.iloc[0]
    assert row["gpu_seconds_V100"] > 0 and row["gpu_seconds_P100"] == 0


def test_the_solve_count_is_per_run():
    """`solves` counts the current run's LP solves, not every run's since construction."""
    policy = policies.get("max_min_fairness_perf")
    finish_times(policy)
    first = policy.solves
    finish_times(policy)
    assert policy.solves == first > 0


def test_the_run_seed_reaches_the_agnostic_type_shuffle():
    """With no policy seed, `simulate(seed=...)` changes the agnostic type order (and runs)."""
    runs = {tuple(finish_times("max_min_fairness", seed)) for seed in range(4)}
    assert len(runs) > 1


def test_a_policy_seed_replays_a_fixed_type_shuffle_whatever_the_run_seed():
    """`seed=3` on the policy: the same shuffle, hence the same run, under any run seed."""
    policy = policies.get("max_min_fairness", seed=3)
    assert finish_times(policy, seed=0) == finish_times(policy, seed=1)


def test_policy_seeds_give_different_shuffles():
    """Two policy seeds are two different draws (the seed is not ignored)."""
    runs = {tuple(finish_times(policies.get("max_min_fairness", seed=s))) for s in range(4)}
    assert len(runs) > 1


def gavel_fifo_types(**params: object) -> tuple[str, ...]:
    """The GPU type each job ran on under gavel_fifo with a random type choice."""
    jobs = pd.DataFrame(
        [(i, 0.0, 1, 2000.0, RESNET18_64) for i in range(3)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    seed = int(params.pop("run_seed", 0))  # type: ignore[call-overload]
    result = dlsched.simulate(
        jobs,
        three_types(),
        policy=policies.get("gavel_fifo", type_choice="random", **params),
        throughput="gavel",
        seed=seed,
    )
    columns = [f"gpu_seconds_{t}" for t in ("V100", "P100", "K80")]
    return tuple(str(result.jobs.loc[i, columns].astype(float).idxmax()) for i in range(3))


def test_gavel_fifo_random_type_choice_follows_the_run_seed():
    """type_choice="random" with no policy seed: the run seed changes which job gets which type."""
    assert len({gavel_fifo_types(run_seed=s) for s in range(6)}) > 1


def test_gavel_fifo_random_type_choice_with_a_policy_seed_is_fixed():
    """type_choice="random", seed=5: the same types under any run seed."""
    assert gavel_fifo_types(seed=5, run_seed=0) == gavel_fifo_types(seed=5, run_seed=1)


@pytest.mark.parametrize("bad", [1.5, "3", True])
def test_a_seed_that_is_not_an_integer_is_refused(bad):
    """The policy seed must be an integer or None; the message names the parameter."""
    with pytest.raises(ValueError, match="seed"):
        policies.get("max_min_fairness", seed=bad)


class _StubEstimator:
    """Says every pair runs at 7 steps/s on 2 nodes, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def consolidated_nodes(self, gpu_type: str, n_gpus: int) -> int:
        return 2

    def colocated_throughput(self, job, gpu_type, n_gpus, partners, n_nodes=1) -> float:
        self.asked.append((job.model, gpu_type, n_gpus, tuple(partners), n_nodes))
        return 7.0


def test_pair_throughput_asks_the_estimator_not_the_truth():
    """A pair's rate is the estimator's colocated rate on the consolidated node count."""
    estimator = _StubEstimator()
    view = SimpleNamespace(estimator=estimator)
    a = JobSpec(
        index=0, job_id="a", submit_time=0.0, num_gpus=4, total_steps=1.0, model=RESNET18_64
    )
    b = JobSpec(
        index=1, job_id="b", submit_time=0.0, num_gpus=4, total_steps=1.0, model=TRANSFORMER_128
    )
    assert pair_throughput(view, a, b, "v100") == 7.0  # type: ignore[arg-type]
    assert estimator.asked == [(RESNET18_64, "v100", 4, ((TRANSFORMER_128, 4),), 2)]


def test_pair_throughput_of_the_oracle_is_the_measured_pair_rate():
    """With the oracle, a pair runs slower than alone but not at 0 (Gavel measured it)."""
    seen: dict[str, float] = {}

    class Probe(BasePolicy):
        name = "probe"

        def schedule(self, view: ClusterView):
            if len(view.pending) >= 2 and not seen:
                a, b = (job.spec for job in list(view.pending.values())[:2])
                seen["pair"] = pair_throughput(view, a, b, "v100")
                seen["solo"] = view.estimator.throughput(a, "v100")
            return None

    jobs = pd.DataFrame(
        [(0, 0.0, 1, 1000.0, RESNET18_64), (1, 0.0, 1, 1000.0, TRANSFORMER_128)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    with pytest.warns(RuntimeWarning):  # nothing ever starts: the run is cut at max_time_s
        dlsched.simulate(jobs, three_types(), policy=Probe(), throughput="gavel", max_time_s=1.0)
    assert 0 < seen["pair"] < seen["solo"]


class _SwapOnce:
    """Wraps a policy; the first time it runs job "a", runs "b" on a's GPUs instead."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.round_s = inner, inner.name, inner.round_s

    def start(self, view: ClusterView) -> None:
        self.swapped = False
        self.inner.start(view)

    def on_arrival(self, job) -> None:
        self.inner.on_arrival(job)

    def on_finish(self, job) -> None:
        self.inner.on_finish(job)

    def schedule(self, view: ClusterView):
        alloc = self.inner.schedule(view)
        if alloc is not None and not self.swapped and "a" in alloc and "b" not in alloc:
            gpus = alloc["a"]
            del alloc["a"]
            alloc["b"] = gpus
            self.swapped = True
        return alloc


def test_the_mechanism_follows_the_engine_when_someone_else_swaps_its_jobs():
    """A wrapper swaps a for b on one GPU (same count of running jobs): Gavel's next rounds
    still see b running, not a, and both jobs finish with every invariant kept."""
    jobs = pd.DataFrame(
        [("a", 0.0, 1, 1000.0), ("b", 0.0, 1, 1000.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration"],
    )
    one_gpu = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 1}]}
    )
    policy = _SwapOnce(policies.get("max_min_fairness"))
    result = dlsched.simulate(jobs, one_gpu, policy=policy, audit=True)
    assert policy.swapped
    assert result.summary()["jobs_completed"] == 2
    assert result.jobs["finish_time"].max() == pytest.approx(2000.0)
