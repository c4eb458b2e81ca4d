"""The themis policy: finish-time-fair partial auctions (NSDI '20) and the ElasticFlow
artifact's Themis."""

import math
from pathlib import Path

import pandas as pd
import pytest

import dlsched
from dlsched.policies.themis import Themis, _nash_welfare

CLUSTER = {
    "name": "four",
    "gpu_types": {"V100": {"cost_per_hour": 3.0}},
    "nodes": [{"name": "n", "gpu_type": "V100", "count": 1, "gpus_per_node": 4}],
}


def _three_jobs() -> pd.DataFrame:
    """A and B: 2 GPUs for 1000 s; C: 4 GPUs for 500 s; all at t = 0, on 4 GPUs."""
    return pd.DataFrame(
        {
            "job_id": ["A", "B", "C"],
            "submit_time": [0.0, 0.0, 0.0],
            "num_gpus": [2, 2, 4],
            "duration": [1000.0, 1000.0, 500.0],
        }
    )


def _times(result, column: str) -> dict[str, float]:
    jobs = result.jobs.set_index("job_id")
    return {job: float(jobs.loc[job, column]) for job in "ABC"}


def test_round_one_goes_to_the_nash_welfare_optimum():
    """f = 0 offers all 4 GPUs to A, B, C. N = 3, share 4/3 GPUs: T_id = 1500 s for each.
    Over the 600 s lease, ρ(nothing) = (600 + 1500)/1500 = 1.4 for all; A (or B) on 2 GPUs:
    ρ = (600 + 400·1.5)/1500 = 0.8, V = 1.75; C on 4: ρ = 500/1500, V = 4.2 > 1.75² = 3.06,
    so C wins the round and runs 0–500 s; then A and B share the 4 GPUs, 500–1500 s."""
    result = dlsched.simulate(_three_jobs(), CLUSTER, "themis", f=0.0, hide=False)
    assert _times(result, "start_time") == {"A": 500.0, "B": 500.0, "C": 0.0}
    assert _times(result, "finish_time") == {"A": 1500.0, "B": 1500.0, "C": 500.0}


def test_f_one_offers_only_to_the_worst_job():
    """f = 1 offers the GPUs to the single worst job. t = 0: all tie at ρ = 1.4, A (first)
    wins its 2 GPUs and the leftover 2 go to the next worst, B. t = 600, the leases expire: A
    and B have 400 s left, ρ = (600 + 600 + 400·1.5)/1500 = 1.2; C has waited, ρ = (600 +
    600 + 1500)/1500 = 1.8, so C alone is offered the 4 GPUs and runs 600–1100 s; A and B
    resume at 1100 and finish at 1500."""
    result = dlsched.simulate(_three_jobs(), CLUSTER, "themis", f=1.0, hide=False)
    assert _times(result, "start_time") == {"A": 0.0, "B": 0.0, "C": 600.0}
    assert _times(result, "finish_time") == {"A": 1500.0, "B": 1500.0, "C": 1100.0}


def test_partial_allocation_hides_a_contended_bundle_in_expectation():
    """With hiding, C keeps its bundle with probability c = 1·1 / 1.75² ≈ 0.33 (the others'
    product with C over theirs without it); otherwise A and B get the GPUs at t = 0."""
    starts = []
    for seed in range(40):
        result = dlsched.simulate(_three_jobs(), CLUSTER, "themis", f=0.0, seed=seed)
        starts.append(_times(result, "start_time")["C"] == 0.0)
    share = sum(starts) / len(starts)
    assert 0.1 < share < 0.6
    assert any(starts) and not all(starts)


def test_same_seed_same_result():
    """Two runs with one seed (the PA lottery included) give identical tables."""
    a = dlsched.simulate(_three_jobs(), CLUSTER, "themis", f=0.0, seed=7)
    b = dlsched.simulate(_three_jobs(), CLUSTER, "themis", f=0.0, seed=7)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)


def test_nash_welfare_picks_the_best_product_and_the_optimum_without_each_bidder():
    """Three bidders for 4 GPUs: log V of 2 GPUs 0.5, 0.5, of 4 GPUs 1.5: the 4-GPU bundle
    alone wins (1.5 > 1.0); without it, the two 2-GPU bundles (1.0)."""
    bids = [{0: 0.0, 2: 0.5}, {0: 0.0, 2: 0.5}, {0: 0.0, 4: 1.5}]
    bundles, welfare = _nash_welfare(bids, 4)
    assert bundles == [0, 0, 4]
    assert welfare.best == pytest.approx(1.5)
    assert welfare.without(2) == pytest.approx(1.0)
    assert welfare.without(0) == pytest.approx(1.5)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"f": 1.5}, "f"),
        ({"f": "x"}, "f"),
        ({"lease_s": 0}, "lease_s"),
        ({"lease_s": math.inf}, "lease_s"),
        ({"reading": "book"}, "reading"),
        ({"hide": "yes"}, "hide"),
        ({"solver": "gurobi"}, "solver"),
    ],
)
def test_bad_parameters_name_the_field(params, field):
    """Each bad parameter is a ValueError naming it."""
    with pytest.raises(ValueError, match=field):
        Themis(**params)


def test_readings_default_to_their_lease():
    """The paper's 10-minute lease; the artifact's 60 s slot and its overheads."""
    assert Themis().lease_s == 600.0
    artifact = Themis(reading="artifact")
    assert artifact.lease_s == 60.0
    assert getattr(artifact, "default_overheads", None) is not None
    assert getattr(Themis(), "default_overheads", None) is None


def test_artifact_reading_runs_rigid_jobs_to_completion():
    """The artifact's Themis on the three jobs: every job finishes, at its own GPU count."""
    result = dlsched.simulate(_three_jobs(), CLUSTER, "themis", reading="artifact")
    assert (result.jobs["status"] == "finished").all()


DATA = Path(__file__).parent / "data" / "elasticflow"
ARTIFACT_RATIO = 61 / 195  # the artifact's own themis run on these inputs = published 0.312
TOLERANCE = 0.03


@pytest.mark.slow
def test_figure_8a_artifact_reading_is_near_the_artifacts():
    """Figure 8(a), 195 rigid jobs on 16 x 4 T4: within 0.03 of the artifact's 0.312."""
    work = dlsched.load_trace(DATA / "elasticVpollux_e.csv")
    with pytest.warns(RuntimeWarning):  # a few solves fall back to HiGHS
        result = dlsched.simulate(
            work,
            "elasticflow-n16g4-t4",
            policy="themis",
            throughput="elasticflow",
            reading="artifact",
        )
    ratio = result.summary()["deadline_satisfactory_ratio"]
    assert abs(ratio - ARTIFACT_RATIO) <= TOLERANCE


def test_an_elastic_job_too_big_for_the_hosts_memory_runs_on_fewer_gpus():
    """One node of 4 GPUs and 16 GiB of host memory; an elastic job of 1–3 GPUs demanding 16
    GiB per GPU fits only on 1 GPU. The auction offers it 3 (the most it may take); it
    takes the largest level that fits, 1 GPU, for its 100 s alone (it used to wait forever)."""
    cluster = {
        "name": "mem",
        "gpu_types": {"V100": {"cost_per_hour": 3.0}},
        "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4, "host_memory_gb": 16}],
    }
    jobs = pd.DataFrame(
        {
            "job_id": ["E"],
            "submit_time": [0.0],
            "num_gpus": [1],
            "min_gpus": [1],
            "max_gpus": [3],
            "duration": [100.0],
            "memory_mib": [16384],
        }
    )
    result = dlsched.simulate(jobs, cluster, "themis", throughput="duration")
    row = result.jobs.iloc[0]
    assert row["status"] == "finished"
    assert row["finish_time"] == pytest.approx(100.0)
