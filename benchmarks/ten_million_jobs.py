"""A ten-million-job FIFO replay with its event log streamed to parquet.

Tiles the Pollux-preprocessed Philly table (82,247 jobs) in time with
`dlsched.traces.transforms.tile` (as `million_jobs.py` does) to `--jobs` rows (default
10,000,000: 122 copies, cut), replays it under FIFO on the Philly machine list with
``simulate(..., events=<file>.parquet)`` — the event log goes to disk in row groups as the run
goes, the summary comes from the per-job table — and prints (issue 16's target 2: under 8 GB):

- CPU seconds (`time.process_time`) of loading and tiling, and of `simulate()`;
- jobs per CPU-second of `simulate()`;
- peak resident memory of the process (`ru_maxrss`);
- the events written, asserted to be 3 per job (submit, start, finish: FIFO never preempts)
  and to be the rows of the parquet file, so the benchmark cannot silently measure a smaller
  workload; and the file's size and row groups.

Run from the repository root with the shared data beside it (it takes several CPU-minutes and
some GB; ``--jobs 3000000`` for a third of it):

    nice -n 10 python benchmarks/ten_million_jobs.py [--jobs 10000000] [--keep events.parquet]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

import dlsched
from dlsched.traces.transforms import tile

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "traces" / "philly" / "philly_jobs_pollux.csv.gz"
PHILLY_JOBS = 82_247


def peak_rss_mb() -> float:
    scale = 1024 if sys.platform != "darwin" else 1
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, default=SOURCE)
    parser.add_argument("--jobs", type=int, default=10_000_000)
    parser.add_argument("--keep", type=Path, default=None, help="write the event log here")
    args = parser.parse_args()
    started = time.process_time()
    philly = dlsched.load_trace(args.trace, format="philly-pollux")
    work = tile(philly, math.ceil(args.jobs / len(philly)))
    del philly
    if len(work) > args.jobs:
        work = work.head(args.jobs)
    load_s = time.process_time() - started
    n = len(work)
    assert n == args.jobs, (n, args.jobs)
    folder = None
    if args.keep is None:
        folder = tempfile.TemporaryDirectory(prefix="dlsched-10m-")
        path = Path(folder.name) / "events.parquet"
    else:
        path = args.keep
    started = time.process_time()
    result = dlsched.simulate(
        work, dlsched.load_cluster("philly"), policy="fifo", audit=False, events=path
    )
    sim_s = time.process_time() - started
    summary = result.summary()
    meta = pq.ParquetFile(path).metadata
    assert summary["jobs_completed"] == n, summary
    assert summary["events"] == 3 * n == meta.num_rows, (summary["events"], meta.num_rows)
    assert result.events.empty
    print(f"{n:,} jobs (Philly tiled), FIFO, event log streamed to parquet")
    print(f"load+tile      {load_s:9.1f} CPU-s")
    print(f"simulate       {sim_s:9.1f} CPU-s   {n / sim_s:,.0f} jobs/CPU-s")
    print(
        f"events         {meta.num_rows:,} in {meta.num_row_groups} row groups, "
        f"{os.path.getsize(path) / 2**20:,.0f} MB on disk"
    )
    print(f"avg JCT        {summary['avg_jct']:,.1f} s   makespan {summary['makespan']:,.0f} s")
    print(f"peak RSS       {peak_rss_mb():9.0f} MB", flush=True)
    if folder is not None:
        folder.cleanup()


if __name__ == "__main__":
    main()
