"""The energy and power model (`dlsched.energy`) and its cluster-file keys."""

from __future__ import annotations

import pandas as pd
import pytest

import dlsched
from dlsched.energy import GPU_POWER, IDLE_FRACTION_ASSUMED, power_series, type_power
from dlsched.errors import ConfigError


def cluster(**extra) -> dlsched.Cluster:
    data = {
        "name": "e",
        "gpu_types": {"V100": {"active_w": 300, "idle_w": 50}},
        "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2, "node_w": 100}],
        "energy": {"price_per_kwh": 0.5, "carbon_g_per_kwh": 400},
    }
    data.update(extra)
    return dlsched.Cluster.from_dict(data)


JOBS = pd.DataFrame(
    [("a", 0, 1, 100.0), ("b", 0, 2, 50.0)],
    columns=["job_id", "submit_time", "num_gpus", "duration"],
)


def test_energy_of_a_tiny_replay_to_the_joule():
    """FIFO on one node of 2 V100s (300 W busy, 50 W idle, node 100 W): a holds 1 GPU
    0→100; b needs both, so runs 100→150. Makespan 0→150.
    GPUs 0→100: 300 + 50 = 350 W × 100 s = 35,000 J; 100→150: 2 × 300 = 600 W × 50 s =
    30,000 J; node: 100 W × 150 s = 15,000 J. Total 80,000 J = 0.0222… kWh; mean power
    80,000 / 150 = 533.33 W; per job 0.0111… kWh; cost 0.5 × kWh; CO2 400 g × kWh."""
    summary = dlsched.simulate(JOBS, cluster(), policy="fifo").summary()
    assert summary["energy_j"] == pytest.approx(80_000.0, abs=0.5)
    assert summary["energy_kwh"] == pytest.approx(80_000 / 3.6e6, rel=1e-12)
    assert summary["mean_power_w"] == pytest.approx(80_000 / 150, rel=1e-12)
    assert summary["energy_per_job_kwh"] == pytest.approx(40_000 / 3.6e6, rel=1e-12)
    assert summary["energy_cost"] == pytest.approx(0.5 * 80_000 / 3.6e6, rel=1e-12)
    assert summary["co2_kg"] == pytest.approx(0.4 * 80_000 / 3.6e6, rel=1e-12)


def test_no_energy_section_means_no_energy_keys():
    """Without `energy:` in the cluster file a run's summary has no energy figures, and
    without a price or carbon intensity none of those."""
    data = {"nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2}], "name": "x"}
    plain = dlsched.simulate(JOBS, dlsched.Cluster.from_dict(data)).summary()
    assert not {"energy_j", "energy_kwh", "mean_power_w"} & set(plain)
    bare = dlsched.simulate(JOBS, dlsched.Cluster.from_dict({**data, "energy": {}})).summary()
    assert "energy_kwh" in bare and "energy_cost" not in bare and "co2_kg" not in bare


def test_defaults_are_vendor_tdp_and_an_assumed_idle_fraction():
    """Without watts in the file: active = the vendor table's TDP (a K80 GPU is half a 300 W
    board), idle = the labelled assumption, and the run's meta says it is assumed."""
    assert GPU_POWER["k80"].active_w == 150.0 and "300 W per board" in GPU_POWER["k80"].source
    c = dlsched.Cluster.from_dict(
        {"name": "d", "nodes": [{"gpu_type": "A100", "count": 1, "gpus_per_node": 2}]}
    )
    power = type_power(c)["a100"]
    assert power.active_w == 400.0 and "vendor TDP" in power.active_source
    assert power.idle_w == IDLE_FRACTION_ASSUMED * 400.0 and "assumption" in power.idle_source
    run = dlsched.simulate(JOBS, dlsched.Cluster.from_dict({**_data(c), "energy": None}))
    assert run.meta["energy_sources"]["energy_idle_assumed"] is True


def _data(c: dlsched.Cluster) -> dict:
    return {"name": c.name, "nodes": [{"gpu_type": "A100", "count": 1, "gpus_per_node": 2}]}


def test_power_series_steps_with_busy_gpus():
    """Power after each change: idle 2 × 50 + 100 = 200 W; one busy 450 W; two busy 700 W."""
    result = dlsched.simulate(JOBS, cluster(), policy="fifo")
    series = power_series(result.timeline, cluster())
    by_time = series.groupby("time")["power_w"].last()
    assert by_time[0.0] == 450.0 and by_time[100.0] == 700.0 and by_time[150.0] == 200.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"energy": {"price_per_kwh": -1}}, "key 'energy.price_per_kwh': must be a number"),
        ({"energy": {"carbon": 3}}, "energy"),
        ({"energy": 5}, "key 'energy': must be a mapping"),
        ({"gpu_types": {"V100": {"active_w": 0}}}, "key 'gpu_types.V100.active_w'"),
        ({"gpu_types": {"V100": {"active_w": 100, "idle_w": 200}}}, "gpu_types.V100.idle_w"),
        (
            {"nodes": [{"gpu_type": "V100", "count": 1, "node_w": "lots"}]},
            "key 'nodes\\[0\\].node_w'",
        ),
    ],
)
def test_bad_energy_keys_are_clear_errors(change, message):
    """Each bad value is a ConfigError naming its key."""
    with pytest.raises(ConfigError, match=message):
        cluster(**change)


def test_a_type_without_a_vendor_figure_needs_active_w():
    """A cluster with an energy section and a GPU type the vendor table does not know is
    refused when it is loaded, naming the key to add; with it, the cluster loads."""
    data = {"name": "m", "nodes": [{"gpu_type": "MI250", "count": 1}], "energy": {}}
    with pytest.raises(ConfigError, match="gpu_types.MI250.active_w"):
        dlsched.Cluster.from_dict(data)
    data["gpu_types"] = {"MI250": {"active_w": 500}}
    assert type_power(dlsched.Cluster.from_dict(data))["mi250"].idle_w == 100.0


TRACE = """job_id,submit_time,num_gpus,duration
a,0,1,100
b,0,2,50
"""


def _experiment(folder, cluster_data):
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jobs.csv").write_text(TRACE)
    path = folder / "energy.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "energy",
                "cluster": cluster_data,
                "workload": {"trace": "jobs.csv"},
                "policies": ["fifo"],
                "seed": 1,
            }
        )
    )
    return path


ENERGY_CLUSTER = {
    "name": "e",
    "gpu_types": {"V100": {"active_w": 300, "idle_w": 50}},
    "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 2, "node_w": 100}],
    "energy": {"price_per_kwh": 0.5},
}


def test_report_plots_power_only_for_runs_with_energy(tmp_path):
    """`dlsched report` writes power.png and the energy columns when the cluster file has an
    energy section (the same 80,000 J as the known answer), and neither without one."""
    from dlsched.experiments import run_experiment
    from dlsched.report import POWER_PLOT, write_report

    run_experiment(_experiment(tmp_path / "a", ENERGY_CLUSTER), tmp_path / "a" / "out")
    written = {p.name for p in write_report(tmp_path / "a" / "out")}
    assert POWER_PLOT in written
    assert (tmp_path / "a" / "out" / POWER_PLOT).read_bytes().startswith(b"\x89PNG")
    runs = pd.read_csv(tmp_path / "a" / "out" / "runs.csv")
    assert runs["energy_j"].tolist() == pytest.approx([80_000.0])
    plain = {k: v for k, v in ENERGY_CLUSTER.items() if k != "energy"}
    run_experiment(_experiment(tmp_path / "b", plain), tmp_path / "b" / "out")
    assert POWER_PLOT not in {p.name for p in write_report(tmp_path / "b" / "out")}
    assert "energy_kwh" not in pd.read_csv(tmp_path / "b" / "out" / "runs.csv").columns
