"""`dlsched reproduce helios-ces`: its plan (shape claims, declared tolerances), its cluster,
and, where the shared data are, the quick measurement."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.reproduce import REPRODUCTIONS, shared_folder
from dlsched.reproduce.helios_ces import ENERGY, measure, philly_cluster, plan


def test_registered_with_its_data_and_notes():
    reproduction = REPRODUCTIONS.get("helios-ces")
    assert reproduction.data[0].path.endswith("philly_jobs_pollux.csv.gz")
    assert any("Missing" in note for note in reproduction.notes)


def test_the_plan_is_two_claims_per_window_with_declared_tolerances():
    quick = plan(Path("."), True)
    assert [p.metric for p in quick] == ["energy_saved_share", "queueing_added_share"]
    saved, queueing = quick
    assert saved.tolerance.allows(0.54, saved.published)
    assert not saved.tolerance.allows(-0.01, saved.published)  # CES costing energy fails
    assert queueing.tolerance.allows(0.066, queueing.published)
    assert not queueing.tolerance.allows(0.25, queueing.published)
    assert len(plan(Path("."), False)) == 4


def test_the_cluster_is_philly_with_power_transitions():
    cluster = philly_cluster()
    assert cluster.num_gpus == 2490 and len(cluster.nodes) == 552
    assert cluster.energy == ENERGY
    assert len(cluster.vcs) == 11


@pytest.mark.slow
def test_the_quick_measurement_saves_energy_at_a_small_queueing_cost(monkeypatch):
    # (without the invariant auditor: on 2,490 GPUs and 12,751 jobs it checks every GPU at
    # every event, 25× the run, 5 minutes of CI; tests/test_ces.py audits CES runs)
    monkeypatch.setenv("DLSCHED_AUDIT", "0")
    shared = shared_folder()
    if not (shared / "traces/philly/philly_jobs_pollux.csv.gz").exists():
        pytest.skip("the shared Philly trace is not here")
    figures = measure({"window": "1 week", "policy": "fifo"}, shared)
    assert 0 < figures["energy_saved_share"] <= 1
    assert 0 <= figures["queueing_added_share"] <= 0.2
    assert figures["wake_events"] > 0
