"""Debug auditor: checks the invariants of DESIGN.md §3 after every scheduling call.

On in tests (`simulate(..., audit=True)`); it costs O(running jobs + GPUs) per call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlsched.engine.ledger import FREE
from dlsched.jobs import FINISHED, PENDING, RUNNING, JobState

if TYPE_CHECKING:
    from dlsched.engine.simulator import Simulator

_REL_TOL = 1e-9


class InvariantViolation(AssertionError):
    """The engine broke one of its own invariants: a bug in dlsched."""


class Auditor:
    """Re-derives the ledger from job states and compares; checks time and work."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.last_now = 0.0
        self.finished_ids: set[object] = set()

    def _fail(self, message: str) -> None:
        raise InvariantViolation(f"t={self.sim.now}: {message}")

    def _check_time(self) -> None:
        if self.sim.now < self.last_now:
            self._fail(f"time went back from {self.last_now}")
        self.last_now = self.sim.now

    def after_finish(self, state: JobState) -> None:
        self._check_time()
        spec = state.spec
        if state.job_id in self.finished_ids:
            self._fail(f"job {state.job_id!r} finished twice")
        self.finished_ids.add(state.job_id)
        if state.finish_time is None or state.finish_time < spec.submit_time:
            self._fail(f"job {state.job_id!r} finished at {state.finish_time} before its "
                       f"submit time {spec.submit_time}")

    def after_schedule(self) -> None:
        self._check_time()
        sim = self.sim
        ledger = sim.ledger
        now = sim.now
        expected = [FREE] * len(ledger.owner)
        for job_id, state in sim.running.items():
            if state.status != RUNNING or not state.gpus:
                self._fail(f"job {job_id!r} is in the running set as {state.status}")
            if len(state.gpus) != state.spec.num_gpus:
                self._fail(f"job {job_id!r} holds {len(state.gpus)} GPUs, wants "
                           f"{state.spec.num_gpus}")
            for gpu in state.gpus:
                if expected[gpu] != FREE:
                    self._fail(f"GPU {gpu} given to two jobs")
                expected[gpu] = state.spec.index
            if state.steps_done_at(now) > state.spec.total_steps * (1 + _REL_TOL):
                self._fail(f"job {job_id!r} did more steps than it has")
            if state.start_time is None or state.start_time < state.spec.submit_time:
                self._fail(f"job {job_id!r} started before its submit time")
        if expected != ledger.owner:
            self._fail("the ledger's owners differ from the running jobs' GPUs")
        for job_id, state in sim.pending.items():
            if state.status != PENDING or state.gpus:
                self._fail(f"pending job {job_id!r} is {state.status} with GPUs {state.gpus}")
        free_by_type = {t: 0 for t in ledger.capacity}
        for node, free in enumerate(ledger.node_free):
            gpu_type = ledger.node_type[node]
            free_by_type[gpu_type] += len(free)
            if sorted(free) != free or any(ledger.owner[g] != FREE for g in free):
                self._fail(f"node {node}'s free list is wrong: {free}")
            for count, nodes in enumerate(ledger.buckets[gpu_type]):
                if (node in nodes) != (count == len(free) and count > 0):
                    self._fail(f"node {node} is in the wrong free-count bucket")
        if free_by_type != ledger.free_by_type:
            self._fail(f"free counts {ledger.free_by_type} != {free_by_type}")
        if len(sim.running) + len(sim.pending) != len(sim.active):
            self._fail("active = pending + running does not hold")
        done = sum(1 for s in sim.states if s.status == FINISHED)
        if done != sim.finished:
            self._fail("finished count is off")
