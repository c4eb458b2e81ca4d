"""Gavel's continuous-single experiment (Narayanan et al., OSDI 2020, §7.2, Figure 8): a thin
wrapper over `dlsched reproduce gavel-fig8`, which runs the figure against the authors'
numbers (see `dlsched.reproduce.gavel` for the setup).

    dlsched reproduce gavel-fig8 [--quick] [--workers N]
    PYTHONPATH=src python benchmarks/gavel_continuous_single.py [same options]

This module also keeps `run_point` with an independent job draw (``trace="ours"``,
`continuous_single_jobs`) for `tests/test_gavel_fidelity.py`'s reduced-cluster check; with
``trace="gavel"`` (the default) it measures the reproduction's point on the jobs Gavel's own
simulator generates.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import pandas as pd

import dlsched
from dlsched.reproduce.gavel import WINDOW, window_jct
from dlsched.reproduce.gavel import run_point as gavel_point
from dlsched.traces import validate_jobs
from dlsched.traces.transforms import assign_models


def continuous_single_jobs(rate_per_hour: float, n_jobs: int, seed: int = 0) -> dlsched.Workload:
    """`n_jobs` single-GPU jobs of Gavel's continuous-single experiment at `rate_per_hour`,
    drawn independently of Gavel's generator: Poisson arrivals, models uniform over Gavel's
    26 job types, lengths 80 % 10^U(1.5, 3) and 20 % 10^U(3, 4) minutes on one V100.

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


def run_point(
    policy: str,
    rate: float,
    window: tuple[int, int] = WINDOW,
    tail_jobs: int | None = None,
    seed: int = 0,
    cluster: Any = "gavel-108",
    budget_s: float = math.inf,
    trace: str = "gavel",
    **params: Any,
) -> dict[str, float]:
    """Average JCT (hours) of the window's jobs under `policy` at `rate` jobs/hour (NaN if
    the run gave up after `budget_s` CPU seconds). `trace="gavel"`: the jobs Gavel's own
    simulator generates with this seed; `"ours"`: an independent draw."""
    tail = tail_jobs if tail_jobs is not None else 8 * (window[1] - window[0])
    if trace == "gavel":
        return gavel_point(
            policy,
            rate,
            window=window,
            tail_jobs=tail,
            seed=seed,
            cluster=cluster,
            budget_s=budget_s,
            **params,
        )
    if trace == "ours":
        jobs = continuous_single_jobs(rate, window[1] + tail, seed)
        return window_jct(jobs, policy, window=window, cluster=cluster, budget_s=budget_s, **params)
    raise ValueError(f"trace must be 'gavel' or 'ours', got {trace!r}")


if __name__ == "__main__":
    from dlsched.cli import main

    sys.exit(main(["reproduce", "gavel-fig8", *sys.argv[1:]]))
