"""How Gavel's mechanism (`mechanism.py`) realises an allocation X over time: the part of the
mechanism that `exact=True` swaps, as one object the policy holds (its parameters, no run
state), so that every Gavel policy takes either.

- `Rounds` (the default): Gavel's simulator (`scheduler/scheduler.py` at the commit of
  `../shared/anchors/gavel`). Rounds of `round_s` = 360 s, X re-solved at most every
  `resolve_interval_s` after a job-set change, priority[j, mode] = X[j, mode] / f[j, mode]
  with f the job's share of the time its mode's type has given since the solve (Gavel's
  1e9 for a type that has given none), and, unless the policy forbids it
  (`zero_priority_fill = False`: FIFO, the cost policies), entries at priority 0 taken too.
- `TimeSlices` (`exact=True`, the allocation realised "exactly", Gavel PR #165): Gavel's
  `ideal` simulator mode advances every job at its fluid rate Σ_k X·T with no GPUs at all.
  The engine needs whole GPUs, so here X is realised by time slicing instead: slices of
  `slice_s` (default 60 s), X re-solved at the first slice after every job-set change
  (interval 0), and in each slice the GPUs go to the (job, mode) entries owed the most
  time, owed = X·(time since the solve) − time received since then, entries with X = 0
  never running (so no idle filling, `fill_idle` off). Every job's received time then
  tracks X·elapsed to within one slice per type; the shorter the slice, the closer to the
  fluid limit, at one scheduling call per slice.

Both count received time from the same credit, `round_s` / 2 per mode at each solve (for
`TimeSlices` it cancels out of `owed`).

`WholeSteps` is the other half of Gavel's rounds, on the truth's side: a throughput model
under which a job advances as in Gavel's simulator, int(rate · round_s) whole steps per
round (`_get_num_steps`), instead of continuously. Pass it as `simulate(throughput=...)`
to replay Gavel's simulator rather than its model of a cluster (the reproductions of
Gavel's figures do).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

NEW_PRIORITY = 1e9  # Gavel's priority for a mode whose type has had no time yet


class Rounds:
    """Gavel's rounds (module docstring): `period_s` is the policy's `round_s`."""

    def __init__(
        self,
        period_s: float,
        resolve_interval_s: float,
        fill_idle: bool,
        zero_priority_fill: bool,
    ) -> None:
        self.period_s = period_s
        self.round_s = period_s  # the engine's scheduling tick
        self.resolve_interval_s = resolve_interval_s
        self.fill_idle = fill_idle
        self.zero_priority_fill = zero_priority_fill
        # whether a job with no X anywhere can never run (so the greedy pass skips it)
        self.only_with_x = not zero_priority_fill
        # whether a whole round is charged as the time of its whole steps (Gavel's rounds)
        self.whole_steps = True

    @property
    def credit_s(self) -> float:
        """Time every job is counted as having received per mode at each solve."""
        return self.period_s / 2

    def priorities(
        self, x: np.ndarray, time: np.ndarray, type_time: np.ndarray, since_solve_s: float
    ) -> np.ndarray:
        """priority[row, mode] from X, the time each row received per mode (credit
        included), the time each mode's type gave (one row, broadcast) and the seconds
        since the solve."""
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(type_time > 0, time / type_time, 0.0)
            priority = np.where(fraction > 0, x / fraction, x * NEW_PRIORITY)
        return np.where(x > 0, priority, 0.0)

    def runnable(self, x: np.ndarray, priority: np.ndarray) -> np.ndarray:
        """Which entries (same shapes) the greedy pass may take."""
        if self.zero_priority_fill:
            return np.ones(np.shape(x), dtype=bool)
        return priority > 0


class TimeSlices(Rounds):
    """`exact=True` (module docstring): slices of `slice_s`, re-solved at every job-set
    change, GPUs to the entries owed the most time, never to an entry with X = 0."""

    def __init__(self, period_s: float, slice_s: float, zero_priority_fill: bool) -> None:
        super().__init__(period_s, 0.0, False, zero_priority_fill)
        self.round_s = slice_s
        self.only_with_x = True
        self.whole_steps = False

    def priorities(
        self, x: np.ndarray, time: np.ndarray, type_time: np.ndarray, since_solve_s: float
    ) -> np.ndarray:
        """Seconds owed per entry, −inf where X = 0."""
        owed = x * since_solve_s - (time - self.credit_s)
        return np.where(x > 0, owed, -np.inf)

    def runnable(self, x: np.ndarray, priority: np.ndarray) -> np.ndarray:
        """Entries with some X (whatever they are owed)."""
        return x > 0


class WholeSteps:
    """A truth (`ThroughputModel` with `rate_from`) where a job advances as in Gavel's
    simulator: int(rate · `round_s`) whole steps per round of `round_s` seconds, rate being
    `base`'s (default Gavel's measured table, ``"gavel"``).

    Gavel's simulator runs each job of a round for int(rate · round_s) steps (its
    `_get_num_steps`), so a job loses the fraction of a step every round, and one whose
    remaining work needs a few steps more than the rounds so far gave takes one more round.
    Under a busy cluster, the solve at that round then sees another job set, and Gavel's
    agnostic FIFO, whose choices follow the job set, goes another way from there. Here the
    engine runs the job at floor(rate · round_s) / round_s steps/s, which gives the same
    steps in a whole round; `throughput` stays `base`'s, so policies, estimators and the
    conversion of durations to steps see Gavel's table, as Gavel's policies do.

    Faithful: whole steps per whole round, for jobs that run alone. Not modelled: the length
    of Gavel's rounds — a round ends when its last job has done its whole steps, a few
    milliseconds before `round_s`, so Gavel's round boundaries drift early (by 5.8 s after
    219 simulated hours on Figure 9's jobs at 2.2 jobs/h), and an arrival in that gap is
    seen a round earlier here (the Gavel policies' `gavel_clock=True` replays that clock and
    reports times on it); and packed jobs (the engine's `rate_from` does not know a
    job's partner, so use `base` itself for policies that pack). A rate under one step per round is
    left as it is (Gavel's job would never advance).
    """

    def __init__(self, base: Any = "gavel", round_s: float = 360.0) -> None:
        from dlsched.perf import make_throughput

        if not round_s > 0:
            raise ValueError(f"WholeSteps: round_s must be > 0 seconds, got {round_s!r}")
        self.base = make_throughput(base)
        self.round_s = float(round_s)
        self.name = f"{self.base.name}-whole-steps"

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        """`base`'s rate: what policies and the work conversion see."""
        return self.base.throughput(model, gpu_type, n_gpus, n_nodes, colocated)

    def reference_type(self, model: str | None) -> str | None:
        """`base`'s reference type."""
        return self.base.reference_type(model)

    def rate_from(
        self, model: str | None, gpu_type: str, n_gpus: int, n_nodes: int, work_done: float
    ) -> tuple[float, float]:
        """The rate of whole steps per round, throughout the job."""
        rate = self.base.throughput(model, gpu_type, n_gpus, n_nodes)
        steps = rate * self.round_s
        if steps < 1.0:
            return rate, math.inf
        return math.floor(steps) / self.round_s, math.inf

    def __repr__(self) -> str:
        return f"WholeSteps({self.base.name!r}, round_s={self.round_s:g})"
