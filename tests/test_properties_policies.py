"""Engine invariants (DESIGN §3) under every registered policy, over random workloads.

Each policy in `dlsched.policies.names()` is a test parameter, so a newly registered policy
is covered without editing this file. Each example draws a cluster and a workload from
`tests/strategies.py` with the features the policy is declared to handle in `CASES`
(fractional GPUs, elastic bounds, virtual clusters; every job carries a model, a user, a
priority and maybe a deadline), a throughput model (`duration`, `gavel`, `scaling`), an
estimator (oracle or noisy) and a seed, and runs `simulate(..., audit=True)` twice:

- the auditor raises nothing (no GPU over capacity, ledger = job states, quotas, ...);
- every job is submitted once and finishes once, at or after its submit time, with
  jct = finish − submit; a job may be left unfinished only by a policy declared so, and
  then only with a RuntimeWarning;
- each job's gpu_seconds = Σ over the stints of the event log of GPUs held × time held
  (a fractional job's GPUs counted as its fraction), and the busy-GPU timeline integrates
  to Σ gpu_seconds (exactly, without packing or fractions; within the bounds those allow);
- the second run, with the same inputs and seed, gives identical `jobs` and `events`.

Both runs are in one test so that each example costs two simulations, not three.

A feature a policy fails on is switched off for it in `CASES`, and the failure is a
`KNOWN_BUGS` entry: `test_known_bugs_still_fail[<policy>[<feature>]]` exercises only that
feature and is marked `xfail(strict=True)`, so fixing the bug turns it into a failure that
says to delete the entry (and turn the feature back on in `CASES`).

Profiles (`tests/conftest.py`): 10 examples per policy in the default tier, 100 with
``--run-slow`` (CI), derandomised; the `SLOW_POLICIES` run with ``--run-slow`` only. The long
run is
    DLSCHED_HYPOTHESIS_EXAMPLES=10000 python -m pytest --run-slow tests/test_properties_policies.py
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
import pytest
from hypothesis import Phase, given, note, settings
from hypothesis import strategies as st
from strategies import clusters, workloads

import dlsched
from dlsched.policies.gavel.mechanism import GavelPolicy

STINT_OPENS = ("start", "restart", "migrate", "rescale")
STINT_CLOSES = ("preempt", "finish", "migrate", "rescale")
TOL = {"rel": 1e-9, "abs": 1e-6}


@dataclass(frozen=True)
class Case:
    """What a policy is tested with. The defaults are the hardest inputs: a policy that
    cannot take one of them gets a row in `CASES` saying so (and why)."""

    params: dict[str, Any] = field(default_factory=dict)
    throughputs: tuple[str, ...] = ("duration", "gavel", "scaling")
    one_gpu: bool = False  # every job asks for exactly one whole GPU
    fractional: bool = True  # some one-GPU jobs ask for part of a GPU (gpu_milli < 1000)
    elastic: bool = True  # some jobs have min_gpus/max_gpus (not with `gavel`: its table
    # has rates for 1, 2, 4 and 8 GPUs only)
    vcs: bool = True  # the cluster may have virtual clusters, jobs a `vc`
    packs: bool = False  # may put two whole-GPU jobs on one GPU (space sharing)
    may_leave_unfinished: str = ""  # why it may stop with jobs unfinished (with a warning)
    only_vcs: bool = False  # every cluster has VCs (for the known-bug parameters)
    resources: bool = True  # nodes may declare CPU/memory, jobs demand them (issue 15)


CASES: dict[str, Case] = {
    # Hydra and its baselines schedule jobs of one whole GPU (Hydra's formulation); any
    # other job is refused with a SchedulingError by design.
    "hydra": Case(one_gpu=True, fractional=False, elastic=False),
    "allox": Case(one_gpu=True, fractional=False, elastic=False),
    # per-vc runs `inner` per VC; SRTF preempts, so it exercises more than the default FIFO.
    "per_vc": Case(params={"inner": "srtf"}),
    # Space-sharing policies.
    "gandiva": Case(packs=True),
    "fifo_packed": Case(packs=True),
    "max_min_fairness_packed": Case(packs=True),
    "min_total_duration_packed": Case(packs=True),
    "gavel_gandiva": Case(packs=True),
    "horus": Case(packs=True),
    # Fewer generations keep Pollux's search affordable here.
    "pollux": Case(params={"generations": 20}),
    # Sia chooses among its artifact's configurations (1, 2, 4 … GPUs below a node, then
    # whole nodes): a rigid gang of another size (5 GPUs where nodes hold 2) never runs.
    # ElasticFlow plans one homogeneous pool (its paper's and artifact's clusters): on the
    # random clusters here (several GPU types, VCs, fractional jobs) a job may never be
    # planned; its own tests pin Figure 8(a)'s setting.
    "elasticflow": Case(may_leave_unfinished="a job its one-pool plan never places"),
    # The artifact's EDF with admission plans every GPU as one pool too: a job it admits may
    # not fit the GPUs its VC, type or CPU/memory demand allow, and the artifact's loop has
    # no scheduling point without an arrival or a finish (found by this test in CI).
    "elasticflow_edf_ac": Case(may_leave_unfinished="an admitted job no pool it may use fits"),
    "sia": Case(may_leave_unfinished="a rigid gang of a size that is no Sia configuration"),
    # A placement-sensitive job larger than a node waits for YARN's consolidation, which a
    # cluster of unequal nodes may never allow (it holds no one else back:
    # tests/test_tiresias_placement.py).
    "tiresias": Case(may_leave_unfinished="sensitive job never consolidated"),
    "tiresias_gittins": Case(may_leave_unfinished="sensitive job never consolidated"),
}
"""Policies that are not tested with the defaults of `Case`."""

GAVEL = {
    name
    for name in dlsched.policies.names(aliases=False)
    if isinstance(factory := dlsched.policies.registry.factory(name), type)
    and issubclass(factory, GavelPolicy)
}
for _name in GAVEL:
    # Known bug (test_gavel_elastic_job_beside_a_vc_never_starts): an elastic job never
    # starts on a cluster with VC-owned nodes. Gavel runs every job at its requested size.
    CASES[_name] = replace(CASES.get(_name, Case()), elastic=False)

KNOWN_BUGS: dict[tuple[str, str], str] = {}
"""(policy, feature) → the bug that makes it fail; each is a strict xfail parameter."""
for _name, _feature in KNOWN_BUGS:
    CASES[_name] = replace(CASES.get(_name, Case()), **{_feature: False})


def case_of(name: str) -> Case:
    """The test case of a registered policy (the defaults unless `CASES` has a row)."""
    return CASES.get(name, Case())


def bug_case(name: str, feature: str) -> Case:
    """A case exercising only `feature` of a policy: the inputs of its known bug."""
    base = replace(case_of(name), fractional=False, elastic=False, vcs=False)
    if feature == "vcs":
        return replace(base, vcs=True, only_vcs=True)
    return replace(base, **{feature: True})


SLOW_POLICIES = frozenset({"pollux", "sia"})
"""Policies whose property test runs in the full tier only (``--run-slow``, CI): at 100
examples pollux took 697 s and sia 124 s of a 1,300 s file (2026-12-01, 2 loaded cores)."""


def policy_parameters() -> list[Any]:
    """Every registered policy with its case (the `SLOW_POLICIES` marked slow)."""
    listed = dlsched.policies.names(aliases=False)  # each policy once, not by its aliases too
    return [
        pytest.param(
            name, case_of(name), id=name, marks=[pytest.mark.slow] if name in SLOW_POLICIES else []
        )
        for name in listed
    ]


def bug_parameters() -> list[Any]:
    """One strict-xfail parameter per known bug, with the inputs that show it."""
    return [
        pytest.param(
            name,
            bug_case(name, feature),
            id=f"{name}[{feature}]",
            marks=pytest.mark.xfail(strict=True, reason=reason),
        )
        for (name, feature), reason in sorted(KNOWN_BUGS.items())
    ]


@st.composite
def examples(draw: st.DrawFn, case: Case) -> tuple[pd.DataFrame, dlsched.Cluster, dict]:
    """(workload, cluster, keyword arguments of `simulate`) for a policy's case."""
    throughput = draw(st.sampled_from(case.throughputs))
    hardware = draw(
        clusters(vcs=case.vcs, always_vcs=case.only_vcs, resources=case.resources)
        if case.vcs
        else clusters(resources=case.resources)
    )
    jobs = draw(
        workloads(
            hardware,
            throughput,
            models=True,
            one_gpu=case.one_gpu,
            fractional=case.fractional,
            elastic=case.elastic and throughput != "gavel",
            deadlines=True,
            users=True,
            vcs=case.vcs,
            priorities=True,
            resources=case.resources,
        )
    )
    kwargs = {
        "throughput": throughput,
        "estimator": draw(st.sampled_from(["oracle", "noisy"])),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "restart_overhead_s": draw(st.sampled_from([0.0, 0.0, 5.0])),
    }
    return jobs, hardware, kwargs


def run(
    policy: str, case: Case, jobs: pd.DataFrame, hardware: dlsched.Cluster, kwargs: dict
) -> tuple[dlsched.SimulationResult, list[warnings.WarningMessage]]:
    """One audited simulation and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = dlsched.simulate(jobs, hardware, policy, audit=True, **kwargs, **case.params)
    return result, caught


# ---- the checks -----------------------------------------------------------------------------


def check_lifecycle(
    case: Case, jobs: pd.DataFrame, result: dlsched.SimulationResult, caught: list
) -> None:
    """One submit per job, one finish per finished job, never before its submit; jobs left
    unfinished only by a policy that may, and then with a RuntimeWarning."""
    table, events = result.jobs, result.events
    assert sorted(table["job_id"].map(str)) == sorted(jobs["job_id"].map(str))
    # "declined": refused at admission (a policy's `admit` hook), logged, never started
    assert set(table["status"]) <= {"finished", "unfinished", "declined"}
    declined = set(table.loc[table["status"] == "declined", "job_id"].map(str))
    logged = set(events.loc[events["event"] == "decline", "job_id"].map(str))
    assert declined == logged, "a job is declined without its decline event, or the reverse"
    started = set(events.loc[events["event"] == "start", "job_id"].map(str))
    assert not declined & started, "a declined job started"
    unfinished = table.loc[table["status"] == "unfinished", "job_id"]
    warned = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    if len(unfinished):
        assert case.may_leave_unfinished, f"jobs never finished: {list(unfinished)[:5]}"
        assert warned, "jobs were left unfinished without a RuntimeWarning"
    else:
        assert not [w for w in warned if "never finished" in str(w.message)]
    submits = events.loc[events["event"] == "submit", "job_id"].value_counts()
    assert (submits == 1).all() and len(submits) == len(table)
    finishes = events.loc[events["event"] == "finish", "job_id"].value_counts()
    assert (finishes == 1).all()
    done = table[table["status"] == "finished"]
    assert sorted(finishes.index.map(str)) == sorted(done["job_id"].map(str))
    assert (done["finish_time"] >= done["submit_time"]).all()
    assert (done["start_time"] >= done["submit_time"]).all()
    assert (done["finish_time"] >= done["start_time"]).all()
    assert done["jct"].tolist() == (done["finish_time"] - done["submit_time"]).tolist()
    assert events["time"].is_monotonic_increasing


def stints(events: pd.DataFrame) -> dict[object, list[tuple[float, float, int]]]:
    """job id → [(held from, held until, GPUs held)], replayed from the event log."""
    out: dict[object, list[tuple[float, float, int]]] = defaultdict(list)
    open_since: dict[object, tuple[float, int]] = {}
    for time, kind, job_id, n in zip(
        events["time"], events["event"], events["job_id"], events["num_gpus"], strict=True
    ):
        if kind in STINT_CLOSES:
            since, held = open_since.pop(job_id)
            out[job_id].append((since, time, held))
        if kind in STINT_OPENS:
            open_since[job_id] = (time, int(n))
    assert not open_since, f"jobs still holding GPUs at the end: {sorted(map(str, open_since))}"
    return out


def check_gpu_seconds(case: Case, jobs: pd.DataFrame, result: dlsched.SimulationResult) -> None:
    """gpu_seconds per job = Σ stints GPUs × share × time held; Σ by GPU type = total; the
    timeline's integral of busy GPUs = Σ gpu_seconds (bounded where GPUs are shared)."""
    table = result.jobs.set_index("job_id")
    milli = jobs.set_index("job_id")["gpu_milli"] if "gpu_milli" in jobs else None
    share = {j: (1.0 if milli is None else milli[j] / 1000) for j in table.index}
    parts = stints(result.events)
    for job_id, row in table.iterrows():
        held = sum((until - since) * n for since, until, n in parts.get(job_id, []))
        assert row["gpu_seconds"] == pytest.approx(held * share[job_id], **TOL), job_id
    by_type = table[[c for c in table.columns if c.startswith("gpu_seconds_")]].sum(axis=1)
    assert by_type.to_numpy() == pytest.approx(table["gpu_seconds"].to_numpy(), **TOL)

    timeline = result.timeline
    busy = timeline.drop(columns="time").sum(axis=1).to_numpy()
    t = timeline["time"].to_numpy()
    assert (t[1:] >= t[:-1]).all() and busy[-1] == 0
    integral = float((busy[:-1] * (t[1:] - t[:-1])).sum())
    fractional = [j for j in table.index if share[j] < 1.0]
    whole_s = table.loc[[j for j in table.index if share[j] == 1.0], "gpu_seconds"].sum()
    frac_s = table.loc[fractional, "gpu_seconds"].sum()
    # A fractional job keeps its one GPU busy while it holds it (with others' fractions,
    # perhaps); a packed GPU is one busy GPU for two whole-GPU jobs.
    frac_held = sum(until - since for j in fractional for since, until, _ in parts.get(j, []))
    if not fractional and not case.packs:
        assert integral == pytest.approx(whole_s, **TOL)
    else:
        upper = whole_s + frac_held
        lower = (whole_s / 2 if case.packs else whole_s) + (frac_s if fractional else 0.0)
        assert lower - 1e-6 <= integral <= upper + 1e-6, (lower, integral, upper)


# ---- the property ---------------------------------------------------------------------------


def check_policy(policy: str, case: Case, data: st.DataObject) -> None:
    """Draw an example for `case`, run it twice, check everything."""
    jobs, hardware, kwargs = data.draw(examples(case), label="example")
    # The full inputs, to paste into a reproducer (the drawn DataFrame prints truncated).
    note(f"jobs = pd.DataFrame({jobs.to_dict(orient='list')!r})")
    first, caught = run(policy, case, jobs, hardware, kwargs)
    check_lifecycle(case, jobs, first, caught)
    check_gpu_seconds(case, jobs, first)
    second, _ = run(policy, case, jobs, hardware, kwargs)
    pd.testing.assert_frame_equal(first.jobs, second.jobs)
    pd.testing.assert_frame_equal(first.events, second.events)


@pytest.mark.parametrize(("policy", "case"), policy_parameters())
@given(data=st.data())
def test_every_policy_keeps_the_engine_invariants_and_is_deterministic(policy, case, data):
    """Audited runs of every policy: each job submitted and finished once, JCT and GPU-seconds
    consistent with the event log and timeline; the same inputs and seed give the same run."""
    check_policy(policy, case, data)


@pytest.mark.parametrize(("policy", "case"), bug_parameters())
@settings(phases=(Phase.explicit, Phase.reuse, Phase.generate))  # a known bug: no shrinking
@given(data=st.data())
def test_known_bugs_still_fail(policy, case, data):
    """Each known bug still breaks the properties on its inputs (fixed: delete its entry)."""
    check_policy(policy, case, data)
