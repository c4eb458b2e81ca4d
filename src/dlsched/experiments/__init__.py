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

# The runner brings in the engine, pandas and tqdm, the config numpy and the trace transforms:
# each name is imported on its first use (PEP 562), so that `import dlsched.experiments` costs
# none of them and a name costs only its own module.

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

EXECUTORS = ("local", "process", "dask")
"""Where an experiment's runs go: one by one in this process, a local process pool, Dask.
Defined here, not in the runner, so that the CLI's parser can check it without the engine."""

if TYPE_CHECKING:
    from dlsched.experiments import config, runner, store, transforms  # noqa: F401
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
        ExperimentOutcome,
        RunOutcome,
        complete_dataset,
        dataset_labels,
        execute_run,
        run_experiment,
        simulate_config,
    )
    from dlsched.experiments.store import (
        DATASET_TABLES,
        LABEL_COLUMNS,
        RESULTS_FORMAT,
        FsspecResultsStore,
        LeaseLostError,
        ResultsStore,
        RunCheck,
        StoreBusyError,
        WriterLease,
    )
    from dlsched.experiments.transforms import (
        scale_arrivals,
    )

__all__ = [
    "DATASET_TABLES",
    "EXECUTORS",
    "MAX_GRID_CELLS",
    "MAX_REPLICATES",
    "RESULTS_FORMAT",
    "Experiment",
    "ExperimentOutcome",
    "FsspecResultsStore",
    "GridPoint",
    "LABEL_COLUMNS",
    "LeaseLostError",
    "PolicyChoice",
    "ResultsStore",
    "Run",
    "RunCheck",
    "RunOutcome",
    "StoreBusyError",
    "WriterLease",
    "canonical_json",
    "complete_dataset",
    "dataset_labels",
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

# Public name → the module of this package that defines it.
_LAZY_NAMES = {
    "MAX_GRID_CELLS": "config",
    "MAX_REPLICATES": "config",
    "Experiment": "config",
    "GridPoint": "config",
    "PolicyChoice": "config",
    "Run": "config",
    "canonical_json": "config",
    "load_experiment": "config",
    "parse_experiment": "config",
    "resolve_experiment": "config",
    "run_key": "config",
    "run_seed": "config",
    "workload_seed": "config",
    "ExperimentOutcome": "runner",
    "RunOutcome": "runner",
    "execute_run": "runner",
    "complete_dataset": "runner",
    "dataset_labels": "runner",
    "run_experiment": "runner",
    "simulate_config": "runner",
    "RESULTS_FORMAT": "store",
    "DATASET_TABLES": "store",
    "LABEL_COLUMNS": "store",
    "FsspecResultsStore": "store",
    "LeaseLostError": "store",
    "ResultsStore": "store",
    "RunCheck": "store",
    "StoreBusyError": "store",
    "WriterLease": "store",
    "scale_arrivals": "transforms",
}


def __getattr__(name: str) -> Any:
    """Import a public name, or a sub-module, of this package on its first use."""
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY_NAMES[name]}"), name)
    elif name in ("config", "runner", "store", "transforms"):
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The package's attributes, the ones not imported yet included."""
    return sorted({*globals(), *_LAZY_NAMES, "config", "runner", "store", "transforms"})
