"""Goodput-optimised scheduling against its artifacts (issue 14, part 5).

`pollux-fig8a`: Pollux (Qiao et al., "Pollux: Co-adaptive Cluster Scheduling for
Goodput-Optimized Deep Learning", OSDI 2021, §5.3, Figure 8a), the `pollux` policy vs the
artifact's simulator (petuum/adaptdl, branch osdi21-artifact) on its 8 workloads at relative
loads 0.5, 1.0, 1.5 and 2.0, 16 nodes × 4 T4 GPUs. Published: the per-workload average JCTs
and their mean in `anchors/pollux_osdi21_results/results-jobload/pollux-<load>/summary.json`.
Ours: ``dlsched.simulate(load_trace(workload), "pollux-64-t4", policy="pollux")`` with no
other argument (the goodput truth and the `pollux` overhead preset are the defaults for a
Pollux workload under `pollux`). One task per load runs its 8 workloads, so that Figure 8a's
own number, the mean over the 8 workloads, is a point (the issue's 10 % bar); each workload's
average JCT is a point too, at the same 10 %. Measured by the policy's author, on the mean:
load 1.0 −2.7 %, 1.5 +3.6 %, 2.0 +6.4 %; workload 6 at load 1.0 (the quick subset) 2,399.1 s
vs 2,446.1 s.

The artifact's Tiresias (`tiresias-<load>`) is `tiresias-pollux` (`dlsched.reproduce.pollux`,
policy `pollux_tiresias`): dlsched's paper-faithful `tiresias` on workload 6 at load 1.0
gives 2,980.8 s vs the artifact's 3,469.7 s (−14.1 %), because the artifact's differs.

`sia-saturn`: Sia (Jayaram Subramanya et al., "Sia: Heterogeneity-aware, goodput-optimized
ML-cluster scheduling", SOSP 2023), the `sia` policy on its simulator's 64-GPU cluster
(6 × 4 T4 + 3 × 8 RTX 2080Ti + 2 × 8 A100, bundled as `sia-64`) with Helios-Saturn
``workload-1.csv.gz``. Published: average JCT 2,091.1 s, issue 14's measurement of the
artifact (``siasosp23/artifacts``, ``sia-simulator``) run unmodified with p = −0.5,
λ_a = 0.01, λ_n = 1.1 and a 60 s interval; no file in the shared data holds it, so it is a
constant here. Tolerance 15 % (issue 14). Measured: 1,833.8 s (−12.3 %). The full run adds
Sia's Gavel baseline, `sia_gavel` (Gavel's max-sum-throughput policy with 360 s rounds as the
Sia artifact implements it, see `dlsched.policies.goodput.sia_gavel`), against the artifact's
6,474.2 s (issue 14; 15 %); measured 6,335.2 s (−2.1 %). dlsched's own
`max_sum_throughput_perf` (Stanford's Gavel restated) gives 7,516.5 s there (+16.1 %).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlsched.reproduce.base import DataFile, Point, Reproduction, Task, Tolerance
from dlsched.reproduce.pollux import FOLDERS, _workload_metric, measure_workloads

TRACES = "traces/sia_pollux"
POLLUX_ANCHORS = "anchors/pollux_osdi21_results/results-jobload"
POLLUX_FOLDERS = FOLDERS
"""Relative load → the workload folder the artifact ran it from (its README)."""
WORKLOADS = tuple(range(1, 9))
POLLUX_QUICK = ("1.0", 6)
POLLUX_TOLERANCE = Tolerance(rel=0.10)

SIA_WORKLOAD = "sia/workloads/saturn/workload-1.csv.gz"
SIA_PUBLISHED_JCT_S = 2091.1
"""Issue 14: the Sia artifact run unmodified on Saturn workload-1 (no shared file holds it)."""
SIA_TOLERANCE = Tolerance(rel=0.15)
SIA_GAVEL_PUBLISHED_JCT_S = 6474.2
"""Issue 14: the Sia artifact's Gavel policy (360 s interval) on Saturn workload-1."""


def plan_pollux(shared: Path, quick: bool) -> list[Point]:
    """Per load: each workload's average JCT and their mean (quick: workload 6 at load 1.0)."""
    points = []
    for load in POLLUX_FOLDERS:
        if quick and load != POLLUX_QUICK[0]:
            continue
        anchor = json.loads(
            (shared / POLLUX_ANCHORS / f"pollux-{load}" / "summary.json").read_text()
        )
        indices = [POLLUX_QUICK[1]] if quick else list(WORKLOADS)
        name = f"pollux-load{load}" + (f"-workload{POLLUX_QUICK[1]}" if quick else "")
        task = Task(name, {"policy": "pollux", "load": load, "workloads": indices})
        for index in indices:
            points.append(
                Point(
                    figure="Pollux: average JCT per workload (s)",
                    series=f"load {load}",
                    x=float(index),
                    x_name="workload",
                    metric=_workload_metric(index),
                    published=float(anchor["avgs"][f"workload-{index}"]),
                    tolerance=POLLUX_TOLERANCE,
                    task=task,
                )
            )
        if not quick:
            points.append(
                Point(
                    figure="Figure 8a: mean of the 8 workloads' average JCT (s)",
                    series="pollux",
                    x=float(load),
                    x_name="relative load",
                    metric="mean_avg_jct_s",
                    published=float(anchor["mean"]),
                    tolerance=POLLUX_TOLERANCE,
                    task=task,
                    note="the issue's bar",
                )
            )
    return points


def measure_pollux(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """`spec['policy']` on the listed workloads at `spec['load']`: each one's average JCT and
    their mean (`dlsched.reproduce.pollux.measure_workloads`, no policy parameters)."""
    return measure_workloads({**spec, "params": {}}, shared)


def plan_sia(shared: Path, quick: bool) -> list[Point]:
    """Sia's average JCT on Saturn workload-1, and (full run) its Gavel baseline's."""
    points = [
        Point(
            figure="Sia: average JCT on Helios-Saturn (s)",
            series="sia",
            x=1.0,
            x_name="workload",
            metric="avg_jct_s",
            published=SIA_PUBLISHED_JCT_S,
            tolerance=SIA_TOLERANCE,
            task=Task("sia-saturn-workload1", {"policy": "sia", "workload": SIA_WORKLOAD}),
            note="published: issue 14's run of the unmodified artifact",
        )
    ]
    if not quick:
        points.append(
            Point(
                figure="Sia: average JCT on Helios-Saturn (s)",
                series="gavel",
                x=1.0,
                x_name="workload",
                metric="avg_jct_s",
                published=SIA_GAVEL_PUBLISHED_JCT_S,
                tolerance=SIA_TOLERANCE,
                task=Task(
                    "sia-gavel-saturn-workload1", {"policy": "sia_gavel", "workload": SIA_WORKLOAD}
                ),
                note="published: issue 14's run of the artifact's Gavel (360 s rounds)",
            )
        )
    return points


def measure_sia(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """`spec['policy']` on `spec['workload']` on the bundled `sia-64` cluster."""
    import dlsched

    result = dlsched.simulate(
        dlsched.load_trace(shared / TRACES / spec["workload"]), "sia-64", policy=spec["policy"]
    )
    return {"avg_jct_s": statistics.fmean(result.jobs["jct"]), "jobs": float(len(result.jobs))}


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            name="pollux-fig8a",
            paper="Pollux (Qiao et al., OSDI 2021)",
            source="Figure 8a: Pollux average JCT on workloads 1-8 at relative loads 0.5-2.0, "
            "64 T4 GPUs",
            data=(
                DataFile(POLLUX_ANCHORS, "the Pollux artifact's per-job JCTs (results-jobload)"),
                DataFile(f"{TRACES}/pollux", "the Pollux OSDI'21 workloads"),
                DataFile(f"{TRACES}/sia/traces", "the applications' measured profiles"),
            ),
            plan=plan_pollux,
            measure=measure_pollux,
            quick_subset="workload 6 at load 1.0",
            cost_quick="~15 CPU s",
            cost_full="est. 1,000-4,500 CPU s (32 workloads, 4-140 CPU s each; a task per load)",
            summary="Pollux (OSDI '21) Fig. 8a: Pollux",
            notes=("Tiresias: the artifact's own Tiresias is `tiresias-pollux` (pollux_tiresias)",),
        )
    )
    register(
        Reproduction(
            name="sia-saturn",
            paper="Sia (Jayaram Subramanya et al., SOSP 2023)",
            source="Sia's and its Gavel baseline's average JCT on Helios-Saturn workload-1, "
            "the Sia simulator's 64-GPU heterogeneous cluster (issue 14's runs of the artifact)",
            data=(
                DataFile(f"{TRACES}/{SIA_WORKLOAD}", "Sia's Helios-Saturn workload-1"),
                DataFile(f"{TRACES}/sia/traces", "the applications' measured profiles"),
            ),
            plan=plan_sia,
            measure=measure_sia,
            quick_subset="sia only (the full run adds sia_gavel)",
            cost_quick="~6 CPU s",
            cost_full="~8 CPU s",
            summary="Sia (SOSP '23): Sia and its Gavel baseline on Saturn workload-1",
        )
    )


_register()
