"""Shockwave's market planner (`dlsched.policies.shockwave`): the Eisenberg–Gale program
solved by hand on tiny cases, the policy end to end, determinism and bad parameters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.perf import ProfileTable
from dlsched.perf.dynamic import DynamicBatchModel, DynamicEstimator
from dlsched.policies.shockwave import EPS, ShockwavePolicy, momentum_average, solve_market

R18 = "ResNet-18 (batch size {})"


def market(**kwargs):
    args = {"window": 1, "round_s": 100.0, "k": 0.0}
    args.update(kwargs)
    return solve_market(**args)


# ---- the program, solved by hand --------------------------------------------------------


def test_equal_budgets_split_a_contended_round_equally():
    """Two jobs of 2 GPUs on 2 GPUs, one round of 100 s, 100 and 200 s left, no progress.
    f_a = x_a, f_b = x_b / 2, x_a + x_b = 1: max log(x_a + ε) + log(x_b/2 + ε) gives
    1/(x_a + ε) = 1/(x_b + 2ε), so x_a = (1 + ε)/2 — the Fisher market's equal split of
    spending, whatever each job does with it."""
    x, f = market(
        gpus=2,
        demand=np.array([2.0, 2.0]),
        progress=np.zeros(2),
        remaining=np.array([100.0, 200.0]),
    )
    assert x[:, 0] == pytest.approx([(1 + EPS) / 2, (1 - EPS) / 2], abs=1e-5)
    assert f == pytest.approx([(1 + EPS) / 2, (1 - EPS) / 4], abs=1e-5)


def test_budgets_weight_the_split():
    """Weights 1 and 3: 1/(x_a + ε) = 3/(x_b + 2ε), x_b = 3 x_a + ε, x_a = (1 − ε)/4."""
    x, _ = market(
        gpus=2,
        demand=np.array([2.0, 2.0]),
        progress=np.zeros(2),
        remaining=np.array([100.0, 200.0]),
        weights=np.array([1.0, 3.0]),
    )
    assert x[:, 0] == pytest.approx([(1 - EPS) / 4, (3 + EPS) / 4], abs=1e-5)


def test_a_scaling_batch_job_gets_the_same_time_and_more_progress():
    """b's batch doubles half-way: 500 steps at 10/s and 500 at 16/s, 81.25 s in all, so
    c = 100/81.25 of its work per round-second; a needs 100 s. Equal budgets still buy equal
    time: 1/(x_a + ε) = c/(c x_b + ε) gives x_b = x_a + ε (c − 1)/c = x_a + 0.1875 ε."""
    x, f = market(
        gpus=2,
        demand=np.array([2.0, 2.0]),
        progress=np.zeros(2),
        remaining=np.array([100.0, 81.25]),
    )
    x_a = (1 - 0.1875 * EPS) / 2
    assert x[:, 0] == pytest.approx([x_a, 1 - x_a], abs=1e-5)
    assert f[1] == pytest.approx((1 - x_a) * 100 / 81.25, abs=1e-5)


def test_slack_capacity_runs_everyone_and_caps_progress_at_the_end():
    """1-GPU jobs on 2 GPUs: b (400 s left) runs the whole round and does a quarter of what
    remains; a (50 s left) finishes (f = 1) with at least half of it."""
    x, f = market(
        gpus=2, demand=np.array([1.0, 1.0]), progress=np.zeros(2), remaining=np.array([50.0, 400.0])
    )
    assert x[1, 0] == pytest.approx(1.0, abs=1e-5)
    assert x[0, 0] >= 0.5 - 1e-5  # a needs half the round; any more is as good
    assert f == pytest.approx([1.0, 0.25], abs=1e-5)


def test_the_makespan_term_favours_the_longest_job():
    """k > 0 on the contended pair: the job with most left (b, 200 s) gets more than half."""
    x, _ = market(
        gpus=2,
        demand=np.array([2.0, 2.0]),
        progress=np.zeros(2),
        remaining=np.array([100.0, 200.0]),
        k=1.0,
    )
    assert x[1, 0] > 0.9


def test_infeasible_finish_time_bounds_give_no_solution():
    """A bound no plan meets (R (1 − f) ≤ −1) makes the program infeasible: None."""
    solved = market(
        gpus=2,
        demand=np.array([2.0, 2.0]),
        progress=np.zeros(2),
        remaining=np.array([100.0, 200.0]),
        ftf_bound=np.array([-1.0, -1.0]),
    )
    assert solved is None


def test_ecos_and_clarabel_agree():
    args = {
        "gpus": 4,
        "demand": np.array([1.0, 2.0, 4.0]),
        "progress": np.array([0.1, 0.5, 0.0]),
        "remaining": np.array([300.0, 100.0, 900.0]),
        "window": 3,
        "k": 1e-3,
    }
    (x1, f1), (x2, f2) = market(**args), market(solver="ECOS", **args)
    assert f1 == pytest.approx(f2, abs=1e-4)
    assert x1.sum(axis=1) == pytest.approx(x2.sum(axis=1), abs=1e-3)


def test_momentum_average_is_the_artifacts():
    """Estimates 100 (rounds 0–2) and 200 (rounds 2–4) at round 4: 0.9 × 150 + 0.1 × 200."""
    assert momentum_average([(0, 100.0), (2, 200.0)], 4) == pytest.approx(155.0)
    assert momentum_average([(3, 80.0)], 3) == pytest.approx(80.0)


# ---- the policy end to end --------------------------------------------------------------


def _profile() -> ProfileTable:
    return ProfileTable(
        {
            "v100": {
                f"('{R18.format(32)}', 2)": {"null": 10.0},
                f"('{R18.format(64)}', 2)": {"null": 8.0},
            }
        },
        source="hand",
    )


def _two_gpus() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "two", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )


def _pair() -> pd.DataFrame:
    """a: 1000 steps at batch 32 (100 s); b: the same, its batch doubling half-way."""
    return pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": 0.0,
            "num_gpus": 2,
            "total_steps": 1000.0,
            "model": R18.format(32),
            "batch_schedule": [None, "1:32;1:64"],
        }
    )


def _run(known: str, **params) -> dlsched.SimulationResult:
    truth = DynamicBatchModel(_profile(), {"b": "1:32;1:64"})
    policy = ShockwavePolicy(round_s=100.0, window=1, k=0.0, **params)
    return dlsched.simulate(
        _pair(),
        _two_gpus(),
        policy,
        throughput=truth,
        estimator=DynamicEstimator(known),
        audit=True,
    )


def _finishes(result: dlsched.SimulationResult) -> dict[object, float]:
    return dict(zip(result.jobs["job_id"], result.jobs["finish_time"], strict=True))


def test_knowing_the_schedule_in_advance_runs_the_scaling_job_first():
    """In advance, b's 81.25 s earn it the larger share (above): b runs 0–81.25 and a,
    filled in when b ends, 81.25–181.25. Online both look like 100 s: equal shares, the
    tie to a (submit order), a 0–100, b 100–181.25."""
    assert _finishes(_run("advance")) == pytest.approx({"b": 81.25, "a": 181.25})
    assert _finishes(_run("online")) == pytest.approx({"a": 100.0, "b": 181.25})


def test_same_seed_same_result():
    one, two = _run("advance").jobs, _run("advance").jobs
    pd.testing.assert_frame_equal(one, two)


def test_a_larger_workload_finishes_under_both_solvers_on_gavels_table():
    table = ProfileTable.gavel()
    models = [R18.format(32), "ResNet-50 (batch size 64)", "LM (batch size 20)"]
    jobs = pd.DataFrame(
        {
            "job_id": list(range(9)),
            "submit_time": [150.0 * i for i in range(9)],
            "num_gpus": [1, 2, 1, 4, 1, 2, 1, 1, 2],
            "duration": [1800.0 + 300 * i for i in range(9)],
            "model": [models[i % 3] for i in range(9)],
        }
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}
    )
    results = [
        dlsched.simulate(jobs, cluster, ShockwavePolicy(solver=s), throughput=table, audit=True)
        for s in ("CLARABEL", "ECOS")
    ]
    for result in results:
        assert result.jobs["finish_time"].notna().all()


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"round_s": 0.0}, "round_s"),
        ({"k": -1.0}, "k"),
        ({"lam": float("nan")}, "lam"),
        ({"rhomax": 0}, "rhomax"),
        ({"window": 0}, "window"),
        ({"max_jobs": 2.5}, "max_jobs"),
        ({"solver": "GUROBI"}, "solver"),
    ],
)
def test_bad_parameters_name_the_field(params, field):
    with pytest.raises(ValueError, match=field):
        ShockwavePolicy(**params)


def test_registered_and_reachable_by_name():
    policy = dlsched.policies.get("shockwave", window=3)
    assert isinstance(policy, ShockwavePolicy) and policy.window == 3


# ---- the default parameters: the artifact's canonical run ---------------------------------


def test_the_defaults_are_the_canonical_runs_and_keep_the_market_fair():
    """The contended pair above (100 and 200 s left, one 100 s round) with the makespan
    term: M = 200 − 100 x_b = 100 + 100 x_a, so the optimum has
    (1/(x_a + ε) − 1/(1 − x_a + 2ε)) / 2 = 100 k. With the default k = 1e-3
    (tacc_32gpus.json) that is 1/x − 1/(1 − x) ≈ 0.2: x_a ≈ 0.475, nearly the market's equal
    split; with the example config's k = 10 it is 2000: a gets almost nothing."""
    policy = ShockwavePolicy()
    assert (policy.k, policy.lam, policy.window) == (1e-3, 12.0, 20)
    args = {
        "gpus": 2,
        "demand": np.array([2.0, 2.0]),
        "progress": np.zeros(2),
        "remaining": np.array([100.0, 200.0]),
    }
    x, _ = market(k=policy.k, **args)
    root = (2.2 - np.sqrt(2.2**2 - 0.8)) / 0.4  # 0.2 x² − 2.2 x + 1 = 0
    assert x[0, 0] == pytest.approx(root, abs=2e-3)
    x10, _ = market(k=10.0, **args)
    assert x10[0, 0] < 0.01


@pytest.mark.slow  # two Shockwave runs of 40 jobs: ~10 s
def test_the_example_config_is_a_makespan_planner():
    """40 Gavel jobs with Shockwave's batch schedules on 8 V100s: with k = 10 (the example
    config) the efficiency term outweighs the welfare term ~10⁴ times and Shockwave's average
    JCT is 1.94× max-min fairness's (the artifact's own makespan planner, OSSP, is 1.76× on
    its canonical trace); with the defaults (k = 1e-3, lambda = 12) 1.21×, every program
    solved (no fallback). Makespans stay within 5 % of each other."""
    from dlsched.perf.dynamic import schedules_from_workload
    from dlsched.traces.schema import validate_jobs
    from dlsched.traces.transforms_dynamic import add_batch_schedules

    models = [R18.format(32), "ResNet-50 (batch size 64)", "LM (batch size 20)"]
    models += ["Transformer (batch size 64)", R18.format(64)]
    jobs = pd.DataFrame(
        {
            "job_id": list(range(40)),
            "submit_time": [200.0 * i for i in range(40)],
            "num_gpus": [[1, 1, 2, 4][i % 4] for i in range(40)],
            "duration": [3600.0 * (1 + i % 5) for i in range(40)],
            "model": [models[i % 5] for i in range(40)],
        }
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "eight", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 4}]}
    )
    table = ProfileTable.gavel()

    def summary(seed: int, policy: object) -> dict:
        workload = add_batch_schedules(
            validate_jobs(jobs, "inline", lenient=False, fmt="canonical"), seed=seed
        )
        truth = DynamicBatchModel(table, schedules_from_workload(workload))
        run = dlsched.simulate(
            workload, cluster, policy, throughput=truth, estimator=DynamicEstimator("advance")
        )
        return run.summary()

    fair = summary(3, "max_min_fairness")
    example = summary(3, ShockwavePolicy(k=10.0, lam=5.0))
    policy = ShockwavePolicy()
    default = summary(3, policy)
    assert example["avg_jct"] > 1.5 * fair["avg_jct"]
    assert example["avg_jct"] > 1.5 * default["avg_jct"]
    assert default["avg_jct"] < 1.3 * fair["avg_jct"]
    assert policy.solves > 50 and policy.fallbacks == 0
    for run in (example, default):
        assert abs(run["makespan"] / fair["makespan"] - 1) < 0.05
