"""The canonical workload: one validated job table plus where it came from."""

from __future__ import annotations

import copy
import os
from typing import Any

import pandas as pd


class Workload:
    """A validated job table in the canonical schema, with its provenance.

    ``jobs`` has one row per job, sorted by ``(submit_time, job_id)`` with a fresh
    RangeIndex; its columns are ``schema.CANONICAL_COLUMNS``, then any passthrough columns
    of the source file, then ``source_row`` (the 1-based line of the source file).
    ``provenance`` is a JSON-serialisable dict: source, format, rows read and loaded,
    skipped rows with their reasons, transforms applied, and whether loading was lenient.

    Build one with ``dlsched.traces.load_trace`` or ``schema.validate_jobs``; the
    constructor stores what it is given and checks nothing.
    """

    def __init__(self, jobs: pd.DataFrame, provenance: dict[str, Any]) -> None:
        self.jobs = jobs
        self.provenance = provenance

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        return f"Workload({len(self)} jobs from {self.provenance.get('source', '?')})"

    def head(self, n: int) -> Workload:
        """Return a new workload of the first ``n`` jobs in submit order."""
        if n < 0:
            raise ValueError(f"head(n) needs n >= 0, got {n}")
        provenance = copy.deepcopy(self.provenance)
        provenance.setdefault("transforms", []).append({"name": "head", "n": int(n)})
        return Workload(self.jobs.iloc[:n].reset_index(drop=True), provenance)

    def _table(self) -> pd.DataFrame:
        return self.jobs.drop(columns=["source_row"], errors="ignore")

    def to_csv(self, path: str | os.PathLike[str]) -> None:
        """Write the job table (without ``source_row``) as a canonical CSV (``.gz`` compresses).

        Atomically, never over a symbolic link nor over the file it was loaded from
        (`dlsched.atomic`)."""
        from dlsched.atomic import input_files, write_csv

        write_csv(path, self._table(), input_files(self.provenance.get("source")))

    def to_parquet(self, path: str | os.PathLike[str]) -> None:
        """Write the job table (without ``source_row``) as a canonical parquet file.

        Atomically, never over a symbolic link nor over the file it was loaded from
        (`dlsched.atomic`)."""
        from dlsched.atomic import input_files, write_parquet

        write_parquet(path, self._table(), input_files(self.provenance.get("source")))
