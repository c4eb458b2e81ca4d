"""pytest-benchmark suite: policy quality — the paper-level orderings, with the numbers.

Not part of the default test run (pytest's testpaths is tests/). Each benchmark replays one
policy on a fixed workload, records avg JCT / makespan / queueing / deadline metrics in
``extra_info`` (saved with ``--benchmark-autosave``, shown by ``--benchmark-compare``), and
asserts the number of jobs and events so the workload cannot silently change. The ordering
tests assert what the papers report.

    python -m pytest benchmarks/test_policy_quality.py --benchmark-autosave
    python -m pytest benchmarks/test_policy_quality.py --benchmark-compare

The overloaded trace is ``../shared/anchors/tiresias/derived/philly_like_480_r3p0.csv``
(480 synthetic Philly-like jobs at 3x the arrival rate, made for dlsched's research; see
that folder's README); its tests are skipped where the shared folder is absent.
"""

from pathlib import Path

import pytest

import dlsched
from dlsched import policies
from dlsched.bundled import bundled_trace

pytestmark = pytest.mark.benchmark_suite

ANCHORS = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "tiresias"
OVERLOADED = ANCHORS / "derived" / "philly_like_480_r3p0.csv"

# label: (policy, params, avg JCT and makespan of the Tiresias authors' simulator on this
# trace and a 60-GPU cluster, scheme count — reference_results.csv; None where it has none)
CASES = {
    "fifo": ("fifo", {}, (240761.9, 1346175.0)),
    "fifo-backfill": ("fifo", {"backfill": "greedy"}, (132737.9, 1211314.0)),
    "sjf": ("sjf", {}, None),
    "srtf": ("srtf", {}, (87379.2, 1383233.0)),
    "tiresias": ("tiresias", {}, None),
}
_summaries: dict[tuple[str, str], dict] = {}


def _skip_unregistered(policy: str) -> None:
    if policy not in policies.names():
        pytest.skip(f"policy {policy!r} is not registered in this checkout")


@pytest.fixture(scope="module")
def overloaded():
    if not OVERLOADED.exists():
        pytest.skip("../shared/anchors not present")
    return (dlsched.load_trace(OVERLOADED, format="tiresias"), dlsched.load_cluster("tiresias-60"))


@pytest.fixture(scope="module")
def tiresias_60_on_8():
    cluster = dlsched.Cluster.from_dict(
        {"name": "n2g4", "nodes": [{"gpu_type": "P100", "count": 2, "gpus_per_node": 4}]}
    )
    return dlsched.load_trace(bundled_trace("tiresias_60_job.csv")), cluster


def _record(benchmark, summary: dict, reference) -> None:
    keys = (
        "avg_jct",
        "p95_jct",
        "makespan",
        "avg_queueing_delay",
        "utilization",
        "preemptions",
        "events",
        "deadline_satisfaction",
        "total_tardiness",
    )
    benchmark.extra_info.update({k: summary[k] for k in keys if k in summary})
    if reference:
        benchmark.extra_info.update(reference_avg_jct=reference[0], reference_makespan=reference[1])


def _summary(trace: str, label: str, workload, cluster) -> dict:
    if (trace, label) not in _summaries:
        policy, params, _ = CASES[label]
        _skip_unregistered(policy)
        _summaries[trace, label] = dlsched.simulate(
            workload, cluster, policy=policy, audit=False, **params
        ).summary()
    return _summaries[trace, label]


@pytest.mark.parametrize("label", list(CASES))
def test_overloaded_philly_like_480_on_60_gpus(benchmark, overloaded, label):
    """480 jobs arriving at 3x rate on the Tiresias testbed shape (15 x 4 P100)."""
    policy, params, reference = CASES[label]
    _skip_unregistered(policy)
    workload, cluster = overloaded
    result = benchmark.pedantic(
        lambda: dlsched.simulate(workload, cluster, policy=policy, audit=False, **params),
        rounds=3,
        iterations=1,
    )
    summary = _summaries["overloaded", label] = result.summary()
    _record(benchmark, summary, reference)
    assert summary["jobs_completed"] == 480
    assert summary["events"] >= 3 * 480
    if reference:
        assert summary["avg_jct"] == pytest.approx(reference[0], rel=1e-2)


def test_overloaded_orderings(overloaded):
    """SRTF <= Tiresias <= FIFO and SRTF <= FIFO greedy backfill <= FIFO in average JCT, as
    in Tiresias (NSDI 2019) §6 and the authors' simulator."""
    avg = {
        label: _summary("overloaded", label, *overloaded)["avg_jct"]
        for label in ("fifo", "fifo-backfill", "srtf")
    }
    assert avg["srtf"] <= avg["fifo-backfill"] <= avg["fifo"]
    if "tiresias" in policies.names():
        tiresias = _summary("overloaded", "tiresias", *overloaded)["avg_jct"]
        assert avg["srtf"] <= tiresias <= avg["fifo"]


@pytest.mark.parametrize("label", ["fifo", "fifo-backfill", "srtf"])
def test_tiresias_60_job_on_8_gpus(benchmark, tiresias_60_on_8, label):
    """The bundled 60-job trace on 2 x 4 GPUs (always available): exact paper numbers."""
    reference = {
        "fifo": (1556.5, 5747.0),
        "fifo-backfill": (715.3, 4806.0),
        "srtf": (519.9, 4901.0),
    }[label]
    policy, params, _ = CASES[label]
    workload, cluster = tiresias_60_on_8
    result = benchmark(
        lambda: dlsched.simulate(workload, cluster, policy=policy, audit=False, **params)
    )
    summary = result.summary()
    _record(benchmark, summary, reference)
    assert summary["jobs_completed"] == 60
    assert summary["avg_jct"] == pytest.approx(reference[0], abs=0.05)
    assert summary["makespan"] == pytest.approx(reference[1])
