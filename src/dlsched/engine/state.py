"""The run's mutable bookkeeping that the view reads: the clock and the job index.

Both are plain objects owned by the simulator; the view and the allocation hold references
to them (never to the simulator), so a policy sees state, not the machinery that changes it.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from dlsched.jobs import FINISHED, JobSpec, JobState


class Clock:
    """Simulated time in seconds, and whether the current scheduling call is a round tick."""

    __slots__ = ("now", "is_round")

    def __init__(self) -> None:
        self.now = 0.0
        self.is_round = False


class JobStates(Sequence[JobState]):
    """Every job's state by index, in submit order, without a Python object per job held
    for the whole run: a job's `JobState` is made when it is first asked for (its arrival,
    or anything that reads it earlier), and once the job has finished (`retire`) what the
    result needs of it is kept in columns (machine numbers) and the object is let go. Read
    back, a finished job is a new `JobState` with those fields (`start_time`,
    `finish_time`, `attained_service_s`, `held_s`, `gpu_seconds_by_type`, the counts of
    preemptions, migrations, restarts and rescales, and `last_run_s`); `credited_at`,
    `progress_from` and `held_since` say its finish time, `queued_since` its submit time
    and `version` 0 (nothing in dlsched reads those of a finished job).

    On a million-job replay this keeps some 350 bytes a job (a state and the numbers it
    points to) out of the run's peak memory; a policy that holds a finished job's state
    keeps that object alive, which changes nothing."""

    __slots__ = (
        "specs",
        "live",
        "_retired",
        "start",
        "finish",
        "attained",
        "held",
        "last_run",
        "preemptions",
        "migrations",
        "restarts",
        "rescales",
        "_type",
        "_type_code",
        "_type_names",
        "_several",
    )

    def __init__(self, specs: Sequence[JobSpec]) -> None:
        n = len(specs)
        self.specs = specs
        #: the states made and not retired (None: not made yet, or retired)
        self.live: list[JobState | None] = [None] * n
        self._retired = bytearray(n)
        nan = array("d", [math.nan])
        self.start = nan * n
        self.finish = nan * n
        zero = array("d", [0.0])
        self.attained = zero * n
        self.held = zero * n
        self.last_run = zero * n
        none = array("i", [0])
        self.preemptions = none * n
        self.migrations = none * n
        self.restarts = none * n
        self.rescales = none * n
        # the GPU type key a job held (its code), -1 for none, -2 for several (`_several`)
        self._type = array("h", [-1]) * n  # 16-bit: a cluster may have over 127 types
        self._type_code: dict[str, int] = {}
        self._type_names: list[str] = []
        self._several: dict[int, dict[str, float]] = {}

    def __len__(self) -> int:
        return len(self.live)

    @overload
    def __getitem__(self, index: int) -> JobState: ...

    @overload
    def __getitem__(self, index: slice) -> list[JobState]: ...

    def __getitem__(self, index: int | slice) -> JobState | list[JobState]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.live)))]
        state = self.live[index]
        if state is not None:
            return state
        if index < 0:
            index += len(self.live)
        if self._retired[index]:
            return self._revive(index)
        state = self.live[index] = JobState(self.specs[index])
        return state

    def __iter__(self) -> Iterator[JobState]:
        for i in range(len(self.live)):
            yield self[i]

    def retire(self, state: JobState) -> None:
        """Keep a finished job's outcome in the columns and let go of its state."""
        i = state.spec.index
        self.start[i] = state.start_time  # type: ignore[assignment]  # it has started
        self.finish[i] = state.finish_time  # type: ignore[assignment]
        self.attained[i] = state.attained_service_s
        self.held[i] = state.held_s
        self.last_run[i] = state.last_run_s
        if state.preemptions:
            self.preemptions[i] = state.preemptions
        if state.migrations:
            self.migrations[i] = state.migrations
        if state.restarts:
            self.restarts[i] = state.restarts
        if state.rescales:
            self.rescales[i] = state.rescales
        held = state._gpu_seconds_by_type
        if held.__class__ is str:
            code = self._type_code.get(held)
            if code is None:
                code = self._code(held)
            self._type[i] = code
        elif held is not None:
            self._type[i] = -2
            self._several[i] = held  # type: ignore[assignment]
        self._retired[i] = 1
        self.live[i] = None

    def _code(self, gpu_type: str) -> int:
        code = self._type_code[gpu_type] = len(self._type_names)
        self._type_names.append(gpu_type)
        return code

    def _revive(self, i: int) -> JobState:
        """A finished job's state, from the columns."""
        state = JobState(self.specs[i])
        finish = self.finish[i]
        state.status = FINISHED
        state.steps_done = state.spec.total_steps
        state.credited_at = state.progress_from = state.held_since = finish
        state.start_time = self.start[i]
        state.finish_time = finish
        state.attained_service_s = self.attained[i]
        state.held_s = self.held[i]
        state.last_run_s = self.last_run[i]
        state.preemptions = self.preemptions[i]
        state.migrations = self.migrations[i]
        state.restarts = self.restarts[i]
        state.rescales = self.rescales[i]
        code = self._type[i]
        if code >= 0:
            state._gpu_seconds_by_type = self._type_names[code]
        elif code == -2:
            state._gpu_seconds_by_type = dict(self._several[i])
        return state

    def columns(self, gpu_types: Sequence[str]) -> dict[str, np.ndarray]:
        """Every job's outcome as columns: ``start_time``, ``finish_time`` (NaN where
        none), ``gpu_seconds``, ``held_s``, ``preemptions``, ``migrations``, ``restarts``,
        ``rescales``, ``finished`` (bool) and ``gpu_seconds_<type key>`` for each of
        `gpu_types` (0.0 where none). Jobs not retired are read from their states."""
        columns: dict[str, np.ndarray] = {
            "start_time": np.array(self.start, dtype=np.float64),
            "finish_time": np.array(self.finish, dtype=np.float64),
            "gpu_seconds": np.array(self.attained, dtype=np.float64),
            "held_s": np.array(self.held, dtype=np.float64),
            "preemptions": np.array(self.preemptions, dtype=np.int64),
            "migrations": np.array(self.migrations, dtype=np.int64),
            "restarts": np.array(self.restarts, dtype=np.int64),
            "rescales": np.array(self.rescales, dtype=np.int64),
            "finished": np.frombuffer(self._retired, dtype=np.uint8).astype(bool),
        }
        codes = np.frombuffer(self._type, dtype=np.int16)
        by_type = {}
        for t in gpu_types:
            code = self._type_code.get(t)
            by_type[t] = (
                np.zeros(len(codes))
                if code is None
                else np.where(codes == code, columns["gpu_seconds"], 0.0)
            )
        for i, held in self._several.items():
            for t in gpu_types:
                by_type[t][i] = held.get(t, 0.0)
        nan = math.nan
        for i, state in enumerate(self.live):  # not finished (a run that ended early)
            if state is None:
                continue
            columns["start_time"][i] = nan if state.start_time is None else state.start_time
            columns["finish_time"][i] = nan if state.finish_time is None else state.finish_time
            columns["gpu_seconds"][i] = state.attained_service_s
            columns["held_s"][i] = state.held_s
            for name in ("preemptions", "migrations", "restarts", "rescales"):
                columns[name][i] = getattr(state, name)
            columns["finished"][i] = state.status == FINISHED
            seconds = state.gpu_seconds_by_type
            for t in gpu_types:
                by_type[t][i] = seconds.get(t, 0.0)
        for t in gpu_types:
            columns[f"gpu_seconds_{t}"] = by_type[t]
        return columns


class JobIndex:
    """The jobs of one run: every state in submit order, and those pending, running, active.

    `demand` counts active jobs without GPUs by GPU request. The allocation keeps it current
    *within* a scheduling call (a job the policy has just started no longer counts), so a
    policy can stop scanning its queue once no pending job fits the free GPUs."""

    __slots__ = ("states", "pending", "running", "active", "demand", "finished", "_least")

    def __init__(self, states: Sequence[JobState]) -> None:
        self.states = states
        self.pending: dict[object, JobState] = {}
        self.running: dict[object, JobState] = {}
        self.active: dict[object, JobState] = {}
        # a plain dict, not a Counter: Counter's `del` and missing-key reads are Python code
        self.demand: dict[int, int] = {}
        self.finished = 0
        # min(demand) (0 when empty), kept as sizes come, forgotten when the smallest leaves
        # (None: unknown)
        self._least: int | None = 0

    def arrive(self, state: JobState) -> None:
        self.pending[state.job_id] = state
        self.active[state.job_id] = state
        self.waiting(state, waits=True)

    def waiting(self, state: JobState, waits: bool) -> None:
        """Count a job's GPU request in `demand` (it waits) or take it out (it got GPUs)."""
        n = state.spec.num_gpus
        demand = self.demand
        if waits:
            count = demand.get(n)
            if count is None:
                least = self._least  # the new minimum, when it was known
                if not demand:
                    self._least = n
                elif least is not None and n < least:
                    self._least = n
                demand[n] = 1
            else:
                demand[n] = count + 1
            return
        left = demand[n] - 1
        if left:
            demand[n] = left
        else:
            del demand[n]
            if n == self._least:  # (another minimum is found when asked)
                self._least = None if demand else 0

    def min_demand(self) -> int:
        """The smallest GPU request among active jobs without GPUs (0 when none)."""
        least = self._least
        if least is None:
            least = self._least = min(self.demand, default=0)
        return least
