"""Helpers of the experiment tests: a tiny workload, an experiment writer, and policies that
the tests name by import path (``experiment_helpers:SlowFifo``) — they live in a module, not
in a test file, so that worker processes can import them.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import yaml

from dlsched.policies.fifo import Fifo

# Six jobs on one 4-GPU node; small enough to work out by hand, with deadlines.
TINY_TRACE = """job_id,submit_time,num_gpus,duration,deadline
1,0,2,100,300
2,10,4,50,120
3,20,1,30,60
4,30,2,80,400
5,40,1,10,55
6,50,4,20,500
"""

TINY_CLUSTER = {"name": "one-node", "nodes": [{"gpu_type": "V100", "count": 1, "gpus_per_node": 4}]}


def write_experiment(folder: Path, name: str = "tiny", **fields: Any) -> Path:
    """Write the tiny trace and an experiment file using it into `folder`; `fields`
    replace or add top-level keys (a value of None removes the key)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tiny.csv").write_text(TINY_TRACE)
    data: dict[str, Any] = {
        "name": name,
        "cluster": TINY_CLUSTER,
        "workload": {"trace": "tiny.csv"},
        "policies": ["fifo", "srtf"],
        "seed": 3,
        "seeds": 2,
        "sweep": {"workload.arrival_rate_scale": [1.0, 2.0]},
    }
    for key, value in fields.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class SlowFifo(Fifo):
    """FIFO that sleeps `delay_s` in every scheduling call (a long run, made on purpose)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__()
        self.delay_s = delay_s

    def schedule(self, view):
        time.sleep(self.delay_s)
        return super().schedule(view)


class KillOnce(Fifo):
    """FIFO whose worker process kills itself (SIGKILL) in its first scheduling call if the
    file `marker` exists, removing it first: exactly one worker dies, once."""

    def __init__(self, marker: str = "") -> None:
        super().__init__()
        self.marker = marker

    def schedule(self, view):
        try:
            os.remove(self.marker)
        except FileNotFoundError:
            pass
        else:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().schedule(view)


class Broken(Fifo):
    """FIFO that raises in its first scheduling call."""

    def schedule(self, view):
        raise RuntimeError("this policy is broken on purpose")
