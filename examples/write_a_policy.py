"""A policy from nothing: least attained service first, preemptive and VC-aware.

The tutorial "Write a policy in 30 minutes" builds this file step by step. It registers
``least_served``, runs it with the engine's invariant auditor on against FIFO and SRTF on
Tiresias' 60-job trace on 8 GPUs, and writes ``write-a-policy.png`` and
``write-a-policy.csv`` into the output folder (first argument or $DLSCHED_EXAMPLES_OUT).
"""

import heapq
import math
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from _output import output_folder  # noqa: E402

import dlsched  # noqa: E402
from dlsched.policies import BasePolicy, register  # noqa: E402


# --8<-- [start:policy]
@register("least_served")
class LeastServed(BasePolicy):
    """Least attained service (GPU-seconds) first; preempts the most-served jobs of a VC."""

    name = "least_served"
    round_s = 300.0  # re-rank every 5 min: running jobs gain service between events

    def __init__(self, min_gap_s: float = 600.0, placement: str = "consolidated") -> None:
        self.min_gap_s = min_gap_s  # preempt only for this much less service: no thrashing
        self.placement = placement

    def start(self, view) -> None:
        # Pending jobs gain no service, so a heap keyed by it stays valid: no re-sorting.
        self.waiting: list[tuple[float, float, int, object]] = []
        self.preempted: list = []  # preempted in the current call

    def on_arrival(self, job) -> None:
        heapq.heappush(self.waiting, (0.0, job.spec.submit_time, job.spec.index, job))

    def schedule(self, view):
        alloc = view.allocation()
        blocked, self.preempted = [], []
        self.rivals = {}  # VC -> its running jobs, most served first: sorted once per call
        self.no_room = {}  # VC -> the smallest request it found no room for in this call
        while self.waiting:
            entry = heapq.heappop(self.waiting)
            job, gpus = entry[3], None
            if view.free_gpus_for_vc(job.spec.vc) >= job.spec.num_gpus:  # cheap test first
                gpus = view.place(job, strategy=self.placement)
            if gpus is None:
                gpus = self.make_room(view, alloc, job)
            if gpus is None:
                blocked.append(entry)
            else:
                alloc[job] = gpus  # starts (or resumes) when schedule() returns
        for entry in blocked:
            heapq.heappush(self.waiting, entry)
        # Back in the queue only now: placed again in this same call, a job preempted
        # above would land on other GPUs, a migration (and its overhead) for nothing.
        for job in self.preempted:
            self.requeue(view, job)
        return alloc

    def requeue(self, view, job) -> None:
        """A preempted job waits again, ranked by the service it has had so far."""
        served = job.attained_service_at(view.now)
        heapq.heappush(self.waiting, (served, job.spec.submit_time, job.spec.index, job))

    def make_room(self, view, alloc, job):
        """Preempt the most-served running jobs of the job's VC, if that frees enough."""
        now, need, vc = view.now, job.spec.num_gpus, job.spec.vc
        if need >= self.no_room.get(vc, math.inf):
            return None  # jobs come by service: later ones have fewer jobs to preempt
        if vc not in self.rivals:
            running = [r for r in view.running.values() if r.spec.vc == vc]
            self.rivals[vc] = sorted(running, key=lambda r: r.attained_service_at(now))[::-1]
        mine = job.attained_service_at(now)
        free, victims = view.free_gpus_for_vc(vc), []
        for rival in self.rivals[vc]:
            if free >= need or rival.attained_service_at(now) < mine + self.min_gap_s:
                break
            if rival in alloc:  # not preempted already in this call
                victims.append((rival, alloc[rival]))
                free += len(alloc[rival])
        if free < need:
            self.no_room[vc] = min(need, self.no_room.get(vc, math.inf))
            return None
        for rival, _ in victims:
            del alloc[rival]  # preempted: keeps its progress, pays the restart overhead
        gpus = view.place(job, strategy=self.placement)
        if gpus is None:  # freed enough GPUs, but not on few enough nodes: undo, no move
            for rival, held in victims:
                alloc[rival] = held
            return None
        self.preempted += [rival for rival, _ in victims]
        return gpus


# --8<-- [end:policy]


# --8<-- [start:compare]
def compare(workload: dlsched.Workload) -> pd.DataFrame:
    """Audited runs of least_served beside fifo and srtf; a restart costs 10 s."""
    rows = {}
    for policy in ["fifo", "least_served", "srtf"]:
        result = dlsched.simulate(workload, "tiresias-8", policy, restart_overhead_s=10, audit=True)
        rows[policy] = result.summary()
    return pd.DataFrame(rows).T[["avg_jct", "makespan", "preemptions", "migrations"]]


# --8<-- [end:compare]


# --8<-- [start:check]
def check_a_second_run_starts_clean(workload: dlsched.Workload) -> None:
    """A run cut short leaves jobs in the policy's queues: the next run must not see them."""
    policy = LeastServed(min_gap_s=300)  # an instance: no registry lookup needed
    with warnings.catch_warnings():  # "jobs not finished by max_time_s": meant here
        warnings.simplefilter("ignore", RuntimeWarning)
        dlsched.simulate(workload, "tiresias-8", policy, restart_overhead_s=10, max_time_s=1000)
    again = dlsched.simulate(workload, "tiresias-8", policy, restart_overhead_s=10, seed=3)
    fresh = dlsched.simulate(
        workload, "tiresias-8", LeastServed(min_gap_s=300), restart_overhead_s=10, seed=3
    )
    pd.testing.assert_frame_equal(again.jobs, fresh.jobs)


# --8<-- [end:check]

if __name__ == "__main__":
    workload = dlsched.load_trace(dlsched.bundled_trace("tiresias_60_job.csv"))
    table = compare(workload)
    print(table.round(1).to_string())
    assert table.loc["least_served", "migrations"] == 0  # preempts, never moves a job
    check_a_second_run_starts_clean(workload)

    out = output_folder()
    table.to_csv(out / "write-a-policy.csv", index_label="policy")
    figure, axis = plt.subplots(figsize=(5, 3.2), layout="constrained")
    axis.bar(table.index, table["avg_jct"] / 60, color=["C0", "C4", "C2"])
    for x, n in enumerate(table["preemptions"]):
        axis.annotate(
            f"{n:.0f} preemptions",
            (x, 0),
            xytext=(0, 4),
            textcoords="offset points",
            ha="center",
            color="white",
            fontsize=8,
        )
    axis.set(ylabel="average JCT (min)", title="A new policy beside FIFO and SRTF")
    figure.savefig(out / "write-a-policy.png", dpi=120)
    print(f"wrote {out / 'write-a-policy.png'}")
