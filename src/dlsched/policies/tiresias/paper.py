"""Tiresias as the paper describes it: discretised 2D-LAS (`Tiresias`) and 2D-Gittins
(`TiresiasGittins`) (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
Learning", NSDI 2019). The replica of the authors' simulator is `compat.py`.

Faithful to the paper:
- 2D attained service = GPUs × time held (§3.1); K priority queues split by thresholds on
  it; new jobs enter the highest queue; a running job whose service reached its queue's
  threshold is demoted. Continuous time (no whole seconds, no polling).
- Queues are served in order, FIFO within a queue (§3.2), or for `tiresias-gittins` by the
  Gittins index of the job's service (§3.2, Δ as in the authors' simulator). Jobs are
  admitted greedily while GPUs last (a job that does not fit is skipped, not waited for);
  running jobs left outside the admitted set are preempted and pay the configured restart
  overhead when they resume.
- Starvation knob (§3.2 "STARVELIMIT"): a waiting job in a lower queue is promoted to the
  highest queue once it has waited `starvation_knob` × its run time, its service count
  restarted (off by default, as in the authors' `dlas-gpu`). Promotions are timed.
- Consolidation-aware placement (§4): a placement-sensitive job is placed only
  consolidated, on the fewest nodes its size allows, and waits until that is possible (the
  `yarn` placement, YARN-CS's rule); other jobs are placed best-fit and may spread rather
  than wait — the queueing delay strict consolidation costs YARN-CS is what Tiresias avoids
  for them. A job is placement-sensitive when the estimator says spreading it over two nodes
  costs at least `sensitive_slowdown` (10 %) of its throughput (Gavel's `_unconsolidated`
  measurements, the scaling model's inter-node factor): the profile-based skew test of §4,
  with the profile at hand — so under the `duration` model, where spreading costs nothing,
  no job waits for consolidation. Where the estimator cannot say (an unknown model), the
  paper's large-tensor (skewed) models by name (VGG, AlexNet) are sensitive. The engine
  charges spread jobs whatever the throughput model says. `placement=` one strategy name
  (`"consolidated"`, `"best_fit"`, `"spread"`, `"yarn"`) applies that strategy to every job.

Where the paper is silent, the default follows the authors' simulator (SymbioticLab/Tiresias
`simulator/run_sim.py`, `dlas_sim_jobs`), in continuous time; `literal=True` reads the paper
strictly instead. The defaults are within 3 % of the simulator's average JCT and makespan on
every run of `reference_results.csv` (overload included; `tests/test_fidelity_tiresias.py`),
where the literal reading is up to 50 % off in overload. Each reading's effect, measured by
switching it alone back to the literal one (overloaded `philly_like_480_r3p0`, 60 GPUs):
- Order within a queue. Default: the queue is a line that jobs join at the back (arrival,
  demotion, promotion); after each scheduling call the jobs holding GPUs stand ahead of the
  waiting ones, so a waiting job never preempts a job of its own queue, a preempted job
  keeps its place ahead of those that waited behind it, and a job demoted in a call meets
  the waiting jobs of its new queue from the back. `literal`: FIFO by first start (jobs
  that have run, by when they first started, then jobs that never ran, by arrival): +48.7 %
  (`dlas-gpu`), +36.2 % (knob 8), +20.2 % (knob 4).
- When a running job is demoted. Default: at a scheduling event (an arrival, a completion,
  a promotion, or its demotion check) once its service has reached the threshold; the
  check is planned, at every event, at now + (threshold − run seconds) / GPUs — the
  authors' formula, which takes run seconds for GPU-time, so a multi-GPU job that ran before
  the last event is demoted after its crossing (never before it: a fraction of a GPU is
  checked at its crossing). `literal`: at the exact crossing time: within 5 %, but 1.4× the
  preemptions with knob 4 (11,381 vs 8,061).
- How the starvation knob is read. Default: promoted once its waiting time since it first
  ran after entering the top queue reaches knob × its run time since then. `literal`: once
  its current wait reaches knob × its last run: −4.5 % with knob 8, 1.5× the preemptions
  with knob 4 (12,242 vs 8,061).
- The Gittins index: the paper states its formula (`GittinsIndex`, on the service still to
  come, S − a); the authors' simulator ranks by a table that sums whole sizes S and is a
  step function of the service (`AuthorsGittinsTable`). The paper's formula alone breaks
  10 %: −11.9 % on 60_job with 8 GPUs (27 preemptions vs 88) and +12.3 % here (822 vs
  1,278), so the default ranks by the table (ties: earlier submission first, as the
  simulator) and `literal=True` keeps the formula (ties FIFO by first start).

Defaults, from the authors' simulator (SymbioticLab/Tiresias `simulator/run_sim.py` and
`jobs.py`, `dlas-gpu`): thresholds 3,250 and 7,200 GPU-seconds (3 queues); Gittins Δ = 3,250
GPU-seconds with the `yarn-gput1000.csv` service prior (shipped in `dlsched/data`).

Simplified: admission counts GPUs per pool (type, VC) and then places; a job whose placement
fails after that (no consolidated placement yet) waits for the next scheduling point, the
running jobs preempted for it keep their GPUs if those are still free, and waiting jobs
after it in priority order that can be placed on the GPUs left free start (`_backfill`). A
job asking for a fraction of a GPU counts as a whole GPU in admission.

Speed: queues are kept sorted incrementally; promotion (and `literal` demotion) times are
timers in a heap, the default's demotion check is one wake-up replanned at each event, both
it and the demotions due answered from heaps of stint parameters (`crossings.py`) rather than
by evaluating every running job; a wake-up for a check that has moved since costs no
scheduling call (`woken`). A scheduling call first admits waiting jobs into free GPUs, in
priority order, and walks the priority order (from that job on) only when a waiting job
could take GPUs from a lower-priority running one — an exact test, see `_fast_admit`; the
walk goes pool by pool and counts a pool's running jobs one by one only once a waiting job
took GPUs there (`_walk_from`). Ranks by the authors' Gittins table (a step function of the
service) are kept per job until its service can reach the next sample, and each queue's
and pool's ranked running jobs until one of them can change step or they change
(`_table_ranked`); all of it gives the answers of evaluating every job, bit for bit
(`tests/test_tiresias_speed.py`). The paper's Gittins formula (`literal`) is evaluated
with numpy over every running job, once per call.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Sequence
from operator import itemgetter

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
from dlsched.policies.tiresias.crossings import _MARGIN, CrossingWatch
from dlsched.policies.tiresias.gittins import (
    GITTINS_DELTA,
    AuthorsGittinsTable,
    GittinsIndex,
    check_gittins,
    prior_samples,
)

_rank_of = itemgetter(0)  # a ranked key's rank (`TiresiasGittins._table_ranked`)


class Tiresias(TiresiasBase):
    """Tiresias-L: discretised 2D-LAS with priority queues on GPU-time (NSDI 2019), as the
    paper describes it; where it is silent, as the authors' simulator does (`literal=True`:
    exact-time demotions, FIFO by first start, the last wait against the last run)."""

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation_knob: float | None = None,
        placement: str = "sensitive",
        sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
        literal: bool = False,
    ) -> None:
        super().__init__(thresholds, starvation_knob, placement)
        check_sensitive_slowdown(self.name, sensitive_slowdown)
        self.sensitive_slowdown = sensitive_slowdown
        self.literal = bool(literal)

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, literal={self.literal})"

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
        # The authors' order: each queue is a line; a job's place in it (`_place`) is drawn
        # from `_back` when it joins the line or starts, from `_front` when it is preempted.
        self._place: dict[JobState, int] = {}
        self._back = 0
        self._front = 0
        self._fresh: set[JobState] = set()  # demoted in this call (the authors' order)
        self._first_since_top: dict[JobState, float] = {}  # first start since entering Q0
        self._event = False  # an arrival or completion since the last call
        # running services as arrays, by slot: only `TiresiasGittins` with `literal` reads them
        self._slots = False
        self._base = np.zeros(64)
        self._since = np.zeros(64)
        self._gpus = np.zeros(64)
        self._free_slots = list(range(63, -1, -1))
        self._slot: dict[JobState, int] = {}
        self._stint_of: dict[JobState, tuple[float, float, float]] = {}  # base, since, rate
        self._next_check = math.inf  # the authors' next demotion check
        self._asked = math.inf  # the last check a wake-up was asked for
        # running jobs below the last queue, against their queue's threshold
        self._watch: CrossingWatch[JobState] = CrossingWatch(_EPS)
        self._pool_of: dict[JobState, Pool] = {}  # pool of a running job
        self._timers: list[tuple[float, int, JobState, int]] = []
        self._stint: dict[JobState, int] = {}  # bumped at every start and stop
        self._seq = 0
        self._arrived = False
        self._capacity: dict[Pool, int] = view.pool_capacity()
        self._held: dict[Pool, list[int]] = {pool: [0] * levels for pool in self._capacity}
        # kept with `_held`: free GPUs per pool and in all, GPUs held per queue in all pools
        self._free: dict[Pool, int] = dict(self._capacity)
        self._free_total = sum(self._capacity.values())
        self._held_level = [0] * levels
        # job → (id of its `_choices` answer, its GPU count, that answer)
        self._choice_of: dict[JobState, tuple[int, int, tuple[tuple[Pool, str], ...]]] = {}

    # ---- bookkeeping ------------------------------------------------------------------
    def on_arrival(self, job: JobState) -> None:
        self._level[job] = 0
        self._offset[job] = 0.0
        self._stint[job] = 0
        self._join(job)
        self._arrived = self._event = True
        self._wait(job, 0, 0.0)

    def on_finish(self, job: JobState) -> None:
        level = self._level.pop(job)
        del self._offset[job]
        self._unrun(job, level)
        self._stint_ended(job)
        del self._stint[job], self._first[job], self._place[job]
        self._choice_of.pop(job, None)
        self._first_since_top.pop(job, None)
        self._event = True

    def on_nodes_changed(self, view: ClusterView) -> None:
        """(Engine) nodes came or went (rented instances): the next call must look again."""
        self._event = True

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
        """Placement-sensitive: a job the estimator says loses at least `sensitive_slowdown`
        of its throughput when spread over two nodes; where it cannot say (an unknown model,
        or one GPU), a large-tensor model by name."""
        spec = job.spec
        if spec.num_gpus >= 2:
            try:
                together = view.estimator.throughput(spec, gpu_type, spec.num_gpus, 1)
                apart = view.estimator.throughput(spec, gpu_type, spec.num_gpus, 2)
            except UnknownModelError:
                pass
            else:
                return together > 0 and apart < (1 - self.sensitive_slowdown) * together
        model = (spec.model or "").lower()
        return any(name in model for name in SENSITIVE_MODELS)

    # ---- the paper: queues ------------------------------------------------------------
    def _service(self, job: JobState, now: float) -> float:
        return job.attained_service_at(now) - self._offset[job]

    def _join(self, job: JobState) -> None:
        """The job joins the back of its queue's line (arrival, demotion, promotion) or of
        the jobs holding GPUs in it (start)."""
        self._back += 1
        self._place[job] = self._back

    def _fifo(self, job: JobState, running: bool) -> tuple:
        """FIFO order within a queue (a key's head; the job itself follows). `literal`: by
        first start (never started: last, by arrival). Otherwise the authors' order: a line
        that jobs join at the back, where jobs holding GPUs stand ahead of the waiting ones
        (`_place`) — a job demoted in this call stands at the back until the call ends."""
        if self.literal:
            return (self._first.get(job, math.inf), job.spec.index)
        return (not running or job in self._fresh, self._place[job])

    def _wait_key(self, job: JobState, service: float) -> tuple:
        """Order among waiting jobs of one queue: FIFO (`_fifo`)."""
        return (*self._fifo(job, False), job)

    def _wait(self, job: JobState, level: int, service: float) -> None:
        key = self._key[job] = self._wait_key(job, service)
        bisect.insort(self._waiting[level], key)

    def _unwait(self, job: JobState, level: int) -> None:
        waiting = self._waiting[level]
        del waiting[bisect.bisect_left(waiting, self._key.pop(job))]

    def _runs(self, job: JobState, level: int, pool: Pool) -> None:
        key = self._key[job] = (*self._fifo(job, True), job)
        keys, gpus = self._run[level].setdefault(pool, ([], []))
        at = bisect.bisect_left(keys, key)
        n = job.spec.num_gpus
        keys.insert(at, key)
        gpus.insert(at, n)
        self._pool_of[job] = pool
        self._held[pool][level] += n
        self._free[pool] -= n
        self._free_total -= n
        self._held_level[level] += n

    def _unrun(self, job: JobState, level: int) -> None:
        pool = self._pool_of.pop(job)
        keys, gpus = self._run[level][pool]
        at = bisect.bisect_left(keys, self._key.pop(job))
        del keys[at], gpus[at]
        n = job.spec.num_gpus
        self._held[pool][level] -= n
        self._free[pool] += n
        self._free_total += n
        self._held_level[level] -= n

    def _stint_started(self, job: JobState, now: float) -> None:
        """`job` holds GPUs from `now` on: its service in this stint is base + GPUs × (t −
        since), watched against its queue's threshold (and with `_slots`, one slot of the
        arrays that literal Gittins ranks evaluate for every running job at once)."""
        base = job.attained_service_s - self._offset[job]
        spec = job.spec
        rate = spec.num_gpus * spec.gpu_milli / 1000
        self._stint_of[job] = (base, now, rate)
        if not self.literal:
            self._watch.arm(job, base, now, rate, self._threshold(self._level[job]))
        if not self._slots:
            return
        if not self._free_slots:
            size = len(self._base)
            self._base = np.resize(self._base, 2 * size)
            self._since = np.resize(self._since, 2 * size)
            self._gpus = np.resize(self._gpus, 2 * size)
            self._free_slots = list(range(2 * size - 1, size - 1, -1))
        slot = self._slot[job] = self._free_slots.pop()
        self._base[slot] = base
        self._since[slot] = now
        self._gpus[slot] = rate

    def _stint_ended(self, job: JobState) -> None:
        """`job` gives its GPUs back (preempted or finished)."""
        if self._slots:
            self._free_slots.append(self._slot.pop(job))
        del self._stint_of[job]
        self._watch.disarm(job)

    def _threshold(self, level: int) -> float:
        """The service at which a job of queue `level` is demoted (none in the last)."""
        return self.thresholds[level] if level < self._last else math.inf

    def _push(self, when: float, job: JobState) -> None:
        self._seq += 1
        heapq.heappush(self._timers, (when, self._seq, job, self._stint[job]))

    def _demotion_timer(self, job: JobState, level: int, now: float) -> None:
        if level < self._last and self.literal:
            service = self._service(job, now)
            spec = job.spec
            rate = spec.num_gpus * spec.gpu_milli / 1000  # GPU-seconds per second held
            self._push(now + max(0.0, self.thresholds[level] - service) / rate, job)

    def _fire_timers(self, now: float) -> bool:
        """Demote running jobs whose service reached their queue's threshold and promote
        starving ones; True if any queue changed. A timer whose job has started or stopped
        since it was set is stale and dropped."""
        timers, changed = self._timers, False
        if not timers:
            return False
        due = now + 1e-9 * max(1.0, abs(now))
        while timers and timers[0][0] <= due:
            _, _, job, stint = heapq.heappop(timers)
            if self._stint.get(job) != stint:
                continue
            level = self._level[job]
            if job.gpus:  # its service reached its queue's threshold now
                self._demote(job, level, now)
                changed = True
            elif level > 0:  # it has waited long enough: back to the top queue
                self._unwait(job, level)
                self._offset[job] = job.attained_service_at(now)
                self._level[job] = 0
                self._join(job)
                self._first_since_top.pop(job, None)
                self._wait(job, 0, 0.0)
                changed = True
        return changed

    def _demote(self, job: JobState, level: int, now: float) -> None:
        """Move a running job whose service reached its queue's threshold to the queue its
        service belongs to."""
        service = self._service(job, now)
        target = level + 1
        while target < self._last and service >= self.thresholds[target] * (1 - _EPS):
            target += 1
        pool = self._pool_of[job]
        self._unrun(job, level)
        self._level[job] = target
        self._join(job)
        if not self.literal:
            self._fresh.add(job)
        self._runs(job, target, pool)
        if not self.literal:
            self._watch.arm(job, *self._stint_of[job], self._threshold(target))
        self._demotion_timer(job, target, now)

    def _check_demotions(self, now: float) -> bool:
        """The authors' demotions: at a scheduling event, every running job whose service
        reached its queue's threshold drops; True if one did."""
        crossed = self._watch.crossed(now)
        if not crossed:
            return False
        crossed.sort(key=lambda job: job.spec.index)
        for job in crossed:  # in arrival order, as the authors walk jobs
            self._demote(job, self._level[job], now)
        return bool(crossed)

    def _plan_check(self, now: float) -> None:
        """The authors' next demotion check: the earliest, over running jobs below the last
        queue, of now + (threshold − run seconds) / GPUs — their formula takes the run time
        so far as if it were GPU-time, so a multi-GPU job that ran before this call is
        checked after its crossing; any event in between demotes it there. Never before
        the exact crossing (a fraction of a GPU)."""
        self._next_check = self._watch.next_check(now)

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
    def woken(self, view: ClusterView) -> bool:
        """(Engine) at an instant where only this policy's wake-ups are due: whether
        `schedule` would do anything. It would not (it returns at once) when no job arrived
        or finished since the last call, no timer is due and the demotion check it woke up
        for has since moved later (`literal`: every call acts). Wake-ups are not withdrawn
        when the check moves, because one that is stale may still be due within the 1e-9
        tolerance of a timer or a check; asking here keeps those calls and only those."""
        if self.literal or self._event:
            return True
        now = view.now
        timers = self._timers
        if timers and timers[0][0] <= now + 1e-9 * max(1.0, abs(now)):
            return True
        return now >= self._next_check - 1e-9 * max(1.0, now)

    def schedule(self, view: ClusterView) -> Allocation | None:
        now = view.now
        changed = self._fire_timers(now)
        arrived, self._arrived = self._arrived, False
        if not self.literal:
            event, self._event = self._event, False
            if event or changed or now >= self._next_check - 1e-9 * max(1.0, now):
                changed = self._check_demotions(now) or changed
            else:
                return self._done(view, None)  # a check time since moved: no event here
        if not view.pending or not (changed or arrived or view.free_gpus()):
            # Nobody waits, or nothing moved and no GPU is free: the answer stands.
            return self._settle(view, now, None)
        cache: dict = {}  # what `_fast_admit` and the walk compute once per call
        admitted, walk_from = self._fast_admit(view, now, cache)
        dropped: list[JobState] = []
        if walk_from is not None:  # a waiting job may take GPUs from a lower-priority one
            more_dropped, more = self._walk_from(view, now, cache, *walk_from)
            dropped, admitted = more_dropped, admitted + more
        if not admitted and not dropped:
            return self._settle(view, now, None)  # the allocation stands
        alloc, preempted, started = self._apply(view, dropped, admitted)
        if len(started) < len(admitted):
            started.extend(self._backfill(view, alloc, {job for job, _ in admitted}))
        knob = self.starvation_knob
        for job in reversed(preempted):
            # A preempted job keeps its place, ahead of the jobs that waited behind it (a
            # job demoted in this call stays at the back).
            if job in self._fresh:
                self._join(job)
            else:
                self._front -= 1
                self._place[job] = self._front
        for job in preempted:
            level = self._level[job]
            self._stint[job] += 1
            self._fresh.discard(job)
            self._unrun(job, level)
            self._stint_ended(job)
            self._wait(job, level, self._service(job, now))
            if knob is not None and level > 0:
                self._push(self._promotion_time(job, now, knob), job)
        literal = self.literal
        for job, gpu_type in started:
            level = self._level[job]
            self._stint[job] += 1
            self._unwait(job, level)
            self._join(job)
            self._first.setdefault(job, now)
            self._first_since_top.setdefault(job, now)
            self._runs(job, level, view.pool(job.spec, gpu_type))
            self._stint_started(job, now)
            if literal:
                self._demotion_timer(job, level, now)
        return self._settle(view, now, alloc)

    def _backfill(
        self, view: ClusterView, alloc: Allocation, tried: set[JobState]
    ) -> list[tuple[JobState, str]]:
        """Waiting jobs, in priority order, placed on the GPUs left free because an admitted
        job found no placement (a sensitive job waiting for consolidation): that job's
        GPUs were counted as taken, but nobody uses them — a job that cannot start is
        skipped, not waited for."""
        started: list[tuple[JobState, str]] = []
        for level in range(self._last + 1):
            for key in list(self._waiting[level]):
                if not view.free_gpus():
                    return started
                job = key[-1]
                if job in tried:
                    continue
                for _, gpu_type in self._choices(view, job):
                    gpus = view.place(job, gpu_type, self._strategy(view, job, gpu_type))
                    if gpus is not None:
                        alloc[job] = gpus
                        started.append((job, gpu_type))
                        break
        return started

    def _promotion_time(self, job: JobState, now: float, knob: float) -> float:
        """When a job preempted now (below the top queue) returns to the top queue.
        `literal`: once it has waited knob × its last run. Otherwise the authors' reading:
        once its waiting time since it first ran after entering the top queue reaches knob ×
        its run time since then (first start + (1 + knob) × run time)."""
        if self.literal:
            return now + knob * (now - job.held_since)
        spec = job.spec
        run_s = self._service(job, now) / (spec.num_gpus * spec.gpu_milli / 1000)
        return max(now, self._first_since_top[job] + (1 + knob) * run_s)

    def _settle(self, view: ClusterView, now: float, alloc: Allocation | None):
        """End a call: jobs demoted in it that kept their GPUs take their place ahead of
        the waiting jobs of their new queue; the next check is planned."""
        for job in sorted(self._fresh, key=self._place.__getitem__) if self._fresh else ():
            level, pool = self._level[job], self._pool_of[job]
            self._unrun(job, level)
            self._fresh.discard(job)
            self._join(job)
            self._runs(job, level, pool)
        if not self.literal:
            self._next_check = self._watch.next_check(now)  # `_plan_check`, inlined
        return self._done(view, alloc)

    def _fast_admit(self, view: ClusterView, now: float, cache: dict):
        """Waiting jobs in priority order, admitted into free GPUs — exactly the walk's answer
        up to the first waiting job that could instead take GPUs from a running job of lower
        priority. In the walk a waiting job finds, in a pool, the free GPUs plus those held by
        running jobs ranked below it (lower queues, and in its own queue those behind it),
        less what waiting jobs above it took; while no one has been preempted that is exactly
        what is counted here. Returns the admitted jobs and, if the walk must go on from such
        a job, (its queue, its key, the free GPUs per pool left) to resume from; else None.

        A job that can neither start nor take GPUs fails so for every later job with the same
        GPU count and pools in this call (free GPUs only shrink, and GPUs held below a job
        only shrink down the order), so those are skipped (`failed`)."""
        held, choice_of = self._held, self._choice_of
        free = self._free  # copied before the first admission changes it
        left = self._free_total
        admitted: list[tuple[JobState, str]] = []
        smallest = view.min_pending_demand()
        failed: set[int] = set()  # ids of `_choices` answers (one per GPU count and pools)
        for level in range(self._last + 1):
            waiting = self._waiting[level]
            if not waiting:
                continue
            if left + sum(self._held_level[level:]) < smallest:
                break  # nothing at this level or below can fit, even by preempting
            below = level + 1
            for key in waiting:
                job = key[-1]
                entry = choice_of.get(job)
                if entry is None:
                    entry = self._choice_entry(view, job)
                ident, n, choices = entry
                if ident in failed:
                    continue
                for pool, gpu_type in choices:
                    room = free[pool]
                    if room >= n:
                        if not admitted:
                            free = dict(free)
                        free[pool] = room - n
                        left -= n
                        admitted.append((job, gpu_type))
                        break
                    counts = held[pool]
                    room += sum(counts[below:])
                    if room >= n or (
                        room + counts[level] >= n
                        and room + self._held_after(level, pool, key, now, cache) >= n
                    ):
                        return admitted, (level, key, free)
                else:
                    failed.add(ident)
        return admitted, None

    def _choices(self, view: ClusterView, job: JobState) -> tuple[tuple[Pool, str], ...]:
        entry = self._choice_of.get(job)
        if entry is None:
            entry = self._choice_entry(view, job)
        return entry[2]

    def _choice_entry(
        self, view: ClusterView, job: JobState
    ) -> tuple[int, int, tuple[tuple[Pool, str], ...]]:
        """(id of the job's `_choices` answer, its GPU count, that answer), kept per job."""
        choices = TiresiasBase._choices(self, view, job)
        entry = self._choice_of[job] = (id(choices), job.spec.num_gpus, choices)
        return entry

    def _walk_from(
        self,
        view: ClusterView,
        now: float,
        cache: dict,
        level: int,
        key: tuple,
        free: dict[Pool, int],
    ) -> tuple[list[JobState], list[tuple[JobState, str]]]:
        """The walk (`TiresiasBase._admit`) from the waiting job with `key` in queue `level`
        on: everything ranked above it keeps its GPUs (nothing was preempted up to there),
        so the GPUs it and the jobs below it share are the free ones plus those the running
        jobs below it hold. Returns the running jobs dropped and the waiting jobs admitted,
        each in priority order — the walk's answer, computed pool by pool:

        In a pool, a running job keeps its GPUs unless waiting jobs ranked above it took
        some of that pool's (what is left there is the free GPUs, plus those of the running
        jobs from it on, plus those of the ones dropped before it, less what waiting jobs
        took). So waiting jobs are taken in priority order, and a pool's running jobs are
        counted only up to each waiting job that asks the pool: kept at once (their GPUs
        summed) while no waiting job has taken from the pool, one at a time after. A pool no
        waiting job took from drops nobody. The walk's early stops (no GPU left, or nothing
        running left and too few GPUs for any waiting job) only cut short what it finds
        anyway: then every running job left is dropped, and no waiting job fits.

        What is left in a pool only shrinks down the order, so a waiting job that fits in
        none of its pools fails so for every later job with the same GPU count and pools
        (`failed`), which is skipped without counting the running jobs up to it: nothing is
        taken from those pools in between, so counting them later drops the same jobs."""
        choice_of = self._choice_of
        waiting = self._waiting[level]
        pools: dict[Pool, list] = {}  # pool → `_walk_pool`'s state
        dropped: list[tuple[int, tuple]] = []  # (queue, key) of each running job dropped
        admitted: list[tuple[JobState, str]] = []
        advance = self._walk_advance
        failed: set[int] = set()  # ids of `_choices` answers (one per GPU count and pools)
        for at_level in range(level, self._last + 1):
            keys = waiting[bisect.bisect_left(waiting, key) :] if at_level == level else None
            for other in self._waiting[at_level] if keys is None else keys:
                job = other[-1]
                entry = choice_of.get(job)
                if entry is None:
                    entry = self._choice_entry(view, job)
                ident, n, choices = entry
                if ident in failed:
                    continue
                for pool, gpu_type in choices:
                    state = pools.get(pool)
                    if state is None:
                        state = pools[pool] = self._walk_pool(
                            pool, level, key, free[pool], now, cache
                        )
                    if advance(state, at_level, other, dropped) >= n:
                        state[3] -= n
                        state[4] += n
                        admitted.append((job, gpu_type))
                        break
                else:
                    failed.add(ident)
        for state in pools.values():
            if state[4]:  # what waiting jobs took may drop running jobs after the last one
                advance(state, self._last + 1, (), dropped)
        dropped.sort()
        return [other[-1] for _, other in dropped], admitted

    def _walk_pool(
        self, pool: Pool, level: int, key: tuple, free: int, now: float, cache: dict
    ) -> list:
        """A pool's state at the start of the walk from `key` in queue `level`: its running
        jobs below that key, queue by queue ([queue, keys, GPU counts, first index, their
        GPUs]), and the GPUs they and the free ones make; then where the walk is in them
        (run at, index), what is left, what waiting jobs took, and what ranks the lower
        queues when the walk first needs their order (`_walk_advance`): until then a lower
        queue is only its GPUs held (`_held`, the sum of its jobs')."""
        runs: list[list] = []
        room = free
        keys, gpus = self._running_sorted(level, pool, now, cache)
        start = bisect.bisect_right(keys, key)
        if start < len(keys):
            runs.append([level, keys, gpus, start, 0])
            room += sum(gpus[start:])
        held = self._held[pool]
        for at_level in range(level + 1, self._last + 1):
            if held[at_level]:
                runs.append([at_level, None, None, 0, held[at_level]])
                room += held[at_level]
        return [runs, 0, runs[0][3] if runs else 0, room, 0, (pool, now, cache)]

    def _walk_advance(self, state: list, level: int, key: tuple, dropped: list) -> int:
        """Count a pool's running jobs ranked above (`level`, `key`) not counted yet: each
        keeps its GPUs if what is left covers them, else is dropped. Returns what is left.
        A lower queue passed whole while nobody took from the pool is counted by its GPUs
        held, without ranking its jobs."""
        runs, at, index, room, taken, where = state
        while at < len(runs):
            run = runs[at]
            run_level, keys, gpus = run[0], run[1], run[2]
            if run_level > level:
                break
            if keys is None:
                if not taken and run_level < level:  # every one keeps its GPUs
                    room -= run[4]
                    at += 1
                    index = runs[at][3] if at < len(runs) else 0
                    continue
                keys, gpus = run[1], run[2] = self._running_sorted(run_level, *where)
            stop = len(keys) if run_level < level else bisect.bisect_left(keys, key, index)
            if not taken:  # nobody took from this pool yet: every one keeps its GPUs
                room -= sum(gpus[index:stop])
            else:
                for i in range(index, stop):
                    if room >= gpus[i]:
                        room -= gpus[i]
                    else:
                        dropped.append((run_level, keys[i]))
            if stop < len(keys):
                index = stop
                break
            at += 1
            index = runs[at][3] if at < len(runs) else 0
        state[1], state[2], state[3] = at, index, room
        return room

    def _done(self, view: ClusterView, alloc: Allocation | None) -> Allocation | None:
        timers = self._timers
        if timers:
            while timers and self._stint.get(timers[0][2]) != timers[0][3]:
                heapq.heappop(timers)
            if timers:
                view.wake_at(timers[0][0])
        # A time asked for before is either still due or past: asking again does nothing.
        check = self._next_check
        if check != self._asked and check < math.inf:
            self._asked = check
            view.wake_at(check)
        return alloc


class TiresiasGittins(Tiresias):
    """Tiresias-G: 2D-Gittins index within priority queues on GPU-time (NSDI 2019), ranked
    by the authors' tabulated index (`AuthorsGittinsTable`; `literal=True`: the paper's
    formula, `GittinsIndex`, on the service still to come)."""

    name = "tiresias-gittins"

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation_knob: float | None = None,
        placement: str = "sensitive",
        sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
        delta: float = GITTINS_DELTA,
        prior: Sequence[float] | None = None,
        literal: bool = False,
    ) -> None:
        super().__init__(thresholds, starvation_knob, placement, sensitive_slowdown, literal)
        check_gittins(self.name, delta, prior)
        self.delta = delta
        self.prior = prior

    def start(self, view: ClusterView) -> None:
        """Empty queues and timers, the index, and the arrays of running services."""
        super().start(view)
        self._gittins: GittinsIndex | AuthorsGittinsTable
        # the authors' table as (sample sizes, index per step) when ranking by it
        self._steps: tuple[list[float], list[float]] | None = None
        if self.literal:
            self._gittins = GittinsIndex(prior_samples(self.prior), self.delta)
            self._slots = True
        else:
            table = self._gittins = AuthorsGittinsTable(prior_samples(self.prior), self.delta)
            # samples as floats: the same comparisons, without mixing int and float
            self._steps = ([float(v) for v in table.data], table.table)
        # job → (time before which its step cannot change, its key by the table, its step)
        # (`_steps`)
        self._memo: dict[JobState, tuple[float, tuple, int]] = {}
        # (queue, pool) → (the earliest of its jobs' times in `_memo`, its sorted jobs and
        # their GPU counts): kept while those jobs stay in the queue and pool
        self._sorted: dict[tuple[int, Pool], tuple[float, list[tuple], list[int]]] = {}

    def _runs(self, job: JobState, level: int, pool: Pool) -> None:
        super()._runs(job, level, pool)
        self._sorted.pop((level, pool), None)

    def _unrun(self, job: JobState, level: int) -> None:
        self._sorted.pop((level, self._pool_of[job]), None)
        super()._unrun(job, level)

    def _stint_ended(self, job: JobState) -> None:
        super()._stint_ended(job)
        self._memo.pop(job, None)

    def _table_ranked(self, keys: list[tuple], now: float) -> tuple[float, list[tuple], list[int]]:
        """Running jobs (keys of `_run`, in their order: submission) as (−index, key) at `now`
        by the authors' table, sorted, with their GPU counts, and a time before which none of
        their steps changes. A stable sort on the index alone gives the order of the whole
        keys, as ties keep the submission order.

        The table is a step function: a job's step, as `many` finds it, one job at a time
        (only one queue's and pool's jobs are needed). A job's service only grows, so its
        step holds until its service reaches the next sample: that time, from its stint's
        parameters, less a margin far above float rounding (as in `crossings.py`), is kept
        with its key and step (`_memo`, dropped when its stint ends): the key is reused
        before that time, and after it the step is searched for from the kept one on."""
        (data, table), stint_of, memo = self._steps, self._stint_of, self._memo  # type: ignore[misc]
        top = len(data)
        find = bisect.bisect_right
        out: list[tuple] = []
        until = math.inf
        for key in keys:
            job = key[-1]
            hit = memo.get(job)
            if hit is not None:
                when = hit[0]
                if now < when:
                    out.append(hit[1])
                    if when < until:
                        until = when
                    continue
            base, since, rate = stint_of[job]
            service = base + rate * (now - since)
            if hit is None:
                step = find(data, service)
            else:  # its service only grew since its step was found: from that step on
                step = hit[2]
                if data[step] <= service:
                    step += 1
                    if step < top and data[step] <= service:
                        step = find(data, service, step + 1)
            ranked = (-table[step], *key)
            out.append(ranked)
            if step < top:
                reach = data[step]
                when = since + (reach - base) / rate
                when -= _MARGIN * (abs(when) + abs(since) + (abs(reach) + abs(base)) / rate + 1.0)
                if when < until:
                    until = when
            else:
                when = math.inf
            memo[job] = (when, ranked, step)
        out.sort(key=_rank_of)  # stable: ties keep the submission order
        return until, out, [ranked[-1].spec.num_gpus for ranked in out]

    def _fifo(self, job: JobState, running: bool) -> tuple:
        """Ties between equal indices: `literal`, FIFO by first start; otherwise the
        authors' order, earlier submission first."""
        if self.literal:
            return super()._fifo(job, running)
        return (job.spec.submit_time, job.spec.index)

    def _wait_key(self, job: JobState, service: float) -> tuple:
        # A waiting job's service does not change, so neither does its index.
        return (-self._gittins(service), *self._fifo(job, False), job)

    def _ranks(self, now: float, cache: dict) -> list[float]:
        """−index at `now` of every running job, by slot (`_slot`): computed at once over
        the whole slot arrays (a free slot's value is never read)."""
        ranks = cache.get("ranks")
        if ranks is None:
            service = self._base + self._gpus * (now - self._since)
            ranks = cache["ranks"] = (-self._gittins.many(service)).tolist()
        return ranks

    def _running_sorted(
        self, level: int, pool: Pool, now: float, cache: dict
    ) -> tuple[list[tuple], list[int]]:
        """Running jobs of one queue and pool as (−index, first start, job order, job) at
        `now`, sorted, with their GPU counts; computed once per scheduling call."""
        entry = cache.get((level, pool))
        if entry is None:
            keys, gpus = self._run[level].get(pool, ([], []))
            if self._steps is None:
                ranks, slot = self._ranks(now, cache), self._slot
                pairs = [
                    ((ranks[slot[key[-1]]], *key), n) for key, n in zip(keys, gpus, strict=True)
                ]
            else:
                kept = self._sorted.get((level, pool))
                if kept is None or now >= kept[0]:
                    kept = self._sorted[(level, pool)] = self._table_ranked(keys, now)
                entry = cache[(level, pool)] = (kept[1], kept[2])
                return entry
            pairs.sort()
            entry = cache[(level, pool)] = ([key for key, _ in pairs], [n for _, n in pairs])
        return entry
