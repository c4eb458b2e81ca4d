"""ElasticFlow's admission control on a three-job trace worked out by hand.

One node of 4 T4, three CIFAR-10 jobs (global batch 4096) submitted at 0 with deadlines at
600 s (ten 60 s slots). The artifact's T4 rates: 0.3563 it/s on 1 GPU (21.4 iterations a
slot, 213.8 in ten slots), 0.5971 on 2 (35.8 a slot), 1.2660 on 4 (76.0 a slot).

- A (300 iterations): 1 GPU gives 213.8 < 300, so its minimum satisfactory share is 2 GPUs:
  filled backwards from the deadline, 2 GPUs for ⌈300 / 35.8⌉ = 9 slots (slots 1 … 9), laid
  out forwards as 1 GPU in slot 0 (the next smaller level before the earliest slot used) and
  2 from slot 1. Accepted.
- B (300 iterations): the same, on the GPUs A leaves (3 in slot 0, 2 after): accepted.
- C (150 iterations) would fit alone (1 GPU: 213.8 ≥ 150), but beside A and B only slot 0
  (2 GPUs free: 35.8 iterations) and slot 9 (4 free: 76.0) are left: 111.8 < 150 even with
  4 GPUs. Declined.
"""

from pathlib import Path

import dlsched
from dlsched.traces.transforms import make_elastic

HEADER = "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration\n"
CLUSTER = {"name": "t4x4", "nodes": [{"gpu_type": "T4", "count": 1, "gpus_per_node": 4}]}


def _run(tmp_path: Path, rows: list[str], **params):
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "".join(rows))
    work = make_elastic(dlsched.load_trace(trace), min_gpus=1, max_gpus=64)
    return dlsched.simulate(
        work,
        dlsched.Cluster.from_dict(CLUSTER),
        policy=dlsched.policies.get("elasticflow", **params),
        throughput="elasticflow",
    )


THREE = [
    "0,0,300,cifar10,600,4096,1,10\n",
    "1,0,300,cifar10,600,4096,1,10\n",
    "2,0,150,cifar10,600,4096,1,10\n",
]


def test_two_jobs_admitted_the_third_declined(tmp_path):
    result = _run(tmp_path, THREE)
    jobs = result.jobs.sort_values("job_id")
    assert jobs["admission"].tolist() == ["accept", "accept", "decline"]
    reasons = jobs["admission_reason"].tolist()
    assert reasons[0].startswith("minimum satisfactory share 1 GPUs")  # 1 GPU in slot 0
    assert "cannot be met" in reasons[2]
    summary = result.summary()
    assert summary["jobs_accepted"] == 2
    assert summary["jobs_declined"] == 1
    assert summary["deadline_satisfactory_ratio"] == 2 / 3


def test_the_third_job_alone_is_admitted(tmp_path):
    """C fits on its own: it is declined only because A and B hold the GPUs."""
    result = _run(tmp_path, [THREE[2]])
    assert result.jobs["admission"].tolist() == ["accept"]
    assert result.summary()["deadline_satisfactory_ratio"] == 1.0


def test_admission_is_deterministic(tmp_path):
    first = _run(tmp_path, THREE).jobs
    second = _run(tmp_path, THREE).jobs
    assert first["finish_time"].equals(second["finish_time"])
    assert first["admission"].equals(second["admission"])


def test_an_unmet_job_runs_best_effort_and_leaves_no_stale_state(tmp_path):
    """With ``unmet="best_effort"`` C runs without its deadline after A and B, which still
    meet theirs; the policy keeps only the state the engine queued (the one without the
    deadline), so nothing is left planned once every job finished."""
    trace = tmp_path / "t.csv"
    trace.write_text(HEADER + "".join(THREE))
    work = make_elastic(dlsched.load_trace(trace), min_gpus=1, max_gpus=64)
    policy = dlsched.policies.get("elasticflow", unmet="best_effort")
    result = dlsched.simulate(
        work, dlsched.Cluster.from_dict(CLUSTER), policy=policy, throughput="elasticflow"
    )
    jobs = result.jobs.sort_values("job_id")
    assert jobs["admission"].tolist() == ["accept", "accept", "best_effort"]
    assert (jobs["status"] == "finished").all()
    assert (jobs["finish_time"].iloc[:2] <= 600 + 1e-6).all()
    assert result.summary()["jobs_best_effort"] == 1
    assert policy._jobs == []
