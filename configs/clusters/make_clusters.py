"""Write the inventory-built cluster YAMLs of this folder from the raw files in ../shared.

Run from the repository root, with the shared data next to it:

    PYTHONPATH=src python configs/clusters/make_clusters.py

Each file is ``dlsched.traces.inventories.<builder>(<raw file>)`` rendered as YAML; loading
it with ``dlsched.load_cluster`` gives the same cluster as ``Cluster.from_dict`` on the
builder's dict (tests/test_traces_inventories.py checks this). ``gavel-108.yaml`` and
``tiresias-60.yaml`` are hand-written from the papers and not touched.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from dlsched.cluster import Cluster
from dlsched.traces import inventories as inv

SHARED = Path("../shared/traces")
OUT = Path("configs/clusters")

BUILDS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "philly": lambda s: inv.philly_cluster(
        s / "philly/cluster_machine_list.csv", s / "philly/philly_vc_nodes.csv"
    ),
    "alibaba-pai-2020": lambda s: inv.pai_2020_cluster(
        s / "alibaba_pai_v2020/pai_machine_spec.tar.gz"
    ),
    "alibaba-openb-2023": lambda s: inv.openb_cluster(
        s / "alibaba_gpu_v2023/openb_node_list_gpu_node.csv.gz"
    ),
    "alibaba-spot-2026": lambda s: inv.spot_2026_cluster(
        s / "alibaba_spot_gpu_v2026/node_info_df.csv.gz"
    ),
    "helios-venus": lambda s: inv.helios_cluster(
        s / "helios/Venus_cluster_gpu_number.csv.gz",
        "helios-venus",
        source="S-Lab-System-Group/HeliosData data/Venus/cluster_gpu_number.csv, CC BY 4.0",
    ),
    "helios-earth": lambda s: inv.helios_cluster(
        s / "helios/Earth_cluster_gpu_number.csv.gz",
        "helios-earth",
        source="S-Lab-System-Group/HeliosArtifact analysis/2_cluster characterization/"
        "Earth_vcs/Earth_gpu_number.csv, MIT",
    ),
    "hydra-light": lambda s: inv.hydra_cluster("light"),
    "hydra-heavy": lambda s: inv.hydra_cluster("heavy"),
}
"""File stem → builder of its cluster dict from the shared traces folder."""


def to_yaml(cluster: dict[str, Any]) -> str:
    """The cluster dict as a readable YAML document (one line per node group and VC)."""
    lines = [f"name: {_scalar(cluster['name'])}", "description: >-"]
    lines += ["  " + line for line in textwrap.wrap(cluster["description"], 90)]
    lines.append("gpu_types:")
    for name, props in cluster["gpu_types"].items():
        lines.append(f"  {_scalar(name)}: {_flow(props or {})}")
    lines.append("nodes:")
    lines += [f"  - {_flow(group)}" for group in cluster["nodes"]]
    if cluster.get("vcs"):
        lines.append("vcs:")
        for vc in cluster["vcs"]:
            name = _quoted(vc["name"])  # VC hashes like 6214e9 read as numbers in YAML 1.2
            if isinstance(vc.get("nodes"), list):
                names = textwrap.wrap(", ".join(vc["nodes"]), 86)
                lines.append(f"  - name: {name}")
                lines.append("    nodes: [" + ("\n" + " " * 12).join(names) + "]")
            else:
                rest = _flow({k: v for k, v in vc.items() if k != "name"})[1:-1]
                lines.append(f"  - {{name: {name}, {rest}}}")
    return "\n".join(lines) + "\n"


def _flow(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**9).strip()


def _quoted(value: Any) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def _scalar(value: Any) -> str:
    return _flow([value])[1:-1]


def main() -> None:
    """Write every file and print its shape."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared traces folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    for stem, build in BUILDS.items():
        data = build(args.shared)
        text = to_yaml(data)
        expected = Cluster.from_dict(data, source=stem)
        written = Cluster.from_dict(yaml.safe_load(text), source=stem)
        assert (written.nodes, written.vcs) == (expected.nodes, expected.vcs), stem
        (args.out / f"{stem}.yaml").write_text(text)
        print(f"{args.out / stem}.yaml: {written!r}, {len(written.vcs)} VCs")


if __name__ == "__main__":
    main()
