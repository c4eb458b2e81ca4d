"""The goodput model (perf/goodput.py) and progress-dependent rates in the engine."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pytest

from dlsched.errors import ConfigError
from dlsched.perf.goodput import GoodputModel, PerfParams, fit_perf_params, profile_type

SHARED = Path(__file__).resolve().parents[2] / "shared"
PROFILES = SHARED / "traces" / "sia_pollux" / "sia" / "traces"
needs_profiles = pytest.mark.skipif(
    not PROFILES.is_dir(), reason="needs ../shared/traces/sia_pollux"
)


@functools.cache
def _model(flavor: str = "sia", adaptive: bool = False) -> GoodputModel:
    return GoodputModel(PROFILES, flavor=flavor, adaptive=adaptive)


def test_profile_type_maps_user_names():
    """Cluster type names as users write them map to the profiles' short names."""
    assert [profile_type(t) for t in ("T4", "RTX2080Ti", "A100", "RTX6000", "V100")] == [
        "t4",
        "rtx",
        "dgx",
        "quad",
        "v100",
    ]
    assert profile_type("H100") is None


def test_perf_params_fit_recovers_its_own_form():
    """Fitting Pollux's form to times it generated gives those times back."""
    truth = PerfParams(0.02, 0.001, 0.05, 0.004, 0.01, 0.001, 2.0)
    nodes = np.array([1, 1, 1, 2, 2, 4, 1, 1, 2, 4], dtype=float)
    gpus = np.array([1, 2, 4, 2, 8, 16, 1, 4, 4, 8], dtype=float)
    bsz = np.array([32, 32, 32, 64, 64, 64, 128, 128, 128, 128], dtype=float)
    step = truth.step_time(nodes, gpus, bsz)
    sync = step - truth.compute_time(bsz)
    fitted = fit_perf_params(nodes, gpus, bsz, step, sync)
    assert np.allclose(fitted.step_time(nodes, gpus, bsz), step, rtol=0.05)


@needs_profiles
def test_fixed_batch_matches_pollux_throughput_run_time():
    """A fixed-batch Pollux job takes exactly PolluxThroughput's time when k divides B."""
    from dlsched.perf.ps_speed import PolluxThroughput

    ours = _model("pollux")
    theirs = PolluxThroughput(PROFILES, applications=("cifar10", "bert"))
    for model, k, nodes in (("cifar10@2048", 8, 2), ("cifar10@128", 1, 1), ("bert@96", 4, 1)):
        app, batch = theirs.app(model)
        expected = app.total_steps(batch) / theirs.throughput(model, "t4", k, nodes)
        assert ours.target(model) / ours.throughput(model, "t4", k, nodes) == pytest.approx(
            expected, rel=1e-12
        )


@needs_profiles
def test_rate_from_is_piecewise_by_epoch():
    """rate_from gives each epoch's rate up to the epoch's end, then the next one's."""
    model = _model()
    conv = model.convergence("cifar10")
    rate0, until0 = model.rate_from("cifar10@2048", "T4", 4, 1, 0.0)
    assert until0 == conv.bounds[1]
    rate1, until1 = model.rate_from("cifar10@2048", "T4", 4, 1, until0)
    assert until1 == conv.bounds[2] and rate1 != rate0
    _, last = model.rate_from("cifar10@2048", "T4", 4, 1, conv.target)
    assert last == math.inf


@needs_profiles
def test_adaptive_goodput_is_at_least_the_fixed_one():
    """The adaptive agent's batch is never worse than the traced one it may also pick."""
    fixed, adaptive = _model(), _model(adaptive=True)
    for t in ("t4", "rtx", "a100"):
        assert adaptive.goodput("cifar10@128", t, 4, 1) >= fixed.goodput("cifar10@128", t, 4, 1)


@needs_profiles
def test_unknown_gpu_type_names_it():
    """A GPU type without a profile is an error that names it."""
    with pytest.raises(ConfigError, match="'h200'"):
        _model().throughput("cifar10@128", "h200", 1)
