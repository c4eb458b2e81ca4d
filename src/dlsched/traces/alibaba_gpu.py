"""Alibaba GPU cluster trace v2023 ("openb"): pods with fractional GPUs and type constraints.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent", USENIX ATC '23; ``alibaba/clusterdata``, ``cluster-trace-gpu-v2023``
(research or study use, with citation). Pod lists have the header
``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time``; times are seconds from the trace start.

Mapping: ``job_id`` = ``name``; ``submit_time`` = ``creation_time``; ``num_gpus`` =
``num_gpu``; ``gpu_milli`` as traced (a pod asking for part of one GPU has ``num_gpus`` 1
and ``gpu_milli`` < 1000: it may share that GPU); ``gpu_constraint`` = ``gpu_spec`` (allowed
GPU types, ``|``-separated; empty = any); ``duration`` = ``deletion_time -
scheduled_time``; ``status`` = ``pod_phase``; ``cpu_milli`` and ``memory_mib`` (the pod's
CPU and host-memory requests) as traced, the canonical demand columns. A pod still alive at
the trace end (``Running``) has ``deletion_time`` = the trace end, so its duration is a
lower bound. Passthrough: ``qos``, ``queueing_delay`` (``scheduled_time - creation_time``).

Excluded (``provenance["excluded"]``): CPU-only pods (``num_gpu`` 0) unless
``cpu_only=True``, pods never scheduled (``Pending``, no ``scheduled_time``) and pods with a
zero run time. With ``cpu_only=True`` a CPU-only pod is a job without GPUs (``num_gpus`` 0,
``gpu_milli`` 0, its CPU and memory demand): it runs only on a cluster whose nodes declare
CPUs or memory, under a policy that places such jobs (`dlsched.engine.ledger`). The default
leaves them out, as before, so that every policy can replay the trace. The ``multigpu*``
variants carry only the first five columns (no times) and cannot be replayed.
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

FORMAT = "alibaba-gpu-2023"
COLUMNS: tuple[str, ...] = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
CPU_ONLY = "CPU-only pod (num_gpu 0)"
NEVER_SCHEDULED = "never scheduled (Pending: no scheduled_time, no run time)"
ZERO_RUN = "zero run time"


def load(
    path: str | os.PathLike[str], *, lenient: bool = False, cpu_only: bool = False
) -> Workload:
    """Load an openb pod list (``openb_pod_list_*.csv``, plain or gzipped); `cpu_only`:
    keep its CPU-only pods as jobs without GPUs (left out and counted by default)."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    pods = read_csv_frame(
        path, text_columns=("name", "gpu_spec", "qos", "pod_phase"), skipped=skipped
    )
    if "creation_time" not in pods.columns and {"name", "num_gpu"} <= set(pods.columns):
        raise TraceError(
            "this openb pod list has no creation_time, deletion_time or scheduled_time (the "
            "multigpu* variants carry only name, cpu_milli, memory_mib, num_gpu and "
            "gpu_milli), so it cannot be replayed in time; use openb_pod_list_default or a "
            "gpuspec*, gpushare* or cpu* variant",
            path=str(path),
            field="creation_time",
        )
    require_columns(
        pods,
        ("name", "num_gpu", "gpu_milli", "creation_time", "deletion_time", "scheduled_time"),
        path,
        FORMAT,
    )
    checks: list[RowCheck] = []
    gpus = numbers(pods, "num_gpu", checks)
    created = numbers(pods, "creation_time", checks)
    scheduled = numbers(pods, "scheduled_time", checks)
    deleted = numbers(pods, "deletion_time", checks)
    run_time = deleted - scheduled
    checks.append(
        RowCheck(
            "deletion_time",
            "deletion_time is before scheduled_time",
            run_time < 0,
            pods["deletion_time"],
        )
    )
    scheduled_missing = np.array(pods["scheduled_time"].isna(), dtype=bool)
    exclusions = [
        RowCheck("scheduled_time", NEVER_SCHEDULED, scheduled_missing),
        RowCheck("deletion_time", ZERO_RUN, run_time == 0),
    ]
    if not cpu_only:
        exclusions.insert(0, RowCheck("num_gpu", CPU_ONLY, gpus == 0))
    frame = pd.DataFrame(
        {
            "job_id": pods["name"],
            "submit_time": pods["creation_time"],
            "num_gpus": pods["num_gpu"],
            "duration": run_time,
            "status": pods["pod_phase"] if "pod_phase" in pods.columns else None,
            "gpu_milli": pods["gpu_milli"],
            "gpu_constraint": pods["gpu_spec"] if "gpu_spec" in pods.columns else None,
        }
    )
    for column in ("cpu_milli", "memory_mib", "qos"):  # demands, then passthrough
        if column in pods.columns:
            frame[column] = pods[column]
    frame["queueing_delay"] = scheduled - created
    frame["source_row"] = pods["source_row"]
    return validate_jobs(
        frame,
        path,
        lenient=lenient,
        fmt=FORMAT,
        skipped=skipped or (),
        field_names={
            "job_id": "name",
            "submit_time": "creation_time",
            "num_gpus": "num_gpu",
            "duration": "deletion_time",
            "status": "pod_phase",
            "gpu_constraint": "gpu_spec",
        },
        extra_checks=checks,
        exclusions=exclusions,
    )
