"""The policy registry and user-defined policies."""

import pandas as pd
import pytest

import dlsched
from dlsched import policies
from dlsched.errors import SchedulingError


def tiny():
    jobs = pd.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 0.0], "num_gpus": [1, 1], "duration": [10.0, 20.0]}
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )
    return jobs, cluster


def test_get_passes_parameters_and_rejects_unknown_ones():
    """Parameters reach the constructor; a wrong one names what is accepted."""
    assert policies.get("fifo", backfill="easy").backfill == "easy"
    with pytest.raises(ValueError, match="backfill"):
        policies.get("fifo", bakfill=True)
    with pytest.raises(ValueError, match="registered"):
        policies.get("no-such-policy")


def test_user_policy_returning_a_plain_mapping():
    """A policy may return a plain dict as its whole answer; the engine diffs it."""

    class Reverse:
        name, round_s = "reverse", None

        def schedule(self, view):
            free = [g for g in range(view.cluster.num_gpus)]
            answer = {job_id: state.gpus for job_id, state in view.running.items()}
            used = {g for gpus in answer.values() for g in gpus}
            free = [g for g in free if g not in used]
            for job_id in sorted(view.pending, key=str, reverse=True):
                if free:
                    answer[job_id] = (free.pop(0),)
            return answer

    jobs, cluster = tiny()
    result = dlsched.simulate(jobs, cluster, policy=Reverse())
    assert result.jobs.set_index("job_id")["finish_time"].to_dict() == {1: 10.0, 2: 20.0}


def test_registered_user_policy_is_found_by_name():
    """`register` makes a policy available to `simulate(policy=name)`."""

    @policies.register("test-greedy-once")
    class Greedy(policies.BasePolicy):
        """Starts whatever fits, in id order."""

        name = "test-greedy-once"

        def schedule(self, view):
            alloc = view.allocation()
            for state in sorted(view.pending.values(), key=lambda s: s.spec.index):
                gpus = view.place(state)
                if gpus:
                    alloc[state] = gpus
            return alloc

    jobs, cluster = tiny()
    assert "test-greedy-once" in policies.names()
    assert (
        dlsched.simulate(jobs, cluster, policy="test-greedy-once").summary()["jobs_completed"] == 2
    )


def test_a_policy_giving_a_gpu_twice_is_stopped():
    """Handing out a held GPU is a SchedulingError, not a silent over-subscription."""

    class Greedy:
        name, round_s = "bad", None

        def schedule(self, view):
            return {job_id: (0,) for job_id in view.pending}

    jobs, cluster = tiny()
    with pytest.raises(SchedulingError, match="already held"):
        dlsched.simulate(jobs, cluster, policy=Greedy())


def test_a_policy_that_never_schedules_ends_with_unfinished_jobs():
    """A policy that starts nothing does not hang: jobs are reported unfinished."""

    class Idle:
        name, round_s = "idle", 60.0

        def schedule(self, view):
            return None

    jobs, cluster = tiny()
    with pytest.warns(RuntimeWarning, match="never finished"):
        result = dlsched.simulate(jobs, cluster, policy=Idle())
    assert list(result.jobs["status"]) == ["unfinished", "unfinished"]
    assert result.summary()["jobs_unfinished"] == 2
