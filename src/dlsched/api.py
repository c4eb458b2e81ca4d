"""The public entry point: `simulate(workload, cluster, policy, ...)`."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from dlsched import policies
from dlsched.cluster import Cluster, load_cluster, type_key
from dlsched.engine.simulator import Simulator, reference_type
from dlsched.errors import TraceError, UnknownModelError
from dlsched.jobs import JobSpec
from dlsched.metrics import SimulationResult, build_result
from dlsched.overheads import OverheadModel
from dlsched.perf import make_estimator, make_throughput
from dlsched.perf.base import ThroughputModel
from dlsched.perf.estimator import OracleEstimator
from dlsched.traces import Workload, load_trace, validate_jobs

__version__ = "0.1.0"


def simulate(workload: Workload | str | os.PathLike[str] | pd.DataFrame,
             cluster: Cluster | str | os.PathLike[str],
             policy: str | Any = "fifo",
             throughput: str | ThroughputModel = "duration",
             estimator: str | OracleEstimator = "oracle",
             seed: int = 0,
             restart_overhead_s: float = 0.0,
             *,
             overheads: OverheadModel | None = None,
             audit: bool | None = None,
             on_progress: Callable[[float], None] | None = None,
             **policy_params: Any) -> SimulationResult:
    """Replay `workload` on `cluster` under `policy` and return the result.

    - `policy`: a registered name (`dlsched.policies.names()`) or a policy instance;
      `**policy_params` go to the named policy's constructor.
    - `throughput`: the truth — `"duration"` (type-agnostic replay), `"gavel"` (Gavel's
      measured table), `"scaling"` (measured + extrapolated) or a `ThroughputModel`.
    - `estimator`: what the policy sees — `"oracle"`, `"noisy"`, `"noisy:<sigma>"` or an
      estimator instance.
    - `restart_overhead_s`: seconds without progress when a preempted job resumes (and,
      unless `overheads` says otherwise, when a job moves); `overheads` overrides it.
    - `audit`: check every engine invariant after each scheduling call (slow; default from
      the environment variable `DLSCHED_AUDIT`).

    A job that can never run (more GPUs than any one type has, or a model the throughput
    model cannot run anywhere) raises `TraceError` naming its file, row and field, unless the
    workload was loaded with `lenient=True`: then it is reported as `unschedulable`.
    """
    wall = time.perf_counter()
    work = _as_workload(workload)
    hardware = cluster if isinstance(cluster, Cluster) else load_cluster(cluster)
    if isinstance(policy, str):
        chosen = policies.get(policy, **policy_params)
    else:
        if policy_params:
            raise ValueError(f"policy parameters {sorted(policy_params)} were given with a "
                             "policy instance; configure the instance instead")
        chosen = policy
    truth = make_throughput(throughput)
    estimate = make_estimator(estimator)
    costs = overheads if overheads is not None else OverheadModel(restart_s=restart_overhead_s)
    if audit is None:
        audit = os.environ.get("DLSCHED_AUDIT", "") not in ("", "0")
    lenient = bool(work.provenance.get("lenient", False))
    specs, unschedulable = build_specs(work, hardware, truth, lenient)
    sim = Simulator(specs, hardware, chosen, truth, estimate, costs, seed=seed, audit=audit,
                    skip=set(unschedulable), on_progress=on_progress)
    sim.run()
    meta = {
        "dlsched_version": __version__,
        "policy": getattr(chosen, "name", type(chosen).__name__),
        "policy_repr": repr(chosen),
        "policy_params": {k: repr(v) for k, v in sorted(policy_params.items())},
        "cluster": hardware.name,
        "cluster_source": hardware.source,
        "cluster_gpus": hardware.num_gpus,
        "gpu_cost_per_hour": {t.name: t.cost_per_hour for t in hardware.gpu_types.values()
                              if t.cost_per_hour is not None},
        "throughput": getattr(truth, "name", type(truth).__name__),
        "estimator": repr(estimate),
        "seed": seed,
        "overheads": repr(costs),
        "workload": work.provenance,
        "rows_skipped_at_load": len(work.provenance.get("skipped", [])),
        "unschedulable": [
            {"job_id": _plain(specs[i].job_id), "row": specs[i].source_row, "reason": reason}
            for i, reason in sorted(unschedulable.items())
        ],
        "scheduling_calls": sim.scheduling_calls,
        "scheduler_wall_s": sim.scheduler_wall_s,
    }
    result = build_result(sim, meta, unschedulable)
    result.meta["sim_wall_s"] = time.perf_counter() - wall
    return result


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _as_workload(workload: Workload | str | os.PathLike[str] | pd.DataFrame) -> Workload:
    if isinstance(workload, Workload):
        return workload
    if isinstance(workload, pd.DataFrame):
        return validate_jobs(workload, "<DataFrame>", lenient=False, fmt="canonical")
    if isinstance(workload, (str, Path, os.PathLike)):
        return load_trace(workload)
    raise TypeError(f"workload must be a Workload, a trace path or a DataFrame, "
                    f"got {type(workload).__name__}")


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def _number(value: Any) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def build_specs(work: Workload, cluster: Cluster, truth: ThroughputModel, lenient: bool
                ) -> tuple[list[JobSpec], dict[int, str]]:
    """Job specs in submit order, with work converted to steps (DESIGN §2), and the jobs
    that can never run (index → reason). Raises for those unless `lenient`."""
    df = work.jobs
    if not df["submit_time"].is_monotonic_increasing:
        df = df.sort_values(["submit_time", "job_id"], kind="stable").reset_index(drop=True)
    source = work.provenance.get("source", "<workload>")
    capacity = cluster.capacity_by_type()
    per_node = {t: cluster.max_gpus_per_node(t) for t in capacity}
    rows = df["source_row"].tolist() if "source_row" in df.columns else [None] * len(df)
    ref_rate: dict[tuple, float] = {}
    feasible: dict[tuple, tuple[str, str] | None] = {}

    def rate(model: str | None, gpu_type: str, n: int) -> float:
        nodes = -(-n // per_node[gpu_type]) if gpu_type in per_node else 1
        return truth.throughput(model, gpu_type, n, nodes)

    def why_not(model: str | None, n: int) -> tuple[str, str] | None:
        """(reason, field) when a job of this model and size can never run."""
        key = (model, n)
        if key not in feasible:
            fits = [t for t, c in capacity.items() if c >= n]
            if not fits:
                biggest = max(capacity.items(), key=lambda kv: kv[1])
                feasible[key] = (f"asks for {n} GPUs, but cluster {cluster.name!r} has at most "
                                 f"{biggest[1]} of one type ({cluster.display_name(biggest[0])})",
                                 "num_gpus")
            else:
                found: tuple[str, str] | None = (
                    "cannot run on any GPU type of the cluster (throughput 0)", "model")
                for t in fits:
                    try:
                        if rate(model, t, n) > 0:
                            found = None
                            break
                    except UnknownModelError as exc:
                        found = (str(exc), exc.field)
                feasible[key] = found
        return feasible[key]

    specs: list[JobSpec] = []
    unschedulable: dict[int, str] = {}
    columns = zip(df["job_id"].tolist(), df["submit_time"].tolist(), df["num_gpus"].tolist(),
                  df["duration"].tolist(), df["total_steps"].tolist(), df["model"].tolist(),
                  df["user"].tolist(), df["vc"].tolist(), df["deadline"].tolist(),
                  df["priority"].tolist(), df["gpu_type"].tolist(), rows, strict=True)
    for index, (job_id, submit, n, duration, steps, model, user, vc, deadline, priority,
                gpu_type, row) in enumerate(columns):
        model, gpu_type = _text(model), _text(gpu_type)
        n = int(n)
        blocked = why_not(model, n)
        reason, field = blocked if blocked is not None else (None, "")
        if reason is None and math.isnan(steps):
            ref = reference_type(gpu_type, truth, model, cluster)
            key = (model, ref, n)
            try:
                if key not in ref_rate:
                    ref_rate[key] = rate(model, ref, n)
                steps = duration * ref_rate[key]
                if not steps > 0:
                    reason, field = f"has throughput 0 on its reference GPU type {ref!r}", "model"
            except UnknownModelError as exc:
                reason, field = str(exc), exc.field
        if reason is not None:
            if not lenient:
                raise TraceError(f"job {job_id!r}: {reason}", path=source, row=row, field=field)
            unschedulable[index] = reason
            steps = 0.0 if math.isnan(steps) else steps
        specs.append(JobSpec(
            index=index, job_id=job_id, submit_time=float(submit), num_gpus=n,
            total_steps=float(steps), model=model, user=_text(user), vc=_text(vc),
            deadline=_number(deadline), priority=float(priority),
            gpu_type=type_key(gpu_type) if gpu_type else None,
            duration=_number(duration), source_row=None if row is None else int(row),
        ))
    return specs, unschedulable
