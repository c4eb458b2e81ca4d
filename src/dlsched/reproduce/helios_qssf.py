"""`helios-qssf`: Helios' QSSF against FIFO, SJF and SRTF on Philly (Hu et al.,
"Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
Datacenters", SC '21, §5; artifact ``S-Lab-System-Group/HeliosArtifact`` at ``bdaae109``).

**Published.** The paper's QSSF evaluation on its own clusters uses the Helios per-job logs
with job names, which are not public (the artifact's README: "since we do not release job
name information, the estimator and qssf policy are not available for Helios"; our copy of
the Helios data holds cluster-level series only, ``traces/helios/README.md``). What is
public is the artifact's Philly run (``framework/QSSF Service``, ``simulator.py -e Philly
--sweep``), whose cluster-wide results the artifact commits as the output of
``plot/result_plot.ipynb`` (the ``all`` row of ``jct_avg`` and ``que_avg``, consolidated
placement): average JCT FIFO 86,072 s, SJF 34,272 s, SRTF 30,683 s, QSSF 37,324 s; average
queueing delay 56,531, 4,731, 1,138 and 7,783 s (`PUBLISHED`). Its setup: jobs submitted
2017-10-01 … 2017-11-30 in the 11 VCs of ``data/philly_vc.csv``, each VC a separate cluster
of its node count × 8 GPUs, scheduled independently; SJF and SRTF know each job's duration.

**The data differ, so the shape is reproduced.** The artifact's ``philly_trace.csv`` (from
Philly's raw ``cluster_job_log``, every final state) is not in our copy; the Philly job table
we have is Pollux's pre-processed one (``traces/philly/philly_jobs_pollux.csv.gz``: VC,
submit time, GPUs, duration; no users, no job names, filtering undocumented). Its window
holds 68,503 jobs of those VCs, and on the artifact's capacity (352 nodes) it barely queues:
FIFO's average queueing delay is 104 s against the artifact's 56,531 s, and every policy's
average JCT is within 0.5 % of FIFO's (measured; ``capacity=1``). The reproduction therefore
runs the same jobs on a third of each VC's nodes (`CAPACITY`, rounded, at least one node),
where FIFO's queueing delay (33,312 s; average JCT 44,792 s, measured) is within the
artifact's order of magnitude, and compares *ratios to FIFO*: who beats whom, and roughly by
how much.

Rows (`ROWS`): FIFO, SJF and SRTF with the oracle (as the artifact's), and QSSF with Helios'
history rules (`dlsched.predict.helios`, ``vc_fallback=True``: the trace has no users, so
the same VC and GPU count stands for the same user). The artifact's QSSF on Philly does not
use a predictor: ``PhillyEstimator`` reads ``Philly_lgb.csv``, each job's true duration
perturbed by a random error drawn to match the Helios predictor's error distribution
(``estimators/philly_estimate.py``). We follow the paper (a real, leakage-free predictor) by
default; the artifact's synthetic perturbation is not offered. The full run adds QSSF with
the gradient-boosted predictor (`dlsched.predict.gbdt`; ~5 CPU minutes).

Tolerances (shape, the data differ): an average JCT ratio within ±0.15 of the published one
(SJF, SRTF and QSSF all cut FIFO's JCT to roughly 0.35–0.45 of it), a queueing-delay ratio
within 3× (all cut FIFO's queueing by about an order of magnitude).

Measured (full run, 2026-12-02): JCT ÷ FIFO's SJF 0.411 (published 0.398), SRTF 0.359
(0.356), QSSF with Helios' rules 0.513 (0.434), QSSF with gbdt 0.523 (0.434); queueing ÷
FIFO's 0.208 (0.084), 0.096 (0.020: outside 3×, the one point out), 0.346 and 0.359
(0.138). The order is the artifact's (SRTF < SJF < QSSF < FIFO); our QSSF stays further from
the oracle SJF than the artifact's, whose priorities are truth plus noise where ours come
from a VC-level history (no users or names in this trace; median relative error 1.2 for the
rules, 0.65 for gbdt).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from dlsched.reproduce.base import DataFile, Point, Reproduction, Task, Tolerance

TRACE = "traces/philly/philly_jobs_pollux.csv.gz"
VC_NODES = "traces/philly/philly_vc_nodes.csv"
WINDOW = ("2017-10-01 00:00:00", "2017-12-01 00:00:00")
"""The artifact's ``trace_range`` (``simulator.py``: 2017-10-01 00:00 … 2017-11-30 23:59)."""
GPUS_PER_NODE = 8
"""The artifact's ``--num_gpus_per_node`` default (``vc_dict_homo``: every node 8 GPUs)."""
CAPACITY = 1 / 3
"""Share of each VC's nodes the jobs run on (module docstring: the load)."""

PUBLISHED: dict[str, dict[str, float]] = {
    "fifo": {"avg_jct_s": 86072.0, "avg_queue_s": 56531.0},
    "sjf": {"avg_jct_s": 34272.0, "avg_queue_s": 4731.0},
    "srtf": {"avg_jct_s": 30683.0, "avg_queue_s": 1138.0},
    "qssf": {"avg_jct_s": 37324.0, "avg_queue_s": 7783.0},
}
"""The artifact's Philly sweep, cluster-wide (``all``) averages, consolidated placement
(``framework/QSSF Service/plot/result_plot.ipynb``, committed outputs of its cells 2-3)."""

ROWS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "SJF (oracle)": ("sjf", "sjf", "oracle", {}),
    "SRTF (oracle)": ("srtf", "srtf", "oracle", {}),
    "QSSF (Helios rules)": ("qssf", "qssf", "helios", {"vc_fallback": True}),
    "QSSF (gbdt)": ("qssf", "qssf", "gbdt", {}),
}
"""Label → (published row, policy, predictor or ``oracle``, predictor parameters)."""
QUICK_ROWS = ("SJF (oracle)", "SRTF (oracle)", "QSSF (Helios rules)")

JCT_TOLERANCE = Tolerance(abs=0.15)
QUEUE_TOLERANCE = Tolerance(factor=3.0)


def philly_helios_cluster(vc_nodes: Path, capacity: float = 1.0) -> dict[str, Any]:
    """The artifact's Philly: each VC of ``philly_vc.csv`` owns ``node num × capacity``
    nodes (rounded, at least 1) of 8 GPUs of one type."""
    with vc_nodes.open(newline="") as handle:
        rows = [(r["vc"].strip(), int(r["node num"])) for r in csv.DictReader(handle)]
    vcs = [{"name": vc, "nodes": max(1, round(n * capacity))} for vc, n in rows]
    return {
        "name": f"philly-helios-{capacity:g}",
        "description": (
            "HeliosArtifact's Philly simulation cluster (framework/QSSF Service/data/"
            f"philly_vc.csv): 11 VCs of 8-GPU nodes, at {capacity:g} of their node counts"
        ),
        "nodes": [
            {
                "gpu_type": "GPU",
                "count": sum(int(v["nodes"]) for v in vcs),
                "gpus_per_node": GPUS_PER_NODE,
                "name": "node",
            }
        ],
        "vcs": vcs,
    }


@lru_cache(maxsize=2)
def _workload(shared: Path) -> Any:
    import dlsched
    from dlsched.traces.transforms import filter_jobs, time_window

    with (shared / VC_NODES).open(newline="") as handle:
        vcs = [r["vc"].strip() for r in csv.DictReader(handle)]
    work = time_window(dlsched.load_trace(shared / TRACE), *WINDOW)
    return filter_jobs(work, vc=vcs)


def _run(shared: Path, capacity: float, policy: str, predictor: str, params: Mapping[str, Any]):
    import dlsched
    from dlsched.perf.predicting import PredictingEstimator

    estimator: Any = "oracle" if predictor == "oracle" else PredictingEstimator(predictor, **params)
    cluster = dlsched.Cluster.from_dict(philly_helios_cluster(shared / VC_NODES, capacity))
    work = _workload(shared)
    summary = dlsched.simulate(
        work,
        cluster,
        policy="per_vc",
        inner=policy,
        placement="consolidated",
        estimator=estimator,
        audit=False,
    ).summary()
    if summary["jobs_completed"] != len(work.jobs):
        raise RuntimeError(
            f"{summary['jobs_completed']} of {len(work.jobs)} jobs completed under {policy}"
        )
    return summary


@lru_cache(maxsize=4)
def _fifo(shared: Path, capacity: float) -> tuple[float, float]:
    summary = _run(shared, capacity, "fifo", "oracle", {})
    return summary["avg_jct"], summary["avg_queueing_delay"]


def plan(shared: Path, quick: bool) -> list[Point]:
    """Each row's average JCT and queueing delay as ratios to FIFO's (quick: no gbdt)."""
    fifo = PUBLISHED["fifo"]
    points = []
    for label in QUICK_ROWS if quick else tuple(ROWS):
        row, policy, predictor, params = ROWS[label]
        task = Task(
            f"{policy}-{predictor}-c{CAPACITY:.3f}",
            {"capacity": CAPACITY, "policy": policy, "predictor": predictor, "params": params},
        )
        for metric, key, name, tolerance in (
            ("jct_vs_fifo", "avg_jct_s", "average JCT", JCT_TOLERANCE),
            ("queue_vs_fifo", "avg_queue_s", "average queueing delay", QUEUE_TOLERANCE),
        ):
            points.append(
                Point(
                    figure=f"Philly, 11 VCs at {CAPACITY:.2g} of the artifact's nodes: "
                    f"{name} ÷ FIFO's",
                    series=label,
                    x=CAPACITY,
                    x_name="share of the artifact's nodes",
                    metric=metric,
                    published=PUBLISHED[row][key] / fifo[key],
                    tolerance=tolerance,
                    task=task,
                    note="the artifact's QSSF uses perturbed true durations"
                    if row == "qssf"
                    else "",
                )
            )
    return points


def measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """One row on the scaled artifact cluster, and FIFO's run on it: the averages, their
    ratios to FIFO's, and the prediction error when a predictor is used."""
    capacity = float(spec["capacity"])
    summary = _run(shared, capacity, spec["policy"], spec["predictor"], spec["params"])
    fifo_jct, fifo_queue = _fifo(shared, capacity)
    out = {
        "avg_jct_s": float(summary["avg_jct"]),
        "avg_queue_s": float(summary["avg_queueing_delay"]),
        "fifo_avg_jct_s": float(fifo_jct),
        "fifo_avg_queue_s": float(fifo_queue),
        "jct_vs_fifo": float(summary["avg_jct"]) / fifo_jct,
        "queue_vs_fifo": float(summary["avg_queueing_delay"]) / fifo_queue,
    }
    for key in ("prediction_mae_s", "prediction_median_rel_error", "prediction_p90_rel_error"):
        if key in summary:
            out[key] = float(summary[key])
    return out


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            name="helios-qssf",
            paper="Helios (Hu et al., SC '21) §5 QSSF, the artifact's Philly run",
            source="average JCT and queueing delay of SJF, SRTF and QSSF relative to FIFO, "
            "per-VC scheduling on the artifact's 11 Philly VCs (shape: Pollux's Philly job "
            "table at a third of the nodes; the Helios job logs are not public)",
            data=(
                DataFile(TRACE, "Pollux's pre-processed Philly job table"),
                DataFile(VC_NODES, "HeliosArtifact's Philly VC node counts"),
            ),
            plan=plan,
            measure=measure,
            quick_subset="SJF, SRTF and QSSF with Helios' rules (no gbdt)",
            cost_quick="~30 CPU s (4 runs of 68,503 jobs)",
            cost_full="~6 CPU min (5 runs; gbdt refits every 100 jobs)",
            summary="Helios QSSF (SC '21): the artifact's Philly run, ratios to FIFO",
            notes=(
                "The Helios per-job logs with job names are not public; Pollux's Philly "
                "job table has no users or names (the Helios rules fall back to VC and GPU "
                "count) and queues little at the artifact's capacity: run at 1/3 of it.",
            ),
        )
    )


_register()
