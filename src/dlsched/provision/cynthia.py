"""`cynthia`: rent, for each job, the instances that meet its deadline at least cost.

Paper: Zheng, Xu, Chen, Zhou, Liu, "Cynthia: Cost-Efficient Cloud Resource Provisioning for
Predictable Distributed Deep Neural Network Training", ICPP 2019 (doi 10.1145/3337821.3337873).
No public artifact of it is known (none found); only the paper's abstract and the first
author's thesis abstract could be read here, so the rule below is our reading of them [I]:
Cynthia predicts a parameter-server (PS) job's training time with an analytical model of its
workers' computation and its PS' communication (the PS is the usual bottleneck, §abstract),
and provisions, per job, the instance type and the numbers of workers and PS that meet the
job's training-time goal at the least monetary cost.

The rule, per job at its arrival (`plan_options` lists the configurations, `cynthia_choice`
picks one):

- a *configuration* is an instance type t, w workers (one GPU each) and p PS tasks. Its
  instances: ``ps_placement="colocated"`` (the default) runs the PS tasks on the workers'
  instances, at most k = `ps_per_instance` each (default: one per GPU of the instance,
  k = g_t: a PS beside each worker), so ``n = max(ceil(w/g_t), ceil(p/k))``;
  ``"dedicated"`` gives each PS an instance of its own, as the paper's testbed does (its PS
  and workers are containers on instances of one type), so ``n = ceil(w/g_t) + p``;
- its predicted time is ``startup_s(t) + steps / f(p, w)`` and its cost
  ``n × bill(time, price(t))`` (the cluster's billing: per second, or per started hour);
- speed: with a PS model for the job's model (`ps_models`: model name → `PSSpeedModel`,
  Optimus' ``f(p, w) = 1/(θ0·M/w + θ1 + θ2·w/p + θ3·w + θ4·p)``, `dlsched.perf.ps_speed`),
  f(p, w) × `speed_by_type`[GPU type] (default 1). The terms map onto Cynthia's model [I]:
  θ0·M/w the workers' computation of a global batch M, θ2·w/p the parameter transfer that p
  PS share, θ3·w and θ4·p per-task overheads. Without one (any trace), the speed is the run
  estimator's throughput on w GPUs of t packed on the fewest instances, and p = 0 (an
  all-reduce job: no PS to choose);
- **Cynthia's choice**: for each instance type, the fewest workers that meet the deadline,
  with the PS count that makes that w fastest (the PS bottleneck removed; ties: fewer PS);
  then the cheapest of these per-type choices (ties: faster, then name). This is a heuristic:
  a larger w may be cheaper (a shorter run on as many instances, or under hourly billing),
  and the fastest p is not always the cheapest (dedicated PS). `cost_optimal`
  (`dlsched.provision.cost_optimal`) solves the same choice exactly, as an integer program;
- a job whose deadline no configuration meets gets the fastest configuration (it runs, late);
  a job without a deadline gets the cheapest configuration (``no_deadline="cheapest"``) or the
  fastest (``"fastest"``);
- a rigid job keeps its GPU count (only t and p are chosen); an elastic one may get any w in
  its `gpu_range`. Only configurations the limits allow now are considered; a job none fits
  waits and is planned again at the next call. Jobs without GPUs or with a fraction of one
  are not planned (the policy starts them where there is room).

The provisioner acquires each plan's instances (reusing held idle instances of the type
first) and gives back, whenever held instances of a type outnumber what the unfinished
planned jobs need, the idle ones (so a job's instances go when it finishes). The policy
``cynthia`` (`dlsched.policies.cynthia`) places each job on its plan: w GPUs of its type,
keeping the planned instances' other GPUs (PS instances) free of other jobs. The plans are
published per run (`plans_for`); with another policy the provisioner still rents as planned,
but that policy decides the GPU counts.

Simplified: the engine runs only the workers (GPUs); a PS task costs its instance share but
its count changes the simulated speed only through the run's throughput model (with
`PSThroughput` as the truth, the job runs with that model's PS count, as under Optimus).
Each job's cost is *attributed* (`job_costs`, in ``result.meta["rented"]["jobs"]``): its
instances from its planning instant to its finish, billed as the cluster bills; reused or
shared instances make the attribution differ from the cluster's bill, which stays exact.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dlsched.cluster import type_key
from dlsched.errors import ConfigError
from dlsched.perf.ps_speed import PSSpeedModel
from dlsched.provision.view import Provision, ProvisionView
from dlsched.rented import InstanceType, RentedCapacity

if TYPE_CHECKING:
    from dlsched.engine.view import ClusterView
    from dlsched.jobs import JobSpec, JobState

PS_PLACEMENTS = ("colocated", "dedicated")
NO_DEADLINE = ("cheapest", "fastest")

#: The plans of each run's provisioner, by the run's policy view (what the policy reads).
_BOOKS: weakref.WeakKeyDictionary[Any, dict[object, Plan]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Plan:
    """One configuration for a job: `instances` of `instance_type` (GPU type key `gpu_type`)
    with `workers` GPUs and `ps` PS tasks; its predicted `time_s` from acquisition (start-up
    included) and `cost`; `meets`: whether it meets the job's deadline (None: no deadline)."""

    instance_type: str
    gpu_type: str
    instances: int
    workers: int
    ps: int
    time_s: float
    cost: float
    meets: bool | None


def reserved(plan: Plan, gpus_per_instance: int) -> int:
    """GPUs of a plan's instances that its workers do not use (kept for its PS)."""
    return plan.instances * gpus_per_instance - plan.workers


def plans_for(view: Any) -> dict[object, Plan] | None:
    """The plans (job id → `Plan`) a planning provisioner made in the run of `view`, or None
    when the run has none."""
    return _BOOKS.get(view)


def as_ps_model(name: str, value: Any) -> PSSpeedModel:
    """A `PSSpeedModel` from one, a list of coefficients (sync, batch 1) or a mapping
    ``{theta: [...], sync: true, batch_size: M}``; anything else is a ConfigError."""
    if isinstance(value, PSSpeedModel):
        return value
    try:
        if isinstance(value, Mapping):
            extra = set(value) - {"theta", "sync", "batch_size"}
            if extra or "theta" not in value:
                raise ValueError(f"needs 'theta' (and optional sync, batch_size), got {value!r}")
            return PSSpeedModel(
                tuple(float(t) for t in value["theta"]),
                sync=bool(value.get("sync", True)),
                batch_size=float(value.get("batch_size", 1.0)),
            )
        if isinstance(value, (list, tuple)):
            return PSSpeedModel(tuple(float(t) for t in value))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"ps_models[{name!r}]: {exc}") from None
    raise ConfigError(
        f"ps_models[{name!r}]: must be a PSSpeedModel, a list of coefficients or "
        f"{{theta: [...], sync: ..., batch_size: ...}}, got {value!r}"
    )


class PlanModel:
    """The configurations of a job on a catalogue (see the module docstring).

    `speed(job, gpu_type_key, workers, ps, nodes)` is the steps/s the plan predicts;
    `steps(job)` the job's work."""

    def __init__(
        self,
        rented: RentedCapacity,
        speed: Callable[[JobSpec, str, int, int, int], float],
        steps: Callable[[JobSpec], float],
        has_ps: Callable[[JobSpec], bool],
        ps_placement: str = "colocated",
        ps_per_instance: int | None = None,
        max_ps: int | None = None,
    ) -> None:
        self.rented = rented
        self.speed = speed
        self.steps = steps
        self.has_ps = has_ps
        self.ps_placement = ps_placement
        self.ps_per_instance = ps_per_instance
        self.max_ps = max_ps

    def options(
        self, job: JobSpec, now: float, left: Mapping[str, int] | None = None
    ) -> list[Plan]:
        """Every configuration of `job` planned at `now`, within `left` instances per type
        (default: each type's cap), in (type name, workers, PS) order."""
        out: list[Plan] = []
        steps = self.steps(job)
        for name in sorted(self.rented.instance_types):
            kind = self.rented.instance_types[name]
            cap = self.rented.max_count[name] if left is None else left.get(name, 0)
            if self.rented.total_limit is not None:
                cap = min(cap, self.rented.total_limit)
            key = type_key(kind.gpu_type)
            if cap < 1 or (job.gpu_constraint is not None and key not in job.gpu_constraint):
                continue
            low, high = job.gpu_range
            low = max(low, 1)
            for w in range(low, min(high, cap * kind.gpus) + 1):
                for p in self._ps_counts(job, w, kind, cap):
                    n = self.instances(w, p, kind.gpus)
                    if n > cap:
                        continue
                    nodes = math.ceil(w / kind.gpus)
                    rate = self.speed(job, key, w, p, nodes)
                    if not rate > 0:
                        continue
                    time = kind.startup_s + steps / rate
                    cost = n * self.rented.bill(time, kind.price_per_hour)
                    meets = None if job.deadline is None else now + time <= job.deadline + 1e-9
                    out.append(Plan(name, key, n, w, p, time, cost, meets))
        return out

    def _ps_counts(self, job: JobSpec, w: int, kind: InstanceType, cap: int) -> range:
        if not self.has_ps(job):
            return range(0, 1)
        most = w if self.max_ps is None else self.max_ps
        if self.ps_placement == "colocated":
            most = min(most, cap * self._per_instance(kind.gpus))
        else:
            most = min(most, cap - math.ceil(w / kind.gpus))
        return range(1, most + 1)

    def _per_instance(self, gpus: int) -> int:
        return gpus if self.ps_per_instance is None else self.ps_per_instance

    def instances(self, workers: int, ps: int, gpus: int) -> int:
        """Instances a configuration holds (see `ps_placement` in the module docstring)."""
        for_workers = math.ceil(workers / gpus)
        if self.ps_placement == "dedicated":
            return for_workers + ps
        return max(for_workers, math.ceil(ps / self._per_instance(gpus)))


def fallback(job: JobSpec, options: Sequence[Plan], no_deadline: str) -> Plan | None:
    """The plan of a job no option of which meets its deadline (the fastest), or of a job
    without a deadline (the cheapest or the fastest); None without options."""
    if not options:
        return None
    if job.deadline is None and no_deadline == "cheapest":
        return min(options, key=lambda o: (o.cost, o.time_s, o.instance_type))
    return min(options, key=lambda o: (o.time_s, o.cost, o.instance_type))


def cynthia_choice(
    job: JobSpec, options: Sequence[Plan], no_deadline: str = "cheapest"
) -> Plan | None:
    """Cynthia's configuration among `options` (see the module docstring)."""
    meeting = [o for o in options if o.meets]
    if not meeting:
        return fallback(job, options, no_deadline)
    per_type: dict[str, Plan] = {}
    for name in sorted({o.instance_type for o in meeting}):
        mine = [o for o in meeting if o.instance_type == name]
        fewest = min(o.workers for o in mine)
        per_type[name] = min(
            (o for o in mine if o.workers == fewest), key=lambda o: (o.time_s, o.ps)
        )
    return min(per_type.values(), key=lambda o: (o.cost, o.time_s, o.instance_type))


class Cynthia:
    """Plan each arriving job with Cynthia's rule; rent its plan; give back what finished
    jobs held (see the module docstring)."""

    name = "cynthia"

    def __init__(
        self,
        ps_models: Mapping[str, Any] | None = None,
        speed_by_type: Mapping[str, float] | None = None,
        ps_placement: str = "colocated",
        ps_per_instance: int | None = None,
        max_ps: int | None = None,
        no_deadline: str = "cheapest",
    ) -> None:
        who = f"provisioner {self.name!r}"
        if ps_placement not in PS_PLACEMENTS:
            raise ValueError(
                f"{who}: ps_placement must be one of {', '.join(PS_PLACEMENTS)}, "
                f"got {ps_placement!r}"
            )
        if no_deadline not in NO_DEADLINE:
            raise ValueError(
                f"{who}: no_deadline must be one of {', '.join(NO_DEADLINE)}, got {no_deadline!r}"
            )
        for label, value in (("ps_per_instance", ps_per_instance), ("max_ps", max_ps)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{who}: {label} must be a whole number >= 1, got {value!r}")
        if ps_models is not None and not isinstance(ps_models, Mapping):
            raise ValueError(f"{who}: ps_models must map model names to PS models")
        self.ps_models = {
            str(k).strip().lower(): as_ps_model(str(k), v) for k, v in (ps_models or {}).items()
        }
        self.speed_by_type = {type_key(str(k)): float(v) for k, v in (speed_by_type or {}).items()}
        for gpu, factor in self.speed_by_type.items():
            if not (math.isfinite(factor) and factor > 0):
                raise ValueError(f"{who}: speed_by_type[{gpu!r}] must be > 0, got {factor!r}")
        self.ps_placement = ps_placement
        self.ps_per_instance = ps_per_instance
        self.max_ps = max_ps
        self.no_deadline = no_deadline

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(ps_models={sorted(self.ps_models)}, "
            f"ps_placement={self.ps_placement!r}, no_deadline={self.no_deadline!r})"
        )

    # ---- the run ----------------------------------------------------------------------
    def start(self, view: ClusterView) -> None:
        """Per-run state; publish the run's plan book for the ``cynthia`` policy."""
        rented = view.cluster.rented
        if rented is None:
            raise ConfigError(f"provisioner {self.name!r} needs a cluster with 'instance_types'")
        self._view = view
        self._rented = rented
        self._plans: dict[object, Plan] = {}
        self._planned_at: dict[object, float] = {}
        self._states: dict[object, JobState] = {}
        self._total_left: float = math.inf  # instances the total limit leaves (a call's)
        self._costs: dict[object, dict[str, Any]] = {}
        _BOOKS[view] = self._plans
        estimator = view.estimator

        def speed(job: JobSpec, key: str, w: int, p: int, nodes: int) -> float:
            model = self.ps_models.get((job.model or "").strip().lower())
            if model is None:
                return float(estimator.throughput(job, key, w, nodes))
            return model.speed(p, w) * self.speed_by_type.get(key, 1.0)

        self.model = PlanModel(
            rented,
            speed,
            estimator.total_steps,
            lambda job: (job.model or "").strip().lower() in self.ps_models,
            self.ps_placement,
            self.ps_per_instance,
            self.max_ps,
        )

    def choose(
        self, jobs: Sequence[JobSpec], now: float, left: dict[str, int]
    ) -> list[Plan | None]:
        """Plans for waiting jobs, in order, each within what the limits leave (`left` is
        updated); None: the job waits."""
        out: list[Plan | None] = []
        for job in jobs:
            plan = cynthia_choice(job, self.model.options(job, now, left), self.no_deadline)
            if plan is not None:
                left[plan.instance_type] -= plan.instances
                self._spend_total(left, plan.instances)
            out.append(plan)
        return out

    def _spend_total(self, left: dict[str, int], n: int) -> None:
        if self._rented.total_limit is None:
            return
        # the total cap binds every type: no type may take more than what the total leaves
        spare = self._total_left - n
        self._total_left = spare
        for name in left:
            left[name] = min(left[name], int(spare))

    def provision(self, view: ProvisionView) -> Provision:
        """Plan and rent for new jobs; release idle instances no unfinished plan needs."""
        now = view.now
        cluster_view = self._view
        for job_id in list(self._plans):
            if job_id not in cluster_view.pending and job_id not in cluster_view.running:
                self._finish(job_id)
        held: dict[str, int] = dict.fromkeys(self._rented.instance_types, 0)
        for node in view.held():
            held[view.instance_of(node).name] += 1
        need = self._needed()
        # instances the plans may still take: what the limits allow plus the spare held ones
        left = {
            name: view.can_acquire(name) + max(0, held[name] - need.get(name, 0))
            for name in self._rented.instance_types
        }
        self._total_left = (
            math.inf
            if self._rented.total_limit is None
            else float(self._rented.total_limit - sum(need.values()))
        )
        waiting = [
            job
            for job in view.queue()
            if job.job_id not in self._plans and job.num_gpus > 0 and not job.fractional
        ]
        for job, plan in zip(waiting, self.choose(waiting, now, left), strict=True):
            if plan is not None:
                self._plans[job.job_id] = plan
                self._planned_at[job.job_id] = now
                self._states[job.job_id] = cluster_view.pending[job.job_id]
        need = self._needed()
        acquire = {
            name: need.get(name, 0) - held[name]
            for name in self._rented.instance_types
            if need.get(name, 0) > held[name]
        }
        release = []
        for node in view.held():
            name = view.instance_of(node).name
            if held[name] > need.get(name, 0) and view.idle_since(node) is not None:
                release.append(node)
                held[name] -= 1
        return Provision(acquire, release)

    def _needed(self) -> dict[str, int]:
        need: dict[str, int] = {}
        for plan in self._plans.values():
            need[plan.instance_type] = need.get(plan.instance_type, 0) + plan.instances
        return need

    def _finish(self, job_id: object) -> None:
        plan = self._plans.pop(job_id)
        state = self._states.pop(job_id)
        kind = self._rented.instance_types[plan.instance_type]
        end = state.finish_time if state.finish_time is not None else self._view.now
        held_s = end - self._planned_at.pop(job_id)
        self._costs[job_id] = {
            "job_id": job_id if isinstance(job_id, (int, str)) else str(job_id),
            "instance_type": plan.instance_type,
            "instances": plan.instances,
            "workers": plan.workers,
            "ps": plan.ps,
            "predicted_time_s": plan.time_s,
            "predicted_cost": plan.cost,
            "held_s": held_s,
            "cost": plan.instances * self._rented.bill(held_s, kind.price_per_hour),
        }

    def job_costs(self) -> list[dict[str, Any]]:
        """Each finished job's plan and attributed cost (see the module docstring), in
        finishing order; the run's unfinished jobs are left out."""
        for job_id, state in list(self._states.items()):
            if state.finish_time is not None:  # the last ones finish after the last call
                self._finish(job_id)
        return list(self._costs.values())
