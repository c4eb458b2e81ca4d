"""Gavel's policies, registered under Gavel's own names (Narayanan et al., OSDI 2020).

`_perf` = heterogeneity-aware (the LP sees each job's throughput on each type, from
`view.estimator`); no suffix = the heterogeneity-agnostic baseline of the paper, whose LP
sees throughput 1 on every type the job can use. Priority weights are the jobs' `priority`.
All use the round-based mechanism of `mechanism.py` (360 s rounds by default).

- `max_min_fairness`, `max_min_fairness_perf`: LAS / max-min fairness (§4.1), fairness
  measured as throughput × GPUs relative to the job's equal-share throughput.
- `max_sum_throughput_perf`: maximise total normalised throughput (§4.2); a job whose best
  use is 0 waits until the job set changes, as in Gavel.
- `finish_time_fairness`, `finish_time_fairness_perf`: Themis' ρ (§4.1), min max_j ρ_j
  with ρ_j = time in the system under X over time under the equal share, elapsed time and
  remaining steps taken at the solve (`view.estimator.remaining_steps`). The agnostic form
  counts remaining work as seconds on the job's fastest type, at rate 1 on every type; as
  the equal share already reaches ρ = 1 for every job, its optimum is then the max-min one
  whatever the remaining work (only heterogeneity lets jobs beat ρ = 1). An estimate of 0
  steps left is counted as 1% of the job's work, so the job still gets time.
Not yet built: makespan, cost, FIFO, hierarchical and `_packed` (space-sharing) variants,
`exact=True` and type-move overheads (issue 5).
"""

from __future__ import annotations

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.gavel import lp
from dlsched.policies.gavel.mechanism import GavelPolicy
from dlsched.policies.registry import register


@register("max_min_fairness")
class MaxMinFairness(GavelPolicy):
    """Gavel LAS / max-min fairness, heterogeneity-agnostic baseline (OSDI 2020)."""

    name = "max_min_fairness"
    heterogeneity_aware = False

    def solve(self, problem: lp.Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        return lp.max_min_fairness(problem)


@register("max_min_fairness_perf")
class MaxMinFairnessPerf(MaxMinFairness):
    """Gavel LAS / max-min fairness, heterogeneity-aware (OSDI 2020)."""

    name = "max_min_fairness_perf"
    heterogeneity_aware = True


@register("max_sum_throughput_perf")
class MaxSumThroughputPerf(GavelPolicy):
    """Gavel maximum total (normalised) throughput, heterogeneity-aware (OSDI 2020)."""

    name = "max_sum_throughput_perf"
    heterogeneity_aware = True

    def solve(self, problem: lp.Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        return lp.max_sum_throughput(problem)


@register("finish_time_fairness")
class FinishTimeFairness(GavelPolicy):
    """Gavel finish-time fairness (Themis' ρ), heterogeneity-agnostic baseline (OSDI 2020)."""

    name = "finish_time_fairness"
    heterogeneity_aware = False

    def solve(self, problem: lp.Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        now, estimator = view.now, view.estimator
        elapsed = [now - job.spec.submit_time for job in jobs]
        # An estimate of 0 steps left (a noisy estimator, a job past its estimated end) would
        # leave the job out of the LP and with no time at all: count it as 1% of its work.
        remaining = np.array([max(estimator.remaining_steps(job, now),
                                  0.01 * estimator.total_steps(job.spec)) for job in jobs])
        if not self.heterogeneity_aware:  # in seconds on the fastest type, at rate 1
            best = np.array([estimator.best_type(job.spec)[1] for job in jobs])
            remaining = np.divide(remaining, best, out=np.zeros_like(remaining),
                                  where=best > 0)
        return lp.finish_time_fairness(problem, elapsed, remaining)


@register("finish_time_fairness_perf")
class FinishTimeFairnessPerf(FinishTimeFairness):
    """Gavel finish-time fairness (Themis' ρ), heterogeneity-aware (OSDI 2020)."""

    name = "finish_time_fairness_perf"
    heterogeneity_aware = True
