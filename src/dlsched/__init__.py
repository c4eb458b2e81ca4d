"""dlsched: what would happen to my jobs under scheduler X?

A discrete-event simulator that replays deep-learning training traces on a modelled
heterogeneous GPU cluster under pluggable scheduling policies.

>>> import dlsched
>>> result = dlsched.simulate(dlsched.bundled_trace("tiresias_60_job.csv"), "tiresias-60",
...                           policy="srtf")
>>> result.summary()["jobs_completed"]
60
"""

from dlsched._version import __version__
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
