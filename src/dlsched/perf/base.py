"""The throughput-model protocol: the truth about how fast a job runs on given GPUs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from dlsched.jobs import JobSpec


@runtime_checkable
class ThroughputModel(Protocol):
    """Steps per second of a whole job on an allocation.

    `gpu_type` is a type key (lower case). `colocated` lists the (model, n_gpus) of jobs sharing
    the job's GPUs (a partner's model may be None: unknown); None means the job runs alone. A
    return value of 0 means the job cannot run on that allocation (for example out of memory).
    """

    name: str

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float: ...

    def reference_type(self, model: str | None) -> str | None:
        """The GPU type a duration was measured on when the trace does not say."""
        ...


@runtime_checkable
class ProgressDependentModel(ThroughputModel, Protocol):
    """A `ThroughputModel` whose true rate depends on the job's progress (optional method).

    The rate must be piecewise constant in work: `rate_from` gives the rate (steps/s) that
    applies from `work_done` steps and the work at which it next changes (``math.inf`` if
    never). The engine runs a job at that rate and, when the job reaches that work, credits
    it exactly there and asks again (an internal event, not a scheduling call), so completion
    still happens at the exact time the last step is done (DESIGN §3). `throughput` stays
    the single number policies and work conversions use (for example the average rate of a
    whole job). Models without `rate_from` run at `throughput` throughout, as before.
    The goodput model (`dlsched.perf.goodput`) is one: statistical efficiency changes by
    epoch."""

    def rate_from(
        self, model: str | None, gpu_type: str, n_gpus: int, n_nodes: int, work_done: float
    ) -> tuple[float, float]:
        """(steps/s from `work_done`, the work at which that rate ends)."""
        ...


@runtime_checkable
class JobDependentModel(ThroughputModel, Protocol):
    """A `ThroughputModel` whose true rate depends on the job itself and its progress (an
    optional method, preferred by the engine over `ProgressDependentModel.rate_from`).

    `job_rate_from` is `rate_from` asked with the job's spec instead of its model name: what
    a job carries of its own (a batch-size schedule, `dlsched.perf.dynamic`) can set its
    rate. The same rules hold: piecewise constant in work, credited exactly at each bound."""

    def job_rate_from(
        self, spec: JobSpec, gpu_type: str, n_gpus: int, n_nodes: int, work_done: float
    ) -> tuple[float, float]:
        """(steps/s from `work_done`, the work at which that rate ends)."""
        ...


class DurationModel:
    """Type-agnostic replay: every job runs at 1 step/s on any GPUs, so steps = seconds.

    It knows nothing of co-location: a packed job gets rate 0 (cannot run), so packing is
    only possible with a model that measured pairs (DESIGN §2)."""

    name = "duration"

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        return 0.0 if colocated else 1.0

    def reference_type(self, model: str | None) -> str | None:
        return None

    def __repr__(self) -> str:
        return "DurationModel()"
