"""Tiresias' placement: which jobs wait for consolidation, and that they hold no one back."""

import warnings

import pandas as pd

import dlsched

UNEVEN = {
    "name": "uneven",
    "nodes": [
        {"gpu_type": "P100", "count": 1, "gpus_per_node": 4},
        {"gpu_type": "P100", "count": 2, "gpus_per_node": 1},
    ],
}


def _two_jobs(model: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "job_id": [0, 1],
            "submit_time": [0.0, 0.0],
            "num_gpus": [6, 1],
            "duration": [10.0, 10.0],
            "model": [model, model],
        }
    )


def test_a_job_that_cannot_be_consolidated_does_not_hold_back_the_others():
    """A 6-GPU job that YARN placement can never place (nodes of 4+1+1) stays waiting; the
    1-GPU job behind it starts at once on the GPUs nobody uses."""
    for policy in ("tiresias", "tiresias-gittins"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the 6-GPU job never finishes
            result = dlsched.simulate(
                _two_jobs("resnet50"), dlsched.Cluster.from_dict(UNEVEN), policy, placement="yarn"
            )
        jobs = result.jobs.set_index("job_id")
        assert jobs.at[1, "start_time"] == 0.0 and jobs.at[1, "status"] == "finished"
        assert jobs.at[0, "status"] != "finished"


def test_a_large_tensor_model_spreads_when_spreading_costs_nothing():
    """Under the `duration` model (spreading costs nothing) a VGG job is not placement-
    sensitive: it spreads over 4+1+1 GPUs rather than wait for a consolidation that never
    comes."""
    result = dlsched.simulate(_two_jobs("VGG16"), dlsched.Cluster.from_dict(UNEVEN), "tiresias")
    jobs = result.jobs.set_index("job_id")
    assert (jobs["status"] == "finished").all()
    assert jobs.at[0, "start_time"] == 0.0
