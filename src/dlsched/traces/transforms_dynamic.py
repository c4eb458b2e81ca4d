"""A seeded transform that gives jobs the batch-size schedules Shockwave evaluates.

Shockwave (Zheng et al., NSDI '23, §6.1; artifact ``uw-mad-dash/shockwave``) mixes three
kinds of jobs: *static* ones, *GNS* jobs whose batch size doubles as the gradient noise
scale grows, and *Accordion* jobs that train at their initial batch size in "critical
regimes" and at the model's largest batch size between them. `add_batch_schedules` writes
a ``batch_schedule`` column (`dlsched.traces.batch_schedule`) for the Gavel job types
(``"<model> (batch size <B>)"``); other models stay static.

Faithful to the artifact (``scheduler/scheduler.py``):
    the largest batch size per model (``max_bs_dict``: LM 80, ResNet-18 256, ResNet-50 128,
    Recommendation 8192; Transformer 128 from ``bs_limit`` in ``utils.py``); a job already at
    it never scales; GNS only doubles, up to it; Accordion's critical regimes
    (``_simulate_accordion``): LM epochs < 10; Recommendation < 30 (batch 512/1024), < 40
    (2048), < 10 (4096/8192); ResNet-50 ``epoch % 30 < 10``; ResNet-18 the first 10 epochs
    (20 at batch 256) and epochs 150–159 and 250–259; Transformer jobs do not run Accordion
    (they stay static); the dataset sizes that turn steps into epochs (``dataset_size_dict``).

Simplified:
    GNS's doubling epochs. The artifact reads them from a hand-written table per (model,
    batch size, scale factor) measured on its runs (``utils.get_gns_bs_pattern``; for
    ResNet-18 at batch 32 on one GPU: doubling at epochs 21, 31 and 51). Here the first
    doubling comes after a seeded uniform 10–30 epochs and each next one 10–20 epochs later
    (the range of the artifact's ResNet-18 entries), a draw per job.

A job's epochs are its work: ``total_steps × B / dataset size``, or, for a job given by its
duration, ``duration × rate`` of its model on its traced GPU type (V100 when the trace does
not say), Gavel's profiled table by default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dlsched.errors import ConfigError
from dlsched.traces.batch_schedule import COLUMN, Phase, format_batch_schedule, traced_batch_size
from dlsched.traces.transforms import _derive, _seed
from dlsched.traces.workload import Workload

MODES = ("static", "gns", "accordion")

MAX_BATCH: dict[str, int] = {
    "ResNet-18": 256,
    "ResNet-50": 128,
    "Transformer": 128,
    "LM": 80,
    "Recommendation": 8192,
}
"""The largest batch size per model (artifact ``scheduler.py`` ``max_bs_dict``, ``utils.py``
``bs_limit``): Gavel's profile stops there."""

DATASET_SIZE: dict[str, int] = {
    "ResNet-18": 50000,  # cifar10
    "ResNet-50": 100000,  # imagenet (the artifact's subset)
    "Transformer": 10000,  # multi30k
    "LM": 59675,  # wikitext2
    "Recommendation": 117907,  # ml-20m
}
"""Samples per epoch (artifact ``scheduler.py`` ``dataset_size_dict``)."""


def critical(model: str, base: int, epoch: int) -> bool:
    """Whether `epoch` (0-based) is in one of Accordion's critical regimes for `model`
    started at batch size `base` (artifact ``_simulate_accordion``)."""
    if model == "LM":
        return epoch < 10
    if model == "Recommendation":
        return epoch < (30 if base in (512, 1024) else 40 if base == 2048 else 10)
    if model == "ResNet-50":
        return epoch % 30 < 10
    if model == "ResNet-18":
        head = 20 if base == 256 else 10
        return epoch < head or 150 <= epoch < 160 or 250 <= epoch < 260
    return True  # Transformer: no Accordion (static)


def gns_phases(base: int, top: int, epochs: float, rng: np.random.Generator) -> list[Phase]:
    """Doubling from `base` up to `top` over `epochs` epochs (module docstring)."""
    phases: list[Phase] = []
    at, bs = 0.0, base
    gap = float(rng.integers(10, 31))
    while bs * 2 <= top and at + gap < epochs:
        phases.append(Phase(gap, bs))
        at += gap
        bs *= 2
        gap = float(rng.integers(10, 21))
    phases.append(Phase(epochs - at, bs))
    return phases


def accordion_phases(model: str, base: int, top: int, epochs: float) -> list[Phase]:
    """Initial batch size in critical regimes, `top` elsewhere, epoch by epoch."""
    phases: list[Phase] = []
    whole = math.ceil(epochs)
    for epoch in range(whole):
        length = min(1.0, epochs - epoch)
        phases.append(Phase(length, base if critical(model, base, epoch) else top))
    return phases


def add_batch_schedules(
    workload: Workload,
    *,
    mix: Mapping[str, float] | None = None,
    seed: Any,
    throughput: Any = None,
) -> Workload:
    """A ``batch_schedule`` for each Gavel-type job, its kind drawn from `mix` (``static``,
    ``gns``, ``accordion`` → probability; default Shockwave's §6.1 mix of a third each).

    `throughput` (a `ThroughputModel`, default Gavel's table) converts a duration to
    steps. A job whose model has no batch size in its name, or that starts at its model's
    largest batch size, stays static (no schedule)."""
    mix = dict({"static": 1 / 3, "gns": 1 / 3, "accordion": 1 / 3} if mix is None else mix)
    for kind, p in mix.items():
        if kind not in MODES:
            raise ConfigError(f"add_batch_schedules: mix kind {kind!r} is not one of {MODES}")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < math.inf:
            raise ConfigError(
                f"add_batch_schedules: mix[{kind!r}] must be a number >= 0, got {p!r}"
            )
    weights = np.array([float(mix.get(k, 0.0)) for k in MODES])
    if not weights.sum() > 0:
        raise ConfigError("add_batch_schedules: mix must give some kind a probability > 0")
    rng = np.random.default_rng(_seed("add_batch_schedules", seed))
    if throughput is None:
        from dlsched.perf import ProfileTable

        throughput = ProfileTable.gavel()
    jobs = workload.jobs.copy()
    kinds = rng.choice(len(MODES), size=len(jobs), p=weights / weights.sum())
    texts: list[str | None] = []
    counts = dict.fromkeys(MODES, 0)
    for i, row in enumerate(jobs.itertuples(index=False)):
        model = getattr(row, "model", None)
        base = traced_batch_size(model) if isinstance(model, str) else None
        family = str(model).split(" (", 1)[0] if base is not None else None
        kind = MODES[int(kinds[i])]
        job_rng = np.random.default_rng([int(rng.integers(2**62)), i])  # per job, by order
        if family not in MAX_BATCH or base is None or base >= MAX_BATCH[family]:
            texts.append(None)
            counts["static"] += 1
            continue
        epochs = _epochs(row, family, base, throughput)
        if kind == "gns" and epochs > 0:
            phases = gns_phases(base, MAX_BATCH[family], epochs, job_rng)
        elif kind == "accordion" and family != "Transformer" and epochs > 0:
            phases = accordion_phases(family, base, MAX_BATCH[family], epochs)
        else:
            phases = []
        if len({p.batch_size for p in phases}) <= 1:
            texts.append(None)
            counts["static"] += 1
        else:
            texts.append(format_batch_schedule(phases))
            counts[kind] += 1
    jobs[COLUMN] = texts
    columns = [c for c in jobs.columns if c not in (COLUMN, "source_row")]
    columns += [COLUMN] + (["source_row"] if "source_row" in jobs.columns else [])
    entry = {
        "name": "add_batch_schedules",
        "mix": {k: float(mix.get(k, 0.0)) for k in MODES},
        "seed": seed if isinstance(seed, int) else repr(seed),
        "jobs_by_kind": counts,
    }
    return _derive(workload, jobs[columns], entry)


def _epochs(row: Any, family: str, base: int, throughput: Any) -> float:
    """The job's work in epochs (module docstring); 0 when it cannot be told."""
    steps = getattr(row, "total_steps", math.nan)
    if steps != steps:
        duration = getattr(row, "duration", math.nan)
        if duration != duration:
            return 0.0
        gpu_type = getattr(row, "gpu_type", None) or "v100"
        try:
            rate = throughput.throughput(row.model, str(gpu_type).lower(), int(row.num_gpus))
        except (KeyError, ValueError):
            return 0.0
        steps = duration * rate
    return float(steps) * base / DATASET_SIZE[family]
