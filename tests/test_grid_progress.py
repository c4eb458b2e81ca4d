"""A grid's bar follows its runs' own progress (`dlsched.experiments.progress`)."""

from __future__ import annotations

import io
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from tqdm import tqdm

import dlsched
from dlsched.engine import progress as engine_progress
from dlsched.experiments import run_experiment
from dlsched.experiments.progress import GridProgress, folder_writer, read_fraction


def _jobs(n: int = 20) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": range(n),
            "submit_time": [float(i) for i in range(n)],
            "num_gpus": [1] * n,
            "duration": [10.0] * n,
        }
    )


def _cluster() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )


def _bar(total: int) -> tqdm:
    return tqdm(total=total, file=io.StringIO(), disable=False)


def test_a_callable_progress_is_told_finished_of_total_and_the_end(monkeypatch):
    """simulate(progress=sink) calls sink(finished, total), ending at (total, total)."""
    monkeypatch.setattr(engine_progress, "MIN_INTERVAL_S", 0.0)
    told: list[tuple[int, int]] = []
    result = dlsched.simulate(
        _jobs(), _cluster(), "fifo", progress=lambda f, t: told.append((f, t))
    )
    assert told[-1] == (20, 20)
    assert all(t == 20 for _, t in told) and len(told) > 2
    assert [f for f, _ in told] == sorted(f for f, _ in told)
    plain = dlsched.simulate(_jobs(), _cluster(), "fifo")
    pd.testing.assert_frame_equal(plain.jobs, result.jobs)  # a sink changes no result


def test_a_worker_file_reads_back_as_the_fraction_finished(tmp_path):
    """folder_writer writes `finished total`; read_fraction gives finished / total."""
    write = folder_writer(str(tmp_path), "k1")
    write(3, 12)
    assert read_fraction(tmp_path / "k1") == pytest.approx(0.25)
    write(12, 12)
    assert read_fraction(tmp_path / "k1") == 1.0
    assert read_fraction(tmp_path / "absent") == 0.0
    (tmp_path / "bad").write_text("garbage")
    assert read_fraction(tmp_path / "bad") == 0.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "k1"]  # no temporary left


def test_the_bar_counts_whole_runs_plus_running_fractions(tmp_path):
    """Two whole runs and one at 40 % read as 2.4 runs; a done run counts 1, not 1.4."""
    bar = _bar(4)
    grid = GridProgress(bar, tmp_path, owns_folder=False)
    grid.done("a")
    grid.done("b")
    folder_writer(str(tmp_path), "c")(4, 10)
    grid.start()
    deadline = time.monotonic() + 5
    while bar.n < 2.4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert bar.n == pytest.approx(2.4)
    grid.done("c")
    assert bar.n == pytest.approx(3.0)
    assert not (tmp_path / "c").exists()
    grid.close()


def test_an_in_process_sink_moves_the_bar():
    """A run in this process moves the bar by its own fraction."""
    bar = _bar(2)
    grid = GridProgress.open(bar, None)
    sink = grid.sink("x")
    assert sink is not None
    sink(5, 10)
    assert bar.n == pytest.approx(0.5)
    folder = grid.folder
    grid.close()
    assert folder is not None and not folder.exists()  # its temporary folder is removed


def test_a_planted_link_is_not_followed(tmp_path):
    """A `.progress` symlink in a shared root is replaced by a folder; its target stays."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    root = tmp_path / "store"
    root.mkdir()
    (root / ".progress").symlink_to(outside)
    grid = GridProgress.open(_bar(1), root)
    assert grid.folder == root / ".progress" and grid.folder.is_dir()
    assert not grid.folder.is_symlink()
    grid.close()
    assert (outside / "keep").read_text() == "x"


def test_a_grid_bar_shows_fractional_runs(tmp_path: Path, capsys, monkeypatch):
    """`run_experiment(progress=True)` on the pool: the bar ends at 2.0/2 runs."""
    monkeypatch.setattr(engine_progress, "MIN_INTERVAL_S", 0.0)
    trace = tmp_path / "t.csv"
    _jobs(40).to_csv(trace, index=False)
    spec = tmp_path / "e.yaml"
    spec.write_text(
        textwrap.dedent(
            f"""
            name: g
            cluster: {{name: c, nodes: [{{gpu_type: V100, count: 1, gpus_per_node: 2}}]}}
            workload: {{trace: {trace}}}
            policies: [fifo, srtf]
            """
        )
    )
    outcome = run_experiment(spec, tmp_path / "out", executor="local", progress=True)
    assert len(outcome.finished) == 2
    err = capsys.readouterr().err
    assert "2.0/2 runs" in err
    assert ".5/2 runs" in err or any(f"0.{d}/2 runs" in err for d in range(1, 10))
