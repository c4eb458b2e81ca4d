"""Horus: interference-aware, prediction-based scheduling (Yeung et al., "Horus:
Interference-Aware and Prediction-Based Scheduling in Deep Learning Systems", IEEE TPDS
33(1):88-100, 2022; the ICA3PP 2020 paper "Horus: An Interference-aware Resource Manager for
Deep Learning Systems" before it).

Horus predicts each job's GPU utilisation (and memory) from its model instead of profiling
it on a reserved GPU, and co-locates jobs on one GPU where their predicted utilisations add
up best. The paper's text could not be read here (only its abstract); the rules below are
those of the authors' simulator, ``matthewygf/GPUSchedule`` (commit 4d4278c,
``core/scheduling/algorithm.py``, ``core/scheduling/horus.py``, ``core/jobs/base_factory.py``,
``infra/device.py``), referred to as "the artifact".

Faithful (to the artifact):
- Queue order: waiting jobs in a min-heap by predicted average utilisation, lowest first
  (``CompareAbleByUtilization``, made a min-heap in commit fddf74d), ties by arrival.
- Look-ahead: the first `lookahead` jobs of that order (``k=5`` of ``schedule_horus``) are
  tried in order and the first that can be placed starts; this repeats until none of them
  can. A job beyond the first `lookahead` never starts ahead of them.
- Placement cost of a GPU for a 1-GPU job (``horus_score``): ``MEMCOST × memory share +
  util_cost / 100 + jobs already on the GPU``, where ``util_cost = |U_on_gpu + U_job - 100|``,
  × ``UTILCOST`` when the sum exceeds 100 %; the GPU of the lowest cost wins. A GPU fits when
  the predicted memory of its jobs and the new one leaves more than `memory_headroom_mib`
  free (``Device.can_fit``). Constants: ``MEMCOST`` 1.3, ``UTILCOST`` 1.6, headroom 500 MiB.
  With these costs a free GPU always beats sharing one (its cost is at most
  ``MEMCOST × share + 1``; sharing costs at least 1 more), so Horus co-locates only when no
  GPU is free — and then beside the running job whose predicted utilisation complements the
  new one's best (the sum nearest 100 %, overshoot penalised 1.6×).
- Non-preemptive; a co-located pair stays until one of them ends.
- The baseline of the artifact's comparison, ``score="gandiva"`` (``gandiva_score``: the
  GPU's current utilisation only, not the incoming job's) with ``queue="fifo"``
  (``schedule_fifo``): utilisation-aware packing without prediction of the new job.

Differences and simplifications:
- Two jobs per GPU at most (dlsched's engine: the measured pair tables hold pairs only), not
  the artifact's three; only rigid 1-GPU whole-GPU jobs share, beside a rigid 1-GPU job
  running alone. Other jobs (multi-GPU, fractional, elastic, without GPUs) take free GPUs
  through `ClusterView.place` (`placement`, consolidated by default) and are never shared.
  The artifact scores each task of a multi-GPU job on every device and may pack them.
- The artifact's memory term adds the GPU's used memory (MiB) to the new job's share
  (``d.get_current_memory() + task.gpu_memory_max / d.memory``, a unit slip); here the share
  is ``(used + new) / capacity``, as intended.
- The artifact samples a GPU's current utilisation from a normal around each job's average;
  here it is the sum of the predicted averages (deterministic).
- The artifact's truth is a flat 20 % slowdown of any co-located task (``interference.FACTOR``);
  here the truth is the run's throughput model (Lucid's measured pair speeds,
  `dlsched.perf.colocation.LucidColocation`, or Gavel's pair table): a job's predicted
  utilisation decides, the measured slowdown is what happens.
- Memory feasibility of a pair is Horus' predicted memory check *and* a positive pair rate
  from the estimator both ways (pairs nobody measured did not fit in memory, as for
  `gandiva`); a pair the estimator cannot rate is never co-located.
- ``horus+`` (k-means queues with credits) is not modelled.

Prediction (`dlsched.perf.gpu_util`): ``utilisation="predicted"`` (default) gives each model
the profile of a ridge regression over model features fitted on Lucid's single-job table
*without that model* (leave-one-model-out: a model never profiled, Horus' case);
``"measured"`` uses the table's own means (perfect profiling, an upper bound). A job whose
model has no features gets no prediction: it is ordered last (as 100 %) and never shares a
GPU (counted in ``stats["unpredicted"]``). Model names match Lucid's case-insensitively,
ignoring ``-``/``_``/spaces and a trailing ``(batch size N)``; Gavel's ``LM`` and
``Recommendation`` are Lucid's ``LSTM`` and ``NeuMF``.

`profiles` is the path of Lucid's ``single_data.csv`` or a `UtilisationPredictor`; by
default ``anchors/lucid_colocation/single_data.csv`` of the shared data folder
(``$DLSCHED_SHARED`` or ``../shared``). Lucid's files are under a non-commercial licence and
not shipped: without them every job runs alone (a RuntimeWarning says so).
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

from dlsched.engine.view import ClusterView
from dlsched.errors import SchedulingError
from dlsched.jobs import JobSpec, JobState
from dlsched.perf.gpu_util import Profile, UtilisationPredictor
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

LOOKAHEAD = 5
"""Jobs of the queue's head tried per placement (``schedule_horus(..., k=5)``)."""
MEMCOST = 1.3
"""Weight of the memory share in a GPU's cost (``core/scheduling/horus.py``)."""
UTILCOST = 1.6
"""Penalty factor of predicted utilisation above 100 % (``core/scheduling/horus.py``)."""
MEMORY_HEADROOM_MIB = 500.0
"""A GPU fits a job when more than this much memory stays free (``Device.can_fit``)."""
GPU_MEMORY_MIB = 24_576.0
"""GPU memory assumed for every GPU: the RTX 3090 (24 GB) Lucid profiled on [I]."""
SCORES = ("horus", "gandiva")
QUEUES = ("utilisation", "fifo")
UTILISATIONS = ("predicted", "measured")
PROFILES = "anchors/lucid_colocation/single_data.csv"

_ALIASES = {"lm": "lstm", "recommendation": "neumf"}
_BATCH = re.compile(r"\(batch size \d+\)")


def lucid_model(model: str | None) -> str:
    """The Lucid key of a model name ('' for none): lower case, without ``-``/``_``/spaces
    and a ``(batch size N)`` suffix; Gavel's LM and Recommendation as LSTM and NeuMF."""
    if model is None:
        return ""
    key = _BATCH.sub("", model.lower())
    key = re.sub(r"[\s\-_]", "", key)
    return _ALIASES.get(key, key)


def _default_profiles() -> Path | None:
    env = os.environ.get("DLSCHED_SHARED")
    roots = [Path(env)] if env else []
    roots += [Path(__file__).resolve().parents[3].parent / "shared", Path.cwd().parent / "shared"]
    for root in roots:
        if (root / PROFILES).exists():
            return root / PROFILES
    return None


@register("horus")
class Horus(BasePolicy):
    """Horus (TPDS '22): lowest predicted utilisation first, co-location by predicted
    utilisation when no GPU is free."""

    name = "horus"

    def __init__(
        self,
        profiles: str | os.PathLike[str] | UtilisationPredictor | None = None,
        utilisation: str = "predicted",
        score: str = "horus",
        queue: str = "utilisation",
        lookahead: int = LOOKAHEAD,
        gpu_memory_mib: float = GPU_MEMORY_MIB,
        memory_headroom_mib: float = MEMORY_HEADROOM_MIB,
        placement: str = "consolidated",
    ) -> None:
        if utilisation not in UTILISATIONS:
            raise ValueError(f"utilisation must be one of {UTILISATIONS}, got {utilisation!r}")
        if score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}, got {score!r}")
        if queue not in QUEUES:
            raise ValueError(f"queue must be one of {QUEUES}, got {queue!r}")
        if isinstance(lookahead, bool) or not isinstance(lookahead, int) or lookahead < 1:
            raise ValueError(f"lookahead must be a whole number >= 1, got {lookahead!r}")
        if not gpu_memory_mib > 0:
            raise ValueError(f"gpu_memory_mib must be > 0, got {gpu_memory_mib!r}")
        if not 0 <= memory_headroom_mib < gpu_memory_mib:
            raise ValueError(
                f"memory_headroom_mib must be in [0, gpu_memory_mib), got {memory_headroom_mib!r}"
            )
        self.profiles = profiles
        self.utilisation = utilisation
        self.score = score
        self.queue = queue
        self.lookahead = lookahead
        self.gpu_memory_mib = float(gpu_memory_mib)
        self.memory_headroom_mib = float(memory_headroom_mib)
        self.placement = placement
        self.stats: dict[str, int] = {}
        self.predicted: dict[object, Profile | None] = {}

    # ---- per run -----------------------------------------------------------------------
    def start(self, view: ClusterView) -> None:
        self.stats = {"packs": 0, "unpredicted": 0}
        self.predicted = {}
        self._profile_of: dict[str, Profile | None] = {}
        self._predictor = self._load()
        self._waiting: list[JobState] = []

    def _load(self) -> UtilisationPredictor | None:
        source = self.profiles
        if isinstance(source, UtilisationPredictor):
            return source
        path = Path(source) if source is not None else _default_profiles()
        if path is None:
            warnings.warn(
                f"horus: no utilisation table ({PROFILES} of the shared data folder; pass "
                "`profiles`): every job runs alone",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
        if not path.exists():
            raise ValueError(f"profiles: {path} does not exist")
        return UtilisationPredictor.from_csv(path)

    def _profile(self, spec: JobSpec) -> Profile | None:
        key = lucid_model(spec.model)
        if key in self._profile_of:
            return self._profile_of[key]
        predictor = self._predictor
        found: Profile | None = None
        if predictor is not None and predictor.knows(key):
            if self.utilisation == "measured":
                found = predictor.measured(key)
            else:
                found = predictor.profile(key)
        self._profile_of[key] = found
        return found

    def on_arrival(self, job: JobState) -> None:
        profile = self._profile(job.spec)
        self.predicted[job.job_id] = profile
        if profile is None:
            self.stats["unpredicted"] += 1
        self._waiting.append(job)

    # ---- scheduling --------------------------------------------------------------------
    def _key(self, job: JobState) -> tuple[float, float, int]:
        spec = job.spec
        if self.queue == "fifo":
            return (0.0, spec.submit_time, spec.index)
        profile = self.predicted.get(job.job_id)
        util = 100.0 if profile is None else profile.gpu_util
        return (util, spec.submit_time, spec.index)

    def schedule(self, view: ClusterView):
        alloc = view.allocation()
        waiting = sorted((j for j in self._waiting if j.job_id in view.pending), key=self._key)
        while waiting:
            for position, job in enumerate(waiting[: self.lookahead]):
                if self._start(view, alloc, job):
                    del waiting[position]
                    break
            else:
                break
        self._waiting = waiting
        return alloc

    def _start(self, view: ClusterView, alloc, job: JobState) -> bool:
        spec = job.spec
        gpus = view.place(job, strategy=self.placement)
        if gpus is not None:
            alloc[job] = gpus
            return True
        if not self._shares(spec) or self.predicted.get(job.job_id) is None:
            return False
        for _cost, gpu in self._candidates(view, job):
            try:
                alloc.pack(job, (gpu,))
            except SchedulingError:
                continue  # not allowed there (VC, GPU type, CPU or memory of the node)
            self.stats["packs"] += 1
            return True
        return False

    @staticmethod
    def _shares(spec: JobSpec) -> bool:
        """Whether a job may share a GPU: a rigid job of one whole GPU."""
        return (
            spec.num_gpus == 1
            and spec.gpu_milli == 1000
            and spec.min_gpus in (None, 1)
            and spec.max_gpus in (None, 1)
        )

    def cost(self, on_gpu: list[Profile], new: Profile) -> float | None:
        """The artifact's cost of putting a job of profile `new` on a GPU holding jobs of
        profiles `on_gpu` (lower is better); None when it does not fit in memory."""
        used_mem = sum(p.gmem_mib for p in on_gpu)
        if self.gpu_memory_mib - (used_mem + new.gmem_mib) <= self.memory_headroom_mib:
            return None
        mem_cost = MEMCOST * (used_mem + new.gmem_mib) / self.gpu_memory_mib
        used_util = sum(p.gpu_util for p in on_gpu)
        if self.score == "gandiva":
            util_cost = used_util
        else:
            total = used_util + new.gpu_util - 100.0
            util_cost = abs(total) * UTILCOST if total > 0 else abs(total)
        return mem_cost + util_cost / 100.0 + len(on_gpu)

    def _candidates(self, view: ClusterView, job: JobState) -> list[tuple[float, int]]:
        """GPUs held by one running job that the new job may share, cheapest first (ties:
        the lower GPU id)."""
        spec = job.spec
        new = self.predicted[job.job_id]
        assert new is not None
        query = getattr(view.estimator, "colocated_throughput", None)
        if query is None:
            return []
        found: list[tuple[float, int]] = []
        for other in view.running.values():
            ospec = other.spec
            if len(other.gpus) != 1 or not self._shares(ospec):
                continue
            gpu = other.gpus[0]
            if len(view.jobs_on_gpu(gpu)) != 1:
                continue
            partner = self.predicted.get(other.job_id)
            if partner is None:
                continue
            cost = self.cost([partner], new)
            if cost is None:
                continue
            gpu_type = view.gpu_type_of(gpu)
            if not (
                query(spec, gpu_type, 1, ((ospec.model, 1),)) > 0
                and query(ospec, gpu_type, 1, ((spec.model, 1),)) > 0
            ):
                continue  # a pair nobody measured: it does not fit
            found.append((cost, gpu))
        found.sort()
        return found

    def __repr__(self) -> str:
        return (
            f"Horus(utilisation={self.utilisation!r}, score={self.score!r}, "
            f"queue={self.queue!r}, lookahead={self.lookahead})"
        )
