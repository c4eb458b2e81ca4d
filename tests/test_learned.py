"""The learned estimator: a prior until a (model, type, count) has been measured, then the
measured rate; observations need `min_observation_s` of progress and are shared by model."""

import pandas as pd
import pytest

import dlsched
from dlsched.perf import LearnedEstimator, ProfileTable, make_estimator

MODEL = "ResNet-50 (batch size 64)"


class Probe:
    """FIFO on K80 first (the only type the trace says), recording the estimator's view."""

    name, round_s = "probe", None

    def __init__(self):
        self.seen = []

    def schedule(self, view):
        est = view.estimator
        for state in view.pending.values():
            self.seen.append(
                (
                    view.now,
                    state.job_id,
                    est.throughput(state.spec, "v100"),
                    est.throughput(state.spec, "k80"),
                )
            )
        alloc = view.allocation()
        for state in sorted(view.pending.values(), key=lambda s: s.spec.index):
            gpus = view.place(state, gpu_type="k80")
            if gpus:
                alloc[state] = gpus
        return alloc


def cluster():
    return dlsched.Cluster.from_dict(
        {
            "name": "c",
            "nodes": [
                {"gpu_type": "K80", "gpus_per_node": 1},
                {"gpu_type": "V100", "gpus_per_node": 1},
            ],
        }
    )


def test_prior_is_agnostic_then_the_measured_rate_is_used():
    """Job a runs on the K80 from t=0. At t=100 (job b arrives) the K80 rate of the model has
    been measured (a ran 100 s ≥ 60 s), the V100 rate has not: the V100 estimate is still the
    agnostic prior = the reference-type (K80, from the trace) rate."""
    table = ProfileTable.gavel()
    k80 = table.throughput(MODEL, "k80", 1)
    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 100.0],
            "num_gpus": [1, 1],
            "duration": [1000.0, 1000.0],
            "model": [MODEL, MODEL],
            "gpu_type": ["K80", "K80"],
        }
    )
    probe = Probe()
    estimator = LearnedEstimator(min_observation_s=60.0)
    dlsched.simulate(jobs, cluster(), probe, throughput="gavel", estimator=estimator)
    at_zero = [s for s in probe.seen if s[0] == 0.0][0]
    assert at_zero[2] == pytest.approx(k80) and at_zero[3] == pytest.approx(k80)
    at_100 = [s for s in probe.seen if s[0] == 100.0][0]
    assert at_100[3] == pytest.approx(k80)
    assert at_100[2] == pytest.approx(k80)  # V100 never measured: still the prior
    assert estimator.observations >= 1


def test_a_stint_shorter_than_the_observation_window_teaches_nothing():
    jobs = pd.DataFrame(
        {
            "job_id": ["a"],
            "submit_time": [0.0],
            "num_gpus": [1],
            "duration": [30.0],
            "model": [MODEL],
            "gpu_type": ["K80"],
        }
    )
    estimator = LearnedEstimator(min_observation_s=60.0)
    dlsched.simulate(jobs, cluster(), Probe(), throughput="gavel", estimator=estimator)
    assert estimator.observations == 0


def test_measured_rate_replaces_a_wrong_prior():
    """With the scaling prior for V100 wrong on purpose (a model of another cluster), a job
    that ran on the V100 teaches the true V100 rate."""
    table = ProfileTable.gavel()

    class Wrong:
        name = "wrong"

        def throughput(self, model, gpu_type, n_gpus, n_nodes=1, colocated=None):
            return 1.0

        def reference_type(self, model):
            return None

    class V100First(Probe):
        def schedule(self, view):
            alloc = view.allocation()
            for state in view.pending.values():
                gpus = view.place(state, gpu_type="v100")
                if gpus:
                    alloc[state] = gpus
            self.spec = getattr(self, "spec", None) or next(iter(view.pending.values())).spec
            self.seen.append((view.now, view.estimator.throughput(self.spec, "v100")))
            return alloc

    jobs = pd.DataFrame(
        {
            "job_id": ["a", "b"],
            "submit_time": [0.0, 500.0],
            "num_gpus": [1, 1],
            "duration": [400.0, 10.0],
            "model": [MODEL, MODEL],
        }
    )
    estimator = LearnedEstimator(prior=Wrong())
    probe = V100First()
    dlsched.simulate(jobs, cluster(), probe, throughput="gavel", estimator=estimator)
    assert probe.seen[0][1] == 1.0  # t=0: the prior
    assert probe.seen[-1][1] == pytest.approx(table.throughput(MODEL, "v100", 1))


def test_learned_estimator_names():
    assert make_estimator("learned").prior == "agnostic"
    assert make_estimator("learned:scaling").prior.name == "scaling"
    with pytest.raises(ValueError, match="prior"):
        make_estimator("learned:magic")


def test_srtf_with_a_learned_estimator_is_deterministic_and_finishes():
    jobs = dlsched.load_trace("traces/tiresias_60_job.csv")
    runs = [
        dlsched.simulate(
            jobs, "tiresias-60", "srtf", throughput="scaling", estimator="learned"
        ).jobs
        for _ in range(2)
    ]
    assert (runs[0]["status"] == "finished").all()
    pd.testing.assert_frame_equal(runs[0], runs[1])
