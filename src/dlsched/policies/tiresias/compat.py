"""Tiresias as the authors' simulator runs it (SymbioticLab/Tiresias `simulator/run_sim.py`,
`dlas_sim_jobs`): `AuthorsTiresias` (their `dlas-gpu`) and `AuthorsTiresiasGittins`
(`dlas-gpu-gittins`), which match the simulator run for run (`tests/test_fidelity_tiresias.py`:
average JCT, makespan and preemption counts of `reference_results.csv`). Chosen by
`dlsched.policies.get("tiresias", compat=True)` (or `"tiresias-gittins"`); the paper's
algorithm is `paper.py`.

The replica differs from the paper, step for step: it schedules only at arrivals,
completions and its own queue-jump times; each event first updates every job in arrival
order (whole seconds; a running job drops at most one queue per event; a waiting job is
promoted when its pending time since it first ran, or since its last promotion, reaches
knob × its run time since then — the simulator's reading of the knob), then sorts each queue
by the Gittins index (ties: earlier submission; sort is stable), admits by GPU count, and
finally moves waiting jobs behind running ones in every queue. Its next queue-jump time mixes
run time into the GPU-time formula with Python 2 integer division, ⌊(threshold − run
seconds) / GPUs⌋ after now, so demotions of multi-GPU jobs happen late and at times that
depend on other events; the Gittins index is its tabulated version (`AuthorsGittinsTable`);
placement never delays a job (its `dlas` counts GPUs whatever `--scheme` says), so the default
placement (`"sensitive"`) is `consolidated` there. Use it with the `tiresias-sim` overheads
(all zero) to compare with `reference_results.csv`.

Defaults are the simulator's: thresholds 3,250 and 7,200 GPU-seconds (3 queues), Gittins Δ =
3,250 GPU-seconds with its `yarn-gput1000.csv` prior. Simplified as the paper mode is:
admission counts GPUs per pool (type, VC) and then places.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dlsched.engine.allocation import Allocation
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.tiresias.common import _EPS, DEFAULT_THRESHOLDS, TiresiasBase
from dlsched.policies.tiresias.gittins import (
    GITTINS_DELTA,
    AuthorsGittinsTable,
    check_gittins,
    prior_samples,
)


class AuthorsTiresias(TiresiasBase):
    """Tiresias-L as the authors' simulator runs it (`dlas-gpu`): queue jumps at whole
    seconds, events only at arrivals, completions and its own jump times."""

    gittins = False  # whether queues are sorted by the Gittins index (`_index`)

    def start(self, view: ClusterView) -> None:
        """Empty queues for a run; the first event is the first arrival."""
        super().start(view)
        self._cqueues: list[list[JobState]] = [[] for _ in range(self._last + 1)]
        self._runnable: dict[JobState, None] = {}  # arrival order, as `JOBS.runnable_jobs`
        self._first_run: dict[JobState, float | None] = {}  # since the last promotion
        self._rank: dict[JobState, float] = {}
        self._event = False
        self._next_jump = math.inf

    def on_arrival(self, job: JobState) -> None:
        self._level[job] = 0
        self._offset[job] = 0.0
        self._cqueues[0].append(job)
        self._runnable[job] = None
        self._first_run[job] = None
        self._event = True

    def on_finish(self, job: JobState) -> None:
        level = self._level.pop(job)
        del self._offset[job]
        self._cqueues[level].remove(job)
        del self._runnable[job], self._first_run[job]
        self._rank.pop(job, None)
        self._event = True

    def on_nodes_changed(self, view: ClusterView) -> None:
        """(Engine) nodes came or went (rented instances): the next call must look again."""
        self._event = True

    def _strategy(self, view: ClusterView, job: JobState, gpu_type: str) -> str:
        if self.placement != "sensitive":
            return self.placement
        return "consolidated"  # the simulator's dlas counts GPUs: placement never waits

    def _executed(self, job: JobState, now: float) -> int:
        """Whole seconds run since the job last entered the top queue (their
        `executed_time`); the authors' simulator counts time, not GPU-time, here."""
        n = job.spec.num_gpus
        return int(job.attained_service_at(now) / n + _EPS) - int(self._offset[job] / n + _EPS)

    def _index(self, executed_gpu_s: int) -> float:
        """The Gittins index at a service (only read when `gittins`)."""
        return 0.0

    def schedule(self, view: ClusterView) -> Allocation | None:
        now = view.now
        if not self._event and now != self._next_jump:
            return None  # a queue-jump time the simulator has since moved: no event there
        self._event = False
        queues, level_of, limits, last = self._cqueues, self._level, self.thresholds, self._last
        knob = self.starvation_knob
        for job in self._runnable:  # arrival order, as `JOBS.runnable_jobs`
            n = job.spec.num_gpus
            level = level_of[job]
            executed = self._executed(job, now)
            if job.gpus:
                if level < last and executed * n >= limits[level]:
                    queues[level].remove(job)
                    queues[level + 1].append(job)
                    level_of[job] = level + 1
            elif (
                knob is not None
                and level > 0
                and executed > 0
                and (first := self._first_run[job]) is not None
                and now - first - executed >= int(executed * knob)
            ):
                self._offset[job] = job.attained_service_at(now)
                self._first_run[job] = None
                queues[level].remove(job)
                queues[0].append(job)
                level_of[job] = 0
                executed = 0
            if self.gittins:
                self._rank[job] = self._index(executed * n)
        if self.gittins:
            rank = self._rank
            for queue in queues:
                queue.sort(key=lambda j: (rank[j], -int(j.spec.submit_time)), reverse=True)
        order = [job for queue in queues for job in queue]
        pools = {job: view.pool_of_gpu(job.gpus[0]) for job in view.running.values()}
        dropped, admitted = self._admit(view, order, view.pool_capacity(), len(view.running), pools)
        alloc, preempted, started = self._apply(view, dropped, admitted)
        holders = set(view.running.values()).difference(preempted)
        for job, _ in started:
            holders.add(job)
            if self._first_run[job] is None:
                self._first_run[job] = now
        for queue in queues:  # waiting jobs move behind running ones (stable)
            queue.sort(key=lambda j: j not in holders)
        jump = math.inf
        for job in self._runnable:
            level, n = level_of[job], job.spec.num_gpus
            executed = self._executed(job, now)
            if job in holders:
                if level < last:
                    jump = min(jump, now + (int(limits[level]) - executed) // n)
            elif (
                knob is not None
                and level > 0
                and executed > 0
                and (first := self._first_run[job]) is not None
            ):
                diff = int(executed * knob - (now - first - executed))
                if diff > 0:
                    jump = min(jump, now + diff)
        self._next_jump = jump
        if jump < math.inf:
            view.wake_at(jump)
        return alloc


class AuthorsTiresiasGittins(AuthorsTiresias):
    """Tiresias-G as the authors' simulator runs it (`dlas-gpu-gittins`): its tabulated
    Gittins index (`AuthorsGittinsTable`) on whole seconds × GPUs."""

    name = "tiresias-gittins"
    gittins = True

    def __init__(
        self,
        thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
        starvation_knob: float | None = None,
        placement: str = "sensitive",
        delta: float = GITTINS_DELTA,
        prior: Sequence[float] | None = None,
    ) -> None:
        super().__init__(thresholds, starvation_knob, placement)
        check_gittins(self.name, delta, prior)
        self.delta = delta
        self.prior = prior

    def start(self, view: ClusterView) -> None:
        """Empty queues and the index table for a run."""
        super().start(view)
        self._table = AuthorsGittinsTable(prior_samples(self.prior), self.delta)

    def _index(self, executed_gpu_s: int) -> float:
        return self._table(executed_gpu_s)
