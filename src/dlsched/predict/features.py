"""Features of a job for the predictors, from the trace's own columns.

`job_features` takes what a predictor may know of a job at submission out of its spec (never
its work). The features themselves (user, VC, the first job-name tokens, the GPU count, the
submit hour of day and day of week) are extracted by
`dlsched.traces.transforms.job_history_features`, the same function that gives a whole
workload's feature table (`dlsched.traces.transforms.history_features`); the names below are
re-exported from there. `FeatureEncoder` turns a job's features into a numeric row for a tree
model: the categories as codes (learned from the jobs observed, in the order first seen;
unseen → missing), the numbers as they are.
"""

from __future__ import annotations

import math

from dlsched.jobs import JobSpec
from dlsched.predict.base import JobFeatures
from dlsched.traces.transforms import (
    HISTORY_CATEGORICAL as CATEGORICAL,
)
from dlsched.traces.transforms import (
    HISTORY_FEATURES as FEATURE_NAMES,
)
from dlsched.traces.transforms import (
    NAME_TOKENS,
    job_history_features,
    name_tokens,
)

MAX_CATEGORIES = 250
"""Codes per categorical feature (scikit-learn's trees take at most 255); later values are
missing."""

__all__ = [
    "CATEGORICAL",
    "FEATURE_NAMES",
    "MAX_CATEGORIES",
    "NAME_TOKENS",
    "FeatureEncoder",
    "history_values",
    "job_features",
    "name_tokens",
]


def job_features(spec: JobSpec) -> JobFeatures:
    """What may be known of a job at its submission."""
    return JobFeatures(
        job_id=spec.job_id,
        submit_time=spec.submit_time,
        num_gpus=spec.num_gpus,
        user=spec.user,
        vc=spec.vc,
        name=spec.name,
        model=spec.model,
        gpu_type=spec.gpu_type,
    )


def history_values(features: JobFeatures) -> tuple[str | float | None, ...]:
    """A job's `FEATURE_NAMES` values (`dlsched.traces.transforms.job_history_features`)."""
    return job_history_features(
        user=features.user,
        vc=features.vc,
        name=features.name,
        num_gpus=features.num_gpus,
        submit_time=features.submit_time,
    )


class FeatureEncoder:
    """Category codes learned from observed jobs, and the numeric row of a job."""

    def __init__(self) -> None:
        self._codes: list[dict[str, int] | None] = [{} if c else None for c in CATEGORICAL]

    def learn(self, features: JobFeatures) -> None:
        """Give codes to the job's categories not seen before (up to `MAX_CATEGORIES`)."""
        for codes, value in zip(self._codes, history_values(features), strict=True):
            if (
                codes is not None
                and isinstance(value, str)
                and value not in codes
                and len(codes) < MAX_CATEGORIES
            ):
                codes[value] = len(codes)

    def row(self, features: JobFeatures) -> list[float]:
        """The job's feature values, in `FEATURE_NAMES` order (NaN: missing or unseen)."""
        row: list[float] = []
        for codes, value in zip(self._codes, history_values(features), strict=True):
            if codes is None:
                row.append(float(value) if isinstance(value, int | float) else math.nan)
            else:
                found = codes.get(value) if isinstance(value, str) else None
                row.append(math.nan if found is None else float(found))
        return row
