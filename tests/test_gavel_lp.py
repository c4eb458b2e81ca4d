"""Gavel's allocation LPs for makespan, cost, FIFO, space sharing and hierarchy: optima on
two or three jobs worked out by hand, and agreement between the two HiGHS back ends."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.policies.gavel import interior, lp
from dlsched.policies.gavel.fifo import fifo_fastest
from dlsched.policies.gavel.hierarchical import hierarchical
from dlsched.policies.gavel.lp import Problem, check_feasible
from dlsched.policies.gavel.packing import max_min_fairness_packed

# ---- minimum makespan -----------------------------------------------------------------------


def test_min_total_duration_gives_the_v100_to_the_job_that_needs_it():
    """A (2 steps/s on V100, 1 on K80, 20 steps left), B (1 anywhere, 10 left): T* = 10 s."""
    # z = 1/T: B runs at ≤ 1 step/s whatever X (b_V + b_K ≤ 1), so 10·z ≤ 1: z ≤ 1/10.
    # A reaches 20·z = 2 only with a_V = 1 (2·a_V + a_K ≤ 2 with a_V + a_K ≤ 1), leaving the
    # K80 to B (b_K = 1). The optimum is unique: X = identity, both finish at T = 10 s.
    problem = Problem.build([[2.0, 1.0], [1.0, 1.0]], [1, 1], [1, 1])
    x = lp.min_total_duration(problem, [20.0, 10.0])
    assert x == pytest.approx(np.eye(2), abs=1e-9)
    assert lp.makespan(problem, x, [20.0, 10.0]) == pytest.approx(10.0)


def test_min_total_duration_splits_one_gpu_in_proportion_to_work():
    """Two jobs at 1 step/s on one GPU, 30 and 10 steps left: X = (¾, ¼), both end at 40 s."""
    # a ≥ 30·z, b ≥ 10·z, a + b ≤ 1 → z ≤ 1/40, with equality only at a = ¾, b = ¼.
    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    x = lp.min_total_duration(problem, [30.0, 10.0])
    assert x[:, 0] == pytest.approx([0.75, 0.25], abs=1e-9)
    assert lp.makespan(problem, x, [30.0, 10.0]) == pytest.approx(40.0)


# ---- minimum cost -------------------------------------------------------------------------


def test_min_cost_picks_the_most_throughput_per_dollar():
    """V100 at $3/h runs the job at 10 steps/s, a K80 at $1/h at 4: the K80 wins."""
    # normalised value per dollar: V100 (10/10)/3 = 0.333, K80 (4/10)/1 = 0.4 → X = (0, 1)
    problem = Problem.build([[10.0, 4.0]], [1], [1, 1])
    x = lp.min_cost(problem, [3.0, 1.0])
    assert x == pytest.approx(np.array([[0.0, 1.0]]), abs=1e-9)


def test_min_cost_slo_buys_just_enough_v100_time():
    """Needing 6 steps/s (K80 gives 4) takes a_V = ⅓, a_K = ⅔: the cheapest X meeting it."""
    # max a_V/3 + 0.4·a_K s.t. 10·a_V + 4·a_K ≥ 6, a_V + a_K ≤ 1. On a_V + a_K = 1 the value
    # 0.4 − a_V/15 falls with a_V and the SLO needs 4 + 6·a_V ≥ 6, i.e. a_V ≥ ⅓.
    problem = Problem.build([[10.0, 4.0]], [1], [1, 1])
    x = lp.min_cost(problem, [3.0, 1.0], required_steps_per_s=[6.0])
    assert x[0] == pytest.approx([1 / 3, 2 / 3], abs=1e-7)


def test_min_cost_drops_an_slo_no_allocation_can_meet():
    """20 steps/s exceeds the job's best (10): the SLO row is dropped, not the solve."""
    problem = Problem.build([[10.0, 4.0]], [1], [1, 1])
    x = lp.min_cost(problem, [3.0, 1.0], required_steps_per_s=[20.0])
    assert x == pytest.approx(np.array([[0.0, 1.0]]), abs=1e-9)


# ---- FIFO ---------------------------------------------------------------------------------


def test_fifo_fastest_fills_in_arrival_order_and_stops_at_the_first_misfit():
    """Three V100-loving jobs, 1 V100 + 1 K80: the first gets the V100, the second the K80."""
    problem = Problem.build([[10.0, 1.0], [5.0, 1.0], [8.0, 2.0]], [1, 1, 1], [1, 1])
    assert fifo_fastest(problem) == pytest.approx(np.array([[1, 0], [0, 1], [0, 0]]))


# ---- agnostic spread ----------------------------------------------------------------------


def test_agnostic_time_is_spread_over_types_by_their_gpu_counts():
    """Three 1-GPU jobs on 2 V100 + 1 K80, all at rate 1: each runs ⅔ on V100, ⅓ on K80."""
    problem = Problem.build(np.ones((3, 2)), [1, 1, 1], [2, 1])
    x = lp.spread_evenly(problem, lp.max_min_fairness(problem))
    assert x == pytest.approx(np.tile([2 / 3, 1 / 3], (3, 1)), abs=1e-9)
    check_feasible(problem, x)


# ---- space sharing ------------------------------------------------------------------------


def pair_rates(table: dict):
    return lambda i, j, k: table.get((i, j, k), (0.0, 0.0))


def test_packed_max_min_packs_two_jobs_that_keep_80_percent_each():
    """A, B alone at 1 step/s on one GPU, 0.8 each when packed: packed all the time, t = 1.6."""
    # Equal share ½ each: coef = T·s / (w·T_equal) = 2 per unit of time alone, 2·0.8 = 1.6
    # per unit packed. With y the packed time and a = b = (1 − y)/2 alone, min = 1 + 0.6·y:
    # y = 1 is optimal (time sharing alone would give each 1).
    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    modes, x = max_min_fairness_packed(
        problem, np.array([0, 1]), pair_rates({(0, 1, 0): (0.8, 0.8)})
    )
    assert modes == [(0, None), (0, 0), (0, 1)]
    assert x == pytest.approx(np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]), abs=1e-9)


def test_packed_max_min_ignores_pairs_worse_than_taking_turns():
    """Packed rates 0.4 + 0.4 < 1: the pair is no candidate, each job runs alone half the time."""
    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    modes, x = max_min_fairness_packed(
        problem, np.array([0, 1]), pair_rates({(0, 1, 0): (0.4, 0.4)})
    )
    assert modes == [(0, None)]
    assert x[:, 0] == pytest.approx([0.5, 0.5], abs=1e-9)


def test_packed_max_min_pairs_two_members_of_one_class():
    """Two identical jobs (one class) that keep 80% packed: each member packed all the time."""
    # One class of 2 members: a pair uses the GPU once for two members, so y = 1 per member
    # costs 2·1·1/2 = 1 GPU.
    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    modes, x = max_min_fairness_packed(
        problem, np.array([0, 0]), pair_rates({(0, 0, 0): (0.8, 0.8)})
    )
    assert modes == [(0, None), (0, 0)]
    assert x == pytest.approx(np.array([[0.0, 1.0], [0.0, 1.0]]), abs=1e-9)


def test_packed_max_min_per_pair_packs_two_jobs_that_keep_80_percent_each():
    """Gavel's per-pair problem on an interior-point solver: the same unique optimum."""
    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    modes, x = max_min_fairness_packed(
        problem, np.array([0, 1]), pair_rates({(0, 1, 0): (0.8, 0.8)}), solver="CLARABEL"
    )
    assert modes == [(0, None), (0, 0), (0, 1)]
    assert x == pytest.approx(np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]), abs=1e-6)


def test_packed_max_min_per_pair_never_plans_a_pair_that_cannot_run():
    """Two 4-GPU jobs whose pair Gavel's table rates 0 (as for every multi-GPU pair): the
    pair gets a variable, as in Gavel's problem, but no mode: each job runs alone half."""
    problem = Problem.build([[1.0], [1.0]], [4, 4], [4])
    modes, x = max_min_fairness_packed(problem, np.array([0, 1]), pair_rates({}), solver="CLARABEL")
    assert modes == [(0, None)]
    assert x[:, 0] == pytest.approx([0.5, 0.5], abs=1e-6)


def test_packed_max_min_checks_which_pairs():
    """`pairs` is "all" or "rated", on the function and the policy alike."""
    from dlsched.errors import ConfigError
    from dlsched.policies import get

    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    with pytest.raises(ConfigError, match="pairs must be 'all'"):
        max_min_fairness_packed(problem, np.array([0, 1]), pair_rates({}), pairs="some")
    with pytest.raises(ConfigError, match="max_min_fairness_packed: pairs must be"):
        get("max_min_fairness_packed", pairs="every")


@pytest.mark.parametrize("which", ["all", "rated"])
@pytest.mark.parametrize("seed", range(6))
def test_packed_max_min_per_pair_reaches_the_class_problems_optimum(seed, which):
    """Random jobs (1 or 2 GPUs, three types, some pairs rated 0, some never allowed to
    share): Gavel's per-pair problem and the class problem have the same optimal minimum,
    and the per-pair plan fits: each job's time ≤ 1, each pair's GPUs counted once."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(3, 9)), 3
    tput = rng.uniform(0.5, 3.0, (n, m)) * (rng.random((n, m)) > 0.2)
    tput[:, 0] = np.maximum(tput[:, 0], 0.5)  # every job can run somewhere
    scale = rng.choice([1, 2], n)
    caps = np.array([2.0, 3.0, 4.0])
    problem = Problem.build(tput, scale, caps)
    table = {}
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(m):
                draw = rng.random()
                if draw < 0.2:
                    rated = (np.nan, np.nan)  # may never share
                elif draw < 0.4:
                    rated = (0.0, 0.0)  # rated 0, as Gavel's multi-GPU pairs
                else:
                    rated = tuple(rng.uniform(0.3, 0.9, 2) * tput[[i, j], k])
                table[(i, j, k)], table[(j, i, k)] = rated, rated[::-1]
    rates = pair_rates(table)
    keys = np.arange(n)
    coef = lp._fairness_coef(problem)
    unit = (coef / np.where(tput > 0, tput, 1.0)).max(axis=1)

    def minimum(modes, x):
        value = np.zeros(n)
        for col, (k, partner) in enumerate(modes):
            for j in np.flatnonzero(x[:, col]):
                rate = tput[j, k] if partner is None else rates(j, int(partner), k)[0]
                value[j] += unit[j] * rate * x[j, col]
        return value.min()

    per_pair = max_min_fairness_packed(problem, keys, rates, solver="CLARABEL", pairs=which)
    by_class = max_min_fairness_packed(problem, keys, rates)
    assert minimum(*per_pair) == pytest.approx(minimum(*by_class), rel=1e-5)
    modes, x = per_pair
    assert (x.sum(axis=1) <= 1 + 1e-6).all()
    for k in range(m):
        alone = [c for c, mode in enumerate(modes) if mode == (k, None)]
        packed = [c for c, mode in enumerate(modes) if mode[0] == k and mode[1] is not None]
        used = scale @ x[:, alone].sum(axis=1) + scale @ x[:, packed].sum(axis=1) / 2
        assert used <= caps[k] + 1e-6
    for col, (k, partner) in enumerate(modes):
        for j in np.flatnonzero(x[:, col] > 1e-9):
            if partner is not None:  # a planned pair has both rates above 0
                assert min(rates(j, int(partner), k)) > 0


# ---- hierarchical -------------------------------------------------------------------------


def test_hierarchical_splits_gpus_between_entities_before_jobs():
    """User A (2 jobs) and user B (1 job), 2 GPUs: B's job gets a GPU, A's jobs half each."""
    # Flat max-min would give every job ⅔; per entity, A's two jobs share one GPU.
    problem = Problem.build(np.ones((3, 1)), [1, 1, 1], [2])
    x = hierarchical(problem, np.array([0, 0, 1]), np.array([1.0, 1.0]))
    assert x[:, 0] == pytest.approx([0.5, 0.5, 1.0], abs=1e-6)


def test_hierarchical_entity_weights_scale_their_share():
    """Weights 3 (A) and 1 (B): A gets 1.5 GPUs (¾ per job), B ½."""
    # normalised throughput per unit of time = 1 / e with e = 2/3: A: 1.5·(x1 + x2) ≥ 3t,
    # B: 1.5·x3 ≥ t and x1 + x2 + x3 ≤ 2 give t = ¾, x1 + x2 = 1.5, x3 = ½.
    problem = Problem.build(np.ones((3, 1)), [1, 1, 1], [2])
    x = hierarchical(problem, np.array([0, 0, 1]), np.array([3.0, 1.0]))
    assert x[:, 0] == pytest.approx([0.75, 0.75, 0.5], abs=1e-6)


def test_hierarchical_fifo_within_serves_the_first_job_first():
    """`within="fifo"`: A's budget of one GPU all goes to its first job."""
    problem = Problem.build(np.ones((3, 1)), [1, 1, 1], [2])
    x = hierarchical(problem, np.array([0, 0, 1]), np.array([1.0, 1.0]), within="fifo")
    assert x[:, 0] == pytest.approx([1.0, 0.0, 1.0], abs=1e-6)


# ---- solver back ends ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_direct_highs_and_linprog_reach_the_same_optimum(seed):
    """scipy's HiGHS bindings and `linprog` agree on random max-min LPs."""
    if lp._direct_highs() is None:
        pytest.skip("this scipy has no HiGHS bindings")
    rng = np.random.default_rng(seed)
    n, m = 12, 3
    problem = Problem.build(
        rng.uniform(0, 10, (n, m)), rng.choice([1, 2], n), rng.integers(2, 8, m)
    )
    coef = lp._fairness_coef(problem)
    values = []
    for backend in ("direct", "linprog"):
        rows, lower, upper = lp.feasible_region(problem, extra=1)
        lp.add_at_least(rows, coef, n * m)
        cost = np.zeros(n * m + 1)
        cost[-1] = -1.0
        values.append(lp.solve_lp(cost, rows, lower, upper, "test", backend=backend)[-1])
    assert values[0] == pytest.approx(values[1], rel=1e-7)


# ---- finish-time fairness, Gavel's denominator --------------------------------------------


def test_finish_time_fairness_with_gavels_denominator_equalises_rho():
    """One GPU, two jobs at 1 step/s with 1 step left, isolated rate ½ each. A is new; B has
    been in 10 s, of which 2 s of work in isolation: ρ_A = (1/a) / 2, ρ_B = (10 + 1/b) / 4.
    Equal at a + b = 1: 10a² − 13a + 2 = 0, a = (13 − √89) / 20 = 0.17830."""
    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    x = lp.finish_time_fairness(
        problem, [0.0, 10.0], [1.0, 1.0], isolated_done_s=[0.0, 2.0], isolated_rate=[0.5, 0.5]
    )
    assert x[:, 0] == pytest.approx([(13 - 89**0.5) / 20, 1 - (13 - 89**0.5) / 20], abs=1e-6)


def test_isolated_throughput_is_gavels_isolated_share_times_the_rates():
    """Jobs of 1, 1 and 4 GPUs at (4, 1) steps/s on 4 V100 + 4 K80: Gavel's shares
    (G_k / 3) / s_j, rows capped at 1, give the 1-GPU jobs (½, ½) and the 4-GPU job (⅓, ⅓):
    rates 2.5, 2.5 and 5/3 (the equal share gives every job ½ of each type: 2.5)."""
    problem = Problem.build([[4.0, 1.0]] * 3, [1, 1, 4], [4, 4])
    assert lp.isolated_throughput(problem) == pytest.approx([2.5, 2.5, 5 / 3])
    assert problem.equal_share_throughput() == pytest.approx([2.5] * 3)


@pytest.mark.parametrize("solver", ["CLARABEL", "ECOS"])
def test_finish_time_fairness_on_an_interior_point_solver_returns_gavels_interior_point(solver):
    """Two jobs on 2 V100: ρ_0 = 1 / x_0, and job 1 (10 steps left at 1 step/s, 100 s of
    isolated work done) has ρ_1 = (10 / x_1) / 110 ≤ 1 for any x_1 ≥ 1/11. The optimum
    (max ρ = 1) fixes x_0 = 1 only: HiGHS spends the leftover (x_1 = 1), Gavel's solver
    returns a point inside [1/11, 1]."""
    _needs(solver)
    problem = Problem.build([[2.0], [1.0]], [1, 1], [2])
    args = ([0.0, 0.0], [100.0, 10.0])
    gavel = dict(isolated_done_s=[0.0, 100.0], isolated_rate=[2.0, 1.0])
    highs = lp.finish_time_fairness(problem, *args, spend_leftover=True, **gavel)
    inside = lp.finish_time_fairness(problem, *args, solver=solver, **gavel)
    assert highs[:, 0] == pytest.approx([1.0, 1.0], abs=1e-6)
    assert inside[0, 0] == pytest.approx(1.0, abs=1e-4) and 1 / 11 < inside[1, 0] < 0.99


def _needs(solver: str) -> None:
    if solver == "ECOS":
        pytest.importorskip("ecos")


@pytest.mark.parametrize("solver", ["CLARABEL", "ECOS"])
def test_max_min_on_an_interior_point_solver_returns_a_point_inside_the_optimal_face(solver):
    """One type of 3 GPUs, t ≤ x_A and t ≤ 2·x_B: the optimum t = 1 needs x_A = 1 and any
    x_B in [½, 1]; a vertex is an end of that range, Gavel's solver a point inside it."""
    _needs(solver)
    x = interior.max_min(np.array([[1.0], [2.0]]), np.array([1, 1]), np.array([3.0]), solver)
    assert x[0, 0] == pytest.approx(1.0, abs=1e-5)
    assert 0.5 + 1e-3 < x[1, 0] < 1 - 1e-3


def test_max_min_fairness_policy_on_an_interior_point_solver_keeps_gavels_per_type_problem():
    """Agnostic max-min on 36:36:36 with CLARABEL: the per-type problem (not the pooled one
    HiGHS solves), every job spread over the three types, within every constraint."""
    problem = Problem.build(np.ones((4, 3)), [1, 2, 4, 8], [36, 36, 36])
    x = lp.max_min_fairness(problem, solver="CLARABEL")
    lp.check_feasible(problem, x, tolerance=1e-6)
    assert (x > 1e-3).all()


def test_gavel_policies_refuse_an_unknown_solver_and_accept_any_case():
    """solver is "highs" or an interior-point solver, in any case; else a ConfigError."""
    from dlsched import policies
    from dlsched.errors import ConfigError

    assert policies.get("max_min_fairness_perf", solver="clarabel").solver == "CLARABEL"
    assert policies.get("min_total_duration", solver=" HiGHS ").solver == "highs"
    with pytest.raises(ConfigError, match="solver must be 'highs' or one of CLARABEL, ECOS"):
        policies.get("finish_time_fairness_perf", solver="gurobi")


def test_finish_time_fairness_policy_refuses_an_unknown_rho():
    """rho must be "gavel" or "equal_share"."""
    from dlsched import policies
    from dlsched.errors import ConfigError

    with pytest.raises(ConfigError, match="rho must be one of"):
        policies.get("finish_time_fairness_perf", rho="themis")


@pytest.mark.parametrize("solver", ["CLARABEL", "ECOS"])
def test_min_total_duration_on_an_interior_point_solver_bisects_as_gavel_and_keeps_slack(
    solver,
):
    """Gavel's bisection (100 s to 10⁶ s, to 5 %) on two jobs of 3000 and 1000 steps at 1
    step/s on one GPU (optimum T = 4000 s): the X of a feasible T up to 5 % above it, from
    inside the feasible set, not the exact LP's (¾, ¼)."""
    _needs(solver)
    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    x = lp.min_total_duration(problem, [3000.0, 1000.0], solver=solver)
    assert 4000.0 < lp.makespan(problem, x, [3000.0, 1000.0]) <= 4000.0 * 1.05
    assert x[:, 0].sum() < 1.0


def test_a_failed_interior_point_solve_warns_and_falls_back_to_highs(monkeypatch):
    """If the interior-point solver finds nothing, the solve says so and HiGHS answers."""
    from dlsched.errors import SchedulingError

    def fail(*args, **kwargs):
        raise SchedulingError("gavel max-min (CLARABEL): NumericalError")

    monkeypatch.setattr(interior, "max_min", fail)
    monkeypatch.setattr(interior, "finish_time_fairness", fail)
    problem = Problem.build([[2.0], [1.0]], [1, 1], [2])
    with pytest.warns(RuntimeWarning, match="NumericalError; this solve falls back to HiGHS"):
        x = lp.max_min_fairness(problem, solver="CLARABEL")
    assert (x == lp.max_min_fairness(problem)).all()
    with pytest.warns(RuntimeWarning, match="falls back to HiGHS"):
        lp.finish_time_fairness(problem, [0.0, 0.0], [1.0, 1.0], solver="CLARABEL")


def test_lp_functions_check_the_solver_name():
    """lp's solver argument is checked and normalised as the policies' is."""
    from dlsched.errors import ConfigError

    problem = Problem.build([[2.0], [1.0]], [1, 1], [2])
    with pytest.raises(ConfigError, match="solver must be 'highs' or one of"):
        lp.max_min_fairness(problem, solver="gurobi")
    assert (lp.max_min_fairness(problem, solver="HiGHS") == lp.max_min_fairness(problem)).all()


def test_a_failed_makespan_solve_warns_and_falls_back_to_highs(monkeypatch):
    """A numerical failure in Gavel's bisection (not a proof of infeasibility, which only
    moves the bisection) warns, and HiGHS answers."""
    from dlsched.errors import SchedulingError

    problem = Problem.build([[1.0], [1.0]], [1, 1], [1])
    remaining = [3000.0, 1000.0]

    def fail(*args, **kwargs):
        raise SchedulingError("gavel min-total-duration (CLARABEL): NumericalError")

    monkeypatch.setattr(interior.Conic, "solve", fail)
    with pytest.warns(RuntimeWarning, match="falls back to HiGHS"):
        x = lp.min_total_duration(problem, remaining, solver="CLARABEL")
    assert (x == lp.min_total_duration(problem, remaining)).all()
