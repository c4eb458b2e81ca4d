"""`on_demand`: rent for the waiting jobs, give back what stays idle.

At each scheduling point (after the policy's call, so it sees what could not start):

- *Acquire*: walk the waiting jobs in submit order (ties by job index), each taking its GPUs
  from what is free or starting on some GPU type it may use; a job that finds too few
  rents the cheapest way to cover its shortfall on one instance type:
  ``ceil(shortfall / gpus per instance)`` instances of the type whose total hourly price is
  lowest (ties: the type name), within the limits. This is the cluster autoscaler's rule
  (scale up until every pending job fits), which any policy can use whatever order it
  starts jobs in — a strict-order policy (QSSF, FIFO) blocked on a large job is served as
  well as one that starts the head of the queue. Instances still starting count as
  capacity, so no demand is rented twice while its instances boot. CPU, memory and
  placement (one node or several) are not considered: a job that needs more host
  resources than an instance has, or a policy that wants it on one node, may stay waiting.
- *Release*: every present instance that has held no job for `idle_release_s` seconds.
  The default, 600 s, is the Kubernetes cluster autoscaler's ``--scale-down-unneeded-time``
  (10 minutes), the usual rule for giving back idle cloud nodes.

Whatever is still held when the last job finishes is released then by the engine.
"""

from __future__ import annotations

import math

from dlsched.cluster import type_key
from dlsched.provision.view import Provision, ProvisionView

DEFAULT_IDLE_RELEASE_S = 600.0
"""Seconds an instance may stay idle before it is released (see the module docstring)."""


class OnDemand:
    """Acquire for the head of the queue; release after `idle_release_s` idle seconds."""

    name = "on_demand"

    def __init__(self, idle_release_s: float = DEFAULT_IDLE_RELEASE_S) -> None:
        if not (isinstance(idle_release_s, (int, float)) and 0 <= idle_release_s < math.inf):
            raise ValueError(
                f"provisioner 'on_demand': idle_release_s must be a number of seconds >= 0, "
                f"got {idle_release_s!r}"
            )
        self.idle_release_s = float(idle_release_s)

    def __repr__(self) -> str:
        return f"OnDemand(idle_release_s={self.idle_release_s:g})"

    def provision(self, view: ProvisionView) -> Provision:
        """Instances for the head of the queue, and the idle ones to give back."""
        release: list[int] = []
        wake_at: float | None = None
        for node in view.held():
            since = view.idle_since(node)
            if since is None:
                continue
            due = since + self.idle_release_s
            if due <= view.now:
                release.append(node)
            elif wake_at is None or due < wake_at:
                wake_at = due
        acquire = self._for_queue(view)
        if acquire:
            # an instance about to be released would serve a waiting job: keep it instead
            release = [n for n in release if view.instance_of(n).name not in acquire]
        return Provision(acquire, release, wake_at)

    def _for_queue(self, view: ProvisionView) -> dict[str, int]:
        """Instances to rent so that every waiting job fits (see the module docstring)."""
        have: dict[str, int] = {}  # GPU type key → GPUs free or starting, not yet promised
        for kind in view.instance_types.values():
            key = type_key(kind.gpu_type)
            have[key] = view.free_gpus(key) + view.starting_gpus(key)
        for key in view._ledger.free_by_type:  # fixed-only types too
            have.setdefault(key, view.free_gpus(key))
        left = {name: view.can_acquire(name) for name in view.instance_types}
        acquire: dict[str, int] = {}
        for job in view.queue():
            need = job.gpu_range[0] if job.num_gpus else 0
            if need == 0:
                continue
            allowed = [
                t for t in sorted(have) if job.gpu_constraint is None or t in job.gpu_constraint
            ]
            fits = next((t for t in allowed if have[t] >= need), None)
            if fits is not None:
                have[fits] -= need
                continue
            best: tuple[float, str, int] | None = None
            for name in sorted(view.instance_types):
                kind = view.instance_types[name]
                key = type_key(kind.gpu_type)
                if key not in allowed:
                    continue
                count = math.ceil((need - have[key]) / kind.gpus)
                if count > left[name]:
                    continue
                option = (count * kind.price_per_hour, name, count)
                if best is None or option < best:
                    best = option
            if best is None:
                continue  # the limits leave nothing that fits it: it waits for capacity
            _, name, count = best
            key = type_key(view.instance_types[name].gpu_type)
            acquire[name] = acquire.get(name, 0) + count
            left[name] -= count
            have[key] += count * view.instance_types[name].gpus - need
        return acquire
