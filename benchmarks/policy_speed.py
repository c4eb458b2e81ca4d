"""Policy cost per job: FIFO, FIFO with EASY backfill, per-VC FIFO, SJF, SRTF, Tiresias-L/-G
and Gandiva.

Prints CPU microseconds per job (`time.process_time` around `simulate()`: building job
specs, the replay and the result tables) and the ratio to plain FIFO on the same workload —
the machine-independent figure issue 16 sets targets on:

- the full Philly table (82,247 jobs) on the Philly machine list under ``fifo``, ``per-vc``
  (inner ``fifo``, the Philly VCs of ``configs/clusters/philly.yaml``), ``sjf``, ``srtf``,
  ``tiresias`` and ``tiresias-gittins`` (the paper's algorithm, the default) and ``gandiva``:
  per-VC FIFO close to FIFO, the others within 2× (Tiresias-G and Gandiva preempt and resume
  far more than the others: their event counts say how many times more);
- the first 20,000 Philly jobs asking for at most 64 GPUs on 8 nodes × 8 GPUs, a long queue,
  under ``fifo`` and ``fifo`` with ``backfill="easy"``: EASY within 3×.

Each figure is the best of ``--repeat`` runs (CPU time is noisy on a shared machine). Job and
event counts are asserted (with ``--jobs`` only the job count), so the benchmark cannot
silently measure a smaller workload. Run from the repository root with the shared data
beside it:

    python benchmarks/policy_speed.py [--repeat 3] [--jobs N] [--only fifo,srtf]

The first `simulate()` of a process also imports the policy modules (a few tenths of a
CPU-second): with ``--repeat 1`` that lands on the first label (FIFO), so compare with
``--repeat 2`` or more.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import dlsched
from dlsched.traces.transforms import filter_jobs

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "traces" / "philly" / "philly_jobs_pollux.csv.gz"

PHILLY_JOBS = 82_247
EASY_JOBS = 20_000
#: Events of each full-table run: submit, start and finish per job, plus SRTF's
#: preemptions and restarts (measured; a change means the workload or the policy changed).
EVENTS = {
    "fifo": 3 * PHILLY_JOBS,
    "per-vc": 3 * PHILLY_JOBS,
    "sjf": 3 * PHILLY_JOBS,
    "srtf": 252_582,
    "tiresias": 267_821,
    "tiresias-gittins": 618_727,
    "gandiva": 1_019_838,
    "fifo@64": 3 * EASY_JOBS,
    "fifo+easy@64": 3 * EASY_JOBS,
}
#: label → (policy name, parameters, workload: "philly" or "64")
RUNS: dict[str, tuple[str, dict[str, Any], str]] = {
    "fifo": ("fifo", {}, "philly"),
    "per-vc": ("per-vc", {"inner": "fifo"}, "philly"),
    "sjf": ("sjf", {}, "philly"),
    "srtf": ("srtf", {}, "philly"),
    "tiresias": ("tiresias", {}, "philly"),
    "tiresias-gittins": ("tiresias-gittins", {}, "philly"),
    "gandiva": ("gandiva", {}, "philly"),
    "fifo@64": ("fifo", {}, "64"),
    "fifo+easy@64": ("fifo", {"backfill": "easy"}, "64"),
}
#: each run's FIFO baseline
BASELINE = {"philly": "fifo", "64": "fifo@64"}


def cluster_64() -> dlsched.Cluster:
    """8 nodes × 8 GPUs of one type."""
    return dlsched.Cluster.from_dict(
        {"name": "64", "nodes": [{"gpu_type": "V100", "count": 8, "gpus_per_node": 8}]}
    )


def measure(
    workload: dlsched.Workload, cluster: dlsched.Cluster, name: str, params: dict, repeat: int
) -> tuple[float, dict[str, Any]]:
    """Best CPU seconds of `repeat` runs, and the last run's summary."""
    best = float("inf")
    summary: dict[str, Any] = {}
    for _ in range(repeat):
        started = time.process_time()
        result = dlsched.simulate(workload, cluster, policy=name, audit=False, **params)
        best = min(best, time.process_time() - started)
        summary = dict(result.summary())
    return best, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SOURCE)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs (default 1)")
    parser.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    parser.add_argument(
        "--only", default=None, help=f"comma-separated labels among {', '.join(RUNS)}"
    )
    args = parser.parse_args()
    labels = list(RUNS) if args.only is None else [s.strip() for s in args.only.split(",")]
    unknown = [label for label in labels if label not in RUNS]
    if unknown:
        raise SystemExit(f"unknown label(s) {unknown}; choose among {', '.join(RUNS)}")

    full = dlsched.load_trace(args.trace, format="philly-pollux")
    philly = full.head(args.jobs) if args.jobs else full
    small = filter_jobs(full, predicate=lambda jobs: jobs["num_gpus"] <= 64)
    small = small.head(min(EASY_JOBS, args.jobs or EASY_JOBS))
    workloads = {
        "philly": (philly, dlsched.load_cluster("philly")),
        "64": (small, cluster_64()),
    }
    print(f"{'policy':<16} {'jobs':>7} {'events':>9} {'CPU s':>7} {'µs/job':>7} {'× FIFO':>7}")
    per_job: dict[str, float] = {}
    for label in labels:
        name, params, where = RUNS[label]
        workload, cluster = workloads[where]
        cpu, summary = measure(workload, cluster, name, params, args.repeat)
        n_jobs = len(workload)
        assert summary["jobs_completed"] == n_jobs, (label, summary["jobs_completed"], n_jobs)
        if args.jobs is None:
            assert summary["events"] == EVENTS[label], (label, summary["events"], EVENTS[label])
        per_job[label] = cpu / n_jobs * 1e6
        base = per_job.get(BASELINE[where])
        ratio = f"{per_job[label] / base:>7.2f}" if base else f"{'':>7}"
        print(
            f"{label:<16} {n_jobs:>7,} {summary['events']:>9,} {cpu:>7.2f} "
            f"{per_job[label]:>7.1f} {ratio}",
            flush=True,
        )


if __name__ == "__main__":
    main()
