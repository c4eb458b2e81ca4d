"""Gavel's FIFO policies (Narayanan et al., OSDI 2020; `scheduler/policies/fifo.py`).

Gavel's FIFO is an allocation like its LPs' (X[j, k] = 1 on one type for the jobs it
admits, 0 for the others), realised by the same round-based mechanism; under FIFO the
mechanism never runs a job with priority 0, so a job waits until a solve admits it.

- `fifo_perf` (Gavel's `fifo_perf`): at every solve, jobs in arrival order each take the
  type where they run fastest among the types with enough GPUs left; the first job that
  fits nowhere stops the pass (no backfilling), and a job whose gang fits only on types
  where it cannot run is passed over (Gavel's `FIFOPolicy` in mode `perf`).
- `gavel_fifo` (Gavel's agnostic `fifo`; renamed because dlsched's `fifo` is the
  YARN-style FIFO of the other papers): a job keeps the type it was given until it ends.
  `type_choice="gavel"` (default) replays `FIFOPolicy.get_allocation` (mode `base`) of
  Gavel's `scheduler/policies/fifo.py` step for step, quirks included, because the
  authors' figures were made with it:
  1. at a solve, each finished job's type goes first to the head of the queue if its gang
     fits in that type's GPUs *as counted so far* (jobs are visited in arrival order, so
     running jobs that arrived later are not subtracted yet) and it can run there;
  2. then waiting jobs, in arrival order, while Gavel's list of types with free GPUs
     (built once, before this pass) is not empty: if some listed type has room for the
     job's gang, the job is given the *last* type of that sorted list (Gavel means a
     random type, but `worker_type` leaks from the loop that builds that list: the list
     is sorted by type name, lower-cased as Gavel names types, so on its V100/P100/K80
     the V100s until they are gone, then the P100s, then the K80s, and on other clusters
     whatever type sorts last), whether or not that type has room for the gang; a type
     leaves the list only when its count hits exactly 0, and what leaves is the list
     entry at the random index Gavel drew (`random.Random(seed)`, as its
     `FIFOPolicy(seed=...)`; the policy `seed`, else the run's: see below); a
     job that cannot run on the type given is passed over; one that fits nowhere ends
     the pass. dlsched's guard, never met on Gavel's clusters: a job is never given a
     type it may never run on (its pool there — its VC's nodes, or the nodes of no VC —
     holds fewer GPUs than its gang, or its `gpu_constraint` excludes the type), which
     would pass it over at every solve; it gets the last listed type that can hold it.
  So types are oversubscribed — more gangs are given a type than it has GPUs (multi-GPU
  gangs at once, single-GPU jobs once the list has lost a type with GPUs left) — and the
  round mechanism then time-shares that type among them while other types may idle. That
  is why Gavel's agnostic FIFO is slow on multi-GPU traces (its physical-cluster traces,
  Figure 9). `type_choice="ordered"` (dlsched's former default) is the same without the
  oversubscription: waiting jobs take the first type in the cluster's order (fastest
  first, by the mean over all jobs seen so far of each job's throughput there relative to
  its best) that has room; `type_choice="random"` draws uniformly among the types with
  room, as Gavel intended, from the run's random stream (`simulate(seed=...)`), or from a
  fixed draw when the policy's `seed` is set.
- `fifo_packed` (`packing.py`): `fifo_perf`, then waiting jobs packed beside running ones.

The seed decides the run. Step 2's draw matters only when a type's count hits exactly 0:
the entry it removes is V100 (the type given) with probability 1/n, n the listed types with
room for the gang (at first 3 on Gavel's cluster); otherwise V100 stays last in the list
with no GPUs free and every later job of the pass is given V100. On a static trace that is
one draw for the whole run: Gavel's own simulator on `minimize_makespan.trace` (8 V100 +
16 P100 + 24 K80) gives 58.76 h of average JCT with seeds 0, 1, 2 and 4 (all 100 jobs
time-share the 8 V100s; the P100s and K80s never run a job) and 15.43 h with
seeds 3 and 5; on Gavel's static sweep (100 generated multi-GPU jobs, 36 + 36 + 36, seed 0)
39.5 h against 27.6 h. So a run is compared with Gavel's run of the same seed: Gavel's
``Scheduler(seed=s)`` passes its one seed to ``FIFOPolicy(seed=s)``, and `gavel_fifo` uses
its `seed` when given, else the run's (``simulate(seed=s)`` makes Gavel's draws of seed s;
a run seeded otherwise than by one integer draws Gavel's seed from the run's stream). Runs
that compared `simulate(seed=0)` with Gavel's seed 0 differed by −75 % and −30 % on those two
traces while the policy drew its own seed from the run's stream (dlsched 0.1.0); they
agree job by job now (`tests/test_gavel_fifo_physical.py`, with Gavel's per-job JCTs).
`type_choice="random"` is the draw Gavel meant, without the oversubscription (unimodal).

Replaying a Gavel run (`type_choice="gavel"`, seed s as Gavel's run seed, as
``Scheduler(seed=s)`` passes it to ``FIFOPolicy(seed=s)``): `gavel_fifo` makes exactly the
calls Gavel's agnostic FIFO makes on its ``random.Random(seed)`` — at every solve, one
``randrange(n)`` per queued job visited in step 2, in arrival order, n being the number of
listed types with room for its gang (none for a job that fits nowhere: the pass ends) —
and no others. The mechanism's per-round type shuffle (Gavel's ``_worker_type_shuffler``,
``random.Random(seed + 5)``) is replayed as well (`mechanism`), though under FIFO it cannot
change a run: a job's X is on one type, and entries with priority 0 never run. The draws
stay Gavel's for as long as every solve sees the same jobs with the same types given.
Checked solve by solve against Gavel's simulator of 2020-05-19 on Figure 9's jobs at 2.2
jobs/h (seed 0): X identical at the first 158 solves (100 simulated hours) with the
engine's continuous progress, and at the first 351 (219 h) with Gavel's whole-step
progress (`realisation.WholeSteps`). What still makes a run diverge: (1) progress — Gavel
advances a job int(rate · 360) whole steps per round, so a job may need one round more
than under continuous progress, and when that round starts with a solve, the solve sees
one more job (job 199 at 100 h); `WholeSteps` as the truth removes this; (2) round ends —
Gavel's rounds end when their last job has done its whole steps, a few milliseconds short
of 360 s, so its round boundaries drift early (5.8 s by 219 h), and a job arriving in that
gap is seen a solve later there than here (job 488 at 218.7 h); (3) after the cluster has
emptied, Gavel's rounds restart at the next arrival, dlsched's stay on the 360 s grid.
Near saturation, one different solve sends the queue another way, and the average JCT of
the window moves by tens of percent (the module docstring of `dlsched.reproduce.gavel`).

Faithful: admission only at solves (so, as in Gavel, GPUs freed by a completion may stay
idle until the next solve, at most `resolve_interval_s` later); no preemption of admitted
jobs by FIFO itself (`fifo_perf` may move a job to a faster type at a solve, as Gavel's
reset allocation does). Simplified, for `type_choice="ordered"`/`"random"` only: Gavel's
agnostic FIFO first hands a completed job's GPUs to the head of the queue on the same
type; there the head simply takes the first type in order that has room.
"""

from __future__ import annotations

import random

import numpy as np

from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.policies.gavel.lp import Problem
from dlsched.policies.gavel.mechanism import (
    GavelPolicy,
    mechanism_options,
)
from dlsched.policies.registry import register

TYPE_CHOICES = ("gavel", "ordered", "random")


def run_seed(rng: np.random.Generator) -> int | None:
    """The integer the run was seeded with (``simulate(seed=s)``), read from a stream the
    engine spawned from it, or None when the run's seed was not one integer."""
    # The engine spawns each consumer's stream from `SeedSequence(seed)`: a child keeps the
    # root's entropy and adds its index to an empty spawn key.
    seq = getattr(rng.bit_generator, "seed_seq", None)
    if (
        isinstance(seq, np.random.SeedSequence)
        and len(seq.spawn_key) == 1
        and isinstance(seq.entropy, int)
    ):
        return seq.entropy
    return None


def fifo_fastest(problem: Problem) -> np.ndarray:
    """X of `fifo_perf`: rows in arrival order, each job on its fastest type with room."""
    n, m = problem.shape
    x = np.zeros((n, m))
    room = problem.capacities.astype(float).copy()
    tput = problem.throughputs * problem.usable
    for j in range(n):
        fits = room >= problem.scale_factors[j]
        if not fits.any():
            break
        k = int(np.argmax(np.where(fits, tput[j], -1.0)))
        if tput[j, k] > 0:  # as in Gavel, a job whose gang fits only where it cannot run
            x[j, k] = 1.0  # is passed over, not a stop
            room[k] -= problem.scale_factors[j]
    return x


@register("fifo_perf")
class FifoPerf(GavelPolicy):
    """Gavel FIFO, heterogeneity-aware: each job on its fastest type with room (OSDI 2020)."""

    name = "fifo_perf"
    heterogeneity_aware = True
    zero_priority_fill = False  # Gavel: FIFO jobs with priority 0 never run

    def solve(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        return fifo_fastest(problem)


@register("gavel_fifo")
@mechanism_options
class GavelFifo(GavelPolicy):
    """Gavel FIFO, heterogeneity-agnostic: jobs keep the type they were given (OSDI 2020)."""

    name = "gavel_fifo"
    heterogeneity_aware = False
    zero_priority_fill = False  # Gavel: FIFO jobs with priority 0 never run

    def __init__(self, type_choice: str = "gavel", **mechanism) -> None:
        super().__init__(**mechanism)
        if type_choice not in TYPE_CHOICES:
            raise ValueError(
                f"gavel_fifo: type_choice must be one of {TYPE_CHOICES}, got {type_choice!r}"
            )
        self.type_choice = type_choice

    def start(self, view: ClusterView) -> None:
        """The mechanism's run state, no type given yet, and the stream of random type draws."""
        super().start(view)
        self._given: dict[JobState, int] = {}
        # Its own stream, so the draws do not depend on how many rounds shuffled types;
        # a seed replays the fixed draw (seed=0: the draw made before runs owned randomness).
        self._choice_rng = (
            view.rng.spawn(1)[0] if self.seed is None else np.random.default_rng([self.seed, 1])
        )
        # Gavel's own `random.Random(seed)` for `type_choice="gavel"`: the policy's seed, else
        # the run's, because Gavel's `Scheduler(seed=s)` hands its one seed to
        # `FIFOPolicy(seed=s)` and the run's outcome hinges on these draws (module docstring).
        gavel_seed = self.seed if self.seed is not None else run_seed(view.rng)
        self._gavel_rng = random.Random(
            int(self._choice_rng.integers(2**32)) if gavel_seed is None else gavel_seed
        )

    def on_finish(self, job: JobState) -> None:
        super().on_finish(job)
        if self.type_choice != "gavel":  # Gavel's replay hands the type on at the next solve
            self._given.pop(job, None)

    def solve(self, problem: Problem, jobs: list[JobState], view: ClusterView) -> np.ndarray:
        if self.type_choice == "gavel":
            return self._solve_as_gavel(problem, jobs, view)
        n, m = problem.shape
        x = np.zeros((n, m))
        room = problem.capacities.astype(float).copy()
        for j, job in enumerate(jobs):
            k = self._given.get(job)
            if k is not None:
                x[j, k] = 1.0
                room[k] -= problem.scale_factors[j]
        order = self._rank_types()
        for j, job in enumerate(jobs):
            if job in self._given:
                continue
            fits = [
                k for k in order if room[k] >= problem.scale_factors[j] and problem.usable[j, k]
            ]
            if not fits:
                break
            if self.type_choice == "random":
                k = fits[int(self._choice_rng.integers(len(fits)))]
            else:
                k = fits[0]
            self._given[job] = k
            x[j, k] = 1.0
            room[k] -= problem.scale_factors[j]
        return x

    def _solve_as_gavel(
        self, problem: Problem, jobs: list[JobState], view: ClusterView
    ) -> np.ndarray:
        """X as Gavel's `FIFOPolicy.get_allocation` (mode `base`) computes it: steps 1 and 2
        of the module docstring, its quirks kept."""
        n, m = problem.shape
        row = {job: j for j, job in enumerate(jobs)}
        gang = {job: float(problem.scale_factors[j]) for j, job in enumerate(jobs)}
        free = problem.capacities.astype(float).copy()
        # Gavel's queue: job ids in arrival order (`jobs` is too, save for a job held back
        # by `gavel_clock`, which joins the table after later arrivals)
        queue = sorted((job for job in jobs if job not in self._given), key=lambda j: j.spec.index)
        given = self._given
        for job in sorted(given, key=lambda j: j.spec.index):
            k = given[job]
            if job in row:
                free[k] -= gang[job]
                continue
            del given[job]  # finished: its type goes to the head of the queue if it fits
            if queue:
                head = queue[0]
                if gang[head] <= free[k] and problem.usable[row[head], k]:
                    queue.pop(0)
                    given[head] = k
                    free[k] -= gang[head]
        # Gavel's sorted list of types with free GPUs; the last one is the one it gives
        names = [t.lower() for t in self._types]
        listed = [k for k in sorted(range(m), key=names.__getitem__) if free[k] > 0]
        pool_gpus = view.pool_capacity()

        def holds(job: JobState, k: int) -> bool:
            """Whether the job may ever run on type k: its pool there (its VC's nodes, or
            the nodes of no VC) has GPUs for its gang and its constraint allows the type."""
            if problem.allowed is not None and not problem.allowed[row[job], k]:
                return False
            allowed = job.spec.gpu_constraint
            if allowed is not None and self._types[k] not in allowed:
                return False
            return pool_gpus.get(view.pool(job.spec, self._types[k]), 0) >= gang[job]

        while queue and listed:
            job = queue.pop(0)
            room = [i for i, k in enumerate(listed) if free[k] >= gang[job]]
            if not room:
                break
            drawn = room[self._gavel_rng.randrange(len(room))]
            k = listed[-1]
            if not holds(job, k):
                # dlsched's guard, never met on Gavel's clusters (no VCs, no constraints,
                # every type larger than any gang): a type the job may never run on (too few
                # GPUs in its pool for the gang, all owned by VCs not its own, or excluded
                # by its constraint) would be given to it at every solve and hold it
                # forever, so it gets the last listed type that can hold it.
                large = [kk for kk in listed if holds(job, kk)]
                if not large:
                    continue
                k = large[-1]
            if problem.usable[row[job], k]:
                given[job] = k
                free[k] -= gang[job]
                if free[k] == 0:
                    listed.pop(drawn)
        x = np.zeros((n, m))
        for job, k in given.items():
            x[row[job], k] = 1.0
        return x
