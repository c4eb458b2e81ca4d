"""The results store: one directory per experiment, one sub-directory per finished run.

::

    RESULTS/
      experiment.json        the grid: every cell's labels and run key (rewritten by each run)
      experiment.yaml        the experiment file as it was last run
      runs/<key>/            a finished run: config.json, summary.json, meta.json, the
                             jobs / events / timeline parquet files and manifest.json
      runs/.tmp-<key>-*/     a run being written (never mistaken for a finished one)
      failures/<key>.json    a failed run: its config, the error and the traceback
      .lock                  held (flock) by the one `dlsched run` writing here; holds its token
                             (opened in place, never through a link: `dlsched.atomic`)

A run directory appears by one ``os.replace`` of a complete temporary directory, so a crash,
a killed worker or Ctrl-C leaves either a finished run or a ``.tmp-`` leftover, which the next
``dlsched run`` removes. Its ``manifest.json``, written last, records the size and SHA-256 of
every other file, the `RESULTS_FORMAT` and the dlsched version: a run is finished exactly when
its manifest verifies and names this format and version (`ResultsStore.check_run`). A worker
stores a run only while the driver that started it still holds the store's lock
(`WriterLease`), so a worker that outlives a killed driver never writes.

Beside the runs, ``dataset/`` holds the same results as one parquet dataset per table,
partitioned by grid cell (one file per cell), each row carrying the cell's labels — ``key``,
``policy``, ``replicate``, ``seed``, ``load`` (the arrival-rate scale) and one column per
sweep axis — so that all runs are queried at once::

      dataset/runs/<key>-<cell>.parquet       one row per grid cell: labels + summary metrics
      dataset/jobs|events|timeline/…parquet   the run's table, the cell's labels prepended

(``pyarrow.dataset.dataset("RESULTS/dataset/jobs")``, or DuckDB's
``SELECT policy, avg(jct) FROM 'RESULTS/dataset/jobs/*.parquet' GROUP BY ALL``). It is derived
data: each file is written whole after its run is stored, files of cells no longer in the grid
are removed by the next ``dlsched run``, and missing ones are rebuilt from ``runs/``. Where
runs differ in columns (the timeline has one per GPU type, so a sweep over clusters), read
with DuckDB's ``union_by_name=true`` or give `pyarrow.dataset` a unified schema.

**Object stores.** A root that is an fsspec URL (``s3://bucket/exp``, ``gs://…``,
``memory://…``; ``file://`` is a local path) gives the same layout through fsspec
(`FsspecResultsStore`). What differs, as object stores have no rename and no locks: a run is
written in place under ``runs/<key>/`` and *committed* by its ``manifest.json``, written last
(one object put is atomic), so a run without a verified manifest is simply not finished and
is re-run; the store's ``.lock`` is an object holding the writer's token, taken by
write-then-read-back — two drivers starting in the same instant are not excluded, and one
that was killed leaves its ``.lock`` behind (on its own host, a dead pid's lock is taken
over; elsewhere, delete the file). Workers still check the token before every commit. The
manifest also records each object's ETag where the store gives one (S3, GCS, Azure): an
object that still has it is not downloaded to check its SHA-256; without ETags, checking a
run reads it back (once per process). ``memory://`` lives in one process: use it with the
``local`` executor or an in-process Dask cluster.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from dlsched.atomic import TMP_PREFIX, fsync_path, open_in_place, write_parquet, write_text
from dlsched.errors import DlschedError
from dlsched.metrics import SimulationResult

RESULTS_FORMAT = 8  # 8: gavel_fifo with no seed of its own makes Gavel's draws of the run's seed
"""The version of what a stored run means. Bump it whenever a change makes the same run
config give a different result (simulation semantics, a summary field's definition, the file
layout of a run): every stored run of another format is then re-run, with a message.
3: Tiresias' default follows the authors' simulator, Gavel's rounds and `gavel_fifo` follow
Gavel's code, `fifo`/`sjf` count fewer scheduling calls (CHANGELOG, Changed results).
4: runs with CPU/memory demands keep them in ``jobs.parquet`` and, on clusters that declare
cores or memory, summarise each resource's utilisation; `cap_gpu_demand` shrinks demands,
`gavel_fifo` no longer holds a job on a type it can never use, `pollux`/`sia` plan within
CPU/memory, `alibaba-spot-2026` declares cores (CHANGELOG, Changed results).
Format 1 had no ``manifest.json``; format 2 added it."""

RUN_MANIFEST = "manifest.json"
"""The file of a run directory written last: the size and SHA-256 of every other file."""

RUN_FILES = (
    "config.json",
    "summary.json",
    "meta.json",
    "jobs.parquet",
    "events.parquet",
    "timeline.parquet",
    RUN_MANIFEST,
)
_TMP_PREFIX = TMP_PREFIX
_LOCK_FILE = ".lock"

DATASET_DIR = "dataset"
"""The folder of a store's parquet dataset (see the module docstring)."""

DATASET_TABLES = ("runs", "jobs", "events", "timeline")
"""The tables of the dataset: ``runs`` (one row per grid cell: its summary), and each run's
jobs, events and timeline tables; every row carries its cell's labels."""

LABEL_COLUMNS = ("key", "policy", "replicate", "seed", "load")
"""The label columns every dataset row starts with, before one column per sweep axis."""


class StoreBusyError(DlschedError):
    """Another `dlsched run` is writing to the same results directory."""


class LeaseLostError(DlschedError):
    """The driver that started a run no longer holds the store's lock: nothing is written."""


@dataclass(frozen=True)
class WriterLease:
    """Proof that a driver holds a store's lock, handed to the workers it starts.

    The driver writes `token` into the lock file while it holds the lock; a worker checks,
    before storing anything, that the file still holds `token` and — on the driver's machine,
    where ``flock`` is visible — that the lock is still held (`ResultsStore.check_lease`).
    """

    token: str
    host: str
    pid: int


@dataclass(frozen=True)
class RunCheck:
    """What `ResultsStore.check_run` found for one run key.

    `status` is ``ok`` (stored and verified), ``missing``, ``legacy`` (stored without a
    manifest, by results format 1), ``stale`` (stored by another results format or dlsched
    version) or ``damaged`` (a file missing or changed); `reason` says which and why.
    """

    status: str
    reason: str = ""

    @property
    def ok(self) -> bool:
        """Whether the run is stored, complete and current."""
        return self.status == "ok"


class ResultsStore:
    """One experiment's results directory (see the module docstring for the layout).

    A local path (or a ``file://`` URL) gives this class; any other fsspec URL gives an
    `FsspecResultsStore`, with the same methods.
    """

    def __new__(cls, root: str | os.PathLike[str] = "") -> ResultsStore:
        # `root` has a default so that pickle, which calls __new__ without it, still works
        if cls is ResultsStore and is_remote(root):
            return super().__new__(FsspecResultsStore)
        return super().__new__(cls)

    def __init__(self, root: str | os.PathLike[str]) -> None:
        text = os.fspath(root)
        self.root = Path(text[len("file://") :] if text.startswith("file://") else text)
        self.runs_dir = self.root / "runs"
        self.failures_dir = self.root / "failures"
        self.dataset_dir = self.root / DATASET_DIR

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @property
    def url(self) -> str:
        """Where workers find this store: an absolute local path, or the fsspec URL."""
        return str(self.root.resolve())

    # ---- file primitives (overridden by `FsspecResultsStore`) ------------------------------
    def _is_dir(self, path: Path) -> bool:
        return path.is_dir()

    def _is_file(self, path: Path) -> bool:
        return path.is_file()

    def _read_text(self, path: Path) -> str:
        return path.read_text()

    def _names(self, folder: Path) -> list[str]:
        """Names of the entries of `folder` (none when it does not exist)."""
        return [p.name for p in folder.iterdir()] if folder.is_dir() else []

    def _size_and_sha256(self, path: Path) -> tuple[int, Callable[[], str]]:
        """The size of a file and how to get its SHA-256 (`OSError` when it is missing)."""
        stat = path.stat()
        return stat.st_size, lambda: _sha256_of(path, stat)

    def _unchanged(self, path: Path, expected: Mapping[str, Any]) -> bool:
        """Whether the file system vouches that `path` is the object the manifest recorded
        (its ETag), so that its SHA-256 need not be read back; never on a local disk."""
        return False

    def _read_parquet(self, path: Path, columns: Sequence[str] | None = None) -> Any:
        import pandas as pd

        return pd.read_parquet(path, columns=None if columns is None else list(columns))

    def _write_table(self, path: Path, table: Any) -> None:
        """Write a pyarrow table as one parquet file, whole or not at all."""
        write_parquet(path, table)

    def _remove(self, path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()

    # ---- reading ----------------------------------------------------------------------
    def run_dir(self, key: str) -> Path:
        """Where the finished run `key` lives (whether or not it exists yet)."""
        return self.runs_dir / key

    def is_finished(self, key: str) -> bool:
        """Whether run `key` is stored, its manifest verifies and names this format and version."""
        return self.check_run(key).ok

    def _without_manifest(self, folder: Path) -> RunCheck:
        """What a run folder without a manifest is: a run of results format 1."""
        if self._is_file(folder / "config.json"):
            return RunCheck(
                "legacy",
                "stored without a manifest (results format 1), so their files cannot be verified",
            )
        return RunCheck("damaged", f"{folder}: no {RUN_MANIFEST} and no config.json")

    def check_run(self, key: str) -> RunCheck:
        """Verify stored run `key` against its manifest (see `RunCheck` for the answers)."""
        from dlsched import __version__

        folder = self.run_dir(key)
        if not self._is_dir(folder):
            return RunCheck("missing")
        try:
            manifest = json.loads(self._read_text(folder / RUN_MANIFEST))
        except FileNotFoundError:
            return self._without_manifest(folder)
        except (OSError, ValueError) as exc:
            return RunCheck("damaged", f"{folder / RUN_MANIFEST} is unreadable ({exc})")
        files = manifest.get("files") if isinstance(manifest, dict) else None
        if not isinstance(files, dict) or manifest.get("key") != key:
            return RunCheck("damaged", f"{folder / RUN_MANIFEST} is not a manifest of run {key}")
        stored = (manifest.get("results_format"), manifest.get("dlsched_version"))
        if stored != (RESULTS_FORMAT, __version__):
            return RunCheck(
                "stale",
                f"stored by dlsched {stored[1]} (results format {stored[0]}); this is dlsched "
                f"{__version__} (results format {RESULTS_FORMAT})",
            )
        for name, expected in sorted(files.items()):
            try:
                size, sha256 = self._size_and_sha256(folder / name)
            except OSError:
                return RunCheck("damaged", f"{name} is missing")
            if not isinstance(expected, dict) or expected.get("size") != size:
                return RunCheck("damaged", f"{name} has changed size")
            if self._unchanged(folder / name, expected):
                continue
            if expected.get("sha256") != sha256():
                return RunCheck("damaged", f"{name} does not match its SHA-256")
        return RunCheck("ok")

    def finished_keys(self) -> list[str]:
        """Keys of every finished (verified, current) run in the store, sorted."""
        return sorted(
            name
            for name in self._names(self.runs_dir)
            if not name.startswith(".") and self.is_finished(name)
        )

    def load_run(self, key: str) -> SimulationResult:
        """The stored result of run `key`."""
        return SimulationResult.load(self.run_dir(key))

    def read_table(self, key: str, table: str, columns: Sequence[str] | None = None) -> Any:
        """Table `table` (``jobs``, ``events`` or ``timeline``) of stored run `key`, as pandas."""
        return self._read_parquet(self.run_dir(key) / f"{table}.parquet", columns)

    def run_summary(self, key: str) -> dict[str, Any]:
        """The stored ``summary.json`` of run `key`."""
        return json.loads(self._read_text(self.run_dir(key) / "summary.json"))

    def run_config(self, key: str) -> dict[str, Any]:
        """The resolved config of run `key`."""
        return json.loads(self._read_text(self.run_dir(key) / "config.json"))["config"]

    def failures(self) -> dict[str, dict[str, Any]]:
        """Failed runs: key → ``{key, config, error, traceback}``."""
        return {
            name[: -len(".json")]: json.loads(self._read_text(self.failures_dir / name))
            for name in sorted(self._names(self.failures_dir))
            if name.endswith(".json") and not name.startswith(".")
        }

    def read_manifest(self) -> dict[str, Any]:
        """The grid of the experiment last run into this store."""
        path = self.root / "experiment.json"
        if not self._is_file(path):
            raise FileNotFoundError(
                f"{self.url}: not a results directory (no experiment.json); "
                "give the directory that `dlsched run` wrote"
            )
        return json.loads(self._read_text(path))

    # ---- the dataset ------------------------------------------------------------------
    def dataset_path(self, table: str) -> str:
        """The folder (path or URL) of one dataset table, to give `pyarrow.dataset` or DuckDB."""
        if table not in DATASET_TABLES:
            raise ValueError(f"unknown dataset table {table!r}; the tables are {DATASET_TABLES}")
        return str(self.dataset_dir / table)

    def dataset_files(self) -> set[str]:
        """Names of the cell files present in every table of the dataset."""
        present = [
            {
                name
                for name in self._names(self.dataset_dir / table)
                if name.endswith(".parquet") and not name.startswith(".")
            }
            for table in DATASET_TABLES
        ]
        return set.intersection(*present)

    def write_dataset(
        self,
        key: str,
        cells: Sequence[Mapping[str, Any]],
        result: SimulationResult | None = None,
    ) -> None:
        """Write the dataset files of run `key`'s grid cells (labels from `dataset_labels`).

        `result` is the run's result when at hand; otherwise it is read back from the store.
        """
        if not cells:
            return
        if result is None:
            result = self.load_run(key)
        summary = result.summary()
        tables = {"jobs": result.jobs, "events": result.events, "timeline": result.timeline}
        for labels in cells:
            name = cell_file(labels)
            self._write_table(self.dataset_dir / "runs" / name, _summary_table(labels, summary))
            for table, frame in tables.items():
                self._write_table(self.dataset_dir / table / name, _labelled(labels, frame))

    def prune_dataset(self, keep: set[str]) -> int:
        """Remove every dataset file whose name is not in `keep`; return how many went."""
        removed = 0
        for table in DATASET_TABLES:
            folder = self.dataset_dir / table
            for name in self._names(folder):
                if name not in keep:
                    self._remove(folder / name)
                    removed += 1
        return removed

    # ---- writing ----------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[WriterLease]:
        """Hold the store for one writer; a second `dlsched run` on it fails at once.

        Yields the `WriterLease` that this writer's workers pass to `write_run`.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        lease = WriterLease(
            f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(8)}",
            socket.gethostname(),
            os.getpid(),
        )
        try:
            import fcntl
        except ImportError:  # not POSIX: no advisory locks; one writer is on the user
            fcntl = None  # type: ignore[assignment]
        # opened in place without truncating (a truncation before the lock is ours would erase
        # the holder's token), never through a link planted there (`open_in_place`)
        with open_in_place(self.root / _LOCK_FILE, "the results lock") as handle:
            if fcntl is not None:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    raise StoreBusyError(
                        f"{self.root}: another `dlsched run` is writing to this "
                        "results directory; wait for it or use another --out"
                    ) from None
            try:
                _rewrite(handle, lease.token)
                yield lease
            finally:
                with contextlib.suppress(OSError):
                    _rewrite(handle, "")
                if fcntl is not None:
                    fcntl.flock(handle, fcntl.LOCK_UN)

    def check_lease(self, lease: WriterLease) -> None:
        """Raise `LeaseLostError` unless the driver of `lease` still holds this store's lock.

        On another machine than the driver's (a Dask worker), only the token in the lock file
        can be checked: ``flock`` is not reliably shared over network file systems.
        """
        path = self.root / _LOCK_FILE
        try:
            token = path.read_text().strip()
        except OSError:
            token = ""
        if token != lease.token:
            raise LeaseLostError(
                f"{self.root}: the `dlsched run` that started this run (pid {lease.pid} on "
                f"{lease.host}) no longer holds the results directory; nothing was stored"
            )
        if lease.host != socket.gethostname():
            return
        try:
            import fcntl
        except ImportError:
            return
        with open_in_place(path, "the results lock") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except OSError:
                return  # held, and by the writer whose token the file holds
            fcntl.flock(handle, fcntl.LOCK_UN)
        raise LeaseLostError(
            f"{self.root}: the `dlsched run` that started this run (pid {lease.pid}) has "
            "ended and released its lock; nothing was stored"
        )

    def clean_partial(self) -> int:
        """Remove what interrupted runs left behind; return how many leftovers there were."""
        leftovers = [
            p
            for folder in (self.root, self.runs_dir, self.failures_dir)
            if folder.is_dir()
            for p in folder.iterdir()
            if p.name.startswith(_TMP_PREFIX)
        ]
        for path in leftovers:
            if path.is_dir() and not path.is_symlink():  # (a link goes, never what it names)
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        return len(leftovers)

    def write_manifest(self, manifest: Mapping[str, Any], text: str) -> None:
        """Record the grid (``experiment.json``) and the experiment file (``experiment.yaml``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        write_text(
            self.root / "experiment.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        )
        write_text(self.root / "experiment.yaml", text)

    def write_run(
        self,
        key: str,
        config: Mapping[str, Any],
        result: SimulationResult,
        lease: WriterLease | None = None,
    ) -> Path:
        """Store a finished run atomically; return its directory.

        The manifest is written last, into a temporary directory renamed into place in one
        step. With a `lease`, the rename happens only while its driver holds the lock
        (`LeaseLostError` otherwise, and nothing is stored). A damaged or stale copy of the
        run is replaced; a verified one that another worker stored meanwhile stays (same
        config, same result) and this one is dropped.
        """
        from dlsched import __version__

        self.runs_dir.mkdir(parents=True, exist_ok=True)
        final = self.run_dir(key)
        tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{key}-", dir=self.runs_dir))
        try:
            result.save(tmp)
            record = {"key": key, "config": config, "dlsched_version": __version__}
            (tmp / "config.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
            files = {}
            for path in sorted(tmp.iterdir()):
                fsync_path(path)
                stat = path.stat()
                files[path.name] = {
                    "size": stat.st_size,
                    "sha256": _sha256_of(path, stat),
                }
            manifest = {
                "key": key,
                "results_format": RESULTS_FORMAT,
                "dlsched_version": __version__,
                "files": files,
            }
            (tmp / RUN_MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            fsync_path(tmp / RUN_MANIFEST)
            fsync_path(tmp)
            if lease is not None:
                self.check_lease(lease)
            if final.exists() and not self.is_finished(key):
                self.discard_run(key)
            try:
                os.replace(tmp, final)
            except OSError:
                if not self.is_finished(key):
                    raise
            fsync_path(self.runs_dir)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        self.clear_failure(key)
        return final

    def discard_run(self, key: str) -> None:
        """Remove stored run `key` (damaged or stale): renamed aside at once, then deleted."""
        final = self.run_dir(key)
        if not final.exists() and not final.is_symlink():
            return
        aside = self.runs_dir / f"{_TMP_PREFIX}discarded-{key}-{secrets.token_hex(4)}"
        os.replace(final, aside)
        if aside.is_symlink():  # planted: remove the link, not the folder it names
            aside.unlink()
        else:
            shutil.rmtree(aside, ignore_errors=True)

    def record_failure(
        self,
        key: str,
        config: Mapping[str, Any],
        error: str,
        traceback_text: str,
        lease: WriterLease | None = None,
    ) -> None:
        """Record that run `key` failed, with its traceback (replacing an older record).

        With a `lease`, only while its driver holds the lock (`LeaseLostError` otherwise).
        """
        from dlsched import __version__

        if lease is not None:
            self.check_lease(lease)
        self.failures_dir.mkdir(parents=True, exist_ok=True)
        record = {
            "key": key,
            "config": config,
            "error": error,
            "traceback": traceback_text,
            "dlsched_version": __version__,
        }
        write_text(
            self.failures_dir / f"{key}.json", json.dumps(record, indent=2, sort_keys=True) + "\n"
        )

    def clear_failure(self, key: str) -> None:
        """Forget an older failure of run `key` (it has now finished)."""
        with contextlib.suppress(FileNotFoundError):
            (self.failures_dir / f"{key}.json").unlink()


# the package fsspec asks for, by URL scheme, where it is not the scheme itself
_FS_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs"}


def url_filesystem(url: str) -> tuple[Any, str]:
    """The fsspec file system of `url` and the path inside it; a clear `DlschedError`
    saying what to ``pip install`` when fsspec, or the package of that file system (s3fs
    for ``s3://``, gcsfs for ``gs://`` …), is not installed."""
    scheme = url.split("://", 1)[0].lower()
    try:
        fsspec: Any = importlib.import_module("fsspec.core")  # untyped: Any on purpose
    except ImportError:
        raise DlschedError(
            f"{url}: a URL needs fsspec (and the package of its file system, e.g. s3fs): "
            "pip install fsspec"
        ) from None
    try:
        fs, path = fsspec.url_to_fs(url)
    except ImportError as exc:  # fsspec knows the scheme; its package is missing
        package = _FS_PACKAGES.get(scheme)
        hint = f"pip install {package}" if package else f"install fsspec's package for {scheme}://"
        raise DlschedError(
            f"{url}: {scheme}:// needs a package that is not installed ({_one_line(exc)}): {hint}"
        ) from None
    return fs, str(path)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def is_remote(root: str | os.PathLike[str]) -> bool:
    """Whether `root` is an fsspec URL of another file system than this machine's."""
    text = os.fspath(root)
    return "://" in text and not text.startswith("file://")


def cell_file(labels: Mapping[str, Any]) -> str:
    """The dataset file name of one grid cell: its run key and a digest of its labels."""
    text = json.dumps(dict(labels), sort_keys=True, separators=(",", ":"), default=str)
    return f"{labels['key']}-{hashlib.sha256(text.encode()).hexdigest()[:8]}.parquet"


def _arrow_type(value: Any) -> Any:
    import pyarrow as pa

    if isinstance(value, bool):
        return pa.bool_()
    if isinstance(value, int):
        return pa.int64()
    if isinstance(value, float):
        return pa.float64()
    return pa.string()


def _labelled(labels: Mapping[str, Any], frame: Any) -> Any:
    """`frame` as a pyarrow table with the label columns first (constant, so they cost
    almost nothing in parquet)."""
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    # a column that is null in this run (no model names) must not read as type null, or a
    # dataset whose first file has it cannot read the files where it holds text
    for i, column in enumerate(table.schema):
        if pa.types.is_null(column.type):
            table = table.set_column(i, column.name, table.column(i).cast(pa.string()))
    clash = [name for name in labels if name in table.column_names]
    if clash:
        raise DlschedError(f"the dataset label column {clash[0]!r} is also a column of a run")
    columns = [pa.array([value] * table.num_rows, _arrow_type(value)) for value in labels.values()]
    return pa.Table.from_arrays(
        columns + table.columns,
        schema=pa.schema(
            [pa.field(name, col.type) for name, col in zip(labels, columns, strict=True)]
            + list(table.schema),
            metadata=table.schema.metadata,
        ),
    )


def _summary_table(labels: Mapping[str, Any], summary: Mapping[str, Any]) -> Any:
    """One row: the cell's labels and its run's summary metrics (all float64, so every file
    of the table has the same schema whatever is null in it)."""
    import pyarrow as pa

    names = list(labels) + list(summary)
    arrays = [pa.array([value], _arrow_type(value)) for value in labels.values()] + [
        pa.array([None if value is None else float(value)], pa.float64())
        for value in summary.values()
    ]
    return pa.Table.from_arrays(arrays, names=names)


class FsspecResultsStore(ResultsStore):
    """A results store at an fsspec URL (an object store, or ``memory://`` in tests).

    The layout is that of a local store; the module docstring says what is guaranteed where
    there is no rename and no lock. `root` and the paths the methods return are paths inside
    `fs`, never on this machine's disk; `url` is what to hand to another process.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._url = os.fspath(root).rstrip("/")
        self.fs, path = url_filesystem(self._url)
        super().__init__(path)

    @property
    def url(self) -> str:
        """The fsspec URL of the store."""
        return self._url

    def _full(self, path: Path) -> str:
        """`path` as a URL, for messages and for readers outside this class."""
        return self.fs.unstrip_protocol(str(path))

    # ---- file primitives ------------------------------------------------------------------
    def _is_dir(self, path: Path) -> bool:
        return bool(self.fs.isdir(str(path)))

    def _is_file(self, path: Path) -> bool:
        return bool(self.fs.isfile(str(path)))

    def _read_text(self, path: Path) -> str:
        data: bytes = self.fs.cat_file(str(path))
        return data.decode()

    def _names(self, folder: Path) -> list[str]:
        try:
            entries = self.fs.ls(str(folder), detail=False)
        except FileNotFoundError:
            return []
        return [str(entry).rstrip("/").rsplit("/", 1)[-1] for entry in entries]

    def _size_and_sha256(self, path: Path) -> tuple[int, Callable[[], str]]:
        info = self.fs.info(str(path))
        if info.get("type") == "directory":
            raise FileNotFoundError(str(path))
        size = int(info["size"])
        version = _object_version(info)
        return size, lambda: _remote_sha256(self.fs, str(path), size, str(version))

    def _unchanged(self, path: Path, expected: Mapping[str, Any]) -> bool:
        # an object store's ETag changes whenever the object is written again, so a match
        # spares downloading every stored run to verify it on each `dlsched run`
        recorded = expected.get("etag")
        return bool(recorded) and recorded == _etag(self.fs.info(str(path)))

    def _read_parquet(self, path: Path, columns: Sequence[str] | None = None) -> Any:
        import pandas as pd

        with self.fs.open(str(path), "rb") as handle:
            return pd.read_parquet(handle, columns=None if columns is None else list(columns))

    def _write_table(self, path: Path, table: Any) -> None:
        import pyarrow.parquet as pq

        # one object put: readers see the whole file or none of it
        with self.fs.open(str(path), "wb") as handle:
            pq.write_table(table, handle)

    def _put_text(self, path: Path, text: str) -> None:
        self.fs.pipe_file(str(path), text.encode())

    def _remove(self, path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(str(path), recursive=True)

    # ---- reading --------------------------------------------------------------------------
    def _without_manifest(self, folder: Path) -> RunCheck:
        # no format-1 stores exist on object stores: no manifest is an unfinished write
        return RunCheck(
            "damaged", f"{self._full(folder)}: its writing did not finish (no {RUN_MANIFEST})"
        )

    def load_run(self, key: str) -> SimulationResult:
        """The stored result of run `key`."""
        folder = self.run_dir(key)
        return SimulationResult(
            jobs=self.read_table(key, "jobs"),
            events=self.read_table(key, "events"),
            timeline=self.read_table(key, "timeline"),
            meta=json.loads(self._read_text(folder / "meta.json")),
        )

    def dataset_path(self, table: str) -> str:
        """The URL of one dataset table (with `fs`, for `pyarrow.dataset`; or for DuckDB)."""
        return self._full(Path(super().dataset_path(table)))

    # ---- writing --------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[WriterLease]:
        """Hold the store for one writer, as far as an object store allows (module docstring)."""
        path = self.root / _LOCK_FILE
        host, pid = socket.gethostname(), os.getpid()
        lease = WriterLease(f"{host}:{pid}:{secrets.token_hex(8)}", host, pid)
        try:
            holder = self._read_text(path).strip()
        except FileNotFoundError:
            holder = ""
        if holder and not _dead_here(holder):
            raise StoreBusyError(
                f"{self._full(path)} says that `dlsched run` {holder.rsplit(':', 1)[0]} "
                "(host:pid) is writing to these results; wait for it, use another --out, or "
                "delete that file if no such run is alive"
            )
        self._put_text(path, lease.token)
        if self._read_text(path).strip() != lease.token:  # another driver wrote meanwhile
            raise StoreBusyError(
                f"{self._full(path)}: another `dlsched run` took these results at the same "
                "moment; wait for it or use another --out"
            )
        try:
            yield lease
        finally:
            with contextlib.suppress(OSError):
                if self._read_text(path).strip() == lease.token:
                    self._remove(path)

    def check_lease(self, lease: WriterLease) -> None:
        """Raise `LeaseLostError` unless the lock object still holds `lease`'s token."""
        try:
            token = self._read_text(self.root / _LOCK_FILE).strip()
        except OSError:
            token = ""
        if token != lease.token:
            raise LeaseLostError(
                f"{self.url}: the `dlsched run` that started this run (pid {lease.pid} on "
                f"{lease.host}) no longer holds these results; nothing was stored"
            )

    def clean_partial(self) -> int:
        """Remove leftovers of interrupted writes (unfinished runs are found by `check_run`)."""
        leftovers = [
            folder / name
            for folder in (self.root, self.runs_dir, self.failures_dir)
            for name in self._names(folder)
            if name.startswith(_TMP_PREFIX)
        ]
        for path in leftovers:
            self._remove(path)
        return len(leftovers)

    def write_manifest(self, manifest: Mapping[str, Any], text: str) -> None:
        """Record the grid (``experiment.json``) and the experiment file (``experiment.yaml``)."""
        self._put_text(
            self.root / "experiment.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        )
        self._put_text(self.root / "experiment.yaml", text)

    def write_run(
        self,
        key: str,
        config: Mapping[str, Any],
        result: SimulationResult,
        lease: WriterLease | None = None,
    ) -> Path:
        """Store a finished run: its files in place, then its manifest (the commit).

        With a `lease`, the manifest is written only while its driver holds the lock. A run
        another worker committed meanwhile is kept and this one dropped.
        """
        from dlsched import __version__

        if self.is_finished(key):
            return self.run_dir(key)
        final = self.run_dir(key)
        self._remove(final)  # an unfinished or stale copy
        with tempfile.TemporaryDirectory(prefix=f"{_TMP_PREFIX}{key}-") as scratch:
            local = Path(scratch)
            result.save(local)
            record = {"key": key, "config": config, "dlsched_version": __version__}
            (local / "config.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
            files = {}
            for path in sorted(local.iterdir()):
                stat = path.stat()
                files[path.name] = {"size": stat.st_size, "sha256": _sha256_of(path, stat)}
                self.fs.put_file(str(path), str(final / path.name))
                etag = _etag(self.fs.info(str(final / path.name)))
                if etag:
                    files[path.name]["etag"] = etag
        manifest = {
            "key": key,
            "results_format": RESULTS_FORMAT,
            "dlsched_version": __version__,
            "files": files,
        }
        if lease is not None:
            self.check_lease(lease)
        self._put_text(final / RUN_MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        self.clear_failure(key)
        return final

    def discard_run(self, key: str) -> None:
        """Remove stored run `key` (damaged or stale)."""
        self._remove(self.run_dir(key))

    def record_failure(
        self,
        key: str,
        config: Mapping[str, Any],
        error: str,
        traceback_text: str,
        lease: WriterLease | None = None,
    ) -> None:
        """Record that run `key` failed, with its traceback (replacing an older record)."""
        from dlsched import __version__

        if lease is not None:
            self.check_lease(lease)
        record = {
            "key": key,
            "config": config,
            "error": error,
            "traceback": traceback_text,
            "dlsched_version": __version__,
        }
        self._put_text(
            self.failures_dir / f"{key}.json", json.dumps(record, indent=2, sort_keys=True) + "\n"
        )

    def clear_failure(self, key: str) -> None:
        """Forget an older failure of run `key` (it has now finished)."""
        self._remove(self.failures_dir / f"{key}.json")


def _dead_here(token: str) -> bool:
    """Whether a lock token (``host:pid:nonce``) names a process of this host that has ended."""
    host, _, rest = token.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _etag(info: Mapping[str, Any]) -> str | None:
    """The entity tag an object store gives an object (S3, GCS, Azure), if any."""
    value = info.get("ETag") or info.get("etag")
    return str(value) if value else None


def _object_version(info: Mapping[str, Any]) -> Any:
    """What changes when an object is written again: its ETag, else its modification time."""
    return _etag(info) or info.get("mtime") or info.get("LastModified") or info.get("created")


@lru_cache(maxsize=4096)
def _remote_sha256(fs: Any, path: str, size: int, version: str) -> str:
    digest = hashlib.sha256()
    with fs.open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _rewrite(handle: Any, text: str) -> None:
    """Replace the whole content of an open (``a+``) file by `text`, durably."""
    handle.seek(0)
    handle.truncate()
    handle.write(text)
    handle.flush()
    os.fsync(handle.fileno())


def _sha256_of(path: Path, stat: os.stat_result) -> str:
    """The SHA-256 of a file (hex), cached while its inode, size and times stay."""
    return _file_sha256(str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


@lru_cache(maxsize=4096)
def _file_sha256(path: str, inode: int, size: int, mtime_ns: int, ctime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
