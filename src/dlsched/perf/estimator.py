"""Estimators: what policies see of the performance model.

The engine advances jobs with the true `ThroughputModel`; policies ask an `Estimator`. The
oracle answers with the truth; `NoisyEstimator` multiplies each job's work and each (model,
GPU type) throughput by seeded log-normal errors, drawn once, so a policy sees a consistent
but wrong picture — the way to measure how much a policy loses when its model is wrong.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from dlsched.cluster import Cluster
from dlsched.engine.ledger import slot_tables
from dlsched.errors import SchedulingError, did_you_mean
from dlsched.jobs import RUNNING, JobSpec, JobState
from dlsched.perf.rates import JobRates


class OracleEstimator:
    """Knows each job's true work and throughput."""

    name = "oracle"

    def __init__(self) -> None:
        self._types: tuple[str, ...] = ()
        self._type_set: frozenset[str] = frozenset()
        self._nodes_for: dict[tuple[str, int], int] = {}
        self._best: dict[object, tuple[str, float]] = {}

    def bind(
        self, rates: JobRates, specs: Sequence[JobSpec], cluster: Cluster, rng: np.random.Generator
    ) -> None:
        """Called by the simulator once, before the first job arrives."""
        self._rates = rates
        self._cluster = cluster
        # node and type of each id a running job holds: GPU ids, then host slots (jobs
        # without GPUs, `dlsched.engine.ledger`), which the cluster's tuples do not cover
        self._id_node, self._id_type = slot_tables(cluster)
        self._types = tuple(sorted(cluster.gpu_types))
        self._type_set = frozenset(self._types)
        self._per_node = {t: cluster.max_gpus_per_node(t) for t in self._types}
        self._best = {}

    def _true_throughput(self, job: JobSpec, gpu_type: str, n_gpus: int, n_nodes: int) -> float:
        return self._rates.rate(job, gpu_type, n_gpus, n_nodes)

    def _check_type(self, gpu_type: str) -> None:
        # A rate of 0 means "cannot run there"; a type the cluster does not have (a display
        # name such as 'T4' for the key 't4', a typo) would read as that, silently.
        if gpu_type not in self._type_set:
            hint = did_you_mean(str(gpu_type).lower(), self._types)
            raise SchedulingError(
                f"estimator asked about GPU type {gpu_type!r}, which the cluster does not have "
                f"(it has {', '.join(self._types)}){hint}; "
                "use the cluster's type keys (view.cluster.gpu_types)"
            )

    def _consolidated_nodes(self, gpu_type: str, n_gpus: int) -> int:
        per_node = self._per_node.get(gpu_type, n_gpus) or n_gpus
        return max(1, -(-n_gpus // per_node))

    def throughput(
        self, job: JobSpec, gpu_type: str, n_gpus: int | None = None, n_nodes: int | None = None
    ) -> float:
        """Estimated steps/s of `job` on `n_gpus` (default: its request) GPUs of `gpu_type`."""
        if gpu_type not in self._type_set:
            self._check_type(gpu_type)
        n = job.num_gpus if n_gpus is None else n_gpus
        nodes = self._consolidated_nodes(gpu_type, n) if n_nodes is None else n_nodes
        return self._true_throughput(job, gpu_type, n, nodes)

    def colocated_throughput(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        partners: Sequence[tuple[str | None, int]],
        n_nodes: int = 1,
    ) -> float:
        """Estimated steps/s of `job` on `n_nodes` nodes packed with `partners` ((model,
        GPUs) sharing its GPUs); 0 when nobody measured the pair (it cannot be packed)."""
        if gpu_type not in self._type_set:
            self._check_type(gpu_type)
        return self._rates.rate(job, gpu_type, n_gpus, n_nodes, tuple(sorted(partners)))

    def consolidated_nodes(self, gpu_type: str, n_gpus: int) -> int:
        """The fewest nodes of `gpu_type` that hold `n_gpus` GPUs."""
        return self._consolidated_nodes(gpu_type, n_gpus)

    def total_steps(self, job: JobSpec) -> float:
        """Estimated total work in steps."""
        return job.total_steps

    def remaining_steps(self, state: JobState, now: float) -> float:
        """Estimated steps left (never negative)."""
        return max(0.0, self.total_steps(state.spec) - state.steps_done_at(now))

    def best_type(self, job: JobSpec) -> tuple[str, float]:
        """The cluster's fastest type for the job as requested, with its estimated rate."""
        key = (job.model, job.num_gpus) if job.type_durations is None else job.index
        best = self._best.get(key)
        if best is None:
            best = (self._types[0], -1.0)
            for gpu_type in self._types:  # sorted, so ties go to the first name
                rate = self.throughput(job, gpu_type)
                if rate > best[1]:
                    best = (gpu_type, rate)
            best = self._best[key] = best
        return best

    def remaining_time(self, state: JobState, now: float, gpu_type: str | None = None) -> float:
        """Estimated seconds left: on `gpu_type` if given, else on its current GPUs when
        running (with what is left of a restart overhead), else on the cluster's fastest
        type for it."""
        remaining = self.remaining_steps(state, now)
        if gpu_type is None and state.status == RUNNING and state.gpus:
            rate = self._running_rate(state)
            if rate > 0 and state.progress_from > now:
                return state.progress_from - now + remaining / rate
        elif gpu_type is None:
            rate = self.best_type(state.spec)[1]
        else:
            rate = self.throughput(state.spec, gpu_type)
        return remaining / rate if rate > 0 else float("inf")

    def _running_rate(self, state: JobState) -> float:
        """Estimated rate of a running job on its current GPUs (the oracle's is the truth)."""
        return state._rate

    def duration(self, job: JobSpec, gpu_type: str | None = None) -> float:
        """Estimated run time alone, on `gpu_type` or the fastest type."""
        rate = self.throughput(job, gpu_type) if gpu_type else self.best_type(job)[1]
        return self.total_steps(job) / rate if rate > 0 else float("inf")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NoisyEstimator(OracleEstimator):
    """Oracle × seeded multiplicative log-normal errors: exp(N(0, σ²)).

    `sigma` perturbs each job's total work; `sigma_throughput` each (model, GPU type) rate.
    Errors are drawn once per simulation from its seed, so the same seed gives the same errors.
    """

    name = "noisy"

    def __init__(self, sigma: float = 0.5, sigma_throughput: float = 0.0) -> None:
        super().__init__()
        for name, value in (("sigma", sigma), ("sigma_throughput", sigma_throughput)):
            # NaN noise would make every estimate NaN; infinite noise every estimate 0 or inf
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float, np.integer, np.floating))
                or not 0 <= value < math.inf
            ):
                raise ValueError(
                    f"noisy estimator: {name} must be a finite number >= 0, got {value!r}"
                )
        self.sigma = sigma
        self.sigma_throughput = sigma_throughput
        self._work_factor = np.ones(0)
        self._tput_seed = 0
        self._tput_factor: dict[tuple[str | None, str], float] = {}

    def bind(
        self, rates: JobRates, specs: Sequence[JobSpec], cluster: Cluster, rng: np.random.Generator
    ) -> None:
        super().bind(rates, specs, cluster, rng)
        self._work_factor = np.exp(rng.normal(0.0, self.sigma, size=len(specs)))
        self._tput_seed = int(rng.integers(2**62))
        self._tput_factor = {}

    def total_steps(self, job: JobSpec) -> float:
        return job.total_steps * float(self._work_factor[job.index])

    def _rate_factor(self, job: JobSpec, gpu_type: str) -> float:
        if self.sigma_throughput == 0.0:
            return 1.0
        key = (job.model, gpu_type)
        factor = self._tput_factor.get(key)
        if factor is None:
            # Seeded by the key, not by call order, so policies cannot change the draws.
            salt = zlib.crc32(repr(key).encode())
            draw = np.random.default_rng([self._tput_seed, salt]).normal(0.0, self.sigma_throughput)
            factor = self._tput_factor[key] = float(np.exp(draw))
        return factor

    def throughput(
        self, job: JobSpec, gpu_type: str, n_gpus: int | None = None, n_nodes: int | None = None
    ) -> float:
        return super().throughput(job, gpu_type, n_gpus, n_nodes) * self._rate_factor(job, gpu_type)

    def colocated_throughput(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        partners: Sequence[tuple[str | None, int]],
        n_nodes: int = 1,
    ) -> float:
        together = super().colocated_throughput(job, gpu_type, n_gpus, partners, n_nodes)
        return together * self._rate_factor(job, gpu_type)

    def _running_rate(self, state: JobState) -> float:
        return state._rate * self._rate_factor(state.spec, self._id_type[state.gpus[0]])

    def __repr__(self) -> str:
        return f"NoisyEstimator(sigma={self.sigma}, sigma_throughput={self.sigma_throughput})"
