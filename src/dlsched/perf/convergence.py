"""Convergence models: when a job's training loss stops improving, and how Optimus guesses it.

Optimus (Peng et al., EuroSys 2018, §3.1; ``../shared/notes/policies.md`` §1.2) models the
loss after k epochs as ``l(k) = 1/(β0·k + β1) + β2`` (β ≥ 0, SGD's O(1/k) rate), fits it
online to the points observed so far and reads off the epoch of convergence; remaining work
is (that epoch − progress) × steps per epoch.

- `LossCurve`: β0, β1, β2 and the convergence criterion of the authors' prototype
  (``pengyanghua/optimus`` ``scheduler/estimator.py`` and ``params.py``): the first epoch
  whose loss is within `threshold` = 0.05 of the loss `window` = 10 epochs earlier; the
  online search stops at 100 epochs, after which the prototype assumes 20 more epochs.
- `fit_loss_curve`: non-negative least squares, as the paper says. The curve is not linear
  in β, but ``1/(l − β2) = β0·k + β1`` is for a fixed β2, so β0, β1 come from
  ``scipy.optimize.nnls`` (rows weighted by (l − β2)² so that residuals are in loss units)
  and β2 ∈ [0, min loss) by a grid then a bounded scalar search. Noiseless points give β
  back exactly. (The prototype uses a bounded ``curve_fit`` with later points weighted up;
  we weight points equally.)
- `ConvergenceModel`: seeded synthetic loss curves per job. Each model name gets its own β
  (a seeded log-normal spread around `base`, or the values given in `curves`), each job a
  smaller spread around its model's, and observed losses carry Gaussian noise. These are
  **synthetic** — no trace records loss curves — and only their shape is the paper's. A job
  runs until its *true* (noiseless) curve converges: with `steps_per_epoch` None a job's
  traced work is kept and an epoch is ``total_steps / converged epoch``, so replay is
  unchanged and only the policy's knowledge differs; `apply` instead sets each job's work
  from the curve (for workloads without work).
- `ConvergenceTracker`: the online side a policy uses — observe losses as epochs finish, fit,
  estimate remaining steps.
- `pollux_workload` / `PolluxRemaining`: the Pollux OSDI'21 artifact's jobs (work from its
  validation tables, see `dlsched.perf.ps_speed`) and the remaining-iteration oracle its
  Optimus baseline uses.
"""

from __future__ import annotations

import copy
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dlsched.jobs import JobSpec, JobState

if TYPE_CHECKING:
    import pandas as pd

    from dlsched.perf.ps_speed import PolluxThroughput
    from dlsched.traces.workload import Workload

# scipy and pandas (through `Workload`) load on first use: the policy registry imports this
# module (Optimus) for every run, and `dlsched policies` or a bare `get()` need neither
# (issue 16, target 4).

WINDOW_EPOCHS = 10  # LOSS_LITTLE_CHANGE_EPOCH_NUM, prototype params.py
THRESHOLD = 0.05  # LOSS_CONVERGENCE, prototype params.py
MAX_EPOCHS = 100  # the prototype's search cap (estimator.py)
FALLBACK_EPOCHS = 20  # "progress + 20" when the fit fails (optimus_scheduler.py)
MIN_POINTS = 3  # the prototype fits from 3 validation losses on


@dataclass(frozen=True)
class LossCurve:
    """l(k) = 1/(β0·k + β1) + β2 for k epochs of training."""

    beta0: float
    beta1: float
    beta2: float

    def __post_init__(self) -> None:
        if min(self.beta0, self.beta1, self.beta2) < 0 or self.beta0 + self.beta1 <= 0:
            raise ValueError(f"LossCurve needs β >= 0 and β0 + β1 > 0, got {self}")

    def loss(self, epoch: float | np.ndarray) -> float | np.ndarray:
        """Loss after `epoch` epochs."""
        return 1.0 / (self.beta0 * np.asarray(epoch, dtype=float) + self.beta1) + self.beta2

    def converged_epoch(
        self,
        window: int = WINDOW_EPOCHS,
        threshold: float = THRESHOLD,
        max_epochs: int | None = None,
    ) -> int | None:
        """The first epoch e ≥ `window` with l(e − window) − l(e) ≤ `threshold`, or None past
        `max_epochs`."""
        epoch = self.epochs_to_converge(window, threshold)
        if max_epochs is not None and epoch > max_epochs:
            return None
        return epoch

    def epochs_to_converge(self, window: int = WINDOW_EPOCHS, threshold: float = THRESHOLD) -> int:
        """The first epoch e ≥ `window` with l(e − window) − l(e) ≤ `threshold`, with no limit.

        The loss falls monotonically, so one look back suffices; solved in closed form: with
        x = β0·e + β1 and d = β0·window the drop is d / (x (x − d))."""
        if window < 1 or not threshold > 0:
            raise ValueError("window must be >= 1 epoch and threshold > 0")
        if self.beta0 == 0:
            epoch = window
        else:
            d = self.beta0 * window
            x = (d + math.sqrt(d * d + 4 * d / threshold)) / 2
            epoch = max(window, math.ceil((x - self.beta1) / self.beta0 - 1e-9))
            while epoch > window and self._drop(epoch - 1, window) <= threshold:
                epoch -= 1  # guard the closed form against rounding
            while self._drop(epoch, window) > threshold:
                epoch += 1
        return epoch

    def _drop(self, epoch: int, window: int) -> float:
        return float(self.loss(epoch - window) - self.loss(epoch))


def fit_loss_curve(epochs: Sequence[float], losses: Sequence[float]) -> LossCurve | None:
    """NNLS fit of l(k) = 1/(β0·k + β1) + β2 (see the module docstring); None with fewer
    than 3 points or when no curve fits (every loss equal, for example)."""
    k = np.asarray(epochs, dtype=float)
    y = np.asarray(losses, dtype=float)
    if len(k) < MIN_POINTS or len(k) != len(y) or not np.all(np.isfinite(y)):
        return None
    low = float(y.min())
    if low <= 0:
        return None
    # imported here, not in `solve`, which runs ~50 times a fit
    from scipy.optimize import minimize_scalar, nnls

    def solve(beta2: float) -> tuple[float, float, float]:
        gap = y - beta2
        if np.any(gap <= 0):
            return math.inf, 0.0, 0.0
        weight = gap * gap  # d(1/gap) = -d(gap)/gap²: weighted rows ≈ loss-unit residuals
        a = np.column_stack([k, np.ones_like(k)]) * weight[:, None]
        (b0, b1), _ = nnls(a, weight / gap)
        if b0 + b1 <= 0:
            return math.inf, b0, b1
        fitted = 1.0 / (b0 * k + b1) + beta2
        return float(np.sum((fitted - y) ** 2)), float(b0), float(b1)

    top = low * (1 - 1e-9)
    grid = np.linspace(0.0, top, 41)
    errors = [solve(b)[0] for b in grid]
    best = int(np.argmin(errors))
    lo, hi = grid[max(0, best - 1)], grid[min(len(grid) - 1, best + 1)]
    result = minimize_scalar(
        lambda b: solve(b)[0],
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": max(1e-12, 1e-10 * low)},
    )
    beta2 = float(result.x) if result.fun <= errors[best] else float(grid[best])
    error, b0, b1 = solve(beta2)
    if not math.isfinite(error):
        return None
    return LossCurve(b0, b1, beta2)


# ---------------------------------------------------------------------------------------
# Synthetic, seeded loss curves
# ---------------------------------------------------------------------------------------

BASE_CURVE = (0.1, 0.5, 0.2)
"""Synthetic β of a typical job: loss 2.2 at the start, converged after 45 epochs under the
prototype's criterion. Chosen by us (labelled synthetic), not measured."""


def _salt(value: object) -> int:
    return zlib.crc32(repr(value).encode())


class ConvergenceModel:
    """Seeded synthetic loss curves per model and per job (see the module docstring).

    - `curves`: model name (case-insensitive) → (β0, β1, β2) of that model; others draw
      theirs from `base` with a log-normal spread `model_spread` on β0 and β1.
    - `job_spread`: log-normal spread of each job's β0, β1 around its model's.
    - `noise`: standard deviation of the Gaussian noise on observed losses.
    - `window`, `threshold`: the convergence criterion (prototype defaults 10 / 0.05).
    - `steps_per_epoch`: None keeps each job's traced work (epoch = work / epochs); a number
      (or a model → number mapping) is used by `apply` to set the work from the curve.
    """

    def __init__(
        self,
        curves: Mapping[str, tuple[float, float, float]] | None = None,
        *,
        base: tuple[float, float, float] = BASE_CURVE,
        model_spread: float = 0.3,
        job_spread: float = 0.1,
        noise: float = 0.01,
        window: int = WINDOW_EPOCHS,
        threshold: float = THRESHOLD,
        steps_per_epoch: float | Mapping[str, float] | None = None,
        seed: int = 0,
    ) -> None:
        if min(model_spread, job_spread, noise) < 0:
            raise ValueError("ConvergenceModel: spreads and noise must be >= 0")
        self.curves = {k.strip().lower(): LossCurve(*v) for k, v in (curves or {}).items()}
        self.base = LossCurve(*base)
        self.model_spread = float(model_spread)
        self.job_spread = float(job_spread)
        self.noise = float(noise)
        self.window = int(window)
        self.threshold = float(threshold)
        self._steps_per_epoch = steps_per_epoch
        self.seed = int(seed)
        self._job_curves: dict[object, LossCurve] = {}
        self._epochs: dict[object, int] = {}

    def _rng(self, *salt: object) -> np.random.Generator:
        return np.random.default_rng([self.seed, *(_salt(s) for s in salt)])

    def model_curve(self, model: str | None) -> LossCurve:
        """The model's own β (given, or drawn once from `base`)."""
        key = (model or "").strip().lower()
        curve = self.curves.get(key)
        if curve is None:
            f0, f1 = np.exp(self._rng("model", key).normal(0.0, self.model_spread, 2))
            curve = LossCurve(
                float(self.base.beta0 * f0), float(self.base.beta1 * f1), self.base.beta2
            )
        return curve

    def curve(self, job: JobSpec) -> LossCurve:
        """The job's true loss curve (its model's, with a seeded per-job spread)."""
        key = (job.job_id, job.model)
        curve = self._job_curves.get(key)
        if curve is None:
            model = self.model_curve(job.model)
            f0, f1 = np.exp(self._rng("job", job.job_id).normal(0.0, self.job_spread, 2))
            curve = self._job_curves[key] = LossCurve(
                float(model.beta0 * f0), float(model.beta1 * f1), model.beta2
            )
        return curve

    def epochs(self, job: JobSpec) -> int:
        """Epochs until the job's true curve converges."""
        key = (job.job_id, job.model)
        epochs = self._epochs.get(key)
        if epochs is None:
            epochs = self._epochs[key] = self.curve(job).epochs_to_converge(
                self.window, self.threshold
            )
        return epochs

    def _configured_steps(self, model: str | None) -> float | None:
        value = self._steps_per_epoch
        if isinstance(value, Mapping):
            value = {k.strip().lower(): v for k, v in value.items()}.get(
                (model or "").strip().lower()
            )
        return None if value is None else float(value)

    def steps_per_epoch(self, job: JobSpec) -> float:
        """Steps in one epoch: the job's work / its epochs (or the configured value)."""
        if job.total_steps > 0:
            return job.total_steps / self.epochs(job)
        configured = self._configured_steps(job.model)
        if configured is None:
            raise ValueError(
                f"job {job.job_id!r} has no work: give the ConvergenceModel "
                "steps_per_epoch or apply() it to the workload"
            )
        return configured

    def observed_loss(self, job: JobSpec, epoch: int) -> float:
        """The (noisy) validation loss a scheduler sees after `epoch` epochs; the same for
        the same seed, job and epoch whatever the order of the calls."""
        loss = float(self.curve(job).loss(epoch))
        if self.noise:
            loss += float(self._rng("loss", job.job_id, epoch).normal(0.0, self.noise))
        return loss

    def apply(self, workload: Workload) -> Workload:
        """A new workload whose jobs' work is epochs × steps_per_epoch (from the curve)."""
        from dlsched.traces.workload import Workload

        jobs = workload.jobs.copy()
        steps = []
        for row in jobs.itertuples(index=False):
            spec = JobSpec(
                index=0,
                job_id=row.job_id,
                submit_time=0.0,
                num_gpus=1,
                total_steps=0.0,
                model=getattr(row, "model", None),
            )
            per_epoch = self._configured_steps(spec.model)
            if per_epoch is None:
                raise ValueError(
                    "ConvergenceModel.apply needs steps_per_epoch (a number or "
                    f"a model mapping covering {spec.model!r})"
                )
            steps.append(self.epochs(spec) * per_epoch)
        jobs["total_steps"] = np.asarray(steps, dtype=float)
        jobs["duration"] = np.nan
        provenance = copy.deepcopy(workload.provenance)
        provenance.setdefault("transforms", []).append(
            {
                "name": "convergence_work",
                "seed": self.seed,
                "window": self.window,
                "threshold": self.threshold,
            }
        )
        return Workload(jobs, provenance)

    def __repr__(self) -> str:
        return (
            f"ConvergenceModel(seed={self.seed}, noise={self.noise:g}, "
            f"window={self.window}, threshold={self.threshold:g})"
        )


class ConvergenceTracker:
    """Optimus' online convergence estimate for the jobs of one simulation.

    Each `update` records the observed loss of every epoch a job finished since the last one;
    `remaining_steps` refits (when new points arrived) and returns
    ``(estimated epochs − epochs done) × steps per epoch``, at least one epoch; before 3
    points, or when the fitted curve does not converge within `max_epochs`, it assumes
    `fallback_epochs` more epochs (the prototype's rule)."""

    def __init__(
        self,
        model: ConvergenceModel,
        max_epochs: int = MAX_EPOCHS,
        fallback_epochs: int = FALLBACK_EPOCHS,
    ) -> None:
        self.model = model
        self.max_epochs = max_epochs
        self.fallback_epochs = fallback_epochs
        self._points: dict[object, list[float]] = {}  # job id → losses of epochs 1..n
        self._estimate: dict[object, tuple[int, int | None]] = {}  # job id → (points, epoch)

    def points(self, job: JobSpec) -> list[tuple[int, float]]:
        """The (epoch, loss) points observed so far."""
        return list(enumerate(self._points.get(job.job_id, []), start=1))

    def update(self, state: JobState, now: float) -> None:
        """Observe the epochs `state` finished by `now`."""
        spec = state.spec
        per_epoch = self.model.steps_per_epoch(spec)
        done = int(state.steps_done_at(now) / per_epoch + 1e-9)
        losses = self._points.setdefault(spec.job_id, [])
        while len(losses) < done:
            losses.append(self.model.observed_loss(spec, len(losses) + 1))

    def estimated_epochs(self, job: JobSpec) -> int | None:
        """Fitted epoch of convergence, or None (too few points, no fit, beyond the cap)."""
        losses = self._points.get(job.job_id, [])
        cached = self._estimate.get(job.job_id)
        if cached is not None and cached[0] == len(losses):
            return cached[1]
        curve = fit_loss_curve(range(1, len(losses) + 1), losses)
        epoch = (
            None
            if curve is None
            else curve.converged_epoch(self.model.window, self.model.threshold, self.max_epochs)
        )
        self._estimate[job.job_id] = (len(losses), epoch)
        return epoch

    def remaining_steps(self, state: JobState, now: float) -> float:
        """Estimated steps left (see the class docstring)."""
        self.update(state, now)
        spec = state.spec
        per_epoch = self.model.steps_per_epoch(spec)
        done_steps = state.steps_done_at(now)
        done = done_steps / per_epoch
        epochs = self.estimated_epochs(spec)
        if epochs is None:
            epochs = int(done) + self.fallback_epochs
        return max(epochs - done, 1.0) * per_epoch

    def forget(self, job: JobSpec) -> None:
        self._points.pop(job.job_id, None)
        self._estimate.pop(job.job_id, None)


# ---------------------------------------------------------------------------------------
# The Pollux artifact's jobs
# ---------------------------------------------------------------------------------------


def pollux_workload(workload: Workload, truth: PolluxThroughput) -> Workload:
    """Pollux/Sia-format jobs made runnable with `PolluxThroughput`, as the artifact's
    Optimus baseline runs them: model ``<application>@<batch_size>``; work = the steps until
    the artifact completes the job at that fixed global batch; elastic from 1 GPU up to
    global batch // smallest local batch (ncf: 1 GPU), the artifact's `max_replicas`. The
    traced `num_replicas` is only kept as the request (clipped into those bounds)."""
    jobs = workload.jobs.copy()
    if "batch_size" not in jobs:
        raise ValueError("pollux_workload needs the 'batch_size' column of a Pollux/Sia CSV")
    models, steps, highs = [], [], []
    for app_name, batch in zip(jobs["model"], jobs["batch_size"], strict=True):
        model = f"{str(app_name).strip().lower()}@{int(batch)}"
        app, batch = truth.app(model)
        models.append(model)
        steps.append(app.total_steps(batch))
        highs.append(app.max_gpus(batch))
    return elastic_workload(
        workload,
        jobs,
        models,
        steps,
        highs,
        note="steps at the traced global batch until the Pollux artifact's "
        "last epoch (dlsched.perf.convergence.pollux_workload)",
        transform={"name": "pollux_workload", "profiles": truth.folder},
    )


def elastic_workload(
    workload: Workload,
    jobs: pd.DataFrame,
    models: Sequence[str],
    work: Sequence[float],
    highs: Sequence[float],
    note: str,
    transform: dict[str, object],
) -> Workload:
    """`jobs` (a copy of `workload.jobs`) given each job's model, work and elastic bounds
    1..high (the traced GPU count clipped into them), with provenance saying where the work
    came from (`note`) and which `transform` made it."""
    from dlsched.traces.workload import Workload

    high = np.asarray(highs, dtype=float)
    jobs["model"] = list(models)
    jobs["total_steps"] = np.asarray(work, dtype=float)
    jobs["duration"] = np.nan
    jobs["num_gpus"] = np.clip(jobs["num_gpus"].to_numpy(), 1, high).astype(int)
    jobs["min_gpus"] = 1.0
    jobs["max_gpus"] = high
    provenance = copy.deepcopy(workload.provenance)
    provenance["work"] = note
    provenance.setdefault("transforms", []).append(transform)
    return Workload(jobs, provenance)


class PolluxRemaining:
    """The remaining work the artifact's Optimus+Oracle sees (``optimus.py``): validated
    iterations from the job's current epoch to its completion epoch, at epoch granularity
    (``get_iteration(B, last) − get_iteration(B, epoch)``, 1 once past it). It is not the
    exact remaining step count: it ignores progress inside the current epoch and, because
    ``get_iteration(B, e)`` counts e + 1 epochs, it leaves out one epoch (half of a 2-epoch
    BERT job)."""

    def __init__(self, truth: PolluxThroughput) -> None:
        self.truth = truth
        self._bounds: dict[str | None, np.ndarray] = {}

    def __call__(self, state: JobState, now: float) -> float:
        spec = state.spec
        app, batch = self.truth.app(spec.model)
        bounds = self._bounds.get(spec.model)
        if bounds is None:
            bounds = self._bounds[spec.model] = np.cumsum(app.epoch_steps(batch))
        epoch = int(np.searchsorted(bounds, state.steps_done_at(now) * (1 + 1e-12), "right"))
        last = app.max_epochs - 1
        if last <= epoch:
            return 1.0
        return app.iterations(batch, last) - app.iterations(batch, epoch)
