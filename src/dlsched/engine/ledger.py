"""The allocation ledger: who holds which GPU, with indexes that make placement cheap.

Per GPU type, nodes are bucketed by their number of free GPUs, so "a node of type t with at
least k free GPUs" costs O(GPUs per node) lookups instead of a scan over every node.
"""

from __future__ import annotations

from bisect import insort

from dlsched.cluster import Cluster
from dlsched.errors import SchedulingError

FREE = -1


class Ledger:
    """Owner of every GPU (a job index or FREE) and free-GPU indexes by node and type."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.owner: list[int] = [FREE] * cluster.num_gpus
        self.node_free: list[list[int]] = [list(node.gpu_ids) for node in cluster.nodes]
        self.node_type: list[str] = [node.gpu_type for node in cluster.nodes]
        self.gpu_node = cluster.gpu_node
        self.gpu_type = cluster.gpu_type_of
        self.capacity = cluster.capacity_by_type()
        self.free_by_type: dict[str, int] = dict(self.capacity)
        # buckets[t][c] = nodes of type t with exactly c free GPUs (c >= 1)
        self.buckets: dict[str, list[set[int]]] = {
            t: [set() for _ in range(cluster.max_gpus_per_node(t) + 1)] for t in self.capacity
        }
        for node in cluster.nodes:
            self.buckets[node.gpu_type][len(node.gpu_ids)].add(node.index)

    @property
    def free_total(self) -> int:
        return sum(self.free_by_type.values())

    def busy_by_type(self) -> dict[str, int]:
        return {t: self.capacity[t] - f for t, f in self.free_by_type.items()}

    def take(self, job_index: int, gpus: tuple[int, ...]) -> None:
        """Give `gpus` to a job; every one must be free."""
        owner = self.owner
        for gpu in gpus:
            if not 0 <= gpu < len(owner):
                raise SchedulingError(f"GPU id {gpu} does not exist (cluster has {len(owner)})")
            if owner[gpu] != FREE:
                raise SchedulingError(f"GPU {gpu} is already held by job index {owner[gpu]}")
        for gpu in gpus:
            owner[gpu] = job_index
            node = self.gpu_node[gpu]
            free = self.node_free[node]
            bucket = self.buckets[self.node_type[node]]
            bucket[len(free)].discard(node)
            free.remove(gpu)
            if free:
                bucket[len(free)].add(node)
            self.free_by_type[self.node_type[node]] -= 1

    def give_back(self, job_index: int, gpus: tuple[int, ...]) -> None:
        """Free `gpus`, which the job must hold."""
        owner = self.owner
        for gpu in gpus:
            if owner[gpu] != job_index:
                raise SchedulingError(f"GPU {gpu} is not held by job index {job_index}")
            owner[gpu] = FREE
            node = self.gpu_node[gpu]
            free = self.node_free[node]
            bucket = self.buckets[self.node_type[node]]
            if free:
                bucket[len(free)].discard(node)
            insort(free, gpu)
            bucket[len(free)].add(node)
            self.free_by_type[self.node_type[node]] += 1
