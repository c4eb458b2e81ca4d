"""Trace values a check must refuse (or convert) at loading, never read as a wrong number.

Parquet time columns, times too large for float64 seconds, true/false values in number
columns, a row giving both ``duration`` and ``total_steps``, non-finite or out-of-range
transform parameters, and CSV/parquet files too wide to be traces (issue 30).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dlsched.errors import ConfigError, TraceError
from dlsched.traces import load_trace, validate_jobs
from dlsched.traces.reading import MAX_COLUMNS
from dlsched.traces.schema import MAX_TIME_S, TIME_RESOLUTION_S
from dlsched.traces.transforms import (
    assign_deadlines,
    assign_models,
    cap_gpu_demand,
    make_elastic,
    sample_jobs,
    scale_arrival_rate,
    tile,
    time_window,
)


def _table(**columns) -> pd.DataFrame:
    """Two jobs; ``columns`` replace or add columns."""
    table = {
        "job_id": [1, 2],
        "submit_time": [0.0, 5.0],
        "num_gpus": [1, 2],
        "duration": [10.0, 20.0],
    }
    table.update(columns)
    return pd.DataFrame(table)


def _parquet(tmp_path: Path, **columns) -> Path:
    path = tmp_path / "t.parquet"
    _table(**columns).to_parquet(path)
    return path


def _csv(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.csv"
    path.write_text(text)
    return path


# ---- parquet timedelta / datetime columns ---------------------------------------------------


def test_parquet_timedelta_durations_are_seconds(tmp_path):
    """A 10 s timedelta duration loads as 10 seconds, not as its nanoseconds."""
    path = _parquet(
        tmp_path,
        submit_time=pd.to_timedelta([0, 5], unit="s"),
        duration=pd.to_timedelta([10, 20], unit="s"),
    )
    jobs = load_trace(path).jobs
    assert jobs["duration"].tolist() == [10.0, 20.0]
    assert jobs["submit_time"].tolist() == [0.0, 5.0]


def test_parquet_timedelta_per_type_durations_and_deadlines_are_seconds(tmp_path):
    """duration_<type> and deadline timedelta columns become seconds on the submit axis."""
    path = _parquet(
        tmp_path,
        duration=[np.nan, np.nan],
        duration_V100=pd.to_timedelta([30, 40], unit="s"),
        deadline=pd.to_timedelta([100, None], unit="s"),
    )
    jobs = load_trace(path).jobs
    assert jobs["duration_v100"].tolist() == [30.0, 40.0]
    assert jobs["deadline"].iat[0] == 100.0 and math.isnan(jobs["deadline"].iat[1])


def test_parquet_datetime_submit_times_are_rebased_to_the_first_submission(tmp_path):
    """Dates and times become seconds since the earliest submission, recorded as the
    time origin (in UTC); deadlines given as dates move with them."""
    submit = pd.to_datetime(
        ["2020-01-01 01:00:05", "2020-01-01 01:00:00.5"], format="ISO8601"
    ).tz_localize("Europe/Paris")
    deadline = pd.to_datetime(["2020-01-01 02:00:05", None]).tz_localize("Europe/Paris")
    workload = load_trace(_parquet(tmp_path, submit_time=submit, deadline=deadline))
    jobs = workload.jobs
    assert jobs["job_id"].tolist() == [2, 1]
    assert jobs["submit_time"].tolist() == [0.0, 4.5]
    assert jobs["deadline"].iat[1] == 3604.5
    assert workload.provenance["time_origin"] == "2020-01-01 00:00:00.500000"


def test_datetime_submit_time_with_numeric_deadline_is_refused(tmp_path):
    """A numeric deadline has no common axis with dates: the error names the column."""
    path = _parquet(
        tmp_path, submit_time=pd.to_datetime(["2020-01-01"] * 2), deadline=[100.0, np.nan]
    )
    with pytest.raises(TraceError, match="'deadline' does not; give both as dates"):
        load_trace(path)


@pytest.mark.parametrize(
    ("column", "values", "words"),
    [
        ("duration", pd.to_datetime(["2020-01-01"] * 2), "'duration' holds dates and times"),
        ("num_gpus", pd.to_timedelta([1, 2], unit="s"), "'num_gpus' holds time spans"),
        ("total_steps", pd.to_timedelta([1, 2], unit="s"), "'total_steps' holds time spans"),
        ("deadline", pd.to_datetime(["2020-01-01"] * 2), "'deadline' holds dates and times"),
    ],
)
def test_time_columns_where_no_time_belongs_are_refused(tmp_path, column, values, words):
    """A time in a count column (or a date as a duration) is refused, naming the column,
    strict or lenient."""
    extra = {"duration": [np.nan, np.nan]} if column == "total_steps" else {}
    path = _parquet(tmp_path, **extra, **{column: values})
    for lenient in (False, True):
        with pytest.raises(TraceError, match=words) as caught:
            load_trace(path, lenient=lenient)
        assert caught.value.field == column and str(path) in str(caught.value)


def test_a_dataframe_with_timedelta_durations_validates_as_seconds():
    """validate_jobs (and so simulate(DataFrame)) converts a timedelta column too."""
    table = _table(duration=pd.to_timedelta([10, 20], unit="s"))
    assert validate_jobs(table, "x", lenient=False, fmt="canonical").jobs["duration"].tolist() == [
        10.0,
        20.0,
    ]


# ---- times too large for float64 seconds ----------------------------------------------------


def test_max_time_is_where_float64_stops_resolving_a_millisecond():
    """Every time below MAX_TIME_S keeps 1 ms resolution; MAX_TIME_S itself does not."""
    assert np.spacing(np.nextafter(MAX_TIME_S, 0)) <= TIME_RESOLUTION_S
    assert np.spacing(MAX_TIME_S) > TIME_RESOLUTION_S


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("submit_time", 1.6e18),
        ("submit_time", MAX_TIME_S),
        ("deadline", 1.6e18),
        ("duration", 1e13),
        ("duration_v100", 1e300),
    ],
)
def test_times_beyond_float64_millisecond_resolution_are_refused(tmp_path, column, value):
    """A submit time in nanoseconds since the epoch (or any time or duration from 2^43 s
    up) is refused naming the row and the field, with how to fix it."""
    first = {"submit_time": 0.0, "deadline": np.nan}.get(column, 1.0)
    path = _parquet(tmp_path, **{column: [first, value]})
    with pytest.raises(TraceError, match=r"below 2\^43 s") as caught:
        load_trace(path)
    assert caught.value.row == 2 and caught.value.field == column
    if column == "submit_time":
        assert "rebase" in str(caught.value)


def test_lenient_loading_skips_and_counts_rows_with_huge_submit_times(tmp_path):
    """lenient=True skips the row and lists it; the other job keeps its exact time."""
    workload = load_trace(_parquet(tmp_path, submit_time=[1.6e18, 3.0]), lenient=True)
    assert workload.jobs["submit_time"].tolist() == [3.0]
    assert [s["row"] for s in workload.provenance["skipped"]] == [1]


def test_times_just_below_the_limit_load_exactly(tmp_path):
    """Epoch seconds (1.6e9) and epoch milliseconds read as seconds (1.6e12) still load."""
    jobs = load_trace(_parquet(tmp_path, submit_time=[1.6e9, 1.6e12])).jobs
    assert jobs["submit_time"].tolist() == [1.6e9, 1.6e12]


# ---- true/false values in number columns ----------------------------------------------------


@pytest.mark.parametrize("column", ["num_gpus", "priority", "gpu_milli", "duration", "deadline"])
def test_parquet_bools_in_number_columns_are_refused(tmp_path, column):
    """A bool column is not read as 1 and 0: the first row is refused, naming the field."""
    path = _parquet(tmp_path, **{column: [True, True]})
    with pytest.raises(TraceError, match="not a number, got True") as caught:
        load_trace(path)
    assert caught.value.row == 1 and caught.value.field == column


def test_csv_true_as_num_gpus_is_refused(tmp_path):
    """'True' in a CSV num_gpus column is refused, not read as 1 GPU."""
    path = _csv(tmp_path, "job_id,submit_time,num_gpus,duration\n1,0,True,10\n2,1,True,10\n")
    with pytest.raises(TraceError, match="row 2, field 'num_gpus'.*not a number"):
        load_trace(path)


def test_bools_mixed_into_an_object_column_are_refused():
    """An object column mixing numbers and a bool: only the bool's row is refused."""
    table = _table(num_gpus=pd.Series([1, True], dtype=object))
    workload = validate_jobs(table, "x", lenient=True, fmt="canonical")
    assert workload.jobs["job_id"].tolist() == [1]
    assert workload.provenance["skipped"][0]["field"] == "num_gpus"


@pytest.mark.parametrize("column", ["vc", "model", "user", "job_id"])
def test_lists_and_bools_in_text_columns_are_refused(tmp_path, column):
    """A list or a bool where a name belongs is refused, not turned into a made-up name."""
    for values in ([[1], [2]], [True, False]):
        path = _parquet(tmp_path, **{column: values})
        with pytest.raises(TraceError, match="must be text or a number") as caught:
            load_trace(path)
        assert caught.value.field == column


def test_empty_text_is_no_value(tmp_path):
    """An empty string in a parquet text column is no value, as an empty CSV field is."""
    jobs = load_trace(_parquet(tmp_path, vc=["", "a"])).jobs
    assert jobs["vc"].tolist() == [None, "a"]


# ---- duration and total_steps both given ----------------------------------------------------


def test_duration_and_total_steps_both_given_is_refused(tmp_path):
    """A row with both is refused naming the row (total_steps would silently win)."""
    path = _csv(
        tmp_path,
        "job_id,submit_time,num_gpus,duration,total_steps\n1,0,1,10,\n2,0,1,10,500\n",
    )
    with pytest.raises(TraceError, match="both duration and total_steps are given") as caught:
        load_trace(path)
    assert caught.value.row == 3 and caught.value.field == "total_steps"
    workload = load_trace(path, lenient=True)
    assert workload.jobs["job_id"].tolist() == [1]
    assert workload.provenance["skipped"][0]["row"] == 3


# ---- transform parameters -------------------------------------------------------------------


@pytest.fixture
def four():
    return validate_jobs(
        _table(
            job_id=[1, 2, 3, 4],
            submit_time=[0.0, 10, 20, 40],
            num_gpus=[1, 2, 8, 1],
            duration=[100.0, 50, 10, 30],
        ),
        "x",
        lenient=False,
        fmt="canonical",
    )


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda w: time_window(w, math.nan), "start must be a finite number"),
        (lambda w: time_window(w, None, math.inf), "end must be a finite number"),
        (lambda w: time_window(w, 30, 10), "end .* is before start"),
        (lambda w: time_window(w, True), "start must be seconds or a date"),
        (lambda w: scale_arrival_rate(w, math.nan), "factor must be a positive, finite"),
        (lambda w: scale_arrival_rate(w, True), "factor must be a positive, finite"),
        (lambda w: scale_arrival_rate(w, 1e-300), "submit_time becomes"),
        (lambda w: sample_jobs(w, 2.5, seed=1), "n must be a whole number"),
        (lambda w: sample_jobs(w, math.nan, seed=1), "n must be a whole number"),
        (lambda w: sample_jobs(w, True, seed=1), "n must be a whole number"),
        (lambda w: sample_jobs(w, 2, seed=-1), "seed must be a whole number >= 0"),
        (lambda w: assign_deadlines(w, math.nan, 2, seed=1), "low must be a positive, finite"),
        (lambda w: assign_deadlines(w, 1, math.inf, seed=1), "high must be a positive, finite"),
        (lambda w: assign_deadlines(w, 3, 2, seed=1), "need 0 < low <= high"),
        (lambda w: assign_deadlines(w, 1, 2, seed=1, fraction=math.nan), "fraction must be"),
        (
            lambda w: assign_deadlines(w, 1, 2, seed=1, durations=[1, 2, math.inf, 4]),
            "durations must be finite",
        ),
        (lambda w: assign_models(w, seed=1, models={"a": math.inf}), "weight of model 'a'"),
        (lambda w: assign_models(w, seed=1, models={"a": math.nan}), "weight of model 'a'"),
        (lambda w: make_elastic(w, min_gpus=math.nan), "min_gpus must be a whole number"),
        (lambda w: make_elastic(w, max_gpus=math.nan), "max_gpus must be a whole number"),
        (lambda w: make_elastic(w, max_gpus=2.5), "max_gpus must be a whole number"),
        (lambda w: make_elastic(w, max_factor=math.inf), "max_factor must be a finite"),
        (lambda w: cap_gpu_demand(w, -4), "cluster must be a Cluster or a whole number"),
        (lambda w: cap_gpu_demand(w, True), "cluster must be a Cluster or a whole number"),
        (lambda w: tile(w, True), "k must be a positive integer"),
        (lambda w: tile(w, 2, offset_s=math.nan), "offset_s must be a finite number"),
        (lambda w: tile(w, 2, offset_s=1e15), "submit_time becomes"),
    ],
)
def test_transform_parameters_out_of_range_are_refused(four, call, words):
    """NaN, inf, bools, fractions and out-of-range values are a ConfigError naming the
    transform and the parameter, never a silently empty or wrong workload."""
    with pytest.raises(ConfigError, match=words):
        call(four)


def test_whole_floats_are_accepted_as_counts(four):
    """A count written 2.0 (as YAML or JSON may give it) is the count 2."""
    assert len(sample_jobs(four, 2.0, seed=1)) == 2
    assert len(tile(four, 2.0)) == 8


def test_time_window_errors_stay_value_errors(four):
    """Callers catching ValueError (the old type) still catch the new errors."""
    with pytest.raises(ValueError, match="time_window"):
        time_window(four, math.nan)


# ---- files too wide to be traces ------------------------------------------------------------


def test_csv_with_too_many_columns_is_refused_from_its_header(tmp_path):
    """A header of more than MAX_COLUMNS names is refused before the file is parsed."""
    names = ["job_id", "submit_time", "num_gpus", "duration"] + [
        f"c{i}" for i in range(MAX_COLUMNS)
    ]
    path = _csv(tmp_path, ",".join(names) + "\n" + ",".join(["1"] * len(names)) + "\n")
    with pytest.raises(TraceError, match=f"{len(names):,} columns, more than the 1,000"):
        load_trace(path)


@pytest.mark.parametrize(("extra", "count"), [(200_000, "200,005"), (600_000, "at least")])
def test_csv_with_a_huge_header_is_refused_quickly(tmp_path, extra, count):
    """200,000 columns (a header of 400 kB), or a header beyond MAX_HEADER_BYTES, are
    refused at once from the header line, naming the file."""
    path = tmp_path / "wide.csv"
    path.write_bytes(b"job_id,submit_time,num_gpus,duration," + b"x," * extra + b"y\n1,0,1,1\n")
    with pytest.raises(TraceError, match=rf"wide\.csv.*has {count}.* columns, more than the 1,000"):
        load_trace(path, format="canonical")


def test_csv_with_many_but_allowed_columns_loads(tmp_path):
    """A trace with MAX_COLUMNS columns (passthrough ones included) still loads."""
    names = ["job_id", "submit_time", "num_gpus", "duration"] + [
        f"c{i}" for i in range(MAX_COLUMNS - 4)
    ]
    path = _csv(tmp_path, ",".join(names) + "\n" + ",".join(["1"] * len(names)) + "\n")
    assert len(load_trace(path)) == 1


def test_parquet_with_too_many_columns_is_refused(tmp_path):
    """A parquet file wider than MAX_COLUMNS is refused from its schema."""
    table = _table(**{f"c{i}": [0, 0] for i in range(MAX_COLUMNS)})
    path = tmp_path / "wide.parquet"
    table.to_parquet(path)
    with pytest.raises(TraceError, match="columns, more than the 1,000"):
        load_trace(path)
