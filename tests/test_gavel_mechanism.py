"""Gavel's round-based mechanism end to end: priorities, re-solve interval, `exact`,
type-change charging, FIFO, space sharing, hierarchy and cost; timelines worked by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.overheads import OverheadModel
from dlsched.perf import ProfileTable
from dlsched.policies.gavel.realisation import Rounds, TimeSlices

RESNET18_32 = "ResNet-18 (batch size 32)"
RESNET18_64 = "ResNet-18 (batch size 64)"
RESNET50_64 = "ResNet-50 (batch size 64)"
TRANSFORMER_128 = "Transformer (batch size 128)"
RECOMMENDATION_512 = "Recommendation (batch size 512)"
ALL_GAVEL = (
    "max_min_fairness",
    "max_min_fairness_perf",
    "max_min_fairness_packed",
    "finish_time_fairness",
    "finish_time_fairness_perf",
    "min_total_duration",
    "min_total_duration_perf",
    "max_sum_throughput_perf",
    "min_cost",
    "min_cost_slo",
    "fifo_perf",
    "gavel_fifo",
    "fifo_packed",
    "hierarchical",
)


def cluster(**types: int) -> dlsched.Cluster:
    """One node per GPU type with the given number of GPUs (V100=1, K80=1, ...)."""
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [{"gpu_type": t, "count": 1, "gpus_per_node": n} for t, n in types.items()],
        }
    )


def times(result: dlsched.SimulationResult) -> dict[object, tuple[float, float]]:
    """job id → (start, finish)."""
    jobs = result.jobs
    return {
        j: (s, f)
        for j, s, f in zip(jobs["job_id"], jobs["start_time"], jobs["finish_time"], strict=True)
    }


def duration_jobs(*rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration"])


def test_priority_weights_follow_gavels_ratio_priorities():
    """Weights 2 and 1 on one GPU (1000 s each): a runs 0–360 and 720–1360, b the rest."""
    # X = (⅔, ⅓). Each job starts the period with 180 s of credit on the type (360 s in
    # all); priority = X / (job's credit / type's total). t=0: ½, ½ → (1.33, 0.67): a.
    # t=360: a 540/720, b 180/720 → (0.89, 1.33): b. t=720: 540/1080 each → (1.33, 0.67): a.
    # t=1080: a 900/1440, b 540/1440 → (1.07, 0.89): a, which finishes at 1360 (1000 s of
    # work); with nothing running, b starts at once and ends at 1360 + 640 = 2000.
    jobs = pd.DataFrame(
        [("a", 0.0, 1, 1000.0, 2.0), ("b", 0.0, 1, 1000.0, 1.0)],
        columns=["job_id", "submit_time", "num_gpus", "duration", "priority"],
    )
    result = dlsched.simulate(jobs, cluster(V100=1), policy="max_min_fairness")
    assert times(result) == {"a": (0.0, 1360.0), "b": (360.0, 2000.0)}


def test_a_job_arriving_between_solves_waits_for_the_next_solve():
    """b arrives at 200 to a busy GPU: without X it waits for the solve at 2160 (≥ 1920 s)."""
    # a arrives at 100 (a solve at t = 0 would not start the interval, as in Gavel). Default
    # interval 1920 s: rounds at 360, ..., 1800 keep a (b has priority 0); the round at
    # 2160 re-solves (X = ½ each, credits reset, a wins the tie by arrival) and the round
    # at 2520 starts b. With resolve_interval_s=0 the solve comes at 360 and b starts at
    # 720 after the same tie.
    jobs = duration_jobs(("a", 100.0, 1, 10_000.0), ("b", 200.0, 1, 1000.0))
    slow = dlsched.simulate(jobs, cluster(V100=1), policy="max_min_fairness")
    fast = dlsched.simulate(
        jobs, cluster(V100=1), policy="max_min_fairness", resolve_interval_s=0.0
    )
    assert times(slow)["b"][0] == 2520.0
    assert times(fast)["b"][0] == 720.0


def test_exact_realises_half_shares_slice_by_slice():
    """exact=True, 60 s slices: two 720 s jobs alternate every slice, ending at 1380, 1440."""
    # owed = X·t − received: at 0 both 0 (tie → a), at 60 a −30 / b 30 → b, at 120 both 0
    # → a, ... a's twelfth slice is [1320, 1380], b's [1380, 1440].
    jobs = duration_jobs(("a", 0.0, 1, 720.0), ("b", 0.0, 1, 720.0))
    result = dlsched.simulate(jobs, cluster(V100=1), policy="max_min_fairness", exact=True)
    assert times(result) == {"a": (0.0, 1380.0), "b": (60.0, 1440.0)}


@pytest.mark.parametrize("charge", [False, True])
def test_type_changes_cost_a_migration_or_with_the_option_a_restart(charge):
    """Moves between V100 and K80: migrations (5 s) by default, preempt + restart (30 s)
    with charge_type_change=True."""
    jobs = pd.DataFrame(
        [(1, 0.0, 1, 100_000.0, RESNET18_64), (2, 0.0, 1, 100_000.0, TRANSFORMER_128)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    result = dlsched.simulate(
        jobs,
        cluster(V100=1, K80=1),
        policy="max_min_fairness_perf",
        throughput="gavel",
        charge_type_change=charge,
        overheads=OverheadModel(restart_s=30.0, migration_s=5.0),
    )
    events = result.events
    moves = events[events["event"].isin(["migrate", "restart"])]
    assert len(moves) > 5  # the two jobs swap types round after round
    if charge:
        assert set(moves["event"]) == {"restart"} and set(moves["overhead_s"]) == {30.0}
        assert (events["event"] == "preempt").sum() == len(moves)
    else:
        assert set(moves["event"]) == {"migrate"} and set(moves["overhead_s"]) == {5.0}


def test_agnostic_policies_shuffle_type_order_from_their_seed():
    """The agnostic type order is random but seeded: same seed, same run."""
    rows = [
        (i, 200.0 * i, 1, 5000.0 + 700 * i, (RESNET18_64, TRANSFORMER_128)[i % 2]) for i in range(6)
    ]
    jobs = pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"])

    def run(seed):
        result = dlsched.simulate(
            jobs,
            cluster(V100=1, P100=1, K80=1),
            policy="max_min_fairness",
            throughput="gavel",
            seed=seed,
        )
        return result.jobs["finish_time"].tolist()

    assert run(0) == run(0)


def test_fifo_perf_puts_a_job_on_its_fastest_type_and_gavel_fifo_on_the_first_free():
    """Recommendation runs 2× faster on P100 than V100 in Gavel's table: fifo_perf gives it
    the P100, the agnostic gavel_fifo the V100 (first in the cluster's order)."""
    # Order of types over the three jobs seen (throughput / own best, summed): V100 1 + 1 +
    # 0.48, P100 ~0.6 + 0.6 + 1, so V100 first; the first job takes the first type free.
    table = ProfileTable.gavel()
    rate = table.throughput(RECOMMENDATION_512, "p100", 1)
    jobs = pd.DataFrame(
        [
            ("a-rec", 0.0, 1, rate * 3600, RECOMMENDATION_512),
            ("b-r50", 0.0, 1, 50_000.0, RESNET50_64),
            ("c-r50", 0.0, 1, 50_000.0, RESNET50_64),
        ],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    where = {}
    for policy in ("fifo_perf", "gavel_fifo"):
        result = dlsched.simulate(
            jobs, cluster(V100=1, P100=1, K80=1), policy=policy, throughput="gavel"
        )
        row = result.jobs.set_index("job_id").loc["a-rec"]  # first in arrival order
        where[policy] = max(("V100", "P100", "K80"), key=lambda t: row[f"gpu_seconds_{t}"])
    assert where == {"fifo_perf": "P100", "gavel_fifo": "V100"}


def test_fifo_never_gives_idle_gpus_to_jobs_it_has_not_admitted():
    """FIFO admits at solves only: a job arriving at 110 to a free GPU waits for the solve."""
    # a arrives at 100 and runs; b arrives at 110 while a runs. The next solve may come only
    # 1920 s after the first: rounds at 360..1800 cannot admit b, the one at 2160 does.
    jobs = duration_jobs(("a", 100.0, 1, 5000.0), ("b", 110.0, 1, 100.0))
    result = dlsched.simulate(jobs, cluster(V100=2), policy="fifo_perf")
    assert times(result)["b"] == (2160.0, 2260.0)


def test_packed_policy_runs_a_well_matched_pair_together():
    """ResNet-18 batch 32 and 64 lose nothing packed (Gavel's table): both end at 1000 s."""
    table = ProfileTable.gavel()
    jobs = pd.DataFrame(
        [
            ("a", 0.0, 1, 1000 * table.throughput(RESNET18_32, "v100", 1), RESNET18_32),
            ("b", 0.0, 1, 1000 * table.throughput(RESNET18_64, "v100", 1), RESNET18_64),
        ],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    packed = dlsched.simulate(
        jobs, cluster(V100=1), policy="max_min_fairness_packed", throughput="gavel"
    )
    assert times(packed)["a"] == pytest.approx((0.0, 1000.0))
    assert times(packed)["b"] == pytest.approx((0.0, 1000.0))
    alone = dlsched.simulate(
        jobs, cluster(V100=1), policy="max_min_fairness_perf", throughput="gavel"
    )
    assert alone.jobs["finish_time"].max() == pytest.approx(2000.0)


def test_hierarchical_gives_each_user_half_the_cluster():
    """Users A (two jobs) and B (one) on 2 GPUs: B's job runs unpreempted, A's take turns."""
    jobs = pd.DataFrame(
        [("a1", 0.0, 1, 3600.0, "A"), ("a2", 0.0, 1, 3600.0, "A"), ("b1", 0.0, 1, 3600.0, "B")],
        columns=["job_id", "submit_time", "num_gpus", "duration", "user"],
    )
    result = dlsched.simulate(jobs, cluster(V100=2), policy="hierarchical")
    rows = result.jobs.set_index("job_id")
    assert rows.loc["b1", "finish_time"] == 3600.0 and rows.loc["b1", "preemptions"] == 0
    assert rows.loc[["a1", "a2"], "finish_time"].min() > 3600.0  # each had half a GPU


def test_min_cost_runs_a_job_where_its_steps_are_cheapest():
    """ResNet-18 at 24.1 steps/s on a $3/h V100 or 7.05 on a $0.5/h K80: K80 is cheaper."""
    # per dollar: V100 (24.1/24.1)/3 = 0.33, K80 (7.05/24.1)/0.5 = 0.59
    jobs = pd.DataFrame(
        [("j", 0.0, 1, 10_000.0, RESNET18_64)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    hardware = dlsched.Cluster.from_dict(
        {
            "name": "c",
            "gpu_types": {"V100": {"cost_per_hour": 3.0}, "K80": {"cost_per_hour": 0.5}},
            "nodes": [{"gpu_type": "V100", "count": 1}, {"gpu_type": "K80", "count": 1}],
        }
    )
    result = dlsched.simulate(jobs, hardware, policy="min_cost", throughput="gavel")
    assert result.jobs["gpu_seconds_K80"].iloc[0] > 0
    assert result.jobs["gpu_seconds_V100"].iloc[0] == 0


def test_min_cost_without_prices_says_where_to_put_them():
    """No cost_per_hour in the cluster and none given: an error naming the fix."""
    jobs = pd.DataFrame(
        [("j", 0.0, 1, 100.0, RESNET18_64)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    with pytest.raises(ValueError, match="cost_per_hour"):
        dlsched.simulate(jobs, cluster(V100=1), policy="min_cost", throughput="gavel")


@pytest.mark.parametrize("policy", ALL_GAVEL)
def test_every_gavel_policy_finishes_every_job(policy):
    """Gavel models, gangs of 1–2, deadlines, two users, 2 V100 + 2 K80: all jobs complete."""
    rows = [
        (
            i,
            100.0 * i,
            1 + (i % 3 == 0),
            3000.0,
            (RESNET18_64, TRANSFORMER_128)[i % 2],
            "AB"[i % 2],
            100.0 * i + 5000.0,
        )
        for i in range(8)
    ]
    jobs = pd.DataFrame(
        rows,
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model", "user", "deadline"],
    )
    params = {"cost_per_hour": {"V100": 3.0, "K80": 1.0}} if "cost" in policy else {}
    result = dlsched.simulate(
        jobs, cluster(V100=2, K80=2), policy=policy, throughput="gavel", **params
    )
    assert result.summary()["jobs_completed"] == 8


@pytest.mark.parametrize(
    "option", [{"fill_idle": True}, {"exact": True}, {"charge_type_change": True}]
)
def test_mechanism_options_keep_every_job_finishing(option):
    """Each mechanism option, with space sharing and gangs, still completes every job."""
    rows = [
        (i, 150.0 * i, 1 + (i % 4 == 0), 4000.0, (RESNET18_64, RESNET18_32)[i % 2])
        for i in range(8)
    ]
    jobs = pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"])
    result = dlsched.simulate(
        jobs,
        cluster(V100=2, P100=2),
        policy="max_min_fairness_packed",
        throughput="gavel",
        restart_overhead_s=10.0,
        **option,
    )
    assert result.summary()["jobs_completed"] == 8


@pytest.mark.parametrize("name", ALL_GAVEL)
def test_exact_selects_time_slices_under_every_gavel_name(name):
    """exact=True gives any Gavel policy the time-slice realisation: 30 s ticks, re-solve at
    every job-set change, no idle filling; without it, Gavel's rounds."""
    exact = dlsched.policies.get(name, exact=True, slice_s=30.0, fill_idle=True)
    assert type(exact.realisation) is TimeSlices
    assert (exact.round_s, exact.resolve_interval_s, exact.fill_idle) == (30.0, 0.0, False)
    rounds = dlsched.policies.get(name, slice_s=30.0)
    assert type(rounds.realisation) is Rounds
    assert (rounds.round_s, rounds.resolve_interval_s) == (360.0, 1920.0)


def test_exact_fifo_packed_runs_the_pair_it_plans():
    """fifo_packed, exact=True: ResNet-18 batch 32 and 64 packed on one V100 both end at
    1000 s (an entry owed 0 s, as every entry is at the solve, may still run)."""
    table = ProfileTable.gavel()
    jobs = pd.DataFrame(
        [
            ("a", 0.0, 1, 1000 * table.throughput(RESNET18_32, "v100", 1), RESNET18_32),
            ("b", 0.0, 1, 1000 * table.throughput(RESNET18_64, "v100", 1), RESNET18_64),
        ],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    result = dlsched.simulate(
        jobs, cluster(V100=1), policy="fifo_packed", throughput="gavel", exact=True
    )
    assert times(result)["a"] == pytest.approx((0.0, 1000.0))
    assert times(result)["b"] == pytest.approx((0.0, 1000.0))


def test_a_policy_seed_draws_the_type_order_as_gavels_worker_type_shuffler():
    """seed=3: each round's agnostic type order is Gavel's random.Random(3 + 5).shuffle of
    ["v100", "p100", "k80"], one shuffle per round, in Gavel's sequence."""
    import random

    from dlsched.policies.gavel.policies import MaxMinFairness

    class Recording(MaxMinFairness):
        def start(self, view):
            super().start(view)
            self.orders = []

        def _shuffle_types(self):
            super()._shuffle_types()
            self.orders.append(tuple(self._types[k].lower() for k in self._round_order))

    rows = [(i, 200.0 * i, 1, 5000.0 + 700 * i, RESNET18_64) for i in range(4)]
    jobs = pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"])
    policy = Recording(seed=3)
    dlsched.simulate(jobs, cluster(V100=1, P100=1, K80=1), policy=policy, throughput="gavel")
    shuffler = random.Random(8)
    expected = []
    for _ in policy.orders:
        order = ["v100", "p100", "k80"]
        shuffler.shuffle(order)
        expected.append(tuple(order))
    assert len(policy.orders) >= 5 and policy.orders == expected


def test_whole_steps_truth_advances_a_job_whole_steps_per_round():
    """At 1.004 steps/s a 360 s round holds 361 whole steps (361.44): a job of 722.5 steps
    needs a third round and ends at 722.5 / (361 / 360) = 720.499 s, not 719.622 s."""
    from dlsched.policies.gavel.realisation import WholeSteps

    class Steady:
        name = "steady"

        def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
            return 0.0 if colocated else 1.004

        def reference_type(self, model):
            return None

    jobs = pd.DataFrame(
        [(0, 0.0, 1, 722.5, RESNET18_64)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    finish = {}
    for name, truth in (("table", Steady()), ("whole", WholeSteps(Steady(), 360.0))):
        result = dlsched.simulate(
            jobs, cluster(V100=1), policy="max_min_fairness", throughput=truth
        )
        finish[name] = float(result.jobs["finish_time"].iloc[0])
    assert finish["table"] == pytest.approx(722.5 / 1.004)
    assert finish["whole"] == pytest.approx(722.5 / (361 / 360))


def test_whole_steps_truth_shows_policies_the_base_rate():
    """WholeSteps' throughput (what policies and the work conversion read) is the table's;
    only its rate_from is the whole-step rate."""
    from dlsched.policies.gavel.realisation import WholeSteps

    truth = WholeSteps("gavel")
    table = ProfileTable.gavel()
    rate = table.throughput(RESNET18_64, "k80", 1)
    assert truth.throughput(RESNET18_64, "k80", 1) == rate
    assert truth.rate_from(RESNET18_64, "k80", 1, 1, 0.0) == (int(rate * 360) / 360, float("inf"))


class _CoarseSteps:
    """One 'slow' step takes 200 s: far from Gavel's many steps per round."""

    name = "coarse"

    def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
        return 0.0 if colocated else (1 / 200 if model == "slow" else 1.0)

    def reference_type(self, model):
        return None


@pytest.mark.filterwarnings("ignore:fifo_perf. gavel_clock=True with steps:RuntimeWarning")
def test_gavel_clock_sees_a_job_arriving_in_the_rounds_shortfall_a_round_later():
    """A job at 1/200 steps/s does 1 whole step (200 s) a 360 s round, so Gavel's clock falls
    160 s behind per round: B, arriving at 300 s (after Gavel's first round ended, at 200 s),
    starts at the 360 s tick by default, and a round later with gavel_clock=True: at this
    clock's 720 s tick, reported on Gavel's clock (`reported_times`) as 400 s, where Gavel's
    second round (200 s to 400 s) ends."""

    jobs = pd.DataFrame(
        [("A", 0.0, 1, 10.0, "slow"), ("B", 300.0, 1, 50.0, "fast")],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    starts = {}
    for clock in (False, True):
        result = dlsched.simulate(
            jobs,
            cluster(V100=2),
            policy=dlsched.policies.get("fifo_perf", gavel_clock=clock),
            throughput=_CoarseSteps(),
        )
        starts[clock] = dict(zip(result.jobs["job_id"], result.jobs["start_time"], strict=True))
    assert starts[False]["B"] == 360.0 and starts[True]["B"] == 400.0
    assert starts[False]["A"] == starts[True]["A"] == 0.0


class _Steady:
    """1.004 steps/s everywhere: a 360 s round holds 361 whole steps (361.44), which take
    361 / 1.004 = 359.562 s, so Gavel's rounds are 0.438 s short."""

    name = "steady"

    def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
        return 0.0 if colocated else 1.004

    def reference_type(self, model):
        return None


@pytest.mark.parametrize("policy", ["fifo_perf", "max_min_fairness"])
def test_gavel_clock_reports_times_on_gavels_clock(policy):
    """A of 722 steps runs two rounds of 361 whole steps: 720 s on this clock's 360 s grid,
    2 · 361 / 1.004 = 719.124 s on Gavel's. Reported: 720 s less the first round's
    shortfall (0.438 s); the last round's, A's own, is left in (a finish is placed on Gavel's
    clock to within the time of one of the job's steps). C arrives at 719.8 s, after A's
    end on Gavel's clock: Gavel's clock jumps to C's arrival, where C starts (here at 720 s).
    B arrives at 2000 s, the cluster empty: it starts there on both clocks. Without
    gavel_clock the times are the engine's; the event log and timeline follow the jobs',
    the log in time order, submissions at the trace's times."""
    from dlsched.policies.gavel.realisation import WholeSteps

    jobs = pd.DataFrame(
        [
            ("A", 0.0, 1, 722.0, RESNET18_64),
            ("C", 719.8, 1, 722.0, RESNET18_64),
            ("B", 2000.0, 1, 722.0, RESNET18_64),
        ],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    runs = {}
    for clock in (False, True):
        runs[clock] = dlsched.simulate(
            jobs,
            cluster(V100=1),
            policy=dlsched.policies.get(policy, gavel_clock=clock),
            throughput=WholeSteps(_Steady(), 360.0),
        )
    plain, gavel = (runs[c].jobs.set_index("job_id") for c in (False, True))
    short = (361.44 - 361) / 1.004
    assert plain.loc["A", "finish_time"] == pytest.approx(720.0)
    assert gavel.loc["A", "finish_time"] == pytest.approx(720.0 - short)
    assert 0 < gavel.loc["A", "finish_time"] - 2 * 361 / 1.004 < 1 / 1.004
    assert gavel.loc["A", "jct"] == gavel.loc["A", "finish_time"]
    assert plain.loc["C", "start_time"] == 720.0
    assert gavel.loc["C", "start_time"] == pytest.approx(719.8)
    assert gavel.loc["C", "jct"] == pytest.approx(720.0 - short)
    assert gavel.loc["B", "start_time"] == plain.loc["B", "start_time"] == 2000.0
    # waiting is measured on the engine's clock: C's 0.2 s behind A, on both
    assert gavel["pending_s"].tolist() == plain["pending_s"].tolist()
    assert gavel.loc["C", "pending_s"] == pytest.approx(0.2)
    for result in runs.values():
        events = result.events
        finishes = events[events["event"] == "finish"].set_index("job_id")["time"]
        assert finishes.to_dict() == result.jobs.set_index("job_id")["finish_time"].to_dict()
        submits = events[events["event"] == "submit"].set_index("job_id")["time"]
        assert submits.to_dict() == {"A": 0.0, "C": 719.8, "B": 2000.0}
        assert events["time"].is_monotonic_increasing
        assert result.timeline["time"].is_monotonic_increasing
        assert result.timeline["time"].iloc[-1] == result.jobs["finish_time"].max()


def test_a_streamed_event_log_on_the_engines_clock_is_said(tmp_path):
    """A log streamed to a file during the run cannot be re-timed afterwards: the run warns
    that it keeps the engine's clock while the jobs' times are on Gavel's."""
    from dlsched.policies.gavel.realisation import WholeSteps

    jobs = pd.DataFrame(
        [("A", 0.0, 1, 722.0, RESNET18_64)],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    with pytest.warns(RuntimeWarning, match="streamed event log keeps the engine's clock"):
        result = dlsched.simulate(
            jobs,
            cluster(V100=1),
            policy=dlsched.policies.get("fifo_perf", gavel_clock=True),
            throughput=WholeSteps(_Steady(), 360.0),
            events=tmp_path / "events.parquet",
        )
    assert result.jobs["finish_time"].iloc[0] < 720.0


def test_reported_times_spread_a_rounds_shortfall_over_it_and_leave_nan_alone():
    """Rounds of 360 s ending at 360 s and 720 s, 0.5 s short each, then the clock jumping to
    an arrival at 1000 s: the drift grows through each round (0.25 s at 180 s), falls at
    once at the jump (after an end at that instant); NaN (an unfinished job) stays NaN;
    with no drift, the same array."""
    policy = dlsched.policies.get("fifo_perf", gavel_clock=True)
    policy._clock_at, policy._clock_drift = [360.0, 720.0, 1000.0], [0.5, 1.0, 0.0]
    times = np.array([0.0, 180.0, 360.0, 540.0, 720.0, 999.0, 1000.0, np.nan])
    out = policy.reported_times(times)
    assert out[:7].tolist() == pytest.approx([0.0, 179.75, 359.5, 539.25, 719.0, 998.0, 1000.0])
    assert np.isnan(out[7])
    assert (np.diff(policy.reported_times(np.linspace(0, 2000, 4001))) > 0).all()
    # an end at the jump's instant comes before it; away from jumps `ends` changes nothing
    ends = policy.reported_times(times, ends=True)
    assert ends[6] == 999.0 and ends[:6].tolist() == pytest.approx(out[:6].tolist())
    policy._clock_at, policy._clock_drift = [], []
    assert policy.reported_times(times) is times


def test_a_progress_rated_truth_refuses_a_packing_policy():
    """WholeSteps rates by progress, not by partners: a packed job is an error, never its
    solo speed."""
    from dlsched.errors import SchedulingError
    from dlsched.policies.gavel.realisation import WholeSteps
    from dlsched.traces.synthetic import gavel_generated

    jobs = gavel_generated(10, 4.0, seed=1)
    with pytest.raises(SchedulingError, match="shares its GPUs"):
        dlsched.simulate(
            jobs,
            cluster(V100=4, P100=4, K80=4),
            policy="max_min_fairness_packed",
            throughput=WholeSteps("gavel"),
        )


def test_gavel_clock_warns_when_steps_are_coarse():
    """gavel_clock=True with steps of more than 1 % of a round says it cannot replay Gavel."""
    jobs = pd.DataFrame(
        [("A", 0.0, 1, 100.0, "slow"), ("B", 2000.0, 1, 50.0, "fast")],
        columns=["job_id", "submit_time", "num_gpus", "total_steps", "model"],
    )
    policy = dlsched.policies.get("fifo_perf", gavel_clock=True)
    with pytest.warns(RuntimeWarning, match="gavel_clock=True with steps"):
        dlsched.simulate(jobs, cluster(V100=2), policy=policy, throughput=_CoarseSteps())
