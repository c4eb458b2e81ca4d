"""Performance models: the truth (`ThroughputModel`) and what policies see (`Estimator`)."""

from __future__ import annotations

from dlsched.perf.base import DurationModel, ThroughputModel
from dlsched.perf.estimator import NoisyEstimator, OracleEstimator
from dlsched.perf.learned import LearnedEstimator
from dlsched.perf.profile import ProfileTable
from dlsched.perf.scaling import ScalingModel

THROUGHPUT_MODELS = ("duration", "gavel", "scaling")


def make_throughput(spec: str | ThroughputModel) -> ThroughputModel:
    """A throughput model from its name (`duration`, `gavel`, `scaling`) or as given."""
    if not isinstance(spec, str):
        if not isinstance(spec, ThroughputModel):
            raise TypeError(
                f"throughput must be one of {THROUGHPUT_MODELS} or a ThroughputModel, got {spec!r}"
            )
        return spec
    name = spec.strip().lower()
    if name == "duration":
        return DurationModel()
    if name == "gavel":
        return ProfileTable.gavel()
    if name == "scaling":
        return ScalingModel.gavel()
    raise ValueError(
        f"unknown throughput model {spec!r}; choose one of "
        f"{', '.join(THROUGHPUT_MODELS)} or pass a ThroughputModel"
    )


def make_estimator(spec: str | OracleEstimator) -> OracleEstimator:
    """An estimator from `"oracle"`, `"noisy"`, `"noisy:<sigma>"`, `"learned"`,
    `"learned:<prior>"` (a throughput model name, e.g. `learned:scaling`), or as given."""
    if isinstance(spec, OracleEstimator):
        return spec
    if not isinstance(spec, str):
        raise TypeError(
            f"estimator must be 'oracle', 'noisy[:sigma]' or an estimator, got {spec!r}"
        )
    name, _, arg = spec.strip().lower().partition(":")
    if name == "oracle" and not arg:
        return OracleEstimator()
    if name == "noisy":
        try:
            return NoisyEstimator(float(arg)) if arg else NoisyEstimator()
        except ValueError:
            raise ValueError(
                f"estimator {spec!r}: the sigma after ':' must be a number >= 0"
            ) from None
    if name == "learned":
        if arg and arg not in ("agnostic", *THROUGHPUT_MODELS):
            raise ValueError(
                f"estimator {spec!r}: the prior after ':' must be 'agnostic' or "
                f"one of {', '.join(THROUGHPUT_MODELS)}"
            )
        return LearnedEstimator(arg or "agnostic")
    raise ValueError(
        f"unknown estimator {spec!r}; choose 'oracle', 'noisy', 'noisy:<sigma>', "
        "'learned' or 'learned:<prior>'"
    )


__all__ = [
    "DurationModel",
    "LearnedEstimator",
    "NoisyEstimator",
    "OracleEstimator",
    "ProfileTable",
    "ScalingModel",
    "ThroughputModel",
    "make_estimator",
    "make_throughput",
]
