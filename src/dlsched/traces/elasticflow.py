"""The ElasticFlow artifact's simulation traces (``pkusys/ElasticFlow``, Apache-2.0).

Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep
Learning", ASPLOS '23. The artifact's simulator (``ElasticFlow/scheduler/scheduler.py``,
``parse_job_file`` → ``jobs.py`` ``add_job``) reads a CSV per trace; the files come in three
headers, all read here:

- ``job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration``
  (``traces_for_ElasticFlow/elasticVpollux_e.csv``, the 195 jobs of Figure 8(a)), with an
  optional ``best_effort`` column (``resnet_cifar_trace.csv``);
- ``job_id,submit_time,real_iteration,model_name,ddl,batch_size,num_gpu,real_duration,
  duration,iteration`` (``philly_103959.csv``);
- ``job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration``
  (the ITP-derived ``clusterNN.csv`` of ``microsoft/elasticflow-traces``).

Mapping, as ``add_job`` reads a row: ``total_steps`` = ``iteration``, else ``num_iteration``
(the artifact's ``iter_left``); ``submit_time`` = ``submit_time`` or ``submission_time``
(absolute seconds, not rebased: deadlines are on the same axis); ``deadline`` = ``ddl`` or
``deadline`` (absolute), none where ``best_effort`` is 1 (``add_job`` sets ``ddl =
sys.maxsize`` then); ``num_gpus`` = ``num_gpu``; ``model`` = ``"<model_name> (batch size
<batch_size>)"``, the key of the artifact's throughput tables (``profiles.py``:
``THROUGHPUTS[model][global batch][GPUs]``; the ``elasticflow-t4`` / ``elasticflow-a100``
throughput models, `dlsched.perf.elasticflow`); the trace's ``duration`` as the passthrough
column ``traced_duration`` (the artifact keeps it but simulates from iterations and
throughputs; a row giving both work and a run time would be ambiguous in the canonical
schema). ``model_name``, ``batch_size``,
``best_effort``, ``real_iteration`` and ``real_duration`` are kept as passthrough columns.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import TraceError
from dlsched.traces.parsing import numbers, require_columns
from dlsched.traces.reading import read_csv_frame
from dlsched.traces.schema import RowCheck, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "elasticflow"
NEEDED: tuple[str, ...] = ("job_id", "model_name", "batch_size", "num_gpu")
#: (canonical column, the artifact's names for it, first found wins)
ALTERNATIVES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("submit_time", ("submit_time", "submission_time")),
    ("total_steps", ("iteration", "num_iteration")),
    ("deadline", ("ddl", "deadline")),
)
PASSTHROUGH: tuple[str, ...] = (
    "model_name",
    "batch_size",
    "best_effort",
    "real_iteration",
    "real_duration",
)


def model_key(model_name: str, batch_size: object) -> str:
    """The throughput-table key of a job: its model at its global batch size."""
    return f"{model_name} (batch size {batch_size})"


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load an ElasticFlow simulation trace (plain or gzipped CSV)."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    table = read_csv_frame(
        path, text_columns=("job_id", "model_name", "batch_size"), skipped=skipped
    )
    require_columns(table, NEEDED, path, FORMAT)
    source: dict[str, str] = {}
    for ours, theirs in ALTERNATIVES:
        found = next((c for c in theirs if c in table.columns), None)
        if found is None and ours != "deadline":
            raise TraceError(
                f"missing column {' or '.join(repr(c) for c in theirs)}; an {FORMAT} trace "
                f"has {', '.join(repr(c) for c in (*NEEDED, *(t[0] for _, t in ALTERNATIVES)))}",
                path=str(path),
                field=theirs[0],
            )
        if found is not None:
            source[ours] = found
    checks: list[RowCheck] = []
    frame = pd.DataFrame(
        {
            "job_id": table["job_id"],
            "submit_time": table[source["submit_time"]],
            "num_gpus": table["num_gpu"],
            "total_steps": table[source["total_steps"]],
            "model": [
                model_key(str(m).strip(), str(b).strip())
                for m, b in zip(table["model_name"], table["batch_size"], strict=True)
            ],
        }
    )
    if "deadline" in source:
        deadline = numbers(table, source["deadline"], checks)
        if "best_effort" in table.columns:
            best_effort = numbers(table, "best_effort", checks)
            deadline = np.where(best_effort == 1, np.nan, deadline)
        frame["deadline"] = deadline
    if "duration" in table.columns:
        frame["traced_duration"] = table["duration"]
    for column in PASSTHROUGH:
        if column in table.columns:
            frame[column] = table[column]
    frame["source_row"] = table["source_row"]
    field_names = {ours: theirs for ours, theirs in source.items()}
    field_names.update(num_gpus="num_gpu", model="model_name")
    return validate_jobs(
        frame,
        path,
        lenient=lenient,
        fmt=FORMAT,
        field_names=field_names,
        skipped=skipped or (),
        extra_checks=checks,
    )
