"""`dlsched reproduce cynthia`: the shape of Cynthia's cost claim, on a simulated AWS cloud."""

import pytest

from dlsched.reproduce import REPRODUCTIONS, run_reproduction
from dlsched.reproduce import cynthia as repro


def test_the_reproduction_is_registered_with_its_points_and_tolerances(tmp_path):
    """Listed (no shared data needed); its points are the abstract's 50.6 % (within 2×), all
    deadlines met (exact) and, per model, Cynthia's cost over the optimum (1.0 ± 25 %)."""
    entry = REPRODUCTIONS.get("cynthia")
    assert entry.data == ()
    points = entry.plan(tmp_path, True)
    by_metric = {p.metric: p for p in points}
    assert by_metric["max_reduction_pct"].published == 50.6
    assert by_metric["max_reduction_pct"].tolerance.factor == 2.0
    assert by_metric["deadlines_met_pct"].tolerance.describe() == "exact"
    assert {m for m in by_metric if m.endswith(":gap")} == {f"{m}:gap" for m in repro.MODELS}


def test_the_workload_is_seeded_and_its_deadlines_can_be_met():
    """Same seed, same jobs; each deadline lies after its arrival plus the start-up."""
    first, again = repro.workload("balanced"), repro.workload("balanced")
    assert first.equals(again)
    assert not first.equals(repro.workload("balanced", seed=1))
    assert (first["deadline"] > first["submit_time"] + 120).all()
    assert len(first) == repro.JOBS


@pytest.mark.slow
def test_the_reproduction_runs_and_every_point_is_within_tolerance(tmp_path):
    """Cynthia meets every deadline, cuts cost against the fastest configuration by a share
    of the published order, and stays within 25 % of the integer program's cost."""
    outcome = run_reproduction(REPRODUCTIONS.get("cynthia"), tmp_path, tmp_path / "out", workers=1)
    assert not outcome.failed
    for result in outcome.points:
        assert result.point.tolerance.allows(result.ours, result.point.published), result
    ours = {r.point.metric: r.ours for r in outcome.points}
    assert ours["deadlines_met_pct"] == 100.0
    assert all(1.0 - 1e-9 <= ours[f"{m}:gap"] for m in repro.MODELS)  # never below the optimum
