"""Jobs whose batch size changes while they run (`dlsched.perf.dynamic`).

The hand-made profile below runs ResNet-18 at 10 it/s with batch 32, 8 it/s with batch 64
and 5 it/s with batch 128 on one V100. A step is one iteration at the job's initial batch
size, so at batch 64 a job started at 32 does 8 × 64/32 = 16 steps/s, at 128 20 steps/s.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.errors import ConfigError, SchedulingError, TraceError
from dlsched.jobs import JobSpec, JobState
from dlsched.perf import ProfileTable
from dlsched.perf.dynamic import (
    BatchSchedule,
    DynamicBatchModel,
    DynamicEstimator,
    Phase,
    format_batch_schedule,
    parse_batch_schedule,
    schedules_from_workload,
)
from dlsched.perf.rates import JobRates
from dlsched.traces.schema import validate_jobs
from dlsched.traces.transforms_dynamic import add_batch_schedules, critical

R18 = "ResNet-18 (batch size {})"
IT_S = {32: 10.0, 64: 8.0, 128: 5.0}


def profile() -> ProfileTable:
    return ProfileTable(
        {"v100": {f"('{R18.format(bs)}', 1)": {"null": rate} for bs, rate in IT_S.items()}},
        source="hand",
    )


def one_gpu() -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "one", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 1}]}
    )


def jobs(*rows: tuple[str, float, str | None]) -> pd.DataFrame:
    """(job id, total steps, batch schedule) jobs of ResNet-18 at batch 32, all at time 0."""
    return pd.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "submit_time": 0.0,
            "num_gpus": 1,
            "total_steps": [r[1] for r in rows],
            "model": R18.format(32),
            "batch_schedule": [r[2] for r in rows],
        }
    )


def finishes(result: dlsched.SimulationResult) -> dict[object, float]:
    return dict(zip(result.jobs["job_id"], result.jobs["finish_time"], strict=True))


class Alternate:
    """One GPU, handed to the other active job at every 5 s round (the first at time 0)."""

    name = "alternate"
    round_s = 5.0

    def schedule(self, view):
        alloc = view.allocation()
        active = sorted([*view.running.values(), *view.pending.values()], key=lambda s: s.job_id)
        if not active:
            return alloc
        holder = next((s for s in active if s.gpus), None)
        if holder is None:
            alloc[active[0].job_id] = (0,)
        elif view.is_round and len(active) > 1:
            nxt = active[(active.index(holder) + 1) % len(active)]
            del alloc[holder.job_id]
            alloc[nxt.job_id] = (0,)
        return alloc


# ---- the schedule text ----------------------------------------------------------------


def test_parse_and_format_round_trip():
    phases = parse_batch_schedule(" 20:32 ; 30:64;")
    assert phases == (Phase(20.0, 32), Phase(30.0, 64))
    assert format_batch_schedule([*phases, Phase(5, 64), Phase(1.5, 128)]) == "20:32;35:64;1.5:128"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "must be a text"),
        (32, "must be a text"),
        ("20", "is not 'epochs:batch_size'"),
        ("a:32", "of two numbers"),
        ("0:32", "epochs > 0"),
        ("nan:32", "epochs > 0"),
        ("inf:32", "epochs > 0"),
        ("2:0", "whole batch size > 0"),
        ("2:32.5", "whole batch size > 0"),
        (";;", "no phase"),
    ],
)
def test_bad_schedules_name_the_column(text, why):
    with pytest.raises(ValueError, match=why) as info:
        parse_batch_schedule(text)
    assert "batch_schedule" in str(info.value)


def test_trace_validation_refuses_a_bad_schedule_with_row_and_field():
    table = jobs(("a", 100.0, "1:32;1:64"), ("b", 100.0, "1:32;x"))
    with pytest.raises(TraceError, match="phase 'x'") as info:
        validate_jobs(table, "inline", lenient=False, fmt="canonical")
    assert info.value.field == "batch_schedule" and info.value.row == 3


def test_trace_validation_refuses_a_first_batch_other_than_the_models():
    with pytest.raises(TraceError, match="starts at batch size 64") as info:
        validate_jobs(jobs(("a", 100.0, "1:64;1:128")), "inline", lenient=False, fmt="canonical")
    assert info.value.field == "batch_schedule"


def test_lenient_validation_skips_only_the_bad_rows_and_keeps_the_text():
    table = jobs(("a", 100.0, "1:32;1:64"), ("b", 100.0, "oops"), ("c", 100.0, None))
    w = validate_jobs(table, "inline", lenient=True, fmt="canonical")
    assert w.jobs["job_id"].tolist() == ["a", "c"]
    assert w.jobs["batch_schedule"].tolist()[0] == "1:32;1:64"
    assert schedules_from_workload(w) == {"a": (Phase(1.0, 32), Phase(1.0, 64))}


# ---- the engine credits work exactly at each phase --------------------------------------


def test_two_phases_known_answer():
    """1000 steps, 1 epoch at 32 then 3 at 64: the phase bound is 1000 × 1/4 = 250 steps.
    250 steps at 10/s = 25 s, then 750 steps at 8 × 2 = 16/s = 46.875 s: done at 71.875."""
    truth = DynamicBatchModel(profile(), {"a": "1:32;3:64"})
    result = dlsched.simulate(
        jobs(("a", 1000.0, "1:32;3:64")), one_gpu(), "fifo", throughput=truth, audit=True
    )
    assert finishes(result) == {"a": 71.875}
    sched = BatchSchedule(parse_batch_schedule("1:32;3:64"), 1000.0)
    assert sched.bounds == (250.0, 1000.0)
    # iterations: 250 at batch 32, then 750 steps of 32 samples = 375 iterations at 64
    assert sched.iterations_left(0.0) == 625.0
    assert sched.iterations_left(250.0) == 375.0
    assert sched.iterations_left(1000.0) == 0.0


def test_a_job_without_a_schedule_runs_at_its_traced_batch():
    truth = DynamicBatchModel(profile(), {})
    result = dlsched.simulate(jobs(("a", 1000.0, None)), one_gpu(), "fifo", throughput=truth)
    assert finishes(result) == {"a": 100.0}


def test_work_is_kept_across_preemptions_and_phase_bounds():
    """Two 100-step jobs, 3 epochs at 32 then 2 at 64 (bound at 60 steps), swapped every 5 s.
    j0 0–5: 50 steps; j1 5–10: 50; j0 from 10: 10 steps to 60 by 11, then 40 at 16/s, done
    at 13.5; j1 from 13.5: 60 at 14.5, done at 17 (the 15 s round finds it alone)."""
    truth = DynamicBatchModel(profile(), {"j0": "3:32;2:64", "j1": "3:32;2:64"})
    table = jobs(("j0", 100.0, "3:32;2:64"), ("j1", 100.0, "3:32;2:64"))
    result = dlsched.simulate(table, one_gpu(), Alternate(), throughput=truth, audit=True)
    assert finishes(result) == {"j0": 13.5, "j1": 17.0}


def test_a_phase_back_to_a_smaller_batch():
    """Accordion goes back down: 1:32, 1:128, 2:32 over 400 steps (bounds 100, 200).
    100/10 + 100/20 + 200/10 = 10 + 5 + 20 = 35 s."""
    truth = DynamicBatchModel(profile(), {"a": "1:32;1:128;2:32"})
    result = dlsched.simulate(
        jobs(("a", 400.0, "1:32;1:128;2:32")), one_gpu(), "fifo", throughput=truth, audit=True
    )
    assert finishes(result) == {"a": 35.0}


def test_an_unmeasured_batch_is_an_error_or_the_same_samples_rate():
    table = jobs(("a", 100.0, "1:32;1:256"))
    with pytest.raises(SchedulingError, match="batch size 256"):
        dlsched.simulate(
            table, one_gpu(), "fifo", throughput=DynamicBatchModel(profile(), {"a": "1:32;1:256"})
        )
    same = DynamicBatchModel(profile(), {"a": "1:32;1:256"}, unmeasured="samples")
    assert finishes(dlsched.simulate(table, one_gpu(), "fifo", throughput=same)) == {"a": 10.0}


def test_bad_model_arguments_name_them():
    with pytest.raises(ValueError, match="unmeasured"):
        DynamicBatchModel(profile(), {}, unmeasured="guess")
    with pytest.raises(ValueError, match="known"):
        DynamicEstimator("later")
    with pytest.raises(ValueError, match="DynamicBatchModel"):
        dlsched.simulate(
            jobs(("a", 10.0, None)),
            one_gpu(),
            "fifo",
            throughput=profile(),
            estimator=DynamicEstimator(),
        )


# ---- what policies see ------------------------------------------------------------------


def _bound_estimator(known: str) -> tuple[DynamicEstimator, DynamicBatchModel, JobSpec]:
    truth = DynamicBatchModel(profile(), {"a": "1:32;3:64"})
    spec = JobSpec(0, "a", 0.0, 1, 1000.0, model=R18.format(32))
    est = DynamicEstimator(known)
    est.bind(JobRates(truth), [spec], one_gpu(), np.random.default_rng(0))
    return est, truth, spec


def test_advance_knows_the_whole_schedule_online_only_what_has_happened():
    advance, _, spec = _bound_estimator("advance")
    assert advance.duration(spec, "v100") == 71.875
    assert advance.throughput(spec, "v100") == 10.0  # the phase it is in
    online, truth, spec = _bound_estimator("online")
    assert online.duration(spec, "v100") == 100.0  # 1000 steps at batch 32's 10/s
    state = JobState(spec)
    state.steps_done = 250.0
    assert online.remaining_time(state, 0.0, "v100") == 75.0  # still believes 10/s
    truth.job_rate_from(spec, "v100", 1, 1, 250.0)  # the job reaches its second phase
    assert online.throughput(spec, "v100") == 16.0
    assert online.remaining_time(state, 0.0, "v100") == 46.875
    assert [p for *_, p in online.known_phases(spec)] == [0, 1]


def test_estimators_change_what_a_policy_does():
    """SRTF with two jobs: b (300 steps, no schedule: 30 s) and a (1000 steps that speed up
    to 71.875 s in all). Both estimators rank b first; a policy's ranking of a moves from
    100 s (online, before the change) to 71.875 s (advance) — the run is the same here, and
    the results are identical for a seed (determinism)."""
    truth = DynamicBatchModel(profile(), {"a": "1:32;3:64"})
    table = jobs(("a", 1000.0, "1:32;3:64"), ("b", 300.0, None))
    runs = [
        finishes(dlsched.simulate(table, one_gpu(), "srtf", throughput=truth, estimator=e))
        for e in (DynamicEstimator("advance"), DynamicEstimator("online"), DynamicEstimator())
    ]
    assert runs[0] == runs[2] == {"b": 30.0, "a": 101.875}
    assert runs[1] == runs[0]


# ---- property: work is conserved across random schedules -----------------------------------

PHASES = st.lists(
    st.tuples(st.floats(0.1, 20.0), st.sampled_from(sorted(IT_S))), min_size=1, max_size=5
)


def _reference(totals: list[float], schedules: list[list[tuple[float, int]]]) -> list[float]:
    """Finish times under `Alternate`, integrated independently of the engine."""
    segs = []
    for total, phases in zip(totals, schedules, strict=True):
        base = phases[0][1]
        epochs = np.cumsum([e for e, _ in phases])
        bounds = [total * e / epochs[-1] for e in epochs[:-1]] + [total]
        rates = [IT_S[b] * b / base for _, b in phases]
        segs.append(list(zip(bounds, rates, strict=True)))
    work = [0.0] * len(totals)
    done: list[float | None] = [None] * len(totals)
    t, holder, next_round = 0.0, 0, 5.0
    while any(d is None for d in done):
        # run the holder until the next round or its finish
        w, now = work[holder], t
        for bound, rate in segs[holder]:
            if w >= bound:
                continue
            need = (bound - w) / rate
            if now + need <= next_round:
                now, w = now + need, bound
            else:
                w, now = w + (next_round - now) * rate, next_round
                break
        work[holder] = w
        if w >= totals[holder]:
            done[holder], t = now, now
            others = [i for i, d in enumerate(done) if d is None]
            if not others:
                break
            holder = others[0]
            if t == next_round:
                next_round += 5.0
            continue
        t = next_round
        next_round += 5.0
        others = [i for i, d in enumerate(done) if d is None and i != holder]
        if others:
            holder = others[0]
    return [float(d) for d in done if d is not None]


@given(
    st.lists(st.tuples(st.floats(50.0, 2000.0), PHASES), min_size=1, max_size=2),
)
@settings(max_examples=40, deadline=None)
def test_work_is_conserved_across_random_schedules(specs):
    """Random schedules (first batch forced to 32), one or two jobs time-sliced every 5 s:
    each finishes when its work, phase by phase, is done — the reference integrates the
    same phases by hand; the audit checks no job does more steps than it has."""
    totals = [t for t, _ in specs]
    schedules = [[(phases[0][0], 32), *phases[1:]] for _, phases in specs]
    texts = [format_batch_schedule([Phase(e, b) for e, b in s]) for s in schedules]
    ids = [f"j{i}" for i in range(len(specs))]
    truth = DynamicBatchModel(profile(), dict(zip(ids, texts, strict=True)))
    table = jobs(*zip(ids, totals, texts, strict=True))
    result = dlsched.simulate(table, one_gpu(), Alternate(), throughput=truth, audit=True)
    got = finishes(result)
    expected = _reference(totals, [parse(s) for s in texts])
    assert [got[i] for i in ids] == pytest.approx(expected, rel=1e-9)


def parse(text: str) -> list[tuple[float, int]]:
    return [(p.epochs, p.batch_size) for p in parse_batch_schedule(text)]


# ---- the transform ----------------------------------------------------------------------


def _gavel_jobs(n: int = 24) -> dlsched.Workload:
    models = [
        "ResNet-18 (batch size 32)",
        "ResNet-50 (batch size 64)",
        "LM (batch size 20)",
        "Recommendation (batch size 1024)",
        "Transformer (batch size 64)",
        "A3C",
        "ResNet-18 (batch size 256)",
    ]
    table = pd.DataFrame(
        {
            "job_id": list(range(n)),
            "submit_time": [60.0 * i for i in range(n)],
            "num_gpus": 1,
            "total_steps": [40_000.0 + 1000 * i for i in range(n)],
            "model": [models[i % len(models)] for i in range(n)],
        }
    )
    return validate_jobs(table, "inline", lenient=False, fmt="canonical")


def test_the_transform_is_seeded_and_valid():
    w = _gavel_jobs()
    a, b, c = (add_batch_schedules(w, seed=s) for s in (1, 1, 2))
    assert a.jobs["batch_schedule"].equals(b.jobs["batch_schedule"])
    assert not a.jobs["batch_schedule"].equals(c.jobs["batch_schedule"])
    validate_jobs(a.jobs, "again", lenient=False, fmt="canonical")  # every text is valid
    entry = a.provenance["transforms"][-1]
    assert entry["name"] == "add_batch_schedules" and sum(entry["jobs_by_kind"].values()) == 24
    static = a.jobs["model"].isin(["A3C", "ResNet-18 (batch size 256)"])
    assert a.jobs.loc[static, "batch_schedule"].isna().all()  # no batch, or already largest


def test_accordion_follows_the_artifacts_critical_regimes():
    """ResNet-18 at 32 over 40,000 steps = 40,000 × 32 / 50,000 = 25.6 epochs: the first
    10 epochs critical (batch 32), the rest at the largest batch, 256."""
    w = _gavel_jobs(1)
    out = add_batch_schedules(w, mix={"accordion": 1.0}, seed=0)
    assert out.jobs["batch_schedule"].tolist() == ["10:32;15.6:256"]
    assert critical("ResNet-50", 64, 31) and not critical("ResNet-50", 64, 40)
    assert critical("Recommendation", 2048, 39) and not critical("Recommendation", 512, 30)


def test_gns_only_doubles_up_to_the_largest_batch():
    out = add_batch_schedules(_gavel_jobs(), mix={"gns": 1.0}, seed=5)
    for model, text in zip(out.jobs["model"], out.jobs["batch_schedule"], strict=True):
        if not isinstance(text, str):
            continue
        sizes = [p.batch_size for p in parse_batch_schedule(text)]
        assert all(b2 == 2 * b1 for b1, b2 in zip(sizes, sizes[1:], strict=False))
        assert max(sizes) <= {"ResNet-18": 256, "ResNet-50": 128, "LM": 80}.get(
            model.split(" (")[0], 8192
        )


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"mix": {"elastic": 1.0}}, "mix kind"),
        ({"mix": {"gns": -1.0}}, "mix"),
        ({"mix": {"gns": 0.0}}, "probability > 0"),
        ({"seed": -1}, "seed"),
    ],
)
def test_the_transform_refuses_bad_parameters(kwargs, why):
    kwargs.setdefault("seed", 0)
    with pytest.raises(ConfigError, match=why):
        add_batch_schedules(_gavel_jobs(2), **kwargs)


def test_a_transformed_workload_runs_on_gavels_table_with_work_conserved():
    """Every job of a transformed workload finishes on Gavel's own table, under audit."""
    w = add_batch_schedules(_gavel_jobs(8), seed=3)
    table = ProfileTable.gavel()
    truth = DynamicBatchModel(table, schedules_from_workload(w))
    cluster = dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 4}]}
    )
    result = dlsched.simulate(w, cluster, "fifo", throughput=truth, audit=True)
    assert result.jobs["finish_time"].notna().all()
    assert math.isfinite(result.summary()["avg_jct"])
