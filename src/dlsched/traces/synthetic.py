"""Synthetic workloads in the shape of Gavel's simulation traces (Narayanan et al., OSDI 2020,
§7.2; generator `generate_job` in `scheduler/utils.py` of stanford-futuredata/gavel).

`gavel_poisson` draws Poisson arrivals at `jobs_per_hour`; each job runs for
10^U(1.5, 3) minutes with probability 0.8, else 10^U(3, 4) minutes, *on one V100* (the
duration is stored with `gpu_type="V100"`, so work = duration × the job's V100 rate); its model
is drawn by `assign_models` (Gavel's job mix). With `multi_gpu=True` the GPU count is 1, 2, 4
or 8 with probabilities 0.70, 0.10, 0.15, 0.05 (Gavel's multi-GPU traces; the duration is then
for that count on V100s). Seeded: the same arguments give the same workload.

`gavel_generated` gives, for a seed, the very jobs Gavel's own simulator generates in its
continuous experiments: the same distributions, drawn from Python's `random` generators
seeded as Gavel seeds them (`Scheduler._initialize_seeds`: jobs from seed + 2, gaps from
seed + 3) in the order its `generate_job` draws them (scale factor, short or long, the
length, then the job type from `GAVEL_JOB_TYPES`, redrawn until a multi-GPU job gets a
type that runs distributed). Comparing with the authors' published figures then compares
the schedulers on one trace instead of two samples of it. ``jobs_per_hour=math.inf`` puts
every job at t = 0, as Gavel's static experiments do (`run_sweep_static.py` passes
``lam=0``: no gap is drawn), and gives the same jobs as any finite rate.

The job type is drawn by index into Gavel's job table, so its order matters: the released
code (`GAVEL_JOB_TYPES`, the default) lists A3C after the Recommendation models; until
commit 19a0dd2 (2020-08-29) it came 15th, after Transformer (batch size 256)
(`GAVEL_JOB_TYPES_OSDI20`), and that is the table the paper's simulations drew from: its
Figures 8-10 were printed on 2020-05-19 and the makespan figure's logs predate 2020-08-29.
Same draws, other job types from the 15th entry on (and, for multi-GPU traces, other
redraws), so another trace: on Figure 9's jobs at 2 jobs/h Gavel's own simulator of
2020-05-19 gives 27.68 h for ``fifo_perf`` with the old order (the published value) and
its released code 22.12 h with the new one (``job_types=GAVEL_JOB_TYPES_OSDI20`` replays
the former).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dlsched.traces.schema import validate_jobs
from dlsched.traces.transforms import (
    GAVEL_DISTRIBUTED_JOB_TYPES,
    GAVEL_JOB_TYPES,
    assign_models,
)
from dlsched.traces.workload import Workload

GAVEL_JOB_TYPES_OSDI20: tuple[str, ...] = (
    *GAVEL_JOB_TYPES[: GAVEL_JOB_TYPES.index("Transformer (batch size 256)") + 1],
    "A3C",
    *(
        t
        for t in GAVEL_JOB_TYPES[GAVEL_JOB_TYPES.index("Transformer (batch size 256)") + 1 :]
        if t != "A3C"
    ),
)
"""Gavel's job table in the order of its code before commit 19a0dd2 (2020-08-29): A3C 15th,
after Transformer (batch size 256). The order of the paper's simulations (module docstring)."""
SHORT_SHARE = 0.8  # Gavel: 80 % of jobs short
SHORT_LOG10_MIN = (1.5, 3.0)
LONG_LOG10_MIN = (3.0, 4.0)
MULTI_GPU_COUNTS = (1, 2, 4, 8)
MULTI_GPU_PROBABILITIES = (0.70, 0.10, 0.15, 0.05)


def gavel_poisson(
    n_jobs: int, jobs_per_hour: float, *, seed: int, multi_gpu: bool = False
) -> Workload:
    """`n_jobs` Gavel-style jobs arriving as a Poisson process (see the module docstring)."""
    if n_jobs < 1:
        raise ValueError(f"gavel_poisson: n_jobs must be >= 1, got {n_jobs!r}")
    if not jobs_per_hour > 0:
        raise ValueError(f"gavel_poisson: jobs_per_hour must be > 0, got {jobs_per_hour!r}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(3600.0 / jobs_per_hour, size=n_jobs)
    submit = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    short = rng.random(n_jobs) < SHORT_SHARE
    exponent = np.where(
        short, rng.uniform(*SHORT_LOG10_MIN, size=n_jobs), rng.uniform(*LONG_LOG10_MIN, size=n_jobs)
    )
    gpus = (
        rng.choice(MULTI_GPU_COUNTS, size=n_jobs, p=MULTI_GPU_PROBABILITIES)
        if multi_gpu
        else np.ones(n_jobs, dtype=np.int64)
    )
    jobs = pd.DataFrame(
        {
            "job_id": np.arange(n_jobs),
            "submit_time": submit,
            "num_gpus": gpus,
            "duration": 60.0 * 10.0**exponent,
            "gpu_type": "V100",
        }
    )
    source = f"<gavel_poisson n_jobs={n_jobs} jobs_per_hour={jobs_per_hour} seed={seed}>"
    work = validate_jobs(jobs, source, lenient=False, fmt="synthetic")
    return assign_models(work, seed=int(rng.integers(2**31)))


def _gavel_scale_factor(r: float) -> int:
    """Gavel's `_generate_scale_factor` thresholds on one uniform draw (Philly's sizes)."""
    if 0.7 <= r <= 0.8:
        return 2
    if 0.8 <= r <= 0.95:
        return 4
    return 8 if r >= 0.95 else 1


def gavel_generated(
    n_jobs: int,
    jobs_per_hour: float,
    *,
    seed: int = 0,
    multi_gpu: bool = False,
    job_types: Sequence[str] = GAVEL_JOB_TYPES,
) -> Workload:
    """The first `n_jobs` jobs Gavel's simulator generates with `seed` at `jobs_per_hour`
    (see the module docstring; ``math.inf``: all at t = 0); job ids are Gavel's (0, 1, ...),
    lengths are on V100s. `job_types`: Gavel's job table in the order its code lists it
    (`GAVEL_JOB_TYPES`, the released code; `GAVEL_JOB_TYPES_OSDI20`, the paper's runs)."""
    if n_jobs < 1:
        raise ValueError(f"gavel_generated: n_jobs must be >= 1, got {n_jobs!r}")
    if not jobs_per_hour > 0:
        raise ValueError(f"gavel_generated: jobs_per_hour must be > 0, got {jobs_per_hour!r}")
    job_types = tuple(job_types)
    if sorted(job_types) != sorted(GAVEL_JOB_TYPES):
        raise ValueError(
            "gavel_generated: job_types must list Gavel's 26 job types once each, in some "
            f"order (GAVEL_JOB_TYPES), got {len(job_types)} entries"
        )
    jobs_rng, gaps_rng = random.Random(seed + 2), random.Random(seed + 3)
    static = math.isinf(jobs_per_hour)
    rate_per_s = math.inf if static else 1.0 / (3600.0 / jobs_per_hour)  # Gavel: 1 / lam
    distributed = set(GAVEL_DISTRIBUTED_JOB_TYPES)
    rows = []
    now = 0.0
    for job_id in range(n_jobs):
        drawn = _gavel_scale_factor(jobs_rng.uniform(0, 1))  # drawn even for 1-GPU traces
        scale = drawn if multi_gpu else 1
        long_job = jobs_rng.random() >= SHORT_SHARE
        exponent = jobs_rng.uniform(*(LONG_LOG10_MIN if long_job else SHORT_LOG10_MIN))
        model = jobs_rng.choice(job_types)
        while scale > 1 and model not in distributed:
            model = jobs_rng.choice(job_types)
        rows.append((job_id, now, scale, 60.0 * 10.0**exponent, model))
        if not static:
            now += -math.log(1.0 - gaps_rng.random()) / rate_per_s
    frame = pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration", "model"])
    frame["gpu_type"] = "V100"
    source = f"<gavel_generated n_jobs={n_jobs} jobs_per_hour={jobs_per_hour} seed={seed}>"
    return validate_jobs(frame, source, lenient=False, fmt="synthetic")
