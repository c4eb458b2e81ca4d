"""QSSF: quasi-shortest-service-first, by predicted GPU-time (Helios).

Paper: Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale
GPU Datacenters", SC '21, §5 (QSSF service); the rules below are those of the authors'
simulator (``S-Lab-System-Group/HeliosArtifact``, ``framework/QSSF Service/policies/qssf.py``).

Faithful: queued jobs are ordered by their *predicted* service, GPU-time = predicted
duration × GPUs requested (the artifact's priority, ``estimator.inference(job)``, is the
predicted duration × ``gpu_num``), smallest first, ties by submit time; a job's priority is
assigned once, while it waits, and kept (the predicting estimator keeps each job's first
prediction, `dlsched.perf.predicting`); non-preemptive; jobs are placed consolidated (the
artifact's ``consolidate`` placer); strict order: when the first job in priority order does
not fit, no job behind it starts (the artifact's ``else: break``). Helios schedules each VC
separately: run it as ``per_vc`` with ``inner: qssf`` for one queue per VC.

The prediction comes from the estimator: with ``estimator="predict:helios"`` (Helios' history
rules, `dlsched.predict.helios`) or ``predict:gbdt`` (a gradient-boosted model, as Helios'
LightGBM one) it is QSSF as the paper runs it; with the oracle it is clairvoyant
shortest-GPU-time-first, the bound QSSF approaches as its predictor improves.

Options: ``backfill=True`` lets later jobs that fit start past a blocked one (SJF's
behaviour; not the paper's). Simplified: the artifact sorts new jobs by GPU count before
their first prediction when the queue holds only new jobs; here every job is ordered by its
prediction, made at the scheduling call of its arrival.
"""

from __future__ import annotations

import heapq

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.registry import register
from dlsched.policies.sjf import ShortestJobFirst


@register("qssf")
class QuasiShortestServiceFirst(ShortestJobFirst):
    """Quasi-shortest-service-first: the smallest predicted GPU-time first (Helios, SC '21)."""

    name = "qssf"

    def __init__(self, placement: str = "consolidated", backfill: bool = False) -> None:
        super().__init__(placement)
        self.backfill = backfill

    def _key(self, view: ClusterView, job: JobState) -> float:
        # GPU-time; a job without GPUs holds none, and is ordered by its duration
        spec = job.spec
        return view.estimator.duration(spec) * max(1, spec.num_gpus)

    def schedule(self, view: ClusterView):
        if self.backfill:
            return super().schedule(view)
        self._admit_arrivals(view)
        alloc = view.allocation()
        heap = self._heap
        while heap:
            job = heap[0][3]
            gpus = view.place(job, strategy=self.placement)
            if gpus is None:
                break  # strict order: nothing behind the first job that does not fit
            heapq.heappop(heap)
            alloc[job] = gpus
        return alloc
