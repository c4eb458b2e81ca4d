"""QSSF (Helios, SC '21 §5): the smallest predicted GPU-time first, strict order; from the
API, the CLI and an experiment YAML."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import dlsched
from dlsched.cli import main
from dlsched.experiments.config import parse_experiment
from dlsched.experiments.runner import simulate_config


def cluster() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}
    )


def times(result: dlsched.SimulationResult) -> dict[object, tuple[float, float]]:
    jobs = result.jobs
    return {
        j: (s, f)
        for j, s, f in zip(jobs["job_id"], jobs["start_time"], jobs["finish_time"], strict=True)
    }


# a holds all 4 GPUs 0..100. Waiting at 100: b (4 GPUs × 60 s = 240 GPU-s), c (1 GPU × 100 s
# = 100 GPU-s). SJF (by duration) starts b first; QSSF (by GPU-time) starts c first.
ORDER = pd.DataFrame(
    [("a", 0, 4, 100.0), ("b", 1, 4, 60.0), ("c", 2, 1, 100.0)],
    columns=["job_id", "submit_time", "num_gpus", "duration"],
)


def test_qssf_orders_by_gpu_time_not_duration():
    """SJF: b 100→160, c 160→260. QSSF: c 100→200; b (4 GPUs) waits for c: 200→260."""
    sjf = times(dlsched.simulate(ORDER, cluster(), policy="sjf"))
    qssf = times(dlsched.simulate(ORDER, cluster(), policy="qssf"))
    assert sjf["b"] == (100.0, 160.0) and sjf["c"] == (160.0, 260.0)
    assert qssf["c"] == (100.0, 200.0) and qssf["b"] == (200.0, 260.0)


# a 0..100 on 4 GPUs. Waiting: c (2 GPUs × 100 s = 200 GPU-s), b (4 × 60 = 240),
# e (1 × 500 = 500). At 100, c starts on 2 GPUs; b does not fit.
BLOCK = pd.DataFrame(
    [("a", 0, 4, 100.0), ("b", 1, 4, 60.0), ("c", 2, 2, 100.0), ("e", 3, 1, 500.0)],
    columns=["job_id", "submit_time", "num_gpus", "duration"],
)


def test_qssf_is_strict_order_and_backfill_is_an_option():
    """Strict (the artifact's `break`): e waits behind b although 2 GPUs are free:
    c 100→200, b 200→260, e 260→760. With backfill=True e starts at 100 and b waits for
    both: e 100→600, b 600→660."""
    strict = times(dlsched.simulate(BLOCK, cluster(), policy="qssf"))
    assert strict["c"] == (100.0, 200.0)
    assert strict["b"] == (200.0, 260.0)
    assert strict["e"] == (260.0, 760.0)
    loose = times(dlsched.simulate(BLOCK, cluster(), policy="qssf", backfill=True))
    assert loose["e"] == (100.0, 600.0)
    assert loose["b"] == (600.0, 660.0)


def test_qssf_with_a_predictor_from_the_cli(capsys):
    """`dlsched replay --policy qssf --estimator predict:helios` runs (Tiresias 60 jobs) and
    reports the predictor's error."""
    code = main(
        [
            "replay",
            "--trace",
            "traces/tiresias_60_job.csv",
            "--cluster",
            "tiresias-60",
            "--policy",
            "qssf",
            "--estimator",
            "predict:helios",
            "--json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["jobs_completed"] == 60
    assert summary["prediction_jobs"] == 60
    assert summary["prediction_mae_s"] > 0


def test_qssf_with_a_predictor_from_yaml():
    """An experiment with `estimator: predict:helios` and policy qssf resolves and runs."""
    experiment = parse_experiment(
        {
            "cluster": "tiresias-60",
            "workload": {"trace": "traces/tiresias_60_job.csv"},
            "estimator": "predict:helios",
            "policies": ["qssf", {"name": "per_vc", "params": {"inner": "qssf"}}],
        }
    )
    runs = list(experiment.runs.values())
    assert {run.config["estimator"]["name"] for run in runs} == {"predict:helios"}
    result = simulate_config(runs[0].config)
    assert result.summary()["prediction_jobs"] == 60


def test_predictor_parameters_from_yaml():
    """`estimator: {name: predict:helios, params: {...}}` gives the predictor its
    parameters; a misspelt one is an error naming the key."""
    from dlsched.errors import ConfigError
    from dlsched.experiments.runner import build_estimator

    base = {
        "cluster": "tiresias-60",
        "workload": {"trace": "traces/tiresias_60_job.csv"},
        "policies": ["qssf"],
    }
    experiment = parse_experiment(
        {**base, "estimator": {"name": "predict:helios", "params": {"vc_fallback": True}}}
    )
    (run,) = experiment.runs.values()
    estimator = build_estimator(run.config["estimator"])
    assert estimator.predictor.vc_fallback is True
    with pytest.raises(ConfigError, match="key 'estimator.params'.*vc_fallbak"):
        parse_experiment(
            {**base, "estimator": {"name": "predict:helios", "params": {"vc_fallbak": 1}}}
        )
