"""What a provisioner sees (`ProvisionView`) and what it answers (`Provision`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dlsched.cluster import type_key
from dlsched.jobs import JobSpec
from dlsched.rented import InstanceType

if TYPE_CHECKING:
    from dlsched.engine.availability import Availability
    from dlsched.engine.ledger import Ledger, Pool
    from dlsched.engine.state import JobIndex


@dataclass(frozen=True)
class Provision:
    """A provisioner's answer: instances to acquire (instance type name → how many more),
    held nodes to release (indices; each must hold no job), and when to be called again
    even if nothing else happens (an idle timer), or None. A power manager on a fixed
    cluster (`dlsched.provision.ces`) releases nodes to power them down and names the
    absent ones to power up in `wake`; it acquires no instances."""

    acquire: Mapping[str, int] = field(default_factory=dict)
    release: Sequence[int] = ()
    wake_at: float | None = None
    wake: Sequence[int] = ()  # powered-down fixed nodes to power up (a power manager's)


NOTHING = Provision()


class ProvisionView:
    """A read-only view for provisioners: the queue, free GPUs, the catalogue and the
    held instances. Built by the engine; valid during one call."""

    def __init__(
        self,
        now: float,
        jobs: JobIndex,
        ledger: Ledger,
        availability: Availability,
        instance_types: Mapping[str, InstanceType],
        node_type: Mapping[int, str],
        available: Mapping[str, int],
    ) -> None:
        self.now = now
        self._jobs = jobs
        self._ledger = ledger
        self._availability = availability
        self.instance_types = instance_types
        self._node_type = node_type
        self._available = available

    def queue(self) -> list[JobSpec]:
        """The waiting jobs, in submit order (ties by job index)."""
        specs = [state.spec for state in self._jobs.pending.values()]
        specs.sort(key=lambda s: (s.submit_time, s.index))
        return specs

    def head(self) -> JobSpec | None:
        """The earliest submitted waiting job (ties by job index), or None."""
        return min(
            (state.spec for state in self._jobs.pending.values()),
            key=lambda s: (s.submit_time, s.index),
            default=None,
        )

    def free_gpus(self, gpu_type: str) -> int:
        """Free GPUs of a type on present nodes."""
        return self._ledger.free_by_type.get(type_key(gpu_type), 0)

    def starting_gpus(self, gpu_type: str) -> int:
        """GPUs of a type on instances acquired and still starting."""
        key = type_key(gpu_type)
        return sum(
            self.instance_types[self._node_type[n]].gpus
            for n in self._availability.nodes_in("starting")
            if type_key(self.instance_types[self._node_type[n]].gpu_type) == key
        )

    def can_acquire(self, instance_type: str) -> int:
        """How many more instances of a type the limits allow now."""
        return self._available.get(instance_type, 0)

    def held(self) -> list[int]:
        """Rented nodes acquired and not released (starting or present), by index."""
        availability = self._availability
        return availability.nodes_in("starting") + availability.nodes_in("present")

    def instance_of(self, node: int) -> InstanceType:
        """The instance type of a rented node."""
        return self.instance_types[self._node_type[node]]

    def idle_since(self, node: int) -> float | None:
        """Since when a present rented node has held no job (None: it runs one or is still
        starting)."""
        if self._availability.state.get(node) != "present":
            return None
        return self._availability.idle_since(node)

    # ---- fixed nodes' power states (what a power manager reads: `dlsched.provision.ces`) --
    def nodes(self, state: str) -> list[int]:
        """Managed nodes in a state ("absent": powered down or shutting down, "starting":
        waking, "present"), by index."""
        return self._availability.nodes_in(state)

    def node_state(self, node: int) -> str:
        """A managed node's state ("absent", "starting" or "present")."""
        return self._availability.state[node]

    def node_pool(self, node: int) -> Pool:
        """A node's pool: (GPU type key, owning VC or None)."""
        return self._ledger.node_pool[node]

    def node_gpus(self, node: int) -> int:
        """GPUs on a node."""
        return len(self._ledger.cluster.nodes[node].gpu_ids)

    def node_busy(self, node: int) -> bool:
        """Whether a job holds anything on a present node (False for any other node)."""
        if self._availability.state.get(node) != "present":
            return False
        return not self._ledger.node_idle(node)

    def busy_nodes(self, nodes: Sequence[int]) -> int:
        """How many of `nodes` are present and hold a job (what `node_busy` says of each)."""
        availability = self._availability
        state, idle = availability.state, availability.idle_since
        return sum(1 for n in nodes if state.get(n) == "present" and idle(n) is None)

    def off_at(self, node: int) -> float:
        """When a powered-down node's shut-down is over (-inf: never powered down); a node
        woken before then starts waking only then."""
        return self._availability.off_at(node)

    def pool_free(self, pool: Pool) -> int:
        """Free GPUs of a pool on present nodes."""
        return self._ledger.free_by_pool.get(pool, 0)

    def pools_for(self, job: JobSpec) -> list[Pool]:
        """The pools a job may take GPUs from: its VC's own if its VC owns nodes, else the
        unowned ones; of the GPU types its constraint allows (by type key)."""
        capacity = self._ledger.pool_capacity
        owners = {vc for _, vc in capacity if vc is not None}
        vc = job.vc if job.vc in owners else None
        allowed = job.gpu_constraint
        return sorted(
            pool for pool in capacity if pool[1] == vc and (allowed is None or pool[0] in allowed)
        )
