"""A gradient-boosted duration predictor over the trace's own columns.

Helios (Hu et al., SC '21, §5) predicts durations with a gradient-boosted tree model
(LightGBM) over job features; this is the same kind of model with scikit-learn's
`HistGradientBoostingRegressor` (install the ``predict`` extra: ``pip install
'dlsched[predict]'``; scikit-learn is imported when a run starts, not before). Features:
`dlsched.predict.features` (user, VC, job-name tokens as categories; GPU count; submit hour
and weekday). The target is log(1 + duration): durations span six orders of magnitude, and
the error that matters to a scheduler is relative.

Rolling protocol: the model is refitted on the jobs finished so far every ``refit_every``
completions (default 100), on at most the ``max_train`` (default 20,000) most recent ones;
until ``min_train`` (default 50) jobs have finished, the `fallback` predictor (Helios'
history rules by default, fed every completion) answers. Seeded (``random_state``) and
without early stopping, so runs repeat.
"""

from __future__ import annotations

import importlib.util
import math
from collections import deque
from typing import Any

from dlsched.errors import ConfigError
from dlsched.predict.base import FinishedJob, JobFeatures, Predictor
from dlsched.predict.features import CATEGORICAL, FeatureEncoder

_NEEDS_SKLEARN = (
    "the gbdt predictor needs scikit-learn: pip install 'dlsched[predict]' "
    "(or choose the helios predictor, estimator predict:helios)"
)


class GradientBoostedPredictor(Predictor):
    """scikit-learn's HistGradientBoostingRegressor on log duration, refitted on a schedule."""

    name = "gbdt"

    def __init__(
        self,
        *,
        refit_every: int = 100,
        min_train: int = 50,
        max_train: int = 20_000,
        max_iter: int = 100,
        learning_rate: float = 0.1,
        random_state: int = 0,
        fallback: str = "helios",
        n_threads: int = 1,
    ) -> None:
        if refit_every < 1 or min_train < 2 or max_train < min_train:
            raise ValueError(
                "gbdt predictor: refit_every must be >= 1, min_train >= 2 and "
                "max_train >= min_train"
            )
        if importlib.util.find_spec("sklearn") is None:  # refused before a trace is read
            raise ConfigError(_NEEDS_SKLEARN)
        self.refit_every = refit_every
        self.min_train = min_train
        self.max_train = max_train
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.fallback = fallback
        self.n_threads = n_threads

    def start(self) -> None:
        from dlsched.predict import get

        try:
            from sklearn.ensemble import HistGradientBoostingRegressor
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError(_NEEDS_SKLEARN) from exc
        self._make_model = lambda: HistGradientBoostingRegressor(
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            categorical_features=list(CATEGORICAL),
            early_stopping=False,
            random_state=self.random_state,
        )
        from threadpoolctl import ThreadpoolController

        controller = ThreadpoolController()  # (finds the loaded libraries once)
        self._threads = lambda: controller.limit(limits=self.n_threads, user_api="openmp")
        self._fallback = get(self.fallback)
        self._fallback.start()
        self._encoder = FeatureEncoder()
        self._history: deque[FinishedJob] = deque(maxlen=self.max_train)
        self._model: Any = None
        self._cache: dict[tuple[float, ...], float] = {}  # feature row → this fit's answer
        self._since_fit = 0
        self.fits = 0

    def observe(self, record: FinishedJob) -> None:
        self._fallback.observe(record)
        self._encoder.learn(record.features)
        self._history.append(record)
        self._since_fit += 1
        if len(self._history) >= self.min_train and (
            self._model is None or self._since_fit >= self.refit_every
        ):
            self._fit()

    def _fit(self) -> None:
        import numpy as np

        encoder = self._encoder
        x = np.array([encoder.row(r.features) for r in self._history], dtype=float)
        y = np.log1p(np.array([r.duration_s for r in self._history], dtype=float))
        model = self._make_model()
        with self._threads():
            model.fit(x, y)
        self._model = model
        self._cache.clear()
        self._since_fit = 0
        self.fits += 1

    def predict(self, features: JobFeatures, now: float) -> float:
        if self._model is None:
            return self._fallback.predict(features, now)
        import numpy as np

        # jobs with equal features get equal answers until the next refit: ask the model once
        row = tuple(-1.0 if v != v else v for v in self._encoder.row(features))  # NaN: -1
        found = self._cache.get(row)
        if found is None:
            with self._threads():
                log_duration = float(self._model.predict(np.array([row], dtype=float))[0])
            found = self._cache[row] = max(1.0, math.expm1(log_duration))
        return found

    def __repr__(self) -> str:
        return (
            f"GradientBoostedPredictor(refit_every={self.refit_every}, fallback={self.fallback!r})"
        )
