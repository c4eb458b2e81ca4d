"""The ElasticFlow artifact's measured throughputs on T4 and A100, as a `ProfileTable`.

Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep
Learning", ASPLOS '23; artifact ``pkusys/ElasticFlow`` @ ``04a0109a6acd`` (Apache-2.0),
``ElasticFlow/scheduler/throughputs_T4/*.csv`` and ``throughputs_A100/*.csv``: per model (the
file name) and global batch size (a row), iterations per second on 1, 2, 4, … 64 GPUs (the
columns); ``nan`` or empty where the model cannot run on that many GPUs. The artifact's
simulator reads one folder, by ``--gpu_type`` (``scheduler.py`` ``main``), into
``THROUGHPUTS[model][batch][GPUs]`` (``profiles.py``) and advances a job by
``run_time × THROUGHPUTS[...]`` iterations (``jobs.py`` ``run_all_jobs``, lines 379–410),
whatever the job's nodes.

Shipped as one long table, ``dlsched/data/elasticflow_throughputs.csv`` (``gpu_type,
model_name,global_batch_size,num_gpus,iterations_per_s``; the cells as the artifact has them,
``nan`` or empty ones included, skipped when read), with the
licence in ``dlsched/data/LICENSE.ElasticFlow-Apache-2.0.txt``. A job's model is
``"<model_name> (batch size <global batch>)"``, as the ``elasticflow`` trace loader writes it
(`dlsched.traces.elasticflow.model_key`). Faithful: the rates, and a job spread over nodes
runs at the same rate as one packed on a node (the artifact's tables have no placement
dimension). The reference type for turning a traced duration into iterations is the A100:
the artifact's ITP traces were generated so (``num_iteration = duration ×
throughput_A100[model][batch][num_gpu]``, ``trace_generator/generate_trace_from_itp.py``).
"""

from __future__ import annotations

import csv
import math
from importlib import resources

from dlsched.perf.profile import ProfileTable

DATA_FILE = "elasticflow_throughputs.csv"


def elasticflow_profile() -> ProfileTable:
    """The artifact's T4 and A100 tables as one `ProfileTable` named ``elasticflow``."""
    from dlsched.traces.elasticflow import model_key

    data: dict[str, dict[str, dict[str, float]]] = {}
    ref = resources.files("dlsched.data") / DATA_FILE
    with ref.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            text = row["iterations_per_s"].strip()
            rate = float(text) if text else math.nan
            if math.isnan(rate):
                continue  # the model does not run on that many GPUs
            model = model_key(row["model_name"], row["global_batch_size"])
            key = f"('{model}', {int(row['num_gpus'])})"
            data.setdefault(row["gpu_type"], {})[key] = {"null": rate}
    table = ProfileTable(data, source=f"dlsched/data/{DATA_FILE}", reference="a100")
    table.name = "elasticflow"
    return table
