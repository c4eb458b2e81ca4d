"""What Tiresias' two algorithms share (the paper's, `paper.py`, and the authors' simulator's,
`compat.py`): parameters and their checks, the priority walk that admits jobs by GPU count
per pool, and applying its answer (preempt, then place in priority order).
"""

from __future__ import annotations

from collections.abc import Sequence

from dlsched.engine.allocation import Allocation
from dlsched.engine.ledger import Pool
from dlsched.engine.placement import STRATEGIES
from dlsched.engine.view import ClusterView
from dlsched.errors import SchedulingError
from dlsched.jobs import JobState
from dlsched.policies.base import BasePolicy

DEFAULT_THRESHOLDS = (3250.0, 7200.0)
SENSITIVE_MODELS = ("vgg", "alexnet")
SENSITIVE_SLOWDOWN = 0.1
_EPS = 1e-6


def check_sensitive_slowdown(name: str, sensitive_slowdown: float) -> None:
    """Raise ValueError unless the slowdown that makes a model placement-sensitive is in
    [0, 1)."""
    if not 0 <= sensitive_slowdown < 1:
        raise ValueError(f"{name}: sensitive_slowdown must be in [0, 1)")


class TiresiasBase(BasePolicy):
    """K priority queues on GPU-time; subclasses order them and decide when jobs move.

    Per run (`start`): each job's queue (`_level`), where its service count restarts
    (`_offset`, moved by starvation promotions) and the pools each job may use."""

    name = "tiresias"

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation_knob: float | None = None,
        placement: str = "sensitive",
    ) -> None:
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
        self.thresholds = limits
        self.starvation_knob = starvation_knob
        self.placement = placement

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(thresholds={list(self.thresholds)}, "
            f"starvation_knob={self.starvation_knob}, placement={self.placement!r})"
        )

    def start(self, view: ClusterView) -> None:
        """Empty queues for a run."""
        self._last = len(self.thresholds)  # the lowest queue
        self._level: dict[JobState, int] = {}
        self._offset: dict[JobState, float] = {}  # service counted from here (promotions)
        self._pools: dict[object, tuple[tuple[Pool, str], ...]] = {}

    def _strategy(self, view: ClusterView, job: JobState, gpu_type: str) -> str:
        """The placement strategy for `job` on `gpu_type`."""
        raise NotImplementedError

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
    ) -> tuple[Allocation, list[JobState], list[tuple[JobState, str]]]:
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
