"""`on_demand`: rent for the head of the queue, give back what stays idle.

At each scheduling point:

- *Acquire*: when the job at the head of the queue (the earliest submitted waiting job)
  cannot start — no GPU type it may use has as many GPUs free, counting instances still
  starting, as it asks for — rent the cheapest way to cover the shortfall on one instance
  type: ``ceil(shortfall / gpus per instance)`` instances of the type whose total hourly
  price is lowest (ties: the type name), within the limits. Only the head is served, so
  one job's demand is never rented twice while its instances boot; later jobs are served
  when they reach the head. CPU and memory demands are not considered (a job that needs
  more than an instance type's host resources may stay waiting).
- *Release*: every present instance that has held no job for `idle_release_s` seconds.
  The default, 600 s, is the Kubernetes cluster autoscaler's ``--scale-down-unneeded-time``
  (10 minutes), the usual rule for giving back idle cloud nodes.

Whatever is still held when the last job finishes is released then by the engine.
"""

from __future__ import annotations

import math

from dlsched.cluster import type_key
from dlsched.jobs import JobSpec
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
        head = view.head()
        acquire = self._for_head(view, head) if head is not None else {}
        if acquire:
            # an instance about to be released would serve the head: keep it instead
            release = [n for n in release if view.instance_of(n).name not in acquire]
        return Provision(acquire, release, wake_at)

    def _for_head(self, view: ProvisionView, head: JobSpec) -> dict[str, int]:
        allowed = head.gpu_constraint
        need = head.gpu_range[0] if head.num_gpus else 0
        if need == 0:
            return {}
        best: tuple[float, str, int] | None = None
        covered = False
        for name in sorted(view.instance_types):
            kind = view.instance_types[name]
            key = type_key(kind.gpu_type)
            if allowed is not None and key not in allowed:
                continue
            have = view.free_gpus(key) + view.starting_gpus(key)
            if have >= need:
                covered = True
                break
            count = math.ceil((need - have) / kind.gpus)
            if count > view.can_acquire(name):
                continue
            option = (count * kind.price_per_hour, name, count)
            if best is None or option < best:
                best = option
        if covered or best is None or self._fits_fixed(view, head):
            return {}
        return {best[1]: best[2]}

    @staticmethod
    def _fits_fixed(view: ProvisionView, head: JobSpec) -> bool:
        """Whether some allowed GPU type (fixed nodes included) has the head's GPUs free."""
        need = head.gpu_range[0]
        types = head.gpu_constraint or tuple(view._ledger.free_by_type)
        return any(view.free_gpus(t) >= need for t in types)
