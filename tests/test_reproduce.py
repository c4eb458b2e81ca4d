"""`dlsched reproduce`: the registry of reproductions, its command, its outputs and resuming.

A tiny reproduction (two jobs on one GPU under FIFO, whose JCTs are 1 s and 3 s) is
registered in a registry of the test's own; the built-in ones are only listed and planned
here (their fidelity is asserted by test_fidelity_tiresias, test_gavel_fidelity, test_hydra
and, for Optimus on Pollux's workload 6, below).
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import dlsched
from dlsched.cli import main
from dlsched.registry import Registry
from dlsched.reproduce import (
    REPRODUCTIONS,
    DataFile,
    Point,
    PointResult,
    Reproduction,
    Task,
    Tolerance,
    command,
    deviation_stats,
    run_reproduction,
)

SHARED = Path(__file__).resolve().parents[2] / "shared"
CALLS: list[str] = []
"""Task ids measured by the tiny reproduction, in order (it runs in this process)."""
INTERRUPT_AT: list[str] = []
"""A task id at which the tiny reproduction's measure raises KeyboardInterrupt."""


def _tiny_measure(spec: Mapping[str, Any], shared: Path) -> dict[str, float]:
    """Two 1-GPU jobs (1 s and 2 s, both at t = 0) on one GPU under `spec['policy']`."""
    if spec["id"] in INTERRUPT_AT:
        raise KeyboardInterrupt
    CALLS.append(spec["id"])
    work = dlsched.load_trace(shared / "tiny.csv")
    cluster = dlsched.Cluster.from_dict(
        {"name": "one", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 1}]}
    )
    summary = dlsched.simulate(work, cluster, policy=spec["policy"]).summary()
    return {"avg_jct_s": summary["avg_jct"], "makespan_s": summary["makespan"]}


def _tiny(published_jct: float = 2.0) -> Reproduction:
    """FIFO: average JCT (1 + 3) / 2 = 2 s, makespan 3 s; `published_jct` is what it is
    compared with (within 1 %)."""

    def plan(shared: Path, quick: bool) -> list[Point]:
        points = []
        for policy in ("fifo",) if quick else ("fifo", "sjf"):
            task = Task(f"run-{policy}", {"id": f"run-{policy}", "policy": policy})
            points.append(
                Point("JCT", policy, 1.0, "avg_jct_s", published_jct, Tolerance(rel=0.01), task)
            )
            points.append(Point("makespan", policy, 1.0, "makespan_s", 3.0, Tolerance(), task))
        return points

    return Reproduction(
        name="tiny",
        paper="A tiny paper",
        source="Table 1",
        data=(DataFile("tiny.csv", "the tiny trace"),),
        plan=plan,
        measure=_tiny_measure,
        quick_subset="FIFO only",
        cost_quick="~1 s",
        cost_full="~2 s",
    )


@pytest.fixture
def tiny_shared(tmp_path: Path) -> Path:
    """A shared folder holding the tiny trace."""
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "tiny.csv").write_text("job_id,submit_time,num_gpus,duration\n0,0,1,1\n1,0,1,2\n")
    return folder


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch):
    """Replace the command's registry by one holding only the given reproduction."""
    CALLS.clear()
    INTERRUPT_AT.clear()

    def use(reproduction: Reproduction) -> Reproduction:
        own: Registry[Reproduction] = Registry("reproduction")
        own.add(reproduction.name, reproduction)
        monkeypatch.setattr(command, "REPRODUCTIONS", own)
        return reproduction

    return use


@pytest.fixture
def registry(install) -> Reproduction:
    """The tiny reproduction, published average JCT 2 s (ours), installed."""
    return install(_tiny())


def _cli(*args: str) -> int:
    """`dlsched reproduce ARGS`, in this process (one worker) for the tiny reproduction."""
    return main(["reproduce", *args, *(["--workers", "1"] if args[:1] == ("tiny",) else [])])


# ---- the registry and the command -----------------------------------------------------------


def test_list_names_every_reproduction_with_source_data_and_cost(capsys):
    """`--list` names each registered reproduction, its source, data files and both costs."""
    assert main(["reproduce", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("tiresias", "gavel-fig8", "gavel-fig9", "hydra", "optimus-pollux"):
        assert f"\n{name}  " in f"\n{out}"
    assert "reference_results.csv" in out and "authors_reference_results.csv" in out
    assert out.count("cost: --quick") == len(REPRODUCTIONS.names())


def test_unknown_name_is_one_error_line_with_a_did_you_mean(capsys):
    """A misspelt name exits 2 with one line naming the closest and every known one."""
    assert main(["reproduce", "tiresia"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "did you mean 'tiresias'?" in err and "gavel-fig8" in err and "hydra" in err


def test_missing_data_file_names_the_file_and_what_it_is(tmp_path, capsys):
    """With no shared data, exit 2 and one line naming the missing file and what it holds."""
    assert main(["reproduce", "tiresias", "--shared", str(tmp_path), "--quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(tmp_path / "anchors" / "tiresias" / "reference_results.csv") in err
    assert "the Tiresias authors' simulator runs" in err


def test_no_name_and_no_option_is_a_usage_error(capsys):
    """`dlsched reproduce` alone says to name one or to list them (exit 2)."""
    assert main(["reproduce"]) == 2
    assert "--list" in capsys.readouterr().err


def test_importing_dlsched_loads_neither_reproduce_nor_matplotlib():
    """`import dlsched` imports no `dlsched.reproduce` module and no matplotlib."""
    code = (
        "import sys, dlsched\n"
        "bad = [m for m in sys.modules if m.startswith(('dlsched.reproduce', 'matplotlib'))]\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# ---- tolerances -----------------------------------------------------------------------------


def test_relative_tolerance_admits_exactly_its_band():
    """±10 % of 100 admits 90 and 110, not 111; NaN never."""
    ten = Tolerance(rel=0.10)
    assert ten.allows(90.0, 100.0) and ten.allows(110.0, 100.0)
    assert not ten.allows(111.0, 100.0) and not ten.allows(float("nan"), 100.0)


def test_factor_tolerance_admits_within_the_factor_plus_slack():
    """Within 2× (±1) of 10 admits 4 to 21; of 0 admits 0 and 1, not 2."""
    twice = Tolerance(factor=2, abs=1)
    assert twice.allows(4.0, 10.0) and twice.allows(21.0, 10.0)
    assert not twice.allows(3.9, 10.0) and not twice.allows(21.5, 10.0)
    assert twice.allows(1.0, 0.0) and not twice.allows(2.0, 0.0)


def test_worst_and_median_deviation_leave_out_absolute_tolerances():
    """A count held to ±2 (1 vs 2: −50 %) is not the worst deviation; a ±10 % point is."""
    task = Task("t", {})
    results = [
        PointResult(Point("f", "count", 1.0, "missed", 2.0, Tolerance(abs=2), task), 1.0),
        PointResult(Point("f", "jct", 1.0, "jct", 100.0, Tolerance(rel=0.1), task), 95.0),
    ]
    stats = deviation_stats(results)
    assert stats["within"] == 2
    assert stats["worst"] == pytest.approx(-0.05) and stats["median"] == pytest.approx(0.05)


# ---- a tiny reproduction ---------------------------------------------------------------------


def test_run_writes_the_csv_markdown_and_one_plot_per_figure(registry, tiny_shared, tmp_path):
    """A run writes fidelity.csv (a row per point), fidelity.md and JCT/makespan plots."""
    out = tmp_path / "out"
    assert _cli("tiny", "--shared", str(tiny_shared), "--out", str(out)) == 0
    with (out / "fidelity.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["series"], r["metric"], float(r["ours"])) for r in rows] == [
        ("fifo", "avg_jct_s", 2.0),
        ("fifo", "makespan_s", 3.0),
        ("sjf", "avg_jct_s", 2.0),
        ("sjf", "makespan_s", 3.0),
    ]
    assert all(r["within"] == "True" for r in rows)
    assert "4 of 4 points within tolerance" in (out / "fidelity.md").read_text()
    assert sorted(p.name for p in out.glob("*.png")) == ["jct.png", "makespan.png"]


def test_prints_ours_published_and_the_deviation_per_point(install, tiny_shared, tmp_path, capsys):
    """Each point is a line with published, ours and the signed deviation."""
    install(_tiny(published_jct=2.5))
    _cli("tiny", "--quick", "--shared", str(tiny_shared), "--out", str(tmp_path), "--no-plots")
    out = capsys.readouterr().out
    assert any(
        line.split()[:6] == ["fifo", "1", "avg_jct_s", "2.5", "2", "-20.0"]
        for line in out.splitlines()
    ), out


def test_a_point_outside_its_tolerance_exits_non_zero(install, tiny_shared, tmp_path, capsys):
    """Published 2.1 s against our 2 s, within 1 %: exit 1, the point marked OUT."""
    install(_tiny(published_jct=2.1))
    code = _cli("tiny", "--quick", "--shared", str(tiny_shared), "--out", str(tmp_path))
    assert code == 1
    assert "OUT" in capsys.readouterr().out


def test_quick_runs_only_the_documented_subset(registry, tiny_shared, tmp_path):
    """--quick measures the FIFO task alone."""
    _cli("tiny", "--quick", "--shared", str(tiny_shared), "--out", str(tmp_path), "--no-plots")
    assert CALLS == ["run-fifo"]


def test_only_runs_the_tasks_matching_its_pattern(registry, tiny_shared, tmp_path):
    """--only run-s* measures the SJF task alone and marks the CSV a subset."""
    args = ("tiny", "--shared", str(tiny_shared), "--out", str(tmp_path), "--no-plots")
    assert _cli(*args, "--only", "run-s*") == 0
    assert CALLS == ["run-sjf"]
    with (tmp_path / "fidelity.csv").open() as handle:
        assert {r["mode"] for r in csv.DictReader(handle)} == {"full subset"}


def test_only_matching_nothing_is_an_error_naming_a_task(registry, tiny_shared, tmp_path, capsys):
    """--only that matches no task: exit 2, one line showing what task ids look like."""
    args = ("tiny", "--shared", str(tiny_shared), "--out", str(tmp_path), "--no-plots")
    assert _cli(*args, "--only", "nothing") == 2
    assert "'run-fifo'" in capsys.readouterr().err and CALLS == []


def test_a_second_run_reuses_every_finished_task(registry, tiny_shared, tmp_path):
    """Run twice into one folder: the second measures nothing and compares the same."""
    args = ("tiny", "--shared", str(tiny_shared), "--out", str(tmp_path), "--no-plots")
    assert _cli(*args) == 0
    first = (tmp_path / "fidelity.csv").read_text()
    assert CALLS == ["run-fifo", "run-sjf"]
    assert _cli(*args) == 0
    assert CALLS == ["run-fifo", "run-sjf"]
    assert (tmp_path / "fidelity.csv").read_text() == first


def test_an_interrupted_run_resumes_without_recomputing(registry, tiny_shared, tmp_path):
    """Ctrl-C during the second task: exit 130, the first stored; the rerun measures only the
    second."""
    args = ("tiny", "--shared", str(tiny_shared), "--out", str(tmp_path), "--no-plots")
    INTERRUPT_AT.append("run-sjf")
    assert _cli(*args) == 130
    assert CALLS == ["run-fifo"]
    assert len(list((tmp_path / "tasks").glob("run-fifo-*.json"))) == 1
    INTERRUPT_AT.clear()
    assert _cli(*args) == 0
    assert CALLS == ["run-fifo", "run-sjf"]


def test_a_process_pool_measures_the_same_as_one_process(registry, tiny_shared, tmp_path):
    """Two worker processes store the same metrics as the in-process run."""
    pooled = run_reproduction(registry, tiny_shared, tmp_path / "pool", workers=2)
    alone = run_reproduction(registry, tiny_shared, tmp_path / "alone", workers=1)
    assert sorted(pooled.ran) == ["run-fifo", "run-sjf"] and not pooled.failed
    assert [r.ours for r in pooled.points] == [r.ours for r in alone.points] == [2, 3, 2, 3]


def test_a_damaged_task_file_is_measured_again(registry, tiny_shared, tmp_path):
    """A stored task that does not parse counts as not finished."""
    repro = registry
    run_reproduction(repro, tiny_shared, tmp_path, quick=True, workers=1)
    (stored,) = (tmp_path / "tasks").glob("*.json")
    stored.write_text("{")
    outcome = run_reproduction(repro, tiny_shared, tmp_path, quick=True, workers=1)
    assert outcome.ran == ["run-fifo"] and CALLS == ["run-fifo", "run-fifo"]
    assert json.loads(stored.read_text())["metrics"]["avg_jct_s"] == 2.0


def test_a_raised_revision_measures_stored_tasks_again(install, tiny_shared, tmp_path):
    """Tasks stored before a reproduction's `revision` was raised (its results changed) run
    again; at the same revision they are reused."""
    import dataclasses

    run_reproduction(install(_tiny()), tiny_shared, tmp_path, quick=True, workers=1)
    revised = install(dataclasses.replace(_tiny(), revision=1))
    assert run_reproduction(revised, tiny_shared, tmp_path, quick=True, workers=1).ran == [
        "run-fifo"
    ]
    assert run_reproduction(revised, tiny_shared, tmp_path, quick=True, workers=1).ran == []
    assert CALLS == ["run-fifo", "run-fifo"]


def test_a_stored_task_whose_metrics_the_reproduction_refuses_is_measured_again(
    install, tiny_shared, tmp_path
):
    """`accepts` refusing the stored makespan of 3 s: the second run measures it again; a
    reproduction that accepts it reuses it."""
    import dataclasses

    strict = install(dataclasses.replace(_tiny(), accepts=lambda m: m["makespan_s"] != 3.0))
    run_reproduction(strict, tiny_shared, tmp_path, quick=True, workers=1)
    outcome = run_reproduction(strict, tiny_shared, tmp_path, quick=True, workers=1)
    assert outcome.ran == ["run-fifo"] and CALLS == ["run-fifo", "run-fifo"]
    lenient = install(dataclasses.replace(_tiny(), accepts=lambda m: True))
    assert run_reproduction(lenient, tiny_shared, tmp_path, quick=True, workers=1).ran == []


def test_gavel_point_whose_arrivals_end_before_its_window_runs_with_a_longer_tail(monkeypatch):
    """Arrivals ending before the window (the first two tails): measure doubles the tail,
    and the budget with it, and keeps the run whose arrivals outlast it; refused as a stored
    point, accepted after."""
    from dlsched.reproduce import gavel

    tails, budgets = [], []

    def run_point(policy, rate, *, tail_jobs, budget_s, **kwargs):
        tails.append(tail_jobs)
        budgets.append(budget_s)
        return {"avg_jct_h": float(tail_jobs), "arrivals_outlast_window": float(len(tails) > 2)}

    monkeypatch.setattr(gavel, "run_point", run_point)
    spec = {"policy": "gavel_fifo", "rate": 2.8, "multi_gpu": True, "tail_jobs": 100}
    out = gavel.measure({**spec, "budget_s": 1.0}, Path("."))
    assert tails == [100, 200, 400] and out["tail_jobs"] == 400 == out["avg_jct_h"]
    assert budgets == [1.0, 2.0, 4.0]
    assert not gavel.accepts({"avg_jct_h": 1.0, "arrivals_outlast_window": 0.0})
    assert gavel.accepts(out) and gavel.accepts({"avg_jct_h": math.nan})


def test_gavel_point_still_short_at_the_longest_tail_is_unfinished(monkeypatch):
    """Arrivals never outlast the window: NaN, with the last value as a lower bound."""
    from dlsched.reproduce import gavel

    monkeypatch.setattr(
        gavel,
        "run_point",
        lambda *a, tail_jobs, **k: {"avg_jct_h": 5.0, "arrivals_outlast_window": 0.0},
    )
    spec = {"policy": "gavel_fifo", "rate": 2.8, "multi_gpu": True, "tail_jobs": 8000}
    out = gavel.measure({**spec, "budget_s": 1.0}, Path("."))
    assert math.isnan(out["avg_jct_h"]) and out["avg_jct_h_lower_bound"] == 5.0
    assert out["tail_jobs"] == gavel.MAX_TAIL_JOBS


def test_gavel_point_whose_longer_rerun_gives_up_keeps_the_short_value_as_a_bound(monkeypatch):
    """A tail of 0 grows (no endless loop); arrivals ran out at 120.5 h, then the longer run
    gave up: NaN, 120.5 h as the lower bound."""
    from dlsched.reproduce import gavel

    runs = iter(
        [
            {"avg_jct_h": 120.5, "arrivals_outlast_window": 0.0},
            {"avg_jct_h": math.nan, "arrivals_outlast_window": 0.0},
        ]
    )
    tails = []

    def run_point(*a, tail_jobs, **k):
        tails.append(tail_jobs)
        return next(runs)

    monkeypatch.setattr(gavel, "run_point", run_point)
    spec = {"policy": "gavel_fifo", "rate": 2.8, "multi_gpu": True, "tail_jobs": 0}
    out = gavel.measure({**spec, "budget_s": 1.0}, Path("."))
    assert tails == [1, 2] and math.isnan(out["avg_jct_h"])
    assert out["avg_jct_h_lower_bound"] == 120.5 and gavel.accepts(out)


def test_table_gives_one_row_per_reproduction_run(install, tiny_shared, tmp_path, capsys):
    """--table reads ROOT/NAME/fidelity.csv: points, within tolerance, worst and median."""
    install(_tiny(published_jct=2.5))
    _cli("tiny", "--shared", str(tiny_shared), "--out", str(tmp_path / "tiny"), "--no-plots")
    capsys.readouterr()
    assert main(["reproduce", "--table", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| reproduction | source | points |")
    assert lines[2] == (
        "| `tiny` | tiny | 4 | 2 (out: fifo @ 1 x, avg_jct_s -20.0 % and 1 more) | "
        "-20.0 % (fifo @ 1 x, avg_jct_s) | 10.0 % |"
    )


def test_table_without_results_says_how_to_make_them(registry, tmp_path, capsys):
    """--table over a folder with no fidelity.csv: exit 2 and what to run."""
    assert main(["reproduce", "--table", "--out", str(tmp_path)]) == 2
    assert "dlsched reproduce NAME" in capsys.readouterr().err


# ---- the built-in reproductions --------------------------------------------------------------

needs_shared = pytest.mark.skipif(not SHARED.exists(), reason="../shared not present")


@needs_shared
@pytest.mark.parametrize("name", REPRODUCTIONS.names())
def test_every_builtin_plans_its_quick_subset_from_the_shared_data(name):
    """Each reproduction's data is present, and --quick plans a few points of the full plan,
    every one with a finite published value."""
    repro = REPRODUCTIONS.get(name)
    repro.check_data(SHARED)
    quick, full = repro.plan(SHARED, True), repro.plan(SHARED, False)
    assert 0 < len(quick) <= len(full)  # sia-saturn: one run is all there is
    assert {p.label for p in quick} <= {p.label for p in full}
    assert all(p.published == p.published for p in full)


@needs_shared
@pytest.mark.slow
def test_optimus_on_pollux_workload_6_is_within_its_tolerance(tmp_path):
    """optimus-pollux --quick (workload 6 at load 1.0) is within 10 % of the artifact."""
    outcome = run_reproduction(
        REPRODUCTIONS.get("optimus-pollux"), SHARED, tmp_path, quick=True, workers=1
    )
    (point,) = outcome.points
    assert point.within, (point.ours, point.point.published)


@needs_shared
@pytest.mark.slow
def test_gavel_static_quick_subset_is_within_its_tolerance(tmp_path):
    """gavel-static --quick (FIFO, Gandiva and Gavel's makespan LPs at 100 jobs, seeds 0-2)
    is within 10 % of the authors' mean makespan; its quick plan is part of the full one."""
    import dlsched.reproduce.gavel_static  # noqa: F401  (registers gavel-static)

    repro = REPRODUCTIONS.get("gavel-static")
    quick, full = repro.plan(SHARED, True), repro.plan(SHARED, False)
    assert {p.label for p in quick} < {p.label for p in full}
    outcome = run_reproduction(repro, SHARED, tmp_path, quick=True, workers=1)
    assert outcome.points and all(p.within for p in outcome.points), [
        (p.point.label, p.ours, p.point.published) for p in outcome.points
    ]


@needs_shared
def test_pollux_fig8a_plans_each_workload_and_the_mean_per_load():
    """pollux-fig8a's full plan has 8 workloads and the artifact's 8-workload mean per load
    (load 1.0: 2,751.1 s); its quick plan is workload 6 at load 1.0 only."""
    import dlsched.reproduce.goodput  # noqa: F401  (registers pollux-fig8a and sia-saturn)

    repro = REPRODUCTIONS.get("pollux-fig8a")
    full = repro.plan(SHARED, False)
    means = {p.x: p.published for p in full if p.metric == "mean_avg_jct_s"}
    assert means[1.0] == pytest.approx(2751.1, abs=0.1) and len(means) == 4
    assert len(full) == 4 * 9
    (quick,) = repro.plan(SHARED, True)
    assert (quick.series, quick.x) == ("load 1.0", 6.0)
    assert quick.published == pytest.approx(2446.1, abs=0.1)


@needs_shared
@pytest.mark.slow
def test_pollux_on_workload_6_at_load_1_is_within_10_percent_of_the_artifact(tmp_path):
    """pollux-fig8a --quick (pollux on workload 6 at load 1.0) is within 10 % of 2,446.1 s."""
    import dlsched.reproduce.goodput  # noqa: F401  (registers pollux-fig8a and sia-saturn)

    outcome = run_reproduction(
        REPRODUCTIONS.get("pollux-fig8a"), SHARED, tmp_path, quick=True, workers=1
    )
    (point,) = outcome.points
    assert point.within, (point.ours, point.point.published)


@needs_shared
@pytest.mark.slow
def test_sia_on_saturn_workload_1_is_within_15_percent_of_the_artifact(tmp_path):
    """sia-saturn (sia on Saturn workload-1, sia-64) is within 15 % of the artifact's 2,091.1 s."""
    import dlsched.reproduce.goodput  # noqa: F401  (registers pollux-fig8a and sia-saturn)

    outcome = run_reproduction(
        REPRODUCTIONS.get("sia-saturn"), SHARED, tmp_path, quick=True, workers=1
    )
    (point,) = outcome.points
    assert point.within, (point.ours, point.point.published)


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared (Gavel's figure data)")
def test_gavel_points_where_gavels_own_simulator_disagrees_with_its_figure_say_so():
    """The FTF-perf points out in Figures 8 and 9 carry, as their note, what Gavel's own
    simulator gives on the same jobs; fidelity.md shows it beside the verdict."""
    from dlsched.reproduce import REPRODUCTIONS

    points = REPRODUCTIONS.get("gavel-fig9").plan(SHARED, False)
    noted = {(p.series, p.x): p.note for p in points if p.metric == "avg_jct_h" and p.note}
    assert noted == {
        ("finish_time_fairness_perf", 2.2): "Gavel's simulator (2020-05-19) on these jobs: "
        "25.76 h with CLARABEL",
        ("finish_time_fairness_perf", 2.4): "Gavel's simulator on these jobs: 27.81 h before "
        "its 1920 s minimum (5203ac2, CLARABEL), 31.69 h with it (2020-05-19, ECOS)",
        ("finish_time_fairness_perf", 2.6): "Gavel's simulator on these jobs: 31.35 h before "
        "its 1920 s minimum (5203ac2, CLARABEL), 38.64 h with it (2020-05-19, ECOS)",
    }
    points = REPRODUCTIONS.get("gavel-fig8").plan(SHARED, False)
    noted = {(p.series, p.x): p.note for p in points if p.metric == "avg_jct_h" and p.note}
    assert list(noted) == [("finish_time_fairness_perf", 4.8), ("finish_time_fairness_perf", 5.2)]
    assert noted["finish_time_fairness_perf", 4.8].startswith(
        "Gavel's simulator on these jobs: 19.03 h before its 1920 s minimum (5203ac2"
    )
    assert noted["finish_time_fairness_perf", 5.2].startswith(
        "Gavel's simulator on these jobs: 22.05 h before its 1920 s minimum (5203ac2, "
        "CLARABEL), 26.54 h with it"
    )
