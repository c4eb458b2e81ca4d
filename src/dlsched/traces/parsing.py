"""Small parsing helpers shared by the format loaders.

Each helper parses one source column and, for values that do not parse, appends a
``RowCheck`` naming the source's own field, so that ``validate_jobs`` reports it (strict)
or skips the row (lenient) like any other bad value.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dlsched.errors import TraceError
from dlsched.traces.schema import RowCheck

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
"""How Philly and Helios write times (no time zone is stated)."""

_NAT = np.iinfo(np.int64).min
_NS = 1_000_000_000
_NONE_TOKENS = ["", "none", "null", "nat", "nan"]


def require_columns(
    df: pd.DataFrame, needed: Sequence[str], path: str | os.PathLike[str], fmt: str
) -> None:
    """Raise naming the first missing column and listing what a ``fmt`` file needs."""
    for column in needed:
        if column not in df.columns:
            raise TraceError(
                f"missing column {column!r}; a {fmt} file has {', '.join(repr(c) for c in needed)}",
                path=str(path),
                field=column,
            )


def numbers(df: pd.DataFrame, column: str, checks: list[RowCheck]) -> np.ndarray:
    """A column as float64 (NaN where empty); entries that are not numbers become checks."""
    values = df[column]
    parsed = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.isnan(parsed) & ~np.array(values.isna(), dtype=bool)
    if bad.any():
        checks.append(RowCheck(column, f"{column} is not a number", bad, values))
    return parsed


def times(
    df: pd.DataFrame, column: str, checks: list[RowCheck], fmt: str = TIME_FORMAT
) -> np.ndarray:
    """A date-and-time column as int64 nanoseconds (``NAT`` where empty or unparsable)."""
    values = df[column]
    parsed = pd.to_datetime(values, format=fmt, errors="coerce")
    ns = parsed.to_numpy(dtype="datetime64[ns]").view(np.int64).copy()
    missing = np.array(values.isna(), dtype=bool)
    unparsed = np.flatnonzero((ns == _NAT) & ~missing)
    if len(unparsed):  # only these are looked at one by one: spellings of "none", or bad
        text = values.iloc[unparsed].astype(str).str.strip().str.lower()
        missing[unparsed[np.asarray(text.isin(_NONE_TOKENS), dtype=bool)]] = True
    bad = (ns == _NAT) & ~missing
    if bad.any():
        checks.append(
            RowCheck(
                column, f"{column} is not a date and time like 2017-10-07 01:12:09", bad, values
            )
        )
    ns[missing] = _NAT
    return ns


def is_nat(ns: np.ndarray) -> np.ndarray:
    """Where a nanosecond array from ``times`` has no time."""
    return ns == _NAT


def seconds_between(later_ns: np.ndarray, earlier_ns: np.ndarray) -> np.ndarray:
    """``later - earlier`` in seconds, NaN where either is missing."""
    out = (later_ns - earlier_ns) / _NS
    out[is_nat(later_ns) | is_nat(earlier_ns)] = np.nan
    return out


def rebase(ns: np.ndarray) -> tuple[np.ndarray, str | None]:
    """Seconds since the earliest time, and that time as ``YYYY-MM-DD HH:MM:SS``."""
    present = ~is_nat(ns)
    if not present.any():
        return np.full(len(ns), np.nan), None
    origin = int(ns[present].min())
    out = (ns - origin) / _NS
    out[~present] = np.nan
    return out, pd.Timestamp(origin).strftime(TIME_FORMAT)
