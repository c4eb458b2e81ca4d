"""Energy and power of a replay: GPUs busy or idle over time, and each node's base power.

Power model (nodes never power down in this version): at every instant a busy GPU draws its
type's ``active_w``, an idle one its ``idle_w``, and every node its group's ``node_w`` (CPUs,
memory, fans: the machine without its GPUs), from the first submission to the last
completion (the run's makespan). A GPU counts as busy while any job holds it (or a share of
it); its draw busy is its board power whatever the job's utilisation — vendors' board power
is an upper bound, so busy energy is too.

The cluster file declares the figures (`dlsched.cluster`)::

    gpu_types:
      V100: {active_w: 300, idle_w: 40}     # per GPU, watts
    nodes:
      - {gpu_type: V100, count: 4, gpus_per_node: 8, node_w: 450}
    energy: {price_per_kwh: 0.12, carbon_g_per_kwh: 400}

A run has energy figures only when its cluster file has an ``energy:`` section (it may be
empty, ``energy: {}``); then ``summary()`` has ``energy_j``, ``energy_kwh``,
``mean_power_w``, ``energy_per_job_kwh`` and, when declared, ``energy_cost`` (price × kWh)
and ``co2_kg`` (carbon intensity × kWh).

Defaults where the file gives none (`GPU_POWER`): ``active_w`` is the vendor's TDP / board
power, per GPU (a K80 board holds two GPUs: half its 300 W each). ``idle_w`` is an
**assumption, not a measurement**: `IDLE_FRACTION_ASSUMED` × ``active_w``; declare
``idle_w`` for figures you can defend. ``node_w`` defaults to 0 (GPUs alone). A GPU type with
no vendor figure and no ``active_w`` is an error naming the key to add.

Node power states (a power manager, `dlsched.provision.ces`, powers idle nodes down and up;
``energy: {wake_s: 300, sleep_s: 60}`` gives the transitions, seconds, default 0): a node
draws, per state,

- *on* (present): as above — ``node_w`` + busy GPUs × ``active_w`` + idle GPUs × ``idle_w``;
- *shutting down* (``sleep_s`` after its power-down; unusable): its idle draw,
  ``node_w`` + GPUs × ``idle_w``;
- *off*: GPUs × ``off_w`` (``off_w`` per GPU type, default 0 W: the share of a node's
  standby draw per GPU; the node's ``node_w`` is off too);
- *waking* (``wake_s`` from the start of its wake; unusable): full draw,
  ``node_w`` + GPUs × ``active_w`` (boot and self-tests run the machine flat out: the usual,
  conservative choice).

`power_state_figures` integrates the difference from the on-and-idle draw over each node's
recorded states (`result.meta["power_states"]`), and the summary gains
``powered_off_node_hours`` (node-hours off, shut-down excluded), ``mean_nodes_off``,
``wake_events`` and ``power_down_events`` (over the run's makespan). Energy *saved* is a
comparison of two runs (with and without the power manager): `dlsched reproduce helios-ces`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dlsched.cluster import Cluster
from dlsched.errors import ConfigError


@dataclass(frozen=True)
class VendorPower:
    """A GPU's board power (TDP) in watts, as its vendor states it, and where it is stated."""

    active_w: float
    source: str


GPU_POWER: Mapping[str, VendorPower] = {
    "k80": VendorPower(150.0, "NVIDIA Tesla K80 board spec: 300 W per board, 2 GPUs per board"),
    "k40": VendorPower(235.0, "NVIDIA Tesla K40 board spec: 235 W"),
    "k40m": VendorPower(235.0, "NVIDIA Tesla K40 board spec: 235 W"),
    "m60": VendorPower(150.0, "NVIDIA Tesla M60 board spec: 300 W per board, 2 GPUs per board"),
    "p40": VendorPower(250.0, "NVIDIA Tesla P40 datasheet: 250 W"),
    "p100": VendorPower(300.0, "NVIDIA Tesla P100 SXM2 datasheet: 300 W (PCIe: 250 W)"),
    "p100-pcie": VendorPower(250.0, "NVIDIA Tesla P100 PCIe datasheet: 250 W"),
    "v100": VendorPower(300.0, "NVIDIA V100 SXM2 datasheet: 300 W (PCIe: 250 W)"),
    "v100m16": VendorPower(300.0, "NVIDIA V100 SXM2 datasheet: 300 W"),
    "v100m32": VendorPower(300.0, "NVIDIA V100 SXM2 datasheet: 300 W"),
    "v100-pcie": VendorPower(250.0, "NVIDIA V100 PCIe datasheet: 250 W"),
    "t4": VendorPower(70.0, "NVIDIA T4 datasheet: 70 W"),
    "a100": VendorPower(400.0, "NVIDIA A100 SXM4 datasheet: 400 W (PCIe 40 GB: 250 W)"),
    "h100": VendorPower(700.0, "NVIDIA H100 SXM5 datasheet: up to 700 W"),
}
"""Vendors' TDP / board power per GPU, by GPU type key (lower case)."""

IDLE_FRACTION_ASSUMED = 0.2
"""Idle draw as a share of board power where the cluster file gives no ``idle_w``: an
assumption (no measurement behind it), kept explicit so that figures resting on it say so
(``energy_idle_assumed`` in the run's ``meta["energy_sources"]``)."""


@dataclass(frozen=True)
class TypePower:
    """The watts of one GPU type in a cluster, and where each figure came from."""

    active_w: float
    idle_w: float
    active_source: str
    idle_source: str


def type_power(cluster: Cluster) -> dict[str, TypePower]:
    """Each GPU type's active and idle watts: the cluster file's, else the defaults."""
    out: dict[str, TypePower] = {}
    for key, gpu in sorted(cluster.gpu_types.items()):
        vendor = GPU_POWER.get(key)
        if gpu.active_w is not None:
            active, active_source = gpu.active_w, "cluster file"
        elif vendor is not None:
            active, active_source = vendor.active_w, f"vendor TDP ({vendor.source})"
        else:
            raise ConfigError(
                f"{cluster.source}: key 'gpu_types.{gpu.name}.active_w': no vendor power figure "
                f"is known for GPU type {gpu.name!r}; give its active_w (and idle_w) in watts "
                "to report energy, or remove the 'energy' section"
            )
        if gpu.idle_w is not None:
            idle, idle_source = gpu.idle_w, "cluster file"
        else:
            idle = IDLE_FRACTION_ASSUMED * active
            idle_source = f"assumption: {IDLE_FRACTION_ASSUMED:g} x active_w (not measured)"
        out[key] = TypePower(active, idle, active_source, idle_source)
    return out


def idle_power_w(cluster: Cluster) -> float:
    """The cluster's draw with every GPU idle: node base power plus idle GPUs."""
    powers = type_power(cluster)
    capacity = cluster.capacity_by_type()
    base = sum(node.node_w or 0.0 for node in cluster.nodes)
    return base + sum(powers[k].idle_w * capacity[k] for k in capacity)


def power_series(
    timeline: pd.DataFrame, cluster: Cluster, states: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """Cluster power over time: ``time`` and ``power_w`` after every change of busy GPUs
    (a step function: each row's power holds until the next row; before the first row the
    cluster is idle, `idle_power_w`). With `states` (``result.meta["power_states"]`` of a
    power-managed run) the nodes' waking and off intervals are in it too, so that its
    integral is the run's ``energy_j``."""
    powers = type_power(cluster)
    times = timeline["time"].to_numpy(dtype=float)
    power = np.full(len(times), idle_power_w(cluster))
    for key, watts in powers.items():
        column = cluster.display_name(key)
        if column in timeline.columns:
            busy = timeline[column].to_numpy(dtype=float)
            power = power + busy * (watts.active_w - watts.idle_w)
    if not states:
        return pd.DataFrame({"time": times, "power_w": power})
    changes: dict[float, float] = {}
    for kind, since, until, delta_w in _state_intervals(states, cluster):
        if kind in ("wake", "off") and until > since:
            changes[since] = changes.get(since, 0.0) + delta_w
            if math.isfinite(until):
                changes[until] = changes.get(until, 0.0) - delta_w
    at = np.array(sorted(changes), dtype=float)
    level = np.cumsum([changes[t] for t in at]) if len(at) else np.zeros(0)
    grid = np.union1d(times, at)
    # each instant's busy-GPU power (idle before the timeline's first row) plus the states'
    row = np.searchsorted(times, grid, side="right") - 1
    base = np.where(
        row >= 0, power[np.clip(row, 0, None)] if len(power) else 0.0, idle_power_w(cluster)
    )
    step = np.searchsorted(at, grid, side="right") - 1
    extra = np.where(step >= 0, level[np.clip(step, 0, None)] if len(level) else 0.0, 0.0)
    return pd.DataFrame({"time": grid, "power_w": base + extra})


def integrate(series: pd.DataFrame, idle_w: float, start: float, end: float) -> float:
    """Joules: ∫ power dt over [start, end] of the step function `series`, idle (`idle_w`)
    before its first row."""
    times = np.concatenate(([-math.inf], series["time"].to_numpy(dtype=float), [math.inf]))
    power = np.concatenate(([idle_w], series["power_w"].to_numpy(dtype=float)))
    lengths = np.clip(np.minimum(times[1:], end) - np.maximum(times[:-1], start), 0.0, None)
    return float(np.dot(lengths, power))


def energy_summary(result: Any, cluster: Cluster) -> dict[str, Any]:
    """The energy figures of a run (module docstring), over its makespan; {} when the
    cluster declares no energy section or no job finished."""
    if cluster.energy is None:
        return {}
    jobs = result.jobs
    done = jobs[jobs["status"] == "finished"]
    if done.empty:
        return {}
    start = float(done["submit_time"].min())
    end = float(done["finish_time"].max())
    energy_j = integrate(power_series(result.timeline, cluster), idle_power_w(cluster), start, end)
    span = end - start
    states = (getattr(result, "meta", None) or {}).get("power_states")
    figures: dict[str, Any] = {}
    if states:
        figures = power_state_figures(states, cluster, start, end)
        energy_j += figures.pop("correction_j")
    kwh = energy_j / 3.6e6
    out: dict[str, Any] = {
        "energy_j": energy_j,
        "energy_kwh": kwh,
        "mean_power_w": energy_j / span if span > 0 else math.nan,
        "energy_per_job_kwh": kwh / len(done),
    }
    out.update(figures)
    price = cluster.energy.get("price_per_kwh")
    if price is not None:
        out["energy_cost"] = kwh * price
    carbon = cluster.energy.get("carbon_g_per_kwh")
    if carbon is not None:
        out["co2_kg"] = kwh * carbon / 1000.0
    return out


def energy_sources(cluster: Cluster) -> dict[str, Any]:
    """Where each GPU type's watts came from, and whether any idle figure is assumed."""
    powers = type_power(cluster)
    return {
        "gpu_power_w": {
            cluster.display_name(k): {
                "active_w": p.active_w,
                "idle_w": p.idle_w,
                "active_source": p.active_source,
                "idle_source": p.idle_source,
            }
            for k, p in powers.items()
        },
        "energy_idle_assumed": any(p.idle_source != "cluster file" for p in powers.values()),
    }


def _overlap(a: float, b: float, start: float, end: float) -> float:
    return max(0.0, min(b, end) - max(a, start))


def _state_intervals(
    states: Mapping[str, Any], cluster: Cluster
) -> Iterator[tuple[str, float, float, float]]:
    """Each node's waking and off intervals from ``result.meta["power_states"]``, as
    (``"wake"`` or ``"off"``, from, until, watts above the node's on-and-idle draw); a release
    with nothing after it yields an ``"off"`` interval to infinity. Shutting down draws the
    on-and-idle power: no interval. (`power_state_figures`, `power_series`.)"""
    powers = type_power(cluster)
    off_w = {key: (gpu.off_w or 0.0) for key, gpu in cluster.gpu_types.items()}
    sleep_s = float(states["sleep_s"])
    by_node: dict[int, list[Mapping[str, Any]]] = {}
    for row in states["intervals"]:
        by_node.setdefault(int(row["node"]), []).append(row)
    for node_index, rows in by_node.items():
        node = cluster.nodes[node_index]
        gpus = len(node.gpu_ids)
        base = node.node_w or 0.0
        watts = powers[node.gpu_type]
        on_idle = base + gpus * watts.idle_w
        waking = base + gpus * watts.active_w
        off = gpus * off_w[node.gpu_type]
        rows = sorted(rows, key=lambda r: float(r["acquired_s"]))
        for k, row in enumerate(rows):
            acquired = float(row["acquired_s"])
            if not row.get("initial", False):  # a wake (not held from the start)
                wake_from = float(row.get("wake_from_s", acquired))
                ready = row["ready_s"] if row["ready_s"] is not None else row["released_s"]
                wake_end = math.inf if ready is None else float(ready)
                yield "wake", wake_from, wake_end, waking - on_idle
                yield "acquire", acquired, acquired, 0.0
            released = row["released_s"]
            if released is None:
                continue
            released = float(released)
            yield "release", released, released, 0.0
            again = float(rows[k + 1]["acquired_s"]) if k + 1 < len(rows) else math.inf
            yield "off", released + sleep_s, again, off - on_idle


def power_state_figures(
    states: Mapping[str, Any], cluster: Cluster, start: float, end: float
) -> dict[str, Any]:
    """The energy of the nodes' power states over [start, end] (module docstring), as a
    correction to the every-node-on figure (``correction_j``, joules), with the power-down
    summary keys. `states` is ``result.meta["power_states"]`` (`provision.billing.power_meta`):
    each interval a node was held (from its wake, or from time 0 for the first), with
    ``sleep_s``."""
    correction = off_s = 0.0
    wakes = downs = 0
    for kind, since, until, delta_w in _state_intervals(states, cluster):
        if kind == "acquire":
            wakes += start <= since < end
        elif kind == "release":
            downs += since < end
        else:
            length = _overlap(since, until, start, end)
            correction += delta_w * length
            if kind == "off":
                off_s += length
    span = end - start
    return {
        "correction_j": correction,
        "powered_off_node_hours": off_s / 3600.0,
        "mean_nodes_off": off_s / span if span > 0 else math.nan,
        "wake_events": wakes,
        "power_down_events": downs,
    }
