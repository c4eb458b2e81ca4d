"""Optimus+Oracle (GPU-only mode) on the Pollux OSDI'21 workloads: ours vs the artifact's,
per application. The figure itself (every workload and load, with its tolerance) is
`dlsched reproduce optimus-pollux`; this script explores its settings (oracle, interval,
placement) on the same runs (`dlsched.reproduce.pollux.run_workload`).

The Pollux artifact (petuum/adaptdl, branch osdi21-artifact, ``simulator/``) runs its Optimus
baseline on 16 nodes x 4 T4 GPUs, every 60 s, with a 30 s re-scale penalty on every
(re)allocation, oracle remaining iterations and its measured step-time profiles. Its per-job
JCTs are in ``../shared/anchors/pollux_osdi21_results/results-jobload/optimus-<load>/``;
workload-6 at load 1.0 averages 5,301.875 s.

We replay the same jobs (``../shared/traces/sia_pollux/pollux/workloads*/``) with
`PolluxThroughput` (the same profiles, ``../shared/traces/sia_pollux/sia/traces/``), work from
the artifact's validation tables (`pollux_workload`), and `optimus(mode="gpu",
interval_s=60, placement="pollux")`. Two oracles: the exact remaining steps (``exact``) and
the artifact's own epoch-granular remaining iterations (``artifact``, `PolluxRemaining`).

    PYTHONPATH=src python benchmarks/optimus_pollux.py                  # workload-6, load 1.0
    PYTHONPATH=src python benchmarks/optimus_pollux.py --workloads 1-8  # the Figure 8a mean
    PYTHONPATH=src python benchmarks/optimus_pollux.py --load 2.0 --oracle artifact
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from dlsched.perf.ps_speed import PolluxThroughput
from dlsched.reproduce.base import shared_folder
from dlsched.reproduce.pollux import ANCHORS as ANCHOR_PATH
from dlsched.reproduce.pollux import FOLDERS, TRACES, run_workload

SHARED = shared_folder()
ANCHORS = SHARED / ANCHOR_PATH


def run(
    truth: PolluxThroughput, load: str, index: int, oracle: str, interval_s: float, placement: str
) -> tuple[dict[str, float], float]:
    """Our per-job JCTs for one workload, and the simulation's wall time."""
    wall = time.perf_counter()
    result = run_workload(
        SHARED,
        load,
        index,
        oracle=oracle,
        interval_s=interval_s,
        placement=placement,
        truth=truth,
    )
    jobs = result.jobs
    return dict(
        zip(jobs["job_id"].astype(str), jobs["jct"], strict=True)
    ), time.perf_counter() - wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", default="1.0", choices=sorted(FOLDERS))
    parser.add_argument("--workloads", default="6", help="e.g. 6, 1-8 or 1,3,6")
    parser.add_argument("--oracle", default="exact", choices=("exact", "artifact"))
    parser.add_argument("--interval", type=float, default=60.0)
    parser.add_argument("--placement", default="pollux", choices=("pollux", "optimus"))
    args = parser.parse_args(argv)
    if not (SHARED / TRACES).exists() or not ANCHORS.exists():
        print(f"needs {SHARED / TRACES} and {ANCHORS}", file=sys.stderr)
        return 2
    if "-" in args.workloads:
        first, last = (int(x) for x in args.workloads.split("-"))
        indices = list(range(first, last + 1))
    else:
        indices = [int(x) for x in args.workloads.split(",")]
    anchor = json.loads((ANCHORS / f"optimus-{args.load}" / "summary.json").read_text())
    truth = PolluxThroughput(SHARED / TRACES / "sia" / "traces")
    print(
        f"Optimus+Oracle, GPU mode, load {args.load}, oracle={args.oracle}, "
        f"interval {args.interval:g} s, placement={args.placement}"
    )
    print(
        f"{'workload':>10} {'ours (s)':>10} {'theirs (s)':>11} {'ratio':>7} "
        f"{'median job ratio':>17} {'wall (s)':>9}"
    )
    ours_avgs, theirs_avgs = [], []
    by_app: dict[str, list[float]] = {}
    for index in indices:
        name = f"workload-{index}"
        ours, wall = run(truth, args.load, index, args.oracle, args.interval, args.placement)
        theirs = anchor["jcts"][name]
        mean_ours = statistics.fmean(ours.values())
        ratios = [ours[job] / theirs[job] for job in theirs if theirs[job] > 0]
        for job in theirs:
            by_app.setdefault(job.rsplit("-", 1)[0], []).append(ours[job] / max(theirs[job], 1))
        ours_avgs.append(mean_ours)
        theirs_avgs.append(anchor["avgs"][name])
        print(
            f"{name:>10} {mean_ours:10.1f} {anchor['avgs'][name]:11.1f} "
            f"{mean_ours / anchor['avgs'][name]:7.3f} {statistics.median(ratios):17.3f} "
            f"{wall:9.1f}"
        )
    if len(indices) > 1:
        mean_ours, mean_theirs = statistics.fmean(ours_avgs), statistics.fmean(theirs_avgs)
        print(f"{'mean':>10} {mean_ours:10.1f} {mean_theirs:11.1f} {mean_ours / mean_theirs:7.3f}")
    print("per application, median JCT ratio ours/theirs (jobs):")
    for app, values in sorted(by_app.items()):
        print(f"  {app:>12}: {statistics.median(values):6.3f} ({len(values)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
