"""Gavel's space-sharing (`_packed`) policies (Narayanan et al., OSDI 2020, §3.2, §4.1).

With space sharing, two jobs with the same GPU count may share GPUs (`alloc.pack`), each at
the rate the throughput model measured for that pair (Gavel's table has every pair of its
models). Gavel adds a variable per job combination and GPU type; its packed LP at 256 jobs
takes ~3 s with cvxpy/ECOS (per-job variables tied by equality constraints per job type).

- `max_min_fairness_packed`: the max-min fairness problem of `lp.max_min_fairness` with
  pair variables. With ``solver="CLARABEL"`` or ``"ECOS"`` (the Gavel reproductions use
  ECOS) it is Gavel's own problem (`MaxMinFairnessPolicyWithPacking.get_allocation`),
  solved by an interior-point solver as Gavel's simulator solves it: a variable per job
  and type and per pair of jobs of the same GPU count and type — every such pair, as Gavel's
  `_populate_job_combination_metadata` adds them, including those slower than taking turns
  and those its table rates 0 (every pair of multi-GPU jobs). The interior point gives such
  pairs some time that Gavel's mechanism never uses (it skips a pair with a rate of 0), and
  that is part of the answer: on Figure 9's multi-GPU jobs at 2.6 jobs/h, leaving the
  0-rated pairs out moves average JCT from +1.0 % to +27 % of the published value
  (`gavel-fig9`). That waste is Gavel's, not a cluster's: ``pairs="rated"`` gives a
  variable only to the pairs that can run (both rates above 0), the better model where
  the table measures every pair a cluster could run. Each job's pair time is summed per
  partner class for the mechanism.
  ``solver="highs"``, the default, is dlsched's first form, a vertex of the class problem: variables
  x[c, k] per class of identical jobs (same model, GPU count, weight and throughputs) and
  y[c, d, k] (time a member of class c runs beside a member of class d), with pair time
  conserved between classes (n_c·y[c, d, k] = n_d·y[d, c, k]) and a pair using its GPUs
  once; only pairs that can beat time sharing (r_c/T_c + r_d/T_d > 1) are candidates. It
  has at most ~1,100 pair variables whatever the number of jobs and solves in milliseconds;
  Gavel's problem grows with the square of the jobs (0.4 CPU-s at 256 jobs; on the bundled
  Philly day, hundreds of jobs wait at once and a replay did not end in 300 CPU-s, at
  1.7 GB), which is why it is not the default.
- `min_total_duration_packed` (Gavel's `min_total_duration_packed`): the makespan LP of
  `lp.min_total_duration` (one LP over z = 1/T instead of Gavel's bisection on T) with pair
  variables. Its rows are per job (each job's remaining steps differ), so a job's pair time
  is a variable per partner *class* and type, y[j, d, k], with pair time conserved between
  classes; Gavel has a variable per pair of jobs. Simplified: each (class, type) may pair
  only with its `MAKESPAN_PARTNERS` = 4 best partner classes by normalised pair throughput
  (and those that chose it), to keep the LP at ~10 columns per job (Gavel's pairs of every
  job: ~n² / 2); measured on the static-multiple experiment, see `gavel-static`.
- `fifo_packed` (Gavel's `fifo_packed`): `fifo_perf`, then, in arrival order, each waiting
  job joins the admitted, not yet packed job of its GPU count with which the pair's
  normalised throughput r_a/T_a + r_b/T_b is highest on that job's type, if above
  `packing_threshold` = 1.5 (Gavel's default); the first waiting job without such a partner
  stops the pass.

The mechanism turns the class-level plan into pairs each round: a (job, type, partner
class) entry takes the unplaced member of the partner class that wants that pairing most.
A pair forms only between two whole-GPU jobs that may share those GPUs (Gavel has neither
virtual clusters nor fractional GPUs): a fractional job is never packed (its pair rates
count as 0, so no LP and no FIFO pass plans it), jobs of different pools (a VC's own nodes,
the unowned ones) are of different classes with pair rates 0, and the job that joins a
running one is left out when its VC's quota has no room for it then.
Pair throughputs as the policy sees them come from the estimator
(`estimator.colocated_throughput`): the measured pair rate for the oracle, that rate with the
estimator's error on the job's rate for a noisy one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import SupportsInt, cast

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.errors import ConfigError, SchedulingError
from dlsched.jobs import JobSpec, JobState
from dlsched.policies.gavel import interior, lp
from dlsched.policies.gavel.fifo import fifo_fastest
from dlsched.policies.gavel.mechanism import (
    Allocation,
    GavelPolicy,
    Mode,
    mechanism_options,
)
from dlsched.policies.registry import register

PairRates = Callable[[int, int, int], tuple[float, float]]


def pair_throughput(view: ClusterView, job: JobSpec, other: JobSpec, gpu_type: str) -> float:
    """Steps/s of `job` beside `other` on `gpu_type` (both on the fewest nodes that hold the
    job's GPUs), as the policy's estimator sees it: the truth for the oracle, the noisy
    estimator's error on the job's rate for a noisy one; 0 when nobody measured the pair."""
    estimator = view.estimator
    n = job.num_gpus
    return float(
        estimator.colocated_throughput(
            job,
            gpu_type,
            n,
            ((other.model, other.num_gpus),),
            n_nodes=estimator.consolidated_nodes(gpu_type, n),
        )
    )


def max_min_fairness_packed(
    problem: lp.Problem,
    keys: np.ndarray,
    pair_rates: PairRates,
    solver: str = "highs",
    pairs: str = "all",
) -> tuple[list[Mode], np.ndarray]:
    """Modes [(k, None) for each type] + [(k, partner key id)], and X (jobs × modes)
    maximising min_j of the job's normalised throughput alone and in pairs (module
    docstring). `keys[j]` is job j's class id for pairing; `pair_rates(i, j, k)` the rates
    of jobs i and j packed together on type k. `solver`: ``"highs"`` (the class problem, a
    vertex) or an interior-point solver (Gavel's per-pair problem, `_per_pair`, with
    `pairs` = ``"all"`` or ``"rated"``)."""
    solver = interior.check_solver(solver, "gavel max_min_fairness_packed")
    which = check_pairs(pairs, "gavel max_min_fairness_packed")
    n, m = problem.shape
    singles: list[Mode] = [(k, None) for k in range(m)]
    if n == 0:
        return singles, np.zeros((0, m))
    coef = lp._fairness_coef(problem)
    tput = problem.throughputs * problem.usable
    first, member_of, counts = lp._classes(
        np.column_stack([coef, problem.throughputs, problem.scale_factors, keys])
    )
    if solver != "highs" and coef.any():
        try:
            return _per_pair(problem, keys, pair_rates, solver, which, coef, first, member_of)
        except SchedulingError as exc:
            lp._fall_back(exc)
    n_classes = len(first)
    a, t_cls, scale = coef[first], tput[first], problem.scale_factors[first]
    cnt = counts.astype(float)
    candidates = []
    for c in range(n_classes):
        for d in range(c, n_classes):
            if scale[c] != scale[d] or (c == d and counts[c] < 2):
                continue
            for k in range(m):
                if not (t_cls[c, k] > 0 and t_cls[d, k] > 0):
                    continue
                rc, rd = pair_rates(int(first[c]), int(first[d]), k)
                if rc > 0 and rd > 0 and rc / t_cls[c, k] + rd / t_cls[d, k] > 1 + 1e-9:
                    candidates.append((c, d, k, rc, rd))
    n_x, n_pairs = n_classes * m, len(candidates)
    t_col = n_x + n_pairs
    rows = lp.Rows(t_col + 1)
    x_cols = np.arange(n_x)
    # Entries of three row groups, the x columns' first, then each pair's in turn:
    # time per member (Σ_k x + its pair time ≤ 1), GPUs per type, and fairness
    # (t − the member's normalised throughput ≤ 0).
    time_r, time_c, time_v = [*(x_cols // m)], [*x_cols], [1.0] * n_x
    gpu_r, gpu_c, gpu_v = [*(x_cols % m)], [*x_cols], [*(cnt * scale)[x_cols // m]]
    fair_r, fair_c, fair_v = [*(x_cols // m)], [*x_cols], [*(-a.ravel())]
    upper = np.concatenate(
        [problem.usable[first].ravel().astype(float), np.ones(n_pairs), [np.inf]]
    )
    for p, (c, d, k, rc, rd) in enumerate(candidates):
        col = n_x + p
        share_d = cnt[c] / cnt[d]  # member time of class d per unit of y (class c's)
        time_r.append(c)
        time_c.append(col)
        time_v.append(1.0)
        gpu_r.append(k)
        gpu_c.append(col)
        gpu_v.append(cnt[c] * scale[c] * (0.5 if c == d else 1.0))
        fair_r.append(c)
        fair_c.append(col)
        fair_v.append(-a[c, k] * rc / t_cls[c, k])
        if c != d:
            upper[col] = min(1.0, cnt[d] / cnt[c])
            time_r.append(d)
            time_c.append(col)
            time_v.append(share_d)
            fair_r.append(d)
            fair_c.append(col)
            fair_v.append(-a[d, k] * rd / t_cls[d, k] * share_d)
    ints = np.int64
    rows.add(
        np.array(time_r, dtype=ints),
        np.array(time_c, dtype=ints),
        np.array(time_v),
        np.ones(n_classes),
    )
    rows.add(
        np.array(gpu_r, dtype=ints),
        np.array(gpu_c, dtype=ints),
        np.array(gpu_v),
        problem.capacities,
    )
    live = np.flatnonzero(a.any(axis=1))
    fr_all, fcol_all = np.array(fair_r, dtype=ints), np.array(fair_c, dtype=ints)
    fval_all = np.array(fair_v)
    keep = np.isin(fr_all, live)
    position = np.full(n_classes, -1)
    position[live] = np.arange(len(live))
    rows.add(
        np.concatenate([position[fr_all[keep]], np.arange(len(live))]),
        np.concatenate([fcol_all[keep], np.full(len(live), t_col)]),
        np.concatenate([fval_all[keep], np.ones(len(live))]),
        np.zeros(len(live)),
    )
    if not len(live):
        upper[-1] = 0.0
    cost = np.zeros(t_col + 1)
    cost[-1] = -1.0
    solution = lp.solve_lp(cost, rows, np.zeros(t_col + 1), upper, "max-min-packed")
    x = np.clip(solution, 0.0, 1.0)
    pair_modes = sorted(
        {(k, int(keys[first[d]])) for c, d, k, _, _ in candidates}
        | {(k, int(keys[first[c]])) for c, d, k, _, _ in candidates}
    )
    modes = singles + pair_modes
    index = {mode: i for i, mode in enumerate(modes)}
    shares = np.zeros((n_classes, len(modes)))
    shares[:, :m] = x[:n_x].reshape(n_classes, m)
    for p, (c, d, k, _, _) in enumerate(candidates):
        y = x[n_x + p]
        shares[c, index[(k, int(keys[first[d]]))]] += y
        if c != d:
            shares[d, index[(k, int(keys[first[c]]))]] += y * cnt[c] / cnt[d]
    return modes, np.clip(shares[member_of], 0.0, 1.0)


PAIRS = ("all", "rated")


def check_pairs(pairs: str, owner: str) -> str:
    """`pairs` of `max_min_fairness_packed`, or a ConfigError naming `owner`."""
    if pairs not in PAIRS:
        raise ConfigError(
            f"{owner}: pairs must be 'all' (every pair of jobs of the same GPU count, as "
            f"Gavel's problem has them) or 'rated' (only pairs measured to run), got {pairs!r}"
        )
    return pairs


def _per_pair(
    problem: lp.Problem,
    keys: np.ndarray,
    pair_rates: PairRates,
    solver: str,
    which: str,
    coef: np.ndarray,
    first: np.ndarray,
    member_of: np.ndarray,
) -> tuple[list[Mode], np.ndarray]:
    """`max_min_fairness_packed` as Gavel's simulator solves it (`MaxMinFairnessPolicyWith
    Packing.get_allocation`, `interior.max_min_packed`): a variable per job and type and per
    pair of jobs of the same GPU count and type, every such pair (Gavel's
    `_populate_job_combination_metadata` adds them all, those slower than time sharing
    included: an interior point gives them some time), solved by an interior-point solver.
    With `which` = ``"rated"`` only the pairs that can run get a variable (both rates
    above 0). Each job's pair time is then summed per partner class, the mechanism's
    modes."""
    n, m = problem.shape
    tput = problem.throughputs * problem.usable
    live = np.flatnonzero((coef > 0).any(axis=1))
    position = np.full(n, -1)
    position[live] = np.arange(len(live))
    n_classes = len(first)
    members = [position[np.flatnonzero(member_of == c)] for c in range(n_classes)]
    a, t_cls, scale = coef[first], tput[first], problem.scale_factors[first]
    unit = coef / np.where(tput > 0, tput, 1.0)  # coefficient per step/s, 0 where unusable
    unit = unit.max(axis=1)[first]
    blocks, pair_modes = [], set()
    for c in range(n_classes):
        if not (a[c] > 0).any():
            continue
        for d in range(c, n_classes):
            if scale[c] != scale[d] or not (a[d] > 0).any():
                continue
            if c == d:
                left, right = np.triu_indices(len(members[c]), 1)
                left, right = members[c][left], members[c][right]
            else:
                left = np.repeat(members[c], len(members[d]))
                right = np.tile(members[d], len(members[c]))
            if not len(left):
                continue
            for k in range(m):
                rc, rd = pair_rates(int(first[c]), int(first[d]), k)
                if rc != rc or rd != rd:
                    continue  # may not share at all
                runs = rc > 0 and rd > 0 and t_cls[c, k] > 0 and t_cls[d, k] > 0
                if not runs and which == "rated":
                    continue
                # a pair that cannot run still gets its variable, as in Gavel's problem:
                # the interior point gives it time, which the mechanism never uses
                coef_c, coef_d = (unit[c] * rc, unit[d] * rd) if runs else (0.0, 0.0)
                blocks.append((left, right, k, coef_c, coef_d, c, d, runs))
                if runs:
                    pair_modes |= {(k, int(keys[first[d]])), (k, int(keys[first[c]]))}
    if blocks:
        pairs = np.concatenate(
            [np.column_stack([lf, rt, np.full(len(lf), k)]) for lf, rt, k, *_ in blocks]
        )
        pair_coef = np.concatenate(
            [np.column_stack([np.full(len(b[0]), b[3]), np.full(len(b[0]), b[4])]) for b in blocks]
        )
    else:
        pairs, pair_coef = np.zeros((0, 3), dtype=np.int64), np.zeros((0, 2))
    x, y = interior.max_min_packed(
        coef[live], problem.scale_factors[live], problem.capacities, pairs, pair_coef, solver
    )
    modes: list[Mode] = [(k, None) for k in range(m)] + sorted(pair_modes)
    index = {mode: i for i, mode in enumerate(modes)}
    shares = np.zeros((n, len(modes)))
    shares[live, :m] = x
    start = 0
    for left, right, k, _, _, c, d, runs in blocks:
        part = y[start : start + len(left)]
        start += len(left)
        if not runs:
            continue
        for side, partner in ((left, d), (right, c)):
            column = np.full(len(side), index[(k, int(keys[first[partner]]))])
            np.add.at(shares, (live[side], column), part)
    # sums over partners in another order for each member: rounded again, so that jobs the
    # problem treats alike keep the same X (`interior.DIGITS`)
    return modes, np.clip(np.round(shares, interior.DIGITS), 0.0, 1.0)


class _PackedPolicy(GavelPolicy):
    """Shared pieces: class ids of jobs and cached pair rates."""

    packs_jobs = True

    def start(self, view: ClusterView) -> None:
        """The mechanism's run state and an empty cache of pair rates (the estimator's)."""
        super().start(view)
        self._pair_cache: dict[tuple, tuple[float, float]] = {}

    def _pair_rates(self, view: ClusterView, jobs: list[JobState]) -> PairRates:
        types = view.gpu_types

        def rates(i: int, j: int, k: int) -> tuple[float, float]:
            a, b = jobs[i].spec, jobs[j].spec
            if a.fractional or b.fractional or view.pool(a, types[k]) != view.pool(b, types[k]):
                # never packed (a fraction, or GPUs the other may not use): NaN, so that
                # `_per_pair` does not give it even the unusable variable a measured 0 gets
                return (np.nan, np.nan)
            key = (a.model, b.model, a.num_gpus, k)
            found = self._pair_cache.get(key)
            if found is None or a.type_durations is not None or b.type_durations is not None:
                found = (
                    pair_throughput(view, a, b, types[k]),
                    pair_throughput(view, b, a, types[k]),
                )
                self._pair_cache[key] = found
            return found

        return rates

    def _keys(self, jobs: list[JobState]) -> np.ndarray:
        return np.array([self._class_of(job) for job in jobs], dtype=float)

    def _named(self, modes: list[Mode]) -> list[Mode]:
        names = {v: key for key, v in self._class_id.items()}
        return [
            (k, None if key is None else names[int(cast(SupportsInt, key))]) for k, key in modes
        ]


@register("max_min_fairness_packed")
@mechanism_options
class MaxMinFairnessPacked(_PackedPolicy):
    """Gavel LAS / max-min fairness with space sharing, heterogeneity-aware (OSDI 2020)."""

    name = "max_min_fairness_packed"
    heterogeneity_aware = True

    def __init__(self, solver: str = "highs", pairs: str = "all", **mechanism) -> None:
        super().__init__(**mechanism)
        self.solver = interior.check_solver(solver, self.name)
        self.pairs = check_pairs(pairs, self.name)

    def allocate(self, problem, jobs, view):
        modes, shares = max_min_fairness_packed(
            problem,
            self._keys(jobs),
            self._pair_rates(view, jobs),
            solver=self.solver,
            pairs=self.pairs,
        )
        return Allocation(self._named(modes), shares)


@register("fifo_packed")
@mechanism_options
class FifoPacked(_PackedPolicy):
    """Gavel FIFO with space sharing: waiting jobs packed beside running ones (OSDI 2020)."""

    name = "fifo_packed"
    heterogeneity_aware = True
    zero_priority_fill = False  # Gavel: FIFO jobs with priority 0 never run

    def __init__(self, packing_threshold: float = 1.5, **mechanism) -> None:
        super().__init__(**mechanism)
        if not packing_threshold >= 0:
            raise ValueError(
                f"fifo_packed: packing_threshold must be >= 0, got {packing_threshold!r}"
            )
        self.packing_threshold = float(packing_threshold)

    def allocate(self, problem, jobs, view):
        n, m = problem.shape
        x = fifo_fastest(problem)
        keys = self._keys(jobs)
        rates = self._pair_rates(view, jobs)
        tput = problem.throughputs * problem.usable
        admitted = [j for j in range(n) if x[j].any()]
        alone = set(admitted)
        pairs: list[tuple[int, int, int]] = []
        for j in range(n):
            if x[j].any():
                continue
            best, best_value = None, self.packing_threshold
            for i in admitted:
                if i not in alone or problem.scale_factors[i] != problem.scale_factors[j]:
                    continue
                k = int(np.argmax(x[i]))
                if not tput[j, k] > 0:
                    continue
                ri, rj = rates(i, j, k)
                value = ri / tput[i, k] + rj / tput[j, k] if ri > 0 and rj > 0 else 0.0
                if value > best_value:
                    best, best_value = (i, k), value
            if best is None:
                break
            i, k = best
            alone.discard(i)
            pairs.append((i, j, k))
        pair_modes = sorted(
            {(k, int(keys[b])) for a, b, k in pairs} | {(k, int(keys[a])) for a, b, k in pairs}
        )
        modes = [(k, None) for k in range(m)] + pair_modes
        index = {mode: i for i, mode in enumerate(modes)}
        shares = np.zeros((n, len(modes)))
        shares[:, :m] = x
        for i, j, k in pairs:
            shares[i, k] = 0.0
            shares[i, index[(k, int(keys[j]))]] = 1.0
            shares[j, index[(k, int(keys[i]))]] = 1.0
        return Allocation(self._named(modes), shares)


MAKESPAN_PARTNERS = 4
"""Partner classes per (class, GPU type) the packed makespan LP may pair a job with: the
best by normalised pair throughput (r_c/T_c + r_d/T_d), module docstring."""


def min_total_duration_packed(
    problem: lp.Problem,
    keys: np.ndarray,
    pair_rates: PairRates,
    remaining_steps: np.ndarray,
    partners: int = MAKESPAN_PARTNERS,
) -> tuple[list[Mode], np.ndarray]:
    """Modes [(k, None) for each type] + [(k, partner class id)] and X (jobs × modes)
    minimising the time T by which every job finishes its remaining steps, alone or packed
    (Gavel's `MinTotalDurationPolicyWithPacking`, as one LP over z = 1/T like
    `lp.min_total_duration`). Variables: x[j, k] (job j alone on type k) and y[j, d, k] (job j
    beside a member of class d on type k), with pair time conserved between classes
    (Σ_{j∈c} y[j, d, k] = Σ_{i∈d} y[i, c, k]) and a pair using its GPUs once."""
    n, m = problem.shape
    singles: list[Mode] = [(k, None) for k in range(m)]
    remaining = np.asarray(remaining_steps, dtype=float)
    if n == 0:
        return singles, np.zeros((0, m))
    tput = problem.throughputs * problem.usable
    first, member_of, counts = lp._classes(keys.reshape(-1, 1))
    n_classes = len(first)
    t_cls, scale = tput[first], problem.scale_factors[first]
    candidates: dict[tuple[int, int, int], tuple[float, float]] = {}
    for k in range(m):
        gains: dict[int, list[tuple[float, int]]] = {c: [] for c in range(n_classes)}
        rated: dict[tuple[int, int], tuple[float, float]] = {}
        for c in range(n_classes):
            for d in range(c, n_classes):
                if scale[c] != scale[d] or (c == d and counts[c] < 2):
                    continue
                if not (t_cls[c, k] > 0 and t_cls[d, k] > 0):
                    continue
                rc, rd = pair_rates(int(first[c]), int(first[d]), k)
                gain = rc / t_cls[c, k] + rd / t_cls[d, k] if rc > 0 and rd > 0 else 0.0
                if gain > 1 + 1e-9:
                    rated[(c, d)] = (rc, rd)
                    gains[c].append((gain, d))
                    if c != d:
                        gains[d].append((gain, c))
        keep = {
            (min(c, d), max(c, d))
            for c, listed in gains.items()
            for _, d in sorted(listed, reverse=True)[:partners]
        }
        for c, d in keep:
            candidates[(c, d, k)] = rated[(c, d)]
    # one y column per (job, partner class, type) the job's class may pair in
    entries: dict[int, list[tuple[int, int, float]]] = {c: [] for c in range(n_classes)}
    for (c, d, k), (rc, rd) in sorted(candidates.items()):
        entries[c].append((d, k, rc))
        if c != d:
            entries[d].append((c, k, rd))
    live = remaining > 0
    # progress coefficients scaled so that z is of order 1 (the argmax does not change)
    best = tput.max(axis=1)
    unit = float(np.median(remaining[live] / np.maximum(best[live], 1e-12))) if live.any() else 1.0
    coef_x = np.divide(
        tput * unit, remaining[:, None], out=np.zeros_like(tput), where=live[:, None]
    )
    y_job, y_partner, y_type, y_rate = [], [], [], []
    for j in range(n):
        for d, k, rate in entries[int(member_of[j])]:
            y_job.append(j)
            y_partner.append(d)
            y_type.append(k)
            y_rate.append(rate)
    yj, yd = np.array(y_job, dtype=np.int64), np.array(y_partner, dtype=np.int64)
    yk, yr = np.array(y_type, dtype=np.int64), np.array(y_rate, dtype=float)
    n_x, n_y = n * m, len(yj)
    z_col = n_x + n_y
    rows = lp.Rows(z_col + 1)
    x_cols = np.arange(n_x)
    y_cols = n_x + np.arange(n_y)
    # time per job: Σ_k x + Σ y ≤ 1
    rows.add(
        np.concatenate([x_cols // m, yj]),
        np.concatenate([x_cols, y_cols]),
        np.ones(n_x + n_y),
        np.ones(n),
    )
    # GPUs per type: a pair's GPUs counted once (half for each member's y)
    rows.add(
        np.concatenate([x_cols % m, yk]),
        np.concatenate([x_cols, y_cols]),
        np.concatenate([problem.scale_factors[x_cols // m], problem.scale_factors[yj] / 2]),
        problem.capacities,
    )
    # pair time conserved between two classes: Σ_{j∈c} y[j,d,k] − Σ_{i∈d} y[i,c,k] = 0
    pair_ids = {key: p for p, key in enumerate(sorted(k for k in candidates if k[0] != k[1]))}
    cls = member_of[yj]
    row_of, sign = [], []
    for c, d, k in zip(cls.tolist(), yd.tolist(), yk.tolist(), strict=True):
        if c == d:
            row_of.append(-1)
            sign.append(0.0)
        else:
            row_of.append(pair_ids[(min(c, d), max(c, d), k)])
            sign.append(1.0 if c < d else -1.0)
    row_arr, sign_arr = np.array(row_of, dtype=np.int64), np.array(sign)
    linked = row_arr >= 0
    if linked.any():
        for direction in (1.0, -1.0):
            rows.add(
                row_arr[linked],
                y_cols[linked],
                direction * sign_arr[linked],
                np.zeros(len(pair_ids)),
            )
    # progress: z − Σ coef·x − Σ coef·y ≤ 0 for every job with steps left
    live_jobs = np.flatnonzero(live)
    position = np.full(n, -1)
    position[live_jobs] = np.arange(len(live_jobs))
    nz_j, nz_k = np.nonzero(coef_x[live_jobs])
    y_live = live[yj]
    coef_y = yr[y_live] * unit / remaining[yj[y_live]]
    rows.add(
        np.concatenate([nz_j, position[yj[y_live]], np.arange(len(live_jobs))]),
        np.concatenate(
            [live_jobs[nz_j] * m + nz_k, y_cols[y_live], np.full(len(live_jobs), z_col)]
        ),
        np.concatenate([-coef_x[live_jobs][nz_j, nz_k], -coef_y, np.ones(len(live_jobs))]),
        np.zeros(len(live_jobs)),
    )
    upper = np.concatenate([problem.usable.ravel().astype(float), np.ones(n_y), [np.inf]])
    if not len(live_jobs):
        upper[-1] = 0.0
    cost = np.zeros(z_col + 1)
    cost[-1] = -1.0
    solution = np.clip(lp.solve_lp(cost, rows, np.zeros(z_col + 1), upper, "makespan-packed"), 0, 1)
    pair_modes = sorted({(int(k), int(keys[first[d]])) for d, k in zip(yd, yk, strict=True)})
    modes = singles + pair_modes
    index = {mode: i for i, mode in enumerate(modes)}
    shares = np.zeros((n, len(modes)))
    shares[:, :m] = solution[:n_x].reshape(n, m)
    for p in range(n_y):
        shares[yj[p], index[(int(yk[p]), int(keys[first[yd[p]]]))]] += solution[n_x + p]
    return modes, np.clip(shares, 0.0, 1.0)


@register("min_total_duration_packed")
class MinTotalDurationPacked(_PackedPolicy):
    """Gavel minimum makespan of the active jobs with space sharing (OSDI 2020, §4.2)."""

    name = "min_total_duration_packed"
    heterogeneity_aware = True

    def allocate(self, problem, jobs, view):
        estimator, now = view.estimator, view.now
        remaining = np.array(
            [
                max(estimator.remaining_steps(job, now), 0.01 * estimator.total_steps(job.spec))
                for job in jobs
            ]
        )
        modes, shares = min_total_duration_packed(
            problem, self._keys(jobs), self._pair_rates(view, jobs), remaining
        )
        return Allocation(self._named(modes), shares)
