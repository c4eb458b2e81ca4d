"""Gavel's own baselines, as Gavel's simulator runs them in its figures (Narayanan et al.,
OSDI 2020, §7; `scheduler/policies/isolated.py`, `gandiva.py` and `allox.py` of
stanford-futuredata/gavel at the commit of `../shared/anchors/gavel`). Each is an
allocation X realised by Gavel's round-based mechanism (`mechanism.py`: 360 s rounds,
priorities X / time received, re-solve on a job-set change at most every 1920 s, GPUs left
over handed to entries of priority 0), which is how the authors compared them with Gavel.

- `gavel_isolated` (Gavel's `isolated`): every job its equal share of the cluster, each
  type's GPUs split evenly over the n active jobs, X[j, k] = (G_k / n) / s_j, a row scaled
  down to sum 1 when it sums more (`IsolatedPolicy._get_allocation`). It is the reference
  of Gavel's finish-time-fairness figures: ρ_j = JCT_j under a policy / JCT_j under
  `gavel_isolated` on the same jobs (`dlsched.metrics.finish_time_fairness`). Type order
  shuffled every round, as for Gavel's agnostic policies. Differs from `lp.equal_share`,
  which splits each type over requested GPUs, not over jobs.
- `gavel_gandiva` (Gavel's `gandiva`, "Gandiva_Packing"): the isolated split while the
  jobs' GPUs fit in the cluster; otherwise jobs are paired at random (Python
  `random.Random(seed).sample`, pairs of equal GPU counts, the leftovers alone), the pairs
  kept across solves, and the isolated split taken over the combinations (a pair counts
  once), a pair sharing its GPUs at the pair rates of the throughput table. A pair is
  broken at a solve when a member has finished or its normalised packed throughput,
  summed over all types as Gavel sums it, is below 1 — so, as in Gavel, a pair that fits
  on one type only (ResNet-50 on K80) is kept; a job left alone is drawn into the
  pairing again at the next solve (Gavel rates a lone job's "combination" 0 and drops it).
  Types in the fixed order fastest first (Gavel shuffles only policies without "Perf" or
  "Packing" in their name).
- `gavel_allox` (Gavel's `allox`, "AlloX_Perf"): at each solve, the jobs without a type
  are matched to (free GPU, position from the end of its queue) slots by the Hungarian
  method at cost (position + 1) × remaining steps / throughput (a job that cannot run on a
  type: throughput 1e-10), and the job at the head of each GPU's queue gets X = 1 on that
  GPU's type; a job given a type keeps it until it finishes, and its GPU is not offered
  again. The delay term Gavel adds (the job's time since arrival, equal on every slot of a
  row) does not change the matching and is left out. Type order fixed, fastest first.
  Gavel's AlloX takes one-GPU jobs only (it asserts so); here a multi-GPU job gets no X
  and runs only on GPUs nobody with an X uses (priority 0), so the policy runs on any
  workload.

How they differ from dlsched's paper-faithful `gandiva` and `allox`:

- `gandiva` (`dlsched.policies.gandiva`, Xiao et al., OSDI 2018) is event-driven: affinity
  placement by job size, over-subscription of servers with 60 s suspend/resume time slices,
  packing only under overload and kept only if introspection measures a gain, migration
  and grow-shrink. Gavel's `gandiva` keeps none of that: it is an even time split of every
  type over the jobs, realised in 360 s rounds, packing random pairs whenever the jobs ask
  for more GPUs than the cluster has and dropping a pair only when its normalised
  throughput summed over *all* types is below 1 (no introspection of the type it runs on).
- `allox` (`dlsched.policies.hydra_baselines`, Le et al., EuroSys 2020, as Hydra's artifact
  runs it) is non-preemptive: the matching orders every GPU's whole queue and jobs start
  as GPUs free up, in that order. Gavel's `allox` keeps only the head of each queue as an
  allocation, re-matches at every solve (at most every 1920 s, so GPUs a finished job frees
  go to priority-0 entries until then), and lets Gavel's mechanism time-share.

Simplified: pairs formed at a solve whose rates are 0 on a type get no X there (Gavel gives
them X, and its mechanism skips the pair on that type each round, leaving the share to
priority-0 entries; the outcome is the same up to whose share it is). Gavel's Gandiva samples
pairs from Python's `random` with the policy's seed; with `seed=None` (the default) the seed
is drawn from the run's stream (`view.rng`), so `simulate(seed=...)` changes the pairing.
"""

from __future__ import annotations

import math
import random

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.gavel.lp import Problem, isolated_shares
from dlsched.policies.gavel.mechanism import Allocation, GavelPolicy, Mode
from dlsched.policies.gavel.packing import _PackedPolicy
from dlsched.policies.registry import register

ALLOX_CANNOT_RUN_THROUGHPUT = 1e-10  # Gavel's allox.py: a throughput of 0 counts as 1e-10


@register("gavel_isolated")
class GavelIsolated(GavelPolicy):
    """Gavel's `isolated` baseline: each job an equal share of every type (module docstring)."""

    name = "gavel_isolated"
    heterogeneity_aware = False

    def solve(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        return isolated_shares(problem.scale_factors, problem.capacities)


@register("gavel_gandiva")
class GavelGandiva(_PackedPolicy):
    """Gavel's re-implementation of Gandiva: even split, random pairs under overload
    (module docstring)."""

    name = "gavel_gandiva"
    heterogeneity_aware = True  # only the type order: Gavel never shuffles "..._Packing"

    def start(self, view: ClusterView) -> None:
        """The mechanism's run state, no pairs yet, and the pairing's random stream."""
        super().start(view)
        self._combination: dict[JobState, JobState | None] = {}
        seed = self.seed if self.seed is not None else int(view.rng.integers(2**31))
        self._pairing = random.Random(seed)

    def partner_key(self, job: JobState) -> object:
        """Pairs are of two given jobs, not of job classes: a job is its own class."""
        return ("job", job.spec.index)

    def _normalised_sum(self, view: ClusterView, a: JobState, b: JobState) -> float:
        """Gavel's `_get_normalized_throughput`: Σ over types of both jobs' packed rate over
        their rate alone; 0 when a packed rate is 0 on any type."""
        total = 0.0
        for k in range(len(view.gpu_types)):
            ra, rb = self._rates_of(view, a, b, k)
            if ra <= 0 or rb <= 0:
                return 0.0
            ta, tb = self.throughputs(view, a)[k], self.throughputs(view, b)[k]
            total += (ra / ta if ta > 0 else 0.0) + (rb / tb if tb > 0 else 0.0)
        return total

    def _rates_of(self, view: ClusterView, a: JobState, b: JobState, k: int) -> tuple[float, float]:
        return self._pair_rates(view, [a, b])(0, 1, k)

    def allocate(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> Allocation:
        n, m = problem.shape
        singles: list[Mode] = [(k, None) for k in range(m)]
        active = set(jobs)
        combination = self._combination
        for job in list(combination):
            if job not in combination:
                continue
            other = combination[job]
            # a job left alone counts as a combination of normalised throughput 0 in Gavel,
            # so it is dropped too and drawn into the pairing again
            if (
                other is None
                or job not in active
                or other not in active
                or self._normalised_sum(view, job, other) < 1.0
            ):
                del combination[job]
                if other is not None:
                    combination.pop(other, None)
        if problem.scale_factors.sum() <= problem.capacities.sum():
            return Allocation(singles, isolated_shares(problem.scale_factors, problem.capacities))
        waiting = [job for job in jobs if job not in combination]
        tries, total = 0, len(waiting)
        while len(waiting) > 1 and tries < total:
            tries += 1
            first, second = self._pairing.sample(waiting, 2)
            if first.spec.num_gpus != second.spec.num_gpus:
                continue
            waiting.remove(first)
            waiting.remove(second)
            combination[first], combination[second] = second, first
        for job in waiting:
            combination[job] = None
        row = {job: i for i, job in enumerate(jobs)}
        combos = sorted(
            {
                (min(row[a], row[b]), max(row[a], row[b])) if b is not None else (row[a], -1)
                for a, b in combination.items()
            }
        )
        scale = np.array([problem.scale_factors[i] for i, _ in combos])
        split = isolated_shares(scale, problem.capacities)
        modes = list(singles)
        index: dict[Mode, int] = {mode: i for i, mode in enumerate(modes)}
        entries: list[tuple[int, int, float]] = []
        rates = self._pair_rates(view, jobs)
        for c, (i, j) in enumerate(combos):
            if j < 0:
                entries.extend((i, k, split[c, k]) for k in range(m))
                continue
            for k in range(m):
                ri, rj = rates(i, j, k)
                if ri <= 0 or rj <= 0:
                    continue  # the pair cannot share this type (module docstring)
                for me, mate in ((i, j), (j, i)):
                    mode = (k, self.partner_key(jobs[mate]))
                    if mode not in index:
                        index[mode] = len(modes)
                        modes.append(mode)
                    entries.append((me, index[mode], split[c, k]))
        shares = np.zeros((n, len(modes)))
        for i, col, value in entries:
            shares[i, col] = value
        return Allocation(modes, shares)


@register("gavel_allox")
class GavelAlloX(GavelPolicy):
    """Gavel's re-implementation of AlloX: Hungarian matching, queue heads get X = 1
    (module docstring)."""

    name = "gavel_allox"
    heterogeneity_aware = True  # only the type order: Gavel never shuffles "..._Perf"

    def start(self, view: ClusterView) -> None:
        """The mechanism's run state and no job given a type yet."""
        super().start(view)
        self._given: dict[JobState, int] = {}

    def solve(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        n, m = problem.shape
        x = np.zeros((n, m))
        active = set(jobs)
        given = {job: k for job, k in self._given.items() if job in active}
        free = problem.capacities.astype(np.int64).copy()
        waiting = []
        for i, job in enumerate(jobs):
            if job in given:
                x[i, given[job]] = 1.0
                free[given[job]] -= int(problem.scale_factors[i])
            elif problem.scale_factors[i] == 1:
                waiting.append(i)
        free = np.maximum(free, 0)
        if waiting and free.sum() > 0:
            remaining = np.array(
                [view.estimator.remaining_steps(jobs[i], view.now) for i in waiting]
            )
            tput = problem.throughputs[waiting] * problem.usable[waiting]
            run_s = remaining[:, None] / np.where(tput > 0, tput, ALLOX_CANNOT_RUN_THROUGHPUT)
            for i, k in _allox_heads(run_s, free):
                x[waiting[i], k] = 1.0
                given[jobs[waiting[i]]] = k
        self._given = given
        return x


def _allox_heads(run_s: np.ndarray, free: np.ndarray) -> list[tuple[int, int]]:
    """(job row, type) of the job at the head of each free GPU's queue in the min-cost
    matching of jobs to (GPU, position from the end) slots at cost (position + 1) × run time
    (Gavel's `AlloXPolicy`). GPUs of one type are alike, so a type of f free GPUs needs only
    ⌈n / f⌉ positions: a position is used only once every GPU of the type has the one below
    it (else moving the job down would cost less)."""
    # scipy loads on first use, not when the registry imports this module (issue 16, target 4)
    from scipy.optimize import linear_sum_assignment

    n, m = run_s.shape
    columns: list[tuple[int, int, int]] = []  # (type, gpu, position)
    for k in range(m):
        gpus = int(min(free[k], n))
        for position in range(math.ceil(n / free[k]) if free[k] > 0 else 0):
            columns.extend((k, g, position) for g in range(gpus))
    if not columns:
        return []
    spec = np.array(columns, dtype=np.int64)
    cost = run_s[:, spec[:, 0]] * (spec[:, 2] + 1)[None, :]
    rows, cols = linear_sum_assignment(cost)
    head: dict[tuple[int, int], tuple[int, int]] = {}  # GPU → (position, job row)
    for r, c in zip(rows, cols, strict=True):
        key, position = (int(spec[c, 0]), int(spec[c, 1])), int(spec[c, 2])
        if key not in head or position > head[key][0]:
            head[key] = (position, int(r))  # the last position from the end runs first
    return sorted((row, key[0]) for key, (_, row) in head.items())
