"""SenseTime Helios job logs, ``cluster_log.csv`` (Venus, Earth, Saturn, Uranus; Philly in
the same layout in HeliosData).

Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
Datacenters", SC '21; ``S-Lab-System-Group/HeliosData``, CC BY 4.0. Header
``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,
queue``; times ``YYYY-MM-DD HH:MM:SS``; ``duration`` = end − start and ``queue`` = start −
submit, in seconds; ``state`` ∈ COMPLETED / CANCELLED / FAILED / TIMEOUT / NODE_FAIL.

Mapping: ``job_id``, ``user``, ``vc`` as traced; ``num_gpus`` = ``gpu_num``; ``submit_time``
= seconds since the earliest loaded ``submit_time`` (``provenance["time_origin"]``);
``duration`` as traced; ``status`` = ``state``; ``cpu_milli`` = ``cpu_num`` × 1000 (the
job's CPU request; the logs give no memory). Passthrough: ``cpu_num`` (kept as traced),
``node_num``, ``queueing_delay`` (= ``queue``), ``name`` (= ``jobname``, in the logs of the
authors' artifact, which history-based predictors match; `dlsched.predict.helios`).

The logs are large (3.4 M jobs, more than half CPU-only), so the file is streamed in
chunks and CPU-only jobs are dropped chunk by chunk. Excluded (``provenance["excluded"]``):
CPU-only jobs (``gpu_num`` 0), jobs without a ``duration`` (never ran) and jobs with
``duration`` 0.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from dlsched.traces.parsing import rebase, require_columns, times
from dlsched.traces.reading import iter_csv_chunks
from dlsched.traces.schema import RowCheck, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "helios"
COLUMNS: tuple[str, ...] = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)
NEEDED: tuple[str, ...] = ("job_id", "vc", "gpu_num", "submit_time", "duration")
CPU_ONLY = "CPU-only job (gpu_num 0)"
NO_DURATION = "no duration (never ran)"
ZERO_RUN = "zero run time (duration 0)"
_TEXT = ("job_id", "user", "vc", "jobname", "state", "submit_time", "start_time", "end_time")


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a Helios ``cluster_log.csv`` (plain or gzipped), streaming it in chunks."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    parts: list[pd.DataFrame] = []
    cpu_only = 0
    for chunk in iter_csv_chunks(path, text_columns=_TEXT, skipped=skipped, source_row=True):
        require_columns(chunk, NEEDED, path, FORMAT)
        gpus = pd.to_numeric(chunk["gpu_num"], errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        keep = gpus != 0
        cpu_only += int((~keep).sum())
        part = chunk.loc[keep]
        checks: list[RowCheck] = []
        submitted = times(part, "submit_time", checks)
        columns = {
            "job_id": part["job_id"],
            "user": part["user"] if "user" in part.columns else None,
            # the HeliosArtifact's logs (and its Philly conversion) name jobs; HeliosData's don't
            "name": part["jobname"] if "jobname" in part.columns else None,
            "vc": part["vc"],
            "num_gpus": part["gpu_num"],
            "submitted_ns": submitted,
            "bad_submit": _mask_of(checks, len(part)),
            "submit_text": part["submit_time"],
            "duration": part["duration"],
            "status": part["state"] if "state" in part.columns else None,
            "cpu_num": part["cpu_num"] if "cpu_num" in part.columns else None,
            "node_num": part["node_num"] if "node_num" in part.columns else None,
            "queueing_delay": part["queue"] if "queue" in part.columns else None,
            "source_row": part["source_row"],
        }
        parts.append(pd.DataFrame(columns).reset_index(drop=True))
    table = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    del parts
    submit, origin = rebase(table.pop("submitted_ns").to_numpy(dtype=np.int64))
    bad_submit = table.pop("bad_submit").to_numpy(dtype=bool)
    table.insert(1, "submit_time", submit)
    for column in ("user", "name", "status", "cpu_num", "node_num", "queueing_delay"):
        if table[column].isna().all():
            table.pop(column)
    if "cpu_num" in table.columns:
        table["num_cpus"] = table["cpu_num"]
    duration = pd.to_numeric(table["duration"], errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    checks = [
        RowCheck(
            "submit_time",
            "submit_time is not a date and time like 2020-06-09 18:41:01",
            bad_submit,
            table.pop("submit_text"),
        )
    ]
    exclusions = [
        RowCheck("duration", NO_DURATION, np.array(table["duration"].isna(), dtype=bool)),
        RowCheck("duration", ZERO_RUN, duration == 0),
    ]
    workload = validate_jobs(
        table,
        path,
        lenient=lenient,
        fmt=FORMAT,
        field_names={
            "num_gpus": "gpu_num",
            "status": "state",
            "queueing_delay": "queue",
            "num_cpus": "cpu_num",
        },
        extra_checks=checks,
        exclusions=exclusions,
        excluded={CPU_ONLY: cpu_only},
        skipped=skipped or (),
    )
    workload.provenance["time_origin"] = origin
    return workload


def _mask_of(checks: list[RowCheck], n: int) -> np.ndarray:
    out = np.zeros(n, dtype=bool)
    for c in checks:
        out |= c.mask
    return out
