"""`shockwave`: Shockwave's canonical comparison (Zheng, Pan, Khan, Venkataraman and Akella,
"Shockwave: Fair and Efficient Cluster Scheduling for Dynamic Adaptation in Machine
Learning", NSDI '23), on the artifact's own inputs, beside the artifact's stored run.

What is compared. The paper's abstract: "for traces of ML jobs with dynamic adaptation,
Shockwave improves makespan by 1.3× and fairness by 2× when compared with existing fair
scheduling schemes" (its §7 figures could not be read here). The artifact
(``uw-mad-dash/shockwave`` @ 8a44f4a, MIT) calls its "canonical result" one simulation of
every policy over a single 120-job trace on 32 GPUs (``scheduler/reproduce/tacc_32gpus.sh``,
``configurations/tacc_32gpus.json``) and ships that run's results as pickles
(``scheduler/reproduce/pickles/tacc_32gpus/<policy>_..._simulation.pickle``). Their
``avg_jct`` and ``makespan`` are `ARTIFACT` (read with the pickles' own keys, as its
``reproduce/aggregate_result.py`` does); they are each point's reference. The artifact
itself cannot run here (its Shockwave needs Gurobi or MOSEK; its driver also reads a trace
pickle that is not in the repository), so "beside" means its stored run.

The same inputs, bundled (``dlsched/data``, `TRACE`, `THROUGHPUTS`; provenance in
``dlsched/data/README.md``):

- the trace ``traces/reproduce/120_0.2_5_100_40_25_0,0.5,0.5_0.6,0.3,0.09,0.01_multigpu_
  dynamic.trace`` (12 tab-separated fields: job type, command, working directory, steps
  argument, data-dir flag, total steps, scale factor, mode, priority, SLO, duration, arrival
  time), its columns kept but the command ones, and two more: ``fair_share_jct`` (see
  "Points") and each job's ``batch_schedule``
  as the artifact's simulator realises it. GNS jobs follow the batch-size pattern of its
  ``utils.get_gns_bs_pattern`` (a hand-made table per model, batch size and scale factor;
  run on the trace, outside dlsched, to write the column), Accordion jobs its critical
  regimes (`dlsched.traces.transforms_dynamic.critical`: the initial batch size inside
  them, the model's largest outside), both on its epoch clock (``current_epoch =
  ceil(steps run / ceil(dataset / batch))``, one epoch ahead of the 0-based epoch, and GNS
  doubling when the pattern's next epoch is larger) and with its revert rule (a batch size
  whose (job type, scale factor) is not in the throughput file is never taken). 68 of the
  120 jobs change batch size. Checked against the pickles' ``throughput_timeline`` (the
  batch size each job ran each round): the sequence of batch sizes matches for 119 of 120
  jobs under every stored policy; job 0 (LM, GNS) finishes in the artifact before its last
  doubling, which here covers its last 3.6 of 22.6 epochs.
- the throughputs ``scheduler/tacc_throughputs.json`` (``--throughputs_file``), its V100
  rows (``null``: alone on the GPUs), measured on TACC's V100s and not Gavel's table
  (ResNet-18 at batch 32: 42.97 steps/s where Gavel's has 29.95).
- the cluster ``--cluster_spec 32:0:0`` with the driver's one GPU per server, where Gavel's
  simulator rates every job at its consolidated throughput: one 32-V100 node here.
- rounds of 120 s (``--time_per_iteration 120``) for every policy; Shockwave with the
  config's ``future_rounds`` 20, ``k`` 1e-3, ``lambda`` 12, ``rhomax`` 1 (dlsched's
  defaults) and every active job in its program (``max_jobs`` `MAX_JOBS`).

Estimates. The artifact's planner does not see the schedule ahead: it plans a job's run
time with the mean duration of the epochs it has run (``interpolate_epoch_duration``) and
its remaining time with a Dirichlet posterior over the batch sizes seen so far; its Gavel
policies see each job's current throughput and the steps left at its current batch size.
The nearest dlsched reading is the ``dynamic:online`` estimator (the phases reached, the
current one assumed to the end), `ESTIMATOR`, for every policy. What the two choices do to
Shockwave (``dlsched reproduce shockwave`` runs, 120 jobs; avg JCT / makespan, s):

=====================================  ================  ==================
Shockwave, estimator and ``max_jobs``  avg JCT           makespan
=====================================  ================  ==================
``dynamic`` (advance), 64 (defaults)   12,565 (+26 %)    30,564 (+26 %)
``dynamic`` (advance), 128             12,232 (+23 %)    23,389 (−3.3 %)
``dynamic:online``, 64                 11,016 (+11 %)    30,829 (+27 %)
``dynamic:online``, 128 (this)         9,805 (−1.5 %)    26,029 (+7.6 %)
artifact                               9,958             24,197
=====================================  ================  ==================

With 64 jobs in the market the rest only fill idle GPUs, and the makespan stays max-min
fairness's; with every job in it the efficiency term (``k`` × the largest remaining time)
brings the makespan to the artifact's (which is OSSP's, 24,205 s). Knowing the schedule
ahead costs 2,400 s of average JCT and more fairness (`GAPS`); why (a candidate, not checked
job by job: jobs whose batch grows look short and are served first) is not established.
``k`` hardly matters at the defaults (advance, 64: 1e-4 11,808 / 30,307 s; 1e-2 12,501 /
31,309 s).

Schemes (`SCHEMES`): the artifact's policy names and the dlsched policies that run them:
``shockwave`` → `shockwave`, ``max_min_fairness`` (the legend's "Gavel") →
`max_min_fairness`, ``min_total_duration`` (OSSP) → `min_total_duration`,
``finish_time_fairness`` (Themis) → `finish_time_fairness`, ``max_sum_throughput_perf`` (MST)
→ `max_sum_throughput_perf`, ``allox`` → `gavel_allox`. Its ``gandiva_fair`` has no dlsched
policy and is left out.

Points: each scheme's average JCT and makespan against the artifact's (±15 %: the same
inputs, two simulators); Shockwave's average JCT over max-min fairness's (the artifact's
0.883, ±15 %) and max-min fairness's makespan over Shockwave's against the abstract's "1.3×"
(±15 %; the artifact's run has 1.372); and fairness, for Shockwave and max-min fairness:
the worst finish-time fairness ρ (±20 %: one job's), the share of jobs with ρ > 1.05 (±5
points) and max-min fairness's worst ρ over Shockwave's against the abstract's "2×" (±15 %;
the artifact's run has 1.652). ρ is a job's JCT over its JCT in the artifact's fair-share
reference run (``isolated_plus``, not shipped), recovered per job as ``jct_list /
finish_time_fairness_list`` of the stored max-min fairness pickle (the same, to 2e-5, from
every stored pickle) and bundled as the trace's ``fair_share_jct`` column; on it the
pickles' own worst ρ and unfair shares come out as stored.

Measured (``dlsched reproduce shockwave``, 11 CPU s, 2026-12-02): 16 of 19 points within
tolerance. Shockwave 9,805 s / 26,029 s (artifact 9,958 / 24,197); max-min fairness
10,159 / 31,189 (11,274 / 33,208); so Shockwave's JCT is 0.965× max-min fairness's
(artifact 0.883×) and it improves the makespan 1.198× (abstract 1.3×, artifact 1.372×).
Every baseline's average JCT is below the artifact's (−9 to −20 %: OSSP −20.1 %, out of
tolerance), makespans −1 to −6 %. Worst ρ: Shockwave 1.922 (1.784), max-min fairness 2.570
(2.947), a fairness gain of 1.34× (abstract 2×, artifact 1.65×: out); jobs with ρ > 1.05:
18.3 % (5.0 %: out) and 23.3 % (25.0 %). Not compared, ours (artifact) worst ρ / unfair
share: OSSP 4.84 / 70.8 % (7.74 / 74.2 %), Themis 2.50 / 20.8 % (3.44 / 22.5 %), MST
3.11 / 20.8 % (4.98 / 25.0 %), AlloX 2.77 / 17.5 % (4.96 / 27.5 %). The points out of
tolerance are `KNOWN_GAPS`; `GAPS` says what explains the gaps and what does not.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from dlsched.reproduce.base import Point, Reproduction, Task, Tolerance

TRACE = "shockwave_tacc32_120jobs.csv"
"""The canonical 120-job trace with its batch-size schedules, in ``dlsched/data``."""
THROUGHPUTS = "shockwave_tacc_v100_throughputs.json"
"""The V100 rows of the artifact's ``tacc_throughputs.json`` (Gavel format), in
``dlsched/data``."""
CLUSTER: dict[str, Any] = {
    "name": "shockwave-tacc-32xv100",
    "gpu_types": {"V100": {}},
    "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 32}],
}
"""``--cluster_spec 32:0:0``, consolidated (module docstring)."""
ROUND_S = 120.0
"""``--time_per_iteration 120`` (``reproduce/tacc_32gpus.sh``), for every policy."""
MAX_JOBS = 128
"""Shockwave's program holds every active job, as the artifact's does (dlsched's default
``max_jobs`` 64 leaves the rest out of the market: module docstring, "Estimates")."""
FIELDS = (
    "job_type",
    "total_steps",
    "scale_factor",
    "mode",
    "priority_weight",
    "SLO",
    "duration",
    "arrival_time",
    "batch_schedule",
    "fair_share_jct",
)
"""The bundled trace's columns: the artifact's trace fields but the command ones, the
batch-size schedule its simulator realises and the fair-share reference JCT (s)."""
MODES = ("static", "gns", "accordion")
FAIR_RHO = 1.05
"""A job is treated fairly when its finish-time fairness ρ is at most this (the artifact's
``FTF_FAIRNESS_THRESHOLD``, ``reproduce/aggregate_result.py``: "jobs with ftf < 1.05")."""

ARTIFACT_FAIRNESS: dict[str, tuple[float, float]] = {
    # artifact policy: (worst rho, % of jobs with rho > 1.05), the same pickles'
    # max(finish_time_fairness_list) and aggregate_result.py's unfair fraction
    "shockwave": (1.7838, 5.0),
    "max_min_fairness": (2.9470, 25.0),
    "min_total_duration": (7.7415, 74.17),
    "finish_time_fairness": (3.4376, 22.5),
    "max_sum_throughput_perf": (4.9758, 25.0),
    "allox": (4.9635, 27.5),
}
"""The artifact's stored fairness figures (4 decimals, as recomputed from the pickles)."""
ARTIFACT: dict[str, tuple[float, float]] = {
    # artifact policy: (avg_jct, makespan) in seconds, the pickles of
    # scheduler/reproduce/pickles/tacc_32gpus/<policy>_120_0.2_5_100_40_25_0,0.5,0.5_
    # 0.6,0.3,0.09,0.01_multigpu_dynamic_simulation.pickle, keys "avg_jct", "makespan"
    "shockwave": (9958.486117514658, 24197.42350629904),
    "max_min_fairness": (11274.11699328137, 33207.66301239685),
    "min_total_duration": (19806.727988584385, 24204.81630868378),
    "finish_time_fairness": (11301.976669591379, 31928.738767753155),
    "max_sum_throughput_perf": (9654.699760876134, 31909.030927449847),
    "allox": (9926.30656827876, 32488.621148396294),
    "gandiva_fair": (12574.272467530895, 32367.434395330914),
}
"""The artifact's stored canonical run (module docstring). ``gandiva_fair`` is recorded but
not compared (no dlsched policy). The same pickles give worst finish-time fairness ρ
(``max(finish_time_fairness_list)``) 1.784 for Shockwave and 2.947 for max-min fairness, and
5.0 % and 25.0 % of jobs with ρ > 1.05 (`ARTIFACT_FAIRNESS`)."""
PUBLISHED_MAKESPAN_GAIN = 1.3
"""The abstract's "improves makespan by 1.3×" over existing fair schemes."""

SCHEMES: dict[str, tuple[str, str, dict[str, Any]]] = {
    # artifact policy: (legend, dlsched policy, parameters)
    "shockwave": ("Shockwave", "shockwave", {"round_s": ROUND_S, "max_jobs": MAX_JOBS}),
    "max_min_fairness": ("Gavel (max-min fairness)", "max_min_fairness", {"round_s": ROUND_S}),
    "min_total_duration": ("OSSP", "min_total_duration", {"round_s": ROUND_S}),
    "finish_time_fairness": ("Themis", "finish_time_fairness", {"round_s": ROUND_S}),
    "max_sum_throughput_perf": ("MST", "max_sum_throughput_perf", {"round_s": ROUND_S}),
    "allox": ("AlloX", "gavel_allox", {"round_s": ROUND_S}),
}
"""The artifact's schemes that dlsched runs (module docstring)."""
ESTIMATOR = "dynamic:online"
"""What every policy knows of the batch-size schedules (module docstring, "Estimates")."""
HEADLINE = ("shockwave", "max_min_fairness")
TOLERANCE = Tolerance(rel=0.15)
WORST_RHO_TOLERANCE = Tolerance(rel=0.2)
"""The worst ρ is one job's: ±20 %."""
UNFAIR_TOLERANCE = Tolerance(abs=5.0)
"""The share of jobs with ρ > 1.05, in percentage points: ±5 (6 of 120 jobs)."""
PUBLISHED_FAIRNESS_GAIN = 2.0
"""The abstract's "fairness by 2×" over existing fair schemes (read here as the worst ρ of
max-min fairness over Shockwave's; the artifact's run has 2.947 / 1.784 = 1.652)."""
KNOWN_GAPS = frozenset(
    {
        ("min_total_duration", "avg_jct_s"),
        ("shockwave", "unfair_pct"),
        ("headline", "fairness_gain"),
    }
)
"""(task, metric) of the points measured out of tolerance (`GAPS`)."""
GAPS = (
    "Shockwave (avg JCT -1.5 %, makespan +7.6 %; JCT ratio to max-min fairness 0.965 vs "
    "0.883): the market here is the convex relaxation of the artifact's mixed-integer "
    "program (Boolean round variables, a piecewise-linear log over progress 0, 0.2, ..., 1 "
    "with Boolean segment selectors, Gurobi to a 1e-3 gap in 15 s), its fractional shares "
    "realised round by round by credit; its estimates are a Dirichlet posterior, ours the "
    "online phase view. The module's table shows the two settings that matter most "
    "(every job in the program; online estimates); the rest is not broken down.",
    "Baselines: every average JCT below the artifact's (max-min fairness -9.9 %, Themis "
    "-8.8 %, MST -12.2 %, AlloX -13.5 %, OSSP -20.1 %: out of tolerance), makespans -1.4 to "
    "-6.1 %. Not the jobs' work: under max-min fairness the artifact's jobs ran 632,157 "
    "GPU-seconds in all (its pickle's job_run_time), ours 628,095 (+0.65 %; +1.3 % on the "
    "jobs that change batch size, whose change the artifact makes at the end of the round "
    "in which it is due; +0.1 % on the others), and the per-round rates are the table's to "
    "0.1-0.9 %. So the gap is in the queueing: busy GPU-seconds over 32 x the makespan, "
    "the artifact 59.5 %, ours 62.9 %; per job the JCTs differ most for 2- and 4-GPU jobs "
    "(-2,106 s, -1,948 s on average; 1-GPU -827 s). Which part of the round mechanism "
    "(the artifact's fork of Gavel's simulator against dlsched's, validated in `gavel`) is "
    "not broken down.",
    "Fairness: ours treats 22 jobs unfairly (rho > 1.05) where the artifact's Shockwave "
    "treats 6; its worst rho is 7.7 % above the artifact's, max-min fairness's 12.8 % "
    "below, so the gain is 1.34x (artifact 1.65x, abstract 2x). The FTF constraints are "
    "the artifact's, on dlsched's estimates (the online view's equal-share finish times), "
    "and a fractional plan realised by credit can run a job fewer rounds than the integer "
    "plan gives it; knowing the schedules ahead is far worse here (advance estimator, every "
    "job in the market: worst rho 4.34, 42.5 % unfair). Shockwave fell back to FTF order in "
    "3 of 163 solves. Which of these makes the 16 extra unfair jobs is not established.",
)
"""What explains the gaps, and what is not known (the fidelity notes)."""


def _data_path(name: str) -> Any:
    return resources.files("dlsched.data") / name


def read_trace(path: str | Path | None = None, n_jobs: int | None = None) -> Any:
    """The bundled trace (or a file in its form, `FIELDS`) as a canonical job table: job id
    = 0-based line (the artifact numbers jobs in trace order), ``model`` = job type,
    ``num_gpus`` = scale factor, ``submit_time`` = arrival time, ``priority`` = priority
    weight, ``batch_schedule`` (empty: static), ``mode`` kept as a column; the first
    `n_jobs` jobs if given. A missing column or a mode not in `MODES` is a `TraceError`
    naming it."""
    import pandas as pd

    from dlsched.errors import TraceError

    where = str(path) if path is not None else f"dlsched/data/{TRACE}"
    if path is None:
        with resources.as_file(_data_path(TRACE)) as bundled:
            raw = pd.read_csv(bundled, dtype=str, keep_default_na=False)
    else:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in FIELDS if c not in raw.columns]
    if missing:
        raise TraceError(f"missing column(s) {', '.join(missing)}", path=where)
    bad = ~raw["mode"].isin(MODES)
    if bad.any():
        row = int(bad.to_numpy().argmax())
        raise TraceError(
            f"mode {raw['mode'].iloc[row]!r} is not one of {', '.join(MODES)}",
            path=where,
            row=row + 2,  # the header is line 1
            field="mode",
        )
    if n_jobs is not None:
        raw = raw.iloc[:n_jobs]
    return pd.DataFrame(
        {
            "job_id": range(len(raw)),
            "model": raw["job_type"],
            "total_steps": pd.to_numeric(raw["total_steps"], errors="coerce"),
            "num_gpus": pd.to_numeric(raw["scale_factor"], errors="coerce"),
            "submit_time": pd.to_numeric(raw["arrival_time"], errors="coerce"),
            "priority": pd.to_numeric(raw["priority_weight"], errors="coerce"),
            "mode": raw["mode"],
            "batch_schedule": [s if s else None for s in raw["batch_schedule"]],
            "fair_share_jct": pd.to_numeric(raw["fair_share_jct"], errors="coerce"),
        }
    )


def throughputs() -> Any:
    """The artifact's V100 throughputs (`THROUGHPUTS`) as a `ProfileTable`."""
    from dlsched.perf import ProfileTable

    with resources.as_file(_data_path(THROUGHPUTS)) as path:
        table = ProfileTable.from_json(path)
    table.name = "shockwave-tacc"
    return table


def run_scheme(scheme: str, n_jobs: int | None = None) -> dict[str, float]:
    """Average JCT and makespan (s) of one artifact scheme (`SCHEMES`) on the trace."""
    import dlsched
    from dlsched.experiments.dynamic import dynamic_truth
    from dlsched.policies.registry import get as get_policy

    legend, name, params = SCHEMES[scheme]
    jobs = read_trace(n_jobs=n_jobs)
    truth = dynamic_truth(jobs, throughputs())
    policy = get_policy(name, **params)
    started = time.process_time()
    result = dlsched.simulate(jobs, CLUSTER, policy, throughput=truth, estimator=ESTIMATOR)
    summary = result.summary()
    done = result.jobs.set_index("job_id")["jct"]
    rho = (done / jobs.set_index("job_id")["fair_share_jct"]).to_numpy()
    out = {
        "avg_jct_s": float(summary["avg_jct"]),
        "makespan_s": float(summary["makespan"]),
        "worst_ftf": float(rho.max()),
        "unfair_pct": float(100.0 * (rho > FAIR_RHO).mean()),
        "jobs_completed": float(summary["jobs_completed"]),
        "cpu_s": time.process_time() - started,
    }
    for counter in ("solves", "fallbacks"):
        if hasattr(policy, counter):
            out[counter] = float(getattr(policy, counter))
    return out


def measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """The schemes of one task; the headline task adds the two ratios."""
    n_jobs = spec.get("jobs")
    per = {scheme: run_scheme(scheme, n_jobs) for scheme in spec["schemes"]}
    metrics: dict[str, float] = {}
    for scheme, values in per.items():
        for key, value in values.items():
            metrics[f"{scheme}:{key}"] = value
    if set(HEADLINE) <= set(per):
        sw, mmf = per["shockwave"], per["max_min_fairness"]
        metrics["jct_ratio"] = sw["avg_jct_s"] / mmf["avg_jct_s"]
        metrics["makespan_gain"] = mmf["makespan_s"] / sw["makespan_s"]
        metrics["fairness_gain"] = mmf["worst_ftf"] / sw["worst_ftf"]
    return metrics


def plan(shared: Path, quick: bool) -> list[Point]:
    """Shockwave and max-min fairness (one task, and their ratios); the other baselines one
    task each, not in the quick subset."""
    figure = "Shockwave canonical run: 120 jobs, 32 V100s (artifact's stored run)"
    headline = Task("headline", {"schemes": list(HEADLINE), "jobs": None})
    tasks: list[tuple[Task, tuple[str, ...]]] = [(headline, HEADLINE)]
    if not quick:
        tasks += [
            (Task(scheme, {"schemes": [scheme], "jobs": None}), (scheme,))
            for scheme in SCHEMES
            if scheme not in HEADLINE
        ]
    points: list[Point] = []
    for task, schemes in tasks:
        for scheme in schemes:
            legend, name, _ = SCHEMES[scheme]
            for index, metric in enumerate(("avg_jct_s", "makespan_s")):
                gap = (scheme, metric) in KNOWN_GAPS
                points.append(
                    Point(
                        figure=figure,
                        series=legend,
                        x=float(index),
                        x_name="metric (0 avg JCT, 1 makespan)",
                        metric=f"{scheme}:{metric}",
                        published=ARTIFACT[scheme][index],
                        tolerance=TOLERANCE,
                        task=task,
                        note=f"artifact's {scheme} pickle; dlsched {name!r}"
                        + ("; known gap (GAPS)" if gap else ""),
                    )
                )
    for scheme in HEADLINE:
        legend, name, _ = SCHEMES[scheme]
        for metric, published, tolerance in (
            ("worst_ftf", ARTIFACT_FAIRNESS[scheme][0], WORST_RHO_TOLERANCE),
            ("unfair_pct", ARTIFACT_FAIRNESS[scheme][1], UNFAIR_TOLERANCE),
        ):
            gap = (scheme, metric) in KNOWN_GAPS
            points.append(
                Point(
                    figure="Finish-time fairness rho against the artifact's fair-share JCTs",
                    series=legend,
                    x=120.0,
                    x_name="jobs",
                    metric=f"{scheme}:{metric}",
                    published=published,
                    tolerance=tolerance,
                    task=headline,
                    note=f"artifact's {scheme} pickle; dlsched {name!r}"
                    + ("; known gap (GAPS)" if gap else ""),
                )
            )
    sw, mmf = ARTIFACT["shockwave"], ARTIFACT["max_min_fairness"]
    points += [
        Point(
            figure="Shockwave over max-min fairness",
            series="avg JCT ratio",
            x=120.0,
            x_name="jobs",
            metric="jct_ratio",
            published=sw[0] / mmf[0],
            tolerance=TOLERANCE,
            task=headline,
            note="artifact's pickles (not in the paper's text read)",
        ),
        Point(
            figure="Shockwave over max-min fairness",
            series="makespan gain",
            x=120.0,
            x_name="jobs",
            metric="makespan_gain",
            published=PUBLISHED_MAKESPAN_GAIN,
            tolerance=TOLERANCE,
            task=headline,
            note=f"abstract's 1.3x over fair schemes; the artifact's run {mmf[1] / sw[1]:.3f}",
        ),
        Point(
            figure="Shockwave over max-min fairness",
            series="fairness gain (worst rho)",
            x=120.0,
            x_name="jobs",
            metric="fairness_gain",
            published=PUBLISHED_FAIRNESS_GAIN,
            tolerance=TOLERANCE,
            task=headline,
            note="abstract's 2x over fair schemes; the artifact's run "
            f"{ARTIFACT_FAIRNESS['max_min_fairness'][0] / ARTIFACT_FAIRNESS['shockwave'][0]:.3f}"
            "; known gap (GAPS)",
        ),
    ]
    return points


def known_gap(point: Point) -> bool:
    """Whether `point` is one of `KNOWN_GAPS`."""
    metric = point.metric.split(":")[-1]
    task = point.metric.split(":")[0] if ":" in point.metric else point.task.id
    return (task, metric) in KNOWN_GAPS


def _accepts(metrics: Mapping[str, float]) -> bool:
    """A stored run stands when every job completed."""
    done = [v for k, v in metrics.items() if k.endswith(":jobs_completed")]
    return bool(done) and all(v == 120 or math.isnan(v) for v in done)


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            name="shockwave",
            paper="Shockwave (Zheng et al., NSDI 2023)",
            source="the artifact's canonical result (reproduce/tacc_32gpus.sh: 120 jobs, "
            "32 V100s, its stored pickles) and the abstract's 1.3x makespan gain; same "
            "trace, batch-size schedules and TACC throughputs, bundled",
            data=(),
            plan=plan,
            measure=measure,
            quick_subset="Shockwave and max-min fairness (the headline ratios)",
            cost_quick="~10 CPU s",
            cost_full="~15 CPU s",
            summary="Shockwave (NSDI '23) canonical 120-job run vs max-min fairness and "
            "four Gavel-family baselines",
            notes=GAPS,
            accepts=_accepts,
        )
    )


_register()
