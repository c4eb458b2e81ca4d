"""Cynthia's placement: each job on the instances its provisioner rented for it.

Paper: Zheng et al., "Cynthia: Cost-Efficient Cloud Resource Provisioning for Predictable
Distributed Deep Neural Network Training", ICPP 2019. Cynthia is a provisioning framework: it
chooses, per job, an instance type and numbers of workers and PS (the provisioner
``cynthia``, `dlsched.provision.cynthia`, where the rule and its sources are) and launches
the job on them. This policy is that launch. It is a policy of its own (a plain name,
``cynthia``) because the plan chooses the job's GPU count and type, which only a policy may
give; the provisioner publishes its plans for the run and this policy reads them.

- Jobs start in submit order, each on its plan: `workers` GPUs of the plan's GPU type,
  packed on the fewest nodes. The GPUs of its instances its workers leave (instances held for
  PS) are kept from other jobs while it runs, so a job's instances serve it alone; counts are
  kept per GPU type, so a job may start on instances another job's plan rented that are
  already up (its own then serve the other).
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
from dlsched.jobs import JobState
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
        assert rented is not None  # a planning provisioner runs only where instances exist
        kept: dict[str, int] = {}  # GPU type key → GPUs held for running jobs' PS instances
        for job_id, running in view.running.items():
            plan = plans.get(job_id)
            if plan is not None:
                per = rented.instance_types[plan.instance_type].gpus
                spare = plan.instances * per - plan.workers
                kept[plan.gpu_type] = kept.get(plan.gpu_type, 0) + spare
        for job in waiting:
            plan = plans.get(job.job_id)
            if plan is None:
                continue
            spare = (
                plan.instances * rented.instance_types[plan.instance_type].gpus - plan.workers
            )
            usable = view.free_gpus(plan.gpu_type) - kept.get(plan.gpu_type, 0) - spare
            if usable < plan.workers:
                continue
            gpus = self._place(view, job, plan.gpu_type, plan.workers)
            if gpus is None:
                continue
            alloc[job] = gpus
            kept[plan.gpu_type] = kept.get(plan.gpu_type, 0) + spare
        return alloc

    @staticmethod
    def _place(view: ClusterView, job: JobState, gpu_type: str, workers: int):
        if job.spec.elastic:
            return view.place(job, gpu_type=gpu_type, n_gpus=workers)
        return view.place(job, gpu_type=gpu_type)
