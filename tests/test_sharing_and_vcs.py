"""Fractional GPUs, GPU-type constraints, per-type durations and virtual clusters."""

import pandas as pd
import pytest

import dlsched
from dlsched.errors import TraceError


def jobs(*rows, **extra):
    """rows: (job_id, submit, num_gpus, duration); extra: column name → list of values."""
    table = pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration"])
    for name, values in extra.items():
        table[name] = values
    return table


def cluster(**spec):
    return dlsched.Cluster.from_dict({"name": "c", **spec})


def by_id(result):
    return result.jobs.set_index("job_id")


def test_fractional_jobs_share_one_gpu():
    """Two half-GPU jobs run side by side on one GPU; a third half waits for room."""
    # One GPU. a, b (500 milli each, 10 s) share it 0→10; c (500, 10 s) waits, runs 10→20.
    table = jobs(("a", 0, 1, 10.0), ("b", 0, 1, 10.0), ("c", 0, 1, 10.0), gpu_milli=[500, 500, 500])
    result = dlsched.simulate(table, cluster(nodes=[{"gpu_type": "T4", "count": 1}]))
    finish = by_id(result)["finish_time"].to_dict()
    assert finish == {"a": 10.0, "b": 10.0, "c": 20.0}
    assert by_id(result)["gpu_seconds"].to_dict() == {"a": 5.0, "b": 5.0, "c": 5.0}


def test_fraction_and_whole_job_do_not_mix_on_a_gpu():
    """A whole-GPU job never lands on a GPU that holds fractions."""
    # 2 GPUs. f (300 milli, 10 s) takes GPU 0; w1 (1 GPU) takes GPU 1; w2 must wait for f.
    table = jobs(
        ("f", 0, 1, 10.0), ("w1", 0, 1, 10.0), ("w2", 0, 1, 10.0), gpu_milli=[300, 1000, 1000]
    )
    result = dlsched.simulate(table, cluster(nodes=[{"gpu_type": "T4", "gpus_per_node": 2}]))
    assert by_id(result).loc["w2", "start_time"] == 10.0


def test_gpu_constraint_keeps_a_job_on_allowed_types():
    """A job allowed only on V100 waits for the V100 although a K80 is idle."""
    table = jobs(("a", 0, 1, 10.0), ("b", 0, 1, 10.0), gpu_constraint=["V100", "V100"])
    hardware = cluster(nodes=[{"gpu_type": "V100"}, {"gpu_type": "K80"}])
    result = dlsched.simulate(table, hardware)
    assert by_id(result)["finish_time"].to_dict() == {"a": 10.0, "b": 20.0}
    assert (result.events.dropna(subset=["gpu_type"])["gpu_type"] == "V100").all()


def test_a_constraint_the_cluster_cannot_meet_names_the_field():
    """Asking for a type the cluster lacks is an error naming gpu_constraint."""
    table = jobs(("a", 0, 1, 10.0), gpu_constraint=["A100"])
    with pytest.raises(TraceError, match="gpu_constraint"):
        dlsched.simulate(table, cluster(nodes=[{"gpu_type": "V100"}]))


def test_per_type_durations_are_the_truth():
    """A job measured at 100 s on V100 and 300 s on K80 takes exactly that where it runs."""
    table = jobs(
        ("fast", 0, 1, 100.0),
        ("slow", 0, 1, 100.0),
        duration_v100=[100.0, 100.0],
        duration_k80=[300.0, 300.0],
    )
    result = dlsched.simulate(
        table, cluster(nodes=[{"gpu_type": "V100"}, {"gpu_type": "K80"}]), policy="fifo"
    )
    # Both arrive at 0; FIFO places the first on the fastest type (V100), the second on K80.
    assert by_id(result)["finish_time"].to_dict() == {"fast": 100.0, "slow": 300.0}


VC_CLUSTER = {
    "nodes": [
        {"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "name": "v"},
        {"gpu_type": "V100", "count": 1, "gpus_per_node": 4, "name": "s"},
    ],
    "vcs": [
        {"name": "research", "nodes": ["v-0"]},
        {"name": "prod", "nodes": ["v-1"]},
        {"name": "guests", "gpus": 2},
    ],
}


def test_vc_jobs_run_only_on_their_vcs_nodes():
    """A research job waits for research's node even when prod's node is idle."""
    table = jobs(("r1", 0, 4, 10.0), ("r2", 0, 4, 10.0), vc=["research", "research"])
    result = dlsched.simulate(table, cluster(**VC_CLUSTER))
    assert by_id(result)["finish_time"].to_dict() == {"r1": 10.0, "r2": 20.0}


def test_vc_quota_caps_its_jobs():
    """guests (quota 2 GPUs) run two 1-GPU jobs at once, not three, on the shared node."""
    table = jobs(("g1", 0, 1, 10.0), ("g2", 0, 1, 10.0), ("g3", 0, 1, 10.0), vc=["guests"] * 3)
    result = dlsched.simulate(table, cluster(**VC_CLUSTER), policy="per-vc", inner="fifo")
    assert by_id(result)["finish_time"].to_dict() == {"g1": 10.0, "g2": 10.0, "g3": 20.0}


def test_a_job_bigger_than_its_vc_is_unschedulable():
    """An 8-GPU research job can never fit research's 4 GPUs: a clear error."""
    table = jobs(("big", 0, 8, 10.0), vc=["research"])
    with pytest.raises(TraceError, match="VC 'research'"):
        dlsched.simulate(table, cluster(**VC_CLUSTER))


def test_per_vc_fifo_does_not_block_across_vcs():
    """Per-VC FIFO: prod's small job starts although research's head job is blocked."""
    # research node busy with r1 (4 GPUs, 100 s); r2 (4 GPUs) blocked behind it. A global
    # FIFO would also hold p1 (prod, submitted after r2); per-VC FIFO starts it at once.
    table = jobs(
        ("r1", 0, 4, 100.0),
        ("r2", 1, 4, 10.0),
        ("p1", 2, 1, 10.0),
        vc=["research", "research", "prod"],
    )
    single = by_id(dlsched.simulate(table, cluster(**VC_CLUSTER), policy="fifo"))
    split = by_id(dlsched.simulate(table, cluster(**VC_CLUSTER), policy="per-vc", inner="fifo"))
    assert single.loc["p1", "start_time"] == 100.0
    assert split.loc["p1", "start_time"] == 2.0
    assert split.loc["r2", "start_time"] == 100.0


def test_per_vc_srtf_preempts_only_within_a_vc():
    """Per-VC SRTF: a short prod job never preempts a research job."""
    table = jobs(
        ("r1", 0, 4, 100.0), ("p1", 0, 4, 100.0), ("p2", 1, 4, 5.0), vc=["research", "prod", "prod"]
    )
    result = by_id(dlsched.simulate(table, cluster(**VC_CLUSTER), policy="per-vc", inner="srtf"))
    assert result.loc["r1", "preemptions"] == 0
    assert result.loc["p1", "preemptions"] == 1
    assert result.loc["p2", "finish_time"] == 6.0


def test_per_type_durations_alone_are_enough_work():
    """Hydra-style jobs with only duration_<type> columns replay those durations exactly."""
    table = jobs(
        ("fast", 0, 1, float("nan")),
        ("slow", 0, 1, float("nan")),
        duration_v100=[100.0, 100.0],
        duration_k80=[300.0, 300.0],
    )
    result = dlsched.simulate(table, cluster(nodes=[{"gpu_type": "V100"}, {"gpu_type": "K80"}]))
    assert by_id(result)["finish_time"].to_dict() == {"fast": 100.0, "slow": 300.0}


def test_a_job_without_work_names_the_duration_field():
    """A job whose trace gives no work (Pollux/Sia style) is refused with a clear reason."""
    table = jobs(("a", 0, 1, float("nan")))
    table["model"] = ["resnet"]
    with pytest.raises(TraceError, match="convergence model"):
        dlsched.simulate(table, cluster(nodes=[{"gpu_type": "V100"}]))


def test_srtf_preempts_inside_the_jobs_own_vc():
    """prod's 4-GPU job (1,000 s) is longer than research's (500 s); a short research job
    arriving at t=10 can only use research's node, so SRTF preempts research's long job (not
    prod's, whose GPUs it could never use): short ends at 10 + 20 = 30, the long research job
    resumes and ends at 500 + 20 = 520, prod's is untouched at 1,000."""
    table = jobs(
        ("prod-long", 0, 4, 1000.0),
        ("res-long", 0, 4, 500.0),
        ("res-short", 10, 4, 20.0),
        vc=["prod", "research", "research"],
    )
    result = dlsched.simulate(table, cluster(**VC_CLUSTER), policy="srtf")
    assert by_id(result)["finish_time"].to_dict() == {
        "prod-long": 1000.0,
        "res-long": 520.0,
        "res-short": 30.0,
    }
    assert by_id(result)["preemptions"].to_dict() == {"prod-long": 0, "res-long": 1, "res-short": 0}
