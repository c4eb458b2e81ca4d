"""What renting cost in a run: the acquisition intervals priced, and the summary's keys.

``rented_cost`` = Σ over acquisitions of the instance's bill for the time it was held, from
acquisition (start-up included) until release (`RentedCapacity.bill`: pro rata per second
by default, or every started hour whole with ``billing: hour``). ``rented_idle_s`` = Σ of
the instance-seconds held with no job on the instance (start-up included). ``cost_per_job``
= ``rented_cost`` / jobs completed (NaN when none completed); the fixed nodes' ``cost``
(GPU-seconds × `gpu_types` prices) is not in it. These keys are whole-run figures, whatever
`job_window` says, and appear only on clusters that declare ``instance_types``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dlsched.cluster import Cluster
from dlsched.errors import ConfigError
from dlsched.provision import resolve

if TYPE_CHECKING:
    from dlsched.engine.simulator import Simulator

SUMMARY_KEYS = ("rented_cost", "rented_idle_s", "cost_per_job")
"""The summary keys of a run on a cluster that rents (a public contract: add, never rename)."""


def resolve_provisioner(provisioner: Any, cluster: Cluster) -> Any:
    """The run's provisioner (`dlsched.provision.resolve`); one that rents on a cluster with
    nothing to rent is a `ConfigError`."""
    rents = cluster.rented is not None
    if provisioner is not None and _manages_power(provisioner):
        return _power_manager(provisioner, cluster)
    if not rents and provisioner is not None:
        name = provisioner if isinstance(provisioner, str) else getattr(provisioner, "name", "")
        if name == "static":
            return None
        raise ConfigError(
            f"provisioner {name or provisioner!r} rents instances, but cluster "
            f"{cluster.name!r} ({cluster.source}) declares no 'instance_types'; add some to "
            "the cluster file or leave the provisioner out"
        )
    return resolve(provisioner, rents)


def _manages_power(provisioner: Any) -> bool:
    """Whether a provisioner (a name or an instance) powers fixed nodes down and up."""
    if isinstance(provisioner, str):
        from dlsched.provision import PROVISIONERS

        if provisioner not in PROVISIONERS:
            return False  # (`resolve` names the unknown one)
        return getattr(PROVISIONERS.get(provisioner), "manages_power", False) is True
    return getattr(provisioner, "manages_power", False) is True


def _power_manager(provisioner: Any, cluster: Cluster) -> Any:
    """A power manager (`dlsched.provision.ces`) for a fixed cluster with an energy model."""
    name = provisioner if isinstance(provisioner, str) else getattr(provisioner, "name", "")
    if cluster.rented is not None:
        raise ConfigError(
            f"provisioner {name!r} powers fixed nodes down and up, but cluster "
            f"{cluster.name!r} ({cluster.source}) rents instances ('instance_types'); use "
            "'on_demand' there, or a cluster without instance types"
        )
    if cluster.energy is None:
        raise ConfigError(
            f"provisioner {name!r} powers nodes down and up, but cluster {cluster.name!r} "
            f"({cluster.source}) has no 'energy' section; add one, e.g. "
            "'energy: {wake_s: 300, sleep_s: 60}' (the node's power transitions, seconds)"
        )
    return resolve(provisioner, False)


def rented_meta(sim: Simulator, provisioner: Any) -> dict[str, Any]:
    """The run's rented instances for `result.meta["rented"]`: each acquisition with its
    instance type, price and bill, and the totals."""
    rented = sim.cluster.rented
    availability = sim.availability
    assert rented is not None and availability is not None and rented.node_type is not None
    names = {n.index: n.name for n in sim.cluster.nodes}
    rows = availability.report(names)
    cost = idle = 0.0
    for row in rows:
        kind = rented.instance_types[rented.node_type[row["node"]]]
        held = (row["released_s"] if row["released_s"] is not None else sim.clock.now) - row[
            "acquired_s"
        ]
        row["instance_type"] = kind.name
        row["price_per_hour"] = kind.price_per_hour
        row["cost"] = rented.bill(held, kind.price_per_hour)
        cost += row["cost"]
        idle += row["idle_s"]
    out: dict[str, Any] = {
        "provisioner": repr(provisioner),
        "billing": rented.billing,
        "instances": rows,
        "cost": cost,
        "idle_s": idle,
    }
    job_costs = getattr(provisioner, "job_costs", None)
    if callable(job_costs):  # a provisioner that plans per job attributes costs to jobs
        out["jobs"] = job_costs()
    return out


def power_meta(sim: Simulator, provisioner: Any) -> dict[str, Any]:
    """A power-managed run's node power states for `result.meta["power_states"]`: the
    transitions and every interval each node was held (powered, or waking), with when its
    wake began (`dlsched.energy.power_state_figures` turns them into energy)."""
    availability = sim.availability
    energy = sim.cluster.energy or {}
    assert availability is not None
    names = {n.index: n.name for n in sim.cluster.nodes}
    rows = availability.report(names)
    for row, interval in zip(rows, availability.intervals, strict=True):
        row["wake_from_s"] = (
            interval.acquired_s if interval.wake_from_s is None else interval.wake_from_s
        )
        row["initial"] = interval.initial
    return {
        "provisioner": repr(provisioner),
        "wake_s": float(energy.get("wake_s", 0.0)),
        "sleep_s": availability.sleep_s,
        "intervals": rows,
    }


def rented_summary(meta: dict[str, Any], jobs_completed: int) -> dict[str, float]:
    """The summary's rented keys from `meta["rented"]` (empty without it)."""
    rented = meta.get("rented")
    if not rented:
        return {}
    cost = float(rented["cost"])
    return {
        "rented_cost": cost,
        "rented_idle_s": float(rented["idle_s"]),
        "cost_per_job": cost / jobs_completed if jobs_completed else math.nan,
    }
