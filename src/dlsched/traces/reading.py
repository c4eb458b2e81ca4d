"""Reading trace files: plain, gzip or single-member tar.gz; CSV in bounded-memory chunks.

Every reader here turns I/O and parse failures into ``TraceError`` naming the file (and the
line, when the parser knows it), and numbers data rows by their 1-based line in the file,
as an editor shows them, so that later errors can point at the row to fix.
"""

from __future__ import annotations

import array
import contextlib
import csv
import gzip
import io
import os
import re
import tarfile
import warnings
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
import pandas as pd

from dlsched.errors import TraceError

CHUNK_ROWS = 250_000
"""Rows per chunk when streaming a CSV (bounds the parser's working memory)."""

MAX_COLUMNS = 1_000
"""Most columns a trace file may have (canonical, per-type durations and passthrough ones
together); a wider file is refused from its header, before it is parsed."""
MAX_HEADER_BYTES = 1 << 20
"""Longest header line read (1 MiB: 1,000 names of up to a kilobyte each)."""

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
                member = archive.extractfile(members[0])
                assert member is not None  # a regular file always has a stream
                yield member
            return
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == _GZIP_MAGIC
        opened = gzip.open(path, "rb") if gzipped else open(path, "rb")
        with cast(IO[bytes], opened) as stream:
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
    """The column names in the first non-blank line of a CSV file, stripped of spaces.

    Only that line is read, and only up to ``MAX_HEADER_BYTES``: a header of more than
    ``MAX_COLUMNS`` names is refused here, before any parser sees the file (a header of
    200,000 columns would otherwise cost minutes and gigabytes before any error).
    """
    path = str(path)
    with open_binary(path) as stream:
        number = 0
        while True:
            try:
                line = stream.readline(MAX_HEADER_BYTES + 1)
            except _STREAM_ERRORS as exc:
                raise TraceError(f"corrupt compressed data ({exc})", path=path) from None
            if not line:
                break
            number += 1
            if len(line) > MAX_HEADER_BYTES:
                fields = line.count(b",") + 1
                if fields > MAX_COLUMNS:
                    raise TraceError(
                        _too_many_columns(f"at least {fields:,}"), path=path, row=number
                    )
                raise TraceError(
                    f"the header line is longer than {MAX_HEADER_BYTES:,} bytes; is this a "
                    "CSV trace?",
                    path=path,
                    row=number,
                )
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise TraceError(_not_utf8(exc), path=path, row=number) from None
            try:
                names = [name.strip() for name in next(csv.reader([text]))]
            except csv.Error as exc:
                raise TraceError(f"malformed CSV header ({exc})", path=path, row=number) from None
            if len(names) > MAX_COLUMNS:
                raise TraceError(_too_many_columns(f"{len(names):,}"), path=path, row=number)
            return names
    raise TraceError("the file is empty: it holds no jobs (not even a header line)", path=path)


def _too_many_columns(count: str) -> str:
    return (
        f"the header has {count} columns, more than the {MAX_COLUMNS:,} a trace may have "
        "(dlsched.traces.reading.MAX_COLUMNS); keep only the columns the trace needs"
    )


def check_header(names: Sequence[str], path: str | os.PathLike[str]) -> None:
    """Raise if a column name appears twice (pandas would silently read only the first)."""
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name and name in seen:
            raise TraceError(
                f"column {name!r} appears twice in the header (columns {seen[name]} and "
                f"{position}) and only one can be read; rename or remove the other",
                path=str(path),
                field=name,
            )
        seen.setdefault(name, position)


@dataclass(frozen=True)
class CsvRecords:
    """What one pass over a CSV's bytes found (see ``scan_records``)."""

    lines: np.ndarray
    """1-based file line on which each non-blank record starts (the header included)."""
    fields: int
    """Fields a record must have: the first record's count, or the count given."""
    malformed: list[tuple[int, int]]
    """``(index into lines, field count)`` of every record with another count."""


def scan_records(
    stream: IO[bytes], *, fields: int | None = None, block_bytes: int = _BLOCK_BYTES
) -> CsvRecords:
    """Find the non-blank records of a CSV and those with the wrong number of fields.

    ``fields`` is the count every record must have; None takes the first record's (the
    header's). Quote-aware: delimiters and line breaks inside a quoted field do not count,
    so a record spanning lines is one record, numbered by its first line. Streams the input
    in blocks with vectorised counts; a file whose quotes are not at field boundaries (a
    ``"`` inside an unquoted field) is scanned again with the ``csv`` module. Costs one
    int64 per record.

    >>> import io
    >>> found = scan_records(io.BytesIO(b'a,b\\n\\n1,2\\n"x\\ny",3,4\\n5,6\\n'))
    >>> found.lines.tolist(), found.fields, found.malformed
    ([1, 3, 4, 6], 2, [(2, 3)])
    """
    try:
        return _scan_vectorised(stream, fields, block_bytes)
    except _LooseQuotes:
        stream.seek(0)
        return _scan_with_csv(stream, fields)


class _LooseQuotes(Exception):
    """A quote character that a vectorised scan cannot place (inside an unquoted field)."""


_COMMA, _NEWLINE, _QUOTE, _CR = 44, 10, 34, 13
_OPEN_AFTER = np.array([_COMMA, _NEWLINE, _QUOTE], dtype=np.uint8)
_CLOSE_BEFORE = np.array([_COMMA, _NEWLINE, _QUOTE, _CR], dtype=np.uint8)


def _scan_vectorised(stream: IO[bytes], fields: int | None, block_bytes: int) -> CsvRecords:
    found: list[np.ndarray] = []
    malformed: list[tuple[int, int]] = []
    n_records = 0
    lines_done = 0  # line breaks before this block
    in_quotes = False
    previous_byte = _NEWLINE  # the byte before the block (a file starts as after a newline)
    # The unfinished record carried from one block to the next.
    carry_text, carry_commas, carry_line = False, 0, 1

    def finish(lines: np.ndarray, counts: np.ndarray) -> None:
        nonlocal fields, n_records
        if not len(lines):
            return
        if fields is None:
            fields = int(counts[0])
        found.append(lines)
        for i in np.flatnonzero(counts != fields):
            malformed.append((n_records + int(i), int(counts[i])))
        n_records += len(lines)

    while block := stream.read(block_bytes):
        data = np.frombuffer(block, dtype=np.uint8)
        is_newline = data == _NEWLINE
        quotes = np.flatnonzero(data == _QUOTE)
        if in_quotes or len(quotes):
            parity = (np.cumsum(data == _QUOTE, dtype=np.int64) + in_quotes) & 1
            _check_quotes(data, quotes, parity, previous_byte)
            outside = parity == 0  # for a delimiter, the state at that byte
            newlines = np.flatnonzero(is_newline & outside)
            commas = np.flatnonzero((data == _COMMA) & outside)
            in_quotes = bool(parity[-1])
            line_breaks = np.cumsum(is_newline, dtype=np.int64)
            next_lines = lines_done + 1 + line_breaks[newlines]
        else:
            newlines = np.flatnonzero(is_newline)
            commas = np.flatnonzero(data == _COMMA)
            next_lines = lines_done + 2 + np.arange(len(newlines), dtype=np.int64)
        # Segments between record breaks: segment 0 continues the carried record, the last
        # one is unfinished.
        starts = np.empty(len(newlines) + 1, dtype=np.int64)
        starts[0] = 0
        starts[1:] = newlines + 1
        ends = np.empty(len(newlines) + 1, dtype=np.int64)
        ends[:-1] = newlines
        ends[-1] = len(data)
        has_text = _segments_with_text(data, starts, ends)
        has_text[0] |= carry_text
        commas_in = np.bincount(np.searchsorted(newlines, commas), minlength=len(starts))
        commas_in[0] += carry_commas
        seg_lines = np.empty(len(starts), dtype=np.int64)
        seg_lines[0] = carry_line
        seg_lines[1:] = next_lines
        done = has_text[:-1]
        finish(seg_lines[:-1][done], commas_in[:-1][done] + 1)
        carry_text, carry_commas, carry_line = (
            bool(has_text[-1]),
            int(commas_in[-1]),
            int(seg_lines[-1]),
        )
        lines_done += int(is_newline.sum())
        previous_byte = int(data[-1])
    if carry_text:
        finish(np.array([carry_line], dtype=np.int64), np.array([carry_commas + 1]))
    lines = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return CsvRecords(lines, fields or 0, malformed)


def _check_quotes(
    data: np.ndarray, quotes: np.ndarray, parity: np.ndarray, previous_byte: int
) -> None:
    """Raise ``_LooseQuotes`` unless every quote opens a field, closes one or is doubled."""
    if not len(quotes):
        return
    opening = parity[quotes] == 1  # the quote turned quoting on
    before = np.where(quotes > 0, data[np.maximum(quotes - 1, 0)], previous_byte)
    after_index = quotes + 1
    at_end = after_index >= len(data)
    after = np.where(at_end, _COMMA, data[np.minimum(after_index, len(data) - 1)])
    if not np.isin(before[opening], _OPEN_AFTER).all():
        raise _LooseQuotes
    if not np.isin(after[~opening], _CLOSE_BEFORE).all():
        raise _LooseQuotes


def _segments_with_text(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which ``[start, end)`` byte ranges hold anything but spaces, tabs and ``\\r``."""
    nonempty = starts < ends
    first = np.full(len(starts), 32, dtype=np.uint8)
    first[nonempty] = data[starts[nonempty]]
    has_text = ~np.isin(first, _WHITESPACE)
    for i in np.flatnonzero(~has_text & nonempty):  # rare: lines starting with blanks
        has_text[i] = not np.isin(data[starts[i] : ends[i]], _WHITESPACE).all()
    return has_text


def _scan_with_csv(stream: IO[bytes], fields: int | None) -> CsvRecords:
    """``scan_records`` by the ``csv`` module, which reads a stray quote as pandas does."""
    text = io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace", newline="")
    lines = array.array("q")  # 8 bytes a record, as the vectorised scan
    malformed: list[tuple[int, int]] = []
    try:
        reader = csv.reader(text)
        line = 1
        for record in reader:
            if len(record) > 1 or (record and record[0].strip(" \t\r\n")):
                if fields is None:
                    fields = len(record)
                if len(record) != fields:
                    malformed.append((len(lines), len(record)))
                lines.append(line)
            line = reader.line_num + 1
    finally:
        text.detach()  # the caller owns the binary stream
    return CsvRecords(np.frombuffer(lines, dtype=np.int64).copy(), fields or 0, malformed)


def _malformed_reason(count: int, fields: int, *, header: bool) -> str:
    """The reason a record with ``count`` fields is refused."""
    expected = f"the header has {fields}" if header else f"this format has {fields} columns"
    if count > fields:
        fix = "remove the extra fields" + (" or name them in the header" if header else "")
    else:
        fix = "add the missing fields (an empty field is still a comma)"
    return f"malformed CSV: this row has {count} fields but {expected}; {fix}"


def _records(path: str, fields: int | None) -> CsvRecords:
    with open_binary(path) as stream:
        try:
            return scan_records(stream, fields=fields)
        except _STREAM_ERRORS as exc:
            raise TraceError(f"corrupt compressed data ({exc})", path=path) from None


def iter_csv_chunks(
    path: str | os.PathLike[str],
    *,
    text_columns: Iterable[str] = (),
    names: Sequence[str] | None = None,
    usecols: Sequence[str] | None = None,
    chunk_rows: int | None = None,
    skipped: list[dict[str, Any]] | None = None,
    source_row: bool = False,
) -> Iterator[pd.DataFrame]:
    """Stream a CSV as DataFrames of at most ``chunk_rows`` rows.

    With ``names`` the file has no header line and its columns get these names. Every row
    must have as many fields as the header (or ``names``): a row with more or fewer is
    refused, never shifted or padded. With ``skipped=None`` the first such row raises
    ``TraceError``; given a list (lenient loading), such rows are left out and described in
    it as ``{"row", "field": None, "reason"}``. A column name used twice raises.
    ``text_columns`` are read as text so that ids like ``007`` and names like ``1`` arrive
    as written; only the empty field means "no value". Column names are stripped of
    surrounding spaces. ``source_row=True`` adds the 1-based file line of each row.
    ``chunk_rows`` defaults to ``CHUNK_ROWS``, read at call time.
    """
    path = str(path)
    header = names is None
    columns = read_csv_header(path) if header else list(names or ())
    if header:
        check_header(columns, path)
    found = _records(path, None if header else len(columns))
    rows = found.lines[1:] if header else found.lines
    first_data = 1 if header else 0
    skip_lines: set[int] = set()
    if found.malformed:
        bad = np.zeros(len(found.lines), dtype=bool)
        for index, count in found.malformed:
            if index < first_data:
                continue
            line = int(found.lines[index])
            reason = _malformed_reason(count, found.fields, header=header)
            if skipped is None:
                raise TraceError(reason, path=path, row=line)
            skipped.append({"row": line, "field": None, "reason": reason})
            skip_lines.add(line - 1)  # pandas counts lines from 0
            bad[index] = True
        rows = rows[~bad[first_data:]]
    text = {c: str for c in text_columns}
    options: dict = {
        "dtype": text,
        "keep_default_na": False,
        "na_values": [""],
        "encoding": "utf-8-sig",
        "chunksize": chunk_rows or CHUNK_ROWS,
        # Never let a longer row turn the first column into an index (it shifts every column).
        "index_col": False,
        **_FLOAT_OPTIONS,
    }
    if skip_lines:
        options["skiprows"] = skip_lines
    if not header:
        options.update(header=None, names=list(columns))
    if usecols is not None:
        wanted = set(usecols)
        options["usecols"] = lambda c: c.strip() in wanted
    offset = 0
    with open_binary(path) as stream:
        try:
            with pd.read_csv(stream, **options) as reader:
                for chunk in reader:
                    lines = rows[offset : offset + len(chunk)]
                    offset += len(chunk)
                    if len(lines) != len(chunk):
                        break
                    chunk.columns = [str(c).strip() for c in chunk.columns]
                    if source_row:
                        with warnings.catch_warnings():  # a wide chunk is one block a column
                            warnings.simplefilter("ignore", pd.errors.PerformanceWarning)
                            chunk["source_row"] = lines
                    yield chunk
            if offset != len(rows):  # the parser and the scan disagree: no row can be trusted
                raise TraceError(
                    f"the CSV parser found {offset} rows where a scan of the file found "
                    f"{len(rows)}; check the file's quotes (an unclosed quoted field?)",
                    path=path,
                )
        except pd.errors.EmptyDataError:
            raise TraceError(
                "the file is empty: it holds no jobs (not even a header line)", path=path
            ) from None
        except pd.errors.ParserError as exc:
            message = " ".join(str(exc).split())
            where = re.search(r"line (\d+)", message)
            raise TraceError(
                f"malformed CSV ({message})", path=path, row=int(where.group(1)) if where else None
            ) from None
        except UnicodeDecodeError as exc:
            row, reason = _undecodable_line(path, exc)
            raise TraceError(reason, path=path, row=row) from None
        except _STREAM_ERRORS as exc:
            raise TraceError(f"corrupt compressed data ({exc})", path=path) from None


def _not_utf8(exc: UnicodeDecodeError) -> str:
    bad = exc.object[exc.start : exc.start + 1]
    return f"not UTF-8 text (byte 0x{bad.hex()}; binary data?): save the file as UTF-8"


def _undecodable_line(path: str, exc: UnicodeDecodeError) -> tuple[int | None, str]:
    """The first line that is not UTF-8, and why (only called after a decoding failure)."""
    try:
        with open_binary(path) as stream:
            for number, line in enumerate(stream, start=1):
                try:
                    line.decode("utf-8")
                except UnicodeDecodeError as found:
                    return number, _not_utf8(found)
    except _STREAM_ERRORS:
        pass
    return None, _not_utf8(exc)


def read_csv_frame(
    path: str | os.PathLike[str],
    *,
    text_columns: Iterable[str] = (),
    names: Sequence[str] | None = None,
    chunk_rows: int | None = None,
    skipped: list[dict[str, Any]] | None = None,
) -> pd.DataFrame:
    """Read a whole CSV (in chunks, see ``iter_csv_chunks``) and add ``source_row``.

    ``skipped``: as for ``iter_csv_chunks`` (None: a malformed row raises).
    """
    chunks = list(
        iter_csv_chunks(
            path,
            text_columns=text_columns,
            names=names,
            chunk_rows=chunk_rows,
            skipped=skipped,
            source_row=True,
        )
    )
    df = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
    del chunks
    return df


def data_line_numbers(
    path: str | os.PathLike[str], n_rows: int, *, header: bool = True
) -> np.ndarray:
    """The 1-based file line of each data row, skipping blank lines as the CSV parser does.

    A record whose quoted field spans lines is numbered by its first line. Falls back to
    "row i is line i + 1 + (1 if there is a header)" when the file does not have ``n_rows``
    data records.
    """
    first = 2 if header else 1
    plain = np.arange(first, n_rows + first, dtype=np.int64)
    lines = _records(str(path), None).lines
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
    raw = read_raw(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        row = raw.count(b"\n", 0, exc.start) + 1
        raise TraceError(_not_utf8(exc), path=str(path), row=row) from None


__all__ = [
    "CHUNK_ROWS",
    "MAX_COLUMNS",
    "CsvRecords",
    "check_header",
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
    "scan_records",
]
