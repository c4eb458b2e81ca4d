"""Gavel's allocation problems as Gavel's code states them, solved by an interior-point
conic solver — Clarabel (a dependency) or ECOS (Gavel's default; `pip install ecos`) —
called directly, without cvxpy.

Why: the max-min, finish-time-fairness and makespan problems optimise one extreme value, so
their optimum is a face, not a point. HiGHS (`lp.py`) returns a vertex of that face; an
interior-point solver returns a point inside it, near its analytic centre, and that point is
the allocation Gavel's simulator runs (Narayanan et al., OSDI 2020; `scheduler/policies/` of
its code solves with cvxpy, `--solver ECOS` by default). The vertex and the interior point
give the same optimal value but different jobs get the leftover, which moves average JCT by
up to ~20 % near saturation. Each problem here is the one Gavel writes, per job (no class
reduction: the analytic centre of the per-job problem is not that of a reduced one):

    x ≥ 0,   Σ_j s_j·x[j,k] ≤ G_k,   Σ_k x[j,k] ≤ 1      (`Policy.get_base_constraints`)

plus the objective's rows (`max_min_packed` adds a variable per pair of jobs, as Gavel's
packed problem does). Every problem goes to the solver as `G z + s = h`, `s` in a
product of a non-negative orthant and 3-dimensional second-order cones, the form both
Clarabel and ECOS take. Scaling a row does not move the central path, so rows are written in
whatever scale reads best."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dlsched.errors import ConfigError, SchedulingError

# scipy.sparse, like the solvers, loads on the first solve: the policy registry imports this
# module for every run, FIFO included (issue 16, target 4).

#: the interior-point solvers this module can call, by the names cvxpy gives them
SOLVERS = ("CLARABEL", "ECOS")
DIGITS = 7
"""Decimals an answer keeps: both solvers stop at a relative gap of 1e-8, so the digits below
are noise, and jobs that the problem treats alike must get the same X, so that the
mechanism breaks their ties by arrival, not by the solver's last bits."""


class Infeasible(SchedulingError):
    """The solver proved the problem infeasible (not a numerical failure)."""


def check_solver(solver: str, owner: str) -> str:
    """`solver` normalised ("highs" or one of `SOLVERS`), or a ConfigError naming `owner`."""
    name = solver.strip() if isinstance(solver, str) else ""
    if name.lower() == "highs":
        return "highs"
    if name.upper() in SOLVERS:
        return name.upper()
    raise ConfigError(
        f"{owner}: solver must be 'highs' or one of {', '.join(SOLVERS)} (interior point, "
        f"as Gavel's cvxpy problems are solved), got {solver!r}"
    )


@dataclass
class Conic:
    """A conic program `min c·z` subject to `G z ≤ h` rows (non-negative slack) followed by
    3-dimensional second-order cones, accumulated as sparse triplets."""

    n_vars: int
    _lin: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    _soc: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    n_lin: int = 0
    n_soc_rows: int = 0

    def at_most(self, rows, cols, vals, upper) -> None:
        """Rows Σ vals·z[cols] ≤ upper, numbered 0.. within the block."""
        upper = np.asarray(upper, dtype=float).reshape(-1)
        self._lin.append(
            (np.asarray(rows) + self.n_lin, np.asarray(cols), np.asarray(vals, float), upper)
        )
        self.n_lin += len(upper)

    def cones(self, rows, cols, vals, h) -> None:
        """Cones of 3 rows each: s = h − G z with (s0, s1, s2), ‖(s1, s2)‖ ≤ s0; `rows`
        numbered 0.. within the block, len(h) a multiple of 3."""
        h = np.asarray(h, dtype=float).reshape(-1)
        self._soc.append(
            (np.asarray(rows) + self.n_soc_rows, np.asarray(cols), np.asarray(vals, float), h)
        )
        self.n_soc_rows += len(h)

    def solve(self, cost: np.ndarray, solver: str, what: str) -> np.ndarray:
        """The solver's z, or a SchedulingError naming `what` if it found none."""
        import scipy.sparse as sp

        blocks = self._lin + [(r + self.n_lin, c, v, h) for r, c, v, h in self._soc]
        g = sp.csc_matrix(
            (
                np.concatenate([b[2] for b in blocks]),
                (np.concatenate([b[0] for b in blocks]), np.concatenate([b[1] for b in blocks])),
            ),
            shape=(self.n_lin + self.n_soc_rows, self.n_vars),
        )
        h = np.concatenate([b[3] for b in blocks])
        n_cones = self.n_soc_rows // 3
        if solver == "ECOS":
            return _ecos(cost, g, h, self.n_lin, n_cones, what)
        return _clarabel(cost, g, h, self.n_lin, n_cones, what)


def _clarabel(cost, g, h, n_lin, n_cones, what) -> np.ndarray:
    import clarabel
    import scipy.sparse as sp

    settings = clarabel.DefaultSettings()
    settings.verbose = False
    cones = [clarabel.NonnegativeConeT(n_lin)] + [clarabel.SecondOrderConeT(3)] * n_cones
    p = sp.csc_matrix((len(cost), len(cost)))
    solution = clarabel.DefaultSolver(p, cost, g, h, cones, settings).solve()
    status = str(solution.status).rsplit(".", 1)[-1]
    if status in ("PrimalInfeasible", "AlmostPrimalInfeasible"):
        raise Infeasible(f"gavel {what} (CLARABEL): {status}")
    if status not in ("Solved", "AlmostSolved"):
        raise SchedulingError(f"gavel {what} (CLARABEL): {status}")
    return np.asarray(solution.x, dtype=float)


def _ecos(cost, g, h, n_lin, n_cones, what) -> np.ndarray:
    try:
        import ecos
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            "solver='ECOS' needs the ecos package: pip install 'dlsched[gavel]' "
            "(or use solver='CLARABEL', installed with dlsched)"
        ) from exc
    dims = {"l": n_lin, "q": [3] * n_cones, "e": 0}
    solution = ecos.solve(cost, g, h, dims, verbose=False)
    exit_flag = solution["info"]["exitFlag"]
    if exit_flag in (1, 11):  # primal infeasible, to full or reduced accuracy
        raise Infeasible(f"gavel {what} (ECOS): exit flag {exit_flag}")
    if exit_flag not in (0, 10):  # optimal, or optimal to reduced accuracy
        raise SchedulingError(f"gavel {what} (ECOS): exit flag {exit_flag}")
    return np.asarray(solution["x"], dtype=float)


@dataclass(frozen=True)
class Pairs:
    """The (job, type) pairs that get a variable: those a job can use. Elsewhere x is 0:
    Gavel's own problems leave such a pair free (x ≥ 0, in the capacity row), so an interior
    point gives it some time that no job can use, e.g. ResNet-50 with batch 128 on 2–8 K80s
    in Gavel's table; dlsched does not waste that capacity (an agnostic policy's
    ``sees_all_types=True`` replays Gavel's waste, `policies.py`)."""

    n: int
    m: int
    job: np.ndarray
    type: np.ndarray

    @classmethod
    def of(cls, usable: np.ndarray) -> Pairs:
        job, type_ = np.nonzero(usable)
        return cls(usable.shape[0], usable.shape[1], job, type_)

    def matrix(self, z: np.ndarray) -> np.ndarray:
        """x (n × m) from the solver's z (the pairs' variables first), to `DIGITS` decimals."""
        x = np.zeros((self.n, self.m))
        x[self.job, self.type] = np.round(np.clip(z[: len(self.job)], 0.0, 1.0), DIGITS)
        return x


def base_constraints(
    conic: Conic, pairs: Pairs, scale_factors: np.ndarray, capacities: np.ndarray
) -> None:
    """Gavel's x ≥ 0, Σ_j s_j·x[j,k] ≤ G_k and Σ_k x[j,k] ≤ 1 over z[:len(pairs)]."""
    p = len(pairs.job)
    cols = np.arange(p)
    conic.at_most(cols, cols, -np.ones(p), np.zeros(p))
    conic.at_most(pairs.type, cols, scale_factors[pairs.job].astype(float), capacities)
    conic.at_most(pairs.job, cols, np.ones(p), np.ones(pairs.n))


def max_min(
    coef: np.ndarray, scale_factors: np.ndarray, capacities: np.ndarray, solver: str
) -> np.ndarray:
    """x maximising min_j Σ_k coef[j,k]·x[j,k] under Gavel's constraints
    (`MaxMinFairnessPolicyWithPerf`: cvxpy's `Maximize(min(...))`, i.e. max t with
    t ≤ Σ_k coef·x for every job), variables where coef > 0: `max_min_packed` without
    pairs. Every row of `coef` must have a positive entry."""
    no_pairs = np.zeros((0, 3), dtype=np.int64)
    return max_min_packed(coef, scale_factors, capacities, no_pairs, np.zeros((0, 2)), solver)[0]


def finish_time_fairness(
    tput: np.ndarray,
    scale_factors: np.ndarray,
    capacities: np.ndarray,
    elapsed_s: np.ndarray,
    remaining_steps: np.ndarray,
    isolated_s: np.ndarray,
    solver: str,
) -> np.ndarray:
    """x minimising max_j ρ_j, ρ_j = (elapsed_j + R_j / y_j) / isolated_j with
    y_j = Σ_k tput·x (`FinishTimeFairnessPolicyWithPerf`: cvxpy's `inv_pos(y_j)` becomes
    u_j with u_j·y_j ≥ 1, the cone ‖(u_j − y_j, 2)‖ ≤ u_j + y_j; `maximum` an epigraph t),
    variables where tput > 0. Every row of `tput` must have a positive entry."""
    pairs = Pairs.of(tput > 0)
    p, n = len(pairs.job), pairs.n
    u, t = p, p + n  # u_j at p + j, t last
    conic = Conic(p + n + 1)
    base_constraints(conic, pairs, scale_factors, capacities)
    jobs = np.arange(n)
    # (elapsed_j + R_j·u_j) / isolated_j ≤ t
    conic.at_most(
        np.concatenate([jobs, jobs]),
        np.concatenate([u + jobs, np.full(n, t)]),
        np.concatenate([remaining_steps / isolated_s, -np.ones(n)]),
        -elapsed_s / isolated_s,
    )
    y_cols, y_vals = np.arange(p), tput[pairs.job, pairs.type]
    # s0 = u_j + y_j, s1 = u_j − y_j, s2 = 2 (s = h − G z, so G holds minus the coefficients)
    conic.cones(
        np.concatenate([3 * jobs, 3 * pairs.job, 3 * jobs + 1, 3 * pairs.job + 1]),
        np.concatenate([u + jobs, y_cols, u + jobs, y_cols]),
        np.concatenate([-np.ones(n), -y_vals, -np.ones(n), y_vals]),
        np.tile([0.0, 0.0, 2.0], n),
    )
    cost = np.zeros(p + n + 1)
    cost[t] = 1.0
    return pairs.matrix(conic.solve(cost, solver, "finish-time-fairness"))


def feasible_by(
    tput: np.ndarray,
    scale_factors: np.ndarray,
    capacities: np.ndarray,
    remaining_steps: np.ndarray,
    deadline_s: float,
    solver: str,
) -> np.ndarray | None:
    """A point of {x : Gavel's constraints, Σ_k tput·x ≥ R_j / T} (`MinTotalDurationPolicy
    WithPerf`'s `Maximize(1)` step: an interior-point solver returns a point inside the
    set), variables where tput > 0; None if the solver proves the set empty (a numerical
    failure raises SchedulingError). Every row of `tput` must have a positive entry."""
    pairs = Pairs.of(tput > 0)
    p = len(pairs.job)
    conic = Conic(p)
    base_constraints(conic, pairs, scale_factors, capacities)
    conic.at_most(
        pairs.job, np.arange(p), -tput[pairs.job, pairs.type], -remaining_steps / deadline_s
    )
    try:
        return pairs.matrix(conic.solve(np.zeros(p), solver, "min-total-duration"))
    except Infeasible:
        return None


def max_min_packed(
    coef: np.ndarray,
    scale_factors: np.ndarray,
    capacities: np.ndarray,
    pairs: np.ndarray,
    pair_coef: np.ndarray,
    solver: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Gavel's `MaxMinFairnessPolicyWithPacking.get_allocation`, per job and per pair of
    jobs: x (n × m, each job alone) and y (one entry per row of `pairs`, the time that pair
    runs together on its type) maximising min_j of Σ_k coef[j,k]·x[j,k] + Σ over j's pairs
    of its `pair_coef` entry·y, under x, y ≥ 0, Σ s·(x + y) ≤ G_k per type (a pair uses its
    GPUs once) and each job's time alone and in pairs ≤ 1. `pairs` rows are (i, j, k),
    `pair_coef` rows (job i's coefficient, job j's). Variables where coef > 0; every row of
    `coef` must have a positive entry."""
    singles = Pairs.of(coef > 0)
    p, n, q = len(singles.job), singles.n, len(pairs)
    i, j, k = (pairs[:, c].astype(np.int64) for c in range(3))
    cols = np.arange(p + q)
    t = p + q
    conic = Conic(p + q + 1)
    conic.at_most(cols, cols, -np.ones(p + q), np.zeros(p + q))
    conic.at_most(
        np.concatenate([singles.type, k]),
        cols,
        np.concatenate([scale_factors[singles.job], scale_factors[i]]).astype(float),
        capacities,
    )
    pair_cols = np.arange(p, p + q)
    conic.at_most(
        np.concatenate([singles.job, i, j]),
        np.concatenate([np.arange(p), pair_cols, pair_cols]),
        np.ones(p + 2 * q),
        np.ones(n),
    )
    conic.at_most(
        np.concatenate([singles.job, i, j, np.arange(n)]),
        np.concatenate([np.arange(p), pair_cols, pair_cols, np.full(n, t)]),
        np.concatenate(
            [-coef[singles.job, singles.type], -pair_coef[:, 0], -pair_coef[:, 1], np.ones(n)]
        ),
        np.zeros(n),
    )
    cost = np.zeros(p + q + 1)
    cost[-1] = -1.0
    z = conic.solve(cost, solver, "max-min-packed" if q else "max-min")
    return singles.matrix(z), np.round(np.clip(z[p : p + q], 0.0, 1.0), DIGITS)
