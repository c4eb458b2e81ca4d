"""The canonical job schema, and the one place where job rows are validated.

Loaders only rename columns into the canonical names and add ``source_row``;
``validate_jobs`` checks every row, with vectorised masks so that cost grows with the
number of bad rows, not of good ones, and builds the ``Workload``.

Columns of ``Workload.jobs``, in order:

==================  =========  ==============================================================
column              dtype      meaning
==================  =========  ==============================================================
``job_id``          int64/str  unique id (int64 when every id is a plain integer)
``submit_time``     float64    seconds from the trace's time origin (>= 0, < ``MAX_TIME_S``)
``num_gpus``        int64      GPUs the job asks for (>= 0; 0: a job without GPUs, which asks
                               only for CPU and/or memory, ``cpu_milli``/``memory_mib`` > 0)
``duration``        float64    run time in seconds with ``num_gpus`` GPUs of ``gpu_type``
                               (NaN: not given)
``total_steps``     float64    training steps (NaN: not given)
``model``           str/None   model or job-type name
``user``            str/None   user (hashed in public traces)
``vc``              str/None   virtual cluster (tenant) the job was submitted to
``deadline``        float64    absolute deadline, seconds on the ``submit_time`` axis (NaN: none)
``priority``        float64    weight, > 0 (default 1.0)
``gpu_type``        str/None   the GPU type ``duration`` was measured on (None: unknown/any)
``status``          str/None   final status as traced (``Pass``, ``Failed``, ``COMPLETED``...)
``gpu_milli``       int64      share of the GPU in thousandths, 1..1000 (default 1000 =
                               whole GPUs); < 1000 only with ``num_gpus`` 1: the job asks for
                               part of one GPU and may share it. 0 for a job without GPUs
                               (given as 0 or left empty)
``gpu_constraint``  str/None   GPU types the job may run on, ``|``-separated (None: any)
``duration_<type>`` float64    optional, one per GPU type: run time in seconds on that type
                               with ``num_gpus`` GPUs (lower-case type key; NaN: not measured)
``min_gpus``,       float64    optional elastic bounds: a policy may run the job on any GPU
``max_gpus``                   count between them (``min_gpus <= num_gpus <= max_gpus``;
                               NaN: ``num_gpus``). Present only when the source has them.
``cpu_milli``       int64      optional: the whole job's CPU demand in thousandths of a core
                               (0: none). Given as ``cpu_milli`` or as ``num_cpus`` (cores).
``memory_mib``      int64      optional: the whole job's host-memory demand in MiB (0: none).
                               Given as ``memory_mib`` or as ``memory_gb`` (GB of 1,024 MiB).
                               Each is present only when the source has it; a demand in cores
                               or GB becomes a whole number of milli-CPUs or MiB, rounded up
                               where it is not one already.
``batch_schedule``  str/None   optional: the job's batch size by epoch, ``"E1:B1;E2:B2"``
                               (``E_i`` epochs > 0 at whole batch size ``B_i`` > 0; missing:
                               none), kept as text; its first batch size must be the one
                               the ``model`` name carries, if any (``dlsched.traces.
                               batch_schedule``; run by ``dlsched.perf.dynamic``)
passthrough         as read    any other source columns, untouched
``source_row``      int64      1-based line (CSV), row (parquet) or position (JSON) in the file
==================  =========  ==============================================================

A job needs work: ``duration``, ``total_steps`` or a ``duration_<type>``, but not both
``duration`` and ``total_steps`` (the engine would take the steps and silently ignore the
duration: such a row is refused). A workload in which no job has any, but every job names
its ``model``, is accepted as a whole (its work is implied by the model, as in the
Pollux/Sia workloads); ``provenance["work"]`` then says so.

Values are numbers as the file holds them, or refused, never reinterpreted:

- times and durations must be below ``MAX_TIME_S`` (2^43 s, about 8.8e12 s), where float64
  seconds still resolve 1 ms (``TIME_RESOLUTION_S``); a submit time in ms, µs or ns since
  the epoch is refused with how to rebase it, never silently rounded;
- a time-span (``timedelta``) column of seconds (``submit_time``, ``deadline``, the
  durations; parquet, or a DataFrame) becomes its seconds; a date-and-time ``submit_time``
  column becomes seconds since the earliest submission, recorded as
  ``provenance["time_origin"]`` (UTC for time-zone-aware columns), with a ``deadline``
  column of dates on the same axis; a time in any other number column is refused;
- true/false values (a bool column, ``True`` in a CSV) are not numbers; lists and other
  objects are neither numbers nor names; an empty text is no value.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import (
    infer_dtype,
    is_bool_dtype,
    is_complex_dtype,
    is_datetime64_any_dtype,
    is_float_dtype,
    is_integer_dtype,
    is_numeric_dtype,
    is_timedelta64_dtype,
)

from dlsched.errors import TraceError
from dlsched.traces.batch_schedule import COLUMN as SCHEDULE_COLUMN
from dlsched.traces.batch_schedule import schedule_problem
from dlsched.traces.workload import Workload

CANONICAL_COLUMNS: tuple[str, ...] = (
    "job_id",
    "submit_time",
    "num_gpus",
    "duration",
    "total_steps",
    "model",
    "user",
    "vc",
    "deadline",
    "priority",
    "gpu_type",
    "status",
    "gpu_milli",
    "gpu_constraint",
)
"""Columns of ``Workload.jobs``, in order; ``duration_<type>`` columns, passthrough columns
and ``source_row`` follow."""

REQUIRED_COLUMNS: tuple[str, ...] = ("job_id", "submit_time", "num_gpus")
"""Columns a file must have; it must also have ``duration``, ``total_steps`` or a
``duration_<type>`` column (or be a workload whose work the model implies)."""

TEXT_COLUMNS: tuple[str, ...] = (
    "job_id",
    "model",
    "user",
    "vc",
    "gpu_type",
    "status",
    "gpu_constraint",
)
"""Canonical columns that loaders should read as text (never let pandas guess a number)."""

DURATION_PREFIX = "duration_"
"""Prefix of the per-GPU-type duration columns (``duration_v100``...)."""

ELASTIC_COLUMNS: tuple[str, ...] = ("min_gpus", "max_gpus")
"""Optional columns bounding the GPU count of an elastic job (Optimus, Gandiva grow-shrink)."""

RESOURCE_COLUMNS: Mapping[str, tuple[str, int]] = {
    "cpu_milli": ("num_cpus", 1000),
    "memory_mib": ("memory_gb", 1024),
}
"""Optional CPU and memory demand columns: canonical name → (the alternative input column,
in larger units, and how many canonical units make one of it)."""

DEFAULT_PRIORITY = 1.0
WHOLE_GPU_MILLI = 1000
"""``gpu_milli`` of a job that uses whole GPUs."""

TIME_RESOLUTION_S = 1e-3
"""The finest time step every time on the simulated axis must keep (1 ms)."""
MAX_TIME_S = 2.0**43
"""Times (``submit_time``, ``deadline``) and durations must be below this, about 8.8e12 s
(278,000 years): below 2^43 s the spacing of float64 numbers (``np.spacing``) is at most
2^-10 s, finer than ``TIME_RESOLUTION_S``; above it, seconds would be silently rounded
(a submit time of 1.6e18, nanoseconds since the epoch, would give a 100 s job a JCT of 0)."""

SECONDS_COLUMNS: tuple[str, ...] = ("submit_time", "deadline", "duration")
"""Numeric columns in seconds (with the ``duration_<type>`` ones): a timedelta column there is
converted to seconds; every other numeric column is a count, where a time is refused."""
NUMERIC_COLUMNS: tuple[str, ...] = (
    *SECONDS_COLUMNS,
    "num_gpus",
    "total_steps",
    "priority",
    "gpu_milli",
    *ELASTIC_COLUMNS,
    *RESOURCE_COLUMNS,
    *(coarse for coarse, _ in RESOURCE_COLUMNS.values()),
)
"""Canonical columns parsed as numbers (with the ``duration_<type>`` ones)."""

# Spellings of "no value" accepted in numeric columns; text columns keep them as text.
_NA_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none"})
_MAX_GPUS = 2**31 - 1
_INT_ID_PATTERN = r"-?(?:0|[1-9][0-9]*)"
_DUPLICATE = "duplicate job_id"


def type_key(name: str) -> str:
    """The case-insensitive key of a GPU type name, as ``dlsched.cluster.type_key``."""
    return str(name).strip().lower()


def duration_column(gpu_type: str) -> str:
    """The column of durations on ``gpu_type``: ``duration_column("V100")`` is ``duration_v100``."""
    return DURATION_PREFIX + type_key(gpu_type)


def duration_columns(columns: Iterable[str]) -> dict[str, str]:
    """GPU type key → column name, for the ``duration_<type>`` columns among ``columns``.

    >>> duration_columns(["job_id", "duration", "duration_a100", "duration_gtx2080ti"])
    {'a100': 'duration_a100', 'gtx2080ti': 'duration_gtx2080ti'}
    """
    out: dict[str, str] = {}
    for column in columns:
        text = str(column)
        if text.lower().startswith(DURATION_PREFIX) and len(text) > len(DURATION_PREFIX):
            out[type_key(text[len(DURATION_PREFIX) :])] = text
    return out


def constraint_types(value: str | None) -> tuple[str, ...] | None:
    """The GPU type keys a ``gpu_constraint`` allows, or None for any type.

    >>> constraint_types("V100M16|V100M32"), constraint_types(None)
    (('v100m16', 'v100m32'), None)
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    types = tuple(type_key(part) for part in str(value).split("|") if part.strip())
    return types or None


@dataclass(frozen=True)
class RowCheck:
    """A per-row finding that a loader made itself (for a field only it parses).

    ``mask`` is a boolean array over the rows given to ``validate_jobs``; ``values``, when
    given, is shown as ``got <value>`` after ``reason``. Passed as an exclusion, ``reason``
    is the key under which excluded rows are counted.
    """

    field: str
    reason: str
    mask: np.ndarray
    values: Any = None


def validate_jobs(
    df: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    lenient: bool,
    fmt: str,
    field_names: Mapping[str, str] | None = None,
    extra_checks: Sequence[RowCheck] = (),
    exclusions: Sequence[RowCheck] = (),
    excluded: Mapping[str, int] | None = None,
    skipped: Sequence[Mapping[str, Any]] = (),
) -> Workload:
    """Validate a job table in canonical column names and return it as a ``Workload``.

    ``df`` may hold raw values (text or numbers), lack optional canonical columns (they get
    their defaults), carry ``duration_<type>`` columns, passthrough columns, and
    ``source_row`` (1-based file line of each row; without it, row i is taken to be line
    i + 2, as in a CSV with a header). ``field_names`` maps canonical names to the names the
    source file uses, so that messages name the field the user has to fix. A missing
    required column always raises. A bad row raises ``TraceError`` (the first one, by file
    line) unless ``lenient``, in which case every bad row is dropped and listed in
    ``provenance["skipped"]``.

    ``exclusions`` are rows the format itself says are not replayable jobs (a CPU-only pod,
    a job still running when the log ends): they are dropped whatever ``lenient`` says and
    counted by reason in ``provenance["excluded"]``, together with the counts in
    ``excluded`` of rows the loader already dropped. ``skipped`` lists rows the reader
    already left out as malformed (lenient loading only, see
    ``reading.iter_csv_chunks``); they join ``provenance["skipped"]`` in file order.

    A table that ends up with no job raises ``TraceError`` (replaying nothing is never what
    was meant); when rows were skipped or excluded, the message says how many and why.

    >>> table = pd.DataFrame({"job_id": [7, 3], "submit_time": [5.0, 0.0],
    ...                       "num_gpus": [1, 4], "duration": [60.0, 30.0]})
    >>> w = validate_jobs(table, "inline", lenient=False, fmt="canonical")
    >>> w.jobs["job_id"].tolist(), w.jobs["priority"].tolist(), w.jobs["source_row"].tolist()
    ([3, 7], [1.0, 1.0], [3, 2])
    >>> w.jobs["gpu_milli"].tolist(), w.provenance["excluded"]
    ([1000, 1000], {})
    """
    path = str(path)
    names = dict(field_names or {})

    def name(column: str) -> str:
        return names.get(column, column)

    for column in REQUIRED_COLUMNS:
        if column not in df.columns:
            needed = ", ".join(repr(name(c)) for c in REQUIRED_COLUMNS)
            raise TraceError(
                f"missing required column {name(column)!r}; a {fmt} trace needs {needed}",
                path=path,
                field=name(column),
            )

    excluded_counts: dict[str, int] = {k: int(v) for k, v in (excluded or {}).items() if v}
    rows_before = len(df) + sum(excluded_counts.values()) + len(skipped)
    df, extra_checks = _apply_exclusions(df, exclusions, extra_checks, excluded_counts)
    if not len(df):  # before the column checks, which an empty table can fail for no reason
        early = sorted((dict(s) for s in skipped), key=lambda s: s["row"])
        raise TraceError(_no_jobs(rows_before, early, excluded_counts), path=path)

    typed = _typed_duration_columns(df, path)
    if typed:
        df = df.rename(columns={old: new for old, new in typed.items() if old != new})
        for old, new in typed.items():
            names.setdefault(new, old)  # messages name the column as the file spells it
    typed_columns = list(typed.values())
    df, time_origin = _temporal_columns(df, path, names, typed_columns)
    n = len(df)
    if "source_row" in df.columns:
        rows = df["source_row"].to_numpy(dtype=np.int64)
    else:
        rows = np.arange(2, n + 2, dtype=np.int64)
    nowhere = np.zeros(n, dtype=bool)
    checks: list[RowCheck] = []

    def check(column: str, reason: str, mask: np.ndarray, values: Any = None) -> None:
        if mask.any():
            checks.append(RowCheck(name(column), reason, mask, values))

    # A loader's own checks come first: a malformed line explains its other failures.
    checks.extend(c for c in extra_checks if c.mask.any())
    ids, id_missing, id_kind = _job_ids(df["job_id"])
    check("job_id", f"{name('job_id')} is missing", id_missing)
    for column in TEXT_COLUMNS:
        if column in df.columns:
            check(
                column,
                f"{name(column)} must be text or a number (not a list, a true/false value or "
                "another object)",
                _not_text(df[column]),
                df[column],
            )

    unparsable: dict[str, np.ndarray] = {}

    def number(column: str, *, required: bool) -> np.ndarray:
        """Parse one numeric column, registering its missing and not-a-number checks."""
        if column not in df.columns:
            unparsable[column] = nowhere
            return np.full(n, np.nan)
        values, missing, unparsable[column] = _numbers(df[column])
        if required:
            check(column, f"{name(column)} is missing", missing)
        check(column, f"{name(column)} is not a number", unparsable[column], df[column])
        return values

    def raw(column: str) -> Any:
        return df[column] if column in df.columns else None

    with np.errstate(invalid="ignore"):
        submit = number("submit_time", required=True)
        check(
            "submit_time",
            f"{name('submit_time')} must be finite",
            np.isinf(submit),
            raw("submit_time"),
        )
        check("submit_time", f"{name('submit_time')} must be >= 0", submit < 0, raw("submit_time"))
        check(
            "submit_time",
            _too_large_time(name("submit_time"), name("deadline")),
            np.isfinite(submit) & (submit >= MAX_TIME_S),
            raw("submit_time"),
        )

        gpus = number("num_gpus", required=True)
        whole = np.isfinite(gpus) & (np.floor(gpus) == gpus)
        check(
            "num_gpus",
            f"{name('num_gpus')} must be a whole number",
            ~np.isnan(gpus) & ~whole,
            raw("num_gpus"),
        )
        check("num_gpus", f"{name('num_gpus')} must be >= 0", whole & (gpus < 0), raw("num_gpus"))
        no_gpu = whole & (gpus == 0)  # a job without GPUs: CPU and/or memory only
        check(
            "num_gpus",
            f"{name('num_gpus')} must be <= {_MAX_GPUS}",
            whole & (gpus > _MAX_GPUS),
            raw("num_gpus"),
        )

        duration = number("duration", required=False)
        check(
            "duration",
            f"{name('duration')} must be a positive, finite number of seconds",
            (duration <= 0) | np.isinf(duration),
            raw("duration"),
        )
        check(
            "duration",
            _too_long(name("duration")),
            np.isfinite(duration) & (duration >= MAX_TIME_S),
            raw("duration"),
        )
        steps = number("total_steps", required=False)
        check(
            "total_steps",
            f"{name('total_steps')} must be positive and finite",
            (steps <= 0) | np.isinf(steps),
            raw("total_steps"),
        )
        # Which of the two would be the job's work depends on the throughput model (steps win
        # in the engine), so a row giving both is refused rather than one silently ignored.
        check(
            "total_steps",
            f"both {name('duration')} and {name('total_steps')} are given; give one of them: "
            f"{name('total_steps')} (the work, in training steps) or {name('duration')} (the "
            "run time in seconds, turned into steps by the throughput model)",
            ~np.isnan(duration) & ~np.isnan(steps),
            raw("total_steps"),
        )

        typed_values: dict[str, np.ndarray] = {}
        has_typed = nowhere.copy()
        typed_unparsable = nowhere.copy()
        for column in typed_columns:
            values = number(column, required=False)
            check(
                column,
                f"{name(column)} must be a positive, finite number of seconds",
                (values <= 0) | np.isinf(values),
                raw(column),
            )
            check(
                column,
                _too_long(name(column)),
                np.isfinite(values) & (values >= MAX_TIME_S),
                raw(column),
            )
            typed_values[column] = values
            has_typed |= ~np.isnan(values)
            typed_unparsable |= unparsable[column]

        no_work = (
            np.isnan(duration)
            & np.isnan(steps)
            & ~has_typed
            & ~unparsable["duration"]
            & ~unparsable["total_steps"]
            & ~typed_unparsable
        )
        work_columns = [c for c in ("duration", "total_steps") if c in df.columns]
        has_model = _present_text(df, "model")
        if not work_columns and not typed_columns and not has_model.any():
            raise TraceError(
                f"missing column: a {fmt} trace needs {name('duration')!r} or "
                f"{name('total_steps')!r} (or both, or '{DURATION_PREFIX}<gpu type>' "
                "columns)",
                path=path,
                field=name("duration"),
            )
        work_from_model = n > 0 and bool(no_work.all())
        what = " nor ".join(name(c) for c in (work_columns or ["duration", "total_steps"]))
        if work_from_model:
            check(
                work_columns[0] if work_columns else "duration",
                f"neither {what} is given, and no model to derive them from",
                no_work & ~has_model,
            )
        else:
            check(
                work_columns[0] if work_columns else "duration", f"neither {what} is given", no_work
            )

        deadline = number("deadline", required=False)
        check(
            "deadline",
            f"{name('deadline')} must be finite (leave it empty for none)",
            np.isinf(deadline),
            raw("deadline"),
        )
        check(
            "deadline",
            _too_large_time(name("deadline"), name("submit_time")),
            np.isfinite(deadline) & (deadline >= MAX_TIME_S),
            raw("deadline"),
        )
        check(
            "deadline",
            f"{name('deadline')} is before {name('submit_time')}",
            deadline < submit,
            raw("deadline"),
        )

        priority = number("priority", required=False)
        check(
            "priority",
            f"{name('priority')} must be positive and finite",
            (priority <= 0) | np.isinf(priority),
            raw("priority"),
        )

        milli = number("gpu_milli", required=False)
        check(
            "gpu_milli",
            f"{name('gpu_milli')} must be a whole number from 1 to {WHOLE_GPU_MILLI} "
            "(thousandths of a GPU)",
            ~np.isnan(milli)
            & ~((np.floor(milli) == milli) & (milli >= 1) & (milli <= WHOLE_GPU_MILLI))
            & ~(no_gpu & (milli == 0)),
            raw("gpu_milli"),
        )
        check(
            "gpu_milli",
            f"{name('gpu_milli')} of a job with {name('num_gpus')} 0 must be 0 or empty",
            no_gpu & (milli >= 1),
            raw("gpu_milli"),
        )
        check(
            "gpu_milli",
            f"{name('gpu_milli')} 0 (no GPU) needs {name('num_gpus')} 0",
            (milli == 0) & whole & (gpus > 0),
            raw("gpu_milli"),
        )
        check(
            "gpu_milli",
            f"{name('gpu_milli')} below {WHOLE_GPU_MILLI} (a share of one GPU) needs "
            f"{name('num_gpus')} 1",
            (milli < WHOLE_GPU_MILLI) & (milli >= 1) & whole & (gpus > 1),
            raw("gpu_milli"),
        )

        bounds: dict[str, np.ndarray] = {}
        for column in ELASTIC_COLUMNS:
            if column not in df.columns:
                continue
            values = bounds[column] = number(column, required=False)
            check(
                column,
                f"{name(column)} must be a whole number >= 1 (leave it empty for "
                f"{name('num_gpus')})",
                ~np.isnan(values)
                & ~((np.floor(values) == values) & (values >= 1) & (values <= _MAX_GPUS)),
                raw(column),
            )
        if "min_gpus" in bounds:
            check(
                "min_gpus",
                f"{name('min_gpus')} is above {name('num_gpus')}",
                bounds["min_gpus"] > gpus,
                raw("min_gpus"),
            )
        if "max_gpus" in bounds:
            check(
                "max_gpus",
                f"{name('max_gpus')} is below {name('num_gpus')}",
                bounds["max_gpus"] < gpus,
                raw("max_gpus"),
            )
            check(
                "max_gpus",
                f"{name('max_gpus')} above 1 for a job with {name('gpu_milli')} below "
                f"{WHOLE_GPU_MILLI} (a share of one GPU cannot grow to several GPUs)",
                (milli < WHOLE_GPU_MILLI) & (milli >= 1) & (bounds["max_gpus"] > 1),
                raw("max_gpus"),
            )

        demands: dict[str, np.ndarray] = {}
        demand_fields: dict[str, str] = {}
        for column, (coarse, scale) in RESOURCE_COLUMNS.items():
            given = [c for c in (column, coarse) if c in df.columns]
            if len(given) == 2:
                raise TraceError(
                    f"both {name(column)!r} and {name(coarse)!r} are given; keep one of them",
                    path=path,
                    field=name(coarse),
                )
            if not given:
                continue
            source_column = given[0]
            values = number(source_column, required=False)
            factor = 1 if source_column == column else scale
            # Beyond 2^62 canonical units a demand is not a number the ledger can hold.
            limit = 2.0**62 / factor
            valid = np.isfinite(values) & (values >= 0) & (values < limit)
            if source_column == column:  # already in milli-CPUs or MiB: whole numbers
                valid &= np.floor(values) == values
                unit = f"a whole number >= 0 and below {limit:.3g}"
            else:
                unit = f"a finite number >= 0 and below {limit:.3g}"
            bad_demand = ~np.isnan(values) & ~valid
            check(
                source_column,
                f"{name(source_column)} must be {unit} (leave it empty for no demand)",
                bad_demand,
                raw(source_column),
            )
            demands[column] = _demand_units(values, factor)
            demand_fields[column] = name(source_column)
        if no_gpu.any():
            asks = np.zeros(n, dtype=bool)
            for values in demands.values():
                asks |= values > 0
            check(
                "num_gpus",
                f"{name('num_gpus')} must be >= 1 for a job without a CPU or memory demand "
                "(num_gpus 0 is a job without GPUs: give it cpu_milli/num_cpus or "
                "memory_mib/memory_gb above 0)",
                no_gpu & ~asks,
                raw("num_gpus"),
            )
            if "max_gpus" in bounds:
                check(
                    "max_gpus",
                    f"{name('max_gpus')} given for a job with {name('num_gpus')} 0 (a job "
                    "without GPUs cannot grow to GPUs)",
                    no_gpu & ~np.isnan(bounds["max_gpus"]),
                    raw("max_gpus"),
                )

    if SCHEDULE_COLUMN in df.columns:  # optional: a job's batch size by epoch
        check_schedules(df, name, check)

    bad = nowhere.copy()
    for c in checks:
        bad |= c.mask
    duplicate, first_row = _duplicates(ids, rows, ~bad)
    if duplicate.any():
        checks.append(RowCheck(name("job_id"), _DUPLICATE, duplicate))
        bad = bad | duplicate

    bad_rows = _describe_bad_rows(
        checks,
        bad,
        rows,
        raw_ids=df["job_id"],
        first_row=first_row,
        limit=None if lenient else 1,
    )
    if bad_rows and not lenient:
        first = bad_rows[0]
        raise TraceError(first["reason"], path=path, row=first["row"], field=first["field"])
    if skipped:
        bad_rows = sorted([*(dict(s) for s in skipped), *bad_rows], key=lambda s: s["row"])
    if not (~bad).any():
        raise TraceError(_no_jobs(rows_before, bad_rows, excluded_counts), path=path)

    keep = np.flatnonzero(~bad)
    everything = len(keep) == n

    def kept(values: np.ndarray) -> np.ndarray:
        """The kept rows, in an array of our own (never a view of the caller's frame)."""
        if not everything:
            return values[keep]
        return values if values.flags.owndata and values.flags.writeable else values.copy()

    if id_kind == "int":
        job_id: Any = kept(ids).astype(np.int64, copy=False)
    else:
        job_id = pd.Series(kept(ids), dtype=object)
    priority = np.where(np.isnan(priority), DEFAULT_PRIORITY, priority)
    milli = np.where(np.isnan(milli), np.where(no_gpu, 0, WHOLE_GPU_MILLI), milli)
    columns: dict[str, Any] = {
        "job_id": job_id,
        "submit_time": kept(submit),
        "num_gpus": kept(gpus).astype(np.int64),
        "duration": kept(duration),
        "total_steps": kept(steps),
        "model": _text(df, "model", keep),
        "user": _text(df, "user", keep),
        "vc": _text(df, "vc", keep),
        "deadline": kept(deadline),
        "priority": kept(priority),
        "gpu_type": _text(df, "gpu_type", keep),
        "status": _text(df, "status", keep),
        "gpu_milli": kept(milli).astype(np.int64),
        "gpu_constraint": _text(df, "gpu_constraint", keep, normalise=_normal_constraint),
    }
    for column in typed_columns:
        columns[column] = kept(typed_values[column])
    for column, values in bounds.items():
        columns[column] = kept(values)
    for column, values in demands.items():
        columns[column] = kept(values)
    done = set(CANONICAL_COLUMNS) | set(typed_columns) | set(bounds) | {"source_row"}
    for column in demands:
        done |= {column, RESOURCE_COLUMNS[column][0]}
    for column in (c for c in df.columns if c not in done):
        columns[column] = df[column].iloc[keep].reset_index(drop=True)
    columns["source_row"] = kept(rows)
    jobs = pd.DataFrame(columns, copy=False)
    del columns
    if not _sorted(jobs["submit_time"].to_numpy(), jobs["job_id"]):
        jobs = jobs.sort_values(["submit_time", "job_id"], ignore_index=True)

    provenance: dict[str, Any] = {
        "source": path,
        "format": fmt,
        "rows_read": int(rows_before),
        "rows_loaded": len(jobs),
        "skipped": bad_rows,
        "excluded": excluded_counts,
        "transforms": [],
        "lenient": bool(lenient),
    }
    if demand_fields:
        provenance["demand_fields"] = demand_fields
    if time_origin is not None:
        provenance["time_origin"] = time_origin
    if work_from_model:
        provenance["work"] = (
            "not in the trace: implied by each job's model; a throughput "
            "model that knows when the model converges must supply it"
        )
    workload = Workload(jobs, provenance)
    workload.mark_checked()  # `simulate` validates a table edited since again
    return workload


def check_schedules(df: pd.DataFrame, name: Any, check: Any) -> None:
    """Register the ``batch_schedule`` checks (`dlsched.traces.batch_schedule`): one reason
    per distinct problem, each naming the column, rows whose text is a valid schedule (or
    missing: no schedule) pass."""
    texts = df[SCHEDULE_COLUMN].tolist()
    models = df["model"].tolist() if "model" in df.columns else [None] * len(texts)
    problems: dict[str, np.ndarray] = {}
    for i, (text, model) in enumerate(zip(texts, models, strict=True)):
        problem = schedule_problem(text, model)
        if problem is not None:
            mask = problems.get(problem)
            if mask is None:
                mask = problems[problem] = np.zeros(len(texts), dtype=bool)
            mask[i] = True
    for problem, mask in problems.items():
        check(SCHEDULE_COLUMN, problem.replace(SCHEDULE_COLUMN, name(SCHEDULE_COLUMN), 1), mask)


def _no_jobs(rows: int, skipped: list[dict[str, Any]], excluded: Mapping[str, int]) -> str:
    """Why a table holds no job: empty, every row skipped as bad, or every row excluded."""
    if not rows:
        return "holds no jobs (only a header line); a trace needs at least one job row"
    parts = []
    if skipped:
        first = skipped[0]
        where = f"row {first['row']}" + (f", field {first['field']!r}" if first["field"] else "")
        parts.append(
            f"{len(skipped)} were skipped (lenient), the first on {where}: {first['reason']}"
        )
    if excluded:
        reasons = "; ".join(f"{count} {reason}" for reason, count in excluded.items())
        parts.append(f"{sum(excluded.values())} excluded by the format ({reasons})")
    return f"holds no jobs: of its {rows} rows, " + "; ".join(parts)


def _sorted(submit: np.ndarray, ids: pd.Series) -> bool:
    """Whether rows are already in (submit_time, job_id) order (big traces often are)."""
    if len(submit) < 2:
        return True
    step = np.diff(submit)
    if (step < 0).any():
        return False
    ties = np.flatnonzero(step == 0)
    if not len(ties):
        return True
    values = ids.to_numpy()
    try:
        return bool((values[ties] < values[ties + 1]).all())
    except TypeError:  # not comparable: let sort_values decide
        return False


def _apply_exclusions(
    df: pd.DataFrame,
    exclusions: Sequence[RowCheck],
    extra_checks: Sequence[RowCheck],
    counts: dict[str, int],
) -> tuple[pd.DataFrame, Sequence[RowCheck]]:
    """Drop excluded rows (the first matching exclusion names the reason), counting them.

    A row a loader check flags as malformed is never excluded: its exclusion might only be
    an effect of the bad value, so it stays to be reported (or skipped when lenient)."""
    if not exclusions:
        return df, extra_checks
    flagged = np.zeros(len(df), dtype=bool)
    for c in extra_checks:
        flagged |= c.mask
    out = np.zeros(len(df), dtype=bool)
    for c in exclusions:
        new = c.mask & ~out & ~flagged
        if new.any():
            counts[c.reason] = counts.get(c.reason, 0) + int(new.sum())
            out |= new
    if not out.any():
        return df, extra_checks
    keep = ~out
    kept_checks = [
        RowCheck(
            c.field, c.reason, c.mask[keep], None if c.values is None else _subset(c.values, keep)
        )
        for c in extra_checks
    ]
    return df.loc[keep].reset_index(drop=True), kept_checks


def _subset(values: Any, keep: np.ndarray) -> Any:
    if isinstance(values, pd.Series):
        return values[keep].reset_index(drop=True)
    return np.asarray(values, dtype=object)[keep]


def _typed_duration_columns(df: pd.DataFrame, path: str) -> dict[str, str]:
    """Source column → canonical lower-case name, for every ``duration_<type>`` column."""
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for column in df.columns:
        text = str(column)
        if not (text.lower().startswith(DURATION_PREFIX) and len(text) > len(DURATION_PREFIX)):
            continue
        canonical = duration_column(text[len(DURATION_PREFIX) :])
        if canonical in seen:
            raise TraceError(
                f"columns {seen[canonical]!r} and {text!r} both give durations on GPU type "
                f"{canonical[len(DURATION_PREFIX) :]!r} (type names ignore case)",
                path=path,
                field=text,
            )
        seen[canonical] = text
        out[text] = canonical
    return out


def _too_large_time(column: str, other: str) -> str:
    return (
        f"{column} must be below 2^43 s (about 8.8e12 s): float64 seconds beyond it are "
        f"coarser than {TIME_RESOLUTION_S * 1000:g} ms, so times would be silently rounded; "
        f"if the times are in ms, µs or ns convert them to seconds, or rebase them "
        f"(subtract the earliest submit time from every {column} and {other})"
    )


def _too_long(column: str) -> str:
    return (
        f"{column} must be below 2^43 s (about 8.8e12 s, 278,000 years), where float64 "
        f"seconds are still finer than {TIME_RESOLUTION_S * 1000:g} ms; is it in ms, µs or "
        "ns rather than seconds?"
    )


def _temporal_columns(
    df: pd.DataFrame, path: str, names: Mapping[str, str], typed_columns: Sequence[str]
) -> tuple[pd.DataFrame, str | None]:
    """Numeric columns holding times (parquet ``timedelta``/``datetime``, a DataFrame's
    ``Timedelta``/``Timestamp``) as seconds, never as their raw nanosecond integers.

    A time span in a column of seconds (``submit_time``, ``deadline``, the durations) becomes
    its seconds. Dates and times are accepted in ``submit_time`` (then also in ``deadline``,
    on the same axis): both become seconds since the earliest submission, which is returned
    as the time origin (UTC for time-zone-aware columns), as the Philly and Helios loaders
    do. Any other time column is refused, naming it. Returns the frame (a new one when a
    column changed) and the origin, or None.
    """
    seconds = {*SECONDS_COLUMNS, *typed_columns}
    numeric = {*NUMERIC_COLUMNS, *typed_columns}

    def kind(column: str) -> str | None:
        if column not in df.columns:
            return None
        dtype = df[column].dtype
        if is_timedelta64_dtype(dtype):
            return "span"
        if is_datetime64_any_dtype(dtype):
            return "date"
        return None

    kinds = {c: kind(c) for c in numeric}
    if not any(kinds.values()):
        return df, None

    def shown(column: str) -> str:
        return repr(names.get(column, column))

    converted: dict[str, np.ndarray] = {}
    origin: pd.Timestamp | None = None
    if kinds.get("submit_time") == "date":
        submit = _utc(df["submit_time"])
        deadline = df["deadline"] if "deadline" in df.columns else None
        if deadline is not None and kinds.get("deadline") != "date" and deadline.notna().any():
            raise TraceError(
                f"column {shown('submit_time')} holds dates and times but {shown('deadline')} "
                "does not; give both as dates and times, or both as seconds",
                path=path,
                field=names.get("deadline", "deadline"),
            )
        if submit.notna().any():
            origin = submit.min()
            converted["submit_time"] = _seconds_since(submit, origin)
            if kinds.get("deadline") == "date":
                converted["deadline"] = _seconds_since(_utc(df["deadline"]), origin)
    for column, what in kinds.items():
        if what is None or column in converted:
            continue
        if what == "span" and column in seconds:
            converted[column] = (
                df[column].dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)
            )
        elif what == "date" and column == "deadline":
            raise TraceError(
                f"column {shown('deadline')} holds dates and times but {shown('submit_time')} "
                "does not; give both as dates and times, or both as seconds",
                path=path,
                field=names.get(column, column),
            )
        else:
            held = "time spans (timedelta)" if what == "span" else "dates and times"
            wanted = "seconds (a number)" if column in seconds else "a plain number"
            raise TraceError(
                f"column {shown(column)} holds {held}; it must hold {wanted}",
                path=path,
                field=names.get(column, column),
            )
    if origin is None and not converted:
        return df, None
    out = df.copy(deep=False)
    for column, values in converted.items():
        out[column] = values
    return out, None if origin is None else str(origin)


def _utc(column: pd.Series) -> pd.Series:
    """A datetime column in UTC, without a time zone (naive columns are taken as they are)."""
    if column.dt.tz is not None:
        return column.dt.tz_convert("UTC").dt.tz_localize(None)
    return column


def _seconds_since(column: pd.Series, origin: pd.Timestamp) -> np.ndarray:
    return (column - origin).dt.total_seconds().to_numpy(dtype=np.float64, na_value=np.nan)


def _is_scalar_number(value: Any) -> bool:
    """A number as a number column takes it: int or float (numpy's too), never a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _wrong_objects(column: pd.Series, allowed: Any) -> np.ndarray:
    """Rows of an object column holding a present value that ``allowed`` rejects."""
    present = ~np.array(column.isna(), dtype=bool) if len(column) else np.zeros(0, dtype=bool)
    values = column.to_numpy(dtype=object)
    out = np.zeros(len(column), dtype=bool)
    for i in np.flatnonzero(present):
        out[i] = not allowed(values[i])
    return out


def _not_text(column: pd.Series) -> np.ndarray:
    """Rows of a text column holding a bool, a list or another object rather than a str or
    number (a str of them would be a silently made-up name)."""
    if is_bool_dtype(column.dtype):
        return ~np.array(column.isna(), dtype=bool)
    if column.dtype != object:
        return np.zeros(len(column), dtype=bool)
    if infer_dtype(column, skipna=True) in _PLAIN_OBJECTS:
        return np.zeros(len(column), dtype=bool)
    return _wrong_objects(column, lambda v: isinstance(v, str) or _is_scalar_number(v))


# What `infer_dtype` says of an object column holding only strs and (non-bool) numbers.
_PLAIN_OBJECTS = frozenset({"string", "empty", "integer", "floating", "mixed-integer-float"})


def _numbers(column: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse a column as float64: (values with NaN when absent, missing, not a number).

    A true/false value is not a number here (``pd.to_numeric`` would read ``True`` as 1),
    and neither is a list or another object in an object column."""
    missing = np.array(column.isna(), dtype=bool)
    if is_bool_dtype(column.dtype) or is_complex_dtype(column.dtype):
        return np.full(len(column), np.nan), missing, ~missing
    if is_numeric_dtype(column.dtype):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        return values, np.isnan(values), np.zeros(len(column), dtype=bool)
    odd = np.zeros(len(column), dtype=bool)
    if column.dtype == object and infer_dtype(column, skipna=True) not in _PLAIN_OBJECTS:
        odd = _wrong_objects(column, lambda v: isinstance(v, str) or _is_scalar_number(v))
        if odd.any():
            column = column.where(~odd, None)
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    unparsed = np.flatnonzero(np.isnan(values) & ~missing)
    # Only the entries that did not parse are looked at one by one: NA spellings or bad rows.
    for i in unparsed:
        if str(column.iat[int(i)]).strip().lower() in _NA_TOKENS:
            missing[i] = True
    return values, missing, (np.isnan(values) & ~missing) | odd


def _job_ids(column: pd.Series) -> tuple[np.ndarray, np.ndarray, str]:
    """Normalise job ids: (ids, missing mask, "int" or "str").

    Ids stay integers when every id is an integer (or, in text, an integer written plainly,
    without a sign or leading zeros that the integer would lose); otherwise all are text.
    """
    n = len(column)
    if is_integer_dtype(column.dtype):
        missing = np.array(column.isna(), dtype=bool)
        return column.to_numpy(dtype=np.int64, na_value=0), missing, "int"
    if is_float_dtype(column.dtype):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = np.isnan(values)
        present = values[~missing]
        if np.all(
            np.isfinite(present) & (np.floor(present) == present) & (np.abs(present) < 2.0**63)
        ):
            return np.where(missing, 0, values).astype(np.int64), missing, "int"
    if isinstance(column.dtype, pd.StringDtype):
        arrow = column.astype("string[pyarrow]")  # text already; Arrow kernels are ~10x faster
    else:
        text = column.astype(object)
        absent = np.array(text.isna(), dtype=bool)
        if infer_dtype(text, skipna=True) not in ("string", "empty"):
            text = text.where(absent, text.astype(str))
        arrow = text.astype("string[pyarrow]")
    missing = np.array(arrow.isna(), dtype=bool)
    missing |= np.asarray((arrow.str.strip() == "").fillna(False), dtype=bool)
    present = arrow[~missing]
    if (
        len(present)
        and present.str.fullmatch(_INT_ID_PATTERN).all()
        and (present.str.lstrip("-").str.len() <= 19).all()
    ):
        try:
            as_int = np.zeros(n, dtype=np.int64)
            as_int[~missing] = present.astype(np.int64).to_numpy()
            return as_int, missing, "int"
        except (OverflowError, ValueError, TypeError):  # beyond int64: keep them as text
            pass
    ids: np.ndarray = arrow.to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
    ids[missing] = None
    return ids, missing, "str"


def _duplicates(
    ids: np.ndarray, rows: np.ndarray, candidates: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rows (among ``candidates``) whose id an earlier candidate row already has.

    Returns the mask and, for each row, the file line of the first row with its id.
    Rows already bad for another reason are not candidates, so a skipped row never makes
    a later good row with the same id a duplicate.
    """
    n = len(ids)
    duplicate = np.zeros(n, dtype=bool)
    first_row = rows.copy()
    where = np.flatnonzero(candidates)
    if len(where) < 2:
        return duplicate, first_row
    codes, _ = pd.factorize(ids[where])
    first = np.full(codes.max() + 1, -1, dtype=np.int64)
    order = np.arange(len(where))
    first[codes[::-1]] = order[::-1]  # repeated indices: the last write (the earliest) wins
    firsts = first[codes]
    duplicate[where] = firsts != order
    first_row[where] = rows[where][firsts]
    return duplicate, first_row


def _describe_bad_rows(
    checks: list[RowCheck],
    bad: np.ndarray,
    rows: np.ndarray,
    *,
    raw_ids: Any,
    first_row: np.ndarray,
    limit: int | None,
) -> list[dict[str, Any]]:
    """One ``{row, field, reason}`` per bad row, by file line; the first failed check wins."""
    described: list[dict[str, Any]] = []
    where = np.flatnonzero(bad)
    for i in where[np.argsort(rows[where], kind="stable")][:limit]:
        for c in checks:
            if c.mask[i]:
                if c.reason == _DUPLICATE:
                    reason = (
                        f"duplicate {c.field} {_show(_at(raw_ids, i))}, "
                        f"first used on row {int(first_row[i])}"
                    )
                elif c.values is not None:
                    reason = f"{c.reason}, got {_show(_at(c.values, i))}"
                else:
                    reason = c.reason
                described.append({"row": int(rows[i]), "field": c.field, "reason": reason})
                break
    return described


def _at(values: Any, i: int) -> Any:
    return values.iat[i] if isinstance(values, pd.Series) else values[i]


def _show(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _present_text(df: pd.DataFrame, column: str) -> np.ndarray:
    """Rows where a text column holds a non-blank value."""
    if column not in df.columns:
        return np.zeros(len(df), dtype=bool)
    values = df[column]
    present = ~np.array(values.isna(), dtype=bool)
    where = np.flatnonzero(present)
    if len(where):
        blank = values.iloc[where].astype(str).str.strip() == ""
        present[where[np.asarray(blank, dtype=bool)]] = False
    return present


def _normal_constraint(value: str) -> str | None:
    """``" V100M16 | V100M32 "`` → ``"V100M16|V100M32"``; a blank constraint means any type."""
    parts = [p.strip() for p in value.split("|") if p.strip()]
    return "|".join(parts) or None


def _text(df: pd.DataFrame, column: str, keep: np.ndarray, normalise: Any = None) -> pd.Series:
    """An optional text column, rows ``keep``, as an object Series of str or None.

    Equal values share one str object (rows are mapped through the distinct values), which
    keeps a few-million-row table of repeated user and VC names small. The dtype is spelled
    out: pandas 3 would otherwise infer its own string dtype.
    """
    if column not in df.columns:
        return pd.Series([None] * len(keep), dtype=object)
    codes, uniques = pd.factorize(df[column].iloc[keep], use_na_sentinel=True)
    distinct: list[str | None] = [
        u if isinstance(u, str) else str(u) for u in np.asarray(uniques, dtype=object)
    ]
    if normalise is not None:
        distinct = [normalise(u) for u in distinct if u is not None]
    # An empty text is no value, as an empty CSV field is (parquet and DataFrames keep "").
    distinct = [u or None for u in distinct]
    lookup = np.empty(len(distinct) + 1, dtype=object)
    lookup[:-1] = distinct
    lookup[-1] = None
    return pd.Series(lookup[codes], dtype=object)  # code -1 (missing) picks the trailing None


def _demand_units(values: np.ndarray, scale: int) -> np.ndarray:
    """Demands in canonical units (milli-CPUs, MiB) as int64: ``values × scale``, rounded up
    unless within float noise of a whole number; 0 where missing or invalid (such rows are
    reported by the checks and never kept)."""
    scaled = values * scale if scale != 1 else values
    usable = np.isfinite(scaled) & (scaled >= 0) & (scaled < 2.0**62)
    scaled = np.where(usable, scaled, 0.0)
    nearest = np.round(scaled)
    exact = np.abs(scaled - nearest) <= 1e-6 * np.maximum(1.0, nearest)
    return np.where(exact, nearest, np.ceil(scaled)).astype(np.int64)
