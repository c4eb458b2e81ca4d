"""Trace loading: every supported file format becomes one canonical ``Workload``.

``load_trace("traces/tiresias_60_job.csv")`` detects the format, validates every row and
returns the job table sorted by submit time, with its provenance.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

from dlsched.errors import TraceError
from dlsched.traces import canonical, gavel, tiresias
from dlsched.traces.schema import CANONICAL_COLUMNS, validate_jobs
from dlsched.traces.workload import Workload

__all__ = [
    "CANONICAL_COLUMNS",
    "LOADERS",
    "Workload",
    "detect_format",
    "load_trace",
    "validate_jobs",
]

Loader = Callable[..., Workload]

LOADERS: dict[str, Loader] = {
    "canonical": canonical.load,
    "tiresias": tiresias.load,
    "gavel": gavel.load,
}
"""Format name → ``load(path, *, lenient=False) -> Workload``."""

_GAVEL_SUFFIXES = (".trace", ".trace.gz")
_CANONICAL_HEADER = frozenset({"job_id", "submit_time", "num_gpus"})
_TIRESIAS_HEADER = frozenset({"num_gpu", "model_name"})


def load_trace(
    path: str | os.PathLike[str], format: str = "auto", lenient: bool = False
) -> Workload:
    """Load a trace file as a validated canonical ``Workload``.

    ``format`` is ``"auto"`` (see ``detect_format``) or a key of ``LOADERS``. Bad rows raise
    ``TraceError`` naming the file, the line and the field; with ``lenient=True`` they are
    skipped and listed, with their reasons, in ``provenance["skipped"]``.
    """
    if format != "auto" and format not in LOADERS:
        known = ", ".join(["auto", *sorted(LOADERS)])
        raise TraceError(f"unknown trace format {format!r}; known formats: {known}", path=str(path))
    _check_file(path)
    name = detect_format(path) if format == "auto" else format
    return LOADERS[name](path, lenient=lenient)


def detect_format(path: str | os.PathLike[str]) -> str:
    """Guess a trace's format from its name, and for CSV from its header.

    ``.parquet`` → canonical; ``.trace``/``.trace.gz`` → gavel; otherwise the file is read
    as CSV (gzip or not): a header with ``job_id``, ``submit_time`` and ``num_gpus`` →
    canonical, one with ``num_gpu`` and ``model_name`` → tiresias.
    """
    _check_file(path)
    lowered = Path(path).name.lower()
    if canonical.is_parquet(path):
        return "canonical"
    if lowered.endswith(_GAVEL_SUFFIXES):
        return "gavel"
    header = set(canonical.read_csv_header(path))
    if _CANONICAL_HEADER <= header:
        return "canonical"
    if _TIRESIAS_HEADER <= header:
        return "tiresias"
    raise TraceError(
        "cannot tell the trace format; tried canonical CSV (header with job_id, submit_time, "
        "num_gpus), tiresias CSV (header with num_gpu, model_name), canonical parquet "
        "(name ending .parquet) and gavel (name ending .trace or .trace.gz); pass "
        "format=... to choose one",
        path=str(path),
    )


def _check_file(path: str | os.PathLike[str]) -> None:
    if not Path(path).exists():
        raise FileNotFoundError(errno.ENOENT, "trace file not found", str(path))
    if not Path(path).is_file():
        raise TraceError("is not a file", path=str(path))
