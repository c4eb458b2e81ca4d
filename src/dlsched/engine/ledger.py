"""The allocation ledger: who holds which GPU, with indexes that make placement cheap.

GPUs are grouped into *pools*: (GPU type, owning virtual cluster or None). A VC that owns
nodes places its jobs only in its own pools; everyone else uses the unowned pools. Per pool,
nodes are bucketed by their number of free GPUs, so "a node with at least k free GPUs"
costs O(GPUs per node) lookups instead of a scan over every node.

A GPU is FREE, held whole by one job, PACKED with two whole-GPU jobs that a policy chose to
co-locate (Gandiva's and Gavel's space sharing; their rates then come from the throughput
model's measured pairs), or SHARED by jobs that each asked for a fraction of a GPU
(`gpu_milli` < 1000); the fractions on one GPU never add up to more than 1000.
"""

from __future__ import annotations

from bisect import insort

from dlsched.cluster import Cluster
from dlsched.errors import SchedulingError

FREE = -1
SHARED = -2
PACKED = -3
WHOLE = 1000
MAX_PACKED = 2  # jobs per packed GPU: pairs, the only co-locations anyone measured

Pool = tuple[str, "str | None"]


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
        self.gpu_node = cluster.gpu_node
        self.gpu_type = cluster.gpu_type_of
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
        # Fractional use: load (thousandths) and holders of each SHARED GPU, and per pool
        # the SHARED GPUs that still have room.
        self.shared_load: dict[int, int] = {}
        self.shared_jobs: dict[int, list[int]] = {}
        self.partial: dict[Pool, dict[int, int]] = {pool: {} for pool in self.pool_capacity}
        self.packed_jobs: dict[int, list[int]] = {}
        self.packed_ever = False  # until a policy packs, no job's rate depends on a partner
        self.vc_used: dict[str, float] = {}
        self.owning_vcs = {vc.name for vc in cluster.vcs if vc.node_indices}
        # A VC's quota caps the GPUs its jobs hold at once, wherever they run.
        self.vc_quota: dict[str, int] = {
            vc.name: vc.quota_gpus for vc in cluster.vcs if vc.quota_gpus is not None
        }

    @property
    def free_total(self) -> int:
        return sum(self.free_by_type.values())

    def busy_by_type(self) -> dict[str, int]:
        """GPUs not free per type (a GPU shared by fractions counts as busy)."""
        return {t: self.capacity[t] - f for t, f in self.free_by_type.items()}

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
                return f"GPU {gpu} is on {where}"
            if allowed_types is not None and gpu_type not in allowed_types:
                return f"GPU {gpu} is a {gpu_type}, outside the job's GPU-type constraint"
        return None

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

    def occupants(self, gpu: int) -> list[int]:
        """Indices of the jobs on a GPU."""
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
    ) -> None:
        """Give `gpus` to a job: whole (they must be free, or with `pack` free or held whole by
        one other job), or a `milli` share of one GPU."""
        owner = self.owner
        if milli == WHOLE and not pack:
            self._take_whole(job_index, gpus, vc)
            return
        for gpu in gpus:
            if not 0 <= gpu < len(owner):
                raise SchedulingError(f"GPU id {gpu} does not exist (cluster has {len(owner)})")
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
        if vc is not None:
            self.vc_used[vc] = self.vc_used.get(vc, 0.0) + len(gpus) * milli / WHOLE

    def _take_whole(self, job_index: int, gpus: tuple[int, ...], vc: str | None) -> None:
        """`take` of free whole GPUs (the common case), with `_claim` inlined."""
        owner = self.owner
        n_gpus = len(owner)
        for gpu in gpus:
            if not 0 <= gpu < n_gpus:
                raise SchedulingError(f"GPU id {gpu} does not exist (cluster has {n_gpus})")
            if owner[gpu] != FREE:
                raise SchedulingError(f"GPU {gpu} is already held by job index {owner[gpu]}")
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
        if vc is not None:
            self.vc_used[vc] = self.vc_used.get(vc, 0.0) + float(len(gpus))

    def give_back(
        self, job_index: int, gpus: tuple[int, ...], milli: int = WHOLE, vc: str | None = None
    ) -> None:
        """Free what `take` gave the job."""
        owner = self.owner
        if milli == WHOLE and not self.packed_jobs:
            self._give_back_whole(job_index, gpus, vc)
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
        if vc is not None:
            self.vc_used[vc] -= len(gpus) * milli / WHOLE

    def _give_back_whole(self, job_index: int, gpus: tuple[int, ...], vc: str | None) -> None:
        """`give_back` of whole GPUs while nothing is packed, with `_release` inlined."""
        owner = self.owner
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
        if vc is not None:
            self.vc_used[vc] -= float(len(gpus))
