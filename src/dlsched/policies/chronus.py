"""Chronus: lease-based deadline scheduling with an integer program (Gao et al., "Chronus: A
Novel Deadline-aware Scheduler for Deep Learning Training Jobs", SoCC '21), registered as
`chronus`.

Sources: the authors' artifact ``S-Lab-System-Group/ChronusArtifact`` (``code/alg/scheduler/
time_aware_with_lease.py``, ``solver.py``, ``run/exp_cluster/batch_run.sh``) and ElasticFlow's
copy of it (``pkusys/ElasticFlow``, ``ElasticFlow/chronus-scheduler/``, run by
``scheduler/run_fig8a.sh``). The mirror's ``paper.pdf`` has no stored content, so what is
called "the paper" here is the formulation as the artifact's README and code state it (one
integer program maximising the SLO jobs that meet their deadlines); where the code is the only
source, the docstring says "artifact".

Faithful:

- **Leases**: GPUs are granted for a lease term of `lease_s` on the grid 0, L, 2L, ...; at each
  lease end every job gives its GPUs back and the program decides who holds a lease next.
  Default 1200 s: ``batch_run.sh`` runs every trace with ``--lease_term_interval=20`` in the
  artifact's minutes (``hour_metric = 60``); ElasticFlow's ``run_fig8a.sh`` uses 240 (seconds,
  its copy's unit). A job needs ``ceil(T × c × 1.1 / L)`` leases, T its estimated remaining time
  on its GPUs, c = 1 + (1 + log2 n)·`restart_s`/L the artifact's checkpoint + resume overhead
  (``CHECKPOINT_OVER_HEAD`` 0.1 + ``RESUME_OVER_HEAD`` 0.4 minutes = 30 s; 0.5 s in
  ElasticFlow's copy, whose unit is the second) and 1.1 its safety margin. A job may use the
  leases that end by its deadline: ``floor(deadline / L) − k`` from lease k
  (``compute_maximum_lease``).
- **SLO and best-effort jobs; admission at submission** (``flush_event_jobs_with_cache_
  solution``): a job without a deadline is best-effort and accepted. An SLO job is accepted
  when its leases still pack, from the next lease on, beside the admitted jobs' lease plans;
  otherwise it is an "unaccepted SLO" job: by default (`unmet="best_effort"`, the artifact)
  it runs as best-effort and is still judged against its deadline; `unmet="decline"` refuses
  it. The artifact's deadline-relaxation search (``process_unaccepted_jobs``) never accepts with
  ``TOLERATE_RATIO = 1.0`` and is left out.
- **The integer program at every lease end** (``MIPSolver.job_selection``): binary x[i,t]
  (job i holds lease t), s[i] (job i is guaranteed), for the admitted SLO jobs: Σ_t<m_i x[i,t]
  = r_i·s[i]; Σ_i g_i·x[i,t] ≤ C per lease; maximise Σ 10·s[i] (``expect_value_list``, 10 in
  the converted traces) ± Σ_i g_i·x[i,0]/C. The second term is the artifact's
  ``mip_objective``: ``"maximize"`` runs SLO jobs as early as possible, ``"minimize"`` as late
  as their deadlines allow (leaving the current lease to the others), and ``"adaptive"`` (the
  default, as ``batch_run.sh`` and ``run_fig8a.sh``) maximises while no unaccepted SLO job
  waits and minimises while one does. The term is at most 1, so the program is lexicographic:
  most guaranteed jobs first. Jobs the program drops (s = 0) lose their guarantee and run as
  unaccepted jobs (the artifact's fast path does the same).
- **Spot GPUs** (``opportunistic_run``): GPUs no lease holds go, without preemption until the
  next lease end, to the other jobs in the artifact's ``best_func`` order: unaccepted SLO and
  best-effort jobs first, by smallest remaining GPU-time, then by earliest submission; jobs
  whose deadline can no longer be met (``LOWEST``) last; admitted SLO jobs without a lease
  after them only when `fill_accepted` (default: when the lease is at most 30 minutes, the
  artifact's ``lease_term_interval <= 30`` test; ElasticFlow's copy compares its seconds to the
  same 30 and so never does, hence ``fill_accepted=False`` for its runs).

Solver: the artifact uses Gurobi (through python-mip, 5 s limit); here the program is solved
with **HiGHS** (`scipy.optimize.milp`) under `time_limit_s` (default 5 s, the artifact's
``max_seconds``). When HiGHS stops without a proven optimum (time limit, or any other status),
the deterministic fallback is the artifact's own greedy (``batch_fast_job_selection``): jobs by
GPUs descending, then slack (m − r) ascending, then later deadline first, each given the latest
free leases before its deadline, dropped when it does not get all of them. A run that never
hits the limit is deterministic; one that does may depend on the machine's speed.

`horizon` (default 48 leases) bounds the program's size: leases from `horizon` on are one
aggregated block per job (an integer count y_i ≤ m_i − horizon) with, for each deadline m, the
demand bound Σ_{m_i ≤ m} g_i·y_i ≤ C·(m − horizon) — a relaxation there (per-lease packing
beyond the horizon is not checked), exact before it. ``horizon=None`` models every lease.

`reading`, where the two codes' behaviour and the formulation differ:

- ``"artifact"`` (default): admission is the artifact's greedy check
  (``batch_fast_check_if_packable``) of the new job's leases, latest first, in what the
  admitted jobs' current plans leave;
- ``"paper"``: admission solves the program for the admitted jobs and the new one and accepts
  when every one of them is guaranteed (the exact check the greedy approximates).

Simplified: the program sees the cluster's GPUs as one pool (the artifact's clusters have one
type), a job's time is estimated on its GPUs when it runs and on the fastest type it can run on
when it waits, and it is placed on the fastest type with room; GPU counts as requested (the artifact
rounds 3 to 4 and 5–7 to 8 in the program); jobs that keep a lease keep their GPUs (the
artifact releases and re-places everyone at each lease end); the spot fill runs at every
scheduling call (arrivals, completions) instead of every ``BEST_SLOT``; no
force-guarantee of short unaccepted jobs (``lease_term_interval <= 30`` only) and no
power-off of idle nodes (``--disable_turn_off=True`` in both scripts). Placement is dlsched's:
largest first, a job of at least a node's size on whole nodes (``consolidated``), a smaller one
on the fullest node it fits (``best_fit``); the artifact's local-search consolidation
(``placement/local_search.py``) is not modelled.

ElasticFlow's Figure 8(a) (195 jobs, 16 × 4 T4; ``run_fig8a.sh`` runs Chronus with
``--lease_term_interval=240 --mip_objective=adaptive --placement=local_search``; its plotting
script has Chronus at 0.262): here ``lease_s=240, restart_s=0.5, fill_accepted=False,
spot_s=240`` gives 0.415 (56 accepted, 139 run as unaccepted; 25 s). The artifact's own run was
not repeated (it needs Gurobi), so the gap is not yet explained.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.engine.admission import Admission
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.goodput.common import Ticker
from dlsched.policies.registry import register

LEASE_S = 1200.0  # batch_run.sh --lease_term_interval=20 (minutes)
RESTART_S = 30.0  # CHECKPOINT_OVER_HEAD 0.1 + RESUME_OVER_HEAD 0.4 (minutes)
SAFETY = 1.1  # estimate_duration = duration * coef * 1.1
VALUE = 10.0  # expect_value_list in the converted traces
TIME_LIMIT_S = 5.0  # job_selection(max_seconds=5)
HORIZON = 48
FILL_ACCEPTED_MAX_S = 30 * 60.0  # `lease_term_interval <= 30` (minutes)
READINGS = ("artifact", "paper")
OBJECTIVES = ("adaptive", "maximize", "minimize")
UNMET = ("best_effort", "decline")
_NEVER = 2**62  # the lease count of a job that can run nowhere: more than any deadline allows


@dataclass(frozen=True)
class LeaseJob:
    """One job in the program: `gpus` per lease, `need` leases, usable leases 0 … `last`-1."""

    gpus: int
    need: int
    last: int


def greedy_select(jobs: Sequence[LeaseJob], capacity: Sequence[int]) -> list[list[int] | None]:
    """The artifact's greedy selection (``batch_fast_job_selection``): per job the leases it
    gets (ascending) or None when dropped; `capacity` is the GPUs free per lease, as long as
    the latest `last` (changed by nobody: a copy is used)."""
    free = list(capacity)
    order = sorted(
        range(len(jobs)),
        key=lambda i: (-jobs[i].gpus, jobs[i].last - jobs[i].need, -jobs[i].last, i),
    )
    out: list[list[int] | None] = [None] * len(jobs)
    for i in order:
        job = fit_latest(jobs[i], free)
        out[i] = job
    return out


def fit_latest(job: LeaseJob, free: list[int]) -> list[int] | None:
    """Give `job` the latest leases before its deadline with room (takes them from `free`), or
    None (and `free` unchanged) when it does not get all it needs."""
    if job.need <= 0:
        return []
    got: list[int] = []
    for t in range(min(job.last, len(free)) - 1, -1, -1):
        if free[t] >= job.gpus:
            got.append(t)
            if len(got) == job.need:
                for u in got:
                    free[u] -= job.gpus
                return sorted(got)
    return None


def solve_program(
    jobs: Sequence[LeaseJob],
    capacity: int,
    sign: float,
    horizon: int | None,
    time_limit_s: float,
) -> tuple[list[list[int] | None], bool]:
    """Solve the lease program with HiGHS (module docstring): per job its leases (ascending;
    those past the horizon laid out from the tail's counts) or None when not guaranteed,
    and whether HiGHS proved the optimum (False: the greedy fallback's answer).
    `sign` +1 maximises, −1 minimises the GPUs SLO jobs hold in lease 0."""
    n = len(jobs)
    if n == 0:
        return [], True
    last = max(j.last for j in jobs)
    h = last if horizon is None else min(horizon, last)
    # variable layout: per job x[i, 0 … min(last_i, h)-1], then y_i (tail), then s_i
    x_index: list[range] = []
    col = 0
    for j in jobs:
        width = min(j.last, h)
        x_index.append(range(col, col + width))
        col += width
    y_col = list(range(col, col + n))
    col += n
    s_col = list(range(col, col + n))
    n_vars = col + n
    cost = np.zeros(n_vars)
    lower = np.zeros(n_vars)
    upper = np.ones(n_vars)
    for i, j in enumerate(jobs):
        cost[s_col[i]] = -VALUE
        if len(x_index[i]) > 0:
            cost[x_index[i][0]] = -sign * j.gpus / capacity
        upper[y_col[i]] = max(0, j.last - h)
    entries: list[tuple[int, int, float]] = []  # (row, column, coefficient)
    lo: list[float] = []
    hi: list[float] = []
    for i, j in enumerate(jobs):  # Σ x + y − need·s = 0
        row = len(lo)
        entries += [(row, c, 1.0) for c in x_index[i]]
        entries += [(row, y_col[i], 1.0), (row, s_col[i], -float(j.need))]
        lo.append(0.0)
        hi.append(0.0)
    for t in range(h):  # lease capacity
        row = len(lo)
        terms = [(row, x_index[i][t], float(j.gpus)) for i, j in enumerate(jobs) if t < j.last]
        if terms:
            entries += terms
            lo.append(-np.inf)
            hi.append(float(capacity))
    for m in sorted({j.last for j in jobs if j.last > h}):  # demand bound of the tail
        row = len(lo)
        entries += [(row, y_col[i], float(j.gpus)) for i, j in enumerate(jobs) if h < j.last <= m]
        lo.append(-np.inf)
        hi.append(float(capacity * (m - h)))
    rows, cols, vals = zip(*entries, strict=True)
    # scipy only on a first solve: resolving a policy must not import it (test_lazy_imports)
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    matrix = coo_matrix((vals, (rows, cols)), shape=(len(lo), n_vars)).tocsr()
    result = milp(
        cost,
        constraints=LinearConstraint(matrix, lo, hi),
        integrality=np.ones(n_vars),
        bounds=Bounds(lower, upper),
        options={"time_limit": time_limit_s, "presolve": True},
    )
    if result.status != 0 or result.x is None:
        return greedy_select(jobs, [capacity] * last), False
    x = np.round(result.x).astype(int)
    out: list[list[int] | None] = []
    tail_free = [capacity] * (last - h)
    for i in range(n):
        if x[s_col[i]] == 0:
            out.append(None)
            continue
        out.append([t for t, c in enumerate(x_index[i]) if x[c] == 1])
    # the tail's counts as leases: latest first with room, earliest deadline first (where the
    # relaxation over-commits a lease, the latest leases regardless)
    for i in sorted(range(n), key=lambda i: (jobs[i].last, i)):
        leases = out[i]
        count = int(x[y_col[i]])
        if leases is None or count == 0:
            continue
        gpus = jobs[i].gpus
        chosen: list[int] = []
        rest: list[int] = []
        for t in range(jobs[i].last - 1, h - 1, -1):
            if tail_free[t - h] >= gpus:
                chosen.append(t)
                if len(chosen) == count:
                    break
            elif len(rest) < count:
                rest.append(t)
        chosen += rest[: count - len(chosen)]
        for t in chosen:
            tail_free[t - h] -= jobs[i].gpus
        leases.extend(sorted(chosen))
    return out, True


@register("chronus")
class Chronus(BasePolicy):
    """Chronus (SoCC '21): admission at submission, leases decided by an integer program at
    every lease end, spot GPUs for the rest (module docstring)."""

    name = "chronus"

    def __init__(
        self,
        lease_s: float = LEASE_S,
        horizon: int | None = HORIZON,
        time_limit_s: float = TIME_LIMIT_S,
        objective: str = "adaptive",
        reading: str = "artifact",
        unmet: str = "best_effort",
        restart_s: float = RESTART_S,
        fill_accepted: bool | None = None,
        spot_s: float | None = None,
    ) -> None:
        super().__init__()
        for field, value in (("lease_s", lease_s), ("time_limit_s", time_limit_s)):
            if not (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and value > 0
                and math.isfinite(value)
            ):
                raise ValueError(f"chronus: {field} must be a positive number, got {value!r}")
        if not (
            isinstance(restart_s, (int, float))
            and not isinstance(restart_s, bool)
            and restart_s >= 0
            and math.isfinite(restart_s)
        ):
            raise ValueError(f"chronus: restart_s must be a number >= 0, got {restart_s!r}")
        if horizon is not None and not (
            isinstance(horizon, int) and not isinstance(horizon, bool) and horizon >= 1
        ):
            raise ValueError(
                f"chronus: horizon must be a whole number >= 1 or None, got {horizon!r}"
            )
        if objective not in OBJECTIVES:
            raise ValueError(f"chronus: objective must be one of {OBJECTIVES}, got {objective!r}")
        if reading not in READINGS:
            raise ValueError(f"chronus: reading must be one of {READINGS}, got {reading!r}")
        if unmet not in UNMET:
            raise ValueError(f"chronus: unmet must be one of {UNMET}, got {unmet!r}")
        if spot_s is not None and not (
            isinstance(spot_s, (int, float))
            and not isinstance(spot_s, bool)
            and spot_s > 0
            and math.isfinite(spot_s)
        ):
            raise ValueError(f"chronus: spot_s must be a positive number or None, got {spot_s!r}")
        if fill_accepted is not None and not isinstance(fill_accepted, bool):
            raise ValueError(
                f"chronus: fill_accepted must be True, False or None, got {fill_accepted!r}"
            )
        self.lease_s = float(lease_s)
        self.horizon = horizon
        self.time_limit_s = float(time_limit_s)
        self.objective = objective
        self.reading = reading
        self.unmet = unmet
        self.restart_s = float(restart_s)
        self.fill_accepted = fill_accepted
        self.spot_s = None if spot_s is None else float(spot_s)
        self.round_s = self.lease_s

    def __repr__(self) -> str:
        return (
            f"Chronus(lease_s={self.lease_s:g}, horizon={self.horizon!r}, "
            f"time_limit_s={self.time_limit_s:g}, objective={self.objective!r}, "
            f"reading={self.reading!r}, unmet={self.unmet!r}, restart_s={self.restart_s:g}, "
            f"fill_accepted={self.fill_accepted!r}, spot_s={self.spot_s!r})"
        )

    # -- per-run state -------------------------------------------------------------------

    def start(self, view: ClusterView) -> None:
        """Pick the planning GPU type and clear the job lists."""
        self._total = sum(view.cluster.capacity_by_type().values())
        self._per_node = view.cluster.max_gpus_per_node() or 1
        self._ticker = Ticker(self.lease_s)
        self._spot_ticker = None if self.spot_s is None else Ticker(self.spot_s)
        self._jobs: list[JobState] = []  # queued, unfinished, in arrival order
        self._known: set[JobState] = set()
        self._accepted: set[JobState] = set()  # admitted SLO jobs that hold their guarantee
        self._plans: dict[JobState, list[int]] = {}  # absolute lease indices planned
        self._lease_now: set[JobState] = set()  # jobs holding the current lease
        self._lease_index = 0  # the lease the next boundary starts
        # unaccepted SLO jobs (run as best-effort: their states have no deadline) → deadline
        self._unaccepted: dict[int, float] = {}
        self._fallbacks = 0
        self._solves = 0

    @property
    def fallbacks(self) -> int:
        """How many lease programs of the last run ended in the greedy fallback."""
        return self._fallbacks

    def _fill(self) -> bool:
        if self.fill_accepted is not None:
            return self.fill_accepted
        return self.lease_s <= FILL_ACCEPTED_MAX_S

    def lease_job(self, job: JobState, view: ClusterView, first: int) -> LeaseJob:
        """The job as the program sees it, leases counted from absolute lease `first`."""
        n = job.spec.num_gpus
        # on its GPUs when running, else on the fastest type it can run on
        remaining = view.estimator.remaining_time(job, view.now)
        coef = 1.0 + (1.0 + math.log2(max(n, 1))) * self.restart_s / self.lease_s
        if not math.isfinite(remaining):
            need = _NEVER  # it runs on no type: no lease plan can hold it
        elif remaining > 0:
            need = math.ceil(remaining * coef * SAFETY / self.lease_s - 1e-9)
        else:
            need = 0
        deadline = job.spec.deadline
        last = (
            math.floor(float(deadline) / self.lease_s + 1e-9) - first
            if deadline is not None and math.isfinite(deadline)
            else 0
        )
        return LeaseJob(gpus=n, need=need, last=max(last, 0))

    def admit(self, job: JobState, view: ClusterView) -> Admission:
        """Accept a deadline job whose leases pack beside the admitted jobs' plans. (The job
        joins the queue in `on_arrival`: a best-effort job arrives as a new state.)"""
        if job.spec.deadline is None:
            return Admission.accept("best-effort: no deadline")
        first = math.floor(view.now / self.lease_s + 1e-9) + 1  # from the next lease
        new = self.lease_job(job, view, first)
        if new.gpus > self._total or new.need > new.last:
            reason = (
                f"needs {new.need} leases of {self.lease_s:g} s on {new.gpus} GPUs, "
                f"{new.last} end by its deadline"
            )
            return self._unmet(job, reason)
        if self.reading == "artifact":
            free = [self._total] * new.last
            for other, plan in self._plans.items():
                for t in plan:
                    if first <= t < first + new.last:
                        free[t - first] -= other.spec.num_gpus
            leases = fit_latest(new, free)
            if leases is None:
                return self._unmet(
                    job,
                    f"{new.need} leases on {new.gpus} GPUs do not fit before its deadline "
                    "beside the admitted jobs' leases",
                )
            self._plans[job] = [first + t for t in leases]
        else:
            others = list(self._accepted)
            others.sort(key=lambda j: j.spec.index)
            specs = [self.lease_job(j, view, first) for j in others] + [new]
            solution, _ = solve_program(specs, self._total, 1.0, self.horizon, self.time_limit_s)
            if any(s is None for s in solution):
                return self._unmet(
                    job, "the lease program cannot guarantee it beside the admitted jobs"
                )
            for j, leases in zip([*others, job], solution, strict=True):
                self._plans[j] = [first + t for t in leases or []]
        self._accepted.add(job)
        return Admission.accept(f"{new.need} leases on {new.gpus} GPUs before its deadline")

    def _unmet(self, job: JobState, reason: str) -> Admission:
        if self.unmet == "decline":
            return Admission.decline(reason)
        self._unaccepted[job.spec.index] = float(job.spec.deadline)  # type: ignore[arg-type]
        return Admission.best_effort(reason)

    def _add(self, job: JobState) -> None:
        if job not in self._known:
            self._known.add(job)
            self._jobs.append(job)

    def on_arrival(self, job: JobState) -> None:
        self._add(job)

    def on_finish(self, job: JobState) -> None:
        if job in self._known:
            self._known.discard(job)
            self._jobs.remove(job)
        self._accepted.discard(job)
        self._plans.pop(job, None)
        self._lease_now.discard(job)
        self._unaccepted.pop(job.spec.index, None)

    # -- the lease -----------------------------------------------------------------------

    def plan_lease(self, view: ClusterView) -> set[JobState]:
        """Solve the program at a lease end: the admitted jobs that hold the lease starting
        now. Jobs the program cannot guarantee lose their guarantee."""
        k = self._lease_index
        accepted = sorted(
            (j for j in self._accepted if j in self._known), key=lambda j: j.spec.index
        )
        specs, jobs = [], []
        for job in accepted:
            spec = self.lease_job(job, view, k)
            if spec.need == 0:
                continue
            if spec.need > spec.last:
                self._drop(job)
                continue
            specs.append(spec)
            jobs.append(job)
        # the artifact counts the unaccepted SLO jobs (``number_of_accepted``)
        waiting = any(j.spec.index in self._unaccepted for j in self._jobs)
        if self.objective == "maximize" or (self.objective == "adaptive" and not waiting):
            sign = 1.0
        else:
            sign = -1.0
        solution, optimal = solve_program(specs, self._total, sign, self.horizon, self.time_limit_s)
        self._solves += 1
        if not optimal:
            self._fallbacks += 1
        holders: set[JobState] = set()
        for job, leases in zip(jobs, solution, strict=True):
            if leases is None:
                self._drop(job)
                continue
            self._plans[job] = [k + t for t in leases]
            if leases and leases[0] == 0:
                holders.add(job)
        return holders

    def _drop(self, job: JobState) -> None:
        self._accepted.discard(job)
        if job.spec.deadline is not None:
            self._unaccepted[job.spec.index] = float(job.spec.deadline)
        self._plans.pop(job, None)

    def _spot_order(self, view: ClusterView, jobs: Sequence[JobState]) -> list[JobState]:
        """The artifact's ``best_func`` order for spot GPUs (module docstring)."""
        now = view.now
        fill = self._fill()

        def key(job: JobState) -> tuple[int, float, float, int]:
            remaining = view.estimator.remaining_time(job, now)
            deadline = self._unaccepted.get(job.spec.index, job.spec.deadline)
            if job in self._accepted:
                rank = 2
            elif deadline is not None and now + remaining > deadline:
                rank = 3  # LOWEST: its deadline is out of reach
            else:
                rank = 1
            return (rank, remaining * job.spec.num_gpus, job.spec.submit_time, job.spec.index)

        pool = [j for j in jobs if fill or j not in self._accepted]
        return sorted(pool, key=key)

    def schedule(self, view: ClusterView):
        alloc = view.allocation()
        changed = False
        lease_end = self._ticker.due(view)
        spot = self._spot_ticker
        fill = spot is None or spot.due(view) or lease_end
        if spot is not None and fill:
            spot.next(view)
        if lease_end:
            self._lease_index = round(view.now / self.lease_s)
            holders = self.plan_lease(view)
            self._lease_index += 1
            self._lease_now = holders
            for job in list(view.running.values()):
                if job not in holders:
                    del alloc[job]
                    changed = True
            for job in sorted(holders, key=lambda j: (-j.spec.num_gpus, j.spec.index)):
                if job not in alloc:
                    gpus = self._place(view, job)
                    if gpus is not None:
                        alloc[job] = gpus
                        changed = True
            self._ticker.next(view)
        free = view.free_gpus() if fill else 0
        if free > 0:
            waiting = [j for j in self._jobs if j not in alloc and j.spec.num_gpus <= free]
            for job in self._spot_order(view, waiting):
                if job.spec.num_gpus > free:
                    continue
                gpus = self._place(view, job)
                if gpus is not None:
                    alloc[job] = gpus
                    free -= len(gpus)
                    changed = True
        return alloc if changed else None

    def _place(self, view: ClusterView, job: JobState) -> tuple[int, ...] | None:
        n = job.spec.num_gpus
        strategy = "consolidated" if n >= self._per_node else "best_fit"
        return view.place(job, strategy=strategy)  # the fastest type with room first
