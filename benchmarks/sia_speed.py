"""Sia's speed against issue 14's targets: a 160-job Sia workload in under 60 CPU s and a
960-job `newtrace` workload in under 10 CPU minutes (the artifact spends 17 min on 160 jobs).

Runs ``dlsched.simulate(load_trace(w), "sia-64", policy)`` — the goodput truth and the `sia`
overhead preset by default — on Helios-Saturn ``workload-1`` (160 jobs) and ``newtrace``
``workload-1`` (960 jobs), and prints per run the CPU seconds (`time.process_time`, loading
included: the profile tables are read and fitted on first use), the average JCT, the jobs
finished and the target with PASS/FAIL. Each figure is the best of ``--repeat`` runs (CPU
time is noisy on a shared machine). Run from the repository root with ../shared beside it:

    python benchmarks/sia_speed.py [--policy sia] [--repeat 1] [--skip-newtrace]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import dlsched

REPO = Path(__file__).resolve().parent.parent
WORKLOADS = REPO.parent / "shared" / "traces" / "sia_pollux" / "sia" / "workloads"
RUNS = (
    ("saturn/workload-1.csv.gz", 160, 60.0),
    ("newtrace/workload-1.csv.gz", 960, 600.0),
)
"""(workload, jobs, CPU-second target) — issue 14, part 6."""


def run(path: Path, policy: str) -> tuple[float, float, int]:
    """CPU seconds (load + simulate), average JCT and jobs finished of one run."""
    start = time.process_time()
    result = dlsched.simulate(dlsched.load_trace(path), "sia-64", policy)
    cpu = time.process_time() - start
    summary = result.summary()
    return cpu, float(summary["avg_jct"]), int(summary["jobs_completed"])


def main() -> None:
    """Run the benchmark and print one line per workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="sia")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--skip-newtrace", action="store_true")
    args = parser.parse_args()
    for name, jobs, target in RUNS:
        if args.skip_newtrace and name.startswith("newtrace"):
            continue
        results = [run(WORKLOADS / name, args.policy) for _ in range(max(1, args.repeat))]
        cpu, avg_jct, finished = min(results)
        assert finished == jobs, f"{name}: {finished} of {jobs} jobs finished"
        verdict = "PASS" if cpu < target else "FAIL"
        print(
            f"{args.policy} {name}: {jobs} jobs, {cpu:.1f} CPU s (target < {target:.0f} s: "
            f"{verdict}), avg JCT {avg_jct:,.1f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
