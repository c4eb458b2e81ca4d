"""SimPy's private fields that the engine's inlined event loop relies on, pinned.

`dlsched.engine.simulator.Simulator._loop` and `_at` inline `simpy.Environment.run()`
and `Environment.schedule` for speed: they read and write `env._queue`, `env._now` and
`env._eid`, and read `event._ok`, `event._value` and `event._defused` as `Environment.step`
does. pyproject pins SimPy's major version; these tests fail loudly, naming the field, if a
SimPy release changes any of that shape, so that nobody gets a silently different event order.
"""

from __future__ import annotations

import heapq
import itertools

import pytest
import simpy
from simpy.events import NORMAL, URGENT

from dlsched.engine import simulator


def test_environment_holds_a_heap_a_clock_and_an_id_counter() -> None:
    """`_queue` is a plain list used as a heap, `_now` the clock, `_eid` an id counter."""
    env = simpy.Environment(initial_time=5.0)
    assert isinstance(env._queue, list), "simpy.Environment._queue is no longer a list"
    assert env._now == 5.0 == env.now, "simpy.Environment._now is no longer the clock"
    assert isinstance(env._eid, itertools.count), "simpy.Environment._eid is no longer a count"
    first, second = next(env._eid), next(env._eid)
    assert second == first + 1


def test_schedule_pushes_time_priority_id_event() -> None:
    """`Environment.schedule` pushes `(now + delay, priority, next id, event)` onto the heap:
    the engine's own entries share that heap and its ordering by (time, priority, id)."""
    env = simpy.Environment()
    event = env.event()
    env.schedule(event, NORMAL, 3.0)
    (entry,) = env._queue
    assert len(entry) == 4
    when, priority, eid, queued = entry
    assert (when, priority, queued) == (3.0, NORMAL, event)
    assert isinstance(eid, int)


def test_step_pops_the_heap_and_sets_the_clock() -> None:
    """`Environment.step` takes the heap's smallest entry and sets `_now` to its time."""
    env = simpy.Environment()
    seen: list[float] = []
    env.timeout(2.0).callbacks.append(lambda _e: seen.append(env.now))
    env.timeout(1.0).callbacks.append(lambda _e: seen.append(env.now))
    # an entry pushed by hand, as `Simulator._at` does, must sort among SimPy's own
    manual = env.event()
    manual._ok, manual._value = True, None
    manual.callbacks.append(lambda _e: seen.append(env.now))
    heapq.heappush(env._queue, (1.5, NORMAL, next(env._eid), manual))
    env.run()
    assert seen == [1.0, 1.5, 2.0]


def test_event_outcome_fields() -> None:
    """`_ok` / `_value` hold an event's outcome; a defused failure carries `_defused`."""
    env = simpy.Environment()
    done = env.timeout(1.0, value="x")
    assert done._ok is True and done._value == "x"
    failed = env.event()
    failed.fail(RuntimeError("boom"))
    assert failed._ok is False and isinstance(failed._value, RuntimeError)
    assert not hasattr(failed, "_defused")
    failed.defused = True
    assert hasattr(failed, "_defused")


def test_priorities_order_urgent_first() -> None:
    """The engine's `_AFTER_EVERYTHING` priority sorts after SimPy's two priorities."""
    assert URGENT < NORMAL < simulator._AFTER_EVERYTHING


def test_simpy_major_version_is_the_pinned_one() -> None:
    """pyproject pins `simpy>=4.1,<5`: these internals were read in SimPy 4."""
    major = int(simpy.__version__.split(".")[0])
    assert major == 4, f"SimPy {simpy.__version__}: re-read Environment.step and schedule"


def test_a_simulation_runs_through_the_inlined_loop() -> None:
    """End to end: the inlined loop orders two jobs as SimPy would (a known answer)."""
    import pandas as pd

    import dlsched

    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 1.0],
            "num_gpus": [1, 1],
            "duration": [10.0, 5.0],
        }
    )
    cluster = dlsched.Cluster.from_dict(
        {"name": "one", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 1}]}
    )
    result = dlsched.simulate(jobs, cluster, policy="fifo")
    finish = result.jobs.set_index("job_id")["finish_time"]
    assert finish["a"] == pytest.approx(10.0)
    assert finish["b"] == pytest.approx(15.0)
