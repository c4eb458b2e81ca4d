"""Synthetic workloads in the shape of Gavel's simulation traces (Narayanan et al., OSDI 2020,
§7.2; generator `generate_job` in `scheduler/utils.py` of stanford-futuredata/gavel).

`gavel_poisson` draws Poisson arrivals at `jobs_per_hour`; each job runs for
10^U(1.5, 3) minutes with probability 0.8, else 10^U(3, 4) minutes, *on one V100* (the
duration is stored with `gpu_type="V100"`, so work = duration × the job's V100 rate); its model
is drawn by `assign_models` (Gavel's job mix). With `multi_gpu=True` the GPU count is 1, 2, 4
or 8 with probabilities 0.70, 0.10, 0.15, 0.05 (Gavel's multi-GPU traces; the duration is then
for that count on V100s). Seeded: the same arguments give the same workload.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dlsched.traces.schema import validate_jobs
from dlsched.traces.transforms import assign_models
from dlsched.traces.workload import Workload

SHORT_SHARE = 0.8  # Gavel: 80 % of jobs short
SHORT_LOG10_MIN = (1.5, 3.0)
LONG_LOG10_MIN = (3.0, 4.0)
MULTI_GPU_COUNTS = (1, 2, 4, 8)
MULTI_GPU_PROBABILITIES = (0.70, 0.10, 0.15, 0.05)


def gavel_poisson(n_jobs: int, jobs_per_hour: float, *, seed: int,
                  multi_gpu: bool = False) -> Workload:
    """`n_jobs` Gavel-style jobs arriving as a Poisson process (see the module docstring)."""
    if n_jobs < 1:
        raise ValueError(f"gavel_poisson: n_jobs must be >= 1, got {n_jobs!r}")
    if not jobs_per_hour > 0:
        raise ValueError(f"gavel_poisson: jobs_per_hour must be > 0, got {jobs_per_hour!r}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(3600.0 / jobs_per_hour, size=n_jobs)
    submit = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    short = rng.random(n_jobs) < SHORT_SHARE
    exponent = np.where(short, rng.uniform(*SHORT_LOG10_MIN, size=n_jobs),
                        rng.uniform(*LONG_LOG10_MIN, size=n_jobs))
    gpus = (rng.choice(MULTI_GPU_COUNTS, size=n_jobs, p=MULTI_GPU_PROBABILITIES)
            if multi_gpu else np.ones(n_jobs, dtype=np.int64))
    jobs = pd.DataFrame({"job_id": np.arange(n_jobs), "submit_time": submit,
                         "num_gpus": gpus, "duration": 60.0 * 10.0 ** exponent,
                         "gpu_type": "V100"})
    source = f"<gavel_poisson n_jobs={n_jobs} jobs_per_hour={jobs_per_hour} seed={seed}>"
    work = validate_jobs(jobs, source, lenient=False, fmt="synthetic")
    return assign_models(work, seed=int(rng.integers(2**31)))
