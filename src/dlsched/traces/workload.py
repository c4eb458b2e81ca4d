"""The canonical workload: one validated job table plus where it came from."""

from __future__ import annotations

import copy
import hashlib
import os
from typing import Any

import numpy as np
import pandas as pd


class Workload:
    """A validated job table in the canonical schema, with its provenance.

    ``jobs`` has one row per job, sorted by ``(submit_time, job_id)`` with a fresh
    RangeIndex; its columns are ``schema.CANONICAL_COLUMNS``, then any passthrough columns
    of the source file, then ``source_row`` (the 1-based line of the source file).
    ``provenance`` is a JSON-serialisable dict: source, format, rows read and loaded,
    skipped rows with their reasons, transforms applied, and whether loading was lenient.

    Build one with ``dlsched.traces.load_trace`` or ``schema.validate_jobs``; the
    constructor stores what it is given and checks nothing. ``validate_jobs`` records a
    fingerprint of the table it checked (`mark_checked`): ``dlsched.simulate`` validates
    the table again when it no longer matches (edited after loading, or built by hand).
    """

    def __init__(self, jobs: pd.DataFrame, provenance: dict[str, Any]) -> None:
        self.jobs = jobs
        self.provenance = provenance
        self._checked: bytes | None = None  # `fingerprint()` of the table when validated

    def fingerprint(self) -> bytes:
        """A digest of the job table: its columns, dtypes, index and every value.

        Numeric columns are hashed from their bytes, others through pandas' value hash:
        about 0.3 s for a million jobs, a fraction of validating them."""
        jobs = self.jobs
        digest = hashlib.blake2b(digest_size=16)
        digest.update(repr((list(jobs.columns), [str(t) for t in jobs.dtypes])).encode())
        digest.update(pd.util.hash_pandas_object(jobs.index).to_numpy().tobytes())
        for _, column in jobs.items():
            values = column.to_numpy()
            if values.dtype.kind in "biufcmM":
                digest.update(np.ascontiguousarray(values).view(np.uint8).tobytes())
            else:
                digest.update(pd.util.hash_pandas_object(column, index=False).to_numpy().tobytes())
        return digest.digest()

    def mark_checked(self) -> None:
        """Record that the table, as it is now, passed validation (``validate_jobs``)."""
        self._checked = self.fingerprint()

    def is_checked(self) -> bool:
        """Whether the table is still the one that passed validation."""
        return self._checked is not None and self._checked == self.fingerprint()

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
