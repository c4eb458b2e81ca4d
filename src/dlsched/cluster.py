"""The cluster: racks ⊃ nodes ⊃ GPUs, loaded from a YAML file.

A `Cluster` is immutable: it describes hardware. What is allocated to whom lives in the
engine's ledger (`dlsched.engine.ledger`). GPU type names match case-insensitively; the
spelling of the first occurrence in the cluster file is the one shown in results. A node
group may declare its nodes' CPU cores (`cpus`) and host memory (`host_memory_gb`; a group's
`memory_gb` is its GPUs' memory); the ledger then accounts jobs' CPU and memory demands.

A cluster may also rent nodes (`instance_types`, `limits`, `billing`: `dlsched.rented`):
each instance type's maximum count of nodes follows the fixed ones, and the engine starts
them absent (`dlsched.engine.availability`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dlsched import safeyaml
from dlsched.bundled import resolve_cluster
from dlsched.errors import ConfigError, check_keys, did_you_mean
from dlsched.rented import RentedCapacity, node_groups, parse_rented

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
    """One GPU type: its display name and optional memory and hourly price.

    `active_w`, `idle_w`, `off_w`: its power draw (watts) busy, idle and powered off, when
    the cluster file gives them (`dlsched.energy` has vendors' figures for the others)."""

    name: str
    memory_gb: float | None = None
    cost_per_hour: float | None = None
    active_w: float | None = None
    idle_w: float | None = None
    off_w: float | None = None


@dataclass(frozen=True)
class Node:
    """A machine: an index, a name, a rack and the ids of its GPUs (all of one type).

    `cpus` (cores) and `memory_gb` (host memory, GB) are its capacities for jobs' CPU and
    memory demands; None means the file declares none, and the node never runs short of it.
    """

    index: int
    name: str
    rack: str
    gpu_type: str
    gpu_ids: tuple[int, ...]
    cpus: float | None = None
    memory_gb: float | None = None
    node_w: float | None = None  # base power of the machine without its GPUs (watts)


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
    # the file's `energy:` section (`price_per_kwh`, `carbon_g_per_kwh`, and the node power
    # transitions `wake_s`, `sleep_s`; each optional), or None when it has none: then runs
    # report no energy figures (`dlsched.energy`)
    energy: Mapping[str, float] | None = None
    rented: RentedCapacity | None = None  # instance types to rent (`dlsched.rented`)
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
    def declares_cpus(self) -> bool:
        """Whether any node declares CPU cores (then jobs' CPU demands are accounted)."""
        return any(node.cpus is not None for node in self.nodes)

    @property
    def declares_memory(self) -> bool:
        """Whether any node declares host memory (then jobs' memory demands are accounted)."""
        return any(node.memory_gb is not None for node in self.nodes)

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


MAX_TOTAL_GPUS = 1_000_000
"""The most GPUs a cluster file may describe; larger counts are refused before any node is built."""

MAX_GPUS_PER_NODE = 1024
"""The most GPUs one node may hold (``gpus_per_node``)."""

_TOP_KEYS = (
    "name",
    "description",
    "gpu_types",
    "racks",
    "nodes",
    "vcs",
    "energy",
    "instance_types",
    "limits",
    "billing",
)
_GPU_TYPE_KEYS = ("memory_gb", "cost_per_hour", "active_w", "idle_w", "off_w")
_ENERGY_KEYS = ("price_per_kwh", "carbon_g_per_kwh", "wake_s", "sleep_s")
MAX_TRANSITION_S = 86400.0
"""The longest power-state transition (`energy.wake_s`, `energy.sleep_s`) a cluster file may
declare: a day; a longer one is taken for a unit mistake."""
_RACK_KEYS = ("name", "nodes")
_GROUP_KEYS = (
    "gpu_type",
    "count",
    "gpus_per_node",
    "name",
    "rack",
    "memory_gb",
    "cpus",
    "host_memory_gb",
    "node_w",
)
_VC_KEYS = ("name", "nodes", "gpu_type", "gpus")


class _MissingClusterFile(ConfigError, FileNotFoundError):
    """No such cluster file nor bundled name: a `ConfigError` that is also `FileNotFoundError`."""


def load_cluster(path: str | Path) -> Cluster:
    """Load a cluster YAML file, or a bundled one by name (``"gavel-108"``, ``"philly"``).

    Every problem with the file (missing, unreadable, not UTF-8, not YAML, not a mapping, an
    unknown key, a duplicate name, an absurd size) is one `ConfigError` naming the file.
    """
    try:
        resolved = resolve_cluster(path)
    except FileNotFoundError as exc:
        raise _MissingClusterFile(str(exc)) from None
    return _parse(read_cluster_file(resolved), str(resolved))


def read_cluster_file(path: Path) -> Any:
    """The parsed YAML of a cluster file, not yet validated (`Cluster.from_dict` does that).

    Read by `dlsched.safeyaml` (a regular file, bounded in size and alias expansion, no
    duplicate key): every problem with the file is a `ConfigError` naming it, so every reader
    of cluster files (such as the experiment loader) shares these errors.
    """
    return safeyaml.load_file(path, "cluster file")


def _fail(source: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{source}: key {key!r}: {message}")


def _check_mapping_keys(
    source: str, key: str | None, value: dict[Any, Any], allowed: tuple[str, ...]
) -> None:
    check_keys(source if key is None else f"{source}: key {key!r}", value, allowed)


def _a_kind(value: Any) -> str:
    if value is None:
        return "nothing (an empty file)"
    return f"a {type(value).__name__}"


def _parse(data: Any, source: str) -> Cluster:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: a cluster file must be a mapping with 'name' and 'nodes', "
            f"got {_a_kind(data)}"
        )
    _check_mapping_keys(source, None, data, _TOP_KEYS)
    name = Path(source).stem if data.get("name") is None else _name(data["name"], source, "name")
    types = _parse_gpu_types(data.get("gpu_types"), source)

    groups: list[tuple[str, str | None, Any]] = []  # (location, rack of a racks entry, group)
    if "racks" in data:
        racks = data["racks"]
        if not isinstance(racks, list):
            raise _fail(source, "racks", "must be a list of {name, nodes}")
        rack_where: dict[str, str] = {}
        for r, rack in enumerate(racks):
            key = f"racks[{r}]"
            if isinstance(rack, dict):
                _check_mapping_keys(source, key, rack, _RACK_KEYS)
            if not isinstance(rack, dict) or not isinstance(rack.get("nodes"), list):
                raise _fail(source, key, "must be a mapping with a 'nodes' list")
            rname = _name(rack["name"], source, f"{key}.name") if "name" in rack else f"rack{r}"
            if rname in rack_where:
                raise _fail(
                    source,
                    f"{key}.name",
                    f"rack {rname!r} is already listed as {rack_where[rname]}; "
                    "list each rack once, with all its node groups",
                )
            rack_where[rname] = key
            groups.extend((f"{key}.nodes[{j}]", rname, g) for j, g in enumerate(rack["nodes"]))
    if "nodes" in data:
        if not isinstance(data["nodes"], list):
            raise _fail(source, "nodes", "must be a list of {gpu_type, count, gpus_per_node}")
        groups.extend((f"nodes[{j}]", None, g) for j, g in enumerate(data["nodes"]))
    rented = parse_rented(data, source)
    fixed_groups = len(groups)
    if rented is not None:  # each instance type's maximum count, after the fixed nodes
        groups.extend(
            (f"instance_types.{name}", None, g)
            for name, g in zip(rented.instance_types, node_groups(rented), strict=True)
        )
    if not groups:
        raise ConfigError(
            f"{source}: no nodes: give a 'nodes' list (or 'racks' with nodes, or "
            "'instance_types' to rent)"
        )

    # Validate every group and the total size before building anything, so that an absurd
    # count is refused instead of exhausting memory.
    # (prefix, type key, count, GPUs per node, rack, cpus, host memory GB, node watts)
    plans: list[tuple[str, str, int, int, str, float | None, float | None, float | None]] = []
    prefix_where: dict[str, str] = {}
    total_gpus = 0
    # g, the index over all groups, is in the default node-name prefix that VCs may name.
    for g, (key, rack, group) in enumerate(groups):
        if not isinstance(group, dict):
            raise _fail(
                source, key, "must be a mapping like {gpu_type: V100, count: 9, gpus_per_node: 4}"
            )
        _check_mapping_keys(source, key, group, _GROUP_KEYS)
        if "gpu_type" not in group:
            raise _fail(source, f"{key}.gpu_type", "missing; give the GPU type of these nodes")
        tname = _name(group["gpu_type"], source, f"{key}.gpu_type")
        tkey = type_key(tname)
        memory = _opt_positive(group.get("memory_gb"), source, f"{key}.memory_gb")
        if tkey not in types:
            types[tkey] = GpuType(tname, memory)
        elif memory is not None and types[tkey].memory_gb not in (None, memory):
            raise _fail(
                source,
                f"{key}.memory_gb",
                f"{memory:g} conflicts with the {types[tkey].memory_gb:g} GB already set for "
                f"{types[tkey].name}; give one memory per GPU type (in 'gpu_types')",
            )
        count = _positive_int(group.get("count", 1), source, f"{key}.count")
        per_node = _positive_int(group.get("gpus_per_node", 1), source, f"{key}.gpus_per_node")
        if per_node > MAX_GPUS_PER_NODE:
            raise _fail(
                source,
                f"{key}.gpus_per_node",
                f"{per_node:,} is more than the limit of {MAX_GPUS_PER_NODE:,} GPUs per node",
            )
        total_gpus += count * per_node
        if total_gpus > MAX_TOTAL_GPUS:
            raise _fail(
                source,
                f"{key}.count",
                f"{count:,} nodes of {per_node:,} GPUs bring the cluster to {total_gpus:,} GPUs, "
                f"more than the limit of {MAX_TOTAL_GPUS:,} GPUs per cluster",
            )
        if "rack" in group:
            rack_name = _name(group["rack"], source, f"{key}.rack")
        else:
            rack_name = rack if rack is not None else "rack0"
        if "name" in group:
            prefix = _name(group["name"], source, f"{key}.name")
        else:
            prefix = f"{types[tkey].name.lower()}-g{g}"
        if prefix in prefix_where:
            raise _fail(
                source,
                f"{key}.name",
                f"node-group name {prefix!r} is already used by {prefix_where[prefix]}; "
                "give each node group its own name",
            )
        prefix_where[prefix] = key
        cpus = _opt_capacity(group.get("cpus"), source, f"{key}.cpus", "cores")
        # A group's `memory_gb` has always meant its GPUs' memory; host memory has its own key.
        host_memory = _opt_capacity(
            group.get("host_memory_gb"), source, f"{key}.host_memory_gb", "GB"
        )
        node_w = _opt_capacity(group.get("node_w"), source, f"{key}.node_w", "watts")
        plans.append((prefix, tkey, count, per_node, rack_name, cpus, host_memory, node_w))

    nodes: list[Node] = []
    next_gpu = 0
    node_type: dict[int, str] = {}
    rented_names = list(rented.instance_types) if rented is not None else []
    for g, (prefix, tkey, count, per_node, rack_name, cpus, host_memory, node_w) in enumerate(
        plans
    ):
        for i in range(count):
            if g >= fixed_groups:
                node_type[len(nodes)] = rented_names[g - fixed_groups]
            gpu_ids = tuple(range(next_gpu, next_gpu + per_node))
            next_gpu += per_node
            nodes.append(
                Node(
                    len(nodes), f"{prefix}-{i}", rack_name, tkey, gpu_ids, cpus, host_memory, node_w
                )
            )

    used = {n.gpu_type for n in nodes}
    types = {k: v for k, v in types.items() if k in used}
    vcs = _parse_vcs(data.get("vcs"), nodes, source)
    if rented is not None:
        rented = replace(rented, node_type=node_type)
        owned = sorted(i for vc in vcs for i in vc.node_indices if i in node_type)
        if owned:
            raise _fail(
                source,
                "vcs",
                f"node {nodes[owned[0]].name!r} is rented; a VC may own fixed nodes only",
            )
    cluster = Cluster(
        name=name,
        gpu_types=types,
        nodes=tuple(nodes),
        description=str(data.get("description", "")),
        source=source,
        vcs=vcs,
        energy=_parse_energy(data.get("energy", None), "energy" in data, source),
        rented=rented,
    )
    if cluster.energy is not None:  # every GPU type needs watts: refused now, not after a run
        from dlsched.energy import type_power

        type_power(cluster)
    return cluster


def _parse_gpu_types(declared: Any, source: str) -> dict[str, GpuType]:
    """`gpu_types: {<name>: {memory_gb, cost_per_hour}}`, keyed by `type_key`."""
    if declared is None:
        return {}
    if not isinstance(declared, dict):
        raise _fail(
            source, "gpu_types", "must be a mapping of type name to {memory_gb, cost_per_hour}"
        )
    types: dict[str, GpuType] = {}
    first: dict[str, object] = {}
    for raw_name, props in declared.items():
        key = f"gpu_types.{raw_name}"
        tname = _name(raw_name, source, key)
        tkey = type_key(tname)
        if tkey in first:
            raise _fail(
                source,
                key,
                f"the same GPU type as gpu_types.{first[tkey]} (type names match "
                "case-insensitively); declare it once",
            )
        first[tkey] = raw_name
        props = props or {}
        if not isinstance(props, dict):
            raise _fail(source, key, "must be a mapping like {memory_gb: 16, cost_per_hour: 2.5}")
        _check_mapping_keys(source, key, props, _GPU_TYPE_KEYS)
        types[tkey] = GpuType(
            tname,
            _opt_positive(props.get("memory_gb"), source, f"{key}.memory_gb"),
            _opt_positive(
                props.get("cost_per_hour"), source, f"{key}.cost_per_hour", allow_zero=True
            ),
            _opt_positive(props.get("active_w"), source, f"{key}.active_w"),
            _opt_capacity(props.get("idle_w"), source, f"{key}.idle_w", "watts"),
            _opt_capacity(props.get("off_w"), source, f"{key}.off_w", "watts"),
        )
        power = types[tkey]
        if power.active_w is not None and power.idle_w is not None:
            if power.idle_w > power.active_w:
                raise _fail(
                    source,
                    f"{key}.idle_w",
                    f"{power.idle_w:g} W is more than active_w {power.active_w:g} W; "
                    "a GPU draws less idle than busy",
                )
    return types


def _parse_energy(raw: Any, given: bool, source: str) -> dict[str, float] | None:
    """`energy: {price_per_kwh, carbon_g_per_kwh, wake_s, sleep_s}` (each optional, >= 0;
    the transitions at most `MAX_TRANSITION_S`); None if absent."""
    if not given:
        return None
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise _fail(
            source,
            "energy",
            f"must be a mapping like {{price_per_kwh: 0.12, carbon_g_per_kwh: 400}}, "
            f"got {_a_kind(raw)}",
        )
    _check_mapping_keys(source, "energy", raw, _ENERGY_KEYS)
    out: dict[str, float] = {}
    for name, unit in (("price_per_kwh", "money per kWh"), ("carbon_g_per_kwh", "g CO2 per kWh")):
        value = _opt_capacity(raw.get(name), source, f"energy.{name}", unit)
        if value is not None:
            out[name] = value
    for name in ("wake_s", "sleep_s"):
        value = _opt_capacity(raw.get(name), source, f"energy.{name}", "seconds")
        if value is not None:
            if value > MAX_TRANSITION_S:
                raise _fail(
                    source,
                    f"energy.{name}",
                    f"{value:g} s is longer than a day ({MAX_TRANSITION_S:g} s); "
                    "give the node's power transition in seconds",
                )
            out[name] = value
    return out


def _parse_vcs(raw: Any, nodes: list[Node], source: str) -> tuple[VirtualCluster, ...]:
    """`vcs: [{name, nodes: <count> | [node names], gpu_type: <only with a count>,
    gpus: <quota>}]`. A node count takes the next unowned nodes (of `gpu_type` if given)
    in file order, so the mapping is deterministic."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _fail(source, "vcs", "must be a list of {name, nodes and/or gpus}")
    by_name = {node.name: node.index for node in nodes}
    owned: dict[int, str] = {}
    vc_where: dict[str, str] = {}
    out: list[VirtualCluster] = []
    for i, vc in enumerate(raw):
        key = f"vcs[{i}]"
        if not isinstance(vc, dict) or "name" not in vc:
            raise _fail(source, key, "must be a mapping with a 'name'")
        _check_mapping_keys(source, key, vc, _VC_KEYS)
        name = _name(vc["name"], source, f"{key}.name")
        if name in vc_where:
            raise _fail(
                source,
                f"{key}.name",
                f"VC name {name!r} is already used by {vc_where[name]}; give each VC its own name",
            )
        vc_where[name] = key
        wanted = vc.get("nodes")
        if "gpu_type" in vc and (wanted is None or isinstance(wanted, list)):
            raise _fail(
                source,
                f"{key}.gpu_type",
                "applies only with a node count ('nodes: 4'); leave it out or give a count",
            )
        indices: list[int] = []
        if isinstance(wanted, list):
            for node_name in wanted:
                if str(node_name) not in by_name:
                    raise _fail(
                        source,
                        f"{key}.nodes",
                        f"no node named {node_name!r}{did_you_mean(node_name, by_name)}",
                    )
                indices.append(by_name[str(node_name)])
        elif wanted is not None:
            count = _positive_int(wanted, source, f"{key}.nodes")
            only = None
            if "gpu_type" in vc:
                only = type_key(_name(vc["gpu_type"], source, f"{key}.gpu_type"))
                present = {n.gpu_type for n in nodes}
                if only not in present:
                    raise _fail(
                        source,
                        f"{key}.gpu_type",
                        f"no node has GPU type {vc['gpu_type']!r}{did_you_mean(only, present)}",
                    )
            free = [
                n.index
                for n in nodes
                if n.index not in owned and (only is None or n.gpu_type == only)
            ]
            if len(free) < count:
                raise _fail(
                    source, f"{key}.nodes", f"wants {count} nodes, only {len(free)} are unowned"
                )
            indices = free[:count]
        for index in indices:
            if index in owned:
                raise _fail(
                    source,
                    f"{key}.nodes",
                    f"node {nodes[index].name!r} already belongs to VC {owned[index]!r}",
                )
            owned[index] = name
        quota = vc.get("gpus")
        if quota is not None:
            quota = _positive_int(quota, source, f"{key}.gpus")
        if not indices and quota is None:
            raise _fail(
                source, key, "give 'nodes' (a count or a list of node names) or 'gpus' (a quota)"
            )
        out.append(VirtualCluster(name, tuple(indices), quota))
    return tuple(out)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _name(value: Any, source: str, key: str) -> str:
    """A name as text. Integers are fine (``2080``); a float or a date means YAML read an
    unquoted name as a number, which would silently change it (``6214e9``)."""
    if isinstance(value, str) and value.strip():
        return value
    if _is_count(value):
        return str(value)
    raise _fail(source, key, f"must be a non-empty name, got {value!r}; quote it in the YAML")


def _positive_int(value: Any, source: str, key: str) -> int:
    if not _is_count(value) or value < 1:
        raise _fail(source, key, f"must be a positive integer, got {value!r}")
    return int(value)


def _opt_positive(value: Any, source: str, key: str, allow_zero: bool = False) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not (value > 0 or (allow_zero and value == 0))
    ):
        raise _fail(source, key, f"must be a positive number, got {value!r}")
    return float(value)


def _opt_capacity(value: Any, source: str, key: str, unit: str) -> float | None:
    """A node's CPU or host-memory capacity: a finite number >= 0, or None when not given."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < 0
    ):
        raise _fail(source, key, f"must be a number of {unit} >= 0, got {value!r}")
    return float(value)
