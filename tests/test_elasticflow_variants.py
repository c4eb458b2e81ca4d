"""Figure 9's variants: EDF with the artifact's admission control (`elasticflow_edf_ac`) and
ElasticFlow without admission control (``elasticflow`` with ``unmet="admit"``)."""

import pytest

import dlsched
from dlsched.traces.transforms import make_elastic

HEADER = "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration\n"
CLUSTER = "elasticflow-n8g8-a100"


def _run(tmp_path, rows, policy, **params):
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "".join(rows))
    work = make_elastic(dlsched.load_trace(trace), min_gpus=1, max_gpus=64)
    return dlsched.simulate(work, CLUSTER, policy=policy, throughput="elasticflow", **params)


def _solo_time(tmp_path, iterations):
    """How long the job takes alone under EDF: all 64 GPUs from t = 0, no overheads."""
    result = _run(tmp_path, [f"a,0,{iterations},resnet50,10000000,64,1,10\n"], "elasticflow_edf")
    return float(result.jobs["finish_time"].iloc[0])


def test_edf_admission_declines_the_job_that_would_make_an_admitted_one_late(tmp_path):
    """A (deadline 1.1 T, T its time alone on the whole cluster) comes first; B, the same
    work with a deadline just before A's, would go first in EDF's plan and push A to 2 T:
    B is declined and A meets its deadline. Plain EDF admits both, runs B first (earlier
    deadline, all 64 GPUs) and A misses."""
    t = _solo_time(tmp_path, 200000)
    rows = [
        f"a,0,200000,resnet50,{int(1.1 * t)},64,1,10\n",
        f"b,0,200000,resnet50,{int(1.1 * t) - 1},64,1,10\n",
    ]
    with_ac = _run(tmp_path, rows, "elasticflow_edf_ac")
    jobs = with_ac.jobs.set_index("job_id")
    assert jobs.loc["b", "admission"] == "decline"
    assert jobs.loc["a", "admission"] == "accept" and bool(jobs.loc["a", "deadline_met"])
    assert with_ac.summary()["deadline_satisfactory_ratio"] == 0.5
    assert "1 admitted job(s) miss their deadlines" in jobs.loc["b", "admission_reason"]
    plain = _run(tmp_path, rows, "elasticflow_edf").jobs.set_index("job_id")
    assert bool(plain.loc["b", "deadline_met"]) and not bool(plain.loc["a", "deadline_met"])
    assert plain.loc["a", "finish_time"] == pytest.approx(2 * t, rel=1e-6)


def test_edf_admission_declines_a_job_that_cannot_meet_its_deadline_alone(tmp_path):
    t = _solo_time(tmp_path, 200000)
    result = _run(tmp_path, [f"a,0,200000,resnet50,{int(0.5 * t)},64,1,10\n"], "elasticflow_edf_ac")
    assert result.jobs["admission"].tolist() == ["decline"]
    assert "cannot be met" in result.jobs["admission_reason"].iloc[0]
    assert result.summary()["jobs_declined"] == 1


def test_elasticflow_without_admission_control_keeps_the_deadline_and_misses(tmp_path):
    """An infeasible job is accepted with its deadline (unmet='admit'), runs and misses;
    with the default it is declined."""
    t = _solo_time(tmp_path, 200000)
    rows = [f"a,0,200000,resnet50,{int(0.5 * t)},64,1,10\n"]
    admitted = _run(tmp_path, rows, "elasticflow", unmet="admit")
    assert admitted.jobs["admission"].tolist() == ["accept"]
    assert "unmet='admit'" in admitted.jobs["admission_reason"].iloc[0]
    assert admitted.summary()["jobs_declined"] == 0
    assert not bool(admitted.jobs["deadline_met"].iloc[0])
    assert admitted.jobs["finish_time"].notna().all()
    declined = _run(tmp_path, rows, "elasticflow")
    assert declined.jobs["admission"].tolist() == ["decline"]


def test_unmet_must_be_one_of_the_three():
    with pytest.raises(ValueError, match="unmet must be one of"):
        dlsched.policies.get("elasticflow", unmet="maybe")


def _spread_stints(result, cluster):
    """(job, GPUs) of each stint placed on more nodes than its GPU count needs."""
    node_of = cluster.gpu_node
    per_node = cluster.max_gpus_per_node()
    events = result.events
    stints = events[events["gpus"].astype(str).str.len() > 0]
    out = []
    for job, gpus in zip(stints["job_id"], stints["gpus"], strict=True):
        ids = [int(g) for g in str(gpus).split(",")]
        if len({node_of[g] for g in ids}) > max(1, -(-len(ids) // per_node)):
            out.append((job, ids))
    return out


def _cluster10(policy="elasticflow"):
    from dlsched.reproduce import elasticflow_a100 as a100

    setup = a100.FIG8B[9]
    trace = dlsched.load_trace(a100.data_path(setup.trace))
    work = make_elastic(trace, min_gpus=1, max_gpus=64)
    cluster = dlsched.load_cluster(setup.cluster)
    result = dlsched.simulate(work, cluster, policy=policy, throughput="elasticflow")
    return result, cluster


def test_elasticflow_never_spreads_a_job_over_more_nodes_than_it_needs():
    """Cluster 10 on 32 x 8 A100: placed around the jobs that keep their GPUs, 47 changed
    jobs would straddle nodes; the re-packing puts every stint on as few nodes as its count
    needs (power-of-two counts on 8-GPU nodes)."""
    result, cluster = _cluster10()
    assert _spread_stints(result, cluster) == []
    assert result.summary()["deadline_satisfactory_ratio"] > 0.95


@pytest.mark.slow
def test_without_the_repacking_jobs_would_straddle_nodes(monkeypatch):
    """The check above can fail: with the re-packing off, some stints straddle nodes."""
    from dlsched.policies.elasticflow import ElasticFlow

    monkeypatch.setattr(ElasticFlow, "_repack", lambda self, view, counts: False)
    monkeypatch.setattr(ElasticFlow, "_spread", lambda self, view, job, n: False)
    result, cluster = _cluster10()
    assert _spread_stints(result, cluster)
