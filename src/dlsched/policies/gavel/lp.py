"""Gavel's allocation LPs over X[j, k], the fraction of wall time job j runs on GPU type k.

Every problem shares Gavel's constraints (Narayanan et al., OSDI 2020, §3.1):

    0 ≤ X[j, k] ≤ 1;   Σ_k X[j, k] ≤ 1 (one type at a time);   Σ_j s_j·X[j, k] ≤ G_k

with s_j the GPUs job j asks for and G_k the GPUs of type k. A pair (j, k) the job cannot
use (throughput 0, or s_j > G_k) is fixed at 0. Solved with scipy's HiGHS on sparse
constraint matrices (no cvxpy). The max-min and max-sum LPs solve one row per class of
identical jobs (`_classes`), so with Gavel's model table their size stops growing with the
number of jobs; 5,000 distinct jobs still solve in about half a second. Finish-time
fairness bisects on ρ, one max-min LP per step (see `benchmarks/gavel_lp_timing.py`).

Equal share (our restatement of Gavel's "proportional" baseline): every type's GPUs split
evenly over all requested GPUs, e_k = G_k / max(S, Σ_k G_k) with S = Σ_j s_j — feasible by
construction (Σ_k e_k ≤ 1 and S·e_k ≤ G_k) — and T_equal[j] = Σ_k T[j, k]·e_k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from dlsched.errors import SchedulingError


@dataclass(frozen=True)
class Problem:
    """The inputs of one solve: `throughputs` (n jobs × m types, steps/s, 0 = cannot run
    there), `scale_factors` (GPUs per job), `capacities` (GPUs per type) and priority
    `weights` (per job, > 0)."""

    throughputs: np.ndarray
    scale_factors: np.ndarray
    capacities: np.ndarray
    weights: np.ndarray

    @classmethod
    def build(cls, throughputs, scale_factors, capacities, weights=None) -> Problem:
        """A validated problem from array-likes (weights default to 1)."""
        tput = np.asarray(throughputs, dtype=float).reshape(len(scale_factors), -1)
        scale = np.asarray(scale_factors, dtype=float)
        caps = np.asarray(capacities, dtype=float)
        w = np.ones(len(scale)) if weights is None else np.asarray(weights, dtype=float)
        if tput.shape[1] != len(caps) or len(w) != len(scale):
            raise ValueError(f"gavel LP: throughputs {tput.shape} do not match "
                             f"{len(scale)} jobs × {len(caps)} types")
        if (w <= 0).any() or (scale <= 0).any() or (tput < 0).any():
            raise ValueError("gavel LP: weights and scale factors must be > 0, throughputs ≥ 0")
        return cls(tput, scale, caps, w)

    @property
    def usable(self) -> np.ndarray:
        """Boolean n × m: pairs that may get time."""
        return (self.throughputs > 0) & (self.scale_factors[:, None] <= self.capacities[None, :])

    def equal_share_throughput(self) -> np.ndarray:
        """T_equal[j]: the job's throughput under the equal share (module docstring)."""
        total = max(float(self.scale_factors.sum()), float(self.capacities.sum()), 1.0)
        share = self.capacities / total
        return (self.throughputs * self.usable) @ share


def _classes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Jobs with identical LP rows: the first job of each class, each job's class, and the
    class sizes. The LPs are symmetric in such jobs and convex, so averaging an optimum over
    a class is still optimal: one row per class solves them, every member getting the same
    X. With Gavel's 26 models the LP size stops growing with the number of jobs."""
    _, first, inverse, counts = np.unique(key, axis=0, return_index=True,
                                          return_inverse=True, return_counts=True)
    return first, inverse.ravel(), counts


def _reduced(problem: Problem, first: np.ndarray) -> Problem:
    return Problem(problem.throughputs[first], problem.scale_factors[first],
                   problem.capacities, problem.weights[first])


def _feasible_region(problem: Problem, extra: int = 0, multiplicity: np.ndarray | None = None):
    """Sparse A_ub (rows: per job Σ_k X ≤ 1, per type Σ_j s_j X ≤ G_k), b_ub and bounds for
    the n·m variables of X (row-major) followed by `extra` free-standing variables. Row j
    stands for `multiplicity[j]` identical jobs when given."""
    n, m = problem.throughputs.shape
    nm = n * m
    cols = np.arange(nm)
    job_of = cols // m
    type_of = cols % m
    gpus = problem.scale_factors if multiplicity is None else (
        problem.scale_factors * multiplicity)
    per_job = sp.csr_matrix((np.ones(nm), (job_of, cols)), shape=(n, nm + extra))
    per_type = sp.csr_matrix((gpus[job_of], (type_of, cols)),
                             shape=(m, nm + extra))
    a_ub = sp.vstack([per_job, per_type], format="csr")
    b_ub = np.concatenate([np.ones(n), problem.capacities])
    upper = problem.usable.ravel().astype(float)
    bounds = np.zeros((nm + extra, 2))
    bounds[:nm, 1] = upper
    return a_ub, b_ub, bounds


def _solve(c, a_ub, b_ub, bounds, what: str) -> np.ndarray:
    result = linprog(c, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0:
        raise SchedulingError(f"gavel {what} LP failed: {result.message}")
    return result.x


def _as_matrix(x: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    return np.clip(x[: shape[0] * shape[1]].reshape(shape), 0.0, 1.0)


def _max_min(problem: Problem, coef: np.ndarray, multiplicity: np.ndarray | None = None
             ) -> tuple[np.ndarray, float]:
    """X maximising t subject to Σ_k coef[j,k]·X[j,k] ≥ t for every job with a non-zero
    coef row, and t itself (0 when no such job)."""
    n, m = coef.shape
    rows = np.flatnonzero((coef > 0).any(axis=1))
    a_ub, b_ub, bounds = _feasible_region(problem, extra=1, multiplicity=multiplicity)
    # t − Σ_k coef[j,k]·X[j,k] ≤ 0 for every such job j
    live_coef = coef[rows]
    nz_r, nz_c = np.nonzero(live_coef)
    k = len(rows)
    fair = sp.csr_matrix(
        (np.concatenate([-live_coef[nz_r, nz_c], np.ones(k)]),
         (np.concatenate([nz_r, np.arange(k)]),
          np.concatenate([rows[nz_r] * m + nz_c, np.full(k, n * m)]))),
        shape=(k, n * m + 1))
    a_ub = sp.vstack([a_ub, fair], format="csr")
    b_ub = np.concatenate([b_ub, np.zeros(k)])
    bounds[-1] = (0.0, np.inf) if k else (0.0, 0.0)
    c = np.zeros(n * m + 1)
    c[-1] = -1.0
    x = _solve(c, a_ub, b_ub, bounds, "max-min")
    return _as_matrix(x, (n, m)), float(x[-1])


def max_min_fairness(problem: Problem) -> np.ndarray:
    """X maximising min_j Σ_k T[j,k]·X[j,k]·s_j / (w_j·T_equal[j]) (Gavel's LAS, §4.1).

    Jobs that can run nowhere get a zero row and are left out of the minimum. Pass
    throughputs of 1 on every usable type for the heterogeneity-agnostic baseline."""
    tput = problem.throughputs * problem.usable
    n, m = tput.shape
    if n == 0:
        return np.zeros((0, m))
    equal = problem.equal_share_throughput()
    live = equal > 0
    coef = np.zeros_like(tput)
    scale = problem.scale_factors[live] / (problem.weights[live] * equal[live])
    coef[live] = tput[live] * scale[:, None]
    first, member_of, counts = _classes(np.column_stack(
        [coef, problem.throughputs, problem.scale_factors]))
    x, _ = _max_min(_reduced(problem, first), coef[first], counts)
    return x[member_of]


def finish_time_fairness(problem: Problem, elapsed_s, remaining_steps,
                         tolerance: float = 1e-6) -> np.ndarray:
    """X minimising max_j ρ_j, Themis' finish-time fairness as Gavel states it (§4.1):

        ρ_j(X) = (elapsed_j + remaining_j / Σ_k T[j,k]·X[j,k]) / (elapsed_j + remaining_j /
                 T_equal[j])

    (time in the system under X over time under the equal share). ρ_j is not linear in X,
    so the smallest feasible ρ is found by bisection on [max_j ρ_j at its best type, 1]
    (the equal share reaches ρ = 1 for every job): ρ is feasible when the max-min LP over
    coef[j,k] = T[j,k]·(ρ·isolated_j − elapsed_j) / remaining_j reaches t ≥ 1; each
    feasible X also lowers the upper bound to its own worst ρ. The X returned is that LP's
    at the smallest feasible ρ found, to `tolerance` in ρ."""
    tput = problem.throughputs * problem.usable
    n, m = tput.shape
    if n == 0:
        return np.zeros((0, m))
    elapsed = np.asarray(elapsed_s, dtype=float)
    remaining = np.asarray(remaining_steps, dtype=float)
    equal = problem.equal_share_throughput()
    live = (equal > 0) & (remaining > 0)
    isolated = np.full(n, np.inf)
    isolated[live] = elapsed[live] + remaining[live] / equal[live]
    best = tput.max(axis=1, initial=0.0)
    floor = np.zeros(n)
    floor[live] = (elapsed[live] + remaining[live] / best[live]) / isolated[live]

    def attempt(rho: float) -> tuple[np.ndarray, float]:
        coef = np.zeros_like(tput)
        slack = np.maximum(rho * isolated[live] - elapsed[live], 0.0)
        coef[live] = tput[live] * (slack / remaining[live])[:, None]
        return _max_min(problem, coef)

    def worst_rho(x: np.ndarray) -> float:
        effective = (tput[live] * x[live]).sum(axis=1)
        if (effective <= 0).any():
            return np.inf
        return float(((elapsed[live] + remaining[live] / effective) / isolated[live]).max())

    if not live.any():
        return np.zeros((n, m))
    x, _ = attempt(1.0)
    low, high = float(floor.max()), min(1.0, worst_rho(x))
    while high - low > tolerance:
        mid = (low + high) / 2
        x_mid, t = attempt(mid)
        if t >= 1 - 1e-9:  # feasible: X's own worst ρ may be lower still
            high, x = min(mid, worst_rho(x_mid)), x_mid
        else:
            low = mid
    return x


def max_sum_throughput(problem: Problem) -> np.ndarray:
    """X maximising Σ_j Σ_k X[j,k]·T[j,k] / max_k T[j,k] (Gavel's max total throughput,
    each job's throughput normalised by its best so fast models do not dominate)."""
    tput = problem.throughputs * problem.usable
    n, m = tput.shape
    if n == 0:
        return np.zeros((0, m))
    best = tput.max(axis=1, initial=0.0)
    norm = np.divide(tput, best[:, None], out=np.zeros_like(tput), where=best[:, None] > 0)
    first, member_of, counts = _classes(np.column_stack(
        [norm, problem.throughputs, problem.scale_factors]))
    a_ub, b_ub, bounds = _feasible_region(_reduced(problem, first), multiplicity=counts)
    value = (norm[first] * counts[:, None]).ravel()
    x = _solve(-value, a_ub, b_ub, bounds, "max-sum-throughput")
    return _as_matrix(x, (len(first), m))[member_of]


def check_feasible(problem: Problem, x: np.ndarray, tolerance: float = 1e-7) -> None:
    """Raise AssertionError if `x` breaks a constraint (used by tests and the auditor)."""
    assert x.shape == problem.throughputs.shape
    assert (x >= -tolerance).all() and (x <= 1 + tolerance).all()
    assert (x[~problem.usable] <= tolerance).all()
    assert (x.sum(axis=1) <= 1 + tolerance).all()
    assert (problem.scale_factors @ x <= problem.capacities + tolerance).all()
