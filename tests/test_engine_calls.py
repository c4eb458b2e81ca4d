"""Scheduling calls in proportion to what can change: `call_when_nothing_fits`, and a failed
placement remembered until its pool's free GPUs change."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.engine import view as view_module
from dlsched.engine.ledger import Ledger
from dlsched.engine.state import Clock, JobIndex
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobSpec
from dlsched.overheads import make_overheads
from dlsched.perf import make_estimator
from dlsched.policies.base import BasePolicy
from dlsched.policies.fifo import Fifo


class QuietFifo(Fifo):
    """FIFO declaring that its calls are no-ops while nothing waiting fits (as `fifo` does)."""

    call_when_nothing_fits = False


class LoudFifo(Fifo):
    """FIFO with BasePolicy's default declaration: called at every instant."""

    call_when_nothing_fits = True


def _cluster(gpus: int = 4) -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": gpus}]}
    )


# a holds all 4 GPUs 0..100; b (4 GPUs) arrives at 10 and c (2 GPUs) at 20: neither fits
# before 100. b runs 100..110, c 110..120.
BLOCKED = pd.DataFrame(
    [("a", 0.0, 4, 100.0), ("b", 10.0, 4, 10.0), ("c", 20.0, 2, 10.0)],
    columns=["job_id", "submit_time", "num_gpus", "duration"],
)


def test_the_default_declaration_keeps_every_call():
    """BasePolicy calls at every instant: FIFO is called at 0, 10, 20, 100 and 110."""
    assert BasePolicy.call_when_nothing_fits is True
    result = dlsched.simulate(BLOCKED, _cluster(), LoudFifo())
    assert result.meta["scheduling_calls"] == 5


@pytest.mark.parametrize("policy", ["fifo", "sjf"])
def test_fifo_and_sjf_skip_the_calls_where_nothing_waiting_fits(policy):
    """The built-in non-preemptive `fifo` and `sjf` declare it: called at 0, 100 and 110."""
    result = dlsched.simulate(BLOCKED, _cluster(), policy)
    assert result.meta["scheduling_calls"] == 3


def test_calls_where_nothing_waiting_fits_are_skipped_when_declared():
    """With the declaration the calls at 10 and 20 (0 GPUs free, 2 asked) are not made."""
    result = dlsched.simulate(BLOCKED, _cluster(), QuietFifo())
    assert result.meta["scheduling_calls"] == 3


def test_skipping_calls_changes_no_result():
    """Jobs, events and timeline are identical with and without skipped calls."""
    plain = dlsched.simulate(BLOCKED, _cluster(), LoudFifo())
    quiet = dlsched.simulate(BLOCKED, _cluster(), QuietFifo())
    pd.testing.assert_frame_equal(plain.jobs, quiet.jobs)
    pd.testing.assert_frame_equal(plain.events, quiet.events)
    pd.testing.assert_frame_equal(plain.timeline, quiet.timeline)
    assert quiet.jobs.set_index("job_id").loc["c", "finish_time"] == 120.0


def test_a_fractional_job_in_the_workload_keeps_every_call():
    """A fraction may start with no whole GPU free, so no call is skipped."""
    jobs = BLOCKED.assign(gpu_milli=[1000, 1000, 1000])
    jobs.loc[len(jobs)] = ["d", 30.0, 1, 5.0, 500]
    plain = dlsched.simulate(jobs, _cluster(), LoudFifo())
    quiet = dlsched.simulate(jobs, _cluster(), QuietFifo())
    assert quiet.meta["scheduling_calls"] == plain.meta["scheduling_calls"]


def _view(cluster: dlsched.Cluster) -> tuple[ClusterView, Ledger]:
    ledger = Ledger(cluster)
    view = ClusterView(
        cluster,
        ledger,
        JobIndex([]),
        Clock(),
        make_estimator("oracle"),
        make_overheads(None, 0.0),
        np.random.default_rng(0),
        lambda when: None,
    )
    return view, ledger


def test_a_failed_placement_is_not_tried_again_until_its_pool_changes(monkeypatch):
    """A pool-only placer that failed is not called again until a GPU of its pool is taken
    or freed."""
    calls: list[int] = []

    def never(ledger, n_gpus, pool):
        calls.append(n_gpus)
        return None

    monkeypatch.setattr(view_module, "get_placer", lambda name: never)
    monkeypatch.setattr(view_module, "POOL_ONLY", frozenset({never}))
    view, ledger = _view(_cluster(4))
    spec = JobSpec(index=0, job_id="x", submit_time=0.0, num_gpus=2, total_steps=1.0)
    assert view.place(spec, gpu_type="V100", strategy="never") is None
    assert view.place(spec, gpu_type="V100", strategy="never") is None
    assert calls == [2]
    ledger.take(7, (0,))
    assert view.place(spec, gpu_type="V100", strategy="never") is None
    assert calls == [2, 2]


@pytest.mark.parametrize("strategy", ["consolidated", "yarn"])
def test_a_placement_that_failed_succeeds_once_gpus_free_up(strategy):
    """After a failure, freeing GPUs of the pool lets the same request succeed."""
    view, ledger = _view(_cluster(4))
    spec = JobSpec(index=0, job_id="x", submit_time=0.0, num_gpus=4, total_steps=1.0)
    ledger.take(7, (0, 1))
    assert view.place(spec, gpu_type="V100", strategy=strategy) is None
    ledger.give_back(7, (0, 1))
    assert view.place(spec, gpu_type="V100", strategy=strategy) == (0, 1, 2, 3)


class Boom(BasePolicy):
    """A policy whose second scheduling call fails."""

    name = "boom"

    def start(self, view) -> None:
        self.calls = 0

    def schedule(self, view):
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("policy failed at its second call")
        return None


def test_an_error_in_a_policy_ends_the_run_with_that_error():
    """The engine's event loop lets a policy's exception through, unchanged."""
    with pytest.raises(RuntimeError, match="second call"):
        dlsched.simulate(BLOCKED, _cluster(), Boom())


def test_overlapping_runs_restore_the_garbage_collector_thresholds():
    """Two holds of no_full_collections that end out of order (runs in two threads) leave
    the process's GC thresholds as they found them, not full collections switched off."""
    import gc

    from dlsched.engine.simulator import no_full_collections

    before = gc.get_threshold()
    first, second = no_full_collections(), no_full_collections()
    first.__enter__()
    second.__enter__()
    assert gc.get_threshold()[2] == 1_000_000_000
    first.__exit__(None, None, None)
    assert gc.get_threshold()[2] == 1_000_000_000  # the second run still holds it
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before
