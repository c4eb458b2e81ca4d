"""Gavel's agnostic LAS and the types a job cannot run on (`sees_all_types`)."""

from __future__ import annotations

import pandas as pd
import pytest

import dlsched
from dlsched.policies.gavel.policies import MaxMinFairness

RESNET18_64 = "ResNet-18 (batch size 64)"


def v100_k80(v100: int, k80: int) -> dlsched.Cluster:
    """One node of `v100` V100s and one of `k80` K80s."""
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [
                {"gpu_type": "V100", "count": 1, "gpus_per_node": v100},
                {"gpu_type": "K80", "count": 1, "gpus_per_node": k80},
            ],
        }
    )


class _RecordingLas(MaxMinFairness):
    """Agnostic LAS that keeps each solve's X by job id."""

    def solve(self, problem, jobs, view):
        x = super().solve(problem, jobs, view)
        types = [t.lower() for t in view.gpu_types]
        self.xs.append(
            {
                job.job_id: dict(zip(types, row, strict=True))
                for job, row in zip(jobs, x, strict=True)
            }
        )
        return x


@pytest.mark.parametrize("sees_all", [False, True])
def test_agnostic_las_sees_a_type_the_job_cannot_run_on_only_when_asked(sees_all):
    """ResNet-50 (batch 128) on 8 GPUs has no K80 throughput in Gavel's table: the agnostic
    LP gives it K80 time only with `sees_all_types` (Gavel's), and it never runs there."""
    jobs = pd.DataFrame(
        [(1, 0.0, 8, 20_000.0, "ResNet-50 (batch size 128)"), (2, 0.0, 8, 20_000.0, RESNET18_64)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    policy = _RecordingLas(sees_all_types=sees_all)
    policy.xs = []
    result = dlsched.simulate(jobs, v100_k80(8, 8), policy=policy, throughput="gavel")
    assert bool(policy.xs[0][1]["k80"] > 0.1) is sees_all
    assert result.jobs.set_index("job_id").loc[1, "gpu_seconds_K80"] == 0.0
    assert result.summary()["jobs_completed"] == 2


def test_sees_all_types_is_refused_on_the_heterogeneity_aware_policies():
    """The aware LP sees measured throughputs: sees_all_types there is a ConfigError."""
    import pytest

    from dlsched import policies
    from dlsched.errors import ConfigError

    for name in ("max_min_fairness_perf", "finish_time_fairness_perf"):
        with pytest.raises(ConfigError, match="agnostic policies only"):
            policies.get(name, sees_all_types=True)
    assert policies.get("max_min_fairness", sees_all_types=True).sees_all_types
