"""When running jobs reach their queue's threshold, without evaluating every running job.

The default `Tiresias` (`paper.py`) asks two questions at every scheduling event: which
running jobs' service has reached their queue's threshold now, and when the authors'
simulator would next check (now + (threshold − service / GPUs) / GPUs, the earliest over
running jobs). Both were answered by evaluating every running job, O(running) per event.

A running job's service is base + rate × (t − since), so the time it reaches a limit is known
when its stint starts, and the authors' check time is `a × now + c` with `a` fixed by its
rate and `c` by its stint: among jobs of one rate, the earliest check is the job with the
smallest `c`. `CrossingWatch` keeps heaps on those times and evaluates exactly, with the
float arithmetic of the all-jobs evaluation, only the jobs whose times are within rounding
(1e-9, relative) of the answer, so its answers are those of the all-jobs evaluation, bit for
bit.
"""

from __future__ import annotations

import heapq
import math
from typing import Generic, TypeVar

_J = TypeVar("_J")

#: Relative margin, far above float rounding (~1e-15), between a time computed from a stint's
#: parameters and the time the exact test agrees with.
_MARGIN = 1e-9


class CrossingWatch(Generic[_J]):
    """Armed jobs, each with service base + rate × (t − since) against a limit.

    `crossed(now)` returns the jobs whose service at `now` is ≥ limit × (1 − eps) (and
    disarms them); `next_check(now)` returns the authors' next demotion check over the armed
    jobs: now + min((limit − s) or (limit − s / rate), whichever is larger, / rate)."""

    def __init__(self, eps: float) -> None:
        self._keep = 1 - eps
        self._armed: dict[_J, tuple[float, float, float, float, int]] = {}
        self._cross: list[tuple[float, int, _J]] = []  # (earliest crossing, token, job)
        self._plans: dict[float, list[tuple[float, int, _J]]] = {}  # rate → (c, token, job)
        self._scale: dict[float, float] = {}  # rate → largest limit / min(rate, 1) seen
        self._irregular = 0  # armed jobs the grouping does not cover (rate < 1 or base < 0)
        self._token = 0

    def __len__(self) -> int:
        return len(self._armed)

    def arm(self, job: _J, base: float, since: float, rate: float, limit: float) -> None:
        """Watch `job` (replacing what was watched of it); an infinite limit is never
        reached and the job is not watched."""
        self.disarm(job)
        if limit == math.inf:
            return
        self._token += 1
        token = self._token
        regular = rate >= 1 and base >= 0
        self._armed[job] = (base, since, rate, limit, token if regular else -token)
        if not regular:
            self._irregular += 1
        bound = limit * self._keep  # rate > 0: a job holds at least 1/1000 of a GPU
        when = since + (bound - base) / rate
        margin = _MARGIN * (abs(when) + abs(since) + (abs(bound) + abs(base)) / rate + 1.0)
        heapq.heappush(self._cross, (when - margin, token, job))
        if regular:
            c = (limit - base / rate + since) / rate
            heapq.heappush(self._plans.setdefault(rate, []), (c, token, job))
            self._scale[rate] = max(self._scale.get(rate, 0.0), limit)
        if len(self._cross) > 64 and len(self._cross) > 4 * len(self._armed):
            self._compact()

    def disarm(self, job: _J) -> None:
        """Stop watching `job` (its entries in the heaps become stale)."""
        entry = self._armed.pop(job, None)
        if entry is not None and entry[4] < 0:
            self._irregular -= 1

    def _live(self, job: _J, token: int) -> bool:
        entry = self._armed.get(job)
        return entry is not None and abs(entry[4]) == token

    def crossed(self, now: float) -> list[_J]:
        """The armed jobs whose service at `now` reached limit × (1 − eps), disarmed."""
        heap = self._cross
        if not heap or heap[0][0] > now:
            return []
        armed, keep = self._armed, self._keep
        out: list[_J] = []
        later: list[tuple[float, int, _J]] = []
        while heap and heap[0][0] <= now:
            item = heapq.heappop(heap)
            _, token, job = item
            if not self._live(job, token):
                continue
            base, since, rate, limit, _ = armed[job]
            if base + rate * (now - since) >= limit * keep:
                out.append(job)
                self.disarm(job)
            else:
                later.append(item)
        for item in later:
            heapq.heappush(heap, item)
        return out

    def next_check(self, now: float) -> float:
        """now + the smallest wait over the armed jobs (inf when none)."""
        armed = self._armed
        if not armed:
            return math.inf
        if self._irregular:
            return now + min(_wait(entry, now) for entry in armed.values())
        best = math.inf
        empty: list[float] = []
        for rate, heap in self._plans.items():
            while heap:
                low, token, job = heap[0]
                entry = armed.get(job)
                if entry is not None and entry[4] == token:  # no irregular entries here
                    break
                heapq.heappop(heap)
            else:
                empty.append(rate)
                continue
            margin = _MARGIN * (abs(now) + abs(low) + self._scale[rate] + 1.0)
            if low - now / rate - 2 * margin > best:
                # Every wait of this rate is about c − now / rate, c ≥ `low`: none is the best.
                continue
            top = low + margin
            size = len(heap)
            if (size < 2 or heap[1][0] > top) and (size < 3 or heap[2][0] > top):
                # Every other entry is at least a child of the top: the top alone is near.
                base, since, _, limit, _ = entry
                service = base + rate * (now - since)
                left = limit - service
                wait = max(left, left + service * (1 - 1 / rate)) / rate  # `_wait`, inlined
                if wait < best:
                    best = wait
                continue
            taken: list[tuple[float, int, _J]] = []
            while heap and heap[0][0] <= top:
                item = heapq.heappop(heap)
                if self._live(item[2], item[1]):
                    taken.append(item)
                    wait = _wait(armed[item[2]], now)
                    if wait < best:
                        best = wait
            for item in taken:
                heapq.heappush(heap, item)
        for rate in empty:
            del self._plans[rate]
        return now + best

    def _compact(self) -> None:
        """Drop stale entries once they outnumber live ones (the heaps only grow otherwise)."""
        self._cross = [item for item in self._cross if self._live(item[2], item[1])]
        heapq.heapify(self._cross)
        for rate, heap in self._plans.items():
            kept = [item for item in heap if self._live(item[2], item[1])]
            heapq.heapify(kept)
            self._plans[rate] = kept


def _wait(entry: tuple[float, float, float, float, int], now: float) -> float:
    """The authors' wait before a job's next check, in the all-jobs evaluation's arithmetic."""
    base, since, rate, limit, _ = entry
    service = base + rate * (now - since)
    left = limit - service
    return max(left, left + service * (1 - 1 / rate)) / rate
