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
)
from dlsched.experiments.runner import (
    EXECUTORS,
    ExperimentOutcome,
    RunOutcome,
    execute_run,
    run_experiment,
    simulate_config,
)
from dlsched.experiments.store import ResultsStore, StoreBusyError
from dlsched.experiments.transforms import scale_arrivals

__all__ = [
    "EXECUTORS",
    "Experiment",
    "ExperimentOutcome",
    "GridPoint",
    "PolicyChoice",
    "ResultsStore",
    "Run",
    "RunOutcome",
    "StoreBusyError",
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
]
