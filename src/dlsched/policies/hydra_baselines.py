"""The baselines of Hydra's evaluation (Yang et al., IEEE TC 72(8), 2023), as the authors'
artifact implements them (github ``iscas-system/Hydra``, ``schedulers/``; notes §2.6):
Chronus-style earliest deadline first, heterogeneity-aware greedy shortest job first (the
artifact's "Gavel"), and AlloX's min-cost matching. None of them preempts.

- ``edf`` (``Chronus_scheduler.go``): whenever GPUs are free, the next job is a deadline job,
  earliest deadline first, while any waits; then jobs without a deadline, shortest estimated
  time on a free type first. The paper it stands for is Chronus (Gao et al., SoCC 2021), a
  deadline-aware lease-based scheduler; the artifact keeps only its EDF order.
- ``sjf-het`` (``Gavel_scheduler.go``; the artifact calls it "Gavel", but it is not Gavel's LP):
  whenever GPUs are free, start the (waiting job, free GPU type) pair with the shortest
  estimated time — for every type, its shortest waiting job; of those, the shortest.
- ``allox`` (``allox_scheduler/ALLOX_MCMF_scheduler.go``; Le et al., "AlloX: compute
  allocation in hybrid clusters", EuroSys 2020): jobs are matched to (GPU, position from the
  end of its queue) slots at cost run time × (position + 1) plus the GPU's busy time — the
  min-cost matching minimises Σ completion time on unrelated machines (Bruno, Coffman and
  Sethi 1974). Solved with SciPy's ``linear_sum_assignment`` instead of the artifact's SPFA
  min-cost flow: the optimum is the same (the anchors' AlloX average JCTs are reproduced to
  the cent); ties between equal-cost matchings may differ. Deadlines are ignored, as in
  AlloX. The artifact solves once (``online=false``); ``one_shot=False`` re-solves at every
  event and starts only the queue heads.

Estimates: every policy reads ``view.estimator.remaining_time(job, now, gpu_type)``.
Ties between jobs break by job index (the artifact: insertion order or Go's map order).
``compat=True`` (edf, sjf-het) reproduces the artifact's choice of GPU type when two types
offer the same job (the common case for deadline jobs in EDF): the first type in Go's
randomised map order — types sorted by name in one 8-slot bucket, iterated from a random
slot — drawn from the run's policy stream (``view.rng``, so ``simulate(seed=...)`` changes
it), or from ``numpy.random.default_rng(seed)`` when the policy's own ``seed`` is given (to
replay one fixed draw whatever the run's seed; ``simulate(..., seed=3)`` is the run's seed, so
give the policy's own as ``dlsched.policies.get("edf", compat=True, seed=3)`` or
``--param seed=3``). Without ``compat`` the job goes to its fastest free type and nothing is
random.
``edf`` and ``sjf-het`` place gangs of several GPUs on one type (consolidated); ``allox``
takes one-GPU jobs only, like Hydra.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.jobs import PENDING, JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.hydra import GpuQueuePolicy, PlanInput
from dlsched.policies.registry import register

GO_MAP_BUCKET = 8  # slots of one bucket of a Go map (runtime/map.go `bucketCnt`)


class _GreedyByType(BasePolicy):
    """Per GPU type, a heap of waiting jobs in this policy's order on that type; while GPUs
    are free, start the head with the smallest key over the types that have free GPUs."""

    def __init__(
        self, compat: bool = False, seed: int | None = None, placement: str = "consolidated"
    ) -> None:
        super().__init__()
        self.compat = bool(compat)
        self.seed = seed
        self.placement = placement

    def start(self, view: ClusterView) -> None:
        """Empty heaps for a run, and (with `compat`) the stream of Go-map start slots."""
        self._rng: np.random.Generator | None = None
        if self.compat:
            self._rng = view.rng if self.seed is None else np.random.default_rng(self.seed)
        self._arrived: list[JobState] = []
        self._heaps: dict[str, list[tuple]] = {}
        self._run_s: dict[int, dict[str, float]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(compat={self.compat}, seed={self.seed})"

    def _key(self, job: JobState, gpu_type: str, run_s: float) -> tuple:
        raise NotImplementedError

    def on_arrival(self, job: JobState) -> None:
        self._arrived.append(job)

    def on_finish(self, job: JobState) -> None:
        self._run_s.pop(job.spec.index, None)

    def _admit(self, view: ClusterView) -> None:
        now, estimator = view.now, view.estimator
        for job in self._arrived:
            run_s = self._run_s[job.spec.index] = {}
            for gpu_type in view.rank_types(job.spec):
                seconds = estimator.remaining_time(job, now, gpu_type)
                run_s[gpu_type] = seconds
                index = job.spec.index
                heapq.heappush(
                    self._heaps.setdefault(gpu_type, []),
                    (
                        self._key(job, gpu_type, seconds),
                        -index if self.compat else index,
                        index,
                        job,
                    ),
                )
        self._arrived.clear()

    def schedule(self, view: ClusterView):
        self._admit(view)
        alloc = view.allocation()
        placed: set[int] = set()
        held: list[tuple[str, tuple]] = []  # heads that do not fit now, put back at the end
        while view.free_gpus() >= view.min_pending_demand() > 0:
            heads = []
            for gpu_type in view.gpu_types:
                heap = self._heaps.get(gpu_type)
                if not heap or not view.free_gpus(gpu_type):
                    continue
                while heap and (heap[0][3].status != PENDING or heap[0][2] in placed):
                    heapq.heappop(heap)  # started from another type's heap
                if heap:
                    heads.append((heap[0][0], gpu_type, heap[0]))
            if not heads:
                break
            gpu_type, item = self._choose(heads, view.gpu_types)
            job = item[3]
            heapq.heappop(self._heaps[gpu_type])
            gpus = view.place(job, gpu_type=gpu_type, strategy=self.placement)
            if gpus is None:
                held.append((gpu_type, item))
                continue
            alloc[job] = gpus
            placed.add(job.spec.index)
        for gpu_type, item in held:
            heapq.heappush(self._heaps[gpu_type], item)
        return alloc

    def _choose(self, heads: list[tuple], cluster_types: tuple[str, ...]) -> tuple[str, tuple]:
        """The head with the smallest key. Among equal keys: with `compat`, the first type in
        the artifact's Go map order (the cluster's types in sorted slots of one bucket,
        iterated from a random slot); otherwise the job index, then the job's fastest type."""
        best = min(key for key, _, _ in heads)
        tied = [(gpu_type, item) for key, gpu_type, item in heads if key == best]
        if len(tied) == 1:
            return tied[0]
        if self._rng is not None:
            slots = max(GO_MAP_BUCKET, len(cluster_types))
            start = int(self._rng.integers(slots))
            slot_of = {gpu_type: cluster_types.index(gpu_type) for gpu_type, _ in tied}
            return min(tied, key=lambda pair: (slot_of[pair[0]] - start) % slots)
        return min(tied, key=lambda pair: (pair[1][2], self._run_s[pair[1][2]][pair[0]], pair[0]))


@register("edf")
class EarliestDeadlineFirst(_GreedyByType):
    """Chronus-style EDF (Hydra's baseline): deadline jobs by deadline, then the rest SJF."""

    name = "edf"

    def _key(self, job: JobState, gpu_type: str, run_s: float) -> tuple:
        deadline = job.spec.deadline
        if deadline is not None and math.isfinite(deadline):
            return (0, deadline)
        return (1, run_s)


@register("sjf_het", "sjf-het")
class HeterogeneousSjf(_GreedyByType):
    """Heterogeneity-aware greedy SJF (Hydra's "Gavel"): shortest (job, free type) first."""

    name = "sjf-het"

    def _key(self, job: JobState, gpu_type: str, run_s: float) -> tuple:
        return (run_s,)


@register("allox")
class AlloX(GpuQueuePolicy):
    """AlloX: min-cost matching of jobs to (GPU, queue position) slots (min Σ completion)."""

    name = "allox"

    def __init__(self, one_shot: bool = True, profile_s: float | Mapping[str, float] = 0.0) -> None:
        super().__init__(one_shot=one_shot, profile_s=profile_s)

    def __repr__(self) -> str:
        return f"AlloX(one_shot={self.one_shot})"

    def _plan(self, p: PlanInput) -> dict[int, list[int]]:
        """Match n jobs to m GPUs × S positions counted from the end of each queue: a job k-th
        from the end of GPU g's queue delays k jobs, so it costs run × (k + 1), plus the time
        g is still busy. S starts at 2n/m and doubles while some GPU uses all its S slots:
        when every GPU has a free slot, an optimum with more slots would be no better (any
        improving exchange could use that cheaper free slot). S also doubles while no matching
        exists: jobs confined to a VC's few GPUs may need more than S slots each; with S = n
        every job that can run somewhere has a slot."""
        # scipy loads on first use, not when the registry imports this module (issue 16, target 4)
        from scipy.optimize import linear_sum_assignment

        n, m = p.run_s.shape
        runnable = np.isfinite(p.run_s).any(axis=1)
        rows = np.nonzero(runnable)[0]
        if not len(rows):
            return {}
        run = np.where(np.isfinite(p.run_s[rows]), p.run_s[rows], 0.0)
        blocked = ~np.isfinite(p.run_s[rows])
        busy = p.offset_s - p.now
        slots = min(len(rows), max(1, math.ceil(2 * len(rows) / m)))
        while True:
            cost = np.concatenate([run * (k + 1) + busy for k in range(slots)], axis=1)
            cost[np.tile(blocked, (1, slots))] = math.inf
            try:
                matched_rows, columns = linear_sum_assignment(cost)
            except ValueError:  # infeasible: more jobs confined to a pool than its slots
                slots = min(len(rows), 2 * slots)
                continue
            used = np.bincount(columns % m, minlength=m)
            if used.max() < slots or slots >= len(rows):
                break
            slots = min(len(rows), 2 * slots)
        queues: dict[int, list[tuple[int, int]]] = {}
        for r, c in zip(matched_rows, columns, strict=True):
            queues.setdefault(int(c % m), []).append((int(c // m), int(rows[r])))
        return {g: [row for _, row in sorted(pairs, reverse=True)] for g, pairs in queues.items()}
