"""Per-VC scheduling: an independent copy of any policy for each virtual cluster.

Papers: Philly (Jeon et al., USENIX ATC 2019, §2) and Helios (Hu et al., SC 2021, §2.1)
schedule each virtual cluster (VC) separately: a VC's jobs queue among themselves and run on
the VC's own nodes or within its GPU quota.

Faithful: one queue and one policy instance per VC (jobs without a VC form one more group),
so a blocked head job in one VC never blocks another VC; node ownership and quotas come from
the cluster's `vcs:` section and are enforced by the shared placement (`ClusterView.place`)
and ledger, so the inner policy needs no VC logic.
Simplified: no borrowing of idle GPUs across VCs (Philly let jobs spill over; Helios' QSSF
simulator does not). A Gavel policy with `gavel_clock=True` is refused: that option replays
the one clock of Gavel's simulator, which a copy per VC cannot keep.

Speed: an inner policy may define `idle()` — True when a scheduling call would change
nothing, staying True until its `on_arrival` or `on_round` is called (FIFO, SJF and SRTF
do). A VC whose policy is idle is skipped without a call until its next arrival or round.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlsched.engine.view import ClusterView
from dlsched.errors import ConfigError
from dlsched.jobs import FINISHED, PENDING, RUNNING, JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import get, register


class ScopedView:
    """A `ClusterView` that shows one VC's jobs and the GPUs that VC may use.

    Made once per scheduling call per VC: `pending` and `running` are computed on first use
    (FIFO and SJF never read them), and the view's hot methods are bound at construction
    rather than found through `__getattr__` on every call."""

    def __init__(self, view: ClusterView, vc: str | None, jobs: dict[object, JobState]) -> None:
        self._view = view
        self.vc = vc
        self._jobs = jobs
        self._pending: dict[object, JobState] | None = None
        self._running: dict[object, JobState] | None = None
        self.allocation = view.allocation
        self.place = view.place
        self.min_pending_demand = view.min_pending_demand
        self.estimator = view.estimator

    @property
    def pending(self) -> dict[object, JobState]:
        """This VC's jobs waiting for GPUs (as of the first read in this call)."""
        if self._pending is None:
            self._pending = {k: s for k, s in self._jobs.items() if s.status == PENDING}
        return self._pending

    @property
    def running(self) -> dict[object, JobState]:
        """This VC's running jobs (as of the first read in this call)."""
        if self._running is None:
            self._running = {k: s for k, s in self._jobs.items() if s.status == RUNNING}
        return self._running

    @property
    def now(self) -> float:
        """The current simulated time in seconds."""
        return self._view.now

    def __getattr__(self, name: str) -> Any:  # cluster, rng, pool, rank_types, ...
        return getattr(self._view, name)

    def free_gpus(self, gpu_type: str | None = None) -> int:
        """Free GPUs this VC could take now (its pools, within its quota)."""
        return self._view.free_gpus_for_vc(self.vc, gpu_type)


@register("per_vc", "per-vc")
class PerVC(BasePolicy):
    """Runs an independent copy of a policy (`inner`) for each virtual cluster."""

    name = "per-vc"

    def __init__(self, inner: str = "fifo", **inner_params: Any) -> None:
        self.inner = inner
        self.inner_params = inner_params
        sample = get(inner, **inner_params)  # checks `inner` and its parameters
        if getattr(sample, "gavel_clock", False):
            # Each VC's copy would keep its own Gavel clock (drift, held-back arrivals),
            # while a result reports one clock: its times would be on neither.
            raise ConfigError(
                f"policy 'per-vc': inner={inner!r} with gavel_clock=True replays Gavel's "
                "simulator's single clock, which a copy per virtual cluster cannot keep; "
                "run it without per-vc, or with gavel_clock=False"
            )
        self.round_s = sample.round_s
        # an inner policy that does not account CPU/memory makes the whole run refuse them
        self.accounts_resources = getattr(sample, "accounts_resources", True) is not False
        # and one that does not place jobs without GPUs makes it refuse those
        self.places_jobs_without_gpus = getattr(sample, "places_jobs_without_gpus", False) is True

    def start(self, view: ClusterView) -> None:
        self._view = view
        self._policies: dict[str | None, Any] = {}
        self._jobs: dict[str | None, dict[object, JobState]] = {}
        self._order: list[str | None] = []  # VCs in scheduling order: no VC last
        self._idle: dict[str | None, Any] = {}  # each policy's `idle` method, or None
        # VCs whose policy may have something to do. A policy with an `idle()` method that
        # said True leaves the set until it hears of an arrival or a round tick: until then
        # it stays idle, so it is neither asked nor called.
        self._active: set[str | None] = set()

    def _policy(self, vc: str | None) -> Any:
        """The VC's own policy, made and started when its first job arrives."""
        policy = self._policies.get(vc)
        if policy is None:
            policy = self._policies[vc] = get(self.inner, **self.inner_params)
            self._jobs[vc] = {}
            self._order = sorted(self._policies, key=lambda v: (v is not None, v or ""))
            self._idle[vc] = getattr(policy, "idle", None)
            start = getattr(policy, "start", None)
            if start is not None:
                scoped = ScopedView(self._view, vc, self._jobs[vc])
                scoped.pending, scoped.running  # noqa: B018 - a snapshot, as for a call
                start(scoped)
        return policy

    def on_arrival(self, job: JobState) -> None:
        policy = self._policy(job.spec.vc)
        self._jobs[job.spec.vc][job.job_id] = job
        self._active.add(job.spec.vc)
        hook = getattr(policy, "on_arrival", None)
        if hook is not None:
            hook(job)

    def on_finish(self, job: JobState) -> None:
        del self._jobs[job.spec.vc][job.job_id]
        hook = getattr(self._policies[job.spec.vc], "on_finish", None)
        if hook is not None:
            hook(job)

    def on_round(self, view: ClusterView) -> None:
        for vc in self._order:
            hook = getattr(self._policies[vc], "on_round", None)
            if hook is not None:
                hook(ScopedView(view, vc, self._jobs[vc]))
                self._active.add(vc)

    def schedule(self, view: ClusterView):
        alloc = view.allocation()
        policies, all_jobs, active = self._policies, self._jobs, self._active
        for vc in self._order:
            if vc not in active:
                continue
            jobs = all_jobs[vc]
            if not jobs:
                active.discard(vc)  # back with its next arrival
                continue
            # A policy that says a call would change nothing (no job of its VC waits) is
            # not called: most VCs, most of the time.
            idle = self._idle[vc]
            if idle is not None and idle():
                active.discard(vc)
                continue
            answer = policies[vc].schedule(ScopedView(view, vc, jobs))
            if answer is not None and answer is not alloc:
                self._apply(alloc, jobs, answer)
        return alloc

    @staticmethod
    def _apply(alloc, jobs: dict[object, JobState], answer: Mapping) -> None:
        """A plain-mapping answer is the whole allocation of this VC's jobs only."""
        for job_id, state in jobs.items():
            if state.status != FINISHED and job_id in alloc and job_id not in answer:
                del alloc[job_id]
        for job_id, gpus in answer.items():
            alloc[job_id] = gpus

    def __repr__(self) -> str:
        params = "".join(f", {k}={v!r}" for k, v in sorted(self.inner_params.items()))
        return f"PerVC(inner={self.inner!r}{params})"
