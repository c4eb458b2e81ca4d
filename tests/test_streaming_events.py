"""`simulate(events=path)`: the event log streamed to parquet in row groups as the run goes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import dlsched
from dlsched.engine import recorder
from dlsched.errors import ConfigError
from dlsched.policies.fifo import Fifo

_WALL_KEYS = ("sim_wall_s", "scheduler_wall_s")


def _cluster() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {
            "name": "two",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 2},
                {"gpu_type": "K80", "count": 1, "gpus_per_node": 2},
            ],
        }
    )


def _jobs(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_time": [float(3 * (i // 2)) for i in range(n)],
            "num_gpus": [1 + i % 2 for i in range(n)],
            "duration": [float(5 + (7 * i) % 23) for i in range(n)],
        }
    )


def _both(tmp_path: Path, policy: Any = "srtf", **params: Any) -> tuple[Any, Any, Path]:
    path = tmp_path / "events.parquet"
    held = dlsched.simulate(_jobs(), _cluster(), policy, **params)
    streamed = dlsched.simulate(_jobs(), _cluster(), policy, events=path, **params)
    return held, streamed, path


@pytest.fixture
def small_row_groups(monkeypatch: pytest.MonkeyPatch) -> int:
    """Row groups of 7 events, so a small run writes many."""
    monkeypatch.setattr(recorder, "EVENTS_ROW_GROUP", 7)
    return 7


def test_streamed_file_equals_the_events_table(tmp_path: Path, small_row_groups: int) -> None:
    """The parquet file holds exactly the table `result.events` has without streaming."""
    held, _, path = _both(tmp_path)
    assert len(held.events) > 3 * small_row_groups
    pd.testing.assert_frame_equal(pd.read_parquet(path), held.events, check_exact=True)


def test_streamed_file_is_written_in_row_groups(tmp_path: Path, small_row_groups: int) -> None:
    """The log is flushed as the run goes: several row groups, none above the bound."""
    _, _, path = _both(tmp_path, "fifo")
    meta = pq.ParquetFile(path).metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert len(sizes) > 2
    assert max(sizes) < 2 * small_row_groups  # a flush waits at most for one instant's events


def test_streaming_changes_no_other_result(tmp_path: Path, small_row_groups: int) -> None:
    """Jobs, timeline and summary (its event count included) are those of a run that holds
    its log; `result.events` keeps the columns and has no rows."""
    held, streamed, path = _both(tmp_path, "tiresias")
    pd.testing.assert_frame_equal(streamed.jobs, held.jobs, check_exact=True)
    pd.testing.assert_frame_equal(streamed.timeline, held.timeline, check_exact=True)
    mine = {k: v for k, v in streamed.summary().items() if k not in _WALL_KEYS}
    theirs = {k: v for k, v in held.summary().items() if k not in _WALL_KEYS}
    assert mine == theirs
    assert list(streamed.events.columns) == list(held.events.columns)
    assert streamed.events.empty
    assert streamed.meta["events_path"] == str(path)


def test_a_log_without_events_is_an_empty_file(tmp_path: Path) -> None:
    """A stream that never got an event still leaves a file with the log's columns."""
    path = tmp_path / "none.parquet"
    log = recorder.Recorder(_cluster())
    log.stream_to(path, np.zeros(0, dtype=np.int64), pd.Series([], dtype=object))
    empty = log.frame(np.zeros(0, dtype=np.int64), pd.Series([], dtype=object))
    assert list(pd.read_parquet(path).columns) == list(empty.columns) == recorder.EVENT_COLUMNS
    assert len(log) == 0


class _Crash(Fifo):
    """FIFO that fails at its fifth scheduling call."""

    def start(self, view: Any) -> None:
        super().start(view)
        self.calls = 0

    def schedule(self, view: Any) -> Any:
        self.calls += 1
        if self.calls == 5:
            raise RuntimeError("boom")
        return super().schedule(view)


def test_a_failed_run_leaves_a_readable_log(tmp_path: Path, small_row_groups: int) -> None:
    """A run that raises still finishes the file: the events up to the failure, in order."""
    path = tmp_path / "crash.parquet"
    with pytest.raises(RuntimeError, match="boom"):
        dlsched.simulate(_jobs(), _cluster(), _Crash(), events=path)
    events = pd.read_parquet(path)
    assert len(events) > 0
    assert events["time"].is_monotonic_increasing


def test_row_group_must_be_positive() -> None:
    """A row group of no events is refused with the value named."""
    log = recorder.Recorder(_cluster())
    with pytest.raises(ValueError, match="row_group must be at least 1"):
        log.stream_to("x.parquet", None, None, row_group=0)  # type: ignore[arg-type]


def test_a_first_piece_without_placements_keeps_gpu_type_text(tmp_path: Path) -> None:
    """A row group of submits only (no GPU type at all) and a later one with a start share
    one schema: the GPU type is text, missing where no job was placed."""
    path = tmp_path / "pieces.parquet"
    log = recorder.Recorder(_cluster())
    log.stream_to(path, np.array([1, 1]), pd.Series(["a", "b"]))
    log.add(0.0, recorder.SUBMIT, 0, ())
    log.add(0.0, recorder.SUBMIT, 1, ())
    log.flush()
    log.add_placement(1.0, recorder.START, 0, (0,), "v100", 1.0, 0.0)
    log.close()
    log.close()  # a second close changes nothing
    events = pd.read_parquet(path)
    assert events["event"].tolist() == ["submit", "submit", "start"]
    assert events["gpu_type"].isna().tolist() == [True, True, False]
    assert len(log) == 3


def test_a_streamed_run_saved_and_loaded_keeps_its_event_log(tmp_path: Path):
    """`result.save` copies the streamed file as events.parquet: `load` gives the whole log."""
    streamed = dlsched.simulate(_jobs(), _cluster(), "fifo", events=tmp_path / "ev.parquet")
    kept = dlsched.simulate(_jobs(), _cluster(), "fifo")
    loaded = dlsched.SimulationResult.load(streamed.save(tmp_path / "out"))
    pd.testing.assert_frame_equal(loaded.events, kept.events)


def test_the_events_folder_is_made_before_the_run(tmp_path: Path):
    """A file in folders that do not exist yet is written there (made at the start)."""
    target = tmp_path / "a" / "b" / "ev.parquet"
    dlsched.simulate(_jobs(), _cluster(), "fifo", events=target)
    assert len(pd.read_parquet(target)) > 0


def test_events_naming_a_folder_is_refused_before_the_run(tmp_path: Path):
    """events= pointing at a folder: a ConfigError that says to give a file."""
    with pytest.raises(ConfigError, match="is a folder"):
        dlsched.simulate(_jobs(), _cluster(), "fifo", events=tmp_path)


@pytest.mark.slow  # replays the bundled Philly day: 3 s
def test_the_replay_command_streams_events(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """`dlsched replay --events FILE` writes the bundled replay's event log to FILE."""
    from dlsched.cli import main

    target = tmp_path / "ev.parquet"
    assert main(["replay", "--events", str(target), "--json"]) == 0
    written = pd.read_parquet(target)
    assert f'"events": {len(written)}' in capsys.readouterr().out
