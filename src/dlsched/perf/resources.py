"""`ResourceRates`: true rates that also depend on the CPU and host memory a job holds.

A throughput model may declare an optional method

    resource_factor(model, cpu_per_gpu, mem_gb_per_gpu) -> float

(1.0 at its reference allocation; None for a resource the cluster does not account: the
reference amount). When it does and the cluster accounts CPU or memory, the engine's true
rate of a job is the model's rate times that factor at what the job holds now
(`Ledger.reserved`, summed over its nodes, per GPU). A job that holds nothing runs at the
plain rate. The estimator is bound to the plain rates (its rates are those at the reference
allocation; a running job's is its true one), so nothing cached there depends on who holds
what. The Synergy profiles (`dlsched.perf.synergy.SynergyModel`) are such a model.
A job without GPUs (``num_gpus`` 0) runs at the plain rate: no factor applies per GPU it
does not hold (`SynergyModel` itself gives such a job no rate, so it is refused up front).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from dlsched.perf.base import ThroughputModel
from dlsched.perf.rates import JobRates, checked_rate

if TYPE_CHECKING:
    from dlsched.engine.ledger import Ledger
    from dlsched.jobs import JobSpec


@runtime_checkable
class ResourceSensitiveModel(ThroughputModel, Protocol):
    """A `ThroughputModel` whose rate scales with the CPU and memory a job holds per GPU."""

    def resource_factor(
        self, model: str | None, cpu_per_gpu: float | None, mem_gb_per_gpu: float | None
    ) -> float:
        """Rate relative to the reference allocation (None: the reference amount)."""
        ...


class ResourceRates(JobRates):
    """`JobRates` times the truth's `resource_factor` at the job's held CPU and memory."""

    def __init__(self, truth: ResourceSensitiveModel, ledger: Ledger) -> None:
        super().__init__(truth)
        self._ledger = ledger
        self._factor = truth.resource_factor
        self._factors: dict[tuple, float] = {}

    def rate(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int,
        colocated: tuple[tuple[str | None, int], ...] = (),
    ) -> float:
        """Steps/s on the allocation, scaled by the factor at what the job holds now."""
        base = super().rate(job, gpu_type, n_gpus, n_nodes, colocated)
        ledger = self._ledger
        held = ledger.reserved.get(job.index)
        if not base or held is None or not n_gpus:
            return base  # per-GPU amounts mean nothing on no GPU: the plain rate
        cpu = sum(c for c, _ in held.values()) if ledger.cpu_free is not None else None
        mem = sum(m for _, m in held.values()) if ledger.mem_free is not None else None
        key = (job.model, cpu, mem, n_gpus)
        factor = self._factors.get(key)
        if factor is None:
            factor = self._factors[key] = checked_rate(
                self._factor(
                    job.model,
                    None if cpu is None else cpu / 1000 / n_gpus,
                    None if mem is None else mem / 1024 / n_gpus,
                ),
                self.truth,
                job.job_id,
                job.model,
                gpu_type,
                n_gpus,
                "resource factor",
            )
        return base * factor
