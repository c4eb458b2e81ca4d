"""Running an experiment's grid: in-process, on a local process pool, or on Dask.

``run_experiment`` writes the grid into the results store, skips runs that already finished,
and hands the others to an executor. Every executor calls the same ``execute_run``, which
simulates one resolved config and stores the result atomically, or records the error and its
traceback; either way the rest of the grid goes on.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tqdm import tqdm

from dlsched.api import __version__, simulate
from dlsched.cluster import Cluster
from dlsched.errors import DlschedError
from dlsched.experiments.config import (
    Experiment,
    Run,
    file_sha256,
    load_experiment,
    policy_factory,
)
from dlsched.experiments.store import ResultsStore
from dlsched.experiments.transforms import apply_transforms, scale_arrivals
from dlsched.metrics import SimulationResult
from dlsched.perf import make_estimator
from dlsched.perf.estimator import NoisyEstimator, OracleEstimator
from dlsched.traces import Workload, load_trace

EXECUTORS = ("local", "process", "dask")
"""``local``: one after another in this process; ``process``: a local process pool (the
default); ``dask``: a Dask distributed cluster (``--address``, or a local one)."""

POOL_RESTARTS = 3
"""How many times a broken process pool (a worker killed, e.g. out of memory) is replaced
before the runs still waiting are recorded as failed."""


class MissingExtraError(DlschedError):
    """An optional dependency is not installed."""


class DaskUnreachableError(DlschedError):
    """The Dask scheduler given by ``address`` does not answer."""


@dataclass(frozen=True)
class RunOutcome:
    """What happened to one run: ``finished``, ``skipped`` (already stored) or ``failed``."""

    key: str
    status: str
    error: str | None = None
    wall_s: float = 0.0


@dataclass
class ExperimentOutcome:
    """The result of `run_experiment`: which runs finished now, were skipped, or failed."""

    experiment: Experiment
    store: ResultsStore
    finished: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    pool_restarts: int = 0
    """How often a local process pool broke (a worker was killed) and was replaced."""

    @property
    def ok(self) -> bool:
        """Whether every run of the grid is now stored."""
        return not self.failed

    def __repr__(self) -> str:
        return (
            f"ExperimentOutcome({self.experiment.name!r}: {len(self.experiment.runs)} runs, "
            f"{len(self.finished)} finished, {len(self.skipped)} skipped, "
            f"{len(self.failed)} failed → {str(self.store.root)!r})"
        )


# ---- one run ----------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _load(path: str, sha256: str, fmt: str, lenient: bool) -> Workload:
    if file_sha256(path) != sha256:
        raise DlschedError(
            f"{path}: the trace changed after the experiment was expanded "
            f"(its SHA-256 is no longer {sha256[:12]}…); run the experiment again"
        )
    return load_trace(path, format=fmt, lenient=lenient)


def build_workload(config: Mapping[str, Any]) -> Workload:
    """The workload of a resolved run config: the pinned trace, then its transforms."""
    spec = config["workload"]
    workload = _load(
        spec["trace"]["path"], spec["trace"]["sha256"], spec["format"], spec["lenient"]
    )
    workload = apply_transforms(workload, spec["transforms"])
    if spec["arrival_rate_scale"] != 1.0:
        workload = scale_arrivals(workload, spec["arrival_rate_scale"])
    return workload


def build_estimator(spec: Mapping[str, Any]) -> OracleEstimator:
    """The estimator of a resolved run config."""
    if spec["name"] == "noisy":
        return NoisyEstimator(spec["sigma"], spec["sigma_throughput"])
    return make_estimator(spec["name"])


def simulate_config(
    config: Mapping[str, Any], on_progress: Callable[[float], None] | None = None
) -> SimulationResult:
    """Run one resolved config (as stored in ``runs/<key>/config.json``) and return its result."""
    workload = build_workload(config)
    cluster = Cluster.from_dict(config["cluster"], f"cluster {config['cluster']['name']!r}")
    name, params = config["policy"]["name"], dict(config["policy"]["params"])
    policy: Any = name
    if ":" in name:  # an import path: instantiate here, since the registry does not know it
        policy, params = policy_factory(name)(**params), {}
    return simulate(
        workload,
        cluster,
        policy=policy,
        throughput=config["throughput"],
        estimator=build_estimator(config["estimator"]),
        seed=config["seed"],
        restart_overhead_s=config["restart_overhead_s"],
        on_progress=on_progress,
        **params,
    )


def execute_run(
    key: str,
    config: Mapping[str, Any],
    store_root: str,
    on_progress: Callable[[float], None] | None = None,
) -> RunOutcome:
    """Simulate one run and store it; on an error, record the traceback instead.

    Runs in a worker. Only ``Exception`` is recorded: Ctrl-C and worker shutdown pass through
    and leave nothing that looks finished.
    """
    store = ResultsStore(store_root)
    if store.is_finished(key):
        return RunOutcome(key, "skipped")
    started = time.perf_counter()
    try:
        result = simulate_config(config, on_progress)
        store.write_run(key, config, result)
    except Exception as exc:
        store.record_failure(key, config, _one_line(exc), traceback.format_exc())
        return RunOutcome(key, "failed", _one_line(exc), time.perf_counter() - started)
    return RunOutcome(key, "finished", None, time.perf_counter() - started)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


# ---- the grid ---------------------------------------------------------------------------
def manifest(experiment: Experiment) -> dict[str, Any]:
    """The JSON record of an experiment's grid that reports read."""
    return {
        "name": experiment.name,
        "description": experiment.description,
        "source": experiment.source,
        "seed": experiment.seed,
        "replicates": list(experiment.replicates),
        "policies": [c.label for c in experiment.policies],
        "axes": [[name, list(values)] for name, values in experiment.axes],
        "points": [
            {"key": p.key, "policy": p.policy, "replicate": p.replicate, "axes": dict(p.axes)}
            for p in experiment.points
        ],
        "runs": len(experiment.runs),
        "dlsched_version": __version__,
    }


def run_experiment(
    experiment: Experiment | str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    workers: int | None = None,
    executor: str = "process",
    address: str | None = None,
    progress: bool | None = None,
) -> ExperimentOutcome:
    """Run every run of an experiment's grid that is not stored yet.

    - `out`: the experiment's results directory (default ``results/<name>``).
    - `workers`: parallel runs (default: CPU count). One pending run, or ``workers=1``, runs
      in this process.
    - `executor`: ``"process"`` (local process pool), ``"local"`` (in this process, one after
      another) or ``"dask"`` (`address` of a Dask scheduler, or a local Dask cluster of
      `workers` processes; needs ``pip install 'dlsched[dask]'``; workers must see the same
      paths as this process — the traces and `out` — as on a shared file system).
    - `progress`: show a progress bar (default: only when stderr is a terminal).

    Ctrl-C stops at once; runs finished so far stay stored and the next call resumes.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    exp = experiment if isinstance(experiment, Experiment) else load_experiment(experiment)
    store = ResultsStore(out if out is not None else Path("results") / exp.name)
    started = time.perf_counter()
    outcome = ExperimentOutcome(exp, store)
    with store.lock():
        store.clean_partial()
        store.write_manifest(manifest(exp), exp.text)
        pending = [run for key, run in exp.runs.items() if not store.is_finished(key)]
        outcome.skipped = [key for key in exp.runs if store.is_finished(key)]
        bar = tqdm(
            total=len(exp.runs),
            initial=len(outcome.skipped),
            unit="run",
            desc=exp.name,
            disable=None if progress is None else not progress,
            file=sys.stderr,
            dynamic_ncols=True,
        )

        def record(result: RunOutcome) -> None:
            if result.status == "failed":
                outcome.failed[result.key] = result.error or "failed"
                bar.set_postfix(failed=len(outcome.failed), refresh=False)
            else:  # "skipped" here: stored during this call, by a worker of a broken pool
                outcome.finished.append(result.key)
            bar.update(1)

        n_workers = min(workers or os.cpu_count() or 1, max(1, len(pending)))
        try:
            if executor == "dask":
                _run_on_dask(pending, store, n_workers, address, record)
            elif executor == "local" or n_workers == 1:
                single = len(pending) == 1 and not bar.disable
                _run_in_process(pending, store, record, single)
            else:
                outcome.pool_restarts = _run_on_pool(pending, store, n_workers, record)
        finally:
            bar.close()
    outcome.wall_s = time.perf_counter() - started
    return outcome


def _run_in_process(
    pending: Iterable[Run], store: ResultsStore, record: Callable[[RunOutcome], None], single: bool
) -> None:
    for run in pending:
        if single:  # one long run: show its progress over simulated time
            with tqdm(
                unit="sim s",
                unit_scale=True,
                desc="  simulated time",
                leave=False,
                file=sys.stderr,
                dynamic_ncols=True,
            ) as clock:
                seen = [0.0]

                def tick(now: float, clock: tqdm = clock, seen: list[float] = seen) -> None:
                    clock.update(now - seen[0])
                    seen[0] = now

                record(execute_run(run.key, run.config, str(store.root), tick))
        else:
            record(execute_run(run.key, run.config, str(store.root)))


def _pool_context() -> Any:
    """Forkserver where there is one (fork is unsafe with threads), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["dlsched.experiments.runner"])
        return context
    return multiprocessing.get_context("spawn")


def _run_on_pool(
    pending: list[Run], store: ResultsStore, workers: int, record: Callable[[RunOutcome], None]
) -> int:
    """Run on a local process pool, replacing it when a worker dies; return how often."""
    waiting = {run.key: run for run in pending}
    breaks = 0
    while waiting:
        pool = ProcessPoolExecutor(
            max_workers=min(workers, len(waiting)), mp_context=_pool_context()
        )
        futures = {}
        try:
            for run in waiting.values():
                futures[pool.submit(execute_run, run.key, run.config, str(store.root))] = run
        except BrokenProcessPool:
            pass  # a worker died already; what was submitted still reports below
        try:
            for future in as_completed(futures):
                run = futures[future]
                try:
                    result = future.result()
                except BrokenProcessPool:
                    continue  # a worker died: this run goes to the next pool
                except Exception as exc:  # e.g. a config that cannot be sent to a worker
                    result = _driver_failure(store, run, exc)
                waiting.pop(run.key, None)
                record(result)
        except BaseException:
            _stop_pool(pool)
            raise
        pool.shutdown(wait=True)
        if waiting:  # the pool broke; its workers are gone, so their partial runs can go
            store.clean_partial()
            breaks += 1
            if breaks > POOL_RESTARTS:
                for run in list(waiting.values()):
                    message = (
                        f"a worker process died {breaks} times while this run waited or "
                        "ran (killed, or out of memory?); run it alone with --workers 1"
                    )
                    store.record_failure(run.key, run.config, message, "")
                    record(RunOutcome(run.key, "failed", message))
                return breaks
    return breaks


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (their partial runs are temporary
    directories, removed by the next run)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # before shutdown
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()


def _driver_failure(store: ResultsStore, run: Run, exc: BaseException) -> RunOutcome:
    text = "".join(traceback.format_exception(exc))
    store.record_failure(run.key, run.config, _one_line(exc), text)
    return RunOutcome(run.key, "failed", _one_line(exc))


def _run_on_dask(
    pending: list[Run],
    store: ResultsStore,
    workers: int,
    address: str | None,
    record: Callable[[RunOutcome], None],
) -> None:
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError:
        raise MissingExtraError(
            "the dask executor needs Dask distributed: pip install 'dlsched[dask]'"
        ) from None
    if not pending:
        return
    cluster = None
    if address is None:
        # dashboard on a free port: never "8787 in use" next to another cluster
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
    try:
        client = Client(address or cluster, timeout="10s")
    except OSError as exc:  # includes timeouts
        if cluster is not None:
            cluster.close()
        raise DaskUnreachableError(
            f"cannot reach the Dask scheduler at {address}: {exc}; "
            "start one (`dask scheduler`, then `dask worker ADDRESS` on "
            "each machine) or leave out --address for a local "
            "cluster"
        ) from None
    root = str(store.root.resolve())
    try:
        futures = {
            client.submit(execute_run, run.key, run.config, root, pure=False): run
            for run in pending
        }
        try:
            for future in dask_completed(list(futures)):
                run = futures[future]
                try:
                    result = future.result()
                except Exception as exc:  # e.g. KilledWorker: the run killed its workers
                    result = _driver_failure(store, run, exc)
                record(result)
        except BaseException:
            client.cancel(list(futures))
            raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
