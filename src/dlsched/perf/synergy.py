"""Synergy's job-sensitivity profiles as a throughput model, and its simulated workload.

Paper: Mohan et al., "Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters", OSDI
2022 (Synergy). Data: `dlsched/data/synergy_profiles.csv`, the matrices of the authors'
simulator (`msr-fiddle/synergy` @ 1bb2bed, `simulator/models/<model>_1.py`, MIT; see
`dlsched/data/README.md`). Each model has a 9 × 5 matrix of throughput relative to the
GPU-proportional share (3 CPUs and 62.5 GB per GPU of a 24-core, 500 GB, 8-GPU server) over
CPUs per GPU (1, 2, 3, 4, 5, 6, 9, 12, 24) × GB per GPU (20.83, 62.5, 125, 187.5, 250), and a
"demand" point (its best CPUs and GB per GPU) with its speed-up there.

`SynergyModel(base)` is the truth: `throughput` is the base model's rate (at the proportional
share) and `resource_factor(model, cpu_per_gpu, mem_gb_per_gpu)` the matrix value at what the
job holds; the engine multiplies the two (`dlsched.perf.resources.ResourceRates`).

Paper, simulator and this model: the paper profiles throughput over a grid of CPU and memory
and treats the matrix as the job's speed. The authors' simulator (the reference here, and the
default) gives a job under GREEDY and TUNE either its demand point (rate × speed-up) or the
proportional share (rate × 1) and uses the matrix only in OPT; both are matrix points, so a
lookup at grid points (``interp="step"``: the largest grid row and column at or below what
the job holds, the lowest row/column below the grid) reproduces it exactly for every
allocation its single-GPU runs make. One deviation: for a multi-GPU job whose demand exceeds
a server, the simulator caps the CPU at the server and re-computes the speed-up on the
straight line from (proportional CPU, 1) to (demand CPU, speed-up) — 1.647 for a 4-GPU
alexnet at 6 CPUs per GPU, where the matrix (used here) says 1.75. ``interp="linear"`` is
piecewise linear in CPUs (memory still stepped), a smoother reading of the paper's profiles.

`synergy_workload` generates the job list of the authors' simulated experiments (Fig. 8):
its single-GPU "exponential" mode, with the same random streams (see its docstring).
"""

from __future__ import annotations

import bisect
import csv
import functools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from dlsched.errors import ConfigError, UnknownModelError, did_you_mean
from dlsched.perf.base import DurationModel, ThroughputModel
from dlsched.perf.scaling import no_gpu_rate

if TYPE_CHECKING:
    import pandas as pd

# pandas loads in `synergy_workload`, not when the policy registry imports this module
# (issue 16, target 4).

CPU_GRID: tuple[float, ...] = (1, 2, 3, 4, 5, 6, 9, 12, 24)
"""CPU cores per GPU of the matrix rows (the simulator's `jobs/job.py`)."""
MEM_GRID: tuple[float, ...] = (20.83, 62.5, 125, 187.5, 250)
"""GB of host memory per GPU of the matrix columns."""
FAIR_CPU, FAIR_MEM = 3.0, 62.5
"""The GPU-proportional share of the authors' server (24 cores, 500 GB, 8 GPUs): the matrices'
reference point (1.0 for every model)."""
TASK_MODELS: dict[str, tuple[str, ...]] = {
    "image": ("alexnet", "res18", "res50", "mobilenet", "shufflenet"),
    "language": ("gnmt", "transformer", "lstm"),
    "speech": ("m5", "deepspeech"),
}
"""The authors' default model zoo by task class, in their order (`jobs/model_zoo.py`)."""
_EPS = 1e-6  # memory round-trips GB → MiB → GB (20.83 GB is 21330 MiB)


@dataclass(frozen=True)
class SynergyProfile:
    """One model's profile: its demand point, speed-up there and throughput matrix."""

    model: str
    task: str
    demand_cpu: float
    demand_mem_gb: float
    speedup: float
    iter_time_s: float
    matrix: tuple[tuple[float, ...], ...]  # [cpu row][mem column], 1.0 at (3, 62.5)

    def factor(
        self, cpu_per_gpu: float | None, mem_gb_per_gpu: float | None, interp: str = "step"
    ) -> float:
        """Throughput relative to the proportional share at this allocation per GPU (None: the
        proportional amount); see the module docstring for `interp`."""
        cpu = FAIR_CPU if cpu_per_gpu is None else cpu_per_gpu
        mem = FAIR_MEM if mem_gb_per_gpu is None else mem_gb_per_gpu
        col = max(0, bisect.bisect_right(MEM_GRID, mem * (1 + _EPS)) - 1)
        row = bisect.bisect_right(CPU_GRID, cpu * (1 + _EPS)) - 1
        if row < 0:
            return self.matrix[0][col]
        value = self.matrix[row][col]
        if interp == "linear" and row + 1 < len(CPU_GRID) and cpu > CPU_GRID[row]:
            low, high = CPU_GRID[row], CPU_GRID[row + 1]
            value += (self.matrix[row + 1][col] - value) * (cpu - low) / (high - low)
        return value


@functools.cache
def load_profiles() -> dict[str, SynergyProfile]:
    """The bundled profiles by model name (`dlsched/data/synergy_profiles.csv`)."""
    path = resources.files("dlsched") / "data" / "synergy_profiles.csv"
    rows: dict[str, list[dict[str, str]]] = {}
    with path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            rows.setdefault(row["model"], []).append(row)
    out = {}
    for model, found in rows.items():
        found.sort(key=lambda r: float(r["cpu_per_gpu"]))
        first = found[0]
        out[model] = SynergyProfile(
            model=model,
            task=first["task"],
            demand_cpu=float(first["demand_cpu_per_gpu"]),
            demand_mem_gb=float(first["demand_mem_gb_per_gpu"]),
            speedup=float(first["speedup"]),
            iter_time_s=float(first["iter_time_s"]),
            matrix=tuple(tuple(float(r[f"mem_{m:g}"]) for m in MEM_GRID) for r in found),
        )
    return out


def profile_of(model: str | None) -> SynergyProfile:
    """The profile of `model`, or an `UnknownModelError` naming it and the known models."""
    profiles = load_profiles()
    found = profiles.get(model) if model is not None else None
    if found is None:
        raise UnknownModelError(
            f"model {model!r} has no Synergy profile{did_you_mean(model, profiles)} "
            f"(dlsched/data/synergy_profiles.csv has {', '.join(sorted(profiles))}): "
            "set the job's model to one of them"
        )
    return found


class SynergyModel:
    """A base throughput model scaled by the Synergy profile at a job's CPU and memory.

    `throughput` is the base model's rate, which holds at the proportional share (for a
    Synergy workload on `duration`: steps = seconds at that share); the engine multiplies it
    by `resource_factor` at what the job holds (`dlsched.perf.resources`). A model without a
    profile raises `UnknownModelError` naming it, or runs at factor 1 with ``strict=False``.
    """

    name = "synergy"

    def __init__(
        self, base: ThroughputModel | None = None, interp: str = "step", strict: bool = True
    ) -> None:
        if interp not in ("step", "linear"):
            raise ConfigError(f"SynergyModel interp must be 'step' or 'linear', got {interp!r}")
        self.base: ThroughputModel = DurationModel() if base is None else base
        self.interp = interp
        self.strict = strict

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        """The base model's rate (the rate at the proportional share); none for a job
        without GPUs (``num_gpus`` 0), whose CPU and memory per GPU the profiles cannot
        scale: it raises `UnknownModelError`, so such a job is refused when loaded."""
        if n_gpus < 1:
            raise no_gpu_rate(self.name, model)
        return self.base.throughput(model, gpu_type, n_gpus, n_nodes, colocated)

    def reference_type(self, model: str | None) -> str | None:
        return self.base.reference_type(model)

    def resource_factor(
        self, model: str | None, cpu_per_gpu: float | None, mem_gb_per_gpu: float | None
    ) -> float:
        """The profile's throughput at this allocation per GPU, relative to the proportional
        share (None: the proportional amount of that resource)."""
        if not self.strict and model not in load_profiles():
            return 1.0
        return profile_of(model).factor(cpu_per_gpu, mem_gb_per_gpu, self.interp)

    def __repr__(self) -> str:
        return f"SynergyModel(base={self.base!r}, interp={self.interp!r})"


def _gavel_like_duration(rng: random.Random) -> float:
    """Seconds at the proportional share: 60·10^U(1.5, 3) w.p. 0.8, else 60·10^U(3, 4) (the
    authors' `helpers/utils.py:get_gavel_like_iter`, the Gavel paper's distribution)."""
    if rng.random() >= 0.8:
        return 60 * (10 ** rng.uniform(3, 4))
    return 60 * (10 ** rng.uniform(1.5, 3))


def synergy_workload(
    n_jobs: int,
    jobs_per_hour: float = 9.0,
    split: tuple[float, float, float] = (20, 70, 10),
    seed: int = 42,
    list_seed: int = 42,
    list_size: int = 20_000,
) -> pd.DataFrame:
    """The first `n_jobs` jobs of the authors' simulated single-GPU workload (Fig. 8).

    What their simulator does, call for call on Python's `random` (so the jobs are theirs
    for the same seeds): a job list of `list_size` Gavel-like durations drawn with
    `random.seed(list_seed)`. In this mode their Philly-derived list
    (``philly_jobs_sum_attempts_exp_single.pickle``, absent from the repository snapshot)
    holds nothing else, and their parser draws it after ``random.seed(42)``: with
    ``list_seed=42`` FIFO-TUNE gives the artifact readme's JCTs within 1.5 %, so the default
    is taken to be their list (another seed is another draw of it); then, with
    `random.seed(seed)` (their `--seed 42`), job i arrives `ceil(-ln(1-U)/λ · 3600)` s after
    job i-1 (the first after 0), draws an unused `randint(0, 9)` and takes the task class
    furthest below its share of `split` (image/language/speech %) among jobs so far, the
    models of a class in turn. Work: `int(duration / iter_time)` iterations of the model,
    i.e. `total_steps` seconds at the proportional share (`duration` truth). CPU and memory
    demands are the model's demand point (milli-CPUs, MiB; 1 GB = 1024 MiB).
    """
    import pandas as pd

    if n_jobs < 0 or n_jobs > list_size:
        raise ConfigError(f"synergy_workload n_jobs must be in 0..{list_size}, got {n_jobs}")
    profiles = load_profiles()
    list_rng = random.Random(list_seed)
    durations = [_gavel_like_duration(list_rng) for _ in range(list_size)]
    rng = random.Random(seed)
    tasks = list(TASK_MODELS)
    share = dict(zip(tasks, (float(p) for p in split), strict=True))
    priority = dict.fromkeys(tasks, 0.0)
    count = dict.fromkeys(tasks, 0)
    turn = dict.fromkeys(tasks, 0)
    n_models = sum(len(models) for models in TASK_MODELS.values())
    rows: list[dict[str, Any]] = []
    arrival = 0
    for i in range(n_jobs):
        arrival += math.ceil(-math.log(1.0 - rng.random()) / jobs_per_hour * 3600)
        rng.randint(0, n_models - 1)  # drawn and unused by the authors, kept for the stream
        task = max(tasks, key=lambda t: priority[t])  # first of equals, as their stable sort
        models = TASK_MODELS[task]
        model = models[turn[task] % len(models)]
        turn[task] += 1
        profile = profiles[model]
        iterations = int(durations[i] / profile.iter_time_s)
        rows.append(
            {
                "job_id": i,
                "submit_time": float(arrival),
                "num_gpus": 1,
                "duration": iterations * profile.iter_time_s,
                "model": model,
                "cpu_milli": round(profile.demand_cpu * 1000),
                "memory_mib": round(profile.demand_mem_gb * 1024),
            }
        )
        count[task] += 1
        total = i + 1
        for t in tasks:
            priority[t] = share[t] / 100 - count[t] / total
    return pd.DataFrame(rows)
