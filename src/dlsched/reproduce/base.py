"""What a reproduction is: published numbers, a declared tolerance, and the runs that measure
ours through the code path a user would use (`dlsched.simulate` with registered names).

A `Reproduction` plans its `Point`s (one published number each: a figure's series at an x,
with its tolerance) and the `Task`s that measure them (one task may feed several points: a
run's average JCT, makespan and preemptions). Tasks are plain JSON-safe specs handed to the
reproduction's `measure` function, which returns named metrics; that is what the resumable
store keeps, so a finished task is never run twice.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.bundled import source_checkout
from dlsched.errors import DlschedError

SHARED_ENV = "DLSCHED_SHARED"
"""Environment variable naming the shared data folder (default: see `shared_candidates`)."""


class MissingDataError(DlschedError, FileNotFoundError):
    """A data file a reproduction compares against is not there."""


@dataclass(frozen=True)
class Tolerance:
    """How far ours may be from a published number.

    A point is within tolerance when ``|ours - published| <= abs + rel * |published|``, or,
    with `factor`, when ours lies in ``[published / factor - abs, published * factor + abs]``
    (for counts such as preemptions, where "within 2×" is the claim).
    """

    rel: float = 0.0
    abs: float = 0.0
    factor: float | None = None

    def allows(self, ours: float, published: float) -> bool:
        """Whether `ours` is within this tolerance of `published` (NaN never is)."""
        if math.isnan(ours) or math.isnan(published):
            return False
        if self.factor is not None:
            low, high = sorted((published / self.factor, published * self.factor))
            return low - self.abs <= ours <= high + self.abs
        return abs(ours - published) <= self.abs + self.rel * abs(published) + 1e-12

    @property
    def relative(self) -> bool:
        """Whether the tolerance is relative (a share or a factor, or exact): then the
        relative deviation is what it bounds. An absolute-only one (``±2`` missed deadlines)
        bounds a difference, and relative deviations of small counts say little."""
        return self.rel > 0 or self.factor is not None or self.abs == 0

    def describe(self) -> str:
        """The tolerance in words, e.g. ``±10 %`` or ``within 2× (±2)``."""
        parts = []
        if self.factor is not None:
            parts.append(f"within {self.factor:g}×")
        elif self.rel:
            parts.append(f"±{_percent(self.rel)}")
        if self.abs:
            parts.append(f"±{self.abs:g}")
        return " ".join(parts) if parts else "exact"


def _percent(value: float) -> str:
    text = f"{100 * value:.3g}"
    return f"{text} %"


@dataclass(frozen=True)
class Task:
    """One measurement: `id` (unique within its reproduction, readable) and the JSON-safe
    `spec` that the reproduction's `measure` turns into a `simulate` call."""

    id: str
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class Point:
    """One published number and how ours is read for it.

    `figure` groups points into one overlay plot, `series` into one curve of it (published
    markers, ours a line), `x` places the point on the curve (`x_name` labels the axis).
    `metric` names the value of `task`'s measurement compared with `published`.
    """

    figure: str
    series: str
    x: float
    metric: str
    published: float
    tolerance: Tolerance
    task: Task
    x_name: str = "x"
    note: str = ""

    @property
    def label(self) -> str:
        """A readable id: series, x, metric and figure."""
        return f"{self.series} @ {self.x:g} {self.x_name}, {self.metric} [{self.figure}]"


@dataclass(frozen=True)
class DataFile:
    """A file a reproduction reads, relative to the shared data folder, and what it is."""

    path: str
    what: str


@dataclass(frozen=True)
class Reproduction:
    """A registered reproduction of published results (see `dlsched.reproduce`).

    - `paper`, `source`: the paper and the figure or table reproduced.
    - `data`: the shared files it reads (checked before anything runs).
    - `plan(shared, quick)`: the points, reading the published values from `shared`;
      `quick=True` gives the documented subset (`quick_subset` says which).
    - `measure(spec, shared)`: runs one task and returns its metrics by name; must be a
      module-level function (it runs in worker processes).
    - `accepts(metrics)`: whether a stored task's metrics stand (default: always); a task
      whose stored metrics it refuses runs again.
    - `cost_quick`, `cost_full`: rough CPU time, for `dlsched reproduce --list`.
    - `summary`: paper and figure in a few words, for the fidelity table.
    - `revision`: raised when a change of dlsched's code changes the reproduction's
      results, so that tasks stored by the older code are run again rather than reused
      (a stored task is named by a hash of its spec, the dlsched version and this).
    """

    name: str
    paper: str
    source: str
    data: tuple[DataFile, ...]
    plan: Callable[[Path, bool], Sequence[Point]]
    measure: Callable[[Mapping[str, Any], Path], Mapping[str, float]]
    quick_subset: str
    cost_quick: str
    cost_full: str
    summary: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)
    accepts: Callable[[Mapping[str, float]], bool] | None = None
    revision: int = 0

    def check_data(self, shared: Path) -> None:
        """Raise `MissingDataError` naming the first data file that is not in `shared`."""
        for item in self.data:
            path = shared / item.path
            if not path.exists():
                raise MissingDataError(
                    f"{path}: not found; it is {item.what}, which reproduction {self.name!r} "
                    f"compares against. {_where_the_shared_folder_goes(shared)}"
                )


def shared_candidates() -> list[Path]:
    """Where the shared data folder is looked for when neither ``--shared`` nor
    ``$DLSCHED_SHARED`` names it, in order: ``../shared`` beside the repository (only in a
    source checkout: an installed package has no repository around it), then ``../shared``
    beside the working directory."""
    checkout = source_checkout()
    beside_repository = [checkout.parent / "shared"] if checkout is not None else []
    return [*beside_repository, Path.cwd().parent / "shared"]


def shared_folder(given: str | os.PathLike[str] | None = None) -> Path:
    """The shared data folder: `given`, else ``$DLSCHED_SHARED``, else the first of
    `shared_candidates()` that is a folder (the first of them if none is)."""
    if given is not None:
        return Path(given)
    if os.environ.get(SHARED_ENV):
        return Path(os.environ[SHARED_ENV])
    candidates = shared_candidates()
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


def _where_the_shared_folder_goes(shared: Path) -> str:
    """The sentence that ends a missing-data error: where the data was looked for, and how
    to name the folder that holds it (``--shared``)."""
    name_it = f"name the folder holding the data with --shared DIR (or ${SHARED_ENV})"
    if shared.is_dir():
        return f"The shared data folder used is {shared}; if the data is elsewhere, {name_it}"
    if shared not in shared_candidates():  # named by --shared or $DLSCHED_SHARED
        return f"{shared} is not a folder: {name_it}"
    if source_checkout() is None:
        return (
            "dlsched runs from an installed package, so there is no repository to find "
            f"../shared beside, and there is none beside the working directory ({shared}): "
            + name_it
        )
    return f"Put the shared data folder beside the repository ({shared}), or {name_it}"
