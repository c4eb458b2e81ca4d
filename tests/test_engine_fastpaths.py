"""The engine's shortcuts keep the general path's answers: an assignment of the GPUs that
`view.place` has just chosen is still refused when those GPUs were taken since."""

from __future__ import annotations

import pandas as pd
import pytest

import dlsched
from dlsched.errors import SchedulingError
from dlsched.policies.base import BasePolicy

JOBS = pd.DataFrame(
    [("a", 0.0, 2, 10.0), ("b", 0.0, 2, 10.0)],
    columns=["job_id", "submit_time", "num_gpus", "duration"],
)


def _cluster() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}
    )


class _GivesAwayThePlacement(BasePolicy):
    """Places job a, gives those GPUs to job b, then assigns them to a as placed."""

    name = "gives-away"

    def schedule(self, view):
        alloc = view.allocation()
        a, b = sorted(view.pending.values(), key=lambda job: job.job_id)
        gpus = view.place(a)
        alloc[b] = gpus
        alloc[a] = gpus
        return alloc


class _PlacesInOrder(BasePolicy):
    """Places and assigns every pending job in id order (the shortcut's common case)."""

    name = "in-order"

    def schedule(self, view):
        alloc = view.allocation()
        for job in sorted(view.pending.values(), key=lambda job: job.job_id):
            gpus = view.place(job)
            if gpus is not None:
                alloc[job] = gpus
        return alloc


def test_placed_gpus_taken_since_are_refused() -> None:
    """GPUs `place` chose for a job, given to another job first, are refused to it."""
    with pytest.raises(SchedulingError, match="already held"):
        dlsched.simulate(JOBS, _cluster(), _GivesAwayThePlacement())


def test_placed_gpus_start_the_job_on_them() -> None:
    """Assigning what `place` chose starts each job there: a on GPUs 0-1, b on 2-3."""
    result = dlsched.simulate(JOBS, _cluster(), _PlacesInOrder())
    starts = result.events[result.events["event"] == "start"]
    assert dict(zip(starts["job_id"], starts["gpus"], strict=True)) == {"a": "0,1", "b": "2,3"}
    assert result.summary()["jobs_completed"] == 2
