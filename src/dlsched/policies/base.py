"""The policy protocol. A policy reads a `ClusterView` and returns an allocation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from dlsched.jobs import JobState

if TYPE_CHECKING:
    from dlsched.engine.view import ClusterView


@runtime_checkable
class Policy(Protocol):
    """What the engine calls. Hooks `on_arrival(job)`, `on_finish(job)`, `on_round(view)`
    are optional. `schedule` returns `view.allocation()` after changing it, any mapping
    job id → GPU ids as the whole answer, or None for "no change"."""

    name: str
    round_s: float | None

    def schedule(self, view: ClusterView) -> Mapping[object, tuple[int, ...]] | None: ...


class BasePolicy:
    """Convenience base: no round, no-op hooks, and a counter of pending GPU demands."""

    name = "base"
    round_s: float | None = None

    def __init__(self) -> None:
        self._pending_demand: Counter[int] = Counter()

    def on_arrival(self, job: JobState) -> None:
        self._pending_demand[job.spec.num_gpus] += 1

    def on_finish(self, job: JobState) -> None:
        """Called when a job completes."""

    def _started(self, job: JobState) -> None:
        demand = self._pending_demand
        demand[job.spec.num_gpus] -= 1
        if not demand[job.spec.num_gpus]:
            del demand[job.spec.num_gpus]

    def _requeued(self, job: JobState) -> None:
        self._pending_demand[job.spec.num_gpus] += 1

    def min_pending_demand(self) -> int:
        """The smallest GPU request among pending jobs (0 when none pend)."""
        return min(self._pending_demand, default=0)

    def schedule(self, view: ClusterView) -> Mapping[object, tuple[int, ...]] | None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
