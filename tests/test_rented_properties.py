"""Properties of runs on rented clusters, over random small workloads and catalogues."""

from __future__ import annotations

import math

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.cluster import Cluster
from dlsched.provision import get as get_provisioner


@st.composite
def rented_runs(draw: st.DrawFn) -> tuple[pd.DataFrame, Cluster, str, float, str]:
    """A private node or none, 1-2 instance types, 1-8 jobs, a policy and a billing."""
    private = draw(st.integers(0, 4))
    kinds = {}
    for i in range(draw(st.integers(1, 2))):
        kinds[f"t{i}"] = {
            "gpu_type": "V100",
            "gpus": draw(st.sampled_from([1, 2, 4])),
            "price_per_hour": draw(st.sampled_from([0.0, 0.9, 3.06, 12.5])),
            "startup_s": draw(st.sampled_from([0.0, 30.0, 200.0])),
        }
    data: dict = {"name": "prop", "instance_types": kinds, "limits": {k: 4 for k in kinds}}
    data["billing"] = draw(st.sampled_from(["second", "hour"]))
    if private:
        data["nodes"] = [{"gpu_type": "V100", "count": 1, "gpus_per_node": private}]
    cluster = Cluster.from_dict(data, "prop.yaml")
    largest = max(k["gpus"] for k in kinds.values())
    n = draw(st.integers(1, 8))
    jobs = pd.DataFrame(
        {
            "job_id": range(n),
            "submit_time": sorted(draw(st.lists(st.integers(0, 500), min_size=n, max_size=n))),
            "num_gpus": draw(st.lists(st.integers(1, largest), min_size=n, max_size=n)),
            "duration": draw(st.lists(st.integers(1, 1000), min_size=n, max_size=n)),
        }
    )
    policy = draw(st.sampled_from(["fifo", "srtf", "sjf", "tiresias"]))
    idle = draw(st.sampled_from([0.0, 50.0, 600.0]))
    return jobs, cluster, policy, idle, data["billing"]


def _nodes_of(gpus: str, cluster: Cluster) -> set[int]:
    return {cluster.gpu_node[int(g)] for g in str(gpus).split(",") if g != ""}


@settings(max_examples=25, deadline=None)
@given(rented_runs())
def test_rented_runs_bill_what_they_held_and_never_run_on_absent_nodes(run):
    """Audited: no job runs on an absent node (the auditor, and each placement's time lies
    inside an acquisition of its node); every acquisition is released; the cost is >= 0 and
    equals the hand formula over the recorded intervals."""
    jobs, cluster, policy, idle, billing = run
    provisioner = get_provisioner("on_demand", idle_release_s=idle)
    result = dlsched.simulate(jobs, cluster, policy, provisioner=provisioner, audit=True)
    rented = result.meta["rented"]
    node_type = cluster.rented.node_type
    kinds = cluster.rented.instance_types
    expected = 0.0
    for row in rented["instances"]:
        assert row["released_s"] is not None
        # (ready_s None: released while still starting)
        assert row["ready_s"] is None or row["acquired_s"] <= row["ready_s"] <= row["released_s"]
        held_s = row["released_s"] - row["acquired_s"]
        assert 0 <= row["idle_s"] <= held_s + 1e-9
        price = kinds[node_type[row["node"]]].price_per_hour
        expected += (
            math.ceil(held_s / 3600 - 1e-12) * price if billing == "hour" else held_s * price / 3600
        )
    summary = result.summary()
    assert summary["rented_cost"] >= 0
    assert math.isclose(summary["rented_cost"], expected, rel_tol=1e-12, abs_tol=1e-12)
    placed = result.events[result.events["event"].isin(["start", "restart", "migrate"])]
    for time, gpus in zip(placed["time"], placed["gpus"], strict=True):
        for node in _nodes_of(gpus, cluster) & set(node_type):
            assert any(
                r["node"] == node
                and r["ready_s"] is not None
                and r["ready_s"] <= time <= r["released_s"]
                for r in rented["instances"]
            ), f"a job was placed on absent node {node} at {time}"
    assert summary["jobs_completed"] + summary["jobs_unfinished"] == len(jobs)
