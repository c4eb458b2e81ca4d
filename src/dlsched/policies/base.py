"""The policy contract. A policy reads a `ClusterView` and returns an allocation.

Lifecycle (scikit-learn's): parameters are stored by `__init__` and nothing else happens
there; the engine calls `start(view)` at the beginning of every run, before the first job
arrives, and the policy builds all its per-run state there. So one instance serves any
number of runs, each from a clean state, and two runs with the same inputs and seed give the
same result. During a run the engine calls `on_arrival(job)` for each job as it is
submitted, `schedule(view)` once per scheduling point (after everything that happened at that
instant), `on_round(view)` before `schedule` on a round tick (when `round_s` is set) and
`on_finish(job)` when a job completes.

A policy whose `schedule` changes nothing while no waiting job fits the free GPUs — it never
preempts, packs, moves jobs or acts on its own timers then (FIFO without preemption, SJF) —
may declare `call_when_nothing_fits = False`: the engine then skips the scheduling calls of
instants where the smallest waiting request exceeds the free GPUs (or nothing waits) and
something runs; round ticks are always called. The default, True, calls at every instant.
Such a policy may also define `waiting_for(view)`, which the engine asks after each call: the
pools (`ClusterView.waiting_pools`) whose freed GPUs could let its next call do something,
or None. While none of them gets GPUs back, arrivals included, the engine skips its calls
(strict FIFO: the blocked head decides, and an arrival joins behind it).

A policy that decides admission defines `admit(job, view) -> Admission`
(`dlsched.engine.admission`): the engine asks it about each job at its submit instant, before
`on_arrival`, and the policy accepts the job, runs it as best-effort (its spec then has no
deadline) or declines it (it is never queued, never given to `on_arrival` or `schedule`, and
reported as ``declined``). A policy without `admit` accepts every job. `BasePolicy` has no
default `admit` on purpose: a run whose policy has none keeps its tables as they were, without
the ``admission`` column and events.

A policy that asks for wake-ups (`ClusterView.wake_at`) may define `woken(view) -> bool`: at
an instant where only its wake-ups are due (no arrival, completion or round since its last
call) the engine asks it instead of calling `schedule`, and skips the call on False. It must
answer False only when `schedule` would change nothing, its own state included (Tiresias: a
demotion check that has moved later since the wake-up was asked for).

A policy that replays another simulator's clock may define `reported_times(times,
ends=False)`, a numpy array of times on the engine's clock mapped to that one (or handed
back itself when it maps none; `ends`: the times are finishes or preemptions, which, where
that clock jumps, come before the jump): `simulate` reports the result's start and finish
times, event log (submissions excepted) and timeline through it (Gavel's
`gavel_clock=True`).

What a policy sees of a job (`JobState`) is its spec, its progress and what the estimator
says (`view.estimator`); the true rate stays with the engine. Random choices come from
`view.rng`, the policy's stream of the run's seed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from dlsched.jobs import JobState

if TYPE_CHECKING:
    from dlsched.engine.view import ClusterView


@runtime_checkable
class Policy(Protocol):
    """What the engine calls. `start(view)` and the hooks `admit(job, view)`,
    `on_arrival(job)`, `on_finish(job)`, `on_round(view)` are optional. `schedule` returns
    `view.allocation()` after changing it, any mapping job id → GPU ids as the whole answer,
    or None for "no change"."""

    name: str
    round_s: float | None

    def schedule(self, view: ClusterView) -> Mapping[object, tuple[int, ...]] | None: ...


class BasePolicy:
    """Convenience base: no round, no-op hooks, `start` to override for per-run state."""

    name = "base"
    round_s: float | None = None
    #: False: `schedule` is a no-op when no waiting job fits the free GPUs (see the module
    #: docstring), so the engine may skip such calls. True (the default) is always safe.
    call_when_nothing_fits: bool = True
    #: False: the policy picks GPU ids without checking their nodes' CPU and host memory
    #: (`ClusterView.fits_resources`), so `simulate` refuses, before the run, a workload
    #: with CPU/memory demands on a cluster that declares them (rather than fail mid-run).
    accounts_resources: bool = True
    #: True: the policy places jobs that ask for no GPU (``num_gpus`` 0, CPU/memory only)
    #: through `ClusterView.place` (or gives them `ClusterView.host_slot`s). False (the
    #: default): `simulate` refuses a workload with such jobs, naming the policy, rather
    #: than let a policy that counts GPUs divide by zero or never start them.
    places_jobs_without_gpus: bool = False

    def start(self, view: ClusterView) -> None:
        """Called by the engine at the beginning of every run: build per-run state here."""

    def on_arrival(self, job: JobState) -> None:
        """Called when a job is submitted (before the scheduling call of that instant)."""

    def on_finish(self, job: JobState) -> None:
        """Called when a job completes."""

    def schedule(self, view: ClusterView) -> Mapping[object, tuple[int, ...]] | None:
        """Decide who holds which GPUs now: change `view.allocation()` and return it."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
