"""Workload transforms that experiments apply before a run, by name.

They delegate to `dlsched.traces.transforms`, the one home of workload transforms:
`scale_arrivals` is `scale_arrival_rate` (gaps between submissions shrink by `factor`; the
first submission stays put; deadlines keep their slack), `head` keeps the first n jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dlsched.traces import Workload
from dlsched.traces.transforms import scale_arrival_rate


def scale_arrivals(workload: Workload, factor: float) -> Workload:
    """Arrivals `factor` times as fast (see `dlsched.traces.transforms.scale_arrival_rate`)."""
    return scale_arrival_rate(workload, factor)


def _head(workload: Workload, n: int) -> Workload:
    return workload.head(n)


TRANSFORMS: dict[str, tuple[Callable[..., Workload], dict[str, type]]] = {
    "scale_arrivals": (scale_arrivals, {"factor": float}),
    "head": (_head, {"n": int}),
}
"""Transform name → (function(workload, **args), {argument: type})."""


def apply_transforms(workload: Workload, steps: Sequence[Mapping[str, Any]]) -> Workload:
    """Apply normalised transform steps (``{"name": ..., **arguments}``) in order."""
    for step in steps:
        function, _ = TRANSFORMS[step["name"]]
        workload = function(workload, **{k: v for k, v in step.items() if k != "name"})
    return workload
