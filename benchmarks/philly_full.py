"""Replay the full Philly job table (82,247 jobs) on the Philly machine list.

Prints jobs/second, simulated events/second and peak memory for each policy. Run from the
repository root with the shared data beside it:

    python benchmarks/philly_full.py                 # fifo and srtf
    python benchmarks/philly_full.py --policies fifo --jobs 20000

Source: ../shared/traces/philly/philly_jobs_pollux.csv.gz (Microsoft Philly, CC BY 4.0, as
pre-processed for Pollux). Submit times are seconds since the first job; ids are the row
positions in the file, so its 65 exact duplicate rows stay distinct jobs.
Peak memory is the process's maximum resident set size (it includes pandas and the table).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import dlsched

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "traces" / "philly" / "philly_jobs_pollux.csv.gz"


def philly_workload(path: Path, jobs: int | None) -> dlsched.Workload:
    """The Pollux-preprocessed Philly table as a canonical workload (ids = row positions)."""
    workload = dlsched.load_trace(path, format="philly-pollux")
    return workload.head(jobs) if jobs else workload


def peak_rss_mb() -> float:
    scale = 1024 if sys.platform != "darwin" else 1024 * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SOURCE)
    parser.add_argument("--cluster", default="philly")
    parser.add_argument("--policies", default="fifo,srtf")
    parser.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    args = parser.parse_args()

    started = time.perf_counter()
    workload = philly_workload(args.trace, args.jobs)
    load_s = time.perf_counter() - started
    cluster = dlsched.load_cluster(args.cluster)
    print(f"{len(workload):,} jobs loaded in {load_s:.2f} s; {cluster!r}")
    print(f"{'policy':<8} {'wall s':>8} {'jobs/s':>9} {'events':>9} {'events/s':>9} "
          f"{'sched calls':>11} {'sched %':>7} {'avg JCT h':>9} {'peak MB':>8}")
    for policy in args.policies.split(","):
        result = dlsched.simulate(workload, cluster, policy=policy, audit=False)
        s = result.summary()
        wall = s["sim_wall_s"]
        print(f"{policy:<8} {wall:>8.2f} {s['jobs_completed'] / wall:>9,.0f} {s['events']:>9,} "
              f"{s['events'] / wall:>9,.0f} {s['scheduling_calls']:>11,} "
              f"{100 * s['scheduler_wall_s'] / wall:>7.1f} {s['avg_jct'] / 3600:>9.2f} "
              f"{peak_rss_mb():>8.0f}")
        assert s["jobs_completed"] == len(workload), s


if __name__ == "__main__":
    main()
