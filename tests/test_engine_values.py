"""Values a check must refuse at the engine and the API (issue 30): an edited `Workload`,
non-finite or ill-typed numbers from policies, truths, estimators, flags and seeds, unknown
VCs, gangs across GPU types, `round_s` 0 and an empty workload."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.cli import main
from dlsched.errors import ConfigError, SchedulingError, TraceError
from dlsched.overheads import OverheadModel
from dlsched.perf import make_estimator
from dlsched.perf.estimator import NoisyEstimator, OracleEstimator
from dlsched.policies.base import BasePolicy
from dlsched.traces import validate_jobs

TWO_TYPES = dlsched.Cluster.from_dict(
    {
        "name": "two-types",
        "nodes": [
            {"gpu_type": "V100", "gpus_per_node": 4},
            {"gpu_type": "K80", "gpus_per_node": 2},
        ],
    }
)
ONE_NODE_FORM = {"name": "one", "nodes": [{"gpu_type": "V100", "gpus_per_node": 4}]}
ONE_NODE = dlsched.Cluster.from_dict(ONE_NODE_FORM)


def table(*rows: tuple, **extra: list) -> pd.DataFrame:
    """rows: (job_id, submit_time, num_gpus, duration); extra: column name → values."""
    jobs = pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration"])
    for name, values in extra.items():
        jobs[name] = values
    return jobs


def workload(*rows: tuple, **extra: list) -> dlsched.Workload:
    return validate_jobs(table(*rows, **extra), "jobs.csv", lenient=False, fmt="canonical")


def three_jobs() -> dlsched.Workload:
    return workload(("a", 0.0, 1, 10.0), ("b", 5.0, 1, 10.0), ("c", 6.0, 1, 10.0))


# ---- 1. a Workload edited after loading ----------------------------------------------------
def test_a_loaded_workload_runs_without_being_validated_again(monkeypatch):
    """A workload as validated is not validated again by `simulate` (its fingerprint holds)."""
    work = three_jobs()
    calls = []
    import dlsched.api as api

    monkeypatch.setattr(api, "validate_jobs", lambda *a, **k: calls.append(a) or None)
    assert work.is_checked()
    dlsched.simulate(work, ONE_NODE)
    assert calls == []


def test_a_nan_submit_time_edited_in_is_an_error_naming_job_row_and_field():
    """NaN submit_time set after loading (once: an endless loop) names the job, row, field."""
    work = three_jobs()
    work.jobs.loc[1, "submit_time"] = np.nan
    with pytest.raises(TraceError, match=r"jobs.csv, row 3, field 'submit_time': job 'b'"):
        dlsched.simulate(work, ONE_NODE)


def test_a_negative_gpu_count_edited_in_is_an_error():
    """num_gpus -1 set after loading (once: held 3 GPUs) is refused, naming the field."""
    work = three_jobs()
    work.jobs.loc[2, "num_gpus"] = -1
    expected = r"row 4, field 'num_gpus': job 'c': num_gpus must be >= 0"
    with pytest.raises(TraceError, match=expected):
        dlsched.simulate(work, ONE_NODE)


def test_a_duplicate_id_edited_in_is_an_error_not_a_key_error():
    """Two jobs given one id after loading (once: a raw KeyError) is a TraceError."""
    work = three_jobs()
    work.jobs.loc[2, "job_id"] = "a"
    with pytest.raises(TraceError, match=r"field 'job_id'.*duplicate job_id"):
        dlsched.simulate(work, ONE_NODE)


def test_a_valid_edit_runs_as_edited():
    """An edit that validation accepts runs: the longer duration gives the longer JCT."""
    work = three_jobs()
    work.jobs.loc[0, "duration"] = 30.0
    result = dlsched.simulate(work, ONE_NODE)
    assert result.jobs.set_index("job_id").loc["a", "jct"] == 30.0
    assert work.is_checked()  # validated once: the next run pays only the fingerprint


def test_a_hand_built_workload_is_validated():
    """`Workload(table, {})` checks nothing; `simulate` validates it."""
    work = dlsched.Workload(table(("a", 0.0, 2.5, 10.0)), {})
    with pytest.raises(TraceError, match="num_gpus must be a whole number"):
        dlsched.simulate(work, ONE_NODE)


def place_waiting(view):
    """FIFO's placement: each waiting job, in order, on the GPUs `view.place` picks."""
    alloc = view.allocation()
    for job in list(view.pending.values()):
        gpus = view.place(job)
        if gpus is not None:
            alloc[job] = gpus
    return alloc


# ---- 2. numbers from policies, truths, estimators, seeds and flags --------------------------
class Waking(BasePolicy):
    """FIFO on one GPU that asks for a wake-up at `when` in its first call."""

    name = "waking"

    def __init__(self, when: object) -> None:
        self.when = when

    def schedule(self, view):
        view.wake_at(self.when)
        return place_waiting(view)


@pytest.mark.parametrize("when", [math.nan, "20", None])
@pytest.mark.parametrize("audit", [False, True])
def test_a_wake_up_at_nan_or_a_non_number_is_a_scheduling_error(when, audit):
    """`view.wake_at(nan)` (once: reordered events, even audited) names the policy."""
    with pytest.raises(SchedulingError, match=r"policy 'waking' asked for a wake-up"):
        dlsched.simulate(three_jobs(), ONE_NODE, Waking(when), audit=audit)


def test_a_wake_up_at_infinity_is_never():
    """`view.wake_at(inf)` plans nothing: the run is the run without it."""
    plain = dlsched.simulate(three_jobs(), ONE_NODE, Waking(-1.0))
    never = dlsched.simulate(three_jobs(), ONE_NODE, Waking(math.inf))
    pd.testing.assert_frame_equal(plain.jobs, never.jobs)
    assert never.summary()["makespan"] == 16.0


class Answering:
    """A truth that answers `value` for every rate."""

    name = "answering"

    def __init__(self, value: object) -> None:
        self.value = value

    def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
        return self.value

    def reference_type(self, model):
        return None


@pytest.mark.parametrize("value", [math.inf, math.nan, -1.0, "2", None, True])
def test_a_truth_answering_a_bad_rate_is_a_scheduling_error(value):
    """A rate of inf (once: every job done in 0 s), NaN, < 0, a text or None names the
    truth, the job, its model, the GPU type and the count."""
    jobs = table(("a", 0.0, 2, np.nan), total_steps=[100.0], model=["resnet"])
    with pytest.raises(SchedulingError) as caught:
        dlsched.simulate(jobs, ONE_NODE, throughput=Answering(value))
    message = str(caught.value)
    assert "'answering'" in message and "job 'a'" in message and "'resnet'" in message
    assert "2 x v100" in message and "finite number" in message


def test_a_truth_answering_a_numpy_rate_runs():
    """A numpy float rate is a rate: 2 steps/s for 100 steps is 50 s."""
    jobs = table(("a", 0.0, 1, np.nan), total_steps=[100.0], model=["resnet"])
    result = dlsched.simulate(jobs, ONE_NODE, throughput=Answering(np.float32(2.0)))
    assert result.jobs["jct"].tolist() == [50.0]


def test_a_truth_answering_inf_for_the_reference_rate_is_refused():
    """Converting a duration to steps at an infinite reference rate is refused too."""
    with pytest.raises(SchedulingError, match=r"'answering' gave job 'a'.*inf"):
        dlsched.simulate(
            table(("a", 0.0, 1, 10.0), model=["m"]), ONE_NODE, throughput=Answering(math.inf)
        )


class BadEstimate(OracleEstimator):
    """An estimator that answers NaN for every rate."""

    name = "bad-estimate"

    def throughput(self, job, gpu_type, n_gpus=None, n_nodes=None):
        return math.nan


def test_an_estimator_answering_nan_is_a_scheduling_error():
    """The engine's own question to the estimator (the types a job may run on) refuses NaN."""
    with pytest.raises(SchedulingError, match=r"'bad-estimate' gave job 'a'.*estimated rate nan"):
        dlsched.simulate(three_jobs(), TWO_TYPES, "gavel_fifo", estimator=BadEstimate())


class Returning(BasePolicy):
    """A policy whose `schedule()` returns `answer` as it is."""

    name = "returning"

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def schedule(self, view):
        return self.answer


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        ([("a", (0,))], r"policy 'returning': schedule\(\) returned list"),
        (42, "returned int"),
        ({"a": 0}, r"policy 'returning', schedule\(\): job 'a' was given 0"),
        ({"a": (0.0,)}, r"job 'a' was given \(0.0,\): give a tuple of integer GPU ids"),
        ({"a": "0"}, r"job 'a' was given '0'"),
        ({"a": (True,)}, r"job 'a' was given \(True,\)"),
    ],
)
def test_a_schedule_answer_that_is_not_job_to_gpu_ids_names_the_policy(answer, match):
    """A non-mapping answer (once: AttributeError) or values that are not GPU ids (once:
    truncated by int()) is a SchedulingError naming the policy."""
    with pytest.raises(SchedulingError, match=match):
        dlsched.simulate(workload(("a", 0.0, 1, 10.0)), ONE_NODE, Returning(answer))


def test_a_schedule_answer_of_numpy_ids_runs():
    """numpy integer GPU ids are ids."""
    result = dlsched.simulate(
        workload(("a", 0.0, 1, 10.0)), ONE_NODE, Returning({"a": np.array([3])})
    )
    assert result.jobs["jct"].tolist() == [10.0]


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True, None, np.float64(2.0)])
def test_a_seed_that_is_not_a_whole_number_from_0_is_a_config_error(seed):
    """A seed is an int >= 0 (once: raw tracebacks, or "3" taken as another seed)."""
    with pytest.raises(ConfigError, match=r"seed must be a whole number >= 0"):
        dlsched.simulate(three_jobs(), ONE_NODE, seed=seed)


def test_a_numpy_seed_is_the_same_seed():
    """np.int64(7) seeds the run as 7 does."""
    noisy = "noisy:0.5"
    a = dlsched.simulate(three_jobs(), ONE_NODE, "sjf", estimator=noisy, seed=np.int64(7))
    b = dlsched.simulate(three_jobs(), ONE_NODE, "sjf", estimator=noisy, seed=7)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert a.meta["seed"] == 7 and type(a.meta["seed"]) is int


@pytest.mark.parametrize(
    "argv",
    [
        ["--estimator", "noisy:nan"],
        ["--estimator", "noisy:inf"],
        ["--restart-overhead", "inf"],
        ["--restart-overhead", "nan"],
        ["--restart-overhead", "-1"],
        ["--seed", "-1"],
        ["--seed", "1.5"],
    ],
)
def test_a_numeric_flag_out_of_range_is_an_argparse_error_naming_it(argv, capsys):
    """Every numeric flag of `replay` refuses NaN, inf and out-of-range values by name."""
    assert main(["replay", *argv]) == 2
    assert f"error: argument {argv[0]}:" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["noisy:nan", "noisy:inf", "goodput:noisy:nan"])
def test_the_estimator_spec_refuses_non_finite_noise(spec):
    """The API path refuses the noise `--estimator` refuses."""
    with pytest.raises(ValueError, match="finite number >= 0"):
        make_estimator(spec)


@pytest.mark.parametrize("sigma", [math.nan, math.inf, -0.1])
def test_a_noisy_estimator_refuses_non_finite_noise(sigma):
    """NoisyEstimator itself refuses NaN, infinite and negative noise."""
    with pytest.raises(ValueError, match="sigma must be a finite number >= 0"):
        NoisyEstimator(sigma)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"restart_s": math.inf},
        {"migration_s": math.nan},
        {"first_start_s": math.inf},
        {"restart_by_gpus": ((1, math.nan),)},
        {"restart_by_model": (("resnet", math.inf),)},
    ],
)
def test_an_overhead_model_refuses_non_finite_seconds(kwargs):
    """inf seconds (once accepted) would hold a job's GPUs forever without progress."""
    with pytest.raises(ValueError, match="finite"):
        OverheadModel(**kwargs)


def test_simulate_refuses_an_infinite_restart_overhead():
    """`restart_overhead_s=inf` through the API is refused by the overhead model."""
    with pytest.raises(ValueError, match="restart_s must be a finite number"):
        dlsched.simulate(three_jobs(), ONE_NODE, restart_overhead_s=math.inf)


# ---- 3. a job's VC must be one of the cluster's --------------------------------------------
VCS = dlsched.Cluster.from_dict(
    {
        "name": "vcs",
        "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2}],
        "vcs": [{"name": "research", "nodes": 1}, {"name": "prod", "nodes": 1}],
    }
)


@pytest.mark.parametrize(("vc", "hint"), [("Research", "'research'"), ("resarch", "'research'")])
def test_a_job_naming_an_unknown_vc_is_an_error_with_a_did_you_mean(vc, hint):
    """A typo or a case mismatch in `vc` (once: ran on the shared pool) names the row."""
    jobs = workload(("a", 0.0, 1, 10.0), ("b", 1.0, 1, 10.0), vc=["prod", vc])
    with pytest.raises(TraceError) as caught:
        dlsched.simulate(jobs, VCS)
    message = str(caught.value)
    assert message.startswith(
        f"jobs.csv, row 3, field 'vc': job 'b' names VC {vc!r}, which cluster 'vcs' does not"
    )
    assert f"did you mean {hint}?" in message


def test_jobs_of_known_vcs_and_without_a_vc_run():
    """Jobs whose VCs the cluster declares run on their VCs' nodes; jobs without a VC
    (None or empty) on the nodes no VC owns (here one node, for both)."""
    jobs = workload(
        ("a", 0.0, 2, 10.0),
        ("b", 0.0, 2, 10.0),
        ("c", 0.0, 2, 10.0),
        ("d", 0.0, 2, 10.0),
        vc=["prod", "research", None, ""],
    )
    shared = dlsched.Cluster.from_dict(
        {
            "name": "vcs",
            "nodes": [{"gpu_type": "V100", "count": 3, "gpus_per_node": 2}],
            "vcs": [{"name": "research", "nodes": 1}, {"name": "prod", "nodes": 1}],
        }
    )
    result = dlsched.simulate(jobs, shared)
    assert result.jobs.set_index("job_id")["jct"].to_dict() == {
        "a": 10.0,
        "b": 10.0,
        "c": 10.0,
        "d": 20.0,
    }


def test_on_a_cluster_without_vcs_the_vc_column_is_a_label():
    """Without VCs in the cluster, any `vc` runs on the one pool."""
    jobs = workload(("a", 0.0, 1, 10.0), vc=["anything"])
    assert dlsched.simulate(jobs, ONE_NODE).jobs["jct"].tolist() == [10.0]


# ---- 4. one GPU type per job, unless the policy says otherwise -----------------------------
class Straddling(BasePolicy):
    """Gives each waiting 4-GPU job GPUs 2-5: 2 V100 and 2 K80 on `TWO_TYPES`."""

    name = "straddling"

    def schedule(self, view):
        alloc = view.allocation()
        for job in list(view.pending.values()):
            alloc[job] = (2, 3, 4, 5)
        return alloc


class StraddlingOnPurpose(Straddling):
    name = "straddling-on-purpose"
    mixed_gpu_types = True


@pytest.mark.parametrize("audit", [False, True])
def test_a_gang_across_gpu_types_is_refused(audit):
    """2 V100 + 2 K80 (once: accepted, run at the K80 rate, booked to V100) is refused."""
    with pytest.raises(SchedulingError, match=r"2 x K80, 2 x V100.*mixed_gpu_types = True"):
        dlsched.simulate(workload(("a", 0.0, 4, 10.0)), TWO_TYPES, Straddling(), audit=audit)


def test_a_policy_declaring_mixed_placements_books_gpu_seconds_by_type():
    """With `mixed_gpu_types = True` the gang runs at its slowest type and each type is
    booked its own GPU-seconds: 2 GPUs × 10 s each."""
    result = dlsched.simulate(
        workload(("a", 0.0, 4, 10.0)), TWO_TYPES, StraddlingOnPurpose(), audit=True
    )
    row = result.jobs.iloc[0]
    assert row["jct"] == 10.0
    assert row["gpu_seconds_V100"] == 20.0 and row["gpu_seconds_K80"] == 20.0
    assert row["gpu_seconds"] == 40.0


def test_mixed_gpu_seconds_add_up_over_stints():
    """A job that ran on one type, then across two, keeps both stints' seconds by type."""

    class Moving(StraddlingOnPurpose):
        name = "moving"

        def schedule(self, view):
            alloc = view.allocation()
            for job in list(view.running.values()):
                if view.now >= 4.0 and job.gpus == (0, 1):
                    alloc[job] = (0, 4)  # a V100 and a K80 from t=4
            for job in list(view.pending.values()):
                alloc[job] = (0, 1)
            view.wake_at(4.0)
            return alloc

    result = dlsched.simulate(workload(("a", 0.0, 2, 10.0)), TWO_TYPES, Moving())
    row = result.jobs.iloc[0]
    # 0-4 s on 2 V100 (8 GPU-s), then 6 s on 1 V100 + 1 K80 (6 + 6)
    assert row["gpu_seconds_V100"] == pytest.approx(14.0)
    assert row["gpu_seconds_K80"] == pytest.approx(6.0)
    assert row["gpu_seconds"] == pytest.approx(20.0)


# ---- 5. round_s ----------------------------------------------------------------------------
class Rounds(BasePolicy):
    """FIFO placement with rounds of `round_s`."""

    name = "rounds"

    def __init__(self, round_s: object) -> None:
        self.round_s = round_s

    def schedule(self, view):
        return place_waiting(view)


@pytest.mark.parametrize("round_s", [0, 0.0, -60.0, math.nan, math.inf, "60", True])
def test_a_round_length_that_is_not_positive_and_finite_is_a_config_error(round_s):
    """`round_s = 0` (once: rounds silently off) and the like name the policy."""
    with pytest.raises(ConfigError, match=r"policy 'rounds': round_s must be a positive"):
        dlsched.simulate(three_jobs(), ONE_NODE, Rounds(round_s))


def test_round_s_none_is_event_driven():
    """`round_s = None` runs without rounds, as before."""
    result = dlsched.simulate(three_jobs(), ONE_NODE, Rounds(None))
    assert result.summary()["makespan"] == 16.0


# ---- 6. an empty workload -------------------------------------------------------------------
def test_an_empty_workload_is_an_error_not_a_nan_summary():
    """A workload cut to no jobs (once: a summary of NaN) is a TraceError saying so."""
    with pytest.raises(TraceError, match=r"holds no jobs \(after the transforms head\)"):
        dlsched.simulate(three_jobs().head(0), ONE_NODE)


def test_an_empty_table_is_an_error():
    """An empty DataFrame is one TraceError saying it holds no jobs."""
    with pytest.raises(TraceError, match=r"<DataFrame>: the table holds no jobs"):
        dlsched.simulate(table(), ONE_NODE)


# ---- 7. a cluster as a dict -----------------------------------------------------------------
def test_a_cluster_given_as_a_dict_runs():
    """`simulate(workload, {...})` takes the cluster file's form (once: a TypeError)."""
    result = dlsched.simulate(three_jobs(), ONE_NODE_FORM)
    assert result.meta["cluster"] == "one" and result.meta["cluster_gpus"] == 4


def test_a_cluster_dict_with_a_mistake_is_a_config_error():
    """A dict cluster is validated as a cluster file is (unknown keys named)."""
    with pytest.raises(ConfigError, match="gpus_per_nod"):
        dlsched.simulate(three_jobs(), {"nodes": [{"gpu_type": "V100", "gpus_per_nod": 4}]})


def test_a_cluster_of_another_kind_is_a_type_error():
    """A cluster that is neither a Cluster, a path, a name nor a dict is a TypeError."""
    with pytest.raises(TypeError, match="cluster must be a Cluster"):
        dlsched.simulate(three_jobs(), 42)  # type: ignore[arg-type]


def test_a_run_where_no_job_could_run_warns_that_its_averages_are_nan():
    """Every job unschedulable (lenient): the summary keeps its keys, with NaN averages and
    0 completed, and the run says so (once: silently)."""
    jobs = validate_jobs(table(("a", 0.0, 8, 10.0)), "jobs.csv", lenient=True, fmt="canonical")
    with pytest.warns(RuntimeWarning, match="all are unschedulable"):
        result = dlsched.simulate(jobs, ONE_NODE)
    summary = result.summary()
    assert summary["jobs_completed"] == 0 and summary["jobs_unschedulable"] == 1
    assert math.isnan(summary["avg_jct"]) and math.isnan(summary["makespan"])
    assert set(summary) == set(dlsched.simulate(three_jobs(), ONE_NODE).summary())


# ---- an estimator asked about a GPU type the cluster does not have ---------------------------
class AsksAboutType(BasePolicy):
    """Asks the estimator about `gpu_type`, then places nothing new."""

    name = "asks-about-type"

    def __init__(self, gpu_type: str) -> None:
        self.gpu_type = gpu_type
        self.rates: list[float] = []

    def schedule(self, view):
        for job in view.pending.values():
            self.rates.append(view.estimator.throughput(job.spec, self.gpu_type))
        return place_waiting(view)


@pytest.mark.parametrize("estimator", ["oracle", "noisy"])
def test_a_rate_on_a_type_the_cluster_lacks_is_an_error_not_zero(estimator):
    """'V100' is the display name of the key 'v100': asked with it, the estimator used to
    answer 0 ("cannot run there"), and a policy would silently treat every job as unplaceable."""
    with pytest.raises(SchedulingError, match=r"'V100'.*did you mean 'v100'"):
        dlsched.simulate(three_jobs(), ONE_NODE, policy=AsksAboutType("V100"), estimator=estimator)
    policy = AsksAboutType("v100")
    dlsched.simulate(three_jobs(), ONE_NODE, policy=policy, estimator=estimator)
    assert policy.rates and all(rate > 0 for rate in policy.rates)
