"""`dlsched reproduce shockwave`: the artifact's canonical 120-job run, beside its pickles."""

import math

import pytest

from dlsched.errors import TraceError
from dlsched.reproduce import REPRODUCTIONS, run_reproduction
from dlsched.reproduce import shockwave as repro
from dlsched.traces.batch_schedule import parse_batch_schedule, traced_batch_size
from dlsched.traces.transforms_dynamic import MAX_BATCH


def test_the_plan_compares_every_scheme_with_the_artifacts_stored_run(tmp_path):
    """Full: 6 schemes × (avg JCT, makespan), Shockwave's and max-min fairness's worst ρ and
    unfair share, and 3 ratios; quick: the headline task's 11. Every reference is the
    pickle's number, the makespan and fairness gains the abstract's 1.3× and 2×."""
    entry = REPRODUCTIONS.get("shockwave")
    assert entry.data == ()
    full, quick = entry.plan(tmp_path, False), entry.plan(tmp_path, True)
    assert len(full) == 2 * len(repro.SCHEMES) + 4 + 3
    assert {p.task.id for p in quick} == {"headline"} and len(quick) == 11
    by_metric = {p.metric: p for p in full}
    assert by_metric["shockwave:avg_jct_s"].published == pytest.approx(9958.486, abs=1e-3)
    assert by_metric["max_min_fairness:makespan_s"].published == pytest.approx(33207.663, abs=1e-3)
    assert by_metric["min_total_duration:avg_jct_s"].published == pytest.approx(19806.728, abs=1e-3)
    assert by_metric["makespan_gain"].published == 1.3
    assert by_metric["jct_ratio"].published == pytest.approx(9958.486 / 11274.117, rel=1e-6)
    assert by_metric["fairness_gain"].published == 2.0
    assert by_metric["shockwave:worst_ftf"].published == pytest.approx(1.7838)
    assert by_metric["max_min_fairness:unfair_pct"].published == 25.0
    assert by_metric["shockwave:worst_ftf"].tolerance.describe() == "±20 %"
    assert by_metric["shockwave:unfair_pct"].tolerance.describe() == "±5"
    assert by_metric["shockwave:makespan_s"].tolerance.describe() == "±15 %"
    gaps = {p.metric for p in full if repro.known_gap(p)}
    assert gaps == {"min_total_duration:avg_jct_s", "shockwave:unfair_pct", "fairness_gain"}
    assert "gandiva_fair" in repro.ARTIFACT and "gandiva_fair" not in repro.SCHEMES


def test_the_bundled_trace_is_the_artifacts_120_jobs_with_its_schedules():
    """Trace order, the artifact's modes (57 GNS, 59 Accordion, 4 static), 68 jobs that
    change batch size; job 0's GNS doubles 10 → 20 → 40 at epochs 9 and 19 (the artifact's
    epoch clock); every schedule starts at the traced batch size, stays within the model's
    largest and only takes batch sizes measured for the job's GPU count (the revert rule)."""
    jobs = repro.read_trace()
    table = repro.throughputs()
    assert len(jobs) == 120 and list(jobs["job_id"]) == list(range(120))
    assert jobs["mode"].value_counts().to_dict() == {"accordion": 59, "gns": 57, "static": 4}
    assert set(jobs["num_gpus"]) == {1, 2, 4}
    assert jobs["submit_time"].is_monotonic_increasing and jobs["submit_time"].iloc[0] == 0
    scheduled = jobs[jobs["batch_schedule"].notna()]
    assert len(scheduled) == 68
    assert jobs["batch_schedule"].iloc[0] == "9:10;10:20;3.55077:40"
    assert (jobs.loc[jobs["mode"] == "static", "batch_schedule"].isna()).all()
    for row in scheduled.itertuples():
        phases = parse_batch_schedule(row.batch_schedule)
        family = row.model.split(" (")[0]
        assert phases[0].batch_size == traced_batch_size(row.model)
        assert all(p.batch_size <= MAX_BATCH[family] for p in phases)
        for phase in phases:
            renamed = f"{family} (batch size {phase.batch_size})"
            assert table.has(renamed, "v100", int(row.num_gpus)), (row.job_id, renamed)


def test_the_throughputs_are_the_artifacts_tacc_v100s_not_gavels():
    table = repro.throughputs()
    assert table.throughput("ResNet-18 (batch size 32)", "v100", 1) == pytest.approx(42.97497938)
    from dlsched.perf import ProfileTable

    gavel = ProfileTable.gavel().throughput("ResNet-18 (batch size 32)", "v100", 1)
    assert gavel == pytest.approx(29.947157, rel=1e-6)


def test_the_fair_share_jcts_are_no_shorter_than_a_job_alone_at_its_fastest_batch():
    """The artifact's fair-share reference JCT (job 0: 4,593.027 s, from the pickle) is at
    least the job's work at the fastest rate any of its batch sizes has on its GPUs (steps at
    the initial batch / (it/s at B × B / B_1)), a lower bound of its run time alone."""
    jobs = repro.read_trace()
    table = repro.throughputs()
    assert jobs["fair_share_jct"].iloc[0] == pytest.approx(4593.027)
    for row in jobs.itertuples():
        family, base = row.model.split(" (")[0], traced_batch_size(row.model)
        sizes = {base}
        if isinstance(row.batch_schedule, str):
            sizes |= {p.batch_size for p in parse_batch_schedule(row.batch_schedule)}
        fastest = max(
            table.throughput(f"{family} (batch size {b})", "v100", int(row.num_gpus)) * b / base
            for b in sizes
        )
        assert row.fair_share_jct >= row.total_steps / fastest * (1 - 1e-3), row.job_id


def test_a_trace_without_a_column_or_with_an_unknown_mode_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("job_type,total_steps\nLM (batch size 5),10\n")
    with pytest.raises(TraceError, match="missing column.*scale_factor"):
        repro.read_trace(path)
    header = ",".join(repro.FIELDS)
    path.write_text(f"{header}\nLM (batch size 5),10,1,elastic,1,-1,100,0,,10\n")
    with pytest.raises(TraceError, match="row 2, field 'mode'.*'elastic'"):
        repro.read_trace(path)


def test_max_min_fairness_on_the_canonical_trace_is_within_tolerance_and_repeats():
    """The artifact's max-min fairness: 11,274 s average JCT, 33,208 s makespan; ours
    10,159 s and 31,189 s (−9.9 %, −6.1 %), the same twice."""
    first = repro.run_scheme("max_min_fairness")
    again = repro.run_scheme("max_min_fairness")
    assert first["jobs_completed"] == 120
    for key in ("avg_jct_s", "makespan_s"):
        assert first[key] == again[key]
    jct, makespan = repro.ARTIFACT["max_min_fairness"]
    assert repro.TOLERANCE.allows(first["avg_jct_s"], jct)
    assert repro.TOLERANCE.allows(first["makespan_s"], makespan)
    assert first["avg_jct_s"] < jct  # the documented bias (GAPS): below the artifact's


@pytest.mark.slow
def test_the_reproduction_runs_and_only_the_documented_gap_is_out_of_tolerance(tmp_path):
    """16 of 19 points within tolerance; the three out (OSSP's average JCT −20 %,
    Shockwave's unfair share 18.3 % against 5 %, the fairness gain 1.34× against 2×) are the
    documented gaps. Shockwave beats max-min fairness on JCT, makespan and worst ρ, as in
    the artifact."""
    outcome = run_reproduction(
        REPRODUCTIONS.get("shockwave"), tmp_path, tmp_path / "out", workers=1
    )
    assert not outcome.failed
    for result in outcome.points:
        within = result.point.tolerance.allows(result.ours, result.point.published)
        assert within != repro.known_gap(result.point), result
    ours = {r.point.metric: r.ours for r in outcome.points}
    assert ours["jct_ratio"] < 1.0
    assert ours["makespan_gain"] > 1.1
    assert ours["fairness_gain"] > 1.1
    assert not math.isnan(ours["shockwave:avg_jct_s"])
