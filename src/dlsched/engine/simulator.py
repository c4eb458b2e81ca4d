"""The simulator: the only code that touches SimPy.

One `simpy.Environment` orders events; dlsched keeps exact times itself (`clock.now` is the
time computed for the event, never an accumulation of SimPy delays), so completion times are
exact and time never goes back. Jobs arrive by one event per submit instant; a running job's
completion is an event carrying the job's allocation version, so a preemption or a move just
bumps the version and the stale event is ignored (cheaper than one process per job with
`Interrupt`, which the design sketch suggested; the semantics are the same). Everything that
happens at one instant — arrivals, completions, a round tick — asks for one scheduling call,
which runs after all of them (where an event of a lower SimPy priority at the same time would;
the engine's own loop runs it without one, see `Simulator._loop`).

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
import math
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from heapq import heappop, heappush
from types import MethodType
from typing import TYPE_CHECKING, Any

import numpy as np
import simpy
from simpy.events import NORMAL, URGENT, EventPriority

from dlsched.cluster import Cluster
from dlsched.engine.admission import ACCEPT, DECLINE, DECLINED, admission_hook, checked
from dlsched.engine.allocation import Allocation
from dlsched.engine.ledger import PACKED, WHOLE, Ledger, Pool
from dlsched.engine.progress import Progress, ProgressSink
from dlsched.engine.recorder import (
    ADMIT,
    BEST_EFFORT,
    FINISH,
    MIGRATE,
    PREEMPT,
    RERATE,
    RESCALE,
    RESTART,
    START,
    SUBMIT,
    UNSCHEDULABLE,
    Event,
    Recorder,
)
from dlsched.engine.recorder import DECLINE as DECLINE_EVENT
from dlsched.engine.state import Clock, JobIndex, JobStates
from dlsched.engine.view import ClusterView
from dlsched.errors import ConfigError, SchedulingError
from dlsched.jobs import FINISHED, PENDING, RUNNING, JobSpec, JobState
from dlsched.overheads import OverheadModel
from dlsched.perf.base import ThroughputModel
from dlsched.perf.estimator import OracleEstimator
from dlsched.perf.rates import JobRates, checked_rate

if TYPE_CHECKING:
    from dlsched.engine.availability import Availability

#: Where an instant's scheduling call runs: after that instant's events of SimPy priority
#: URGENT (0) and NORMAL (1), before those of a lower priority (`_LAST`).
_AFTER_EVERYTHING = EventPriority(2)
NAN = math.nan
_LAST = EventPriority(3)  # after the scheduling call of the same instant (the max_time_s stop)

#: Scheduling calls in a row with nothing running and nothing changed after which a run is
#: declared stalled (a policy that keeps waking itself up without ever starting a job).
STALL_CALLS = 1000

#: Streams spawned from the run's SeedSequence, in this order.
STREAMS = ("estimator", "policy", "transforms")


class _Halt(Exception):
    """Raised inside the event loop to end a run early (stall or time limit)."""


_perf_counter = time.perf_counter  # (a global, not a module attribute, per call)

#: No arrival instant due (`Simulator._arrival`): after every entry of the queue.
_NO_ARRIVAL: tuple = (math.inf, 1 << 30, -1)

#: The engine's own events (arrival instants, completions, wake-ups, the time limit) are not
#: SimPy event objects but entries ``(time, priority, id, method, *args)`` on SimPy's queue,
#: beside SimPy's own ``(time, priority, id, event)``: no object per event, the same order
#: (they take their ids from the environment's counter, as a timeout would), and the loop
#: calls ``method(entry)`` (`Simulator._loop`).
_METHOD = MethodType


@contextmanager
def no_full_collections() -> Iterator[None]:
    """Keep CPython's cyclic GC to its young generations while a run goes on.

    A run creates millions of short-lived objects (a timeout per stint, event records); each
    full collection walks every long-lived object — job states, the event log, the pending
    timeouts of moved jobs — and on a run with a million job moves (Gavel's agnostic LAS on
    its continuous-single trace) those collections took half of the run time. Young
    collections still free the short-lived cycles; garbage that outlived them waits for the
    first full collection after the run. `dlsched.simulate` holds it from building the job
    specs to building the result (each makes a long-lived object per job: full collections
    there cost a fifth of a FIFO replay of the Philly table). Young collections come every
    `YOUNG_COLLECTION` allocations at most, not every 700: each walks the young objects,
    and nearly all a run makes live on (specs, states, queue entries), so each is walked
    for nothing (a seventh of `build_specs`; the cyclic garbage left meanwhile is bounded
    by that count)."""
    # The thresholds are the process's: runs overlapping in threads (a threaded Dask worker)
    # share one hold, and the last to end restores what the first found.
    global _gc_holds, _gc_saved
    with _GC_LOCK:
        if _gc_holds == 0:
            _gc_saved = gc.get_threshold()
            young = max(_gc_saved[0], YOUNG_COLLECTION) if _gc_saved[0] else 0
            gc.set_threshold(young, _gc_saved[1], 1_000_000_000)
        _gc_holds += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _gc_holds -= 1
            if _gc_holds == 0:
                gc.set_threshold(*_gc_saved)


#: Allocations between young collections while a run goes on (`no_full_collections`).
YOUNG_COLLECTION = 100_000
_GC_LOCK = threading.Lock()
_gc_holds = 0  # runs inside `no_full_collections` now
_gc_saved: tuple[int, ...] = gc.get_threshold()


_no_full_collections = no_full_collections  # the name it had


def _by_model(
    rate_from: Callable[..., tuple[float, float]] | None,
) -> Callable[..., tuple[float, float]] | None:
    """`ThroughputModel.rate_from` (rated by the job's model) as the engine calls a
    progress-dependent truth: with the job's spec first (`ThroughputModel.job_rate_from`)."""
    if rate_from is None:
        return None

    def by_spec(
        spec: JobSpec, gpu_type: str, n_gpus: int, n_nodes: int, work_done: float
    ) -> tuple[float, float]:
        return rate_from(spec.model, gpu_type, n_gpus, n_nodes, work_done)

    return by_spec


def _hook(policy: object, name: str) -> Callable[[JobState], None] | None:
    """The policy's `name` method, or None when it has none or inherits `BasePolicy`'s,
    which does nothing (not calling it saves a call per job)."""
    method = getattr(policy, name, None)
    if method is None:
        return None
    from dlsched.policies.base import BasePolicy

    if getattr(type(policy), name, None) is getattr(BasePolicy, name):
        return None
    return method


def round_length(policy: object) -> float | None:
    """The policy's `round_s` as seconds, or None (event-driven); anything else but a
    positive, finite number of seconds is a `ConfigError` (0 once turned rounds off
    silently)."""
    round_s = getattr(policy, "round_s", None)
    if round_s is None:
        return None
    if (
        isinstance(round_s, bool)
        or not isinstance(round_s, (int, float, np.integer, np.floating))
        or not 0 < round_s < math.inf
    ):
        name = getattr(policy, "name", type(policy).__name__)
        raise ConfigError(
            f"policy {name!r}: round_s must be a positive, finite number of seconds (the "
            f"length of its scheduling rounds), or None for an event-driven policy; got "
            f"{round_s!r}"
        )
    return float(round_s)


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
        progress: bool | None | ProgressSink = False,
        progress_desc: str | None = None,
        provisioner: object | None = None,
    ) -> None:
        if max_time_s is not None and not max_time_s >= 0:
            raise ValueError(f"max_time_s must be >= 0 seconds, got {max_time_s!r}")
        self.specs = specs
        self.cluster = cluster
        self._display = {key: t.name for key, t in cluster.gpu_types.items()}
        self._gpu_type_of = cluster.gpu_type_of
        self.policy = policy
        self.truth = truth
        self.estimator = estimator
        self.overheads = overheads
        self.seed = seed
        self.max_time_s = max_time_s
        self.skip = skip or set()
        # Made at arrival, let go at finish (`JobStates`) — but the auditor reads every
        # job's state after each call, so with it they are kept
        self.states = JobStates(specs)
        self._retire = None if audit else self.states.retire
        # per job, the code of the GPUs it holds in the event log (set when it is placed)
        # (a memoryview: its item writes skip the argument parsing of `array`'s, half the cost)
        self._gpu_code_of = memoryview(array("i", [0]) * len(specs))
        # the outcome columns `_complete` writes as it retires a job (`JobStates.retire`)
        states = self.states
        self._outcome: tuple[Any, ...] = tuple(
            memoryview(column)
            for column in (states.start, states.finish, states.attained, states.held)
        ) + (memoryview(states.last_run), memoryview(states._type))
        self.ledger = Ledger(cluster)
        # A policy that means to place one job across GPU types says so; else such a gang
        # is refused (it would run at its slowest type, silently).
        self.ledger.mixed_types = self._mixed_types = (
            getattr(policy, "mixed_gpu_types", False) is True
        )
        if (
            getattr(policy, "accounts_resources", True) is False
            and self.ledger.tracks_resources
            and any(spec.cpu_milli or spec.memory_mib for spec in specs)
        ):
            name = getattr(policy, "name", type(policy).__name__)
            raise ConfigError(
                f"policy {name!r} does not account CPU or host memory, but the workload asks "
                f"for them (cpu_milli/memory_mib) on cluster {cluster.name!r}, whose nodes "
                "declare them (cpus/host_memory_gb): use a cluster without those capacities "
                "or drop the workload's cpu_milli and memory_mib columns"
            )
        # jobs that can never run (`skip`) are never placed: they need no policy that places them
        without_gpus = next(
            (spec for spec in specs if not spec.num_gpus and spec.index not in self.skip), None
        )
        if without_gpus is not None:
            self._check_jobs_without_gpus(without_gpus, policy)
        self.jobs = JobIndex(self.states)
        self.clock = Clock()
        # Nodes that come and go (rented instances: `dlsched.engine.availability`), or None
        self.availability: Availability | None = None
        self.provisioner = provisioner
        self._booting = False  # some acquired node is still starting
        self._provision_wakeups: set[float] = set()
        free_for_timeline: Mapping[str, int] = self.ledger.free_by_type
        # a power manager (`dlsched.provision.ces`) powers the fixed nodes down and up
        powers = cluster.rented is None and getattr(provisioner, "manages_power", False) is True
        if cluster.rented is not None or powers:
            from dlsched.engine.availability import Availability, FreeOrAbsent

            if powers:
                energy = cluster.energy or {}
                self.availability = Availability(
                    self.ledger,
                    dict.fromkeys(range(len(cluster.nodes)), float(energy.get("wake_s", 0.0))),
                    False,
                    sleep_s=float(energy.get("sleep_s", 0.0)),
                )
            else:
                assert cluster.rented is not None
                node_type = cluster.rented.node_type or {}
                kinds = cluster.rented.instance_types
                self.availability = Availability(
                    self.ledger, {n: kinds[t].startup_s for n, t in node_type.items()}, True
                )
            free_for_timeline = FreeOrAbsent(self.ledger)
            # the provisioner is called after each scheduling call, made or skipped, so that
            # it sees what the policy could not start (`engine.provisioning`)
            self._schedule = self._schedule_and_provision  # type: ignore[method-assign,assignment]
        self.recorder = Recorder(cluster, free_for_timeline, self.ledger)  # type: ignore[arg-type]
        if without_gpus is not None:
            # a job without GPUs holds a host slot, logged as no GPUs (the empty set's code)
            for node in range(len(cluster.nodes)):
                self.recorder.gpu_set_code[(self.ledger.host_slot(node),)] = 0
        self._snapshot = self.recorder.snapshot
        # A finish of whole GPUs frees some, so its timeline row is certain: it is written
        # at the instant's next snapshot (which would overwrite it) or before anything else
        # changes the free GPUs, not at once. The time of that row, or None. Not where
        # snapshots also drain the CPU/memory log or stream the event log (`run`).
        self._row_due: float | None = None
        self._defer_rows = False
        self.arrivals_done = len(self.skip) == len(specs)
        self.scheduling_calls = 0
        self.scheduling_instants = 0  # instants that asked for a call (made or skipped)
        self.scheduler_wall_s = 0.0
        self.halted: dict[str, object] | None = None
        self.rates = JobRates(truth)
        self._rate_cache: dict[tuple, float] | None = None  # set when the run starts
        # A first start's overhead when it is the same for every job (`_apply`), else None.
        self._first_start_s: float | None = (
            overheads.first_start_s
            if type(overheads) is OverheadModel and not overheads.first_start_as_restart
            else None
        )
        # A truth whose rate depends on the job's progress (`ThroughputModel.rate_from`, e.g.
        # goodput, whose statistical efficiency changes by epoch) is re-rated at each bound of
        # its piecewise-constant rate; models without it take the plain path, untouched.
        # A truth may rate by the job itself (`ThroughputModel.job_rate_from`, e.g. a job's
        # batch-size schedule, `dlsched.perf.dynamic`): it is then asked with the job's spec;
        # a plain `rate_from` with the job's model. Both go through the same segments.
        self._rate_from: Callable[..., tuple[float, float]] | None = getattr(
            truth, "job_rate_from", None
        ) or _by_model(getattr(truth, "rate_from", None))
        self._until: list[float] = [math.inf] * len(specs) if self._rate_from else []
        self._where: list[tuple[str, int, int]] = [("", 0, 0)] * len(self._until)
        self._requested = False
        self._wakeups: set[float] = set()
        self._last_call_changed = True
        self._idle_calls = 0
        self._on_progress = on_progress
        self._show_progress = progress
        self._progress_desc = progress_desc
        self._progress: Progress | None = None
        self.env = simpy.Environment()
        self._queue: list[Any] = self.env._queue  # SimPy's event queue
        # The next arrival instant's entry, held beside the queue rather than on it (there is
        # at most one); `_loop` takes it where the queue would have ordered it.
        self._arrival: tuple = _NO_ARRIVAL
        # the callbacks of the commonest entries, bound once rather than at every entry
        self._arrive_bound = self._arrive
        self._complete_bound = self._complete
        streams = np.random.SeedSequence(seed).spawn(len(STREAMS))
        self.rngs = {
            name: np.random.default_rng(s) for name, s in zip(STREAMS, streams, strict=True)
        }
        self.estimator.bind(self.rates, specs, cluster, self.rngs["estimator"])
        if self.ledger.tracks_resources and hasattr(truth, "resource_factor"):
            from dlsched.perf.resources import ResourceRates  # rates × factor at held CPU/memory

            self.rates = ResourceRates(truth, self.ledger)  # type: ignore[arg-type]
        # An estimator that learns from observed progress (perf/learned.py) is told of stints.
        self._observe_clock = getattr(estimator, "advance", None)
        self._observe_stint = getattr(estimator, "on_stint", None)
        self._observe_stop = getattr(estimator, "on_stop", None)
        # An estimator that learns from finished jobs (perf/predicting.py) is told of each one
        # as it finishes, and reads the engine's clock when it predicts.
        self._observe_finish = getattr(estimator, "on_finish", None)
        if self._observe_finish is not None:
            estimator.watch(self.clock)  # type: ignore[attr-defined]
        self._on_arrival = _hook(policy, "on_arrival")
        # Admission control (`dlsched.engine.admission`): the policy's `admit`, or None (every
        # job accepted, nothing recorded); its decisions by job index, and the declined jobs
        self._admit = admission_hook(policy)
        self.admissions: dict[int, tuple[str, str]] = {}
        self.declined: set[int] = set()
        self._on_finish = _hook(policy, "on_finish")
        self._on_round = getattr(policy, "on_round", None)
        # A policy that declares it changes nothing while no waiting job fits the free GPUs
        # is not called then (see `BasePolicy.call_when_nothing_fits`). Fractions and
        # elastic jobs can start without as many free whole GPUs as they ask for, and an
        # estimator that learns is told the time at each call: with either, every call is made.
        self._skip_blocked = (
            getattr(policy, "call_when_nothing_fits", True) is False
            and self._observe_clock is None
            and not any(
                spec.gpu_milli < 1000 or spec.min_gpus is not None or spec.max_gpus is not None
                for spec in specs
            )
        )
        # Such a policy may also say after a call which pools must give GPUs back before its
        # next call can do anything (`BasePolicy.call_when_nothing_fits`): those pools, or
        # None, and the sum of their epochs then.
        self._waiting_for = getattr(policy, "waiting_for", None) if self._skip_blocked else None
        self._wait_pools: tuple[Pool, ...] | None = None
        self._wait_sum = 0  # the sum of their epochs then
        # Early skips, for a policy whose calls are skipped while nothing waiting fits
        # (`_skip_blocked`): where an instant's call would be skipped (`_schedule`) — after a
        # finish, when no job waits; after an arrival or a finish, while none of the pools
        # the policy waits for (`_wait_pools`) has given GPUs back since its last call —
        # that event counts the call as skipped at once rather than asking for it (an
        # instant costs a turn of the event loop and a call of `_schedule`). Whatever later
        # in the instant could change that answer — an arrival, a finish that gives those
        # GPUs back, a wake-up, a round — asks for the call itself (or skips it early on the
        # same grounds). Whether they apply (set when the run starts); `_skipped_at`: the
        # instant counted so.
        self._early_skips = False
        self._skipped_at = NAN
        # A policy may answer, at an instant where only its own wake-ups are due, whether its
        # call would do anything (`BasePolicy.woken`); an estimator that learns is told the
        # time at each call, so then every call is made. `_wake_mark`: the event log's length
        # when a wake-up asked for the instant's call (-1: something else asked first).
        self._woken: Callable[[ClusterView], bool] | None = (
            getattr(policy, "woken", None) if self._observe_clock is None else None
        )
        self._wake_mark = -1
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

    def _check_jobs_without_gpus(self, spec: JobSpec, policy: object) -> None:
        """A job that asks for no GPU runs only where nodes declare CPUs or memory and under
        a policy that says it places such jobs (``places_jobs_without_gpus = True``: it
        places through `ClusterView.place`, or gives them `ClusterView.host_slot`s)."""
        name = getattr(policy, "name", type(policy).__name__)
        if not self.ledger.tracks_resources:
            raise ConfigError(
                f"job {spec.job_id!r} asks for no GPU (num_gpus 0), only CPU/memory, but no "
                f"node of cluster {self.cluster.name!r} declares CPUs or memory "
                "(cpus/host_memory_gb): give its nodes those capacities or drop such jobs"
            )
        if getattr(policy, "places_jobs_without_gpus", False) is not True:
            raise ConfigError(
                f"job {spec.job_id!r} asks for no GPU (num_gpus 0), and policy {name!r} does "
                "not place jobs without GPUs: drop such jobs (load the trace with "
                "cpu_only=False) or use a policy that places them (places_jobs_without_gpus)"
            )

    # ---- the state the rest of dlsched reads ------------------------------------------
    @property
    def now(self) -> float:
        return self.clock.now

    @property
    def finished(self) -> int:
        return self.jobs.finished

    @property
    def events(self) -> list[Event]:
        """The event log as rows (the result table is built from the recorder's columns)."""
        return self.recorder.rows(self.specs)

    @property
    def timeline(self) -> list[tuple[float, ...]]:
        return self.recorder.timeline

    @property
    def timeline_columns(self) -> list[str]:
        return self.recorder.timeline_columns

    def release_jobs(self) -> None:
        """Let go of the run's job specs and states once what the result needs of them is
        in columns (`build_result(release=True)`): on a million-job run they are some
        500 MB, which would otherwise be held while the result's tables are built."""
        self.states.specs = []  # a caller may still hold the states: not their specs
        self.specs = []
        self.states = self.jobs.states = JobStates([])
        view = self.view  # its per-job lists too (17 MB on a million jobs)
        view._specs, view._n_specs = None, 0  # (the specs list let go above)
        view._routes, view._ranked_at = [], []
        self._retire = None  # (it holds the old states)
        self._gpu_code_of = memoryview(array("i"))
        self._outcome = ()

    # ---- public -----------------------------------------------------------------------
    def run(self) -> None:
        """Run until every job has finished or nothing more can happen."""
        env = self.env
        start = getattr(self.policy, "start", None)
        if start is not None:
            start(self.view)
        # the cache behind `JobRates.rate`, read directly on the common path (`_apply`)
        self._rate_cache = self.rates._cache if type(self.rates) is JobRates else None
        self._record_timeline()
        recorder = self.recorder
        self._defer_rows = recorder._sink is None and recorder._resource_log is None
        # Not with a policy that answers wake-ups (`_wake_mark` reads whether a call was
        # asked for before) nor under the auditor (it checks after every call, skipped or not).
        self._early_skips = (
            self._skip_blocked
            and self._woken is None
            and self._auditor is None
            and self.availability is None  # a provisioner is called at every instant
        )
        provision_start = getattr(self.provisioner, "start", None)
        if provision_start is not None:
            provision_start(self.view)
        # The arrivals begin at once, before anything else at time 0 (as a process would).
        self._at(0.0, URGENT, self._arrive_first, 0)
        round_s = round_length(self.policy)
        if round_s is not None:
            env.process(self._rounds(round_s))
        if self.max_time_s is not None:
            self._at(self.max_time_s, _LAST, self._time_up, 0)
        if self._show_progress is not False:
            bar = Progress(
                len(self.specs) - len(self.skip), self._show_progress, self._progress_desc
            )
            self._progress = bar if bar.active else None
        with no_full_collections():
            try:
                self._loop()
                self._write_due_row()
                self._give_back_instances()
            except _Halt:
                self._write_due_row()
                self._give_back_instances()
            except BaseException:
                # a call that raised may have taken GPUs it never started: a row from the
                # ledger now would show them; the row is left out rather than wrong
                self._row_due = None
                raise
            finally:
                if self._progress is not None:
                    self._progress.close(self.jobs.finished, self.clock.now)
                    self._progress = None

    def _give_back_instances(self) -> None:
        """At the end of a run, release every node still held (`availability`)."""
        if self.availability is not None:
            self.availability.release_all(self.clock.now)

    def _loop(self) -> None:
        """`simpy.Environment.run()`, inlined (the same steps: pop the next event, set the
        clock, call its callbacks, crash on a failed event nobody defused), plus the
        instant's scheduling call: it runs once every event of its instant that comes before
        it is done — exactly where a SimPy event of priority `_AFTER_EVERYTHING` scheduled at
        the request would run, without pushing and popping one per instant."""
        env = self.env
        queue: list[Any] = env._queue
        schedule = self._schedule
        method = _METHOD
        none = _NO_ARRIVAL
        while True:
            # the next entry: the queue's first or the arrival instant, whichever comes first
            # (tuples ordered by time, priority, id: ids differ, so nothing past them is read)
            entry = queue[0] if queue else none
            arrival = self._arrival
            if arrival < entry:
                entry = arrival
            if self._requested and (entry[0] > env._now or entry[1] > _AFTER_EVERYTHING):
                schedule(None)
                continue
            if entry is arrival:
                if entry is none:
                    return
                self._arrival = none
            else:
                heappop(queue)
            env._now = entry[0]
            event = entry[3]
            if event.__class__ is method:  # the engine's own (see `_METHOD`)
                event(entry)
                continue
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                # As SimPy does: a copy of the failure with a new traceback.
                exc = type(event._value)(*event._value.args)
                exc.__cause__ = event._value
                raise exc

    def _at(self, delay: float, priority: EventPriority, callback: Callable, value: object) -> None:
        """Call `callback(entry)` `delay` seconds after SimPy's now (`entry[4]` is `value`).

        `Environment.schedule` inlined for speed: the same id and place on the queue."""
        env = self.env
        queue: list[Any] = env._queue
        heappush(queue, (env._now + delay, priority, next(env._eid), callback, value))

    # ---- ending early -----------------------------------------------------------------
    def _time_up(self, _entry: tuple) -> None:
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
    def _arrive_first(self, entry: tuple) -> None:
        """The arrivals begin (at time 0, before anything else)."""
        self._arrive(entry, False)

    def _arrive(self, entry: tuple, timed: bool = True) -> None:
        """Submit the jobs of each instant that is due, from spec `i = entry[4]` on (`timed`:
        the instant's own timer fired), asking for a scheduling call after each; then plan
        the next instant.

        An instant whose call is already counted as skipped (`_early_skips`) leaves nothing
        for the event loop to do before the next arrival instant when that comes before every
        entry of the queue: that instant is then taken here at once, as `_loop` would take it
        (the same clock, the same entry id used up), without a turn of the loop."""
        specs, live, n = self.specs, self.states.live, len(self.specs)
        i = entry[4]
        clock, jobs, skip = self.clock, self.jobs, self.skip
        recorder = self.recorder
        times, kinds, job_column, gpu_codes = (
            recorder.times,
            recorder.kinds,
            recorder.jobs,
            recorder.gpu_codes,
        )
        on_arrival = self._on_arrival
        admit = self._admit
        pending, active, demand = jobs.pending, jobs.active, jobs.demand
        early = self._early_skips
        epoch_of = self.ledger.pool_epoch.__getitem__
        queue = self._queue
        while i < n:
            t = specs[i].submit_time
            if timed:
                if t > clock.now:  # `max(clock.now, t)`, without the call
                    clock.now = t
                timed = False
            elif t > clock.now:
                env = self.env
                due = env._now + (t - env._now)  # (where a timeout would put it)
                if self._requested or (queue and queue[0][0] <= due):
                    # the entry a push on the queue would make, held aside (`_loop`)
                    self._arrival = (due, NORMAL, next(env._eid), self._arrive_bound, i)
                    return
                # `_loop` would take this instant next: taken here (see the docstring)
                next(env._eid)
                env._now = due
                clock.now = t
            now = clock.now
            while i < n:
                spec = specs[i]
                if spec.submit_time != t:
                    break
                if skip and i in skip:  # can never run: reported, never queued
                    recorder.add(now, UNSCHEDULABLE, i, ())
                    i += 1
                    continue
                state = live[i]
                if state is None:  # `self.states[i]`, inlined
                    state = live[i] = JobState(spec)
                if admit is not None:
                    # logs the submit and the decision; None: declined, never queued
                    admitted = self._admission(state, now)
                    if admitted is None:
                        i += 1
                        continue
                    state = admitted
                job_id = spec.job_id
                pending[job_id] = state  # JobIndex.arrive, inlined for speed
                active[job_id] = state
                n_gpus = spec.num_gpus
                count = demand.get(n_gpus)  # `jobs.waiting(state, waits=True)`, inlined
                if count is None:
                    least = jobs._least
                    if not demand:
                        jobs._least = n_gpus
                    elif least is not None and n_gpus < least:
                        jobs._least = n_gpus
                    demand[n_gpus] = 1
                else:
                    demand[n_gpus] = count + 1
                if admit is None:
                    times.append(now)  # `Recorder.add(now, SUBMIT, i, ())`, inlined
                    kinds.append(SUBMIT)
                    job_column.append(i)
                    gpu_codes.append(0)
                if on_arrival is not None:
                    on_arrival(state)
                i += 1
            self._idle_calls = 0
            if self._requested:
                pass
            elif early:
                # an early skip (`_early_skips`), or `_request_schedule`
                pools = self._wait_pools
                if (
                    pools is not None
                    and not clock.is_round
                    and jobs.running
                    and sum(map(epoch_of, pools)) == self._wait_sum
                ):
                    if self._skipped_at != now:
                        self._skipped_at = now
                        self.scheduling_instants += 1
                    self._last_call_changed = False
                else:
                    self._requested = True
            else:
                self._requested = True  # `_request_schedule`, inlined
            if self._on_progress is not None:
                self._on_progress(now)
        self.arrivals_done = True

    def _admission(self, state: JobState, now: float) -> JobState | None:
        """Ask the policy's `admit` about an arriving job; log its submit and the decision.
        The state to queue (a best-effort job's, without its deadline), or None: declined."""
        assert self._admit is not None
        decision = checked(self._admit(state, self.view), self.policy, state)
        index = state.spec.index
        self.admissions[index] = (decision.decision, decision.reason)
        recorder = self.recorder
        recorder.add(now, SUBMIT, index, ())
        if decision.decision == DECLINE:
            recorder.add(now, DECLINE_EVENT, index, ())
            state.status = DECLINED  # (the auditor checks it never holds GPUs)
            self.declined.add(index)
            self.states.live[index] = None  # never runs: nothing to keep
            return None
        if decision.decision == ACCEPT:
            recorder.add(now, ADMIT, index, ())
            return state
        recorder.add(now, BEST_EFFORT, index, ())
        if state.spec.deadline is None:
            return state
        # the policy sees the job without its deadline; the result keeps the submitted one
        best_effort = self.states.live[index] = JobState(replace(state.spec, deadline=None))
        return best_effort

    def _rounds(self, round_s: float) -> Any:
        env, clock, jobs = self.env, self.clock, self.jobs
        tick = 0
        while True:
            tick += 1
            target = tick * round_s
            yield env.timeout(target - env.now)
            clock.now = max(clock.now, target)
            if self.arrivals_done and not jobs.active:
                return
            if (
                self.arrivals_done
                and not jobs.running
                and not self._last_call_changed
                and not self._booting  # (an instance that is starting will change that)
            ):
                return  # nothing runs and the policy keeps declining: it never will
            clock.is_round = True
            self._request_schedule()

    def wake_at(self, when: float) -> None:
        """Ask for a scheduling call at `when` (a policy's timer: a demotion, a promotion)."""
        try:
            if when <= self.clock.now or when in self._wakeups:
                return
            if not when < math.inf:  # NaN (would reorder the event queue) or infinity
                if when == math.inf:
                    return  # never: nothing to plan
                raise TypeError
        except TypeError:  # not a number
            name = getattr(self.policy, "name", type(self.policy).__name__)
            raise SchedulingError(
                f"policy {name!r} asked for a wake-up at {when!r} (view.wake_at): give a "
                "simulated time in seconds, a finite number"
            ) from None
        self._wakeups.add(when)
        self._at(when - self.env._now, NORMAL, self._wake, when)

    def _wake(self, entry: tuple) -> None:
        when = entry[4]
        self._wakeups.discard(when)
        self.clock.now = max(self.clock.now, when)
        if self.jobs.active:
            if self._woken is not None:
                self._wake_mark = -1 if self._requested else len(self.recorder)
            self._requested = True

    def _request_schedule(self) -> None:
        """Ask for one scheduling call after everything else at this instant (`_loop`)."""
        self._requested = True

    # ---- scheduling -------------------------------------------------------------------
    def _schedule(self, _event: object) -> None:
        self._requested = False
        clock, jobs = self.clock, self.jobs
        if self._skipped_at == clock.now:  # counted when its call was skipped early
            self._skipped_at = NAN
        else:
            self.scheduling_instants += 1
        due = self._row_due
        if due is not None and due != clock.now:
            self._write_due_row()
        mark = self._wake_mark
        if mark >= 0:
            self._wake_mark = -1
        if not jobs.active:
            clock.is_round = False
            self._write_due_row()
            return
        if (
            mark >= 0
            and mark == len(self.recorder)  # only wake-ups since the last call: no event
            and not clock.is_round
            and jobs.running
            and not self._woken(self.view)  # type: ignore[misc]
        ):
            self._skip_call()  # the policy says its call would change nothing now
            return
        if self._skip_blocked and not clock.is_round and jobs.running:
            # Nothing waiting fits, or no GPUs came back where the policy said it waits: the
            # policy declared such a call a no-op.
            pools = self._wait_pools
            # (epochs only grow: an equal sum means none of them changed)
            if (
                pools is not None
                and sum(map(self.ledger.pool_epoch.__getitem__, pools)) == self._wait_sum
            ):
                self._skip_call()
                return
            if not jobs.demand:
                self._skip_call()
                return
            least = jobs._least  # `jobs.min_demand()`, inlined
            if least is None:
                least = jobs.min_demand()
            if sum(self.ledger.free_by_type.values()) < least:
                self._skip_call()
                return
        policy = self.policy
        view = self.view
        self.scheduling_calls += 1
        alloc = view._reused  # `view._open_call()`, inlined
        if alloc is None:
            alloc = view._open_call()
        else:
            alloc._changed = {}
            view._alloc = alloc
        if self._observe_clock is not None:
            self._observe_clock(clock.now)
        wall = _perf_counter()
        if clock.is_round and self._on_round is not None:
            self._on_round(view)
        answer = policy.schedule(view)  # type: ignore[attr-defined]
        if answer is not None and answer is not alloc:
            self._replace_all(alloc, answer)
        self.scheduler_wall_s += _perf_counter() - wall
        view._alloc = None
        clock.is_round = False
        changed = alloc._changed
        changes: list[tuple[JobState, tuple[int, ...], tuple[int, ...]]] | None
        if alloc._before:
            changes = alloc.changes()
        elif len(changed) == 1:  # `alloc.changes()` of one job, inlined
            [(state, new)] = changed.items()
            old = state.gpus
            changes = [(state, old, new)] if new != old else None
        else:
            changes = alloc.changes() if changed else None
        if changes:
            apply = self._apply
            for state, old, new in changes:
                apply(state, old, new)
            if self.ledger.packed_ever:  # a packed job's rate depends on its neighbours
                touched = {g for _, old_gpus, new_gpus in changes for g in (*old_gpus, *new_gpus)}
                self._rerate_neighbours(touched, {state.spec.index for state, _, _ in changes})
            self._last_call_changed = True
            if self.availability is not None:
                self.availability.observe(clock.now)
            if self._row_due is not None:  # this call's row replaces it (`_write_due_row`)
                self._row_due = None
                self.recorder.write_row(clock.now)
            else:
                self._snapshot(clock.now)
        else:
            if self._row_due is not None:
                self._write_due_row()
            self._last_call_changed = False
        if self._waiting_for is not None:
            pools = self._waiting_for(view)
            if pools is None:
                self._wait_pools = None
            else:
                if pools.__class__ is not tuple:
                    pools = tuple(pools)  # the hook may hand back a one-shot iterator
                self._wait_pools = pools
                self._wait_sum = sum(map(self.ledger.pool_epoch.__getitem__, pools))
        if self._auditor is not None:
            self._auditor.after_schedule()
        if changes or jobs.running or self._booting:  # (an instance booting is progress)
            self._idle_calls = 0
        else:
            self._idle_calls += 1
            if self._idle_calls >= STALL_CALLS:
                self._halt(
                    "stall",
                    f"the policy made {STALL_CALLS} scheduling calls in a row with nothing "
                    "running and started nothing",
                )

    def _replace_all(self, alloc: Allocation, answer: object) -> None:
        """Make the policy's own answer (not `view.allocation()`) the allocation, or raise a
        `SchedulingError` naming the policy when it is not job → GPU ids."""
        name = getattr(self.policy, "name", type(self.policy).__name__)
        if not isinstance(answer, Mapping):
            raise SchedulingError(
                f"policy {name!r}: schedule() returned {type(answer).__name__} {answer!r:.80}; "
                "return view.allocation() (or None), or a mapping of job id to a tuple of "
                "GPU ids"
            )
        try:
            alloc.replace_all(answer)
        except SchedulingError as exc:
            raise SchedulingError(f"policy {name!r}, schedule(): {exc}") from None

    def _schedule_and_provision(self, event: object) -> None:
        """`_schedule`, then the provisioner (on a cluster that rents: see `__init__`)."""
        Simulator._schedule(self, event)
        from dlsched.engine.provisioning import provision

        provision(self)

    def _write_due_row(self) -> None:
        """Write the timeline row a finish left due (`_row_due`), if any: the free GPUs have
        not changed since."""
        due = self._row_due
        if due is not None:
            self._row_due = None
            self.recorder.write_row(due)

    def _skip_call(self) -> None:
        """What a scheduling call that changes nothing leaves behind, while jobs run."""
        if self._row_due is not None:
            self._write_due_row()
        self._last_call_changed = False
        self._idle_calls = 0
        if self._auditor is not None:
            self._auditor.after_schedule()

    def _change(
        self, state: JobState, old: tuple[int, ...], new: tuple[int, ...], now: float
    ) -> tuple[int, float] | None:
        """`_apply` of anything but a first start, up to the new stint: the event's kind and
        the change's overhead, or None for a preemption (done here)."""
        spec = state.spec
        resume_at = state.progress_from  # the end of a start/move overhead still running
        if old:
            self._stop(state, now)
        if not new:
            jobs = self.jobs
            state.status = PENDING
            state.preemptions += 1
            state.queued_since = now
            jobs.running.pop(spec.job_id, None)
            jobs.pending[spec.job_id] = state
            self.recorder.add(now, PREEMPT, spec.index, old)
            return None
        if old == new:  # only its CPU/memory changed (`Allocation.assign`): a re-rating,
            # which keeps what is left of an overhead in progress
            return RERATE, max(0.0, resume_at - now)
        if old and len(old) != len(new):
            state.rescales += 1
            return RESCALE, self.overheads.rescale(spec)
        if old:
            state.migrations += 1
            return MIGRATE, self.overheads.migration(spec)
        if state.start_time is None:
            state.start_time = now
            return START, self.overheads.first_start(spec)
        state.restarts += 1
        return RESTART, self.overheads.restart(spec)

    def _apply(self, state: JobState, old: tuple[int, ...], new: tuple[int, ...]) -> None:
        now = self.clock.now
        spec = state.spec
        job_id = spec.job_id
        jobs = self.jobs
        first = self._first_start_s  # `overheads.first_start(spec)` when constant
        if old or first is None or state.start_time is not None or not new:
            change = self._change(state, old, new, now)
            if change is None:
                return
            kind, overhead = change
        else:  # a first start (the common case)
            overhead = first
            state.start_time = now
            kind = START
        rate_cache = self._rate_cache
        if (
            rate_cache is not None
            and len(new) == 1
            and spec.type_durations is None
            and not self.ledger.packed_jobs
            and spec.num_gpus
        ):  # `_rate` of one GPU, inlined: `JobRates.rate`'s cached answer when it has one
            gpu_type = self._gpu_type_of[new[0]]
            rate = rate_cache.get((spec.model, gpu_type, 1, 1, ()))
            if rate is None:
                gpu_type, rate = self._rate(spec, new)
        else:
            gpu_type, rate = self._rate(spec, new)
        if rate > 0 and self._rate_from is not None:
            rate = self._segment_rate(state, gpu_type, new)
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
        if self._rate_from is None:
            # `_plan_completion` and `_push_completion`, inlined: the same arithmetic (`b if
            # b > a else a` is `max(a, b)`, without the call)
            resume = state.progress_from
            finish = (now if now > resume else resume) + (
                spec.total_steps - state.steps_done
            ) / rate
            env = self.env
            env_now = env._now
            delay = finish - env_now
            heappush(
                self._queue,
                (
                    env_now + (delay if delay > 0.0 else 0.0),
                    NORMAL,
                    next(env._eid),
                    self._complete_bound,
                    state,
                    state.version,
                    finish,
                ),
            )
        else:
            self._plan_segment(state)
        if self._observe_stint is not None:
            self._tell_stint(state, gpu_type)
        recorder = self.recorder  # `Recorder.add_placement`, inlined
        recorder.placed_at.append(len(recorder.times))
        recorder.placed_type.append(recorder.type_code[gpu_type])
        recorder.placed_rate.append(rate)
        recorder.placed_overhead.append(overhead)
        recorder.times.append(now)
        recorder.kinds.append(kind)
        recorder.jobs.append(spec.index)
        code = recorder.gpu_set_code.get(new)
        if code is None:
            code = recorder.gpus_code(new)
        recorder.gpu_codes.append(code)
        self._gpu_code_of[spec.index] = code  # (its finish logs the same GPUs: `_complete`)

    def _tell_stint(self, state: JobState, gpu_type: str) -> None:
        gpu_node = self.ledger.gpu_node  # GPU ids and host slots
        n_nodes = len({gpu_node[g] for g in state.gpus})
        self._observe_stint(
            state,
            gpu_type,
            n_nodes,  # type: ignore[misc]
            bool(self._partners(state.spec, state.gpus)),
        )

    def _plan_completion(self, state: JobState) -> None:
        """Schedule the exact completion of the job's current stint at its current rate."""
        if self._rate_from is not None:
            self._plan_segment(state)
            return
        start = max(state.progress_from, state.credited_at)
        finish = start + (state.spec.total_steps - state.steps_done) / state._rate
        self._push_completion(state, finish)

    def _push_completion(self, state: JobState, finish: float) -> None:
        """Put the stint's completion check at `finish` on SimPy's queue, as a timeout would.
        The event carries what the callback needs (no closure: fewer objects for the GC)."""
        env = self.env
        now = env._now
        heappush(
            self._queue,
            (
                now + max(0.0, finish - now),
                NORMAL,
                next(env._eid),
                self._complete_bound,
                state,
                state.version,
                finish,
            ),
        )

    # ---- progress-dependent rates (`ThroughputModel.rate_from`) ---------------------------
    def _segment_rate(self, state: JobState, gpu_type: str, gpus: tuple[int, ...]) -> float:
        """The true rate from the job's credited work on `gpus` (of `gpu_type`, the slowest
        type of a mixed gang), remembering where that rate ends."""
        index = state.spec.index
        gpu_node = self.ledger.gpu_node
        where = (gpu_type, len(gpus), len({gpu_node[g] for g in gpus}))
        self._where[index] = where
        rate_from = self._rate_from
        assert rate_from is not None  # only called when the truth has it
        if self.ledger.packed_jobs and self._partners(state.spec, gpus):
            # `rate_from` has no partners to rate by: it would run a packed job at its solo
            # speed (a silently wrong result), so such a truth and packing do not mix
            raise SchedulingError(
                f"job {state.spec.job_id!r} shares its GPUs with another job, but the truth "
                f"{getattr(self.truth, 'name', self.truth)!r} rates jobs by their progress "
                "(rate_from) and not by who shares their GPUs: use a throughput model that "
                "measures pairs (e.g. 'gavel') with policies that pack"
            )
        rate, until = rate_from(state.spec, *where, state.steps_done)
        rate = checked_rate(rate, self.truth, state.job_id, state.spec.model, *where[:2])
        self._until[index] = until
        return rate

    def _plan_segment(self, state: JobState) -> None:
        """Schedule the end of the job's current rate segment: its completion when the
        segment reaches its total work, else a re-rating at the segment's bound."""
        spec = state.spec
        start = max(state.progress_from, state.credited_at)
        until = self._until[spec.index]
        if until < spec.total_steps:
            when = start + (until - state.steps_done) / state._rate
            env = self.env
            heappush(
                self._queue,
                (
                    env._now + max(0.0, when - env._now),
                    NORMAL,
                    next(env._eid),
                    self._segment_due,
                    state,
                    state.version,
                    when,
                ),
            )
        else:
            self._push_completion(
                state, start + (spec.total_steps - state.steps_done) / state._rate
            )

    def _segment_due(self, entry: tuple) -> None:
        """A running job reached the bound of its rate segment: credit its work to the
        bound exactly and go on at the next segment's rate (no scheduling call)."""
        _, _, _, _, state, version, when = entry
        if state.version != version:
            return  # moved or stopped since
        clock = self.clock
        clock.now = now = max(clock.now, when)
        index = state.spec.index
        if self._observe_stop is not None:
            self._observe_stop(state, now)
        state.steps_done = self._until[index]
        state.credited_at = now
        rate_from = self._rate_from
        assert rate_from is not None  # only planned when the truth has it
        rate, until = rate_from(state.spec, *self._where[index], state.steps_done)
        rate = checked_rate(
            rate, self.truth, state.job_id, state.spec.model, *self._where[index][:2]
        )
        if not rate > 0:
            raise SchedulingError(
                f"job {state.job_id!r} reached work {state.steps_done:g}, from which its "
                "throughput model gives it rate 0 on its GPUs (it cannot go on)"
            )
        self._until[index] = until
        state._rate = rate
        # The allocation is unchanged, so the version is too: policies key their view of a
        # running job on it (SRTF's heap lost re-rated jobs when it was bumped here), and the
        # one event planned next carries it.
        self._plan_segment(state)
        if self._observe_stint is not None:
            self._tell_stint(state, self._where[index][0])

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
        if self._mixed_types:
            self._credit_by_type(state, state.gpus, gpu_s)
        else:  # GPU ids and host slots; before `attained_service_s`, which it reads
            state.credit_gpu_seconds(self.ledger.gpu_type[state.gpus[0]], gpu_s)
        state.attained_service_s += gpu_s
        state.held_s += held
        return held

    def _credit_by_type(self, state: JobState, gpus: tuple[int, ...], gpu_s: float) -> None:
        """`credit_gpu_seconds` for a policy that may place a job across GPU types
        (`mixed_gpu_types`): each type of `gpus` gets its share of `gpu_s`."""
        gpu_type = self.ledger.gpu_type
        first = gpu_type[gpus[0]]
        if all(gpu_type[g] == first for g in gpus):
            state.credit_gpu_seconds(first, gpu_s)
            return
        held = state._gpu_seconds_by_type
        if not isinstance(held, dict):  # before this stint: none, or all on one type
            held = {} if held is None else {held: state.attained_service_s}
            state._gpu_seconds_by_type = held
        per_gpu = gpu_s / len(gpus)
        for t, n in sorted(Counter(gpu_type[g] for g in gpus).items()):
            held[t] = held.get(t, 0.0) + per_gpu * n

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
        if not spec.num_gpus:  # on a host slot: its rate on no GPU, by its node's type
            gpu_type = self.ledger.gpu_type[gpus[0]]
            return gpu_type, self.rates.rate(spec, gpu_type, 0, 1)
        cluster = self.cluster
        gpu_type_of = cluster.gpu_type_of
        if not self.ledger.packed_jobs:  # the common case, kept cheap
            gpu_type = gpu_type_of[gpus[0]]
            if len(gpus) == 1:
                return gpu_type, self.rates.rate(spec, gpu_type, 1, 1)
            for g in gpus:
                if gpu_type_of[g] != gpu_type:
                    break
            else:  # one type, no partners: what the general case below gives
                gpu_node = cluster.gpu_node
                n_nodes = len({gpu_node[g] for g in gpus})
                return gpu_type, self.rates.rate(spec, gpu_type, len(gpus), n_nodes, ())
        types = {gpu_type_of[g] for g in gpus}
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
            if rate > 0 and self._rate_from is not None:
                state.steps_done = state.steps_done_at(now)
                state.credited_at = now
                rate = self._segment_rate(state, gpu_type, state.gpus)
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
            self.recorder.add_placement(now, RERATE, index, state.gpus, gpu_type, rate, 0.0)

    def _complete(self, entry: tuple) -> None:
        """A running job's planned completion is due (`entry` from `_push_completion`)."""
        _, _, _, _, state, version, finish = entry
        if state.version != version:
            return  # the job was preempted or moved after this completion was planned
        clock, jobs = self.clock, self.jobs
        now = clock.now
        if finish > now:  # `max(clock.now, finish)`, without the call
            clock.now = now = finish
        gpus = state.gpus
        spec = state.spec
        ledger = self.ledger
        whole = spec.gpu_milli == WHOLE and not ledger.packed_jobs and not ledger.reserved
        certain = whole and self._defer_rows and spec.num_gpus  # its row is (`_row_due`)
        due = self._row_due
        if due is not None and (due != now or not certain):
            self._write_due_row()  # before the free GPUs change
        # `_stop` and `_credit`, inlined (the same arithmetic); the steps done need no
        # crediting: the job has done all of them.
        if self._observe_stop is not None:
            self._observe_stop(state, now)
        state.credited_at = now
        held = now - state.held_since
        gpu_s = len(gpus) * spec.gpu_milli / 1000 * held
        # 0.0 + x is x: a job's first stint shares its float objects rather than adding
        # zeros (three fewer objects per job held to the end of a run)
        attained, held_before = state.attained_service_s, state.held_s
        gpu_type = ledger.gpu_type[gpus[0]]  # GPU ids and host slots
        # `state.credit_gpu_seconds(gpu_type, gpu_s)`, inlined for a job's only type
        by_type = state._gpu_seconds_by_type
        one_type = by_type is None or by_type == gpu_type
        if self._mixed_types:
            self._credit_by_type(state, gpus, gpu_s)
            one_type = state._gpu_seconds_by_type.__class__ is str  # (not when split)
        elif one_type:
            state._gpu_seconds_by_type = gpu_type
        else:
            state.credit_gpu_seconds(gpu_type, gpu_s)
        state.attained_service_s = attained = attained + gpu_s if attained else gpu_s
        state.held_s = held_before = held_before + held if held_before else held
        state.last_run_s = held
        state.gpus = ()
        state._rate = 0.0
        state.version += 1
        state.steps_done = spec.total_steps
        state.status = FINISHED
        state.finish_time = now
        if whole:
            ledger._give_back_whole(spec.index, gpus, spec.vc)  # what `give_back` does then
        else:
            ledger.give_back(spec.index, gpus, spec.gpu_milli, spec.vc)
        if ledger.packed_ever:
            self._rerate_neighbours(set(gpus), {spec.index})
        job_id = spec.job_id
        del jobs.running[job_id]
        del jobs.active[job_id]
        jobs.finished += 1
        if self.availability is not None:
            self.availability.observe(now)
            if self.arrivals_done and not jobs.active:  # the last job: give back the rest
                self.availability.release_all(now)
        index = spec.index
        recorder = self.recorder  # `Recorder.add(now, FINISH, index, gpus)`, inlined
        recorder.times.append(now)
        recorder.kinds.append(FINISH)
        recorder.jobs.append(index)
        # (the code of its GPUs, logged when it was placed on them: `_apply`)
        recorder.gpu_codes.append(self._gpu_code_of[index])
        if self._on_finish is not None:
            self._on_finish(state)
        if self._observe_finish is not None:
            self._observe_finish(state)
        if certain:
            self._row_due = now
        else:
            self._snapshot(now)
        if self._auditor is not None:
            self._auditor.after_finish(state)
        if self._retire is not None:
            if one_type and not (
                state.preemptions or state.migrations or state.restarts or state.rescales
            ):
                # `JobStates.retire(state)`, inlined for a job of one GPU type whose
                # counters are all 0 (the columns' defaults): the same columns written,
                # through memoryviews (`_outcome`)
                states = self.states
                starts, finishes, attained_s, held_s, last_run_s, types = self._outcome
                starts[index] = state.start_time
                finishes[index] = now
                attained_s[index] = attained
                held_s[index] = held_before
                last_run_s[index] = held
                code = states._type_code.get(gpu_type)
                types[index] = states._code(gpu_type) if code is None else code
                states._retired[index] = 1
                states.live[index] = None
            else:
                self._retire(state)
        if self._requested:
            pass
        elif self._early_skips:
            # an early skip (`_early_skips`), or `_request_schedule`: nothing waits, or the
            # pools the policy waits for gave nothing back (what `_schedule` checks first)
            pools = self._wait_pools
            if (
                jobs.running
                and not clock.is_round
                and (
                    not jobs.demand
                    or (
                        pools is not None
                        and sum(map(ledger.pool_epoch.__getitem__, pools)) == self._wait_sum
                    )
                )
            ):
                if self._skipped_at != now:
                    self._skipped_at = now
                    self.scheduling_instants += 1
                self._idle_calls = 0
                self._last_call_changed = False
            else:
                self._requested = True
        else:
            self._requested = True  # `_request_schedule`, inlined
        progress = self._progress
        if progress is not None and jobs.finished >= progress.next_check:
            progress.update(jobs.finished, now)

    def _record_timeline(self) -> None:
        self._snapshot(self.clock.now)
