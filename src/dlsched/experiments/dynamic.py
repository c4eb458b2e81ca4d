"""Dynamic-batch runs from the command line and experiment files (`dlsched.perf.dynamic`).

One rule for ``dlsched replay``/``compare`` and ``dlsched run``: **a workload with a
``batch_schedule`` column runs on the dynamic truth**, `DynamicBatchModel` over the
throughput model the run names (``gavel``, ``scaling``, a plugin's), its schedules read
from the column. The column comes from the trace, or from the seeded transform
``batch_schedules`` (`dlsched.traces.transforms_dynamic.add_batch_schedules`: CLI
``--batch-schedules MIX --batch-seed N``, experiment transform
``{batch_schedules: {static: .., gns: .., accordion: .., seed: ..}}``).

- ``duration`` cannot be the base: it runs every batch size at 1 step/s, so a larger batch
  would speed a job up by the batch ratio, which nothing measured. Such a run is refused.
- A model that already rates jobs by their progress (the goodput models) cannot be the
  base either (`DynamicBatchModel` refuses it, naming the model).
- A batch size the base model has not measured is an error at run time, or runs at the
  initial batch's samples/s with ``unmeasured: samples`` (``--unmeasured-batch samples``).
- What policies see is the estimator's: ``dynamic`` (= ``dynamic:advance``, the whole
  schedule known) or ``dynamic:online`` (only the phases reached). Other estimators see the
  traced (initial) batch size only. A dynamic estimator on a workload without the column
  is refused: it would have nothing to know.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dlsched.errors import ConfigError

COLUMN = "batch_schedule"
UNMEASURED = ("error", "samples")
MIX_KINDS = ("static", "gns", "accordion")
DEFAULT_MIX = "shockwave"
"""``--batch-schedules shockwave``: the paper's mix (§6.1), a third of each kind."""


def has_schedules(workload: Any) -> bool:
    """Whether the workload (or job table) has a ``batch_schedule`` column."""
    jobs = getattr(workload, "jobs", workload)
    return COLUMN in getattr(jobs, "columns", ())


def is_dynamic_estimator(spec: Any) -> bool:
    """Whether an estimator spec (a name or an instance) is the dynamic estimator."""
    if isinstance(spec, str):
        return spec.strip().lower().partition(":")[0] == "dynamic"
    from dlsched.perf.dynamic import DynamicEstimator

    return isinstance(spec, DynamicEstimator)


def parse_mix(text: str) -> dict[str, float]:
    """``shockwave`` (a third each) or ``static=W,gns=W,accordion=W`` (kinds left out: 0)
    → {kind: weight}; a `ConfigError` naming what is wrong."""
    text = text.strip()
    if text.lower() == DEFAULT_MIX:
        return dict.fromkeys(MIX_KINDS, 1 / 3)
    mix: dict[str, float] = {}
    for part in text.split(","):
        kind, sep, value = part.partition("=")
        kind = kind.strip().lower()
        if not sep or kind not in MIX_KINDS:
            raise ConfigError(
                f"batch schedules {text!r}: {part.strip()!r} is not <kind>=<weight> with a kind "
                f"of {', '.join(MIX_KINDS)} (or give {DEFAULT_MIX!r}, a third each)"
            )
        if kind in mix:
            raise ConfigError(f"batch schedules {text!r}: {kind!r} is given twice")
        try:
            weight = float(value)
        except ValueError:
            weight = math.nan
        if not 0 <= weight < math.inf:
            raise ConfigError(
                f"batch schedules {text!r}: the weight of {kind!r} must be a number >= 0, "
                f"got {value.strip()!r}"
            )
        mix[kind] = weight
    return check_mix(mix, f"batch schedules {text!r}")


def check_mix(mix: Mapping[str, float], what: str) -> dict[str, float]:
    """`mix` with every kind (0 where left out), refused when no weight is > 0."""
    full = {kind: float(mix.get(kind, 0.0)) for kind in MIX_KINDS}
    if not sum(full.values()) > 0:
        raise ConfigError(f"{what}: some kind ({', '.join(MIX_KINDS)}) needs a weight > 0")
    return full


def add_schedules(workload: Any, mix: Mapping[str, float], seed: int) -> Any:
    """The workload with a seeded ``batch_schedule`` column (`add_batch_schedules`)."""
    from dlsched.traces.transforms_dynamic import add_batch_schedules

    return add_batch_schedules(workload, mix=dict(mix), seed=seed)


def dynamic_truth(workload: Any, throughput: Any, unmeasured: str = "error") -> Any:
    """`DynamicBatchModel` over `throughput` (a name or a model) with the workload's
    schedules; a `ConfigError` for a base that cannot carry them (module docstring)."""
    from dlsched.perf import make_throughput
    from dlsched.perf.base import DurationModel
    from dlsched.perf.dynamic import DynamicBatchModel, schedules_from_workload

    if unmeasured not in UNMEASURED:
        raise ConfigError(
            f"unmeasured batch must be one of {', '.join(UNMEASURED)}, got {unmeasured!r}"
        )
    base = make_throughput(throughput)
    if isinstance(base, DurationModel):
        raise ConfigError(
            f"the workload has a {COLUMN} column, which needs a throughput model that measures "
            "each batch size (gavel, scaling); throughput 'duration' runs every batch at "
            "1 step/s"
        )
    try:
        return DynamicBatchModel(base, schedules_from_workload(workload), unmeasured)
    except ValueError as exc:
        if type(exc) is ValueError:  # the base rates by progress: name the throughput
            raise ConfigError(f"throughput {getattr(base, 'name', base)!r}: {exc}") from None
        raise


def check_estimator(workload: Any, estimator: Any) -> None:
    """Refuse a dynamic estimator on a workload without schedules."""
    if is_dynamic_estimator(estimator) and not has_schedules(workload):
        raise ConfigError(
            f"estimator {estimator if isinstance(estimator, str) else repr(estimator)!r} sees "
            f"batch-size schedules, but the workload has no {COLUMN} column; add one to the "
            "trace or with the batch_schedules transform (--batch-schedules)"
        )
