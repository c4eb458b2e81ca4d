"""Gavel LP solve time at 100, 1,000 and 5,000 active jobs, every objective (issue 5).

Run: `PYTHONPATH=src python benchmarks/gavel_lp_timing.py [sizes...]`. Not a pytest module,
so it never runs with the test suite.

Jobs are drawn (seeded) from Gavel's measured table: a model and a gang of 1, 2, 4 or 8
GPUs, with the table's steps/s on K80, P100 and V100 (0 where it has no entry), on a
cluster of 36 GPUs per type per 100 jobs (Gavel's 108-GPU cluster at 100 jobs); two users,
deadlines for the SLO objective, prices $0.74/$0.43/$0.135 per hour (the GCP prices in
Gavel's `utils.py`). For reference, the notes quote Gavel's own cvxpy/ECOS max-min solve at
~0.1 s for 1,024 jobs and its packed variant at ~3 s for 256 jobs (also timed here, at 256
jobs). Each line prints CPU seconds (best of 3 below 5,000 jobs) and the ratio to the same
LP at 100 jobs, which does not depend on the machine.

The policies' default for max-min, finish-time fairness and makespan is the "(CLARABEL)"
line: Gavel's own problem, per job, on an interior-point solver (makespan: Gavel's bisection,
~20 feasibility solves). On HiGHS, the max-min, makespan-free and throughput LPs solve one
row per class of identical jobs (same throughputs, gang and weight), so their size stops
growing with the number of jobs;
the "(distinct)" line perturbs every throughput by up to 1% to time the ungrouped worst
case. Finish-time fairness and makespan cannot group (jobs differ in elapsed time and
remaining work): one Dinkelbach iteration per LP for the former (3–8 LPs), one LP for the
latter. The packed LP on HiGHS is per class too, with candidate pairs limited to those
that beat time sharing (r_a/T_a + r_b/T_b > 1); the packed policy's default, Gavel's own
problem with a variable per pair of jobs, is timed up to 256 jobs.
"""

from __future__ import annotations

import sys
import time
from functools import partial

import numpy as np

from dlsched.perf import ProfileTable
from dlsched.policies.gavel import lp
from dlsched.policies.gavel.fifo import fifo_fastest
from dlsched.policies.gavel.hierarchical import hierarchical
from dlsched.policies.gavel.lp import Problem, check_feasible
from dlsched.policies.gavel.packing import max_min_fairness_packed

TYPES = ("k80", "p100", "v100")
PRICES = np.array([0.135, 0.43, 0.74])
SIZES = (100, 1_000, 5_000)


class Instance:
    """A problem of `n_jobs` jobs with everything each objective needs."""

    def __init__(self, n_jobs: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        table = ProfileTable.gavel()
        models = sorted({entry[0] for entry in table.entries()})
        tput = np.zeros((n_jobs, len(TYPES)))
        scale = rng.choice([1, 1, 1, 1, 2, 4, 8], n_jobs)  # mostly single-GPU jobs
        self.models = [str(m) for m in rng.choice(models, n_jobs)]
        for j, model in enumerate(self.models):
            for k, gpu_type in enumerate(TYPES):
                if table.has(model, gpu_type, int(scale[j])):
                    tput[j, k] = table.throughput(model, gpu_type, int(scale[j]))
        capacity = np.full(len(TYPES), max(8, 36 * n_jobs // 100))
        self.problem = Problem.build(tput, scale, capacity, rng.choice([1.0, 2.0], n_jobs))
        self.agnostic = Problem.build(
            (self.problem.usable).astype(float), scale, capacity, self.problem.weights
        )
        self.elapsed = rng.uniform(0, 3600 * 24, n_jobs)
        self.remaining = rng.uniform(1e3, 1e6, n_jobs)
        best = (tput * self.problem.usable).max(axis=1)
        # deadline SLOs for a third of the jobs: their remaining work in 1–3× its best time
        slo = rng.random(n_jobs) < 1 / 3
        self.required = np.where(slo, best / rng.uniform(1, 3, n_jobs), 0.0)
        self.users = rng.integers(0, 2, n_jobs)
        self.table = table
        ids: dict[tuple, int] = {}
        self.keys = np.array(
            [ids.setdefault((m, int(s)), len(ids)) for m, s in zip(self.models, scale, strict=True)]
        )

    def pair_rates(self, i: int, j: int, k: int) -> tuple[float, float]:
        n = int(self.problem.scale_factors[i])
        a, b = self.models[i], self.models[j]
        return (
            self.table.throughput(a, TYPES[k], n, colocated=[(b, n)]),
            self.table.throughput(b, TYPES[k], n, colocated=[(a, n)]),
        )


def solvers() -> dict[str, object]:
    def noisy(p: Problem) -> Problem:
        noise = np.random.default_rng(1).uniform(0.99, 1.01, p.throughputs.shape)
        return Problem.build(p.throughputs * noise, p.scale_factors, p.capacities, p.weights)

    return {
        "max_min_fairness (agnostic)": lambda s: lp.max_min_fairness(s.agnostic),
        "max_min_fairness_perf": lambda s: lp.max_min_fairness(s.problem),
        "max_min_fairness_perf (distinct)": lambda s: lp.max_min_fairness(noisy(s.problem)),
        "max_sum_throughput_perf": lambda s: lp.max_sum_throughput(s.problem),
        "finish_time_fairness (agnostic)": lambda s: lp.finish_time_fairness(
            s.agnostic, s.elapsed, s.remaining
        ),
        "finish_time_fairness_perf": lambda s: lp.finish_time_fairness(
            s.problem, s.elapsed, s.remaining
        ),
        "min_total_duration_perf": lambda s: lp.min_total_duration(s.problem, s.remaining),
        # the policies' default: Gavel's own problems, per job, on an interior-point solver
        "max_min_fairness (agnostic, CLARABEL)": lambda s: lp.max_min_fairness(
            s.agnostic, "CLARABEL"
        ),
        "max_min_fairness_perf (CLARABEL)": lambda s: lp.max_min_fairness(s.problem, "CLARABEL"),
        "finish_time_fairness_perf (CLARABEL)": lambda s: lp.finish_time_fairness(
            s.problem, s.elapsed, s.remaining, solver="CLARABEL"
        ),
        "min_total_duration_perf (CLARABEL)": lambda s: lp.min_total_duration(
            s.problem, s.remaining, "CLARABEL"
        ),
        "min_cost": lambda s: lp.min_cost(s.problem, PRICES),
        "min_cost_slo": lambda s: lp.min_cost(s.problem, PRICES, s.required),
        "fifo_perf": lambda s: fifo_fastest(s.problem),
        "hierarchical (2 users)": lambda s: hierarchical(s.problem, s.users, np.ones(2)),
        "max_min_fairness_packed": lambda s: max_min_fairness_packed(
            s.problem, s.keys, s.pair_rates, "highs"
        )[1],
        # the policy's default: Gavel's problem, a variable per pair of jobs (n² / 2 of them)
        "max_min_fairness_packed (CLARABEL)": lambda s: max_min_fairness_packed(
            s.problem, s.keys, s.pair_rates, "CLARABEL"
        )[1],
    }


PAIRWISE_UP_TO = 256
"""The per-pair packed problem is timed up to this many jobs: at 1,000 it has ~500,000
variables (Gavel's own takes ~3 s at 256 jobs through cvxpy)."""


def timed(solve, repeats: int) -> tuple[float, np.ndarray]:
    """The best CPU time of `repeats` solves, and the last answer."""
    best, x = float("inf"), None
    for _ in range(repeats):
        start = time.process_time()
        x = solve()
        best = min(best, time.process_time() - start)
    return best, x


def main(sizes: tuple[int, ...] = SIZES) -> None:
    base: dict[str, float] = {}
    print(f"{'LP':<36}{'jobs':>7}{'CPU s':>10}{'× 100 jobs':>12}")
    for n in sorted({*sizes, 256}):
        instance = Instance(n)
        for name, solve in solvers().items():
            packed = name.startswith("max_min_fairness_packed")
            if (n == 256 and not packed) or (
                name.endswith("(CLARABEL)") and packed and n > PAIRWISE_UP_TO
            ):
                continue
            seconds, x = timed(partial(solve, instance), 3 if n < 5_000 else 1)
            if x.shape == instance.problem.shape:
                check_feasible(instance.problem, x, tolerance=1e-6)
            base.setdefault(name, seconds)
            note = "  (Gavel: ~3 s)" if n == 256 else ""
            print(
                f"{name:<36}{n:>7}{seconds:>10.3f}{seconds / base[name]:>12.1f}{note}", flush=True
            )


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or SIZES)
