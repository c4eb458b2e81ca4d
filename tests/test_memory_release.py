"""Job states let go at finish (`JobStates`): the results are those of a run that keeps them."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import dlsched
from dlsched.engine.simulator import Simulator
from dlsched.engine.specs import build_specs
from dlsched.engine.state import JobStates
from dlsched.jobs import FINISHED, JobSpec
from dlsched.overheads import make_overheads
from dlsched.perf import make_estimator, make_throughput
from dlsched.traces.schema import validate_jobs


def _cluster() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {
            "name": "two",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 4},
                {"gpu_type": "K80", "count": 1, "gpus_per_node": 2},
            ],
        }
    )


def _jobs(n: int = 30) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": list(range(100, 100 + n)),
            "submit_time": [float(2 * (i // 3)) for i in range(n)],
            "num_gpus": [1 + i % 3 for i in range(n)],
            "duration": [float(4 + (11 * i) % 29) for i in range(n)],
        }
    )


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias", "gandiva", "sjf"])
def test_results_do_not_depend_on_releasing_states(policy: str) -> None:
    """A run that lets finished jobs' states go (audit off) gives the tables of one that
    keeps every state (audit on)."""
    kept = dlsched.simulate(_jobs(), _cluster(), policy, audit=True)
    released = dlsched.simulate(_jobs(), _cluster(), policy, audit=False)
    for name in ("jobs", "events", "timeline"):
        pd.testing.assert_frame_equal(
            getattr(released, name), getattr(kept, name), check_exact=True
        )


def _simulator(audit: bool) -> Simulator:
    cluster = _cluster()
    work = validate_jobs(_jobs(), "<test>", lenient=False, fmt="canonical")
    truth = make_throughput("duration")
    specs, _ = build_specs(work, cluster, truth, lenient=False)
    sim = Simulator(
        specs,
        cluster,
        dlsched.policies.get("srtf"),
        truth,
        make_estimator("oracle"),
        make_overheads(None, 0.0),
        audit=audit,
    )
    sim.run()
    return sim


def test_finished_jobs_hold_no_state_object() -> None:
    """Once a run is over, no finished job's `JobState` is held by the simulator."""
    sim = _simulator(audit=False)
    assert sim.finished == len(sim.specs)
    assert all(state is None for state in sim.states.live)


def test_a_finished_job_reads_back_its_outcome() -> None:
    """A released job read back has the outcome fields of the state the run kept."""
    kept, released = _simulator(audit=True), _simulator(audit=False)
    fields = (
        "status",
        "start_time",
        "finish_time",
        "attained_service_s",
        "held_s",
        "last_run_s",
        "preemptions",
        "migrations",
        "restarts",
        "rescales",
        "gpu_seconds_by_type",
        "steps_done",
    )
    for mine, theirs in zip(released.states, kept.states, strict=True):
        assert mine.spec == theirs.spec
        assert {f: getattr(mine, f) for f in fields} == {f: getattr(theirs, f) for f in fields}


def _spec(index: int) -> JobSpec:
    return JobSpec(index, f"j{index}", 0.0, 1, 10.0)


def test_gpu_seconds_on_two_types_survive_release() -> None:
    """A job that held two GPU types reads back both types' seconds, one type's as one."""
    states = JobStates([_spec(0), _spec(1), _spec(2)])
    two, one = states[0], states[1]
    for state, credits in (
        (two, [("v100", 2.0), ("k80", 3.0), ("v100", 1.5)]),
        (one, [("k80", 4.0)]),
    ):
        for gpu_type, seconds in credits:
            state.credit_gpu_seconds(gpu_type, seconds)
            state.attained_service_s += seconds
        state.status, state.start_time, state.finish_time = FINISHED, 0.0, 9.0
        states.retire(state)
    assert states[0].gpu_seconds_by_type == {"v100": 3.5, "k80": 3.0}
    assert states[1].gpu_seconds_by_type == {"k80": 4.0}
    columns: dict[str, Any] = states.columns(["k80", "v100"])
    assert columns["gpu_seconds_v100"].tolist() == [3.5, 0.0, 0.0]
    assert columns["gpu_seconds_k80"].tolist() == [3.0, 4.0, 0.0]
    assert columns["finished"].tolist() == [True, True, False]


def test_states_are_made_when_first_read() -> None:
    """A job's state is made once, on first read, and then is the same object."""
    states = JobStates([_spec(0), _spec(1)])
    assert states.live == [None, None]
    first = states[-1]
    assert states[1] is first and states.live[1] is first
    assert [s.job_id for s in states[0:2]] == ["j0", "j1"]


def test_a_run_stopped_early_reports_its_live_jobs() -> None:
    """At `max_time_s`, jobs still running or waiting (states not released) are reported
    as a run that keeps every state reports them."""
    with pytest.warns(RuntimeWarning):
        kept = dlsched.simulate(_jobs(), _cluster(), "srtf", audit=True, max_time_s=20.0)
    with pytest.warns(RuntimeWarning):
        released = dlsched.simulate(_jobs(), _cluster(), "srtf", audit=False, max_time_s=20.0)
    assert (released.jobs["status"] == "unfinished").any()
    pd.testing.assert_frame_equal(released.jobs, kept.jobs, check_exact=True)


def test_a_cluster_of_more_than_127_gpu_types_keeps_each_finished_jobs_type():
    """The finished jobs' GPU-type codes are 16-bit: 130 types, one job on each, finish
    with their GPU-seconds (an 8-bit code overflowed with the states let go)."""
    types = 130
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "many",
            "nodes": [
                {"gpu_type": f"G{k:03d}", "count": 1, "gpus_per_node": 1} for k in range(types)
            ],
        }
    )
    jobs = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(types)],
            "submit_time": [0.0] * types,
            "num_gpus": [1] * types,
            "duration": [10.0] * types,
        }
    )
    result = dlsched.simulate(jobs, cluster, "fifo", audit=False)
    assert result.summary()["jobs_completed"] == types
    assert (result.jobs["gpu_seconds"] == 10.0).all()
