"""What Pollux and Sia share: the goodput a policy estimates, the restart factor, the
scheduling clock and the step from per-node GPU counts to GPU ids.

Goodput source. Both policies ask `view.estimator.throughput(job, type, GPUs, nodes)` and
read the answer as the job's *goodput*: under the goodput truth
(`dlsched.perf.goodput`) that is progress per second at the per-GPU batch size that
maximises goodput on that allocation — the rule the job side runs by, so policy and job
agree on the batch size; under any other throughput model (`duration`, `gavel`, `scaling`)
it is plain throughput, i.e. goodput with statistical efficiency 1. Which estimator answers
(oracle, noisy, learned) is the run's choice, as for every policy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from dlsched.engine.ledger import UNLIMITED
from dlsched.engine.view import ClusterView
from dlsched.errors import UnknownModelError
from dlsched.jobs import JobSpec, JobState


def restart_factor(age_s: float, restarts: int, penalty_s: float) -> float:
    """The share of a job's life not lost to re-allocations, if it is re-allocated once more:
    ``max(age − restarts × penalty, 0) / (age + penalty)`` (Pollux §4.2; the artifacts'
    ``simulator/pollux.py`` and Sia's ``sia.py``). 1 when re-allocating costs nothing."""
    if penalty_s <= 0:
        return 1.0
    return max(age_s - restarts * penalty_s, 0.0) / (age_s + penalty_s)


def goodput(view: ClusterView, job: JobState, gpu_type: str, n_gpus: int, n_nodes: int) -> float:
    """The estimated goodput of `job` on `n_gpus` GPUs of `gpu_type` over `n_nodes` nodes,
    at its progress now (0 when it cannot run there).

    A goodput estimator (`dlsched.perf.goodput.GoodputEstimator` and its learned variant)
    answers with progress/s at the best batch size for the job's current epoch; any other
    estimator with its throughput (statistical efficiency 1)."""
    if n_gpus <= 0:
        return 0.0
    estimator = view.estimator
    try:
        if hasattr(estimator, "goodput"):
            rate = estimator.goodput(
                job.spec, gpu_type, n_gpus, n_nodes, job.steps_done_at(view.now)
            )
        else:
            rate = estimator.throughput(job.spec, gpu_type, n_gpus, n_nodes)
    except UnknownModelError:
        return 0.0
    return rate if rate > 0 and math.isfinite(rate) else 0.0


class Ticker:
    """A fixed scheduling interval on the grid 0, Δ, 2Δ, ...: `due(view)` is True once per
    grid instant, and asks the engine to call again at the next one."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._last: int | None = None

    def due(self, view: ClusterView) -> bool:
        """Whether this call is on a grid instant not yet served."""
        now, interval = view.now, self.interval_s
        tick = round(now / interval)
        on_grid = abs(now - tick * interval) <= 1e-6 * max(1.0, interval)
        if not on_grid or tick == self._last:
            view.wake_at((math.floor(now / interval + 1e-9) + 1) * interval)
            return False
        self._last = tick
        return True

    def next(self, view: ClusterView) -> None:
        """Ask for a call at the next grid instant."""
        view.wake_at((round(view.now / self.interval_s) + 1) * self.interval_s)


def node_counts(view: ClusterView, gpus: tuple[int, ...]) -> dict[int, int]:
    """GPUs per node of a GPU set."""
    node_of = view.cluster.gpu_node
    counts: dict[int, int] = {}
    for gpu in gpus:
        node = node_of[gpu]
        counts[node] = counts.get(node, 0) + 1
    return counts


def apply_plan(
    view: ClusterView,
    plan: Mapping[JobState, Mapping[int, int]],
    fractional_type: Mapping[JobState, str] | None = None,
) -> set[JobState]:
    """Make `plan` (job → GPUs per node; empty or absent: no GPUs) the allocation.

    A running job whose GPUs per node are unchanged keeps its GPUs; the others give theirs
    back first, then take free GPUs of the planned nodes in job order (their former GPUs
    first where still free). A fractional job (`fractional_type` names its planned GPU type)
    is placed last by `view.place`, which shares a GPU with other fractions. A job whose
    plan does not fit (the free GPUs, its VC quota, or the CPU and memory its nodes have
    left) gets nothing. Returns the jobs given a
    new, non-empty GPU set."""
    alloc = view.allocation()
    fractional_type = fractional_type or {}
    kept: set[JobState] = set()
    for job in list(view.running.values()):
        want = {node: n for node, n in plan.get(job, {}).items() if n > 0}
        if want and node_counts(view, job.gpus) == want:
            kept.add(job)
            continue
        if job.job_id in alloc:
            del alloc[job]
    placed: set[JobState] = set()
    ordered = sorted(plan.items(), key=lambda item: item[0].spec.index)
    for job, planned in ordered:
        if job in kept or job in fractional_type or not any(n > 0 for n in planned.values()):
            continue
        gpus: list[int] = []
        own = set(job.gpus)
        for node, n in sorted(planned.items()):
            if n <= 0:
                continue
            free = view.free_gpus_on_node(node)
            if len(free) < n:
                gpus = []
                break
            gpus.extend(sorted(free, key=lambda g: (g not in own, g))[:n])
        if gpus and not _fits_resources(view, job, gpus):
            # the planned nodes lack CPU or memory for it: the same count where they suffice
            gpu_type, count = view.gpu_type_of(gpus[0]), len(gpus)
            gpus = []
            for strategy in ("consolidated", "spread"):
                other = view.place(job.spec, gpu_type=gpu_type, strategy=strategy, n_gpus=count)
                if other is not None:
                    gpus = list(other)
                    break
        if gpus and view.fits_quota(job.spec, len(gpus)):
            alloc[job] = tuple(sorted(gpus))
            placed.add(job)
    for job, gpu_type in sorted(fractional_type.items(), key=lambda item: item[0].spec.index):
        if job in kept or not plan.get(job):
            continue
        gpus_or_none = view.place(job.spec, gpu_type=gpu_type, n_gpus=1)
        if gpus_or_none is not None:
            alloc[job] = gpus_or_none
            placed.add(job)
    return placed


def _fits_resources(view: ClusterView, job: JobState, gpus: list[int]) -> bool:
    """Whether the nodes of `gpus` have the CPU and memory the job demands there (the
    searches plan GPUs only; a plan that does not fit is treated like busy GPUs)."""
    fits = getattr(view, "fits_resources", None)
    return True if fits is None else bool(fits(job, tuple(gpus)))


# ---- CPU and memory (issue 15): the searches plan GPUs, these keep their plans placeable --


def resource_capacity(view: ClusterView) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(milli-CPUs, MiB) each node holds when idle, as int64 arrays over node indices, the
    ledger's units (`UNLIMITED` for a node that declares none where others do); None for a
    resource no node declares."""
    nodes = view.cluster.nodes
    cpu = mem = None
    if view.cluster.declares_cpus:
        cpu = np.array(
            [UNLIMITED if n.cpus is None else round(n.cpus * 1000) for n in nodes], np.int64
        )
    if view.cluster.declares_memory:
        mem = np.array(
            [UNLIMITED if n.memory_gb is None else round(n.memory_gb * 1024) for n in nodes],
            np.int64,
        )
    return cpu, mem


def demand_rows(rows: np.ndarray, total: int, asked: int) -> np.ndarray:
    """What a job demanding `total` (milli-CPUs or MiB) for `asked` GPUs holds on each node
    when it runs `rows[..., node]` GPUs there: the ledger's rule (`Ledger.node_demands`):
    ⌈total · n / asked⌉ on n GPUs, split over its nodes in proportion to its GPUs there
    (integer shares), the remainder on the lowest node index. `rows` is (..., nodes).

    >>> demand_rows(np.array([[1, 0, 2], [0, 4, 0]]), total=1000, asked=2).tolist()
    [[500, 0, 1000], [0, 2000, 0]]
    """
    rows = np.asarray(rows, dtype=np.int64)
    if not total:
        return np.zeros_like(rows)
    n = rows.sum(axis=-1)
    scaled = total if asked <= 0 else np.where(n != asked, -(-total * n // max(asked, 1)), total)
    whole = np.broadcast_to(scaled, n.shape)
    share = (whole[..., None] * rows) // np.maximum(n, 1)[..., None]
    spare = whole - share.sum(axis=-1)
    first = np.argmax(rows > 0, axis=-1)
    np.put_along_axis(
        share,
        first[..., None],
        np.take_along_axis(share, first[..., None], -1) + spare[..., None],
        -1,
    )
    return np.where(rows > 0, share, 0)


def node_demand_map(spec: JobSpec, counts: Mapping[int, int]) -> dict[int, tuple[int, int]]:
    """Node → (milli-CPUs, MiB) the job would hold with `counts` GPUs per node (the ledger's
    rule, `demand_rows`)."""
    nodes = sorted(node for node, k in counts.items() if k > 0)
    if not nodes:
        return {}
    row = np.array([counts[node] for node in nodes], dtype=np.int64)
    cpu = demand_rows(row, spec.cpu_milli, spec.num_gpus)
    mem = demand_rows(row, spec.memory_mib, spec.num_gpus)
    return {node: (int(c), int(m)) for node, c, m in zip(nodes, cpu, mem, strict=True)}
