"""Gavel's round-based mechanism (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling
Policies for Deep Learning Workloads", OSDI 2020, §5), shared by every Gavel policy.

A policy supplies an allocation (`solve`): X[j, mode], the fraction of wall time job j
should spend in each *mode* — a GPU type, or for space-sharing policies a (GPU type,
partner job class) pair. The mechanism realises X in rounds, as Gavel's simulator does
(`scheduler/scheduler.py` at the commit of `../shared/anchors/gavel`):

- Rounds of `round_s` = 360 s (`time_per_iteration`). A job chosen again on the GPUs it
  holds keeps them (lease extension); any other running job is preempted or moved.
- X is recomputed only when the job set has changed (an arrival or a completion), and at
  most once every `resolve_interval_s` = 1920 s (`minimum_time_between_allocation_resets`:
  in simulation Gavel re-solves only when it resets its time accounting), except that,
  as in Gavel (`_update_priorities` tests `_last_reset_time == 0` for "never reset"), a
  solve made at t = 0 does not start the interval: the next change re-solves at once.
  ``resolve_interval_s=0`` re-solves at the first round after every change, as Gavel's
  simulator did before its commit 6230fe8 (2020-05-13) added the minimum; its published
  Figure 9 FTF-perf curve was made that way (`dlsched.reproduce.gavel`). A job that
  arrives between solves has no X yet and does not run until the next solve: Gavel's
  greedy pass still takes it, at priority 0, counting its GPUs as used, and then skips it
  when handing GPUs out, so those GPUs idle for the round (`fill_idle=True` runs such jobs
  instead). A completed job's share goes to priority-0 entries of the other jobs.
- Priorities as Gavel computes them: priority[j, mode] = X[j, mode] / f[j, mode], with f
  the job's share of the GPU time given to that mode's type since the last solve: every
  job starts each accounting period with round_s / 2 of credit per mode, and each round
  adds the seconds it ran (wall time, whatever its gang, as Gavel counts it; for a job
  that ran alone through a whole round, the time of its int(rate · round_s) whole steps,
  as Gavel's simulator charges it). Ties break
  by deficit (time owed, carried across solves), then X, then arrival order.
- Greedy assignment as Gavel's `_schedule_jobs_on_workers`: one ordered list of (job,
  mode) entries per GPU type, sorted by priority, deficit and X; the lists are visited
  type after type — fastest type first for heterogeneity-aware policies (Gavel hard-codes
  V100, P100, K80; here the types are ranked by the mean, over every job seen so far, of
  the job's throughput there relative to its best, which gives that order on Gavel's
  table), in an order reshuffled every round for agnostic ones (Gavel's
  `_worker_type_shuffler`): with a policy `seed`, exactly Gavel's draws — its
  `random.Random(seed + 5).shuffle` of the list ``["v100", "p100", "k80"]`` (the types the
  cluster has; other types after them, by name) once per scheduling round, as
  `Scheduler(seed=seed)` makes them, plus the one Gavel makes at the round whose last job
  ends with no job left; with `seed=None` (the default) a numpy permutation from the run's
  random stream `view.rng` at every pass, so `simulate(seed=...)` changes it. An entry is
  taken if the job is not already placed, can run on that type and its gang fits in the
  GPUs left; entries with priority 0 are taken too (Gavel's lists hold every active job), so idle
  GPUs go to any job with an X (on another type), except under FIFO (Gavel's rule) and the cost
  policies (a deviation: filling GPUs a job's X does not use would raise the very cost they
  minimise). Jobs are then placed largest gang first, keeping their GPUs when they stay
  on the same type, on the fewest nodes (`view.place`, consolidated, falling back to any
  free GPUs of the type: Gavel assigns workers in server order without consolidation).
- Within a round, GPUs freed by a completion stay idle and arriving jobs wait for the next
  round (Gavel's simulator starts the next round when the last job of the current one
  finishes; when nothing runs at all here, the next round is run at once, with a fresh
  solve if the job set changed, where Gavel's simulator would wait for the interval).

`gavel_clock=True` replays Gavel's simulator's clock, for replaying its runs draw for
draw (the reproductions of Gavel's figures use it, with the whole-step truth
`realisation.WholeSteps`): Gavel's round ends when its longest run of int(rate · round_s)
whole steps does, a few milliseconds short of `round_s`, so its clock falls behind the
360 s grid (5.8 s after 219 h of Figure 9 at 2.2 jobs/h). With it, a reset credits each job
X times the rounds' length on that clock, a job arriving in the gap between Gavel's round
boundary and this one is seen a round later (its arrival order kept), the gap closing when
the cluster empties, and deficits are compared to the microsecond (float noise of 1e-12 s
must not break Gavel's exact ties). Times are reported on Gavel's clock (`reported_times`,
which `simulate` applies to the result's start and finish times, event log and timeline):
this clock's time less the shortfall since the cluster last emptied, Gavel's clock jumping
to the next arrival when no job is left, as Gavel's simulator's does. Without it (the
default) rounds last `round_s` and times are the engine's. What it cannot replay: after the
cluster has emptied, Gavel's rounds restart at the next arrival, here they stay on the grid
of `round_s`; and a finish inside a round is placed on Gavel's clock to within the time of
one of the job's steps (the engine runs a job at its whole steps per 360 s, Gavel's at its
rate until they are done). On Figure 9's jobs at 0.4 jobs/h, where the shortfall grows
largest (376 s on average at a job's finish under `max_min_fairness_perf`, 913 s under the
agnostic policies), every job of the isolated run is within 1.4 s of Gavel's simulator
(average 25.92555 h, Gavel's 25.92554 h), and `max_min_fairness_perf` averages 18.58025 h
(Gavel's 18.58058 h); on the engine's clock these were 26.18 h and 18.68 h.

Options Gavel's simulator lacks:

- `fill_idle=True`: GPUs freed mid-round, or idle when a job arrives, go at once to
  waiting jobs in priority order, preempting no one.
- `exact=True` (the allocation realised "exactly", Gavel PR #165): X realised by time
  slicing, in slices of `slice_s` (default 60 s), re-solved at every job-set change, the
  GPUs going to the entries owed the most time (`realisation.TimeSlices`, whose module
  docstring tells how and why). The rounds above are `realisation.Rounds`; the policy holds
  one or the other as `realisation` (its ranking of entries, which entries may run, its
  tick and re-solve interval), and everything else here is shared.
- `charge_type_change=True`: a job that moves to another GPU type is preempted and
  restarted 1 µs later instead of being moved in one step, so the engine charges the
  configured restart cost (`view.overheads.restart`) rather than its migration cost
  (`view.overheads.migration`, which equals the restart cost unless a `migration_s` is
  set). Note that the engine already charges every move as a migration and every resume
  after a preemption as a restart whenever an overhead is configured
  (`simulate(restart_overhead_s=...)` or `overheads=`); Gavel's simulator charges none, so
  with the default overheads (0 s) nothing is charged either way.

Simplified: Gavel's simulator advances a job int(rate · round_s) whole steps a round, so
the fraction of a step it loses each round adds up and can cost a job one more (short)
round at its end, during which its type waits for the round to finish; here a job advances
continuously (the engine's), so a job may end a round earlier than in Gavel, which shifts
later completions and re-solves when a type is time-shared (measured: per-job finish times
differ by up to a round; average JCT within 1 % on small traces). For space sharing only
single modes fill idle GPUs at priority 0 (Gavel's lists
also hold priority-0 pairs), and each type's total starts at round_s / 2 per job, not per
job combination. Capacities are GPUs per type summed over VC pools. As in Gavel, the
credit a job gets on arrival is not added to its type's total, and no overhead is charged
unless the simulation configures one.
"""

from __future__ import annotations

import inspect
import random
import warnings

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.errors import ConfigError
from dlsched.jobs import JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.gavel.lp import Problem
from dlsched.policies.gavel.realisation import Rounds, TimeSlices

DEFAULT_ROUND_S = 360.0  # Gavel's time_per_iteration
DEFAULT_RESOLVE_INTERVAL_S = 1920.0  # Gavel's minimum_time_between_allocation_resets
DEFAULT_SLICE_S = 60.0
GAVEL_TYPE_ORDER = ("v100", "p100", "k80")  # the list Gavel's scheduler shuffles each round
_RESTART_DELAY_S = 1e-6

Mode = tuple[int, object]  # (GPU type index, partner class key or None)


class Allocation:
    """One solve's answer: the modes, and per job its X over them (row i: `jobs[i]`)."""

    def __init__(self, modes: list[Mode], shares: np.ndarray) -> None:
        self.modes = modes
        self.shares = shares


class _Table:
    """Per-job state of the mechanism in arrays, one row per job in arrival order: the jobs
    of the last solve, then those that arrived since (rows of finished jobs stay, inactive,
    until the next solve compacts the table)."""

    _COLUMNS = (
        "x",
        "time",
        "deficit",
        "tput",
        "usable",
        "gang",
        "weight",
        "active",
        "mode",
        "key",
        "fresh",
    )

    def __init__(self, n_modes: int, n_types: int, capacity: int = 16) -> None:
        self.jobs: list[JobState] = []
        self.row: dict[JobState, int] = {}
        self.n = 0
        self.x = np.zeros((capacity, n_modes))
        self.time = np.zeros((capacity, n_modes))
        self.deficit = np.zeros((capacity, n_modes))
        self.tput = np.zeros((capacity, n_types))
        self.usable = np.zeros((capacity, n_types), dtype=bool)
        self.gang = np.zeros(capacity, dtype=np.int64)
        self.weight = np.ones(capacity)
        self.active = np.zeros(capacity, dtype=bool)
        self.mode = np.full(capacity, -1, dtype=np.int64)  # mode placed in, -1: not running
        self.key = np.zeros(capacity, dtype=np.int64)  # partner class id
        self.fresh = np.zeros(capacity, dtype=bool)  # arrived after the last solve: no X yet

    def append(
        self, job: JobState, tput: np.ndarray, key: int, credit: float, fresh: bool = False
    ) -> int:
        if self.n == len(self.gang):
            for name in self._COLUMNS:
                old = getattr(self, name)
                grown = np.zeros((2 * len(old), *old.shape[1:]), dtype=old.dtype)
                if name == "mode":
                    grown[:] = -1
                grown[: len(old)] = old
                setattr(self, name, grown)
        i = self.n
        self.n += 1
        self.jobs.append(job)
        self.row[job] = i
        self.time[i] = credit
        self.tput[i] = tput
        self.usable[i] = tput > 0
        self.gang[i] = job.spec.num_gpus
        self.weight[i] = job.spec.priority
        self.active[i] = True
        self.key[i] = key
        self.fresh[i] = fresh
        return i

    def compact(self, n_modes: int) -> tuple[_Table, np.ndarray]:
        """A new table of the active rows (modes reset), and those rows' old indices."""
        rows = np.flatnonzero(self.active[: self.n])
        table = _Table(n_modes, self.tput.shape[1], max(16, 2 * len(rows)))
        n = table.n = len(rows)
        table.jobs = [self.jobs[i] for i in rows]
        table.row = {job: i for i, job in enumerate(table.jobs)}
        for name in ("tput", "usable", "gang", "weight", "active", "key"):
            getattr(table, name)[:n] = getattr(self, name)[rows]
        return table, rows


class GavelPolicy(BasePolicy):
    """Gavel's round-based mechanism around an allocation; subclasses pick the allocation.

    Parameters (the module docstring tells what each does): `round_s`, `fill_idle`,
    `resolve_interval_s`, `exact`, `slice_s`, `charge_type_change`, `gavel_clock`, and
    `seed`: None (the default) draws the agnostic policies' type-order shuffle from the
    run's stream (`view.rng`); an integer makes Gavel's own draws, as its `Scheduler(seed=seed)` and
    policies make them (`random.Random(seed + 5)` for the shuffle). `__init__` only stores
    them, with the realisation they select (`Rounds`, or `TimeSlices` when `exact`; it reads
    the class attribute `zero_priority_fill`): `start(view)` builds each run's state, so one
    instance serves many runs.
    """

    name = "gavel"
    heterogeneity_aware = True
    zero_priority_fill = True  # GPUs left over go to jobs with priority 0 (not under FIFO)
    packs_jobs = False  # whether it may run two jobs on the same GPUs (space sharing)

    def __init__(
        self,
        round_s: float = DEFAULT_ROUND_S,
        fill_idle: bool = False,
        resolve_interval_s: float = DEFAULT_RESOLVE_INTERVAL_S,
        exact: bool = False,
        slice_s: float = DEFAULT_SLICE_S,
        charge_type_change: bool = False,
        seed: int | None = None,
        gavel_clock: bool = False,
    ) -> None:
        super().__init__()
        for what, value in (("round_s", round_s), ("slice_s", slice_s)):
            if not value > 0:
                raise ValueError(f"{self.name}: {what} must be > 0 seconds, got {value!r}")
        if not resolve_interval_s >= 0:
            raise ValueError(
                f"{self.name}: resolve_interval_s must be >= 0 seconds, got {resolve_interval_s!r}"
            )
        self.exact = bool(exact)
        self.period_s = float(round_s)
        self.realisation = (
            TimeSlices(self.period_s, float(slice_s), self.zero_priority_fill)
            if self.exact
            else Rounds(
                self.period_s, float(resolve_interval_s), bool(fill_idle), self.zero_priority_fill
            )
        )
        # what the engine (round_s) and the mechanism read, as the realisation sets them
        self.round_s = self.realisation.round_s
        self.fill_idle = self.realisation.fill_idle
        self.resolve_interval_s = self.realisation.resolve_interval_s
        self.charge_type_change = bool(charge_type_change)
        self.gavel_clock = bool(gavel_clock)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
            raise ConfigError(
                f"{self.name}: seed must be an integer (a fixed draw) or None (the run's "
                f"random stream), got {seed!r}"
            )
        self.seed = seed

    def start(self, view: ClusterView) -> None:
        """Build the run's state: no jobs, no solve yet, the random stream for the run."""
        self.solves = 0  # LP solves so far (tests check re-solving only on job-set change)
        self._view = view
        self._jobs: dict[JobState, None] = {}  # active jobs in arrival order
        self._dirty = False
        self._last_solve: float | None = None
        self._accounted_at = 0.0
        self._round_jobs: list[JobState] = []  # placed at the last round tick
        self._round_began: float | None = None
        # `gavel_clock`: how much shorter Gavel's rounds were than round_s since the last
        # solve (`_short_s`) and since the cluster last emptied (`_drift_s`), and the jobs
        # that have arrived here but not yet on Gavel's clock
        self._short_s = 0.0
        self._drift_s = 0.0
        # ... and Gavel's clock against this one: from `_clock_at[i]` on, Gavel's clock
        # shows this one's time less `_clock_drift[i]` (`reported_times`)
        self._clock_at: list[float] = []
        self._clock_drift: list[float] = []
        self._warned_coarse = False
        self._held_back: list[JobState] = []
        self._rates: dict[JobState, np.ndarray] = {}
        self._speed = np.zeros(0)  # Σ over every job seen of its throughput / its best
        self._types: tuple[str, ...] = ()
        self._type_order: list[int] = []
        self._modes: list[Mode] = []
        self._mode_index: dict[Mode, int] = {}
        self._mode_type = np.zeros(0, dtype=np.int64)
        self._mode_partner = np.zeros(0, dtype=np.int64)  # partner class id, -1 = alone
        self._class_id: dict[object, int] = {}
        self._class_keys: dict[int, object] = {}
        self._table = _Table(0, 0)
        self._type_time = np.zeros(0)
        self._partner: dict[JobState, JobState] = {}  # packed pairs as placed
        self._deferred: dict[JobState, tuple[int, JobState | None]] = {}
        # The agnostic policies' type-order shuffle (see the class docstring): numpy's from
        # the run's stream, or with a seed Gavel's `_worker_type_shuffler` (`seed + 5`)
        self._rng = view.rng
        self._shuffler = None if self.seed is None else random.Random(int(self.seed) + 5)
        self._round_order: list[int] | None = None
        self._idle_shuffles = 0

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(round_s={self.period_s:g}, fill_idle={self.fill_idle}, "
            f"resolve_interval_s={self.resolve_interval_s:g}, exact={self.exact})"
        )

    # ---- hooks --------------------------------------------------------------------------
    def on_arrival(self, job: JobState) -> None:
        super().on_arrival(job)
        if self._held_back:
            self._held_back.append(job)  # behind the earlier ones, in arrival order
            return
        if self.gavel_clock and self._jobs:
            # seen at the next round at the earliest; whether that one or the one after
            # depends on where Gavel's clock will be then (`_release_held_back`)
            self._held_back.append(job)
            return
        if self.gavel_clock:
            # the cluster is empty: Gavel's clock jumps to the arrival, as this one is at it
            self._jump_clock(job.spec.submit_time, job.spec.submit_time)
        self._admit(job)

    def _admit(self, job: JobState) -> None:
        """Add an arrived job to the run's jobs (and to the table, with no X yet)."""
        self._jobs[job] = None
        self._dirty = True
        if self._modes:
            self._table.append(
                job,
                self.throughputs(self._view, job),
                self._class_of(job),
                self.period_s / 2,
                fresh=True,
            )

    def on_finish(self, job: JobState) -> None:
        self._jobs.pop(job, None)
        if not self._jobs and self._shuffler is not None:
            # Gavel's loop still schedules the round at whose end the last job left (a
            # shuffle), and then again when the next job arrives
            self._idle_shuffles += 1
        self._rates.pop(job, None)
        self._deferred.pop(job, None)
        row = self._table.row.get(job)
        if row is not None:
            self._table.active[row] = False
            self._table.mode[row] = -1
        partner = self._partner.pop(job, None)
        if partner is not None and self._partner.get(partner) is job:
            del self._partner[partner]
        self._dirty = True

    @property
    def allocation_matrix(self) -> dict[JobState, dict[str, float]]:
        """X of the last solve per job and GPU type (pair modes summed into their type)."""
        table = self._table
        out = {}
        for i, job in enumerate(table.jobs):
            if table.active[i]:
                out[job] = {
                    t: float(table.x[i, self._mode_type == k].sum())
                    for k, t in enumerate(self._types)
                }
        return out

    # ---- the allocation -----------------------------------------------------------------
    def solve(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        """X for `problem` (n jobs × m types; row i is `jobs[i]`)."""
        raise NotImplementedError

    def allocate(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> Allocation:
        """The modes and X of every job; by default one mode per GPU type, from `solve`."""
        return Allocation(
            [(k, None) for k in range(problem.shape[1])], self.solve(problem, jobs, view)
        )

    def throughputs(self, view: ClusterView, job: JobState) -> np.ndarray:
        """Steps/s of the job on each of `view.gpu_types` as the estimator sees them, 0 where
        it cannot run (the agnostic policies replace them by 1 inside `solve`).

        Gavel runs every job at its requested size, so a type counts only where the job's
        pool holds `num_gpus` GPUs: `rank_types` also admits an elastic job's type whose
        pool holds just `min_gpus` (a VC owning part of it), where its gang never fits."""
        rates = self._rates.get(job)
        if rates is None:
            capacity = view.pool_capacity()
            spec = job.spec
            usable = {
                t
                for t in view.rank_types(spec)
                if capacity.get(view.pool(spec, t), 0) >= spec.num_gpus
            }
            rates = np.array(
                [
                    view.estimator.throughput(job.spec, t) if t in usable else 0.0
                    for t in view.gpu_types
                ]
            )
            self._rates[job] = rates
            if rates.max(initial=0.0) > 0:  # every job seen counts once in the type ranking
                if len(self._speed) != len(rates):
                    self._speed = np.zeros(len(rates))
                self._speed += rates / rates.max()
        return rates

    def capacities(self, view: ClusterView) -> np.ndarray:
        capacity = dict.fromkeys(view.gpu_types, 0)
        for (gpu_type, _vc), gpus in view.pool_capacity().items():
            capacity[gpu_type] = capacity.get(gpu_type, 0) + gpus
        return np.array([capacity[t] for t in view.gpu_types], dtype=float)

    def partner_key(self, job: JobState) -> object:
        """What a space-sharing mode names of the partner: its class (model, GPUs), plus,
        where the job is not an ordinary whole-GPU job of the unowned pool, the VC whose
        nodes it must run on and its GPU share: two jobs that differ there can never share
        a GPU, so they are never of one class."""
        spec = job.spec
        # a job's pool owner is the same on every type (`ClusterView.pool`)
        owner = self._view.pool(spec, self._view.gpu_types[0])[1]
        if owner is None and not spec.fractional:
            return (spec.model, spec.num_gpus)
        return (spec.model, spec.num_gpus, owner, spec.gpu_milli)

    def _class_of(self, job: JobState) -> int:
        return self._class_id.setdefault(self.partner_key(job), len(self._class_id))

    def _resolve(self, view: ClusterView) -> None:
        now = view.now
        self._types = types = view.gpu_types
        m = len(types)
        old, old_modes = self._table, self._modes
        if old.tput.shape[1] != m:  # the first solve: nothing recorded yet
            old = _Table(0, m)
        for job in self._jobs:
            if job not in old.row:
                old.append(job, self.throughputs(view, job), self._class_of(job), 0.0)
        scratch, rows = old.compact(0)
        jobs = scratch.jobs
        n = len(jobs)
        problem = Problem.build(
            scratch.tput[:n], scratch.gang[:n], self.capacities(view), scratch.weight[:n]
        )
        allocation = (
            self.allocate(problem, jobs, view)
            if jobs
            else Allocation([(k, None) for k in range(m)], np.zeros((0, m)))
        )
        self.solves += 1
        self._type_order = self._rank_types()
        modes = allocation.modes
        index = {mode: i for i, mode in enumerate(modes)}
        credit = self.period_s / 2
        table, _ = old.compact(len(modes))
        table.x[:n] = np.clip(allocation.shares, 0.0, 1.0)
        table.time[:n] = credit
        # Gavel's reset: deficits take what each mode was owed since the last solve.
        if old_modes and n:
            since = now - self._last_solve if self._last_solve is not None else 0.0
            since -= self._short_s  # the time Gavel's clock shows (0 unless gavel_clock)
            owed = old.deficit[rows] + old.x[rows] * since - (old.time[rows] - credit)
            placed = old.mode[rows]
            if old_modes == modes:
                table.deficit[:n] = owed
                table.mode[:n] = placed
            else:
                for i, mode in enumerate(old_modes):
                    j = index.get(mode)
                    if j is not None:
                        table.deficit[:n, j] = owed[:, i]
                remap = np.array(
                    [index.get(mode, index.get((mode[0], None), -1)) for mode in old_modes] + [-1],
                    dtype=np.int64,
                )
                table.mode[:n] = remap[placed]  # placed = -1 picks the trailing -1
        self._modes, self._mode_index, self._table = modes, index, table
        self._mode_type = np.array([k for k, _ in modes], dtype=np.int64)
        self._mode_partner = np.array(
            [
                -1 if key is None else self._class_id.setdefault(key, len(self._class_id))
                for _, key in modes
            ],
            dtype=np.int64,
        )
        self._type_time = np.full(m, credit * n)
        self._last_solve = now
        self._short_s = 0.0
        self._dirty = False

    def _rank_types(self) -> list[int]:
        """GPU types fastest first: by the mean, over every job seen so far, of its throughput
        there relative to its best (a cluster-wide order that settles as jobs arrive)."""
        speed = self._speed if len(self._speed) == len(self._types) else np.zeros(len(self._types))
        return sorted(range(len(self._types)), key=lambda k: (-speed[k], self._types[k]))

    # ---- accounting ---------------------------------------------------------------------
    def _account(self, now: float) -> None:
        """Credit the time since the last call to each running job's mode and its type (wall
        time per job, a pair's once, whatever the gang: Gavel's `_done_callback`)."""
        held = now - self._accounted_at
        self._accounted_at = now
        table = self._table
        if held <= 0 or not table.n:
            return
        mode = table.mode[: table.n]
        rows = np.flatnonzero(mode >= 0)
        if not len(rows):
            return
        modes = mode[rows]
        table.time[rows, modes] += held
        paired = self._mode_partner[modes] >= 0
        self._type_time += np.bincount(
            self._mode_type[modes],
            weights=np.where(paired, held / 2, held),
            minlength=len(self._type_time),
        )

    def _charge_whole_steps(self, now: float) -> None:
        """Gavel's simulator runs a job for int(rate · round_s) whole steps a round and
        charges it the time those take (`_get_num_steps`, `_get_job_steps_and_finish_times`,
        `_done_callback`), a little less than the round: take that fraction of a step off
        every job that ran alone through the whole last round, so that priorities and
        deficits break ties as Gavel's do (it decides who is preempted when a type is
        oversubscribed, as under `gavel_fifo`)."""
        jobs, self._round_jobs = self._round_jobs, []
        if self._round_began is None or abs(now - self._round_began - self.period_s) > 1e-6:
            return
        table = self._table
        rows = np.array([table.row.get(job, -1) for job in jobs], dtype=np.int64)
        rows = rows[rows >= 0]
        rows = rows[table.active[rows] & (table.mode[rows] >= 0)]
        modes = table.mode[rows]
        alone = self._mode_partner[modes] < 0
        rows, modes = rows[alone], modes[alone]
        types = self._mode_type[modes]
        rate = table.tput[rows, types]
        # only where a round holds a whole step (every job of Gavel's table): with coarser
        # units (another throughput model) whole steps would mean nothing
        ok = rate * self.period_s >= 1.0
        rows, modes, types, rate = rows[ok], modes[ok], types[ok], rate[ok]
        steps = rate * self.period_s
        lost = (steps - np.floor(steps)) / rate
        table.time[rows, modes] -= lost
        if len(lost) and self.gavel_clock:
            # Gavel's round ends when its longest run of whole steps does: its clock falls
            # behind, and its reset credits each job X times the rounds' total length
            short = float(lost.min())
            self._short_s += short
            self._set_drift(now, self._drift_s + short)
            if short > 0.01 * self.period_s and not self._warned_coarse:
                # dlsched's rounds stay period_s long: with steps this coarse the drift
                # grows fast and arrivals wait far longer than Gavel's shorter rounds would
                self._warned_coarse = True
                warnings.warn(
                    f"{self.name}: gavel_clock=True with steps of more than 1 % of a round "
                    f"(every running job loses >= {short:.3g} s of a {self.period_s:g} s "
                    "round): Gavel's rounds would be that much shorter, dlsched's are not, "
                    "so arrivals are held back longer than in Gavel's simulator; the option "
                    "replays Gavel only for jobs of many steps per round (Gavel's table)",
                    RuntimeWarning,
                    stacklevel=2,
                )
        self._type_time -= np.bincount(types, weights=lost, minlength=len(self._type_time))

    def _can_resolve(self, now: float) -> bool:
        # `_last_solve == 0`: Gavel's `_update_priorities` reads `_last_reset_time == 0` as
        # "never reset", so while its last solve was at t = 0 it re-solves at the next change
        return self._dirty and (
            self._last_solve is None
            or self._last_solve == 0.0
            or now - self._last_solve >= self.resolve_interval_s
        )

    # ---- the mechanism ------------------------------------------------------------------
    def schedule(self, view: ClusterView):
        self._view = view
        self._agree_with(view)
        self._account(view.now)
        if view.is_round and self.realisation.whole_steps:
            self._charge_whole_steps(view.now)
        if self._held_back and (view.is_round or not view.running):
            self._release_held_back(view.now, everyone=not view.running)
        if self._deferred and not view.is_round:
            return self._restart_deferred(view)
        nothing_runs = not view.running and view.min_pending_demand() > 0
        if view.is_round or nothing_runs:
            # with nothing running, waiting for the interval would leave the cluster idle
            # for up to resolve_interval_s; Gavel's simulator waits (it forces a reset only
            # when replaying a trace file), we re-solve at once (a low-load deviation)
            if self._can_resolve(view.now) or (nothing_runs and self._dirty) or not self._modes:
                self._resolve(view)
            if self._shuffler is not None and not self.heterogeneity_aware:
                self._shuffle_types()
            alloc = self._assign(view, full=True)
            table = self._table
            self._round_jobs = [table.jobs[i] for i in np.flatnonzero(table.mode[: table.n] >= 0)]
            self._round_began = view.now
            return alloc
        if (
            self.fill_idle
            and view.min_pending_demand()
            and view.free_gpus() >= view.min_pending_demand()
        ):
            if self._can_resolve(view.now):
                self._resolve(view)
            return self._assign(view, full=False)
        return None

    def _release_held_back(self, now: float, everyone: bool) -> None:
        """`gavel_clock`: admit the held-back jobs that have arrived on Gavel's clock, or,
        with nothing running (`everyone`), all of them."""
        held, self._held_back = self._held_back, []
        if everyone and not self._jobs:
            # no job left: Gavel's clock jumps to the first arrival, if that is later
            self._jump_clock(now, held[0].spec.submit_time)
        for job in held:
            if everyone or job.spec.submit_time <= now - self._drift_s:
                self._admit(job)
            else:
                self._held_back.append(job)

    def _jump_clock(self, now: float, arrival: float) -> None:
        """`gavel_clock` with no job left: Gavel's simulator moves its clock on to the next
        arrival when it is later, so its clock shows `arrival` at `now` here at the latest."""
        if now - arrival < self._drift_s:
            self._set_drift(now, now - arrival)

    def _set_drift(self, now: float, drift: float) -> None:
        self._drift_s = drift
        self._clock_at.append(now)
        self._clock_drift.append(drift)

    def reported_times(self, times: np.ndarray, ends: bool = False) -> np.ndarray:
        """Times of this run on the clock it reports (the engine's `reported_times` hook,
        `dlsched.metrics.build_result`): with `gavel_clock`, Gavel's simulator's clock, this
        one's less the drift at each time; otherwise `times` as they are.

        A round whose end added to the drift was that much shorter on Gavel's clock: the
        drift grows through it in proportion, so that the clock keeps the order of events
        (the round's start at the drift before it, its end at the drift after). Where
        Gavel's clock jumps to an arrival the drift falls at once: `ends` (finishes,
        preemptions) at that instant come before the jump, beginnings after it."""
        if not self._clock_at:
            return times
        at, drift = np.asarray(self._clock_at), np.asarray(self._clock_drift)
        # per time: the next change (`nxt`; len(at) if none) and the drift until it (`was`)
        nxt = np.searchsorted(at, times, side="left" if ends else "right")
        last = np.maximum(nxt - 1, 0)
        was = np.where(nxt > 0, drift[last], 0.0)
        upcoming = np.minimum(nxt, len(at) - 1)
        end, will = at[upcoming], drift[upcoming]
        # a rise is a round's shortfall, spread over that round (from its start, or from
        # the change before it where that is later)
        begin = np.maximum(end - self.period_s, np.where(nxt > 0, at[last], -np.inf))
        span = end - begin
        rising = (nxt < len(at)) & (will > was) & (span > 0)
        share = np.where(rising, (times - begin) / np.where(span > 0, span, 1.0), 0.0)
        return times - (was + (will - was) * np.clip(share, 0.0, 1.0))

    def _priorities(self, rows: np.ndarray, now: float) -> np.ndarray:
        """priority[row, mode] of the given rows, as the realisation ranks entries."""
        table = self._table
        return self.realisation.priorities(
            table.x[rows],
            table.time[rows],
            self._type_time[self._mode_type][None, :],
            now - (self._last_solve or 0.0),
        )

    def _order_types(self) -> list[int]:
        if self.heterogeneity_aware:
            return list(self._type_order)
        if self._round_order is not None:  # Gavel's draw for this round (`_shuffle_types`)
            return list(self._round_order)
        return [int(k) for k in self._rng.permutation(len(self._types))]

    def _shuffle_types(self) -> None:
        """This round's type order as Gavel's `_schedule_jobs_on_workers` draws it: its
        `_worker_type_shuffler.shuffle` of ``["v100", "p100", "k80"]`` (those the cluster
        has), once per round, after the shuffles of rounds that ended with no job left."""
        names = [t.lower() for t in self._types]
        order = [names.index(t) for t in GAVEL_TYPE_ORDER if t in names]
        order += sorted((k for k in range(len(names)) if k not in order), key=names.__getitem__)
        shuffler = self._shuffler
        assert shuffler is not None
        for _ in range(self._idle_shuffles):
            shuffler.shuffle(list(order))
        self._idle_shuffles = 0
        shuffler.shuffle(order)
        self._round_order = order

    def _choose(
        self, now: float, room: np.ndarray, only_pending: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Gavel's greedy pass: rows, modes and partner rows (-1: alone), priority order."""
        table = self._table
        rows = np.flatnonzero(table.active[: table.n])
        if only_pending:
            rows = rows[table.mode[rows] < 0]
        if self.realisation.only_with_x:
            rows = rows[(table.x[rows] > 0).any(axis=1)]
        none = np.zeros(0, dtype=np.int64)
        if not len(rows):
            return none, none, none
        priority = self._priorities(rows, now)
        # Gavel takes a job that has no X yet at priority 0 — its GPUs count as used — and
        # then skips it when handing out GPUs, so they stay idle for the round.
        held = table.fresh[rows] if not self.fill_idle else np.zeros(len(rows), dtype=bool)
        x, deficit = table.x[rows], table.deficit[rows]
        if self.gavel_clock:
            # a deficit is a difference of sums of seconds: rounding noise (1e-12 s) must not
            # break a tie Gavel's own sums leave exact (two jobs owed nothing)
            deficit = np.round(deficit, 6)
        usable, gang = table.usable[rows], table.gang[rows]
        taken = np.zeros(len(rows), dtype=bool)
        chosen: list[tuple[int, int, int]] = []
        picked: list[np.ndarray] = []
        picked_modes: list[np.ndarray] = []
        packed = len(self._modes) > len(self._types)
        for k in self._order_types():
            if room[k] <= 0:
                continue
            single = self._mode_index[(k, None)]
            if not packed:
                p, d, a = priority[:, single], deficit[:, single], x[:, single]
                ranked = np.lexsort((rows, -a, -d, -p))
                ok = usable[ranked, k] & ~taken[ranked]
                ok &= self.realisation.runnable(a[ranked], p[ranked])
                ranked = ranked[ok]
                if (gang[ranked] == 1).all():  # fast path: the first `room` of them
                    pick = ranked[: room[k]]
                else:
                    pick = []
                    left = room[k]
                    for i in ranked:
                        if gang[i] <= left:
                            pick.append(i)
                            left -= gang[i]
                            if not left:
                                break
                    pick = np.asarray(pick, dtype=np.int64)
                taken[pick] = True
                room[k] -= int(gang[pick].sum())
                pick = pick[~held[pick]]
                picked.append(rows[pick])
                picked_modes.append(np.full(len(pick), single, dtype=np.int64))
                continue
            self._choose_packed(
                k, rows, priority, x, deficit, usable, gang, taken, room, chosen, held
            )
        if not packed:
            if not picked:
                return none, none, none
            out = np.concatenate(picked)
            return out, np.concatenate(picked_modes), np.full(len(out), -1, dtype=np.int64)
        if not chosen:
            return none, none, none
        array = np.array(chosen, dtype=np.int64).reshape(-1, 3)
        return array[:, 0], array[:, 1], array[:, 2]

    def _choose_packed(
        self, k, rows, priority, x, deficit, usable, gang, taken, room, chosen, held
    ) -> None:
        """The greedy pass over type k's entries when modes include job pairs."""
        table = self._table
        modes = np.flatnonzero(self._mode_type == k)
        single = self._mode_index[(k, None)]
        want = (x[:, modes] > 0) | (modes == single)[None, :]
        cand_i, cand_j = np.nonzero(want)
        cand_m = modes[cand_j]
        p, d, a = priority[cand_i, cand_m], deficit[cand_i, cand_m], x[cand_i, cand_m]
        ranked = np.lexsort((cand_m, rows[cand_i], -a, -d, -p))
        runnable = self.realisation.runnable(a, p)
        keys = table.key[rows]
        by_class: dict[tuple[int, int], list[int]] = {}
        for r in ranked:
            if room[k] <= 0:
                break
            i, mode = int(cand_i[r]), int(cand_m[r])
            if taken[i] or not usable[i, k] or gang[i] > room[k]:
                continue
            if not runnable[r]:
                continue
            partner_class = self._mode_partner[mode]
            if partner_class < 0:
                taken[i] = True
                room[k] -= gang[i]
                if not held[i]:
                    chosen.append((int(rows[i]), mode, -1))
                continue
            back = self._mode_index.get((k, self._class_key(keys[i])))
            if back is None:
                continue
            candidates = by_class.get((back, partner_class))
            if candidates is None:
                members = np.flatnonzero((keys == partner_class) & (x[:, back] > 0))
                members = members[np.argsort(-priority[members, back], kind="stable")]
                candidates = by_class[(back, partner_class)] = [int(j) for j in members]
            mate = next(
                (j for j in candidates if j != i and not taken[j] and gang[j] == gang[i]), None
            )
            if mate is None:
                continue
            taken[i] = taken[mate] = True
            room[k] -= gang[i]
            chosen.append((int(rows[i]), mode, int(rows[mate])))

    def _class_key(self, class_id: int) -> object:
        if len(self._class_keys) != len(self._class_id):
            self._class_keys = {v: key for key, v in self._class_id.items()}
        return self._class_keys[int(class_id)]

    def _room(self, view: ClusterView, free_only: bool) -> np.ndarray:
        if free_only:
            free = view.free_by_type()
            return np.array([free.get(t, 0) for t in self._types], dtype=np.int64)
        return self.capacities(view).astype(np.int64)

    def _assign(self, view: ClusterView, full: bool):
        table = self._table
        if not len(self._jobs):
            return None
        rows, modes, mates = self._choose(
            view.now, self._room(view, free_only=not full), only_pending=not full
        )
        alloc = view.allocation()
        running = np.flatnonzero(table.mode[: table.n] >= 0)  # as the engine says (_agree_with)
        if (mates >= 0).any() or self._partner or self.charge_type_change:
            self._assign_general(view, alloc, rows, modes, mates, full)
        else:
            self._assign_singles(view, alloc, rows, modes, running, full)
        if self._deferred:
            view.wake_at(view.now + _RESTART_DELAY_S)
        return alloc

    def _agree_with(self, view: ClusterView) -> None:
        """Make the table's running jobs exactly those the engine runs.

        Who runs where is the engine's (the view's); the table adds only what the engine
        cannot know, the mode each job was scheduled in this round (its partner's class
        included), which Gavel's accounting charges for the whole round even when a partner
        ends mid-round. The two disagree only when something other than this mechanism
        changed the allocation (a wrapper policy): then modes are rebuilt from the GPUs."""
        table = self._table
        if not table.n:
            return
        row = table.row
        actual = np.fromiter(
            (row.get(job, -1) for job in view.running.values()), np.int64, len(view.running)
        )
        actual = np.sort(actual[actual >= 0])
        recorded = np.flatnonzero(table.mode[: table.n] >= 0)
        if len(actual) != len(recorded) or (actual != recorded).any():
            self._rebuild_modes(view)

    def _rebuild_modes(self, view: ClusterView) -> None:
        """Each running job's mode from its GPUs' type and its partner; -1 for the others."""
        table = self._table
        table.mode[:] = -1
        for job in view.running.values():
            row = table.row.get(job)
            if row is not None:
                k = self._types.index(view.gpu_type_of(job.gpus[0]))
                partner = self._partner.get(job)
                key = None if partner is None else self.partner_key(partner)
                table.mode[row] = self._mode_index.get((k, key), self._mode_index[(k, None)])

    def _assign_singles(
        self,
        view: ClusterView,
        alloc,
        rows: np.ndarray,
        modes: np.ndarray,
        running: np.ndarray,
        full: bool,
    ) -> None:
        """Every job alone on its GPUs: keep, remove and place with array bookkeeping."""
        table = self._table
        jobs = table.jobs
        target = np.full(table.n, -1, dtype=np.int64)
        target[rows] = modes
        if full and len(running):
            wanted = target[running]
            stay = (wanted >= 0) & (
                self._mode_type[np.maximum(wanted, 0)] == self._mode_type[table.mode[running]]
            )
            for row in running[~stay].tolist():  # Python ints: cheaper in a Python loop
                job = jobs[row]
                del alloc[job]
            table.mode[running[~stay]] = -1
            table.mode[running[stay]] = wanted[stay]
        new = rows[table.mode[rows] < 0]
        if not len(new):
            return
        new = new[np.argsort(-table.gang[new], kind="stable")]  # largest gangs first
        types = self._types
        placed = []
        for row, k in zip(new.tolist(), self._mode_type[target[new]].tolist(), strict=True):
            job = jobs[row]
            if self._start_on(view, alloc, job, types[k]):
                placed.append(row)
        table.mode[placed] = target[placed]

    def _assign_general(
        self,
        view: ClusterView,
        alloc,
        rows: np.ndarray,
        modes: np.ndarray,
        mates: np.ndarray,
        full: bool,
    ) -> None:
        """The same with packed pairs or deferred type changes."""
        table = self._table
        jobs = table.jobs
        chosen = list(zip(rows.tolist(), modes.tolist(), mates.tolist(), strict=True))
        want: dict[JobState, tuple[int, JobState | None]] = {}
        for row, mode, mate in chosen:
            k = int(self._mode_type[mode])
            partner = None if mate < 0 else jobs[mate]
            want[jobs[row]] = (k, partner)
            if partner is not None:
                want[partner] = (k, jobs[row])
        moving: set[JobState] = set()
        kept: set[JobState] = set()
        if full:
            type_index = {t: k for k, t in enumerate(self._types)}
            gpu_type_of = view.cluster.gpu_type_of
            for job in list(view.running.values()):
                if self._keeps(view, job, want):
                    kept.add(job)
                    continue
                target = want.get(job)
                del alloc[job]
                table.mode[table.row[job]] = -1
                if (
                    self.charge_type_change
                    and target is not None
                    and target[0] != type_index[gpu_type_of[job.gpus[0]]]
                ):
                    moving.add(job)
                    if target[1] is not None:
                        moving.add(target[1])
            for job in list(self._partner):  # forget pairings broken above
                if job not in kept or self._partner[job] not in kept:
                    del self._partner[job]
        else:
            kept = set(view.running.values())
        to_place = []
        for row, mode, mate in chosen:
            job = jobs[row]
            if job in kept and (
                mate < 0 or (jobs[mate] in kept and self._partner.get(job) is jobs[mate])
            ):
                table.mode[row] = mode  # lease extension
                if mate >= 0:
                    table.mode[mate] = self._mode_index.get(
                        (int(self._mode_type[mode]), self.partner_key(job)), mode
                    )
                continue
            to_place.append((row, mode, mate))
        to_place.sort(key=lambda c: -table.gang[c[0]])  # stable: priority order within a size
        for row, mode, mate in to_place:  # largest gangs first
            job, k = jobs[row], int(self._mode_type[mode])
            partner = None if mate < 0 else jobs[mate]
            if job in moving or partner in moving:
                self._deferred[job] = (k, partner)
                continue
            self._place(view, alloc, job, k, partner)

    def _keeps(
        self, view: ClusterView, job: JobState, want: dict[JobState, tuple[int, JobState | None]]
    ) -> bool:
        """Whether a running job keeps its GPUs this round (lease extension)."""
        target = want.get(job)
        if target is None or self._types[target[0]] != view.gpu_type_of(job.gpus[0]):
            return False
        mate = self._partner.get(job)
        if mate is None or target[1] is mate:
            return True
        # packed with a job it no longer pairs with: the lower-indexed one keeps the GPUs
        mate_target = want.get(mate)
        mate_stays = (
            mate_target is not None and mate_target[1] is None and mate_target[0] == target[0]
        )
        return target[1] is None and (not mate_stays or job.spec.index < mate.spec.index)

    def _place(
        self, view: ClusterView, alloc, job: JobState, k: int, partner: JobState | None
    ) -> None:
        gpu_type = self._types[k]
        if partner is None:
            if job in alloc or self._start_on(view, alloc, job, gpu_type):
                self._set_mode(job, k, None)
            return
        if self._partner.get(job) is partner and job in alloc and partner in alloc:
            self._set_mode(job, k, partner)  # lease extension of the pair
            self._set_mode(partner, k, job)
            return
        # anchor: a member already running alone on this type; the other joins it
        anchor = next(
            (
                j
                for j in (job, partner)
                if j in alloc
                and j not in self._partner
                and view.gpu_type_of(alloc[j][0]) == gpu_type
            ),
            None,
        )
        if anchor is None:
            anchor = job if job not in alloc else partner
            if anchor in alloc or not self._start_on(view, alloc, anchor, gpu_type):
                return
        other = partner if anchor is job else job
        if other in self._partner or not self._may_join(view, alloc, anchor, other):
            self._set_mode(anchor, k, None)
            return  # still packed with someone else on its GPUs, or barred from the anchor's
        alloc.pack(other, alloc[anchor])
        self._partner[other], self._partner[anchor] = anchor, other
        self._set_mode(anchor, k, other)
        self._set_mode(other, k, anchor)

    @staticmethod
    def _may_join(view: ClusterView, alloc, anchor: JobState, other: JobState) -> bool:
        """Whether `other` may be packed on the GPUs `anchor` holds: two whole-GPU jobs, the
        GPUs in `other`'s pool, `other`'s VC quota leaving room for them (a job that
        already holds GPUs only trades them for these) and their nodes room for its CPU and
        memory."""
        if anchor.spec.fractional or other.spec.fractional:
            return False
        gpus = alloc[anchor]
        if view.pool_of_gpu(gpus[0]) != view.pool(other.spec, view.gpu_type_of(gpus[0])):
            return False
        return (other in alloc or view.fits_quota(other.spec, len(gpus))) and view.fits_resources(
            other, gpus
        )

    def _start_on(self, view: ClusterView, alloc, job: JobState, gpu_type: str) -> bool:
        """Place a job that holds no GPUs on free GPUs of the type: fewest nodes, else any
        (Gavel assigns workers without consolidating). False when they are not free."""
        gpus = view.place(job, gpu_type=gpu_type) or view.place(
            job, gpu_type=gpu_type, strategy="best_fit"
        )
        if gpus is None:
            return False
        alloc[job] = gpus
        return True

    def _set_mode(self, job: JobState, k: int, partner: JobState | None) -> None:
        index = self._mode_index
        mode = (
            index[(k, None)]
            if partner is None
            else index.get((k, self.partner_key(partner)), index[(k, None)])
        )
        self._table.mode[self._table.row[job]] = mode

    def _restart_deferred(self, view: ClusterView):
        """The follow-up call of `charge_type_change`: start the jobs moved between types."""
        alloc = view.allocation()
        deferred, self._deferred = self._deferred, {}
        for job, (k, partner) in deferred.items():
            if job.gpus or job not in self._jobs:
                continue
            if partner is not None and partner not in self._jobs:
                partner = None
            self._place(view, alloc, job, k, partner)
        return alloc


def mechanism_options(cls: type[GavelPolicy]) -> type[GavelPolicy]:
    """Class decorator for a Gavel policy whose `__init__(self, <own>, **mechanism)` passes
    `**mechanism` on to `GavelPolicy`: its signature then lists the mechanism's options too,
    so the registry, `dlsched policies` and experiment files check and show them all."""
    own = [
        p
        for p in inspect.signature(cls.__init__).parameters.values()
        if p.kind is not p.VAR_KEYWORD
    ]
    shared = list(inspect.signature(GavelPolicy.__init__).parameters.values())[1:]
    cls.__init__.__signature__ = inspect.Signature(own + shared)  # type: ignore[attr-defined]
    return cls
