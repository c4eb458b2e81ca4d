"""Running a reproduction: its tasks on a process pool, each stored as it finishes, so that an
interrupted run resumes where it stopped.

::

    OUT/
      tasks/<task id>-<hash>.json   one finished task: its spec, metrics and CPU seconds
      fidelity.csv, fidelity.md     ours vs published per point (`dlsched.reproduce.output`)
      <figure>.png                  one overlay plot per figure
      .lock                         held by the one process writing here

A task file appears by one ``os.replace`` of a complete temporary file and is named by a hash
of the reproduction, the task's spec and the dlsched version, so a finished task is reused
exactly when the same dlsched release would compute the same thing (as the experiments
store does; in a development tree whose code changed since, use a fresh ``--out``). The
pool is the experiments runner's (`dlsched.experiments.runner`): forkserver workers that die
with their driver, and the store's single-writer lock (`ResultsStore.lock`); only the
driver writes.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import math
import multiprocessing
import os
import re
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.atomic import write_text
from dlsched.reproduce.base import Point, Reproduction, Task

Measure = Callable[[Mapping[str, Any], Path], Mapping[str, float]]


@dataclass(frozen=True)
class PointResult:
    """One point with ours next to the published number."""

    point: Point
    ours: float

    @property
    def deviation(self) -> float:
        """ours / published − 1 (NaN where the published value is 0)."""
        published = self.point.published
        if published == 0 or math.isnan(self.ours):
            return math.nan
        return self.ours / published - 1.0

    @property
    def within(self) -> bool:
        """Whether ours is within the point's declared tolerance."""
        return self.point.tolerance.allows(self.ours, self.point.published)


@dataclass
class ReproductionOutcome:
    """What `run_reproduction` did: the points compared, and which tasks ran now."""

    reproduction: Reproduction
    quick: bool
    out: Path
    subset: bool = False
    """Whether `only` picked part of the plan."""
    points: list[PointResult] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    cpu_s: float = 0.0
    """CPU seconds of every task of this reproduction (reused ones as first measured)."""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every task ran and every point is within its tolerance."""
        return not self.failed and all(p.within for p in self.points)

    def stats(self) -> dict[str, Any]:
        """Points, points within tolerance, the worst and the median relative deviation."""
        return deviation_stats(self.points)


def deviation_stats(points: Sequence[PointResult]) -> dict[str, Any]:
    """Counts and the worst (largest |deviation|, signed) and median |deviation| of `points`
    whose tolerance is relative (`Tolerance.relative`)."""
    deviations = [
        (abs(p.deviation), p)
        for p in points
        if not math.isnan(p.deviation) and p.point.tolerance.relative
    ]
    worst = max(deviations, key=lambda pair: pair[0], default=(math.nan, None))
    return {
        "points": len(points),
        "within": sum(p.within for p in points),
        "worst": worst[1].deviation if worst[1] is not None else math.nan,
        "worst_point": worst[1].point.label if worst[1] is not None else "",
        "median": statistics.median(d for d, _ in deviations) if deviations else math.nan,
    }


def task_file(reproduction: str, task: Task, revision: int = 0) -> str:
    """The file name of a finished task: its id and a hash of what determines its result
    (`revision`: the reproduction's, `Reproduction.revision`)."""
    from dlsched import __version__
    from dlsched.experiments.store import RESULTS_FORMAT  # bumped when semantics change

    payload: dict[str, Any] = {
        "reproduction": reproduction,
        "id": task.id,
        "spec": task.spec,
        "dlsched": __version__,
        "results_format": RESULTS_FORMAT,
    }
    if revision:  # (revision 0 keeps the names tasks had before revisions existed)
        payload["revision"] = revision
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", task.id)[:80]
    return f"{safe}-{digest}.json"


def read_task(path: Path) -> dict[str, Any] | None:
    """A stored task's record, or None if it is missing or unreadable (then it runs again)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
        return None
    return record


def _measure(measure: Measure, spec: Mapping[str, Any], shared: str) -> tuple[dict, float]:
    """Run one task (in a worker); its metrics and CPU seconds."""
    started = time.process_time()
    metrics = {k: float(v) for k, v in measure(spec, Path(shared)).items()}
    return metrics, time.process_time() - started


def _pool(workers: int) -> ProcessPoolExecutor:
    from dlsched.experiments.runner import watch_driver

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=watch_driver, initargs=(os.getpid(),)
    )


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (Ctrl-C: nothing is half-stored,
    since only the driver writes)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()


def run_reproduction(
    reproduction: Reproduction,
    shared: Path,
    out: str | os.PathLike[str],
    *,
    quick: bool = False,
    workers: int | None = None,
    only: Sequence[str] = (),
    on_task: Callable[[str, str, float], None] | None = None,
) -> ReproductionOutcome:
    """Measure every task of `reproduction`'s plan not stored in `out` yet, then compare.

    `workers`: parallel tasks (default: CPU count; 1 runs them in this process). `only`:
    glob patterns; if given, only the points whose task id matches one run. `on_task`
    is called as each task ends with (task id, ``"ran"``/``"reused"``/``"failed: …"``, CPU
    seconds). A task that raises is recorded as failed and the others go on; Ctrl-C stops at
    once, leaving the finished tasks stored.
    """
    from dlsched.experiments.store import ResultsStore, StoreBusyError

    reproduction.check_data(shared)
    started = time.perf_counter()
    plan = list(reproduction.plan(shared, quick))
    if only:
        plan = [p for p in plan if any(fnmatch.fnmatchcase(p.task.id, o) for o in only)]
        if not plan:
            from dlsched.errors import DlschedError

            raise DlschedError(
                f"no task of reproduction {reproduction.name!r} matches "
                f"{', '.join(repr(o) for o in only)}; its tasks are named like "
                f"{reproduction.plan(shared, quick)[0].task.id!r}"
            )
    tasks = list({p.task.id: p.task for p in plan}.values())
    folder = Path(out)
    outcome = ReproductionOutcome(reproduction, quick, folder, subset=bool(only))
    metrics: dict[str, dict[str, float]] = {}
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(ResultsStore(folder).lock())
        except StoreBusyError:
            raise StoreBusyError(
                f"{folder}: another `dlsched reproduce` (or `dlsched run`) is writing to this "
                "folder; wait for it or use another --out"
            ) from None
        pending = []
        for task in tasks:
            record = read_task(
                folder / "tasks" / task_file(reproduction.name, task, reproduction.revision)
            )
            if record is None or (
                reproduction.accepts is not None and not reproduction.accepts(record["metrics"])
            ):
                pending.append(task)
                continue
            metrics[task.id] = record["metrics"]
            outcome.reused.append(task.id)
            outcome.cpu_s += float(record.get("cpu_s", 0.0))
            if on_task is not None:
                on_task(task.id, "reused", float(record.get("cpu_s", 0.0)))

        def store(task: Task, result: dict[str, float], cpu_s: float) -> None:
            record = {
                "reproduction": reproduction.name,
                "task": task.id,
                "spec": task.spec,
                "metrics": result,
                "cpu_s": cpu_s,
            }
            path = folder / "tasks" / task_file(reproduction.name, task, reproduction.revision)
            write_text(path, json.dumps(record, indent=1, sort_keys=True))
            metrics[task.id] = result
            outcome.ran.append(task.id)
            outcome.cpu_s += cpu_s
            if on_task is not None:
                on_task(task.id, "ran", cpu_s)

        def fail(task: Task, exc: BaseException) -> None:
            outcome.failed[task.id] = f"{type(exc).__name__}: {exc}"
            if on_task is not None:
                on_task(task.id, f"failed: {outcome.failed[task.id]}", 0.0)

        n_workers = min(workers or os.cpu_count() or 1, max(1, len(pending)))
        if n_workers == 1:
            for task in pending:
                try:
                    result, cpu_s = _measure(reproduction.measure, task.spec, str(shared))
                except Exception as exc:
                    fail(task, exc)
                else:
                    store(task, result, cpu_s)
        elif pending:
            pool = _pool(n_workers)
            try:
                futures = {
                    pool.submit(_measure, reproduction.measure, task.spec, str(shared)): task
                    for task in pending
                }
                for future in as_completed(futures):
                    task = futures[future]
                    try:
                        result, cpu_s = future.result()
                    except Exception as exc:
                        fail(task, exc)
                    else:
                        store(task, result, cpu_s)
            except BaseException:
                _stop(pool)
                raise
            pool.shutdown(wait=True)
    for point in plan:
        found = metrics.get(point.task.id, {})
        outcome.points.append(PointResult(point, float(found.get(point.metric, math.nan))))
    outcome.wall_s = time.perf_counter() - started
    return outcome
