"""Themis: finish-time-fair partial auctions (Mahajan et al., "Themis: Fair and Efficient GPU
Cluster Scheduling", NSDI '20), registered as `themis`, with the reading of Themis in the
ElasticFlow artifact (``pkusys/ElasticFlow``, Apache-2.0, ``ElasticFlow/scheduler/scheduler.py``
``themis_sim_jobs`` and ``utils.py``), the baseline of ElasticFlow's Figure 8, as
``reading="artifact"``.

One job is one Themis *app* here (the paper's apps are groups of hyper-parameter trials).

``reading="paper"`` (the default: `themis` is Themis' own mechanism; Gavel's finish-time
fairness LP, which is what the artifact runs, is already `finish_time_fairness` in
`dlsched.policies.gavel`):

- **Finish-time fairness** (§3): ρ = T_sh / T_id per job. T_id, the job alone on a 1/N share
  of the cluster (N the jobs submitted and unfinished now, re-estimated at every auction as
  the paper's agents do): its total steps (``estimator.total_steps``) at the rate of its
  share, ``r(n*)`` with n* the largest count it may run on that is at most G/N GPUs (G the
  cluster's GPUs), or, where G/N is below its smallest count m (a rigid job asking for more
  than its share), ``r(m)·(G/N)/m`` (it time-shares its m GPUs). r is the estimator's
  throughput on the job's fastest type (`ClusterView.rank_types`), whole-node placement.
  T_sh: elapsed time since submission plus the time to finish the remaining steps
  (``estimator.remaining_steps``) if the job holds n GPUs until the next lease expires and
  runs at its 1/N rate afterwards (``lease horizon``, see Simplified).
- **Leases and offers** (§4, §5): every `lease_s` (600 s: the paper's evaluation uses
  10-minute leases) every lease expires and all GPUs are offered; GPUs freed between lease
  expiries (a job finished) are offered at once, the holders keeping their leases (a lease
  won then expires at the next lease instant: leases are on one grid, the paper's expire per
  app). An offer goes to the ``max(1, ⌈(1 − f)·M⌉)`` of the M jobs that could use more GPUs
  with the worst ρ (ρ with what they hold, ties: earlier submission); f = 0 offers to every
  job (efficiency), f = 1 to the single worst one (fairness). f = 0.8: the paper's
  evaluation default (§7).
- **Bids and the auction** (§4.1): a job bids, for each bundle of k more GPUs (counts it may
  run on: its request when rigid; powers of two and its bounds when elastic), its valuation
  V(k) = ρ(held) / ρ(held + k), the improvement of its ρ; the auction takes the bundles
  maximising the product of the valuations (Nash social welfare), solved exactly by dynamic
  programming over GPU counts (ties: the smaller bundle).
- **Partial allocation** (§4.1, Cole et al.): each winner i keeps the fraction c_i = Π_{j≠i}
  V_j(best) / Π_{j≠i} V_j(best without i) of its bundle, the rest is hidden (the PA mechanism's
  truthfulness). An elastic winner keeps the largest count it may run on that is at most
  held + c_i·k; a rigid one, whose bundle cannot be split, keeps it with probability c_i
  (`view.rng`; c_i = 1, no contention, draws nothing). `hide=False` skips the hiding.
- **Leftover allocation** (§4.1, work conservation): the GPUs no winner keeps go, worst ρ
  first, to the jobs not offered, then to the offered ones (the hidden winners last), each
  the most it can use.
- **Deadlines**: Themis admits every job (no `admit` hook); a deadline is only reported
  (``deadline_satisfactory_ratio``).

Simplified: valuations are taken over a lease horizon (above) rather than the agent's
"keep this bundle until I finish": with the latter a job holding nothing values no bundle at
ρ = ∞, under which the PA fractions are undefined; with the horizon every valuation is finite
and a bundle is valued by what this lease adds. Placement quality does not enter the bids (the
rate is the whole-node one); jobs are placed through `ClusterView.place`, largest first, a
count of at least a node on whole nodes (``consolidated``), a smaller one on the fullest node
that holds it (``best_fit``), a job whose count does not change keeping its GPUs (when the new
ones cannot be placed around them, every job is re-placed from scratch). The planning capacity
is every GPU of the cluster, one pool; a job placed on a slower type than its fastest runs
slower than its bid assumed.

``reading="artifact"`` (ElasticFlow Figure 8's Themis; `lease_s` 60 s, its
``--scheduling_slot`` in ``run_fig8a.sh``): no auction. Every slot it solves Gavel's
finish-time fairness program, min max_j ρ_j over time fractions x_j ∈ [0, 1] with
Σ_j d_j·x_j ≤ G (d_j the trace's GPU count: jobs are rigid), solved by an interior-point
solver (`dlsched.policies.gavel.lp.finish_time_fairness`, Gavel's program as
`finish_time_fairness_perf` solves it; the artifact calls cvxpy with ECOS, here ``solver``
Clarabel by default, ECOS where installed, and HiGHS, with a RuntimeWarning, for a solve the
interior-point solver fails numerically — the artifact runs on with ECOS' inaccurate x),
with ρ_j as the artifact writes it:
numerator ``(t_event − submit) + R_j / (r_j(d_j)·x_j)``, denominator ``cum_j + R_j / a_j``
where ``a_j = min(⌈G/n⌉ / d_j, 1)`` is the isolated *share* (``get_isolated_throughputs``
returns the allocation, not the throughput, so the denominator is in steps, not seconds) and
``cum_j`` adds ``(R_prev − R) / a_prev`` each slot; t_event is the time of the slot's last
event (an arrival or a completion; the artifact keeps the last event's time across slots
without one). Priority is x_j (``rounds_received`` is never incremented, so the division by
it never happens); the jobs are sorted by it, stably (ties keep the previous slot's order,
new jobs last), and taken greedily while their GPU count fits. Every job is re-placed every
slot in the artifact; here a job chosen again keeps its GPUs. Overheads: the ``elasticflow``
preset (the artifact's ``estimate_overhead``) when `simulate` is given none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dlsched.cluster import Cluster
from dlsched.elasticflow_overheads import for_cluster
from dlsched.engine.view import ClusterView
from dlsched.jobs import JobState
from dlsched.overheads import OverheadModel, make_overheads
from dlsched.policies.base import BasePolicy
from dlsched.policies.gavel.interior import SOLVERS
from dlsched.policies.gavel.lp import Problem, finish_time_fairness
from dlsched.policies.goodput.common import Ticker
from dlsched.policies.registry import register

F = 0.8  # Themis §7 (evaluation): the fairness knob's default
LEASE_S = {"paper": 600.0, "artifact": 60.0}  # Themis §7: 10-minute leases; run_fig8a.sh slot
READINGS = ("paper", "artifact")
_EPS = 1e-9


@register("themis")
class Themis(BasePolicy):
    """Themis (NSDI '20): finish-time-fair partial auctions per lease (module docstring)."""

    name = "themis"

    def __init__(
        self,
        f: float = F,
        lease_s: float | None = None,
        reading: str = "paper",
        hide: bool = True,
        solver: str = "CLARABEL",
    ) -> None:
        super().__init__()
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.0 <= f <= 1.0:
            raise ValueError(f"themis: f must be a number in [0, 1], got {f!r}")
        if reading not in READINGS:
            raise ValueError(f"themis: reading must be one of {READINGS}, got {reading!r}")
        if lease_s is None:
            lease_s = LEASE_S[reading]
        if (
            isinstance(lease_s, bool)
            or not isinstance(lease_s, (int, float))
            or not (lease_s > 0 and math.isfinite(lease_s))
        ):
            raise ValueError(
                f"themis: lease_s must be a positive number of seconds, got {lease_s!r}"
            )
        if not isinstance(hide, bool):
            raise ValueError(f"themis: hide must be true or false, got {hide!r}")
        name = solver.strip().upper() if isinstance(solver, str) else ""
        if name not in SOLVERS:
            raise ValueError(f"themis: solver must be one of {SOLVERS}, got {solver!r}")
        self.f = float(f)
        self.lease_s = float(lease_s)
        self.reading = reading
        self.hide = hide
        self.solver = name
        self.round_s = self.lease_s
        if reading == "artifact":
            #: with no overheads given, `simulate` charges the artifact's ``estimate_overhead``
            #: (``elasticflow-256`` on 256 GPUs or more: `default_overheads_for`)
            self.default_overheads = make_overheads("elasticflow")

    def default_overheads_for(self, cluster: Cluster) -> OverheadModel | None:
        """With ``reading="artifact"``, the artifact's overheads on `cluster`; else None."""
        return for_cluster(cluster) if self.reading == "artifact" else None

    def __repr__(self) -> str:
        return (
            f"Themis(f={self.f:g}, lease_s={self.lease_s:g}, reading={self.reading!r}, "
            f"hide={self.hide!r}, solver={self.solver!r})"
        )

    # -- per-run state -------------------------------------------------------------------

    def start(self, view: ClusterView) -> None:
        """Clear the job list and the caches."""
        self._total = sum(view.cluster.capacity_by_type().values())
        self._per_node = view.cluster.max_gpus_per_node() or 1
        self._ticker = Ticker(self.lease_s)
        self._jobs: list[JobState] = []  # submitted, unfinished, in arrival order
        self._types: dict[object, str | None] = {}
        self._levels: dict[object, tuple[int, ...]] = {}
        self._rates: dict[tuple[object, int], float] = {}
        # the artifact's state
        self._order: list[JobState] = []  # its runnable list, sorted by priority last slot
        self._cumulative: dict[object, float] = {}
        self._previous: dict[object, tuple[float, float]] = {}
        self._event_s: float | None = None
        self._event = False

    def on_arrival(self, job: JobState) -> None:
        self._jobs.append(job)
        self._order.append(job)
        self._event = True

    def on_finish(self, job: JobState) -> None:
        if job in self._jobs:
            self._jobs.remove(job)
        if job in self._order:
            self._order.remove(job)
        self._event = True

    # -- throughput curve ------------------------------------------------------------------

    def rate(self, job: JobState, n_gpus: int, view: ClusterView) -> float:
        """Estimated steps/s of `job` on `n_gpus` GPUs of its fastest type (0 for 0)."""
        if n_gpus <= 0:
            return 0.0
        key = (job.spec.index, n_gpus)
        rate = self._rates.get(key)
        if rate is None:
            index = job.spec.index
            if index not in self._types:
                ranked = view.rank_types(job.spec)
                self._types[index] = ranked[0] if ranked else None
            gpu_type = self._types[index]
            rate = 0.0
            if gpu_type is not None:
                rate = float(view.estimator.throughput(job.spec, gpu_type, n_gpus))
            self._rates[key] = rate
        return rate

    def levels(self, job: JobState, view: ClusterView) -> tuple[int, ...]:
        """The GPU counts the job may run on, ascending: its request when rigid (always, with
        ``reading="artifact"``); powers of two and its bounds when elastic."""
        spec = job.spec
        levels = self._levels.get(spec.index)
        if levels is None:
            if spec.elastic and self.reading == "paper":
                low, high = spec.gpu_range
                high = min(high, self._total)
                counts = {n for n in (low, high) if low <= n <= high}
                counts |= {1 << i for i in range(high.bit_length()) if low <= 1 << i <= high}
            else:
                counts = {spec.num_gpus} if 0 < spec.num_gpus <= self._total else set()
            levels = tuple(sorted(n for n in counts if self.rate(job, n, view) > 0))
            self._levels[spec.index] = levels
        return levels

    # -- finish-time fairness (paper) ----------------------------------------------------------

    def isolated_rate(self, job: JobState, view: ClusterView) -> float:
        """Steps/s of the job alone on its 1/N share of the cluster (module docstring)."""
        levels = self.levels(job, view)
        if not levels:
            return 0.0
        share = self._total / max(1, len(self._jobs))
        fitting = [n for n in levels if n <= share + _EPS]
        if fitting:
            return self.rate(job, fitting[-1], view)
        return self.rate(job, levels[0], view) * share / levels[0]

    def rho(self, job: JobState, n_gpus: int, view: ClusterView, horizon_s: float) -> float:
        """ρ = T_sh / T_id if the job holds `n_gpus` for `horizon_s` and then runs at its
        1/N rate (module docstring); inf for a job that cannot run."""
        iso = self.isolated_rate(job, view)
        if iso <= 0:
            return math.inf
        now = view.now
        t_id = view.estimator.total_steps(job.spec) / iso
        left = view.estimator.remaining_steps(job, now)
        r = self.rate(job, n_gpus, view)
        if r > 0 and left <= r * horizon_s:
            finish = left / r
        else:
            finish = horizon_s + (left - r * horizon_s) / iso
        return (now - job.spec.submit_time + finish) / max(t_id, _EPS)

    def auction(
        self,
        jobs: Sequence[JobState],
        held: dict[JobState, int],
        free: int,
        view: ClusterView,
    ) -> tuple[dict[JobState, int], list[JobState]]:
        """One offer of `free` GPUs to `jobs` (holding `held`): every job's new GPU count, and
        the jobs offered the GPUs, worst ρ first (module docstring)."""
        horizon = self._horizon(view)
        counts = {job: held.get(job, 0) for job in jobs}
        rho = {job: self.rho(job, counts[job], view, horizon) for job in jobs}
        wanting = [
            job
            for job in jobs
            if any(n > counts[job] for n in self.levels(job, view)) and math.isfinite(rho[job])
        ]
        wanting.sort(key=lambda j: (-rho[j], j.spec.submit_time, j.spec.index))
        if free <= 0 or not wanting:
            return counts, []
        offered = wanting[: max(1, math.ceil((1.0 - self.f) * len(wanting) - _EPS))]
        rest = wanting[len(offered) :]
        bids = [self._bids(job, counts[job], free, rho[job], view, horizon) for job in offered]
        bundles, values = _nash_welfare(bids, free)
        hidden: list[JobState] = []
        for i, job in enumerate(offered):
            k = bundles[i]
            if k == 0:
                continue
            keep = 1.0
            if self.hide:
                keep = min(1.0, math.exp((values.best - bids[i][k]) - values.without(i)))
            target = counts[job] + k
            if keep < 1.0 - _EPS:
                levels = self.levels(job, view)
                if len(levels) > 1:
                    kept = [n for n in levels if n <= counts[job] + keep * k + _EPS]
                    target = max(counts[job], kept[-1] if kept else 0)
                elif view.rng.random() >= keep:
                    target = counts[job]
                if target < counts[job] + k:
                    hidden.append(job)
            free -= target - counts[job]
            counts[job] = target
        losers = [job for job in offered if job not in hidden]
        for job in [*rest, *losers, *hidden]:
            if free <= 0:
                break
            more = [n for n in self.levels(job, view) if counts[job] < n <= counts[job] + free]
            if more:
                free -= more[-1] - counts[job]
                counts[job] = more[-1]
        return counts, offered

    def _horizon(self, view: ClusterView) -> float:
        """Seconds to the next lease instant."""
        step = self.lease_s
        nxt = (math.floor(view.now / step + _EPS) + 1) * step
        return nxt - view.now

    def _bids(
        self,
        job: JobState,
        held: int,
        free: int,
        rho_held: float,
        view: ClusterView,
        horizon: float,
    ) -> dict[int, float]:
        """log V(k) for each bundle of k more GPUs it could take (0: 0)."""
        bids = {0: 0.0}
        for n in self.levels(job, view):
            if held < n <= held + free:
                new = self.rho(job, n, view, horizon)
                bids[n - held] = math.log(rho_held / new) if new > 0 else 0.0
        return bids

    # -- the scheduling call -----------------------------------------------------------------

    def schedule(self, view: ClusterView):
        tick = self._ticker.due(view)
        if self.reading == "artifact":
            if not tick:
                return None
            counts = self._artifact_counts(view)
        else:
            if not tick:
                free = view.free_gpus()
                if free <= 0 or not self._jobs:
                    return None
                held = {job: len(job.gpus) for job in view.running.values()}
                counts, _ = self.auction(self._jobs, held, free, view)
                if all(counts[j] == held.get(j, 0) for j in counts):
                    return None
            else:
                counts, _ = self.auction(self._jobs, {}, self._total, view)
        self._place(view, {job: n for job, n in counts.items() if n > 0}, tick)
        if tick:
            self._ticker.next(view)
        return view.allocation()

    def _place(self, view: ClusterView, counts: dict[JobState, int], tick: bool) -> None:
        """Keep the GPUs of jobs whose count is unchanged; place the others, largest first
        (module docstring)."""
        alloc = view.allocation()
        for job in list(view.running.values()):
            if counts.get(job, 0 if tick else len(job.gpus)) != len(job.gpus):
                del alloc[job]
        moved = [job for job in counts if job not in alloc]
        if not self._place_all(view, moved, counts, stop_at_failure=tick) and tick:
            for job in list(view.running.values()):
                if job in alloc:
                    del alloc[job]
            self._place_all(view, list(counts), counts, stop_at_failure=False)

    def _place_all(
        self,
        view: ClusterView,
        jobs: list[JobState],
        counts: dict[JobState, int],
        stop_at_failure: bool,
    ) -> bool:
        alloc = view.allocation()
        ok = True
        for job in sorted(jobs, key=lambda j: (-counts[j], j.spec.index)):
            gpus = None
            # An elastic job whose count does not fit (its CPU or memory demand grows with
            # its GPUs, or the free GPUs are scattered) takes its largest smaller level
            # that does, rather than waiting with GPUs left idle.
            smaller = [k for k in self.levels(job, view) if k < counts[job]]
            for n in [counts[job], *reversed(smaller)]:
                strategy = "consolidated" if n >= self._per_node else "best_fit"
                gpus = view.place(job, strategy=strategy, n_gpus=n)
                if gpus is not None or stop_at_failure:
                    break
            if gpus is None:
                ok = False
                if stop_at_failure:
                    return False
                continue  # it waits for the next offer
            alloc[job] = gpus
        return ok

    # -- the artifact's Themis ---------------------------------------------------------------

    def _artifact_counts(self, view: ClusterView) -> dict[JobState, int]:
        """The artifact's slot (module docstring): FTF program, then greedy by priority."""
        if self._event or self._event_s is None:
            self._event_s = view.now
        self._event = False
        jobs = [j for j in self._order if self.levels(j, view)]
        if not jobs:
            return {}
        now, total = view.now, self._total
        share = math.ceil(total / len(jobs))
        demand = np.array([j.spec.num_gpus for j in jobs], dtype=float)
        tput = np.array([self.rate(j, j.spec.num_gpus, view) for j in jobs])
        left = np.array([view.estimator.remaining_steps(j, now) for j in jobs])
        elapsed = np.array([self._event_s - j.spec.submit_time for j in jobs])
        done = np.empty(len(jobs))
        fractions = np.empty(len(jobs))
        for i, job in enumerate(jobs):
            index = job.spec.index
            fractions[i] = min(share / demand[i], 1.0)
            cumulative = self._cumulative.get(index, 0.0)
            if index in self._previous:
                prev_left, prev_fraction = self._previous[index]
                cumulative += (prev_left - left[i]) / prev_fraction
            self._cumulative[index] = done[i] = cumulative
            self._previous[index] = (float(left[i]), float(fractions[i]))
        problem = Problem.build(tput[:, None], demand, [float(total)])
        x = finish_time_fairness(
            problem,
            elapsed,
            np.maximum(left, _EPS),
            isolated_done_s=done,
            isolated_rate=fractions,  # the artifact's quirk: a share, not a rate
            solver=self.solver,
        )[:, 0]
        order = sorted(range(len(jobs)), key=lambda i: -x[i])  # stable: ties keep last order
        self._order = [jobs[i] for i in order] + [j for j in self._order if j not in jobs]
        counts: dict[JobState, int] = {}
        free = total
        for job in self._order:
            if free <= 0:
                break
            d = job.spec.num_gpus
            if job in jobs and d <= free:
                counts[job] = d
                free -= d
        return counts


class _Welfare:
    """The Nash-welfare optima of one auction: `best` (log of the product), and per bidder
    the optimum without it (from prefix and suffix tables)."""

    def __init__(self, prefix: list[np.ndarray], suffix: list[np.ndarray], free: int) -> None:
        self.prefix, self.suffix, self.free = prefix, suffix, free
        self.best = float(prefix[-1][free])

    def without(self, i: int) -> float:
        """log of the best product over the bidders other than i."""
        before, after = self.prefix[i], self.suffix[i + 1]
        return float(np.max(before + after[::-1]))


def _nash_welfare(bids: list[dict[int, float]], free: int) -> tuple[list[int], _Welfare]:
    """The bundles (GPUs per bidder, at most `free` in all) maximising Σ log V, by dynamic
    programming over GPU counts; `bids[i]` maps bundle size to log V (0 → 0). Ties go the
    same way every time (a bundle replaces a smaller one only when strictly better)."""
    n = len(bids)
    prefix = [np.zeros(free + 1)]
    choice: list[np.ndarray] = []
    for bid in bids:
        prev = prefix[-1]
        best = prev.copy()
        pick = np.zeros(free + 1, dtype=int)
        for k, value in sorted(bid.items()):
            if k == 0 or k > free:
                continue
            cand = np.full(free + 1, -np.inf)
            cand[k:] = prev[: free + 1 - k] + value
            better = cand > best + 1e-12
            best = np.where(better, cand, best)
            pick = np.where(better, k, pick)
        prefix.append(best)
        choice.append(pick)
    suffix = [np.zeros(free + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        nxt = suffix[i + 1]
        best = nxt.copy()
        for k, value in bids[i].items():
            if 0 < k <= free:
                cand = np.full(free + 1, -np.inf)
                cand[k:] = nxt[: free + 1 - k] + value
                best = np.maximum(best, cand)
        suffix[i] = best
    bundles = [0] * n
    g = free
    for i in range(n - 1, -1, -1):
        k = int(choice[i][g])
        bundles[i] = k
        g -= k
    return bundles, _Welfare(prefix, suffix, free)
