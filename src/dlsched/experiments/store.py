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

A run directory appears by one ``os.replace`` of a complete temporary directory, so a crash,
a killed worker or Ctrl-C leaves either a finished run or a ``.tmp-`` leftover, which the next
``dlsched run`` removes. Its ``manifest.json``, written last, records the size and SHA-256 of
every other file, the `RESULTS_FORMAT` and the dlsched version: a run is finished exactly when
its manifest verifies and names this format and version (`ResultsStore.check_run`). A worker
stores a run only while the driver that started it still holds the store's lock
(`WriterLease`), so a worker that outlives a killed driver never writes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from dlsched.errors import DlschedError
from dlsched.metrics import SimulationResult

RESULTS_FORMAT = 2
"""The version of what a stored run means. Bump it whenever a change makes the same run
config give a different result (simulation semantics, a summary field's definition, the file
layout of a run): every stored run of another format is then re-run, with a message.
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
_TMP_PREFIX = ".tmp-"
_LOCK_FILE = ".lock"


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
    """One experiment's results directory (see the module docstring for the layout)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.runs_dir = self.root / "runs"
        self.failures_dir = self.root / "failures"

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.root)!r})"

    # ---- reading ----------------------------------------------------------------------
    def run_dir(self, key: str) -> Path:
        """Where the finished run `key` lives (whether or not it exists yet)."""
        return self.runs_dir / key

    def is_finished(self, key: str) -> bool:
        """Whether run `key` is stored, its manifest verifies and names this format and version."""
        return self.check_run(key).ok

    def check_run(self, key: str) -> RunCheck:
        """Verify stored run `key` against its manifest (see `RunCheck` for the answers)."""
        from dlsched import __version__

        folder = self.run_dir(key)
        if not folder.is_dir():
            return RunCheck("missing")
        try:
            manifest = json.loads((folder / RUN_MANIFEST).read_text())
        except FileNotFoundError:
            if (folder / "config.json").is_file():
                return RunCheck(
                    "legacy",
                    "stored without a manifest (results format 1), so their files cannot be "
                    "verified",
                )
            return RunCheck("damaged", f"{folder}: no {RUN_MANIFEST} and no config.json")
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
            path = folder / name
            try:
                stat = path.stat()
            except OSError:
                return RunCheck("damaged", f"{name} is missing")
            if not isinstance(expected, dict) or expected.get("size") != stat.st_size:
                return RunCheck("damaged", f"{name} has changed size")
            if expected.get("sha256") != _sha256_of(path, stat):
                return RunCheck("damaged", f"{name} does not match its SHA-256")
        return RunCheck("ok")

    def finished_keys(self) -> list[str]:
        """Keys of every finished (verified, current) run in the store, sorted."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(
            p.name
            for p in self.runs_dir.iterdir()
            if not p.name.startswith(".") and p.is_dir() and self.is_finished(p.name)
        )

    def load_run(self, key: str) -> SimulationResult:
        """The stored result of run `key`."""
        return SimulationResult.load(self.run_dir(key))

    def run_summary(self, key: str) -> dict[str, Any]:
        """The stored ``summary.json`` of run `key`."""
        return json.loads((self.run_dir(key) / "summary.json").read_text())

    def run_config(self, key: str) -> dict[str, Any]:
        """The resolved config of run `key`."""
        return json.loads((self.run_dir(key) / "config.json").read_text())["config"]

    def failures(self) -> dict[str, dict[str, Any]]:
        """Failed runs: key → ``{key, config, error, traceback}``."""
        if not self.failures_dir.is_dir():
            return {}
        return {p.stem: json.loads(p.read_text()) for p in sorted(self.failures_dir.glob("*.json"))}

    def read_manifest(self) -> dict[str, Any]:
        """The grid of the experiment last run into this store."""
        path = self.root / "experiment.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"{self.root}: not a results directory (no experiment.json); "
                "give the directory that `dlsched run` wrote"
            )
        return json.loads(path.read_text())

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
        # "a+", not "w": truncating before the lock is ours would erase the holder's token
        with open(self.root / _LOCK_FILE, "a+") as handle:
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
        with open(path, "a+") as handle:
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
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        return len(leftovers)

    def write_manifest(self, manifest: Mapping[str, Any], text: str) -> None:
        """Record the grid (``experiment.json``) and the experiment file (``experiment.yaml``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        _write_atomic(
            self.root / "experiment.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        )
        _write_atomic(self.root / "experiment.yaml", text)

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
                _fsync(path)
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
            _fsync(tmp / RUN_MANIFEST)
            _fsync(tmp)
            if lease is not None:
                self.check_lease(lease)
            if final.exists() and not self.is_finished(key):
                self.discard_run(key)
            try:
                os.replace(tmp, final)
            except OSError:
                if not self.is_finished(key):
                    raise
            _fsync(self.runs_dir)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        self.clear_failure(key)
        return final

    def discard_run(self, key: str) -> None:
        """Remove stored run `key` (damaged or stale): renamed aside at once, then deleted."""
        final = self.run_dir(key)
        if not final.exists():
            return
        aside = self.runs_dir / f"{_TMP_PREFIX}discarded-{key}-{secrets.token_hex(4)}"
        os.replace(final, aside)
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
        _write_atomic(
            self.failures_dir / f"{key}.json", json.dumps(record, indent=2, sort_keys=True) + "\n"
        )

    def clear_failure(self, key: str) -> None:
        """Forget an older failure of run `key` (it has now finished)."""
        with contextlib.suppress(FileNotFoundError):
            (self.failures_dir / f"{key}.json").unlink()


def _write_atomic(path: Path, text: str) -> None:
    handle = tempfile.NamedTemporaryFile(
        "w", dir=path.parent, prefix=f"{_TMP_PREFIX}{path.name}-", delete=False
    )
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(handle.name)


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


def _fsync(path: Path) -> None:
    """Flush a file or directory to disk (best effort where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
