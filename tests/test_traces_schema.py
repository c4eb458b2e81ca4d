"""The canonical schema's newer columns, exclusions, and the streaming CSV reader."""

from __future__ import annotations

import doctest
import gzip
import io
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlsched.errors import TraceError
from dlsched.traces import (
    CANONICAL_COLUMNS,
    constraint_types,
    duration_column,
    duration_columns,
    inventories,
    load_trace,
    reading,
    schema,
    transforms,
    validate_jobs,
)
from dlsched.traces.reading import nonblank_line_numbers
from dlsched.traces.schema import RowCheck

HEADER = "job_id,submit_time,num_gpus,duration"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _table(**columns) -> pd.DataFrame:
    base = {
        "job_id": [1, 2],
        "submit_time": [0.0, 1.0],
        "num_gpus": [1, 1],
        "duration": [10.0, 20.0],
    }
    base.update(columns)
    return pd.DataFrame(base)


def _validate(table: pd.DataFrame, lenient: bool = False, **kwargs):
    return validate_jobs(table, "<t>", lenient=lenient, fmt="canonical", **kwargs)


# --- columns ------------------------------------------------------------------------------


def test_new_columns_follow_the_original_eleven():
    """status, gpu_milli and gpu_constraint come after gpu_type; old order unchanged."""
    assert CANONICAL_COLUMNS[:11] == (
        "job_id",
        "submit_time",
        "num_gpus",
        "duration",
        "total_steps",
        "model",
        "user",
        "vc",
        "deadline",
        "priority",
        "gpu_type",
    )
    assert CANONICAL_COLUMNS[11:] == ("status", "gpu_milli", "gpu_constraint")


def test_defaults_of_the_new_columns():
    """Without them: status and gpu_constraint None, gpu_milli 1000 (whole GPUs), int64."""
    jobs = _validate(_table()).jobs
    assert jobs["status"].tolist() == [None, None]
    assert jobs["gpu_constraint"].tolist() == [None, None]
    assert jobs["gpu_milli"].tolist() == [1000, 1000] and jobs["gpu_milli"].dtype == np.int64


@pytest.mark.parametrize(
    "value, words",
    [(0, "1 to 1000"), (1001, "1 to 1000"), (2.5, "whole number"), ("half", "not a number")],
)
def test_gpu_milli_must_be_a_whole_share(value, words):
    """gpu_milli outside 1..1000, fractional or text is a bad row naming the field."""
    with pytest.raises(TraceError, match=f"row 3, field 'gpu_milli'.*{words}"):
        _validate(_table(gpu_milli=[500, value]))


def test_a_gpu_share_needs_a_one_gpu_job():
    """gpu_milli below 1000 with num_gpus above 1 is a bad row (a share is of one GPU)."""
    with pytest.raises(TraceError, match=r"row 3, field 'gpu_milli': .*needs num_gpus 1"):
        _validate(_table(num_gpus=[1, 2], gpu_milli=[500, 500]))


def test_gpu_constraint_is_normalised_text():
    """Spaces around '|' go, blank entries go, a blank constraint means any type."""
    jobs = _validate(_table(gpu_constraint=[" V100M16 | V100M32 ", " | "])).jobs
    assert jobs["gpu_constraint"].tolist() == ["V100M16|V100M32", None]
    assert constraint_types(jobs["gpu_constraint"].iat[0]) == ("v100m16", "v100m32")


def test_per_type_duration_columns_are_lower_cased_and_placed_after_the_canonical():
    """duration_<TYPE> becomes duration_<type>, after the canonical columns, before passthrough."""
    table = _table(note=["a", "b"], duration_V100=[5.0, np.nan], duration_K80=[9.0, 30.0])
    jobs = _validate(table).jobs
    assert list(jobs.columns) == [
        *CANONICAL_COLUMNS,
        "duration_v100",
        "duration_k80",
        "note",
        "source_row",
    ]
    assert duration_columns(jobs.columns) == {"v100": "duration_v100", "k80": "duration_k80"}
    assert duration_column("GTX2080Ti") == "duration_gtx2080ti"
    assert np.isnan(jobs["duration_v100"].iat[1])


def test_per_type_durations_alone_are_enough_work(tmp_path):
    """A file with only duration_<type> columns (as Hydra's cases) is valid."""
    path = _write(
        tmp_path / "t.csv",
        "job_id,submit_time,num_gpus,duration_a100,duration_v100\n0,0,1,100,170\n1,0,1,,300\n",
    )
    jobs = load_trace(path).jobs
    assert jobs["duration"].isna().all() and jobs["duration_v100"].tolist() == [170.0, 300.0]


def test_bad_per_type_duration_is_a_bad_row():
    """A non-positive duration_<type> is reported under its column."""
    with pytest.raises(TraceError, match=r"row 2, field 'duration_v100': .*positive"):
        _validate(_table(duration_v100=[0.0, 5.0]))


def test_two_columns_for_one_type_are_a_file_error():
    """duration_V100 and duration_v100 in one file are ambiguous."""
    table = _table(duration_V100=[1.0, 1.0], duration_v100=[2.0, 2.0])
    with pytest.raises(TraceError, match="both give durations on GPU type 'v100'"):
        _validate(table, lenient=True)


def test_a_row_without_any_work_is_bad_when_others_have_work():
    """One job with no duration, steps or per-type duration among jobs with work: bad row."""
    with pytest.raises(TraceError, match=r"row 3, field 'duration': neither duration"):
        _validate(_table(duration=[10.0, np.nan], model=["a", "b"]))


def test_a_workload_whose_work_the_model_implies_is_accepted():
    """No job has work, every job names its model: valid, and provenance says why."""
    table = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": [0, 5],
            "num_gpus": [2, 4],
            "model": ["cifar10", "bert"],
        }
    )
    w = _validate(table)
    assert len(w) == 2 and "implied by each job's model" in w.provenance["work"]
    with pytest.raises(TraceError, match="no model to derive them from"):
        _validate(table.assign(model=["cifar10", None]))


# --- exclusions ---------------------------------------------------------------------------


def test_exclusions_drop_rows_whatever_lenient_says_and_count_them():
    """Excluded rows vanish in strict mode too, counted by reason; rows_read counts them."""
    table = pd.DataFrame(
        {
            "job_id": [1, 2, 3, 4],
            "submit_time": [0.0] * 4,
            "num_gpus": [1, 0, 0, 1],
            "duration": [5.0, 5.0, 5.0, np.nan],
        }
    )
    exclusions = [
        RowCheck("num_gpus", "CPU-only", table["num_gpus"].to_numpy() == 0),
        RowCheck("duration", "never ran", table["duration"].isna().to_numpy()),
    ]
    w = _validate(table, exclusions=exclusions, excluded={"dropped earlier": 7})
    assert w.jobs["job_id"].tolist() == [1]
    assert w.provenance["excluded"] == {"dropped earlier": 7, "CPU-only": 2, "never ran": 1}
    assert w.provenance["rows_read"] == 11 and w.provenance["rows_loaded"] == 1


def test_a_malformed_row_is_reported_not_excluded():
    """A row a loader check flags stays an error even if an exclusion also matches it."""
    table = _table(num_gpus=[1, 0])
    bad = RowCheck("gpu_num", "gpu_num is odd", np.array([False, True]))
    exclusion = RowCheck("gpu_num", "CPU-only", np.array([False, True]))
    with pytest.raises(TraceError, match="gpu_num is odd"):
        _validate(table, extra_checks=[bad], exclusions=[exclusion])


def test_inputs_are_not_shared_with_the_workload():
    """Changing the DataFrame given to validate_jobs afterwards does not change the jobs."""
    table = _table()
    w = _validate(table)
    table.loc[0, "submit_time"] = 99.0
    assert w.jobs["submit_time"].tolist() == [0.0, 1.0]


# --- streaming reader ---------------------------------------------------------------------


def test_small_chunks_give_the_same_workload(tmp_path, monkeypatch):
    """A CSV read 2 rows at a time loads exactly as in one chunk, bad-row lines included."""
    lines = [HEADER] + [f"j{i},{i},{1 + i % 3},{10 + i}" for i in range(9)]
    lines[5] = "j4,4,0,14"  # a bad row inside the third chunk
    path = _write(tmp_path / "c.csv", "\n".join(lines) + "\n")
    whole = load_trace(path, lenient=True)
    monkeypatch.setattr("dlsched.traces.reading.CHUNK_ROWS", 2)
    chunked = load_trace(path, lenient=True)
    pd.testing.assert_frame_equal(chunked.jobs, whole.jobs)
    assert chunked.provenance["skipped"] == whole.provenance["skipped"]
    assert whole.provenance["skipped"][0]["row"] == 6


def test_malformed_line_in_a_late_chunk_names_its_line(tmp_path, monkeypatch):
    """The parser's line number is the file's, whatever chunk it is in."""
    monkeypatch.setattr("dlsched.traces.reading.CHUNK_ROWS", 2)
    lines = [HEADER] + [f"{i},{i},1,5" for i in range(6)] + ["7,7,1,5,extra"]
    path = _write(tmp_path / "m.csv", "\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"m\.csv, row 8: malformed CSV"):
        load_trace(path, format="canonical")


def test_truncated_gzip_raises_trace_error(tmp_path):
    """A gzip file cut short raises TraceError naming it, even while streaming."""
    body = HEADER + "\n" + "\n".join(f"{i},{i},1,5" for i in range(20_000)) + "\n"
    path = tmp_path / "cut.csv.gz"
    path.write_bytes(gzip.compress(body.encode())[:5_000])
    with pytest.raises(TraceError, match="cut.csv.gz"):
        load_trace(path, format="canonical")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["a", " ", "\t", "\r", "\n", "x,1", "  b"]), max_size=30),
    st.integers(1, 9),
)
def test_nonblank_line_numbers_agree_with_splitting(parts, block):
    """Streaming in any block size finds exactly the lines with something but blanks."""
    data = "".join(parts).encode()
    expected = [i + 1 for i, line in enumerate(data.split(b"\n")) if line.strip(b" \t\r")]
    assert nonblank_line_numbers(io.BytesIO(data), block).tolist() == expected


# --- round trip with every column ----------------------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=6)


@st.composite
def _tables(draw) -> pd.DataFrame:
    n = draw(st.integers(1, 10))
    ids = draw(st.lists(st.integers(0, 2**40), min_size=n, max_size=n, unique=True))
    types = draw(st.lists(st.sampled_from(["V100", "K80", "a100"]), max_size=3, unique=True))
    rows = []
    for job_id in ids:
        submit = draw(st.floats(0, 1e8, allow_nan=False, allow_infinity=False))
        one_gpu = draw(st.booleans())
        row = {
            "job_id": job_id,
            "submit_time": submit,
            "num_gpus": 1 if one_gpu else draw(st.integers(1, 64)),
            "duration": draw(st.floats(1e-3, 1e7)),
            "model": draw(st.none() | _text),
            "status": draw(st.none() | st.sampled_from(["Pass", "Failed", "COMPLETED", "x y"])),
            "gpu_milli": draw(st.integers(1, 1000)) if one_gpu else 1000,
            "gpu_constraint": draw(st.none() | st.sampled_from(["V100", "V100M16|V100M32"])),
            "deadline": submit + draw(st.floats(0, 1e6)) if draw(st.booleans()) else np.nan,
        }
        for t in types:
            row[f"duration_{t}"] = draw(st.none() | st.floats(1e-3, 1e7))
        rows.append(row)
    return pd.DataFrame(rows)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tables())
def test_round_trip_with_new_columns(table):
    """Canonical → CSV → canonical (and parquet) keeps status, shares, constraints and
    per-type durations exactly."""
    w = _validate(table)
    expected = w.jobs.drop(columns="source_row")
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("w.csv", "w.csv.gz", "w.parquet"):
            path = Path(tmp) / name
            (w.to_parquet if name.endswith("parquet") else w.to_csv)(path)
            back = load_trace(path).jobs.drop(columns="source_row")
            pd.testing.assert_frame_equal(back, expected)


@pytest.mark.parametrize(
    "module", [schema, reading, transforms, inventories], ids=lambda m: m.__name__
)
def test_docstring_examples_run(module):
    """Every example in the traces modules' docstrings runs as written."""
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
