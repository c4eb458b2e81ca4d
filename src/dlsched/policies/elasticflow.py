"""ElasticFlow: deadline admission by minimum satisfactory share, elastic allocation by marginal
return (Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep
Learning", ASPLOS '23), registered as `elasticflow`.

Where the paper is silent this follows its artifact, ``pkusys/ElasticFlow`` (Apache-2.0),
``ElasticFlow/scheduler/scheduler.py``: ``ef_sim_jobs_access_control`` (the ``ef-accessctrl``
of the figures), ``estimate_all_jobs``, ``ef_sim_allocation``, ``allocate_free_gpus`` /
``get_marginal``, and ``models.py`` ``get_max_gpu``.

Faithful:

- **Time in slots** of `slot_s` (60 s in Figure 8(a), the artifact's ``--scheduling_slot``),
  counted from the planning instant with a partial last slot up to each deadline
  (``utils.align_to_time_slot``). The policy re-plans every admitted job at every slot tick.
- **Minimum satisfactory share** (``ef_sim_allocation``): jobs are planned in deadline order
  (``estimate_all_jobs`` sorts by ``ddl``) against the GPUs the jobs before them left free in
  each future slot. For a job, the GPU levels it can run on (powers of two, as the profiles) are
  tried smallest first; with quota q the slots are filled *backwards from the deadline*, each
  with the largest level ≤ min(q, free), until the job's remaining iterations fit. The first q
  that fits is its share; the plan is then laid out *forwards* as the artifact does, with the
  next smaller level before the earliest slot the backward pass used and q from it on, until
  the work is done. A job that fits with no q is infeasible.
- **Admission** (``ef_sim_jobs_access_control``): an arriving deadline job is accepted when the
  plan of every admitted unfinished job plus it meets every deadline; otherwise it is declined
  (`unmet="best_effort"` runs it without its deadline instead; `unmet="admit"` accepts it
  with its deadline, as the artifact's ``ef``, "EDF + elastic scaling" of Figure 9
  (``ef_sim_jobs``): no admission control, a job whose deadline the plan cannot meet runs on
  the most GPUs left in each slot, in deadline order). A job without a deadline is a
  best-effort job: always accepted, planned after the deadline jobs with share 0.
- **Leftover GPUs** after the shares of slot 0 go, one level step at a time, to the job with the
  best marginal return that still fits (``allocate_free_gpus``), best-effort jobs included.
- **Scaling bounds**: a job runs on 1 … max GPUs, where max is its elastic bound (``max_gpus``;
  make the trace elastic with ``make_elastic`` / the ``elastic`` transform), the largest count
  its throughput curve has a rate for, and, with `reading="literal"`, the artifact's per-model
  cap (``models.get_max_gpu``: e.g. NCF 1, YOLOv3 4, BERT and CIFAR-10 16 GPUs on T4).
- **Overheads**: the ``elasticflow`` preset (``utils.estimate_overhead``) when `simulate` is
  given none (`dlsched.elasticflow_overheads`).

`reading`, where paper and artifact disagree:

- ``"literal"`` (the default, the artifact): the marginal return of a job is
  ``marginal_gputime`` — the change in GPU-time of finishing its remaining work one level up,
  per GPU added, largest first, and a job holding no GPU first of all (``get_marginal`` gives it
  ``sys.maxsize``); a new job is declined when *any* admitted job's deadline fails in the
  joint plan (even one that was already failing without it); the per-model caps above apply.
  Simplified: the GPU-time is that of running the remaining work on a constant count,
  ``W × (n/r(n))``, where the artifact re-plans the job's whole future (``ef_sim_allocation``
  with ``assign_gpu=True``) and differences the plans' GPU-time.
- ``"paper"`` (§4): the marginal return is the throughput gained per GPU added, relative to
  the job's remaining work (``(r(n') − r(n)) / (n' − n) / W``: the fraction of the job sped up
  per GPU, comparable across models); a job is declined only when adding it makes a deadline
  fail that did not fail without it; no per-model caps.

Topology-aware placement (the paper's buddy allocation; the artifact's
``cluster.elastic_placement``, jobs placed from the largest count down): every count is a power
of two, and counts are placed in decreasing order — a count of at least a node's size on whole
nodes (``consolidated``), a smaller one on the fullest node that holds it (``best_fit``). A
job whose count does not change keeps its GPUs, and the changed ones are placed around them.
Placed from scratch, power-of-two counts on power-of-two nodes never fragment (what buddy
allocation buys); placed around the jobs that keep their GPUs, ``best_fit`` would spread a
smaller job over nodes when no one node holds it, at a cross-node rate the plan did not
count on. So when a changed job lands on more nodes than its count needs, every job is
re-placed from scratch in that order, and the packing is laid onto the physical nodes so
that the most GPUs stay where they are (a linear assignment of packed to physical nodes):
only the jobs whose GPUs change are moved and pay the move (the artifact re-places every job
at every event and charges a relaunch to each whose ranks were not seen since the last
checkpoint round, ``log.py`` ``in_cache``). This needs a plain cluster (one GPU type, nodes
of one size, no VCs or CPU/memory accounts, every node present); elsewhere jobs are placed
around the kept ones. Before it, on long ITP jobs on 16 × 4 T4 (``configs/experiments/
deadlines_itp_cluster10.yaml``) 11 of ElasticFlow's 135 admitted jobs missed, by up to
26,120 s; with it 1 of 190 (ratio 0.477 → 0.727). Figure 8(a): 0.718 (was 0.723).

`slots`, when slots begin:

- ``"artifact"`` (the default, the artifact's event loop): a slot begins at an arrival or a
  finish when the last one began at least a slot ago, else a slot after the last one (the
  artifact moves events closer than a slot onto the slot); slots follow each other while
  jobs are there. An arriving job is admitted on the plan *from the first slot it can run
  in* (the artifact plans it at the event it was moved to), so a job whose deadline lies
  before that slot can do is declined rather than accepted and missed. Figure 8(a): 0.718
  (140 of 195 deadlines met; 0.708 with ``"grid"`` before the re-packing above).
- ``"grid"`` (dlsched 0.x): slots on the fixed grid 0, Δ, 2Δ …, and a job admitted on the
  plan from its arrival instant, though it runs from the next tick.

Simplified: one GPU type (the cluster's largest pool; the artifact's clusters have one); a slot
start is the only scheduling point (GPUs a finished job frees wait for it); the plan does not
reserve overheads (the artifact does not either, it charges them after planning); several jobs
arriving at one instant are admitted one by one, where the artifact admits or declines the
batch together.
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
from collections.abc import Sequence

from dlsched.cluster import Cluster
from dlsched.elasticflow_overheads import for_cluster
from dlsched.engine.admission import Admission
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.overheads import OverheadModel, make_overheads
from dlsched.policies.base import BasePolicy
from dlsched.policies.goodput.common import Ticker
from dlsched.policies.registry import register

SLOT_S = 60.0  # artifact scheduler.py --scheduling_slot default, run_fig8a.sh
READINGS = ("literal", "paper")
UNMET = ("decline", "best_effort", "admit")
SLOTS = ("artifact", "grid")
_EPS = 1e-6  # seconds: instants this close are one
_MODEL = re.compile(r"^(?P<name>.+) \(batch size (?P<batch>\d+)\)$")


def artifact_batch_size(model: str) -> int | None:
    """The global batch size of a model named as the ``elasticflow`` loader names it ("<name>
    (batch size <b>)"); None for others."""
    match = _MODEL.match(model)
    return None if match is None else int(match["batch"])


def artifact_max_gpus(model: str, gpu_type: str) -> int | None:
    """The artifact's per-model cap on a job's GPUs (``models.py`` ``get_max_gpu``), for a model
    named as the ``elasticflow`` loader names it ("<name> (batch size <b>)"); None for others."""
    match = _MODEL.match(model)
    if match is None:
        return None
    name, batch = match["name"], int(match["batch"])
    if gpu_type.upper() == "T4":
        if name in ("bert", "cifar10"):
            return 16
        if name == "deepspeech2" and batch == 320:
            return 32
        if name == "yolov3":
            return 4
        if name == "ncf":
            return 1
        return 64
    caps = {
        ("gpt2", 128): 16,
        ("gpt2", 256): 32,
        ("bert", 64): 8,
        ("inception3", 64): 16,
        ("inception3", 128): 32,
        ("resnet50", 64): 32,
        ("vgg16", 64): 32,
    }
    if name == "deepspeech2":
        return batch
    if name == "bert":
        return caps.get((name, batch), 16)
    return caps.get((name, batch), min(batch, 64))


def largest_level(levels: Sequence[int], limit: int) -> int:
    """The largest of the ascending `levels` that is at most `limit`, or 0."""
    best = 0
    for level in levels:
        if level > limit:
            break
        best = level
    return best


class Timeline:
    """Free GPUs per future slot, piecewise constant: segment i covers slots
    ``bounds[i] … bounds[i+1]`` (the last one runs on for ever). Kept as segments, not slots,
    because deadlines lie up to 12 days (17,000 slots) ahead in Figure 8(a)'s trace (the
    artifact's ``future_free_gpus`` is the same idea, keyed by event time)."""

    def __init__(self, total: int) -> None:
        self.bounds = [0]
        self.free = [total]

    def split(self, k: int) -> None:
        """Make slot `k` start a segment."""
        i = bisect.bisect_right(self.bounds, k) - 1
        if self.bounds[i] != k:
            self.bounds.insert(i + 1, k)
            self.free.insert(i + 1, self.free[i])

    def segments(self, end: int | None) -> list[tuple[int, int, int]]:
        """(first slot, end slot, free GPUs) up to slot `end` (a boundary), or all (the last
        one's end then -1, for ever)."""
        out = []
        for i, a in enumerate(self.bounds):
            if end is not None and a >= end:
                break
            b = self.bounds[i + 1] if i + 1 < len(self.bounds) else -1
            out.append((a, b, self.free[i]))
        return out

    def take(self, a: int, b: int, n: int) -> None:
        """Hold `n` GPUs over slots `a` … `b`."""
        self.split(a)
        self.split(b)
        i = bisect.bisect_left(self.bounds, a)
        while i < len(self.bounds) and self.bounds[i] < b:
            self.free[i] -= n
            i += 1


@register("elasticflow")
class ElasticFlow(BasePolicy):
    """ElasticFlow (ASPLOS '23): admission by minimum satisfactory share, leftover GPUs by
    marginal return, re-planned every slot, buddy placement (module docstring)."""

    name = "elasticflow"
    #: with no overheads given, `simulate` charges the artifact's ``estimate_overhead``: the
    #: ``elasticflow`` preset, ``elasticflow-256`` on 256 GPUs or more (`default_overheads_for`)
    default_overheads = make_overheads("elasticflow")

    def default_overheads_for(self, cluster: Cluster) -> OverheadModel:
        """The artifact's overheads on `cluster` (`dlsched.elasticflow_overheads.for_cluster`)."""
        return for_cluster(cluster)

    def __init__(
        self,
        slot_s: float = SLOT_S,
        reading: str = "literal",
        unmet: str = "decline",
        slots: str = "artifact",
    ) -> None:
        super().__init__()
        if not (isinstance(slot_s, (int, float)) and slot_s > 0 and math.isfinite(slot_s)):
            raise ValueError(
                f"elasticflow: slot_s must be a positive number of seconds, got {slot_s!r}"
            )
        if reading not in READINGS:
            raise ValueError(f"elasticflow: reading must be one of {READINGS}, got {reading!r}")
        if unmet not in UNMET:
            raise ValueError(f"elasticflow: unmet must be one of {UNMET}, got {unmet!r}")
        if slots not in SLOTS:
            raise ValueError(f"elasticflow: slots must be one of {SLOTS}, got {slots!r}")
        self.slot_s = float(slot_s)
        self.reading = reading
        self.slots = slots
        self.unmet = unmet
        self.round_s = self.slot_s

    def __repr__(self) -> str:
        return (
            f"ElasticFlow(slot_s={self.slot_s:g}, reading={self.reading!r}, "
            f"unmet={self.unmet!r}, slots={self.slots!r})"
        )

    # -- per-run state -------------------------------------------------------------------

    def start(self, view: ClusterView) -> None:
        """Pick the planning GPU type and clear the job lists."""
        capacity = view.cluster.capacity_by_type()
        self._type_key = max(sorted(capacity), key=lambda k: capacity[k])
        self._gpu_type = view.cluster.gpu_types[self._type_key].name
        self._total = capacity[self._type_key]
        self._per_node = view.cluster.max_gpus_per_node(self._gpu_type) or 1
        self._ticker = Ticker(self.slot_s)
        self._served: float | None = None  # when the last slot began (slots="artifact")
        self._jobs: list[JobState] = []  # accepted, unfinished, in admission order
        self._known: set[JobState] = set()
        self._levels: dict[object, tuple[int, ...]] = {}
        self._rates: dict[tuple[object, int], float] = {}

    def admit(self, job: JobState, view: ClusterView) -> Admission:
        """Accept a deadline job when the joint plan meets every deadline (module docstring)."""
        if job.spec.deadline is None:
            self._add(job)
            return Admission.accept("best-effort: no deadline")
        deadline_jobs = [j for j in self._jobs if j.spec.deadline is not None]
        start = self.first_slot(view) if self.slots == "artifact" else view.now
        shares, failed = self.plan([*deadline_jobs, job], view, start=start)
        if job in failed:
            levels = self.levels(job, view)
            top = levels[-1] if levels else 0
            reason = (
                f"its deadline cannot be met: even {top} GPUs from the free ones in each "
                f"{self.slot_s:g} s slot after the admitted jobs' plans finish too late"
            )
        elif failed and (
            self.reading == "literal" or failed - self.plan(deadline_jobs, view, start=start)[1]
        ):
            reason = f"admitting it makes {len(failed)} admitted job(s) miss their deadlines"
        else:
            self._add(job)
            return Admission.accept(f"minimum satisfactory share {shares[job]} GPUs now")
        if self.unmet == "admit":
            self._add(job)
            return Admission.accept(f"admitted though {reason} (unmet='admit')")
        if self.unmet == "best_effort":
            # not added here: the engine queues a new state without the deadline, which
            # `on_arrival` adds (this one, with its deadline, would be planned forever)
            return Admission.best_effort(reason)
        return Admission.decline(reason)

    def first_slot(self, view: ClusterView) -> float:
        """With ``slots="artifact"``, the instant of the first slot a job arriving now runs in:
        now when the last slot began at least a slot ago (or none has), else the next slot."""
        if self._served is None or view.now >= self._served + self.slot_s - _EPS:
            return view.now
        return self._served + self.slot_s

    def _due(self, view: ClusterView) -> bool:
        """Whether a slot begins now (`slots` in the module docstring)."""
        if self.slots == "grid":
            return self._ticker.due(view)
        if self._served is None or view.now >= self._served + self.slot_s - _EPS:
            return True
        view.wake_at(self._served + self.slot_s)
        return False

    def _add(self, job: JobState) -> None:
        if job not in self._known:
            self._known.add(job)
            self._jobs.append(job)

    def on_arrival(self, job: JobState) -> None:
        self._add(job)

    def on_finish(self, job: JobState) -> None:
        if job in self._known:
            self._known.discard(job)
            self._jobs.remove(job)

    # -- throughput curve ----------------------------------------------------------------

    def rate(self, job: JobState, n_gpus: int, view: ClusterView) -> float:
        """Estimated iterations/s of `job` on `n_gpus` GPUs of the planning type (0 for 0)."""
        if n_gpus == 0:
            return 0.0
        key = (job.spec.index, n_gpus)
        rate = self._rates.get(key)
        if rate is None:
            rate = self._rates[key] = float(
                view.estimator.throughput(job.spec, self._type_key, n_gpus)
            )
        return rate

    def levels(self, job: JobState, view: ClusterView) -> tuple[int, ...]:
        """The GPU counts the job may run on, ascending: powers of two within its bounds (its
        request alone when rigid) that its curve has a rate for."""
        spec = job.spec
        levels = self._levels.get(spec.index)
        if levels is None:
            low, high = spec.gpu_range
            high = min(high, self._total)
            if self.reading == "literal":
                cap = artifact_max_gpus(spec.model or "", self._gpu_type)
                if cap is not None:
                    high = min(high, max(cap, low))
            if spec.elastic:
                counts = [1 << i for i in range(high.bit_length()) if low <= 1 << i <= high]
            else:
                counts = [spec.num_gpus] if spec.num_gpus <= self._total else []
            levels = tuple(n for n in counts if self.rate(job, n, view) > 0)
            self._levels[spec.index] = levels
        return levels

    # -- planning --------------------------------------------------------------------------

    def plan(
        self, jobs: Sequence[JobState], view: ClusterView, start: float | None = None
    ) -> tuple[dict[JobState, int], set[JobState]]:
        """Plan the deadline `jobs` in deadline order on the future slots from `start` (default
        now): each job's GPUs in the first slot, and the jobs whose deadlines fail. The jobs'
        remaining work is that of now (none is credited for the time before `start`)."""
        now, slot = view.now, self.slot_s
        work_at = now
        if start is not None:
            now = start
        free = Timeline(self._total)
        shares: dict[JobState, int] = {}
        failed: set[JobState] = set()
        order = sorted(jobs, key=lambda j: (j.spec.deadline, j.spec.index))
        for job in order:
            deadline = float(job.spec.deadline)  # type: ignore[arg-type]
            work = view.estimator.remaining_steps(job, work_at)
            if work <= 0:
                shares[job] = 0
                continue
            slots = max(0, math.ceil((deadline - now) / slot - 1e-9))
            last_s = deadline - now - (slots - 1) * slot if slots else 0.0
            pieces = self._minimum_share(job, work, free, slots, last_s, view)
            if pieces is None:
                failed.add(job)
                pieces = self._as_fast_as_possible(job, work, free, view)
            for a, b, n in pieces:
                free.take(a, b, n)
            shares[job] = pieces[0][2] if pieces and pieces[0][0] == 0 else 0
        return shares, failed

    def _minimum_share(
        self,
        job: JobState,
        work: float,
        free: Timeline,
        slots: int,
        last_s: float,
        view: ClusterView,
    ) -> list[tuple[int, int, int]] | None:
        """The artifact's plan for the smallest quota that meets the deadline (module
        docstring): (first slot, end slot, GPUs) pieces; None when no quota does."""
        if slots == 0:
            return None
        levels = self.levels(job, view)
        slot = self.slot_s
        free.split(slots - 1)  # the partial last slot is a segment of its own
        free.split(slots)
        previous = 0
        for quota in levels:
            done, point = 0.0, None
            backward: list[tuple[int, int, int]] = []
            for a, b, f in reversed(free.segments(slots)):
                n = largest_level(levels, min(quota, f))
                if n == 0:
                    continue
                r = self.rate(job, n, view)
                per_slot = last_s * r if a == slots - 1 else slot * r
                cap = per_slot * (b - a)
                if done + cap >= work:
                    point = b - max(1, math.ceil((work - done) / per_slot - 1e-12))
                    backward.append((point, b, n))
                    break
                done += cap
                backward.append((a, b, n))
            if point is None:
                previous = quota
                continue
            free.split(point)
            pieces: list[tuple[int, int, int]] = []
            left = work
            for a, b, f in free.segments(slots):
                n = largest_level(levels, min(previous if a < point else quota, f))
                if n == 0:
                    continue
                r = self.rate(job, n, view)
                per_slot = last_s * r if a == slots - 1 else slot * r
                if per_slot * (b - a) >= left:
                    pieces.append((a, a + max(1, math.ceil(left / per_slot - 1e-12)), n))
                    left = 0.0
                    break
                left -= per_slot * (b - a)
                pieces.append((a, b, n))
            if left > 0:
                # the smaller level before `point` left the job short later: the backward
                # plan meets the deadline by construction
                return sorted(backward)
            return pieces
        return None

    def _as_fast_as_possible(
        self, job: JobState, work: float, free: Timeline, view: ClusterView
    ) -> list[tuple[int, int, int]]:
        """A job that misses anyway runs on the most GPUs free in each slot until done (the
        artifact gives it its largest quota up to and past the deadline)."""
        levels = self.levels(job, view)
        pieces: list[tuple[int, int, int]] = []
        left = work
        if not levels:
            return pieces
        for a, b, f in free.segments(None):
            n = largest_level(levels, f)
            if n == 0:
                continue
            per_slot = self.slot_s * self.rate(job, n, view)
            if b < 0 or per_slot * (b - a) >= left:
                pieces.append((a, a + max(1, math.ceil(left / per_slot - 1e-12)), n))
                break
            left -= per_slot * (b - a)
            pieces.append((a, b, n))
        return pieces

    def marginal(self, job: JobState, n: int, nxt: int, view: ClusterView) -> float:
        """The job's marginal return of going from `n` to `nxt` GPUs (module docstring)."""
        work = max(view.estimator.remaining_steps(job, view.now), 1e-9)
        r_n, r_next = self.rate(job, n, view), self.rate(job, nxt, view)
        if self.reading == "paper":
            return (r_next - r_n) / (nxt - n) / work
        if n == 0:
            return math.inf  # get_marginal: a job without GPUs first (sys.maxsize)
        return work * (nxt / r_next - n / r_n) / (nxt - n)

    def allocate_leftover(
        self, jobs: Sequence[JobState], counts: dict[JobState, int], view: ClusterView
    ) -> None:
        """Give the GPUs the shares leave free, one level step at a time, to the job with the
        largest marginal return that fits, ties to the earlier in `jobs`
        (``allocate_free_gpus``); changes `counts`. A job's marginal return depends on its
        own count only, and the GPUs left only shrink, so a heap of each job's next step
        picks what a scan of every job per step would (a step that does not fit now never
        will)."""
        left = self._total - sum(counts.values())
        heap: list[tuple[float, int, int]] = []

        def push(rank: int) -> None:
            job = jobs[rank]
            n = counts.get(job, 0)
            nxt = next((lv for lv in self.levels(job, view) if lv > n), None)
            if nxt is not None and nxt - n <= left:
                heapq.heappush(heap, (-self.marginal(job, n, nxt, view), rank, nxt))

        for rank in range(len(jobs)):
            push(rank)
        while left > 0 and heap:
            _, rank, nxt = heapq.heappop(heap)
            job = jobs[rank]
            step = nxt - counts.get(job, 0)
            if step > left:
                continue
            left -= step
            counts[job] = nxt
            push(rank)

    # -- the slot ----------------------------------------------------------------------------

    def schedule(self, view: ClusterView):
        if not self._due(view):
            return None
        self._served = view.now
        deadline_jobs = [j for j in self._jobs if j.spec.deadline is not None]
        counts, _ = self.plan(deadline_jobs, view)
        order = sorted(deadline_jobs, key=lambda j: (j.spec.deadline, j.spec.index))
        order += [j for j in self._jobs if j.spec.deadline is None]
        self.allocate_leftover(order, counts, view)
        self._place(view, {job: n for job, n in counts.items() if n > 0})
        if self.slots == "grid":
            self._ticker.next(view)
        elif self._jobs:
            view.wake_at(view.now + self.slot_s)
        return view.allocation()

    def _place(self, view: ClusterView, counts: dict[JobState, int]) -> None:
        """Buddy-style placement (module docstring)."""
        alloc = view.allocation()
        for job in list(view.running.values()):
            if counts.get(job) != len(job.gpus):
                del alloc[job]
        moved = [job for job in counts if job not in alloc]
        if self._place_all(view, moved, counts, stop_at_failure=True) and not any(
            self._spread(view, job, counts[job]) for job in moved
        ):
            return
        for job in [*view.running.values(), *moved]:
            if job in alloc:
                del alloc[job]
        if not self._repack(view, counts):
            self._place_all(view, list(counts), counts, stop_at_failure=False)

    def _spread(self, view: ClusterView, job: JobState, n: int) -> bool:
        """Whether `job`'s new GPUs span more nodes than its `n` GPUs need (``best_fit``
        spreads a job no one node holds, at the cross-node rate the plan did not count on)."""
        alloc = view.allocation()
        if job not in alloc:
            return False
        gpus = alloc[job]
        nodes = {view.node_of(g) for g in gpus}
        return len(nodes) > max(1, -(-n // self._per_node))

    def _repack(self, view: ClusterView, counts: dict[JobState, int]) -> bool:
        """Place every job from scratch as `_place_all` would (largest first, whole nodes for
        counts of a node or more, the fullest node that holds a smaller one), then lay that
        packing onto the physical nodes so that the most jobs keep the GPUs they hold (the
        artifact re-places every job at every event; here only the jobs whose GPUs change
        are moved, and pay for it). Only on a plain cluster — one GPU type, nodes of one
        power-of-two size, no VCs or CPU/memory accounts, every node present and, with the
        jobs taken off, free; False (nothing placed) otherwise."""
        cluster = view.cluster
        per_node = self._per_node
        nodes = [n for n in cluster.nodes if n.gpu_type == self._type_key]
        if (
            len(cluster.gpu_types) != 1
            or cluster.vcs
            or cluster.declares_cpus
            or cluster.declares_memory
            or per_node & (per_node - 1)
            or any(len(n.gpu_ids) != per_node for n in nodes)
            or any(
                not view.node_present(n.index) or len(view.free_gpus_on_node(n.index)) != per_node
                for n in nodes
            )
            or any(n & (n - 1) for n in counts.values())
        ):
            return False
        # the packing on virtual nodes 0 … k-1
        free = [per_node] * len(nodes)
        packed: list[list[JobState]] = [[] for _ in nodes]
        for job in sorted(counts, key=lambda j: (-counts[j], j.spec.index)):
            n = counts[job]
            if n >= per_node:
                empty = [v for v, f in enumerate(free) if f == per_node][: n // per_node]
                if len(empty) < n // per_node:
                    return False
                for v in empty:
                    free[v] = 0
                    packed[v].append(job)
            else:
                fits = [v for v, f in enumerate(free) if f >= n]
                if not fits:
                    return False
                v = min(fits, key=lambda v: (free[v], v))
                free[v] -= n
                packed[v].append(job)
        # virtual → physical node: the most GPUs kept (jobs whose count does not change)
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        where = {n.index: i for i, n in enumerate(nodes)}
        score = np.zeros((len(nodes), len(nodes)))
        for v, jobs in enumerate(packed):
            for job in jobs:
                if len(job.gpus) == counts[job]:
                    for g in job.gpus:
                        score[v, where[view.node_of(g)]] += 1
        rows, cols = linear_sum_assignment(score, maximize=True)
        alloc = view.allocation()
        held: dict[JobState, list[int]] = {}
        for v, col in zip(rows, cols, strict=True):
            node = nodes[col]
            taken: set[int] = set()
            for job in packed[v]:  # whole-node jobs, and jobs that keep their GPUs here
                if counts[job] >= per_node:
                    held.setdefault(job, []).extend(node.gpu_ids)
                    taken.update(node.gpu_ids)
                elif len(job.gpus) == counts[job] and all(
                    view.node_of(g) == node.index for g in job.gpus
                ):
                    held[job] = list(job.gpus)
                    taken.update(job.gpus)
            spare = [g for g in node.gpu_ids if g not in taken]
            for job in packed[v]:
                if job not in held:
                    held[job], spare = spare[: counts[job]], spare[counts[job] :]
        for job, gpus in held.items():
            keep = tuple(job.gpus)
            alloc[job] = keep if set(keep) == set(gpus) else tuple(sorted(gpus))
        return True

    def _place_all(
        self,
        view: ClusterView,
        jobs: list[JobState],
        counts: dict[JobState, int],
        stop_at_failure: bool,
    ) -> bool:
        """Place `jobs` on their `counts`, largest first; False when one did not fit."""
        alloc = view.allocation()
        ok = True
        for job in sorted(jobs, key=lambda j: (-counts[j], j.spec.index)):
            n = counts[job]
            strategy = "consolidated" if n >= self._per_node else "best_fit"
            gpus = view.place(job, gpu_type=self._type_key, strategy=strategy, n_gpus=n)
            if gpus is None:
                ok = False
                if stop_at_failure:
                    return False
                continue  # cannot happen on power-of-two nodes; the job waits a slot
            alloc[job] = gpus
        return ok
