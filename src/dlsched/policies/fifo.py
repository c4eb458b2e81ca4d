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
Simplified: the EASY reservation counts GPUs across types and ignores node boundaries.
"""

from __future__ import annotations

from collections import deque

from dlsched.engine.view import ClusterView
from dlsched.jobs import PENDING, JobState
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


@register("fifo")
class Fifo(BasePolicy):
    """First-in first-out with strict head-of-line blocking (YARN-CS); backfill optional."""

    name = "fifo"

    def __init__(self, backfill: bool | str = False, placement: str = "consolidated") -> None:
        if backfill not in _BACKFILL:
            raise ValueError(f"fifo: backfill must be False, 'greedy' or 'easy', not {backfill!r}")
        self.backfill = _BACKFILL[backfill]
        self.placement = placement

    def start(self, view: ClusterView) -> None:
        self._queue: deque[JobState] = deque()

    def on_arrival(self, job: JobState) -> None:
        self._queue.append(job)

    def schedule(self, view: ClusterView):
        alloc = view.allocation()
        queue = self._queue
        started: list[JobState] = []
        while queue:
            head = queue[0]
            gpus = view.place(head, strategy=self.placement)
            if gpus is None:
                break
            alloc[head] = gpus
            started.append(queue.popleft())
        if queue and self.backfill is not None and view.free_gpus() >= view.min_pending_demand():
            self._backfill(view, alloc, started)
        return alloc

    def _backfill(self, view: ClusterView, alloc, started: list[JobState]) -> None:
        queue = self._queue
        head = queue[0]
        shadow, extra = (
            self._reservation(view, head, started) if self.backfill == "easy" else (float("inf"), 0)
        )
        now = view.now
        kept: deque[JobState] = deque([head])
        for i in range(1, len(queue)):
            job = queue[i]
            if job.status != PENDING or view.free_gpus() < view.min_pending_demand():
                kept.extend(queue[j] for j in range(i, len(queue)))
                break
            n = job.spec.num_gpus
            in_time = now + view.estimator.remaining_time(job, now) <= shadow
            if in_time or n <= extra:
                gpus = view.place(job, strategy=self.placement)
                if gpus is not None:
                    alloc[job] = gpus
                    if not in_time:
                        extra -= n
                    continue
            kept.append(job)
        self._queue = kept

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
        return float("inf"), 0
