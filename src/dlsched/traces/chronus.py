"""Chronus deadline-annotated Philly traces (``trace_job_Philly_{MIX1,MIX2,SLO}.csv``).

Gao et al., "Chronus: A Novel Deadline-aware Scheduler for Deep Learning Training Jobs",
SoCC '21; ``S-Lab-System-Group/ChronusArtifact`` (MIT). Header ``job_id,user,num_gpu,
submit_time,iterations,model_name,duration,interval,expect_time_list,expect_value_list,
best_effort,job_type``. Arrivals are compressed into about 5.6 hours (a stress trace).

Mapping, following the Chronus simulator: ``job_id``; ``submit_time`` (s); ``num_gpus`` =
``num_gpu``; ``duration`` (s); ``model`` = ``model_name``; ``user`` as traced (``vc_<hash>``:
Chronus's users are the Philly VCs) and ``vc`` = that hash without ``vc_`` (so it matches
the VCs of ``configs/clusters/philly.yaml``); ``deadline`` = ``submit_time`` + the first
entry of ``expect_time_list`` for ``strict`` and ``soft`` jobs (the simulator's
``expect_time``), none for best-effort jobs (``best_effort`` 1 / ``job_type`` ``best``, whose
list holds the submit time itself). Passthrough: ``iterations``, ``interval``,
``expect_time_list``, ``expect_value_list`` (``-``-separated, for soft deadlines'
utilities), ``best_effort``, ``job_type``.

Excluded (``provenance["excluded"]``): jobs with ``num_gpu`` 0, which the Chronus simulator
skips too.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from dlsched.traces.parsing import numbers, require_columns
from dlsched.traces.reading import read_csv_frame
from dlsched.traces.schema import RowCheck, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "chronus"
COLUMNS: tuple[str, ...] = (
    "job_id",
    "user",
    "num_gpu",
    "submit_time",
    "iterations",
    "model_name",
    "duration",
    "interval",
    "expect_time_list",
    "expect_value_list",
    "best_effort",
    "job_type",
)
NO_GPU = "asks for no GPU (num_gpu 0; the Chronus simulator skips these)"


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a Chronus job CSV (plain or gzipped)."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    table = read_csv_frame(
        path,
        skipped=skipped,
        text_columns=(
            "job_id",
            "user",
            "model_name",
            "expect_time_list",
            "expect_value_list",
            "job_type",
        ),
    )
    require_columns(
        table,
        ("job_id", "user", "num_gpu", "submit_time", "duration", "expect_time_list", "best_effort"),
        path,
        FORMAT,
    )
    checks: list[RowCheck] = []
    gpus = numbers(table, "num_gpu", checks)
    submit = numbers(table, "submit_time", checks)
    best = numbers(table, "best_effort", checks) == 1
    first = table["expect_time_list"].astype(object).where(~best).str.split("-").str[0]
    expect = pd.to_numeric(first, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    checks.append(
        RowCheck(
            "expect_time_list",
            "expect_time_list must be seconds, '-'-separated (a deadline job needs at least one)",
            ~best & np.isnan(expect),
            table["expect_time_list"],
        )
    )
    user = table["user"].astype(object)
    frame = pd.DataFrame(
        {
            "job_id": table["job_id"],
            "submit_time": table["submit_time"],
            "num_gpus": table["num_gpu"],
            "duration": table["duration"],
            "model": table["model_name"] if "model_name" in table.columns else None,
            "user": user,
            "vc": user.where(~user.str.startswith("vc_", na=False), user.str[3:]),
            "deadline": submit + expect,
        }
    )
    for column in COLUMNS:
        if (
            column not in ("job_id", "user", "num_gpu", "submit_time", "model_name", "duration")
            and column in table.columns
        ):
            frame[column] = table[column]
    frame["source_row"] = table["source_row"]
    return validate_jobs(
        frame,
        path,
        lenient=lenient,
        fmt=FORMAT,
        skipped=skipped or (),
        field_names={"num_gpus": "num_gpu", "model": "model_name", "deadline": "expect_time_list"},
        extra_checks=checks,
        exclusions=[RowCheck("num_gpu", NO_GPU, gpus == 0)],
    )
