"""The `dlsched` command."""

import json
import re

import pandas as pd
import pytest

from dlsched.cli import main


@pytest.mark.slow  # 2,302 jobs: 7 s
def test_replay_with_no_arguments_runs_the_bundled_philly_day(capsys):
    """`dlsched replay` replays the bundled real trace and prints a summary table."""
    assert main(["replay"]) == 0
    out = capsys.readouterr().out
    assert "philly_day.csv" in out and "cluster philly: 2,490 GPUs" in out
    assert "avg_jct" in out
    assert re.search(r"jobs_completed\s+2,302\n", out)


def test_replay_json_and_out(tmp_path, capsys):
    """--json prints the summary; --out saves the result tables."""
    code = main(
        [
            "replay",
            "--trace",
            "traces/tiresias_60_job.csv",
            "--cluster",
            "tiresias-60",
            "--policy",
            "fifo",
            "--param",
            "backfill=greedy",
            "--json",
            "--out",
            str(tmp_path / "run"),
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["jobs_completed"] == 60
    assert len(pd.read_parquet(tmp_path / "run" / "jobs.parquet")) == 60
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["jobs_completed"] == 60


def test_replay_gavel_trace_with_gavel_throughput(capsys):
    """A Gavel trace replays on the Gavel cluster with measured throughputs."""
    assert (
        main(
            [
                "replay",
                "--trace",
                "traces/gavel_artifact_evaluation.trace",
                "--cluster",
                "gavel-108",
                "--policy",
                "srtf",
                "--throughput",
                "gavel",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["jobs_completed"] == 15


def test_policies_lists_one_line_each(capsys):
    """`dlsched policies`: a line per policy with a description, its parameters indented."""
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line for line in lines if not line.startswith(" ")]
    names = [line.split()[0] for line in heads]
    assert {"fifo", "sjf", "srtf"} <= set(names)
    assert all(len(line.split()) > 2 for line in heads)


def test_bad_input_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    """A bad trace row exits 2 with the file, row and field on stderr."""
    bad = tmp_path / "bad.csv"
    bad.write_text("job_id,submit_time,num_gpus,duration\n1,0,1,10\n2,-5,1,10\n")
    assert main(["replay", "--trace", str(bad), "--cluster", "tiresias-60"]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "row 3" in err and "submit_time" in err


def test_unknown_policy_lists_the_registered(capsys):
    """An unknown policy name is refused with the list of names."""
    assert main(["replay", "--policy", "nope"]) == 2
    assert "fifo" in capsys.readouterr().err
