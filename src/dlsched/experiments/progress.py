"""The grid's progress bar, moved by the runs' own progress, not only by whole runs.

A grid of long runs used to show "14/24" for the seven minutes each run took, with an ETA
that jumped whenever a run ended. Now each run reports how many of its jobs have finished
(`dlsched.engine.progress.ProgressSink`, at most every 0.5 s) and the bar counts fractional
runs: ``14.6/24 runs``, with tqdm's smoothed rate and ETA over those fractions.

Where the runs go:

- in this process: the sink adds to the bar directly;
- on worker processes or Dask workers: each worker writes ``finished total`` for its run into
  a small file ``<folder>/<run key>`` (a temporary file renamed over it, so a reader never
  sees half a line); a thread of the driver reads the folder twice a second. The folder is a
  fresh temporary folder on this machine, or, for a Dask cluster elsewhere, ``.progress/``
  inside a local results store (Dask workers already need the store on a shared file
  system). With neither (a remote store and remote workers), the bar counts whole runs.

Only the bar reads these numbers: results never depend on them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from dlsched.engine.progress import ProgressSink

#: Seconds between two reads of the progress folder by the driver.
POLL_S = 0.5

BAR_FORMAT = "{l_bar}{bar}| {n:.1f}/{total_fmt} runs [{elapsed}<{remaining}{postfix}]"


def folder_writer(folder: str, key: str) -> ProgressSink:
    """A sink that writes a run's ``finished total`` into ``folder/key`` (run in a worker)."""
    target = os.path.join(folder, key)

    def write(finished: int, total: int) -> None:
        try:
            handle, temporary = tempfile.mkstemp(prefix=".w-", dir=folder)
            with os.fdopen(handle, "w") as out:
                out.write(f"{finished} {total}\n")
            os.replace(temporary, target)
        except OSError:  # progress is a courtesy: a full disk must not fail the run
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(temporary)

    return write


def read_fraction(path: Path) -> float:
    """The fraction of its jobs a run has finished, from its progress file (0 if unreadable)."""
    try:
        finished, total = path.read_text().split()
        return min(1.0, max(0.0, int(finished) / int(total))) if int(total) > 0 else 0.0
    except (OSError, ValueError):
        return 0.0


class GridProgress:
    """Fractional progress of a grid's runs on a tqdm `bar` (see the module docstring).

    `done(key)` counts a run as whole; `sink(key)` is an in-process run's sink; `folder` is
    where workers write (None: no within-run progress from workers)."""

    def __init__(self, bar: Any, folder: Path | None, owns_folder: bool) -> None:
        self.bar = bar
        self.folder = folder
        self._owns_folder = owns_folder
        self._lock = threading.Lock()
        self._whole = float(bar.n)
        self._partial: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def open(cls, bar: Any, shared_root: Path | None) -> GridProgress:
        """A grid's progress on `bar`; workers write into a temporary folder on this machine,
        or into ``shared_root/.progress`` when given (a Dask cluster elsewhere). A disabled
        bar gets no folder and no thread."""
        if bar.disable:
            return cls(bar, None, owns_folder=False)
        if shared_root is None:
            return cls(bar, Path(tempfile.mkdtemp(prefix="dlsched-progress-")), True)
        folder = shared_root / ".progress"
        try:
            if folder.is_symlink() or folder.is_file():
                folder.unlink()
            elif folder.is_dir():
                shutil.rmtree(folder)
            folder.mkdir()
        except OSError:
            return cls(bar, None, owns_folder=False)
        return cls(bar, folder, owns_folder=True)

    def worker_folder(self) -> str | None:
        """The folder workers write into (a string, to send to a worker), or None."""
        return None if self.folder is None else str(self.folder)

    def sink(self, key: str) -> ProgressSink | None:
        """A sink for a run simulated in this process, or None when the bar is off."""
        if self.bar.disable:
            return None

        def tell(finished: int, total: int) -> None:
            with self._lock:
                self._partial[key] = finished / total if total > 0 else 0.0
                self._show()

        return tell

    def done(self, key: str) -> None:
        """Count run `key` as whole (finished, failed or found stored)."""
        with self._lock:
            self._whole += 1
            self._partial.pop(key, None)
            if self.folder is not None:
                with contextlib.suppress(OSError):
                    (self.folder / key).unlink()
            self._show()

    def start(self) -> None:
        """Read the workers' files twice a second until `close()`."""
        if self.folder is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._poll, name="dlsched-progress", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop reading, remove the folder this grid made, and close the bar."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.folder is not None and self._owns_folder:
            shutil.rmtree(self.folder, ignore_errors=True)
        self.bar.close()

    def _poll(self) -> None:
        folder = self.folder
        assert folder is not None
        while not self._stop.wait(POLL_S):
            with self._lock:
                for entry in _entries(folder):
                    self._partial[entry.name] = read_fraction(entry)
                self._show()

    def _show(self) -> None:
        """Set the bar to whole runs plus the running runs' fractions (lock held)."""
        self.bar.n = min(float(self.bar.total), self._whole + sum(self._partial.values()))
        self.bar.refresh()


def _entries(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if not p.name.startswith(".")]
    except OSError:
        return []
