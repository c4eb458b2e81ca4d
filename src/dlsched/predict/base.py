"""What a predictor is shown, and the protocol it follows.

A predictor learns a job's duration from history and must never see the future. The
estimator that consults it (`dlsched.perf.predicting.PredictingEstimator`) enforces that:

- `predict(features, now)` is given a `JobFeatures`: what is known of a job when it is
  submitted (id, submit time, GPUs, user, VC, job name, model, GPU type). No work, no
  duration: a predictor cannot read the answer off the job it is asked about.
- `observe(record)` is given a `FinishedJob` (the features plus the job's actual duration and
  GPU-time) once, at the instant the job finishes, in finish order. It is the only way a
  predictor learns anything, so at a prediction made at time ``now`` it has seen exactly the
  jobs that finished at or before ``now``.
- `start()` is called when a run starts: all state is built there (one instance may serve
  many runs), never in ``__init__``.

The duration predicted and observed is the job's *traced* duration: its run time alone on
the allocation it asked for (the trace's ``duration``; DESIGN §2), which is what the work of
a job is converted from. GPU-time is that duration × the GPUs it asked for.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JobFeatures:
    """What is known of a job at its submission: the trace's own columns, never its work."""

    job_id: object
    submit_time: float
    num_gpus: int
    user: str | None = None
    vc: str | None = None
    name: str | None = None
    model: str | None = None
    gpu_type: str | None = None


@dataclass(frozen=True, slots=True)
class FinishedJob:
    """A job that finished: its features, when it finished, and what it took."""

    features: JobFeatures
    finish_time: float
    duration_s: float  # its traced duration (run time alone on its requested allocation)

    @property
    def gpu_time_s(self) -> float:
        """GPU-seconds: duration × GPUs asked for (a job without GPUs counts as one)."""
        return self.duration_s * max(1, self.features.num_gpus)


class Predictor:
    """Base class of predictors: predicts a job's duration in seconds from finished jobs.

    Subclasses override `observe` and `predict` (and `start`, calling this one, when they
    keep state). `clairvoyant` predictors (the oracle) are answered with the truth by the
    estimator and never asked to learn.
    """

    name = "predictor"
    clairvoyant = False

    def start(self) -> None:
        """Forget everything: a new run begins."""

    def observe(self, record: FinishedJob) -> None:
        """Learn from one job that has just finished."""

    def predict(self, features: JobFeatures, now: float) -> float:
        """The predicted duration (seconds, > 0) of a job submitted at or before `now`."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
