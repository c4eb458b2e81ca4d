"""CES (Helios' cluster energy saving) and node power states on fixed clusters.

Known answer (worked out by hand, to the joule): 2 nodes of 1 GPU (active 300 W, idle
50 W, off 5 W per GPU; node 100 W), wake 100 s, shut-down 20 s; job a (1 GPU, 1000 s) at
0, job b (1 GPU, 500 s) at 3000; CES with no buffer.

- t=0: a starts on one node; CES' first check powers the other down (target 1 + 0).
- t=1000: a ends; t=1200 (a check, still the warm-up): the last node is powered down.
- t=3000: b arrives, nothing is on: CES wakes the node off longest; b starts at 3100.
- t=3600: b ends (the makespan: [0, 3600]).

First node: busy 1000 s × 400 W + idle 200 s × 150 W + shut-down 20 s × 150 W + off
2380 s × 5 W = 400000 + 30000 + 3000 + 11900 = 444900 J. Second node: shut-down 20 s ×
150 W + off 2980 s × 5 W + waking 100 s × 400 W + busy 500 s × 400 W = 3000 + 14900 +
40000 + 200000 = 257900 J. Total 702800 J. Without CES: b starts at 3000, makespan 3500:
3500 s × 300 W (both idle) + 1500 busy GPU-s × 250 W = 1425000 J.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.cluster import Cluster
from dlsched.engine.availability import Availability
from dlsched.engine.ledger import Ledger
from dlsched.errors import ConfigError, SchedulingError
from dlsched.provision import get as get_provisioner
from dlsched.provision.ces import CES, pool_buffer

TINY = {
    "name": "tiny",
    "gpu_types": {"V100": {"active_w": 300, "idle_w": 50, "off_w": 5}},
    "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 1, "node_w": 100}],
    "energy": {"wake_s": 100, "sleep_s": 20},
}
JOBS = pd.DataFrame(
    {"job_id": ["a", "b"], "submit_time": [0, 3000], "num_gpus": [1, 1], "duration": [1000, 500]}
)


def _tiny() -> Cluster:
    return Cluster.from_dict(TINY, "tiny.yaml")


def test_known_answer_energy_to_the_joule_with_a_power_down_and_a_wake():
    result = dlsched.simulate(JOBS, _tiny(), "fifo", provisioner=CES(buffer_nodes=0), audit=True)
    summary = result.summary()
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["b", "start_time"] == 3100.0  # it waited the 100 s wake
    assert summary["energy_j"] == pytest.approx(702800.0, abs=1e-6)
    assert summary["wake_events"] == 1
    assert summary["power_down_events"] == 2
    assert summary["powered_off_node_hours"] == pytest.approx((2380 + 2980) / 3600)
    assert summary["mean_nodes_off"] == pytest.approx((2380 + 2980) / 3600)
    assert summary["avg_queueing_delay"] == pytest.approx(50.0)
    base = dlsched.simulate(JOBS, _tiny(), "fifo").summary()
    assert base["energy_j"] == pytest.approx(1425000.0, abs=1e-6)
    assert "wake_events" not in base
    assert base["avg_queueing_delay"] == 0.0


def test_the_power_series_with_power_states_integrates_to_the_energy():
    """The report's power curve of a power-managed run shows the nodes off and waking: its
    integral over the makespan is the run's 702,800 J, not the every-node-on figure."""
    from dlsched.energy import idle_power_w, integrate, power_series

    result = dlsched.simulate(JOBS, _tiny(), "fifo", provisioner=CES(buffer_nodes=0))
    cluster = _tiny()
    states = result.meta["power_states"]
    done = result.jobs
    start, end = float(done["submit_time"].min()), float(done["finish_time"].max())
    with_states = power_series(result.timeline, cluster, states)
    joules = integrate(with_states, idle_power_w(cluster), start, end)
    assert joules == pytest.approx(702800.0, abs=1e-6)
    plain = integrate(power_series(result.timeline, cluster), idle_power_w(cluster), start, end)
    assert plain > joules  # without the states every node would draw its idle power
    assert with_states["power_w"].min() < idle_power_w(cluster)  # a node off


def test_a_wake_during_a_shut_down_starts_when_the_shut_down_ends():
    ledger = Ledger(_tiny())
    availability = Availability(ledger, {0: 100.0, 1: 100.0}, False, sleep_s=20.0)
    assert availability.nodes_in("present") == [0, 1]
    availability.release(1, 50.0)
    assert 1 in ledger.absent_nodes
    assert availability.acquire(1, 60.0) == 170.0  # shut-down to 70, then a 100 s wake
    assert availability.intervals[-1].wake_from_s == 70.0
    with pytest.raises(SchedulingError, match="node 0 cannot be acquired"):
        availability.acquire(0, 60.0)


def test_a_busy_node_is_never_powered_down():
    ledger = Ledger(_tiny())
    availability = Availability(ledger, {0: 0.0, 1: 0.0}, False)
    ledger.take(0, (0,), 1000, None)
    with pytest.raises(SchedulingError, match="still runs jobs"):
        availability.release(0, 1.0)


def _placed_on_present_nodes(result, cluster: Cluster) -> None:
    """Every placement's time lies inside an interval its node was present."""
    held: dict[int, list[tuple[float, float]]] = {}
    for row in result.meta["power_states"]["intervals"]:
        ready = row["ready_s"]
        if ready is not None:
            held.setdefault(row["node"], []).append((ready, row["released_s"]))
    placed = result.events[result.events["event"].isin(["start", "restart", "migrate"])]
    for time, gpus in zip(placed["time"], placed["gpus"], strict=True):
        for gpu in str(gpus).split(","):
            if gpu == "":
                continue
            node = cluster.gpu_node[int(gpu)]
            assert any(a <= time <= b for a, b in held[node]), (time, node)


@st.composite
def runs(draw: st.DrawFn) -> tuple[pd.DataFrame, Cluster, str, CES]:
    per_node = draw(st.sampled_from([1, 2, 4]))
    count = draw(st.integers(1, 4))
    data = {
        "name": "prop",
        "gpu_types": {"V100": {"idle_w": 40}},
        "nodes": [{"gpu_type": "V100", "count": count, "gpus_per_node": per_node}],
        "energy": {
            "wake_s": draw(st.sampled_from([0.0, 30.0, 300.0])),
            "sleep_s": draw(st.sampled_from([0.0, 10.0, 120.0])),
        },
    }
    cluster = Cluster.from_dict(data, "prop.yaml")
    n = draw(st.integers(1, 8))
    jobs = pd.DataFrame(
        {
            "job_id": range(n),
            "submit_time": sorted(draw(st.lists(st.integers(0, 8000), min_size=n, max_size=n))),
            "num_gpus": draw(st.lists(st.integers(1, per_node * count), min_size=n, max_size=n)),
            "duration": draw(st.lists(st.integers(1, 3000), min_size=n, max_size=n)),
        }
    )
    policy = draw(st.sampled_from(["fifo", "srtf", "sjf", "tiresias"]))
    ces = CES(
        buffer_nodes=draw(st.integers(0, 2)),
        interval_s=draw(st.sampled_from([60.0, 600.0])),
        history=1,
        horizon=2,
        history_threshold=0,
        future_threshold=0,
        decrease_threshold=1,
        keep=draw(st.integers(0, 3)),
    )
    return jobs, cluster, policy, ces


@settings(max_examples=25, deadline=None)
@given(runs())
def test_no_job_ever_runs_on_an_off_or_waking_node_and_all_jobs_finish(run):
    jobs, cluster, policy, ces = run
    result = dlsched.simulate(jobs, cluster, policy, provisioner=ces, audit=True)
    assert (result.jobs["status"] == "finished").all()
    _placed_on_present_nodes(result, cluster)
    summary = result.summary()
    assert summary["energy_j"] >= 0
    assert 0 <= summary["mean_nodes_off"] <= len(cluster.nodes)


def test_same_seed_same_run():
    cluster = Cluster.from_dict(
        {**TINY, "nodes": [{"gpu_type": "V100", "count": 4, "gpus_per_node": 2}]}, "t.yaml"
    )
    jobs = pd.DataFrame(
        {
            "job_id": range(6),
            "submit_time": [0, 100, 2000, 2100, 9000, 9500],
            "num_gpus": [2, 1, 4, 1, 2, 8],
            "duration": [500, 3000, 800, 200, 1000, 400],
        }
    )
    a = dlsched.simulate(jobs, cluster, "srtf", provisioner=CES(buffer_nodes=1), seed=3)
    b = dlsched.simulate(jobs, cluster, "srtf", provisioner=CES(buffer_nodes=1), seed=3)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    pd.testing.assert_frame_equal(a.events, b.events)
    assert a.meta["power_states"] == b.meta["power_states"]
    assert a.summary()["energy_j"] == b.summary()["energy_j"]


def test_ces_needs_an_energy_section_and_a_fixed_cluster():
    bare = {k: v for k, v in TINY.items() if k != "energy"}
    with pytest.raises(ConfigError, match="no 'energy' section"):
        dlsched.simulate(JOBS, Cluster.from_dict(bare, "bare.yaml"), "fifo", provisioner="ces")
    rented = {
        **bare,
        "instance_types": {"x": {"gpu_type": "V100", "gpus": 1, "price_per_hour": 1.0}},
        "limits": {"x": 1},
    }
    with pytest.raises(ConfigError, match="rents instances"):
        dlsched.simulate(JOBS, Cluster.from_dict(rented, "r.yaml"), "fifo", provisioner="ces")


@pytest.mark.parametrize("key", ["wake_s", "sleep_s"])
@pytest.mark.parametrize("bad", [-1, math.nan, math.inf, 1e300, True, "x", [1]])
def test_bad_power_transitions_are_errors_naming_the_key(tmp_path, key, bad):
    data = {**TINY, "energy": {key: bad}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=f"energy.{key}") as caught:
        dlsched.load_cluster(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("param", "value"),
    [("interval_s", 0), ("buffer_nodes", -1), ("buffer_nodes", 1.5), ("history", 0),
     ("horizon", math.nan), ("keep", True), ("forecast_days", 0), ("min_idle_s", -1),
     ("preset", "mars"), ("history_threshold", math.inf)],
)  # fmt: skip
def test_bad_ces_parameters_are_errors_naming_them(param, value):
    with pytest.raises(ValueError, match=param):
        get_provisioner("ces", **{param: value})


def test_presets_are_the_artifacts_and_parameters_override_them():
    venus = CES()
    assert (venus.history, venus.horizon, venus.buffer_nodes, venus.keep) == (3, 18, 5, 12)
    assert (venus.history_threshold, venus.future_threshold, venus.decrease_threshold) == (
        0.5,
        1,
        2,
    )
    assert CES(preset="uranus", buffer_nodes=2).buffer_nodes == 2
    assert "preset='philly'" in repr(CES(preset="philly"))
    assert pool_buffer(20, 231, 552) == 9


def test_a_power_manager_that_rents_is_refused():
    class Renter(CES):
        def provision(self, view):
            return dlsched.provision.Provision(acquire={"x": 1})

    with pytest.raises(SchedulingError, match="rents none"):
        dlsched.simulate(JOBS, _tiny(), "fifo", provisioner=Renter())


def test_ces_from_an_experiment_file(tmp_path):
    trace = tmp_path / "t.csv"
    JOBS.to_csv(trace, index=False)
    spec = {
        "name": "ces",
        "cluster": TINY,
        "workload": {"trace": str(trace)},
        "policies": ["fifo"],
        "provisioner": {"name": "ces", "buffer_nodes": 0},
    }
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(spec))
    from dlsched.experiments import load_experiment, run_experiment

    experiment = load_experiment(path)
    outcome = run_experiment(experiment, tmp_path / "out", progress=False, executor="local")
    assert outcome.ok
    (key,) = outcome.store.finished_keys()
    summary = outcome.store.run_summary(key)
    assert summary["energy_j"] == pytest.approx(702800.0, abs=1e-6)
    assert summary["wake_events"] == 1
