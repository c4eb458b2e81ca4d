"""Placement for GPU-sharing workloads: FGD and the baselines it is compared with.

Paper: Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
Fragmentation Gradient Descent", USENIX ATC '23 (§4-§6); definitions as its authors'
simulator states them (``hkust-adsl/kubernetes-scheduler-simulator``, commit ``8f3d641``,
``pkg/simulator/plugin/*_score.go``, ``pkg/utils/frag.go``), where each strategy is a
Kubernetes score plugin: every node that can hold the job (enough GPU, CPU and memory, an
allowed GPU type) gets an integer score in 0-100 and the job goes to a node of the highest
score; among equal scores, the lowest node index (the authors changed Kubernetes'
``selectHost`` from a random choice to the smallest node name, "for reproducibility"), or,
wrapped in `ShuffledTies`, the first node of a random order drawn once per run (what that
rule amounts to in their simulator, which prefixes every node's name with its place in a
random permutation of the nodes when it creates them: ``syncClusterResourceList``). Each
strategy but ``random`` is also registered so wrapped, as ``<name>:shuffled``
(``placement="gpu_packing:shuffled"``).

- ``fgd``: fragmentation gradient descent. A node's *fragmentation* (`node_fragmentation`)
  is the GPU capacity (milli-GPUs) a job drawn from the workload's *typical jobs* could not
  use there, in expectation: all its unallocated GPU if that job does not fit (too few GPUs
  with enough left, too little CPU, a GPU type it may not use), else the GPUs with less left
  than the job asks. The job goes where its placement increases fragmentation least; score
  ``int(100 sigmoid((F_before - F_after) / 1000))``. Inside the node, a fractional job takes
  the GPU that scores best (lowest index among equal scores).
- ``weighted_best_fit`` (the paper's BestFit): the least remaining resources after placing,
  ``int(100 (1 - (½ cpu_left / 128 cores + ½ gpu_left / 8 GPUs)))``.
- ``dot_product`` (DotProd, Tetris' alignment as the authors configure it): the smallest dot
  product of the node's free (CPU, GPU) and the job's demand, each over (128 cores, 8 GPUs):
  ``int(100 (1 - dot / 2))``.
- ``gpu_packing`` (Packing): prefer a partly used GPU (the fuller the better, in steps of
  10 %), then a used node (the fewer free GPUs taken the better), then an idle node (the
  fewer GPUs the better).
- ``gpu_clustering`` (Clustering): prefer nodes whose jobs are all of the job's kind
  (sharing, or whole with the same GPU count), then nodes with that kind among others,
  then idle nodes, then nodes of other kinds; within each, the fuller the better.
- ``random``: a node chosen uniformly at random among those that fit.

A job without GPUs (a CPU-only pod: `JobSpec.num_gpus` 0) may go to any node with room for
its CPU and memory, whatever its GPUs hold, of a GPU type its ``gpu_constraint`` allows and
of its VC's nodes (or the unowned ones when its VC owns none; see Differences), and is
scored as the plugins score such a pod: ``fgd`` by the fragmentation its CPU adds (a node
left with too little CPU for a typical job strands its free GPUs), ``weighted_best_fit``
and ``dot_product`` by the same formulas with no GPU asked, ``gpu_packing`` and
``gpu_clustering`` 0 on every node (their ``MinNodeScore`` for ``podGpuMilli <= 0`` / the
``no-gpu`` affinity: the tie rule alone decides), ``random`` uniformly. It takes the node's
host slot (`dlsched.engine.ledger`). A CPU-only pod adds no kind to its node under
``gpu_clustering`` (the authors count only GPU affinities), and a node whose GPUs are all
free still counts as idle under ``gpu_packing`` while CPU-only pods run on it.

Inside the chosen node a whole-GPU job takes its lowest free GPU ids; a fractional job
takes, except under ``fgd``, the fullest GPU it fits on (best fit, lowest id on ties), and
under ``random`` a GPU chosen uniformly at random among those it fits on (the authors'
``-gpusel best`` / ``random``).

Faithful: the scores to the integer and the choice among equal scores; the typical
jobs (the most frequent (CPU, GPU fraction, GPU count, GPU types) shapes of the run's jobs,
taken until they cover 95 % of the jobs, their frequencies normalised; the authors'
``--pod-popularity-threshold 95 --pod-increase-step 1``); CPU as the only host resource
in fragmentation (memory only decides where a job fits), as in the authors' ``frag.go``.

Differences: the authors' ``Open-Gpu-Share`` filter passes every node for a pod that asks
no GPU, before its GPU-type check; here a job without GPUs still keeps to its
``gpu_constraint`` and its VC's nodes (no CPU-only pod of the openb trace has a
``gpu_spec``, so fgd-openb is unaffected).

Simplified: a job asking for more GPUs than any node has (no such pod exists in a
Kubernetes cluster) is placed by ``consolidated``; the run's own jobs (CPU-only ones
included when the workload has them) stand for the trace the authors derive typical jobs
from (`FGDWith` gives others); without CPU accounting the CPU terms are left out;
``random``'s choices and `ShuffledTies`' order come from the policy's stream
(`ClusterView.rng`), so they depend on the seed, not on Go's generator.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from dlsched.engine.ledger import FREE, PACKED, SHARED, UNLIMITED, WHOLE, Ledger, Pool
from dlsched.engine.placement import (
    JobStrategy,
    PlacementContext,
    consolidated,
    get_placer,
    is_job_aware,
    job_demand,
    place_fitting,
)
from dlsched.jobs import JobSpec

MAX_SCORE = 100
"""Kubernetes' ``framework.MaxNodeScore``: scores are integers in 0-100."""
MAX_SPEC_CPU_MILLI = 128_000
MAX_SPEC_GPU_MILLI = 8_000
"""The authors' normalisers (``open-gpu-share/utils/const.go``: ``MaxSpecCpu``,
``MaxSpecGpu``): the largest node's CPU (128 cores) and GPUs (8)."""
TYPICAL_SHARE = 0.95
"""Typical jobs cover this share of the jobs (``generate_config_and_run.py``,
``--pod-popularity-threshold 95``)."""
_INF = float("inf")


@dataclass(frozen=True)
class TypicalJob:
    """One shape of job FGD expects, with its `share` of the typical jobs (they sum to 1).
    `gpu_types`: the GPU types it may use (None: any)."""

    cpu_milli: int
    gpu_milli: int
    num_gpus: int
    gpu_types: tuple[str, ...] | None
    share: float


Shape = tuple[int, int, int, tuple[str, ...]]
"""A job's (milli-CPUs, milli-GPUs per GPU, GPU count, allowed GPU types or ())."""


def job_shape(spec: JobSpec) -> Shape:
    """The shape FGD counts a job by."""
    return (spec.cpu_milli, spec.gpu_milli, spec.num_gpus, spec.gpu_constraint or ())


def typical_jobs(
    shapes: Sequence[Shape], threshold: float = TYPICAL_SHARE
) -> tuple[TypicalJob, ...]:
    """The most frequent of `shapes` (one per job; `job_shape`), most frequent first (ties:
    the larger shape first), taken until they cover `threshold` of the jobs, with their
    shares renormalised to sum to 1 (the authors' ``GetTypicalPods``, its arithmetic
    included). A shape with no GPUs stands for a CPU-only job."""
    counts = Counter(shapes)
    if not counts:
        return ()
    ordered = sorted(counts.items(), key=lambda item: (item[1], item[0]), reverse=True)
    total = float(sum(counts.values()))
    kept = []
    covered = 0.0
    for shape, count in ordered:
        if covered >= threshold * total:
            break
        kept.append((shape, count))
        covered += count
    return tuple(
        TypicalJob(cpu, milli, gpus, types or None, (count / total) / (covered / total))
        for (cpu, milli, gpus, types), count in kept
    )


# Fragmentation categories of the authors' ``frag.go``, in its order; all but Q3 count.
_Q1, _Q2, _Q3, _Q4, _XL, _XR, _NA = range(7)


def node_fragmentation(
    lefts: Sequence[int],
    typical: Sequence[TypicalJob],
    cpu_left: float = _INF,
    gpu_type: str | None = None,
) -> float:
    """FGD's fragmentation of one node, in milli-GPUs: the expected unallocated GPU a typical
    job could not use there (`lefts`: milli-GPUs left on each GPU of the node). Summed as
    the authors do (``NodeGpuShareFragAmount``, then all categories but Q3 in order), so
    that equal states give bit-equal values and scores tie where theirs do."""
    total = sum(lefts)
    data = [0.0] * 7
    for job in typical:
        share = job.share
        if job.gpu_milli <= 0 or job.num_gpus <= 0:  # a CPU-only job uses no GPU anywhere
            data[_XL if job.cpu_milli <= cpu_left else _XR] += share * total
            continue
        if job.gpu_types is not None and gpu_type not in job.gpu_types:
            data[_NA] += share * total
            continue
        cpu_ok = job.cpu_milli <= cpu_left
        if sum(1 for v in lefts if v >= job.gpu_milli) >= job.num_gpus:
            if not cpu_ok:
                data[_Q4] += share * total
                continue
            stranded = sum(v for v in lefts if v < job.gpu_milli)
            data[_Q2] += share * stranded
            data[_Q3] += share * (total - stranded)
        else:
            data[_Q2 if cpu_ok else _Q1] += share * total
    return data[_Q1] + data[_Q2] + data[_Q4] + data[_XL] + data[_XR] + data[_NA]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class _Node:
    """What a score sees of one node: milli-GPUs left on each GPU with some left (largest
    first, as a tuple), its GPU count, CPU left (inf when not accounted) and the node."""

    __slots__ = ("node", "gpu_type", "size", "lefts", "cpu_left", "partial")

    def __init__(
        self,
        node: int,
        gpu_type: str,
        size: int,
        lefts: tuple[int, ...],
        cpu_left: float,
        partial: list[tuple[int, int]],
    ) -> None:
        self.node = node
        self.gpu_type = gpu_type
        self.size = size
        self.lefts = lefts
        self.cpu_left = cpu_left
        self.partial = partial  # (GPU id, milli left) of its partly used GPUs with room


class SharingPlacer:
    """The mechanism every GPU-sharing strategy shares: the nodes that fit, their scores,
    the choice among the best, and the GPUs inside the chosen node.

    Nodes whose GPUs are all free are scored once per (pool, GPU count, CPU, memory) class
    (for its lowest node): such a node holds no job, so its CPU and memory are all free too
    (a job holds CPU and memory only on the nodes of its GPUs). Nodes in use are scored one
    by one. A call costs set operations over the free-GPU buckets plus a score per node in
    use. Subclasses give `score` and may override `pick_gpu` and `_choose`.
    """

    job_aware = True

    def __init__(self, context: PlacementContext) -> None:
        ledger = context.ledger
        self.ledger: Ledger = ledger
        self.rng = context.rng
        self.specs = context.specs
        cluster = ledger.cluster
        cpu_cap = ledger.cpu_capacity
        mem_cap = ledger.mem_capacity
        classes: dict[Pool, dict[tuple[int, int, int], set[int]]] = {}
        self._size_nodes: dict[Pool, dict[int, frozenset[int]]] = {}
        sizes: dict[Pool, dict[int, set[int]]] = {}
        for node in cluster.nodes:
            pool = ledger.node_pool[node.index]
            size = len(node.gpu_ids)
            key = (
                size,
                cpu_cap[node.index] if cpu_cap is not None else 0,
                mem_cap[node.index] if mem_cap is not None else 0,
            )
            classes.setdefault(pool, {}).setdefault(key, set()).add(node.index)
            sizes.setdefault(pool, {}).setdefault(size, set()).add(node.index)
        self._classes = {
            pool: [(key, frozenset(nodes)) for key, nodes in sorted(by.items())]
            for pool, by in classes.items()
        }
        self._size_nodes = {
            pool: {size: frozenset(nodes) for size, nodes in by.items()}
            for pool, by in sizes.items()
        }
        self._largest = {pool: max(by) for pool, by in sizes.items()}
        self._pool_nodes = {
            pool: frozenset().union(*by.values()) for pool, by in self._size_nodes.items()
        }
        self._gpus = [node.gpu_ids for node in cluster.nodes]
        self._tie_rank: list[int] | None = None  # tie-break order (`order_nodes`); None: index

    # ---- what subclasses give ----------------------------------------------------------
    def score(self, state: _Node, spec: JobSpec, n_gpus: int, cpu: int) -> int:
        """The node's integer score for the job (higher is better)."""
        raise NotImplementedError

    def pick_gpu(self, state: _Node, spec: JobSpec, cpu: int) -> int:
        """The GPU of the node a fractional job takes: the fullest it fits on (best fit)."""
        milli = spec.gpu_milli
        best = None
        for gpu, left in state.partial:
            if left >= milli and (best is None or (left, gpu) < best):
                best = (left, gpu)
        if best is not None:
            return best[1]
        return self.ledger.node_free[state.node][0]

    # ---- the mechanism -----------------------------------------------------------------
    def place(self, spec: JobSpec, n_gpus: int, pools: Sequence[Pool]) -> tuple[int, ...] | None:
        """See `dlsched.engine.placement.JobPlacer`."""
        ledger = self.ledger
        if not n_gpus:
            return self._place_host(spec, pools)
        fractional = spec.gpu_milli < WHOLE
        tracked = ledger.tracks_resources and bool(spec.cpu_milli or spec.memory_mib)
        cpu, mem = job_demand(spec, n_gpus) if tracked else (0, 0)
        if not fractional and all(n_gpus > self._largest.get(pool, 0) for pool in pools):
            return self._spread(spec, n_gpus, pools, tracked)
        need = 1 if fractional else n_gpus
        hosting = ledger.hosting
        milli = spec.gpu_milli
        fits = ledger.fits_resources
        cpu_free = ledger.cpu_free
        best = -1
        tied: list[tuple[_Node, AbstractSet[int] | None]] = []
        for pool in pools:
            source = ledger.buckets.get(pool)
            if source is None:
                continue
            partial, room = self._partial_by_node(pool, milli if fractional else WHOLE + 1)
            # idle nodes: one score per class
            for (size, cpu_cap, mem_cap), members in self._classes[pool]:
                if size < need:
                    continue
                if tracked and not _fits_idle(cpu_cap, mem_cap, cpu, mem, ledger):
                    continue
                idle = source[size] & members
                if hosting and idle:
                    idle -= hosting.keys()  # scored one by one below
                if not idle:
                    continue
                state = _Node(
                    self._first(idle),
                    pool[0],
                    size,
                    (WHOLE,) * size,
                    cpu_cap if cpu_free is not None and cpu_cap < UNLIMITED else _INF,
                    [],
                )
                value = self.score(state, spec, n_gpus, cpu)
                if value > best:
                    best, tied = value, [(state, idle)]
                elif value == best:
                    tied.append((state, idle))
            # nodes in use
            size_nodes = self._size_nodes[pool]
            used: set[int] = set()
            for count in range(need, len(source)):
                nodes = source[count]
                if nodes:
                    same = size_nodes.get(count)
                    used.update(nodes - same if same else nodes)
            if fractional:
                used.update(room)
            if hosting:  # nodes with all GPUs free that hold jobs without GPUs
                free_lists = ledger.node_free
                used.update(
                    node
                    for node in hosting
                    if ledger.node_pool[node] == pool and len(free_lists[node]) >= need
                )
            for node in sorted(used):
                if tracked and not fits(node, cpu, mem):
                    continue
                state = self._state(node, pool, partial.get(node, []))
                value = self.score(state, spec, n_gpus, cpu)
                if value > best:
                    best, tied = value, [(state, None)]
                elif value == best:
                    tied.append((state, None))
        if not tied:
            return None
        state = self._choose(tied)
        if fractional:
            return (self.pick_gpu(state, spec, cpu),)
        return tuple(ledger.node_free[state.node][:n_gpus])

    def _place_host(self, spec: JobSpec, pools: Sequence[Pool]) -> tuple[int, ...] | None:
        """A job without GPUs: the host slot of the best-scoring node of `pools` with room
        for its CPU and memory, whatever its GPUs hold (the authors' filter passes every
        node for a pod that asks no GPU). Nodes whose GPUs are all free and that hold no
        job are scored once per class, as for GPU jobs."""
        ledger = self.ledger
        cpu, mem = spec.cpu_milli, spec.memory_mib
        fits = ledger.fits_resources
        cpu_free = ledger.cpu_free
        hosting = ledger.hosting
        best = -1
        tied: list[tuple[_Node, AbstractSet[int] | None]] = []
        for pool in pools:
            source = ledger.buckets.get(pool)
            if source is None:
                continue
            idle_all: set[int] = set()
            for (size, cpu_cap, mem_cap), members in self._classes[pool]:
                idle = source[size] & members
                if hosting and idle:
                    idle -= hosting.keys()
                idle_all |= idle
                if not idle or not _fits_idle(cpu_cap, mem_cap, cpu, mem, ledger):
                    continue
                state = _Node(
                    self._first(idle),
                    pool[0],
                    size,
                    (WHOLE,) * size,
                    cpu_cap if cpu_free is not None and cpu_cap < UNLIMITED else _INF,
                    [],
                )
                value = self.score(state, spec, 0, cpu)
                if value > best:
                    best, tied = value, [(state, idle)]
                elif value == best:
                    tied.append((state, idle))
            partial, _ = self._partial_by_node(pool, WHOLE + 1)
            for node in sorted(self._pool_nodes[pool] - idle_all):
                if not fits(node, cpu, mem):
                    continue
                state = self._state(node, pool, partial.get(node, []))
                value = self.score(state, spec, 0, cpu)
                if value > best:
                    best, tied = value, [(state, None)]
                elif value == best:
                    tied.append((state, None))
        if not tied:
            return None
        return (ledger.host_slot(self._choose(tied).node),)

    def order_nodes(self, rank: Sequence[int]) -> None:
        """Break ties by `rank` (node index → its position; a permutation of the nodes)
        instead of by node index (`ShuffledTies`)."""
        self._tie_rank = list(rank)

    def _first(self, nodes: AbstractSet[int]) -> int:
        """The node that wins a tie among `nodes`: the lowest index, or the lowest rank."""
        rank = self._tie_rank
        return min(nodes) if rank is None else min(nodes, key=rank.__getitem__)

    def _choose(self, tied: list[tuple[_Node, AbstractSet[int] | None]]) -> _Node:
        """The node of the lowest index among the best (the authors' ``selectHost`` takes
        the smallest node name among equal scores, "for reproducibility"), or of the lowest
        rank (`order_nodes`)."""
        rank = self._tie_rank
        if rank is None:
            return min(tied, key=lambda item: item[0].node)[0]
        return min(tied, key=lambda item: rank[item[0].node])[0]

    def _partial_by_node(
        self, pool: Pool, milli: int
    ) -> tuple[dict[int, list[tuple[int, int]]], set[int]]:
        """Per node of `pool`, its partly used GPUs with room left, as (GPU, milli left);
        and the nodes with one that has `milli` left."""
        by_node: dict[int, list[tuple[int, int]]] = {}
        room: set[int] = set()
        gpu_node = self.ledger.gpu_node
        for gpu, load in self.ledger.partial.get(pool, {}).items():
            node = gpu_node[gpu]
            left = WHOLE - load
            by_node.setdefault(node, []).append((gpu, left))
            if left >= milli:
                room.add(node)
        return by_node, room

    def _state(self, node: int, pool: Pool, partial: list[tuple[int, int]]) -> _Node:
        ledger = self.ledger
        free = len(ledger.node_free[node])
        lefts = (WHOLE,) * free + tuple(sorted((left for _, left in partial), reverse=True))
        cpu_free = ledger.cpu_free
        # A node that declares no cores is not scored as one with 2^62 of them free.
        declared = cpu_free is not None and ledger.cpu_capacity[node] < UNLIMITED  # type: ignore[index]
        return _Node(
            node,
            pool[0],
            len(self._gpus[node]),
            lefts,
            cpu_free[node] if declared else _INF,  # type: ignore[index]
            partial,
        )

    def _spread(
        self, spec: JobSpec, n_gpus: int, pools: Sequence[Pool], tracked: bool
    ) -> tuple[int, ...] | None:
        """A job larger than any node: the fewest nodes (`consolidated`), pools in order."""
        ledger = self.ledger
        for pool in pools:
            if ledger.free_by_pool.get(pool, 0) < n_gpus:
                continue
            if tracked:
                gpus = place_fitting(ledger, spec, n_gpus, pool, consolidated)
            else:
                gpus = consolidated(ledger, n_gpus, pool)
            if gpus is not None:
                return gpus
        return None


def _fits_idle(cpu_cap: int, mem_cap: int, cpu: int, mem: int, ledger: Ledger) -> bool:
    """Whether an idle node of these capacities holds the demand (a resource no node
    declares always does)."""
    return (ledger.cpu_free is None or cpu_cap >= cpu) and (
        ledger.mem_free is None or mem_cap >= mem
    )


class RandomFit(SharingPlacer):
    """``random``: any node that fits, uniformly; a fractional job's GPU uniformly among
    those it fits on (the authors' ``RandomScore`` with ``-gpusel random``)."""

    def score(self, state: _Node, spec: JobSpec, n_gpus: int, cpu: int) -> int:
        return 0

    def _choose(self, tied: list[tuple[_Node, AbstractSet[int] | None]]) -> _Node:
        """A node uniformly at random among all that fit (one draw)."""
        total = sum(1 if members is None else len(members) for _, members in tied)
        pick = int(self.rng.integers(total)) if total > 1 else 0
        for state, members in tied:
            if members is None:
                if pick == 0:
                    return state
                pick -= 1
            elif pick < len(members):
                node = sorted(members)[pick]
                return _Node(node, state.gpu_type, state.size, state.lefts, state.cpu_left, [])
            else:
                pick -= len(members)
        raise AssertionError("the draw is below the number of nodes that fit")

    def pick_gpu(self, state: _Node, spec: JobSpec, cpu: int) -> int:
        milli = spec.gpu_milli
        options = sorted(
            [gpu for gpu, left in state.partial if left >= milli]
            + list(self.ledger.node_free[state.node])
        )
        return options[int(self.rng.integers(len(options)))] if len(options) > 1 else options[0]


class WeightedBestFit(SharingPlacer):
    """``weighted_best_fit``: the paper's BestFit (``BestFitScore``): least resources left."""

    def score(self, state: _Node, spec: JobSpec, n_gpus: int, cpu: int) -> int:
        gpu_left = sum(state.lefts) - n_gpus * spec.gpu_milli
        value = 0.5 * gpu_left / MAX_SPEC_GPU_MILLI
        if state.cpu_left != _INF:
            value += 0.5 * (state.cpu_left - cpu) / MAX_SPEC_CPU_MILLI
        return int((1.0 - value) * MAX_SCORE)


class DotProduct(SharingPlacer):
    """``dot_product``: DotProd (``DotProductScore``, ``-dimext merge -norm max``): the
    smallest dot product of free (CPU, GPU) and demand, each over the largest node's."""

    def score(self, state: _Node, spec: JobSpec, n_gpus: int, cpu: int) -> int:
        gpu_left = sum(state.lefts)
        dot = (gpu_left / MAX_SPEC_GPU_MILLI) * (n_gpus * spec.gpu_milli / MAX_SPEC_GPU_MILLI)
        if state.cpu_left != _INF:
            dot += (state.cpu_left / MAX_SPEC_CPU_MILLI) * (cpu / MAX_SPEC_CPU_MILLI)
        return int(MAX_SCORE * (1.0 - dot / 2))


class GpuPacking(SharingPlacer):
    """``gpu_packing``: Packing (``GpuPackingScore``); see the module docstring."""

    def score(self, state: _Node, spec: JobSpec, n_gpus: int, cpu: int) -> int:
        if not n_gpus:  # a pod without GPUs: MinNodeScore everywhere
            return 0
        lefts = state.lefts
        free = lefts.count(WHOLE)
        if free == state.size:
            return max(MAX_SCORE // 3 - free, free)
        milli = spec.gpu_milli
        # the GPUs it would use: the least left that fit, smallest first
        chosen = [v for v in sorted(lefts) if v >= milli][:n_gpus]
        whole = chosen.count(WHOLE)
        if whole:
            return max(MAX_SCORE // 2 - whole, MAX_SCORE // 3)
        ratio = sum(v * 100 // WHOLE for v in chosen)
        return max(MAX_SCORE - ratio // 10, MAX_SCORE // 2)


class GpuClustering(SharingPlacer):
    """``gpu_clustering``: Clustering (``GpuClusteringScore``); see the module docstring."""

    def score(self, state: _Node, spec: JobSpec, n_gpus: int, cpu: int) -> int:
        if not n_gpus:  # a pod without GPUs (the "no-gpu" affinity): MinNodeScore everywhere
            return 0
        fill = MAX_SCORE // 4 * (MAX_SPEC_GPU_MILLI - sum(state.lefts)) // MAX_SPEC_GPU_MILLI
        kinds = self._kinds(state)
        kind = _kind(spec.gpu_milli, n_gpus)
        if kind in kinds:
            return fill + (MAX_SCORE * 3 // 4 if len(kinds) == 1 else MAX_SCORE // 2)
        return fill + (MAX_SCORE // 4 if not kinds else 0)

    def _kinds(self, state: _Node) -> set[tuple[int, int]]:
        """The kinds of the jobs on the node: (1, milli) sharing, (k, 1000) k whole GPUs."""
        if len(state.lefts) == state.size and all(v == WHOLE for v in state.lefts):
            return set()
        ledger, specs = self.ledger, self.specs
        owner = ledger.owner
        holders: set[int] = set()
        for gpu in self._gpus[state.node]:
            held = owner[gpu]
            if held >= 0:
                holders.add(held)
            elif held == SHARED:
                holders.update(ledger.shared_jobs[gpu])
            elif held == PACKED:
                holders.update(ledger.packed_jobs[gpu])
            elif held != FREE:
                raise AssertionError(f"GPU {gpu} has an unknown owner code {held}")
        return {_kind(specs[i].gpu_milli, specs[i].num_gpus) for i in holders}


def _kind(milli: int, n_gpus: int) -> tuple[int, int]:
    return (1, 0) if milli < WHOLE else (n_gpus, WHOLE)


class FGD(SharingPlacer):
    """``fgd``: fragmentation gradient descent (``FGDScore``); see the module docstring."""

    def __init__(
        self, context: PlacementContext, typical: Sequence[TypicalJob] | None = None
    ) -> None:
        super().__init__(context)
        self.typical = (
            tuple(typical)
            if typical is not None
            else typical_jobs([job_shape(spec) for spec in context.specs])
        )
        self._by_type = any(job.gpu_types is not None for job in self.typical)
        self._cpu_steps = sorted({job.cpu_milli for job in self.typical})
        self._frag: dict[tuple, float] = {}
        self._scores: dict[tuple, tuple[int, tuple[int, ...]]] = {}

    def _fragmentation(self, lefts: tuple[int, ...], cpu_rank: int, gpu_type: str) -> float:
        """`node_fragmentation`, remembered by state (CPU only through which typical jobs
        it holds: `cpu_rank` of the sorted CPU demands fit)."""
        key = (lefts, cpu_rank, gpu_type if self._by_type else None)
        value = self._frag.get(key)
        if value is None:
            cpu = self._cpu_steps[cpu_rank - 1] if cpu_rank else -1
            value = self._frag[key] = node_fragmentation(lefts, self.typical, cpu, gpu_type)
        return value

    def _rank(self, cpu_left: float) -> int:
        return bisect_right(self._cpu_steps, cpu_left)

    def _best(
        self, state: _Node, spec: JobSpec, n_gpus: int, cpu: int
    ) -> tuple[int, tuple[int, ...]]:
        """(score, milli-left values of the GPUs that give it) for the job on the node."""
        before_rank = self._rank(state.cpu_left)
        after_rank = self._rank(state.cpu_left - cpu)
        key = (state.lefts, before_rank, after_rank, n_gpus, spec.gpu_milli, state.gpu_type)
        found = self._scores.get(key)
        if found is not None:
            return found
        lefts, gpu_type = state.lefts, state.gpu_type
        before = self._fragmentation(lefts, before_rank, gpu_type)
        milli = spec.gpu_milli
        result: tuple[int, tuple[int, ...]]
        if milli >= WHOLE or not n_gpus:  # whole GPUs, or none (a CPU-only job)
            after = self._fragmentation(lefts[n_gpus:], after_rank, gpu_type)
            result = (int(_sigmoid((before - after) / 1000) * MAX_SCORE), (WHOLE,))
        else:
            best, values = -1, []
            for value in sorted(set(lefts), reverse=True):
                if value < milli:
                    continue
                rest = list(lefts)
                rest.remove(value)
                if value > milli:
                    rest.append(value - milli)
                after = self._fragmentation(tuple(sorted(rest, reverse=True)), after_rank, gpu_type)
                score = int(_sigmoid((before - after) / 1000) * MAX_SCORE)
                if score > best:
                    best, values = score, [value]
                elif score == best:
                    values.append(value)
            result = (best, tuple(values))
        self._scores[key] = result
        return result

    def score(self, state: _Node, spec: JobSpec, n_gpus: int, cpu: int) -> int:
        return self._best(state, spec, n_gpus, cpu)[0]

    def pick_gpu(self, state: _Node, spec: JobSpec, cpu: int) -> int:
        values = self._best(state, spec, 1, cpu)[1]
        options = [gpu for gpu, left in state.partial if left in values]
        if WHOLE in values:
            options.append(self.ledger.node_free[state.node][0])
        return min(options)


class ShuffledTies:
    """A job-aware sharing strategy whose ties go to the first node of a random order of
    the nodes, drawn once per run from the policy's stream (`PlacementContext.rng`), rather
    than to the lowest node index.

    This is what the authors' simulator does in effect: ``syncClusterResourceList`` prefixes
    each node's name with its position in ``rand.Perm`` of the nodes before it creates
    them, so ``selectHost``'s smallest name among equal scores is a random node, the same
    one for the whole run. It matters where many nodes tie (a CPU-only pod under
    ``gpu_packing`` and ``gpu_clustering``, which score it 0 everywhere; idle nodes of one
    shape). `strategy`: a registered name (``"gpu_packing"``) or a job-aware strategy
    object (`FGDWith`)."""

    job_aware = True

    def __init__(self, strategy: str | JobStrategy) -> None:
        self.strategy = strategy

    def __call__(self, context: PlacementContext) -> SharingPlacer:
        found = get_placer(self.strategy) if isinstance(self.strategy, str) else self.strategy
        if not is_job_aware(found):
            raise ValueError(
                f"ShuffledTies needs a job-aware sharing strategy, not {self.strategy!r}"
            )
        placer = found(context)  # type: ignore[call-arg, arg-type]
        if not isinstance(placer, SharingPlacer):
            raise ValueError(f"ShuffledTies needs a sharing strategy, not {self.strategy!r}")
        order = context.rng.permutation(len(context.ledger.cluster.nodes))
        rank = [0] * len(order)
        for position, node in enumerate(order.tolist()):
            rank[node] = position
        placer.order_nodes(rank)
        return placer

    def __repr__(self) -> str:
        return f"ShuffledTies({self.strategy!r})"


# Registered as ``<name>:shuffled`` (`dlsched.engine.placement.STRATEGIES`): each keeps no
# per-run state (its placer is built per run, its order drawn from that run's stream).
SHUFFLED_FGD = ShuffledTies("fgd")
SHUFFLED_DOT_PRODUCT = ShuffledTies("dot_product")
SHUFFLED_GPU_PACKING = ShuffledTies("gpu_packing")
SHUFFLED_GPU_CLUSTERING = ShuffledTies("gpu_clustering")
SHUFFLED_WEIGHTED_BEST_FIT = ShuffledTies("weighted_best_fit")


class FGDWith:
    """A job-aware strategy: ``fgd`` with the given typical jobs instead of the run's (a
    trace's, say, CPU-only jobs included). Register it under a name of your own:
    ``STRATEGIES.add("fgd-mine", FGDWith(typical_jobs(shapes)))``."""

    job_aware = True

    def __init__(self, typical: Sequence[TypicalJob]) -> None:
        self.typical = tuple(typical)

    def __call__(self, context: PlacementContext) -> FGD:
        return FGD(context, self.typical)

    def __repr__(self) -> str:
        return f"FGDWith({len(self.typical)} typical jobs)"
