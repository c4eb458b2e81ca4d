"""Microsoft's ITP traces (`itp`), the ElasticFlow artifact's traces (`elasticflow`), and the
artifact's throughputs, clusters and overheads."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

import dlsched
from dlsched.errors import TraceError
from dlsched.jobs import JobSpec
from dlsched.overheads import make_overheads
from dlsched.perf import THROUGHPUT_MODELS
from dlsched.traces import detect_format, load_trace

DATA = Path(__file__).parent / "data"
ITP = DATA / "microsoft_itp_2021" / "cluster05_head300.csv"
FIG8A = DATA / "elasticflow" / "elasticVpollux_e.csv"
BEST_EFFORT = DATA / "elasticflow" / "resnet_cifar_trace.csv"
TRACES = Path(__file__).parent.parent / "traces"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ---- itp ---------------------------------------------------------------------------------


def test_itp_excerpt_loads_with_known_rows():
    """300 jobs; the first is 930dd644…, submitted 9940 s, 16235 s on 1 GPU."""
    jobs = load_trace(ITP).jobs
    assert len(jobs) == 300
    first = jobs.iloc[0]
    assert first["job_id"] == "930dd644-e119-8ce9-0935-e6148a7c7bed"
    assert (first["submit_time"], first["duration"], first["num_gpus"]) == (9940.0, 16235.0, 1)
    assert "deadline" not in jobs.columns or jobs["deadline"].isna().all()
    assert jobs["duration"].min() >= 600  # the upstream filter: no job under 10 min


def test_itp_is_detected_and_not_taken_for_another_format():
    """The raw header is `itp`; a header with model_name too is not."""
    assert detect_format(ITP) == "itp"
    assert detect_format(TRACES / "tiresias_60_job.csv") == "tiresias"


def test_gzipped_itp_table_is_detected(tmp_path):
    """A gzipped table, as in shared/, is read the same."""
    import gzip

    path = tmp_path / "cluster05.csv.gz"
    path.write_bytes(gzip.compress(ITP.read_bytes()))
    assert detect_format(path) == "itp" and len(load_trace(path)) == 300


def test_itp_bad_value_names_the_itp_field(tmp_path):
    """A bad GPU count names num_gpu (the file's name), the file and the row."""
    path = _write(tmp_path / "c.csv", "job_id,submission_time,duration,num_gpu\na,0,600,x\n")
    with pytest.raises(TraceError, match=r"row 2.*num_gpu") as caught:
        load_trace(path)
    assert caught.value.field == "num_gpu"


def test_itp_missing_column_is_named(tmp_path):
    """format='itp' on a file without duration says it is missing."""
    path = _write(tmp_path / "c.csv", "job_id,submission_time,num_gpu\na,0,1\n")
    with pytest.raises(TraceError, match="missing column 'duration'"):
        load_trace(path, format="itp")


# ---- elasticflow --------------------------------------------------------------------------


def test_figure_8a_trace_loads_as_the_artifact_reads_it():
    """195 jobs; job 0: submitted 3715485, 2011 iterations of cifar10 at batch 4096, ddl
    3719996, 1 GPU."""
    jobs = load_trace(FIG8A).jobs
    assert len(jobs) == 195
    first = jobs.set_index("job_id").loc[0]
    assert first["submit_time"] == 3715485.0
    assert first["total_steps"] == 2011.0
    assert first["model"] == "cifar10 (batch size 4096)"
    assert first["deadline"] == 3719996.0
    assert first["num_gpus"] == 1


def test_elasticflow_is_detected_before_tiresias():
    """Its header has Tiresias' num_gpu and model_name, but it is `elasticflow`."""
    assert detect_format(FIG8A) == "elasticflow"
    assert detect_format(BEST_EFFORT) == "elasticflow"


def test_best_effort_rows_have_no_deadline(tmp_path):
    """best_effort = 1 drops the deadline (the artifact sets ddl = sys.maxsize)."""
    path = _write(
        tmp_path / "t.csv",
        "job_id,submit_time,iteration,model_name,ddl,batch_size,num_gpu,duration,best_effort\n"
        "0,0,100,bert,500,384,1,400,0\n1,10,100,bert,600,384,2,400,1\n",
    )
    jobs = load_trace(path).jobs
    assert jobs["deadline"].tolist()[0] == 500.0
    assert math.isnan(jobs["deadline"].tolist()[1])
    assert jobs["best_effort"].tolist() == [0, 1]


def test_itp_derived_header_loads(tmp_path):
    """The clusterNN.csv header: submission_time, num_iteration, deadline."""
    path = _write(
        tmp_path / "cluster.csv",
        "job_id,submission_time,num_iteration,model_name,deadline,batch_size,num_gpu,duration\n"
        "u1,5,1000,vgg16,900,256,4,700\n",
    )
    assert detect_format(path) == "elasticflow"
    row = load_trace(path).jobs.iloc[0]
    assert (row["submit_time"], row["total_steps"], row["deadline"]) == (5.0, 1000.0, 900.0)
    assert row["model"] == "vgg16 (batch size 256)"


def test_elasticflow_missing_iterations_is_named(tmp_path):
    """No iteration nor num_iteration column: the error names both."""
    header = "job_id,submit_time,model_name,ddl,batch_size,num_gpu\n"
    path = _write(tmp_path / "t.csv", header + "0,0,bert,9,384,1\n")
    with pytest.raises(TraceError, match="'iteration' or 'num_iteration'"):
        load_trace(path, format="elasticflow")


# ---- throughputs, clusters, overheads -----------------------------------------------------


def test_elasticflow_throughputs_are_the_artifacts():
    """Rates equal the artifact's CSV cells: cifar10 @ 2048 on 4 T4 = 2.535…; vgg16 @ 64 on
    8 A100 = 19.33…; a nan cell (yolov3 @ 64 on 32 T4) is not a measured count."""
    table = THROUGHPUT_MODELS.get("elasticflow")()
    assert table.throughput("cifar10 (batch size 2048)", "t4", 4) == 2.53513302294422
    assert table.throughput("vgg16 (batch size 64)", "a100", 8) == 19.3298561900258
    assert table.measured_counts("yolov3 (batch size 64)", "t4") == [1, 2, 4, 8, 16]


def test_bundled_table_matches_every_cell_it_keeps():
    """Every number of the long table is in the model (nan/empty cells left out)."""
    from importlib import resources

    table = THROUGHPUT_MODELS.get("elasticflow")()
    ref = resources.files("dlsched.data") / "elasticflow_throughputs.csv"
    kept = 0
    with ref.open() as handle:
        for row in csv.DictReader(handle):
            text = row["iterations_per_s"]
            if not text or math.isnan(float(text)):
                continue
            model = f"{row['model_name']} (batch size {row['global_batch_size']})"
            rate = table.measured(model, row["gpu_type"], int(row["num_gpus"]))
            assert rate == float(text)
            kept += 1
    assert kept == 178


def test_figure_8a_models_are_all_profiled_on_t4():
    """Every job of the 195-job trace has a T4 rate for its GPU count."""
    table = THROUGHPUT_MODELS.get("elasticflow")()
    jobs = load_trace(FIG8A).jobs
    for model, n in zip(jobs["model"], jobs["num_gpus"], strict=True):
        assert table.throughput(model, "t4", int(n)) > 0


@pytest.mark.parametrize(
    ("name", "nodes", "per_node", "racks"),
    [
        ("elasticflow-n16g4-t4", 16, 4, 1),
        ("elasticflow-n32g8-a100", 32, 8, 1),
        ("elasticflow-n64g8-a100", 64, 8, 2),
        ("elasticflow-n128g8-a100", 128, 8, 1),
    ],
)
def test_elasticflow_clusters_have_the_artifacts_shapes(name, nodes, per_node, racks):
    """n16g4: 16 × 4; n64g8: 2 switches × 32 nodes × 8 GPUs (one rack per switch)."""
    cluster = dlsched.load_cluster(name)
    assert len(cluster.nodes) == nodes
    assert {len(node.gpu_ids) for node in cluster.nodes} == {per_node}
    assert len({node.rack for node in cluster.nodes}) == racks


@pytest.mark.parametrize(
    ("preset", "gpus", "first", "restart"),
    [
        # 2 + 2 × (log2 n + 1), restart + 27 (utils.py estimate_overhead)
        ("elasticflow", 1, 4.0, 31.0),
        ("elasticflow", 8, 10.0, 37.0),
        # 256 GPUs or more: 7 + …, restart + 47
        ("elasticflow-256", 8, 15.0, 62.0),
    ],
)
def test_elasticflow_overheads(preset, gpus, first, restart):
    """The artifact's estimate_overhead by GPU count, per preset."""
    model = make_overheads(preset)
    job = JobSpec(0, "j", 0.0, gpus, 100.0)
    assert model.first_start(job) == first
    assert model.rescale(job) == first
    assert model.migration(job) == first
    assert model.restart(job) == restart


def test_figure_8a_trace_runs_on_its_cluster():
    """The 195 jobs replay end to end on 16 × 4 T4 with the artifact's rates and overheads;
    a job alone at its requested GPUs needs iterations / rate seconds."""
    result = dlsched.simulate(
        load_trace(FIG8A),
        dlsched.load_cluster("elasticflow-n16g4-t4"),
        "fifo",
        throughput="elasticflow",
        overheads="elasticflow",
    )
    summary = result.summary()
    assert summary["jobs_completed"] == 195
    assert summary["deadline_jobs"] == 195
    assert 0.0 <= summary["deadline_satisfactory_ratio"] <= 1.0
    first = result.jobs.set_index("job_id").loc[0]
    rate = THROUGHPUT_MODELS.get("elasticflow")().throughput("cifar10 (batch size 4096)", "t4", 1)
    assert first["finish_time"] - first["start_time"] == pytest.approx(2011 / rate + 4.0)
