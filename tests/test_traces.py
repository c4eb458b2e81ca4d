"""Trace loaders, validation and the canonical Workload."""

from __future__ import annotations

import gzip
import json
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.errors import TraceError
from dlsched.traces import (
    CANONICAL_COLUMNS,
    LOADERS,
    Workload,
    detect_format,
    load_trace,
    validate_jobs,
)

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "traces"
DATA = Path(__file__).resolve().parent / "data"
CLUSTERS = ROOT / "configs" / "clusters"

# (file line, field, words the reason must contain) for every bad row of bad_rows.csv
BAD_ROWS = [
    (3, "job_id", "missing"),
    (4, "submit_time", "missing"),
    (5, "submit_time", ">= 0"),
    (6, "submit_time", "finite"),
    (7, "submit_time", "not a number"),
    (8, "num_gpus", "missing"),
    (9, "num_gpus", "whole number"),
    (10, "num_gpus", ">= 1"),
    (11, "num_gpus", "not a number"),
    (12, "duration", "neither duration nor total_steps"),
    (13, "duration", "positive"),
    (14, "duration", "positive"),
    (15, "duration", "finite"),
    (16, "total_steps", "positive"),
    (17, "deadline", "before submit_time"),
    (18, "priority", "positive"),
    (19, "job_id", "duplicate"),
]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _canonical_order(jobs: pd.DataFrame) -> list[str]:
    return list(jobs.columns[: len(CANONICAL_COLUMNS)])


# --- bundled traces ---------------------------------------------------------------------


def test_tiresias_60_job_loads_with_known_rows():
    """The bundled Tiresias trace loads 60 jobs with the values of its first rows."""
    w = load_trace(TRACES / "tiresias_60_job.csv")
    jobs = w.jobs
    assert len(w) == 60 and w.provenance["format"] == "tiresias"
    first = jobs.iloc[0]
    assert (first.job_id, first.num_gpus, first.submit_time, first.duration, first.model) == (
        0,
        1,
        0.0,
        164.0,
        "vgg19",
    )
    assert (jobs.iloc[1].job_id, jobs.iloc[1].num_gpus, jobs.iloc[1].submit_time) == (1, 8, 30.0)
    assert jobs["iterations"].iloc[0] == 606 and jobs["interval"].iloc[0] == 30
    assert list(jobs.columns) == [*CANONICAL_COLUMNS, "iterations", "interval", "source_row"]
    assert jobs["source_row"].iloc[0] == 2


def test_gavel_artifact_evaluation_loads_with_known_rows():
    """The bundled 10-field Gavel trace loads 15 jobs, ids = line index, steps not seconds."""
    jobs = load_trace(TRACES / "gavel_artifact_evaluation.trace").jobs
    assert len(jobs) == 15
    assert jobs["job_id"].tolist() == list(range(15))
    first = jobs.iloc[0]
    assert first.model == "ResNet-50 (batch size 64)"
    assert (first.total_steps, first.num_gpus, first.priority, first.submit_time) == (
        2931.0,
        1,
        1.0,
        0.0,
    )
    assert jobs.iloc[1].model == "Transformer (batch size 16)" and jobs.iloc[1].num_gpus == 2
    assert jobs["duration"].isna().all() and jobs["slo"].isna().all()
    assert jobs["source_row"].tolist() == list(range(1, 16))


def test_philly_day_loads_with_string_ids_and_vcs():
    """The bundled Philly day loads 2,302 jobs with string ids, VCs and times within 24 h."""
    w = load_trace(TRACES / "philly_day.csv")
    jobs = w.jobs
    assert len(w) == 2302 and w.provenance["format"] == "canonical"
    assert jobs["job_id"].dtype == object and jobs["job_id"].str.startswith("philly-").all()
    assert jobs.iloc[0][["job_id", "submit_time", "num_gpus", "duration", "vc"]].tolist() == [
        "philly-77853",
        0.0,
        1,
        2969.0,
        "11cb48",
    ]
    assert jobs["submit_time"].between(0, 86400, inclusive="left").all()
    assert jobs["vc"].value_counts()["6214e9"] == 1991
    assert jobs["num_gpus"].sum() == 2819
    assert jobs["model"].isna().all() and jobs["total_steps"].isna().all()
    # the file is already in canonical order, so each row keeps its line
    assert (jobs["source_row"] == np.arange(2, 2304)).all()


def test_philly_day_keeps_exact_duplicate_jobs():
    """Two identical source rows in the window stay two jobs with distinct ids."""
    jobs = load_trace(TRACES / "philly_day.csv").jobs
    pair = jobs[jobs["job_id"].isin(["philly-80057", "philly-80058"])]
    assert len(pair) == 2
    assert pair.drop(columns=["job_id", "source_row"]).duplicated(keep=False).all()


# --- Gavel layouts -----------------------------------------------------------------------


def test_gavel_7_field_layout_parses():
    """The 2019 7-field layout maps arrival_time and scale_factor, priority defaults to 1."""
    jobs = load_trace(DATA / "gavel_msr_2869ce_head20.trace").jobs
    assert len(jobs) == 20
    by_id = jobs.set_index("job_id")
    assert by_id.loc[0, "model"] == "Transformer (batch size 128)"
    assert by_id.loc[0, "total_steps"] == 5352613.0 and by_id.loc[0, "num_gpus"] == 4
    assert by_id.loc[1, "submit_time"] == 1456.0 and by_id.loc[2, "submit_time"] == 352430.0
    assert (jobs["priority"] == 1.0).all() and "slo" not in jobs.columns
    assert jobs["submit_time"].is_monotonic_increasing


def test_gavel_10_field_layout_maps_priority_and_slo(tmp_path):
    """In the 10-field layout priority_weight becomes priority and SLO -1 becomes NaN."""
    path = _write(
        tmp_path / "x.trace",
        "A\tcmd a\tdir\t--steps\t1\t100\t2\t3.5\t1.5\t10\n"
        "B\tcmd b\tdir\t--steps\t0\t50\t1\t1\t-1.000000\t0\n",
    )
    jobs = load_trace(path).jobs
    assert jobs["job_id"].tolist() == [1, 0]  # sorted by submit time
    assert jobs["priority"].tolist() == [1.0, 3.5]
    assert jobs["num_gpus"].tolist() == [1, 2]
    assert math.isnan(jobs["slo"].iloc[0]) and jobs["slo"].iloc[1] == 1.5


def test_gavel_file_mixing_layouts_is_an_error():
    """A Gavel file with 10-field and 7-field lines raises, naming the first odd line."""
    with pytest.raises(TraceError, match=r"gavel_mixed_layouts\.trace, row 3: .*7 .*fields"):
        load_trace(DATA / "gavel_mixed_layouts.trace")


def test_gavel_mixed_layouts_stay_fatal_when_lenient():
    """Mixing layouts is a file-level error, so lenient loading raises too."""
    with pytest.raises(TraceError, match="one layout"):
        load_trace(DATA / "gavel_mixed_layouts.trace", lenient=True)


def test_gavel_line_with_wrong_field_count_is_a_bad_row(tmp_path):
    """A truncated Gavel line raises in strict mode and is skipped when lenient."""
    good = "A\tcmd\tdir\t--steps\t1\t100\t1\t1\t-1\t0\n"
    path = _write(tmp_path / "t.trace", good + "B\tcmd\tdir\t--steps\t1\t100\t1\t1\n" + good)
    with pytest.raises(TraceError, match=r"t\.trace, row 2, field 'line': has 8 .*expected 10"):
        load_trace(path)
    w = load_trace(path, lenient=True)
    assert w.jobs["job_id"].tolist() == [0, 2]
    assert w.provenance["skipped"] == [
        {"row": 2, "field": "line", "reason": "has 8 tab-separated fields, expected 10"}
    ]


def test_gavel_bad_value_names_the_gavel_field(tmp_path):
    """A bad scale_factor is reported under Gavel's field name, with the file line."""
    path = _write(tmp_path / "t.trace", "\nA\tcmd\tdir\t--steps\t1\t100\t0\t1\t-1\t0\n")
    with pytest.raises(TraceError, match=r"t\.trace, row 2, field 'scale_factor'"):
        load_trace(path)


def test_gzipped_gavel_trace_loads(tmp_path):
    """A .trace.gz file is detected as Gavel and gunzipped."""
    path = tmp_path / "a.trace.gz"
    path.write_bytes(gzip.compress((TRACES / "gavel_artifact_evaluation.trace").read_bytes()))
    assert len(load_trace(path)) == 15


# --- format detection --------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        (TRACES / "tiresias_60_job.csv", "tiresias"),
        (TRACES / "gavel_artifact_evaluation.trace", "gavel"),
        (TRACES / "philly_day.csv", "canonical"),
        (DATA / "gavel_msr_2869ce_head20.trace", "gavel"),
    ],
)
def test_detect_format_of_bundled_files(path, expected):
    """Each bundled file is detected as its format."""
    assert detect_format(path) == expected


def test_detect_format_of_parquet_and_gzipped_csv(tmp_path):
    """A .parquet file is canonical; a gzipped CSV is detected from its header."""
    w = load_trace(TRACES / "tiresias_60_job.csv")
    w.to_parquet(tmp_path / "w.parquet")
    w.to_csv(tmp_path / "w.csv.gz")
    gz_tiresias = tmp_path / "t.csv.gz"
    gz_tiresias.write_bytes(gzip.compress((TRACES / "tiresias_60_job.csv").read_bytes()))
    assert detect_format(tmp_path / "w.parquet") == "canonical"
    assert detect_format(tmp_path / "w.csv.gz") == "canonical"
    assert detect_format(gz_tiresias) == "tiresias"
    assert len(load_trace(gz_tiresias)) == 60


def test_unknown_header_says_which_formats_were_tried(tmp_path):
    """A CSV matching no known header raises, naming the file and the formats tried."""
    path = _write(tmp_path / "mystery.csv", "when,gpus\n1,2\n")
    with pytest.raises(TraceError) as info:
        load_trace(path)
    message = str(info.value)
    assert "mystery.csv" in message
    assert all(name in message for name in ("canonical", "tiresias", "gavel"))


def test_unknown_format_name_lists_known_names():
    """Asking for a format that does not exist lists the ones that do."""
    with pytest.raises(
        TraceError,
        match=(
            "known formats: auto, alibaba-gpu-2023, alibaba-pai-2020, canonical, chronus, "
            "elasticflow, gavel"
        ),
    ):
        load_trace(TRACES / "philly_day.csv", format="philly-json")
    assert set(LOADERS) == {
        "canonical",
        "tiresias",
        "gavel",
        "philly",
        "philly-pollux",
        "alibaba-pai-2020",
        "alibaba-gpu-2023",
        "helios",
        "sia-pollux",
        "chronus",
        "hydra",
        "itp",
        "elasticflow",
    }


def test_explicit_format_overrides_detection(tmp_path):
    """format= picks the loader even when the name would suggest another one."""
    path = tmp_path / "jobs.txt"
    shutil.copy(TRACES / "tiresias_60_job.csv", path)
    assert load_trace(path, format="tiresias").provenance["format"] == "tiresias"


# --- round trips and the Workload API ----------------------------------------------------


def test_canonical_csv_round_trip(tmp_path):
    """A workload written with to_csv loads back with an identical job table."""
    w = load_trace(TRACES / "tiresias_60_job.csv")
    w.to_csv(tmp_path / "w.csv")
    back = load_trace(tmp_path / "w.csv", format="canonical")
    pd.testing.assert_frame_equal(
        back.jobs.drop(columns="source_row"), w.jobs.drop(columns="source_row")
    )


def test_canonical_parquet_round_trip(tmp_path):
    """A workload written with to_parquet loads back with an identical job table."""
    w = load_trace(TRACES / "philly_day.csv")
    w.to_parquet(tmp_path / "w.parquet")
    back = load_trace(tmp_path / "w.parquet", format="canonical")
    pd.testing.assert_frame_equal(
        back.jobs.drop(columns="source_row"), w.jobs.drop(columns="source_row")
    )
    assert back.jobs["source_row"].iloc[0] == 1


def test_written_files_have_no_source_row(tmp_path):
    """to_csv writes the canonical and passthrough columns, not source_row."""
    w = load_trace(TRACES / "tiresias_60_job.csv")
    w.to_csv(tmp_path / "w.csv")
    header = (tmp_path / "w.csv").read_text().splitlines()[0].split(",")
    assert header == [*CANONICAL_COLUMNS, "iterations", "interval"]


def test_head_takes_first_jobs_in_submit_order():
    """head(n) keeps the n earliest jobs, reindexed, and records the transform."""
    w = load_trace(TRACES / "philly_day.csv")
    h = w.head(10)
    assert len(h) == 10 and len(w) == 2302
    pd.testing.assert_frame_equal(h.jobs, w.jobs.iloc[:10])
    assert h.provenance["transforms"] == [{"name": "head", "n": 10}]
    assert w.provenance["transforms"] == []


def test_repr_is_short():
    """repr names the job count and the source."""
    w = load_trace(TRACES / "tiresias_60_job.csv")
    assert repr(w) == f"Workload(60 jobs from {TRACES / 'tiresias_60_job.csv'})"


def test_provenance_is_json_serialisable():
    """Provenance, with skipped rows, survives json.dumps."""
    w = load_trace(DATA / "bad_rows.csv", lenient=True)
    assert json.loads(json.dumps(w.provenance)) == w.provenance
    assert set(w.provenance) == {
        "source",
        "format",
        "rows_read",
        "rows_loaded",
        "skipped",
        "excluded",
        "transforms",
        "lenient",
    }


def test_jobs_are_sorted_with_canonical_dtypes(tmp_path):
    """Jobs come sorted by (submit_time, job_id) with the contract's dtypes and defaults."""
    path = _write(
        tmp_path / "j.csv",
        "job_id,submit_time,num_gpus,total_steps\n9,5,2,100\n3,5,1,50\n4,0,1,70\n",
    )
    jobs = load_trace(path).jobs
    assert jobs["job_id"].tolist() == [4, 3, 9]
    assert jobs["source_row"].tolist() == [4, 3, 2]
    assert _canonical_order(jobs) == list(CANONICAL_COLUMNS)
    dtypes = jobs.dtypes
    assert dtypes["job_id"] == np.int64 and dtypes["num_gpus"] == np.int64
    assert all(
        dtypes[c] == np.float64
        for c in ("submit_time", "duration", "total_steps", "deadline", "priority")
    )
    assert all(dtypes[c] is np.dtype(object) for c in ("model", "user", "vc", "gpu_type"))
    assert jobs["priority"].eq(1.0).all() and jobs["model"].isna().all()


def test_passthrough_columns_are_kept_untouched(tmp_path):
    """Extra columns follow the canonical ones, before source_row, with their own dtypes."""
    path = _write(
        tmp_path / "j.csv",
        "owner_team,job_id,submit_time,num_gpus,duration,weight\nx,1,0,1,10,7\ny,2,1,1,10,8\n",
    )
    jobs = load_trace(path).jobs
    assert list(jobs.columns[len(CANONICAL_COLUMNS) :]) == ["owner_team", "weight", "source_row"]
    assert jobs["weight"].dtype == np.int64 and jobs["owner_team"].tolist() == ["x", "y"]


def test_blank_lines_do_not_shift_row_numbers(tmp_path):
    """source_row and error rows count blank lines, as an editor shows them."""
    path = _write(
        tmp_path / "j.csv", "job_id,submit_time,num_gpus,duration\n\n1,0,1,10\n\n2,0,0,10\n"
    )
    with pytest.raises(TraceError, match="row 5"):
        load_trace(path)
    assert load_trace(path, lenient=True).jobs["source_row"].tolist() == [3]


# --- job ids -----------------------------------------------------------------------------


def test_integer_job_ids_stay_int64(tmp_path):
    """Ids that are all plain integers load as int64."""
    path = _write(
        tmp_path / "j.csv", "job_id,submit_time,num_gpus,duration\n-3,0,1,10\n12,1,1,10\n"
    )
    assert load_trace(path).jobs["job_id"].tolist() == [-3, 12]
    assert load_trace(path).jobs["job_id"].dtype == np.int64


def test_string_job_ids_stay_strings(tmp_path):
    """Any non-integer id makes every id a str, including ones that look like numbers."""
    path = _write(
        tmp_path / "j.csv",
        "job_id,submit_time,num_gpus,duration\n17,0,1,10\njob-b,1,1,10\n007,2,1,10\n",
    )
    ids = load_trace(path).jobs["job_id"]
    assert ids.dtype == object and ids.tolist() == ["17", "job-b", "007"]


def test_leading_zero_ids_are_strings(tmp_path):
    """Ids with leading zeros stay text, since as integers they would lose their zeros."""
    path = _write(
        tmp_path / "j.csv", "job_id,submit_time,num_gpus,duration\n007,0,1,10\n008,1,1,10\n"
    )
    assert load_trace(path).jobs["job_id"].tolist() == ["007", "008"]


# --- bad input, strict -------------------------------------------------------------------


@pytest.mark.parametrize("line, field, words", BAD_ROWS)
def test_bad_row_raises_naming_file_row_and_field(tmp_path, line, field, words):
    """Each bad row of bad_rows.csv alone, after one good row, raises for row 3 and its field."""
    lines = (DATA / "bad_rows.csv").read_text().splitlines()
    path = _write(tmp_path / "case.csv", "\n".join([lines[0], lines[1], lines[line - 1]]) + "\n")
    with pytest.raises(TraceError) as info:
        load_trace(path)
    message = str(info.value)
    assert "case.csv" in message and "row 3" in message and f"'{field}'" in message
    assert words in message
    assert (info.value.row, info.value.field) == (3, field)


def test_strict_mode_reports_the_first_bad_row():
    """With many bad rows, strict loading names the first one."""
    with pytest.raises(TraceError, match=r"bad_rows\.csv, row 3, field 'job_id'"):
        load_trace(DATA / "bad_rows.csv")


def test_missing_required_column_is_fatal_even_when_lenient(tmp_path):
    """A file without num_gpus raises, naming the file and the column, even leniently."""
    path = _write(tmp_path / "j.csv", "job_id,submit_time,duration,num_gpu_typo\n1,0,10,1\n")
    with pytest.raises(TraceError, match=r"j\.csv, field 'num_gpus': missing required column"):
        load_trace(path, format="canonical", lenient=True)


def test_missing_work_columns_is_fatal(tmp_path):
    """A file with neither a duration nor a total_steps column raises."""
    path = _write(tmp_path / "j.csv", "job_id,submit_time,num_gpus\n1,0,1\n")
    with pytest.raises(TraceError, match="'duration' or 'total_steps'"):
        load_trace(path, lenient=True)


def test_tiresias_errors_name_tiresias_fields(tmp_path):
    """A bad Tiresias row is reported under the file's own column name, num_gpu."""
    path = _write(
        tmp_path / "t.csv",
        "job_id,num_gpu,submit_time,iterations,model_name,"
        "duration,interval\n0,1,0,5,vgg19,10,3\n1,0,3,5,vgg16,10,0\n",
    )
    with pytest.raises(TraceError, match=r"t\.csv, row 3, field 'num_gpu': num_gpu must be >= 1"):
        load_trace(path)


# --- bad input, lenient ------------------------------------------------------------------


def test_lenient_mode_skips_and_lists_every_bad_row():
    """Lenient loading keeps the good rows and lists each bad one with row, field and reason."""
    w = load_trace(DATA / "bad_rows.csv", lenient=True)
    assert w.jobs["job_id"].tolist() == ["a", "q", "r"]
    assert w.jobs["source_row"].tolist() == [2, 20, 21]
    skipped = w.provenance["skipped"]
    assert [(s["row"], s["field"]) for s in skipped] == [(r, f) for r, f, _ in BAD_ROWS]
    for entry, (_, _, words) in zip(skipped, BAD_ROWS, strict=True):
        assert words in entry["reason"]
    assert w.provenance["rows_read"] == 20 and w.provenance["rows_loaded"] == 3
    assert w.provenance["lenient"] is True


def test_lenient_duplicate_of_a_skipped_row_is_kept(tmp_path):
    """When the first holder of an id is skipped, the next row with that id is kept."""
    path = _write(tmp_path / "j.csv", "job_id,submit_time,num_gpus,duration\na,0,0,10\na,1,1,10\n")
    w = load_trace(path, lenient=True)
    assert w.jobs["source_row"].tolist() == [3]
    assert [s["row"] for s in w.provenance["skipped"]] == [2]


# --- malformed files ---------------------------------------------------------------------


def test_malformed_csv_names_file_and_line():
    """A line with too many fields raises TraceError naming the file and the line."""
    with pytest.raises(TraceError, match=r"malformed_fields\.csv, row 3: malformed CSV"):
        load_trace(DATA / "malformed_fields.csv", format="canonical")


def test_binary_garbage_raises_trace_error(tmp_path):
    """Random bytes raise TraceError naming the file, whichever format is asked for."""
    path = tmp_path / "garbage.csv"
    path.write_bytes(bytes(np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8)))
    for fmt in ("auto", "canonical", "tiresias"):
        with pytest.raises(TraceError, match="garbage.csv"):
            load_trace(path, format=fmt)


def test_binary_garbage_gavel_raises_trace_error(tmp_path):
    """Random bytes named .trace raise TraceError too."""
    path = tmp_path / "garbage.trace"
    path.write_bytes(bytes(np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8)))
    with pytest.raises(TraceError, match="garbage.trace"):
        load_trace(path)


def test_corrupt_gzip_raises_trace_error(tmp_path):
    """A truncated gzip file raises TraceError, not a zlib error."""
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress((TRACES / "philly_day.csv").read_bytes())[:500])
    with pytest.raises(TraceError, match="cut.csv.gz"):
        load_trace(path, format="canonical")


def test_empty_file_raises_trace_error(tmp_path):
    """An empty CSV has no header and raises TraceError."""
    path = _write(tmp_path / "empty.csv", "")
    with pytest.raises(TraceError, match="empty.csv.*empty"):
        load_trace(path, format="canonical")


def test_corrupt_parquet_raises_trace_error(tmp_path):
    """A .parquet file that is not parquet raises TraceError naming it."""
    path = _write(tmp_path / "fake.parquet", "job_id,submit_time\n")
    with pytest.raises(TraceError, match="fake.parquet"):
        load_trace(path)


def test_missing_file_raises_file_not_found(tmp_path):
    """A path that does not exist raises FileNotFoundError carrying the path."""
    path = tmp_path / "nope.csv"
    with pytest.raises(FileNotFoundError, match="nope.csv") as info:
        load_trace(path)
    assert info.value.filename == str(path)


# --- properties and speed ----------------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8)
_optional_text = st.none() | _text


@st.composite
def _valid_tables(draw) -> pd.DataFrame:
    n = draw(st.integers(1, 12))
    if draw(st.booleans()):
        ids: list = draw(
            st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n, unique=True)
        )
    else:
        ids = draw(st.lists(_text.map(lambda s: "j" + s), min_size=n, max_size=n, unique=True))
    rows = []
    for job_id in ids:
        submit = draw(st.floats(0, 1e9, allow_nan=False, allow_infinity=False))
        work = draw(st.sampled_from(["duration", "steps"]))  # both: refused (a test of its own)
        positive = st.floats(0, 1e9, exclude_min=True, allow_infinity=False)
        rows.append(
            {
                "job_id": job_id,
                "submit_time": submit,
                "num_gpus": draw(st.integers(1, 4096)),
                "duration": draw(positive) if work != "steps" else np.nan,
                "total_steps": draw(positive) if work != "duration" else np.nan,
                "model": draw(_optional_text),
                "user": draw(_optional_text),
                "vc": draw(_optional_text),
                "deadline": submit + draw(st.floats(0, 1e6)) if draw(st.booleans()) else np.nan,
                "priority": draw(st.floats(0, 100, exclude_min=True)),
                "gpu_type": draw(st.sampled_from([None, "V100", "K80"])),
                "note": draw(st.integers(-5, 5)),
            }
        )
    return pd.DataFrame(rows)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_valid_tables())
def test_any_valid_table_round_trips_through_csv_and_parquet(table):
    """Valid random rows written to canonical CSV and parquet load back equal."""
    w = validate_jobs(table, "<generated>", lenient=False, fmt="canonical")
    assert len(w) == len(table)
    expected = w.jobs.drop(columns="source_row")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("w.csv", "w.parquet"):
            path = Path(tmp) / name
            (w.to_csv if name.endswith(".csv") else w.to_parquet)(path)
            back = load_trace(path)
            pd.testing.assert_frame_equal(back.jobs.drop(columns="source_row"), expected)


def test_validation_of_100k_rows_skips_exactly_the_bad_ones():
    """validate_jobs over 100,000 rows skips the three bad ones, with their file lines
    (its speed is measured in benchmarks/test_engine_speed.py, not here)."""
    n = 100_000
    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        {
            "job_id": [f"job-{i}" for i in range(n)],
            "submit_time": rng.uniform(0, 1e6, n),
            "num_gpus": rng.integers(1, 9, n),
            "duration": rng.uniform(1, 1e5, n),
            "vc": rng.choice(["a", "b", "c"], n),
        }
    )
    table.loc[[10, 500, 99_999], "num_gpus"] = 0
    w = validate_jobs(table, "<big>", lenient=True, fmt="canonical")
    assert len(w) == n - 3 and [s["row"] for s in w.provenance["skipped"]] == [12, 502, 100_001]


# --- cluster configs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, total, by_type",
    [
        ("gavel-108", 108, {"V100": 36, "P100": 36, "K80": 36}),
        ("tiresias-60", 60, {"P100": 60}),
        ("philly", 2490, {"P100": 642, "P40": 1848}),
    ],
)
def test_cluster_yaml_gpu_counts(name, total, by_type):
    """Each bundled cluster YAML sums to its published GPU count, by type."""
    data = yaml.safe_load((CLUSTERS / f"{name}.yaml").read_text())
    assert data["name"] == name and data["description"]
    counts: dict[str, int] = {}
    for group in data["nodes"]:
        counts[group["gpu_type"]] = (
            counts.get(group["gpu_type"], 0) + group["count"] * group["gpus_per_node"]
        )
    assert counts == by_type and sum(counts.values()) == total
    assert set(data.get("gpu_types", {})) == set(by_type)


def test_workload_is_exported():
    """The package exports the Workload class that loaders return."""
    assert isinstance(load_trace(TRACES / "tiresias_60_job.csv"), Workload)
