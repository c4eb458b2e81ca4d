"""`Allocation`: the policy's answer, job id → GPU ids, built on top of the current one.

A policy gets it from `view.allocation()`, assigns (`alloc[job] = gpus`) and removes
(`del alloc[job]`, which queues or preempts the job), and returns it. Each change is applied
to the ledger at once, so free-GPU counts and placement helpers see the GPUs the policy has
already handed out in this call; the engine turns the net change per job into starts,
preemptions, moves and re-scalings when `schedule()` returns. An elastic job (one with
`min_gpus`/`max_gpus`) may be given any GPU count within its bounds. Where the cluster
accounts CPU and memory, a job also takes its demand on the nodes of its GPUs
(`Ledger.node_demands`); GPUs whose nodes lack it are refused like GPUs already held.
`assign(job, gpus, cpu_milli=, memory_mib=)` gives it another amount than its demand
(Synergy); a job whose GPUs stay but whose amount changes is reported by `changes()` with
equal old and new GPUs, and the engine re-rates it. A policy may instead return any
mapping of job id → GPU ids as its whole answer, and the engine diffs it against the
current state.

A job that asks for no GPU (`JobSpec.num_gpus` 0) is given one *host slot*
(`ClusterView.host_slot(node)`, an id past the GPU ids) in place of GPU ids: it then holds
its CPU and memory on that node and no GPU (`dlsched.engine.ledger`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING

from dlsched.engine.admission import DECLINED
from dlsched.engine.ledger import FREE, WHOLE
from dlsched.errors import SchedulingError
from dlsched.jobs import FINISHED, PENDING, JobSpec, JobState

if TYPE_CHECKING:
    from dlsched.engine.ledger import Ledger
    from dlsched.engine.state import Clock, JobIndex


def _declined(state: JobState) -> str:
    return (
        f"job {state.job_id!r} was declined at admission (`admit`): a declined job never "
        "runs; leave it out of the allocation"
    )


class Allocation(MutableMapping):
    """Tentative allocation for one scheduling call (see the module docstring)."""

    def __init__(self, ledger: Ledger, jobs: JobIndex, clock: Clock) -> None:
        self._ledger = ledger
        self._jobs = jobs
        self._clock = clock
        self._changed: dict[JobState, tuple[int, ...]] = {}
        # CPU/memory a running job held when this call first touched it (resource-accounting
        # clusters only): a job whose GPUs stay but whose amount changed is a change too.
        self._before: dict[JobState, dict[int, tuple[int, int]] | None] = {}
        # (spec, GPU ids) that `ClusterView.place` last chose for a rigid whole-GPU job in
        # that job's own pool with a built-in placer (see `__setitem__`)
        self._placed: tuple[JobSpec, tuple[int, ...]] | None = None

    def _set(self, state: JobState, old: tuple[int, ...], new: tuple[int, ...]) -> None:
        """Record the job's tentative GPUs; a job that gains or loses all its GPUs leaves or
        joins the pending demand at once, so the rest of this call sees it."""
        self._changed[state] = new
        if bool(old) != bool(new):
            self._jobs.waiting(state, waits=not new)

    def _state(self, job: object) -> JobState:
        if type(job) is JobState:  # the common case first
            if job.status == FINISHED:
                raise SchedulingError(f"job {job.job_id!r} has already finished")
            if job.status == DECLINED:
                raise SchedulingError(_declined(job))
            return job
        if isinstance(job, JobState):
            state = job
        else:
            found = self._jobs.active.get(job)
            if found is None:
                raise SchedulingError(
                    f"job {job!r} is not pending or running at t={self._clock.now}"
                )
            state = found
        if state.status == FINISHED:
            raise SchedulingError(f"job {state.job_id!r} has already finished")
        if state.status == DECLINED:
            raise SchedulingError(_declined(state))
        return state

    def _current(self, state: JobState) -> tuple[int, ...]:
        return self._changed.get(state, state.gpus)

    def __getitem__(self, job: object) -> tuple[int, ...]:
        gpus = self._current(self._state(job))
        if not gpus:
            raise KeyError(job)
        return gpus

    def __contains__(self, job: object) -> bool:
        try:
            return bool(self._current(self._state(job)))
        except SchedulingError:
            return False

    def __setitem__(self, job: object, gpus: tuple[int, ...]) -> None:
        placed = self._placed
        if (
            placed is not None
            and placed[1] is gpus
            and type(job) is JobState
            and job.spec is placed[0]
            and job.status == PENDING
            and job not in self._changed
        ):
            # A waiting job given the GPUs `view.place` has just chosen for it: their count,
            # distinctness, VC and GPU type are right by construction (what `_assign` checks
            # first), it holds nothing to give back, and the ledger still refuses GPUs taken
            # since. Quotas and CPU/memory take the general path.
            spec = job.spec
            ledger = self._ledger
            if not ledger.tracks_resources and (spec.vc is None or spec.vc not in ledger.vc_quota):
                self._placed = None
                self._take_free(job, spec, gpus)
                return
        if (
            type(job) is JobState
            and type(gpus) is tuple
            and job.status == PENDING
            and not job.gpus
            and job not in self._changed
        ):
            # A waiting job that holds nothing given whole GPUs the policy chose (a resume
            # under time-slicing, say): when `_assign`'s checks before the ledger provably
            # pass (ints, the right count, distinct, on the job's VC and types, no quota, no
            # CPU/memory), the ledger's own checks are all that is left.
            spec = job.spec
            ledger = self._ledger
            n = spec.num_gpus
            if (
                len(gpus) == n
                and spec.gpu_milli == WHOLE
                and spec.min_gpus is None
                and spec.max_gpus is None
                and not ledger.tracks_resources
                and (spec.vc is None or spec.vc not in ledger.vc_quota)
                and (
                    type(gpus[0]) is int
                    if n == 1
                    else n > 1 and len(set(gpus)) == n and all(type(g) is int for g in gpus)
                )
                and (  # else `_assign` raises its error
                    not (ledger.owning_vcs or spec.gpu_constraint is not None)
                    or ledger.misplaced(gpus, spec.vc, spec.gpu_constraint) is None
                )
            ):
                self._take_free(job, spec, gpus)
                return
        self._assign(job, gpus)

    def _take_free(self, job: JobState, spec: JobSpec, gpus: tuple[int, ...]) -> None:
        """The end of `__setitem__`'s fast paths: a waiting job that holds nothing takes free
        whole GPUs whose checks have passed (the ledger still refuses GPUs taken since)."""
        self._ledger._take_whole(spec.index, gpus, spec.vc)
        self._changed[job] = gpus
        jobs = self._jobs  # `jobs.waiting(job, waits=False)`, inlined
        demand = jobs.demand
        n = spec.num_gpus
        left = demand[n] - 1
        if left:
            demand[n] = left
        else:
            del demand[n]
            if n == jobs._least:
                jobs._least = None if demand else 0

    def pack(self, job: object, gpus: tuple[int, ...]) -> None:
        """Assign GPUs that may already be held whole by one other job: the two then share
        them (space sharing), each at the throughput model's measured pair rate."""
        self._assign(job, gpus, pack=True)

    def assign(
        self,
        job: object,
        gpus: tuple[int, ...],
        *,
        cpu_milli: int | None = None,
        memory_mib: int | None = None,
    ) -> None:
        """`alloc[job] = gpus` with the job holding `cpu_milli` milli-CPUs and `memory_mib`
        MiB in all (split over its nodes like a demand) instead of its own demand; None keeps
        the demand. The same GPUs with a new amount re-size the job's CPU/memory only."""
        self._assign(job, gpus, cpu_milli=cpu_milli, memory_mib=memory_mib)

    def _assign(
        self,
        job: object,
        gpus: tuple[int, ...],
        pack: bool = False,
        cpu_milli: int | None = None,
        memory_mib: int | None = None,
    ) -> None:
        state = self._state(job)
        gpus = tuple(map(int, gpus))
        spec = state.spec
        n = len(gpus)
        if spec.min_gpus is None and spec.max_gpus is None:
            bad = n != spec.num_gpus
        else:
            low, high = spec.gpu_range
            bad = not low <= n <= high
        if bad and not spec.num_gpus and self._ledger.is_host_slot(gpus):
            bad = False  # a job without GPUs goes to a node by its host slot
        if bad or (n > 1 and len(set(gpus)) != n):
            if not spec.num_gpus:
                raise SchedulingError(
                    f"job {state.job_id!r} asks for no GPU: give it one host slot "
                    f"(`view.host_slot(node)`), the policy gave {gpus}"
                )
            low, high = spec.gpu_range
            wanted = f"{low}" if low == high else f"{low} to {high}"
            raise SchedulingError(
                f"job {state.job_id!r} needs {wanted} distinct GPUs, the policy gave {gpus}"
            )
        current = self._changed.get(state, state.gpus)
        ledger = self._ledger
        override = cpu_milli is not None or memory_mib is not None
        if current == gpus:
            if override and ledger.tracks_resources:
                self._resize(state, gpus, cpu_milli, memory_mib)
            return
        wrong = (
            ledger.misplaced(gpus, spec.vc, spec.gpu_constraint)
            if ledger.owning_vcs or spec.gpu_constraint is not None  # else nothing to check
            else None
        )
        if wrong is not None:  # a silent wrong result otherwise: refuse it here
            raise SchedulingError(
                f"job {state.job_id!r} of VC {spec.vc!r} cannot run there: {wrong}"
            )
        held = ledger.reserved.get(spec.index) if current else None
        if current and ledger.tracks_resources and state.gpus and state not in self._before:
            self._before[state] = held
        if current:
            ledger.give_back(spec.index, current, spec.gpu_milli, spec.vc)
        try:
            self._take(state, gpus, pack, cpu_milli, memory_mib)
        except SchedulingError:
            if current:  # the job keeps what it held: a caller may catch this and go on
                packed = spec.gpu_milli == WHOLE and any(ledger.owner[g] != FREE for g in current)
                ledger.take(spec.index, current, spec.gpu_milli, spec.vc, pack=packed, demands=held)
            raise
        self._set(state, current, gpus)

    def _resize(
        self,
        state: JobState,
        gpus: tuple[int, ...],
        cpu_milli: int | None,
        memory_mib: int | None,
    ) -> None:
        """The job keeps `gpus` and holds the new CPU/memory amount on their nodes, or raise."""
        ledger = self._ledger
        index = state.spec.index
        held = ledger.reserved.get(index)
        if state.gpus and state not in self._before:
            self._before[state] = held
        demands = ledger.node_demands(state.spec, gpus, cpu_milli, memory_mib)
        if {node: amount for node, amount in demands.items() if amount != (0, 0)} == (held or {}):
            return
        try:
            ledger.rereserve(index, demands)
        except SchedulingError as error:
            raise SchedulingError(f"job {state.job_id!r} cannot be re-sized: {error}") from None

    def _take(
        self,
        state: JobState,
        gpus: tuple[int, ...],
        pack: bool,
        cpu_milli: int | None = None,
        memory_mib: int | None = None,
    ) -> None:
        """Take `gpus` (and the job's CPU/memory on their nodes) in the ledger, or raise."""
        spec = state.spec
        ledger = self._ledger
        vc = spec.vc
        if (
            vc is not None
            and vc in ledger.vc_quota
            and not ledger.fits_quota(vc, len(gpus) * spec.gpu_milli / 1000)
        ):
            quota = ledger.vc_quota[vc]
            raise SchedulingError(
                f"job {state.job_id!r} would take VC {vc!r} past its quota of {quota} GPUs"
            )
        if ledger.tracks_resources and (
            spec.cpu_milli or spec.memory_mib or cpu_milli is not None or memory_mib is not None
        ):
            demands = ledger.node_demands(spec, gpus, cpu_milli, memory_mib)
            problem = ledger.shortfall(demands)
            if problem is not None:
                raise SchedulingError(f"job {state.job_id!r} cannot run there: {problem}")
            ledger.take(spec.index, gpus, spec.gpu_milli, vc, pack=pack, demands=demands)
        else:
            ledger.take(spec.index, gpus, spec.gpu_milli, vc, pack=pack)

    def __delitem__(self, job: object) -> None:
        if type(job) is JobState and job.status != FINISHED:
            # A whole-GPU job while nothing is packed and no CPU/memory is accounted: what
            # the general path below does, without its calls (a preemption's hot path).
            current = self._changed.get(job, job.gpus)
            spec = job.spec
            ledger = self._ledger
            if (
                current
                and spec.gpu_milli == WHOLE
                and not ledger.tracks_resources
                and not ledger.reserved
                and not ledger.packed_jobs
            ):
                ledger._give_back_whole(spec.index, current, spec.vc)
                self._changed[job] = ()
                self._jobs.waiting(job, waits=True)
                return
        state = self._state(job)
        current = self._current(state)
        if not current:
            raise KeyError(job)
        if self._ledger.tracks_resources and state.gpus and state not in self._before:
            self._before[state] = self._ledger.reserved.get(state.spec.index)
        self._ledger.give_back(state.spec.index, current, state.spec.gpu_milli, state.spec.vc)
        self._set(state, current, ())

    def __iter__(self) -> Iterator[object]:
        for state in self._jobs.running.values():
            if self._changed.get(state, state.gpus):
                yield state.job_id
        for state, gpus in self._changed.items():
            if gpus and not state.gpus:
                yield state.job_id

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def replace_all(self, answer: Mapping[object, tuple[int, ...]]) -> None:
        """Make `answer` the whole allocation: free what changes first, then assign."""
        desired = {self._state(job): tuple(int(g) for g in gpus) for job, gpus in answer.items()}
        holders = list(self._jobs.running.values()) + list(self._changed)
        for state in holders:
            current = self._current(state)
            if current and desired.get(state) != current:
                spec = state.spec
                if self._ledger.tracks_resources and state.gpus and state not in self._before:
                    self._before[state] = self._ledger.reserved.get(spec.index)
                self._ledger.give_back(spec.index, current, spec.gpu_milli, spec.vc)
                self._set(state, current, ())
        for state, gpus in desired.items():
            if gpus:
                self[state] = gpus

    def changes(self) -> list[tuple[JobState, tuple[int, ...], tuple[int, ...]]]:
        """(job, old GPUs, new GPUs) for every job whose GPUs differ, in job order; a running
        job that keeps its GPUs but holds another CPU/memory amount comes with old == new."""
        if not self._changed and not self._before:
            return []
        out = [(s, s.gpus, g) for s, g in self._changed.items() if g != s.gpus]
        if self._before:
            # The engine asks once per call, at its end: what was held before ends with it.
            before_call, self._before = self._before, {}
            reserved = self._ledger.reserved
            for s, before in before_call.items():
                if (
                    s.gpus
                    and self._changed.get(s, s.gpus) == s.gpus
                    and reserved.get(s.spec.index) != before
                ):
                    out.append((s, s.gpus, s.gpus))
        if len(out) > 1:
            out.sort(key=lambda change: change[0].spec.index)
        return out
