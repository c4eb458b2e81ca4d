"""Workload transforms: what each does, determinism per seed, and the provenance it leaves."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dlsched.bundled import bundled_trace
from dlsched.cluster import Cluster
from dlsched.traces import CANONICAL_COLUMNS, load_trace, validate_jobs
from dlsched.traces.transforms import (
    GAVEL_DISTRIBUTED_JOB_TYPES,
    GAVEL_JOB_TYPES,
    assign_deadlines,
    assign_models,
    cap_gpu_demand,
    filter_jobs,
    sample_jobs,
    scale_arrival_rate,
    tile,
    time_window,
)


@pytest.fixture(scope="module")
def day():
    return load_trace(bundled_trace("philly_day.csv"))


def small(**extra) -> pd.DataFrame:
    """Four jobs you can follow on paper."""
    table = {
        "job_id": [1, 2, 3, 4],
        "submit_time": [0.0, 10.0, 20.0, 40.0],
        "num_gpus": [1, 2, 8, 1],
        "duration": [100.0, 50.0, 10.0, 30.0],
        "vc": ["a", "b", "a", None],
        "user": ["u", "v", "u", "w"],
        "status": ["Pass", "Failed", "Pass", "Killed"],
    }
    table.update(extra)
    return pd.DataFrame(table)


def workload(**extra):
    return validate_jobs(small(**extra), "<small>", lenient=False, fmt="canonical")


def names(w) -> list[str]:
    return [t["name"] for t in w.provenance["transforms"]]


def test_time_window_keeps_half_open_interval_and_rebases():
    """[10, 40) keeps jobs 2 and 3, shifted so 10 s becomes 0; deadlines move too."""
    w = workload(deadline=[200.0, 60.0, 25.0, np.nan])
    out = time_window(w, 10, 40)
    assert out.jobs["job_id"].tolist() == [2, 3]
    assert out.jobs["submit_time"].tolist() == [0.0, 10.0]
    assert out.jobs["deadline"].tolist() == [50.0, 15.0]
    entry = out.provenance["transforms"][-1]
    assert entry == {
        "name": "time_window",
        "start_s": 10.0,
        "end_s": 40.0,
        "rebase": True,
        "jobs_kept": 2,
        "jobs_dropped": 2,
    }
    assert len(w) == 4 and w.provenance["transforms"] == []  # the input is untouched


def test_time_window_accepts_dates_when_the_trace_has_an_origin(tmp_path):
    """With provenance['time_origin'], dates work; the origin moves with the rebase."""
    w = validate_jobs(small(), "<s>", lenient=False, fmt="canonical")
    w.provenance["time_origin"] = "2017-10-04 00:00:00"
    out = time_window(w, "2017-10-04 00:00:10", "2017-10-04 00:00:30")
    assert out.jobs["job_id"].tolist() == [2, 3]
    assert out.provenance["time_origin"] == "2017-10-04 00:00:10"
    with pytest.raises(ValueError, match="no time origin"):
        time_window(workload(), "2017-10-04")


def test_scale_arrival_rate_shrinks_gaps_and_keeps_slack():
    """Factor 2 halves every gap from the first submission; deadline − submit is kept."""
    out = scale_arrival_rate(workload(deadline=[150.0, np.nan, 45.0, 41.0]), 2)
    assert out.jobs["submit_time"].tolist() == [0.0, 5.0, 10.0, 20.0]
    assert out.jobs["deadline"].tolist()[0] == 150.0 and out.jobs["deadline"].tolist()[2] == 35.0
    assert out.provenance["transforms"] == [{"name": "scale_arrival_rate", "factor": 2.0}]
    with pytest.raises(ValueError):
        scale_arrival_rate(workload(), 0)


def test_sample_jobs_is_deterministic_per_seed(day):
    """The same seed picks the same jobs; another seed picks others; order is kept."""
    a, b, c = (sample_jobs(day, 100, seed=s) for s in (7, 7, 8))
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert set(a.jobs["job_id"]) != set(c.jobs["job_id"])
    assert a.jobs["submit_time"].is_monotonic_increasing and len(a) == 100
    assert a.provenance["transforms"] == [{"name": "sample_jobs", "n": 100, "seed": 7}]
    with pytest.raises(ValueError):
        sample_jobs(day, len(day) + 1, seed=0)


def test_gavel_mix_is_uniform_and_multi_gpu_jobs_get_distributed_types(day):
    """Default mix: all 26 Gavel types on 1-GPU jobs, only the 19 distributed ones beyond."""
    out = assign_models(day, seed=3)
    jobs = out.jobs
    assert set(jobs["model"]) <= set(GAVEL_JOB_TYPES) and len(GAVEL_JOB_TYPES) == 26
    multi = jobs[jobs["num_gpus"] > 1]
    assert set(multi["model"]) <= set(GAVEL_DISTRIBUTED_JOB_TYPES)
    assert len(GAVEL_DISTRIBUTED_JOB_TYPES) == 19
    single = jobs.loc[jobs["num_gpus"] == 1, "model"].value_counts()
    assert len(single) == 26 and single.max() < 2.5 * single.min()  # ~2,211 / 26 each
    pd.testing.assert_frame_equal(assign_models(day, seed=3).jobs, jobs)
    assert out.provenance["transforms"][-1] == {
        "name": "assign_models",
        "seed": 3,
        "distribution": "gavel",
        "overwrite": True,
        "jobs_assigned": len(day),
    }


def test_gavel_job_types_match_the_bundled_throughput_table():
    """The 26 names are exactly the models of Gavel's oracle; 19 have multi-GPU entries."""
    import ast
    import gzip
    from importlib import resources

    raw = resources.files("dlsched.data") / "gavel_simulation_throughputs.json.gz"
    table = json.loads(gzip.decompress(raw.read_bytes()))["v100"]
    keys = [ast.literal_eval(k) for k in table]
    assert {m for m, _ in keys} == set(GAVEL_JOB_TYPES)
    assert {m for m, n in keys if n > 1} == set(GAVEL_DISTRIBUTED_JOB_TYPES)


def test_assign_models_from_weights_and_only_missing():
    """A mapping gives weights; overwrite=False fills only jobs without a model."""
    w = workload(model=["keep", None, None, None])
    out = assign_models(w, seed=1, models={"x": 1.0, "y": 0.0}, overwrite=False)
    assert out.jobs["model"].tolist() == ["keep", "x", "x", "x"]
    assert out.provenance["transforms"][-1]["distribution"] == {"x": 1.0, "y": 0.0}
    with pytest.raises(ValueError):
        assign_models(w, seed=1, models={})


def test_assign_deadlines_follows_the_recipe():
    """deadline = submit + U(a, b) × duration, seeded, and only for the chosen fraction."""
    w = workload()
    out = assign_deadlines(w, 1.2, 3.0, seed=5)
    jobs = out.jobs
    slack = (jobs["deadline"] - jobs["submit_time"]) / jobs["duration"]
    assert slack.between(1.2, 3.0).all()
    pd.testing.assert_frame_equal(assign_deadlines(w, 1.2, 3.0, seed=5).jobs, jobs)
    assert not assign_deadlines(w, 1.2, 3.0, seed=6).jobs["deadline"].equals(jobs["deadline"])
    none = assign_deadlines(w, 1.2, 3.0, seed=5, fraction=0.0)
    assert none.jobs["deadline"].isna().all()
    entry = out.provenance["transforms"][-1]
    assert (entry["low"], entry["high"], entry["seed"], entry["jobs_with_deadline"]) == (
        1.2,
        3.0,
        5,
        4,
    )


def test_assign_deadlines_on_a_fraction_is_close_to_it(day):
    """fraction=0.2 gives about a fifth of the jobs a deadline (Hydra's light case: 19.7 %)."""
    out = assign_deadlines(day, 1.2, 3.0, seed=0, fraction=0.2)
    share = out.jobs["deadline"].notna().mean()
    assert 0.17 < share < 0.23


def test_assign_deadlines_uses_fastest_per_type_duration_and_needs_one():
    """Without duration, the fastest duration_<type> is the basis; steps alone are an error."""
    table = small(duration=[np.nan] * 4, duration_a100=[10.0] * 4, duration_v100=[20.0] * 4)
    out = assign_deadlines(
        validate_jobs(table, "<t>", lenient=False, fmt="canonical"), 2.0, 2.0, seed=0
    )
    assert (out.jobs["deadline"] - out.jobs["submit_time"]).tolist() == [20.0] * 4
    steps_only = validate_jobs(
        small(duration=[np.nan] * 4, total_steps=[5.0] * 4), "<t>", lenient=False, fmt="canonical"
    )
    with pytest.raises(ValueError, match="job 1 has no duration"):
        assign_deadlines(steps_only, 1.0, 2.0, seed=0)
    given = assign_deadlines(steps_only, 1.0, 1.0, seed=0, durations=[1.0, 2.0, 3.0, 4.0])
    assert (given.jobs["deadline"] - given.jobs["submit_time"]).tolist() == [1.0, 2.0, 3.0, 4.0]


def _cluster() -> Cluster:
    return Cluster.from_dict(
        {
            "name": "tiny",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 4},
                {"gpu_type": "K80", "count": 2, "gpus_per_node": 2},
            ],
        }
    )


def test_cap_gpu_demand_clips_to_the_largest_type_and_keeps_gpu_time():
    """An 8-GPU job on a cluster whose largest type has 4 GPUs runs on 4 for twice as long."""
    out = cap_gpu_demand(workload(), _cluster())
    row = out.jobs.set_index("job_id").loc[3]
    assert (row["num_gpus"], row["duration"]) == (4, 20.0)
    entry = out.provenance["transforms"][-1]
    assert (entry["jobs_clipped"], entry["jobs_dropped"], entry["cluster"]) == (1, 0, "tiny")
    kept = cap_gpu_demand(workload(), _cluster(), duration="keep")
    assert kept.jobs.set_index("job_id").loc[3, "duration"] == 10.0


def test_cap_gpu_demand_shrinks_cpu_and_memory_demands_with_the_gpus():
    """A clipped job keeps its CPU and memory per GPU (rounded up); others keep theirs."""
    w = workload(cpu_milli=[1000, 2000, 16_000, 3000], memory_mib=[10, 20, 10_001, 30])
    out = cap_gpu_demand(w, _cluster()).jobs.set_index("job_id")
    assert out.loc[3, ["num_gpus", "cpu_milli", "memory_mib"]].tolist() == [4, 8_000, 5_001]
    assert out.loc[1, ["cpu_milli", "memory_mib"]].tolist() == [1000, 10]


def test_cap_gpu_demand_drop_mode_and_type_constraints():
    """drop removes jobs that do not fit; a constraint caps by its allowed types only."""
    w = workload(gpu_constraint=[None, "K80", None, "T4"], num_gpus=[1, 4, 8, 1])
    out = cap_gpu_demand(w, _cluster(), mode="drop")
    assert out.jobs["job_id"].tolist() == [1, 2]  # job 3 too big, job 4 wants a missing type
    clipped = cap_gpu_demand(w, _cluster())
    assert clipped.jobs.set_index("job_id").loc[2, "num_gpus"] == 4  # K80 total is 4
    assert clipped.provenance["transforms"][-1]["jobs_without_allowed_type"] == 1
    assert cap_gpu_demand(workload(), 2).jobs["num_gpus"].max() == 2


def test_tile_makes_labelled_time_shifted_copies():
    """k copies, each offset by the span plus the mean gap; ids stay unique; tiled is said."""
    out = tile(workload(), 3)
    jobs = out.jobs
    assert len(jobs) == 12 and jobs["job_id"].is_unique
    offset = 40 + 40 / 3
    assert jobs.loc[jobs["tile"] == 2, "submit_time"].tolist() == pytest.approx(
        [2 * offset + t for t in (0, 10, 20, 40)]
    )
    assert sorted(jobs.loc[jobs["tile"] == 1, "job_id"]) == [5, 6, 7, 8]
    assert out.provenance["tiled"] is True
    assert out.provenance["transforms"][-1]["tiled"] is True
    assert list(jobs.columns[: len(CANONICAL_COLUMNS)]) == list(CANONICAL_COLUMNS)
    assert list(jobs.columns[-2:]) == ["tile", "source_row"]


def test_tile_with_text_ids_and_zero_offset(day):
    """Text ids get '#i'; offset 0 stacks the copies at the same times."""
    out = tile(day.head(5), 2, offset_s=0)
    assert out.jobs["job_id"].tolist()[:2] == [
        day.jobs["job_id"].iat[0],
        day.jobs["job_id"].iat[0] + "#1",
    ]
    assert (
        out.jobs["submit_time"].to_numpy()[::2] == out.jobs["submit_time"].to_numpy()[1::2]
    ).all()


def test_filter_jobs_by_vc_user_status_and_predicate():
    """Criteria combine with 'and'; the entry records them and the counts."""
    w = workload()
    assert filter_jobs(w, vc="a").jobs["job_id"].tolist() == [1, 3]
    assert filter_jobs(w, status=["Pass", "Killed"], user="u").jobs["job_id"].tolist() == [1, 3]

    def big(jobs):
        return jobs["num_gpus"] > 1

    out = filter_jobs(w, predicate=big)
    assert out.jobs["job_id"].tolist() == [2, 3]
    assert out.provenance["transforms"][-1] == {
        "name": "filter_jobs",
        "predicate": "test_filter_jobs_by_vc_user_status_and_predicate.<locals>.big",
        "jobs_kept": 2,
        "jobs_dropped": 2,
    }


def test_chained_transforms_record_every_step_and_stay_json(day):
    """A pipeline's provenance lists each step in order and survives json.dumps."""
    out = tile(
        assign_deadlines(
            assign_models(sample_jobs(time_window(day, 0, 43_200), 500, seed=1), seed=2),
            1.5,
            2.0,
            seed=3,
        ),
        2,
    )
    assert names(out) == ["time_window", "sample_jobs", "assign_models", "assign_deadlines", "tile"]
    assert json.loads(json.dumps(out.provenance)) == out.provenance
    assert out.jobs["submit_time"].is_monotonic_increasing and len(out) == 1000
