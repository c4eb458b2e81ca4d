"""`ClusterView`: everything a policy may read, and nothing it may change."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from dlsched.cluster import Cluster, type_key
from dlsched.engine.allocation import Allocation
from dlsched.errors import UnknownModelError
from dlsched.jobs import JobSpec, JobState
from dlsched.overheads import OverheadModel
from dlsched.perf.estimator import OracleEstimator
from dlsched.policies.placement import get_placer

if TYPE_CHECKING:
    from dlsched.engine.simulator import Simulator


class ClusterView:
    """Read-only state at a scheduling point: time, jobs, free GPUs, estimator, helpers."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim
        self.cluster: Cluster = sim.cluster
        self.estimator: OracleEstimator = sim.estimator
        self.overheads: OverheadModel = sim.overheads
        self.pending: Mapping[object, JobState] = MappingProxyType(sim.pending)
        self.running: Mapping[object, JobState] = MappingProxyType(sim.running)
        self.gpu_types: tuple[str, ...] = tuple(sorted(sim.cluster.gpu_types))
        self._ranked: dict[tuple[str | None, int], tuple[str, ...]] = {}

    @property
    def now(self) -> float:
        """The current simulated time in seconds."""
        return self._sim.now

    @property
    def is_round(self) -> bool:
        """Whether a round tick is part of this scheduling call."""
        return self._sim.round_due

    def allocation(self) -> Allocation:
        """The allocation to modify and return (one per scheduling call)."""
        return self._sim.current_allocation()

    def free_gpus(self, gpu_type: str | None = None) -> int:
        """Free GPUs now (within this call, after the policy's own changes)."""
        ledger = self._sim.ledger
        if gpu_type is None:
            return ledger.free_total
        return ledger.free_by_type.get(type_key(gpu_type), 0)

    def free_by_type(self) -> dict[str, int]:
        """Free GPUs per type key."""
        return dict(self._sim.ledger.free_by_type)

    def gpu_type_of(self, gpu: int) -> str:
        """The type key of a GPU id."""
        return self.cluster.gpu_type_of[gpu]

    def rank_types(self, job: JobSpec) -> tuple[str, ...]:
        """GPU types on which the job can run, fastest first by the estimator (ties: name)."""
        key = (job.model, job.num_gpus)
        ranked = self._ranked.get(key)
        if ranked is None:
            rates = []
            for gpu_type in self.gpu_types:
                try:
                    rate = self.estimator.throughput(job, gpu_type)
                except UnknownModelError:
                    rate = 0.0
                if rate > 0 and self._sim.ledger.capacity[gpu_type] >= job.num_gpus:
                    rates.append((-rate, gpu_type))
            ranked = self._ranked[key] = tuple(t for _, t in sorted(rates))
        return ranked

    def place(self, job: JobSpec | JobState, gpu_type: str | None = None,
              strategy: str = "consolidated", n_gpus: int | None = None
              ) -> tuple[int, ...] | None:
        """GPU ids for the job on free GPUs of one type, or None if it does not fit now.

        With no `gpu_type`, types are tried fastest first (`rank_types`).
        """
        spec = job.spec if isinstance(job, JobState) else job
        n = spec.num_gpus if n_gpus is None else n_gpus
        placer = get_placer(strategy)
        ledger = self._sim.ledger
        types = (type_key(gpu_type),) if gpu_type is not None else self.rank_types(spec)
        for t in types:
            if ledger.free_by_type.get(t, 0) >= n:
                gpus = placer(ledger, n, t)
                if gpus is not None:
                    return gpus
        return None
