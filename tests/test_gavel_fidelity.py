"""Gavel's continuous-single experiment: one full-size point on Gavel's own jobs, and the
low-load shape of the authors' figure on a reduced cluster.

The full-size point: 36 V100 + 36 P100 + 36 K80, jobs 4000–4999 of the trace Gavel's
simulator generates with seed 0 at 2.0 jobs/h (`gavel_generated`), the authors' figure
values next to ours: agnostic FIFO 18.32 h, LAS-perf 16.95 h (we get 18.46 and 16.92 h on
the jobs of the authors' job-table order, 18.26 and 17.01 h with the released one; asserted
within 3%). Same jobs, same mechanism, so the two simulators should agree to the
noise of their differences (the authors' shuffled type order comes from Python's `random`,
ours, with no policy seed, from numpy).

The full reproduction (108 GPUs, jobs 4000–4999, every input rate) is
`benchmarks/gavel_continuous_single.py`; it takes minutes per point. Here the cluster is a
ninth of it (4 V100 + 4 P100 + 4 K80), the input rate a ninth of 1.2 jobs/h (the same
load), and jobs 10–44 are measured, with the benchmark's independent job generator
(`trace="ours"`, not the replay of Gavel's, which is for Gavel's cluster) and seed 0.
At that load jobs rarely wait, so the authors' averages are set by where each policy runs
a job alone: Gavel's mechanism puts every job on the first type in its order (V100 for the
heterogeneity-aware policies, and for its agnostic FIFO, whose type choice falls on V100),
`fifo_perf` on each job's fastest type, and the agnostic LAS on a type reshuffled each
round, i.e. a third of the time on each. The authors' figure at 1.2 jobs/h: FIFO 17.70 h,
FIFO-perf 15.42 h, LAS 23.51 h, LAS-perf 17.67 h, so relative to LAS-perf 1.00, 0.87,
1.33, 1.00. Tolerances: ±0.15 on each ratio — 35 jobs drawn from a mix of 26 models with
durations spread over three decades put a spread of that order on small-sample ratios
(workload seeds 0, 1 and 2 give 0.99/0.85/1.23, 1.11/0.88/1.27 and 1.09/0.96/1.41), while
the mechanisms' effects (0.87 and 1.33) stand clear of 1 by more than that. The agnostic
LAS's type shuffle comes from the run's seed (0 here), a numpy permutation; a policy `seed`
would draw Gavel's own shuffle (`random.Random(seed + 5)`) instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import dlsched

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import gavel_continuous_single as experiment  # noqa: E402

pytestmark = pytest.mark.slow  # fidelity against the authors' figure: 23 s

POLICIES = ("gavel_fifo", "fifo_perf", "max_min_fairness", "max_min_fairness_perf")
AUTHORS_AT_1_2 = {
    "gavel_fifo": 17.70 / 17.67,
    "fifo_perf": 15.42 / 17.67,
    "max_min_fairness": 23.51 / 17.67,
    "max_min_fairness_perf": 1.0,
}


@pytest.mark.parametrize(
    ("policy", "authors"), [("gavel_fifo", 18.32), ("max_min_fairness_perf", 16.95)]
)
def test_full_size_point_on_gavels_jobs_matches_the_authors(policy, authors):
    point = experiment.run_point(policy, 2.0, tail_jobs=1000, trace="gavel")
    assert point["arrivals_outlast_window"]
    assert point["avg_jct_h"] == pytest.approx(authors, rel=0.03)


@pytest.fixture(scope="module")
def relative_jct() -> dict[str, float]:
    ninth = dlsched.Cluster.from_dict(
        {
            "name": "gavel-12",
            "nodes": [
                {"gpu_type": t, "count": 1, "gpus_per_node": 4} for t in ("V100", "P100", "K80")
            ],
        }
    )
    jct = {
        policy: experiment.run_point(
            policy, 1.2 / 9, (10, 45), tail_jobs=5, cluster=ninth, trace="ours"
        )["avg_jct_h"]
        for policy in POLICIES
    }
    return {policy: value / jct["max_min_fairness_perf"] for policy, value in jct.items()}


@pytest.mark.parametrize("policy", POLICIES[:3])
def test_low_load_jct_relative_to_las_perf_matches_the_authors(relative_jct, policy):
    """Average JCT relative to LAS-perf within ±0.15 of the authors' at 1.2 jobs/h."""
    assert relative_jct[policy] == pytest.approx(AUTHORS_AT_1_2[policy], abs=0.15)


def test_agnostic_las_is_slower_than_heterogeneity_aware_las_at_low_load(relative_jct):
    """Time spread over all three types costs the agnostic LAS ≥ 15% (authors: 33%)."""
    assert relative_jct["max_min_fairness"] > 1.15
