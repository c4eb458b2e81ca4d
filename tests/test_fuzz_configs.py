"""A fuzzer over cluster and experiment files: a clear `ConfigError`, or a valid config.

Each example takes a small cluster or experiment that loads, and spoils one value at a
random key path with NaN, ±inf, a huge or negative number, zero, a fraction, true/false, a
list, a mapping, text or null — written as YAML (so through `dlsched.safeyaml`, the loader
every config file goes through). Loading must then either raise `ConfigError` (a
`DlschedError`) whose message names the file, or give a config whose every number is finite
and in range; never another exception, never a hang. The trace loaders have their own
fuzzer (`tests/test_fuzz_traces.py`).
"""

from __future__ import annotations

import copy
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.errors import DlschedError
from dlsched.experiments import load_experiment

CLUSTER: dict[str, Any] = {
    "name": "fuzz",
    "description": "two node groups, two VCs",
    "gpu_types": {"V100": {"memory_gb": 16, "cost_per_hour": 2.5}},
    "racks": 2,
    "nodes": [
        {"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "cpus": 32, "host_memory_gb": 256},
        {"gpu_type": "K80", "count": 1, "gpus_per_node": 8},
    ],
    "vcs": [{"name": "a", "nodes": 1}, {"name": "b", "gpus": 4}],
}

TRACE = "job_id,submit_time,num_gpus,duration\n1,0,1,100\n2,10,2,50\n3,20,4,30\n"

EXPERIMENT: dict[str, Any] = {
    "name": "fuzz",
    "cluster": copy.deepcopy(CLUSTER),
    "workload": {"trace": "t.csv", "transforms": [{"sample": 2}]},
    "estimator": "noisy:0.5",
    "restart_overhead_s": 10,
    "policies": [
        "fifo",
        {"name": "srtf", "label": "s"},
        {"name": "fifo", "label": "fb", "params": {"backfill": "greedy"}},
    ],
    "seed": 3,
    "seeds": 2,
    "sweep": {"workload.arrival_rate_scale": [1.0, 2.0]},
}

#: Examples per test; ``DLSCHED_HYPOTHESIS_EXAMPLES=<n>`` runs n (see tests/conftest.py).
EXAMPLES = int(os.environ.get("DLSCHED_HYPOTHESIS_EXAMPLES", "").strip() or 150)

BAD_VALUES = st.sampled_from(
    [
        math.nan,
        math.inf,
        -math.inf,
        1e300,
        1.6e18,
        2**63,
        -1,
        -0.5,
        0,
        0.5,
        True,
        False,
        None,
        "",
        "x",
        "1e3",
        [],
        [1, 2],
        {},
        {"a": 1},
    ]
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path into `value` (mappings and lists)."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*prefix, i))
    return out


def _spoil(base: dict[str, Any], path: tuple, bad: Any) -> dict[str, Any]:
    spoiled = copy.deepcopy(base)
    target: Any = spoiled
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = bad
    return spoiled


def _finite_numbers(value: Any) -> bool:
    """Whether every number held in `value` (a loaded config object's fields) is finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite_numbers(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite_numbers(v) for v in value)
    return True


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), bad=BAD_VALUES)
def test_a_spoiled_cluster_file_is_a_clear_error_or_a_valid_cluster(data, bad):
    """One value of a cluster file spoiled: ConfigError naming the file, or a sound cluster."""
    path_in = data.draw(st.sampled_from(_paths(CLUSTER)))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.yaml"
        path.write_text(yaml.safe_dump(_spoil(CLUSTER, path_in, bad)))
        try:
            cluster = dlsched.load_cluster(path)
        except DlschedError as exc:
            assert str(path) in str(exc), str(exc)
            return
    assert cluster.num_gpus > 0
    assert all(len(node.gpu_ids) > 0 for node in cluster.nodes)
    for node in cluster.nodes:
        for value in (node.cpus, node.memory_gb):
            assert value is None or (math.isfinite(value) and value > 0), node
    for gpu_type in cluster.gpu_types.values():
        assert _finite_numbers([gpu_type.memory_gb, gpu_type.cost_per_hour]), gpu_type
    for vc in cluster.vcs:
        assert vc.quota_gpus is None or vc.quota_gpus >= 0


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), bad=BAD_VALUES)
def test_a_spoiled_experiment_file_is_a_clear_error_or_a_valid_grid(data, bad):
    """One value of an experiment file spoiled: ConfigError naming the file, or a grid of
    runs whose configs hold only finite numbers (inf only as a policy parameter)."""
    path_in = data.draw(st.sampled_from(_paths(EXPERIMENT)))
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "t.csv").write_text(TRACE)
        path = Path(folder) / "e.yaml"
        path.write_text(yaml.safe_dump(_spoil(EXPERIMENT, path_in, bad)))
        try:
            experiment = load_experiment(path)
        except DlschedError as exc:
            assert str(path) in str(exc) or "e.yaml" in str(exc), str(exc)
            return
    assert experiment.runs
    for run in experiment.runs.values():
        config = dict(run.config)
        params = config.pop("policy", {}).get("params", {})
        assert _finite_numbers(config), config
        assert all(v == v for v in params.values() if isinstance(v, float)), params
