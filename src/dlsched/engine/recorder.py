"""`Recorder`: the typed event log and the busy-GPU timeline of one run."""

from __future__ import annotations

import math
from typing import NamedTuple

from dlsched.cluster import Cluster

#: What can happen to a job. `start`, `restart`, `migrate` and `rescale` carry the job's new
#: GPU ids; `preempt` and `finish` the ones it gave back; `rerate` the ones it keeps.
EVENT_KINDS = (
    "submit",
    "unschedulable",
    "start",
    "restart",
    "migrate",
    "rescale",
    "rerate",
    "preempt",
    "finish",
)


class Event(NamedTuple):
    """One row of `result.events`."""

    time: float
    event: str
    job_id: object
    num_gpus: int
    gpu_type: str | None = None
    rate: float = math.nan  # true steps/s from then on (start, move, rerate)
    overhead_s: float = math.nan  # seconds without progress that the change costs
    gpus: tuple[int, ...] = ()


EVENT_COLUMNS = list(Event._fields)


class Recorder:
    """Collects events and the busy-GPU timeline as the engine produces them."""

    def __init__(self, cluster: Cluster) -> None:
        self.events: list[Event] = []
        self.timeline: list[tuple[float, ...]] = []
        self._type_order = tuple(sorted(cluster.gpu_types))
        self.timeline_columns = ["time", *(cluster.display_name(t) for t in self._type_order)]
        capacity = cluster.capacity_by_type()
        self._capacity = [(t, capacity[t]) for t in self._type_order]
        self._last: tuple[int, ...] | None = None  # busy GPUs of the timeline's last row

    def event(self, event: Event) -> None:
        self.events.append(event)

    def busy(self, now: float, busy_by_type: dict[str, int]) -> None:
        """Record busy GPUs per type at `now` (one row per instant, only when they change)."""
        self._row(now, tuple([busy_by_type[t] for t in self._type_order]))

    def busy_from_free(self, now: float, free_by_type: dict[str, int]) -> None:
        """`busy` from the ledger's free GPUs per type (what the engine calls)."""
        self._row(now, tuple([capacity - free_by_type[t] for t, capacity in self._capacity]))

    def _row(self, now: float, busy: tuple[int, ...]) -> None:
        timeline = self.timeline
        if timeline and timeline[-1][0] == now:
            timeline[-1] = (now, *busy)
            self._last = busy
        elif busy != self._last:
            timeline.append((now, *busy))
            self._last = busy
