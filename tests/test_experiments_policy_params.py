"""Experiment files: a policy's own parameters and cluster files read from disk."""

from __future__ import annotations

import pytest
from experiment_helpers import write_experiment

from dlsched.errors import ConfigError
from dlsched.experiments import load_experiment, simulate_config


def test_a_policy_seed_parameter_does_not_collide_with_the_run_seed(tmp_path):
    """`params: {seed: 3}` on a Gavel policy runs (it used to crash with a TypeError)."""
    path = write_experiment(
        tmp_path,
        policies=[{"name": "max_min_fairness", "params": {"seed": 3}}],
        seeds=1,
        sweep=None,
    )
    (run,) = load_experiment(path).runs.values()
    config = run.config
    result = simulate_config(config)
    assert result.summary()["jobs_completed"] == 6
    assert result.meta["policy_params"] == {"seed": "3"}
    assert result.meta["seed"] == config["seed"]


def test_a_binary_cluster_file_is_one_error_naming_it(tmp_path):
    """A cluster file that is not text is a ConfigError naming the file, not a decode error."""
    (tmp_path / "bad.yaml").write_bytes(b"\xff\xfe\x00\x81name: x\n")
    path = write_experiment(tmp_path, cluster="bad.yaml")
    with pytest.raises(ConfigError, match="bad.yaml"):
        load_experiment(path)


def test_transforms_are_a_registry_like_every_plugin_family():
    """Experiment transforms are found by name in a Registry, with a did-you-mean."""
    from dlsched.experiments.transforms import TRANSFORMS
    from dlsched.registry import Registry

    assert isinstance(TRANSFORMS, Registry)
    assert "head" in TRANSFORMS
    with pytest.raises(ValueError, match="did you mean 'head'"):
        TRANSFORMS.get("hed")
