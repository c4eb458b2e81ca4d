"""The cluster model: YAML forms, case-insensitive types, bundled configs, clear errors."""

from pathlib import Path

import pytest

import dlsched
from dlsched.cluster import Cluster
from dlsched.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def test_minimal_form_from_the_issue(tmp_path):
    """The three-line node-group form builds 108 GPUs, 4 per node, in file order."""
    path = write(
        tmp_path,
        """
name: gavel-108
nodes:
  - {gpu_type: V100, count: 9, gpus_per_node: 4}
  - {gpu_type: P100, count: 9, gpus_per_node: 4}
  - {gpu_type: K80,  count: 9, gpus_per_node: 4}
""",
    )
    cluster = dlsched.load_cluster(path)
    assert cluster.num_gpus == 108
    assert cluster.capacity_by_type() == {"k80": 36, "p100": 36, "v100": 36}
    assert cluster.nodes[0].gpu_ids == (0, 1, 2, 3)
    assert cluster.gpu_type_of[0] == "v100" and cluster.gpu_type_of[107] == "k80"
    assert cluster.display_name("V100") == "V100"


def test_types_match_case_insensitively(tmp_path):
    """`v100` and `V100` are one type; memory and cost come from `gpu_types`."""
    path = write(
        tmp_path,
        """
name: mixed
gpu_types:
  V100: {memory_gb: 32, cost_per_hour: 3.06}
nodes:
  - {gpu_type: v100, count: 1, gpus_per_node: 8}
  - {gpu_type: V100, count: 1, gpus_per_node: 4}
""",
    )
    cluster = dlsched.load_cluster(path)
    assert cluster.capacity_by_type() == {"v100": 12}
    assert cluster.gpu_types["v100"].memory_gb == 32
    assert cluster.gpu_types["v100"].cost_per_hour == 3.06


def test_racks_hold_nodes(tmp_path):
    """Nodes listed under racks carry their rack's name."""
    path = write(
        tmp_path,
        """
name: racked
racks:
  - name: r1
    nodes: [{gpu_type: A100, count: 2, gpus_per_node: 8}]
  - name: r2
    nodes: [{gpu_type: H100, count: 1, gpus_per_node: 8}]
""",
    )
    cluster = dlsched.load_cluster(path)
    assert [n.rack for n in cluster.nodes] == ["r1", "r1", "r2"]
    assert cluster.num_gpus == 24


@pytest.mark.parametrize("name, gpus", [("gavel-108", 108), ("tiresias-60", 60), ("philly", 2490)])
def test_bundled_clusters_load_by_name(name, gpus):
    """Bundled configs load by bare name."""
    assert dlsched.load_cluster(name).num_gpus == gpus


@pytest.mark.parametrize(
    "text, key",
    [
        ("name: x\nnodes: [{count: 2, gpus_per_node: 4}]", "nodes[0].gpu_type"),
        ("name: x\nnodes: [{gpu_type: V100, count: 0, gpus_per_node: 4}]", "nodes[0].count"),
        (
            "name: x\nnodes: [{gpu_type: V100, count: 1, gpus_per_node: two}]",
            "nodes[0].gpus_per_node",
        ),
        ("name: x\nnodes: {gpu_type: V100}", "nodes"),
        (
            "name: x\ngpu_types: {V100: {memory_gb: -1}}\nnodes: [{gpu_type: V100}]",
            "gpu_types.V100.memory_gb",
        ),
    ],
)
def test_bad_cluster_names_file_and_key(tmp_path, text, key):
    """A wrong value is an error naming the file and the key."""
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        dlsched.load_cluster(path)
    assert str(path) in str(err.value) and key in str(err.value)


def test_broken_yaml_names_the_file(tmp_path):
    """Malformed YAML is a ConfigError naming the file."""
    path = write(tmp_path, "name: [unclosed\nnodes: -")
    with pytest.raises(ConfigError, match="not valid YAML"):
        dlsched.load_cluster(path)


def test_no_nodes_is_an_error():
    """A cluster without nodes is refused."""
    with pytest.raises(ConfigError, match="no nodes"):
        Cluster.from_dict({"name": "empty"})


def test_unknown_cluster_name_lists_bundled():
    """A missing file that is not a bundled name says which names exist."""
    with pytest.raises(FileNotFoundError, match="gavel-108"):
        dlsched.load_cluster("no-such-cluster")


def test_hourly_prices_give_a_cost_in_the_summary():
    """With prices per GPU type, summary()["cost"] = Σ GPU-hours × price."""
    import pandas as pd

    cluster = Cluster.from_dict(
        {
            "name": "priced",
            "gpu_types": {"V100": {"cost_per_hour": 3.0}},
            "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}],
        }
    )
    jobs = pd.DataFrame(
        {
            "job_id": [1, 2],
            "submit_time": [0.0, 0.0],
            "num_gpus": [2, 1],
            "duration": [3600.0, 1800.0],
        }
    )
    summary = dlsched.simulate(jobs, cluster).summary()
    assert summary["cost"] == pytest.approx((2 * 1.0 + 1 * 0.5) * 3.0)


def test_virtual_clusters_own_nodes_or_quotas(tmp_path):
    """VCs take node counts in file order, named nodes, or a GPU quota."""
    path = write(
        tmp_path,
        """
name: vcs
nodes:
  - {gpu_type: V100, count: 3, gpus_per_node: 8, name: v}
  - {gpu_type: K80, count: 2, gpus_per_node: 4, name: k}
vcs:
  - {name: a, nodes: 2}
  - {name: b, nodes: [k-1]}
  - {name: c, nodes: 1, gpu_type: K80}
  - {name: d, gpus: 16}
""",
    )
    cluster = dlsched.load_cluster(path)
    vcs = {vc.name: vc for vc in cluster.vcs}
    assert vcs["a"].node_indices == (0, 1)
    assert vcs["b"].node_indices == (4,)
    assert vcs["c"].node_indices == (3,)
    assert vcs["d"].node_indices == () and vcs["d"].quota_gpus == 16


def test_a_node_in_two_vcs_is_an_error(tmp_path):
    """Two VCs cannot own one node."""
    path = write(
        tmp_path,
        """
name: vcs
nodes: [{gpu_type: V100, count: 1, gpus_per_node: 8, name: v}]
vcs: [{name: a, nodes: [v-0]}, {name: b, nodes: [v-0]}]
""",
    )
    with pytest.raises(ConfigError, match="already belongs"):
        dlsched.load_cluster(path)
