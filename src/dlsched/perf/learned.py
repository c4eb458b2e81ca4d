"""`LearnedEstimator`: throughput learned online from observed progress.

What Gandiva's introspection and Optimus' online fitting assume a scheduler can do: before a
job has run on an allocation, its rate there is a *prior* guess; once it has made progress
there for `min_observation_s`, the scheduler has measured it. Observations are kept per
(model, GPU type, GPU count, node count) — per job for jobs with their own measured
durations — and shared by every job of that model: the first ResNet-50 that runs on 4 V100s
teaches the scheduler how fast every ResNet-50 runs on 4 V100s.

The default prior is heterogeneity-agnostic: every GPU type as fast as the job's reference
type (where its traced duration was measured), other GPU counts by linear scaling from its
request. `prior` may instead be a `ThroughputModel` (for example `ScalingModel.gavel()`, or
a model of another cluster). Observations are exact unless `measurement_sigma` > 0, when each
one carries seeded log-normal noise and the estimate is the mean of the observations. Work
(total steps) is the noisy estimator's: exact unless `sigma` > 0.

Co-located stints (packed jobs) are not learned from: their rate depends on the partner.
A job without GPUs (``num_gpus`` 0) has no GPU throughput to learn: its prior is its true
rate (its traced duration's), and its stints are kept under 0 GPUs, apart from 1-GPU ones.
The engine reports stints through `on_stint`/`on_stop` and the clock through `advance`.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from dlsched.cluster import Cluster
from dlsched.errors import UnknownModelError
from dlsched.jobs import JobSpec, JobState
from dlsched.perf.base import ThroughputModel
from dlsched.perf.estimator import NoisyEstimator
from dlsched.perf.rates import JobRates

_Key = tuple


class LearnedEstimator(NoisyEstimator):
    """Prior until measured, then the measured rate (see the module docstring)."""

    name = "learned"

    def __init__(
        self,
        prior: ThroughputModel | str = "agnostic",
        *,
        min_observation_s: float = 60.0,
        measurement_sigma: float = 0.0,
        sigma: float = 0.0,
    ) -> None:
        super().__init__(sigma=sigma)
        if not min_observation_s >= 0 or not measurement_sigma >= 0:
            raise ValueError("min_observation_s and measurement_sigma must be >= 0")
        if isinstance(prior, str) and prior != "agnostic":
            from dlsched.perf import make_throughput

            prior = make_throughput(prior)
        self.prior = prior
        self.min_observation_s = float(min_observation_s)
        self.measurement_sigma = float(measurement_sigma)
        self.observations = 0

    def bind(
        self, rates: JobRates, specs: Sequence[JobSpec], cluster: Cluster, rng: np.random.Generator
    ) -> None:
        super().bind(rates, specs, cluster, rng)
        self._noise = np.random.default_rng(int(rng.integers(2**62)))
        self._sum: dict[_Key, float] = {}
        self._count: dict[_Key, int] = {}
        self._maturing: list[tuple[float, int, int, JobState, int, _Key, float]] = []
        self._stints: dict[int, tuple[int, _Key, float, float]] = {}
        self._now = 0.0
        self._seq = 0
        self.observations = 0

    # ---- what the engine tells it --------------------------------------------------------
    def advance(self, now: float) -> None:
        """The engine's clock at a scheduling call: stints that ran long enough are measured."""
        self._now = now
        heap = self._maturing
        while heap and heap[0][0] <= now:
            _, _, _, state, version, key, rate = heapq.heappop(heap)
            if state.version == version:  # still in the same stint
                self._learn(key, rate)

    def on_stint(self, state: JobState, gpu_type: str, n_nodes: int, colocated: bool) -> None:
        """A stint began (or its rate changed) at `state.credited_at`."""
        if colocated:
            self._stints.pop(state.spec.index, None)
            return
        # a job without GPUs holds one host slot: its rate is one on no GPU, not on one
        n_gpus = len(state.gpus) if state.spec.num_gpus else 0
        key = self._key(state.spec, gpu_type, n_gpus, n_nodes)
        mature = max(state.progress_from, state.credited_at) + self.min_observation_s
        self._stints[state.spec.index] = (state.version, key, state._rate, mature)
        self._seq += 1
        heapq.heappush(
            self._maturing,
            (mature, self._seq, state.spec.index, state, state.version, key, state._rate),
        )

    def on_stop(self, state: JobState, now: float) -> None:
        """A stint ended at `now` (called before the engine forgets it)."""
        stint = self._stints.pop(state.spec.index, None)
        if stint is not None and stint[0] == state.version and now >= stint[3]:
            self._learn(stint[1], stint[2])

    # ---- what policies ask ----------------------------------------------------------------
    def _key(self, job: JobSpec, gpu_type: str, n_gpus: int, n_nodes: int) -> _Key:
        who = job.model if job.type_durations is None else ("job", job.index)
        return (who, gpu_type, n_gpus, n_nodes)

    def _learn(self, key: _Key, rate: float) -> None:
        if self.measurement_sigma:
            rate *= float(np.exp(self._noise.normal(0.0, self.measurement_sigma)))
        self._sum[key] = self._sum.get(key, 0.0) + rate
        self._count[key] = self._count.get(key, 0) + 1
        self.observations += 1

    def measured(self, job: JobSpec, gpu_type: str, n_gpus: int, n_nodes: int) -> float | None:
        """The mean measured rate there, or None when nothing was measured yet."""
        key = self._key(job, gpu_type, n_gpus, n_nodes)
        count = self._count.get(key)
        return None if not count else self._sum[key] / count

    def _prior_rate(self, job: JobSpec, gpu_type: str, n_gpus: int, n_nodes: int) -> float:
        if not job.num_gpus:  # no GPU throughput to guess: its rate is its traced duration's
            return self._rates.rate(job, gpu_type, 0, 1)
        if isinstance(self.prior, str):  # "agnostic", the only name __init__ keeps
            ref = job.gpu_type if job.gpu_type in self._types else None
            if ref is None:
                ref = self._rates.truth.reference_type(job.model) or self._types[0]
            base = self._rates.rate(
                job, ref, job.num_gpus, self._consolidated_nodes(ref, job.num_gpus)
            )
            return base * n_gpus / job.num_gpus
        try:
            return self.prior.throughput(job.model, gpu_type, n_gpus, n_nodes)
        except UnknownModelError:
            return 0.0

    def _true_throughput(self, job: JobSpec, gpu_type: str, n_gpus: int, n_nodes: int) -> float:
        measured = self.measured(job, gpu_type, n_gpus, n_nodes)
        if measured is not None:
            return measured
        if self._rates.rate(job, gpu_type, n_gpus, n_nodes) <= 0:
            return 0.0  # where a job cannot run at all (memory, constraint) is known up front
        return self._prior_rate(job, gpu_type, n_gpus, n_nodes)

    def best_type(self, job: JobSpec) -> tuple[str, float]:
        self._best = {}  # what is fastest changes as rates are learned
        return super().best_type(job)

    def _running_rate(self, state: JobState) -> float:
        stint = self._stints.get(state.spec.index)
        if stint is not None and stint[0] == state.version and self._now >= stint[3]:
            return state._rate  # it has run there long enough to be measured
        gpus, id_node = state.gpus, self._id_node  # GPU ids or a host slot
        n_nodes = len({id_node[g] for g in gpus})
        n_gpus = len(gpus) if state.spec.num_gpus else 0
        return self.throughput(state.spec, self._id_type[gpus[0]], n_gpus, n_nodes)

    def __repr__(self) -> str:
        prior = self.prior if isinstance(self.prior, str) else getattr(self.prior, "name", "?")
        return (
            f"LearnedEstimator(prior={prior!r}, min_observation_s={self.min_observation_s}, "
            f"measurement_sigma={self.measurement_sigma}, sigma={self.sigma})"
        )
