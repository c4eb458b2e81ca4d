"""Optimus' resource-to-speed models, and the Pollux artifact's measured all-reduce profiles.

Optimus (Peng et al., EuroSys 2018, §3.2; ``../shared/notes/policies.md`` §1.3) models the
training speed f (steps/s) of a parameter-server (PS) job with p PS tasks and w workers:

- asynchronous: ``f(p, w) = w / (θ0 + θ1·w/p + θ2·w + θ3·p)``;
- synchronous:  ``f(p, w) = 1 / (θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p)``, M = global batch.

Both are linear in θ once inverted (``w/f`` and ``1/f``), so `PSSpeedModel.fit` solves them
with non-negative least squares (``scipy.optimize.nnls``), as the paper says; the authors'
prototype (``pengyanghua/optimus`` ``scheduler/estimator.py``) instead runs a bounded
``curve_fit`` on f itself, which weighs the points differently (it fits speeds, we fit
inverse speeds). Minimum samples: 4 (async) and 5 (sync), as in the prototype.

GPU-only clusters have no PS tier. `AllReduceSpeedModel` is the analogue for all-reduce
data parallelism on k GPUs over n nodes, ``1/f(k, n) = θ0/k + θ1 + θ2·(k − 1) + θ3·(n − 1)``:
compute split over k GPUs, a constant, a per-GPU ring/latency term and a cross-node term,
fit the same way. It is dlsched's own form [I], not the paper's.

`PSThroughput` turns true per-model θ into an engine `ThroughputModel`. The engine does not
know how many PS tasks a policy chose (its rate is a function of GPUs and nodes only), so a
PS job is simulated with ``p = ceil(ps_per_worker × w)`` PS tasks — 1:1 by default, the
configuration the Optimus prototype samples (p = w) — whatever p the policy picked.

`PolluxApplication` / `PolluxThroughput` replay the measured T4 step times of the Pollux
OSDI'21 artifact (``petuum/adaptdl`` ``simulator/applications.py``; tables in
``../shared/traces/sia_pollux/sia/traces/<model>/``) for a job that trains with a fixed
global batch size, exactly as the artifact's Optimus and Tiresias baselines run them:
per-GPU batch ``ceil(M/k)``, gradient accumulation beyond the largest measured local batch
(and at least one accumulation step on a single GPU when M exceeds the smallest validated
batch), step and sync times interpolated linearly in local batch for measured placements,
else linearly over (nodes, GPUs, local batch). Its job work (`total_steps`) integrates the
artifact's progress-per-epoch and gradient-noise tables (see `dlsched.perf.convergence`).
Simplified: the engine gives a GPU count and a node count, not the per-node split, so a
placement is taken as packed (4, 4, …, rest) when it spans the fewest nodes and as an even
split otherwise; the artifact uses the actual split. Work is fixed in steps, so statistical
progress per step is taken at the traced batch M; the artifact takes it at the batch the
job really runs (k × atomic × (accum + 1), which differs from M when k does not divide it:
up to ±7 % in run time, YOLOv3 at M = 128 on 24 GPUs). `dlsched.perf.goodput.GoodputModel`
(``flavor="pollux"``) counts work in progress units and follows the artifact there; where k
divides M the two give identical run times.
"""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dlsched.errors import UnknownModelError

if TYPE_CHECKING:
    import pandas as pd

# scipy and pandas load on first use (a fit, the Pollux tables), not when the policy registry
# imports this module for every run (issue 16, target 4).

# ---------------------------------------------------------------------------------------
# Optimus' parameter-server speed function f(p, w)
# ---------------------------------------------------------------------------------------

MIN_POINTS = {"sync": 5, "async": 4}


@dataclass(frozen=True)
class PSSpeedModel:
    """f(p, w) with coefficients θ ≥ 0 (see the module docstring).

    `batch_size` is M, the global mini-batch of a synchronous job (the θ0 term is θ0·M/w)."""

    theta: tuple[float, ...]
    sync: bool = True
    batch_size: float = 1.0

    def __post_init__(self) -> None:
        want = 5 if self.sync else 4
        if len(self.theta) != want or any(not t >= 0 for t in self.theta):
            raise ValueError(
                f"PSSpeedModel: {'sync' if self.sync else 'async'} needs {want} "
                f"coefficients >= 0, got {self.theta!r}"
            )

    @staticmethod
    def features(p: float, w: float, sync: bool, batch_size: float = 1.0) -> np.ndarray:
        """The terms that multiply θ in 1/f (sync) or w/f (async)."""
        if sync:
            return np.array([batch_size / w, 1.0, w / p, w, p])
        return np.array([1.0, w / p, w, p])

    def speed(self, p: float, w: float) -> float:
        """Steps per second with p PS tasks and w workers (0 when p or w is 0)."""
        if p <= 0 or w <= 0:
            return 0.0
        denominator = float(np.dot(self.theta, self.features(p, w, self.sync, self.batch_size)))
        if denominator <= 0:
            return math.inf
        return (1.0 if self.sync else w) / denominator

    @classmethod
    def fit(
        cls,
        points: Sequence[tuple[float, float, float]],
        sync: bool = True,
        batch_size: float = 1.0,
    ) -> PSSpeedModel | None:
        """NNLS fit to (p, w, steps/s) samples; None with fewer than the minimum samples."""
        points = [(p, w, f) for p, w, f in points if f > 0 and p > 0 and w > 0]
        if len(points) < MIN_POINTS["sync" if sync else "async"]:
            return None
        a = np.array([cls.features(p, w, sync, batch_size) for p, w, _ in points])
        b = np.array([(1.0 if sync else w) / f for _, w, f in points])
        scale = np.abs(a).max(axis=0)  # column scaling keeps NNLS well conditioned
        scale[scale == 0] = 1.0
        from scipy.optimize import nnls

        theta, _ = nnls(a / scale, b)
        return cls(tuple(float(t) for t in theta / scale), sync, batch_size)


@dataclass(frozen=True)
class AllReduceSpeedModel:
    """1/f(k, n) = θ0/k + θ1 + θ2·(k − 1) + θ3·(n − 1), θ ≥ 0: k GPUs over n nodes."""

    theta: tuple[float, float, float, float]

    @staticmethod
    def features(k: float, n_nodes: float) -> np.ndarray:
        return np.array([1.0 / k, 1.0, k - 1.0, n_nodes - 1.0])

    def speed(self, k: int, n_nodes: int = 1) -> float:
        """Steps per second on k GPUs spread over `n_nodes` nodes (0 on no GPU)."""
        if k <= 0:
            return 0.0
        denominator = float(np.dot(self.theta, self.features(k, max(1, n_nodes))))
        return math.inf if denominator <= 0 else 1.0 / denominator

    @classmethod
    def fit(cls, points: Sequence[tuple[int, int, float]]) -> AllReduceSpeedModel | None:
        """NNLS fit to (k, nodes, steps/s) samples; None with no usable sample.

        With a single distinct GPU count the rate is taken as flat in k (θ0 alone), the
        safest guess that never promises a speed-up nobody measured."""
        points = [(k, n, f) for k, n, f in points if f > 0 and k > 0]
        if not points:
            return None
        if len({k for k, _, _ in points}) == 1:
            mean_inverse = float(np.mean([1.0 / f for _, _, f in points]))
            return cls((0.0, mean_inverse, 0.0, 0.0))
        a = np.array([cls.features(k, max(1, n)) for k, n, _ in points])
        b = np.array([1.0 / f for _, _, f in points])
        scale = np.abs(a).max(axis=0)
        scale[scale == 0] = 1.0
        from scipy.optimize import nnls

        theta, _ = nnls(a / scale, b)
        t0, t1, t2, t3 = (float(t) for t in theta / scale)
        return cls((t0, t1, t2, t3))


class PSThroughput:
    """Engine truth for PS jobs: per-model true `PSSpeedModel`, run with ⌈ratio × w⌉ PS.

    `models` maps model names (case-insensitive) to their true speed model. The GPU type is
    ignored (the paper's speed function has none); `speed_by_type` may scale it per type."""

    name = "ps-speed"

    def __init__(
        self,
        models: Mapping[str, PSSpeedModel],
        ps_per_worker: float = 1.0,
        speed_by_type: Mapping[str, float] | None = None,
    ) -> None:
        if not ps_per_worker > 0:
            raise ValueError(f"PSThroughput: ps_per_worker must be > 0, got {ps_per_worker!r}")
        self.models = {k.strip().lower(): v for k, v in models.items()}
        self.ps_per_worker = float(ps_per_worker)
        self.speed_by_type = {k.lower(): float(v) for k, v in (speed_by_type or {}).items()}

    def ps_count(self, workers: int) -> int:
        """PS tasks the simulated job runs with on `workers` workers."""
        return max(1, math.ceil(self.ps_per_worker * workers - 1e-9))

    def speed(self, model: str | None, p: int, w: int, gpu_type: str | None = None) -> float:
        """True f(p, w) of a model (what a profiling run with p PS and w workers measures)."""
        truth = self.models.get((model or "").strip().lower())
        if truth is None:
            raise UnknownModelError(
                f"PSThroughput has no speed model for {model!r}; it knows "
                f"{', '.join(sorted(self.models)) or 'none'}"
            )
        factor = self.speed_by_type.get(gpu_type or "", 1.0)
        return truth.speed(p, w) * factor

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        if colocated:
            return 0.0
        return self.speed(model, self.ps_count(n_gpus), n_gpus, gpu_type)

    def reference_type(self, model: str | None) -> str | None:
        return None

    def __repr__(self) -> str:
        return f"PSThroughput({len(self.models)} models, ps_per_worker={self.ps_per_worker:g})"


# ---------------------------------------------------------------------------------------
# The Pollux artifact's applications (measured T4 step times + validation tables)
# ---------------------------------------------------------------------------------------

POLLUX_MAX_EPOCHS = {
    "bert": 2,
    "cifar10": 100,
    "ncf": 10,
    "imagenet": 90,
    "deepspeech2": 80,
    "yolov3": 50,
}
"""Epochs each application trains for (``APPLICATIONS`` in the artifact's applications.py;
no target metric is set there, so a job completes after its last epoch)."""
POLLUX_MAX_LOCAL_BSZ = {"yolov3": 8}
"""Overrides of the largest per-GPU batch (same source); others use their largest measured."""
POLLUX_GPUS_PER_NODE = 4  # g4dn.12xlarge: 4 x T4


def _read(path: str) -> pd.DataFrame:
    import pandas as pd

    return pd.read_csv(path)


def _find(folder: str, stem: str) -> str:
    for suffix in (".csv", ".csv.gz"):
        path = os.path.join(folder, stem + suffix)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"no {stem}.csv(.gz) in {folder}")


class PolluxApplication:
    """One model of the Pollux artifact: step times by placement and convergence tables."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        name: str | None = None,
        max_epochs: int | None = None,
        max_local_bsz: int | None = None,
    ) -> None:
        folder = os.fspath(folder)
        self.name = name or os.path.basename(folder.rstrip("/"))
        validation: dict[int, pd.DataFrame] = {}
        for path in glob.glob(os.path.join(folder, "validation-*.csv*")):
            batch = int(os.path.basename(path).split("-")[1].split(".")[0])
            validation[batch] = _read(path)
        if not validation:
            raise FileNotFoundError(f"no validation-<batch>.csv(.gz) in {folder}")
        self.validation = dict(sorted(validation.items()))
        placements = _read(_find(folder, "placements"))
        ids = placements["placement"].astype(int).astype(str)
        placements = placements.assign(
            num_nodes=ids.str.len(),
            num_replicas=ids.map(lambda s: sum(map(int, s))),
            placement=ids.astype(int),
        )
        self.placements = placements
        scalability = _read(_find(folder, "scalability"))
        self.init_batch_size = min(self.validation)
        self.max_batch_size = max(self.validation)
        self.min_local_bsz = int(placements["local_bsz"].min())
        self.max_local_bsz = int(
            max_local_bsz or POLLUX_MAX_LOCAL_BSZ.get(self.name, placements["local_bsz"].max())
        )
        self.max_epochs = int(
            max_epochs or POLLUX_MAX_EPOCHS.get(self.name, min(map(len, self.validation.values())))
        )
        self._by_placement: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for pid in sorted(set(placements["placement"].tolist())):
            rows = placements[placements["placement"] == pid]
            rows = rows.groupby("local_bsz")[["step_time", "sync_time"]].mean()
            self._by_placement[int(pid)] = (
                rows.index.to_numpy(float),
                rows["step_time"].to_numpy(float),
                rows["sync_time"].to_numpy(float),
            )
        xs, ys = ["num_nodes", "num_replicas", "local_bsz"], ["step_time", "sync_time"]
        grid = placements.groupby(xs)[ys].mean().reset_index()
        import pandas as pd
        from scipy.interpolate import LinearNDInterpolator

        grid = pd.concat([grid, scalability[xs + ys]], ignore_index=True)

        self._grid = LinearNDInterpolator(grid[xs].to_numpy(float), grid[ys].to_numpy(float))
        self._progress = [0.0] + [
            min(float(df["progress"].iloc[e - 1]) for df in self.validation.values())
            for e in range(1, self.max_epochs + 1)
        ]
        self._step_cache: dict[tuple[tuple[int, ...], int], float] = {}

    # ---- speed --------------------------------------------------------------------------
    def sync_and_step_time(self, placement: tuple[int, ...], local_bsz: int) -> tuple[float, float]:
        """(step time, sync time) in seconds of one step at `local_bsz` per GPU."""
        placement = tuple(p for p in placement if p)
        placement = min(placement[i:] + placement[:i] for i in range(len(placement)))
        pid = int("".join(map(str, placement)))
        measured = self._by_placement.get(pid)
        if measured is not None and measured[0][0] <= local_bsz <= measured[0][-1]:
            bsz, step, sync = measured
            return float(np.interp(local_bsz, bsz, step)), float(np.interp(local_bsz, bsz, sync))
        nodes = min(len(placement), 16)
        step, sync = self._grid([nodes, sum(placement), local_bsz])[0]
        if math.isnan(step) and measured is not None:  # outside the hull: clamp the batch
            bsz, steps, syncs = measured
            return (
                float(np.interp(local_bsz, bsz, steps)),
                float(np.interp(local_bsz, bsz, syncs)),
            )
        if math.isnan(step):
            raise UnknownModelError(
                f"{self.name}: no step time for placement {placement} at local batch {local_bsz}"
            )
        return float(step), float(sync)

    def batch_split(self, n_gpus: int, batch_size: int) -> tuple[int, int]:
        """(per-GPU atomic batch, accumulation steps) for a fixed global batch on n GPUs."""
        local = math.ceil(batch_size / n_gpus - 1e-8)
        accum = math.ceil(local / self.max_local_bsz - 1e-8) - 1
        if n_gpus == 1 and batch_size > self.init_batch_size:
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - 1e-8)
        count = n_gpus * (accum + 1)
        return min(atomic, int(self.max_batch_size / count)), accum

    def step_time(self, placement: tuple[int, ...], batch_size: int) -> float:
        """Seconds per step (with gradient accumulation) at global batch `batch_size`."""
        key = (placement, batch_size)
        cached = self._step_cache.get(key)
        if cached is None:
            atomic, accum = self.batch_split(sum(placement), batch_size)
            step, sync = self.sync_and_step_time(placement, atomic)
            cached = self._step_cache[key] = step + (step - sync) * accum
        return cached

    def max_gpus(self, batch_size: int) -> int:
        """The artifact's cap for Optimus: global batch // smallest local batch (ncf: 1)."""
        return 1 if self.name == "ncf" else max(1, batch_size // self.min_local_bsz)

    # ---- convergence --------------------------------------------------------------------
    def _bounds(self, batch_size: float) -> tuple[int, int]:
        lower = max((b for b in self.validation if b <= batch_size), default=None)
        upper = min((b for b in self.validation if b >= batch_size), default=None)
        if lower is None or upper is None:
            raise ValueError(
                f"{self.name}: batch size {batch_size} is outside the validated "
                f"range {self.init_batch_size}..{self.max_batch_size}"
            )
        return lower, upper

    def _interpolate(self, column: str, batch_size: float, epoch: int) -> float:
        lower, upper = self._bounds(batch_size)
        low = float(self.validation[lower][column].iloc[epoch])
        if lower == upper:
            return low
        high = float(self.validation[upper][column].iloc[epoch])
        return ((batch_size - lower) * high + (upper - batch_size) * low) / (upper - lower)

    def progress(self, epoch: int) -> float:
        """Statistical progress at the end of `epoch` epochs (the artifact's get_progress)."""
        return self._progress[epoch]

    def gain(self, batch_size: float, epoch: int) -> float:
        """Progress per step during `epoch` at this batch (the artifact's statistical gain)."""
        sqr = self._interpolate("grad_sqr", batch_size, epoch)
        var = self._interpolate("grad_var", batch_size, epoch)
        scale = batch_size / self.init_batch_size
        return (var + sqr) / (var / scale + sqr)

    def epoch_steps(self, batch_size: float) -> list[float]:
        """Steps that each epoch takes at a fixed global batch."""
        return [
            (self._progress[e + 1] - self._progress[e]) / self.gain(batch_size, e)
            for e in range(self.max_epochs)
        ]

    def total_steps(self, batch_size: float) -> float:
        """Steps until the artifact declares the job complete (after its last epoch)."""
        return float(sum(self.epoch_steps(batch_size)))

    def iterations(self, batch_size: float, epoch: int) -> float:
        """The artifact's `get_iteration`: validated iterations after `epoch` (0-based)."""
        return self._interpolate("iteration", batch_size, epoch)

    def __repr__(self) -> str:
        return f"PolluxApplication({self.name!r}, epochs={self.max_epochs})"


def split_model(model: str | None) -> tuple[str, int]:
    """'cifar10@2048' → ('cifar10', 2048): the Pollux model name carries the global batch."""
    name, _, batch = (model or "").partition("@")
    if not batch.isdigit():
        raise UnknownModelError(
            f"Pollux model names are '<application>@<global batch>', got {model!r}"
        )
    return name.strip().lower(), int(batch)


def placement_for(
    n_gpus: int, n_nodes: int, per_node: int = POLLUX_GPUS_PER_NODE
) -> tuple[int, ...]:
    """GPUs per node for n GPUs over n_nodes nodes: packed (4, 4, …, rest) when that many
    nodes is the fewest possible, else as even as possible (see the module docstring)."""
    n_nodes = max(1, min(n_nodes, n_gpus))
    if n_nodes == -(-n_gpus // per_node):
        full, rest = divmod(n_gpus, per_node)
        return (per_node,) * full + ((rest,) if rest else ())
    base, extra = divmod(n_gpus, n_nodes)
    return tuple(base + (1 if i < extra else 0) for i in range(n_nodes))


class PolluxThroughput:
    """Engine truth for Pollux-artifact jobs named '<application>@<global batch>'.

    Steps/s = 1 / `PolluxApplication.step_time`. Only `gpu_type` (default ``t4``, the
    artifact's AWS g4dn.12xlarge profiles) runs them."""

    name = "pollux"

    def __init__(
        self,
        folder: str | os.PathLike[str],
        gpu_type: str = "t4",
        applications: Sequence[str] = tuple(POLLUX_MAX_EPOCHS),
    ) -> None:
        self.folder = os.fspath(folder)
        self.gpu_type = gpu_type.lower()
        self.apps = {
            name: PolluxApplication(os.path.join(self.folder, name)) for name in applications
        }

    def app(self, model: str | None) -> tuple[PolluxApplication, int]:
        name, batch = split_model(model)
        try:
            return self.apps[name], batch
        except KeyError:
            raise UnknownModelError(
                f"no Pollux application {name!r} (have {', '.join(sorted(self.apps))})"
            ) from None

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        if colocated or gpu_type != self.gpu_type:
            return 0.0
        app, batch = self.app(model)
        return 1.0 / app.step_time(placement_for(n_gpus, n_nodes), batch)

    def reference_type(self, model: str | None) -> str | None:
        return self.gpu_type

    def __repr__(self) -> str:
        return f"PolluxThroughput({self.folder!r}, {self.gpu_type})"
