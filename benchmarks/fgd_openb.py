"""The openb trace under FGD placement: CPU seconds, against the 10 s of issue 15.

Replays ``openb_pod_list_default`` (the default pod list: 8,152 pods, of which the loader
keeps the 6,203 GPU pods that ran) on the bundled ``alibaba-openb-2023`` cluster (6,212 GPUs,
with the nodes' CPUs and memory) under FIFO with each placement strategy given, and prints
CPU seconds of `dlsched.simulate` (loading excluded), scheduling calls and the ratio to the
first strategy (machine-independent). Each run asserts the number of jobs and that all of
them finished, so it can never silently measure another workload. Then it runs one workload
inflation of the `fgd-openb` reproduction (the paper's experiment, ~10,000 arrivals that
never leave, the CPU-only pods among them as jobs without GPUs, ties broken in a shuffled
node order as the authors' simulator does) per strategy, with the unallocated GPU share at
100 % arrived beside the paper's. ``--no-cpu-only`` drops the CPU-only pods and
``--index-ties`` breaks ties by node index, as the reproduction did before.

    python benchmarks/fgd_openb.py                       # fgd, then the baselines
    python benchmarks/fgd_openb.py --strategies fgd --no-inflation
    python benchmarks/fgd_openb.py --no-replay --plot fig9a.png   # the curves, as Fig. 9a
"""

from __future__ import annotations

import argparse
import time

import dlsched
from dlsched.reproduce import fgd as reproduction
from dlsched.reproduce.base import shared_folder

GPU_PODS = 6203
BUDGET_S = 10.0
DEFAULT = "fgd,consolidated,weighted_best_fit,gpu_packing,gpu_clustering,dot_product,random"


def replay(trace: dlsched.Workload, placement: str) -> tuple[float, int]:
    """CPU seconds of one replay and its scheduling calls."""
    start = time.process_time()
    result = dlsched.simulate(trace, "alibaba-openb-2023", "fifo", placement=placement, audit=False)
    cpu_s = time.process_time() - start
    assert len(result.jobs) == GPU_PODS, len(result.jobs)
    assert (result.jobs["status"] == "finished").all()
    return cpu_s, int(result.meta["scheduling_calls"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strategies", default=DEFAULT)
    parser.add_argument("--shared", default=None, help="the shared data folder (../shared)")
    parser.add_argument("--no-inflation", action="store_true")
    parser.add_argument("--no-replay", action="store_true")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--plot", default=None, help="write the inflation curves here (PNG)")
    parser.add_argument("--no-cpu-only", action="store_true", help="drop the CPU-only pods")
    parser.add_argument("--index-ties", action="store_true", help="ties to the lowest node")
    args = parser.parse_args()
    shared = shared_folder(args.shared)
    trace = dlsched.load_trace(shared / reproduction.PODS)
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not args.no_replay:
        print(f"openb replay, FIFO, {len(trace)} GPU pods, alibaba-openb-2023 (CPU seconds)")
    first = None
    for placement in [] if args.no_replay else strategies:
        cpu_s, calls = replay(trace, placement)
        first = first or cpu_s
        mark = (
            ""
            if placement != "fgd"
            else f"  (budget {BUDGET_S:g} s: {'ok' if cpu_s < BUDGET_S else 'OVER'})"
        )
        print(f"  {placement:18s} {cpu_s:6.2f} s  ×{cpu_s / first:4.2f}  {calls} calls{mark}")
    if args.no_inflation:
        return
    print(f"workload inflation to 130 % (seed {args.seed}; unallocated GPU % at 100 % arrived)")
    names = {strategy: policy for policy, strategy in reproduction.STRATEGY.items()}
    curves = {}
    for placement in strategies:
        if placement not in names:
            continue
        start = time.process_time()
        curve = reproduction.run_inflation(
            shared,
            placement,
            args.seed,
            cpu_only=not args.no_cpu_only,
            shuffled_ties=not args.index_ties,
        )
        cpu_s = time.process_time() - start
        value = reproduction.unallocated_at(curve, [100])[100]
        paper = reproduction.PUBLISHED[names[placement]][100]
        print(
            f"  {placement:18s} {cpu_s:6.2f} s  {len(curve)} arrivals  unallocated {value:5.2f} %"
            f"  (paper {paper:5.2f} %, {100 * (value / paper - 1):+5.1f} %)"
        )
        curves[names[placement]] = curve
    if args.plot:
        print(f"plot: {reproduction.plot_curves(curves, args.plot)}")


if __name__ == "__main__":
    main()
