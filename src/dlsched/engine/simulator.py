"""The simulator: the only code that touches SimPy.

One `simpy.Environment` orders events; dlsched keeps exact times itself (`clock.now` is the
time computed for the event, never an accumulation of SimPy delays), so completion times are
exact and time never goes back. Jobs arrive through one arrival process; a running job's
completion is a timeout carrying the job's allocation version, so a preemption or a move just
bumps the version and the stale timeout is ignored (cheaper than one process per job with
`Interrupt`, which the design sketch suggested; the semantics are the same). Everything that
happens at one instant — arrivals, completions, a round tick — asks for one scheduling call,
which runs after all of them (a lower SimPy priority at the same time).

The run owns its randomness: one `numpy.random.SeedSequence(seed)`, from which independent
streams are spawned for the estimator (its noise), the policy (`view.rng`) and transforms
applied during the run, so changing `seed` changes every random choice and nothing else.

A policy is told that a run begins (`policy.start(view)`, where it builds its per-run state),
so one instance serves any number of runs. A run ends when every job has finished, when
nothing more can happen, at `max_time_s`, or when the policy stalls: `STALL_CALLS` scheduling
calls in a row with nothing running and nothing changed. Jobs left then are `unfinished`.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import simpy
from simpy.events import EventPriority

from dlsched.cluster import Cluster
from dlsched.engine.ledger import PACKED, Ledger
from dlsched.engine.recorder import Event, Recorder
from dlsched.engine.state import Clock, JobIndex
from dlsched.engine.view import ClusterView
from dlsched.errors import SchedulingError
from dlsched.jobs import FINISHED, PENDING, RUNNING, JobSpec, JobState
from dlsched.overheads import OverheadModel
from dlsched.perf.base import ThroughputModel
from dlsched.perf.estimator import OracleEstimator
from dlsched.perf.rates import JobRates

_AFTER_EVERYTHING = EventPriority(2)  # SimPy priority below NORMAL (1): runs after same-time events
_LAST = EventPriority(3)  # after the scheduling call of the same instant (the max_time_s stop)

#: Scheduling calls in a row with nothing running and nothing changed after which a run is
#: declared stalled (a policy that keeps waking itself up without ever starting a job).
STALL_CALLS = 1000

#: Streams spawned from the run's SeedSequence, in this order.
STREAMS = ("estimator", "policy", "transforms")


class _Halt(Exception):
    """Raised inside the event loop to end a run early (stall or time limit)."""


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
        max_time_s: float | None = None,
    ) -> None:
        if max_time_s is not None and not max_time_s >= 0:
            raise ValueError(f"max_time_s must be >= 0 seconds, got {max_time_s!r}")
        self.specs = specs
        self.cluster = cluster
        self._display = {key: t.name for key, t in cluster.gpu_types.items()}
        self.policy = policy
        self.truth = truth
        self.estimator = estimator
        self.overheads = overheads
        self.seed = seed
        self.max_time_s = max_time_s
        self.skip = skip or set()
        self.states = [JobState(spec) for spec in specs]
        self.ledger = Ledger(cluster)
        self.jobs = JobIndex(self.states)
        self.clock = Clock()
        self.recorder = Recorder(cluster)
        self.arrivals_done = len(self.skip) == len(specs)
        self.scheduling_calls = 0
        self.scheduler_wall_s = 0.0
        self.halted: dict[str, object] | None = None
        self.rates = JobRates(truth)
        self._requested = False
        self._wakeups: set[float] = set()
        self._last_call_changed = True
        self._idle_calls = 0
        self._on_progress = on_progress
        self.env = simpy.Environment()
        streams = np.random.SeedSequence(seed).spawn(len(STREAMS))
        self.rngs = {
            name: np.random.default_rng(s) for name, s in zip(STREAMS, streams, strict=True)
        }
        self.estimator.bind(self.rates, specs, cluster, self.rngs["estimator"])
        # An estimator that learns from observed progress (perf/learned.py) is told of stints.
        self._observe_clock = getattr(estimator, "advance", None)
        self._observe_stint = getattr(estimator, "on_stint", None)
        self._observe_stop = getattr(estimator, "on_stop", None)
        self.view = ClusterView(
            cluster,
            self.ledger,
            self.jobs,
            self.clock,
            estimator,
            overheads,
            self.rngs["policy"],
            self.wake_at,
        )
        self._auditor = None
        if audit:
            from dlsched.engine.audit import Auditor

            self._auditor = Auditor(self)

    # ---- the state the rest of dlsched reads ------------------------------------------
    @property
    def now(self) -> float:
        return self.clock.now

    @property
    def finished(self) -> int:
        return self.jobs.finished

    @property
    def events(self) -> list[Event]:
        return self.recorder.events

    @property
    def timeline(self) -> list[tuple[float, ...]]:
        return self.recorder.timeline

    @property
    def timeline_columns(self) -> list[str]:
        return self.recorder.timeline_columns

    # ---- public -----------------------------------------------------------------------
    def run(self) -> None:
        """Run until every job has finished or nothing more can happen."""
        env = self.env
        start = getattr(self.policy, "start", None)
        if start is not None:
            start(self.view)
        self._record_timeline()
        env.process(self._arrivals())
        round_s = getattr(self.policy, "round_s", None)
        if round_s:
            if not round_s > 0:
                raise ValueError(f"policy round_s must be > 0 seconds, got {round_s!r}")
            env.process(self._rounds(float(round_s)))
        if self.max_time_s is not None:
            stop = simpy.Event(env)
            stop._ok = True  # triggered by hand so that it can carry its own priority
            stop._value = None
            stop.callbacks.append(self._time_up)
            env.schedule(stop, _LAST, self.max_time_s)
        with _no_full_collections():
            try:
                env.run()
            except _Halt:
                pass

    # ---- ending early -----------------------------------------------------------------
    def _time_up(self, _event: object) -> None:
        if self.jobs.active or not self.arrivals_done:
            self.clock.now = max(self.clock.now, float(self.max_time_s or 0.0))
            self._halt("max_time_s", f"simulated time reached max_time_s={self.max_time_s}")

    def _halt(self, reason: str, message: str) -> None:
        """Credit what running jobs did up to now and end the run: nothing computed is lost;
        jobs not finished are reported `unfinished`."""
        now = self.clock.now
        for state in list(self.jobs.running.values()):
            self._credit(state, now)
            state.held_since = now
        self.halted = {"reason": reason, "time": now, "message": message}
        raise _Halt(message)

    # ---- processes --------------------------------------------------------------------
    def _arrivals(self):
        env, specs, i, n = self.env, self.specs, 0, len(self.specs)
        clock, jobs, record = self.clock, self.jobs, self.recorder.event
        on_arrival = getattr(self.policy, "on_arrival", None)
        while i < n:
            t = specs[i].submit_time
            if t > clock.now:
                yield env.timeout(t - env.now)
                clock.now = max(clock.now, t)
            while i < n and specs[i].submit_time == t:
                state = self.states[i]
                if i in self.skip:  # can never run: reported, never queued
                    record(Event(clock.now, "unschedulable", state.job_id, state.spec.num_gpus))
                    i += 1
                    continue
                jobs.arrive(state)
                record(Event(clock.now, "submit", state.job_id, state.spec.num_gpus))
                if on_arrival is not None:
                    on_arrival(state)
                i += 1
            self._idle_calls = 0
            self._request_schedule()
            if self._on_progress is not None:
                self._on_progress(clock.now)
        self.arrivals_done = True

    def _rounds(self, round_s: float):
        env, clock, jobs = self.env, self.clock, self.jobs
        tick = 0
        while True:
            tick += 1
            target = tick * round_s
            yield env.timeout(target - env.now)
            clock.now = max(clock.now, target)
            if self.arrivals_done and not jobs.active:
                return
            if self.arrivals_done and not jobs.running and not self._last_call_changed:
                return  # nothing runs and the policy keeps declining: it never will
            clock.is_round = True
            self._request_schedule()

    def wake_at(self, when: float) -> None:
        """Ask for a scheduling call at `when` (a policy's timer: a demotion, a promotion)."""
        if when <= self.clock.now or when in self._wakeups:
            return
        self._wakeups.add(when)
        timeout = self.env.timeout(when - self.env.now)
        timeout.callbacks.append(lambda _e: self._wake(when))

    def _wake(self, when: float) -> None:
        self._wakeups.discard(when)
        self.clock.now = max(self.clock.now, when)
        if self.jobs.active:
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
        clock, jobs = self.clock, self.jobs
        if not jobs.active:
            clock.is_round = False
            return
        policy = self.policy
        self.scheduling_calls += 1
        alloc = self.view._open_call()
        if self._observe_clock is not None:
            self._observe_clock(clock.now)
        wall = time.perf_counter()
        if clock.is_round:
            on_round = getattr(policy, "on_round", None)
            if on_round is not None:
                on_round(self.view)
        answer = policy.schedule(self.view)  # type: ignore[attr-defined]
        if answer is not None and answer is not alloc:
            alloc.replace_all(answer)
        self.scheduler_wall_s += time.perf_counter() - wall
        self.view._close_call()
        clock.is_round = False
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
        if changes or jobs.running:
            self._idle_calls = 0
        else:
            self._idle_calls += 1
            if self._idle_calls >= STALL_CALLS:
                self._halt(
                    "stall",
                    f"the policy made {STALL_CALLS} scheduling calls in a row with nothing "
                    "running and started nothing",
                )

    def _apply(self, state: JobState, old: tuple[int, ...], new: tuple[int, ...]) -> None:
        now = self.clock.now
        job_id = state.job_id
        jobs = self.jobs
        if old:
            self._stop(state, now)
        if not new:
            state.status = PENDING
            state.preemptions += 1
            state.queued_since = now
            jobs.running.pop(job_id, None)
            jobs.pending[job_id] = state
            self.recorder.event(Event(now, "preempt", job_id, len(old), gpus=old))
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
        state._rate = rate
        state.held_since = now
        state.credited_at = now
        state.progress_from = now + overhead
        state.status = RUNNING
        state.version += 1
        jobs.pending.pop(job_id, None)
        jobs.running[job_id] = state
        self._plan_completion(state)
        if self._observe_stint is not None:
            self._tell_stint(state, gpu_type)
        self.recorder.event(
            Event(now, kind, job_id, len(new), self._display[gpu_type], rate, overhead, new)
        )

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
        finish = start + (state.spec.total_steps - state.steps_done) / state._rate
        version = state.version
        # the event carries what the callback needs (no closure: fewer objects for the GC)
        timeout = self.env.timeout(max(0.0, finish - self.env.now), (state, version, finish))
        timeout.callbacks.append(self._completion_due)

    def _stop(self, state: JobState, now: float) -> None:
        """Credit progress and GPU time up to `now` and forget the current stint."""
        if self._observe_stop is not None:
            self._observe_stop(state, now)
        state.last_run_s = self._credit(state, now)
        state.gpus = ()
        state._rate = 0.0
        state.version += 1

    def _credit(self, state: JobState, now: float) -> float:
        """Credit a running job's progress and GPU time up to `now`; the seconds held."""
        state.steps_done = state.steps_done_at(now)
        state.credited_at = now
        held = now - state.held_since
        gpu_s = state.gpu_share * held
        state.attained_service_s += gpu_s
        state.held_s += held
        gpu_type = self.cluster.gpu_type_of[state.gpus[0]]
        by_type = state.gpu_seconds_by_type
        by_type[gpu_type] = by_type.get(gpu_type, 0.0) + gpu_s
        return held

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
        ledger, now = self.ledger, self.clock.now
        if not ledger.packed_ever:
            return  # only packing makes a job's rate depend on its neighbours
        for index in sorted({i for g in gpus for i in ledger.occupants(g)} - skip):
            state = self.states[index]
            if state.status != RUNNING or state.spec.fractional:
                continue
            gpu_type, rate = self._rate(state.spec, state.gpus)
            if rate == state._rate:
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
            state._rate = rate
            state.version += 1
            self._plan_completion(state)
            if self._observe_stint is not None:
                self._tell_stint(state, gpu_type)
            self.recorder.event(
                Event(
                    now,
                    "rerate",
                    state.job_id,
                    len(state.gpus),
                    self._display[gpu_type],
                    rate,
                    0.0,
                    state.gpus,
                )
            )

    def _completion_due(self, event: simpy.Timeout) -> None:
        state, version, finish = event.value  # type: ignore[misc]
        self._complete(state, version, finish)

    def _complete(self, state: JobState, version: int, finish: float) -> None:
        if state.version != version:
            return  # the job was preempted or moved after this completion was planned
        clock, jobs = self.clock, self.jobs
        clock.now = now = max(clock.now, finish)
        gpus = state.gpus
        self._stop(state, now)
        state.steps_done = state.spec.total_steps
        state.status = FINISHED
        state.finish_time = now
        self.ledger.give_back(state.spec.index, gpus, state.spec.gpu_milli, state.spec.vc)
        self._rerate_neighbours(set(gpus), {state.spec.index})
        del jobs.running[state.job_id]
        del jobs.active[state.job_id]
        jobs.finished += 1
        self.recorder.event(Event(now, "finish", state.job_id, len(gpus), gpus=gpus))
        on_finish = getattr(self.policy, "on_finish", None)
        if on_finish is not None:
            on_finish(state)
        self._record_timeline()
        if self._auditor is not None:
            self._auditor.after_finish(state)
        self._request_schedule()

    def _record_timeline(self) -> None:
        self.recorder.busy(self.clock.now, self.ledger.busy_by_type())
