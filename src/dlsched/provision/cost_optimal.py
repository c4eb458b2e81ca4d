"""`cost_optimal`: the exact least-cost plans over Cynthia's configurations (an integer program).

The baseline that shows how close Cynthia's heuristic (`dlsched.provision.cynthia`) gets.
Same catalogue, same performance model, same configurations (`PlanModel.options`: instance
type, workers, PS, with their predicted time and cost), same treatment of jobs that cannot
meet their deadline or have none; what differs is the choice. At each call, the jobs that
wait unplanned are planned together by a 0-1 integer program solved with HiGHS
(`scipy.optimize.milp`), `solve_plans`:

- x[j, c] = 1 when job j gets configuration c; each job gets at most one;
- a job with a configuration that meets its deadline may only get such one; the others get
  their `fallback` (the fastest; for a job without a deadline the cheapest or the fastest);
- per instance type, Σ instances of the chosen configurations ≤ what the limits leave, and
  their sum ≤ the total limit's spare;
- objective: plan as many jobs as the limits allow, then the least total predicted cost
  (cost − B per planned job, B above any plan set's cost).

One job alone is exactly "the cheapest configuration that meets the deadline"; several jobs
arriving together compete for the limits, which Cynthia, one job at a time in submit order,
does not see. Everything else (renting, reuse, release, the plan book the ``cynthia`` policy
reads, attributed job costs) is Cynthia's provisioner's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dlsched.errors import SchedulingError
from dlsched.provision.cynthia import Cynthia, Plan, fallback

if TYPE_CHECKING:
    from dlsched.jobs import JobSpec


def candidates(job: JobSpec, options: Sequence[Plan], no_deadline: str) -> list[Plan]:
    """What a job may be given: its configurations that meet its deadline, else its one
    fallback configuration."""
    meeting = [o for o in options if o.meets]
    if meeting:
        return meeting
    chosen = fallback(job, options, no_deadline)
    return [] if chosen is None else [chosen]


def solve_plans(
    choices: Sequence[Sequence[Plan]],
    left: Mapping[str, int],
    total_left: float | None = None,
) -> list[Plan | None]:
    """The least-cost assignment of one configuration (or none) to each job of `choices`
    within `left` instances per type and `total_left` in all (see the module docstring);
    ties go to HiGHS' first optimum."""
    columns = [(j, c) for j, options in enumerate(choices) for c in range(len(options))]
    if not columns:
        return [None] * len(choices)
    from scipy.optimize import Bounds, LinearConstraint, milp

    plans = [choices[j][c] for j, c in columns]
    bonus = 1.0 + sum(max((o.cost for o in options), default=0.0) for options in choices)
    cost = np.array([plan.cost - bonus for plan in plans])
    rows, upper = [], []
    for j in range(len(choices)):
        rows.append([1.0 if jj == j else 0.0 for jj, _ in columns])
        upper.append(1.0)
    for name in sorted({plan.instance_type for plan in plans}):
        rows.append([float(p.instances) if p.instance_type == name else 0.0 for p in plans])
        upper.append(float(left.get(name, 0)))
    if total_left is not None and np.isfinite(total_left):
        rows.append([float(p.instances) for p in plans])
        upper.append(float(total_left))
    result = milp(
        cost,
        constraints=LinearConstraint(np.array(rows), -np.inf, np.array(upper)),
        integrality=np.ones(len(plans)),
        bounds=Bounds(0, 1),
    )
    if result.x is None:  # x = 0 is always feasible: only a solver failure lands here
        raise SchedulingError(f"cost_optimal: HiGHS found no plan ({result.message})")
    out: list[Plan | None] = [None] * len(choices)
    for (j, _), plan, value in zip(columns, plans, result.x, strict=True):
        if value > 0.5:
            out[j] = plan
    return out


class CostOptimal(Cynthia):
    """Cynthia's provisioner with the exact choice (see the module docstring)."""

    name = "cost_optimal"

    def choose(
        self, jobs: Sequence[JobSpec], now: float, left: dict[str, int]
    ) -> list[Plan | None]:
        choices = [
            candidates(job, self.model.options(job, now, left), self.no_deadline) for job in jobs
        ]
        total = None if self._rented.total_limit is None else self._total_left
        plans = solve_plans(choices, left, total)
        for plan in plans:
            if plan is not None:
                left[plan.instance_type] -= plan.instances
                self._spend_total(left, plan.instances)
        return plans
