"""Running an experiment's grid: in-process, on a local process pool, or on Dask.

``run_experiment`` writes the grid into the results store, skips runs that are stored and
verify, re-runs (and says so) runs that are damaged or were stored by another results format
or dlsched version, and hands the others to an executor. Every executor calls the same
``execute_run``, which simulates one resolved config and stores the result atomically, or
records the error and its traceback; either way the rest of the grid goes on.

Results go to a local directory or an fsspec URL (see ``store``); each finished run also
writes its rows of the experiment's parquet dataset (``dataset/``), labelled with its grid
cells (`dataset_labels`), and the driver rebuilds what is missing at the end.

On Dask, the grid runs on a cluster started here, on one at ``address``, on the one a
``scheduler_file`` names, or through a ``client`` the caller already has (dask-jobqueue, a
cloud cluster). A run whose worker died (``KilledWorker``) is submitted again up to
``retries`` times, like a broken local pool is replaced; then it is recorded as failed.

Workers never outlive their driver: a pool worker watches the driver (``PR_SET_PDEATHSIG`` on
Linux, and a watchdog thread everywhere) and exits when it ends, however it ended (SIGTERM,
SIGKILL, Ctrl-C); and a worker stores a run only while its driver holds the store's lock.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import multiprocessing
import os
import select
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from tqdm import tqdm

from dlsched import registry
from dlsched.api import simulate
from dlsched.cluster import Cluster
from dlsched.engine.progress import ProgressSink
from dlsched.errors import DlschedError
from dlsched.experiments import EXECUTORS
from dlsched.experiments.config import (
    Experiment,
    Run,
    canonical_json,
    file_sha256,
    import_paths,
    load_experiment,
    user_class,
)
from dlsched.experiments.progress import BAR_FORMAT, GridProgress, folder_writer
from dlsched.experiments.store import (
    LABEL_COLUMNS,
    LeaseLostError,
    ResultsStore,
    RunCheck,
    WriterLease,
    cell_file,
)
from dlsched.experiments.transforms import apply_transforms, scale_arrivals
from dlsched.metrics import SimulationResult
from dlsched.perf import make_estimator
from dlsched.perf.estimator import NoisyEstimator, OracleEstimator
from dlsched.policies import get as get_policy
from dlsched.traces import Workload, load_trace

# Where runs go (see EXECUTORS' docstring): ``local``, one after another in this process;
# ``process``, a local process pool (the default); ``dask``, a Dask distributed cluster
# (``--address``, ``--scheduler-file``, a ``client``, or a local one).

POOL_RESTARTS = 3
"""The default of ``retries``: how many times a broken process pool (a worker killed, e.g.
out of memory) is replaced, or a Dask run whose worker died is submitted again, before the
runs concerned are recorded as failed."""

WATCHDOG_PERIOD_S = 0.2
"""How often a pool worker's watchdog checks, where it must poll, that its driver lives."""

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


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
    rerun: dict[str, RunCheck] = field(default_factory=dict)
    """Runs found stored but damaged, stale or of the old format, and so run again."""

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
    if spec.get("params") is not None:  # a predictor with its parameters
        from dlsched.perf.predicting import PredictingEstimator

        return PredictingEstimator(spec["name"].partition(":")[2] or "helios", **spec["params"])
    return make_estimator(spec["name"])


def simulate_config(
    config: Mapping[str, Any],
    on_progress: Callable[[float], None] | None = None,
    *,
    progress: bool | None | ProgressSink = False,
) -> SimulationResult:
    """Run one resolved config (as stored in ``runs/<key>/config.json``) and return its result.

    `progress` is `simulate`'s bar (jobs finished of the total, ETA, simulated time).

    The config is taken as the caller's own, like `simulate`'s arguments: an import path in
    it (validated experiments hold one only when they opted in) is imported, which runs that
    module's code, and must still name a class of its kind whose source matches the
    config's ``code``."""
    workload = build_workload(config)
    cluster = Cluster.from_dict(config["cluster"], f"cluster {config['cluster']['name']!r}")
    name, params = config["policy"]["name"], dict(config["policy"]["params"])
    # Built here, not by `simulate`: a policy's own parameters (Gavel's `seed`) must not
    # collide with `simulate`'s keywords.
    users = dict((kind, path) for kind, path in import_paths(config))
    code = config.get("code", {})
    policy: Any = (
        _user_class("policy", name, code)(**params)
        if "policy" in users
        else get_policy(name, **params)
    )
    throughput: Any = config["throughput"]
    if "throughput model" in users:
        throughput = _user_class("throughput model", throughput, code)()
    estimator: Any = (
        _user_class("estimator", users["estimator"], code)()
        if "estimator" in users
        else build_estimator(config["estimator"])
    )
    throughput = _dynamic_throughput(config, workload, throughput)
    provisioner = None
    if config.get("provisioner"):  # (`experiments.config._provisioner`)
        from dlsched.provision import get as get_provisioner

        spec = config["provisioner"]
        provisioner = get_provisioner(spec["name"], **spec["params"])
    result = simulate(
        workload,
        cluster,
        policy=policy,
        throughput=throughput,
        estimator=estimator,
        seed=config["seed"],
        restart_overhead_s=config["restart_overhead_s"],
        overheads=config.get("overheads"),
        on_progress=on_progress,
        progress=progress,
        provisioner=provisioner,
    )
    result.meta["policy_params"] = {k: repr(v) for k, v in sorted(params.items())}
    return result


def _dynamic_throughput(config: Mapping[str, Any], workload: Workload, throughput: Any) -> Any:
    """The dynamic truth over `throughput` when the config says the workload has batch-size
    schedules (`dlsched.experiments.config._dynamic_config`); a workload with them under a
    config that does not say so was expanded before dynamic runs existed: its key is not
    this run's, so it is refused rather than run as something else."""
    from dlsched.experiments.dynamic import COLUMN, check_estimator, dynamic_truth, has_schedules

    spec = config.get("batch_schedule")
    if spec is None:
        if has_schedules(workload):
            raise DlschedError(
                f"the run's workload has a {COLUMN} column, but its config has no "
                "'batch_schedule' key (made by an older dlsched, which ignored the column); "
                "expand the experiment again"
            )
        check_estimator(workload, config["estimator"]["name"])
        return throughput
    return dynamic_truth(workload, throughput, spec["unmeasured"])


def _user_class(kind: str, path: str, code: Mapping[str, str]) -> Any:
    """The class of a `kind` given by import path, checked to be the code the run's config
    was made with (`code`: its modules' SHA-256). A config comes from a validated
    experiment, which opted in to import paths, or from the caller's own script."""
    cls = user_class(kind, path, allow_imports=True)
    now = registry.code_digest(path)
    changed = [module for module, digest in now.items() if code.get(module) != digest]
    if changed:
        files = registry.code_files({m: "" for m in changed})
        raise DlschedError(
            f"the code of {kind} {path!r} changed after the experiment was expanded "
            f"({', '.join(files.values())}); run the experiment again"
        )
    return cls


def code_reruns(experiment: Experiment, store: ResultsStore) -> dict[str, RunCheck]:
    """Runs of policies given by import path that the store holds for the same grid cell
    under another key, because their code changed since (new key → why, as a `RunCheck`).

    A run's key covers its policy's source (the config's ``code``), so a changed module
    makes a new run and the old one is never reused; this only finds the old one in the
    grid that the store last ran (``experiment.json``), to say why the cell runs again."""
    try:
        previous = store.read_manifest()
        old_keys = {
            (p["policy"], p["replicate"], canonical_json(p["axes"])): p["key"]
            for p in previous.get("points", [])
        }
    except (OSError, ValueError, TypeError, KeyError):
        return {}  # no grid before this one (or not one we can read): nothing to explain
    found: dict[str, RunCheck] = {}
    for point in experiment.points:
        config = experiment.runs[point.key].config
        if "code" not in config or point.key in found:
            continue
        old = old_keys.get((point.policy, point.replicate, canonical_json(dict(point.axes))))
        if old is None or old == point.key or store.is_finished(point.key):
            continue
        try:
            old_code = store.run_config(old).get("code", {}) if store.is_finished(old) else None
        except (OSError, ValueError, AttributeError):
            old_code = None
        if not isinstance(old_code, dict):
            continue
        changed = sorted(m for m, d in config["code"].items() if old_code.get(m) != d)
        if changed:
            files = registry.code_files({m: "" for m in changed})
            whose = [
                f"{kind} {path!r}"
                for kind, path in import_paths(config)
                if set(registry.code_digest(path)) & set(changed)
            ]
            found[point.key] = RunCheck(
                "stale",
                f"the code of {' and '.join(whose) or 'an import path'} changed since "
                f"({', '.join(files.values())})",
            )
    return found


def execute_run(
    key: str,
    config: Mapping[str, Any],
    store_root: str,
    on_progress: Callable[[float], None] | None = None,
    lease: WriterLease | None = None,
    cells: Sequence[Mapping[str, Any]] = (),
    *,
    progress: bool | None | ProgressSink = False,
    progress_dir: str | None = None,
) -> RunOutcome:
    """Simulate one run and store it; on an error, record the traceback instead.

    Runs in a worker. Only ``Exception`` is recorded: Ctrl-C and worker shutdown pass through
    and leave nothing that looks finished. With a `lease` (the driver's hold on the store),
    nothing is written unless the driver still holds the lock: `LeaseLostError` instead.
    `cells` are the labels of the grid cells the run computes: once it is stored, their
    dataset files are written (`ResultsStore.write_dataset`). With a `progress_dir`, the
    run's progress goes there for the driver's bar (`dlsched.experiments.progress`).
    """
    store = ResultsStore(store_root)
    if store.is_finished(key):
        return RunOutcome(key, "skipped")
    if progress_dir is not None and progress is False:
        progress = folder_writer(progress_dir, key)
    started = time.perf_counter()
    try:
        result = simulate_config(config, on_progress, progress=progress)
        store.write_run(key, config, result, lease=lease)
    except LeaseLostError:
        raise
    except Exception as exc:
        store.record_failure(key, config, _one_line(exc), traceback.format_exc(), lease=lease)
        return RunOutcome(key, "failed", _one_line(exc), time.perf_counter() - started)
    try:
        store.write_dataset(key, cells, result)
    except Exception as exc:  # the run is stored: the driver rebuilds these files at the end
        print(f"{key}: dataset files not written yet ({_one_line(exc)})", file=sys.stderr)
    return RunOutcome(key, "finished", None, time.perf_counter() - started)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


# ---- the grid ---------------------------------------------------------------------------
def manifest(experiment: Experiment) -> dict[str, Any]:
    """The JSON record of an experiment's grid that reports read."""
    from dlsched import __version__

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


def dataset_labels(experiment: Experiment) -> dict[str, list[dict[str, Any]]]:
    """The labels of each run's grid cells, as its dataset rows carry them: run key → one
    ``{key, policy, replicate, seed, load, <axis>...}`` per cell that the run computes.

    ``seed`` is the run's own seed and ``load`` its arrival-rate scale. Each axis column
    holds one type across the grid (numbers, booleans, or text: a value that is not a
    string is written as its JSON), so every file of the dataset has the same schema; an
    axis named like a label column is prefixed ``sweep.``.
    """
    kinds = {name: _axis_kind(values) for name, values in experiment.axes}
    labels: dict[str, list[dict[str, Any]]] = {}
    for point in experiment.points:
        config = experiment.runs[point.key].config
        cell: dict[str, Any] = {
            "key": point.key,
            "policy": point.policy,
            "replicate": int(point.replicate),
            "seed": int(config["seed"]),
            "load": float(config["workload"]["arrival_rate_scale"]),
        }
        for name, value in point.axes:
            column = f"sweep.{name}" if name in LABEL_COLUMNS else name
            cell[column] = _axis_value(value, kinds[name])
        labels.setdefault(point.key, []).append(cell)
    return labels


def _axis_kind(values: Iterable[Any]) -> str:
    values = list(values)
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "float"
    return "text"


def _axis_value(value: Any, kind: str) -> Any:
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def run_experiment(
    experiment: Experiment | str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    workers: int | None = None,
    executor: str | None = None,
    address: str | None = None,
    progress: bool | None = None,
    client: Any = None,
    scheduler_file: str | os.PathLike[str] | None = None,
    retries: int = POOL_RESTARTS,
) -> ExperimentOutcome:
    """Run every run of an experiment's grid that is not stored yet.

    - `out`: the experiment's results: a directory (default ``results/<name>``) or an fsspec
      URL (``s3://bucket/exp``; needs that file system's package, e.g. s3fs).
    - `workers`: parallel runs (default: CPU count). One pending run, or ``workers=1``, runs
      in this process.
    - `executor`: ``"process"`` (local process pool), ``"local"`` (in this process, one after
      another) or ``"dask"``; by default ``"dask"`` when `client`, `scheduler_file` or
      `address` is given, else ``"process"``. Dask needs ``pip install 'dlsched[dask]'``
      and runs on `client` (a ``distributed.Client`` the caller made and keeps: it is not
      closed), on the scheduler that `scheduler_file` describes (``dask scheduler
      --scheduler-file``), on the scheduler at `address`, or on a local cluster of `workers`
      processes. Its workers must see the traces at the same paths as this process, and
      `out` too — a shared file system, or an object-store URL.
    - `progress`: show a progress bar (default: only when stderr is a terminal).
    - `retries`: how many times runs are tried again after their worker died (killed, out
      of memory): a broken local pool is replaced that many times; on Dask, each run whose
      worker died (``KilledWorker``) is submitted again that many times — on top of Dask's
      own rescheduling, which reports ``KilledWorker`` only once a task's workers died more
      than ``distributed.scheduler.allowed-failures`` times (3 by default). Then the run is
      recorded as failed with the reason, and the other runs go on.

    A stored run counts only when its manifest verifies and names this results format and
    dlsched version; the others are run again, and one line per reason on stderr says how
    many and why (also in ``outcome.rerun``). A policy given by import path runs again when
    its module's source changed (its hash is part of the run's key), with such a line too.

    Ctrl-C stops at once; runs finished so far stay stored and the next call resumes. SIGTERM
    (when nobody else handles it) stops the workers too, then ends the process as SIGTERM
    would; after SIGKILL, the workers notice their driver is gone and exit.
    """
    dask_targets = [
        name
        for name, value in (
            ("client", client),
            ("scheduler_file", scheduler_file),
            ("address", address),
        )
        if value is not None
    ]
    if executor is None:
        executor = "dask" if dask_targets else "process"
    if executor not in EXECUTORS:
        raise ValueError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if executor != "dask" and (client is not None or scheduler_file is not None):
        raise ValueError(
            f"{dask_targets[0]} is for executor='dask', not {executor!r}; "
            "leave out executor or give 'dask'"
        )
    if executor == "dask" and len(dask_targets) > 1:
        raise ValueError(
            f"give one of client, scheduler_file and address, not {' and '.join(dask_targets)}"
        )
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an integer >= 0, got {retries!r}")
    exp = experiment if isinstance(experiment, Experiment) else load_experiment(experiment)
    store = ResultsStore(out if out is not None else Path("results") / exp.name)
    started = time.perf_counter()
    outcome = ExperimentOutcome(exp, store)
    try:
        with _sigterm_stops(), store.lock() as lease:
            target = _DaskTarget(address, client, scheduler_file)
            _run_grid(exp, store, lease, outcome, workers, executor, target, progress, retries)
    except _Terminated:
        # the workers are stopped and the lock released: now end as SIGTERM would have
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        raise SystemExit(128 + signal.SIGTERM) from None
    outcome.wall_s = time.perf_counter() - started
    return outcome


class _Terminated(BaseException):
    """SIGTERM arrived while this process ran a grid (raised by `_sigterm_stops`)."""


@contextlib.contextmanager
def _sigterm_stops() -> Iterator[None]:
    """Turn SIGTERM into `_Terminated` while a grid runs, so that the workers are stopped and
    the lock released first — only where SIGTERM would have killed the process anyway (the
    default handler, in the main thread)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _Terminated

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@dataclass(frozen=True)
class _DaskTarget:
    """Where Dask runs go: at most one of the three is set (none: a local cluster)."""

    address: str | None = None
    client: Any = None
    scheduler_file: str | os.PathLike[str] | None = None

    @property
    def starts_a_cluster(self) -> bool:
        """Whether none is set, so that a local cluster of worker processes is started."""
        return self.address is None and self.client is None and self.scheduler_file is None


def _run_grid(
    exp: Experiment,
    store: ResultsStore,
    lease: WriterLease,
    outcome: ExperimentOutcome,
    workers: int | None,
    executor: str,
    target: _DaskTarget,
    progress: bool | None,
    retries: int = POOL_RESTARTS,
) -> None:
    """Run the grid's pending runs while this process holds the store's lock (`lease`)."""
    store.clean_partial()
    changed_code = code_reruns(exp, store)  # read the grid last run here before replacing it
    store.write_manifest(manifest(exp), exp.text)
    checks = {key: store.check_run(key) for key in exp.runs}
    outcome.skipped = [key for key, check in checks.items() if check.ok]
    outcome.rerun = {
        key: check for key, check in checks.items() if check.status not in ("ok", "missing")
    }
    outcome.rerun.update(changed_code)
    for line in rerun_messages(outcome.rerun):
        print(f"{exp.name}: {line}", file=sys.stderr)
    for key in outcome.rerun:
        store.discard_run(key)
    cells = dataset_labels(exp)
    # the dataset holds exactly the cells of this grid whose run is stored: the rest goes
    store.prune_dataset(
        {cell_file(c) for key, check in checks.items() if check.ok for c in cells.get(key, ())}
    )
    pending = [run for key, run in exp.runs.items() if not checks[key].ok]
    n_workers = min(workers or os.cpu_count() or 1, max(1, len(pending)))
    spawns = executor == "process" or (executor == "dask" and target.starts_a_cluster)
    if spawns and n_workers > 1 and "memory" in getattr(getattr(store, "fs", None), "protocol", ()):
        raise ValueError(
            f"{store.url}: a memory:// store lives in this process only, and worker processes "
            "would write into their own; use executor='local', or a Dask client of an "
            "in-process cluster (processes=False)"
        )
    bar = tqdm(
        total=len(exp.runs),
        initial=len(outcome.skipped),
        unit="run",
        desc=exp.name,
        disable=None if progress is None else not progress,
        file=sys.stderr,
        dynamic_ncols=True,
        bar_format=BAR_FORMAT,
    )
    # Workers elsewhere (a Dask cluster this process did not start) write their runs'
    # progress into the store, which they share; local workers into a temporary folder.
    remote = executor == "dask" and not target.starts_a_cluster
    local_root = store.root if type(store) is ResultsStore else None
    if remote and local_root is None:
        grid = GridProgress(bar, None, owns_folder=False)
    else:
        grid = GridProgress.open(bar, local_root if remote else None)

    def record(result: RunOutcome) -> None:
        if result.status == "failed":
            outcome.failed[result.key] = result.error or "failed"
            bar.set_postfix(failed=len(outcome.failed), refresh=False)
        else:  # "skipped" here: stored during this call, by a worker of a broken pool
            outcome.finished.append(result.key)
        grid.done(result.key)

    try:
        grid.start()
        if executor == "dask":
            _run_on_dask(pending, store, n_workers, target, record, lease, retries, cells, grid)
        elif executor == "local" or n_workers == 1:
            single = len(pending) == 1 and not bar.disable
            _run_in_process(pending, store, record, single, lease, cells, grid)
        else:
            outcome.pool_restarts = _run_on_pool(
                pending, store, n_workers, record, lease, retries, cells, grid
            )
    finally:
        grid.close()
    complete_dataset(store, cells, [*outcome.skipped, *outcome.finished])


def complete_dataset(
    store: ResultsStore,
    cells: Mapping[str, Sequence[Mapping[str, Any]]],
    keys: Iterable[str],
) -> int:
    """Write the dataset files missing for the stored runs `keys` (stored before the dataset
    existed, or whose worker could not write them), from the store; return how many runs."""
    present = store.dataset_files()
    done = 0
    for key in keys:
        missing = [c for c in cells.get(key, ()) if cell_file(c) not in present]
        if missing:
            try:
                store.write_dataset(key, missing)
            except Exception as exc:  # derived data: never lose the runs over it
                print(f"{key}: dataset files not written ({_one_line(exc)})", file=sys.stderr)
                continue
            done += 1
    return done


def rerun_messages(rerun: Mapping[str, RunCheck]) -> list[str]:
    """One line per reason why stored runs are run again: how many, and why."""
    lines = []
    by_status: dict[str, list[tuple[str, RunCheck]]] = {}
    for key, check in rerun.items():
        by_status.setdefault(check.status, []).append((key, check))
    for status, found in by_status.items():
        if status == "damaged":
            count = f"{len(found)} stored run{'s' if len(found) != 1 else ''}"
            shown = "; ".join(f"{key}: {check.reason}" for key, check in found[:3])
            more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
            lines.append(f"re-running {count} whose files are damaged ({shown}{more})")
        else:  # legacy, stale: the reason names the version that stored them
            for reason in sorted({check.reason for _, check in found}):
                same = sum(check.reason == reason for _, check in found)
                lines.append(f"re-running {same} stored run{'s' if same != 1 else ''}: {reason}")
    return lines


def _run_in_process(
    pending: Iterable[Run],
    store: ResultsStore,
    record: Callable[[RunOutcome], None],
    single: bool,
    lease: WriterLease | None = None,
    cells: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    grid: GridProgress | None = None,
) -> None:
    cells = cells or {}
    for run in pending:
        # One long run gets `simulate`'s own bar: jobs finished of the total, with an ETA;
        # several move the grid's bar by each run's progress.
        sink = None if single or grid is None else grid.sink(run.key)
        outcome = execute_run(
            run.key,
            run.config,
            store.url,
            None,
            lease,
            cells.get(run.key, ()),
            progress=single if sink is None else sink,
        )
        record(outcome)


def _pool_context() -> Any:
    """Forkserver where there is one (fork is unsafe with threads), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["dlsched.experiments.runner"])
        return context
    return multiprocessing.get_context("spawn")


def watch_driver(driver_pid: int) -> None:
    """Make this (pool worker) process exit as soon as its driver `driver_pid` ends.

    Two guards, because each misses a case: on Linux the kernel sends SIGKILL when the parent
    ends (``PR_SET_PDEATHSIG``; the parent is the driver, or the forkserver that exits with
    it), even while a long C call holds the GIL; everywhere, a daemon thread waits on the
    driver (a pidfd where there is one, else polling) and on the parent changing.
    """
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent or not _alive(driver_pid):  # it ended before the guard was set
        os._exit(1)
    threading.Thread(
        target=_watchdog, args=(driver_pid, parent), name="dlsched-driver-watchdog", daemon=True
    ).start()


def _watchdog(driver_pid: int, parent: int) -> None:
    pidfd = None
    with contextlib.suppress(OSError, AttributeError):
        pidfd = os.pidfd_open(driver_pid)  # type: ignore[attr-defined,unused-ignore]
    while True:
        if pidfd is not None:
            # readable once the driver has ended (a zombie included, unlike kill(pid, 0))
            if select.select([pidfd], [], [], WATCHDOG_PERIOD_S)[0]:
                break
        else:
            time.sleep(WATCHDOG_PERIOD_S)
            if not _alive(driver_pid):
                break
        if os.getppid() != parent:
            break
    os._exit(1)  # at once: no cleanup that could write into the store


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _run_on_pool(
    pending: list[Run],
    store: ResultsStore,
    workers: int,
    record: Callable[[RunOutcome], None],
    lease: WriterLease | None = None,
    retries: int = POOL_RESTARTS,
    cells: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    grid: GridProgress | None = None,
) -> int:
    """Run on a local process pool, replacing it when a worker dies (up to `retries` times);
    return how often it broke."""
    cells = cells or {}
    progress_dir = None if grid is None else grid.worker_folder()
    # only with a bar: a run is then sent exactly as before progress files existed
    progress_kwargs: dict[str, Any] = {} if progress_dir is None else {"progress_dir": progress_dir}
    waiting = {run.key: run for run in pending}
    breaks = 0
    while waiting:
        pool = ProcessPoolExecutor(
            max_workers=min(workers, len(waiting)),
            mp_context=_pool_context(),
            initializer=watch_driver,
            initargs=(os.getpid(),),
        )
        futures = {}
        try:
            for run in waiting.values():
                future = pool.submit(
                    execute_run,
                    run.key,
                    run.config,
                    store.url,
                    None,
                    lease,
                    cells.get(run.key, ()),
                    **progress_kwargs,
                )
                futures[future] = run
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
            if breaks > retries:
                for run in list(waiting.values()):
                    message = (
                        f"a worker process died {breaks} times while this run waited or "
                        "ran (killed, or out of memory?); run it alone with --workers 1"
                    )
                    store.record_failure(run.key, run.config, message, "")
                    record(RunOutcome(run.key, "failed", message))
                return breaks
    return breaks


def _stop_pool(pool: ProcessPoolExecutor, grace_s: float = 1.0) -> None:
    """Cancel what has not started and end the workers now (their partial runs are temporary
    directories, removed by the next run): SIGTERM, then SIGKILL after `grace_s`."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # before shutdown
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + grace_s
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()


def _driver_failure(store: ResultsStore, run: Run, exc: BaseException) -> RunOutcome:
    text = "".join(traceback.format_exception(exc))
    store.record_failure(run.key, run.config, _one_line(exc), text)
    return RunOutcome(run.key, "failed", _one_line(exc))


def _run_on_dask(
    pending: list[Run],
    store: ResultsStore,
    workers: int,
    target: _DaskTarget,
    record: Callable[[RunOutcome], None],
    lease: WriterLease | None = None,
    retries: int = POOL_RESTARTS,
    cells: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    grid: GridProgress | None = None,
) -> None:
    try:
        from distributed import Client, KilledWorker, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError:
        raise MissingExtraError(
            "the dask executor needs Dask distributed: pip install 'dlsched[dask]'"
        ) from None
    if not pending:
        return
    cells = cells or {}
    cluster = None
    client = target.client
    if client is None:
        client, cluster = _connect(target, workers, Client, LocalCluster)
    link = getattr(client, "dashboard_link", None)
    if link:
        print(f"Dask dashboard: {link}", file=sys.stderr)
    root = store.url
    progress_dir = None if grid is None else grid.worker_folder()
    # only with a bar: a run is then sent exactly as before progress files existed
    progress_kwargs: dict[str, Any] = {} if progress_dir is None else {"progress_dir": progress_dir}
    deaths: dict[str, int] = {}

    def submit(run: Run) -> Any:
        # pure=False: a run submitted again gets a new task, not the one that killed workers
        return client.submit(
            execute_run,
            run.key,
            run.config,
            root,
            None,
            lease,
            list(cells.get(run.key, ())),
            **progress_kwargs,
            pure=False,
        )

    futures: dict[Any, Run] = {}
    try:
        futures = {submit(run): run for run in pending}
        completed = dask_completed(list(futures))
        try:
            for future in completed:
                run = futures.pop(future)
                try:
                    result = future.result()
                except KilledWorker as exc:  # its worker died (killed, out of memory)
                    deaths[run.key] = deaths.get(run.key, 0) + 1
                    if deaths[run.key] <= retries:
                        again = submit(run)
                        futures[again] = run
                        completed.add(again)
                        continue
                    result = _killed_failure(store, run, exc, deaths[run.key])
                except Exception as exc:  # e.g. a config that cannot be sent to a worker
                    result = _driver_failure(store, run, exc)
                record(result)
        except BaseException:
            client.cancel(list(futures))
            raise
    finally:
        if target.client is None:
            client.close()
        if cluster is not None:
            cluster.close()


def _connect(
    target: _DaskTarget, workers: int, client_type: Any, cluster_type: Any
) -> tuple[Any, Any]:
    """A new Dask client for `target` (and the local cluster it started, or None)."""
    cluster = None
    if target.scheduler_file is not None:
        path = os.fspath(target.scheduler_file)
        if not os.path.isfile(path):
            raise DaskUnreachableError(
                f"{path}: no such Dask scheduler file; start the scheduler with "
                f"`dask scheduler --scheduler-file {path}` (on a shared file system) or give "
                "the file it wrote"
            )
        where: Any = {"scheduler_file": path}
    elif target.address is not None:
        where = {"address": target.address}
    else:
        # dashboard on a free port: never "8787 in use" next to another cluster
        cluster = cluster_type(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        )
        where = {"address": cluster}
    try:
        return client_type(timeout="10s", **where), cluster
    except OSError as exc:  # includes timeouts
        if cluster is not None:
            cluster.close()
        named = target.address or f"the address in {target.scheduler_file}"
        raise DaskUnreachableError(
            f"cannot reach the Dask scheduler at {named}: {exc}; "
            "start one (`dask scheduler`, then `dask worker ADDRESS` on "
            "each machine) or leave out --address for a local "
            "cluster"
        ) from None


def _killed_failure(store: ResultsStore, run: Run, exc: BaseException, deaths: int) -> RunOutcome:
    """Record a run whose Dask worker died `deaths` times: more than `retries` allowed."""
    last = getattr(getattr(exc, "last_worker", None), "address", None)
    message = (
        f"its Dask worker died {deaths} time{'s' if deaths != 1 else ''} while running it "
        f"(KilledWorker{f', last on {last}' if last else ''}: killed, or out of memory?); "
        "give the workers more memory, or run it alone with --workers 1"
    )
    store.record_failure(run.key, run.config, message, "".join(traceback.format_exception(exc)))
    return RunOutcome(run.key, "failed", message)
