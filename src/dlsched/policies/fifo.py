"""FIFO: first come, first served, gang-scheduled, never preempts (YARN capacity scheduler).

Paper: the "YARN-CS" baseline of Tiresias (Gu et al., NSDI 2019, §6) and Gandiva (Xiao et
al., OSDI 2018) — Hadoop YARN's capacity scheduler with strict FIFO within a queue.

Faithful: strict head-of-line blocking (the head job waits until its whole gang fits, and no
job behind it may start); jobs are placed on the fewest nodes of one GPU type.
Options:
- ``backfill="greedy"``: later jobs that fit start when the head is blocked (Tiresias'
  simulator's ``fjf``, "fit job first");
- ``backfill="easy"`` (or True): EASY backfilling (Lifka 1995) — a later job may start only
  if it does not delay the head job's reservation, judged by the estimator's remaining times.
Simplified: the EASY reservation counts GPUs across types and ignores node boundaries, and
it reserves GPUs only: a head job blocked on CPU or host memory (a node's GPUs free, not its
cores) gets no reservation of them, so a backfilled job may take them and delay it.

Jobs without GPUs (``num_gpus`` 0, CPU/memory only) are placed under every mode. Under EASY
a head without GPUs is reserved CPU and memory instead: its shadow time is the first
estimated finish by which a node it may use has room for it, each earlier job's hold given
back (`ClusterView.host_fits_at`), and only jobs estimated to end by then may backfill. A
job without GPUs is backfilled only when it is estimated to end by the shadow time, never
on spare GPUs.

Speed: with an estimator whose estimates of a job do not drift while it waits or runs (the
oracle and the noisy one), backfilling is incremental — the waiting jobs are indexed by GPU
request and estimated remaining time (`PendingIndex`), so a call visits only the jobs that
could start, and the reservation walks running jobs in estimated-finish order instead of
re-estimating them all. The decisions are those of the plain scan, which other estimators
(the learned one, plug-ins) still use.
"""

from __future__ import annotations

import bisect
import sys
from collections import deque

from dlsched.engine.ledger import Pool
from dlsched.engine.view import ClusterView
from dlsched.jobs import PENDING, RUNNING, JobState
from dlsched.perf.estimator import NoisyEstimator, OracleEstimator
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

_BACKFILL = {
    False: None,
    None: None,
    "none": None,
    "greedy": "greedy",
    True: "easy",
    "easy": "easy",
}

_INF = float("inf")
_LARGEST = sys.float_info.max  # a live job's key in the index; a removed one's is _INF
#: Estimators whose remaining time of a waiting job is fixed and of a running job moves only
#: with rounding (rates fixed per stint): the incremental backfill is exact for them. A noisy
#: estimator qualifies only without rate noise (`_is_static`): with `sigma_throughput` > 0 its
#: rate differs from the one progress follows, so a running job's estimated finish drifts.
_STATIC_ESTIMATORS = (OracleEstimator, NoisyEstimator)
#: Relative slack between an estimated finish time kept from a job's start and the same time
#: recomputed later (they differ by float rounding, ~1e-15 relative).
_SLACK = 1e-9


def _is_static(estimator: object) -> bool:
    """Whether the incremental backfill is exact under `estimator` (see _STATIC_ESTIMATORS)."""
    if type(estimator) not in _STATIC_ESTIMATORS:
        return False
    return getattr(estimator, "sigma_throughput", 0.0) == 0.0


class _Bucket:
    """The jobs of one GPU request, in arrival order, under a min segment tree of keys."""

    __slots__ = ("indexes", "tree", "size", "live")

    def __init__(self) -> None:
        self.indexes: list[int] = []  # job order (spec index) of each slot, increasing
        self.size = 16  # leaves, a power of two
        self.tree: list[float] = [_INF] * 32
        self.live = 0

    def full(self) -> bool:
        return len(self.indexes) == self.size

    def append(self, index: int, key: float) -> int:
        slot = len(self.indexes)
        self.indexes.append(index)
        self.set(slot, key)
        self.live += 1
        return slot

    def set(self, slot: int, key: float) -> None:
        tree = self.tree
        i = slot + self.size
        tree[i] = key
        i >>= 1
        while i:
            left, right = tree[2 * i], tree[2 * i + 1]
            low = left if left < right else right
            if tree[i] == low:
                break  # its ancestors are unchanged too
            tree[i] = low
            i >>= 1

    def rebuild(self) -> list[int]:
        """Drop removed slots and resize to twice the live jobs (at least 16 leaves); the
        job order of each slot afterwards."""
        keys = self.tree[self.size : self.size + len(self.indexes)]
        kept = [(index, key) for index, key in zip(self.indexes, keys, strict=True) if key < _INF]
        size = 16
        while size < 2 * len(kept):
            size *= 2
        self.size = size
        tree = self.tree = [_INF] * (2 * size)
        self.indexes = [index for index, _ in kept]
        for slot, (_, key) in enumerate(kept):
            tree[size + slot] = key
        for i in range(size - 1, 0, -1):
            left, right = tree[2 * i], tree[2 * i + 1]
            tree[i] = left if left < right else right
        return self.indexes

    def first(self, after: int, limit: float) -> int | None:
        """The first slot holding a job later than `after` (job order) with key <= `limit`."""
        tree, size = self.tree, self.size
        if tree[1] > limit:
            return None
        lo = bisect.bisect_right(self.indexes, after)
        if lo >= len(self.indexes):
            return None
        i = lo + size
        while True:
            if tree[i] <= limit:
                while i < size:  # down to the leftmost leaf within the limit
                    i *= 2
                    if tree[i] > limit:
                        i += 1
                return i - size
            while i & 1:  # a right child: up until a left child, then on to its sibling
                i >>= 1
            if i == 0:
                return None
            i += 1


class PendingIndex:
    """Waiting jobs by GPU request, in arrival order, each with a key (its estimated
    remaining time): finds the first job after a position that backfilling may try in
    O(log n) per distinct GPU request instead of a scan of the queue.

    A job may be tried when it could fit the free GPUs (`num_gpus <= free`; a fractional job
    always could) and either its key is at most `limit` or `0 < num_gpus <= extra` (a job
    without GPUs only by its key)."""

    def __init__(self) -> None:
        self._buckets: dict[tuple[int, bool], _Bucket] = {}
        self._requests: list[tuple[int, bool]] = []  # bucket keys, sorted
        self._where: dict[int, tuple[_Bucket, int]] = {}
        self._jobs: dict[int, JobState] = {}
        self._keys: dict[int, float] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    def __contains__(self, job: JobState) -> bool:
        return job.spec.index in self._jobs

    def add(self, job: JobState, key: float) -> None:
        """Index a waiting job; jobs come in increasing job order (`spec.index`)."""
        spec = job.spec
        request = (spec.num_gpus, spec.fractional)
        bucket = self._buckets.get(request)
        if bucket is None:
            bucket = self._buckets[request] = _Bucket()
            bisect.insort(self._requests, request)
        if bucket.full():
            for slot, index in enumerate(bucket.rebuild()):
                self._where[index] = (bucket, slot)
        slot = bucket.append(spec.index, key if key < _INF else _LARGEST)
        self._where[spec.index] = (bucket, slot)
        self._jobs[spec.index] = job
        self._keys[spec.index] = key

    def key(self, job: JobState) -> float:
        """The key the job was indexed with."""
        return self._keys[job.spec.index]

    def remove(self, job: JobState) -> None:
        """Forget a job (it started)."""
        index = job.spec.index
        bucket, slot = self._where.pop(index)
        del self._jobs[index]
        del self._keys[index]
        bucket.set(slot, _INF)
        bucket.live -= 1

    def first(self, after: int, limit: float, extra: int, free: int) -> JobState | None:
        """The first job after job order `after` that may be tried (see the class)."""
        best: int | None = None
        limit = limit if limit < _LARGEST else _LARGEST  # a removed job's key is _INF
        for request in self._requests:
            n, fractional = request
            if n > free and not fractional:
                continue  # it cannot fit: placing it would fail
            bucket = self._buckets[request]
            if not bucket.live:
                continue
            slot = bucket.first(after, _LARGEST if 0 < n <= extra else limit)
            if slot is not None:
                index = bucket.indexes[slot]
                if best is None or index < best:
                    best = index
        return None if best is None else self._jobs[best]


class _RunningEnds:
    """Running jobs sorted by the estimated finish time computed when first seen running.
    Re-estimated later, that time moves by rounding only (a job's rate is fixed for its
    stint, and FIFO never packs or preempts) or, once a job overruns it, becomes the current
    time; the order stays the same, so an exact reservation needs to re-estimate only the
    jobs up to the one that frees enough GPUs."""

    def __init__(self) -> None:
        self._ends: list[tuple[float, int, int]] = []  # (estimated finish, job order, version)
        self._jobs: dict[int, JobState] = {}

    def add(self, job: JobState, end: float) -> None:
        spec = job.spec
        self._jobs[spec.index] = job
        bisect.insort(self._ends, (end, spec.index, job.version))

    def _current(self, i: int, view: ClusterView) -> bool:
        """Whether entry `i` exists after dropping the stale entries from `i` on."""
        ends, jobs = self._ends, self._jobs
        while i < len(ends):
            _, index, version = ends[i]
            job = jobs[index]
            if job.status == RUNNING and job.version == version:
                return True
            del ends[i]
            if job.status == RUNNING:  # its allocation changed: estimate it afresh
                now = view.now
                self.add(job, now + view.estimator.remaining_time(job, now))
                raise _Restart
            del jobs[index]
        return False

    def reservation(
        self, view: ClusterView, need: int, free: int, fresh: list[tuple[float, int]]
    ) -> tuple[float, int]:
        """(shadow time, GPUs spare then) for a head job needing `need` GPUs with `free`
        free now, counting the running jobs and `fresh`, sorted (exact finish, GPUs) of
        jobs started in this call: the answer of the full sorted walk."""
        while True:
            try:
                return self._reservation(view, need, free, fresh)
            except _Restart:
                continue

    def _reservation(
        self, view: ClusterView, need: int, free: int, fresh: list[tuple[float, int]]
    ) -> tuple[float, int]:
        ends, jobs = self._ends, self._jobs
        i = f = 0
        have = free
        while True:  # estimated-order walk to where `need` GPUs are free
            running = self._current(i, view)
            if running and (f == len(fresh) or ends[i][0] <= fresh[f][0]):
                end = ends[i][0]
                have += jobs[ends[i][1]].spec.num_gpus
                i += 1
            elif f < len(fresh):
                end, n = fresh[f]
                have += n
                f += 1
            else:
                return _INF, 0  # all of them never free enough
            if have >= need:
                break
        # The exact walk stops at a job whose exact finish is within rounding of this one's
        # (a job past its estimated finish is estimated to end now: its remaining work is
        # clamped at 0). Jobs clearly before that zone only add their GPUs; the jobs in it
        # are re-estimated and sorted exactly.
        now = view.now
        middle = max(end, now)
        slack = _SLACK * (abs(middle) + 1.0)
        low, high = middle - slack, middle + slack
        zone: list[tuple[float, int]] = []
        remaining = view.estimator.remaining_time
        i = 0
        while self._current(i, view):
            estimate, index, _ = ends[i]
            if estimate > high:
                break
            job = jobs[index]
            if estimate < low and now < low:
                free += job.spec.num_gpus
            else:
                zone.append((now + remaining(job, now), job.spec.num_gpus))
            i += 1
        for end, n in fresh:
            if end > high:
                break
            if end < low:
                free += n
            else:
                zone.append((end, n))
        zone.sort()
        for end, n in zone:
            free += n
            if free >= need:
                return end, free - need
        raise AssertionError("unreachable: the estimated walk freed enough")


class _Restart(Exception):
    """A running job's allocation changed since it was listed: walk again."""


@register("fifo")
class Fifo(BasePolicy):
    """First-in first-out with strict head-of-line blocking (YARN-CS); backfill optional."""

    name = "fifo"
    # Never preempts, packs or keeps timers: a call while no waiting job fits changes nothing.
    call_when_nothing_fits = False
    # Every job, one without GPUs included, goes through `view.place`.
    places_jobs_without_gpus = True

    def __init__(self, backfill: bool | str = False, placement: str = "consolidated") -> None:
        if backfill not in _BACKFILL:
            raise ValueError(f"fifo: backfill must be False, 'greedy' or 'easy', not {backfill!r}")
        self.backfill = _BACKFILL[backfill]
        self.placement = placement

    def start(self, view: ClusterView) -> None:
        # The queue in arrival order; jobs started by backfilling stay in it, marked in
        # `_gone`, until they reach its head (removal from the middle of a deque is O(n)).
        self._queue: deque[JobState] = deque()
        self._gone: set[int] = set()
        self._arrived: list[JobState] = []  # not yet in the index (keyed at the next call)
        self._index = PendingIndex()
        self._running = _RunningEnds()
        self._started_last: list[JobState] = []
        self._fast: bool | None = None  # decided at the first call, from the estimator
        self._blocked: JobState | None = None  # the head whose placement failed last call
        self._pools_of: JobState | None = None  # the job `_pools` were found for
        self._pools: tuple[Pool, ...] | None = None

    def on_arrival(self, job: JobState) -> None:
        self._queue.append(job)
        if self.backfill is not None:
            self._arrived.append(job)

    def idle(self) -> bool:
        """True when a scheduling call would change nothing: no job waits. It stays True
        until the next `on_arrival` (`per-vc` then skips the call)."""
        return len(self._queue) == len(self._gone)

    def waiting_for(self, view: ClusterView) -> tuple[Pool, ...] | None:
        """(Engine, after a call) the pools whose freed GPUs could let the next call start a
        job; None when it might anyway. Without backfilling only the head may start, and an
        arrival joins behind it: while its placement failed and its pools get no GPUs back,
        every call is a no-op (`BasePolicy.call_when_nothing_fits`)."""
        head = self._blocked
        if head is None or self.backfill is not None:
            return None
        if head is not self._pools_of:  # the same head is often blocked for many calls
            self._pools_of = head
            self._pools = view.waiting_pools(head, self.placement)
        return self._pools

    def schedule(self, view: ClusterView):
        alloc = view.allocation()
        queue, gone = self._queue, self._gone
        if self.backfill is None:  # only the head may start (and nothing is in `_gone`)
            place, placement = view.place, self.placement
            while queue:
                head = queue[0]
                gpus = place(head, None, placement)
                if gpus is None:
                    self._blocked = head
                    return alloc
                alloc[head] = gpus
                queue.popleft()
            self._blocked = None
            return alloc
        started: list[JobState] = []
        while queue:
            head = queue[0]
            if gone and head.spec.index in gone:
                gone.discard(head.spec.index)
                queue.popleft()
                continue
            gpus = view.place(head, strategy=self.placement)
            if gpus is None:
                self._blocked = head
                break
            alloc[head] = gpus
            started.append(queue.popleft())
        else:
            self._blocked = None
        if self._fast is None:
            self._fast = _is_static(view.estimator)
        if self._fast:
            self._admit(view, started)
        if queue and view.free_gpus() >= view.min_pending_demand():
            if self._fast:
                self._backfill_indexed(view, alloc, started)
            else:
                self._backfill(view, alloc, started)
        return alloc

    # ---- incremental backfilling (static estimators) --------------------------------------
    def _admit(self, view: ClusterView, started: list[JobState]) -> None:
        """Bring the index and the running list up to date at the start of a call."""
        now = view.now
        remaining = view.estimator.remaining_time
        index = self._index
        for job in self._arrived:
            index.add(job, remaining(job, now))
        self._arrived.clear()
        for job in self._started_last:
            if job.status == RUNNING:
                self._running.add(job, now + remaining(job, now))
        self._started_last = list(started)
        for job in started:
            if job in index:
                index.remove(job)

    def _backfill_indexed(self, view: ClusterView, alloc, started: list[JobState]) -> None:
        """`_backfill`'s decisions, visiting only jobs the index says may start."""
        head = self._queue[0]
        if self.backfill == "easy" and not head.spec.num_gpus:
            shadow, extra = self._host_reservation(view, head, started)
        elif self.backfill == "easy":
            shadow, extra = self._reservation_indexed(view, head, started)
        else:
            shadow, extra = _INF, 0
        now = view.now
        if shadow == _INF:
            limit = _LARGEST
        else:  # a little above, so that rounding never hides a job; checked exactly below
            limit = min(_LARGEST, shadow - now + _SLACK * (abs(shadow) + abs(now) + 1.0))
        index, gone = self._index, self._gone
        cursor = head.spec.index
        free = view.free_gpus()
        while free >= view.min_pending_demand():
            job = index.first(cursor, limit, extra, free)
            if job is None:
                break
            if job.status != PENDING:
                break  # as the scan: the jobs from here on stay queued
            cursor = job.spec.index
            n = job.spec.num_gpus
            in_time = now + index.key(job) <= shadow
            if in_time or 0 < n <= extra:  # a job without GPUs frees no spare GPU's worth
                gpus = view.place(job, strategy=self.placement)
                if gpus is not None:
                    alloc[job] = gpus
                    index.remove(job)
                    gone.add(cursor)
                    self._started_last.append(job)
                    if not in_time:
                        extra -= n
                    free = view.free_gpus()

    def _reservation_indexed(
        self, view: ClusterView, head: JobState, started: list[JobState]
    ) -> tuple[float, int]:
        """`_reservation` from the running jobs in estimated-finish order."""
        now = view.now
        remaining = view.estimator.remaining_time
        fresh = sorted((now + remaining(job, now), job.spec.num_gpus) for job in started)
        return self._running.reservation(view, head.spec.num_gpus, view.free_gpus(), fresh)

    # ---- the plain scan (any estimator) ---------------------------------------------------
    def _backfill(self, view: ClusterView, alloc, started: list[JobState]) -> None:
        gone = self._gone
        queue = [job for job in self._queue if job.spec.index not in gone]
        gone.clear()
        head = queue[0]
        if self.backfill == "easy" and not head.spec.num_gpus:
            shadow, extra = self._host_reservation(view, head, started)
        elif self.backfill == "easy":
            shadow, extra = self._reservation(view, head, started)
        else:
            shadow, extra = _INF, 0
        now = view.now
        kept: deque[JobState] = deque([head])
        for i in range(1, len(queue)):
            job = queue[i]
            if job.status != PENDING or view.free_gpus() < view.min_pending_demand():
                kept.extend(queue[i:])
                break
            n = job.spec.num_gpus
            in_time = now + view.estimator.remaining_time(job, now) <= shadow
            if in_time or 0 < n <= extra:
                gpus = view.place(job, strategy=self.placement)
                if gpus is not None:
                    alloc[job] = gpus
                    if not in_time:
                        extra -= n
                    continue
            kept.append(job)
        self._queue = kept

    @staticmethod
    def _host_reservation(
        view: ClusterView, head: JobState, started: list[JobState]
    ) -> tuple[float, int]:
        """`_reservation` of a head without GPUs: when a node it may use has room for its CPU
        and memory (`ClusterView.host_fits_at`), and no spare GPUs then (later jobs backfill
        only when in time: a job on spare GPUs could hold the CPU the head needs)."""
        now = view.now
        remaining = view.estimator.remaining_time
        holders = {job.spec.index: job for job in (*view.running.values(), *started)}
        ends = sorted(((now + remaining(job, now), index), job) for index, job in holders.items())
        return view.host_fits_at(head, ((end, job) for (end, _), job in ends)), 0

    @staticmethod
    def _reservation(
        view: ClusterView, head: JobState, started: list[JobState]
    ) -> tuple[float, int]:
        """When the head job can start (shadow time) and GPUs spare at that time, counting
        the jobs already running and those started earlier in this call."""
        now = view.now
        free = view.free_gpus()
        holders = [*view.running.values(), *started]
        ends = sorted(
            (now + view.estimator.remaining_time(job, now), job.spec.num_gpus) for job in holders
        )
        for end, n in ends:
            free += n
            if free >= head.spec.num_gpus:
                return end, free - head.spec.num_gpus
        return _INF, 0
