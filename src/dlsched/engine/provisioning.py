"""The engine's side of provisioning: call the provisioner, check and apply its answer.

Called by the simulator after every scheduling call (made or skipped) of a run whose
cluster rents nodes, or whose fixed nodes a power manager powers down and up
(`dlsched.provision.ces`: `Provision.release` powers a node down, `Provision.wake` up), so
that it sees what the policy could not start; an instance without
start-up latency is present at once, and another call of the same instant lets the policy
use it. The
provisioner answers with data (`dlsched.provision.Provision`); here the engine checks it
(known instance types, the limits, only rented nodes that hold no job are released) and
applies it through `dlsched.engine.availability`, owning every timer: a node's start-up,
and the provisioner's own wake-ups (an idle instance's release time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simpy.events import NORMAL

from dlsched.errors import SchedulingError, did_you_mean
from dlsched.provision.view import Provision, ProvisionView

if TYPE_CHECKING:
    from dlsched.engine.simulator import Simulator


def available(sim: Simulator) -> dict[str, int]:
    """Instances of each type the limits still allow (the type's cap and the total's)."""
    rented = sim.cluster.rented
    availability = sim.availability
    assert rented is not None and availability is not None and rented.node_type is not None
    held: dict[str, int] = dict.fromkeys(rented.instance_types, 0)
    for node, kind in rented.node_type.items():
        if availability.state[node] != "absent":
            held[kind] += 1
    left = {name: rented.max_count[name] - held[name] for name in held}
    if rented.total_limit is not None:
        spare = rented.total_limit - sum(held.values())
        left = {name: max(0, min(count, spare)) for name, count in left.items()}
    return left


def provision(sim: Simulator) -> None:
    """One provisioning call at the simulator's now (see the module docstring)."""
    rented, availability, provisioner = sim.cluster.rented, sim.availability, sim.provisioner
    if provisioner is None or availability is None:
        return
    if rented is None:
        _power(sim)
        return
    now = sim.clock.now
    node_type = rented.node_type or {}
    left = available(sim)
    view = ProvisionView(
        now, sim.jobs, sim.ledger, availability, rented.instance_types, node_type, left
    )
    answer = _answer(provisioner, view)
    if answer is None:
        return
    if answer.wake:
        raise SchedulingError(
            f"provisioner {getattr(provisioner, 'name', provisioner)!r} asked to wake nodes "
            f"{list(answer.wake)!r}; on a cluster that rents, acquire instances instead"
        )
    for node in answer.release:
        if node not in node_type:
            raise SchedulingError(
                f"the provisioner released node {node!r}, which is not a rented node"
            )
        availability.release(node, now)
        left[node_type[node]] += 1  # (the total's spare grows too; recomputed below)
    if answer.release and rented.total_limit is not None:
        left = available(sim)
    for name, count in answer.acquire.items():
        if name not in rented.instance_types:
            raise SchedulingError(
                f"the provisioner asked for instance type {name!r}, which the cluster does "
                f"not declare{did_you_mean(name, rented.instance_types)}"
            )
        if not isinstance(count, int) or count < 0 or count > left[name]:
            raise SchedulingError(
                f"the provisioner asked for {count!r} instances of {name!r}; the limits allow "
                f"{left[name]} more now"
            )
        absent = [n for n, kind in node_type.items() if kind == name]
        absent = [n for n in sorted(absent) if availability.state[n] == "absent"][:count]
        for node in absent:
            _acquire(sim, node, now)
        left = available(sim)
    if answer.release or answer.acquire:
        tell_policy(sim)
    if answer.wake_at is not None and answer.wake_at > now:
        _wake_at(sim, answer.wake_at)
    sim._booting = bool(availability.nodes_in("starting"))


def _answer(provisioner: object, view: ProvisionView) -> Provision | None:
    """The provisioner's answer, checked to be a `Provision` (or None: nothing)."""
    answer = provisioner.provision(view)  # type: ignore[attr-defined]
    if answer is None or isinstance(answer, Provision):
        return answer
    raise SchedulingError(
        f"provisioner {getattr(provisioner, 'name', provisioner)!r} returned "
        f"{type(answer).__name__}, not a dlsched.provision.Provision"
    )


def _power(sim: Simulator) -> None:
    """A power manager's call on a fixed cluster: power idle nodes down (`release`), power
    absent ones up (`wake`); it rents nothing."""
    availability, provisioner = sim.availability, sim.provisioner
    assert availability is not None
    now = sim.clock.now
    view = ProvisionView(now, sim.jobs, sim.ledger, availability, {}, {}, {})
    answer = _answer(provisioner, view)
    if answer is None:
        return
    name = getattr(provisioner, "name", provisioner)
    if answer.acquire:
        raise SchedulingError(
            f"provisioner {name!r} asked for instances {dict(answer.acquire)!r}, but the "
            "cluster rents none; wake powered-down nodes instead (Provision.wake)"
        )
    for node in (*answer.release, *answer.wake):
        if node not in availability.startup_s:
            raise SchedulingError(f"provisioner {name!r} named node {node!r}, not in the cluster")
    for node in answer.release:
        availability.release(node, now)
    for node in answer.wake:
        _acquire(sim, node, now)
    if answer.release or answer.wake:
        tell_policy(sim)
    if answer.wake_at is not None and answer.wake_at > now:
        _wake_at(sim, answer.wake_at)
    sim._booting = bool(availability.nodes_in("starting"))


def tell_policy(sim: Simulator) -> None:
    """Call the policy's optional ``on_nodes_changed(view)``: nodes came or went. A policy
    that skips calls while "nothing moved" since its last one (Tiresias) must hear of it,
    as it hears of arrivals and finishes."""
    hook = getattr(sim.policy, "on_nodes_changed", None)
    if hook is not None:
        hook(sim.view)


def _acquire(sim: Simulator, node: int, now: float) -> None:
    availability = sim.availability
    assert availability is not None
    ready_at = availability.acquire(node, now)
    generation = availability.generation[node]
    if ready_at <= now:  # no start-up latency: present now, for a call at this instant
        availability.ready(node, generation)
        availability.observe(now)
        sim._requested = True
        return
    sim._at(ready_at - sim.env._now, NORMAL, _Timers(sim).ready, (node, generation))


def _wake_at(sim: Simulator, when: float) -> None:
    if when in sim._provision_wakeups:
        return
    sim._provision_wakeups.add(when)
    sim._at(when - sim.env._now, NORMAL, _Timers(sim).wake, when)


class _Timers:
    """The callbacks of provisioning's timers (bound methods: the engine's event loop
    calls those directly, `Simulator._loop`)."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    def ready(self, entry: tuple) -> None:
        """An acquired node's start-up is over."""
        sim = self.sim
        availability = sim.availability
        assert availability is not None
        node, generation = entry[4]
        if not availability.ready(node, generation):
            return  # released while it started
        sim.clock.now = max(sim.clock.now, entry[0])
        availability.observe(sim.clock.now)
        sim._booting = bool(availability.nodes_in("starting"))
        sim._requested = True  # a node came: the policy may use it
        tell_policy(sim)

    def wake(self, entry: tuple) -> None:
        """A provisioner's wake-up (`Provision.wake_at`)."""
        sim = self.sim
        when = entry[4]
        sim._provision_wakeups.discard(when)
        if sim.arrivals_done and not sim.jobs.active:
            return  # the run is over: what was held has been given back
        sim.clock.now = max(sim.clock.now, when)
        sim._requested = True
