"""Load a 3-million-row canonical CSV: time and peak memory (issue 3's big-input target).

Run from the repository root:

    PYTHONPATH=src python benchmarks/load_big_csv.py            # 3,000,000 rows
    PYTHONPATH=src python benchmarks/load_big_csv.py --rows 500000 --gzip
    PYTHONPATH=src python benchmarks/load_big_csv.py --format helios --rows 3400000

Writes a synthetic canonical CSV shaped like a Helios log (integer ids, a few thousand
users, 25 VCs, statuses, some deadlines, fractional GPUs and type constraints) into a
temporary directory, chunk by chunk, then loads it with ``dlsched.load_trace`` in a fresh
child process, so the peak resident memory reported is the loader's alone. For scale, a
plain ``pandas.read_csv`` of the same file (no validation) runs in another child; the ratio
of the two times is the machine-independent number. Target (issue 3): under 60 s and
under 2 GB for 3 M rows. The child asserts the number of jobs loaded, so the benchmark can
never silently measure a different workload. ``--format helios`` writes a Helios-layout
``cluster_log.csv`` instead (about half of it CPU-only jobs, which the loader drops chunk
by chunk), the shape of the real 3.4 M-job Helios logs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

MODELS = (
    "ResNet-50 (batch size 64)",
    "Transformer (batch size 128)",
    "LM (batch size 20)",
    "A3C",
    "CycleGAN",
    "Recommendation (batch size 2048)",
)
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")

_CHILD = r"""
import json, resource, sys, time
started = time.perf_counter()
if sys.argv[1] in ("canonical", "helios"):
    import dlsched
    workload = dlsched.load_trace(sys.argv[2], format=sys.argv[1])
    rows = len(workload)
    assert rows == int(sys.argv[3]), (rows, sys.argv[3])
    assert workload.jobs["submit_time"].is_monotonic_increasing
else:
    import pandas as pd
    rows = len(pd.read_csv(sys.argv[2]))
elapsed = time.perf_counter() - started
scale = 1 if sys.platform == "darwin" else 1024
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
print(json.dumps({"seconds": elapsed, "peak_bytes": peak, "rows": rows}))
"""


def write_csv(path: Path, rows: int, seed: int, chunk: int = 500_000) -> None:
    """A canonical CSV of ``rows`` synthetic jobs, written in chunks (bounded memory)."""
    rng = np.random.default_rng(seed)
    users = np.array([f"u{i:05d}" for i in range(5000)], dtype=object)
    vcs = np.array([f"vc{i:02d}" for i in range(25)], dtype=object)
    t = 0.0
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        submit = t + np.cumsum(rng.exponential(5.0, n))
        t = float(submit[-1])
        duration = np.round(rng.lognormal(6.5, 2.0, n)) + 1
        gpus = rng.choice([1, 1, 1, 1, 2, 4, 8, 16], n)
        milli = np.where((gpus == 1) & (rng.random(n) < 0.2), rng.integers(1, 20, n) * 50, 1000)
        deadline = np.where(rng.random(n) < 0.2, submit + 2.5 * duration, np.nan)
        frame = pd.DataFrame(
            {
                "job_id": np.arange(start, start + n),
                "submit_time": np.round(submit, 3),
                "num_gpus": gpus,
                "duration": duration,
                "total_steps": np.nan,
                "model": rng.choice(np.array(MODELS, dtype=object), n),
                "user": users[rng.integers(0, len(users), n)],
                "vc": vcs[rng.integers(0, len(vcs), n)],
                "deadline": deadline,
                "priority": 1.0,
                "gpu_type": np.where(rng.random(n) < 0.5, "V100", None),
                "status": rng.choice(np.array(STATES, dtype=object), n),
                "gpu_milli": milli,
                "gpu_constraint": np.where(rng.random(n) < 0.1, "V100|P100", None),
            }
        )
        frame.to_csv(path, mode="w" if start == 0 else "a", header=start == 0, index=False)


def write_helios_csv(path: Path, rows: int, seed: int, chunk: int = 500_000) -> int:
    """A Helios-layout ``cluster_log.csv`` of ``rows`` jobs (about half CPU-only); returns
    how many the helios loader should keep (GPU jobs with a positive duration)."""
    rng = np.random.default_rng(seed)
    users = np.array([f"u{i:04x}" for i in range(3000)], dtype=object)
    vcs = np.array([f"vc{i:03x}" for i in range(25)], dtype=object)
    origin = np.datetime64("2020-04-01T00:00:00")
    t = 0.0
    kept = 0
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        submit = t + np.cumsum(rng.exponential(4.5, n))
        t = float(submit[-1])
        queue = np.where(rng.random(n) < 0.7, 0, np.round(rng.exponential(600, n)))
        duration = np.round(rng.lognormal(5.5, 2.2, n))
        gpus = np.where(rng.random(n) < 0.47, rng.choice([1, 1, 1, 2, 4, 8, 16], n), 0)
        kept += int(((gpus > 0) & (duration > 0)).sum())
        as_text = lambda seconds: pd.Series(  # noqa: E731
            origin + np.floor(seconds).astype("timedelta64[s]")
        ).dt.strftime("%Y-%m-%d %H:%M:%S")
        frame = pd.DataFrame(
            {
                "job_id": np.arange(start, start + n) + 1_000_000,
                "user": users[rng.integers(0, len(users), n)],
                "vc": vcs[rng.integers(0, len(vcs), n)],
                "gpu_num": gpus,
                "cpu_num": np.maximum(1, gpus * 4),
                "node_num": np.maximum(1, gpus // 8),
                "state": rng.choice(np.array(STATES, dtype=object), n),
                "submit_time": as_text(submit),
                "start_time": as_text(submit + queue),
                "end_time": as_text(submit + queue + duration),
                "duration": duration.astype(np.int64),
                "queue": queue.astype(np.int64),
            }
        )
        frame.to_csv(path, mode="w" if start == 0 else "a", header=start == 0, index=False)
    return kept


def measure(kind: str, path: Path, rows: int) -> dict:
    """Run one load in a fresh process and return its time and peak RSS."""
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, kind, str(path), str(rows)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Generate, load, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gzip", action="store_true", help="write and load a .csv.gz")
    parser.add_argument(
        "--format",
        choices=("canonical", "helios"),
        default="canonical",
        help="canonical CSV (default) or a Helios-layout cluster_log.csv",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("big.csv.gz" if args.gzip else "big.csv")
        started = time.perf_counter()
        if args.format == "helios":
            expected = write_helios_csv(path, args.rows, args.seed)
        else:
            write_csv(path, args.rows, args.seed)
            expected = args.rows
        print(
            f"wrote {args.rows:,} {args.format} rows, {path.stat().st_size / 2**20:,.0f} MiB "
            f"({path.name}) in {time.perf_counter() - started:.1f} s"
        )
        ours = measure(args.format, path, expected)
        plain = measure("pandas", path, args.rows)
    print(f"jobs loaded: {ours['rows']:,} of {args.rows:,} rows")
    print(
        f"dlsched.load_trace: {ours['seconds']:6.1f} s, peak RSS "
        f"{ours['peak_bytes'] / 2**30:.2f} GiB, {ours['rows'] / ours['seconds']:,.0f} rows/s"
    )
    print(
        f"pandas.read_csv   : {plain['seconds']:6.1f} s, peak RSS "
        f"{plain['peak_bytes'] / 2**30:.2f} GiB (no validation)"
    )
    print(
        f"ratio dlsched / pandas: time {ours['seconds'] / plain['seconds']:.2f}x, "
        f"memory {ours['peak_bytes'] / plain['peak_bytes']:.2f}x"
    )
    ok = ours["seconds"] < 60 and ours["peak_bytes"] < 2 * 2**30
    print(f"target (< 60 s, < 2 GiB for 3 M rows): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
