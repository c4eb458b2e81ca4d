"""Shortest job first (non-preemptive) and shortest remaining time first (preemptive).

Both order jobs by the *estimator's* view (`view.estimator`): with the oracle they are the
classic clairvoyant baselines (Tiresias' simulator's ``shortest``; Tiresias, NSDI 2019, §6
uses SRTF as the reference that needs perfect knowledge); with a noisy estimator they show
what mis-estimation costs.

- `sjf`: the pending job with the shortest estimated duration (on the cluster's fastest GPU
  type for it) starts first; a job that does not fit is skipped, not waited for. Never preempts.
- `srtf`: at every scheduling point the jobs with the shortest estimated remaining time hold
  the GPUs: a pending job preempts running jobs with strictly longer remaining time when that
  frees enough GPUs of one type for it. Preempted jobs keep their progress and pay the
  configured restart overhead when they resume.
Simplified: remaining time is judged on the fastest type, not on the type a job would get.
Jobs without GPUs (``num_gpus`` 0, CPU/memory only) are ordered and started as any other,
but `srtf` preempts only for GPUs: such a job never triggers a preemption (a short one waits
behind a long job holding the CPU it needs) and is never preempted (it frees no GPU).

Speed: within one scheduling call, once a job fails to start (and, under SRTF, to preempt),
every later job with the same placement-relevant fields (VC, GPU request, model, type
constraint) fails too until GPUs are freed — free GPUs only shrink and estimated lengths only
grow along the heap — so such jobs are deferred without trying their placement again. The
decisions are those of trying every job.
"""

from __future__ import annotations

import heapq

from dlsched.engine.placement import best_fit, consolidated, get_placer, spread, yarn
from dlsched.engine.view import ClusterView
from dlsched.jobs import FINISHED, PENDING, RUNNING, JobSpec, JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

#: (key, submit time, job order, job, placement group id: -1 for a job of its own)
_Item = tuple[float, float, int, JobState, int]

#: Placers that, once they fail for a request in a pool, fail for it while that pool only
#: loses free GPUs (fewer free GPUs per node never makes a gang fit). Plug-in placers are not
#: assumed to be, and every job is then tried.
_MONOTONE_PLACERS = frozenset((consolidated, best_fit, spread, yarn))


def placement_group(spec: JobSpec) -> tuple | None:
    """Jobs equal in everything `ClusterView.place` looks at (None: a job that is its own
    group, fractional or with its own measured durations)."""
    if spec.fractional or spec.type_durations is not None:
        return None
    return (
        spec.vc,
        spec.num_gpus,
        spec.min_gpus,
        spec.max_gpus,
        spec.model,
        spec.gpu_constraint,
        spec.gpu_type,
    )


class _ShortestFirst(BasePolicy):
    """Pending jobs in a heap keyed by (estimate, submit time, job order)."""

    places_jobs_without_gpus = True  # every job goes through `view.place`

    def __init__(self, placement: str = "consolidated") -> None:
        self.placement = placement

    def start(self, view: ClusterView) -> None:
        self._heap: list[_Item] = []
        self._arrived: list[JobState] = []
        self._monotone: bool | None = None  # whether failures may be remembered in a call
        self._groups: dict[tuple, int] = {}  # placement group → its id

    def idle(self) -> bool:
        """True when a scheduling call would change nothing: no job waits. It stays True
        until the next `on_arrival` (`per-vc` then skips the call)."""
        return not self._heap and not self._arrived

    def _remember_failures(self) -> bool:
        if self._monotone is None:
            placement = self.placement  # a registered name or a strategy object
            placer = get_placer(placement) if isinstance(placement, str) else placement
            self._monotone = placer in _MONOTONE_PLACERS
        return self._monotone

    def _key(self, view: ClusterView, job: JobState) -> float:
        raise NotImplementedError

    def _item(self, view: ClusterView, job: JobState) -> _Item:
        return self._entry(self._key(view, job), job)

    def _entry(self, key: float, job: JobState) -> _Item:
        spec = job.spec
        group = placement_group(spec)
        if group is None or not self._remember_failures():
            return (key, spec.submit_time, spec.index, job, -1)
        number = self._groups.setdefault(group, len(self._groups))
        return (key, spec.submit_time, spec.index, job, number)

    def on_arrival(self, job: JobState) -> None:
        self._arrived.append(job)  # keyed at the next schedule(), where the estimator is

    def _admit_arrivals(self, view: ClusterView) -> None:
        for job in self._arrived:
            heapq.heappush(self._heap, self._item(view, job))
        self._arrived.clear()


@register("sjf")
class ShortestJobFirst(_ShortestFirst):
    """Non-preemptive shortest job first, by estimated duration."""

    name = "sjf"
    # Non-preemptive: a call while no waiting job fits changes nothing.
    call_when_nothing_fits = False

    def _key(self, view: ClusterView, job: JobState) -> float:
        return view.estimator.duration(job.spec)

    def schedule(self, view: ClusterView):
        self._admit_arrivals(view)
        alloc = view.allocation()
        heap = self._heap
        skipped: list[_Item] = []
        failed: set[int] = set()  # placement groups that did not fit in this call
        # Both change only when a job starts, so they are read again only then.
        free, least = view.free_gpus(), view.min_pending_demand()
        while heap and free >= least:
            item = heapq.heappop(heap)
            job = item[3]
            if failed and item[4] in failed:
                skipped.append(item)
                continue
            gpus = view.place(job, strategy=self.placement)
            if gpus is None:
                skipped.append(item)
                if item[4] >= 0:
                    failed.add(item[4])
                continue
            alloc[job] = gpus
            free, least = view.free_gpus(), view.min_pending_demand()
        for item in skipped:
            heapq.heappush(heap, item)
        return alloc


@register("srtf")
class ShortestRemainingTimeFirst(_ShortestFirst):
    """Preemptive shortest remaining time first, by estimated remaining time."""

    name = "srtf"

    def start(self, view: ClusterView) -> None:
        super().start(view)
        # Running jobs by estimated finish time, latest first, one heap per GPU pool (only
        # jobs of the arriving job's pool can make room for it). While a job keeps its GPUs
        # its estimated finish time (remaining overhead included) is fixed, so remaining-time
        # order needs no recomputation.
        self._running: dict[object, list[tuple[float, float, int, JobState]]] = {}
        # A heap's length above which its stale entries are dropped (per heap: `_push`).
        self._prune_at: dict[object, int] = {}
        self._started_last: list[JobState] = []
        self._preemptions = 0  # counts `_make_room`'s preemptions (freed GPUs)

    def idle(self) -> bool:
        """True when a scheduling call would change nothing: no job waits and none started
        in the last call is still to be listed as running; it stays True until the next
        `on_arrival` (`per-vc` then skips the call)."""
        return not self._heap and not self._arrived and not self._started_last

    def _key(self, view: ClusterView, job: JobState) -> float:
        return view.estimator.remaining_time(job, view.now)

    def schedule(self, view: ClusterView):
        self._admit_arrivals(view)
        now = view.now
        for job in self._started_last:
            if job.status == RUNNING:
                self._push(view.pool_of_gpu(job.gpus[0]), now + self._key(view, job), job)
        self._started_last = []
        alloc = view.allocation()
        heap = self._heap
        deferred: list[_Item] = []
        placed: set[int] = set()  # waiting jobs given GPUs in this call
        failed: set[int] = set()  # placement groups that could neither fit nor preempt
        # These change only when a job starts or is preempted, so are read again only then.
        full = view.free_gpus() < view.min_pending_demand()
        longest: float | None = None
        while heap:
            item = heapq.heappop(heap)
            key, job = item[0], item[3]
            status = job.status
            if status == FINISHED:
                continue  # stale: started since it was pushed
            if status == PENDING:
                if job.spec.index in placed:
                    continue
            elif job in alloc:
                continue
            if failed and item[4] in failed:
                gpus = None
            else:
                gpus = view.place(job, strategy=self.placement)
                if gpus is None:
                    preemptions = self._preemptions
                    gpus = self._make_room(view, alloc, job, key)
                    if self._preemptions != preemptions:
                        failed.clear()
                        full, longest = view.free_gpus() < view.min_pending_demand(), None
                    elif gpus is None and item[4] >= 0:
                        failed.add(item[4])
            if gpus is None:
                deferred.append(item)
                if full:
                    if longest is None:
                        longest = self._longest_running(now)
                    if longest <= key:
                        break  # later jobs are longer still: they can neither fit nor preempt
                continue
            alloc[job] = gpus
            placed.add(job.spec.index)
            self._started_last.append(job)
            full = view.free_gpus() < view.min_pending_demand()
        for item in deferred:
            heapq.heappush(heap, item)
        return alloc

    def _push(self, pool: object, finish: float, job: JobState) -> None:
        """List a job that started as running in its pool's heap. Stale entries (finished,
        preempted or moved since) are skipped only when they reach the top, so on a long
        run a heap would keep every job it ever held: when it doubles, they are dropped.
        Decisions do not change: live entries keep their strict order and stale ones are
        never used."""
        running = self._running.setdefault(pool, [])
        heapq.heappush(running, (-finish, -job.spec.index, job.version, job))
        if len(running) > self._prune_at.get(pool, 64):
            running[:] = [e for e in running if e[3].status == RUNNING and e[3].version == e[2]]
            heapq.heapify(running)
            self._prune_at[pool] = 2 * len(running) + 64

    def _longest_running(self, now: float) -> float:
        """The largest estimated remaining time among running jobs (-1 when none)."""
        longest = -1.0
        for running in self._running.values():
            while running:
                _, _, version, job = running[0]
                if job.status == RUNNING and job.version == version:
                    longest = max(longest, -running[0][0] - now)
                    break
                heapq.heappop(running)
        return longest

    def _make_room(self, view: ClusterView, alloc, job: JobState, key: float):
        """Preempt the longest running jobs (strictly longer than `key`) of one GPU type in
        the job's pool, if that frees enough GPUs there; return the new job's GPUs or None."""
        now, need = view.now, job.spec.num_gpus
        for gpu_type in view.rank_types(job.spec):  # fastest first, as placement tries them
            running = self._running.get(view.pool(job.spec, gpu_type))
            if not running:
                continue
            freed = view.free_gpus_for_vc(job.spec.vc, gpu_type)
            seen: list[tuple[float, float, int, JobState]] = []
            chosen: list[tuple[float, float, int, JobState]] = []
            while running and freed < need:
                entry = heapq.heappop(running)
                victim = entry[3]
                if victim.status != RUNNING or victim.version != entry[2]:
                    continue  # stale: finished, preempted or moved since it was pushed
                seen.append(entry)
                if -entry[0] - now <= key:
                    break
                chosen.append(entry)
                freed += victim.spec.num_gpus
            victims = self._fewest(chosen, freed, need) if freed >= need else []
            gone = {id(entry) for entry in victims}
            for entry in seen:
                if id(entry) not in gone:
                    heapq.heappush(running, entry)
            if not victims:
                continue
            self._preemptions += 1
            for entry in victims:
                victim = entry[3]
                del alloc[victim]
                # Back in the pending heap at once: other idle GPUs may take it in this call.
                heapq.heappush(self._heap, self._entry(-entry[0] - now, victim))
            return view.place(job, gpu_type=gpu_type, strategy=self.placement)
        return None

    @staticmethod
    def _fewest(chosen: list, freed: int, need: int) -> list:
        """The victims actually needed: going from the shortest chosen, a victim is spared
        when the others free enough GPUs without it, so no job is preempted for nothing."""
        kept = []
        for entry in reversed(chosen):  # shortest first: spare the shorter jobs when we can
            if freed - entry[3].spec.num_gpus >= need:
                freed -= entry[3].spec.num_gpus
            else:
                kept.append(entry)
        return kept[::-1]
