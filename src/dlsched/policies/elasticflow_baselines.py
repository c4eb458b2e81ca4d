"""The ElasticFlow artifact's baselines, as its Figure 8 runs them (Gu et al., "ElasticFlow: An
Elastic Serverless Training Platform for Distributed Deep Learning", ASPLOS '23, §6.1
"Baselines"; artifact ``pkusys/ElasticFlow`` @ 04a0109, Apache-2.0,
``ElasticFlow/scheduler/scheduler.py``), registered as `elasticflow_edf` and
`elasticflow_gandiva`. They differ from dlsched's `edf` and `gandiva` in ways that decide
Figure 8(a) (0.118 and 0.09 published, where dlsched's own reach 0.313 and 0.333), as Gavel's
re-implementations do from the originals (`gavel_gandiva`).

`elasticflow_edf` — Earliest Deadline First (the classic real-time policy, Liu and Layland,
JACM 1973), the artifact's ``--schedule=edf`` (``one_queue_edf_sim_jobs``,
``EDF_estimate_all_jobs``, ``edf_sim_allocation``). Faithful:

- **Greedy by deadline, each job at its largest count.** At every scheduling point the jobs
  that have arrived and not finished are taken in deadline order (ties by arrival); each gets
  its *base quota*, ``min(max_gpu, cluster)`` GPUs, when that many are still free, else the
  largest level ≤ the free GPUs (levels are the profiled counts, powers of two), else none
  (``edf_sim_allocation``'s first slot; the later slots it plans only set the end-time
  estimate the artifact re-plans at the next event anyway). ``max_gpu`` is the largest count
  the job's throughput curve has a rate for (``jobs.add_job`` outside ``ef``: no per-model
  cap), here also bounded by the job's own elastic range (``make_elastic`` gives 1 … 64 in
  Figure 8(a)). With flat curves past 16 GPUs this gives a few early-deadline jobs the whole
  cluster and starves the rest: the artifact's 0.118.
- **No admission control**: every job is accepted, and counts as met when it really ends by
  its deadline (the loop's ``end_time > ddl`` → declined).
- **No overheads**: the loop sets each job's ``overhead`` to 0 (``estimate_overhead`` is
  commented out), so `default_overheads` is none.
- **Scheduling points** as the artifact's event loop (and `elasticflow`'s ``slots=
  "artifact"``): an arrival or a finish, moved to a slot (`slot_s`, ``--scheduling_slot``,
  60 s) after the last point when it comes sooner. GPUs a job frees before then stay idle.

Simplified: the artifact ends jobs on whole seconds (``math.ceil``), here at their true
instants. Placement is `elasticflow`'s buddy-style one (counts are powers of two, the largest
placed first, as ``cluster.elastic_placement`` after ``run_jobs.sort``); a job whose count does
not change keeps its GPUs (the artifact re-places everyone, at no cost under EDF). Several GPU
types (the artifact's clusters have one): counts are taken against all GPUs and each job is
placed on the fastest type with room; a job that then does not fit (a VC, a type constraint,
CPU or memory) waits, and the GPUs it was counted for go to the next jobs in deadline order.

`elasticflow_gandiva` — Gandiva (Xiao et al., OSDI '18) as the artifact re-implements it
(``--schedule=gandiva --scheme=gandiva``: ``gandiva_sim_jobs``, ``cluster.gandiva_placement``,
``gandiva_node_set_adjust``, ``time_slicing_execute``; the Tiresias simulator's Gandiva):
see the class docstring.

What is not here: the artifact's Tiresias (``--schedule=dlas-gpu``) is the one dlsched's
`tiresias` models (two-queue discretised LAS on GPU-time, Tiresias' NSDI '19 thresholds) and
lands within the ±0.03 tolerance of Figure 8(a) (0.313 vs 0.287), so it has no variant yet.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.elasticflow import largest_level
from dlsched.policies.registry import register

SLOT_S = 60.0  # the artifact's --scheduling_slot (run_fig8a.sh), scheduler.py
MAX_GPUS = 64  # jobs.add_job: max_gpu = min(64, largest profiled count, batch size)
_EPS = 1e-6  # seconds: instants this close are one


def _check_slot(owner: str, slot_s: object) -> float:
    if isinstance(slot_s, bool) or not isinstance(slot_s, (int, float)):
        raise ValueError(f"{owner}: slot_s must be a positive number of seconds, got {slot_s!r}")
    if not (slot_s > 0 and math.isfinite(slot_s)):
        raise ValueError(f"{owner}: slot_s must be a positive number of seconds, got {slot_s!r}")
    return float(slot_s)


class _ArtifactLoop(BasePolicy):
    """What the artifact's baseline loops share: scheduling points spaced at least a slot
    apart (an event sooner than a slot after the last one is moved onto it)."""

    def __init__(self, slot_s: float = SLOT_S) -> None:
        super().__init__()
        self.slot_s = _check_slot(self.name, slot_s)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(slot_s={self.slot_s:g})"

    def start(self, view: ClusterView) -> None:
        capacity = view.cluster.capacity_by_type()
        self._type_key = max(sorted(capacity), key=lambda k: capacity[k])
        self._total = sum(capacity.values())
        self._per_node = view.cluster.max_gpus_per_node(None) or 1
        self._served: float | None = None
        self._levels: dict[int, tuple[int, ...]] = {}

    def _due(self, view: ClusterView) -> bool:
        """Whether a scheduling point is now; if not, ask for one a slot after the last."""
        if self._served is None or view.now >= self._served + self.slot_s - _EPS:
            self._served = view.now
            return True
        view.wake_at(self._served + self.slot_s)
        return False

    def levels(self, job: JobState, view: ClusterView) -> tuple[int, ...]:
        """The counts the job may run on, ascending: powers of two in its range (up to
        `MAX_GPUS` and the cluster) that its curve has a rate for; a rigid job its request."""
        spec = job.spec
        levels = self._levels.get(spec.index)
        if levels is None:
            low, high = spec.gpu_range
            high = min(high, self._total, MAX_GPUS)
            if not spec.elastic:
                levels = (spec.num_gpus,) if spec.num_gpus <= self._total else ()
            else:
                counts = [1 << i for i in range(high.bit_length()) if low <= 1 << i <= high]
                levels = tuple(
                    n
                    for n in counts
                    if view.estimator.throughput(spec, self._type_key, n) > 0
                )
                if not levels and low <= min(high, self._total):
                    levels = (low,)
            self._levels[spec.index] = levels
        return levels

    def _place(self, view: ClusterView, counts: dict[JobState, int], order: Sequence[JobState]):
        """Place `counts` (jobs → GPUs, 0 for none), largest first; a job whose count does not
        change keeps its GPUs, and when the others do not fit around them everyone is
        re-placed. A job that still does not fit waits, and the GPUs it was counted for go to
        the jobs after it in `order` that got fewer than their largest level."""
        alloc = view.allocation()
        for job in list(view.running.values()):
            if counts.get(job, 0) != len(job.gpus):
                del alloc[job]
        wanted = {job: n for job, n in counts.items() if n > 0}
        moved = [job for job in wanted if job not in alloc]
        failed = self._place_all(view, moved, wanted)
        if failed:
            for job in list(view.running.values()):
                if job in alloc:
                    del alloc[job]
            failed = self._place_all(view, list(wanted), wanted)
        if not failed:
            return alloc
        for job in order:  # the fallback: only where a VC, type or CPU/memory limit bites
            if job in alloc or job in failed:
                continue
            for n in reversed(self.levels(job, view)):
                gpus = self._try(view, job, n)
                if gpus is not None:
                    if job in alloc:
                        del alloc[job]
                    alloc[job] = gpus
                    break
        return alloc

    def _try(self, view: ClusterView, job: JobState, n: int) -> tuple[int, ...] | None:
        strategy = "consolidated" if n >= self._per_node else "best_fit"
        if not job.spec.elastic:
            return view.place(job, strategy=strategy)
        return view.place(job, strategy=strategy, n_gpus=n)

    def _place_all(
        self, view: ClusterView, jobs: list[JobState], counts: dict[JobState, int]
    ) -> set[JobState]:
        alloc = view.allocation()
        failed: set[JobState] = set()
        for job in sorted(jobs, key=lambda j: (-counts[j], j.spec.index)):
            gpus = self._try(view, job, counts[job])
            if gpus is None:
                failed.add(job)
            else:
                alloc[job] = gpus
        return failed


@register("elasticflow_edf")
class ElasticFlowEDF(_ArtifactLoop):
    """The ElasticFlow artifact's EDF: in deadline order, each job its largest count that the
    jobs before it left free (module docstring)."""

    name = "elasticflow_edf"

    def counts(self, jobs: Sequence[JobState], view: ClusterView) -> dict[JobState, int]:
        """``edf_sim_allocation`` at one scheduling point: jobs → GPUs now (0 for none)."""
        free = self._total
        out: dict[JobState, int] = {}
        for job in self.order(jobs):
            levels = self.levels(job, view)
            n = 0
            if levels:
                base = levels[-1]
                n = base if free >= base else largest_level(levels, free)
            out[job] = n
            free -= n
        return out

    @staticmethod
    def order(jobs: Sequence[JobState]) -> list[JobState]:
        """Deadline order (``EDF_estimate_all_jobs`` sorts by ``ddl``; no deadline: last),
        ties by arrival."""
        return sorted(
            jobs,
            key=lambda j: (
                math.inf if j.spec.deadline is None else float(j.spec.deadline),
                j.spec.index,
            ),
        )

    def schedule(self, view: ClusterView):
        if not self._due(view):
            return None
        jobs = [*view.running.values(), *view.pending.values()]
        counts = self.counts(jobs, view)
        return self._place(view, counts, self.order(jobs))
