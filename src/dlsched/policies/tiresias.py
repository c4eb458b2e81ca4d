"""Tiresias: discretised 2D-LAS and 2D-Gittins (Gu et al., "Tiresias: A GPU Cluster Manager
for Distributed Deep Learning", NSDI 2019).

Faithful to the paper:
- 2D attained service = GPUs × time held (§3.1); K priority queues split by thresholds on
  it; new jobs enter the highest queue; a running job is demoted the moment its service
  crosses its queue's threshold — the engine is woken at that exact time (no polling).
- Queues are served in order; within a queue jobs are served FIFO (§3.2), by start time as
  the authors' simulator reads it ("sort based on the job start time"): jobs that have run,
  by when they first started, then jobs that never ran, by arrival — so a job that fits late
  (skipped past a bigger one) is not preempted by that bigger job of its own queue. For
  `tiresias-gittins` the order within a queue is the Gittins index of the job's service
  (§3.2, Δ from the paper; the formula of `GittinsIndex`, on the service still to come — the
  authors' table sums whole sizes instead, see `AuthorsGittinsTable`), ties FIFO as above.
  Jobs are admitted greedily while GPUs last (a job that does not fit is skipped, not waited
  for); running jobs left outside the admitted set are preempted and pay the configured
  restart overhead when they resume.
- Starvation knob (§3.2 "STARVELIMIT"): a job in a lower queue that has waited at least
  `starvation_knob` × its last run time is promoted to the highest queue, its service count
  restarted (off by default, as in the authors' `dlas-gpu`). Promotions are timed too.
- Consolidation-aware placement (§4): a job of a placement-sensitive model is placed only
  consolidated, on the fewest nodes its size allows, and waits until that is possible (the
  `yarn` placement, YARN-CS's rule); other jobs are placed best-fit and may spread rather
  than wait — the queueing delay strict consolidation costs YARN-CS is what Tiresias avoids
  for them. A model is placement-sensitive when its name is one of the paper's large-tensor
  (skewed) models (VGG, AlexNet), or when the estimator says spreading it over two nodes
  costs at least `sensitive_slowdown` (10 %) of its throughput (Gavel's `_unconsolidated`
  measurements, the scaling model's inter-node factor): the profile-based skew test of §4,
  with the profile at hand. The engine charges spread jobs whatever the throughput model
  says. `placement=` one strategy name (`"consolidated"`, `"best_fit"`, `"spread"`,
  `"yarn"`) applies that strategy to every job instead.

Defaults, from the authors' simulator (SymbioticLab/Tiresias `simulator/run_sim.py` and
`jobs.py`, `dlas-gpu`): thresholds 3,250 and 7,200 GPU-seconds (3 queues); Gittins Δ = 3,250
GPU-seconds with the `yarn-gput1000.csv` service prior (shipped in `dlsched/data`).

`compat=True` reproduces the authors' simulator (`dlas_sim_jobs`) rather than the paper, step
for step: it schedules only at arrivals, completions and its own queue-jump times; each
event first updates every job in arrival order (whole seconds; a running job drops at most
one queue per event; a waiting job is promoted when its pending time since it first ran, or
since its last promotion, reaches knob × its run time since then — the simulator's reading
of the knob), then sorts each queue by the Gittins index (ties: earlier submission; sort is
stable), admits by GPU count, and finally moves waiting jobs behind running ones in every
queue. Its next queue-jump time mixes run time into the GPU-time formula with Python 2
integer division, ⌊(threshold − run seconds) / GPUs⌋ after now, so demotions of multi-GPU
jobs happen late and at times that depend on other events; the Gittins index is its
tabulated version (`AuthorsGittinsTable`); placement never delays a job (its `dlas` counts
GPUs whatever `--scheme` says), so the default placement is `consolidated` there. Use it with
the `tiresias-sim` overheads (all zero) to compare with `reference_results.csv`.

Simplified: admission counts GPUs per pool (type, VC) and then places; a job whose placement
fails after that (no consolidated placement yet) waits for the next scheduling point, and the
running jobs preempted for it keep their GPUs if those are still free. A job asking for a
fraction of a GPU counts as a whole GPU in admission.

Speed: queues are kept sorted incrementally; demotion and promotion times are timers in a
heap; a scheduling call first admits waiting jobs into free GPUs, in priority order, and
walks the priority order (from that job on) only when a waiting job could take GPUs from a
lower-priority running one — an exact test, see `_fast_admit`; Gittins indices of running
jobs are evaluated with numpy, once per call.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from importlib import resources

import numpy as np

from dlsched.engine.ledger import Pool
from dlsched.engine.placement import STRATEGIES
from dlsched.engine.view import ClusterView
from dlsched.errors import SchedulingError, UnknownModelError
from dlsched.jobs import JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

DEFAULT_THRESHOLDS = (3250.0, 7200.0)
GITTINS_DELTA = 3250.0
SENSITIVE_MODELS = ("vgg", "alexnet")
SENSITIVE_SLOWDOWN = 0.1
_EPS = 1e-6


class GittinsIndex:
    """Gittins index of a job that has attained `a` GPU-seconds, for a service distribution
    given by samples: G(a) = P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a] (higher runs
    first); 0 past the largest sample."""

    def __init__(self, samples: Sequence[float], delta: float = GITTINS_DELTA) -> None:
        values = np.sort(np.asarray(samples, dtype=float))
        if len(values) == 0 or delta <= 0:
            raise ValueError("the Gittins prior needs samples and a positive delta")
        self.values = values
        self.delta = float(delta)
        self._list = values.tolist()
        self._prefix_array = np.concatenate([[0.0], np.cumsum(values)])
        self._prefix = self._prefix_array.tolist()

    @classmethod
    def yarn_prior(cls, delta: float = GITTINS_DELTA) -> GittinsIndex:
        """Tiresias' shipped prior: 1,001 GPU-time samples of YARN jobs."""
        text = (resources.files("dlsched.data") / "tiresias_yarn_gput1000.csv").read_text()
        return cls([float(v) for v in text.split()[1:]], delta)

    def __call__(self, attained: float) -> float:
        values, prefix, delta = self._list, self._prefix, self.delta
        start = bisect.bisect_right(values, attained)  # first sample > attained
        alive = len(values) - start
        if alive == 0:
            return 0.0
        stop = bisect.bisect_right(values, attained + delta, start)
        done = stop - start
        within = prefix[stop] - prefix[start] - done * attained  # Σ (S − a) for S ≤ a + Δ
        expected = within + (alive - done) * delta  # × alive, which cancels below
        return done / expected if expected > 0 else math.inf

    def many(self, attained: np.ndarray) -> np.ndarray:
        """The index at each of an array of attained services (same arithmetic)."""
        values, prefix, delta = self.values, self._prefix_array, self.delta
        start = np.searchsorted(values, attained, side="right")
        stop = np.searchsorted(values, attained + delta, side="right")
        alive = len(values) - start
        done = stop - start
        within = prefix[stop] - prefix[start] - done * attained
        expected = within + (alive - done) * delta
        # expected > 0 whenever a sample lies above `attained`; with none, done = 0 → 0.
        return done / np.maximum(expected, 1e-300)


def _py2_round(value: float, digits: int) -> float:
    """Python 2's round(): the exact binary value, halves away from zero."""
    return float(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


class AuthorsGittinsTable:
    """The Gittins lookup of the authors' simulator (`run_sim.py`: `parse_job_dist`,
    `cal_r_gittins_index`, `get_gittins_index`), for `compat=True`: the index is tabulated at
    each prior sample minus one and looked up as a step function, and its expected-service
    term sums the samples themselves rather than the service still to come (S, not S − a),
    with the simulator's Python 2 arithmetic: integer (floor) division of that sum, and
    round() halving away from zero."""

    def __init__(self, samples: Sequence[float], delta: float = GITTINS_DELTA) -> None:
        self.data = sorted(int(v) for v in samples)
        self.delta = int(delta)
        self.table = [self._rank(v - 1) for v in self.data] + [0.0]

    def _rank(self, attained: int) -> float:
        data, num, delta = self.data, len(self.data), self.delta
        if attained > data[-1] - 1:
            return 0.0
        idx = bisect.bisect_right(data, attained)
        reach = attained + delta
        idx_delta = num - 1 if reach > data[-1] - 1 else bisect.bisect_right(data, reach)
        p = _py2_round((idx_delta - idx) / (num - idx), 5)
        e = float((sum(data[idx:idx_delta]) + delta * (num - idx_delta)) // (num - idx))
        return _py2_round(p * 1_000_000 / e, 4)

    def __call__(self, attained: float) -> float:
        if attained > self.data[-1]:
            return 0.0
        return self.table[bisect.bisect_right(self.data, attained)]


@register("tiresias")
class Tiresias(BasePolicy):
    """Tiresias-L: discretised 2D-LAS with priority queues on GPU-time (NSDI 2019)."""

    name = "tiresias"
    gittins = False

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation_knob: float | None = None,
        placement: str = "sensitive",
        compat: bool = False,
        sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
    ) -> None:
        super().__init__()
        limits = tuple(float(t) for t in thresholds)
        if any(b <= a for a, b in zip(limits, limits[1:], strict=False)) or any(
            t <= 0 for t in limits
        ):
            raise ValueError(f"{self.name}: thresholds must be positive and increasing: {limits}")
        if placement != "sensitive" and placement not in STRATEGIES:
            raise ValueError(
                f"{self.name}: placement must be 'sensitive' (consolidation-aware)"
                f" or one of {', '.join(STRATEGIES)}, not {placement!r}"
            )
        if starvation_knob is not None and not starvation_knob > 0:
            raise ValueError(f"{self.name}: starvation_knob must be > 0 or None")
        if not 0 <= sensitive_slowdown < 1:
            raise ValueError(f"{self.name}: sensitive_slowdown must be in [0, 1)")
        self.thresholds = limits
        self.starvation_knob = starvation_knob
        self.placement = placement
        self.sensitive_slowdown = sensitive_slowdown
        self.compat = compat

    def start(self, view: ClusterView) -> None:
        """Fresh queues, timers and caches for a run."""
        levels = len(self.thresholds) + 1
        self._last = levels - 1
        self._level: dict[JobState, int] = {}
        self._offset: dict[JobState, float] = {}  # service counted from here (promotions)
        self._strategy_of: dict[tuple, str] = {}
        self._pools: dict[object, tuple[tuple[Pool, str], ...]] = {}
        if self.compat:
            self._cqueues: list[list[JobState]] = [[] for _ in range(levels)]
            self._runnable: dict[JobState, None] = {}
            self._first_run: dict[JobState, float | None] = {}
            self._rank: dict[JobState, float] = {}
            self._event = False
            self._next_jump = math.inf
            return
        # Per queue: running jobs per pool sorted by FIFO key (first start, job order), with
        # their GPU counts alongside, and waiting jobs sorted by the policy's key
        # (`_wait_key`); keys end with the job itself.
        self._run: list[dict[Pool, tuple[list[tuple], list[int]]]] = [{} for _ in range(levels)]
        self._waiting: list[list[tuple]] = [[] for _ in range(levels)]
        self._key: dict[JobState, tuple] = {}  # the job's entry in one of those lists
        self._first: dict[JobState, float] = {}  # first start time
        self._pool_of: dict[JobState, Pool] = {}  # pool of a running job
        self._timers: list[tuple[float, int, JobState, int]] = []
        self._stint: dict[JobState, int] = {}  # bumped at every start and stop
        self._seq = 0
        self._arrived = False
        self._capacity: dict[Pool, int] = view.pool_capacity()
        self._held: dict[Pool, list[int]] = {pool: [0] * levels for pool in self._capacity}

    # ---- bookkeeping ------------------------------------------------------------------
    def on_arrival(self, job: JobState) -> None:
        self._level[job] = 0
        self._offset[job] = 0.0
        if self.compat:
            self._cqueues[0].append(job)
            self._runnable[job] = None
            self._first_run[job] = None
            self._event = True
            return
        self._stint[job] = 0
        self._arrived = True
        self._wait(job, 0, 0.0)

    def on_finish(self, job: JobState) -> None:
        level = self._level.pop(job)
        del self._offset[job]
        if self.compat:
            self._cqueues[level].remove(job)
            del self._runnable[job], self._first_run[job]
            self._rank.pop(job, None)
            self._event = True
            return
        self._unrun(job, level)
        self._stint_ended(job)
        del self._stint[job], self._first[job]

    def _strategy(self, view: ClusterView, job: JobState, gpu_type: str) -> str:
        if self.placement != "sensitive":
            return self.placement
        if self.compat:
            return "consolidated"  # the simulator's dlas counts GPUs: placement never waits
        spec = job.spec
        key = (spec.model, spec.num_gpus, gpu_type)
        strategy = self._strategy_of.get(key)
        if strategy is None:
            strategy = self._strategy_of[key] = (
                "yarn" if self._sensitive(view, job, gpu_type) else "best_fit"
            )
        return strategy

    def _sensitive(self, view: ClusterView, job: JobState, gpu_type: str) -> bool:
        """Placement-sensitive: a large-tensor model by name, or one the estimator says loses
        at least `sensitive_slowdown` of its throughput when spread over two nodes."""
        spec = job.spec
        model = (spec.model or "").lower()
        if any(name in model for name in SENSITIVE_MODELS):
            return True
        if spec.num_gpus < 2:
            return False
        try:
            together = view.estimator.throughput(spec, gpu_type, spec.num_gpus, 1)
            apart = view.estimator.throughput(spec, gpu_type, spec.num_gpus, 2)
        except UnknownModelError:
            return False
        return together > 0 and apart < (1 - self.sensitive_slowdown) * together

    def _choices(self, view: ClusterView, job: JobState) -> tuple[tuple[Pool, str], ...]:
        """(pool, GPU type) the job may use, fastest type first."""
        spec = job.spec
        key = (
            (spec.model, spec.num_gpus, spec.vc, spec.gpu_constraint)
            if spec.type_durations is None
            else spec.index
        )
        pools = self._pools.get(key)
        if pools is None:
            pools = self._pools[key] = tuple((view.pool(spec, t), t) for t in view.rank_types(spec))
        return pools

    def _admit(
        self,
        view: ClusterView,
        order: list[JobState],
        room: dict[Pool, int],
        running_left: int,
        pool_of: dict[JobState, Pool],
    ) -> tuple[list[JobState], list[tuple[JobState, str]]]:
        """Walk `order` (highest priority first), counting GPUs per pool (`room`: free, plus
        held by the running jobs in `order`): running jobs that still fit keep their GPUs,
        the others are dropped; waiting jobs that fit are admitted with a GPU type."""
        dropped: list[JobState] = []
        admitted: list[tuple[JobState, str]] = []
        left = sum(room.values())
        smallest = view.min_pending_demand()
        for at, job in enumerate(order):
            if left <= 0 or (running_left == 0 and left < smallest):
                if running_left:
                    dropped.extend(job for job in order[at:] if job.gpus)
                break
            n = job.spec.num_gpus
            if job.gpus:
                running_left -= 1
                pool = pool_of[job]
                if room[pool] >= n:
                    room[pool] -= n
                    left -= n
                else:
                    dropped.append(job)
                continue
            if n > left:
                continue
            for pool, gpu_type in self._choices(view, job):
                if room[pool] >= n:
                    room[pool] -= n
                    left -= n
                    admitted.append((job, gpu_type))
                    break
        return dropped, admitted

    def _apply(
        self, view: ClusterView, dropped: list[JobState], admitted: list[tuple[JobState, str]]
    ):
        """Preempt the dropped running jobs, place the admitted ones in priority order.
        Returns the allocation, the preempted and the started jobs."""
        alloc = view.allocation()
        preempted: list[JobState] = []
        for job in dropped:
            del alloc[job]
            preempted.append(job)
        started: list[tuple[JobState, str]] = []
        unplaced = False
        for job, gpu_type in admitted:
            gpus = view.place(job, gpu_type=gpu_type, strategy=self._strategy(view, job, gpu_type))
            if gpus is not None:
                alloc[job] = gpus
                started.append((job, gpu_type))
            else:
                unplaced = True
        if unplaced and preempted:
            # A job admitted by count found no placement (strict consolidation): running jobs
            # whose GPUs are still free keep them instead of being preempted for nothing.
            for job in list(preempted):
                try:
                    alloc[job] = job.gpus
                except SchedulingError:
                    continue
                preempted.remove(job)
        return alloc, preempted, started

    # ---- the paper: queues ------------------------------------------------------------
    def _service(self, job: JobState, now: float) -> float:
        return job.attained_service_at(now) - self._offset[job]

    def _wait_key(self, job: JobState, service: float) -> tuple:
        """Order among waiting jobs of one queue: FIFO by first start (never started: last,
        by arrival)."""
        return (self._first.get(job, math.inf), job.spec.index, job)

    def _wait(self, job: JobState, level: int, service: float) -> None:
        key = self._key[job] = self._wait_key(job, service)
        bisect.insort(self._waiting[level], key)

    def _unwait(self, job: JobState, level: int) -> None:
        waiting = self._waiting[level]
        del waiting[bisect.bisect_left(waiting, self._key.pop(job))]

    def _runs(self, job: JobState, level: int, pool: Pool) -> None:
        key = self._key[job] = (self._first[job], job.spec.index, job)
        keys, gpus = self._run[level].setdefault(pool, ([], []))
        at = bisect.bisect_left(keys, key)
        keys.insert(at, key)
        gpus.insert(at, job.spec.num_gpus)
        self._pool_of[job] = pool
        self._held[pool][level] += job.spec.num_gpus

    def _unrun(self, job: JobState, level: int) -> None:
        pool = self._pool_of.pop(job)
        keys, gpus = self._run[level][pool]
        at = bisect.bisect_left(keys, self._key.pop(job))
        del keys[at], gpus[at]
        self._held[pool][level] -= job.spec.num_gpus

    def _stint_started(self, job: JobState, now: float) -> None:
        """Hook: `job` holds GPUs from `now` on."""

    def _stint_ended(self, job: JobState) -> None:
        """Hook: `job` gives its GPUs back (preempted or finished)."""

    def _push(self, when: float, job: JobState) -> None:
        self._seq += 1
        heapq.heappush(self._timers, (when, self._seq, job, self._stint[job]))

    def _demotion_timer(self, job: JobState, level: int, now: float) -> None:
        if level < self._last:
            service = self._service(job, now)
            spec = job.spec
            rate = spec.num_gpus * spec.gpu_milli / 1000  # GPU-seconds per second held
            self._push(now + max(0.0, self.thresholds[level] - service) / rate, job)

    def _fire_timers(self, now: float) -> bool:
        """Demote running jobs whose service reached their queue's threshold and promote
        starving ones; True if any queue changed. A timer whose job has started or stopped
        since it was set is stale and dropped."""
        timers, changed = self._timers, False
        due = now + 1e-9 * max(1.0, abs(now))
        while timers and timers[0][0] <= due:
            _, _, job, stint = heapq.heappop(timers)
            if self._stint.get(job) != stint:
                continue
            level = self._level[job]
            if job.gpus:  # its service reached its queue's threshold now
                service = self._service(job, now)
                target = level + 1
                while target < self._last and service >= self.thresholds[target] * (1 - _EPS):
                    target += 1
                pool = self._pool_of[job]
                self._unrun(job, level)
                self._level[job] = target
                self._runs(job, target, pool)
                self._demotion_timer(job, target, now)
                changed = True
            elif level > 0:  # it has waited knob × its last run: back to the top queue
                self._unwait(job, level)
                self._offset[job] = job.attained_service_at(now)
                self._level[job] = 0
                self._wait(job, 0, 0.0)
                changed = True
        return changed

    def _running_keys(self, level: int, now: float, cache: dict) -> list[tuple]:
        """Keys of the running jobs of one queue (any order), comparable with the waiting
        jobs' keys; for 2D-LAS, (first start, job order, job)."""
        keys: list[tuple] = []
        for running, _ in self._run[level].values():
            keys.extend(running)
        return keys

    def _queue_order(self, level: int, now: float, cache: dict) -> list[JobState]:
        """Jobs of one queue, highest priority first."""
        keys = self._running_keys(level, now, cache)
        keys.extend(self._waiting[level])
        keys.sort()
        return [key[-1] for key in keys]

    def _running_sorted(
        self, level: int, pool: Pool, now: float, cache: dict
    ) -> tuple[list[tuple], list[int]]:
        """Running jobs of one queue and pool, highest priority first, as (keys ending with
        the job, GPU counts): for 2D-LAS, by first start."""
        return self._run[level].get(pool, ([], []))

    def _held_after(self, level: int, pool: Pool, key: tuple, now: float, cache: dict) -> int:
        """GPUs of `pool` held by running jobs of queue `level` that rank below a waiting
        job with `key`."""
        keys, gpus = self._running_sorted(level, pool, now, cache)
        return sum(gpus[bisect.bisect_right(keys, key) :])

    # ---- the paper: scheduling --------------------------------------------------------
    def schedule(self, view: ClusterView):
        if self.compat:
            return self._schedule_compat(view)
        now = view.now
        changed = self._fire_timers(now)
        arrived, self._arrived = self._arrived, False
        if not view.pending or not (changed or arrived or view.free_gpus()):
            # Nobody waits, or nothing moved and no GPU is free: the answer stands.
            return self._done(view, None)
        cache: dict = {}  # what `_fast_admit` and the walk compute once per call
        admitted, walk_from = self._fast_admit(view, now, cache)
        dropped: list[JobState] = []
        if walk_from is not None:  # a waiting job may take GPUs from a lower-priority one
            more_dropped, more = self._walk_from(view, now, cache, *walk_from)
            dropped, admitted = more_dropped, admitted + more
        alloc, preempted, started = self._apply(view, dropped, admitted)
        knob = self.starvation_knob
        for job in preempted:
            level = self._level[job]
            self._stint[job] += 1
            self._unrun(job, level)
            self._stint_ended(job)
            self._wait(job, level, self._service(job, now))
            if knob is not None and level > 0:
                self._push(now + knob * (now - job.held_since), job)
        for job, gpu_type in started:
            level = self._level[job]
            self._stint[job] += 1
            self._unwait(job, level)
            self._first.setdefault(job, now)
            self._runs(job, level, view.pool(job.spec, gpu_type))
            self._stint_started(job, now)
            self._demotion_timer(job, level, now)
        return self._done(view, alloc)

    def _fast_admit(self, view: ClusterView, now: float, cache: dict):
        """Waiting jobs in priority order, admitted into free GPUs — exactly the walk's answer
        up to the first waiting job that could instead take GPUs from a running job of lower
        priority. In the walk a waiting job finds, in a pool, the free GPUs plus those held by
        running jobs ranked below it (lower queues, and in its own queue those behind it),
        less what waiting jobs above it took; while no one has been preempted that is exactly
        what is counted here. Returns the admitted jobs and, if the walk must go on from such
        a job, (its queue, its key, the free GPUs per pool left) to resume from; else None."""
        capacity, held = self._capacity, self._held
        free = {pool: capacity[pool] - sum(counts) for pool, counts in held.items()}
        admitted: list[tuple[JobState, str]] = []
        smallest = view.min_pending_demand()
        for level in range(self._last + 1):
            waiting = self._waiting[level]
            if not waiting:
                continue
            below = {pool: sum(counts[level + 1 :]) for pool, counts in held.items()}
            same = {pool: counts[level] for pool, counts in held.items()}
            if sum(free.values()) + sum(below.values()) + sum(same.values()) < smallest:
                break  # nothing at this level or below can fit, even by preempting
            for key in waiting:
                job = key[-1]
                n = job.spec.num_gpus
                for pool, gpu_type in self._choices(view, job):
                    if free[pool] >= n:
                        free[pool] -= n
                        admitted.append((job, gpu_type))
                        break
                    room = free[pool] + below[pool]
                    if room >= n or (
                        room + same[pool] >= n
                        and room + self._held_after(level, pool, key, now, cache) >= n
                    ):
                        return admitted, (level, key, free)
        return admitted, None

    def _walk_from(
        self,
        view: ClusterView,
        now: float,
        cache: dict,
        level: int,
        key: tuple,
        free: dict[Pool, int],
    ):
        """The walk from the waiting job with `key` in queue `level` on: everything ranked
        above it keeps its GPUs (nothing was preempted up to there), so the GPUs it and the
        jobs below it share are the free ones plus those the running jobs below it hold."""
        waiting = self._waiting[level]
        behind = [other for other in self._running_keys(level, now, cache) if other > key]
        room = {pool: free[pool] + sum(counts[level + 1 :]) for pool, counts in self._held.items()}
        pool_of = self._pool_of
        for other in behind:
            job = other[-1]
            room[pool_of[job]] += job.spec.num_gpus
        head = waiting[bisect.bisect_left(waiting, key) :] + behind
        head.sort()
        order = [key[-1] for key in head]
        running = len(behind)
        for lower in range(level + 1, self._last + 1):
            order.extend(self._queue_order(lower, now, cache))
            running += sum(len(keys) for keys, _ in self._run[lower].values())
        return self._admit(view, order, room, running, pool_of)

    def _done(self, view: ClusterView, alloc):
        timers = self._timers
        while timers and self._stint.get(timers[0][2]) != timers[0][3]:
            heapq.heappop(timers)
        if timers:
            view.wake_at(timers[0][0])
        return alloc

    # ---- the authors' simulator (compat=True) -----------------------------------------
    def _executed(self, job: JobState, now: float) -> int:
        """Whole seconds run since the job last entered the top queue (their
        `executed_time`); the authors' simulator counts time, not GPU-time, here."""
        n = job.spec.num_gpus
        return int(job.attained_service_at(now) / n + _EPS) - int(self._offset[job] / n + _EPS)

    def _index(self, executed_gpu_s: int) -> float:
        return 0.0

    def _schedule_compat(self, view: ClusterView):
        now = view.now
        if not self._event and now != self._next_jump:
            return None  # a queue-jump time the simulator has since moved: no event there
        self._event = False
        queues, level_of, limits, last = self._cqueues, self._level, self.thresholds, self._last
        knob = self.starvation_knob
        for job in self._runnable:  # arrival order, as `JOBS.runnable_jobs`
            n = job.spec.num_gpus
            level = level_of[job]
            executed = self._executed(job, now)
            if job.gpus:
                if level < last and executed * n >= limits[level]:
                    queues[level].remove(job)
                    queues[level + 1].append(job)
                    level_of[job] = level + 1
            elif (
                knob is not None
                and level > 0
                and executed > 0
                and (now - self._first_run[job] - executed >= int(executed * knob))
            ):
                self._offset[job] = job.attained_service_at(now)
                self._first_run[job] = None
                queues[level].remove(job)
                queues[0].append(job)
                level_of[job] = 0
                executed = 0
            if self.gittins:
                self._rank[job] = self._index(executed * n)
        if self.gittins:
            rank = self._rank
            for queue in queues:
                queue.sort(key=lambda j: (rank[j], -int(j.spec.submit_time)), reverse=True)
        order = [job for queue in queues for job in queue]
        pools = {job: view.pool_of_gpu(job.gpus[0]) for job in view.running.values()}
        dropped, admitted = self._admit(view, order, view.pool_capacity(), len(view.running), pools)
        alloc, preempted, started = self._apply(view, dropped, admitted)
        holders = set(view.running.values()).difference(preempted)
        for job, _ in started:
            holders.add(job)
            if self._first_run[job] is None:
                self._first_run[job] = now
        for queue in queues:  # waiting jobs move behind running ones (stable)
            queue.sort(key=lambda j: j not in holders)
        jump = math.inf
        for job in self._runnable:
            level, n = level_of[job], job.spec.num_gpus
            executed = self._executed(job, now)
            if job in holders:
                if level < last:
                    jump = min(jump, now + (int(limits[level]) - executed) // n)
            elif knob is not None and level > 0 and executed > 0:
                diff = int(executed * knob - (now - self._first_run[job] - executed))
                if diff > 0:
                    jump = min(jump, now + diff)
        self._next_jump = jump
        if jump < math.inf:
            view.wake_at(jump)
        return alloc


@register("tiresias-gittins")
class TiresiasGittins(Tiresias):
    """Tiresias-G: 2D-Gittins index within priority queues on GPU-time (NSDI 2019)."""

    name = "tiresias-gittins"
    gittins = True

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation_knob: float | None = None,
        placement: str = "sensitive",
        compat: bool = False,
        sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
        delta: float = GITTINS_DELTA,
        prior: Sequence[float] | None = None,
    ) -> None:
        super().__init__(thresholds, starvation_knob, placement, compat, sensitive_slowdown)
        if not delta > 0:
            raise ValueError(f"{self.name}: delta must be > 0 GPU-seconds, got {delta!r}")
        if prior is not None and len(prior) == 0:
            raise ValueError(f"{self.name}: prior must hold at least one GPU-time sample")
        self.delta = delta
        self.prior = prior

    def start(self, view: ClusterView) -> None:
        """Fresh queues and timers, the index table, and the arrays of running services."""
        super().start(view)
        samples = self.prior if self.prior is not None else GittinsIndex.yarn_prior().values
        self._gittins: GittinsIndex | AuthorsGittinsTable = (
            AuthorsGittinsTable(samples, self.delta)
            if self.compat
            else GittinsIndex(samples, self.delta)
        )
        self._base = np.zeros(64)
        self._since = np.zeros(64)
        self._gpus = np.zeros(64)
        self._free_slots = list(range(63, -1, -1))
        self._slot: dict[JobState, int] = {}

    def _index(self, executed_gpu_s: int) -> float:
        return self._gittins(executed_gpu_s)

    def _wait_key(self, job: JobState, service: float) -> tuple:
        # A waiting job's service does not change, so neither does its index.
        return (-self._gittins(service), self._first.get(job, math.inf), job.spec.index, job)

    def _stint_started(self, job: JobState, now: float) -> None:
        # Its service in this stint is base + GPUs × (t − since): one slot of the arrays
        # that `_running_sorted` evaluates for every running job at once.
        if not self._free_slots:
            size = len(self._base)
            self._base = np.resize(self._base, 2 * size)
            self._since = np.resize(self._since, 2 * size)
            self._gpus = np.resize(self._gpus, 2 * size)
            self._free_slots = list(range(2 * size - 1, size - 1, -1))
        slot = self._slot[job] = self._free_slots.pop()
        self._base[slot] = job.attained_service_s - self._offset[job]
        self._since[slot] = now
        self._gpus[slot] = job.spec.num_gpus * job.spec.gpu_milli / 1000

    def _stint_ended(self, job: JobState) -> None:
        self._free_slots.append(self._slot.pop(job))

    def _ranks(self, now: float, cache: dict) -> dict[JobState, float]:
        """−index of every running job at `now`, computed at once."""
        ranks = cache.get("ranks")
        if ranks is None:
            slots = np.fromiter(self._slot.values(), dtype=np.intp, count=len(self._slot))
            service = self._base[slots] + self._gpus[slots] * (now - self._since[slots])
            ranks = cache["ranks"] = dict(
                zip(self._slot, (-self._gittins.many(service)).tolist(), strict=True)
            )
        return ranks

    def _running_sorted(
        self, level: int, pool: Pool, now: float, cache: dict
    ) -> tuple[list[tuple], list[int]]:
        """Running jobs of one queue and pool as (−index, first start, job order, job) at
        `now`, sorted, with their GPU counts; computed once per scheduling call."""
        entry = cache.get((level, pool))
        if entry is None:
            ranks = self._ranks(now, cache)
            keys, gpus = self._run[level].get(pool, ([], []))
            ranked = sorted([(ranks[key[-1]], *key) for key in keys])
            order = {key[-1]: n for key, n in zip(keys, gpus, strict=True)}
            entry = cache[(level, pool)] = (ranked, [order[key[-1]] for key in ranked])
        return entry

    def _running_keys(self, level: int, now: float, cache: dict) -> list[tuple]:
        ranks = self._ranks(now, cache)
        return [(ranks[key[-1]], *key) for keys, _ in self._run[level].values() for key in keys]
