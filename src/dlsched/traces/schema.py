"""The canonical job schema, and the one place where job rows are validated.

Loaders only rename columns into the canonical names and add ``source_row``;
``validate_jobs`` checks every row, with vectorised masks so that cost grows with the
number of bad rows, not of good ones, and builds the ``Workload``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.types import (
    infer_dtype,
    is_bool_dtype,
    is_float_dtype,
    is_integer_dtype,
    is_numeric_dtype,
)

from dlsched.errors import TraceError
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
)
"""Columns of ``Workload.jobs``, in order; passthrough columns and ``source_row`` follow."""

REQUIRED_COLUMNS: tuple[str, ...] = ("job_id", "submit_time", "num_gpus")
"""Columns a file must have; it must also have ``duration`` or ``total_steps``."""

TEXT_COLUMNS: tuple[str, ...] = ("job_id", "model", "user", "vc", "gpu_type")
"""Canonical columns that loaders should read as text (never let pandas guess a number)."""

DEFAULT_PRIORITY = 1.0

# Spellings of "no value" accepted in numeric columns; text columns keep them as text.
_NA_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none"})
_MAX_GPUS = 2**31 - 1
_INT_ID_PATTERN = r"-?(?:0|[1-9][0-9]*)"
_DUPLICATE = "duplicate job_id"


@dataclass(frozen=True)
class RowCheck:
    """A per-row problem that a loader found itself (for a field only it parses).

    ``mask`` is a boolean array over the rows given to ``validate_jobs``; ``values``, when
    given, is shown as ``got <value>`` after ``reason``.
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
) -> Workload:
    """Validate a job table in canonical column names and return it as a ``Workload``.

    ``df`` may hold raw values (text or numbers), lack optional canonical columns (they get
    their defaults), carry passthrough columns, and carry ``source_row`` (1-based file line of
    each row; without it, row i is taken to be line i + 2, as in a CSV with a header).
    ``field_names`` maps canonical names to the names the source file uses, so that
    messages name the field the user has to fix. A missing required column always raises.
    A bad row raises ``TraceError`` (the first one, by file line) unless ``lenient``, in
    which case every bad row is dropped and listed in ``provenance["skipped"]``.

    >>> table = pd.DataFrame({"job_id": [7, 3], "submit_time": [5.0, 0.0],
    ...                       "num_gpus": [1, 4], "duration": [60.0, 30.0]})
    >>> w = validate_jobs(table, "inline", lenient=False, fmt="canonical")
    >>> w.jobs["job_id"].tolist(), w.jobs["priority"].tolist(), w.jobs["source_row"].tolist()
    ([3, 7], [1.0, 1.0], [3, 2])
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
    if "duration" not in df.columns and "total_steps" not in df.columns:
        raise TraceError(
            f"missing column: a {fmt} trace needs {name('duration')!r} or "
            f"{name('total_steps')!r} (or both)",
            path=path,
            field=name("duration"),
        )

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

    raw = {c: (df[c].to_numpy() if c in df.columns else None) for c in CANONICAL_COLUMNS}
    unparsable: dict[str, np.ndarray] = {}

    def number(column: str, *, required: bool) -> np.ndarray:
        """Parse one numeric column, registering its missing and not-a-number checks."""
        if column not in df.columns:
            unparsable[column] = nowhere
            return np.full(n, np.nan)
        values, missing, unparsable[column] = _numbers(df[column])
        if required:
            check(column, f"{name(column)} is missing", missing)
        check(column, f"{name(column)} is not a number", unparsable[column], raw[column])
        return values

    with np.errstate(invalid="ignore"):
        submit = number("submit_time", required=True)
        check(
            "submit_time",
            f"{name('submit_time')} must be finite",
            np.isinf(submit),
            raw["submit_time"],
        )
        check("submit_time", f"{name('submit_time')} must be >= 0", submit < 0, raw["submit_time"])

        gpus = number("num_gpus", required=True)
        whole = np.isfinite(gpus) & (np.floor(gpus) == gpus)
        check(
            "num_gpus",
            f"{name('num_gpus')} must be a whole number",
            ~np.isnan(gpus) & ~whole,
            raw["num_gpus"],
        )
        check("num_gpus", f"{name('num_gpus')} must be >= 1", whole & (gpus < 1), raw["num_gpus"])
        check(
            "num_gpus",
            f"{name('num_gpus')} must be <= {_MAX_GPUS}",
            whole & (gpus > _MAX_GPUS),
            raw["num_gpus"],
        )

        duration = number("duration", required=False)
        check(
            "duration",
            f"{name('duration')} must be a positive, finite number of seconds",
            (duration <= 0) | np.isinf(duration),
            raw["duration"],
        )
        steps = number("total_steps", required=False)
        check(
            "total_steps",
            f"{name('total_steps')} must be positive and finite",
            (steps <= 0) | np.isinf(steps),
            raw["total_steps"],
        )
        work = [c for c in ("duration", "total_steps") if c in df.columns]
        check(
            work[0],
            f"neither {' nor '.join(name(c) for c in work)} is given",
            np.isnan(duration)
            & np.isnan(steps)
            & ~unparsable["duration"]
            & ~unparsable["total_steps"],
        )

        deadline = number("deadline", required=False)
        check(
            "deadline",
            f"{name('deadline')} must be finite (leave it empty for none)",
            np.isinf(deadline),
            raw["deadline"],
        )
        check(
            "deadline",
            f"{name('deadline')} is before {name('submit_time')}",
            deadline < submit,
            raw["deadline"],
        )

        priority = number("priority", required=False)
        check(
            "priority",
            f"{name('priority')} must be positive and finite",
            (priority <= 0) | np.isinf(priority),
            raw["priority"],
        )

    bad = nowhere.copy()
    for c in checks:
        bad |= c.mask
    duplicate, first_row = _duplicates(ids, rows, ~bad)
    if duplicate.any():
        checks.append(RowCheck(name("job_id"), _DUPLICATE, duplicate))
        bad = bad | duplicate

    skipped = _describe_bad_rows(
        checks,
        bad,
        rows,
        raw_ids=df["job_id"].to_numpy(),
        first_row=first_row,
        limit=None if lenient else 1,
    )
    if skipped and not lenient:
        first = skipped[0]
        raise TraceError(first["reason"], path=path, row=first["row"], field=first["field"])

    keep = np.flatnonzero(~bad)
    if id_kind == "int":
        job_id: Any = ids[keep].astype(np.int64)
    else:
        job_id = pd.Series(ids[keep], dtype=object)
    priority = np.where(np.isnan(priority), DEFAULT_PRIORITY, priority)
    columns: dict[str, Any] = {
        "job_id": job_id,
        "submit_time": submit[keep],
        "num_gpus": gpus[keep].astype(np.int64),
        "duration": duration[keep],
        "total_steps": steps[keep],
        "model": _text(df, "model", keep),
        "user": _text(df, "user", keep),
        "vc": _text(df, "vc", keep),
        "deadline": deadline[keep],
        "priority": priority[keep],
        "gpu_type": _text(df, "gpu_type", keep),
    }
    jobs = pd.DataFrame(columns)
    passthrough = [c for c in df.columns if c not in CANONICAL_COLUMNS and c != "source_row"]
    for column in passthrough:
        jobs[column] = df[column].iloc[keep].reset_index(drop=True)
    jobs["source_row"] = rows[keep]
    jobs = jobs.sort_values(["submit_time", "job_id"], ignore_index=True)

    provenance = {
        "source": path,
        "format": fmt,
        "rows_read": int(n),
        "rows_loaded": len(jobs),
        "skipped": skipped,
        "transforms": [],
        "lenient": bool(lenient),
    }
    return Workload(jobs, provenance)


def _numbers(column: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse a column as float64: (values with NaN when absent, missing, not a number)."""
    if is_numeric_dtype(column.dtype) and not is_bool_dtype(column.dtype):
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        return values, np.isnan(values), np.zeros(len(column), dtype=bool)
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    missing = np.array(column.isna(), dtype=bool)
    unparsed = np.flatnonzero(np.isnan(values) & ~missing)
    # Only the entries that did not parse are looked at one by one: NA spellings or bad rows.
    for i in unparsed:
        if str(column.iat[i]).strip().lower() in _NA_TOKENS:
            missing[i] = True
    return values, missing, np.isnan(values) & ~missing


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
    text = column.astype(object)
    missing = np.array(text.isna(), dtype=bool)
    if infer_dtype(text, skipna=True) not in ("string", "empty"):
        text = text.where(missing, text.astype(str))
    arrow = text.astype("string[pyarrow]")  # Arrow's string kernels are ~10x faster here
    missing |= np.asarray((arrow.str.strip() == "").fillna(False), dtype=bool)
    ids = text.to_numpy(dtype=object, copy=True)
    ids[missing] = None
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
    raw_ids: np.ndarray,
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
                        f"duplicate {c.field} {_show(raw_ids[i])}, "
                        f"first used on row {int(first_row[i])}"
                    )
                elif c.values is not None:
                    reason = f"{c.reason}, got {_show(c.values[i])}"
                else:
                    reason = c.reason
                described.append({"row": int(rows[i]), "field": c.field, "reason": reason})
                break
    return described


def _show(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _text(df: pd.DataFrame, column: str, keep: np.ndarray) -> pd.Series:
    """An optional text column, rows ``keep``, as an object Series of str or None.

    The dtype is spelled out: pandas 3 would otherwise infer its own string dtype.
    """
    if column not in df.columns:
        return pd.Series([None] * len(keep), dtype=object)
    values = df[column].iloc[keep]
    missing = values.isna().to_numpy()
    if infer_dtype(values, skipna=True) not in ("string", "empty"):
        values = values.astype(object).where(missing, values.astype(str))
    out = values.to_numpy(dtype=object, copy=True)
    out[missing] = None
    return pd.Series(out, dtype=object)
