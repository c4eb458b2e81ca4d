"""The paper-mode Tiresias policies' kept state gives the answers of evaluating every job."""

import bisect

import numpy as np
import pandas as pd

import dlsched
from dlsched.cluster import Cluster
from dlsched.policies.tiresias import Tiresias, TiresiasBase, TiresiasGittins


class CheckedGittins(TiresiasGittins):
    """Tiresias-G that, at every read of a queue's running jobs, also ranks them afresh (every
    job's step looked up at `now`, the whole keys sorted) and fails on any difference."""

    def start(self, view):
        super().start(view)
        self.reads = 0
        self.reused = 0

    def _running_sorted(self, level, pool, now, cache):
        fresh = (level, pool) not in cache
        kept = self._sorted.get((level, pool))
        if fresh and kept is not None and now < kept[0]:
            self.reused += 1
        keys, gpus = super()._running_sorted(level, pool, now, cache)
        if fresh:
            self.reads += 1
            table = self._gittins
            pairs = []
            run_keys, run_gpus = self._run[level].get(pool, ([], []))
            for key, n in zip(run_keys, run_gpus, strict=True):
                base, since, rate = self._stint_of[key[-1]]
                step = bisect.bisect_right(table.data, base + rate * (now - since))
                pairs.append(((-table.table[step], *key), n))
            pairs.sort()
            assert list(keys) == [key for key, _ in pairs]
            assert list(gpus) == [n for _, n in pairs]
        return keys, gpus


def _reference_walk(policy, view, now, cache, level, key, free):
    """The walk as one pass over every job below `key` in priority order
    (`TiresiasBase._admit` over the merged queues of the pools the walk's waiting jobs may
    use)."""
    waiting = policy._waiting[level]
    head = waiting[bisect.bisect_left(waiting, key) :]
    touched = {}
    for keys in (head, *policy._waiting[level + 1 :]):
        for other in keys:
            for pool, _ in policy._choices(view, other[-1]):
                touched[pool] = None
    room = {pool: free[pool] + sum(policy._held[pool][level + 1 :]) for pool in touched}
    running = 0
    for pool in touched:
        keys, gpus = policy._running_sorted(level, pool, now, cache)
        at = bisect.bisect_right(keys, key)
        running += len(keys) - at
        room[pool] += sum(gpus[at:])
        head.extend(keys[at:])
    head.sort()
    order = [other[-1] for other in head]
    for lower in range(level + 1, policy._last + 1):
        keys = list(policy._waiting[lower])
        for pool in touched:
            ranked = policy._running_sorted(lower, pool, now, cache)[0]
            keys.extend(ranked)
            running += len(ranked)
        keys.sort()
        order.extend(other[-1] for other in keys)
    return TiresiasBase._admit(policy, view, order, room, running, policy._pool_of)


class CheckedWalk:
    """Mixin: every walk's answer is also computed by `_reference_walk` and compared."""

    def start(self, view):
        super().start(view)
        self.walks = 0

    def _walk_from(self, view, now, cache, level, key, free):
        expected = _reference_walk(self, view, now, cache, level, key, dict(free))
        got = super()._walk_from(view, now, cache, level, key, free)
        assert got == expected
        self.walks += 1
        return got


class CheckedWalkLas(CheckedWalk, Tiresias):
    """Tiresias-L with checked walks."""


class CheckedWalkGittins(CheckedWalk, TiresiasGittins):
    """Tiresias-G with checked walks."""


def _workload(seed: int, n: int = 160) -> pd.DataFrame:
    """Jobs of 1–8 GPUs with sizes spread over the prior's samples (100 to 10^5 GPU-s)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_time": np.sort(rng.uniform(0, 40_000, n)).round(1),
            "num_gpus": rng.choice([1, 1, 1, 2, 4, 8], n),
            "duration": np.exp(rng.uniform(np.log(60), np.log(20_000), n)).round(1),
        }
    )


def _cluster() -> Cluster:
    return Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "P100", "count": 2, "gpus_per_node": 8}]}
    )


def test_kept_gittins_ranks_are_those_of_a_fresh_evaluation():
    """Ranks kept across calls (per job and per queue and pool) equal ranking every running
    job afresh at every read, and are reused at some reads."""
    policy = CheckedGittins()
    result = dlsched.simulate(_workload(0), _cluster(), policy)
    assert result.summary()["jobs_completed"] == 160
    assert policy.reads > 100 and policy.reused > 0


def test_kept_gittins_ranks_hold_with_starvation_promotions():
    """With the starvation knob (promoted jobs restart their service count), kept ranks still
    equal a fresh evaluation."""
    policy = CheckedGittins(starvation_knob=2.0)
    result = dlsched.simulate(_workload(1), _cluster(), policy)
    assert result.summary()["jobs_completed"] == 160
    assert policy.reads > 100


def test_kept_gittins_ranks_hold_past_the_largest_sample():
    """With a small prior most jobs pass its largest sample (index 0 from then on): kept
    ranks still equal a fresh evaluation."""
    policy = CheckedGittins(prior=[50.0, 100.0, 400.0, 1600.0])
    result = dlsched.simulate(_workload(4), _cluster(), policy)
    assert result.summary()["jobs_completed"] == 160
    assert policy.reads > 100


def test_a_policy_instance_serves_a_second_run_identically():
    """The kept state is rebuilt by `start`: a second run of one instance gives the same
    events as the first."""
    policy = TiresiasGittins()
    first = dlsched.simulate(_workload(2, 80), _cluster(), policy)
    second = dlsched.simulate(_workload(2, 80), _cluster(), policy)
    pd.testing.assert_frame_equal(first.events, second.events)


def test_the_walk_pool_by_pool_is_the_one_pass_walk():
    """The walk computed pool by pool drops and admits the same jobs, in the same order, as
    one pass over the merged queues (2D-LAS, literal too, and 2D-Gittins, with and without
    the knob)."""
    for policy in (
        CheckedWalkLas(thresholds=[500, 5000]),
        CheckedWalkLas(thresholds=[500, 5000], literal=True),
        CheckedWalkGittins(),
        CheckedWalkGittins(starvation_knob=2.0),
    ):
        jobs = _workload(3)
        jobs["vc"] = np.where(np.arange(len(jobs)) % 3 == 0, "own", "")  # a third in the VC
        result = dlsched.simulate(jobs, _vc_cluster(), policy)
        assert result.summary()["jobs_completed"] == 160
        assert policy.walks > 20


def _vc_cluster() -> Cluster:
    """Two GPU types, one VC owning nodes: jobs choose among several pools."""
    return Cluster.from_dict(
        {
            "name": "c",
            "nodes": [
                {"gpu_type": "V100", "count": 2, "gpus_per_node": 4, "name": "v"},
                {"gpu_type": "P100", "count": 2, "gpus_per_node": 8, "name": "p"},
            ],
            "vcs": [{"name": "own", "nodes": ["v-0", "p-0"]}],
        }
    )


def test_the_walk_over_a_long_queue_is_the_one_pass_walk():
    """With a long queue (400 jobs in 8,000 s on 24 GPUs), where many waiting jobs with the
    same GPU count and pools fail once one has failed and are skipped, and lower queues are
    ranked only where the walk needs them, the walk still gives the one-pass answer."""
    for policy in (CheckedWalkLas(thresholds=[500, 5000]), CheckedWalkGittins()):
        jobs = _workload(5, 400)
        jobs["submit_time"] = (jobs["submit_time"] / 5).round(1)
        jobs["vc"] = np.where(np.arange(len(jobs)) % 3 == 0, "own", "")
        result = dlsched.simulate(jobs, _vc_cluster(), policy)
        assert result.summary()["jobs_completed"] == 400
        assert policy.walks > 50
