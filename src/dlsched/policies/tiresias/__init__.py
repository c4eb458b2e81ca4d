"""Tiresias: discretised 2D-LAS and 2D-Gittins (Gu et al., "Tiresias: A GPU Cluster Manager
for Distributed Deep Learning", NSDI 2019), registered as `tiresias` and `tiresias-gittins`.

Two algorithms share these names, chosen by `compat`:

- `compat=False` (default): the paper's algorithm (`paper.py`: `Tiresias`,
  `TiresiasGittins`) — demotions at the exact time a job's GPU-time crosses its queue's
  threshold, FIFO by first start within a queue (or the paper's Gittins formula),
  consolidation-aware placement of placement-sensitive models.
- `compat=True`: the replica of the authors' simulator (`compat.py`: `AuthorsTiresias`,
  `AuthorsTiresiasGittins`), which matches its published runs run for run: whole-second queue
  jumps with its Python 2 arithmetic, its tabulated Gittins index, placement by GPU count.

What they share (parameter checks, the priority walk that admits jobs by GPU count per pool,
applying its answer) is in `common.py`; both Gittins indices are in `gittins.py`. Defaults,
from the authors' simulator (SymbioticLab/Tiresias `simulator/run_sim.py` and `jobs.py`,
`dlas-gpu`): thresholds 3,250 and 7,200 GPU-seconds (3 queues); Gittins Δ = 3,250
GPU-seconds with the `yarn-gput1000.csv` service prior (shipped in `dlsched/data`).
"""

from __future__ import annotations

from collections.abc import Sequence

from dlsched.policies.registry import register
from dlsched.policies.tiresias.common import (
    DEFAULT_THRESHOLDS,
    SENSITIVE_MODELS,
    SENSITIVE_SLOWDOWN,
    TiresiasBase,
    check_sensitive_slowdown,
)
from dlsched.policies.tiresias.compat import AuthorsTiresias, AuthorsTiresiasGittins
from dlsched.policies.tiresias.gittins import (
    GITTINS_DELTA,
    AuthorsGittinsTable,
    GittinsIndex,
    _py2_round,
)
from dlsched.policies.tiresias.paper import Tiresias, TiresiasGittins

__all__ = [
    "DEFAULT_THRESHOLDS",
    "GITTINS_DELTA",
    "SENSITIVE_MODELS",
    "SENSITIVE_SLOWDOWN",
    "AuthorsGittinsTable",
    "AuthorsTiresias",
    "AuthorsTiresiasGittins",
    "GittinsIndex",
    "Tiresias",
    "TiresiasBase",
    "TiresiasGittins",
    "_py2_round",
    "tiresias",
    "tiresias_gittins",
]


@register("tiresias")
def tiresias(
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    starvation_knob: float | None = None,
    placement: str = "sensitive",
    compat: bool = False,
    sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
) -> Tiresias | AuthorsTiresias:
    """Tiresias-L: discretised 2D-LAS with priority queues on GPU-time (NSDI 2019).

    The paper's algorithm (`Tiresias`), or with `compat=True` the replica of the authors'
    simulator (`AuthorsTiresias`; `sensitive_slowdown` is checked but unused there: its
    placement never waits)."""
    if compat:
        check_sensitive_slowdown("tiresias", sensitive_slowdown)
        return AuthorsTiresias(thresholds, starvation_knob, placement)
    return Tiresias(thresholds, starvation_knob, placement, sensitive_slowdown)


@register("tiresias-gittins")
def tiresias_gittins(
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    starvation_knob: float | None = None,
    placement: str = "sensitive",
    compat: bool = False,
    sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
    delta: float = GITTINS_DELTA,
    prior: Sequence[float] | None = None,
) -> TiresiasGittins | AuthorsTiresiasGittins:
    """Tiresias-G: 2D-Gittins index within priority queues on GPU-time (NSDI 2019).

    The paper's algorithm (`TiresiasGittins`), or with `compat=True` the replica of the
    authors' simulator (`AuthorsTiresiasGittins`, with its tabulated index;
    `sensitive_slowdown` is checked but unused there)."""
    if compat:
        check_sensitive_slowdown("tiresias-gittins", sensitive_slowdown)
        return AuthorsTiresiasGittins(thresholds, starvation_knob, placement, delta, prior)
    return TiresiasGittins(thresholds, starvation_knob, placement, sensitive_slowdown, delta, prior)
