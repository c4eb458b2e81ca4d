"""Gavel LP solve time at 100, 1,000 and 5,000 active jobs (issue 5's solver benchmark).

Run: `PYTHONPATH=src python benchmarks/gavel_lp_timing.py [sizes...]`. Not a pytest module,
so it never runs with the test suite.

Jobs are drawn (seeded) from Gavel's measured table: a model and a gang of 1, 2, 4 or 8
GPUs, with the table's steps/s on K80, P100 and V100 (0 where it has no entry), on a
cluster of 36 GPUs per type per 100 jobs (Gavel's 108-GPU cluster at 100 jobs). For
reference, the notes quote Gavel's own cvxpy/ECOS max-min solve at ~0.1 s for 1,024 jobs
and its packed variant at ~3 s for 256 jobs. Besides absolute seconds, each line prints the
time relative to the 100-job solve of the same LP, a ratio that does not depend on the
machine. The max-min and max-sum LPs solve one row per class of identical jobs (same
throughputs, gang and weight), so their size stops growing with the number of jobs; the
"(distinct)" line perturbs every throughput by up to 1% to time the ungrouped worst case.
Finish-time fairness cannot group (jobs differ in elapsed time and remaining work) and
bisects on ρ, one LP per step.
"""

from __future__ import annotations

import sys
import time
from functools import partial

import numpy as np

from dlsched.perf import ProfileTable
from dlsched.policies.gavel.lp import (
    Problem,
    check_feasible,
    finish_time_fairness,
    max_min_fairness,
    max_sum_throughput,
)

TYPES = ("k80", "p100", "v100")
SIZES = (100, 1_000, 5_000)


def instance(n_jobs: int, seed: int = 0) -> tuple[Problem, np.ndarray, np.ndarray]:
    """A problem of `n_jobs` jobs, with elapsed seconds and remaining steps for FTF."""
    rng = np.random.default_rng(seed)
    table = ProfileTable.gavel()
    models = sorted({entry[0] for entry in table.entries()})
    tput = np.zeros((n_jobs, len(TYPES)))
    scale = rng.choice([1, 1, 1, 1, 2, 4, 8], n_jobs)  # mostly single-GPU jobs
    for j, model in enumerate(rng.choice(models, n_jobs)):
        for k, gpu_type in enumerate(TYPES):
            if table.has(str(model), gpu_type, int(scale[j])):
                tput[j, k] = table.throughput(str(model), gpu_type, int(scale[j]))
    capacity = np.full(len(TYPES), max(8, 36 * n_jobs // 100))
    problem = Problem.build(tput, scale, capacity, rng.choice([1.0, 2.0], n_jobs))
    return problem, rng.uniform(0, 3600 * 24, n_jobs), rng.uniform(1e3, 1e6, n_jobs)


def timed(solve, repeats: int) -> tuple[float, np.ndarray]:
    """The best wall time of `repeats` solves, and the last X."""
    best, x = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        x = solve()
        best = min(best, time.perf_counter() - start)
    return best, x


def main(sizes: tuple[int, ...] = SIZES) -> None:
    solvers = {
        "max_min_fairness (agnostic)": lambda p, e, r: max_min_fairness(
            Problem.build((p.throughputs > 0).astype(float), p.scale_factors, p.capacities,
                          p.weights)),
        "max_min_fairness_perf": lambda p, e, r: max_min_fairness(p),
        "max_sum_throughput_perf": lambda p, e, r: max_sum_throughput(p),
        # ±1% noise makes every job distinct, defeating the grouping of identical jobs
        "max_min_fairness_perf (distinct)": lambda p, e, r: max_min_fairness(
            Problem.build(p.throughputs * np.random.default_rng(1).uniform(0.99, 1.01,
                                                                            p.throughputs.shape),
                          p.scale_factors, p.capacities, p.weights)),
        "finish_time_fairness_perf": lambda p, e, r: finish_time_fairness(p, e, r),
    }
    base: dict[str, float] = {}
    print(f"{'LP':<36}{'jobs':>7}{'seconds':>10}{'× 100 jobs':>12}")
    for n in sizes:
        problem, elapsed, remaining = instance(n)
        for name, solve in solvers.items():
            repeats = 3 if n <= 1_000 else 1
            seconds, x = timed(partial(solve, problem, elapsed, remaining), repeats)
            check_feasible(problem, x, tolerance=1e-6)
            base.setdefault(name, seconds)
            print(f"{name:<36}{n:>7}{seconds:>10.3f}{seconds / base[name]:>12.1f}")


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or SIZES)
