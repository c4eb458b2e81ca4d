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
"""

from __future__ import annotations

import heapq

from dlsched.engine.view import ClusterView
from dlsched.jobs import PENDING, JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

_Item = tuple[float, float, int, JobState]


class _ShortestFirst(BasePolicy):
    """Pending jobs in a heap keyed by (estimate, submit time, job order)."""

    def __init__(self, placement: str = "consolidated") -> None:
        super().__init__()
        self.placement = placement
        self._heap: list[_Item] = []
        self._arrived: list[JobState] = []

    def _key(self, view: ClusterView, job: JobState) -> float:
        raise NotImplementedError

    def _item(self, view: ClusterView, job: JobState) -> _Item:
        spec = job.spec
        return (self._key(view, job), spec.submit_time, spec.index, job)

    def on_arrival(self, job: JobState) -> None:
        super().on_arrival(job)
        self._arrived.append(job)  # keyed at the next schedule(), where the estimator is

    def _admit_arrivals(self, view: ClusterView) -> None:
        for job in self._arrived:
            heapq.heappush(self._heap, self._item(view, job))
        self._arrived.clear()


@register("sjf")
class ShortestJobFirst(_ShortestFirst):
    """Non-preemptive shortest job first, by estimated duration."""

    name = "sjf"

    def _key(self, view: ClusterView, job: JobState) -> float:
        return view.estimator.duration(job.spec)

    def schedule(self, view: ClusterView):
        self._admit_arrivals(view)
        alloc = view.allocation()
        heap = self._heap
        skipped: list[_Item] = []
        while heap and view.free_gpus() >= self.min_pending_demand():
            item = heapq.heappop(heap)
            job = item[3]
            gpus = view.place(job, strategy=self.placement)
            if gpus is None:
                skipped.append(item)
                continue
            alloc[job] = gpus
            self._started(job)
        for item in skipped:
            heapq.heappush(heap, item)
        return alloc


@register("srtf")
class ShortestRemainingTimeFirst(_ShortestFirst):
    """Preemptive shortest remaining time first, by estimated remaining time."""

    name = "srtf"

    def _key(self, view: ClusterView, job: JobState) -> float:
        return view.estimator.remaining_time(job, view.now)

    def schedule(self, view: ClusterView):
        self._admit_arrivals(view)
        alloc = view.allocation()
        heap = self._heap
        deferred: list[_Item] = []
        victims: list[tuple[float, JobState]] | None = None
        while heap:
            item = heapq.heappop(heap)
            key, job = item[0], item[3]
            if job.status != PENDING or job in alloc:
                continue
            gpus = view.place(job, strategy=self.placement)
            if gpus is None:
                if victims is None:
                    victims = sorted(((self._key(view, r), r) for r in view.running.values()),
                                     key=lambda v: (-v[0], -v[1].spec.index))
                gpus = self._make_room(view, alloc, job, key, victims, deferred)
            if gpus is None:
                deferred.append(item)
                longest = victims[0][0] if victims else -1.0
                if key >= longest and view.free_gpus() < self.min_pending_demand():
                    break  # later jobs are longer: they can neither preempt nor fit
                continue
            alloc[job] = gpus
            self._started(job)
        for item in deferred:
            heapq.heappush(heap, item)
        return alloc

    def _make_room(self, view: ClusterView, alloc, job: JobState, key: float,
                   victims: list[tuple[float, JobState]], deferred: list[_Item]):
        """Preempt the longest running jobs (longer than `key`) of one type, if enough."""
        need = job.spec.num_gpus
        for gpu_type in view.rank_types(job.spec):
            free = view.free_gpus(gpu_type)
            chosen = []
            for victim_key, victim in victims:
                if free >= need or victim_key <= key:
                    break
                if victim in alloc and view.gpu_type_of(victim.gpus[0]) == gpu_type:
                    chosen.append((victim_key, victim))
                    free += victim.spec.num_gpus
            if free < need:
                continue
            for victim_key, victim in chosen:
                del alloc[victim]
                self._requeued(victim)
                spec = victim.spec
                deferred.append((victim_key, spec.submit_time, spec.index, victim))
            victims[:] = [v for v in victims if v[1] in alloc]
            return view.place(job, gpu_type=gpu_type, strategy=self.placement)
        return None
