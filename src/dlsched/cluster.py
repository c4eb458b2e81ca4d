"""The cluster: racks ⊃ nodes ⊃ GPUs, loaded from a YAML file.

A `Cluster` is immutable: it describes hardware. What is allocated to whom lives in the
engine's ledger (`dlsched.engine.ledger`). GPU type names match case-insensitively; the
spelling of the first occurrence in the cluster file is the one shown in results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dlsched.bundled import resolve_cluster
from dlsched.errors import ConfigError

_TYPE_KEYS: dict[str, str] = {}  # name → key; GPU type names are few, lookups many


def type_key(name: str) -> str:
    """The case-insensitive key of a GPU type name (``V100`` and ``v100`` are one type)."""
    key = _TYPE_KEYS.get(name) if isinstance(name, str) else None
    if key is None:
        key = str(name).strip().lower()
        if isinstance(name, str) and len(_TYPE_KEYS) < 4096:
            _TYPE_KEYS[name] = key
    return key


@dataclass(frozen=True)
class GpuType:
    """One GPU type: its display name and optional memory and hourly price."""

    name: str
    memory_gb: float | None = None
    cost_per_hour: float | None = None


@dataclass(frozen=True)
class Node:
    """A machine: an index, a name, a rack and the ids of its GPUs (all of one type)."""

    index: int
    name: str
    rack: str
    gpu_type: str
    gpu_ids: tuple[int, ...]


@dataclass(frozen=True)
class VirtualCluster:
    """A tenant's share: the nodes it owns (possibly none) and/or a GPU quota."""

    name: str
    node_indices: tuple[int, ...] = ()
    quota_gpus: int | None = None


@dataclass(frozen=True)
class Cluster:
    """Hardware: GPU types, nodes and GPUs. GPU ids are 0..num_gpus-1, node by node."""

    name: str
    gpu_types: Mapping[str, GpuType]  # keyed by type_key
    nodes: tuple[Node, ...]
    description: str = ""
    source: str = "<dict>"
    vcs: tuple[VirtualCluster, ...] = ()
    gpu_node: tuple[int, ...] = field(init=False, repr=False)
    gpu_type_of: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        gpu_node: list[int] = []
        gpu_type_of: list[str] = []
        for node in self.nodes:
            gpu_node.extend([node.index] * len(node.gpu_ids))
            gpu_type_of.extend([node.gpu_type] * len(node.gpu_ids))
        object.__setattr__(self, "gpu_node", tuple(gpu_node))
        object.__setattr__(self, "gpu_type_of", tuple(gpu_type_of))

    @property
    def num_gpus(self) -> int:
        """Total number of GPUs."""
        return len(self.gpu_node)

    @property
    def type_names(self) -> tuple[str, ...]:
        """Display names of the GPU types present, in sorted key order."""
        return tuple(self.gpu_types[k].name for k in sorted(self.gpu_types))

    def capacity_by_type(self) -> dict[str, int]:
        """GPUs per type key."""
        out: dict[str, int] = {k: 0 for k in sorted(self.gpu_types)}
        for node in self.nodes:
            out[node.gpu_type] += len(node.gpu_ids)
        return out

    def max_gpus_per_node(self, gpu_type: str | None = None) -> int:
        """The largest node, of one type or of any."""
        sizes = [
            len(n.gpu_ids)
            for n in self.nodes
            if gpu_type is None or n.gpu_type == type_key(gpu_type)
        ]
        return max(sizes, default=0)

    def display_name(self, gpu_type: str) -> str:
        """The display name of a type key."""
        return self.gpu_types[type_key(gpu_type)].name

    def __repr__(self) -> str:
        types = ", ".join(
            f"{c} {self.gpu_types[k].name}" for k, c in self.capacity_by_type().items()
        )
        return f"Cluster({self.name!r}: {len(self.nodes)} nodes, {self.num_gpus} GPUs: {types})"

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> Cluster:
        """Build a cluster from the parsed YAML form (see configs/clusters/README.md)."""
        return _parse(data, source)


def load_cluster(path: str | Path) -> Cluster:
    """Load a cluster YAML file, or a bundled one by name (``"gavel-108"``, ``"philly"``)."""
    resolved = resolve_cluster(path)
    try:
        text = resolved.read_text()
    except OSError as exc:
        raise ConfigError(f"{resolved}: cannot read cluster file: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{resolved}: not valid YAML: {exc}") from exc
    return _parse(data, str(resolved))


def _parse(data: Any, source: str) -> Cluster:
    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{source}: key {key!r}: {message}")

    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a cluster file must be a mapping with 'name' and 'nodes'")
    name = str(data.get("name") or Path(source).stem)
    types: dict[str, GpuType] = {}
    declared = data.get("gpu_types") or {}
    if not isinstance(declared, dict):
        raise fail("gpu_types", "must be a mapping of type name to {memory_gb, cost_per_hour}")
    for tname, props in declared.items():
        props = props or {}
        if not isinstance(props, dict):
            raise fail(f"gpu_types.{tname}", "must be a mapping")
        types[type_key(tname)] = GpuType(
            str(tname),
            _opt_positive(props.get("memory_gb"), fail, f"gpu_types.{tname}.memory_gb"),
            _opt_positive(
                props.get("cost_per_hour"),
                fail,
                f"gpu_types.{tname}.cost_per_hour",
                allow_zero=True,
            ),
        )

    groups: list[tuple[str, dict]] = []
    if "racks" in data:
        racks = data["racks"]
        if not isinstance(racks, list):
            raise fail("racks", "must be a list of {name, nodes}")
        for r, rack in enumerate(racks):
            if not isinstance(rack, dict) or not isinstance(rack.get("nodes"), list):
                raise fail(f"racks[{r}]", "must be a mapping with a 'nodes' list")
            rname = str(rack.get("name", f"rack{r}"))
            groups.extend((rname, g) for g in rack["nodes"])
    if "nodes" in data:
        if not isinstance(data["nodes"], list):
            raise fail("nodes", "must be a list of {gpu_type, count, gpus_per_node}")
        groups.extend((None, g) for g in data["nodes"])  # type: ignore[misc]
    if not groups:
        raise ConfigError(f"{source}: no nodes: give a 'nodes' list (or 'racks' with nodes)")

    nodes: list[Node] = []
    next_gpu = 0
    for g, (rack, group) in enumerate(groups):
        key = f"nodes[{g}]"
        if not isinstance(group, dict):
            raise fail(key, "must be a mapping like {gpu_type: V100, count: 9, gpus_per_node: 4}")
        if "gpu_type" not in group:
            raise fail(f"{key}.gpu_type", "missing")
        tname = str(group["gpu_type"])
        tkey = type_key(tname)
        if tkey not in types:
            types[tkey] = GpuType(
                tname, _opt_positive(group.get("memory_gb"), fail, f"{key}.memory_gb")
            )
        count = _positive_int(group.get("count", 1), fail, f"{key}.count")
        per_node = _positive_int(group.get("gpus_per_node", 1), fail, f"{key}.gpus_per_node")
        rack_name = str(group.get("rack", rack if rack is not None else "rack0"))
        prefix = str(group.get("name", f"{types[tkey].name.lower()}-g{g}"))
        for i in range(count):
            gpu_ids = tuple(range(next_gpu, next_gpu + per_node))
            next_gpu += per_node
            nodes.append(Node(len(nodes), f"{prefix}-{i}", rack_name, tkey, gpu_ids))

    used = {n.gpu_type for n in nodes}
    types = {k: v for k, v in types.items() if k in used}
    vcs = _parse_vcs(data.get("vcs"), nodes, fail)
    return Cluster(
        name=name,
        gpu_types=types,
        nodes=tuple(nodes),
        description=str(data.get("description", "")),
        source=source,
        vcs=vcs,
    )


def _parse_vcs(raw: Any, nodes: list[Node], fail: Any) -> tuple[VirtualCluster, ...]:
    """`vcs: [{name, nodes: <count> | [node names], gpu_type: <only with a count>,
    gpus: <quota>}]`. A node count takes the next unowned nodes (of `gpu_type` if given)
    in file order, so the mapping is deterministic."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise fail("vcs", "must be a list of {name, nodes and/or gpus}")
    by_name = {node.name: node.index for node in nodes}
    owned: dict[int, str] = {}
    out: list[VirtualCluster] = []
    for i, vc in enumerate(raw):
        key = f"vcs[{i}]"
        if not isinstance(vc, dict) or "name" not in vc:
            raise fail(key, "must be a mapping with a 'name'")
        name = str(vc["name"])
        wanted = vc.get("nodes")
        indices: list[int] = []
        if isinstance(wanted, list):
            for node_name in wanted:
                if str(node_name) not in by_name:
                    raise fail(f"{key}.nodes", f"no node named {node_name!r}")
                indices.append(by_name[str(node_name)])
        elif wanted is not None:
            count = _positive_int(wanted, fail, f"{key}.nodes")
            only = type_key(vc["gpu_type"]) if "gpu_type" in vc else None
            free = [
                n.index
                for n in nodes
                if n.index not in owned and (only is None or n.gpu_type == only)
            ]
            if len(free) < count:
                raise fail(f"{key}.nodes", f"wants {count} nodes, only {len(free)} are unowned")
            indices = free[:count]
        for index in indices:
            if index in owned:
                raise fail(
                    f"{key}.nodes",
                    f"node {nodes[index].name!r} already belongs to VC {owned[index]!r}",
                )
            owned[index] = name
        quota = vc.get("gpus")
        if quota is not None:
            quota = _positive_int(quota, fail, f"{key}.gpus")
        if not indices and quota is None:
            raise fail(key, "give 'nodes' (a count or a list of node names) or 'gpus' (a quota)")
        out.append(VirtualCluster(name, tuple(indices), quota))
    return tuple(out)


def _positive_int(value: Any, fail: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise fail(key, f"must be a positive integer, got {value!r}")
    return value


def _opt_positive(value: Any, fail: Any, key: str, allow_zero: bool = False) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (value > 0 or (allow_zero and value == 0))
    ):
        raise fail(key, f"must be a positive number, got {value!r}")
    return float(value)
