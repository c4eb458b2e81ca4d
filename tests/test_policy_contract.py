"""The engine–policy contract: lifecycle, truth, randomness, stalls and time limits."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched import policies
from dlsched.engine.simulator import STALL_CALLS
from dlsched.perf.base import ThroughputModel
from dlsched.perf.rates import JobRates
from dlsched.policies.base import BasePolicy

CLUSTER = {
    "name": "two-types",
    "gpu_types": {"V100": {"cost_per_hour": 3.0}, "K80": {"cost_per_hour": 1.0}},
    "nodes": [
        {"name": "v", "gpu_type": "V100", "count": 2, "gpus_per_node": 4},
        {"name": "k", "gpu_type": "K80", "count": 2, "gpus_per_node": 4},
    ],
}

# Parameters a policy needs to run at all on the small workload below.
NEEDS: dict[str, dict[str, object]] = {}
# Policies of one-GPU jobs only (Hydra's formulation): they refuse any other job by design.
ONE_GPU = {"hydra", "allox"}


def _workload(n: int = 24, seed: int = 1, one_gpu: bool = False) -> pd.DataFrame:
    """Jobs of Gavel's models (so every throughput model and policy can run them)."""
    rng = np.random.default_rng(seed)
    models = [
        "ResNet-18 (batch size 64)",
        "ResNet-50 (batch size 32)",
        "Transformer (batch size 64)",
        "LM (batch size 20)",
    ]
    return pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_time": np.sort(rng.integers(0, 3000, n)).astype(float),
            "num_gpus": rng.choice([1] if one_gpu else [1, 1, 1, 2, 4], n),
            "duration": rng.integers(200, 4000, n).astype(float),
            "model": [models[i] for i in rng.integers(0, len(models), n)],
            "deadline": np.sort(rng.integers(0, 3000, n)).astype(float) + 20000.0,
        }
    )


def _run(
    policy: object, seed: int = 0, one_gpu: bool = False, **kwargs: object
) -> dlsched.SimulationResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return dlsched.simulate(
            _workload(one_gpu=one_gpu),
            dlsched.Cluster.from_dict(CLUSTER),
            policy=policy,  # type: ignore[arg-type]
            throughput="gavel",
            seed=seed,
            restart_overhead_s=5.0,
            audit=True,
            **kwargs,  # type: ignore[arg-type]
        )


@pytest.mark.parametrize("name", policies.names(aliases=False))
def test_one_instance_serves_two_identical_runs(name):
    """The same policy instance passed to simulate() twice gives two correct, identical runs."""
    policy = policies.get(name, **NEEDS.get(name, {}))
    one_gpu = name in ONE_GPU
    first, second = _run(policy, one_gpu=one_gpu), _run(policy, one_gpu=one_gpu)
    assert first.summary()["jobs_completed"] > 0
    assert first.jobs.equals(second.jobs)
    assert first.events.equals(second.events)
    fresh = _run(policies.get(name, **NEEDS.get(name, {})), one_gpu=one_gpu)
    assert first.jobs.equals(fresh.jobs)


@pytest.mark.parametrize("name", policies.names(aliases=False))
def test_a_run_cut_short_leaves_nothing_for_the_next(name):
    """A run stopped halfway (queues still full) and then a whole run on the same instance:
    the whole run equals a fresh instance's. Per-run state belongs in `start(view)`; a
    policy that builds its queues in `__init__` passes two whole runs (they end empty) but
    not this."""
    policy = policies.get(name, **NEEDS.get(name, {}))
    one_gpu = name in ONE_GPU
    _run(policy, one_gpu=one_gpu, max_time_s=1500.0)
    again = _run(policy, one_gpu=one_gpu)
    fresh = _run(policies.get(name, **NEEDS.get(name, {})), one_gpu=one_gpu)
    assert again.jobs.equals(fresh.jobs)
    assert again.events.equals(fresh.events)


class _Spy(BasePolicy):
    """Walks what the view exposes at every call and remembers it."""

    name = "spy"

    def start(self, view):
        self.reached: list[object] = []

    def schedule(self, view):
        self.reached.extend(_public_graph([view, *view.pending.values(), *view.running.values()]))
        alloc = view.allocation()
        for job in list(view.pending.values()):
            gpus = view.place(job)
            if gpus is not None:
                alloc[job] = gpus
        return alloc


def _public_graph(roots: list[object], limit: int = 20000) -> list[object]:
    """Every object reachable from `roots` through public attributes (no leading `_`),
    mapping values and sequence items."""
    seen: set[int] = set()
    out: list[object] = []
    todo = list(roots)
    while todo and len(out) < limit:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None))):
            continue
        if isinstance(obj, (type, np.random.Generator, np.ndarray)) or callable(obj):
            continue
        seen.add(id(obj))
        out.append(obj)
        if isinstance(obj, dict) or hasattr(obj, "items") and hasattr(obj, "values"):
            todo.extend(obj.values())  # type: ignore[union-attr]
            continue
        if isinstance(obj, (list, tuple, set, frozenset)):
            todo.extend(obj)
            continue
        names = set(getattr(obj, "__dict__", {})) | set(getattr(type(obj), "__slots__", ()))
        for attr in sorted(names):
            if not attr.startswith("_"):
                todo.append(getattr(obj, attr, None))
    return out


def test_a_policy_cannot_reach_the_truth_through_the_view():
    """No public path from the view or its jobs leads to the true throughput model or a rate."""
    spy = _Spy()
    result = _run(spy)
    assert result.summary()["jobs_completed"] == len(_workload())
    assert spy.reached, "the spy saw nothing"
    truths = [o for o in spy.reached if isinstance(o, (ThroughputModel, JobRates))]
    assert not truths
    jobs = [o for o in spy.reached if type(o).__name__ == "JobState"]
    assert jobs and all(not hasattr(job, "rate") for job in jobs)


def test_a_policy_sees_progress_as_an_observed_rate():
    """view.observed_rate is progress over time: None before any progress, then the rate."""
    seen: list[float | None] = []

    class Probe(BasePolicy):
        round_s = 100.0

        def schedule(self, view):
            alloc = view.allocation()
            for job in view.running.values():
                seen.append(view.observed_rate(job))
            for job in list(view.pending.values()):
                gpus = view.place(job)
                if gpus is not None:
                    alloc[job] = gpus
            return alloc

    jobs = pd.DataFrame(
        {"job_id": ["a"], "submit_time": [0.0], "num_gpus": [1], "duration": [500.0]}
    )
    dlsched.simulate(
        jobs, dlsched.Cluster.from_dict(CLUSTER), policy=Probe(), restart_overhead_s=0.0
    )
    assert seen and all(rate == pytest.approx(1.0) for rate in seen)


class _Dice(BasePolicy):
    """Starts pending jobs in an order drawn from view.rng."""

    name = "dice"

    def start(self, view):
        self.draws: list[float] = []

    def schedule(self, view):
        alloc = view.allocation()
        pending = list(view.pending.values())
        self.draws.append(float(view.rng.random()))
        for i in view.rng.permutation(len(pending)):
            gpus = view.place(pending[i])
            if gpus is not None:
                alloc[pending[i]] = gpus
        return alloc


def test_the_run_seed_reaches_the_policy():
    """simulate(seed=s) changes view.rng's draws; the same seed repeats them."""
    dice = _Dice()
    _run(dice, seed=1)
    one = list(dice.draws)
    _run(dice, seed=1)
    assert dice.draws == one
    _run(dice, seed=2)
    assert dice.draws != one


def test_a_registered_random_policy_changes_with_the_run_seed():
    """Gavel's agnostic policies shuffle GPU types from view.rng: another seed, another run."""
    runs = [_run("max_min_fairness", seed=s).events for s in (0, 1, 2)]
    assert not (runs[0].equals(runs[1]) and runs[0].equals(runs[2]))


class _Stuck(BasePolicy):
    """Never starts a job, but keeps asking to be called again."""

    name = "stuck"

    def schedule(self, view):
        view.wake_at(view.now + 1.0)
        return None


def test_a_policy_that_never_starts_a_job_ends_as_a_stall():
    """A stalled run ends after STALL_CALLS calls, jobs unfinished, with a warning."""
    jobs = pd.DataFrame({"job_id": ["a", "b"], "submit_time": [0.0, 5.0], "num_gpus": [1, 1]})
    jobs["duration"] = 10.0
    with pytest.warns(RuntimeWarning, match="2 of 2 jobs never finished.*scheduling calls"):
        result = dlsched.simulate(jobs, dlsched.Cluster.from_dict(CLUSTER), policy=_Stuck())
    assert (result.jobs["status"] == "unfinished").all()
    assert result.meta["halted"]["reason"] == "stall"
    assert result.meta["scheduling_calls"] <= STALL_CALLS + 10


def test_max_time_stops_the_run_and_keeps_what_was_computed():
    """At max_time_s the run stops: finished jobs stay finished, running ones keep progress."""
    jobs = pd.DataFrame(
        {"job_id": ["short", "long"], "submit_time": [0.0, 0.0], "num_gpus": [1, 1]}
    )
    jobs["duration"] = [100.0, 1000.0]
    with pytest.warns(RuntimeWarning, match="1 of 2 jobs never finished.*max_time_s=300"):
        result = dlsched.simulate(jobs, dlsched.Cluster.from_dict(CLUSTER), max_time_s=300.0)
    table = result.jobs.set_index("job_id")
    assert table.loc["short", "status"] == "finished"
    assert table.loc["short", "finish_time"] == 100.0
    assert table.loc["long", "status"] == "unfinished"
    assert table.loc["long", "gpu_seconds"] == pytest.approx(300.0)
    assert result.meta["halted"] == {
        "reason": "max_time_s",
        "time": 300.0,
        "message": "simulated time reached max_time_s=300.0",
    }


def test_start_events_carry_gpu_ids():
    """Every start names the GPUs it took, so a job timeline (Gantt chart) can be drawn."""
    jobs = pd.DataFrame({"job_id": ["a", "b"], "submit_time": [0.0, 0.0], "num_gpus": [4, 2]})
    jobs["duration"] = 50.0
    result = dlsched.simulate(jobs, dlsched.Cluster.from_dict(CLUSTER))
    starts = result.events[result.events["event"] == "start"].set_index("job_id")
    held = {job: [int(g) for g in gpus.split(",")] for job, gpus in starts["gpus"].items()}
    assert sorted(len(g) for g in held.values()) == [2, 4]
    assert not set(held["a"]) & set(held["b"])
    finishes = result.events[result.events["event"] == "finish"].set_index("job_id")
    assert finishes.loc["a", "gpus"] == starts.loc["a", "gpus"]
    assert math.isnan(finishes.loc["a", "rate"])


class _Anywhere(BasePolicy):
    """Puts every pending job on the first free GPUs, whoever owns them."""

    name = "anywhere"

    def schedule(self, view):
        alloc = view.allocation()
        for job in list(view.pending.values()):
            free = [
                g for node in range(len(view.cluster.nodes)) for g in view.free_gpus_on_node(node)
            ]
            alloc[job] = tuple(free[: job.spec.num_gpus])
        return alloc


def test_the_allocation_refuses_gpus_of_another_vc():
    """A job of a VC put on another VC's nodes is an error at once, not a silent wrong run."""
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "vcs",
            "nodes": [{"name": "n", "gpu_type": "V100", "count": 2, "gpus_per_node": 2}],
            "vcs": [{"name": "a", "nodes": ["n-0"]}, {"name": "b", "nodes": ["n-1"]}],
        }
    )
    jobs = pd.DataFrame({"job_id": ["x"], "submit_time": [0.0], "num_gpus": [1], "duration": [9.0]})
    jobs["vc"] = "b"
    with pytest.raises(dlsched.errors.SchedulingError, match="VC 'b' cannot run there: GPU 0"):
        dlsched.simulate(jobs, cluster, policy=_Anywhere())
