"""Provisioning policies: which rented instances to acquire and release, and when.

A provisioner is called at every scheduling point of a run on a cluster with rented
capacity (`dlsched.rented`), before the scheduling policy, with a read-only
`ProvisionView` (the queue, the free GPUs, the instance catalogue with prices, the held
instances and since when they are idle). It returns a `Provision` — instances to acquire
and nodes to release, as data — and the engine applies it (`dlsched.engine.availability`);
a provisioner never touches the event queue. Like policies, parameters are stored in
``__init__`` and per-run state is built in the optional ``start(view)``.

Built-ins (`PROVISIONERS`, entry-point group ``dlsched.provisioners``): ``on_demand``
(`dlsched.provision.on_demand`), ``static`` (never rents), ``cynthia`` (per job, the
instances that meet its deadline at least cost by Cynthia's rule,
`dlsched.provision.cynthia`), ``cost_optimal`` (the same choice solved exactly as an
integer program, `dlsched.provision.cost_optimal`) and ``ces``
(`dlsched.provision.ces`, Helios' cluster energy saving). A provisioner whose class has
``manages_power = True`` is a *power manager*: it runs on a fixed cluster with an
``energy:`` section, powering idle nodes down (`Provision.release`) and up
(`Provision.wake`) beside any scheduling policy, and rents nothing.

>>> sorted(PROVISIONERS)
['ces', 'cost_optimal', 'cynthia', 'on_demand', 'static']
>>> get("on_demand", idle_release_s=60).idle_release_s
60.0
"""

from __future__ import annotations

from typing import Any, Protocol

from dlsched.provision.view import Provision, ProvisionView
from dlsched.registry import Registry, check_arguments

__all__ = ["PROVISIONERS", "Provision", "ProvisionView", "Provisioner", "get"]


class Provisioner(Protocol):
    """What the engine calls (see the module docstring)."""

    name: str

    def provision(self, view: ProvisionView) -> Provision: ...


PROVISIONERS: Registry[Any] = Registry("provisioner", entry_point_group="dlsched.provisioners")
"""Provisioner factory (usually a class) by name."""
PROVISIONERS.add_lazy("on_demand", "dlsched.provision.on_demand:OnDemand")
PROVISIONERS.add_lazy("static", "dlsched.provision.static:Static")
PROVISIONERS.add_lazy("ces", "dlsched.provision.ces:CES")
PROVISIONERS.add_lazy("cynthia", "dlsched.provision.cynthia:Cynthia")
PROVISIONERS.add_lazy("cost_optimal", "dlsched.provision.cost_optimal:CostOptimal")


def get(name: str, **params: Any) -> Provisioner:
    """A new provisioner by name, with its parameters checked first."""
    make = PROVISIONERS.get(name)
    check_arguments(f"provisioner {name!r}", make, params)
    made: Provisioner = make(**params)
    return made


def resolve(provisioner: str | Provisioner | None, rents: bool) -> Provisioner | None:
    """The run's provisioner: a name or an instance; None gives ``on_demand`` on a cluster
    that can rent (`rents`) and none on a fixed one."""
    if provisioner is None:
        return get("on_demand") if rents else None
    made = get(provisioner) if isinstance(provisioner, str) else provisioner
    if not callable(getattr(made, "provision", None)):
        raise ValueError(
            f"provisioner {provisioner!r} has no provision(view) method "
            "(see dlsched.provision.Provisioner)"
        )
    return made
