"""`dlsched.safeyaml`: every YAML dlsched reads is bounded data, and numbers are numbers."""

import json
import math
import os
import time

import pytest
import yaml

import dlsched
from dlsched import policies, safeyaml
from dlsched.cli import main
from dlsched.errors import ConfigError
from dlsched.experiments.config import load_experiment
from dlsched.policies.fifo import Fifo
from dlsched.registry import check_arguments

CLUSTER = "name: tiny\nnodes:\n  - {gpu_type: V100, count: 1, gpus_per_node: 4}\n"
TINY = ["--trace", "traces/tiresias_60_job.csv", "--cluster", "tiresias-60"]


def bomb(levels: int = 9) -> str:
    """A billion-laughs value: `levels` nested aliases of nine each (9**levels strings)."""
    lines = ["&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "[" + ", ".join(lines) + "]"


def experiment(tmp_path, policies_yaml: str, cluster_yaml: str | None = None) -> str:
    cluster = cluster_yaml or "tiresias-60"
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: e\ncluster: {cluster}\nworkload: {{trace: tiresias_60_job.csv}}\n"
        f"policies: {policies_yaml}\n"
    )
    return str(path)


def fails_fast(call, *args) -> ConfigError:
    """The ConfigError `call(*args)` raises, asserted to come within 2 s."""
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        call(*args)
    assert time.perf_counter() - start < 2.0
    return err.value


# ---- YAML bombs -------------------------------------------------------------------------------
def test_billion_laughs_in_a_cluster_description_fails_fast(tmp_path):
    """A cluster whose `description` is a billion laughs is refused in well under 2 s."""
    path = tmp_path / "c.yaml"
    path.write_text(CLUSTER + f"description: {bomb()}\n")
    message = str(fails_fast(dlsched.load_cluster, path))
    assert str(path) in message and "'description" in message and "aliases" in message


def test_billion_laughs_in_an_inline_cluster_fails_fast(tmp_path):
    """An experiment's inline cluster holding a bomb: refused fast, naming the file and key."""
    cluster = "{name: c, description: " + bomb() + ", nodes: []}"
    path = experiment(tmp_path, "[fifo]", cluster)
    message = str(fails_fast(load_experiment, path))
    assert path in message and "cluster.description" in message


def test_billion_laughs_in_policy_params_fails_fast(tmp_path):
    """A bomb in a policy's `params`: refused fast, naming the key."""
    path = experiment(tmp_path, "[{name: fifo, params: {placement: " + bomb() + "}}]")
    message = str(fails_fast(load_experiment, path))
    assert path in message and "policies[0].params.placement" in message


def test_billion_laughs_in_a_cli_param_is_one_line(capsys):
    """`--param x=<bomb>` is a usage error, not a hang."""
    start = time.perf_counter()
    assert main(["replay", *TINY, "--param", f"backfill={bomb()}"]) == 2
    assert time.perf_counter() - start < 2.0
    assert "aliases" in capsys.readouterr().err


def test_small_aliases_and_merge_keys_still_work():
    """Anchors, aliases and `<<` merges that expand little are ordinary YAML: accepted."""
    data = safeyaml.load_text("base: &b {x: 1, y: 2}\nrun: {<<: *b, y: 3}\nagain: *b\n", "f")
    assert data == {"base": {"x": 1, "y": 2}, "run": {"x": 1, "y": 3}, "again": {"x": 1, "y": 2}}


def test_a_self_referring_alias_is_refused():
    """`&a [*a]` (a value holding itself) would make every walk over it endless."""
    with pytest.raises(ConfigError, match="refers to itself"):
        safeyaml.load_text("a: &a [1, *a]\n", "f.yaml")


# ---- special files ----------------------------------------------------------------------------
def test_dev_zero_is_refused_without_reading():
    """`/dev/zero` as a cluster file: refused at once as a device, not read forever."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    message = str(fails_fast(dlsched.load_cluster, "/dev/zero"))
    assert "/dev/zero" in message and "not a regular file" in message


def test_a_fifo_is_refused_without_blocking(tmp_path):
    """A FIFO nobody writes to, as an experiment file: refused at once, never blocks."""
    fifo = tmp_path / "exp.yaml"
    os.mkfifo(fifo)
    message = str(fails_fast(load_experiment, fifo))
    assert str(fifo) in message and "FIFO" in message


def test_a_directory_is_refused(tmp_path):
    """A directory named as a cluster file is refused, naming it."""
    folder = tmp_path / "clusters.yaml"
    folder.mkdir()
    message = str(fails_fast(dlsched.load_cluster, folder))
    assert str(folder) in message and "a directory" in message


def test_a_file_over_the_cap_is_refused(tmp_path, monkeypatch):
    """A file larger than MAX_BYTES is refused by its size, naming the file."""
    monkeypatch.setattr(safeyaml, "MAX_BYTES", 1024)
    path = tmp_path / "big.yaml"
    path.write_text(CLUSTER + "description: " + "x" * 2000 + "\n")
    message = str(fails_fast(dlsched.load_cluster, path))
    assert str(path) in message and "larger than" in message


def test_the_read_itself_is_capped(monkeypatch):
    """A regular file whose size says 0 but that reads on (Linux's /proc files): at most
    MAX_BYTES + 1 bytes are read, then it is refused."""
    if not os.path.isfile("/proc/self/maps"):
        pytest.skip("no /proc here")
    monkeypatch.setattr(safeyaml, "MAX_BYTES", 100)
    message = str(fails_fast(safeyaml.read_text, "/proc/self/maps", "cluster file"))
    assert "/proc/self/maps" in message and "grew while read" in message


def test_the_cap_is_a_documented_16_mib():
    """The size cap is 16 MiB."""
    assert safeyaml.MAX_BYTES == 16 * 2**20


# ---- keys and tags ----------------------------------------------------------------------------
def test_duplicate_keys_are_refused_in_a_cluster_file(tmp_path):
    """A cluster key given twice (plain YAML would keep the last): refused, naming both lines."""
    path = tmp_path / "c.yaml"
    path.write_text(CLUSTER + "name: other\n")
    message = str(fails_fast(dlsched.load_cluster, path))
    assert str(path) in message and "'name' is given twice" in message
    assert "lines 1 and 4" in message


def test_duplicate_keys_on_one_line_are_refused():
    """`{a: 1, a: 2}`: the same key twice in a flow mapping is refused too."""
    with pytest.raises(ConfigError, match="'a' is given twice"):
        safeyaml.load_text("p: {a: 1, a: 2}\n", "f.yaml")


def test_python_tags_are_refused_in_a_cluster_file(tmp_path):
    """`!!python/object` in a cluster file is refused: a config is data, never code."""
    path = tmp_path / "c.yaml"
    path.write_text(CLUSTER + "description: !!python/object/apply:os.system ['true']\n")
    message = str(fails_fast(dlsched.load_cluster, path))
    assert str(path) in message and "not valid YAML" in message and "python/object" in message


def test_deep_nesting_is_a_config_error_not_a_recursion_error():
    """A document nested thousands deep is one ConfigError, never a RecursionError."""
    with pytest.raises(ConfigError, match="nest"):  # libyaml: "maximum nesting depth"
        safeyaml.load_text("[" * 5000 + "]" * 5000, "f.yaml")


# ---- numbers ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value"),
    [("1e8", 1e8), ("1.5e3", 1500.0), ("-1.5E3", -1500.0), (".5", 0.5), ("1e-3", 0.001)]
    + [("inf", math.inf), ("-inf", -math.inf), (".inf", math.inf), ("-.inf", -math.inf)],
)
def test_scientific_notation_and_inf_are_floats(text, value):
    """YAML 1.2 floats (YAML 1.1 reads `1e8` as a string) and bare inf are numbers."""
    assert safeyaml.load_text(f"x: {text}", "f")["x"] == value


def test_integers_booleans_and_text_keep_their_types():
    """Reading 1.2 floats changes nothing else: ints, booleans, nulls and text stay."""
    data = safeyaml.load_text("[1, 1_000, 0x10, true, null, '1e8', 1e, e5, v1.2]", "f")
    assert data == [1, 1000, 16, True, None, "1e8", "1e", "e5", "v1.2"]
    assert isinstance(data[0], int)


class StarveFifo(Fifo):
    """FIFO with a starvation threshold, as a user's policy would have (``starve_s``)."""

    name = "test_starve"

    def __init__(self, starve_s: float = 1e6, **fifo: object) -> None:
        super().__init__(**fifo)  # type: ignore[arg-type]
        self.starve_s = starve_s


@pytest.fixture
def starve_policy(monkeypatch):
    """`StarveFifo` registered as ``test_starve`` for this test only."""
    policies.names()  # load the built-ins first
    monkeypatch.setitem(policies.POLICIES._entries, "test_starve", StarveFifo)
    return "test_starve"


@pytest.mark.parametrize(("given", "value"), [("1e12", 1e12), ("1.5e3", 1500.0), ("inf", math.inf)])
def test_cli_param_in_scientific_notation_or_inf_is_a_number(
    starve_policy, given, value, monkeypatch, capsys
):
    """`--param starve_s=1e12 | 1.5e3 | inf` reaches the policy as that number."""
    built = []
    original = StarveFifo.__init__

    def record(self, *args, **kwargs):
        original(self, *args, **kwargs)
        built.append(self.starve_s)

    monkeypatch.setattr(StarveFifo, "__init__", record)
    argv = ["replay", *TINY, "--policy", starve_policy, "--param", f"starve_s={given}", "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    assert built == [value]
    assert json.loads(capsys.readouterr().out)["jobs_completed"] == 60


def test_cli_param_nan_is_refused_naming_it(starve_policy, capsys):
    """`--param starve_s=nan` is one error naming the parameter."""
    assert main(["replay", *TINY, "--policy", starve_policy, "--param", "starve_s=nan"]) == 2
    err = capsys.readouterr().err
    assert "'starve_s' is NaN" in err and "Traceback" not in err


def test_experiment_param_in_scientific_notation_is_a_number(tmp_path, starve_policy):
    """`starve_s: 1e8` in an experiment file is the number 1e8, accepted."""
    path = experiment(tmp_path, "[{name: test_starve, params: {starve_s: 1e8}}]")
    exp = load_experiment(path)
    assert exp.policies[0].params == {"starve_s": 1e8}


def test_experiment_param_nan_is_refused(tmp_path, starve_policy):
    """`starve_s: .nan` in an experiment file is refused, naming the policy entry."""
    path = experiment(tmp_path, "[{name: test_starve, params: {starve_s: .nan}}]")
    with pytest.raises(ConfigError, match=r"policies\[0\]"):
        load_experiment(path)


def test_nan_is_refused_for_any_parameter_even_in_a_list():
    """NaN is never a parameter value: refused at the top level and inside a list."""
    with pytest.raises(ValueError, match="'time_budget_s' is NaN"):
        policies.get("hydra", time_budget_s=math.nan)
    with pytest.raises(ValueError, match="'thresholds' is NaN inside"):
        policies.get("tiresias", thresholds=[3600.0, math.nan])


def test_inf_is_accepted_where_it_means_never():
    """inf where it means "never" or "no limit" is accepted (starvation knob, time budget)."""
    assert policies.get("tiresias", starvation_knob=math.inf) is not None
    assert policies.get("hydra", time_budget_s=math.inf) is not None
    check_arguments("policy 'test_starve'", StarveFifo, {"starve_s": math.inf})


def test_inf_is_refused_for_a_scheduling_period():
    """A round of inf seconds never comes: `round_s=inf` is refused, naming it."""
    with pytest.raises(ValueError, match="'round_s' must be a finite number"):
        policies.get("gavel_fifo", round_s=math.inf)
    with pytest.raises(ValueError, match="'quantum_s' must be a finite number"):
        policies.get("gandiva", quantum_s=math.inf)


def test_a_factory_can_declare_its_own_finite_parameters():
    """`finite_parameters` on a factory extends the periods for which inf is refused."""

    class Patient(StarveFifo):
        finite_parameters = ("starve_s",)

    with pytest.raises(ValueError, match="'starve_s' must be a finite number"):
        check_arguments("policy 'patient'", Patient, {"starve_s": math.inf})


def test_experiment_param_inf_is_a_number_and_keys_the_run(tmp_path, starve_policy):
    """`starve_s: inf` in an experiment reaches the policy as inf, with its own run key."""
    never = load_experiment(experiment(tmp_path, "[{name: test_starve, params: {starve_s: inf}}]"))
    (run,) = never.runs.values()
    assert run.config["policy"]["params"]["starve_s"] == math.inf
    other = tmp_path / "other"
    other.mkdir()
    big = load_experiment(experiment(other, "[{name: test_starve, params: {starve_s: 1e30}}]"))
    assert set(never.runs) != set(big.runs)


# ---- the pure-Python parser (where libyaml is missing) gives the same answers -----------------
@pytest.fixture(params=["libyaml", "pure-python"])
def loader(request):
    """Each loader dlsched may run on."""
    return safeyaml.Loader if request.param == "libyaml" else safeyaml.PurePythonLoader


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (f"description: {bomb()}", "expands through aliases"),
        ("a: &a [1, *a]", "refers to itself"),
        ("a: 1\nb: 2\na: 3", "'a' is given twice"),
        ("[" * 2000 + "]" * 2000, "nest"),
    ],
)
def test_each_loader_refuses_the_same_documents(loader, text, says):
    """Bombs, self-reference, duplicate keys and deep nesting: refused by either parser (a
    bomb within 2 s; the pure-Python scanner takes seconds over 2,000 open brackets)."""
    start = time.perf_counter()
    with pytest.raises(yaml.YAMLError) as err:
        safeyaml.loads(text, loader)
    assert says == "nest" or time.perf_counter() - start < 2.0
    assert says in safeyaml.problem(err.value)


def test_each_loader_refuses_python_tags(loader):
    """`!!python/object` is no value of the safe schema, on either parser."""
    with pytest.raises(yaml.constructor.ConstructorError):
        safeyaml.loads("x: !!python/object/apply:os.system ['true']", loader)


def test_each_loader_reads_the_same_numbers(loader):
    """1e8, 1.5e3, inf and the YAML 1.1 forms read the same on either parser."""
    data = safeyaml.loads("[1e8, 1.5e3, inf, -.inf, 1, 1_000, 0x10, 1.5, '1e8']", loader)
    assert data == [1e8, 1500.0, math.inf, -math.inf, 1, 1000, 16, 1.5, "1e8"]


# ---- the command line -------------------------------------------------------------------------
def test_cli_cluster_dev_zero_is_one_line(capsys):
    """`dlsched replay --cluster /dev/zero`: one error line naming it, at once."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero here")
    start = time.perf_counter()
    assert main(["replay", "--trace", "traces/tiresias_60_job.csv", "--cluster", "/dev/zero"]) == 2
    assert time.perf_counter() - start < 5.0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/dev/zero: the cluster file is a device" in err


def test_cli_run_of_a_fifo_is_one_line(tmp_path, capsys):
    """`dlsched run FIFO --dry-run`: one error line naming the FIFO, never blocked."""
    fifo = tmp_path / "exp.yaml"
    os.mkfifo(fifo)
    assert main(["run", str(fifo), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{fifo}: the experiment file is a FIFO" in err
