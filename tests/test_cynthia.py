"""Cynthia's per-job provisioning, the cost-optimal integer program, and rented costs by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.cli import main
from dlsched.cluster import Cluster
from dlsched.errors import ConfigError
from dlsched.jobs import JobSpec
from dlsched.perf.ps_speed import PSSpeedModel, PSThroughput
from dlsched.provision import PROVISIONERS
from dlsched.provision import get as get_provisioner
from dlsched.provision.cost_optimal import CostOptimal, candidates, solve_plans
from dlsched.provision.cynthia import Cynthia, Plan, PlanModel, cynthia_choice

# Two instance types of one GPU type: 1 GPU at $3.06/h booting 60 s, 4 GPUs at $12.24/h
# booting 120 s (the p3.2xlarge / p3.8xlarge prices; the start-up latencies are made up).
CLOUD = {
    "name": "cloud",
    "instance_types": {
        "small": {"gpu_type": "V100", "gpus": 1, "price_per_hour": 3.06, "startup_s": 60},
        "big": {"gpu_type": "V100", "gpus": 4, "price_per_hour": 12.24, "startup_s": 120},
    },
    "limits": {"small": 4, "big": 2},
}

# j1 (1 GPU, 1 h) at 0 and j2 (4 GPUs, 30 min) at 100 s, both with slack deadlines.
TWO_JOBS = pd.DataFrame(
    {
        "job_id": [1, 2],
        "submit_time": [0.0, 100.0],
        "num_gpus": [1, 4],
        "duration": [3600.0, 1800.0],
        "deadline": [10_000.0, 4_000.0],
    }
)


def cloud(**changes: object) -> Cluster:
    return Cluster.from_dict({**CLOUD, **changes}, "cloud.yaml")


# --- the rented cost of a tiny run, by hand ---------------------------------------------


def test_rented_cost_of_two_jobs_per_second_agrees_with_the_hand_computation():
    """j1 (1 GPU): a small instance (the cheapest that holds it: $3.06/h against $12.24/h),
    acquired at 0, ready at 60, j1 runs 60–3660, released at 3660: 3660 s × 3.06/3600 =
    $3.111. j2 (4 GPUs, rigid) at 100: 4 small would cost less (4 × 3.06 × 1860/3600 =
    $6.324) but the limit of 4 leaves 3 once j1 holds one, so a big one: ready at 220, runs
    220–2020, released at 2020: 1920 s × 12.24/3600 = $6.528. Total $9.639; the held time
    without a job is the two start-ups, 60 + 120 = 180 s."""
    for provisioner in ("cynthia", "cost_optimal"):
        result = dlsched.simulate(TWO_JOBS, cloud(), "cynthia", provisioner=provisioner, audit=True)
        summary = result.summary()
        assert summary["rented_cost"] == pytest.approx(3.111 + 6.528, abs=1e-9)
        assert summary["rented_idle_s"] == pytest.approx(180.0)
        assert summary["cost_per_job"] == pytest.approx(9.639 / 2, abs=1e-9)
        assert result.jobs["start_time"].tolist() == [60.0, 220.0]
        assert result.jobs["finish_time"].tolist() == [3660.0, 2020.0]
        bills = {
            (i["instance_type"], i["acquired_s"], i["released_s"]): i["cost"]
            for i in result.meta["rented"]["instances"]
        }
        assert bills == {
            ("small", 0.0, 3660.0): pytest.approx(3.111),
            ("big", 100.0, 2020.0): pytest.approx(6.528),
        }
        jobs = {row["job_id"]: row for row in result.meta["rented"]["jobs"]}
        assert jobs[1]["cost"] == pytest.approx(3.111) and jobs[2]["cost"] == pytest.approx(6.528)
        assert sum(row["cost"] for row in jobs.values()) == pytest.approx(summary["rented_cost"])


def test_rented_cost_of_two_jobs_per_hour_agrees_with_the_hand_computation():
    """Every started hour whole: the small instance is held 3660 s, 2 hours = $6.12; the big
    one 1920 s, 1 hour = $12.24; total $18.36 (the plans are the same: j1's alternatives are
    a big instance for 2 h, j2's has no other that fits the limits)."""
    result = dlsched.simulate(
        TWO_JOBS, cloud(billing="hour"), "cynthia", provisioner="cynthia", audit=True
    )
    assert result.summary()["rented_cost"] == pytest.approx(6.12 + 12.24, abs=1e-9)
    assert result.summary()["rented_idle_s"] == pytest.approx(180.0)


def test_on_demand_on_the_same_run_costs_more_for_its_idle_timer():
    """on_demand keeps the big instance 600 s idle after j2 (its release timer): it is
    billed 100–2620 s, $8.568, so the run costs $11.679."""
    result = dlsched.simulate(TWO_JOBS, cloud(), "cynthia", provisioner="on_demand", audit=True)
    assert result.summary()["rented_cost"] == pytest.approx(3.111 + 8.568, abs=1e-9)


# --- Cynthia's choice on a hand-worked case ---------------------------------------------

# f(p, w) = 1/(1/w + w/p): θ0 = θ2 = 1, M = 1 (a worker's compute plus the PS transfer).
TOY = PSSpeedModel((1.0, 0.0, 1.0, 0.0, 0.0))
# 3600 steps, 1 to 4 workers, due at 9360 s (2.6 h); two 1-GPU types, $1/h and $2/h.
TOY_JOB = pd.DataFrame(
    {
        "job_id": [1],
        "submit_time": [0.0],
        "num_gpus": [1],
        "min_gpus": [1],
        "max_gpus": [4],
        "total_steps": [3600.0],
        "model": ["toy"],
        "deadline": [9360.0],
    }
)
TOY_CLOUD = {
    "name": "toy",
    "instance_types": {
        "a": {"gpu_type": "V100", "gpus": 1, "price_per_hour": 1.0},
        "b": {"gpu_type": "V100", "gpus": 1, "price_per_hour": 2.0},
    },
    "limits": {"total": 8},
}


def toy_model(placement: str = "dedicated", max_ps: int | None = 4) -> PlanModel:
    rented = Cluster.from_dict(TOY_CLOUD).rented
    assert rented is not None
    return PlanModel(
        rented,
        lambda job, key, w, p, nodes: TOY.speed(p, w),
        lambda job: job.total_steps,
        lambda job: True,
        ps_placement=placement,
        max_ps=max_ps,
    )


def toy_spec() -> JobSpec:
    return JobSpec(0, 1, 0.0, 1, 3600.0, model="toy", deadline=9360.0, min_gpus=1, max_gpus=4)


def test_cynthia_takes_the_fewest_workers_with_the_fastest_ps_and_the_ip_the_cheapest():
    """Dedicated PS (an instance each). With w = 1, 1/f = 1 + 1/p: p = 1 → 2 s/step, 7200 s;
    p = 4 → 1.25 s/step, 4500 s. Both meet 9360 s. Cynthia: on type a, the fewest workers
    (1) with the fastest p (4): 5 instances × 4500 s × $1/h = $6.25; on b the same at $12.50;
    so a at $6.25. The cheapest configuration: w = 1, p = 1 on a, 2 instances × 7200 s =
    $4.00 (w = 2, p = 2: 1/f = 1.5, 4 × 5400 s = $6.00)."""
    options = toy_model().options(toy_spec(), 0.0)
    chosen = cynthia_choice(toy_spec(), options)
    assert chosen is not None
    assert (chosen.instance_type, chosen.workers, chosen.ps, chosen.instances) == ("a", 1, 4, 5)
    assert chosen.time_s == pytest.approx(4500.0) and chosen.cost == pytest.approx(6.25)
    (best,) = solve_plans([candidates(toy_spec(), options, "cheapest")], {"a": 8, "b": 8}, 8)
    assert best is not None
    assert (best.instance_type, best.workers, best.ps, best.instances) == ("a", 1, 1, 2)
    assert best.cost == pytest.approx(4.0)


def test_colocated_ps_cost_only_the_worker_instances():
    """PS on the workers' instances (one each, at most one per worker): w = 1 allows p = 1
    only (2 s/step, 7200 s, $2.00 on a); w = 2, p = 2: 1.5 s/step, 5400 s, 2 × $1.50 =
    $3.00. Cynthia takes w = 1."""
    options = toy_model("colocated", max_ps=None).options(toy_spec(), 0.0)
    assert {(o.workers, o.ps) for o in options if o.instance_type == "a" and o.workers <= 2} == {
        (1, 1),
        (2, 1),
        (2, 2),
    }
    chosen = cynthia_choice(toy_spec(), options)
    assert chosen is not None and (chosen.instance_type, chosen.workers, chosen.ps) == ("a", 1, 1)
    assert chosen.cost == pytest.approx(2.0)


def test_a_late_job_gets_the_fastest_and_one_without_a_deadline_the_cheapest():
    """Due at 1000 s, nothing meets: the fastest configuration is planned. Without a
    deadline: the cheapest (dedicated PS: w = 1, p = 1 on a, $4.00)."""
    late = JobSpec(0, 1, 0.0, 1, 3600.0, model="toy", deadline=1000.0, min_gpus=1, max_gpus=4)
    options = toy_model().options(late, 0.0)
    assert not any(o.meets for o in options)
    chosen = cynthia_choice(late, options)
    assert chosen is not None and chosen.time_s == min(o.time_s for o in options)
    free = JobSpec(0, 1, 0.0, 1, 3600.0, model="toy", min_gpus=1, max_gpus=4)
    cheapest = cynthia_choice(free, toy_model().options(free, 0.0))
    assert cheapest is not None and cheapest.cost == pytest.approx(4.0) and cheapest.meets is None


def test_the_engine_run_bills_the_plan_and_the_ip_is_cheaper_than_cynthia():
    """Run on the toy cloud with PSThroughput truth (1 PS per worker). cost_optimal plans w = 1,
    p = 1 on a: the job runs 7200 s on 1 GPU while 2 instances are held: $4.00, 7200 s idle
    (the PS instance). Cynthia plans 5 instances for 4500 s, but the engine runs the job
    with its truth's PS count (1), 7200 s: 5 × 2 h = $10.00 (the simplification the module
    states); its attributed cost is the same."""
    truth = PSThroughput({"toy": TOY})
    costs = {}
    for make in (Cynthia, CostOptimal):
        provisioner = make(ps_models={"toy": TOY}, ps_placement="dedicated", max_ps=4)
        result = dlsched.simulate(
            TOY_JOB, TOY_CLOUD, "cynthia", provisioner=provisioner, throughput=truth, audit=True
        )
        costs[make.name] = result.summary()["rented_cost"]
        (job,) = result.meta["rented"]["jobs"]
        assert job["cost"] == pytest.approx(costs[make.name])
        assert result.jobs["finish_time"].tolist() == [7200.0]
    assert costs == {"cynthia": pytest.approx(10.0), "cost_optimal": pytest.approx(4.0)}


# --- the integer program against brute force -------------------------------------------


def _brute_force(choices, left, total):
    """Lexicographic best: most jobs planned, then the least cost, over every assignment."""
    best = None
    for pick in itertools.product(*[[None, *options] for options in choices]):
        used: dict[str, int] = {}
        for plan in pick:
            if plan is not None:
                used[plan.instance_type] = used.get(plan.instance_type, 0) + plan.instances
        if any(n > left.get(t, 0) for t, n in used.items()) or sum(used.values()) > total:
            continue
        key = (-sum(p is not None for p in pick), sum(p.cost for p in pick if p is not None))
        if best is None or key < best:
            best = key
    return best


@pytest.mark.parametrize("seed", range(25))
def test_the_integer_program_matches_brute_force_on_tiny_catalogues(seed):
    """Random catalogues of 2 types, 2–3 jobs with 1–4 configurations each, random limits:
    HiGHS plans as many jobs and at the same least cost as enumerating every assignment."""
    rng = np.random.default_rng(seed)
    types = ("x", "y")
    choices = [
        [
            Plan(
                str(rng.choice(types)),
                "v100",
                int(rng.integers(1, 4)),
                1,
                0,
                100.0,
                float(np.round(rng.uniform(1, 10), 3)),
                True,
            )
            for _ in range(int(rng.integers(1, 5)))
        ]
        for _ in range(int(rng.integers(2, 4)))
    ]
    left = {t: int(rng.integers(0, 6)) for t in types}
    total = int(rng.integers(1, 8))
    plans = solve_plans(choices, left, total)
    used: dict[str, int] = {}
    for plan, options in zip(plans, choices, strict=True):
        if plan is not None:
            assert plan in options
            used[plan.instance_type] = used.get(plan.instance_type, 0) + plan.instances
    assert all(n <= left[t] for t, n in used.items()) and sum(used.values()) <= total
    planned, cost = -sum(p is not None for p in plans), sum(p.cost for p in plans if p is not None)
    best = _brute_force(choices, left, total)
    assert best is not None
    assert planned == best[0] and cost == pytest.approx(best[1], abs=1e-9)


def test_the_integer_program_with_nothing_to_choose_plans_nothing():
    assert solve_plans([[], []], {"x": 3}) == [None, None]


def test_cost_optimal_shares_the_limits_between_jobs_that_arrive_together():
    """Two jobs at once, one instance left of the cheap type: Cynthia gives it to the first
    job and the second takes the dear one; the integer program gives the cheap one to the
    job it saves more on."""
    cheap = Plan("x", "v100", 1, 1, 0, 10.0, 1.0, True)
    first = [cheap, Plan("y", "v100", 1, 1, 0, 10.0, 2.0, True)]
    second = [
        Plan("x", "v100", 1, 1, 0, 10.0, 1.0, True),
        Plan("y", "v100", 1, 1, 0, 10.0, 9.0, True),
    ]
    plans = solve_plans([first, second], {"x": 1, "y": 2})
    assert [p.instance_type if p else None for p in plans] == ["y", "x"]


# --- registry, errors, CLI ------------------------------------------------------------


def test_the_provisioners_are_registered_and_check_their_parameters():
    assert {"cynthia", "cost_optimal"} <= set(PROVISIONERS)
    assert get_provisioner("cynthia", no_deadline="fastest").no_deadline == "fastest"
    with pytest.raises(ValueError, match="ps_placement"):
        get_provisioner("cynthia", ps_placement="shared")
    with pytest.raises(ValueError, match="no_deadline"):
        get_provisioner("cost_optimal", no_deadline="never")
    with pytest.raises(ValueError, match="ps_per_instance"):
        get_provisioner("cynthia", ps_per_instance=0)
    with pytest.raises(ConfigError, match=r"ps_models\['toy'\]"):
        get_provisioner("cynthia", ps_models={"toy": [1, 2]})
    model = get_provisioner("cynthia", ps_models={"Toy": {"theta": [1, 0, 1, 0, 0]}})
    assert model.ps_models["toy"] == TOY


def test_a_planning_provisioner_on_a_fixed_cluster_is_refused():
    fixed = {"name": "f", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}
    with pytest.raises(ConfigError, match="instance_types"):
        dlsched.simulate(TWO_JOBS, fixed, "cynthia", provisioner="cynthia")


def test_the_policy_without_plans_runs_jobs_as_they_ask():
    """On a fixed cluster (no plans) the policy is FIFO with greedy backfill."""
    fixed = {"name": "f", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}
    result = dlsched.simulate(TWO_JOBS, fixed, "cynthia", audit=True)
    assert result.jobs["start_time"].tolist() == [0.0, 3600.0]


def test_runs_are_deterministic():
    """The same inputs and seed give identical results (plans, bills, times)."""
    first = dlsched.simulate(TWO_JOBS, cloud(), "cynthia", provisioner="cost_optimal", seed=3)
    again = dlsched.simulate(TWO_JOBS, cloud(), "cynthia", provisioner="cost_optimal", seed=3)
    assert first.meta["rented"] == again.meta["rented"]
    pd.testing.assert_frame_equal(first.jobs, again.jobs)


def test_cli_replays_on_the_bundled_aws_cluster(tmp_path, capsys):
    """``dlsched replay --cluster aws-p3-g4dn --provisioner cynthia --policy cynthia`` runs
    from a fresh clone: every deadline met, a cost in the summary."""
    trace = tmp_path / "jobs.csv"
    TWO_JOBS.to_csv(trace, index=False)
    code = main(
        [
            "replay",
            "--trace",
            str(trace),
            "--cluster",
            "aws-p3-g4dn",
            "--provisioner",
            "cynthia",
            "--policy",
            "cynthia",
            "--json",
        ]
    )
    assert code in (0, None)
    import json

    summary = json.loads(capsys.readouterr().out)
    assert summary["deadline_satisfaction"] == 1.0
    # the type-agnostic replay makes T4 instances as fast as V100: g4dn.xlarge at $0.526/h
    # for j1 (3720 s) and four of them ($2.104/h, under the 12xlarge's $3.912) for j2 (1920 s)
    assert summary["rented_cost"] == pytest.approx(
        3720 * 0.526 / 3600 + 4 * 1920 * 0.526 / 3600, abs=1e-9
    )
    assert math.isfinite(summary["cost_per_job"])
