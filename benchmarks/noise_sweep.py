"""How much does each policy lose when its performance model is wrong?

Every policy sees the cluster through an estimator. Here the estimator multiplies each job's
work and each (model, GPU type) throughput by seeded log-normal errors exp(N(0, σ²)) —
`NoisyEstimator(sigma=σ, sigma_throughput=σ)` — while the engine runs jobs at their true
rates. For σ ∈ {0, 0.1, 0.3, 0.5} it prints each policy's average JCT, its loss relative to
σ = 0 (the oracle) and, where deadlines exist, the deadline-satisfaction ratio, averaged over
noise seeds. Run from the repository root:

    python benchmarks/noise_sweep.py                          # defaults below
    python benchmarks/noise_sweep.py --jobs 300 --rate 3 --seeds 2 --policies srtf,hydra

Workload: `gavel_poisson` (Gavel's job mix and duration distribution, single-GPU jobs,
Poisson arrivals) on the 108-GPU Gavel cluster with Gavel's measured throughputs; every job
may run on 1–4 GPUs (elastic bounds, used by Optimus only) and has a deadline of
submit + U(1.5, 3) × its V100 duration (used by Hydra; measured for all).
"""

from __future__ import annotations

import argparse
import time

import dlsched
from dlsched.perf import NoisyEstimator
from dlsched.traces.synthetic import gavel_poisson
from dlsched.traces.transforms import assign_deadlines, make_elastic

SIGMAS = (0.0, 0.1, 0.3, 0.5)
DEFAULT_POLICIES = ("srtf", "max_min_fairness_perf", "optimus", "hydra")


def workload(jobs: int, rate: float) -> dlsched.Workload:
    work = gavel_poisson(jobs, rate, seed=0)
    work = assign_deadlines(work, 1.5, 3.0, seed=1)
    return make_elastic(work, min_gpus=1, max_gpus=4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--rate", type=float, default=8.0, help="arrivals per hour")
    parser.add_argument("--seeds", type=int, default=3, help="noise seeds per sigma")
    parser.add_argument("--policies", default=",".join(DEFAULT_POLICIES))
    args = parser.parse_args()
    work = workload(args.jobs, args.rate)
    known = set(dlsched.policies.names())
    chosen = [p for p in args.policies.split(",") if p]
    missing = [p for p in chosen if p not in known]
    if missing:
        print(f"# not registered, skipped: {', '.join(missing)}")
    print(
        f"# {args.jobs} jobs at {args.rate}/h on gavel-108, throughput=gavel, "
        f"{args.seeds} noise seeds per sigma"
    )
    print(
        f"{'policy':<24}{'sigma':>6}{'avg JCT (h)':>13}{'loss':>8}{'deadlines met':>15}"
        f"{'wall s':>8}"
    )
    for policy in (p for p in chosen if p in known):
        base = None
        for sigma in SIGMAS:
            jct = met = wall = 0.0
            seeds = 1 if sigma == 0 else args.seeds
            for seed in range(seeds):
                start = time.perf_counter()
                result = dlsched.simulate(
                    work,
                    "gavel-108",
                    policy,
                    throughput="gavel",
                    estimator=NoisyEstimator(sigma, sigma),
                    seed=seed,
                )
                wall += time.perf_counter() - start
                summary = result.summary()
                jct += summary["avg_jct"] / seeds
                met += summary.get("deadline_satisfaction", float("nan")) / seeds
            base = jct if base is None else base
            print(
                f"{policy:<24}{sigma:>6.1f}{jct / 3600:>13.2f}{jct / base - 1:>+8.1%}"
                f"{met:>15.1%}{wall / seeds:>8.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
