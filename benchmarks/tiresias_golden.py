"""Save, or check against a saved copy, what Tiresias decides on its fidelity inputs.

The runs of `tests/test_fidelity_tiresias.py` (the Tiresias authors' traces and cluster
shapes in ``../shared/anchors/tiresias``), under `tiresias` and `tiresias-gittins` with each
starvation setting of the reference runs, in each mode (`compat=True`, the default,
`literal=True`), plus FIFO, fit-first and SRTF: per run, the summary without its wall-clock
keys and digests of the per-job table and the event log. A speed change must leave every one
of them identical:

    python benchmarks/tiresias_golden.py --save /tmp/tiresias-golden
    python benchmarks/tiresias_golden.py --check /tmp/tiresias-golden
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd
from policy_golden import digest

import dlsched

ANCHORS = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "tiresias"
SCHEDULES = {
    "dlas-gpu": ("tiresias", None),
    "dlas-gpu-4": ("tiresias", 4.0),
    "dlas-gpu-8": ("tiresias", 8.0),
    "dlas-gpu-gittins": ("tiresias-gittins", None),
}
MODES: dict[str, dict[str, Any]] = {"compat": {"compat": True}, "default": {}, "literal": {}}
OTHERS: dict[str, tuple[str, dict[str, Any]]] = {
    "fifo": ("fifo", {}),
    "fjf": ("fifo", {"backfill": "greedy"}),
    "srtf": ("srtf", {}),
}
_WALL_KEYS = ("sim_wall_s", "scheduler_wall_s")


def _find(name: str) -> Path:
    for folder in ("upstream", "derived"):
        if (ANCHORS / folder / name).exists():
            return ANCHORS / folder / name
    raise FileNotFoundError(name)


def _cluster(spec: str) -> dlsched.Cluster:
    shape = pd.read_csv(_find(spec)).iloc[0]
    count = int(shape.num_switch * shape.num_node_p_switch)
    return dlsched.Cluster.from_dict(
        {
            "name": spec,
            "nodes": [
                {"gpu_type": "P100", "count": count, "gpus_per_node": int(shape.num_gpu_p_node)}
            ],
        }
    )


def runs() -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """(label, cluster spec, trace, policy, parameters) of every run."""
    ref = pd.read_csv(ANCHORS / "reference_results.csv")
    out = []
    for spec, trace in sorted({(r.cluster_spec, r.trace) for r in ref.itertuples()}):
        for schedule, (policy, knob) in SCHEDULES.items():
            for mode, params in MODES.items():
                params = dict(params, starvation_knob=knob)
                if mode == "literal":
                    params["literal"] = True
                out.append((f"{spec}/{trace}/{schedule}/{mode}", spec, trace, policy, params))
        for name, (policy, params) in OTHERS.items():
            out.append((f"{spec}/{trace}/{name}", spec, trace, policy, params))
    return out


def record(spec: str, trace: str, policy: str, params: dict[str, Any]) -> dict[str, Any]:
    """The summary (without wall-clock keys) and digests of one run."""
    workload = dlsched.load_trace(_find(trace), format="tiresias")
    result = dlsched.simulate(
        workload, _cluster(spec), policy=policy, overheads="tiresias-sim", audit=False, **params
    )
    summary = {k: v for k, v in result.summary().items() if k not in _WALL_KEYS}
    return json.loads(
        json.dumps(
            {"summary": summary, "jobs": digest(result.jobs), "events": digest(result.events)},
            default=str,
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--save", type=Path)
    where.add_argument("--check", type=Path)
    args = parser.parse_args()
    records = {label: record(*rest) for label, *rest in runs()}
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)
        (args.save / "tiresias.json").write_text(json.dumps(records, indent=1))
        print(f"{len(records)} runs saved")
        return
    saved = json.loads((args.check / "tiresias.json").read_text())
    different = [label for label in records if records[label] != saved.get(label)]
    for label in different:
        before = saved.get(label, {}).get("summary")
        print(f"DIFFERENT {label}: {before} -> {records[label]['summary']}")
    print(f"{len(records) - len(different)} of {len(records)} runs identical")
    sys.exit(1 if different else 0)


if __name__ == "__main__":
    main()
