"""`synergy`: average and 99th-percentile JCT of Synergy's simulated single-GPU experiment,
GPU-proportional vs Synergy-GREEDY vs Synergy-TUNE (Mohan et al., "Looking Beyond GPUs for
DNN Scheduling on Multi-Tenant Clusters", OSDI 2022, §6, Fig. 8; the artifact's
``ae-readme.md``).

The experiment (the authors' ``simulator/runner.py`` defaults): 16 servers of 8 GPUs, 24
cores and 500 GB each; single-GPU jobs arriving as a Poisson process of 9 jobs/h with the
Gavel-like durations of their Philly-derived job list, 20 / 70 / 10 % image / language /
speech models; 300 s rounds; the JCTs of jobs 4000-4999 (the run stops when they are done).

Ours: the same jobs, generated call for call as the authors' simulator does
(`dlsched.perf.synergy.synergy_workload`; the first 7,000 jobs checked equal, arrival, model
and work, to a dump of their generator), run through ``dlsched.simulate`` with the
`synergy` policy and the `SynergyModel` truth on that cluster. Their job list
(``philly_jobs_sum_attempts_exp_single.pickle``) is not in the repository snapshot; in this
mode it holds nothing but Gavel-like durations, so a stand-in list of 20,000 durations drawn
with ``random.seed(1)`` takes its place, here and in the reference runs.

Reference values: the authors' simulator (``msr-fiddle/synergy`` @ 1bb2bed, run unmodified
but for stubs of deployment-only imports, ``--seed 42``) on that same stand-in list, i.e. on
the identical job stream: FIFO+fair (proportional), FIFO (GREEDY) and FIFO+tune, and SRTF/
LAS+tune. The paper's own figure could not be read here. The artifact's single published
number, FIFO-TUNE at 9 jobs/h = 21.88 h mean / 156.93 h p99 (their pickle, another draw of
durations), is a point too: the p99 agrees within 3 %, the mean does not (29.7 h), and the
authors' simulator itself gives 29.9 h and 26.2 h on two stand-in lists — the mean moves with
the draw of a few very long jobs. That point is informational (tolerance 40 %).

Differences: progress is exact (the authors credit whole iterations per round and end a job
at its lease end, up to 300 s late on JCTs of 20-90 h); the run stops at the last arrival
(after the window's jobs are done, as the authors' run stops at the window's end).

Measured (``dlsched reproduce synergy``, ~1 CPU min): within 1.5 % of the authors' simulator
on every point; proportional / TUNE = 3.0× in both.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.reproduce.base import Point, Reproduction, Task, Tolerance

JOBS_PER_HOUR = 9.0
"""The load of the authors' default run (``runner.py:405``)."""
N_JOBS = 7500
"""Arrivals generated: past the window's last completion under every policy here (~790 h)."""
WINDOW = (4000, 5000)
"""Job ids whose JCTs are measured (``runner.py:63``)."""
FIGURE = "Fig. 8 (simulated, single-GPU, 9 jobs/h): JCT of jobs 4000-4999 (h)"
TOLERANCE = Tolerance(rel=0.10)
AE_TOLERANCE = Tolerance(rel=0.40)

REFERENCE: dict[tuple[str, str], tuple[float, float]] = {
    ("fifo", "proportional"): (90.09, 222.98),
    ("fifo", "greedy"): (32.29, 163.47),
    ("fifo", "tune"): (29.925, 161.381),
}
"""(order, mode) → (mean, p99) JCT in hours of jobs 4000-4999: the authors' simulator on the
stand-in list (seed 1), run seed 42 (``FIFO+fair``, ``FIFO``, ``FIFO+tune``)."""
AE_README = (21.8766, 156.933)
"""FIFO-TUNE at 9 jobs/h in ``ae-readme.md`` ("Testing the functionality"): mean, p99 (h)."""
QUICK = (("fifo", "proportional"), ("fifo", "tune"))


def cluster() -> Any:
    """The authors' default cluster (``configs/default_cluster.ini``): 16 × 8 GPUs, 24 cores
    and 500 GB of memory per server."""
    import dlsched

    return dlsched.Cluster.from_dict(
        {
            "name": "synergy-128",
            "gpu_types": {"V100": {}},
            "nodes": [
                {
                    "name": "server",
                    "gpu_type": "V100",
                    "count": 16,
                    "gpus_per_node": 8,
                    "cpus": 24,
                    "host_memory_gb": 500,
                }
            ],
        }
    )


def measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """One (order, mode): mean and p99 JCT (h) of jobs 4000-4999 (or the spec's `window`);
    NaN if one of them is unfinished at the last arrival (or ever, with ``stop=False``)."""
    import dlsched
    from dlsched.perf.synergy import SynergyModel, synergy_workload

    work = synergy_workload(spec["n_jobs"], jobs_per_hour=spec["jobs_per_hour"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # jobs after the window, unfinished
        result = dlsched.simulate(
            work,
            cluster(),
            "synergy",
            throughput=SynergyModel(),
            max_time_s=float(work["submit_time"].max()) if spec.get("stop", True) else None,
            order=spec["order"],
            mode=spec["mode"],
        )
    first, end = spec.get("window", WINDOW)
    jobs = result.jobs.set_index("job_id").loc[first : end - 1]
    jct = ((jobs["finish_time"] - jobs["submit_time"]) / 3600).to_numpy(dtype=float)
    if np.isnan(jct).any():
        return {"mean_jct_h": float("nan"), "p99_jct_h": float("nan")}
    return {"mean_jct_h": float(jct.mean()), "p99_jct_h": float(np.percentile(jct, 99))}


def plan(shared: Path, quick: bool) -> list[Point]:
    """Each (order, mode) with a reference run, mean and p99; the ae-readme point beside
    FIFO-TUNE (quick: FIFO proportional and TUNE)."""
    points = []
    for (order, mode), reference in REFERENCE.items():
        if quick and (order, mode) not in QUICK:
            continue
        task = Task(
            f"{order}-{mode}",
            {"order": order, "mode": mode, "n_jobs": N_JOBS, "jobs_per_hour": JOBS_PER_HOUR},
        )
        series = f"{order.upper()}-{mode}"
        for metric, value in zip(("mean_jct_h", "p99_jct_h"), reference, strict=True):
            points.append(
                Point(
                    figure=FIGURE,
                    series=series,
                    x=JOBS_PER_HOUR,
                    x_name="jobs/h",
                    metric=metric,
                    published=value,
                    tolerance=TOLERANCE,
                    task=task,
                    note="the authors' simulator on the same job list (stand-in seed 1)",
                )
            )
        if (order, mode) == ("fifo", "tune"):
            for metric, value in zip(("mean_jct_h", "p99_jct_h"), AE_README, strict=True):
                points.append(
                    Point(
                        figure=FIGURE,
                        series="FIFO-tune (ae-readme)",
                        x=JOBS_PER_HOUR,
                        x_name="jobs/h",
                        metric=metric,
                        published=value,
                        tolerance=AE_TOLERANCE,
                        task=task,
                        note="artifact readme, the authors' own job list (not available): "
                        "informational",
                    )
                )
    return points


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            name="synergy",
            paper="Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters "
            "(Mohan et al., OSDI 2022)",
            source="Fig. 8 (simulated, single-GPU, 9 jobs/h, split 20/70/10): mean and p99 "
            "JCT of jobs 4000-4999 under GPU-proportional, Synergy-GREEDY and Synergy-TUNE "
            "(FIFO), against the authors' simulator on the same generated job list and the "
            "artifact readme's FIFO-TUNE point",
            data=(),
            plan=plan,
            measure=measure,
            quick_subset="FIFO proportional and FIFO-TUNE",
            cost_quick="~40 CPU s",
            cost_full="~1 CPU min (3 policies)",
            summary="Synergy (OSDI '22) Fig. 8: JCT, proportional vs GREEDY vs TUNE",
        )
    )


_register()
