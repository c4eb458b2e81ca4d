"""Horus' per-job GPU-utilisation predictor: a regression over model features, trained on
Lucid's single-job profiles.

Paper: Yeung et al., "Horus: Interference-Aware and Prediction-Based Scheduling in Deep
Learning Systems", IEEE TPDS 33(1), 2022 (§4: GPU utilisation and memory are predicted from
features of the model's computation graph, so that a new job needs no profiling run on a
reserved GPU). The authors' simulator (``matthewygf/GPUSchedule`` @ 4d4278c) takes each job's
predicted average/peak utilisation and peak memory as given inputs.

What is a stand-in here, honestly:
- The *features*. Horus extracts them from the computation graph (FLOPs, parameters, layer
  counts). dlsched has no graphs, so each model has two static features, `MODEL_FEATURES`:
  parameters (millions) and forward GFLOPs per sample at the dataset's input size. They are
  approximate textbook figures for the architecture as Lucid profiled it ([I], not measured
  from Lucid's code); with batch size and AMP they are the regression's inputs.
- The *training data*: Lucid's ``single_data.csv`` (66 rows: model, dataset, batch size,
  AMP → SM utilisation %, memory MiB, measured on one RTX 3090), not Horus' own benchmarks.
- The *regressor*: ridge regression (closed form, deterministic) on
  (log10 params, log10 GFLOPs × batch size, AMP, log2 batch size), standardised. Horus
  compares several regressors; this is the simplest that beats the mean.
- The *protocol*: leave-one-model-out. A model's prediction comes from a fit on every other
  model's rows (`UtilisationPredictor.profile(model)`), as for a model never seen before —
  the case Horus' prediction exists for. `evaluate()` reports the error of that protocol:
  on Lucid's table, MAE 20.0 utilisation points per row (the table's mean predicts with
  27.4), memory 2.2 GiB.

A job's profile is the mean over the model's measured (batch size, AMP) configurations: the
same averaging as the co-location truth (`dlsched.perf.colocation.LucidColocation`), since a
trace names a job's model but not its batch size.
"""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ModelFeatures:
    """Static features of a model (stand-ins for computation-graph features): parameters in
    millions and forward GFLOPs per sample at its dataset's input size."""

    params_m: float
    gflops: float


MODEL_FEATURES: dict[str, ModelFeatures] = {
    "bert": ModelFeatures(110.0, 22.0),  # BERT-base, SQuAD (384 tokens)
    "dcgan": ModelFeatures(3.6, 0.45),  # generator + discriminator, 64x64
    "efficientnet": ModelFeatures(4.0, 0.02),  # B0, CIFAR-10 32x32
    "lstm": ModelFeatures(28.0, 0.06),  # 2-layer word LM, Wikitext-2
    "mobilenetv2": ModelFeatures(2.2, 0.09),  # CIFAR-10 variant
    "mobilenetv3": ModelFeatures(5.4, 0.22),  # large, ImageNet 224x224
    "neumf": ModelFeatures(5.0, 0.0001),  # embeddings + MLP, MovieLens
    "ppo": ModelFeatures(0.01, 0.00002),  # small MLP policy, LunarLander
    "pointnet": ModelFeatures(3.5, 0.45),  # ShapeNet segmentation
    "resnet18": ModelFeatures(11.2, 0.56),  # CIFAR-10 variant
    "resnet50": ModelFeatures(25.6, 4.1),  # ImageNet 224x224
    "td3": ModelFeatures(0.2, 0.0002),  # actor + critics, BipedalWalker
    "transformer": ModelFeatures(60.0, 1.0),  # base, Multi30k
    "vgg": ModelFeatures(14.7, 0.31),  # VGG-16, CIFAR-10
}
"""Model (lower-case Lucid name) → features; approximate published figures [I]."""

RIDGE_ALPHA = 1.0
"""Ridge penalty on the standardised features [I]."""


def model_key(model: str | None) -> str:
    """A model's key: Lucid's name, lower-case, stripped ('' for none)."""
    return "" if model is None else model.strip().lower()


@dataclass(frozen=True)
class Profile:
    """A job's GPU profile: SM utilisation (%) and GPU memory (MiB)."""

    gpu_util: float
    gmem_mib: float


@dataclass(frozen=True)
class _Row:
    model: str
    batch_size: int
    amp: int
    gpu_util: float
    gmem: float


def _row_features(row: _Row, features: Mapping[str, ModelFeatures]) -> list[float]:
    f = features[row.model]
    return [
        math.log10(f.params_m),
        math.log10(f.gflops * row.batch_size),
        float(row.amp),
        math.log2(row.batch_size),
    ]


class _Ridge:
    """Ridge regression on standardised features, closed form."""

    def __init__(self, x: np.ndarray, y: np.ndarray, alpha: float) -> None:
        self.mean = x.mean(axis=0)
        scale = x.std(axis=0)
        self.scale = np.where(scale > 0, scale, 1.0)
        z = (x - self.mean) / self.scale
        self.intercept = float(y.mean())
        gram = z.T @ z + alpha * np.eye(z.shape[1])
        self.coef = np.linalg.solve(gram, z.T @ (y - self.intercept))

    def predict(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean) / self.scale) @ self.coef + self.intercept


class UtilisationPredictor:
    """Predicted GPU utilisation and memory per model, fitted leave-one-model-out on rows of
    Lucid's ``single_data.csv`` (see the module docstring)."""

    def __init__(
        self,
        rows: Iterable[Mapping[str, object]],
        features: Mapping[str, ModelFeatures] | None = None,
        alpha: float = RIDGE_ALPHA,
        source: str = "<rows>",
    ) -> None:
        self.features = {model_key(k): v for k, v in (features or MODEL_FEATURES).items()}
        if not alpha >= 0:
            raise ValueError(f"alpha must be >= 0, got {alpha!r}")
        self.alpha = float(alpha)
        self.source = source
        parsed: list[_Row] = []
        for i, row in enumerate(rows):
            try:
                item = _Row(
                    model_key(str(row["model"])),
                    int(str(row["batchsize"])),
                    int(str(row["amp"])),
                    float(str(row["gpu_util"])),
                    float(str(row["gmem"])),
                )
            except KeyError as missing:
                raise ValueError(f"{source}: row {i} has no column {missing}") from None
            if item.batch_size <= 0:
                raise ValueError(f"{source}: row {i}: batchsize must be > 0")
            if item.model not in self.features:
                raise ValueError(
                    f"{source}: row {i}: model {row['model']!r} has no features "
                    "(add it to `features`)"
                )
            parsed.append(item)
        if len({r.model for r in parsed}) < 3:
            raise ValueError(f"{source}: needs rows of at least 3 models to fit")
        self.rows = tuple(parsed)
        self._cache: dict[tuple[str, bool], Profile] = {}

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        features: Mapping[str, ModelFeatures] | None = None,
        alpha: float = RIDGE_ALPHA,
    ) -> UtilisationPredictor:
        """Read Lucid's ``single_data.csv`` (columns model, batchsize, amp, gpu_util, gmem)."""
        with open(path, newline="") as fh:
            return cls(list(csv.DictReader(fh)), features, alpha, source=str(path))

    @property
    def models(self) -> tuple[str, ...]:
        """The models measured in the table (keys), sorted."""
        return tuple(sorted({r.model for r in self.rows}))

    def knows(self, model: str | None) -> bool:
        """Whether a profile can be predicted for `model` (it has features)."""
        return model_key(model) in self.features

    def _fit(self, rows: Sequence[_Row]) -> tuple[_Ridge, _Ridge]:
        x = np.array([_row_features(r, self.features) for r in rows])
        util = _Ridge(x, np.array([r.gpu_util for r in rows]), self.alpha)
        mem = _Ridge(x, np.array([r.gmem for r in rows]), self.alpha)
        return util, mem

    def _configs(self, model: str) -> list[_Row]:
        """The model's measured configurations, or batch sizes 32/64/128 without AMP for a
        model with features but no rows."""
        own = [r for r in self.rows if r.model == model]
        return own or [_Row(model, b, 0, 0.0, 0.0) for b in (32, 64, 128)]

    def profile(self, model: str | None, holdout: bool = True) -> Profile:
        """The predicted profile of a `model` job: mean over its configurations of a fit on
        the table (without the model's own rows when `holdout`, the default)."""
        key = model_key(model)
        if key not in self.features:
            raise ValueError(f"model {model!r} has no features: no utilisation prediction")
        found = self._cache.get((key, holdout))
        if found is not None:
            return found
        train = [r for r in self.rows if not (holdout and r.model == key)]
        util, mem = self._fit(train)
        configs = self._configs(key)
        x = np.array([_row_features(r, self.features) for r in configs])
        u = float(np.clip(util.predict(x), 0.0, 100.0).mean())
        m = float(np.clip(mem.predict(x), 0.0, None).mean())
        found = self._cache[(key, holdout)] = Profile(u, m)
        return found

    def measured(self, model: str | None) -> Profile | None:
        """The table's mean profile of `model` (None when not measured): the oracle."""
        own = [r for r in self.rows if r.model == model_key(model)]
        if not own:
            return None
        return Profile(sum(r.gpu_util for r in own) / len(own), sum(r.gmem for r in own) / len(own))

    def evaluate(self) -> dict[str, float]:
        """Leave-one-model-out error per measured row: MAE of utilisation (points) and of
        memory (MiB), and the MAE of predicting every row by the table's mean utilisation."""
        errors_u: list[float] = []
        errors_m: list[float] = []
        for model in self.models:
            util, mem = self._fit([r for r in self.rows if r.model != model])
            own = [r for r in self.rows if r.model == model]
            x = np.array([_row_features(r, self.features) for r in own])
            pu = np.clip(util.predict(x), 0.0, 100.0)
            pm = np.clip(mem.predict(x), 0.0, None)
            errors_u += [abs(p - r.gpu_util) for p, r in zip(pu, own, strict=True)]
            errors_m += [abs(p - r.gmem) for p, r in zip(pm, own, strict=True)]
        mean_u = sum(r.gpu_util for r in self.rows) / len(self.rows)
        return {
            "util_mae": float(np.mean(errors_u)),
            "gmem_mae_mib": float(np.mean(errors_m)),
            "util_mae_of_mean": float(np.mean([abs(r.gpu_util - mean_u) for r in self.rows])),
            "rows": float(len(self.rows)),
        }

    def __repr__(self) -> str:
        return f"UtilisationPredictor({len(self.rows)} rows from {self.source})"
