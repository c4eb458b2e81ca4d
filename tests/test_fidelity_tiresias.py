"""FIFO, YARN-CS, SRTF, Tiresias-L and Tiresias-G against runs of the Tiresias authors'
simulator.

`../shared/anchors/tiresias/reference_results.csv` holds runs of SymbioticLab/Tiresias'
simulator on its own inputs (60_job.csv, its ×10 variant, two 480-job Philly-like traces at
80 % load and in overload) and cluster shapes. Its run times do not depend on placement and
preemption costs nothing, so dlsched runs with the `duration` throughput model and zero
overheads (the `tiresias-sim` preset).

Tolerances:
- FIFO, fit-first (`fifo`, `backfill="greedy"`) and YARN-CS (`fifo`, `placement="yarn"`,
  first-fit single node as the simulator's `ms_yarn_placement`) are deterministic event
  orderings dlsched must reproduce exactly: 0.1 % for float formatting.
- SRTF: the simulator re-sorts jobs only at arrivals and completions, as dlsched does, but
  breaks ties between equal remaining times differently: 1 %.
- Tiresias-L/-G with `compat=True` replay the simulator's `dlas_sim_jobs` step for step
  (every event in arrival order, one demotion per event, its queue-jump formula, its Gittins
  table, waiting jobs behind running ones): average JCT and makespan within 0.1 % and the
  same number of preemptions. The issue asks for 5 %; the gaps measured before this replica
  (Tiresias-G +10 % on 60_job with 8 GPUs and −12 % on 60_job_x10 with 16 GPUs, `dlas-gpu-8`
  −6 % on the overloaded trace) are closed, and their causes were, by ablation: scheduling at
  queue-jump times the simulator had since moved (it recomputes its single next jump at every
  event, so a jump planned earlier is not an event; re-ranking Gittins jobs there caused
  316 instead of 88 and 3,098 instead of 259 preemptions — the whole +10 % and −12 %); its
  Python 2 integer division (⌊(threshold − run seconds) / GPUs⌋, not ⌈⌉: up to 1 %); and its
  reading of the starvation knob (pending time since the job first ran, or since its last
  promotion, against knob × run time since then, not the last wait against the last run:
  about 2 % of the `dlas-gpu-8` gap).
- The default Tiresias-L/-G (`compat=False`, what `policy="tiresias"` gives a user) on every
  run: average JCT within 10 %, makespan within 10 % and preemptions within 2× (issue 12).
  Measured: at most 2.6 % (JCT) and 2.1 % (makespan) off, preemptions within 6 %. It
  follows the authors' implementation where the paper is silent and ranks by their Gittins
  table (`policies/tiresias/paper.py` gives each choice). The literal reading
  (`literal=True`) was the default before, up to 50 % off in overload; switching each
  reading alone back to the literal one (`philly_like_480_r3p0`, 60 GPUs): FIFO by first
  start instead of the authors' line (running jobs ahead of waiting ones, preempted jobs
  keeping their place) +48.7 % on `dlas-gpu`; exact-time demotions instead of the authors'
  demotion check (planned from run seconds, so multi-GPU jobs drop late) 1.4× the
  preemptions with knob 4; the last wait against the last run instead of the authors'
  starvation reading −4.5 % with knob 8; the paper's Gittins formula (S − a) instead of
  their table −11.9 % on 60_job with 8 GPUs and +12.3 % here — a choice the paper states,
  kept as `literal=True`. The literal reading is asserted within 5 % where the cluster is
  not overloaded.
"""

from pathlib import Path

import pandas as pd
import pytest

import dlsched

ANCHORS = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "tiresias"
POLICIES = {
    "fifo": ("fifo", {}, 1e-3),
    "fjf": ("fifo", {"backfill": "greedy"}, 1e-3),
    "shortest": ("srtf", {}, 1e-2),
}
YARN = {"fifo": {"placement": "yarn"}, "fjf": {"placement": "yarn", "backfill": "greedy"}}
TIRESIAS = {
    "dlas-gpu": ("tiresias", None),
    "dlas-gpu-4": ("tiresias", 4.0),
    "dlas-gpu-8": ("tiresias", 8.0),
    "dlas-gpu-gittins": ("tiresias-gittins", None),
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not ANCHORS.exists(), reason="../shared/anchors not present"),
]


def _reference() -> pd.DataFrame:
    return pd.read_csv(ANCHORS / "reference_results.csv")


def _runs(scheme: str, schedules) -> list:
    if not ANCHORS.exists():
        return []
    ref = _reference()
    ref = ref[(ref["scheme"] == scheme) & ref["schedule"].isin(list(schedules))]
    return [
        pytest.param(r, id=f"{r.cluster_spec}-{r.trace}-{r.schedule}") for r in ref.itertuples()
    ]


def _find(name: str) -> Path:
    for folder in ("upstream", "derived"):
        if (ANCHORS / folder / name).exists():
            return ANCHORS / folder / name
    raise FileNotFoundError(name)


def _cluster(spec: str) -> dlsched.Cluster:
    shape = pd.read_csv(_find(spec)).iloc[0]
    return dlsched.Cluster.from_dict(
        {
            "name": spec,
            "nodes": [
                {
                    "gpu_type": "P100",
                    "count": int(shape.num_switch * shape.num_node_p_switch),
                    "gpus_per_node": int(shape.num_gpu_p_node),
                }
            ],
        }
    )


def _run(spec: str, trace: str, policy: str, **params):
    workload = dlsched.load_trace(_find(trace), format="tiresias")
    return dlsched.simulate(
        workload, _cluster(spec), policy=policy, overheads="tiresias-sim", **params
    )


def _tiresias(spec: str, trace: str, schedule: str, **params):
    policy, knob = TIRESIAS[schedule]
    return _run(spec, trace, policy, starvation_knob=knob, **params)


@pytest.mark.parametrize("run", _runs("count", POLICIES))
def test_matches_the_authors_simulator(run):
    """FIFO, fit-first and SRTF: average JCT and makespan match the simulator's run."""
    policy, params, tolerance = POLICIES[run.schedule]
    summary = _run(run.cluster_spec, run.trace, policy, **params).summary()
    assert summary["jobs_completed"] == run.completed
    assert summary["avg_jct"] == pytest.approx(run.avg_jct_s, rel=tolerance)
    assert summary["makespan"] == pytest.approx(run.makespan_s, rel=tolerance)


@pytest.mark.parametrize("run", _runs("yarn", YARN))
def test_yarn_placement_matches_the_authors_simulator(run):
    """YARN-CS (consolidation-constrained placement) with FIFO and fit-first: exact."""
    summary = _run(run.cluster_spec, run.trace, "fifo", **YARN[run.schedule]).summary()
    assert summary["avg_jct"] == pytest.approx(run.avg_jct_s, rel=1e-3)
    assert summary["makespan"] == pytest.approx(run.makespan_s, rel=1e-3)


@pytest.mark.parametrize("run", _runs("count", TIRESIAS))
def test_tiresias_compat_matches_the_authors_simulator(run):
    """Tiresias-L/-G (and the starvation knob) with compat=True replay the simulator."""
    result = _tiresias(run.cluster_spec, run.trace, run.schedule, compat=True)
    summary = result.summary()
    assert summary["jobs_completed"] == run.completed
    assert summary["avg_jct"] == pytest.approx(run.avg_jct_s, rel=1e-3)
    assert summary["makespan"] == pytest.approx(run.makespan_s, rel=1e-3)
    assert result.jobs["preemptions"].sum() == run.preemptions


@pytest.mark.parametrize(
    "spec, trace",
    [
        ("n15g4.csv", "philly_like_480_r3p0.csv"),
        ("n2g4.csv", "60_job.csv"),
        ("n4g4.csv", "60_job_x10.csv"),
    ],
)
def test_jct_ratios_to_yarn_cs_match_the_authors_simulator(spec, trace):
    """YARN-CS ÷ policy average JCT, per policy, as in the simulator (1 %): the paper's
    headline comparison (2.46× for 2D-LAS and 3.23× for 2D-Gittins in overload)."""
    ref = _reference()
    ref = ref[(ref["cluster_spec"] == spec) & (ref["trace"] == trace)]

    def reference(scheme, schedule):
        return ref[(ref["scheme"] == scheme) & (ref["schedule"] == schedule)].iloc[0].avg_jct_s

    yarn_cs = _run(spec, trace, "fifo", placement="yarn").summary()["avg_jct"]
    ours = {
        "fifo": _run(spec, trace, "fifo").summary()["avg_jct"],
        "shortest": _run(spec, trace, "srtf").summary()["avg_jct"],
    }
    for schedule in ("dlas-gpu", "dlas-gpu-gittins"):
        ours[schedule] = _tiresias(spec, trace, schedule, compat=True).summary()["avg_jct"]
    for schedule, jct in ours.items():
        want = reference("yarn", "fifo") / reference("count", schedule)
        assert yarn_cs / jct == pytest.approx(want, rel=1e-2), schedule


@pytest.mark.parametrize("run", _runs("count", TIRESIAS))
def test_tiresias_default_is_within_10_percent_of_the_authors_simulator(run):
    """Tiresias-L/-G with their defaults: average JCT and makespan within 10 % of the
    simulator's run, preemptions within 2× (issue 12), overloaded runs included."""
    result = _tiresias(run.cluster_spec, run.trace, run.schedule)
    summary = result.summary()
    assert summary["jobs_completed"] == run.completed
    assert summary["avg_jct"] == pytest.approx(run.avg_jct_s, rel=0.10)
    assert summary["makespan"] == pytest.approx(run.makespan_s, rel=0.10)
    preemptions = result.jobs["preemptions"].sum()
    assert run.preemptions / 2 <= preemptions <= 2 * run.preemptions


@pytest.mark.parametrize(
    "spec, trace",
    [
        ("n15g4.csv", "philly_like_480_r1p5.csv"),
        ("n32g4.csv", "philly_like_480_r3p0.csv"),
        ("n4g4.csv", "60_job.csv"),
    ],
)
@pytest.mark.parametrize("schedule", ["dlas-gpu", "dlas-gpu-gittins"])
def test_literal_reading_agrees_when_not_overloaded(spec, trace, schedule):
    """The literal reading of the paper (`literal=True`: exact demotions, FIFO by first
    start, the paper's Gittins formula) is within 5 % of the simulator at ≤ 85 % load."""
    ref = _reference()
    run = ref[
        (ref["cluster_spec"] == spec)
        & (ref["trace"] == trace)
        & (ref["schedule"] == schedule)
        & (ref["scheme"] == "count")
    ].iloc[0]
    summary = _tiresias(spec, trace, schedule, literal=True).summary()
    assert summary["avg_jct"] == pytest.approx(run.avg_jct_s, rel=0.05)
