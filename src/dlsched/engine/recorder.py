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

    def event(self, event: Event) -> None:
        self.events.append(event)

    def busy(self, now: float, busy_by_type: dict[str, int]) -> None:
        """Record busy GPUs per type at `now` (one row per instant, only when they change)."""
        row = (now, *(busy_by_type[t] for t in self._type_order))
        timeline = self.timeline
        if timeline and timeline[-1][0] == now:
            timeline[-1] = row
        elif not timeline or timeline[-1][1:] != row[1:]:
            timeline.append(row)
