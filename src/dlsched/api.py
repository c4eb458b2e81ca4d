"""The public entry point: `simulate(workload, cluster, policy, ...)`."""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dlsched import policies
from dlsched._version import __version__
from dlsched.cluster import Cluster, load_cluster
from dlsched.engine.progress import ProgressSink
from dlsched.engine.simulator import Simulator, no_full_collections
from dlsched.engine.specs import build_specs
from dlsched.errors import ConfigError, TraceError, did_you_mean
from dlsched.metrics import SimulationResult, build_result
from dlsched.overheads import OverheadModel, make_overheads
from dlsched.perf import make_estimator, make_throughput
from dlsched.perf.base import ThroughputModel
from dlsched.perf.estimator import OracleEstimator
from dlsched.provision.billing import power_meta, rented_meta, resolve_provisioner
from dlsched.traces import Workload, load_trace, validate_jobs


def simulate(
    workload: Workload | str | os.PathLike[str] | pd.DataFrame,
    cluster: Cluster | str | os.PathLike[str] | dict[str, Any],
    policy: str | Any = "fifo",
    throughput: str | ThroughputModel = "duration",
    estimator: str | OracleEstimator = "oracle",
    seed: int = 0,
    restart_overhead_s: float = 0.0,
    *,
    overheads: OverheadModel | str | None = None,
    audit: bool | None = None,
    on_progress: Callable[[float], None] | None = None,
    max_time_s: float | None = None,
    progress: bool | None | ProgressSink = False,
    events: str | os.PathLike[str] | None = None,
    provisioner: str | Any | None = None,
    **policy_params: Any,
) -> SimulationResult:
    """Replay `workload` on `cluster` under `policy` and return the result.

    - `workload`: a `Workload` (from `load_trace`; its job table is validated again when it
      was changed since it was loaded), a trace path, or a DataFrame in the canonical
      schema (validated as a trace file is). A workload without jobs is a `TraceError`.
    - `cluster`: a `Cluster`, a cluster file, a bundled cluster's name
      (`dlsched.cluster.load_cluster`), or a dict in the cluster file's form
      (`Cluster.from_dict`, e.g. ``{"gpu_types": {"V100": {}}, "nodes": [{"gpu_type":
      "V100", "count": 2, "gpus_per_node": 4}]}``). When the cluster declares VCs, every
      job's `vc` must name one of them (a `TraceError` names the row and the VC); on a
      cluster without VCs the column is only a label.
    - `policy`: a registered name (`dlsched.policies.names()`) or a policy instance;
      `**policy_params` go to the named policy's constructor. An instance may be passed to
      any number of runs: the engine calls its `start(view)` at the beginning of each.
    - `throughput`: the truth — `"duration"` (type-agnostic replay), `"gavel"` (Gavel's
      measured table), `"scaling"` (measured + extrapolated), `"goodput"` /
      `"goodput-pollux"` (Pollux/Sia goodput, `dlsched.perf.goodput`) or a
      `ThroughputModel`. A Pollux/Sia workload (no run times: work implied by each job's
      model) runs on the goodput model by default, with each job's batch adapted when the
      policy declares ``adaptive_batch = True`` and its traced batch otherwise; its cluster's
      GPU types must have profiles (``T4``, ``V100``, ``A100``, ``RTX6000``, ``RTX2080Ti``).
    - `estimator`: what the policy sees — `"oracle"`, `"noisy"`, `"noisy:<sigma>"` or an
      estimator instance (with the goodput model, the oracle, noisy and learned estimators
      are their goodput-aware counterparts, `dlsched.perf.goodput.goodput_estimator_for`).
    - `restart_overhead_s`: seconds without progress when a preempted job resumes (and,
      unless `overheads` says otherwise, when a job moves). `overheads` — an
      `OverheadModel` or a preset name such as `"pollux"` (`dlsched.overheads.PRESETS`) —
      overrides it. With neither, a policy's `default_overheads` (if it has one) apply, or
      what its `default_overheads_for(cluster)` gives for this cluster (ElasticFlow's
      artifact charges more from 256 GPUs on).
    - `seed`: the run's seed, a whole number >= 0 (numpy integers too). One
      `numpy.random.SeedSequence(seed)` spawns independent streams for the estimator's
      noise, the policy's random choices (`view.rng`) and run-time transforms; the same
      inputs and seed give identical results.
    - `audit`: check every engine invariant after each scheduling call (slow; default from
      the environment variable `DLSCHED_AUDIT`).
    - `max_time_s`: stop at this simulated time. Jobs not finished by then (and jobs left
      when a policy stalls — `STALL_CALLS` calls in a row with nothing running and nothing
      started) are `unfinished`, with their progress up to the stop credited, a
      `RuntimeWarning`, and `result.meta["halted"]` saying why.
    - `progress`: a progress bar on stderr — jobs finished of the total, with rate, ETA and
      the simulated time: True shows it, None only when stderr is a terminal (what the CLI
      does), False (the default) never. It is redrawn at most every 0.5 s and costs well
      under 1 % of a run. A callable instead is told ``(jobs finished, total)`` on the same
      schedule and once at the end (how an experiment's grid bar follows its runs).
    - `events`: a parquet file to write the event log to as the run goes (a row group per
      `dlsched.engine.recorder.EVENTS_ROW_GROUP` events), so a long replay never holds it:
      the file then has what `result.events` would, `result.events` has its columns and no
      rows, ``result.meta["events_path"]`` names the file and ``summary()["events"]`` still
      counts the events. Read it back with `pandas.read_parquet` or `pyarrow.dataset`.
      The log is written under a temporary name and moved onto this one when the run ends
      (a run that raises still moves it, with the events up to the failure); until then an
      existing file keeps what it held, and a write that fails (a full disk) leaves it so.
      A symbolic link, or the run's own trace or cluster file, is refused (`OutputError`).
      Its folder is made before the run. On a cluster that
      declares CPUs or memory the log is held and written at the end (its held-resource
      columns need the whole run), and the CPU/memory figures of `summary()` are read
      back from the file.

    - `provisioner`: on a cluster that rents instances (``instance_types``,
      `dlsched.rented`), what acquires and releases them — a name in
      `dlsched.provision.PROVISIONERS` (``"on_demand"``, the default there; ``"static"``
      rents nothing) or an instance. The summary then has ``rented_cost``, ``rented_idle_s``
      and ``cost_per_job`` (`dlsched.rented_metrics`). On a fixed cluster it must be None or
      ``"static"``.

    A job that can never run (more GPUs than any one type has, or a model the throughput
    model cannot run anywhere) raises `TraceError` naming its file, row and field, unless the
    workload was loaded with `lenient=True`: then it is reported as `unschedulable`.
    """
    wall = time.perf_counter()
    if progress not in (True, False, None) and not callable(progress):
        # "yes" or 0.5 would pass as truthy, silently
        raise ValueError(
            f"progress must be True, False or None (or a callable sink), not {progress!r}"
        )
    seed = _checked_seed(seed)
    work = _as_workload(workload)
    hardware = _as_cluster(cluster)
    _check_vcs(work, hardware)
    if isinstance(policy, str):
        chosen = policies.get(policy, **policy_params)
    else:
        if policy_params:
            raise ValueError(
                f"policy parameters {sorted(policy_params)} were given with a "
                "policy instance; configure the instance instead"
            )
        chosen = policy
    estimate = make_estimator(estimator)
    renter = resolve_provisioner(provisioner, hardware)
    if _needs_goodput(work, throughput):
        work, truth, estimate = _goodput_defaults(work, hardware, chosen, throughput, estimate)
    else:
        truth = make_throughput(throughput)
    if overheads is None and restart_overhead_s == 0.0:
        # A policy may name the overheads its paper assumes (Gandiva: suspend/resume and
        # migration costs); any overheads the user gives win.
        overheads = getattr(chosen, "default_overheads", None)
        for_cluster = getattr(chosen, "default_overheads_for", None)
        on_this = for_cluster(hardware) if callable(for_cluster) else None
        if on_this is not None:
            overheads = on_this
    costs = make_overheads(overheads, restart_overhead_s)
    if audit is None:
        audit = os.environ.get("DLSCHED_AUDIT", "") not in ("", "0")
    lenient = bool(work.provenance.get("lenient", False))
    with no_full_collections():
        return _replay(
            work,
            hardware,
            chosen,
            truth,
            estimate,
            costs,
            seed,
            audit,
            on_progress,
            max_time_s,
            progress,
            lenient,
            policy_params,
            wall,
            events,
            renter,
        )


def _replay(
    work: Workload,
    hardware: Cluster,
    chosen: Any,
    truth: ThroughputModel,
    estimate: OracleEstimator,
    costs: OverheadModel,
    seed: int,
    audit: bool,
    on_progress: Callable[[float], None] | None,
    max_time_s: float | None,
    progress: bool | None | ProgressSink,
    lenient: bool,
    policy_params: dict[str, Any],
    wall: float,
    events: str | os.PathLike[str] | None = None,
    renter: Any | None = None,
) -> SimulationResult:
    """`simulate` from the job specs to the result (no full GC collections meanwhile)."""
    specs, unschedulable = build_specs(work, hardware, truth, lenient)
    sim = Simulator(
        specs,
        hardware,
        chosen,
        truth,
        estimate,
        costs,
        seed=seed,
        audit=audit,
        skip=set(unschedulable),
        on_progress=on_progress,
        max_time_s=max_time_s,
        progress=progress,
        progress_desc=str(getattr(chosen, "name", type(chosen).__name__)),
        provisioner=renter,
    )
    if events is not None:
        inputs = run_inputs(work, hardware)
        _prepare_events_file(events, inputs)
        sim.recorder.stream_to(
            events,
            np.fromiter((spec.num_gpus for spec in specs), np.int64, len(specs)),
            pd.Series([spec.job_id for spec in specs]),  # as the per-job table's column
            inputs=inputs,
        )
    try:
        sim.run()
    except BaseException:
        sim.recorder.close()  # the events up to the failure stay readable
        raise
    meta = {
        "dlsched_version": __version__,
        "policy": getattr(chosen, "name", type(chosen).__name__),
        "policy_repr": repr(chosen),
        "policy_params": {k: repr(v) for k, v in sorted(policy_params.items())},
        "cluster": hardware.name,
        "cluster_source": hardware.source,
        "cluster_gpus": hardware.num_gpus,
        "gpu_cost_per_hour": {
            t.name: t.cost_per_hour
            for t in hardware.gpu_types.values()
            if t.cost_per_hour is not None
        },
        "throughput": getattr(truth, "name", type(truth).__name__),
        "estimator": repr(estimate),
        "seed": seed,
        "overheads": repr(costs),
        "workload": work.provenance,
        "rows_skipped_at_load": len(work.provenance.get("skipped", [])),
        "rows_excluded_at_load": sum((work.provenance.get("excluded") or {}).values()),
        "unschedulable": [
            {"job_id": _plain(specs[i].job_id), "row": specs[i].source_row, "reason": reason}
            for i, reason in sorted(unschedulable.items())
        ],
        "scheduling_calls": sim.scheduling_calls,
        "scheduler_wall_s": sim.scheduler_wall_s,
    }
    if sim.availability is not None:
        if hardware.rented is not None:
            meta["rented"] = rented_meta(sim, renter)
        else:  # a power manager's node power states (`dlsched.energy.power_state_figures`)
            meta["power_states"] = power_meta(sim, renter)
    n_jobs = len(specs)
    del specs  # `build_result` releases the run's job objects: hold none of them here
    if events is not None:  # before the result: its CPU/memory figures read the file back
        meta["events_path"] = os.fspath(events)
    result = build_result(sim, meta, unschedulable, release=True)
    result.meta["sim_wall_s"] = time.perf_counter() - wall
    if events is not None:
        result.meta["events_written"] = len(sim.recorder)
    stuck = n_jobs - len(unschedulable) - len(sim.declined) - sim.finished
    if sim.halted is not None:
        result.meta["halted"] = sim.halted
    if not stuck and not sim.finished:  # every job unschedulable (a lenient workload)
        warnings.warn(
            f"none of the {n_jobs} jobs could run: all are unschedulable (their reasons are "
            "in result.meta['unschedulable']); the summary's JCT, queueing, makespan and "
            "utilization figures are NaN",
            RuntimeWarning,
            stacklevel=3,
        )
    if stuck:
        why = (
            f"the run ended early ({sim.halted['message']})"
            if sim.halted is not None
            else "the policy stopped starting them while nothing else could happen"
        )
        warnings.warn(
            f"{stuck} of {n_jobs} jobs never finished: {why} (their status is "
            "'unfinished' in result.jobs)",
            RuntimeWarning,
            stacklevel=3,  # the caller of `simulate`
        )
    return result


def _needs_goodput(work: Workload, throughput: str | ThroughputModel) -> bool:
    """Whether the run takes the goodput defaults: a Pollux/Sia workload (work implied by
    its models) with the throughput left at its default or named ``goodput[-pollux]``, or
    any workload with a `GoodputModel` given."""
    # Other runs must not pay for importing the goodput model (SciPy's interpolation): an
    # object can only be a GoodputModel once its module is loaded.
    if not isinstance(throughput, str):
        module = sys.modules.get("dlsched.perf.goodput")
        return module is not None and isinstance(throughput, module.GoodputModel)
    name = throughput.strip().lower()
    if name in ("goodput", "goodput-pollux"):
        return True
    # "duration" cannot run a workload without durations: the goodput model is the only
    # meaning such a run can have
    if name != "duration" or work.provenance.get("format") != "sia-pollux":
        return False
    from dlsched.perf.goodput import is_goodput_workload

    return is_goodput_workload(work)


def _goodput_defaults(
    work: Workload,
    hardware: Cluster,
    chosen: Any,
    throughput: str | ThroughputModel,
    estimator: OracleEstimator,
) -> tuple[Workload, ThroughputModel, OracleEstimator]:
    """The goodput truth for a run (batch adaptive when the policy declares
    ``adaptive_batch = True``), the workload with its work in progress units, and the
    goodput-aware counterpart of the estimator (`goodput_estimator_for`)."""
    from dlsched.errors import ConfigError
    from dlsched.perf.goodput import (
        GoodputModel,
        default_flavor,
        goodput_estimator_for,
        goodput_model,
        is_goodput_workload,
        profiles_near,
    )

    adaptive = bool(getattr(chosen, "adaptive_batch", False))
    if isinstance(throughput, GoodputModel):
        truth = throughput
    else:
        name = str(throughput).strip().lower()
        flavor = (
            "pollux"
            if name == "goodput-pollux"
            else default_flavor(work, sorted(hardware.gpu_types))
        )
        folder = profiles_near(work)
        truth = goodput_model(None if folder is None else str(folder), flavor, adaptive)
    try:
        truth.check_types([hardware.gpu_types[t].name for t in sorted(hardware.gpu_types)])
    except ConfigError as exc:
        raise ConfigError(f"cluster {hardware.source or hardware.name}: {exc}") from None
    if is_goodput_workload(work):
        work = truth.workload(work)
    return work, truth, goodput_estimator_for(estimator)


def _check_vcs(work: Workload, hardware: Cluster) -> None:
    """Every job's `vc` names a VC of the cluster, when the cluster declares VCs: a typo or
    a case mismatch would otherwise run the job on the shared pool, silently. A job
    without a VC (None or empty) runs on the shared pool; on a cluster without VCs the
    column is a label."""
    if not hardware.vcs or "vc" not in work.jobs.columns:
        return
    names = [vc.name for vc in hardware.vcs]
    column = work.jobs["vc"]
    unknown = np.flatnonzero((column.notna() & ~column.isin(names)).to_numpy())
    if len(unknown):  # "" is no VC, as None is
        unknown = unknown[column.iloc[unknown].astype(str).str.strip().to_numpy() != ""]
    if not len(unknown):
        return
    i = int(unknown[0])
    vc = column.iloc[i]
    same_but_case = [name for name in names if name.lower() == str(vc).lower()]
    hint = f" (did you mean {same_but_case[0]!r}?)" if same_but_case else did_you_mean(vc, names)
    shown = ", ".join(repr(name) for name in names[:10]) + (", ..." if len(names) > 10 else "")
    row = int(work.jobs["source_row"].iloc[i]) if "source_row" in work.jobs.columns else None
    more = f" ({len(unknown) - 1} more jobs name unknown VCs)" if len(unknown) > 1 else ""
    where = hardware.source if hardware.source not in ("", "<dict>") else hardware.name
    raise TraceError(
        f"job {_plain(work.jobs['job_id'].iloc[i])!r} names VC {vc!r}, which cluster "
        f"{where!r} does not declare{hint}; its VCs: {shown}"
        f"{more}. Fix the job's vc, leave it empty for the shared pool, or add the VC to "
        "the cluster",
        path=str(work.provenance.get("source", "<Workload>")),
        row=row,
        field="vc",
    )


def _checked_seed(seed: object) -> int:
    """The seed as an int: a whole number >= 0 (a numpy integer too), never a bool, a float
    or a text (``SeedSequence`` would refuse some of them with a raw traceback, and "3" and
    3 must not be two seeds)."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        if seed >= 0:
            return int(seed)
    raise ConfigError(f"seed must be a whole number >= 0 (an int), got {seed!r}")


def _as_cluster(cluster: Cluster | str | os.PathLike[str] | dict[str, Any]) -> Cluster:
    """A cluster as given, from its parsed YAML form (`Cluster.from_dict`), or loaded from a
    file or a bundled name (`load_cluster`)."""
    if isinstance(cluster, Cluster):
        return cluster
    if isinstance(cluster, dict):
        return Cluster.from_dict(cluster)
    if isinstance(cluster, (str, os.PathLike)):
        return load_cluster(os.fspath(cluster))
    raise TypeError(
        "cluster must be a Cluster, a cluster file, a bundled cluster's name or a dict in "
        f"the cluster file's form, got {type(cluster).__name__}"
    )


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value


def _as_workload(workload: Workload | str | os.PathLike[str] | pd.DataFrame) -> Workload:
    if isinstance(workload, Workload):
        return workload if workload.is_checked() else _revalidated(workload)
    if isinstance(workload, pd.DataFrame):
        if not len(workload):
            raise TraceError("the table holds no jobs: a run needs one", path="<DataFrame>")
        return validate_jobs(workload, "<DataFrame>", lenient=False, fmt="canonical")
    if isinstance(workload, (str, Path, os.PathLike)):
        return load_trace(workload)
    raise TypeError(
        f"workload must be a Workload, a trace path or a DataFrame, got {type(workload).__name__}"
    )


def _revalidated(work: Workload) -> Workload:
    """`work` with its job table validated again (`validate_jobs`, as at loading): the table
    was edited since it was checked, or the workload was built by hand or by a transform.

    A table that validation leaves as it is marks `work` checked, so the next run with it
    pays only the fingerprint; one that validation changes (rows out of order, say) runs as
    the validated copy, with `work`'s provenance."""
    source = str(work.provenance.get("source", "<Workload>"))
    if not len(work.jobs):
        raise TraceError(
            f"the workload holds no jobs ({_transforms(work)}): a run needs at least one job",
            path=source,
        )
    try:
        checked = validate_jobs(
            work.jobs,
            source,
            lenient=False,
            fmt=str(work.provenance.get("format", "canonical")),
        )
    except TraceError as exc:
        job = _job_at_row(work.jobs, exc.row)
        raise TraceError(
            f"{job}{exc.reason} (the workload's job table was changed after it was loaded "
            "and validated: fix the edit, or load the trace again)",
            path=exc.path,
            row=exc.row,
            field=exc.field,
        ) from None
    if checked.fingerprint() == work.fingerprint():
        work.mark_checked()
        return work
    return Workload(checked.jobs, work.provenance)


def _transforms(work: Workload) -> str:
    """What made the workload, for a message: its transforms or its source."""
    names = [str(t.get("name", "?")) for t in work.provenance.get("transforms") or []]
    if names:
        return "after the transforms " + ", ".join(names)
    return f"from {work.provenance.get('source', 'a table built by hand')}"


def _job_at_row(jobs: pd.DataFrame, row: int | None) -> str:
    """``"job <id>: "`` for the job at file row `row`, or nothing when none is (only) there."""
    if row is None or "source_row" not in jobs.columns or "job_id" not in jobs.columns:
        return ""
    at = np.flatnonzero(jobs["source_row"].to_numpy() == row)
    if len(at) != 1:
        return ""
    return f"job {_plain(jobs['job_id'].iloc[at[0]])!r}: "


def _prepare_events_file(
    events: str | os.PathLike[str], inputs: Sequence[str | os.PathLike[str] | None] = ()
) -> None:
    """Make `events`' folder and check it can be written, before the run rather than at its
    first row group (a long run must not fail after the work is done). A symbolic link, or
    one of the run's `inputs` (its trace, its cluster file), is refused (`OutputError`)."""
    from dlsched.atomic import check_target

    target = Path(events)
    if target.is_dir() and not target.is_symlink():
        raise ConfigError(
            f"events={os.fspath(events)!r} is a folder: give the parquet file to write, "
            f"e.g. {os.fspath(target / 'events.parquet')!r}"
        )
    check_target(target, inputs, "events")
    target.parent.mkdir(parents=True, exist_ok=True)
    if not os.access(target.parent, os.W_OK):
        raise ConfigError(
            f"events={os.fspath(events)!r}: cannot write into {os.fspath(target.parent)!r}"
        )


def run_inputs(work: Workload, hardware: Cluster) -> list[str]:
    """The files a run reads (its trace, its cluster file), which none of its outputs may
    overwrite; sources that are not files (``<DataFrame>``, ``<dict>``) are left out."""
    from dlsched.atomic import input_files

    return input_files(work.provenance.get("source"), hardware.source)
