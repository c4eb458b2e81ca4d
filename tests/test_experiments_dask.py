"""The Dask executor, end to end on a real `distributed.LocalCluster` (two worker processes).

Skipped when the optional extra is not installed (`pip install 'dlsched[dask]'`); CI installs it.
"""

import pytest
from experiment_helpers import write_experiment

from dlsched.experiments import run_experiment

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def dask_cluster():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    )
    yield cluster
    cluster.close()


def _without_wall_times(store):
    return {
        key: {k: v for k, v in store.run_summary(key).items() if not k.endswith("wall_s")}
        for key in store.finished_keys()
    }


def test_dask_runs_the_grid_like_the_local_executor(tmp_path, dask_cluster):
    """Every run finishes on the Dask workers, with the same results as in-process."""
    path = write_experiment(tmp_path)
    on_dask = run_experiment(
        path, tmp_path / "dask", executor="dask", address=dask_cluster.scheduler_address
    )
    assert on_dask.ok and len(on_dask.finished) == 8
    local = run_experiment(path, tmp_path / "local", executor="local")
    assert _without_wall_times(on_dask.store) == _without_wall_times(local.store)
    again = run_experiment(
        path, tmp_path / "dask", executor="dask", address=dask_cluster.scheduler_address
    )
    assert len(again.skipped) == 8 and not again.finished


def test_dask_records_a_failing_run_and_goes_on(tmp_path, dask_cluster):
    """A run that raises on a Dask worker is recorded with its traceback."""
    path = write_experiment(
        tmp_path,
        seeds=1,
        sweep=None,
        allow_imports=True,
        policies=["fifo", "experiment_helpers:Broken"],
    )
    outcome = run_experiment(
        path, tmp_path / "out", executor="dask", address=dask_cluster.scheduler_address
    )
    assert len(outcome.finished) == 1 and len(outcome.failed) == 1
    (failure,) = outcome.store.failures().values()
    assert "broken on purpose" in failure["traceback"]


def test_dask_prints_its_dashboard_and_moves_the_bar_by_runs(tmp_path, dask_cluster, capsys):
    """With a bar, a Dask grid names the dashboard's link, ends at 8.0/8 runs, and removes
    the progress folder its workers wrote into the store."""
    path = write_experiment(tmp_path)
    outcome = run_experiment(
        path,
        tmp_path / "out",
        executor="dask",
        address=dask_cluster.scheduler_address,
        progress=True,
    )
    assert outcome.ok
    err = capsys.readouterr().err
    assert "Dask dashboard: http" in err
    assert "8.0/8 runs" in err
    assert not (tmp_path / "out" / ".progress").exists()
