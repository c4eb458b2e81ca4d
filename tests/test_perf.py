"""Throughput models and estimators."""

import math

import numpy as np
import pytest

from dlsched.cluster import Cluster
from dlsched.errors import UnknownModelError
from dlsched.jobs import JobSpec, JobState
from dlsched.perf import (
    DurationModel,
    NoisyEstimator,
    OracleEstimator,
    ProfileTable,
    ScalingModel,
    make_estimator,
    make_throughput,
)
from dlsched.perf.rates import JobRates

RESNET18 = "ResNet-18 (batch size 16)"


@pytest.fixture(scope="module")
def gavel():
    return ProfileTable.gavel()


def test_gavel_table_values_match_the_published_json(gavel):
    """ResNet-18 bs16 on one GPU: 4.8 (K80), 35.9 (P100), 32.4 (V100) steps/s."""
    assert gavel.throughput(RESNET18, "k80", 1) == pytest.approx(4.8, abs=0.05)
    assert gavel.throughput(RESNET18, "p100", 1) == pytest.approx(35.9, abs=0.05)
    assert gavel.throughput(RESNET18, "v100", 1) == pytest.approx(32.35, abs=0.01)


def test_gavel_names_match_case_insensitively(gavel):
    """Model names are matched without regard to case."""
    assert gavel.throughput(RESNET18.upper(), "v100", 1) == gavel.throughput(RESNET18, "v100", 1)


def test_spread_placement_uses_unconsolidated_rates(gavel):
    """A job spread over nodes gets the table's `v100_unconsolidated` rate."""
    import gzip
    import json
    from importlib import resources

    raw = resources.files("dlsched.data") / "gavel_simulation_throughputs.json.gz"
    table = json.loads(gzip.decompress(raw.read_bytes()))
    model = "ResNet-50 (batch size 64)"
    expected = table["v100_unconsolidated"][f"('{model}', 4)"]["null"]
    assert gavel.throughput(model, "v100", 4, n_nodes=4) == expected
    assert gavel.throughput(model, "v100", 4, n_nodes=1) != expected


def test_colocation_pair_rates(gavel):
    """Two jobs sharing a GPU get the measured pair rate; an unknown pair gets 0."""
    alone = gavel.throughput(RESNET18, "v100", 1)
    shared = gavel.throughput(RESNET18, "v100", 1, colocated=[("ResNet-18 (batch size 64)", 1)])
    assert 0 < shared <= alone
    assert gavel.throughput(RESNET18, "v100", 1, colocated=[("A", 1), ("B", 1)]) == 0.0


def test_unknown_model_and_type_name_the_field(gavel):
    """Unknown models and types raise UnknownModelError saying which field is wrong."""
    with pytest.raises(UnknownModelError) as err:
        gavel.throughput("GPT-5", "v100", 1)
    assert err.value.field == "model" and "GPT-5" in str(err.value)
    with pytest.raises(UnknownModelError) as err:
        gavel.throughput(RESNET18, "h100", 1)
    assert err.value.field == "gpu_type"
    with pytest.raises(UnknownModelError, match="model name"):
        gavel.throughput(None, "v100", 1)


def test_scaling_returns_measured_values_where_measured(gavel):
    """Where the table measured an allocation, the scaling model returns it unchanged."""
    scaling = ScalingModel(gavel)
    for n in (1, 2, 4, 8):
        assert scaling.throughput(RESNET18, "v100", n) == gavel.throughput(RESNET18, "v100", n)


def test_scaling_extrapolates_counts_from_the_largest_measured(gavel):
    """16 GPUs = rate(8) × 2 × η(16)/η(8): more than 8's rate, less than twice it."""
    scaling = ScalingModel(gavel)
    eight = gavel.throughput(RESNET18, "v100", 8)
    sixteen = scaling.throughput(RESNET18, "v100", 16)
    assert sixteen == pytest.approx(eight * 2 * scaling.efficiency(16) / scaling.efficiency(8))
    assert eight < sixteen < 2 * eight


def test_scaling_extrapolates_types_by_speed_ratio(gavel):
    """An unprofiled type runs at the reference rate × its speed ratio."""
    scaling = ScalingModel(gavel, speed={"a100": 2.0})
    assert scaling.throughput(RESNET18, "a100", 1) == pytest.approx(
        2.0 * gavel.throughput(RESNET18, "v100", 1)
    )


def test_scaling_fits_efficiency_below_one(gavel):
    """The fitted per-GPU efficiency decreases with GPU count; spreading costs throughput."""
    scaling = ScalingModel(gavel)
    assert 0 < scaling.efficiency_exponent < 1
    assert 0 < scaling.inter_node_factor < 1


def test_scaling_unknown_type_asks_for_a_speed(gavel):
    """A type with no speed ratio is an error that says how to supply one."""
    with pytest.raises(UnknownModelError, match="speed="):
        ScalingModel(gavel).throughput(RESNET18, "mi300", 1)


def test_scaling_unknown_model_is_one_step_per_second_on_reference():
    """A model no profile knows runs at 1 step/s on one reference GPU."""
    scaling = ScalingModel.gavel()
    assert scaling.throughput("my-model", "v100", 1) == 1.0


def test_duration_model_is_type_agnostic():
    """The duration model runs everything at 1 step/s."""
    assert DurationModel().throughput(None, "k80", 8, 2) == 1.0


def test_make_throughput_and_estimator_by_name():
    """Names resolve; unknown names list the choices."""
    assert make_throughput("duration").name == "duration"
    assert make_throughput("gavel").name == "gavel"
    assert isinstance(make_estimator("noisy:0.2"), NoisyEstimator)
    assert make_estimator("noisy:0.2").sigma == 0.2
    with pytest.raises(ValueError, match="duration"):
        make_throughput("magic")
    with pytest.raises(ValueError, match="oracle"):
        make_estimator("psychic")


def _bound(estimator, seed=0, n_jobs=50):
    cluster = Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}
    )
    specs = [
        JobSpec(index=i, job_id=i, submit_time=0.0, num_gpus=1, total_steps=100.0 + i)
        for i in range(n_jobs)
    ]
    estimator.bind(JobRates(DurationModel()), specs, cluster, np.random.default_rng(seed))
    return estimator, specs


def test_oracle_sees_the_truth():
    """The oracle's duration is the true work over the true rate."""
    oracle, specs = _bound(OracleEstimator())
    assert oracle.duration(specs[3]) == 103.0
    assert oracle.remaining_time(JobState(specs[3]), 0.0) == 103.0


def test_noisy_estimator_is_seeded_and_lognormal():
    """Same seed → same errors; different seed → different; log-errors have sd ≈ sigma."""
    a, specs = _bound(NoisyEstimator(0.5), seed=1, n_jobs=4000)
    b, _ = _bound(NoisyEstimator(0.5), seed=1, n_jobs=4000)
    c, _ = _bound(NoisyEstimator(0.5), seed=2, n_jobs=4000)
    ea = [a.total_steps(s) for s in specs]
    assert ea == [b.total_steps(s) for s in specs]
    assert ea != [c.total_steps(s) for s in specs]
    log_errors = [math.log(e / s.total_steps) for e, s in zip(ea, specs, strict=True)]
    assert np.std(log_errors) == pytest.approx(0.5, rel=0.05)


def test_overhead_presets_by_name():
    """Presets resolve by name; an unknown name lists the presets."""
    from dlsched.overheads import make_overheads

    assert make_overheads("pollux").restart_s == 30.0
    assert make_overheads("tiresias-sim").restart_s == 0.0
    assert make_overheads(None, 12.0).restart_s == 12.0
    with pytest.raises(ValueError, match="pollux"):
        make_overheads("nope")


def test_sia_preset_charges_each_models_restart_from_the_first_start():
    """Sia's per-model restart applies to goodput jobs ('<model>@<batch>') and to first starts."""
    from dlsched.overheads import make_overheads

    sia = make_overheads("sia")
    bert = JobSpec(
        index=0, job_id="a", submit_time=0.0, num_gpus=1, total_steps=1.0, model="bert@12"
    )
    other = JobSpec(
        index=1, job_id="b", submit_time=0.0, num_gpus=1, total_steps=1.0, model="resnet50"
    )
    assert (sia.restart(bert), sia.first_start(bert)) == (120.0, 120.0)
    assert (sia.restart(other), sia.first_start(other)) == (30.0, 30.0)
    assert make_overheads("pollux").first_start(bert) == 30.0
