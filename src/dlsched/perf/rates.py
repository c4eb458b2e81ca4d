"""`JobRates`: the true rate of a job on an allocation, with per-job measurements.

Most jobs run at the throughput model's rate for their model. A job that carries measured
durations per GPU type (Hydra's cases, for example) runs at `total_steps / duration_on_type`
on those types instead — the measurement is the truth for that job. Types it was not
measured on fall back to the throughput model.
"""

from __future__ import annotations

import math

import numpy as np

from dlsched.errors import SchedulingError, UnknownModelError
from dlsched.jobs import JobSpec
from dlsched.perf.base import ThroughputModel


class JobRates:
    """Cached true rates (steps/s) of jobs on (type, GPU count, node count)."""

    def __init__(self, truth: ThroughputModel) -> None:
        self.truth = truth
        self._cache: dict[tuple, float] = {}

    def rate(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int,
        colocated: tuple[tuple[str | None, int], ...] = (),
    ) -> float:
        """Steps/s; 0 when the job cannot run there (or nobody knows its rate there).

        `colocated` lists (model, GPUs) of whole-GPU jobs packed on the same GPUs; only the
        throughput model's measured pairs give such a job a rate."""
        if job.type_durations is not None and n_gpus == job.num_gpus and not colocated:
            for measured_type, seconds in job.type_durations:
                if measured_type == gpu_type:
                    return job.total_steps / seconds
        key = (job.model, gpu_type, n_gpus, n_nodes, colocated)
        rate = self._cache.get(key)
        if rate is None:
            try:
                rate = self.truth.throughput(
                    job.model, gpu_type, n_gpus, n_nodes, colocated=list(colocated) or None
                )
            except UnknownModelError:
                rate = 0.0
            else:
                rate = checked_rate(rate, self.truth, job.job_id, job.model, gpu_type, n_gpus)
            self._cache[key] = rate
        return rate


def checked_rate(
    rate: object,
    source: object,
    job_id: object,
    model: str | None,
    gpu_type: str,
    n_gpus: int,
    what: str = "rate",
) -> float:
    """`rate` as a float when it is a finite number >= 0, else a `SchedulingError` naming
    the model that gave it (`source`), the job, the GPU type and the GPU count.

    Called once per answer the engine caches, not per event: an infinite rate would finish
    jobs in no time, NaN would order the event queue at random, a negative one would undo
    work, and a text or None would fail far from its cause."""
    if type(rate) is float and 0.0 <= rate < math.inf:
        return rate
    if (
        isinstance(rate, (int, float, np.integer, np.floating))
        and not isinstance(rate, (bool, np.bool_))
        and 0 <= rate < math.inf
    ):
        return float(rate)
    name = getattr(source, "name", None) or type(source).__name__
    raise SchedulingError(
        f"{name!r} gave job {job_id!r} (model {model!r}) the {what} {rate!r} on "
        f"{n_gpus} x {gpu_type}: a throughput must be a finite number of steps/s >= 0 "
        "(0: the job cannot run there)"
    )
