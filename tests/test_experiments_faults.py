"""Faults of the experiments layer: killed drivers, orphan workers, damaged and stale runs."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from experiment_helpers import write_experiment

import dlsched
from dlsched.cli import main
from dlsched.experiments import ResultsStore, load_experiment, run_experiment, simulate_config
from dlsched.experiments import store as store_module
from dlsched.experiments.store import RESULTS_FORMAT, RUN_MANIFEST, LeaseLostError

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


# ---- killed drivers leave no orphan and no late write ---------------------------------------
def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) of every process, from /proc."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        table[int(entry.name)] = (int(ppid), state)
    return table


def _descendants(pid: int) -> set[int]:
    table = _process_table()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, (parent, _) in table.items() if parent in frontier}
        found |= frontier
    return found


def _living(pids: set[int]) -> set[int]:
    table = _process_table()
    return {pid for pid in pids if pid in table and table[pid][1] not in "ZX"}


def _stored_names(out: Path) -> set[str]:
    runs = out / "runs"
    return (
        {p.name for p in runs.iterdir() if not p.name.startswith(".")} if runs.is_dir() else set()
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process table in /proc")
@pytest.mark.parametrize(
    ("stop", "returncode"),
    [  # SIGKILL in the default tier, the other two (4 s each) in the full one
        pytest.param(signal.SIGTERM, -signal.SIGTERM, marks=pytest.mark.slow),
        (signal.SIGKILL, -signal.SIGKILL),
        pytest.param(signal.SIGINT, 130, marks=pytest.mark.slow),
    ],
    ids=["SIGTERM", "SIGKILL", "Ctrl-C"],
)
def test_killing_the_driver_alone_ends_its_workers_and_nothing_is_stored_after(
    tmp_path, stop, returncode
):
    """Signal only the `dlsched run` process: its workers die within seconds, write nothing."""
    path = write_experiment(
        tmp_path,
        seeds=4,
        allow_imports=True,
        policies=[{"name": "experiment_helpers:SlowFifo", "params": {"delay_s": 0.05}}],
    )
    out, log = tmp_path / "out", tmp_path / "stderr.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    driver = subprocess.Popen(
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
        stderr=log.open("w"),  # a file, not a pipe: orphans holding a pipe would hang this test
        start_new_session=True,  # the signal goes to the driver only, never to this test
    )
    try:
        deadline = time.monotonic() + 60
        while not _stored_names(out) and driver.poll() is None:
            assert time.monotonic() < deadline, "the grid did not start"
            time.sleep(0.02)
        helpers = _descendants(driver.pid)  # the forkserver and the pool workers
        assert len(helpers) >= 2, helpers
        os.kill(driver.pid, stop)
        driver.wait(timeout=30)
        assert driver.returncode == returncode and "Traceback" not in log.read_text()
        stored = _stored_names(out)  # the lock is gone with the driver: nothing may follow
        assert len(stored) < 8, "the grid finished before the signal"
        deadline = time.monotonic() + 5
        while _living(helpers):
            assert time.monotonic() < deadline, f"workers outlived their driver: {helpers}"
            time.sleep(0.05)
        time.sleep(1.0)  # longer than a run takes
        assert _stored_names(out) == stored
    finally:
        for pid in _living(_descendants(driver.pid) | {driver.pid}):
            os.kill(pid, signal.SIGKILL)
    assert all(ResultsStore(out).is_finished(key) for key in stored)


def _tiny_run(tmp_path):
    path = write_experiment(tmp_path, seeds=1, sweep=None, policies=["fifo"])
    run = next(iter(load_experiment(path).runs.values()))
    return path, run, simulate_config(run.config)


def test_a_worker_stores_nothing_once_its_driver_released_the_lock(tmp_path):
    """A lease whose lock was released: write_run and record_failure refuse, leave nothing."""
    _, run, result = _tiny_run(tmp_path)
    store = ResultsStore(tmp_path / "out")
    with store.lock() as lease:
        pass
    with pytest.raises(LeaseLostError, match="no longer holds"):
        store.write_run(run.key, run.config, result, lease=lease)
    with pytest.raises(LeaseLostError):
        store.record_failure(run.key, run.config, "boom", "", lease=lease)
    assert list(store.runs_dir.iterdir()) == [] and store.failures() == {}


def test_a_worker_of_an_earlier_driver_cannot_write_under_a_later_one(tmp_path):
    """Only the lease of the driver holding the lock now may store a run."""
    _, run, result = _tiny_run(tmp_path)
    store = ResultsStore(tmp_path / "out")
    with store.lock() as old:
        pass
    with store.lock() as current:
        with pytest.raises(LeaseLostError):
            store.write_run(run.key, run.config, result, lease=old)
        assert not store.is_finished(run.key)
        store.write_run(run.key, run.config, result, lease=current)
    assert store.is_finished(run.key)


def test_a_released_lock_file_holds_no_token_and_a_waiting_writer_keeps_it(tmp_path):
    """A refused second writer does not erase the holder's token (its lease stays valid)."""
    store = ResultsStore(tmp_path / "out")
    with store.lock() as lease:
        with pytest.raises(Exception, match="another `dlsched run`"), store.lock():
            pass
        store.check_lease(lease)  # still held, token intact
    assert (store.root / ".lock").read_text() == ""


# ---- a stored run counts only when its manifest verifies --------------------------------------
def test_every_stored_run_has_a_manifest_of_its_files(tmp_path):
    """manifest.json lists the size and SHA-256 of every other file, the format and version."""
    _, run, result = _tiny_run(tmp_path)
    store = ResultsStore(tmp_path / "out")
    folder = store.write_run(run.key, run.config, result)
    manifest = json.loads((folder / RUN_MANIFEST).read_text())
    assert manifest["results_format"] == RESULTS_FORMAT
    assert manifest["dlsched_version"] == dlsched.__version__
    others = sorted(p.name for p in folder.iterdir() if p.name != RUN_MANIFEST)
    assert sorted(manifest["files"]) == others
    for name, entry in manifest["files"].items():
        data = (folder / name).read_bytes()
        assert entry == {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = {
    "parquet-corrupted": lambda d: _flip_a_byte(d / "jobs.parquet"),
    "summary-deleted": lambda d: (d / "summary.json").unlink(),
    "events-truncated": lambda d: (d / "events.parquet").write_bytes(b""),
    "manifest-garbled": lambda d: (d / RUN_MANIFEST).write_text("{not json"),
}


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_run_is_rerun_and_the_runner_says_so(tmp_path, capsys, damage):
    """A corrupted or deleted file makes its run not done: the next run re-runs it, loudly."""
    path = write_experiment(tmp_path)
    out = tmp_path / "out"
    first = run_experiment(path, out, executor="local")
    victim = sorted(first.finished)[0]
    damage(ResultsStore(out).run_dir(victim))
    assert not ResultsStore(out).is_finished(victim)
    capsys.readouterr()
    again = run_experiment(path, out, executor="local")
    assert again.finished == [victim] and len(again.skipped) == 7
    assert again.rerun[victim].status == "damaged"
    err = capsys.readouterr().err
    assert "re-running 1 stored run whose files are damaged" in err and victim in err
    assert again.store.is_finished(victim) and len(again.store.load_run(victim).jobs) == 6


def test_runs_stored_without_a_manifest_are_rerun_with_a_message(tmp_path, capsys):
    """Runs of the previous results format (no manifest) are re-run, with one line saying so."""
    path = write_experiment(tmp_path)
    out = tmp_path / "out"
    run_experiment(path, out, executor="local")
    store = ResultsStore(out)
    for key in store.finished_keys():
        (store.run_dir(key) / RUN_MANIFEST).unlink()
    assert store.finished_keys() == []
    capsys.readouterr()
    again = run_experiment(path, out, executor="local")
    assert len(again.finished) == 8 and {c.status for c in again.rerun.values()} == {"legacy"}
    err = capsys.readouterr().err
    assert "re-running 8 stored runs: stored without a manifest" in err


def test_an_upgrade_of_dlsched_reruns_stored_runs_and_says_why(tmp_path, monkeypatch, capsys):
    """A run stored by another dlsched version is stale: re-run, with one line naming both."""
    path = write_experiment(tmp_path)
    out = tmp_path / "out"
    old = dlsched.__version__
    run_experiment(path, out, executor="local")
    monkeypatch.setattr(dlsched, "__version__", "99.0.0")
    assert ResultsStore(out).finished_keys() == []
    capsys.readouterr()
    again = run_experiment(path, out, executor="local")
    assert len(again.finished) == 8 and not again.skipped
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"tiny: re-running 8 stored runs: stored by dlsched {old} (results format "
        f"{RESULTS_FORMAT}); this is dlsched 99.0.0 (results format {RESULTS_FORMAT})"
    ]
    assert len(run_experiment(path, out, executor="local").skipped) == 8


def test_a_new_results_format_reruns_stored_runs(tmp_path, monkeypatch):
    """Bumping RESULTS_FORMAT (simulation semantics changed) makes every stored run stale."""
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    out = tmp_path / "out"
    run_experiment(path, out, executor="local")
    monkeypatch.setattr(store_module, "RESULTS_FORMAT", RESULTS_FORMAT + 1)
    again = run_experiment(path, out, executor="local")
    assert len(again.finished) == 2 and {c.status for c in again.rerun.values()} == {"stale"}
    assert "results format" in next(iter(again.rerun.values())).reason


def test_the_cli_says_when_it_reruns_stored_runs(tmp_path, monkeypatch, capsys):
    """`dlsched run` after an upgrade prints how many runs it re-runs and why."""
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--executor", "local"]) == 0
    monkeypatch.setattr(dlsched, "__version__", "99.0.0")
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(out), "--executor", "local"]) == 0
    captured = capsys.readouterr()
    assert "re-running 2 stored runs: stored by dlsched" in captured.err
    assert "2 ran now, 0 already stored" in captured.out
