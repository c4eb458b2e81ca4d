"""Pollux and Sia workload CSVs (``name,time,application,num_replicas,batch_size``).

Pollux: Qiao et al., OSDI '21 (``petuum/adaptdl``, branch ``osdi21-artifact``,
``simulator/workloads*/``, Apache-2.0); Sia: Jayaram Subramanya et al., SOSP '23
(``siasosp23/artifacts``, ``sia-simulator/workloads/``, and the physical-testbed
``phoebe_workload.csv``; no licence file, research use with citation). Jobs are sampled from
Philly or Helios Saturn; the model and GPU count are re-assigned by the authors.

Mapping: ``job_id`` = ``name``; ``submit_time`` = ``time`` (s from the window start);
``model`` = ``application``; ``num_gpus`` = ``num_replicas`` (the requested/initial GPUs);
``batch_size`` (global) is kept as a passthrough column.

The files have **no run time**: a job runs until its model reaches its target metric
(Pollux's and Sia's simulators integrate the per-GPU-type throughput profiles and the
statistical-efficiency tables of ``sia/traces/<model>/``). The workload therefore has
neither ``duration`` nor ``total_steps``; ``provenance["work"]`` says so. `dlsched.simulate`
supplies the work: such a workload runs on the goodput model by default
(`dlsched.perf.goodput.GoodputModel.workload`: model ``<application>@<batch_size>``, work in
progress units to the model's last epoch), or `dlsched.perf.convergence.pollux_workload`
converts it to steps at the traced batch for `PolluxThroughput`.
"""

from __future__ import annotations

import os
from typing import Any

from dlsched.traces.parsing import require_columns
from dlsched.traces.reading import read_csv_frame
from dlsched.traces.schema import validate_jobs
from dlsched.traces.workload import Workload

FORMAT = "sia-pollux"
COLUMNS: tuple[str, ...] = ("name", "time", "application", "num_replicas", "batch_size")
RENAMES = {
    "name": "job_id",
    "time": "submit_time",
    "application": "model",
    "num_replicas": "num_gpus",
}
"""Pollux/Sia column → canonical column; ``batch_size`` stays as it is."""


def load(path: str | os.PathLike[str], *, lenient: bool = False) -> Workload:
    """Load a Pollux or Sia workload CSV (plain or gzipped)."""
    skipped: list[dict[str, Any]] | None = [] if lenient else None  # malformed CSV rows
    table = read_csv_frame(path, text_columns=("name", "application"), skipped=skipped)
    require_columns(table, COLUMNS[:4], path, FORMAT)
    table = table.rename(columns=RENAMES)
    return validate_jobs(
        table,
        path,
        lenient=lenient,
        fmt=FORMAT,
        skipped=skipped or (),
        field_names={ours: theirs for theirs, ours in RENAMES.items()},
    )
