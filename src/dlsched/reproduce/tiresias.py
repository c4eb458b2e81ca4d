"""`tiresias`: runs of the Tiresias authors' simulator (Gu et al., NSDI 2019; SymbioticLab/
Tiresias), replayed by dlsched.

`anchors/tiresias/reference_results.csv` holds the simulator's runs on its own inputs
(60_job.csv, its ×10 variant, two 480-job Philly-like traces at 80 % load and in overload) and
cluster shapes. Its run times do not depend on placement and preemption costs nothing, so
dlsched runs with the `duration` throughput model and the `tiresias-sim` overheads (none).
Each row maps to one `simulate` call as in `tests/test_fidelity_tiresias.py`:

- FIFO, fit-first (`fifo`, ``backfill="greedy"``), SRTF (`srtf`) and YARN-CS (`fifo`,
  ``placement="yarn"``): deterministic orderings, 0.1 % (SRTF 1 %: ties between equal
  remaining times break differently);
- Tiresias-L/-G (`tiresias`, `tiresias-gittins`, ``starvation_knob`` 4 or 8 for
  ``dlas-gpu-4``/``-8``) in ``compat=True`` mode, which replays the simulator step for step:
  average JCT and makespan within 0.1 %, the same preemptions;
- the same policies with their defaults (the paper's semantics, what ``policy="tiresias"``
  gives a user): average JCT within 10 % and preemptions within 2× (issue 12's bar).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlsched.reproduce.base import DataFile, Point, Reproduction, Task, Tolerance

ANCHORS = "anchors/tiresias"
REFERENCE = f"{ANCHORS}/reference_results.csv"

BASELINES: dict[tuple[str, str], tuple[str, dict[str, Any], float]] = {
    ("count", "fifo"): ("fifo", {}, 1e-3),
    ("count", "fjf"): ("fifo", {"backfill": "greedy"}, 1e-3),
    ("count", "shortest"): ("srtf", {}, 1e-2),
    ("yarn", "fifo"): ("fifo", {"placement": "yarn"}, 1e-3),
    ("yarn", "fjf"): ("fifo", {"placement": "yarn", "backfill": "greedy"}, 1e-3),
}
"""(scheme, schedule) of a simulator run → (policy, parameters, relative tolerance)."""

TIRESIAS: dict[str, tuple[str, float | None]] = {
    "dlas-gpu": ("tiresias", None),
    "dlas-gpu-4": ("tiresias", 4.0),
    "dlas-gpu-8": ("tiresias", 8.0),
    "dlas-gpu-gittins": ("tiresias-gittins", None),
}
"""The simulator's Tiresias schedules → (policy, starvation knob)."""

QUICK_TRACES = ("60_job.csv", "60_job_x10.csv")
METRICS = {
    "avg_jct_s": "average JCT (s)",
    "makespan_s": "makespan (s)",
    "preemptions": "preemptions",
}


def _find(shared: Path, name: str) -> Path:
    for folder in ("upstream", "derived"):
        path = shared / ANCHORS / folder / name
        if path.exists():
            return path
    raise FileNotFoundError(f"{shared / ANCHORS}/{{upstream,derived}}/{name}: not found")


def plan(shared: Path, quick: bool) -> list[Point]:
    """Every mapped row of the simulator's runs (quick: those on the 60-job traces)."""
    points: list[Point] = []
    with (shared / REFERENCE).open(newline="") as handle:
        reference = list(csv.DictReader(handle))
    for row in reference:
        if quick and row["trace"] not in QUICK_TRACES:
            continue
        runs: list[tuple[str, str, dict[str, Any], dict[str, Tolerance]]] = []
        key = (row["scheme"], row["schedule"])
        if key in BASELINES:
            policy, params, rel = BASELINES[key]
            label = row["schedule"] if row["scheme"] == "count" else f"yarn-cs {row['schedule']}"
            exact = Tolerance(rel=rel)
            runs.append((label, policy, params, {"avg_jct_s": exact, "makespan_s": exact}))
        elif row["scheme"] == "count" and row["schedule"] in TIRESIAS:
            policy, knob = TIRESIAS[row["schedule"]]
            base = {"starvation_knob": knob} if knob is not None else {}
            exact = Tolerance(rel=1e-3)
            runs.append(
                (
                    f"{row['schedule']} (compat)",
                    policy,
                    {**base, "compat": True},
                    {"avg_jct_s": exact, "makespan_s": exact, "preemptions": Tolerance()},
                )
            )
            runs.append(
                (
                    f"{row['schedule']} (default)",
                    policy,
                    base,
                    {"avg_jct_s": Tolerance(rel=0.10), "preemptions": Tolerance(factor=2, abs=1)},
                )
            )
        for label, policy, params, tolerances in runs:
            task = Task(
                f"{row['cluster_spec'].removesuffix('.csv')}-{row['trace'].removesuffix('.csv')}"
                f"-{label.replace(' ', '')}",
                {
                    "cluster_spec": row["cluster_spec"],
                    "trace": row["trace"],
                    "policy": policy,
                    "params": params,
                },
            )
            for metric, tolerance in tolerances.items():
                points.append(
                    Point(
                        figure=f"{row['trace'].removesuffix('.csv')}: {METRICS[metric]}",
                        series=label,
                        x=float(row["gpus"]),
                        x_name="GPUs",
                        metric=metric,
                        published=float(row[metric]),
                        tolerance=tolerance,
                        task=task,
                    )
                )
    return points


def measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """One simulator row replayed: average JCT, makespan, preemptions, jobs completed."""
    import dlsched

    with _find(shared, spec["cluster_spec"]).open(newline="") as handle:
        shape = next(csv.DictReader(handle))
    cluster = dlsched.Cluster.from_dict(
        {
            "name": spec["cluster_spec"],
            "nodes": [
                {
                    "gpu_type": "P100",
                    "count": int(shape["num_switch"]) * int(shape["num_node_p_switch"]),
                    "gpus_per_node": int(shape["num_gpu_p_node"]),
                }
            ],
        }
    )
    workload = dlsched.load_trace(_find(shared, spec["trace"]), format="tiresias")
    result = dlsched.simulate(
        workload,
        cluster,
        policy=spec["policy"],
        overheads="tiresias-sim",
        audit=False,
        **spec["params"],
    )
    summary = result.summary()
    return {
        "avg_jct_s": summary["avg_jct"],
        "makespan_s": summary["makespan"],
        "preemptions": float(result.jobs["preemptions"].sum()),
        "completed": summary["jobs_completed"],
    }


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            name="tiresias",
            paper="Tiresias (Gu et al., NSDI 2019), the authors' simulator",
            source="SymbioticLab/Tiresias simulator runs (FIFO, fit-first, SRTF, YARN-CS, "
            "Tiresias-L/-G ± starvation knob) on its traces and cluster shapes",
            data=(
                DataFile(REFERENCE, "the Tiresias authors' simulator runs (reference results)"),
                DataFile(f"{ANCHORS}/upstream/60_job.csv", "the simulator's 60-job trace"),
                DataFile(f"{ANCHORS}/derived", "the derived traces and cluster shapes"),
            ),
            plan=plan,
            measure=measure,
            quick_subset="the runs on 60_job.csv and 60_job_x10.csv (8 and 16 GPUs)",
            cost_quick="~1 CPU s (36 runs)",
            cost_full="~6 CPU s (75 runs)",
            summary="Tiresias (NSDI '19): the authors' simulator on 7 trace/cluster pairs",
        )
    )


_register()
