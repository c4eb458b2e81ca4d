"""Elastic jobs: a policy may change a running job's GPU count within its bounds, and the
engine charges the re-scaling overhead; overhead presets by size (Helios) and model (Sia)."""

import pandas as pd
import pytest
from truths import Linear

import dlsched
from dlsched.errors import SchedulingError, TraceError
from dlsched.overheads import OverheadModel, make_overheads


class GrowAt:
    """Starts every job on its `num_gpus`, then at `when` gives job `job` `n` GPUs."""

    name, round_s = "grow-at", None

    def __init__(self, job, when, n):
        self.job, self.when, self.n = job, when, n

    def schedule(self, view):
        alloc = view.allocation()
        for state in sorted(view.pending.values(), key=lambda s: s.spec.index):
            gpus = view.place(state, n_gpus=state.spec.gpu_range[0])
            if gpus:
                alloc[state] = gpus
        view.wake_at(self.when)
        if view.now >= self.when and self.job in view.running:
            state = view.running[self.job]
            if len(state.gpus) != self.n:
                del alloc[state]
                alloc[state] = view.place(state, n_gpus=self.n)
        return alloc


def cluster(n=4):
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "gpus_per_node": n}]}
    )


def elastic_job(**extra):
    row = {
        "job_id": ["e"],
        "submit_time": [0.0],
        "num_gpus": [1],
        "total_steps": [100.0],
        "min_gpus": [1],
        "max_gpus": [4],
    }
    row.update({k: [v] for k, v in extra.items()})
    return pd.DataFrame(row)


def test_growing_a_job_credits_progress_and_charges_the_rescale_overhead():
    """1 GPU for 10 s (10 steps), re-scaled to 2 GPUs at t=10 with a 5 s overhead, then
    2 steps/s for the remaining 90 steps: finish at 10 + 5 + 45 = 60 s. GPU-seconds:
    1 × 10 + 2 × 50 = 110; the job held GPUs for all 60 s, so it never pended."""
    overheads = OverheadModel(restart_s=100.0, migration_s=100.0, rescale_s=5.0)
    result = dlsched.simulate(
        elastic_job(), cluster(), GrowAt("e", 10.0, 2), throughput=Linear(), overheads=overheads
    )
    job = result.jobs.iloc[0]
    assert job["finish_time"] == pytest.approx(60.0)
    assert job["gpu_seconds"] == pytest.approx(110.0)
    assert job["rescales"] == 1 and job["migrations"] == 0 and job["preemptions"] == 0
    assert job["pending_s"] == pytest.approx(0.0)
    rescale = result.events[result.events["event"] == "rescale"].iloc[0]
    assert (rescale["time"], rescale["num_gpus"], rescale["overhead_s"]) == (10.0, 2, 5.0)
    assert result.summary()["rescales"] == 1


def test_rescale_cost_defaults_to_the_migration_cost():
    overheads = OverheadModel(restart_s=3.0, migration_s=7.0)
    result = dlsched.simulate(
        elastic_job(), cluster(), GrowAt("e", 10.0, 2), throughput=Linear(), overheads=overheads
    )
    assert result.jobs.iloc[0]["finish_time"] == pytest.approx(10.0 + 7.0 + 45.0)


def test_a_count_outside_the_bounds_is_refused():
    with pytest.raises(SchedulingError, match="1 to 2 distinct GPUs"):
        dlsched.simulate(
            elastic_job(max_gpus=2), cluster(), GrowAt("e", 10.0, 3), throughput=Linear()
        )


def test_a_rigid_job_cannot_be_rescaled():
    jobs = elastic_job().drop(columns=["min_gpus", "max_gpus"])
    with pytest.raises(SchedulingError, match="needs 1 distinct GPUs"):
        dlsched.simulate(jobs, cluster(), GrowAt("e", 10.0, 2), throughput=Linear())


def test_an_elastic_job_larger_than_the_cluster_runs_at_its_minimum():
    """Asking for 8 GPUs on a 4-GPU cluster is fine when the job may shrink to 2."""
    jobs = elastic_job(num_gpus=8, min_gpus=2, max_gpus=8)
    result = dlsched.simulate(jobs, cluster(), GrowAt("e", 10.0, 4), throughput=Linear())
    assert result.jobs.iloc[0]["status"] == "finished"


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("min_gpus", 2, "min_gpus is above num_gpus"),
        ("max_gpus", 0, "max_gpus must be a whole number >= 1"),
        ("min_gpus", 1.5, "min_gpus must be a whole number"),
    ],
)
def test_bad_elastic_bounds_name_the_row_and_field(tmp_path, column, value, message):
    path = tmp_path / "jobs.csv"
    elastic_job(**{column: value}).to_csv(path, index=False)
    with pytest.raises(TraceError, match=message) as error:
        dlsched.load_trace(path)
    assert (error.value.field, error.value.row) == (column, 2)


def test_elastic_bounds_survive_loading(tmp_path):
    path = tmp_path / "jobs.csv"
    elastic_job().to_csv(path, index=False)
    assert dlsched.load_trace(path).jobs[["min_gpus", "max_gpus"]].iloc[0].tolist() == [1, 4]
    elastic_job().drop(columns=["min_gpus", "max_gpus"]).to_csv(path, index=False)
    assert "min_gpus" not in dlsched.load_trace(path).jobs


def _spec(num_gpus=1, model=None):
    from dlsched.jobs import JobSpec

    return JobSpec(
        index=0, job_id=0, submit_time=0.0, num_gpus=num_gpus, total_steps=1.0, model=model
    )


@pytest.mark.parametrize(
    ("gpus", "seconds"), [(1, 7.0), (2, 30.0), (8, 30.0), (9, 60.0), (512, 60.0)]
)
def test_helios_preset_charges_by_gpu_count(gpus, seconds):
    helios = make_overheads("helios")
    assert helios.restart(_spec(gpus)) == seconds
    assert helios.migration(_spec(gpus)) == seconds


@pytest.mark.parametrize(
    ("model", "seconds"),
    [("bert", 120.0), ("ImageNet", 250.0), ("cifar10", 50.0), ("gpt", 30.0), (None, 30.0)],
)
def test_sia_preset_charges_by_model(model, seconds):
    assert make_overheads("sia").restart(_spec(model=model)) == seconds


def test_bad_tiers_are_refused():
    with pytest.raises(ValueError, match="increasing"):
        OverheadModel(restart_by_gpus=((8, 30.0), (1, 7.0)))


def two_jobs(tmp_path):
    path = tmp_path / "two.csv"
    pd.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 1.0], "num_gpus": [1, 4], "duration": [10.0, 10.0]}
    ).to_csv(path, index=False)
    return dlsched.load_trace(path)


def test_make_elastic_sets_bounds_and_is_recorded(tmp_path):
    from dlsched.traces.transforms import make_elastic

    work = make_elastic(two_jobs(tmp_path), min_gpus=2, max_factor=2.0)
    assert work.jobs["min_gpus"].tolist() == [1, 2] and work.jobs["max_gpus"].tolist() == [2, 8]
    assert work.provenance["transforms"][-1]["name"] == "make_elastic"


def test_experiment_transforms_include_deadlines_and_elastic(tmp_path):
    from dlsched.experiments.transforms import apply_transforms

    work = apply_transforms(
        two_jobs(tmp_path),
        [
            {"name": "deadlines", "low": 1.5, "high": 1.5, "seed": 0},
            {"name": "elastic", "min_gpus": 1, "max_factor": 1.0},
        ],
    )
    assert work.jobs["deadline"].tolist() == [15.0, 16.0]
    assert work.jobs["max_gpus"].tolist() == [1, 4]


def test_a_policy_default_overheads_apply_unless_the_user_gives_some():
    policy = GrowAt("e", 10.0, 2)
    policy.default_overheads = OverheadModel(rescale_s=5.0)
    result = dlsched.simulate(elastic_job(), cluster(), policy, throughput=Linear())
    assert result.jobs.iloc[0]["finish_time"] == pytest.approx(60.0)
    result = dlsched.simulate(
        elastic_job(), cluster(), policy, throughput=Linear(), overheads="none"
    )
    assert result.jobs.iloc[0]["finish_time"] == pytest.approx(10.0 + 45.0)
