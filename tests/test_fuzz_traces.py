"""A fuzzer over trace values: a clear error or a correct result, never anything else.

Each example draws a small canonical table that would load, then spoils some of it: one
cell, or a whole column, of any canonical column (the optional ones included) gets NaN,
±inf, a huge number (1e300, 1.6e18, 2^43), a negative, zero, a fraction, a true/false
value, a list, a string (empty, blank, words, spellings of numbers) or None. The table is
written as CSV and as parquet and loaded with ``load_trace``, strict and lenient:

- loading either raises ``TraceError`` naming the file (and, for a bad row, the row and the
  field), or gives a workload whose every value passes the schema's invariants (finite, in
  range, the numbers the file holds and no others), with every row either loaded, skipped
  with a reason (lenient) or excluded and counted: nothing is dropped silently;
- no other exception, and no hang (each example has a wall-clock limit and a deadline);
- each workload that loads is simulated under every registered policy on a small cluster
  with the auditor on: every job finishes exactly once (see
  ``test_properties_policies.check_lifecycle``), or the run stops with a ``DlschedError``;
  a job the cluster can never run is reported ``unschedulable`` (lenient loading). A
  round-based policy is spared workloads of more than ``MAX_ROUNDS`` rounds (see there).

Examples: ``LOAD_EXAMPLES`` for loading and ``SIMULATE_EXAMPLES`` per policy by default
(the file runs in well under a minute); ``DLSCHED_HYPOTHESIS_EXAMPLES=<n>`` (see
``tests/conftest.py``) runs n of each, e.g.
    DLSCHED_HYPOTHESIS_EXAMPLES=500 python -m pytest -q -p no:xdist tests/test_fuzz_traces.py
"""

from __future__ import annotations

import contextlib
import math
import numbers
import os
import signal
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from test_properties_policies import check_lifecycle, policy_parameters

import dlsched
from dlsched.errors import DlschedError, TraceError
from dlsched.traces import load_trace
from dlsched.traces.schema import MAX_TIME_S, TEXT_COLUMNS

LOAD_EXAMPLES = 60
SIMULATE_EXAMPLES = 3
_LONG = os.environ.get("DLSCHED_HYPOTHESIS_EXAMPLES", "").strip()
LOAD_SETTINGS = settings(
    max_examples=int(_LONG) if _LONG else LOAD_EXAMPLES,
    deadline=10_000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SIMULATE_SETTINGS = settings(
    max_examples=int(_LONG) if _LONG else SIMULATE_EXAMPLES,
    deadline=60_000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
WALL_LIMIT_S = 60
"""An example running longer than this is a hang (hypothesis' deadline only reports a slow
example once it has finished)."""
MAX_ROUNDS = 1_000
"""A round-based policy costs a scheduling call per round, however little changes: a valid
job of 4e8 s (12 years) is a million rounds of 360 s, ~20 minutes under ``fifo_packed``.
Workloads that would take a round-based policy more rounds than this (by submit span plus
total work, a bound for a work-conserving schedule) are loaded but not simulated under it
(counted as an event); event-driven policies simulate them all."""

NUMBER_COLUMNS = (
    "submit_time",
    "num_gpus",
    "duration",
    "total_steps",
    "deadline",
    "priority",
    "gpu_milli",
    "duration_v100",
    "min_gpus",
    "max_gpus",
    "cpu_milli",
    "memory_mib",
)
FUZZED_COLUMNS = ("job_id", *NUMBER_COLUMNS, *(c for c in TEXT_COLUMNS if c != "job_id"))
NA_TOKENS = {"", "na", "nan", "n/a", "null", "none"}
_BAD = object()  # a value no number column may take

NASTY = st.sampled_from(
    [
        math.nan,
        math.inf,
        -math.inf,
        1e300,
        -1e300,
        1.6e18,
        2.0**43,
        8.7e12,
        1.6e12,
        -1.0,
        0.0,
        -0.0,
        1e-300,
        0.5,
        2.5,
        3,
        2**31,
        2**63,
        "",
        " ",
        "abc",
        "True",
        "nan",
        "inf",
        "1e400",
        " 7 ",
        "0x10",
        True,
        False,
        None,
        [1, 2],
        [],
    ]
)
VALUES = st.one_of(
    NASTY,
    st.floats(),
    st.integers(-(2**64), 2**64),
    st.text(max_size=4),
    st.booleans(),
)


# ---- drawing tables -------------------------------------------------------------------------


@st.composite
def base_tables(draw: st.DrawFn) -> pd.DataFrame:
    """1–4 jobs that load and fit `CLUSTER`, with some optional columns present."""
    n = draw(st.integers(1, 4))
    submit = sorted(draw(st.lists(st.floats(0, 100), min_size=n, max_size=n)))
    steps = draw(st.booleans())
    work = st.floats(1, 100)
    table: dict[str, list[Any]] = {
        "job_id": list(range(n)) if draw(st.booleans()) else [f"j{i}" for i in range(n)],
        "submit_time": submit,
        "num_gpus": draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)),
        "duration": [math.nan] * n if steps else draw(st.lists(work, min_size=n, max_size=n)),
        "total_steps": draw(st.lists(work, min_size=n, max_size=n)) if steps else [math.nan] * n,
        "model": draw(st.lists(st.sampled_from(["resnet50", "vgg16"]), min_size=n, max_size=n)),
    }
    if draw(st.booleans()):
        table["deadline"] = [s + draw(st.floats(0, 1000)) for s in submit]
    if draw(st.booleans()):
        table["priority"] = draw(st.lists(st.floats(0.5, 4), min_size=n, max_size=n))
    if draw(st.booleans()):
        table["gpu_type"] = ["V100"] * n
    if draw(st.booleans()):
        table["user"] = ["alice"] * n
    return pd.DataFrame(table)


@st.composite
def spoiled_tables(draw: st.DrawFn, most: int = 3) -> pd.DataFrame:
    """A base table with 1–`most` cells, or whole columns, of canonical columns spoiled."""
    table = draw(base_tables())
    n = len(table)
    for _ in range(draw(st.integers(1, most))):
        column = draw(st.sampled_from(FUZZED_COLUMNS))
        value = draw(VALUES)
        if column in table.columns:
            values = table[column].astype(object).tolist()
        else:
            values = [None] * n
        if draw(st.booleans()):  # one cell
            values[draw(st.integers(0, n - 1))] = value
        else:  # the whole column (homogeneous: parquet keeps its type)
            values = [value] * n
        table[column] = pd.Series(values, dtype=object)
    return table


# ---- writing and loading --------------------------------------------------------------------


def write(table: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Write `table` as CSV or parquet and return the values the file holds.

    A CSV holds them as written (pandas writes floats exactly, True as "True", a list as
    "[1, 2]"). pyarrow converts a mixed column when it can (True beside floats becomes
    1.0), so a parquet file's values are read back; a column it cannot type is written as
    text, as a CSV would hold it."""
    if path.suffix == ".csv":
        table.to_csv(path, index=False)
        return table
    try:
        table.to_parquet(path, index=False)
    except Exception:  # noqa: BLE001  (pyarrow's conversion errors have no common base)
        mixed = {c: table[c].map(lambda v: None if v is None else str(v)) for c in table}
        table.assign(**{c: v for c, v in mixed.items() if table[c].dtype == object}).to_parquet(
            path, index=False
        )
    return pd.read_parquet(path)


def _as_number(value: Any) -> Any:
    """What a number column must make of a value: a float, None (no value) or `_BAD`."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, (bool, np.bool_)):
        return _BAD
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in NA_TOKENS:
            return None
        try:
            return float(text)
        except ValueError:
            return _BAD
    return _BAD  # a list, bytes, another object


def source_values(table: pd.DataFrame, path: Path, column: str) -> dict[int, Any]:
    """source_row → the value the file holds in `column` (as written)."""
    first = 2 if path.suffix == ".csv" else 1
    return {i + first: v for i, v in enumerate(table[column].tolist())} if column in table else {}


def check_loaded(workload: dlsched.Workload, table: pd.DataFrame, path: Path) -> None:
    """The schema's invariants, every row accounted for, and the file's own numbers."""
    p = workload.provenance
    assert p["rows_read"] == len(table)
    assert p["rows_loaded"] + len(p["skipped"]) + sum(p["excluded"].values()) == len(table)
    assert len(workload) == p["rows_loaded"] >= 1
    jobs = workload.jobs
    submit = jobs["submit_time"].to_numpy(dtype=float)
    assert np.isfinite(submit).all() and (submit >= 0).all() and (submit < MAX_TIME_S).all()
    gpus = jobs["num_gpus"].to_numpy()
    assert jobs["num_gpus"].dtype == np.int64 and (gpus >= 0).all() and (gpus < 2**31).all()
    duration = jobs["duration"].to_numpy(dtype=float)
    steps = jobs["total_steps"].to_numpy(dtype=float)
    for values in (duration, jobs.get("duration_v100", pd.Series(dtype=float)).to_numpy(float)):
        given = values[~np.isnan(values)]
        assert ((given > 0) & (given < MAX_TIME_S)).all()
    assert ((steps[~np.isnan(steps)] > 0) & np.isfinite(steps[~np.isnan(steps)])).all()
    assert not (~np.isnan(duration) & ~np.isnan(steps)).any(), "both duration and total_steps"
    deadline = jobs["deadline"].to_numpy(dtype=float)
    has = ~np.isnan(deadline)
    assert ((deadline[has] >= submit[has]) & (deadline[has] < MAX_TIME_S)).all()
    priority = jobs["priority"].to_numpy(dtype=float)
    assert (np.isfinite(priority) & (priority > 0)).all()
    milli = jobs["gpu_milli"].to_numpy()
    assert ((milli >= 0) & (milli <= 1000)).all()
    for column in ("min_gpus", "max_gpus"):
        if column in jobs:
            bound = jobs[column].to_numpy(dtype=float)
            given = bound[~np.isnan(bound)]
            assert ((given >= 1) & (np.floor(given) == given)).all()
    for column in TEXT_COLUMNS:
        assert all(v is None or isinstance(v, (str, int, np.integer)) for v in jobs[column])
    assert jobs["job_id"].is_unique
    # Every loaded number is the one the file holds (never a bool read as 1, a time span's
    # nanoseconds, or a value rounded away).
    rows = jobs["source_row"].tolist()
    for column, default in (
        ("submit_time", None),
        ("num_gpus", None),
        ("duration", math.nan),
        ("total_steps", math.nan),
        ("deadline", math.nan),
        ("priority", 1.0),
    ):
        written = source_values(table, path, column)
        if not written:
            continue
        for row, loaded in zip(rows, jobs[column].tolist(), strict=True):
            expected = _as_number(written[row])
            assert expected is not _BAD, f"row {row}: {column} {written[row]!r} was accepted"
            if expected is None:
                assert default is not None, f"row {row}: missing {column} accepted"
                expected = default
            assert loaded == expected or (math.isnan(expected) and math.isnan(loaded)), (
                f"row {row}: {column} {written[row]!r} loaded as {loaded!r}"
            )


def check_error(error: TraceError, path: Path) -> None:
    """A loading error names the file, and the field of a bad row."""
    assert str(path) in str(error) and error.path is not None
    if error.row is not None and "malformed CSV" not in error.reason:
        assert error.field, str(error)


@contextlib.contextmanager
def wall_limit(seconds: int) -> Iterator[None]:
    """Fail an example that runs longer than `seconds` (a hang), where SIGALRM exists."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def hang(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the example ran longer than {seconds} s: a hang?")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def load_both_ways(table: pd.DataFrame, path: Path) -> dlsched.Workload | None:
    """Load `path` strict and lenient; check each outcome; return the lenient workload."""
    table = write(table, path)
    strict: Any
    try:
        strict = load_trace(path)
    except TraceError as exc:
        check_error(exc, path)
        strict = exc
    else:
        check_loaded(strict, table, path)
    try:
        lenient = load_trace(path, lenient=True)
    except TraceError as exc:
        check_error(exc, path)
        assert isinstance(strict, TraceError), "lenient loading refused what strict loaded"
        event("refused, strict and lenient")
        return None
    event("loaded, strict and lenient" if isinstance(strict, dlsched.Workload) else "lenient only")
    check_loaded(lenient, table, path)
    if isinstance(strict, TraceError):
        if strict.row is not None and lenient.provenance["skipped"]:
            assert strict.row in {s["row"] for s in lenient.provenance["skipped"]}
    else:
        pd.testing.assert_frame_equal(strict.jobs, lenient.jobs)
    return lenient


# ---- the properties -------------------------------------------------------------------------


@LOAD_SETTINGS
@given(table=spoiled_tables(), suffix=st.sampled_from([".csv", ".parquet"]))
def test_spoiled_values_are_refused_clearly_or_load_correctly(table, suffix):
    """Every spoiled table raises a TraceError naming the file/row/field or loads a workload
    whose every value passes the invariants; nothing else, no hang, nothing dropped."""
    note(repr(table.to_dict("list")))
    with tempfile.TemporaryDirectory() as tmp, wall_limit(WALL_LIMIT_S):
        load_both_ways(table, Path(tmp) / f"t{suffix}")


def rounds_needed(policy: str, params: dict[str, Any], jobs: pd.DataFrame) -> float:
    """About how many scheduling rounds `policy` needs for `jobs` (0: event-driven): the
    submit span plus the total work (seconds, or steps at the `duration` model's 1 step/s),
    over its round length."""
    round_s = getattr(dlsched.policies.get(policy, **params), "round_s", None)
    if not round_s:
        return 0.0
    columns = [
        c for c in jobs.columns if c in ("duration", "total_steps") or c.startswith("duration_")
    ]
    work = np.fmax.reduce([jobs[c].to_numpy(dtype=float) for c in columns])
    horizon = float(jobs["submit_time"].max()) + float(np.nansum(work))
    return horizon / round_s


CLUSTER = dlsched.Cluster.from_dict(
    {
        "name": "fuzz",
        "gpu_types": {"V100": {"cost_per_hour": 2.48}, "K80": {"cost_per_hour": 0.45}},
        "nodes": [
            {"name": "v", "gpu_type": "V100", "count": 2, "gpus_per_node": 4},
            {"name": "k", "gpu_type": "K80", "count": 1, "gpus_per_node": 4},
        ],
    }
)


@pytest.mark.parametrize(("policy", "case"), policy_parameters())
@SIMULATE_SETTINGS
@given(table=spoiled_tables(most=1), suffix=st.sampled_from([".csv", ".parquet"]))
def test_every_policy_finishes_what_loads_or_stops_clearly(policy, case, table, suffix):
    """A fuzzed workload that loads runs under the policy with the auditor on: every job
    finishes exactly once, or the run stops with a DlschedError."""
    note(repr(table.to_dict("list")))
    with tempfile.TemporaryDirectory() as tmp, wall_limit(WALL_LIMIT_S):
        workload = load_both_ways(table, Path(tmp) / f"t{suffix}")
        if workload is None:
            return
        if rounds_needed(policy, case.params, workload.jobs) > MAX_ROUNDS:
            event(f"not simulated: more than {MAX_ROUNDS} rounds")
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = dlsched.simulate(workload, CLUSTER, policy, audit=True, **case.params)
            except DlschedError as exc:
                assert str(exc)
                event(f"simulation stopped: {type(exc).__name__}")
                return
        event("simulated")
        # A job the cluster can never run (9 GPUs, a type it lacks) is reported, not run,
        # as the lenient load asked; every other job goes through its whole life.
        never = {str(u["job_id"]) for u in result.meta["unschedulable"]}
        table = result.jobs
        assert set(table.loc[table["status"] == "unschedulable", "job_id"].map(str)) == never
        ran = SimpleNamespace(
            jobs=table[~table["job_id"].map(str).isin(never)], events=result.events
        )
        jobs = workload.jobs[~workload.jobs["job_id"].map(str).isin(never)]
        check_lifecycle(case, jobs, ran, caught)
        assert np.isfinite(ran.jobs.loc[ran.jobs["status"] == "finished", "jct"]).all()
