"""`ScalingModel`: throughput for GPU types and counts nobody profiled.

rate(model, type, n, nodes) is the measured value when the profile has that allocation;
otherwise it is extrapolated from the nearest measured count m ≤ n of that model on that type,

    rate(n) = rate(m) · (n / m) · η(n) / η(m) · (inter-node factor if spread over nodes),

and, for a type the profile lacks, from the reference type scaled by per-type speed ratios.
η(n) = n^(−a) is the data-parallel efficiency curve; `a` and the inter-node factor are fitted
(geometric means) to the profile's multi-GPU entries, so they are measurements, not guesses.
A model the profile does not know runs at 1 step/s on one GPU of the reference type, which
makes duration-only traces usable: steps = duration × rate on the reference allocation.

A job without GPUs (``num_gpus`` 0, CPU/memory only) has no rate here: data-parallel scaling
says nothing of a job on no GPU, so `throughput` raises `UnknownModelError` (field
``num_gpus``) and the job is refused when the workload is loaded (skipped when lenient).
Such jobs run under ``throughput="duration"``, or with ``duration_<type>`` columns, which
are their rate on those types under any model.

The speed ratios of types outside the profile are *assumptions*: vendor peak dense FP16/BF16
tensor throughput relative to V100 (NVIDIA data sheets). Real training speedups are smaller
than peak ratios; pass `speed={...}` to use your own measurements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from dlsched.errors import UnknownModelError
from dlsched.perf.profile import ProfileTable

# Peak dense FP16/BF16 tensor TFLOPS from NVIDIA's data sheets (V100 SXM2 125, T4 65, A10 125,
# L4 121, A100 312, A800 312, H100 SXM 989, H800 SXM 989), as a ratio to V100. Assumptions.
ASSUMED_SPEED_VS_V100: dict[str, float] = {
    "t4": 65 / 125,
    "a10": 125 / 125,
    "l4": 121 / 125,
    "a100": 312 / 125,
    "a800": 312 / 125,
    "h100": 989 / 125,
    "h800": 989 / 125,
}


def no_gpu_rate(model_name: str, model: str | None) -> UnknownModelError:
    """The error of a throughput model that has no rate for a job without GPUs."""
    return UnknownModelError(
        f"asks for no GPU (num_gpus 0), and throughput model {model_name!r} has no rate "
        f"{'' if model is None else f'for model {model!r} '}on no GPU: use "
        "throughput='duration' (or give the job "
        "duration_<type> columns), or drop jobs without GPUs",
        "num_gpus",
    )


class ScalingModel:
    """Measured where measured, extrapolated elsewhere (see the module docstring)."""

    name = "scaling"

    def __init__(
        self,
        profile: ProfileTable | None = None,
        *,
        reference: str = "v100",
        speed: Mapping[str, float] | None = None,
        efficiency_exponent: float | None = None,
        inter_node_factor: float | None = None,
    ) -> None:
        self.profile = profile
        self.reference = reference.lower()
        self.speed: dict[str, float] = {self.reference: 1.0}
        self.speed.update({k: v for k, v in ASSUMED_SPEED_VS_V100.items()})
        if profile is not None:
            self.speed.update(_measured_speeds(profile, self.reference))
        if speed:
            self.speed.update({k.lower(): float(v) for k, v in speed.items()})
        fit_a, fit_inter = _fit_scaling(profile) if profile is not None else (0.1, 0.8)
        self.efficiency_exponent = fit_a if efficiency_exponent is None else efficiency_exponent
        self.inter_node_factor = fit_inter if inter_node_factor is None else inter_node_factor

    @classmethod
    def gavel(cls, **kwargs: Any) -> ScalingModel:
        """A scaling model anchored on Gavel's measured table (`kwargs` as for the class)."""
        return cls(ProfileTable.gavel(), **kwargs)

    def efficiency(self, n_gpus: int) -> float:
        """Per-GPU data-parallel efficiency η(n) = n^(−a)."""
        return n_gpus ** (-self.efficiency_exponent)

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        if n_gpus < 1:
            raise no_gpu_rate(self.name, model)
        profile = self.profile
        if profile is not None and model is not None and profile.knows_model(model):
            if colocated:
                return profile.throughput(model, gpu_type, n_gpus, n_nodes, colocated)
            if profile.has(model, gpu_type, n_gpus, n_nodes):
                return profile.throughput(model, gpu_type, n_gpus, n_nodes)
            base_type, base_n, base_rate = self._anchor(profile, model, gpu_type, n_gpus)
        elif colocated:
            return 0.0
        else:
            base_type, base_n, base_rate = self.reference, 1, 1.0
        if base_rate == 0.0:
            return 0.0
        rate = base_rate * (n_gpus / base_n) * self.efficiency(n_gpus) / self.efficiency(base_n)
        if base_type != gpu_type:
            rate *= self._speed(gpu_type) / self._speed(base_type)
        if n_nodes > 1:
            rate *= self.inter_node_factor
        return rate

    def reference_type(self, model: str | None) -> str | None:
        return self.reference

    def _anchor(
        self, profile: ProfileTable, model: str, gpu_type: str, n_gpus: int
    ) -> tuple[str, int, float]:
        """The measured (type, count, rate) of a known model to extrapolate from."""
        for anchor_type in (gpu_type, self.reference):
            counts = [m for m in profile.measured_counts(model, anchor_type) if m <= n_gpus]
            if counts:
                rate = profile.measured(model, anchor_type, counts[-1])
                if rate is not None:  # measured_counts lists measured counts only
                    return anchor_type, counts[-1], rate
        return self.reference, 1, 1.0

    def _speed(self, gpu_type: str) -> float:
        try:
            return self.speed[gpu_type]
        except KeyError:
            raise UnknownModelError(
                f"the scaling model has no speed ratio for GPU type {gpu_type!r} (it knows "
                f"{', '.join(sorted(self.speed))}); pass speed={{'{gpu_type}': <speed vs "
                f"{self.reference}>}}",
                "gpu_type",
            ) from None

    def __repr__(self) -> str:
        return (
            f"ScalingModel(reference={self.reference!r}, a={self.efficiency_exponent:.3f}, "
            f"inter_node={self.inter_node_factor:.3f})"
        )


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _measured_speeds(profile: ProfileTable, reference: str) -> dict[str, float]:
    """Each profiled type's single-GPU speed vs the reference: geomean over models."""
    out: dict[str, float] = {}
    for gpu_type in profile.gpu_types:
        ratios = []
        for model, t, n, consolidated, rate in profile.entries():
            if t != gpu_type or n != 1 or not consolidated or rate <= 0:
                continue
            ref = profile.measured(model, reference, 1)
            if ref:
                ratios.append(rate / ref)
        if ratios:
            out[gpu_type] = _geomean(ratios)
    return out


def _fit_scaling(profile: ProfileTable) -> tuple[float, float]:
    """Least-squares exponent a of η(n) = n^(−a), and the geomean inter-node factor."""
    num = den = 0.0
    inter: list[float] = []
    for model, t, n, consolidated, rate in profile.entries():
        if n == 1 or rate <= 0:
            continue
        single = profile.measured(model, t, 1)
        if not single:
            continue
        if consolidated:
            log_n = math.log(n)
            num += -math.log(rate / (n * single)) * log_n
            den += log_n * log_n
        else:
            together = profile.measured(model, t, n, True)
            if together:
                inter.append(rate / together)
    exponent = num / den if den else 0.1
    return exponent, (_geomean(inter) if inter else 1.0)
