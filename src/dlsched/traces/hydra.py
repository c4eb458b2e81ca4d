"""Hydra evaluation cases (``iscas-system/Hydra``, ``cases/{20,30}_ddl.csv``).

Yang et al., "Hydra: Deadline-aware and efficiency-oriented scheduling for deep learning
jobs on heterogeneous GPUs", IEEE TC 72(8), 2023; derived from Alibaba PAI 2020 (CC BY 4.0);
the repository has no licence file (research use, with citation).

Header ``,job_name,norm_job_submit_time,ddl,<GPU type>,<GPU type>,…`` (the first column is an
unnamed row index; the shipped cases have ``A100,V100,GTX2080Ti``): each job uses one GPU
and runs for the given seconds on one GPU of each type.

Mapping: ``job_id`` = the row index (so that the jobs, all submitted at 0, keep the file's
order: Hydra's experiments use "the first N jobs"); ``submit_time`` =
``norm_job_submit_time``; ``num_gpus`` = 1; ``deadline`` = ``ddl`` (absolute, seconds; ``inf``
→ none); every other column ``T`` becomes ``duration_t`` (lower case), the job's run time on
one GPU of type ``T``. ``duration`` and ``gpu_type`` stay empty: the per-type durations are
the job's truth on each type. ``job_name`` is kept as a passthrough column.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import TraceError
from dlsched.traces.parsing import numbers, require_columns
from dlsched.traces.reading import read_csv_frame
from dlsched.traces.schema import RowCheck, duration_column, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "hydra"
KNOWN: tuple[str, ...] = ("job_name", "norm_job_submit_time", "ddl")
_INDEX = ("", "Unnamed: 0", "index")


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a Hydra case CSV (plain or gzipped)."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    table = read_csv_frame(path, text_columns=("job_name",), skipped=skipped)
    require_columns(table, KNOWN, path, FORMAT)
    index = next((c for c in table.columns if c in _INDEX), None)
    types = [c for c in table.columns if c not in (*KNOWN, "source_row") and c != index]
    if not types:
        raise TraceError(
            "no GPU-type duration columns (after job_name, norm_job_submit_time, ddl)",
            path=str(path),
        )
    checks: list[RowCheck] = []
    ddl = numbers(table, "ddl", checks)
    frame = pd.DataFrame(
        {
            "job_id": table[index] if index is not None else np.arange(len(table)),
            "submit_time": table["norm_job_submit_time"],
            "num_gpus": np.ones(len(table), dtype=np.int64),
            "deadline": np.where(np.isposinf(ddl), np.nan, ddl),
        }
    )
    field_names = {
        "job_id": index or "index",
        "submit_time": "norm_job_submit_time",
        "deadline": "ddl",
    }
    for gpu_type in types:
        frame[duration_column(gpu_type)] = table[gpu_type]
        field_names[duration_column(gpu_type)] = gpu_type
    frame["job_name"] = table["job_name"]
    frame["source_row"] = table["source_row"]
    return validate_jobs(
        frame,
        path,
        lenient=lenient,
        fmt=FORMAT,
        field_names=field_names,
        skipped=skipped or (),
        extra_checks=checks,
    )
