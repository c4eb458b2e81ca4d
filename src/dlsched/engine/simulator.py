"""The simulator: the only code that touches SimPy.

One `simpy.Environment` orders events; dlsched keeps exact times itself (`self.now` is the
time computed for the event, never an accumulation of SimPy delays), so completion times are
exact and time never goes back. Jobs arrive through one arrival process; a running job's
completion is a timeout carrying the job's allocation version, so a preemption or a move just
bumps the version and the stale timeout is ignored (cheaper than one process per job with
`Interrupt`, which the design sketch suggested; the semantics are the same). Everything that
happens at one instant — arrivals, completions, a round tick — asks for one scheduling call,
which runs after all of them (a lower SimPy priority at the same time).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import simpy

from dlsched.cluster import Cluster
from dlsched.engine.allocation import Allocation
from dlsched.engine.ledger import PACKED, Ledger
from dlsched.engine.view import ClusterView
from dlsched.errors import SchedulingError
from dlsched.jobs import FINISHED, PENDING, RUNNING, JobSpec, JobState
from dlsched.overheads import OverheadModel
from dlsched.perf.base import ThroughputModel
from dlsched.perf.estimator import OracleEstimator
from dlsched.perf.rates import JobRates

_AFTER_EVERYTHING = 2  # SimPy priority below NORMAL (1): runs after same-time events


@contextmanager
def _no_full_collections() -> Iterator[None]:
    """Keep CPython's cyclic GC to its young generations while a run goes on.

    A run creates millions of short-lived objects (a timeout per stint, event records); each
    full collection walks every long-lived object — job states, the event log, the pending
    timeouts of moved jobs — and on a run with a million job moves (Gavel's agnostic LAS on
    its continuous-single trace) those collections took half of the run time. Young
    collections still free the short-lived cycles; garbage that outlived them waits for the
    first full collection after the run."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], 1_000_000_000)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


class Simulator:
    """Replays job specs on a cluster under a policy. Use `dlsched.simulate` for the API."""

    def __init__(
        self,
        specs: list[JobSpec],
        cluster: Cluster,
        policy: object,
        truth: ThroughputModel,
        estimator: OracleEstimator,
        overheads: OverheadModel,
        seed: int = 0,
        audit: bool = False,
        skip: set[int] | None = None,
        on_progress: Callable[[float], None] | None = None,
    ) -> None:
        self.specs = specs
        self.cluster = cluster
        self._display = {key: t.name for key, t in cluster.gpu_types.items()}
        self.policy = policy
        self.truth = truth
        self.estimator = estimator
        self.overheads = overheads
        self.seed = seed
        self.skip = skip or set()
        self.states = [JobState(spec) for spec in specs]
        self.ledger = Ledger(cluster)
        self.vc_quota: dict[str, int] = {
            vc.name: vc.quota_gpus for vc in cluster.vcs if vc.quota_gpus is not None
        }
        self.pending: dict[object, JobState] = {}
        self.running: dict[object, JobState] = {}
        self.active: dict[object, JobState] = {}
        self.now = 0.0
        self.round_due = False
        self.finished = 0
        self.arrivals_done = len(self.skip) == len(specs)
        self.scheduling_calls = 0
        self.scheduler_wall_s = 0.0
        self.events: list[tuple] = []
        self.timeline: list[tuple] = []
        self._type_order = tuple(sorted(cluster.gpu_types))
        self.rates = JobRates(truth)
        self._alloc: Allocation | None = None
        self._requested = False
        self._wakeups: set[float] = set()
        self._last_call_changed = True
        self._on_progress = on_progress
        self.env = simpy.Environment()
        self.estimator.bind(self.rates, specs, cluster, np.random.default_rng(seed))
        # An estimator that learns from observed progress (perf/learned.py) is told of stints.
        self._observe_clock = getattr(estimator, "advance", None)
        self._observe_stint = getattr(estimator, "on_stint", None)
        self._observe_stop = getattr(estimator, "on_stop", None)
        self.view = ClusterView(self)
        self._auditor = None
        if audit:
            from dlsched.engine.audit import Auditor

            self._auditor = Auditor(self)

    # ---- public -----------------------------------------------------------------------
    def run(self) -> None:
        """Run until every job has finished or nothing more can happen."""
        env = self.env
        self._record_timeline()
        env.process(self._arrivals())
        round_s = getattr(self.policy, "round_s", None)
        if round_s:
            if not round_s > 0:
                raise ValueError(f"policy round_s must be > 0 seconds, got {round_s!r}")
            env.process(self._rounds(float(round_s)))
        with _no_full_collections():
            env.run()

    def current_allocation(self) -> Allocation:
        if self._alloc is None:
            raise SchedulingError("view.allocation() is only available inside schedule()")
        return self._alloc

    # ---- processes --------------------------------------------------------------------
    def _arrivals(self):
        env, specs, i, n = self.env, self.specs, 0, len(self.specs)
        on_arrival = getattr(self.policy, "on_arrival", None)
        while i < n:
            t = specs[i].submit_time
            if t > self.now:
                yield env.timeout(t - env.now)
                self.now = max(self.now, t)
            while i < n and specs[i].submit_time == t:
                state = self.states[i]
                if i in self.skip:  # can never run: reported, never queued
                    self.events.append(
                        (
                            self.now,
                            "unschedulable",
                            state.job_id,
                            state.spec.num_gpus,
                            None,
                            math.nan,
                            math.nan,
                        )
                    )
                    i += 1
                    continue
                self.pending[state.job_id] = state
                self.active[state.job_id] = state
                self.events.append(
                    (
                        self.now,
                        "submit",
                        state.job_id,
                        state.spec.num_gpus,
                        None,
                        math.nan,
                        math.nan,
                    )
                )
                if on_arrival is not None:
                    on_arrival(state)
                i += 1
            self._request_schedule()
            if self._on_progress is not None:
                self._on_progress(self.now)
        self.arrivals_done = True

    def _rounds(self, round_s: float):
        env = self.env
        tick = 0
        while True:
            tick += 1
            target = tick * round_s
            yield env.timeout(target - env.now)
            self.now = max(self.now, target)
            if self.arrivals_done and not self.active:
                return
            if self.arrivals_done and not self.running and not self._last_call_changed:
                return  # nothing runs and the policy keeps declining: it never will
            self.round_due = True
            self._request_schedule()

    def wake_at(self, when: float) -> None:
        """Ask for a scheduling call at `when` (a policy's timer: a demotion, a promotion)."""
        if when <= self.now or when in self._wakeups:
            return
        self._wakeups.add(when)
        timeout = self.env.timeout(when - self.env.now)
        timeout.callbacks.append(lambda _e: self._wake(when))

    def _wake(self, when: float) -> None:
        self._wakeups.discard(when)
        self.now = max(self.now, when)
        if self.active:
            self._request_schedule()

    def _request_schedule(self) -> None:
        if self._requested:
            return
        self._requested = True
        event = simpy.Event(self.env)
        event._ok = True  # triggered by hand so that it can carry a custom priority
        event._value = None
        event.callbacks.append(self._schedule)
        self.env.schedule(event, _AFTER_EVERYTHING)

    # ---- scheduling -------------------------------------------------------------------
    def _schedule(self, _event: object) -> None:
        self._requested = False
        if not self.active:
            self.round_due = False
            return
        policy = self.policy
        self.scheduling_calls += 1
        self._alloc = alloc = Allocation(self)
        if self._observe_clock is not None:
            self._observe_clock(self.now)
        wall = time.perf_counter()
        if self.round_due:
            on_round = getattr(policy, "on_round", None)
            if on_round is not None:
                on_round(self.view)
        answer = policy.schedule(self.view)  # type: ignore[attr-defined]
        if answer is not None and answer is not alloc:
            alloc.replace_all(answer)
        self.scheduler_wall_s += time.perf_counter() - wall
        self._alloc = None
        self.round_due = False
        changes = alloc.changes()
        for state, old, new in changes:
            self._apply(state, old, new)
        if changes:  # jobs packed beside a changed one run at a new pair (or solo) rate
            touched = {g for _, old_gpus, new_gpus in changes for g in (*old_gpus, *new_gpus)}
            self._rerate_neighbours(touched, {state.spec.index for state, _, _ in changes})
        self._last_call_changed = bool(changes)
        if changes:
            self._record_timeline()
        if self._auditor is not None:
            self._auditor.after_schedule()

    def _apply(self, state: JobState, old: tuple[int, ...], new: tuple[int, ...]) -> None:
        now = self.now
        job_id = state.job_id
        if old:
            self._stop(state, now)
        if not new:
            state.status = PENDING
            state.preemptions += 1
            state.queued_since = now
            self.running.pop(job_id, None)
            self.pending[job_id] = state
            self.events.append((now, "preempt", job_id, len(old), None, math.nan, math.nan))
            return
        spec = state.spec
        if old and len(old) != len(new):
            overhead = self.overheads.rescale(spec)
            state.rescales += 1
            kind = "rescale"
        elif old:
            overhead = self.overheads.migration(spec)
            state.migrations += 1
            kind = "migrate"
        elif state.start_time is None:
            overhead = self.overheads.first_start(spec)
            state.start_time = now
            kind = "start"
        else:
            overhead = self.overheads.restart(spec)
            state.restarts += 1
            kind = "restart"
        gpu_type, rate = self._rate(spec, new)
        if not rate > 0:
            raise SchedulingError(
                f"the policy placed job {job_id!r} on {len(new)} x "
                f"{self.cluster.display_name(gpu_type)}, where its throughput "
                "is 0 (it cannot run there)"
            )
        state.gpus = new
        state.rate = rate
        state.held_since = now
        state.credited_at = now
        state.progress_from = now + overhead
        state.status = RUNNING
        state.version += 1
        self.pending.pop(job_id, None)
        self.running[job_id] = state
        self._plan_completion(state)
        if self._observe_stint is not None:
            self._tell_stint(state, gpu_type)
        self.events.append((now, kind, job_id, len(new), self._display[gpu_type], rate, overhead))

    def _tell_stint(self, state: JobState, gpu_type: str) -> None:
        cluster = self.cluster
        n_nodes = len({cluster.gpu_node[g] for g in state.gpus})
        self._observe_stint(
            state,
            gpu_type,
            n_nodes,  # type: ignore[misc]
            bool(self._partners(state.spec, state.gpus)),
        )

    def _plan_completion(self, state: JobState) -> None:
        """Schedule the exact completion of the job's current stint at its current rate."""
        start = max(state.progress_from, state.credited_at)
        finish = start + (state.spec.total_steps - state.steps_done) / state.rate
        version = state.version
        # the event carries what the callback needs (no closure: fewer objects for the GC)
        timeout = self.env.timeout(max(0.0, finish - self.env.now), (state, version, finish))
        timeout.callbacks.append(self._completion_due)

    def _stop(self, state: JobState, now: float) -> None:
        """Credit progress and GPU time up to `now` and forget the current stint."""
        if self._observe_stop is not None:
            self._observe_stop(state, now)
        state.steps_done = state.steps_done_at(now)
        state.credited_at = now
        held = now - state.held_since
        gpu_s = state.gpu_share * held
        state.attained_service_s += gpu_s
        state.held_s += held
        gpu_type = self.cluster.gpu_type_of[state.gpus[0]]
        by_type = state.gpu_seconds_by_type
        by_type[gpu_type] = by_type.get(gpu_type, 0.0) + gpu_s
        state.last_run_s = held
        state.gpus = ()
        state.rate = 0.0
        state.version += 1

    def _partners(self, spec: JobSpec, gpus: tuple[int, ...]) -> tuple[tuple[str | None, int], ...]:
        """(model, GPUs) of the whole-GPU jobs packed on the same GPUs, sorted."""
        ledger = self.ledger
        if spec.fractional or not ledger.packed_jobs:
            return ()  # a fraction is a reservation: its neighbours do not slow it
        others = {
            i
            for g in gpus
            if ledger.owner[g] == PACKED
            for i in ledger.packed_jobs[g]
            if i != spec.index
        }
        states = self.states
        return tuple(
            sorted(
                (self.specs[i].model, len(states[i].gpus) or self.specs[i].num_gpus) for i in others
            )
        )

    def _rate(self, spec: JobSpec, gpus: tuple[int, ...]) -> tuple[str, float]:
        cluster = self.cluster
        if len(gpus) == 1 and not self.ledger.packed_jobs:  # the common case, kept cheap
            gpu_type = cluster.gpu_type_of[gpus[0]]
            return gpu_type, self.rates.rate(spec, gpu_type, 1, 1)
        types = {cluster.gpu_type_of[g] for g in gpus}
        n_nodes = len({cluster.gpu_node[g] for g in gpus})
        partners = self._partners(spec, gpus)
        # A gang spread over several types runs at its slowest type.
        rate, gpu_type = min(
            (self.rates.rate(spec, t, len(gpus), n_nodes, partners), t) for t in sorted(types)
        )
        return gpu_type, rate

    def _rerate_neighbours(self, gpus: set[int], skip: set[int]) -> None:
        """Running jobs on `gpus` whose co-located partners changed get their new rate from
        now on (progress credited up to now; an unfinished overhead still runs out)."""
        ledger, now = self.ledger, self.now
        if not ledger.packed_ever:
            return  # only packing makes a job's rate depend on its neighbours
        for index in sorted({i for g in gpus for i in ledger.occupants(g)} - skip):
            state = self.states[index]
            if state.status != RUNNING or state.spec.fractional:
                continue
            gpu_type, rate = self._rate(state.spec, state.gpus)
            if rate == state.rate:
                continue
            if not rate > 0:
                raise SchedulingError(
                    f"job {state.job_id!r} cannot run beside its new "
                    "co-located partner (throughput 0)"
                )
            if self._observe_stop is not None:
                self._observe_stop(state, now)
            state.steps_done = state.steps_done_at(now)
            state.credited_at = now
            state.rate = rate
            state.version += 1
            self._plan_completion(state)
            if self._observe_stint is not None:
                self._tell_stint(state, gpu_type)
            self.events.append(
                (
                    now,
                    "rerate",
                    state.job_id,
                    len(state.gpus),
                    self.cluster.display_name(gpu_type),
                    rate,
                    0.0,
                )
            )

    def _completion_due(self, event: simpy.Timeout) -> None:
        self._complete(*event.value)

    def _complete(self, state: JobState, version: int, finish: float) -> None:
        if state.version != version:
            return  # the job was preempted or moved after this completion was planned
        self.now = now = max(self.now, finish)
        gpus = state.gpus
        self._stop(state, now)
        state.steps_done = state.spec.total_steps
        state.status = FINISHED
        state.finish_time = now
        self.ledger.give_back(state.spec.index, gpus, state.spec.gpu_milli, state.spec.vc)
        self._rerate_neighbours(set(gpus), {state.spec.index})
        del self.running[state.job_id]
        del self.active[state.job_id]
        self.finished += 1
        self.events.append((now, "finish", state.job_id, len(gpus), None, math.nan, math.nan))
        on_finish = getattr(self.policy, "on_finish", None)
        if on_finish is not None:
            on_finish(state)
        self._record_timeline()
        if self._auditor is not None:
            self._auditor.after_finish(state)
        self._request_schedule()

    def _record_timeline(self) -> None:
        busy = self.ledger.busy_by_type()
        row = (self.now, *(busy[t] for t in self._type_order))
        timeline = self.timeline
        if timeline and timeline[-1][0] == row[0]:
            timeline[-1] = row
        elif not timeline or timeline[-1][1:] != row[1:]:
            timeline.append(row)

    @property
    def timeline_columns(self) -> list[str]:
        return ["time", *(self.cluster.display_name(t) for t in self._type_order)]
