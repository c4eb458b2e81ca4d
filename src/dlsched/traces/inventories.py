"""Clusters from the public machine inventories, as dicts for ``Cluster.from_dict``.

Each builder reads one raw inventory file (the copies in ``shared/traces/``) and returns the
parsed-YAML form of a cluster (``name``, ``description``, ``gpu_types``, ``nodes`` and, where
the source has them, ``vcs``), so that ``Cluster.from_dict(philly_cluster(path))`` loads it
directly and ``configs/clusters/make_clusters.py`` writes the bundled YAML files. Nodes are
grouped by (GPU type, GPUs per node) in sorted order; group ``name`` is
``<type>x<gpus per node>`` in lower case, so node ``i`` of a group is ``p40x8-<i>``.

GPU memory is given only where the type name states it (``V100M32`` → 32 GB) or the source
lists it (Philly's machine list). A node's CPU cores (``cpus``) and host memory
(``host_memory_gb``) are given only where the inventory lists them per machine (PAI 2020's
``cap_cpu``/``cap_mem``, openb's ``cpu_milli``/``memory_mib``, spot 2026's ``cpu_num``);
nodes are then grouped by those too, and where one (GPU type, GPUs per node) has machines of
several capacities, each group's name adds them: ``v100x8-c96-m384`` (96 cores, 384 GB).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dlsched.errors import ConfigError
from dlsched.traces.reading import open_binary

PHILLY_TYPES: Mapping[str, str] = {"12GB": "P100", "24GB": "P40"}
"""Philly names no GPU models: one public loader's guess per memory size (unconfirmed)."""

HELIOS_GPUS_PER_NODE = 8
HELIOS_GPU_TYPE = "GPU"
"""Helios logs and capacity files do not name the GPU model."""

HYDRA_CLUSTERS: Mapping[str, Mapping[str, int]] = {
    "light": {"A100": 15, "V100": 15, "GTX2080Ti": 15},
    "heavy": {"A100": 10, "V100": 20, "GTX2080Ti": 15},
}
"""Hydra's evaluation clusters (GPUs per type), one GPU per node, from its README."""

_MEMORY_IN_NAME = re.compile(r"(?:M|-)(\d+)GB?$|M(\d+)$", re.IGNORECASE)


def philly_cluster(
    machine_list: str | os.PathLike[str],
    vc_nodes: str | os.PathLike[str] | None = None,
    types: Mapping[str, str] = PHILLY_TYPES,
) -> dict[str, Any]:
    """Philly from ``cluster_machine_list`` (and, optionally, VCs from ``philly_vc.csv``).

    ``vc_nodes`` (``vc,node num``, from HeliosArtifact's QSSF simulator) gives each of 11
    VCs a number of nodes. That simulator's nodes all have 8 GPUs (352 nodes, 2,816 GPUs),
    more than Philly's 231 eight-GPU machines and 2,490 GPUs, so the counts are kept as
    counts of *machines* of the real list: each VC owns its number of machines, 8-GPU
    machines shared out in proportion to the counts (largest remainder, ties to the earlier
    VC in the file) and 2-GPU machines for the rest. Every VC thus gets the same mix, its
    GPU share follows its node count, and the machines left over stay unowned (a pool for
    jobs of the VCs not listed).
    """
    machines = pd.read_csv(machine_list, skipinitialspace=True, dtype=str)
    machines.columns = [c.strip() for c in machines.columns]
    needed = ("machineId", "number of GPUs", "single GPU mem")
    _require(machines, needed, machine_list)
    memory = machines["single GPU mem"].str.strip().str.upper()
    unknown = sorted(set(memory) - set(types))
    if unknown:
        raise ConfigError(
            f"{machine_list}: GPU memory size(s) {unknown} have no GPU type; known: {dict(types)}"
        )
    table = pd.DataFrame(
        {
            "gpu_type": memory.map(dict(types)),
            "gpus": _counts(machines["number of GPUs"], machine_list),
        }
    )
    gpu_memory = {types[m]: float(m.rstrip("GB")) for m in set(memory)}
    cluster = _cluster(
        "philly",
        table,
        gpu_memory,
        "Microsoft Philly hardware from the trace's cluster_machine_list (Jeon et al., "
        "USENIX ATC 2019; msr-fiddle/philly-traces, CC BY 4.0; copy in "
        "Qinghao-Hu/Philly-Trace-Scripts data/cluster_machine_list): 321 machines x 2 GPUs "
        "of 12 GB and 231 machines x 8 GPUs of 24 GB = 2,490 GPUs. The trace does not name "
        "GPU models; P100 for the 12 GB class and P40 for the 24 GB class follow one public "
        "loader's assumption and are unconfirmed. Racks are not modelled.",
    )
    if vc_nodes is not None:
        cluster["vcs"] = _philly_vcs(cluster["nodes"], vc_nodes)
        cluster["description"] += (
            " VCs: the 11 VCs and node counts of HeliosArtifact's QSSF simulator "
            "(framework/QSSF Service/data/philly_vc.csv, MIT), each VC owning that many "
            "machines with 8-GPU machines shared out in proportion (see "
            "configs/clusters/README.md); the other machines belong to no VC."
        )
    return cluster


def pai_2020_cluster(machine_spec: str | os.PathLike[str]) -> dict[str, Any]:
    """Alibaba PAI 2020 from ``pai_machine_spec`` (headerless CSV, or the distributed tar.gz).

    Columns ``machine,gpu_type,cap_cpu,cap_mem,cap_gpu``; CPU-only machines are left out.
    """
    with open_binary(machine_spec) as stream:
        spec = pd.read_csv(
            stream,
            header=None,
            dtype=str,
            names=["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"],
        )
    table = pd.DataFrame(
        {
            "gpu_type": spec["gpu_type"].str.strip(),
            "gpus": _counts(spec["cap_gpu"], machine_spec, allow_zero=True),
            "cpus": _amounts(spec["cap_cpu"], machine_spec, "cap_cpu"),
            "host_memory_gb": _amounts(spec["cap_mem"], machine_spec, "cap_mem"),
        }
    )
    table = table[table["gpus"] > 0]
    return _cluster(
        "alibaba-pai-2020",
        table,
        _memory_from_names(table["gpu_type"]),
        "Alibaba PAI GPU cluster, July-August 2020, from pai_machine_spec (Weng et al., "
        "'MLaaS in the Wild', USENIX NSDI 2022; alibaba/clusterdata "
        "cluster-trace-gpu-v2020, CC BY 4.0, Alibaba Group): 1,814 GPU machines of the "
        "1,897 listed (83 CPU-only left out), 6,742 GPUs. MISC = older GPUs (K40m, K80, "
        "M60...), as the trace says; V100M32 = 32 GB V100. CPU cores and host memory per "
        "node from cap_cpu and cap_mem.",
    )


def openb_cluster(node_list: str | os.PathLike[str]) -> dict[str, Any]:
    """Alibaba GPU 2023 (openb) from ``openb_node_list_gpu_node.csv`` (``sn,cpu_milli,
    memory_mib,gpu,model``); nodes without GPUs are left out."""
    nodes = pd.read_csv(node_list, dtype=str)
    _require(nodes, ("sn", "gpu", "model"), node_list)
    table = pd.DataFrame(
        {
            "gpu_type": nodes["model"].str.strip(),
            "gpus": _counts(nodes["gpu"], node_list, allow_zero=True),
        }
    )
    if "cpu_milli" in nodes.columns:
        table["cpus"] = _amounts(nodes["cpu_milli"], node_list, "cpu_milli") / 1000
    if "memory_mib" in nodes.columns:
        table["host_memory_gb"] = _amounts(nodes["memory_mib"], node_list, "memory_mib") / 1024
    table = table[table["gpus"] > 0]
    return _cluster(
        "alibaba-openb-2023",
        table,
        _memory_from_names(table["gpu_type"]),
        "Alibaba GPU cluster of the 2023 'openb' trace, from openb_node_list_gpu_node "
        "(Weng et al., 'Beware of Fragmentation', USENIX ATC 2023; alibaba/clusterdata "
        "cluster-trace-gpu-v2023, research or study use with citation): 1,213 GPU nodes, "
        "6,212 GPUs. G2 and G3 are undisclosed internal GPU models; V100M16/V100M32 = "
        "16/32 GB V100. CPU cores and host memory per node from cpu_milli and memory_mib.",
    )


def spot_2026_cluster(node_info: str | os.PathLike[str]) -> dict[str, Any]:
    """Alibaba spot-GPU 2026 from ``node_info_df.csv`` (``gpu_model,gpu_capacity_num,
    cpu_num,node_name``); a node's ``cpus`` are its ``cpu_num`` (vCPUs). The file lists no
    host memory."""
    nodes = pd.read_csv(node_info, dtype=str)
    _require(nodes, ("gpu_model", "gpu_capacity_num"), node_info)
    table = pd.DataFrame(
        {
            "gpu_type": nodes["gpu_model"].str.strip(),
            "gpus": _counts(nodes["gpu_capacity_num"], node_info, allow_zero=True),
        }
    )
    if "cpu_num" in nodes.columns:
        table["cpus"] = _amounts(nodes["cpu_num"], node_info, "cpu_num")
    table = table[table["gpus"] > 0]
    return _cluster(
        "alibaba-spot-2026",
        table,
        _memory_from_names(table["gpu_type"]),
        "Alibaba spot-GPU cluster from node_info_df (Duan et al., 'GFS: A Preemptive "
        "Scheduling Framework for GPU Clusters with Predictive Spot Management', ASPLOS "
        "2026; alibaba/clusterdata cluster-trace-v2026-spot-gpu, research or study use with "
        "citation): 4,278 nodes, 10,412 GPUs. GPU-series-1/2 are undisclosed models. CPU "
        "cores (vCPUs) per node from cpu_num; the file lists no host memory.",
    )


def helios_cluster(
    gpu_number: str | os.PathLike[str], name: str, date: str | None = None, *, source: str = ""
) -> dict[str, Any]:
    """A Helios cluster from its ``cluster_gpu_number.csv`` (GPUs per VC per day).

    The VCs and their GPUs are those of ``date`` (default: the last day in the file); each
    VC owns ``GPUs / 8`` nodes of 8 GPUs (Helios' nodes; every count in the files is a
    multiple of 8); VCs with no GPU that day are left out.
    """
    table = pd.read_csv(gpu_number, dtype={"date": str})
    _require(table, ("date", "total"), gpu_number)
    day = table.iloc[-1] if date is None else table[table["date"] == date]
    if isinstance(day, pd.DataFrame):
        if day.empty:
            raise ConfigError(f"{gpu_number}: no row for date {date!r}")
        day = day.iloc[0]
    vcs: list[dict[str, Any]] = []
    for vc in (c for c in table.columns if c not in ("date", "total")):
        gpus = int(day[vc])
        if gpus % HELIOS_GPUS_PER_NODE:
            raise ConfigError(
                f"{gpu_number}: VC {vc} has {gpus} GPUs on {day['date']}, not "
                f"a multiple of {HELIOS_GPUS_PER_NODE}"
            )
        if gpus:
            vcs.append({"name": vc, "nodes": gpus // HELIOS_GPUS_PER_NODE})
    total = int(day["total"])
    if total != sum(v["nodes"] for v in vcs) * HELIOS_GPUS_PER_NODE:
        raise ConfigError(
            f"{gpu_number}: the VCs' GPUs on {day['date']} do not add up to the total {total}"
        )
    nodes = total // HELIOS_GPUS_PER_NODE
    return {
        "name": name,
        "description": (
            f"SenseTime Helios {name.split('-')[-1].capitalize()} on {day['date']}: {nodes} "
            f"nodes x {HELIOS_GPUS_PER_NODE} GPUs = {total} GPUs in {len(vcs)} VCs, each VC "
            f"owning GPUs/{HELIOS_GPUS_PER_NODE} nodes, from cluster_gpu_number.csv "
            f"({source or 'S-Lab-System-Group/HeliosData'}; Hu et al., SC 2021). The "
            "trace does not name the GPU model ('GPU')."
        ),
        "gpu_types": {HELIOS_GPU_TYPE: {}},
        "nodes": [
            {
                "gpu_type": HELIOS_GPU_TYPE,
                "count": nodes,
                "gpus_per_node": HELIOS_GPUS_PER_NODE,
                "name": "node",
            }
        ],
        "vcs": vcs,
    }


def hydra_cluster(kind: str) -> dict[str, Any]:
    """Hydra's 45-GPU evaluation cluster, ``"light"`` or ``"heavy"`` (one GPU per node)."""
    if kind not in HYDRA_CLUSTERS:
        raise ValueError(f"hydra_cluster: kind must be one of {sorted(HYDRA_CLUSTERS)}")
    counts = HYDRA_CLUSTERS[kind]
    shape = " + ".join(f"{n} {t}" for t, n in counts.items())
    return {
        "name": f"hydra-{kind}",
        "description": (
            f"Hydra's {kind}-workload cluster ({shape} = {sum(counts.values())} GPUs, one "
            "GPU per node) from the iscas-system/Hydra artifact README (Yang et al., IEEE TC "
            "72(8), 2023); goes with its cases/"
            f"{'20' if kind == 'light' else '30'}_ddl.csv."
        ),
        "gpu_types": {t: {} for t in counts},
        "nodes": [
            {"gpu_type": t, "count": n, "gpus_per_node": 1, "name": t.lower()}
            for t, n in counts.items()
        ],
    }


def _cluster(
    name: str, table: pd.DataFrame, memory: Mapping[str, float], description: str
) -> dict[str, Any]:
    capacities = [c for c in ("cpus", "host_memory_gb") if c in table.columns]
    keys = ["gpu_type", "gpus", *capacities]
    groups = table.groupby(keys).size().reset_index(name="count")
    shapes = groups.groupby(["gpu_type", "gpus"])["count"].transform("size").to_numpy()
    nodes: list[dict[str, Any]] = []
    for row, several in zip(groups.to_dict("records"), shapes > 1, strict=True):
        t, gpus = row["gpu_type"], int(row["gpus"])
        group: dict[str, Any] = {
            "gpu_type": t,
            "count": int(row["count"]),
            "gpus_per_node": gpus,
            "name": f"{t.lower()}x{gpus}",
        }
        for key in capacities:
            group[key] = _plain(row[key])
        if several:
            group["name"] += "".join(
                f"-{tag}{group[key]:g}"
                for key, tag in (("cpus", "c"), ("host_memory_gb", "m"))
                if key in group
            )
        nodes.append(group)
    return {
        "name": name,
        "description": description,
        "gpu_types": {
            t: ({"memory_gb": memory[t]} if t in memory else {})
            for t in sorted(set(table["gpu_type"]))
        },
        "nodes": nodes,
    }


def _plain(value: Any) -> int | float:
    """A capacity as YAML should show it: an int when whole (96, not 96.0)."""
    number = float(value)
    return int(number) if number.is_integer() else number


def _amounts(values: pd.Series, source: Any, column: str) -> pd.Series:
    """A column of capacities: numbers >= 0, else a `ConfigError` naming file, row, column."""
    parsed = pd.to_numeric(values.str.strip(), errors="coerce")
    bad = parsed.isna() | (parsed < 0) | ~np.isfinite(parsed)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise ConfigError(
            f"{source}: row {i + 2}, column {column!r}: expected a number >= 0, "
            f"got {values.iat[i]!r}"
        )
    return parsed.astype(np.float64)


def _philly_vcs(
    groups: Sequence[Mapping[str, Any]], vc_nodes: str | os.PathLike[str]
) -> list[dict[str, Any]]:
    table = pd.read_csv(vc_nodes, dtype=str)
    table.columns = [c.strip() for c in table.columns]
    _require(table, ("vc", "node num"), vc_nodes)
    counts = _counts(table["node num"], vc_nodes)
    big = max(groups, key=lambda g: g["gpus_per_node"])
    small = [g for g in groups if g is not big]
    if len(small) != 1:
        raise ConfigError(f"{vc_nodes}: expected two machine classes, got {len(groups)}")
    wanted = int(counts.sum())
    have = sum(g["count"] for g in groups)
    if wanted > have:
        raise ConfigError(f"{vc_nodes}: the VCs want {wanted} machines, the list has {have}")
    big_share = _largest_remainder(counts * big["count"] / wanted, big["count"])
    big_share = np.minimum(big_share, counts)
    small_share = counts - big_share
    if small_share.sum() > small[0]["count"]:
        raise ConfigError(f"{vc_nodes}: not enough {small[0]['gpus_per_node']}-GPU machines")
    vcs: list[dict[str, Any]] = []
    next_big = next_small = 0
    for vc, n_big, n_small in zip(table["vc"].str.strip(), big_share, small_share, strict=True):
        names = [f"{big['name']}-{i}" for i in range(next_big, next_big + int(n_big))]
        names += [f"{small[0]['name']}-{i}" for i in range(next_small, next_small + int(n_small))]
        next_big += int(n_big)
        next_small += int(n_small)
        vcs.append({"name": vc, "nodes": names})
    return vcs


def _largest_remainder(quotas: np.ndarray, total: int) -> np.ndarray:
    """Integers summing to ``total``, each the floor of its quota plus at most one; the
    largest remainders get the extra ones (ties: the earlier entry)."""
    floors = np.floor(quotas + 1e-9).astype(np.int64)
    extra = total - int(floors.sum())
    order = np.argsort(-(quotas - floors), kind="stable")
    floors[order[:extra]] += 1
    return floors


def _counts(values: pd.Series, source: Any, allow_zero: bool = False) -> pd.Series:
    parsed = pd.to_numeric(values.str.strip(), errors="coerce")
    low = 0 if allow_zero else 1
    bad = parsed.isna() | (parsed < low) | (parsed % 1 != 0)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise ConfigError(
            f"{source}: row {i + 2}: expected a whole number >= {low}, got {values.iat[i]!r}"
        )
    return parsed.astype(np.int64)


def _memory_from_names(types: pd.Series) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in set(types):
        match = _MEMORY_IN_NAME.search(t)
        if match:
            out[t] = float(match.group(1) or match.group(2))
    return out


def _require(table: pd.DataFrame, columns: Sequence[str], source: Any) -> None:
    for column in columns:
        if column not in table.columns:
            raise ConfigError(
                f"{source}: missing column {column!r} (has {', '.join(map(str, table.columns))})"
            )
