"""Synergy: workload-aware CPU and memory allocation beside GPUs, in 300 s rounds.

Paper: Mohan et al., "Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters",
OSDI 2022. The algorithms are those of the authors' simulator (`msr-fiddle/synergy` @
1bb2bed, `simulator/schedulers/*_synergy_new.py`, `resources/cluster.py`,
`opt_algo/synergy_opt.py`), which is also the reference of `dlsched reproduce synergy`.
Job sensitivity comes from the bundled profiles (`dlsched.perf.synergy`); run it with the
`SynergyModel` truth so that the CPU and memory a job holds change its speed.

`synergy(order=, mode=)`, every `round_s` (300 s, the authors' round) re-places every job
from scratch (free, as in their simulator: run with no overheads, the policy's default):

- order: ``fifo`` (arrival), ``srtf`` (remaining time at the proportional share divided by
  the speed-up the job held last round; 1 in proportional mode), ``las`` (attained
  GPU-seconds); a job that has waited more than `starvation_s` (1000 h) since it last ran
  goes first under SRTF and LAS.
- which jobs: FIFO and SRTF try every job, in order, whose GPU count fits the free GPUs
  (backfilling by count); LAS and OPT take the prefix of jobs whose counts fit, and LAS with
  TUNE tries them largest GPU count first.
- mode: ``proportional`` gives every job the GPU-proportional share of CPU and memory (the
  smallest node ratio of the cluster: the server's share in the paper); ``greedy`` its best
  ("demand") point or, if no GPUs have that room, nothing this round; ``tune`` its demand,
  else the proportional share, else it takes back from jobs placed earlier this round on its
  target nodes their CPU and memory above the proportional share (fewest nodes, then most
  CPU and memory per GPU first) and tries the proportional share again; ``opt`` solves the
  authors' ILP (one grid point per job maximising the sum of normalised throughputs under
  the cluster's pooled CPU and memory, each job at least its proportional-share throughput;
  `scipy.optimize.milp`, HiGHS) and places each job at its point, else at the proportional
  share.
- placement: first fit over GPU ids, a GPU taken when its node still has the per-GPU CPU and
  memory free (the authors' `_top_synergy_gpus`), gangs within one GPU type.

Faithful: the round, the orders and starvation rule, which jobs are tried, the three
allocation rules and their fall-backs, the peer order of TUNE and its single pass (CPU freed
from a peer beyond the shortfall stays free this round), the ILP's objective and
constraints, first-fit placement, free re-placement each round.
Simplified / different: progress is exact (the authors credit whole iterations per round and
finish a job at its lease end, at most one round later); OPT is realised per node (the
authors' simulated OPT ignores node boundaries and is a bound), and a job that TUNE cannot
place waits (the authors' simulator exits); a multi-GPU job whose demand exceeds a node is
capped at the largest node and its speed-up read from the matrix there (the authors fit a
line); a model without a profile keeps its own CPU/memory demand (or the proportional
share) as its only point, with speed-up 1; jobs of VCs that own nodes, with GPU-type
constraints or fractional GPUs are placed by `view.place` with their own demand; no storage
dimension. On a cluster that declares no CPUs or memory every mode is GPU-proportional.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dlsched.engine.allocation import Allocation
from dlsched.engine.ledger import UNLIMITED
from dlsched.engine.view import ClusterView
from dlsched.errors import ConfigError, SchedulingError
from dlsched.jobs import PENDING, JobState
from dlsched.overheads import make_overheads
from dlsched.perf.synergy import CPU_GRID, MEM_GRID, SynergyProfile, load_profiles
from dlsched.policies.base import BasePolicy
from dlsched.policies.registry import register

ROUND_S = 300.0
"""The authors' round (`runner.py:76`, `scheduler.py:44`)."""
STARVATION_S = 1000 * 3600.0
"""Wait since last run after which a job goes first (`fifo_synergy_new.py:53`)."""
ORDERS = ("fifo", "srtf", "las")
MODES = ("proportional", "greedy", "tune", "opt")
_TIE = 1e-6  # OPT: prefer fewer resources among points of equal throughput (deterministic)

Vec = tuple[int, int]  # (milli-CPUs, MiB) per GPU; 0 for a resource the cluster does not track


@dataclass(frozen=True)
class _Info:
    """What the policy knows of a job: its best point per GPU and speed-up there."""

    best: Vec
    speedup: float
    profile: SynergyProfile | None


@register("synergy")
class Synergy(BasePolicy):
    """Synergy (OSDI 2022): CPU and memory allocation by job sensitivity (see the module)."""

    name = "synergy"
    default_overheads = make_overheads("none")

    def __init__(
        self,
        order: str = "fifo",
        mode: str = "tune",
        round_s: float = ROUND_S,
        starvation_s: float = STARVATION_S,
    ) -> None:
        if order not in ORDERS:
            raise ConfigError(f"synergy order must be one of {', '.join(ORDERS)}, got {order!r}")
        if mode not in MODES:
            raise ConfigError(f"synergy mode must be one of {', '.join(MODES)}, got {mode!r}")
        if not round_s > 0:
            raise ConfigError(f"synergy round_s must be > 0 seconds, got {round_s!r}")
        self.order = order
        self.mode = mode
        self.period_s = round_s
        self.starvation_s = starvation_s

    def __repr__(self) -> str:
        return f"Synergy(order={self.order!r}, mode={self.mode!r})"

    # ---- per run ---------------------------------------------------------------------
    def start(self, view: ClusterView) -> None:
        cluster = view.cluster
        self._profiles = load_profiles()
        self._next_tick = 0.0
        self._info: dict[int, _Info] = {}
        self._held_speedup: dict[int, float] = {}
        self.objectives: list[float] = []  # OPT: the ILP's objective, round by round
        owned = {i for vc in cluster.vcs for i in vc.node_indices}
        self._special_vcs = {vc.name for vc in cluster.vcs if vc.node_indices or vc.quota_gpus}
        self._nodes_of_type: dict[str, list[int]] = {}
        for node in cluster.nodes:
            if node.index not in owned and node.gpu_ids:
                self._nodes_of_type.setdefault(node.gpu_type, []).append(node.index)
        with_gpus = [n for n in cluster.nodes if n.gpu_ids]
        self._track_cpu = cluster.declares_cpus
        self._track_mem = cluster.declares_memory
        cpus = [n.cpus * 1000 / len(n.gpu_ids) for n in with_gpus if n.cpus is not None]
        mems = [n.memory_gb * 1024 / len(n.gpu_ids) for n in with_gpus if n.memory_gb is not None]
        self._fair: Vec = (
            math.floor(min(cpus)) if self._track_cpu and cpus else 0,
            math.floor(min(mems)) if self._track_mem and mems else 0,
        )
        self._node_max: Vec = (
            round(max(n.cpus for n in with_gpus if n.cpus is not None) * 1000) if cpus else 0,
            round(max(n.memory_gb for n in with_gpus if n.memory_gb is not None) * 1024)
            if mems
            else 0,
        )
        self._max_gpus_per_node = max((len(n.gpu_ids) for n in with_gpus), default=1)

    def on_finish(self, job: JobState) -> None:
        self._held_speedup.pop(job.spec.index, None)

    def _job_info(self, state: JobState) -> _Info:
        """The job's best point per GPU and speed-up (cached per job)."""
        spec = state.spec
        info = self._info.get(spec.index)
        if info is not None:
            return info
        g = max(1, spec.num_gpus)
        fair = self._fair
        profile = self._profiles.get(spec.model) if spec.model is not None else None
        if profile is None:
            best = (
                -(-spec.cpu_milli // g) if spec.cpu_milli and self._track_cpu else fair[0],
                -(-spec.memory_mib // g) if spec.memory_mib and self._track_mem else fair[1],
            )
            info = _Info(best, 1.0, None)
        elif g > self._max_gpus_per_node:  # the authors give such a job the share, speed-up 1
            info = _Info(fair, 1.0, profile)
        else:
            cpu = min(round(profile.demand_cpu * 1000), self._node_max[0] // g)
            mem = min(round(profile.demand_mem_gb * 1024), self._node_max[1] // g)
            best = (cpu if self._track_cpu else 0, mem if self._track_mem else 0)
            info = _Info(best, self._factor(profile, best), profile)
        self._info[spec.index] = info
        return info

    def _factor(self, profile: SynergyProfile, vec: Vec) -> float:
        """The profile's throughput at a per-GPU point (untracked resources at the share)."""
        return profile.factor(
            vec[0] / 1000 if self._track_cpu else None, vec[1] / 1024 if self._track_mem else None
        )

    # ---- a round ---------------------------------------------------------------------
    def schedule(self, view: ClusterView) -> Allocation | None:
        now = view.now
        # The rounds are the policy's own timers (the engine's round ticks stop once nothing
        # runs and the last call changed nothing, which is every call between ticks here).
        tick = max(self._next_tick, math.ceil(now / self.period_s - 1e-9) * self.period_s)
        if now < tick - 1e-6:
            view.wake_at(tick)
            return None  # arrivals and completions wait for the next round, as the authors'
        self._next_tick = tick + self.period_s
        view.wake_at(self._next_tick)
        alloc = view.allocation()
        jobs = sorted([*view.running.values(), *view.pending.values()], key=lambda s: s.spec.index)
        keys = {s.spec.index: self._key(view, s, now) for s in jobs}
        # After the sort, as the authors reset it: a job left waiting is ranked by its full
        # speed-up next round, one placed by what it holds (`_record`).
        self._held_speedup = {}
        for state in list(view.running.values()):
            del alloc[state]
        jobs.sort(key=lambda s: keys[s.spec.index])
        self._placed: dict[int, list[tuple[JobState, tuple[int, ...], Vec]]] = {}
        free = view.free_gpus()
        if self.order == "las" or self.mode == "opt":
            chosen = []
            for state in jobs:
                g = state.spec.num_gpus if not state.spec.fractional else 0
                if g <= free:
                    chosen.append(state)
                    free -= g
            if self.order == "las" and self.mode == "tune":
                chosen.sort(key=lambda s: -s.spec.num_gpus)  # stable: LAS order among equals
            points = self._solve_opt(view, chosen) if self.mode == "opt" else {}
            for state in chosen:
                self._try(view, alloc, state, points.get(state.spec.index))
            return alloc
        for state in jobs:
            spec = state.spec
            if spec.fractional or spec.num_gpus <= view.free_gpus():
                self._try(view, alloc, state, None)
        return alloc

    def _key(self, view: ClusterView, state: JobState, now: float) -> tuple:
        """The job's place in this round's order (before any GPU is freed)."""
        spec = state.spec
        if self.order == "fifo":
            return (spec.submit_time, spec.index)
        starving = (
            state.status == PENDING
            and now - max(state.queued_since, spec.submit_time) > self.starvation_s
        )
        if self.order == "las":
            return (not starving, state.attained_service_at(now), spec.submit_time, spec.index)
        estimator = view.estimator
        rate = estimator.best_type(spec)[1]
        remaining = estimator.remaining_steps(state, now) / rate if rate > 0 else math.inf
        if self.mode != "proportional":
            info = self._job_info(state)
            remaining /= self._held_speedup.get(spec.index, info.speedup)
        return (not starving, remaining, spec.submit_time, spec.index)

    # ---- placing one job -------------------------------------------------------------
    def _try(
        self, view: ClusterView, alloc: Allocation, state: JobState, opt_point: Vec | None
    ) -> None:
        """Place the job by the mode's rule, or leave it waiting this round."""
        spec = state.spec
        if spec.fractional or spec.gpu_constraint is not None or spec.vc in self._special_vcs:
            gpus = view.place(spec)
            if gpus is not None:
                alloc[state] = gpus
            return
        info = self._job_info(state)
        fair = self._fair
        if self.mode == "proportional":
            tries = [fair]
        elif self.mode == "greedy":
            tries = [info.best]
        elif self.mode == "tune":
            exceeds = info.best[0] > fair[0] or info.best[1] > fair[1]
            tries = [info.best, fair] if exceeds else [info.best]
        else:
            tries = [opt_point or info.best, fair]
        for vec in tries:
            if self._fit(view, alloc, state, vec):
                return
        if self.mode == "tune" and self._shrink_peers(view, alloc, state, tries[-1]):
            self._fit(view, alloc, state, tries[-1])

    def _fit(self, view: ClusterView, alloc: Allocation, state: JobState, vec: Vec) -> bool:
        """First fit of the job at `vec` per GPU over GPU ids; assign and say whether it did."""
        spec = state.spec
        g = spec.num_gpus
        for gpu_type in view.rank_types(spec):
            gpus = self._first_fit(view, gpu_type, g, vec)
            if gpus is None:
                continue
            try:
                alloc.assign(
                    state,
                    gpus,
                    cpu_milli=g * vec[0] if self._track_cpu else None,
                    memory_mib=g * vec[1] if self._track_mem else None,
                )
            except SchedulingError:
                continue  # cannot happen with the checks above; the job waits if it does
            self._record(view, state, gpus, vec)
            return True
        return False

    def _first_fit(
        self, view: ClusterView, gpu_type: str, g: int, vec: Vec
    ) -> tuple[int, ...] | None:
        """The first `g` free GPUs of `gpu_type` by id whose nodes have `vec` free per GPU."""
        taken: list[int] = []
        for node in self._nodes_of_type.get(gpu_type, ()):
            free = view.free_gpus_on_node(node)
            if not free:
                continue
            k = min(len(free), g - len(taken))
            cpu, mem = view.free_resources(node)
            if vec[0] and cpu is not None:
                k = min(k, cpu // vec[0])
            if vec[1] and mem is not None:
                k = min(k, mem // vec[1])
            taken.extend(free[:k])
            if len(taken) == g:
                return tuple(taken)
        return None

    def _record(self, view: ClusterView, state: JobState, gpus: tuple[int, ...], vec: Vec) -> None:
        """Remember where the job went this round (TUNE's peers) and its speed-up."""
        info = self._job_info(state)
        if vec == info.best:
            speedup = info.speedup
        elif info.profile is not None:
            speedup = self._factor(info.profile, vec)
        else:
            speedup = 1.0
        self._held_speedup[state.spec.index] = speedup
        gpu_node = view.cluster.gpu_node
        for node in sorted({gpu_node[g] for g in gpus}):
            self._placed.setdefault(node, []).append((state, gpus, vec))

    def _shrink_peers(
        self, view: ClusterView, alloc: Allocation, state: JobState, vec: Vec
    ) -> bool:
        """TUNE's last resort: jobs placed this round on the job's target nodes give back
        their CPU/memory above the proportional share until the job's share fits there."""
        spec = state.spec
        g = spec.num_gpus
        gpu_type = view.rank_types(spec)[0]
        nodes = [
            (len(view.free_gpus_on_node(n)), n)
            for n in self._nodes_of_type.get(gpu_type, ())
            if view.free_gpus_on_node(n)
        ]
        if g > 1:
            targets = [next(((g, n) for k, n in nodes if k >= g), (0, -1))]
            if targets[0][1] < 0:
                return False
        else:
            targets = []
            covered = 0
            for k, n in sorted(nodes):
                if covered >= g:
                    break
                targets.append((min(k, g - covered), n))
                covered += k
        fair = self._fair
        shrunk = False
        for k, node in targets:
            cpu_free, mem_free = view.free_resources(node)
            short_cpu = k * vec[0] - cpu_free if vec[0] and cpu_free is not None else 0
            short_mem = k * vec[1] - mem_free if vec[1] and mem_free is not None else 0
            peers = sorted(
                self._placed.get(node, ()),
                key=lambda p: (
                    len({view.cluster.gpu_node[x] for x in p[1]}),
                    -p[2][0],
                    -p[2][1],
                    p[0].spec.index,
                ),
            )
            for peer, gpus, held in peers:
                if short_cpu <= 0 and short_mem <= 0:
                    break
                extra_cpu, extra_mem = max(0, held[0] - fair[0]), max(0, held[1] - fair[1])
                if not extra_cpu and not extra_mem:
                    continue
                # down to the share, never up: a peer below it on one resource (a job that
                # needs little memory) keeps what it holds there, or shrinking it could ask
                # for room the node does not have
                point = (min(held[0], fair[0]), min(held[1], fair[1]))
                n_peer = len(gpus)
                alloc.assign(
                    peer,
                    gpus,
                    cpu_milli=n_peer * point[0] if self._track_cpu else None,
                    memory_mib=n_peer * point[1] if self._track_mem else None,
                )
                self._forget(peer)
                self._record(view, peer, gpus, point)
                # only the peer's GPUs on this node free room here
                here = sum(1 for x in gpus if view.cluster.gpu_node[x] == node)
                short_cpu -= extra_cpu * here
                short_mem -= extra_mem * here
                shrunk = True
        return shrunk

    def _forget(self, state: JobState) -> None:
        """Drop the job from this round's peer lists (it is recorded again at its new point)."""
        for node, entries in self._placed.items():
            self._placed[node] = [e for e in entries if e[0] is not state]

    # ---- OPT -------------------------------------------------------------------------
    def _solve_opt(self, view: ClusterView, jobs: list[JobState]) -> dict[int, Vec]:
        """The authors' ILP over pooled CPU and memory: job index → its point per GPU.

        Variables: one binary per (job, grid point); maximise Σ normalised throughput (a
        tiny tie-break prefers fewer resources); Σ GPUs × CPU ≤ the pooled free CPU, the same
        for memory; one point per job; each job at least its throughput at the proportional
        share. Jobs without a profile hold their own point. Empty when infeasible."""
        from scipy.optimize import Bounds, LinearConstraint, milp

        ordinary = [
            s
            for s in jobs
            if not (s.spec.fractional or s.spec.gpu_constraint is not None)
            and s.spec.vc not in self._special_vcs
        ]
        if not ordinary or not (self._track_cpu or self._track_mem):
            return {}
        rows = range(len(CPU_GRID)) if self._track_cpu else range(2, 3)
        cols = range(len(MEM_GRID)) if self._track_mem else range(1, 2)
        grid = [
            (
                round(CPU_GRID[r] * 1000) if self._track_cpu else 0,
                round(MEM_GRID[c] * 1024) if self._track_mem else 0,
                r,
                c,
            )
            for r in rows
            for c in cols
        ]
        pool = [0, 0]
        for nodes in self._nodes_of_type.values():
            for node in nodes:
                for i, amount in enumerate(view.free_resources(node)):
                    if amount is not None:
                        pool[i] = min(UNLIMITED, pool[i] + amount)
        owner: list[int] = []  # job position of each variable
        points: list[Vec] = []
        value: list[float] = []
        floor: dict[int, float] = {}
        for j, state in enumerate(ordinary):
            info = self._job_info(state)
            g = state.spec.num_gpus
            if info.profile is None:
                pool[0] -= g * info.best[0]
                pool[1] -= g * info.best[1]
                continue
            floor[j] = self._factor(info.profile, self._fair)
            for cpu, mem, r, c in grid:
                owner.append(j)
                points.append((cpu, mem))
                value.append(info.profile.matrix[r][c])
        if not owner:
            return {}
        n = len(owner)
        gpus = np.array([ordinary[j].spec.num_gpus for j in owner], dtype=float)
        cpus = np.array([p[0] for p in points], dtype=float)
        mems = np.array([p[1] for p in points], dtype=float)
        tput = np.array(value)
        scale = (cpus / 24000 + mems / 256000) * _TIE
        lhs = [gpus * cpus, gpus * mems]
        lower = [-np.inf, -np.inf]
        upper = [float(pool[0]), float(pool[1])]
        for j in sorted(floor):
            pick = np.array([1.0 if o == j else 0.0 for o in owner])
            lhs += [pick, pick * tput]
            lower += [1.0, floor[j] - 1e-9]
            upper += [1.0, np.inf]
        result = milp(
            c=-(tput - scale),
            constraints=LinearConstraint(np.vstack(lhs), lower, upper),
            integrality=np.ones(n),
            bounds=Bounds(0, 1),
        )
        if result.x is None:
            return {}
        chosen = {}
        objective = 0.0
        for k in np.flatnonzero(result.x > 0.5):
            chosen[ordinary[owner[k]].spec.index] = points[k]
            objective += value[k]
        self.objectives.append(objective)
        return chosen
