"""`dlsched report`'s cost–deadline plot: rented cost per job against deadline slack (a
fixed cluster's report has none: `tests/test_report.py` checks its exact set of plots)."""

import pandas as pd
import pytest
from experiment_helpers import write_experiment

from dlsched.experiments import run_experiment
from dlsched.report import COST_DEADLINE_PLOT, collect, rented_job_costs, write_report

CLOUD = {
    "name": "cloud",
    "instance_types": {
        "small": {"gpu_type": "V100", "gpus": 1, "price_per_hour": 3.06, "startup_s": 60},
        "big": {"gpu_type": "V100", "gpus": 4, "price_per_hour": 12.24, "startup_s": 120},
    },
    "limits": {"small": 8, "big": 4},
}
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def rented(tmp_path_factory):
    """The tiny trace (deadlines) on a cloud-only cluster under Cynthia, reported."""
    folder = tmp_path_factory.mktemp("rented")
    path = write_experiment(
        folder,
        cluster=CLOUD,
        policies=["cynthia"],
        provisioner="cynthia",
        seeds=1,
        sweep=None,
    )
    run_experiment(path, folder / "out", executor="local")
    return folder / "out", write_report(folder / "out")


@pytest.mark.slow
def test_a_rented_run_with_deadlines_gets_the_cost_deadline_plot(rented):
    out, written = rented
    assert COST_DEADLINE_PLOT in {p.name for p in written}
    data = (out / COST_DEADLINE_PLOT).read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000
    assert COST_DEADLINE_PLOT in (out / "summary.md").read_text()


@pytest.mark.slow
def test_the_plotted_costs_are_the_runs_attributed_costs(rented):
    """One point per finished job with a deadline; the points' costs sum to the run's bill
    (each job's instances are its own here) and slack is deadline − finish."""
    out, _ = rented
    data = collect(out)
    costs = rented_job_costs(data)
    (key,) = data.done["key"]
    summary = data.done.iloc[0]
    jobs = pd.read_parquet(out / "runs" / key / "jobs.parquet")
    with_deadline = jobs[jobs["deadline"].notna() & (jobs["status"] == "finished")]
    assert len(costs) == len(with_deadline) > 0
    assert costs["cost"].sum() == pytest.approx(summary["rented_cost"])
    by_id = with_deadline.set_index(with_deadline["job_id"].astype(str))
    for row in costs.itertuples():
        expected = by_id.loc[str(row.job_id)]
        assert row.slack_s == pytest.approx(expected["deadline"] - expected["finish_time"])
        assert row.met == (expected["finish_time"] <= expected["deadline"])
