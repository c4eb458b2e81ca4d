"""Make traces/philly_day.csv: one busy day of real Philly jobs in the canonical CSV format.

Run from the repository root, with the shared data next to it:

    PYTHONPATH=src python traces/make_philly_day.py

Source: ../shared/traces/philly/philly_jobs_pollux.csv.gz (Microsoft Philly job log as
pre-processed for Pollux; CC BY 4.0), read with the ``philly-pollux`` loader (job ids = the
0-based row index in the file, so exact duplicate rows stay distinct jobs). Window:
submitted in [2017-10-04 00:00:00, 2017-10-05 00:00:00) as written in the trace's
`timestamp` column (time zone not stated), via ``transforms.time_window``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from dlsched.traces import load_trace
from dlsched.traces.transforms import time_window

SOURCE = Path("../shared/traces/philly/philly_jobs_pollux.csv.gz")
TARGET = Path("traces/philly_day.csv")
WINDOW_START = pd.Timestamp("2017-10-04 00:00:00")
WINDOW = pd.Timedelta(hours=24)


def convert(source: Path, start: pd.Timestamp) -> pd.DataFrame:
    """Jobs submitted in [start, start + 24 h), in canonical columns, sorted."""
    day = time_window(load_trace(source, format="philly-pollux"), start, start + WINDOW).jobs
    out = pd.DataFrame(
        {
            "job_id": "philly-" + day["job_id"].astype(str),
            "submit_time": day["submit_time"],
            "num_gpus": day["num_gpus"],
            "duration": day["duration"],
            "vc": day["vc"],
        }
    )
    return out.sort_values(["submit_time", "job_id"], ignore_index=True)


def main() -> None:
    """Write the excerpt and print its size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--out", type=Path, default=TARGET)
    args = parser.parse_args()
    out = convert(args.source, WINDOW_START)
    out.to_csv(args.out, index=False)
    print(
        f"{args.out}: {len(out)} jobs, {out['num_gpus'].sum()} GPUs requested, "
        f"{(out['duration'] * out['num_gpus']).sum() / 3600:.0f} GPU-hours"
    )


if __name__ == "__main__":
    main()
