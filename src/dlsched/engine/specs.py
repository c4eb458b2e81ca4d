"""From the canonical job table to `JobSpec`s: work in steps, and jobs that can never run.

Work conversion (DESIGN §2): a job given as a duration gets
`steps = duration × rate(its reference GPU type, its GPU count, fewest nodes)`, so that
replayed alone on its original hardware it takes its traced duration. A job with measured
per-type durations (`duration_<type>` columns) runs at `steps / duration_<type>` there.

A job can never run when no GPU pool it may use (its VC's nodes, or the unowned nodes; its
allowed GPU types) has enough GPUs, when its VC quota is smaller than its demand, or when
no allowed type gives it a positive throughput, or when its CPU or memory demand
(`cpu_milli`, `memory_mib`) cannot be held by the nodes of any allowed pool: a job's demand
is held on its nodes in proportion to its GPUs there (`Ledger.node_demands`), so a pool can
run it only if its nodes can hold enough of its GPUs with their shares of the demand.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
from collections.abc import Callable
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
    ledger = Ledger(cluster)
    pools = ledger.pool_capacity
    demand_fields = work.provenance.get("demand_fields", {})
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
        if ledger.tracks_resources and (spec.cpu_milli or spec.memory_mib):
            short = resource_shortfall(spec, n, allowed, vc, ledger)
            if short is not None:
                return short[0], demand_fields.get(short[1], short[1])
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

    # Columns are converted whole (numpy, and each distinct text once), then one loop builds
    # the specs in row order, so the first job that can never run is the one reported.
    texts = {
        name: _texts(df, name) for name in ("model", "user", "vc", "gpu_type", "status", "name")
    }
    constraints = _texts(df, "gpu_constraint")
    models, gpu_types = texts["model"], texts["gpu_type"]
    submits = _floats(df, "submit_time", math.nan)
    sizes = _ints(df, "num_gpus")
    durations = _floats(df, "duration", math.nan)
    steps_given = _floats(df, "total_steps", math.nan)
    # (an absent optional column is its default, with no walk over it)
    priorities = (
        _shared(_floats(df, "priority", 1.0)) if "priority" in df.columns else [1.0] * n_jobs
    )
    deadlines = _optional(df, "deadline", float)
    min_sizes = _optional(df, "min_gpus", int)
    max_sizes = _optional(df, "max_gpus", int)
    millis = (
        _shared([1000 if m != m else int(m) for m in _floats(df, "gpu_milli", 1000.0)])
        if "gpu_milli" in df.columns
        else [1000] * n_jobs
    )
    cpu_millis = _demands(df, "cpu_milli")
    memory_mibs = _demands(df, "memory_mib")
    demanding = "cpu_milli" in df.columns or "memory_mib" in df.columns
    rows: list = column("source_row")
    if "source_row" in df.columns and df["source_row"].dtype.kind not in "iu":
        rows = [None if row is None else int(row) for row in rows]
    type_keys: dict[str | None, str | None] = {None: None}
    allowed_keys: dict[str | None, tuple[str, ...] | None] = {None: None}
    references: dict[tuple, str] = {}
    # (model, reference type, GPUs) → steps/s there, or the reason (text, field) it has none
    ref_rate: dict[tuple, float | tuple[str, str]] = {}
    blocked: dict[tuple, tuple[str, str] | None] = {}
    specs: list[JobSpec] = []
    unschedulable: dict[int, str] = {}
    job_ids = column("job_id")
    make_spec = spec_maker()
    users, vcs, statuses = texts["user"], texts["vc"], texts["status"]
    # (the columns walked together: one tuple per row rather than a lookup per column)
    rows_of = zip(
        models,
        gpu_types,
        sizes,
        steps_given,
        durations,
        constraints,
        job_ids,
        submits,
        users,
        vcs,
        deadlines,
        priorities,
        rows,
        millis,
        statuses,
        min_sizes,
        max_sizes,
        cpu_millis,
        memory_mibs,
        strict=True,
    )
    for index, (
        model,
        gpu_type,
        n,
        steps,
        duration,
        constraint_text,
        job_id,
        submit,
        user,
        vc,
        deadline,
        priority,
        row,
        milli,
        status,
        fewest,
        most,
        cpu_milli,
        memory_mib,
    ) in enumerate(rows_of):
        per_type = (
            tuple(
                (t, float(values[index]))
                for t, values in zip(measured_types, measured, strict=True)
                if not math.isnan(values[index])
            )
            if measured
            else ()
        )
        reason, field = None, ""
        # (`x != x`: `math.isnan(x)` of a float, without the call)
        if per_type and steps != steps:
            steps = duration if duration == duration else min(d for _, d in per_type)
        elif steps != steps and duration != duration:
            reason, field = (
                "has no work measure (duration, total_steps or duration_<type>); "
                "its run time must come from a convergence model, which the "
                "trace implies through its model name",
                "duration",
            )
            steps = 0.0
        elif steps != steps:
            ref_key = (gpu_type, model)
            ref = references.get(ref_key)
            if ref is None:
                ref = references[ref_key] = reference_type(gpu_type, truth, model, cluster)
            key = (model, ref, n)
            rate = ref_rate.get(key)
            if rate is None:
                try:
                    nodes = -(-n // per_node[ref]) if ref in per_node else 1
                    rate = truth.throughput(model, ref, n, nodes)
                except UnknownModelError as exc:
                    rate = (str(exc), exc.field)
                ref_rate[key] = rate
            if isinstance(rate, tuple):
                reason, field = rate
            else:
                steps = duration * rate
                if not steps > 0:
                    reason, field = (f"has throughput 0 on its reference GPU type {ref!r}", "model")
            if reason is not None:
                steps = 0.0
        if gpu_type not in type_keys:
            type_keys[gpu_type] = type_key(gpu_type) if gpu_type else None
        if constraint_text not in allowed_keys:
            allowed_keys[constraint_text] = (
                tuple(type_key(t) for t in constraint_text.split("|")) if constraint_text else None
            )
        spec = make_spec(
            index,
            job_id,
            submit,
            n,
            float(steps),
            model,
            user,
            vc,
            deadline,
            priority,
            type_keys[gpu_type],
            None if duration != duration else duration,
            row,
            milli,
            allowed_keys[constraint_text],
            per_type or None,
            status,
            fewest,
            most,
            cpu_milli,
            memory_mib,
            texts["name"][index],
        )
        if reason is None:
            if per_type:
                found = why_not(spec)
            else:  # what why_not reads of a job without per-type durations
                why_key: tuple = (
                    n if fewest is None else fewest,  # spec.gpu_range[0], without a property
                    vc,
                    spec.gpu_constraint,
                    milli,
                    model,
                )
                if demanding and (cpu_milli or memory_mib):
                    why_key += (n, cpu_milli, memory_mib)
                if why_key in blocked:
                    found = blocked[why_key]
                else:
                    found = blocked[why_key] = why_not(spec)
            if found is not None:
                reason, field = found
        if reason is not None:
            if not lenient:
                raise TraceError(f"job {job_id!r}: {reason}", path=source, row=row, field=field)
            unschedulable[index] = reason
        specs.append(spec)
    return specs, unschedulable


@functools.cache
def spec_maker() -> Callable[..., JobSpec]:
    """A function that makes ``JobSpec(*fields)`` (every field, in order) at a fraction of
    the cost.

    A frozen dataclass sets each field through ``object.__setattr__``, two thirds of
    `build_specs`' time. This builds the spec as an instance of a twin class with the same
    slots and no frozen ``__setattr__`` (plain attribute stores), then makes it a `JobSpec`
    (``__class__`` assignment, which CPython allows between classes of one slot layout):
    ~0.3 µs a spec against ~0.8 µs through the slots' descriptors, the previous way, kept
    where the layouts do not match. It is `JobSpec` itself should the class ever check its
    fields (``__post_init__``) or keep them other than in slots."""
    names = [field.name for field in dataclasses.fields(JobSpec)]
    slots = [JobSpec.__dict__.get(name) for name in names]
    if hasattr(JobSpec, "__post_init__") or not all(
        isinstance(slot, types.MemberDescriptorType) for slot in slots
    ):
        return JobSpec
    arguments = ", ".join(names)
    twin = type("_JobSpecTwin", (), {"__slots__": tuple(JobSpec.__slots__)})
    namespace: dict[str, Any] = {"new": object.__new__, "twin": twin, "cls": JobSpec}
    body = "".join(f"    spec.{name} = {name}\n" for name in names)
    exec(
        f"def make({arguments}):\n    spec = new(twin)\n{body}"
        "    spec.__class__ = cls\n    return spec\n",
        namespace,
    )
    try:
        namespace["make"](*[None] * len(names))
    except TypeError:  # layouts differ (a slot JobSpec gained): each slot's descriptor
        namespace = {"new": object.__new__, "cls": JobSpec}
        for name, slot in zip(names, slots, strict=True):
            namespace[f"set_{name}"] = slot.__set__  # type: ignore[union-attr]
        body = "".join(f"    set_{name}(spec, {name})\n" for name in names)
        exec(f"def make({arguments}):\n    spec = new(cls)\n{body}    return spec\n", namespace)
    return namespace["make"]


def resource_shortfall(
    spec: JobSpec, n: int, allowed: list[str], vc: str | None, ledger: Ledger
) -> tuple[str, str] | None:
    """(reason, ``cpu_milli`` or ``memory_mib``) when no pool of the `allowed` GPU types
    (of `vc`'s nodes, or the unowned ones) can ever hold the job's CPU or memory demand on
    `n` GPUs of one type, else None.

    A node whose `g` GPUs could take `k` of the job's holds at least
    ``floor(demand × k / n)`` of it (`Ledger.node_demands`); the pool can run the job only
    if its nodes can take `n` GPUs in all that way. The test never refuses a job that could
    run: it ignores where the remainder of the split lands."""
    num = spec.num_gpus
    cpu, mem = spec.cpu_milli, spec.memory_mib
    if not num:  # a job without GPUs: one node of an allowed pool must hold all of it
        return _host_shortfall(cpu, mem, allowed, vc, ledger)
    if n != num and num > 0:  # an elastic job on its fewest GPUs: per-GPU demand × GPUs
        cpu, mem = -(-cpu * n // num), -(-mem * n // num)
    cpu_cap = ledger.cpu_capacity if cpu else None
    mem_cap = ledger.mem_capacity if mem else None
    # A job runs on one GPU type (as the GPU-count check above assumes): room per type.
    room_cpu: dict[str, int] = {}
    room_both: dict[str, int] = {}
    most_cpu = most_mem = 0
    for node, pool in enumerate(ledger.node_pool):
        if pool[1] != vc or pool[0] not in allowed:
            continue
        gpus = len(ledger.cluster.nodes[node].gpu_ids)
        k_cpu = k_mem = gpus
        if cpu_cap is not None:
            most_cpu = max(most_cpu, cpu_cap[node])
            k_cpu = min(gpus, ((cpu_cap[node] + 1) * n - 1) // cpu)
        if mem_cap is not None:
            most_mem = max(most_mem, mem_cap[node])
            k_mem = min(gpus, ((mem_cap[node] + 1) * n - 1) // mem)
        room_cpu[pool[0]] = room_cpu.get(pool[0], 0) + k_cpu
        room_both[pool[0]] = room_both.get(pool[0], 0) + min(k_cpu, k_mem)
    if max(room_both.values(), default=0) >= n:
        return None
    where = f"VC {vc!r}'s nodes" if vc else "the nodes no VC owns"
    if max(room_cpu.values(), default=0) < n:
        return (
            f"asks for {cpu / 1000:g} CPUs over {n} GPUs, more than {where} of its allowed "
            f"GPU types in cluster {ledger.cluster.name!r} can hold (at most "
            f"{most_cpu / 1000:g} CPUs per node, shared in proportion to its GPUs there)",
            "cpu_milli",
        )
    return (
        f"asks for {mem / 1024:g} GB of memory over {n} GPUs, more than {where} of its "
        f"allowed GPU types in cluster {ledger.cluster.name!r} can hold (at most "
        f"{most_mem / 1024:g} GB per node, shared in proportion to its GPUs there)",
        "memory_mib",
    )


def _host_shortfall(
    cpu: int, mem: int, allowed: list[str], vc: str | None, ledger: Ledger
) -> tuple[str, str] | None:
    """`resource_shortfall` of a job without GPUs: (reason, field) when no node of the
    `allowed` types (of `vc`'s nodes, or the unowned ones) has its whole CPU and memory."""
    cpu_cap = ledger.cpu_capacity if cpu else None
    mem_cap = ledger.mem_capacity if mem else None
    most_cpu = most_mem = 0
    for node, pool in enumerate(ledger.node_pool):
        if pool[1] != vc or pool[0] not in allowed:
            continue
        cpu_ok = cpu_cap is None or cpu_cap[node] >= cpu
        mem_ok = mem_cap is None or mem_cap[node] >= mem
        if cpu_ok and mem_ok:
            return None
        most_cpu = max(most_cpu, cpu_cap[node] if cpu_cap is not None else 0)
        most_mem = max(most_mem, mem_cap[node] if mem_cap is not None else 0)
    where = f"VC {vc!r}'s nodes" if vc else "the nodes no VC owns"
    if cpu_cap is not None and most_cpu < cpu:
        return (
            f"asks for {cpu / 1000:g} CPUs and no GPU, more than any of {where} in cluster "
            f"{ledger.cluster.name!r} has (at most {most_cpu / 1000:g} CPUs per node)",
            "cpu_milli",
        )
    return (
        f"asks for {mem / 1024:g} GB of memory and no GPU, more than any of {where} in "
        f"cluster {ledger.cluster.name!r} has with its CPUs (at most {most_mem / 1024:g} GB "
        "per node)",
        "memory_mib",
    )


def _texts(df: pd.DataFrame, name: str) -> list[str | None]:
    """`_text` of every value of a column (None for all rows when it is absent), each
    distinct text converted once when the column holds only text and missing values."""
    if name not in df.columns:
        return [None] * len(df)
    values = df[name]
    if pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):
        codes, uniques = pd.factorize(values)
        mapping = [_text(value) for value in uniques]
        mapping.append(None)  # code -1: a missing value
        return list(map(mapping.__getitem__, codes.tolist()))
    return [_text(value) for value in values.tolist()]


def _shared(values: list[Any]) -> list[Any]:
    """`values` with equal numbers as one object each: a column with few distinct values
    (priorities, GPU shares) then costs a pointer per job, not a number object per job."""
    seen: dict[Any, Any] = {}
    # (zeros are left alone: 0.0 and -0.0 are equal keys, and their signs must stay)
    return [seen.setdefault(value, value) if value else value for value in values]


def _floats(df: pd.DataFrame, name: str, default: float) -> list[float]:
    """A numeric column as Python floats (NaN where missing; `default` when absent)."""
    if name not in df.columns:
        return [default] * len(df)
    return df[name].to_numpy(dtype=float, na_value=math.nan).tolist()


def _ints(df: pd.DataFrame, name: str) -> list[int]:
    """An integer column as Python ints."""
    values = df[name]
    if values.dtype.kind in "iu":
        return values.tolist()
    return [int(value) for value in values.tolist()]


def _demands(df: pd.DataFrame, name: str) -> list[int]:
    """A CPU or memory demand column as Python ints (0 where absent or missing)."""
    if name not in df.columns:
        return [0] * len(df)
    values = df[name]
    if values.dtype.kind in "iu":
        return values.tolist()
    return [0 if v != v else int(v) for v in values.to_numpy(dtype=float, na_value=0.0).tolist()]


def _optional(df: pd.DataFrame, name: str, kind: type) -> list:
    """A numeric column as `kind(value)`, None where the value is missing or the column
    is absent."""
    if name not in df.columns:
        return [None] * len(df)
    return [None if value != value else kind(value) for value in _floats(df, name, math.nan)]
