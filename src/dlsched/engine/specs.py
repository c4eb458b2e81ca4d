"""From the canonical job table to `JobSpec`s: work in steps, and jobs that can never run.

Work conversion (DESIGN §2): a job given as a duration gets
`steps = duration × rate(its reference GPU type, its GPU count, fewest nodes)`, so that
replayed alone on its original hardware it takes its traced duration. A job with measured
per-type durations (`duration_<type>` columns) runs at `steps / duration_<type>` there.

A job can never run when no GPU pool it may use (its VC's nodes, or the unowned nodes; its
allowed GPU types) has enough GPUs, when its VC quota is smaller than its demand, or when
no allowed type gives it a positive throughput.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from dlsched.cluster import Cluster, type_key
from dlsched.engine.ledger import Ledger
from dlsched.errors import TraceError, UnknownModelError
from dlsched.jobs import JobSpec
from dlsched.perf.base import ThroughputModel
from dlsched.perf.rates import JobRates
from dlsched.traces import Workload

_DURATION_PREFIX = "duration_"


def reference_type(
    spec_type: str | None, truth: ThroughputModel, model: str | None, cluster: Cluster
) -> str:
    """The GPU type a traced duration was measured on."""
    if spec_type:
        return type_key(spec_type)
    ref = truth.reference_type(model)
    if ref:
        return ref
    return sorted(cluster.gpu_types)[0]


def _text(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    text = str(value).strip()
    return text or None


def _number(value: Any) -> float | None:
    if value is None or value is pd.NA or math.isnan(value):
        return None
    return float(value)


def build_specs(
    work: Workload, cluster: Cluster, truth: ThroughputModel, lenient: bool
) -> tuple[list[JobSpec], dict[int, str]]:
    """Job specs in submit order and the jobs that can never run (index → reason).

    Raises `TraceError` naming the file, row and field for such a job unless `lenient`."""
    df = work.jobs
    if not df["submit_time"].is_monotonic_increasing:
        df = df.sort_values(["submit_time", "job_id"], kind="stable").reset_index(drop=True)
    n_jobs = len(df)
    source = work.provenance.get("source", "<workload>")
    pools = Ledger(cluster).pool_capacity
    owning = {vc.name for vc in cluster.vcs if vc.node_indices}
    quota = {vc.name: vc.quota_gpus for vc in cluster.vcs if vc.quota_gpus is not None}
    per_node = {t: cluster.max_gpus_per_node(t) for t in cluster.gpu_types}
    rates = JobRates(truth)

    def column(name: str, default: Any = None) -> list:
        return df[name].tolist() if name in df.columns else [default] * n_jobs

    type_columns = [c for c in df.columns if c.startswith(_DURATION_PREFIX)]
    measured = [df[c].tolist() for c in type_columns]
    measured_types = [type_key(c[len(_DURATION_PREFIX) :]) for c in type_columns]

    def why_not(spec: JobSpec) -> tuple[str, str] | None:
        """(reason, field) when the job can never run on this cluster."""
        n, vc = spec.gpu_range[0], (spec.vc if spec.vc in owning else None)
        allowed = [
            t
            for t in sorted(cluster.gpu_types)
            if spec.gpu_constraint is None or t in spec.gpu_constraint
        ]
        if not allowed:
            return (
                f"may only use GPU types {'|'.join(spec.gpu_constraint or ())}, which "
                f"cluster {cluster.name!r} does not have",
                "gpu_constraint",
            )
        room = {t: pools.get((t, vc), 0) for t in allowed}
        if max(room.values()) < n:
            where = f"VC {vc!r}'s nodes" if vc else "the nodes no VC owns"
            best = max(room.items(), key=lambda kv: kv[1])
            return (
                f"asks for {n} GPUs, but {where} in cluster {cluster.name!r} have at most "
                f"{best[1]} of one allowed type ({cluster.display_name(best[0])})",
                "num_gpus",
            )
        share = n * spec.gpu_milli / 1000
        if spec.vc in quota and quota[spec.vc] < share:
            return (
                f"asks for {share:g} GPUs, more than VC {spec.vc!r}'s quota of {quota[spec.vc]}",
                "num_gpus",
            )
        problem: tuple[str, str] = (
            "cannot run on any allowed GPU type of the cluster (throughput 0)",
            "model",
        )
        for t in allowed:
            if room[t] < n:
                continue
            try:
                if rates.rate(spec, t, n, -(-n // per_node[t])) > 0:
                    return None
            except UnknownModelError as exc:
                problem = (str(exc), exc.field)
        return problem

    ref_rate: dict[tuple, float] = {}
    specs: list[JobSpec] = []
    unschedulable: dict[int, str] = {}
    rows = column("source_row")
    columns = zip(
        column("job_id"),
        column("submit_time"),
        column("num_gpus"),
        column("duration", math.nan),
        column("total_steps", math.nan),
        column("model"),
        column("user"),
        column("vc"),
        column("deadline", math.nan),
        column("priority", 1.0),
        column("gpu_type"),
        column("gpu_milli", 1000),
        column("gpu_constraint"),
        column("status"),
        column("min_gpus", math.nan),
        column("max_gpus", math.nan),
        rows,
        strict=True,
    )
    for index, (
        job_id,
        submit,
        n,
        duration,
        steps,
        model,
        user,
        vc,
        deadline,
        priority,
        gpu_type,
        milli,
        constraint,
        status,
        min_n,
        max_n,
        row,
    ) in enumerate(columns):
        model, gpu_type, constraint_text = _text(model), _text(gpu_type), _text(constraint)
        per_type = tuple(
            (t, float(values[index]))
            for t, values in zip(measured_types, measured, strict=True)
            if not math.isnan(values[index])
        )
        reason, field = None, ""
        if per_type and math.isnan(steps):
            steps = duration if not math.isnan(duration) else min(d for _, d in per_type)
        elif math.isnan(steps) and math.isnan(duration):
            reason, field = (
                "has no work measure (duration, total_steps or duration_<type>); "
                "its run time must come from a convergence model, which the "
                "trace implies through its model name",
                "duration",
            )
            steps = 0.0
        elif math.isnan(steps):
            ref = reference_type(gpu_type, truth, model, cluster)
            key = (model, ref, int(n))
            try:
                if key not in ref_rate:
                    nodes = -(-int(n) // per_node[ref]) if ref in per_node else 1
                    ref_rate[key] = truth.throughput(model, ref, int(n), nodes)
                steps = duration * ref_rate[key]
                if not steps > 0:
                    reason, field = (f"has throughput 0 on its reference GPU type {ref!r}", "model")
            except UnknownModelError as exc:
                reason, field = str(exc), exc.field
            if reason is not None:
                steps = 0.0
        milli = (
            1000
            if milli is None or (isinstance(milli, float) and math.isnan(milli))
            else int(milli)
        )
        spec = JobSpec(
            index=index,
            job_id=job_id,
            submit_time=float(submit),
            num_gpus=int(n),
            total_steps=float(steps),
            model=model,
            user=_text(user),
            vc=_text(vc),
            deadline=_number(deadline),
            priority=float(priority),
            gpu_type=type_key(gpu_type) if gpu_type else None,
            duration=_number(duration),
            source_row=None if row is None else int(row),
            gpu_milli=milli,
            gpu_constraint=(
                tuple(type_key(t) for t in constraint_text.split("|")) if constraint_text else None
            ),
            type_durations=per_type or None,
            status=_text(status),
            min_gpus=None if _number(min_n) is None else int(min_n),
            max_gpus=None if _number(max_n) is None else int(max_n),
        )
        if reason is None:
            blocked = why_not(spec)
            if blocked is not None:
                reason, field = blocked
        if reason is not None:
            if not lenient:
                raise TraceError(f"job {job_id!r}: {reason}", path=source, row=row, field=field)
            unschedulable[index] = reason
        specs.append(spec)
    return specs, unschedulable
