"""Cluster YAML validation: every mistake is one ConfigError naming the file and the key."""

import tracemalloc
from pathlib import Path

import pytest

import dlsched
from dlsched.cluster import MAX_GPUS_PER_NODE, MAX_TOTAL_GPUS, Cluster
from dlsched.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as err:
        dlsched.load_cluster(path)
    return str(err.value)


# --- unknown keys -------------------------------------------------------------------------


def test_typo_in_a_node_group_key_is_an_error(tmp_path):
    """`gpus_per_nod` names the file, `nodes[2]`, the key and suggests `gpus_per_node`."""
    path = write(
        tmp_path,
        """
name: typo
nodes:
  - {gpu_type: V100, count: 1, gpus_per_node: 8}
  - {gpu_type: P100, count: 1, gpus_per_node: 8}
  - {gpu_type: K80, count: 2, gpus_per_nod: 8}
""",
    )
    message = error_of(path)
    assert str(path) in message
    assert "nodes[2]" in message
    assert "'gpus_per_nod'" in message
    assert "did you mean 'gpus_per_node'" in message


def test_unknown_top_level_key_is_an_error(tmp_path):
    """An unknown top-level key is refused, with a did-you-mean, not dropped."""
    path = write(tmp_path, "name: x\nnodes: [{gpu_type: V100}]\nvc: [{name: a, gpus: 1}]\n")
    message = error_of(path)
    assert str(path) in message and "'vc'" in message and "did you mean 'vcs'" in message


@pytest.mark.parametrize(
    "text, where, key",
    [
        (
            "name: x\nracks: [{name: r, node: [{gpu_type: V100}]}]\nnodes: [{gpu_type: V100}]",
            "racks[0]",
            "'node'",
        ),
        (
            "name: x\nracks: [{name: r, nodes: [{gpu_type: V100, cnt: 2}]}]",
            "racks[0].nodes[0]",
            "'cnt'",
        ),
        (
            "name: x\ngpu_types: {V100: {memory: 16}}\nnodes: [{gpu_type: V100}]",
            "gpu_types.V100",
            "'memory'",
        ),
        (
            "name: x\nnodes: [{gpu_type: V100}]\nvcs: [{name: a, gpu: 1}]",
            "vcs[0]",
            "'gpu'",
        ),
    ],
)
def test_unknown_keys_at_every_level_are_errors(tmp_path, text, where, key):
    """Racks, racked node groups, gpu_types entries and VCs reject unknown keys too."""
    message = error_of(write(tmp_path, text))
    assert f"'{where}'" in message and f"unknown key {key}" in message and "did you mean" in message


def test_from_dict_rejects_unknown_keys_too():
    """The dict form (experiments, inventories) is checked like a file and names its source."""
    data = {"name": "x", "nodes": [{"gpu_type": "V100", "gpu_per_node": 4}]}
    with pytest.raises(ConfigError, match=r"inline: key 'nodes\[0\]': unknown key 'gpu_per_node'"):
        Cluster.from_dict(data, "inline")


# --- duplicate names ----------------------------------------------------------------------


def test_duplicate_node_group_names_are_an_error(tmp_path):
    """Two node groups named alike (so their nodes would share names) name both places."""
    path = write(
        tmp_path,
        """
name: dup
nodes:
  - {gpu_type: V100, count: 2, name: gpu}
  - {gpu_type: K80, count: 2, name: gpu}
vcs: [{name: a, nodes: [gpu-1]}]
""",
    )
    message = error_of(path)
    assert str(path) in message and "nodes[1].name" in message and "nodes[0]" in message


def test_duplicate_vc_names_are_an_error(tmp_path):
    """Two VCs with one name are refused, naming both entries."""
    path = write(
        tmp_path,
        "name: x\nnodes: [{gpu_type: V100, count: 2}]\n"
        "vcs: [{name: a, gpus: 1}, {name: a, nodes: 1}]",
    )
    message = error_of(path)
    assert "vcs[1].name" in message and "vcs[0]" in message and "'a'" in message


def test_a_gpu_type_declared_twice_in_another_case_is_an_error(tmp_path):
    """`V100` and `v100` in gpu_types are one type: declaring both is refused."""
    text = (
        "name: x\ngpu_types: {V100: {memory_gb: 16}, v100: {memory_gb: 32}}\n"
        "nodes: [{gpu_type: V100}]"
    )
    message = error_of(write(tmp_path, text))
    assert "gpu_types.v100" in message and "gpu_types.V100" in message


def test_duplicate_rack_entries_are_an_error(tmp_path):
    """A rack listed twice under `racks` is refused."""
    text = (
        "name: x\nracks: [{name: r, nodes: [{gpu_type: V100}]}, "
        "{name: r, nodes: [{gpu_type: K80}]}]"
    )
    message = error_of(write(tmp_path, text))
    assert "racks[1].name" in message and "racks[0]" in message


def test_conflicting_memory_for_one_type_is_an_error(tmp_path):
    """A node group's memory_gb that contradicts its type's declared memory is refused."""
    text = "name: x\ngpu_types: {V100: {memory_gb: 32}}\nnodes: [{gpu_type: V100, memory_gb: 16}]"
    assert "nodes[0].memory_gb" in error_of(write(tmp_path, text))


def test_vc_gpu_type_with_a_node_list_is_an_error(tmp_path):
    """`gpu_type` in a VC applies only with a node count; with a node list it is refused."""
    text = (
        "name: x\nnodes: [{gpu_type: V100, name: v}]\nvcs: [{name: a, nodes: [v-0], gpu_type: K80}]"
    )
    assert "vcs[0].gpu_type" in error_of(write(tmp_path, text))


def test_vc_unknown_node_name_suggests_the_closest(tmp_path):
    """A VC naming a node that does not exist gets a did-you-mean."""
    text = (
        "name: x\nnodes: [{gpu_type: V100, name: alpha}, {gpu_type: V100, name: beta}]\n"
        "vcs: [{name: a, nodes: [alpah-0]}]"
    )
    message = error_of(write(tmp_path, text))
    assert "vcs[0].nodes" in message and "did you mean 'alpha-0'" in message


@pytest.mark.parametrize(
    "text, key",
    [
        ("name: x\nnodes: [{gpu_type: V100}]\nvcs: [{name: 12.50, gpus: 1}]", "vcs[0].name"),
        ("name: x\nnodes: [{gpu_type: V100, name: 2020-01-01}]", "nodes[0].name"),
        ("name: x\nnodes: [{gpu_type: yes}]", "nodes[0].gpu_type"),
        ("name: ''\nnodes: [{gpu_type: V100}]", "name"),
    ],
)
def test_names_yaml_reads_as_non_text_are_errors(tmp_path, text, key):
    """A name YAML reads as a float, a date, a boolean or empty is refused, not renamed."""
    message = error_of(write(tmp_path, text))
    assert f"key '{key}'" in message and "quote it" in message


# --- sizes --------------------------------------------------------------------------------


def test_a_billion_nodes_are_refused_before_allocating(tmp_path):
    """`count: 1000000000` is refused at once, without building nodes."""
    path = write(
        tmp_path, "name: x\nnodes: [{gpu_type: V100, count: 1000000000, gpus_per_node: 8}]"
    )
    tracemalloc.start()
    try:
        message = error_of(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "nodes[0].count" in message and f"{MAX_TOTAL_GPUS:,}" in message
    assert peak < 5_000_000


def test_the_total_cap_sums_over_groups(tmp_path):
    """Groups each under the cap but together over it are refused at the group that crosses."""
    half = MAX_TOTAL_GPUS // 2
    text = (
        f"name: x\nnodes: [{{gpu_type: V100, count: {half}}}, {{gpu_type: K80, count: {half + 1}}}]"
    )
    assert "nodes[1].count" in error_of(write(tmp_path, text))


def test_gpus_per_node_is_capped(tmp_path):
    """A node with more GPUs than the documented cap is refused."""
    text = f"name: x\nnodes: [{{gpu_type: V100, gpus_per_node: {MAX_GPUS_PER_NODE + 1}}}]"
    assert "nodes[0].gpus_per_node" in error_of(write(tmp_path, text))


def test_a_cluster_at_the_per_node_cap_loads(tmp_path):
    """Exactly MAX_GPUS_PER_NODE GPUs in a node is allowed."""
    text = f"name: x\nnodes: [{{gpu_type: V100, gpus_per_node: {MAX_GPUS_PER_NODE}}}]"
    assert dlsched.load_cluster(write(tmp_path, text)).num_gpus == MAX_GPUS_PER_NODE


@pytest.mark.parametrize("value", ["-3", "0", "2.5", "true", "'4'", "null"])
def test_counts_must_be_positive_integers(tmp_path, value):
    """Negative, zero, fractional, boolean, string or empty counts are refused."""
    text = f"name: x\nnodes: [{{gpu_type: V100, count: {value}}}]"
    assert "nodes[0].count" in error_of(write(tmp_path, text))


def test_boolean_gpus_per_node_is_refused(tmp_path):
    """`gpus_per_node: yes` (a YAML boolean) is not one GPU."""
    text = "name: x\nnodes: [{gpu_type: V100, gpus_per_node: yes}]"
    assert "nodes[0].gpus_per_node" in error_of(write(tmp_path, text))


# --- the file itself ----------------------------------------------------------------------


def test_binary_file_is_a_config_error_naming_the_file(tmp_path):
    """A non-UTF-8 file is a ConfigError naming the file, not a UnicodeDecodeError."""
    path = tmp_path / "cluster.yaml"
    path.write_bytes(b"name: x\n\xff\xfe\x00\x81nodes: []\n")
    message = error_of(path)
    assert str(path) in message and "UTF-8" in message


def test_yaml_syntax_error_names_the_file_and_line(tmp_path):
    """A YAML syntax error is one line naming the file and where the problem is."""
    path = write(tmp_path, "name: x\nnodes: [{gpu_type: V100\n")
    message = error_of(path)
    assert str(path) in message and "line " in message and "\n" not in message


@pytest.mark.parametrize("text, kind", [("", "empty"), ("- a\n- b\n", "list"), ("42\n", "int")])
def test_a_file_that_is_not_a_mapping_is_an_error(tmp_path, text, kind):
    """An empty file, a list or a scalar is refused, naming the file and what it holds."""
    message = error_of(write(tmp_path, text))
    assert "must be a mapping" in message and kind in message


def test_missing_file_is_a_config_error_naming_it(tmp_path):
    """A path that is neither a file nor a bundled name is a ConfigError naming it."""
    missing = tmp_path / "nowhere.yaml"
    with pytest.raises(ConfigError, match="nowhere") as err:
        dlsched.load_cluster(missing)
    assert isinstance(err.value, FileNotFoundError)  # callers catching that still work


def test_a_directory_is_a_config_error(tmp_path):
    """A folder given as the cluster file is one ConfigError naming it."""
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    assert str(folder) in error_of(folder)


# --- what still loads ---------------------------------------------------------------------


def test_every_documented_key_is_accepted(tmp_path):
    """The full format of configs/clusters/README.md loads."""
    path = write(
        tmp_path,
        """
name: full
description: every key
gpu_types:
  V100: {memory_gb: 16, cost_per_hour: 2.5}
racks:
  - name: r1
    nodes: [{gpu_type: V100, count: 2, gpus_per_node: 4, name: v}]
nodes:
  - {gpu_type: K80, count: 2, gpus_per_node: 2, name: k, rack: r2, memory_gb: 12}
vcs:
  - {name: a, nodes: 1, gpu_type: K80}
  - {name: b, nodes: [v-1]}
  - {name: c, gpus: 4}
""",
    )
    cluster = dlsched.load_cluster(path)
    assert cluster.num_gpus == 12
    assert [n.rack for n in cluster.nodes] == ["r1", "r1", "r2", "r2"]
    assert {vc.name: vc.node_indices for vc in cluster.vcs} == {"a": (2,), "b": (1,), "c": ()}


def test_default_node_names_count_groups_across_racks_and_nodes(tmp_path):
    """Unnamed groups are `<type>-g<i>` with i over racked groups first, then `nodes`."""
    text = (
        "name: x\nracks: [{name: r, nodes: [{gpu_type: V100}, {gpu_type: V100}]}]\n"
        "nodes: [{gpu_type: K80}]"
    )
    cluster = dlsched.load_cluster(write(tmp_path, text))
    assert [n.name for n in cluster.nodes] == ["v100-g0-0", "v100-g1-0", "k80-g2-0"]


@pytest.mark.parametrize(
    "path",
    sorted((Path(__file__).parent.parent / "configs" / "clusters").glob("*.yaml")),
    ids=lambda path: path.stem,
)
def test_bundled_configs_pass_validation(path):
    """Every bundled cluster file uses only documented keys and loads."""
    assert dlsched.load_cluster(path).num_gpus > 0
