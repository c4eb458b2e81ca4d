"""`PredictingEstimator`: the oracle's throughput, with each job's work from a predictor.

What Helios' QSSF and an SJF without clairvoyance see: a job's duration is not known until
it finishes, so it is predicted from the jobs that finished before (`dlsched.predict`).
This estimator enforces the rolling, leakage-free protocol:

- the predictor is given finished jobs only, one `FinishedJob` at each completion (the
  engine calls `on_finish` once the job is finished, at the instant it finishes);
- it is asked with a job's `JobFeatures` (never its work) and the engine's clock;
- a job's prediction is made the first time a policy asks about the job (for an
  event-driven policy, at the scheduling call of its arrival) and kept: the job's estimated
  work is that prediction × its reference rate (the rate its traced duration was measured
  at, DESIGN §2), so a policy's order of queued jobs does not drift while they wait, as in
  the Helios artifact, which assigns a queued job's priority once.

Throughput (which GPU type is faster, by how much) stays the oracle's: this estimator is
about *how long* jobs are, not how fast they run where. The ``oracle`` predictor answers
with the truth. Prediction error over the finished jobs is in `figures()`, which
`build_result` puts into ``summary()`` as the ``prediction_*`` keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dlsched.cluster import Cluster
from dlsched.jobs import JobSpec, JobState
from dlsched.perf.estimator import OracleEstimator
from dlsched.perf.rates import JobRates
from dlsched.predict import get as get_predictor
from dlsched.predict.base import FinishedJob, Predictor
from dlsched.predict.features import job_features


class PredictingEstimator(OracleEstimator):
    """Work from a duration predictor, trained on finished jobs only (module docstring)."""

    name = "predict"

    def __init__(self, predictor: str | Predictor = "helios", **params: Any) -> None:
        super().__init__()
        if isinstance(predictor, str):
            predictor = get_predictor(predictor, **params)
        elif params:
            raise TypeError("give a predictor's parameters with its name, not with an instance")
        self.predictor = predictor
        self._clock: Any = None

    def bind(
        self, rates: JobRates, specs: Sequence[JobSpec], cluster: Cluster, rng: np.random.Generator
    ) -> None:
        super().bind(rates, specs, cluster, rng)
        n = len(specs)
        self._predicted = np.full(n, math.nan)  # seconds, the first prediction of each job
        self._predicted_at = np.full(n, math.nan)
        self._actual = np.full(n, math.nan)
        self._clairvoyant = bool(getattr(self.predictor, "clairvoyant", False))
        self.predictor.start()

    def watch(self, clock: Any) -> None:
        """The engine's clock (an object with ``now``), read at each prediction."""
        self._clock = clock

    @property
    def now(self) -> float:
        """The engine's time (0 before a run binds its clock)."""
        return 0.0 if self._clock is None else float(self._clock.now)

    def _reference_rate(self, job: JobSpec) -> float:
        """Steps/s on the allocation the job's duration was traced on."""
        if job.duration is not None and job.duration > 0 and job.total_steps > 0:
            return job.total_steps / job.duration
        return self.best_type(job)[1]

    def _true_duration(self, job: JobSpec) -> float:
        """The job's traced duration: its run time alone on its requested allocation."""
        if job.duration is not None:
            return float(job.duration)
        rate = self.best_type(job)[1]
        return job.total_steps / rate if rate > 0 else math.inf

    def predicted_duration(self, job: JobSpec) -> float:
        """The job's predicted duration (made on the first ask, then kept)."""
        index = job.index
        seconds = self._predicted[index]
        if seconds == seconds:  # not NaN: already predicted
            return float(seconds)
        if self._clairvoyant:
            seconds = self._true_duration(job)
        else:
            seconds = float(self.predictor.predict(job_features(job), self.now))
            if not seconds > 0 or math.isnan(seconds):
                raise ValueError(
                    f"predictor {self.predictor!r} predicted {seconds!r} s for job "
                    f"{job.job_id!r}; a prediction must be a positive number of seconds"
                )
        self._predicted[index] = seconds
        self._predicted_at[index] = self.now
        return seconds

    def total_steps(self, job: JobSpec) -> float:
        return self.predicted_duration(job) * self._reference_rate(job)

    def on_finish(self, state: JobState) -> None:
        """A job finished now: the predictor learns of it (the only way it learns)."""
        spec = state.spec
        actual = self._true_duration(spec)
        self._actual[spec.index] = actual
        if not self._clairvoyant:
            finish = float(state.finish_time if state.finish_time is not None else self.now)
            self.predictor.observe(FinishedJob(job_features(spec), finish, actual))

    def figures(self) -> dict[str, Any]:
        """Prediction error over the finished jobs that were predicted: ``prediction_mae_s``
        (mean absolute error, seconds), ``prediction_median_rel_error`` and
        ``prediction_p90_rel_error`` (|predicted − actual| / actual), ``prediction_jobs``."""
        both = ~np.isnan(self._predicted) & ~np.isnan(self._actual)
        predicted, actual = self._predicted[both], self._actual[both]
        error = np.abs(predicted - actual)
        positive = actual > 0
        relative = error[positive] / actual[positive]
        nan = math.nan
        return {
            "prediction_jobs": int(both.sum()),
            "prediction_mae_s": float(error.mean()) if len(error) else nan,
            "prediction_median_rel_error": float(np.median(relative)) if len(relative) else nan,
            "prediction_p90_rel_error": float(np.percentile(relative, 90))
            if len(relative)
            else nan,
        }

    def __repr__(self) -> str:
        return f"PredictingEstimator({self.predictor!r})"
