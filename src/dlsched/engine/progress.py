"""A run's progress bar: jobs finished of the total, with ETA and simulated time.

The engine asks `due(finished)` — one integer comparison — at each completion, and calls
`update` only every `step` completions (a thousandth of the jobs); `update` redraws at most
every `MIN_INTERVAL_S` seconds. So a bar costs far below 1 % of a run, and nothing at all
when it is off. tqdm is imported only when a bar is asked for.

Instead of a bar, a run can report to a callable `sink(finished, total)`, called on the same
schedule (at most every `MIN_INTERVAL_S`, and once at the end): an experiment's worker tells
its driver how far each run is, so that the grid's bar moves with the runs, not only when a
whole run ends.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

#: A callable told `(finished, total)` jobs as a run goes (see the module docstring).
ProgressSink = Callable[[int, int], None]

#: Fewest seconds between two redraws of the bar.
MIN_INTERVAL_S = 0.5


def simulated_time(seconds: float) -> str:
    """Simulated seconds as text for the bar: ``3d 04:05:06``, or ``04:05:06`` within a day.

    >>> simulated_time(93_906.0)
    '1d 02:05:06'
    >>> simulated_time(59.5)
    '00:00:59'
    """
    whole = int(seconds)
    days, rest = divmod(whole, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    clock = f"{hours:02d}:{minutes:02d}:{secs:02d}"
    return f"{days}d {clock}" if days else clock


class Progress:
    """A tqdm bar over a run's jobs (see the module docstring).

    `show`: True always, None only when stderr is a terminal (tqdm's ``disable=None``),
    False never (then `active` is False and the engine never calls it), or a `ProgressSink`
    told the counts instead of a bar."""

    def __init__(
        self, total: int, show: bool | None | ProgressSink, desc: str | None = None
    ) -> None:
        self.total = total
        self.step = max(1, total // 1000)
        self.next_check = self.step
        self._bar: Any = None
        self._sink: ProgressSink | None = None
        self._drawn = 0.0
        if show is False:
            return
        if callable(show):
            self._sink = show
            self._drawn = time.monotonic()
            return
        from tqdm import tqdm  # a bar is opt-in: keep tqdm out of plain runs

        bar = tqdm(
            total=total,
            unit="job",
            desc=desc,
            disable=None if show is None else False,
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=MIN_INTERVAL_S,
            leave=True,
        )
        if not bar.disable:
            self._bar = bar
            self._drawn = time.monotonic()

    @property
    def active(self) -> bool:
        """Whether a bar is shown or a sink told (a disabled bar is never updated)."""
        return self._bar is not None or self._sink is not None

    def update(self, finished: int, now: float) -> None:
        """Show `finished` jobs at simulated time `now` (redrawn at most every 0.5 s)."""
        self.next_check = finished + self.step
        if self._bar is None and self._sink is None:
            return
        clock = time.monotonic()
        if clock - self._drawn < MIN_INTERVAL_S:
            return
        self._drawn = clock
        if self._sink is not None:
            self._sink(finished, self.total)
        else:
            self._draw(finished, now)

    def _draw(self, finished: int, now: float) -> None:
        bar = self._bar
        bar.n = finished
        bar.set_postfix_str(f"simulated {simulated_time(now)}", refresh=False)
        bar.refresh()

    def close(self, finished: int, now: float) -> None:
        """Draw the final count and close the bar (or tell the sink the final count)."""
        if self._sink is not None:
            self._sink(finished, self.total)
            self._sink = None
            return
        bar = self._bar
        if bar is None:
            return
        bar.n = finished
        bar.set_postfix_str(f"simulated {simulated_time(now)}", refresh=False)
        bar.close()  # draws the final state once
        self._bar = None
