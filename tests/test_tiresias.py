"""Tiresias (2D-LAS and 2D-Gittins): known answers worked by hand."""

import pandas as pd
import pytest

import dlsched
from dlsched.policies.tiresias import AuthorsGittinsTable, GittinsIndex


def jobs(*rows):
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration"])


def gpus(n):
    return dlsched.Cluster.from_dict({"name": "c", "nodes": [{"gpu_type": "P100",
                                                              "gpus_per_node": n}]})


def table(result):
    return result.jobs.set_index("job_id")


def test_demotion_happens_at_the_exact_crossing_time():
    """a (2 GPUs) crosses 100 GPU-s at t=50 and is demoted then, letting b run at once."""
    # Threshold 100 GPU-s. a: 2 GPUs from 0, reaches 100 GPU-s at t=50. b (2 GPUs, 10 s)
    # arrives at 40 behind a in Q0; at 50 a drops to Q1 and b preempts it: b 50→60;
    # a resumes at 60 with 250 s left → 310.
    result = table(dlsched.simulate(jobs(("a", 0, 2, 300.0), ("b", 40, 2, 10.0)), gpus(2),
                                    "tiresias", thresholds=[100]))
    assert result.loc["b", "start_time"] == 50.0 and result.loc["b", "finish_time"] == 60.0
    assert result.loc["a", "finish_time"] == 310.0 and result.loc["a", "preemptions"] == 1


def test_a_new_job_preempts_a_demoted_one():
    """A fresh job (Q0) preempts a job already demoted to Q1."""
    # a demoted at 100; b arrives at 150 and preempts it: b 150→200, a 200→350.
    result = table(dlsched.simulate(jobs(("a", 0, 1, 300.0), ("b", 150, 1, 50.0)), gpus(1),
                                    "tiresias", thresholds=[100]))
    assert result.loc["b", "finish_time"] == 200.0
    assert result.loc["a", "finish_time"] == 350.0


def test_starvation_knob_promotes_a_waiting_job():
    """With knob 1, a (preempted after 150 s of running) returns to Q0 after waiting 150 s."""
    # Threshold 100. a runs 0→150 (demoted at 100), preempted by b1 (90 s) at 150. b2 (240)
    # and b3 (330) keep Q0 busy. Knob 1: a is promoted at 150 + 1×150 = 300, queues behind
    # b2 (in Q0 since 240) and ahead of b3 (330): a restarts at 330. Without the knob a waits
    # for b3 too and restarts at 420.
    trace = jobs(("a", 0, 1, 1000.0), ("b1", 150, 1, 90.0), ("b2", 240, 1, 90.0),
                 ("b3", 330, 1, 90.0))
    for knob, restart in ((1.0, 330.0), (None, 420.0)):
        result = dlsched.simulate(trace, gpus(1), "tiresias", thresholds=[100],
                                  starvation_knob=knob)
        events = result.events
        restarts = events[(events["job_id"] == "a") & (events["event"] == "restart")]
        assert restarts["time"].iloc[0] == restart, knob


def test_gittins_index_by_hand():
    """G(a) = P(S − a ≤ Δ | S > a) / E[min(S − a, Δ) | S > a] on four samples."""
    index = GittinsIndex([10, 20, 30, 1000], delta=15)
    assert index(0) == pytest.approx(0.25 / ((10 + 15 + 15 + 15) / 4))
    assert index(10) == pytest.approx((1 / 3) / ((10 + 15 + 15) / 3))
    assert index(1000) == 0.0


def test_gittins_runs_the_higher_index_first():
    """Within a queue, the job whose service makes completion likelier soon runs first."""
    # Prior: jobs take 100 or 10,000 GPU-s. Δ = 50. A job with 60 GPU-s attained has index
    # P(done within 50 | S > 60) = 1/2 ... vs a new job: P(S ≤ 50) = 0 → index 0. So the job
    # with service (c, preempted at 60 by the arrival of d) outranks the new job d.
    policy = dlsched.policies.get("tiresias-gittins", thresholds=[1e6], delta=50,
                                  prior=[100, 10_000])
    trace = jobs(("c", 0, 1, 100.0), ("d", 60, 1, 100.0))
    result = table(dlsched.simulate(trace, gpus(1), policy))
    assert result.loc["c", "finish_time"] == 100.0  # c was not preempted by d
    assert result.loc["d", "start_time"] == 100.0


def test_authors_table_reproduces_their_roundings():
    """The authors' tabulated index: a step function over the prior, 0 past the last sample."""
    table_ = AuthorsGittinsTable([100, 200, 300], delta=150)
    assert table_(5000) == 0.0
    assert table_(0) == table_(99) == table_.table[0]
    assert table_(100) == table_.table[1]
