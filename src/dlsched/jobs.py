"""Jobs: the immutable `JobSpec` from the workload and the runtime `JobState`.

Work is counted in training steps. A job's progress is `steps_done` as of `credited_at`, plus
`rate × (now − max(credited_at, progress_from))` while it runs (the true rate is the engine's
private `_rate`: a policy sees progress, never the rate behind it); the engine credits progress
whenever the job's allocation changes, so a rate always applies to one stint of fixed GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

PENDING = "pending"
RUNNING = "running"
FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What the workload says about a job. `index` is its position in submit order."""

    index: int
    job_id: object
    submit_time: float
    num_gpus: int
    total_steps: float
    model: str | None = None
    user: str | None = None
    vc: str | None = None
    deadline: float | None = None
    priority: float = 1.0
    gpu_type: str | None = None
    duration: float | None = None
    source_row: int | None = None
    gpu_milli: int = 1000  # share of each GPU, in thousandths (1000 = whole GPUs)
    gpu_constraint: tuple[str, ...] | None = None  # allowed GPU type keys; None = any
    type_durations: tuple[tuple[str, float], ...] | None = None  # measured per GPU type
    status: str | None = None  # as traced (Pass/Failed/Killed), kept for analysis
    min_gpus: int | None = None  # elastic bounds; None = num_gpus (a rigid job)
    max_gpus: int | None = None
    cpu_milli: int = 0  # the job's whole CPU demand, thousandths of a core (0 = none)
    memory_mib: int = 0  # the job's whole host-memory demand, MiB (0 = none)
    name: str | None = None  # the job's name as traced (history-based predictors match it)

    @property
    def elastic(self) -> bool:
        """Whether a policy may run the job on another GPU count than it asked for."""
        return self.min_gpus is not None or self.max_gpus is not None

    @property
    def gpu_range(self) -> tuple[int, int]:
        """(fewest, most) GPUs the job may run on; (num_gpus, num_gpus) when rigid."""
        low = self.num_gpus if self.min_gpus is None else self.min_gpus
        high = self.num_gpus if self.max_gpus is None else self.max_gpus
        return low, high

    @property
    def fractional(self) -> bool:
        """Whether the job asks for part of one GPU (it may share that GPU)."""
        return self.gpu_milli < 1000


class JobState:
    """A job at run time. Read it through the methods that take `now`."""

    __slots__ = (
        "spec",
        "status",
        "gpus",
        "_rate",
        "steps_done",
        "credited_at",
        "progress_from",
        "held_since",
        "attained_service_s",
        "start_time",
        "finish_time",
        "preemptions",
        "migrations",
        "restarts",
        "last_run_s",
        "queued_since",
        "_gpu_seconds_by_type",
        "version",
        "rescales",
        "held_s",
    )

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.status = PENDING
        self.gpus: tuple[int, ...] = ()
        self._rate = 0.0  # the true steps/s: the engine's, never shown to policies
        self.steps_done = 0.0
        self.credited_at = spec.submit_time
        self.progress_from = spec.submit_time
        self.held_since = spec.submit_time
        self.attained_service_s = 0.0
        self.held_s = 0.0  # wall seconds holding GPUs (stints ended so far)
        self.start_time: float | None = None
        self.finish_time: float | None = None
        self.preemptions = 0
        self.migrations = 0
        self.rescales = 0  # changes of GPU count while running (elastic jobs)
        self.restarts = 0
        self.last_run_s = 0.0
        self.queued_since = spec.submit_time
        # None (never held GPUs), the one GPU type key of every stint so far (its seconds
        # are then `attained_service_s`: no dict per job, ~150 bytes each on a million-job
        # run), or a dict of seconds by type once the job has held two types
        self._gpu_seconds_by_type: str | dict[str, float] | None = None
        self.version = 0  # bumped on every allocation change; stale completions are ignored

    @property
    def job_id(self) -> object:
        return self.spec.job_id

    @property
    def gpu_seconds_by_type(self) -> dict[str, float]:
        """GPU-seconds held per GPU type key, over the stints ended so far (a copy)."""
        held = self._gpu_seconds_by_type
        if held is None:
            return {}
        if isinstance(held, str):
            return {held: self.attained_service_s}
        return dict(held)

    def credit_gpu_seconds(self, gpu_type: str, gpu_s: float) -> None:
        """Count `gpu_s` GPU-seconds held on `gpu_type` (the engine calls it just before it
        adds the same seconds to `attained_service_s`, in the same order)."""
        held = self._gpu_seconds_by_type
        if held is None or held == gpu_type:
            self._gpu_seconds_by_type = gpu_type
        elif isinstance(held, str):  # a second type: the first's seconds are all so far
            self._gpu_seconds_by_type = {held: self.attained_service_s, gpu_type: gpu_s}
        else:
            held[gpu_type] = held.get(gpu_type, 0.0) + gpu_s

    @property
    def num_gpus(self) -> int:
        return self.spec.num_gpus

    def steps_done_at(self, now: float) -> float:
        """Steps completed by time `now` (no progress during an overhead)."""
        if self.status != RUNNING or now <= self.progress_from:
            return self.steps_done
        start = max(self.credited_at, self.progress_from)
        return min(self.spec.total_steps, self.steps_done + self._rate * (now - start))

    def remaining_steps_at(self, now: float) -> float:
        """True steps left at `now` (policies use the estimator instead)."""
        return max(0.0, self.spec.total_steps - self.steps_done_at(now))

    def attained_service_at(self, now: float) -> float:
        """GPU-seconds held so far, the current stint included (Tiresias' 2D service)."""
        if self.status != RUNNING:
            return self.attained_service_s
        return self.attained_service_s + self.gpu_share * (now - self.held_since)

    @property
    def gpu_share(self) -> float:
        """GPUs held now, counting a fractional share as its fraction."""
        return len(self.gpus) * self.spec.gpu_milli / 1000

    def __repr__(self) -> str:
        return (
            f"JobState({self.spec.job_id!r}, {self.status}, gpus={len(self.gpus)}/"
            f"{self.spec.num_gpus}, steps={self.steps_done:.1f}/{self.spec.total_steps:.1f})"
        )
