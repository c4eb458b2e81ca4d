"""`helios-ces`: Helios' cluster energy saving (Hu et al., SC '21, §6) on the Philly trace.

What the paper evaluates: CES replayed on each cluster's running-node series (Helios' four
clusters, Figure 14; Philly, Figure 15; artifact ``framework/CES Service``), reporting nodes
powered off and node utilisation. What we have: the Helios per-job logs and the artifact's
node series (``cluster_node_used_gpu_count.csv``, ``philly_node_sequence.csv``) are NOT in our
copy (Git-LFS blobs absent; ``shared/traces/helios/README.md``), and the figures give no
numbers. So this reproduces the *shape* on the job trace we have — the Pollux-preprocessed
Philly table on the Philly hardware (``configs/clusters/philly.yaml`` with an ``energy:``
section: wake 300 s, shut-down 60 s, vendor TDPs, idle = 0.2 × TDP, an assumption) — under
FIFO, with and without ``--provisioner ces`` (the artifact's Philly preset):

- ``energy_saved_share`` (1 − energy with CES / energy without): the paper's claim is that
  CES saves energy; the point accepts (0, 1] (published 0.5 ± 0.5: a claim, not a number).
- ``queueing_added_share`` (extra average queueing delay / the baseline's): the paper's
  claim is that the buffer keeps jobs from waiting noticeably; the point accepts
  [0, 20 %] (published 0.1 ± 0.1).

Measured besides (not compared): energy with and without (kWh), mean nodes off, wake events.
Quick: one week of submissions (2017-10-09 … 10-16, 12,751 jobs); full: four weeks.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlsched.reproduce.base import DataFile, Point, Reproduction, Task, Tolerance

TRACE = "traces/philly/philly_jobs_pollux.csv.gz"
ENERGY = {"wake_s": 300.0, "sleep_s": 60.0}
"""The Philly nodes' power transitions (an assumption: a few minutes to boot a GPU server,
one to shut it down; the paper states none)."""
WINDOWS = {
    "1 week": ("2017-10-09 00:00:00", "2017-10-16 00:00:00"),
    "4 weeks": ("2017-10-09 00:00:00", "2017-11-06 00:00:00"),
}
CLAIMS = (
    ("energy_saved_share", 0.5, Tolerance(abs=0.5), "CES saves energy: (0, 1]"),
    ("queueing_added_share", 0.1, Tolerance(abs=0.1), "little queueing added: [0, 20 %]"),
)


def plan(shared: Path, quick: bool) -> list[Point]:
    """The two shape claims on one week (quick) or on one and four weeks (full)."""
    points = []
    for label in ("1 week",) if quick else tuple(WINDOWS):
        task = Task(f"philly-{label.replace(' ', '')}-fifo", {"window": label, "policy": "fifo"})
        weeks = float(label.split()[0])
        for metric, published, tolerance, note in CLAIMS:
            points.append(
                Point(
                    figure=f"Philly, FIFO ± CES: {metric}",
                    series="ces (philly preset)",
                    x=weeks,
                    x_name="weeks",
                    metric=metric,
                    published=published,
                    tolerance=tolerance,
                    task=task,
                    note=f"shape claim, not a published number: {note}",
                )
            )
    return points


def philly_cluster() -> Any:
    """The Philly hardware with an energy section (`ENERGY`)."""
    import dlsched
    from dlsched.cluster import Cluster

    base = dlsched.load_cluster("philly")
    data: dict[str, Any] = {
        "name": "philly-energy",
        "gpu_types": {t.name: {"memory_gb": t.memory_gb} for t in base.gpu_types.values()},
        "nodes": [
            {"gpu_type": "P100", "count": 321, "gpus_per_node": 2, "name": "p100x2"},
            {"gpu_type": "P40", "count": 231, "gpus_per_node": 8, "name": "p40x8"},
        ],
        "vcs": [
            {"name": vc.name, "nodes": [base.nodes[i].name for i in vc.node_indices]}
            for vc in base.vcs
        ],
        "energy": dict(ENERGY),
    }
    return Cluster.from_dict(data, "philly-energy (helios-ces)")


def measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """One window under one policy, without and with CES."""
    import dlsched
    from dlsched.provision.ces import CES
    from dlsched.traces.transforms import filter_jobs, time_window

    start, end = WINDOWS[spec["window"]]
    cluster = philly_cluster()
    # (the jobs of the few VCs the cluster file does not declare are left out: 3 in 4 weeks)
    work = filter_jobs(
        time_window(dlsched.load_trace(shared / TRACE), start, end),
        vc=[vc.name for vc in cluster.vcs],
    )
    base = dlsched.simulate(work, cluster, spec["policy"]).summary()
    ces = dlsched.simulate(work, cluster, spec["policy"], provisioner=CES(preset="philly"))
    with_ces = ces.summary()
    for summary in (base, with_ces):
        if summary["jobs_completed"] != len(work.jobs):
            raise RuntimeError(f"{summary['jobs_completed']} of {len(work.jobs)} jobs completed")
    queue = base["avg_queueing_delay"]
    added = with_ces["avg_queueing_delay"] - queue
    return {
        "energy_kwh_without": base["energy_kwh"],
        "energy_kwh_with": with_ces["energy_kwh"],
        "energy_saved_share": 1.0 - with_ces["energy_kwh"] / base["energy_kwh"],
        "avg_queueing_delay_without_s": queue,
        "avg_queueing_delay_with_s": with_ces["avg_queueing_delay"],
        "queueing_added_s": added,
        "queueing_added_share": added / queue if queue > 0 else float("nan"),
        "mean_nodes_off": with_ces["mean_nodes_off"],
        "wake_events": float(with_ces["wake_events"]),
        "avg_jct_without_s": base["avg_jct"],
        "avg_jct_with_s": with_ces["avg_jct"],
    }


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            name="helios-ces",
            paper="Helios (Hu et al., SC '21) §6: CES, cluster energy saving",
            source="energy saved and queueing added by CES beside FIFO on the Philly trace "
            "(shape claims: the paper's node series are not in our copy)",
            data=(DataFile(TRACE, "the Pollux-preprocessed Philly job table"),),
            plan=plan,
            measure=measure,
            quick_subset="one week of Philly submissions",
            cost_quick="~6 CPU s (2 runs)",
            cost_full="~1 CPU min (4 runs)",
            summary="Helios CES (SC '21): energy saved vs queueing added, Philly",
            notes=(
                "Missing: Helios' per-job logs and the artifact's node series "
                "(cluster_node_used_gpu_count.csv, philly_node_sequence.csv); the paper's "
                "figures give no numbers, so the points are its claims, not its values.",
                "CES forecasts with a seasonal mean of the run's own past demand, not the "
                "artifact's LightGBM (dlsched.provision.ces).",
            ),
        )
    )


_register()
