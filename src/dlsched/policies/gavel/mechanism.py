"""Gavel's round-based mechanism (Narayanan et al., "Heterogeneity-Aware Cluster Scheduling
Policies for Deep Learning Workloads", OSDI 2020, §5), shared by every Gavel policy.

A policy supplies an LP (`lp.py`) that turns the active jobs into X[j, k], the fraction of
wall time job j should run on GPU type k. The mechanism realises X in rounds:

- Faithful: rounds of `round_s` = 360 s (Gavel's `time_per_iteration`, `scheduler.py`);
  priority[j, k] = X[j, k] / (fraction of its time in the system that j has run on k), an
  unserved pair (fraction 0) ranking first, ties by larger X then submit order; the
  highest-priority pairs get GPUs greedily, one type per job, a whole gang or nothing
  (`view.place(job, gpu_type=k)`, consolidated); a job chosen again on the type it holds
  keeps its GPUs (lease extension), any other running job is preempted or moved. Received
  time is tracked per (job, type) from what this policy allocated.
- Faithful: X is re-solved only when the job set changes (an arrival or a completion), once,
  at the first scheduling call after the change that has something to decide: the next
  round tick, or earlier when free GPUs could take a waiting job. A job arriving between
  rounds to a full cluster therefore waits for the next round, where the solve includes it;
  one arriving to free GPUs triggers the solve at once and may start at once.
- Simplified: GPUs freed mid-round (a completion) or idle when a job arrives are handed at
  once to waiting jobs in priority order, without preempting anyone (`fill_idle=True`);
  Gavel leaves them idle until the round ends (`fill_idle=False`; even then, when nothing
  runs at all, waiting jobs are placed at once so the cluster never stalls). Gavel's
  periodic reset of received time (`minimum_time_between_allocation_resets`) is not
  modelled: fractions count from each job's arrival. Capacities are GPUs per type summed
  over VC pools.
"""

from __future__ import annotations

import math

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.gavel.lp import Problem

DEFAULT_ROUND_S = 360.0  # Gavel's time_per_iteration
_MIN_SHARE = 1e-9

_Entry = tuple[float, float, int, int, JobState]


class GavelPolicy(BasePolicy):
    """Gavel's round-based mechanism around an allocation LP; subclasses pick the LP."""

    name = "gavel"
    heterogeneity_aware = True

    def __init__(self, round_s: float = DEFAULT_ROUND_S, fill_idle: bool = True) -> None:
        super().__init__()
        if not round_s > 0:
            raise ValueError(f"{self.name}: round_s must be > 0 seconds, got {round_s!r}")
        self.round_s = float(round_s)
        self.fill_idle = fill_idle
        self.solves = 0  # LP solves so far (tests check re-solving only on job-set change)
        self.allocation_matrix: dict[JobState, dict[str, float]] = {}
        self.received_s: dict[JobState, dict[str, float]] = {}
        self._jobs: dict[JobState, None] = {}  # active jobs in arrival order
        self._dirty = False
        self._accounted_at = 0.0
        self._rates: dict[JobState, np.ndarray] = {}

    # ---- hooks --------------------------------------------------------------------------
    def on_arrival(self, job: JobState) -> None:
        super().on_arrival(job)
        self._jobs[job] = None
        self.received_s[job] = {}
        self._dirty = True

    def on_finish(self, job: JobState) -> None:
        self._jobs.pop(job, None)
        self.received_s.pop(job, None)
        self.allocation_matrix.pop(job, None)
        self._rates.pop(job, None)
        self._dirty = True

    # ---- the LP -------------------------------------------------------------------------
    def solve(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        """X for `problem` (n jobs × m types; row i is `jobs[i]`)."""
        raise NotImplementedError

    def _throughputs(self, view: ClusterView, job: JobState) -> np.ndarray:
        """Steps/s of the job on each of `view.gpu_types` as the LP sees them: the
        estimator's (heterogeneity-aware) or 1 wherever it can run (agnostic)."""
        rates = self._rates.get(job)
        if rates is None:
            usable = set(view.rank_types(job.spec))
            rates = np.array([
                (view.estimator.throughput(job.spec, t) if self.heterogeneity_aware else 1.0)
                if t in usable else 0.0 for t in view.gpu_types])
            self._rates[job] = rates
        return rates

    def _resolve(self, view: ClusterView) -> None:
        jobs = list(self._jobs)
        types = view.gpu_types
        capacity = dict.fromkeys(types, 0)
        for (gpu_type, _vc), gpus in view.pool_capacity().items():
            capacity[gpu_type] = capacity.get(gpu_type, 0) + gpus
        problem = Problem.build(
            np.array([self._throughputs(view, j) for j in jobs]).reshape(len(jobs), len(types)),
            [j.spec.num_gpus for j in jobs], [capacity[t] for t in types],
            [j.spec.priority for j in jobs])
        x = self.solve(problem, jobs, view) if jobs else np.zeros((0, len(types)))
        self.solves += 1
        self.allocation_matrix = {job: dict(zip(types, map(float, row), strict=True))
                                  for job, row in zip(jobs, x, strict=True)}
        self._dirty = False

    # ---- the mechanism ------------------------------------------------------------------
    def _account(self, view: ClusterView) -> None:
        """Credit the time since the last call to each running job's current type."""
        now = view.now
        held = now - self._accounted_at
        if held > 0:
            for job in view.running.values():
                received = self.received_s.get(job)
                if received is not None and job.gpus:
                    gpu_type = view.gpu_type_of(job.gpus[0])
                    received[gpu_type] = received.get(gpu_type, 0.0) + held
        self._accounted_at = now

    def _priorities(self, view: ClusterView) -> list[_Entry]:
        """(−priority, −X, submit order, type index, job), best first."""
        now = view.now
        entries: list[_Entry] = []
        for job, shares in self.allocation_matrix.items():
            elapsed = now - job.spec.submit_time
            received = self.received_s[job]
            for k, (gpu_type, share) in enumerate(shares.items()):
                if share <= _MIN_SHARE:
                    continue
                got = received.get(gpu_type, 0.0)
                priority = share / (got / elapsed) if got > 0 and elapsed > 0 else math.inf
                entries.append((-priority, -share, job.spec.index, k, job))
        entries.sort(key=lambda e: e[:4])
        return entries

    def priorities(self, view: ClusterView) -> dict[tuple[object, str], float]:
        """priority[(job id, type)] as the next round would rank them (for inspection)."""
        return {(e[4].job_id, view.gpu_types[e[3]]): -e[0] for e in self._priorities(view)}

    def schedule(self, view: ClusterView):
        self._account(view)
        if not view.is_round and (
                (not self.fill_idle and view.running)
                or view.free_gpus() < self.min_pending_demand()
                or not self.min_pending_demand()):
            return None  # nothing to decide before the round: X may wait too
        if self._dirty:
            self._resolve(view)
        if view.is_round:
            return self._assign_round(view)
        return self._fill(view)

    def _assign_round(self, view: ClusterView):
        types = view.gpu_types
        room = dict.fromkeys(types, 0)
        for (gpu_type, _vc), gpus in view.pool_capacity().items():
            room[gpu_type] = room.get(gpu_type, 0) + gpus
        chosen: dict[JobState, str] = {}
        for entry in self._priorities(view):
            job, gpu_type = entry[4], types[entry[3]]
            need = job.spec.num_gpus
            if job in chosen or room[gpu_type] < need:
                continue
            chosen[job] = gpu_type
            room[gpu_type] -= need
        alloc = view.allocation()
        for job in list(view.running.values()):
            if chosen.get(job) != view.gpu_type_of(job.gpus[0]):
                del alloc[job]
                self._requeued(job)
        for job, gpu_type in chosen.items():  # in priority order
            if job.gpus and view.gpu_type_of(job.gpus[0]) == gpu_type:
                continue  # lease extension: same type, same GPUs
            gpus = view.place(job, gpu_type=gpu_type)
            if gpus is not None:
                alloc[job] = gpus
                self._started(job)  # balances the _requeued of a job that moves
        return alloc

    def _fill(self, view: ClusterView):
        """Place waiting jobs on free GPUs in priority order, preempting no one."""
        alloc = view.allocation()
        placed: set[JobState] = set()
        types = view.gpu_types
        for entry in self._priorities(view):
            job = entry[4]
            if view.free_gpus() < self.min_pending_demand():
                break
            if job in placed or job.gpus:
                continue
            gpus = view.place(job, gpu_type=types[entry[3]])
            if gpus is not None:
                alloc[job] = gpus
                placed.add(job)
                self._started(job)
        return alloc
