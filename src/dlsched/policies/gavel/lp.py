"""Gavel's allocation LPs over X[j, k], the fraction of wall time job j runs on GPU type k.

Every problem shares Gavel's constraints (Narayanan et al., OSDI 2020, §3.1):

    0 ≤ X[j, k] ≤ 1;   Σ_k X[j, k] ≤ 1 (one type at a time);   Σ_j s_j·X[j, k] ≤ G_k

with s_j the GPUs job j asks for and G_k the GPUs of type k. A pair (j, k) the job cannot
use (throughput 0, or s_j > G_k) is fixed at 0. Solved with HiGHS on sparse constraint
matrices built in one vectorised step (no cvxpy): through scipy's own HiGHS bindings when
this scipy has them (`scipy.optimize._highspy`, ~0.3 ms per small solve), else through
`scipy.optimize.linprog` (~5 ms of Python around the same solver).

Objectives (`_perf` policies pass measured throughputs, agnostic ones 1 on usable types):

- `max_min_fairness`: max min_j Σ_k T·X·s_j / (w_j·T_equal[j]) (LAS, §4.1), one LP;
- `finish_time_fairness`: min max_j ρ_j (Themis' ρ, §4.1), a generalised fractional
  program solved by Dinkelbach's normalised iteration, a handful of LPs; ρ's denominator
  as Gavel's code has it (isolated share of `isolated_shares`, and the time the work done
  so far would have taken under it) when the caller passes those, else from the equal
  share and the elapsed time;
- `min_total_duration`: min T such that every job finishes its remaining steps within T
  (makespan, §4.2). Gavel bisects on T with feasibility LPs; as "every job finishes by T"
  is Σ_k T·X ≥ R_j / T, the LP over z = 1/T (max z with Σ_k T·X ≥ R_j·z) is exact, one LP;
- `max_sum_throughput`: max Σ_j Σ_k X·T / max_k T (§4.2);
- `min_cost`: max Σ_j Σ_k X·(T / max_k T) / cost_k, optionally with SLO rows
  Σ_k T·X ≥ R_j / (deadline_j − now) (§4.2);
- `max_min_fairness_packed` (`packing.py`): max-min with job-pair variables (§3.2).

The max-min, max-sum-throughput and cost (without SLOs) LPs solve one row per class of
identical jobs (`_classes`): symmetric convex problems have a symmetric optimum, so with
Gavel's 26 models their size stops growing with the number of jobs. Finish-time fairness,
makespan and SLOs depend on each job's progress, so those LPs have a row per job.

Equal share (our restatement of Gavel's "isolated" baseline): every type's GPUs split
evenly over all requested GPUs, e_k = G_k / max(S, Σ_k G_k) with S = Σ_j s_j — feasible by
construction (Σ_k e_k ≤ 1 and S·e_k ≤ G_k) — and T_equal[j] = Σ_k T[j, k]·e_k. For
single-GPU jobs on a cluster with equal numbers of each type it is exactly the allocation
Gavel's interior-point solver returns for its agnostic max-min LP, which Gavel uses.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dlsched.errors import SchedulingError
from dlsched.policies.gavel import interior

if TYPE_CHECKING:
    import scipy.sparse as sp

# scipy (~0.3 CPU-s to import) loads on the first solve, not when the policy registry imports
# this module: a FIFO run never pays for it (issue 16, target 4).

_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Problem:
    """The inputs of one solve: `throughputs` (n jobs × m types, steps/s, 0 = cannot run
    there), `scale_factors` (GPUs per job), `capacities` (GPUs per type) and priority
    `weights` (per job, > 0)."""

    throughputs: np.ndarray
    scale_factors: np.ndarray
    capacities: np.ndarray
    weights: np.ndarray
    allowed: np.ndarray | None = None  # n × m: where jobs may run (default: `usable` rule)

    @classmethod
    def build(cls, throughputs, scale_factors, capacities, weights=None) -> Problem:
        """A validated problem from array-likes (weights default to 1)."""
        scale = np.asarray(scale_factors, dtype=float).reshape(-1)
        caps = np.asarray(capacities, dtype=float).reshape(-1)
        tput = np.asarray(throughputs, dtype=float).reshape(len(scale), len(caps))
        w = np.ones(len(scale)) if weights is None else np.asarray(weights, dtype=float)
        if len(w) != len(scale):
            raise ValueError(f"gavel LP: {len(w)} weights for {len(scale)} jobs")
        if (w <= 0).any() or (scale <= 0).any() or (tput < 0).any():
            raise ValueError("gavel LP: weights and scale factors must be > 0, throughputs ≥ 0")
        return cls(tput, scale, caps, w)

    @property
    def shape(self) -> tuple[int, int]:
        return self.throughputs.shape

    @property
    def usable(self) -> np.ndarray:
        """Boolean n × m: pairs that may get time (throughput > 0 and the gang fits in the
        type, unless `allowed` says otherwise)."""
        fits = (
            self.scale_factors[:, None] <= self.capacities[None, :]
            if self.allowed is None
            else self.allowed
        )
        return (self.throughputs > 0) & fits

    def equal_share_throughput(self) -> np.ndarray:
        """T_equal[j]: the job's throughput under the equal share (module docstring)."""
        return (self.throughputs * self.usable) @ self.equal_share()

    def equal_share(self) -> np.ndarray:
        """e_k: the fraction of time every job gets on type k under the equal share."""
        total = max(float(self.scale_factors.sum()), float(self.capacities.sum()), 1.0)
        return self.capacities / total

    def subset(self, rows: np.ndarray) -> Problem:
        return Problem(
            self.throughputs[rows],
            self.scale_factors[rows],
            self.capacities,
            self.weights[rows],
            None if self.allowed is None else self.allowed[rows],
        )


# ---- the solver ---------------------------------------------------------------------------


class Rows:
    """Sparse constraint rows `A x ≤ b` over `n_cols` variables, accumulated in blocks."""

    def __init__(self, n_cols: int) -> None:
        self.n_cols = n_cols
        self.n_rows = 0
        self._rows: list[np.ndarray] = []
        self._cols: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []
        self._bounds: list[np.ndarray] = []

    def add(self, rows, cols, vals, upper) -> None:
        """Rows numbered 0..len(upper)-1 within the block; entries (rows, cols, vals)."""
        upper = np.asarray(upper, dtype=float).reshape(-1)
        self._rows.append(np.asarray(rows, dtype=np.int64) + self.n_rows)
        self._cols.append(np.asarray(cols, dtype=np.int64))
        self._vals.append(np.asarray(vals, dtype=float))
        self._bounds.append(upper)
        self.n_rows += len(upper)

    def copy(self) -> Rows:
        """Another Rows with the same blocks (new blocks added to either stay apart)."""
        other = Rows(self.n_cols)
        other.n_rows = self.n_rows
        other._rows, other._cols = list(self._rows), list(self._cols)
        other._vals, other._bounds = list(self._vals), list(self._bounds)
        return other

    def matrix(self) -> tuple[sp.csc_matrix, np.ndarray]:
        import scipy.sparse as sp

        if not self._rows:
            return sp.csc_matrix((0, self.n_cols)), np.zeros(0)
        a = sp.csc_matrix(
            (np.concatenate(self._vals), (np.concatenate(self._rows), np.concatenate(self._cols))),
            shape=(self.n_rows, self.n_cols),
        )
        return a, np.concatenate(self._bounds)


_backend: dict[str, object] = {}  # HiGHS bindings, looked up once per process


def _direct_highs():
    """scipy's own HiGHS bindings, or None when this scipy does not ship them."""
    if "core" not in _backend:
        try:
            from scipy.optimize._highspy import _core  # private: guarded, with a fallback

            _core._Highs, _core.HighsLp, _core.MatrixFormat.kColwise  # noqa: B018
            _backend["core"] = _core
        except (ImportError, AttributeError):
            _backend["core"] = None
    return _backend["core"]


def solve_lp(
    cost: np.ndarray,
    rows: Rows,
    lower: np.ndarray,
    upper: np.ndarray,
    what: str,
    backend: str = "auto",
) -> np.ndarray:
    """x minimising cost·x subject to the rows and lower ≤ x ≤ upper (HiGHS).

    `backend`: "direct" (scipy's HiGHS bindings), "linprog" or "auto" (direct if present)."""
    a, b = rows.matrix()
    core = _direct_highs() if backend in ("auto", "direct") else None
    if backend == "direct" and core is None:
        raise RuntimeError("this scipy has no HiGHS bindings; use backend='linprog'")
    if core is not None:
        return _solve_direct(core, cost, a, b, lower, upper, what)
    from scipy.optimize import linprog

    bounds = np.column_stack([lower, upper])
    result = linprog(
        cost,
        A_ub=a if a.shape[0] else None,
        b_ub=b if a.shape[0] else None,
        bounds=bounds,
        method="highs",
    )
    if result.status != 0:
        raise SchedulingError(f"gavel {what} LP failed: {result.message}")
    return result.x


def _solve_direct(core, cost, a, b, lower, upper, what: str) -> np.ndarray:
    highs = core._Highs()
    highs.setOptionValue("output_flag", False)
    lp = core.HighsLp()
    lp.num_col_ = a.shape[1]
    lp.num_row_ = a.shape[0]
    lp.col_cost_ = np.asarray(cost, dtype=float)
    lp.col_lower_ = np.asarray(lower, dtype=float)
    lp.col_upper_ = np.asarray(upper, dtype=float)
    lp.row_lower_ = np.full(a.shape[0], -np.inf)
    lp.row_upper_ = b
    matrix = lp.a_matrix_
    matrix.format_ = core.MatrixFormat.kColwise
    matrix.num_col_, matrix.num_row_ = a.shape[1], a.shape[0]
    matrix.start_, matrix.index_, matrix.value_ = a.indptr, a.indices, a.data
    highs.passModel(lp)
    highs.run()
    status = highs.getModelStatus()
    if status != core.HighsModelStatus.kOptimal:
        raise SchedulingError(f"gavel {what} LP failed: {highs.modelStatusToString(status)}")
    return np.asarray(highs.getSolution().col_value, dtype=float)


# ---- shared pieces --------------------------------------------------------------------------


def _classes(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Jobs with identical LP rows: the first job of each class, each job's class, and the
    class sizes. The LPs are symmetric in such jobs and convex, so averaging an optimum over
    a class is still optimal: one row per class solves them, every member getting the same
    X. With Gavel's 26 models the LP size stops growing with the number of jobs."""
    _, first, inverse, counts = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    return first, inverse.ravel(), counts


def feasible_region(
    problem: Problem, extra: int = 0, multiplicity: np.ndarray | None = None
) -> tuple[Rows, np.ndarray, np.ndarray]:
    """Rows (per job Σ_k X ≤ 1, per type Σ_j s_j X ≤ G_k) and bounds for the n·m variables
    of X (row-major) followed by `extra` free-standing ones (bounds [0, ∞) for those). Row j
    stands for `multiplicity[j]` identical jobs when given."""
    n, m = problem.shape
    nm = n * m
    cols = np.arange(nm)
    job_of, type_of = cols // m, cols % m
    gpus = problem.scale_factors if multiplicity is None else (problem.scale_factors * multiplicity)
    rows = Rows(nm + extra)
    rows.add(job_of, cols, np.ones(nm), np.ones(n))
    rows.add(type_of, cols, gpus[job_of], problem.capacities)
    lower = np.zeros(nm + extra)
    upper = np.concatenate([problem.usable.ravel().astype(float), np.full(extra, np.inf)])
    return rows, lower, upper


def _as_matrix(x: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    return np.clip(x[: shape[0] * shape[1]].reshape(shape), 0.0, 1.0)


def add_at_least(rows: Rows, coef: np.ndarray, column: int, offset: int = 0) -> np.ndarray:
    """Rows `t − Σ_k coef[j,k]·X[j,k] ≤ 0` (t = variable `column`) for every job with a
    non-zero coef row; X starts at variable `offset`. Returns those jobs."""
    n, m = coef.shape
    live = np.flatnonzero((coef > 0).any(axis=1))
    nz_r, nz_c = np.nonzero(coef[live])
    k = len(live)
    rows.add(
        np.concatenate([nz_r, np.arange(k)]),
        np.concatenate([offset + live[nz_r] * m + nz_c, np.full(k, column)]),
        np.concatenate([-coef[live][nz_r, nz_c], np.ones(k)]),
        np.zeros(k),
    )
    return live


def max_min(
    problem: Problem, coef: np.ndarray, multiplicity: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    """X maximising t subject to Σ_k coef[j,k]·X[j,k] ≥ t for every job with a non-zero
    coef row, and t itself (0 when no such job)."""
    n, m = coef.shape
    rows, lower, upper = feasible_region(problem, extra=1, multiplicity=multiplicity)
    live = add_at_least(rows, coef, n * m)
    if not len(live):
        upper[-1] = 0.0
    cost = np.zeros(n * m + 1)
    cost[-1] = -1.0
    x = solve_lp(cost, rows, lower, upper, "max-min")
    return _as_matrix(x, (n, m)), float(x[-1])


def _fairness_coef(problem: Problem) -> np.ndarray:
    """coef[j,k] = T[j,k]·s_j / (w_j·T_equal[j]) (0 for jobs that can run nowhere)."""
    tput = problem.throughputs * problem.usable
    equal = problem.equal_share_throughput()
    live = equal > 0
    coef = np.zeros_like(tput)
    scale = problem.scale_factors[live] / (problem.weights[live] * equal[live])
    coef[live] = tput[live] * scale[:, None]
    return coef


def _grouped_max_min(problem: Problem, coef: np.ndarray) -> np.ndarray:
    first, member_of, counts = _classes(
        np.column_stack([coef, problem.throughputs, problem.scale_factors])
    )
    x, _ = max_min(problem.subset(first), coef[first], counts)
    return x[member_of]


# ---- objectives ---------------------------------------------------------------------------


def max_min_fairness(problem: Problem, solver: str = "highs") -> np.ndarray:
    """X maximising min_j Σ_k T[j,k]·X[j,k]·s_j / (w_j·T_equal[j]) (Gavel's LAS, §4.1).

    Jobs that can run nowhere get a zero row and are left out of the minimum. Pass
    throughputs of 1 on every usable type for the heterogeneity-agnostic baseline.
    `solver`: ``"highs"`` (one LP row per class of identical jobs, a vertex) or an
    interior-point solver (``"CLARABEL"``, ``"ECOS"``: Gavel's per-job problem, a point
    inside the optimal face, `interior.max_min`)."""
    solver = interior.check_solver(solver, "gavel max_min_fairness")
    n, m = problem.shape
    if n == 0:
        return np.zeros((0, m))
    coef = _fairness_coef(problem)
    live = np.flatnonzero((coef > 0).any(axis=1))
    if solver != "highs" and len(live):
        try:
            out = np.zeros((n, m))
            out[live] = interior.max_min(
                coef[live], problem.scale_factors[live], problem.capacities, solver
            )
            return out
        except SchedulingError as exc:
            _fall_back(exc)
    return _grouped_max_min(problem, coef)


def _fall_back(exc: SchedulingError) -> None:
    """An interior-point solve failed (numerically): say so, and let HiGHS answer."""
    warnings.warn(f"{exc}; this solve falls back to HiGHS", RuntimeWarning, stacklevel=3)


def min_total_duration(problem: Problem, remaining_steps, solver: str = "highs") -> np.ndarray:
    """X minimising the time T by which every job can finish its remaining steps (Gavel's
    makespan objective, §4.2): max z = 1/T subject to Σ_k T[j,k]·X[j,k] ≥ R_j·z.

    Gavel bisects on T (feasibility LPs between 100 s and 10⁶ s, to 5%); the substitution
    z = 1/T makes it one exact LP. Jobs with nothing left are left out. `solver`: the name
    of an interior-point solver (``"CLARABEL"``, ``"ECOS"``; `interior.SOLVERS`) runs
    Gavel's bisection instead (`min_total_duration_interior`)."""
    solver = interior.check_solver(solver, "gavel min_total_duration")
    n, m = problem.shape
    if n == 0:
        return np.zeros((0, m))
    remaining = np.asarray(remaining_steps, dtype=float)
    if solver != "highs":
        live = np.flatnonzero(problem.usable.any(axis=1) & (remaining > 0))
        out = np.zeros((n, m))
        if not len(live):
            return out
        try:
            out[live] = min_total_duration_interior(problem.subset(live), remaining[live], solver)
            return out
        except SchedulingError as exc:
            _fall_back(exc)
    tput = problem.throughputs * problem.usable
    coef = np.divide(
        tput, remaining[:, None], out=np.zeros_like(tput), where=remaining[:, None] > 0
    )
    x, _ = max_min(problem, coef)
    return x


def min_total_duration_interior(
    problem: Problem, remaining_steps: np.ndarray, solver: str
) -> np.ndarray:
    """X as Gavel's code finds it (`MinTotalDurationPolicyWithPerf`): bisection on T
    between 100 s and 10⁶ s (widening tenfold while nothing is feasible) until the bounds
    are within 5 %, each step a feasibility problem (Gavel's constraints and
    Σ_k T·X ≥ R_j / T) handed to the interior-point `solver` (`interior.feasible_by`); the
    X of the last feasible T. That T is up to 5 % above the optimum, and an interior-point
    solver returns a point inside the feasible set, so every job gets some of every type it
    can use, where the exact LP (`min_total_duration`) returns a vertex."""
    tput = problem.throughputs * problem.usable
    scale, caps = problem.scale_factors.astype(float), problem.capacities.astype(float)

    high, low, last_high = 1e6, 100.0, 1e6
    found = None
    while found is None:
        while 1.05 * low < high:
            t = (low + high) / 2.0
            x = interior.feasible_by(tput, scale, caps, remaining_steps, t, solver)
            if x is not None:
                found, high = x, t
            else:
                low = t
        high, low, last_high = last_high * 10.0, last_high, last_high * 10.0
    return found


def makespan(problem: Problem, x: np.ndarray, remaining_steps) -> float:
    """max_j R_j / Σ_k T[j,k]·X[j,k]: when the last job would finish under X (seconds)."""
    remaining = np.asarray(remaining_steps, dtype=float)
    rate = (problem.throughputs * problem.usable * x).sum(axis=1)
    live = remaining > 0
    if not live.any():
        return 0.0
    if (rate[live] <= 0).any():
        return float("inf")
    return float((remaining[live] / rate[live]).max())


def isolated_shares(scale_factors: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Gavel's isolated X (n jobs × m types): (G_k / n) / s_j, rows scaled to sum ≤ 1
    (`IsolatedPolicy._get_allocation`)."""
    scale = np.asarray(scale_factors, dtype=float).reshape(-1)
    caps = np.asarray(capacities, dtype=float).reshape(-1)
    n = len(scale)
    if n == 0:
        return np.zeros((0, len(caps)))
    x = (caps[None, :] / n) / scale[:, None]
    return x / np.maximum(x.sum(axis=1), 1.0)[:, None]


def isolated_throughput(problem: Problem) -> np.ndarray:
    """Each job's throughput under Gavel's isolated X (`isolated_shares`): the rate ρ's
    denominator assumes in Gavel's code (`IsolatedPolicy.get_throughputs`)."""
    shares = isolated_shares(problem.scale_factors, problem.capacities)
    return (problem.throughputs * problem.usable * shares).sum(axis=1)


def finish_time_fairness(
    problem: Problem,
    elapsed_s,
    remaining_steps,
    tolerance: float = 1e-7,
    max_iterations: int = 60,
    spend_leftover: bool = False,
    isolated_done_s=None,
    isolated_rate=None,
    solver: str = "highs",
) -> np.ndarray:
    """X minimising max_j ρ_j, Themis' finish-time fairness (Gavel §4.1):

        ρ_j(X) = (elapsed_j + R_j / y_j) / (done_j + R_j / T_iso[j]),  y_j = Σ_k T·X

    time in the system under X over the time under an isolated share. With
    `isolated_rate` (T_iso, per job) and `isolated_done_s` (done_j: the time the work done so
    far would have taken under it) given, this is Gavel's code (`finish_time_fairness.py`:
    Gavel's isolated share, `isolated_throughput`, and its cumulative isolated time); left
    out, T_iso is the equal share's T_equal and done_j the elapsed time (so ρ = 1 under the
    equal share, the form dlsched had first). `solver`: ``"highs"`` (Dinkelbach below) or
    an interior-point solver (``"CLARABEL"``, ``"ECOS"``: Gavel's own problem,
    `interior.finish_time_fairness`).
    ρ_j = N_j(X) / D_j(X)
    with N_j = elapsed_j·y_j + R_j and D_j = isolated_j·y_j both affine in X, so min max ρ
    is a generalised fractional program. Dinkelbach's normalised iteration (Crouzeix,
    Ferland & Schaible, JOTA 1985) solves it: from the equal share,
    λ = max_j ρ_j(X_k), then X_{k+1} minimises s subject to N_j(X) − λ·D_j(X) ≤ s·D_j(X_k);
    stop when the optimal s is ≥ −tolerance (no X beats λ). It converges superlinearly:
    3 to 8 LPs instead of the ~25 of a bisection on ρ."""
    solver = interior.check_solver(solver, "gavel finish_time_fairness")
    n, m = problem.shape
    if n == 0:
        return np.zeros((0, m))
    tput = problem.throughputs * problem.usable
    elapsed = np.asarray(elapsed_s, dtype=float)
    remaining = np.asarray(remaining_steps, dtype=float)
    equal = problem.equal_share_throughput()
    if isolated_rate is None:
        iso_rate, done = equal, elapsed
    else:
        iso_rate = np.asarray(isolated_rate, dtype=float)
        done = np.asarray(elapsed if isolated_done_s is None else isolated_done_s, dtype=float)
    live = np.flatnonzero((equal > 0) & (iso_rate > 0) & (remaining > 0))
    if not len(live):
        return np.zeros((n, m))
    if solver != "highs":
        try:
            out = np.zeros((n, m))
            out[live] = interior.finish_time_fairness(
                tput[live],
                problem.scale_factors[live],
                problem.capacities,
                elapsed[live],
                remaining[live],
                done[live] + remaining[live] / iso_rate[live],
                solver,
            )
            return out
        except SchedulingError as exc:
            _fall_back(exc)
    isolated = done[live] + remaining[live] / iso_rate[live]
    sub = problem.subset(live)
    t_live = tput[live]
    x = np.where(sub.usable, sub.equal_share()[None, :], 0.0)  # feasible, every y_j > 0

    def rho(xx: np.ndarray) -> np.ndarray:
        y = (t_live * xx).sum(axis=1)
        with np.errstate(divide="ignore"):
            return (elapsed[live] + remaining[live] / y) / isolated

    k, nm = len(live), len(live) * m
    base, lower, upper = feasible_region(sub, extra=1)
    lower[-1], upper[-1] = -np.inf, np.inf
    cost = np.zeros(nm + 1)
    cost[-1] = 1.0
    nz_r, nz_c = np.nonzero(t_live)
    lam = float(rho(x).max())
    for _ in range(max_iterations):
        d = isolated * (t_live * x).sum(axis=1)  # D_j(X_k) > 0
        slope = lam * isolated - elapsed[live]
        rows = base.copy()  # R_j − (λ·isolated_j − elapsed_j)·y_j − d_j·s ≤ 0
        rows.add(
            np.concatenate([nz_r, np.arange(k)]),
            np.concatenate([nz_r * m + nz_c, np.full(k, nm)]),
            np.concatenate([-slope[nz_r] * t_live[nz_r, nz_c], -d]),
            -remaining[live],
        )
        solution = solve_lp(cost, rows, lower, upper, "finish-time-fairness")
        candidate = _as_matrix(solution, (k, m))
        if solution[-1] >= -tolerance:
            break  # nothing beats λ
        new_lam = float(rho(candidate).max())
        if not new_lam < lam:
            break
        x, lam = candidate, new_lam
    if spend_leftover:
        x = _spend_leftover(
            sub, t_live, x, lam, elapsed[live], remaining[live], isolated, equal[live]
        )
    out = np.zeros((n, m))
    out[live] = x
    return out


def _spend_leftover(
    sub: Problem,
    tput: np.ndarray,
    x: np.ndarray,
    lam: float,
    elapsed: np.ndarray,
    remaining: np.ndarray,
    isolated: np.ndarray,
    equal: np.ndarray,
) -> np.ndarray:
    """Among the X that keep every ρ_j ≤ λ (the optimum), the one with the most total
    throughput normalised by the equal share: the min-max LP's optimum is a face, and a
    vertex of it leaves GPU time unallocated that an interior-point solver (Gavel's ECOS)
    would hand to the jobs below the maximum."""
    k, m = tput.shape
    nm = k * m
    rows, lower, upper = feasible_region(sub)
    slope = lam * (1 + 1e-9) * isolated - elapsed  # ρ_j ≤ λ ⇔ slope_j·y_j ≥ R_j
    nz_r, nz_c = np.nonzero(tput)
    rows.add(nz_r, nz_r * m + nz_c, -slope[nz_r] * tput[nz_r, nz_c], -remaining)
    cost = np.zeros(nm)
    cost[nz_r * m + nz_c] = -tput[nz_r, nz_c] / equal[nz_r]
    try:
        return _as_matrix(solve_lp(cost, rows, lower, upper, "finish-time-fairness"), (k, m))
    except SchedulingError:
        return x  # numerically infeasible at λ: keep the Dinkelbach vertex


def finish_time_ratios(problem: Problem, x: np.ndarray, elapsed_s, remaining_steps) -> np.ndarray:
    """ρ_j(X) for every job (NaN for jobs left out: nothing left or nowhere to run)."""
    elapsed = np.asarray(elapsed_s, dtype=float)
    remaining = np.asarray(remaining_steps, dtype=float)
    equal = problem.equal_share_throughput()
    y = (problem.throughputs * problem.usable * x).sum(axis=1)
    out = np.full(len(y), np.nan)
    live = (equal > 0) & (remaining > 0)
    with np.errstate(divide="ignore"):
        out[live] = (elapsed[live] + remaining[live] / y[live]) / (
            elapsed[live] + remaining[live] / equal[live]
        )
    return out


def _normalised(problem: Problem) -> np.ndarray:
    tput = problem.throughputs * problem.usable
    best = tput.max(axis=1, initial=0.0)
    return np.divide(tput, best[:, None], out=np.zeros_like(tput), where=best[:, None] > 0)


def grouped_linear(problem: Problem, value: np.ndarray, what: str) -> np.ndarray:
    """X maximising Σ value[j,k]·X[j,k], one row per class of identical jobs."""
    n, m = problem.shape
    first, member_of, counts = _classes(
        np.column_stack([value, problem.throughputs, problem.scale_factors])
    )
    rows, lower, upper = feasible_region(problem.subset(first), multiplicity=counts)
    x = solve_lp(-(value[first] * counts[:, None]).ravel(), rows, lower, upper, what)
    return _as_matrix(x, (len(first), m))[member_of]


def max_sum_throughput(problem: Problem) -> np.ndarray:
    """X maximising Σ_j Σ_k X[j,k]·T[j,k] / max_k T[j,k] (Gavel's max total throughput,
    each job's throughput normalised by its best so fast models do not dominate)."""
    n, m = problem.shape
    if n == 0:
        return np.zeros((0, m))
    return grouped_linear(problem, _normalised(problem), "max-sum-throughput")


def min_cost(problem: Problem, cost_per_hour, required_steps_per_s=None) -> np.ndarray:
    """X maximising normalised throughput per dollar, Σ_j Σ_k X·(T / max_k T) / cost_k
    (Gavel's "throughput normalised by cost", §4.2), subject to `required_steps_per_s[j]`
    ≤ Σ_k T[j,k]·X[j,k] for jobs with an SLO (NaN or 0: none).

    Gavel weighs raw steps/s, where models that take many cheap steps dominate; each job's
    throughput is normalised by its best here, as in `max_sum_throughput`. SLO rows that no
    X can meet — a rate above the job's best throughput — are dropped first; if the rest
    are still infeasible together, all SLO rows are dropped (as Gavel does)."""
    n, m = problem.shape
    if n == 0:
        return np.zeros((0, m))
    price = np.asarray(cost_per_hour, dtype=float)
    if price.shape != (m,) or not (price > 0).all():
        raise ValueError(f"min_cost: need a price > 0 for each of the {m} GPU types")
    value = _normalised(problem) / price[None, :]
    if required_steps_per_s is None:
        return grouped_linear(problem, value, "min-cost")
    required = np.nan_to_num(np.asarray(required_steps_per_s, dtype=float), nan=0.0)
    best = (problem.throughputs * problem.usable).max(axis=1, initial=0.0)
    slo = np.flatnonzero((required > 0) & (required <= best * (1 - 1e-9)))
    rows, lower, upper = feasible_region(problem)
    if len(slo):
        tput = problem.throughputs * problem.usable
        nz_r, nz_c = np.nonzero(tput[slo])
        rows.add(nz_r, slo[nz_r] * m + nz_c, -tput[slo][nz_r, nz_c], -required[slo])
    try:
        x = solve_lp(-value.ravel(), rows, lower, upper, "min-cost-slo")
    except SchedulingError:
        rows, lower, upper = feasible_region(problem)
        x = solve_lp(-value.ravel(), rows, lower, upper, "min-cost")
    return _as_matrix(x, (n, m))


def spread_evenly(problem: Problem, x: np.ndarray) -> np.ndarray:
    """The same time per job as `x`, split over the job's usable types in proportion to
    their GPU counts, when that stays within every type's capacity (else `x` unchanged).

    For an agnostic LP (throughput 1 on every usable type) any such split is as optimal as
    the LP's own; HiGHS returns a vertex (a job's time all on one type), while Gavel's
    interior-point solver (ECOS) returns the centre of the optimal face, which is this
    split. It is also what "agnostic" means: every GPU alike."""
    usable = problem.usable
    weight = usable * problem.capacities[None, :]
    total = weight.sum(axis=1, keepdims=True)
    share = np.divide(weight, total, out=np.zeros_like(weight), where=total > 0)
    spread = x.sum(axis=1, keepdims=True) * share
    if (problem.scale_factors @ spread <= problem.capacities + 1e-9).all():
        return spread
    return x


def check_feasible(problem: Problem, x: np.ndarray, tolerance: float = 1e-7) -> None:
    """Raise AssertionError if `x` breaks a constraint (used by tests and the auditor)."""
    assert x.shape == problem.throughputs.shape
    assert (x >= -tolerance).all() and (x <= 1 + tolerance).all()
    assert (x[~problem.usable] <= tolerance).all()
    assert (x.sum(axis=1) <= 1 + tolerance).all()
    assert (problem.scale_factors @ x <= problem.capacities + tolerance).all()
