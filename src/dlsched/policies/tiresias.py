"""Tiresias: discretised 2D-LAS and 2D-Gittins (Gu et al., "Tiresias: A GPU Cluster Manager
for Distributed Deep Learning", NSDI 2019).

Faithful:
- 2D attained service = GPUs × time held (§3.1); K priority queues split by thresholds on
  it; new jobs enter the highest queue; a running job is demoted the moment its service
  crosses its queue's threshold — the engine is woken at that exact time (no polling).
- Queues are served in order; within a queue jobs keep the order in which they entered it
  (FIFO, §3.2) or, for `tiresias-gittins`, the Gittins index of their service (§3.2, Δ from
  the paper), ties FIFO. Jobs are admitted greedily while GPUs last (a job that does not fit
  is skipped, not waited for); running jobs left outside the admitted set are preempted and
  pay the configured restart overhead when they resume.
- Starvation knob (§3.2 "STARVELIMIT"): a job in a lower queue that has waited at least
  `starvation_knob` × its last run time is promoted to the highest queue, its service count
  restarted (off by default, as in the authors' `dlas-gpu`).
- Consolidation-aware placement (§4): jobs of placement-sensitive models (large tensors:
  VGG, AlexNet — the paper's skew profile) are consolidated on the fewest nodes; others may
  be placed best-fit across nodes, and a throughput model that knows spread placements
  (Gavel's `_unconsolidated` entries, the scaling model) charges them for it.

Defaults, from the authors' simulator (SymbioticLab/Tiresias `run_sim.py`, `dlas-gpu`):
thresholds 3,250 and 7,200 GPU-seconds (3 queues); Gittins Δ = 3,250 GPU-seconds with the
`yarn-gput1000.csv` service prior (shipped in `dlsched/data`).

`compat=True` reproduces the authors' simulator rather than the paper: after each
scheduling pass, running jobs move ahead of pending ones within their queue; service counts
whole seconds; demotion times use its formula ceil((limit − executed time) / GPUs); and the
Gittins index is its tabulated version (`AuthorsGittinsTable`, which differs from the
paper's formula). Use it with
the `tiresias-sim` overheads (all zero) to compare with `reference_results.csv`.
Simplified: the admission pass counts GPUs per pool (type, VC) and then places; a job whose
placement fails after that (fragmentation) waits for the next scheduling point.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from importlib import resources

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.jobs import FINISHED, JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

DEFAULT_THRESHOLDS = (3250.0, 7200.0)
GITTINS_DELTA = 3250.0
SENSITIVE_MODELS = ("vgg", "alexnet")
_EPS = 1e-6


class GittinsIndex:
    """Gittins index of a job that has attained `a` GPU-seconds, for a service distribution
    given by samples: G(a) = P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a] (higher runs
    first); 0 past the largest sample."""

    def __init__(self, samples: Sequence[float], delta: float = GITTINS_DELTA) -> None:
        values = np.sort(np.asarray(samples, dtype=float))
        if len(values) == 0 or delta <= 0:
            raise ValueError("the Gittins prior needs samples and a positive delta")
        self.values = values
        self.delta = float(delta)
        self._prefix = np.concatenate([[0.0], np.cumsum(values)])

    @classmethod
    def yarn_prior(cls, delta: float = GITTINS_DELTA) -> GittinsIndex:
        """Tiresias' shipped prior: 1,001 GPU-time samples of YARN jobs."""
        text = (resources.files("dlsched.data") / "tiresias_yarn_gput1000.csv").read_text()
        return cls([float(v) for v in text.split()[1:]], delta)

    def __call__(self, attained: float) -> float:
        values, prefix, delta = self.values, self._prefix, self.delta
        start = bisect.bisect_right(values, attained)  # first sample > attained
        alive = len(values) - start
        if alive == 0:
            return 0.0
        stop = bisect.bisect_right(values, attained + delta)
        done = stop - start
        within = prefix[stop] - prefix[start] - done * attained  # Σ (S − a) for S ≤ a + Δ
        expected = (within + (alive - done) * delta) / alive
        return (done / alive) / expected if expected > 0 else math.inf


class AuthorsGittinsTable:
    """The Gittins lookup of the authors' simulator (`run_sim.py`: `parse_job_dist`,
    `cal_r_gittins_index`, `get_gittins_index`), for `compat=True`: the index is tabulated at
    each prior sample minus one and looked up as a step function, and its expected-service
    term sums the samples themselves rather than the service still to come (S, not S − a),
    with the simulator's roundings."""

    def __init__(self, samples: Sequence[float], delta: float = GITTINS_DELTA) -> None:
        self.data = sorted(int(v) for v in samples)
        self.delta = delta
        self.table = [self._rank(int(v - 1)) for v in self.data] + [0.0]

    def _rank(self, attained: int) -> float:
        data, num, delta = self.data, len(self.data), self.delta
        if attained > data[-1] - 1:
            return 0.0
        idx = bisect.bisect_right(data, attained)
        reach = attained + delta
        idx_delta = num - 1 if reach > data[-1] - 1 else bisect.bisect_right(data, reach)
        p = round((idx_delta - idx) / (num - idx), 5)
        e = round((sum(data[idx:idx_delta]) + delta * (num - idx_delta)) / (num - idx), 5)
        return round(p * 1_000_000 / e, 4)

    def __call__(self, attained: float) -> float:
        if attained > self.data[-1]:
            return 0.0
        return self.table[bisect.bisect_right(self.data, attained)]


@register("tiresias")
class Tiresias(BasePolicy):
    """Tiresias-L: discretised 2D-LAS with priority queues on GPU-time (NSDI 2019)."""

    name = "tiresias"

    def __init__(self, thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
                 starvation_knob: float | None = None, consolidate: str = "sensitive",
                 compat: bool = False) -> None:
        super().__init__()
        limits = tuple(float(t) for t in thresholds)
        if any(b <= a for a, b in zip(limits, limits[1:], strict=False)) or any(
                t <= 0 for t in limits):
            raise ValueError(f"tiresias: thresholds must be positive and increasing: {limits}")
        if consolidate not in ("sensitive", "all", "none"):
            raise ValueError("tiresias: consolidate must be 'sensitive', 'all' or 'none'")
        self.thresholds = limits
        self.starvation_knob = starvation_knob
        self.consolidate = consolidate
        self.compat = compat
        self._queues: list[list[JobState]] = [[] for _ in range(len(limits) + 1)]
        self._level: dict[JobState, int] = {}
        self._offset: dict[JobState, float] = {}  # service counted from here (promotions)

    # ---- bookkeeping ------------------------------------------------------------------
    def on_arrival(self, job: JobState) -> None:
        super().on_arrival(job)
        self._queues[0].append(job)
        self._level[job] = 0
        self._offset[job] = 0.0

    def on_finish(self, job: JobState) -> None:
        self._queues[self._level.pop(job)].remove(job)
        del self._offset[job]

    def _service(self, job: JobState, now: float) -> float:
        if self.compat:  # whole seconds of run time × GPUs, as the authors' simulator
            held = job.attained_service_at(now) / job.spec.num_gpus
            return float(int(held - self._offset[job] / job.spec.num_gpus) * job.spec.num_gpus)
        return job.attained_service_at(now) - self._offset[job]

    def _move(self, job: JobState, level: int) -> None:
        self._queues[self._level[job]].remove(job)
        self._queues[level].append(job)
        self._level[job] = level

    def _update_levels(self, view: ClusterView) -> None:
        now, last = view.now, len(self.thresholds)
        for job in view.running.values():
            level = self._level[job]
            service = self._service(job, now)
            target = level
            while target < last and service >= self.thresholds[target] * (1 - _EPS):
                target += 1
            if target != level:
                self._move(job, target)
        knob = self.starvation_knob
        if knob is None:
            return
        for job in view.pending.values():
            if self._level[job] > 0 and job.last_run_s > 0 and (
                    now - job.queued_since >= knob * job.last_run_s * (1 - _EPS)):
                self._move(job, 0)
                self._offset[job] = job.attained_service_at(now)

    # ---- ordering and admission -------------------------------------------------------
    def _in_queue_order(self, queue: list[JobState], now: float) -> list[JobState]:
        return queue

    def _strategy(self, job: JobState) -> str:
        if self.consolidate == "all":
            return "consolidated"
        if self.consolidate == "none":
            return "best_fit"
        model = (job.spec.model or "").lower()
        return "consolidated" if any(m in model for m in SENSITIVE_MODELS) else "best_fit"

    def schedule(self, view: ClusterView):
        now = view.now
        self._update_levels(view)
        order = [job for queue in self._queues for job in self._in_queue_order(queue, now)]
        room = view.pool_capacity()
        left = sum(room.values())
        chosen: dict[JobState, str] = {}
        for job in order:
            if left == 0:
                break  # every GPU is spoken for: the rest wait (or are preempted)
            n = job.spec.num_gpus
            if job.gpus:
                pool = view.pool_of_gpu(job.gpus[0])
                if room.get(pool, 0) >= n:
                    room[pool] -= n
                    left -= n
                    chosen[job] = pool[0]
                continue
            for gpu_type in view.rank_types(job.spec):
                pool = view.pool(job.spec, gpu_type)
                if room.get(pool, 0) >= n:
                    room[pool] -= n
                    left -= n
                    chosen[job] = gpu_type
                    break
        alloc = view.allocation()
        for job in list(view.running.values()):
            if job not in chosen:
                del alloc[job]
                self._requeued(job)
        holders = []
        for job, gpu_type in chosen.items():  # in priority order
            if job.gpus:
                holders.append(job)
                continue
            gpus = view.place(job, gpu_type=gpu_type, strategy=self._strategy(job))
            if gpus is not None:
                alloc[job] = gpus
                self._started(job)
                holders.append(job)
        if self.compat:  # the authors' simulator: running jobs first within each queue
            held = set(holders)
            for queue in self._queues:
                queue.sort(key=lambda j: j not in held)
        self._set_timers(view, holders)
        return alloc

    def _set_timers(self, view: ClusterView, holders: list[JobState]) -> None:
        """Wake the engine when the next holder of GPUs crosses its threshold, and when the
        next starving job is due for promotion."""
        now, last = view.now, len(self.thresholds)
        wake = math.inf
        for job in holders:
            level = self._level[job]
            if level < last:
                wake = min(wake, self._crossing(job, now, level))
        if self.starvation_knob is not None:
            held = set(holders)
            for queue in self._queues[1:]:
                for job in queue:
                    if job in held or job.status == FINISHED:
                        continue
                    # Preempted in this call: it waits from now, after a run until now.
                    last_run = job.last_run_s if not job.gpus else now - job.held_since
                    since = job.queued_since if not job.gpus else now
                    if last_run > 0:
                        wake = min(wake, since + self.starvation_knob * last_run)
        if wake < math.inf:
            view.wake_at(wake)

    def _crossing(self, job: JobState, now: float, level: int) -> float:
        n = job.spec.num_gpus
        service = self._service(job, now)
        limit = self.thresholds[level]
        if self.compat:
            executed = service / n  # the simulator mixes run time into a GPU-time formula
            return now + math.ceil((limit - executed) / n)
        return now + max(0.0, limit - service) / n


@register("tiresias-gittins")
class TiresiasGittins(Tiresias):
    """Tiresias-G: 2D-Gittins index within priority queues on GPU-time (NSDI 2019)."""

    name = "tiresias-gittins"

    def __init__(self, thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
                 starvation_knob: float | None = None, consolidate: str = "sensitive",
                 compat: bool = False, delta: float = GITTINS_DELTA,
                 prior: Sequence[float] | None = None) -> None:
        super().__init__(thresholds, starvation_knob, consolidate, compat)
        samples = prior if prior is not None else GittinsIndex.yarn_prior(delta).values
        self.index = (AuthorsGittinsTable(samples, delta) if compat
                      else GittinsIndex(samples, delta))

    def _in_queue_order(self, queue: list[JobState], now: float) -> list[JobState]:
        ranks = {job: self.index(self._service(job, now)) for job in queue}
        # Highest index first; ties: earlier submission, then queue order (stable sort).
        return sorted(queue, key=lambda j: (-ranks[j], j.spec.submit_time))
