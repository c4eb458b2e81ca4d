"""`Recorder`: the typed event log and the busy-GPU timeline of one run.

Both are kept in columns (`array.array`s of machine numbers) rather than one Python object
per row: a million-job replay writes some three million events, which as tuples held about
a third of a gigabyte to the end of the run, and the result tables are built from the
columns with numpy instead of a Python loop over rows. An event stores its time, its kind,
the job's index and its GPUs (as a code into a table of the distinct GPU tuples seen); the
GPU type, rate and overhead of the events that place a job (start, restart, migrate,
rescale, rerate) go into four side columns with the event's position. The timeline stores,
per row, its time and the free GPUs of each type (busy = capacity − free, at the end).

A long run may stream the event log to a parquet file instead (`Recorder.stream_to`,
``simulate(events=path)``): every `EVENTS_ROW_GROUP` events the columns held are written as a
row group of the same table and cleared, so the log's memory stays bounded.
"""

from __future__ import annotations

import contextlib
import math
import os
from array import array
from collections.abc import Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from dlsched.cluster import Cluster

if TYPE_CHECKING:
    import pandas as pd

    from dlsched.engine.ledger import Ledger
    from dlsched.jobs import JobSpec

#: What can happen to a job. `start`, `restart`, `migrate` and `rescale` carry the job's new
#: GPU ids; `preempt` and `finish` the ones it gave back; `rerate` the ones it keeps.
EVENT_KINDS = (
    "submit",
    "unschedulable",
    "start",
    "restart",
    "migrate",
    "rescale",
    "rerate",
    "preempt",
    "finish",
    # a policy's admission decision, right after the submit (`dlsched.engine.admission`;
    # only where the policy has an `admit` hook)
    "admit",
    "best_effort",
    "decline",
)
#: Codes of the kinds in `Recorder.kinds`.
SUBMIT, UNSCHEDULABLE, START, RESTART, MIGRATE, RESCALE, RERATE, PREEMPT, FINISH = range(9)
ADMIT, BEST_EFFORT, DECLINE = range(9, 12)
KIND_CODE = {kind: code for code, kind in enumerate(EVENT_KINDS)}


class Event(NamedTuple):
    """One row of `result.events`."""

    time: float
    event: str
    job_id: object
    num_gpus: int
    gpu_type: str | None = None
    rate: float = math.nan  # true steps/s from then on (start, move, rerate)
    overhead_s: float = math.nan  # seconds without progress that the change costs
    gpus: tuple[int, ...] = ()


EVENT_COLUMNS = list(Event._fields)

#: Events per row group of an event log streamed to parquet (`Recorder.stream_to`): the most
#: the log holds in memory meanwhile (some 30 bytes an event, plus its table while written).
EVENTS_ROW_GROUP = 1 << 20


def text_column(codes: np.ndarray, texts: Sequence[str]) -> Any:
    """`texts[codes]` (code -1: missing) as the column pandas makes of such strings: with
    pyarrow strings (pandas' default since 3.0), built by pyarrow from the codes, without
    a Python object per row; else an object array."""
    import pandas as pd

    dtype = pd.Series(["text"]).dtype  # what pandas infers for a column of strings
    if getattr(dtype, "storage", None) == "pyarrow":
        import pyarrow as pa

        indices = pa.array(codes.astype(np.int32, copy=False), mask=codes < 0)
        values = pa.DictionaryArray.from_arrays(indices, pa.array(texts, type=pa.large_string()))
        return pd.array(values.cast(pa.large_string()), dtype=dtype)
    column = np.array([*texts, None], dtype=object)[codes]  # -1 picks the None
    return column


class Recorder:
    """Collects events and the busy-GPU timeline as the engine produces them.

    The engine appends to the columns directly (its hot paths): `times`, `kinds`, `jobs`
    (job indices) and `gpu_codes` (`gpus_code(gpus)`) for every event; `placed_at`,
    `placed_type` (`type_code`), `placed_rate` and `placed_overhead` for the events that
    place a job."""

    def __init__(
        self,
        cluster: Cluster,
        free_by_type: dict[str, int] | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        self.times = array("d")
        self.kinds = array("B")
        # 32-bit job indices and GPU-set codes (2**31 of either is beyond any run's memory)
        self.jobs = array("i")
        self.gpu_codes = array("i")
        self.placed_at = array("q")
        self.placed_type = array("B")
        self.placed_rate = array("d")
        self.placed_overhead = array("d")
        # distinct GPU tuples of the log, and their codes; () is code 0
        self.gpu_sets: list[tuple[int, ...]] = [()]
        self.gpu_set_code: dict[tuple[int, ...], int] = {(): 0}
        self._type_order = tuple(sorted(cluster.gpu_types))
        self.type_code = {t: code for code, t in enumerate(self._type_order)}
        self._type_names = [cluster.display_name(t) for t in self._type_order]
        self.timeline_columns = ["time", *self._type_names]
        capacity = cluster.capacity_by_type()
        self._capacity = [capacity[t] for t in self._type_order]
        self._n_types = len(self._type_order)
        # free GPUs per type, in `_type_order`, as a tuple (one type: wrapped below)
        self._free_of: Any = itemgetter(*self._type_order) if self._n_types > 1 else None
        self.row_times = array("d")
        self.row_free = array("i")  # `_n_types` numbers per timeline row
        self._last: tuple[int, ...] | None = None  # free GPUs of the timeline's last row
        # the ledger's free GPUs per type, which `snapshot` reads
        self._free_by_type: dict[str, int] = free_by_type if free_by_type is not None else {}
        # What each job holds of CPU/memory (on the nodes that declare them) from an instant
        # on, drained from the ledger's log at each snapshot: (time, job index, milli-CPUs,
        # MiB). Only where the ledger tracks resources.
        self._resource_log = ledger.resource_log if ledger is not None else None
        self.held_times = array("d")
        self.held_jobs = array("q")
        self.held_cpu = array("q")
        self.held_mem = array("q")
        # streaming (`stream_to`): events written so far, and the log's length that writes
        self._written = 0
        self._flush_at = 1 << 62  # never, unless streaming
        self._sink: _EventSink | None = None

    # ---- events -------------------------------------------------------------------------
    def gpus_code(self, gpus: tuple[int, ...]) -> int:
        """The code of a GPU tuple in `gpu_sets` (added at its first use)."""
        code = self.gpu_set_code.get(gpus)
        if code is None:
            code = self.gpu_set_code[gpus] = len(self.gpu_sets)
            self.gpu_sets.append(gpus)
        return code

    def add(self, now: float, kind: int, job_index: int, gpus: tuple[int, ...]) -> None:
        """Log an event that places no job (submit, unschedulable, preempt, finish)."""
        self.times.append(now)
        self.kinds.append(kind)
        self.jobs.append(job_index)
        self.gpu_codes.append(self.gpus_code(gpus))

    def add_placement(
        self,
        now: float,
        kind: int,
        job_index: int,
        gpus: tuple[int, ...],
        gpu_type: str,
        rate: float,
        overhead_s: float,
    ) -> None:
        """Log an event that places a job on `gpus` of `gpu_type` (a type key)."""
        self.placed_at.append(len(self.times))
        self.placed_type.append(self.type_code[gpu_type])
        self.placed_rate.append(rate)
        self.placed_overhead.append(overhead_s)
        self.add(now, kind, job_index, gpus)

    def __len__(self) -> int:
        """Events logged so far, those already written to a stream included."""
        return self._written + len(self.times)

    # ---- streaming to parquet -------------------------------------------------------------
    def stream_to(
        self,
        path: str | os.PathLike[str],
        asked: np.ndarray,
        job_ids: pd.Series,
        row_group: int | None = None,
        inputs: Sequence[str | os.PathLike[str] | None] = (),
    ) -> None:
        """Write the event log to the parquet file `path` as the run goes, a row group each
        time `row_group` (default `EVENTS_ROW_GROUP`) events are held (the table `frame`
        would give, in pieces), so the log never holds more. `asked` and `job_ids` are what
        `frame` takes. Where the ledger tracks CPU/memory the log is written at the end (its
        held columns need the whole run's resource log). The file appears under its name
        when the log is closed (`_EventSink`); `path` may not be a symbolic link nor one of
        `inputs` (the run's trace and cluster file: `OutputError`)."""
        if row_group is None:
            row_group = EVENTS_ROW_GROUP
        if row_group < 1:
            raise ValueError(f"row_group must be at least 1 event, got {row_group!r}")
        self._sink = _EventSink(path, asked, job_ids, row_group, inputs)
        if self._resource_log is None:
            self._flush_at = row_group

    def flush(self) -> None:
        """Write the events held to the stream as a row group and forget them."""
        sink = self._sink
        if sink is None or not len(self.times):
            return
        sink.write(self._frame(sink.asked, sink.job_ids))
        self._written += len(self.times)
        for column in (self.times, self.kinds, self.jobs, self.gpu_codes):
            del column[:]
        for column in (self.placed_at, self.placed_type, self.placed_rate, self.placed_overhead):
            del column[:]

    def forget_events(self) -> None:
        """Let go of the events held once their table is built (`build_result` with
        ``release=True``); `len` still counts them."""
        self._written += len(self.times)
        self.times, self.kinds = array("d"), array("B")
        self.jobs, self.gpu_codes = array("i"), array("i")
        self.placed_at, self.placed_type = array("q"), array("B")
        self.placed_rate, self.placed_overhead = array("d"), array("d")

    def close(self) -> None:
        """Write what is held and finish the parquet file (a run that stopped on an error
        leaves a readable file of the events up to its last flush)."""
        sink = self._sink
        if sink is None:
            return
        self.flush()
        sink.close()

    def rows(self, specs: list[JobSpec]) -> list[Event]:
        """The log as `Event` rows (slow on long runs: `frame` builds the table)."""
        n = len(self.times)
        gpu_type: list[str | None] = [None] * n
        rate = [math.nan] * n
        overhead = [math.nan] * n
        for at, code, r, o in zip(
            self.placed_at, self.placed_type, self.placed_rate, self.placed_overhead, strict=True
        ):
            gpu_type[at], rate[at], overhead[at] = self._type_names[code], r, o
        out = []
        for i in range(n):
            kind, spec = self.kinds[i], specs[self.jobs[i]]
            gpus = self.gpu_sets[self.gpu_codes[i]]
            n_gpus = spec.num_gpus if kind <= UNSCHEDULABLE or kind >= ADMIT else len(gpus)
            out.append(
                Event(
                    self.times[i],
                    EVENT_KINDS[kind],
                    spec.job_id,
                    n_gpus,
                    gpu_type[i],
                    rate[i],
                    overhead[i],
                    gpus,
                )
            )
        return out

    def frame(self, asked: np.ndarray, job_ids: pd.Series, release: bool = False) -> pd.DataFrame:
        """The event log as `result.events` (GPU ids as text, "3,4").

        `asked` holds each job's GPU request and `job_ids` is the result's job-id column (one
        row per spec, in spec order): the log's column takes its values and its dtype. When
        the log is streamed (`stream_to`), it writes the rest and finishes the file, and the
        table it returns has the log's columns and no rows. `release`: the recorder then
        lets go of the events (`forget_events`), and the table's time column shares their
        memory instead of copying it."""
        sink = self._sink
        if sink is None:
            frame = self._frame(asked, job_ids, share=release)
        else:
            self.close()
            frame = sink.empty if sink.empty is not None else self._frame(asked, job_ids)
        if release:
            self.forget_events()
        return frame

    def _frame(self, asked: np.ndarray, job_ids: pd.Series, share: bool = False) -> pd.DataFrame:
        """The events held as a table (`frame`; `share`: its time column is a view of the
        log's, which must then never grow again)."""
        import pandas as pd

        n = len(self.times)
        if not n:
            frame = pd.DataFrame([], columns=EVENT_COLUMNS)
            frame["gpus"] = []
            return frame
        kinds = np.frombuffer(self.kinds, dtype=np.uint8)
        jobs = np.frombuffer(self.jobs, dtype=np.int32)
        codes = np.frombuffer(self.gpu_codes, dtype=np.int32)
        lengths = np.fromiter((len(g) for g in self.gpu_sets), np.int64, len(self.gpu_sets))
        # (built in place: a log of millions of events is most of a long run's result)
        num_gpus = lengths[codes]  # GPUs held or given back, but what a submit asks for
        submitted = kinds <= UNSCHEDULABLE
        submitted |= kinds >= ADMIT  # an admission decision is about what the job asks for
        num_gpus[submitted] = asked[jobs[submitted]]
        del submitted
        placed = np.frombuffer(self.placed_at, dtype=np.int64)
        if len(placed):
            type_codes = np.full(n, -1, dtype=np.int16)
            type_codes[placed] = np.frombuffer(self.placed_type, dtype=np.uint8)
            gpu_type: Any = text_column(type_codes, self._type_names)
        else:  # no GPU type at all: a column of None, as pandas makes of one
            gpu_type = np.full(n, None, dtype=object)
        rate = np.full(n, math.nan)
        rate[placed] = np.frombuffer(self.placed_rate, dtype=np.float64)
        overhead = np.full(n, math.nan)
        overhead[placed] = np.frombuffer(self.placed_overhead, dtype=np.float64)
        text = [",".join(map(str, g)) for g in self.gpu_sets]
        times = np.frombuffer(self.times, dtype=np.float64)
        frame = pd.DataFrame(
            {
                "time": times if share else times.copy(),
                "event": text_column(kinds, EVENT_KINDS),
                "job_id": job_ids.take(jobs).reset_index(drop=True),
                "num_gpus": num_gpus,
                "gpu_type": gpu_type,
                "rate": rate,
                "overhead_s": overhead,
                "gpus": text_column(codes, text),
            },
            copy=False,  # the columns are new: no copy (nor a consolidated one) of them
        )
        if self._resource_log is not None:
            frame["held_cpu_milli"], frame["held_memory_mib"] = self._held_after(
                jobs.astype(np.int64)
            )
        return frame

    def _held_after(self, jobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per event: the milli-CPUs and MiB its job holds (on the nodes that declare them)
        once the event's instant is over, from the ledger's log."""
        import pandas as pd

        n = len(jobs)
        if not len(self.held_times):
            return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        log = pd.DataFrame(
            {
                "time": np.frombuffer(self.held_times, dtype=np.float64),
                "job": np.frombuffer(self.held_jobs, dtype=np.int64),
                "cpu": np.frombuffer(self.held_cpu, dtype=np.int64),
                "mem": np.frombuffer(self.held_mem, dtype=np.int64),
            }
        )  # in time order already; within an instant, the last entry of a job is its state
        events = pd.DataFrame(
            {
                "time": np.frombuffer(self.times, dtype=np.float64),
                "job": jobs,
                "row": np.arange(n),
            }
        )
        found = pd.merge_asof(
            events.sort_values("time", kind="stable"),
            log,
            on="time",
            by="job",
            direction="backward",
            allow_exact_matches=True,
        ).sort_values("row")
        return (
            found["cpu"].fillna(0).to_numpy(np.int64),
            found["mem"].fillna(0).to_numpy(np.int64),
        )

    # ---- the timeline -------------------------------------------------------------------
    def snapshot(self, now: float) -> None:
        """Record the busy GPUs per type at `now` from the free counts of the dict given at
        construction (the ledger's): one row per instant, only when they change. The engine
        calls it after every change."""
        log = self._resource_log
        if log:
            for job, cpu, mem in log:
                self.held_times.append(now)
                self.held_jobs.append(job)
                self.held_cpu.append(cpu)
                self.held_mem.append(mem)
            log.clear()
        free_of = self._free_of
        free_by_type = self._free_by_type
        free = free_of(free_by_type) if free_of else (free_by_type[self._type_order[0]],)
        if free != self._last:  # (`_last` is the last row's: the same free GPUs add no row)
            times = self.row_times
            if times and times[-1] == now:
                self.row_free[-self._n_types :] = array("i", free)
            else:
                times.append(now)
                self.row_free.extend(free)
            self._last = free
        if len(self.times) >= self._flush_at:
            self.flush()

    def write_row(self, now: float) -> None:
        """`snapshot` where the free GPUs are known to differ from the last row's (a finish
        gave some back since) and nothing is drained or streamed: the row at `now` is
        written whatever it holds."""
        free_of = self._free_of
        free_by_type = self._free_by_type
        free = free_of(free_by_type) if free_of else (free_by_type[self._type_order[0]],)
        times = self.row_times
        if times and times[-1] == now:
            self.row_free[-self._n_types :] = array("i", free)
        else:
            times.append(now)
            self.row_free.extend(free)
        self._last = free

    @property
    def timeline(self) -> list[tuple[float, ...]]:
        """The timeline's rows: (time, busy GPUs of each type)."""
        k = self._n_types
        free = self.row_free
        capacity = self._capacity
        return [
            (t, *(c - f for c, f in zip(capacity, free[i * k : i * k + k], strict=True)))
            for i, t in enumerate(self.row_times)
        ]

    def timeline_frame(self) -> pd.DataFrame:
        """The timeline as `result.timeline`: time, then busy GPUs per type."""
        import pandas as pd

        rows = len(self.row_times)
        if not rows:
            return pd.DataFrame([], columns=self.timeline_columns)
        k = self._n_types
        free = np.frombuffer(self.row_free, dtype=np.int32).reshape(rows, k)
        columns: dict[str, Any] = {"time": np.frombuffer(self.row_times, dtype=np.float64).copy()}
        for j, name in enumerate(self._type_names):  # busy = capacity - free, one type at once
            columns[name] = np.subtract(self._capacity[j], free[:, j], dtype=np.int64)
        # the columns are new: no copy (nor a consolidated one) of them
        return pd.DataFrame(columns, columns=self.timeline_columns, copy=False)


class _EventSink:
    """A parquet file that an event log is written to, one row group at a time.

    The file is written under a temporary name in its folder and moved onto its own name
    when it is closed (`dlsched.atomic.atomic_file`, as every file dlsched writes), so until
    the run ends the name holds what it held before, never a log in the making; a write that
    fails (a full disk) removes the temporary file and leaves the name as it was.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        asked: np.ndarray,
        job_ids: pd.Series,
        row_group: int,
        inputs: Sequence[str | os.PathLike[str] | None] = (),
    ) -> None:
        from dlsched.atomic import atomic_file

        self.path = os.fspath(path)
        self.asked = asked
        self.job_ids = job_ids
        self.row_group = row_group
        self.writer: Any = None
        self.schema: Any = None
        self.empty: pd.DataFrame | None = None  # the log's columns, no rows
        self.closed = False
        self._file = contextlib.ExitStack()
        self.handle = self._file.enter_context(atomic_file(self.path, inputs, "events"))

    def write(self, frame: pd.DataFrame) -> None:
        """Append `frame` (a piece of the log) to the file."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.closed:
            return  # (a write failed: the file was given up)
        try:
            if self.writer is None:
                schema = pa.Schema.from_pandas(frame, preserve_index=False)
                # a piece without any placement has no GPU type at all: its column is text
                at = schema.get_field_index("gpu_type")
                if pa.types.is_null(schema.field(at).type):
                    schema = schema.set(at, pa.field("gpu_type", pa.large_string()))
                self.schema = schema
                self.writer = pq.ParquetWriter(self.handle, schema)
                self.empty = frame.iloc[:0].reset_index(drop=True)
            table = pa.Table.from_pandas(frame, schema=self.schema, preserve_index=False)
            self.writer.write_table(table, row_group_size=self.row_group)
        except BaseException as exc:
            raise self._give_up(exc)  # noqa: B904 (chained to `exc` already)

    def close(self) -> None:
        """Finish the file and move it onto its name (once)."""
        if self.closed:
            return
        try:
            if self.writer is None:  # no event at all: a file with the log's columns
                import pandas as pd

                frame = pd.DataFrame([], columns=EVENT_COLUMNS)
                frame["gpus"] = []
                frame.to_parquet(self.handle, index=False)
                self.empty = frame
            else:
                self.writer.close()
        except BaseException as exc:
            raise self._give_up(exc)  # noqa: B904 (chained to `exc` already)
        self.closed = True
        self._file.close()  # the move onto its name

    def _give_up(self, exc: BaseException) -> BaseException:
        """Remove the temporary file after a failed write (the name keeps what it held);
        return the error to raise (an OSError then names the file)."""
        self.closed = True
        if self.writer is not None:  # (its footer goes to the file about to be removed)
            with contextlib.suppress(BaseException):
                self.writer.close()
        try:
            self._file.__exit__(type(exc), exc, exc.__traceback__)
        except BaseException as named:
            return named
        return exc
