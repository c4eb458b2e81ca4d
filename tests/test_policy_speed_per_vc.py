"""Per-VC scheduling skips the VCs with nothing to do; its scoped view reads lazily."""

from __future__ import annotations

import pandas as pd

import dlsched
from dlsched.policies import per_vc
from dlsched.policies.fifo import Fifo
from dlsched.policies.per_vc import ScopedView


def two_vc_cluster() -> dlsched.Cluster:
    """Two 4-GPU nodes, one owned by VC a, the other by VC b."""
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "name": "n"}],
            "vcs": [{"name": "a", "nodes": ["n-0"]}, {"name": "b", "nodes": ["n-1"]}],
        }
    )


def test_a_vc_with_no_waiting_job_is_not_called(monkeypatch):
    """VC a's only job starts at 0; b's later arrivals call b's FIFO only."""
    calls: list[tuple[float, str | None]] = []
    schedule = Fifo.schedule

    def recording(self, view):
        calls.append((view.now, view.vc))
        return schedule(self, view)

    monkeypatch.setattr(Fifo, "schedule", recording)
    jobs = pd.DataFrame(
        {
            "job_id": ["a1", "b1", "b2"],
            "submit_time": [0.0, 10.0, 20.0],
            "num_gpus": [4, 4, 4],
            "duration": [100.0, 50.0, 50.0],
            "vc": ["a", "b", "b"],
        }
    )
    result = dlsched.simulate(jobs, two_vc_cluster(), "per-vc", inner="fifo")
    assert calls == [(0.0, "a"), (10.0, "b"), (20.0, "b"), (60.0, "b")]
    assert result.jobs.set_index("job_id").loc["b2", "start_time"] == 60.0


def test_scoped_view_lists_only_its_vc_jobs_by_status(monkeypatch):
    """`pending` and `running` hold the VC's jobs of that status, read when first asked."""
    seen: dict[str, tuple[list, list]] = {}

    class Spy(Fifo):
        def schedule(self, view: ScopedView):
            seen.setdefault(f"{view.vc}@{view.now:g}", (sorted(view.pending), sorted(view.running)))
            return super().schedule(view)

    policy = dlsched.policies.get("per-vc", inner="fifo")
    jobs = pd.DataFrame(
        {
            "job_id": ["a1", "a2", "b1"],
            "submit_time": [0.0, 5.0, 5.0],
            "num_gpus": [4, 4, 2],
            "duration": [100.0, 10.0, 10.0],
            "vc": ["a", "a", "b"],
        }
    )
    monkeypatch.setattr(per_vc, "get", lambda name, **params: Spy(**params))
    dlsched.simulate(jobs, two_vc_cluster(), policy)
    assert seen["a@5"] == (["a2"], ["a1"])
    assert seen["b@5"] == (["b1"], [])
