"""Gandiva: introspective cluster scheduling for deep learning (Xiao et al., "Gandiva:
Introspective Cluster Scheduling for Deep Learning", OSDI 2018), as restated in
`../shared/notes/policies.md` §3 (section numbers below are that note's).

Faithful:
- Affinity placement by job size (reactive mode, §3.4). A server (node) takes the affinity
  of the size of the first job placed on it and loses it when it empties. A new job of k
  GPUs goes 1. to the least-loaded server of affinity k with k free GPUs, else 2. to an
  empty server (which takes affinity k), else 3. to free GPUs anywhere (one server of
  another affinity, or spread over servers, fixed later by migration), else 4. it
  over-subscribes the least-loaded server of affinity k (time-slicing), else 5. it queues
  (FIFO; re-placed when a job leaves). GPUs freed on a server go first to the jobs waiting
  there, then to queued jobs, then to jobs waiting on other servers of the pool.
- Time-slicing (suspend/resume, §3.3.1). The jobs homed on an over-subscribed server take
  turns: every quantum (60 s, the paper's "60 s subtasks") each waiting job, longest-waiting
  first, displaces the running job of its server that has run longest since it last
  resumed, if that job has run a whole quantum. A suspended job resumes as soon as GPUs of
  its server free up (work-conserving). Suspension is `del alloc[job]`; every resume pays
  the restart cost of the overhead model (the `gandiva` preset: 1 s), a first start nothing.
- Packing, only under overload and only where memory fits (§3.3.2): on a server with
  waiting jobs, a waiting job may share the GPUs of a running job of the same size (the
  engine's space sharing, at the throughput model's measured pair rates: Gavel's table, or
  Lucid's measured slowdowns through `dlsched.perf.colocation.LucidColocation`). Memory
  fits when the model gives the pair a positive rate both ways (Gavel and Lucid measured
  only pairs that fit). Packing is a trial, as in the paper: after a quantum, introspection
  compares the pair's observed rates, each normalised by the job's rate alone; unless their
  sum is above 1 (time-slicing gives each job half its rate: a sum of 1) the guest is
  suspended again (undo) and that pair of models is not tried again on that GPU type. One
  trial per server per quantum. A packed pair takes its time-slice turn as one. A guest
  moves to free GPUs of its server when some appear (a migration): alone beats any pair.
- Migration (§3.3.3). At each introspection a job spread over several servers moves onto
  one with room (its own GPUs there plus free ones), paying the migration cost (the
  `gandiva` preset: 4 s). If none has room and the estimator says the job runs faster
  consolidated, the server holding most of its GPUs is defragmented: jobs homed there move
  to free GPUs on other servers (each a migration).
- Grow-shrink of elastic jobs (`min_gpus`/`max_gpus`, §3.3.4). At an introspection, when
  nobody waits in its pool, an elastic job grows onto free GPUs of its server, up to
  `max_gpus`, to the count the estimator says is fastest, if that finishes it sooner even
  after the re-scaling cost; it shrinks back to its requested size as soon as a job waits.
- Introspection (undo of packing, consolidation, growing, §3.3.5) runs every quantum.

Simplified:
- The time-slice clock is global: quanta end at multiples of `quantum_s` (the engine's
  round), not 60 s after each resume; a job resumed mid-quantum keeps its GPUs until it has
  run a whole quantum. A turn also needs progress: a job whose resume overhead lasts a whole
  quantum or more keeps its GPUs until the first quantum end after its progress began (the
  paper's suspend/resume takes well under a second; without this rule, jobs would be
  suspended before they ever advanced and the run would never end).
- Only jobs that fit on one server are over-subscribed, time-sliced and packed. Jobs larger
  than a server, jobs asking for a fraction of a GPU and spread jobs not yet consolidated run
  on free GPUs when they fit (fewest servers) and are never suspended; a queued job larger
  than a server waits until whole servers free up (it may wait long under overload).
- GPU utilisation and memory are not modelled, so packing candidates are not sorted by
  utilisation (the paper's order): known-good pairs first, then the partner that has run
  longest. Observed rates are measured from each job's progress over its current stint
  (`view.observed_rate`), as Gandiva measures them; a pair in which one job has not made
  measurable progress yet (its resume overhead still runs) is judged at a later quantum.
  Rates alone come from the estimator (Gandiva profiles each job alone first). Pairs need equal
  GPU counts, as in Gavel's reimplementation (`scheduler/policies/gandiva.py`).
  `packing="profiled"` packs only pairs whose *predicted* normalised sum beats time-slicing
  (Gavel's reimplementation), still introspected; `packing="off"` never packs.
- Over-subscription is bounded: the jobs homed on a server ask for at most
  `oversubscription` × its GPUs (default 2, [I]; the paper is bounded by host memory, not
  modelled); beyond that, jobs queue.
- Under `throughput="duration"` nothing is known of pairs, of speed-up with more GPUs or of
  slow-down when spread: Gandiva then time-slices and consolidates spread jobs into free
  GPUs only — no packing, no growing, no defragmentation.

Defaults and sources: `quantum_s` = 60 s (§3.3.1); `pack_threshold` = 1 (§3.3.2: packing
must beat time-slicing; Gavel's reimplementation drops pairs with normalised throughput < 1);
`oversubscription` = 2 [I]; overheads: the `gandiva` preset (suspend/resume 1 s, migration
and re-scaling 4 s; [R] values, §3.3.1 and §3.3.3, see `dlsched.overheads`), which apply
unless the caller passes overheads.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque

from dlsched.engine.allocation import Allocation
from dlsched.engine.ledger import Pool
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobSpec, JobState
from dlsched.overheads import make_overheads
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

QUANTUM_S = 60.0
OVERSUBSCRIPTION = 2.0
PACK_THRESHOLD = 1.0
PACKING_MODES = ("trial", "profiled", "off")
#: Past this many models homed on one GPU type and count, packing trials run on that type
#: without checking first whether any two of them fit (a bound on those checks).
_MAX_PAIR_MODELS = 64
_EPS = 1e-6


class _Server:
    """Gandiva's view of one node: affinity and the jobs homed on it. Its free GPUs are the
    engine's (`view.free_gpus_on_node`), which already count this call's changes."""

    __slots__ = (
        "index",
        "pool",
        "gpu_type",
        "size",
        "affinity",
        "residents",
        "waiting",
        "load",
        "_free_on",
    )

    def __init__(self, index: int, pool: Pool, gpu_type: str, size: int, view: ClusterView) -> None:
        self.index = index
        self.pool = pool
        self.gpu_type = gpu_type
        self.size = size
        self.affinity: int | None = None  # job size the server is devoted to; None = empty
        self.residents: dict[JobState, None] = {}  # homed here, running or waiting
        self.waiting: dict[JobState, None] = {}  # residents suspended or not started, FIFO
        self.load = 0  # GPUs asked for by the residents (> size when over-subscribed)
        self._free_on = view.free_gpus_on_node

    @property
    def free(self) -> tuple[int, ...]:
        """Free GPU ids, sorted."""
        return self._free_on(self.index)

    def is_empty(self) -> bool:
        return not self.residents and len(self.free) == self.size

    def first_free(self, n: int) -> tuple[int, ...]:
        return self._free_on(self.index)[:n]

    def __repr__(self) -> str:
        return (
            f"_Server({self.index}, affinity={self.affinity}, free={len(self.free)}/"
            f"{self.size}, residents={len(self.residents)}, waiting={len(self.waiting)})"
        )


@register("gandiva")
class Gandiva(BasePolicy):
    """Gandiva: affinity placement, time-slicing, packing, migration, grow-shrink (OSDI 2018)."""

    name = "gandiva"
    default_overheads = make_overheads("gandiva")
    # Set by `start` (the run's view) and by each `schedule` call (its allocation).
    _view: ClusterView
    _alloc: Allocation

    def __init__(
        self,
        quantum_s: float = QUANTUM_S,
        oversubscription: float = OVERSUBSCRIPTION,
        packing: str = "trial",
        pack_threshold: float = PACK_THRESHOLD,
        migration: bool = True,
        grow_shrink: bool = True,
    ) -> None:
        super().__init__()
        if not quantum_s > 0:
            raise ValueError(f"gandiva: quantum_s must be > 0 seconds, got {quantum_s!r}")
        if not oversubscription >= 1:
            raise ValueError(
                "gandiva: oversubscription (jobs' GPUs per server GPU) must be "
                f">= 1, got {oversubscription!r}"
            )
        if packing not in PACKING_MODES:
            raise ValueError(
                f"gandiva: packing must be one of {', '.join(PACKING_MODES)}, not {packing!r}"
            )
        if not pack_threshold > 0:
            raise ValueError(f"gandiva: pack_threshold must be > 0, got {pack_threshold!r}")
        self.quantum_s = self.round_s = float(quantum_s)
        self.oversubscription = float(oversubscription)
        self.packing = packing
        self.pack_threshold = float(pack_threshold)
        self.migration = migration
        self.grow_shrink = grow_shrink

    # ---- a run begins -------------------------------------------------------------------
    def start(self, view: ClusterView) -> None:
        """Build the run's state: servers, affinities, queues, verdicts, statistics."""
        cluster = view.cluster
        self._view = view
        # What the policy did in the last run, for tests and reports.
        self.stats: Counter[str] = Counter()
        self._arrivals: list[JobState] = []
        self._servers = [
            _Server(
                node.index,
                view.pool_of_gpu(node.gpu_ids[0]),
                node.gpu_type,
                len(node.gpu_ids),
                view,
            )
            for node in cluster.nodes
        ]
        self._gpu_server = [self._servers[n] for n in cluster.gpu_node]
        self._node_gpus = [node.gpu_ids for node in cluster.nodes]
        self._pool_capacity = view.pool_capacity()
        self._pool_servers: dict[Pool, list[_Server]] = {}
        for server in self._servers:
            self._pool_servers.setdefault(server.pool, []).append(server)
        self._largest_server = {
            pool: max(s.size for s in servers) for pool, servers in self._pool_servers.items()
        }
        self._empty: dict[tuple[Pool, int], list[int]] = {}
        for server in self._servers:
            self._empty.setdefault((server.pool, server.size), []).append(server.index)
        self._empty_sizes = {
            pool: sorted({s.size for s in servers}) for pool, servers in self._pool_servers.items()
        }
        self._class: dict[tuple[Pool, int], set[_Server]] = {}
        # The GPUs the policy gave each job: the engine has cleared a finished job's GPUs by
        # the time `on_finish` runs, and Gandiva must know which servers they freed.
        self._gpus: dict[JobState, tuple[int, ...]] = {}
        self._home: dict[JobState, _Server] = {}
        self._base: dict[JobState, int] = {}
        self._run_since: dict[JobState, float] = {}
        self._spread: dict[JobState, None] = {}  # not homed, fits one server: consolidate
        self._elastic: dict[JobState, None] = {}  # elastic residents
        self._grown: dict[JobState, None] = {}
        self._pair: dict[JobState, JobState] = {}  # both directions
        self._guest: dict[JobState, tuple[JobState, float, tuple]] = {}  # guest → host, since
        self._verdict: dict[tuple, bool] = {}  # pair of models → packing helps
        self._fits: dict[tuple, bool] = {}
        self._queue: deque[JobState] = deque()
        self._waiting_servers: set[_Server] = set()
        # VC → servers where jobs of that VC wait, with how many (`_quota_freed`), kept for
        # the VCs in `_watched_vcs`
        self._vc_waiting: dict[str | None, Counter[_Server]] = {}
        self._dirty: set[_Server] = set()  # GPUs freed: offer them to waiting jobs
        self._touched: set[_Server] = set()  # may have emptied: check at the end of a call
        self._options_cache: dict[object, tuple[tuple[str, Pool, int], ...]] = {}
        self._capacity_changed = False
        self._colocated_query = _colocated_query(view.estimator)
        # Hot-path shortcuts (the answers of the view's own checks, known once per run):
        # `fits_quota` is always True for a VC without a quota, and packing needs pair rates.
        self._free_on = view.free_gpus_on_node
        self._quota_vcs = frozenset(vc.name for vc in cluster.vcs if vc.quota_gpus is not None)
        # A job of a VC without a quota waits only for GPUs (which `_freed` re-offers), unless
        # nodes declare CPU or memory: then it can wait for host room that comes back without
        # a whole GPU (a fraction leaves a shared GPU, a packed host leaves its guest), and a
        # release by its VC re-offers its server, as for a quota.
        self._watched_vcs: frozenset[str] | _EveryVc = (
            _EveryVc() if cluster.declares_cpus or cluster.declares_memory else self._quota_vcs
        )
        self._can_pack = self.packing != "off" and (
            getattr(view.estimator, "colocated_throughput", None) is not None
        )
        # (GPU type, GPUs) → models of the jobs ever homed on servers of that type with that
        # many GPUs, and the GPU types where two of them fit together: on a server of any
        # other type a packing trial finds no pair (under `duration`, none anywhere)
        self._homed_models: dict[tuple[str, int], dict[str | None, None]] = {}
        self._pack_types: set[str] = set()
        self._now = 0.0

    # ---- hooks --------------------------------------------------------------------------
    def on_arrival(self, job: JobState) -> None:
        self._arrivals.append(job)

    def on_finish(self, job: JobState) -> None:
        held = self._gpus.pop(job, ())
        self._freed(held)
        if held:
            self._quota_freed(job)
        self._unpair(job)
        server = self._home.pop(job, None)
        if server is not None:
            self._leave(server, job)
        for table in (self._spread, self._elastic, self._grown, self._run_since, self._base):
            table.pop(job, None)
        self._capacity_changed = True
        self._settle()

    # ---- the scheduling call ------------------------------------------------------------
    def schedule(self, view: ClusterView) -> Allocation:
        alloc = self._alloc = view.allocation()
        self._now = view.now
        if self._dirty:
            self._refill()  # freed GPUs go first to their servers' waiting jobs
        if self._queue and self._capacity_changed:
            self._retry_queue()
        for job in self._arrivals:
            if not self._place(job):
                self._queue.append(job)
        self._arrivals.clear()
        if self._grown and self._shrink():  # jobs wait: grown jobs give back what they took
            self._refill()
            if self._queue:
                self._retry_queue()
        if self._dirty:
            self._balance()
        if view.is_round:
            if self._guest:
                self._introspect_pairs()
            if self._waiting_servers:
                pack_types = self._pack_types  # (types where some pair fits)
                for server in sorted(self._waiting_servers, key=_index):
                    if server.gpu_type in pack_types:
                        self._try_pack(server)
                    self._rotate(server)
            if self.migration and self._spread:
                self._consolidate()
            if self.grow_shrink and self._elastic:
                self._grow()
            self._refill()
            if self._queue and self._capacity_changed:
                self._retry_queue()
            self._balance()
        if self._touched:
            self._settle()
        return alloc

    # ---- GPUs: the allocation, and the servers it frees ---------------------------------
    def _freed(self, gpus: tuple[int, ...], kept: tuple[int, ...] = ()) -> None:
        """A job let go of `gpus` (keeping `kept` of them): servers where one is now free
        (not still held by a packed partner) may hand it to a waiting job, and may have
        emptied. A GPU the job keeps counts too (it was given back and taken again)."""
        gpu_server, free_on, dirty, touched = (
            self._gpu_server,
            self._free_on,
            self._dirty,
            self._touched,
        )
        marked = last = None
        free: tuple[int, ...] = ()
        for gpu in gpus:
            server = gpu_server[gpu]
            if server is marked:
                continue  # (marked already: a job's GPUs on one server come in a row)
            if server is not last:
                last, free = server, free_on(server.index)
            if gpu in kept or gpu in free:
                dirty.add(server)
                touched.add(server)
                marked = server

    def _take(self, job: JobState, gpus: tuple[int, ...], pack: bool = False) -> None:
        """Give the job these GPUs (moving it if it holds others)."""
        old = self._gpus.get(job, ())
        if old == gpus:
            return
        if pack:
            self._alloc.pack(job, gpus)
        else:
            self._alloc[job] = gpus
        if old:
            self._freed(old, gpus)
        self._gpus[job] = gpus
        gpu_server = self._gpu_server
        for gpu in gpus:
            server = gpu_server[gpu]
            if server.affinity is None:  # (set below: each server of the job once)
                self._set_affinity(server, self._base.get(job, len(gpus)))

    def _quota_freed(self, job: JobState) -> None:
        """A job of a VC gave back GPUs: its VC's quota has room again, so servers where
        jobs of that VC wait retry them (their free GPUs may have freed earlier, while the
        quota was full, and no other event would offer those GPUs again)."""
        vc = job.spec.vc
        if vc in self._vc_waiting:
            self._dirty.update(self._vc_waiting[vc])

    def _add_waiting(self, server: _Server, job: JobState) -> None:
        """`job` waits on `server` (at the back of its FIFO)."""
        server.waiting[job] = None
        self._waiting_servers.add(server)
        vc = job.spec.vc
        if vc in self._watched_vcs:
            counts = self._vc_waiting.get(vc)
            if counts is None:
                counts = self._vc_waiting[vc] = Counter()
            counts[server] += 1

    def _remove_waiting(self, server: _Server, job: JobState) -> None:
        """`job` no longer waits on `server`."""
        del server.waiting[job]
        if not server.waiting:
            self._waiting_servers.discard(server)
        vc = job.spec.vc
        if vc in self._watched_vcs:
            self._unwait_vc(server, vc)

    def _unwait_vc(self, server: _Server, vc: str | None) -> None:
        """One job of `vc` fewer waits on `server`."""
        servers = self._vc_waiting[vc]
        servers[server] -= 1
        if not servers[server]:
            del servers[server]
            if not servers:
                del self._vc_waiting[vc]

    # ---- servers: affinity, residents, emptiness ----------------------------------------
    def _set_affinity(self, server: _Server, size: int) -> None:
        server.affinity = size
        self._class.setdefault((server.pool, size), set()).add(server)

    def _home_on(self, server: _Server, job: JobState, size: int, waiting: bool) -> None:
        self._home[job] = server
        self._base[job] = size
        server.residents[job] = None
        server.load += size
        if waiting:
            self._add_waiting(server, job)
        if server.affinity is None:
            self._set_affinity(server, size)
        if job.spec.elastic:
            self._elastic[job] = None
        if self._can_pack and server.gpu_type not in self._pack_types:
            self._learn_pairs(server.gpu_type, job.spec.model, size)

    def _learn_pairs(self, gpu_type: str, model: str | None, size: int) -> None:
        """A job of `model` on `size` GPUs of `gpu_type` is homed: if it fits with a job
        homed there before (or one of its own model), packing trials start on that type."""
        models = self._homed_models.setdefault((gpu_type, size), {})
        if model in models:
            return
        models[model] = None
        if len(models) > _MAX_PAIR_MODELS or any(
            self._pair_fits(model, other, gpu_type, size) for other in models
        ):
            self._pack_types.add(gpu_type)  # (too many models to check: always try)

    def _leave(self, server: _Server, job: JobState) -> None:
        """The job is no longer homed on `server`."""
        del server.residents[job]
        server.load -= self._base[job]
        if job in server.waiting:
            self._remove_waiting(server, job)
        self._elastic.pop(job, None)
        self._touched.add(server)

    def _settle(self) -> None:
        """Servers that emptied lose their affinity and become empty servers again."""
        if not self._touched:
            return
        for server in self._touched:
            if server.affinity is not None and server.is_empty():
                self._class[(server.pool, server.affinity)].discard(server)
                server.affinity = None
                heapq.heappush(self._empty[(server.pool, server.size)], server.index)
        self._touched.clear()

    def _empty_server(self, pool: Pool, size: int, job: JobState | None = None) -> _Server | None:
        """The lowest-numbered empty server of the pool with at least `size` GPUs (with
        `job`, one whose node also has room for the job's CPU and memory)."""
        room = self._view.fits_resources
        for server_size in self._empty_sizes.get(pool, ()):
            if server_size < size:
                continue
            heap = self._empty[(pool, server_size)]
            while heap:
                server = self._servers[heap[0]]
                if server.affinity is None and server.is_empty():
                    break
                heapq.heappop(heap)  # stale: the server has been used since
            else:
                continue
            if job is None or room(job, server.first_free(size)):
                return server
            # the lowest one lacks CPU/memory for the job: the next empty ones, in order
            for index in sorted(heap):
                server = self._servers[index]
                if (
                    server.affinity is None
                    and server.is_empty()
                    and room(job, server.first_free(size))
                ):
                    return server
        return None

    # ---- reactive placement (§3.4) ------------------------------------------------------
    def _options(self, spec: JobSpec) -> tuple[tuple[str, Pool, int], ...]:
        """(GPU type, pool, GPUs) to try, fastest type first; an elastic job asks for its
        request capped by the pool's size."""
        key = (
            (spec.model, spec.num_gpus, spec.min_gpus, spec.vc, spec.gpu_constraint)
            if spec.type_durations is None
            else spec.index
        )
        options = self._options_cache.get(key)
        if options is None:
            view = self._view
            out = []
            for gpu_type in view.rank_types(spec):
                pool = view.pool(spec, gpu_type)
                out.append((gpu_type, pool, min(spec.num_gpus, self._pool_capacity[pool])))
            options = self._options_cache[key] = tuple(out)
        return options

    def _place(self, job: JobState) -> bool:
        """Reactive placement of a new or queued job; False when it must queue."""
        view = self._view
        spec = job.spec
        if spec.fractional:
            gpus = view.place(job)
            if gpus is None:
                return False
            self._take(job, gpus)
            self._run_since[job] = self._now
            return True
        options = self._options(spec)
        if spec.vc in self._quota_vcs:
            options = tuple(o for o in options if view.fits_quota(spec, o[2]))
        room = view.fits_resources
        # `room` is asked only for a job with a CPU/memory demand (else it says yes)
        demands = bool(spec.cpu_milli or spec.memory_mib)
        free_on = self._free_on
        # Steps 1-3 need `size` free GPUs in the pool: not worth trying on a type that has
        # fewer free in all (a full cluster, the common case under overload).
        free_gpus = view.free_gpus
        roomy = [o for o in options if free_gpus(o[0]) >= o[2]]
        # 1. a server of the job's affinity with room: the least loaded
        for _, pool, size in roomy:
            best: _Server | None = None
            best_free = 0
            for server in self._class.get((pool, size), ()):
                free = free_on(server.index)
                n_free = len(free)
                if (
                    n_free >= size
                    and (
                        best is None
                        or n_free > best_free
                        or (n_free == best_free and server.index < best.index)
                    )
                    and (not demands or room(job, free[:size]))
                ):
                    best, best_free = server, n_free
            if best is not None:
                self._start_on(best, job, size)
                return True
        # 2. an empty server, which takes the job's affinity
        for _, pool, size in roomy:
            empty = self._empty_server(pool, size, job if demands else None)
            if empty is not None:
                self._start_on(empty, job, size)
                return True
        # 3. free GPUs anywhere: one server of another affinity, or spread (fixed later)
        for gpu_type, pool, size in roomy:
            gpus = view.place(spec, gpu_type=gpu_type, n_gpus=size)
            if gpus is None:
                continue
            servers = {self._gpu_server[g] for g in gpus}
            self._base[job] = size
            self._take(job, gpus)
            self._run_since[job] = self._now
            if len(servers) == 1:
                self._home_on(servers.pop(), job, size, waiting=False)
            elif size <= self._largest_server[pool]:
                self._spread[job] = None
            return True
        # 4. over-subscribe the least-loaded server of the job's affinity (time-slicing)
        for _, pool, size in options:
            best = None
            for server in self._class.get((pool, size), ()):
                if (
                    server.size >= size
                    and (server.load + size <= self.oversubscription * server.size + _EPS)
                    and (best is None or (server.load, server.index) < (best.load, best.index))
                    # a node too small for its CPU/memory demand would hold it forever
                    and (not demands or room(job, self._node_gpus[server.index][:size], idle=True))
                ):
                    best = server
            if best is not None:
                self._home_on(best, job, size, waiting=True)
                return True
        return False  # 5. queue

    def _start_on(self, server: _Server, job: JobState, size: int) -> None:
        self._base[job] = size
        self._take(job, server.first_free(size))
        self._run_since[job] = self._now
        self._home_on(server, job, size, waiting=False)

    def _retry_queue(self) -> None:
        """Queued jobs in FIFO order; a job like one that just failed is not retried."""
        self._capacity_changed = False
        failed: set[object] = set()
        kept: deque[JobState] = deque()
        for job in self._queue:
            spec = job.spec
            key = (
                (
                    spec.model,
                    spec.num_gpus,
                    spec.min_gpus,
                    spec.vc,
                    spec.gpu_constraint,
                    spec.gpu_milli,
                    spec.cpu_milli,
                    spec.memory_mib,
                )
                if spec.type_durations is None
                else spec.index
            )
            if key in failed or not self._place(job):
                failed.add(key)
                kept.append(job)
        self._queue = kept

    # ---- suspend / resume ---------------------------------------------------------------
    def _suspend(self, job: JobState) -> tuple[int, ...]:
        """Suspend a resident: it keeps its home and waits there (FIFO)."""
        # the job's GPUs go back (`_quota_freed` and `_add_waiting` inlined: every
        # time-slice switch passes here)
        gpus = self._gpus.pop(job)
        del self._alloc[job]
        self._freed(gpus)
        vc = job.spec.vc
        watched = vc in self._watched_vcs
        if watched:
            waiting_of_vc = self._vc_waiting.get(vc)
            if waiting_of_vc:
                self._dirty.update(waiting_of_vc)
        if self._pair:
            self._unpair(job)
        self._run_since.pop(job, None)
        if self._grown:
            self._grown.pop(job, None)
        server = self._home[job]
        server.waiting[job] = None
        self._waiting_servers.add(server)
        if watched:
            counts = self._vc_waiting.get(vc)
            if counts is None:
                counts = self._vc_waiting[vc] = Counter()
            counts[server] += 1
        return gpus

    def _resume(self, job: JobState, gpus: tuple[int, ...], pack: bool = False) -> bool:
        """Start or resume a waiting resident on `gpus` of its server; False (it keeps
        waiting) when its VC's quota or the node's CPU/memory has no room now."""
        view, spec = self._view, job.spec
        # `view.fits_quota` and `view.fits_resources`, asked only where they can say no
        if spec.vc in self._quota_vcs and not view.fits_quota(spec, len(gpus)):
            return False
        if (spec.cpu_milli or spec.memory_mib) and not view.fits_resources(job, gpus):
            return False
        self._take(job, gpus, pack=pack)
        server = self._home[job]
        waiting = server.waiting
        del waiting[job]  # `_remove_waiting`, inlined
        if not waiting:
            self._waiting_servers.discard(server)
        if spec.vc in self._watched_vcs:
            self._unwait_vc(server, spec.vc)
        self._run_since[job] = self._now
        return True

    def _refill(self) -> None:
        """Waiting residents of servers with freed GPUs resume there, longest-waiting first."""
        if not self._dirty:
            return
        for server in sorted(self._dirty, key=_index):
            if not server.waiting or not server.free:
                continue
            for job in list(server.waiting):
                size = self._base[job]
                if len(server.free) >= size:
                    self._resume(job, server.first_free(size))
                if not server.free:
                    break

    def _balance(self) -> None:
        """Servers with free GPUs and nobody waiting take waiting jobs of other servers of
        their pool (re-homed: they hold nothing, so this is a plain resume); then packed
        guests on them move to free GPUs (a migration)."""
        if not self._dirty:
            return
        dirty = sorted(self._dirty, key=_index)
        self._dirty = set()
        for server in dirty:
            if server.waiting or not server.free:
                continue
            if self._waiting_servers:
                others = sorted(
                    (s for s in self._waiting_servers if s.pool == server.pool and s is not server),
                    key=_index,
                )
                for other in others:
                    for job in list(other.waiting):
                        size = self._base[job]
                        if (
                            size <= len(server.free)
                            and size <= server.size
                            and self._view.fits_resources(job, server.first_free(size))
                        ):
                            self._leave(other, job)
                            self._home_on(server, job, size, waiting=True)
                            if not self._resume(job, server.first_free(size)):
                                continue
                            self.stats["rehomed"] += 1
                        if not server.free:
                            break
                    if not server.free:
                        break
            if server.free and self._guest:
                for guest in [g for g in self._guest if self._home.get(g) is server]:
                    size = len(self._gpus[guest])
                    if len(server.free) >= size and self._view.fits_resources(
                        guest, server.first_free(size)
                    ):
                        self._unpair(guest)
                        self._take(guest, server.first_free(size))
                        self.stats["unpacked_to_free"] += 1

    # ---- time-slicing (§3.3.1) ----------------------------------------------------------
    def _rotate(self, server: _Server) -> None:
        """Each waiting job, longest-waiting first, displaces the residents that have run
        longest since they last resumed, if they have run a whole quantum. A packed pair
        shares one turn: it yields its GPUs together, a quantum after the guest joined."""
        turns = self._turns(server, self._now)
        free_on, index = self._free_on, server.index
        if not turns and not free_on(index):
            return  # nobody may yield and nothing is free: no waiting job can start
        base, gpus_of, view, quota_vcs = self._base, self._gpus, self._view, self._quota_vcs
        n_turns, next_turn, switches = len(turns), 0, 0
        for job in list(server.waiting):
            size = base[job]
            freed, taken = len(free_on(index)), next_turn
            if not freed and taken == n_turns:
                break  # nobody left to yield and nothing free: the rest wait too
            while freed < size and taken < n_turns:
                freed += len(gpus_of[turns[taken][0]])
                taken += 1
            if freed < size:
                continue
            spec = job.spec
            if spec.vc in quota_vcs:
                # a VC quota counts the GPUs the job's own VC gets back from the displaced
                # jobs
                chosen = [m for members in turns[next_turn:taken] for m in members]
                returned = sum(len(gpus_of[r]) for r in chosen if r.spec.vc == spec.vc)
                if not view.fits_quota(spec, max(0, size - returned)):
                    continue
            for members in turns[next_turn:taken]:
                for resident in members:
                    self._suspend(resident)
            next_turn = taken
            if spec.cpu_milli or spec.memory_mib:
                # Free GPUs are not enough when the node lacks CPU/memory for the job: the
                # next turns yield too, until it fits (or nobody is left to yield).
                while next_turn < n_turns and not view.fits_resources(job, free_on(index)[:size]):
                    for resident in turns[next_turn]:
                        self._suspend(resident)
                    next_turn += 1
            if self._resume(job, free_on(index)[:size]):
                switches += 1
        if switches:
            self.stats["switches"] += switches

    def _turns(self, server: _Server, now: float) -> list[tuple[JobState, ...]]:
        """Running residents (a packed pair as one) that have had a whole quantum, the
        longest-running first (ties: submit order)."""
        turns: list[tuple[float, int, tuple[JobState, ...]]] = []
        run_since, pair, quantum = self._run_since, self._pair, self.quantum_s - _EPS
        for resident in server.residents:
            since = run_since.get(resident)
            if since is None:
                continue  # waiting
            # A turn also needs progress: with a resume overhead of a quantum or more, a job
            # suspended after a quantum of overhead alone would never advance (a livelock).
            partner = pair.get(resident) if pair else None
            if partner is None:
                if now - since >= quantum and resident.progress_from < now:
                    turns.append((since, resident.spec.index, (resident,)))
            elif resident.spec.index < partner.spec.index:  # each pair once
                other = run_since[partner]
                if (
                    now - max(since, other) >= quantum
                    and resident.progress_from < now
                    and partner.progress_from < now
                ):
                    turns.append((min(since, other), resident.spec.index, (resident, partner)))
        turns.sort()  # by (since, index): indices differ, so members are never compared
        return [turn[2] for turn in turns]

    # ---- packing (§3.3.2) ---------------------------------------------------------------
    def _try_pack(self, server: _Server) -> None:
        """One packing trial: the longest-waiting job that has a partner whose pair fits."""
        gpu_type = server.gpu_type
        run_since, pair, grown, gpus_of, base = (
            self._run_since,
            self._pair,
            self._grown,
            self._gpus,
            self._base,
        )
        hosts = [r for r in server.residents if r in run_since and r not in pair and r not in grown]
        if not hosts:
            return
        host_models = {(h.spec.model, len(gpus_of[h])) for h in hosts}
        pair_fits = self._pair_fits
        # whether some host's model fits a waiting job depends on its (model, size) only
        has_partner: dict[tuple[str | None, int], bool] = {}
        for job in server.waiting:
            size, model = base[job], job.spec.model
            wanted = (model, size)
            found = has_partner.get(wanted)
            if found is None:
                found = has_partner[wanted] = any(
                    n == size and pair_fits(model, other, gpu_type, size)
                    for other, n in host_models
                )
            if not found:
                continue
            candidates = []
            for host in hosts:
                if len(self._gpus[host]) != size or not self._pair_fits(
                    model, host.spec.model, gpu_type, size
                ):
                    continue
                key = _pair_key(model, host.spec.model, gpu_type, size)
                verdict = self._verdict.get(key)
                if verdict is False:
                    continue
                if verdict is None and self.packing == "profiled":
                    if (
                        self._predicted_gain(job.spec, host.spec, gpu_type, size)
                        <= self.pack_threshold
                    ):
                        self._verdict[key] = False
                        continue
                candidates.append((not verdict, self._run_since[host], host.spec.index, host, key))
            if not candidates:
                continue
            *_, host, key = min(candidates, key=lambda c: c[:3])
            if self._resume(job, self._gpus[host], pack=True):
                self._pair[job] = host
                self._pair[host] = job
                self._guest[job] = (host, self._now, key)
                self.stats["packs"] += 1
                return

    def _introspect_pairs(self) -> None:
        """Pairs packed for a quantum are judged by their observed rates: kept if the sum of
        their normalised rates beats time-slicing, else the guest is suspended again."""
        view = self._view
        for guest, (host, since, key) in list(self._guest.items()):
            if self._now - since < self.quantum_s - _EPS or self._verdict.get(key):
                continue
            gpu_type = self._gpu_server[self._gpus[guest][0]].gpu_type
            guest_gain = _normalised(view, guest, gpu_type)
            host_gain = _normalised(view, host, gpu_type)
            if guest_gain is None or host_gain is None:
                # Gandiva judges a pair by the progress it measured; one of the two has made
                # none yet in its current stint (still in its resume overhead, or re-rated
                # at this very instant), so the pair is judged at a later quantum.
                self.stats["verdicts_deferred"] += 1
                continue
            if guest_gain + host_gain > self.pack_threshold:
                self._verdict[key] = True
                continue
            self._verdict[key] = False
            self._suspend(guest)
            self.stats["unpacks"] += 1

    def _unpair(self, job: JobState) -> None:
        partner = self._pair.pop(job, None)
        if partner is not None:
            del self._pair[partner]
            self._guest.pop(job, None)
            self._guest.pop(partner, None)

    def _pair_fits(self, model: str | None, other: str | None, gpu_type: str, size: int) -> bool:
        """Memory fits: the throughput model measured the pair (positive rates both ways)."""
        key = (model, other, gpu_type, size)
        fits = self._fits.get(key)
        if fits is None:
            query = self._colocated_query
            fits = self._fits[key] = (
                query(model, other, gpu_type, size) > 0 and query(other, model, gpu_type, size) > 0
            )
        return fits

    def _predicted_gain(self, a: JobSpec, b: JobSpec, gpu_type: str, size: int) -> float:
        estimator = self._view.estimator
        total = 0.0
        for job, other in ((a, b), (b, a)):
            alone = estimator.throughput(job, gpu_type, size)
            shared = self._colocated_query(job.model, other.model, gpu_type, size)
            total += shared / alone if alone > 0 else 0.0
        return total

    # ---- migration (§3.3.3) -------------------------------------------------------------
    def _consolidate(self) -> None:
        """Spread jobs move onto one server with room, else defragment one for them."""
        for job in sorted(self._spread, key=_spec_index):
            gpus = self._gpus[job]
            size = len(gpus)
            mine = Counter(self._gpu_server[g] for g in gpus)
            pool = next(iter(mine)).pool
            candidates = [s for s, _ in sorted(mine.items(), key=lambda kv: (-kv[1], kv[0].index))]
            candidates += sorted(self._class.get((pool, size), ()), key=_index)
            empty = self._empty_server(pool, size)
            if empty is not None:
                candidates.append(empty)
            target = next(
                (
                    s
                    for s in candidates
                    if not s.waiting
                    and s.size >= size
                    and len(s.free) + mine.get(s, 0) >= size
                    and self._view.fits_resources(job, self._onto(s, gpus, size))
                ),
                None,
            )
            if target is None:
                target = self._defragment(job, mine, size)
                if target is None:
                    continue
            new = self._onto(target, gpus, size)
            if not self._view.fits_resources(job, new):
                continue  # its CPU/memory does not fit there yet: it stays spread
            del self._spread[job]
            self._take(job, new)
            self._home_on(target, job, size, waiting=False)
            self._capacity_changed = True  # it left GPUs on other servers
            self.stats["consolidations"] += 1

    def _onto(self, server: _Server, gpus: tuple[int, ...], size: int) -> tuple[int, ...]:
        """The job's GPUs on `server` once consolidated there: those it holds there, plus
        free ones."""
        own = tuple(g for g in gpus if self._gpu_server[g] is server)
        return tuple(sorted(own + server.first_free(size - len(own))))

    def _defragment(self, job: JobState, mine: Counter, size: int) -> _Server | None:
        """Empty enough of the server holding most of the job's GPUs by moving its residents
        to free GPUs elsewhere in the pool; only when consolidation speeds the job up."""
        estimator = self._view.estimator
        target = min(mine, key=lambda s: (-mine[s], s.index))
        gpu_type = target.gpu_type
        if (
            target.waiting
            or target.size < size
            or not (
                estimator.throughput(job.spec, gpu_type, size, 1)
                > estimator.throughput(job.spec, gpu_type, size, len(mine))
            )
        ):
            return None
        need = size - mine[target] - len(target.free)
        movable = sorted(
            (len(self._gpus[r]), r.spec.index, r)
            for r in target.residents
            if r in self._gpus and r not in self._pair
        )
        room = {
            s: len(s.free)
            for s in self._pool_servers[target.pool]
            if s is not target and s.free and not s.waiting
        }
        plan: list[tuple[JobState, _Server]] = []
        for n, _, resident in movable:
            if need <= 0:
                break
            fits = [
                (free, s.index, s)
                for s, free in room.items()
                if free >= n and self._view.fits_resources(resident, s.first_free(n))
            ]
            if not fits:
                continue
            *_, dest = min(fits, key=lambda f: f[:2])  # best fit
            room[dest] -= n
            plan.append((resident, dest))
            need -= n
        if need > 0:
            return None
        complete = True
        for resident, dest in plan:
            base = self._base[resident]
            gpus = dest.first_free(len(self._gpus[resident]))
            if not self._view.fits_resources(resident, gpus):
                complete = False  # an earlier move took the CPU/memory it needed there
                continue
            self._leave(target, resident)
            self._take(resident, gpus)
            self._home_on(dest, resident, base, waiting=False)
            self.stats["defrag_moves"] += 1
        return target if complete else None

    # ---- grow-shrink (§3.3.4) -----------------------------------------------------------
    def _demand_pools(self) -> set[Pool]:
        """Pools where some job waits: over-subscribed servers' and queued jobs'."""
        pools = {server.pool for server in self._waiting_servers}
        for job in self._queue:
            pools.update(pool for _, pool, _ in self._options(job.spec))
        return pools

    def _shrink(self) -> bool:
        """Grown jobs in pools where someone waits go back to their requested size."""
        shrunk = False
        demand = self._demand_pools()
        for job in sorted(self._grown, key=_spec_index):
            server = self._home[job]
            if server.pool in demand:
                base = self._base[job]
                del self._grown[job]
                self._take(job, self._gpus[job][:base])
                self._quota_freed(job)
                self._capacity_changed = shrunk = True
                self.stats["shrinks"] += 1
        return shrunk

    def _grow(self) -> None:
        demand = self._demand_pools()
        view = self._view
        for job in sorted(self._elastic, key=_spec_index):
            server = self._home[job]
            gpus = self._gpus.get(job)
            if (
                not gpus
                or not server.free
                or server.pool in demand
                or job in self._pair
                or server.waiting
            ):
                continue
            now, spec, gpu_type = self._now, job.spec, server.gpu_type
            current = len(gpus)
            most = min(spec.gpu_range[1], current + len(server.free), server.size)
            if most <= current or not view.fits_quota(spec, most - current):
                continue
            estimator = view.estimator
            rate_now = estimator.throughput(spec, gpu_type, current)
            # the fastest count (fewest GPUs on ties); profiles may lack some counts (rate 0)
            rate_grown, target = max(
                (estimator.throughput(spec, gpu_type, n), -n) for n in range(current + 1, most + 1)
            )
            target = -target
            if not rate_grown > rate_now > 0:
                continue  # no speed-up (for example duration replay)
            left = estimator.remaining_steps(job, now)
            if left / rate_now - left / rate_grown <= view.overheads.rescale(spec):
                continue
            grown = tuple(sorted(gpus + server.first_free(target - current)))
            if not view.fits_resources(job, grown):
                continue
            self._take(job, grown)
            if target > self._base[job]:
                self._grown[job] = None
            self.stats["grows"] += 1

    def __repr__(self) -> str:
        return (
            f"Gandiva(quantum_s={self.quantum_s}, oversubscription={self.oversubscription},"
            f" packing={self.packing!r}, pack_threshold={self.pack_threshold}, "
            f"migration={self.migration}, grow_shrink={self.grow_shrink})"
        )


# ---- helpers ----------------------------------------------------------------------------
class _EveryVc:
    """Contains every VC name (not None): `Gandiva._watched_vcs` when nodes declare CPU or
    memory."""

    __slots__ = ()

    def __contains__(self, vc: object) -> bool:
        return vc is not None


def _index(server: _Server) -> int:
    return server.index


def _spec_index(job: JobState) -> int:
    return job.spec.index


def _pair_key(model: str | None, other: str | None, gpu_type: str, size: int) -> tuple:
    """Packing verdicts are per unordered pair of models on a GPU type and count."""
    return (*sorted((str(model), str(other))), gpu_type, size)


def _normalised(view: ClusterView, job: JobState, gpu_type: str) -> float | None:
    """The job's observed rate (measured from its progress) over its rate alone on the same
    GPUs; None while no progress has been measured in its current stint."""
    observed = view.observed_rate(job)
    if observed is None:
        return None
    alone = view.estimator.throughput(job.spec, gpu_type, len(job.gpus) or job.spec.num_gpus)
    return observed / alone if alone > 0 else 0.0


def _colocated_query(estimator: object):
    """`query(model, other, gpu_type, n)`: steps/s of a `model` job on n GPUs shared with an
    `other` job (0 when the pair was not measured: it does not fit in memory), from the
    estimator's `colocated_throughput` (0 for an estimator without one: no packing). Gandiva
    learns memory use and pair rates by profiling; the estimator stands in for that."""
    method = getattr(estimator, "colocated_throughput", None)

    def query(model: str | None, other: str | None, gpu_type: str, n: int) -> float:
        if method is None:
            return 0.0
        probe = JobSpec(
            index=-1, job_id=None, submit_time=0.0, num_gpus=n, total_steps=1.0, model=model
        )
        return method(probe, gpu_type, n, ((other, n),))

    return query
