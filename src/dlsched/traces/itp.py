"""Microsoft's ITP GPU-cluster job tables (``microsoft/elasticflow-traces``, raw traces).

Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep
Learning", ASPLOS '23: ten of Microsoft's internal ITP clusters, 69,351 jobs submitted
2021-03-04 … 2021-05-03 (MIT licence, Copyright (c) Microsoft Corporation). The raw
per-cluster tables (``data/raw-traces.tar.gz``, ``clusterNN.csv``) are in
``shared/traces/microsoft_itp_2021/`` with their README; an excerpt is in
``traces/itp_cluster05_head300.csv``.

Header ``job_id,submission_time,duration,num_gpu``: an anonymised UUID, seconds since the
start of collection, the run time in seconds and the GPUs used. There is no model, user, VC,
status or deadline: ElasticFlow's simulation traces (format ``elasticflow``) draw models,
iterations and deadlines on top of these.

Mapping: ``submit_time`` = ``submission_time`` (kept on the file's axis, not rebased, so that
the jobs line up with the ``elasticflow`` traces derived from the same file), ``num_gpus`` =
``num_gpu``, ``duration`` as given (the GPU type it was measured on is not recorded).
"""

from __future__ import annotations

import os
from typing import Any

from dlsched.traces.parsing import require_columns
from dlsched.traces.reading import read_csv_frame
from dlsched.traces.schema import validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "itp"
COLUMNS: tuple[str, ...] = ("job_id", "submission_time", "duration", "num_gpu")
RENAMES = {"submission_time": "submit_time", "num_gpu": "num_gpus"}
"""ITP column → canonical column."""


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load one raw ITP cluster table (plain or gzipped CSV); errors name the ITP fields."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    df = read_csv_frame(path, text_columns=("job_id",), skipped=skipped)
    require_columns(df, COLUMNS, path, FORMAT)
    df = df.rename(columns=RENAMES)
    field_names = {ours: theirs for theirs, ours in RENAMES.items()}
    return validate_jobs(
        df, path, lenient=lenient, fmt=FORMAT, field_names=field_names, skipped=skipped or ()
    )
