"""Horus (TPDS '22): predicted-utilisation queue, look-ahead, interference-aware co-location;
its leave-one-model-out utilisation predictor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dlsched
from dlsched.perf.colocation import LucidColocation
from dlsched.perf.gpu_util import Profile, UtilisationPredictor
from dlsched.policies.horus import MEMCOST, UTILCOST, Horus, lucid_model

LUCID = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "lucid_colocation"
SINGLE = LUCID / "single_data.csv"
PAIRS = LUCID / "colocate_info.csv"
needs_lucid = pytest.mark.skipif(
    not (SINGLE.exists() and PAIRS.exists()), reason="needs ../shared/anchors/lucid_colocation"
)


def _cluster(gpus: int) -> dlsched.Cluster:
    return dlsched.Cluster.from_dict(
        {"name": "c", "nodes": [{"gpu_type": "rtx3090", "gpus_per_node": gpus, "count": 1}]}
    )


def _jobs(*rows: tuple) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["job_id", "submit_time", "num_gpus", "duration", "model"])


def _speed(table: pd.DataFrame, a: str, b: str) -> float:
    """Lucid's mean measured speed of `a` beside `b` (both sides of every row), capped at 1."""
    one = table[(table["model1"] == a) & (table["model2"] == b)]["speed1"]
    two = table[(table["model2"] == a) & (table["model1"] == b)]["speed2"]
    return min(1.0, float(pd.concat([one, two]).mean()))


# ---- the cost function (no data needed) ---------------------------------------------------
def test_cost_is_the_artifacts_horus_score_by_hand():
    """GPU of 24,576 MiB; on it a job of 60 % and 4,000 MiB; new job 30 % and 2,000 MiB:
    1.3 × 6000/24576 + |60 + 30 - 100| / 100 + 1 = 0.3174 + 0.1 + 1; a 70 % newcomer
    overshoots by 30: × 1.6 → 0.48; empty GPU: 1.3 × 2000/24576 + 0.7 + 0."""
    policy = Horus()
    on = [Profile(60.0, 4000.0)]
    assert policy.cost(on, Profile(30.0, 2000.0)) == pytest.approx(
        MEMCOST * 6000 / 24576 + 0.10 + 1
    )
    assert policy.cost(on, Profile(70.0, 2000.0)) == pytest.approx(
        MEMCOST * 6000 / 24576 + 30 * UTILCOST / 100 + 1
    )
    assert policy.cost([], Profile(30.0, 2000.0)) == pytest.approx(MEMCOST * 2000 / 24576 + 0.7)
    # Gandiva's score: the GPU's current utilisation only
    gandiva = Horus(score="gandiva")
    assert gandiva.cost(on, Profile(70.0, 2000.0)) == pytest.approx(
        MEMCOST * 6000 / 24576 + 0.6 + 1
    )


def test_memory_must_leave_the_headroom_free():
    """24,576 MiB with 500 MiB of headroom: 20,000 + 4,076 leaves exactly 500 — refused
    (the artifact needs more than 500 free); 4,075 fits."""
    policy = Horus()
    assert policy.cost([Profile(10.0, 20000.0)], Profile(10.0, 4076.0)) is None
    assert policy.cost([Profile(10.0, 20000.0)], Profile(10.0, 4075.0)) is not None


def test_a_free_gpu_always_beats_sharing_one():
    """Sharing costs at least 1 more than the newcomer's own free-GPU cost, whatever the
    utilisations: Horus co-locates only when no GPU is free."""
    policy = Horus()
    rng = np.random.default_rng(0)
    for _ in range(200):
        new = Profile(float(rng.uniform(0, 100)), float(rng.uniform(0, 10000)))
        on = Profile(float(rng.uniform(0, 100)), float(rng.uniform(0, 10000)))
        shared = policy.cost([on], new)
        if shared is not None:
            assert policy.cost([], new) < shared  # type: ignore[operator]


def test_model_names_map_to_lucids():
    assert lucid_model("ResNet-18 (batch size 64)") == "resnet18"
    assert lucid_model("LM (batch size 20)") == "lstm"
    assert lucid_model("Recommendation (batch size 512)") == "neumf"
    assert lucid_model(" MobileNet_V2 ") == "mobilenetv2"
    assert lucid_model(None) == ""


def test_bad_parameters_are_refused_by_name():
    for kwargs, name in [
        ({"utilisation": "oracle"}, "utilisation"),
        ({"score": "best"}, "score"),
        ({"queue": "lifo"}, "queue"),
        ({"lookahead": 0}, "lookahead"),
        ({"lookahead": 2.5}, "lookahead"),
        ({"gpu_memory_mib": 0}, "gpu_memory_mib"),
        ({"memory_headroom_mib": -1}, "memory_headroom_mib"),
    ]:
        with pytest.raises(ValueError, match=name):
            Horus(**kwargs)  # type: ignore[arg-type]


def test_a_missing_profile_table_is_an_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match="profiles"):
        dlsched.simulate(
            _jobs(("a", 0, 1, 10, "VGG")), _cluster(1), Horus(profiles=tmp_path / "none.csv")
        )


# ---- the predictor -------------------------------------------------------------------------
@needs_lucid
def test_predictor_holds_each_model_out_of_its_own_fit():
    """A model's predicted profile does not depend on its own rows (leave-one-model-out):
    changing VGG's measured utilisation leaves VGG's prediction as it was, and moves other
    models' predictions (their fits see VGG)."""
    rows = pd.read_csv(SINGLE).to_dict("records")
    base = UtilisationPredictor(rows)
    changed = [dict(r, gpu_util=100.0) if r["model"] == "VGG" else r for r in rows]
    other = UtilisationPredictor(changed)
    assert other.profile("VGG") == base.profile("VGG")
    assert other.profile("ResNet18") != base.profile("ResNet18")
    assert other.profile("VGG", holdout=False) != base.profile("VGG", holdout=False)
    assert base.measured("VGG") == pytest.approx(
        Profile(
            float(pd.read_csv(SINGLE).query("model == 'VGG'")["gpu_util"].mean()),
            float(pd.read_csv(SINGLE).query("model == 'VGG'")["gmem"].mean()),
        )
    )


@needs_lucid
def test_predictor_beats_the_tables_mean_leave_one_model_out():
    """On Lucid's 66 rows: MAE 20.0 points (the mean predicts with 27.4), memory ~2.2 GiB."""
    found = UtilisationPredictor.from_csv(SINGLE).evaluate()
    assert found["rows"] == 66
    assert found["util_mae"] == pytest.approx(20.02, abs=0.05)
    assert found["util_mae_of_mean"] == pytest.approx(27.41, abs=0.05)
    assert found["gmem_mae_mib"] == pytest.approx(2223, abs=5)


def test_predictor_refuses_bad_rows_by_field():
    rows = [{"model": m, "batchsize": 32, "amp": 0, "gpu_util": 50, "gmem": 2000} for m in "abc"]
    with pytest.raises(ValueError, match="features"):
        UtilisationPredictor(rows)
    with pytest.raises(ValueError, match="gmem"):
        UtilisationPredictor([{"model": "VGG", "batchsize": 32, "amp": 0, "gpu_util": 5}])
    with pytest.raises(ValueError, match="at least 3 models"):
        UtilisationPredictor(
            [{"model": "VGG", "batchsize": 32, "amp": 0, "gpu_util": 5, "gmem": 1}]
        )


# ---- the policy on Lucid's measured pairs -------------------------------------------------
@needs_lucid
def test_four_jobs_two_gpus_horus_pairs_by_predicted_utilisation():
    """2 GPUs. t=0: A (ResNet18, predicted 61.6 %) and B (TD3, 13.7 %) take the free GPUs.
    t=1: C (PPO, 0.0 %) and D (VGG, 62.6 %) arrive; no GPU is free, so each shares one.
    C goes first (lowest predicted utilisation) and beside A: |61.6 + 0 - 100| = 38.4 beats
    |13.7 + 0 - 100| = 86.3; D takes the GPU left, beside B (76.3 %).
    The engine applies Lucid's measured speeds: A runs at s(ResNet18|PPO) until C ends, B and
    D at s(TD3|VGG), s(VGG|TD3) (= 1: no measured slowdown), C at s(PPO|ResNet18)."""
    table = pd.read_csv(PAIRS, index_col=0)
    truth = LucidColocation.from_csv(PAIRS)
    work = _jobs(
        ("A", 0, 1, 100, "ResNet18"),
        ("B", 0, 1, 100, "TD3"),
        ("C", 1, 1, 100, "PPO"),
        ("D", 1, 1, 100, "VGG"),
    )
    policy = Horus(profiles=SINGLE)
    result = dlsched.simulate(work, _cluster(2), policy, throughput=truth)
    got = result.jobs.set_index("job_id")
    assert policy.stats == {"packs": 2, "unpredicted": 0}
    events = result.events
    starts = events[events["event"] == "start"].set_index("job_id")["gpus"]
    assert starts["C"] == starts["A"] and starts["D"] == starts["B"]
    s_ac, s_ca = _speed(table, "ResNet18", "PPO"), _speed(table, "PPO", "ResNet18")
    assert s_ca == 1.0 and s_ac < 0.97  # PPO is not slowed, ResNet18 is
    end_c = 1 + 100 / s_ca
    done_a = 1 + (end_c - 1) * s_ac  # work of A when C ends
    assert got.loc["C", "finish_time"] == pytest.approx(end_c)
    assert got.loc["A", "finish_time"] == pytest.approx(end_c + 100 - done_a)
    assert _speed(table, "TD3", "VGG") == _speed(table, "VGG", "TD3") == 1.0
    assert got.loc["B", "finish_time"] == pytest.approx(100.0)
    assert got.loc["D", "finish_time"] == pytest.approx(101.0)


@needs_lucid
def test_gandiva_score_pairs_by_current_utilisation_and_pays_for_it():
    """The same four jobs under the artifact's Gandiva score (the GPU's current utilisation,
    not the newcomer's) and FIFO order: C goes beside B (13.7 % < 61.6 %), D beside A:
    ResNet18 beside VGG is slowed more (s ≈ 0.84) than beside PPO (≈ 0.96): A ends at
    ≈ 116.4 instead of ≈ 103.6, and the makespan is longer than Horus'."""
    table = pd.read_csv(PAIRS, index_col=0)
    truth = LucidColocation.from_csv(PAIRS)
    work = _jobs(
        ("A", 0, 1, 100, "ResNet18"),
        ("B", 0, 1, 100, "TD3"),
        ("C", 1, 1, 100, "PPO"),
        ("D", 1, 1, 100, "VGG"),
    )
    horus = dlsched.simulate(work, _cluster(2), Horus(profiles=SINGLE), throughput=truth)
    naive = dlsched.simulate(
        work, _cluster(2), Horus(profiles=SINGLE, score="gandiva", queue="fifo"), throughput=truth
    )
    starts = naive.events[naive.events["event"] == "start"].set_index("job_id")["gpus"]
    assert starts["C"] == starts["B"] and starts["D"] == starts["A"]
    s_ad, s_da = _speed(table, "ResNet18", "VGG"), _speed(table, "VGG", "ResNet18")
    assert s_da == 1.0 and s_ad < 0.9  # VGG is not slowed, ResNet18 is
    end_d = 1 + 100 / s_da
    end_a = end_d + 100 - (1 + (end_d - 1) * s_ad)  # alone after D ends
    got = naive.jobs.set_index("job_id")
    assert got.loc["D", "finish_time"] == pytest.approx(end_d)
    assert got.loc["A", "finish_time"] == pytest.approx(end_a)
    assert naive.summary()["makespan"] > horus.summary()["makespan"]


@needs_lucid
def test_lookahead_lets_a_job_behind_a_blocked_head_start():
    """2 GPUs; A (VGG) runs. The head of the queue is a 2-GPU job G (MobileNetV2, 45.8 %, the
    lowest predicted utilisation waiting): it does not fit. Behind it X (LSTM, 54.3 %) fits on
    the free GPU: with look-ahead 5 it starts at once; with look-ahead 1 it waits behind G."""
    truth = LucidColocation.from_csv(PAIRS)
    work = _jobs(
        ("A", 0, 1, 50, "VGG"),
        ("G", 1, 2, 10, "MobileNetV2"),
        ("X", 1, 1, 10, "LSTM"),
    )
    five = dlsched.simulate(work, _cluster(2), Horus(profiles=SINGLE), throughput=truth)
    assert five.jobs.set_index("job_id").loc["X", "start_time"] == 1
    one = dlsched.simulate(work, _cluster(2), Horus(profiles=SINGLE, lookahead=1), throughput=truth)
    got = one.jobs.set_index("job_id")
    assert got.loc["G", "start_time"] == 50  # when A ends
    assert got.loc["X", "start_time"] == 60  # after G: the head held it back


@needs_lucid
def test_unknown_models_never_share_and_queue_last():
    """A model without features (BigNet) has no prediction: it is never co-located, never a
    partner, and waits behind predicted jobs; pairs nobody measured (BERT) are not packed."""
    truth = LucidColocation.from_csv(PAIRS)
    work = _jobs(
        ("A", 0, 1, 100, "BigNet"),
        ("B", 1, 1, 10, "VGG"),
        ("C", 2, 1, 10, "BERT"),
    )
    policy = Horus(profiles=SINGLE)
    result = dlsched.simulate(work, _cluster(1), policy, throughput=truth)
    got = result.jobs.set_index("job_id")
    assert policy.stats == {"packs": 0, "unpredicted": 1}
    assert policy.predicted["A"] is None
    assert got.loc["B", "start_time"] == 100  # not beside A
    assert got.loc["C", "start_time"] == 110  # BERT beside VGG was never measured


@needs_lucid
def test_measured_utilisation_uses_the_tables_means():
    policy = Horus(profiles=SINGLE, utilisation="measured")
    dlsched.simulate(_jobs(("a", 0, 1, 10, "VGG")), _cluster(1), policy)
    table = pd.read_csv(SINGLE).query("model == 'VGG'")
    assert policy.predicted["a"] == pytest.approx(
        Profile(float(table["gpu_util"].mean()), float(table["gmem"].mean()))
    )


@needs_lucid
def test_same_seed_same_result_on_a_loaded_cluster():
    """Forty 1-GPU jobs of Lucid's paired models on 4 GPUs (packing happens): two runs, one
    instance, the same table; a second instance agrees too."""
    rng = np.random.default_rng(3)
    models = ["ResNet18", "VGG", "LSTM", "PPO", "TD3", "MobileNetV3", "PointNet", "DCGAN"]
    work = pd.DataFrame(
        {
            "job_id": [f"j{i}" for i in range(40)],
            "submit_time": np.sort(rng.uniform(0, 2000, 40)),
            "num_gpus": rng.choice([1, 1, 1, 2], 40),
            "duration": rng.uniform(100, 1500, 40),
            "model": rng.choice(models, 40),
        }
    )
    truth = LucidColocation.from_csv(PAIRS)
    policy = Horus(profiles=SINGLE)
    first = dlsched.simulate(work, _cluster(4), policy, throughput=truth, seed=5)
    packs = policy.stats["packs"]
    second = dlsched.simulate(work, _cluster(4), policy, throughput=truth, seed=5)
    third = dlsched.simulate(work, _cluster(4), Horus(profiles=SINGLE), throughput=truth, seed=5)
    assert packs > 0
    pd.testing.assert_frame_equal(first.jobs, second.jobs)
    pd.testing.assert_frame_equal(first.jobs, third.jobs)
    assert first.summary()["jobs_completed"] == 40
