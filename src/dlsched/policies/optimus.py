"""Optimus: greedy marginal-gain allocation from online performance models (Peng, Bao, Chen,
Wu, Guo, "Optimus: An Efficient Dynamic Resource Scheduler for Deep Learning Clusters",
EuroSys 2018). Notes: ``../shared/notes/policies.md`` §1; authors' prototype
``pengyanghua/optimus`` (``scheduler/optimus_scheduler.py``, ``estimator.py``, ``params.py``,
``jobrepo.py``); GPU-only variant: the Pollux OSDI'21 artifact's ``simulator/optimus.py``.

Every `interval_s` the allocation is recomputed from scratch (§4.1):

1. each active job, in arrival order, gets a floor of one PS and its minimum workers while
   the cluster totals allow (anti-starvation; jobs that do not fit get nothing this round);
2. repeatedly, the job/task with the largest *marginal gain* gets one more task: the drop in
   its estimated completion time Q/f, divided by the amount of the task's dominant resource
   (the prototype divides by the amount, not the share). Ties go to the earlier arrival. The
   loop stops when the best gain is ≤ 0 or the best task does not fit (it does not try the
   next best, as in the prototype);
3. placement (§4.3): jobs by ascending task count; each takes the fewest servers (most free
   first) over which its PS tasks and workers can be dealt evenly; if no number of servers
   works, its tasks go first-fit and the job shrinks to what was placed.

Modes.

- ``mode="ps"`` (the paper): a job has p PS tasks and w workers. dlsched clusters have GPUs
  only, so CPU and memory are *virtual* here: each node gets `cpu_per_gpu` and
  `mem_per_gpu` per GPU (8 CPU / 24 GB: the prototype's node of 16 CPU, 48 GB, 2 GPU,
  ``params.py``), a PS task costs `ps_cpu`/`ps_mem` (3 / 9), a worker `worker_cpu`/
  `worker_mem` (2 / 8) plus one GPU (``jobrepo.py``, ResNet-50). These budgets bound the
  allocation and the placement, but the engine only runs the workers: **the simulated speed
  cannot depend on the policy's p** (the throughput model sees GPUs and nodes); with
  `PSThroughput` as the truth the job runs with that model's own PS count. PS-only changes
  are free. The speed model is f(p, w) (`PSSpeedModel`, sync or async): the true one when
  `ps_models` gives it and ``speed="estimator"``; fitted by NNLS to 8 profiling samples of it
  when ``speed="fit"`` (§3.2; the prototype samples p = w only, which cannot separate the
  w/p and p terms, so the design here includes off-diagonal points). For a job whose model
  `ps_models` lacks (or without `ps_models`) the speed is the estimator's rate on w GPUs
  whatever p is, so the job keeps one PS.
- ``mode="gpu"`` (the Pollux artifact's adaptation): workers only, one resource (GPUs); the
  gain of a GPU is Q·(1/f(k) − 1/f(k+1)). The speed f(k) is the estimator's throughput on k
  GPUs (consolidated) with ``speed="estimator"``, or an `AllReduceSpeedModel` fitted by NNLS
  to profiling samples (k = 1, 2, 3, 4, 6, 8, 12, 16 up to the job's cap) and to the rates
  observed while the job runs with ``speed="fit"`` (measured from its progress over its
  current stint, `view.observed_rate`; a stint whose overhead still runs gives no sample
  yet). ``placement="pollux"`` places as the artifact does: jobs whose GPU count is
  unchanged stay; the others, by ascending count, take GPUs from the node with the most free
  GPUs first.

Remaining work Q (§3.1): ``convergence="oracle"`` asks the estimator (the trace's work); a
`ConvergenceModel` fits each job's loss curve online (`ConvergenceTracker`: NNLS, 10-epoch /
0.05 criterion, 100-epoch cap, +20 epochs fallback — prototype defaults); or a callable
``(job state, now) → steps`` (for example `PolluxRemaining`, the artifact's oracle).

Elastic jobs (`min_gpus`/`max_gpus`) may get any worker count within their bounds (and
`max_gpus_per_job`); a rigid job gets its requested count or nothing. A running job whose
count changes pays the engine's re-scaling overhead; profiling samples cost nothing and no
time (the prototype runs each for about 3 minutes). New jobs wait for the next interval, and
GPUs freed by a finishing job stay idle until then, as in both the prototype and the artifact.

Virtual clusters (not in the paper, which has one tenant): a VC that owns nodes is treated as
a cluster of its own, and the nodes no VC owns as another. Each bounds the tasks of its jobs
in the allocation (GPUs, and in PS mode their virtual CPU and memory) and placement puts a
job only on its pool's nodes (`view.pool`); a VC's GPU quota bounds its jobs' workers (a
fractional job's at its share of a GPU), whether they start, keep or grow. A task that does
not fit its pool or quota closes that pool or VC for the round and the others go on (the
prototype's "stop at the first misfit", per pool); one that does not fit the cluster stops
the round, as before. Without VCs the allocation is the prototype's, unchanged.

Simplified: the allocation counts a pool's GPUs of every type together — a job's speed is
judged on its fastest GPU type and its GPUs are all of one type (the paper assumes a
homogeneous cluster); stragglers, PS load balancing (PAA) and the paper's loss
preprocessing are not modelled.

Defaults: `interval_s` 600 s (prototype ``TS_INTERVAL``); the Pollux artifact runs every
60 s (its ``--interval``), which `benchmarks/optimus_pollux.py` uses.

Fidelity: GPU mode with the oracle on the Pollux artifact's setting (16 × 4 T4, 60 s, 30 s
re-scale penalty, its profiles) — `benchmarks/optimus_pollux.py` — gives 5,112.8 s average
JCT on workload-6 against the artifact's 5,301.875 s (−3.6%), and 5,657.0 s against 5,681.9 s
over its 8 workloads; with the artifact's own epoch-granular remaining-iteration oracle
(`PolluxRemaining`), 5,200.2 s (−1.9%).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.perf.convergence import ConvergenceModel, ConvergenceTracker
from dlsched.perf.ps_speed import AllReduceSpeedModel, PSSpeedModel, PSThroughput
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

INTERVAL_S = 600.0
GPU_SAMPLES = (1, 2, 3, 4, 6, 8, 12, 16)
PS_SAMPLES = ((1, 1), (1, 2), (2, 1), (2, 2), (2, 4), (4, 2), (4, 4), (3, 6))
RESOURCES = ("cpu", "mem", "gpu")

Speed = Callable[[int, int], float]  # (PS tasks, workers) → steps/s


# ---------------------------------------------------------------------------------------
# The allocation itself: a pure function, testable by hand
# ---------------------------------------------------------------------------------------


@dataclass
class GreedyJob:
    """One job as the marginal-gain allocation sees it.

    `speed(p, w)` is the estimated steps/s (in GPU mode `p` is 0 and ignored); `remaining`
    is Q in steps; workers range over `min_workers`..`max_workers`; `uses_ps` says whether it
    has PS tasks (one at least). `order` breaks ties (earlier first). `pool` names the
    capacity its tasks also draw from (a key of `pools`), `vc` the quota its workers count
    against (a key of `quotas`), each worker `quota_gpus` of it (a fraction for a fractional
    job); both are ignored where the allocation is given no such capacity or quota."""

    key: object
    remaining: float
    speed: Speed
    min_workers: int = 1
    max_workers: int = 1
    uses_ps: bool = False
    order: tuple = ()
    pool: object = None
    vc: object = None
    quota_gpus: float = 1.0
    ps: int = field(default=0, init=False)
    workers: int = field(default=0, init=False)


def _dominant_amount(demand: Mapping[str, float], capacity: Mapping[str, float]) -> float:
    """The amount of a task's dominant resource (largest demand / capacity), first on ties."""
    best, amount = -1.0, 1.0
    for resource in RESOURCES:
        need = demand.get(resource, 0.0)
        if need <= 0:
            continue
        share = need / capacity[resource] if capacity.get(resource, 0) > 0 else math.inf
        if share > best:
            best, amount = share, need
    return amount


def _fits(
    used: dict[str, float], extra: Mapping[str, float], capacity: Mapping[str, float]
) -> bool:
    return all(
        used.get(r, 0.0) + extra.get(r, 0.0) <= capacity.get(r, 0.0) + 1e-9
        for r in RESOURCES
        if extra.get(r, 0.0) > 0
    )


def _add(used: dict[str, float], extra: Mapping[str, float], times: int = 1) -> None:
    for resource, need in extra.items():
        used[resource] = used.get(resource, 0.0) + need * times


def _completion(job: GreedyJob, p: int, w: int) -> float:
    rate = job.speed(p, w)
    return job.remaining / rate if rate > 0 else math.inf


def _best_task(job: GreedyJob, ps_amount: float, worker_amount: float) -> tuple[float, str] | None:
    """(gain, 'ps' | 'worker') of the job's best next task, or None if it can take none."""
    now = _completion(job, job.ps, job.workers)
    if not math.isfinite(now):
        return None
    options = []
    if job.uses_ps:
        options.append(((now - _completion(job, job.ps + 1, job.workers)) / ps_amount, "ps"))
    if job.workers < job.max_workers:
        options.append(
            ((now - _completion(job, job.ps, job.workers + 1)) / worker_amount, "worker")
        )
    if not options:
        return None
    return max(options, key=lambda o: (o[0], o[1] == "ps"))  # the prototype prefers PS on ties


def marginal_gain_allocation(
    jobs: Sequence[GreedyJob],
    capacity: Mapping[str, float],
    worker_demand: Mapping[str, float],
    ps_demand: Mapping[str, float] | None = None,
    pools: Mapping[object, Mapping[str, float]] | None = None,
    quotas: Mapping[object, float] | None = None,
) -> dict[object, tuple[int, int]]:
    """Optimus' greedy allocation: key → (PS tasks, workers); see the module docstring.

    `capacity` and the demands map resource names (``cpu``, ``mem``, ``gpu``) to amounts;
    `ps_demand` is needed only when some job `uses_ps`. `pools` (pool → capacity) and
    `quotas` (VC → GPUs) bound the jobs whose `pool` or `vc` they name, on top of
    `capacity`. A task that does not fit `capacity` ends the loop, as in the prototype; one
    that does not fit its pool or quota closes only that pool or VC (each is a cluster of
    its own), and the loop goes on with the other jobs."""
    used: dict[str, float] = {}
    pools, quotas = pools or {}, quotas or {}
    pool_used: dict[object, dict[str, float]] = {pool: {} for pool in pools}
    quota_used: dict[object, float] = dict.fromkeys(quotas, 0.0)
    closed: set[tuple[str, object]] = set()
    heap: list[tuple[float, tuple, int, str, GreedyJob]] = []
    ps_demand = ps_demand or {}
    ps_amount = _dominant_amount(ps_demand, capacity) if ps_demand else 1.0
    worker_amount = _dominant_amount(worker_demand, capacity)

    def blocked(job: GreedyJob, demand: Mapping[str, float], workers: int) -> str | None:
        """What `demand` (with `workers` workers in it) does not fit: 'capacity', 'pool',
        'vc', or None when it fits."""
        if not _fits(used, demand, capacity):
            return "capacity"
        if job.pool in pools and not _fits(pool_used[job.pool], demand, pools[job.pool]):
            return "pool"
        if job.vc in quotas and (
            quota_used[job.vc] + workers * job.quota_gpus > quotas[job.vc] + 1e-9
        ):
            return "vc"
        return None

    def take(job: GreedyJob, demand: Mapping[str, float], workers: int) -> None:
        _add(used, demand)
        if job.pool in pools:
            _add(pool_used[job.pool], demand)
        if job.vc in quotas:
            quota_used[job.vc] += workers * job.quota_gpus

    for job in sorted(jobs, key=lambda j: j.order):
        job.ps = job.workers = 0
        floor: dict[str, float] = {}
        _add(floor, worker_demand, job.min_workers)
        if job.uses_ps:
            _add(floor, ps_demand)
        if job.min_workers > job.max_workers or blocked(job, floor, job.min_workers):
            continue
        job.ps, job.workers = (1 if job.uses_ps else 0), job.min_workers
        take(job, floor, job.min_workers)
        best = _best_task(job, ps_amount, worker_amount)
        if best is not None:
            heapq.heappush(heap, (-best[0], job.order, len(heap), best[1], job))
    while heap:
        negative_gain, _, _, kind, job = heapq.heappop(heap)
        if not -negative_gain > 0:
            break
        if ("pool", job.pool) in closed or ("vc", job.vc) in closed:
            continue
        demand = ps_demand if kind == "ps" else worker_demand
        workers = 0 if kind == "ps" else 1
        why = blocked(job, demand, workers)
        if why == "capacity":
            break
        if why is not None:
            closed.add((why, job.pool if why == "pool" else job.vc))
            continue
        if kind == "ps":
            job.ps += 1
        else:
            job.workers += 1
        take(job, demand, workers)
        best = _best_task(job, ps_amount, worker_amount)
        if best is not None:
            heapq.heappush(heap, (-best[0], job.order, len(heap), best[1], job))
    return {job.key: (job.ps, job.workers) for job in jobs}


# ---------------------------------------------------------------------------------------
# Placement book-keeping
# ---------------------------------------------------------------------------------------


class _Nodes:
    """Free GPU ids and virtual CPU/memory per node during one placement pass: the GPUs the
    allocation leaves free so far, and the nodes' whole CPU and memory, charged as the pass
    places tasks."""

    def __init__(self, view: ClusterView, cpu: list[float], mem: list[float]) -> None:
        nodes = view.cluster.nodes
        self.type = [node.gpu_type for node in nodes]
        self.free = [list(view.free_gpus_on_node(node.index)) for node in nodes]
        self.cpu_free = list(cpu)
        self.mem_free = list(mem)

    def charge(self, node: int, cpu: float, mem: float) -> None:
        self.cpu_free[node] -= cpu
        self.mem_free[node] -= mem

    def fits(self, node: int, gpus: int, cpu: float, mem: float) -> bool:
        return (
            len(self.free[node]) >= gpus
            and self.cpu_free[node] >= cpu - 1e-9
            and self.mem_free[node] >= mem - 1e-9
        )


# ---------------------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------------------


@register("optimus")
class Optimus(BasePolicy):
    """Optimus: greedy marginal-gain allocation from fitted speed and convergence models."""

    name = "optimus"

    def __init__(
        self,
        mode: str = "ps",
        interval_s: float = INTERVAL_S,
        convergence: str | ConvergenceModel | Callable[[JobState, float], float] = "oracle",
        speed: str = "estimator",
        placement: str | None = None,
        ps_models: Mapping[str, PSSpeedModel] | PSThroughput | None = None,
        sync: bool = True,
        max_gpus_per_job: int | None = None,
        cpu_per_gpu: float = 8.0,
        mem_per_gpu: float = 24.0,
        ps_cpu: float = 3.0,
        ps_mem: float = 9.0,
        worker_cpu: float = 2.0,
        worker_mem: float = 8.0,
    ) -> None:
        super().__init__()
        if mode not in ("ps", "gpu"):
            raise ValueError(f"optimus: mode must be 'ps' or 'gpu', got {mode!r}")
        if not interval_s > 0:
            raise ValueError(f"optimus: interval_s must be > 0 seconds, got {interval_s!r}")
        if speed not in ("estimator", "fit"):
            raise ValueError(f"optimus: speed must be 'estimator' or 'fit', got {speed!r}")
        placement = placement or "optimus"
        if placement not in ("optimus", "pollux"):
            raise ValueError(f"optimus: placement must be 'optimus' or 'pollux', got {placement!r}")
        if isinstance(convergence, str) and convergence != "oracle":
            raise ValueError(
                "optimus: convergence must be 'oracle', a ConvergenceModel or a "
                f"callable (job, now) -> remaining steps, got {convergence!r}"
            )
        if max_gpus_per_job is not None and max_gpus_per_job < 1:
            raise ValueError("optimus: max_gpus_per_job must be >= 1")
        if min(cpu_per_gpu, mem_per_gpu, ps_cpu, ps_mem, worker_cpu, worker_mem) < 0:
            raise ValueError("optimus: resource amounts must be >= 0")
        self.mode = mode
        self.interval_s = float(interval_s)
        self.round_s = self.interval_s
        self.speed_source = speed
        self.placement = placement
        self.sync = sync
        self.max_gpus_per_job = max_gpus_per_job
        self.cpu_per_gpu, self.mem_per_gpu = float(cpu_per_gpu), float(mem_per_gpu)
        self.ps_demand = {"cpu": float(ps_cpu), "mem": float(ps_mem)}
        self.worker_demand = (
            {"gpu": 1.0}
            if mode == "gpu"
            else {"cpu": float(worker_cpu), "mem": float(worker_mem), "gpu": 1.0}
        )
        if isinstance(ps_models, PSThroughput):
            self._ps_truth: PSThroughput | None = ps_models
        elif ps_models is not None:
            self._ps_truth = PSThroughput(ps_models)
        else:
            self._ps_truth = None
        self.convergence = convergence

    def start(self, view: ClusterView) -> None:
        """Build the run's state: convergence fits, speed samples and fits, the virtual CPU
        and memory of each node, and the last plan."""
        self._tracker = (
            ConvergenceTracker(self.convergence)
            if isinstance(self.convergence, ConvergenceModel)
            else None
        )
        self._last_tick: int | None = None
        self._samples: dict[object, dict[tuple[int, int], float]] = {}
        self._fits: dict[object, tuple[object, object]] = {}
        # The engine has no CPUs: each node's virtual CPU and memory are the policy's own.
        gpus_per_node = [len(node.gpu_ids) for node in view.cluster.nodes]
        self._node_cpu = [self.cpu_per_gpu * n for n in gpus_per_node]
        self._node_mem = [self.mem_per_gpu * n for n in gpus_per_node]
        # The VC owning each node (None: no VC), as the engine's pools say.
        self._node_owner = [
            view.pool_of_gpu(node.gpu_ids[0])[1] if node.gpu_ids else None
            for node in view.cluster.nodes
        ]
        self.ps_tasks: dict[object, int] = {}  # job id → PS tasks (ps mode)
        self.ps_nodes: dict[object, tuple[int, ...]] = {}  # job id → node of each PS task
        self.last_plan: dict[object, tuple[int, int]] = {}  # job id → (PS, workers)

    def __repr__(self) -> str:
        return (
            f"Optimus(mode={self.mode!r}, interval_s={self.interval_s:g}, "
            f"speed={self.speed_source!r}, placement={self.placement!r})"
        )

    # ---- hooks --------------------------------------------------------------------------
    def on_finish(self, job: JobState) -> None:
        key = job.job_id
        for table in (self._samples, self._fits, self.ps_tasks, self.ps_nodes):
            table.pop(key, None)
        if self._tracker is not None:
            self._tracker.forget(job.spec)

    # ---- models -------------------------------------------------------------------------
    def _remaining(self, view: ClusterView, job: JobState) -> float:
        if self._tracker is not None:
            return self._tracker.remaining_steps(job, view.now)
        if callable(self.convergence):
            return float(self.convergence(job, view.now))
        return view.estimator.remaining_steps(job, view.now)

    def _gpu_type(self, view: ClusterView, job: JobState) -> str | None:
        if job.gpus:
            return view.gpu_type_of(job.gpus[0])
        ranked = view.rank_types(job.spec)
        return ranked[0] if ranked else None

    def _observe(self, view: ClusterView, job: JobState) -> None:
        """Record the rate a running job shows by its progress as a speed sample of the
        GPU-count model (not of f(p, w): the engine does not run the policy's p)."""
        if (
            not job.gpus
            or self.speed_source != "fit"
            or (self.mode == "ps" and self._ps_truth is not None)
        ):
            return
        samples = self._samples.get(job.job_id)
        if samples is None:
            return
        # Optimus measures a job's speed from its training progress: before the current
        # stint has made any (its overhead still runs), there is no new sample yet.
        rate = view.observed_rate(job)
        if rate is None:
            return
        nodes = len({view.cluster.gpu_node[g] for g in job.gpus})
        samples[(len(job.gpus), nodes)] = rate

    def _gpu_speed(self, view: ClusterView, job: JobState, gpu_type: str, cap: int) -> Speed:
        spec = job.spec
        per_node = view.cluster.max_gpus_per_node(gpu_type) or 1
        if self.speed_source == "estimator":
            cache: dict[int, float] = {}

            def estimated(_p: int, w: int) -> float:
                if w not in cache:
                    cache[w] = view.estimator.throughput(spec, gpu_type, w)
                return cache[w]

            return estimated
        samples = self._samples.get(job.job_id)
        if samples is None:  # profiling runs at arrival, measured through the estimator
            samples = self._samples[job.job_id] = {}
            for k in GPU_SAMPLES:
                if spec.gpu_range[0] <= k <= cap:
                    nodes = -(-k // per_node)
                    samples[(k, nodes)] = view.estimator.throughput(spec, gpu_type, k, nodes)
            if not samples:
                k = spec.gpu_range[0]
                samples[(k, -(-k // per_node))] = view.estimator.throughput(spec, gpu_type, k)
        points = sorted(samples.items())
        model = self._fitted(
            job.job_id,
            tuple(points),
            lambda: AllReduceSpeedModel.fit([(k, n, f) for (k, n), f in points]),
        )
        if model is None:
            return lambda _p, _w: 0.0
        return lambda _p, w: model.speed(w, -(-w // per_node))  # type: ignore[attr-defined]

    def _ps_speed(self, view: ClusterView, job: JobState, gpu_type: str, cap: int) -> Speed:
        spec = job.spec
        truth = self._ps_truth
        if truth is None or (spec.model or "").strip().lower() not in truth.models:
            # PS-agnostic: the estimator's rate on w GPUs, whatever p is
            gpu = self._gpu_speed(view, job, gpu_type, cap)
            return lambda p, w: gpu(0, w) if p >= 1 else 0.0
        if self.speed_source == "estimator":
            return lambda p, w: truth.speed(spec.model, p, w, gpu_type)
        base = truth.models.get((spec.model or "").strip().lower())
        batch = base.batch_size if base is not None else 1.0
        model = self._fitted(
            job.job_id,
            0,
            lambda: PSSpeedModel.fit(
                [(p, w, truth.speed(spec.model, p, w, gpu_type)) for p, w in PS_SAMPLES],
                sync=self.sync,
                batch_size=batch,
            ),
        )
        if model is None:
            return lambda _p, _w: 0.0
        return model.speed  # type: ignore[attr-defined]

    def _fitted(self, key: object, version: object, fit: Callable[[], object]) -> object:
        cached = self._fits.get(key)
        if cached is None or cached[0] != version:
            cached = self._fits[key] = (version, fit())
        return cached[1]

    # ---- scheduling ---------------------------------------------------------------------
    def schedule(self, view: ClusterView):
        now, interval = view.now, self.interval_s
        tick = round(now / interval)
        on_grid = abs(now - tick * interval) <= 1e-6 * max(1.0, interval)
        if not on_grid or tick == self._last_tick:
            view.wake_at((math.floor(now / interval + 1e-9) + 1) * interval)
            return None
        self._last_tick = tick
        plan = self._allocate(view)
        alloc = view.allocation()
        assigned = self._place(view, alloc, plan)
        if assigned or view.running:  # keep the clock going while anything can happen
            view.wake_at((tick + 1) * interval)
        return alloc

    def _allocate(self, view: ClusterView) -> dict[JobState, tuple[int, int]]:
        jobs: list[GreedyJob] = []
        states: dict[object, JobState] = {}
        pool_capacity = view.pool_capacity()
        for job in sorted(
            (*view.running.values(), *view.pending.values()),
            key=lambda s: (s.spec.submit_time, s.spec.index),
        ):
            gpu_type = self._gpu_type(view, job)
            if gpu_type is None:
                continue
            low, high = job.spec.gpu_range
            if self.max_gpus_per_job is not None:
                high = max(low, min(high, self.max_gpus_per_job))
            owner = view.pool(job.spec, gpu_type)[1]
            high = min(high, pool_capacity.get((gpu_type, owner), 0))
            if job.job_id in self._samples:
                self._observe(view, job)
            speed = (self._ps_speed if self.mode == "ps" else self._gpu_speed)(
                view, job, gpu_type, high
            )
            states[job.job_id] = job
            jobs.append(
                GreedyJob(
                    key=job.job_id,
                    remaining=self._remaining(view, job),
                    speed=speed,
                    min_workers=low,
                    max_workers=high,
                    uses_ps=self.mode == "ps",
                    order=(job.spec.submit_time, job.spec.index),
                    pool=owner,
                    vc=job.spec.vc,
                    quota_gpus=job.spec.gpu_milli / 1000,
                )
            )
        capacity = self._capacity(view.cluster.num_gpus)
        # A VC that owns nodes is a cluster of its own, and the nodes no VC owns another:
        # each bounds its jobs' tasks (across GPU types, like the cluster's one pool).
        by_owner: dict[object, int] = {}
        for (_type, owner), n in pool_capacity.items():
            by_owner[owner] = by_owner.get(owner, 0) + n
        pools = (
            {owner: self._capacity(n) for owner, n in by_owner.items()}
            if any(owner is not None for owner in by_owner)
            else None
        )
        quotas: dict[object, float] = {
            vc.name: vc.quota_gpus for vc in view.cluster.vcs if vc.quota_gpus is not None
        }
        result = marginal_gain_allocation(
            jobs,
            capacity,
            self.worker_demand,
            self.ps_demand if self.mode == "ps" else None,
            pools=pools,
            quotas=quotas or None,
        )
        self.last_plan = dict(result)
        return {states[key]: counts for key, counts in result.items()}

    def _capacity(self, gpus: int) -> dict[str, float]:
        """The resources of `gpus` GPUs: the GPUs, and in PS mode their virtual CPU and
        memory."""
        capacity = {"gpu": float(gpus)}
        if self.mode == "ps":
            capacity.update(cpu=self.cpu_per_gpu * gpus, mem=self.mem_per_gpu * gpus)
        return capacity

    def _place(self, view: ClusterView, alloc, plan: dict[JobState, tuple[int, int]]) -> int:
        """Apply the plan: keep jobs whose worker count is unchanged, re-place the others."""
        kept, moving = [], []
        for job, (_ps, workers) in plan.items():
            if job.gpus and len(job.gpus) == workers:
                kept.append(job)
            else:
                if job.gpus:
                    del alloc[job]
                if workers:
                    moving.append(job)
        for job in list(view.running.values()):
            if job not in plan and job.job_id in alloc:
                del alloc[job]  # no model for it (no runnable GPU type): give it back
        nodes = _Nodes(view, self._node_cpu, self._node_mem)
        ps_cost = self.ps_demand if self.mode == "ps" else {"cpu": 0.0, "mem": 0.0}
        worker_cost = self.worker_demand if self.mode == "ps" else {"cpu": 0.0, "mem": 0.0}
        node_of = view.cluster.gpu_node
        for job in kept:
            ps = plan[job][0]
            worker_nodes = [node_of[g] for g in job.gpus]
            for node in worker_nodes:
                nodes.charge(node, worker_cost["cpu"], worker_cost["mem"])
            previous = self.ps_nodes.get(job.job_id, ())
            ps_nodes = (
                previous
                if len(previous) == ps
                else tuple(sorted(set(worker_nodes))[i % len(set(worker_nodes))] for i in range(ps))
            )
            for node in ps_nodes:
                nodes.charge(node, ps_cost["cpu"], ps_cost["mem"])
            self._record(job, ps, ps_nodes)
        moving.sort(key=lambda j: (sum(plan[j]), j.spec.submit_time, j.spec.index))
        assigned = 0
        for job in moving:
            ps, workers = plan[job]
            placed = self._place_one(view, job, ps, workers, nodes, ps_cost, worker_cost)
            if placed is None:
                self._record(job, 0, ())
                continue
            gpus, ps_nodes = placed
            if not view.fits_resources(job, gpus):
                # The nodes lack the job's own CPU/memory demand (the engine's, not the PS
                # model's virtual one; an elastic job's grows with its GPUs): it runs on
                # fewer of them if that fits, else waits, and the rest idle this pass.
                gpus = self._fitting_part(view, job, gpus)
                if not gpus:
                    self._record(job, 0, ())
                    continue
            alloc[job] = gpus
            self._record(job, len(ps_nodes), ps_nodes)
            assigned += 1
        return assigned

    @staticmethod
    def _fitting_part(view: ClusterView, job: JobState, gpus: tuple[int, ...]) -> tuple[int, ...]:
        """The most of `gpus` (down to the job's fewest) whose nodes hold its CPU and memory
        now and on which it can run; () when none."""
        spec = job.spec
        gpu_type = view.gpu_type_of(gpus[0])
        for k in range(len(gpus) - 1, spec.gpu_range[0] - 1, -1):
            part = gpus[:k]
            if view.fits_resources(job, part) and view.estimator.throughput(spec, gpu_type, k) > 0:
                return part
        return ()

    def _record(self, job: JobState, ps: int, ps_nodes: tuple[int, ...]) -> None:
        if self.mode != "ps":
            return
        self.ps_tasks[job.job_id] = ps
        self.ps_nodes[job.job_id] = ps_nodes

    def _place_one(
        self,
        view: ClusterView,
        job: JobState,
        ps: int,
        workers: int,
        nodes: _Nodes,
        ps_cost: Mapping[str, float],
        worker_cost: Mapping[str, float],
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """(GPU ids, PS nodes) for the job, charged to `nodes`; None when it gets nothing."""
        low = job.spec.gpu_range[0]
        if not view.fits_quota(job.spec, workers):
            return None  # the plan keeps each VC within its quota: only a guard
        estimator = view.estimator
        for gpu_type in view.rank_types(job.spec):
            if not estimator.throughput(job.spec, gpu_type, workers) > 0:
                continue  # this count cannot run on this type (not in memory, not profiled)
            candidates = self._pool_nodes(view, job, nodes, gpu_type)
            if self.placement == "pollux":
                if sum(len(nodes.free[i]) for i in candidates) >= workers:
                    return self._take_most_free(nodes, candidates, workers), ()
                continue
            placed = self._balanced(nodes, candidates, ps, workers, ps_cost, worker_cost)
            if placed is not None:
                return placed
        # No type holds the whole job: first fit on the best type, shrunk to what fits.
        ranked = view.rank_types(job.spec)
        if not ranked:
            return None
        candidates = self._pool_nodes(view, job, nodes, ranked[0])
        placed = self._first_fit(nodes, candidates, ps, workers, low, ps_cost, worker_cost)
        if placed is not None and not estimator.throughput(job.spec, ranked[0], len(placed[0])) > 0:
            return None  # shrunk to a count it cannot run on; its charge idles this pass
        return placed

    def _pool_nodes(
        self, view: ClusterView, job: JobState, nodes: _Nodes, gpu_type: str
    ) -> list[int]:
        """The nodes of a GPU type in the job's pool (its VC's own, or the unowned ones)."""
        owner = view.pool(job.spec, gpu_type)[1]
        return [
            i for i, t in enumerate(nodes.type) if t == gpu_type and self._node_owner[i] == owner
        ]

    @staticmethod
    def _take_most_free(nodes: _Nodes, candidates: list[int], workers: int) -> tuple[int, ...]:
        chosen: list[int] = []
        while len(chosen) < workers:
            node = max(candidates, key=lambda i: (len(nodes.free[i]), -i))
            take = min(len(nodes.free[node]), workers - len(chosen))
            chosen.extend(nodes.free[node][:take])
            del nodes.free[node][:take]
        return tuple(sorted(chosen))

    def _balanced(
        self,
        nodes: _Nodes,
        candidates: list[int],
        ps: int,
        workers: int,
        ps_cost: Mapping[str, float],
        worker_cost: Mapping[str, float],
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """Fewest servers (most free first) with PS tasks and workers dealt evenly."""
        if self.mode == "ps":
            order = sorted(candidates, key=lambda i: (-nodes.cpu_free[i], i))
        else:
            order = sorted(candidates, key=lambda i: (-len(nodes.free[i]), i))
        for k in range(1, len(order) + 1):
            chosen = order[:k]
            ps_count = [ps // k + (1 if i < ps % k else 0) for i in range(k)]
            wk_count = [workers // k + (1 if i < workers % k else 0) for i in range(k)]
            if all(
                nodes.fits(
                    node,
                    w,
                    p * ps_cost["cpu"] + w * worker_cost["cpu"],
                    p * ps_cost["mem"] + w * worker_cost["mem"],
                )
                for node, p, w in zip(chosen, ps_count, wk_count, strict=True)
            ):
                gpus: list[int] = []
                ps_nodes: list[int] = []
                for node, p, w in zip(chosen, ps_count, wk_count, strict=True):
                    gpus.extend(nodes.free[node][:w])
                    del nodes.free[node][:w]
                    nodes.charge(
                        node,
                        p * ps_cost["cpu"] + w * worker_cost["cpu"],
                        p * ps_cost["mem"] + w * worker_cost["mem"],
                    )
                    ps_nodes.extend([node] * p)
                return tuple(sorted(gpus)), tuple(ps_nodes)
            if k >= ps + workers:
                break  # one task per server already: more servers cannot help
        return None

    def _first_fit(
        self,
        nodes: _Nodes,
        candidates: list[int],
        ps: int,
        workers: int,
        low: int,
        ps_cost: Mapping[str, float],
        worker_cost: Mapping[str, float],
    ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The prototype's fallback: alternate PS and worker, first node that fits each."""
        gpus: list[tuple[int, int]] = []
        ps_nodes: list[int] = []
        place_ps = self.mode == "ps" and ps > 0
        for _ in range(ps + workers):
            placed = False
            for node in candidates:
                if place_ps and nodes.fits(node, 0, ps_cost["cpu"], ps_cost["mem"]):
                    nodes.charge(node, ps_cost["cpu"], ps_cost["mem"])
                    ps_nodes.append(node)
                    placed = True
                    break
                if not place_ps and nodes.fits(node, 1, worker_cost["cpu"], worker_cost["mem"]):
                    nodes.charge(node, worker_cost["cpu"], worker_cost["mem"])
                    gpus.append((node, nodes.free[node].pop(0)))
                    placed = True
                    break
            if not placed:
                break
            place_ps = self.mode == "ps" and not place_ps
            if len(ps_nodes) >= ps:
                place_ps = False
            if len(gpus) >= workers:
                place_ps = self.mode == "ps"
                if len(ps_nodes) >= ps:
                    break
        if len(gpus) < max(low, 1) or (self.mode == "ps" and not ps_nodes):
            for node, gpu in gpus:  # undo
                nodes.free[node].append(gpu)
                nodes.free[node].sort()
                nodes.charge(node, -worker_cost["cpu"], -worker_cost["mem"])
            for node in ps_nodes:
                nodes.charge(node, -ps_cost["cpu"], -ps_cost["mem"])
            return None
        return tuple(sorted(g for _, g in gpus)), tuple(ps_nodes)
