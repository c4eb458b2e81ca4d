"""Traces with history: the loaders whose formats carry users, VCs and job names keep them
through loading, into the job specs the predictors see; and the feature table of
`dlsched.traces.transforms.history_features`."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

import dlsched
from dlsched.errors import ConfigError
from dlsched.perf.predicting import PredictingEstimator
from dlsched.predict.base import FinishedJob, JobFeatures, Predictor
from dlsched.predict.features import FeatureEncoder, history_values
from dlsched.traces import load_trace
from dlsched.traces.transforms import (
    HISTORY_CATEGORICAL,
    HISTORY_FEATURES,
    history_features,
    job_history_features,
    name_tokens,
)

DATA = Path(__file__).parent / "data"

# SYNTHETIC SCHEMA SAMPLE, NOT REAL DATA: a hand-written pai_group_tag_table in the
# documented schema (inst_id,user,gpu_type_spec,group,workload; headerless as distributed),
# for the jobs of tests/data/alibaba_pai (themselves hand-written; j4 is CPU-only and
# excluded). i2 is listed twice (the first row counts); i3 and i7 have no row; j8 repeats
# j1's user and group, j10 j2's: a history.
PAI_GROUP_TAGS = """i1,uA,,grp-bert-7f,bert
i2,uB,V100,grp-ctr-a1,ctr
i2,uB,V100,grp-other,
i4,uC,,grp-bert-7f,
i8,uA,,grp-bert-7f,bert
i10,uB,,grp-ctr-a1,
"""


def pai_with_tags(tmp_path: Path) -> Path:
    for name in ("pai_job_table.csv", "pai_task_table.csv", "pai_instance_table.csv"):
        shutil.copy(DATA / "alibaba_pai" / name, tmp_path / name)
    (tmp_path / "pai_group_tag_table.csv").write_text(PAI_GROUP_TAGS)
    return tmp_path


def by_id(w: dlsched.Workload, column: str) -> dict[object, object]:
    return dict(zip(w.jobs["job_id"], w.jobs[column], strict=True))


def test_pai_keeps_users_and_takes_names_from_the_group_tags(tmp_path):
    """name = the group tag, joined on inst_id (first row of a repeated one; none where the
    job has no tag row); workload and gpu_type_spec pass through; users as traced."""
    w = load_trace(pai_with_tags(tmp_path))
    names, users = by_id(w, "name"), by_id(w, "user")
    assert users == {"j1": "uA", "j2": "uB", "j3": "uA", "j7": "uC", "j8": "uA", "j10": "uB"}
    assert {k: v for k, v in names.items() if isinstance(v, str)} == {
        "j1": "grp-bert-7f",
        "j2": "grp-ctr-a1",
        "j8": "grp-bert-7f",
        "j10": "grp-ctr-a1",
    }
    assert by_id(w, "workload")["j1"] == "bert" and by_id(w, "gpu_type_spec")["j2"] == "V100"
    tables = w.provenance["tables"]["pai_group_tag_table"]
    assert tables["rows"] == 6 and tables["jobs_without_tag"] == 2


def test_pai_without_group_tags_has_users_but_no_names(tmp_path):
    """The shipped sample has no tag table: no name column; group_tag_table=False ignores
    one that is there, and a named one that does not exist is an error naming it."""
    w = load_trace(DATA / "alibaba_pai")
    assert "name" not in w.jobs.columns and set(w.jobs["user"]) >= {"uA", "uB"}
    folder = pai_with_tags(tmp_path)
    plain = load_trace(folder, group_tag_table=False)
    assert "name" not in plain.jobs.columns
    assert plain.jobs.drop(columns="source_row").equals(w.jobs.drop(columns="source_row"))
    with pytest.raises(FileNotFoundError, match="nowhere.csv"):
        load_trace(folder / "pai_job_table.csv", group_tag_table=tmp_path / "nowhere.csv")


def test_philly_raw_log_keeps_users_and_vcs():
    w = load_trace(DATA / "philly_cluster_job_log.json")
    assert w.jobs["user"].notna().all() and w.jobs["vc"].notna().all()
    assert "ee9e8c" in set(w.jobs["vc"])


def test_helios_log_keeps_user_vc_and_job_name(tmp_path):
    log = pd.read_csv(DATA / "helios_cluster_log.csv", dtype=str).head(3)
    log["jobname"] = ["bert-ft-1", "resnet50", "bert-ft-2"]
    log.to_csv(tmp_path / "cluster_log.csv", index=False)
    w = load_trace(tmp_path / "cluster_log.csv", format="helios")
    assert list(w.jobs["name"]) == ["bert-ft-1", "resnet50", "bert-ft-2"]
    assert list(w.jobs["user"]) == ["uXBbc", "uVMrF", "uzqls"]
    assert list(w.jobs["vc"]) == ["vcJkd", "vchbv", "vcpDC"]


def test_chronus_keeps_its_vc_users(tmp_path):
    path = tmp_path / "trace_job_Philly_MIX1.csv"
    path.write_text(
        "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,"
        "expect_time_list,expect_value_list,best_effort,job_type\n"
        "0,vc_6214e9,1,10,100,vgg16,700,14,1100,10,0,strict\n"
        "1,vc_ed69ec,2,20,100,resnet50,90,8,0,10,1,best\n"
    )
    w = load_trace(path, format="chronus")
    assert list(w.jobs["user"]) == ["vc_6214e9", "vc_ed69ec"]
    assert list(w.jobs["vc"]) == ["6214e9", "ed69ec"]


class Recorder(Predictor):
    """Remembers the features it is asked about and shown."""

    name = "recorder"

    def start(self) -> None:
        self.asked: dict[object, JobFeatures] = {}
        self.seen: list[FinishedJob] = []

    def observe(self, record: FinishedJob) -> None:
        self.seen.append(record)

    def predict(self, features: JobFeatures, now: float) -> float:
        self.asked[features.job_id] = features
        return 100.0


def test_users_and_group_names_reach_the_predictor(tmp_path):
    """What the loader kept is what the predictor is asked with (and shown at finish)."""
    w = load_trace(pai_with_tags(tmp_path))
    recorder = Recorder()
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 4, "gpus_per_node": 8}]}
    )
    dlsched.simulate(w, cluster, policy="sjf", estimator=PredictingEstimator(recorder), audit=False)
    asked = recorder.asked
    assert asked["j1"].user == "uA" and asked["j1"].name == "grp-bert-7f"
    assert asked["j2"].user == "uB" and asked["j2"].name == "grp-ctr-a1"
    assert asked["j3"].name is None
    assert {r.features.job_id for r in recorder.seen} == set(w.jobs["job_id"])


def test_history_features_table_by_hand():
    """User/VC as given, name tokens (numbers dropped, padded with None), GPUs, hour and
    weekday of the submit time; columns are the same whatever the trace carries."""
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 8 * 86400 + 23 * 3600 + 3599],
            "num_gpus": [1, 8],
            "user": ["u1", None],
            "vc": ["vc9", "vc9"],
            "name": ["BERT-large_ft.v2-20200901", None],
            "duration": [5.0, 6.0],
        }
    )
    table = history_features(jobs)
    assert list(table.columns) == list(HISTORY_FEATURES)
    assert list(table.index) == ["a", "b"]
    assert table.loc["a"].tolist() == ["u1", "vc9", "bert", "large", 1.0, 0.0, 0.0]
    assert table.loc["b"].tolist() == [None, "vc9", None, None, 8.0, 23.0, 1.0]
    bare = history_features(jobs[["job_id", "submit_time", "num_gpus"]])
    assert list(bare.columns) == list(HISTORY_FEATURES)
    assert bare["user"].isna().all() and bare["name_token_0"].isna().all()
    assert name_tokens("12-34") == [] and name_tokens(None) == []
    with pytest.raises(ConfigError, match="num_gpus"):
        history_features(jobs.drop(columns="num_gpus"))


def test_history_features_of_a_workload_match_the_predictors_features(tmp_path):
    """One extraction: the table's rows are what the predictors compute job by job, and the
    encoder's numeric row follows them (categories coded in the order first seen)."""
    w = load_trace(pai_with_tags(tmp_path))
    table = history_features(w)
    encoder = FeatureEncoder()
    for row in w.jobs.itertuples(index=False):
        features = JobFeatures(
            job_id=row.job_id,
            submit_time=row.submit_time,
            num_gpus=int(row.num_gpus),
            user=row.user,
            vc=None,
            name=row.name if isinstance(row.name, str) else None,
        )
        values = history_values(features)
        assert tuple(table.loc[row.job_id]) == values
        assert values == job_history_features(
            user=features.user,
            vc=None,
            name=features.name,
            num_gpus=features.num_gpus,
            submit_time=features.submit_time,
        )
        encoder.learn(features)
    first = w.jobs.iloc[0]
    coded = encoder.row(
        JobFeatures(first["job_id"], first["submit_time"], int(first["num_gpus"]), user="uA")
    )
    assert coded[0] == 0.0 and math.isnan(coded[1])  # uA was the first user seen; no VC
    assert len(coded) == len(HISTORY_FEATURES) == len(HISTORY_CATEGORICAL)


def test_helios_rules_use_the_pai_group_history(tmp_path):
    """On 32 GPUs nothing queues. j8 (uA, grp-bert-7f) arrives at 4000 s, after j1 (uA,
    grp-bert-7f, 3580 s) finished at 3580: predicted 3580. j10 (uB, grp-ctr-a1) at 6000 s,
    after j2 (same user and group, 3040 s) finished at 4040: predicted 3040."""
    from dlsched.predict.helios import HeliosPredictor

    class Recording(HeliosPredictor):
        def start(self) -> None:
            super().start()
            self.answers: dict[object, float] = {}

        def predict(self, features: JobFeatures, now: float) -> float:
            answer = super().predict(features, now)
            self.answers[features.job_id] = answer
            return answer

    predictor = Recording()
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 4, "gpus_per_node": 8}]}
    )
    dlsched.simulate(
        load_trace(pai_with_tags(tmp_path)),
        cluster,
        policy="qssf",
        estimator=PredictingEstimator(predictor),
        audit=False,
    )
    assert predictor.answers["j8"] == pytest.approx(3580.0)
    assert predictor.answers["j10"] == pytest.approx(3040.0)
