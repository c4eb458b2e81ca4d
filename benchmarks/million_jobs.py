"""A million-job replay: the Philly table tiled 13×, CPU seconds and peak memory per policy.

Tiles the Pollux-preprocessed Philly table (82,247 jobs) 13 times in time with
`dlsched.traces.transforms.tile` (copy `k` shifted by `k` × (the table's span + its mean gap
between submissions), integer ids shifted past the previous copy's) and replays it on the
Philly machine list under each policy, each in a fresh process, printing (issue 16's target
2: FIFO under 15 CPU-s, SRTF and Tiresias under 40 CPU-s, peak memory under 1 GB for all
three):

- CPU seconds (`time.process_time`) of loading and tiling; of the first use of the policy
  registry and the cluster (``imports``: the registry imports every built-in policy module,
  scipy among them, once per process, whatever the workload); and of `simulate()` (building
  job specs, the replay, the result tables) once they are loaded. Earlier versions timed
  `simulate()` with that first use inside it (``simulate + imports``, also printed);
- peak resident memory of that process (`ru_maxrss`: Python, pandas, the table, the run);
- jobs completed and job events, asserted under FIFO (3 per job), so the benchmark cannot
  silently measure a smaller workload.

Run from the repository root with the shared data beside it:

    python benchmarks/million_jobs.py [--policies fifo,srtf,tiresias] [--copies 13]
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from pathlib import Path
from typing import Any

import dlsched
from dlsched.traces.transforms import tile

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "traces" / "philly" / "philly_jobs_pollux.csv.gz"
PHILLY_JOBS = 82_247


def tiled_philly(path: Path, copies: int) -> dlsched.Workload:
    """The Philly table repeated `copies` times one after the other (`transforms.tile`)."""
    return tile(dlsched.load_trace(path, format="philly-pollux"), copies)


def peak_rss_mb() -> float:
    scale = 1024 if sys.platform != "darwin" else 1
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def run_one(trace: Path, copies: int, policy: str) -> dict[str, Any]:
    """Load, tile and replay under one policy in this process."""
    started = time.process_time()
    work = tiled_philly(trace, copies)
    load_s = time.process_time() - started
    started = time.process_time()
    dlsched.policies.get(policy)  # the registry's first use: its imports (see the docstring)
    cluster = dlsched.load_cluster("philly")
    imports_s = time.process_time() - started
    started = time.process_time()
    result = dlsched.simulate(work, cluster, policy=policy, audit=False)
    sim_s = time.process_time() - started
    summary = result.summary()
    return {
        "policy": policy,
        "jobs": len(work),
        "load_s": load_s,
        "imports_s": imports_s,
        "sim_s": sim_s,
        "jobs_completed": summary["jobs_completed"],
        "events": summary["events"],
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SOURCE)
    parser.add_argument("--policies", default="fifo,srtf,tiresias")
    parser.add_argument("--copies", type=int, default=13)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    print(f"{PHILLY_JOBS * args.copies:,} jobs (Philly × {args.copies}), CPU seconds")
    print(
        f"{'policy':<10} {'load+tile':>9} {'imports':>8} {'simulate':>9} {'sim+imp':>8} "
        f"{'us/job':>7} {'events':>10} {'peak MB':>8}"
    )
    for policy in args.policies.split(","):
        with context.Pool(1) as pool:
            s = pool.apply(run_one, (args.trace, args.copies, policy))
        assert s["jobs"] == PHILLY_JOBS * args.copies, s
        assert s["jobs_completed"] == s["jobs"], s
        if policy == "fifo":
            assert s["events"] == 3 * s["jobs"], s
        print(
            f"{policy:<10} {s['load_s']:>9.2f} {s['imports_s']:>8.2f} {s['sim_s']:>9.2f} "
            f"{s['sim_s'] + s['imports_s']:>8.2f} {s['sim_s'] / s['jobs'] * 1e6:>7.1f} "
            f"{s['events']:>10,} {s['peak_rss_mb']:>8.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
