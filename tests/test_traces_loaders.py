"""Format loaders: real files from ../shared (skipped when absent) and hand-made fixtures.

Numbers checked against real files are the ones stated in the shared READMEs.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dlsched.errors import TraceError
from dlsched.traces import detect_format, load_trace
from dlsched.traces import philly as philly_raw

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
SHARED = ROOT.parent / "shared"


def shared(relative: str) -> Path:
    """A file of ../shared, or skip the test when the shared data is not there."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"needs ../shared/{relative}")
    return path


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- Philly, Pollux-preprocessed table (real) ---------------------------------------------


@pytest.fixture(scope="module")
def philly_pollux():
    return load_trace(shared("traces/philly/philly_jobs_pollux.csv.gz"))


def test_philly_pollux_has_the_readme_row_count_and_gpu_mix(philly_pollux):
    """82,247 jobs with the README's GPU-demand distribution, nothing dropped."""
    w = philly_pollux
    assert len(w) == 82_247 and w.provenance["format"] == "philly-pollux"
    assert w.provenance["excluded"] == {} and w.provenance["skipped"] == []
    assert w.jobs["num_gpus"].value_counts().to_dict() == {
        1: 76_627,
        2: 1_818,
        4: 1_870,
        8: 1_643,
        12: 7,
        16: 199,
        24: 7,
        32: 67,
        64: 6,
        128: 3,
    }


def test_philly_pollux_vcs_span_and_durations_match_the_readme(philly_pollux):
    """15 VCs with the README's largest counts; span and duration statistics as stated."""
    jobs = philly_pollux.jobs
    counts = jobs["vc"].value_counts()
    assert len(counts) == 15
    assert counts[["6214e9", "11cb48", "6c71a0", "b436b2"]].tolist() == [
        41_226,
        16_091,
        9_953,
        7_423,
    ]
    assert philly_pollux.provenance["time_origin"] == "2017-09-04 10:30:41"
    last = pd.Timestamp("2017-09-04 10:30:41") + pd.Timedelta(seconds=jobs["submit_time"].max())
    assert last == pd.Timestamp("2017-12-22 08:02:11")
    assert (
        jobs["submit_time"]
        < (pd.Timestamp("2017-09-18") - pd.Timestamp("2017-09-04 10:30:41")).total_seconds()
    ).sum() == 20
    d = jobs["duration"]
    assert (d.min(), d.median(), round(d.mean()), d.max()) == (1, 1_144, 13_136, 4_628_226)


def test_philly_pollux_ids_are_row_positions_so_duplicates_stay(philly_pollux):
    """job_id is the 0-based data-row index; the 65 exact duplicate rows stay distinct."""
    jobs = philly_pollux.jobs
    assert sorted(jobs["job_id"]) == list(range(82_247))
    assert (jobs["source_row"] == jobs["job_id"] + 2).all()
    assert jobs.drop(columns=["job_id", "source_row"]).duplicated().sum() == 65


def test_philly_pollux_bad_timestamp_names_the_field(tmp_path):
    """An unparsable timestamp is an error on that line; lenient loading skips it."""
    path = _write(
        tmp_path / "p.csv",
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:01:55,66.0,1,66.0,11cb48\nyesterday,5,1,5,11cb48\n",
    )
    with pytest.raises(TraceError, match=r"p\.csv, row 3, field 'timestamp': .*date and time"):
        load_trace(path, format="philly-pollux")
    w = load_trace(path, format="philly-pollux", lenient=True)
    assert w.jobs["job_id"].tolist() == [0]
    assert w.provenance["skipped"][0]["row"] == 3


# --- Philly raw cluster_job_log (hand-made fixture) -------------------------------------


def test_philly_log_follows_the_official_definitions():
    """GPUs of the first attempt, run time first start → last end, queueing delay kept."""
    w = load_trace(DATA / "philly_cluster_job_log.json")
    assert w.provenance["format"] == "philly" and len(w) == 4
    by_id = w.jobs.set_index("job_id")
    readme = by_id.loc["application_1506638472019_14199"]
    assert readme["num_gpus"] == 8 and readme["status"] == "Pass" and readme["vc"] == "ee9e8c"
    assert readme["duration"] == 2 * 86_400 + 5 * 3600 + 41 * 60 + 3  # 01:12:09 → +2d 06:53:12
    assert readme["queueing_delay"] == 30 and readme["attempts"] == 2
    assert readme["user"] == "ce2f4c" and readme["source_row"] == 1
    two_machines = by_id.loc["application_1506638472019_00002"]
    assert (two_machines["num_gpus"], two_machines["duration"], two_machines["status"]) == (
        16,
        7200.0,
        "Killed",
    )
    assert by_id.loc["application_1506638472019_00008", "duration"] == 2 * 3600


def test_philly_log_rebases_time_to_the_first_submission():
    """submit_time counts seconds from the earliest submitted_time, recorded as the origin."""
    w = load_trace(DATA / "philly_cluster_job_log.json")
    assert w.provenance["time_origin"] == "2017-10-07 00:00:00"
    assert w.jobs["submit_time"].tolist() == [0.0, 4299.0, 10_800.0, 28_800.0]


def test_philly_log_excludes_jobs_without_a_run_time():
    """No attempt, no first start, still running, no GPU, zero run time: counted, not kept."""
    w = load_trace(DATA / "philly_cluster_job_log.json")
    assert w.provenance["rows_read"] == 9
    assert w.provenance["excluded"] == {
        philly_raw.NO_ATTEMPT: 1,
        philly_raw.STILL_RUNNING: 1,
        philly_raw.NO_START: 1,
        philly_raw.NO_GPUS: 1,
        philly_raw.ZERO_RUN: 1,
    }


def test_philly_log_as_json_lines_loads_the_same(tmp_path):
    """One job object per line (JSON Lines) gives the same workload as the list."""
    jobs = json.loads((DATA / "philly_cluster_job_log.json").read_text())
    path = _write(tmp_path / "cluster_job_log", "\n".join(json.dumps(j) for j in jobs))
    assert detect_format(path) == "philly"
    pd.testing.assert_frame_equal(
        load_trace(path).jobs, load_trace(DATA / "philly_cluster_job_log.json").jobs
    )


def _philly_with(tmp_path: Path, position: int, **changes) -> Path:
    jobs = json.loads((DATA / "philly_cluster_job_log.json").read_text())
    jobs[position - 1].update(changes)
    return _write(tmp_path / "cluster_job_log.json", json.dumps(jobs))


def test_philly_log_bad_submitted_time_is_an_error_naming_the_job(tmp_path):
    """A malformed submitted_time raises for that job's position; lenient skips it."""
    path = _philly_with(tmp_path, 3, submitted_time="07/10/2017")
    with pytest.raises(TraceError, match=r"row 3, field 'submitted_time': .*date and time"):
        load_trace(path)
    w = load_trace(path, lenient=True)
    assert len(w) == 3 and w.provenance["skipped"][0]["field"] == "submitted_time"


def test_philly_log_negative_run_time_is_an_error(tmp_path):
    """A last attempt ending before the first starts is reported on attempts[-1].end_time."""
    attempts = [
        {
            "start_time": "2017-10-07 03:00:05",
            "end_time": "2017-10-07 02:00:00",
            "detail": [{"ip": "m3", "gpus": ["gpu0"]}],
        }
    ]
    path = _philly_with(tmp_path, 3, attempts=attempts)
    with pytest.raises(TraceError, match=r"row 3, field 'attempts\[-1\]\.end_time'"):
        load_trace(path)


def test_philly_log_structural_problems_are_bad_rows(tmp_path):
    """A job without jobid, or with attempts that are not a list, is a bad row."""
    path = _philly_with(tmp_path, 2, attempts="none")
    with pytest.raises(TraceError, match=r"row 2, field 'attempts': attempts must be a list"):
        load_trace(path)
    jobs = json.loads((DATA / "philly_cluster_job_log.json").read_text())
    del jobs[0]["jobid"]
    path = _write(tmp_path / "nojobid.json", json.dumps(jobs))
    with pytest.raises(TraceError, match=r"row 1, field 'jobid': jobid is missing"):
        load_trace(path)


def test_philly_log_malformed_json_names_line_and_job(tmp_path):
    """Broken JSON raises with the line, column and the job's position."""
    text = (DATA / "philly_cluster_job_log.json").read_text()
    path = _write(tmp_path / "broken.json", text.replace('"vc": "6214e9"', '"vc" "6214e9"', 1))
    with pytest.raises(TraceError, match=r"row 2: malformed JSON .* at line \d+, column \d+"):
        load_trace(path, format="philly")


# --- Alibaba PAI 2020 (hand-made tables) -------------------------------------------------


def test_pai_directory_joins_jobs_tasks_and_instances():
    """A directory loads all three tables; GPU demand, share and type come from the tasks."""
    w = load_trace(DATA / "alibaba_pai")
    assert w.provenance["format"] == "alibaba-pai-2020" and len(w) == 6
    by_id = w.jobs.set_index("job_id")
    # j2: 3 workers × 50 % packed on 2 GPUs; j7: 2 × 150 % → 2 × 2; j8: 100 % + 50 %
    assert by_id["num_gpus"].to_dict() == {"j1": 1, "j2": 2, "j3": 8, "j7": 4, "j8": 2, "j10": 1}
    assert by_id["gpu_request"].to_dict() == {
        "j1": 1.0,
        "j2": 1.5,
        "j3": 8.0,
        "j7": 3.0,
        "j8": 1.5,
        "j10": 0.25,
    }
    # only a job asking for less than one GPU in all is fractional
    assert by_id["gpu_milli"].to_dict() == {
        "j1": 1000,
        "j2": 1000,
        "j3": 1000,
        "j7": 1000,
        "j8": 1000,
        "j10": 250,
    }
    assert by_id.loc["j8", "gpu_type"] is None and by_id.loc["j8", "gpu_types"] == "T4|V100"
    assert by_id.loc["j3", "gpu_type"] == "V100M32" and by_id.loc["j7", "status"] == "Failed"
    assert by_id.loc["j1", "user"] == "uA"
    # instance times win over task times (j1: instance 1020 → 4600, task 1010 → 4610)
    assert (by_id.loc["j1", "duration"], by_id.loc["j1", "queueing_delay"]) == (3580.0, 20.0)
    assert by_id.loc["j2", "duration"] == 5150 - 2110


def test_pai_without_instances_uses_task_times():
    """instance_table=False: run time from the earliest task start to the latest task end."""
    w = load_trace(DATA / "alibaba_pai" / "pai_job_table.csv", instance_table=False)
    by_id = w.jobs.set_index("job_id")
    assert (by_id.loc["j1", "duration"], by_id.loc["j1", "queueing_delay"]) == (3600.0, 10.0)
    assert "pai_instance_table" not in w.provenance["tables"]


def test_pai_excludes_non_replayable_jobs_and_rebases_time():
    """No tasks, CPU-only, never started, no end: counted; submit time from the first job."""
    w = load_trace(DATA / "alibaba_pai")
    assert w.provenance["rows_read"] == 10 and w.provenance["time_origin"] == 1000.0
    assert sorted(w.provenance["excluded"].values()) == [1, 1, 1, 1]
    assert w.jobs["submit_time"].tolist() == [0.0, 1000.0, 2000.0, 3000.0, 4000.0, 6000.0]
    assert w.provenance["tables"]["pai_task_table"]["rows_without_job"] == 1


def test_pai_distributed_tar_gz_tables_load(tmp_path):
    """The tables as distributed (one CSV inside a .tar.gz each) load like plain CSVs."""
    import tarfile

    for table in ("pai_job_table", "pai_task_table"):
        with tarfile.open(tmp_path / f"{table}.tar.gz", "w:gz") as archive:
            archive.add(DATA / "alibaba_pai" / f"{table}.csv", arcname=f"{table}.csv")
    w = load_trace(tmp_path)
    assert len(w) == 6 and detect_format(tmp_path / "pai_job_table.tar.gz") == "alibaba-pai-2020"


def test_pai_bad_task_row_names_the_task_file_and_line(tmp_path):
    """A malformed task row raises naming the task table; lenient skips its job only."""
    for name in ("pai_job_table.csv", "pai_task_table.csv"):
        shutil.copy(DATA / "alibaba_pai" / name, tmp_path / name)
    tasks = tmp_path / "pai_task_table.csv"
    tasks.write_text(tasks.read_text().replace("j3,worker,1.0", "j3,worker,one"))
    with pytest.raises(TraceError, match=r"pai_task_table\.csv, row 4, field 'inst_num'"):
        load_trace(tmp_path)
    w = load_trace(tmp_path, lenient=True)
    assert "j3" not in set(w.jobs["job_id"]) and len(w) == 5
    (skip,) = w.provenance["skipped"]
    assert skip["row"] == 3 and "pai_task_table.csv row 4" in skip["reason"]


def test_pai_job_table_alone_asks_for_the_task_table(tmp_path):
    """Without a task table beside it, the job table cannot be loaded, and says so."""
    shutil.copy(DATA / "alibaba_pai" / "pai_job_table.csv", tmp_path / "pai_job_table.csv")
    with pytest.raises(TraceError, match="needs its task table"):
        load_trace(tmp_path / "pai_job_table.csv")


# --- Alibaba GPU 2023 / openb (real) ------------------------------------------------------


@pytest.fixture(scope="module")
def openb_default():
    return load_trace(shared("traces/alibaba_gpu_v2023/openb_pod_list_default.csv.gz"))


def test_openb_default_counts_match_the_readme(openb_default):
    """8,152 pods read; CPU-only (1,088) and never-scheduled GPU pods (861) excluded."""
    w = openb_default
    assert w.provenance["format"] == "alibaba-gpu-2023"
    assert w.provenance["rows_read"] == 8_152
    excluded = w.provenance["excluded"]
    assert sum(excluded.values()) == 1_088 + 861 and len(w) == 7_064 - 861
    assert w.jobs["status"].value_counts().to_dict() == {
        "Running": 4_149,
        "Failed": 1_869,
        "Succeeded": 185,
    }
    # README, all pods: 1 → 6,989, 2 → 16, 4 → 15, 8 → 44; one 2-GPU pod never ran
    assert w.jobs["num_gpus"].value_counts().to_dict() == {1: 6_129, 8: 44, 2: 15, 4: 15}
    assert w.jobs["submit_time"].max() <= 12_901_761
    assert w.jobs["duration"].max() == pytest.approx(145.11 * 86_400, rel=1e-4)


def test_openb_fractional_pods_keep_their_share(openb_default):
    """A pod asking for part of a GPU has num_gpus 1 and gpu_milli < 1000."""
    jobs = openb_default.jobs.set_index("job_id")
    assert jobs.loc["openb-pod-0001", "gpu_milli"] == 460
    fractional = jobs[jobs["gpu_milli"] < 1000]
    assert len(fractional) > 2000 and (fractional["num_gpus"] == 1).all()
    assert jobs["gpu_constraint"].isna().all()  # the default trace has no gpu_spec


def test_openb_gpuspec_constraints_are_kept():
    """In gpuspec33, 2,388 GPU pods carry gpu_spec; the loaded ones keep it as written."""
    path = shared("traces/alibaba_gpu_v2023/openb_pod_list_gpuspec33.csv.gz")
    raw = pd.read_csv(path, keep_default_na=False)
    assert (raw["gpu_spec"] != "").sum() == 2_388
    jobs = load_trace(path).jobs.set_index("job_id")
    assert jobs.loc["openb-pod-0009", "gpu_constraint"] == "V100M16|V100M32"
    expected = raw[(raw["gpu_spec"] != "") & (raw["num_gpu"] > 0) & (raw["scheduled_time"] != "")]
    assert jobs["gpu_constraint"].notna().sum() == len(expected)


def test_openb_multigpu_variant_explains_why_it_cannot_load():
    """The 5-column multigpu files have no times: a clear error, not a crash."""
    with pytest.raises(TraceError, match="multigpu.*cannot be replayed"):
        load_trace(shared("traces/alibaba_gpu_v2023/openb_pod_list_multigpu20.csv.gz"))


def test_openb_bad_fraction_is_an_error(tmp_path):
    """gpu_milli outside 1..1000 is reported under the source field."""
    path = _write(
        tmp_path / "pods.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time\n"
        "p0,1000,1024,1,1500,,LS,Running,0,100,10\n",
    )
    with pytest.raises(TraceError, match=r"row 2, field 'gpu_milli': .*1 to 1000"):
        load_trace(path)


# --- Helios cluster_log (hand-made) -------------------------------------------------------


def test_helios_log_maps_columns_and_excludes_cpu_jobs():
    """GPU jobs with VC, user and state; CPU-only, never-run and zero-length jobs counted."""
    w = load_trace(DATA / "helios_cluster_log.csv")
    assert w.provenance["format"] == "helios" and len(w) == 6
    assert w.provenance["excluded"] == {
        "CPU-only job (gpu_num 0)": 2,
        "no duration (never ran)": 1,
        "zero run time (duration 0)": 1,
    }
    first = w.jobs.iloc[0]
    assert (first.job_id, first.user, first.vc, first.num_gpus, first.duration, first.status) == (
        1425511,
        "uXBbc",
        "vcJkd",
        1,
        36_848.0,
        "COMPLETED",
    )
    assert w.provenance["time_origin"] == "2020-06-09 18:41:01"
    assert w.jobs["submit_time"].tolist() == [0.0, 26.0, 27.0, 59.0, 89.0, 179.0]
    assert w.jobs["queueing_delay"].tolist() == [0, 0, 0, 480, 60, 5]
    assert w.jobs["source_row"].tolist() == [2, 3, 4, 6, 7, 11]


def test_helios_log_in_small_chunks_gives_the_same_jobs(monkeypatch):
    """Streaming 3 rows at a time gives exactly the one-chunk result."""
    whole = load_trace(DATA / "helios_cluster_log.csv")
    monkeypatch.setattr("dlsched.traces.reading.CHUNK_ROWS", 3)
    chunked = load_trace(DATA / "helios_cluster_log.csv")
    pd.testing.assert_frame_equal(chunked.jobs, whole.jobs)
    assert chunked.provenance == whole.provenance


def test_helios_bad_submit_time_names_row_and_field(tmp_path):
    """A malformed submit_time is reported on its line; lenient skips it."""
    text = (
        (DATA / "helios_cluster_log.csv")
        .read_text()
        .replace("2020-06-09 18:41:27,2020", "09/06/2020,2020", 1)
    )
    path = _write(tmp_path / "cluster_log.csv", text)
    with pytest.raises(TraceError, match=r"row 3, field 'submit_time'"):
        load_trace(path)
    assert 1425512 not in set(load_trace(path, lenient=True).jobs["job_id"])


# --- Chronus, Hydra, Sia/Pollux, Gavel per-VC (real) --------------------------------------


def test_chronus_mix1_counts_and_deadlines():
    """30,940 rows; num_gpu 0 jobs excluded; strict/soft jobs get submit + expect_time."""
    w = load_trace(shared("traces/philly_chronus/trace_job_Philly_MIX1.csv.gz"))
    assert w.provenance["format"] == "chronus" and w.provenance["rows_read"] == 30_940
    assert sum(w.provenance["excluded"].values()) == 184 and len(w) == 30_940 - 184
    counts = w.jobs["num_gpus"].value_counts()
    assert (counts[1], counts[4], counts[8], counts[2], counts[16]) == (
        28_361,
        1_173,
        876,
        205,
        124,
    )
    assert w.jobs["vc"].nunique() == 11 and w.jobs["submit_time"].between(1, 20_151).all()
    best = w.jobs["best_effort"] == 1
    assert w.jobs.loc[best, "deadline"].isna().all()
    assert w.jobs.loc[~best, "deadline"].notna().all()
    assert (w.jobs.loc[~best, "deadline"] > w.jobs.loc[~best, "submit_time"]).all()


def test_chronus_mix2_job_types_match_the_readme():
    """MIX2: 18,525 soft + 9,276 strict + 3,139 best-effort jobs in the file."""
    w = load_trace(shared("traces/philly_chronus/trace_job_Philly_MIX2.csv.gz"))
    excluded = sum(w.provenance["excluded"].values())
    types = w.jobs["job_type"].value_counts()
    assert types.sum() + excluded == 30_940
    assert types["soft"] <= 18_525 and types["strict"] <= 9_276 and types["best"] <= 3_139
    row = w.jobs.set_index("job_id").loc[1]
    assert (row["user"], row["vc"], row["deadline"]) == ("vc_6214e9", "6214e9", 7505 + 235)


@pytest.mark.parametrize(
    "case, with_deadline, first_row",
    [
        ("20_ddl", 0.197, (1020.0, 1540.0, 2595.0)),
        ("30_ddl", 0.2946, (2141.0, 3621.0, 5452.0)),
    ],
)
def test_hydra_cases_have_per_type_durations_and_deadlines(case, with_deadline, first_row):
    """5,000 one-GPU jobs at t = 0 with A100/V100/2080Ti durations; the stated deadline share."""
    w = load_trace(shared(f"anchors/hydra/{case}.csv.gz"))
    jobs = w.jobs
    assert w.provenance["format"] == "hydra" and len(jobs) == 5_000
    assert (jobs["submit_time"] == 0).all() and (jobs["num_gpus"] == 1).all()
    assert jobs["job_id"].tolist() == list(range(5_000))  # the file's order
    assert {"duration_a100", "duration_v100", "duration_gtx2080ti"} <= set(jobs.columns)
    assert jobs["duration"].isna().all() and jobs["gpu_type"].isna().all()
    assert round(jobs["deadline"].notna().mean(), 4) == with_deadline
    first = jobs.iloc[0]
    assert (first.duration_a100, first.duration_v100, first.duration_gtx2080ti) == first_row


def test_sia_phoebe_workload_matches_the_readme():
    """30 jobs over 1.76 h: 16 cifar10, 6 deepspeech2, 5 bert, 2 yolov3, 1 imagenet."""
    w = load_trace(shared("anchors/sia_physical_testbed/phoebe_workload.csv"))
    jobs = w.jobs
    assert w.provenance["format"] == "sia-pollux" and len(jobs) == 30
    assert jobs["model"].value_counts().to_dict() == {
        "cifar10": 16,
        "deepspeech2": 6,
        "bert": 5,
        "yolov3": 2,
        "imagenet": 1,
    }
    assert jobs["num_gpus"].between(2, 14).all() and jobs["num_gpus"].median() == 10
    assert round(jobs["submit_time"].max() / 3600, 2) == 1.76
    assert jobs["duration"].isna().all() and "converges" in w.provenance["work"]


def test_pollux_workloads_have_160_jobs_each():
    """pollux/workloads: 8 files × 160 jobs, all loadable."""
    folder = shared("traces/sia_pollux/pollux/workloads")
    files = sorted(folder.glob("workload-*.csv.gz"))
    assert len(files) == 8
    assert [len(load_trace(f)) for f in files] == [160] * 8


def test_gavel_per_vc_traces_sum_to_the_readme_total():
    """The 15 seed=0 per-VC traces (7-field layout) hold 15,264 jobs."""
    folder = shared("traces/philly_gavel/traces/msr/seed=0")
    sizes = {f.name.split(".")[0]: len(load_trace(f)) for f in folder.glob("*.trace.gz")}
    assert sum(sizes.values()) == 15_264 and sizes["2869ce"] == 533 and sizes["6214e9"] == 2000


# --- detection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "relative, expected",
    [
        ("traces/philly/philly_jobs_pollux.csv.gz", "philly-pollux"),
        ("traces/alibaba_gpu_v2023/openb_pod_list_default.csv.gz", "alibaba-gpu-2023"),
        ("traces/alibaba_gpu_v2023/openb_pod_list_multigpu20.csv.gz", "alibaba-gpu-2023"),
        ("traces/philly_chronus/trace_job_Philly_SLO.csv.gz", "chronus"),
        ("anchors/hydra/30_ddl.csv.gz", "hydra"),
        ("traces/sia_pollux/sia/workloads/saturn/workload-1.csv.gz", "sia-pollux"),
        ("traces/tiresias/60_job.csv", "tiresias"),
    ],
)
def test_detect_format_of_shared_files(relative, expected):
    """Each real file is detected as its format from its header."""
    assert detect_format(shared(relative)) == expected


@pytest.mark.parametrize(
    "name, expected",
    [
        ("philly_cluster_job_log.json", "philly"),
        ("alibaba_pai", "alibaba-pai-2020"),
        ("alibaba_pai/pai_job_table.csv", "alibaba-pai-2020"),
        ("helios_cluster_log.csv", "helios"),
    ],
)
def test_detect_format_of_hand_made_fixtures(name, expected):
    """Fixtures are detected by content (JSON), directory layout, file name or header."""
    assert detect_format(DATA / name) == expected


def test_detection_works_on_gzipped_json_without_extension(tmp_path):
    """A gzipped cluster_job_log with no extension is still recognised as Philly JSON."""
    path = tmp_path / "cluster_job_log"
    path.write_bytes(gzip.compress((DATA / "philly_cluster_job_log.json").read_bytes()))
    assert detect_format(path) == "philly" and len(load_trace(path)) == 4


def test_detection_failure_lists_every_format_tried(tmp_path):
    """An unknown CSV header raises, listing each format and what it looks for."""
    path = _write(tmp_path / "mystery.csv", "when,gpus\n1,2\n")
    with pytest.raises(TraceError) as info:
        detect_format(path)
    message = str(info.value)
    for name in (
        "canonical",
        "chronus",
        "tiresias",
        "philly-pollux",
        "alibaba-gpu-2023",
        "helios",
        "sia-pollux",
        "hydra",
        "philly (JSON",
        "gavel",
        "alibaba-pai-2020",
    ):
        assert name in message
    assert "header: gpus, when" in message


def test_empty_directory_is_not_a_trace(tmp_path):
    """A directory without PAI tables raises saying what was looked for."""
    with pytest.raises(TraceError, match="pai_job_table"):
        load_trace(tmp_path)


def test_directory_for_a_single_file_format_is_refused(tmp_path):
    """format='canonical' on a directory raises instead of failing obscurely."""
    with pytest.raises(TraceError, match="is a directory"):
        load_trace(tmp_path, format="canonical")


def test_every_loader_output_round_trips_through_canonical_csv(tmp_path):
    """Hand-made fixtures of each multi-field format reload equal from canonical CSV."""
    for source in (
        DATA / "philly_cluster_job_log.json",
        DATA / "alibaba_pai",
        DATA / "helios_cluster_log.csv",
    ):
        w = load_trace(source)
        w.to_csv(tmp_path / "w.csv")
        back = load_trace(tmp_path / "w.csv")
        pd.testing.assert_frame_equal(
            back.jobs.drop(columns="source_row"),
            w.jobs.drop(columns="source_row"),
            check_dtype=False,
        )
        assert back.jobs["job_id"].dtype == w.jobs["job_id"].dtype
        assert np.array_equal(back.jobs["gpu_milli"], w.jobs["gpu_milli"])
        assert json.loads(json.dumps(w.provenance)) == w.provenance
