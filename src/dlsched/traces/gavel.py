"""Gavel ``.trace`` files (stanford-futuredata/gavel; Narayanan et al., OSDI '20).

One job per line, tab-separated, no header, optionally gzipped. Two layouts, told apart by
the number of fields (a file must use one):

- current, 10 fields: ``job_type, command, working_directory, num_steps_arg,
  needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time``;
- obsolete 2019, 7 fields: ``job_type, command, num_steps_arg, needs_data_dir,
  total_steps, arrival_time, scale_factor`` (the per-VC Philly traces).

Mapping: ``job_id`` = 0-based index of the job in the file (Gavel numbers jobs in trace
order), ``model`` = job_type, ``total_steps``, ``num_gpus`` = scale_factor, ``submit_time``
= arrival_time, ``priority`` = priority_weight (1.0 in the 7-field layout), ``duration`` =
NaN. ``slo`` is kept as a passthrough column (10-field only; -1 → NaN): Gavel reads it as a
multiple of the job's duration, not as an absolute deadline, so it does not become one.
The command, working directory and data-dir flags are dropped.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from dlsched.errors import TraceError
from dlsched.traces.reading import read_raw
from dlsched.traces.schema import RowCheck, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "gavel"
FIELDS_CURRENT: tuple[str, ...] = (
    "job_type",
    "command",
    "working_directory",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "scale_factor",
    "priority_weight",
    "SLO",
    "arrival_time",
)
FIELDS_2019: tuple[str, ...] = (
    "job_type",
    "command",
    "num_steps_arg",
    "needs_data_dir",
    "total_steps",
    "arrival_time",
    "scale_factor",
)
RENAMES = {
    "job_type": "model",
    "scale_factor": "num_gpus",
    "arrival_time": "submit_time",
    "priority_weight": "priority",
}
"""Gavel field → canonical column (``total_steps`` keeps its name)."""
_LAYOUTS = {len(FIELDS_CURRENT): FIELDS_CURRENT, len(FIELDS_2019): FIELDS_2019}


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a Gavel trace in the current 10-field or the obsolete 7-field layout."""
    try:
        text = read_raw(path).decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError("not a UTF-8 text file (binary data?)", path=str(path)) from None
    lines: list[int] = []
    records: list[list[str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            lines.append(number)
            records.append(line.rstrip("\r").split("\t"))
    counts = np.array([len(r) for r in records], dtype=np.int64)
    layout = _layout(path, counts, lines)

    width = len(layout)
    wrong_width = counts != width
    for i in np.flatnonzero(wrong_width):  # only malformed lines: pad or cut to the layout
        records[i] = (records[i] + [""] * width)[:width]
    df = pd.DataFrame(records, columns=list(layout), dtype=object)

    frame = pd.DataFrame(
        {
            "job_id": np.arange(len(df), dtype=np.int64),
            "model": df["job_type"].where(df["job_type"].str.strip() != "", None),
            "total_steps": df["total_steps"],
            "num_gpus": df["scale_factor"],
            "submit_time": df["arrival_time"],
        }
    )
    checks = [
        RowCheck("line", f"has {c} tab-separated fields, expected {width}", counts == c)
        for c in np.unique(counts[wrong_width])
    ]
    if layout is FIELDS_CURRENT:
        frame["priority"] = df["priority_weight"]
        slo = pd.to_numeric(df["SLO"], errors="coerce").to_numpy(dtype=np.float64)
        checks.append(
            RowCheck(
                "SLO", "SLO is not a number", np.isnan(slo) & ~wrong_width, df["SLO"].to_numpy()
            )
        )
        frame["slo"] = np.where(slo < 0, np.nan, slo)
    frame["source_row"] = np.asarray(lines, dtype=np.int64)
    return validate_jobs(
        frame,
        path,
        lenient=lenient,
        fmt=FORMAT,
        field_names={ours: theirs for theirs, ours in RENAMES.items()},
        extra_checks=checks,
    )


def _layout(path: str | os.PathLike[str], counts: np.ndarray, lines: list[int]) -> tuple[str, ...]:
    """The file's layout, from its first job line; mixing the two layouts is an error."""
    if len(counts) == 0:
        return FIELDS_CURRENT
    first = int(counts[0])
    if first not in _LAYOUTS:
        raise TraceError(
            f"has {first} tab-separated fields; a Gavel trace has 10 (current "
            "layout) or 7 (2019 layout)",
            path=str(path),
            row=lines[0],
        )
    other = (set(_LAYOUTS) - {first}).pop()
    mixed = np.flatnonzero(counts == other)
    if len(mixed):
        row = lines[int(mixed[0])]
        raise TraceError(
            f"has {other} tab-separated fields but line {lines[0]} has {first}; "
            "a Gavel trace must use one layout (10 fields current, 7 fields 2019)",
            path=str(path),
            row=row,
        )
    return _LAYOUTS[first]
