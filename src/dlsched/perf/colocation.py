"""`LucidColocation`: measured GPU-sharing slowdowns (Lucid) on top of any throughput model.

Source: Hu et al., "Lucid: A Non-intrusive, Scalable and Interpretable Scheduler for Deep
Learning Training Jobs", ASPLOS 2023 — `simulation/data/colocate_info.csv` of
`S-Lab-System-Group/Lucid` (commit 63685a3), copied byte for byte to
`../shared/anchors/lucid_colocation/` (see its README). Each row is one measured pair of
1-GPU training jobs sharing one GPU (an RTX 3090, 24 GB), with each job's speed relative to
running alone. The file is under the S-Lab License 1.0 (non-commercial), so dlsched does not
ship it: pass its path.

A job alone runs at the base model's rate. A 1-GPU job packed beside one other 1-GPU job runs
at the base rate × the mean measured relative speed of its model beside the other's (over
every batch size and AMP setting measured; means above 1, measurement noise per the
README, count as 1). A pair nobody measured, a pair of multi-GPU jobs, or more than two
jobs on a GPU get rate 0: the pair does not fit, and the engine refuses to pack it. Model
names match Lucid's (`ResNet18`, `VGG`, `LSTM`, ...), case-insensitively.

With the `duration` base (the default), a duration-only trace whose `model` column uses
Lucid's names can be replayed with packing, e.g. by Gandiva:

    truth = LucidColocation.from_csv("../shared/anchors/lucid_colocation/colocate_info.csv")
    dlsched.simulate(trace, cluster, "gandiva", throughput=truth)
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence

from dlsched.perf.base import DurationModel, ThroughputModel


def _key(model: str | None) -> str:
    return "" if model is None else model.strip().lower()


class LucidColocation:
    """Base throughput alone; Lucid's measured relative speeds for 1-GPU pairs."""

    name = "lucid-colocation"

    def __init__(
        self,
        speeds: dict[tuple[str, str], float],
        base: ThroughputModel | None = None,
        source: str = "<dict>",
    ) -> None:
        self.base: ThroughputModel = DurationModel() if base is None else base
        self.source = source
        self._speed = {(_key(a), _key(b)): min(1.0, float(s)) for (a, b), s in speeds.items()}

    @classmethod
    def from_csv(
        cls, path: str | os.PathLike[str], base: ThroughputModel | None = None
    ) -> LucidColocation:
        """Read Lucid's `colocate_info.csv`: mean relative speed per ordered model pair."""
        sums: dict[tuple[str, str], list[float]] = {}
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                a, b = row["model1"], row["model2"]
                sums.setdefault((a, b), []).append(float(row["speed1"]))
                sums.setdefault((b, a), []).append(float(row["speed2"]))
        speeds = {pair: sum(values) / len(values) for pair, values in sums.items()}
        return cls(speeds, base, source=str(path))

    def relative_speed(self, model: str | None, other: str | None) -> float | None:
        """Measured speed of `model` beside `other`, relative to alone (None: not measured)."""
        return self._speed.get((_key(model), _key(other)))

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        if not colocated:
            return self.base.throughput(model, gpu_type, n_gpus, n_nodes)
        if len(colocated) != 1 or n_gpus != 1 or colocated[0][1] != 1:
            return 0.0  # Lucid measured pairs of 1-GPU jobs only
        speed = self.relative_speed(model, colocated[0][0])
        if speed is None:
            return 0.0
        return self.base.throughput(model, gpu_type, n_gpus, n_nodes) * speed

    def reference_type(self, model: str | None) -> str | None:
        return self.base.reference_type(model)

    def __repr__(self) -> str:
        return (
            f"LucidColocation({len(self._speed)} measured pairs from {self.source}, "
            f"base={self.base!r})"
        )
