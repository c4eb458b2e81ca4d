"""`elasticflow-fig8b`, `-fig9` and `-fig10`: plans, references, bundled inputs, and the points
measured against them."""

import hashlib
from pathlib import Path

import pytest

from dlsched.reproduce import REPRODUCTIONS
from dlsched.reproduce import elasticflow_a100 as a100
from dlsched.reproduce.elasticflow import SCHEMES

PLANS = {
    "elasticflow-fig8b": (a100.plan_8b, a100.FIG8B, SCHEMES),
    "elasticflow-fig9": (a100.plan_9, a100.FIG9, a100.FIG9_SCHEMES),
    "elasticflow-fig10": (a100.plan_10, (a100.FIG10,), SCHEMES),
}


def test_registered_with_a_published_and_an_artifact_value_per_setup():
    assert set(PLANS) <= set(REPRODUCTIONS.names())
    for name, (_, setups, schemes) in PLANS.items():
        assert set(a100.PUBLISHED[name]) == set(a100.ARTIFACT[name]) == set(schemes)
        for scheme in schemes:
            assert len(a100.PUBLISHED[name][scheme]) == len(setups)
            assert len(a100.ARTIFACT[name][scheme]) == len(setups)
    # the artifact rerun here gives the authors' Figure 10 logs again
    assert a100.ARTIFACT["elasticflow-fig10"] == a100.PUBLISHED["elasticflow-fig10"]


@pytest.mark.parametrize("name", list(PLANS))
def test_each_point_runs_its_setup_with_the_figures_slot(name):
    plan, setups, schemes = PLANS[name]
    full = plan(Path("."), quick=False)
    assert len(full) == len(setups) * len(schemes)
    assert len({p.task.id for p in full}) == len(full)
    by_x = {s.x: s for s in setups}
    for point in full:
        spec, setup = point.task.spec, by_x[point.x]
        assert (spec["trace"], spec["cluster"]) == (setup.trace, setup.cluster)
        slot = spec["params"]["lease_s" if spec["policy"] == "themis" else "slot_s"]
        assert slot == setup.slot_s
        policy, params = schemes[point.series]
        assert spec["policy"] == policy and params.items() <= spec["params"].items()
    quick = plan(Path("."), quick=True)
    assert {p.task.id for p in quick} <= {p.task.id for p in full}


def test_quick_runs_are_cluster_10_and_64_gpus():
    assert {p.x for p in a100.plan_8b(Path("."), quick=True)} == {10.0}
    assert {p.x for p in a100.plan_9(Path("."), quick=True)} == {64.0}
    themis = [p for p in a100.plan_8b(Path("."), quick=True) if p.series == "Themis"]
    assert themis[0].task.spec["params"] == {"reading": "artifact", "lease_s": 60.0}


def test_an_unregistered_policy_is_left_out_with_a_note(monkeypatch, capsys):
    monkeypatch.setattr(a100, "registered", lambda policy: policy != "elasticflow_edf_ac")
    points = a100.plan_9(Path("."), quick=True)
    assert "EDF + Admission Control" not in [p.series for p in points]
    assert "EDF + Admission Control left out" in capsys.readouterr().err


def test_bundled_traces_are_the_papers():
    import gzip

    digests = {
        # cluster10.csv of microsoft/elasticflow-traces @ 277ed24, data/elasticflow-traces.tar.gz
        "elasticflow_itp_cluster10.csv": "e54ba1d74228d02d",
        "elasticflow_itp_cluster01.csv.gz": "599c2b80cea7b3d4",
        "elasticflow_itp_cluster04.csv.gz": "b999cbdb8a773b58",
        "elasticflow_itp_cluster09.csv.gz": "ca5e83a973c0c104",
        # generate_trace.py --num_jobs=100 --lam=1500 --min_ddl=1.5 --seed=1 (run_fig10.sh)
        "elasticflow_100jobs_1500lam.csv": "0d9011c099fdd297",
    }
    for name, digest in digests.items():
        data = a100.data_path(name).read_bytes()
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        assert hashlib.sha256(data).hexdigest()[:16] == digest, name
    import dlsched

    for setup in (a100.FIG8B[0], a100.FIG8B[9], a100.FIG8B[10], a100.FIG9[0], a100.FIG10):
        trace = dlsched.load_trace(a100.data_path(setup.trace))
        assert len(trace.jobs) == setup.jobs
        assert trace.jobs["deadline"].notna().all()


def test_the_large_cluster_gets_the_artifacts_larger_overheads():
    import dlsched
    from dlsched.elasticflow_overheads import ELASTICFLOW, ELASTICFLOW_256, for_cluster

    assert for_cluster(dlsched.load_cluster(a100.FIG8B[9].cluster)) == ELASTICFLOW_256
    assert for_cluster(dlsched.load_cluster(a100.FIG10.cluster)) == ELASTICFLOW


def test_simulate_charges_the_large_cluster_costs_by_default(tmp_path):
    """One rigid 1-GPU job: its first start costs base + 2 s, the base 2 s under 256 GPUs and
    7 s from 256 on, so it ends 5 s later on 256 GPUs (nothing else differs)."""
    import dlsched

    trace = tmp_path / "t.csv"
    trace.write_text(
        "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration\n"
        "0,0,1000,resnet50,100000,64,1,100\n"
    )
    ends = {}
    for cluster in (a100.FIG10.cluster, a100.FIG8B[9].cluster):
        for policy, params in (("elasticflow", {}), ("themis", {"reading": "artifact"})):
            result = dlsched.simulate(
                dlsched.load_trace(trace),
                cluster,
                policy=policy,
                throughput="elasticflow",
                **params,
            )
            ends[cluster, policy] = float(result.jobs["finish_time"].iloc[0])
    for policy in ("elasticflow", "themis"):
        small, large = ends[a100.FIG10.cluster, policy], ends[a100.FIG8B[9].cluster, policy]
        assert large - small == pytest.approx(5.0)


def _check(name, points):
    """Each point within tolerance, or its gap explained in `GAPS`."""
    for point in points:
        ratio = a100.measure(point.task.spec, Path("."))["deadline_satisfactory_ratio"]
        gap = a100.GAPS.get((name, point.series, point.x))
        assert point.tolerance.allows(ratio, point.published) or gap, (point.label, ratio)


def test_figure_10_points_within_tolerance():
    """Measured 0.92, 0.79, 1.0, 1.0, 0.98 against the authors' 0.92, 0.79, 1.0, 0.99, 1.0
    (~3 CPU s for the five)."""
    _check("elasticflow-fig10", a100.plan_10(Path("."), quick=True))


@pytest.mark.slow
def test_figure_8b_cluster_10_within_tolerance_or_explained():
    """Measured 0.777, 0.335, 0.477, 0.473, 0.973 (published 0.769, 0.354, 0.473, 0.431,
    0.981); Themis' gap is explained in `GAPS` (~15 CPU s)."""
    _check("elasticflow-fig8b", a100.plan_8b(Path("."), quick=True))
