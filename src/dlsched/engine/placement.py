"""Placement helpers: choose GPU ids for "k GPUs of one pool" from the ledger's free GPUs.

A pool is (GPU type, owning virtual cluster or None); see `dlsched.engine.ledger`.

- `consolidated`: the fewest nodes. One node when one can hold the job (the fullest such
  node, to keep big holes for big jobs); otherwise whole free nodes first, largest first.
- `best_fit`: fill the nodes with the fewest free GPUs first (least fragmentation; may spread).
- `spread`: one GPU per node, round-robin over the nodes with the most free GPUs.
- `yarn`: YARN-CS as the Tiresias simulator models it (its `yarn` scheme): consolidation is
  a constraint, not a preference — a job waits until it fits on the fewest nodes its size
  allows, taken first-fit by node index (see `yarn`).

Each returns a sorted tuple of GPU ids, or None when `k` GPUs of that type are not free.
Ties between nodes go to the lowest node index, so placements are deterministic.

Those are *pool placers*, ``(ledger, k, pool) -> GPU ids``: they see free GPUs, not the job.
Where nodes account CPU and host memory and a job asks for them, `place_fitting` runs a pool
placer on the pool as that job sees it (`FittingPool`: each node keeps only as many free GPUs
as it has CPU and memory for), so every pool placer respects them with no change of its own;
without such demands the pool placers run on the ledger itself, as before.

A *job-aware* strategy (`JobStrategy`: a factory with ``job_aware = True``) is built once per
run from a `PlacementContext` and is asked with the job itself and every pool the job may use
(`JobPlacer.place`): it places whole and fractional jobs alike and weighs CPU and memory as it
sees fit. The GPU-sharing strategies of Weng et al. (ATC '23) are such strategies
(`dlsched.engine.sharing`: ``fgd``, ``random``, ``dot_product``, ``gpu_packing``,
``gpu_clustering``, ``weighted_best_fit``), each but ``random`` also as ``<name>:shuffled``,
its ties to a random node order drawn once per run (`sharing.ShuffledTies`). Both kinds are
registered in `STRATEGIES`, and plugins of either kind join through the
``dlsched.placements`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dlsched.engine.ledger import WHOLE, Ledger, Pool
from dlsched.jobs import JobSpec
from dlsched.registry import Registry

Placer = Callable[[Ledger, int, Pool], "tuple[int, ...] | None"]


def consolidated(ledger: Ledger, n_gpus: int, pool: Pool) -> tuple[int, ...] | None:
    """Fewest nodes; see the module docstring."""
    if ledger.free_by_pool.get(pool, 0) < n_gpus:
        return None
    buckets = ledger.buckets[pool]
    for free in range(n_gpus, len(buckets)):
        bucket = buckets[free]
        if bucket:
            return tuple(ledger.node_free[min(bucket)][:n_gpus])
    chosen: list[int] = []
    need = n_gpus
    taken: set[int] = set()
    for free in range(len(buckets) - 1, 0, -1):
        for node in sorted(buckets[free]):
            if need <= 0:
                break
            if free >= need:
                # The remainder fits on one node: use the fullest node that holds it.
                node = _best_single(buckets, need, taken)
                chosen.extend(ledger.node_free[node][:need])
                need = 0
                break
            chosen.extend(ledger.node_free[node])
            taken.add(node)
            need -= free
        if need <= 0:
            break
    return tuple(sorted(chosen))


def _best_single(buckets: list[set[int]], need: int, taken: set[int]) -> int:
    for free in range(need, len(buckets)):
        candidates = buckets[free] - taken
        if candidates:
            return min(candidates)
    raise AssertionError("a node with enough free GPUs was seen but not found")


def best_fit(ledger: Ledger, n_gpus: int, pool: Pool) -> tuple[int, ...] | None:
    """Fullest nodes first."""
    if ledger.free_by_pool.get(pool, 0) < n_gpus:
        return None
    buckets = ledger.buckets[pool]
    for free in range(n_gpus, len(buckets)):
        if buckets[free]:
            node = min(buckets[free])
            return tuple(ledger.node_free[node][:n_gpus])
    chosen: list[int] = []
    for free in range(1, len(buckets)):
        for node in sorted(buckets[free]):
            chosen.extend(ledger.node_free[node][: n_gpus - len(chosen)])
            if len(chosen) == n_gpus:
                return tuple(sorted(chosen))
    raise AssertionError("free GPU count and buckets disagree")


def spread(ledger: Ledger, n_gpus: int, pool: Pool) -> tuple[int, ...] | None:
    """One GPU per node, emptiest nodes first, then a second GPU per node, and so on."""
    if ledger.free_by_pool.get(pool, 0) < n_gpus:
        return None
    buckets = ledger.buckets[pool]
    nodes = [node for free in range(len(buckets) - 1, 0, -1) for node in sorted(buckets[free])]
    chosen: list[int] = []
    depth = 0
    while len(chosen) < n_gpus:
        for node in nodes:
            free = ledger.node_free[node]
            if depth < len(free):
                chosen.append(free[depth])
                if len(chosen) == n_gpus:
                    break
        depth += 1
    return tuple(sorted(chosen))


def yarn(ledger: Ledger, n_gpus: int, pool: Pool) -> tuple[int, ...] | None:
    """YARN-CS (SymbioticLab/Tiresias `simulator/switch.py`: `ms_yarn_alloc_res`). A job that
    fits on one node goes to the first node (lowest index) with enough free GPUs; a larger
    one takes ⌊k / g⌋ entirely free nodes of the pool's largest size g (lowest indices first)
    and, for the remainder, the first other node with enough free GPUs. None (the job waits)
    when that is not possible now, even if enough GPUs are free across nodes. The simulator's
    CPU and memory checks never bind on its cluster shapes and are not modelled."""
    if ledger.free_by_pool.get(pool, 0) < n_gpus:
        return None
    buckets = ledger.buckets[pool]
    size = len(buckets) - 1
    whole, rest = divmod(n_gpus, size) if n_gpus > size else (0, n_gpus)
    chosen: list[int] = []
    if whole:
        if len(buckets[size]) < whole:
            return None
        for node in sorted(buckets[size])[:whole]:
            chosen.extend(ledger.node_free[node])
    if rest:
        taken = {ledger.gpu_node[gpu] for gpu in chosen}
        last = min(
            (node for free in range(rest, size + 1) for node in buckets[free] if node not in taken),
            default=None,
        )
        if last is None:
            return None
        chosen.extend(ledger.node_free[last][:rest])
    return tuple(sorted(chosen))


def fraction(ledger: Ledger, milli: int, pool: Pool) -> tuple[int, ...] | None:
    """One GPU for a job asking `milli`/1000 of it: the fullest shared GPU it still fits on
    (best fit, lowest id on ties), else a free GPU on the fullest node."""
    best = None
    for gpu, load in ledger.partial.get(pool, {}).items():
        if load + milli <= WHOLE and (best is None or (-load, gpu) < best):
            best = (-load, gpu)
    if best is not None:
        return (best[1],)
    return best_fit(ledger, 1, pool)


# ---- CPU and host memory for pool placers ---------------------------------------------
def job_demand(spec: JobSpec, n_gpus: int) -> tuple[int, int]:
    """(milli-CPUs, MiB) the job holds on `n_gpus` GPUs: its demand, scaled up (rounded up)
    when an elastic job runs on another GPU count than it asked for (`Ledger.node_demands`)."""
    cpu, mem = spec.cpu_milli, spec.memory_mib
    asked = spec.num_gpus
    if n_gpus != asked and asked > 0:
        cpu, mem = -(-cpu * n_gpus // asked), -(-mem * n_gpus // asked)
    return cpu, mem


class FittingPool:
    """A pool's free GPUs as one job may use them where nodes account CPU and memory.

    Each node with free GPUs keeps only its first `k` free GPUs, `k` the most of the job's
    GPUs whose share of its demand (`k/n` of it, rounded up) the node has CPU and memory for;
    nodes with room for none are left out. It offers what pool placers read of a ledger
    (`free_by_pool`, `buckets`, `node_free`) and passes anything else to the ledger itself.
    """

    __slots__ = ("_ledger", "free_by_pool", "buckets", "node_free")

    def __init__(self, ledger: Ledger, pool: Pool, cpu: int, mem: int, n_gpus: int) -> None:
        self._ledger = ledger
        source = ledger.buckets[pool]
        buckets: list[set[int]] = [set() for _ in source]
        node_free: dict[int, list[int]] = {}
        fits, free_lists = ledger.fits_resources, ledger.node_free
        total = 0
        for count in range(1, len(source)):
            for node in source[count]:
                k = count
                while k and not fits(node, -(-cpu * k // n_gpus), -(-mem * k // n_gpus)):
                    k -= 1
                if k:
                    buckets[k].add(node)
                    node_free[node] = free_lists[node][:k]
                    total += k
        self.buckets = {pool: buckets}
        self.free_by_pool = {pool: total}
        self.node_free = node_free

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)


def place_fitting(
    ledger: Ledger, spec: JobSpec, n_gpus: int, pool: Pool, placer: Placer
) -> tuple[int, ...] | None:
    """`placer`'s answer for `n_gpus` of the job's GPUs in `pool`, on the nodes with CPU and
    memory for it (`FittingPool`). None when it finds none, or when its answer spreads the
    job so that a node's rounded share does not fit after all (`Ledger.node_demands`)."""
    cpu, mem = job_demand(spec, n_gpus)
    fitting = FittingPool(ledger, pool, cpu, mem, n_gpus)
    if fitting.free_by_pool[pool] < n_gpus:
        return None
    gpus = placer(fitting, n_gpus, pool)  # type: ignore[arg-type]
    if gpus is None or ledger.shortfall(ledger.node_demands(spec, gpus)) is not None:
        return None
    return gpus


def fraction_fitting(ledger: Ledger, spec: JobSpec, pool: Pool) -> tuple[int, ...] | None:
    """`fraction` for a job with CPU or memory demands: the fullest shared GPU whose node
    has room for the whole demand, else a free GPU by `best_fit` on nodes with room."""
    milli, cpu, mem = spec.gpu_milli, spec.cpu_milli, spec.memory_mib
    fits, gpu_node = ledger.fits_resources, ledger.gpu_node
    best = None
    for gpu, load in ledger.partial.get(pool, {}).items():
        if load + milli <= WHOLE and (best is None or (-load, gpu) < best):
            if fits(gpu_node[gpu], cpu, mem):
                best = (-load, gpu)
    if best is not None:
        return (best[1],)
    return place_fitting(ledger, spec, 1, pool, best_fit)


# ---- job-aware strategies ------------------------------------------------------------
@dataclass(frozen=True)
class PlacementContext:
    """What a job-aware strategy is built from, once per run: the run's `ledger` (read it,
    never change it), every job of the run in submit order (`specs`; FGD derives its typical
    jobs from them, as its paper does from the trace) and `rng`, the stream its random
    choices come from (the policy's, `ClusterView.rng`, so `simulate(seed=...)` reaches it)."""

    ledger: Ledger
    specs: Sequence[JobSpec]
    rng: np.random.Generator


class JobPlacer(Protocol):
    """A job-aware strategy's placer for one run."""

    def place(self, spec: JobSpec, n_gpus: int, pools: Sequence[Pool]) -> tuple[int, ...] | None:
        """GPU ids for `n_gpus` of the job's GPUs (a fraction of one when `spec.gpu_milli`
        < 1000) in any of `pools` (the pools the job may use, fastest type first), or None
        when it does not fit now. VC quotas are checked before; CPU and memory are the
        strategy's to respect. `n_gpus` 0: a job without GPUs (`JobSpec.num_gpus` 0), for
        which the answer is the host slot of a node with room for its CPU and memory,
        ``(ledger.host_slot(node),)``."""
        ...


class JobStrategy(Protocol):
    """A registered job-aware strategy: ``job_aware = True`` and a call that builds the
    run's `JobPlacer` from its `PlacementContext`."""

    job_aware: bool

    def __call__(self, context: PlacementContext) -> JobPlacer: ...


def is_job_aware(strategy: object) -> bool:
    """Whether a registered strategy is job-aware (`JobStrategy`) rather than a pool placer."""
    return getattr(strategy, "job_aware", False) is True


STRATEGIES: Registry[Placer | JobStrategy] = Registry(
    "placement", entry_point_group="dlsched.placements"
)
"""Placement strategy name → pool placer or job-aware strategy. Plugins: the
``dlsched.placements`` entry-point group."""
STRATEGIES.add("consolidated", consolidated)
STRATEGIES.add("best_fit", best_fit)
STRATEGIES.add("spread", spread)
STRATEGIES.add("yarn", yarn)
for _name, _attribute in (
    ("fgd", "FGD"),
    ("random", "RandomFit"),
    ("dot_product", "DotProduct"),
    ("gpu_packing", "GpuPacking"),
    ("gpu_clustering", "GpuClustering"),
    ("weighted_best_fit", "WeightedBestFit"),
):
    STRATEGIES.add_lazy(_name, f"dlsched.engine.sharing:{_attribute}")
    if _name != "random":  # its ties are already random: `sharing.ShuffledTies` of the rest
        STRATEGIES.add_lazy(f"{_name}:shuffled", f"dlsched.engine.sharing:SHUFFLED_{_name.upper()}")
del _name, _attribute

#: Placers whose answer depends only on the free GPUs of the pool they are given.
POOL_ONLY: frozenset[Placer] = frozenset((consolidated, best_fit, spread, yarn))


_PLACERS: dict[str, Placer | JobStrategy] = {}  # names looked up; a name never changes


def get_placer(name: str) -> Placer | JobStrategy:
    """A placement strategy by name (`UnknownNameError`, a ValueError, if there is none)."""
    try:
        return _PLACERS[name]  # on every placement: skip the registry's checks
    except KeyError:
        placer = _PLACERS[name] = STRATEGIES.get(name)
        return placer
