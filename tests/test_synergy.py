"""Synergy (OSDI 2022): profiles, the resource-sensitive truth, the engine's CPU/memory
override and re-rating, the policy's modes and orders, and the authors' workload."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dlsched
from dlsched.errors import ConfigError, UnknownModelError
from dlsched.perf.synergy import SynergyModel, load_profiles, synergy_workload
from dlsched.policies.base import BasePolicy
from dlsched.policies.synergy import Synergy

DEMAND = {
    "res18": (9000, 64000),
    "res50": (4000, 64000),
    "gnmt": (1000, 20480),
    "alexnet": (12000, 128000),
}


def node(gpus: int = 4, cpus: float = 12, memory_gb: float = 250) -> dlsched.Cluster:
    """One node; the defaults give 3 CPUs and 62.5 GB per GPU (the proportional share)."""
    return dlsched.Cluster.from_dict(
        {
            "name": "one",
            "gpu_types": {"V100": {}},
            "nodes": [
                {
                    "name": "n",
                    "gpu_type": "V100",
                    "count": 1,
                    "gpus_per_node": gpus,
                    "cpus": cpus,
                    "host_memory_gb": memory_gb,
                }
            ],
        }
    )


def jobs(models: list[str], seconds: float = 2400.0, submit: float = 0.0) -> pd.DataFrame:
    """1-GPU jobs of `models` (seconds at the proportional share), their demand points."""
    return pd.DataFrame(
        {
            "job_id": list(range(len(models))),
            "submit_time": [submit] * len(models),
            "num_gpus": [1] * len(models),
            "duration": [seconds] * len(models),
            "model": models,
            "cpu_milli": [DEMAND[m][0] for m in models],
            "memory_mib": [DEMAND[m][1] for m in models],
        }
    )


def finish(models: list[str], mode: str, order: str = "fifo", **kw: object) -> list[float]:
    """Finish times of the jobs under synergy with the Synergy truth."""
    result = dlsched.simulate(
        jobs(models), kw.pop("cluster", node()), "synergy", throughput=SynergyModel(),
        mode=mode, order=order, audit=True, **kw,
    )  # fmt: skip
    return result.jobs.sort_values("job_id")["finish_time"].tolist()


def test_profile_lookup_known_answers():
    """The matrix at grid points, the memory cliff and alexnet's memory step, as published."""
    model = SynergyModel()
    assert model.resource_factor("res18", 3, 62.5) == 1.0
    assert model.resource_factor("res18", 9, 62.5) == 2.4
    assert model.resource_factor("res18", 24, 250) == 2.4
    assert model.resource_factor("res18", 1, 62.5) == 0.37
    assert model.resource_factor("res18", 9, 20.83) == 0.1
    assert model.resource_factor("alexnet", 12, 62.5) == 2.0
    assert model.resource_factor("alexnet", 12, 125) == 2.94
    assert model.resource_factor("m5", 6, 125) == 2.0
    assert model.resource_factor("gnmt", 1, 20) == 1.0
    assert model.resource_factor("res18", 7.5, 62.5) == 1.75  # step: the 6-CPU row
    assert SynergyModel(interp="linear").resource_factor("res18", 7.5, 62.5) == pytest.approx(2.075)


def test_profiles_have_their_demand_speedup_in_the_matrix():
    """Every model's speed-up is its matrix value at its demand point (data consistency)."""
    for profile in load_profiles().values():
        assert profile.factor(profile.demand_cpu, profile.demand_mem_gb) == profile.speedup


def test_unknown_model_is_named():
    """A model without a profile raises an error naming it (or runs at 1 when not strict)."""
    with pytest.raises(UnknownModelError, match="'resnet18'.*res18"):
        SynergyModel().resource_factor("resnet18", 3, 62.5)
    assert SynergyModel(strict=False).resource_factor("resnet18", 9, 62.5) == 1.0
    with pytest.raises(ConfigError, match="interp"):
        SynergyModel(interp="cubic")


class _Resize(BasePolicy):
    """Starts job 0 at 3 CPUs, and gives it 9 CPUs on the same GPU at t=600."""

    name = "resize"

    def schedule(self, view):  # type: ignore[no-untyped-def]
        alloc = view.allocation()
        for state in [*view.pending.values(), *view.running.values()]:
            cpu = 3000 if view.now < 600 else 9000
            alloc.assign(state, (0,), cpu_milli=cpu, memory_mib=64000)
        view.wake_at(600.0)
        return alloc


def test_resources_only_change_rerates_the_job():
    """res18 at 3 CPUs, then 9 from t=600: 600 + 1800/2.4 = 1350 s, one re-rating, no move."""
    result = dlsched.simulate(
        jobs(["res18"]), node(), _Resize(), throughput=SynergyModel(), audit=True
    )
    assert result.jobs["finish_time"].iloc[0] == pytest.approx(1350.0)
    kinds = result.events["event"].tolist()
    assert kinds.count("rerate") == 1 and "migrate" not in kinds
    rerate = result.events[result.events["event"] == "rerate"].iloc[0]
    assert rerate["time"] == 600.0 and rerate["rate"] == pytest.approx(2.4)


def test_proportional_ignores_sensitivity():
    """GPU-proportional: every job at 3 CPUs, all finish at 2400 s."""
    assert finish(["res18", "gnmt", "gnmt", "gnmt"], "proportional") == [2400.0] * 4


@pytest.mark.parametrize("mode", ["greedy", "tune", "opt"])
def test_sensitive_job_gets_its_demand_and_finishes_by_its_speedup(mode):
    """res18 gets 9 CPUs beside three 1-CPU gnmt jobs: 2400 / 2.4 = 1000 s."""
    assert finish(["res18", "gnmt", "gnmt", "gnmt"], mode) == [1000.0, 2400.0, 2400.0, 2400.0]


def test_greedy_skips_a_job_whose_demand_does_not_fit():
    """GREEDY: the second res18 waits until the first leaves (tick 1200, done at 2200)."""
    assert finish(["res18", "res18", "gnmt", "gnmt"], "greedy") == [1000, 2200, 2400, 2400]


def test_tune_shrinks_a_peer_to_the_proportional_share():
    """TUNE: r1 falls back to 3 CPUs, g2 finds none free and shrinks r0 to 3: all at 2400."""
    assert finish(["res18", "res18", "gnmt", "gnmt"], "tune") == [2400.0] * 4


def test_opt_solves_the_authors_ilp():
    """OPT on 3 GPUs / 9 CPUs: gnmt 1, res18 5 (1.53), res50 3 (1.0): objective 3.53."""
    policy = Synergy(mode="opt")
    result = dlsched.simulate(
        jobs(["res18", "gnmt", "res50"]), node(3, 9, 187.5), policy,
        throughput=SynergyModel(), audit=True,
    )  # fmt: skip
    assert policy.objectives[0] == pytest.approx(3.53)
    assert result.jobs.sort_values("job_id")["finish_time"].iloc[0] == pytest.approx(2400 / 1.53)


def test_srtf_runs_the_faster_job_first_unless_proportional():
    """SRTF on one GPU: TUNE runs res18 (1000 s) before res50 (2087 s); proportional by order."""
    tuned = finish(["res50", "res18"], "tune", "srtf", cluster=node(1, 24, 250))
    assert tuned[1] == 1000.0 and tuned[0] == pytest.approx(1200 + 2400 / 1.15)
    work = jobs(["res50", "res18"]).drop(columns=["cpu_milli", "memory_mib"])
    plain = dlsched.simulate(
        work, node(1, 3, 62.5), "synergy", throughput=SynergyModel(), mode="proportional",
        order="srtf", audit=True,
    )  # fmt: skip
    assert plain.jobs.sort_values("job_id")["finish_time"].tolist() == [2400.0, 4800.0]


def test_las_with_tune_places_the_larger_gang_first():
    """LAS+TUNE on 3 GPUs / 9 CPUs: the 2-GPU job is placed before a 1-GPU job of the round."""
    work = jobs(["res18", "res18"])
    work.loc[1, "num_gpus"] = 2
    work.loc[1, "cpu_milli"] = 6000
    result = dlsched.simulate(
        work, node(3, 9, 187.5), "synergy", throughput=SynergyModel(), mode="tune",
        order="las", audit=True,
    )  # fmt: skip
    start = result.events[result.events["event"] == "start"].set_index("job_id")["gpus"]
    assert start[1] == "0,1" and start[0] == "2"


def test_jobs_wait_for_the_next_round():
    """A job submitted at t=10 starts at the 300 s tick."""
    result = dlsched.simulate(
        jobs(["gnmt"], submit=10.0), node(), "synergy", throughput=SynergyModel(), audit=True
    )
    assert result.jobs["start_time"].iloc[0] == 300.0


def test_gpu_only_cluster_runs_proportional():
    """Without CPU/memory capacities every mode is GPU-proportional (rate 1)."""
    cluster = dlsched.Cluster.from_dict(
        {
            "name": "g",
            "gpu_types": {"V100": {}},
            "nodes": [{"name": "n", "gpu_type": "V100", "count": 1, "gpus_per_node": 2}],
        }
    )
    assert finish(["res18", "gnmt"], "tune", cluster=cluster) == [2400.0, 2400.0]


def test_bad_parameters_are_refused():
    """Unknown order or mode, and a non-positive round, are configuration errors."""
    with pytest.raises(ConfigError, match="order"):
        Synergy(order="sjf")
    with pytest.raises(ConfigError, match="mode"):
        Synergy(mode="best")
    with pytest.raises(ConfigError, match="round_s"):
        Synergy(round_s=0)


def test_same_inputs_same_result():
    """Two runs of TUNE on a small generated workload give identical events."""
    work = synergy_workload(60, jobs_per_hour=30)
    cluster = node(4, 12, 250)
    runs = [
        dlsched.simulate(work, cluster, "synergy", throughput=SynergyModel(), mode="tune")
        for _ in range(2)
    ]
    pd.testing.assert_frame_equal(runs[0].events, runs[1].events)


def test_named_truth_and_bundled_cluster_give_the_same_run():
    """throughput="synergy" on the bundled synergy-128 is the SynergyModel run on it."""
    work = synergy_workload(40, jobs_per_hour=30)
    by_name = dlsched.simulate(work, "synergy-128", "synergy", throughput="synergy")
    given = dlsched.simulate(
        work, dlsched.load_cluster("synergy-128"), "synergy", throughput=SynergyModel()
    )
    pd.testing.assert_frame_equal(by_name.jobs, given.jobs)
    assert by_name.summary()["cpu_utilization"] > 0


def test_workload_is_the_authors():
    """The generator's first jobs are those the authors' simulator makes for seeds 1 and 42."""
    work = synergy_workload(3, list_seed=1)
    assert work["submit_time"].tolist() == [409.0, 951.0, 1053.0]
    assert work["model"].tolist() == ["alexnet", "gnmt", "transformer"]
    assert work["duration"].iloc[0] == pytest.approx(59040 * 0.6)
    assert work["cpu_milli"].tolist() == [12000, 1000, 1000]
    split = synergy_workload(1000)["model"].map(lambda m: load_profiles()[m].task)
    assert split.value_counts().to_dict() == {"language": 700, "image": 200, "speech": 100}


def test_a_resize_beyond_the_node_is_refused_and_keeps_what_the_job_held():
    """Asking for more CPUs than the node has on the same GPUs raises, naming the job."""

    class Grow(BasePolicy):
        name = "grow"

        def schedule(self, view):  # type: ignore[no-untyped-def]
            alloc = view.allocation()
            for state in view.pending.values():
                alloc.assign(state, (0,), cpu_milli=3000, memory_mib=64000)
            for state in view.running.values():
                with pytest.raises(dlsched.errors.SchedulingError, match="job 0 cannot be re-s"):
                    alloc.assign(state, (0,), cpu_milli=99000)
                assert view.free_resources(0) == (9000, 192000)
            view.wake_at(300.0)
            return alloc

    result = dlsched.simulate(jobs(["res18"]), node(), Grow(), throughput=SynergyModel())
    assert result.jobs["finish_time"].iloc[0] == 2400.0


def test_reproduction_measures_a_window_of_the_generated_workload():
    """The reproduction's measure runs the authors' workload and reads the window's JCTs."""
    from dlsched.reproduce.synergy import measure

    spec = {"order": "fifo", "mode": "tune", "n_jobs": 40, "jobs_per_hour": 9.0}
    out = measure({**spec, "window": (5, 25), "stop": False}, Path("."))
    assert set(out) == {"mean_jct_h", "p99_jct_h"}
    assert 0 < out["mean_jct_h"] <= out["p99_jct_h"]


def test_utilisation_counts_what_the_ledger_gave_not_the_demand():
    """TUNE gives res18 3, gnmt 1, res50 3 and alexnet 3 cores of the node's 12: the run's
    CPU utilisation is 10/12, from the amounts the engine recorded with each event."""
    result = dlsched.simulate(
        jobs(["res18", "gnmt", "res50", "alexnet"]), node(), "synergy", throughput=SynergyModel()
    )
    assert result.events.loc[result.events["event"] == "start", "held_cpu_milli"].tolist() == [
        3000,
        1000,
        3000,
        3000,
    ]
    assert result.summary()["cpu_utilization"] == pytest.approx(10 / 12)


def test_utilisation_follows_a_rerate():
    """3 cores for 600 s, then 9 until 1350 s, on 12 cores: (3·600 + 9·750) / (12·1350)."""
    result = dlsched.simulate(jobs(["res18"]), node(), _Resize(), throughput=SynergyModel())
    assert "rerate" in result.events["event"].tolist()
    assert result.summary()["cpu_utilization"] == pytest.approx((3 * 600 + 9 * 750) / 16200)


class _ResizeDuringStart(BasePolicy):
    """Job 0 on GPU 0 with 3 cores, then 3.001 at 50 s (inside a 100 s start overhead)."""

    name = "resize-during-start"

    def schedule(self, view):
        alloc = view.allocation()
        for state in [*view.pending.values(), *view.running.values()]:
            cpu = 3000 if view.now < 50 else 3001
            alloc.assign(state, (0,), cpu_milli=cpu, memory_mib=64000)
        if view.now < 50:
            view.wake_at(50.0)
        return alloc


def test_a_rerate_during_a_start_overhead_keeps_the_rest_of_it():
    """A 1000 s job with a 100 s start overhead, re-rated at 50 s at the same speed,
    still finishes at 1100 s."""
    from dlsched.overheads import OverheadModel

    result = dlsched.simulate(
        jobs(["gnmt"], seconds=1000),
        node(),
        _ResizeDuringStart(),
        throughput=SynergyModel(),
        overheads=OverheadModel(first_start_s=100.0),
    )
    assert "rerate" in result.events["event"].tolist()
    assert result.jobs["finish_time"].iloc[0] == pytest.approx(1100.0)


def test_tune_never_grows_a_peer_it_shrinks():
    """TUNE shrinks a peer to the proportional share only on the resources it holds above it:
    job 'x' (2 GPUs on two nodes, 124 MiB of memory) gave back its CPUs, and moving it up to
    the share's 18 GiB of memory per GPU asked for room node g1-1 did not have (a
    `SchedulingError` from inside the policy; found by the property test)."""
    work = pd.DataFrame(
        {
            "job_id": [
                "_",
                "a",
                "z",
                "a_",
                "az",
                "_xzj",
                "bzyx",
                "b",
                "xy",
                "yj",
                "z_j_",
                "jba",
                "y",
                "__",
                "ya",
                "y_ja",
                "aj_b",
                "x",
                "jx",
                "x_z",
                "_x_a",
                "_x_j",
                "b_",
                "x_",
            ],
            "submit_time": [
                0,
                0,
                0,
                0,
                0,
                237,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                237,
                0,
                0,
                0,
                0,
                237,
                0,
                0,
            ],
            "num_gpus": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1],
            "duration": [
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                178.0,
                1.0,
                1.0,
                1.0,
            ],
            "model": [
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "LM (batch size 20)",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "ResNet-18 (batch size 64)",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
                "A3C",
            ],
            "gpu_milli": [
                1000,
                100,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                1000,
                100,
                1000,
            ],
            "cpu_milli": [
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                1293,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
                28000,
            ],
            "memory_mib": [
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
                124,
                129024,
                129024,
                129024,
                129024,
                129024,
                129024,
            ],
        }
    )
    cluster = {
        "name": "random",
        "gpu_types": {"K80": {}},
        "nodes": [
            {"name": "g0", "gpu_type": "K80", "count": 1, "gpus_per_node": 3},
            {"name": "g1", "gpu_type": "K80", "count": 4, "gpus_per_node": 7, "cpus": 28,
             "host_memory_gb": 126},
        ],
    }  # fmt: skip
    result = dlsched.simulate(work, cluster, "synergy", throughput="gavel", audit=True)
    assert (result.jobs["status"] == "finished").all()
