"""Admission control (`dlsched.engine.admission`): the policy's `admit` hook at the door.

Every workload runs on the `duration` throughput model (1 step/s, so steps = seconds) on
one node of one GPU unless the test says otherwise; the arithmetic is next to each test.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

import dlsched
from dlsched.engine.admission import Admission
from dlsched.engine.audit import InvariantViolation
from dlsched.engine.view import ClusterView
from dlsched.errors import SchedulingError
from dlsched.jobs import JobState
from dlsched.policies.fifo import Fifo

COLUMNS = ("job_id", "submit_time", "num_gpus", "duration", "deadline")


def cluster(gpus: int = 1) -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": gpus}]}
    )


def workload(*rows: tuple) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(COLUMNS))


class BacklogDoor(Fifo):
    """FIFO that admits a deadline job only if it can finish by its deadline behind the
    work already admitted: its earliest finish is now + (Σ over active jobs of estimated
    remaining seconds × GPUs) / cluster GPUs + its own run time. A job that cannot is
    declined, or run as best-effort when `late` is "best_effort"."""

    name = "backlog_door"

    def __init__(self, late: str = "decline") -> None:
        super().__init__()
        self.late = late

    def admit(self, job: JobState, view: ClusterView) -> Admission:
        deadline = job.spec.deadline
        if deadline is None:
            return Admission.accept("no deadline")
        now = view.now
        backlog = sum(
            view.estimator.remaining_time(other, now) * other.num_gpus
            for other in (*view.running.values(), *view.pending.values())
        ) / len(view.cluster.gpu_type_of)
        earliest = now + backlog + view.estimator.duration(job.spec)
        if earliest <= deadline:
            return Admission.accept(f"earliest finish {earliest:g} <= deadline {deadline:g}")
        reason = f"earliest finish {earliest:g} > deadline {deadline:g}"
        if self.late == "best_effort":
            return Admission.best_effort(reason)
        return Admission.decline(reason)


# Three jobs on one GPU, worked out by hand (`BacklogDoor`):
# a: submitted 0, 100 s, deadline 150. Nothing ahead: earliest 0 + 0 + 100 = 100 <= 150 →
#    accepted; runs 0→100.
# b: submitted 10, 100 s, deadline 150. a has 90 s left: earliest 10 + 90 + 100 = 200 > 150
#    → declined: never runs.
# c: submitted 20, 50 s, deadline 200. a has 80 s left (b is not queued): earliest
#    20 + 80 + 50 = 150 <= 200 → accepted; runs 100→150, JCT 130.
THREE = workload(("a", 0, 1, 100.0, 150.0), ("b", 10, 1, 100.0, 150.0), ("c", 20, 1, 50.0, 200.0))


def test_three_jobs_admitted_by_hand():
    """a accepted 0→100, b declined (never runs), c accepted 100→150."""
    result = dlsched.simulate(THREE, cluster(), BacklogDoor(), audit=True)
    jobs = result.jobs.set_index("job_id")
    assert jobs["status"].to_dict() == {"a": "finished", "b": "declined", "c": "finished"}
    assert jobs["admission"].to_dict() == {"a": "accept", "b": "decline", "c": "accept"}
    assert jobs.loc["b", "admission_reason"] == "earliest finish 200 > deadline 150"
    assert (jobs.loc["a", "start_time"], jobs.loc["a", "finish_time"]) == (0.0, 100.0)
    assert (jobs.loc["c", "start_time"], jobs.loc["c", "finish_time"]) == (100.0, 150.0)
    assert math.isnan(jobs.loc["b", "start_time"]) and jobs.loc["b", "gpu_seconds"] == 0.0


def test_three_jobs_summary_counts_the_declined_job_as_a_miss():
    """2 accepted, 1 declined; ratio 2/3 (b missed); avg JCT over a and c: (100 + 130) / 2."""
    summary = dlsched.simulate(THREE, cluster(), BacklogDoor()).summary()
    assert summary["jobs_total"] == 3
    assert summary["jobs_accepted"] == 2
    assert summary["jobs_declined"] == 1
    assert summary["jobs_best_effort"] == 0
    assert summary["jobs_unfinished"] == 0
    assert summary["jobs_completed"] == 2
    assert summary["avg_jct"] == 115.0
    assert summary["avg_jct_accepted"] == 115.0
    assert math.isnan(summary["avg_jct_best_effort"])
    assert summary["deadline_jobs"] == 3
    assert summary["deadline_satisfactory_ratio"] == pytest.approx(2 / 3)
    assert summary["deadline_satisfaction"] == summary["deadline_satisfactory_ratio"]


def test_decisions_are_logged_after_each_submit():
    """The event log has submit then admit/decline for each job; b has nothing else."""
    events = dlsched.simulate(THREE, cluster(), BacklogDoor()).events
    of_b = events[events["job_id"] == "b"]
    assert of_b["event"].tolist() == ["submit", "decline"]
    assert of_b["num_gpus"].tolist() == [1, 1]
    of_a = events[events["job_id"] == "a"]["event"].tolist()
    assert of_a == ["submit", "admit", "start", "finish"]


def test_best_effort_job_runs_without_its_deadline_and_is_judged_by_it():
    """late="best_effort": b runs 100→200, seen by the policy without a deadline, and is
    judged against its submitted 150 (missed)."""
    # a 0→100; b (best-effort) 100→200; c: admitted at 20 with a's 80 s and b's 100 s ahead:
    # 20 + 180 + 50 = 250 > 200 → best-effort too; runs 200→250.
    seen: dict[object, float | None] = {}

    class Watching(BacklogDoor):
        def on_arrival(self, job: JobState) -> None:
            seen[job.job_id] = job.spec.deadline
            super().on_arrival(job)

    result = dlsched.simulate(THREE, cluster(), Watching(late="best_effort"), audit=True)
    jobs = result.jobs.set_index("job_id")
    assert jobs["admission"].to_dict() == {"a": "accept", "b": "best_effort", "c": "best_effort"}
    assert seen == {"a": 150.0, "b": None, "c": None}
    assert jobs["finish_time"].to_dict() == {"a": 100.0, "b": 200.0, "c": 250.0}
    assert jobs["deadline"].to_dict() == {"a": 150.0, "b": 150.0, "c": 200.0}
    summary = result.summary()
    assert (summary["jobs_accepted"], summary["jobs_best_effort"]) == (1, 2)
    assert summary["avg_jct_best_effort"] == ((200 - 10) + (250 - 20)) / 2
    assert summary["deadline_satisfactory_ratio"] == pytest.approx(1 / 3)


def test_policy_without_hook_accepts_everything_and_adds_no_columns():
    """Plain FIFO: no admission column or events; every job counted as accepted."""
    result = dlsched.simulate(THREE, cluster(), "fifo")
    assert "admission" not in result.jobs.columns
    assert not result.events["event"].isin(["admit", "decline", "best_effort"]).any()
    summary = result.summary()
    assert (summary["jobs_accepted"], summary["jobs_declined"]) == (3, 0)
    # a 0→100, b 100→200 (late), c 200→250 (late)
    assert summary["deadline_satisfactory_ratio"] == pytest.approx(1 / 3)


class Cheat(BacklogDoor):
    """Keeps the states of the jobs it declines and gives them a free GPU later (`tamper`:
    first sets their status back to pending, behind the engine's back)."""

    def __init__(self, tamper: bool = False) -> None:
        super().__init__()
        self.tamper = tamper

    def start(self, view: ClusterView) -> None:
        super().start(view)
        self.refused: list[JobState] = []

    def admit(self, job: JobState, view: ClusterView) -> Admission:
        answer = super().admit(job, view)
        if answer.decision == "decline":
            self.refused.append(job)
        return answer

    def schedule(self, view: ClusterView):  # type: ignore[no-untyped-def]
        alloc = view.allocation()
        for job in self.refused:
            if view.free_gpus():
                if self.tamper:
                    job.status = "pending"
                alloc[job] = view.free_gpus_on_node(0)[:1]
        return alloc


def test_a_declined_job_given_gpus_is_refused():
    """Giving GPUs to a declined job raises a SchedulingError naming it."""
    with pytest.raises(SchedulingError, match="job 'b' was declined at admission"):
        dlsched.simulate(THREE, cluster(2), Cheat())


def test_the_auditor_catches_a_declined_job_holding_gpus():
    """A policy that forges a declined job's status to place it fails the audit."""
    with pytest.raises(InvariantViolation, match="declined job 'b' is running"):
        dlsched.simulate(THREE, cluster(2), Cheat(tamper=True), audit=True)


def test_admit_must_return_an_admission():
    """An `admit` that returns True raises a SchedulingError naming the policy and the job."""

    class Sloppy(Fifo):
        name = "sloppy"

        def admit(self, job: JobState, view: ClusterView) -> object:
            return True

    with pytest.raises(SchedulingError, match=r"policy 'sloppy': admit\('a'\) returned True"):
        dlsched.simulate(THREE, cluster(), Sloppy())


def test_unknown_decision_is_refused():
    """Admission("maybe") names the valid decisions."""
    with pytest.raises(SchedulingError, match="accept, best_effort, decline"):
        Admission("maybe")


def test_result_with_declined_jobs_round_trips(tmp_path):
    """save/load keeps the declined status and the admission columns."""
    result = dlsched.simulate(THREE, cluster(), BacklogDoor())
    loaded = dlsched.SimulationResult.load(result.save(tmp_path / "r"))
    assert loaded.jobs["status"].tolist() == ["finished", "declined", "finished"]
    assert loaded.summary()["jobs_declined"] == 1
    assert loaded.jobs["admission_reason"].tolist() == result.jobs["admission_reason"].tolist()
