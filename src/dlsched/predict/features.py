"""Features of a job for the predictors, from the trace's own columns.

`job_features` takes what a predictor may know of a job at submission out of its spec (never
its work). `FeatureEncoder` turns `JobFeatures` into a numeric row for a tree model: user,
VC and the first job-name tokens as category codes (learned from the jobs observed, in the
order first seen; unseen → missing), the GPU count, and the submit hour of day and day of
week (from ``submit_time`` on the trace's axis: a trace whose origin is not midnight shifts
them, which a tree model does not mind).
"""

from __future__ import annotations

import math
import re

from dlsched.jobs import JobSpec
from dlsched.predict.base import JobFeatures

#: The characters a job name is split at into tokens ("bert-large_ft.v2" → bert, large, ft, v2)
_TOKEN_SPLIT = re.compile(r"[^0-9A-Za-z]+")

NAME_TOKENS = 2
"""How many leading job-name tokens are features (the rest rarely generalise)."""

MAX_CATEGORIES = 250
"""Codes per categorical feature (scikit-learn's trees take at most 255); later values are
missing."""

FEATURE_NAMES: tuple[str, ...] = (
    "user",
    "vc",
    *(f"name_token_{i}" for i in range(NAME_TOKENS)),
    "num_gpus",
    "submit_hour",
    "submit_weekday",
)
CATEGORICAL: tuple[bool, ...] = (True, True, *([True] * NAME_TOKENS), False, False, False)


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


def name_tokens(name: str | None) -> list[str]:
    """The lower-case alphanumeric tokens of a job name, numbers dropped (run ids, dates)."""
    if not name:
        return []
    return [t for t in _TOKEN_SPLIT.split(name.lower()) if t and not t.isdigit()]


class FeatureEncoder:
    """Category codes learned from observed jobs, and the numeric row of a job."""

    def __init__(self) -> None:
        self._codes: list[dict[str, int]] = [{} for _ in range(2 + NAME_TOKENS)]

    def _categories(self, features: JobFeatures) -> list[str | None]:
        tokens = name_tokens(features.name)
        padded = tokens[:NAME_TOKENS] + [None] * (NAME_TOKENS - len(tokens[:NAME_TOKENS]))
        return [features.user, features.vc, *padded]

    def learn(self, features: JobFeatures) -> None:
        """Give codes to the job's categories not seen before (up to `MAX_CATEGORIES`)."""
        for codes, value in zip(self._codes, self._categories(features), strict=True):
            if value is not None and value not in codes and len(codes) < MAX_CATEGORIES:
                codes[value] = len(codes)

    def row(self, features: JobFeatures) -> list[float]:
        """The job's feature values, in `FEATURE_NAMES` order (NaN: missing or unseen)."""
        row = [
            float(codes[value]) if value is not None and value in codes else math.nan
            for codes, value in zip(self._codes, self._categories(features), strict=True)
        ]
        submit = features.submit_time
        row.append(float(features.num_gpus))
        row.append(math.floor(submit % 86400 / 3600))
        row.append(float(int(submit // 86400) % 7))
        return row
