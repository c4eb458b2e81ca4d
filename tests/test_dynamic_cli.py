"""Dynamic-batch jobs and Shockwave from the command line and experiment files
(`dlsched.experiments.dynamic`): the same runs as the Python API's, run keys that follow
every option, and bad options named.

On Gavel's table one V100 runs ResNet-18 at 29.947 it/s with batch 32 and 24.093 it/s with
batch 64 (read from the table below, not typed in): a job started at 32 does 24.093 × 2
steps/s once its batch doubles.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

import dlsched
from dlsched.cli import main
from dlsched.errors import ConfigError, DlschedError
from dlsched.experiments import load_experiment, run_experiment, simulate_config
from dlsched.perf import ProfileTable
from dlsched.perf.dynamic import DynamicBatchModel, DynamicEstimator, schedules_from_workload
from dlsched.policies.shockwave import ShockwavePolicy
from dlsched.traces.transforms_dynamic import add_batch_schedules

R18 = "ResNet-18 (batch size {})"
CLUSTER = {"name": "four", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}

SCHEDULED = """job_id,submit_time,num_gpus,total_steps,model,batch_schedule
a,0,1,1000,ResNet-18 (batch size 32),
b,0,1,1000,ResNet-18 (batch size 32),1:32;1:64
"""
"""Two 1-GPU jobs, the second doubling its batch half-way (500 steps at each batch)."""

GAVEL_JOBS = """job_id,submit_time,num_gpus,duration,model
0,0,1,3600,ResNet-18 (batch size 32)
1,100,1,5400,ResNet-50 (batch size 64)
2,200,2,3000,LM (batch size 20)
3,300,1,4000,ResNet-18 (batch size 64)
4,400,1,2000,Recommendation (batch size 1024)
5,500,4,4500,ResNet-18 (batch size 32)
6,900,2,2500,ResNet-50 (batch size 32)
7,1200,1,3000,LM (batch size 20)
"""
"""Eight Gavel-type jobs without schedules (the transform gives them theirs)."""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "scheduled.csv").write_text(SCHEDULED)
    (tmp_path / "gavel.csv").write_text(GAVEL_JOBS)
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(CLUSTER))
    return tmp_path


def _replay(folder: Path, *options: str) -> pd.DataFrame:
    out = folder / "out"
    argv = ["replay", "--cluster", str(folder / "cluster.yaml"), "--out", str(out), "--json"]
    assert main([*argv, *options]) == 0
    return pd.read_parquet(out / "jobs.parquet")


def _finishes(jobs: pd.DataFrame) -> dict[str, float]:
    return dict(zip(jobs["job_id"].astype(str), jobs["finish_time"], strict=True))


def _api(workload: dlsched.Workload, policy: object, known: str, seed: int = 0):
    truth = DynamicBatchModel(ProfileTable.gavel(), schedules_from_workload(workload))
    return dlsched.simulate(
        workload,
        dlsched.Cluster.from_dict(CLUSTER),
        policy,
        throughput=truth,
        estimator=DynamicEstimator(known),
        seed=seed,
        audit=True,
    )


# ---- the command line -------------------------------------------------------------------


def test_a_traced_schedule_runs_on_the_dynamic_truth_known_answer(files, capsys, monkeypatch):
    """FIFO, both jobs at once on their own GPU: a takes 1000 / r32 s; b 500 / r32 at batch
    32, then 500 steps at 2 × r64 steps/s. Work is conserved (the audit checks every call)."""
    monkeypatch.setenv("DLSCHED_AUDIT", "1")
    jobs = _replay(files, "--trace", str(files / "scheduled.csv"), "--throughput", "gavel")
    table = ProfileTable.gavel()
    r32 = table.throughput(R18.format(32), "v100", 1)
    r64 = table.throughput(R18.format(64), "v100", 1)
    assert _finishes(jobs) == pytest.approx(
        {"a": 1000 / r32, "b": 500 / r32 + 500 / (2 * r64)}, rel=1e-12
    )
    assert jobs["total_steps"].tolist() == [1000.0, 1000.0]
    meta = json.loads((files / "out" / "meta.json").read_text())
    assert meta["throughput"] == "dynamic-gavel"


@pytest.mark.parametrize("known", ["advance", "online"])
def test_shockwave_from_the_cli_equals_the_python_api(files, capsys, known):
    """`--batch-schedules shockwave --batch-seed 4` is `add_batch_schedules(seed=4)`, and the
    run on it is `simulate` with the dynamic truth and estimator, job for job."""
    cli = _replay(
        files,
        "--trace",
        str(files / "gavel.csv"),
        "--throughput",
        "gavel",
        "--policy",
        "shockwave",
        "--estimator",
        "dynamic" if known == "advance" else "dynamic:online",
        "--batch-schedules",
        "shockwave",
        "--batch-seed",
        "4",
    )
    workload = add_batch_schedules(dlsched.load_trace(files / "gavel.csv"), seed=4)
    assert workload.jobs["batch_schedule"].notna().sum() >= 2  # some jobs do change
    api = _api(workload, ShockwavePolicy(), known)
    assert api.jobs["finish_time"].notna().all()
    pd.testing.assert_frame_equal(cli.reset_index(drop=True), api.jobs.reset_index(drop=True))


def test_the_transform_and_the_estimator_change_the_run(files, capsys):
    """Another seed or another mix gives other schedules; without the transform the same
    jobs run static, and a mix of only static jobs runs as they do."""
    common = ["--trace", str(files / "gavel.csv"), "--throughput", "gavel", "--policy", "srtf"]
    static = _finishes(_replay(files, *common))
    only_static = _finishes(_replay(files, *common, "--batch-schedules", "static=1"))
    assert only_static == static
    gns = _finishes(_replay(files, *common, "--batch-schedules", "gns=1", "--batch-seed", "1"))
    assert gns != static
    again = _finishes(_replay(files, *common, "--batch-schedules", "gns=1", "--batch-seed", "1"))
    assert again == gns  # determinism


def test_an_unmeasured_batch_is_an_error_or_runs_at_the_same_samples_rate(files, capsys):
    """Gavel never measured ResNet-18 at batch 512: an error by default; with
    --unmeasured-batch samples the second phase runs at batch 32's samples/s."""
    (files / "big.csv").write_text(SCHEDULED.replace("1:32;1:64", "1:32;1:512"))
    args = ["replay", "--trace", str(files / "big.csv"), "--cluster", str(files / "cluster.yaml")]
    assert main([*args, "--throughput", "gavel"]) == 2
    assert "batch size 512" in capsys.readouterr().err
    jobs = _replay(
        files,
        "--trace",
        str(files / "big.csv"),
        "--throughput",
        "gavel",
        "--unmeasured-batch",
        "samples",
    )
    r32 = ProfileTable.gavel().throughput(R18.format(32), "v100", 1)
    assert _finishes(jobs) == pytest.approx({"a": 1000 / r32, "b": 1000 / r32}, rel=1e-12)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--estimator", "dynamic:later"], "after 'dynamic:' give advance or online"),
        (["--estimator", "dynamic"], "no batch_schedule column"),
        (["--batch-schedules", "gns=1,elastic=1"], "'elastic=1' is not <kind>=<weight>"),
        (["--batch-schedules", "gns=-1"], "weight of 'gns' must be a number >= 0"),
        (["--batch-schedules", "gns=0"], "needs a weight > 0"),
        (["--batch-schedules", "gns=1,gns=2"], "'gns' is given twice"),
        (["--batch-seed", "3"], "--batch-seed seeds --batch-schedules"),
        (["--unmeasured-batch", "samples"], "--unmeasured-batch applies to batch-size"),
        (["--unmeasured-batch", "guess"], "unmeasured batch"),
        (["--batch-schedules", "shockwave", "--throughput", "duration"], "--throughput duration"),
        (["--batch-schedules", "shockwave", "--throughput", "goodput"], "--throughput goodput"),
    ],
)
def test_bad_options_are_errors_naming_them(files, capsys, options, message):
    argv = ["replay", "--trace", str(files / "gavel.csv"), "--cluster", str(files / "cluster.yaml")]
    if "--throughput" not in options:
        options = [*options, "--throughput", "gavel"]
    assert main([*argv, *options]) == 2
    assert message in capsys.readouterr().err


def test_compare_runs_every_policy_on_the_dynamic_truth(files, capsys):
    argv = ["compare", "--trace", str(files / "scheduled.csv"), "--cluster"]
    code = main([*argv, str(files / "cluster.yaml"), "--throughput", "gavel", "--json"])
    assert code == 0
    summaries = json.loads(capsys.readouterr().out)
    table = ProfileTable.gavel()
    r32, r64 = (table.throughput(R18.format(b), "v100", 1) for b in (32, 64))
    b = 500 / r32 + 500 / (2 * r64)  # sooner than a's 1000 / r32
    for summary in summaries.values():  # fifo, sjf, srtf: all start both jobs at once
        assert summary["avg_jct"] == pytest.approx((1000 / r32 + b) / 2, rel=1e-12)


# ---- experiment files -------------------------------------------------------------------


def _experiment(folder: Path, **fields: object) -> Path:
    data: dict[str, object] = {
        "name": "dyn",
        "cluster": CLUSTER,
        "workload": {"trace": "gavel.csv", "transforms": [{"batch_schedules": {"seed": 4}}]},
        "throughput": "gavel",
        "estimator": "dynamic",
        "policies": ["shockwave"],
    }
    for key, value in fields.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = folder / "dyn.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_shockwave_from_yaml_equals_the_python_api(files):
    experiment = load_experiment(_experiment(files))
    (run,) = experiment.runs.values()
    assert run.config["estimator"] == {"name": "dynamic:advance"}
    assert run.config["batch_schedule"] == {"unmeasured": "error"}
    step = run.config["workload"]["transforms"][0]
    assert step == {
        "name": "batch_schedules",
        "static": 1 / 3,
        "gns": 1 / 3,
        "accordion": 1 / 3,
        "seed": 4,
    }
    outcome = run_experiment(experiment, files / "results", progress=False)
    assert outcome.ok
    stored = pd.read_parquet(files / "results" / "runs" / run.key / "jobs.parquet")
    workload = add_batch_schedules(dlsched.load_trace(files / "gavel.csv"), seed=4)
    api = _api(workload, ShockwavePolicy(), "advance", seed=run.config["seed"])
    pd.testing.assert_frame_equal(stored.reset_index(drop=True), api.jobs.reset_index(drop=True))


def test_a_yaml_run_equals_the_cli_run(files, capsys):
    """A trace with the column, FIFO: the stored run is the CLI's (the seed does not enter)."""
    experiment = load_experiment(
        _experiment(
            files,
            workload={"trace": "scheduled.csv"},
            estimator="dynamic:online",
            policies=["fifo"],
            unmeasured_batch="samples",
        )
    )
    (run,) = experiment.runs.values()
    assert run.config["batch_schedule"] == {"unmeasured": "samples"}
    assert "unmeasured_batch" not in run.config
    result = simulate_config(run.config)
    cli = _replay(
        files,
        "--trace",
        str(files / "scheduled.csv"),
        "--throughput",
        "gavel",
        "--estimator",
        "dynamic:online",
    )
    assert _finishes(result.jobs) == _finishes(cli)


def _keys(folder: Path, **fields: object) -> set[str]:
    return set(load_experiment(_experiment(folder, **fields)).runs)


def test_the_run_key_follows_every_dynamic_option(files):
    """The transform's seed and mix, the estimator's view and the unmeasured rule each
    change the key; the two spellings of one estimator do not."""
    base = _keys(files)
    transforms = lambda step: {"trace": "gavel.csv", "transforms": [step]}  # noqa: E731
    changed = [
        _keys(files, workload=transforms({"batch_schedules": {"seed": 5}})),
        _keys(files, workload=transforms({"batch_schedules": {"gns": 1.0, "seed": 4}})),
        _keys(files, estimator="dynamic:online"),
        _keys(files, unmeasured_batch="samples"),
    ]
    assert all(keys != base for keys in changed)
    assert len({frozenset(k) for k in [base, *changed]}) == 5
    assert _keys(files, estimator="dynamic:advance") == base
    assert _keys(files, estimator={"name": "dynamic"}) == base


def test_a_traced_column_changes_the_key_of_a_run_that_ignored_it(files):
    """A trace with the column runs on the dynamic truth, so its run config says so: the
    key of such a run can never be one an older dlsched stored for the static run."""
    plain = "\n".join(line.rsplit(",", 1)[0] for line in SCHEDULED.splitlines())
    (files / "plain.csv").write_text(plain + "\n")
    static = load_experiment(
        _experiment(files, workload={"trace": "plain.csv"}, estimator=None, policies=["fifo"])
    )
    (run,) = static.runs.values()
    assert "batch_schedule" not in run.config
    stale = json.loads(json.dumps(run.config))
    stale["workload"] = (
        load_experiment(
            _experiment(
                files, workload={"trace": "scheduled.csv"}, estimator=None, policies=["fifo"]
            )
        )
        .runs.popitem()[1]
        .config["workload"]
    )
    with pytest.raises(DlschedError, match="expand the experiment again"):
        simulate_config(stale)  # the column without the key: refused, not run as static


@pytest.mark.parametrize(
    ("fields", "key", "message"),
    [
        ({"estimator": "dynamic:later"}, "'estimator'", "after 'dynamic:' give"),
        ({"unmeasured_batch": "guess"}, "'unmeasured_batch'", "must be one of error, samples"),
        ({"throughput": "duration"}, "'throughput'", "throughput 'duration' runs every batch"),
        ({"throughput": "goodput"}, "'throughput'", "already rates jobs by their progress"),
        (
            {"workload": {"trace": "gavel.csv"}},
            "'estimator'",
            "no batch_schedule column",
        ),
        (
            {
                "workload": {"trace": "gavel.csv"},
                "estimator": "oracle",
                "unmeasured_batch": "error",
            },
            "'unmeasured_batch'",
            "no batch_schedule column",
        ),
        (
            {
                "workload": {
                    "trace": "gavel.csv",
                    "transforms": [{"batch_schedules": {"elastic": 1}}],
                }
            },
            "'workload.transforms[0].elastic'",
            "is not an argument of transform 'batch_schedules'",
        ),
        (
            {"workload": {"trace": "gavel.csv", "transforms": [{"batch_schedules": {"gns": -1}}]}},
            "'workload.transforms[0].gns'",
            "must be a number >= 0",
        ),
        (
            {"workload": {"trace": "gavel.csv", "transforms": [{"batch_schedules": {"gns": 0}}]}},
            "'workload.transforms[0]'",
            "gives every kind",
        ),
        (
            {"workload": {"trace": "gavel.csv", "transforms": [{"batch_schedules": {"seed": -1}}]}},
            "'workload.transforms[0].seed'",
            "must be an integer >= 0",
        ),
    ],
)
def test_bad_experiment_values_are_errors_naming_the_key(files, fields, key, message):
    with pytest.raises(ConfigError, match=message) as info:
        load_experiment(_experiment(files, **fields))
    assert f"key {key}" in str(info.value)


def test_the_dynamic_estimator_sweeps(files):
    """``sweep: {estimator: [dynamic, dynamic:online]}``: two runs, one per view."""
    experiment = load_experiment(
        _experiment(files, sweep={"estimator": ["dynamic", "dynamic:online"]})
    )
    names = sorted(r.config["estimator"]["name"] for r in experiment.runs.values())
    assert names == ["dynamic:advance", "dynamic:online"]
