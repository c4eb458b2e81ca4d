"""Tiresias (2D-LAS and 2D-Gittins): known answers worked by hand."""

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.cluster import Cluster
from dlsched.engine.ledger import Ledger
from dlsched.engine.placement import yarn
from dlsched.policies.tiresias import (
    AuthorsGittinsTable,
    AuthorsTiresias,
    AuthorsTiresiasGittins,
    GittinsIndex,
    Tiresias,
    TiresiasGittins,
    _py2_round,
)


def jobs(*rows):
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration"])


def model_jobs(*rows):
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration", "model"])


def gpus(n, nodes=1, gpu_type="P100"):
    return Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": gpu_type, "count": nodes, "gpus_per_node": n}]}
    )


def table(result):
    return result.jobs.set_index("job_id")


def times(result, job, event):
    events = result.events
    return events[(events["job_id"] == job) & (events["event"] == event)]["time"].tolist()


# ---- 2D-LAS: demotion and starvation -------------------------------------------------------
def test_literal_demotion_happens_at_the_exact_crossing_time():
    """literal: a (2 GPUs) crosses 100 GPU-s at t=50 and is demoted then, letting b run."""
    # Threshold 100 GPU-s. a: 2 GPUs from 0, reaches 100 GPU-s at t=50. b (2 GPUs, 10 s)
    # arrives at 40 behind a in Q0; at 50 a drops to Q1 and b preempts it: b 50→60;
    # a resumes at 60 with 250 s left → 310. The engine is woken for the crossing, not
    # polled: 5 scheduling calls (arrivals at 0 and 40, the crossing at 50, completions at
    # 60 and 310).
    result = dlsched.simulate(
        jobs(("a", 0, 2, 300.0), ("b", 40, 2, 10.0)),
        gpus(2),
        "tiresias",
        thresholds=[100],
        literal=True,
    )
    done = table(result)
    assert done.loc["b", "start_time"] == 50.0 and done.loc["b", "finish_time"] == 60.0
    assert done.loc["a", "finish_time"] == 310.0 and done.loc["a", "preemptions"] == 1
    assert times(result, "a", "preempt") == [50.0]
    assert result.summary()["scheduling_calls"] == 5


def test_a_multi_gpu_job_is_demoted_when_the_authors_check_it():
    """Default: the demotion check is planned from the job's run seconds, as the authors'
    simulator does, so a 2-GPU job that ran before an event is demoted after its crossing."""
    # Threshold 100 GPU-s. a (2 GPUs) from 0: the check is planned at (100 − 0) / 2 = 50;
    # b's arrival at 40 is an event that replans it at 40 + (100 − 40 run seconds) / 2 = 70
    # (a crossed 100 GPU-s at 50). At 70 a drops to Q1 and b preempts it: b 70→80, a
    # resumes at 80 with 230 s left → 310.
    result = dlsched.simulate(
        jobs(("a", 0, 2, 300.0), ("b", 40, 2, 10.0)), gpus(2), "tiresias", thresholds=[100]
    )
    assert times(result, "a", "preempt") == [70.0]
    done = table(result)
    assert done.loc["b", "finish_time"] == 80.0 and done.loc["a", "finish_time"] == 310.0


def test_a_one_gpu_job_is_demoted_at_its_crossing():
    """Default: for one GPU the authors' check time is the exact crossing."""
    # Threshold 100 GPU-s; a (1 GPU) from 0; b arrives at 40 (replans: 40 + 60 = 100).
    result = dlsched.simulate(
        jobs(("a", 0, 1, 300.0), ("b", 40, 1, 10.0)), gpus(1), "tiresias", thresholds=[100]
    )
    assert times(result, "a", "preempt") == [100.0]


def test_a_new_job_preempts_a_demoted_one():
    """A fresh job (Q0) preempts a job already demoted to Q1."""
    # a demoted at 100; b arrives at 150 and preempts it: b 150→200, a 200→350.
    result = table(
        dlsched.simulate(
            jobs(("a", 0, 1, 300.0), ("b", 150, 1, 50.0)), gpus(1), "tiresias", thresholds=[100]
        )
    )
    assert result.loc["b", "finish_time"] == 200.0
    assert result.loc["a", "finish_time"] == 350.0


def test_a_job_that_started_first_is_not_preempted_by_a_bigger_one_of_its_queue():
    """FIFO within a queue is by start time: a small job that started while a bigger one
    waited keeps its GPUs when GPUs free up, and the big one waits for room."""
    # 4 GPUs. a (2 GPUs, 100 s) from 0; big (4 GPUs, 10 s) arrives at 1 and waits; s
    # (2 GPUs, 200 s) arrives at 2, fits beside a and starts. At 100 a ends: big, never
    # started, ranks behind s (started at 2), so it waits for s to end at 202 instead of
    # preempting it (FIFO by arrival would preempt s at 100).
    result = table(
        dlsched.simulate(
            jobs(("a", 0, 2, 100.0), ("big", 1, 4, 10.0), ("s", 2, 2, 200.0)), gpus(4), "tiresias"
        )
    )
    assert result["preemptions"].sum() == 0
    assert result.loc["s", "start_time"] == 2.0
    assert result.loc["big", "start_time"] == 202.0


def test_literal_starvation_knob_promotes_a_waiting_job():
    """literal, knob 1: a job waiting in Q1 returns to Q0 after waiting as long as it last
    ran, and ranks there by first start."""
    # Threshold 100 GPU-s, one GPU. a (1000 s) runs 0→150 (demoted to Q1 at 100) and is
    # preempted by b1 (Q0, 90 s) at 150. b2 arrives at 240, b3 at 330 (90 s each).
    # Knob 1: a is promoted at 150 + 1×150 = 300; in Q0 it ranks first (it first started at
    # 0, b2 at 240), so it preempts b2 at 300. Its service restarts: demoted again at 400,
    # when b2 resumes (400→430) and b3 follows (430→...). a waited 400→500 after running
    # 100 s: promoted at 500, it preempts b3; demoted at 600, b3 finishes 600→620, a resumes
    # at 620 with 1000 − 350 = 650 s left → 1270.
    # Without the knob a waits for b1, b2, b3 and restarts once, at 420 → 1270.
    trace = jobs(
        ("a", 0, 1, 1000.0), ("b1", 150, 1, 90.0), ("b2", 240, 1, 90.0), ("b3", 330, 1, 90.0)
    )
    result = dlsched.simulate(
        trace, gpus(1), "tiresias", thresholds=[100], starvation_knob=1.0, literal=True
    )
    assert times(result, "a", "restart") == [300.0, 500.0, 620.0]
    assert times(result, "b2", "preempt") == [300.0]
    assert table(result).loc["b3", "finish_time"] == 620.0
    result = dlsched.simulate(trace, gpus(1), "tiresias", thresholds=[100], literal=True)
    assert times(result, "a", "restart") == [420.0]
    assert table(result).loc["a", "finish_time"] == 1270.0


def test_a_promoted_job_joins_the_back_of_the_top_queue():
    """Default, knob 1: a job promoted at 300 waits behind the job running in Q0 (b2), which
    it does not preempt, and runs before b3, which joined Q0 after it."""
    # As in the literal test: a is promoted at 300 (first ran at 0, ran 150 s since: 0 + 2 ×
    # 150). b2 (running since 240) keeps its GPU; a runs 330→430 (demoted after 100 GPU-s
    # since its promotion), b3 (arrived at 330, behind a) preempts it then: 430→520. a
    # waited 430→520 after running 100 s since it first ran (330) after its promotion: due
    # at 330 + 2 × 100 = 530, but the GPU frees at 520: a resumes then, 750 s left → 1270.
    trace = jobs(
        ("a", 0, 1, 1000.0), ("b1", 150, 1, 90.0), ("b2", 240, 1, 90.0), ("b3", 330, 1, 90.0)
    )
    result = dlsched.simulate(trace, gpus(1), "tiresias", thresholds=[100], starvation_knob=1.0)
    assert times(result, "a", "restart") == [330.0, 520.0]
    assert times(result, "b2", "preempt") == []
    assert table(result).loc["a", "finish_time"] == 1270.0


def test_the_starvation_knob_counts_waiting_since_the_first_run_in_the_top_queue():
    """Default, knob 1: promotion once the waiting time since the job first ran (after
    entering Q0) reaches its run time since then — not its last wait against its last run."""
    # Threshold 100 GPU-s, one GPU. a (1000 s) runs 0→150 (Q1 from 100); b1 (90 s) preempts
    # it 150→240; a resumes 240→260 and b2 (90 s) preempts it. a ran 170 s and waited 90 s
    # since 0: promoted when 90 + (t − 260) = 170, at 340 — behind b3 (arrived at 300): b3
    # runs 350→440 after b2, then a. Read literally (waited 20 s, the last run) a would be
    # promoted at 280, ahead of b3.
    trace = jobs(
        ("a", 0, 1, 1000.0), ("b1", 150, 1, 90.0), ("b2", 260, 1, 90.0), ("b3", 300, 1, 90.0)
    )
    result = dlsched.simulate(trace, gpus(1), "tiresias", thresholds=[100], starvation_knob=1.0)
    assert times(result, "a", "restart") == [240.0, 440.0]
    assert table(result).loc["b3", "start_time"] == 350.0


# ---- 2D-Gittins --------------------------------------------------------------------------
def test_gittins_index_by_hand():
    """G(a) = P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a] on four samples."""
    index = GittinsIndex([10, 20, 30, 1000], delta=15)
    assert index(0) == pytest.approx(0.25 / ((10 + 15 + 15 + 15) / 4))
    assert index(10) == pytest.approx((1 / 3) / ((10 + 15 + 15) / 3))
    assert index(1000) == 0.0
    assert list(index.many(pd.Series([0.0, 10.0, 1000.0]).to_numpy())) == [
        index(0),
        index(10),
        index(1000),
    ]


def test_gittins_keeps_a_job_likely_to_finish_soon():
    """literal (the paper's formula): within a queue, the job whose service makes completion
    likelier soon runs first."""
    # Prior: jobs take 100 or 10,000 GPU-s; Δ = 50. c has 60 GPU-s when d arrives:
    # P(S ≤ 110 | S > 60) = 1/2 → index 0.5 / 45 > 0; a new job: P(S ≤ 50) = 0 → index 0.
    # So c is not preempted by d.
    policy = dlsched.policies.get(
        "tiresias-gittins", thresholds=[1e6], delta=50, prior=[100, 10_000], literal=True
    )
    result = table(dlsched.simulate(jobs(("c", 0, 1, 100.0), ("d", 60, 1, 100.0)), gpus(1), policy))
    assert result.loc["c", "finish_time"] == 100.0
    assert result.loc["d", "start_time"] == 100.0


def test_gittins_preempts_a_job_past_the_likely_short_sizes():
    """literal (the paper's formula): a running job whose service passed the short sizes of
    the prior is preempted by a new job; 2D-LAS, FIFO within the queue, would not."""
    # Prior 100 or 10,000 GPU-s, Δ = 150. New job: P(S ≤ 150) = 1/2, E[min(S, 150)] = 125 →
    # index 0.004. x (2 GPUs) has 240 GPU-s at t=120: P(S ≤ 390 | S > 240) = 0 → index 0.
    # y (2 GPUs, 50 s) arriving at 120 preempts x: y 120→170, x resumes → 170 + 180 = 350.
    trace = jobs(("x", 0, 2, 300.0), ("y", 120, 2, 50.0))
    gittins = dlsched.policies.get(
        "tiresias-gittins", thresholds=[1e6], delta=150, prior=[100, 10_000], literal=True
    )
    result = table(dlsched.simulate(trace, gpus(2), gittins))
    assert result.loc["y", "finish_time"] == 170.0 and result.loc["x", "finish_time"] == 350.0
    las = table(dlsched.simulate(trace, gpus(2), "tiresias", thresholds=[1e6]))
    assert las.loc["x", "finish_time"] == 300.0 and las.loc["y", "finish_time"] == 350.0


# ---- the authors' simulator (compat=True) --------------------------------------------------
def test_compat_times_demotions_as_the_authors_simulator():
    """compat: the next queue jump is ⌊(threshold − run seconds) / GPUs⌋ after now."""
    # Threshold 102 GPU-s; a: 4 GPUs from 0; b (4 GPUs) arrives at 10 and waits behind it
    # in Q0. Paper: a crosses 102 GPU-s at t = 25.5 and b preempts it then. The authors'
    # simulator counts run seconds in that formula: at 0 it plans a jump at ⌊102/4⌋ = 25;
    # b's arrival at 10 replans it to 10 + ⌊(102 − 10)/4⌋ = 33 (25 is no longer an event);
    # at 33, a has 4 × 33 = 132 ≥ 102 GPU-s and is demoted: b starts at 33.
    trace = jobs(("a", 0, 4, 200.0), ("b", 10, 4, 10.0))
    literal = table(dlsched.simulate(trace, gpus(4), "tiresias", thresholds=[102], literal=True))
    compat = table(dlsched.simulate(trace, gpus(4), "tiresias", thresholds=[102], compat=True))
    default = table(dlsched.simulate(trace, gpus(4), "tiresias", thresholds=[102]))
    assert literal.loc["b", "start_time"] == 25.5
    assert compat.loc["b", "start_time"] == 33.0
    assert default.loc["b", "start_time"] == 33.0  # the same check, in continuous time


def test_authors_table_reproduces_their_arithmetic():
    """The authors' tabulated index, by hand: samples S not S − a, their off-by-one at the
    top, Python 2 floor division of the expected service and round-half-away-from-zero."""
    # Samples 100, 201, 300; Δ = 150. Entry for 100 (a = 99): alive from index 0, a + Δ =
    # 249 → 2 samples within: p = round(2/3, 5) = 0.66667; e = (100 + 201 + 150·1) // 3 =
    # 451 // 3 = 150 (not 150.33); index = round(0.66667e6 / 150, 4) = 4444.4667.
    # Entry for 201 (a = 200): a + Δ = 350 > 299 → the simulator takes index 2 (not 3):
    # p = (2 − 1)/(3 − 1) = 0.5; e = (201 + 150) // 2 = 175; 0.5e6 / 175 = 2857.1429.
    # Entry for 300 (a = 299): p = 0 → 0. Past the largest sample: 0.
    authors = AuthorsGittinsTable([100, 201, 300], delta=150)
    assert authors.table == [4444.4667, 2857.1429, 0.0, 0.0]
    assert authors(0) == authors(99) == 4444.4667
    assert authors(100) == 2857.1429 and authors(5000) == 0.0
    assert _py2_round(0.015625, 5) == 0.01563  # Python 3's round() gives 0.01562


# ---- placement -----------------------------------------------------------------------------
def test_yarn_placement_is_first_fit_and_waits_for_consolidation():
    """YARN-CS: one node if the job fits on one (first fit), else whole free nodes plus one;
    None while that is impossible even if enough GPUs are free across nodes."""
    cluster = gpus(4, nodes=3)
    ledger = Ledger(cluster)
    pool = ("p100", None)
    ledger.take(0, (0,))  # node 0: 3 free; nodes 1, 2: 4 free
    assert yarn(ledger, 2, pool) == (1, 2)  # first node with 2 free, not the emptiest
    assert yarn(ledger, 6, pool) == (1, 2, 4, 5, 6, 7)  # node 1 whole + 2 on node 0
    ledger.take(1, (4, 8))  # nodes: 3, 3, 3 free
    assert yarn(ledger, 4, pool) is None  # 9 GPUs free, no node with 4
    assert yarn(ledger, 3, pool) == (1, 2, 3)


def test_fifo_with_yarn_placement_waits_for_a_single_node():
    """fifo(placement="yarn") holds a 2-GPU job until one node has 2 free GPUs."""
    # 2 nodes × 4 GPUs. a and b (3 GPUs each) take one node each, leaving 1 free per node.
    # c (2 GPUs) spreads over the two at t=0 with the default placement; with YARN it waits
    # for a to finish at 100.
    trace = jobs(("a", 0, 3, 100.0), ("b", 0, 3, 200.0), ("c", 0, 2, 10.0))
    spread = table(dlsched.simulate(trace, gpus(4, nodes=2), "fifo"))
    assert spread.loc["c", "start_time"] == 0.0
    strict = table(dlsched.simulate(trace, gpus(4, nodes=2), "fifo", placement="yarn"))
    assert strict.loc["c", "start_time"] == 100.0


def test_consolidation_aware_placement_with_measured_spread_throughput():
    """A placement-sensitive model waits for a whole node; others spread and run at Gavel's
    measured unconsolidated rate; spreading the sensitive one would cost it throughput."""
    # 2 nodes × 4 V100. Eight 1-GPU fillers fill both nodes; f1, f2 (node 0) and f5, f6
    # (node 1) end at 10, leaving 2 free GPUs per node; the others end at 1000. At 20 a 4-GPU
    # job arrives. Transformer (bs 64) runs at 0.538× when spread (Gavel): sensitive, it
    # waits for node 0 to empty at 1000 and runs 100 s → 1100. ResNet-50 (bs 64) is measured
    # *faster* spread (1.178×): it starts at 20 and takes 100 / 1.178 s. With best-fit for
    # everyone the transformer spreads at 20 and takes 100 / 0.538 s.
    fillers = [
        (f"f{i}", 0, 1, 10.0 if i in (1, 2, 5, 6) else 1000.0, "resnet-50 (batch size 64)")
        for i in range(1, 9)
    ]
    cluster = gpus(4, nodes=2, gpu_type="V100")
    transformer = (*fillers, ("t", 20, 4, 100.0, "transformer (batch size 64)"))
    resnet = (*fillers, ("r", 20, 4, 100.0, "resnet-50 (batch size 64)"))
    aware = table(
        dlsched.simulate(model_jobs(*transformer), cluster, "tiresias", throughput="gavel")
    )
    assert aware.loc["t", "start_time"] == pytest.approx(1000.0)
    assert aware.loc["t", "finish_time"] == pytest.approx(1100.0)
    spread_ok = table(
        dlsched.simulate(model_jobs(*resnet), cluster, "tiresias", throughput="gavel")
    )
    assert spread_ok.loc["r", "start_time"] == 20.0
    assert spread_ok.loc["r", "finish_time"] == pytest.approx(20 + 100 / 1.178, rel=1e-3)
    forced = table(
        dlsched.simulate(
            model_jobs(*transformer), cluster, "tiresias", throughput="gavel", placement="best_fit"
        )
    )
    assert forced.loc["t", "start_time"] == 20.0
    assert forced.loc["t", "finish_time"] == pytest.approx(20 + 100 / 0.538, rel=1e-3)


def test_parameters_are_checked():
    """Bad thresholds, placements and knobs are refused with the accepted values."""
    with pytest.raises(ValueError, match="increasing"):
        dlsched.policies.get("tiresias", thresholds=[100, 50])
    with pytest.raises(ValueError, match="yarn"):
        dlsched.policies.get("tiresias", placement="nowhere")
    with pytest.raises(ValueError, match="starvation_knob"):
        dlsched.policies.get("tiresias-gittins", starvation_knob=0)


# ---- the incremental scheduler -------------------------------------------------------------
def _full_walk(policy_class):
    """The same policy, walking the whole priority order at every scheduling call."""

    class FullWalk(policy_class):
        def _fast_admit(self, view, now, cache):
            free = {pool: self._capacity[pool] - sum(counts) for pool, counts in self._held.items()}
            return [], (0, (-float("inf"),), free)

    return FullWalk


@pytest.mark.parametrize(
    "name, knob",
    [("tiresias", None), ("tiresias-gittins", None), ("tiresias", 2.0), ("tiresias-gittins", 2.0)],
)
def test_admitting_into_free_gpus_first_gives_the_walk_s_answer(name, knob):
    """The fast path (admit into free GPUs, walk only from where a waiting job could take a
    lower-priority job's GPUs) decides exactly what the full priority walk decides."""
    rng = np.random.default_rng(7)
    n = 200
    trace = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_time": np.cumsum(rng.exponential(120.0, n)).round(),
            "num_gpus": rng.choice([1, 1, 1, 2, 4, 8], n),
            "duration": (60 * 10 ** rng.uniform(0.5, 2, n)).round(),
            "vc": rng.choice(np.array(["a", None], dtype=object), n),  # None: the shared pool
        }
    )
    cluster = Cluster.from_dict(
        {
            "name": "two-types",
            "nodes": [
                {"gpu_type": "P100", "count": 3, "gpus_per_node": 4},
                {"gpu_type": "V100", "count": 2, "gpus_per_node": 8},
            ],
            "vcs": [{"name": "a", "nodes": 2}],
        }
    )
    policy_class = {"tiresias": Tiresias, "tiresias-gittins": TiresiasGittins}[name]
    params = {"thresholds": [500, 3000], "starvation_knob": knob}
    fast = dlsched.simulate(trace, cluster, policy_class(**params))
    full = dlsched.simulate(trace, cluster, _full_walk(policy_class)(**params))
    assert fast.jobs["preemptions"].sum() > 0
    pd.testing.assert_frame_equal(fast.jobs, full.jobs)


# ---- lifecycle -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["tiresias", "tiresias-gittins"])
@pytest.mark.parametrize("compat", [False, True])
def test_one_instance_serves_two_identical_runs(name, compat):
    """The same instance run twice (preemptions, a starvation knob) gives identical results,
    equal to a fresh instance's."""
    rng = np.random.default_rng(5)
    n = 40
    trace = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_time": np.cumsum(rng.exponential(60.0, n)).round(),
            "num_gpus": rng.choice([1, 2, 4], n),
            "duration": (60 * 10 ** rng.uniform(0.5, 2, n)).round(),
        }
    )
    params = {"thresholds": [300, 2000], "starvation_knob": 2.0, "compat": compat}
    policy = dlsched.policies.get(name, **params)
    first = dlsched.simulate(trace, gpus(4, nodes=2), policy)
    second = dlsched.simulate(trace, gpus(4, nodes=2), policy)
    assert first.jobs["preemptions"].sum() > 0
    assert first.jobs.equals(second.jobs) and first.events.equals(second.events)
    fresh = dlsched.simulate(trace, gpus(4, nodes=2), dlsched.policies.get(name, **params))
    assert first.jobs.equals(fresh.jobs)


# ---- the two algorithms behind one name --------------------------------------------------
@pytest.mark.parametrize(
    "name, paper, authors",
    [
        ("tiresias", Tiresias, AuthorsTiresias),
        ("tiresias-gittins", TiresiasGittins, AuthorsTiresiasGittins),
    ],
)
def test_compat_picks_the_authors_simulator_replica(name, paper, authors):
    """get(name) is the paper's algorithm, get(name, compat=True) the simulator's replica,
    both reporting the registered name."""
    default, replica = dlsched.policies.get(name), dlsched.policies.get(name, compat=True)
    assert type(default) is paper and type(replica) is authors
    assert default.name == replica.name == name


def test_the_registered_names_list_every_parameter():
    """`dlsched policies` sees the full signature, compat included, with defaults."""
    params = dlsched.policies.registry.parameters("tiresias-gittins")
    assert list(params) == [
        "thresholds",
        "starvation_knob",
        "placement",
        "compat",
        "sensitive_slowdown",
        "delta",
        "prior",
        "literal",
    ]
    assert params["compat"].default is False and params["delta"].default == 3250.0
    assert "compat" in dlsched.policies.registry.parameters("tiresias")


def test_compat_checks_the_same_parameters():
    """The replica refuses what the paper mode refuses (a bad slowdown, Δ, prior or knob)."""
    with pytest.raises(ValueError, match="sensitive_slowdown"):
        dlsched.policies.get("tiresias", compat=True, sensitive_slowdown=1.5)
    with pytest.raises(ValueError, match="delta"):
        dlsched.policies.get("tiresias-gittins", compat=True, delta=0)
    with pytest.raises(ValueError, match="prior"):
        dlsched.policies.get("tiresias-gittins", prior=[])
    with pytest.raises(ValueError, match="starvation_knob"):
        dlsched.policies.get("tiresias", compat=True, starvation_knob=-1)
    with pytest.raises(ValueError, match="choose one"):
        dlsched.policies.get("tiresias-gittins", compat=True, literal=True)
