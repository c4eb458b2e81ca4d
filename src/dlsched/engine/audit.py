"""Debug auditor: checks the invariants of DESIGN.md §3 after every scheduling call.

On in tests (`simulate(..., audit=True)`); it costs O(running jobs + GPUs + nodes) per call,
not O(all jobs): a long run under audit stays linear in its calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlsched.engine.admission import DECLINED
from dlsched.engine.ledger import ABSENT, FREE, PACKED, SHARED, Pool
from dlsched.jobs import FINISHED, PENDING, RUNNING, JobState

if TYPE_CHECKING:
    from dlsched.engine.simulator import Simulator

_REL_TOL = 1e-9


class InvariantViolation(AssertionError):
    """The engine broke one of its own invariants: a bug in dlsched."""


class Auditor:
    """Re-derives the ledger from job states and compares; checks time and work."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.last_now = 0.0
        self.finished_ids: set[object] = set()

    def _fail(self, message: str) -> None:
        raise InvariantViolation(f"t={self.sim.now}: {message}")

    def _check_time(self) -> None:
        if self.sim.now < self.last_now:
            self._fail(f"time went back from {self.last_now}")
        self.last_now = self.sim.now

    def after_finish(self, state: JobState) -> None:
        self._check_time()
        spec = state.spec
        if state.job_id in self.finished_ids:
            self._fail(f"job {state.job_id!r} finished twice")
        self.finished_ids.add(state.job_id)
        if state.status != FINISHED:
            self._fail(f"job {state.job_id!r} finished as {state.status}")
        if state.finish_time is None or state.finish_time < spec.submit_time:
            self._fail(
                f"job {state.job_id!r} finished at {state.finish_time} before its "
                f"submit time {spec.submit_time}"
            )

    def after_schedule(self) -> None:
        self._check_time()
        sim = self.sim
        ledger = sim.ledger
        now = sim.now
        expected = [FREE] * len(ledger.owner)
        packed: dict[int, list[int]] = {}
        shared: dict[int, int] = {}
        vc_used: dict[str, float] = {}
        hosted: dict[int, int] = {}  # node → jobs without GPUs on it
        owning = {vc.name for vc in sim.cluster.vcs if vc.node_indices}
        absent = ledger.absent_nodes  # (nodes not present: `engine.availability`)
        nodes = sim.cluster.nodes
        for node in absent:
            for gpu in nodes[node].gpu_ids:
                expected[gpu] = ABSENT
        for job_id, state in sim.jobs.running.items():
            if absent and any(ledger.gpu_node[g] in absent for g in state.gpus):
                self._fail(f"job {job_id!r} runs on a node that is not present: {state.gpus}")
            spec = state.spec
            if state.status != RUNNING or not state.gpus:
                self._fail(f"job {job_id!r} is in the running set as {state.status}")
            low, high = spec.gpu_range
            if not spec.num_gpus:  # a job without GPUs holds one host slot, no GPU
                if not ledger.is_host_slot(state.gpus):
                    self._fail(f"job {job_id!r} asks for no GPU and holds {state.gpus}")
                hosted[ledger.gpu_node[state.gpus[0]]] = (
                    hosted.get(ledger.gpu_node[state.gpus[0]], 0) + 1
                )
            elif not low <= len(state.gpus) <= high:
                self._fail(f"job {job_id!r} holds {len(state.gpus)} GPUs, may hold {low} to {high}")
            for gpu in state.gpus if spec.num_gpus else ():
                if spec.fractional:
                    if expected[gpu] >= 0:
                        self._fail(f"GPU {gpu} is both whole and shared")
                    expected[gpu] = SHARED
                    shared[gpu] = shared.get(gpu, 0) + spec.gpu_milli
                    continue
                if expected[gpu] == FREE:
                    expected[gpu] = spec.index
                elif expected[gpu] >= 0 and gpu in ledger.packed_jobs:
                    packed.setdefault(gpu, [expected[gpu]]).append(spec.index)
                    expected[gpu] = PACKED
                else:
                    self._fail(f"GPU {gpu} given to two jobs")
            if spec.vc is not None:
                vc_used[spec.vc] = vc_used.get(spec.vc, 0.0) + state.gpu_share
            if state.steps_done_at(now) > spec.total_steps * (1 + _REL_TOL):
                self._fail(f"job {job_id!r} did more steps than it has")
            if state.start_time is None or state.start_time < spec.submit_time:
                self._fail(f"job {job_id!r} started before its submit time")
            pools = {ledger.pool_of(g) for g in state.gpus}
            wanted_vc = spec.vc if spec.vc in owning else None
            if any(vc != wanted_vc for _, vc in pools):
                self._fail(f"job {job_id!r} of VC {spec.vc!r} holds GPUs of pools {pools}")
            if spec.gpu_constraint and any(t not in spec.gpu_constraint for t, _ in pools):
                self._fail(f"job {job_id!r} runs outside its GPU-type constraint")
        if hosted != ledger.hosting:
            self._fail(f"jobs without GPUs per node {ledger.hosting} != {hosted}")
        if expected != ledger.owner:
            self._fail("the ledger's owners differ from the running jobs' GPUs")
        if {g: sorted(j) for g, j in packed.items()} != {
            g: sorted(j) for g, j in ledger.packed_jobs.items()
        }:
            self._fail(f"packed GPUs {ledger.packed_jobs} != {packed}")
        if any(load > 1000 for load in shared.values()) or shared != ledger.shared_load:
            self._fail(f"shared GPU loads {ledger.shared_load} != {shared} or over 1000")
        for vc, quota in sim.ledger.vc_quota.items():
            if vc_used.get(vc, 0.0) > quota + 1e-9:
                self._fail(f"VC {vc!r} holds {vc_used[vc]} GPUs, over its quota {quota}")
        for job_id, state in sim.jobs.pending.items():
            if state.status != PENDING or state.gpus:
                self._fail(f"pending job {job_id!r} is {state.status} with GPUs {state.gpus}")
        if sim.declined:
            self._check_declined()
        free_by_type = {t: 0 for t in ledger.capacity}
        free_by_pool = {p: 0 for p in ledger.pool_capacity}
        # each pool's buckets as they should be: nodes by their count of free GPUs (>= 1)
        buckets: dict[Pool, list[set[int]]] = {
            pool: [set() for _ in counts] for pool, counts in ledger.buckets.items()
        }
        owner = ledger.owner
        for node, free in enumerate(ledger.node_free):
            pool = ledger.node_pool[node]
            free_by_type[pool[0]] += len(free)
            free_by_pool[pool] += len(free)
            if sorted(free) != free:
                self._fail(f"node {node}'s free list is not sorted: {free}")
            if free:
                if len(free) >= len(buckets[pool]):
                    self._fail(f"node {node} has {len(free)} free GPUs, more than it has")
                buckets[pool][len(free)].add(node)
        # the free lists hold exactly the GPUs nobody owns (one pass over the GPUs, not a
        # check per node)
        listed = sorted(g for free in ledger.node_free for g in free)
        if listed != [g for g, who in enumerate(owner) if who == FREE]:
            self._fail("the nodes' free lists differ from the GPUs nobody owns")
        if buckets != ledger.buckets:
            wrong = sorted(
                {
                    node
                    for pool, counts in buckets.items()
                    for count, nodes in enumerate(counts)
                    for node in nodes ^ ledger.buckets[pool][count]
                }
            )
            self._fail(f"nodes {wrong} are in the wrong free-count buckets")
        if free_by_type != ledger.free_by_type or free_by_pool != ledger.free_by_pool:
            self._fail(f"free counts {ledger.free_by_type} != {free_by_type}")
        if ledger.tracks_resources or ledger.reserved:
            self._check_resources()
        if len(sim.jobs.running) + len(sim.jobs.pending) != len(sim.jobs.active):
            self._fail("active = pending + running does not hold")
        # Each finish was seen, once and as FINISHED, by `after_finish`; a job marked finished
        # without it is still in the active sets (checked above) or breaks this count. (Not
        # a count over every job's state: that is O(jobs) per call, quadratic in a run.)
        if len(self.finished_ids) != sim.finished:
            self._fail(f"finished count is off: {sim.finished}, {len(self.finished_ids)} seen")

    def _check_declined(self) -> None:
        """A job the policy declined at admission (`dlsched.engine.admission`) is never
        queued and never holds a GPU: not in the running or pending sets, owner of no GPU."""
        sim = self.sim
        declined = sim.declined
        for state in (*sim.jobs.running.values(), *sim.jobs.pending.values()):
            if state.spec.index in declined or state.status == DECLINED:
                self._fail(
                    f"declined job {state.job_id!r} is {state.status} with GPUs {state.gpus}: "
                    "a job declined at admission never runs"
                )
        held = declined.intersection(sim.ledger.owner)
        if held:
            self._fail(f"declined jobs (indices {sorted(held)}) own GPUs in the ledger")

    def _check_resources(self) -> None:
        """CPU and memory: only running jobs hold any, on nodes of their GPUs (a job without
        GPUs: its host slot's node); each node's free amount is its capacity less what jobs
        hold, and never below zero."""
        sim = self.sim
        ledger = sim.ledger
        holders = {state.spec.index: state for state in sim.jobs.running.values()}
        n_nodes = len(sim.cluster.nodes)
        held_cpu, held_mem = [0] * n_nodes, [0] * n_nodes
        for index, held in ledger.reserved.items():
            state = holders.get(index)
            if state is None:
                self._fail(f"job index {index} holds CPU/memory {held} but is not running")
                return
            nodes = {ledger.gpu_node[g] for g in state.gpus}
            if not set(held) <= nodes:
                self._fail(
                    f"job {state.job_id!r} holds CPU/memory on nodes {sorted(held)}, its GPUs "
                    f"are on nodes {sorted(nodes)}"
                )
            for node, (cpu, mem) in held.items():
                held_cpu[node] += cpu
                held_mem[node] += mem
        for resource, capacity, free, held_by_node, unit in (
            ("CPU", ledger.cpu_capacity, ledger.cpu_free, held_cpu, "milli-CPUs"),
            ("memory", ledger.mem_capacity, ledger.mem_free, held_mem, "MiB"),
        ):
            if capacity is None or free is None:
                if any(held_by_node):
                    self._fail(f"jobs hold {resource} on a cluster that declares none")
                continue
            for node, (cap, left, taken) in enumerate(
                zip(capacity, free, held_by_node, strict=True)
            ):
                if taken > cap or left < 0:
                    self._fail(
                        f"node {node} ({sim.cluster.nodes[node].name}) is over-committed: "
                        f"jobs hold {taken} {unit} of {resource}, it has {cap}"
                    )
                if node in ledger.absent_nodes:  # an absent node offers nothing
                    if left:
                        self._fail(f"absent node {node} has {left} {unit} of {resource} free")
                    continue
                if left != cap - taken:
                    self._fail(
                        f"node {node}'s free {resource} is {left} {unit}, its capacity less "
                        f"what jobs hold is {cap - taken}"
                    )
