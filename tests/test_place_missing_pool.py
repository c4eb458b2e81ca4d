"""`view.place` of a fractional job with CPU/memory demands on a GPU type its VC owns none of:
no GPU for it there (None), not a KeyError (found by the policy property test through
`elasticflow`, which asks for the cluster's largest type by name)."""

import pandas as pd

import dlsched
from dlsched.cluster import Cluster
from dlsched.policies.base import BasePolicy


class _AskV100(BasePolicy):
    """Places every waiting job on V100s only, recording what `view.place` answered."""

    name = "ask-v100"

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[object] = []

    def schedule(self, view):
        alloc = view.allocation()
        for job in list(view.pending.values()):
            gpus = view.place(job, gpu_type="V100", strategy="best_fit")
            self.answers.append(gpus)
            if gpus is not None:
                alloc[job] = gpus
        return alloc


def test_a_fractional_job_of_a_vc_without_that_type_gets_none():
    cluster = Cluster.from_dict(
        {
            "name": "two-types",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": 2, "cpus": 8, "memory_gb": 64},
                {"gpu_type": "P100", "count": 1, "gpus_per_node": 2, "cpus": 8, "memory_gb": 64},
            ],
            "vcs": [{"name": "a", "nodes": 1, "gpu_type": "P100"}],
        }
    )
    jobs = pd.DataFrame(
        [("p", 0.0, 1, 10.0, "a", 500, 1024)],
        columns=["job_id", "submit_time", "num_gpus", "duration", "vc", "gpu_milli", "memory_mib"],
    )
    policy = _AskV100()
    result = dlsched.simulate(jobs, cluster, policy=policy, max_time_s=100.0)
    assert policy.answers and all(answer is None for answer in policy.answers)
    assert result.jobs["status"].tolist() == ["unfinished"]
