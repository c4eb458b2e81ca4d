"""Trace parsing never silently shifts, drops or misreads data (issue 13, "Parsing").

Each CSV-based format is tried with the same malformed inputs: a row with a field too many
or too few, a duplicated column name, a file with a header and no job.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dlsched.errors import TraceError
from dlsched.traces import load_trace, reading, validate_jobs
from dlsched.traces.reading import scan_records

# format -> (header, three valid rows, the column that tells the loaded rows apart, its values)
FORMATS: dict[str, tuple[str, list[str], str, list[object]]] = {
    "canonical": (
        "job_id,submit_time,num_gpus,duration",
        ["1,0,1,100", "2,5,2,50", "3,6,4,70"],
        "num_gpus",
        [1, 2, 4],
    ),
    "tiresias": (
        "job_id,num_gpu,submit_time,iterations,model_name,duration,interval",
        ["1,1,0,100,resnet50,100,5", "2,2,5,100,vgg16,50,1", "3,4,6,100,vgg16,70,1"],
        "num_gpus",
        [1, 2, 4],
    ),
    "chronus": (
        "job_id,user,num_gpu,submit_time,iterations,model_name,duration,interval,"
        "expect_time_list,expect_value_list,best_effort,job_type",
        [
            "0,vc_a,1,0,100,vgg16,100,14,1105,10,0,strict",
            "1,vc_b,2,5,100,vgg16,50,8,128,10,0,strict",
            "2,vc_c,4,6,100,vgg16,70,8,128,10,0,strict",
        ],
        "num_gpus",
        [1, 2, 4],
    ),
    "helios": (
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
        "duration,queue",
        [
            "11,u1,vc1,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,"
            "2020-06-09 18:42:01,60,0",
            "12,u2,vc1,2,1,1,COMPLETED,2020-06-09 18:41:05,2020-06-09 18:41:05,"
            "2020-06-09 18:42:05,60,0",
            "13,u3,vc1,4,1,1,COMPLETED,2020-06-09 18:41:06,2020-06-09 18:41:06,"
            "2020-06-09 18:42:06,60,0",
        ],
        "num_gpus",
        [1, 2, 4],
    ),
    "alibaba-gpu-2023": (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time",
        [
            "p0,1000,1024,1,1000,,LS,Running,0,100,10",
            "p1,1000,1024,2,1000,,LS,Running,5,100,10",
            "p2,1000,1024,4,1000,,LS,Running,6,100,10",
        ],
        "num_gpus",
        [1, 2, 4],
    ),
    "philly-pollux": (
        "timestamp,duration,num_gpus,gpu_time,cluster",
        [
            "2017-10-09 07:01:55,66.0,1,66.0,11cb48",
            "2017-10-09 07:02:00,50.0,2,100.0,11cb48",
            "2017-10-09 07:02:01,70.0,4,280.0,11cb48",
        ],
        "num_gpus",
        [1, 2, 4],
    ),
    "sia-pollux": (
        "name,time,application,num_replicas,batch_size",
        ["cifar10-0,0,cifar10,1,128", "bert-1,5,bert,2,12", "yolov3-2,6,yolov3,4,8"],
        "model",
        ["cifar10", "bert", "yolov3"],
    ),
    "hydra": (
        ",job_name,norm_job_submit_time,ddl,A100,V100",
        ["0,ja,0,inf,100,200", "1,jb,0,inf,50,90", "2,jc,0,inf,70,120"],
        "job_name",
        ["ja", "jb", "jc"],
    ),
}
CSV_FORMATS = sorted(FORMATS)


def _trace(tmp_path: Path, fmt: str, rows: list[str], header: str | None = None) -> Path:
    path = tmp_path / f"{fmt}.csv"
    path.write_text("\n".join([FORMATS[fmt][0] if header is None else header, *rows]) + "\n")
    return path


def _rows(fmt: str) -> list[str]:
    return list(FORMATS[fmt][1])


def _loaded(workload, fmt: str) -> list[object]:
    """The telling column of the loaded jobs, in file order."""
    jobs = workload.jobs.sort_values("source_row")
    return jobs[FORMATS[fmt][2]].tolist()


# --- a row with more or fewer fields than the header --------------------------------------


@pytest.mark.parametrize("fmt", CSV_FORMATS)
def test_extra_field_on_the_first_row_is_an_error_naming_row_and_count(tmp_path, fmt):
    """An extra field on the first data row raises, naming file, row and the field count."""
    rows = _rows(fmt)
    rows[0] += ",100"
    path = _trace(tmp_path, fmt, rows)
    fields = len(FORMATS[fmt][0].split(","))
    with pytest.raises(TraceError, match=rf"{fmt}\.csv, row 2: .*{fields + 1} fields") as info:
        load_trace(path, format=fmt)
    assert info.value.row == 2 and str(path) == info.value.path


@pytest.mark.parametrize("fmt", CSV_FORMATS)
def test_lenient_skips_only_the_row_with_an_extra_first_field(tmp_path, fmt):
    """Lenient: the longer first row alone is skipped, with its true reason; the rest load."""
    rows = _rows(fmt)
    rows[0] += ",100"
    w = load_trace(_trace(tmp_path, fmt, rows), format=fmt, lenient=True)
    assert _loaded(w, fmt) == FORMATS[fmt][3][1:]
    assert w.jobs["source_row"].sort_values().tolist() == [3, 4]
    [skipped] = w.provenance["skipped"]
    assert skipped["row"] == 2 and "fields but the header has" in skipped["reason"]
    assert (w.provenance["rows_read"], w.provenance["rows_loaded"]) == (3, 2)


@pytest.mark.parametrize("fmt", CSV_FORMATS)
def test_lenient_skips_only_a_later_row_with_an_extra_field(tmp_path, fmt):
    """Lenient: an extra field on a later row skips that row only, not the whole file."""
    rows = _rows(fmt)
    rows[1] += ",oops"
    w = load_trace(_trace(tmp_path, fmt, rows), format=fmt, lenient=True)
    values = FORMATS[fmt][3]
    assert _loaded(w, fmt) == [values[0], values[2]]
    assert [s["row"] for s in w.provenance["skipped"]] == [3]


@pytest.mark.parametrize("fmt", CSV_FORMATS)
def test_a_row_with_too_few_fields_is_an_error(tmp_path, fmt):
    """A row missing a field raises naming its row and its field count (it is not padded)."""
    rows = _rows(fmt)
    rows[1] = rows[1].rsplit(",", 1)[0]
    fields = len(FORMATS[fmt][0].split(","))
    with pytest.raises(TraceError, match=rf"row 3: .*has {fields - 1} fields"):
        load_trace(_trace(tmp_path, fmt, rows), format=fmt)


@pytest.mark.parametrize("fmt", CSV_FORMATS)
def test_lenient_skips_a_row_with_too_few_fields(tmp_path, fmt):
    """Lenient: a short row is skipped with a reason that says so; the others load."""
    rows = _rows(fmt)
    rows[2] = rows[2].rsplit(",", 1)[0]
    w = load_trace(_trace(tmp_path, fmt, rows), format=fmt, lenient=True)
    assert _loaded(w, fmt) == FORMATS[fmt][3][:2]
    [skipped] = w.provenance["skipped"]
    assert skipped["row"] == 4 and "missing fields" in skipped["reason"]


def test_a_trailing_comma_on_every_row_is_an_error(tmp_path):
    """Rows ending in a comma the header lacks have an extra field: refused, not shifted."""
    path = _trace(tmp_path, "canonical", [r + "," for r in _rows("canonical")])
    with pytest.raises(TraceError, match=r"row 2: .*5 fields but the header has 4"):
        load_trace(path)


def test_extra_field_in_a_gzipped_trace_is_an_error(tmp_path):
    """The field count is checked in gzipped files too."""
    rows = _rows("canonical")
    rows[0] += ",100"
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(("\n".join([FORMATS["canonical"][0], *rows]) + "\n").encode()))
    with pytest.raises(TraceError, match=r"t\.csv\.gz, row 2: .*5 fields"):
        load_trace(path)


def test_malformed_rows_across_chunks_keep_their_rows(tmp_path, monkeypatch):
    """With tiny chunks, skipped rows in several chunks leave every other row's line right."""
    monkeypatch.setattr(reading, "CHUNK_ROWS", 2)
    rows = [f"{i},{i},1,10" for i in range(1, 9)]
    rows[0] += ",x"
    rows[4] = "5,5,1"
    w = load_trace(_trace(tmp_path, "canonical", rows), lenient=True)
    assert w.jobs["job_id"].tolist() == [2, 3, 4, 6, 7, 8]
    assert w.jobs["source_row"].tolist() == [3, 4, 5, 7, 8, 9]
    assert [s["row"] for s in w.provenance["skipped"]] == [2, 6]


def test_a_quoted_comma_or_line_break_is_not_an_extra_field(tmp_path):
    """Commas and line breaks inside quotes are data; rows after them keep their lines."""
    text = (
        'job_id,submit_time,num_gpus,duration,model\n1,0,1,10,"a,b"\n2,1,1,10,"x\ny"\n3,2,1,10,z\n'
    )
    path = tmp_path / "q.csv"
    path.write_text(text)
    w = load_trace(path)
    assert w.jobs["model"].tolist() == ["a,b", "x\ny", "z"]
    assert w.jobs["source_row"].tolist() == [2, 3, 5]


def test_a_stray_quote_inside_a_field_is_read_as_text(tmp_path):
    """A quote in the middle of an unquoted field is a character, as the CSV parser reads it."""
    path = tmp_path / "s.csv"
    path.write_text('job_id,submit_time,num_gpus,duration,model\n1,0,1,10,bert"s\n2,1,1,10,x\n')
    w = load_trace(path)
    assert w.jobs["model"].tolist() == ['bert"s', "x"]


# --- the header -------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", CSV_FORMATS)
def test_a_duplicated_column_name_is_an_error(tmp_path, fmt):
    """A column named twice raises naming the file and the column (no copy wins silently)."""
    header = FORMATS[fmt][0]
    column = header.split(",")[1]
    path = _trace(tmp_path, fmt, [r + ",9" for r in _rows(fmt)], header=f"{header},{column}")
    with pytest.raises(TraceError, match=rf"{fmt}\.csv.*column {column!r} appears twice"):
        load_trace(path, format=fmt)


def test_a_column_named_twice_after_stripping_spaces_is_an_error(tmp_path):
    """' num_gpus' and 'num_gpus' are the same column once names are stripped."""
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time,num_gpus,duration, num_gpus\n1,0,1,10,8\n")
    with pytest.raises(TraceError, match="'num_gpus' appears twice"):
        load_trace(path)


def test_a_byte_order_mark_before_the_header_is_ignored(tmp_path):
    """A UTF-8 BOM (as spreadsheets write) does not rename the first column."""
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + b"job_id,submit_time,num_gpus,duration\n7,0,2,10\n")
    w = load_trace(path)
    assert w.jobs["job_id"].tolist() == [7] and "\ufeffjob_id" not in w.jobs.columns


# --- no jobs --------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", CSV_FORMATS)
def test_a_header_only_trace_is_an_error(tmp_path, fmt):
    """A header and no row raises naming the file: it holds no jobs."""
    with pytest.raises(TraceError, match=rf"{fmt}\.csv: .*no jobs"):
        load_trace(_trace(tmp_path, fmt, []), format=fmt)


def test_an_empty_file_says_it_holds_no_jobs(tmp_path):
    """An empty file raises naming the file and saying it holds no jobs."""
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(TraceError, match=r"empty\.csv: .*no jobs"):
        load_trace(path, format="canonical")


def test_every_row_skipped_leniently_is_an_error_with_count_and_first_reason(tmp_path):
    """Lenient with every row bad raises, saying how many were skipped and the first reason."""
    rows = ["1,0,0,10", "2,0,1", "3,-1,1,10"]
    with pytest.raises(TraceError, match=r"t\.csv: holds no jobs.* 3 were skipped.*row 2.*>= 1"):
        load_trace(_trace_named(tmp_path, rows), lenient=True)


def test_every_row_excluded_is_an_error_naming_the_exclusion(tmp_path):
    """A Helios log of CPU-only jobs replays nothing: an error that says why."""
    rows = [r.replace(",1,1,1,COMPLETED", ",0,1,1,COMPLETED") for r in _rows("helios")[:1]]
    with pytest.raises(TraceError, match=r"no jobs.*1 excluded.*CPU-only"):
        load_trace(_trace(tmp_path, "helios", rows), format="helios")


def test_an_empty_job_table_given_directly_is_an_error():
    """validate_jobs on a table with no row raises instead of returning an empty workload."""
    table = pd.DataFrame({"job_id": [], "submit_time": [], "num_gpus": [], "duration": []})
    with pytest.raises(TraceError, match="inline: holds no jobs"):
        validate_jobs(table, "inline", lenient=False, fmt="canonical")


def _trace_named(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "t.csv"
    path.write_text("\n".join([FORMATS["canonical"][0], *rows]) + "\n")
    return path


# --- encoding -------------------------------------------------------------------------


def test_a_non_utf8_row_names_the_file_and_row(tmp_path):
    """A Latin-1 byte on row 3 raises TraceError naming the file and row 3."""
    path = tmp_path / "latin.csv"
    path.write_bytes(b"job_id,submit_time,num_gpus,duration,user\n1,0,1,10,a\n2,0,1,10,J\xf6rg\n")
    with pytest.raises(TraceError, match=r"latin\.csv, row 3: not UTF-8 .*0xf6"):
        load_trace(path)


def test_a_non_utf8_row_far_into_a_big_file_names_its_row(tmp_path):
    """The row is found even when the bad byte is past the first block the parser decodes."""
    rows = [f"{i},{i},1,10,u" for i in range(1, 30_001)]
    data = ("job_id,submit_time,num_gpus,duration,user\n" + "\n".join(rows) + "\n").encode()
    data += b"30001,1,1,10,\xff\n"
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    with pytest.raises(TraceError, match=r"big\.csv, row 30002: not UTF-8"):
        load_trace(path)


# --- the scanner itself ------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        b"a,b\n1,2\n\n3,4,5\n  \n6\n7,8",
        b'a,b\r\n"x,\ny",2\r\n"p""q",3\r\n \t\r\n4,"5\n\n6"\n',
        b'a,b\n1,x"y\n2,3,4\n',
    ],
)
def test_scan_records_does_not_depend_on_block_size(text):
    """Record lines and malformed records are the same whatever the block size."""
    whole = scan_records(io.BytesIO(text))
    for block in (1, 2, 3, 7):
        part = scan_records(io.BytesIO(text), block_bytes=block)
        assert part.lines.tolist() == whole.lines.tolist() and part.malformed == whole.malformed


def test_scan_records_finds_short_and_long_rows():
    """Records whose field count differs from the header's are reported with their counts."""
    found = scan_records(io.BytesIO(b"a,b,c\n1,2,3\n1,2\n\n1,2,3,4\n"))
    assert found.lines.tolist() == [1, 2, 3, 5] and found.fields == 3
    assert found.malformed == [(2, 2), (3, 4)]
    assert np.issubdtype(found.lines.dtype, np.integer)


def test_a_fractional_job_cannot_be_elastic_beyond_one_gpu(tmp_path):
    """A share of one GPU with max_gpus 2 is an error naming the row and field."""
    path = tmp_path / "frac.csv"
    path.write_text(
        "job_id,submit_time,num_gpus,duration,gpu_milli,max_gpus\n1,0,1,10,1000,2\n2,0,1,10,100,2\n"
    )
    with pytest.raises(TraceError, match=r"row 3, field 'max_gpus'"):
        load_trace(path)
