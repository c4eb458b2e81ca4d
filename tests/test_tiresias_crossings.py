"""`CrossingWatch`: the answers of evaluating every running job, from heaps."""

import math

import numpy as np
import pytest

from dlsched.policies.tiresias.crossings import CrossingWatch

EPS = 1e-6


def _all_jobs(jobs: dict, now: float) -> tuple[set, float]:
    """The all-jobs evaluation `Tiresias` did before (numpy, every running job)."""
    if not jobs:
        return set(), math.inf
    names = list(jobs)
    base, since, rate, limit = (np.array([jobs[n][i] for n in names]) for i in range(4))
    service = base + rate * (now - since)
    crossed = {names[i] for i in np.flatnonzero(service >= limit * (1 - EPS)).tolist()}
    left = limit - service
    wait = np.maximum(left, left + service * (1 - 1 / rate)) / rate
    return crossed, now + float(wait.min())


@pytest.mark.parametrize("seed", range(5))
def test_answers_match_evaluating_every_job(seed):
    """Random stints (whole and fractional GPUs, ties, demotions): the jobs crossed and
    the next check are those of the all-jobs evaluation, bit for bit."""
    rng = np.random.default_rng(seed)
    watch: CrossingWatch[int] = CrossingWatch(EPS)
    jobs: dict[int, tuple[float, float, float, float]] = {}
    now = 0.0
    for step in range(400):
        now += float(rng.choice([0.0, rng.exponential(300.0)]))
        crossed, check = _all_jobs(jobs, now)
        assert watch.next_check(now) == check
        got = set(watch.crossed(now))
        assert got == crossed
        for job in got:  # demoted: a higher limit, or none in the last queue
            base, since, rate, limit = jobs.pop(job)
            if limit < 7200:
                jobs[job] = (base, since, rate, 7200.0)
                watch.arm(job, base, since, rate, 7200.0)
        if rng.random() < 0.5:
            job = step
            rate = float(rng.choice([1, 2, 4, 8, 0.5, 3]))
            base = float(rng.choice([0.0, 100.0, rng.uniform(0, 3000)]))
            jobs[job] = (base, now, rate, 3250.0)
            watch.arm(job, base, now, rate, 3250.0)
        if jobs and rng.random() < 0.3:
            job = int(rng.choice(list(jobs)))
            del jobs[job]
            watch.disarm(job)
        assert len(watch) == len(jobs)


def test_an_infinite_limit_is_not_watched():
    """A job of the last queue is never crossed and sets no check."""
    watch: CrossingWatch[str] = CrossingWatch(EPS)
    watch.arm("a", 0.0, 0.0, 1.0, math.inf)
    assert len(watch) == 0
    assert watch.crossed(1e9) == []
    assert watch.next_check(5.0) == math.inf


def test_one_gpu_job_is_checked_at_its_crossing():
    """One GPU from 10 s with 100 GPU-s against 3,250: crossed from 3,160 s on."""
    watch: CrossingWatch[str] = CrossingWatch(0.0)
    watch.arm("a", 100.0, 10.0, 1.0, 3250.0)
    assert watch.next_check(10.0) == 3160.0
    assert watch.crossed(3159.0) == []
    assert watch.crossed(3160.0) == ["a"]
    assert len(watch) == 0


def test_stale_entries_are_dropped():
    """Jobs armed and disarmed many times leave the heaps no larger than a few times the
    jobs watched."""
    watch: CrossingWatch[int] = CrossingWatch(EPS)
    for job in range(300):
        watch.arm(job, 0.0, 0.0, 2.0, 3250.0)
        if job % 10:
            watch.disarm(job)
    assert watch.crossed(0.0) == []
    assert len(watch._cross) <= 4 * len(watch) and len(watch) == 30
    assert watch.next_check(0.0) == 0.0 + (3250.0 - 0.0 * 0.5) / 2.0
