"""The results store: one directory per experiment, one sub-directory per finished run.

::

    RESULTS/
      experiment.json        the grid: every cell's labels and run key (rewritten by each run)
      experiment.yaml        the experiment file as it was last run
      runs/<key>/            a finished run: config.json, summary.json, meta.json and the
                             jobs / events / timeline parquet files
      runs/.tmp-<key>-*/     a run being written (never mistaken for a finished one)
      failures/<key>.json    a failed run: its config, the error and the traceback

A run directory appears by one ``os.replace`` of a complete temporary directory, so a crash,
a killed worker or Ctrl-C leaves either a finished run or a ``.tmp-`` leftover, which the next
``dlsched run`` removes. A run is finished exactly when ``runs/<key>/config.json`` exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from dlsched.api import __version__
from dlsched.errors import DlschedError
from dlsched.metrics import SimulationResult

RUN_FILES = (
    "config.json",
    "summary.json",
    "meta.json",
    "jobs.parquet",
    "events.parquet",
    "timeline.parquet",
)
_TMP_PREFIX = ".tmp-"


class StoreBusyError(DlschedError):
    """Another `dlsched run` is writing to the same results directory."""


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
        """Whether run `key` finished and was stored."""
        return (self.run_dir(key) / "config.json").is_file()

    def finished_keys(self) -> list[str]:
        """Keys of every finished run in the store, sorted."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(
            p.name
            for p in self.runs_dir.iterdir()
            if not p.name.startswith(".") and (p / "config.json").is_file()
        )

    def load_run(self, key: str) -> SimulationResult:
        """The stored result of run `key`."""
        return SimulationResult.load(self.run_dir(key))

    def run_summary(self, key: str) -> dict[str, Any]:
        """The stored ``summary.json`` of run `key`."""
        return json.loads((self.run_dir(key) / "summary.json").read_text())  # type: ignore[no-any-return]

    def run_config(self, key: str) -> dict[str, Any]:
        """The resolved config of run `key`."""
        return json.loads((self.run_dir(key) / "config.json").read_text())["config"]  # type: ignore[no-any-return]

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
        return json.loads(path.read_text())  # type: ignore[no-any-return]

    # ---- writing ----------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the store for one writer; a second `dlsched run` on it fails at once."""
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # not POSIX: no advisory locks; one writer is on the user
            yield
            return
        with open(self.root / ".lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise StoreBusyError(
                    f"{self.root}: another `dlsched run` is writing to this "
                    "results directory; wait for it or use another --out"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

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

    def write_run(self, key: str, config: Mapping[str, Any], result: SimulationResult) -> Path:
        """Store a finished run atomically; return its directory.

        If another worker stored the same run meanwhile, its copy stays (same config, same
        result) and this one is dropped.
        """
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        final = self.run_dir(key)
        tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{key}-", dir=self.runs_dir))
        try:
            result.save(tmp)
            record = {"key": key, "config": config, "dlsched_version": __version__}
            (tmp / "config.json").write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
            for name in RUN_FILES:
                _fsync(tmp / name)
            _fsync(tmp)
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

    def record_failure(
        self, key: str, config: Mapping[str, Any], error: str, traceback_text: str
    ) -> None:
        """Record that run `key` failed, with its traceback (replacing an older record)."""
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
