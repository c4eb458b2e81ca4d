"""Cynthia's placement: each job on the instances its provisioner rented for it.

Paper: Zheng et al., "Cynthia: Cost-Efficient Cloud Resource Provisioning for Predictable
Distributed Deep Neural Network Training", ICPP 2019. Cynthia is a provisioning framework: it
chooses, per job, an instance type and numbers of workers and PS (the provisioner
``cynthia``, `dlsched.provision.cynthia`, where the rule and its sources are) and launches
the job on them. This policy is that launch. It is a policy of its own (a plain name,
``cynthia``) because the plan chooses the job's GPU count and type, which only a policy may
give; the provisioner publishes its plans for the run and this policy reads them.

- Jobs start in submit order, each on its plan: `workers` GPUs on instances of the plan's
  instance type, the freest first (fewest instances), once as many GPUs of that type are
  free as the plan's instances hold. The GPUs its workers leave (instances held for PS) are
  kept from other jobs while it runs, so a job's instances serve it alone. Counts are kept
  per instance type: a job may start on an instance of its type that another job's plan
  rented and that is up already (its own then serves the other).
- Jobs without GPUs, or with a fraction of one, are not planned (nothing to rent for them
  by Cynthia's rule): they start where `view.place` finds room.
- A job without a plan yet (its instances not rented, or the limits leave none) waits; a
  later job whose plan is ready does not wait behind it (each job has its own instances).
- Never preempts, never resizes: a job keeps its plan to the end (Cynthia provisions once).

Without a planning provisioner (``cynthia`` or ``cost_optimal``) in the run — a fixed
cluster, or ``on_demand`` — no job has a plan: jobs then start as they ask (their requested
GPU count, the fastest type with room), first come first served with greedy backfill, so
the policy runs anywhere; that fallback is dlsched's [I], not the paper's.
"""

from __future__ import annotations

from dlsched.engine.view import ClusterView
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register
from dlsched.provision.cynthia import plans_for


@register("cynthia")
class CynthiaPolicy(BasePolicy):
    """Start each job on its plan (see the module docstring)."""

    name = "cynthia"
    places_jobs_without_gpus = True  # every job goes through `view.place`

    def schedule(self, view: ClusterView):
        alloc = view.allocation()
        plans = plans_for(view)
        waiting = sorted(view.pending.values(), key=lambda s: (s.spec.submit_time, s.spec.index))
        if plans is None:
            for job in waiting:
                gpus = view.place(job)
                if gpus is not None:
                    alloc[job] = gpus
            return alloc
        rented = view.cluster.rented
        assert rented is not None and rented.node_type is not None  # planning ran, so it rents
        kept: dict[str, int] = {}  # instance type → GPUs held for running jobs' PS instances
        for job_id in view.running:
            plan = plans.get(job_id)
            if plan is not None:
                spare = plan.instances * rented.instance_types[plan.instance_type].gpus
                kept[plan.instance_type] = kept.get(plan.instance_type, 0) + spare - plan.workers
        nodes_of: dict[str, list[int]] = {}
        for node, kind in sorted(rented.node_type.items()):
            nodes_of.setdefault(kind, []).append(node)
        for job in waiting:
            plan = plans.get(job.job_id)
            if plan is None:
                if job.spec.num_gpus == 0 or job.spec.fractional:  # never planned
                    gpus = view.place(job)
                    if gpus is not None:
                        alloc[job] = gpus
                continue
            per = rented.instance_types[plan.instance_type].gpus
            spare = plan.instances * per - plan.workers
            free = {n: view.free_gpus_on_node(n) for n in nodes_of[plan.instance_type]}
            usable = sum(len(ids) for ids in free.values()) - kept.get(plan.instance_type, 0)
            if usable < plan.workers + spare:
                continue
            alloc[job] = _packed(free, plan.workers)
            kept[plan.instance_type] = kept.get(plan.instance_type, 0) + spare
        return alloc


def _packed(free: dict[int, tuple[int, ...]], workers: int) -> tuple[int, ...]:
    """`workers` free GPU ids on the fewest instances: the freest first (ties: index)."""
    taken: list[int] = []
    for node in sorted(free, key=lambda n: (-len(free[n]), n)):
        taken.extend(free[node][: workers - len(taken)])
        if len(taken) == workers:
            break
    return tuple(taken)
