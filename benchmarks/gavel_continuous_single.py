"""Gavel's continuous-single experiment (Narayanan et al., OSDI 2020, §7.2, Figure 8), ours
next to the authors' numbers.

Run: `PYTHONPATH=src python benchmarks/gavel_continuous_single.py [--rates 4.8] [--policies
max_min_fairness,max_min_fairness_perf]`. Not a pytest module (a reduced version is
`tests/test_gavel_fidelity.py`).

Setup, as in the paper and its artifact (`scheduler/scripts/sweeps/run_sweep_continuous.py`
with `utils.generate_job`): 36 V100 + 36 P100 + 36 K80 (`configs/clusters/gavel-108.yaml`),
Poisson arrivals at λ jobs/hour, single-GPU jobs whose model is drawn uniformly from Gavel's
26 job types (`dlsched.traces.transforms.assign_models`), whose length is drawn from the
Philly-derived distribution the artifact uses — 80% 10^U(1.5, 3) minutes, 20% 10^U(3, 4)
minutes — as run time alone on one V100 (steps = minutes × 60 × the V100 rate), Gavel's
measured throughputs as the truth (`throughput="gavel"`), 360 s rounds, no overheads. The
metric is the average JCT of jobs 4000–4999 in arrival order (`summary(job_window=...)`).
Jobs keep arriving after job 4999 until the window has finished, as in Gavel's simulator;
once it has, the run is cut (`WindowStop`): later jobs do not affect the window.

The authors' values are `../shared/anchors/gavel/authors_reference_results.csv`
(continuous-single, avg_jct_hours; seed 0). By default (`--trace gavel`) the jobs are the
ones Gavel's simulator generates with the same seed (`dlsched.traces.synthetic.
gavel_generated` replays its seeded draws), so both simulators schedule one trace; near
saturation a different sample of the same distributions moves the average JCT by tens of
percent (seed 0's jobs 3000–4999 offer 9% more load than our own draw's). `--trace ours`
uses an independent draw (`continuous_single_jobs`). Gavel's agnostic FIFO (`fifo` there)
is `gavel_fifo` here.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import dlsched
from dlsched.traces import validate_jobs
from dlsched.traces.synthetic import gavel_generated
from dlsched.traces.transforms import assign_models

REPO = Path(__file__).resolve().parent.parent
AUTHORS = REPO.parent / "shared" / "anchors" / "gavel" / "authors_reference_results.csv"
CLUSTER = REPO / "configs" / "clusters" / "gavel-108.yaml"
RATES = tuple(round(0.4 * i, 1) for i in range(1, 16))  # the figure's input rates, jobs/h
POLICIES = (
    "gavel_fifo",
    "fifo_perf",
    "max_min_fairness",
    "max_min_fairness_perf",
    "finish_time_fairness",
    "finish_time_fairness_perf",
)
AUTHORS_KEY = {"gavel_fifo": "fifo"}  # our name → the key in the authors' table
WINDOW = (4000, 5000)


def continuous_single_jobs(rate_per_hour: float, n_jobs: int, seed: int = 0) -> dlsched.Workload:
    """`n_jobs` single-GPU jobs of Gavel's continuous-single experiment at `rate_per_hour`.

    One seed gives the same jobs at every rate (the inter-arrival draws are scaled)."""
    arrivals, lengths, models = np.random.SeedSequence(seed).spawn(3)
    gaps = np.random.default_rng(arrivals).exponential(1.0, n_jobs) * 3600.0 / rate_per_hour
    gaps[0] = 0.0
    rng = np.random.default_rng(lengths)
    long = rng.random(n_jobs) >= 0.8
    exponent = np.where(long, rng.uniform(3, 4, n_jobs), rng.uniform(1.5, 3, n_jobs))
    frame = pd.DataFrame(
        {
            "job_id": np.arange(n_jobs),
            "submit_time": np.cumsum(gaps),
            "num_gpus": 1,
            "duration": 60.0 * 10.0**exponent,
            "gpu_type": "V100",
        }
    )
    workload = validate_jobs(frame, "<gavel continuous-single>", lenient=False, fmt="canonical")
    return assign_models(workload, seed=int(models.generate_state(1)[0]))


class WindowStop:
    """Wraps a policy; once every job of `window` (submit-order positions) has finished it
    preempts everyone and schedules nothing more, so the run ends without draining the
    jobs that only kept the window's contention realistic. It also gives up (the point is
    reported as unfinished, like the authors' timed-out runs) after `budget_s` CPU seconds."""

    def __init__(self, inner, window: tuple[int, int], budget_s: float = math.inf) -> None:
        self.inner = inner
        self.name = inner.name
        self.round_s = inner.round_s
        self.window = window
        self.left = window[1] - window[0]
        self.done_at: float | None = None
        self.gave_up = False
        self._stopped = False
        self._deadline = time.process_time() + budget_s

    def start(self, view) -> None:
        self.left = self.window[1] - self.window[0]
        self.done_at = None
        self.gave_up = False
        self._stopped = False
        self.inner.start(view)

    def on_arrival(self, job) -> None:
        if not self._stopped:
            self.inner.on_arrival(job)

    def on_finish(self, job) -> None:
        if self.window[0] <= job.spec.index < self.window[1]:
            self.left -= 1
        if not self._stopped:
            self.inner.on_finish(job)

    def schedule(self, view):
        if self._stopped:
            return None
        if self.left <= 0 or time.process_time() > self._deadline:
            self._stopped, self.done_at = True, view.now
            self.gave_up = self.left > 0
            return {}
        return self.inner.schedule(view)


def run_point(
    policy: str,
    rate: float,
    window: tuple[int, int] = WINDOW,
    tail_jobs: int | None = None,
    seed: int = 0,
    cluster=CLUSTER,
    budget_s: float = math.inf,
    trace: str = "gavel",
    **params,
) -> dict[str, float]:
    """Average JCT (hours) of the window's jobs under `policy` at `rate` jobs/hour (NaN if
    the run gave up after `budget_s` CPU seconds). `trace="gavel"`: the jobs Gavel's own
    simulator generates with this seed; `"ours"`: an independent draw."""
    tail = tail_jobs if tail_jobs is not None else 8 * (window[1] - window[0])
    if trace == "gavel":
        jobs = gavel_generated(window[1] + tail, rate, seed=seed)
    elif trace == "ours":
        jobs = continuous_single_jobs(rate, window[1] + tail, seed)
    else:
        raise ValueError(f"trace must be 'gavel' or 'ours', got {trace!r}")
    wrapped = WindowStop(dlsched.policies.get(policy, **params), window, budget_s)
    started, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the cut-off jobs never finish
        result = dlsched.simulate(jobs, cluster, policy=wrapped, throughput="gavel", audit=False)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    summary = result.summary(job_window=window)
    last_arrival = float(jobs.jobs["submit_time"].iloc[-1])
    return {
        "avg_jct_h": math.nan if wrapped.gave_up else summary["avg_jct"] / 3600.0,
        "completed": summary["jobs_completed"],
        "wall_s": wall,
        "cpu_s": cpu,
        "arrivals_outlast_window": bool(
            wrapped.done_at is not None and last_arrival >= wrapped.done_at
        ),
        "migrations": int(result.jobs["migrations"].sum()),
        "scheduling_calls": summary["scheduling_calls"],
    }


def authors_values(path: Path = AUTHORS) -> dict[tuple[str, float], float]:
    """(Gavel policy key, rate) → the authors' average JCT in hours (NaN: run unfinished)."""
    out: dict[tuple[str, float], float] = {}
    if not path.exists():
        return out
    with path.open() as fh:
        for row in csv.DictReader(fh):
            if row["experiment"] == "continuous-single" and row["metric"] == "avg_jct_hours":
                out[(row["policy_key"], round(float(row["x"]), 1))] = float(row["value"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default=",".join(map(str, RATES)))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--window", default=f"{WINDOW[0]},{WINDOW[1]}")
    parser.add_argument(
        "--tail-jobs",
        type=int,
        default=None,
        help="jobs generated after the window (default: 8 times its size;"
        " only those arriving before the window has finished cost time)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--trace",
        choices=("gavel", "ours"),
        default="gavel",
        help="Gavel's own generated jobs for the seed, or an independent draw",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=900.0,
        help="CPU seconds per point before giving up (reported as nan)",
    )
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    policies = args.policies.split(",")
    window = tuple(int(w) for w in args.window.split(","))
    theirs = authors_values()
    print(
        f"continuous-single, jobs {window[0]}-{window[1] - 1}, seed {args.seed}, "
        f"{args.trace} trace: average JCT in hours, ours / the authors' (CPU seconds of "
        "our run)"
    )
    print(f"{'jobs/h':>6}  " + "  ".join(f"{p:>27}" for p in policies))
    results: dict[tuple[str, float], float] = {}
    for rate in rates:
        cells = []
        for policy in policies:
            point = run_point(
                policy,
                rate,
                window,
                args.tail_jobs,
                args.seed,
                budget_s=args.budget,
                trace=args.trace,
            )
            results[(policy, rate)] = point["avg_jct_h"]
            author = theirs.get((AUTHORS_KEY.get(policy, policy), round(rate, 1)), math.nan)
            flag = "" if point["arrivals_outlast_window"] else "*"
            cells.append(
                f"{point['avg_jct_h']:>8.2f}{flag:1} / {author:>6.2f} ({point['cpu_s']:>5.0f} s)"
            )
        print(f"{rate:>6.1f}  " + "  ".join(f"{c:>27}" for c in cells), flush=True)
    print("* arrivals stopped before the window finished (raise --tail-jobs)")
    for agnostic, aware in (
        ("max_min_fairness", "max_min_fairness_perf"),
        ("finish_time_fairness", "finish_time_fairness_perf"),
        ("gavel_fifo", "fifo_perf"),
    ):
        for rate in rates:
            if (agnostic, rate) in results and (aware, rate) in results:
                ours = results[(agnostic, rate)] / results[(aware, rate)]
                key = AUTHORS_KEY.get(agnostic, agnostic)
                author = theirs.get((key, round(rate, 1)), math.nan) / theirs.get(
                    (aware, round(rate, 1)), math.nan
                )
                print(
                    f"{agnostic} / {aware} at {rate:g} jobs/h: ours {ours:.2f}x, "
                    f"authors {author:.2f}x ({ours / author - 1:+.0%})"
                )


if __name__ == "__main__":
    main()
