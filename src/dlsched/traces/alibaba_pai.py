"""Alibaba PAI GPU trace v2020 (``cluster-trace-gpu-v2020``, "MLaaS in the Wild").

Weng et al., USENIX NSDI '22; licence CC BY 4.0 (Alibaba Group, Alibaba Cluster Trace
Program). The trace is several headerless CSV tables; this loader joins three of them:

- ``pai_job_table``: ``job_name,inst_id,user,status,start_time,end_time`` — one row per
  job; ``start_time`` is the *submit* time;
- ``pai_task_table``: ``job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,
  plan_mem,plan_gpu,gpu_type`` — a job's tasks (``ps``, ``worker``…), each of ``inst_num``
  instances asking for ``plan_gpu`` percent of one GPU each, on GPUs of ``gpu_type``;
- ``pai_instance_table`` (optional): ``job_name,task_name,inst_name,worker_name,inst_id,
  status,start_time,end_time,machine`` — when given, the instances' times are used;
- ``pai_group_tag_table`` (optional): ``inst_id,user,gpu_type_spec,group,workload`` — when
  given, each job's ``group`` (the trace's tag for jobs of "similar entry scripts,
  command-line parameters, data sources and sinks": a recurring job's name) becomes its
  ``name``, the job-name feature of the history-based predictors (`dlsched.predict`).

**Input.** ``load_trace(path)`` with ``path`` a directory holding ``pai_job_table`` and
``pai_task_table`` (and optionally ``pai_instance_table``), or the job table itself with the
others beside it; each may be ``.csv``, ``.csv.gz`` or the distributed ``.tar.gz``. The
other tables can also be named: ``load_trace(jobs, format="alibaba-pai-2020",
task_table=..., instance_table=...)``. A file whose first line is the table's header is
read as headed.

**Mapping.** ``job_id`` = ``job_name``; ``submit_time`` = job ``start_time`` minus the
earliest one (the trace's times carry a constant offset that keeps the time of day in
UTC+8; the subtracted value is ``provenance["time_origin"]``); ``user``, ``status`` (job
status: Terminated / Failed / Running / Waiting) as traced. GPUs: a task asks for
``inst_num`` instances of ``plan_gpu / 100`` GPUs each. Instances asking for one GPU or
more hold ``ceil(plan_gpu / 100)`` whole GPUs each; the job's fractional instances (less
than one GPU each) are packed onto ``ceil(their total share)`` whole GPUs. A job asking for
less than one GPU in all stays fractional: ``num_gpus`` 1 and ``gpu_milli`` = its total
share in thousandths (50 % → 500), as the canonical schema has it. ``gpu_type`` = the GPU
tasks' assigned type when they agree. Run time: from the earliest task (or instance) start
to the latest end; time 0 means "not recorded", as in the trace's own analysis code.
CPU and memory: ``cpu_milli`` = ``Σ inst_num × plan_cpu × 10`` (``plan_cpu`` is percent of
a core: 600 = 6 cores) and ``memory_mib`` = ``Σ inst_num × plan_mem × 1024`` (``plan_mem``
in GB) over all the job's tasks, its CPU-only ones (``ps``) included, as the trace's own
README counts a job's request; a task without a value adds nothing.

Passthrough: ``gpu_request`` (total GPUs asked, ``Σ inst_num × plan_gpu / 100``),
``gpu_types`` (assigned types of the GPU tasks, ``|``-joined), ``tasks``, ``instances``,
``queueing_delay`` (s from submit to the first start), ``inst_id`` (the key of
``pai_group_tag_table``, whose ``workload`` tag names a model for some jobs). With the group
tag table: ``name`` = ``group``, and passthrough ``workload`` and ``gpu_type_spec`` (the
user's GPU-type requirement), joined on ``inst_id`` (the first row of an ``inst_id`` listed
twice; a job whose ``inst_id`` has no row gets none). ``job_name`` is a per-job hash in this
trace, not a name: it is the ``job_id``. ``user`` is kept as traced, so a job's history
(same user, same group) survives loading.

Excluded (counted in ``provenance["excluded"]``): jobs without a submit time, without task
rows, CPU-only jobs,
jobs that never started, jobs with no end time (Running/Waiting when the trace ends) and
jobs with a zero run time. A malformed task row is an error naming the task file and its
line; when lenient, its job is skipped.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import TraceError
from dlsched.traces.reading import data_line_numbers, iter_csv_chunks, read_csv_header
from dlsched.traces.schema import RowCheck, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "alibaba-pai-2020"
JOB_COLUMNS: tuple[str, ...] = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS: tuple[str, ...] = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
INSTANCE_COLUMNS: tuple[str, ...] = (
    "job_name",
    "task_name",
    "inst_name",
    "worker_name",
    "inst_id",
    "status",
    "start_time",
    "end_time",
    "machine",
)
GROUP_TAG_COLUMNS: tuple[str, ...] = ("inst_id", "user", "gpu_type_spec", "group", "workload")
TABLES = ("pai_job_table", "pai_task_table", "pai_instance_table")
_SUFFIXES = (".csv", ".csv.gz", ".tar.gz", ".tgz")

NO_SUBMIT = "no submit time (start_time empty or 0)"
NO_TASKS = "no task rows in pai_task_table"
CPU_ONLY = "CPU-only job (no task asks for a GPU)"
NEVER_STARTED = "never started (no task start_time)"
NO_END = "no end time (Running or Waiting when the trace ends)"
ZERO_RUN = "zero run time"


def find_table(folder: str | os.PathLike[str], table: str) -> Path | None:
    """The file of ``table`` in ``folder`` (``.csv`` preferred over ``.csv.gz``, ``.tar.gz``)."""
    for suffix in _SUFFIXES:
        candidate = Path(folder) / f"{table}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def is_pai_table(path: str | os.PathLike[str]) -> bool:
    """Whether a file name is one of the PAI tables this loader reads."""
    name = Path(path).name.lower()
    return any(name == f"{t}{s}" for t in TABLES for s in _SUFFIXES)


def load(
    path: str | os.PathLike[str],
    *,
    lenient: bool = False,
    task_table: str | os.PathLike[str] | None = None,
    instance_table: str | os.PathLike[str] | bool | None = None,
    group_tag_table: str | os.PathLike[str] | bool | None = None,
) -> Workload:
    """Load PAI 2020 jobs from a directory, or from the job table with its task table.

    The instance table is used when found beside the job table or named;
    ``instance_table=False`` ignores it (times then come from the task table). The group tag
    table likewise (``group_tag_table=False`` ignores it): it gives the jobs' names.
    """
    job_path, task_path, instance_path = _locate(path, task_table, instance_table)
    group_path = _optional_table(job_path, "pai_group_tag_table", group_tag_table)
    jobs = _read_table(job_path, JOB_COLUMNS, ("job_name", "inst_id", "user", "status"))
    tasks = _read_table(task_path, TASK_COLUMNS, ("job_name", "task_name", "status", "gpu_type"))
    instances = (
        None
        if instance_path is None
        else _read_table(
            instance_path,
            INSTANCE_COLUMNS,
            ("job_name", "task_name", "inst_name", "worker_name", "inst_id", "status", "machine"),
        )
    )

    groups = (
        None
        if group_path is None
        else _read_table(group_path, GROUP_TAG_COLUMNS, GROUP_TAG_COLUMNS)
    )

    checks: list[RowCheck] = []
    submit = _numbers(jobs, "start_time", checks)
    problems: dict[str, str] = {}
    task_rows = _task_gpus(tasks, task_path, lenient, problems)
    per_job = _per_job(task_rows, instances, instance_path, lenient, problems)
    index = pd.Index(jobs["job_name"].astype(object))
    found = per_job.reindex(index)
    known = index.isin(per_job.index)

    broken = found["problem"].notna().to_numpy() & known
    if broken.any():
        checks.append(
            RowCheck(
                "job_name", "a row of its tasks is malformed", broken, found["problem"].to_numpy()
            )
        )
    start = found["start"].to_numpy(dtype=np.float64)
    end = found["end"].to_numpy(dtype=np.float64)
    run_time = end - start
    checks.append(
        RowCheck(
            "end_time",
            "its tasks end before they start (negative run time)",
            run_time < 0,
            run_time,
        )
    )
    gpus = found["num_gpus"].to_numpy(dtype=np.float64)
    exclusions = [
        RowCheck("start_time", NO_SUBMIT, np.isnan(submit)),
        RowCheck("job_name", NO_TASKS, ~known),
        RowCheck("plan_gpu", CPU_ONLY, known & (gpus == 0)),
        RowCheck("start_time", NEVER_STARTED, known & np.isnan(start)),
        RowCheck("end_time", NO_END, known & np.isnan(end)),
        RowCheck("end_time", ZERO_RUN, run_time == 0),
    ]
    origin = float(np.nanmin(submit)) if np.isfinite(submit).any() else 0.0
    frame = pd.DataFrame(
        {
            "job_id": jobs["job_name"],
            "submit_time": submit - origin,
            "num_gpus": gpus,
            "duration": run_time,
            "user": jobs["user"],
            "status": jobs["status"],
            "gpu_type": found["gpu_type"].to_numpy(dtype=object),
            "gpu_milli": found["gpu_milli"].to_numpy(dtype=np.float64),
            "num_cpus": found["cpus"].to_numpy(dtype=np.float64),
            "memory_gb": found["memory_gb"].to_numpy(dtype=np.float64),
            "gpu_request": found["gpu_request"].to_numpy(dtype=np.float64),
            "gpu_types": found["gpu_types"].to_numpy(dtype=object),
            "tasks": found["tasks"].to_numpy(dtype=np.float64),
            "instances": found["instances"].to_numpy(dtype=np.float64),
            "queueing_delay": start - submit,
            "inst_id": jobs["inst_id"],
            "source_row": jobs["source_row"],
        }
    )
    if groups is not None:
        tags = groups.drop_duplicates("inst_id").set_index("inst_id")
        found_tags = tags.reindex(pd.Index(jobs["inst_id"].astype(object)))
        for column, source in (("name", "group"), ("workload", "workload")):
            frame[column] = found_tags[source].to_numpy(dtype=object)
        frame["gpu_type_spec"] = found_tags["gpu_type_spec"].to_numpy(dtype=object)
        frame = frame[[c for c in frame.columns if c != "source_row"] + ["source_row"]]
    workload = validate_jobs(
        frame,
        job_path,
        lenient=lenient,
        fmt=FORMAT,
        field_names={
            "job_id": "job_name",
            "submit_time": "start_time",
            "num_gpus": "plan_gpu",
            "duration": "end_time",
            "num_cpus": "plan_cpu",
            "memory_gb": "plan_mem",
        },
        extra_checks=checks,
        exclusions=exclusions,
    )
    for column in ("tasks", "instances"):
        workload.jobs[column] = workload.jobs[column].astype(np.int64)
    workload.provenance["time_origin"] = origin
    workload.provenance["tables"] = {
        "pai_job_table": {"path": str(job_path), "rows": len(jobs)},
        "pai_task_table": {
            "path": str(task_path),
            "rows": len(tasks),
            "rows_without_job": int((~tasks["job_name"].isin(index)).sum()),
        },
    }
    if instances is not None:
        workload.provenance["tables"]["pai_instance_table"] = {
            "path": str(instance_path),
            "rows": len(instances),
        }
    if groups is not None:
        workload.provenance["tables"]["pai_group_tag_table"] = {
            "path": str(group_path),
            "rows": len(groups),
            "jobs_without_tag": int(workload.jobs["name"].isna().sum()),
        }
    return workload


def _optional_table(job_path: Path, table: str, given: Any) -> Path | None:
    """An optional side table: found beside the job table (None, True), named, or not used
    (False)."""
    if given is False:
        return None
    if given is None or given is True:
        return find_table(job_path.parent, table)
    path = Path(given)
    if not path.is_file():
        raise FileNotFoundError(2, "trace file not found", str(path))
    return path


def _locate(
    path: str | os.PathLike[str], task_table: Any, instance_table: Any
) -> tuple[Path, Path, Path | None]:
    given = Path(path)
    folder = given if given.is_dir() else given.parent
    job_path = find_table(folder, "pai_job_table") if given.is_dir() else given
    if job_path is None:
        raise TraceError(
            "no pai_job_table.csv (.csv.gz, .tar.gz) in this directory", path=str(given)
        )
    task_path = Path(task_table) if task_table is not None else find_table(folder, "pai_task_table")
    if task_path is None:
        raise TraceError(
            f"the PAI job table needs its task table: put pai_task_table.csv (.csv.gz, "
            f".tar.gz) in {folder} or pass task_table=...",
            path=str(job_path),
        )
    if instance_table is False:
        instance_path = None
    elif instance_table is None or instance_table is True:
        instance_path = find_table(folder, "pai_instance_table")
    else:
        instance_path = Path(instance_table)
    for p in (task_path, instance_path):
        if p is not None and not p.is_file():
            raise FileNotFoundError(2, "trace file not found", str(p))
    return job_path, task_path, instance_path


def _read_table(path: Path, columns: tuple[str, ...], text: tuple[str, ...]) -> pd.DataFrame:
    """A PAI table (headerless as distributed; a header line equal to ``columns`` is fine)."""
    headed = read_csv_header(path) == list(columns)
    chunks = list(iter_csv_chunks(path, text_columns=text, names=None if headed else columns))
    table = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
    if list(table.columns) != list(columns):
        raise TraceError(
            f"expected the {len(columns)} columns {', '.join(columns)}", path=str(path)
        )
    table["source_row"] = data_line_numbers(path, len(table), header=headed)
    return table


def _numbers(table: pd.DataFrame, column: str, checks: list[RowCheck]) -> np.ndarray:
    """Numbers, with 0 read as "not recorded" (NaN) for times, as the trace's tools do."""
    values = table[column]
    parsed = pd.to_numeric(values, errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan, copy=True
    )
    bad = np.isnan(parsed) & ~np.array(values.isna(), dtype=bool)
    if bad.any():
        checks.append(RowCheck(column, f"{column} is not a number", bad, values))
    if column.endswith("_time"):
        parsed[parsed == 0] = np.nan
    return parsed


def _side_table(
    table: pd.DataFrame,
    path: Path,
    columns: tuple[str, ...],
    lenient: bool,
    problems: dict[str, str],
    more: list[RowCheck] | None = None,
) -> dict[str, np.ndarray]:
    """Parse numeric columns of a task or instance table. A malformed row raises, naming
    this file and line (strict), or marks its job with the reason (lenient)."""
    checks: list[RowCheck] = []
    parsed = {c: _numbers(table, c, checks) for c in columns}
    checks.extend(more or [])
    rows = table["source_row"].to_numpy()
    bad = np.zeros(len(table), dtype=bool)
    for c in checks:
        bad |= c.mask
    if not bad.any():
        return parsed
    order = np.flatnonzero(bad)
    order = order[np.argsort(rows[order], kind="stable")]
    for i in order if lenient else order[:1]:
        c = next(c for c in checks if c.mask[i])
        reason = f"{c.reason}, got {c.values.iat[i]!r}" if c.values is not None else c.reason
        if not lenient:
            raise TraceError(reason, path=str(path), row=int(rows[i]), field=c.field)
        problems.setdefault(
            str(table["job_name"].iat[i]),
            f"{path.name} row {int(rows[i])}, field {c.field!r}: {reason}",
        )
    return parsed


def _task_gpus(
    tasks: pd.DataFrame, path: Path, lenient: bool, problems: dict[str, str]
) -> pd.DataFrame:
    """Per task row: GPUs, share, type and times."""
    raw_inst = pd.to_numeric(tasks["inst_num"], errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    raw = {
        c: pd.to_numeric(tasks[c], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        for c in ("plan_gpu", "plan_cpu", "plan_mem")
    }
    parsed = _side_table(
        tasks,
        path,
        ("inst_num", "plan_gpu", "plan_cpu", "plan_mem", "start_time", "end_time"),
        lenient,
        problems,
        [
            RowCheck("inst_num", "inst_num must be >= 1", raw_inst < 1, tasks["inst_num"]),
            *(
                RowCheck(
                    c,
                    f"{c} must be a finite number >= 0",
                    ~((raw[c] >= 0) & (raw[c] < np.inf)) & ~np.isnan(raw[c]),
                    tasks[c],
                )
                for c in ("plan_gpu", "plan_cpu", "plan_mem")
            ),
        ],
    )
    inst = parsed["inst_num"]
    share = parsed["plan_gpu"] / 100  # GPUs per instance
    uses_gpu = share > 0
    fractional = uses_gpu & (share < 1)
    return pd.DataFrame(
        {
            "job_name": tasks["job_name"].astype(object),
            "whole_gpus": np.where(uses_gpu & ~fractional, inst * np.ceil(share), 0.0),
            "fraction": np.where(fractional, inst * share, 0.0),
            "request": np.where(uses_gpu, inst * share, 0.0),
            "gpu_type": tasks["gpu_type"].astype(object).where(uses_gpu, None),
            "instances": inst,
            "cpus": np.nan_to_num(inst * parsed["plan_cpu"] / 100),
            "memory_gb": np.nan_to_num(inst * parsed["plan_mem"]),
            "start": parsed["start_time"],
            "end": parsed["end_time"],
        }
    )


def _per_job(
    tasks: pd.DataFrame,
    instances: pd.DataFrame | None,
    instance_path: Path | None,
    lenient: bool,
    problems: dict[str, str],
) -> pd.DataFrame:
    """One row per job_name: GPUs, share, type, counts, first start and last end."""
    grouped = tasks.groupby("job_name", sort=False)
    whole = grouped["whole_gpus"].sum()
    fraction = grouped["fraction"].sum()
    per_job = pd.DataFrame(
        {
            "num_gpus": whole + np.ceil(fraction - 1e-9).clip(lower=0),
            "gpu_request": grouped["request"].sum(),
            "tasks": grouped.size(),
            "instances": grouped["instances"].sum(),
            "cpus": grouped["cpus"].sum(),
            "memory_gb": grouped["memory_gb"].sum(),
            "start": grouped["start"].min(),
            "end": grouped["end"].max(),
        }
    )
    part = (whole == 0) & (fraction > 0) & (fraction < 1)
    per_job["gpu_milli"] = np.where(part, (fraction * 1000).round().clip(lower=1), 1000.0)
    types = grouped["gpu_type"].agg(lambda s: sorted({str(t) for t in s.dropna()}))
    per_job["gpu_type"] = [t[0] if len(t) == 1 else None for t in types]
    per_job["gpu_types"] = ["|".join(t) or None for t in types]
    if instances is not None:
        assert instance_path is not None
        parsed = _side_table(
            instances, instance_path, ("start_time", "end_time"), lenient, problems
        )
        times = pd.DataFrame(
            {
                "job_name": instances["job_name"].astype(object),
                "start": parsed["start_time"],
                "end": parsed["end_time"],
            }
        )
        grouped_times = times.groupby("job_name", sort=False)
        first_start, last_end = grouped_times["start"].min(), grouped_times["end"].max()
        has = per_job.index.isin(first_start.index)
        per_job.loc[has, "start"] = first_start.reindex(per_job.index[has]).to_numpy()
        per_job.loc[has, "end"] = last_end.reindex(per_job.index[has]).to_numpy()
    per_job["problem"] = pd.Series(problems, dtype=object).reindex(per_job.index)
    return per_job
