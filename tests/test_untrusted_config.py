"""Experiment files and command lines are data: no code runs from them unless the user opts
in, a run of user code is recomputed when that code changes, every config mistake is caught
by ``--dry-run``, and no error or report is broken or filled by what a named file holds."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest
import yaml
from experiment_helpers import write_experiment

from dlsched import report
from dlsched.cli import main
from dlsched.errors import ConfigError
from dlsched.experiments import load_experiment, run_experiment, simulate_config
from dlsched.experiments.runner import code_reruns

_MODULES = itertools.count()

USER_POLICY = """
from pathlib import Path

from dlsched.policies.fifo import Fifo


class MyFifo(Fifo):
    '''FIFO of the user's own, which leaves a mark when it is constructed.'''

    def __init__(self, marker: str = "", alpha: float = 1.0) -> None:
        super().__init__()
        if marker:
            Path(marker).touch()
        self.alpha = alpha


class NeedsAlpha(Fifo):
    def __init__(self, alpha: float) -> None:
        super().__init__()
        self.alpha = alpha


class NotAPolicy:
    def __init__(self, command: str = "") -> None:
        self.command = command


from dlsched.perf.base import DurationModel
from dlsched.perf.estimator import OracleEstimator


class MyModel(DurationModel):
    name = "mine"


class MyEstimator(OracleEstimator):
    name = "mine"
"""


def _user_module(folder: Path, monkeypatch: pytest.MonkeyPatch, source: str = USER_POLICY) -> str:
    """Write a policy module of the user's own into `folder`, importable; return its name."""
    name = f"user_policies_{next(_MODULES)}_{folder.name.replace('-', '_')}"
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(folder))
    return name


def _os_system(tmp_path: Path, **fields) -> tuple[Path, Path]:
    marker = tmp_path / "x"
    path = write_experiment(
        tmp_path,
        seeds=1,
        sweep=None,
        policies=[{"name": "os:system", "params": {"command": f"touch {marker}"}}],
        **fields,
    )
    return path, marker


# ---- 1. a config file is data -----------------------------------------------------------
def test_os_system_runs_nothing_without_the_opt_in(tmp_path, capsys):
    """An import path is refused before anything is imported, with or without --dry-run."""
    path, marker = _os_system(tmp_path)
    with pytest.raises(ConfigError, match=r"policies\[0\].*import path.*allow_imports: true"):
        load_experiment(path)
    assert main(["run", str(path), "--dry-run"]) == 2
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--executor", "local"]) == 2
    assert "allow_imports: true" in capsys.readouterr().err
    assert not marker.exists()


def test_os_system_runs_nothing_with_the_opt_in(tmp_path, capsys):
    """With the opt-in (flag or key), ``os:system`` is refused: it is not a policy class."""
    path, marker = _os_system(tmp_path)
    with pytest.raises(ConfigError, match="not a policy class"):
        load_experiment(path, allow_imports=True)
    assert main(["run", str(path), "--dry-run", "--allow-import"]) == 2
    out = str(tmp_path / "out")
    assert main(["run", str(path), "--allow-import", "--out", out, "--executor", "local"]) == 2
    opted_in, _ = _os_system(tmp_path / "in-file", allow_imports=True)
    assert main(["run", str(opted_in), "--dry-run"]) == 2
    assert main(["run", str(opted_in), "--out", out, "--executor", "local"]) == 2
    assert capsys.readouterr().err.count("not a policy class") == 4
    assert not marker.exists() and not (tmp_path / "in-file" / "x").exists()


def test_os_system_on_replay_and_compare_runs_nothing(tmp_path, capsys):
    """``--policy`` and ``--policies`` take import paths only with --allow-import, and only
    policy classes then."""
    marker = tmp_path / "x"
    given = ["--param", f"command=touch {marker}"]
    assert main(["replay", "--policy", "os:system", *given]) == 2
    assert "--allow-import" in capsys.readouterr().err
    assert main(["replay", "--policy", "os:system", *given, "--allow-import"]) == 2
    assert "not a policy class" in capsys.readouterr().err
    spec = f"fifo,os:system:command=touch {marker}"
    assert main(["compare", "--policies", spec]) == 2
    assert main(["compare", "--policies", spec, "--allow-import"]) == 2
    assert not marker.exists()


def test_a_class_without_schedule_is_refused(tmp_path, monkeypatch):
    """With the opt-in, the import path must name a class with a schedule method."""
    module = _user_module(tmp_path, monkeypatch)
    path = write_experiment(tmp_path, policies=[f"{module}:NotAPolicy"], allow_imports=True)
    with pytest.raises(ConfigError, match="no schedule"):
        load_experiment(path)


def test_a_module_that_fails_to_import_is_one_clear_error(tmp_path, monkeypatch):
    """An error on importing the user's module is a ConfigError naming the policy."""
    module = _user_module(tmp_path, monkeypatch, "raise RuntimeError('broken module')\n")
    path = write_experiment(tmp_path, policies=[f"{module}:Anything"], allow_imports=True)
    with pytest.raises(ConfigError, match="cannot import policy.*broken module"):
        load_experiment(path)


def test_an_import_path_policy_is_not_constructed_by_validation(tmp_path, monkeypatch):
    """Validation and --dry-run check the parameters against the signature, and make
    nothing; the run itself constructs the policy."""
    module = _user_module(tmp_path, monkeypatch)
    marker = tmp_path / "constructed"
    policy = {"name": f"{module}:MyFifo", "params": {"marker": str(marker)}}
    path = write_experiment(tmp_path, seeds=1, sweep=None, policies=[policy], allow_imports=True)
    exp = load_experiment(path)
    assert main(["run", str(path), "--dry-run"]) == 0
    assert not marker.exists()
    run_experiment(exp, tmp_path / "out", executor="local")
    assert marker.exists()


def test_an_import_path_policy_parameters_are_checked_against_its_signature(tmp_path, monkeypatch):
    """An unknown parameter, a wrong type and a missing required one are errors."""
    module = _user_module(tmp_path, monkeypatch)
    cases = [
        ({"name": f"{module}:MyFifo", "params": {"alpah": 2}}, "unknown parameter 'alpah'"),
        ({"name": f"{module}:MyFifo", "params": {"alpha": "big"}}, "'alpha' must be a number"),
        ({"name": f"{module}:NeedsAlpha"}, "missing a required argument: 'alpha'"),
    ]
    for policy, message in cases:
        path = write_experiment(tmp_path, policies=[policy], allow_imports=True)
        with pytest.raises(ConfigError, match=message):
            load_experiment(path)


def test_a_name_with_a_colon_that_is_no_import_path_is_refused_as_such(tmp_path):
    """``fifo:backfill=easy`` (the command line's spelling) is not mistaken for code."""
    path = write_experiment(tmp_path, policies=["fifo:backfill=easy"], allow_imports=True)
    with pytest.raises(ConfigError, match="neither a registered name nor an import path"):
        load_experiment(path)


def test_allow_imports_must_be_true_or_false(tmp_path):
    """The opt-in is a boolean key, not any truthy value."""
    path = write_experiment(tmp_path, allow_imports="yes")
    with pytest.raises(ConfigError, match="'allow_imports': must be true or false"):
        load_experiment(path)


def test_replay_and_compare_run_an_import_path_policy_with_the_opt_in(tmp_path, monkeypatch):
    """``--allow-import`` makes a user's class usable from the command line, parameters too."""
    module = _user_module(tmp_path, monkeypatch)
    marker = tmp_path / "made"
    trace = write_experiment(tmp_path).parent / "tiny.csv"
    common = ["--trace", str(trace), "--cluster", "tiresias-60", "--json"]
    replay = ["replay", "--policy", f"{module}:MyFifo", "--param", f"marker={marker}"]
    assert main([*replay, *common]) == 2 and not marker.exists()
    assert main([*replay, *common, "--allow-import"]) == 0 and marker.exists()
    spec = f"fifo,{module}:MyFifo:alpha=2"
    assert main(["compare", "--policies", spec, *common, "--allow-import"]) == 0


@pytest.mark.parametrize("key", ["throughput", "estimator"])
def test_throughput_models_and_estimators_by_import_path_need_the_opt_in(
    tmp_path, monkeypatch, key
):
    """A throughput model or estimator of the user's own: refused without the opt-in,
    refused if not such a class (``os:system``), run and keyed by its source with it."""
    module = _user_module(tmp_path, monkeypatch)
    name = f"{module}:{'MyModel' if key == 'throughput' else 'MyEstimator'}"
    path = write_experiment(tmp_path, seeds=1, sweep=None, **{key: name})
    with pytest.raises(ConfigError, match=rf"'{key}'.*import path.*allow_imports: true"):
        load_experiment(path)
    kind = "throughput model" if key == "throughput" else "estimator"
    refused = write_experiment(tmp_path, "refused", allow_imports=True, **{key: "os:system"})
    with pytest.raises(ConfigError, match=f"not an? {kind} class"):
        load_experiment(refused)
    wrong = write_experiment(tmp_path, "wrong", allow_imports=True, **{key: f"{module}:NotAPolicy"})
    with pytest.raises(ConfigError, match=f"'{key}'"):
        load_experiment(wrong)
    exp = load_experiment(path, allow_imports=True)
    assert all(module in run.config["code"] for run in exp.runs.values())
    outcome = run_experiment(exp, tmp_path / "out", executor="local")
    assert outcome.ok and len(outcome.finished) == 2


def test_estimator_arguments_are_not_import_paths(tmp_path):
    """``noisy:0.5`` and ``learned:scaling`` stay registered estimators with an argument."""
    for estimator in ("noisy:0.5", "learned:scaling"):
        exp = load_experiment(write_experiment(tmp_path, estimator=estimator))
        assert all("code" not in run.config for run in exp.runs.values())


# ---- 2. run keys cover user code ----------------------------------------------------------
def test_the_run_key_covers_the_source_of_an_import_path_policy(tmp_path, monkeypatch):
    """Editing the user's module changes the run's key; leaving it alone keeps it."""
    module = _user_module(tmp_path, monkeypatch)
    path = write_experiment(
        tmp_path, seeds=1, sweep=None, policies=[f"{module}:MyFifo"], allow_imports=True
    )
    before = set(load_experiment(path).runs)
    assert set(load_experiment(path).runs) == before
    source = tmp_path / f"{module}.py"
    source.write_text(source.read_text() + "\n# tuned\n")
    assert set(load_experiment(path).runs).isdisjoint(before)


def test_registered_policies_keep_their_run_keys(tmp_path):
    """Only an import path adds ``code`` to a run config: other keys are as they were."""
    exp = load_experiment(write_experiment(tmp_path))
    assert all("code" not in run.config for run in exp.runs.values())


def test_dlsched_run_reruns_changed_user_code_and_says_why(tmp_path, monkeypatch, capsys):
    """Store a run, edit the policy's module: the cell runs again, with one line saying why;
    unchanged, the stored run is reused."""
    module = _user_module(tmp_path, monkeypatch)
    path = write_experiment(
        tmp_path, seeds=1, sweep=None, policies=["fifo", f"{module}:MyFifo"], allow_imports=True
    )
    run = ["run", str(path), "--out", str(tmp_path / "out"), "--executor", "local"]
    assert main(run) == 0
    assert "2 ran now" in capsys.readouterr().out
    assert main(run) == 0
    captured = capsys.readouterr()
    assert "0 ran now, 2 already stored" in captured.out and "code" not in captured.err
    source = tmp_path / f"{module}.py"
    source.write_text(source.read_text() + "\n# tuned\n")
    assert main(run) == 0
    captured = capsys.readouterr()
    assert "1 ran now, 1 already stored" in captured.out
    lines = [line for line in captured.err.splitlines() if "changed" in line]
    assert len(lines) == 1
    assert f"the code of policy '{module}:MyFifo' changed" in lines[0] and str(source) in lines[0]


def test_a_run_refuses_user_code_changed_after_expansion(tmp_path, monkeypatch):
    """The worker checks the module is still the one the run's key was made from."""
    module = _user_module(tmp_path, monkeypatch)
    path = write_experiment(
        tmp_path, seeds=1, sweep=None, policies=[f"{module}:MyFifo"], allow_imports=True
    )
    (run,) = load_experiment(path).runs.values()
    source = tmp_path / f"{module}.py"
    source.write_text(source.read_text() + "\n# edited meanwhile\n")
    with pytest.raises(Exception, match="changed after the experiment was expanded"):
        simulate_config(run.config)


def test_code_reruns_finds_nothing_without_a_previous_grid(tmp_path, monkeypatch):
    """A fresh store has no grid to compare with: no message."""
    from dlsched.experiments import ResultsStore

    module = _user_module(tmp_path, monkeypatch)
    path = write_experiment(tmp_path, policies=[f"{module}:MyFifo"], allow_imports=True)
    assert code_reruns(load_experiment(path), ResultsStore(tmp_path / "out")) == {}


# ---- 3. late errors and leaks -----------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "key", "message"),
    [
        (
            {"workload": {"trace": "tiny.csv", "transforms": [{"sample": 100}]}},
            "workload.transforms[0]",
            "samples 100 jobs, but the trace has 6",
        ),
        (
            {"workload": {"trace": "tiny.csv", "transforms": [{"head": 4}, {"sample": 5}]}},
            "workload.transforms[1]",
            "the transforms before it leave 4",
        ),
        (
            {
                "workload": {
                    "trace": "tiny.csv",
                    "transforms": [{"deadlines": {"low": 3, "high": 1}}],
                }
            },
            "workload.transforms[0].low",
            "more than high",
        ),
        (
            {
                "workload": {
                    "trace": "tiny.csv",
                    "transforms": [{"elastic": {"min_gpus": 1, "max_factor": 0.5}}],
                }
            },
            "workload.transforms[0].max_factor",
            ">= 1",
        ),
        (
            {"workload": {"trace": "tiny.csv", "format": "gavel"}},
            "workload.format",
            "does not load as format 'gavel'",
        ),
        ({"throughput": "gavel"}, "throughput", "needs a model name per job"),
        (
            {"cluster": {"nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}},
            "cluster",
            "a run would stop before it starts",
        ),
    ],
)
def test_dry_run_catches_what_a_run_would_meet_at_its_start(tmp_path, capsys, fields, key, message):
    """Each mistake that used to surface only when runs started is a --dry-run error that
    names the key."""
    path = write_experiment(tmp_path, seeds=1, sweep=None, **fields)
    assert main(["run", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert f"key '{key}'" in err and message in err


def test_a_swept_mistake_names_its_sweep_value(tmp_path):
    """A transform list that fails from a sweep names ``sweep.workload.transforms[i]``."""
    path = write_experiment(
        tmp_path,
        sweep={"workload.transforms": [[{"head": 3}], [{"sample": 50}]]},
    )
    with pytest.raises(ConfigError, match=r"sweep\.workload\.transforms\[1\]\[0\]"):
        load_experiment(path)


def test_validation_loads_each_trace_once(tmp_path, monkeypatch):
    """Validation loads the trace as the runs will, once for the whole grid: per-replicate
    seeds and sweep values that leave the workload alone share one probe."""
    import dlsched.traces

    loads = []
    real = dlsched.traces.load_trace
    monkeypatch.setattr(
        dlsched.traces, "load_trace", lambda *a, **k: loads.append(a) or real(*a, **k)
    )
    path = write_experiment(
        tmp_path,
        seeds=50,
        workload={"trace": "tiny.csv", "transforms": [{"sample": 3}], "resample_per_seed": True},
    )
    exp = load_experiment(path)
    assert len(exp.runs) == 200 and len(loads) == 1


def test_an_error_never_quotes_the_file_it_names(tmp_path):
    """``trace: <any file>``: the error names the file and what is wrong, not its lines."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET first line\nanother SECRET line\n")
    path = write_experiment(tmp_path, workload={"trace": str(secret)})
    with pytest.raises(ConfigError) as auto:
        load_experiment(path)
    assert str(secret) in str(auto.value) and "SECRET" not in str(auto.value).replace(
        str(secret), ""
    )
    for fmt in ("canonical", "tiresias", "gavel", "philly", "helios"):
        path = write_experiment(tmp_path, workload={"trace": str(secret), "format": fmt})
        with pytest.raises(ConfigError) as given:
            load_experiment(path)
        assert "SECRET" not in str(given.value).replace(str(secret), ""), fmt


def test_a_cluster_file_error_names_the_key_not_its_value(tmp_path):
    """A cluster file the experiment names: the error says which key is wrong, not what
    the file holds there."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("nodes: [{gpu_type: V100, count: s3cr3t, gpus_per_node: 1}]\n")
    path = write_experiment(tmp_path, cluster="cluster.yaml")
    with pytest.raises(ConfigError, match=r"nodes\[0\]\.count.*positive integer") as error:
        load_experiment(path)
    assert "s3cr3t" not in str(error.value)


def test_a_trace_row_error_names_the_row_not_its_value(tmp_path):
    """A bad value in a trace's row is named by file, row and field; the value is not shown."""
    trace = tmp_path / "bad.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\n1,0,1,10\n2,SECRET,1,10\n")
    path = write_experiment(tmp_path, workload={"trace": "bad.csv", "format": "canonical"})
    with pytest.raises(ConfigError, match=r"row 3, field 'submit_time'") as error:
        load_experiment(path)
    assert "SECRET" not in str(error.value)


@pytest.mark.parametrize("label", ["two\nlines", "tab\there", "bell\x07", "  "])
def test_a_label_must_be_one_line_of_text(tmp_path, label):
    """Newlines and control characters in a policy label are refused at validation."""
    path = write_experiment(tmp_path, policies=[{"name": "fifo", "label": label}])
    with pytest.raises(ConfigError, match=r"policies\[0\]\.label"):
        load_experiment(path)


def test_a_default_label_with_a_newline_asks_for_a_label(tmp_path, monkeypatch):
    """A parameter value with a newline makes the default label two lines: refused."""
    module = _user_module(tmp_path, monkeypatch)
    policy = {"name": f"{module}:MyFifo", "params": {"marker": "a\nb"}}
    path = write_experiment(tmp_path, policies=[policy], allow_imports=True)
    with pytest.raises(ConfigError, match=r"policies\[0\]': the label .* give a 'label'"):
        load_experiment(path)


def _table_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


def _columns(row: str) -> int:
    """The cells of a Markdown table row: its unescaped pipes, less one."""
    return row.replace("\\|", "").count("|") - 1


def test_a_pipe_in_a_label_keeps_summary_md_a_table(tmp_path):
    """A ``|`` in a policy label or a sweep value is escaped in summary.md's tables."""
    path = write_experiment(
        tmp_path,
        seeds=1,
        policies=[{"name": "fifo", "label": "fifo|easy"}, "srtf"],
        sweep={"workload.arrival_rate_scale": [1.0, 2.0]},
    )
    out = tmp_path / "out"
    run_experiment(path, out, executor="local")
    data = report.collect(out)  # summary.md's text, without drawing the plots
    rows = _table_rows(report._markdown(data, report.summary_table(data), []))
    assert len(rows) == 2 + 4
    assert len({_columns(row) for row in rows}) == 1
    assert any("fifo\\|easy" in row for row in rows)


def test_markdown_cells_are_one_line_with_pipes_escaped():
    """A stored label from before the check (newline, pipe) still makes one table cell."""
    assert report._md_cell("a|b\nc\r\nd\te") == "a\\|b c d e"
    assert report._md_row(["x|y", 1.5, 3]) == "| x\\|y | 1.5 | 3 |"


def test_experiment_text_round_trips_allow_imports(tmp_path, monkeypatch):
    """``allow_imports`` is an experiment key like the others (kept in experiment.yaml)."""
    module = _user_module(tmp_path, monkeypatch)
    path = write_experiment(tmp_path, policies=[f"{module}:MyFifo"], allow_imports=True)
    exp = load_experiment(path)
    assert yaml.safe_load(exp.text)["allow_imports"] is True
    assert exp.policies[0].code and all(len(d) == 64 for d in exp.policies[0].code.values())
