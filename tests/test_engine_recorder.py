"""The recorder's columns: the result tables and the row views built from them agree."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.engine.recorder import text_column
from dlsched.engine.simulator import Simulator
from dlsched.engine.specs import build_specs
from dlsched.metrics import build_result
from dlsched.overheads import make_overheads
from dlsched.perf import make_estimator, make_throughput
from dlsched.traces.schema import validate_jobs


def _run(policy: str = "srtf") -> Simulator:
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "two",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 2},
                {"gpu_type": "K80", "count": 1, "gpus_per_node": 1},
            ],
        }
    )
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b", "c", "d"],
            "submit_time": [0.0, 0.0, 5.0, 7.0],
            "num_gpus": [2, 1, 1, 4],
            "duration": [100.0, 10.0, 3.0, 5.0],
        }
    )
    work = validate_jobs(jobs, "<test>", lenient=True, fmt="canonical")
    truth = make_throughput("duration")
    specs, unschedulable = build_specs(work, cluster, truth, lenient=True)
    sim = Simulator(
        specs,
        cluster,
        dlsched.policies.get(policy),
        truth,
        make_estimator("oracle"),
        make_overheads(None, 0.0),
        skip=set(unschedulable),
    )
    sim.run()
    sim._unschedulable = unschedulable  # type: ignore[attr-defined]
    return sim


def test_event_rows_match_the_events_table() -> None:
    """`Simulator.events` (rows) says what `result.events` (built from columns) says."""
    sim = _run()
    result = build_result(sim, {}, sim._unschedulable)  # type: ignore[attr-defined]
    rows = sim.events
    assert len(rows) == len(result.events) > 0
    for row, (_, record) in zip(rows, result.events.iterrows(), strict=True):
        assert row.time == record["time"] and row.event == record["event"]
        assert row.job_id == record["job_id"] and row.num_gpus == record["num_gpus"]
        assert ",".join(map(str, row.gpus)) == record["gpus"]
        if math.isnan(row.rate):
            assert math.isnan(record["rate"]) and pd.isna(record["gpu_type"])
        else:
            assert (row.rate, row.gpu_type) == (record["rate"], record["gpu_type"])


def test_unschedulable_job_is_logged_with_its_request() -> None:
    """A job no pool can hold is one `unschedulable` event carrying the GPUs it asked for."""
    sim = _run()
    result = build_result(sim, {}, sim._unschedulable)  # type: ignore[attr-defined]
    row = result.events[result.events["job_id"] == "d"]
    assert row["event"].tolist() == ["unschedulable"] and row["num_gpus"].tolist() == [4]
    status = result.jobs.set_index("job_id")["status"]
    assert status.to_dict() == {
        "a": "finished",
        "b": "finished",
        "c": "finished",
        "d": "unschedulable",
    }


def test_timeline_rows_match_the_timeline_table() -> None:
    """`Simulator.timeline` rows are the `result.timeline` table's rows: busy GPUs per type."""
    sim = _run()
    result = build_result(sim, {}, sim._unschedulable)  # type: ignore[attr-defined]
    assert [tuple(r) for r in result.timeline.itertuples(index=False)] == sim.timeline
    assert list(result.timeline.columns) == ["time", "K80", "V100"]
    assert result.timeline.iloc[0].tolist() == [0.0, 1, 2]  # a on both V100s, b on the K80


def test_text_column_maps_codes_and_marks_missing() -> None:
    """`text_column` gives texts[code] per row and a missing value for code -1."""
    column = pd.Series(text_column(np.array([1, -1, 0, 1]), ["P40", "V100"]))
    assert column.tolist()[0] == "V100" and column.tolist()[2:] == ["P40", "V100"]
    assert pd.isna(column.iloc[1])
    assert column.dtype == pd.Series(["text"]).dtype


@pytest.mark.filterwarnings("ignore:The 'future.infer_string' option")
def test_text_column_without_pyarrow_strings_is_an_object_array() -> None:
    """Where pandas does not infer pyarrow strings, the column is plain objects, None missing."""
    with pd.option_context("future.infer_string", False):
        column = text_column(np.array([0, -1]), ["a"])
    assert column.dtype == object and column.tolist() == ["a", None]
