"""Calls skipped while a policy waits for GPUs of given pools (`waiting_for`), and at
instants where only a policy's stale wake-ups are due (`woken`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import dlsched
from dlsched.engine.ledger import Ledger
from dlsched.engine.state import Clock, JobIndex
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobSpec
from dlsched.overheads import make_overheads
from dlsched.perf import make_estimator
from dlsched.policies.fifo import Fifo
from dlsched.policies.tiresias import Tiresias


class PlainFifo(Fifo):
    """FIFO without the hook: called whenever some waiting job could fit the free GPUs."""

    waiting_for = None  # type: ignore[assignment]


class PlainTiresias(Tiresias):
    """Tiresias-L called at each of its wake-ups, stale or not."""

    woken = None  # type: ignore[assignment]


def _cluster(*types: str) -> dlsched.Cluster:
    nodes = [{"gpu_type": t, "count": 1, "gpus_per_node": 4} for t in types or ("V100",)]
    return dlsched.Cluster.from_dict({"name": "c", "nodes": nodes})


# a holds 2 of 4 GPUs 0..100; b (4 GPUs) arrives at 10 and blocks the head; c and d (1 GPU
# each, 20 and 30) would fit the 2 free GPUs but wait behind b. b runs 100..110, c, d 110..115.
HEAD_BLOCKED = pd.DataFrame(
    [("a", 0.0, 2, 100.0), ("b", 10.0, 4, 10.0), ("c", 20.0, 1, 5.0), ("d", 30.0, 1, 5.0)],
    columns=["job_id", "submit_time", "num_gpus", "duration"],
)


def test_fifo_is_not_called_for_arrivals_behind_a_blocked_head():
    """Called at 0, 20 (b blocks), 100 and 110; not at 30, where only d arrived (at 10
    nothing waiting fits the 2 free GPUs: skipped with or without the hook)."""
    result = dlsched.simulate(HEAD_BLOCKED, _cluster(), "fifo")
    assert result.meta["scheduling_calls"] == 4
    plain = dlsched.simulate(HEAD_BLOCKED, _cluster(), PlainFifo())
    assert plain.meta["scheduling_calls"] == 5


def test_skipping_the_blocked_head_calls_changes_no_result():
    """Jobs, events and timeline are identical with and without the hook."""
    quiet = dlsched.simulate(HEAD_BLOCKED, _cluster(), "fifo")
    plain = dlsched.simulate(HEAD_BLOCKED, _cluster(), PlainFifo())
    pd.testing.assert_frame_equal(plain.jobs, quiet.jobs)
    pd.testing.assert_frame_equal(plain.events, quiet.events)
    pd.testing.assert_frame_equal(plain.timeline, quiet.timeline)
    assert quiet.jobs.set_index("job_id").loc["d", "finish_time"] == 115.0


def test_gpus_freed_in_another_pool_do_not_call_a_blocked_fifo():
    """The head may use only V100s: the K80 job's completion at 50 makes no call."""
    jobs = pd.DataFrame(
        [
            ("a", 0.0, 2, 100.0, "V100"),
            ("k", 0.0, 1, 50.0, "K80"),
            ("b", 10.0, 4, 10.0, "V100"),
        ],
        columns=["job_id", "submit_time", "num_gpus", "duration", "gpu_constraint"],
    )
    quiet = dlsched.simulate(jobs, _cluster("V100", "K80"), "fifo")
    plain = dlsched.simulate(jobs, _cluster("V100", "K80"), PlainFifo())
    assert quiet.meta["scheduling_calls"] == plain.meta["scheduling_calls"] - 1
    pd.testing.assert_frame_equal(plain.events, quiet.events)


def test_backfilling_fifo_makes_no_promise():
    """With greedy backfilling an arrival may start at once: every call is made."""
    quiet = dlsched.simulate(HEAD_BLOCKED, _cluster(), Fifo(backfill="greedy"))
    assert quiet.jobs.set_index("job_id").loc["c", "start_time"] == 20.0


def _view(cluster: dlsched.Cluster) -> ClusterView:
    return ClusterView(
        cluster,
        Ledger(cluster),
        JobIndex([]),
        Clock(),
        make_estimator("oracle"),
        make_overheads(None, 0.0),
        np.random.default_rng(0),
        lambda when, replace=False: None,
    )


def _spec(**fields: object) -> JobSpec:
    return JobSpec(index=0, job_id="x", submit_time=0.0, num_gpus=2, total_steps=1.0, **fields)


def test_waiting_pools_is_none_where_more_than_freed_gpus_matter():
    """Fractions, elastic jobs and job-aware strategies promise nothing."""
    view = _view(_cluster("V100"))
    assert view.waiting_pools(_spec(gpu_milli=500)) is None
    assert view.waiting_pools(_spec(min_gpus=1, max_gpus=2)) is None
    assert view.waiting_pools(_spec(), "fgd") is None


def test_waiting_pools_is_none_for_a_job_of_a_vc_with_a_quota():
    """A quota is freed by its VC's jobs in any pool: a job under one promises nothing."""
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "q",
            "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}],
            "vcs": [{"name": "guests", "gpus": 2}],
        }
    )
    assert _view(cluster).waiting_pools(_spec(vc="guests")) is None


# a (1 GPU) runs 0..2000: Tiresias plans its demotion check at 3,250 s; a ends at 2000, so
# the check moves to b's crossing (1000 + 3,250 s) and the wake-up at 3,250 s is stale.
STALE_WAKE = pd.DataFrame(
    [("a", 0.0, 1, 2000.0), ("b", 1000.0, 1, 5000.0)],
    columns=["job_id", "submit_time", "num_gpus", "duration"],
)


def test_a_stale_tiresias_wake_up_makes_no_call():
    """The wake-up at 3,250 s is answered by `woken` without a scheduling call."""
    quiet = dlsched.simulate(STALE_WAKE, _cluster(), "tiresias")
    plain = dlsched.simulate(STALE_WAKE, _cluster(), PlainTiresias())
    assert quiet.meta["scheduling_calls"] == plain.meta["scheduling_calls"] - 1
    pd.testing.assert_frame_equal(plain.jobs, quiet.jobs)
    pd.testing.assert_frame_equal(plain.events, quiet.events)
    pd.testing.assert_frame_equal(plain.timeline, quiet.timeline)


def test_an_arrival_at_a_stale_wake_up_keeps_the_call():
    """A job submitted at the stale wake-up's instant is scheduled there."""
    jobs = STALE_WAKE.copy()
    jobs.loc[len(jobs)] = ["c", 3250.0, 1, 10.0]
    quiet = dlsched.simulate(jobs, _cluster(), "tiresias")
    plain = dlsched.simulate(jobs, _cluster(), PlainTiresias())
    assert quiet.meta["scheduling_calls"] == plain.meta["scheduling_calls"]
    assert quiet.jobs.set_index("job_id").loc["c", "start_time"] == 3250.0


def test_literal_tiresias_is_called_at_every_wake_up():
    """`literal=True` acts at each call: `woken` keeps them all."""
    quiet = dlsched.simulate(STALE_WAKE, _cluster(), Tiresias(literal=True))
    plain = dlsched.simulate(STALE_WAKE, _cluster(), PlainTiresias(literal=True))
    assert quiet.meta["scheduling_calls"] == plain.meta["scheduling_calls"]


class Sleepy(Fifo):
    """FIFO that asks to be woken 100 s after each call and says wake-ups need no call."""

    call_when_nothing_fits = True

    def schedule(self, view):
        view.wake_at(view.now + 100.0)
        return super().schedule(view)

    def woken(self, view) -> bool:
        return False


def test_a_wake_up_at_an_arrival_s_instant_is_still_a_call():
    """b arrives at 100, where a wake-up is also due: it starts then, not at a's end."""
    jobs = pd.DataFrame(
        [("a", 0.0, 2, 1000.0), ("b", 100.0, 1, 10.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration"],
    )
    result = dlsched.simulate(jobs, _cluster(), Sleepy())
    assert result.jobs.set_index("job_id").loc["b", "start_time"] == 100.0
    assert result.meta["scheduling_calls"] == 3  # at 0, 100 and 110; not at 200 or 210
