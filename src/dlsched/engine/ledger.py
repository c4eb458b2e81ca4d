"""The allocation ledger: who holds which GPU, with indexes that make placement cheap.

GPUs are grouped into *pools*: (GPU type, owning virtual cluster or None). A VC that owns
nodes places its jobs only in its own pools; everyone else uses the unowned pools. Per pool,
nodes are bucketed by their number of free GPUs, so "a node with at least k free GPUs"
costs O(GPUs per node) lookups instead of a scan over every node.

A GPU is FREE, held whole by one job, PACKED with two whole-GPU jobs that a policy chose to
co-locate (Gandiva's and Gavel's space sharing; their rates then come from the throughput
model's measured pairs), or SHARED by jobs that each asked for a fraction of a GPU
(`gpu_milli` < 1000); the fractions on one GPU never add up to more than 1000.

CPU and host memory are accounted per node, in integer milli-CPUs and MiB, only when some
node of the cluster declares them (`cpu_free`/`mem_free` are None otherwise, and nothing
here does any work for them). A node that declares no capacity in a cluster where others do
is unlimited for that resource (`UNLIMITED`): the file says nothing about it, so nothing is
invented. A job's demand (`JobSpec.cpu_milli`, `memory_mib`, the whole job's) is held on its
nodes in proportion to its GPUs there (`node_demands`); `take` reserves it and `give_back`
returns exactly what `take` reserved for the job.

A job that asks for no GPU (`JobSpec.num_gpus` 0: CPU and/or memory only) is placed on a
node by its *host slot*, an id past the GPU ids (`host_slot`: ``num_gpus + node index``):
its allocation is that one id, it takes no GPU, only its demand on that node, and any
number of such jobs may share a node while its CPU and memory last. `gpu_node` and
`gpu_type` cover the host slots too, so what reads a job's node or type from its ids works
for them unchanged.

A node may be *absent* (a rented instance not acquired, or still starting: see
`dlsched.engine.availability`): `withdraw_node` marks its GPUs `ABSENT` and takes them out
of every free index (free lists, buckets, free counts; its CPU and memory read 0 free), so
no policy or placement helper sees them; `restore_node` puts them back. Capacities
(`capacity`, `pool_capacity`) stay the hardware's maximum: they answer "could this job ever
run here", and `absent_by_type` says how much of it is away now.
"""

from __future__ import annotations

from bisect import insort
from collections import Counter
from collections.abc import Mapping

from dlsched.cluster import Cluster
from dlsched.errors import SchedulingError
from dlsched.jobs import JobSpec

FREE = -1
SHARED = -2
PACKED = -3
ABSENT = -4  # the owner of a GPU whose node is absent (`Ledger.withdraw_node`)
WHOLE = 1000
MAX_PACKED = 2  # jobs per packed GPU: pairs, the only co-locations anyone measured
UNLIMITED = 1 << 62
"""The capacity (milli-CPUs or MiB) of a node that declares none where other nodes do."""

Pool = tuple[str, "str | None"]


def slot_tables(cluster: Cluster) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(node, GPU type) of every id: the GPU ids, then one host slot per node (see the module
    docstring). What must read the node or type of a running job's ids without a ledger (an
    estimator) uses these rather than the cluster's tuples, which stop at the GPU ids."""
    nodes = cluster.nodes
    return (
        cluster.gpu_node + tuple(n.index for n in nodes),
        cluster.gpu_type_of + tuple(n.gpu_type for n in nodes),
    )


class Ledger:
    """Owner of every GPU and free-GPU indexes by node, pool and type."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.owner: list[int] = [FREE] * cluster.num_gpus
        self.node_free: list[list[int]] = [list(node.gpu_ids) for node in cluster.nodes]
        self.node_type: list[str] = [node.gpu_type for node in cluster.nodes]
        owner_vc = {i: vc.name for vc in cluster.vcs for i in vc.node_indices}
        self.node_pool: list[Pool] = [
            (node.gpu_type, owner_vc.get(node.index)) for node in cluster.nodes
        ]
        # GPU ids, then one host slot per node (jobs without GPUs: see the module docstring)
        self.host_base = cluster.num_gpus
        self.gpu_node, self.gpu_type = slot_tables(cluster)
        self.capacity = cluster.capacity_by_type()
        self.free_by_type: dict[str, int] = dict(self.capacity)
        self.pool_capacity: dict[Pool, int] = {}
        for node, pool in zip(cluster.nodes, self.node_pool, strict=True):
            self.pool_capacity[pool] = self.pool_capacity.get(pool, 0) + len(node.gpu_ids)
        self.free_by_pool: dict[Pool, int] = dict(self.pool_capacity)
        # Changes of each pool's free GPUs so far: a placement that failed is not tried again
        # while its pool's count stays the same (`ClusterView.place`).
        self.pool_epoch: dict[Pool, int] = dict.fromkeys(self.pool_capacity, 0)
        # buckets[pool][c] = nodes of that pool with exactly c free GPUs (c >= 1)
        sizes: dict[Pool, int] = {}
        for node, pool in zip(cluster.nodes, self.node_pool, strict=True):
            sizes[pool] = max(sizes.get(pool, 0), len(node.gpu_ids))
        self.buckets: dict[Pool, list[set[int]]] = {
            pool: [set() for _ in range(size + 1)] for pool, size in sizes.items()
        }
        for node, pool in zip(cluster.nodes, self.node_pool, strict=True):
            self.buckets[pool][len(node.gpu_ids)].add(node.index)
        self._node_buckets = [self.buckets[pool] for pool in self.node_pool]  # by node index
        # Fractional use: load (thousandths) and holders of each SHARED GPU, and per pool
        # the SHARED GPUs that still have room.
        self.shared_load: dict[int, int] = {}
        self.shared_jobs: dict[int, list[int]] = {}
        self.partial: dict[Pool, dict[int, int]] = {pool: {} for pool in self.pool_capacity}
        self.packed_jobs: dict[int, list[int]] = {}
        self.packed_ever = False  # until a policy packs, no job's rate depends on a partner
        # GPUs (fractions as fractions) the jobs of each VC with a quota hold
        self.vc_used: dict[str, float] = {}
        self.owning_vcs = {vc.name for vc in cluster.vcs if vc.node_indices}
        # Whether one job may hold GPUs of several types (the policy's `mixed_gpu_types`,
        # set by the engine): else `Allocation` refuses such a gang (`types_of`).
        self.mixed_types = False
        # A VC's quota caps the GPUs its jobs hold at once, wherever they run.
        self.vc_quota: dict[str, int] = {
            vc.name: vc.quota_gpus for vc in cluster.vcs if vc.quota_gpus is not None
        }
        # CPU (milli-CPUs) and host memory (MiB) per node index: capacity and free; None when
        # no node declares the resource.
        self.cpu_capacity: list[int] | None = (
            [UNLIMITED if n.cpus is None else round(n.cpus * 1000) for n in cluster.nodes]
            if cluster.declares_cpus
            else None
        )
        self.mem_capacity: list[int] | None = (
            [UNLIMITED if n.memory_gb is None else round(n.memory_gb * 1024) for n in cluster.nodes]
            if cluster.declares_memory
            else None
        )
        self.cpu_free: list[int] | None = (
            None if self.cpu_capacity is None else list(self.cpu_capacity)
        )
        self.mem_free: list[int] | None = (
            None if self.mem_capacity is None else list(self.mem_capacity)
        )
        self.tracks_resources = self.cpu_free is not None or self.mem_free is not None
        # (job index, milli-CPUs, MiB) a job holds from now on, on the nodes that declare each
        # resource, appended at every change: the recorder turns it into what each job held
        # when (`Recorder.snapshot`), whatever amount a policy gave it.
        self.resource_log: list[tuple[int, int, int]] | None = [] if self.tracks_resources else None
        self._counts_cpu = [n.cpus is not None for n in cluster.nodes]
        self._counts_mem = [n.memory_gb is not None for n in cluster.nodes]
        # job index → {node: (milli-CPUs, MiB)} that `take` reserved for it
        self.reserved: dict[int, dict[int, tuple[int, int]]] = {}
        # node → number of jobs without GPUs on it (a node whose GPUs are all free may hold
        # some, and then not all its CPU and memory are free)
        self.hosting: dict[int, int] = {}
        # GPUs of absent nodes per type (`withdraw_node`), and those nodes
        self.absent_by_type: dict[str, int] = dict.fromkeys(self.capacity, 0)
        self.absent_nodes: set[int] = set()

    @property
    def free_total(self) -> int:
        return sum(self.free_by_type.values())

    def busy_by_type(self) -> dict[str, int]:
        """GPUs held by jobs per type (a GPU shared by fractions counts as busy; a GPU of an
        absent node is neither free nor busy)."""
        absent = self.absent_by_type
        return {t: self.capacity[t] - f - absent[t] for t, f in self.free_by_type.items()}

    # ---- absent nodes -------------------------------------------------------------------
    def node_idle(self, node: int) -> bool:
        """Whether no job holds anything on `node` (GPUs, a host slot, CPU or memory)."""
        gpu_ids = self.cluster.nodes[node].gpu_ids
        if len(self.node_free[node]) != len(gpu_ids) or node in self.hosting:
            return False
        reserved = self.reserved  # (empty unless jobs reserve CPU or memory: the common case)
        return not reserved or not any(node in held for held in reserved.values())

    def withdraw_node(self, node: int) -> None:
        """Make `node` absent: its GPUs leave every free index (see the module docstring).
        A node on which a job holds anything is refused (`SchedulingError`)."""
        if node in self.absent_nodes:
            raise SchedulingError(f"node {node} is already absent")
        if not self.node_idle(node):
            raise SchedulingError(
                f"node {node} ({self.cluster.nodes[node].name}) still runs jobs; only a node "
                "that holds no job can be released or powered down"
            )
        gpu_ids = self.cluster.nodes[node].gpu_ids
        pool = self.node_pool[node]
        if gpu_ids:
            self.buckets[pool][len(gpu_ids)].discard(node)
        for gpu in gpu_ids:
            self.owner[gpu] = ABSENT
        self.node_free[node] = []
        self.free_by_type[pool[0]] -= len(gpu_ids)
        self.free_by_pool[pool] -= len(gpu_ids)
        self.absent_by_type[pool[0]] += len(gpu_ids)
        self.pool_epoch[pool] += 1
        if self.cpu_free is not None:
            self.cpu_free[node] = 0
        if self.mem_free is not None:
            self.mem_free[node] = 0
        self.absent_nodes.add(node)

    def restore_node(self, node: int) -> None:
        """Make an absent node present again, all of it free."""
        if node not in self.absent_nodes:
            raise SchedulingError(f"node {node} is not absent")
        self.absent_nodes.discard(node)
        gpu_ids = self.cluster.nodes[node].gpu_ids
        pool = self.node_pool[node]
        for gpu in gpu_ids:
            self.owner[gpu] = FREE
        self.node_free[node] = list(gpu_ids)
        if gpu_ids:
            self.buckets[pool][len(gpu_ids)].add(node)
        self.free_by_type[pool[0]] += len(gpu_ids)
        self.free_by_pool[pool] += len(gpu_ids)
        self.absent_by_type[pool[0]] -= len(gpu_ids)
        self.pool_epoch[pool] += 1
        if self.cpu_free is not None and self.cpu_capacity is not None:
            self.cpu_free[node] = self.cpu_capacity[node]
        if self.mem_free is not None and self.mem_capacity is not None:
            self.mem_free[node] = self.mem_capacity[node]

    def misplaced(
        self, gpus: tuple[int, ...], vc: str | None, allowed_types: tuple[str, ...] | None
    ) -> str | None:
        """Why a job of `vc` may not hold `gpus` (another VC's nodes, or nodes of a VC that
        is not its own; a GPU type outside `allowed_types`), or None when it may."""
        own = vc if vc in self.owning_vcs else None
        node_pool, gpu_node = self.node_pool, self.gpu_node
        for gpu in gpus:
            gpu_type, owner = node_pool[gpu_node[gpu]]
            if owner != own:
                where = f"VC {owner!r}'s nodes" if owner is not None else "nodes no VC owns"
                return f"{self.describe(gpu)} is on {where}"
            if allowed_types is not None and gpu_type not in allowed_types:
                return (
                    f"{self.describe(gpu)} is a {gpu_type}"
                    f"{' node' if gpu >= self.host_base else ''}, outside the job's GPU-type "
                    "constraint"
                )
        return None

    def types_of(self, gpus: tuple[int, ...]) -> str | None:
        """``"2 x V100, 2 x K80"`` when `gpus` span more than one GPU type, else None (ids
        out of range too: the ledger's own checks name them)."""
        gpu_type = self.gpu_type
        if min(gpus) < 0:
            return None
        try:
            first = gpu_type[gpus[0]]
            if all(gpu_type[g] == first for g in gpus):
                return None
            counts = Counter(gpu_type[g] for g in gpus)
        except IndexError:
            return None
        return ", ".join(f"{n} x {self.cluster.display_name(t)}" for t, n in sorted(counts.items()))

    def describe(self, gpu: int) -> str:
        """An id as messages name it: ``GPU 3``, or ``host slot of node 1`` past the GPU ids."""
        if gpu >= self.host_base:
            return f"host slot of node {gpu - self.host_base}"
        return f"GPU {gpu}"

    def quota_left(self, vc: str | None) -> float | None:
        """GPUs a VC's jobs may still take under its quota (None: no quota)."""
        quota = self.vc_quota.get(vc) if vc is not None else None
        if quota is None:
            return None
        return quota - self.vc_used.get(vc, 0.0)  # type: ignore[arg-type]

    def fits_quota(self, vc: str | None, share: float) -> bool:
        """Whether `share` more GPUs (fractions count as fractions) fit the VC's quota."""
        quota = self.vc_quota.get(vc) if vc is not None else None  # inlined: a hot path
        return quota is None or self.vc_used.get(vc, 0.0) + share <= quota + 1e-9  # type: ignore[arg-type]

    def pool_of(self, gpu: int) -> Pool:
        return self.node_pool[self.gpu_node[gpu]]

    # ---- jobs without GPUs --------------------------------------------------------------
    def host_slot(self, node: int) -> int:
        """The id that places a job without GPUs on `node` (see the module docstring)."""
        return self.host_base + node

    def is_host_slot(self, gpus: tuple[int, ...]) -> bool:
        """Whether `gpus` is one valid host slot (the allocation of a job without GPUs)."""
        return len(gpus) == 1 and self.host_base <= gpus[0] < len(self.gpu_node)

    def _check_host(self, job_index: int, gpus: tuple[int, ...]) -> None:
        if not self.is_host_slot(gpus):
            raise SchedulingError(
                f"job index {job_index} asks for no GPU: give it one host slot "
                f"(`Ledger.host_slot(node)`, {self.host_base} to {len(self.gpu_node) - 1}), "
                f"not {gpus}"
            )

    # ---- CPU and host memory ------------------------------------------------------------
    def node_demands(
        self,
        spec: JobSpec,
        gpus: tuple[int, ...],
        cpu_milli: int | None = None,
        memory_mib: int | None = None,
    ) -> dict[int, tuple[int, int]]:
        """Node index → (milli-CPUs, MiB) the job would hold on each node of `gpus`.

        The job's demand is split over its nodes in proportion to its GPUs there (integer
        shares, the remainder on the lowest node index). An elastic job on another GPU count
        than it asked for holds its per-GPU demand times its GPUs, rounded up. `cpu_milli` /
        `memory_mib`, when given, replace the job's demand by a whole-job amount a policy
        chose (Synergy's allocations), split the same way. Every node of `gpus` has an
        entry, (0, 0) for a job without demands."""
        per_node: dict[int, int] = {}
        gpu_node = self.gpu_node
        for gpu in gpus:
            node = gpu_node[gpu]
            per_node[node] = per_node.get(node, 0) + 1
        n = len(gpus)
        cpu, mem = spec.cpu_milli, spec.memory_mib
        asked = spec.num_gpus
        if n != asked and asked > 0:
            cpu, mem = -(-cpu * n // asked), -(-mem * n // asked)
        if cpu_milli is not None:
            cpu = cpu_milli
        if memory_mib is not None:
            mem = memory_mib
        if not cpu and not mem:
            return dict.fromkeys(per_node, (0, 0))
        if len(per_node) == 1:
            return {next(iter(per_node)): (cpu, mem)}
        out = {node: (cpu * k // n, mem * k // n) for node, k in per_node.items()}
        first = min(out)
        spare_cpu = cpu - sum(c for c, _ in out.values())
        spare_mem = mem - sum(m for _, m in out.values())
        held_cpu, held_mem = out[first]
        out[first] = (held_cpu + spare_cpu, held_mem + spare_mem)
        return out

    def fits_resources(self, node: int, cpu_milli: int, mem_mib: int) -> bool:
        """Whether `node` has `cpu_milli` milli-CPUs and `mem_mib` MiB free (always, for a
        resource no node declares)."""
        cpu_free, mem_free = self.cpu_free, self.mem_free
        return (cpu_free is None or cpu_free[node] >= cpu_milli) and (
            mem_free is None or mem_free[node] >= mem_mib
        )

    def shortfall(self, demands: Mapping[int, tuple[int, int]]) -> str | None:
        """Why `demands` (node → (milli-CPUs, MiB)) do not fit the free capacity now, naming
        the node and the resource, or None when they fit."""
        cpu_free, mem_free = self.cpu_free, self.mem_free
        nodes = self.cluster.nodes
        for node in sorted(demands):
            cpu, mem = demands[node]
            if cpu_free is not None and cpu > cpu_free[node]:
                return (
                    f"node {node} ({nodes[node].name}) has {cpu_free[node]} milli-CPUs free, "
                    f"the job needs {cpu} there"
                )
            if mem_free is not None and mem > mem_free[node]:
                return (
                    f"node {node} ({nodes[node].name}) has {mem_free[node]} MiB of memory "
                    f"free, the job needs {mem} there"
                )
        return None

    def rereserve(self, job_index: int, demands: Mapping[int, tuple[int, int]]) -> None:
        """Replace the CPU/memory the job holds on its GPUs' nodes by `demands` (its GPUs
        stay); more than the nodes have free, counting what it gives back, is refused and the
        job keeps what it held."""
        held = self.reserved.get(job_index)
        self._unreserve(job_index)
        problem = self.shortfall(demands)
        if problem is not None:
            if held is not None:
                self._reserve(job_index, held)
            raise SchedulingError(f"job index {job_index} cannot take its CPU/memory: {problem}")
        self._reserve(job_index, demands)

    def _reserve(self, job_index: int, demands: Mapping[int, tuple[int, int]]) -> None:
        """Hold `demands` for the job (checked by `shortfall` before)."""
        cpu_free, mem_free = self.cpu_free, self.mem_free
        held: dict[int, tuple[int, int]] = {}
        for node, (cpu, mem) in demands.items():
            if not cpu and not mem:
                continue
            if cpu_free is not None:
                cpu_free[node] -= cpu
            else:
                cpu = 0
            if mem_free is not None:
                mem_free[node] -= mem
            else:
                mem = 0
            held[node] = (cpu, mem)
        if held:
            self.reserved[job_index] = held
            log = self.resource_log
            if log is not None:
                counts_cpu, counts_mem = self._counts_cpu, self._counts_mem
                log.append(
                    (
                        job_index,
                        sum(c for node, (c, _) in held.items() if counts_cpu[node]),
                        sum(m for node, (_, m) in held.items() if counts_mem[node]),
                    )
                )

    def _unreserve(self, job_index: int) -> None:
        """Return what `_reserve` held for the job (nothing if it held nothing)."""
        held = self.reserved.pop(job_index, None)
        if held is None:
            return
        if self.resource_log is not None:
            self.resource_log.append((job_index, 0, 0))
        cpu_free, mem_free = self.cpu_free, self.mem_free
        for node, (cpu, mem) in held.items():
            if cpu_free is not None:
                cpu_free[node] += cpu
            if mem_free is not None:
                mem_free[node] += mem

    # ---- whole GPUs ---------------------------------------------------------------------
    def _claim(self, gpu: int) -> None:
        node = self.gpu_node[gpu]
        free = self.node_free[node]
        pool = self.node_pool[node]
        bucket = self.buckets[pool]
        bucket[len(free)].discard(node)
        free.remove(gpu)
        if free:
            bucket[len(free)].add(node)
        self.free_by_type[pool[0]] -= 1
        self.free_by_pool[pool] -= 1
        self.pool_epoch[pool] += 1

    def _release(self, gpu: int) -> None:
        node = self.gpu_node[gpu]
        free = self.node_free[node]
        pool = self.node_pool[node]
        bucket = self.buckets[pool]
        if free:
            bucket[len(free)].discard(node)
        insort(free, gpu)
        bucket[len(free)].add(node)
        self.free_by_type[pool[0]] += 1
        self.free_by_pool[pool] += 1
        self.pool_epoch[pool] += 1

    def _taken(self, gpu: int) -> str:
        """Why GPU `gpu` cannot be taken whole (it is not free)."""
        if self.owner[gpu] == ABSENT:
            node = self.gpu_node[gpu]
            return (
                f"GPU {gpu} is on node {node} ({self.cluster.nodes[node].name}), which is not "
                "present (a rented instance not acquired or still starting, or a node powered "
                "down)"
            )
        return f"GPU {gpu} is already held by job index {self.owner[gpu]}"

    def occupants(self, gpu: int) -> list[int]:
        """Indices of the jobs on a GPU (none on a host slot: its jobs share no GPU)."""
        if gpu >= self.host_base:
            return []
        held = self.owner[gpu]
        if held >= 0:
            return [held]
        if held == PACKED:
            return list(self.packed_jobs[gpu])
        if held == SHARED:
            return list(self.shared_jobs[gpu])
        return []

    def take(
        self,
        job_index: int,
        gpus: tuple[int, ...],
        milli: int = WHOLE,
        vc: str | None = None,
        pack: bool = False,
        *,
        demands: Mapping[int, tuple[int, int]] | None = None,
    ) -> None:
        """Give `gpus` to a job: whole (they must be free, or with `pack` free or held whole by
        one other job), or a `milli` share of one GPU.

        `demands` (node → (milli-CPUs, MiB), as from `node_demands`) are reserved with the
        GPUs when the cluster accounts CPU or memory; more than a node has free is refused.
        A job holds one reservation at a time: take it again only after `give_back`."""
        if demands and self.tracks_resources:
            if job_index in self.reserved:
                raise SchedulingError(
                    f"job index {job_index} already holds CPU/memory; give it back first"
                )
            problem = self.shortfall(demands)
            if problem is not None:
                raise SchedulingError(
                    f"job index {job_index} cannot take its CPU/memory: {problem}"
                )
            if milli == WHOLE and not pack:
                self._take_whole(job_index, gpus, vc)
            else:
                self._take_gpus(job_index, gpus, milli, vc, pack)
            self._reserve(job_index, demands)
            return
        if milli == WHOLE and not pack:
            self._take_whole(job_index, gpus, vc)
            return
        self._take_gpus(job_index, gpus, milli, vc, pack)

    def _take_gpus(
        self, job_index: int, gpus: tuple[int, ...], milli: int, vc: str | None, pack: bool
    ) -> None:
        """`take` of shares of GPUs or of packed GPUs (or, `milli` 0, of a host slot)."""
        if milli == 0:  # a job without GPUs: only its CPU/memory, reserved by `take`
            self._check_host(job_index, gpus)
            node = self.gpu_node[gpus[0]]
            self.hosting[node] = self.hosting.get(node, 0) + 1
            return
        owner = self.owner
        for gpu in gpus:
            if not 0 <= gpu < len(owner):
                raise SchedulingError(f"GPU id {gpu} does not exist (cluster has {len(owner)})")
            if owner[gpu] == ABSENT:
                raise SchedulingError(self._taken(gpu))
            if pack and (milli != WHOLE or owner[gpu] < FREE or owner[gpu] == job_index):
                raise SchedulingError(
                    f"GPU {gpu} cannot take job index {job_index} packed "
                    f"(only two whole-GPU jobs may share a GPU)"
                )
            if milli == WHOLE and not pack and owner[gpu] != FREE:
                raise SchedulingError(f"GPU {gpu} is already held by job index {owner[gpu]}")
            if milli < WHOLE and owner[gpu] >= 0:
                raise SchedulingError(f"GPU {gpu} is held whole by job index {owner[gpu]}")
            if milli < WHOLE and self.shared_load.get(gpu, 0) + milli > WHOLE:
                raise SchedulingError(
                    f"GPU {gpu} has {WHOLE - self.shared_load[gpu]} of 1000 "
                    f"left, a job asks for {milli}"
                )
        for gpu in gpus:
            if milli == WHOLE and owner[gpu] >= 0:  # packing onto a GPU held whole
                self.packed_jobs[gpu] = [owner[gpu], job_index]
                owner[gpu] = PACKED
                self.packed_ever = True
                continue
            if milli == WHOLE:
                owner[gpu] = job_index
                self._claim(gpu)
                continue
            if owner[gpu] == FREE:
                owner[gpu] = SHARED
                self._claim(gpu)
            load = self.shared_load.get(gpu, 0) + milli
            self.shared_load[gpu] = load
            self.shared_jobs.setdefault(gpu, []).append(job_index)
            partial = self.partial[self.pool_of(gpu)]
            if load < WHOLE:
                partial[gpu] = load
            else:
                partial.pop(gpu, None)
        if vc in self.vc_quota:
            self.vc_used[vc] = self.vc_used.get(vc, 0.0) + len(gpus) * milli / WHOLE

    def _take_whole(self, job_index: int, gpus: tuple[int, ...], vc: str | None) -> None:
        """`take` of free whole GPUs (the common case), with `_claim` inlined."""
        owner = self.owner
        n_gpus = len(owner)
        if len(gpus) == 1:  # one GPU (most jobs): the loops below, unrolled
            gpu = gpus[0]
            if not 0 <= gpu < n_gpus:
                raise SchedulingError(f"GPU id {gpu} does not exist (cluster has {n_gpus})")
            if owner[gpu] != FREE:
                raise SchedulingError(self._taken(gpu))
            owner[gpu] = job_index
            node = self.gpu_node[gpu]
            free = self.node_free[node]
            pool = self.node_pool[node]
            bucket = self._node_buckets[node]
            left = len(free) - 1
            bucket[left + 1].discard(node)
            free.remove(gpu)
            if left:
                bucket[left].add(node)
            self.free_by_type[pool[0]] -= 1
            self.free_by_pool[pool] -= 1
            self.pool_epoch[pool] += 1
            if vc in self.vc_quota:
                self.vc_used[vc] = self.vc_used.get(vc, 0.0) + 1.0
            return
        for gpu in gpus:
            if not 0 <= gpu < n_gpus:
                raise SchedulingError(f"GPU id {gpu} does not exist (cluster has {n_gpus})")
            if owner[gpu] != FREE:
                raise SchedulingError(self._taken(gpu))
        gpu_node, node_free, node_pool = self.gpu_node, self.node_free, self.node_pool
        buckets, free_by_type, free_by_pool = self.buckets, self.free_by_type, self.free_by_pool
        epoch = self.pool_epoch
        for gpu in gpus:
            owner[gpu] = job_index
            node = gpu_node[gpu]
            free = node_free[node]
            pool = node_pool[node]
            bucket = buckets[pool]
            bucket[len(free)].discard(node)
            free.remove(gpu)
            if free:
                bucket[len(free)].add(node)
            free_by_type[pool[0]] -= 1
            free_by_pool[pool] -= 1
            epoch[pool] += 1
        if vc in self.vc_quota:
            self.vc_used[vc] = self.vc_used.get(vc, 0.0) + float(len(gpus))

    def give_back(
        self, job_index: int, gpus: tuple[int, ...], milli: int = WHOLE, vc: str | None = None
    ) -> None:
        """Free what `take` gave the job: these GPUs, and all the CPU and memory it reserved."""
        if self.reserved:
            self._unreserve(job_index)
        owner = self.owner
        if milli == WHOLE and not self.packed_jobs:
            self._give_back_whole(job_index, gpus, vc)
            return
        if milli == 0:  # a job without GPUs held only its CPU/memory, returned above
            self._check_host(job_index, gpus)
            node = self.gpu_node[gpus[0]]
            left = self.hosting.get(node, 0) - 1
            if left < 0:
                raise SchedulingError(f"node {node} holds no job without GPUs to give back")
            if left:
                self.hosting[node] = left
            else:
                del self.hosting[node]
            return
        for gpu in gpus:
            held = (
                owner[gpu] == job_index or job_index in self.packed_jobs.get(gpu, ())
                if milli == WHOLE
                else job_index in self.shared_jobs.get(gpu, ())
            )
            if not held:
                raise SchedulingError(f"GPU {gpu} is not held by job index {job_index}")
        for gpu in gpus:
            if milli == WHOLE and owner[gpu] == PACKED:
                partners = self.packed_jobs.pop(gpu)
                partners.remove(job_index)
                owner[gpu] = partners[0]
                continue
            if milli == WHOLE:
                owner[gpu] = FREE
                self._release(gpu)
                continue
            self.shared_jobs[gpu].remove(job_index)
            load = self.shared_load[gpu] - milli
            partial = self.partial[self.pool_of(gpu)]
            if load == 0:
                del self.shared_load[gpu], self.shared_jobs[gpu]
                partial.pop(gpu, None)
                owner[gpu] = FREE
                self._release(gpu)
            else:
                self.shared_load[gpu] = load
                partial[gpu] = load
        if vc in self.vc_quota:
            self.vc_used[vc] -= len(gpus) * milli / WHOLE

    def _give_back_whole(self, job_index: int, gpus: tuple[int, ...], vc: str | None) -> None:
        """`give_back` of whole GPUs while nothing is packed, with `_release` inlined."""
        owner = self.owner
        if len(gpus) == 1:  # one GPU (most jobs): the loops below, unrolled
            gpu = gpus[0]
            if owner[gpu] != job_index:
                raise SchedulingError(f"GPU {gpu} is not held by job index {job_index}")
            owner[gpu] = FREE
            node = self.gpu_node[gpu]
            free = self.node_free[node]
            pool = self.node_pool[node]
            bucket = self._node_buckets[node]
            had = len(free)
            if had:
                bucket[had].discard(node)
            insort(free, gpu)
            bucket[had + 1].add(node)
            self.free_by_type[pool[0]] += 1
            self.free_by_pool[pool] += 1
            self.pool_epoch[pool] += 1
            if vc in self.vc_quota:
                self.vc_used[vc] -= 1.0
            return
        for gpu in gpus:
            if owner[gpu] != job_index:
                raise SchedulingError(f"GPU {gpu} is not held by job index {job_index}")
        gpu_node, node_free, node_pool = self.gpu_node, self.node_free, self.node_pool
        buckets, free_by_type, free_by_pool = self.buckets, self.free_by_type, self.free_by_pool
        epoch = self.pool_epoch
        for gpu in gpus:
            owner[gpu] = FREE
            node = gpu_node[gpu]
            free = node_free[node]
            pool = node_pool[node]
            bucket = buckets[pool]
            if free:
                bucket[len(free)].discard(node)
            insort(free, gpu)
            bucket[len(free)].add(node)
            free_by_type[pool[0]] += 1
            free_by_pool[pool] += 1
            epoch[pool] += 1
        if vc in self.vc_quota:
            self.vc_used[vc] -= float(len(gpus))
