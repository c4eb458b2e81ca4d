"""Goodput: throughput × statistical efficiency, as Pollux and Sia model and simulate it.

Pollux (Qiao et al., OSDI '21, §3) and Sia (Jayaram Subramanya et al., SOSP '23, §3) schedule
by *goodput*: how fast a job makes statistical progress, the product of its throughput
(samples/s on an allocation at a per-GPU batch size) and its statistical efficiency at that
batch (how much each sample counts, from the gradient noise scale). Both adapt a job's batch
size to its allocation. This module is the model their artifacts' simulators run
(``petuum/adaptdl`` branch ``osdi21-artifact`` ``simulator/``, and
``siasosp23/artifacts`` ``sia-simulator/``), re-written from their semantics:

**Work** is counted in the artifacts' *progress* units: one unit is one step at the model's
initial (smallest validated) batch size, so DESIGN's "work in steps" still holds. A step at
global batch B in epoch e makes ``gain(B, e) = (var + sqr) / (var / s + sqr)`` units, s = B /
B0, where (sqr, var) are the gradient statistics of the validation tables
(``validation-<B>.csv``, linearly interpolated in B). Epoch e spans progress
``[P(e), P(e+1))`` with ``P(e) = min over the tables of progress[e-1]``; a job is done at its
model's target ``P(max_epochs)`` (the artifacts set no target metric, so a job completes after
its last epoch: `ps_speed.POLLUX_MAX_EPOCHS`).

**Truth (the engine's rate)**: progress/s = ``gain(B, e) / T(B)`` where T is the measured
time of one step (``step_time + accum × (step_time − sync_time)``: gradient accumulation
re-runs the compute part) from ``placements-<type>.csv`` — linear in per-GPU batch for a
measured placement, else linear over (nodes, GPUs, per-GPU batch) with
``scalability-<type>.csv`` — as the artifacts' ``Application.get_throughput`` does. Because
gain depends on the epoch, the rate is piecewise constant in work: `GoodputModel.rate_from`
gives the rate and the work at which it next changes (the engine re-rates there). The batch:

- **fixed** (``adaptive=False``): the job's traced global batch (model ``<app>@<batch>``),
  split as the artifacts split it (per-GPU ``ceil(B/k)``, accumulation beyond the largest
  per-GPU batch, at least one accumulation step on one GPU above B0, capped so k × atomic ×
  (accum + 1) ≤ the largest validated batch). This is how the artifacts run their Optimus,
  Tiresias and Gavel baselines. Gain is taken at the *effective* batch after those caps, as
  the artifacts' ``Job.step`` does.
- **adaptive** (``adaptive=True``): the batch a Pollux/Sia agent picks at each allocation and
  epoch, among the artifacts' 50 candidates (geometric from max(B0, k × min per-GPU batch) to
  the largest validated batch, with the same accumulation rule): ``batch_choice="measured"``
  (default) the candidate of highest *true* goodput; ``"fitted"`` the candidate that the
  fitted Pollux form below rates highest (what the artifacts' agents do with their fitted
  model), then run at its true rate. Pollux's artifact keeps NCF at a fixed 32,768.

**Estimate (Pollux's parametric form, `PerfParams`)**: per-step time
``T = accum × Tc + (Tc^γ + Tn^γ)^(1/γ)``, with compute ``Tc = αc + βc × atomic`` and
all-reduce ``Tn = α + β × max(k − 2, 0)`` using the inter-node (αn, βn) or intra-node
(αr, βr) constants, γ ∈ [1, 10] the overlap of compute and communication (Pollux §3.2). It is
fitted per (model, type) to the measured tables by `fit_perf_params` (log-space least
squares, as the artifact's ``fit_perf_params``: same objective and bounds, solved with
``scipy.optimize.least_squares`` rather than autograd + L-BFGS-B).

**GPU types** are the profiles' short names — ``t4`` (AWS g4dn, files ``-aws``), ``v100``
(Azure ND40rs_v2, ``-azure``), ``dgx`` (DGX-A100, ``-dgx-ext``, the Sia simulator's default
for experiments), ``quad`` (Quadro RTX 6000), ``rtx`` (RTX 2080Ti) — and cluster names map to
them (`profile_type`: ``T4``, ``V100``, ``A100``, ``RTX6000``, ``RTX2080Ti``, …). An unknown
type is an error naming it, unless ``fallback="scaling"``: then a type with an assumed peak
speed (`dlsched.perf.scaling.ASSUMED_SPEED_VS_V100`) runs at the V100 profile's goodput ×
that ratio — an assumption, labelled so.

**Flavours**: ``flavor="pollux"`` is the Pollux artifact (T4 only, the unsuffixed files,
YOLOv3 per-GPU batch ≤ 8, no calibration); ``flavor="sia"`` the Sia simulator (all types,
DeepSpeech2 ≤ 57 per GPU on RTX, per-placement largest per-GPU batch, and its calibration:
goodput ÷ ``SIA_SLOWDOWNS`` [model], fitted by the authors to their testbed).

Simplified: the agents' learning phase is not part of the truth — the artifacts' jobs run
their first interval at the smallest batch (no profile yet) and then pick with a fit of what
they measured; ``batch_choice="measured"`` picks with full knowledge, ``"fitted"`` with the
fit of the whole profile. The engine gives a GPU count and a node count, not the per-node
split, so the placement is taken as `ps_speed.placement_for` builds it (packed when it spans
the fewest nodes, else even); the artifacts use the real split. The artifacts advance time in whole
seconds at epoch ends (``round(delta)``); dlsched keeps exact times. GPT pipeline jobs
(``gpt_pmp``) are not modelled (no workload uses them).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import ConfigError, TraceError, UnknownModelError, did_you_mean
from dlsched.jobs import JobSpec, JobState
from dlsched.perf.convergence import elastic_workload
from dlsched.perf.estimator import NoisyEstimator, OracleEstimator
from dlsched.perf.ps_speed import POLLUX_MAX_EPOCHS, placement_for
from dlsched.traces.workload import Workload

# ---------------------------------------------------------------------------------------
# GPU types
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileType:
    """A profiled GPU/node type: its short name, file suffix and GPUs per node."""

    short: str
    suffix: str
    gpus_per_node: int
    hardware: str


PROFILE_TYPES: dict[str, ProfileType] = {
    # GPUs per node from `cluster_ngpus_per_node` in the Sia simulator's simulator_config.py.
    "t4": ProfileType("t4", "aws", 4, "AWS g4dn.12xlarge, 4 x T4"),
    "v100": ProfileType("v100", "azure", 8, "Azure ND40rs_v2, 8 x V100"),
    "dgx": ProfileType("dgx", "dgx-ext", 8, "DGX-A100, 8 x A100-40GB"),
    "quad": ProfileType("quad", "quad", 4, "4 x Quadro RTX 6000"),
    "rtx": ProfileType("rtx", "rtx", 8, "8 x RTX 2080Ti"),
}
"""The profiled types by short name (the names of Sia's 1-GPU seed profiles)."""

_ALIASES = {
    "t4": "t4",
    "aws": "t4",
    "teslat4": "t4",
    "v100": "v100",
    "azure": "v100",
    "teslav100": "v100",
    "a100": "dgx",
    "a10040gb": "dgx",
    "dgx": "dgx",
    "dgxa100": "dgx",
    "dgxext": "dgx",
    "quad": "quad",
    "rtx6000": "quad",
    "quadrortx6000": "quad",
    "rtx": "rtx",
    "rtx2080ti": "rtx",
    "2080ti": "rtx",
    "geforcertx2080ti": "rtx",
}


def _normal(name: str) -> str:
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


def profile_type(gpu_type: str) -> str | None:
    """The profile short name of a GPU type as users write it (``T4``, ``A100``,
    ``RTX2080Ti``, ``RTX6000``, ``V100`` or a short name), None if it has no profile.

    >>> profile_type("RTX2080Ti"), profile_type("A100"), profile_type("H100")
    ('rtx', 'dgx', None)
    """
    return _ALIASES.get(_normal(gpu_type))


SIA_SLOWDOWNS: dict[str, float] = {
    "cifar10": 1.8,
    "imagenet": 1.2,
    "yolov3": 1.2,
    "bert": 1.2,
    "deepspeech2": 1.2,
    "ncf": 1.5,
}
"""Sia's calibration: simulated goodput ÷ this (``SLOWDOWNS`` in sia-simulator's
simulator_config.py: "slowdown values for each job fitted to real-world data")."""

POLLUX_LOCAL_BSZ_CAP = {"yolov3": 8}
"""Largest per-GPU batch overrides in the Pollux artifact's applications.py."""
SIA_LOCAL_BSZ_CAP = {("deepspeech2", "rtx"): 57}
"""Largest per-GPU batch overrides in the Sia simulator's applications.py."""
POLLUX_FIXED_BATCH = {"ncf": 32768}
"""Jobs the Pollux artifact never adapts (its simulator.py sets NCF's target batch)."""
CANDIDATES = 50
"""Candidate global batch sizes an agent weighs (``np.geomspace``'s default count, as the
artifacts' ``GoodputFunction.optimize``)."""
_EPS = 1e-8  # the artifacts' tolerance for ceil/floor


def _read(folder: Path, stem: str) -> pd.DataFrame:
    for suffix in (".csv", ".csv.gz"):
        path = folder / (stem + suffix)
        if path.exists():
            return pd.read_csv(path)
    raise FileNotFoundError(f"no {stem}.csv(.gz) in {folder}")


# ---------------------------------------------------------------------------------------
# Statistical efficiency (per model)
# ---------------------------------------------------------------------------------------


class Convergence:
    """A model's validation tables: epochs, progress bounds and gradient statistics."""

    def __init__(self, folder: str | os.PathLike[str], max_epochs: int | None = None) -> None:
        folder = Path(folder)
        self.name = folder.name
        tables: dict[int, pd.DataFrame] = {}
        for path in folder.glob("validation-*.csv*"):
            tables[int(path.name.split("-")[1].split(".")[0])] = pd.read_csv(path)
        if not tables:
            raise FileNotFoundError(f"no validation-<batch>.csv(.gz) in {folder}")
        batches = sorted(tables)
        self.batches = np.asarray(batches, dtype=float)
        self.init_batch_size = int(batches[0])
        self.max_batch_size = int(batches[-1])
        rows = min(len(t) for t in tables.values())
        self.max_epochs = int(max_epochs or POLLUX_MAX_EPOCHS.get(self.name, rows))
        epochs = self.max_epochs
        progress = np.array([tables[b]["progress"].to_numpy(float)[:epochs] for b in batches])
        #: bounds[e] = progress at the start of epoch e; bounds[max_epochs] = the target.
        self.bounds = np.concatenate([[0.0], progress.min(axis=0)])
        self.target = float(self.bounds[-1])
        # (epochs, batches) matrices, so np.interp over a row interpolates in batch size
        self._sqr = np.array([tables[b]["grad_sqr"].to_numpy(float)[:epochs] for b in batches]).T
        self._var = np.array([tables[b]["grad_var"].to_numpy(float)[:epochs] for b in batches]).T

    def epoch_of(self, work: float) -> int:
        """The epoch in which a job that has done `work` progress units is (capped at the
        last one)."""
        epoch = int(np.searchsorted(self.bounds, work, "right")) - 1
        return min(max(epoch, 0), self.max_epochs - 1)

    def grad_stats(self, batch: np.ndarray | float, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """(grad_sqr, grad_var) during `epoch` at global batch(es) `batch`, linear in batch
        between validated sizes (the artifacts' ``get_grad_stats``)."""
        x = np.asarray(batch, dtype=float)
        return (
            np.interp(x, self.batches, self._sqr[epoch]),
            np.interp(x, self.batches, self._var[epoch]),
        )

    def gain(self, batch: np.ndarray | float, epoch: int) -> np.ndarray:
        """Progress units per step at global batch `batch` during `epoch`."""
        x = np.asarray(batch, dtype=float)
        sqr, var = self.grad_stats(x, epoch)
        scale = x / self.init_batch_size
        denominator = var / scale + sqr
        safe = np.where(denominator > 0, denominator, 1.0)
        return np.where(denominator > 0, (var + sqr) / safe, 1.0)

    def gains(self, batch: np.ndarray) -> np.ndarray:
        """gain for every epoch (rows) and batch (columns)."""
        return np.stack([self.gain(batch, e) for e in range(self.max_epochs)])

    def efficiency(self, batch: np.ndarray | float, epoch: int) -> np.ndarray:
        """Statistical efficiency: progress per *sample* relative to the initial batch,
        gain / (B / B0) (the artifacts' ``GoodputFunction.efficiency``)."""
        x = np.asarray(batch, dtype=float)
        return self.gain(x, epoch) / (x / self.init_batch_size)

    def __repr__(self) -> str:
        return f"Convergence({self.name!r}, epochs={self.max_epochs}, target={self.target:g})"


# ---------------------------------------------------------------------------------------
# Step times (per model and GPU type)
# ---------------------------------------------------------------------------------------


class Barycentric:
    """``scipy.interpolate.LinearNDInterpolator`` on scattered points, as the artifacts use
    it (same Delaunay triangulation, same simplex search, NaN outside the hull), with two
    changes. The barycentric transform of every simplex is computed here, batched, instead
    of by SciPy's per-simplex LAPACK calls, which on a busy machine take seconds for one
    table (OpenBLAS threads per 3 × 3 matrix); degenerate simplices (1-norm reciprocal
    condition < machine epsilon) are NaN as in SciPy. A coordinate every point shares (the
    Quadro profile has one node only) is dropped, where SciPy cannot triangulate at all:
    queries must match it."""

    def __init__(self, points: np.ndarray, values: np.ndarray) -> None:
        from scipy.interpolate import LinearNDInterpolator
        from scipy.spatial import Delaunay

        points = np.asarray(points, dtype=float)
        values = np.asarray(values, dtype=float)
        self.keep = [j for j in range(points.shape[1]) if len(np.unique(points[:, j])) > 1]
        self.fixed = {j: float(points[0, j]) for j in range(points.shape[1]) if j not in self.keep}
        self.width = values.shape[1]
        points = points[:, self.keep]
        self._line: tuple[np.ndarray, np.ndarray] | None = None
        self._f: Any = None
        if points.shape[1] == 1:
            frame = pd.DataFrame(values).groupby(points[:, 0]).mean()
            self._line = (frame.index.to_numpy(float), frame.to_numpy(float))
        elif points.shape[1] >= 2:
            tri = Delaunay(points)
            if hasattr(tri, "_transform"):
                tri._transform = _barycentric_transforms(tri.points, tri.simplices)
            self._f = LinearNDInterpolator(tri, values)

    def __call__(self, points: np.ndarray) -> np.ndarray:
        points = np.atleast_2d(np.asarray(points, dtype=float))
        out = np.full((len(points), self.width), np.nan)
        match = np.ones(len(points), dtype=bool)
        for j, value in self.fixed.items():
            match &= points[:, j] == value
        if not match.any():
            return out
        query = points[match][:, self.keep]
        if self._f is not None:
            out[match] = self._f(query)
        elif self._line is not None:
            x, y = self._line
            q = query[:, 0]
            inside = (x[0] <= q) & (q <= x[-1])
            rows = np.flatnonzero(match)[inside]
            for c in range(self.width):
                out[rows, c] = np.interp(q[inside], x, y[:, c])
        return out


def _barycentric_transforms(points: np.ndarray, simplices: np.ndarray) -> np.ndarray:
    """SciPy's ``Delaunay.transform``: per simplex, T⁻¹ (rows 0..d−1) and the last vertex
    (row d), so that c = T⁻¹ (x − r); NaN for degenerate simplices."""
    corners = points[simplices]  # (simplices, d + 1, d)
    last = corners[:, -1, :]
    t = np.transpose(corners[:, :-1, :] - last[:, None, :], (0, 2, 1))
    ndim = t.shape[1]
    out = np.full((len(t), ndim + 1, ndim), np.nan)
    out[:, ndim, :] = last
    det = np.linalg.det(t)
    ok = np.abs(det) > 0
    inverse = np.linalg.inv(t[ok])
    norm = np.abs(t[ok]).sum(axis=1).max(axis=1)
    norm_inv = np.abs(inverse).sum(axis=1).max(axis=1)
    good = 1.0 / (norm * norm_inv) >= np.finfo(float).eps
    index = np.flatnonzero(ok)[good]
    out[index, :ndim, :] = inverse[good]
    return out


class StepTimes:
    """The measured (step, sync) seconds of one model on one GPU type."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        suffix: str,
        *,
        max_local_bsz: int | None = None,
    ) -> None:
        folder = Path(folder)
        self.name = folder.name
        stem = f"-{suffix}" if suffix else ""
        placements = _read(folder, "placements" + stem)
        ids = placements["placement"].astype(int).astype(str)
        self.placements = placements.assign(
            num_nodes=ids.str.len(),
            num_replicas=ids.map(lambda s: sum(map(int, s))),
            placement=ids.astype(int),
        )
        self.scalability = _read(folder, "scalability" + stem)
        self.min_local_bsz = int(self.placements["local_bsz"].min())
        self.max_local_bsz = int(max_local_bsz or self.placements["local_bsz"].max())
        self._measured: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for pid, rows in self.placements.groupby("placement"):
            rows = rows.groupby("local_bsz")[["step_time", "sync_time"]].mean()
            self._measured[int(pid)] = (
                rows.index.to_numpy(float),
                rows["step_time"].to_numpy(float),
                rows["sync_time"].to_numpy(float),
            )
        self._largest_by_replicas = (
            self.placements.groupby("num_replicas")["local_bsz"].max().astype(int).to_dict()
        )
        self._grid: Barycentric | None = None

    def _interpolator(self) -> Barycentric:
        if self._grid is None:
            xs, ys = ["num_nodes", "num_replicas", "local_bsz"], ["step_time", "sync_time"]
            grid = self.placements.groupby(xs)[ys].mean().reset_index()
            grid = pd.concat([grid, self.scalability[xs + ys]], ignore_index=True)
            self._grid = Barycentric(grid[xs].to_numpy(float), grid[ys].to_numpy(float))
        return self._grid

    @staticmethod
    def placement_id(placement: Sequence[int]) -> int:
        """The artifacts' id: digits of the lexicographically smallest rotation."""
        kept = tuple(p for p in placement if p)
        kept = min(kept[i:] + kept[:i] for i in range(len(kept)))
        return int("".join(map(str, kept)))

    def times(
        self, placement: Sequence[int], local_bsz: np.ndarray | float
    ) -> tuple[np.ndarray, np.ndarray]:
        """(step, sync) seconds at per-GPU batch(es) `local_bsz`; NaN where unknown.

        A measured placement interpolates linearly in batch within its measured range;
        outside it, and for placements never measured, the (nodes, GPUs, batch) grid is
        used; outside the grid's hull a measured placement clamps to its nearest batch."""
        x = np.atleast_1d(np.asarray(local_bsz, dtype=float))
        measured = self._measured.get(self.placement_id(placement))
        step = np.full(x.shape, np.nan)
        sync = np.full(x.shape, np.nan)
        inside = np.zeros(x.shape, dtype=bool)
        if measured is not None:
            bsz, steps, syncs = measured
            inside = (bsz[0] <= x) & (x <= bsz[-1])
            step[inside] = np.interp(x[inside], bsz, steps)
            sync[inside] = np.interp(x[inside], bsz, syncs)
        rest = ~inside
        if rest.any():
            kept = [p for p in placement if p]
            nodes = min(len(kept), 16)
            points = np.column_stack(
                [np.full(rest.sum(), nodes), np.full(rest.sum(), sum(kept)), x[rest]]
            )
            found = self._interpolator()(points)
            step[rest], sync[rest] = found[:, 0], found[:, 1]
            if measured is not None:
                missing = rest & np.isnan(step)
                bsz, steps, syncs = measured
                step[missing] = np.interp(x[missing], bsz, steps)
                sync[missing] = np.interp(x[missing], bsz, syncs)
        return step, sync

    def largest_local_bsz(self, placement: Sequence[int]) -> int:
        """Sia's ``get_max_local_bsz``: the largest per-GPU batch measured for this
        placement, else in scalability rows at least as large."""
        measured = self._measured.get(self.placement_id(placement))
        if measured is not None:
            return int(measured[0][-1])
        kept = [p for p in placement if p]
        rows = self.scalability[
            (self.scalability["num_nodes"] >= len(kept))
            & (self.scalability["num_replicas"] >= sum(kept))
        ]
        return int(rows["local_bsz"].max()) if len(rows) else self.max_local_bsz

    def largest_for_replicas(self, n_gpus: int) -> int | None:
        """The largest per-GPU batch measured with `n_gpus` GPUs (Sia's memory cap)."""
        return self._largest_by_replicas.get(n_gpus)

    def profile_points(self) -> tuple[np.ndarray, ...]:
        """(nodes, GPUs, per-GPU batch, step, sync) of every measured row (both tables)."""
        cols = ["num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"]
        both = pd.concat([self.placements[cols], self.scalability[cols]], ignore_index=True)
        return tuple(both[c].to_numpy(float) for c in cols)


# ---------------------------------------------------------------------------------------
# Pollux's parametric throughput form
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PerfParams:
    """Pollux's step-time parameters (Pollux §3.2; the artifact's ``PerfParams``)."""

    alpha_c: float
    beta_c: float
    alpha_n: float
    beta_n: float
    alpha_r: float
    beta_r: float
    gamma: float

    def compute_time(self, atomic_bsz: np.ndarray | float) -> np.ndarray:
        """Seconds of one forward/backward pass at per-GPU batch `atomic_bsz`."""
        return self.alpha_c + self.beta_c * np.asarray(atomic_bsz, dtype=float)

    def network_time(self, n_nodes: np.ndarray | float, n_gpus: np.ndarray | float) -> np.ndarray:
        """Seconds of the all-reduce: inter-node constants when spread over nodes,
        intra-node ones on one node, ~0 on one GPU."""
        nodes = np.asarray(n_nodes, dtype=float)
        gpus = np.asarray(n_gpus, dtype=float)
        conds = [nodes > 1, gpus > 1]
        alpha = np.select(conds, [self.alpha_n, self.alpha_r], 1e-8)
        beta = np.select(conds, [self.beta_n, self.beta_r], 1e-8)
        return alpha + beta * np.maximum(gpus - 2, 1e-8)

    def step_time(
        self,
        n_nodes: np.ndarray | float,
        n_gpus: np.ndarray | float,
        atomic_bsz: np.ndarray | float,
        accum_steps: np.ndarray | float = 0,
    ) -> np.ndarray:
        """Seconds of one optimizer step: accumulation passes, then the last pass
        overlapped with the all-reduce as a γ-norm."""
        compute = self.compute_time(atomic_bsz)
        network = self.network_time(n_nodes, n_gpus)
        g = self.gamma
        optim = (compute**g + network**g) ** (1.0 / g)
        return np.asarray(accum_steps, dtype=float) * compute + optim

    def as_tuple(self) -> tuple[float, ...]:
        return (
            self.alpha_c,
            self.beta_c,
            self.alpha_n,
            self.beta_n,
            self.alpha_r,
            self.beta_r,
            self.gamma,
        )


def fit_perf_params(
    n_nodes: Sequence[float] | np.ndarray,
    n_gpus: Sequence[float] | np.ndarray,
    atomic_bsz: Sequence[float] | np.ndarray,
    step_time: Sequence[float] | np.ndarray,
    sync_time: Sequence[float] | np.ndarray,
) -> PerfParams:
    """Fit `PerfParams` to measured steps (the artifacts' objective: log-space errors of
    the compute time and of the step time, a pull of γ toward 1 and of β toward 0; terms
    that no sample informs are pinned as the artifacts pin them)."""
    from scipy.optimize import least_squares

    nodes = np.asarray(n_nodes, dtype=float)
    gpus = np.asarray(n_gpus, dtype=float)
    bsz = np.asarray(atomic_bsz, dtype=float)
    step = np.asarray(step_time, dtype=float)
    compute = np.maximum(step - np.asarray(sync_time, dtype=float), 1e-8)
    lower = np.array([1e-8, 1e-8] * 3 + [1.0])
    upper = np.array([np.inf, np.inf] * 3 + [10.0])
    start = np.array([1e-1, 1e-2] * 3 + [1.0 + 1e-3])
    fixed: dict[int, float] = {}
    if len(np.unique(bsz)) == 1:
        fixed[0] = float(np.mean(compute)) / 2
    if not np.any(nodes > 1):
        fixed[2], fixed[3] = 1e-8, 1e-8
    if not np.any((nodes == 1) & (gpus > 1)):
        fixed[4], fixed[5] = 1e-8, 1e-8
    if not np.any(gpus > 2):
        fixed[3], fixed[5] = 1e-8, 1e-8
    free = [i for i in range(7) if i not in fixed]
    n = len(step)

    def full(x: np.ndarray) -> np.ndarray:
        p = start.copy()
        for i, v in fixed.items():
            p[i] = v
        p[free] = x
        return p

    def residuals(x: np.ndarray) -> np.ndarray:
        p = PerfParams(*full(x))
        err_c = (np.log(p.compute_time(bsz)) - np.log(compute)) / math.sqrt(n)
        err_s = (np.log(p.step_time(nodes, gpus, bsz)) - np.log(step)) / math.sqrt(n)
        reg = [
            math.sqrt(1e-3) * (p.gamma - 1),
            0.1 * p.beta_n / p.alpha_n,
            0.1 * p.beta_r / p.alpha_r,
        ]
        return np.concatenate([err_c, err_s, reg])

    x0 = np.clip(start[free], lower[free] * (1 + 1e-6), upper[free])
    solved = least_squares(residuals, x0, bounds=(lower[free], upper[free]), x_scale="jac")
    params = full(solved.x)
    if not np.any(nodes > 1):  # the artifact's prior: inter-node no cheaper than intra
        params[2] = max(params[2], params[4] * 1.1)
        params[3] = max(params[3], params[5] * 1.1)
    return PerfParams(*(float(v) for v in params))


# ---------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchChoice:
    """A job's batch configuration at an allocation during one epoch, and its goodput.

    `goodput` is progress units/s (steps at the initial batch per second); `throughput`
    samples/s; `efficiency` = goodput × B0 / throughput (Pollux's statistical efficiency);
    `step_time_s` is the measured time of one step (Sia's calibration divides `goodput`
    and `throughput`, not it)."""

    batch_size: int
    atomic_bsz: int
    accum_steps: int
    step_time_s: float
    goodput: float
    throughput: float
    efficiency: float


@dataclass(frozen=True)
class Candidates:
    """Batch configurations of a job on one allocation (arrays, one entry per candidate)."""

    placement: tuple[int, ...]  # GPUs per node
    atomic: np.ndarray  # per-GPU batch of one pass
    accum: np.ndarray  # accumulation passes before the all-reduce
    batch: np.ndarray  # effective global batch
    valid: np.ndarray  # within the per-GPU batch limits


@dataclass
class EpochRates:
    """Per-epoch rates of one job kind on one allocation (arrays indexed by epoch)."""

    rate: np.ndarray  # progress units / s (calibrated)
    batch: np.ndarray  # effective global batch
    atomic: np.ndarray
    accum: np.ndarray
    step_s: np.ndarray  # seconds per step as measured (before calibration)
    factor: float = 1.0  # calibration × fallback speed factor applied to `rate`
    average: float = field(default=0.0)  # target / time to reach it from 0


class GoodputModel:
    """The goodput truth of Pollux/Sia jobs (see the module docstring).

    - `folder`: ``.../sia_pollux/sia/traces`` (default: found under the shared folder,
      `dlsched.reproduce.base.shared_folder`).
    - `adaptive`: the Pollux/Sia agent picks each job's batch (True), or jobs keep their
      traced batch (False: the baselines).
    - `flavor`: ``"sia"`` or ``"pollux"`` (see the module docstring).
    - `batch_choice`: ``"measured"`` or ``"fitted"`` (adaptive jobs only).
    - `calibrate`: divide by `SIA_SLOWDOWNS` (default: True for Sia, False for Pollux).
    - `fallback`: None (unknown types are errors) or ``"scaling"``.

    Job models are ``<application>`` or ``<application>@<global batch>`` (the batch is
    required for fixed-batch jobs); `workload` converts a Pollux/Sia workload to them."""

    def __init__(
        self,
        folder: str | os.PathLike[str] | None = None,
        *,
        adaptive: bool = False,
        flavor: str = "sia",
        batch_choice: str = "measured",
        calibrate: bool | None = None,
        fallback: str | None = None,
    ) -> None:
        if flavor not in ("sia", "pollux"):
            raise ValueError(f"GoodputModel: flavor must be 'sia' or 'pollux', got {flavor!r}")
        if batch_choice not in ("measured", "fitted"):
            raise ValueError(
                f"GoodputModel: batch_choice must be 'measured' or 'fitted', got {batch_choice!r}"
            )
        if fallback not in (None, "scaling"):
            raise ValueError(f"GoodputModel: fallback must be None or 'scaling', got {fallback!r}")
        if folder is None:
            from dlsched.reproduce.base import shared_folder

            folder = shared_folder() / "traces" / "sia_pollux" / "sia" / "traces"
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise FileNotFoundError(
                f"GoodputModel: no profile folder {self.folder} (the Pollux/Sia "
                "'sia/traces' folder of ../shared/traces/sia_pollux); pass folder="
            )
        self.adaptive = bool(adaptive)
        self.flavor = flavor
        self.batch_choice = batch_choice
        self.calibrate = (flavor == "sia") if calibrate is None else bool(calibrate)
        self.fallback = fallback
        self.name = "goodput" if flavor == "sia" else "goodput-pollux"
        self.applications = tuple(
            sorted(p.name for p in self.folder.iterdir() if p.name in POLLUX_MAX_EPOCHS)
        )
        self._convergence: dict[str, Convergence] = {}
        self._steps: dict[tuple[str, str], StepTimes] = {}
        self._params: dict[tuple[str, str], PerfParams] = {}
        self._rates: dict[tuple, EpochRates] = {}
        self._types: dict[str, tuple[str, float]] = {}
        self._parsed: dict[str | None, tuple[str, int | None]] = {}

    # ---- names ---------------------------------------------------------------------------
    def parse(self, model: str | None) -> tuple[str, int | None]:
        """'cifar10@2048' → ('cifar10', 2048); 'cifar10' → ('cifar10', None)."""
        parsed = self._parsed.get(model)
        if parsed is None:
            name, _, batch = (model or "").partition("@")
            name = name.strip().lower()
            if name not in self.applications:
                raise UnknownModelError(
                    f"no goodput profile for model {model!r}{did_you_mean(name, self.applications)}"
                    f"; profiled: {', '.join(self.applications)}"
                )
            if batch and not batch.strip().isdigit():
                raise UnknownModelError(
                    f"goodput model names are '<application>[@<global batch>]', got {model!r}"
                )
            parsed = self._parsed[model] = (name, int(batch) if batch else None)
        return parsed

    def gpu_type(self, gpu_type: str) -> tuple[str, float]:
        """(profile short name, speed factor) of a cluster type key; the factor is 1 unless
        the `scaling` fallback stands in for an unprofiled type. Raises `ConfigError`."""
        found = self._types.get(gpu_type)
        if found is None:
            short = profile_type(gpu_type)
            if self.flavor == "pollux" and short not in (None, "t4"):
                short = None
            if short is not None:
                found = (short, 1.0)
            elif self.fallback == "scaling":
                from dlsched.perf.scaling import ASSUMED_SPEED_VS_V100

                factor = ASSUMED_SPEED_VS_V100.get(gpu_type.lower())
                if factor is None or self.flavor == "pollux":
                    raise ConfigError(self._type_message(gpu_type, " (nor an assumed speed)"))
                found = ("v100", factor)
            else:
                raise ConfigError(self._type_message(gpu_type, ""))
            self._types[gpu_type] = found
        return found

    def _type_message(self, gpu_type: str, extra: str) -> str:
        known = (
            ["T4"] if self.flavor == "pollux" else ["T4", "V100", "A100", "RTX6000", "RTX2080Ti"]
        )
        return (
            f"GPU type {gpu_type!r} has no {self.flavor} goodput profile{extra}; profiled "
            f"types: {', '.join(known)} — rename it in the cluster file, or pass "
            "GoodputModel(fallback='scaling') to extrapolate from V100 by assumed peak speed"
        )

    def check_types(self, gpu_types: Sequence[str]) -> None:
        """Raise `ConfigError` naming the first type without a profile (or a fallback)."""
        for t in gpu_types:
            self.gpu_type(t)

    # ---- tables --------------------------------------------------------------------------
    def convergence(self, application: str) -> Convergence:
        """The validation tables of an application (read once)."""
        table = self._convergence.get(application)
        if table is None:
            table = self._convergence[application] = Convergence(self.folder / application)
        return table

    def step_times(self, application: str, short: str) -> StepTimes:
        """The measured step times of an application on a profiled type (read once)."""
        key = (application, short)
        table = self._steps.get(key)
        if table is None:
            if self.flavor == "pollux":
                suffix, cap = "", POLLUX_LOCAL_BSZ_CAP.get(application)
            else:
                suffix = PROFILE_TYPES[short].suffix
                cap = SIA_LOCAL_BSZ_CAP.get((application, short))
            table = self._steps[key] = StepTimes(
                self.folder / application, suffix, max_local_bsz=cap
            )
        return table

    def perf_params(self, application: str, short: str) -> PerfParams:
        """Pollux's form fitted to every measured step of (application, type) (cached)."""
        key = (application, short)
        params = self._params.get(key)
        if params is None:
            params = self._params[key] = fit_perf_params(
                *self.step_times(application, short).profile_points()
            )
        return params

    def target(self, model: str | None) -> float:
        """Progress units at which a job of `model` is done."""
        return self.convergence(self.parse(model)[0]).target

    def gpus_per_node(self, short: str) -> int:
        return 4 if self.flavor == "pollux" else PROFILE_TYPES[short].gpus_per_node

    # ---- rates ---------------------------------------------------------------------------
    def epoch_rates(
        self, model: str | None, gpu_type: str, n_gpus: int, n_nodes: int
    ) -> EpochRates:
        """Per-epoch true rates (and batch choices) of `model` on an allocation (cached)."""
        key = (model, gpu_type, n_gpus, n_nodes)
        found = self._rates.get(key)
        if found is None:
            found = self._rates[key] = self._epoch_rates(model, gpu_type, n_gpus, n_nodes)
        return found

    def candidates(self, model: str | None, short: str, n_gpus: int, n_nodes: int) -> Candidates:
        """The batch configurations a job of `model` may run with on `n_gpus` GPUs of a
        profiled type over `n_nodes` nodes (one for a fixed batch, `CANDIDATES` when the
        agent adapts it), as the artifacts build them."""
        app, traced = self.parse(model)
        conv = self.convergence(app)
        steps = self.step_times(app, short)
        placement = placement_for(n_gpus, n_nodes, self.gpus_per_node(short))
        k = sum(placement)
        adaptive = self.adaptive
        fixed = traced
        if adaptive and self.flavor == "pollux" and app in POLLUX_FIXED_BATCH:
            adaptive, fixed = False, POLLUX_FIXED_BATCH[app]
        if not adaptive and fixed is None:
            raise UnknownModelError(
                f"a fixed-batch goodput job needs '<application>@<global batch>', got {model!r}"
            )
        max_atomic = (
            steps.largest_local_bsz(placement) if self.flavor == "sia" else steps.max_local_bsz
        )
        if adaptive:
            low = max(conv.init_batch_size, steps.min_local_bsz * k)
            wanted = np.geomspace(low, conv.max_batch_size, CANDIDATES)
        else:
            wanted = np.array([float(fixed)])  # type: ignore[arg-type]
        local = wanted / k
        accum = np.ceil(local / max_atomic - _EPS) - 1
        # one GPU above B0: at least one accumulation step (the artifacts' rule)
        bump = (k == 1) & (local > conv.init_batch_size + (_EPS if adaptive else 0))
        accum = np.where(bump, np.maximum(accum, 1), accum).astype(int)
        atomic = np.ceil(local / (accum + 1) - _EPS).astype(int)
        if adaptive:
            valid = (steps.min_local_bsz <= atomic) & (atomic <= max_atomic)
        else:
            valid = np.ones(atomic.shape, dtype=bool)
        if self.flavor == "sia":
            cap = steps.largest_for_replicas(k)
            if cap is not None:
                atomic = np.minimum(atomic, cap)
        atomic = np.minimum(atomic, (conv.max_batch_size / (k * (accum + 1))).astype(int))
        atomic = np.maximum(atomic, 1)
        return Candidates(placement, atomic, accum, k * atomic * (accum + 1), valid)

    def _epoch_rates(
        self, model: str | None, gpu_type: str, n_gpus: int, n_nodes: int
    ) -> EpochRates:
        app, _ = self.parse(model)
        short, factor = self.gpu_type(gpu_type)
        conv = self.convergence(app)
        steps = self.step_times(app, short)
        if self.calibrate:
            factor /= SIA_SLOWDOWNS.get(app, 1.0)
        found = self.candidates(model, short, n_gpus, n_nodes)
        placement, atomic, accum, batch = found.placement, found.atomic, found.accum, found.batch
        k = sum(placement)
        adaptive = len(atomic) > 1
        step, sync = steps.times(placement, atomic)
        if np.all(np.isnan(step)):
            raise UnknownModelError(
                f"{app}: no step time for {placement} GPUs of {short} at per-GPU batch "
                f"{int(atomic[0])}",
                field="num_gpus",
            )
        seconds = step + accum * (step - sync)
        gains = conv.gains(batch.astype(float))  # (epochs, candidates)
        rates = gains / seconds
        ok = np.isfinite(rates) & (seconds > 0) & found.valid
        rates = np.where(ok, rates, -np.inf)
        if adaptive and self.batch_choice == "fitted":
            params = self.perf_params(app, short)
            predicted = params.step_time(len(placement), k, atomic, accum)
            pick = np.argmax(np.where(ok, gains / predicted, -np.inf), axis=1)
        else:
            pick = np.argmax(rates, axis=1)
        epochs = np.arange(conv.max_epochs)
        chosen = rates[epochs, pick] * factor
        chosen = np.where(np.isfinite(chosen), chosen, 0.0)
        out = EpochRates(
            rate=chosen,
            batch=batch[pick],
            atomic=atomic[pick],
            accum=accum[pick],
            step_s=seconds[pick],
            factor=factor,
        )
        spans = np.diff(conv.bounds)
        if np.all(chosen > 0):
            out.average = float(conv.target / np.sum(spans / chosen))
        return out

    def rate_from(
        self, model: str | None, gpu_type: str, n_gpus: int, n_nodes: int, work_done: float
    ) -> tuple[float, float]:
        """(progress units/s, work at which that rate ends): the rate valid from
        `work_done` until the next epoch bound (``math.inf`` in the last epoch)."""
        rates = self.epoch_rates(model, gpu_type, n_gpus, n_nodes)
        conv = self.convergence(self.parse(model)[0])
        epoch = conv.epoch_of(work_done)
        until = math.inf if epoch >= conv.max_epochs - 1 else float(conv.bounds[epoch + 1])
        return float(rates.rate[epoch]), until

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        """The average progress units/s of a whole job on this allocation (its target ÷
        the time to reach it from scratch), so that work ÷ throughput is its run time
        alone; `rate_from` gives the rate epoch by epoch. 0 when packed."""
        if colocated or n_gpus < 1:
            return 0.0
        return self.epoch_rates(model, gpu_type, n_gpus, max(1, n_nodes)).average

    def reference_type(self, model: str | None) -> str | None:
        return "t4"

    # ---- what a policy asks (through `GoodputEstimator`) ---------------------------------
    def best_batch(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int | None = None,
        work_done: float = 0.0,
    ) -> BatchChoice:
        """The batch the job runs with at this allocation and progress, and its goodput."""
        short, _ = self.gpu_type(gpu_type)
        nodes = n_nodes or max(1, -(-n_gpus // self.gpus_per_node(short)))
        rates = self.epoch_rates(model, gpu_type, n_gpus, nodes)
        app = self.parse(model)[0]
        conv = self.convergence(app)
        e = conv.epoch_of(work_done)
        batch = int(rates.batch[e])
        step_s = float(rates.step_s[e])
        throughput = batch * rates.factor / step_s if step_s > 0 else 0.0
        goodput = float(rates.rate[e])
        return BatchChoice(
            batch_size=batch,
            atomic_bsz=int(rates.atomic[e]),
            accum_steps=int(rates.accum[e]),
            step_time_s=float(rates.step_s[e]),
            goodput=goodput,
            throughput=throughput,
            efficiency=goodput * conv.init_batch_size / throughput if throughput else 0.0,
        )

    def goodput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int | None = None,
        work_done: float = 0.0,
    ) -> float:
        """Progress units/s at this allocation and progress (best batch when adaptive)."""
        if n_gpus < 1:
            return 0.0
        return self.best_batch(model, gpu_type, n_gpus, n_nodes, work_done).goodput

    # ---- workloads -----------------------------------------------------------------------
    def workload(self, workload: Workload) -> Workload:
        """A Pollux/Sia workload made runnable: model ``<application>@<batch>``, work = the
        model's target progress, elastic from 1 GPU to its largest useful count (largest
        validated batch ÷ smallest per-GPU batch; NCF 1 in the Pollux flavour, as the
        Pollux artifact caps it). Unknown models raise `TraceError` naming file, row and
        model."""
        jobs = workload.jobs.copy()
        source = str(workload.provenance.get("source", "<workload>"))
        if "batch_size" not in jobs:
            raise TraceError(
                "a Pollux/Sia workload needs the 'batch_size' column",
                path=source,
                field="batch_size",
            )
        rows = jobs["source_row"].tolist() if "source_row" in jobs else [None] * len(jobs)
        models, work, highs = [], [], []
        for app_name, batch, row in zip(jobs["model"], jobs["batch_size"], rows, strict=True):
            name = str(app_name).strip().lower()
            if name not in self.applications:
                raise TraceError(
                    f"model {app_name!r} has no goodput profile"
                    f"{did_you_mean(name, self.applications)}; profiled models: "
                    f"{', '.join(self.applications)}",
                    path=source,
                    row=None if row is None else int(row),
                    field="application",
                )
            conv = self.convergence(name)
            models.append(f"{name}@{int(batch)}")
            work.append(conv.target)
            t4 = self.step_times(name, "t4")
            high = max(1, conv.max_batch_size // t4.min_local_bsz)
            if self.flavor == "pollux" and name == "ncf":
                high = 1
            highs.append(high)
        return elastic_workload(
            workload,
            jobs,
            models,
            work,
            highs,
            note="progress units (steps at the model's initial batch) to the model's last "
            "epoch, from the validation tables (dlsched.perf.goodput)",
            transform={
                "name": "goodput_workload",
                "profiles": str(self.folder),
                "flavor": self.flavor,
            },
        )

    def __repr__(self) -> str:
        return (
            f"GoodputModel({self.flavor}, adaptive={self.adaptive}, "
            f"batch_choice={self.batch_choice!r})"
        )


# ---------------------------------------------------------------------------------------
# What policies see
# ---------------------------------------------------------------------------------------


class GoodputEstimator(OracleEstimator):
    """What a goodput-aware policy sees: the oracle of a `GoodputModel` truth.

    Adds to `OracleEstimator` (whose `throughput` is a job's average rate on an
    allocation): `goodput`, `best_batch`, `speedup`, `progress`, `epoch` and `target`, each
    at the job's current progress. The engine must run a `GoodputModel` truth."""

    name = "goodput"

    def bind(self, rates: Any, specs: Sequence[JobSpec], cluster: Any, rng: Any) -> None:
        super().bind(rates, specs, cluster, rng)
        truth = rates.truth
        if not isinstance(truth, GoodputModel):
            raise ConfigError(
                f"the goodput estimator needs a GoodputModel truth, got {truth!r}; pass "
                "throughput=GoodputModel(...) (a Pollux/Sia workload picks it by default)"
            )
        self.model: GoodputModel = truth

    def _nodes(self, gpu_type: str, n_gpus: int, n_nodes: int | None) -> int:
        return self._consolidated_nodes(gpu_type, n_gpus) if n_nodes is None else n_nodes

    def progress(self, state: JobState, now: float) -> float:
        """Progress units done by `now`."""
        return state.steps_done_at(now)

    def epoch(self, state: JobState, now: float) -> int:
        """The epoch the job is in at `now`."""
        app = self.model.parse(state.spec.model)[0]
        return self.model.convergence(app).epoch_of(state.steps_done_at(now))

    def target(self, job: JobSpec) -> float:
        """Progress units at which the job is done."""
        return self.total_steps(job)

    def best_batch(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int | None = None,
        work_done: float = 0.0,
    ) -> BatchChoice:
        """The batch the job would run with (and its goodput) at this allocation and
        progress; `n_nodes` defaults to the fewest nodes that hold `n_gpus`."""
        return self.model.best_batch(
            job.model, gpu_type, n_gpus, self._nodes(gpu_type, n_gpus, n_nodes), work_done
        )

    def goodput(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int | None = None,
        work_done: float = 0.0,
    ) -> float:
        """Progress units/s at the best batch (the traced one for fixed-batch jobs)."""
        if n_gpus < 1:
            return 0.0
        return self.best_batch(job, gpu_type, n_gpus, n_nodes, work_done).goodput

    def speedup(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int | None = None,
        work_done: float = 0.0,
        base: tuple[str, int] | None = None,
    ) -> float:
        """Goodput here ÷ goodput on its fair baseline: `base` = (type, GPUs), default one
        GPU of the same type (Pollux's ``SpeedupFunction``: speedup over 1 GPU)."""
        base_type, base_gpus = base if base is not None else (gpu_type, 1)
        denominator = self.goodput(job, base_type, base_gpus, None, work_done)
        if not denominator > 0:
            return 0.0
        return self.goodput(job, gpu_type, n_gpus, n_nodes, work_done) / denominator


class NoisyGoodputEstimator(GoodputEstimator, NoisyEstimator):
    """The goodput oracle × seeded log-normal errors, as `NoisyEstimator` draws them: each
    job's work × exp(N(0, `sigma`²)), each (model, GPU type) goodput and throughput ×
    exp(N(0, `sigma_throughput`²)) (default: `sigma`), drawn once per run from its seed."""

    name = "goodput-noisy"

    def __init__(self, sigma: float = 0.5, sigma_throughput: float | None = None) -> None:
        NoisyEstimator.__init__(
            self, sigma, sigma if sigma_throughput is None else sigma_throughput
        )

    def best_batch(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int | None = None,
        work_done: float = 0.0,
    ) -> BatchChoice:
        true = super().best_batch(job, gpu_type, n_gpus, n_nodes, work_done)
        factor = self._rate_factor(job, gpu_type)
        return dataclasses.replace(
            true, goodput=true.goodput * factor, throughput=true.throughput * factor
        )

    def __repr__(self) -> str:
        return (
            f"NoisyGoodputEstimator(sigma={self.sigma}, sigma_throughput={self.sigma_throughput})"
        )


class LearnedGoodputEstimator(GoodputEstimator):
    """What the Pollux/Sia agents know: throughput from Pollux's form *fitted online* to the
    step times the jobs have measured, efficiency from the gradient statistics they run at.

    Observations are kept per (application, GPU type) and shared by every job of that
    application (a job's profile on identical hardware is its model's; the artifacts keep one
    per job, which only delays what each job learns). A running job measures the
    (nodes, GPUs, per-GPU batch) it runs at, as the artifacts' ``Job.update_params`` does.
    Before any measurement on a type the fit starts from the 1-GPU profiles that Sia's
    client is seeded with (``anchors/sia_physical_testbed/seed/<model>.csv``, ``bootstrap``
    True): with only 1-GPU points the network terms stay pinned near 0, so scaling is
    optimistic (linear), as Pollux assumes before profiling. Where a type has no seed row
    the oracle answers. Fits are cached by the set of points (refit only when a new point
    arrives). The agent's view leaves out Sia's calibration (it slows the true rate only);
    `throughput`, `remaining_steps` and the other `OracleEstimator` answers stay the oracle's.
    """

    name = "goodput-learned"

    def __init__(self, bootstrap: bool = True, seed_folder: str | os.PathLike[str] | None = None):
        super().__init__()
        self.bootstrap = bool(bootstrap)
        self.seed_folder = None if seed_folder is None else Path(seed_folder)
        self.fits = 0

    def bind(self, rates: Any, specs: Sequence[JobSpec], cluster: Any, rng: Any) -> None:
        super().bind(rates, specs, cluster, rng)
        self._points: dict[tuple[str, str], dict[tuple[int, int, int], tuple[float, float]]] = {}
        self._fitted: dict[tuple[str, str], tuple[int, PerfParams | None]] = {}
        self._seeds: dict[str, pd.DataFrame | None] = {}
        self._learned: dict[tuple, BatchChoice] = {}
        self.fits = 0

    # ---- what the engine tells it ------------------------------------------------------
    def on_stint(self, state: JobState, gpu_type: str, n_nodes: int, colocated: bool) -> None:
        """A stint began (or its rate changed): the job measures the step it runs."""
        if colocated or not state.gpus:
            return
        model = self.model
        app = model.parse(state.spec.model)[0]
        short, _ = model.gpu_type(gpu_type)
        n = len(state.gpus)
        rates = model.epoch_rates(state.spec.model, gpu_type, n, n_nodes)
        epoch = model.convergence(app).epoch_of(state.steps_done)
        atomic = int(rates.atomic[epoch])
        key = (n_nodes, n, atomic)
        points = self._points.setdefault((app, short), {})
        if key not in points:
            placement = placement_for(n, n_nodes, model.gpus_per_node(short))
            step, sync = model.step_times(app, short).times(placement, atomic)
            if math.isfinite(float(step[0])):
                points[key] = (float(step[0]), float(sync[0]))

    def on_stop(self, state: JobState, now: float) -> None:
        """A stint ended (nothing more to learn: the step was measured at its start)."""

    def advance(self, now: float) -> None:
        """The engine's clock at a scheduling call (unused: measurements are immediate)."""

    # ---- the fit ------------------------------------------------------------------------
    def _seed(self, app: str) -> pd.DataFrame | None:
        if app not in self._seeds:
            folder = self.seed_folder
            if folder is None:
                # profiles in <shared>/traces/sia_pollux/sia/traces: the seeds are in
                # <shared>/anchors/sia_physical_testbed/seed
                parents = self.model.folder.parents
                shared = parents[3] if len(parents) > 3 else self.model.folder
                folder = shared / "anchors" / "sia_physical_testbed" / "seed"
            if not folder.is_dir():
                # Without it the fit starts from the oracle: say so, once per estimator.
                warnings.warn(
                    f"goodput:learned: no Sia 1-GPU seed profiles in {folder}; types without "
                    "a measurement use the oracle (pass seed_folder=, or bootstrap=False)",
                    stacklevel=2,
                )
                self.seed_folder = folder
                self.bootstrap = False
                self._seeds[app] = None
                return None
            path = folder / f"{app}.csv"
            self._seeds[app] = pd.read_csv(path) if path.exists() else None
        return self._seeds[app]

    def perf_params(self, application: str, short: str) -> PerfParams | None:
        """The fitted form for (application, type) from what was measured so far (and the
        1-GPU seed); None when there is nothing to fit."""
        key = (application, short)
        points = self._points.get(key, {})
        cached = self._fitted.get(key)
        if cached is not None and cached[0] == len(points):
            return cached[1]
        rows = [(*k, *v) for k, v in points.items()]
        seed = self._seed(application) if self.bootstrap else None
        if seed is not None:
            mine = seed[seed["gpu_type"] == short]
            rows += [
                (1, 1, int(b), float(t), float(y))
                for b, t, y in zip(
                    mine["local_bsz"], mine["step_time"], mine["sync_time"], strict=True
                )
                if (1, 1, int(b)) not in points
            ]
        params = None
        if rows:
            columns = np.asarray(rows, dtype=float).T
            params = fit_perf_params(*columns)
            self.fits += 1
        self._fitted[key] = (len(points), params)
        return params

    # ---- what policies ask --------------------------------------------------------------
    def best_batch(
        self,
        job: JobSpec,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int | None = None,
        work_done: float = 0.0,
    ) -> BatchChoice:
        model = self.model
        nodes = self._nodes(gpu_type, n_gpus, n_nodes)
        app = model.parse(job.model)[0]
        short, factor = model.gpu_type(gpu_type)
        params = self.perf_params(app, short)
        if params is None:
            return super().best_batch(job, gpu_type, n_gpus, nodes, work_done)
        conv = model.convergence(app)
        epoch = conv.epoch_of(work_done)
        key = (job.model, gpu_type, n_gpus, nodes, epoch, len(self._points.get((app, short), ())))
        found = self._learned.get(key)
        if found is None:
            c = model.candidates(job.model, short, n_gpus, nodes)
            seconds = params.step_time(len(c.placement), sum(c.placement), c.atomic, c.accum)
            gains = conv.gain(c.batch.astype(float), epoch)
            rates = np.where(c.valid & (seconds > 0), gains / seconds, -np.inf) * factor
            i = int(np.argmax(rates))
            goodput = float(rates[i]) if np.isfinite(rates[i]) else 0.0
            batch = int(c.batch[i])
            throughput = batch * factor / float(seconds[i])
            found = self._learned[key] = BatchChoice(
                batch_size=batch,
                atomic_bsz=int(c.atomic[i]),
                accum_steps=int(c.accum[i]),
                step_time_s=float(seconds[i]),
                goodput=goodput,
                throughput=throughput,
                efficiency=goodput * conv.init_batch_size / throughput if throughput else 0.0,
            )
        return found


def goodput_estimator_for(estimator: OracleEstimator) -> OracleEstimator:
    """The goodput-aware counterpart of a plain estimator: the oracle → `GoodputEstimator`,
    `NoisyEstimator` → `NoisyGoodputEstimator` with the same sigmas, `LearnedEstimator` →
    `LearnedGoodputEstimator` (its prior and noise do not apply); any other as it is."""
    from dlsched.perf.learned import LearnedEstimator

    kind = type(estimator)
    if kind is OracleEstimator:
        return GoodputEstimator()
    if kind is NoisyEstimator:
        noisy: Any = estimator
        return NoisyGoodputEstimator(noisy.sigma, noisy.sigma_throughput)
    if kind is LearnedEstimator:
        return LearnedGoodputEstimator()
    return estimator


def is_goodput_workload(workload: Workload) -> bool:
    """Whether a workload is a Pollux/Sia trace that needs the goodput model for its work."""
    provenance = workload.provenance
    if provenance.get("format") != "sia-pollux":
        return False
    jobs = workload.jobs
    has_work = "total_steps" in jobs and jobs["total_steps"].notna().any()
    has_time = "duration" in jobs and jobs["duration"].notna().any()
    return not (has_work or has_time)


def default_flavor(workload: Workload, gpu_types: Sequence[str] = ("t4",)) -> str:
    """``pollux`` for the Pollux artifact's workloads (``.../pollux/...``) on a T4-only
    cluster, else ``sia``."""
    source = Path(str(workload.provenance.get("source", "")))
    pollux = "pollux" in source.parts[:-1] and "sia" not in source.parts[:-1]
    if pollux and all(profile_type(t) == "t4" for t in gpu_types):
        return "pollux"
    return "sia"


@functools.cache
def goodput_model(folder: str | None, flavor: str = "sia", adaptive: bool = False) -> GoodputModel:
    """A `GoodputModel`, one per (folder, flavor, adaptive) and process: its tables are
    read-only once read, so sweeps and property tests share them."""
    return GoodputModel(folder, flavor=flavor, adaptive=adaptive)


def profiles_near(workload: Workload) -> Path | None:
    """The ``sia/traces`` profile folder beside a Pollux/Sia workload file, if any."""
    source = Path(str(workload.provenance.get("source", "")))
    for parent in source.parents:
        candidate = parent / "sia" / "traces"
        if candidate.is_dir():
            return candidate
        if parent.name == "sia" and (parent / "traces").is_dir():
            return parent / "traces"
    return None
