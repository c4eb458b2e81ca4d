"""Trace loading: every supported file format becomes one canonical ``Workload``.

``load_trace("traces/tiresias_60_job.csv")`` detects the format, validates every row and
returns the job table sorted by submit time, with its provenance. The canonical columns
are documented in ``dlsched.traces.schema``; transforms (time window, sampling, model and
deadline assignment, ...) are in ``dlsched.traces.transforms``.

Formats (``LOADERS`` keys): ``canonical`` (CSV/parquet), ``tiresias``, ``gavel``,
``philly`` (raw ``cluster_job_log`` JSON), ``philly-pollux``, ``alibaba-pai-2020`` (a
directory of tables, or the job table), ``alibaba-gpu-2023`` (openb pods), ``helios``
(``cluster_log.csv``), ``sia-pollux``, ``chronus``, ``hydra``, ``itp`` (Microsoft's raw ITP
cluster tables, 2021), ``elasticflow`` (the ElasticFlow artifact's simulation traces).
"""

from __future__ import annotations

import errno
import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.errors import TraceError, did_you_mean
from dlsched.registry import Registry

if TYPE_CHECKING:
    from dlsched.traces import (  # noqa: F401  (sub-modules, re-exported as attributes)
        alibaba_gpu,
        alibaba_pai,
        canonical,
        chronus,
        elasticflow,
        gavel,
        helios,
        hydra,
        itp,
        parsing,
        philly,
        philly_pollux,
        reading,
        schema,
        sia_pollux,
        tiresias,
        workload,
    )
    from dlsched.traces.schema import (
        CANONICAL_COLUMNS,
        DURATION_PREFIX,
        constraint_types,
        duration_column,
        duration_columns,
        validate_jobs,
    )
    from dlsched.traces.workload import Workload

__all__ = [
    "CANONICAL_COLUMNS",
    "DURATION_PREFIX",
    "LOADERS",
    "Workload",
    "constraint_types",
    "detect_format",
    "duration_column",
    "duration_columns",
    "load_trace",
    "validate_jobs",
]

Loader = Callable[..., "Workload"]

# Format name → the module that reads it (its `FORMAT` and `load`). Declared by name so that
# the formats are known (`dlsched --help`, `format=` checks) without importing pandas and every
# loader: a loader module is imported when its format is first used.
_BUILTIN_FORMATS = {
    "canonical": "canonical",
    "tiresias": "tiresias",
    "gavel": "gavel",
    "philly": "philly",
    "philly-pollux": "philly_pollux",
    "alibaba-pai-2020": "alibaba_pai",
    "alibaba-gpu-2023": "alibaba_gpu",
    "helios": "helios",
    "sia-pollux": "sia_pollux",
    "chronus": "chronus",
    "hydra": "hydra",
    "itp": "itp",
    "elasticflow": "elasticflow",
}

LOADERS: Registry[Loader] = Registry("trace format", entry_point_group="dlsched.trace_formats")
"""Format name → ``load(path, *, lenient=False, **options) -> Workload``. Plugins add formats
under the ``dlsched.trace_formats`` entry-point group; they are used with ``format=<name>``
(``"auto"`` detects built-in formats only)."""
for _format, _module in _BUILTIN_FORMATS.items():
    LOADERS.add_lazy(_format, f"{__name__}.{_module}:load")
del _format, _module

# Names this package re-exports → the module that defines them; imported on first use.
_LAZY_NAMES = {
    "CANONICAL_COLUMNS": "schema",
    "DURATION_PREFIX": "schema",
    "constraint_types": "schema",
    "duration_column": "schema",
    "duration_columns": "schema",
    "validate_jobs": "schema",
    "Workload": "workload",
}

# Sub-modules that importing this package used to import (and so made attributes).
_LAZY_SUBMODULES = frozenset(
    {*_BUILTIN_FORMATS.values(), "parsing", "reading", "schema", "workload"}
)


def __getattr__(name: str) -> Any:
    """Import a re-exported name or a sub-module on its first use."""
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    elif name in _LAZY_SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The package's attributes, the ones not imported yet included."""
    return sorted({*globals(), *_LAZY_NAMES, *_LAZY_SUBMODULES})


_GAVEL_SUFFIXES = (".trace", ".trace.gz")

# CSV headers, checked in this order (the first match wins): (format, columns it must have,
# columns it must not have). Chronus' header contains Tiresias', so it is checked first;
# ElasticFlow's has Tiresias' num_gpu and model_name, so it is checked before Tiresias too.
_HEADERS: tuple[tuple[str, frozenset[str], frozenset[str]], ...] = (
    ("canonical", frozenset({"job_id", "submit_time", "num_gpus"}), frozenset()),
    ("chronus", frozenset({"job_id", "num_gpu", "submit_time", "expect_time_list"}), frozenset()),
    (
        "elasticflow",
        frozenset({"job_id", "num_gpu", "model_name", "batch_size", "iteration"}),
        frozenset(),
    ),
    (
        "elasticflow",
        frozenset({"job_id", "num_gpu", "model_name", "batch_size", "num_iteration"}),
        frozenset(),
    ),
    ("tiresias", frozenset({"num_gpu", "model_name"}), frozenset({"expect_time_list"})),
    ("philly-pollux", frozenset({"timestamp", "duration", "num_gpus", "cluster"}), frozenset()),
    ("alibaba-gpu-2023", frozenset({"name", "num_gpu", "gpu_milli"}), frozenset()),
    ("helios", frozenset({"job_id", "vc", "gpu_num", "submit_time", "duration"}), frozenset()),
    ("sia-pollux", frozenset({"name", "time", "application", "num_replicas"}), frozenset()),
    ("hydra", frozenset({"job_name", "norm_job_submit_time", "ddl"}), frozenset()),
    (
        "itp",
        frozenset({"job_id", "submission_time", "duration", "num_gpu"}),
        frozenset({"model_name"}),
    ),
)


def load_trace(
    path: str | os.PathLike[str],
    format: str = "auto",
    lenient: bool = False,
    **options: Any,
) -> Workload:
    """Load a trace file (or, for multi-table formats, a directory) as a ``Workload``.

    ``format`` is ``"auto"`` (see ``detect_format``) or a key of ``LOADERS``. Bad rows raise
    ``TraceError`` naming the file, the row and the field; with ``lenient=True`` they are
    skipped and listed, with their reasons, in ``provenance["skipped"]``. Rows the format
    marks as not replayable (jobs that never ran; CPU-only jobs, except where the loader is
    told to keep them, as ``alibaba-openb-2023``'s ``cpu_only=True``) are dropped in either
    mode and counted in ``provenance["excluded"]``. A canonical trace's rows with
    ``num_gpus`` 0 and a CPU or memory demand are jobs without GPUs, kept. ``options`` go to
    the loader (for example ``task_table=`` for ``alibaba-pai-2020``).
    """
    if format != "auto" and format not in LOADERS:
        known = ["auto", *LOADERS]
        raise TraceError(
            f"unknown trace format {format!r}{did_you_mean(format, known)}; "
            f"known formats: {', '.join(known)}",
            path=str(path),
        )
    _check_path(path, directory_ok=format in ("auto", "alibaba-pai-2020"))
    name = detect_format(path) if format == "auto" else format
    return LOADERS.get(name)(path, lenient=lenient, **options)


def detect_format(path: str | os.PathLike[str]) -> str:
    """Guess a trace's format from its name and first bytes.

    In order: a directory holding ``pai_job_table.*`` → ``alibaba-pai-2020``; a name
    ending ``.parquet``/``.pq`` → ``canonical``; ``.trace``/``.trace.gz`` → ``gavel``; a
    ``pai_{job,task,instance}_table`` file → ``alibaba-pai-2020``; content starting with
    ``[`` or ``{`` and naming ``submitted_time`` or ``attempts`` → ``philly``; otherwise a
    CSV (gzipped or not) whose header has the columns of one of the CSV formats (see the
    error message for the list). Pass ``format=`` to skip detection.
    """
    from dlsched.traces import alibaba_pai, canonical
    from dlsched.traces.reading import read_csv_header, read_head

    _check_path(path, directory_ok=True)
    tried: list[str] = []
    given = Path(path)
    tried.append("alibaba-pai-2020 (a directory holding pai_job_table.csv, .csv.gz or .tar.gz)")
    if given.is_dir():
        if alibaba_pai.find_table(given, "pai_job_table") is not None:
            return "alibaba-pai-2020"
        raise TraceError(
            "cannot tell the trace format of a directory; tried "
            + "; ".join(tried)
            + "; pass a file, or format=...",
            path=str(path),
        )
    tried.append("canonical parquet (name ending .parquet or .pq)")
    if canonical.is_parquet(path):
        return "canonical"
    tried.append("gavel (name ending .trace or .trace.gz)")
    if given.name.lower().endswith(_GAVEL_SUFFIXES):
        return "gavel"
    tried.append("alibaba-pai-2020 (a file named pai_job_table.csv, .csv.gz or .tar.gz)")
    if alibaba_pai.is_pai_table(path):
        return "alibaba-pai-2020"
    head = read_head(path)
    tried.append("philly (JSON whose jobs have 'submitted_time' and 'attempts')")
    if _looks_like_philly_json(head):
        return "philly"
    header = set(read_csv_header(path))
    for fmt, needed, forbidden in _HEADERS:
        tried.append(f"{fmt} (CSV header with {', '.join(sorted(needed))})")
        if needed <= header and not forbidden & header:
            return fmt
    shown = ", ".join(sorted(header))[:200]
    raise TraceError(
        f"cannot tell the trace format (header: {shown}); tried "
        + "; ".join(tried)
        + "; pass format=... to choose one",
        path=str(path),
    )


def _looks_like_philly_json(head: bytes) -> bool:
    text = head.lstrip()
    if text[:1] not in (b"[", b"{"):
        return False
    if b'"submitted_time"' in head or b'"attempts"' in head:
        return True
    try:  # a short file: the whole of it is here
        data = json.loads(head)
    except (ValueError, UnicodeDecodeError):
        return False
    return data == [] or (
        isinstance(data, list) and isinstance(data[0], dict) and "submitted_time" in data[0]
    )


def _check_path(path: str | os.PathLike[str], *, directory_ok: bool) -> None:
    if not Path(path).exists():
        raise FileNotFoundError(errno.ENOENT, "trace file not found", str(path))
    if Path(path).is_dir() and not directory_ok:
        raise TraceError("is a directory; this format reads one file", path=str(path))
    if not Path(path).is_file() and not Path(path).is_dir():
        raise TraceError("is not a file", path=str(path))
