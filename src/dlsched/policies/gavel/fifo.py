"""Gavel's FIFO policies (Narayanan et al., OSDI 2020; `scheduler/policies/fifo.py`).

Gavel's FIFO is an allocation like its LPs' (X[j, k] = 1 on one type for the jobs it
admits, 0 for the others), realised by the same round-based mechanism; under FIFO the
mechanism never runs a job with priority 0, so a job waits until a solve admits it.

- `fifo_perf` (Gavel's `fifo_perf`): at every solve, jobs in arrival order each take the
  type where they run fastest among the types with enough GPUs left; the first job that
  fits nowhere stops the pass (no backfilling).
- `gavel_fifo` (Gavel's agnostic `fifo`; renamed because dlsched's `fifo` is the
  YARN-style FIFO of the other papers): a job keeps the type it was given until it ends;
  waiting jobs, in arrival order, take a type with enough GPUs left, the first job that fits
  nowhere stopping the pass. Gavel means to pick that type at random, but its code then
  uses the last type of its sorted list of types with free GPUs (`worker_type` leaks from
  an earlier loop), so its agnostic FIFO fills V100s, then P100s, then K80s — the
  authors' figure reflects that. `type_choice="ordered"` (default) does the same with the
  cluster's types ranked fastest first (by the mean, over all jobs seen so far, of each
  job's throughput there relative to its best: a cluster-wide order, not a per-job one);
  `type_choice="random"` draws uniformly, as Gavel intended, from the run's random stream
  (`simulate(seed=...)`), or from a fixed draw when the policy's `seed` is set.
- `fifo_packed` (`packing.py`): `fifo_perf`, then waiting jobs packed beside running ones.

Faithful: admission only at solves (so, as in Gavel, GPUs freed by a completion may stay
idle until the next solve, at most `resolve_interval_s` later); no preemption of admitted
jobs by FIFO itself (`fifo_perf` may move a job to a faster type at a solve, as Gavel's
reset allocation does). Simplified: Gavel's agnostic FIFO first hands a completed job's
GPUs to the head of the queue on the same type; here the head simply takes the first type
in order that has room, which is the same type whenever that type is first.
"""

from __future__ import annotations

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.gavel.lp import Problem
from dlsched.policies.gavel.mechanism import (
    GavelPolicy,
    mechanism_options,
)
from dlsched.policies.registry import register

TYPE_CHOICES = ("ordered", "random")


def fifo_fastest(problem: Problem) -> np.ndarray:
    """X of `fifo_perf`: rows in arrival order, each job on its fastest type with room."""
    n, m = problem.shape
    x = np.zeros((n, m))
    room = problem.capacities.astype(float).copy()
    tput = problem.throughputs * problem.usable
    for j in range(n):
        fits = (room >= problem.scale_factors[j]) & (tput[j] > 0)
        if not fits.any():
            break
        k = int(np.argmax(np.where(fits, tput[j], -1.0)))
        x[j, k] = 1.0
        room[k] -= problem.scale_factors[j]
    return x


@register("fifo_perf")
class FifoPerf(GavelPolicy):
    """Gavel FIFO, heterogeneity-aware: each job on its fastest type with room (OSDI 2020)."""

    name = "fifo_perf"
    heterogeneity_aware = True
    zero_priority_fill = False  # Gavel: FIFO jobs with priority 0 never run

    def solve(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        return fifo_fastest(problem)


@register("gavel_fifo")
@mechanism_options
class GavelFifo(GavelPolicy):
    """Gavel FIFO, heterogeneity-agnostic: jobs keep the type they were given (OSDI 2020)."""

    name = "gavel_fifo"
    heterogeneity_aware = False
    zero_priority_fill = False  # Gavel: FIFO jobs with priority 0 never run

    def __init__(self, type_choice: str = "ordered", **mechanism) -> None:
        super().__init__(**mechanism)
        if type_choice not in TYPE_CHOICES:
            raise ValueError(
                f"gavel_fifo: type_choice must be one of {TYPE_CHOICES}, got {type_choice!r}"
            )
        self.type_choice = type_choice

    def start(self, view: ClusterView) -> None:
        """The mechanism's run state, no type given yet, and the stream of random type draws."""
        super().start(view)
        self._given: dict[JobState, int] = {}
        # Its own stream, so the draws do not depend on how many rounds shuffled types;
        # a seed replays the fixed draw (seed=0: the draw made before runs owned randomness).
        self._choice_rng = (
            view.rng.spawn(1)[0] if self.seed is None else np.random.default_rng([self.seed, 1])
        )

    def on_finish(self, job: JobState) -> None:
        super().on_finish(job)
        self._given.pop(job, None)

    def solve(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        n, m = problem.shape
        x = np.zeros((n, m))
        room = problem.capacities.astype(float).copy()
        for j, job in enumerate(jobs):
            k = self._given.get(job)
            if k is not None:
                x[j, k] = 1.0
                room[k] -= problem.scale_factors[j]
        order = self._rank_types()
        for j, job in enumerate(jobs):
            if job in self._given:
                continue
            fits = [
                k for k in order if room[k] >= problem.scale_factors[j] and problem.usable[j, k]
            ]
            if not fits:
                break
            if self.type_choice == "random":
                k = fits[int(self._choice_rng.integers(len(fits)))]
            else:
                k = fits[0]
            self._given[job] = k
            x[j, k] = 1.0
            room[k] -= problem.scale_factors[j]
        return x
