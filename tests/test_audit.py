"""The invariant auditor (`dlsched.engine.audit`) fails a run whose ledger no longer matches
the jobs: a node in the wrong free-count bucket, a free GPU missing from its node's free
list. (Its other checks: test_multiresource.py for CPU and memory.)"""

from __future__ import annotations

import pandas as pd
import pytest

import dlsched
from dlsched.cluster import Cluster
from dlsched.engine.audit import InvariantViolation
from dlsched.policies import get


def _jobs() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"job_id": "a", "submit_time": 0.0, "num_gpus": 1, "duration": 100.0},
            {"job_id": "b", "submit_time": 10.0, "num_gpus": 1, "duration": 100.0},
        ]
    )


def _cluster() -> Cluster:
    return Cluster.from_dict(
        {"name": "two", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 4}]}
    )


class _Corrupting(type(get("fifo"))):  # type: ignore[misc]
    """FIFO, then one corruption of the ledger behind the engine's back."""

    def __init__(self, corrupt) -> None:
        super().__init__()
        self.corrupt = corrupt

    def schedule(self, view):
        answer = super().schedule(view)
        if view.running or view.pending:
            self.corrupt(view._ledger)
        return answer


def _move_node_1_to_bucket_1(ledger) -> None:
    for counts in ledger.buckets.values():
        for nodes in counts:
            nodes.discard(1)
        counts[1].add(1)


def _hide_a_free_gpu(ledger) -> None:
    free = next(free for free in ledger.node_free if free)
    free.pop()


def test_a_run_with_the_ledger_intact_passes_the_audit():
    result = dlsched.simulate(_jobs(), _cluster(), _Corrupting(lambda ledger: None), audit=True)
    assert result.summary()["jobs_completed"] == 2


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (_move_node_1_to_bucket_1, r"nodes \[1\] are in the wrong free-count buckets"),
        (_hide_a_free_gpu, "free lists differ from the GPUs nobody owns"),
    ],
)
def test_the_auditor_catches_a_corrupted_ledger(corrupt, message):
    with pytest.raises(InvariantViolation, match=message):
        dlsched.simulate(_jobs(), _cluster(), _Corrupting(corrupt), audit=True)
