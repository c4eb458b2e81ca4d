"""Gittins indices for Tiresias-G (Gu et al., NSDI 2019, §3.2): the paper's formula
(`GittinsIndex`, used with `literal=True`) and the authors' simulator's tabulated version
(`AuthorsGittinsTable`, used by default and by `compat=True`: the paper's formula ranks jobs
differently enough to be 12 % off the authors' runs, see `paper.py`).

The prior is a sample of job sizes in GPU-seconds; the default is the authors' shipped
`yarn-gput1000.csv` (1,001 YARN jobs, in `dlsched/data`), Δ = 3,250 GPU-seconds as in their
`run_sim.py`.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from importlib import resources

import numpy as np

GITTINS_DELTA = 3250.0


def check_gittins(name: str, delta: float, prior: Sequence[float] | None) -> None:
    """Raise ValueError unless Δ is positive and the prior (if given) has samples."""
    if not delta > 0:
        raise ValueError(f"{name}: delta must be > 0 GPU-seconds, got {delta!r}")
    if prior is not None and len(prior) == 0:
        raise ValueError(f"{name}: prior must hold at least one GPU-time sample")


def prior_samples(prior: Sequence[float] | None) -> list[float]:
    """The prior's samples: the given ones, or the shipped YARN prior."""
    if prior is not None:
        return [float(v) for v in prior]
    return GittinsIndex.yarn_prior().values.tolist()


class GittinsIndex:
    """Gittins index of a job that has attained `a` GPU-seconds, for a service distribution
    given by samples: G(a) = P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a] (higher runs
    first); 0 past the largest sample."""

    def __init__(self, samples: Sequence[float], delta: float = GITTINS_DELTA) -> None:
        values = np.sort(np.asarray(samples, dtype=float))
        if len(values) == 0 or delta <= 0:
            raise ValueError("the Gittins prior needs samples and a positive delta")
        self.values = values
        self.delta = float(delta)
        self._list = values.tolist()
        self._prefix_array = np.concatenate([[0.0], np.cumsum(values)])
        self._prefix = self._prefix_array.tolist()

    @classmethod
    def yarn_prior(cls, delta: float = GITTINS_DELTA) -> GittinsIndex:
        """Tiresias' shipped prior: 1,001 GPU-time samples of YARN jobs."""
        text = (resources.files("dlsched.data") / "tiresias_yarn_gput1000.csv").read_text()
        return cls([float(v) for v in text.split()[1:]], delta)

    def __call__(self, attained: float) -> float:
        values, prefix, delta = self._list, self._prefix, self.delta
        start = bisect.bisect_right(values, attained)  # first sample > attained
        alive = len(values) - start
        if alive == 0:
            return 0.0
        stop = bisect.bisect_right(values, attained + delta, start)
        done = stop - start
        within = prefix[stop] - prefix[start] - done * attained  # Σ (S − a) for S ≤ a + Δ
        expected = within + (alive - done) * delta  # × alive, which cancels below
        return done / expected if expected > 0 else math.inf

    def many(self, attained: np.ndarray) -> np.ndarray:
        """The index at each of an array of attained services (same arithmetic)."""
        values, prefix, delta = self.values, self._prefix_array, self.delta
        start = np.searchsorted(values, attained, side="right")
        stop = np.searchsorted(values, attained + delta, side="right")
        alive = len(values) - start
        done = stop - start
        within = prefix[stop] - prefix[start] - done * attained
        expected = within + (alive - done) * delta
        # expected > 0 whenever a sample lies above `attained`; with none, done = 0 → 0.
        return done / np.maximum(expected, 1e-300)


def _py2_round(value: float, digits: int) -> float:
    """Python 2's round(): the exact binary value, halves away from zero."""
    return float(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


class AuthorsGittinsTable:
    """The Gittins lookup of the authors' simulator (`run_sim.py`: `parse_job_dist`,
    `cal_r_gittins_index`, `get_gittins_index`), for `compat=True`: the index is tabulated at
    each prior sample minus one and looked up as a step function, and its expected-service
    term sums the samples themselves rather than the service still to come (S, not S − a),
    with the simulator's Python 2 arithmetic: integer (floor) division of that sum, and
    round() halving away from zero."""

    def __init__(self, samples: Sequence[float], delta: float = GITTINS_DELTA) -> None:
        self.data = sorted(int(v) for v in samples)
        self.delta = int(delta)
        self.table = [self._rank(v - 1) for v in self.data] + [0.0]
        self._table_array = np.asarray(self.table)
        self._data_array = np.asarray(self.data)

    def _rank(self, attained: int) -> float:
        data, num, delta = self.data, len(self.data), self.delta
        if attained > data[-1] - 1:
            return 0.0
        idx = bisect.bisect_right(data, attained)
        reach = attained + delta
        idx_delta = num - 1 if reach > data[-1] - 1 else bisect.bisect_right(data, reach)
        p = _py2_round((idx_delta - idx) / (num - idx), 5)
        e = float((sum(data[idx:idx_delta]) + delta * (num - idx_delta)) // (num - idx))
        return _py2_round(p * 1_000_000 / e, 4)

    def __call__(self, attained: float) -> float:
        if attained > self.data[-1]:
            return 0.0
        return self.table[bisect.bisect_right(self.data, attained)]

    def many(self, attained: np.ndarray) -> np.ndarray:
        """The index at each of an array of attained services (the same lookup)."""
        return self._table_array[np.searchsorted(self._data_array, attained, side="right")]
