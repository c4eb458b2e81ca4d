"""The bundled alibaba-spot-2026 cluster declares each node's cores (``cpu_num``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dlsched
from dlsched.errors import ConfigError
from dlsched.traces import inventories as inv

NODE_INFO = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "traces"
    / "alibaba_spot_gpu_v2026"
    / "node_info_df.csv.gz"
)


def test_spot_2026_nodes_declare_their_cores_and_no_memory():
    """A10 nodes have 126 or 128 cores, H800 nodes 192; no node declares host memory."""
    cluster = dlsched.load_cluster("alibaba-spot-2026")
    cores = {}
    for node in cluster.nodes:
        cores.setdefault(node.name.rsplit("-", 1)[0], set()).add(node.cpus)
    assert cores["a10x1-c126"] == {126} and cores["a10x1-c128"] == {128}
    assert cores["h800x8"] == {192} and cores["a100-sxm4-80gbx8"] == {128}
    assert cluster.declares_cpus and not cluster.declares_memory
    # 2·126 + 2,947·128 + 1,329·192
    assert sum(node.cpus for node in cluster.nodes) == 632_636


def test_spot_2026_cores_are_the_inventorys_cpu_num():
    """Total cores equal the raw node table's cpu_num sum (every node has GPUs)."""
    if not NODE_INFO.exists():
        pytest.skip("needs ../shared/traces/alibaba_spot_gpu_v2026")
    raw = pd.read_csv(NODE_INFO)
    cluster = dlsched.Cluster.from_dict(inv.spot_2026_cluster(NODE_INFO))
    assert sum(node.cpus for node in cluster.nodes) == raw["cpu_num"].sum()


def test_a_bad_cpu_num_names_the_file_row_and_column(tmp_path):
    """cpu_num 'many' on the second node: ConfigError naming file, row 3 and cpu_num."""
    path = tmp_path / "node_info_df.csv"
    path.write_text("gpu_model,gpu_capacity_num,cpu_num,node_name\nA10,1,128,0\nA10,1,many,1\n")
    with pytest.raises(ConfigError, match=r"node_info_df\.csv: row 3, column 'cpu_num'"):
        inv.spot_2026_cluster(path)


def test_a_node_table_without_cpu_num_declares_no_cores(tmp_path):
    """An older node table with no cpu_num column still loads, GPU-only."""
    path = tmp_path / "node_info_df.csv"
    path.write_text("gpu_model,gpu_capacity_num,node_name\nA10,1,0\nH800,8,1\n")
    cluster = dlsched.Cluster.from_dict(inv.spot_2026_cluster(path))
    assert cluster.num_gpus == 9 and not cluster.declares_cpus
