"""`ces`: Helios' Cluster Energy Saving service — power idle nodes down, wake them on demand.

Paper: Hu et al., *Characterization and Prediction of Deep Learning Workloads in
Large-Scale GPU Datacenters*, SC '21, §6 (CES). Artifact:
``S-Lab-System-Group/HeliosArtifact``, ``framework/CES Service/CES_Helios.py`` and
``CES_Philly.py`` (their ``hyperparameters()`` give the numbers below).

CES is a *power manager*: it runs beside any scheduling policy (``--provisioner ces``,
``provisioner: ces`` in an experiment), on a fixed cluster whose file has an ``energy:``
section (``wake_s``, ``sleep_s``: the node's power transitions; `dlsched.energy`). The
engine calls it after every scheduling call and at each check (`interval_s`); it answers a
`Provision` that powers idle nodes down (``release``) and powered-down nodes up (``wake``),
which the engine applies through node availability (`dlsched.engine.availability`): a node
powered down is absent to every policy, one waking is absent for ``wake_s`` seconds.

The rule, per pool of nodes (GPU type × owning VC; the artifact has one pool, the cluster):

- *Demand is sampled* at every check: ``active`` = nodes that hold a job. The history is the
  run's own past samples only (leakage-free).
- *Wake* (at any call): walk the waiting jobs in submit order; each takes its GPUs from a pool
  it may use with enough free or waking GPUs; a job that finds none is a shortfall on the pool
  with the most powered-down GPUs. A pool short of ``s`` GPUs wakes
  ``ceil(s / gpus per node) + buffer`` nodes (the artifact: when running nodes exceed the
  active ones, ``Active = active + buffer``) and keeps its count for `keep` checks
  (``stable_pred = i + keep``). Jobs wait the wake latency: that is CES' queueing cost.
- *Power down* (at a check, in a pool with no shortfall and not kept stable): when the demand
  falls — ``mean(active over the last `history` checks) − active ≥ history_threshold`` — and
  is forecast to stay low — ``active − mean(forecast over the next `horizon` checks) ≥
  future_threshold`` and the forecast over ``horizon`` is not below that over ``2·horizon``
  (no rise coming) — the pool keeps ``active + promised + buffer`` nodes on (``promised``:
  nodes the waiting jobs that fit will take) and powers down the surplus if it is at least
  `decrease_threshold` nodes, idle ones only, longest idle first. For the first `warmup`
  checks (the artifact's first simulated hour) the pool is set to that target
  unconditionally.

Faithful: the decision rule and its thresholds (history and future trends, buffer, keep,
minimum decrease, the 10-minute check interval of the artifact's resampling, its presets per
cluster). Simplified: (1) the artifact forecasts the node series with LightGBM over
calendar features and lagged values — and, evaluated offline on the test month, its lag
features read values later than the decision point; here the forecast for a future check is
the mean of the demand observed at the same time of day on the previous `forecast_days`
days (the current demand when no such day has been seen yet): a documented,
leakage-free seasonal forecaster from the run's own past. (2) ``active`` is the demand at
the check, not the maximum over the 10-minute bin. (3) The artifact's cluster-wide rule is
applied per pool, with the buffer shared out by node count (`pool_buffer`), because a VC's
jobs run only on its nodes. (4) The artifact replays a node-count series and has no jobs:
here jobs wait for woken nodes, so its queueing cost is measured, not assumed away.

>>> ces = CES(preset="philly")
>>> ces.buffer_nodes, ces.horizon, ces.history
(20, 30, 2)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dlsched.provision.view import Provision, ProvisionView

DEFAULT_INTERVAL_S = 600.0
"""Seconds between checks: the artifact resamples the node series to 10-minute bins
(``set_interval(df, "10min", "max")``)."""

WARMUP_CHECKS = 6
"""Checks at the start set unconditionally to ``active + buffer`` (the artifact's "Initial
first hour of simulation", ``if i < 6``)."""

PRESETS: dict[str, dict[str, float]] = {
    # HeliosArtifact framework/CES Service/CES_Helios.py, hyperparameters(cluster)
    "venus": dict(history=3, horizon=18, history_threshold=0.5, future_threshold=1,
                  decrease_threshold=2, buffer_nodes=5, keep=12),
    "earth": dict(history=6, horizon=18, history_threshold=1, future_threshold=1,
                  decrease_threshold=5, buffer_nodes=5, keep=12),
    "saturn": dict(history=6, horizon=18, history_threshold=1, future_threshold=1,
                   decrease_threshold=1, buffer_nodes=5, keep=12),
    "uranus": dict(history=3, horizon=18, history_threshold=1, future_threshold=1,
                   decrease_threshold=1, buffer_nodes=7, keep=12),
    # HeliosArtifact framework/CES Service/CES_Philly.py, hyperparameters()
    "philly": dict(history=2, horizon=30, history_threshold=0.1, future_threshold=0,
                   decrease_threshold=1, buffer_nodes=20, keep=10),
}  # fmt: skip
"""The artifact's parameters per cluster (checks are 10-minute steps: `horizon` 18 = 3 h)."""

DEFAULT_PRESET = "venus"
"""The preset where none is named: the first Helios cluster's."""


@dataclass
class _Pool:
    """One pool's nodes and its demand history (one sample per check, from the run's start)."""

    nodes: list[int]
    gpus_per_node: int
    buffer: int
    active: list[int] = field(default_factory=list)
    stable_until: float = -math.inf


def _add_gpus(view: ProvisionView, state: str, counts: dict[Any, int]) -> dict[Any, int]:
    """Add the GPUs of the nodes in `state` to their pools' counts."""
    for node in view.nodes(state):
        key = view.node_pool(node)
        if key in counts:
            counts[key] += view.node_gpus(node)
    return counts


def _check_number(name: str, value: Any, *, minimum: float, integer: bool = False) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value < minimum
        or (integer and value != int(value))
    ):
        kind = "an integer" if integer else "a number"
        raise ValueError(f"provisioner 'ces': {name} must be {kind} >= {minimum:g}, got {value!r}")
    return float(value)


class CES:
    """Helios' cluster energy saving as a power manager (see the module docstring)."""

    name = "ces"
    manages_power = True  # the engine manages the fixed nodes' power states for it

    def __init__(
        self,
        preset: str = DEFAULT_PRESET,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        buffer_nodes: int | None = None,
        history: int | None = None,
        horizon: int | None = None,
        history_threshold: float | None = None,
        future_threshold: float | None = None,
        decrease_threshold: int | None = None,
        keep: int | None = None,
        forecast_days: int = 3,
        min_idle_s: float = 0.0,
    ) -> None:
        if preset not in PRESETS:
            raise ValueError(
                f"provisioner 'ces': preset must be one of {sorted(PRESETS)}, got {preset!r}"
            )
        base = PRESETS[preset]
        given = {
            "buffer_nodes": buffer_nodes,
            "history": history,
            "horizon": horizon,
            "history_threshold": history_threshold,
            "future_threshold": future_threshold,
            "decrease_threshold": decrease_threshold,
            "keep": keep,
        }
        values = {k: base[k] if v is None else v for k, v in given.items()}
        self.preset = preset
        self.interval_s = _check_number("interval_s", interval_s, minimum=1.0)
        self.buffer_nodes = int(
            _check_number("buffer_nodes", values["buffer_nodes"], minimum=0, integer=True)
        )
        self.history = int(_check_number("history", values["history"], minimum=1, integer=True))
        self.horizon = int(_check_number("horizon", values["horizon"], minimum=1, integer=True))
        self.history_threshold = _check_number(
            "history_threshold", values["history_threshold"], minimum=-math.inf
        )
        self.future_threshold = _check_number(
            "future_threshold", values["future_threshold"], minimum=-math.inf
        )
        self.decrease_threshold = int(
            _check_number(
                "decrease_threshold", values["decrease_threshold"], minimum=1, integer=True
            )
        )
        self.keep = int(_check_number("keep", values["keep"], minimum=0, integer=True))
        self.forecast_days = int(
            _check_number("forecast_days", forecast_days, minimum=1, integer=True)
        )
        self.min_idle_s = _check_number("min_idle_s", min_idle_s, minimum=0.0)
        self._pools: dict[Any, _Pool] | None = None
        self._checks = 0  # checks made so far (the next one's index)
        self._per_day = max(1, round(86400.0 / self.interval_s))  # checks per day

    def __repr__(self) -> str:
        return (
            f"CES(preset={self.preset!r}, interval_s={self.interval_s:g}, "
            f"buffer_nodes={self.buffer_nodes}, history={self.history}, horizon={self.horizon}, "
            f"history_threshold={self.history_threshold:g}, "
            f"future_threshold={self.future_threshold:g}, "
            f"decrease_threshold={self.decrease_threshold}, keep={self.keep}, "
            f"forecast_days={self.forecast_days}, min_idle_s={self.min_idle_s:g})"
        )

    def start(self, view: Any) -> None:
        """A new run: forget the last one's pools and history."""
        self._pools = None
        self._checks = 0

    # ---- the rule ------------------------------------------------------------------------
    def provision(self, view: ProvisionView) -> Provision:
        """Wake nodes for the queue's shortfall; at a check, power the surplus down."""
        pools = self._pools if self._pools is not None else self._make_pools(view)
        now = view.now
        shortfall, promised = self._queue_demand(view, pools)
        wake: list[int] = []
        release: list[int] = []
        for key, pool in pools.items():
            short = shortfall.get(key, 0)
            if short > 0:
                wake += self._wake(view, pool, short, now)
        while self._checks * self.interval_s <= now:
            check = self._checks
            self._checks += 1
            for key, pool in pools.items():
                active = view.busy_nodes(pool.nodes)
                if shortfall.get(key, 0) <= 0 and now >= pool.stable_until:
                    # (checks missed since the last call are made now, on what is now: a node
                    # is powered down once)
                    down = self._power_down(view, pool, check, active, promised.get(key, 0))
                    release += [n for n in down if n not in release]
                pool.active.append(active)
        return Provision(release=release, wake=wake, wake_at=self._checks * self.interval_s)

    def _make_pools(self, view: ProvisionView) -> dict[Any, _Pool]:
        by_pool: dict[Any, list[int]] = {}
        for node in sorted(view.nodes("present") + view.nodes("starting") + view.nodes("absent")):
            if view.node_gpus(node):
                by_pool.setdefault(view.node_pool(node), []).append(node)
        total = sum(len(nodes) for nodes in by_pool.values())
        self._pools = {
            key: _Pool(
                nodes,
                max(view.node_gpus(n) for n in nodes),
                pool_buffer(self.buffer_nodes, len(nodes), total),
            )
            for key, nodes in sorted(by_pool.items(), key=lambda kv: kv[1][0])
        }
        return self._pools

    def _queue_demand(
        self, view: ProvisionView, pools: dict[Any, _Pool]
    ) -> tuple[dict[Any, int], dict[Any, int]]:
        """GPUs short per pool (waiting jobs no free or waking GPUs can serve) and GPUs
        promised to waiting jobs that fit, per pool."""
        shortfall: dict[Any, int] = {}
        promised: dict[Any, int] = {}
        queue = view.queue()
        if not queue:
            return shortfall, promised
        # (this runs at every event: it reads only the nodes not present, and the powered-
        # down ones only once a waiting job does not fit)
        have = {key: view.pool_free(key) for key in pools}
        _add_gpus(view, "starting", have)
        off: dict[Any, int] = {}
        usable_for: dict[Any, list[Any]] = {}  # (vc, GPU constraint) → usable pools
        for job in queue:
            need = job.gpu_range[0] if job.num_gpus else 0
            if need == 0:
                continue
            group = (job.vc, job.gpu_constraint)
            usable = usable_for.get(group)
            if usable is None:
                usable = usable_for[group] = [p for p in view.pools_for(job) if p in pools]
            fits = next((p for p in usable if have[p] >= need), None)
            if fits is not None:
                have[fits] -= need
                promised[fits] = promised.get(fits, 0) + need
                continue
            if not off:
                off = _add_gpus(view, "absent", dict.fromkeys(pools, 0))
            waking = [p for p in usable if off[p] - shortfall.get(p, 0) > 0]
            if not waking:
                continue  # nothing powered down could serve it: it waits for running jobs
            target = max(waking, key=lambda p: (off[p] - shortfall.get(p, 0), -usable.index(p)))
            short = need - max(have[target], 0)
            shortfall[target] = shortfall.get(target, 0) + short
            promised[target] = promised.get(target, 0) + need - short
            have[target] = 0
        return shortfall, promised

    def _wake(self, view: ProvisionView, pool: _Pool, short: int, now: float) -> list[int]:
        """Nodes to power up for a shortfall of `short` GPUs, plus the buffer: those whose
        shut-down ended first (ties by index)."""
        count = math.ceil(short / pool.gpus_per_node) + pool.buffer
        off = [n for n in pool.nodes if view.node_state(n) == "absent"]
        off.sort(key=lambda n: (view.off_at(n), n))
        pool.stable_until = now + self.keep * self.interval_s
        return off[:count]

    def _power_down(
        self, view: ProvisionView, pool: _Pool, check: int, active: int, promised_gpus: int
    ) -> list[int]:
        """Idle nodes to power down at a check (the module docstring's rule)."""
        on = [n for n in pool.nodes if view.node_state(n) != "absent"]
        target = active + math.ceil(promised_gpus / pool.gpus_per_node) + pool.buffer
        surplus = len(on) - target
        if surplus <= 0:
            return []
        if check >= WARMUP_CHECKS:
            past = pool.active
            if len(past) < self.history:
                return []
            history_trend = sum(past[-self.history :]) / self.history - active
            if history_trend < self.history_threshold or surplus < self.decrease_threshold:
                return []  # (before the forecast, which costs more)
            forecast = [self._forecast(pool, check + k, active) for k in range(2 * self.horizon)]
            near = sum(forecast[: self.horizon]) / self.horizon
            if active - near < self.future_threshold:
                return []
            if near < sum(forecast) / len(forecast):
                return []  # demand is forecast to rise after the horizon: keep the nodes
            if surplus < self.decrease_threshold:
                return []
        now = view.now
        idle: list[tuple[float, int]] = []
        for node in on:
            since = view.idle_since(node) if view.node_state(node) == "present" else None
            if since is not None and now - since >= self.min_idle_s:
                idle.append((since, node))
        idle.sort()
        return [node for _, node in idle[:surplus]]

    def _forecast(self, pool: _Pool, check: int, current: int) -> float:
        """Demand forecast for a future check: the mean of the same time of day over the
        last `forecast_days` days seen, else `current` (persistence)."""
        per_day = self._per_day
        seen = pool.active
        total = 0.0
        count = 0
        past = check - per_day
        for _ in range(self.forecast_days):
            if past < 0:
                break
            if past < len(seen):
                total += seen[past]
                count += 1
            past -= per_day
        return total / count if count else float(current)


def pool_buffer(buffer_nodes: int, pool_nodes: int, total_nodes: int) -> int:
    """A pool's share of the buffer: in proportion to its nodes, rounded up, at most its
    nodes (0 when the buffer is 0).

    >>> pool_buffer(20, 100, 552), pool_buffer(5, 135, 135), pool_buffer(0, 10, 10)
    (4, 5, 0)
    """
    if buffer_nodes == 0 or total_nodes == 0:
        return 0
    return min(pool_nodes, math.ceil(buffer_nodes * pool_nodes / total_nodes))
