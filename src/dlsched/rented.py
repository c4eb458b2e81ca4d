"""Rented capacity in a cluster file: cloud instance types, their limits and their billing.

A cluster file may declare, beside or instead of its fixed ``nodes``::

    instance_types:
      p3.8xlarge: {gpu_type: V100, gpus: 4, cpus: 32, memory_gb: 244,
                   price_per_hour: 12.24, startup_s: 120}
    limits: {p3.8xlarge: 4}      # at most 4 of them at once; or `limits: 6`, a total
    billing: second              # or `hour`: every started hour is billed whole

Each instance type is a node shape (GPU type and count, CPU cores, host memory) with an
hourly price and a start-up latency (seconds from acquisition until jobs may use it). The
cluster holds each type's maximum count of nodes (``rent-<type>-<i>``) after its fixed
nodes; the engine starts them absent (`dlsched.engine.availability`) and a provisioning
policy (`dlsched.provision`) acquires and releases them while the run goes.

`limits` caps the instances held at once: a mapping of type name to a count (its key
``total`` caps all types together), or one number, the total. Every type needs a cap, from
its own entry or from the total, so that the node table stays finite.

Billing runs from acquisition (start-up included: clouds bill a booting instance) until
release. ``second`` (the default) bills the exact held time pro rata, as the per-second
billing of the large clouds does (their one-minute minimum is left out); ``hour`` bills
every started hour whole, as older on-demand pricing did.

>>> from dlsched.cluster import Cluster
>>> burst = Cluster.from_dict({
...     "name": "burst",
...     "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}],
...     "instance_types": {"p3.8xlarge": {"gpu_type": "V100", "gpus": 4,
...                                       "price_per_hour": 12.24, "startup_s": 120}},
...     "limits": {"p3.8xlarge": 2},
... })
>>> [node.name for node in burst.nodes]
['v100-g0-0', 'rent-p3.8xlarge-0', 'rent-p3.8xlarge-1']
>>> burst.rented.bill(1800, 12.24), burst.rented.node_type
(6.12, {1: 'p3.8xlarge', 2: 'p3.8xlarge'})
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dlsched.errors import ConfigError, check_keys, did_you_mean

BILLINGS = ("second", "hour")
"""How a held instance is billed: pro rata to the second, or per started hour."""

_INSTANCE_KEYS = ("gpu_type", "gpus", "cpus", "memory_gb", "price_per_hour", "startup_s")
TOTAL = "total"
"""The key of `limits` that caps every instance type together."""


@dataclass(frozen=True)
class InstanceType:
    """A rentable node shape with its hourly price and start-up latency (seconds)."""

    name: str
    gpu_type: str  # display name, as given
    gpus: int
    price_per_hour: float
    startup_s: float = 0.0
    cpus: float | None = None
    memory_gb: float | None = None  # host memory


@dataclass(frozen=True)
class RentedCapacity:
    """A cluster's instance catalogue, limits and billing, and which nodes are rented.

    `max_count[name]` nodes of each type are in the cluster's node table (the type's own
    limit, or the total when smaller); `total_limit` caps the instances held at once over
    all types (None: only the per-type caps). `node_type` maps each rented node's index to
    its instance type's name."""

    instance_types: Mapping[str, InstanceType]
    max_count: Mapping[str, int]
    total_limit: int | None = None
    billing: str = "second"
    node_type: Mapping[int, str] | None = None

    def bill(self, held_s: float, price_per_hour: float) -> float:
        """The price of one instance held `held_s` seconds (see the module docstring)."""
        if self.billing == "hour":
            return math.ceil(held_s / 3600 - 1e-12) * price_per_hour
        return held_s * price_per_hour / 3600


def _fail(source: str, key: str, message: str) -> ConfigError:
    return ConfigError(f"{source}: key {key!r}: {message}")


def _number(value: Any, source: str, key: str, *, allow_zero: bool) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not (value > 0 or (allow_zero and value == 0))
    ):
        wanted = "a number >= 0" if allow_zero else "a positive number"
        raise _fail(source, key, f"must be {wanted}, got {value!r}")
    return float(value)


def _count(value: Any, source: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(source, key, f"must be a positive integer, got {value!r}")
    return int(value)


def parse_rented(data: Mapping[str, Any], source: str) -> RentedCapacity | None:
    """The `instance_types`, `limits` and `billing` of a parsed cluster file (None when it
    declares no instance type). Every problem is a `ConfigError` naming the file and key."""
    declared = data.get("instance_types")
    if declared is None:
        for key in ("limits", "billing"):
            if key in data:
                raise _fail(source, key, "applies only with 'instance_types'; declare some")
        return None
    if not isinstance(declared, dict) or not declared:
        raise _fail(
            source,
            "instance_types",
            "must be a mapping of instance name to {gpu_type, gpus, price_per_hour, ...}",
        )
    if "energy" in data:
        # `dlsched.energy` counts every GPU of the node table idle or busy for the whole run;
        # absent instances would be billed idle watts. Refused until it reads availability.
        raise _fail(
            source,
            "energy",
            "cannot yet be combined with 'instance_types' (energy figures do not account for "
            "instances that are absent); drop one of the two",
        )
    types: dict[str, InstanceType] = {}
    for raw_name, props in declared.items():
        key = f"instance_types.{raw_name}"
        if not isinstance(raw_name, str) or not raw_name.strip() or raw_name == TOTAL:
            raise _fail(source, key, "must be a non-empty name other than 'total'; rename it")
        if not isinstance(props, dict):
            raise _fail(source, key, "must be a mapping like {gpu_type: V100, gpus: 4, ...}")
        check_keys(f"{source}: key {key!r}", props, _INSTANCE_KEYS)
        for required in ("gpu_type", "gpus", "price_per_hour"):
            if required not in props:
                raise _fail(source, f"{key}.{required}", "missing; give it")
        gpu_type = props["gpu_type"]
        if isinstance(gpu_type, int) and not isinstance(gpu_type, bool):
            gpu_type = str(gpu_type)
        if not isinstance(gpu_type, str) or not gpu_type.strip():
            raise _fail(source, f"{key}.gpu_type", f"must be a GPU type name, got {gpu_type!r}")
        cpus, memory = props.get("cpus"), props.get("memory_gb")
        types[raw_name] = InstanceType(
            name=raw_name,
            gpu_type=gpu_type,
            gpus=_count(props["gpus"], source, f"{key}.gpus"),
            price_per_hour=_number(
                props["price_per_hour"], source, f"{key}.price_per_hour", allow_zero=True
            ),
            startup_s=_number(
                props.get("startup_s", 0), source, f"{key}.startup_s", allow_zero=True
            ),
            cpus=None if cpus is None else _number(cpus, source, f"{key}.cpus", allow_zero=True),
            memory_gb=(
                None
                if memory is None
                else _number(memory, source, f"{key}.memory_gb", allow_zero=True)
            ),
        )
    per_type, total = _parse_limits(data.get("limits"), types, source)
    max_count: dict[str, int] = {}
    for name in types:
        caps = [c for c in (per_type.get(name), total) if c is not None]
        if not caps:
            raise _fail(
                source,
                "limits",
                f"instance type {name!r} has no limit; give 'limits: {{{name}: <count>}}' "
                "or a total ('limits: <count>')",
            )
        max_count[name] = min(caps)
    billing = data.get("billing", "second")
    if billing not in BILLINGS:
        raise _fail(
            source,
            "billing",
            f"must be one of {', '.join(BILLINGS)}, got {billing!r}"
            f"{did_you_mean(billing, BILLINGS)}",
        )
    return RentedCapacity(types, max_count, total, str(billing))


def _parse_limits(
    raw: Any, types: Mapping[str, InstanceType], source: str
) -> tuple[dict[str, int], int | None]:
    """(per-type caps, total cap) from `limits`: one count (the total) or a mapping."""
    if raw is None:
        return {}, None
    if not isinstance(raw, dict):
        return {}, _count(raw, source, "limits")
    per_type: dict[str, int] = {}
    total = None
    for name, value in raw.items():
        if name == TOTAL:
            total = _count(value, source, f"limits.{TOTAL}")
            continue
        if name not in types:
            raise _fail(
                source,
                f"limits.{name}",
                f"no instance type named {name!r}{did_you_mean(name, types)}; "
                f"limits name instance types (or '{TOTAL}')",
            )
        per_type[name] = _count(value, source, f"limits.{name}")
    return per_type, total


def node_groups(rented: RentedCapacity) -> list[dict[str, Any]]:
    """The rented nodes as cluster node groups (``rent-<type>``, its maximum count), for
    the cluster parser to build after the fixed nodes."""
    groups = []
    for name, kind in rented.instance_types.items():
        group: dict[str, Any] = {
            "gpu_type": kind.gpu_type,
            "count": rented.max_count[name],
            "gpus_per_node": kind.gpus,
            "name": f"rent-{name}",
            "rack": "rented",
        }
        if kind.cpus is not None:
            group["cpus"] = kind.cpus
        if kind.memory_gb is not None:
            group["host_memory_gb"] = kind.memory_gb
        groups.append(group)
    return groups
