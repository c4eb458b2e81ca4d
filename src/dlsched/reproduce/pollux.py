"""The Pollux OSDI'21 artifact's simulator study (Qiao et al., "Pollux: Co-adaptive Cluster
Scheduling for Goodput-Optimized Deep Learning", OSDI 2021, §5.3, Figure 8; artifact
``petuum/adaptdl``, branch ``osdi21-artifact``, ``simulator/``): its baselines at every relative
load (Figure 8a) and Pollux's scheduling-interval sweep (Figure 8b), ours against the
artifact's per-workload average JCTs in ``anchors/pollux_osdi21_results/`` on 16 nodes × 4 T4
GPUs. (`pollux-fig8a`, Pollux itself at every load, is in `dlsched.reproduce.goodput`.)

`optimus-pollux`: Optimus+Oracle. The artifact runs its Optimus baseline (GPU-only mode) on
16 nodes × 4 T4 GPUs, every 60 s,
with a 30 s re-scale penalty on every (re)allocation, oracle remaining iterations and its
measured step-time profiles. Its per-workload average JCTs are in
`anchors/pollux_osdi21_results/results-jobload/optimus-<load>/summary.json`. We replay the same
jobs (`traces/sia_pollux/pollux/workloads*/`) with `PolluxThroughput` (the same profiles,
`traces/sia_pollux/sia/traces/`), work from the artifact's validation tables
(`pollux_workload`), and `optimus(mode="gpu", interval_s=60, placement="pollux")` with the
exact remaining steps as the oracle.

Tolerance: 10 % on a workload's average JCT, issue 12's bar for a trustworthy default.
dlsched's Optimus places and re-scales by the paper's rules, not line by line as the
artifact's code does, so a workload's queueing order can differ; measured over the 32
workloads: worst −6.6 % (workload 4 at load 0.5), median |deviation| 0.8 %; workload 6 at
load 1.0 (the point checked since Optimus was added) −3.6 %.

`tiresias-pollux`: the artifact's Tiresias ("Tiresias+TunedJobs") at relative loads 0.5–2.0,
``results-jobload/tiresias-<load>``, run as `pollux_tiresias`
(`dlsched.policies.pollux_baselines`, the artifact's own re-implementation: two queues at 16
GPU-hours, 60 s rounds, placement by count, 30 s per allocation) with nothing else passed
(the goodput truth at the traced batch sizes, the `pollux` overhead preset). Per load, each
workload's average JCT and the 8-workload mean (the figure's number) are points, 10 %
(issue 14). Measured: means +0.8 % (0.5), −0.2 % (1.0), −0.9 % (1.5), −1.7 % (2.0); per
workload −6.2 % … +6.6 %. dlsched's paper `tiresias` (three queues at 3,250 and 7,200
GPU-seconds, event-driven, no re-allocation cost) is −6.4 %, −13.0 %, −18.6 %, −22.4 % off
the means: mostly the 30 s the artifact charges on every (re)allocation, which `tiresias`'
many preemptions do not pay.

`pollux-interval`: Pollux's scheduling interval (Figure 8b), 30 s, 1, 2, 4 and 8 min at load
1.0, ``results-period/pollux-<interval>``, `pollux` with ``interval_s`` set and nothing else;
per interval each workload's average JCT and the 8-workload mean (2,729.1 s at 30 s …
3,354.2 s at 8 min), 10 % (issue 14). Measured, means: 2,646.4 s (−3.0 %), 2,676.6 s
(−2.7 %), 2,750.6 s (−2.0 %), 2,936.2 s (−1.1 %), 3,425.3 s (+2.1 %); per workload −7.9 %
(workload 1 at 30 s) … +6.7 % (workload 3 at 8 min); 576 CPU s in all, 254 of them at 30 s.

What is left between ours and the artifact's runs (`pollux_tiresias` reproduces the
artifact's allocations step for step until they diverge): the goodput truth rates a job by
its GPU and node counts, not its per-node split (``(2, 4, 2, 4)`` runs as ``(3, 3, 3, 3)``,
`dlsched.perf.goodput`), and keeps exact times where the artifact rounds each epoch to whole
seconds; a different finish time changes which GPUs are free at a round and so later
placements (workload 2 at load 0.5: one YOLOv3 job spread over two nodes instead of one,
+10,749 s for it, +6.6 % on the workload).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlsched.reproduce.base import DataFile, Point, Reproduction, Task, Tolerance

TRACES = "traces/sia_pollux"
ANCHORS = "anchors/pollux_osdi21_results/results-jobload"
FOLDERS = {
    "0.5": "workloads-0.5",
    "1.0": "workloads",
    "1.5": "workloads-1.5",
    "2.0": "workloads-2.0",
}
QUICK = (("1.0", 6),)
PERIOD_ANCHORS = "anchors/pollux_osdi21_results/results-period"
INTERVALS_S = {"30s": 30.0, "1m": 60.0, "2m": 120.0, "4m": 240.0, "8m": 480.0}
"""Figure 8b's scheduling intervals: the artifact's folder suffix → seconds."""
INTERVAL_QUICK = ("8m", 6)  # the cheapest run of the sweep
WORKLOADS = tuple(range(1, 9))
CLUSTER = {
    "name": "pollux-64-t4",
    "description": "16 x g4dn.12xlarge (4 T4), Pollux OSDI'21",
    "nodes": [{"gpu_type": "T4", "count": 16, "gpus_per_node": 4}],
}
TOLERANCE = Tolerance(rel=0.10)


def plan(shared: Path, quick: bool) -> list[Point]:
    """Workloads 1–8 at every relative load (quick: workload 6 at load 1.0)."""
    points = []
    for load in FOLDERS:
        anchor = json.loads((shared / ANCHORS / f"optimus-{load}" / "summary.json").read_text())
        for index in range(1, 9):
            if quick and (load, index) not in QUICK:
                continue
            published = anchor["avgs"].get(f"workload-{index}")
            if published is None:
                continue
            points.append(
                Point(
                    figure="Optimus+Oracle: average JCT per workload (s)",
                    series=f"load {load}",
                    x=float(index),
                    x_name="workload",
                    metric="avg_jct_s",
                    published=float(published),
                    tolerance=TOLERANCE,
                    task=Task(
                        f"optimus-load{load}-workload{index}", {"load": load, "index": index}
                    ),
                )
            )
    return points


def run_workload(
    shared: Path,
    load: str,
    index: int,
    *,
    oracle: str = "exact",
    interval_s: float = 60.0,
    placement: str = "pollux",
    truth: Any = None,
) -> Any:
    """Optimus (GPU-only) on Pollux's workload `index` at relative `load`, as the artifact
    runs it; returns the `SimulationResult`. `oracle`: ``"exact"`` remaining steps or the
    artifact's epoch-granular ``"artifact"`` ones (`PolluxRemaining`). `truth`: a
    `PolluxThroughput` to reuse (read from `shared` if None)."""
    import dlsched
    from dlsched.overheads import OverheadModel
    from dlsched.perf.convergence import PolluxRemaining, pollux_workload
    from dlsched.perf.ps_speed import PolluxThroughput
    from dlsched.policies.optimus import Optimus

    if truth is None:
        truth = PolluxThroughput(shared / TRACES / "sia" / "traces")
    path = shared / TRACES / "pollux" / FOLDERS[load] / f"workload-{index}.csv.gz"
    work = pollux_workload(dlsched.load_trace(path), truth)
    convergence: Any = PolluxRemaining(truth) if oracle == "artifact" else "oracle"
    return dlsched.simulate(
        work,
        dlsched.Cluster.from_dict(CLUSTER),
        Optimus(mode="gpu", interval_s=interval_s, placement=placement, convergence=convergence),
        throughput=truth,
        audit=False,
        # the artifact charges its 30 s re-scale countdown on every (re)allocation
        overheads=OverheadModel(
            restart_s=30.0, migration_s=30.0, rescale_s=30.0, first_start_s=30.0
        ),
    )


def measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """One workload at one load: our average JCT of its jobs."""
    result = run_workload(shared, spec["load"], spec["index"])
    return {"avg_jct_s": statistics.fmean(result.jobs["jct"]), "jobs": float(len(result.jobs))}


def _workload_metric(index: int) -> str:
    return f"avg_jct_s/workload-{index}"


def _figure_points(
    summary: Path,
    task: Task,
    indices: list[int],
    *,
    series: str,
    x: float,
    x_name: str,
    figure: str,
    mean_figure: str | None,
    mean_series: str,
) -> list[Point]:
    """Each listed workload's average JCT from the artifact's `summary` (a point against the
    one task that runs them all) and, when `mean_figure` is given, their mean."""
    anchor = json.loads(summary.read_text())
    points = [
        Point(
            figure=figure,
            series=series,
            x=float(index),
            x_name="workload",
            metric=_workload_metric(index),
            published=float(anchor["avgs"][f"workload-{index}"]),
            tolerance=TOLERANCE,
            task=task,
        )
        for index in indices
    ]
    if mean_figure is not None:
        points.append(
            Point(
                figure=mean_figure,
                series=mean_series,
                x=x,
                x_name=x_name,
                metric="mean_avg_jct_s",
                published=float(anchor["mean"]),
                tolerance=TOLERANCE,
                task=task,
                note="the issue's bar",
            )
        )
    return points


def plan_tiresias(shared: Path, quick: bool) -> list[Point]:
    """Per load: each workload's average JCT and their mean (quick: workload 6 at load 1.0)."""
    points = []
    for load in FOLDERS:
        if quick and load != QUICK[0][0]:
            continue
        indices = [QUICK[0][1]] if quick else list(WORKLOADS)
        name = f"tiresias-load{load}" + (f"-workload{indices[0]}" if quick else "")
        task = Task(
            name, {"policy": "pollux_tiresias", "params": {}, "load": load, "workloads": indices}
        )
        points += _figure_points(
            shared / ANCHORS / f"tiresias-{load}" / "summary.json",
            task,
            indices,
            series=f"tiresias load {load}",
            x=float(load),
            x_name="relative load",
            figure="Tiresias+TunedJobs: average JCT per workload (s)",
            mean_figure=None if quick else "Figure 8a: mean of the 8 workloads' average JCT (s)",
            mean_series="tiresias",
        )
    return points


def plan_interval(shared: Path, quick: bool) -> list[Point]:
    """Per scheduling interval (load 1.0): each workload's average JCT and their mean (quick:
    workload 6 at 8 min)."""
    points = []
    for label, seconds in INTERVALS_S.items():
        if quick and label != INTERVAL_QUICK[0]:
            continue
        indices = [INTERVAL_QUICK[1]] if quick else list(WORKLOADS)
        name = f"pollux-interval{label}" + (f"-workload{indices[0]}" if quick else "")
        task = Task(
            name,
            {
                "policy": "pollux",
                "params": {"interval_s": seconds},
                "load": "1.0",
                "workloads": indices,
            },
        )
        points += _figure_points(
            shared / PERIOD_ANCHORS / f"pollux-{label}" / "summary.json",
            task,
            indices,
            series=f"interval {label}",
            x=seconds,
            x_name="scheduling interval (s)",
            figure="Pollux: average JCT per workload at load 1.0 (s)",
            mean_figure=None if quick else "Figure 8b: mean of the 8 workloads' average JCT (s)",
            mean_series="pollux",
        )
    return points


def measure_workloads(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """`spec['policy']` with `spec['params']` on the listed workloads at `spec['load']`, on
    the artifact's cluster with nothing else passed: each one's average JCT and their mean."""
    import dlsched

    policy = dlsched.policies.get(spec["policy"], **spec["params"])
    folder = shared / TRACES / "pollux" / FOLDERS[spec["load"]]
    metrics: dict[str, float] = {}
    for index in spec["workloads"]:
        result = dlsched.simulate(
            dlsched.load_trace(folder / f"workload-{index}.csv.gz"),
            "pollux-64-t4",
            policy=policy,
        )
        metrics[_workload_metric(index)] = statistics.fmean(result.jobs["jct"])
    metrics["mean_avg_jct_s"] = statistics.fmean(metrics.values())
    return metrics


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            name="optimus-pollux",
            paper="Pollux (Qiao et al., OSDI 2021), the artifact's Optimus+Oracle baseline",
            source="Figure 8a: Optimus+Oracle average JCT on workloads 1-8 at relative loads "
            "0.5-2.0, 64 T4 GPUs",
            data=(
                DataFile(ANCHORS, "the Pollux artifact's per-job JCTs (results-jobload)"),
                DataFile(f"{TRACES}/pollux", "the Pollux OSDI'21 workloads"),
                DataFile(f"{TRACES}/sia/traces", "the applications' measured step-time profiles"),
            ),
            plan=plan,
            measure=measure,
            quick_subset="workload 6 at load 1.0",
            cost_quick="~6 CPU s",
            cost_full="~100 CPU s (32 workloads)",
            summary="Pollux (OSDI '21) Fig. 8a: Optimus+Oracle",
        )
    )
    register(
        Reproduction(
            name="tiresias-pollux",
            paper="Pollux (Qiao et al., OSDI 2021), the artifact's Tiresias+TunedJobs baseline",
            source="Figure 8a: Tiresias average JCT on workloads 1-8 at relative loads 0.5-2.0 "
            "and their mean per load, 64 T4 GPUs",
            data=(
                DataFile(ANCHORS, "the Pollux artifact's per-job JCTs (results-jobload)"),
                DataFile(f"{TRACES}/pollux", "the Pollux OSDI'21 workloads"),
                DataFile(f"{TRACES}/sia/traces", "the applications' measured profiles"),
            ),
            plan=plan_tiresias,
            measure=measure_workloads,
            quick_subset="workload 6 at load 1.0",
            cost_quick="~1.5 CPU s",
            cost_full="~4 CPU s (32 workloads, a task per load)",
            summary="Pollux (OSDI '21) Fig. 8a: Tiresias",
        )
    )
    register(
        Reproduction(
            name="pollux-interval",
            paper="Pollux (Qiao et al., OSDI 2021)",
            source="Figure 8b: Pollux average JCT on workloads 1-8 at load 1.0 and their mean, "
            "scheduling interval 30 s to 8 min, 64 T4 GPUs",
            data=(
                DataFile(PERIOD_ANCHORS, "the Pollux artifact's per-job JCTs (results-period)"),
                DataFile(f"{TRACES}/pollux/workloads", "the Pollux OSDI'21 workloads, load 1.0"),
                DataFile(f"{TRACES}/sia/traces", "the applications' measured profiles"),
            ),
            plan=plan_interval,
            measure=measure_workloads,
            quick_subset="workload 6 at an 8 min interval",
            cost_quick="~5 CPU s",
            cost_full="~580 CPU s (40 runs, a task per interval: 254 CPU s at 30 s, 37 at 8 min)",
            summary="Pollux (OSDI '21) Fig. 8b: Pollux interval sweep",
        )
    )


_register()
