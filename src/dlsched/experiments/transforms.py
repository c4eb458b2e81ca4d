"""Workload transforms that experiments apply before a run, by name.

They delegate to `dlsched.traces.transforms`, the one home of workload transforms:
`scale_arrivals` is `scale_arrival_rate` (gaps between submissions shrink by `factor`; the
first submission stays put; deadlines keep their slack), `head` keeps the first n jobs,
`sample` is `sample_jobs` (n jobs drawn at random, seeded, in submit order), `deadlines` is
`assign_deadlines` (deadline = submit + U(low, high) × duration, seeded) and `elastic` is
`make_elastic` (every job may run on `min_gpus` to `max_factor` × its GPUs) and
`batch_schedules` is `add_batch_schedules` (a seeded ``batch_schedule`` per Gavel-type job,
its kind drawn with the weights ``static``, ``gns``, ``accordion``; kinds left out weigh 0,
and with none given a third each, Shockwave's §6.1 mix; see `dlsched.experiments.dynamic`).

A transform that takes a ``seed`` draws random numbers; its seed may be left out (0), and
with ``workload: {resample_per_seed: true}`` each replicate gets its own (see ``config``).

CPU and host-memory demands (``cpu_milli``, ``memory_mib``: the whole job's) stay as traced,
and rightly: no transform here changes a job's ``num_gpus``, so its demand per GPU is what
the trace says. ``elastic`` lets a job run on other GPU counts, and there the engine scales
the demand: on n GPUs a job holds its demand × n / ``num_gpus``, rounded up
(`dlsched.engine.ledger.Ledger.node_demands`). A transform that changed ``num_gpus`` would
have to scale the demands by the same factor (tests/test_resource_transforms.py checks every
registered transform keeps ``num_gpus`` and the demands).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dlsched.registry import Registry
from dlsched.traces import Workload
from dlsched.traces.transforms import (
    assign_deadlines,
    make_elastic,
    sample_jobs,
    scale_arrival_rate,
)


def scale_arrivals(workload: Workload, factor: float) -> Workload:
    """Arrivals `factor` times as fast (see `dlsched.traces.transforms.scale_arrival_rate`)."""
    return scale_arrival_rate(workload, factor)


def _head(workload: Workload, n: int) -> Workload:
    return workload.head(n)


def _sample(workload: Workload, n: int, seed: int) -> Workload:
    return sample_jobs(workload, n, seed=seed)


def _deadlines(workload: Workload, low: float, high: float, seed: int) -> Workload:
    return assign_deadlines(workload, low, high, seed=seed)


def _elastic(workload: Workload, min_gpus: int, max_factor: float) -> Workload:
    return make_elastic(workload, min_gpus=min_gpus, max_factor=max_factor)


def _batch_schedules(
    workload: Workload, static: float, gns: float, accordion: float, seed: int
) -> Workload:
    from dlsched.experiments.dynamic import add_schedules

    return add_schedules(workload, {"static": static, "gns": gns, "accordion": accordion}, seed)


Transform = tuple[Callable[..., Workload], dict[str, type]]

TRANSFORMS: Registry[Transform] = Registry("transform", entry_point_group="dlsched.transforms")
for _name, _transform in {
    "scale_arrivals": (scale_arrivals, {"factor": float}),
    "head": (_head, {"n": int}),
    "sample": (_sample, {"n": int, "seed": int}),
    "deadlines": (_deadlines, {"low": float, "high": float, "seed": int}),
    "elastic": (_elastic, {"min_gpus": int, "max_factor": float}),
    "batch_schedules": (
        _batch_schedules,
        {"static": float, "gns": float, "accordion": float, "seed": int},
    ),
}.items():
    TRANSFORMS.add(_name, _transform)  # type: ignore[arg-type]
"""Transform name → (function(workload, **args), {argument: type}); plugins register the
same pair under the ``dlsched.transforms`` entry-point group."""


def apply_transforms(workload: Workload, steps: Sequence[Mapping[str, Any]]) -> Workload:
    """Apply normalised transform steps (``{"name": ..., **arguments}``) in order."""
    for step in steps:
        function, _ = TRANSFORMS[step["name"]]
        workload = function(workload, **{k: v for k, v in step.items() if k != "name"})
    return workload
