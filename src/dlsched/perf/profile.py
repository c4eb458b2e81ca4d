"""`ProfileTable`: measured throughputs, in the schema of Gavel's `simulation_throughputs.json`.

``{gpu_type: {"('<model>', <n>)": {"null": steps/s alone, "('<other>', <n>)": [own, other]}}}``
with ``<type>_unconsolidated`` entries for jobs spread over several servers. Model names and
GPU types match case-insensitively. A zero throughput means "cannot run there" (Gavel's rule).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from dlsched.errors import UnknownModelError

_KEY = re.compile(r"^\('(?P<model>.*)', (?P<n>\d+)\)$")
_UNCONSOLIDATED = "_unconsolidated"


def _model_key(model: str) -> str:
    return model.strip().lower()


class ProfileTable:
    """Measured steps/s per (model, GPU type, GPU count, consolidated or not), with pairs."""

    def __init__(self, data: dict, source: str = "<dict>", reference: str = "v100") -> None:
        self.name = "profile"
        self.source = source
        self._reference = reference.lower()
        self._rates: dict[tuple[str, str, int, bool], float] = {}
        self._pairs: dict[tuple[str, str, int, str], tuple[float, float]] = {}
        self.model_names: dict[str, str] = {}
        parsed: dict[str, tuple[str, int]] = {}  # the same keys recur once per pair

        def parse(raw: str) -> tuple[str, int]:
            key = parsed.get(raw)
            if key is None:
                key = parsed[raw] = _parse_key(raw, source)
            return key

        for raw_type, entries in data.items():
            gpu_type = raw_type.lower()
            consolidated = not gpu_type.endswith(_UNCONSOLIDATED)
            gpu_type = gpu_type.removesuffix(_UNCONSOLIDATED)
            for raw_key, values in entries.items():
                model, n = parse(raw_key)
                self.model_names.setdefault(_model_key(model), model)
                self._rates[(_model_key(model), gpu_type, n, consolidated)] = float(values["null"])
                if not consolidated:
                    continue
                for other_key, pair in values.items():
                    if other_key == "null":
                        continue
                    other, other_n = parse(other_key)
                    if other_n == n:
                        self._pairs[(_model_key(model), gpu_type, n, _model_key(other))] = (
                            float(pair[0]),
                            float(pair[1]),
                        )
        self.gpu_types = sorted({k[1] for k in self._rates})

    @classmethod
    def from_json(cls, path: str | Path, reference: str = "v100") -> ProfileTable:
        """Load a Gavel-format JSON file (optionally gzipped)."""
        path = Path(path)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as fh:
            return cls(json.load(fh), source=str(path), reference=reference)

    @classmethod
    def gavel(cls) -> ProfileTable:
        """Gavel's simulation throughput table (K80/P100/V100), shipped with dlsched."""
        ref = resources.files("dlsched.data") / "gavel_simulation_throughputs.json.gz"
        with resources.as_file(ref) as path:
            table = cls.from_json(path)
        table.name = "gavel"
        return table

    def has(self, model: str | None, gpu_type: str, n_gpus: int, n_nodes: int = 1) -> bool:
        """Whether the table measured this exact allocation."""
        if model is None:
            return False
        return (_model_key(model), gpu_type, n_gpus, n_nodes <= 1) in self._rates

    def measured(
        self, model: str, gpu_type: str, n_gpus: int, consolidated: bool = True
    ) -> float | None:
        """The measured rate, or None when not measured."""
        return self._rates.get((_model_key(model), gpu_type, n_gpus, consolidated))

    def measured_counts(self, model: str, gpu_type: str) -> list[int]:
        """GPU counts measured (consolidated) for a model on a type, ascending."""
        key = _model_key(model)
        return sorted(n for (m, t, n, c) in self._rates if m == key and t == gpu_type and c)

    def entries(self) -> list[tuple[str, str, int, bool, float]]:
        """Every measured (model key, type, n, consolidated, rate)."""
        return [(*k, v) for k, v in self._rates.items()]

    def knows_model(self, model: str | None) -> bool:
        return model is not None and _model_key(model) in self.model_names

    def throughput(
        self,
        model: str | None,
        gpu_type: str,
        n_gpus: int,
        n_nodes: int = 1,
        colocated: Sequence[tuple[str | None, int]] | None = None,
    ) -> float:
        if model is None:
            raise UnknownModelError(
                f"the {self.name!r} throughput model needs a model name per job, and a job has "
                "none; give the trace a 'model' column or use throughput='duration'"
            )
        key = _model_key(model)
        if colocated:
            partner = colocated[0][0]
            if len(colocated) != 1 or partner is None:
                return 0.0  # only pairs of named models were measured
            pair = self._pairs.get((key, gpu_type, n_gpus, _model_key(partner)))
            return 0.0 if pair is None else pair[0]
        if n_nodes > 1:
            rate = self._rates.get((key, gpu_type, n_gpus, False))
            if rate is not None:
                return rate
        rate = self._rates.get((key, gpu_type, n_gpus, True))
        if rate is None:
            field = "gpu_type" if gpu_type not in self.gpu_types else "model"
            raise UnknownModelError(self._unknown(model, gpu_type, n_gpus), field)
        return rate

    def reference_type(self, model: str | None) -> str | None:
        return self._reference

    def _unknown(self, model: str, gpu_type: str, n_gpus: int) -> str:
        key = _model_key(model)
        if key not in self.model_names:
            known = ", ".join(sorted(self.model_names.values())[:6])
            return (
                f"model {model!r} is not in the {self.name!r} profile ({self.source}); "
                f"known models include {known}, ...; use throughput='scaling' for others"
            )
        if gpu_type not in self.gpu_types:
            return (
                f"GPU type {gpu_type!r} is not in the {self.name!r} profile (it has "
                f"{', '.join(self.gpu_types)}); use throughput='scaling' to extrapolate"
            )
        counts = self.measured_counts(model, gpu_type)
        return (
            f"{model!r} on {n_gpus} x {gpu_type} was not measured in the {self.name!r} "
            f"profile (measured counts: {counts}); use throughput='scaling' to extrapolate"
        )

    def __repr__(self) -> str:
        return (
            f"ProfileTable({self.name!r}: {len(self.model_names)} models, "
            f"types {', '.join(self.gpu_types)})"
        )


def _parse_key(raw: str, source: str) -> tuple[str, int]:
    match = _KEY.match(raw)
    if match is None:
        raise ValueError(f"{source}: job-type key {raw!r} is not of the form \"('<model>', <n>)\"")
    return match["model"], int(match["n"])
