"""dlsched: what would happen to my jobs under scheduler X?

A discrete-event simulator that replays deep-learning training traces on a modelled
heterogeneous GPU cluster under pluggable scheduling policies.

>>> import dlsched
>>> result = dlsched.simulate(dlsched.bundled_trace("tiresias_60_job.csv"), "tiresias-60",
...                           policy="srtf")
>>> result.summary()["jobs_completed"]
60
"""

# `import dlsched` loads only this file and `_version`: each public name, and each sub-package
# that used to come along with them, is imported on first use (PEP 562), so that a command that
# never simulates does not pay for pandas, SimPy and the loaders.

from __future__ import annotations

import importlib

from dlsched._version import __version__

# typing.TYPE_CHECKING without importing typing (~9 ms of CPU, most of what this file would cost);
# type checkers read a module-level TYPE_CHECKING the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    # The sub-packages that `import dlsched` used to bring in as attributes.
    from dlsched import (  # noqa: F401
        api,
        bundled,
        cluster,
        engine,
        errors,
        jobs,
        metrics,
        overheads,
        perf,
        policies,
        registry,
        traces,
    )
    from dlsched.api import simulate
    from dlsched.bundled import bundled_trace
    from dlsched.cluster import Cluster, load_cluster
    from dlsched.metrics import SimulationResult
    from dlsched.traces import Workload, load_trace

__all__ = [
    "Cluster",
    "SimulationResult",
    "Workload",
    "__version__",
    "bundled_trace",
    "load_cluster",
    "load_trace",
    "simulate",
]

# Public name → the module that defines it.
_LAZY_NAMES = {
    "Cluster": "dlsched.cluster",
    "SimulationResult": "dlsched.metrics",
    "Workload": "dlsched.traces",
    "bundled_trace": "dlsched.bundled",
    "load_cluster": "dlsched.cluster",
    "load_trace": "dlsched.traces",
    "simulate": "dlsched.api",
}

# Sub-packages that `import dlsched` used to bring in as attributes (`dlsched.policies.names()`
# after a bare `import dlsched`); they still resolve, now on first use.
_LAZY_SUBMODULES = frozenset(
    {
        "api",
        "bundled",
        "cluster",
        "engine",
        "errors",
        "jobs",
        "metrics",
        "overheads",
        "perf",
        "policies",
        "registry",
        "traces",
    }
)


def __getattr__(name: str) -> Any:
    """Import a public name or a sub-package of dlsched on its first use."""
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    elif name in _LAZY_SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # the next lookup is a plain attribute read
    return value


# This file's own machinery, left out of `dir(dlsched)` so that it lists what it always did.
_MACHINERY = frozenset(
    {"annotations", "importlib", "TYPE_CHECKING", "Any", "_LAZY_NAMES", "_LAZY_SUBMODULES"}
)


def __dir__() -> list[str]:
    """The package's attributes, the ones not imported yet included."""
    shown = {*globals(), *_LAZY_NAMES, *_LAZY_SUBMODULES} - _MACHINERY - {"_MACHINERY"}
    return sorted(shown)
