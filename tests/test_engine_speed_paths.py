"""The engine's fast paths give what the general ones give (issue 16: same results, less
Python per event): timeline rows left due by finishes, and `ClusterView.place` from a job's
precomputed pools."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.engine.ledger import Ledger
from dlsched.engine.specs import spec_maker
from dlsched.engine.state import Clock, JobIndex, JobStates
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobSpec
from dlsched.overheads import make_overheads
from dlsched.perf import make_estimator, make_throughput
from dlsched.perf.rates import JobRates
from dlsched.traces.schema import validate_jobs


def _two_gpus() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "two", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )


def _work(rows: dict) -> dlsched.Workload:
    return validate_jobs(pd.DataFrame(rows), "<test>", lenient=True, fmt="canonical")


def _same_instant() -> dlsched.Workload:
    """a and b end together at t=10, when c (both GPUs) starts; c ends at 20."""
    return _work(
        {
            "job_id": ["a", "b", "c"],
            "submit_time": [0.0, 0.0, 0.0],
            "num_gpus": [1, 1, 2],
            "duration": [10.0, 10.0, 10.0],
        }
    )


def test_two_finishes_and_a_start_at_one_instant_leave_one_row_of_its_end_state() -> None:
    """Finishes whose GPUs a start takes at the same instant leave that instant's row with
    the busy GPUs after the start, even when they equal the row before."""
    result = dlsched.simulate(_same_instant(), _two_gpus(), policy="fifo")
    rows = [tuple(row) for row in result.timeline.itertuples(index=False)]
    assert rows == [(0.0, 2), (10.0, 2), (20.0, 0)]


def test_the_timeline_is_the_same_when_the_event_log_is_streamed(tmp_path: Path) -> None:
    """Streaming the event log (where finishes write their rows at once) changes no row."""
    work = _work(
        {
            "job_id": list("abcdefgh"),
            "submit_time": [0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 3.0, 9.0],
            "num_gpus": [1, 1, 2, 1, 1, 2, 1, 1],
            "duration": [5.0, 4.0, 3.0, 2.0, 6.0, 1.0, 4.0, 1.0],
        }
    )
    plain = dlsched.simulate(work, _two_gpus(), policy="fifo")
    streamed = dlsched.simulate(work, _two_gpus(), policy="fifo", events=tmp_path / "e.parquet")
    pd.testing.assert_frame_equal(plain.timeline, streamed.timeline)


def _view(specs: list[JobSpec]) -> tuple[ClusterView, JobStates]:
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "vcs",
            "nodes": [
                {"gpu_type": "V100", "count": 2, "gpus_per_node": 4},
                {"gpu_type": "K80", "count": 2, "gpus_per_node": 4},
            ],
            "vcs": [{"name": "own", "nodes": 1}, {"name": "spare", "nodes": 1, "gpu_type": "K80"}],
        }
    )
    states = JobStates(specs)
    estimator = make_estimator("oracle")
    estimator.bind(JobRates(make_throughput("duration")), specs, cluster, np.random.default_rng(0))
    view = ClusterView(
        cluster,
        Ledger(cluster),
        JobIndex(states),
        Clock(),
        estimator,
        make_overheads(None, 0.0),
        np.random.default_rng(0),
        lambda when: None,
    )
    return view, states


def test_place_of_a_runs_job_answers_as_the_general_path() -> None:
    """`place` of a run's job (its precomputed pools) picks what `place` of a copy of its
    spec (the general path) picks, for jobs of a VC that owns nodes and of none."""
    specs = [
        JobSpec(index=i, job_id=i, submit_time=0.0, num_gpus=n, total_steps=1.0, vc=vc)
        for i, (n, vc) in enumerate(
            [(1, "own"), (4, None), (2, "own"), (3, None), (8, None), (2, "spare"), (3, "own")]
        )
    ]
    view, states = _view(specs)
    for spec in specs:
        copy = JobSpec(**{f: getattr(spec, f) for f in spec.__dataclass_fields__})
        fast = view.place(states[spec.index])
        assert fast == view.place(copy), spec
        if fast is not None:
            view._ledger.take(spec.index, fast, vc=spec.vc)


def test_waiting_pools_of_a_runs_job_answer_as_the_general_path() -> None:
    """`waiting_pools` of a run's job placed by the fast path (its pools) names the pools
    `waiting_pools` of a copy of its spec (the general path) names."""
    specs = [
        JobSpec(index=i, job_id=i, submit_time=0.0, num_gpus=n, total_steps=1.0, vc=vc)
        for i, (n, vc) in enumerate([(8, None), (4, "own"), (3, None), (2, "spare")])
    ]
    view, states = _view(specs)
    for spec in specs:
        view.place(states[spec.index])  # (the fast path learns the job's pools)
        copy = JobSpec(**{f: getattr(spec, f) for f in spec.__dataclass_fields__})
        assert view.waiting_pools(states[spec.index]) == view.waiting_pools(copy), spec


def test_spec_maker_makes_the_spec_the_dataclass_makes() -> None:
    """`spec_maker()` builds a `JobSpec` equal to, and hashing as, the dataclass's own."""
    fields = (3, "j", 1.5, 2, 40.0, "resnet", "u", "vc", None, 2.0, "v100", 9.0, 7, 500)
    fields += (("v100",), (("v100", 9.0),), "Pass", 1, 4, 1500, 2048, "bert-ft")
    made, plain = spec_maker()(*fields), JobSpec(*fields)
    assert type(made) is JobSpec
    assert made == plain and hash(made) == hash(plain) and repr(made) == repr(plain)


def test_spec_maker_falls_back_to_the_slot_descriptors_when_its_twin_does_not_fit(
    monkeypatch,
) -> None:
    """A twin class whose slot layout differs from `JobSpec`'s (its class cannot be
    assigned) leaves `spec_maker()` on the slot descriptors: the same spec."""
    from dlsched.engine import specs

    def unfit(name, bases, namespace):  # one slot more than JobSpec has
        return type(name, bases, {"__slots__": (*namespace["__slots__"], "extra")})

    monkeypatch.setattr(specs, "type", unfit, raising=False)
    fields = (3, "j", 1.5, 2, 40.0, "resnet", "u", "vc", None, 2.0, "v100", 9.0, 7, 500)
    fields += (("v100",), (("v100", 9.0),), "Pass", 1, 4, 1500, 2048, "bert-ft")
    made = specs.spec_maker()(*fields)
    assert type(made) is JobSpec and made == JobSpec(*fields)


def test_a_waiting_for_hook_that_answers_with_an_iterator_skips_no_needed_call():
    """A plug-in's `waiting_for` may return a one-shot iterator of pools: the 2-GPU job c,
    waiting on both types, starts when b frees the V100s at 10 s, as with a tuple."""
    from dlsched.policies.fifo import Fifo

    class IterFifo(Fifo):
        def waiting_for(self, view):
            pools = super().waiting_for(view)
            return None if pools is None else iter(pools)

    cluster = dlsched.Cluster.from_dict(
        {
            "name": "t",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 2},
                {"gpu_type": "K80", "count": 1, "gpus_per_node": 2},
            ],
        }
    )
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b", "c"],
            "submit_time": [0.0, 0.0, 1.0],
            "num_gpus": [1, 1, 2],
            "duration": [100.0, 10.0, 10.0],
            "gpu_constraint": ["K80", "V100", ""],
        }
    )
    result = dlsched.simulate(jobs, cluster, policy=IterFifo())
    assert result.jobs.set_index("job_id").loc["c", "start_time"] == 10.0


def test_a_run_that_raises_leaves_no_timeline_row_of_gpus_never_started(monkeypatch):
    """A policy that places b at 10 s and then raises: the run's timeline keeps (0, 2) and no
    row claiming b's GPUs busy."""
    from dlsched.engine import simulator as engine
    from dlsched.policies.fifo import Fifo

    held = []
    run = engine.Simulator.run

    def keep(self):
        held.append(self)
        return run(self)

    monkeypatch.setattr(engine.Simulator, "run", keep)

    class Boom(Fifo):
        def schedule(self, view):
            alloc = super().schedule(view)
            if view.now >= 10:
                raise RuntimeError("policy bug after placing")
            return alloc

    cluster = dlsched.Cluster.from_dict(
        {"name": "t", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 1.0],
            "num_gpus": [2, 2],
            "duration": [10.0] * 2,
        }
    )
    with pytest.raises(RuntimeError, match="policy bug"):
        dlsched.simulate(jobs, cluster, policy=Boom())
    assert (10.0, 2) not in [tuple(row)[:2] for row in held[0].recorder.timeline]


def _answering(name: str) -> object:
    """The policy `name` with a `woken` hook (never asked: it sets no wake-ups), which turns
    the engine's early skips off (`Simulator._early_skips`) and changes nothing else."""
    from dlsched.policies.registry import factory

    base = type(factory(name)())

    class Woken(base):  # type: ignore[valid-type, misc]
        def woken(self, view: ClusterView) -> bool:
            return True

    return Woken()


def _tied_congested_work(n: int = 300, seed: int = 3) -> dlsched.Workload:
    """Jobs on whole seconds (arrivals tie with finishes and with each other), mostly
    asking for more GPUs than are free, on two types: a FIFO head is often blocked."""
    rng = np.random.default_rng(seed)
    return _work(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_time": np.sort(rng.integers(0, 400, n)).astype(float),
            "num_gpus": rng.choice([1, 1, 2, 4, 8], n),
            "duration": rng.integers(1, 60, n).astype(float),
        }
    )


def _run_counting(monkeypatch, policy: object) -> tuple[dlsched.Result, dict]:
    """A run on two 8-GPU types, with the simulator's instants, calls and `_schedule`
    invocations."""
    from dlsched.engine import simulator as engine

    held: list = []
    run, schedule = engine.Simulator.run, engine.Simulator._schedule
    invoked = [0]

    def keep(self):
        held.append(self)
        return run(self)

    def count(self, event):
        invoked[0] += 1
        return schedule(self, event)

    monkeypatch.setattr(engine.Simulator, "run", keep)
    monkeypatch.setattr(engine.Simulator, "_schedule", count)
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "two-types",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 8},
                {"gpu_type": "K80", "count": 1, "gpus_per_node": 8},
            ],
        }
    )
    result = dlsched.simulate(_tied_congested_work(), cluster, policy=policy, audit=False)
    sim = held[-1]
    counts = {
        "instants": sim.scheduling_instants,
        "calls": sim.scheduling_calls,
        "invoked": invoked[0],
        "simpy_events": next(sim.env._eid),
    }
    return result, counts


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
def test_calls_skipped_at_their_arrivals_and_finishes_change_no_result_nor_count(
    monkeypatch, policy
):
    """Instants whose call would be skipped (nothing waits; FIFO: its blocked head's pools gave
    nothing back) are counted as skipped by the arrival or finish itself (FIFO's arrival
    instants then taken without a turn of the event loop): the jobs, events, timeline,
    instants, calls and SimPy event ids are those of the run that asks for every call, with
    fewer invocations of `_schedule`."""
    early, counted = _run_counting(monkeypatch, policy)
    plain, asked = _run_counting(monkeypatch, _answering(policy))
    pd.testing.assert_frame_equal(early.jobs, plain.jobs)
    pd.testing.assert_frame_equal(early.events, plain.events)
    pd.testing.assert_frame_equal(early.timeline, plain.timeline)
    assert counted["instants"] == asked["instants"]
    assert counted["calls"] == asked["calls"]
    assert counted["simpy_events"] == asked["simpy_events"]
    assert counted["invoked"] < asked["invoked"] == asked["instants"]


def _specs_for_alloc() -> list[JobSpec]:
    return [
        JobSpec(index=i, job_id=f"j{i}", submit_time=0.0, num_gpus=n, total_steps=1.0, vc=vc)
        for i, (n, vc) in enumerate([(1, None), (2, None), (2, "own"), (1, "spare"), (4, None)])
    ]


def _open_alloc() -> tuple[ClusterView, JobStates, object]:
    """A view over `_specs_for_alloc` with every job arrived, inside a scheduling call."""
    view, states = _view(_specs_for_alloc())
    for state in states:
        view._jobs.arrive(state)
    return view, states, view._open_call()


def _after(view: ClusterView, alloc: object) -> tuple:
    ledger = view._ledger
    return (
        list(ledger.owner),
        dict(ledger.free_by_pool),
        dict(ledger.pool_epoch),
        [sorted(b) for buckets in ledger.buckets.values() for b in buckets],
        dict(view._jobs.demand),
        view._jobs.min_demand(),
        [(s.job_id, old, new) for s, old, new in alloc.changes()],  # type: ignore[attr-defined]
    )


# (job index, GPUs): the general path accepts each of these (ids 0-3 own, 4-7 free V100,
# 8-11 spare K80, 12-15 free K80)
_ACCEPTED = [(0, (5,)), (1, (12, 6)), (2, (1, 3)), (3, (9,)), (4, (4, 7, 13, 14))]


def test_assigning_free_gpus_to_a_waiting_job_changes_what_the_general_path_changes() -> None:
    """`alloc[job] = gpus` of a waiting job's state (the fast path) leaves the ledger, the
    demand and the changes the general path (`alloc[job_id] = gpus`) leaves."""
    fast_view, fast_states, fast = _open_alloc()
    slow_view, slow_states, slow = _open_alloc()
    for index, gpus in _ACCEPTED:
        fast[fast_states[index]] = gpus  # type: ignore[index]
        slow[slow_states[index].job_id] = gpus  # type: ignore[index]
        assert _after(fast_view, fast) == _after(slow_view, slow), (index, gpus)


@pytest.mark.parametrize(
    ("index", "gpus"),
    [
        (0, (4, 5)),  # too many
        (1, (6, 6)),  # not distinct
        (1, (4, 99)),  # no such GPU
        (0, (-1,)),  # no such GPU
        (0, (0,)),  # VC "own"'s node
        (2, (4, 5)),  # not its VC's nodes
        (0, (4,)),  # held (taken first below)
        (0, [5]),  # a list
        (0, (np.int64(5),)),  # not a Python int
        (0, (True,)),  # a bool
    ],
)
def test_assigning_gpus_the_general_path_refuses_or_converts_gives_its_answer(
    index: int, gpus: object
) -> None:
    """Whatever `alloc[job] = gpus` of a job's state does (raise, or take converted ids),
    `alloc[job_id] = gpus` (the general path) does the same."""
    outcomes = []
    for by_id in (False, True):
        view, states, alloc = _open_alloc()
        alloc[states[4]] = (4, 12, 13, 14)  # type: ignore[index]
        job = states[index].job_id if by_id else states[index]
        try:
            alloc[job] = gpus  # type: ignore[index]
            outcomes.append(("ok", _after(view, alloc)))
        except Exception as error:  # noqa: BLE001 (the comparison is the test)
            outcomes.append((type(error).__name__, str(error), _after(view, alloc)))
    assert outcomes[0] == outcomes[1]


def test_deleting_a_jobs_gpus_changes_what_the_general_path_changes() -> None:
    """`del alloc[job]` of a job's state (the fast path) leaves what `del alloc[job_id]`
    (the general path) leaves, for jobs of one GPU and of several."""
    fast_view, fast_states, fast = _open_alloc()
    slow_view, slow_states, slow = _open_alloc()
    for index, gpus in _ACCEPTED:
        fast[fast_states[index]] = gpus  # type: ignore[index]
        slow[slow_states[index].job_id] = gpus  # type: ignore[index]
    for index in (4, 0, 2):
        del fast[fast_states[index]]  # type: ignore[attr-defined]
        del slow[slow_states[index].job_id]  # type: ignore[attr-defined]
        assert _after(fast_view, fast) == _after(slow_view, slow), index
    for alloc, job in ((fast, fast_states[0]), (slow, slow_states[0].job_id)):
        with pytest.raises(KeyError):
            del alloc[job]  # type: ignore[attr-defined]
