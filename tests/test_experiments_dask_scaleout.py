"""Scale-out as Dask users expect: a `Client` they made, a scheduler file, retries after a
`KilledWorker`, results at an fsspec URL, and one labelled parquet dataset per experiment.

The Dask tests run on an in-process `LocalCluster` (two thread workers: no process start-up)
and are skipped when the optional extra is not installed (`pip install 'dlsched[dask]'`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
from experiment_helpers import write_experiment

from dlsched.experiments import load_experiment, run_experiment
from dlsched.experiments import runner as runner_module
from dlsched.experiments import store as store_module
from dlsched.experiments.runner import DaskUnreachableError
from dlsched.experiments.store import (
    LABEL_COLUMNS,
    RUN_MANIFEST,
    FsspecResultsStore,
    ResultsStore,
    StoreBusyError,
)

_REAL_EXECUTE_RUN = runner_module.execute_run


def _summaries(store):
    return {
        key: {k: v for k, v in store.run_summary(key).items() if not k.endswith("wall_s")}
        for key in store.finished_keys()
    }


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def _memory_url() -> str:
    pytest.importorskip("fsspec")
    return f"memory://dlsched-tests/{secrets.token_hex(6)}"


# ---- a client or a scheduler file -----------------------------------------------------------
def test_a_client_the_caller_made_runs_the_grid_and_stays_open(tmp_path, client):
    """`client=` runs every run on that cluster, like in-process, and leaves the client open."""
    path = write_experiment(tmp_path)
    on_dask = run_experiment(path, tmp_path / "dask", client=client)
    assert on_dask.ok and len(on_dask.finished) == 8
    local = run_experiment(path, tmp_path / "local", executor="local")
    assert _summaries(on_dask.store) == _summaries(local.store)
    assert client.submit(sum, [1, 2], pure=False).result() == 3


def test_a_scheduler_file_names_the_cluster_to_run_on(tmp_path, client):
    """`scheduler_file=` connects to the scheduler whose address the file holds."""
    scheduler_file = tmp_path / "scheduler.json"
    scheduler_file.write_text(json.dumps({"address": client.scheduler_info()["address"]}))
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    outcome = run_experiment(path, tmp_path / "out", scheduler_file=scheduler_file)
    assert outcome.ok and len(outcome.finished) == 2


def test_a_missing_scheduler_file_is_named(tmp_path):
    """A scheduler file that does not exist is named, with how to make one."""
    pytest.importorskip("distributed")
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    with pytest.raises(DaskUnreachableError, match=r"nowhere\.json: no such Dask scheduler file"):
        run_experiment(path, tmp_path / "out", scheduler_file=tmp_path / "nowhere.json")


def test_a_client_is_refused_with_another_executor(tmp_path):
    """A client given with executor='local' is an error, not silently ignored."""
    with pytest.raises(ValueError, match="client is for executor='dask', not 'local'"):
        run_experiment(write_experiment(tmp_path), tmp_path / "out", executor="local", client=1)


# ---- retries after KilledWorker -------------------------------------------------------------
def _killed_while_marked(key, config, root, on_progress=None, lease=None, cells=()):
    """`execute_run`, except that its worker 'dies' (KilledWorker) while the file
    ``kill-<key>-<n>`` beside the trace exists for some n, each such file used once."""
    import distributed

    folder = Path(config["workload"]["trace"]["path"]).parent
    for marker in sorted(folder.glob(f"kill-{key}-*")):
        marker.unlink()
        gone = SimpleNamespace(address="tcp://10.0.0.9:40000")  # what the message names
        raise distributed.KilledWorker(key, gone, 0)
    return _REAL_EXECUTE_RUN(key, config, root, on_progress, lease, cells)


def _mark(tmp_path: Path, key: str, deaths: int) -> None:
    for n in range(deaths):
        (tmp_path / f"kill-{key}-{n}").write_text("")


def test_a_run_whose_worker_died_is_submitted_again(tmp_path, client, monkeypatch):
    """A KilledWorker within `retries` is retried: every run finishes, none is failed."""
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    monkeypatch.setattr(runner_module, "execute_run", _killed_while_marked)
    _mark(tmp_path, sorted(load_experiment(path).runs)[0], 2)
    outcome = run_experiment(path, tmp_path / "out", client=client, retries=2)
    assert not list(tmp_path.glob("kill-*")), "the worker did not die twice"
    assert outcome.ok and sorted(outcome.finished) == sorted(outcome.store.finished_keys())
    assert not outcome.store.failures()


def test_a_run_whose_worker_dies_beyond_retries_fails_and_the_others_are_kept(
    tmp_path, client, monkeypatch
):
    """Past `retries`, the run is recorded as failed with the reason; the others are stored."""
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    monkeypatch.setattr(runner_module, "execute_run", _killed_while_marked)
    keys = sorted(load_experiment(path).runs)
    _mark(tmp_path, keys[0], 5)
    outcome = run_experiment(path, tmp_path / "out", client=client, retries=1)
    assert list(outcome.failed) == [keys[0]]
    assert "its Dask worker died 2 times" in outcome.failed[keys[0]]
    assert "KilledWorker" in outcome.store.failures()[keys[0]]["traceback"]
    assert outcome.store.finished_keys() == keys[1:]


# ---- results at an fsspec URL ---------------------------------------------------------------
def test_results_at_a_memory_url_from_dask_workers_read_back(tmp_path, client):
    """Runs written by Dask workers to a memory:// URL verify, load, and resume as stored."""
    path = write_experiment(tmp_path, seeds=1)
    url = _memory_url()
    outcome = run_experiment(path, url, client=client)
    store = ResultsStore(url)
    assert isinstance(store, FsspecResultsStore) and outcome.ok
    local = run_experiment(path, tmp_path / "local", executor="local")
    assert _summaries(store) == _summaries(local.store)
    key = store.finished_keys()[0]
    assert store.load_run(key).jobs.equals(local.store.load_run(key).jobs)
    again = run_experiment(path, url, client=client)
    assert len(again.skipped) == 4 and not again.finished


def test_a_run_on_an_object_store_counts_only_once_its_manifest_is_written(tmp_path):
    """Without its manifest (the commit marker) a stored run is unfinished and is run again."""
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    url = _memory_url()
    store = run_experiment(path, url, executor="local").store
    victim = store.finished_keys()[0]
    store.fs.rm(str(store.run_dir(victim) / RUN_MANIFEST))
    assert store.check_run(victim).status == "damaged"
    again = run_experiment(path, url, executor="local")
    assert again.finished == [victim] and store.is_finished(victim)


def _etag_memory_url() -> str:
    """A memory file system that gives each object an ETag (the MD5 of its bytes, as S3)."""
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFileSystem

    class EtagMemory(MemoryFileSystem):
        protocol = ("etagmem",)

        @classmethod
        def _strip_protocol(cls, path):
            return MemoryFileSystem._strip_protocol(path.removeprefix("etagmem://"))

        def info(self, path, **kwargs):
            info = super().info(path, **kwargs)
            if info["type"] == "file":
                info["ETag"] = hashlib.md5(self.cat_file(path)).hexdigest()
            return info

    fsspec.register_implementation("etagmem", EtagMemory, clobber=True)
    return f"etagmem://dlsched-tests/{secrets.token_hex(6)}"


def test_an_etag_spares_reading_runs_back_and_a_rewritten_object_is_caught(tmp_path, monkeypatch):
    """Objects whose ETag is the manifest's are not read back; a rewritten one is damaged."""
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    store = run_experiment(path, _etag_memory_url(), executor="local").store
    key = store.finished_keys()[0]
    reads = []
    real = store_module._remote_sha256
    monkeypatch.setattr(
        store_module, "_remote_sha256", lambda *args: reads.append(args) or real(*args)
    )
    assert store.check_run(key).ok and not reads
    jobs = str(store.run_dir(key) / "jobs.parquet")
    data = bytearray(store.fs.cat_file(jobs))
    data[len(data) // 2] ^= 0xFF
    store.fs.pipe_file(jobs, bytes(data))
    assert store.check_run(key).reason == "jobs.parquet does not match its SHA-256"


def test_a_memory_url_is_refused_where_worker_processes_would_write(tmp_path):
    """memory:// with a process pool is an error before any run, not runs silently lost."""
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    with pytest.raises(ValueError, match="lives in this process only"):
        run_experiment(path, _memory_url(), executor="process", workers=2)


def test_a_file_url_is_a_local_results_directory(tmp_path):
    """A file:// URL stores exactly where the plain path would."""
    path = write_experiment(tmp_path, seeds=1, sweep=None)
    outcome = run_experiment(path, f"file://{tmp_path / 'out'}", executor="local")
    assert type(outcome.store) is ResultsStore
    assert ResultsStore(tmp_path / "out").finished_keys() == sorted(outcome.finished)


def test_an_object_store_refuses_a_second_writer_but_takes_over_a_dead_ones_lock(tmp_path):
    """The lock object of a live writer elsewhere refuses; one of a dead local pid is taken."""
    store = ResultsStore(_memory_url())
    lock = store.root / ".lock"
    store._put_text(lock, "another-host:123:abcd")
    with pytest.raises(StoreBusyError, match=r"another-host:123 \(host:pid\)"):
        with store.lock():
            pass
    store._put_text(lock, f"{socket.gethostname()}:{2**22 + 7}:abcd")  # no such pid
    with store.lock() as lease:
        store.check_lease(lease)
    assert not store.fs.exists(str(lock))


# ---- the labelled dataset -------------------------------------------------------------------
def test_the_dataset_queries_every_run_with_its_labels(tmp_path):
    """`pyarrow.dataset` reads all runs' jobs at once, labelled by policy, load and seed."""
    ds = pytest.importorskip("pyarrow.dataset")
    path = write_experiment(tmp_path)
    store = run_experiment(path, tmp_path / "out", executor="local").store
    jobs = ds.dataset(store.dataset_path("jobs")).to_table().to_pandas()
    assert list(jobs.columns[:6]) == [*LABEL_COLUMNS, "workload.arrival_rate_scale"]
    assert len(jobs) == 8 * 6 and set(jobs["policy"]) == {"fifo", "srtf"}
    assert set(jobs["load"]) == {1.0, 2.0} and jobs["seed"].nunique() == 2
    mean_jct = jobs.groupby("key")["jct"].mean()
    assert mean_jct.to_dict() == pytest.approx(
        {key: store.run_summary(key)["avg_jct"] for key in store.finished_keys()}
    )
    runs = ds.dataset(store.dataset_path("runs")).to_table().to_pandas()
    assert sorted(runs["key"]) == store.finished_keys()


def test_the_dataset_follows_the_grid_and_is_rebuilt_when_missing(tmp_path):
    """Cells dropped from the grid leave the dataset; a deleted dataset is written again."""
    ds = pytest.importorskip("pyarrow.dataset")
    out = tmp_path / "out"
    run_experiment(write_experiment(tmp_path), out, executor="local")
    narrower = write_experiment(tmp_path, sweep={"workload.arrival_rate_scale": [2.0]})
    store = run_experiment(narrower, out, executor="local").store
    assert set(ds.dataset(store.dataset_path("runs")).to_table()["load"].to_pylist()) == {2.0}
    for table in ("runs", "jobs", "events", "timeline"):
        for file in Path(store.dataset_path(table)).iterdir():
            file.unlink()
    again = run_experiment(narrower, out, executor="local")
    assert len(again.skipped) == 4
    assert ds.dataset(store.dataset_path("jobs")).count_rows() == 4 * 6


def test_the_dataset_at_a_memory_url_reads_with_its_file_system(tmp_path):
    """The dataset of a store at a URL reads through the store's fsspec file system."""
    ds = pytest.importorskip("pyarrow.dataset")
    store = run_experiment(write_experiment(tmp_path), _memory_url(), executor="local").store
    table = ds.dataset(
        store.dataset_path("timeline").split("://", 1)[1], filesystem=store.fs
    ).to_table()
    assert set(table["policy"].to_pylist()) == {"fifo", "srtf"} and "V100" in table.column_names


def test_duckdb_groups_all_runs_of_the_dataset(tmp_path):
    """DuckDB reads the jobs of every run through one glob and groups them by label."""
    duckdb = pytest.importorskip("duckdb")
    store = run_experiment(write_experiment(tmp_path), tmp_path / "out", executor="local").store
    rows = duckdb.sql(
        f"SELECT policy, load, count(*) FROM '{store.dataset_path('jobs')}/*.parquet' "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rows == [("fifo", 1.0, 12), ("fifo", 2.0, 12), ("srtf", 1.0, 12), ("srtf", 2.0, 12)]
