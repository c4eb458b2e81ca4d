"""The canonical format itself: CSV (optionally gzipped) or parquet in the canonical columns.

Also home of the CSV reading shared by the CSV-based loaders: raw bytes (gzip detected by
its magic number), parse errors turned into ``TraceError``, and exact file line numbers.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from dlsched.errors import TraceError
from dlsched.traces.schema import TEXT_COLUMNS, validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "canonical"
PARQUET_SUFFIXES = (".parquet", ".pq")

# pandas < 3 parses floats slightly inexactly unless asked; pandas 3 is exact and deprecates it.
_FLOAT_OPTIONS = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
_GZIP_MAGIC = b"\x1f\x8b"


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a canonical CSV, CSV.gz or parquet file (see ``schema.CANONICAL_COLUMNS``)."""
    if is_parquet(path):
        df = read_parquet_frame(path)
    else:
        df = read_csv_frame(path, text_columns=TEXT_COLUMNS)
    return validate_jobs(df, path, lenient=lenient, fmt=FORMAT)


def is_parquet(path: str | os.PathLike[str]) -> bool:
    """Whether the file name says parquet."""
    return Path(path).name.lower().endswith(PARQUET_SUFFIXES)


def read_parquet_frame(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a parquet file; ``source_row`` is the 1-based row number (there are no lines)."""
    try:
        df = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise TraceError(f"not a readable parquet file ({exc})", path=str(path)) from None
    df = df.reset_index(drop=True)
    df["source_row"] = np.arange(1, len(df) + 1, dtype=np.int64)
    return df


def read_raw(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, gunzipped when they start with the gzip magic number."""
    data = Path(path).read_bytes()
    if data.startswith(_GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"corrupt gzip data ({exc})", path=str(path)) from None
    return data


def read_csv_header(path: str | os.PathLike[str]) -> list[str]:
    """The column names in the first non-blank line of a CSV (optionally gzipped) file."""
    try:
        with open(path, "rb") as f:
            gzipped = f.read(2) == _GZIP_MAGIC
        with (gzip.open if gzipped else open)(path, "rb") as f:
            for line in f:
                if line.strip():
                    text = line.decode("utf-8-sig")
                    return next(csv.reader([text]))
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceError(f"cannot read the file ({exc})", path=str(path)) from None
    except UnicodeDecodeError:
        raise TraceError("not a UTF-8 text file (binary data?)", path=str(path)) from None
    except csv.Error as exc:
        raise TraceError(f"malformed CSV header ({exc})", path=str(path), row=1) from None
    raise TraceError("the file is empty (no header line)", path=str(path))


def read_csv_frame(path: str | os.PathLike[str], *, text_columns: Iterable[str]) -> pd.DataFrame:
    """Read a CSV with a header; add ``source_row``, the 1-based file line of each row.

    ``text_columns`` are read as text, so ids like ``007`` and model names like ``1``
    reach validation as written. Only the empty field means "no value" in text columns.
    Malformed input (wrong field counts, binary data, bad gzip) raises ``TraceError``.
    """
    raw = read_raw(path)
    try:
        df = pd.read_csv(
            io.BytesIO(raw),
            dtype={c: str for c in text_columns},
            keep_default_na=False,
            na_values=[""],
            encoding="utf-8-sig",
            **_FLOAT_OPTIONS,
        )
    except pd.errors.EmptyDataError:
        raise TraceError("the file is empty (no header line)", path=str(path)) from None
    except pd.errors.ParserError as exc:
        message = " ".join(str(exc).split())
        line = re.search(r"line (\d+)", message)
        raise TraceError(
            f"malformed CSV ({message})", path=str(path), row=int(line.group(1)) if line else None
        ) from None
    except UnicodeDecodeError:
        raise TraceError("not a UTF-8 text file (binary data?)", path=str(path)) from None
    df["source_row"] = data_line_numbers(raw, len(df))
    return df


def data_line_numbers(raw: bytes, n_rows: int) -> np.ndarray:
    """1-based file line of each data row of a headed CSV, skipping blank lines as pandas does.

    Exact unless a quoted field spans lines; then it falls back to "row i is line i + 2".
    """
    plain = np.arange(2, n_rows + 2, dtype=np.int64)
    if not re.search(rb"(?:^|\n)[ \t\r]*(?:\n|$)", raw.rstrip(b"\r\n") or b"\n"):
        return plain
    lines = raw.split(b"\n")
    non_blank = [i + 1 for i, line in enumerate(lines) if line.strip()]
    rows = np.asarray(non_blank[1:], dtype=np.int64)
    return rows if len(rows) == n_rows else plain
