"""`dlsched report`, `dlsched run` and `dlsched compare`: files, tables and plots."""

import json
import shutil

import pandas as pd
import pytest
from experiment_helpers import write_experiment

from dlsched.cli import main
from dlsched.experiments import run_experiment
from dlsched.report import DEADLINE_PLOT, PLOTS, write_report

TWO_TYPES = {
    "name": "two-types",
    "nodes": [
        {"gpu_type": "V100", "count": 1, "gpus_per_node": 4},
        {"gpu_type": "K80", "count": 1, "gpus_per_node": 4},
    ],
}
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A tiny grid (2 policies x 2 loads x 2 seeds, jobs with deadlines) run and reported."""
    folder = tmp_path_factory.mktemp("grid")
    path = write_experiment(folder, cluster=TWO_TYPES, estimator="noisy:0.3")
    run_experiment(path, folder / "out", executor="local")
    return path, folder / "out", write_report(folder / "out")


def test_report_writes_every_table_and_plot(results):
    """CSV, Markdown, and every PNG (with the deadline plot: these jobs have deadlines)."""
    _, out, written = results
    names = {p.name for p in written}
    assert names == {
        "summary.csv",
        "runs.csv",
        "wall_times.csv",
        "summary.md",
        *PLOTS,
        DEADLINE_PLOT,
    }
    for name in [*PLOTS, DEADLINE_PLOT]:
        data = (out / name).read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, name


def test_summary_table_has_one_row_per_policy_and_load(results):
    """summary.csv: means over the two replicates; runs.csv: one row per grid cell."""
    _, out, _ = results
    table = pd.read_csv(out / "summary.csv")
    assert list(table["policy"]) == ["fifo", "srtf", "fifo", "srtf"]
    assert list(table["workload.arrival_rate_scale"]) == [1.0, 1.0, 2.0, 2.0]
    assert set(table["runs"]) == {2} and (table["jobs_completed"] == 6).all()
    assert {"avg_jct", "avg_jct_sd", "makespan", "deadline_satisfaction"} <= set(table.columns)
    assert not any(c.endswith("wall_s") for c in table.columns)
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 8 and set(runs["status"]) == {"finished"}
    md = (out / "summary.md").read_text()
    assert "| fifo |" in md and "deadlines met" in md
    assert all(f"]({name})" in md for name in [*PLOTS, DEADLINE_PLOT])


@pytest.mark.slow  # runs the experiment a second time: 6 s
def test_same_experiment_twice_gives_byte_identical_summaries(results, tmp_path):
    """Only wall times differ between two runs of one experiment."""
    path, out, _ = results
    run_experiment(path, tmp_path / "again", workers=2)
    write_report(tmp_path / "again")
    for name in ("summary.csv", "runs.csv", "summary.md"):
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes(), name
    for key in json.loads((out / "experiment.json").read_text())["points"][:3]:
        a = json.loads((out / "runs" / key["key"] / "summary.json").read_text())
        b = json.loads((tmp_path / "again" / "runs" / key["key"] / "summary.json").read_text())
        assert {k: v for k, v in a.items() if not k.endswith("wall_s")} == {
            k: v for k, v in b.items() if not k.endswith("wall_s")
        }


def test_report_lists_failed_and_missing_runs(tmp_path):
    """A failed run is listed with its error; a run not stored is counted as not run."""
    path = write_experiment(
        tmp_path,
        seeds=1,
        sweep=None,
        allow_imports=True,
        policies=["fifo", "sjf", "experiment_helpers:Broken"],
    )
    outcome = run_experiment(path, tmp_path / "out", executor="local")
    sjf = next(p.key for p in outcome.experiment.points if p.policy == "sjf")
    shutil.rmtree(tmp_path / "out" / "runs" / sjf)
    write_report(tmp_path / "out")
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "## Failed runs" in md and "broken on purpose" in md
    assert "## Not run yet" in md and "1 runs are not stored" in md
    runs = pd.read_csv(tmp_path / "out" / "runs.csv")
    assert sorted(runs["status"]) == ["failed", "finished", "missing"]


@pytest.mark.slow  # a whole experiment and its report through the CLI: 8 s
def test_cli_run_then_report(tmp_path, capsys):
    """`dlsched run` prints a table and where to look; `dlsched report` lists its files."""
    path = write_experiment(tmp_path, seeds=1)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--executor", "local"]) == 0
    text = capsys.readouterr().out
    assert "4 runs: 4 ran now, 0 already stored, 0 failed" in text and "srtf" in text
    assert main(["run", str(path), "--out", str(out), "--dry-run"]) == 0
    assert capsys.readouterr().out.count("  done  ") == 4
    assert main(["report", str(out)]) == 0
    assert "summary.md" in capsys.readouterr().out


def test_cli_run_exits_1_when_a_run_failed(tmp_path, capsys):
    """The grid finishes; the exit status says some runs failed, and where to read why."""
    path = write_experiment(
        tmp_path,
        seeds=1,
        sweep=None,
        allow_imports=True,
        policies=["fifo", "experiment_helpers:Broken"],
    )
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--executor", "local"]) == 1
    assert "failures/" in capsys.readouterr().out


def test_cli_errors_are_sentences(tmp_path, capsys):
    """A bad experiment file or results directory exits 2 with the file and the key."""
    path = write_experiment(tmp_path, throughput="fast")
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "'throughput'" in err
    assert main(["report", str(tmp_path)]) == 2
    assert "not a results directory" in capsys.readouterr().err


def test_compare_prints_policies_side_by_side(capsys):
    """One column per policy, parameters after a colon."""
    assert (
        main(
            [
                "compare",
                "--trace",
                "traces/tiresias_60_job.csv",
                "--cluster",
                "tiresias-60",
                "--policies",
                "fifo,fifo:backfill=greedy,srtf",
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "fifo:backfill=greedy" in line)
    assert header.split() == ["fifo", "fifo:backfill=greedy", "srtf"]
    assert any(line.split()[:1] == ["avg_jct"] and len(line.split()) >= 4 for line in lines)


def test_compare_json(capsys):
    """--json prints {policy: summary}."""
    assert (
        main(
            [
                "compare",
                "--trace",
                "traces/tiresias_60_job.csv",
                "--cluster",
                "tiresias-60",
                "--policies",
                "fifo,srtf",
                "--json",
            ]
        )
        == 0
    )
    summaries = json.loads(capsys.readouterr().out)
    assert list(summaries) == ["fifo", "srtf"]
    assert summaries["srtf"]["jobs_completed"] == 60
