"""Utilisation of every resource over time — GPUs, CPU cores, host memory — of a finished run.

Computed after the run from what it records, so the engine pays nothing for it:

- GPUs: the busy-GPU timeline (`SimulationResult.timeline`, a GPU shared by fractions counts
  as busy);
- CPU cores and host memory: the event log, the cluster's nodes and the jobs' demands. Each
  ``start``, ``restart``, ``migrate`` and ``rescale`` event names the GPUs the job holds from
  then on, each ``preempt`` and ``finish`` gives them back. On its GPUs a job holds what the
  ledger reserved for it, `Ledger.node_demands` (its demand shared over its nodes in
  proportion to its GPUs there; an elastic job on another GPU count than it asked for holds
  its per-GPU demand times its GPUs). So the amounts are exactly the ledger's.

A run whose event log was streamed to parquet (`simulate(events=path)`) has no events in
memory: CPU and memory are then read back from the file its ``meta["events_path"]`` names,
and where no file is named yet (the figures `summary()` carries, computed before `simulate`
records the path) they are NaN, never a silent 0. The GPU figures come from the timeline,
always in memory.

A node that declares no capacity for a resource (unlimited there, see `dlsched.engine.ledger`)
counts on neither side of the fraction: utilisation is what the jobs hold on the nodes that
declare the resource, over what those nodes declare. A resource that no node declares is left
out of every table.

Mean utilisations are over the run's makespan window (first submission to last completion of
the finished jobs), as ``summary()["utilization"]`` is for GPUs:

>>> import dlsched, pandas as pd
>>> from dlsched.traces.schema import validate_jobs
>>> jobs = pd.DataFrame({"job_id": ["a", "b"], "submit_time": [0.0, 0.0], "num_gpus": [1, 1],
...                      "duration": [100.0, 50.0], "num_cpus": [4.0, 2.0]})
>>> workload = validate_jobs(jobs, "inline", lenient=False, fmt="canonical")
>>> cluster = dlsched.Cluster.from_dict({"name": "c", "nodes": [
...     {"gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": 8}]})
>>> result = dlsched.simulate(workload, cluster, policy="fifo")
>>> figures = utilisation_summary(result, cluster, workload)
>>> figures["cpu_utilization"], figures["peak_cpu_utilization"]  # (6×50 + 4×50) / (8×100)
(0.625, 0.75)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dlsched.cluster import Cluster
from dlsched.engine.ledger import Ledger
from dlsched.jobs import FINISHED, JobSpec

if TYPE_CHECKING:
    from dlsched.metrics import SimulationResult
    from dlsched.traces import Workload

#: Events after which a job holds the GPUs they name, and those after which it holds none.
HOLDING_EVENTS = frozenset({"start", "restart", "migrate", "rescale", "rerate"})
RELEASING_EVENTS = frozenset({"preempt", "finish"})

RESOURCES = ("gpu", "cpu", "memory")
"""Resource names, in table order: GPUs, CPU cores, host memory."""

UNITS = {"gpu": "GPUs", "cpu": "cores", "memory": "GB"}
"""The unit of each resource's amounts in `resource_timeline` and `resource_capacity`."""


def resource_capacity(cluster: Cluster) -> dict[str, float]:
    """What the cluster has of each resource it declares: GPUs, cores and GB of host memory
    (over the nodes that declare them); a resource no node declares has no entry."""
    out: dict[str, float] = {"gpu": float(cluster.num_gpus)}
    if cluster.declares_cpus:
        out["cpu"] = float(sum(n.cpus for n in cluster.nodes if n.cpus is not None))
    if cluster.declares_memory:
        out["memory"] = float(sum(n.memory_gb for n in cluster.nodes if n.memory_gb is not None))
    return out


def resource_timeline(
    result: SimulationResult,
    cluster: Cluster,
    demands: Workload | pd.DataFrame | None = None,
) -> pd.DataFrame:
    """How much of each declared resource the jobs hold, from each instant on.

    Columns: ``time``, ``gpu`` (busy GPUs), and where the cluster declares them ``cpu``
    (cores) and ``memory`` (GB of host memory) held on the nodes that declare them; one row
    per instant at which any of them changes (a step function, as `result.timeline`).
    `demands` gives the jobs' CPU/memory demands: the run's workload (or its ``jobs`` table:
    ``job_id`` and the canonical ``cpu_milli``/``memory_mib``), not needed when
    ``result.jobs`` has those columns itself. A job it does not list demands nothing. The
    ``cpu`` and ``memory`` columns are NaN when the run's event log was streamed to a file
    that ``result.meta`` does not name (see the module docstring)."""
    capacity = resource_capacity(cluster)
    gpu = _busy_gpus(result)
    held = _held(result, cluster, demands, "cpu" in capacity or "memory" in capacity)
    if held is None:  # the event log is not at hand (see the module docstring): unknown
        held = pd.DataFrame({"time": [0.0], "cpu_milli": [math.nan], "memory_mib": [math.nan]})
    held_times = held["time"].to_numpy(float)
    steps = {"gpu": (gpu["time"].to_numpy(float), gpu["gpu"].to_numpy(float))}
    if "cpu" in capacity:
        steps["cpu"] = (held_times, held["cpu_milli"].to_numpy(float) / 1000)
    if "memory" in capacity:
        steps["memory"] = (held_times, held["memory_mib"].to_numpy(float) / 1024)
    times = np.unique(np.concatenate([at for at, _ in steps.values()]))
    out = pd.DataFrame({"time": times})
    for name, (at, values) in steps.items():
        out[name] = _step_at(at, values, times)
    # Only the instants at which something changes, as the busy-GPU timeline.
    values = out.drop(columns="time").to_numpy()
    changed = np.ones(len(out), dtype=bool)
    if len(out) > 1:
        changed[1:] = (values[1:] != values[:-1]).any(axis=1)
    return out[changed].reset_index(drop=True)


def utilisation_summary(
    result: SimulationResult,
    cluster: Cluster,
    demands: Workload | pd.DataFrame | None = None,
    *,
    timeline: pd.DataFrame | None = None,
) -> dict[str, float]:
    """Mean and peak utilisation of each declared resource, as fractions of its capacity.

    Keys: ``gpu_busy_utilization`` (mean busy fraction of the GPUs; ``summary()["utilization"]``
    instead counts GPU-seconds, so a GPU two jobs share counts twice there, once here),
    ``peak_gpu_utilization``, and for a declared resource ``cpu_utilization``,
    ``peak_cpu_utilization``, ``memory_utilization``, ``peak_memory_utilization``. Means are
    over the makespan window (first submission to last completion of the finished jobs),
    peaks over the same window; NaN without a finished job. `timeline`: a `resource_timeline`
    of the same run, if already computed."""
    capacity = resource_capacity(cluster)
    if timeline is None:
        timeline = resource_timeline(result, cluster, demands)
    done = result.jobs[result.jobs["status"] == FINISHED]
    start = float(done["submit_time"].min()) if len(done) else math.nan
    end = float(done["finish_time"].max()) if len(done) else math.nan
    out: dict[str, float] = {}
    for resource in RESOURCES:
        if resource not in capacity:
            continue
        mean, peak = _mean_and_peak(
            timeline["time"].to_numpy(float),
            timeline[resource].to_numpy(float),
            start,
            end,
        )
        total = capacity[resource]
        name = "gpu_busy" if resource == "gpu" else resource
        out[f"{name}_utilization"] = mean / total if total else math.nan
        out[f"peak_{resource}_utilization"] = peak / total if total else math.nan
    return out


# ---- helpers ----------------------------------------------------------------------------
def _busy_gpus(result: SimulationResult) -> pd.DataFrame:
    """``time`` and ``gpu`` (busy GPUs of every type) from the run's busy-GPU timeline."""
    timeline = result.timeline
    types = [c for c in timeline.columns if c != "time"]
    busy = timeline[types].sum(axis=1).to_numpy(float) if types else np.zeros(len(timeline))
    frame = pd.DataFrame({"time": timeline["time"].to_numpy(float), "gpu": busy})
    if frame.empty or frame["time"].iat[0] > 0:  # nothing busy before the first change
        first = min(0.0, float(frame["time"].min())) if len(frame) else 0.0
        frame = pd.concat([pd.DataFrame({"time": [first], "gpu": [0.0]}), frame])
    return frame.reset_index(drop=True)


def _demand_table(
    result: SimulationResult, demands: Workload | pd.DataFrame | None
) -> dict[str, tuple[int, int, int]]:
    """job id (as text) → (GPUs asked, milli-CPUs, MiB) of every job with a demand."""
    jobs = result.jobs
    if demands is None and ("cpu_milli" in jobs.columns or "memory_mib" in jobs.columns):
        table = jobs
    elif demands is None:
        return {}
    else:
        table = demands if isinstance(demands, pd.DataFrame) else demands.jobs
    n = len(table)
    zeros = np.zeros(n, dtype=np.int64)
    cpu = table["cpu_milli"].to_numpy(np.int64) if "cpu_milli" in table.columns else zeros
    mem = table["memory_mib"].to_numpy(np.int64) if "memory_mib" in table.columns else zeros
    asked = dict(zip(map(str, jobs["job_id"]), jobs["num_gpus"].to_numpy(np.int64), strict=True))
    out = {}
    for job_id, c, m, gpus in zip(
        map(str, table["job_id"]), cpu, mem, table["num_gpus"].to_numpy(np.int64), strict=True
    ):
        if c or m:
            out[job_id] = (int(asked.get(job_id, gpus)), int(c), int(m))
    return out


def _held(
    result: SimulationResult,
    cluster: Cluster,
    demands: Workload | pd.DataFrame | None,
    wanted: bool,
) -> pd.DataFrame | None:
    """``time``, ``cpu_milli``, ``memory_mib``: what the jobs hold on the nodes that declare
    each resource, from each event on; None when the event log was streamed to a file that
    `result.meta` does not name."""
    events = result.events
    if wanted and events.empty and _started_any(result):  # the log was streamed to parquet
        path = result.meta.get("events_path")
        if path is None:
            return None
        events = _read_events(path)
    if wanted and "held_cpu_milli" in events.columns:
        return _held_as_recorded(events)
    table = _demand_table(result, demands) if wanted else {}
    if not table:
        return pd.DataFrame({"time": [0.0], "cpu_milli": [0], "memory_mib": [0]})
    ledger = Ledger(cluster)
    counts_cpu = [n.cpus is not None for n in cluster.nodes]
    counts_mem = [n.memory_gb is not None for n in cluster.nodes]
    kinds = HOLDING_EVENTS | RELEASING_EVENTS
    rows = events[events["event"].isin(kinds)]

    def amounts() -> Iterable[tuple[float, str, tuple[int, int]]]:
        for time, kind, job, gpus in zip(
            rows["time"].to_numpy(float),
            rows["event"],
            map(str, rows["job_id"]),
            rows["gpus"],
            strict=True,
        ):
            demand = table.get(job)
            if demand is None:
                continue
            if kind not in HOLDING_EVENTS:
                yield time, job, (0, 0)
                continue
            spec = JobSpec(0, job, 0.0, demand[0], 0.0, cpu_milli=demand[1], memory_mib=demand[2])
            per_node = ledger.node_demands(spec, _gpu_ids(gpus))
            yield (
                time,
                job,
                (
                    sum(c for node, (c, _) in per_node.items() if counts_cpu[node]),
                    sum(m for node, (_, m) in per_node.items() if counts_mem[node]),
                ),
            )

    return _totals(amounts())


def _started_any(result: SimulationResult) -> bool:
    """Whether a job of the run ever started (its log then has events)."""
    jobs = result.jobs
    return "start_time" in jobs.columns and bool(jobs["start_time"].notna().any())


def _read_events(path: str) -> pd.DataFrame:
    """The columns `_held` reads of an event log streamed to the parquet file `path`."""
    import pyarrow.parquet as pq

    wanted = ("time", "event", "job_id", "gpus", "held_cpu_milli", "held_memory_mib")
    present = set(pq.read_schema(path).names)
    return pd.read_parquet(path, columns=[c for c in wanted if c in present])


def _held_as_recorded(events: pd.DataFrame) -> pd.DataFrame:
    """`_held` from the amounts the engine recorded with each event (``held_cpu_milli``,
    ``held_memory_mib``: what the ledger held for the job once the instant was over), which
    are right whatever a policy gave a job (`Allocation.assign(..., cpu_milli=...)`)."""
    rows = events[events["event"].isin(HOLDING_EVENTS | RELEASING_EVENTS)]
    return _totals(
        (time, job, (int(cpu), int(mem)))
        for time, job, cpu, mem in zip(
            rows["time"].to_numpy(float),
            rows["job_id"],
            rows["held_cpu_milli"].to_numpy(np.int64),
            rows["held_memory_mib"].to_numpy(np.int64),
            strict=True,
        )
    )


def _totals(amounts: Iterable[tuple[float, Any, tuple[int, int]]]) -> pd.DataFrame:
    """``time``, ``cpu_milli``, ``memory_mib`` held by all jobs together, from (time, job,
    (milli-CPUs, MiB) the job holds from then on) in time order; one row per instant, the
    state once it is over."""
    holding: dict[Any, tuple[int, int]] = {}
    times: list[float] = []
    cpu_changes: list[int] = []
    mem_changes: list[int] = []
    for time, job, now in amounts:
        before = holding.get(job, (0, 0))
        if now != before:
            times.append(time)
            cpu_changes.append(now[0] - before[0])
            mem_changes.append(now[1] - before[1])
            holding[job] = now
    frame = pd.DataFrame(
        {
            "time": [0.0, *times],
            "cpu_milli": np.cumsum([0, *cpu_changes], dtype=np.int64),
            "memory_mib": np.cumsum([0, *mem_changes], dtype=np.int64),
        }
    )
    return frame.groupby("time", sort=True).last().reset_index()


def _gpu_ids(gpus: Any) -> tuple[int, ...]:
    """GPU ids from an event's ``gpus`` ("3,4" in a stored result, a tuple in memory)."""
    if isinstance(gpus, str):
        return tuple(int(g) for g in gpus.split(",") if g)
    return tuple(int(g) for g in gpus) if isinstance(gpus, Iterable) else ()


def _step_at(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The step function (`values` from each of the sorted `times` on) at the instants `at`;
    0 before the first step."""
    index = np.searchsorted(times, at, side="right") - 1
    return np.where(index >= 0, values[np.maximum(index, 0)], 0.0)


def _mean_and_peak(
    times: np.ndarray, values: np.ndarray, start: float, end: float
) -> tuple[float, float]:
    """Time-mean and maximum of a step function over [start, end] (NaN for an empty span)."""
    if not end > start:  # also NaN
        return math.nan, math.nan
    inside = (times > start) & (times < end)
    edges = np.concatenate([[start], times[inside], [end]])
    levels = _step_at(times, values, edges[:-1])
    return float(np.dot(levels, np.diff(edges)) / (end - start)), float(levels.max())
