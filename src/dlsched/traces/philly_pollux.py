"""The Microsoft Philly job table as pre-processed for Pollux (``philly.csv``).

Source: ``petuum/adaptdl``, branch ``osdi21-artifact``, ``simulator/traces/philly.csv`` (in
``shared/traces/philly/philly_jobs_pollux.csv.gz``). Header
``timestamp,duration,num_gpus,gpu_time,cluster``; 82,247 jobs, not sorted. Philly: Jeon et
al., USENIX ATC '19 (CC BY 4.0); Pollux: Qiao et al., OSDI '21.

Mapping:

- ``job_id`` = the 0-based position of the row among the file's data rows (the file has no
  ids, and its 65 exact duplicate rows must stay distinct jobs);
- ``submit_time`` = seconds since the earliest ``timestamp`` in the file (written to
  ``provenance["time_origin"]``; the file states no time zone);
- ``duration`` (s), ``num_gpus`` as given; ``vc`` = ``cluster`` (the Philly VC hash);
- ``gpu_time`` (always ``duration × num_gpus``) is dropped. No status, user or model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dlsched.traces.parsing import rebase, require_columns, times
from dlsched.traces.reading import read_csv_frame
from dlsched.traces.schema import RowCheck, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "philly-pollux"
COLUMNS: tuple[str, ...] = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
NEEDED: tuple[str, ...] = ("timestamp", "duration", "num_gpus", "cluster")


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load the Pollux-preprocessed Philly table (plain or gzipped CSV)."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    table = read_csv_frame(path, text_columns=("timestamp", "cluster"), skipped=skipped)
    require_columns(table, NEEDED, path, FORMAT)
    return from_frame(table, path, lenient=lenient, skipped=skipped or ())


def from_frame(
    table: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    lenient: bool = False,
    skipped: Sequence[Mapping[str, Any]] = (),
) -> Workload:
    """Build the workload from the table as read (with ``source_row``); ``skipped``: rows
    the reader left out as malformed (see ``validate_jobs``)."""
    checks: list[RowCheck] = []
    submitted = times(table, "timestamp", checks)
    submit, origin = rebase(submitted)
    frame = pd.DataFrame(
        {
            "job_id": np.arange(len(table), dtype=np.int64),
            "submit_time": submit,
            "num_gpus": table["num_gpus"],
            "duration": table["duration"],
            "vc": table["cluster"],
            "source_row": table["source_row"],
        }
    )
    workload = validate_jobs(
        frame,
        path,
        lenient=lenient,
        fmt=FORMAT,
        skipped=skipped,
        field_names={"submit_time": "timestamp", "vc": "cluster"},
        extra_checks=checks,
    )
    workload.provenance["time_origin"] = origin
    return workload
