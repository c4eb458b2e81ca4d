"""Jobs whose batch size changes while they train: a per-job schedule, a truth that follows
it, and an estimator that sees it in advance or only as it happens.

Shockwave (Zheng et al., NSDI '23, §2 and §6.1) evaluates jobs that *dynamically adapt*
their batch size: gradient-noise-scale (GNS) jobs double it as training goes, Accordion jobs
run their initial batch size in "critical regimes" and the largest one between them. Their
throughput, and the number of iterations left, change at every such change.

The schedule
    A job's ``batch_schedule`` (a trace column, validated with the others by
    `dlsched.traces.schema.validate_jobs`; or written by
    `dlsched.traces.transforms_dynamic.add_batch_schedules`) is text
    ``"E1:B1;E2:B2;..."``: ``E_i`` epochs (a number > 0) at batch size ``B_i`` (an integer
    > 0), in order. ``"20:32;30:64"`` is 20 epochs at 32, then 30 at 64.

Work
    The engine's work unit stays the step (DESIGN §3), here a step *at the job's initial
    batch size* ``B_1`` (as the goodput model counts them, `dlsched.perf.goodput`): a job's
    ``total_steps`` is its samples / ``B_1``, and an epoch is the same work whatever batch
    size runs it. Phase ``i`` covers the work ``total_steps × (E_1+…+E_i) / (E_1+…+E_n)``;
    the last bound is ``total_steps`` exactly. Work is therefore conserved: what changes at a
    phase is the rate and the number of *iterations* that remain (`iterations_left`:
    ``B_1 / B_i`` iterations per step of phase ``i``).

Throughput at a batch size
    Phase ``i`` runs at ``it/s(B_i) × B_i / B_1`` steps/s, where ``it/s(B_i)`` is the base
    model's rate for the model renamed to that batch size: ``"ResNet-18 (batch size 32)"``
    becomes ``"ResNet-18 (batch size 64)"``, exactly the keys of Gavel's profiled table
    (``gavel``, which Shockwave's artifact reads the same way, ``scheduler.py``
    ``_scale_bs_and_iters``). A batch size the base model has not measured (or a model
    without ``(batch size N)`` in its name) is an error naming the job and the batch size
    (``unmeasured="error"``, the default), or runs at the same samples/s as the initial
    batch size (``unmeasured="samples"``: a documented stand-in, no speed-up from the larger
    batch).

The engine credits work exactly at every phase bound through the progress-dependent rate
mechanism it already has (`ThroughputModel.job_rate_from`, the spec-keyed form of
``rate_from``): no other accounting path.

What policies see
    Only through `DynamicEstimator`: ``known="advance"`` knows every job's whole schedule
    (Shockwave's planner, §4: "the schedule is known to the scheduler"), ``known="online"``
    only the phases a job has reached so far, assuming its current batch size for the rest
    (the reactive view, §2.2). The plain `OracleEstimator` sees only the traced (initial)
    batch size: `DynamicBatchModel.throughput` answers for it.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dlsched.cluster import Cluster
from dlsched.errors import SchedulingError, TraceError, UnknownModelError
from dlsched.jobs import RUNNING, JobSpec, JobState
from dlsched.perf.base import ThroughputModel
from dlsched.perf.estimator import OracleEstimator
from dlsched.perf.rates import JobRates, checked_rate
from dlsched.traces.batch_schedule import (
    COLUMN,
    Phase,
    format_batch_schedule,
    parse_batch_schedule,
    phase_model,
)

__all__ = [
    "COLUMN",
    "BatchSchedule",
    "DynamicBatchModel",
    "DynamicEstimator",
    "Phase",
    "format_batch_schedule",
    "parse_batch_schedule",
    "phase_model",
    "schedules_from_workload",
]

UNMEASURED = ("error", "samples")
KNOWN = ("advance", "online")


class BatchSchedule:
    """A schedule resolved against a job's total work: phase bounds in steps."""

    __slots__ = ("phases", "bounds", "scales")

    def __init__(self, phases: Sequence[Phase], total_steps: float) -> None:
        self.phases = tuple(phases)
        epochs = np.cumsum([p.epochs for p in self.phases])
        bounds = [float(total_steps * e / epochs[-1]) for e in epochs[:-1]]
        self.bounds: tuple[float, ...] = (*bounds, float(total_steps))
        base = self.phases[0].batch_size
        self.scales = tuple(p.batch_size / base for p in self.phases)

    def phase_at(self, work_done: float) -> int:
        """The phase that runs from `work_done` (a bound starts the next phase)."""
        return min(bisect_right(self.bounds, work_done), len(self.phases) - 1)

    def start(self, phase: int) -> float:
        return 0.0 if phase == 0 else self.bounds[phase - 1]

    def iterations_left(self, work_done: float) -> float:
        """Iterations (at each phase's own batch size) left from `work_done` steps."""
        left = 0.0
        for i in range(self.phase_at(work_done), len(self.phases)):
            piece = self.bounds[i] - max(work_done, self.start(i))
            left += max(0.0, piece) / self.scales[i]
        return left


def schedules_from_workload(workload: object) -> dict[object, tuple[Phase, ...]]:
    """job id → phases, from a workload's (or DataFrame's) ``batch_schedule`` column; jobs
    without one (a missing value) are absent. A bad text is a `TraceError` naming the row
    and the column."""
    jobs: Any = getattr(workload, "jobs", workload)
    if COLUMN not in getattr(jobs, "columns", ()):
        raise ValueError(f"the workload has no {COLUMN!r} column")
    rows = jobs["source_row"] if "source_row" in jobs.columns else range(1, len(jobs) + 1)
    out: dict[object, tuple[Phase, ...]] = {}
    for job_id, text, row in zip(jobs["job_id"], jobs[COLUMN], rows, strict=True):
        if text is None or (isinstance(text, float) and math.isnan(text)):
            continue
        try:
            out[job_id] = parse_batch_schedule(text)
        except ValueError as exc:
            raise TraceError(str(exc), row=int(row), field=COLUMN) from None
    return out


class DynamicBatchModel:
    """The truth for jobs with batch-size schedules, over a `base` throughput model.

    `schedules` maps job id → phases (or their ``batch_schedule`` text). A job without one
    runs at the base model's rate, as before. See the module docstring for the rates."""

    def __init__(
        self,
        base: ThroughputModel,
        schedules: Mapping[object, Sequence[Phase] | str],
        unmeasured: str = "error",
    ) -> None:
        if unmeasured not in UNMEASURED:
            raise ValueError(f"unmeasured must be one of {UNMEASURED}, got {unmeasured!r}")
        if hasattr(base, "rate_from") or hasattr(base, "job_rate_from"):
            raise ValueError(
                f"base model {getattr(base, 'name', base)!r} already rates jobs by their "
                "progress; a batch-size schedule runs over a plain throughput model"
            )
        self.base = base
        self.unmeasured = unmeasured
        self.name = f"dynamic-{getattr(base, 'name', 'model')}"
        self.schedules: dict[object, tuple[Phase, ...]] = {
            job_id: parse_batch_schedule(s) if isinstance(s, str) else tuple(s)
            for job_id, s in schedules.items()
        }
        self._resolved: dict[tuple[object, float], BatchSchedule | None] = {}
        self._rates: dict[tuple, float] = {}
        self.revealed: dict[object, int] = {}
        """job id → the latest phase the job has reached (what an online view knows); reset
        when a `DynamicEstimator` binds to a run."""

    # ---- ThroughputModel ------------------------------------------------------------------
    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        """The base model's rate: a job's traced (initial) batch size."""
        return self.base.throughput(model, gpu_type, n_gpus, n_nodes, colocated)

    def reference_type(self, model: str | None) -> str | None:
        return self.base.reference_type(model)

    # ---- schedules ------------------------------------------------------------------------
    def schedule(self, spec: JobSpec) -> BatchSchedule | None:
        """The job's schedule resolved against its work, or None when it has none."""
        key = (spec.job_id, spec.total_steps)  # not the index: a model may serve many runs
        if key in self._resolved:
            return self._resolved[key]
        phases = self.schedules.get(spec.job_id)
        resolved = None if phases is None else BatchSchedule(phases, spec.total_steps)
        self._resolved[key] = resolved
        return resolved

    def phase_rate(
        self, spec: JobSpec, phase: int, gpu_type: str, n_gpus: int, n_nodes: int
    ) -> float:
        """Steps/s of `spec` in `phase` of its schedule on that allocation."""
        sched = self.schedule(spec)
        if sched is None:
            return self.base.throughput(spec.model, gpu_type, n_gpus, n_nodes)
        bs = sched.phases[phase].batch_size
        key = (spec.model, sched.phases[0].batch_size, bs, gpu_type, n_gpus, n_nodes)
        rate = self._rates.get(key)
        if rate is not None:
            return rate
        base_rate = self.base.throughput(spec.model, gpu_type, n_gpus, n_nodes)
        if phase == 0 or sched.scales[phase] == 1.0:
            rate = base_rate
        else:
            renamed = phase_model(spec.model, bs)
            measured: float | None = None
            if renamed is not None:
                try:
                    measured = self.base.throughput(renamed, gpu_type, n_gpus, n_nodes)
                except UnknownModelError:
                    measured = None
            if measured is None:
                if self.unmeasured == "error":
                    raise SchedulingError(
                        f"job {spec.job_id!r} ({COLUMN}) runs batch size {bs}, which "
                        f"{getattr(self.base, 'name', self.base)!r} has not measured for model "
                        f"{spec.model!r} on {n_gpus} x {gpu_type}; pass unmeasured='samples' "
                        "to run it at its initial batch size's samples/s"
                    )
                rate = base_rate  # the same samples/s: steps/s unchanged (module docstring)
            else:
                rate = measured * sched.scales[phase]
        rate = checked_rate(rate, self, spec.job_id, spec.model, gpu_type, n_gpus)
        self._rates[key] = rate
        return rate

    def job_rate_from(
        self, spec: JobSpec, gpu_type: str, n_gpus: int, n_nodes: int, work_done: float
    ) -> tuple[float, float]:
        """(steps/s from `work_done`, the work at which its phase ends)."""
        sched = self.schedule(spec)
        if sched is None:
            return self.base.throughput(spec.model, gpu_type, n_gpus, n_nodes), math.inf
        phase = sched.phase_at(work_done)
        if phase > self.revealed.get(spec.job_id, 0):
            self.revealed[spec.job_id] = phase
        until = sched.bounds[phase] if phase < len(sched.phases) - 1 else math.inf
        return self.phase_rate(spec, phase, gpu_type, n_gpus, n_nodes), until

    def __repr__(self) -> str:
        return (
            f"DynamicBatchModel({self.base!r}, {len(self.schedules)} schedules, "
            f"unmeasured={self.unmeasured!r})"
        )


class DynamicEstimator(OracleEstimator):
    """What a policy knows of batch-size schedules: all of each (``known="advance"``) or
    only the phases reached so far (``known="online"``). See the module docstring.

    Both give a job's current phase's rate as `throughput` (the phase it has reached, the
    truth now) and its true total work. They differ in `remaining_time` and `duration`:
    in advance, the exact sum over the phases to come; online, the rest at the current
    phase's rate. `known_phases` lists what a planner may use."""

    name = "dynamic"

    def __init__(self, known: str = "advance") -> None:
        super().__init__()
        if known not in KNOWN:
            raise ValueError(f"dynamic estimator: known must be one of {KNOWN}, got {known!r}")
        self.known = known

    def bind(
        self, rates: JobRates, specs: Sequence[JobSpec], cluster: Cluster, rng: np.random.Generator
    ) -> None:
        super().bind(rates, specs, cluster, rng)
        truth = rates.truth
        if not isinstance(truth, DynamicBatchModel):
            raise ValueError(
                "the dynamic estimator needs a DynamicBatchModel truth (throughput=...), got "
                f"{getattr(truth, 'name', truth)!r}"
            )
        self._truth = truth
        truth.revealed.clear()  # a new run: nothing reached yet

    def _phase(self, job: JobSpec) -> int:
        return self._truth.revealed.get(job.job_id, 0)

    def throughput(
        self, job: JobSpec, gpu_type: str, n_gpus: int | None = None, n_nodes: int | None = None
    ) -> float:
        n = job.num_gpus if n_gpus is None else n_gpus
        nodes = self._consolidated_nodes(gpu_type, n) if n_nodes is None else n_nodes
        if self._truth.schedule(job) is None:
            return self._true_throughput(job, gpu_type, n, nodes)
        try:
            return self._truth.phase_rate(job, self._phase(job), gpu_type, n, nodes)
        except UnknownModelError:
            return 0.0

    def best_type(self, job: JobSpec) -> tuple[str, float]:
        if self._truth.schedule(job) is None:
            return super().best_type(job)
        best = (self._types[0], -1.0)
        for gpu_type in self._types:  # the phase changes: not cached
            rate = self.throughput(job, gpu_type)
            if rate > best[1]:
                best = (gpu_type, rate)
        return best

    def known_phases(self, job: JobSpec) -> list[tuple[float, float, int]]:
        """(work from, work to, phase) of what the estimator knows of the job's schedule:
        every phase in advance; online, phases up to the one reached, the last of which
        stretches to the job's end. One phase for a job without a schedule."""
        sched = self._truth.schedule(job)
        total = self.total_steps(job)
        if sched is None:
            return [(0.0, total, 0)]
        if self.known == "advance":
            return [(sched.start(i), sched.bounds[i], i) for i in range(len(sched.phases))]
        reached = self._phase(job)
        out = [(sched.start(i), sched.bounds[i], i) for i in range(reached)]
        out.append((sched.start(reached), total, reached))
        return out

    def time_for(
        self, job: JobSpec, work_from: float, gpu_type: str, n_gpus: int, n_nodes: int
    ) -> float:
        """Estimated seconds from `work_from` steps to the end on that allocation."""
        seconds = 0.0
        for lo, hi, phase in self.known_phases(job):
            piece = hi - max(lo, work_from)
            if piece <= 0:
                continue
            try:
                rate = self._truth.phase_rate(job, phase, gpu_type, n_gpus, n_nodes)
            except UnknownModelError:
                rate = 0.0
            if not rate > 0:
                return math.inf
            seconds += piece / rate
        return seconds

    def remaining_time(self, state: JobState, now: float, gpu_type: str | None = None) -> float:
        job = state.spec
        if self._truth.schedule(job) is None:
            return super().remaining_time(state, now, gpu_type)
        done = state.steps_done_at(now)
        lead = 0.0
        if gpu_type is None and state.status == RUNNING and state.gpus:
            gpu_type = self._id_type[state.gpus[0]]
            n = len(state.gpus)
            nodes = len({self._id_node[g] for g in state.gpus})
            lead = max(0.0, state.progress_from - now)
        else:
            if gpu_type is None:
                gpu_type = self.best_type(job)[0]
            n = job.num_gpus
            nodes = self._consolidated_nodes(gpu_type, n)
        return lead + self.time_for(job, done, gpu_type, n, nodes)

    def duration(self, job: JobSpec, gpu_type: str | None = None) -> float:
        if self._truth.schedule(job) is None:
            return super().duration(job, gpu_type)
        gpu_type = gpu_type or self.best_type(job)[0]
        n = job.num_gpus
        return self.time_for(job, 0.0, gpu_type, n, self._consolidated_nodes(gpu_type, n))

    def __repr__(self) -> str:
        return f"DynamicEstimator(known={self.known!r})"
