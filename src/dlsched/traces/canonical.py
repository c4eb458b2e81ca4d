"""The canonical format itself: CSV (optionally gzipped) or parquet in the canonical columns.

A CSV is read in chunks (``reading.CHUNK_ROWS`` rows at a time), text columns as Arrow
strings, so a multi-million-row file loads in bounded memory; see
``benchmarks/load_big_csv.py``. The readers shared by the CSV-based loaders live in
``dlsched.traces.reading`` and are re-exported here for compatibility. A file of more than
``reading.MAX_COLUMNS`` columns is refused from its header (CSV) or its schema (parquet),
before its data is read; parquet time columns are converted or refused as
``dlsched.traces.schema`` says.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import TraceError
from dlsched.traces.reading import (
    MAX_COLUMNS,
    data_line_numbers,
    read_csv_frame,
    read_csv_header,
    read_raw,
)
from dlsched.traces.schema import TEXT_COLUMNS, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "canonical"
PARQUET_SUFFIXES = (".parquet", ".pq")

__all__ = [
    "FORMAT",
    "data_line_numbers",
    "is_parquet",
    "load",
    "read_csv_frame",
    "read_csv_header",
    "read_parquet_frame",
    "read_raw",
]


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a canonical CSV, CSV.gz or parquet file (see ``dlsched.traces.schema``)."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None
    if is_parquet(path):
        df = read_parquet_frame(path)
    else:
        header = read_csv_header(path)
        # (and a job name, a passthrough history-based predictors match: `dlsched.predict`)
        text = [c for c in (*TEXT_COLUMNS, "name") if c in header]
        df = read_csv_frame(path, text_columns=text, skipped=skipped)
    return validate_jobs(df, path, lenient=lenient, fmt=FORMAT, skipped=skipped or ())


def is_parquet(path: str | os.PathLike[str]) -> bool:
    """Whether the file name says parquet."""
    return Path(path).name.lower().endswith(PARQUET_SUFFIXES)


def read_parquet_frame(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a parquet file; ``source_row`` is the 1-based row number (there are no lines).

    Its schema is read first: a file of more than ``reading.MAX_COLUMNS`` columns is refused
    before any data is read."""
    import pyarrow.parquet as pq

    try:
        width = len(pq.read_schema(path).names)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise TraceError(f"not a readable parquet file ({exc})", path=str(path)) from None
    if width > MAX_COLUMNS:
        raise TraceError(
            f"the file has {width:,} columns, more than the {MAX_COLUMNS:,} a trace may have "
            "(dlsched.traces.reading.MAX_COLUMNS); keep only the columns the trace needs",
            path=str(path),
        )
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise TraceError(f"not a readable parquet file ({exc})", path=str(path)) from None
    df = df.reset_index(drop=True)
    with warnings.catch_warnings():  # a wide table is one block a column
        warnings.simplefilter("ignore", pd.errors.PerformanceWarning)
        df["source_row"] = np.arange(1, len(df) + 1, dtype=np.int64)
    return df
