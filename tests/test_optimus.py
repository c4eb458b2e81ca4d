"""Optimus: the marginal-gain allocation, its convergence and speed models, and runs through
the engine (elastic re-scaling charged with its overhead)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from truths import Linear

import dlsched
from dlsched.jobs import JobSpec, JobState
from dlsched.overheads import OverheadModel
from dlsched.perf.convergence import (
    ConvergenceModel,
    ConvergenceTracker,
    LossCurve,
    fit_loss_curve,
)
from dlsched.perf.estimator import OracleEstimator
from dlsched.perf.ps_speed import (
    AllReduceSpeedModel,
    PSSpeedModel,
    PSThroughput,
    placement_for,
)
from dlsched.policies.optimus import GreedyJob, Optimus, marginal_gain_allocation

SHARED = Path(__file__).resolve().parents[2] / "shared"


class Sublinear(Linear):
    """n GPUs run n^0.8 steps/s, 10% less when spread over nodes."""

    def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
        if colocated:
            return 0.0
        return n_gpus**0.8 * (0.9 if n_nodes > 1 else 1.0)


def cluster(nodes=1, per_node=4):
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "V100", "count": nodes, "gpus_per_node": per_node}]}
    )


def gpu_job(key, remaining, speed, order, low=1, high=8):
    return GreedyJob(
        key=key,
        remaining=remaining,
        speed=lambda p, w: speed(w),
        min_workers=low,
        max_workers=high,
        order=(order,),
    )


# ---- the allocation, by hand ---------------------------------------------------------------


def three_jobs(high_a=8):
    """A: 120 steps at w steps/s (T = 120/w: gains 60, 20, 10); B: 60 steps at w steps/s
    (gains 30, 10, 5); C: 100 steps at 1 step/s whatever w (gain 0)."""
    return [
        gpu_job("A", 120.0, float, 0, high=high_a),
        gpu_job("B", 60.0, float, 1),
        gpu_job("C", 100.0, lambda w: 1.0, 2),
    ]


def test_marginal_gain_gives_gpus_to_the_largest_time_saved():
    """5 GPUs: floor A, B, C = 1 each (3 used); then A (+60) → 2, B (+30) → 2; the next
    best, A (+20), does not fit: A=2, B=2, C=1. C never gets a second GPU (gain 0)."""
    out = marginal_gain_allocation(three_jobs(), {"gpu": 5}, {"gpu": 1})
    assert out == {"A": (0, 2), "B": (0, 2), "C": (0, 1)}


def test_one_more_gpu_goes_to_the_next_best_gain():
    """6 GPUs: as above, then A (+20) beats B (+10): A=3."""
    out = marginal_gain_allocation(three_jobs(), {"gpu": 6}, {"gpu": 1})
    assert out == {"A": (0, 3), "B": (0, 2), "C": (0, 1)}


def test_the_cap_and_the_floor_order():
    """A capped at 1 GPU leaves its gains to B: 6 GPUs → A=1, B=4 (gains 30, 10, 5), C=1.
    With 2 GPUs the floor reaches A and B only (arrival order): C gets nothing."""
    out = marginal_gain_allocation(three_jobs(high_a=1), {"gpu": 6}, {"gpu": 1})
    assert out == {"A": (0, 1), "B": (0, 4), "C": (0, 1)}
    out = marginal_gain_allocation(three_jobs(), {"gpu": 2}, {"gpu": 1})
    assert out == {"A": (0, 1), "B": (0, 1), "C": (0, 0)}


def test_ps_mode_divides_the_gain_by_the_dominant_resource():
    """One job, T(p, w) = 1/w + 2/p (Q = 1, f = 1/T); 2 GPUs, 16 CPU, 48 GB. A worker's
    dominant resource is the GPU (1/2 > 2/16, 8/48): gain / 1. A PS task's is CPU (3/16 =
    9/48, first on ties): gain / 3. From (1, 1), T = 3: worker → 2.5 (gain 0.5), PS → 2
    (1/3): add a worker. At (1, 2): worker → 2.33 (0.167), PS → 1.5 (1/3): add a PS. At
    (2, 2): worker (0.167) beats PS (0.111) but no GPU is left: stop at (2, 2)."""
    job = GreedyJob(
        key="j",
        remaining=1.0,
        speed=lambda p, w: 1.0 / (1.0 / w + 2.0 / p),
        min_workers=1,
        max_workers=8,
        uses_ps=True,
        order=(0,),
    )
    out = marginal_gain_allocation(
        [job],
        {"gpu": 2, "cpu": 16, "mem": 48},
        {"gpu": 1, "cpu": 2, "mem": 8},
        {"cpu": 3, "mem": 9},
    )
    assert out == {"j": (2, 2)}


# ---- models --------------------------------------------------------------------------------


def test_nnls_recovers_the_loss_curve_from_noiseless_points():
    truth = LossCurve(0.1, 0.5, 0.2)
    epochs = np.arange(1, 9)
    fitted = fit_loss_curve(epochs, truth.loss(epochs))
    assert (fitted.beta0, fitted.beta1, fitted.beta2) == pytest.approx((0.1, 0.5, 0.2), rel=1e-6)
    assert fit_loss_curve([1, 2], [1.0, 0.9]) is None  # fewer than 3 points


def test_converged_epoch_by_hand():
    """l(35) − l(45) = 1/4 − 1/5 = 0.05 ≤ 0.05, while l(34) − l(44) = 1/3.9 − 1/4.9 =
    0.052: the curve converges at epoch 45 (10-epoch window, threshold 0.05)."""
    curve = LossCurve(0.1, 0.5, 0.2)
    assert curve.converged_epoch() == 45
    assert curve.converged_epoch(max_epochs=44) is None


def state_with(total_steps, steps_done, model="m", job_id=0):
    spec = JobSpec(
        index=0, job_id=job_id, submit_time=0.0, num_gpus=1, total_steps=total_steps, model=model
    )
    state = JobState(spec)
    state.steps_done = steps_done
    return state


def test_remaining_steps_from_the_online_fit():
    """Model m's noiseless curve l = 1/(0.1 k + 0.45) + 0.2 converges at epoch 46 (drop over
    the last 10 epochs 1/(4.05 · 5.05) = 0.0489 ≤ 0.05; at 45, 1/(3.95 · 4.95) = 0.0511);
    the job's 460 steps make 10 steps an epoch. After 100 steps (10 epochs observed) the fit
    is exact: (46 − 10) × 10 = 360 steps remain. After 20 steps (2 points, too few to fit)
    the prototype's fallback assumes 20 more epochs: 200 steps."""
    model = ConvergenceModel({"m": (0.1, 0.45, 0.2)}, job_spread=0.0, noise=0.0)
    tracker = ConvergenceTracker(model)
    assert model.epochs(state_with(460, 0).spec) == 46
    assert tracker.remaining_steps(state_with(460, 100.0), 0.0) == pytest.approx(360.0)
    assert [e for e, _ in tracker.points(state_with(460, 0).spec)] == list(range(1, 11))
    other = ConvergenceTracker(model)
    assert other.remaining_steps(state_with(460, 20.0), 0.0) == pytest.approx(200.0)


def test_synthetic_curves_are_seeded_and_order_free():
    """Same seed → same curves and noisy losses whatever the order of the questions."""
    jobs = [state_with(1000, 0, model=m, job_id=i).spec for i, m in enumerate("abab")]
    first, second = ConvergenceModel(seed=7), ConvergenceModel(seed=7)
    forward = [(first.curve(j), first.observed_loss(j, 3)) for j in jobs]
    backward = [(second.curve(j), second.observed_loss(j, 3)) for j in reversed(jobs)]
    assert forward == backward[::-1]
    assert ConvergenceModel(seed=8).curve(jobs[0]) != forward[0][0]
    assert first.model_curve("a") == first.model_curve("A")  # per-model parameters


def test_ps_speed_fit_recovers_theta():
    """Noiseless sync samples over an off-diagonal (p, w) design give θ back (1/f is linear
    in θ); the async form likewise."""
    truth = PSSpeedModel((0.02, 0.1, 0.05, 0.003, 0.01), sync=True, batch_size=64)
    design = [(1, 1), (1, 2), (2, 1), (2, 2), (2, 4), (4, 2), (4, 4), (3, 6)]
    fitted = PSSpeedModel.fit([(p, w, truth.speed(p, w)) for p, w in design], batch_size=64)
    assert fitted.theta == pytest.approx(truth.theta, rel=1e-6, abs=1e-12)
    async_truth = PSSpeedModel((0.5, 0.2, 0.05, 0.01), sync=False)
    fitted = PSSpeedModel.fit([(p, w, async_truth.speed(p, w)) for p, w in design], sync=False)
    assert fitted.theta == pytest.approx(async_truth.theta, rel=1e-6, abs=1e-12)
    assert PSSpeedModel.fit([(1, 1, 1.0)] * 4) is None  # sync needs 5 samples


def test_all_reduce_fit_recovers_theta():
    truth = AllReduceSpeedModel((1.0, 0.05, 0.01, 0.2))
    points = [(k, -(-k // 4), truth.speed(k, -(-k // 4))) for k in (1, 2, 3, 4, 6, 8)]
    assert AllReduceSpeedModel.fit(points).theta == pytest.approx(truth.theta, rel=1e-6)


def test_pollux_placements_are_packed_on_fewest_nodes_else_even():
    assert placement_for(6, 2) == (4, 2)
    assert placement_for(6, 3) == (2, 2, 2)
    assert placement_for(8, 2) == (4, 4)


# ---- through the engine --------------------------------------------------------------------


def two_elastic_jobs():
    return pd.DataFrame(
        {
            "job_id": ["A", "B"],
            "submit_time": [0.0, 50.0],
            "num_gpus": [1, 1],
            "total_steps": [1000.0, 1000.0],
            "min_gpus": [1, 1],
            "max_gpus": [4, 4],
        }
    )


def test_grow_and_shrink_are_charged_the_rescale_overhead():
    """4 GPUs, n GPUs run n steps/s, rounds every 100 s, re-scaling costs 10 s.

    t=0: A alone takes all 4 GPUs (first start: no cost). B arrives at 50 and waits.
    t=100: A has 600 steps left, B 1000: floor 1 + 1, then B (T 1000 → 500, gain
    500) and A (600 → 300, gain 300) get one more each; B's next (167) does not fit. A
    shrinks 4 → 2 (10 s), B starts on 2. t=200, 300: the same counts, nothing moves.
    t=400: A has 20 left, B 400: B's gains 200 and 67 beat A's 10: A 2 → 1, B 2 → 3, both
    re-scaled (10 s): A finishes at 410 + 20 = 430. t=500: B (270 done since 410, 130
    left) alone grows 3 → 4 and finishes at 510 + 130 / 4 = 542.5."""
    result = dlsched.simulate(
        two_elastic_jobs(),
        cluster(),
        Optimus(mode="gpu", interval_s=100.0),
        throughput=Linear(),
        overheads=OverheadModel(rescale_s=10.0),
    )
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["A", "finish_time"] == pytest.approx(430.0)
    assert jobs.loc["B", "finish_time"] == pytest.approx(542.5)
    assert (jobs.loc["A", "rescales"], jobs.loc["B", "rescales"]) == (2, 2)
    events = result.events[result.events["event"].isin(["start", "rescale"])]
    seen = [(e.time, e.job_id, e.event, e.num_gpus, e.overhead_s) for e in events.itertuples()]
    assert seen == [
        (0.0, "A", "start", 4, 0.0),
        (100.0, "A", "rescale", 2, 10.0),
        (100.0, "B", "start", 2, 0.0),
        (400.0, "A", "rescale", 1, 10.0),
        (400.0, "B", "rescale", 3, 10.0),
        (500.0, "B", "rescale", 4, 10.0),
    ]


def test_a_rigid_job_gets_its_request_or_nothing():
    jobs = pd.DataFrame(
        {"job_id": ["r"], "submit_time": [0.0], "num_gpus": [3], "total_steps": [300.0]}
    )
    result = dlsched.simulate(jobs, cluster(), "optimus", throughput=Linear(), mode="gpu")
    assert result.events[result.events["event"] == "start"]["num_gpus"].tolist() == [3]
    assert result.jobs.iloc[0]["finish_time"] == pytest.approx(100.0)


def small_workload(n=14, seed=3):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(n)],
            "submit_time": np.sort(rng.uniform(0, 2000, n)).round(),
            "num_gpus": rng.choice([1, 2, 4], n),
            "total_steps": rng.uniform(300, 3000, n).round(),
            "model": rng.choice(["resnet", "bert"], n),
            "min_gpus": 1,
            "max_gpus": 8,
        }
    )


@pytest.mark.parametrize(
    "params",
    [
        {"mode": "gpu"},
        {"mode": "gpu", "speed": "fit", "placement": "pollux"},
        {"mode": "ps"},
        {"mode": "gpu", "convergence": "model"},
    ],
)
def test_every_job_finishes_exactly_once(params):
    """2 nodes × 4 GPUs, 14 elastic jobs, rounds every 120 s (the auditor checks the
    engine invariants after every call)."""
    params = dict(params)
    if params.get("convergence") == "model":
        params["convergence"] = ConvergenceModel(seed=1)
    work = small_workload()
    result = dlsched.simulate(
        work,
        cluster(nodes=2),
        Optimus(interval_s=120.0, **params),
        throughput=Sublinear(),
        overheads=OverheadModel(rescale_s=5.0),
    )
    assert (result.jobs["status"] == "finished").all()
    finishes = result.events[result.events["event"] == "finish"]["job_id"]
    assert sorted(finishes) == sorted(work["job_id"])
    assert result.jobs["finish_time"].ge(result.jobs["submit_time"]).all()


class HalfProfile(OracleEstimator):
    """An estimator whose profile says every job runs at half its true speed."""

    def throughput(self, job, gpu_type, n_gpus=None, n_nodes=None):
        return super().throughput(job, gpu_type, n_gpus, n_nodes) / 2


class SampleLog(Optimus):
    """Optimus that remembers job A's speed samples after every scheduling call."""

    def start(self, view):
        super().start(view)
        self.log = {}

    def schedule(self, view):
        answer = super().schedule(view)
        self.log[view.now] = dict(self._samples.get("A", {}))
        return answer


def test_fitted_speed_samples_are_the_progress_a_job_shows():
    """speed="fit": a running job's sample is the rate its progress shows, not the profile
    (here half the truth) and not the true rate before any progress. A (1 GPU, 1 step/s)
    starts at 0 and pays 150 s: at t=100 it has shown nothing, the profiled 0.5 stays; at
    t=200 it has done 50 steps in 50 s: the sample is 1.0."""
    work = pd.DataFrame(
        {"job_id": ["A"], "submit_time": [0.0], "num_gpus": [1], "total_steps": [500.0]}
    )
    policy = SampleLog(mode="gpu", speed="fit", interval_s=100.0)
    dlsched.simulate(
        work,
        cluster(),
        policy,
        throughput=Linear(),
        estimator=HalfProfile(),
        overheads=OverheadModel(first_start_s=150.0),
    )
    assert policy.log[0.0] == {(1, 1): 0.5}
    assert policy.log[100.0] == {(1, 1): 0.5}
    assert policy.log[200.0] == {(1, 1): pytest.approx(1.0)}


def test_a_run_starts_from_no_loss_curve_fits():
    """The online loss-curve fits are per run: after a run cut short (max_time_s, jobs
    unfinished and never forgotten), the same Optimus gives the same run as a fresh one."""
    work = small_workload()

    def run(policy, **limit):
        return dlsched.simulate(
            work,
            cluster(nodes=2),
            policy,
            throughput=Sublinear(),
            overheads=OverheadModel(rescale_s=5.0),
            **limit,
        )

    def optimus():
        return Optimus(mode="gpu", interval_s=120.0, convergence=ConvergenceModel(seed=1))

    policy = optimus()
    with pytest.warns(RuntimeWarning, match="never finished"):
        run(policy, max_time_s=1500.0)
    again, fresh = run(policy), run(optimus())
    assert again.jobs.equals(fresh.jobs) and again.events.equals(fresh.events)


def test_a_new_optimus_keeps_no_run_state():
    """Per-run state (fits, samples, plans, the nodes' CPU and memory) is built in start."""
    state = {"_tracker", "_samples", "_fits", "_last_tick", "ps_tasks", "ps_nodes", "last_plan"}
    assert not state & set(vars(Optimus()))


@pytest.mark.parametrize(
    ("plan", "per_node", "ps_nodes"),
    [
        ((2, 4), [4, 0], (0, 0)),  # one server holds 4 workers + 2 PS (14 of 32 CPU)
        ((2, 6), [3, 3], (0, 1)),  # 6 workers need two servers: 3 workers + 1 PS on each
        ((3, 2), [2, 0], (0, 0, 0)),  # 3 PS + 2 workers fit one server (13 CPU)
        # 10 PS + 2 workers need 34 CPU: CPU, not GPUs, forces a second server, 5 PS on each
        ((10, 2), [1, 1], (0,) * 5 + (1,) * 5),
    ],
)
def test_ps_placement_uses_the_fewest_servers_evenly(plan, per_node, ps_nodes):
    """2 servers × 4 GPUs (32 virtual CPU each). A job planned (p, w) goes to the fewest
    servers over which its PS tasks and workers can be dealt evenly."""
    seen = {}

    class Fixed(Optimus):
        def _allocate(self, view):
            return {job: plan for job in view.pending.values()}

        def _place(self, view, alloc, plan_):
            placed = super()._place(view, alloc, plan_)
            for job_id in alloc:
                nodes = [view.cluster.gpu_node[g] for g in alloc[job_id]]
                seen.setdefault("gpus", [nodes.count(0), nodes.count(1)])
                seen.setdefault("ps", self.ps_nodes[job_id])
            return placed

    jobs = pd.DataFrame(
        {
            "job_id": ["j"],
            "submit_time": [0.0],
            "num_gpus": [1],
            "total_steps": [100.0],
            "min_gpus": [1],
            "max_gpus": [8],
        }
    )
    dlsched.simulate(jobs, cluster(nodes=2), Fixed(mode="ps"), throughput=Linear())
    assert seen == {"gpus": per_node, "ps": ps_nodes}


def test_ps_mode_with_a_ps_truth_runs_every_job_with_a_ps():
    """f(p, w) fitted from profiling samples of the true PS speed functions: every job
    finishes and every job that held GPUs held a PS task too."""
    models = {
        "resnet": PSSpeedModel((0.002, 0.05, 0.08, 0.002, 0.004), batch_size=64),
        "bert": PSSpeedModel((0.004, 0.05, 0.04, 0.002, 0.004), batch_size=64),
    }
    seen = []

    class Recording(Optimus):
        def _place(self, view, alloc, plan):
            placed = super()._place(view, alloc, plan)
            seen.extend(self.ps_tasks[job_id] >= 1 for job_id in alloc)
            return placed

    policy = Recording(mode="ps", interval_s=120.0, speed="fit", ps_models=models)
    result = dlsched.simulate(
        small_workload(8), cluster(nodes=2), policy, throughput=PSThroughput(models)
    )
    assert (result.jobs["status"] == "finished").all()
    assert seen and all(seen)


def test_registry_and_parameter_errors():
    assert isinstance(dlsched.policies.get("optimus", mode="gpu"), Optimus)
    with pytest.raises(ValueError, match="mode must be"):
        Optimus(mode="cpu")
    with pytest.raises(ValueError, match="convergence must be"):
        Optimus(convergence="fit")


# ---- the Pollux artifact's applications ----------------------------------------------------


def test_pollux_work_at_the_smallest_batch_is_the_validated_iteration_count():
    """At the smallest validated batch the statistical gain is 1, so the steps to complete
    equal the progress, which the artifact's tables record as ≈ the iterations run."""
    folder = SHARED / "traces" / "sia_pollux" / "sia" / "traces" / "bert"
    if not folder.exists():
        pytest.skip("needs ../shared/traces/sia_pollux")
    from dlsched.perf.ps_speed import PolluxApplication

    app = PolluxApplication(folder)
    assert app.max_epochs == 2 and app.max_gpus(384) == 96
    assert app.total_steps(12) == pytest.approx(app.iterations(12, 1), rel=1e-3)
    assert app.total_steps(384) < app.total_steps(12) / 20  # 32x the batch, fewer steps


# ---- virtual clusters ----------------------------------------------------------------------


def test_a_vc_quota_caps_the_marginal_gains():
    """6 GPUs, A of VC q (quota 2): floor 1 each, A (+60) → 2; A's next (+20) would pass the
    quota, so q takes no more and the others go on: B (+30, +10) → 3, C = 1."""
    jobs = three_jobs()
    jobs[0].vc = "q"
    out = marginal_gain_allocation(jobs, {"gpu": 6}, {"gpu": 1}, quotas={"q": 2})
    assert out == {"A": (0, 2), "B": (0, 3), "C": (0, 1)}


def test_a_pool_caps_the_marginal_gains_of_its_jobs_only():
    """6 GPUs: A draws from pool 'own' (2 GPUs), B and C from the rest (4): A stops at 2
    when its pool is full, while B still grows to 3."""
    jobs = three_jobs()
    jobs[0].pool = "own"
    for job in jobs[1:]:
        job.pool = None
    out = marginal_gain_allocation(
        jobs, {"gpu": 6}, {"gpu": 1}, pools={"own": {"gpu": 2}, None: {"gpu": 4}}
    )
    assert out == {"A": (0, 2), "B": (0, 3), "C": (0, 1)}


def vc_cluster(vc):
    """2 nodes × 2 V100 with one VC."""
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2}],
            "vcs": [vc],
        }
    )


def elastic_jobs(*rows):
    """Elastic jobs (1–4 GPUs) from (id, submit, steps, vc) rows."""
    return pd.DataFrame(
        {
            "job_id": [r[0] for r in rows],
            "submit_time": [r[1] for r in rows],
            "num_gpus": 1,
            "total_steps": [r[2] for r in rows],
            "min_gpus": 1,
            "max_gpus": 4,
            "vc": [r[3] for r in rows],
        }
    )


def gpus_held(result):
    """job id → list of the GPU-id tuples each start or rescale gave it."""
    events = result.events[result.events["event"].isin(["start", "rescale"])]
    held: dict = {}
    for e in events.itertuples():
        held.setdefault(e.job_id, []).append(tuple(int(g) for g in e.gpus.split(",")))
    return held


@pytest.mark.parametrize("mode", ["gpu", "ps"])
def test_a_job_of_a_node_owning_vc_runs_on_its_nodes_only(mode):
    """VC 'own' owns node 0 (GPUs 0, 1): its job A alone takes 2 GPUs there, not all 4."""
    result = dlsched.simulate(
        elastic_jobs(("A", 0.0, 1000.0, "own")),
        vc_cluster({"name": "own", "nodes": 1}),
        Optimus(mode=mode, interval_s=100.0),
        throughput=Linear(),
        audit=True,
    )
    assert gpus_held(result) == {"A": [(0, 1)]}
    assert result.jobs.iloc[0]["finish_time"] == pytest.approx(500.0)


@pytest.mark.parametrize("mode", ["gpu", "ps"])
def test_a_job_without_a_vc_stays_off_owned_nodes(mode):
    """VC 'own' owns node 0: job B, of no VC, alone takes node 1's 2 GPUs only."""
    result = dlsched.simulate(
        elastic_jobs(("B", 0.0, 1000.0, None)),
        vc_cluster({"name": "own", "nodes": 1}),
        Optimus(mode=mode, interval_s=100.0),
        throughput=Linear(),
        audit=True,
    )
    assert gpus_held(result) == {"B": [(2, 3)]}


def test_a_vc_quota_caps_a_job_alone():
    """VC q has a quota of 2 GPUs: its job A alone on 4 free GPUs takes 2."""
    result = dlsched.simulate(
        elastic_jobs(("A", 0.0, 1000.0, "q")),
        vc_cluster({"name": "q", "gpus": 2}),
        Optimus(mode="gpu", interval_s=100.0),
        throughput=Linear(),
        audit=True,
    )
    assert [len(g) for g in gpus_held(result)["A"]] == [2]
    assert result.jobs.iloc[0]["finish_time"] == pytest.approx(500.0)


def test_a_vc_quota_caps_a_growing_job():
    """Quota 3: A (VC q, 3000 steps: gains 1500, 500) and B (1100 steps: gain 550) share the
    4 GPUs 2 + 2; B finishes at 550, and at the next round (600) A grows to 3 GPUs, its
    quota, not to 4."""
    result = dlsched.simulate(
        elastic_jobs(("A", 0.0, 3000.0, "q"), ("B", 0.0, 1100.0, None)),
        vc_cluster({"name": "q", "gpus": 3}),
        Optimus(mode="gpu", interval_s=100.0),
        throughput=Linear(),
        audit=True,
    )
    assert [len(g) for g in gpus_held(result)["A"]] == [2, 3]


def test_a_job_at_its_quota_leaves_the_free_gpus_to_others():
    """Quota 1: A (VC q, 4000 steps) has the best gain but may not grow; B (1000 steps) of
    no VC still takes the other 3 GPUs."""
    result = dlsched.simulate(
        elastic_jobs(("A", 0.0, 4000.0, "q"), ("B", 0.0, 1000.0, None)),
        vc_cluster({"name": "q", "gpus": 1}),
        Optimus(mode="gpu", interval_s=100.0),
        throughput=Linear(),
        audit=True,
    )
    held = gpus_held(result)
    assert [len(g) for g in held["A"]] == [1]
    assert [len(g) for g in held["B"]] == [3]
