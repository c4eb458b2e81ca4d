"""Gandiva (Xiao et al., OSDI 2018): affinity placement, time-slicing, packing with
introspection, migration and grow-shrink — known answers worked out by hand, and invariants.

Unless a test says otherwise, the policy's default overheads apply (the `gandiva` preset:
1 s per resume, 4 s per migration or re-scaling; a job's very first start is free)."""

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.overheads import OverheadModel
from dlsched.policies.gandiva import Gandiva


class Table:
    """Truth for the tests: n GPUs on one node run n steps/s (perfect scaling), spread over
    several nodes half that; a job packed beside `other` runs `pairs[(model, other)]`."""

    name = "table"

    def __init__(self, pairs=None):
        self.pairs = pairs or {}

    def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
        if colocated:
            ((other, _),) = colocated
            return self.pairs.get((model, other), 0.0)
        return float(n_gpus) if n_nodes <= 1 else n_gpus / 2

    def reference_type(self, model):
        return None


class Recording(Gandiva):
    """Gandiva that remembers every job's GPUs after each scheduling call."""

    def start(self, view):
        super().start(view)
        self.placed = {}

    def schedule(self, view):
        alloc = super().schedule(view)
        for job in alloc:
            self.placed.setdefault(job, alloc[job])
        return alloc


def cluster(nodes=1, gpus_per_node=2):
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [{"gpu_type": "V100", "gpus_per_node": gpus_per_node, "count": nodes}],
        }
    )


def jobs(*rows, columns=("job_id", "submit_time", "num_gpus", "total_steps", "model")):
    return pd.DataFrame([dict(zip(columns, row, strict=False)) for row in rows])


def finish_times(result):
    return result.jobs.set_index("job_id")["finish_time"].to_dict()


def events(result, kind):
    """(time, job) of each event of a kind, with its overhead for starts, moves, rescales."""
    rows = result.events[result.events["event"] == kind]
    if kind == "preempt":
        return [(row.time, row.job_id) for row in rows.itertuples()]
    return [(row.time, row.job_id, row.overhead_s) for row in rows.itertuples()]


def test_gandiva_is_registered_with_its_overhead_preset():
    policy = dlsched.policies.get("gandiva")
    assert policy.round_s == 60.0
    assert policy.default_overheads == dlsched.overheads.make_overheads("gandiva")


def test_time_slicing_three_jobs_on_two_gpus():
    """A, B, C (150, 160, 150 s of work, duration replay) arrive together at a 2-GPU server.
    A and B start; C over-subscribes the server. Each quantum (60 s) the waiting job
    displaces the one that has run longest since it last resumed (ties: submit order);
    a resume costs 1 s, C's first start nothing.
      t=60:  A (60 done) suspended, C starts.
      t=120: B (120 done) suspended, A resumes: progress from 121.
      t=180: C (120 done) suspended, B resumes: progress from 181.
      A needs 90 more: done at 211; its GPU goes to C at once: progress from 212, done 242.
      B needs 40 more: done at 221. (Under FIFO: 150, 160, 300.)"""
    work = jobs(("A", 0, 1, 150), ("B", 0, 1, 160), ("C", 0, 1, 150))
    result = dlsched.simulate(work, cluster(), "gandiva")
    assert finish_times(result) == pytest.approx({"A": 211.0, "B": 221.0, "C": 242.0})
    assert events(result, "preempt") == [(60.0, "A"), (120.0, "B"), (180.0, "C")]
    assert events(result, "restart") == [(120.0, "A", 1.0), (180.0, "B", 1.0), (211.0, "C", 1.0)]


def test_time_slicing_without_switch_cost_when_the_user_says_so():
    """The caller's overheads win over the policy's preset: the same rotation with free
    resumes ends A at 210, B at 220 and C at 240."""
    work = jobs(("A", 0, 1, 150), ("B", 0, 1, 160), ("C", 0, 1, 150))
    result = dlsched.simulate(work, cluster(), "gandiva", overheads="none")
    assert finish_times(result) == pytest.approx({"A": 210.0, "B": 220.0, "C": 240.0})


def test_a_resume_as_long_as_a_quantum_still_lets_jobs_advance():
    """Resumes cost 60 s, a whole quantum: a job is suspended only once it has progressed
    (it used to be suspended at the quantum its overhead filled, forever: a hang).
      t=0:   A, B start (first starts are free).
      t=60:  A (60 done) suspended, C starts.
      t=120: B (120 done) suspended, A resumes: progress from 180.
      t=180: C (120 done) suspended; A has had 60 s but no progress, so it stays. B resumes:
             progress from 240.
      t=240: A (120 done) suspended, C resumes: progress from 300; B has no progress yet.
      B needs 40: done at 280, its GPU goes to A: progress from 340, 30 left, done 370.
      C needs 30 from 300: done 330."""
    work = jobs(("A", 0, 1, 150), ("B", 0, 1, 160), ("C", 0, 1, 150))
    result = dlsched.simulate(work, cluster(), "gandiva", restart_overhead_s=60)
    assert finish_times(result) == pytest.approx({"A": 370.0, "B": 280.0, "C": 330.0})
    assert events(result, "preempt") == [(60.0, "A"), (120.0, "B"), (180.0, "C"), (240.0, "A")]


def test_jobs_beyond_the_over_subscription_bound_queue():
    """One GPU, bound 2 jobs per GPU: A runs, B over-subscribes, C queues (100 s each).
    A and B alternate (B from 60 to 120; A resumes at 120, progress from 121, ends at 161).
    Then B resumes (ends at 162 + 40 = 202) and C joins the server as a waiting job; B has
    not had a quantum at t=180, so C starts only when B ends: 202 + 100 = 302."""
    work = jobs(("A", 0, 1, 100), ("B", 0, 1, 100), ("C", 0, 1, 100))
    result = dlsched.simulate(work, cluster(1, 1), "gandiva")
    assert finish_times(result) == pytest.approx({"A": 161.0, "B": 202.0, "C": 302.0})
    assert result.jobs.set_index("job_id").loc["C", "preemptions"] == 0


def test_packing_is_kept_when_the_pair_beats_time_slicing():
    """One GPU, A and B (200 steps, 1 step/s alone, 0.8 steps/s each when packed: normalised
    sum 1.6 > 1). B over-subscribes; at t=60 it is packed beside A instead of waiting.
    A: 60 steps alone, then 140 at 0.8 → done at 60 + 175 = 235. B: 140 steps by 235, then
    60 alone → done at 295. Introspection at t=120 keeps the pair: nobody is suspended."""
    truth = Table({("good", "good"): 0.8})
    work = jobs(("A", 0, 1, 200, "good"), ("B", 0, 1, 200, "good"))
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(1, 1), policy, throughput=truth)
    assert finish_times(result) == pytest.approx({"A": 235.0, "B": 295.0})
    assert events(result, "preempt") == []
    assert (policy.stats["packs"], policy.stats["unpacks"]) == (1, 0)


def test_packing_is_undone_when_the_pair_is_worse_than_time_slicing():
    """As above, but packed jobs run 0.4 steps/s each (sum 0.8 < 1), 100 steps each.
    t=60: B packed beside A. t=120: introspection sees 0.4 + 0.4 ≤ 1 and suspends B; the
    time-slice then gives the GPU to B (A has run 120 s): net, A is suspended (84 steps done)
    and B runs on alone (24 done). t=180: B (84 done) yields to A, which resumes at 181 and
    ends at 197; B resumes at 197, progress from 198, ends at 214. The pair is not retried."""
    truth = Table({("bad", "bad"): 0.4})
    work = jobs(("A", 0, 1, 100, "bad"), ("B", 0, 1, 100, "bad"))
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(1, 1), policy, throughput=truth)
    assert finish_times(result) == pytest.approx({"A": 197.0, "B": 214.0})
    assert (policy.stats["packs"], policy.stats["unpacks"]) == (1, 1)
    assert events(result, "preempt") == [(120.0, "A"), (180.0, "B")]


def test_a_pair_is_judged_once_both_jobs_show_progress():
    """Introspection measures progress. As in the packing test above, but a first start
    costs 100 s: A makes progress from 100, B (packed at 60) from 160. At t=120 B has shown
    no progress yet, so the pair is judged later; at t=180 both show 0.8 steps/s (sum
    1.6 > 1): kept. A: 200 steps at 0.8 from 100 → 350. B: 152 steps by 350, then 48
    alone → 398."""
    truth = Table({("good", "good"): 0.8})
    work = jobs(("A", 0, 1, 200, "good"), ("B", 0, 1, 200, "good"))
    policy = Gandiva()
    overheads = OverheadModel(first_start_s=100.0, restart_s=1.0, migration_s=4.0)
    result = dlsched.simulate(work, cluster(1, 1), policy, throughput=truth, overheads=overheads)
    assert finish_times(result) == pytest.approx({"A": 350.0, "B": 398.0})
    assert (policy.stats["packs"], policy.stats["unpacks"]) == (1, 0)
    assert policy.stats["verdicts_deferred"] == 1


def test_one_instance_serves_two_identical_runs():
    """The same Gandiva passed to two runs (packing, time-slicing, migration) gives the same
    jobs, events and statistics as a fresh one."""
    truth = Table({("good", "good"): 0.8, ("bad", "bad"): 0.4})
    work = jobs(
        ("A", 0, 1, 300, "good"),
        ("B", 0, 1, 100, "bad"),
        ("C", 0, 1, 200, "good"),
        ("D", 10, 1, 200, "bad"),
        ("E", 20, 2, 150, "bad"),
        ("F", 30, 1, 100, "bad"),
    )
    policy = Gandiva(oversubscription=3)
    first = dlsched.simulate(work, cluster(2, 2), policy, throughput=truth)
    first_stats = dict(policy.stats)
    second = dlsched.simulate(work, cluster(2, 2), policy, throughput=truth)
    assert first.jobs.equals(second.jobs) and first.events.equals(second.events)
    assert dict(policy.stats) == first_stats
    assert first_stats["packs"] and first_stats["unpacks"] and first_stats["switches"]
    fresh = dlsched.simulate(work, cluster(2, 2), Gandiva(oversubscription=3), throughput=truth)
    assert first.jobs.equals(fresh.jobs)


def test_a_new_gandiva_holds_only_its_parameters():
    """Per-run state is built in start(view): the constructor stores parameters only."""
    assert set(vars(Gandiva())) == {
        "quantum_s",
        "round_s",
        "oversubscription",
        "packing",
        "pack_threshold",
        "migration",
        "grow_shrink",
    }


def test_a_packed_guest_moves_to_a_gpu_that_frees_up():
    """Two GPUs, pair rate 0.8 each. A (300 steps) and B (100) start; C (200) waits and at
    t=60 is packed beside A (the longest-running partner). B ends at 100; C migrates to its
    GPU at once (4 s): C did 32 steps packed, runs alone from 104, ends at 104 + 168 = 272.
    A did 60 + 32 by 100, then runs alone: ends at 100 + 208 = 308."""
    truth = Table({("good", "good"): 0.8})
    work = jobs(("A", 0, 1, 300, "good"), ("B", 0, 1, 100, "good"), ("C", 0, 1, 200, "good"))
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(1, 2), policy, throughput=truth)
    assert finish_times(result) == pytest.approx({"A": 308.0, "B": 100.0, "C": 272.0})
    assert events(result, "migrate") == [(100.0, "C", 4.0)]


def test_a_packed_pair_takes_its_turn_together():
    """One GPU over-subscribed three times (oversubscription=3), long jobs that pack well.
    t=60: B is packed beside A; C keeps waiting (the pair has not had a quantum yet).
    t=120: the pair is kept, and has had its quantum: A and B yield together, C starts.
    t=180: A, the longest-waiting, is packed beside C (resume: 1 s)."""
    truth = Table({("good", "good"): 0.8})
    work = jobs(*[(name, 0, 1, 1000, "good") for name in "ABC"])
    policy = Gandiva(oversubscription=3)
    result = dlsched.simulate(work, cluster(1, 1), policy, throughput=truth)
    log = result.events[result.events["event"].isin(["start", "restart", "preempt"])]
    first = [(row.time, row.event, row.job_id) for row in log.itertuples() if row.time <= 180]
    assert first == [
        (0.0, "start", "A"),
        (60.0, "start", "B"),
        (120.0, "preempt", "A"),
        (120.0, "preempt", "B"),
        (120.0, "start", "C"),
        (180.0, "restart", "A"),
    ]


def test_profiled_packing_never_tries_a_pair_predicted_to_lose():
    """`packing="profiled"` consults the predicted pair rates first (Gavel's version): the
    bad pair is never packed, so A and B plainly time-slice."""
    truth = Table({("bad", "bad"): 0.4})
    work = jobs(("A", 0, 1, 100, "bad"), ("B", 0, 1, 100, "bad"))
    policy = Gandiva(packing="profiled")
    dlsched.simulate(work, cluster(1, 1), policy, throughput=truth)
    assert policy.stats["packs"] == 0 and policy.stats["switches"] > 0


def test_no_packing_without_measured_pairs():
    """Duration replay knows no pairs (memory fit unknown): two jobs on one GPU time-slice.
    A: 0–60 and 121–161 (resume at 120 + 1 s) → 100 done at 161; B: 60–120, then its
    resume at 161 (+1 s) → done at 202."""
    work = jobs(("A", 0, 1, 100), ("B", 0, 1, 100))
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(1, 1), policy)
    assert finish_times(result) == pytest.approx({"A": 161.0, "B": 202.0})
    assert policy.stats["packs"] == 0


def test_affinity_places_jobs_by_size():
    """Three 4-GPU servers; 2-, 1-, 2-, 1-, 2-GPU jobs arrive in that order. Server 0 takes
    affinity 2 (first job), server 1 affinity 1 (the 1-GPU job finds no affinity-1 server,
    takes an empty one), the second 2-GPU job joins server 0, the second 1-GPU job server 1,
    and the third 2-GPU job, finding server 0 full, takes empty server 2 — where a
    fullest-node placer would have mixed sizes on servers 0 and 1."""
    work = jobs(*[(f"J{i}", 0, n, 1000) for i, n in enumerate([2, 1, 2, 1, 2], start=1)])
    policy = Recording()
    dlsched.simulate(work, cluster(3, 4), policy)
    assert policy.placed == {"J1": (0, 1), "J2": (4,), "J3": (2, 3), "J4": (5,), "J5": (8, 9)}


def test_over_subscription_goes_to_a_server_of_the_jobs_affinity():
    """Two 2-GPU servers: server 0 runs two 1-GPU jobs (affinity 1), server 1 a 2-GPU job
    (affinity 2). A third 1-GPU job over-subscribes server 0 and time-slices there, never
    touching server 1: the 2-GPU job finishes undisturbed at 500."""
    work = jobs(("A", 0, 1, 300), ("B", 0, 1, 300), ("W", 0, 2, 500), ("C", 1, 1, 300))
    policy = Recording()
    result = dlsched.simulate(work, cluster(2, 2), policy)
    assert policy.placed["W"] == (2, 3)
    assert policy.placed["C"] in {(0,), (1,)}
    assert finish_times(result)["W"] == pytest.approx(500.0)
    assert result.jobs.set_index("job_id").loc["W", "preemptions"] == 0


def test_migration_consolidates_a_spread_job_and_is_charged():
    """Two 2-GPU servers. A (10 s) and B (30 s) fill server 0, C (long) starts on server 1.
    At t=20 D (2 GPUs, 200 steps) finds no server with two free GPUs and is spread over
    servers 0 and 1 (1 step/s: spread runs at half speed). B ends at 30; at the introspection
    at t=60 D (40 steps done) migrates onto server 0, pays 4 s, and runs at 2 steps/s from 64:
    done at 64 + 160 / 2 = 144."""
    work = jobs(("A", 0, 1, 10), ("B", 0, 1, 30), ("C", 0, 1, 1000), ("D", 20, 2, 200))
    policy = Recording()
    result = dlsched.simulate(work, cluster(2, 2), policy, throughput=Table())
    assert policy.placed["D"] == (0, 3)
    assert finish_times(result)["D"] == pytest.approx(144.0)
    assert events(result, "migrate") == [(60.0, "D", 4.0)]
    assert policy.stats["consolidations"] == 1


def test_defragmentation_moves_a_small_job_to_consolidate_a_spread_one():
    """Three 2-GPU servers each run a short and a 100-step 1-GPU job; the short ones end at
    10. D (2 GPUs, 200 steps) arrives at 20 and is spread over servers 0 and 1 (1 step/s).
    At t=60 no server has room, so server 0 is defragmented: B moves to the free GPU of
    server 2 (4 s: 60 steps done, ends at 64 + 40 = 104) and D takes server 0 (4 s: 40
    steps done, ends at 64 + 160 / 2 = 144)."""
    work = jobs(
        ("A", 0, 1, 10),
        ("B", 0, 1, 100),
        ("C", 0, 1, 10),
        ("E", 0, 1, 100),
        ("F", 0, 1, 10),
        ("G", 0, 1, 100),
        ("D", 20, 2, 200),
    )
    policy = Recording()
    result = dlsched.simulate(work, cluster(3, 2), policy, throughput=Table())
    assert policy.placed["B"] == (1,) and policy.placed["D"] == (0, 2)
    assert finish_times(result)["D"] == pytest.approx(144.0)
    assert finish_times(result)["B"] == pytest.approx(104.0)
    assert events(result, "migrate") == [(60.0, "B", 4.0), (60.0, "D", 4.0)]
    assert policy.stats["defrag_moves"] == 1


def test_duration_replay_consolidates_into_free_gpus_but_does_not_defragment():
    """The defragmentation scenario under duration replay: spreading costs nothing, so no job
    is moved for D at t=60. B, E and G end at 100; at t=120 D (100 steps done) moves onto a
    server with room (4 s; it defragments the cluster) and ends at 124 + 100 = 224."""
    work = jobs(
        ("A", 0, 1, 10),
        ("B", 0, 1, 100),
        ("C", 0, 1, 10),
        ("E", 0, 1, 100),
        ("F", 0, 1, 10),
        ("G", 0, 1, 100),
        ("D", 20, 2, 200),
    )
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(3, 2), policy)
    assert finish_times(result)["D"] == pytest.approx(224.0)
    assert events(result, "migrate") == [(120.0, "D", 4.0)]


def test_an_elastic_job_grows_on_idle_gpus_and_shrinks_when_a_job_waits():
    """One 4-GPU server, perfect scaling. E (elastic 1–4 GPUs, asks 1, 300 steps) is alone:
    at t=60 (60 steps done) it grows to 4 GPUs (4 s re-scaling; 240 / 1 − 240 / 4 = 180 s
    saved > 4 s): 4 steps/s from 64, 204 done at 100. F (1 GPU, 50 steps) arrives at 100
    and would wait: E shrinks to 1 GPU at once (4 s) and F starts (done at 150). At t=120
    E (220 done) grows onto the 2 idle GPUs: 3 steps/s from 124, done at 124 + 80 / 3."""
    work = pd.DataFrame(
        {
            "job_id": ["E", "F"],
            "submit_time": [0.0, 100.0],
            "num_gpus": [1, 1],
            "total_steps": [300.0, 50.0],
            "min_gpus": [1, np.nan],
            "max_gpus": [4, np.nan],
        }
    )
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(1, 4), policy, throughput=Table())
    assert finish_times(result) == pytest.approx({"E": 124 + 80 / 3, "F": 150.0})
    rescales = result.events[result.events["event"] == "rescale"]
    assert list(zip(rescales["time"], rescales["num_gpus"], strict=True)) == [
        (60.0, 4),
        (100.0, 1),
        (120.0, 3),
    ]
    assert (policy.stats["grows"], policy.stats["shrinks"]) == (2, 1)


def test_no_growing_when_more_gpus_do_not_help():
    """Under duration replay a job runs at the same speed on any count: E never grows."""
    work = pd.DataFrame(
        {
            "job_id": ["E"],
            "submit_time": [0.0],
            "num_gpus": [1],
            "duration": [300.0],
            "min_gpus": [1],
            "max_gpus": [4],
        }
    )
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(1, 4), policy)
    assert finish_times(result) == {"E": 300.0}
    assert policy.stats["grows"] == 0


def random_workload(seed, n=40, models=None, elastic=False):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "job_id": range(n),
            "submit_time": np.sort(rng.uniform(0, 1500, n)).round(1),
            "num_gpus": rng.choice([1, 1, 1, 2, 4, 8], n),
            "duration": rng.uniform(30, 900, n).round(1),
        }
    )
    if models is not None:
        frame["model"] = rng.choice(models, n)
    if elastic:
        frame["min_gpus"] = 1
        frame["max_gpus"] = np.minimum(frame["num_gpus"] * 2, 8)
    return frame


GAVEL_MODELS = [
    "ResNet-18 (batch size 32)",
    "ResNet-50 (batch size 64)",
    "LM (batch size 20)",
    "Transformer (batch size 32)",
]


@pytest.mark.parametrize(
    ("throughput", "models", "elastic"),
    [
        ("duration", None, False),
        ("duration", None, True),
        ("gavel", GAVEL_MODELS, False),
        ("gavel", GAVEL_MODELS, True),
    ],
)
def test_every_job_finishes_once_on_a_random_trace(throughput, models, elastic):
    """Overloaded random traces (40 jobs in 25 min on 12 GPUs, sizes up to a whole server),
    with the auditor on: every job finishes exactly once, after it arrived; the same seed
    gives the same result."""
    work = random_workload(7, models=models, elastic=elastic)
    hardware = dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [
                {"gpu_type": "V100", "gpus_per_node": 8},
                {"gpu_type": "V100", "gpus_per_node": 4},
            ],
        }
    )
    policy = Gandiva()
    result = dlsched.simulate(work, hardware, policy, throughput=throughput)
    table = result.jobs
    assert (table["status"] == "finished").all()
    assert (table["finish_time"] >= table["submit_time"]).all()
    finishes = result.events[result.events["event"] == "finish"]["job_id"]
    assert sorted(finishes) == list(range(len(work)))
    assert policy.stats["switches"] > 0
    if throughput == "duration":
        assert policy.stats["packs"] == 0 and policy.stats["grows"] == 0
    again = dlsched.simulate(work, hardware, "gandiva", throughput=throughput)
    assert again.jobs["finish_time"].tolist() == table["finish_time"].tolist()


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="packing"):
        Gandiva(packing="sometimes")
    with pytest.raises(ValueError, match="quantum_s"):
        Gandiva(quantum_s=0)
    with pytest.raises(ValueError, match="oversubscription"):
        Gandiva(oversubscription=0.5)


LUCID = (
    __import__("pathlib").Path(__file__).resolve().parents[2]
    / "shared"
    / "anchors"
    / "lucid_colocation"
    / "colocate_info.csv"
)


@pytest.mark.skipif(not LUCID.exists(), reason="needs ../shared/anchors/lucid_colocation")
def test_lucid_pair_speeds_let_gandiva_pack_a_duration_trace():
    """Two 200 s LSTM jobs on one GPU with Lucid's measured LSTM+LSTM slowdown s (the mean
    relative speed over every measured LSTM pair, both sides; ≈ 0.67, so 2s > 1): A runs
    alone to t=60, then both run at s; A ends at 60 + 140 / s, when B has done 140 s of
    work, and B ends 60 s later."""
    from dlsched.perf.colocation import LucidColocation

    table = pd.read_csv(LUCID, index_col=0)
    lstm = table[(table["model1"] == "LSTM") & (table["model2"] == "LSTM")]
    s = pd.concat([lstm["speed1"], lstm["speed2"]]).mean()
    assert 0.5 < s < 1
    truth = LucidColocation.from_csv(LUCID)
    assert truth.relative_speed("lstm", "LSTM") == pytest.approx(s)
    work = jobs(
        ("A", 0, 1, 200, "LSTM"),
        ("B", 0, 1, 200, "LSTM"),
        columns=("job_id", "submit_time", "num_gpus", "duration", "model"),
    )
    policy = Gandiva()
    result = dlsched.simulate(work, cluster(1, 1), policy, throughput=truth)
    end_a = 60 + 140 / s
    assert finish_times(result) == pytest.approx({"A": end_a, "B": end_a + 60})
    assert (policy.stats["packs"], policy.stats["unpacks"]) == (1, 0)


@pytest.mark.skipif(not LUCID.exists(), reason="needs ../shared/anchors/lucid_colocation")
def test_lucid_pairs_nobody_measured_do_not_fit():
    """BERT was profiled alone but never paired: it cannot share a GPU (rate 0), nor can
    2-GPU jobs (Lucid measured 1-GPU pairs only); alone, jobs run at the base rate."""
    from dlsched.perf.colocation import LucidColocation

    truth = LucidColocation.from_csv(LUCID)
    assert truth.throughput("BERT", "v100", 1, colocated=[("LSTM", 1)]) == 0.0
    assert truth.throughput("LSTM", "v100", 2, colocated=[("LSTM", 2)]) == 0.0
    assert truth.throughput("BERT", "v100", 1) == 1.0
    assert 0 < truth.throughput("VGG", "v100", 1, colocated=[("LSTM", 1)]) <= 1.0


def test_a_vc_job_waiting_on_a_server_starts_when_its_vc_quota_frees_elsewhere():
    """VC v has a quota of 2 GPUs; servers: V100 (2 GPUs), K80 (2 GPUs); duration replay.
    t=0: A takes the V100, B the K80, W (v) over-subscribes the V100 and waits there.
    t=5: B ends; t=6: H (v) starts on the empty K80, filling v's quota.
    t=20: A ends, but W may not take the V100: H holds v's quota.
    t=36: H ends off-round, freeing v's quota: W (first start, free) starts at once on the
    V100 and ends at 46 — before the fix it waited for ever, nothing else running."""
    hardware = dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [
                {"gpu_type": "V100", "gpus_per_node": 2, "count": 1},
                {"gpu_type": "K80", "gpus_per_node": 2, "count": 1},
            ],
            "vcs": [{"name": "v", "gpus": 2}],
        }
    )
    work = jobs(
        ("A", 0, 2, 20, None),
        ("B", 0, 2, 5, None),
        ("W", 0, 2, 10, "v"),
        ("H", 6, 2, 30, "v"),
        columns=("job_id", "submit_time", "num_gpus", "duration", "vc"),
    )
    result = dlsched.simulate(work, hardware, "gandiva", throughput="duration")
    assert finish_times(result) == pytest.approx({"A": 20.0, "B": 5.0, "W": 46.0, "H": 36.0})
    assert result.jobs.set_index("job_id").loc["W", "start_time"] == pytest.approx(36.0)
