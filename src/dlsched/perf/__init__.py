"""Performance models: the truth (`ThroughputModel`) and what policies see (`Estimator`)."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dlsched.errors import did_you_mean
from dlsched.perf.base import DurationModel, ThroughputModel
from dlsched.perf.profile import ProfileTable
from dlsched.perf.scaling import ScalingModel
from dlsched.registry import Registry

if TYPE_CHECKING:
    from dlsched.perf import estimator, goodput, learned, rates  # noqa: F401
    from dlsched.perf.estimator import NoisyEstimator, OracleEstimator
    from dlsched.perf.goodput import GoodputEstimator, GoodputModel
    from dlsched.perf.learned import LearnedEstimator

# The estimators need numpy: they, and the modules that define them, are imported on first use
# (PEP 562), so that the model and estimator names are known without it (`dlsched --help`).
_LAZY_NAMES = {
    "GoodputEstimator": "goodput",
    "GoodputModel": "goodput",
    "LearnedEstimator": "learned",
    "NoisyEstimator": "estimator",
    "OracleEstimator": "estimator",
}
_LAZY_SUBMODULES = frozenset({"estimator", "goodput", "learned", "rates"})


def __getattr__(name: str) -> Any:
    """Import an estimator class, or the module that defines it, on its first use."""
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    elif name in _LAZY_SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The package's attributes, the ones not imported yet included."""
    return sorted({*globals(), *_LAZY_NAMES, *_LAZY_SUBMODULES})


THROUGHPUT_MODELS: Registry[Callable[[], ThroughputModel]] = Registry(
    "throughput model", entry_point_group="dlsched.throughput_models"
)
"""Throughput model name → a factory with no arguments. Plugins: ``dlsched.throughput_models``."""
THROUGHPUT_MODELS.add("duration", DurationModel)
# The named tables are read-only once built: parse Gavel's table (~40 ms) once per process,
# not once per run (property tests and sweeps make thousands of small runs).
THROUGHPUT_MODELS.add("gavel", functools.cache(ProfileTable.gavel))
THROUGHPUT_MODELS.add("scaling", functools.cache(ScalingModel.gavel))


def _goodput() -> ThroughputModel:
    from dlsched.perf.goodput import goodput_model

    return goodput_model(None, "sia", False)


def _goodput_pollux() -> ThroughputModel:
    from dlsched.perf.goodput import goodput_model

    return goodput_model(None, "pollux", False)


# Pollux/Sia goodput (perf/goodput.py, needs ../shared); `simulate` picks the batch mode
# from the policy and reads the profiles beside the workload.
THROUGHPUT_MODELS.add("goodput", _goodput)
THROUGHPUT_MODELS.add("goodput-pollux", _goodput_pollux)


def _synergy() -> ThroughputModel:
    from dlsched.perf.synergy import SynergyModel

    return SynergyModel()


# Synergy (perf/synergy.py): a job's rate scaled by the CPU and memory it holds per GPU.
THROUGHPUT_MODELS.add("synergy", _synergy)


def _elasticflow() -> ThroughputModel:
    from dlsched.perf.elasticflow import elasticflow_profile

    return elasticflow_profile()


# The ElasticFlow artifact's T4 and A100 iterations/s (perf/elasticflow.py), parsed once.
THROUGHPUT_MODELS.add("elasticflow", functools.cache(_elasticflow))


def _oracle(spec: str, arg: str) -> OracleEstimator:
    from dlsched.perf.estimator import OracleEstimator

    if arg:
        raise ValueError(f"estimator {spec!r}: 'oracle' takes nothing after ':'")
    return OracleEstimator()


def _noisy(spec: str, arg: str) -> OracleEstimator:
    from dlsched.perf.estimator import NoisyEstimator

    try:
        return NoisyEstimator(float(arg)) if arg else NoisyEstimator()
    except ValueError:
        raise ValueError(
            f"estimator {spec!r}: the sigma after ':' must be a finite number >= 0"
        ) from None


def _learned(spec: str, arg: str) -> OracleEstimator:
    from dlsched.perf.learned import LearnedEstimator

    if arg and arg not in ("agnostic", *THROUGHPUT_MODELS):
        raise ValueError(
            f"estimator {spec!r}: the prior after ':' must be 'agnostic' or "
            f"one of {', '.join(THROUGHPUT_MODELS)}"
        )
    return LearnedEstimator(arg or "agnostic")


ESTIMATORS: Registry[Callable[[str, str], OracleEstimator]] = Registry(
    "estimator", entry_point_group="dlsched.estimators"
)
"""Estimator name → ``factory(spec, arg)``, where `spec` is the whole text (for messages) and
`arg` what follows ``name:`` (empty if nothing). Plugins: ``dlsched.estimators``."""
ESTIMATORS.add("oracle", _oracle)
ESTIMATORS.add("noisy", _noisy)
ESTIMATORS.add("learned", _learned)


def _goodput_estimator(spec: str, arg: str) -> OracleEstimator:
    from dlsched.perf import goodput

    if arg in ("", "oracle"):
        return goodput.GoodputEstimator()
    if arg == "learned":
        return goodput.LearnedGoodputEstimator()
    kind, _, sigma = arg.partition(":")
    if kind == "noisy":
        try:
            return (
                goodput.NoisyGoodputEstimator(float(sigma))
                if sigma
                else goodput.NoisyGoodputEstimator()
            )
        except ValueError:
            pass
    raise ValueError(
        f"estimator {spec!r}: after 'goodput:' give 'oracle', 'learned' or 'noisy[:<sigma>]' "
        "(sigma a finite number >= 0)"
    )


ESTIMATORS.add("goodput", _goodput_estimator)


def _predicting(spec: str, arg: str) -> OracleEstimator:
    from dlsched import predict
    from dlsched.perf.predicting import PredictingEstimator

    name = arg or "helios"
    if name not in predict.PREDICTORS:
        raise ValueError(
            f"estimator {spec!r}: unknown predictor {name!r}"
            f"{did_you_mean(name, predict.PREDICTORS)}; after 'predict:' give one of "
            f"{', '.join(predict.names())}"
        )
    return PredictingEstimator(name)


ESTIMATORS.add("predict", _predicting)


def _dynamic(spec: str, arg: str) -> OracleEstimator:
    from dlsched.perf.dynamic import KNOWN, DynamicEstimator

    if arg not in ("", *KNOWN):
        raise ValueError(
            f"estimator {spec!r}: after 'dynamic:' give {' or '.join(KNOWN)} (whether the "
            "batch-size schedules are known in advance or only as they happen)"
        )
    return DynamicEstimator(arg or "advance")


ESTIMATORS.add("dynamic", _dynamic)


def make_throughput(spec: str | ThroughputModel) -> ThroughputModel:
    """A throughput model from its name (`duration`, `gavel`, `scaling`, or a plugin's) or
    as given."""
    if not isinstance(spec, str):
        if not isinstance(spec, ThroughputModel):
            raise TypeError(
                f"throughput must be one of {', '.join(THROUGHPUT_MODELS)} or a "
                f"ThroughputModel, got {spec!r}"
            )
        return spec
    return THROUGHPUT_MODELS.get(spec.strip().lower())()


def make_estimator(spec: str | OracleEstimator) -> OracleEstimator:
    """An estimator from `"oracle"`, `"noisy"`, `"noisy:<sigma>"`, `"learned"`,
    `"learned:<prior>"` (a throughput model name, e.g. `learned:scaling`), `"goodput"`,
    `"goodput:learned"`, `"goodput:noisy[:<sigma>]"` (for the goodput truth),
    `"predict:<predictor>"` (work from a duration predictor, `dlsched.predict`),
    `"dynamic"`, `"dynamic:advance"`, `"dynamic:online"` (batch-size schedules known in
    advance or as they happen, `dlsched.perf.dynamic`), a plugin's name (`ESTIMATORS`), or
    as given."""
    from dlsched.perf.estimator import OracleEstimator

    if isinstance(spec, OracleEstimator):
        return spec
    if not isinstance(spec, str):
        raise TypeError(
            f"estimator must be 'oracle', 'noisy[:sigma]' or an estimator, got {spec!r}"
        )
    name, _, arg = spec.strip().lower().partition(":")
    if name not in ESTIMATORS:
        raise ValueError(
            f"unknown estimator {spec!r}{did_you_mean(name, ESTIMATORS)}; choose one of "
            f"{', '.join(ESTIMATORS)} ('noisy:<sigma>' and 'learned:<prior>' take an argument)"
        )
    return ESTIMATORS.get(name)(spec, arg)


__all__ = [
    "ESTIMATORS",
    "THROUGHPUT_MODELS",
    "DurationModel",
    "GoodputEstimator",
    "GoodputModel",
    "LearnedEstimator",
    "NoisyEstimator",
    "OracleEstimator",
    "ProfileTable",
    "ScalingModel",
    "ThroughputModel",
    "make_estimator",
    "make_throughput",
]
