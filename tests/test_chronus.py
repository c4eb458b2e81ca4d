"""The chronus policy: admission at submission, the lease program (HiGHS against brute force),
the greedy fallback, a known answer worked out by hand, determinism."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pytest

import dlsched
from dlsched.policies.chronus import (
    VALUE,
    Chronus,
    LeaseJob,
    greedy_select,
    solve_program,
)

DATA = Path(__file__).parent / "data" / "elasticflow"
ONE_NODE = {
    "gpu_types": {"V100": {}},
    "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}],
}


def _three_jobs(deadline_c: float = 2500.0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": ["a", "b", "c"],
            "submit_time": [0.0, 0.0, 0.0],
            "num_gpus": [2, 2, 4],
            "duration": [1000.0, 1000.0, 1000.0],
            "deadline": [2500.0, 2500.0, deadline_c],
        }
    )


def _run(df: pd.DataFrame, **params: object) -> dlsched.SimulationResult:
    params = {"lease_s": 600.0, "restart_s": 0.0, **params}
    return dlsched.simulate(df, ONE_NODE, policy="chronus", **params)


# -- the known answer -------------------------------------------------------------------------
#
# 4 GPUs, leases of 600 s, no restart overhead; a and b: 2 GPUs for 1000 s, c: 4 GPUs for
# 1000 s, all submitted at 0 with deadline 2500. Each needs ceil(1000 x 1.1 / 600) = 2 leases.
# Admission counts from the next lease (lease 1, [600, 1200)); leases 1-3 end by 2500
# (floor(2500 / 600) - 1 = 3). a takes the latest free leases, 2 and 3 (2 of 4 GPUs each); b
# the same (4 of 4). c needs 4 GPUs in 2 of leases 1-3; only lease 1 has them: unaccepted, run
# as best-effort. First lease, [0, 600): an unaccepted SLO job waits, so the adaptive objective
# minimises the GPUs a and b hold now: the program keeps them on leases 2 and 3, lease 0 has no
# holder and c takes the 4 spot GPUs at 0, finishing at 1000. a and b then run on spot GPUs
# (fill_accepted: the lease is under 30 min) from 1000 and finish at 2000: all three in time.


def test_known_answer_three_deadline_jobs_on_four_gpus():
    result = _run(_three_jobs())
    jobs = result.jobs.set_index("job_id")
    assert jobs["admission"].to_dict() == {"a": "accept", "b": "accept", "c": "best_effort"}
    assert jobs["start_time"].to_dict() == {"a": 1000.0, "b": 1000.0, "c": 0.0}
    assert jobs["finish_time"].to_dict() == {"a": 2000.0, "b": 2000.0, "c": 1000.0}
    assert jobs["deadline_met"].all()
    summary = result.summary()
    assert (summary["jobs_accepted"], summary["jobs_best_effort"]) == (2, 1)
    assert summary["deadline_satisfactory_ratio"] == 1.0


def test_known_answer_maximize_gives_the_first_lease_to_the_admitted_jobs():
    """objective="maximize": a and b hold lease 0 (4 GPUs), c waits for them to finish."""
    jobs = _run(_three_jobs(), objective="maximize").jobs.set_index("job_id")
    assert jobs["start_time"].to_dict() == {"a": 0.0, "b": 0.0, "c": 1000.0}
    assert jobs["deadline_met"].all()


def test_known_answer_with_a_tight_deadline_and_decline():
    """c with deadline 1100 needs 2 leases, none ends by 1100 after lease 0: declined when
    unmet="decline", never runs; a and b run at once (no unaccepted job waits)."""
    result = _run(_three_jobs(deadline_c=1100.0), unmet="decline")
    jobs = result.jobs.set_index("job_id")
    assert jobs["admission"].to_dict() == {"a": "accept", "b": "accept", "c": "decline"}
    assert jobs.loc["c", "status"] == "declined"
    assert "2 leases" in jobs.loc["c", "admission_reason"]
    assert jobs.loc[["a", "b"], "start_time"].tolist() == [0.0, 0.0]
    assert result.summary()["jobs_declined"] == 1


def test_paper_reading_admits_what_the_greedy_check_refuses():
    """Leases of 600 s, admission from lease 1. a (2 GPUs, 1 lease, by lease 3) is placed
    greedily on lease 3; b (4 GPUs, 2 leases, by lease 3) then on leases 2 and 1; c (2 GPUs,
    1 lease, by lease 1) finds lease 1 full: the artifact's greedy check refuses it. The exact
    program (reading="paper") moves b to leases 2-3 and a beside c on lease 1: all three fit
    (2 + 8 + 2 = 12 GPU-leases of 12)."""
    df = pd.DataFrame(
        {
            "job_id": ["a", "b", "c"],
            "submit_time": [0.0, 0.0, 0.0],
            "num_gpus": [2, 4, 2],
            "duration": [500.0, 1000.0, 500.0],
            "deadline": [2500.0, 2500.0, 1300.0],
        }
    )
    greedy = _run(df).jobs.set_index("job_id")["admission"].to_dict()
    exact = _run(df, reading="paper").jobs.set_index("job_id")["admission"].to_dict()
    assert greedy == {"a": "accept", "b": "accept", "c": "best_effort"}
    assert exact == {"a": "accept", "b": "accept", "c": "accept"}


# -- the program against brute force ----------------------------------------------------------


def _brute_force(jobs: list[LeaseJob], capacity: int, sign: float) -> float:
    """The best objective over every choice of leases (or none) per job."""
    last = max(j.last for j in jobs)
    options = []
    for j in jobs:
        choices: list[tuple[int, ...] | None] = [None]
        choices += list(itertools.combinations(range(min(j.last, last)), j.need))
        options.append(choices)
    best = -float("inf")
    for pick in itertools.product(*options):
        used = [0] * last
        for j, leases in zip(jobs, pick, strict=True):
            for t in leases or ():
                used[t] += j.gpus
        if any(u > capacity for u in used):
            continue
        value = sum(VALUE for p in pick if p is not None)
        value += (
            sign * sum(j.gpus for j, p in zip(jobs, pick, strict=True) if p and 0 in p) / capacity
        )
        best = max(best, value)
    return best


def _objective(jobs, solution, capacity, sign):
    value = 0.0
    for j, leases in zip(jobs, solution, strict=True):
        if leases is None:
            continue
        assert len(leases) == j.need and len(set(leases)) == j.need
        assert all(0 <= t < j.last for t in leases)
        value += VALUE + (sign * j.gpus / capacity if 0 in leases else 0.0)
    used = {}
    for j, leases in zip(jobs, solution, strict=True):
        for t in leases or ():
            used[t] = used.get(t, 0) + j.gpus
    assert all(u <= capacity for u in used.values())
    return value


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_program_matches_brute_force_on_tiny_instances(seed, sign):
    import random

    rng = random.Random(seed)
    capacity = 4
    jobs = []
    for _ in range(rng.randint(2, 4)):
        last = rng.randint(1, 4)
        jobs.append(LeaseJob(gpus=rng.choice([1, 2, 4]), need=rng.randint(1, last), last=last))
    solution, optimal = solve_program(jobs, capacity, sign, None, 10.0)
    assert optimal
    assert _objective(jobs, solution, capacity, sign) == pytest.approx(
        _brute_force(jobs, capacity, sign)
    )


def test_horizon_relaxes_the_tail_but_keeps_the_leases_before_it_exact():
    """With a horizon of 2 leases the tail is one block per job; counts still add up."""
    jobs = [LeaseJob(4, 3, 6), LeaseJob(2, 2, 3)]
    solution, optimal = solve_program(jobs, 4, 1.0, 2, 5.0)
    assert optimal and all(s is not None for s in solution)
    assert all(len(s) == j.need for s, j in zip(solution, jobs, strict=True))  # type: ignore[arg-type]
    assert solution[0][0] == 0  # maximize: the 4-GPU job, with the least slack, starts now
    used0 = sum(j.gpus for s, j in zip(solution, jobs, strict=True) if 0 in s)  # type: ignore[operator]
    assert used0 <= 4


def test_greedy_fallback_when_highs_stops_without_an_optimum(monkeypatch):
    """A HiGHS status other than optimal (time limit) gives the artifact's greedy answer."""

    class Stopped:
        status, x = 1, None

    monkeypatch.setattr("scipy.optimize.milp", lambda *a, **k: Stopped())
    jobs = [LeaseJob(2, 2, 4), LeaseJob(4, 1, 2), LeaseJob(4, 4, 4)]
    solution, optimal = solve_program(jobs, 4, 1.0, None, 5.0)
    assert not optimal
    # greedy: most GPUs first, then least slack: (4, 4, 4) takes all four leases, the other
    # two find them full and are dropped
    assert solution == greedy_select(jobs, [4] * 4)
    assert solution == [None, None, [0, 1, 2, 3]]


def test_fallback_is_counted_in_a_run(monkeypatch):
    class Stopped:
        status, x = 1, None

    monkeypatch.setattr("scipy.optimize.milp", lambda *a, **k: Stopped())
    policy = Chronus(lease_s=600.0, restart_s=0.0)
    result = dlsched.simulate(_three_jobs(), ONE_NODE, policy=policy)
    assert policy.fallbacks > 0
    assert result.jobs["deadline_met"].all()


# -- parameters, determinism ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lease_s", 0),
        ("lease_s", float("nan")),
        ("time_limit_s", -1),
        ("restart_s", -1),
        ("horizon", 0),
        ("horizon", 2.5),
        ("objective", "fast"),
        ("reading", "literal"),
        ("unmet", "queue"),
        ("fill_accepted", "yes"),
        ("spot_s", 0),
    ],
)
def test_bad_parameters_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        Chronus(**{field: value})


def test_same_inputs_give_identical_results():
    df = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(12)],
            "submit_time": [float(100 * i) for i in range(12)],
            "num_gpus": [1, 2, 4, 1, 2, 1, 4, 2, 1, 1, 2, 4],
            "duration": [float(300 + 170 * (i % 5)) for i in range(12)],
            "deadline": [float(100 * i + 900 + 400 * (i % 3)) for i in range(12)],
        }
    )
    for reading in ("artifact", "paper"):
        one = _run(df, reading=reading)
        two = _run(df, reading=reading)
        pd.testing.assert_frame_equal(one.jobs, two.jobs)
        assert (
            one.summary()["deadline_satisfactory_ratio"]
            == two.summary()["deadline_satisfactory_ratio"]
        )


@pytest.mark.slow
def test_figure_8a_inputs_run():
    """ElasticFlow Figure 8(a)'s 195 jobs on 16 x 4 T4 with ElasticFlow's run_fig8a.sh
    settings for Chronus: every job ends, the ratio is a fraction of the jobs."""
    work = dlsched.load_trace(DATA / "elasticVpollux_e.csv")
    result = dlsched.simulate(
        work,
        "elasticflow-n16g4-t4",
        policy="chronus",
        throughput="elasticflow",
        overheads="elasticflow",
        lease_s=240.0,
        restart_s=0.5,
        fill_accepted=False,
        spot_s=240.0,
    )
    summary = result.summary()
    assert summary["jobs_total"] == 195 and summary["jobs_completed"] == 195
    assert 0.0 < summary["deadline_satisfactory_ratio"] < 1.0


def test_a_job_barred_from_the_largest_pool_runs_on_another_type():
    """Two K80 nodes of 2 and one V100 node of 2: a deadline job that may use only V100s is
    planned on the cluster's 6 GPUs and placed on the type it can run on. It used to be
    planned and placed on the largest pool (K80) alone and never ran."""
    cluster = {
        "gpu_types": {"K80": {}, "V100": {}},
        "nodes": [
            {"gpu_type": "K80", "count": 2, "gpus_per_node": 2},
            {"gpu_type": "V100", "count": 1, "gpus_per_node": 2},
        ],
    }
    jobs = pd.DataFrame(
        {
            "job_id": ["v", "k"],
            "submit_time": [0.0, 0.0],
            "num_gpus": [2, 2],
            "duration": [1000.0, 1000.0],
            "deadline": [3600.0, float("nan")],
            "gpu_constraint": ["V100", None],
        }
    )
    result = dlsched.simulate(jobs, cluster, "chronus", throughput="duration")
    table = result.jobs.set_index("job_id")
    assert (table["status"] == "finished").all()
    assert table.loc["v", "admission"] == "accept"
    assert table.loc["v", "finish_time"] <= 3600.0
    assert table.loc["v", "gpu_seconds_V100"] == pytest.approx(2000.0)
