"""The goodput model (perf/goodput.py) and progress-dependent rates in the engine."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlsched
from dlsched.errors import ConfigError
from dlsched.perf.goodput import GoodputModel, PerfParams, fit_perf_params, profile_type

SHARED = Path(__file__).resolve().parents[2] / "shared"
ALL_PROFILES = SHARED / "traces" / "sia_pollux" / "sia" / "traces"
BUNDLED = Path(__file__).resolve().parents[1] / "traces" / "pollux_profiles"
# Without ../shared the tests run on the bundled excerpt (cifar10 and bert on T4, byte copies
# of the Pollux artifact's profiles); those that need other models or GPU types skip.
PROFILES = ALL_PROFILES if ALL_PROFILES.is_dir() else BUNDLED
needs_profiles = pytest.mark.skipif(not PROFILES.is_dir(), reason="no profile folder")
needs_all_profiles = pytest.mark.skipif(
    not ALL_PROFILES.is_dir(), reason="needs ../shared/traces/sia_pollux (every model and type)"
)


@pytest.fixture(autouse=True)
def _bundled_profiles_by_default(tmp_path_factory, monkeypatch):
    """Without ../shared, a model built with no folder finds the bundled excerpt: a shared
    folder of its own (``$DLSCHED_SHARED``) whose profile folder links to it."""
    if ALL_PROFILES.is_dir():
        return
    root = tmp_path_factory.getbasetemp() / "bundled-shared"
    link = root / "traces" / "sia_pollux" / "sia" / "traces"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(BUNDLED, target_is_directory=True)
    monkeypatch.setenv("DLSCHED_SHARED", str(root))


@functools.cache
def _model(flavor: str = "sia", adaptive: bool = False) -> GoodputModel:
    return GoodputModel(PROFILES, flavor=flavor, adaptive=adaptive)


def test_profile_type_maps_user_names():
    """Cluster type names as users write them map to the profiles' short names."""
    assert [profile_type(t) for t in ("T4", "RTX2080Ti", "A100", "RTX6000", "V100")] == [
        "t4",
        "rtx",
        "dgx",
        "quad",
        "v100",
    ]
    assert profile_type("H100") is None


def test_perf_params_fit_recovers_its_own_form():
    """Fitting Pollux's form to times it generated gives those times back."""
    truth = PerfParams(0.02, 0.001, 0.05, 0.004, 0.01, 0.001, 2.0)
    nodes = np.array([1, 1, 1, 2, 2, 4, 1, 1, 2, 4], dtype=float)
    gpus = np.array([1, 2, 4, 2, 8, 16, 1, 4, 4, 8], dtype=float)
    bsz = np.array([32, 32, 32, 64, 64, 64, 128, 128, 128, 128], dtype=float)
    step = truth.step_time(nodes, gpus, bsz)
    sync = step - truth.compute_time(bsz)
    fitted = fit_perf_params(nodes, gpus, bsz, step, sync)
    assert np.allclose(fitted.step_time(nodes, gpus, bsz), step, rtol=0.05)


@needs_profiles
def test_fixed_batch_matches_pollux_throughput_run_time():
    """A fixed-batch Pollux job takes exactly PolluxThroughput's time when k divides B."""
    from dlsched.perf.ps_speed import PolluxThroughput

    ours = _model("pollux")
    theirs = PolluxThroughput(PROFILES, applications=("cifar10", "bert"))
    for model, k, nodes in (("cifar10@2048", 8, 2), ("cifar10@128", 1, 1), ("bert@96", 4, 1)):
        app, batch = theirs.app(model)
        expected = app.total_steps(batch) / theirs.throughput(model, "t4", k, nodes)
        assert ours.target(model) / ours.throughput(model, "t4", k, nodes) == pytest.approx(
            expected, rel=1e-12
        )


@needs_profiles
def test_rate_from_is_piecewise_by_epoch():
    """rate_from gives each epoch's rate up to the epoch's end, then the next one's."""
    model = _model()
    conv = model.convergence("cifar10")
    rate0, until0 = model.rate_from("cifar10@2048", "T4", 4, 1, 0.0)
    assert until0 == conv.bounds[1]
    rate1, until1 = model.rate_from("cifar10@2048", "T4", 4, 1, until0)
    assert until1 == conv.bounds[2] and rate1 != rate0
    _, last = model.rate_from("cifar10@2048", "T4", 4, 1, conv.target)
    assert last == math.inf


@needs_all_profiles
def test_adaptive_goodput_is_at_least_the_fixed_one():
    """The adaptive agent's batch is never worse than the traced one it may also pick."""
    fixed, adaptive = _model(), _model(adaptive=True)
    for t in ("t4", "rtx", "a100"):
        assert adaptive.goodput("cifar10@128", t, 4, 1) >= fixed.goodput("cifar10@128", t, 4, 1)


@needs_profiles
def test_unknown_gpu_type_names_it():
    """A GPU type without a profile is an error that names it."""
    with pytest.raises(ConfigError, match="'h200'"):
        _model().throughput("cifar10@128", "h200", 1)


# ---- the engine with a progress-dependent rate ----------------------------------------


class Piecewise:
    """1 step/s for work [0, 10), 2 for [10, 30), 0.5 from 30 on (any GPUs)."""

    name = "piecewise"
    BOUNDS = (10.0, 30.0, math.inf)
    RATES = (1.0, 2.0, 0.5)

    def rate_from(self, model, gpu_type, n_gpus, n_nodes, work_done):
        for bound, rate in zip(self.BOUNDS, self.RATES, strict=True):
            if work_done < bound:
                return rate, bound
        raise AssertionError("unreachable")

    def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
        return 0.0 if colocated else 1.0

    def reference_type(self, model):
        return None


class Flat(Piecewise):
    """The same truth without `rate_from`: the plain path at 1 step/s."""

    rate_from = None  # type: ignore[assignment]


class Alternate:
    """One GPU, handed to the other active job at every 5 s round (the first at time 0)."""

    name = "alternate"
    round_s = 5.0

    def schedule(self, view):
        alloc = view.allocation()
        jobs = sorted([*view.running.values(), *view.pending.values()], key=lambda s: s.job_id)
        if not jobs:
            return alloc
        holder = next((s for s in jobs if s.gpus), None)
        if holder is None:
            alloc[jobs[0].job_id] = (0,)
        elif view.is_round and len(jobs) > 1:
            nxt = jobs[(jobs.index(holder) + 1) % len(jobs)]
            del alloc[holder.job_id]
            alloc[nxt.job_id] = (0,)
        return alloc


def _one_gpu():
    return dlsched.Cluster.from_dict(
        {"name": "one", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 1}]}
    )


def _jobs(*steps: float):
    return pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(len(steps))],
            "submit_time": 0.0,
            "num_gpus": 1,
            "total_steps": list(steps),
        }
    )


def test_piecewise_rate_completes_at_the_exact_time():
    """40 steps at 1, 2 then 0.5 steps/s take 10 + 10 + 20 = 40 s."""
    result = dlsched.simulate(_jobs(40.0), _one_gpu(), "fifo", throughput=Piecewise(), audit=True)
    assert result.jobs["finish_time"].tolist() == [40.0]


def test_piecewise_rate_keeps_work_across_preemptions():
    """Two 15-step jobs swapped every 5 s: j0 ends at 22.5, j1 at 25 (work conserved)."""
    result = dlsched.simulate(
        _jobs(15.0, 15.0), _one_gpu(), Alternate(), throughput=Piecewise(), audit=True
    )
    finish = dict(zip(result.jobs["job_id"], result.jobs["finish_time"], strict=True))
    assert finish == {"j0": 22.5, "j1": 25.0}


def test_piecewise_rate_waits_out_an_overhead():
    """With a 3 s restart the second stint of j0 starts its clock after the overhead."""
    # Each restart runs 2 s of its 5 s turn. j0: 5 steps by 5, +2 (13..15), +2 (23..25),
    # 30..35: 1 step to 10 at 34, then 2/s: 12; 40..45: 3 steps at 2/s from 43: 44.5.
    # j1 (first start free): 5, 7, 9, 12; restarted when j0 ends: 3 steps from 47.5: 49.
    result = dlsched.simulate(
        _jobs(15.0, 15.0),
        _one_gpu(),
        Alternate(),
        throughput=Piecewise(),
        restart_overhead_s=3.0,
        audit=True,
    )
    finish = dict(zip(result.jobs["job_id"], result.jobs["finish_time"], strict=True))
    assert finish == {"j0": 44.5, "j1": 49.0}


def test_a_model_without_rate_from_takes_the_plain_path():
    """Without `rate_from` the rate is `throughput` throughout: 40 steps take 40 s."""
    result = dlsched.simulate(_jobs(40.0), _one_gpu(), "fifo", throughput=Flat())
    assert result.jobs["finish_time"].tolist() == [40.0]


# ---- Pollux/Sia workloads through `simulate` ------------------------------------------


def _sia_csv(tmp_path, rows):
    path = tmp_path / "workload.csv"
    lines = ["name,time,application,num_replicas,batch_size"]
    # (name, time, GPUs, batch): the application is the name's prefix
    lines += [f"{n},{t},{n.split('-')[0]},{k},{b}" for n, t, k, b in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _sia_cluster():
    if not ALL_PROFILES.is_dir():  # the bundled excerpt profiles T4 only
        nodes = [{"gpu_type": "T4", "count": 2, "gpus_per_node": 4}]
        return dlsched.Cluster.from_dict({"name": "t4-small", "nodes": nodes})
    return dlsched.Cluster.from_dict(
        {
            "name": "sia-small",
            "nodes": [
                {"gpu_type": "T4", "count": 1, "gpus_per_node": 4},
                {"gpu_type": "RTX2080Ti", "count": 1, "gpus_per_node": 8},
                {"gpu_type": "A100", "count": 1, "gpus_per_node": 8},
            ],
        }
    )


@needs_profiles
def test_sia_workload_runs_with_no_other_argument(tmp_path):
    """A Pollux/Sia CSV runs on the goodput model with the goodput oracle by default."""
    path = _sia_csv(tmp_path, [("cifar10-0", 0, 2, 256), ("bert-1", 10, 1, 12)])
    result = dlsched.simulate(dlsched.load_trace(path), _sia_cluster(), policy="fifo")
    assert result.meta["throughput"] == "goodput"
    assert result.meta["estimator"] == "GoodputEstimator()"
    assert result.summary()["jobs_completed"] == 2


@needs_profiles
def test_adaptive_policy_gets_adaptive_batches(tmp_path):
    """A policy with adaptive_batch = True runs a lone job no slower than the traced batch."""
    from dlsched.policies.fifo import Fifo

    class AdaptiveFifo(Fifo):
        adaptive_batch = True

    work = dlsched.load_trace(_sia_csv(tmp_path, [("cifar10-0", 0, 4, 128)]))
    fixed = dlsched.simulate(work, _sia_cluster(), Fifo()).jobs["jct"].iloc[0]
    adaptive = dlsched.simulate(work, _sia_cluster(), AdaptiveFifo()).jobs["jct"].iloc[0]
    assert adaptive < fixed


@needs_profiles
def test_unknown_model_in_a_workload_names_file_row_and_model(tmp_path):
    """A model without a profile: error naming the file, the row and the model."""
    from dlsched.errors import TraceError

    path = _sia_csv(tmp_path, [("cifar10-0", 0, 2, 256), ("resnet-1", 5, 1, 64)])
    with pytest.raises(TraceError, match=r"workload\.csv, row 3.*'resnet'.*cifar10"):
        dlsched.simulate(dlsched.load_trace(path), _sia_cluster(), policy="fifo")


@needs_profiles
def test_cluster_type_without_profile_is_named(tmp_path):
    """A cluster GPU type without a profile: error naming it (no silent rate 0)."""
    cluster = dlsched.Cluster.from_dict(
        {"name": "h", "nodes": [{"gpu_type": "H100", "count": 1, "gpus_per_node": 8}]}
    )
    path = _sia_csv(tmp_path, [("cifar10-0", 0, 2, 256)])
    with pytest.raises(ConfigError, match="'H100'"):
        dlsched.simulate(dlsched.load_trace(path), cluster, policy="fifo")


@needs_all_profiles
def test_scaling_fallback_runs_an_unprofiled_type_when_asked():
    """fallback='scaling' rates an H100 as the V100 profile times the assumed peak ratio."""
    from dlsched.perf.scaling import ASSUMED_SPEED_VS_V100

    model = GoodputModel(PROFILES, fallback="scaling")
    v100 = model.throughput("cifar10@256", "v100", 2)
    assert model.throughput("cifar10@256", "h100", 2) == pytest.approx(
        v100 * ASSUMED_SPEED_VS_V100["h100"]
    )


@needs_all_profiles
def test_goodput_estimator_answers_at_the_best_batch(tmp_path):
    """The estimator's goodput is the best batch's, and speedup is over one GPU."""
    from dlsched.perf.goodput import GoodputEstimator

    seen = {}

    class Probe(dlsched.policies.fifo.Fifo):
        adaptive_batch = True

        def schedule(self, view):
            est = view.estimator
            assert isinstance(est, GoodputEstimator)
            for state in view.pending.values():
                job = state.spec
                choice = est.best_batch(job, "rtx", 4)
                seen["goodput"] = est.goodput(job, "rtx", 4)
                seen["choice"] = choice
                seen["speedup"] = est.speedup(job, "rtx", 4)
                seen["one"] = est.goodput(job, "rtx", 1)
            return super().schedule(view)

    work = dlsched.load_trace(_sia_csv(tmp_path, [("cifar10-0", 0, 4, 128)]))
    dlsched.simulate(work, _sia_cluster(), Probe())
    assert seen["goodput"] == seen["choice"].goodput > 0
    assert seen["speedup"] == pytest.approx(seen["goodput"] / seen["one"])
    assert seen["choice"].batch_size % 4 == 0


@needs_all_profiles
def test_learned_goodput_estimator_measures_what_jobs_run(tmp_path):
    """A job's stint adds its (nodes, GPUs, per-GPU batch) step to its model's fit."""
    from dlsched.perf.goodput import LearnedGoodputEstimator

    estimator = LearnedGoodputEstimator()
    work = dlsched.load_trace(_sia_csv(tmp_path, [("cifar10-0", 0, 4, 256)]))
    dlsched.simulate(work, _sia_cluster(), "fifo", estimator=estimator)
    points = estimator._points[("cifar10", estimator.model.gpu_type("A100")[0])]
    assert [key[:2] for key in points] == [(1, 4)]
    assert estimator.perf_params("cifar10", "dgx") is not None and estimator.fits >= 1
    model = estimator.model  # still bound after the run: it answers as it did during it
    job = dlsched.jobs.JobSpec(0, "x", 0.0, 4, model.target("cifar10@256"), "cifar10@256")
    learned = estimator.best_batch(job, "a100", 4)
    oracle = model.best_batch("cifar10@256", "a100", 4)
    # the agent's view has no calibration: Sia's ÷ 1.8 for CIFAR-10 aside, within 25 %
    assert learned.goodput / 1.8 == pytest.approx(oracle.goodput, rel=0.25)


@needs_profiles
def test_learned_goodput_estimator_without_data_answers_as_the_oracle(tmp_path):
    """With no seed and nothing measured, the learned estimator gives the oracle's answer."""
    from dlsched.perf.goodput import GoodputEstimator, LearnedGoodputEstimator
    from dlsched.policies.fifo import Fifo

    answers = []

    class Probe(Fifo):
        def schedule(self, view):
            for state in view.pending.values():
                answers.append(view.estimator.goodput(state.spec, "t4", 2))
            return super().schedule(view)

    work = dlsched.load_trace(_sia_csv(tmp_path, [("bert-0", 0, 1, 12)]))
    for estimator in (GoodputEstimator(), LearnedGoodputEstimator(bootstrap=False)):
        dlsched.simulate(work, _sia_cluster(), Probe(), estimator=estimator)
    assert answers[0] == answers[1] > 0


@needs_profiles
def test_learned_goodput_estimator_says_when_its_seed_profiles_are_missing(tmp_path):
    """A seed folder that is not there is a warning (the bootstrap is off), not silence."""
    from dlsched.perf.goodput import LearnedGoodputEstimator
    from dlsched.policies.fifo import Fifo

    class Probe(Fifo):
        def schedule(self, view):
            for state in view.pending.values():
                view.estimator.goodput(state.spec, "t4", 2)
            return super().schedule(view)

    work = dlsched.load_trace(_sia_csv(tmp_path, [("bert-0", 0, 1, 12)]))
    estimator = LearnedGoodputEstimator(seed_folder=tmp_path / "nowhere")
    with pytest.warns(UserWarning, match="no Sia 1-GPU seed profiles"):
        result = dlsched.simulate(work, _sia_cluster(), Probe(), estimator=estimator)
    assert result.summary()["jobs_completed"] == 1 and estimator.bootstrap is False


def test_goodput_estimator_names_are_registered():
    """'goodput', 'goodput:oracle' and 'goodput:learned' build the goodput estimators."""
    from dlsched.perf import make_estimator

    assert type(make_estimator("goodput")).__name__ == "GoodputEstimator"
    assert type(make_estimator("goodput:learned")).__name__ == "LearnedGoodputEstimator"
    with pytest.raises(ValueError, match="goodput:"):
        make_estimator("goodput:psychic")


@needs_profiles
def test_fixed_batch_run_matches_pollux_throughput_in_the_engine(tmp_path):
    """FIFO on the Pollux truth and on goodput-pollux (per-epoch re-rating) ends jobs at the
    same times when each job's GPUs divide its batch."""
    from dlsched.perf.convergence import pollux_workload
    from dlsched.perf.ps_speed import PolluxThroughput

    rows = [("cifar10-0", 0, 8, 2048), ("bert-1", 30, 4, 96), ("cifar10-2", 60, 8, 1024)]
    work = dlsched.load_trace(_sia_csv(tmp_path, rows))
    cluster = dlsched.Cluster.from_dict(
        {"name": "t4", "nodes": [{"gpu_type": "T4", "count": 3, "gpus_per_node": 4}]}
    )
    steps_truth = PolluxThroughput(PROFILES, applications=("cifar10", "bert"))
    ours = dlsched.simulate(work, cluster, "fifo", throughput=_model("pollux"))
    theirs = dlsched.simulate(
        pollux_workload(work, steps_truth), cluster, "fifo", throughput=steps_truth
    )
    assert ours.jobs["finish_time"].tolist() == pytest.approx(
        theirs.jobs["finish_time"].tolist(), rel=1e-12
    )


def test_barycentric_matches_scipy_linear_nd_interpolator():
    """The step-time grid interpolates exactly as SciPy's LinearNDInterpolator does."""
    from scipy.interpolate import LinearNDInterpolator

    from dlsched.perf.goodput import Barycentric

    rng = np.random.default_rng(3)
    points = np.column_stack(
        [rng.integers(1, 4, 24), rng.integers(1, 17, 24), rng.uniform(8, 512, 24)]
    ).astype(float)
    values = rng.uniform(0.01, 1.0, (24, 2))
    queries = np.column_stack(
        [rng.uniform(1, 3, 100), rng.uniform(1, 16, 100), rng.uniform(8, 512, 100)]
    )
    expected = LinearNDInterpolator(points, values)(queries)
    ours = Barycentric(points, values)(queries)
    assert np.array_equal(np.isnan(expected), np.isnan(ours))
    assert np.allclose(expected[~np.isnan(expected)], ours[~np.isnan(ours)], rtol=1e-9)


def test_barycentric_drops_a_coordinate_all_points_share():
    """Points on one node interpolate in the other coordinates; other node counts are NaN."""
    from dlsched.perf.goodput import Barycentric

    points = np.array([[1, 1, 10], [1, 1, 20], [1, 4, 10], [1, 4, 20]], dtype=float)
    values = np.array([[1.0], [2.0], [3.0], [4.0]])
    out = Barycentric(points, values)(np.array([[1, 2.5, 15], [2, 2.5, 15]], dtype=float))
    assert out[0, 0] == pytest.approx(2.5) and np.isnan(out[1, 0])


@needs_all_profiles
def test_fitted_batch_choice_runs_near_the_measured_best():
    """batch_choice='fitted' picks with Pollux's fitted form: within 15 % of the best."""
    fitted = GoodputModel(PROFILES, adaptive=True, batch_choice="fitted")
    best = _model(adaptive=True)
    for k in (1, 4, 8):
        ours = fitted.goodput("cifar10@128", "rtx", k)
        assert (
            0.85 * best.goodput("cifar10@128", "rtx", k)
            <= ours
            <= best.goodput("cifar10@128", "rtx", k)
        )


@needs_profiles
def test_goodput_estimator_reports_progress_epoch_and_target(tmp_path):
    """progress, epoch and target follow the job's work in progress units."""
    seen = []

    class Probe(dlsched.policies.fifo.Fifo):
        round_s = 600.0

        def schedule(self, view):
            est = view.estimator
            for state in view.running.values():
                seen.append(
                    (
                        est.progress(state, view.now),
                        est.epoch(state, view.now),
                        est.target(state.spec),
                    )
                )
            return super().schedule(view)

    work = dlsched.load_trace(_sia_csv(tmp_path, [("cifar10-0", 0, 1, 128)]))
    dlsched.simulate(work, _sia_cluster(), Probe())
    conv = _model().convergence("cifar10")
    assert seen and all(t == conv.target for _, _, t in seen)
    assert all(conv.bounds[e] <= p < conv.bounds[e + 1] for p, e, _ in seen)
    assert seen[-1][1] > seen[0][1]


def test_goodput_estimator_needs_the_goodput_truth():
    """The goodput estimator on another truth is a clear error, not wrong numbers."""
    jobs = pd.DataFrame({"job_id": ["a"], "submit_time": [0.0], "num_gpus": [1], "duration": [5.0]})
    with pytest.raises(ConfigError, match="GoodputModel"):
        dlsched.simulate(jobs, _one_gpu(), "fifo", estimator="goodput")


@needs_profiles
def test_noisy_goodput_estimator_scales_goodput_by_a_seeded_factor(tmp_path):
    """'goodput:noisy:<sigma>' gives the oracle's goodput × one factor per (model, type)."""
    from dlsched.perf import make_estimator
    from dlsched.policies.fifo import Fifo

    answers = []

    class Probe(Fifo):
        def schedule(self, view):
            for state in view.pending.values():
                est = view.estimator
                answers.append([est.goodput(state.spec, "t4", k) for k in (1, 2, 4)])
            return super().schedule(view)

    work = dlsched.load_trace(_sia_csv(tmp_path, [("cifar10-0", 0, 1, 256)]))
    for spec in ("goodput", "goodput:noisy:0.5", "goodput:noisy:0.5", "goodput:noisy:0"):
        dlsched.simulate(work, _sia_cluster(), Probe(), estimator=make_estimator(spec), seed=7)
    oracle, noisy, again, zero = (np.array(a) for a in answers)
    ratio = noisy / oracle
    assert np.allclose(ratio, ratio[0]) and not np.isclose(ratio[0], 1.0)
    assert np.array_equal(noisy, again) and np.allclose(zero, oracle)
    with pytest.raises(ValueError, match="goodput:"):
        make_estimator("goodput:noisy:-1")


@needs_profiles
@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("oracle", "GoodputEstimator()"),
        ("noisy:0.3", "NoisyGoodputEstimator(sigma=0.3, sigma_throughput=0.0)"),
        ("learned", "LearnedGoodputEstimator()"),
    ],
)
def test_plain_estimators_become_goodput_aware(tmp_path, given, used):
    """On a Pollux/Sia workload the oracle, noisy and learned estimators answer goodput."""
    work = dlsched.load_trace(_sia_csv(tmp_path, [("bert-0", 0, 1, 12)]))
    result = dlsched.simulate(work, _sia_cluster(), "fifo", estimator=given)
    assert result.meta["estimator"] == used


@given(
    st.lists(st.floats(0.1, 50.0), min_size=1, max_size=5),
    st.lists(st.floats(0.1, 10.0), min_size=6, max_size=6),
    st.floats(0.5, 300.0),
)
@settings(max_examples=40, deadline=None)
def test_piecewise_completion_is_the_sum_of_its_segments(widths, rates, total):
    """A lone job finishes at Σ segment work / segment rate, its work exactly its total."""

    class Random(Piecewise):
        BOUNDS = (*np.cumsum(widths).tolist(), math.inf)
        RATES = tuple(rates[: len(widths) + 1])

    expected, done = 0.0, 0.0
    for bound, rate in zip(Random.BOUNDS, Random.RATES, strict=True):
        step = min(bound, total) - done
        if step > 0:
            expected += step / rate
            done += step
    result = dlsched.simulate(_jobs(total), _one_gpu(), "fifo", throughput=Random(), audit=True)
    assert result.jobs["finish_time"].iloc[0] == pytest.approx(expected, rel=1e-9)


@needs_profiles
def test_unmeasured_placement_is_interpolated_on_the_grid():
    """A placement nobody measured gets step times from the (nodes, GPUs, batch) grid."""
    steps = _model().step_times("cifar10", "t4")
    placement = next(
        p for p in ((2,) * n for n in range(2, 17)) if steps.placement_id(p) not in steps._measured
    )
    step, sync = steps.times(placement, [64.0])
    points = np.array([[len(placement), sum(placement), 64.0]])
    assert step[0] > sync[0] > 0
    assert np.allclose([step[0], sync[0]], steps._interpolator()(points)[0])
    assert steps.largest_local_bsz(placement) >= steps.min_local_bsz


@needs_profiles
def test_efficiency_is_one_at_the_initial_batch_and_falls_with_batch():
    """Statistical efficiency is 1 at B0 and below 1 for larger batches (Pollux §3.1)."""
    conv = _model().convergence("cifar10")
    b0 = conv.init_batch_size
    eff = conv.efficiency(np.array([b0, 4 * b0, 16 * b0], dtype=float), 0)
    assert eff[0] == pytest.approx(1.0) and eff[0] > eff[1] > eff[2] > 0


def test_barycentric_in_one_free_coordinate_is_linear():
    """Points that differ in one coordinate only interpolate linearly along it."""
    from dlsched.perf.goodput import Barycentric

    points = np.array([[1, 4, 10], [1, 4, 30], [1, 4, 20]], dtype=float)
    values = np.array([[1.0], [3.0], [2.0]])
    out = Barycentric(points, values)(np.array([[1, 4, 25], [1, 4, 40]], dtype=float))
    assert out[0, 0] == pytest.approx(2.5) and np.isnan(out[1, 0])


@needs_profiles
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"flavor": "x"}, "flavor"),
        ({"batch_choice": "x"}, "batch_choice"),
        ({"fallback": "x"}, "fallback"),
    ],
)
def test_goodput_model_refuses_unknown_options(kwargs, match):
    """Misspelt options are errors that name the option."""
    with pytest.raises(ValueError, match=match):
        GoodputModel(PROFILES, **kwargs)


@needs_profiles
def test_goodput_model_names_bad_model_names():
    """Unknown applications, bad batch suffixes and fixed jobs without a batch are named."""
    from dlsched.errors import UnknownModelError

    model = _model()
    with pytest.raises(UnknownModelError, match="'resnet50'.*profiled: bert"):
        model.target("resnet50")
    with pytest.raises(UnknownModelError, match="'cifar10@big'"):
        model.target("cifar10@big")
    with pytest.raises(UnknownModelError, match="fixed-batch"):
        model.throughput("cifar10", "t4", 1)
    assert _model(adaptive=True).throughput("cifar10", "t4", 1) > 0


def test_srtf_still_preempts_a_job_that_was_re_rated():
    """A re-rated running job stays preemptible: B (5 steps, at 15) preempts A at once."""
    jobs = pd.DataFrame(
        {
            "job_id": ["A", "B"],
            "submit_time": [0.0, 15.0],
            "num_gpus": 1,
            "total_steps": [100.0, 5.0],
        }
    )
    # A passes its bound at 10 steps (t = 10, re-rated to 2 steps/s); B arrives at 15 and,
    # shorter, preempts it; B's 5 steps run at 1 step/s (its work is below 10): done at 20.
    result = dlsched.simulate(jobs, _one_gpu(), "srtf", throughput=Piecewise(), audit=True)
    finish = dict(zip(result.jobs["job_id"], result.jobs["finish_time"], strict=True))
    assert finish["B"] == 20.0
