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
"""

from __future__ import annotations

from collections.abc import Callable

from dlsched.engine.ledger import WHOLE, Ledger, Pool
from dlsched.registry import Registry

Placer = Callable[[Ledger, int, Pool], "tuple[int, ...] | None"]


def consolidated(ledger: Ledger, n_gpus: int, pool: Pool) -> tuple[int, ...] | None:
    """Fewest nodes; see the module docstring."""
    if ledger.free_by_pool.get(pool, 0) < n_gpus:
        return None
    buckets = ledger.buckets[pool]
    for free in range(n_gpus, len(buckets)):
        if buckets[free]:
            node = min(buckets[free])
            return tuple(ledger.node_free[node][:n_gpus])
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


STRATEGIES: Registry[Placer] = Registry("placement", entry_point_group="dlsched.placements")
"""Placement strategy name → placer. Plugins: the ``dlsched.placements`` entry-point group."""
STRATEGIES.add("consolidated", consolidated)
STRATEGIES.add("best_fit", best_fit)
STRATEGIES.add("spread", spread)
STRATEGIES.add("yarn", yarn)

#: Placers whose answer depends only on the free GPUs of the pool they are given.
POOL_ONLY: frozenset[Placer] = frozenset((consolidated, best_fit, spread, yarn))


_PLACERS: dict[str, Placer] = {}  # names already looked up; a name never changes its placer


def get_placer(name: str) -> Placer:
    """A placement strategy by name (`UnknownNameError`, a ValueError, if there is none)."""
    try:
        return _PLACERS[name]  # on every placement: skip the registry's checks
    except KeyError:
        placer = _PLACERS[name] = STRATEGIES.get(name)
        return placer
