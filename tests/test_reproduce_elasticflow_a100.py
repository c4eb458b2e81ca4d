"""`elasticflow-fig8b` and `elasticflow-fig10`: plans, references, bundled inputs, and the
points measured against them."""

import hashlib
from pathlib import Path

import pytest

from dlsched.reproduce import REPRODUCTIONS
from dlsched.reproduce import elasticflow_a100 as a100
from dlsched.reproduce.elasticflow import SCHEMES


def test_registered_with_the_five_schemes_and_their_references():
    assert {"elasticflow-fig8b", "elasticflow-fig10"} <= set(REPRODUCTIONS.names())
    for references in (a100.PUBLISHED_8B, a100.AUTHORS_10, a100.ARTIFACT_8B, a100.ARTIFACT_10):
        assert set(references) == set(SCHEMES)
    # the artifact rerun here gives the authors' Figure 10 logs again
    for scheme, (_, satisfied) in a100.ARTIFACT_10.items():
        assert satisfied is not None and satisfied / 100 == a100.AUTHORS_10[scheme]


@pytest.mark.parametrize(
    ("plan", "setup"), [(a100.plan_8b, a100.FIG8B), (a100.plan_10, a100.FIG10)]
)
def test_each_scheme_runs_with_the_figures_slot(plan, setup):
    points = plan(Path("."), quick=True)
    assert [p.series for p in points] == list(SCHEMES)
    for point in points:
        spec = point.task.spec
        assert (spec["trace"], spec["cluster"]) == (setup.trace, setup.cluster)
        slot = spec["params"]["lease_s" if spec["policy"] == "themis" else "slot_s"]
        assert slot == setup.slot_s
        assert point.x == setup.jobs
    themis = points[list(SCHEMES).index("Themis")].task.spec
    assert themis["params"] == {"reading": "artifact", "lease_s": setup.slot_s}


def test_an_unregistered_policy_is_left_out_with_a_note(monkeypatch, capsys):
    monkeypatch.setattr(a100, "registered", lambda policy: policy != "elasticflow")
    points = a100.plan_10(Path("."), quick=True)
    assert "ElasticFlow" not in [p.series for p in points]
    assert "ElasticFlow left out" in capsys.readouterr().err


def test_bundled_traces_are_the_papers():
    digests = {
        # cluster10.csv of microsoft/elasticflow-traces @ 277ed24, data/elasticflow-traces.tar.gz
        a100.FIG8B.trace: "e54ba1d74228d02d77cce1f6b0120e5b50e784e7c278a2d2434431fba1b0f2eb",
        # generate_trace.py --num_jobs=100 --lam=1500 --min_ddl=1.5 --seed=1 (run_fig10.sh)
        a100.FIG10.trace: "0d9011c099fdd2977a88cb9d100d4259d6e2e4bd35ea38de7dab3c94acf1a5c5",
    }
    for name, digest in digests.items():
        assert hashlib.sha256(a100.data_path(name).read_bytes()).hexdigest() == digest
    import dlsched

    for setup in (a100.FIG8B, a100.FIG10):
        trace = dlsched.load_trace(a100.data_path(setup.trace))
        assert len(trace.jobs) == setup.jobs
        assert trace.jobs["deadline"].notna().all()


def test_the_large_cluster_gets_the_artifacts_larger_overheads():
    import dlsched
    from dlsched.elasticflow_overheads import ELASTICFLOW, ELASTICFLOW_256, for_cluster

    assert for_cluster(dlsched.load_cluster(a100.FIG8B.cluster)) == ELASTICFLOW_256
    assert for_cluster(dlsched.load_cluster(a100.FIG10.cluster)) == ELASTICFLOW


def test_figure_10_points_within_tolerance():
    """Measured 0.92, 0.79, 1.0, 1.0, 0.98 against the authors' 0.92, 0.79, 1.0, 0.99, 1.0
    (~3 CPU s for the five)."""
    for point in a100.plan_10(Path("."), quick=True):
        ratio = a100.measure(point.task.spec, Path("."))["deadline_satisfactory_ratio"]
        assert point.tolerance.allows(ratio, point.published), (point.series, ratio)


@pytest.mark.slow
def test_figure_8b_points_within_tolerance_but_themis():
    """Measured 0.777, 0.335, 0.477, 0.473, 0.973 (published 0.769, 0.354, 0.473, 0.431,
    0.981); Themis' gap is explained in `GAPS`."""
    for point in a100.plan_8b(Path("."), quick=True):
        metrics = a100.measure(point.task.spec, Path("."))
        ratio = metrics["deadline_satisfactory_ratio"]
        within = point.tolerance.allows(ratio, point.published)
        assert within or ("elasticflow-fig8b", point.series) in a100.GAPS, (point.series, ratio)
        if point.series == "ElasticFlow":
            assert metrics["jobs_declined"] == 2


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
    for cluster in (a100.FIG10.cluster, a100.FIG8B.cluster):
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
        small, large = ends[a100.FIG10.cluster, policy], ends[a100.FIG8B.cluster, policy]
        assert large - small == pytest.approx(5.0)
