"""Gavel's hierarchical policy: weighted fairness across entities (users or virtual
clusters), then a policy within each (Narayanan et al., OSDI 2020, §4.3).

Gavel computes it by water filling: repeated max-min LPs (and a MILP per step to find the
bottlenecked entities) that raise every entity not yet bottlenecked until none can gain;
its simulator ships a simpler `TwoLevelSinglePassHierarchicalPolicy` (one top-level
max-min over entities, then the bottom-level policy per entity on the entity's share).
This is that single pass, plus one step toward water filling:

1. Top level: X maximising t subject to Σ_{j∈e} fair_j(X) ≥ w_e·t for every entity e, where
   fair_j = Σ_k T·X·s_j / T_equal[j] is the job's normalised throughput (as in
   `max_min_fairness`) and w_e the entity's weight (`entity_weights`, default 1).
2. Leftover: keeping every entity at ≥ w_e·t*, X maximising Σ_e Σ_{j∈e} fair_j / w_e, so
   capacity a bottlenecked entity cannot use goes to the others (water filling would
   instead raise the others' minimum level by level; this single step can favour entities
   whose jobs gain most per GPU).
3. Bottom level: each entity's GPUs per type, Σ_{j∈e} s_j·X[j, k], split among its jobs by
   `within`: "fairness" (max-min fairness with the jobs' priority weights, on that
   budget, as Gavel's bottom level) or "fifo" (jobs in arrival order take as much time as
   they can use, fastest type first).

Entities: `entity="user"` (default) or `"vc"`; jobs without one form one entity. Gavel's
hierarchical policies are heterogeneity-aware; so is this one. All Gavel mechanism options
apply (`mechanism.py`).
"""

from __future__ import annotations

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.gavel import lp
from dlsched.policies.gavel.mechanism import (
    GavelPolicy,
    mechanism_options,
)
from dlsched.policies.registry import register

ENTITIES = ("user", "vc")
WITHIN = ("fairness", "fifo")
_KEEP = 1 - 1e-7  # stage 2 keeps each entity at (almost) its stage-1 level


def hierarchical(
    problem: lp.Problem, entity: np.ndarray, entity_weight: np.ndarray, within: str = "fairness"
) -> np.ndarray:
    """X of the three stages in the module docstring. `entity[j]` is job j's entity index
    (0..E-1) and `entity_weight[e]` > 0 its weight; rows of `problem` are in arrival order."""
    n, m = problem.shape
    if n == 0:
        return np.zeros((0, m))
    if within not in WITHIN:
        raise ValueError(f"hierarchical: within must be one of {WITHIN}, got {within!r}")
    entity = np.asarray(entity, dtype=np.int64)
    weight = np.asarray(entity_weight, dtype=float)
    fair = lp._fairness_coef(
        lp.Problem(problem.throughputs, problem.scale_factors, problem.capacities, np.ones(n))
    )
    nm = n * m
    live = np.flatnonzero(np.bincount(entity, weights=fair.sum(axis=1), minlength=len(weight)) > 0)
    if not len(live):
        return np.zeros((n, m))
    position = np.full(len(weight), -1)
    position[live] = np.arange(len(live))
    nz_r, nz_c = np.nonzero(fair)
    on = position[entity[nz_r]] >= 0
    nz_r, nz_c = nz_r[on], nz_c[on]
    # 1. max t: w_e·t − Σ_{j∈e} fair_j ≤ 0
    rows, lower, upper = lp.feasible_region(problem, extra=1)
    rows.add(
        np.concatenate([position[entity[nz_r]], np.arange(len(live))]),
        np.concatenate([nz_r * m + nz_c, np.full(len(live), nm)]),
        np.concatenate([-fair[nz_r, nz_c], weight[live]]),
        np.zeros(len(live)),
    )
    cost = np.zeros(nm + 1)
    cost[-1] = -1.0
    level = float(lp.solve_lp(cost, rows, lower, upper, "hierarchical")[-1])
    # 2. max Σ_e Σ_{j∈e} fair_j / w_e with Σ_{j∈e} fair_j ≥ w_e·t*·_KEEP
    rows, lower, upper = lp.feasible_region(problem)
    rows.add(
        position[entity[nz_r]], nz_r * m + nz_c, -fair[nz_r, nz_c], -weight[live] * level * _KEEP
    )
    value = np.zeros((n, m))
    value[nz_r, nz_c] = fair[nz_r, nz_c] / weight[entity[nz_r]]
    x = lp._as_matrix(lp.solve_lp(-value.ravel(), rows, lower, upper, "hierarchical"), (n, m))
    # 3. within each entity, on its budget
    out = np.zeros((n, m))
    for e in live:
        members = np.flatnonzero(entity == e)
        budget = problem.scale_factors[members] @ x[members]
        sub = lp.Problem(
            problem.throughputs[members],
            problem.scale_factors[members],
            budget,
            problem.weights[members],
            problem.usable[members],
        )
        out[members] = lp.max_min_fairness(sub) if within == "fairness" else _fifo_within(sub)
    return out


def _fifo_within(problem: lp.Problem) -> np.ndarray:
    """Jobs in order take all the time they can use of the budget, fastest type first."""
    n, m = problem.shape
    x = np.zeros((n, m))
    room = problem.capacities.astype(float).copy()
    tput = problem.throughputs * problem.usable
    for j in range(n):
        left = 1.0
        for k in np.argsort(-tput[j], kind="stable"):
            if not tput[j, k] > 0 or left <= 0:
                continue
            take = min(left, room[k] / problem.scale_factors[j])
            if take > 1e-12:
                x[j, k] = take
                room[k] -= take * problem.scale_factors[j]
                left -= take
    return x


@register("hierarchical")
@mechanism_options
class Hierarchical(GavelPolicy):
    """Gavel hierarchical: weighted fairness across users or VCs, a policy within (OSDI 2020)."""

    name = "hierarchical"
    heterogeneity_aware = True

    def __init__(
        self,
        entity: str = "user",
        entity_weights: dict[str, float] | None = None,
        within: str = "fairness",
        **mechanism,
    ) -> None:
        super().__init__(**mechanism)
        if entity not in ENTITIES:
            raise ValueError(f"hierarchical: entity must be one of {ENTITIES}, got {entity!r}")
        if within not in WITHIN:
            raise ValueError(f"hierarchical: within must be one of {WITHIN}, got {within!r}")
        weights = dict(entity_weights or {})
        bad = {k: v for k, v in weights.items() if not float(v) > 0}
        if bad:
            raise ValueError(f"hierarchical: entity weights must be > 0, got {bad}")
        self.entity = entity
        self.entity_weights = {str(k): float(v) for k, v in weights.items()}
        self.within = within

    def solve(self, problem: lp.Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        names = [getattr(job.spec, self.entity) for job in jobs]
        index: dict[object, int] = {}
        entity = np.array([index.setdefault(name, len(index)) for name in names], dtype=np.int64)
        weight = np.array(
            [self.entity_weights.get(str(name), 1.0) if name is not None else 1.0 for name in index]
        )
        return hierarchical(problem, entity, weight, self.within)
