"""Tiresias: discretised 2D-LAS and 2D-Gittins (Gu et al., "Tiresias: A GPU Cluster Manager
for Distributed Deep Learning", NSDI 2019), registered as `tiresias` and `tiresias-gittins`.

Two algorithms share these names, chosen by `compat`:

- `compat=False` (default): the paper's algorithm (`paper.py`: `Tiresias`,
  `TiresiasGittins`) — continuous time, consolidation-aware placement of placement-sensitive
  models. Where the paper is silent (the order within a queue, when a running job is
  demoted, how the starvation knob is read) it follows the authors' implementation, and it
  ranks by their tabulated Gittins index, whose order the paper's formula does not
  reproduce within 10 %; `literal=True` reads the paper strictly instead (exact-time
  demotions, FIFO by first start, the last wait against the last run, the paper's Gittins
  formula). See `paper.py` for each choice and its measured effect.
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
    literal: bool = False,
) -> Tiresias | AuthorsTiresias:
    """Tiresias-L: discretised 2D-LAS with priority queues on GPU-time (NSDI 2019).

    The paper's algorithm (`Tiresias`; `literal=True`: the strictly literal reading of the
    paper), or with `compat=True` the replica of the authors' simulator (`AuthorsTiresias`;
    `sensitive_slowdown` is checked but unused there: its placement never waits)."""
    if compat:
        check_sensitive_slowdown("tiresias", sensitive_slowdown)
        check_literal("tiresias", literal)
        return AuthorsTiresias(thresholds, starvation_knob, placement)
    return Tiresias(thresholds, starvation_knob, placement, sensitive_slowdown, literal)


@register("tiresias_gittins", "tiresias-gittins")
def tiresias_gittins(
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    starvation_knob: float | None = None,
    placement: str = "sensitive",
    compat: bool = False,
    sensitive_slowdown: float = SENSITIVE_SLOWDOWN,
    delta: float = GITTINS_DELTA,
    prior: Sequence[float] | None = None,
    literal: bool = False,
) -> TiresiasGittins | AuthorsTiresiasGittins:
    """Tiresias-G: 2D-Gittins index within priority queues on GPU-time (NSDI 2019).

    The paper's algorithm (`TiresiasGittins`, ranking by the authors' tabulated index;
    `literal=True`: the strictly literal reading of the paper, with its Gittins formula), or
    with `compat=True` the replica of the authors' simulator (`AuthorsTiresiasGittins`;
    `sensitive_slowdown` is checked but unused there)."""
    if compat:
        check_sensitive_slowdown("tiresias-gittins", sensitive_slowdown)
        check_literal("tiresias-gittins", literal)
        return AuthorsTiresiasGittins(thresholds, starvation_knob, placement, delta, prior)
    return TiresiasGittins(
        thresholds, starvation_knob, placement, sensitive_slowdown, delta, prior, literal
    )


def check_literal(name: str, literal: bool) -> None:
    """Raise ValueError for `literal=True` with `compat=True`: the replica has one reading."""
    if literal:
        raise ValueError(
            f"{name}: literal=True reads the paper strictly and compat=True replays the "
            "authors' simulator; choose one"
        )
