"""The run's mutable bookkeeping that the view reads: the clock and the job index.

Both are plain objects owned by the simulator; the view and the allocation hold references
to them (never to the simulator), so a policy sees state, not the machinery that changes it.
"""

from __future__ import annotations

from collections import Counter

from dlsched.jobs import JobState


class Clock:
    """Simulated time in seconds, and whether the current scheduling call is a round tick."""

    __slots__ = ("now", "is_round")

    def __init__(self) -> None:
        self.now = 0.0
        self.is_round = False


class JobIndex:
    """The jobs of one run: every state in submit order, and those pending, running, active.

    `demand` counts active jobs without GPUs by GPU request. The allocation keeps it current
    *within* a scheduling call (a job the policy has just started no longer counts), so a
    policy can stop scanning its queue once no pending job fits the free GPUs."""

    __slots__ = ("states", "pending", "running", "active", "demand", "finished", "_least")

    def __init__(self, states: list[JobState]) -> None:
        self.states = states
        self.pending: dict[object, JobState] = {}
        self.running: dict[object, JobState] = {}
        self.active: dict[object, JobState] = {}
        self.demand: Counter[int] = Counter()
        self.finished = 0
        # min(demand), kept until a request size appears in or leaves `demand` (None: unknown)
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
            if n not in demand:
                self._least = None
            demand[n] += 1
            return
        left = demand[n] - 1
        if left:
            demand[n] = left
        else:
            del demand[n]
            self._least = None

    def min_demand(self) -> int:
        """The smallest GPU request among active jobs without GPUs (0 when none)."""
        least = self._least
        if least is None:
            least = self._least = min(self.demand, default=0)
        return least
