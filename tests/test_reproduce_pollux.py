"""The Pollux artifact's reproductions in `dlsched.reproduce.pollux`: `tiresias-pollux`
(Figure 8a, the artifact's Tiresias) and `pollux-interval` (Figure 8b) plan the artifact's
per-workload averages and means; the Tiresias quick run is within its tolerance."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.reproduce import REPRODUCTIONS
from dlsched.reproduce.pollux import measure_workloads
from dlsched.reproduce.runner import run_reproduction

SHARED = Path(__file__).resolve().parents[2] / "shared"
pytestmark = pytest.mark.skipif(
    not (SHARED / "anchors" / "pollux_osdi21_results").is_dir(),
    reason="needs ../shared/anchors/pollux_osdi21_results",
)


def test_tiresias_pollux_plans_each_workload_and_the_mean_per_load():
    """Full: 8 workloads and the 8-workload mean at each of 4 loads (load 1.0: 4,038.2 s);
    quick: workload 6 at load 1.0 (3,469.7 s)."""
    repro = REPRODUCTIONS.get("tiresias-pollux")
    full = repro.plan(SHARED, False)
    means = {p.x: p.published for p in full if p.metric == "mean_avg_jct_s"}
    assert len(full) == 4 * 9 and sorted(means) == [0.5, 1.0, 1.5, 2.0]
    assert means[1.0] == pytest.approx(4038.2, abs=0.1)
    (quick,) = repro.plan(SHARED, True)
    assert (quick.series, quick.x, quick.metric) == (
        "tiresias load 1.0",
        6.0,
        "avg_jct_s/workload-6",
    )
    assert quick.published == pytest.approx(3469.7, abs=0.1)


def test_pollux_interval_plans_each_interval_from_30_s_to_8_min():
    """Full: 8 workloads and the mean at each of 5 intervals (30 s: 2,729.1 s … 8 min:
    3,354.2 s), each task passing its interval to `pollux`; quick: one workload at 8 min."""
    repro = REPRODUCTIONS.get("pollux-interval")
    full = repro.plan(SHARED, False)
    means = {p.x: p for p in full if p.metric == "mean_avg_jct_s"}
    assert len(full) == 5 * 9 and sorted(means) == [30.0, 60.0, 120.0, 240.0, 480.0]
    assert means[30.0].published == pytest.approx(2729.1, abs=0.1)
    assert means[480.0].published == pytest.approx(3354.2, abs=0.1)
    assert all(p.task.spec["params"] == {"interval_s": x} for x, p in means.items())
    (quick,) = repro.plan(SHARED, True)
    assert quick.task.spec["params"] == {"interval_s": 480.0} and quick.x == 6.0


def test_measure_passes_the_policy_parameters():
    """A 2 min interval for `pollux_tiresias` on workload 6 gives another average than 60 s,
    and the mean of one workload is its average."""
    spec = {"policy": "pollux_tiresias", "load": "1.0", "workloads": [6]}
    default = measure_workloads({**spec, "params": {}}, SHARED)
    slower = measure_workloads({**spec, "params": {"interval_s": 120.0}}, SHARED)
    assert default["mean_avg_jct_s"] == default["avg_jct_s/workload-6"]
    assert slower["avg_jct_s/workload-6"] != pytest.approx(default["avg_jct_s/workload-6"])


def test_tiresias_pollux_quick_is_within_its_tolerance(tmp_path):
    """tiresias-pollux --quick (workload 6 at load 1.0) is within 10 % of the artifact."""
    outcome = run_reproduction(
        REPRODUCTIONS.get("tiresias-pollux"), SHARED, tmp_path, quick=True, workers=1
    )
    (point,) = outcome.points
    assert point.within, (point.ours, point.point.published)
