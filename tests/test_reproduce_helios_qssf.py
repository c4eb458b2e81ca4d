"""`dlsched reproduce helios-qssf`: the plan's published ratios, the artifact's cluster, and
a measurement worked out by hand on a tiny stand-in for the shared data."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.reproduce import REPRODUCTIONS
from dlsched.reproduce import helios_qssf as h


def tiny_shared(root: Path) -> Path:
    """A stand-in shared folder: VC A (3 nodes → 1 at a third), three 8-GPU jobs of A, one
    job of an unlisted VC and one before the window (both dropped)."""
    folder = root / "traces" / "philly"
    folder.mkdir(parents=True)
    (folder / "philly_vc_nodes.csv").write_text("vc,node num\nA,3\n")
    rows = [
        ("2017-09-20 00:00:00", 5.0, 8, "A"),
        ("2017-10-02 00:00:00", 100.0, 8, "A"),
        ("2017-10-02 00:00:01", 50.0, 8, "A"),
        ("2017-10-02 00:00:02", 10.0, 8, "A"),
        ("2017-10-02 00:00:03", 10.0, 8, "Z"),
    ]
    text = "timestamp,duration,num_gpus,gpu_time,cluster\n" + "".join(
        f"{t},{d},{g},{d * g},{vc}\n" for t, d, g, vc in rows
    )
    import gzip

    (folder / "philly_jobs_pollux.csv.gz").write_bytes(gzip.compress(text.encode()))
    return root


def test_registered_with_its_data_files():
    reproduction = REPRODUCTIONS.get("helios-qssf")
    assert {d.path for d in reproduction.data} == {h.TRACE, h.VC_NODES}


def test_plan_points_are_the_artifacts_ratios_to_fifo(tmp_path):
    quick = h.plan(tmp_path, quick=True)
    full = h.plan(tmp_path, quick=False)
    assert len(quick) == 6 and len(full) == 8
    jct = {p.series: p.published for p in full if p.metric == "jct_vs_fifo"}
    assert jct["SJF (oracle)"] == pytest.approx(34272 / 86072)
    assert jct["QSSF (Helios rules)"] == pytest.approx(37324 / 86072)
    queue = {p.series: p.published for p in full if p.metric == "queue_vs_fifo"}
    assert queue["SRTF (oracle)"] == pytest.approx(1138 / 56531)
    # who beats whom, as published: SRTF < SJF < QSSF < FIFO on both
    assert jct["SRTF (oracle)"] < jct["SJF (oracle)"] < jct["QSSF (Helios rules)"] < 1
    assert queue["SRTF (oracle)"] < queue["SJF (oracle)"] < queue["QSSF (gbdt)"] < 1


def test_the_artifacts_cluster_scaled_by_hand(tmp_path):
    path = tmp_path / "vc.csv"
    path.write_text("vc,node num\nA,64\nB,8\nC,1\n")
    full = h.philly_helios_cluster(path)
    assert [v["nodes"] for v in full["vcs"]] == [64, 8, 1]
    assert full["nodes"][0]["count"] == 73 and full["nodes"][0]["gpus_per_node"] == 8
    third = h.philly_helios_cluster(path, 1 / 3)
    assert [v["nodes"] for v in third["vcs"]] == [21, 3, 1]  # rounded, at least one
    assert third["nodes"][0]["count"] == 25


def test_measure_by_hand_on_a_tiny_trace(tmp_path):
    """One 8-GPU node: FIFO a 0-100, b 100-150, c 150-160 (JCT 100+149+158, queue
    0+99+148). SJF: c (10 s) before b at 100: c 100-110, b 110-160 (JCT 100+108+159, queue
    0+109+98)."""
    shared = tiny_shared(tmp_path)
    h._workload.cache_clear()
    h._fifo.cache_clear()
    spec = {"capacity": h.CAPACITY, "policy": "sjf", "predictor": "oracle", "params": {}}
    got = h.measure(spec, shared)
    assert got["fifo_avg_jct_s"] == pytest.approx(407 / 3)
    assert got["fifo_avg_queue_s"] == pytest.approx(247 / 3)
    assert got["avg_jct_s"] == pytest.approx(367 / 3)
    assert got["jct_vs_fifo"] == pytest.approx(367 / 407)
    assert got["queue_vs_fifo"] == pytest.approx(207 / 247)
    predicted = h.measure(
        {"capacity": h.CAPACITY, "policy": "qssf", "predictor": "helios", "params": {}}, shared
    )
    assert "prediction_mae_s" in predicted and predicted["avg_jct_s"] > 0
    assert h.measure(spec, shared) == got  # deterministic
    h._workload.cache_clear()
    h._fifo.cache_clear()
