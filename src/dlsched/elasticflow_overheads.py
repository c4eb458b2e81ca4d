"""The ElasticFlow artifact's overheads, as the ``elasticflow`` overhead presets.

Artifact ``pkusys/ElasticFlow`` @ ``04a0109a6acd`` (Apache-2.0), simulator
``ElasticFlow/scheduler/``. Its simulator charges a job on ``n`` GPUs
(``utils.py`` ``estimate_overhead``, lines 148–161):

- a base of 2 s (line 149), 7 s on a cluster of 256 GPUs or more (lines 151–152);
- plus 2 × (log2 n + 1) s for (re)starting the n workers (line 160);
- plus 27 s when the job restarts from a checkpoint (lines 156–157), 47 s on a cluster of 256
  GPUs or more (lines 158–159);
- only the base when the job's placement is cached, i.e. unchanged (lines 154–155).

Mapped onto dlsched's overhead events (`dlsched.overheads.OverheadModel`): a restart after a
preemption pays base + 27 (+ 20) + 2 × (log2 n + 1); a first start, a move and a change of GPU
count pay base + 2 × (log2 n + 1) (a new placement, not a checkpoint restore); a job whose
GPUs do not change pays nothing. ``elasticflow`` is for clusters under 256 GPUs (Figure 8(a)'s
64 T4, Figures 9–11's 64 and 128 A100), ``elasticflow-256`` for 256 GPUs and more (the
artifact's test is ``CLUSTER.num_gpu >= 256``: Figure 8(b)'s clusters, Figure 9's 256 A100).
`for_cluster` picks between them as the artifact does; the policies that charge these costs
by default (``elasticflow``, ``themis`` with ``reading="artifact"``) use it.

Not modelled: the artifact re-charges every running job at every scheduling event of its
simulation loops (``scheduler.py``: ``ef_sim_jobs_access_control``, the ``ef-accessctrl`` of
the figures, line 1994; ``one_queue_edf_sim_jobs_access_control`` 1569; ``themis_sim_jobs``
2518 — the base for jobs whose placement is cached, the whole cost for the others;
``gandiva_sim_jobs`` 1165 and ``dlas_sim_jobs`` 2909/2969 without the cache) and charges every
job the checkpoint cost on every ``scheduling_slot``-th event (``restart = schedule_count > 0
and schedule_count % FLAGS.scheduling_slot == 0``, lines 1161, 1563, 1988, 2488, 2894). Its
plain ``edf`` (``one_queue_edf_sim_jobs``, line 1341) charges nothing: the call is commented
out, so compare the artifact's EDF with preset ``none``. dlsched charges a job when its
allocation changes. The scheduling slot itself (``--scheduling_slot``, default 60 s,
``scheduler.py`` line 72; 60 s in ``run_fig8a.sh`` and ``run_fig8b.sh``, 240 s in
``run_fig9.sh``, ``run_fig10.sh`` and ``run_fig11.sh``) is a policy's round, not an overhead:
`SCHEDULING_SLOT_S` and `SCHEDULING_SLOT_SWEEPS_S`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.cluster import Cluster
from dlsched.jobs import JobSpec
from dlsched.overheads import OverheadModel

#: ``--scheduling_slot`` default (``scheduler.py`` line 72), as in ``run_fig8a.sh``/``8b``.
SCHEDULING_SLOT_S = 60.0
#: ``--scheduling_slot=240`` of ``run_fig9.sh``, ``run_fig10.sh`` and ``run_fig11.sh``.
SCHEDULING_SLOT_SWEEPS_S = 240.0
#: Clusters of this many GPUs or more pay the larger base and restart costs (``utils.py``
#: lines 151 and 158).
LARGE_CLUSTER_GPUS = 256


@dataclass(frozen=True)
class ElasticFlowOverheads(OverheadModel):
    """`estimate_overhead` of the artifact (see the module docstring): `base_s` (2 or 7),
    `checkpoint_s` added on a restart (27 or 47), and 2 × (log2 n + 1) s per (re)launch."""

    base_s: float = 2.0
    checkpoint_s: float = 27.0

    def _launch(self, job: JobSpec) -> float:
        n = max(job.num_gpus, 1)
        return self.base_s + (math.log2(n) + 1) * 2

    def first_start(self, job: JobSpec) -> float:
        """A new placement: base + 2 × (log2 n + 1)."""
        return self._launch(job)

    def restart(self, job: JobSpec) -> float:
        """A checkpoint restore after preemption: base + checkpoint + 2 × (log2 n + 1)."""
        return self._launch(job) + self.checkpoint_s

    def migration(self, job: JobSpec) -> float:
        """A move keeps the job's state in memory: base + 2 × (log2 n + 1)."""
        return self._launch(job)

    def rescale(self, job: JobSpec) -> float:
        """A change of GPU count: base + 2 × (log2 n + 1), n the job's requested count (the
        engine does not pass the new count)."""
        return self._launch(job)


#: Clusters under 256 GPUs (``utils.py`` lines 149, 157, 160).
ELASTICFLOW = ElasticFlowOverheads()
#: Clusters of 256 GPUs or more (``utils.py`` lines 151–152, 158–159): base 7 s, restart +47 s.
ELASTICFLOW_256 = ElasticFlowOverheads(base_s=7.0, checkpoint_s=47.0)


def for_cluster(cluster: Cluster) -> ElasticFlowOverheads:
    """The preset the artifact charges on `cluster`: `ELASTICFLOW_256` from 256 GPUs on."""
    return ELASTICFLOW_256 if cluster.num_gpus >= LARGE_CLUSTER_GPUS else ELASTICFLOW
