"""Rented clusters: instance types in YAML, nodes that come and go, provisioners, cost."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

import dlsched
from dlsched.cli import main
from dlsched.cluster import Cluster
from dlsched.engine.ledger import Ledger
from dlsched.errors import ConfigError, SchedulingError
from dlsched.experiments import load_experiment, simulate_config
from dlsched.provision import PROVISIONERS, Provision
from dlsched.provision import get as get_provisioner

# A private node of 2 V100s that bursts to two instance types (the known-answer cluster).
BURST = {
    "name": "burst",
    "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}],
    "instance_types": {
        "small": {"gpu_type": "V100", "gpus": 2, "price_per_hour": 3.06, "startup_s": 120},
        "big": {"gpu_type": "V100", "gpus": 8, "price_per_hour": 24.48, "startup_s": 300},
    },
    "limits": {"small": 1, "big": 1},
}

# j1 fills the private node; j2 waits for a small instance; j3 (4 GPUs) needs the big one.
TRACE = pd.DataFrame(
    {
        "job_id": [1, 2, 3],
        "submit_time": [0.0, 0.0, 60.0],
        "num_gpus": [2, 2, 4],
        "duration": [3600.0, 1800.0, 600.0],
    }
)


def cluster_of(**changes: object) -> Cluster:
    data = {**BURST, **changes}
    return Cluster.from_dict({k: v for k, v in data.items() if v is not None}, "burst.yaml")


def error_of(**changes: object) -> str:
    with pytest.raises(ConfigError) as err:
        cluster_of(**changes)
    return str(err.value)


# --- the cluster file -------------------------------------------------------------------


def test_instance_types_add_their_maximum_count_of_nodes_after_the_fixed_ones():
    """Each type's limit becomes that many `rent-<type>-<i>` nodes, after the fixed node."""
    cluster = cluster_of()
    assert [n.name for n in cluster.nodes] == ["v100-g0-0", "rent-small-0", "rent-big-0"]
    assert cluster.num_gpus == 12
    assert cluster.rented is not None
    assert dict(cluster.rented.node_type or {}) == {1: "small", 2: "big"}


def test_a_cluster_may_rent_only():
    """No fixed `nodes` at all: instance types alone make a cluster."""
    cluster = cluster_of(nodes=None, limits=3)
    assert [n.name for n in cluster.nodes][:2] == ["rent-small-0", "rent-small-1"]
    assert len(cluster.nodes) == 6  # a total of 3 caps each type at 3 nodes


def test_a_typo_in_an_instance_type_key_suggests_the_key():
    """`price_per_hr` names the instance type's key and suggests `price_per_hour`."""
    kinds = {"small": {"gpu_type": "V100", "gpus": 2, "price_per_hr": 3.0}}
    message = error_of(instance_types=kinds, limits=1)
    assert "burst.yaml" in message and "instance_types.small" in message
    assert "did you mean 'price_per_hour'" in message


def test_an_instance_type_without_a_price_is_refused():
    """The price is required: it is what the run bills."""
    message = error_of(instance_types={"small": {"gpu_type": "V100", "gpus": 2}}, limits=1)
    assert "instance_types.small.price_per_hour" in message and "missing" in message


def test_a_negative_startup_is_refused():
    """`startup_s: -5` names the key and says what it must be."""
    kinds = {"small": {"gpu_type": "V100", "gpus": 2, "price_per_hour": 1, "startup_s": -5}}
    message = error_of(instance_types=kinds, limits=1)
    assert "instance_types.small.startup_s" in message and ">= 0" in message


def test_an_instance_type_without_any_limit_is_refused():
    """Every type needs a cap, its own or a total, so the node table stays finite."""
    message = error_of(limits={"small": 1})
    assert "'big' has no limit" in message and "limits" in message


def test_a_limit_naming_an_unknown_type_suggests_one():
    """`limits: {smal: 1}` names the key and suggests `small`."""
    message = error_of(limits={"smal": 1, "big": 1})
    assert "limits.smal" in message and "did you mean 'small'" in message


def test_a_billing_typo_is_refused():
    """`billing: hours` lists the billings and suggests `hour`."""
    message = error_of(billing="hours")
    assert "'billing'" in message and "did you mean 'hour'" in message


def test_limits_without_instance_types_are_refused():
    """`limits` on a fixed cluster says it needs instance types."""
    message = error_of(instance_types=None)
    assert "'limits'" in message and "instance_types" in message


def test_a_vc_may_not_own_rented_nodes():
    """A VC takes fixed nodes only: a rented node may be absent."""
    message = error_of(vcs=[{"name": "a", "nodes": ["rent-small-0"]}])
    assert "'vcs'" in message and "rented" in message


# --- the mechanism: absent nodes --------------------------------------------------------


def test_an_absent_node_has_no_free_gpus_anywhere():
    """A withdrawn node leaves the free counts, free lists and buckets; it comes back whole."""
    ledger = Ledger(cluster_of())
    ledger.withdraw_node(1)
    assert ledger.free_by_type == {"v100": 10}
    assert ledger.node_free[1] == [] and all(1 not in b for b in ledger.buckets[("v100", None)])
    assert ledger.busy_by_type() == {"v100": 0}  # absent is neither free nor busy
    ledger.restore_node(1)
    assert ledger.free_by_type == {"v100": 12} and ledger.node_free[1] == [2, 3]


def test_taking_a_gpu_of_an_absent_node_is_refused_with_a_reason():
    """The error says the node is not present, not that some job holds the GPU."""
    ledger = Ledger(cluster_of())
    ledger.withdraw_node(1)
    with pytest.raises(SchedulingError, match="not present"):
        ledger.take(0, (2,))


def test_withdrawing_a_busy_node_is_refused():
    """A node that runs a job cannot be released (or powered down)."""
    ledger = Ledger(cluster_of())
    ledger.take(0, (2,))
    with pytest.raises(SchedulingError, match="still runs jobs"):
        ledger.withdraw_node(1)


class _ReleaseEverything:
    """A faulty provisioner: rents one small instance, then releases every held node."""

    name = "release_everything"

    def provision(self, view):
        held = view.held()
        if not held and view.can_acquire("small"):
            return Provision(acquire={"small": 1})
        return Provision(release=held)


def test_a_provisioner_releasing_a_busy_instance_is_refused():
    """The engine refuses to release a node a job runs on (it never preempts for it)."""
    with pytest.raises(SchedulingError, match="still runs jobs"):
        dlsched.simulate(TRACE, cluster_of(), "fifo", provisioner=_ReleaseEverything(), audit=True)


def test_the_timeline_counts_only_gpus_jobs_hold():
    """Absent rented GPUs are not busy: at time 0 only the private node's 2 GPUs are."""
    result = dlsched.simulate(TRACE, cluster_of(), "fifo", audit=True)
    assert result.timeline.iloc[0]["V100"] == 2
    assert result.timeline["V100"].max() <= 8


# --- provisioners -----------------------------------------------------------------------


def test_the_builtin_provisioners_are_registered():
    """`on_demand` and `static` are in the registry; parameters are checked."""
    assert {"on_demand", "static"} <= set(PROVISIONERS)
    with pytest.raises(ValueError, match="idle_release_s"):
        get_provisioner("on_demand", idle_release_s=-1)


def test_static_rents_nothing():
    """Under `static` the jobs queue for the private node (j3, 4 GPUs, never fits) and the
    bill is 0."""
    with pytest.warns(RuntimeWarning, match="never finished"):
        result = dlsched.simulate(TRACE, cluster_of(), "fifo", provisioner="static", audit=True)
    summary = result.summary()
    assert summary["rented_cost"] == 0 and summary["rented_idle_s"] == 0
    assert result.meta["rented"]["instances"] == []


def test_a_fixed_cluster_has_no_rented_keys_and_refuses_a_renting_provisioner():
    """The rented keys are absent on a fixed cluster; asking it to rent is a ConfigError."""
    fixed = cluster_of(instance_types=None, limits=None)
    small_jobs = TRACE[TRACE["num_gpus"] <= 2]
    summary = dlsched.simulate(small_jobs, fixed, "fifo").summary()
    assert not {"rented_cost", "rented_idle_s", "cost_per_job"} & set(summary)
    with pytest.raises(ConfigError, match="declares no 'instance_types'"):
        dlsched.simulate(small_jobs, fixed, "fifo", provisioner="on_demand")


# --- the known answer -------------------------------------------------------------------


def test_known_answer_cost_of_a_burst_run():
    """FIFO, `on_demand` (idle release 600 s), per-second billing, worked by hand.

    t=0: j1 takes the private node; j2 waits -> one `small` (cheapest for 2 GPUs) acquired,
    present at 120. t=60: j3 (4 GPUs) arrives; j2 is covered by the booting small, j3 is not
    and the small's limit is reached -> one `big`, present at 360. t=120: j2 runs on the
    small until 1920; t=360: j3 runs on the big until 960. The big is idle from 960,
    released at 1560; the small is idle from 1920, released at 2520; j1 ends at 3600.

    small: held 0-2520 = 2520 s x $3.06/h / 3600 = $2.142; idle 120 + 600 = 720 s
    big:   held 60-1560 = 1500 s x $24.48/h / 3600 = $10.20; idle 300 + 600 = 900 s
    rented_cost = $12.342; rented_idle_s = 1620; cost_per_job = 12.342 / 3 = $4.114
    """
    result = dlsched.simulate(TRACE, cluster_of(), "fifo", audit=True)
    jobs = result.jobs.set_index("job_id")
    assert jobs["start_time"].to_dict() == {1: 0.0, 2: 120.0, 3: 360.0}
    rows = result.meta["rented"]["instances"]
    held = [(r["name"], r["acquired_s"], r["released_s"]) for r in rows]
    assert held == [("rent-small-0", 0.0, 2520.0), ("rent-big-0", 60.0, 1560.0)]
    summary = result.summary()
    assert round(summary["rented_cost"], 2) == 12.34
    assert summary["rented_cost"] == pytest.approx(12.342, abs=1e-9)
    assert summary["rented_idle_s"] == pytest.approx(1620.0)
    assert summary["cost_per_job"] == pytest.approx(4.114, abs=1e-9)


def test_known_answer_cost_billed_per_started_hour():
    """`billing: hour`: each instance's started hours are billed whole (1 h each here):
    $3.06 + $24.48 = $27.54."""
    result = dlsched.simulate(TRACE, cluster_of(billing="hour"), "fifo", audit=True)
    assert result.summary()["rented_cost"] == pytest.approx(27.54, abs=1e-9)


def test_every_instance_is_released_when_the_last_job_finishes():
    """With a long idle timeout, what is still held is released at the last finish."""
    result = dlsched.simulate(
        TRACE, cluster_of(), "fifo", provisioner=get_provisioner("on_demand", idle_release_s=1e6)
    )
    ends = {r["released_s"] for r in result.meta["rented"]["instances"]}
    assert ends == {3600.0}


def test_the_rented_record_survives_save_and_load(tmp_path):
    """`meta["rented"]` is JSON: a loaded result has the same rented summary."""
    result = dlsched.simulate(TRACE, cluster_of(), "fifo")
    loaded = dlsched.SimulationResult.load(result.save(tmp_path / "r"))
    assert loaded.summary()["rented_cost"] == pytest.approx(result.summary()["rented_cost"])


# --- front ends -------------------------------------------------------------------------


def write_burst(tmp_path: Path) -> tuple[Path, Path]:
    cluster = tmp_path / "burst.yaml"
    cluster.write_text(yaml.safe_dump(BURST))
    trace = tmp_path / "trace.csv"
    TRACE.to_csv(trace, index=False)
    return cluster, trace


def test_the_cli_takes_a_provisioner(tmp_path, capsys):
    """`dlsched replay --provisioner static` rents nothing; the summary shows the cost key."""
    cluster, trace = write_burst(tmp_path)
    argv = ["replay", "--trace", str(trace), "--cluster", str(cluster), "--json"]
    with pytest.warns(RuntimeWarning, match="never finished"):  # j3 fits no fixed node
        assert main([*argv, "--provisioner", "static"]) == 0
    assert json.loads(capsys.readouterr().out)["rented_cost"] == 0
    assert main([*argv, "--provisioner", "on_demand"]) == 0
    assert json.loads(capsys.readouterr().out)["rented_cost"] == pytest.approx(12.342)


def test_the_cli_refuses_an_unknown_provisioner(tmp_path, capsys):
    """A typo is refused before anything runs, with a did-you-mean."""
    cluster, trace = write_burst(tmp_path)
    argv = ["replay", "--trace", str(trace), "--cluster", str(cluster), "--provisioner"]
    assert main([*argv, "on_demnd"]) == 2
    assert "did you mean 'on_demand'" in capsys.readouterr().err


def experiment(tmp_path: Path, provisioner: object) -> Path:
    cluster, trace = write_burst(tmp_path)
    data = {
        "name": "burst",
        "cluster": str(cluster),
        "workload": {"trace": str(trace)},
        "policies": ["fifo"],
        "provisioner": provisioner,
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_experiment_names_its_provisioner(tmp_path):
    """`provisioner: {name: on_demand, idle_release_s: 1000000}` reaches the run."""
    exp = load_experiment(experiment(tmp_path, {"name": "on_demand", "idle_release_s": 1e6}))
    [run] = exp.runs.values() if isinstance(exp.runs, dict) else exp.runs
    result = simulate_config(run.config)
    assert {r["released_s"] for r in result.meta["rented"]["instances"]} == {3600.0}


def test_an_experiment_refuses_an_unknown_provisioner(tmp_path):
    """`provisioner: on_demnd` names the key and suggests the name."""
    with pytest.raises(ConfigError, match="did you mean 'on_demand'"):
        load_experiment(experiment(tmp_path, "on_demnd"))


def test_cost_per_job_is_nan_when_no_job_completes():
    """No completed job: the cost per job is undefined, not a division error."""
    with pytest.warns(RuntimeWarning, match="never finished"):
        result = dlsched.simulate(TRACE, cluster_of(), "fifo", max_time_s=10.0)
    assert math.isnan(result.summary()["cost_per_job"])


def test_a_policy_that_skips_quiet_calls_hears_of_new_nodes():
    """Tiresias answers "nothing moved" without looking unless a job arrived or finished;
    an instance becoming present is news it hears (`on_nodes_changed`), so every job runs
    and the bill is FIFO's."""
    result = dlsched.simulate(TRACE, cluster_of(), "tiresias", audit=True)
    summary = result.summary()
    assert summary["jobs_completed"] == 3
    assert summary["rented_cost"] == pytest.approx(12.342, abs=1e-9)


class _Looker:
    """A policy that records what the view says of the rented node at its first call."""

    name = "looker"
    round_s = None

    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def schedule(self, view):
        job = next(iter(view.pending.values()), None)
        self.seen.append(
            (
                view.now,
                view.free_gpus(),
                view.free_gpus_on_node(1),
                view.node_present(1),
                None if job is None else view.place(job, n_gpus=2, strategy="spread"),
            )
        )
        return None


def test_the_view_and_the_placement_helpers_agree_that_an_absent_node_is_not_there():
    """At time 0 the rented nodes are absent: no free GPUs on them, not present, and a
    placement of 2 GPUs fits only the private node (GPUs 0 and 1)."""
    looker = _Looker()
    with pytest.warns(RuntimeWarning):  # the looker never starts anything
        dlsched.simulate(TRACE, cluster_of(), looker, provisioner="static", audit=True)
    now, free, on_node, present, placed = looker.seen[0]
    assert (now, free, on_node, present) == (0.0, 2, (), False)
    assert placed == (0, 1)


def test_rounds_go_on_while_an_instance_starts():
    """Max-min fairness time-slices two 1-GPU jobs on the one instance by rounds; a round
    that falls while the instance boots (nothing runs yet) must not end the round ticks."""
    only_rented = Cluster.from_dict(
        {
            "name": "r",
            "instance_types": {
                "s": {"gpu_type": "V100", "gpus": 1, "price_per_hour": 1.0, "startup_s": 1000}
            },
            "limits": 1,
        }
    )
    jobs = pd.DataFrame(
        {"job_id": [1, 2], "submit_time": [0, 0], "num_gpus": [1, 1], "duration": [2000, 2000]}
    )
    result = dlsched.simulate(jobs, only_rented, "max_min_fairness", audit=True)
    assert result.jobs["preemptions"].sum() > 0  # the jobs took turns
    assert result.summary()["rented_cost"] == pytest.approx(5000 / 3600)


def test_energy_figures_are_refused_on_a_rented_cluster():
    """Energy accounting would count absent instances as idle GPUs: refused, naming the key."""
    message = error_of(energy={})
    assert "'energy'" in message and "instance_types" in message


def test_a_strict_order_policy_blocked_on_a_large_job_is_served():
    """QSSF starts j2 first and then blocks on j3 (4 GPUs, the least GPU-time): renting for
    every waiting job, not just the earliest submitted, lets all three finish."""
    result = dlsched.simulate(TRACE, cluster_of(), "qssf", audit=True)
    assert result.summary()["jobs_completed"] == 3
