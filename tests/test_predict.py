"""Predictors (`dlsched.predict`) and the predicting estimator: the rolling protocol, the
Helios rules, the registry, and the error figures of a run."""

from __future__ import annotations

import math

import pandas as pd
import pytest

import dlsched
from dlsched import predict
from dlsched.perf import make_estimator
from dlsched.perf.predicting import PredictingEstimator
from dlsched.predict.base import FinishedJob, JobFeatures, Predictor
from dlsched.predict.helios import HeliosPredictor


def cluster(gpus: int = 4) -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": gpus}]}
    )


def workload(n: int = 40) -> pd.DataFrame:
    """`n` jobs of 1-2 GPUs, three users, repeated job names, a queue on 4 GPUs."""
    rows = []
    for i in range(n):
        user = f"u{i % 3}"
        name = f"train-{'bert' if i % 2 else 'resnet'}-{i}"
        rows.append((f"j{i}", 30.0 * i, 1 + i % 2, 100.0 + 37.0 * (i % 5), user, name))
    columns = ["job_id", "submit_time", "num_gpus", "duration", "user", "name"]
    return pd.DataFrame(rows, columns=columns)


class Recorder(Predictor):
    """Predicts a constant and remembers everything it was shown, and when."""

    name = "recorder"

    def start(self) -> None:
        self.seen: list[FinishedJob] = []
        self.predictions: list[tuple[float, JobFeatures, int]] = []  # (now, job, seen so far)

    def observe(self, record: FinishedJob) -> None:
        self.seen.append(record)

    def predict(self, features: JobFeatures, now: float) -> float:
        self.predictions.append((now, features, len(self.seen)))
        return 100.0


@pytest.mark.parametrize(
    ("policy", "params"),
    [("sjf", {}), ("srtf", {}), ("qssf", {}), ("fifo", {"backfill": "easy"})],
)
def test_predictor_never_sees_a_job_that_had_not_finished(policy, params):
    """At every prediction, each job the predictor had been shown finished at or before the
    time of that prediction, the job asked about was not among them, and the features it
    was asked with carry no work."""
    recorder = Recorder()
    result = dlsched.simulate(
        workload(), cluster(), policy=policy, estimator=PredictingEstimator(recorder), **params
    )
    finish = dict(zip(result.jobs["job_id"], result.jobs["finish_time"], strict=True))
    assert recorder.predictions, "the policy asked for no prediction"
    assert len(recorder.seen) == len(finish)  # every job was shown once, at its finish
    for record in recorder.seen:
        assert record.finish_time == finish[record.features.job_id]
    for now, features, seen_count in recorder.predictions:
        shown = recorder.seen[:seen_count]
        assert all(record.finish_time <= now for record in shown)
        assert features.job_id not in {record.features.job_id for record in shown}
        assert not hasattr(features, "duration") and not hasattr(features, "total_steps")
    # records arrive in finish order
    times = [record.finish_time for record in recorder.seen]
    assert times == sorted(times)


def test_jobs_are_predicted_once_with_the_clock_of_their_first_ask():
    """Each job is predicted once, at the engine's time of the first ask (a scheduling call
    at or after its submission)."""
    recorder = Recorder()
    dlsched.simulate(workload(12), cluster(), policy="sjf", estimator=PredictingEstimator(recorder))
    asked = [features.job_id for _, features, _ in recorder.predictions]
    assert any(now > 0 for now, _, _ in recorder.predictions)  # the clock is read
    assert len(asked) == len(set(asked)) == 12
    assert all(now >= features.submit_time for now, features, _ in recorder.predictions)


def test_oracle_predictor_gives_the_oracle_schedule():
    """SJF with `predict:oracle` decides exactly as SJF with the oracle estimator."""
    jobs = workload()
    truth = dlsched.simulate(jobs, cluster(), policy="sjf")
    oracle = dlsched.simulate(jobs, cluster(), policy="sjf", estimator="predict:oracle")
    pd.testing.assert_series_equal(truth.jobs["finish_time"], oracle.jobs["finish_time"])
    summary = oracle.summary()
    assert summary["prediction_mae_s"] == 0.0
    assert summary["prediction_p90_rel_error"] == 0.0
    assert summary["prediction_jobs"] == len(jobs)


def test_prediction_error_is_in_the_summary():
    """A run with a learning predictor reports MAE and relative-error percentiles, added to
    the summary's keys; a run without one has none of them."""
    result = dlsched.simulate(workload(), cluster(), policy="sjf", estimator="predict:helios")
    summary = result.summary()
    for key in ("prediction_mae_s", "prediction_median_rel_error", "prediction_p90_rel_error"):
        assert summary[key] > 0 and math.isfinite(summary[key])
    assert "avg_jct" in summary
    plain = dlsched.simulate(workload(), cluster(), policy="sjf").summary()
    assert not any(key.startswith("prediction_") for key in plain)


def _record(job_id, user, name, gpus, duration, finish=0.0, vc=None):
    features = JobFeatures(job_id, 0.0, gpus, user=user, vc=vc, name=name)
    return FinishedJob(features, finish, duration)


def _helios(**params) -> HeliosPredictor:
    predictor = HeliosPredictor(**params)
    predictor.start()
    return predictor


def test_helios_same_user_and_name_then_same_gpu_count():
    """Rule 1+2: the same user's jobs of the same name, with the same GPU count if any."""
    p = _helios()
    for record in (
        _record(1, "alice", "bert", 1, 100.0),
        _record(2, "alice", "bert", 2, 1000.0),
        _record(3, "alice", "bert", 2, 2000.0),
        _record(4, "bob", "bert", 2, 9.0),
        _record(5, "alice", "gan", 2, 7.0),
    ):
        p.observe(record)
    job = JobFeatures(9, 0.0, 2, user="alice", name="bert")
    assert p.predict(job, 0.0) == 1500.0  # alice's 2-GPU berts
    one = JobFeatures(9, 0.0, 4, user="alice", name="bert")
    assert p.predict(one, 0.0) == pytest.approx(3100.0 / 3)  # no 4-GPU bert: all her berts


def test_helios_name_of_another_user_close_names_and_fallbacks():
    """A name only other users ran: their mean; a close name (difflib, cutoff 0.6) counts;
    no name match: the user's jobs (same GPU count first); a new user: every job."""
    p = _helios()
    p.observe(_record(1, "bob", "resnet50-imagenet", 1, 400.0))
    p.observe(_record(2, "carol", "resnet50-imagenet", 1, 600.0))
    p.observe(_record(3, "alice", "gan", 1, 50.0))
    p.observe(_record(4, "alice", "gan", 2, 70.0))
    assert p.predict(JobFeatures(9, 0.0, 1, user="alice", name="resnet50-imagenet"), 0) == 500.0
    assert p.predict(JobFeatures(9, 0.0, 1, user="bob", name="resnet50-imagenet2"), 0) == 400.0
    assert p.predict(JobFeatures(9, 0.0, 2, user="alice", name="zzz"), 0) == 70.0
    assert p.predict(JobFeatures(9, 0.0, 1, user="dave", name="zzz"), 0) == 280.0


def test_helios_window_weights_recent_jobs_and_default_before_history():
    """`window=2` averages the two most recently finished matching jobs; before any job
    has finished the prediction is `default_s`."""
    p = _helios(window=2, default_s=77.0)
    assert p.predict(JobFeatures(1, 0.0, 1, user="a", name="x"), 0) == 77.0
    for i, duration in enumerate((10.0, 20.0, 30.0)):
        p.observe(_record(i, "a", "x", 1, duration))
    assert p.predict(JobFeatures(9, 0.0, 1, user="a", name="x"), 0) == 25.0


def test_helios_vc_fallback_is_off_by_default():
    """Without users, the VC fallback (ours) uses the same VC and GPU count when enabled."""
    on, off = _helios(vc_fallback=True), _helios()
    for p in (on, off):
        p.observe(_record(1, None, None, 1, 10.0, vc="a"))
        p.observe(_record(2, None, None, 1, 30.0, vc="b"))
    job = JobFeatures(9, 0.0, 1, vc="a")
    assert on.predict(job, 0) == 10.0 and off.predict(job, 0) == 20.0


def test_registry_names_estimator_spec_and_errors():
    """Predictors are a registry; `predict:<name>` makes a predicting estimator; an unknown
    predictor or parameter is an error naming it."""
    assert {"oracle", "helios", "gbdt"} <= set(predict.names())
    assert predict.PREDICTORS.entry_point_group == "dlsched.predictors"
    estimator = make_estimator("predict:helios")
    assert isinstance(estimator, PredictingEstimator)
    assert isinstance(estimator.predictor, HeliosPredictor)
    with pytest.raises(ValueError, match="unknown predictor 'helio'.*did you mean 'helios'"):
        make_estimator("predict:helio")
    with pytest.raises(ValueError, match="windw"):
        predict.get("helios", windw=3)


def test_name_column_reaches_the_job_spec():
    """A trace's `name` column (a passthrough) is the job name predictors see."""
    recorder = Recorder()
    dlsched.simulate(workload(4), cluster(), policy="sjf", estimator=PredictingEstimator(recorder))
    names = {features.name for _, features, _ in recorder.predictions}
    assert names == {"train-resnet-0", "train-bert-1", "train-resnet-2", "train-bert-3"}
    users = {features.user for _, features, _ in recorder.predictions}
    assert users == {"u0", "u1", "u2"}


def test_gbdt_predictor_learns_on_a_schedule():
    """The gradient-boosted predictor falls back to the Helios rules until `min_train` jobs
    finished, then refits every `refit_every` completions, and beats a constant."""
    pytest.importorskip("sklearn")
    p = predict.get("gbdt", refit_every=20, min_train=20, max_iter=30)
    p.start()
    for i in range(60):
        user = f"u{i % 2}"
        p.observe(_record(i, user, "job", 1 + i % 2, 100.0 if user == "u0" else 10_000.0))
        assert p.fits == (0 if i < 19 else 1 + (i - 19) // 20)
    short = p.predict(JobFeatures(99, 0.0, 1, user="u0", name="job"), 0.0)
    long = p.predict(JobFeatures(98, 0.0, 2, user="u1", name="job"), 0.0)
    assert short < 300.0 < 3000.0 < long


HELIOS_LOG = """job_id,user,vc,jobname,gpu_num,state,submit_time,duration
1,alice,vcA,bert-pretrain,1,COMPLETED,2020-09-01 00:00:00,600
2,alice,vcA,bert-pretrain,1,COMPLETED,2020-09-01 00:20:00,600
"""


def test_helios_logs_keep_user_and_job_name(tmp_path):
    """A Helios-format log with `jobname` (the artifact's) keeps it as `name` and the user;
    the second bert-pretrain of alice is predicted from the first: 600 s, exactly."""
    path = tmp_path / "cluster_log.csv"
    path.write_text(HELIOS_LOG)
    workload = dlsched.load_trace(path, format="helios")
    assert workload.jobs["name"].tolist() == ["bert-pretrain", "bert-pretrain"]
    assert workload.jobs["user"].tolist() == ["alice", "alice"]
    result = dlsched.simulate(workload, cluster(), policy="sjf", estimator="predict:helios")
    summary = result.summary()
    assert summary["prediction_jobs"] == 2
    # job 1: no history, the 3,600 s default (error 3,000 s); job 2: alice's bert, 600 s
    assert summary["prediction_mae_s"] == pytest.approx(1500.0)


def test_gbdt_without_scikit_learn_is_a_clear_error(monkeypatch):
    """Where scikit-learn is not installed, asking for the gbdt predictor is a ConfigError
    saying which extra to install, before any trace is read."""
    import importlib.util

    from dlsched.errors import ConfigError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a)
    )
    with pytest.raises(ConfigError, match=r"pip install 'dlsched\[predict\]'"):
        make_estimator("predict:gbdt")


def test_a_canonical_csv_keeps_job_names_as_text(tmp_path):
    """A canonical CSV's `name` column is read as text ("007" stays "007") and reaches the
    predictor."""
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,num_gpus,duration,user,name\n1,0,1,10,u,007\n")
    workload = dlsched.load_trace(path)
    assert workload.jobs["name"].tolist() == ["007"]
    recorder = Recorder()
    dlsched.simulate(workload, cluster(), policy="sjf", estimator=PredictingEstimator(recorder))
    assert [features.name for _, features, _ in recorder.predictions] == ["007"]
