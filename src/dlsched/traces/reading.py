"""Reading trace files: plain, gzip or single-member tar.gz; CSV in bounded-memory chunks.

Every reader here turns I/O and parse failures into ``TraceError`` naming the file (and the
line, when the parser knows it), and numbers data rows by their 1-based line in the file,
as an editor shows them, so that later errors can point at the row to fix.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import os
import re
import tarfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from dlsched.errors import TraceError

CHUNK_ROWS = 250_000
"""Rows per chunk when streaming a CSV (bounds the parser's working memory)."""

_BLOCK_BYTES = 1 << 22
_GZIP_MAGIC = b"\x1f\x8b"
_TAR_SUFFIXES = (".tar.gz", ".tgz")
# Failures of gzip / zlib / tar streams: truncated or corrupt compressed data.
_STREAM_ERRORS = (OSError, EOFError, zlib.error, tarfile.TarError)
# pandas < 3 parses floats slightly inexactly unless asked; pandas 3 is exact and deprecates it.
_FLOAT_OPTIONS = {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}
_WHITESPACE = np.array([ord(c) for c in " \t\r\n"], dtype=np.uint8)


def is_tar(path: str | os.PathLike[str]) -> bool:
    """Whether the file name says tar.gz (as the Alibaba PAI 2020 tables are shipped)."""
    return Path(path).name.lower().endswith(_TAR_SUFFIXES)


@contextlib.contextmanager
def open_binary(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """Open a file for streaming: gunzipped when it starts with the gzip magic number; for a
    ``.tar.gz``, the stream of its one regular member (nothing is extracted to disk)."""
    path = str(path)
    try:
        if is_tar(path):
            with tarfile.open(path, "r:gz") as archive:
                members = [m for m in archive.getmembers() if m.isfile()]
                if len(members) != 1:
                    raise TraceError(
                        f"a .tar.gz trace must hold exactly one file, this one holds "
                        f"{len(members)}",
                        path=path,
                    )
                stream = archive.extractfile(members[0])
                assert stream is not None  # a regular file always has a stream
                yield stream
            return
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == _GZIP_MAGIC
        with gzip.open(path, "rb") if gzipped else open(path, "rb") as stream:
            yield stream
    except TraceError:
        raise
    except _STREAM_ERRORS as exc:
        raise TraceError(f"cannot read the file ({exc})", path=path) from None


def read_raw(path: str | os.PathLike[str]) -> bytes:
    """The file's bytes, decompressed (for small files; big ones stream with ``open_binary``)."""
    with open_binary(path) as stream:
        try:
            return stream.read()
        except _STREAM_ERRORS as exc:
            raise TraceError(f"corrupt compressed data ({exc})", path=str(path)) from None


def read_head(path: str | os.PathLike[str], size: int = 1 << 16) -> bytes:
    """Up to ``size`` leading bytes of the (decompressed) file, for format detection."""
    with open_binary(path) as stream:
        try:
            return stream.read(size)
        except _STREAM_ERRORS as exc:
            raise TraceError(f"corrupt compressed data ({exc})", path=str(path)) from None


def read_csv_header(path: str | os.PathLike[str]) -> list[str]:
    """The column names in the first non-blank line of a CSV file, stripped of spaces."""
    head = read_head(path)
    for line in head.split(b"\n"):
        if line.strip():
            try:
                text = line.decode("utf-8-sig")
            except UnicodeDecodeError:
                raise TraceError("not a UTF-8 text file (binary data?)", path=str(path)) from None
            try:
                return [name.strip() for name in next(csv.reader([text]))]
            except csv.Error as exc:
                raise TraceError(f"malformed CSV header ({exc})", path=str(path), row=1) from None
    raise TraceError("the file is empty (no header line)", path=str(path))


def iter_csv_chunks(
    path: str | os.PathLike[str],
    *,
    text_columns: Iterable[str] = (),
    names: Sequence[str] | None = None,
    usecols: Sequence[str] | None = None,
    chunk_rows: int | None = None,
) -> Iterator[pd.DataFrame]:
    """Stream a CSV as DataFrames of at most ``chunk_rows`` rows.

    With ``names`` the file has no header line and its columns get these names (a file
    with a different number of fields per line is an error). ``text_columns`` are read as
    text so that ids like ``007`` and names like ``1`` arrive as written; only the empty
    field means "no value". Column names are stripped of surrounding spaces.
    ``chunk_rows`` defaults to ``CHUNK_ROWS``, read at call time.
    """
    text = {c: str for c in text_columns}
    options: dict = {
        "dtype": text,
        "keep_default_na": False,
        "na_values": [""],
        "encoding": "utf-8-sig",
        "chunksize": chunk_rows or CHUNK_ROWS,
        **_FLOAT_OPTIONS,
    }
    if names is not None:
        options.update(header=None, names=list(names))
    if usecols is not None:
        wanted = set(usecols)
        options["usecols"] = lambda c: c.strip() in wanted
    path = str(path)
    with open_binary(path) as stream:
        try:
            with pd.read_csv(stream, **options) as reader:
                for chunk in reader:
                    chunk.columns = [str(c).strip() for c in chunk.columns]
                    yield chunk
        except pd.errors.EmptyDataError:
            raise TraceError("the file is empty (no header line)", path=path) from None
        except pd.errors.ParserError as exc:
            message = " ".join(str(exc).split())
            line = re.search(r"line (\d+)", message)
            raise TraceError(
                f"malformed CSV ({message})", path=path, row=int(line.group(1)) if line else None
            ) from None
        except UnicodeDecodeError:
            raise TraceError("not a UTF-8 text file (binary data?)", path=path) from None
        except _STREAM_ERRORS as exc:
            raise TraceError(f"corrupt compressed data ({exc})", path=path) from None


def read_csv_frame(
    path: str | os.PathLike[str],
    *,
    text_columns: Iterable[str] = (),
    names: Sequence[str] | None = None,
    chunk_rows: int | None = None,
) -> pd.DataFrame:
    """Read a whole CSV (in chunks, see ``iter_csv_chunks``) and add ``source_row``."""
    chunks = list(
        iter_csv_chunks(path, text_columns=text_columns, names=names, chunk_rows=chunk_rows)
    )
    df = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
    del chunks
    df["source_row"] = data_line_numbers(path, len(df), header=names is None)
    return df


def data_line_numbers(
    path: str | os.PathLike[str], n_rows: int, *, header: bool = True
) -> np.ndarray:
    """The 1-based file line of each data row, skipping blank lines as the CSV parser does.

    Exact unless a quoted field spans lines; then it falls back to "row i is line i + 1 +
    (1 if there is a header)".
    """
    first = 2 if header else 1
    plain = np.arange(first, n_rows + first, dtype=np.int64)
    with open_binary(path) as stream:
        try:
            lines = nonblank_line_numbers(stream)
        except _STREAM_ERRORS as exc:
            raise TraceError(f"corrupt compressed data ({exc})", path=str(path)) from None
    rows = lines[1:] if header else lines
    return rows if len(rows) == n_rows else plain


def nonblank_line_numbers(stream: IO[bytes], block_bytes: int = _BLOCK_BYTES) -> np.ndarray:
    """1-based numbers of the lines holding anything but spaces, tabs and ``\\r``.

    Streams the input in blocks. A line whose first byte is not whitespace has text, which
    settles almost every line with one vectorised look; only lines starting with
    whitespace (or empty) are scanned further. A multi-gigabyte file costs one pass and an
    int64 per non-blank line.

    >>> import io
    >>> nonblank_line_numbers(io.BytesIO(b"a,b\\n\\n1,2\\n \\t\\n 3,4")).tolist()
    [1, 3, 5]
    """
    found: list[np.ndarray] = []
    lines_done = 0
    partial_has_text = False  # the unfinished line carried over from the previous block
    while block := stream.read(block_bytes):
        data = np.frombuffer(block, dtype=np.uint8)
        newlines = np.flatnonzero(data == 10)
        # Segments: [start, end) between newlines; segment 0 continues the previous block's
        # unfinished line and the last one is this block's unfinished line.
        starts = np.empty(len(newlines) + 1, dtype=np.int64)
        starts[0] = 0
        starts[1:] = newlines + 1
        ends = np.empty(len(newlines) + 1, dtype=np.int64)
        ends[:-1] = newlines
        ends[-1] = len(data)
        nonempty = starts < ends
        first = np.full(len(starts), 32, dtype=np.uint8)
        first[nonempty] = data[starts[nonempty]]
        has_text = ~np.isin(first, _WHITESPACE)
        for i in np.flatnonzero(~has_text & nonempty):  # rare: lines starting with blanks
            has_text[i] = not np.isin(data[starts[i] : ends[i]], _WHITESPACE).all()
        has_text[0] |= partial_has_text
        if len(newlines):
            found.append(lines_done + 1 + np.flatnonzero(has_text[:-1]))
            lines_done += len(newlines)
            partial_has_text = bool(has_text[-1])
        else:
            partial_has_text = bool(has_text[0])
    if partial_has_text:
        found.append(np.array([lines_done + 1], dtype=np.int64))
    return np.concatenate(found).astype(np.int64) if found else np.zeros(0, dtype=np.int64)


def read_text(path: str | os.PathLike[str]) -> str:
    """The whole (decompressed) file as UTF-8 text."""
    try:
        return read_raw(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TraceError("not a UTF-8 text file (binary data?)", path=str(path)) from None


__all__ = [
    "CHUNK_ROWS",
    "data_line_numbers",
    "is_tar",
    "iter_csv_chunks",
    "nonblank_line_numbers",
    "open_binary",
    "read_csv_frame",
    "read_csv_header",
    "read_head",
    "read_raw",
    "read_text",
]
