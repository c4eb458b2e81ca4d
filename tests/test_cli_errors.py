"""`dlsched`: every user error is one `dlsched: error: ...` line with exit 2, never a traceback."""

import json
import os
import subprocess
import sys

import pytest

from dlsched import cli
from dlsched.cli import main
from dlsched.experiments.store import ResultsStore

TINY = ["--trace", "traces/tiresias_60_job.csv", "--cluster", "tiresias-60"]


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    """The single stderr line of a user error (asserted to be exactly that)."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dlsched: error: ") and "Traceback" not in err
    return lines[0]


# ---- output folders -----------------------------------------------------------------------
def test_out_pointing_at_a_file_is_one_line(tmp_path, capsys):
    """--out naming an existing file is refused, naming it."""
    target = tmp_path / "taken"
    target.write_text("")
    assert main(["replay", *TINY, "--out", str(target)]) == 2
    line = one_line_error(capsys)
    assert str(target) in line and "not a folder" in line


def test_out_under_a_file_is_one_line(tmp_path, capsys):
    """--out whose parent is a regular file cannot be created: one line naming the file."""
    parent = tmp_path / "plain"
    parent.write_text("")
    assert main(["replay", *TINY, "--out", str(parent / "run")]) == 2
    assert f"{parent} is a file" in one_line_error(capsys)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_out_under_a_read_only_folder_is_one_line(tmp_path, capsys):
    """--out inside a folder without write permission is refused before the run."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main(["replay", *TINY, "--out", str(locked / "run")]) == 2
    finally:
        locked.chmod(0o700)
    assert "cannot write into" in one_line_error(capsys)


def test_run_out_pointing_at_a_file_is_one_line(tmp_path, capsys):
    """`dlsched run --out FILE` is refused like replay's."""
    from experiment_helpers import write_experiment

    path = write_experiment(tmp_path, seeds=1, sweep=None)
    target = tmp_path / "taken"
    target.write_text("")
    assert main(["run", str(path), "--out", str(target), "--executor", "local"]) == 2
    assert "not a folder" in one_line_error(capsys)


# ---- --param --------------------------------------------------------------------------------
def test_param_with_a_value_the_policy_cannot_take(capsys):
    """A mapping where fifo wants a string or bool: one line naming the parameter."""
    assert main(["replay", *TINY, "--param", "backfill={a: 1}"]) == 2
    assert "backfill" in one_line_error(capsys)


def test_param_that_is_not_yaml(capsys):
    """An unclosed list is a syntax error of --param, caught by the CLI."""
    assert main(["replay", *TINY, "--param", "backfill=[1,2"]) == 2
    line = one_line_error(capsys)
    assert "backfill=[1,2" in line and "not valid YAML" in line


def test_param_with_an_empty_value(capsys):
    """`backfill=` is refused instead of silently passing None."""
    assert main(["replay", *TINY, "--param", "backfill="]) == 2
    assert "'backfill' no value" in one_line_error(capsys)


def test_param_without_equals(capsys):
    """`--param backfill` (no `=`) says what the form is."""
    assert main(["replay", *TINY, "--param", "backfill"]) == 2
    assert "key=value" in one_line_error(capsys)


def test_param_of_the_wrong_type(capsys):
    """`compat=maybe` on tiresias (a bool parameter) is refused, naming the parameter."""
    assert main(["replay", *TINY, "--policy", "tiresias", "--param", "compat=maybe"]) == 2
    assert "compat" in one_line_error(capsys)


def test_compare_policy_parameter_errors_are_one_line(capsys):
    """`compare --policies fifo:backfill=` is refused like --param."""
    assert main(["compare", *TINY, "--policies", "fifo,fifo:backfill="]) == 2
    assert "no value" in one_line_error(capsys)


def test_seed_param_on_a_gavel_policy_is_no_type_error(capsys):
    """`--param seed=3` on a Gavel policy runs (it takes a seed) or is a one-line error."""
    code = main(
        [
            "replay",
            *TINY,
            "--policy",
            "max_min_fairness_perf",
            "--param",
            "seed=3",
            "--param",
            "fill_idle=true",
            "--json",
        ]
    )
    if code == 2:
        assert "seed" in one_line_error(capsys)
    else:
        assert code == 0
        assert json.loads(capsys.readouterr().out)["jobs_completed"] == 60


# ---- unknown names --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("option", "typo", "meant"),
    [
        ("--policy", "srtff", "srtf"),
        ("--cluster", "philyl", "philly"),
        ("--throughput", "gavl", "gavel"),
        ("--estimator", "noisyy", "noisy"),
        ("--overheads", "polux", "pollux"),
        ("--format", "tiresais", "tiresias"),
    ],
)
def test_unknown_names_get_a_did_you_mean(option, typo, meant, capsys):
    """A typo in a name is one line that suggests the closest known name."""
    args = ["replay", "--trace", "traces/tiresias_60_job.csv", option, typo]
    assert main(args) == 2
    assert f"(did you mean {meant!r}?)" in one_line_error(capsys)


def test_estimator_option_takes_every_registered_estimator():
    """`--estimator goodput:learned` (registered, with an argument) passes the option check."""
    from dlsched.cli import _estimator

    assert _estimator("goodput:learned") == "goodput:learned"
    assert _estimator("noisy:0.3") == "noisy:0.3"


def test_unknown_policy_in_compare_gets_a_did_you_mean(capsys):
    """`compare --policies fifo,srtff` names the typo before any run."""
    assert main(["compare", *TINY, "--policies", "fifo,srtff"]) == 2
    assert "(did you mean 'srtf'?)" in one_line_error(capsys)


def test_usage_errors_are_one_line_not_a_usage_dump(capsys):
    """An unknown option is the same one-line error, exit 2, without SystemExit."""
    assert main(["replay", "--bogus"]) == 2
    assert "--bogus" in one_line_error(capsys)


# ---- dlsched policies -----------------------------------------------------------------------
def test_policies_lists_parameters_with_defaults(capsys):
    """Each policy's line is followed by its parameters and their defaults."""
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    fifo = next(i for i, line in enumerate(lines) if line.split()[0] == "fifo")
    assert "backfill=False" in lines[fifo + 1] and "placement='consolidated'" in lines[fifo + 1]
    tiresias = next(i for i, line in enumerate(lines) if line.split()[0] == "tiresias")
    assert "compat=False" in lines[tiresias + 1]


def test_policies_name_shows_one_policy_in_detail(capsys):
    """`dlsched policies tiresias`: its summary, its paper, each parameter with type and default."""
    assert main(["policies", "tiresias"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("tiresias: ") and "NSDI 2019" in out
    assert "  compat: bool = False" in out and "  placement: str = 'sensitive'" in out


def test_policies_unknown_name_gets_a_did_you_mean(capsys):
    """`dlsched policies tiresas` suggests tiresias."""
    assert main(["policies", "tiresas"]) == 2
    assert "(did you mean 'tiresias'?)" in one_line_error(capsys)


# ---- the boundary between user errors and bugs ----------------------------------------------
def test_an_os_error_is_one_line_naming_the_path(monkeypatch, capsys):
    """A file the user named that cannot be written: one line with the path and the reason."""

    def refuse(args):
        raise PermissionError(13, "Permission denied", "/results/summary.csv")

    monkeypatch.setattr(cli, "_replay", refuse)
    assert main(["replay"]) == 2
    assert one_line_error(capsys) == "dlsched: error: /results/summary.csv: Permission denied"


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    """KeyboardInterrupt: exit 130 and one line, no traceback."""

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_replay", interrupted)
    assert main(["replay"]) == 130
    assert capsys.readouterr().err == "dlsched: interrupted\n"


def test_a_bug_keeps_its_traceback(monkeypatch):
    """An unexpected exception (not a user error) is not disguised as one."""

    def bug(args):
        raise KeyError("internal")

    monkeypatch.setattr(cli, "_replay", bug)
    with pytest.raises(KeyError):
        main(["replay"])


def test_the_command_prints_one_line_and_exits_2():
    """As a process: stderr is the one line, the exit status 2."""
    done = subprocess.run(
        [sys.executable, "-m", "dlsched.cli", "replay", *TINY, "--param", "backfill=[1,2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("dlsched: error: ") and done.stderr.count("\n") == 1


# ---- dlsched report on damaged results ------------------------------------------------------
@pytest.fixture
def store(tmp_path, monkeypatch):
    """A hand-made results folder with one grid cell, `k1`; `write(summary)` stores its run.

    The store's own verification (checksums) is replaced by "summary.json exists": these tests
    are about what the report does with what the store hands it.
    """
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
    monkeypatch.setattr(
        ResultsStore, "is_finished", lambda self, key: (self.run_dir(key) / "summary.json").exists()
    )

    def write(summary):
        run = root / "runs" / "k1"
        run.mkdir(parents=True, exist_ok=True)
        config = {"config": {"workload": {"arrival_rate_scale": 1.0}}}
        (run / "config.json").write_text(json.dumps(config))
        (run / "summary.json").write_text(json.dumps(summary))

    return root, write


def test_report_summary_with_a_string_for_a_number(store, capsys):
    """A stored summary whose metric is text: one line naming the file and the metric."""
    root, write = store
    write({"avg_jct": "slow", "makespan": 10.0})
    assert main(["report", str(root)]) == 2
    line = one_line_error(capsys)
    assert str(root / "runs" / "k1" / "summary.json") in line and "'avg_jct'" in line


def test_report_summary_that_is_a_list(store, capsys):
    """A stored summary that is a list, not a mapping: one line naming the file."""
    root, write = store
    write([1, 2])
    assert main(["report", str(root)]) == 2
    line = one_line_error(capsys)
    assert "summary.json" in line and "not a list" in line


def test_report_summary_that_is_not_json(store, capsys):
    """A truncated summary.json: one line naming the file."""
    root, write = store
    write({"avg_jct": 1.0})
    (root / "runs" / "k1" / "summary.json").write_text('{"avg_jct": 1.')
    assert main(["report", str(root)]) == 2
    assert "summary.json: unreadable" in one_line_error(capsys)


def test_report_grid_with_wrong_types(store, capsys):
    """experiment.json whose points are not a list: one line naming the file and the field."""
    root, _ = store
    (root / "experiment.json").write_text(json.dumps({"name": "tiny", "points": "k1"}))
    assert main(["report", str(root)]) == 2
    assert "experiment.json" in one_line_error(capsys)


def test_report_into_a_folder_that_cannot_be_written(store, capsys):
    """A table the report cannot write (summary.csv is a folder): one line naming it."""
    root, _ = store
    (root / "summary.csv").mkdir()
    assert main(["report", str(root)]) == 2
    assert str(root / "summary.csv") in one_line_error(capsys)


# ---- dlsched run on Dask --------------------------------------------------------------------
def test_run_with_a_missing_scheduler_file_is_one_line(tmp_path, capsys):
    """--scheduler-file naming no file: one line naming it, exit 2, nothing run."""
    pytest.importorskip("distributed")
    missing = tmp_path / "scheduler.json"
    assert (
        main(
            ["run", "quickstart", "--out", str(tmp_path / "out")]
            + ["--scheduler-file", str(missing)]
        )
        == 2
    )
    assert str(missing) in one_line_error(capsys)


def test_run_with_an_address_and_a_scheduler_file_is_refused(capsys):
    """--address and --scheduler-file name two clusters: the pair is refused in one line."""
    args = ["run", "quickstart", "--address", "tcp://h:8786", "--scheduler-file", "s.json"]
    assert main(args) == 2
    assert "not allowed with argument" in one_line_error(capsys)


def test_run_with_negative_retries_is_refused(capsys):
    """--retries takes a whole number of at least 0."""
    assert main(["run", "quickstart", "--retries", "-1"]) == 2
    assert "expected an integer >= 0" in one_line_error(capsys)
