"""The policy registry and user-defined policies."""

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Literal

import pandas as pd
import pytest

import dlsched
from dlsched import policies
from dlsched.engine.placement import get_placer
from dlsched.errors import SchedulingError, TraceError
from dlsched.overheads import make_overheads
from dlsched.perf import make_estimator, make_throughput
from dlsched.registry import PluginWarning, Registry


def tiny():
    jobs = pd.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 0.0], "num_gpus": [1, 1], "duration": [10.0, 20.0]}
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}]}
    )
    return jobs, cluster


def test_get_passes_parameters_and_rejects_unknown_ones():
    """Parameters reach the constructor; a wrong one names what is accepted."""
    assert policies.get("fifo", backfill="easy").backfill == "easy"
    with pytest.raises(ValueError, match="backfill"):
        policies.get("fifo", bakfill=True)
    with pytest.raises(ValueError, match="registered"):
        policies.get("no-such-policy")


def test_user_policy_returning_a_plain_mapping():
    """A policy may return a plain dict as its whole answer; the engine diffs it."""

    class Reverse:
        name, round_s = "reverse", None

        def schedule(self, view):
            free = [g for g in range(view.cluster.num_gpus)]
            answer = {job_id: state.gpus for job_id, state in view.running.items()}
            used = {g for gpus in answer.values() for g in gpus}
            free = [g for g in free if g not in used]
            for job_id in sorted(view.pending, key=str, reverse=True):
                if free:
                    answer[job_id] = (free.pop(0),)
            return answer

    jobs, cluster = tiny()
    result = dlsched.simulate(jobs, cluster, policy=Reverse())
    assert result.jobs.set_index("job_id")["finish_time"].to_dict() == {1: 10.0, 2: 20.0}


def test_registered_user_policy_is_found_by_name():
    """`register` makes a policy available to `simulate(policy=name)`."""

    @policies.register("test-greedy-once")
    class Greedy(policies.BasePolicy):
        """Starts whatever fits, in id order."""

        name = "test-greedy-once"

        def schedule(self, view):
            alloc = view.allocation()
            for state in sorted(view.pending.values(), key=lambda s: s.spec.index):
                gpus = view.place(state)
                if gpus:
                    alloc[state] = gpus
            return alloc

    jobs, cluster = tiny()
    assert "test-greedy-once" in policies.names()
    assert (
        dlsched.simulate(jobs, cluster, policy="test-greedy-once").summary()["jobs_completed"] == 2
    )


def test_a_policy_giving_a_gpu_twice_is_stopped():
    """Handing out a held GPU is a SchedulingError, not a silent over-subscription."""

    class Greedy:
        name, round_s = "bad", None

        def schedule(self, view):
            return {job_id: (0,) for job_id in view.pending}

    jobs, cluster = tiny()
    with pytest.raises(SchedulingError, match="already held"):
        dlsched.simulate(jobs, cluster, policy=Greedy())


def test_a_policy_that_never_schedules_ends_with_unfinished_jobs():
    """A policy that starts nothing does not hang: jobs are reported unfinished."""

    class Idle:
        name, round_s = "idle", 60.0

        def schedule(self, view):
            return None

    jobs, cluster = tiny()
    with pytest.warns(RuntimeWarning, match="never finished"):
        result = dlsched.simulate(jobs, cluster, policy=Idle())
    assert list(result.jobs["status"]) == ["unfinished", "unfinished"]
    assert result.summary()["jobs_unfinished"] == 2


# ---- the registry mechanism (dlsched.registry) ----------------------------------------------


def _plugin_dist(root, group, entries, modules=None):
    """A fake installed distribution under `root`: entry points `entries` in `group`."""
    info = root / "fakeplugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplugin\nVersion: 0.1\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")
    for module, source in (modules or {}).items():
        (root / f"{module}.py").write_text(source)
    return root


def test_unknown_name_suggests_the_closest_and_lists_the_names():
    """An unknown name is a ValueError with a did-you-mean and every registered name."""
    colours = Registry("colour")
    colours.add("red", 1)
    colours.add("green", 2)
    with pytest.raises(ValueError, match=r"unknown colour 'gren' \(did you mean 'green'\?\); "):
        colours.get("gren")
    with pytest.raises(KeyError):  # a registry also indexes like a mapping
        colours["blue"]
    assert colours.names() == ["green", "red"] and "red" in colours and "blue" not in colours


def test_registering_a_taken_name_in_code_names_both_objects():
    """A second object under a taken name is refused; the message names both."""
    shapes = Registry("shape")

    @shapes.register("square")
    def square():
        pass

    def other_square():
        pass

    with pytest.raises(
        ValueError, match=r"'square' is already registered to .*square.*other_square"
    ):
        shapes.add("square", other_square)
    assert shapes.get("square") is square
    assert shapes.add("square", square) is square  # the same object again is harmless


def test_builtin_modules_load_lazily_once():
    """The loader runs at the first lookup, not at construction, and only once."""
    calls = []
    lazy = Registry("thing", loader=lambda: calls.append(lazy.add("late", 1)))
    assert calls == []
    assert lazy.get("late") == 1 and lazy.names() == ["late"]
    assert len(calls) == 1


def test_a_loader_that_fails_is_retried_at_the_next_lookup():
    """A built-in module that fails to import fails the lookup loudly, and again the next time."""
    calls = []

    def loader():
        calls.append(1)
        raise ImportError("built-in module broken")

    broken = Registry("thing", loader=loader)
    for _ in range(2):
        with pytest.raises(ImportError, match="built-in module broken"):
            broken.names()
    assert len(calls) == 2


def test_a_broken_plugin_is_skipped_with_a_warning_and_the_rest_works(tmp_path, monkeypatch):
    """A plugin whose module is missing, or raises on import, warns by name; others load."""
    root = _plugin_dist(
        tmp_path,
        "dlsched.test_group",
        {
            "missing": "no_such_module_for_dlsched_test:Thing",
            "raising": "dlsched_test_raising:Thing",
            "good": "dlsched_test_good:Thing",
        },
        {
            "dlsched_test_raising": "raise RuntimeError('boom at import')\n",
            "dlsched_test_good": "Thing = 'good thing'\n",
        },
    )
    monkeypatch.syspath_prepend(str(root))
    things = Registry("thing", entry_point_group="dlsched.test_group")
    things.add("builtin", "built in")
    with pytest.warns(PluginWarning) as caught:
        assert things.get("good") == "good thing"
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert "'missing'" in messages[0] and "no_such_module_for_dlsched_test" in messages[0]
    assert "'raising'" in messages[1] and "boom at import" in messages[1]
    assert things.names() == ["builtin", "good"]


def test_a_plugin_cannot_take_a_registered_name(tmp_path, monkeypatch):
    """A plugin under a taken name is skipped with a warning naming it and the owner."""
    root = _plugin_dist(
        tmp_path,
        "dlsched.test_group",
        {"builtin": "dlsched_test_clash:Thing"},
        {"dlsched_test_clash": "Thing = 'impostor'\n"},
    )
    monkeypatch.syspath_prepend(str(root))
    things = Registry("thing", entry_point_group="dlsched.test_group")

    def builtin():
        pass

    things.add("builtin", builtin)
    with pytest.warns(
        PluginWarning, match=r"'builtin' \(dlsched_test_clash:Thing.*already .*builtin"
    ):
        assert things.get("builtin") is builtin


def _run_with_plugins(root, code):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


def test_a_broken_policy_plugin_does_not_break_the_builtin_policies(tmp_path):
    """With a `dlsched.policies` entry point to a missing module, srtf still runs; one warning."""
    root = _plugin_dist(tmp_path, "dlsched.policies", {"ghost": "no_such_module_for_dlsched:P"})
    code = (
        "import warnings, dlsched\n"
        "from dlsched import policies\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    assert 'srtf' in policies.names() and 'ghost' not in policies.names()\n"
        "    r = dlsched.simulate(dlsched.bundled_trace('tiresias_60_job.csv'), 'tiresias-60',"
        " policy='srtf')\n"
        "assert r.summary()['jobs_completed'] == 60\n"
        "texts = [str(w.message) for w in caught if 'plugin' in str(w.message)]\n"
        "assert len(texts) == 1 and 'ghost' in texts[0], texts\n"
    )
    result = _run_with_plugins(root, code)
    assert result.returncode == 0, result.stderr


def test_a_policy_plugin_cannot_shadow_a_builtin_policy(tmp_path):
    """A `dlsched.policies` entry point named 'fifo' is skipped, with a warning naming both."""
    root = _plugin_dist(
        tmp_path,
        "dlsched.policies",
        {"fifo": "dlsched_test_fifo:Fifo"},
        {"dlsched_test_fifo": "class Fifo:\n    pass\n"},
    )
    code = (
        "import warnings\n"
        "from dlsched import policies\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    assert policies.factory('fifo').__module__ == 'dlsched.policies.fifo'\n"
        "texts = [str(w.message) for w in caught]\n"
        "assert any('dlsched_test_fifo:Fifo' in t and 'dlsched.policies.fifo' in t "
        "for t in texts), texts\n"
    )
    result = _run_with_plugins(root, code)
    assert result.returncode == 0, result.stderr


# ---- policy parameters ----------------------------------------------------------------------


def test_a_policy_parameter_of_the_wrong_type_is_refused():
    """`compat="maybe"` for a bool parameter is a ValueError saying what to give."""
    with pytest.raises(
        ValueError,
        match=r"^policy 'tiresias': parameter 'compat' must be true or false, got 'maybe'$",
    ):
        policies.get("tiresias", compat="maybe")


def test_an_unknown_policy_parameter_gets_a_did_you_mean():
    """A misspelt parameter names the closest one and every accepted one."""
    with pytest.raises(ValueError, match=r"'bakfill' \(did you mean 'backfill'\?\); it accepts"):
        policies.get("fifo", bakfill=True)


def test_an_unknown_policy_name_gets_a_did_you_mean():
    """A misspelt policy name names the closest registered one."""
    with pytest.raises(ValueError, match=r"unknown policy 'srft' \(did you mean 'srtf'\?\)"):
        policies.get("srft")


def test_parameters_follow_signature_decorators_and_drop_kwargs():
    """`parameters` lists a Gavel policy's mechanism options, and no `**kwargs`."""
    gavel = policies.parameters("max_min_fairness")
    assert "round_s" in gavel and gavel["round_s"].default == 360.0
    assert all(p.kind is not p.VAR_KEYWORD for p in gavel.values())
    assert list(policies.parameters("per-vc")) == ["inner"]


@policies.register("test-typed-parameters")
class _Typed(policies.BasePolicy):
    """A policy with one parameter of each simple kind."""

    name = "test-typed-parameters"

    def __init__(
        self,
        mode: Literal["a", "b"] = "a",
        limit: "int | None" = None,
        rate: float = 1.0,
        spread=False,
        table: Mapping[str, float] | None = None,
    ) -> None:
        super().__init__()
        self.mode, self.limit, self.rate, self.spread = mode, limit, rate, spread

    def schedule(self, view):
        return view.allocation()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"mode": "c"}, r"'mode' must be one of 'a', 'b', got 'c'"),
        ({"limit": 2.5}, r"'limit' must be an integer or None, got 2.5"),
        ({"limit": True}, r"'limit' must be an integer or None, got True"),
        ({"rate": "fast"}, r"'rate' must be a number, got 'fast'"),
        ({"spread": "yes"}, r"'spread' must be true or false, got 'yes'"),
    ],
)
def test_parameter_types_come_from_annotations_or_defaults(params, message):
    """Literal, X | None, float and (unannotated) a bool default are each checked."""
    with pytest.raises(ValueError, match=f"^policy 'test-typed-parameters': parameter {message}$"):
        policies.get("test-typed-parameters", **params)


def test_well_typed_parameters_pass_and_complex_ones_are_not_checked():
    """An int for a float, None for an optional, anything for a Mapping: all accepted."""
    policy = policies.get(
        "test-typed-parameters", mode="b", limit=None, rate=2, spread=True, table="not checked"
    )
    assert (policy.mode, policy.limit, policy.rate, policy.spread) == ("b", None, 2, True)


# ---- the other families ---------------------------------------------------------------------


def test_every_family_suggests_the_closest_name(tmp_path):
    """Throughput models, estimators, presets, placements and trace formats say did-you-mean."""
    with pytest.raises(ValueError, match=r"'gavl' \(did you mean 'gavel'\?\)"):
        make_throughput("gavl")
    with pytest.raises(ValueError, match=r"'noisey' \(did you mean 'noisy'\?\)"):
        make_estimator("noisey")
    with pytest.raises(ValueError, match=r"'polux' \(did you mean 'pollux'\?\)"):
        make_overheads("polux")
    with pytest.raises(ValueError, match=r"'best-fit' \(did you mean 'best_fit'\?\)"):
        get_placer("best-fit")
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\n1,0,1,10\n")
    with pytest.raises(TraceError, match=r"'helio' \(did you mean 'helios'\?\)"):
        dlsched.load_trace(trace, format="helio")
