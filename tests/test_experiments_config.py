"""Experiment files: validation, grid expansion, run keys and seeds."""

import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from experiment_helpers import TINY_CLUSTER, write_experiment

from dlsched.errors import ConfigError
from dlsched.experiments import (
    load_experiment,
    parse_experiment,
    run_key,
    run_seed,
    runner,
    simulate_config,
)
from dlsched.experiments.runner import build_workload
from dlsched.experiments.transforms import scale_arrivals
from dlsched.traces import validate_jobs


def test_grid_is_policies_times_sweep_times_seeds(tmp_path):
    """2 policies x 2 loads x 2 seeds = 8 cells, 8 distinct runs, in file order."""
    exp = load_experiment(write_experiment(tmp_path))
    assert len(exp.points) == 8 and len(exp.runs) == 8
    assert [
        (p.policy, p.replicate, dict(p.axes)["workload.arrival_rate_scale"]) for p in exp.points[:4]
    ] == [("fifo", 0, 1.0), ("fifo", 1, 1.0), ("srtf", 0, 1.0), ("srtf", 1, 1.0)]
    config = exp.runs[exp.points[-1].key].config
    assert config["workload"]["arrival_rate_scale"] == 2.0
    assert config["policy"] == {"name": "srtf", "params": {}}
    assert config["cluster"]["name"] == "one-node"
    assert config["workload"]["format"] == "canonical"  # "auto" is pinned at expansion


def test_two_sweep_axes_multiply(tmp_path):
    """Axes combine as a product; estimator noise is sweepable."""
    exp = load_experiment(
        write_experiment(
            tmp_path,
            estimator="noisy",
            seeds=1,
            sweep={"workload.arrival_rate_scale": [1, 2, 4], "estimator.sigma": [0.0, 0.5]},
        )
    )
    assert len(exp.points) == 2 * 3 * 2
    sigmas = {exp.runs[p.key].config["estimator"]["sigma"] for p in exp.points}
    assert sigmas == {0.0, 0.5}


def test_a_policy_that_does_not_take_a_swept_parameter_runs_once(tmp_path):
    """Sweeping fifo's backfill leaves srtf alone: its cells share one run per seed."""
    exp = load_experiment(
        write_experiment(tmp_path, seeds=1, sweep={"params.backfill": ["none", "greedy", "easy"]})
    )
    assert len(exp.points) == 6
    srtf_keys = {p.key for p in exp.points if p.policy == "srtf"}
    fifo_keys = {p.key for p in exp.points if p.policy == "fifo"}
    assert len(srtf_keys) == 1 and len(fifo_keys) == 3 and len(exp.runs) == 4


def test_replicates_share_seeds_across_policies_and_sweep_points(tmp_path):
    """Common random numbers: replicate r has one seed, child r of SeedSequence(seed)."""
    exp = load_experiment(write_experiment(tmp_path, seed=11, seeds=3))
    seeds = {(p.replicate, exp.runs[p.key].config["seed"]) for p in exp.points}
    assert seeds == {(r, run_seed(11, r)) for r in range(3)}
    child = np.random.SeedSequence(11).spawn(3)[2]
    assert run_seed(11, 2) == int(child.generate_state(1, dtype=np.uint32)[0])
    assert len({run_seed(11, r) for r in range(3)}) == 3


def test_adding_a_policy_keeps_every_existing_key(tmp_path):
    """Growing the grid never renames (and so never recomputes) a run."""
    before = load_experiment(write_experiment(tmp_path / "a"))
    after = load_experiment(write_experiment(tmp_path / "a", policies=["fifo", "srtf", "sjf"]))
    assert set(before.runs) < set(after.runs)


def test_key_ignores_where_the_trace_lies_but_not_what_it_holds(tmp_path):
    """Moving files keeps keys; changing one byte of the trace changes them."""
    first = load_experiment(write_experiment(tmp_path / "a"))
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    moved = load_experiment(tmp_path / "b" / "tiny.yaml")
    assert list(first.runs) == list(moved.runs)
    trace = tmp_path / "b" / "tiny.csv"
    trace.write_text(trace.read_text().replace("6,50,4,20,500", "6,50,4,21,500"))
    assert not set(first.runs) & set(load_experiment(tmp_path / "b" / "tiny.yaml").runs)


def test_equivalent_spellings_give_the_same_key(tmp_path):
    """1 and 1.0, 'noisy:0.5' and {name: noisy, sigma: 0.5}, auto and the detected format."""
    a = load_experiment(
        write_experiment(
            tmp_path,
            estimator="noisy:0.5",
            sweep=None,
            workload={"trace": "tiny.csv", "arrival_rate_scale": 1},
        )
    )
    b = load_experiment(
        write_experiment(
            tmp_path,
            estimator={"name": "noisy", "sigma": 0.5},
            sweep=None,
            workload={"trace": "tiny.csv", "format": "canonical"},
        )
    )
    assert list(a.runs) == list(b.runs)


def test_run_key_is_a_hash_of_the_canonical_config(tmp_path):
    """The key is 16 hex digits and changes with any field."""
    exp = load_experiment(write_experiment(tmp_path))
    config = dict(exp.runs[exp.points[0].key].config)
    assert run_key(config) == exp.points[0].key and len(run_key(config)) == 16
    assert run_key({**config, "restart_overhead_s": 5.0}) != run_key(config)


def test_bundled_trace_and_cluster_by_name(tmp_path):
    """A bundled trace and a bundled cluster can be named from anywhere."""
    path = tmp_path / "e.yaml"
    path.write_text("cluster: tiresias-60\nworkload: tiresias_60_job.csv\npolicies: fifo\n")
    exp = load_experiment(path)
    assert exp.name == "e" and len(exp.points) == 1
    config = next(iter(exp.runs.values())).config
    assert config["cluster"]["name"] == "tiresias-60"
    assert config["workload"]["trace"]["name"] == "tiresias_60_job.csv"


def test_policy_by_import_path(tmp_path):
    """`module:Class` names a policy of your own, with parameters."""
    exp = load_experiment(
        write_experiment(
            tmp_path,
            allow_imports=True,
            policies=[{"name": "experiment_helpers:SlowFifo", "params": {"delay_s": 0}}],
        )
    )
    assert exp.policies[0].label == "SlowFifo(delay_s=0)"


def test_yaml_tags_are_refused(tmp_path):
    """Files are read with yaml.safe_load: no Python objects."""
    path = tmp_path / "evil.yaml"
    path.write_text("name: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(ConfigError, match="evil.yaml: not valid YAML"):
        load_experiment(path)


BAD = [
    # (top-level fields to set, the key named, words of the advice)
    ({"policy": "fifo"}, "policy", "is not an experiment key"),
    ({"policies": None}, "policies", "is missing"),
    ({"policies": []}, "policies", "non-empty list"),
    ({"policies": ["nope"]}, "policies[0]", "unknown policy 'nope'"),
    ({"policies": [{"name": "fifo", "params": {"backfil": "easy"}}]}, "policies[0]", "it accepts"),
    (
        {"policies": [{"name": "fifo", "params": {"backfill": "sometimes"}}]},
        "policies[0]",
        "backfill must be",
    ),
    ({"policies": ["fifo", "fifo"]}, "policies[1]", "distinct 'label'"),
    ({"workload": {"trace": "missing.csv"}}, "workload.trace", "not found"),
    ({"workload": {"trace": "tiny.csv", "format": "csv"}}, "workload.format", "choose one of auto"),
    (
        {"workload": {"trace": "tiny.csv", "transforms": [{"shuffle": 1}]}},
        "workload.transforms[0]",
        "unknown transform",
    ),
    ({"throughput": "fast"}, "throughput", "choose one of duration"),
    ({"estimator": "psychic"}, "estimator", "unknown estimator"),
    ({"estimator": {"name": "oracle", "sigma": 1}}, "estimator.sigma", "only the noisy estimator"),
    ({"restart_overhead_s": -1}, "restart_overhead_s", ">= 0"),
    ({"seeds": 0}, "seeds", "integer >= 1"),
    ({"seed": "abc"}, "seed", "integer >= 0"),
    ({"cluster": "no-such-cluster"}, "cluster", "bundled"),
    (
        {"cluster": {"nodes": [{"gpu_type": "V100", "count": 0}]}},
        "cluster.nodes[0].count",
        "positive integer",
    ),
    ({"sweep": {"cluster_size": [1, 2]}}, "sweep.cluster_size", "cannot be swept"),
    (
        {"sweep": {"workload.arrival_rate_scale": [1, 0]}},
        "sweep.workload.arrival_rate_scale[1]",
        "> 0",
    ),
    (
        {"sweep": {"workload.arrival_rate_scale": []}},
        "sweep.workload.arrival_rate_scale",
        "non-empty list",
    ),
    (
        {"sweep": {"workload.arrival_rate_scale": [1, 1.0]}},
        "sweep.workload.arrival_rate_scale",
        "same value twice",
    ),
    (
        {"sweep": {"estimator.sigma": [0.1, 0.2]}},
        "sweep.estimator.sigma[0]",
        "set estimator: noisy",
    ),
    (
        {"sweep": {"params.queue_levels": [1, 2]}},
        "sweep.params.queue_levels",
        "no policy of this experiment takes",
    ),
    (
        {"policies": ["fifo"], "sweep": {"params.backfill": ["greedy", "weekly"]}},
        "sweep.params.backfill[1]",
        "backfill must be",
    ),
    # unknown keys at every level, each with a did-you-mean
    ({"sede": 1}, "sede", "did you mean 'seed'?"),
    ({"workload": {"trace": "tiny.csv", "transfroms": []}}, "workload.transfroms", "'transforms'"),
    (
        {"estimator": {"name": "noisy", "sigma_thruput": 0.1}},
        "estimator.sigma_thruput",
        "did you mean 'sigma_throughput'?",
    ),
    ({"policies": [{"name": "fifo", "parms": {}}]}, "policies[0].parms", "did you mean 'params'?"),
    (
        {"workload": {"trace": "tiny.csv", "transforms": [{"deadlines": {"low": 1, "hihg": 2}}]}},
        "workload.transforms[0].hihg",
        "did you mean 'high'?",
    ),
    (
        {"workload": {"trace": "tiny.csv", "transforms": [{"deadlines": {"low": 1}}]}},
        "workload.transforms[0].high",
        "is missing",
    ),
    (
        {"workload": {"trace": "tiny.csv", "transforms": [{"sampel": 3}]}},
        "workload.transforms[0]",
        "did you mean 'sample'?",
    ),
    (
        {"cluster": {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_nod": 4}]}},
        "cluster.nodes[0]",
        "did you mean 'gpus_per_node'?",
    ),
    (
        {"sweep": {"workload.arival_rate_scale": [1, 2]}},
        "sweep.workload.arival_rate_scale",
        "did you mean 'workload.arrival_rate_scale'?",
    ),
    # duplicate names
    (
        {"policies": [{"name": "fifo", "label": "x"}, {"name": "srtf", "label": "x"}]},
        "policies[1]",
        "distinct 'label'",
    ),
    (
        {
            "sweep": {
                "cluster": [
                    TINY_CLUSTER,
                    {**TINY_CLUSTER, "nodes": [{"gpu_type": "V100", "count": 2}]},
                ]
            }
        },
        "sweep.cluster[1]",
        "same name 'one-node'",
    ),
    (
        {"estimator": "noisy", "sweep": {"estimator": ["noisy:0.5", "noisy:0.5000000001"]}},
        "sweep.estimator[1]",
        "same label",
    ),
    # absurd sizes, negative or zero counts
    ({"seeds": 10**9}, "seeds", "more than the cap of 10,000"),
    ({"seeds": list(range(10_001))}, "seeds", "more than the cap of 10,000"),
    ({"seeds": [0, 2**40]}, "seeds", "replicate numbers from 0"),
    ({"seeds": -3}, "seeds", "integer >= 1"),
    (
        {"seeds": 1000, "sweep": {"workload.arrival_rate_scale": list(range(1, 101))}},
        "sweep",
        "grid of 200,000 cells (2 policies × 1000 seeds × 100 workload.arrival_rate_scale)",
    ),
    (
        {"workload": {"trace": "tiny.csv", "transforms": [{"head": 0}]}},
        "workload.transforms[0].n",
        ">= 1",
    ),
    (
        {"workload": {"trace": "tiny.csv", "transforms": [{"sample": {"n": 2, "seed": -1}}]}},
        "workload.transforms[0].seed",
        ">= 0",
    ),
    (
        {"workload": {"trace": "tiny.csv", "resample_per_seed": True}},
        "workload.resample_per_seed",
        "nothing to resample",
    ),
    (
        {"workload": {"trace": "tiny.csv", "resample_per_seed": "yes"}},
        "workload.resample_per_seed",
        "true or false",
    ),
]


@pytest.mark.parametrize(("fields", "key", "advice"), BAD, ids=[b[1] for b in BAD])
def test_validation_errors_name_the_file_and_the_key(tmp_path, fields, key, advice):
    """Every mistake is a ConfigError naming the file, the key and what to change."""
    path = write_experiment(tmp_path, **fields)
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    message = str(caught.value)
    assert message.startswith(str(path)), message
    assert repr(key) in message and advice in message, message


def test_inline_mapping_is_validated_like_a_file():
    """parse_experiment takes parsed YAML; its errors name '<dict>'."""
    with pytest.raises(ConfigError, match="<dict>: key 'workload'"):
        parse_experiment({"cluster": TINY_CLUSTER, "workload": 3, "policies": ["fifo"]})


def test_scale_arrivals_divides_submit_times_and_keeps_deadline_slack():
    """Twice the arrival rate halves submit times; deadlines keep their slack."""
    table = pd.DataFrame(
        {
            "job_id": [1, 2],
            "submit_time": [0.0, 100.0],
            "num_gpus": [1, 1],
            "duration": [10.0, 10.0],
            "deadline": [50.0, 180.0],
        }
    )
    workload = validate_jobs(table, "inline", lenient=False, fmt="canonical")
    fast = scale_arrivals(workload, 2.0)
    assert fast.jobs["submit_time"].tolist() == [0.0, 50.0]
    assert fast.jobs["deadline"].tolist() == [50.0, 130.0]
    assert fast.provenance["transforms"][-1] == {"name": "scale_arrival_rate", "factor": 2.0}
    assert workload.jobs["submit_time"].tolist() == [0.0, 100.0]  # the input is untouched
    with pytest.raises(ValueError, match="positive"):
        scale_arrivals(workload, 0)


def test_shipped_experiments_are_valid():
    """Every file in configs/experiments/ loads; quickstart is a small grid."""
    from pathlib import Path

    folder = Path(__file__).resolve().parent.parent / "configs" / "experiments"
    files = sorted(folder.glob("*.yaml"))
    assert {f.name for f in files} >= {"quickstart.yaml", "tiresias_60job_8gpu.yaml"}
    for path in files:
        exp = load_experiment(path)
        assert exp.points, path
        assert yaml.safe_load(path.read_text())["name"] == exp.name
    quick = load_experiment("quickstart")  # a bundled experiment by name
    assert quick.source == str(folder / "quickstart.yaml")
    assert len(quick.replicates) == 2 and dict(quick.axes)["workload.arrival_rate_scale"]
    with pytest.raises(ConfigError, match="bundled: .*quickstart"):
        load_experiment("no-such-experiment")


def test_a_key_given_twice_in_the_file_is_refused(tmp_path):
    """Plain YAML keeps the last of two equal keys silently; an experiment file refuses it."""
    path = write_experiment(tmp_path)
    path.write_text(path.read_text() + "seeds: 5\n")
    with pytest.raises(ConfigError) as caught:
        load_experiment(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and "key 'seeds' is given twice" in message, message


def test_run_seed_is_child_r_without_spawning_r_children():
    """A huge replicate number costs nothing and still equals SeedSequence.spawn's child."""
    assert run_seed(5, 3) == int(
        np.random.SeedSequence(5).spawn(4)[3].generate_state(1, dtype=np.uint32)[0]
    )
    assert 0 <= run_seed(5, 2**32 - 1) < 2**32


# ---- replicates ---------------------------------------------------------------------------
def _resampled(tmp_path, resample):
    workload = {
        "trace": "tiny.csv",
        "transforms": [{"sample": 4}, {"deadlines": {"low": 1.5, "high": 3.0}}],
    }
    if resample is not None:
        workload["resample_per_seed"] = resample
    return load_experiment(write_experiment(tmp_path, workload=workload, seeds=3, sweep=None))


def _workload_of(run):
    jobs = build_workload(run.config).jobs
    return tuple(jobs["job_id"]), tuple(jobs["deadline"].round(6))


def test_replicates_pass_their_own_seed_to_simulate(tmp_path, monkeypatch):
    """`seeds: 3` runs simulate(seed=...) with three different seeds, one per replicate."""
    seen = []

    def fake_simulate(*args, seed, **kwargs):
        seen.append(seed)
        raise RuntimeError("stop here")

    monkeypatch.setattr(runner, "simulate", fake_simulate)
    exp = load_experiment(
        write_experiment(tmp_path, seed=7, seeds=3, sweep=None, policies=["fifo"])
    )
    for run in exp.runs.values():
        with pytest.raises(RuntimeError, match="stop here"):
            simulate_config(run.config)
    assert seen == [run_seed(7, r) for r in range(3)]


def test_resample_per_seed_draws_a_different_workload_per_replicate(tmp_path):
    """With resample_per_seed, each replicate samples its own jobs and deadlines."""
    exp = _resampled(tmp_path, True)
    by_replicate = {p.replicate: exp.runs[p.key] for p in exp.points if p.policy == "fifo"}
    workloads = {r: _workload_of(run) for r, run in by_replicate.items()}
    assert len(set(workloads.values())) == 3
    assert all(len(ids) == 4 for ids, _ in workloads.values())
    srtf = {p.replicate: exp.runs[p.key] for p in exp.points if p.policy == "srtf"}
    for r, run in srtf.items():  # common random numbers: policies of a replicate share it
        assert run.config["workload"] == by_replicate[r].config["workload"]


def test_without_resample_every_replicate_replays_the_same_workload(tmp_path):
    """By default (or resample_per_seed: false) only the simulation seed varies."""
    default, off = _resampled(tmp_path / "a", None), _resampled(tmp_path / "b", False)
    assert list(default.runs) == list(off.runs)
    workloads = {_workload_of(run) for run in default.runs.values()}
    seeds = {run.config["seed"] for run in default.runs.values()}
    assert len(workloads) == 1 and len(seeds) == 3


def test_a_seeded_transform_may_leave_out_its_seed(tmp_path):
    """{sample: 4} is {name: sample, n: 4, seed: 0}: the same run key."""
    short = load_experiment(
        write_experiment(tmp_path, workload={"trace": "tiny.csv", "transforms": [{"sample": 4}]})
    )
    long = load_experiment(
        write_experiment(
            tmp_path,
            workload={"trace": "tiny.csv", "transforms": [{"name": "sample", "n": 4, "seed": 0}]},
        )
    )
    assert list(short.runs) == list(long.runs)


def test_an_overhead_preset_by_name_reaches_the_run(tmp_path):
    """`overheads: tiresias-sim` runs with that preset, not the flat default; other
    experiments' run keys do not change (the key enters only when given)."""
    from dlsched.overheads import PRESETS

    plain = load_experiment(write_experiment(tmp_path / "a", seeds=1))
    exp = load_experiment(write_experiment(tmp_path / "b", seeds=1, overheads="tiresias-sim"))
    run = exp.runs[exp.points[0].key]
    assert run.config["overheads"] == "tiresias-sim"
    assert "overheads" not in plain.runs[plain.points[0].key].config
    assert set(plain.runs).isdisjoint(exp.runs)
    result = simulate_config(run.config)
    assert result.meta["overheads"] == repr(PRESETS.get("tiresias-sim"))


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"overheads": "tiresias_sim"}, r"overheads.*did you mean 'tiresias-sim'"),
        ({"overheads": 30}, "must be an overhead preset name"),
        ({"overheads": "pollux", "restart_overhead_s": 10}, "give one of them"),
    ],
)
def test_a_bad_overhead_preset_is_a_config_error(tmp_path, extra, match):
    with pytest.raises(ConfigError, match=match):
        load_experiment(write_experiment(tmp_path, **extra))
