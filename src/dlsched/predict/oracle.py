"""The oracle predictor: every job's true duration, the yardstick for the others."""

from __future__ import annotations

from dlsched.predict.base import JobFeatures, Predictor


class OraclePredictor(Predictor):
    """The truth: the estimator answers with each job's traced duration (`clairvoyant`)."""

    name = "oracle"
    clairvoyant = True

    def predict(self, features: JobFeatures, now: float) -> float:
        raise TypeError(
            "the oracle predictor knows the truth only through its estimator "
            "(PredictingEstimator answers for it); it cannot predict on its own"
        )
