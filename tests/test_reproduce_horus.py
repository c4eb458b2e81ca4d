"""`dlsched reproduce horus`: plan, registration and the measured shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.reproduce import REPRODUCTIONS
from dlsched.reproduce import horus as repro

SHARED = Path(__file__).resolve().parents[2] / "shared"
needs_data = pytest.mark.skipif(
    not all((SHARED / p).exists() for p in (repro.TRACE, repro.PAIRS, repro.SINGLE)),
    reason="needs ../shared (Philly trace, Lucid co-location tables)",
)


def test_registered_with_its_data_and_points():
    found = REPRODUCTIONS.get("horus")
    assert {d.path for d in found.data} == {repro.TRACE, repro.PAIRS, repro.SINGLE}
    full = found.plan(SHARED, False)
    quick = found.plan(SHARED, True)
    assert len(full) == 2 * len(repro.VARIANTS) and len(quick) == 2
    assert {p.metric for p in quick} == set(repro.PUBLISHED)
    assert all(p.tolerance.allows(p.published, p.published) for p in full)


@needs_data
def test_horus_cuts_makespan_and_waiting_against_fifo_within_tolerance():
    """The default Horus on the Philly day: makespan -17.0 %, wait -46.4 % (published 23.7 %
    and 68.3 %, within the declared factor 2); both runs deterministic."""
    spec = {"variant": "horus", "window": list(repro.WINDOW), "seed": 0}
    got = repro.measure(spec, SHARED)
    assert got["makespan_reduction"] == pytest.approx(0.1704, abs=1e-3)
    assert got["wait_reduction"] == pytest.approx(0.4645, abs=1e-3)
    for metric, published in repro.PUBLISHED.items():
        assert repro.TOLERANCE.allows(got[metric], published)
    assert repro.measure(spec, SHARED) == got
