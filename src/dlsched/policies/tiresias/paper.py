"""Tiresias as the paper describes it: discretised 2D-LAS (`Tiresias`) and 2D-Gittins
(`TiresiasGittins`) (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
Learning", NSDI 2019). The replica of the authors' simulator is `compat.py`.

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

import numpy as np

from dlsched.engine.allocation import Allocation
from dlsched.engine.ledger import Pool
from dlsched.engine.view import ClusterView
from dlsched.errors import UnknownModelError
from dlsched.jobs import JobState
from dlsched.policies.tiresias.common import (
    _EPS,
    DEFAULT_THRESHOLDS,
    SENSITIVE_MODELS,
    SENSITIVE_SLOWDOWN,
    TiresiasBase,
    check_sensitive_slowdown,
)
from dlsched.policies.tiresias.gittins import (
    GITTINS_DELTA,
    GittinsIndex,
    check_gittins,
    prior_samples,
)


class Tiresias(TiresiasBase):
    """Tiresias-L: discretised 2D-LAS with priority queues on GPU-time (NSDI 2019), as the
    paper describes it: exact-time demotions, FIFO by first start within a queue."""

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation_knob: float | None = None,
        placement: str = "sensitive",
        sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
    ) -> None:
        super().__init__(thresholds, starvation_knob, placement)
        check_sensitive_slowdown(self.name, sensitive_slowdown)
        self.sensitive_slowdown = sensitive_slowdown

    def start(self, view: ClusterView) -> None:
        """Empty queues, timers and caches for a run."""
        super().start(view)
        levels = self._last + 1
        self._strategy_of: dict[tuple, str] = {}
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
        self._stint[job] = 0
        self._arrived = True
        self._wait(job, 0, 0.0)

    def on_finish(self, job: JobState) -> None:
        level = self._level.pop(job)
        del self._offset[job]
        self._unrun(job, level)
        self._stint_ended(job)
        del self._stint[job], self._first[job]

    def _strategy(self, view: ClusterView, job: JobState, gpu_type: str) -> str:
        if self.placement != "sensitive":
            return self.placement
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
    def schedule(self, view: ClusterView) -> Allocation | None:
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

    def _done(self, view: ClusterView, alloc: Allocation | None) -> Allocation | None:
        timers = self._timers
        while timers and self._stint.get(timers[0][2]) != timers[0][3]:
            heapq.heappop(timers)
        if timers:
            view.wake_at(timers[0][0])
        return alloc


class TiresiasGittins(Tiresias):
    """Tiresias-G: 2D-Gittins index within priority queues on GPU-time (NSDI 2019), as the
    paper describes it (the index of `GittinsIndex`, on the service still to come)."""

    name = "tiresias-gittins"

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation_knob: float | None = None,
        placement: str = "sensitive",
        sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
        delta: float = GITTINS_DELTA,
        prior: Sequence[float] | None = None,
    ) -> None:
        super().__init__(thresholds, starvation_knob, placement, sensitive_slowdown)
        check_gittins(self.name, delta, prior)
        self.delta = delta
        self.prior = prior

    def start(self, view: ClusterView) -> None:
        """Empty queues and timers, the index, and the arrays of running services."""
        super().start(view)
        self._gittins = GittinsIndex(prior_samples(self.prior), self.delta)
        self._base = np.zeros(64)
        self._since = np.zeros(64)
        self._gpus = np.zeros(64)
        self._free_slots = list(range(63, -1, -1))
        self._slot: dict[JobState, int] = {}

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
