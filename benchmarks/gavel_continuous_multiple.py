"""Gavel's continuous-multiple experiment (Narayanan et al., OSDI 2020, §7.2, Figure 9), ours
next to the authors' numbers.

Run: `PYTHONPATH=src python benchmarks/gavel_continuous_multiple.py [--rates 1.0]
[--policies max_min_fairness_perf] [--layout gavel|servers]`. Not a pytest module (tiny
versions against Gavel's simulator are in `tests/test_gavel_multigpu.py`).

Setup as `dlsched reproduce gavel-fig9` (`dlsched.reproduce.gavel.run_point`: 36 V100 + 36
P100 + 36 K80, Gavel's throughput table as the truth, 360 s rounds, average JCT of jobs
4000–4999), with the jobs Gavel's simulator generates for Figure 9:
`gavel_generated(..., multi_gpu=True)` (scale factors 1/2/4/8 with probabilities
0.7/0.1/0.15/0.05, a multi-GPU job's model redrawn until it runs distributed), drawn from
Gavel's job table in the order the authors' runs had it (`GAVEL_JOB_TYPES_OSDI20`).

`--layout` (default `gavel`) is how the 108 GPUs sit in servers, which decides the rate of
a multi-GPU gang. Gavel's simulator rates every gang at the table's *consolidated*
throughput wherever its GPUs are (it never reads the `_unconsolidated` entries), so
`gavel` puts each type's 36 GPUs in one node: every gang is consolidated, as there.
`servers` uses `configs/clusters/gavel-108.yaml` (4 GPUs per node): an 8-GPU gang always
spans two nodes and runs at the measured unconsolidated rate (ResNet-18 ×8 on V100: 63 vs
256 steps/s), and smaller gangs do when fragmentation spreads them — the better model of a
real cluster, and what made dlsched's Figure 9 16–33 % slower than Gavel's.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import dlsched
from dlsched.reproduce.gavel import AUTHORS, AUTHORS_KEY, POLICIES, authors_values, run_point

RATES = (0.2, 0.6, 1.0, 1.4, 1.8, 2.2, 2.6, 3.0)


def gavel_cluster(layout: str) -> dlsched.Cluster | str:
    """36 GPUs of each type: one node per type (`gavel`) or Gavel-108's 4-GPU servers."""
    if layout == "servers":
        return "gavel-108"
    if layout != "gavel":
        raise ValueError(f"layout must be 'gavel' or 'servers', got {layout!r}")
    return dlsched.Cluster.from_dict(
        {
            "name": "gavel-108-one-node-per-type",
            "nodes": [
                {"gpu_type": t, "count": 1, "gpus_per_node": 36} for t in ("V100", "P100", "K80")
            ],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default=",".join(map(str, RATES)))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--layout", choices=("gavel", "servers"), default="gavel")
    parser.add_argument("--tail-jobs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=900.0, help="CPU seconds per point")
    parser.add_argument("--shared", default="../shared", help="where anchors/ lives")
    args = parser.parse_args()
    shared = Path(args.shared)
    theirs = authors_values(shared, "continuous-multiple") if (shared / AUTHORS).exists() else {}
    cluster = gavel_cluster(args.layout)
    print(
        f"continuous-multiple, seed {args.seed}, layout {args.layout}: average JCT (h) of jobs "
        "4000-4999, ours / the authors' (deviation, CPU s)"
    )
    for rate in (float(r) for r in args.rates.split(",")):
        for policy in args.policies.split(","):
            point = run_point(
                policy,
                rate,
                multi_gpu=True,
                tail_jobs=args.tail_jobs,
                seed=args.seed,
                cluster=cluster,
                budget_s=args.budget,
            )
            author = theirs.get((AUTHORS_KEY.get(policy, policy), round(rate, 1)), math.nan)
            flag = "" if point["arrivals_outlast_window"] else " * (raise --tail-jobs)"
            print(
                f"{rate:5.1f} {policy:26} {point['avg_jct_h']:7.2f} / {author:6.2f} "
                f"({point['avg_jct_h'] / author - 1:+6.1%}, {point['cpu_s']:5.0f} s){flag}",
                flush=True,
            )


if __name__ == "__main__":
    main()
