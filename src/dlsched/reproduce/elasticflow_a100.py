"""`elasticflow-fig8b`, `-fig9`, `-fig10` and `-fig11`: ElasticFlow's A100
simulations (Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed
Deep Learning", ASPLOS '23), the deadline-satisfactory ratio of ElasticFlow and its baselines.

Every run is as the artifact's (``pkusys/ElasticFlow`` @ 04a0109) ``run_fig*.sh`` sets it up:
the trace made elastic on 1 … 64 GPUs, the artifact's cluster, its A100 throughputs
(``throughput="elasticflow"``), its scheduling slot for every policy (``slot_s``, Themis'
``lease_s``) and each policy's default overheads — for ``elasticflow`` and ``themis`` the
artifact's ``estimate_overhead``, ``elasticflow-256`` from 256 GPUs on
(`dlsched.elasticflow_overheads.for_cluster`). The baselines are Figure 8(a)'s
(`dlsched.reproduce.elasticflow.SCHEMES`: the artifact's variants).

Published values are the bars and curves of the paper, as the artifact's plotting scripts
hold them (``plot_figure/scripts/plot_fig8b.py`` and ``plot_fig9.py``: "existing numbers are
our test results"); Figure 10's are the authors' logs of the runs it plots. Beside each, the
artifact's own run of the same inputs here (`ARTIFACT`, in the point's note).

**Figure 8(b)** (``run_fig8b.sh``: 60 s slots; clusters 1, 2, 3, 5, 6 on 64 × 8 A100, 4, 7,
8, 9 on 128 × 8, 10 and Philly on 32 × 8). The traces are the paper's own:
``cluster01.csv`` … ``cluster10.csv`` of ``microsoft/elasticflow-traces`` @ 277ed24
(``data/elasticflow-traces.tar.gz``, MIT), the real ITP jobs with the models, iterations and
deadlines the artifact's ``generate_trace_from_itp.py`` drew for them, and the artifact's
``traces_for_ElasticFlow/philly_103959.csv`` (Apache-2.0); bundled in ``dlsched/data``.
Chronus' bars are left out (the artifact runs Chronus' own simulator, not its scheduler).
``--quick``: cluster 10 (260 jobs, five runs, ~15 CPU s); the full run replays 70,227 jobs.

**Figure 9** (``run_fig9.sh``: 1,000 jobs, λ = 1,500 s, deadlines U(0.5, 1.5) × duration;
64, 128 and 256 A100 (8 per node); 240 s slots): EDF, EDF + admission control
(`elasticflow_edf_ac`), EDF + elastic scaling (``elasticflow`` with ``unmet="admit"``, the
artifact's ``ef``) and ElasticFlow. The artifact's generator draws deadlines from Python's
unseeded global ``random``, so the paper's trace cannot be drawn again: the bundled one is
``generate_trace.py --num_jobs=1000 --lam=1500`` with ``random.seed(0)`` set first
(``dlsched/data/elasticflow_1000jobs_1500lam.csv.gz``), and the artifact is run on it too.

**Figure 11** (``run_fig11.sh``: 200 jobs, λ = 900 s, 10 … 90 % of them best-effort, 8 × 8
A100, 240 s slots): (a) the deadline jobs' satisfactory ratio, (b) the best-effort jobs' mean
JCT improvement over Gandiva's (Gandiva's mean ÷ the scheme's; each task runs Gandiva too).
Nine traces drawn as Figure 9's (``generate_trace.py --num_jobs=200 --lam=900
--best_effort_percentage=<share>``, global ``random`` seeded 0): the same jobs and deadlines
in each, the best-effort ones nested. Chronus' curve is left out.

**Figure 10** (``run_fig10.sh``: 100 jobs, λ = 1,500 s, deadlines 1.5 × duration, 16 × 8
A100, 240 s slots). The figure plots the cluster efficiency over time; the ratios compared
here are those of the very runs it plots, the authors' logs committed with the artifact
(``plot_figure/logs/figure10/<scheme>/final_result.csv``, last row, 2022-10-14). Its trace
(``generate_trace.py --num_jobs=100 --lam=1500 --min_ddl=1.5 --seed=1``: the deadline factor
is fixed, so the draw repeats) equals the authors' job for job (submission times and
deadlines of their ``job.csv``). Chronus' curve is left out.

The gaps above tolerance and their causes, from the two codes, are in `GAPS`; what was
measured is at the end of this docstring.

Tolerance: ±0.03 absolute on the ratio (8 of 260 jobs, 30 of 1,000, 3 of 100); ±10 % on
Figure 11(b)'s JCT improvement.

Measured (2026-12-03, this machine; ours / the artifact on the same inputs / published):

- Figure 8(b), cluster 10 (``--quick``, 14 CPU s): EDF 0.777 / 0.777 / 0.769, the very 202
  jobs; Gandiva 0.335 / 0.331 / 0.354; Tiresias 0.477 / 0.477 / 0.473, the same 124 jobs;
  Themis 0.473 / 0.473 / 0.431, the same 123 jobs; ElasticFlow 0.973 / 0.962 (planned ends;
  249 by real ends) / 0.981.
- Figure 8(b), all eleven traces (52 of the 55 points: ElasticFlow on clusters 4, 7 and 8,
  12,699-15,802 jobs on 1,024 GPUs, each ran over 20 CPU min and was stopped; 1,479 CPU s
  for the rest): 19 of 52 within tolerance of the published bars. EDF is the artifact's
  run to 0.001 on every trace it was run on (clusters 1-3, 5, 6, 8-10, Philly); Tiresias
  within 0.013; Gandiva within 0.035 but cluster 1 (0.271 / 0.162 / 0.246); ElasticFlow
  0.877 / 0.848 / 0.788 on cluster 1, 0.921 / 0.910 / 0.87 on Philly. The published bars
  sit below the artifact's own runs for most schemes and clusters (Philly: EDF 0.436 /
  0.436 / 0.01, Tiresias 0.466 / 0.466 / 0.32), so they are not what the released artifact
  computes on the released traces.
- Figure 9 (45 CPU s), 64 / 128 / 256 GPUs: EDF 0.020, 0.124, 0.216 (artifact 0.020, 0.124,
  0.216); EDF + admission control 0.211, 0.392, 0.648 (0.212, 0.324, 0.609); EDF + elastic
  scaling 0.712, 0.949, 0.958 (0.263, 0.729, 0.899); ElasticFlow 0.918, 0.928, 0.945
  (0.933, 0.956, 0.962). 8 of 12 within tolerance of the published bars.
- Figure 10 (2 CPU s): EDF 0.92, Gandiva 0.79, Tiresias 1.0, Themis 1.0, ElasticFlow 0.98
  (the artifact and the authors' logs: 0.92, 0.79, 1.0, 0.99, 1.0). 5 of 5.
- Figure 11 (32 CPU s), 10 … 90 % best-effort: ratios EDF 0.096 … 1.0 and Gandiva 0.29 …
  0.38, the artifact's to the third decimal; Tiresias 0.50 … 0.56, Themis 0.49 … 0.54,
  ElasticFlow 0.92 … 1.0 (the artifact 0.51 … 0.58, 0.45 … 0.49, 0.84 … 0.92; published
  0.41 … 0.53, 0.34 … 0.42, 0.67 … 0.95). JCT improvement over Gandiva: Tiresias and
  Themis 1.23 … 1.35 (artifact 1.22 … 1.39, published 1.26 … 1.46), ElasticFlow 1.55 … 1.78
  (1.55 … 1.68; 1.11 … 1.6), EDF 0.03 … 0.05 (0.03 … 0.05; 0.05 … 0.1). 23 of 81 within
  tolerance of the published curves: on this draw of the deadlines the artifact itself is
  0.05–0.1 above them for every scheme.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.reproduce.base import Point, Reproduction, Task, Tolerance
from dlsched.reproduce.elasticflow import SCHEMES, registered

TOLERANCE = Tolerance(abs=0.03)
JCT_TOLERANCE = Tolerance(rel=0.10)
"""Figure 11(b)'s JCT improvement, a ratio of two means: ±10 %."""


@dataclass(frozen=True)
class Setup:
    """One x of a figure: a bundled trace, a bundled cluster, the slot and the job count."""

    label: str
    x: float
    trace: str
    cluster: str
    slot_s: float
    jobs: int


def _itp(number: int, cluster: str, jobs: int) -> Setup:
    name = f"elasticflow_itp_cluster{number:02d}.csv" + ("" if number == 10 else ".gz")
    return Setup(f"cluster {number}", float(number), name, cluster, 60.0, jobs)


_N64, _N128, _N32 = "elasticflow-n64g8-a100", "elasticflow-n128g8-a100", "elasticflow-n32g8-a100"
FIG8B = (
    _itp(1, _N64, 1595),
    _itp(2, _N64, 5778),
    _itp(3, _N64, 3011),
    _itp(4, _N128, 15802),
    _itp(5, _N64, 3629),
    _itp(6, _N64, 2396),
    _itp(7, _N128, 12699),
    _itp(8, _N128, 13047),
    _itp(9, _N128, 11134),
    _itp(10, _N32, 260),
    Setup("Philly", 11.0, "elasticflow_philly_103959.csv.gz", _N32, 60.0, 876),
)
"""Figure 8(b)'s x axis: ITP clusters 1 … 10 and Philly (x = 11), with ``run_fig8b.sh``'s
cluster for each."""

FIG9 = tuple(
    Setup(
        f"{8 * nodes} GPUs",
        float(8 * nodes),
        "elasticflow_1000jobs_1500lam.csv.gz",
        f"elasticflow-n{nodes}g8-a100",
        240.0,
        1000,
    )
    for nodes in (8, 16, 32)
)
FIG11 = tuple(
    Setup(
        f"{round(100 * share)} % best-effort",
        round(100 * share, 6),
        f"elasticflow_200jobs_900lam_be{share:g}.csv",
        "elasticflow-n8g8-a100",
        240.0,
        200,
    )
    for share in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
)
"""Figure 11's x axis: the share of best-effort jobs (%), one trace each."""
FIG10 = Setup(
    "100 jobs", 100.0, "elasticflow_100jobs_1500lam.csv", "elasticflow-n16g8-a100", 240.0, 100
)

FIG9_SCHEMES: dict[str, tuple[str, dict[str, Any]]] = {
    "EDF": ("elasticflow_edf", {}),
    "EDF + Admission Control": ("elasticflow_edf_ac", {}),
    "EDF + Elastic Scaling": ("elasticflow", {"unmet": "admit"}),
    "ElasticFlow": ("elasticflow", {}),
}
"""Figure 9's schemes → (dlsched policy, parameters): the artifact's ``edf``,
``edf-accessctrl``, ``ef`` and ``ef-accessctrl``."""

_8B = ("EDF", "Gandiva", "Tiresias", "Themis", "ElasticFlow")
PUBLISHED: dict[str, dict[str, tuple[float, ...]]] = {
    "elasticflow-fig8b": {  # plot_fig8b.py, clusters 1 … 10 and Philly
        "EDF": (0.182, 0.228, 0.095, 0.007, 0.375, 0.105, 0.046, 0.252, 0.800, 0.769, 0.01),
        "Gandiva": (0.246, 0.286, 0.314, 0.228, 0.228, 0.381, 0.351, 0.325, 0.329, 0.354, 0.15),
        "Tiresias": (0.478, 0.470, 0.401, 0.120, 0.420, 0.466, 0.346, 0.373, 0.468, 0.473, 0.32),
        "Themis": (0.464, 0.431, 0.389, 0.432, 0.430, 0.425, 0.437, 0.423, 0.456, 0.431, 0.33),
        "ElasticFlow": (0.788, 0.822, 0.455, 0.631, 0.832, 0.607, 0.665, 0.896, 0.938, 0.981, 0.87),
    },
    "elasticflow-fig9": {  # plot_fig9.py, 64, 128, 256 GPUs
        "EDF": (0.026, 0.118, 0.118),
        "EDF + Admission Control": (0.203, 0.326, 0.658),
        "EDF + Elastic Scaling": (0.452, 0.835, 0.939),
        "ElasticFlow": (0.926, 0.949, 0.944),
    },
    "elasticflow-fig11": {  # plot_fig11.py (a), 10 % … 90 % best-effort jobs
        "EDF": (0.09, 0.1, 0.15, 0.15, 0.23, 0.28, 0.44, 0.79, 0.95),
        "Gandiva": (0.25, 0.24, 0.2, 0.18, 0.19, 0.17, 0.18, 0.18, 0.16),
        "Tiresias": (0.46, 0.46, 0.44, 0.42, 0.43, 0.41, 0.44, 0.5, 0.53),
        "Themis": (0.41, 0.4, 0.37, 0.34, 0.36, 0.34, 0.35, 0.42, 0.37),
        "ElasticFlow": (0.74, 0.67, 0.67, 0.69, 0.68, 0.76, 0.82, 0.92, 0.95),
    },
    "elasticflow-fig11-jct": {  # plot_fig11.py (b): Gandiva's best-effort JCT / the scheme's
        "EDF": (0.05, 0.05, 0.05, 0.05, 0.07, 0.07, 0.08, 0.08, 0.1),
        "Tiresias": (1.44, 1.39, 1.33, 1.31, 1.26, 1.27, 1.28, 1.3, 1.45),
        "Themis": (1.37, 1.36, 1.34, 1.32, 1.26, 1.27, 1.29, 1.29, 1.46),
        "ElasticFlow": (1.6, 1.37, 1.18, 1.11, 1.27, 1.24, 1.19, 1.16, 1.31),
    },
    "elasticflow-fig10": {  # the authors' logs, plot_figure/logs/figure10/*/final_result.csv
        "EDF": (0.92,),
        "Gandiva": (0.79,),
        "Tiresias": (1.0,),
        "Themis": (0.99,),
        "ElasticFlow": (1.0,),
    },
}
"""Reproduction → scheme → the published value at each of its setups, in order."""

_NA = None  # not run
ARTIFACT: dict[str, dict[str, tuple[float | None, ...]]] = {
    "elasticflow-fig8b": {  # clusters 4, 7, 8: the baselines stopped for time (see below)
        "EDF": (0.1868, 0.2447, 0.1026, _NA, 0.4045, 0.1077, _NA, 0.3319, 0.843, 0.7769, 0.4361),
        "Gandiva": (0.1624, 0.3198, 0.3324, _NA, 0.2486, 0.3919, _NA, _NA, 0.3382, 0.3308, 0.4132),
        "Tiresias": (0.4934, 0.487, 0.4311, _NA, 0.4817, 0.4816, _NA, _NA, 0.4821, 0.4769, 0.4658),
        "Themis": (_NA,) * 9 + (0.4731, _NA),
        "ElasticFlow": (0.8476,) + (_NA,) * 8 + (0.9615, 0.9098),
    },
    "elasticflow-fig9": {
        "EDF": (0.020, 0.124, 0.216),
        "EDF + Admission Control": (0.212, 0.324, 0.609),
        "EDF + Elastic Scaling": (0.263, 0.729, 0.899),
        "ElasticFlow": (0.933, 0.956, 0.962),
    },
    "elasticflow-fig11": {
        scheme: (None,) * 9 for scheme in ("EDF", "Gandiva", "Tiresias", "Themis", "ElasticFlow")
    },
    "elasticflow-fig11-jct": {
        scheme: (None,) * 9 for scheme in ("EDF", "Tiresias", "Themis", "ElasticFlow")
    },
    "elasticflow-fig10": {
        "EDF": (0.92,),
        "Gandiva": (0.79,),
        "Tiresias": (1.0,),
        "Themis": (0.99,),
        "ElasticFlow": (1.0,),
    },
}
"""The artifact run unmodified on the same inputs here (2026-12-03; Python 3.11, cvxpy 1.9.3):
in ``ElasticFlow/scheduler``, ``python3 scheduler.py --cluster_spec=cluster_specs/<spec>.csv
--print --scheme=<elastic, gandiva for gandiva> --trace_file=<trace> --schedule=<edf|gandiva|
dlas-gpu|themis|ef-accessctrl|edf-accessctrl|ef> --log_path=<dir> --simulation=True
--scheduling_slot=<60|240> --gpu_type=A100``; the ratio of its ``final_result.csv``. None: not
run: Themis' loop takes 288 s on 260 jobs and grows faster than the job count, its
ElasticFlow 35 min on cluster 1's 1,595 jobs, and its baselines on clusters 4, 7 and 8 (12,699
to 15,802 jobs) were stopped for time."""

_EF_MINUS = (
    "ours is above the artifact on the same trace (its ef); the artifact's misses start "
    "with jobs whose just-in-time minimum-share plans end 100-250 s late (job 10 on 32 GPUs: "
    "12,447 s against its 12,202 s deadline), as its loop re-charges every running job's "
    "overhead at every event, which dlsched does not (dlsched.elasticflow_overheads: not "
    "modelled), and ef counts real ends where ef-accessctrl counts planned ones"
)
GAPS: dict[tuple[str, str, float], str] = {
    ("elasticflow-fig8b", "Themis", 10.0): "the artifact itself, run unmodified on the "
    "paper's trace, meets the same 123 deadlines as ours (0.473), not the published 0.431",
    ("elasticflow-fig9", "EDF", 256.0): "ours is the artifact's 0.216 on the same trace; "
    "the published 0.118 repeats the 128-GPU bar in plot_fig9.py",
    ("elasticflow-fig9", "EDF + Admission Control", 128.0): "not explained: the artifact "
    "gives 0.324 on the same trace; the two first part at job 85 (accepted here, declined "
    "there), the earlier 84 admissions agreeing",
    ("elasticflow-fig9", "EDF + Elastic Scaling", 64.0): _EF_MINUS,
    ("elasticflow-fig9", "EDF + Elastic Scaling", 128.0): _EF_MINUS,
}
_DRAW = (
    "the published curve is of the authors' draw of the deadlines, which the generator's "
    "unseeded random cannot repeat: on this draw the artifact itself is above it for every "
    "scheme"
)
_FIG11 = {
    "EDF": "ours is the artifact's run on the same trace (the same jobs met); " + _DRAW,
    "Gandiva": "ours is the artifact's run on the same trace; " + _DRAW,
    "Tiresias": "ours is within 0.04 of the artifact's run on the same trace; " + _DRAW,
    "Themis": "ours is 0.03-0.05 above the artifact's run on the same trace; " + _DRAW,
    "ElasticFlow": "ours is 0.05-0.09 above the artifact's run on the same trace; one "
    "difference of the two codes that may account for it, not measured: the artifact plans "
    "a best-effort job as a deadline job due at sys.maxsize (a minimum share of 1 GPU in "
    "every slot, jobs.py), dlsched after the deadline jobs with share 0; " + _DRAW,
}
for _scheme, _why in _FIG11.items():
    for _x in (10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0):
        GAPS[("elasticflow-fig11", _scheme, _x)] = _why
        GAPS[("elasticflow-fig11-jct", _scheme, _x)] = (
            "the JCT improvement of the artifact's run on the same trace is in the note; " + _DRAW
        )
_BARS = (
    "the published bars are mostly below what the released artifact computes on the released traces"
)
_FIG8B = {
    "EDF": "ours is the artifact's own run on the same trace wherever it was run (all but "
    "clusters 4 and 7, to 0.001); " + _BARS,
    "Gandiva": "ours is within 0.035 of the artifact's run on the same trace but on "
    "cluster 1 (0.271 against 0.162: the two part in the first 600 jobs, 242 met here, 67 "
    "there, and agree after job 636; not traced to a line); " + _BARS,
    "Tiresias": "ours is within 0.013 of the artifact's run on the same trace wherever it "
    "was run; " + _BARS,
    "Themis": "ours is the artifact's run on cluster 10 (the same 123 jobs), the only one "
    "run there (its Themis loop is slow); ours is 0.03-0.13 above every published bar",
    "ElasticFlow": "ours is 0.01-0.03 above the artifact's run on clusters 1, 10 and Philly "
    "(0.848, 0.962, 0.910; the artifact counts planned ends, dlsched real ones); " + _BARS,
}
for _scheme, _why in _FIG8B.items():
    for _setup in FIG8B:
        GAPS.setdefault(("elasticflow-fig8b", _scheme, _setup.x), _why)
"""(reproduction, scheme, x) → why ours is outside tolerance there, from the two codes."""


def data_path(name: str) -> Path:
    """A file shipped in ``dlsched/data``."""
    return Path(__file__).resolve().parent.parent / "data" / name


def task_spec(policy: str, params: Mapping[str, Any], setup: Setup) -> dict[str, Any]:
    """The task of `policy` on `setup`, with the figure's slot."""
    slot = {"lease_s": setup.slot_s} if policy == "themis" else {"slot_s": setup.slot_s}
    return {
        "policy": policy,
        "params": {**params, **slot},
        "trace": setup.trace,
        "cluster": setup.cluster,
    }


def _simulate(spec: Mapping[str, Any], policy: str, params: Mapping[str, Any]) -> Any:
    import dlsched
    from dlsched.traces.transforms import make_elastic

    work = make_elastic(dlsched.load_trace(data_path(spec["trace"])), min_gpus=1, max_gpus=64)
    chosen = dlsched.policies.get(policy, **dict(params))
    return dlsched.simulate(
        work, spec["cluster"], policy=chosen, throughput="elasticflow", audit=False
    )


def best_effort_jct(jobs: Any) -> float:
    """The mean JCT of the finished jobs submitted without a deadline (NaN when none)."""
    best_effort = jobs[jobs["deadline"].isna() & jobs["finish_time"].notna()]
    return float(best_effort["jct"].mean()) if len(best_effort) else math.nan


def measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """One scheme on one setup: its deadline-satisfactory ratio, admission counts and the
    best-effort jobs' mean JCT; with a ``baseline`` policy (Figure 11: Gandiva), also that
    JCT's improvement over the baseline's (baseline JCT ÷ the scheme's)."""
    result = _simulate(spec, spec["policy"], spec.get("params", {}))
    summary = result.summary()
    out = {
        "deadline_satisfactory_ratio": float(summary["deadline_satisfactory_ratio"]),
        "jobs_declined": float(summary.get("jobs_declined", 0)),
        "deadlines_missed": float(summary.get("deadlines_missed", 0)),
        "best_effort_jct": best_effort_jct(result.jobs),
    }
    if "baseline" in spec:
        base = _simulate(spec, spec["baseline"], {"slot_s": spec["params"].get("slot_s", 240.0)})
        out["best_effort_jct_improvement"] = best_effort_jct(base.jobs) / out["best_effort_jct"]
    return out


def _points(
    name: str,
    figure: str,
    x_name: str,
    setups: tuple[Setup, ...],
    schemes: Mapping[str, tuple[str, dict[str, Any]]],
    chosen: tuple[Setup, ...],
    metric: str = "deadline_satisfactory_ratio",
    references: str | None = None,
    extra: Mapping[str, Any] | None = None,
    tolerance: Tolerance = TOLERANCE,
) -> list[Point]:
    """One point per scheme and chosen setup, read against ``PUBLISHED[references]`` (default
    `name`); `extra` goes into every task's spec."""
    key = references or name
    points = []
    for scheme, (policy, params) in schemes.items():
        if scheme not in PUBLISHED[key]:
            continue
        if not registered(policy):
            print(
                f"{name}: {scheme} left out: policy {policy!r} is not registered", file=sys.stderr
            )
            continue
        for i, setup in enumerate(setups):
            if setup not in chosen:
                continue
            artifact = ARTIFACT[key][scheme][i]
            note = f"{setup.label}: artifact's own run " + (
                "not run" if artifact is None else f"{artifact:.3f}"
            )
            gap = GAPS.get((key, scheme, setup.x))
            if gap:
                note += f"; {gap}"
            tag = "-".join(str(v) for v in params.values())
            points.append(
                Point(
                    figure=figure,
                    series=scheme,
                    x=setup.x,
                    x_name=x_name,
                    metric=metric,
                    published=PUBLISHED[key][scheme][i],
                    tolerance=tolerance,
                    task=Task(
                        f"{name}-{policy}{'-' + tag if tag else ''}-{setup.x:g}",
                        {**task_spec(policy, params, setup), **(extra or {})},
                    ),
                    note=note,
                )
            )
    return points


def plan_8b(shared: Path, quick: bool) -> list[Point]:
    """The five schemes on the eleven traces (quick: cluster 10)."""
    chosen = FIG8B[9:10] if quick else FIG8B
    figure = "Figure 8(b): deadline-satisfactory ratio, ITP clusters 1-10 and Philly (11)"
    return _points("elasticflow-fig8b", figure, "cluster", FIG8B, SCHEMES, chosen)


def plan_9(shared: Path, quick: bool) -> list[Point]:
    """The four schemes on 64, 128 and 256 GPUs (quick: 64 GPUs)."""
    chosen = FIG9[:1] if quick else FIG9
    figure = "Figure 9: deadline-satisfactory ratio, 1,000 jobs, by cluster size"
    return _points("elasticflow-fig9", figure, "GPUs", FIG9, FIG9_SCHEMES, chosen)


def plan_11(shared: Path, quick: bool) -> list[Point]:
    """The five schemes at nine best-effort shares: the deadline jobs' satisfactory ratio and
    the best-effort jobs' JCT improvement over Gandiva (quick: 50 %)."""
    chosen = FIG11[4:5] if quick else FIG11
    extra = {"baseline": "elasticflow_gandiva"}
    ratio = _points(
        "elasticflow-fig11",
        "Figure 11(a): deadline-satisfactory ratio, 200 jobs, 8 x 8 A100, by best-effort share",
        "% best-effort",
        FIG11,
        SCHEMES,
        chosen,
        extra=extra,
    )
    jct = _points(
        "elasticflow-fig11",
        "Figure 11(b): best-effort JCT improvement over Gandiva, by best-effort share",
        "% best-effort",
        FIG11,
        SCHEMES,
        chosen,
        metric="best_effort_jct_improvement",
        references="elasticflow-fig11-jct",
        extra=extra,
        tolerance=JCT_TOLERANCE,
    )
    return ratio + jct


def plan_10(shared: Path, quick: bool) -> list[Point]:
    """The five schemes on Figure 10's trace (quick: the same five)."""
    figure = "Figure 10: deadline-satisfactory ratio, 100 jobs, 16 x 8 A100"
    return _points("elasticflow-fig10", figure, "jobs", (FIG10,), SCHEMES, (FIG10,))


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            paper="ElasticFlow (Gu et al., ASPLOS 2023)",
            data=(),
            measure=measure,
            name="elasticflow-fig8b",
            source="Figure 8(b): deadline-satisfactory ratio of EDF, Gandiva, Tiresias, "
            "Themis and ElasticFlow on the paper's ten ITP traces and Philly, 60 s slots; "
            "the artifact's own run beside",
            plan=plan_8b,
            quick_subset="cluster 10 (260 jobs, 32 x 8 A100), the five schemes",
            cost_quick="~0.3 CPU min",
            cost_full="over an hour (ElasticFlow on clusters 4, 7, 8: 20+ CPU min each)",
            summary="ElasticFlow (ASPLOS '23) Figure 8(b), vs published and the artifact",
        )
    )
    register(
        Reproduction(
            paper="ElasticFlow (Gu et al., ASPLOS 2023)",
            data=(),
            measure=measure,
            name="elasticflow-fig9",
            source="Figure 9: deadline-satisfactory ratio of EDF, EDF + admission control, "
            "EDF + elastic scaling and ElasticFlow on 1,000 jobs, 64/128/256 A100, 240 s "
            "slots; the artifact's own run beside",
            plan=plan_9,
            quick_subset="64 GPUs, the four schemes",
            cost_quick="~0.5 CPU min",
            cost_full="~2 CPU min",
            summary="ElasticFlow (ASPLOS '23) Figure 9, vs published and the artifact",
        )
    )
    register(
        Reproduction(
            paper="ElasticFlow (Gu et al., ASPLOS 2023)",
            data=(),
            measure=measure,
            name="elasticflow-fig11",
            source="Figure 11: deadline-satisfactory ratio and best-effort JCT improvement "
            "over Gandiva of EDF, Gandiva, Tiresias, Themis and ElasticFlow, 200 jobs with "
            "10-90 % best-effort jobs on 8 x 8 A100, 240 s slots; the artifact's own run beside",
            plan=plan_11,
            quick_subset="50 % best-effort jobs, the five schemes",
            cost_quick="~0.3 CPU min",
            cost_full="~3 CPU min",
            summary="ElasticFlow (ASPLOS '23) Figure 11, vs published and the artifact",
        )
    )
    register(
        Reproduction(
            paper="ElasticFlow (Gu et al., ASPLOS 2023)",
            data=(),
            measure=measure,
            name="elasticflow-fig10",
            source="Figure 10's runs: deadline-satisfactory ratio of EDF, Gandiva, Tiresias, "
            "Themis and ElasticFlow, 100 jobs on 16 x 8 A100, 240 s slots, against the "
            "authors' logs of the figure",
            plan=plan_10,
            quick_subset="all five schemes (one run each)",
            cost_quick="~0.1 CPU min",
            cost_full="~0.1 CPU min",
            summary="ElasticFlow (ASPLOS '23) Figure 10's runs, vs the authors' logs and "
            "the artifact",
        )
    )


_register()
