"""The ElasticFlow artifact's baselines, as its Figure 8 runs them (Gu et al., "ElasticFlow: An
Elastic Serverless Training Platform for Distributed Deep Learning", ASPLOS '23, §6.1
"Baselines"; artifact ``pkusys/ElasticFlow`` @ 04a0109, Apache-2.0,
``ElasticFlow/scheduler/scheduler.py``), registered as `elasticflow_edf`,
`elasticflow_gandiva` and `elasticflow_tiresias`. They differ from dlsched's `edf`, `gandiva`
and `tiresias` in ways that decide Figure 8(a) (0.118, 0.09 and 0.287 published, where
dlsched's own reach 0.313, 0.333 and 0.313), as Gavel's re-implementations do from the
originals (`gavel_gandiva`). Each follows the artifact's code where it departs from the
original paper; dlsched's own policies stay the papers' readings.

`elasticflow_edf` — Earliest Deadline First (the classic real-time policy, Liu and Layland,
JACM 1973), the artifact's ``--schedule=edf`` (``one_queue_edf_sim_jobs``,
``EDF_estimate_all_jobs``, ``edf_sim_allocation``). Faithful:

- **Greedy by deadline, each job at its largest count.** At every scheduling point the jobs
  that have arrived and not finished are taken in deadline order (ties by arrival); each gets
  its *base quota*, ``min(max_gpu, cluster)`` GPUs, when that many are still free, else the
  largest level ≤ the free GPUs (levels are the profiled counts, powers of two), else none
  (``edf_sim_allocation``'s first slot; the later slots it plans only set the end-time
  estimate the artifact re-plans at the next event anyway). ``max_gpu`` is the largest count
  the job's throughput curve has a rate for (``jobs.add_job`` outside ``ef``: no per-model
  cap), at most 64 and at most the job's global batch size (one sample per GPU: it binds on
  the batches of 32 of Figures 9–11's traces, never on Figure 8(a)'s of 64 and more),
  here also bounded by the job's own elastic range (``make_elastic`` gives 1 … 64 in
  Figure 8(a)). With flat curves past 16 GPUs this gives a few early-deadline jobs the whole
  cluster and starves the rest: the artifact's 0.118.
- **No admission control**: every job is accepted, and counts as met when it really ends by
  its deadline (the loop's ``end_time > ddl`` → declined).
- **No overheads**: the loop sets each job's ``overhead`` to 0 (``estimate_overhead`` is
  commented out), so `default_overheads` is none.
- **Scheduling points** as the artifact's event loop (and `elasticflow`'s ``slots=
  "artifact"``): an arrival or a finish, moved to a slot (`slot_s`, ``--scheduling_slot``,
  60 s) after the last point when it comes sooner. GPUs a job frees before then stay idle.

Simplified: the artifact ends jobs on whole seconds (``math.ceil``), here at their true
instants. Placement is `elasticflow`'s buddy-style one (counts are powers of two, the largest
placed first, as ``cluster.elastic_placement`` after ``run_jobs.sort``); a job whose count does
not change keeps its GPUs (the artifact re-places everyone, at no cost under EDF). Several GPU
types (the artifact's clusters have one): counts are taken against all GPUs and each job is
placed on the fastest type with room; a job that then does not fit (a VC, a type constraint,
CPU or memory) waits, and the jobs that got none are tried in deadline order, each at its
largest level that fits the GPUs left.

`elasticflow_edf_ac` — the artifact's EDF with its admission control (``--schedule=
edf-accessctrl``, "EDF + Admission Control" of Figure 9): a job is accepted when EDF's own
plan meets every deadline with it. See the class docstring.

`elasticflow_gandiva` — Gandiva (Xiao et al., OSDI '18) as the artifact re-implements it
(``--schedule=gandiva --scheme=gandiva``: ``gandiva_sim_jobs``, ``cluster.gandiva_placement``,
``gandiva_node_set_adjust``, ``time_slicing_execute``; the Tiresias simulator's Gandiva):
node sets per job size, time slicing, scheduling only at arrivals. See the class docstring.

`elasticflow_tiresias` — Tiresias (Gu et al., NSDI '19) as the artifact runs it
(``--schedule=dlas-gpu``: ``dlas_sim_jobs``, the Tiresias authors' simulator carried over):
dlsched's replica of that simulator (`tiresias` with ``compat=True``) with the artifact's
scheduling points at least a slot apart. See the class docstring.

Figure 8(a) (``dlsched reproduce elasticflow-fig8a``; the artifact's own run of the same
inputs in brackets): EDF 23 of 195 deadlines, the artifact's same 23 jobs (23); Gandiva 19
(18; 17 in common, the gap from the per-point overhead not charged here); Tiresias 57 (56;
55 in common).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dlsched.engine.admission import Admission
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.base import BasePolicy
from dlsched.policies.elasticflow import Timeline, artifact_batch_size, largest_level
from dlsched.policies.registry import register
from dlsched.policies.tiresias import DEFAULT_THRESHOLDS, AuthorsTiresias

SLOT_S = 60.0  # the artifact's --scheduling_slot (run_fig8a.sh), scheduler.py
MAX_GPUS = 64  # jobs.add_job: max_gpu = min(64, largest profiled count, batch size)
_EPS = 1e-6  # seconds: instants this close are one


def _check_slot(owner: str, slot_s: object) -> float:
    if isinstance(slot_s, bool) or not isinstance(slot_s, (int, float)):
        raise ValueError(f"{owner}: slot_s must be a positive number of seconds, got {slot_s!r}")
    if not (slot_s > 0 and math.isfinite(slot_s)):
        raise ValueError(f"{owner}: slot_s must be a positive number of seconds, got {slot_s!r}")
    return float(slot_s)


class _ArtifactLoop(BasePolicy):
    """What the artifact's baseline loops share: scheduling points spaced at least a slot
    apart (an event sooner than a slot after the last one is moved onto it)."""

    def __init__(self, slot_s: float = SLOT_S) -> None:
        super().__init__()
        self.slot_s = _check_slot(self.name, slot_s)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(slot_s={self.slot_s:g})"

    def start(self, view: ClusterView) -> None:
        capacity = view.cluster.capacity_by_type()
        self._type_key = max(sorted(capacity), key=lambda k: capacity[k])
        self._total = sum(capacity.values())
        self._per_node = view.cluster.max_gpus_per_node(None) or 1
        self._served: float | None = None
        self._levels: dict[int, tuple[int, ...]] = {}

    def _due(self, view: ClusterView) -> bool:
        """Whether a scheduling point is now; if not, ask for one a slot after the last."""
        if self._served is None or view.now >= self._served + self.slot_s - _EPS:
            self._served = view.now
            return True
        view.wake_at(self._served + self.slot_s)
        return False

    def levels(self, job: JobState, view: ClusterView) -> tuple[int, ...]:
        """The counts the job may run on, ascending: powers of two in its range (up to
        `MAX_GPUS` and the cluster) that its curve has a rate for; a rigid job its request."""
        spec = job.spec
        levels = self._levels.get(spec.index)
        if levels is None:
            low, high = spec.gpu_range
            high = min(high, self._total, MAX_GPUS)
            batch = artifact_batch_size(spec.model or "")
            if batch is not None:  # jobs.add_job: max_gpu = min(batch_size, max_gpu)
                high = min(high, max(batch, low))
            if not spec.elastic:
                levels = (spec.num_gpus,) if spec.num_gpus <= self._total else ()
            else:
                counts = [1 << i for i in range(high.bit_length()) if low <= 1 << i <= high]
                levels = tuple(
                    n for n in counts if view.estimator.throughput(spec, self._type_key, n) > 0
                )
                if not levels and low <= min(high, self._total):
                    levels = (low,)
            self._levels[spec.index] = levels
        return levels

    def _place(self, view: ClusterView, counts: dict[JobState, int], order: Sequence[JobState]):
        """Place `counts` (jobs → GPUs, 0 for none), largest first; a job whose count does not
        change keeps its GPUs, and when the others do not fit around them everyone is
        re-placed. A job that still does not fit waits, and the jobs that got none are then
        tried in `order`, each at its largest level that fits the GPUs left."""
        alloc = view.allocation()
        for job in list(view.running.values()):
            if counts.get(job, 0) != len(job.gpus):
                del alloc[job]
        wanted = {job: n for job, n in counts.items() if n > 0}
        moved = [job for job in wanted if job not in alloc]
        failed = self._place_all(view, moved, wanted)
        if failed:
            for job in list(view.running.values()):
                if job in alloc:
                    del alloc[job]
            failed = self._place_all(view, list(wanted), wanted)
        if not failed:
            return alloc
        for job in order:  # the fallback: only where a VC, type or CPU/memory limit bites
            if job in alloc or job in failed:
                continue
            for n in reversed(self.levels(job, view)):
                gpus = self._try(view, job, n)
                if gpus is not None:
                    if job in alloc:
                        del alloc[job]
                    alloc[job] = gpus
                    break
        return alloc

    def _try(self, view: ClusterView, job: JobState, n: int) -> tuple[int, ...] | None:
        strategy = "consolidated" if n >= self._per_node else "best_fit"
        if not job.spec.elastic:
            return view.place(job, strategy=strategy)
        return view.place(job, strategy=strategy, n_gpus=n)

    def _place_all(
        self, view: ClusterView, jobs: list[JobState], counts: dict[JobState, int]
    ) -> set[JobState]:
        alloc = view.allocation()
        failed: set[JobState] = set()
        for job in sorted(jobs, key=lambda j: (-counts[j], j.spec.index)):
            gpus = self._try(view, job, counts[job])
            if gpus is None:
                failed.add(job)
            else:
                alloc[job] = gpus
        return failed


@register("elasticflow_edf")
class ElasticFlowEDF(_ArtifactLoop):
    """The ElasticFlow artifact's EDF: in deadline order, each job its largest count that the
    jobs before it left free (module docstring)."""

    name = "elasticflow_edf"

    def counts(self, jobs: Sequence[JobState], view: ClusterView) -> dict[JobState, int]:
        """``edf_sim_allocation`` at one scheduling point: jobs → GPUs now (0 for none)."""
        free = self._total
        out: dict[JobState, int] = {}
        for job in self.order(jobs):
            levels = self.levels(job, view)
            n = 0
            if levels:
                base = levels[-1]
                n = base if free >= base else largest_level(levels, free)
            out[job] = n
            free -= n
        return out

    @staticmethod
    def order(jobs: Sequence[JobState]) -> list[JobState]:
        """Deadline order (``EDF_estimate_all_jobs`` sorts by ``ddl``; no deadline: last),
        ties by arrival."""
        return sorted(
            jobs,
            key=lambda j: (
                math.inf if j.spec.deadline is None else float(j.spec.deadline),
                j.spec.index,
            ),
        )

    def schedule(self, view: ClusterView):
        if not self._due(view):
            return None
        jobs = [*view.running.values(), *view.pending.values()]
        counts = self.counts(jobs, view)
        return self._place(view, counts, self.order(jobs))


@register("elasticflow_edf_ac")
class ElasticFlowEDFAdmission(ElasticFlowEDF):
    """The artifact's EDF with admission control (``--schedule=edf-accessctrl``,
    ``one_queue_edf_sim_jobs_access_control``), "EDF + Admission Control" of Figure 9: an
    arriving deadline job is accepted when EDF's own plan (``EDF_estimate_all_jobs``) of the
    admitted unfinished jobs and it meets every deadline, else declined.

    The plan: from the first scheduling point the job can run at (a slot after the last
    one when that is later than now), the jobs in deadline order each take, slot by slot, the
    largest count of theirs that the jobs before them left free (``edf_sim_allocation``: the
    base quota when free, else the largest profiled count that fits) until their remaining
    work is done; a job fails when it ends after its deadline. As the artifact, a job is
    declined when *any* deadline fails in the plan (``if not EDF_estimate_all_jobs(...)``),
    and a job without a deadline is always accepted (its ``ddl`` is ``sys.maxsize``).
    Scheduling once admitted is `elasticflow_edf`'s. Simplified: the plan holds GPUs for
    whole slots (the artifact ends a job's hold at ``align_to_time_slot`` of its end too) and
    ends jobs at their true instants, not ``math.ceil``'d seconds."""

    name = "elasticflow_edf_ac"

    def admit(self, job: JobState, view: ClusterView) -> Admission:
        """Accept `job` when EDF's plan with it meets every deadline (class docstring)."""
        if job.spec.deadline is None:
            return Admission.accept("best-effort: no deadline")
        now = view.now
        if self._served is not None and now < self._served + self.slot_s - _EPS:
            now = self._served + self.slot_s
        admitted = [
            j
            for j in (*view.running.values(), *view.pending.values())
            if j is not job and j.spec.deadline is not None
        ]
        late = self.late(self.order([*admitted, job]), now, view)
        if not late:
            return Admission.accept("EDF's plan meets every deadline with it")
        if job in late:
            return Admission.decline("its deadline cannot be met in EDF's plan")
        return Admission.decline(
            f"admitting it makes {len(late)} admitted job(s) miss their deadlines in EDF's plan"
        )

    def late(self, jobs: Sequence[JobState], start: float, view: ClusterView) -> set[JobState]:
        """The `jobs` (in this order) whose deadlines EDF's plan from `start` misses."""
        slot = self.slot_s
        free = Timeline(self._total)
        late: set[JobState] = set()
        for job in jobs:
            left = view.estimator.remaining_steps(job, view.now)
            levels = self.levels(job, view)
            if not levels:
                late.add(job)
                continue
            end = math.inf
            for a, b, f in free.segments(None):
                if left <= 0:
                    end = start
                    break
                n = largest_level(levels, f)
                if n == 0:
                    continue
                rate = view.estimator.throughput(job.spec, self._type_key, n)
                if rate <= 0:
                    continue
                per_slot = slot * rate
                if b < 0 or per_slot * (b - a) >= left:
                    used = max(1, math.ceil(left / per_slot - 1e-12))
                    free.take(a, a + used, n)
                    end = start + a * slot + left / rate
                    break
                free.take(a, b, n)
                left -= per_slot * (b - a)
            if end > float(job.spec.deadline) + _EPS:  # type: ignore[arg-type]
                late.add(job)
        return late


class _NodeSet:
    """One of the artifact's Gandiva node sets: whole nodes for jobs of one size, holding
    `capacity` of them at once; `jobs` in time-slice order (the first `capacity` run)."""

    __slots__ = ("size", "nodes", "capacity", "jobs", "util")

    def __init__(self, size: int, nodes: list[int], capacity: int) -> None:
        self.size = size
        self.nodes = nodes
        self.capacity = capacity
        self.jobs: list[JobState] = []
        #: the artifact's ``util``: +1 per job that joins (every model's ``mem_util`` is 1,
        #: models.py), never taken back when one finishes; reset only by a re-deal
        self.util = 0


@register("elasticflow_gandiva")
class ElasticFlowGandiva(_ArtifactLoop):
    """Gandiva as the ElasticFlow artifact runs it (``--schedule=gandiva --scheme=gandiva``,
    the Tiresias simulator's re-implementation of Gandiva, Xiao et al. OSDI '18).

    Faithful:

    - **Rigid jobs** on their requested GPUs (the trace's ``num_gpu``; elastic bounds are
      ignored, as the artifact's Gandiva never scales).
    - **Node sets per job size** (``cluster.gandiva_placement``): a job of n GPUs joins the
      least loaded set of size n if its load + 1 < its capacity, else takes ⌈n / node⌉ free
      nodes as a new set (capacity ⌊nodes × node / n⌋ jobs at once), else over-subscribes
      the set next in load order (the first was put back at the end unsorted: the second),
      else waits in the pending list. The *load* is the artifact's ``util``: +1 for each job
      that joins (every model's ``mem_util`` is 1), never taken back when a job finishes,
      reset only when the sets of a size are re-dealt; sets are kept sorted by it. So a set
      that has emptied slots is passed over while its load stays high: much of the time
      slicing of Figure 8(a) comes from this.
    - **Re-balancing** (``gandiva_node_set_adjust``): each size is due ⌊its GPU demand /
      all demand × cluster⌋ GPUs (at most its demand); a size short of that grows by
      ⌈short / n⌉ sets from free nodes and then re-deals its jobs over its sets, one at a
      time to the least loaded; a size over it gives up ⌈over / n⌉ of its least loaded sets
      (keeping one), their jobs dealt onto the least loaded remaining one. The artifact's
      quirks kept: it re-deals after growing only when its loop variable ends above 0 (``i``
      is reused by the inner loop over nodes: a size of one node re-deals only when its last
      new set could not be made, and new empty sets are given back at once). The artifact
      re-balances at the start of a point and then credits the interval before it to the
      jobs at the front of their sets; here the same re-balancing is done at the end of the
      previous point (it reads only the sets, which do not change in between), so that the
      jobs holding GPUs over the interval are those the artifact credits.
    - **Time-slicing** (``time_slicing_execute``): the first `capacity` jobs of a set run;
      at a point on a whole minute (``int(cur_time % 60) == 0``) they move to the back. A set
      left empty gives its nodes back; then the pending jobs are tried in order (skipping
      the one after each that starts, as the artifact's loop removes from the list it walks).
    - **Scheduling points** (``gandiva_sim_jobs``): arrivals only — an arrival sooner than a
      slot (`slot_s`, 60 s) after the last point is moved onto it — and, once every job has
      arrived, every slot. Between points nothing changes: GPUs a finished job frees stay
      idle until the next point, which is what keeps Figure 8(a)'s Gandiva at 0.09.
    - Counting as the artifact: a job's deadline is met when it really ends by it.

    Simplified: the artifact's per-point overhead (``estimate_overhead``: 4 + 2 log2 n s a point,
    +27 s each 60th point, while arrivals remain) is not charged (`default_overheads` none):
    dlsched's engine charges a job only when its GPUs change. On Figure 8(a) this is most of
    the gap to the artifact (19 deadlines met to its 18, 17 in common: one short job meets
    its deadline by less than that overhead; the sets diverge after an 8-GPU job ends a
    point sooner than there, which moves two long jobs). Nodes of unequal sizes (the
    artifact's are equal): a new set takes free nodes in order until they hold n GPUs, and
    runs their GPUs // n jobs at once.
    The policy learns the number of the run's jobs at `start` (the artifact's loop knows its
    trace) to tell when the last one has arrived. GPU ids come from `ClusterView.place`
    (largest first, fewest nodes), not from the set's nodes: counts never exceed them on
    Figure 8(a)'s equal nodes, and VCs, types and CPU/memory limits are honoured; a job
    that does not fit waits for the next point.
    """

    name = "elasticflow_gandiva"

    def start(self, view: ClusterView) -> None:
        super().start(view)
        self._node_gpus = {node.index: len(node.gpu_ids) for node in view.cluster.nodes}
        self._free_nodes = [node.index for node in view.cluster.nodes]
        self._sets: dict[int, list[_NodeSet]] = {}
        self._home: dict[JobState, _NodeSet] = {}
        self._pending: list[JobState] = []
        self._new: list[JobState] = []
        self._ended: list[JobState] = []
        states = getattr(getattr(view, "_jobs", None), "states", None)
        self._expected = len(states) if states is not None else None
        self._arrived = 0

    def on_arrival(self, job: JobState) -> None:
        self._new.append(job)
        self._arrived += 1

    def on_finish(self, job: JobState) -> None:
        self._ended.append(job)

    def _all_arrived(self) -> bool:
        return self._expected is not None and self._arrived >= self._expected

    def _point(self, view: ClusterView) -> bool:
        """Whether a scheduling point is now (class docstring)."""
        gap = self._served is None or view.now >= self._served + self.slot_s - _EPS
        if self._new or self._expected is None:
            if gap:
                self._served = view.now
                return True
            view.wake_at(self._served + self.slot_s)  # type: ignore[operator]
            return False
        if self._all_arrived() and gap and (self._home or self._pending):
            self._served = view.now
            return True
        if self._all_arrived() and self._served is not None and (self._home or self._pending):
            view.wake_at(self._served + self.slot_s)
        return False

    # -- node sets ---------------------------------------------------------------------

    def _take_nodes(self, size: int) -> list[int] | None:
        """The first free nodes that hold `size` GPUs (⌈size / node⌉ on equal nodes), taken
        out of the free list; None when the free ones do not."""
        held, count = 0, 0
        for node in self._free_nodes:
            held += self._node_gpus[node]
            count += 1
            if held >= size:
                taken = self._free_nodes[:count]
                del self._free_nodes[:count]
                return taken
        return None

    def _new_set(self, size: int) -> _NodeSet | None:
        nodes = self._take_nodes(size)
        if nodes is None:
            return None
        held = sum(self._node_gpus[n] for n in nodes)
        return _NodeSet(size, nodes, held // size)

    @staticmethod
    def _by_load(sets: list[_NodeSet]) -> None:
        sets.sort(key=lambda s: s.util)  # stable, as the artifact's list.sort

    def _join(self, job: JobState, node_set: _NodeSet) -> None:
        node_set.jobs.append(job)
        node_set.util += 1
        self._home[job] = node_set

    def place_job(self, job: JobState) -> bool:
        """``gandiva_placement``: True when the job got a set, False when it waits."""
        size = job.spec.num_gpus
        sets = self._sets.setdefault(size, [])
        if sets:
            first = sets.pop(0)
            if first.util + 1 < first.capacity:
                self._join(job, first)
                sets.append(first)
                self._by_load(sets)
                return True
            sets.append(first)
        node_set = self._new_set(size)
        if node_set is not None:
            self._join(job, node_set)
            sets.append(node_set)
            self._by_load(sets)
            return True
        if sets:
            target = sets.pop(0)
            self._join(job, target)
            sets.append(target)
            self._by_load(sets)
            return True
        return False

    def adjust(self) -> None:
        """``gandiva_node_set_adjust`` (class docstring)."""
        demand = {size: len(self._jobs_of(size)) * size for size in self._sets}
        total = sum(demand.values())
        if total == 0:
            return
        for size in sorted(self._sets):
            sets = self._sets[size]
            if demand[size] == 0:
                continue
            occupied = sum(self._node_gpus[n] for s in sets for n in s.nodes)
            plan = math.floor(demand[size] / total * self._total)
            diff = min(plan, demand[size]) - occupied
            if diff > 0:
                self._expand(size, sets, math.ceil(diff / size))
            elif diff < 0:
                self._shrink(sets, math.ceil(-diff / size))

    def _jobs_of(self, size: int) -> list[JobState]:
        return [job for s in self._sets.get(size, []) for job in s.jobs]

    def _expand(self, size: int, sets: list[_NodeSet], count: int) -> None:
        loop_var = 0
        for i in range(1, count + 1):
            loop_var = i
            node_set = self._new_set(size)
            if node_set is not None:
                sets.append(node_set)
                loop_var = len(node_set.nodes) - 1  # the artifact's inner loop reuses `i`
        if loop_var > 0:
            jobs = [job for s in sets for job in s.jobs]
            for s in sets:
                if s.jobs:
                    s.jobs, s.util = [], 0
            for job in jobs:
                self._join(job, sets[0])
                self._by_load(sets)

    def _shrink(self, sets: list[_NodeSet], count: int) -> None:
        count = min(count, len(sets) - 1)
        if count <= 0:
            return
        jobs: list[JobState] = []
        for _ in range(count):
            gone = sets.pop(0)
            jobs.extend(gone.jobs)
            self._free_nodes.extend(gone.nodes)
        for job in jobs:
            self._join(job, sets[0])
            self._by_load(sets)

    def execute(self, view: ClusterView) -> bool:
        """``time_slicing_execute`` after the engine's progress: finished jobs leave their
        sets, sets rotate on whole minutes, empty sets free their nodes; True if one did."""
        ended = set(self._ended)
        self._ended = []
        switch = int(view.now % 60.0) == 0  # the artifact's test, on its whole seconds
        released = False
        for size in sorted(self._sets):
            sets = self._sets[size]
            for node_set in list(sets):
                running = min(len(node_set.jobs), node_set.capacity)
                if switch and len(node_set.jobs) > running:
                    node_set.jobs = node_set.jobs[running:] + node_set.jobs[:running]
                if ended:
                    node_set.jobs = [job for job in node_set.jobs if job not in ended]
                if not node_set.jobs:
                    self._free_nodes.extend(node_set.nodes)
                    sets.remove(node_set)
                    released = True
        for job in ended:
            self._home.pop(job, None)
        self._pending = [job for job in self._pending if job not in ended]
        return released

    def schedule(self, view: ClusterView):
        if not self._point(view):
            return None
        released = self.execute(view)
        new, self._new = self._new, []
        for job in new:
            if not self.place_job(job):
                self._pending.append(job)
        if released:
            i = 0
            while i < len(self._pending):
                if self.place_job(self._pending[i]):
                    del self._pending[i]
                i += 1  # the artifact's loop skips the job after one that starts
        # the next point's re-balancing, done now: it reads only the sets, which do not
        # change before then, and the artifact credits the interval up to that point to
        # the jobs at the front of their sets *after* it
        self.adjust()
        counts: dict[JobState, int] = {}
        order: list[JobState] = []
        for size in sorted(self._sets):
            for node_set in self._sets[size]:
                for job in node_set.jobs[: node_set.capacity]:
                    counts[job] = size
                    order.append(job)
        if (self._all_arrived() or self._expected is None) and (self._home or self._pending):
            view.wake_at(view.now + self.slot_s)
        return self._place(view, counts, order)


@register("elasticflow_tiresias")
class ElasticFlowTiresias(AuthorsTiresias):
    """Tiresias-L as the ElasticFlow artifact runs it (``--schedule=dlas-gpu``:
    ``dlas_sim_jobs(gputime=True)``, the Tiresias authors' simulator carried over; Gu et al.,
    NSDI '19): dlsched's replica of that simulator (`tiresias` with ``compat=True``,
    `AuthorsTiresias`: queues on GPU-time, thresholds 3,250 and 7,200 GPU-s, FIFO within a
    queue with waiting jobs behind running ones, admission by GPU count, no starvation
    promotion — the artifact passes ``solve_starvation=0``) with the artifact's changes:

    - **Scheduling points at least a slot apart** (`slot_s`, ``--scheduling_slot`` 60 s): an
      arrival sooner than a slot after the last point is moved onto it, and the next finish
      or queue jump is taken no sooner than a slot after it (``end_event_time = max(now +
      slot, end)``, ``next_job_jump``); GPUs freed in between stay idle.
    - **Overheads: none charged.** The artifact sets a job's ``estimate_overhead`` when it
      starts or resumes, but plans its finish without it (``remaining_time`` adds it only on
      every 60th point) and ends it at that planned instant: the overhead delays a job only
      when another point falls inside its run. Charging it on every start here meets 54 of
      Figure 8(a)'s deadlines, none 57, the artifact 56 (55 in common).

    Simplified: that residual overhead (when a point interrupts a run) and the checkpoint
    term every 60th point are not charged; queue-jump times keep the authors' Python 2
    floor, ⌊(threshold − run s) / GPUs⌋, where the artifact takes ⌈…⌉ in Python 3 (the
    slot spacing moves most jumps anyway).
    """

    name = "elasticflow_tiresias"

    def __init__(self, slot_s: float = SLOT_S) -> None:
        super().__init__(thresholds=DEFAULT_THRESHOLDS, starvation_knob=None, placement="sensitive")
        self.slot_s = _check_slot(self.name, slot_s)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(slot_s={self.slot_s:g})"

    def start(self, view: ClusterView) -> None:
        super().start(view)
        self._served: float | None = None

    def schedule(self, view: ClusterView):
        now = view.now
        if not self._event and now != self._next_jump:
            return None
        if self._served is not None and now < self._served + self.slot_s - _EPS:
            # moved onto the slot after the last point; the jump (if that is what is due)
            # is re-derived there
            self._event = True
            view.wake_at(self._served + self.slot_s)
            return None
        self._served = now
        return super().schedule(view)
