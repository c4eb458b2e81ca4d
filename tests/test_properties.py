"""Properties of every simulation (DESIGN §3) over random workloads and clusters.

Workloads and clusters: `strategies.scenarios` — 1–25 jobs, submit times 0–500 s with ties,
1–8 GPUs (never more than the cluster's largest GPU type has), durations 1–1000 s, integer
or text job ids, rows in any order; 1–4 node groups of V100/P100/K80 with 1–8 GPUs per
node. Throughput model `duration` (1 step/s), so a job's work in seconds is its duration on
any GPU. The same properties over every registered policy: `test_properties_policies.py`.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import scenarios

import dlsched

# The number of examples, the deadline and the health checks come from the hypothesis
# profile loaded by tests/conftest.py (the tier's, or the long run's DLSCHED_HYPOTHESIS_EXAMPLES).

# (policy, policy parameters, restart overhead in seconds)
CONFIGS = {
    "fifo": ("fifo", {}, 0.0),
    "fifo-greedy": ("fifo", {"backfill": "greedy"}, 0.0),
    "fifo-easy": ("fifo", {"backfill": "easy"}, 0.0),
    "sjf": ("sjf", {}, 0.0),
    "srtf": ("srtf", {}, 0.0),
    "srtf-overhead": ("srtf", {}, 7.5),
    "tiresias": ("tiresias", {"thresholds": [200, 2000], "starvation_knob": 2.0}, 0.0),
    "tiresias-overhead": ("tiresias", {"thresholds": [300]}, 5.0),
    "tiresias-gittins": ("tiresias-gittins", {"thresholds": [500]}, 0.0),
    "per-vc-srtf": ("per-vc", {"inner": "srtf"}, 0.0),
}

STARTS = ("start", "restart", "migrate")
STOPS = ("preempt", "finish")
TOL = {"rel": 1e-9, "abs": 1e-6}


def policies(overhead: bool = True) -> st.SearchStrategy[str]:
    """A key of CONFIGS (only those without restart overhead when `overhead` is False)."""
    return st.sampled_from([c for c, (_, _, cost) in CONFIGS.items() if overhead or not cost])


def run(config: str, jobs: pd.DataFrame, hardware: dlsched.Cluster, **kwargs):
    policy, params, overhead = CONFIGS[config]
    return dlsched.simulate(
        jobs, hardware, policy, restart_overhead_s=overhead, audit=True, **params, **kwargs
    )


def stints(events: pd.DataFrame) -> dict[object, list[tuple[float, float, float]]]:
    """job id → [(held from, held until, overhead)] replayed from the event log."""
    out: dict[object, list[tuple[float, float, float]]] = defaultdict(list)
    open_since: dict[object, tuple[float, float]] = {}
    for time, kind, job_id, overhead in zip(
        events["time"], events["event"], events["job_id"], events["overhead_s"], strict=True
    ):
        if kind in STOPS or kind == "migrate":
            since, cost = open_since.pop(job_id)
            out[job_id].append((since, time, cost))
        if kind in STARTS:
            open_since[job_id] = (time, overhead)
    assert not open_since, f"jobs still holding GPUs at the end: {sorted(map(str, open_since))}"
    return out


def instants(result: dlsched.SimulationResult, hardware: dlsched.Cluster):
    """Replay the event log: after each instant, (time, busy GPUs by type, capacity by type,
    GPUs wanted by each pending job). Within one instant a scheduling call lists its
    preemptions and starts by job, so only complete instants are meaningful."""
    capacity = {hardware.display_name(t): c for t, c in hardware.capacity_by_type().items()}
    busy = dict.fromkeys(capacity, 0)
    held: dict[object, tuple[str, int]] = {}
    pending: dict[object, int] = {}
    for time, group in result.events.groupby("time", sort=True):
        for kind, job_id, n, gpu_type in zip(
            group["event"], group["job_id"], group["num_gpus"], group["gpu_type"], strict=True
        ):
            if kind in STOPS or kind == "migrate":
                old_type, old_n = held.pop(job_id)
                busy[old_type] -= old_n
            if kind in ("submit", "preempt"):
                pending[job_id] = n
            if kind in STARTS:
                pending.pop(job_id, None)
                held[job_id] = (gpu_type, n)
                busy[gpu_type] += n
        yield time, busy, capacity, pending


# ---- lifecycle ------------------------------------------------------------------------------


@given(scenarios(), policies())
def test_every_job_finishes_exactly_once_and_never_early(scenario, config):
    """Each job has one submit and one finish event; submit ≤ start ≤ finish."""
    jobs, hardware = scenario
    result = run(config, jobs, hardware)
    events = result.events
    for kind in ("submit", "finish"):
        counts = events.loc[events["event"] == kind, "job_id"].value_counts()
        assert sorted(counts.index.map(str)) == sorted(jobs["job_id"].map(str))
        assert (counts == 1).all()
    table = result.jobs
    assert (table["status"] == "finished").all()
    assert (table["start_time"] >= table["submit_time"]).all()
    assert (table["finish_time"] >= table["start_time"]).all()
    assert events["time"].is_monotonic_increasing


@given(scenarios(), policies())
def test_jct_and_queueing_delay_are_measured_from_submit(scenario, config):
    """jct = finish − submit and queueing delay = first start − submit, for every job."""
    jobs, hardware = scenario
    table = run(config, jobs, hardware).jobs
    assert table["jct"].tolist() == (table["finish_time"] - table["submit_time"]).tolist()
    assert table["queueing_delay"].tolist() == (table["start_time"] - table["submit_time"]).tolist()


# ---- capacity -------------------------------------------------------------------------------


@given(scenarios(), policies())
def test_busy_gpus_never_exceed_capacity(scenario, config):
    """Replaying the event log, no GPU type is ever more than fully busy; nor in the timeline."""
    jobs, hardware = scenario
    result = run(config, jobs, hardware)
    for time, busy, capacity, _ in instants(result, hardware):
        assert all(0 <= busy[t] <= capacity[t] for t in capacity), (time, busy)
    for gpu_type, cap in hardware.capacity_by_type().items():
        assert result.timeline[hardware.display_name(gpu_type)].between(0, cap).all()


# ---- work conservation ----------------------------------------------------------------------


@given(scenarios(), policies(overhead=False))
def test_gpu_seconds_equal_gpus_times_duration_without_overhead(scenario, config):
    """No restart overhead: every job holds num_gpus GPUs for exactly its duration."""
    jobs, hardware = scenario
    table = run(config, jobs, hardware).jobs.set_index("job_id")
    by_id = jobs.set_index("job_id")
    expected = by_id["num_gpus"] * by_id["duration"]
    for job_id, gpu_seconds in table["gpu_seconds"].items():
        assert gpu_seconds == pytest.approx(expected[job_id], **TOL)


@given(scenarios())
def test_overhead_holds_gpus_without_progress(scenario):
    """With restart overhead o: each stint progresses only after its overhead, the progress
    adds up to the duration, and gpu_seconds = num_gpus × Σ time held."""
    jobs, hardware = scenario
    result = run("srtf-overhead", jobs, hardware)
    overhead = CONFIGS["srtf-overhead"][2]
    table = result.jobs.set_index("job_id")
    duration = jobs.set_index("job_id")["duration"]
    for job_id, parts in stints(result.events).items():
        held = sum(until - since for since, until, _ in parts)
        progress = sum(max(0.0, until - since - cost) for since, until, cost in parts)
        assert [cost for _, _, cost in parts] == [0.0] + [overhead] * (len(parts) - 1)
        assert progress == pytest.approx(duration[job_id], **TOL)
        assert table.at[job_id, "gpu_seconds"] == pytest.approx(
            table.at[job_id, "num_gpus"] * held, **TOL
        )


@given(scenarios())
def test_gpu_seconds_with_overhead_are_duration_plus_overheads_paid(scenario):
    """With overhead o: n·d ≤ gpu_seconds ≤ n·(d + o·(restarts + migrations)), with equality
    on the right unless a preemption cut an overhead short. (SRTF moves a preempted job at
    once when other GPUs are idle: a migration, which costs the restart overhead too.)"""
    jobs, hardware = scenario
    result = run("srtf-overhead", jobs, hardware)
    overhead = CONFIGS["srtf-overhead"][2]
    table = result.jobs.set_index("job_id")
    duration = jobs.set_index("job_id")["duration"]
    parts_by_job = stints(result.events)
    for job_id, row in table.iterrows():
        n, paid = row["num_gpus"], row["restarts"] + row["migrations"]
        full = n * (duration[job_id] + overhead * paid)
        cut_short = any(until - since < cost for since, until, cost in parts_by_job[job_id])
        assert n * duration[job_id] - 1e-6 <= row["gpu_seconds"] <= full + 1e-6
        if not cut_short:
            assert row["gpu_seconds"] == pytest.approx(full, **TOL)


@given(scenarios(), policies())
def test_gpu_seconds_equal_the_timeline_integral(scenario, config):
    """Σ gpu_seconds = ∫ busy GPUs dt over the timeline, which ends with every GPU idle."""
    jobs, hardware = scenario
    result = run(config, jobs, hardware)
    timeline = result.timeline
    busy = timeline.drop(columns="time").sum(axis=1).to_numpy()
    t = timeline["time"].to_numpy()
    assert t.tolist() == sorted(t.tolist())
    assert busy[-1] == 0
    integral = float((busy[:-1] * (t[1:] - t[:-1])).sum())
    assert result.jobs["gpu_seconds"].sum() == pytest.approx(integral, **TOL)


# ---- ordering and determinism ---------------------------------------------------------------


@given(scenarios())
def test_fifo_never_starts_a_later_job_before_an_earlier_one(scenario):
    """FIFO without backfill: first starts are non-decreasing in (submit time, job id)."""
    jobs, hardware = scenario
    table = run("fifo", jobs, hardware).jobs  # rows come in (submit time, job id) order
    assert table["submit_time"].is_monotonic_increasing
    assert table["start_time"].is_monotonic_increasing


@given(scenarios(), policies(), st.sampled_from(["oracle", "noisy"]), st.integers(0, 2**32 - 1))
def test_same_inputs_and_seed_give_identical_results(scenario, config, estimator, seed):
    """Two runs with one seed give identical jobs, events and timeline (oracle or noisy)."""
    jobs, hardware = scenario
    first = run(config, jobs, hardware, estimator=estimator, seed=seed)
    second = run(config, jobs, hardware, estimator=estimator, seed=seed)
    pd.testing.assert_frame_equal(first.jobs, second.jobs)
    pd.testing.assert_frame_equal(first.events, second.events)
    pd.testing.assert_frame_equal(first.timeline, second.timeline)
    assert (first.jobs["status"] == "finished").all()


@given(scenarios(), st.sampled_from(["fifo-greedy", "sjf", "srtf"]))
def test_no_gpu_idles_while_a_pending_job_fits(scenario, config):
    """Greedy backfill, SJF and SRTF: after every instant, no pending job fits the free GPUs."""
    jobs, hardware = scenario
    result = run(config, jobs, hardware)
    for time, busy, capacity, pending in instants(result, hardware):
        most_free = max(capacity[t] - busy[t] for t in capacity)
        assert all(n > most_free for n in pending.values()), (time, pending, busy)
