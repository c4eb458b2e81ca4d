"""Running experiments: the results store, resuming, failures, killed workers, executors."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from experiment_helpers import write_experiment

from dlsched.experiments import (
    ResultsStore,
    StoreBusyError,
    load_experiment,
    run_experiment,
    simulate_config,
)
from dlsched.experiments.runner import MissingExtraError
from dlsched.experiments.store import RUN_FILES
from dlsched.metrics import SimulationResult

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


def _without_wall_times(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if not k.endswith("wall_s")}


def _summaries(store: ResultsStore) -> dict:
    return {key: _without_wall_times(store.run_summary(key)) for key in store.finished_keys()}


def _assert_complete(store: ResultsStore) -> None:
    """Every run directory that looks finished holds every file and loads."""
    for key in store.finished_keys():
        assert sorted(p.name for p in store.run_dir(key).iterdir()) == sorted(RUN_FILES)
        assert json.loads((store.run_dir(key) / "config.json").read_text())["key"] == key
        assert len(store.load_run(key).jobs) == 6


def test_run_stores_every_run_and_a_rerun_skips_them(tmp_path):
    """First run computes the 8 runs; the second finds them all stored."""
    exp = load_experiment(write_experiment(tmp_path))
    store = ResultsStore(tmp_path / "out")
    first = run_experiment(exp, store.root, executor="local")
    assert len(first.finished) == 8 and not first.skipped and first.ok
    _assert_complete(store)
    assert store.read_manifest()["runs"] == 8
    assert (store.root / "experiment.yaml").read_text() == exp.text
    second = run_experiment(exp, store.root, executor="local")
    assert not second.finished and len(second.skipped) == 8


def test_a_stored_config_reproduces_its_run(tmp_path):
    """A run's result depends only on its resolved config."""
    store = ResultsStore(tmp_path / "out")
    run_experiment(write_experiment(tmp_path), store.root, executor="local")
    key = store.finished_keys()[0]
    again = simulate_config(store.run_config(key))
    pd.testing.assert_frame_equal(again.jobs, store.load_run(key).jobs)


def test_process_pool_and_in_process_give_identical_summaries(tmp_path):
    """Two executions of one experiment agree on every summary field but wall times."""
    path = write_experiment(tmp_path)
    local = run_experiment(path, tmp_path / "local", executor="local")
    pool = run_experiment(path, tmp_path / "pool", executor="process", workers=2)
    assert sorted(local.finished) == sorted(pool.finished)
    assert _summaries(local.store) == _summaries(pool.store)


def test_a_failing_run_is_recorded_and_the_grid_goes_on(tmp_path):
    """A policy that raises fails its runs with a traceback; the others finish."""
    path = write_experiment(
        tmp_path, allow_imports=True, policies=["fifo", "experiment_helpers:Broken"]
    )
    outcome = run_experiment(path, tmp_path / "out", workers=2)
    exp = outcome.experiment
    broken = {p.key for p in exp.points if p.policy == "Broken"}
    assert set(outcome.failed) == broken and len(outcome.finished) == 4 and not outcome.ok
    failures = outcome.store.failures()
    assert set(failures) == broken
    record = failures[next(iter(broken))]
    assert "broken on purpose" in record["error"] and "Traceback" in record["traceback"]
    assert record["config"]["policy"]["name"] == "experiment_helpers:Broken"
    again = run_experiment(path, tmp_path / "out", executor="local")
    assert set(again.failed) == broken and len(again.skipped) == 4  # failed runs are retried


def test_a_killed_worker_does_not_stop_the_grid(tmp_path):
    """SIGKILL of a pool worker mid-grid: a fresh pool finishes every run, none is lost."""
    marker = tmp_path / "kill-me"
    marker.touch()
    path = write_experiment(
        tmp_path,
        allow_imports=True,
        policies=[
            "fifo",
            {"name": "experiment_helpers:KillOnce", "params": {"marker": str(marker)}},
        ],
    )
    outcome = run_experiment(path, tmp_path / "out", workers=2)
    assert not marker.exists(), "no worker was killed"
    assert outcome.ok and len(outcome.finished) == 8 and outcome.pool_restarts == 1
    _assert_complete(outcome.store)
    assert not list((tmp_path / "out" / "runs").glob(".tmp-*"))


def test_retries_zero_records_the_runs_of_a_broken_pool_as_failed(tmp_path):
    """With retries=0 a broken pool is not replaced: its waiting runs fail with the reason."""
    marker = tmp_path / "kill-me"
    marker.touch()
    path = write_experiment(
        tmp_path,
        seeds=1,
        sweep=None,
        allow_imports=True,
        policies=[
            "fifo",  # two runs, so that they go to a pool and not into this process
            {"name": "experiment_helpers:KillOnce", "params": {"marker": str(marker)}},
        ],
    )
    killer = next(
        key for key, run in load_experiment(path).runs.items() if "KillOnce" in str(run.config)
    )
    outcome = run_experiment(path, tmp_path / "out", workers=2, retries=0)
    assert not marker.exists(), "no worker was killed"
    assert outcome.pool_restarts == 1
    assert "a worker process died 1 times" in outcome.failed[killer]


@pytest.mark.parametrize(
    "stop",
    [signal.SIGKILL, pytest.param(signal.SIGINT, marks=pytest.mark.slow)],  # Ctrl-C: full tier
    ids=["SIGKILL", "Ctrl-C"],
)
def test_stopping_the_whole_run_loses_no_finished_run_and_resume_completes(tmp_path, stop):
    """SIGKILL or Ctrl-C of `dlsched run` and its workers mid-grid; the next run resumes."""
    path = write_experiment(
        tmp_path,
        seeds=4,
        allow_imports=True,
        policies=[{"name": "experiment_helpers:SlowFifo", "params": {"delay_s": 0.02}}],
    )
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    driver = subprocess.Popen(
        # SIGINT handled even when this test runs with it ignored (a shell's background job
        # passes SIG_IGN on to its children, and Python then never raises KeyboardInterrupt)
        [
            sys.executable,
            "-c",
            "import signal, sys; "
            "signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from dlsched.cli import main; sys.exit(main(sys.argv[1:]))",
            "run",
            str(path),
            "--out",
            str(out),
            "--workers",
            "2",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    store = ResultsStore(out)
    deadline = time.monotonic() + 60
    while len(store.finished_keys()) < 2 and driver.poll() is None:
        assert time.monotonic() < deadline, "the grid did not start"
        time.sleep(0.02)
    os.killpg(driver.pid, stop)  # the whole process group, as a terminal's Ctrl-C does
    _, err = driver.communicate(timeout=30)
    if stop == signal.SIGINT:
        assert driver.returncode == 130 and b"run the same command again" in err, err
    else:
        assert driver.returncode == -signal.SIGKILL, err
    survivors = store.finished_keys()
    assert 2 <= len(survivors) < 8
    _assert_complete(store)
    resumed = run_experiment(path, out, workers=2)
    assert sorted(resumed.skipped) == survivors and len(resumed.finished) == 8 - len(survivors)
    _assert_complete(store)
    assert not list((out / "runs").glob(".tmp-*"))


def test_an_interrupted_write_leaves_nothing_that_looks_finished(tmp_path, monkeypatch):
    """Ctrl-C while a run's files are being written: no run dir, no failure record."""
    path = write_experiment(tmp_path, seeds=1, sweep=None, policies=["fifo"])
    store = ResultsStore(tmp_path / "out")
    real_save = SimulationResult.save

    def save_then_interrupt(self, directory):
        real_save(self, directory)
        raise KeyboardInterrupt

    monkeypatch.setattr(SimulationResult, "save", save_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(path, store.root, executor="local")
    assert store.finished_keys() == [] and store.failures() == {}
    assert [p.name for p in store.runs_dir.iterdir()] == []
    monkeypatch.undo()
    assert len(run_experiment(path, store.root, executor="local").finished) == 1


def test_leftovers_of_a_killed_writer_are_never_taken_for_runs(tmp_path):
    """A .tmp- directory (a writer killed before its rename) is ignored, then removed."""
    path = write_experiment(tmp_path, seeds=1, sweep=None, policies=["fifo"])
    key = next(iter(load_experiment(path).runs))
    leftover = tmp_path / "out" / "runs" / f".tmp-{key}-abc"
    leftover.mkdir(parents=True)
    (leftover / "config.json").write_text("{}")
    store = ResultsStore(tmp_path / "out")
    assert not store.is_finished(key) and store.finished_keys() == []
    assert len(run_experiment(path, store.root, executor="local").finished) == 1
    assert not leftover.exists()


def test_a_second_writer_is_refused(tmp_path):
    """Two `dlsched run` on one results directory: the second stops with a clear error."""
    path = write_experiment(tmp_path, seeds=1, sweep=None, policies=["fifo"])
    store = ResultsStore(tmp_path / "out")
    with store.lock(), pytest.raises(StoreBusyError, match="another `dlsched run`"):
        run_experiment(path, store.root, executor="local")


def test_progress_bar_is_quiet_off_a_terminal_and_shown_on_request(tmp_path, capsys):
    """No TTY, no bar; progress=True shows runs, and a single run's jobs finished of its
    total (with an ETA) and simulated time."""
    path = write_experiment(tmp_path, seeds=1, sweep=None, policies=["fifo"])
    run_experiment(path, tmp_path / "quiet", executor="local")
    assert capsys.readouterr().err == ""
    run_experiment(path, tmp_path / "loud", executor="local", progress=True)
    err = capsys.readouterr().err
    assert "1.0/1 runs" in err and "job" in err and "simulated" in err


def test_unknown_executor_is_refused(tmp_path):
    """The executor must be one of local, process, dask."""
    with pytest.raises(ValueError, match="choose one of local, process, dask"):
        run_experiment(write_experiment(tmp_path), tmp_path / "out", executor="ray")


def test_dask_executor_without_the_extra_says_how_to_install_it(tmp_path, monkeypatch):
    """No Dask installed: a one-line error naming the extra, not an ImportError."""
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'dlsched\[dask\]'"):
        run_experiment(write_experiment(tmp_path), tmp_path / "out", executor="dask")
