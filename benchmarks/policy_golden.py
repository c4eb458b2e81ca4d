"""Save, or check against a saved copy, what policies decide on the full Philly table.

A speed change to a policy must not change its decisions. This script replays the workloads
of `policy_speed.py` (the full Philly table on the Philly machine list; 20,000 jobs on
64 GPUs for EASY backfill) under each policy asked for, and writes per run the summary
(without its wall-clock keys), a digest of the per-job table, the event log and the
timeline, and the per-job table itself (CSV); with ``--check`` it compares a new run with
the saved one and prints the first differing jobs. It also prints each run's CPU seconds
(`time.process_time` around `simulate()`).

    python benchmarks/policy_golden.py --save /tmp/golden --only srtf,tiresias
    python benchmarks/policy_golden.py --check /tmp/golden --only srtf,tiresias
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

import dlsched
from dlsched.traces.transforms import filter_jobs

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "traces" / "philly" / "philly_jobs_pollux.csv.gz"
EASY_JOBS = 20_000

#: label → (policy name, parameters, workload: "philly" or "64")
RUNS: dict[str, tuple[str, dict[str, Any], str]] = {
    "fifo": ("fifo", {}, "philly"),
    "per-vc": ("per-vc", {"inner": "fifo"}, "philly"),
    "sjf": ("sjf", {}, "philly"),
    "srtf": ("srtf", {}, "philly"),
    "tiresias": ("tiresias", {}, "philly"),
    "tiresias-gittins": ("tiresias-gittins", {}, "philly"),
    "tiresias-literal": ("tiresias", {"literal": True}, "philly"),
    "tiresias-knob8": ("tiresias", {"starvation_knob": 8}, "philly"),
    "gandiva": ("gandiva", {}, "philly"),
    "fifo@64": ("fifo", {}, "64"),
    "fifo+easy@64": ("fifo", {"backfill": "easy"}, "64"),
    "fifo+greedy@64": ("fifo", {"backfill": "greedy"}, "64"),
}
_WALL_KEYS = ("sim_wall_s", "scheduler_wall_s")


def digest(frame: pd.DataFrame) -> str:
    """A digest of a table's columns and values (exact: floats by their bits)."""
    h = hashlib.sha256(",".join(map(str, frame.columns)).encode())
    h.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return h.hexdigest()


def workloads(trace: Path, jobs: int | None) -> dict[str, tuple[Any, dlsched.Cluster]]:
    """The two workloads of `policy_speed.py`."""
    full = dlsched.load_trace(trace, format="philly-pollux")
    philly = full.head(jobs) if jobs else full
    small = filter_jobs(full, predicate=lambda table: table["num_gpus"] <= 64)
    small = small.head(min(EASY_JOBS, jobs or EASY_JOBS))
    cluster_64 = dlsched.Cluster.from_dict(
        {"name": "64", "nodes": [{"gpu_type": "V100", "count": 8, "gpus_per_node": 8}]}
    )
    return {"philly": (philly, dlsched.load_cluster("philly")), "64": (small, cluster_64)}


def run(label: str, loaded: dict[str, tuple[Any, dlsched.Cluster]]) -> tuple[float, dict, Any]:
    """CPU seconds, the record to compare, and the result."""
    name, params, where = RUNS[label]
    workload, cluster = loaded[where]
    started = time.process_time()
    result = dlsched.simulate(workload, cluster, policy=name, audit=False, **params)
    cpu = time.process_time() - started
    summary = {k: v for k, v in result.summary().items() if k not in _WALL_KEYS}
    record = {
        "summary": summary,
        "jobs": digest(result.jobs),
        "events": digest(result.events),
        "timeline": digest(result.timeline),
    }
    return cpu, record, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--save", type=Path)
    where.add_argument("--check", type=Path)
    parser.add_argument("--only", default=None, help=f"labels among {', '.join(RUNS)}")
    parser.add_argument("--trace", type=Path, default=SOURCE)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    labels = list(RUNS) if args.only is None else args.only.split(",")
    loaded = workloads(args.trace, args.jobs)
    failed = False
    for label in labels:
        cpu, record, result = run(label, loaded)
        directory = (args.save or args.check) / label
        if args.save:
            directory.mkdir(parents=True, exist_ok=True)
            (directory / "record.json").write_text(json.dumps(record, indent=1, default=str))
            result.jobs.to_csv(directory / "jobs.csv.gz", index=False)
            print(f"{label:<18} {cpu:8.2f} CPU-s  saved", flush=True)
            continue
        saved = json.loads((directory / "record.json").read_text())
        record = json.loads(json.dumps(record, default=str))
        same = record == saved
        print(f"{label:<18} {cpu:8.2f} CPU-s  {'identical' if same else 'DIFFERENT'}", flush=True)
        if not same:
            failed = True
            for key in record:
                if record[key] != saved[key]:
                    print(f"  {key}: {saved[key]} -> {record[key]}")
            old = pd.read_csv(directory / "jobs.csv.gz")
            new = pd.read_csv(pd.io.common.StringIO(result.jobs.to_csv(index=False)))
            if old.shape == new.shape:
                diff = (old != new) & ~(old.isna() & new.isna())
                rows = diff.any(axis=1)
                print(f"  {int(rows.sum())} jobs differ; first:\n{old[rows].head(3)}")
                print(new[rows].head(3))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
