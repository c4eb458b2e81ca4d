"""The shipped paper experiment reproduces the Tiresias authors' simulator."""

from pathlib import Path

import pytest

from dlsched.experiments import run_experiment

EXPERIMENTS = Path(__file__).resolve().parent.parent / "configs" / "experiments"

# From shared/anchors/tiresias/reference_results.csv (cluster n2g4.csv, trace 60_job.csv,
# scheme count): runs of SymbioticLab/Tiresias' simulator @ 959f9b08.
REFERENCE = {"fifo": (1556.5, 5747.0), "fifo-backfill": (715.3, 4806.0), "srtf": (519.9, 4901.0)}


def test_tiresias_60_job_on_8_gpus_matches_the_authors_simulator(tmp_path):
    """FIFO, fit-job-first backfill and SRTF: average JCT and makespan as published."""
    outcome = run_experiment(EXPERIMENTS / "tiresias_60job_8gpu.yaml", tmp_path, executor="local")
    assert outcome.ok
    for point in outcome.experiment.points:
        summary = outcome.store.run_summary(point.key)
        avg_jct, makespan = REFERENCE[point.policy]
        assert summary["jobs_completed"] == 60
        assert summary["avg_jct"] == pytest.approx(avg_jct, abs=0.05), point.policy
        assert summary["makespan"] == pytest.approx(makespan), point.policy
