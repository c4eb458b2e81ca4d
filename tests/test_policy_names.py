"""Policy names: one convention (underscores), the old names kept as aliases, placements
listed and recognised, `dlsched -V`."""

import pandas as pd
import pytest

import dlsched
from dlsched import policies
from dlsched.cli import main
from dlsched.registry import Registry

# old name -> the name each policy is listed under now
ALIASES = {
    "tiresias-gittins": "tiresias_gittins",
    "per-vc": "per_vc",
    "sjf-het": "sjf_het",
    "max_sum_throughput_normalized_by_cost_perf": "min_cost",
    "max_sum_throughput_normalized_by_cost_perf_SLOs": "min_cost_slo",
}


def test_every_listed_name_uses_underscores():
    """Built-in policies are listed under lower-case names joined by underscores."""
    builtin = [
        name
        for name in policies.names(aliases=False)
        if getattr(policies.factory(name), "__module__", "").startswith("dlsched.policies.")
    ]
    assert len(builtin) >= 30 and all(name == name.lower() and "-" not in name for name in builtin)


@pytest.mark.parametrize(("old", "new"), sorted(ALIASES.items()))
def test_an_old_name_resolves_to_the_same_entry(old, new):
    """Each old name is an alias: the same factory as its listed name, and still `in`."""
    assert policies.factory(old) is policies.factory(new)
    assert old in policies.POLICIES and old not in policies.names(aliases=False)
    assert old in policies.names() and old in policies.aliases(new)


def test_names_still_accepts_every_old_name():
    """`name in policies.names()` (as scripts check) stays true for every old name."""
    assert set(ALIASES) <= set(policies.names())


def test_min_cost_is_listed_once():
    """`min_cost` and Gavel's long name of it are one entry, listed once."""
    same = policies.factory("min_cost")
    listed = [n for n in policies.names(aliases=False) if policies.factory(n) is same]
    assert listed == ["min_cost"]


@pytest.mark.parametrize("name", ["per-vc", "per_vc", "sjf-het", "tiresias-gittins"])
def test_result_labels_of_existing_names_do_not_change(name):
    """An old name and its new spelling give results labelled as before (the class name)."""
    jobs = pd.DataFrame(
        [("a", 0.0, 1, 10.0), ("b", 1.0, 1, 5.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration"],
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )
    result = dlsched.simulate(jobs, cluster, policy=name)
    old = {"per_vc": "per-vc", "sjf_het": "sjf-het"}.get(name, name)
    assert result.meta["policy"] == old


def test_registry_alias_refuses_a_taken_name():
    """An alias may not take a name that belongs to another entry, nor point at nothing."""
    colours = Registry("colour")
    colours.add("red", "#f00")
    colours.add("blue", "#00f")
    with pytest.raises(ValueError, match="already registered"):
        colours.alias("blue", "red")
    with pytest.raises(ValueError, match="not a registered colour"):
        colours.alias("crimson", "scarlet")
    colours.alias("rouge", "red")
    colours.alias("rouge", "red")  # the same alias again: a no-op
    with pytest.raises(ValueError, match="is an alias of 'red'"):
        colours.add("rouge", "#e00")
    assert colours.get("rouge") == "#f00" and colours.names(aliases=False) == ["blue", "red"]
    assert colours.names() == ["blue", "red", "rouge"] and list(colours) == colours.names()
    assert colours.canonical("rouge") == "red" and colours.aliases("red") == ["rouge"]


def test_policies_lists_aliases_on_the_policys_line(capsys):
    """`dlsched policies`: each policy once, its aliases on its line."""
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [line.split()[0] for line in lines if line and not line.startswith(" ")]
    assert heads.count("min_cost") == 1
    assert "max_sum_throughput_normalized_by_cost_perf" not in heads
    per_vc = next(line for line in lines if line.startswith("per_vc "))
    assert "[alias: per-vc]" in per_vc


def test_policies_lists_the_placements(capsys):
    """`dlsched policies` ends with every registered placement, one line each."""
    from dlsched.engine.placement import STRATEGIES

    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    section = out.split("placements (", 1)[1].splitlines()[1:]
    listed = [line.split()[0] for line in section]
    assert set(listed) == {n for n in STRATEGIES.names() if ":" not in n}
    assert all(len(line.split()) > 1 for line in section)
    assert "fgd:shuffled" in next(line for line in section if line.startswith("fgd "))


def test_a_placement_asked_as_a_policy_says_how_to_use_it(capsys):
    """`dlsched policies fgd`: fgd is a placement, used as --param placement=fgd."""
    assert main(["policies", "fgd"]) == 2
    err = capsys.readouterr().err
    assert "'fgd': it is a placement, not a policy" in err and "--param placement=fgd" in err


def test_a_placement_given_as_replay_policy_says_how_to_use_it(capsys):
    """`dlsched replay --policy best_fit`: the same hint, before any trace is read."""
    assert main(["replay", "--policy", "best_fit"]) == 2
    assert "--param placement=best_fit" in capsys.readouterr().err


def test_a_placement_named_as_a_policy_anywhere_says_so(tmp_path):
    """`simulate(policy="spread")` and an experiment listing `best_fit` say what those are."""
    from dlsched.errors import ConfigError
    from dlsched.experiments.config import load_experiment

    jobs = pd.DataFrame({"job_id": [1], "submit_time": [0.0], "num_gpus": [1], "duration": [1.0]})
    with pytest.raises(ValueError, match="'spread': it is a placement"):
        dlsched.simulate(jobs, "tiresias-60", policy="spread")
    path = tmp_path / "exp.yaml"
    path.write_text(
        "name: e\ncluster: tiresias-60\nworkload: {trace: tiresias_60_job.csv}\n"
        "policies: [best_fit]\n"
    )
    with pytest.raises(ConfigError, match=r"policies\[0\].*params: \{placement: best_fit\}"):
        load_experiment(path)


def test_an_unknown_name_that_is_no_placement_keeps_its_did_you_mean():
    """A typo of a policy is still answered with the closest policy name."""
    with pytest.raises(ValueError, match="did you mean 'per_vc'"):
        policies.factory("per_vcc")


def test_policies_by_an_alias_names_its_entry(capsys):
    """`dlsched policies per-vc` shows per_vc and says per-vc is its alias."""
    assert main(["policies", "per-vc"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("per_vc: ") and "(per-vc is an alias of per_vc)" in out


@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_version_flag(flag, capsys):
    """`dlsched -V` prints the version as `--version` does."""
    with pytest.raises(SystemExit) as done:
        main([flag])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"dlsched {dlsched.__version__}"


def test_a_plugin_cannot_take_an_alias(tmp_path, monkeypatch):
    """A plugin named like an alias is skipped with a warning; the alias keeps its entry."""
    from test_registry import _plugin_dist

    from dlsched.registry import PluginWarning

    root = _plugin_dist(
        tmp_path,
        "dlsched.test_alias_group",
        {"old-name": "dlsched_test_alias_clash:Thing"},
        {"dlsched_test_alias_clash": "Thing = 'impostor'\n"},
    )
    monkeypatch.syspath_prepend(str(root))
    things = Registry("thing", entry_point_group="dlsched.test_alias_group")
    things.add("new_name", "the real thing")
    things.alias("old-name", "new_name")
    with pytest.warns(PluginWarning, match="'old-name'.*already registered"):
        assert things.get("old-name") == "the real thing"
