"""Clusters built from public inventories: the bundled YAMLs load with the stated GPU counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.cluster import Cluster, type_key
from dlsched.errors import ConfigError
from dlsched.traces import inventories as inv

ROOT = Path(__file__).resolve().parents[1]
CLUSTERS = ROOT / "configs" / "clusters"
SHARED = ROOT.parent / "shared" / "traces"


def shared(relative: str) -> Path:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"needs ../shared/traces/{relative}")
    return path


# name → (nodes, GPUs by type) as stated in the shared READMEs (or the Hydra README)
STATED = {
    "philly": (552, {"P100": 642, "P40": 1_848}),
    "alibaba-pai-2020": (
        1_814,
        {"P100": 1_596, "T4": 994, "MISC": 2_240, "V100M32": 1_080, "V100": 832},
    ),
    "alibaba-openb-2023": (
        1_213,
        {"G2": 4_392, "T4": 842, "P100": 265, "V100M16": 195, "G3": 312, "V100M32": 204, "A10": 2},
    ),
    "alibaba-spot-2026": (
        4_278,
        {
            "A10": 2_494,
            "GPU-series-1": 1_558,
            "A100-SXM4-80GB": 3_456,
            "H800": 1_752,
            "GPU-series-2": 976,
            "A800-SXM4-80GB": 176,
        },
    ),
    "helios-venus": (135, {"GPU": 1_080}),
    "helios-earth": (151, {"GPU": 1_208}),
    "hydra-light": (45, {"A100": 15, "V100": 15, "GTX2080Ti": 15}),
    "hydra-heavy": (45, {"A100": 10, "V100": 20, "GTX2080Ti": 15}),
}


@pytest.mark.parametrize("name", sorted(STATED))
def test_bundled_cluster_loads_with_the_stated_gpus(name):
    """Each YAML loads by name with dlsched.load_cluster and has the README's GPU counts."""
    cluster = dlsched.load_cluster(name)
    nodes, by_type = STATED[name]
    assert cluster.name == name and len(cluster.nodes) == nodes
    assert cluster.capacity_by_type() == {type_key(t): n for t, n in by_type.items()}
    assert cluster.num_gpus == sum(by_type.values())


BUILDERS = {
    "philly": lambda: inv.philly_cluster(
        shared("philly/cluster_machine_list.csv"), shared("philly/philly_vc_nodes.csv")
    ),
    "alibaba-pai-2020": lambda: inv.pai_2020_cluster(
        shared("alibaba_pai_v2020/pai_machine_spec.tar.gz")
    ),
    "alibaba-openb-2023": lambda: inv.openb_cluster(
        shared("alibaba_gpu_v2023/openb_node_list_gpu_node.csv.gz")
    ),
    "alibaba-spot-2026": lambda: inv.spot_2026_cluster(
        shared("alibaba_spot_gpu_v2026/node_info_df.csv.gz")
    ),
    "helios-venus": lambda: inv.helios_cluster(
        shared("helios/Venus_cluster_gpu_number.csv.gz"), "helios-venus"
    ),
    "helios-earth": lambda: inv.helios_cluster(
        shared("helios/Earth_cluster_gpu_number.csv.gz"), "helios-earth"
    ),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_yaml_is_what_the_builder_makes_from_the_raw_file(name):
    """The shipped YAML equals Cluster.from_dict of the inventory builder's dict."""
    built = Cluster.from_dict(BUILDERS[name]())
    shipped = dlsched.load_cluster(CLUSTERS / f"{name}.yaml")
    assert (shipped.nodes, shipped.vcs, dict(shipped.gpu_types)) == (
        built.nodes,
        built.vcs,
        dict(built.gpu_types),
    )


def test_philly_vcs_own_their_node_counts_with_a_proportional_share_of_8_gpu_machines():
    """Each of the 11 VCs owns its philly_vc.csv node count; 8-GPU machines split pro rata."""
    cluster = dlsched.load_cluster("philly")
    counts = pd.read_csv(shared("philly/philly_vc_nodes.csv")).set_index("vc")["node num"]
    assert [vc.name for vc in cluster.vcs] == list(counts.index)
    owned = {vc.name: [cluster.nodes[i] for i in vc.node_indices] for vc in cluster.vcs}
    assert {name: len(nodes) for name, nodes in owned.items()} == counts.to_dict()
    big = {name: sum(len(n.gpu_ids) == 8 for n in nodes) for name, nodes in owned.items()}
    assert sum(big.values()) == 231  # every 8-GPU machine belongs to a VC
    for name, n in big.items():
        assert abs(n - counts[name] * 231 / counts.sum()) < 1
    assert sum(counts) == 352 and len(cluster.nodes) - 352 == 200  # 200 2-GPU machines unowned


def test_philly_vcs_can_run_their_largest_pollux_jobs():
    """Every listed VC's biggest job in the Pollux table fits in one type of its own nodes."""
    cluster = dlsched.load_cluster("philly")
    jobs = pd.read_csv(shared("philly/philly_jobs_pollux.csv.gz"))
    biggest = jobs.groupby("cluster")["num_gpus"].max()
    for vc in cluster.vcs:
        per_type: dict[str, int] = {}
        for i in vc.node_indices:
            node = cluster.nodes[i]
            per_type[node.gpu_type] = per_type.get(node.gpu_type, 0) + len(node.gpu_ids)
        assert max(per_type.values()) >= biggest[vc.name], vc.name


def test_helios_summary_gpus_are_the_mean_of_the_daily_totals():
    """helios_cluster_summary's 1,022 (Venus) and 997 (Earth) GPUs are daily-total means;
    the YAMLs take the last day instead (1,080 and 1,208)."""
    for name, stated in (("Venus", 1_022), ("Earth", 997)):
        daily = pd.read_csv(shared(f"helios/{name}_cluster_gpu_number.csv.gz"))
        assert int(daily["total"].mean()) == stated
        assert daily["total"].iloc[-1] == dlsched.load_cluster(f"helios-{name.lower()}").num_gpus


def test_helios_cluster_of_another_day_and_its_vcs():
    """A date picks that day's VCs; VCs without GPUs that day are left out."""
    data = inv.helios_cluster(
        shared("helios/Venus_cluster_gpu_number.csv.gz"), "v", date="2020-04-01"
    )
    cluster = Cluster.from_dict(data)
    assert cluster.num_gpus == 968
    assert sum(len(vc.node_indices) for vc in cluster.vcs) * 8 == 968
    assert "vcKeu" not in {vc.name for vc in cluster.vcs}  # 0 GPUs on 2020-04-01
    with pytest.raises(ConfigError, match="no row for date"):
        inv.helios_cluster(shared("helios/Venus_cluster_gpu_number.csv.gz"), "v", date="1999")


def test_gpu_memory_comes_from_the_type_name_or_the_source():
    """V100M32 → 32 GB, A100-SXM4-80GB → 80 GB, Philly's 12/24 GB; unknown stays unset."""
    openb = dlsched.load_cluster("alibaba-openb-2023")
    assert openb.gpu_types["v100m32"].memory_gb == 32 and openb.gpu_types["t4"].memory_gb is None
    spot = dlsched.load_cluster("alibaba-spot-2026")
    assert spot.gpu_types["a100-sxm4-80gb"].memory_gb == 80
    philly = dlsched.load_cluster("philly")
    assert (philly.gpu_types["p100"].memory_gb, philly.gpu_types["p40"].memory_gb) == (12, 24)


def test_vc_names_that_look_like_numbers_stay_text():
    """Philly VC hashes such as 6214e9 are quoted in the YAML and load as strings."""
    text = (CLUSTERS / "philly.yaml").read_text()
    assert "name: '6214e9'" in text
    assert dlsched.load_cluster("philly").vcs[0].name == "6214e9"


def test_bad_inventory_rows_name_the_file(tmp_path):
    """A machine list with a non-number GPU count raises ConfigError naming file and row."""
    path = tmp_path / "machines.csv"
    path.write_text("machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm1,two, 12GB\n")
    with pytest.raises(ConfigError, match=r"machines\.csv: row 3: expected a whole number"):
        inv.philly_cluster(path)
    path.write_text("machineId, number of GPUs, single GPU mem\nm0,2, 16GB\n")
    with pytest.raises(ConfigError, match="16GB"):
        inv.philly_cluster(path)


def test_largest_remainder_sums_exactly():
    """The proportional split always adds up, with ties going to the earlier entry."""
    quotas = np.array([42.0, 10.5, 10.5, 10.5, 5.25, 5.25])
    split = inv._largest_remainder(quotas, 84)
    assert split.sum() == 84 and split.tolist() == [42, 11, 11, 10, 5, 5]
