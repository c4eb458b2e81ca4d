"""`elasticflow-fig8a`: ElasticFlow's Figure 8(a) (Gu et al., "ElasticFlow: An Elastic
Serverless Training Platform for Distributed Deep Learning", ASPLOS '23), the
deadline-satisfactory ratio of five schedulers on 195 jobs, 16 × 4 T4, 60 s slots.

Setup, as ``run_fig8a.sh`` of the artifact (``pkusys/ElasticFlow`` @ 04a0109): the trace
``traces_for_ElasticFlow/elasticVpollux_e.csv`` (bundled, ``dlsched/data/
elasticflow_elasticVpollux_e.csv``) made elastic on 1 … 64 GPUs (``make_elastic``), the
``elasticflow-n16g4-t4`` cluster, the artifact's T4 throughputs (``throughput="elasticflow"``)
and its overheads (each policy's default, the ``elasticflow`` preset for `elasticflow`).

Each point has two references: the **published** ratio (the paper's Figure 8(a)) and the
**artifact's own run** of the same inputs (`ARTIFACT`), which reproduces the published bars
exactly (Gandiva 0.0923 is the paper's "0.09"). Ours is compared with the published number;
the artifact's is in each point's note.

Counting. The artifact's ratio is ``accepted / (accepted + declined)``, where for
``ef-accessctrl`` a job counts as satisfied when its *planned* end (``real_end_time`` of
``ef_sim_allocation``, before restart and scaling overheads) meets its deadline: of its 145
admitted jobs 18 really end after their deadlines (by up to 147 s, the overheads), 3 of them
are counted as missed. Counted by real ends, as dlsched counts every policy, the artifact's
ElasticFlow meets 127 of 195 deadlines (0.651), `ARTIFACT_STRICT`. The baselines' loops
(``edf``, ``gandiva``, ``dlas-gpu``, ``themis``) count real ends.

Schemes. The baselines are the artifact's variants (`dlsched.policies.elasticflow_baselines`):
``elasticflow_edf`` (its EDF gives each job, in deadline order, its largest GPU count, up to
64 GPUs, which starves the jobs behind it), ``elasticflow_gandiva`` (the Tiresias
simulator's Gandiva: node sets per job size with a load that never goes down, time slicing,
scheduling only at arrivals), ``elasticflow_tiresias`` (the Tiresias authors' simulator with
scheduling points a slot apart) and ``themis`` with ``reading="artifact"``; ElasticFlow is
``elasticflow``. dlsched's own readings of the baselines' papers (`OWN`: ``edf``,
``gandiva``, ``tiresias``, ``themis``) are not the published bars' schedulers; they stay
available to run by hand (``measure({"policy": "edf"}, ...)``) and measured (2026-12-02)
EDF 0.313, Gandiva 0.333, Tiresias 0.313, Themis (paper) 0.338.

Measured (``dlsched reproduce elasticflow-fig8a --quick``, 84 CPU s, 2026-12-02; the
artifact's own run in brackets, published second): EDF 0.118, 23/195 (0.118; 0.118), the
artifact's very 23 jobs; Gandiva 0.097, 19/195 (0.092; 0.09): 17 jobs in common; job 19
meets its deadline by 3 s here and misses it by 1 s in the artifact, whose per-point
overhead (4 + 2 log2 n s at every point while arrivals remain) dlsched's engine does not
charge to a job that keeps its GPUs; jobs 167 (met here) and 193 (met there) end far apart,
the node sets having diverged from t = 3,755,548 s, where an 8-GPU job ends a point sooner
here (most likely the same overhead: 10 s a point on 8 GPUs). Tiresias 0.292, 57/195 (0.287;
0.287), 55 in common. Themis (``reading="artifact"``) 0.318, 62/195 (0.313; 0.312).
ElasticFlow 0.718, 140/195 (0.728; 0.728; 0.723, 141, before ElasticFlow re-packed
fragmented placements, 2026-12-03). Every point is within tolerance.

Tolerance: ±0.03 absolute on the ratio (6 of 195 jobs). A scheme whose policy is not
registered is left out of the plan with a printed note.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlsched.reproduce.base import Point, Reproduction, Task, Tolerance

TRACE = "elasticflow_elasticVpollux_e.csv"
"""The Figure 8(a) trace, shipped in ``dlsched/data``."""
CLUSTER = "elasticflow-n16g4-t4"
TOLERANCE = Tolerance(abs=0.03)

SCHEMES: dict[str, tuple[str, dict[str, Any]]] = {
    "EDF": ("elasticflow_edf", {}),
    "Gandiva": ("elasticflow_gandiva", {}),
    "Tiresias": ("elasticflow_tiresias", {}),
    "Themis": ("themis", {"reading": "artifact"}),
    "ElasticFlow": ("elasticflow", {}),
}
"""Figure 8(a)'s schemes → (dlsched policy, parameters): the artifact's variants."""

OWN: dict[str, tuple[str, dict[str, Any]]] = {
    "EDF": ("edf", {}),
    "Gandiva": ("gandiva", {}),
    "Tiresias": ("tiresias", {}),
    "Themis": ("themis", {}),
}
"""dlsched's own readings of the baselines' papers (not planned: module docstring)."""

PUBLISHED: dict[str, float] = {
    "EDF": 0.118,
    "Gandiva": 0.09,
    "Tiresias": 0.287,
    "Themis": 0.312,
    "ElasticFlow": 0.728,
}
"""The paper's Figure 8(a) bars."""

ARTIFACT: dict[str, tuple[str, int, float]] = {
    # scheme: (the artifact's --schedule, jobs counted satisfied of 195, ddl_satis_ratio)
    "EDF": ("edf", 23, 0.11794871794871795),
    "Gandiva": ("gandiva", 18, 0.09230769230769231),
    "Tiresias": ("dlas-gpu", 56, 0.28717948717948716),
    "Themis": ("themis", 61, 0.3128205128205128),
    "ElasticFlow": ("ef-accessctrl", 142, 0.7282051282051282),
}
"""The artifact run unmodified on the same inputs (2026-12-02, Python 3.11, cvxpy 1.9.3 with
ECOS, protobuf 3.20.3): in ``ElasticFlow/scheduler``, ``python3 scheduler.py
--cluster_spec=cluster_specs/n16g4.csv --print --scheme=<elastic|gandiva for gandiva>
--trace_file=../traces_for_ElasticFlow/elasticVpollux_e.csv --schedule=<schedule>
--log_path=<dir> --simulation=True --scheduling_slot=60 --gpu_type=T4`` (``run_fig8a.sh``'s
flags); the ratio is its ``final_result.csv``. CPU: edf 2 s, gandiva 9 s, dlas-gpu 2 s,
themis 1,530 s, ef-accessctrl ~10 s."""
ARTIFACT_STRICT = {"ElasticFlow": 127 / 195}
"""The artifact's ef-accessctrl counted by real ends (its ``job.csv``: ``end_time <= ddl``)."""


def trace_path() -> Path:
    """The bundled Figure 8(a) trace."""
    return Path(__file__).resolve().parent.parent / "data" / TRACE


def measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """One scheme on Figure 8(a): its deadline-satisfactory ratio and admission counts."""
    import dlsched
    from dlsched.traces.transforms import make_elastic

    work = make_elastic(dlsched.load_trace(trace_path()), min_gpus=1, max_gpus=64)
    policy = dlsched.policies.get(spec["policy"], **dict(spec.get("params", {})))
    summary = dlsched.simulate(
        work, CLUSTER, policy=policy, throughput="elasticflow", audit=False
    ).summary()
    return {
        "deadline_satisfactory_ratio": float(summary["deadline_satisfactory_ratio"]),
        "jobs_declined": float(summary.get("jobs_declined", 0)),
        "deadlines_missed": float(summary.get("deadlines_missed", 0)),
    }


def registered(policy: str) -> bool:
    """Whether `policy` is a registered dlsched policy."""
    from dlsched.policies.registry import names

    return policy in names()


def plan(shared: Path, quick: bool) -> list[Point]:
    """One point per Figure 8(a) scheme whose policy is registered (quick: the same five)."""
    points = []
    for scheme, (policy, params) in SCHEMES.items():
        if not registered(policy):
            print(
                f"elasticflow-fig8a: {scheme} left out: policy {policy!r} is not registered",
                file=sys.stderr,
            )
            continue
        schedule, satisfied, ratio = ARTIFACT[scheme]
        note = f"artifact's own run ({schedule}): {ratio:.3f} ({satisfied}/195)"
        if scheme in ARTIFACT_STRICT:
            note += f"; by real ends {ARTIFACT_STRICT[scheme]:.3f}"
        points.append(
            Point(
                figure="Figure 8(a): deadline-satisfactory ratio, 195 jobs, 16 x 4 T4",
                series=scheme,
                x=64.0,
                x_name="GPUs",
                metric="deadline_satisfactory_ratio",
                published=PUBLISHED[scheme],
                tolerance=TOLERANCE,
                task=Task(f"fig8a-{policy}", {"policy": policy, "params": params}),
                note=note,
            )
        )
    return points


def _register() -> None:
    from dlsched.reproduce import register

    register(
        Reproduction(
            name="elasticflow-fig8a",
            paper="ElasticFlow (Gu et al., ASPLOS 2023)",
            source="Figure 8(a): deadline-satisfactory ratio of EDF, Gandiva, Tiresias, Themis "
            "and ElasticFlow, 195 jobs on 16 x 4 T4, 60 s slots; the artifact's own run beside",
            data=(),
            plan=plan,
            measure=measure,
            quick_subset="all five schemes (one run each)",
            cost_quick="~1.5 CPU min",
            cost_full="~1.5 CPU min",
            summary="ElasticFlow (ASPLOS '23) Figure 8(a), vs published and the artifact",
            # 1: ElasticFlow re-packs fragmented placements (2026-12-03), 0.723 -> 0.718
            revision=1,
        )
    )


_register()
