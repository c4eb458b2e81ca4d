"""Node availability over time: nodes that are absent, starting or present during a run.

A `Cluster` is hardware that may exist; this module says which of its nodes exist *now*.
Each node is in one of three states:

- ``ABSENT``: not there. Its GPUs are in no free index of the ledger (`Ledger.withdraw_node`),
  so no policy, view or placement helper can give them to a job, and the auditor checks that
  no running job holds one.
- ``STARTING``: acquired, booting for its start-up latency; still absent to every policy.
- ``PRESENT``: usable; its GPUs are free until jobs take them (`Ledger.restore_node`).

Changes are asked for as data (`acquire`, `release`) and applied by the engine at a
scheduling point; a node becomes present `startup_s` after its acquisition, through a timer
the engine owns. A node is released only while it holds no job: releasing a busy node is
refused with a `SchedulingError` (rather than preempting its jobs), so a provisioner can
never silently cost jobs a restart; it must let the policy drain the node first.

Rented instances (`dlsched.rented`) are the first user: their nodes start absent and a
provisioning policy (`dlsched.provision`) acquires and releases them. Power states of fixed
nodes are the second (a power manager such as `dlsched.provision.ces`): every fixed node is
managed and starts present (its first interval opens at time 0); a power-down is a
`release` of a present node, a power-up an `acquire` with the node's wake time
(``energy.wake_s``) as its latency. A node powered down takes `sleep_s` (``energy.sleep_s``)
to shut down; one woken meanwhile starts waking only when that is over, so its wake ends
at ``max(now, off_at) + startup_s`` (`Interval.wake_from_s` says when it began). Every
acquisition interval is recorded (`intervals`), with the time each node spent holding no
job, for billing and energy accounting (`dlsched.energy.power_state_figures`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dlsched.engine.ledger import Ledger
from dlsched.errors import SchedulingError

ABSENT = "absent"
STARTING = "starting"
PRESENT = "present"


@dataclass
class Interval:
    """One acquisition of a node: when it was acquired, became present (None if it was
    released while still starting) and was released (None while held), and the seconds it
    was held with no job on it (start-up included)."""

    node: int
    acquired_s: float
    ready_s: float | None
    released_s: float | None = None
    idle_s: float = 0.0
    wake_from_s: float | None = None  # when its start-up began (later than `acquired_s`
    # while the node was still shutting down); None: as acquired
    initial: bool = False  # held from the start of the run (a fixed node), not acquired


class FreeOrAbsent(Mapping[str, int]):
    """Free GPUs per type counting absent ones as free: what the timeline reads, so that its
    busy GPUs (capacity − this) are the GPUs jobs hold, never the ones that are not there."""

    def __init__(self, ledger: Ledger) -> None:
        self._free = ledger.free_by_type
        self._absent = ledger.absent_by_type

    def __getitem__(self, key: str) -> int:
        return self._free[key] + self._absent[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._free)

    def __len__(self) -> int:
        return len(self._free)


class Availability:
    """The state of every node that may come and go, over one run.

    `managed` are the node indices whose presence changes (every other node is always
    present); they all start absent (`initially_absent`) or all present, held from time 0.
    A released node needs `sleep_s` seconds to shut down before it can start again. Idle
    time is tracked per present node from `observe` calls, which the engine makes after
    every change of occupancy."""

    def __init__(
        self,
        ledger: Ledger,
        managed: Mapping[int, float],
        initially_absent: bool,
        sleep_s: float = 0.0,
    ) -> None:
        if not 0.0 <= sleep_s < float("inf"):
            raise ValueError(f"sleep_s must be a number of seconds >= 0, got {sleep_s!r}")
        self.ledger = ledger
        self.startup_s = dict(managed)  # node → start-up latency (seconds)
        self.sleep_s = float(sleep_s)
        self.state: dict[int, str] = {}  # (changed only through `_set`)
        self._in: dict[str, set[int]] = {ABSENT: set(), STARTING: set(), PRESENT: set()}
        self.generation: dict[int, int] = dict.fromkeys(managed, 0)
        self.intervals: list[Interval] = []
        self._open: dict[int, Interval] = {}  # node → its current interval
        self._idle_since: dict[int, float | None] = {}  # held node → since when it is idle
        self._off_at: dict[int, float] = {}  # released node → when its shut-down is over
        for node in managed:
            self._set(node, ABSENT if initially_absent else PRESENT)
            if initially_absent:
                ledger.withdraw_node(node)
            else:  # held since the start of the run
                interval = Interval(node, 0.0, 0.0, initial=True)
                self.intervals.append(interval)
                self._open[node] = interval
                self._idle_since[node] = 0.0

    # ---- what provisioners read ---------------------------------------------------------
    def nodes_in(self, state: str) -> list[int]:
        """Managed nodes in `state`, by index."""
        return sorted(self._in.get(state, ()))

    def off_at(self, node: int) -> float:
        """When a released node's shut-down is (or was) over; -inf if never released."""
        return self._off_at.get(node, float("-inf"))

    def idle_since(self, node: int) -> float | None:
        """Since when a held node has held no job (None: it runs one, or is not held)."""
        return self._idle_since.get(node)

    # ---- changes -------------------------------------------------------------------------
    def acquire(self, node: int, now: float) -> float:
        """Start acquiring an absent node at `now`; return when it becomes present (the
        engine then calls `ready`)."""
        if self.state.get(node) != ABSENT:
            raise SchedulingError(
                f"node {node} cannot be acquired: it is {self.state.get(node, 'not managed')}"
            )
        begins = max(now, self._off_at.get(node, now))  # (after its shut-down, if any)
        ready_at = begins + self.startup_s[node]
        self._set(node, STARTING)
        self.generation[node] += 1
        interval = Interval(node, now, ready_at, wake_from_s=begins)
        self.intervals.append(interval)
        self._open[node] = interval
        self._idle_since[node] = now  # booting is held time without a job
        return ready_at

    def ready(self, node: int, generation: int) -> bool:
        """A node's start-up is over: it becomes present (False: that acquisition was
        released meanwhile, and nothing changes)."""
        if self.state.get(node) != STARTING or self.generation[node] != generation:
            return False
        self._set(node, PRESENT)
        self.ledger.restore_node(node)
        return True

    def release(self, node: int, now: float) -> None:
        """Release a held node (starting or present) at `now`. A node on which a job holds
        anything is refused (see the module docstring)."""
        state = self.state.get(node)
        if state not in (STARTING, PRESENT):
            raise SchedulingError(f"node {node} cannot be released: it is {state or 'not managed'}")
        if state == PRESENT:
            self.ledger.withdraw_node(node)  # refuses a node that still runs jobs
        self._set(node, ABSENT)
        self.generation[node] += 1
        self._close_idle(node, now)
        interval = self._open.pop(node)
        interval.released_s = now
        if state == STARTING:
            interval.ready_s = None  # it never became present
        del self._idle_since[node]
        self._off_at[node] = now + self.sleep_s

    def release_all(self, now: float) -> None:
        """Release every held node (the run is over: nothing more will run on them)."""
        for node in sorted(self._open):
            self.release(node, now)

    def observe(self, now: float) -> None:
        """Note, after a change of occupancy at `now`, which held nodes run a job."""
        ledger = self.ledger
        for node, since in self._idle_since.items():
            idle = self.state[node] == STARTING or ledger.node_idle(node)
            if idle and since is None:
                self._idle_since[node] = now
            elif not idle and since is not None:
                self._open[node].idle_s += now - since
                self._idle_since[node] = None

    def _set(self, node: int, state: str) -> None:
        old = self.state.get(node)
        if old is not None:
            self._in[old].discard(node)
        self.state[node] = state
        self._in[state].add(node)

    def _close_idle(self, node: int, now: float) -> None:
        since = self._idle_since.get(node)
        if since is not None:
            self._open[node].idle_s += now - since

    # ---- the record ----------------------------------------------------------------------
    def report(self, names: Mapping[int, str]) -> list[dict[str, Any]]:
        """Every acquisition interval as plain data, with each node's name."""
        return [
            {
                "node": iv.node,
                "name": names[iv.node],
                "acquired_s": iv.acquired_s,
                "ready_s": iv.ready_s,
                "released_s": iv.released_s,
                "idle_s": iv.idle_s,
            }
            for iv in self.intervals
        ]
