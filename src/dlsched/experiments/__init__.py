"""Experiments: a grid of runs from one YAML file, run resumably, on one machine or many.

>>> from dlsched.experiments import load_experiment
>>> exp = load_experiment("quickstart")          # a bundled experiment, or a YAML path
>>> len(exp.policies), len(exp.replicates), exp.axes
(4, 2, (('workload.arrival_rate_scale', (1.0, 2.0)),))
>>> len(exp.points)
16

``run_experiment(exp, "results/quickstart")`` runs what is not stored yet; see
``configs/experiments/README.md`` for the file format and ``store`` for the results layout.
"""

from dlsched.experiments.config import (
    MAX_GRID_CELLS,
    MAX_REPLICATES,
    Experiment,
    GridPoint,
    PolicyChoice,
    Run,
    canonical_json,
    load_experiment,
    parse_experiment,
    resolve_experiment,
    run_key,
    run_seed,
    workload_seed,
)
from dlsched.experiments.runner import (
    EXECUTORS,
    ExperimentOutcome,
    RunOutcome,
    execute_run,
    run_experiment,
    simulate_config,
)
from dlsched.experiments.store import (
    RESULTS_FORMAT,
    LeaseLostError,
    ResultsStore,
    RunCheck,
    StoreBusyError,
    WriterLease,
)
from dlsched.experiments.transforms import scale_arrivals

__all__ = [
    "EXECUTORS",
    "MAX_GRID_CELLS",
    "MAX_REPLICATES",
    "RESULTS_FORMAT",
    "Experiment",
    "ExperimentOutcome",
    "GridPoint",
    "LeaseLostError",
    "PolicyChoice",
    "ResultsStore",
    "Run",
    "RunCheck",
    "RunOutcome",
    "StoreBusyError",
    "WriterLease",
    "canonical_json",
    "execute_run",
    "load_experiment",
    "parse_experiment",
    "resolve_experiment",
    "run_experiment",
    "run_key",
    "run_seed",
    "scale_arrivals",
    "simulate_config",
    "workload_seed",
]
