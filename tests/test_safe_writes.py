"""Writes stay in their place: every file dlsched writes appears whole or not at all, never
through a symbolic link and never over an input of the run (`dlsched.atomic`)."""

from __future__ import annotations

import errno
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

import dlsched
from dlsched import atomic, cli
from dlsched.cli import main
from dlsched.engine import recorder
from dlsched.errors import DlschedError, OutputError, ResultsError
from dlsched.experiments.store import ResultsStore
from dlsched.metrics import RESULT_FILES, SimulationResult
from dlsched.policies.fifo import Fifo

TRACE = """job_id,submit_time,num_gpus,duration
1,0,2,100
2,10,4,50
3,20,1,30
4,30,2,80
"""

CLUSTER = {"name": "one-node", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}

OUTSIDE = b"precious: not dlsched's\n"


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    """The single stderr line of a user error (asserted to be exactly that)."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dlsched: error: ") and "Traceback" not in err
    return lines[0]


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    """A four-job trace and a one-node cluster file in `tmp_path`."""
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    cluster = tmp_path / "c.yaml"
    cluster.write_text(yaml.safe_dump(CLUSTER))
    return trace, cluster


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every output folder, that a planted link points at."""
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_bytes(OUTSIDE)
    return path


def replay(inputs: tuple[Path, Path], *options: str) -> int:
    trace, cluster = inputs
    return main(["replay", "--trace", str(trace), "--cluster", str(cluster), "--json", *options])


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a replay starts simulating (a refusal must come before the run)."""

    def simulate(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the run started")

    monkeypatch.setattr(cli, "_simulate", simulate)


def enospc() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def jobs() -> pd.DataFrame:
    return pd.read_csv(io.StringIO(TRACE))


def cluster() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(CLUSTER)


def leftovers(folder: Path) -> list[str]:
    """Temporary names left in `folder` (recursively)."""
    return sorted(p.name for p in folder.rglob(f"{atomic.TMP_PREFIX}*"))


# ---- the primitives -------------------------------------------------------------------------
def test_a_failed_write_keeps_the_previous_file(tmp_path: Path) -> None:
    """A disk full midway: the name keeps its old content, no temporary file stays."""
    path = tmp_path / "table.bin"
    path.write_bytes(b"old content")
    with pytest.raises(OSError) as caught, atomic.atomic_file(path) as handle:
        handle.write(b"half of the new")
        raise enospc()
    assert caught.value.errno == errno.ENOSPC
    assert path.read_bytes() == b"old content"
    assert leftovers(tmp_path) == []


def test_a_symlinked_target_is_refused(tmp_path: Path, outside: Path) -> None:
    """A name that is a link is refused, and neither the link nor its target changes."""
    link = tmp_path / "out.json"
    link.symlink_to(outside)
    with pytest.raises(OutputError, match="symbolic link"):
        atomic.write_text(link, "{}")
    assert link.is_symlink() and outside.read_bytes() == OUTSIDE


def test_an_input_is_never_a_target(tmp_path: Path, inputs: tuple[Path, Path]) -> None:
    """Another spelling of an input file (here through `..`) is still that input."""
    trace, _ = inputs
    alias = tmp_path / "elsewhere" / ".." / trace.name
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(OutputError, match="an input of this run"):
        atomic.write_text(alias, "x", inputs=[trace])
    assert trace.read_text() == TRACE


def test_open_in_place_refuses_a_fifo(tmp_path: Path) -> None:
    """A FIFO under a lock file's name is refused at once, not waited on."""
    fifo = tmp_path / ".lock"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="not a regular file"):
        atomic.open_in_place(fifo)


# ---- the results store ----------------------------------------------------------------------
def test_a_planted_lock_link_is_refused_and_its_target_untouched(
    tmp_path: Path, outside: Path
) -> None:
    """A `.lock` link in a store folder: the lock is refused, the linked file stays whole."""
    root = tmp_path / "results"
    root.mkdir()
    (root / ".lock").symlink_to(outside)
    with pytest.raises(OutputError, match=r"\.lock.*symbolic link"), ResultsStore(root).lock():
        pass
    assert outside.read_bytes() == OUTSIDE


def test_run_refuses_a_store_with_a_planted_lock_link(
    tmp_path: Path, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dlsched run` into that store: one line naming the link, exit 2, the target whole."""
    from experiment_helpers import write_experiment

    path = write_experiment(tmp_path, seeds=1, sweep=None)
    root = tmp_path / "results"
    root.mkdir()
    (root / ".lock").symlink_to(outside)
    assert main(["run", str(path), "--out", str(root), "--executor", "local"]) == 2
    assert ".lock" in one_line_error(capsys)
    assert outside.read_bytes() == OUTSIDE
    assert not (root / "runs").exists() or not any((root / "runs").iterdir())


def test_a_failure_record_is_not_written_through_a_link(tmp_path: Path, outside: Path) -> None:
    """failures/<key>.json planted as a link: refused, the target untouched."""
    store = ResultsStore(tmp_path / "results")
    store.failures_dir.mkdir(parents=True)
    (store.failures_dir / "k1.json").symlink_to(outside)
    with pytest.raises(OutputError):
        store.record_failure("k1", {}, "boom", "traceback")
    assert outside.read_bytes() == OUTSIDE


# ---- replay --out / --events ----------------------------------------------------------------
def test_out_with_a_linked_timeline_is_refused(
    tmp_path: Path,
    inputs: tuple[Path, Path],
    outside: Path,
    no_run: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`replay --out R` where R/timeline.parquet links outside: refused before the run."""
    out = tmp_path / "R"
    out.mkdir()
    (out / "timeline.parquet").symlink_to(outside)
    assert replay(inputs, "--out", str(out)) == 2
    line = one_line_error(capsys)
    assert "timeline.parquet" in line and "symbolic link" in line
    assert outside.read_bytes() == OUTSIDE


def test_events_naming_a_file_of_out_is_refused(
    tmp_path: Path, inputs: tuple[Path, Path], no_run: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--events R/jobs.parquet --out R`: refused before the run, naming both."""
    out = tmp_path / "R"
    assert replay(inputs, "--events", str(out / "jobs.parquet"), "--out", str(out)) == 2
    line = one_line_error(capsys)
    assert "--events" in line and "jobs.parquet" in line and "--out" in line
    assert not (out / "jobs.parquet").exists()


def test_events_naming_the_trace_is_refused(
    inputs: tuple[Path, Path], no_run: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--events <the trace>`: refused before the run, the trace unchanged."""
    trace, _ = inputs
    assert replay(inputs, "--events", str(trace)) == 2
    assert "an input of this run" in one_line_error(capsys)
    assert trace.read_text() == TRACE


def test_events_naming_the_cluster_file_is_refused(
    inputs: tuple[Path, Path], no_run: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--events <the cluster file>`: refused as well."""
    _, cluster = inputs
    before = cluster.read_text()
    assert replay(inputs, "--events", str(cluster)) == 2
    assert "an input of this run" in one_line_error(capsys)
    assert cluster.read_text() == before


def test_out_holding_the_trace_is_refused(
    tmp_path: Path, inputs: tuple[Path, Path], no_run: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trace that is R/jobs.parquet, replayed with `--out R`: refused, the trace whole."""
    out = tmp_path / "R"
    out.mkdir()
    trace = out / "jobs.parquet"
    dlsched.load_trace(inputs[0]).to_parquet(trace)
    before = trace.read_bytes()
    assert replay((trace, inputs[1]), "--out", str(out)) == 2
    line = one_line_error(capsys)
    assert "jobs.parquet" in line and "an input of this run" in line
    assert trace.read_bytes() == before


def test_simulate_refuses_events_over_its_trace(inputs: tuple[Path, Path]) -> None:
    """`simulate(trace_path, events=trace_path)`: the API refuses it too."""
    trace, cluster = inputs
    with pytest.raises(OutputError, match="an input of this run"):
        dlsched.simulate(trace, cluster, "fifo", events=trace)
    assert trace.read_text() == TRACE


def test_out_on_a_full_disk_keeps_the_previous_result(
    tmp_path: Path,
    inputs: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The disk fills while timeline.parquet is written: the folder still holds the previous
    result, whole and loadable, one line says why, and no temporary file is left."""
    out = tmp_path / "R"
    assert replay(inputs, "--out", str(out)) == 0
    before = {name: (out / name).read_bytes() for name in RESULT_FILES}
    capsys.readouterr()
    real = pd.DataFrame.to_parquet

    def full_disk(self: pd.DataFrame, path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(str(path)).name != "timeline.parquet":
            return real(self, path, *args, **kwargs)
        with open(path, "wb") as handle:
            handle.write(b"PAR1 half a table")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full_disk)
    assert replay(inputs, "--out", str(out), "--policy", "srtf") == 2
    assert f"{out / 'timeline.parquet'}: No space left on device" in one_line_error(capsys)
    assert {name: (out / name).read_bytes() for name in RESULT_FILES} == before
    assert leftovers(out) == []
    monkeypatch.setattr(pd.DataFrame, "to_parquet", real)
    assert SimulationResult.load(out).meta["policy"] == "fifo"


def test_save_moves_meta_json_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`save` commits with meta.json: the old one goes first, the new one comes last."""
    result = dlsched.simulate(jobs(), cluster(), "fifo")
    out = result.save(tmp_path / "R")
    moves: list[str] = []
    real = os.replace

    def record(src: Any, dst: Any) -> None:
        moves.append(Path(dst).name)
        real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", record)
    result.save(out)
    assert moves[-1] == "meta.json" and sorted(moves) == sorted(RESULT_FILES)


# ---- the streamed event log -----------------------------------------------------------------
class _Peek(Fifo):
    """FIFO that reads the events file's bytes at its fourth scheduling call."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.seen: bytes | None = None

    def start(self, view: Any) -> None:
        super().start(view)
        self.calls = 0

    def schedule(self, view: Any) -> Any:
        self.calls += 1
        if self.calls == 4:
            self.seen = self.path.read_bytes()
        return super().schedule(view)


def test_the_streamed_log_appears_when_the_run_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the run streams its log (row groups already written), the file's name still
    holds what it held before; at the end it holds the whole log."""
    monkeypatch.setattr(recorder, "EVENTS_ROW_GROUP", 1)
    path = tmp_path / "events.parquet"
    path.write_bytes(b"the previous log")
    peek = _Peek(path)
    result = dlsched.simulate(jobs(), cluster(), peek)
    peek.seen = None
    dlsched.simulate(jobs(), cluster(), peek, events=path)
    assert peek.seen == b"the previous log"
    assert len(pd.read_parquet(path)) == result.summary()["events"]
    assert leftovers(tmp_path) == []


def test_a_full_disk_while_streaming_keeps_the_previous_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row group that fails to write (ENOSPC): the run fails with that error, the old file
    stays as it was and no temporary file is left."""
    import pyarrow.parquet as pq

    monkeypatch.setattr(recorder, "EVENTS_ROW_GROUP", 2)
    path = tmp_path / "events.parquet"
    path.write_bytes(b"the previous log")
    real = pq.ParquetWriter.write_table
    calls = []

    def full_disk(self: Any, table: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise enospc()
        real(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", full_disk)
    with pytest.raises(OSError) as caught:
        dlsched.simulate(jobs(), cluster(), "fifo", events=path)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(path)
    assert path.read_bytes() == b"the previous log"
    assert leftovers(tmp_path) == []


def test_a_linked_events_file_is_refused(tmp_path: Path, outside: Path) -> None:
    """`simulate(events=link)`: refused before the run, the target untouched."""
    link = tmp_path / "ev.parquet"
    link.symlink_to(outside)
    with pytest.raises(OutputError, match="symbolic link"):
        dlsched.simulate(jobs(), cluster(), "fifo", events=link)
    assert outside.read_bytes() == OUTSIDE


# ---- SimulationResult.load of a damaged folder ----------------------------------------------
@pytest.fixture
def saved(tmp_path: Path) -> Path:
    result = dlsched.simulate(jobs(), cluster(), "fifo")
    return result.save(tmp_path / "R")


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize(
    ("name", "damage", "says"),
    [
        ("timeline.parquet", _truncate, "unreadable"),
        ("jobs.parquet", lambda p: p.write_bytes(b"not parquet at all"), "unreadable"),
        ("events.parquet", lambda p: p.write_bytes(b""), "unreadable"),
        ("events.parquet", Path.unlink, "missing"),
        ("meta.json", Path.unlink, "missing"),
        ("meta.json", lambda p: p.write_text('{"policy": "fi'), "unreadable"),
        ("meta.json", lambda p: p.write_text("[1, 2]"), "not a mapping"),
        ("meta.json", lambda p: p.write_bytes(b"\xff\xfe"), "unreadable"),
    ],
)
def test_loading_a_damaged_folder_is_one_clear_error(
    saved: Path, name: str, damage: Any, says: str
) -> None:
    """A missing file, a truncated or garbage table, bad JSON: one `ResultsError` naming the
    folder and the file, never a raw ArrowInvalid or JSONDecodeError."""
    damage(saved / name)
    with pytest.raises(ResultsError) as caught:
        SimulationResult.load(saved)
    message = str(caught.value)
    assert str(saved) in message and name in message and says in message
    assert "\n" not in message


def test_loading_a_missing_folder_is_one_clear_error(tmp_path: Path) -> None:
    """A folder that does not exist: a `ResultsError` naming it."""
    with pytest.raises(ResultsError, match="no such folder"):
        SimulationResult.load(tmp_path / "nothing")


# ---- URLs -----------------------------------------------------------------------------------
@pytest.fixture
def without_s3fs(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import s3fs` fails, as where it is not installed."""
    pytest.importorskip("fsspec")
    monkeypatch.setitem(sys.modules, "s3fs", None)


def test_replay_out_to_s3_without_s3fs_says_what_to_install(
    tmp_path: Path,
    inputs: tuple[Path, Path],
    without_s3fs: None,
    no_run: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`replay --out s3://bucket/x` without s3fs: one line saying `pip install s3fs`, before
    the run, and no local folder named ``s3:`` made instead."""
    monkeypatch.chdir(tmp_path)
    assert replay(inputs, "--out", "s3://bucket/x") == 2
    assert "pip install s3fs" in one_line_error(capsys)
    assert not (tmp_path / "s3:").exists()


def test_run_out_to_s3_without_s3fs_says_what_to_install(
    tmp_path: Path, without_s3fs: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dlsched run --dry-run --out s3://bucket/x` without s3fs: one line, no traceback."""
    from experiment_helpers import write_experiment

    path = write_experiment(tmp_path, seeds=1, sweep=None)
    assert main(["run", str(path), "--out", "s3://bucket/x", "--dry-run"]) == 2
    assert "pip install s3fs" in one_line_error(capsys)


def test_replay_out_to_a_url_saves_there(
    tmp_path: Path, inputs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """`replay --out memory://…` puts the result's files there (meta.json among them)."""
    fsspec = pytest.importorskip("fsspec")
    assert replay(inputs, "--out", "memory://replay-out/R") == 0
    fs = fsspec.filesystem("memory")
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.ls("/replay-out/R", detail=False)) == sorted(
        RESULT_FILES
    )
    meta = json.loads(fs.cat_file("/replay-out/R/meta.json"))
    assert meta["policy"] == "fifo"


# ---- other writers --------------------------------------------------------------------------
def test_workload_to_parquet_refuses_its_own_source(tmp_path: Path) -> None:
    """Writing a workload over the file it was loaded from is refused, the file whole."""
    source = tmp_path / "w.parquet"
    jobs().to_parquet(source, index=False)
    before = source.read_bytes()
    workload = dlsched.load_trace(source)
    with pytest.raises(OutputError, match="an input of this run"):
        workload.to_parquet(source)
    assert source.read_bytes() == before
    workload.to_csv(tmp_path / "copy.csv.gz")  # elsewhere: fine, compressed as named
    assert len(pd.read_csv(tmp_path / "copy.csv.gz")) == 4


def test_errors_are_dlsched_errors() -> None:
    """Both new error kinds are `DlschedError`s (the CLI's one-line boundary)."""
    assert issubclass(OutputError, DlschedError) and issubclass(ResultsError, DlschedError)


def test_a_discarded_run_that_is_a_link_removes_only_the_link(
    tmp_path: Path, outside: Path
) -> None:
    """runs/<key> planted as a link to a folder: discarding it removes the link, leaves no
    leftover and keeps the folder it named."""
    store = ResultsStore(tmp_path / "results")
    store.runs_dir.mkdir(parents=True)
    store.run_dir("k1").symlink_to(outside.parent, target_is_directory=True)
    store.discard_run("k1")
    assert list(store.runs_dir.iterdir()) == []
    assert outside.read_bytes() == OUTSIDE


def test_report_refuses_a_linked_output(
    tmp_path: Path,
    outside: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`dlsched report` where summary.csv is a planted link (in a store with no finished run
    yet): one line naming it, the target untouched."""
    root = tmp_path / "results"
    root.mkdir()
    manifest = {
        "name": "tiny",
        "description": "",
        "seed": 0,
        "replicates": [0],
        "policies": ["fifo"],
        "axes": [],
        "points": [{"key": "k1", "policy": "fifo", "replicate": 0, "axes": {}}],
        "runs": 1,
    }
    (root / "experiment.json").write_text(json.dumps(manifest))
    (root / "summary.csv").symlink_to(outside)
    assert main(["report", str(root)]) == 2
    line = one_line_error(capsys)
    assert "summary.csv" in line and "symbolic link" in line
    assert outside.read_bytes() == OUTSIDE
