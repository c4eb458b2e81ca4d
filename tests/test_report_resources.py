"""`dlsched report` on a cluster that declares CPU cores and host memory: every resource's
utilisation as figures, a Markdown table and a plot."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest
import yaml

from dlsched.cli import main
from dlsched.experiments import run_experiment, runner
from dlsched.report import PLOTS, RESOURCE_PLOT, write_report

# Two nodes of 2 GPUs, 8 cores and 16 GB each: 4 GPUs, 16 cores, 32 GB.
TWO_NODES = {
    "name": "two-nodes",
    "nodes": [
        {"gpu_type": "V100", "count": 2, "gpus_per_node": 2, "cpus": 8, "host_memory_gb": 16}
    ],
}
# 0-10 s: 3 GPUs, 10 cores, 12 GB held; 10-50 s: 4, 12, 14; 50-100 s: 2, 4, 8.
TRACE = """job_id,submit_time,num_gpus,duration,num_cpus,memory_gb
a,0,2,100,4,8
b,0,1,50,6,4
c,10,1,40,2,2
"""
PNG = b"\x89PNG\r\n\x1a\n"


def _experiment(folder, cluster=TWO_NODES):
    """One FIFO run of the three jobs on `cluster`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "jobs.csv").write_text(TRACE)
    path = folder / "resources.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "resources",
                "cluster": cluster,
                "workload": {"trace": "jobs.csv"},
                "policies": ["fifo"],
                "seed": 1,
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """The experiment run and reported once."""
    folder = tmp_path_factory.mktemp("resources")
    run_experiment(_experiment(folder), folder / "out", executor="local")
    return folder, folder / "out", write_report(folder / "out")


def test_summary_csv_has_hand_computed_cpu_and_memory_utilisation(reported):
    """CPU (10·10 + 12·40 + 4·50) / (16·100), memory (12·10 + 14·40 + 8·50) / (32·100)."""
    _, out, _ = reported
    row = pd.read_csv(out / "summary.csv").iloc[0]
    assert row["cpu_utilization"] == pytest.approx(780 / 1600)
    assert row["peak_cpu_utilization"] == pytest.approx(12 / 16)
    assert row["memory_utilization"] == pytest.approx(1080 / 3200)
    assert row["peak_memory_utilization"] == pytest.approx(14 / 32)
    assert row["gpu_busy_utilization"] == pytest.approx(row["utilization"])


def test_markdown_has_a_utilisation_by_resource_table(reported):
    """summary.md: the section, the capacities and the figures as percentages."""
    _, out, _ = reported
    md = (out / "summary.md").read_text()
    section = md[md.index("## Utilisation by resource") :]
    assert "4 GPUs, 16 cores, 32 GB of host memory" in section
    assert "| fifo | 1 | 72.5 % | 72.5 % | 48.8 % | 75.0 % | 33.8 % | 43.8 % |" in section
    assert f"]({RESOURCE_PLOT})" in md


def test_the_resource_plot_is_written(reported):
    """resource_utilization.png beside the other plots, listed by write_report."""
    _, out, written = reported
    assert {p.name for p in written} >= {*PLOTS, RESOURCE_PLOT}
    data = (out / RESOURCE_PLOT).read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000


@pytest.mark.slow  # an experiment of its own: 4 s
def test_a_gpu_only_cluster_gets_no_resource_figures(tmp_path):
    """The same jobs on nodes that declare nothing: no new column, section or plot."""
    gpu_only = {"name": "g", "nodes": [{"gpu_type": "V100", "count": 2, "gpus_per_node": 2}]}
    run_experiment(_experiment(tmp_path, gpu_only), tmp_path / "out", executor="local")
    written = {p.name for p in write_report(tmp_path / "out")}
    assert RESOURCE_PLOT not in written
    assert "cpu_utilization" not in pd.read_csv(tmp_path / "out" / "summary.csv").columns
    assert "Utilisation by resource" not in (tmp_path / "out" / "summary.md").read_text()


def test_a_moved_trace_does_not_matter(reported, tmp_path, capsys):
    """With the trace gone, `dlsched report` still gives the CPU and memory figures: the
    stored runs carry their jobs' demands."""
    folder, out, _ = reported
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    trace = folder / "jobs.csv"
    saved = trace.read_text()
    trace.unlink()
    runner._load.cache_clear()  # the loaded trace is cached per process
    try:
        assert main(["report", str(copy)]) == 0
    finally:
        trace.write_text(saved)
    md = (copy / "summary.md").read_text()
    assert "could not be rebuilt" not in md
    assert "cpu_utilization" in pd.read_csv(copy / "summary.csv").columns
    assert str(copy / "summary.md") in capsys.readouterr().out
