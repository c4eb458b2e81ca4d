"""Results: the per-job table, the event log, the busy-GPU timeline and the summary."""

from __future__ import annotations

import json
import math
import shutil
import warnings
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, is_not
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dlsched.engine.admission import ACCEPT, BEST_EFFORT, DECISIONS, DECLINED
from dlsched.engine.recorder import text_column
from dlsched.jobs import FINISHED

_JSON_FILES = ("meta.json",)

RESULT_FILES = ("jobs.parquet", "events.parquet", "timeline.parquet", "summary.json", "meta.json")
"""The files `SimulationResult.save` writes into its folder (``meta.json`` last)."""


@dataclass
class SimulationResult:
    """What a simulation produced.

    - `jobs`: one row per job (`job_id, submit_time, start_time, finish_time, jct,
      queueing_delay, num_gpus, gpu_seconds, preemptions, migrations, ...`), with
      `status` = finished / unfinished / unschedulable / declined and deadline columns when
      present; where the policy decides admission (`dlsched.engine.admission`), also
      `admission` (accept / best_effort / decline) and `admission_reason`.
    - `events`: the typed event log (submit, start, restart, preempt, migrate, finish).
    - `timeline`: busy GPUs per type after every change (`time` + one column per type).
    - `meta`: the run's configuration and counters.
    """

    jobs: pd.DataFrame
    events: pd.DataFrame
    timeline: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)

    def summary(
        self,
        job_window: tuple[int, int] | None = None,
        *,
        reference: SimulationResult | None = None,
    ) -> dict[str, Any]:
        """Headline metrics. `job_window=(a, b)` restricts job metrics to jobs a..b-1 in
        submit order (to leave out warm-up and drain, as Gavel and Blox do).

        With `reference` (a run of the same jobs under a baseline, e.g. Gavel's
        ``gavel_isolated`` equal share), the summary also has ``mean_ftf_rho``: the mean over
        the window's jobs of the finish-time fairness ρ = JCT here / JCT in `reference`
        (`finish_time_fairness`); the other keys do not change.

        Where the cluster declares CPU cores or host memory, the summary also has each
        resource's time-mean and peak utilisation (``cpu_utilization``,
        ``peak_cpu_utilization``, ``memory_utilization``, ``peak_memory_utilization``,
        ``gpu_busy_utilization``, ``peak_gpu_utilization``; `dlsched.utilisation`): these are
        over the whole run's makespan, whatever `job_window` says.

        Jobs without GPUs (``num_gpus`` 0, CPU/memory only) count like any job in the JCT,
        queueing, makespan and job counts; they hold 0 GPU-seconds, so they add nothing to
        the GPU-seconds of ``utilization``, but they can lengthen the makespan over which
        ``utilization`` and ``gpu_busy_utilization`` are averaged (select
        ``jobs[jobs["num_gpus"] > 0]`` for the GPU jobs alone).

        Admission (`dlsched.engine.admission`; the same keys for every policy, one without
        an `admit` hook accepting every job): ``jobs_accepted``, ``jobs_best_effort``,
        ``jobs_declined``, ``avg_jct_accepted``, ``avg_jct_best_effort`` and, with
        deadlines, ``deadline_jobs`` and ``deadline_satisfactory_ratio``
        (`admission_summary`). A declined job counts in ``jobs_total``, in no JCT, and as a
        missed deadline.

        Averages, percentiles, ``makespan`` and ``utilization`` are over the finished jobs:
        where none finished (``jobs_completed`` 0: every job unschedulable or stopped by
        ``max_time_s``, or a `job_window` without finished jobs) they are NaN, and
        `simulate` warned of it. The keys are the same in every summary. A workload without
        jobs never gets here: `simulate` refuses it (`TraceError`)."""
        jobs = self.jobs if job_window is None else self.jobs.iloc[job_window[0] : job_window[1]]
        done = jobs[jobs["status"] == FINISHED]
        jct = done["jct"].to_numpy(dtype=float)
        out: dict[str, Any] = {
            "avg_jct": _mean(jct),
            "p50_jct": _pct(jct, 50),
            "p95_jct": _pct(jct, 95),
            "p99_jct": _pct(jct, 99),
            "makespan": _makespan(done),
            "avg_queueing_delay": _mean(done["queueing_delay"].to_numpy(dtype=float)),
            "utilization": self._utilization(done),
            "jobs_completed": int(len(done)),
            "jobs_total": int(len(jobs)),
            "jobs_unfinished": int((jobs["status"] == "unfinished").sum()),
            "jobs_unschedulable": int((jobs["status"] == "unschedulable").sum()),
            "jobs_skipped_at_load": int(self.meta.get("rows_skipped_at_load", 0)),
            "jobs_excluded_at_load": int(self.meta.get("rows_excluded_at_load", 0)),
            "preemptions": int(jobs["preemptions"].sum()),
            "migrations": int(jobs["migrations"].sum()),
            "rescales": int(jobs["rescales"].sum()) if "rescales" in jobs.columns else 0,
            "scheduling_calls": int(self.meta.get("scheduling_calls", 0)),
            # (a log streamed to parquet, `simulate(events=...)`, is counted as written)
            "events": int(self.meta.get("events_written", len(self.events))),
            "scheduler_wall_s": float(self.meta.get("scheduler_wall_s", 0.0)),
            "sim_wall_s": float(self.meta.get("sim_wall_s", 0.0)),
        }
        prices = self.meta.get("gpu_cost_per_hour") or {}
        if prices:
            out["cost"] = float(
                sum(
                    jobs[f"gpu_seconds_{name}"].sum() * price / 3600
                    for name, price in prices.items()
                )
            )
        # On a cluster that rents instances: what they cost (`dlsched.provision.billing`)
        if self.meta.get("rented"):
            from dlsched.provision.billing import rented_summary

            out.update(rented_summary(self.meta, out["jobs_completed"]))
        if "deadline" in jobs.columns and jobs["deadline"].notna().any():
            with_deadline = jobs[jobs["deadline"].notna()]
            met = with_deadline["deadline_met"].fillna(False).astype(bool)
            tardiness = with_deadline["tardiness"].to_numpy(dtype=float)
            out["deadlines_missed"] = int((~met).sum())
            out["deadline_satisfaction"] = float(met.mean())
            out["total_tardiness"] = float(np.nansum(tardiness))
            out["avg_tardiness"] = _mean(tardiness[~np.isnan(tardiness)])
        # Where the cluster declares CPU cores or host memory: each resource's time-mean and
        # peak utilisation over the whole run (`dlsched.utilisation`; not restricted to
        # `job_window`).
        out.update(admission_summary(jobs))
        out.update(self.meta.get("resource_utilization") or {})
        # With a predicting estimator (`dlsched.perf.predicting`): its error over the run
        # (``prediction_*``; not restricted to `job_window`).
        out.update(self.meta.get("prediction") or {})
        # Where the cluster file has an `energy:` section (`dlsched.energy`): energy, mean
        # power, energy per job, cost and CO2 over the whole run (not `job_window`).
        out.update(self.meta.get("energy") or {})
        if reference is not None:
            out["mean_ftf_rho"] = _mean(
                finish_time_fairness(self, reference, job_window).to_numpy(dtype=float)
            )
        return out

    def _utilization(self, done: pd.DataFrame) -> float:
        span = _makespan(done)
        gpus = int(self.meta.get("cluster_gpus", 0))
        if not span or not gpus or math.isnan(span):
            return math.nan
        return float(self.jobs["gpu_seconds"].sum() / (gpus * span))

    def save(self, directory: str | Path) -> Path:
        """Write parquet tables and JSON metadata into `directory` (created if needed).

        All or nothing (`dlsched.atomic.staged_files`): the files are written into a
        temporary folder inside `directory` and moved onto their names with ``meta.json``
        last, so a full disk or a crash leaves the folder's previous result whole, or (in the
        instant of the moves) a folder without ``meta.json``, which `load` refuses. A whole
        temporary folder renamed onto `directory` would need `directory` to be new: it may
        be the user's existing folder, with other files in it. A name among the result's
        files that is a symbolic link, or is one of the run's inputs (its trace, its
        cluster file), is refused (`OutputError`) before anything is written.
        """
        from dlsched.atomic import staged_files

        out = Path(directory)
        streamed = self.meta.get("events_path")
        # the run streamed its event log to a file (`simulate(events=...)`): that file is the
        # log, and an empty table written here would lose it on `load`
        log = Path(streamed) if streamed is not None and self.events.empty else None
        with staged_files(out, RESULT_FILES, "meta.json", self._inputs()) as stage:
            self.jobs.to_parquet(stage / "jobs.parquet", index=False)
            if log is None:
                self.events.to_parquet(stage / "events.parquet", index=False)
            elif log.resolve() != (out / "events.parquet").resolve():  # (else in its place)
                shutil.copyfile(log, stage / "events.parquet")
            self.timeline.to_parquet(stage / "timeline.parquet", index=False)
            (stage / "summary.json").write_text(json.dumps(self.summary(), indent=2) + "\n")
            (stage / "meta.json").write_text(
                json.dumps(self.meta, indent=2, sort_keys=True, default=str) + "\n"
            )
        return out

    def _inputs(self) -> list[str]:
        """The files this result was computed from (its trace and cluster file), which
        nothing that writes the result may overwrite."""
        from dlsched.atomic import input_files

        workload = self.meta.get("workload")
        return input_files(
            workload.get("source") if isinstance(workload, dict) else None,
            self.meta.get("cluster_source"),
        )

    @classmethod
    def load(cls, directory: str | Path) -> SimulationResult:
        """Read back what `save` wrote.

        A folder that is not a whole saved result — a file missing (``meta.json`` first: it
        is written last), a table that is not parquet, metadata that is not a JSON mapping —
        raises one `ResultsError` naming the folder and the file.
        """
        from dlsched.errors import ResultsError

        src = Path(directory)
        if not src.is_dir():
            raise ResultsError(f"{src}: no such folder; give a folder that `save` wrote")

        def read(name: str, reader: Any) -> Any:
            path = src / name
            if not path.is_file():
                why = (
                    "its save did not finish, or it is not a saved result"
                    if name == "meta.json"
                    else "the saved result is incomplete"
                )
                raise ResultsError(f"{src}: {name} is missing ({why}); save the result again")
            try:
                return reader(path)
            except (OSError, ValueError) as exc:  # ArrowInvalid and JSONDecodeError included
                detail = _one_line(exc)
                raise ResultsError(
                    f"{src}: {name} is unreadable ({detail}); save the result again"
                ) from None

        meta = read("meta.json", lambda p: json.loads(p.read_text()))
        if not isinstance(meta, dict):
            raise ResultsError(
                f"{src}: meta.json holds a {type(meta).__name__}, not a mapping; "
                "save the result again"
            )
        return cls(
            jobs=read("jobs.parquet", pd.read_parquet),
            events=read("events.parquet", pd.read_parquet),
            timeline=read("timeline.parquet", pd.read_parquet),
            meta=meta,
        )

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"SimulationResult({self.meta.get('policy')!r} on {self.meta.get('cluster')!r}: "
            f"{s['jobs_completed']}/{s['jobs_total']} jobs, avg JCT {s['avg_jct']:.1f} s)"
        )


def finish_time_fairness(
    result: SimulationResult,
    reference: SimulationResult,
    job_window: tuple[int, int] | None = None,
) -> pd.Series:
    """Finish-time fairness ρ per job (Themis; Gavel, OSDI 2020, §7.2): the job's JCT in
    `result` over its JCT in `reference`, a run of the same jobs under the baseline a job is
    entitled to. Gavel's figures take `reference` from its ``isolated`` policy (here
    ``gavel_isolated``: each job 1/n of every GPU type, n the active jobs) on the same trace
    and average ρ over the measured jobs (its notebooks pair each job's JCT with its isolated
    JCT and print the mean: ``mean_ftf_rho`` of `SimulationResult.summary`). ρ < 1: the job
    finished sooner than under its equal share.

    Jobs are matched by ``job_id``; `job_window=(a, b)` keeps jobs a..b-1 of `result` in
    submit order. Only jobs finished in both runs have a ρ (indexed by job id)."""
    jobs = result.jobs if job_window is None else result.jobs.iloc[job_window[0] : job_window[1]]
    mine = jobs[jobs["status"] == FINISHED].set_index("job_id")["jct"]
    ref = reference.jobs[reference.jobs["status"] == FINISHED].set_index("job_id")["jct"]
    both = mine.index.intersection(ref.index, sort=False)
    return (mine.loc[both] / ref.loc[both]).rename("ftf_rho")


def admission_summary(jobs: pd.DataFrame) -> dict[str, Any]:
    """The admission keys of `SimulationResult.summary`, the same for every policy: a policy
    without an `admit` hook accepts every job that can run (no ``admission`` column).

    - ``jobs_accepted`` / ``jobs_best_effort`` / ``jobs_declined``: the jobs by decision
      (jobs unschedulable at load are in none of them);
    - ``avg_jct_accepted`` / ``avg_jct_best_effort``: the mean JCT of the finished jobs of
      each class (NaN when none finished);
    - with deadlines, ``deadline_jobs`` (jobs submitted with one) and
      ``deadline_satisfactory_ratio``: ElasticFlow's ratio (ASPLOS '23, §6; its artifact's
      ``log_final_result``: accepted ÷ (accepted + declined), where a job finished after its
      deadline counts as declined), i.e. the deadline jobs that finished by their submitted
      deadline ÷ every deadline job submitted, declined, best-effort and unfinished ones
      counting as missed unless they finished in time. It equals ``deadline_satisfaction``
      (which already counted a job that never finished as missed); it is named as the papers
      name it, beside the counts of the decisions behind it."""
    status = jobs["status"]
    declined = (status == DECLINED).to_numpy(dtype=bool)
    unschedulable = (status == "unschedulable").to_numpy(dtype=bool)
    if "admission" in jobs.columns:
        admission = jobs["admission"]
        best_effort = (admission == BEST_EFFORT).fillna(False).to_numpy(dtype=bool)
        accepted = (admission == ACCEPT).fillna(False).to_numpy(dtype=bool)
    else:
        best_effort = np.zeros(len(jobs), dtype=bool)
        accepted = ~unschedulable & ~declined
    finished = (status == FINISHED).to_numpy(dtype=bool)
    jct = jobs["jct"].to_numpy(dtype=float)
    out: dict[str, Any] = {
        "jobs_accepted": int(accepted.sum()),
        "jobs_best_effort": int(best_effort.sum()),
        "jobs_declined": int(declined.sum()),
        "avg_jct_accepted": _mean(jct[accepted & finished]),
        "avg_jct_best_effort": _mean(jct[best_effort & finished]),
    }
    if "deadline" in jobs.columns and jobs["deadline"].notna().any():
        with_deadline = jobs[jobs["deadline"].notna()]
        met = with_deadline["deadline_met"].fillna(False).astype(bool)
        out["deadline_jobs"] = int(len(with_deadline))
        out["deadline_satisfactory_ratio"] = float(met.mean())
    return out


def _mean(values: np.ndarray) -> float:
    return float(values.mean()) if len(values) else math.nan


def _pct(values: np.ndarray, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else math.nan


def _makespan(done: pd.DataFrame) -> float:
    if done.empty:
        return math.nan
    return float(done["finish_time"].max() - done["submit_time"].min())


def build_result(
    sim: Any, meta: dict[str, Any], unschedulable: dict[int, str], *, release: bool = False
) -> SimulationResult:
    """Assemble a `SimulationResult` from a finished `Simulator` run.

    `release`: once what the per-job table needs of the job specs is in columns, drop the
    run's specs and states (`Simulator.release_jobs`), so that they are freed before the
    result's tables are built rather than held beside them (`simulate` does; the simulator
    is not used after)."""
    specs = sim.specs
    states = sim.states
    cluster = sim.cluster
    n = len(specs)
    nan = math.nan
    # what the table needs of the specs first, so that they can go before the table is built
    # (`map(attrgetter(...))` walks them in C, a generator in Python)
    job_ids: Any = list(map(attrgetter("job_id"), specs))
    models: Any = list(map(attrgetter("model"), specs))
    submit = np.fromiter(map(attrgetter("submit_time"), specs), float, n)
    num_gpus = np.fromiter(map(attrgetter("num_gpus"), specs), np.int64, n)
    total_steps = np.fromiter(map(attrgetter("total_steps"), specs), float, n)
    # optional columns only when a job has a value (most workloads have none)
    deadlines = cpu = memory = None
    if any(map(is_not, map(attrgetter("deadline"), specs), repeat(None))):
        deadlines = np.fromiter(
            (nan if d is None else d for d in map(attrgetter("deadline"), specs)), float, n
        )
    if any(map(attrgetter("cpu_milli"), specs)) or any(map(attrgetter("memory_mib"), specs)):
        cpu = np.fromiter(map(attrgetter("cpu_milli"), specs), np.int64, n)
        memory = np.fromiter(map(attrgetter("memory_mib"), specs), np.int64, n)
    del specs
    if release:
        sim.release_jobs()
    # (the Series infer their dtypes as the table would from the lists)
    job_ids, models = pd.Series(job_ids), pd.Series(models)
    types = sorted(cluster.gpu_types)
    # the jobs' outcomes as columns (`JobStates`: finished jobs have no state object left)
    outcome = states.columns(types)
    del states
    # a policy that replays another simulator's clock reports its times on that clock
    retime = getattr(sim.policy, "reported_times", None)
    start = outcome["start_time"] if retime is None else retime(outcome["start_time"])
    finish = outcome["finish_time"] if retime is None else retime(outcome["finish_time"], ends=True)
    # 0 finished, 1 unfinished, 2 unschedulable, 3 declined (`dlsched.engine.admission`)
    status = (~outcome["finished"]).astype(np.int64)
    if unschedulable:
        status[np.fromiter(unschedulable, np.int64, len(unschedulable))] = 2
    declined = getattr(sim, "declined", None)
    if declined:
        status[np.fromiter(declined, np.int64, len(declined))] = 3
    admissions: dict[int, tuple[str, str]] | None = (
        sim.admissions if getattr(sim, "_admit", None) is not None else None
    )
    jobs = pd.DataFrame(
        {
            "job_id": job_ids,
            "submit_time": submit,
            "start_time": start,
            "finish_time": finish,
            "jct": finish - submit,
            "queueing_delay": start - submit,
            "num_gpus": num_gpus,
            "gpu_seconds": outcome["gpu_seconds"],
            "preemptions": outcome["preemptions"],
            "migrations": outcome["migrations"],
            "restarts": outcome["restarts"],
            "rescales": outcome["rescales"],
            "status": text_column(status, (FINISHED, "unfinished", "unschedulable", DECLINED)),
            "model": models,
            "total_steps": total_steps,
            # the time each job waited without GPUs: its JCT less the wall time it held GPUs
            # (whatever their count or share), both on the engine's clock (a reported
            # clock's JCT, `reported_times`, less the engine's held time could go below 0)
            "pending_s": outcome["finish_time"] - submit - outcome["held_s"],
            # (in the one constructor: a column inserted per GPU type fragments the frame)
            **{
                f"gpu_seconds_{cluster.display_name(t)}": outcome[f"gpu_seconds_{t}"] for t in types
            },
        },
        copy=False,  # the columns are new: no copy (nor a consolidated one) of them
    )
    del job_ids, models, outcome
    if deadlines is not None and not np.isnan(deadlines).all():
        jobs["deadline"] = deadlines
        lateness = np.where(np.isnan(finish), nan, np.maximum(0.0, finish - deadlines))
        jobs["tardiness"] = np.where(np.isnan(deadlines), nan, lateness)
        jobs["deadline_met"] = pd.array(
            [None if np.isnan(d) else bool(f <= d) for d, f in zip(deadlines, finish, strict=True)],
            dtype="boolean",
        )
    if admissions is not None:
        # the policy's decision on each job (none for jobs unschedulable at load)
        codes = np.full(n, -1, dtype=np.int64)
        reasons: list[str | None] = [None] * n
        for index, (decision, reason) in admissions.items():
            codes[index] = DECISIONS.index(decision)
            reasons[index] = reason
        jobs["admission"] = text_column(codes, DECISIONS)
        jobs["admission_reason"] = pd.Series(reasons, dtype=jobs["status"].dtype)
    if cpu is not None and memory is not None:
        # A run with CPU/memory demands carries them, so its tables alone say what each job
        # held (`dlsched.utilisation`), wherever the trace has gone since.
        jobs["cpu_milli"] = cpu
        jobs["memory_mib"] = memory
    asked = jobs["num_gpus"].to_numpy()
    # GPU ids as text ("3,4"): a plain column that round-trips through parquet and CSV.
    events = sim.recorder.frame(asked, jobs["job_id"], release=release)
    timeline = sim.recorder.timeline_frame()
    if retime is not None:
        ticks = timeline["time"].to_numpy(dtype=float)
        on_its_clock = retime(ticks)
        if on_its_clock is not ticks:  # (the hook hands back its argument when it maps none)
            timeline["time"] = on_its_clock
            if len(events):
                # Each event once: a submission stays at the trace's time (arrivals are the
                # same on any clock), ends come before a jump of that clock, the rest after.
                # So the log is put in time order again, ties in the engine's order.
                times = events["time"].to_numpy(dtype=float, copy=True)  # (written below)
                kind = events["event"]
                ends = kind.isin(("finish", "preempt")).to_numpy(dtype=bool)
                begins = ~ends & (kind != "submit").to_numpy(dtype=bool)
                times[ends] = retime(times[ends], ends=True)
                times[begins] = retime(times[begins])
                events["time"] = times
                events = events.sort_values("time", kind="stable", ignore_index=True)
            elif meta.get("events_path") is not None:
                warnings.warn(
                    f"{meta['events_path']}: the streamed event log keeps the engine's clock; "
                    f"the result's other times are on the clock policy {sim.policy.name!r} "
                    "reports (its `reported_times`)",
                    RuntimeWarning,
                    stacklevel=2,
                )
    result = SimulationResult(jobs=jobs, events=events, timeline=timeline, meta=meta)
    if cluster.energy is not None:  # the cluster file has an `energy:` section
        from dlsched.energy import energy_sources, energy_summary

        meta["energy"] = energy_summary(result, cluster)
        meta["energy_sources"] = energy_sources(cluster)
    figures = getattr(sim.estimator, "figures", None)  # a predicting estimator's errors
    if figures is not None:
        meta["prediction"] = figures()
    if cluster.declares_cpus or cluster.declares_memory:
        from dlsched.utilisation import utilisation_summary

        meta["resource_utilization"] = utilisation_summary(result, cluster)
    return result


def _one_line(exc: BaseException) -> str:
    """An exception's message on one line (a reader's error may span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__
