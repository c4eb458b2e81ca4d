"""`ClusterView`: everything a policy may read, and nothing it may change.

The view is built from the run's ledger, job index and clock, the estimator and the
overhead model — never from the simulator or the true throughput model. What a policy sees
of a job is its spec, its progress and what the estimator says; the rate the engine really
advances it at stays with the engine (`JobState._rate`, private).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

import numpy as np

from dlsched.cluster import Cluster, type_key
from dlsched.engine.allocation import Allocation
from dlsched.engine.ledger import Ledger, Pool
from dlsched.engine.placement import (
    POOL_ONLY,
    JobPlacer,
    JobStrategy,
    PlacementContext,
    Placer,
    consolidated,
    fraction,
    fraction_fitting,
    get_placer,
    is_job_aware,
    place_fitting,
)
from dlsched.engine.state import Clock, JobIndex
from dlsched.errors import ConfigError, SchedulingError, UnknownModelError
from dlsched.jobs import RUNNING, JobSpec, JobState
from dlsched.overheads import OverheadModel
from dlsched.perf.estimator import OracleEstimator
from dlsched.perf.rates import checked_rate


class ClusterView:
    """Read-only state at a scheduling point: time, jobs, free GPUs, estimator, helpers.

    `rng` is the policy's own random stream for this run (spawned from the run's seed): every
    random choice a policy makes comes from it, so `simulate(seed=...)` reaches policies."""

    def __init__(
        self,
        cluster: Cluster,
        ledger: Ledger,
        jobs: JobIndex,
        clock: Clock,
        estimator: OracleEstimator,
        overheads: OverheadModel,
        rng: np.random.Generator,
        wake: Callable[[float], None],
    ) -> None:
        self.cluster: Cluster = cluster
        self.estimator: OracleEstimator = estimator
        self.overheads: OverheadModel = overheads
        self.rng: np.random.Generator = rng
        self.pending: Mapping[object, JobState] = MappingProxyType(jobs.pending)
        self.running: Mapping[object, JobState] = MappingProxyType(jobs.running)
        self.gpu_types: tuple[str, ...] = tuple(sorted(cluster.gpu_types))
        self._type_keys = frozenset(self.gpu_types)
        self._ledger = ledger
        self._jobs = jobs
        self._clock = clock
        self._wake = wake
        self._alloc: Allocation | None = None
        self._reused: Allocation | None = None
        self._ranked: dict[object, tuple[str, ...]] = {}
        # `rank_types` of each of the run's specs, by index (None: not asked yet)
        self._ranked_at: list[tuple[str, ...] | None] = [None] * len(jobs.states)
        self._owning_vcs = ledger.owning_vcs
        # per pool placer: (pool, GPUs) → the pool's epoch when that placement failed
        self._failed: dict[object, dict[tuple[Pool, int], int]] = {}
        # The run's specs by index (a `JobStates`' list; None for a plain list of states), and
        # per index the (pool, GPUs) keys `place` tries for a rigid whole-GPU job without a
        # quota or CPU/memory demand, fastest type first (None: not asked yet; False: the job
        # takes the general path). Jobs of one kind share one tuple.
        self._specs: list[JobSpec] | None = getattr(jobs.states, "specs", None)
        self._n_specs = 0 if self._specs is None else len(self._specs)
        # (strategy, its pool placer, its failures) of `place`'s last pool-placer strategy
        self._fast: tuple[object, Placer, dict[tuple[Pool, int], int]] | None = None
        self._routes: list[tuple[tuple[Pool, int], ...] | bool | None] = [None] * len(jobs.states)
        self._route_of: dict[tuple, tuple[tuple[Pool, int], ...]] = {}
        self._route_pools: dict[int, tuple[Pool, ...]] = {}  # id(route) → its pools
        self._job_placers: dict[JobStrategy, JobPlacer] = {}  # built for this run, at first use
        # strategy (name or object) → (placer, whether job-aware), looked up once per run
        self._strategies: dict[object, tuple[Placer | JobStrategy, bool]] = {}

    @property
    def now(self) -> float:
        """The current simulated time in seconds."""
        return self._clock.now

    @property
    def is_round(self) -> bool:
        """Whether a round tick is part of this scheduling call."""
        return self._clock.is_round

    def wake_at(self, when: float) -> None:
        """Ask for a scheduling call at simulated time `when`, even if nothing else happens
        then (Tiresias' demotions and promotions). Times not in the future, and infinity
        (never), are ignored; NaN or anything but a number is a `SchedulingError`."""
        self._wake(when)

    def allocation(self) -> Allocation:
        """The allocation to modify and return (one per scheduling call)."""
        if self._alloc is None:
            raise SchedulingError("view.allocation() is only available inside schedule()")
        return self._alloc

    def _open_call(self) -> Allocation:
        """(Engine) start a scheduling call: an allocation with no changes on the current one
        (one object per run, emptied at each call: it holds only the call's changes)."""
        alloc = self._reused
        if alloc is None:
            alloc = self._reused = Allocation(self._ledger, self._jobs, self._clock)
        else:
            alloc._changed = {}
        self._alloc = alloc
        return alloc

    def _close_call(self) -> None:
        self._alloc = None

    def min_pending_demand(self) -> int:
        """The smallest GPU request among jobs without GPUs, counting this call's changes
        (0 when none wait): when fewer GPUs are free, no waiting job can start."""
        return self._jobs.min_demand()

    def free_gpus_on_node(self, node: int) -> tuple[int, ...]:
        """Free GPU ids of one node, sorted (within this call, after the policy's changes)."""
        return tuple(self._ledger.node_free[node])

    def node_present(self, node: int) -> bool:
        """Whether a node is there now (False for a rented instance not acquired or still
        starting: `dlsched.engine.availability`); an absent node has no free GPU."""
        return node not in self._ledger.absent_nodes

    def jobs_on_gpu(self, gpu: int) -> list[JobState]:
        """The jobs holding a GPU (two when packed, several with fractions), this call's changes
        included."""
        states = self._jobs.states
        return [states[i] for i in self._ledger.occupants(gpu)]

    def observed_rate(self, job: JobState) -> float | None:
        """Steps/s the running job has made since its current stint's overhead ended, as a
        job's own progress counter would show it; None before any progress was measured."""
        if job.status != RUNNING:
            return None
        since = max(job.progress_from, job.credited_at)
        now = self._clock.now
        if now <= since:
            return None
        return (job.steps_done_at(now) - job.steps_done) / (now - since)

    def free_gpus(self, gpu_type: str | None = None) -> int:
        """Free GPUs now (within this call, after the policy's own changes)."""
        ledger = self._ledger
        if gpu_type is None:
            return ledger.free_total
        return ledger.free_by_type.get(type_key(gpu_type), 0)

    def free_by_type(self) -> dict[str, int]:
        """Free GPUs per type key."""
        return dict(self._ledger.free_by_type)

    def gpu_type_of(self, gpu: int) -> str:
        """The type key of a GPU id (of a host slot: its node's GPU type)."""
        return self._ledger.gpu_type[gpu]

    def node_of(self, gpu: int) -> int:
        """The node index of a GPU id or a host slot. The cluster's `gpu_node` and
        `gpu_type_of` cover GPU ids only: a running job without GPUs holds a host slot past
        them (`host_slot`), so read a job's node and type through the view."""
        return self._ledger.gpu_node[gpu]

    def pool(self, job: JobSpec, gpu_type: str) -> Pool:
        """Where the job may take GPUs of a type: its VC's own nodes if its VC owns nodes,
        else the nodes no VC owns."""
        vc = job.vc if job.vc in self._owning_vcs else None
        return (gpu_type if gpu_type in self._type_keys else type_key(gpu_type), vc)

    def pool_of_gpu(self, gpu: int) -> Pool:
        """The pool a GPU belongs to."""
        return self._ledger.pool_of(gpu)

    def rank_types(self, job: JobSpec) -> tuple[str, ...]:
        """GPU types the job may use and run on, fastest first by the estimator (ties: name).

        A type is left out when the job's `gpu_constraint` excludes it, when its pool has
        fewer GPUs than the job needs (its `min_gpus` when elastic), or when the estimated
        throughput there is 0."""
        key = (
            (job.model, job.num_gpus, job.min_gpus, job.vc, job.gpu_constraint)
            if job.type_durations is None
            else job.index
        )
        ranked = self._ranked.get(key)
        if ranked is None:
            capacity = self._ledger.pool_capacity
            allowed = job.gpu_constraint
            rates = []
            for gpu_type in self.gpu_types:
                if allowed is not None and gpu_type not in allowed:
                    continue
                fewest = job.gpu_range[0]  # an elastic job may run on fewer than it asked
                if capacity.get(self.pool(job, gpu_type), 0) < fewest:
                    continue
                n_gpus = min(job.num_gpus, max(fewest, capacity.get(self.pool(job, gpu_type), 0)))
                try:
                    rate = checked_rate(
                        self.estimator.throughput(job, gpu_type, n_gpus),
                        self.estimator,
                        job.job_id,
                        job.model,
                        gpu_type,
                        n_gpus,
                        "estimated rate",
                    )
                except UnknownModelError:
                    rate = 0.0
                if rate > 0:
                    rates.append((-rate, gpu_type))
            ranked = self._ranked[key] = tuple(t for _, t in sorted(rates))
        return ranked

    def pool_capacity(self) -> dict[Pool, int]:
        """GPUs per pool (GPU type, owning VC or None), busy or not."""
        return dict(self._ledger.pool_capacity)

    def free_gpus_for_vc(self, vc: str | None, gpu_type: str | None = None) -> int:
        """Free GPUs the jobs of a VC could take now: its own nodes' (or the unowned ones'),
        capped by what its quota leaves."""
        ledger = self._ledger
        owner = vc if vc in self._owning_vcs else None
        free_by_pool = ledger.free_by_pool
        if gpu_type:
            key = gpu_type if gpu_type in self._type_keys else type_key(gpu_type)
            free = free_by_pool.get((key, owner), 0)
        else:
            free = 0
            for t in self.gpu_types:
                free += free_by_pool.get((t, owner), 0)
        if vc in ledger.vc_quota:
            free = min(free, int(ledger.quota_left(vc) + 1e-9))  # type: ignore[operator]
        return free

    def fits_quota(self, job: JobSpec, n_gpus: int | None = None) -> bool:
        """Whether the job's VC quota (if any) leaves room for it now."""
        n = job.num_gpus if n_gpus is None else n_gpus
        return self._ledger.fits_quota(job.vc, n * job.gpu_milli / 1000)

    def free_resources(self, node: int) -> tuple[int | None, int | None]:
        """(milli-CPUs, MiB) free on `node` now, this call's changes included; None for a
        resource no node declares (`UNLIMITED` for a node that declares none of it)."""
        ledger = self._ledger
        cpu_free, mem_free = ledger.cpu_free, ledger.mem_free
        return (
            None if cpu_free is None else cpu_free[node],
            None if mem_free is None else mem_free[node],
        )

    def fits_resources(
        self, job: JobSpec | JobState, gpus: tuple[int, ...], *, idle: bool = False
    ) -> bool:
        """Whether the nodes of `gpus` have room now for the job's CPU and memory demand
        (always, when no node declares them or the job demands none); with `idle`, whether
        they would have once every other job left them (their whole capacity).

        For a job that holds GPUs now (this call's changes included), what it holds is
        counted as free: the question is whether moving, growing or shrinking it to `gpus`
        would fit, as `Allocation` gives its old GPUs back before taking new ones. A policy
        that picks GPU ids itself asks this before assigning them, and treats a no like GPUs
        that are busy (`place` does this itself)."""
        spec = job.spec if isinstance(job, JobState) else job
        ledger = self._ledger
        if not ledger.tracks_resources or not (spec.cpu_milli or spec.memory_mib):
            return True
        demands = ledger.node_demands(spec, gpus)
        if idle:
            cpu_cap, mem_cap = ledger.cpu_capacity, ledger.mem_capacity
            return all(
                (cpu_cap is None or cpu <= cpu_cap[node])
                and (mem_cap is None or mem <= mem_cap[node])
                for node, (cpu, mem) in demands.items()
            )
        held = ledger.reserved.get(spec.index)
        if held:
            demands = {
                node: (cpu - held.get(node, (0, 0))[0], mem - held.get(node, (0, 0))[1])
                for node, (cpu, mem) in demands.items()
            }
        return ledger.shortfall(demands) is None

    def place(
        self,
        job: JobSpec | JobState,
        gpu_type: str | None = None,
        strategy: str | Placer | JobStrategy = "consolidated",
        n_gpus: int | None = None,
    ) -> tuple[int, ...] | None:
        """GPU ids for the job on free GPUs of one type, or None if it does not fit now.

        With no `gpu_type`, types are tried fastest first (`rank_types`). VC ownership and
        quotas, GPU-type constraints, fractional GPUs and, where nodes account them, the
        job's CPU and memory demands are honoured here, so every policy that places through
        the view respects them. A job-aware `strategy` (``fgd`` and the other GPU-sharing
        strategies, `dlsched.engine.sharing`) is given the job and all its types at once;
        a pool placer (``consolidated``, ``best_fit``, ...) is tried type by type, and a
        fractional job then takes the fullest shared GPU it fits on (`fraction`).
        `strategy` is a registered name (`dlsched.engine.placement.STRATEGIES`) or a strategy
        object of either kind (`sharing.FGDWith(...)`, say).

        A job that asks for no GPU (CPU and/or memory only) gets one host slot
        (`host_slot`) of a node with room for its demand: a job-aware strategy chooses the
        node as it scores one (`n_gpus` 0), a pool placer, which sees only free GPUs, takes
        the lowest-index node with room (first fit).
        """
        if gpu_type is None and n_gpus is None and job.__class__ is JobState:
            # The common case, a run's rigid whole-GPU job with nothing but GPUs to place:
            # the answer of the general path below, from the job's precomputed pools.
            spec = job.spec
            index = spec.index
            if index < self._n_specs and self._specs[index] is spec:  # type: ignore[index]
                route = self._routes[index]
                if route is None:
                    route = self._route(spec)
                fast = self._fast  # the last strategy's pool placer and failures
                if fast is None or fast[0] is not strategy:
                    resolved = self._strategies.get(strategy) or self._resolve(strategy)
                    placer = resolved[0]
                    fast = None
                    if placer in POOL_ONLY:
                        failed = self._failed.get(placer)
                        if failed is None:
                            failed = self._failed[placer] = {}
                        fast = self._fast = (strategy, placer, failed)
                if route is not False and fast is not None:
                    _, placer, failed = fast
                    ledger = self._ledger
                    free_by_pool, epoch = ledger.free_by_pool, ledger.pool_epoch
                    n = spec.num_gpus
                    for key in route:  # type: ignore[union-attr]
                        pool = key[0]
                        if free_by_pool[pool] < n:
                            continue
                        seen = epoch[pool]
                        if failed.get(key) == seen:
                            continue  # failed before, and the pool's GPUs are the same
                        gpus = None
                        if placer is consolidated:
                            # `consolidated(ledger, n, pool)`'s first case, inlined: the
                            # fewest free GPUs >= n on one node, that node's lowest ones
                            buckets = ledger.buckets[pool]
                            for free in range(n, len(buckets)):
                                bucket = buckets[free]
                                if bucket:
                                    gpus = tuple(ledger.node_free[min(bucket)][:n])
                                    break
                            else:  # no single node holds them: spread over several
                                gpus = placer(ledger, n, pool)
                        else:
                            gpus = placer(ledger, n, pool)
                        if gpus is None:
                            failed[key] = seen
                            continue
                        if self._alloc is not None:  # see `Allocation.__setitem__`
                            self._alloc._placed = (spec, gpus)
                        return gpus
                    return None
        spec = job.spec if isinstance(job, JobState) else job
        n = spec.num_gpus if n_gpus is None else n_gpus
        if not spec.num_gpus:
            return self._place_without_gpus(spec, gpu_type, strategy)
        ledger = self._ledger
        vc = spec.vc
        if vc is not None and vc in ledger.vc_quota:
            if not ledger.fits_quota(vc, n * spec.gpu_milli / 1000):
                return None
            owner = vc if vc in self._owning_vcs else None
        else:
            owner = vc if vc is not None and vc in self._owning_vcs else None
        if gpu_type is None:
            index = spec.index
            ranked_at = self._ranked_at
            if 0 <= index < len(ranked_at) and self._jobs.states[index].spec is spec:
                types = ranked_at[index]
                if types is None:
                    types = ranked_at[index] = self.rank_types(spec)
            else:  # not one of the run's specs (a policy's own copy): no shortcut
                types = self.rank_types(spec)
        else:
            types = (gpu_type if gpu_type in self._type_keys else type_key(gpu_type),)
        free_by_pool = ledger.free_by_pool
        if spec.gpu_milli >= 1000:
            for t in types:
                if free_by_pool.get((t, owner), 0) >= n:
                    break
            else:  # no pool has n free GPUs: no strategy can place the job (a cheap no)
                return None
        resolved = self._strategies.get(strategy) or self._resolve(strategy)
        placer, job_aware = resolved
        if job_aware:
            chosen = self._job_placer(placer)  # type: ignore[arg-type]
            return chosen.place(spec, n, [(t, owner) for t in types])
        pool_placer: Placer = placer  # type: ignore[assignment]
        if ledger.tracks_resources and (spec.cpu_milli or spec.memory_mib):
            for t in types:
                pool = (t, owner)
                if pool not in ledger.buckets:  # no GPU of this type is this owner's
                    continue
                if spec.gpu_milli < 1000:
                    gpus = fraction_fitting(ledger, spec, pool)
                elif free_by_pool.get(pool, 0) >= n:
                    gpus = place_fitting(ledger, spec, n, pool, pool_placer)
                else:
                    continue
                if gpus is not None:
                    return gpus
            return None
        for t in types:
            pool = (t, owner)  # self.pool(spec, t), inlined: this runs for every try
            if spec.gpu_milli < 1000:
                gpus = fraction(ledger, spec.gpu_milli, pool)
            elif free_by_pool.get(pool, 0) >= n:
                gpus = self._whole(ledger, n, pool, pool_placer)
                if (
                    gpus is not None
                    and self._alloc is not None
                    and pool_placer in POOL_ONLY
                    and n == spec.num_gpus
                    and spec.gpu_milli == 1000
                    and spec.min_gpus is None
                    and spec.max_gpus is None
                    and (gpu_type is None or spec.gpu_constraint is None)
                ):  # right for the job by construction (`Allocation.__setitem__` trusts it)
                    self._alloc._placed = (spec, gpus)
            else:
                continue
            if gpus is not None:
                return gpus
        return None

    def _route(self, spec: JobSpec) -> tuple[tuple[Pool, int], ...] | bool:
        """The (pool, GPUs) keys `place`'s fast path tries for the job, or False when the
        job takes the general path (a fraction, an elastic job, a VC quota, CPU/memory)."""
        ledger = self._ledger
        vc = spec.vc
        if (
            not spec.num_gpus
            or spec.gpu_milli != 1000
            or spec.min_gpus is not None
            or spec.max_gpus is not None
            or (vc is not None and vc in ledger.vc_quota)
            or (ledger.tracks_resources and (spec.cpu_milli or spec.memory_mib))
        ):
            self._routes[spec.index] = False
            return False
        n = spec.num_gpus
        # (rank_types' key, less what such a job cannot have: its types follow from it)
        kind = (spec.model, n, vc, spec.gpu_constraint) if spec.type_durations is None else None
        route = self._route_of.get(kind) if kind is not None else None
        if route is None:
            types = self._ranked_at[spec.index]
            if types is None:
                types = self._ranked_at[spec.index] = self.rank_types(spec)
            owner = vc if vc is not None and vc in self._owning_vcs else None
            route = self._route_of.get((types, owner, n))
            if route is None:
                route = self._route_of[(types, owner, n)] = tuple(((t, owner), n) for t in types)
            if kind is not None:
                self._route_of[kind] = route
        self._routes[spec.index] = route
        return route

    def host_slot(self, node: int) -> tuple[int]:
        """The allocation that places a job without GPUs on `node`: ``alloc[job] =
        view.host_slot(node)`` (one id past the GPU ids; see `dlsched.engine.ledger`)."""
        if not 0 <= node < len(self.cluster.nodes):
            raise SchedulingError(
                f"node {node} does not exist (cluster {self.cluster.name!r} has "
                f"{len(self.cluster.nodes)} nodes)"
            )
        return (self._ledger.host_slot(node),)

    def host_fits_at(
        self, job: JobSpec | JobState, ends: Iterable[tuple[float, JobState]]
    ) -> float:
        """When a job without GPUs could start if the jobs holding CPU and memory leave at
        the given times: the first time of `ends` ((time, job), in time order; the running
        jobs and those this call started) by which a node it may use (as `place` would:
        its GPU-type constraint's pools, of its VC's nodes) has room for its CPU and memory,
        each earlier job's hold given back; `now` when one has room now, inf when none
        ever has (EASY backfilling's shadow time for such a head, `policies.fifo`)."""
        spec = job.spec if isinstance(job, JobState) else job
        ledger = self._ledger
        allowed = set(self._host_pools(spec, None))
        nodes = [node for node, pool in enumerate(ledger.node_pool) if pool in allowed]
        cpu, mem = spec.cpu_milli, spec.memory_mib
        if any(ledger.fits_resources(node, cpu, mem) for node in nodes):
            return self.now
        cpu_free = list(ledger.cpu_free) if ledger.cpu_free is not None else None
        mem_free = list(ledger.mem_free) if ledger.mem_free is not None else None
        wanted = set(nodes)
        for end, holder in ends:
            held = ledger.reserved.get(holder.spec.index)
            if not held:
                continue
            for node, (c, m) in held.items():
                if cpu_free is not None:
                    cpu_free[node] += c
                if mem_free is not None:
                    mem_free[node] += m
                if (
                    node in wanted
                    and (cpu_free is None or cpu_free[node] >= cpu)
                    and (mem_free is None or mem_free[node] >= mem)
                ):
                    return max(end, self.now)
        return float("inf")

    def _host_pools(self, spec: JobSpec, gpu_type: str | None) -> list[Pool]:
        """The pools whose nodes a job without GPUs may use: `gpu_type`'s, else those its
        GPU-type constraint allows (every type's without one), of its VC's nodes when its
        VC owns nodes, else of the nodes no VC owns."""
        vc = spec.vc
        owner = vc if vc is not None and vc in self._owning_vcs else None
        if gpu_type is not None:
            types: tuple[str, ...] = (
                gpu_type if gpu_type in self._type_keys else type_key(gpu_type),
            )
        elif spec.gpu_constraint is not None:
            types = tuple(t for t in self.gpu_types if t in spec.gpu_constraint)
        else:
            types = self.gpu_types
        return [(t, owner) for t in types if (t, owner) in self._ledger.pool_capacity]

    def _place_without_gpus(
        self, spec: JobSpec, gpu_type: str | None, strategy: str | Placer | JobStrategy
    ) -> tuple[int, ...] | None:
        """`place` for a job that asks for no GPU: a host slot of a node with room for its
        CPU and memory, in the pools it may use (`gpu_type`'s, else every type's)."""
        ledger = self._ledger
        if not ledger.tracks_resources:
            raise ConfigError(
                f"job {spec.job_id!r} asks for no GPU, only CPU/memory, but no node of cluster "
                f"{self.cluster.name!r} declares CPUs or memory (cpus/host_memory_gb): give "
                "its nodes those capacities"
            )
        pools = self._host_pools(spec, gpu_type)
        resolved = self._strategies.get(strategy) or self._resolve(strategy)
        placer, job_aware = resolved
        if job_aware:
            return self._job_placer(placer).place(spec, 0, pools)  # type: ignore[arg-type]
        allowed = set(pools)
        cpu, mem = spec.cpu_milli, spec.memory_mib
        fits, node_pool = ledger.fits_resources, ledger.node_pool
        for node in range(len(node_pool)):
            if node_pool[node] in allowed and fits(node, cpu, mem):
                return (ledger.host_slot(node),)
        return None

    def waiting_pools(
        self, job: JobSpec | JobState, strategy: str | Placer | JobStrategy = "consolidated"
    ) -> tuple[Pool, ...] | None:
        """The pools whose freed GPUs could let `place(job, strategy=strategy)` succeed
        where it fails now: while none of them gives GPUs back, it keeps failing. None when
        something else could change the answer (a VC quota, CPU or memory demands, a
        fraction, an elastic job, a strategy that is not a built-in pool placer)."""
        if job.__class__ is JobState:  # a run's job placed by `place`'s fast path: its pools
            spec = job.spec
            index = spec.index
            fast = self._fast
            if (
                fast is not None
                and fast[0] is strategy
                and index < self._n_specs
                and self._specs[index] is spec  # type: ignore[index]
            ):
                route = self._routes[index]
                if route:
                    pools = self._route_pools.get(id(route))  # (routes live as long as the view)
                    if pools is None:
                        pools = self._route_pools[id(route)] = tuple(key[0] for key in route)  # type: ignore[union-attr]
                    return pools
        spec = job.spec if isinstance(job, JobState) else job
        if spec.gpu_milli < 1000 or spec.min_gpus is not None or spec.max_gpus is not None:
            return None
        ledger = self._ledger
        vc = spec.vc
        if vc is not None and vc in ledger.vc_quota:
            return None
        if ledger.tracks_resources and (spec.cpu_milli or spec.memory_mib):
            return None
        resolved = self._strategies.get(strategy)  # filled by `place`
        found = (
            resolved[0]
            if resolved is not None
            else (get_placer(strategy) if isinstance(strategy, str) else strategy)
        )
        if found not in POOL_ONLY:
            return None
        owner = vc if vc is not None and vc in self._owning_vcs else None
        index = spec.index
        types = None
        if 0 <= index < len(self._ranked_at) and self._jobs.states[index].spec is spec:
            types = self._ranked_at[index]  # as `place` found them
        if types is None:
            types = self.rank_types(spec)
        return tuple((t, owner) for t in types)

    def _resolve(self, strategy: str | Placer | JobStrategy) -> tuple[Placer | JobStrategy, bool]:
        """A strategy's placer and whether it is job-aware, found once per run."""
        found = get_placer(strategy) if isinstance(strategy, str) else strategy
        resolved = self._strategies[strategy] = (found, is_job_aware(found))
        return resolved

    def _job_placer(self, strategy: JobStrategy) -> JobPlacer:
        """The run's placer of a job-aware strategy (built at its first use in the run)."""
        placer = self._job_placers.get(strategy)
        if placer is None:
            states = self._jobs.states
            # the specs, not the states: reading a `JobStates` entry makes that job's state
            specs = getattr(states, "specs", None)
            if specs is None:
                specs = [state.spec for state in states]
            context = PlacementContext(self._ledger, tuple(specs), self.rng)
            placer = self._job_placers[strategy] = strategy(context)
        return placer

    def _whole(self, ledger: Ledger, n: int, pool: Pool, placer: Placer) -> tuple[int, ...] | None:
        """`n` whole GPUs of `pool` by `placer`. A built-in placer's answer depends only
        on the pool's free GPUs, so a failure is remembered until the pool's GPUs change
        (YARN's waits when GPUs are free but spread over nodes)."""
        if placer not in POOL_ONLY:
            return placer(ledger, n, pool)
        failed = self._failed.get(placer)
        if failed is None:
            failed = self._failed[placer] = {}
        key = (pool, n)
        epoch = ledger.pool_epoch[pool]
        if failed.get(key) == epoch:
            return None
        gpus = placer(ledger, n, pool)
        if gpus is None:
            failed[key] = epoch
        return gpus
